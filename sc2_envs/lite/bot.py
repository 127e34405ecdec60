"""The scripted very_easy Terran bot of the lite engine (player 2).

Three behaviours, all through the same commands the agent uses (``LiteEngine.apply``):

* **Opening**: a timeline of orders (train SCV, build Supply Depot / Refinery / Barracks, Tech
  Lab, Orbital Command, MULE, first Marines) issued at sampled game loops. The timeline comes from
  ``sc2_envs.lite.data.bot_very_easy`` (fitted to the 80 mini-AlphaStar Simple64 replays, seeded
  jitter inside the measured ranges) when that module is present, else from ``DEFAULT_OPENING``
  (the replays' medians). A structure's order is issued ``BUILD_LEAD`` loops before its measured
  ``UnitInit`` so that the SCV waits at the site, and the Build order at the planned loop; a unit's order ``train
  time`` before its measured birth. An order the bot cannot afford yet is retried every ``MACRO_PERIOD`` loops.
* **Macro** (documented assumptions, parameters of ``BotParams``): once the Orbital stands it
  trains SCVs back to back up to ``max_workers`` (the replays: about 20); after the opening the Barracks trains one
  Marine or Marauder every ``army_period`` loops up to ``max_army`` (the replays: at most 6 alive
  by 6 real minutes); a Supply Depot when free supply falls under 3; a MULE whenever the Orbital
  has 50 energy; three SCVs per finished Refinery.
* **Defence**: every ``MACRO_PERIOD`` loops, army units attack-move to the nearest agent unit
  within ``defend_radius`` of the Command Center; the replays show no attack (the AI's kills are on
  its own side), so the bot never attacks unless ``attack_at_loop`` is set.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numba
import numpy as np

from sc2_envs.lite import kernels
from sc2_envs.lite.catalog import TI_BUILD_TIME, TI_FOOTPRINT_W, TI_PRODUCER, TI_RESOURCE
from sc2_envs.lite.layout import (
    CK_KIND,
    CK_PARAM,
    CK_PLAYER,
    CK_QUEUED,
    CK_TARGET,
    CMD_ATTACK_PT,
    CMD_BUILD_PT,
    CMD_BUILD_UNIT,
    CMD_CALLDOWN_MULE,
    CMD_GATHER,
    CMD_MOVE_PT,
    CMD_TRAIN,
    NCK,
    OI_KIND,
    ORD_GATHER,
    PF_FOOD_CAP,
    PF_FOOD_USED,
    PF_MINERALS,
    UF_ENERGY,
    UF_X,
    UF_Y,
    UI_ALIVE,
    UI_CARGO,
    UI_DONE,
    UI_GATHER,
    UI_GEYSER,
    UI_NORDERS,
    UI_NQUEUE,
    UI_OWNER,
    UI_TYPE,
)

MACRO_PERIOD = 16
"""Game loops between the bot's decisions after the opening (one normal-speed second)."""
BUILD_LEAD = 80
"""Game loops before a structure's planned ``UnitInit`` at which its SCV starts walking to the
site; the Build order itself is issued at the planned loop, on arrival, so the structure is placed
at that loop."""

DEFAULT_OPENING: tuple[tuple[int, str, str], ...] = (
    (290, "born", "SCV"),
    (442, "init", "SupplyDepot"),
    (561, "born", "SCV"),
    (825, "init", "Refinery"),
    (1037, "init", "Barracks"),
    (1489, "init", "SupplyDepot"),
    (1648, "init", "Refinery"),
    (2508, "born", "Marine"),
    (2532, "init", "BarracksTechLab"),
    (2694, "done", "OrbitalCommand"),
    (2709, "born", "MULE"),
    (3531, "born", "Marine"),
    (4635, "born", "Marauder"),
)
"""Median loop of each opening event over the 80 mini-AlphaStar Simple64 replays (3.16.1.55958;
liuruoze/HierNet-SC2 ``data/replay/`` and liuruoze/Useful-Big-Resources
``replays/simple64_replays.7z``; s2protocol tracker events: ``born`` = SUnitBornEvent, ``init`` =
SUnitInitEvent, ``done`` = SUnitTypeChangeEvent of the morph). Used when
``sc2_envs.lite.data.bot_very_easy`` is not installed."""


