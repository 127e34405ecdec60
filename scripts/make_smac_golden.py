"""Regenerate the golden SMAC v1 vectors in ``tests/data/smac_golden`` from oxwhirl/smac's own code.

The golden files hold fabricated unit configurations together with what SMAC's
``StarCraft2Env.get_obs_agent``, ``get_state``, ``get_avail_agent_actions`` and ``reward_battle``
return for them (default flags). This script runs that SMAC code directly, without StarCraft II:
it builds a ``StarCraft2Env`` (whose constructor does not start the game), fills in what SMAC's
``_launch`` and ``init_units`` would have read from the game (a 32x32 map whose probed cells are all
pathable, the unit-type ids, the unit records), and calls the four feature functions.

Source: https://github.com/oxwhirl/smac (MIT licence), commit d6aab33f76abc3849c50463a8592a84f59a5ef84,
``smac/env/starcraft2/starcraft2.py``. Get it with either of::

    pip install --no-deps "smac @ git+https://github.com/oxwhirl/smac.git@d6aab33f76abc3849c50463a8592a84f59a5ef84"
    git clone https://github.com/oxwhirl/smac && git -C smac checkout d6aab33   # then pass --smac smac

``pysc2`` and ``s2clientprotocol`` are imported by SMAC's module but used only to launch the game; when
they are not installed this script puts inert placeholder modules in their place.

Usage::

    python scripts/make_smac_golden.py --smac /path/to/smac --check     # recompute, compare bytes
    python scripts/make_smac_golden.py --smac /path/to/smac             # rewrite tests/data/smac_golden
    python scripts/make_smac_golden.py --smac /path/to/smac --new-cases 0 --out /tmp/gold  # fresh units

By default the unit configurations already in the output folder are kept and every SMAC output is
recomputed, so ``--check`` proves bit for bit that the committed numbers are SMAC's. ``--new-cases SEED``
fabricates new configurations instead (numpy ``default_rng(SEED)``); the committed ones came from an
earlier generator run whose seed was not recorded.

Exit status: 0 when everything was written (or, with ``--check``, every file is byte-identical);
1 when ``--check`` finds a difference; 2 for bad arguments (unknown map, missing SMAC checkout).
"""

from __future__ import annotations

import argparse
import json
import sys
import types
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
DEFAULT_OUT = REPO / "tests" / "data" / "smac_golden"
MAPS = ["3m", "8m", "5m_vs_6m", "10m_vs_11m", "2s3z", "3s5z", "3s5z_vs_3s6z", "1c3s5z", "MMM", "MMM2"]
SMAC_COMMIT = "d6aab33"
MAP_SIZE = 32  # every SMAC map is 32x32 with playable width 32 (MapInfo of the SMAC_Maps archives)

# Standard SC2 unit-type ids (s2client-proto stableid.json "Units"), which SMAC's enemy one-hot uses.
ENEMY_TYPE_IDS = {"colossus": 4, "marine": 48, "marauder": 51, "medivac": 54, "zealot": 73, "stalker": 74}
# Ally ids are the maps' custom ``*_RL`` types; SMAC only uses them relative to the smallest one.
ALLY_MIN_TYPE_ID = 1970
# Per-unit-type statistics of the fabricated units: (health_max, shield_max). SC2 game data.
UNIT_MAX = {
    "marine": (45, 0),
    "marauder": (125, 0),
    "medivac": (150, 0),
    "stalker": (80, 80),
    "zealot": (100, 50),
    "colossus": (200, 150),
}
# Rosters in SMAC's agent-id order (sorted by custom unit type) and enemy (raw) order.
ROSTERS = {
    "3m": (["marine"] * 3, ["marine"] * 3),
    "8m": (["marine"] * 8, ["marine"] * 8),
    "5m_vs_6m": (["marine"] * 5, ["marine"] * 6),
    "10m_vs_11m": (["marine"] * 10, ["marine"] * 11),
    "2s3z": (["stalker"] * 2 + ["zealot"] * 3,) * 2,
    "3s5z": (["stalker"] * 3 + ["zealot"] * 5,) * 2,
    "3s5z_vs_3s6z": (["stalker"] * 3 + ["zealot"] * 5, ["stalker"] * 3 + ["zealot"] * 6),
    "1c3s5z": (["colossus"] + ["stalker"] * 3 + ["zealot"] * 5,) * 2,
    "MMM": (["marauder"] * 2 + ["marine"] * 7 + ["medivac"],) * 2,
    "MMM2": (["marauder"] * 2 + ["marine"] * 7 + ["medivac"], ["marauder"] * 3 + ["marine"] * 8 + ["medivac"]),
}
UNIT_KEYS = ["type", "x", "y", "health", "shield", "health_max", "shield_max", "weapon_cooldown", "energy"]
ASSUMPTIONS = {
    "map_x": MAP_SIZE,
    "map_y": MAP_SIZE,
    "max_distance_x": MAP_SIZE,
    "max_distance_y": MAP_SIZE,
    "pathing": "every cell the probes touch is pathable (positions y in [9.5, 21.5])",
    "reward_scale": "scaled reward = raw / (max_reward / reward_scale_rate=20)",
}


