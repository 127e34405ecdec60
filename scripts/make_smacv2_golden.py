"""Regenerate the golden SMACv2 vectors in ``tests/data/smacv2_golden`` from oxwhirl/smacv2's own code.

Each golden file is one short SMACv2 episode (a reset and a few steps) of one scenario, with what
SMACv2's ``StarCraft2Env`` returns for it: ``get_obs_agent``, ``get_state``, ``get_avail_agent_actions``,
``get_capabilities``, ``get_visibility_matrix``, ``step``'s reward / terminated / info, the raw SC2
commands ``step`` issues, and the env's sizes and feature names. No StarCraft II is needed: SMACv2's
``StarCraftCapabilityEnvWrapper`` is built from the scenario's example config
(``smacv2/examples/configs/sc2_gen_<race>.yaml`` with ``n_units`` / ``n_enemies`` set), and the
game process is replaced by a scripted stand-in (``ScriptedGame``) that answers the requests
SMACv2 sends: it creates the units that ``init_units`` asks for through ``DebugCreateUnit`` at the
start positions of the episode config, and after each ``step`` reports the fabricated unit
snapshot stored in the case (positions, health, shields, weapon cooldowns, energy; a unit missing
from the snapshot is dead, as in the raw API). Two things are substituted: ``StarCraft2Env._launch``
(it fills in the map fields from 32x32_flat.SC2Map instead of starting the game) and the ``random``
module inside starcraft2.py, whose ``shuffle`` (the agent order of ``get_obs``) applies the order
stored in the case. Everything else, unit ordering, unit-type ids, the enemy-observation bookkeeping,
action masks, rewards, end of battle, runs in SMACv2's code unchanged.

Source: https://github.com/oxwhirl/smacv2 (MIT licence), commit 577ab5a2cff2391f8df582da5731ea9cd6adf3c6,
``smacv2/env/starcraft2/{starcraft2,wrapper,distributions}.py``. Get it with::

    git clone https://github.com/oxwhirl/smacv2 /tmp/smacv2 && git -C /tmp/smacv2 checkout 577ab5a

SMACv2 imports ``pysc2`` and ``s2clientprotocol``. ``s2clientprotocol`` must be importable (the
stand-in game speaks its protobuf messages). ``pysc2`` is only used for the stock unit-type ids
(``pysc2.lib.units``) and to launch the game; when it is absent, this script puts a placeholder in its
place whose unit ids are the stable SC2 ids (s2client-proto ``stableid.json``). Installing the real one
in a throw-away venv gives the same bytes::

    python -m venv --system-site-packages /tmp/smacv2-venv
    /tmp/smacv2-venv/bin/pip install --no-deps pysc2==4.0.0

Usage::

    python scripts/make_smacv2_golden.py --smacv2 /tmp/smacv2 --check            # recompute, compare bytes
    python scripts/make_smacv2_golden.py --smacv2 /tmp/smacv2                    # rewrite the stored cases
    python scripts/make_smacv2_golden.py --smacv2 /tmp/smacv2 --new-cases 0      # fabricate from seed 0
    python scripts/make_smacv2_golden.py --smacv2 /tmp/smacv2 --sizes            # also sizes.json, probes.json

The committed files are the output of ``--new-cases 0 --sizes``.

By default the inputs already stored in each file (episode config, unit placement, actions, unit
snapshots, observation order) are kept and every SMACv2 output is recomputed, so ``--check`` proves
bit for bit that the committed numbers are SMACv2's. ``--new-cases SEED`` fabricates the inputs anew
(team and start positions drawn by SMACv2's own ``WeightedTeamsDistribution`` and
``Surrounded``/``ReflectPositionDistribution`` with seeded generators, then numpy
``default_rng([SEED, case index])`` for placement jitter, actions and unit snapshots).

Exit status: 0 when everything was written (or, with ``--check``, every file is byte-identical);
1 when ``--check`` finds a difference; 2 for bad arguments (unknown case, missing SMACv2 checkout).
"""

from __future__ import annotations

import argparse
import copy
import enum
import json
import random
import sys
import types
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
DEFAULT_OUT = REPO / "tests" / "data" / "smacv2_golden"
SMACV2_COMMIT = "577ab5a2cff2391f8df582da5731ea9cd6adf3c6"
MAP_SIZE = 32  # 32x32_flat.SC2Map: MapInfo 32x32, camera bounds (0,0)-(32,32); every cell pathable
TERRAIN_Z = 8.0  # world height of the flat map's cliff level 64 (only SMACv2's debug drawing reads z)
# SMACv2 derives its 9 custom ``*_RL`` unit-type ids as len(game data units) - 9 + k (``_init_ally_unit_types``);
# only differences between them matter. This count gives ids 1970..1978, clear of every stock id used here.
GAME_DATA_UNIT_COUNT = 1979

