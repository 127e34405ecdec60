"""Numba mirror of ``sim.rules.dynamics``: ``advance`` is ``Dynamics.advance`` (bit-equal to the torch code).

The torch code in ``sim.rules.dynamics`` is the reference (``numba.actions`` and ``numba.enemy_ai`` mirror the orders stage):
this module re-states the same rules as loops over envs and units, in float32
with the reference's operation order and constants, so every state tensor comes out bit for bit
equal (checked on every map by ``tests/test_kernel_tick.py``). Where the torch reference reduces
floats it uses an order every path can reproduce (``dynamics.norm2``, ``dynamics.tree_sum``,
``enemy_ai.pair_dist``); damage sums are of whole numbers and so exact in any order (checked at
construction). It works in place on the NumPy views of the ``WorldState`` tensors (zero copy).

Layout, beside ``Dynamics``: ``advance`` (targets and range, then the stages of a tick for each env);
``_fire`` (steps 1-4 of ``_fire``), ``_splash_hits`` (every attacker's hits per victim, splash rows
replaced), ``_apply_damage``, ``_bursts`` (the end of ``_fire``), ``_resolve_deaths``, ``_heal``;
``_route_heading``, ``_move`` (the walk), ``_collide`` and ``_slide`` (the collisions and terrain of
``_move``); ``_regenerate``. Each stage works on one env ``b`` and its ``[U]`` scratch rows.

Stage by stage (``SMACSim._core``; ``sim.numba.step`` fuses them into one call for ``step``), an
env step runs as two compiled calls, ``orders`` (SMAC actions -> unit orders, then the enemy AI)
and ``ticks`` (``8 / loops_per_tick`` calls of ``Dynamics.advance``), whatever the batch size; the
first use compiles them (``cache=True`` keeps the machine code on disk for later processes).

SMACv2 scenarios (``sim_flags[FL_PER_ENV]``) have per-env rosters: the kernels keep per-kind tables and
gather each env's tables from ``WorldState.unit_kind`` before its orders and ticks
(``state.env_tables``), so the per-env ``UnitTable`` of the torch path is never read or refreshed here;
their enemies follow the map trigger (``EnemyAI`` ``attack_closest``: centre distances, then the
medivacs' heal orders) and ``conic_fov``'s look actions set ``WorldState.fov_dir``.
"""

from __future__ import annotations

from typing import NamedTuple

import numba
import numpy as np
import torch

from sc2_envs.sim.numba.actions import orders_range, orders_serial
from sc2_envs.sim.numba.state import (
    BEAM_HL,
    BEAM_HW,
    CEIL_SLACK,
    CENTRE,
    CF_ARMOR,
    CF_ATTACKS,
    CF_DPOINT,
    CF_EMAX,
    CF_EREGEN,
    CF_HEALCOST,
    CF_HEALCOST_CL,
    CF_HEALRATE,
    CF_HITINT,
    CF_HRANGE,
    CF_LIFEREGEN,
    CF_MAXHP,
    CF_MAXSH,
    CF_MSPEED_CL,
    CF_RADIUS,
    CF_SPEED,
    CF_SPLASHR,
    CF_WCOOL,
    CF_WRANGE,
    CI_AIR,
    CI_ARMED,
    CI_BIO,
    CI_CLIFFW,
    CI_MISSILE,
    CI_ROUTER,
    CI_SPACED,
    CI_SPLASH,
    CI_STATIC,
    DETOUR_SLACK,
    EPS,
    EPS2,
    F32,
    FL_AI_HEALER,
    FL_ATTACK_ALLIES,
    FL_ATTACK_CLOSEST,
    FL_CLIFFW,
    FL_H,
    FL_HEALER,
    FL_L,
    FL_LEVELS,
    FL_LINE,
    FL_MISSILE,
    FL_N,
    FL_NFOV,
    FL_NNA,
    FL_PER_ENV,
    FL_REGEN,
    FL_ROUTE,
    FL_SHIELD,
    FL_SUICIDE,
    FL_T,
    FL_W,
    HALF,
    INF32,
    INNER,
    JIT,
    NCF,
    NCI,
    NFL,
    NO_ATTACK,
    OCTILE_DIAG,
    ONE,
    PUSH_MIN_DIST,
    REGEN_DELAY,
    STATE_DTYPES,
    STATE_FIELDS,
    ZERO,
    KindTables,
    MapTables,
    UnitState,
    UnitTables,
    as_f32,
    as_i64,
    collision_consts,
    env_unit_tables,
    gather_env_tables,
    unit_tables,
)
from sc2_envs.sim.rules.dynamics import RAMP_MAX_STEP, Dynamics
from sc2_envs.sim.rules.enemy_ai import EnemyAI
from sc2_envs.sim.runtime.chunks import kernel_threads, run_chunks
from sc2_envs.sim.state import (
    ORDER_ATTACK,
    ORDER_ATTACK_MOVE,
    ORDER_HEAL,
    ORDER_MOVE,
    ORDER_NONE,
    SHIELD_REGEN_RATE,
    SPLASH_LINE,
    SPLASH_SUICIDE,
    UnitTable,
    WorldState,
)


# ------------------------------------------------------------------------------------------ helpers
@numba.njit(inline="always", **JIT)
def cell(px, py, W, H):
    """``Dynamics._cell`` for one point: (flat index with clamped coordinates, inside the map)."""
    cx = np.int64(np.floor(px))
    cy = np.int64(np.floor(py))
    inside = cx >= 0 and cx < W and cy >= 0 and cy < H
    fx = min(max(cx, 0), W - 1)
    fy = min(max(cy, 0), H - 1)
    return fx * H + fy, inside


@numba.njit(**JIT)
def can_stand(u, px, py, fx, fy, unit_ints, sim_flags, pathing, level, cliff_walkable):
    """``Dynamics.can_stand`` for unit ``u`` moving from ``(fx, fy)`` to ``(px, py)``: the spawn
    check of ``sim.numba.step``'s reset kernel (``_move``'s terrain loop inlines the same test)."""
    W, H = sim_flags[FL_W], sim_flags[FL_H]
    flat, inside = cell(px, py, W, H)
    ground = pathing[flat]
    if sim_flags[FL_LEVELS]:
        src, _ = cell(fx, fy, W, H)
        ground = ground and abs(level[flat] - level[src]) < RAMP_MAX_STEP
    if sim_flags[FL_CLIFFW] and unit_ints[CI_CLIFFW, u]:
        ground = cliff_walkable[flat]
    return inside and (ground or unit_ints[CI_AIR, u] != 0)


