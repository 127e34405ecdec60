"""A scripted expert for FullGame-v0 (Protoss on Simple64) that follows the replays' build order.

It reads only the observation (the same batched dicts every FullGame-v0 backend emits) and issues
one command per game and step, in this order of priority: send its idle army to attack (once the
attack has begun), start a Pylon or Gateway when the build order says so, train a Zealot at an idle
Gateway, train a Probe, send an idle Probe back to mining; otherwise no-op.

The build order is :data:`EXPERT_BUILD`, the medians of the 80 mini-AlphaStar Simple64 replays
(``python benchmarks/fullgame_build_order.py REPLAY_DIR``: food used when each structure was
started, workers, gateways and Zealots at the first Attack command): Pylon at 13 food, Gateway at 14,
a second Pylon at 15, a second Gateway at 15, a third Gateway at 28; Probes up to 19; attack with 5
Zealots. After the opening it keeps supply ahead of production (a Pylon when free supply falls below
``2 + 2 x gateways``, the Gateways' Zealot output over a Pylon's build time) and attacks with every
Zealot that is idle, at the nearest enemy it knows of (a seen unit or structure snapshot), or at the
enemy's start location.

Placement is by candidate cells around the Nexus (Pylons, on the side away from its minerals) and
around finished Pylons (Gateways, inside the power field); a candidate the game refuses is skipped
the next time (the policy does not see ``action_errors``: a build command no Probe holds in its
orders on the next observation was refused, and one that has not appeared after ``build_timeout``
steps is given up).

It is a baseline (the scripted expert that learned policies are compared with), not a tuned bot: it uses no gas, no Stalkers,
no micro.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sc2_envs.full_game import spec

__all__ = ["EXPERT_BUILD", "BuildOrder", "ScriptedExpert"]

# Game unit ids (Blizzard/s2client-proto stableid.json; pysc2 units.py).
PROBE, ZEALOT, NEXUS, PYLON, GATEWAY = 84, 73, 59, 60, 62
MINERAL_FIELDS = (341, 483, 146, 147, 665, 666, 796, 797, 884, 885, 886, 887)

_E = spec.ENTITY_INDEX
_S = spec.SCALAR_INDEX


@dataclass(frozen=True)
class BuildOrder:
    """What the scripted expert builds and when (food used = supply, as the replays' PlayerStats).

    Attributes:
        pylon_food: food at which the 1st, 2nd, ... Pylon is started (later ones by free supply).
        gateway_food: food at which the 1st, 2nd, ... Gateway is started.
        max_workers: Probes it trains up to.
        attack_zealots: Zealots alive when it launches the first attack.
        free_supply_base, free_supply_per_gateway: after the listed Pylons, a Pylon is started when
            free supply falls below ``base + per_gateway x gateways``.
    """

    pylon_food: tuple[int, ...] = (13, 15)
    gateway_food: tuple[int, ...] = (14, 15, 28)
    max_workers: int = 19
    attack_zealots: int = 5
    free_supply_base: int = 2
    free_supply_per_gateway: int = 2


EXPERT_BUILD = BuildOrder()
"""The replays' medians (``benchmarks/fullgame_build_order.py`` on the 80 Simple64 replays:
pylon1_food 13, pylon2_food 15, gateway1_food 14, gateway2_food 15, gateway3_food 28,
max_workers_before_attack 19, zealots_at_attack 5)."""

_BUILD = {"pylon": "Build_Pylon_pt", "gateway": "Build_Gateway_pt"}
PYLON_COST, GATEWAY_COST, ZEALOT_COST, PROBE_COST = 100, 150, 100, 50  # minerals (3.16.1 game data)


def _fid(name: str) -> int:
    for f in spec.raw_functions():
        if f.name == name:
            return f.id
    raise KeyError(name)


class ScriptedExpert:
    """Replay build order as a FullGame-v0 policy (module docstring), batched over B games.

    Args:
        enemy_start: the enemy's start location on the raw grid ``(col, row)`` (where the first
            attack goes); ``ScriptedExpert.for_lite(env)`` reads it from the lite engine's map, and on
            the real game it is ``game_info.start_raw.start_locations`` through ``spec.world_to_grid``.
        build: the build order (default :data:`EXPERT_BUILD`).
        max_entities, max_selected, raw_resolution: the env's N, K and R.
        build_timeout: steps after which a build whose Probe has not placed it is given up.
        retry_pause: steps between a refused build and the next try (other commands go in between).
    """

    def __init__(
        self,
        enemy_start: tuple[int, int],
        build: BuildOrder = EXPERT_BUILD,
        max_entities: int = 512,
        max_selected: int = 64,
        raw_resolution: int = 64,
        build_timeout: int = 40,
        retry_pause: int = 3,
    ):
        self.enemy_start = (int(enemy_start[0]), int(enemy_start[1]))
        r = int(raw_resolution)
        if not (0 <= self.enemy_start[0] < r and 0 <= self.enemy_start[1] < r):
            raise ValueError(f"enemy_start={enemy_start!r} is off the {r}x{r} raw grid")
        self.build = build
        self.n, self.k, self.r = int(max_entities), int(max_selected), r
        self.build_timeout = int(build_timeout)
        self.retry_pause = int(retry_pause)
        self.ids = {
            name: _fid(name)
            for name in (
                "no_op",
                "Attack_pt",
                "Harvest_Gather_unit",
                "Build_Pylon_pt",
                "Build_Gateway_pt",
                "Train_Probe_quick",
                "Train_Zealot_quick",
            )
        }
        idx = spec.unit_type_index
        self.vocab = {
            k: idx(v)
            for k, v in (("probe", PROBE), ("zealot", ZEALOT), ("nexus", NEXUS), ("pylon", PYLON), ("gateway", GATEWAY))
        }
        self.minerals = np.zeros(spec.num_unit_types(), bool)
        self.minerals[[idx(m) for m in MINERAL_FIELDS]] = True
        self._games: list[dict] = []

    @classmethod
    def for_lite(cls, env, **kwargs) -> ScriptedExpert:
        """The expert for a lite-engine env (``LiteFullGameVectorEnv`` or ``LiteFullGameEnv``): the bot's
        start location from its map, the sizes from its action space."""
        space = getattr(env, "single_action_space", env.action_space)
        r = int(space["target_location"].nvec[0])
        kwargs.setdefault("raw_resolution", r)
        kwargs.setdefault("max_entities", int(space["target_unit"].n) - 1)
        kwargs.setdefault("max_selected", int(space["selected_units"].nvec.shape[0]))
        m = env.engine.map
        col, row = spec.world_to_grid(*m.start_locations[1], m.map_size, r)
        return cls((int(col), int(row)), **kwargs)

    def reset(self, games=None) -> None:
        """Forget the memory (attack started, pending builds, refused cells) of ``games`` (bool ``(B,)``)."""
        if games is None:
            self._games = []
            return
        for g in np.flatnonzero(np.asarray(games)):
            if g < len(self._games):
                self._games[g] = self._fresh()

    @staticmethod
    def _fresh() -> dict:
        return {"attacking": False, "pending": None, "tried": {"pylon": 0, "gateway": 0}}

    def __call__(self, obs: dict) -> dict:
        """Actions for a batched observation dict (leading axis B)."""
        ents = np.asarray(obs["entities"])
        b = ents.shape[0]
        while len(self._games) < b:
            self._games.append(self._fresh())
        action = {
            "action_type": np.zeros(b, np.int64),
            "delay": np.zeros(b, np.int64),
            "queued": np.zeros(b, np.int64),
            "selected_units": np.full((b, self.k), self.n, np.int64),
            "target_unit": np.full(b, self.n, np.int64),
            "target_location": np.zeros((b, 2), np.int64),
        }
        for g in range(b):
            self._decide(g, ents[g], np.asarray(obs["entity_mask"][g]).astype(bool), np.asarray(obs["scalars"][g]), action)
        return action

    # ------------------------------------------------------------------ one game
    def _decide(self, g: int, ent: np.ndarray, real: np.ndarray, sc: np.ndarray, action: dict) -> None:
        mem = self._games[g]
        utype = ent[:, _E["unit_type"]].astype(np.int64)
        own = real & (ent[:, _E["alliance"]] == 1)
        done = ent[:, _E["build_progress"]] >= 1
        idle = ent[:, _E["order_length"]] == 0
        xy = ent[:, [_E["x"], _E["y"]]].astype(np.float64)
        v = self.vocab
        probes = np.flatnonzero(own & (utype == v["probe"]))
        zealots = np.flatnonzero(own & (utype == v["zealot"]))
        nexus = np.flatnonzero(own & (utype == v["nexus"]) & done)
        pylons_all = np.flatnonzero(own & (utype == v["pylon"]))
        pylons_done = np.flatnonzero(own & (utype == v["pylon"]) & done)
        gateways_all = np.flatnonzero(own & (utype == v["gateway"]))
        gateways_idle = np.flatnonzero(own & (utype == v["gateway"]) & done & idle)
        minerals = float(sc[_S["minerals"]])
        food, cap = float(sc[_S["food_used"]]), float(sc[_S["food_cap"]])
        counts = {"pylon": len(pylons_all), "gateway": len(gateways_all)}
        pending = mem["pending"]
        if pending is not None:
            kind, before = pending
            mem["pending_age"] = mem.get("pending_age", 0) + 1
            walking = np.any(ent[probes, _E["order_id_0"]] == self.ids[_BUILD[kind]])
            if counts[kind] > before:
                mem["pending"] = None
            elif not walking or mem["pending_age"] > self.build_timeout:
                # refused (no probe took the order), or it never arrived: the next cell, after a pause in
                # which the other priorities act (a refused cell costs one step, not the whole economy)
                mem["pending"] = None
                mem["pause"] = self.retry_pause
        reserve = {"pylon": PYLON_COST, "gateway": GATEWAY_COST}[mem["pending"][0]] if mem["pending"] else 0
        money = minerals - reserve
        bo = self.build

        # 1. the army
        if not mem["attacking"] and len(zealots) >= bo.attack_zealots:
            mem["attacking"] = True
        if mem["attacking"]:
            ready = zealots[idle[zealots]]
            if len(ready):
                self._command(action, g, "Attack_pt", ready, loc=self._attack_target(ent, real, xy, ready))
                return
        # 2. structures (one pending at a time)
        mem["pause"] = mem.get("pause", 0) - 1
        if mem["pending"] is None and mem["pause"] <= 0 and len(nexus) and len(probes):
            want = None
            n_pylons, n_gates = counts["pylon"], counts["gateway"]
            if n_pylons < len(bo.pylon_food):
                if food >= bo.pylon_food[n_pylons]:
                    want = "pylon"
            elif (
                cap + 8 * (n_pylons - len(pylons_done)) < 200
                and cap + 8 * (n_pylons - len(pylons_done)) - food < bo.free_supply_base + bo.free_supply_per_gateway * n_gates
            ):
                want = "pylon"
            if want is None and len(pylons_done) and n_gates < len(bo.gateway_food) and food >= bo.gateway_food[n_gates]:
                want = "gateway"
            if want is not None and money >= {"pylon": PYLON_COST, "gateway": GATEWAY_COST}[want]:
                cell = self._site(want, mem["tried"][want], ent, real, xy, nexus[0], pylons_done)
                if cell is not None:
                    builder = probes[np.argmin(((xy[probes] - cell) ** 2).sum(1))]
                    self._command(action, g, _BUILD[want], [builder], loc=cell)
                    mem["pending"] = (want, counts[want])
                    mem["pending_age"] = 0
                    mem["tried"][want] += 1  # every try takes the next candidate cell
                    return
            if want is not None:
                money -= {"pylon": PYLON_COST, "gateway": GATEWAY_COST}[want]  # save up for it
        # 3. Zealots
        if len(gateways_idle) and money >= ZEALOT_COST and cap - food >= 2:
            self._command(action, g, "Train_Zealot_quick", gateways_idle[:1])
            return
        # 4. Probes (one queued ahead)
        if (
            len(nexus)
            and len(probes) < bo.max_workers
            and ent[nexus[0], _E["order_length"]] < 2
            and money >= PROBE_COST
            and cap - food >= 1
        ):
            self._command(action, g, "Train_Probe_quick", nexus[:1])
            return
        # 5. idle Probes back to mining
        lazy = probes[idle[probes]]
        fields = np.flatnonzero(real & self.minerals[utype])
        if len(lazy) and len(fields):
            home = xy[nexus[0]] if len(nexus) else xy[lazy[0]]
            f = fields[np.argmin(((xy[fields] - home) ** 2).sum(1))]
            self._command(action, g, "Harvest_Gather_unit", lazy[: self.k], target=f)

    def _command(self, action, g, name, units, loc=None, target=None) -> None:
        action["action_type"][g] = self.ids[name]
        units = np.asarray(units, np.int64)[: self.k]
        action["selected_units"][g, : len(units)] = units
        if target is not None:
            action["target_unit"][g] = int(target)
        if loc is not None:
            action["target_location"][g] = np.clip(np.rint(loc), 0, self.r - 1).astype(np.int64)

    def _attack_target(self, ent, real, xy, army) -> np.ndarray:
        enemy = np.flatnonzero(real & (ent[:, _E["alliance"]] == 4))
        if not len(enemy):
            return np.asarray(self.enemy_start, np.float64)
        centre = xy[army].mean(0)
        return xy[enemy[np.argmin(((xy[enemy] - centre) ** 2).sum(1))]]

    def _site(self, kind, tried, ent, real, xy, nexus, pylons_done):
        """The ``tried``-th candidate cell (cycling) for a Pylon (around the Nexus, away from its
        minerals) or a Gateway (around the finished Pylons, inside the power field)."""
        utype = ent[:, _E["unit_type"]].astype(np.int64)
        if kind == "pylon":
            fields = np.flatnonzero(real & self.minerals[utype])
            away = xy[nexus] - (xy[fields].mean(0) if len(fields) else xy[nexus])
            norm = np.hypot(*away)
            d = away / norm if norm > 0 else np.array([1.0, 0.0])
            p = np.array([-d[1], d[0]])
            cands = [xy[nexus] + d * a + p * s for a in (3, 5, 7, 9, 11) for s in (0, 2, -2, 4, -4, 6, -6, 8, -8)]
        else:
            offsets = [
                (3, 0),
                (-3, 0),
                (0, 3),
                (0, -3),
                (3, 2),
                (-3, 2),
                (3, -2),
                (-3, -2),
                (2, 3),
                (-2, 3),
                (2, -3),
                (-2, -3),
            ]
            cands = [xy[q] + np.array(o, np.float64) for q in pylons_done for o in offsets]
            # the open ground is away from the Nexus and its mineral line: farthest cells first
            cands.sort(key=lambda c: -float(((c - xy[nexus]) ** 2).sum()))
        cands = [c for c in cands if 1 <= c[0] <= self.r - 2 and 1 <= c[1] <= self.r - 2]
        if not cands:
            return None
        return cands[tried % len(cands)]
