"""A lite game's state as the SC2 API's messages (``ResponseObservation``, ``ResponseQuery``).

What the real game would send a raw-interface client with the minimap feature layer: raw units
(the agent's view: its own units, enemies in sight, snapshots of enemy structures seen before,
resources), ``player_common``, the eight minimap renders of ``spec.MINIMAP_FEATURES`` and the
available abilities of its units. ``convert.observation_to_arrays`` of these messages equals the
arrays ``sc2_envs.lite.observe`` writes directly (``tests/test_lite_proto.py`` holds that), so the
direct path is what the real game's conversion gives, and these messages are what an SC2-API door
to the engine serves.

Built from the state after ``Observer.observe`` (which updates the fog and snapshot marks).
"""

from __future__ import annotations

import numpy as np

from sc2_envs.full_game import spec
from sc2_envs.full_game._deps import require
from sc2_envs.lite.catalog import (
    RES_MINERAL,
    TF_DAMAGE,
    TF_ENERGY_MAX,
    TF_FOOD,
    TF_HP,
    TF_RADIUS,
    TF_SHIELD,
    TI_ABILITY_ID,
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
)
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
    OI_TARGET,
    ORD_ATTACK,
    ORD_ATTACK_MOVE,
    ORD_BUILD,
    ORD_CONSTRUCT,
    ORD_FOLLOW,
    ORD_GATHER,
    ORD_HOLD,
    ORD_MOVE,
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
    UI_RECYCLE,
    UI_SEEN,
    UI_TYPE,
    UI_WSTATE,
    WS_DROPOFF,
    WS_TO_HALL,
)
from sc2_envs.lite.observe import CAMERA_WIDTH, GENERIC_ABILITIES

# The order abilities the live API reports (s2client-proto stableid.json): Move 16, Attack 23,
# HoldPosition 18, Harvest_Gather_Probe 298, Harvest_Return_Probe 299.
_ORDER_ABILITY = {ORD_MOVE: 16, ORD_FOLLOW: 16, ORD_ATTACK_MOVE: 23, ORD_ATTACK: 23, ORD_HOLD: 18, ORD_GATHER: 298}
_RETURN_ABILITY = 299


def _tag(ui, i) -> int:
    return ((i + 1) << 18) | (int(ui[i, UI_RECYCLE]) & 0x3FFFF)


def _visible(vis, x, y) -> bool:
    h, w = vis.shape
    return vis[min(max(int(y), 0), h - 1), min(max(int(x), 0), w - 1)] == 2