# ------------------------------------------------------------------------------------------ one tick
@numba.njit(**JIT)
def collision_scratch(collide_pair, r2far):
    """Per-call scratch of the collision stage: ``col [U]`` (unit collides with some other unit), the
    sweep distance (``collision_consts``) and the work arrays."""
    U = collide_pair.shape[0]
    col = np.zeros(U, np.bool_)
    sweep = collision_consts(collide_pair, r2far, col)
    order = np.arange(U)
    gl = np.zeros(U, np.int64)
    pc = np.zeros(U, np.int64)
    pj = np.zeros((U, U), np.int64)
    ptx = np.zeros((U, U), np.float32)
    pty = np.zeros((U, U), np.float32)
    return col, sweep, order, gl, pc, pj, ptx, pty


class TickScratch(NamedTuple):
    """``advance``'s work arrays, made once per call of its caller (``tick_scratch``), not per env or tick.

    ``rows_f [8, U]`` float32, the rows ``tpx``/``tpy`` (the order target's position), ``gap`` (its distance
    beyond reach), ``raw``/``nh`` (damage and hits per victim), ``amt`` (each attacker's hits), ``npx``/``npy``
    (the new positions); ``rows_i [11, U]`` int64 (bools as 0/1), the rows ``tgt`` (the target), ``alive0``
    (alive at the tick's start), ``engage``, ``inrng``, ``healing``, ``last`` (the damage target), ``hit_by``
    (the last attacker per victim), ``direct`` (the direct hits), ``boomv``/``burst`` (the baneling bursts),
    ``chase``; ``bx``/``by [P]`` float32 the tree buffers (``P`` the power of two ``>= U``); from
    ``collision_scratch``: ``col [U]``, ``order [U]`` (the sweep order, reset per env and kept between its
    ticks), ``gl``/``pc [U]``, ``pj``/``ptx``/``pty [U, U]`` and ``sweep`` (float32; a SMACv2 scenario's is
    recomputed per env by ``gather_env_tables``). Rows, not one array per row: the caller, which counts
    references, makes 9 arrays, and ``advance`` (which does not) takes the row views."""

    rows_f: np.ndarray
    rows_i: np.ndarray
    bx: np.ndarray
    by: np.ndarray
    col: np.ndarray
    order: np.ndarray
    gl: np.ndarray
    pc: np.ndarray
    pj: np.ndarray
    ptx: np.ndarray
    pty: np.ndarray
    sweep: np.float32


@numba.njit(**JIT)
def tick_scratch(collide_pair, r2far):
    """The :class:`TickScratch` for the tables ``collide_pair``/``r2far [U, U]`` of :class:`UnitTables`."""
    U = collide_pair.shape[0]
    P = 1
    while P < U:
        P *= 2
    col, sweep, order, gl, pc, pj, ptx, pty = collision_scratch(collide_pair, r2far)
    rows_f, rows_i = np.zeros((8, U), np.float32), np.zeros((11, U), np.int64)
    bx, by = np.zeros(P, np.float32), np.zeros(P, np.float32)
    return TickScratch(rows_f, rows_i, bx, by, col, order, gl, pc, pj, ptx, pty, sweep)


# The stages of a tick, one function per ``Dynamics`` method where the torch method is one pass (same
# names, so that the two forms read side by side); ``advance`` calls them per env and tick, in
# ``Dynamics.advance``'s order, and they are inlined into it. ``advance`` is compiled without Numba's
# reference counting (``_nrt=False``: it allocates nothing, and its caller holds every array for the
# call): a compiled call takes an atomic count on each array it passes or binds, and LLVM prunes only
# some of the pairs of inlined stages, which left 2s3z's ticks at 1.7x their time.
STAGE = dict(inline="always", **JIT)


@numba.njit(**STAGE)
def _fire(
    b, pos, cooldown, jitter_state, windup, windup_target, hits_left, missile_eta, missile_target, missile_hits,
    burst_pending, order_target, unit_floats, unit_ints, sim_flags, tgt, tpx, tpy, alive0, engage, healing, inrng, direct,
    last, amt, boomv,
):  # fmt: skip
    """Steps 1-4 of ``Dynamics._fire`` for env ``b``: start, cancel and land attacks, fly missiles. Leaves in
    ``last``/``amt [U]`` each attacker's damage target and hits, in ``direct [U]`` the direct hits that
    land, in ``boomv [U]`` the banelings that burst by their attack; ``_splash_hits`` and ``_apply_damage``
    then deal the damage (step 5)."""
    U = pos.shape[1]
    Lf = F32(sim_flags[FL_L])
    for u in range(U):
        # 1. start attacks
        attacking = engage[u] and not healing[u]
        ready_at = np.ceil(cooldown[b, u])
        ready_at = ready_at if ready_at > ONE else ONE
        start = attacking and inrng[u] and unit_ints[CI_ARMED, u] != 0 and ready_at <= Lf and hits_left[b, u] <= ZERO
        nxt = (jitter_state[b, u] * 1664525 + 1013904223) & 0xFFFFFFFF
        jitter = F32((nxt >> 30) - 1)
        if start:
            jitter_state[b, u] = nxt
        carry = ready_at - cooldown[b, u] if cooldown[b, u] > ZERO else ZERO
        if start:
            cooldown[b, u] = unit_floats[CF_WCOOL, u] + jitter - carry - (Lf - ready_at)
            windup[b, u] = unit_floats[CF_DPOINT, u] - (Lf - ready_at)
            hits_left[b, u] = unit_floats[CF_ATTACKS, u]
            windup_target[b, u] = tgt[u]
        else:
            c = cooldown[b, u] - Lf
            cooldown[b, u] = c if c > ZERO else ZERO
            windup[b, u] = windup[b, u] - Lf
        # 2. cancel
        keep = attacking and order_target[b, u] == windup_target[b, u]
        if not keep:
            hits_left[b, u] = ZERO
        # 3. land
        land = hits_left[b, u] > ZERO and windup[b, u] <= EPS
        if land:
            n_now = ONE if unit_ints[CI_SPACED, u] else hits_left[b, u]
        else:
            n_now = ZERO
        hits_left[b, u] = hits_left[b, u] - n_now
        if land:
            windup[b, u] = windup[b, u] + unit_floats[CF_HITINT, u]
        # 4. missiles
        is_m = unit_ints[CI_MISSILE, u] != 0
        mt = missile_target[b, u] if missile_target[b, u] > 0 else 0
        impact = ZERO
        if sim_flags[FL_MISSILE]:
            flying = missile_hits[b, u] > ZERO
            missile_eta[b, u] = missile_eta[b, u] - Lf
            arrive = flying and missile_eta[b, u] <= EPS
            if arrive and alive0[mt]:
                impact = missile_hits[b, u]
            if arrive:
                missile_hits[b, u] = ZERO
            if land and is_m:
                dx = tpx[u] - pos[b, u, 0]
                dy = tpy[u] - pos[b, u, 1]
                dist = np.sqrt(dx * dx + dy * dy)
                missile_eta[b, u] = dist / unit_floats[CF_MSPEED_CL, u]
                missile_target[b, u] = tgt[u]
                missile_hits[b, u] = n_now
        direct[u] = land and not is_m
        # stash: damage target and hits per attack
        last[u] = mt if is_m else tgt[u]
        amt[u] = impact if is_m else n_now
        boomv[u] = sim_flags[FL_SUICIDE] and unit_ints[CI_SPLASH, u] == SPLASH_SUICIDE and (direct[u] or burst_pending[b, u])


