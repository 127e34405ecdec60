"""Numba kernels of the lite engine: one game loop of B games, and command application.

Everything here works on the dense arrays of ``sc2_envs.lite.state.GameState`` with the columns
of ``sc2_envs.lite.layout`` and ``sc2_envs.lite.catalog``. The games are independent, so a large
batch runs as ranges of games on threads (``advance``); inside a game the code is scalar, which is
the natural form for the per-unit state machines (workers, production queues, orders) and is why
these kernels are compiled rather than vectorised NumPy (a game loop is ~50 small operations per
unit; at 16 loops per game second NumPy's per-call cost alone would exceed the 2,000 env steps/s
target at B=1).

Time advances one game loop at a time (16 per normal-speed second), so every timer (mining,
production, weapon cooldown, construction) is exact to the loop.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from sc2_envs.lite.borrow import borrowed
from sc2_envs.lite.catalog import (
    EC_ACQUIRE_PERIOD,
    EC_ADDON_DX,
    EC_ADDON_DY,
    EC_CANCEL_REFUND,
    EC_GAS_HARVEST,
    EC_GAS_PER_TRIP,
    EC_IDEAL_MINERAL_HARVESTERS,
    EC_MINERAL_HARVEST,
    EC_MINERALS_PER_TRIP,
    EC_MULE_ENERGY,
    EC_MULE_HARVEST,
    EC_MULE_PER_TRIP,
    EC_RETURN_DELAY,
    EC_SHIELD_REGEN,
    EC_SHIELD_REGEN_DELAY,
    EC_SUPPLY_MAX,
    RES_GEYSER,
    RES_MINERAL,
    TF_ACCEL,
    TF_ARMOR,
    TF_BONUS_ARMORED,
    TF_BONUS_LIGHT,
    TF_DAMAGE,
    TF_ENERGY_MAX,
    TF_ENERGY_REGEN,
    TF_ENERGY_START,
    TF_FOOD,
    TF_FOOD_PROVIDED,
    TF_HP,
    TF_LIFETIME,
    TF_PERIOD,
    TF_POWER_RADIUS,
    TF_PROD_RATE,
    TF_RADIUS,
    TF_RANGE,
    TF_SHIELD,
    TF_SIGHT,
    TF_SPEED,
    TF_VALUE,
    TI_ADDON,
    TI_ARMORED,
    TI_ARMY,
    TI_BUILD_TIME,
    TI_CAN_MOVE,
    TI_FOOTPRINT_H,
    TI_FOOTPRINT_W,
    TI_GAS,
    TI_GAS_BUILDING,
    TI_HITS,
    TI_LIGHT,
    TI_MINERALS,
    TI_MORPH,
    TI_MULE,
    TI_NEEDS_POWER,
    TI_PRODUCER,
    TI_RALLY,
    TI_REQUIRES,
    TI_RESOURCE,
    TI_STRUCTURE,
    TI_TECH_ALIAS,
    TI_TERRAN_BUILD,
    TI_TOWNHALL,
    TI_TRAINS_AS,
    TI_WORKER,
)
from sc2_envs.lite.layout import (  # noqa: F401 (the ActionResult codes, also read as kernels.AR_*)
    AR_BUILD_TECH_REQUIREMENTS_NOT_MET,
    AR_BUILDING_IS_UNDER_CONSTRUCTION,
    AR_CANT_BUILD_LOCATION_INVALID,
    AR_CANT_BUILD_TOO_FAR_FROM_POWER,
    AR_CANT_TARGET_THAT_UNIT,
    AR_ERROR,
    AR_MUST_TARGET_RESOURCES,
    AR_NOT_ENOUGH_ENERGY,
    AR_NOT_ENOUGH_FOOD,
    AR_NOT_ENOUGH_MINERALS,
    AR_NOT_ENOUGH_VESPENE,
    AR_NOT_SUPPORTED,
    AR_ORDER_QUEUE_IS_FULL,
    AR_QUEUE_IS_FULL,
    AR_SUCCESS,
    AR_TECH_REQUIREMENTS_NOT_MET,
    AR_UNIT_CANT_MOVE,
    CK_KIND,
    CK_PARAM,
    CK_PLAYER,
    CK_QUEUED,
    CK_TARGET,
    CMD_ATTACK_PT,
    CMD_ATTACK_UNIT,
    CMD_BUILD_PT,
    CMD_BUILD_UNIT,
    CMD_CALLDOWN_MULE,
    CMD_CANCEL_BUILD,
    CMD_CANCEL_LAST,
    CMD_GATHER,
    CMD_HOLD,
    CMD_MOVE_PT,
    CMD_MOVE_UNIT,
    CMD_NONE,
    CMD_RALLY,
    CMD_RETURN,
    CMD_SMART_PT,
    CMD_SMART_UNIT,
    CMD_STOP,
    CMD_TRAIN,
    GH_HP_MAX,
    GH_TAG,
    GH_TYPE,
    GH_X,
    GH_Y,
    GI_GHOSTS,
    GI_LOOP,
    GI_RESULT,
    NGHOST,
    NQ,
    OF_X,
    OF_Y,
    OI_KIND,
    OI_PARAM,
    OI_TARGET,
    ORD_ATTACK,
    ORD_ATTACK_MOVE,
    ORD_BUILD,
    ORD_CONSTRUCT,
    ORD_FOLLOW,
    ORD_GATHER,
    ORD_HOLD,
    ORD_MOVE,
    ORD_NONE,
    ORD_RETURN,
    PF_ARMY_COUNT,
    PF_COLLECTED_MINERALS,
    PF_COLLECTED_VESPENE,
    PF_FOOD_ARMY,
    PF_FOOD_CAP,
    PF_FOOD_USED,
    PF_FOOD_WORKERS,
    PF_IDLE_WORKERS,
    PF_KILLED_VALUE,
    PF_LOST_VALUE,
    PF_MINERALS,
    PF_SPENT_MINERALS,
    PF_SPENT_VESPENE,
    PF_STRUCTURES,
    PF_VESPENE,
    PF_WORKERS,
    PQ,
    RESULT_NONE,
    RESULT_P1_WINS,
    RESULT_P2_WINS,
    RESULT_TIE,
    UF_BORN,
    UF_BUILD,
    UF_COOLDOWN,
    UF_ENERGY,
    UF_HP,
    UF_LAST_DAMAGED,
    UF_LIFE,
    UF_PROD,
    UF_RALLY_X,
    UF_RALLY_Y,
    UF_SHIELD,
    UF_SPEED,
    UF_WTIMER,
    UF_X,
    UF_Y,
    UI_ACQUIRE,
    UI_ADDON,
    UI_ALIVE,
    UI_BUILDER,
    UI_CARGO,
    UI_CARGO_KIND,
    UI_CONTENTS,
    UI_DONE,
    UI_GATHER,
    UI_GEYSER,
    UI_HALL,
    UI_NORDERS,
    UI_NQUEUE,
    UI_OCCUPANT,
    UI_OWNER,
    UI_POWERED,
    UI_RALLY_SET,
    UI_RECYCLE,
    UI_SEEN,
    UI_STARTED,
    UI_TARGET,
    UI_TYPE,
    UI_WSTATE,
    WS_DROPOFF,
    WS_HARVEST,
    WS_NONE,
    WS_TO_HALL,
    WS_TO_RESOURCE,
    WS_WAIT,
)
from sc2_envs.sim.runtime.chunks import kernel_threads, run_chunks

_ARRIVE = 0.25  # cells: a walking unit stops this close (edge to edge) to a unit it walks to
# cells: how far a harvesting worker looks for another resource when its own is taken or gone: the
# harvest ability's AcquireRadius ("the distance the harvesting unit will go to find a new resource
# to harvest from"), 10 in CAbilHarvest's defaults (SC2Mapster/SC2GameData f597e057,
# mods/core.sc2mod/base.sc2data/GameData/AbilData.xml; ProbeHarvest and SCVHarvest keep it).
BOUNCE_RADIUS = 10.0

_jit = numba.njit(cache=True)
# Hot helpers are inlined into their callers at Numba-IR level: a call with the ~20 array
# arguments these take costs more than the work of a unit in most game loops.
_inline = numba.njit(cache=True, inline="always")
# The batched drivers release the GIL: a large batch runs as contiguous ranges of games on Python
# threads (``sc2_envs.sim.runtime.chunks``), not as Numba ``parallel=True`` builds (see ``advance``).
_jit_nogil = numba.njit(cache=True, nogil=True)


# ================================================================ geometry and navigation
@_inline
def _cell_node(nav_node, x, y):
    h, w = nav_node.shape
    cx = min(max(int(x), 0), w - 1)
    cy = min(max(int(y), 0), h - 1)
    return nav_node[cy, cx]


@_inline
def _move_toward(uf, i, tx, ty, stop, speed, accel, nav_node, nav_next, nav_x, nav_y):
    """Walk unit ``i`` one game loop toward (tx, ty); True once within ``stop`` cells of it.

    The route follows the navigation graph's next hop (``sc2_envs.lite.navigation``) until the
    unit is in the target's node or a neighbour, then goes straight. An unreachable target
    counts as reached (the unit stops), as the game stops a unit that cannot path. A unit with
    ``accel`` > 0 (workers: the game data's ``Acceleration`` 2.5 per normal second squared) gains
    ``accel`` of speed per loop from a stop up to ``speed``; it stops (speed 0) on arrival.
    """
    x = uf[i, UF_X]
    y = uf[i, UF_Y]
    tn = _cell_node(nav_node, tx, ty)
    dx = tx - x
    dy = ty - y
    d = math.sqrt(dx * dx + dy * dy)
    if d <= stop:
        uf[i, UF_SPEED] = 0.0
        return True
    if speed <= 0.0:
        return False
    if accel > 0.0:
        speed = min(speed, uf[i, UF_SPEED] + accel)
        uf[i, UF_SPEED] = speed
    wx = tx
    wy = ty
    cn = _cell_node(nav_node, x, y)
    if cn >= 0 and tn >= 0 and cn != tn:
        nx = nav_next[tn, cn]
        if nx < 0:
            return True
        if nx != tn:
            wx = nav_x[nx]
            wy = nav_y[nx]
    ddx = wx - x
    ddy = wy - y
    dd = math.sqrt(ddx * ddx + ddy * ddy)
    if wx == tx and wy == ty:
        step = min(speed, d - stop)
    else:
        step = min(speed, dd)
    if dd > 1e-6:
        uf[i, UF_X] = x + ddx / dd * step
        uf[i, UF_Y] = y + ddy / dd * step
    ex = tx - uf[i, UF_X]
    ey = ty - uf[i, UF_Y]
    if math.sqrt(ex * ex + ey * ey) <= stop + 1e-4:
        uf[i, UF_SPEED] = 0.0
        return True
    return False


@_inline
def _walkable_point(nav_node, nav_x, nav_y, tx, ty):
    """A point order's target, or the nearest walkable point when it lies off the pathable ground
    (a cliff, outside the map): the centre of the navigation node its cell maps to."""
    tn = _cell_node(nav_node, tx, ty)
    if tn >= 0:
        ox = nav_x[tn] - tx
        oy = nav_y[tn] - ty
        if ox * ox + oy * oy > 2.25:
            return nav_x[tn], nav_y[tn]
    return tx, ty


@_inline
def _dist(uf, i, j):
    dx = uf[i, UF_X] - uf[j, UF_X]
    dy = uf[i, UF_Y] - uf[j, UF_Y]
    return math.sqrt(dx * dx + dy * dy)


@_jit
def _footprint_origin(cx, w):
    # A footprint of w cells centred on cx starts at cell floor(cx - w / 2 + 0.5): odd sizes centre
    # on x.5, even sizes on integers (SC2's placement snapping).
    return int(math.floor(cx - w / 2.0 + 0.5))


@_jit
def snap_center(x, w):
    """Centre of a w-cell footprint placed at x: .5 for odd w, integer for even w."""
    if w % 2 == 1:
        return math.floor(x) + 0.5
    return math.floor(x + 0.5)


@_jit
def _mark_footprint(occ, cx, cy, w, h, value):
    gh, gw = occ.shape
    x0 = _footprint_origin(cx, w)
    y0 = _footprint_origin(cy, h)
    for yy in range(y0, y0 + h):
        for xx in range(x0, x0 + w):
            if 0 <= yy < gh and 0 <= xx < gw:
                occ[yy, xx] = value


# ================================================================ unit life cycle
@_jit
def spawn(uf, ui, oi, pq, occ, ti, tf, t, owner, x, y, done, first_free, loop=0):
    """Create a unit of type ``t`` in the first free slot at or after ``first_free``.

    Returns:
        the slot, or -1 when the game's unit capacity is full.
    """
    n = ui.shape[0]
    s = -1
    for k in range(first_free, n):
        if ui[k, UI_ALIVE] == 0:
            s = k
            break
    if s < 0:
        return -1
    recycle = ui[s, UI_RECYCLE] + 1
    uf[s, :] = 0.0
    ui[s, :] = 0
    oi[s, :, :] = 0
    pq[s, :] = -1
    ui[s, UI_RECYCLE] = recycle
    ui[s, UI_ALIVE] = 1
    ui[s, UI_TYPE] = t
    ui[s, UI_OWNER] = owner
    ui[s, UI_DONE] = 1 if done else 0
    for c in (UI_GATHER, UI_TARGET, UI_OCCUPANT, UI_BUILDER, UI_ADDON, UI_HALL, UI_GEYSER):
        ui[s, c] = -1
    uf[s, UF_X] = x
    uf[s, UF_Y] = y
    if done:
        uf[s, UF_HP] = tf[t, TF_HP]
        uf[s, UF_SHIELD] = tf[t, TF_SHIELD]
    else:
        # Structures start at 10 % of their life and shields and grow with progress.
        uf[s, UF_HP] = 0.1 * tf[t, TF_HP]
        uf[s, UF_SHIELD] = 0.1 * tf[t, TF_SHIELD]
    uf[s, UF_ENERGY] = tf[t, TF_ENERGY_START]
    uf[s, UF_LIFE] = tf[t, TF_LIFETIME]
    uf[s, UF_LAST_DAMAGED] = -1e9
    uf[s, UF_BORN] = loop
    if ti[t, TI_STRUCTURE] == 1 and ti[t, TI_GAS_BUILDING] == 0:
        _mark_footprint(occ, x, y, ti[t, TI_FOOTPRINT_W], ti[t, TI_FOOTPRINT_H], 1)
    return s


@_jit
def _release_worker(ui, w):
    # A worker that holds a resource lets it go (dies, stops, gets a new order).
    r = ui[w, UI_GATHER]
    if r >= 0 and ui[r, UI_OCCUPANT] == w:
        ui[r, UI_OCCUPANT] = -1


@_jit
def _kill(uf, ui, oi, pq, pf, gi, occ, ghost, vis, ti, tf, i, killer_owner):
    t = ui[i, UI_TYPE]
    owner = ui[i, UI_OWNER]
    if ti[t, TI_WORKER] == 1 or ti[t, TI_MULE] == 1:
        _release_worker(ui, i)
    if ti[t, TI_STRUCTURE] == 1 and ti[t, TI_GAS_BUILDING] == 0 and ti[t, TI_RESOURCE] == 0:
        _mark_footprint(occ, uf[i, UF_X], uf[i, UF_Y], ti[t, TI_FOOTPRINT_W], ti[t, TI_FOOTPRINT_H], 0)
    if ti[t, TI_GAS_BUILDING] == 1:
        g = ui[i, UI_GEYSER]
        if g >= 0:
            ui[g, UI_GEYSER] = -1
    b = ui[i, UI_BUILDER]
    if b >= 0 and ui[b, UI_ALIVE] == 1:
        ui[b, UI_NORDERS] = 0
    # The agent keeps a snapshot of an enemy structure it saw that dies out of its sight.
    if owner == 2 and ti[t, TI_STRUCTURE] == 1 and (ui[i, UI_SEEN] & 2) != 0:
        h, w = vis.shape
        cx = min(max(int(uf[i, UF_X]), 0), w - 1)
        cy = min(max(int(uf[i, UF_Y]), 0), h - 1)
        if vis[cy, cx] != 2:
            k = gi[GI_GHOSTS]
            if k < NGHOST:
                ghost[k, GH_TYPE] = t
                ghost[k, GH_X] = uf[i, UF_X]
                ghost[k, GH_Y] = uf[i, UF_Y]
                ghost[k, GH_TAG] = unit_tag(ui, i)
                ghost[k, GH_HP_MAX] = tf[t, TF_HP]
                gi[GI_GHOSTS] = k + 1
    if owner > 0:
        pf[owner, PF_LOST_VALUE] += tf[t, TF_VALUE]
        if killer_owner > 0 and killer_owner != owner:
            pf[killer_owner, PF_KILLED_VALUE] += tf[t, TF_VALUE]
    ui[i, UI_ALIVE] = 0
    ui[i, UI_NORDERS] = 0
    ui[i, UI_NQUEUE] = 0


@_jit
def unit_tag(ui, i):
    """SC2-style unit tag of slot ``i``: ``(slot + 1) << 18 | recycle`` (never 0)."""
    return float(((i + 1) << 18) | (ui[i, UI_RECYCLE] & 0x3FFFF))


# ================================================================ orders
@_jit
def _pop_order(oi, of, ui, i):
    n = ui[i, UI_NORDERS]
    if n <= 0:
        return
    for k in range(1, n):
        oi[i, k - 1, :] = oi[i, k, :]
        of[i, k - 1, :] = of[i, k, :]
    oi[i, n - 1, :] = 0
    ui[i, UI_NORDERS] = n - 1
    ui[i, UI_TARGET] = -1
    ui[i, UI_WSTATE] = WS_NONE


@_jit
def _push_order(oi, of, ui, i, kind, target, param, x, y, queued):
    """Give unit ``i`` an order; returns False when a queued order does not fit."""
    n = ui[i, UI_NORDERS]
    if not queued:
        _release_worker(ui, i)
        n = 0
        ui[i, UI_TARGET] = -1
        ui[i, UI_WSTATE] = WS_NONE
    if n >= NQ:
        return False
    oi[i, n, OI_KIND] = kind
    oi[i, n, OI_TARGET] = target
    oi[i, n, OI_PARAM] = param
    of[i, n, OF_X] = x
    of[i, n, OF_Y] = y
    ui[i, UI_NORDERS] = n + 1
    return True


@_jit
def _nearest_hall(uf, ui, ti, i):
    owner = ui[i, UI_OWNER]
    best = -1
    bd = 1e30
    for k in range(ui.shape[0]):
        if ui[k, UI_ALIVE] == 1 and ui[k, UI_OWNER] == owner and ui[k, UI_DONE] == 1 and ti[ui[k, UI_TYPE], TI_TOWNHALL] == 1:
            d = _dist(uf, i, k)
            if d < bd:
                bd = d
                best = k
    return best


@_jit
def nearest_mineral(uf, ui, ti, x, y, max_dist):
    """Slot of the mineral field nearest to (x, y) within ``max_dist`` cells, or -1."""
    best = -1
    bd = max_dist
    for k in range(ui.shape[0]):
        if ui[k, UI_ALIVE] == 1 and ti[ui[k, UI_TYPE], TI_RESOURCE] == RES_MINERAL and ui[k, UI_CONTENTS] > 0:
            dx = uf[k, UF_X] - x
            dy = uf[k, UF_Y] - y
            d = math.sqrt(dx * dx + dy * dy)
            if d < bd:
                bd = d
                best = k
    return best


@_jit
def _bounce_field(uf, ui, oi, ti, r, ideal):
    """Where a worker arriving at mineral field ``r`` while another worker harvests it goes.

    The game's harvest rules: a resource takes up to its ``IdealHarvesterCount`` (2 per mineral
    field in the multiplayer data) workers in its harvest queue (SC2Mapster wiki,
    Data/Abilities/Harvest, "Resource Queue Index": "the Ideal Harvester Count queue limit of the
    Resource behaviour"); workers "arrange themselves to harvest from 'unoccupied' mineral
    clusters; if no free mineral clusters are available, [they] get in line behind one of the
    occupied clusters and wait their turn" (Blizzard, StarCraft II Game Guide: Resources); the
    search reaches the harvest ability's AcquireRadius (``BOUNCE_RADIUS``).

    Returns:
        ``r`` (wait in line) while ``r``'s queue, the workers gathering from it, is within its
        limit; else the nearest field to ``r`` within ``BOUNCE_RADIUS`` whose queue has room;
        else, every queue being full, the field with the shortest line (nearest first) when
        joining it leaves that line shorter than ``r``'s: which occupied cluster a worker lines
        up behind the guide does not say, and the shortest line is this engine's reading (it
        keeps an oversaturated base mining every field, as the replays' income shows); else ``r``.
    """
    n = ui.shape[0]
    queue = np.zeros(n, np.int32)
    for k in range(n):
        if ui[k, UI_ALIVE] == 1 and ti[ui[k, UI_TYPE], TI_WORKER] == 1 and ui[k, UI_NORDERS] > 0:
            g = ui[k, UI_GATHER]
            kind = oi[k, 0, OI_KIND]
            if g >= 0 and (kind == ORD_GATHER or kind == ORD_RETURN):
                queue[g] += 1
    if queue[r] <= ideal:
        return r
    best = -1
    bd = BOUNCE_RADIUS
    short = -1
    sq = queue[r] - 1  # a line is worth joining only if it stays shorter than r's after the move
    sd = BOUNCE_RADIUS
    for k in range(n):
        if k == r or ui[k, UI_ALIVE] == 0 or ti[ui[k, UI_TYPE], TI_RESOURCE] != RES_MINERAL or ui[k, UI_CONTENTS] <= 0:
            continue
        d = _dist(uf, r, k)
        if d >= BOUNCE_RADIUS:
            continue
        if queue[k] < ideal and d < bd:
            bd = d
            best = k
        if queue[k] < sq or (queue[k] == sq and d < sd):
            sq = queue[k]
            sd = d
            short = k
    if best >= 0:
        return best
    if short >= 0 and queue[short] + 1 < queue[r]:
        return short
    return r


@_inline
def _edge_dist(uf, ui, tf, i, j):
    return _dist(uf, i, j) - tf[ui[i, UI_TYPE], TF_RADIUS] - tf[ui[j, UI_TYPE], TF_RADIUS]


# ================================================================ economy
@_inline
def _gather_field(uf, ui, oi, of, ti, i):
    """Unit ``i``'s field for the resource phases of its Gather order (walk to it, wait, harvest).

    A worker without a harvest state (a new or queued Gather) starts one: toward the town hall when it
    carries cargo, else toward the field, letting its old field go when the order names another (no
    field stays held by a worker that harvests elsewhere: one worker per field at a time). When the
    field ran out or died, the worker takes the nearest other mineral field within ``BOUNCE_RADIUS``,
    as the game does, or the order ends.

    Returns:
        False when the order ended (no field left), else True (``oi[i, 0, OI_TARGET]`` holds the field).
    """
    r = oi[i, 0, OI_TARGET]
    ws = ui[i, UI_WSTATE]
    if ws == WS_NONE:
        ws = WS_TO_HALL if ui[i, UI_CARGO] > 0 else WS_TO_RESOURCE
        ui[i, UI_WSTATE] = ws
        if oi[i, 0, OI_KIND] == ORD_GATHER and r >= 0 and ui[i, UI_GATHER] != r:
            _release_worker(ui, i)
            ui[i, UI_GATHER] = r
    if ws == WS_TO_RESOURCE or ws == WS_WAIT or ws == WS_HARVEST:
        if r < 0 or ui[r, UI_ALIVE] == 0 or ui[r, UI_CONTENTS] <= 0:
            # The field ran out or died: take the nearest other field, as the game does.
            _release_worker(ui, i)
            nr = -1
            if r >= 0 and ti[ui[r, UI_TYPE], TI_RESOURCE] == RES_MINERAL:
                nr = nearest_mineral(uf, ui, ti, uf[r, UF_X], uf[r, UF_Y], BOUNCE_RADIUS)
            if nr < 0:
                _pop_order(oi, of, ui, i)
                return False
            oi[i, 0, OI_TARGET] = nr
            ui[i, UI_GATHER] = nr
            ui[i, UI_WSTATE] = WS_TO_RESOURCE
    return True


@_inline
def _walk_to_field(uf, ui, oi, ti, tf, ec, i, r, mule, nav_node, nav_next, nav_x, nav_y):
    """Walk worker ``i`` one game loop toward field ``r``; on arrival it waits at the field.

    A worker (not a MULE) arriving at a mineral field another worker harvests moves on to a free
    field nearby (the game's bounce, ``_bounce_field``) or waits in line, decided once on arrival.

    Returns:
        True when it arrived and waits at ``r`` (its turn is taken this same loop), else False.
    """
    t = ui[i, UI_TYPE]
    stop = tf[t, TF_RADIUS] + tf[ui[r, UI_TYPE], TF_RADIUS] + _ARRIVE
    if not _move_toward(
        uf, i, uf[r, UF_X], uf[r, UF_Y], stop, tf[t, TF_SPEED], tf[t, TF_ACCEL], nav_node, nav_next, nav_x, nav_y
    ):
        return False
    ui[i, UI_WSTATE] = WS_WAIT
    if not mule and ti[ui[r, UI_TYPE], TI_RESOURCE] == RES_MINERAL and ui[r, UI_OCCUPANT] >= 0 and ui[r, UI_OCCUPANT] != i:
        nr = _bounce_field(uf, ui, oi, ti, r, ec[EC_IDEAL_MINERAL_HARVESTERS])
        if nr != r:
            oi[i, 0, OI_TARGET] = nr
            ui[i, UI_GATHER] = nr
            ui[i, UI_WSTATE] = WS_TO_RESOURCE
            return False
    return True


@_inline
def _take_turn(uf, ui, ti, ec, i, r, mule):
    """Worker ``i`` waiting at field ``r`` starts harvesting once the field is free (a mineral field or
    gas building serves one worker at a time); a MULE harvests beside the workers at once."""
    if mule:
        ui[i, UI_WSTATE] = WS_HARVEST
        uf[i, UF_WTIMER] = ec[EC_MULE_HARVEST]
    elif ti[ui[r, UI_TYPE], TI_GAS_BUILDING] == 1 and ui[r, UI_DONE] == 0:
        # A gas building still warping in: the worker waits at it and goes in once it is
        # done, the game's rule for a worker ordered to gather from a constructing
        # refinery/assimilator/extractor (github.com/Ahli/sc2xml issue #122).
        return
    elif ui[r, UI_OCCUPANT] < 0 or ui[r, UI_OCCUPANT] == i:
        ui[r, UI_OCCUPANT] = i
        ui[i, UI_WSTATE] = WS_HARVEST
        uf[i, UF_WTIMER] = ec[EC_GAS_HARVEST] if ti[ui[r, UI_TYPE], TI_GAS_BUILDING] == 1 else ec[EC_MINERAL_HARVEST]


@_inline
def _harvest(uf, ui, oi, of, ti, ec, i, r, mule):
    """One game loop of worker ``i`` harvesting field ``r``: when the harvest time is over it takes a
    trip's amount (at most what is left), frees the field and heads for the nearest town hall."""
    uf[i, UF_WTIMER] -= 1.0
    if uf[i, UF_WTIMER] > 0.0:
        return
    gas = ti[ui[r, UI_TYPE], TI_GAS_BUILDING] == 1
    if mule:
        amount = ec[EC_MULE_PER_TRIP]
    elif gas:
        amount = ec[EC_GAS_PER_TRIP]
    else:
        amount = ec[EC_MINERALS_PER_TRIP]
    take = min(int(amount), ui[r, UI_CONTENTS])
    ui[r, UI_CONTENTS] -= take
    if gas:
        g = ui[r, UI_GEYSER]
        if g >= 0:
            ui[g, UI_CONTENTS] = ui[r, UI_CONTENTS]
    ui[i, UI_CARGO] = take
    ui[i, UI_CARGO_KIND] = 2 if gas else 1
    if ui[r, UI_OCCUPANT] == i:
        ui[r, UI_OCCUPANT] = -1
    ui[i, UI_HALL] = _nearest_hall(uf, ui, ti, i)
    ui[i, UI_WSTATE] = WS_TO_HALL
    if oi[i, 0, OI_KIND] == ORD_GATHER and ui[i, UI_NORDERS] > 1:
        # A Gather with orders queued behind it ends once the worker holds its cargo and
        # the next order runs, cargo in hand (a queued Return brings it home; "if you end
        # with return cargo, your worker will just wait at the CC": the shift-queued
        # "Gather, Return Cargo, ..." chains of TeamLiquid's "mineral boosting" thread,
        # teamliquid.net topic 152345).
        _pop_order(oi, of, ui, i)


@_inline
def _walk_to_hall(uf, ui, ti, tf, ec, i, nav_node, nav_next, nav_x, nav_y):
    """Walk worker ``i`` one game loop toward its town hall (the nearest finished one when its own is
    gone); on arrival the drop-off starts. With no town hall it waits, cargo in hand (the game's
    "can't find drop off")."""
    h = ui[i, UI_HALL]
    if h < 0 or ui[h, UI_ALIVE] == 0 or ui[h, UI_DONE] == 0:
        h = _nearest_hall(uf, ui, ti, i)
        ui[i, UI_HALL] = h
        if h < 0:
            return
    t = ui[i, UI_TYPE]
    stop = tf[t, TF_RADIUS] + tf[ui[h, UI_TYPE], TF_RADIUS] + _ARRIVE
    if _move_toward(uf, i, uf[h, UF_X], uf[h, UF_Y], stop, tf[t, TF_SPEED], tf[t, TF_ACCEL], nav_node, nav_next, nav_x, nav_y):
        ui[i, UI_WSTATE] = WS_DROPOFF
        uf[i, UF_WTIMER] = ec[EC_RETURN_DELAY]


@_inline
def _drop_off(uf, ui, oi, of, pf, i):
    """One game loop of worker ``i`` at its town hall: after the return delay the cargo is credited to
    its owner (and to the collected totals); a Return order ends there (a worker with nothing queued
    goes back to its field), a Gather walks back to the field."""
    uf[i, UF_WTIMER] -= 1.0
    if uf[i, UF_WTIMER] > 0.0:
        return
    owner = ui[i, UI_OWNER]
    if ui[i, UI_CARGO_KIND] == 2:
        pf[owner, PF_VESPENE] += ui[i, UI_CARGO]
        pf[owner, PF_COLLECTED_VESPENE] += ui[i, UI_CARGO]
    else:
        pf[owner, PF_MINERALS] += ui[i, UI_CARGO]
        pf[owner, PF_COLLECTED_MINERALS] += ui[i, UI_CARGO]
    ui[i, UI_CARGO] = 0
    if oi[i, 0, OI_KIND] == ORD_RETURN:
        _pop_order(oi, of, ui, i)
        if ui[i, UI_NORDERS] == 0 and ui[i, UI_GATHER] >= 0:
            _push_order(oi, of, ui, i, ORD_GATHER, ui[i, UI_GATHER], 0, 0.0, 0.0, True)
    else:
        ui[i, UI_WSTATE] = WS_TO_RESOURCE


@_inline
def _gather_step(uf, ui, oi, of, pf, ti, tf, ec, i, nav_node, nav_next, nav_x, nav_y):
    """One game loop of a worker (or MULE) with a Gather order: the harvest state machine.

    Phases (``UI_WSTATE``): walk to the resource; wait while another worker harvests it (a mineral
    field or gas building serves one worker at a time, so two workers per patch saturate it and a
    third mostly waits); harvest for the field's harvest time; walk to the nearest town hall; drop off
    (the field's return delay), credit the cargo, and walk back. A worker that arrives at its field
    takes its turn in the same loop.
    """
    if not _gather_field(uf, ui, oi, of, ti, i):
        return
    r = oi[i, 0, OI_TARGET]
    mule = ti[ui[i, UI_TYPE], TI_MULE] == 1
    ws = ui[i, UI_WSTATE]
    if ws == WS_TO_RESOURCE:
        if not _walk_to_field(uf, ui, oi, ti, tf, ec, i, r, mule, nav_node, nav_next, nav_x, nav_y):
            return
        ws = WS_WAIT
    if ws == WS_WAIT:
        _take_turn(uf, ui, ti, ec, i, r, mule)
    elif ws == WS_HARVEST:
        _harvest(uf, ui, oi, of, ti, ec, i, r, mule)
    elif ws == WS_TO_HALL:
        _walk_to_hall(uf, ui, ti, tf, ec, i, nav_node, nav_next, nav_x, nav_y)
    elif ws == WS_DROPOFF:
        _drop_off(uf, ui, oi, of, pf, i)


# ================================================================ placement and power
@_jit
def powered_at(uf, ui, ti, tf, owner, x, y):
    """True when a completed Pylon of ``owner`` projects power onto (x, y)."""
    for k in range(ui.shape[0]):
        if ui[k, UI_ALIVE] == 1 and ui[k, UI_OWNER] == owner and ui[k, UI_DONE] == 1:
            pr = tf[ui[k, UI_TYPE], TF_POWER_RADIUS]
            if pr > 0.0:
                dx = uf[k, UF_X] - x
                dy = uf[k, UF_Y] - y
                if dx * dx + dy * dy <= pr * pr:
                    return True
    return False


@_jit
def placement_error(uf, ui, occ, placement, ti, tf, t, owner, cx, cy):
    """0 when a structure of type ``t`` fits with its centre at (cx, cy), else an ActionResult code.

    The footprint must lie on buildable cells of the map's placement grid that no structure or
    resource covers, and a Protoss structure that needs power must be inside a Pylon's field.
    """
    w = ti[t, TI_FOOTPRINT_W]
    h = ti[t, TI_FOOTPRINT_H]
    gh, gw = placement.shape
    x0 = _footprint_origin(cx, w)
    y0 = _footprint_origin(cy, h)
    for yy in range(y0, y0 + h):
        for xx in range(x0, x0 + w):
            if yy < 0 or yy >= gh or xx < 0 or xx >= gw:
                return AR_CANT_BUILD_LOCATION_INVALID
            if placement[yy, xx] == 0 or occ[yy, xx] != 0:
                return AR_CANT_BUILD_LOCATION_INVALID
    if ti[t, TI_NEEDS_POWER] == 1 and not powered_at(uf, ui, ti, tf, owner, cx, cy):
        return AR_CANT_BUILD_TOO_FAR_FROM_POWER
    return 0


@_jit
def has_done(ui, ti, owner, t):
    """True when ``owner`` has a completed unit of type ``t`` or of a type that counts as ``t``
    (``TI_TECH_ALIAS``: a lowered depot for a Supply Depot), for requirements."""
    if t < 0:
        return True
    for k in range(ui.shape[0]):
        if (
            ui[k, UI_ALIVE] == 1
            and ui[k, UI_OWNER] == owner
            and ui[k, UI_DONE] == 1
            and ti[ui[k, UI_TYPE], TI_TECH_ALIAS] == t
        ):
            return True
    return False


@_jit
def _afford(pf, ti, owner, t):
    if pf[owner, PF_MINERALS] < ti[t, TI_MINERALS]:
        return AR_NOT_ENOUGH_MINERALS
    if pf[owner, PF_VESPENE] < ti[t, TI_GAS]:
        return AR_NOT_ENOUGH_VESPENE
    return 0


@_jit
def _pay(pf, ti, owner, t, sign):
    pf[owner, PF_MINERALS] -= sign * ti[t, TI_MINERALS]
    pf[owner, PF_VESPENE] -= sign * ti[t, TI_GAS]
    pf[owner, PF_SPENT_MINERALS] += sign * ti[t, TI_MINERALS]
    pf[owner, PF_SPENT_VESPENE] += sign * ti[t, TI_GAS]


@_inline
def _report_refusal(err, slot, code):
    # err[slot]: the count of refusals not yet read, then their codes (layout.ERR_QUEUE of them at most)
    n = err[slot, 0]
    if n < err.shape[1] - 1:
        err[slot, 1 + n] = code
    err[slot, 0] = n + 1


@_jit
def _build_step(uf, ui, oi, of, pq, pf, occ, placement, ti, tf, i, nav_node, nav_next, nav_x, nav_y, first_free, err, loop):
    """A worker's Build order: walk to the site, then place the structure (price paid now)."""
    t = oi[i, 0, OI_PARAM]
    owner = ui[i, UI_OWNER]
    slot = owner - 1  # err holds one ActionResult per player: the bot's refusals are not the agent's
    g = oi[i, 0, OI_TARGET]
    if g >= 0:
        if ui[g, UI_ALIVE] == 0 or ui[g, UI_GEYSER] >= 0:
            _report_refusal(err, slot, AR_CANT_BUILD_LOCATION_INVALID)
            _pop_order(oi, of, ui, i)
            return
        cx = uf[g, UF_X]
        cy = uf[g, UF_Y]
    else:
        cx = of[i, 0, OF_X]
        cy = of[i, 0, OF_Y]
    stop = tf[ui[i, UI_TYPE], TF_RADIUS] + 0.5 * max(ti[t, TI_FOOTPRINT_W], ti[t, TI_FOOTPRINT_H]) + 0.5
    if not _move_toward(
        uf, i, cx, cy, stop, tf[ui[i, UI_TYPE], TF_SPEED], tf[ui[i, UI_TYPE], TF_ACCEL], nav_node, nav_next, nav_x, nav_y
    ):
        return
    code = _afford(pf, ti, owner, t)
    if code == 0 and not has_done(ui, ti, owner, ti[t, TI_REQUIRES]):
        code = AR_BUILD_TECH_REQUIREMENTS_NOT_MET
    if code == 0 and g < 0:
        code = placement_error(uf, ui, occ, placement, ti, tf, t, owner, cx, cy)
    if code != 0:
        _report_refusal(err, slot, code)
        _pop_order(oi, of, ui, i)
        return
    s = spawn(uf, ui, oi, pq, occ, ti, tf, t, owner, cx, cy, False, first_free, loop)
    if s < 0:
        _report_refusal(err, slot, AR_ERROR)
        _pop_order(oi, of, ui, i)
        return
    _pay(pf, ti, owner, t, 1.0)
    if g >= 0:
        ui[s, UI_GEYSER] = g
        ui[g, UI_GEYSER] = s
        ui[s, UI_CONTENTS] = ui[g, UI_CONTENTS]
    if ti[t, TI_TERRAN_BUILD] == 1:
        ui[s, UI_BUILDER] = i
        oi[i, 0, OI_KIND] = ORD_CONSTRUCT
        oi[i, 0, OI_TARGET] = s
    else:
        # A Probe that has warped a structure in stays where it is unless an order was queued
        # behind the Build: it does not go back to the field it mined. Players queue that return
        # ("When warping in a structure, shift-rally the probe back to a mineral patch",
        # teamliquid.net topic 352609; a bot finds the builder among its idle workers,
        # github.com/Dentosal/python-sc2 issue #100), and the mini-AlphaStar Simple64 humans
        # follow 538 of 667 one-Probe Builds with a queued Gather.
        _pop_order(oi, of, ui, i)


@_jit
def _resume_gather(oi, of, ui, i):
    # An SCV taken off a resource to construct goes back to it when it has nothing queued: the
    # Terran rule since Heart of the Swarm, for SCVs only (a Probe's warp-in has no such return;
    # see _build_step). Called only for the builder of a Terran structure (TI_TERRAN_BUILD).
    if ui[i, UI_NORDERS] == 0 and ui[i, UI_GATHER] >= 0 and ui[ui[i, UI_GATHER], UI_ALIVE] == 1:
        _push_order(oi, of, ui, i, ORD_GATHER, ui[i, UI_GATHER], 0, 0.0, 0.0, True)


# ================================================================ combat
@_jit
def _damage(uf, ui, oi, pq, pf, gi, occ, ghost, vis, ti, tf, ec, a, j, loop):
    """Unit ``a`` hits unit ``j`` with its weapon: shields first, then life less armour per hit."""
    ta = ui[a, UI_TYPE]
    tj = ui[j, UI_TYPE]
    per_hit = tf[ta, TF_DAMAGE]
    if ti[tj, TI_ARMORED] == 1:
        per_hit += tf[ta, TF_BONUS_ARMORED]
    if ti[tj, TI_LIGHT] == 1:
        per_hit += tf[ta, TF_BONUS_LIGHT]
    for _ in range(ti[ta, TI_HITS]):
        dmg = per_hit
        sh = uf[j, UF_SHIELD]
        if sh > 0.0:
            absorbed = min(sh, dmg)
            uf[j, UF_SHIELD] = sh - absorbed
            dmg -= absorbed
        if dmg > 0.0:
            uf[j, UF_HP] -= max(dmg - tf[tj, TF_ARMOR], 0.5)
    uf[j, UF_LAST_DAMAGED] = loop
    if uf[j, UF_HP] <= 0.0:
        _kill(uf, ui, oi, pq, pf, gi, occ, ghost, vis, ti, tf, j, ui[a, UI_OWNER])
        return
    # An idle armed unit that is hit fights back (the game's auto-acquire on attack).
    if ui[j, UI_NORDERS] == 0 and tf[tj, TF_DAMAGE] > 0.0 and ti[tj, TI_WORKER] == 0 and ui[j, UI_TARGET] < 0:
        ui[j, UI_TARGET] = a


@_jit
def _acquire(uf, ui, ti, tf, i, reach):
    """Nearest enemy within ``reach`` cells (edge to edge) of unit ``i``: armed units first, -1 if none."""
    owner = ui[i, UI_OWNER]
    best = -1
    bs = 1e30
    ri = tf[ui[i, UI_TYPE], TF_RADIUS]
    for k in range(ui.shape[0]):
        if ui[k, UI_ALIVE] == 0:
            continue
        o = ui[k, UI_OWNER]
        if o == 0 or o == owner:
            continue
        tk = ui[k, UI_TYPE]
        d = _dist(uf, i, k) - ri - tf[tk, TF_RADIUS]
        if d > reach:
            continue
        score = d
        if tf[tk, TF_DAMAGE] <= 0.0:
            score += 100.0  # prefer units that can shoot back
        if ti[tk, TI_STRUCTURE] == 1:
            score += 100.0
        if score < bs:
            bs = score
            best = k
    return best


@_jit
def _engage(uf, ui, oi, pq, pf, gi, occ, ghost, vis, ti, tf, ec, i, j, chase, loop, nav_node, nav_next, nav_x, nav_y):
    """Fire at ``j`` when in range and ready, else walk into range when ``chase``."""
    ti_ = ui[i, UI_TYPE]
    rng = tf[ti_, TF_RANGE]
    d = _edge_dist(uf, ui, tf, i, j)
    if d <= rng + 1e-4:
        if uf[i, UF_COOLDOWN] <= 0.0:
            uf[i, UF_COOLDOWN] = tf[ti_, TF_PERIOD]
            _damage(uf, ui, oi, pq, pf, gi, occ, ghost, vis, ti, tf, ec, i, j, loop)
        return True
    if chase:
        stop = rng + tf[ti_, TF_RADIUS] + tf[ui[j, UI_TYPE], TF_RADIUS]
        _move_toward(
            uf, i, uf[j, UF_X], uf[j, UF_Y], stop, tf[ti_, TF_SPEED], tf[ti_, TF_ACCEL], nav_node, nav_next, nav_x, nav_y
        )
    return False


# ================================================================ production
@_jit
def _spawn_point(uf, ui, tf, s, t):
    # New units appear at the producer's edge toward its rally point (south when none is set).
    ps = tf[ui[s, UI_TYPE], TF_RADIUS] + tf[t, TF_RADIUS] + 0.1
    dx = 0.0
    dy = -1.0
    if ui[s, UI_RALLY_SET] == 1:
        rx = uf[s, UF_RALLY_X] - uf[s, UF_X]
        ry = uf[s, UF_RALLY_Y] - uf[s, UF_Y]
        rd = math.sqrt(rx * rx + ry * ry)
        if rd > 1e-3:
            dx = rx / rd
            dy = ry / rd
    return uf[s, UF_X] + dx * ps, uf[s, UF_Y] + dy * ps


@_jit
def _production_step(uf, ui, oi, of, pq, pf, occ, ti, tf, ec, s, first_free, loop):
    if ui[s, UI_NQUEUE] == 0:
        return
    owner = ui[s, UI_OWNER]
    t = pq[s, 0]
    if ui[s, UI_STARTED] == 0:
        food = tf[t, TF_FOOD]
        if food > 0.0 and pf[owner, PF_FOOD_USED] + food > min(pf[owner, PF_FOOD_CAP], ec[EC_SUPPLY_MAX]) + 1e-6:
            return  # supply blocked: the head waits (its price is already paid)
        ui[s, UI_STARTED] = 1
        pf[owner, PF_FOOD_USED] += food
        if ti[t, TI_ADDON] == 1:
            # The add-on stands from the start of its construction (the replays' UnitInit) and
            # builds itself; the producer's queue entry only keeps it busy meanwhile.
            ax = uf[s, UF_X] + ec[EC_ADDON_DX]
            ay = uf[s, UF_Y] + ec[EC_ADDON_DY]
            a = spawn(uf, ui, oi, pq, occ, ti, tf, t, owner, ax, ay, False, first_free, loop)
            if a >= 0:
                ui[s, UI_ADDON] = a
    st = ui[s, UI_TYPE]
    if ti[st, TI_NEEDS_POWER] == 1 and ui[s, UI_POWERED] == 0:
        return
    uf[s, UF_PROD] += tf[st, TF_PROD_RATE]
    if uf[s, UF_PROD] + 1e-4 < ti[t, TI_BUILD_TIME]:
        return
    # Done: the head leaves the queue.
    for k in range(1, PQ):
        pq[s, k - 1] = pq[s, k]
    pq[s, PQ - 1] = -1
    ui[s, UI_NQUEUE] -= 1
    ui[s, UI_STARTED] = 0
    uf[s, UF_PROD] = 0.0
    if ti[t, TI_MORPH] == 1:
        frac = uf[s, UF_HP] / max(tf[st, TF_HP], 1.0)
        ui[s, UI_TYPE] = t
        uf[s, UF_HP] = frac * tf[t, TF_HP]
        uf[s, UF_ENERGY] = tf[t, TF_ENERGY_START]
    elif ti[t, TI_ADDON] == 1:
        pass  # the add-on placed at the start completes on its own
    else:
        x, y = _spawn_point(uf, ui, tf, s, t)
        u = spawn(uf, ui, oi, pq, occ, ti, tf, t, owner, x, y, True, first_free, loop)
        if u >= 0:
            if ti[t, TI_WORKER] == 1:
                # A new worker goes to mine: the rally's mineral field, else the nearest one.
                r = -1
                if ui[s, UI_RALLY_SET] == 1:
                    r = nearest_mineral(uf, ui, ti, uf[s, UF_RALLY_X], uf[s, UF_RALLY_Y], 2.0)
                    if r < 0:
                        _push_order(oi, of, ui, u, ORD_MOVE, -1, 0, uf[s, UF_RALLY_X], uf[s, UF_RALLY_Y], False)
                else:
                    r = nearest_mineral(uf, ui, ti, uf[s, UF_X], uf[s, UF_Y], 12.0)
                if r >= 0:
                    ui[u, UI_GATHER] = r
                    _push_order(oi, of, ui, u, ORD_GATHER, r, 0, 0.0, 0.0, False)
            elif ui[s, UI_RALLY_SET] == 1:
                _push_order(oi, of, ui, u, ORD_MOVE, -1, 0, uf[s, UF_RALLY_X], uf[s, UF_RALLY_Y], False)
    # The next entry starts in the same loop (births of back-to-back units are train time - 1 apart).
    if ui[s, UI_NQUEUE] > 0 and ti[t, TI_MORPH] == 0:
        _production_step(uf, ui, oi, of, pq, pf, occ, ti, tf, ec, s, first_free, loop)


# ================================================================ one game loop
@_inline
def _vitals_step(uf, ui, oi, pq, pf, gi, occ, ghost, vis, ti, tf, ec, i, t, loop):
    """Timed life, energy, shields and weapon cooldown of unit ``i`` (type ``t``) for one game loop.

    Shields regenerate on finished units only, ``EC_SHIELD_REGEN_DELAY`` loops after the last damage.

    Returns:
        False when its timed life ran out (the unit is dead now), else True.
    """
    if uf[i, UF_LIFE] > 0.0:
        uf[i, UF_LIFE] -= 1.0
        if uf[i, UF_LIFE] <= 0.0:
            _kill(uf, ui, oi, pq, pf, gi, occ, ghost, vis, ti, tf, i, 0)
            return False
    if tf[t, TF_ENERGY_MAX] > 0.0 and uf[i, UF_ENERGY] < tf[t, TF_ENERGY_MAX]:
        uf[i, UF_ENERGY] = min(uf[i, UF_ENERGY] + tf[t, TF_ENERGY_REGEN], tf[t, TF_ENERGY_MAX])
    if (
        uf[i, UF_SHIELD] < tf[t, TF_SHIELD]
        and ui[i, UI_DONE] == 1
        and loop - uf[i, UF_LAST_DAMAGED] >= ec[EC_SHIELD_REGEN_DELAY]
    ):
        uf[i, UF_SHIELD] = min(uf[i, UF_SHIELD] + ec[EC_SHIELD_REGEN], tf[t, TF_SHIELD])
    if uf[i, UF_COOLDOWN] > 0.0:
        uf[i, UF_COOLDOWN] -= 1.0
    return True


@_inline
def _construction_step(uf, ui, oi, of, ti, tf, i, t, loop):
    """One game loop of building structure ``i`` (type ``t``): hit points and shields grow with the
    build fraction (from 10 %); when done, its builder leaves its Construct order and goes back to
    gathering. A Terran structure without its live SCV pauses; one placed this loop waits a loop, so
    Init -> Done is exactly the build time."""
    b = ui[i, UI_BUILDER]
    if ti[t, TI_TERRAN_BUILD] == 1 and (b < 0 or ui[b, UI_ALIVE] == 0):
        return
    if uf[i, UF_BORN] == loop:
        return
    bt = ti[t, TI_BUILD_TIME]
    uf[i, UF_BUILD] += 1.0
    frac = uf[i, UF_BUILD] / bt
    uf[i, UF_HP] = max(uf[i, UF_HP], (0.1 + 0.9 * frac) * tf[t, TF_HP])
    uf[i, UF_SHIELD] = max(uf[i, UF_SHIELD], (0.1 + 0.9 * frac) * tf[t, TF_SHIELD])
    if uf[i, UF_BUILD] + 1e-4 >= bt:
        ui[i, UI_DONE] = 1
        if b >= 0 and ui[b, UI_ALIVE] == 1:
            if ui[b, UI_NORDERS] > 0 and oi[b, 0, OI_KIND] == ORD_CONSTRUCT:
                _pop_order(oi, of, ui, b)
            _resume_gather(oi, of, ui, b)
            ui[i, UI_BUILDER] = -1


@_inline
def _retarget(uf, ui, ti, tf, ec, i, owner, reach, acquire_range, may_acquire, loop):
    """Unit ``i``'s target for this game loop, stored in ``UI_TARGET`` and returned (-1: none).

    Its current target while alive, not its own and within ``reach`` cells (edge to edge); else, with
    ``may_acquire`` and at most once per ``EC_ACQUIRE_PERIOD`` loops, the best enemy within
    ``acquire_range`` (``_acquire``).
    """
    j = ui[i, UI_TARGET]
    if j >= 0 and (ui[j, UI_ALIVE] == 0 or ui[j, UI_OWNER] == owner or _edge_dist(uf, ui, tf, i, j) > reach):
        j = -1
    if may_acquire and j < 0 and loop >= ui[i, UI_ACQUIRE]:
        ui[i, UI_ACQUIRE] = loop + int(ec[EC_ACQUIRE_PERIOD])
        j = _acquire(uf, ui, ti, tf, i, acquire_range)
    ui[i, UI_TARGET] = j
    return j


@_inline
def _attack_move_step(
    uf, ui, oi, of, pq, pf, gi, occ, ghost, vis, ti, tf, ec, i, owner, loop, nav_node, nav_next, nav_x, nav_y
):
    """One game loop of an Attack-move or Hold order: fight the target within sight (Attack-move, which
    chases it) or weapon range (Hold, which stands); an Attack-move with no target walks on to its
    point and ends there."""
    t = ui[i, UI_TYPE]
    kind = oi[i, 0, OI_KIND]
    chase = kind == ORD_ATTACK_MOVE
    reach = tf[t, TF_SIGHT] if chase else tf[t, TF_RANGE]
    j = _retarget(uf, ui, ti, tf, ec, i, owner, reach, reach, tf[t, TF_DAMAGE] > 0.0, loop)
    if j >= 0:
        _engage(uf, ui, oi, pq, pf, gi, occ, ghost, vis, ti, tf, ec, i, j, chase, loop, nav_node, nav_next, nav_x, nav_y)
    elif chase:
        tx, ty = _walkable_point(nav_node, nav_x, nav_y, of[i, 0, OF_X], of[i, 0, OF_Y])
        if _move_toward(uf, i, tx, ty, 0.0, tf[t, TF_SPEED], tf[t, TF_ACCEL], nav_node, nav_next, nav_x, nav_y):
            _pop_order(oi, of, ui, i)


@_inline
def _order_step(
    uf, ui, oi, of, pq, pf, gi, occ, ghost, vis, placement, ti, tf, ec, i, owner, loop, nav_node, nav_next, nav_x, nav_y,
    first_free, err,
):  # fmt: skip
    """One game loop of mobile unit ``i``'s current order (``oi[i, 0]``): Move, Follow, Attack,
    Attack-move or Hold, Gather or Return cargo, Build, Construct; an unknown order is dropped."""
    t = ui[i, UI_TYPE]
    speed = tf[t, TF_SPEED]
    kind = oi[i, 0, OI_KIND]
    if kind == ORD_MOVE:
        tx, ty = _walkable_point(nav_node, nav_x, nav_y, of[i, 0, OF_X], of[i, 0, OF_Y])
        if _move_toward(uf, i, tx, ty, 0.0, speed, tf[t, TF_ACCEL], nav_node, nav_next, nav_x, nav_y):
            _pop_order(oi, of, ui, i)
    elif kind == ORD_FOLLOW:
        j = oi[i, 0, OI_TARGET]
        if j < 0 or ui[j, UI_ALIVE] == 0:
            _pop_order(oi, of, ui, i)
        else:
            stop = tf[t, TF_RADIUS] + tf[ui[j, UI_TYPE], TF_RADIUS] + _ARRIVE
            if _move_toward(uf, i, uf[j, UF_X], uf[j, UF_Y], stop, speed, tf[t, TF_ACCEL], nav_node, nav_next, nav_x, nav_y):
                _pop_order(oi, of, ui, i)
    elif kind == ORD_ATTACK:
        j = oi[i, 0, OI_TARGET]
        # a dead target's slot may hold a new unit by now (its recycle count differs from the one the
        # order was given against); an attack on an own unit stays legal, as in the game
        if j < 0 or ui[j, UI_ALIVE] == 0 or tf[t, TF_DAMAGE] <= 0.0 or ui[j, UI_RECYCLE] != oi[i, 0, OI_PARAM]:
            _pop_order(oi, of, ui, i)
        else:
            _engage(uf, ui, oi, pq, pf, gi, occ, ghost, vis, ti, tf, ec, i, j, True, loop, nav_node, nav_next, nav_x, nav_y)
    elif kind == ORD_ATTACK_MOVE or kind == ORD_HOLD:
        _attack_move_step(uf, ui, oi, of, pq, pf, gi, occ, ghost, vis, ti, tf, ec, i, owner, loop, nav_node, nav_next, nav_x,
                          nav_y)  # fmt: skip
    elif kind == ORD_GATHER or kind == ORD_RETURN:
        if kind == ORD_RETURN and ui[i, UI_WSTATE] == WS_NONE:
            if ui[i, UI_CARGO] == 0:
                _pop_order(oi, of, ui, i)
                return
            ui[i, UI_WSTATE] = WS_TO_HALL
            ui[i, UI_HALL] = _nearest_hall(uf, ui, ti, i)
        _gather_step(uf, ui, oi, of, pf, ti, tf, ec, i, nav_node, nav_next, nav_x, nav_y)
    elif kind == ORD_BUILD:
        _build_step(uf, ui, oi, of, pq, pf, occ, placement, ti, tf, i, nav_node, nav_next, nav_x, nav_y, first_free, err, loop)
    elif kind == ORD_CONSTRUCT:
        s = oi[i, 0, OI_TARGET]
        if s < 0 or ui[s, UI_ALIVE] == 0 or ui[s, UI_DONE] == 1:
            _pop_order(oi, of, ui, i)
            _resume_gather(oi, of, ui, i)
    else:
        _pop_order(oi, of, ui, i)


@_inline
def _unit_step(
    uf, ui, oi, of, pq, pf, gi, occ, ghost, vis, placement, ti, tf, ec, i, loop, nav_node, nav_next, nav_x, nav_y,
    first_free, err,
):  # fmt: skip
    """One game loop of unit ``i`` (alive, not neutral): its vitals (``_vitals_step``); then a structure
    builds (``_construction_step``), or produces (``_production_step``) and, if armed and powered,
    fires at what is in range; an idle armed non-worker fights what comes near (or what hit it); a
    unit with orders works on the first one (``_order_step``)."""
    t = ui[i, UI_TYPE]
    owner = ui[i, UI_OWNER]
    if owner == 0:
        return
    if not _vitals_step(uf, ui, oi, pq, pf, gi, occ, ghost, vis, ti, tf, ec, i, t, loop):
        return
    armed = tf[t, TF_DAMAGE] > 0.0
    if ti[t, TI_STRUCTURE] == 1:
        if ui[i, UI_DONE] == 0:
            _construction_step(uf, ui, oi, of, ti, tf, i, t, loop)
            return
        if ui[i, UI_NQUEUE] > 0:  # _production_step's own first test, made here to save the call
            _production_step(uf, ui, oi, of, pq, pf, occ, ti, tf, ec, i, first_free, loop)
        if armed and (ti[t, TI_NEEDS_POWER] == 0 or ui[i, UI_POWERED] == 1):
            j = _retarget(uf, ui, ti, tf, ec, i, owner, tf[t, TF_RANGE], tf[t, TF_RANGE], True, loop)
            if j >= 0:
                _engage(uf, ui, oi, pq, pf, gi, occ, ghost, vis, ti, tf, ec, i, j, False, loop, nav_node, nav_next, nav_x,
                        nav_y)  # fmt: skip
    elif ui[i, UI_NORDERS] == 0:
        if armed and ti[t, TI_WORKER] == 0:
            j = _retarget(uf, ui, ti, tf, ec, i, owner, tf[t, TF_SIGHT], tf[t, TF_RANGE] + 1.0, True, loop)
            if j >= 0:
                _engage(uf, ui, oi, pq, pf, gi, occ, ghost, vis, ti, tf, ec, i, j, True, loop, nav_node, nav_next, nav_x,
                        nav_y)  # fmt: skip
    else:
        _order_step(uf, ui, oi, of, pq, pf, gi, occ, ghost, vis, placement, ti, tf, ec, i, owner, loop, nav_node, nav_next,
                    nav_x, nav_y, first_free, err)  # fmt: skip


@_jit
def _update_power(uf, ui, ti, tf):
    for i in range(ui.shape[0]):
        if ui[i, UI_ALIVE] == 1 and ti[ui[i, UI_TYPE], TI_NEEDS_POWER] == 1:
            ui[i, UI_POWERED] = 1 if powered_at(uf, ui, ti, tf, ui[i, UI_OWNER], uf[i, UF_X], uf[i, UF_Y]) else 0


@_jit
def _stats(uf, ui, oi, pq, pf, gi, ti, tf, ec):
    """Recount food, workers, army and structures of both players; apply the melee end rule."""
    for p in range(1, 3):
        pf[p, PF_FOOD_USED] = 0.0
        pf[p, PF_FOOD_CAP] = 0.0
        pf[p, PF_FOOD_WORKERS] = 0.0
        pf[p, PF_FOOD_ARMY] = 0.0
        pf[p, PF_IDLE_WORKERS] = 0.0
        pf[p, PF_ARMY_COUNT] = 0.0
        pf[p, PF_STRUCTURES] = 0.0
        pf[p, PF_WORKERS] = 0.0
    for i in range(ui.shape[0]):
        if ui[i, UI_ALIVE] == 0:
            continue
        p = ui[i, UI_OWNER]
        if p == 0:
            continue
        t = ui[i, UI_TYPE]
        if ti[t, TI_STRUCTURE] == 1:
            pf[p, PF_STRUCTURES] += 1.0
            if ui[i, UI_DONE] == 1:
                pf[p, PF_FOOD_CAP] += tf[t, TF_FOOD_PROVIDED]
            if ui[i, UI_NQUEUE] > 0 and ui[i, UI_STARTED] == 1:
                pf[p, PF_FOOD_USED] += tf[pq[i, 0], TF_FOOD]
            continue
        pf[p, PF_FOOD_USED] += tf[t, TF_FOOD]
        if ti[t, TI_WORKER] == 1:
            pf[p, PF_FOOD_WORKERS] += tf[t, TF_FOOD]
            pf[p, PF_WORKERS] += 1.0
            if ui[i, UI_NORDERS] == 0:
                pf[p, PF_IDLE_WORKERS] += 1.0
        elif ti[t, TI_ARMY] == 1:
            pf[p, PF_FOOD_ARMY] += tf[t, TF_FOOD]
            pf[p, PF_ARMY_COUNT] += 1.0
    for p in range(1, 3):
        pf[p, PF_FOOD_CAP] = min(pf[p, PF_FOOD_CAP], ec[EC_SUPPLY_MAX])
    if gi[GI_RESULT] == RESULT_NONE:
        p1 = pf[1, PF_STRUCTURES] > 0
        p2 = pf[2, PF_STRUCTURES] > 0
        if not p1 and not p2:
            gi[GI_RESULT] = RESULT_TIE
        elif not p1:
            gi[GI_RESULT] = RESULT_P2_WINS
        elif not p2:
            gi[GI_RESULT] = RESULT_P1_WINS


@_jit
def _game_loop(
    uf, ui, oi, of, pq, pf, gi, occ, ghost, vis, placement, ti, tf, ec, nav_node, nav_next, nav_x, nav_y, first_free, err
):
    # Views without reference counting: the inlined steps bind these arrays once per unit (see borrow.py).
    uf, ui, oi, of, pq, pf, gi, occ, ghost, vis, placement, ti, tf, ec, nav_node, nav_next, nav_x, nav_y, err = borrowed(
        (uf, ui, oi, of, pq, pf, gi, occ, ghost, vis, placement, ti, tf, ec, nav_node, nav_next, nav_x, nav_y, err)
    )
    loop = gi[GI_LOOP]
    if loop % 8 == 0:
        _update_power(uf, ui, ti, tf)
    for i in range(ui.shape[0]):
        if ui[i, UI_ALIVE] == 1 and ui[i, UI_OWNER] != 0:
            _unit_step(
                uf,
                ui,
                oi,
                of,
                pq,
                pf,
                gi,
                occ,
                ghost,
                vis,
                placement,
                ti,
                tf,
                ec,
                i,
                loop,
                nav_node,
                nav_next,
                nav_x,
                nav_y,
                first_free,
                err,
            )
    _stats(uf, ui, oi, pq, pf, gi, ti, tf, ec)
    gi[GI_LOOP] = loop + 1


def _advance(
    loops,
    uf,
    ui,
    oi,
    of,
    pq,
    pf,
    gi,
    occ,
    ghost,
    vis,
    placement,
    ti,
    tf,
    ec,
    nav_node,
    nav_next,
    nav_x,
    nav_y,
    first_free,
    err,
):
    """Advance each running game by ``loops[b]`` game loops (a finished game stays as it ended).

    Args:
        loops: ``(B,)`` int64 game loops per game (0 leaves a game as it is).
        uf, ui, oi, of, pq, pf, gi, occ, ghost, vis: the state arrays (``GameState``), updated in place.
        placement: ``(H, W)`` uint8 placement grid of the map.
        ti, tf, ec: the catalog tables.
        nav_node, nav_next, nav_x, nav_y: the navigation graph (``Navigation``).
        first_free: first slot that may hold a new unit (after the map's neutral units).
        err: ``(B, 2)`` int32, set to the ActionResult of a Build order that fails on arrival
            (column 0 the agent's, column 1 the bot's; 0 when none).
    """
    for b in numba.prange(uf.shape[0]):
        for _ in range(loops[b]):
            if gi[b, GI_RESULT] != RESULT_NONE:
                break
            _game_loop(
                uf[b],
                ui[b],
                oi[b],
                of[b],
                pq[b],
                pf[b],
                gi[b],
                occ[b],
                ghost[b],
                vis[b],
                placement,
                ti,
                tf,
                ec,
                nav_node,
                nav_next,
                nav_x,
                nav_y,
                first_free,
                err[b],
            )


# ================================================================ commands
@_jit
def _train(uf, ui, pq, pf, ti, tf, ec, sel, nsel, owner, t):
    """Queue one ``t`` at the least busy selected producer; price paid now."""
    best = -1
    bq = 99
    code = AR_CANT_TARGET_THAT_UNIT
    for k in range(nsel):
        s = sel[k]
        st = ui[s, UI_TYPE]
        if ui[s, UI_DONE] == 0:
            code = AR_BUILDING_IS_UNDER_CONSTRUCTION
            continue
        if ti[st, TI_TRAINS_AS] != ti[t, TI_PRODUCER] and st != ti[t, TI_PRODUCER]:
            continue
        if ti[t, TI_MORPH] == 1 and st != ti[t, TI_PRODUCER]:
            continue  # a morph starts from its producer's type only (not from the morphed type itself)
        if ti[t, TI_ADDON] == 1 and ui[s, UI_ADDON] >= 0:
            code = AR_ERROR
            continue
        if (ti[t, TI_MORPH] == 1 or ti[t, TI_ADDON] == 1) and ui[s, UI_NQUEUE] > 0:
            code = AR_QUEUE_IS_FULL
            continue
        if ui[s, UI_NQUEUE] > 0 and ti[pq[s, 0], TI_MORPH] == 1:
            code = AR_QUEUE_IS_FULL
            continue
        if ui[s, UI_NQUEUE] >= PQ:
            code = AR_QUEUE_IS_FULL
            continue
        if ui[s, UI_NQUEUE] < bq:
            bq = ui[s, UI_NQUEUE]
            best = s
    if best < 0:
        return code
    if not has_done(ui, ti, owner, ti[t, TI_REQUIRES]):
        return AR_TECH_REQUIREMENTS_NOT_MET
    code = _afford(pf, ti, owner, t)
    if code != 0:
        return code
    if (
        tf[t, TF_FOOD] > 0.0
        and tf[t, TF_FOOD] > min(pf[owner, PF_FOOD_CAP], ec[EC_SUPPLY_MAX]) - pf[owner, PF_FOOD_USED] + 1e-6
    ):
        # The game refuses to queue a unit that cannot fit under the current food cap.
        return AR_NOT_ENOUGH_FOOD
    _pay(pf, ti, owner, t, 1.0)
    pq[best, ui[best, UI_NQUEUE]] = t
    ui[best, UI_NQUEUE] += 1
    return AR_SUCCESS


@_jit
def _cancel_last(uf, ui, pq, pf, occ, ti, tf, s):
    n = ui[s, UI_NQUEUE]
    if n == 0:
        return AR_ERROR
    t = pq[s, n - 1]
    pq[s, n - 1] = -1
    ui[s, UI_NQUEUE] = n - 1
    if n == 1:
        if ui[s, UI_STARTED] == 1 and ti[t, TI_ADDON] == 1 and ui[s, UI_ADDON] >= 0:
            a = ui[s, UI_ADDON]  # the add-on under construction goes with its entry
            ui[a, UI_ALIVE] = 0
            _mark_footprint(occ, uf[a, UF_X], uf[a, UF_Y], ti[t, TI_FOOTPRINT_W], ti[t, TI_FOOTPRINT_H], 0)
            ui[s, UI_ADDON] = -1
        ui[s, UI_STARTED] = 0
        uf[s, UF_PROD] = 0.0
    _pay(pf, ti, ui[s, UI_OWNER], t, -1.0)
    return AR_SUCCESS


@_jit
def _selection(ui, cs, owner):
    """The live units of ``owner`` among the command's slots (up to the first -1): (slots, count)."""
    n = ui.shape[0]
    sel = np.empty(cs.shape[0], dtype=np.int64)
    nsel = 0
    for k in range(cs.shape[0]):
        s = cs[k]
        if s < 0:
            break
        if s < n and ui[s, UI_ALIVE] == 1 and ui[s, UI_OWNER] == owner:
            sel[nsel] = s
            nsel += 1
    return sel, nsel


@_jit
def _cancel_build(uf, ui, oi, pq, pf, gi, occ, ghost, vis, ti, tf, ec, sel, nsel, owner):
    """Cancel every selected structure under construction, refunding ``EC_CANCEL_REFUND`` of its cost."""
    code = AR_ERROR
    for k in range(nsel):
        s = sel[k]
        st = ui[s, UI_TYPE]
        if ti[st, TI_STRUCTURE] == 1 and ui[s, UI_DONE] == 0:
            refund = ec[EC_CANCEL_REFUND]
            pf[owner, PF_MINERALS] += refund * ti[st, TI_MINERALS]
            pf[owner, PF_VESPENE] += refund * ti[st, TI_GAS]
            _kill(uf, ui, oi, pq, pf, gi, occ, ghost, vis, ti, tf, s, 0)
            pf[owner, PF_LOST_VALUE] -= tf[st, TF_VALUE]
            code = AR_SUCCESS
    return code


@_jit
def _calldown_mule(uf, ui, oi, of, pq, occ, gi, ti, tf, ec, sel, nsel, owner, tgt, x, y, first_free):
    """The first selected caster with energy calls down a MULE on mineral field ``tgt`` (or the one
    nearest (x, y))."""
    for k in range(nsel):
        s = sel[k]
        st = ui[s, UI_TYPE]
        if tf[st, TF_ENERGY_MAX] <= 0.0 or ui[s, UI_DONE] == 0:
            continue
        if uf[s, UF_ENERGY] < ec[EC_MULE_ENERGY]:
            return AR_NOT_ENOUGH_ENERGY
        r = tgt
        if r < 0:
            r = nearest_mineral(uf, ui, ti, x, y, 3.0)
        if r < 0 or ti[ui[r, UI_TYPE], TI_RESOURCE] != RES_MINERAL:
            return AR_MUST_TARGET_RESOURCES
        mule_t = -1
        for tt in range(ti.shape[0]):
            if ti[tt, TI_MULE] == 1:
                mule_t = tt
        m = spawn(uf, ui, oi, pq, occ, ti, tf, mule_t, owner, uf[r, UF_X], uf[r, UF_Y] - 1.0, True, first_free, gi[GI_LOOP])
        if m < 0:
            return AR_ERROR
        uf[s, UF_ENERGY] -= ec[EC_MULE_ENERGY]
        ui[m, UI_GATHER] = r
        _push_order(oi, of, ui, m, ORD_GATHER, r, 0, 0.0, 0.0, False)
        return AR_SUCCESS
    return AR_ERROR


@_jit
def _rally(uf, ui, ti, sel, nsel, tgt, x, y):
    """Set the rally point of every selected producer to unit ``tgt`` or (x, y)."""
    code = AR_ERROR
    for k in range(nsel):
        s = sel[k]
        if ti[ui[s, UI_TYPE], TI_RALLY] == 1:
            ui[s, UI_RALLY_SET] = 1
            uf[s, UF_RALLY_X] = uf[tgt, UF_X] if tgt >= 0 else x
            uf[s, UF_RALLY_Y] = uf[tgt, UF_Y] if tgt >= 0 else y
            code = AR_SUCCESS
    return code


@_jit
def _build(uf, ui, oi, of, pf, occ, placement, ti, tf, sel, nsel, owner, kind, param, tgt, x, y, queued):
    """Order the first selected worker able to build type ``param`` to build it at (x, y) (snapped to
    the footprint's grid) or on geyser ``tgt``: requirements, cost and placement are checked now."""
    t = param
    if kind == CMD_BUILD_UNIT:
        if tgt < 0 or ti[ui[tgt, UI_TYPE], TI_RESOURCE] != RES_GEYSER or ti[t, TI_GAS_BUILDING] == 0:
            return AR_MUST_TARGET_RESOURCES
        if ui[tgt, UI_GEYSER] >= 0:
            return AR_CANT_BUILD_LOCATION_INVALID
        cx = uf[tgt, UF_X]
        cy = uf[tgt, UF_Y]
    else:
        cx = snap_center(x, ti[t, TI_FOOTPRINT_W])
        cy = snap_center(y, ti[t, TI_FOOTPRINT_H])
    w = -1
    for k in range(nsel):
        s = sel[k]
        if ti[ui[s, UI_TYPE], TI_WORKER] == 1 and ti[t, TI_PRODUCER] == ui[s, UI_TYPE]:
            w = s
            break
    if w < 0:
        return AR_ERROR
    if not has_done(ui, ti, owner, ti[t, TI_REQUIRES]):
        return AR_BUILD_TECH_REQUIREMENTS_NOT_MET
    code = _afford(pf, ti, owner, t)
    if code != 0:
        return code
    if kind == CMD_BUILD_PT:
        code = placement_error(uf, ui, occ, placement, ti, tf, t, owner, cx, cy)
        if code != 0:
            return code
    if not _push_order(oi, of, ui, w, ORD_BUILD, tgt if kind == CMD_BUILD_UNIT else -1, t, cx, cy, queued):
        return AR_ORDER_QUEUE_IS_FULL
    return AR_SUCCESS


@_jit
def _unit_orders(uf, ui, oi, of, ti, tf, sel, nsel, owner, kind, tgt, x, y, queued):
    """Every selected unit that can take ``kind`` gets the order (structures: rally and stop)."""
    code = AR_ERROR
    for k in range(nsel):
        s = sel[k]
        st = ui[s, UI_TYPE]
        if ti[st, TI_STRUCTURE] == 1:
            if kind == CMD_SMART_PT or kind == CMD_SMART_UNIT:
                if ti[st, TI_RALLY] == 1:
                    ui[s, UI_RALLY_SET] = 1
                    uf[s, UF_RALLY_X] = uf[tgt, UF_X] if tgt >= 0 else x
                    uf[s, UF_RALLY_Y] = uf[tgt, UF_Y] if tgt >= 0 else y
                    code = AR_SUCCESS
            elif kind == CMD_STOP:
                ui[s, UI_TARGET] = -1
                code = AR_SUCCESS
            continue
        if ti[st, TI_CAN_MOVE] == 0:
            continue
        worker = ti[st, TI_WORKER] == 1 or ti[st, TI_MULE] == 1
        armed = tf[st, TF_DAMAGE] > 0.0
        okind = ORD_NONE
        otgt = -1
        if kind == CMD_STOP:
            _release_worker(ui, s)
            ui[s, UI_NORDERS] = 0
            ui[s, UI_TARGET] = -1
            ui[s, UI_WSTATE] = WS_NONE
            code = AR_SUCCESS
            continue
        if kind == CMD_HOLD:
            okind = ORD_HOLD
        elif kind == CMD_MOVE_PT or kind == CMD_SMART_PT:
            okind = ORD_MOVE
        elif kind == CMD_MOVE_UNIT:
            okind = ORD_FOLLOW
            otgt = tgt
        elif kind == CMD_ATTACK_PT:
            okind = ORD_ATTACK_MOVE if armed else ORD_MOVE
        elif kind == CMD_ATTACK_UNIT:
            if not armed or tgt == s:
                code = AR_CANT_TARGET_THAT_UNIT
                continue
            okind = ORD_ATTACK
            otgt = tgt
        elif kind == CMD_GATHER or kind == CMD_SMART_UNIT:
            tt = ui[tgt, UI_TYPE]
            # An own gas building under construction takes gatherers too: they wait at it
            # (_gather_step).
            res = ti[tt, TI_RESOURCE] == RES_MINERAL or (ti[tt, TI_GAS_BUILDING] == 1 and ui[tgt, UI_OWNER] == owner)
            if worker and res:
                # UI_GATHER changes when the order starts (here unless queued, else in
                # _gather_step): a worker mining a field frees it before it takes another.
                okind = ORD_GATHER
                otgt = tgt
            elif kind == CMD_GATHER:
                code = AR_MUST_TARGET_RESOURCES
                continue
            elif ui[tgt, UI_OWNER] != owner and ui[tgt, UI_OWNER] != 0 and armed:
                okind = ORD_ATTACK
                otgt = tgt
            else:
                okind = ORD_FOLLOW
                otgt = tgt
        elif kind == CMD_RETURN:
            if not worker or ui[s, UI_CARGO] == 0:
                continue
            okind = ORD_RETURN
        if okind == ORD_NONE:
            continue
        # an attack order remembers its target's recycle count, to tell the unit from a later one in its slot
        param = ui[otgt, UI_RECYCLE] if okind == ORD_ATTACK else 0
        if _push_order(oi, of, ui, s, okind, otgt, param, x, y, queued):
            code = AR_SUCCESS
            if okind == ORD_GATHER and not queued:
                ui[s, UI_GATHER] = otgt
        else:
            code = AR_ORDER_QUEUE_IS_FULL
    return code


@_jit
def _apply_one(ck, cf, cs, uf, ui, oi, of, pq, pf, gi, occ, ghost, vis, placement, ti, tf, ec, first_free):
    kind = ck[CK_KIND]
    if kind == CMD_NONE:
        return 0
    owner = ck[CK_PLAYER]
    param = ck[CK_PARAM]
    tgt = ck[CK_TARGET]
    queued = ck[CK_QUEUED] == 1
    x = cf[0]
    y = cf[1]
    n = ui.shape[0]
    sel, nsel = _selection(ui, cs, owner)
    if nsel == 0:
        return AR_ERROR
    if tgt >= 0 and (tgt >= n or ui[tgt, UI_ALIVE] == 0):
        return AR_CANT_TARGET_THAT_UNIT
    if kind == CMD_TRAIN:
        return _train(uf, ui, pq, pf, ti, tf, ec, sel, nsel, owner, param)
    if kind == CMD_CANCEL_LAST:
        for k in range(nsel):
            s = sel[k]
            if ui[s, UI_NQUEUE] > 0:
                return _cancel_last(uf, ui, pq, pf, occ, ti, tf, s)
        return AR_ERROR
    if kind == CMD_CANCEL_BUILD:
        return _cancel_build(uf, ui, oi, pq, pf, gi, occ, ghost, vis, ti, tf, ec, sel, nsel, owner)
    if kind == CMD_CALLDOWN_MULE:
        return _calldown_mule(uf, ui, oi, of, pq, occ, gi, ti, tf, ec, sel, nsel, owner, tgt, x, y, first_free)
    if kind == CMD_RALLY:
        return _rally(uf, ui, ti, sel, nsel, tgt, x, y)
    if kind == CMD_BUILD_PT or kind == CMD_BUILD_UNIT:
        return _build(uf, ui, oi, of, pf, occ, placement, ti, tf, sel, nsel, owner, kind, param, tgt, x, y, queued)
    return _unit_orders(uf, ui, oi, of, ti, tf, sel, nsel, owner, kind, tgt, x, y, queued)


def _apply_commands(ck, cf, cs, result, uf, ui, oi, of, pq, pf, gi, occ, ghost, vis, placement, ti, tf, ec, first_free):
    """Apply one command per game (``CMD_NONE`` for none).

    Args:
        ck: ``(B, NCK)`` int64 command ints (``CK_*``).
        cf: ``(B, 2)`` float32 target point (x, y) in cells.
        cs: ``(B, K)`` int64 selected unit slots, ended by -1.
        result: ``(B,)`` int32, set to the ActionResult code (0 when there was no command).
        the rest: the state arrays and tables, as ``advance``.
    """
    for b in numba.prange(ck.shape[0]):
        if ck[b, CK_KIND] == CMD_NONE:  # most rows of a bot's one-game call: skip the per-game views
            result[b] = 0
            continue
        result[b] = _apply_one(
            ck[b],
            cf[b],
            cs[b],
            uf[b],
            ui[b],
            oi[b],
            of[b],
            pq[b],
            pf[b],
            gi[b],
            occ[b],
            ghost[b],
            vis[b],
            placement,
            ti,
            tf,
            ec,
            first_free,
        )


# A batch of at least PARALLEL_MIN_GAMES games is split into contiguous ranges of games, one Python
# thread per range, each calling the serial driver (compiled with nogil) on its slice of the state:
# games never interact, so each game's arithmetic is that of the serial call, bit for bit. Smaller
# batches run in the calling thread (a thread hand-off costs more than a small batch's work).
# Why not Numba's ``parallel=True``: its OpenMP workers spin-wait between calls on the OpenMP
# runtime torch also uses; with a policy running between env steps (the full-game actor loop) the
# forward pass took 4-5x its CPU time in one measurement (docs/full_game_program.md).
PARALLEL_MIN_GAMES = 16
"""Batches of at least this many games run on threads (``numba.get_num_threads()`` ranges)."""
advance_serial = _jit_nogil(_advance)
apply_commands_serial = _jit(_apply_commands)

_GAME_AXIS_ARGS = 11  # loops, uf, ui, oi, of, pq, pf, gi, occ, ghost, vis: leading axis B


def advance(loops, *arrays):
    """Advance each running game by ``loops[b]`` game loops (see ``_advance`` for the arguments)."""
    n = loops.shape[0]
    threads = kernel_threads() if n >= PARALLEL_MIN_GAMES else 1
    if threads <= 1:
        advance_serial(loops, *arrays)
        return
    per_game = (loops, *arrays[: _GAME_AXIS_ARGS - 1])
    shared, err = arrays[_GAME_AXIS_ARGS - 1 : -1], arrays[-1]

    def call(lo, hi):
        advance_serial(*(a[lo:hi] for a in per_game), *shared, err[lo:hi])

    run_chunks(call, n, threads)


def apply_commands(ck, *arrays):
    """Apply one command per game (see ``_apply_commands`` for the arguments).

    Serial at every batch size: a command is a few hundred operations, less than the cost of
    waking the thread pool.
    """
    apply_commands_serial(ck, *arrays)