# Stable SC2 unit-type ids (s2client-proto stableid.json, pysc2/lib/units.py): SMACv2's enemy ids.
STOCK_IDS = {
    "Protoss": {"Colossus": 4, "Zealot": 73, "Stalker": 74},
    "Terran": {"Marine": 48, "Marauder": 51, "Medivac": 54},
    "Zerg": {"Baneling": 9, "Zergling": 105, "Hydralisk": 107},
}
# (health_max, shield_max, energy at creation). Allies are the ``*_RL`` units of 32x32_flat.SC2Map
# (Base.SC2Data/GameData/UnitData.xml: note Hydralisk_RL has 80 life); enemies are stock SC2 units
# (SC2 game data, e.g. sc2-techtree data/data.json: hydralisk 90 life; medivac energy 50 of 200).
ALLY_STATS = {
    "stalker": (80, 80, 0), "zealot": (100, 50, 0), "colossus": (200, 150, 0),
    "marine": (45, 0, 0), "marauder": (125, 0, 0), "medivac": (150, 0, 50),
    "zergling": (35, 0, 0), "hydralisk": (80, 0, 0), "baneling": (30, 0, 0),
}  # fmt: skip
ENEMY_STATS = {**ALLY_STATS, "hydralisk": (90, 0, 0)}
RACE_UNITS = {
    "protoss": ["stalker", "zealot", "colossus"],
    "terran": ["marine", "marauder", "medivac"],
    "zerg": ["zergling", "hydralisk", "baneling"],
}
# Unit types without a weapon cooldown in the fabricated snapshots (medivac: energy instead; baneling: suicide).
NO_WEAPON_COOLDOWN = {"medivac", "baneling"}

# The cases. ``layout`` picks SMACv2's start-position distribution; ``require`` unit types the drawn
# team must contain (the team is redrawn with the next seed until it does); ``kills`` lists, per step,
# the (side, index) units that die in that step ("all_enemies", "all_allies", "enemy_non_medivac" end
# the battle); ``conic_fov`` switches SMACv2's conic field of view on.
CASES = {
    "protoss_5_vs_5": dict(race="protoss", n=5, m=5, layout="reflect", require=["stalker", "zealot"],
                           kills=[[], [("enemy", 1)], [("ally", 3)], []]),
    "terran_5_vs_5": dict(race="terran", n=5, m=5, layout="surrounded", require=["medivac", "marauder"],
                          kills=[[], [("enemy", 0)], [("ally", 0)], ["enemy_non_medivac"]]),
    "zerg_5_vs_5": dict(race="zerg", n=5, m=5, layout="reflect", require=["baneling", "hydralisk"],
                        kills=[[], [("ally", 1), ("enemy", 4)], [], ["all_enemies"]]),
    "protoss_10_vs_11": dict(race="protoss", n=10, m=11, layout="surrounded", require=["colossus"],
                             kills=[[], [("enemy", 2), ("enemy", 7)], [("ally", 5)], ["all_allies"]]),
    "terran_20_vs_23": dict(race="terran", n=20, m=23, layout="reflect", require=["medivac"],
                            kills=[[], [("enemy", 3), ("ally", 7)], [("enemy", 20), ("ally", 12)], []]),
    "protoss_5_vs_5_conic_fov": dict(race="protoss", n=5, m=5, layout="reflect", conic_fov=True,
                                     require=["colossus"], kills=[[], [("enemy", 0)], [], []]),
    "zerg_10_vs_10_conic_fov": dict(race="zerg", n=10, m=10, layout="surrounded", conic_fov=True,
                                    require=["baneling"], kills=[[], [("ally", 2)], [("enemy", 5)], []]),
}  # fmt: skip
SIZE_TEAMS = [(5, 5), (10, 10), (10, 11), (20, 20), (20, 23)]
ASSUMPTIONS = {
    "map": "32x32_flat.SC2Map (SMACv2's 10gen_* maps): map_x = map_y = 32, playable area (0,0)-(32,32) "
    "so max_distance_x = max_distance_y = 32; every cell pathable (t3CellFlags / t3SyncCliffLevel of the archive)",
    "unit_type_ids": f"custom *_RL ids = {GAME_DATA_UNIT_COUNT} - 9 + k, k in SMACv2's alphabetical order "
    "(baneling, colossus, hydralisk, marauder, marine, medivac, stalker, zealot, zergling); stock ids for enemies",
    "placement": "units are created at the episode config's start positions plus a uniform jitter of at most "
    "0.4 per axis (a stand-in for the engine's clump placement), clipped to [0.05, 31.95]",
    "raw_order": "the raw observation lists units in creation order: allies in team order, then enemies in team "
    "order (SMACv2 sorts the allies itself; the enemy ids follow this order)",
    "obs_order": "get_obs visits the agents in a random order (random.shuffle); the order used is stored",
    "floats": "positions, health, shields, cooldowns and energy are float32, as in the raw API",
}


class _Placeholder(types.ModuleType):
    """An inert module: any attribute is another placeholder (stands in for pysc2's game-launch code)."""

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        value = _Placeholder(f"{self.__name__}.{name}")
        setattr(self, name, value)
        return value


def _install_pysc2_placeholder() -> bool:
    """Make ``import pysc2...`` work when pysc2 is absent; ``pysc2.lib.units`` gets the stable ids."""
    try:
        import pysc2.lib.units  # noqa: F401

        return False
    except ImportError:
        pass
    for name in ["pysc2", "pysc2.maps", "pysc2.maps.lib", "pysc2.run_configs", "pysc2.lib", "pysc2.lib.protocol"]:
        sys.modules[name] = _Placeholder(name)
    units = types.ModuleType("pysc2.lib.units")
    units.Neutral = enum.IntEnum("Neutral", {})
    for race, ids in STOCK_IDS.items():
        setattr(units, race, enum.IntEnum(race, ids))
    sys.modules["pysc2.lib.units"] = units
    for name in ["pysc2.maps", "pysc2.run_configs", "pysc2.lib", "pysc2.maps.lib", "pysc2.lib.protocol", "pysc2.lib.units"]:
        parent, _, child = name.rpartition(".")
        setattr(sys.modules[parent], child, sys.modules[name])
    sys.modules["pysc2.maps.lib"].Map = type("Map", (), {})  # smac_maps subclasses lib.Map
    protocol = sys.modules["pysc2.lib.protocol"]
    protocol.ProtocolError = type("ProtocolError", (Exception,), {})
    protocol.ConnectionError = type("ConnectionError", (Exception,), {})
    return True


