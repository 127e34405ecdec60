"""The agent's observation of lite games, in exactly ``sc2_envs.full_game.spec``'s arrays.

``Observer.observe`` fills, for B games at once, what ``convert.observation_to_arrays`` makes of a
live ``ResponseObservation``: entities in ``spec.entity_order`` (own units, enemies, neutral; then
tag), scalars, the eight minimap planes, unit counts, the build order and the action-type mask
(what ``RequestQueryAvailableAbilities`` with resource requirements would allow). Fog of war:
the agent sees cells within sight range of its units; enemy units elsewhere are hidden, enemy
structures once seen stay as snapshots (``display_type`` 2) until their cell is seen again, and
resources out of sight are snapshots with no contents shown. ``omniscient=True`` shows
everything (the replay dataset's default).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numba
import numpy as np

from sc2_envs.full_game import spec
from sc2_envs.lite.borrow import borrowed
from sc2_envs.lite.catalog import (
    RES_MINERAL,
    TF_DAMAGE,
    TF_ENERGY_MAX,
    TF_FOOD,
    TF_FOOD_PROVIDED,
    TF_HP,
    TF_RADIUS,
    TF_SHIELD,
    TF_SIGHT,
    TI_ABILITY_ID,
    TI_ADDON,
    TI_BUILD_TIME,
    TI_BUILT_BY_WORKER,
    TI_CAN_MOVE,
    TI_GAS,
    TI_GAS_BUILDING,
    TI_MINERALS,
    TI_MORPH,
    TI_NEEDS_POWER,
    TI_PRODUCER,
    TI_RALLY,
    TI_REQUIRES,
    TI_RESOURCE,
    TI_STRUCTURE,
    TI_TOWNHALL,
    TI_TRAINS_AS,
    TI_WORKER,
    Catalog,
)
from sc2_envs.lite.kernels import PARALLEL_MIN_GAMES, unit_tag
from sc2_envs.lite.layout import (
    GH_HP_MAX,
    GH_TAG,
    GH_TYPE,
    GH_X,
    GH_Y,
    GI_GHOSTS,
    GI_LOOP,
    OI_KIND,
    OI_PARAM,
    ORD_ATTACK,
    ORD_ATTACK_MOVE,
    ORD_BUILD,
    ORD_CONSTRUCT,
    ORD_FOLLOW,
    ORD_GATHER,
    ORD_HOLD,
    ORD_MOVE,
    ORD_RETURN,
    PF_ARMY_COUNT,
    PF_FOOD_ARMY,
    PF_FOOD_CAP,
    PF_FOOD_USED,
    PF_FOOD_WORKERS,
    PF_IDLE_WORKERS,
    PF_MINERALS,
    PF_VESPENE,
    PQ,
    UF_BUILD,
    UF_COOLDOWN,
    UF_ENERGY,
    UF_HP,
    UF_PROD,
    UF_SHIELD,
    UF_X,
    UF_Y,
    UI_ALIVE,
    UI_CARGO,
    UI_CONTENTS,
    UI_DONE,
    UI_GATHER,
    UI_NORDERS,
    UI_NQUEUE,
    UI_OWNER,
    UI_POWERED,
    UI_SEEN,
    UI_TYPE,
    UI_WSTATE,
    WS_DROPOFF,
    WS_TO_HALL,
)
from sc2_envs.sim.runtime.chunks import kernel_threads, run_env_ids

_E = spec.ENTITY_INDEX
E_UNIT_TYPE = _E["unit_type"]
E_ALLIANCE = _E["alliance"]
E_OWNER = _E["owner"]
E_X = _E["x"]
E_Y = _E["y"]
E_BUILD_PROGRESS = _E["build_progress"]
E_HEALTH = _E["health"]
E_HEALTH_MAX = _E["health_max"]
E_SHIELD = _E["shield"]
E_SHIELD_MAX = _E["shield_max"]
E_ENERGY = _E["energy"]
E_ENERGY_MAX = _E["energy_max"]
E_DISPLAY_TYPE = _E["display_type"]
E_CLOAK = _E["cloak"]
E_IS_POWERED = _E["is_powered"]
E_IS_ACTIVE = _E["is_active"]
E_MINERAL_CONTENTS = _E["mineral_contents"]
E_VESPENE_CONTENTS = _E["vespene_contents"]
E_ASSIGNED = _E["assigned_harvesters"]
E_IDEAL = _E["ideal_harvesters"]
E_WEAPON_COOLDOWN = _E["weapon_cooldown"]
E_ORDER_LENGTH = _E["order_length"]
E_ORDER_ID_0 = _E["order_id_0"]
E_ORDER_ID_1 = _E["order_id_1"]
E_ORDER_PROGRESS_0 = _E["order_progress_0"]
E_ORDER_PROGRESS_1 = _E["order_progress_1"]
NE = len(spec.ENTITY_FEATURES)

_S = spec.SCALAR_INDEX
S_GAME_LOOP = _S["game_loop"]
S_HOME_RACE = _S["home_race"]
S_AWAY_RACE = _S["away_race"]
S_MINERALS = _S["minerals"]
S_VESPENE = _S["vespene"]
S_FOOD_USED = _S["food_used"]
S_FOOD_CAP = _S["food_cap"]
S_FOOD_WORKERS = _S["food_workers"]
S_FOOD_ARMY = _S["food_army"]
S_IDLE_WORKERS = _S["idle_worker_count"]
S_ARMY_COUNT = _S["army_count"]
S_LAST_ACTION = _S["last_action_type"]
S_LAST_DELAY = _S["last_delay"]
S_LAST_QUEUED = _S["last_queued"]
NS = len(spec.SCALAR_FEATURES)

_M = {name: k for k, name in enumerate(spec.MINIMAP_FEATURES)}
M_VISIBILITY = _M["visibility_map"]
M_CAMERA = _M["camera"]
M_PLAYER_RELATIVE = _M["player_relative"]

ALLIANCE_SELF, ALLIANCE_NEUTRAL, ALLIANCE_ENEMY = 1, 3, 4
OWNER_NEUTRAL = 16  # the live API's neutral player id
DISPLAY_VISIBLE, DISPLAY_SNAPSHOT = 1, 2
CLOAK_NOT_CLOAKED = 3
CAMERA_WIDTH = 24.0  # cells, mini-AlphaStar's interface (``feature_layer.width``)

# Generic abilities every unit of a kind reports (``RequestQueryAvailableAbilities``), by id:
# Smart 1, Stop_Stop 4, Move_Move 16, Patrol_Patrol 17, HoldPosition_Hold 18, Attack_Attack 23,
# Harvest_Gather_Probe 298, Harvest_Return_Probe 299, Rally_Nexus 207, Rally_Building 195,
# Cancel_Queue5 306, Cancel_BuildInProgress 314, Harvest_Gather_SCV 295, Harvest_Return_SCV 296.
(
    G_SMART,
    G_STOP,
    G_MOVE,
    G_PATROL,
    G_HOLD,
    G_ATTACK,
    G_GATHER,
    G_RETURN,
    G_RALLY_WORKERS,
    G_RALLY_UNITS,
    G_CANCEL_QUEUE,
    G_CANCEL_BUILD,
) = range(12)
GENERIC_ABILITIES = (1, 4, 16, 17, 18, 23, 298, 299, 207, 195, 306, 314)
NG = len(GENERIC_ABILITIES)

_jit = numba.njit(cache=True)
# Per-unit and per-cell helpers are inlined at Numba-IR level into their one caller: a call passing a
# dozen arrays costs more than a row's work, and inlined they see the borrowed views' null meminfo.
_inline = numba.njit(cache=True, inline="always")


@_inline
def _stamp_sight(vis, x, y, r):
    h, w = vis.shape
    x0 = max(int(math.floor(x - r)), 0)
    x1 = min(int(math.ceil(x + r)), w - 1)
    y0 = max(int(math.floor(y - r)), 0)
    y1 = min(int(math.ceil(y + r)), h - 1)
    r2 = r * r
    for yy in range(y0, y1 + 1):
        dy = yy + 0.5 - y
        for xx in range(x0, x1 + 1):
            dx = xx + 0.5 - x
            if dx * dx + dy * dy <= r2:
                vis[yy, xx] = 2


@_inline
def _cell_visible(vis, x, y):
    h, w = vis.shape
    return vis[min(max(int(y), 0), h - 1), min(max(int(x), 0), w - 1)] == 2


@_inline
def _grid(x, y, map_w, map_h, res):
    scale = res / max(map_w, map_h)
    col = min(max(int(math.floor(x * scale)), 0), res - 1)
    row = min(max(int(math.floor((map_h - y) * scale)), 0), res - 1)
    return col, row


@_inline
def _order_fid(ui, oi, pq, i, order_fids, type_fids_quick, type_fids_build):
    """Raw function (general) of order ``k`` of unit ``i`` for k = 0, 1, and the order count."""
    out0 = 0
    out1 = 0
    n = 0
    if ui[i, UI_NQUEUE] > 0:
        n = ui[i, UI_NQUEUE]
        out0 = type_fids_quick[pq[i, 0]]
        if n > 1:
            out1 = type_fids_quick[pq[i, 1]]
        return n, out0, out1
    n = ui[i, UI_NORDERS]
    for k in range(min(n, 2)):
        kind = oi[i, k, OI_KIND]
        if kind == ORD_BUILD or kind == ORD_CONSTRUCT:
            f = type_fids_build[oi[i, k, OI_PARAM]] if kind == ORD_BUILD else 0
        elif kind == ORD_GATHER and k == 0 and (ui[i, UI_WSTATE] == WS_TO_HALL or ui[i, UI_WSTATE] == WS_DROPOFF):
            f = order_fids[ORD_RETURN]
        else:
            f = order_fids[kind]
        if k == 0:
            out0 = f
        else:
            out1 = f
    return n, out0, out1


@_jit
def _update_fog(uf, ui, gi, vis, ghost, tf, omniscient):
    """Fog of war: the agent's units' sight stamped on ``vis`` (0 never seen, 1 seen, 2 visible);
    a snapshot of a destroyed structure goes once its place is seen."""
    n_slots = ui.shape[0]
    if omniscient:
        vis[:, :] = 2
    else:
        h, w = vis.shape
        for yy in range(h):
            for xx in range(w):
                v = vis[yy, xx]
                vis[yy, xx] = 1 if v == 2 else v  # a store on every cell: the loop vectorizes
        for i in range(n_slots):
            if ui[i, UI_ALIVE] == 1 and ui[i, UI_OWNER] == 1:
                _stamp_sight(vis, uf[i, UF_X], uf[i, UF_Y], tf[ui[i, UI_TYPE], TF_SIGHT])
        k = 0
        while k < gi[GI_GHOSTS]:
            if _cell_visible(vis, ghost[k, GH_X], ghost[k, GH_Y]):
                last = gi[GI_GHOSTS] - 1
                ghost[k, :] = ghost[last, :]
                gi[GI_GHOSTS] = last
            else:
                k += 1


@_jit
def _collect_rows(uf, ui, gi, vis, ghost, ti, omniscient, keys, cand):
    """The observed units in row order into ``cand`` (slot, or -2 - k for snapshot k) and ``keys``
    (tags): own units, enemies (visible or snapshot, sorted by tag), neutral. Returns their count."""
    n_slots = ui.shape[0]
    nc = 0
    for group in range(3):
        start = nc
        for i in range(n_slots):
            if ui[i, UI_ALIVE] == 0:
                continue
            o = ui[i, UI_OWNER]
            if group == 0 and o == 1:
                cand[nc] = i
                keys[nc] = unit_tag(ui, i)
                nc += 1
            elif group == 1 and o == 2:
                st = ui[i, UI_TYPE]
                seen = _cell_visible(vis, uf[i, UF_X], uf[i, UF_Y])
                if seen and ti[st, TI_STRUCTURE] == 1:
                    ui[i, UI_SEEN] |= 2
                if seen or (ui[i, UI_SEEN] & 2) != 0:
                    cand[nc] = i
                    keys[nc] = unit_tag(ui, i)
                    nc += 1
            elif group == 2 and o == 0:
                cand[nc] = i
                keys[nc] = unit_tag(ui, i)
                nc += 1
        if group == 1 and not omniscient:
            for k in range(gi[GI_GHOSTS]):
                cand[nc] = -2 - k
                keys[nc] = ghost[k, GH_TAG]
                nc += 1
        if group == 1 and nc - start > 1:
            order = np.argsort(keys[start:nc])
            tmp_c = cand[start:nc].copy()
            tmp_k = keys[start:nc].copy()
            for k in range(nc - start):
                cand[start + k] = tmp_c[order[k]]
                keys[start + k] = tmp_k[order[k]]
    return nc


@_jit
def _count_gatherers(ui, oi, ti, gatherers):
    """``gatherers[k]``: the agent's workers whose current order is Gather with resource ``k`` (a mineral
    field or gas building), for ``_harvesters``."""
    gatherers[:] = 0
    for w in range(ui.shape[0]):
        if (
            ui[w, UI_ALIVE] == 1
            and ui[w, UI_OWNER] == 1
            and ti[ui[w, UI_TYPE], TI_WORKER] == 1
            and ui[w, UI_GATHER] >= 0
            and ui[w, UI_NORDERS] > 0
            and oi[w, 0, OI_KIND] == ORD_GATHER
        ):
            gatherers[ui[w, UI_GATHER]] += 1


@_inline
def _harvesters(uf, ui, ti, i, t, gatherers, e):
    """A finished town hall's or gas building's assigned and ideal harvesters (the live API's
    ``assigned_harvesters`` / ``ideal_harvesters``): two per mineral field within 12 of a hall,
    three per gas building; assigned: the agent's workers gathering from them (``gatherers``, from
    ``_count_gatherers``)."""
    if ui[i, UI_DONE] == 0:
        return
    if ti[t, TI_GAS_BUILDING] == 1:
        e[E_ASSIGNED] = gatherers[i]
        e[E_IDEAL] = 3
        return
    assigned = 0
    ideal = 0
    for k in range(ui.shape[0]):
        if ui[k, UI_ALIVE] == 0:
            continue
        dx = uf[k, UF_X] - uf[i, UF_X]
        dy = uf[k, UF_Y] - uf[i, UF_Y]
        if ti[ui[k, UI_TYPE], TI_RESOURCE] == RES_MINERAL and ui[k, UI_CONTENTS] > 0 and dx * dx + dy * dy < 144.0:
            ideal += 2
            assigned += gatherers[k]
    e[E_ASSIGNED] = assigned
    e[E_IDEAL] = ideal


@_inline
def _fill_snapshot_row(ghost, g, vocab, map_w, map_h, res, e):
    """Entity row ``e`` of snapshot ``g`` of a destroyed enemy structure."""
    t = int(ghost[g, GH_TYPE])
    e[E_UNIT_TYPE] = vocab[t]
    e[E_ALLIANCE] = ALLIANCE_ENEMY
    e[E_OWNER] = 2
    col, row = _grid(ghost[g, GH_X], ghost[g, GH_Y], map_w, map_h, res)
    e[E_X] = col
    e[E_Y] = row
    e[E_BUILD_PROGRESS] = 1.0
    e[E_HEALTH] = ghost[g, GH_HP_MAX]
    e[E_HEALTH_MAX] = ghost[g, GH_HP_MAX]
    e[E_DISPLAY_TYPE] = DISPLAY_SNAPSHOT
    e[E_CLOAK] = CLOAK_NOT_CLOAKED


@_inline
def _fill_unit_row(uf, ui, oi, pq, vis, ti, tf, vocab, order_fids, type_fids_quick, type_fids_build, map_w, map_h,
                   res, omniscient, i, gatherers, e, counts):  # fmt: skip
    """Entity row ``e`` of unit slot ``i`` (an own unit also counts in ``counts``; ``gatherers``: see
    ``_count_gatherers``)."""
    t = ui[i, UI_TYPE]
    o = ui[i, UI_OWNER]
    visible = omniscient or o == 1 or _cell_visible(vis, uf[i, UF_X], uf[i, UF_Y])
    e[E_UNIT_TYPE] = vocab[t]
    e[E_ALLIANCE] = ALLIANCE_SELF if o == 1 else ALLIANCE_ENEMY if o == 2 else ALLIANCE_NEUTRAL
    e[E_OWNER] = o if o > 0 else OWNER_NEUTRAL
    col, row = _grid(uf[i, UF_X], uf[i, UF_Y], map_w, map_h, res)
    e[E_X] = col
    e[E_Y] = row
    if ui[i, UI_DONE] == 1:
        e[E_BUILD_PROGRESS] = 1.0
    else:
        e[E_BUILD_PROGRESS] = uf[i, UF_BUILD] / max(ti[t, TI_BUILD_TIME], 1)
    e[E_HEALTH_MAX] = tf[t, TF_HP]
    e[E_SHIELD_MAX] = tf[t, TF_SHIELD]
    e[E_ENERGY_MAX] = tf[t, TF_ENERGY_MAX]
    e[E_CLOAK] = CLOAK_NOT_CLOAKED
    e[E_DISPLAY_TYPE] = DISPLAY_VISIBLE if visible else DISPLAY_SNAPSHOT
    if visible:
        e[E_HEALTH] = uf[i, UF_HP]
        e[E_SHIELD] = uf[i, UF_SHIELD]
        e[E_ENERGY] = uf[i, UF_ENERGY]
        if ti[t, TI_RESOURCE] == RES_MINERAL:
            e[E_MINERAL_CONTENTS] = ui[i, UI_CONTENTS]
        elif ti[t, TI_RESOURCE] != 0 or ti[t, TI_GAS_BUILDING] == 1:
            e[E_VESPENE_CONTENTS] = ui[i, UI_CONTENTS]
    else:
        e[E_HEALTH] = tf[t, TF_HP]
        e[E_SHIELD] = tf[t, TF_SHIELD]
    if o == 1:
        counts[vocab[t]] += 1.0
        if ti[t, TI_NEEDS_POWER] == 1:
            e[E_IS_POWERED] = ui[i, UI_POWERED]
        e[E_IS_ACTIVE] = 1.0 if ui[i, UI_NQUEUE] > 0 else 0.0
        e[E_WEAPON_COOLDOWN] = uf[i, UF_COOLDOWN]
        n, f0, f1 = _order_fid(ui, oi, pq, i, order_fids, type_fids_quick, type_fids_build)
        e[E_ORDER_LENGTH] = n
        e[E_ORDER_ID_0] = f0
        e[E_ORDER_ID_1] = f1
        if ui[i, UI_NQUEUE] > 0:
            e[E_ORDER_PROGRESS_0] = uf[i, UF_PROD] / max(ti[pq[i, 0], TI_BUILD_TIME], 1)
        if ti[t, TI_TOWNHALL] == 1 or ti[t, TI_GAS_BUILDING] == 1:
            _harvesters(uf, ui, ti, i, t, gatherers, e)


@_jit
def _track_build_order(ui, ti, tf, vocab, cand, nrow, bo, bo_n, bo_started):
    """New own non-worker, non-supply, non-gas types (after the first observation) appended to the
    build order."""
    for r in range(nrow):
        i = cand[r]
        if i < 0 or ui[i, UI_OWNER] != 1 or (ui[i, UI_SEEN] & 1) != 0:
            continue
        ui[i, UI_SEEN] |= 1
        t = ui[i, UI_TYPE]
        if bo_started[0] == 1 and bo_n[0] < bo.shape[0]:
            # spec.BuildOrderTracker's exclusions: workers, gas buildings, supply structures.
            supply = ti[t, TI_STRUCTURE] == 1 and ti[t, TI_TOWNHALL] == 0 and tf[t, TF_FOOD_PROVIDED] > 0.0
            excluded = ti[t, TI_WORKER] == 1 or ti[t, TI_GAS_BUILDING] == 1 or supply
            if not excluded:
                bo[bo_n[0]] = vocab[t]
                bo_n[0] += 1
    bo_started[0] = 1


@_jit
def _write_scalars(pf, gi, home_race, away_race, last_action, scal):
    """The scalar features of player 1."""
    scal[:] = 0.0
    scal[S_GAME_LOOP] = gi[GI_LOOP]
    scal[S_HOME_RACE] = home_race
    scal[S_AWAY_RACE] = away_race
    scal[S_MINERALS] = math.floor(pf[1, PF_MINERALS])
    scal[S_VESPENE] = math.floor(pf[1, PF_VESPENE])
    scal[S_FOOD_USED] = pf[1, PF_FOOD_USED]
    scal[S_FOOD_CAP] = pf[1, PF_FOOD_CAP]
    scal[S_FOOD_WORKERS] = pf[1, PF_FOOD_WORKERS]
    scal[S_FOOD_ARMY] = pf[1, PF_FOOD_ARMY]
    scal[S_IDLE_WORKERS] = pf[1, PF_IDLE_WORKERS]
    scal[S_ARMY_COUNT] = pf[1, PF_ARMY_COUNT]
    scal[S_LAST_ACTION] = last_action[0]
    scal[S_LAST_DELAY] = last_action[1]
    scal[S_LAST_QUEUED] = last_action[2]


@_jit
def _draw_minimap(uf, ui, vis, tf, static_minimap, map_w, map_h, camera, cand, nrow, first, mm):
    """The minimap planes: the static ones (height, pathable, buildable, creep, alerts) written
    once; the dynamic ones (visibility, player_relative, camera) redrawn."""
    res = mm.shape[1]  # the minimap's own resolution, which need not be the raw grid's
    if first:
        mm[:, :, :] = static_minimap
    else:
        mm[M_PLAYER_RELATIVE, :, :] = 0
        mm[M_CAMERA, :, :] = 0
    scale = res / max(map_w, map_h)
    vh, vw = vis.shape
    # The map cell under each pixel column (-1 past the map's right edge), worked out once per call
    # rather than once per pixel.
    col_cell = np.empty(res, np.int64)
    for col in range(res):
        wx = (col + 0.5) / scale
        col_cell[col] = min(max(int(wx), 0), vw - 1) if wx < map_w else -1
    for row in range(res):
        wy = map_h - (row + 0.5) / scale
        if wy < 0:
            continue
        cy = min(max(int(wy), 0), vh - 1)
        for col in range(res):
            cx = col_cell[col]
            if cx >= 0:
                mm[M_VISIBILITY, row, col] = vis[cy, cx]
    for r in range(nrow):
        i = cand[r]
        if i < 0:
            continue
        o = ui[i, UI_OWNER]
        rel = ALLIANCE_SELF if o == 1 else ALLIANCE_ENEMY if o == 2 else ALLIANCE_NEUTRAL
        rad = tf[ui[i, UI_TYPE], TF_RADIUS]
        c0, r0 = _grid(uf[i, UF_X] - rad, uf[i, UF_Y] + rad, map_w, map_h, res)
        c1, r1 = _grid(uf[i, UF_X] + rad, uf[i, UF_Y] - rad, map_w, map_h, res)
        for rr in range(r0, r1 + 1):
            for cc in range(c0, c1 + 1):
                mm[M_PLAYER_RELATIVE, rr, cc] = rel
    c0, r0 = _grid(camera[0] - CAMERA_WIDTH / 2, camera[1] + CAMERA_WIDTH / 2, map_w, map_h, res)
    c1, r1 = _grid(camera[0] + CAMERA_WIDTH / 2, camera[1] - CAMERA_WIDTH / 2, map_w, map_h, res)
    for rr in range(r0, r1 + 1):
        for cc in range(c0, c1 + 1):
            mm[M_CAMERA, rr, cc] = 1


class ObsTables(NamedTuple):
    """The tables an observation reads, fixed for an ``Observer`` and shared by its games.

    Attributes:
        ti: ``(T, NTI)`` int32 catalog integer table of the T unit types (``TI_*`` columns).
        tf: ``(T, NTF)`` float32 catalog float table (``TF_*`` columns).
        vocab: ``(T,)`` int64 ``spec`` unit-type index of each catalog type.
        order_fids: ``(16,)`` int64 general raw function the live API reports for each ``ORD_*`` order.
        type_fids_quick: ``(T,)`` int64 general quick raw function that trains or morphs into each type (0: none).
        type_fids_build: ``(T,)`` int64 general raw function (pt, or unit for gas buildings) that builds each type.
        type_fids_avail: ``(T, 4)`` int64 raw functions a finished unit of each type makes available, -1 padded.
        generic_fids: ``(G, 8)`` int64 raw functions of each generic ability, -1 padded.
        static_minimap: ``(P, r, r)`` uint8 minimap planes that never change (height map, pathable, buildable).
    """

    ti: np.ndarray
    tf: np.ndarray
    vocab: np.ndarray
    order_fids: np.ndarray
    type_fids_quick: np.ndarray
    type_fids_build: np.ndarray
    type_fids_avail: np.ndarray
    generic_fids: np.ndarray
    static_minimap: np.ndarray


class ObsSettings(NamedTuple):
    """The scalar settings of an observation, fixed for an ``Observer``.

    Attributes:
        map_w: map width, cells.
        map_h: map height, cells.
        res: raw grid resolution R of the entity x/y features.
        omniscient: show every unit and the whole map (no fog of war).
        home_race: s2clientprotocol ``Race`` of the agent (player 1).
        away_race: s2clientprotocol ``Race`` of its opponent (player 2).
    """

    map_w: float
    map_h: float
    res: int
    omniscient: bool
    home_race: int
    away_race: int


class ObsBuffers(NamedTuple):
    """The arrays an ``Observer`` fills (leading axis B; without it, one game's, in ``_observe_game``).

    Attributes:
        last_action: ``(B, 3)`` float32 input: the agent's last general function, delay and queued.
        camera: ``(B, 2)`` float32 input: camera centre, cells.
        entities: ``(B, N, NE)`` float32 entity rows (``spec.ENTITY_FEATURES``).
        entity_mask: ``(B, N)`` int8, 1 for the rows in use.
        selectable_mask: ``(B, N)`` int8, 1 for the agent's own units.
        row_slot: ``(B, N)`` int64 engine slot of each row (-1: none or a snapshot).
        row_tag: ``(B, N)`` int64 unit tag of each row.
        scalars: ``(B, NS)`` float32 scalar features.
        minimap: ``(B, P, r, r)`` uint8 minimap planes.
        unit_counts: ``(B, spec.num_unit_types())`` float32 own units per type.
        build_order: ``(B, spec.BUILD_ORDER_LENGTH)`` int64 unit-type indices in order of first appearance.
        bo_n: ``(B,)`` int64 build-order length.
        bo_started: ``(B,)`` uint8, 0 until the first observation after a reset.
        action_type_mask: ``(B, spec.num_functions())`` int8 available raw functions.
        units_in_view: ``(B,)`` int64 units the agent observes (own, enemy seen or remembered, neutral) before
            the ``N`` rows cut them: the rows hold ``min(units_in_view, N)``.
        keys: ``(B, U + 64)`` float64 scratch: the tags of the rows in order.
        cand: ``(B, U + 64)`` int64 scratch: the slot (or ``-2 - k`` for snapshot k) of each row.
        gatherers: ``(B, U + 64)`` int64 scratch: the agent's workers gathering from each slot.
    """

    last_action: np.ndarray
    camera: np.ndarray
    entities: np.ndarray
    entity_mask: np.ndarray
    selectable_mask: np.ndarray
    row_slot: np.ndarray
    row_tag: np.ndarray
    scalars: np.ndarray
    minimap: np.ndarray
    unit_counts: np.ndarray
    build_order: np.ndarray
    bo_n: np.ndarray
    bo_started: np.ndarray
    action_type_mask: np.ndarray
    units_in_view: np.ndarray
    keys: np.ndarray
    cand: np.ndarray
    gatherers: np.ndarray


@_inline
def _game_buffers(buf, b):
    """Game ``b``'s views of ``buf`` (an ``ObsBuffers`` with leading axis B); its counters as 1-element views."""
    return ObsBuffers(
        buf.last_action[b], buf.camera[b], buf.entities[b], buf.entity_mask[b], buf.selectable_mask[b], buf.row_slot[b],
        buf.row_tag[b], buf.scalars[b], buf.minimap[b], buf.unit_counts[b], buf.build_order[b], buf.bo_n[b : b + 1],
        buf.bo_started[b : b + 1], buf.action_type_mask[b], buf.units_in_view[b : b + 1], buf.keys[b], buf.cand[b],
        buf.gatherers[b],
    )  # fmt: skip


@_jit
def _observe_game(uf, ui, oi, pq, pf, gi, vis, ghost, tables, settings, out):
    """Fill one game's observation ``out`` (an ``ObsBuffers`` of its views) from its state arrays."""
    # Views without reference counting: the row helpers below take them once per unit (see borrow.py).
    uf, ui, oi, pq, pf, gi, vis, ghost = borrowed((uf, ui, oi, pq, pf, gi, vis, ghost))
    tables = borrowed(tables)
    out = borrowed(out)
    ti, tf, vocab = tables.ti, tables.tf, tables.vocab
    map_w, map_h, res, omniscient = settings.map_w, settings.map_h, settings.res, settings.omniscient
    ents, emask, smask, rslot, rtag = out.entities, out.entity_mask, out.selectable_mask, out.row_slot, out.row_tag
    keys, cand, counts = out.keys, out.cand, out.unit_counts
    nmax = ents.shape[0]
    first = out.bo_started[0] == 0  # the first observation since the game's reset: write every buffer whole
    _update_fog(uf, ui, gi, vis, ghost, tf, omniscient)
    nc = _collect_rows(uf, ui, gi, vis, ghost, ti, omniscient, keys, cand)
    out.units_in_view[0] = nc
    # Clear only the rows the previous observation used (a full 512 x 38 clear per game and step
    # would be most of the memory traffic at large batches).
    used = nmax if first else 0
    for r in range(used, nmax):
        if emask[r] == 1:
            used = r + 1
    ents[:used, :] = 0.0
    emask[:used] = 0
    smask[:used] = 0
    rslot[:used] = -1
    rtag[:used] = 0
    counts[:] = 0.0
    nrow = min(nc, nmax)
    _count_gatherers(ui, oi, ti, out.gatherers)
    for r in range(nrow):
        i = cand[r]
        emask[r] = 1
        rtag[r] = np.int64(keys[r])
        if i <= -2:
            _fill_snapshot_row(ghost, -2 - i, vocab, map_w, map_h, res, ents[r])
            continue
        rslot[r] = i
        if ui[i, UI_OWNER] == 1:
            smask[r] = 1
        _fill_unit_row(uf, ui, oi, pq, vis, ti, tf, vocab, tables.order_fids, tables.type_fids_quick,
                       tables.type_fids_build, map_w, map_h, res, omniscient, i, out.gatherers, ents[r], counts)  # fmt: skip
    _track_build_order(ui, ti, tf, vocab, cand, nrow, out.build_order, out.bo_n, out.bo_started)
    _write_scalars(pf, gi, settings.home_race, settings.away_race, out.last_action, out.scalars)
    _draw_minimap(uf, ui, vis, tf, tables.static_minimap, map_w, map_h, out.camera, cand, nrow, first, out.minimap)
    # ---- available abilities -> action_type mask
    _action_mask(uf, ui, pq, pf, ti, tf, tables.type_fids_avail, tables.generic_fids, out.action_type_mask)


@_jit
def _action_mask(uf, ui, pq, pf, ti, tf, type_fids_avail, generic_fids, amask):
    amask[:] = 0
    amask[0] = 1  # no_op
    amask[168] = 1  # raw_move_camera
    nt = ti.shape[0]
    gen = np.zeros(generic_fids.shape[0], dtype=np.bool_)
    have_worker = np.zeros(nt, dtype=np.bool_)
    free_producer = np.zeros(nt, dtype=np.bool_)  # a completed producer (by TRAINS_AS) with queue room
    done_type = np.zeros(nt, dtype=np.bool_)  # requirements: a completed unit of the type exists
    any_abilities = False
    minerals = pf[1, PF_MINERALS]
    gas = pf[1, PF_VESPENE]
    food_room = pf[1, PF_FOOD_CAP] - pf[1, PF_FOOD_USED]
    for i in range(ui.shape[0]):
        if ui[i, UI_ALIVE] == 0 or ui[i, UI_OWNER] != 1:
            continue
        t = ui[i, UI_TYPE]
        if ui[i, UI_DONE] == 1:
            done_type[t] = True
        if ti[t, TI_STRUCTURE] == 1:
            if ui[i, UI_DONE] == 0:
                gen[G_CANCEL_BUILD] = True
                any_abilities = True
                continue
            if ti[t, TI_RALLY] == 1:
                any_abilities = True
                if ti[t, TI_TOWNHALL] == 1:
                    gen[G_RALLY_WORKERS] = True
                else:
                    gen[G_RALLY_UNITS] = True
            if ui[i, UI_NQUEUE] > 0:
                gen[G_CANCEL_QUEUE] = True
            if ui[i, UI_NQUEUE] < PQ and not (ui[i, UI_NQUEUE] > 0 and ti[pq[i, 0], TI_MORPH] == 1):
                free_producer[ti[t, TI_TRAINS_AS]] = True
                free_producer[t] = True
            continue
        if ti[t, TI_CAN_MOVE] == 1:
            any_abilities = True
            gen[G_MOVE] = True
            gen[G_PATROL] = True
            gen[G_HOLD] = True
            gen[G_STOP] = True
            if tf[t, TF_DAMAGE] > 0.0:
                gen[G_ATTACK] = True
        if ti[t, TI_WORKER] == 1:
            have_worker[t] = True
            gen[G_GATHER] = True
            if ui[i, UI_CARGO] > 0:
                gen[G_RETURN] = True
    if any_abilities:
        gen[G_SMART] = True
    for g in range(gen.shape[0]):
        if gen[g]:
            for k in range(generic_fids.shape[1]):
                f = generic_fids[g, k]
                if f >= 0:
                    amask[f] = 1
    for t in range(nt):
        if ti[t, TI_ABILITY_ID] == 0 or type_fids_avail[t, 0] < 0:
            continue
        p = ti[t, TI_PRODUCER]
        if p < 0:
            continue
        ok = False
        if ti[t, TI_BUILT_BY_WORKER] == 1:
            ok = have_worker[p]
        elif ti[p, TI_STRUCTURE] == 1:
            ok = free_producer[p]
            if ok and ti[t, TI_ADDON] == 1:
                ok = True
        if not ok:
            continue
        if ti[t, TI_REQUIRES] >= 0 and not done_type[ti[t, TI_REQUIRES]]:
            continue
        if minerals < ti[t, TI_MINERALS] or gas < ti[t, TI_GAS]:
            continue
        if ti[t, TI_STRUCTURE] == 0 and tf[t, TF_FOOD] > food_room + 1e-6:
            continue
        for k in range(type_fids_avail.shape[1]):
            f = type_fids_avail[t, k]
            if f >= 0:
                amask[f] = 1


def _observe_all_py(uf, ui, oi, pq, pf, gi, vis, ghost, tables, settings, buffers, games):
    """Observe ``games`` (an index array): the state arrays of ``GameState`` (leading axis B), an ``ObsTables``,
    an ``ObsSettings`` and the ``ObsBuffers`` to fill."""
    for k in numba.prange(games.shape[0]):
        b = games[k]
        out = _game_buffers(buffers, b)
        _observe_game(uf[b], ui[b], oi[b], pq[b], pf[b], gi[b], vis[b], ghost[b], tables, settings, out)


# nogil: a large batch is observed as contiguous slices of ``games`` on Python threads
# (``sc2_envs.sim.runtime.chunks``; why not ``parallel=True``: ``kernels.PARALLEL_MIN_GAMES``).
_observe_serial = numba.njit(cache=True, nogil=True)(_observe_all_py)


def _fids_for_ability(ability_id: int, kinds: tuple[str, ...]) -> list[int]:
    by_ability = spec.function_by_ability()
    generals = spec.general_function_ids()
    out: list[int] = []
    for kind in kinds:
        f = by_ability.get((ability_id, kind))
        if f is not None:
            out += [f, int(generals[f])]
    return sorted(set(out))


def _padded(rows: list[list[int]], width: int) -> np.ndarray:
    out = np.full((len(rows), width), -1, np.int64)
    for i, r in enumerate(rows):
        out[i, : len(r)] = r
    return out


class Observer:
    """Builds ``spec`` observation arrays for the agent (player 1) of B lite games.

    Args:
        catalog: the engine's catalog.
        lite_map: the map (grids for the static minimap planes, size for the raw grid).
        num_games: B.
        max_entities: entity rows N.
        raw_resolution: raw grid R for entity x/y and target_location.
        minimap_resolution: minimap plane size.
        omniscient: show every unit and the whole map (no fog of war).
    """

    def __init__(
        self,
        catalog: Catalog,
        lite_map,
        num_games: int,
        max_entities: int,
        raw_resolution: int,
        minimap_resolution: int,
        omniscient: bool = False,
    ):
        self.catalog = catalog
        self.map = lite_map
        self.max_entities = int(max_entities)
        self.raw_resolution = int(raw_resolution)
        self.minimap_resolution = int(minimap_resolution)
        self.omniscient = bool(omniscient)
        b, n = int(num_games), self.max_entities
        self.vocab = np.array([spec.unit_type_index(int(g)) for g in catalog.game_ids], np.int64)
        ti = catalog.ti
        generals = spec.general_function_ids()
        by_ability = spec.function_by_ability()

        def general(ability: int, kind: str) -> int:
            f = by_ability.get((ability, kind))
            return int(generals[f]) if f is not None else 0

        # Orders as the live API reports them (the unit's ability -> its general raw function).
        self.order_fids = np.zeros(16, np.int64)
        self.order_fids[ORD_MOVE] = general(16, "pt")
        self.order_fids[ORD_FOLLOW] = general(16, "unit")
        self.order_fids[ORD_ATTACK_MOVE] = general(23, "pt")
        self.order_fids[ORD_ATTACK] = general(23, "unit")
        self.order_fids[ORD_HOLD] = general(18, "quick")
        self.order_fids[ORD_GATHER] = general(298, "unit")
        self.order_fids[ORD_RETURN] = general(299, "quick")
        nt = len(catalog.names)
        self.type_fids_quick = np.array([general(int(ti[t, TI_ABILITY_ID]), "quick") for t in range(nt)], np.int64)
        self.type_fids_build = np.array(
            [general(int(ti[t, TI_ABILITY_ID]), "unit" if ti[t, TI_GAS_BUILDING] else "pt") for t in range(nt)], np.int64
        )
        rows = []
        for t in range(nt):
            a = int(ti[t, TI_ABILITY_ID])
            if ti[t, TI_BUILT_BY_WORKER]:
                rows.append(_fids_for_ability(a, ("unit",) if ti[t, TI_GAS_BUILDING] else ("pt",)))
            elif a and ti[t, TI_PRODUCER] >= 0 and ti[int(ti[t, TI_PRODUCER]), TI_STRUCTURE]:
                rows.append(_fids_for_ability(a, ("quick",)))
            else:
                rows.append([])
        self.type_fids_avail = _padded(rows, 4)
        gen_rows = []
        for a in GENERIC_ABILITIES:
            gen_rows.append(_fids_for_ability(a, ("quick", "pt", "unit")))
        self.generic_fids = _padded(gen_rows, 8)
        self.static_minimap = self._static_minimap()
        self.home_race, self.away_race = 3, 1  # Protoss agent vs Terran bot (s2clientprotocol Race)
        self.entities = np.zeros((b, n, NE), np.float32)
        self.entity_mask = np.zeros((b, n), np.int8)
        self.selectable_mask = np.zeros((b, n), np.int8)
        self.row_slot = np.full((b, n), -1, np.int64)
        self.row_tag = np.zeros((b, n), np.int64)
        self.scalars = np.zeros((b, NS), np.float32)
        r = self.minimap_resolution
        self.minimap = np.zeros((b, len(spec.MINIMAP_FEATURES), r, r), np.uint8)
        self.unit_counts = np.zeros((b, spec.num_unit_types()), np.float32)
        self.build_order = np.zeros((b, spec.BUILD_ORDER_LENGTH), np.int64)
        self.bo_n = np.zeros(b, np.int64)
        self.bo_started = np.zeros(b, np.uint8)
        self.upgrades = np.zeros((b, len(spec.upgrade_ids())), np.int8)
        self.action_type_mask = np.zeros((b, spec.num_functions()), np.int8)
        self.units_in_view = np.zeros(b, np.int64)
        self.last_action = np.zeros((b, 3), np.float32)
        self.camera = np.zeros((b, 2), np.float32)
        self._keys = None
        self._cand = None
        self._gatherers = None
        self.reset(np.arange(b))

    def _static_minimap(self) -> np.ndarray:
        """height_map, pathable and buildable planes sampled at the minimap pixel centres."""
        m = self.map
        w, h = m.map_size
        r = self.minimap_resolution
        out = np.zeros((len(spec.MINIMAP_FEATURES), r, r), np.uint8)
        scale = r / max(w, h)
        wy = h - (np.arange(r) + 0.5) / scale
        wx = (np.arange(r) + 0.5) / scale
        inside = (wy[:, None] >= 0) & (wx[None, :] < w)
        cy = np.clip(wy.astype(np.int64), 0, h - 1)[:, None]
        cx = np.clip(wx.astype(np.int64), 0, w - 1)[None, :]
        names = {n: k for k, n in enumerate(spec.MINIMAP_FEATURES)}
        out[names["height_map"]] = np.where(inside, m.height[cy, cx], 0)
        out[names["pathable"]] = np.where(inside, m.pathing[cy, cx] != 0, 0)
        out[names["buildable"]] = np.where(inside, m.placement[cy, cx] != 0, 0)
        return out

    def reset(self, games) -> None:
        """Forget build order, last action and camera of games (an index array) after their reset."""
        games = np.asarray(games, np.int64).reshape(-1)
        self.build_order[games] = 0
        self.bo_n[games] = 0
        self.bo_started[games] = 0
        self.last_action[games] = 0
        self.camera[games] = self.map.start_locations[0]

    SAVED = ("build_order", "bo_n", "bo_started", "upgrades", "last_action", "camera", "row_slot", "row_tag")
    """The arrays that carry a game's history from one observation to the next (the rest are rebuilt
    from the engine's state by :meth:`observe`)."""

    def save(self, game: int) -> dict:
        """Copies of one game's rows of :attr:`SAVED`, for :meth:`load`."""
        return {name: np.copy(getattr(self, name)[int(game)]) for name in self.SAVED}

    def load(self, game: int, saved: dict) -> None:
        """Put back one game's rows :meth:`save` returned; :meth:`observe` then rebuilds the rest."""
        for name in self.SAVED:
            getattr(self, name)[int(game)] = saved[name]

    def observe(self, state, games=None) -> None:
        """Fill the observation arrays of ``games`` (all when None) from ``state`` (a ``GameState``)."""
        b = state.num_games
        games = np.arange(b, dtype=np.int64) if games is None else np.asarray(games, np.int64).reshape(-1)
        u = state.capacity
        if self._keys is None or self._keys.shape[1] < u + 64:
            self._keys = np.zeros((b, u + 64), np.float64)
            self._cand = np.zeros((b, u + 64), np.int64)
            self._gatherers = np.zeros((b, u + 64), np.int64)
        w, h = self.map.map_size
        games = np.ascontiguousarray(games)

        tables = ObsTables(
            self.catalog.ti, self.catalog.tf, self.vocab, self.order_fids, self.type_fids_quick, self.type_fids_build,
            self.type_fids_avail, self.generic_fids, self.static_minimap,
        )  # fmt: skip
        settings = ObsSettings(float(w), float(h), self.raw_resolution, self.omniscient, self.home_race, self.away_race)
        buffers = ObsBuffers(
            self.last_action, self.camera, self.entities, self.entity_mask, self.selectable_mask, self.row_slot,
            self.row_tag, self.scalars, self.minimap, self.unit_counts, self.build_order, self.bo_n, self.bo_started,
            self.action_type_mask, self.units_in_view, self._keys, self._cand, self._gatherers,
        )  # fmt: skip

        def call(ids):
            _observe_serial(
                state.uf, state.ui, state.oi, state.pq, state.pf, state.gi, state.vis, state.ghost, tables, settings,
                buffers, ids,
            )  # fmt: skip

        run_env_ids(call, games, kernel_threads() if len(games) >= PARALLEL_MIN_GAMES else 1)

    def entities_left_out(self) -> np.ndarray:
        """``(B,)`` int32: the units each game's last observation saw but had no entity row for (its units in
        view beyond ``max_entities``; 0 when all fit), FullGame-v0's ``info["entities_left_out"]``."""
        return np.maximum(self.units_in_view - self.max_entities, 0).astype(np.int32)

    def as_dict(self, b: int | None = None, copy: bool = True) -> dict:
        """The observation dict of one game (``b``) or all (``None``, leading axis B), spec keys."""
        sel = slice(None) if b is None else b
        out = {
            "entities": self.entities[sel],
            "entity_mask": self.entity_mask[sel],
            "selectable_mask": self.selectable_mask[sel],
            "scalars": self.scalars[sel],
            "minimap": self.minimap[sel],
            "upgrades": self.upgrades[sel],
            "unit_counts": self.unit_counts[sel],
            "build_order": self.build_order[sel],
            "action_type_mask": self.action_type_mask[sel],
        }
        return {k: v.copy() for k, v in out.items()} if copy else out
