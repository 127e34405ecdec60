"""The lite engine's state for B games: dense arrays, fixed unit capacity, time in game loops.

A game's units live in ``U`` slots (neutral resources first, then units as they are born; a dead
unit's slot is reused, its tag changes). All per-unit records are the columns of
``sc2_envs.lite.layout``. ``initial_game`` builds one game's loop-0 state (the map's resources,
each player's town hall and 12 workers already mining, 50 minerals); a reset copies it.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

from sc2_envs.lite import kernels
from sc2_envs.lite.catalog import TI_FOOTPRINT_H, TI_FOOTPRINT_W, TI_RESOURCE, Catalog
from sc2_envs.lite.layout import (
    ERR_QUEUE,
    NGF,
    NGHOST,
    NGI,
    NOI,
    NPF,
    NQ,
    NUF,
    NUI,
    OI_KIND,
    OI_TARGET,
    ORD_GATHER,
    PF_FOOD_CAP,
    PF_FOOD_USED,
    PF_FOOD_WORKERS,
    PF_MINERALS,
    PF_STRUCTURES,
    PF_VESPENE,
    PF_WORKERS,
    PQ,
    UI_ALIVE,
    UI_CONTENTS,
    UI_GATHER,
    UI_NORDERS,
)
from sc2_envs.lite.maps import LiteMap


@dataclass
class GameState:
    """Mutable state of ``B`` games with ``U`` unit slots each, on an ``H x W`` map.

    Attributes:
        uf: ``(B, U, NUF)`` float32 per-unit floats (``UF_*``: position in cells, life, shields,
            energy, timers in game loops).
        ui: ``(B, U, NUI)`` int32 per-unit ints (``UI_*``: alive, type, owner, orders, worker phase).
        oi: ``(B, U, NQ, NOI)`` int32 order queue (``OI_*``), ``of``: ``(B, U, NQ, 2)`` float32 order points.
        pq: ``(B, U, PQ)`` int32 production queue of engine type ids (-1 empty).
        pf: ``(B, 3, NPF)`` float64 per-player values (row 1 the agent, 2 the bot; ``PF_*``).
        gi: ``(B, NGI)`` int64 per-game ints (``GI_*``: game loop, result).
        occ: ``(B, H, W)`` uint8, 1 where a structure or resource covers the cell.
        vis: ``(B, H, W)`` uint8, the agent's visibility (``VIS_*``).
        ghost: ``(B, NGHOST, NGF)`` float32 snapshots of destroyed enemy structures not seen die.
        err: ``(B, 2, 1 + ERR_QUEUE)`` int32 Build orders that failed on arrival, per player (the agent at
            ``[:, 0]``, the bot at ``[:, 1]``): column 0 counts the refusals not yet read, columns ``1..``
            hold their ActionResult codes in order (at most ``ERR_QUEUE``; the reader removes what it reads).
    """

    uf: np.ndarray
    ui: np.ndarray
    oi: np.ndarray
    of: np.ndarray
    pq: np.ndarray
    pf: np.ndarray
    gi: np.ndarray
    occ: np.ndarray
    vis: np.ndarray
    ghost: np.ndarray
    err: np.ndarray

    @classmethod
    def zeros(cls, num_games: int, capacity: int, height: int, width: int) -> GameState:
        """Empty state arrays (no units, loop 0)."""
        b, u = num_games, capacity
        return cls(
            uf=np.zeros((b, u, NUF), np.float32),
            ui=np.zeros((b, u, NUI), np.int32),
            oi=np.zeros((b, u, NQ, NOI), np.int32),
            of=np.zeros((b, u, NQ, 2), np.float32),
            pq=np.full((b, u, PQ), -1, np.int32),
            pf=np.zeros((b, 3, NPF), np.float64),
            gi=np.zeros((b, NGI), np.int64),
            occ=np.zeros((b, height, width), np.uint8),
            vis=np.zeros((b, height, width), np.uint8),
            ghost=np.zeros((b, NGHOST, NGF), np.float32),
            err=np.zeros((b, 2, 1 + ERR_QUEUE), np.int32),
        )

    @property
    def num_games(self) -> int:
        return self.uf.shape[0]

    @property
    def capacity(self) -> int:
        return self.uf.shape[1]

    def copy_game(self, src: GameState, src_index: int, dst_index: int) -> None:
        """Overwrite game ``dst_index`` with game ``src_index`` of ``src`` (same capacity and map)."""
        for f in fields(self):
            getattr(self, f.name)[dst_index] = getattr(src, f.name)[src_index]

    def arrays(self) -> tuple[np.ndarray, ...]:
        """The kernels' state arguments, in order: uf, ui, oi, of, pq, pf, gi, occ, ghost, vis."""
        return (self.uf, self.ui, self.oi, self.of, self.pq, self.pf, self.gi, self.occ, self.ghost, self.vis)


def read_refusals(queue: np.ndarray, limit: int | None = None) -> list[int]:
    """Take the oldest Build refusals (up to ``limit``; all when None) out of one player's row of
    ``GameState.err``, ``(1 + ERR_QUEUE,)`` int32, in place; the rest stay for a later read.

    Returns:
        The ActionResult codes taken, oldest first.

    Raises:
        RuntimeError: more refusals waited than ``ERR_QUEUE`` holds (their codes were not kept).
    """
    n = int(queue[0])
    if n > ERR_QUEUE:
        raise RuntimeError(f"{n} Build refusals waited unread; the queue keeps {ERR_QUEUE}: read them every step")
    k = n if limit is None else min(n, int(limit))
    taken = [int(c) for c in queue[1 : 1 + k]]
    rest = queue[1 + k : 1 + n].copy()
    queue[1:] = 0
    queue[1 : 1 + len(rest)] = rest
    queue[0] = n - k
    return taken