def _fail(message: str):
    """Bad input: one line on stderr, exit status 2."""
    print(f"error: {message}", file=sys.stderr)
    raise SystemExit(2)


def import_smacv2(path: str):
    """Import SMACv2's env modules from the checkout at ``path``; returns (starcraft2, wrapper, distributions, sc)."""
    root = Path(path).resolve()
    if not (root / "smacv2" / "env" / "starcraft2" / "starcraft2.py").is_file():
        _fail(f"--smacv2 {path!r} is not an oxwhirl/smacv2 checkout (no smacv2/env/starcraft2/starcraft2.py)")
    try:
        from s2clientprotocol import common_pb2, debug_pb2, raw_pb2, sc2api_pb2  # noqa: F401
    except ImportError as e:
        _fail(f"s2clientprotocol is required ({e}); pip install s2clientprotocol into the env that runs this script")
    placeholder = _install_pysc2_placeholder()
    sys.path.insert(0, str(root))
    try:
        from smacv2.env.starcraft2 import distributions, starcraft2, wrapper
    except ImportError as e:
        _fail(f"cannot import SMACv2 from {root} ({e})")
    if not hasattr(starcraft2, "StarCraft2Env") or not hasattr(starcraft2.StarCraft2Env, "get_obs_agent"):
        _fail(f"{starcraft2.__file__} is not oxwhirl SMACv2's starcraft2 module")
    sc = types.SimpleNamespace(common=common_pb2, debug=debug_pb2, raw=raw_pb2, api=sc2api_pb2)
    return starcraft2, wrapper, distributions, sc, placeholder


def load_env_args(smacv2_root: Path, race: str, n: int, m: int, conic_fov: bool) -> dict:
    """``env_args`` of SMACv2's example config for ``race`` with the team sizes (and conic FOV) set."""
    import yaml

    path = Path(smacv2_root) / "smacv2" / "examples" / "configs" / f"sc2_gen_{race}.yaml"
    if not path.is_file():
        _fail(f"{path} is missing from the SMACv2 checkout")
    args = yaml.safe_load(path.read_text())["env_args"]
    args["capability_config"]["n_units"] = n
    args["capability_config"]["n_enemies"] = m
    args["conic_fov"] = conic_fov
    return args


# ---------------------------------------------------------------------------------------------
# The stand-in for the SC2 process.


class ScriptedGame:
    """Answers the controller requests SMACv2 makes (``observe``, ``step``, ``debug``, ``actions``, ``data``).

    ``placement[k]`` is where the k-th ``DebugCreateUnit`` puts its unit; ``pending`` is the snapshot
    the next ``step`` call applies: ``{tag: None (dies) or {field: value}}``.
    """

    def __init__(self, sc, env, placement: list[tuple[float, float]]):
        self.sc = sc
        self.env = env
        self.placement = placement
        self.units = []  # raw_pb2.Unit, creation order
        self.next_tag = 1
        self.pending = None
        self.issued = []  # RequestAction messages of the last env step

    def data(self):
        return types.SimpleNamespace(units=[None] * GAME_DATA_UNIT_COUNT)

    def debug(self, commands):
        if not isinstance(commands, (list, tuple)):
            commands = [commands]
        for cmd in commands:
            if cmd.HasField("create_unit"):
                self._create(cmd.create_unit)
            elif cmd.HasField("kill_unit"):
                dead = set(cmd.kill_unit.tag)
                self.units = [u for u in self.units if u.tag not in dead]

    def _create(self, req) -> None:
        k = len(self.units)
        x, y = self.placement[k]
        if abs(x - req.pos.x) > 0.5 or abs(y - req.pos.y) > 0.5:
            raise ValueError(f"unit {k}: placement ({x}, {y}) is not next to the requested ({req.pos.x}, {req.pos.y})")
        stats = ALLY_STATS if req.owner == 1 else ENEMY_STATS
        _register_type_names(self.env)  # SMACv2 set its unit maps in _init_ally_unit_types before creating
        name = unit_name(req.unit_type, req.owner == 1)
        hmax, smax, energy = stats[name]
        u = self.sc.raw.Unit(tag=self.next_tag, unit_type=req.unit_type, owner=req.owner, alliance=1 if req.owner == 1 else 4)
        u.pos.x, u.pos.y, u.pos.z = x, y, TERRAIN_Z
        u.health, u.health_max, u.shield, u.shield_max, u.energy = hmax, hmax, smax, smax, energy
        u.energy_max = 200 if energy else 0
        self.next_tag += 1
        self.units.append(u)

    def actions(self, request):
        self.issued.append(request)

    def step(self, loops: int = 8):
        if self.pending is None:
            return
        keep = []
        for u in self.units:
            new = self.pending.get(u.tag, {})
            if new is None:
                continue  # died this step: gone from the raw observation
            for k, v in new.items():
                if k in ("x", "y"):
                    setattr(u.pos, k, v)
                else:
                    setattr(u, k, v)
            keep.append(u)
        self.units = keep
        self.pending = None

    def observe(self):
        obs = self.sc.api.ResponseObservation()
        obs.observation.raw_data.units.extend(self.units)
        return obs


_TYPE_NAMES: dict[tuple[int, bool], str] = {}


def unit_name(type_id: int, ally: bool) -> str:
    return _TYPE_NAMES[(int(type_id), ally)]


def _register_type_names(env) -> None:
    for name, tid in env.ally_unit_map.items():
        _TYPE_NAMES[(int(tid), True)] = name
    for name, tid in env.enemy_unit_map.items():
        _TYPE_NAMES[(int(tid), False)] = name