@dataclass(frozen=True)
class BotParams:
    """Assumed behaviour after the opening (the replays end before most of it can be measured).

    Attributes:
        max_workers: SCVs the Orbital trains up to (replays: median 20 SCVs at 4 real minutes).
        max_army: Marines + Marauders kept (replays: at most 6 alive by 6 real minutes).
        army_period: game loops between army units once the opening is done (replays: Marines
            come 640 or 2,688 loops apart; 1,280 is between).
        defend_radius: cells around the Command Center in which agent units are engaged.
        attack_at_loop: game loop of an all-out attack on the agent's start location; 0 = never
            (the replays show none).
    """

    max_workers: int = 20
    max_army: int = 6
    army_period: int = 1280
    defend_radius: float = 24.0
    attack_at_loop: int = 0


def opening_events(seed: int) -> list[tuple[int, str, str]]:
    """The bot's opening for one game: ``(loop, event, unit name)`` sorted by loop.

    From ``sc2_envs.lite.data.bot_very_easy.sample_opening(seed)`` when that module exists,
    else ``DEFAULT_OPENING``.
    """
    try:
        from sc2_envs.lite.data import bot_very_easy
    except ImportError:
        return list(DEFAULT_OPENING)
    sampler = getattr(bot_very_easy, "sample_opening", None)
    if sampler is None:
        return list(DEFAULT_OPENING)
    return sorted((int(loop), str(kind), str(name)) for loop, kind, name in sampler(seed))


# columns of the macro scan (one row per game)
(S_SCVS, S_ORBITAL_IDLE, S_ORBITAL_ENERGY, S_ARMY, S_ARMY_IDLE, S_BARRACKS_IDLE, S_TECHLAB, S_DEPOTS_BUILDING,
 S_REFINERY_SHORT, S_THREAT) = range(10)  # fmt: skip
NSCAN = 10


@numba.njit(cache=True)
def _scan(ui, uf, pq, games, types, hx, hy, radius, out):
    """What the bot's macro rules need from each game in one pass over its units.

    ``types``: engine ids of SCV, OrbitalCommand, Marine, Marauder, Barracks, BarracksTechLab,
    SupplyDepot, Refinery. Slots are -1 when absent.
    """
    scv, orbital, marine, marauder, barracks, techlab, depot, refinery = types
    for k in range(games.shape[0]):
        b = games[k]
        o = out[b]
        o[:] = 0
        o[S_ORBITAL_IDLE] = -1
        o[S_ORBITAL_ENERGY] = -1
        o[S_BARRACKS_IDLE] = -1
        o[S_REFINERY_SHORT] = -1
        o[S_THREAT] = -1
        best_threat = radius
        n = ui.shape[1]
        for i in range(n):
            if ui[b, i, UI_ALIVE] == 0:
                continue
            t = ui[b, i, UI_TYPE]
            owner = ui[b, i, UI_OWNER]
            if owner == 1:
                d = math.hypot(uf[b, i, UF_X] - hx, uf[b, i, UF_Y] - hy)
                if d < best_threat:
                    best_threat = d
                    o[S_THREAT] = i
                continue
            if owner == 0:
                continue
            done = ui[b, i, UI_DONE] == 1
            if t == scv:
                o[S_SCVS] += 1
            elif t == marine or t == marauder:
                o[S_ARMY] += 1
                if ui[b, i, UI_NORDERS] == 0:
                    o[S_ARMY_IDLE] += 1
            elif t == techlab and done:
                o[S_TECHLAB] += 1
            elif t == depot and not done:
                o[S_DEPOTS_BUILDING] += 1
            for q in range(ui[b, i, UI_NQUEUE]):
                if pq[b, i, q] == scv:
                    o[S_SCVS] += 1
                elif pq[b, i, q] == marine or pq[b, i, q] == marauder:
                    o[S_ARMY] += 1
            if t == orbital and done:
                if ui[b, i, UI_NQUEUE] == 0:
                    o[S_ORBITAL_IDLE] = i
                if uf[b, i, UF_ENERGY] >= 50.0:
                    o[S_ORBITAL_ENERGY] = i
            elif t == barracks and done and ui[b, i, UI_NQUEUE] == 0:
                o[S_BARRACKS_IDLE] = i
            elif t == refinery and done:
                on = 0
                for w in range(n):
                    if ui[b, w, UI_ALIVE] == 1 and ui[b, w, UI_TYPE] == scv and ui[b, w, UI_GATHER] == i:
                        on += 1
                if on < 3:
                    o[S_REFINERY_SHORT] = i