def observation_proto(engine, observer, b: int):
    """``(ResponseObservation, ResponseQuery)`` of game ``b`` for the agent (player 1).

    Raises:
        MissingDependencyError: ``s2clientprotocol`` is not installed.
    """
    sc_pb = require("s2clientprotocol.sc2api_pb2", "building SC2 API messages")
    raw_pb = require("s2clientprotocol.raw_pb2", "building SC2 API messages")
    query_pb = require("s2clientprotocol.query_pb2", "building SC2 API messages")
    st, cat = engine.state, engine.catalog
    uf, ui, oi, of, pq, pf, gi = st.uf[b], st.ui[b], st.oi[b], st.of[b], st.pq[b], st.pf[b], st.gi[b]
    vis = st.vis[b]
    ti, tf = cat.ti, cat.tf
    omniscient = observer.omniscient
    resp = sc_pb.ResponseObservation()
    obs = resp.observation
    obs.game_loop = int(gi[GI_LOOP])
    pc = obs.player_common
    pc.player_id = 1
    pc.minerals, pc.vespene = int(np.floor(pf[1, PF_MINERALS])), int(np.floor(pf[1, PF_VESPENE]))
    pc.food_used, pc.food_cap = int(pf[1, PF_FOOD_USED]), int(pf[1, PF_FOOD_CAP])
    pc.food_workers, pc.food_army = int(pf[1, PF_FOOD_WORKERS]), int(pf[1, PF_FOOD_ARMY])
    pc.idle_worker_count, pc.army_count = int(pf[1, PF_IDLE_WORKERS]), int(pf[1, PF_ARMY_COUNT])
    query = query_pb.ResponseQuery()
    shown = []
    for i in np.flatnonzero(ui[:, UI_ALIVE] == 1):
        t, o = int(ui[i, UI_TYPE]), int(ui[i, UI_OWNER])
        x, y = float(uf[i, UF_X]), float(uf[i, UF_Y])
        seen = omniscient or o == 1 or _visible(vis, x, y)
        if o == 2 and not seen and not (ui[i, UI_SEEN] & 2):
            continue
        shown.append(i)
        u = obs.raw_data.units.add(tag=_tag(ui, i), unit_type=int(cat.game_ids[t]), owner=o if o else 16)
        u.alliance = raw_pb.Self if o == 1 else raw_pb.Enemy if o == 2 else raw_pb.Neutral
        u.display_type = raw_pb.Visible if seen else raw_pb.Snapshot
        u.cloak = raw_pb.NotCloaked
        u.pos.x, u.pos.y = x, y
        u.radius = float(tf[t, TF_RADIUS])
        u.build_progress = 1.0 if ui[i, UI_DONE] else float(uf[i, UF_BUILD] / max(ti[t, TI_BUILD_TIME], 1))
        u.health_max, u.shield_max, u.energy_max = float(tf[t, TF_HP]), float(tf[t, TF_SHIELD]), float(tf[t, TF_ENERGY_MAX])
        if seen:
            u.health, u.shield, u.energy = float(uf[i, UF_HP]), float(uf[i, UF_SHIELD]), float(uf[i, UF_ENERGY])
            if ti[t, TI_RESOURCE] == RES_MINERAL:
                u.mineral_contents = int(ui[i, UI_CONTENTS])
            elif ti[t, TI_RESOURCE] or ti[t, TI_GAS_BUILDING]:
                u.vespene_contents = int(ui[i, UI_CONTENTS])
        else:
            u.health, u.shield = float(tf[t, TF_HP]), float(tf[t, TF_SHIELD])
        if o != 1:
            continue
        if ti[t, TI_NEEDS_POWER]:
            u.is_powered = bool(ui[i, UI_POWERED])
        u.is_active = bool(ui[i, UI_NQUEUE] > 0)
        u.weapon_cooldown = float(uf[i, UF_COOLDOWN])
        _orders(u, ui, oi, of, pq, uf, ti, i)
        if ui[i, UI_DONE] and (ti[t, TI_TOWNHALL] or ti[t, TI_GAS_BUILDING]):
            u.assigned_harvesters, u.ideal_harvesters = _harvesters(ui, uf, oi, ti, i)
        query.abilities.add(unit_tag=u.tag)
    for k in range(int(gi[GI_GHOSTS])) if not omniscient else ():
        g = st.ghost[b, k]
        u = obs.raw_data.units.add(tag=int(g[GH_TAG]), unit_type=int(cat.game_ids[int(g[GH_TYPE])]), owner=2)
        u.alliance, u.display_type, u.cloak = raw_pb.Enemy, raw_pb.Snapshot, raw_pb.NotCloaked
        u.pos.x, u.pos.y = float(g[GH_X]), float(g[GH_Y])
        u.build_progress = 1.0
        u.health = u.health_max = float(g[GH_HP_MAX])
    _abilities(query, engine, b)
    _minimap(obs, engine, observer, b, shown)
    return resp, query