# ---------------------------------------------------------------------------------------------
# Input fabrication (--new-cases).


def draw_episode_config(distributions, env_args: dict, case: dict, seed: int) -> dict:
    """Team and start positions from SMACv2's own distributions, seeded (python ``random`` and numpy)."""
    cap = copy.deepcopy(env_args["capability_config"])
    team_cfg = {**cap["team_gen"], "env_key": "team_gen", "n_units": case["n"], "n_enemies": case["m"]}
    pos_cfg = {**cap["start_positions"], "env_key": "start_positions", "n_units": case["n"], "n_enemies": case["m"]}
    for k in range(10_000):
        random.seed(seed * 100_003 + k)
        teams = distributions.WeightedTeamsDistribution(team_cfg)
        teams.rng = np.random.default_rng([seed, k])
        drawn = teams.generate()["team_gen"]
        if all(t in drawn["ally_team"] for t in case.get("require", [])):
            break
    else:
        raise RuntimeError(f"no team with {case['require']} in 10000 draws")
    if case["layout"] == "surrounded":
        dist = distributions.SurroundedPositionDistribution(pos_cfg)
        dist.rng = np.random.default_rng([seed, 1])
    else:
        dist = distributions.ReflectPositionDistribution(pos_cfg)
        dist.pos_generator.rng = np.random.default_rng([seed, 2])
        if hasattr(dist, "enemy_pos_generator"):
            dist.enemy_pos_generator.rng = np.random.default_rng([seed, 3])
    pos = dist.generate()
    return {
        "team_gen": {
            "ally_team": [str(t) for t in drawn["ally_team"]],
            "enemy_team": [str(t) for t in drawn["enemy_team"]],
            "id": 0,
        },
        "ally_start_positions": {"item": pos["ally_start_positions"]["item"].tolist(), "id": 0},
        "enemy_start_positions": {"item": pos["enemy_start_positions"]["item"].tolist(), "id": 0},
    }


def _f32(v: float) -> float:
    return float(np.float32(v))


def fabricate_inputs(distributions, env_args: dict, case: dict, seed: int, index: int) -> dict:
    """All inputs of one case: episode config, placement, and per step the actions are chosen later."""
    episode_config = draw_episode_config(distributions, env_args, case, seed)
    rng = np.random.default_rng([seed, index])
    starts = episode_config["ally_start_positions"]["item"] + episode_config["enemy_start_positions"]["item"]
    placement = [
        [_f32(min(max(x + rng.uniform(-0.4, 0.4), 0.05), MAP_SIZE - 0.05)),
         _f32(min(max(y + rng.uniform(-0.4, 0.4), 0.05), MAP_SIZE - 0.05))]
        for x, y in starts
    ]  # fmt: skip
    return {"episode_config": episode_config, "placement": placement, "rng": rng}


def _next_snapshot(rng, env, case: dict, step: int, actions: list[int]) -> dict:
    """The fabricated unit snapshot after a step: moves, damage, kills, cooldowns, shield regeneration."""
    kills = case["kills"][step] if step < len(case["kills"]) else []
    out = {"allies": [], "enemies": []}
    for side, units in (("allies", env.agents), ("enemies", env.enemies)):
        ally = side == "allies"
        for i in range(len(units)):
            u = units[i]
            name = unit_name(u.unit_type, ally)
            dies = (
                ("ally" if ally else "enemy", i) in kills
                or ("all_allies" in kills and ally)
                or ("all_enemies" in kills and not ally)
                or ("enemy_non_medivac" in kills and not ally and name != "medivac")
            )
            if u.health == 0 or dies:
                out[side].append(None)
                continue
            x, y = u.pos.x, u.pos.y
            if ally and 2 <= actions[i] <= 5:  # moved: most of the 2-unit order in 8 loops
                dx, dy = {2: (0, 1), 3: (0, -1), 4: (1, 0), 5: (-1, 0)}[actions[i]]
                frac = rng.uniform(0.6, 1.0)
                x, y = x + 2 * frac * dx, y + 2 * frac * dy
            elif not ally:  # close in on the nearest live ally (the snapshots need not be one engine step apart)
                alive = [a for a in env.agents.values() if a.health > 0]
                if alive:
                    near = min(alive, key=lambda a: (a.pos.x - x) ** 2 + (a.pos.y - y) ** 2)
                    dx, dy = near.pos.x - x, near.pos.y - y
                    dist = max((dx * dx + dy * dy) ** 0.5, 1e-6)
                    go = min(rng.uniform(2.5, 6.0), max(dist - 1.0, 0.0))
                    x, y = x + go * dx / dist + rng.uniform(-0.5, 0.5), y + go * dy / dist + rng.uniform(-0.5, 0.5)
            x = min(max(x, 0.05), MAP_SIZE - 0.05)
            y = min(max(y, 0.05), MAP_SIZE - 0.05)
            health, shield = float(u.health), float(u.shield)
            if rng.random() < 0.6:  # hit: shields absorb first
                hit = rng.uniform(1.0, 25.0)
                absorbed = min(shield, hit)
                shield -= absorbed
                health = max(health - (hit - absorbed), 0.5)
            elif u.shield_max > 0 and rng.random() < 0.5:
                shield = min(shield + 1.0, float(u.shield_max))  # regeneration (rewarded only if positive)
            max_cd = 0.0 if name in NO_WEAPON_COOLDOWN else float(env.unit_max_cooldown(u)) if ally else 30.0
            rec = {
                "x": _f32(x), "y": _f32(y), "health": _f32(round(health, 3)), "shield": _f32(round(shield, 3)),
                "weapon_cooldown": _f32(round(rng.uniform(0.0, max_cd), 3)) if max_cd else 0.0,
                "energy": _f32(round(min(float(u.energy) + rng.uniform(-10, 5), 200.0), 3)) if u.energy_max else 0.0,
            }  # fmt: skip
            if rng.random() < 0.1:  # a few units at their max cooldown (state value 1 or above)
                rec["weapon_cooldown"] = _f32(max_cd * 1.05) if max_cd else 0.0
            out[side].append(rec)
    return out