class _Placeholder(types.ModuleType):
    """An inert module: any attribute is another placeholder (used only by SMAC's game launch code)."""

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        value = _Placeholder(f"{self.__name__}.{name}")
        setattr(self, name, value)
        return value


def _install_placeholders() -> list[str]:
    """Make ``import pysc2 ...`` and ``import s2clientprotocol ...`` work if they are not installed."""
    done = []
    for root, subs in (
        ("pysc2", ["maps", "maps.lib", "run_configs", "lib", "lib.protocol"]),
        ("s2clientprotocol", ["common_pb2", "sc2api_pb2", "raw_pb2", "debug_pb2"]),
    ):
        try:
            __import__(root)
            continue
        except ImportError:
            pass
        for name in [root] + [f"{root}.{s}" for s in subs]:
            sys.modules[name] = _Placeholder(name)
        for name in subs:  # attach children to parents
            parent, _, child = f"{root}.{name}".rpartition(".")
            setattr(sys.modules[parent], child, sys.modules[f"{parent}.{child}"])
        done.append(root)
    if "pysc2" in done:
        sys.modules["pysc2.maps.lib"].Map = type("Map", (), {})  # smac_maps subclasses lib.Map
    return done


def _fail(message: str):
    """Bad input: one line on stderr, exit status 2."""
    print(f"error: {message}", file=sys.stderr)
    raise SystemExit(2)


def import_smac(smac_path: str | None):
    """Import ``smac.env.starcraft2.starcraft2`` from ``smac_path`` (a checkout) or the installed package."""
    if smac_path:
        root = Path(smac_path).resolve()
        if not (root / "smac" / "env" / "starcraft2" / "starcraft2.py").is_file():
            _fail(f"--smac {smac_path!r} is not an oxwhirl/smac checkout (no smac/env/starcraft2/starcraft2.py)")
        sys.path.insert(0, str(root))
    placeholders = _install_placeholders()
    try:
        from smac.env.starcraft2 import starcraft2
    except ImportError as e:
        _fail(f"cannot import oxwhirl SMAC ({e}); pass --smac PATH to a checkout of github.com/oxwhirl/smac")
    if "StarCraft2Env" not in vars(starcraft2) or not hasattr(starcraft2.StarCraft2Env, "get_obs_agent"):
        _fail(f"{starcraft2.__file__} is not oxwhirl SMAC's starcraft2 module")
    return starcraft2, placeholders


def _unit(rec: dict, type_id: int) -> types.SimpleNamespace:
    return types.SimpleNamespace(
        unit_type=type_id,
        pos=types.SimpleNamespace(x=rec["x"], y=rec["y"]),
        health=rec["health"],
        shield=rec["shield"],
        health_max=rec["health_max"],
        shield_max=rec["shield_max"],
        weapon_cooldown=rec["weapon_cooldown"],
        energy=rec["energy"],
    )