class VeryEasyTerranBot:
    """Drives player 2 of every game of a ``LiteEngine``.

    Args:
        engine: the engine whose games the bot plays.
        params: behaviour after the opening.
    """

    def __init__(self, engine, params: BotParams | None = None):
        self.engine = engine
        self.params = params or BotParams()
        cat = engine.catalog
        self.t = {n: cat.ids[n] for n in cat.names}
        b = engine.num_games
        self.plans: list[list[tuple[int, int, str]]] = [[] for _ in range(b)]  # (issue loop, type, verb)
        self.pending: list[dict[int, tuple[int, float, float, int]]] = [{} for _ in range(b)]  # type -> (scv, x, y, geyser)
        self.next_event = np.full(b, np.iinfo(np.int64).max, np.int64)
        self.next_macro = np.zeros(b, np.int64)
        self.next_army = np.zeros(b, np.int64)
        self.opening_done = np.zeros(b, bool)
        self.home = np.asarray(engine.map.start_locations[1], np.float32)
        self.enemy_home = np.asarray(engine.map.start_locations[0], np.float32)
        self._sites = self._candidate_sites()
        names = ("SCV", "OrbitalCommand", "Marine", "Marauder", "Barracks", "BarracksTechLab", "SupplyDepot", "Refinery")
        self.scan_types = np.array([self.t[n] for n in names], np.int64)
        tpl = engine.template
        fields = [s for s in range(engine.first_free) if engine.catalog.ti[tpl.ui[0, s, UI_TYPE], TI_RESOURCE] == 1]
        self.mule_patch = min(
            fields, key=lambda s: np.hypot(tpl.uf[0, s, UF_X] - self.home[0], tpl.uf[0, s, UF_Y] - self.home[1])
        )

    # ------------------------------------------------------------------ plan
    def _issue_loop(self, loop: int, kind: str, name: str) -> int:
        ti = self.engine.catalog.ti
        t = self.t[name]
        if kind == "born" and name != "MULE":
            return max(loop - int(ti[t, TI_BUILD_TIME]), 0)
        if kind == "done":
            return max(loop - int(ti[t, TI_BUILD_TIME]), 0)
        if kind == "init" and name == "BarracksTechLab":
            return loop
        return loop

    def reset(self, games, seeds) -> None:
        """New episodes for ``games`` with the given seeds."""
        for g, seed in zip(np.asarray(games).reshape(-1), np.asarray(seeds).reshape(-1), strict=True):
            events = opening_events(int(seed))
            plan = [(self._issue_loop(loop, kind, name), self.t[name], kind) for loop, kind, name in events]
            plan += [
                (max(loop - BUILD_LEAD, 0), self.t[name], "walk")
                for loop, kind, name in events
                if kind == "init" and name != "BarracksTechLab"
            ]
            plan.sort()
            self.pending[int(g)] = {}
            self.plans[int(g)] = plan
            self.next_event[g] = plan[0][0] if plan else np.iinfo(np.int64).max
            self.next_macro[g] = 0
            self.next_army[g] = 0
            self.opening_done[g] = not plan

    def _candidate_sites(self) -> np.ndarray:
        # Build sites: cells of the bot's plateau within 14 cells of its Command Center, nearest
        # first, keeping 2 cells off the mineral line's side (the game's AI builds in its main).
        m = self.engine.map
        hx, hy = self.home
        ys, xs = np.nonzero(m.placement)
        d = np.hypot(xs + 0.5 - hx, ys + 0.5 - hy)
        ok = (d > 6.0) & (d < 14.0) & (np.abs(m.height[ys, xs].astype(int) - int(m.height[int(hy), int(hx)])) == 0)
        mx = np.mean([x for _, x, _ in m.minerals if np.hypot(x - hx, 0) < 20] or [hx])
        away = (xs + 0.5 - hx) * (hx - mx) >= -4.0
        ok &= away
        order = np.argsort(d[ok])
        return np.stack([xs[ok][order], ys[ok][order]], axis=1).astype(np.float32)

    # ------------------------------------------------------------------ helpers on one game
    def _units(self, b: int, names: tuple[str, ...], done: bool = True) -> np.ndarray:
        ui = self.engine.state.ui[b]
        types = [self.t[n] for n in names]
        mask = (ui[:, UI_ALIVE] == 1) & (ui[:, UI_OWNER] == 2) & np.isin(ui[:, UI_TYPE], types)
        if done:
            mask &= ui[:, UI_DONE] == 1
        return np.flatnonzero(mask)

    def _free_scv(self, b: int, x: float, y: float) -> int:
        st = self.engine.state
        ui, uf, oi = st.ui[b], st.uf[b], st.oi[b]
        scvs = self._units(b, ("SCV",))
        if len(scvs) == 0:
            return -1
        mining = (oi[scvs, 0, OI_KIND] == ORD_GATHER) & (ui[scvs, UI_CARGO] == 0) & (ui[scvs, UI_NORDERS] == 1)
        mining &= np.array([ui[ui[s, UI_GATHER], UI_GEYSER] < 0 if ui[s, UI_GATHER] >= 0 else True for s in scvs])
        pool = scvs[mining] if mining.any() else scvs
        d = np.hypot(uf[pool, UF_X] - x, uf[pool, UF_Y] - y)
        return int(pool[np.argmin(d)])

    def _site(self, b: int, t: int) -> tuple[float, float] | None:
        st = self.engine.state
        eng = self.engine
        w = int(eng.catalog.ti[t, TI_FOOTPRINT_W])
        for x, y in self._sites:
            cx = kernels.snap_center(float(x) + 0.5, w)
            cy = kernels.snap_center(float(y) + 0.5, w)
            # one cell of margin so that units can walk between the bot's structures
            if (
                kernels.placement_error(
                    st.uf[b], st.ui[b], st.occ[b], eng.placement, eng.catalog.ti, eng.catalog.tf, t, 2, cx, cy
                )
                != 0
            ):
                continue
            if (
                w >= 2
                and kernels.placement_error(
                    st.uf[b], st.ui[b], st.occ[b], eng.placement, eng.catalog.ti, eng.catalog.tf, self._pad_type(w), 2, cx, cy
                )
                != 0
            ):
                continue
            return float(cx), float(cy)
        return None

    def _pad_type(self, w: int) -> int:
        # a type with a footprint one size larger, to test a margin around the site
        ti = self.engine.catalog.ti
        bigger = [t for t in range(ti.shape[0]) if ti[t, TI_FOOTPRINT_W] == w + 2 and ti[t, TI_PRODUCER] >= 0]
        return bigger[0] if bigger else self.t["CommandCenter"]

    def _command(
        self, b: int, kind: int, sel: list[int], param: int = 0, target: int = -1, x: float = 0.0, y: float = 0.0
    ) -> int:
        eng = self.engine
        ck = np.zeros((eng.num_games, NCK), np.int64)
        cf = np.zeros((eng.num_games, 2), np.float32)
        cs = np.full((eng.num_games, max(len(sel), 1)), -1, np.int64)
        ck[b, CK_KIND] = kind
        ck[b, CK_PARAM] = param
        ck[b, CK_TARGET] = target
        ck[b, CK_PLAYER] = 2
        ck[b, CK_QUEUED] = 0
        cf[b] = (x, y)
        cs[b, : len(sel)] = sel
        return int(eng.apply(ck, cf, cs)[b])

    def _do(self, b: int, t: int, verb: str) -> bool:
        """Issue one planned order; True when the game accepted it (or it can never succeed)."""
        name = self.engine.catalog.names[t]
        st = self.engine.state
        if name == "MULE":
            orb = self._units(b, ("OrbitalCommand",))
            if len(orb) == 0:
                return False
            r = kernels.nearest_mineral(
                st.uf[b], st.ui[b], self.engine.catalog.ti, float(self.home[0]), float(self.home[1]), 12.0
            )
            return self._command(b, CMD_CALLDOWN_MULE, [int(orb[0])], target=r) == kernels.AR_SUCCESS
        producer = self.engine.catalog.names[int(self.engine.catalog.ti[t, TI_PRODUCER])]
        if producer == "SCV":
            pending = self.pending[b].pop(t, None)
            if pending is not None and st.ui[b, pending[0], UI_ALIVE] == 1:
                scv, x, y, g = pending
            else:
                g = -1
                if name == "Refinery":
                    geysers = [
                        s
                        for s in range(self.engine.first_free)
                        if st.ui[b, s, UI_TYPE] == self.t["VespeneGeyser"] and st.ui[b, s, UI_GEYSER] < 0
                    ]
                    if not geysers:
                        return True
                    g = min(
                        geysers, key=lambda s: np.hypot(st.uf[b, s, UF_X] - self.home[0], st.uf[b, s, UF_Y] - self.home[1])
                    )
                    x, y = float(st.uf[b, g, UF_X]), float(st.uf[b, g, UF_Y])
                else:
                    site = self._site(b, t)
                    if site is None:
                        return True
                    x, y = site
                scv = self._free_scv(b, x, y)
                if scv < 0:
                    return False
            if verb == "walk":
                self.pending[b][t] = (scv, x, y, g)
                self._command(b, CMD_MOVE_PT, [scv], x=x, y=y - 2.0)
                return True
            if g >= 0:
                return self._command(b, CMD_BUILD_UNIT, [scv], param=t, target=g) == kernels.AR_SUCCESS
            return self._command(b, CMD_BUILD_PT, [scv], param=t, x=x, y=y) == kernels.AR_SUCCESS
        producers = self._units(
            b, (producer, "OrbitalCommand") if producer == "CommandCenter" and name != "OrbitalCommand" else (producer,)
        )
        if len(producers) == 0:
            return False
        return self._command(b, CMD_TRAIN, [int(p) for p in producers], param=t) == kernels.AR_SUCCESS

    # ------------------------------------------------------------------ behaviours
    def _opening(self, b: int, loop: int) -> None:
        plan = self.plans[b]
        while plan and plan[0][0] <= loop:
            issue, t, verb = plan[0]
            if not self._do(b, t, verb):
                plan[0] = (loop + MACRO_PERIOD, t, verb)
                plan.sort()
                break
            plan.pop(0)
        self.next_event[b] = plan[0][0] if plan else np.iinfo(np.int64).max
        if not plan:
            self.opening_done[b] = True

    def _batch(self, games: np.ndarray, kind: int, sel: np.ndarray, param=0, target=None, xy=None) -> np.ndarray:
        """One command in each of ``games`` (one ``apply`` call); returns their ActionResults."""
        eng = self.engine
        ck = np.zeros((eng.num_games, NCK), np.int64)
        cf = np.zeros((eng.num_games, 2), np.float32)
        sel = np.asarray(sel, np.int64).reshape(len(games), -1)
        cs = np.full((eng.num_games, sel.shape[1]), -1, np.int64)
        ck[games, CK_KIND] = kind
        ck[games, CK_PARAM] = param
        ck[games, CK_TARGET] = -1 if target is None else target
        ck[games, CK_PLAYER] = 2
        if xy is not None:
            cf[games] = xy
        cs[games] = sel
        return eng.apply(ck, cf, cs)[games]

    def _macro(self, games: np.ndarray, loop: np.ndarray) -> None:
        """The macro rules of every game in ``games`` at once (a scan kernel, batched commands)."""
        st = self.engine.state
        p = self.params
        scan = np.zeros((self.engine.num_games, NSCAN), np.int64)
        _scan(st.ui, st.uf, st.pq, games, self.scan_types, float(self.home[0]), float(self.home[1]), p.defend_radius, scan)
        g = games
        sc = scan[g]
        # MULE whenever an Orbital has the energy
        m = sc[:, S_ORBITAL_ENERGY] >= 0
        if m.any():
            self._batch(g[m], CMD_CALLDOWN_MULE, sc[m, S_ORBITAL_ENERGY], target=self.mule_patch)
        # SCVs back to back once the Orbital stands (the replays: none between loops 561 and ~2,950)
        m = (sc[:, S_ORBITAL_IDLE] >= 0) & (sc[:, S_SCVS] < p.max_workers)
        if m.any():
            self._batch(g[m], CMD_TRAIN, sc[m, S_ORBITAL_IDLE], param=self.t["SCV"])
        # three SCVs on each finished Refinery, one per decision
        m = sc[:, S_REFINERY_SHORT] >= 0
        for b, r in zip(g[m], sc[m, S_REFINERY_SHORT], strict=True):
            scv = self._free_scv(int(b), float(st.uf[b, r, UF_X]), float(st.uf[b, r, UF_Y]))
            if scv >= 0:
                self._batch(np.array([b]), CMD_GATHER, np.array([scv]), target=np.array([r]))
        done = self.opening_done[g]
        # one army unit every army_period loops after the opening, up to max_army
        m = done & (sc[:, S_BARRACKS_IDLE] >= 0) & (sc[:, S_ARMY] < p.max_army) & (loop[g] >= self.next_army[g])
        if m.any():
            marauder = (sc[m, S_ARMY] % 2 == 1) & (sc[m, S_TECHLAB] > 0)
            for unit, which in (("Marauder", marauder), ("Marine", ~marauder)):
                if which.any():
                    gg = g[m][which]
                    ok = self._batch(gg, CMD_TRAIN, sc[m][which, S_BARRACKS_IDLE], param=self.t[unit]) == kernels.AR_SUCCESS
                    self.next_army[gg[ok]] = loop[gg[ok]] + p.army_period
        # a Supply Depot when free supply falls under 3
        pf = st.pf[g, 2]
        m = done & (pf[:, PF_FOOD_CAP] - pf[:, PF_FOOD_USED] < 3) & (pf[:, PF_FOOD_CAP] < 200)
        m &= (sc[:, S_DEPOTS_BUILDING] == 0) & (pf[:, PF_MINERALS] >= 100)
        for b in g[m]:
            self._do(int(b), self.t["SupplyDepot"], "init")
        # defence: idle army attack-moves to the nearest agent unit near the Command Center
        if p.attack_at_loop:
            m = loop[g] >= p.attack_at_loop
            for b in g[m]:
                army = self._units(int(b), ("Marine", "Marauder"))
                if len(army):
                    self._command(
                        int(b), CMD_ATTACK_PT, [int(a) for a in army], x=float(self.enemy_home[0]), y=float(self.enemy_home[1])
                    )
        m = (sc[:, S_THREAT] >= 0) & (sc[:, S_ARMY_IDLE] > 0)
        for b, e in zip(g[m], sc[m, S_THREAT], strict=True):
            army = self._units(int(b), ("Marine", "Marauder"))
            idle = [int(a) for a in army if st.ui[b, a, UI_NORDERS] == 0]
            self._command(int(b), CMD_ATTACK_PT, idle, x=float(st.uf[b, e, UF_X]), y=float(st.uf[b, e, UF_Y]))

    def act(self, games: np.ndarray) -> None:
        """Run the bot's due decisions in ``games`` at their current loop."""
        loops = self.engine.game_loop.copy()
        for b in games[self.next_event[games] <= loops[games]]:
            self._opening(int(b), int(loops[b]))
        macro = games[self.next_macro[games] <= loops[games]]
        if len(macro):
            self._macro(macro, loops)
            self.next_macro[macro] = loops[macro] + MACRO_PERIOD

    def run(self, loops: np.ndarray) -> None:
        """Advance every game by ``loops[b]`` game loops, acting at each decision loop on the way."""
        eng = self.engine
        remaining = np.asarray(loops, np.int64).copy()
        running = eng.result == 0
        remaining[~running] = 0
        while True:
            now = eng.game_loop
            due = np.minimum(self.next_event, self.next_macro) - now
            act = (due <= 0) & (eng.result == 0) & (remaining > 0)
            if act.any():
                self.act(np.flatnonzero(act))
                due = np.minimum(self.next_event, self.next_macro) - eng.game_loop
            if not remaining.any():
                break
            chunk = np.minimum(remaining, np.maximum(due, 1))
            eng.advance(chunk)
            remaining -= chunk
            remaining[eng.result != 0] = 0
            if not remaining.any():
                break