def _choose_actions(rng, env) -> list[int]:
    """A uniform random available action per agent, preferring attacks/heals and (conic FOV) turns."""
    acts = []
    for i in range(env.n_agents):
        avail = np.flatnonzero(env.get_avail_agent_actions(i))
        attacks = avail[avail >= env.n_actions_no_attack]
        turns = avail[(avail >= 6) & (avail < env.n_actions_no_attack)]
        r = rng.random()
        if len(attacks) and r < 0.45:
            acts.append(int(rng.choice(attacks)))
        elif len(turns) and r < 0.75:
            acts.append(int(rng.choice(turns)))
        else:
            acts.append(int(rng.choice(avail)))
    return acts


# ---------------------------------------------------------------------------------------------
# Running SMACv2.


class _FixedOrder:
    """Stands in for the ``random`` module inside SMACv2's starcraft2.py: ``shuffle`` applies a stored order."""

    def __init__(self, order: list[int]):
        self.order = list(order)

    def shuffle(self, x: list) -> None:
        if sorted(x) != sorted(self.order):
            raise ValueError(f"get_obs shuffles {x}, the stored order is {self.order}")
        x[:] = self.order


def _unit_records(env) -> dict:
    def rec(u, ally):
        return {
            "type": unit_name(u.unit_type, ally),
            "unit_type": int(u.unit_type),
            "x": float(u.pos.x), "y": float(u.pos.y),
            "health": float(u.health), "shield": float(u.shield),
            "health_max": float(u.health_max), "shield_max": float(u.shield_max),
            "weapon_cooldown": float(u.weapon_cooldown), "energy": float(u.energy),
        }  # fmt: skip

    return {
        "allies": [rec(env.agents[i], True) for i in range(env.n_agents)],
        "enemies": [rec(env.enemies[j], False) for j in range(env.n_enemies)],
    }


def _bookkeeping(env) -> dict:
    return {
        "obs_enemies": env.obs_enemies.astype(int).tolist(),
        "enemy_tags": [None if t is None else int(t) for t in env.enemy_tags],
    }


def _floats(a) -> list:
    return [float(v) for v in np.asarray(a, dtype=np.float32).ravel()]


def _commands(env, game) -> list:
    """The raw unit commands ``step`` sent, as [agent id, ability id, target enemy/ally id or point]."""
    agent_of = {env.agents[i].tag: i for i in range(env.n_agents)}
    target_of = {env.enemies[j].tag: ["enemy", j] for j in range(env.n_enemies)}
    target_of.update({env.agents[i].tag: ["ally", i] for i in range(env.n_agents)})
    out = []
    for req in game.issued:
        for act in req.actions:
            c = act.action_raw.unit_command
            if c.HasField("target_unit_tag"):
                target = target_of[c.target_unit_tag]
            elif c.HasField("target_world_space_pos"):
                target = [float(c.target_world_space_pos.x), float(c.target_world_space_pos.y)]
            else:
                target = None
            out.append([agent_of[c.unit_tags[0]], int(c.ability_id), target])
    game.issued = []
    return out


def _observe_all(env, starcraft2, order: list[int]) -> dict:
    """obs via SMACv2's ``get_obs`` in ``order``, the same with every enemy marked observed, state, masks."""
    before = _bookkeeping(env)
    saved = starcraft2.random
    starcraft2.random = _FixedOrder(order)
    try:
        obs = env.get_obs()
    finally:
        starcraft2.random = saved
    after = _bookkeeping(env)
    keep_obs, keep_tags = env.obs_enemies.copy(), list(env.enemy_tags)
    env.obs_enemies = np.ones_like(env.obs_enemies)
    obs_all = [env.get_obs_agent(i) for i in range(env.n_agents)]
    env.obs_enemies, env.enemy_tags = keep_obs, keep_tags
    return {
        "epo_before": before,
        "obs_order": list(order),
        "obs": [_floats(o) for o in obs],
        "epo_after": after,
        "obs_all_observed": [_floats(o) for o in obs_all],
        "state": _floats(env.get_state()),
        "avail": [[int(v) for v in env.get_avail_agent_actions(i)] for i in range(env.n_agents)],
        "capabilities": _floats(env.get_capabilities()),
        "visibility_matrix": env.get_visibility_matrix().astype(int).tolist(),
        "fov_directions": [[float(v) for v in d] for d in env.fov_directions],
        "last_action": [int(np.argmax(r)) if r.any() else None for r in env.last_action],
    }