class SmacOracle:
    """One map's ``StarCraft2Env`` with the game-dependent fields filled in as SMAC's ``_launch`` would."""

    def __init__(self, starcraft2, map_name: str):
        env = starcraft2.StarCraft2Env(map_name=map_name)  # default flags; starts no game
        env.map_x = env.map_y = MAP_SIZE
        env.max_distance_x = env.max_distance_y = MAP_SIZE
        env.pathing_grid = np.ones((MAP_SIZE, MAP_SIZE), dtype=bool)
        env.terrain_height = np.zeros((MAP_SIZE, MAP_SIZE))
        env._init_ally_unit_types(ALLY_MIN_TYPE_ID)
        self.env = env
        self.ally_ids = {
            name: getattr(env, f"{name}_id") for name in UNIT_MAX if getattr(env, f"{name}_id") >= ALLY_MIN_TYPE_ID
        }

    def _set_units(self, allies: list[dict], enemies: list[dict]) -> None:
        self.env.agents = {i: _unit(u, self.ally_ids[u["type"]]) for i, u in enumerate(allies)}
        self.env.enemies = {i: _unit(u, ENEMY_TYPE_IDS[u["type"]]) for i, u in enumerate(enemies)}

    def max_reward(self, enemies: list[dict]) -> int | float:
        """``init_units``: n_enemies * reward_death_value + reward_win + enemy health and shield maxima."""
        return self.env.max_reward + sum(u["health_max"] + u["shield_max"] for u in enemies)

    def features(self, case: dict) -> dict:
        env = self.env
        self._set_units(case["allies"], case["enemies"])
        env.last_action = np.eye(env.n_actions)[np.array(case["last_action"])]
        return {
            "obs": [[float(v) for v in env.get_obs_agent(i)] for i in range(env.n_agents)],
            "state": [float(v) for v in env.get_state()],
            "avail": [[int(v) for v in env.get_avail_agent_actions(i)] for i in range(env.n_agents)],
        }

    def reward(self, case: dict) -> dict:
        env = self.env
        out = {}
        for key, only_positive in (("reward_raw_only_positive", True), ("reward_raw_signed", False)):
            self._set_units(case["allies"], case["enemies"])
            env.previous_ally_units = {i: _unit(u, 0) for i, u in enumerate(case["prev_allies"])}
            env.previous_enemy_units = {i: _unit(u, 0) for i, u in enumerate(case["prev_enemies"])}
            # units already dead in the previous snapshot were counted dead by SMAC back then
            env.death_tracker_ally = np.array([float(u["health"] == 0) for u in case["prev_allies"]])
            env.death_tracker_enemy = np.array([float(u["health"] == 0) for u in case["prev_enemies"]])
            env.reward_only_positive = only_positive
            out[key] = env.reward_battle()
        env.reward_only_positive = True
        return out


def fabricate_units(rng: np.random.Generator, names: list[str], p_dead: float = 0.15) -> list[dict]:
    """Random unit records on the walkable band of the 32x32 SMAC maps (y in [9.5, 21.5])."""
    units = []
    for name in names:
        hmax, smax = UNIT_MAX[name]
        dead = rng.random() < p_dead
        units.append(
            {
                "type": name,
                "x": float(rng.uniform(2.0, 30.0)),
                "y": float(rng.uniform(9.5, 21.5)),
                "health": 0.0 if dead else round(float(rng.uniform(1.0, hmax)), 3),
                "shield": 0.0 if dead or smax == 0 else round(float(rng.uniform(0.0, smax)), 3),
                "health_max": hmax,
                "shield_max": smax,
                "weapon_cooldown": round(float(rng.uniform(0.0, 30.0)), 3),
                "energy": round(float(rng.uniform(0.0, 200.0)), 3),
            }
        )
    return units


def _damaged(rng: np.random.Generator, prev: list[dict], severity: float) -> list[dict]:
    """The next step's snapshot: some damage, some deaths, some shield regeneration.

    ``severity`` in [0, 1] scales the share of units killed or hit, so that some cases favour the
    allies and some the enemies (the signed reward then takes both signs).
    """
    out = []
    for u in prev:
        u = dict(u)
        if u["health"] > 0:
            r = rng.random()
            if r < 0.3 * severity:
                u["health"], u["shield"] = 0.0, 0.0
            elif r < 0.9 * severity:
                hit = float(rng.uniform(0.0, 30.0))
                from_shield = min(u["shield"], hit)
                u["shield"] = round(u["shield"] - from_shield, 3)
                u["health"] = round(max(u["health"] - (hit - from_shield), 0.5), 3)
            elif u["shield_max"] > 0:
                u["shield"] = round(min(u["shield"] + 2.0, u["shield_max"]), 3)
        out.append(u)
    return out


def new_cases(map_name: str, seed: int, n: int = 20) -> tuple[list[dict], list[dict]]:
    """``n`` fabricated feature cases and ``n`` reward cases (inputs only) for ``map_name``."""
    rng = np.random.default_rng([seed, MAPS.index(map_name)])
    ally_names, enemy_names = ROSTERS[map_name]
    n_actions = 6 + len(enemy_names)
    feature_cases, reward_cases = [], []
    for _ in range(n):
        allies, enemies = fabricate_units(rng, ally_names), fabricate_units(rng, enemy_names)
        last = [0 if a["health"] == 0 else int(rng.integers(1, n_actions)) for a in allies]
        feature_cases.append({"allies": allies, "enemies": enemies, "last_action": last})
    for _ in range(n):
        prev_allies, prev_enemies = fabricate_units(rng, ally_names), fabricate_units(rng, enemy_names)
        reward_cases.append(
            {
                "prev_allies": prev_allies,
                "prev_enemies": prev_enemies,
                "allies": _damaged(rng, prev_allies, float(rng.random())),
                "enemies": _damaged(rng, prev_enemies, float(rng.random())),
            }
        )
    return feature_cases, reward_cases