@numba.njit(**STAGE)
def _splash_hits(
    b, pos, unit_floats, unit_ints, dmg, enemy_pair, sim_flags, tpx, tpy, alive0, fire, boom, last, amt, raw, nh, hit_by
):
    """The hits of env ``b``'s attackers summed per victim, ``raw``/``nh [U]`` (damage, hits), with the rows
    of splash attackers replaced by everything their splash touches (``Dynamics._splash_hits``): a beam
    centred on ``(tpx, tpy)`` where ``fire`` (colossi whose hit lands), a burst around the baneling where
    ``boom``. Every other attacker ``a`` deals ``amt[a]`` hits to ``last[a]``. ``hit_by [U]``: the
    highest-index attacker with hits on each victim (-1: none), the torch ``scatter_reduce`` amax."""
    U = pos.shape[1]
    for v in range(U):
        raw[v] = ZERO
        nh[v] = ZERO
        hit_by[v] = -1
    for a in range(U):
        d_t = last[a]
        per = amt[a]
        if sim_flags[FL_SUICIDE] and boom[a]:  # (torch: the burst row replaces the beam row; a unit has one or the other)
            for v in range(U):
                dx = pos[b, v, 0] - pos[b, a, 0]
                dy = pos[b, v, 1] - pos[b, a, 1]
                d_self = np.sqrt(dx * dx + dy * dy) - unit_floats[CF_RADIUS, v]
                if d_self <= unit_floats[CF_SPLASHR, a] and enemy_pair[a, v] and unit_ints[CI_AIR, v] == 0 and alive0[v]:
                    raw[v] += dmg[a, v]
                    nh[v] += ONE
        elif sim_flags[FL_LINE] and unit_ints[CI_SPLASH, a] == SPLASH_LINE and fire[a]:
            fx = tpx[a] - pos[b, a, 0]
            fy = tpy[a] - pos[b, a, 1]
            fn = np.sqrt(fx * fx + fy * fy)
            fn = fn if fn > EPS else EPS
            fx = fx / fn
            fy = fy / fn
            att = unit_floats[CF_ATTACKS, a]
            for v in range(U):
                rx = pos[b, v, 0] - tpx[a]
                ry = pos[b, v, 1] - tpy[a]
                along = rx * fx + ry * fy
                perp = rx * -fy + ry * fx
                r_v = unit_floats[CF_RADIUS, v]
                in_beam = abs(along) <= BEAM_HW + r_v and abs(perp) <= BEAM_HL + r_v
                if in_beam and enemy_pair[a, v] and unit_ints[CI_AIR, v] == 0 and alive0[v]:
                    raw[v] += att * dmg[a, v]
                    nh[v] += att
        else:
            raw[d_t] += per * dmg[a, d_t]
            nh[d_t] += per
        if per > ZERO and a > hit_by[d_t]:
            hit_by[d_t] = a


@numba.njit(**STAGE)
def _apply_damage(b, shield, health, loops_since_damage, last_attacker, unit_floats, raw, nh, hit_by):
    """``Dynamics._apply_damage`` for env ``b``: ``raw [U]`` damage in ``nh [U]`` hits per victim, shields
    first, then HP minus armour per hit (floor 0.5); ``hit_by [U]`` the last attacker per victim (-1: none)."""
    for v in range(raw.shape[0]):
        r = raw[v]
        n_hits = nh[v]
        shield_v = shield[b, v]
        absorbed = min(shield_v, r)
        rest = r - absorbed
        if rest > ZERO:  # (k, two divisions, is only needed here)
            mean_hit = r / max(n_hits, ONE)
            k = min(np.ceil(rest / max(mean_hit, EPS) - CEIL_SLACK), n_hits)
            hp_loss = max(rest - unit_floats[CF_ARMOR, v] * k, HALF * k)
        else:
            hp_loss = ZERO
        h = health[b, v] - hp_loss
        shield[b, v] = shield_v - absorbed
        health[b, v] = h if h > ZERO else ZERO
        if r > ZERO:
            loops_since_damage[b, v] = ZERO
            if hit_by[v] >= 0:
                last_attacker[b, v] = hit_by[v]


@numba.njit(**STAGE)
def _bursts(b, health, unit_ints, alive0, direct, amt, burst):
    """The end of ``Dynamics._fire`` for env ``b`` (maps with banelings): banelings that exploded by their
    attack die; ``burst [U]`` is set to the ones this tick's damage killed, whose bursts
    ``_splash_hits`` adds next (with no other hits: ``amt`` is zeroed)."""
    for u in range(burst.shape[0]):
        suicide = unit_ints[CI_SPLASH, u] == SPLASH_SUICIDE
        exploded = direct[u] and suicide
        if exploded:
            health[b, u] = ZERO
        burst[u] = alive0[u] and suicide and not exploded and health[b, u] <= ZERO
        amt[u] = ZERO


@numba.njit(**STAGE)
def _resolve_deaths(b, alive, health, shield, hits_left, burst_pending, unit_ints, sim_flags, alive0, direct, burst):
    """``Dynamics._resolve_deaths`` for env ``b``: units at HP <= 0 die; banelings killed by a burst and
    not burst themselves (by their attack, ``direct``, or killed by an attack, ``burst``) burst in the
    next tick. ``alive0``: ``alive`` at the tick's start."""
    for u in range(burst.shape[0]):
        died = alive0[u] and health[b, u] <= ZERO
        a_now = alive0[u] and health[b, u] > ZERO
        alive[b, u] = a_now
        m = ONE if a_now else ZERO
        health[b, u] = health[b, u] * m
        shield[b, u] = shield[b, u] * m
        hits_left[b, u] = hits_left[b, u] * m
        if sim_flags[FL_SUICIDE]:
            suicide = unit_ints[CI_SPLASH, u] == SPLASH_SUICIDE
            burst_pending[b, u] = died and suicide and not (burst[u] or (direct[u] and suicide))