def run_episode(mods, env_args: dict, inputs: dict, reward_flags: dict, fabricate=None) -> dict:
    """One episode of SMACv2 on the scripted game. ``inputs`` holds everything the run needs;
    with ``fabricate`` (a case spec and its rng) the missing per-step inputs are drawn and added."""
    starcraft2, wrapper_mod, _, sc, _ = mods
    args = copy.deepcopy(env_args)
    args.update(reward_flags)
    wrapper = wrapper_mod.StarCraftCapabilityEnvWrapper(**args)
    env = wrapper.env
    game = ScriptedGame(sc, env, [tuple(p) for p in inputs["placement"]])

    def launch():
        env.map_x = env.map_y = MAP_SIZE
        env.max_distance_x = env.max_distance_y = MAP_SIZE
        env.pathing_grid = np.ones((MAP_SIZE, MAP_SIZE), dtype=bool)
        env.terrain_height = np.full((MAP_SIZE, MAP_SIZE), 191 / 255)
        env._controller = game

    env._launch = launch
    ec = inputs["episode_config"]
    episode_config = {
        "team_gen": copy.deepcopy(ec["team_gen"]),
        "ally_start_positions": {"item": np.array(ec["ally_start_positions"]["item"]), "id": 0},
        "enemy_start_positions": {"item": np.array(ec["enemy_start_positions"]["item"]), "id": 0},
    }
    saved = starcraft2.random
    starcraft2.random = _FixedOrder(inputs["reset_obs_order"])
    try:
        env.reset(episode_config)
    finally:
        starcraft2.random = saved
    _register_type_names(env)
    # reset() already ran get_obs once in the stored order; record what it produced from a replay of it
    reset_obs_after = _bookkeeping(env)
    env.obs_enemies[:] = 0
    env.enemy_tags = [None] * env.n_enemies
    reset = {"units": _unit_records(env), **_observe_all(env, starcraft2, inputs["reset_obs_order"])}
    if reset["epo_after"] != reset_obs_after:
        raise AssertionError("replaying the reset observation changed SMACv2's bookkeeping")
    doc = {
        "unit_type_ids": {k: int(v) for k, v in sorted(env.ally_unit_map.items())},
        "enemy_unit_type_ids": {k: int(v) for k, v in sorted(env.enemy_unit_map.items())},
        "max_reward": float(env.max_reward),
        "map": {k: float(getattr(env, k)) for k in ("map_x", "map_y", "max_distance_x", "max_distance_y")},
        "agent_params": {  # per agent id, from SMACv2's own lookups
            "sight_range": [float(env.unit_sight_range(i)) for i in range(env.n_agents)],
            "shoot_range": [float(env.unit_shoot_range(i)) for i in range(env.n_agents)],
            "max_cooldown": [float(env.unit_max_cooldown(env.agents[i])) for i in range(env.n_agents)],
            "type_bit": [int(env.get_unit_type_id(env.agents[i], True)) for i in range(env.n_agents)],
        },
        "enemy_type_bit": [int(env.get_unit_type_id(env.enemies[j], False)) for j in range(env.n_enemies)],
        "reset": reset,
        "steps": [],
    }
    tag_of = {("allies", i): env.agents[i].tag for i in range(env.n_agents)}
    tag_of.update({("enemies", j): env.enemies[j].tag for j in range(env.n_enemies)})
    n_steps = len(inputs["steps"]) if fabricate is None else len(fabricate[0]["kills"])
    for s in range(n_steps):
        if fabricate is not None:
            case, rng = fabricate
            actions = _choose_actions(rng, env)
            snapshot = _next_snapshot(rng, env, case, s, actions)
            order = [int(v) for v in rng.permutation(env.n_agents)]
            inputs["steps"].append({"actions": actions, "next_units": snapshot, "obs_order": order})
        step_in = inputs["steps"][s]
        pending = {}
        for side in ("allies", "enemies"):
            for i, rec in enumerate(step_in["next_units"][side]):
                pending[tag_of[(side, i)]] = None if rec is None else dict(rec)
        game.pending = pending
        reward, terminated, info = env.step(list(step_in["actions"]))
        record = {
            "actions": list(step_in["actions"]),
            "sc_commands": _commands(env, game),
            "reward": float(reward),
            "terminated": bool(terminated),
            "info": {k: (bool(v) if isinstance(v, (bool, np.bool_)) else int(v)) for k, v in info.items()},
            "units": _unit_records(env),
            **_observe_all(env, starcraft2, step_in["obs_order"]),
        }
        doc["steps"].append(record)
        if terminated:
            break
    doc["env"] = env
    return doc


def sizes_of(env) -> dict:
    """SMACv2's own size functions for one configured env."""
    return {
        "n_agents": env.n_agents,
        "n_enemies": env.n_enemies,
        "n_actions": env.n_actions,
        "n_actions_no_attack": env.n_actions_no_attack,
        "obs_size": env.get_obs_size(),
        "state_size": env.get_state_size(),
        "obs_move_feats": env.get_obs_move_feats_size(),
        "obs_enemy_feats": list(env.get_obs_enemy_feats_size()),
        "obs_ally_feats": list(env.get_obs_ally_feats_size()),
        "obs_own_feats": env.get_obs_own_feats_size(),
        "cap_size": env.get_cap_size(),
        "state_ally_feats": env.get_ally_num_attributes(),
        "state_enemy_feats": env.get_enemy_num_attributes(),
        "unit_type_bits": env.unit_type_bits,
        "episode_limit": env.episode_limit,
    }