def _units(units: list[dict]) -> list[dict]:
    return [{k: u[k] for k in UNIT_KEYS} for u in units]


def build_map(starcraft2, map_name: str, feature_inputs: list[dict], reward_inputs: list[dict]) -> dict:
    """The golden document for one map: inputs plus SMAC's outputs, in the committed key order."""
    oracle = SmacOracle(starcraft2, map_name)
    env = oracle.env
    ally_names, enemy_names = ROSTERS[map_name]
    for case in feature_inputs + reward_inputs:
        for side, names in (("allies", ally_names), ("enemies", enemy_names)):
            got = [u["type"] for u in case[side]]
            if got != names:
                raise ValueError(f"{map_name}: {side} roster {got} is not SMAC's {names}")
    feature_cases = []
    for case in feature_inputs:
        inputs = {
            "allies": _units(case["allies"]),
            "enemies": _units(case["enemies"]),
            "last_action": list(case["last_action"]),
        }
        feature_cases.append({**inputs, **oracle.features(inputs)})
    reward_cases = []
    for case in reward_inputs:
        inputs = {k: _units(case[k]) for k in ("prev_allies", "prev_enemies", "allies", "enemies")}
        reward_cases.append({**inputs, **oracle.reward(inputs)})
    enemies = feature_inputs[0]["enemies"]
    return {
        "map": map_name,
        "generator": f"SMAC v1 (oxwhirl/smac {SMAC_COMMIT}) feature code, default flags",
        "assumptions": ASSUMPTIONS,
        "n_agents": env.n_agents,
        "n_enemies": env.n_enemies,
        "n_actions": env.n_actions,
        "max_reward": oracle.max_reward(enemies),
        "feature_cases": feature_cases,
        "reward_cases": reward_cases,
    }


def dumps(doc: dict) -> str:
    """The committed serialisation: compact JSON, Python float repr, no trailing newline."""
    return json.dumps(doc, separators=(",", ":"))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--smac", default=None, help="path of an oxwhirl/smac checkout (default: the installed smac package)")
    p.add_argument("--out", default=str(DEFAULT_OUT), help="folder of <map>.json files (default tests/data/smac_golden)")
    p.add_argument("--maps", nargs="+", default=MAPS, help=f"maps to build (default all {len(MAPS)})")
    p.add_argument("--check", action="store_true", help="recompute and compare with the files in --out; write nothing")
    p.add_argument("--new-cases", type=int, default=None, metavar="SEED", help="fabricate new unit configurations")
    a = p.parse_args(argv)
    unknown = [m for m in a.maps if m not in MAPS]
    if unknown:
        p.error(f"unknown map(s) {unknown}; expected some of {MAPS}")
    if a.check and a.new_cases is not None:
        p.error("--check compares recomputed outputs for the existing unit configurations; drop --new-cases")
    starcraft2, placeholders = import_smac(a.smac)
    print(f"SMAC from {starcraft2.__file__}" + (f" (placeholders for {', '.join(placeholders)})" if placeholders else ""))
    out = Path(a.out)
    differ = 0
    for name in a.maps:
        path = out / f"{name}.json"
        if a.new_cases is None:
            if not path.is_file():
                p.error(f"{path} is absent: pass --new-cases SEED to fabricate unit configurations")
            old_text = path.read_text()
            old = json.loads(old_text)
            doc = build_map(starcraft2, name, old["feature_cases"], old["reward_cases"])
        else:
            old_text = None
            doc = build_map(starcraft2, name, *new_cases(name, a.new_cases))
        text = dumps(doc)
        if a.check:
            same = text == old_text
            differ += not same
            print(f"{name}: {'identical' if same else 'DIFFERENT'} ({len(text.encode())} bytes)")
        else:
            out.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            print(f"{name}: wrote {path} ({len(text.encode())} bytes)")
    if a.check:
        print(f"{len(a.maps) - differ}/{len(a.maps)} files byte-identical")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