def _orders(u, ui, oi, of, pq, uf, ti, i) -> None:
    if ui[i, UI_NQUEUE] > 0:
        for q in range(int(ui[i, UI_NQUEUE])):
            order = u.orders.add(ability_id=int(ti[pq[i, q], TI_ABILITY_ID]))
            if q == 0:
                order.progress = float(uf[i, UF_PROD] / max(ti[pq[i, 0], TI_BUILD_TIME], 1))
        return
    for k in range(int(ui[i, UI_NORDERS])):
        kind = int(oi[i, k, OI_KIND])
        if kind in (ORD_BUILD, ORD_CONSTRUCT):
            t = int(oi[i, k, OI_PARAM])
            order = u.orders.add(ability_id=int(ti[t, TI_ABILITY_ID]) if kind == ORD_BUILD else 0)
            if kind == ORD_BUILD and ti[t, TI_GAS_BUILDING]:
                order.target_unit_tag = _tag(ui, int(oi[i, k, OI_TARGET]))
            elif kind == ORD_BUILD:
                order.target_world_space_pos.x, order.target_world_space_pos.y = float(of[i, k, 0]), float(of[i, k, 1])
            continue
        returning = kind == ORD_GATHER and k == 0 and ui[i, UI_WSTATE] in (WS_TO_HALL, WS_DROPOFF)
        if returning or kind not in _ORDER_ABILITY:
            u.orders.add(ability_id=_RETURN_ABILITY if returning or kind == 6 else 0)
            continue
        order = u.orders.add(ability_id=_ORDER_ABILITY[kind])
        if kind in (ORD_MOVE, ORD_ATTACK_MOVE):
            order.target_world_space_pos.x, order.target_world_space_pos.y = float(of[i, k, 0]), float(of[i, k, 1])
        elif kind in (ORD_FOLLOW, ORD_ATTACK, ORD_GATHER):
            order.target_unit_tag = _tag(ui, int(oi[i, k, OI_TARGET]))


def _harvesters(ui, uf, oi, ti, i) -> tuple[int, int]:
    gathering = (ui[:, UI_ALIVE] == 1) & (ui[:, UI_OWNER] == 1) & (ti[ui[:, UI_TYPE], TI_WORKER] == 1)
    gathering &= (ui[:, UI_NORDERS] > 0) & (oi[:, 0, OI_KIND] == ORD_GATHER)
    if ti[ui[i, UI_TYPE], TI_GAS_BUILDING]:
        return int((gathering & (ui[:, UI_GATHER] == i)).sum()), 3
    near = (ui[:, UI_ALIVE] == 1) & (ti[ui[:, UI_TYPE], TI_RESOURCE] == RES_MINERAL) & (ui[:, UI_CONTENTS] > 0)
    near &= (uf[:, UF_X] - uf[i, UF_X]) ** 2 + (uf[:, UF_Y] - uf[i, UF_Y]) ** 2 < 144.0
    fields = np.flatnonzero(near)
    return int((gathering & np.isin(ui[:, UI_GATHER], fields)).sum()), 2 * len(fields)


def _abilities(query, engine, b) -> None:
    """Each own unit's abilities, as ``RequestQueryAvailableAbilities`` with resource checks."""
    st, cat = engine.state, engine.catalog
    ui, pf, pq = st.ui[b], st.pf[b], st.pq[b]
    ti, tf = cat.ti, cat.tf
    own = np.flatnonzero((ui[:, UI_ALIVE] == 1) & (ui[:, UI_OWNER] == 1))
    done_types = set(int(t) for t in ui[own, UI_TYPE][ui[own, UI_DONE] == 1])
    room = pf[1, PF_FOOD_CAP] - pf[1, PF_FOOD_USED]

    def affordable(t: int) -> bool:
        req = int(ti[t, TI_REQUIRES])
        if req >= 0 and req not in done_types:
            return False
        if pf[1, PF_MINERALS] < ti[t, TI_MINERALS] or pf[1, PF_VESPENE] < ti[t, TI_GAS]:
            return False
        return bool(ti[t, TI_STRUCTURE]) or tf[t, TF_FOOD] <= room + 1e-6

    (smart, stop, move, patrol, hold, attack, gather, ret, rally_workers, rally_units, cancel_queue, cancel_build) = (
        GENERIC_ABILITIES
    )
    for entry, i in zip(query.abilities, own, strict=True):
        t = int(ui[i, UI_TYPE])
        ids = []
        if ti[t, TI_STRUCTURE]:
            if not ui[i, UI_DONE]:
                ids.append(cancel_build)
            else:
                if ti[t, TI_RALLY]:
                    ids += [smart, rally_workers if ti[t, TI_TOWNHALL] else rally_units]
                if ui[i, UI_NQUEUE] > 0:
                    ids.append(cancel_queue)
                busy = ui[i, UI_NQUEUE] >= PQ or (ui[i, UI_NQUEUE] > 0 and ti[pq[i, 0], TI_MORPH])
                if not busy:
                    for u in range(len(cat.names)):
                        p = int(ti[u, TI_PRODUCER])
                        trains = p >= 0 and ti[p, TI_STRUCTURE] and (ti[t, TI_TRAINS_AS] == p or t == p)
                        trains = trains and (not ti[u, TI_MORPH] or t == p)  # a morph only from its producer
                        if trains and ti[u, TI_ABILITY_ID] and not ti[u, TI_BUILT_BY_WORKER] and affordable(u):
                            ids.append(int(ti[u, TI_ABILITY_ID]))
        elif ti[t, TI_CAN_MOVE]:
            ids += [smart, move, patrol, hold, stop]
            if tf[t, TF_DAMAGE] > 0:
                ids.append(attack)
            if ti[t, TI_WORKER]:
                ids.append(gather)
                if ui[i, UI_CARGO] > 0:
                    ids.append(ret)
                for u in range(len(cat.names)):
                    if ti[u, TI_BUILT_BY_WORKER] and ti[u, TI_PRODUCER] == t and affordable(u):
                        ids.append(int(ti[u, TI_ABILITY_ID]))
        for a in ids:
            entry.abilities.add(ability_id=a)