@numba.njit(**STAGE)
def _heal(b, Lf, health, energy, alive, unit_floats, unit_ints, tgt, healing, inrng, amt):
    """``Dynamics._heal`` for env ``b``: medivacs heal their (biological, damaged, live) target, paying
    energy per HP (``amt [U]`` scratch)."""
    U = tgt.shape[0]
    for u in range(U):
        t = tgt[u]
        missing = unit_floats[CF_MAXHP, t] - health[b, t]
        missing = missing if missing > ZERO else ZERO
        heals = healing[u] and inrng[u] and alive[b, u]
        okh = heals and unit_ints[CI_BIO, t] != 0 and alive[b, t]
        a1 = min(unit_floats[CF_HEALRATE, u] * Lf, missing)
        a2 = min(a1, energy[b, u] / unit_floats[CF_HEALCOST_CL, u])
        amt[u] = a2 * (ONE if okh else ZERO)
        energy[b, u] = energy[b, u] - amt[u] * unit_floats[CF_HEALCOST, u]
    for u in range(U):
        health[b, tgt[u]] += amt[u]
    for u in range(U):
        health[b, u] = min(health[b, u], unit_floats[CF_MAXHP, u])


@numba.njit(**STAGE)
def _route_heading(b, pos, order_point, engage, tpx, tpy, unit_ints, sim_flags, gdist, edge_ok, nb_flat, nb_len, hx, hy):
    """``Dynamics._route_heading`` for env ``b`` (maps with ground routes): into ``hx``/``hy [U]`` the
    direction each unit walks, straight to its goal (its target where ``engage``, else its order
    point) when the shortest ground path between their cells is as short as on open ground, else toward
    the centre of the next cell on a shortest path (``_move`` reads it for the units that walk)."""
    W = sim_flags[FL_W]
    H = sim_flags[FL_H]
    cells = W * H
    for u in range(hx.shape[0]):
        px, py = pos[b, u, 0], pos[b, u, 1]
        gx = tpx[u] if engage[u] else order_point[b, u, 0]
        gy = tpy[u] if engage[u] else order_point[b, u, 1]
        hx[u] = gx - px
        hy[u] = gy - py
        if unit_ints[CI_ROUTER, u] == 0:
            continue
        ca, a_in = cell(px, py, W, H)
        cb, b_in = cell(gx, gy, W, H)
        d_ab = gdist[ca * cells + cb]
        ggx = F32(abs(ca // H - cb // H))
        ggy = F32(abs(ca % H - cb % H))
        octile = max(ggx, ggy) + OCTILE_DIAG * min(ggx, ggy)
        if not (np.isfinite(d_ab) and d_ab > octile + DETOUR_SLACK and a_in and b_in):
            continue
        best = INF32
        nxt = -1
        for k in range(8):  # (argmin: the first of the smallest; a NaN beats every number, as in torch)
            nb = ca + nb_flat[k]
            nb = min(max(nb, 0), cells - 1)
            if edge_ok[ca, k]:
                c = nb_len[k] + gdist[nb * cells + cb]
            else:
                c = INF32
            if nxt < 0 or c < best or (np.isnan(c) and not np.isnan(best)):
                best = c
                nxt = nb
        hx[u] = (F32(nxt // H) + CENTRE) - px
        hy[u] = (F32(nxt % H) + CENTRE) - py


@numba.njit(**STAGE)
def _move(
    b,
    Lf,
    pos,
    order_kind,
    order_point,
    alive,
    hits_left,
    unit_floats,
    unit_ints,
    sim_flags,
    tpx,
    tpy,
    gap,
    engage,
    inrng,
    chase,
    npx,
    npy,
):
    """The walk of ``Dynamics._move`` for env ``b``: into ``npx``/``npy [U]`` each unit's position after
    walking toward its target until in range, or toward its order point; ``_collide`` and ``_slide`` finish
    the move. On maps with ground routes ``npx``/``npy`` hold ``_route_heading``'s directions on entry."""
    route = sim_flags[FL_ROUTE] != 0
    for u in range(npx.shape[0]):
        busy = hits_left[b, u] > ZERO  # in the middle of an attack: stands still
        chase[u] = engage[u] and not inrng[u] and not busy
        e = engage[u]
        k = order_kind[b, u]
        walk = (
            alive[b, u]
            and unit_ints[CI_STATIC, u] == 0
            and (chase[u] or (not e and (k == ORDER_MOVE or k == ORDER_ATTACK_MOVE)))
        )
        px, py = pos[b, u, 0], pos[b, u, 1]
        if not walk and px != ZERO and py != ZERO:
            # step 0: the torch update adds heading / |heading| * 0 == +-0, which leaves a non-zero coordinate as it is
            npx[u] = px
            npy[u] = py
            if k == ORDER_MOVE and alive[b, u]:
                tx = order_point[b, u, 0] - px
                ty = order_point[b, u, 1] - py
                if np.sqrt(tx * tx + ty * ty) <= unit_floats[CF_SPEED, u] * Lf:
                    order_kind[b, u] = ORDER_NONE
            continue
        gx = tpx[u] if e else order_point[b, u, 0]
        gy = tpy[u] if e else order_point[b, u, 1]
        tx = gx - px
        ty = gy - py
        goal_dist = np.sqrt(tx * tx + ty * ty)
        hx, hy, hlen = tx, ty, goal_dist
        if route:
            hx, hy = npx[u], npy[u]
            hlen = np.sqrt(hx * hx + hy * hy)
        limit = gap[u] + EPS2 if e else goal_dist
        sp = unit_floats[CF_SPEED, u] * Lf
        step = min(sp, limit)
        step = step if step > ZERO else ZERO
        step = step * (ONE if walk else ZERO)
        hl_c = hlen if hlen > EPS else EPS
        npx[u] = px + hx / hl_c * step
        npy[u] = py + hy / hl_c * step
        if k == ORDER_MOVE and goal_dist <= sp and alive[b, u]:
            order_kind[b, u] = ORDER_NONE


@numba.njit(**STAGE)
def _collide(
    b, alive, unit_ints, collide_pair, rsum, r2far, npx, npy, tpx, tpy, bx, by, col, sweep, order, gl, pc, pj, ptx, pty
):
    """The collisions of ``Dynamics._move`` for env ``b``: into ``tpx``/``tpy [U]`` the push on each unit at
    its new position ``(npx, npy)`` (zero for static and dead units).

    The push is ``dynamics.tree_sum`` over j of the pair terms; only overlapping live pairs give non-zero
    terms, and up to two terms sum alike in any order, so the tree runs only for three or more. Each pair
    is measured once: j's dx and dy are -dx and -dy, so its d2, radius sum and hence w are the same floats
    as i's; the push on j is j's own (dx, dy) times that w. Sort and sweep: the live colliding units in
    order of x (``order`` keeps the last tick's order, so the insertion sort is short); once
    npx[j] - npx[i] > sweep, d2 > r2far[i, j] for j and every later unit (``collision_consts``), so those
    pairs are skipped exactly as the r2far test would."""
    U = npx.shape[0]
    P = bx.shape[0]
    G = 0
    sortable = True
    for a in range(U):
        i = order[a]
        pc[i] = 0
        if alive[b, i] and col[i]:
            x = npx[i]
            if not x == x:  # NaN: no order; measure every pair
                sortable = False
            c = G
            while c > 0 and npx[gl[c - 1]] > x:
                gl[c] = gl[c - 1]
                c -= 1
            gl[c] = i
            G += 1
    n_rest = G
    for a in range(U):  # the next tick starts from this order (units not in gl after it)
        i = order[a]
        if not (alive[b, i] and col[i]):
            gl[n_rest] = i
            n_rest += 1
    for a in range(U):
        order[a] = gl[a]
    for a in range(G):
        i = gl[a]
        xi = npx[i]
        yi = npy[i]
        for c in range(a + 1, G):
            j = gl[c]
            if sortable and npx[j] - xi > sweep:
                break
            if not collide_pair[i, j]:
                continue
            dx = xi - npx[j]
            dy = yi - npy[j]
            d2 = dx * dx + dy * dy
            if d2 > r2far[i, j]:  # certainly no overlap (r2far: (1.001 * radius sum)^2)
                continue
            dist = np.sqrt(d2)
            overlap = rsum[i, j] - dist
            if not overlap > ZERO:
                continue
            dcl = dist if dist > PUSH_MIN_DIST else PUSH_MIN_DIST
            w = overlap * HALF / dcl
            n = pc[i]
            pj[i, n] = j
            ptx[i, n] = dx * w
            pty[i, n] = dy * w
            pc[i] = n + 1
            n = pc[j]
            pj[j, n] = i
            ptx[j, n] = (npx[j] - xi) * w  # (j's own dx, not -dx: keeps the sign of a zero)
            pty[j, n] = (npy[j] - yi) * w
            pc[j] = n + 1
    for i in range(U):
        cnt = pc[i]
        if cnt == 0:
            sx, sy = ZERO, ZERO
        elif cnt == 1:
            sx, sy = ptx[i, 0], pty[i, 0]
        elif cnt == 2:
            sx, sy = ptx[i, 0] + ptx[i, 1], pty[i, 0] + pty[i, 1]
        else:  # ``dynamics.tree_sum`` over the P (a power of two) slots, j's term in slot j
            for k in range(P):
                bx[k] = ZERO
                by[k] = ZERO
            for k in range(cnt):
                bx[pj[i, k]] = ptx[i, k]
                by[pj[i, k]] = pty[i, k]
            h = P
            while h > 1:
                h //= 2
                for k in range(h):
                    bx[k] = bx[k] + bx[k + h]
                    by[k] = by[k] + by[k + h]
            sx, sy = bx[0], by[0]
        mov = ONE if (unit_ints[CI_STATIC, i] == 0 and alive[b, i]) else ZERO
        tpx[i] = sx * mov
        tpy[i] = sy * mov


@numba.njit(**STAGE)
def _slide(b, pos, unit_ints, sim_flags, pathing, level, cliff_walkable, npx, npy, tpx, tpy):
    """The end of ``Dynamics._move`` for env ``b``: each unit moves to its new position ``(npx, npy)`` plus
    its push ``(tpx, tpy)``, or slides along unwalkable cells (keeping the axis that stays walkable:
    ``Dynamics.can_stand``), within the map."""
    W = sim_flags[FL_W]
    H = sim_flags[FL_H]
    hi = F32(float(W) - 1e-3)
    hi_y = F32(float(H) - 1e-3)
    levels = sim_flags[FL_LEVELS] != 0
    cliffw = sim_flags[FL_CLIFFW] != 0
    for u in range(npx.shape[0]):
        nx = npx[u] + tpx[u]
        ny = npy[u] + tpy[u]
        ox, oy = pos[b, u, 0], pos[b, u, 1]
        air = unit_ints[CI_AIR, u] != 0
        if not (air or (nx == ox and ny == oy and ox != ZERO and oy != ZERO)):
            # (air: torch ors is_air in; standing still: every branch keeps (ox, oy)). Else the first of
            # (nx, ny), (nx, oy), (ox, ny) that Dynamics.can_stand accepts from (ox, oy), or (ox, oy).
            pick = -1
            for c in range(3):
                qx = ox if c == 2 else nx
                qy = oy if c == 1 else ny
                flat, inside = cell(qx, qy, W, H)
                ground = pathing[flat]
                if levels:
                    src, _ = cell(ox, oy, W, H)
                    ground = ground and abs(level[flat] - level[src]) < RAMP_MAX_STEP
                if cliffw and unit_ints[CI_CLIFFW, u]:
                    ground = cliff_walkable[flat]
                if inside and (ground or air):
                    pick = c
                    break
            if pick == 1:
                ny = oy
            elif pick == 2:
                nx = ox
            elif pick < 0:
                nx, ny = ox, oy
        pos[b, u, 0] = min(max(nx, ZERO), hi)
        pos[b, u, 1] = min(max(ny, ZERO), hi_y)


@numba.njit(**STAGE)
def _regenerate(b, Lf, shield, health, energy, alive, loops_since_damage, unit_floats, sim_flags):
    """``Dynamics._regenerate`` for env ``b``: shields after their delay, zerg life, medivac energy."""
    U = loops_since_damage.shape[1]
    if sim_flags[FL_SHIELD]:
        rate = F32(SHIELD_REGEN_RATE * sim_flags[FL_L])
        for u in range(U):
            if loops_since_damage[b, u] >= REGEN_DELAY and alive[b, u]:
                shield[b, u] = min(shield[b, u] + rate, unit_floats[CF_MAXSH, u])
    if sim_flags[FL_REGEN]:
        for u in range(U):
            if alive[b, u]:
                health[b, u] = min(health[b, u] + unit_floats[CF_LIFEREGEN, u] * Lf, unit_floats[CF_MAXHP, u])
    if sim_flags[FL_HEALER]:
        for u in range(U):
            if alive[b, u]:
                energy[b, u] = min(energy[b, u] + unit_floats[CF_EREGEN, u] * Lf, unit_floats[CF_EMAX, u])
    for u in range(U):
        loops_since_damage[b, u] = loops_since_damage[b, u] + Lf


@numba.njit(_nrt=False, **INNER, **JIT)
def advance(b0, b1, n_ticks, units, tables, terrain, sim_flags, scratch, sweep):
    """``n_ticks`` ticks of each env ``b0 .. b1 - 1`` (``Dynamics.advance``): targets and range, then the
    stages in the reference's order, on the :class:`UnitState` ``units`` in place, with the
    :class:`UnitTables` ``tables``, the :class:`MapTables` ``terrain``, the flags ``sim_flags``, the
    :class:`TickScratch` ``scratch`` and the sweep distance ``sweep`` (``tick_scratch``). The env and tick loops are inside and
    the state is indexed ``[b, u]`` (no row views), and it takes no reference counts (``_nrt=False``); its caller takes one
    per array at the call, shared by the threads of a threaded call, paid once per call here, not per
    env or tick. The groups are unpacked once, here, so that the stages read plain arrays.
    """
    (pos, health, shield, energy, cooldown, alive, order_kind, order_target, order_point, loops_since_damage, last_attacker,
     jitter_state, windup, windup_target, hits_left, missile_eta, missile_target, missile_hits,
     burst_pending) = units  # fmt: skip
    unit_floats, unit_ints, dmg, collide_pair, enemy_pair, rsum, r2far = tables[:3] + tables[4:]  # (can_target: the orders')
    pathing, level, cliff_walkable, gdist, edge_ok, nb_flat, nb_len = terrain
    sf, si = scratch.rows_f, scratch.rows_i
    tpx, tpy, gap, raw, nh, amt, npx, npy = sf[0], sf[1], sf[2], sf[3], sf[4], sf[5], sf[6], sf[7]
    tgt, alive0, engage, inrng, healing, last, hit_by, direct = si[0], si[1], si[2], si[3], si[4], si[5], si[6], si[7]
    boomv, burst, chase = si[8], si[9], si[10]
    bx, by, col, order, gl, pc, pj, ptx, pty = scratch[2:11]
    U = pos.shape[1]
    Lf = F32(sim_flags[FL_L])
    for b in range(b0, b1):
        for a in range(U):
            order[a] = a
        for _ in range(n_ticks):
            for u in range(U):
                alive0[u] = alive[b, u]
            for u in range(U):
                t = order_target[b, u] if order_target[b, u] > 0 else 0
                tgt[u] = t
                t_alive = alive0[t] and order_target[b, u] >= 0
                tpx[u] = pos[b, t, 0]
                tpy[u] = pos[b, t, 1]
                k = order_kind[b, u]
                e = alive0[u] and t_alive and (k == ORDER_ATTACK or k == ORDER_ATTACK_MOVE or k == ORDER_HEAL)
                engage[u] = e
                hea = e and k == ORDER_HEAL
                healing[u] = hea
                if e:  # (gap is read only where engage holds: range test, chase limit)
                    reach = unit_floats[CF_HRANGE, u] if hea else unit_floats[CF_WRANGE, u]
                    dx = tpx[u] - pos[b, u, 0]
                    dy = tpy[u] - pos[b, u, 1]
                    n = np.sqrt(dx * dx + dy * dy)
                    gap[u] = n - unit_floats[CF_RADIUS, u] - unit_floats[CF_RADIUS, t] - reach
                    inrng[u] = gap[u] <= EPS
                else:
                    inrng[u] = False
            # attacks (Dynamics._fire)
            _fire(
                b, pos, cooldown, jitter_state, windup, windup_target, hits_left, missile_eta, missile_target, missile_hits,
                burst_pending, order_target, unit_floats, unit_ints, sim_flags, tgt, tpx, tpy, alive0, engage, healing, inrng,
                direct, last, amt, boomv,
            )  # fmt: skip
            _splash_hits(b, pos, unit_floats, unit_ints, dmg, enemy_pair, sim_flags, tpx, tpy, alive0, direct, boomv, last,
                         amt, raw, nh, hit_by)  # fmt: skip
            _apply_damage(b, shield, health, loops_since_damage, last_attacker, unit_floats, raw, nh, hit_by)
            # banelings killed by this damage burst at once (theirs is applied without a last attacker)
            if sim_flags[FL_SUICIDE]:
                _bursts(b, health, unit_ints, alive0, direct, amt, burst)
                _splash_hits(b, pos, unit_floats, unit_ints, dmg, enemy_pair, sim_flags, tpx, tpy, alive0, burst, burst, last,
                             amt, raw, nh, hit_by)  # fmt: skip
                _apply_damage(b, shield, health, loops_since_damage, last_attacker, unit_floats, raw, nh, hit_by)
            _resolve_deaths(b, alive, health, shield, hits_left, burst_pending, unit_ints, sim_flags, alive0, direct, burst)
            if sim_flags[FL_HEALER]:
                _heal(b, Lf, health, energy, alive, unit_floats, unit_ints, tgt, healing, inrng, amt)
            # movement (Dynamics._move)
            if sim_flags[FL_ROUTE]:
                _route_heading(
                    b, pos, order_point, engage, tpx, tpy, unit_ints, sim_flags, gdist, edge_ok, nb_flat, nb_len, npx, npy
                )
            _move(b, Lf, pos, order_kind, order_point, alive, hits_left, unit_floats, unit_ints, sim_flags, tpx, tpy, gap,
                  engage, inrng, chase, npx, npy)  # fmt: skip
            _collide(b, alive, unit_ints, collide_pair, rsum, r2far, npx, npy, tpx, tpy, bx, by, col, sweep, order, gl, pc,
                     pj, ptx, pty)  # fmt: skip
            _slide(b, pos, unit_ints, sim_flags, pathing, level, cliff_walkable, npx, npy, tpx, tpy)
            _regenerate(b, Lf, shield, health, energy, alive, loops_since_damage, unit_floats, sim_flags)


@numba.njit(**JIT)
def ticks_range(b0, b1, n_ticks, units, tables, terrain, sim_flags, unit_kind, kinds):
    """``n_ticks`` ticks of envs ``b0 .. b1 - 1``, with scratch allocated once (per-env tables with
    ``sim_flags[FL_PER_ENV]``: gathered for each env by ``env_tables``, then that env's ticks). ``units``,
    ``tables``, ``terrain``, ``kinds``: a :class:`UnitState`, :class:`UnitTables`, :class:`MapTables`
    and :class:`KindTables` as plain tuples (``numba.state``); ``unit_kind``: ``WorldState.unit_kind``."""
    s, t, m = UnitState(*units), UnitTables(*tables), MapTables(*terrain)
    w = tick_scratch(t.collide_pair, t.r2far)
    sweep = w.sweep
    if sim_flags[FL_PER_ENV]:
        k = KindTables(*kinds)
        et, col = env_unit_tables(t.enemy_pair), w.col
        for b in range(b0, b1):
            sweep = gather_env_tables(b, unit_kind, sim_flags, k, et, col)
            advance(b, b + 1, n_ticks, s, et, m, sim_flags, w, sweep)
        return
    advance(b0, b1, n_ticks, s, t, m, sim_flags, w, sweep)


# The whole batch in the calling thread; ``TickKernel.ticks`` gives chunks of envs to ``ticks_range``
# on threads instead (``runtime.chunks``).
@numba.njit(**JIT)
def ticks_serial(n_ticks, n_chunks, units, tables, terrain, sim_flags, unit_kind, kinds):
    ticks_range(0, units[0].shape[0], n_ticks, units, tables, terrain, sim_flags, unit_kind, kinds)


# ------------------------------------------------------------------------------------------ driver
PARALLEL_MIN_ENVS = 64
"""Batches of at least this many envs may run on ``numba.get_num_threads()`` threads (one chunk of envs
each, ``runtime.chunks``; ``runtime.schedule`` picks serial or threaded by measured time); smaller ones
in the calling thread. Waking a pool thread costs about 60-100 us on the 2-core machine (measured: a
trivial ``run_chunks`` of 2 chunks, 65-106 us), so on an idle machine 2 threads ran the 2s3z step at
0.63-0.66x the serial call at 32 envs, 0.89-1.07x at 64, 1.23-1.28x at 128 and 1.52-1.57x at 256
(docs/speed.md, "Threads inside the numba step", which gives the one-off script's command)."""


def tick_kernel_supported(table: UnitTable) -> str | None:
    """Why the numba tick kernel cannot reproduce the torch rules for ``table`` (``None``: it can).

    The kernel sums a tick's damage per victim in its own order; that equals the torch sums only
    while every per-hit damage is a whole number (exact in float32 in any order), as in SC2's data.
    A SMACv2 scenario table is judged by its per-kind table (every roster it can hold).
    """
    if table.kinds is not None:
        table = table.kinds
    dv = table.damage_vs.detach().cpu().numpy().astype(np.float64)
    if not np.all(dv == np.round(dv)) or float(np.abs(dv).max(initial=0.0)) * 64 * 64 > 2**24:
        return "per-hit damage values are not whole numbers (damage sums would depend on summation order)"
    att = table.attacks.detach().cpu().numpy().astype(np.float64)
    if not np.all(att == np.round(att)):
        return "hits per attack are not whole numbers"
    return None


class TickKernel:
    """The compiled orders and tick stages for one ``SMACSim`` (CPU tensors only).

    Args:
        dynamics: the simulator's ``Dynamics`` (its tables and terrain are copied into flat arrays).
        enemy_ai: the simulator's ``EnemyAI``.
        n_agents: ``N``.
        move_dirs: ``[6, 2]`` float32 move directions of SMAC's actions 0..5 (``rules.actions.MOVE_DIRS``).
        n_actions_no_attack: the first target action (6; SMACv2 ``conic_fov``: 18).
        fov_dirs: ``[K, 2]`` float32 look directions of the actions ``6 .. 5 + K`` (SMACv2
            ``conic_fov``, ``SMACv2Features._fov_dirs``), or ``None`` (no look actions).

    A SMACv2 scenario (``dynamics.t.kinds`` set) has per-env tables that change at every reset: the
    kernel keeps the per-kind tables (``kind_floats``, ``kind_ints``, ``kind_dmg``, ``kind_can_target``, built like a
    v1 roster's from ``Dynamics`` and ``EnemyAI`` objects on the kinds table) and gathers each env's tables from
    ``WorldState.unit_kind`` at every call (``env_tables``), so nothing is refreshed at resets.

    Raises:
        ValueError: a table the kernel cannot reproduce bit for bit (``tick_kernel_supported``) or
            tensors on a non-CPU device.
    """

    def __init__(
        self,
        dynamics: Dynamics,
        enemy_ai: EnemyAI,
        n_agents: int,
        move_dirs: torch.Tensor,
        n_actions_no_attack: int = NO_ATTACK,
        fov_dirs: torch.Tensor | None = None,
    ):
        t = dynamics.t
        why = tick_kernel_supported(t)
        if why is not None:
            raise ValueError(f"the numba tick kernel cannot run this roster: {why}")
        if dynamics.pathing.device.type != "cpu":
            raise ValueError(f"the numba tick kernel runs on CPU tensors, got device {dynamics.pathing.device}")
        U = len(t.names)
        N = n_agents
        self.per_env = t.kinds is not None
        if self.per_env:
            kt = t.kinds
            T = len(kt.names) // 2
            kdyn = Dynamics(kt, dynamics.pathing, dynamics.L)  # the per-kind derived flags (missile, spaced, cliff walker)
            kai = EnemyAI(kt, T)
            self.kind_floats, self.kind_ints, self.kind_dmg, self.kind_can_target = unit_tables(kdyn, kai, T)
            self.n_kinds = T
            # per-env tables are gathered inside the kernels; these are shape and type placeholders
            self.unit_floats, self.unit_ints = np.zeros((NCF, U), np.float32), np.zeros((NCI, U), np.int64)
            self.dmg = np.zeros((U, U), np.float32)
            self.can_target = np.zeros((U, U), np.bool_)
            self.collide_pair = np.zeros((U, U), np.bool_)
            self.rsum = np.zeros((U, U), np.float32)
        else:
            self.unit_floats, self.unit_ints, self.dmg, self.can_target = unit_tables(dynamics, enemy_ai, N)
            self.kind_floats, self.kind_ints = np.zeros((NCF, 1), np.float32), np.zeros((NCI, 1), np.int64)
            self.kind_dmg, self.kind_can_target = np.zeros((1, 1), np.float32), np.zeros((1, 1), np.bool_)
            self.n_kinds = 0
            self.collide_pair = dynamics.collide_pair.detach().cpu().numpy().copy()
            self.rsum = as_f32(dynamics._radius_sum).copy()
        self.enemy_pair = dynamics.enemy_pair.detach().cpu().numpy().copy()
        self.r2far = ((self.rsum.astype(np.float64) * 1.001) ** 2).astype(np.float32)
        self.pathing = dynamics._flat_pathing.detach().cpu().numpy().astype(np.bool_).copy()
        self.level = dynamics._flat_level.detach().cpu().numpy().astype(np.int64).copy()
        self.cliff_walkable = dynamics._flat_cliff_walkable.detach().cpu().numpy().astype(np.bool_).copy()
        if dynamics._route:
            self.gdist = as_f32(dynamics._dist).copy()
            self.edge_ok = dynamics._edge_ok.detach().cpu().numpy().astype(np.bool_).copy()
            self.nb_flat = as_i64(dynamics._nb_flat).copy()
            self.nb_len = as_f32(dynamics._nb_len).copy()
        else:
            self.gdist = np.zeros(1, np.float32)
            self.edge_ok = np.zeros((1, 8), np.bool_)
            self.nb_flat = np.zeros(8, np.int64)
            self.nb_len = np.zeros(8, np.float32)
        self.move_dirs = as_f32(move_dirs).copy()
        self.fov_dirs = np.zeros((1, 2), np.float32) if fov_dirs is None else as_f32(fov_dirs).copy()
        sim_flags = np.zeros(NFL, np.int64)
        sim_flags[FL_L] = dynamics.L
        sim_flags[FL_W], sim_flags[FL_H] = dynamics.map_w, dynamics.map_h
        sim_flags[FL_LEVELS] = dynamics._has_levels
        sim_flags[FL_CLIFFW] = dynamics._any_cliff_walker
        sim_flags[FL_ROUTE] = dynamics._route
        sim_flags[FL_LINE] = dynamics.has_line
        sim_flags[FL_SUICIDE] = dynamics.has_suicide
        sim_flags[FL_HEALER] = dynamics.has_healer
        sim_flags[FL_MISSILE] = dynamics.has_missile
        sim_flags[FL_REGEN] = dynamics.has_regen
        sim_flags[FL_SHIELD] = dynamics.has_shield
        sim_flags[FL_N] = N
        sim_flags[FL_ATTACK_ALLIES] = enemy_ai.attack_allies
        sim_flags[FL_AI_HEALER] = enemy_ai.has_healer
        sim_flags[FL_ATTACK_CLOSEST] = enemy_ai.attack_closest
        sim_flags[FL_NNA] = n_actions_no_attack
        sim_flags[FL_NFOV] = 0 if fov_dirs is None else fov_dirs.shape[0]
        sim_flags[FL_PER_ENV] = self.per_env
        sim_flags[FL_T] = self.n_kinds
        self.sim_flags = sim_flags
        self.L = dynamics.L
        # the kernels' argument groups (numba.state), made once; plain tuples for the call (see numba.state)
        self.tables = (
            self.unit_floats, self.unit_ints, self.dmg, self.can_target, self.collide_pair, self.enemy_pair, self.rsum,
            self.r2far,
        )  # fmt: skip
        self.kinds = (self.kind_floats, self.kind_ints, self.kind_dmg, self.kind_can_target)
        self.terrain = (self.pathing, self.level, self.cliff_walkable, self.gdist, self.edge_ok, self.nb_flat, self.nb_len)
        self._key: tuple | None = None
        self._arrays: tuple = ()

    def __getstate__(self) -> dict:
        # the cached views alias the state tensors of this process; a copy or unpickled sim re-derives them
        return {**self.__dict__, "_key": None, "_arrays": ()}

    def kind_consts(self) -> tuple:
        """``(kind_floats, kind_ints, kind_dmg, kind_can_target)``: the per-kind tables the kernels gather from
        (placeholders on v1 maps)."""
        return self.kind_floats, self.kind_ints, self.kind_dmg, self.kind_can_target

    def check_kinds(self, unit_kind: np.ndarray) -> None:
        """``ValueError`` unless every ``unit_kind [B, U]`` entry indexes the kind tables (``0 <= k < T``);
        the kernels index without bounds checks. Nothing to check on v1 maps."""
        if not self.per_env or unit_kind.size == 0:
            return
        lo, hi = int(unit_kind.min()), int(unit_kind.max())
        if lo < 0 or hi >= self.n_kinds:
            bad = np.argwhere((unit_kind < 0) | (unit_kind >= self.n_kinds))[0].tolist()
            raise ValueError(
                f"WorldState.unit_kind{bad} = {int(unit_kind[tuple(bad)])} is not a kind index in [0, {self.n_kinds})"
            )

    def _views(self, st: WorldState) -> tuple:
        """The NumPy views of the state fields the kernel reads and writes (cached while the tensors stay)."""
        tensors = tuple(getattr(st, n) for n in STATE_FIELDS)
        key = self._key
        if key is not None and all(a is b for a, b in zip(tensors, key, strict=True)):
            return self._arrays
        arrays = []
        for name, x in zip(STATE_FIELDS, tensors, strict=True):
            want = STATE_DTYPES.get(name, torch.float32)
            if x.device.type != "cpu" or x.dtype != want:
                raise ValueError(
                    f"WorldState.{name} must be a CPU {want} tensor for the numba kernel, got {x.dtype} on {x.device}"
                )
            if not x.is_contiguous() or x.requires_grad:
                x = x.detach().contiguous()
                setattr(st, name, x)
            arrays.append(x.numpy())
        self._key = tuple(getattr(st, n) for n in STATE_FIELDS)
        self._arrays = tuple(arrays)
        return self._arrays

    @staticmethod
    def _extra(st: WorldState, name: str, dtype: torch.dtype) -> np.ndarray:
        """A writable NumPy view of ``st.<name>`` (made contiguous in ``st`` first)."""
        x = getattr(st, name)
        if x.device.type != "cpu" or x.dtype != dtype:
            raise ValueError(
                f"WorldState.{name} must be a CPU {dtype} tensor for the numba kernel, got {x.dtype} on {x.device}"
            )
        if not x.is_contiguous() or x.requires_grad:
            x = x.detach().contiguous()
            setattr(st, name, x)
        return x.numpy()

    @staticmethod
    def _chunks(B: int) -> tuple[int, bool]:
        """``(chunks, threaded)`` for ``B`` envs: one chunk per Numba thread from ``PARALLEL_MIN_ENVS`` up."""
        if B < PARALLEL_MIN_ENVS:
            return 1, False
        n = min(B, kernel_threads())
        return n, n > 1

    def orders(self, st: WorldState, actions: torch.Tensor) -> None:
        """Orders stage in place: ``actions [B, N]`` int64 (checked by ``SMACSim``), then the enemy AI."""
        v = self._views(st)
        uk = self._extra(st, "unit_kind", torch.int64)
        self.check_kinds(uk)
        fov = self._extra(st, "fov_dir", torch.float32)
        a = actions if actions.is_contiguous() else actions.contiguous()
        n, par = self._chunks(v[0].shape[0])
        args = (a.numpy(), v, fov, self.tables, self.move_dirs, self.fov_dirs, self.sim_flags, uk, self.kinds)
        if par:
            run_chunks(lambda lo, hi: orders_range(lo, hi, *args), v[0].shape[0], n)
        else:
            orders_serial(n, *args)

    def ticks(self, st: WorldState, n_ticks: int) -> None:
        """Run ``n_ticks`` ticks of ``loops_per_tick`` game loops in place (``Dynamics.advance`` each)."""
        v = self._views(st)
        uk = self._extra(st, "unit_kind", torch.int64)
        self.check_kinds(uk)
        n, par = self._chunks(v[0].shape[0])
        args = (v, self.tables, self.terrain, self.sim_flags, uk, self.kinds)
        if par:
            run_chunks(lambda lo, hi: ticks_range(lo, hi, n_ticks, *args), v[0].shape[0], n)
        else:
            ticks_serial(n_ticks, n, *args)


__all__ = ["PARALLEL_MIN_ENVS", "TickKernel", "advance", "tick_kernel_supported"]