def _worker_spots(hall_x: float, hall_y: float, toward_x: float, toward_y: float, count: int) -> list[tuple[float, float]]:
    # Starting workers stand in a short block beside the town hall on its mineral side: the
    # game's own start layout (an L of 12, [REP]) is not published as coordinates, and they walk
    # to their fields in the first loops anyway.
    dx, dy = toward_x - hall_x, toward_y - hall_y
    d = max(np.hypot(dx, dy), 1e-6)
    ux, uy = dx / d, dy / d
    px, py = -uy, ux
    spots = []
    for k in range(count):
        row, col = divmod(k, 4)
        off = 3.2 + 0.8 * row
        lat = (col - 1.5) * 0.8
        spots.append((hall_x + ux * off + px * lat, hall_y + uy * off + py * lat))
    return spots


def initial_game(catalog: Catalog, lite_map: LiteMap, capacity: int) -> tuple[GameState, int]:
    """One game's loop-0 state on ``lite_map``.

    Player 1 (the agent) starts at ``lite_map.start_locations[0]`` with a Protoss Nexus, player 2
    (the bot) at ``[1]`` with a Terran Command Center; each gets ``start_workers`` workers, sent
    to the nearest fields two per field (the game sends starting workers to mine), 50 minerals
    and food 12 of 15.

    Returns:
        ``(state, first_free)``: a one-game state and the first slot after the neutral units.

    Raises:
        ValueError: ``capacity`` cannot hold the neutral units, halls and workers.
    """
    from sc2_envs.lite.data.profiles import get_profile

    eco = get_profile(catalog.profile).ECONOMY
    h, w = lite_map.pathing.shape
    need = len(lite_map.minerals) + len(lite_map.geysers) + 2 * (1 + eco.start_workers)
    if capacity < need + 8:
        raise ValueError(f"capacity={capacity} unit slots; Simple64's start alone needs {need} (use >= {need + 64})")
    st = GameState.zeros(1, capacity, h, w)
    uf, ui, oi, pq, pf, occ = st.uf[0], st.ui[0], st.oi[0], st.pq[0], st.pf[0], st.occ[0]
    ti, tf = catalog.ti, catalog.tf
    contents = {"MineralField": eco.mineral_field_contents, "MineralField750": eco.mineral_field_750_contents}
    for name, x, y in lite_map.minerals:
        t = catalog.type_id(name)
        s = kernels.spawn(uf, ui, oi, pq, occ, ti, tf, t, 0, x, y, True, 0)
        ui[s, UI_CONTENTS] = contents[name]
    for name, x, y in lite_map.geysers:
        t = catalog.type_id(name)
        s = kernels.spawn(uf, ui, oi, pq, occ, ti, tf, t, 0, x, y, True, 0)
        ui[s, UI_CONTENTS] = eco.geyser_contents
        kernels._mark_footprint(occ, x, y, int(ti[t, TI_FOOTPRINT_W]), int(ti[t, TI_FOOTPRINT_H]), 1)
    first_free = int(ui[:, UI_ALIVE].sum())
    minerals = [s for s in range(first_free) if ti[ui[s, 1], TI_RESOURCE] == 1]
    for player, (race_hall, worker) in ((1, ("Nexus", "Probe")), (2, ("CommandCenter", "SCV"))):
        hx, hy = lite_map.start_locations[player - 1]
        kernels.spawn(uf, ui, oi, pq, occ, ti, tf, catalog.type_id(race_hall), player, hx, hy, True, first_free)
        near = sorted(minerals, key=lambda s: np.hypot(uf[s, 0] - hx, uf[s, 1] - hy))[:8]
        mx = float(np.mean([uf[s, 0] for s in near]))
        my = float(np.mean([uf[s, 1] for s in near]))
        assigned = {s: 0 for s in near}
        spots = lite_map.start_workers[player - 1] or _worker_spots(hx, hy, mx, my, eco.start_workers)
        for x, y in spots:
            s = kernels.spawn(uf, ui, oi, pq, occ, ti, tf, catalog.type_id(worker), player, x, y, True, first_free)
            r = min(near, key=lambda m: (assigned[m], np.hypot(uf[m, 0] - x, uf[m, 1] - y)))
            assigned[r] += 1
            ui[s, UI_GATHER] = r
            oi[s, 0, OI_KIND] = ORD_GATHER
            oi[s, 0, OI_TARGET] = r
            ui[s, UI_NORDERS] = 1
        pf[player, PF_MINERALS] = eco.start_minerals
        pf[player, PF_VESPENE] = eco.start_gas
        pf[player, PF_FOOD_USED] = eco.start_workers
        pf[player, PF_FOOD_WORKERS] = eco.start_workers
        pf[player, PF_WORKERS] = eco.start_workers
        pf[player, PF_FOOD_CAP] = eco.start_food_cap
        pf[player, PF_STRUCTURES] = 1
    st.ghost[:] = 0
    assert ui[:, UI_NORDERS].max() <= 1
    return st, first_free