def build_case(mods, smacv2_root: Path, name: str, old: dict | None, seed: int | None) -> dict:
    """The golden document of one case: inputs plus SMACv2's outputs, in the committed key order."""
    case = CASES[name]
    env_args = load_env_args(smacv2_root, case["race"], case["n"], case["m"], case.get("conic_fov", False))
    if old is not None:
        if old["env_args"] != env_args:
            raise ValueError(f"{name}: the stored env_args differ from SMACv2's example config with this case's sizes")
        inputs = {k: old["inputs"][k] for k in ("episode_config", "placement", "reset_obs_order", "steps")}
        fabricate = None
    else:
        fab = fabricate_inputs(mods[2], env_args, case, seed, list(CASES).index(name))
        rng = fab.pop("rng")
        fab["reset_obs_order"] = [int(v) for v in rng.permutation(case["n"])]
        fab["steps"] = []
        inputs, fabricate = fab, (case, rng)
    runs = {}
    for key, flags in (
        ("reward", {}),
        ("reward_raw", {"reward_scale": False}),
        ("reward_raw_signed", {"reward_scale": False, "reward_only_positive": False}),
    ):
        runs[key] = run_episode(mods, env_args, inputs, flags, fabricate)
        fabricate = None  # the later runs replay the inputs the first one drew
    main = runs["reward"]
    env = main.pop("env")
    for key in ("reward_raw", "reward_raw_signed"):
        other = runs[key]
        other.pop("env")
        for s, (a, b) in enumerate(zip(main["steps"], other["steps"], strict=True)):
            if {k: v for k, v in a.items() if not k.startswith("reward")} != {
                k: v for k, v in b.items() if not k.startswith("reward")
            }:
                bad = [k for k in b if not k.startswith("reward") and a[k] != b[k]]
                raise AssertionError(f"{name} step {s}: the reward flags changed more than the reward: {bad}")
            a[key] = b["reward"]
    steps_in = [
        {"actions": s["actions"], "next_units": s["next_units"], "obs_order": s["obs_order"]}
        for s in inputs["steps"][: len(main["steps"])]
    ]
    return {
        "scenario": name,
        "generator": f"SMACv2 (oxwhirl/smacv2 {SMACV2_COMMIT[:7]}) StarCraftCapabilityEnvWrapper on a scripted game",
        "env_args": env_args,
        "assumptions": ASSUMPTIONS,
        "sizes": sizes_of(env),
        "env_info": {k: (v if isinstance(v, (int, float, str)) else list(v)) for k, v in env.get_env_info().items()},
        "obs_feature_names": list(env.get_obs_feature_names()),
        "state_feature_names": list(env.get_state_feature_names()),
        "unit_type_ids": main["unit_type_ids"],
        "enemy_unit_type_ids": main["enemy_unit_type_ids"],
        "max_reward": main["max_reward"],
        "map": main["map"],
        "agent_params": main["agent_params"],
        "enemy_type_bit": main["enemy_type_bit"],
        "inputs": {
            "episode_config": inputs["episode_config"],
            "placement": inputs["placement"],
            "reset_obs_order": inputs["reset_obs_order"],
            "steps": steps_in,
        },
        "reset": main["reset"],
        "steps": main["steps"],
    }


def build_sizes(mods, smacv2_root: Path) -> dict:
    """SMACv2's sizes for every race x team size x conic FOV, from the example configs."""
    wrapper_mod = mods[1]
    out = {}
    for race in RACE_UNITS:
        for n, m in SIZE_TEAMS:
            for fov in (False, True):
                env = wrapper_mod.StarCraftCapabilityEnvWrapper(**load_env_args(smacv2_root, race, n, m, fov)).env
                out[f"{race}_{n}_vs_{m}" + ("_conic_fov" if fov else "")] = sizes_of(env)
    return {"generator": f"SMACv2 (oxwhirl/smacv2 {SMACV2_COMMIT[:7]}) size functions, example configs", "sizes": out}


def _probe_env(mods, smacv2_root: Path, race: str, conic_fov: bool):
    """A 5 vs 5 env of ``race`` whose game-dependent fields are filled in, for single-unit probes."""
    starcraft2, wrapper_mod, _, sc, _ = mods
    env = wrapper_mod.StarCraftCapabilityEnvWrapper(**load_env_args(smacv2_root, race, 5, 5, conic_fov)).env
    env.map_x = env.map_y = env.max_distance_x = env.max_distance_y = MAP_SIZE
    env.pathing_grid = np.ones((MAP_SIZE, MAP_SIZE), dtype=bool)
    env._controller = ScriptedGame(sc, env, [])
    env._init_ally_unit_types(0)
    _register_type_names(env)
    env.obs_enemies = np.ones((env.n_enemies, env.n_agents))
    env.enemy_tags = [None] * env.n_enemies
    return env, sc


def _probe_unit(sc, env, name: str, ally: bool, x: float, y: float, alive: bool = True):
    stats = ALLY_STATS if ally else ENEMY_STATS
    hmax, smax, _ = stats[name]
    tid = env.ally_unit_map[name] if ally else env.enemy_unit_map[name]
    u = sc.raw.Unit(unit_type=int(tid), owner=1 if ally else 2)
    u.pos.x, u.pos.y, u.pos.z = x, y, TERRAIN_Z
    u.health, u.health_max, u.shield, u.shield_max = (hmax if alive else 0), hmax, smax, smax
    return u