def _minimap(obs, engine, observer, b, shown) -> None:
    st, m = engine.state, engine.map
    w, h = m.map_size
    r = observer.minimap_resolution
    scale = r / max(w, h)
    planes = observer.static_minimap.copy()
    names = {n: k for k, n in enumerate(spec.MINIMAP_FEATURES)}
    wy = h - (np.arange(r) + 0.5) / scale
    wx = (np.arange(r) + 0.5) / scale
    inside = (wy[:, None] >= 0) & (wx[None, :] < w)
    cy = np.clip(wy.astype(np.int64), 0, h - 1)[:, None]
    cx = np.clip(wx.astype(np.int64), 0, w - 1)[None, :]
    planes[names["visibility_map"]] = np.where(inside, st.vis[b][cy, cx], planes[names["visibility_map"]])

    def boxes(x0, y0, x1, y1):  # arrays of corners -> (row0, row1, col0, col1) int arrays, one world_to_grid call
        c0, r0 = spec.world_to_grid(x0, y0, (w, h), r)
        c1, r1 = spec.world_to_grid(x1, y1, (w, h), r)
        return r0.tolist(), r1.tolist(), c0.tolist(), c1.tolist()

    rel = planes[names["player_relative"]]
    rank = {1: 0, 2: 1, 0: 2}  # drawn in entity order: own units, enemies, neutral; each by tag
    order = np.array(sorted(shown, key=lambda i: (rank[int(st.ui[b, i, UI_OWNER])], i)), np.int64)
    owners = st.ui[b, order, UI_OWNER]
    rad = engine.catalog.tf[st.ui[b, order, UI_TYPE], TF_RADIUS]  # float32 arithmetic, as the kernel
    x, y = st.uf[b, order, UF_X], st.uf[b, order, UF_Y]
    for r0, r1, c0, c1, o in zip(*boxes(x - rad, y + rad, x + rad, y - rad), owners.tolist(), strict=True):
        rel[r0 : r1 + 1, c0 : c1 + 1] = 1 if o == 1 else 4 if o == 2 else 3
    cam = observer.camera[b]
    half = CAMERA_WIDTH / 2
    (r0,), (r1,), (c0,), (c1,) = boxes(*(np.array([v]) for v in (cam[0] - half, cam[1] + half, cam[0] + half, cam[1] - half)))
    planes[names["camera"]][r0 : r1 + 1, c0 : c1 + 1] = 1
    renders = obs.feature_layer_data.minimap_renders
    for name, k in names.items():
        image = getattr(renders, name)
        image.bits_per_pixel = 8
        image.size.x = image.size.y = r
        image.data = planes[k].astype(np.uint8).tobytes()
