"""The scripted very_easy Terran bot of the lite engine (player 2).

Three behaviours, all through the same commands the agent uses (``LiteEngine.apply``), driven by
the fitted data of ``sc2_envs.lite.data.bot_very_easy`` (the 80 mini-AlphaStar Simple64 replays):

* **Opening**: its seeded timeline (``sample_opening``: the first SCVs, depots, refineries,
  Barracks, Tech Lab, Orbital Command, first MULE, first three army units), each order issued so
  that the tracker-visible event lands at the sampled loop: a unit ``train time`` before its birth;
  a structure's SCV walks to the fitted site (``STRUCTURE_SITES``) ``BUILD_LEAD`` loops early and
  places it at the sampled loop. An order it cannot afford yet is retried every ``MACRO_PERIOD``.
  The first depot's lowering and the third depot (``bot_very_easy.sample_later_orders``) come the
  same way at their sampled loops, without holding the macro back.
* **Macro** (``BotParams``; its assumptions are listed in ``bot_very_easy.ASSUMPTIONS``): once the
  Orbital stands it trains SCVs back to back up to ``worker_target``; after the opening it keeps
  ``army_target`` army units, adding one per ``army_growth_interval`` from ``army_growth_start``
  up to ``army_cap``, the k-th unit alive always of the type its sampled plan gives the k-th
  (``bot_very_easy.sample_army``; a Marine while no Tech Lab stands); a Supply Depot when free supply falls under
  ``supply_margin``; a MULE whenever the Orbital has 50 energy; three SCVs per finished Refinery;
  once its first depot is lowered, every later depot lowered at the first decision after it is
  done (the replays lower each depot 1-19 loops after its UnitDone).
* **Defence**: every ``MACRO_PERIOD`` loops its idle army attack-moves to the nearest agent unit
  within ``defend_radius`` of its structures, and otherwise waits at ``rally``; it attacks the
  agent's start location only from ``attack_loop`` (never by default, as in every replay).

Not modelled yet: the later Factory, Command Center and Starport of the long replays.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from sc2_envs.lite import kernels
from sc2_envs.lite.catalog import TI_BUILD_TIME, TI_FOOTPRINT_W, TI_PRODUCER, TI_RESOURCE, TI_STRUCTURE
from sc2_envs.lite.data.bot_very_easy import BotParams, sample_army, sample_later_orders, sample_opening
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


def opening_events(seed: int, params: BotParams | None = None) -> list[tuple[int, str, str]]:
    """The bot's opening for one game: ``(loop, event, unit name)`` sorted by loop
    (``sc2_envs.lite.data.bot_very_easy.sample_opening``: seeded draws inside the replays' ranges)."""
    return sorted((int(loop), str(kind), str(name)) for loop, kind, name in sample_opening(int(seed), params))


# columns of the macro scan (one row per game)
(S_SCVS, S_ORBITAL_IDLE, S_ORBITAL_ENERGY, S_ARMY, S_ARMY_IDLE, S_BARRACKS_IDLE, S_TECHLAB, S_DEPOTS_BUILDING,
 S_REFINERY_SHORT, S_THREAT, S_ARMY_AWAY, S_DEPOT_RAISED) = range(12)  # fmt: skip
NSCAN = 12


@numba.njit(cache=True)
def _scan(ui, uf, pq, games, types, is_structure, rx, ry, radius, out):
    """What the bot's macro rules need from each game in one pass over its units.

    ``types``: engine ids of SCV, OrbitalCommand, Marine, Marauder, Barracks, BarracksTechLab,
    SupplyDepot, Refinery; ``is_structure``: per engine type. Slots are -1 when absent.
    """
    scv, orbital, marine, marauder, barracks, techlab, depot, refinery = types
    n = ui.shape[1]
    sx = np.empty(n, np.float64)
    sy = np.empty(n, np.float64)
    for k in range(games.shape[0]):
        b = games[k]
        o = out[b]
        o[:] = 0
        o[S_ORBITAL_IDLE] = -1
        o[S_ORBITAL_ENERGY] = -1
        o[S_BARRACKS_IDLE] = -1
        o[S_REFINERY_SHORT] = -1
        o[S_THREAT] = -1
        o[S_DEPOT_RAISED] = -1
        ns = 0
        for i in range(n):
            if ui[b, i, UI_ALIVE] == 0 or ui[b, i, UI_OWNER] != 2:
                continue
            t = ui[b, i, UI_TYPE]
            done = ui[b, i, UI_DONE] == 1
            if is_structure[t] == 1:
                sx[ns] = uf[b, i, UF_X]
                sy[ns] = uf[b, i, UF_Y]
                ns += 1
            if t == scv:
                o[S_SCVS] += 1
            elif t == marine or t == marauder:
                o[S_ARMY] += 1
                if ui[b, i, UI_NORDERS] == 0:
                    o[S_ARMY_IDLE] += 1
                    if math.hypot(uf[b, i, UF_X] - rx, uf[b, i, UF_Y] - ry) > 4.0:
                        o[S_ARMY_AWAY] += 1
            elif t == techlab and done:
                o[S_TECHLAB] += 1
            elif t == depot and not done:
                o[S_DEPOTS_BUILDING] += 1
            elif t == depot and ui[b, i, UI_NQUEUE] == 0:
                o[S_DEPOT_RAISED] = i  # finished, raised, not already lowering
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
        # the agent unit nearest to any of the bot's structures, within ``radius``
        best = radius
        for i in range(n):
            if ui[b, i, UI_ALIVE] == 0 or ui[b, i, UI_OWNER] != 1:
                continue
            for k2 in range(ns):
                d = math.hypot(uf[b, i, UF_X] - sx[k2], uf[b, i, UF_Y] - sy[k2])
                if d < best:
                    best = d
                    o[S_THREAT] = i


class VeryEasyTerranBot:
    """Drives player 2 of every game of a ``LiteEngine``.

    Args:
        engine: the engine whose games the bot plays.
        params: behaviour after the opening.
    """

    def __init__(self, engine, params: BotParams | None = None):
        self.engine = engine
        self.params = params or BotParams()
        self.rally = np.asarray(self.params.rally, np.float32)
        cat = engine.catalog
        self.t = {n: cat.ids[n] for n in cat.names}
        b = engine.num_games
        # (issue loop, type, verb, opening): the macro waits for the entries of the opening
        self.plans: list[list[tuple[int, int, str, bool]]] = [[] for _ in range(b)]
        self.pending: list[dict[int, tuple[int, float, float, int]]] = [{} for _ in range(b)]  # type -> (scv, x, y, geyser)
        self.started: list[dict[int, int]] = [{} for _ in range(b)]  # type -> structures of it placed
        # army_plan[g, k]: 1 when the plan's (k+1)-th army unit of game g is a Marauder
        self.army_plan = np.zeros((b, max(self.params.army_cap, 3) + 1), bool)
        self.next_event = np.full(b, np.iinfo(np.int64).max, np.int64)
        self.next_macro = np.zeros(b, np.int64)
        self.opening_done = np.zeros(b, bool)
        self.lowering = np.zeros(b, bool)  # the first depot is lowered: later ones follow in the macro
        self.home = np.asarray(engine.map.start_locations[1], np.float32)
        self.enemy_home = np.asarray(engine.map.start_locations[0], np.float32)
        self._sites = self._candidate_sites()
        self._type_tables: dict[tuple[str, ...], np.ndarray] = {}
        names = ("SCV", "OrbitalCommand", "Marine", "Marauder", "Barracks", "BarracksTechLab", "SupplyDepot", "Refinery")
        self.scan_types = np.array([self.t[n] for n in names], np.int64)
        self.is_structure = engine.catalog.ti[:, TI_STRUCTURE].astype(np.int64)
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
            plan = []
            for events, opening in ((opening_events(int(seed), self.params), True),
                                    (sample_later_orders(int(seed), self.params), False)):  # fmt: skip
                plan += [(self._issue_loop(loop, kind, name), self.t[name], kind, opening) for loop, kind, name in events]
                plan += [
                    (max(loop - BUILD_LEAD, 0), self.t[name], "walk", opening)
                    for loop, kind, name in events
                    if kind == "init" and name != "BarracksTechLab"
                ]
            plan.sort()
            self.pending[int(g)] = {}
            self.started[int(g)] = {}
            self.plans[int(g)] = plan
            army = sample_army(int(seed), self.params)
            self.army_plan[g] = False
            self.army_plan[g, : len(army)] = [u == "Marauder" for u in army]
            self.next_event[g] = plan[0][0] if plan else np.iinfo(np.int64).max
            self.next_macro[g] = 0
            self.opening_done[g] = not any(e[3] for e in plan)
            self.lowering[g] = False

    def save(self, game: int) -> dict:
        """A copy of what the bot holds for one game (its plan, pending builds, counters and flags), for
        :meth:`load`; the game's units are the engine's (``LiteEngine.save``)."""
        g = int(game)
        return {
            "plan": list(self.plans[g]),  # its entries are tuples; the list is edited in place as the plan runs
            "pending": dict(self.pending[g]),
            "started": dict(self.started[g]),
            "army_plan": self.army_plan[g].copy(),
            "next_event": int(self.next_event[g]),
            "next_macro": int(self.next_macro[g]),
            "opening_done": bool(self.opening_done[g]),
            "lowering": bool(self.lowering[g]),
        }

    def load(self, game: int, saved: dict) -> None:
        """Put back what :meth:`save` returned into one game (copies: the save can be loaded again)."""
        g = int(game)
        self.plans[g] = list(saved["plan"])
        self.pending[g] = dict(saved["pending"])
        self.started[g] = dict(saved["started"])
        self.army_plan[g] = saved["army_plan"]
        self.next_event[g] = saved["next_event"]
        self.next_macro[g] = saved["next_macro"]
        self.opening_done[g] = saved["opening_done"]
        self.lowering[g] = saved["lowering"]

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
        is_type = self._type_tables.get(names)
        if is_type is None:  # one lookup table per set of names: a gather instead of np.isin per call
            is_type = np.zeros(len(self.engine.catalog.names) + 1, bool)  # the last entry: slots of no type
            is_type[[self.t[n] for n in names]] = True
            self._type_tables[names] = is_type
        types = ui[:, UI_TYPE]
        known = (types >= 0) & (types < len(is_type) - 1)
        mask = (ui[:, UI_ALIVE] == 1) & (ui[:, UI_OWNER] == 2) & is_type[np.where(known, types, -1)]
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

    def _placeable(self, b: int, t: int, x: float, y: float) -> bool:
        st, eng = self.engine.state, self.engine
        return (
            kernels.placement_error(st.uf[b], st.ui[b], st.occ[b], eng.placement, eng.catalog.ti, eng.catalog.tf, t, 2, x, y)
            == 0
        )

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
                ok = self._command(b, CMD_BUILD_UNIT, [scv], param=t, target=g) == kernels.AR_SUCCESS
            else:
                ok = self._command(b, CMD_BUILD_PT, [scv], param=t, x=x, y=y) == kernels.AR_SUCCESS
            if ok:
                self.started[b][t] = self.started[b].get(t, 0) + 1
            return ok
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
            issue, t, verb, opening = plan[0]
            if not self._do(b, t, verb):
                # the lowering waits loop by loop for its depot to finish (the replays lower it 3-13
                # loops after its UnitDone); other orders retry at the next decision
                retry = 1 if t == self.t["SupplyDepotLowered"] else MACRO_PERIOD
                plan[0] = (loop + retry, t, verb, opening)
                plan.sort()
                break
            plan.pop(0)
            if t == self.t["SupplyDepotLowered"]:
                self.lowering[b] = True
        self.next_event[b] = plan[0][0] if plan else np.iinfo(np.int64).max
        if not any(e[3] for e in plan):
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
        _scan(
            st.ui,
            st.uf,
            st.pq,
            games,
            self.scan_types,
            self.is_structure,
            float(self.rally[0]),
            float(self.rally[1]),
            p.defend_radius,
            scan,
        )
        g = games
        sc = scan[g]
        # MULE whenever an Orbital has the energy
        m = sc[:, S_ORBITAL_ENERGY] >= 0
        if m.any():
            self._batch(g[m], CMD_CALLDOWN_MULE, sc[m, S_ORBITAL_ENERGY], target=self.mule_patch)
        # each later depot lowered once done, after the scripted first one
        m = self.lowering[g] & (sc[:, S_DEPOT_RAISED] >= 0)
        if m.any():
            self._batch(g[m], CMD_TRAIN, sc[m, S_DEPOT_RAISED], param=self.t["SupplyDepotLowered"])
        # SCVs back to back once the Orbital stands (the replays: none between loops 561 and ~2,950)
        m = (sc[:, S_ORBITAL_IDLE] >= 0) & (sc[:, S_SCVS] < p.worker_target)
        if m.any():
            self._batch(g[m], CMD_TRAIN, sc[m, S_ORBITAL_IDLE], param=self.t["SCV"])
        # three SCVs on each finished Refinery, one per decision
        m = sc[:, S_REFINERY_SHORT] >= 0
        for b, r in zip(g[m], sc[m, S_REFINERY_SHORT], strict=True):
            scv = self._free_scv(int(b), float(st.uf[b, r, UF_X]), float(st.uf[b, r, UF_Y]))
            if scv >= 0:
                self._batch(np.array([b]), CMD_GATHER, np.array([scv]), target=np.array([r]))
        done = self.opening_done[g]
        # after the opening: army_target units, growing by one per army_growth_interval from
        # army_growth_start up to army_cap (replacing losses); the next unit is the plan's
        grown = np.maximum(loop[g] - p.army_growth_start, -1) // p.army_growth_interval + 1
        target = np.minimum(p.army_target + np.maximum(grown, 0), p.army_cap)
        m = done & (sc[:, S_BARRACKS_IDLE] >= 0) & (sc[:, S_ARMY] < target)
        if m.any():
            k = np.minimum(sc[m, S_ARMY], self.army_plan.shape[1] - 1)
            marauder = self.army_plan[g[m], k] & (sc[m, S_TECHLAB] > 0)
            for unit, which in (("Marauder", marauder), ("Marine", ~marauder)):
                if which.any():
                    gg = g[m][which]
                    self._batch(gg, CMD_TRAIN, sc[m][which, S_BARRACKS_IDLE], param=self.t[unit])
        # a Supply Depot when free supply falls under 3
        pf = st.pf[g, 2]
        m = done & (pf[:, PF_FOOD_CAP] - pf[:, PF_FOOD_USED] < p.supply_margin) & (pf[:, PF_FOOD_CAP] < 200)
        m &= (sc[:, S_DEPOTS_BUILDING] == 0) & (pf[:, PF_MINERALS] >= 100)
        for b in g[m]:
            self._do(int(b), self.t["SupplyDepot"], "init")
        # defence: idle army attack-moves to the nearest agent unit near the Command Center
        if p.attack_loop is not None:
            m = loop[g] >= p.attack_loop
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
        # with no threat, idle army units away from the rally point go back to it
        m = (sc[:, S_THREAT] < 0) & (sc[:, S_ARMY_AWAY] > 0)
        if m.any():
            for b in g[m]:
                army = self._units(int(b), ("Marine", "Marauder"))
                away = [
                    int(a)
                    for a in army
                    if st.ui[b, a, UI_NORDERS] == 0
                    and np.hypot(st.uf[b, a, UF_X] - self.rally[0], st.uf[b, a, UF_Y] - self.rally[1]) > 4.0
                ]
                if away:
                    self._command(int(b), CMD_MOVE_PT, away, x=float(self.rally[0]), y=float(self.rally[1]))

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


def _site_key(unit: str, nth: int) -> str:
    """``STRUCTURE_SITES`` key of the ``nth`` structure of a type (``supply_depot_2``, ``factory``)."""
    snake = "".join("_" + c.lower() if c.isupper() else c for c in unit).lstrip("_")
    keyed = {"SupplyDepot", "Refinery", "Barracks"}
    return f"{snake}_{nth}" if unit in keyed else unit.lower()