def build_probes(mods, smacv2_root: Path) -> dict:
    """Range boundaries per unit type and the conic field of view, from SMACv2's own functions.

    ``ranges``: agent 0 (each unit type) at (16, 16) and one live enemy of its race at (16 + d, 16),
    every other unit dead, for d at and around the unit's sight and attack ranges; what
    ``get_obs_agent`` shows of that enemy (its feature block) and whether ``get_avail_agent_actions``
    lets the agent attack it (for a medivac: heal a live ally marine/marauder/... placed there).
    ``cone``: with conic FOV, agent 0 (a stalker, sight 10, attack 6) at (16, 16) facing each of the 12
    look directions; for targets at bearings 0, 10, ..., 350 degrees and distances 3 and 8,
    SMACv2's ``is_position_in_cone`` against the sight range and the attack range.
    """
    out = {"generator": f"SMACv2 (oxwhirl/smacv2 {SMACV2_COMMIT[:7]}) get_obs_agent / get_avail_agent_actions / "
           "is_position_in_cone on hand-placed units", "ranges": [], "cone": {}}  # fmt: skip
    for race, names in RACE_UNITS.items():
        for conic in (False, True):
            env, sc = _probe_env(mods, smacv2_root, race, conic)
            nf = env.get_obs_enemy_feats_size()[1]
            move = env.get_obs_move_feats_size()
            for name in names:
                env.agents = {0: _probe_unit(sc, env, name, True, 16.0, 16.0)}
                for i in range(1, 5):
                    env.agents[i] = _probe_unit(sc, env, names[0], True, 1.0 + i, 1.0, alive=False)
                sight = env.unit_sight_range(0)
                shoot = env.unit_shoot_range(0)
                dists = sorted({sight - 0.5, float(sight), sight + 0.25, float(shoot), shoot + 0.25, 1.0})
                for d in dists:
                    target = [n for n in names if n != "medivac"][0] if name == "medivac" else names[0]
                    env.enemies = {j: _probe_unit(sc, env, names[0], False, 30.0, 1.0 + j, alive=False) for j in range(5)}
                    env.enemies[0] = _probe_unit(sc, env, target, False, 16.0 + d, 16.0)
                    if name == "medivac":  # heal targets are allies: put a live one at the same spot
                        env.agents[1] = _probe_unit(sc, env, target, True, 16.0 + d, 16.0)
                    obs = env.get_obs_agent(0)
                    avail = env.get_avail_agent_actions(0)
                    out["ranges"].append({
                        "race": race, "conic_fov": conic, "agent": name, "sight_range": float(sight),
                        "shoot_range": float(shoot), "distance": float(d),
                        "enemy0_obs": _floats(obs[move : move + nf]),
                        "target_avail": int(avail[env.n_actions_no_attack + (1 if name == "medivac" else 0)]),
                    })  # fmt: skip
                    env.agents[1] = _probe_unit(sc, env, names[0], True, 2.0, 1.0, alive=False)
    env, sc = _probe_env(mods, smacv2_root, "protoss", True)
    env.agents = {0: _probe_unit(sc, env, "stalker", True, 16.0, 16.0)}
    bearings = list(range(0, 360, 10))  # no bearing on a cone edge (odd multiples of 15 degrees)
    for k in range(env.n_fov_actions):
        env.fov_directions[0] = env.canonical_fov_directions[k]
        rows = {}
        for d in (3.0, 8.0):
            sight_bits, shoot_bits = [], []
            for b in bearings:
                pos = _probe_unit(
                    sc, env, "stalker", False, 16.0 + d * np.cos(np.radians(b)), 16.0 + d * np.sin(np.radians(b))
                ).pos
                sight_bits.append(int(env.is_position_in_cone(0, pos)))
                shoot_bits.append(int(env.is_position_in_cone(0, pos, range="shoot_range")))
            rows[f"d{d:g}_sight"] = sight_bits
            rows[f"d{d:g}_shoot"] = shoot_bits
        out["cone"][f"action_{6 + k}"] = {"direction": [float(v) for v in env.canonical_fov_directions[k]], **rows}
    out["cone_bearings_deg"] = bearings
    return out


def dumps(doc: dict) -> str:
    """The committed serialisation: compact JSON, Python float repr, no trailing newline."""
    return json.dumps(doc, separators=(",", ":"))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--smacv2", required=True, help="path of an oxwhirl/smacv2 checkout (the folder holding smacv2/)")
    p.add_argument("--out", default=str(DEFAULT_OUT), help="folder of <case>.json files (default tests/data/smacv2_golden)")
    p.add_argument("--cases", nargs="+", default=list(CASES), help=f"cases to build (default all {len(CASES)})")
    p.add_argument("--check", action="store_true", help="recompute and compare with the files in --out; write nothing")
    p.add_argument("--new-cases", type=int, default=None, metavar="SEED", help="fabricate new inputs")
    p.add_argument("--sizes", action="store_true", help="also build sizes.json and probes.json (sizes, ranges, cone)")
    a = p.parse_args(argv)
    unknown = [c for c in a.cases if c not in CASES]
    if unknown:
        p.error(f"unknown case(s) {unknown}; expected some of {list(CASES)}")
    if a.check and a.new_cases is not None:
        p.error("--check compares recomputed outputs for the stored inputs; drop --new-cases")
    mods = import_smacv2(a.smacv2)
    print(f"SMACv2 from {mods[0].__file__}" + (" (pysc2 placeholder)" if mods[4] else " (pysc2 installed)"))
    root, out = Path(a.smacv2), Path(a.out)
    docs = []
    for name in a.cases:
        path = out / f"{name}.json"
        old_text = path.read_text() if path.is_file() else None
        if a.new_cases is None and old_text is None:
            p.error(f"{path} is absent: pass --new-cases SEED to fabricate its inputs")
        old = json.loads(old_text) if a.new_cases is None else None
        docs.append((path, old_text, build_case(mods, root, name, old, a.new_cases)))
    if a.sizes or a.check:
        for fname, build in (("sizes.json", build_sizes), ("probes.json", build_probes)):
            path = out / fname
            docs.append((path, path.read_text() if path.is_file() else None, build(mods, root)))
    differ = 0
    for path, old_text, doc in docs:
        text = dumps(doc)
        if a.check:
            same = text == old_text
            differ += not same
            print(f"{path.name}: {'identical' if same else 'DIFFERENT'} ({len(text.encode())} bytes)")
        else:
            out.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            print(f"{path.name}: wrote {path} ({len(text.encode())} bytes)")
    if a.check:
        print(f"{len(docs) - differ}/{len(docs)} files byte-identical")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
