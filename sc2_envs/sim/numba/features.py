"""The observe stage of ``SMACSim``'s step as compiled CPU kernels (Numba), for SMAC v1 maps and SMACv2 scenarios.

The torch reference is ``sim.rules.features`` (``SMACFeatures.game_result``, ``reward``, ``avail_actions``,
``obs``, ``state`` and the shared functions beside it) and ``sim.rules.features_v2`` (``SMACv2Features``:
its ``_cone_angle``, ``update_tags`` and the same five). Both are restated here once, as loops over envs,
agents and units, with the roster switch in the tables: a SMAC v1 map passes one table row per unit, a
SMACv2 scenario one row per unit kind, looked up per env through ``WorldState.unit_kind``
(``_unit_row``); per-agent sight and shoot ranges are table columns (``C_SIGHT``, ``C_SHOOT``: 9 and 6 on
every SMAC v1 row). The family is the kernels' first argument ``v2``, a compile-time constant: each
family's driver (``_OBSERVE_SERIAL``, ``step._STEP_RANGE``) passes it as a literal, so ``step_env`` and
``observe_env`` are compiled once per family from this one source, and a SMAC v1 map's code holds no
roster look-up, cone, look direction, own position or enemy tags (SMACv2's), nor a SMACv2 scenario's the
reserved timestep slot (SMAC v1's). The options within a family are values in ``flags`` (``F_*``):
``conic_fov`` and ``obs_own_pos``, SMAC's feature and reward options, which medivac rule ends a battle
(SMAC's MMM maps or SMACv2's terran scenarios). ``features_v2`` builds a scenario's tables
(``v2_consts``) and its kernel class.

Bit equality with the torch path is by construction, not by tolerance: every value is computed with the
same IEEE operations in the same order and precision (float64 for distances and the reward, float32
elsewhere; no ``fastmath``, so no reassociation or fused multiply-adds), including the multiplications
by the visibility and alive masks that produce ``-0.0`` for negative offsets of dead or hidden units.
Two places of the torch reference were written for this without changing any SMAC value: distances are
``sqrt(dx*dx + dy*dy)`` rather than ``torch.hypot`` (hypot implementations differ by an ulp), and the
reward's per-side sums use ``cumsum`` (a defined left-to-right order; ``sum`` reorders with the vector
width), which ``_reward`` repeats from each side's first unit. ``tests/test_kernel_observe.py`` and
``tests/test_kernel_v2.py`` check the equality on every map, scenario and feature option, and the
golden SMAC and SMACv2 vectors run through both paths.

Compilation: the kernels are compiled on first use (several seconds) and cached on disk by Numba
(``cache=True``); later processes load them in well under a second.

Layout, beside ``sim.rules.features`` / ``features_v2``: ``step_env`` is ``game_result`` (``_game_result``)
and ``reward`` (``_reward``, the shared ``battle_reward``) plus the step bookkeeping; ``observe_env`` is
``geometry`` with ``_in_cone`` (``_geometry``, ``_cone_angle``), ``avail_actions`` (``_avail_actions``),
``obs`` (``_obs``: ``update_tags`` as ``_update_tags``, ``move_block`` as ``_move_block``, the enemy and
ally rows of ``unit_columns`` / ``ally_block`` as ``_unit_block``, the own block as ``_own_block``) and
``state`` (``_state``, the shared ``state_vector``); ``ObserveKernel`` drives them over a batch, and
``sim.numba.step`` calls ``step_env`` and ``observe_env`` in its fused step.
"""

from __future__ import annotations

import math
import operator
from typing import NamedTuple

import numba
import numpy as np
import torch

from sc2_envs.sim.numba.state import INNER, JIT, STATE_FIELDS, EpisodeState, UnitState
from sc2_envs.sim.rules.features import SHOOT_RANGE, SIGHT_RANGE, SMACFeatures
from sc2_envs.sim.runtime.chunks import kernel_threads, run_env_ids
from sc2_envs.sim.state import WorldState

SCRATCH_PAD = 128
"""Bytes kept free on either side of each per-range scratch array (two cache lines: the line and the
one the hardware prefetches beside it)."""

PARALLEL_MIN_ENVS = 64
"""Batches of at least this many envs run in chunks on threads (``runtime.chunks``); smaller ones in
the calling thread, which saves the threads' wake-up (tens of microseconds) at B = 1."""

# indices into the int64 ``flags`` array the kernels take
(
    F_N,
    F_E,
    F_A,
    F_NNA,  # actions before the targets: 6, or 18 with conic_fov
    F_NFOV,  # look actions (conic_fov)
    F_NTARGETS,
    F_UTB,
    F_T,  # unit kinds per side (SMACv2); 0 on a SMAC v1 map
    F_SHIELD_A,
    F_SHIELD_E,
    F_OBS_ALL_HEALTH,
    F_OWN_HEALTH,
    F_OBS_LAST_ACTION,
    F_OBS_PATHING,
    F_OBS_HEIGHT,
    F_OBS_TIMESTEP,
    F_OBS_INSTEAD_OF_STATE,
    F_STATE_LAST_ACTION,
    F_STATE_TIMESTEP,
    F_CONIC,
    F_OWN_POS,
    F_HAS_HEALER,
    F_MEDIVAC_RULE,
    F_REWARD_SPARSE,
    F_REWARD_ONLY_POSITIVE,
    F_REWARD_CLIP_REGEN,
    F_REWARD_SCALE,
    F_EPISODE_LIMIT,
    F_MAP_X,
    F_MAP_Y,
    F_COUNT,
) = range(31)

# ``flags[F_MEDIVAC_RULE]``: no medivac rule, SMAC's MMM maps, SMACv2's terran scenarios
MEDIVAC_NONE, MEDIVAC_MMM, MEDIVAC_TERRAN = range(3)

# indices into the float64 ``fparams`` array
(
    P_DEATH_VALUE,
    P_WIN,
    P_DEFEAT,
    P_NEG_SCALE,
    P_DEATH_NEG,
    P_SCALE_DIV,  # max_reward / reward_scale_rate of a SMAC v1 map
    P_SCALE_RATE,  # reward_scale_rate (SMACv2 divides by each env's max_reward / rate)
    P_TAN_HALF_CONE,
    P_CONE_EPS,
    P_COUNT,
) = range(10)

# columns of the float32 unit table ``table [rows, C_COUNT + utb]``; the type one-hot follows. Rows:
# the units of a SMAC v1 map, or a SMACv2 scenario's ally kinds then enemy kinds (``_unit_row``).
(
    C_MAX_HEALTH,
    C_MAX_SHIELD_SAFE,
    C_HAS_SHIELD,
    C_CD_NORM,
    C_USES_ENERGY,
    C_HEALABLE,
    C_HEALER,
    C_MEDIVAC,
    C_SIGHT,
    C_SHOOT,
    C_COUNT,
) = range(11)

_ONE = np.float32(1.0)
_ZERO = np.float32(0.0)


# ------------------------------------------------------------------------------------------------
# per-env bodies. ``step_env`` and ``observe_env`` take no reference counts (``_nrt=False``: they allocate
# nothing, and their callers hold every array for the call) and their parts are inlined into them, so
# neither their arguments nor the parts' count per env, unit or (agent, unit) pair: with reference
# counting on, every inlined call counts its array arguments (atomic operations, which the threads of a
# large batch contend for).


@numba.njit(inline="always", **JIT)
def _unit_row(b, u, unit_kind, N, T, per_env):
    """Unit ``u``'s row of the unit table: ``u`` on a SMAC v1 map; on a SMACv2 scenario its kind in env
    ``b``, plus ``T`` for enemies (``UnitTable.assign_kinds_``)."""
    if not per_env:
        return u
    return unit_kind[b, u] + (0 if u < N else T)


@numba.njit(inline="always", **JIT)
def _health_frac(health_u, shield_u, table, r):
    """``(health / max_health, shield / max_shield or 0)`` of one unit (table row ``r``), float32
    (``SMACFeatures._health_frac``, ``SMACv2Features._health_frac``)."""
    h = health_u / table[r, C_MAX_HEALTH]
    s = shield_u / table[r, C_MAX_SHIELD_SAFE] if table[r, C_HAS_SHIELD] != 0 else _ZERO
    return h, s


# -- game result and reward


@numba.njit(inline="always", **JIT)
def _game_result(v2, b, alive, unit_kind, table, flags):
    """``game_result`` of env ``b`` (``battle_result`` with the medivac rule of ``flags[F_MEDIVAC_RULE]``):
    ``(won, lost, draw)``. SMAC's MMM maps: lost also when no non-medivac ally is alive, won when the one
    enemy alive is a medivac; SMACv2's terran scenarios: lost as MMM, won when no non-medivac enemy is."""
    N, E, T = flags[F_N], flags[F_E], flags[F_T]
    n_a = 0
    n_e = 0
    fighter_a = False
    fighter_e = False
    medivac_e = False
    for u in range(N + E):
        if alive[b, u]:
            medivac = table[_unit_row(b, u, unit_kind, N, T, v2), C_MEDIVAC] != 0
            if u < N:
                n_a += 1
                fighter_a = fighter_a or not medivac
            else:
                n_e += 1
                fighter_e = fighter_e or not medivac
                medivac_e = medivac_e or medivac
    lost = n_a == 0 and n_e > 0
    won = n_a > 0 and n_e == 0
    rule = flags[F_MEDIVAC_RULE]
    if rule != MEDIVAC_NONE:
        lost = lost or not fighter_a
        won = won or ((n_e == 1 and medivac_e) if rule == MEDIVAC_MMM else not fighter_e)
    won = won and not lost
    draw = n_a == 0 and n_e == 0 and not lost and not won
    return won, lost, draw


@numba.njit(inline="always", **JIT)
def _reward(v2, b, health, shield, alive, prev_health, prev_shield, prev_alive, max_reward, flags, fparams, won, lost):
    """``reward`` of env ``b`` (``battle_reward``), float64 until the final float32: each side's sum left to
    right from its first unit (the torch code's ``cumsum``); scaled by ``max_reward / reward_scale_rate``,
    the map's or (SMACv2) env ``b``'s."""
    N, U = flags[F_N], flags[F_N] + flags[F_E]
    if flags[F_REWARD_SPARSE] != 0:
        rew = 1.0 if won else (-1.0 if lost else 0.0)
    else:
        d_enemy = 0.0
        d_ally = 0.0
        died_e = 0
        died_a = 0
        for u in range(U):
            tracked = prev_alive[b, u]
            died = tracked and not alive[b, u]
            prev_hs = np.float64(prev_health[b, u]) + np.float64(prev_shield[b, u])
            cur_hs = np.float64(health[b, u]) + np.float64(shield[b, u])
            lost_hs = (prev_hs if died else prev_hs - cur_hs) * (1.0 if tracked else 0.0)
            if u < N:
                d_ally = lost_hs if u == 0 else d_ally + lost_hs
                died_a += died
            else:
                d_enemy = lost_hs if u == N else d_enemy + lost_hs
                died_e += died
        delta_ally = fparams[P_NEG_SCALE] * d_ally
        delta_deaths = fparams[P_DEATH_VALUE] * np.float64(died_e)
        if flags[F_REWARD_ONLY_POSITIVE] != 0:
            d = d_enemy + delta_deaths
            if flags[F_REWARD_CLIP_REGEN] != 0:
                rew = 0.0 if d < 0.0 else d
            else:
                rew = abs(d)
        else:
            delta_deaths = delta_deaths - fparams[P_DEATH_NEG] * np.float64(died_a)
            rew = d_enemy + delta_deaths - delta_ally
        rew = rew + (fparams[P_WIN] if won else (fparams[P_DEFEAT] if lost else 0.0))
    if flags[F_REWARD_SCALE] != 0:
        if v2:
            rew = rew / (np.float64(max_reward[b]) / fparams[P_SCALE_RATE])
        else:
            rew = rew / fparams[P_SCALE_DIV]
    return np.float32(rew)


class ObserveTables(NamedTuple):
    """The tables of the observe kernels (``v1_consts``, ``features_v2.v2_consts``): ``table [rows,
    C_COUNT + utb]`` float32 (one row per unit, or per unit kind on a SMACv2 scenario), ``pathing`` and
    ``height`` ``[map_y, map_x]`` (the feature grids), ``move_dirs [4, 2]`` float64, ``obs_pts [n, 2]``
    int64 (the pathing/height sample offsets), ``flags [F_COUNT]`` int64 (``F_*``) and ``fparams
    [P_COUNT]`` float64 (``P_*``)."""

    table: np.ndarray
    pathing: np.ndarray
    height: np.ndarray
    move_dirs: np.ndarray
    obs_pts: np.ndarray
    flags: np.ndarray
    fparams: np.ndarray


_FLAGS = ObserveTables._fields.index("flags")  # (its position in the plain tuple)


@numba.njit(_nrt=False, **INNER, **JIT)
def step_env(v2, b, units, episode, actions, tables, reward, result):
    """Env ``b``: step counter, last action, game result and reward, then the previous-step snapshot
    (``SMACSim._stage_observe`` before the features); ``units``, ``episode``: the ``UnitState`` and
    ``EpisodeState`` (``numba.state``), ``actions [B, N]`` the applied actions, ``tables`` the
    :class:`ObserveTables`; ``result [3, B]`` (won, lost, draw), ``reward [B]``."""
    health, shield, alive = units.health, units.shield, units.alive
    prev_health, prev_shield, prev_alive, last_action, episode_steps = episode[:5]
    unit_kind, max_reward = episode.unit_kind, episode.max_reward
    table, flags, fparams = tables.table, tables.flags, tables.fparams
    N, U = flags[F_N], flags[F_N] + flags[F_E]
    episode_steps[b] += 1
    for i in range(N):
        last_action[b, i] = actions[b, i]
    won, lost, draw = _game_result(v2, b, alive, unit_kind, table, flags)
    result[0, b] = won
    result[1, b] = lost
    result[2, b] = draw
    reward[b] = _reward(v2, b, health, shield, alive, prev_health, prev_shield, prev_alive, max_reward, flags, fparams, won,
                        lost)  # fmt: skip
    for u in range(U):
        prev_health[b, u] = health[b, u]
        prev_shield[b, u] = shield[b, u]
        prev_alive[b, u] = alive[b, u]


# -- geometry and available actions


@numba.njit(**JIT)
def _cone_angle(dx, dy, fx, fy, tan_half, eps):
    """``SMACv2Features._cone_angle`` of one (agent, unit) pair (float64 inputs), without ``atan``."""
    pos = dx > 0
    xd = max(dx, eps) if pos else min(dx, -eps)
    a = dy / xd
    fxc = max(fx, eps) if pos else min(fx, -eps)
    bb = fy / fxc
    return abs(a - bb) < tan_half * (a * bb + 1.0)


@numba.njit(inline="always", **JIT)
def _geometry(v2, b, pos, unit_kind, fov_dir, table, flags, fparams, gdx, gdy, gd, see, shoot_ok):
    """``geometry`` of env ``b`` into ``gdx/gdy/gd [N, U]`` float64, and ``see [N, U]`` (within the agent's
    sight: distance ``< sight``, or SMACv2's cone ``_in_cone``) and ``shoot_ok [N, U]`` (within its shoot
    range: ``<=``, or the cone) bool."""
    N, E, T = flags[F_N], flags[F_E], flags[F_T]
    conic = v2 and flags[F_CONIC] != 0
    tan_half, eps = fparams[P_TAN_HALF_CONE], fparams[P_CONE_EPS]
    for i in range(N):
        ri = _unit_row(b, i, unit_kind, N, T, v2)
        sight = np.float64(table[ri, C_SIGHT])
        shoot = np.float64(table[ri, C_SHOOT])
        xi = np.float64(pos[b, i, 0])
        yi = np.float64(pos[b, i, 1])
        for u in range(N + E):
            dx = np.float64(pos[b, u, 0]) - xi
            dy = np.float64(pos[b, u, 1]) - yi
            d = math.sqrt(dx * dx + dy * dy)
            gdx[i, u] = dx
            gdy[i, u] = dy
            gd[i, u] = d
            if conic:
                ang = _cone_angle(dx, dy, np.float64(fov_dir[b, i, 0]), np.float64(fov_dir[b, i, 1]), tan_half, eps)
                see[i, u] = (not d > sight) and ang
                shoot_ok[i, u] = (not d > shoot) and ang
            else:
                see[i, u] = d < sight
                shoot_ok[i, u] = d <= shoot


@numba.njit(inline="always", **JIT)
def _avail_actions(v2, b, pos, alive, unit_kind, table, pathing, move_dirs, flags, shoot_ok, avail):
    """``avail_actions`` of env ``b`` into ``avail [B, N, n_actions]``: no-op only for the dead; stop;
    moves whose probe cell is on the map and pathable; the look actions (``conic_fov``); targets within
    shooting range and alive, or for a healer the live healable allies."""
    N, E, T, A = flags[F_N], flags[F_E], flags[F_T], flags[F_A]
    nna, nfov, nt = flags[F_NNA], flags[F_NFOV], flags[F_NTARGETS]
    SX, SY = flags[F_MAP_X], flags[F_MAP_Y]
    healers = flags[F_HAS_HEALER] != 0
    for i in range(N):
        if not alive[b, i]:
            avail[b, i, 0] = True
            for a in range(1, A):
                avail[b, i, a] = False
            continue
        avail[b, i, 0] = False
        avail[b, i, 1] = True
        xi = np.float64(pos[b, i, 0])
        yi = np.float64(pos[b, i, 1])
        for k in range(4):
            cx = int(xi + move_dirs[k, 0])  # truncation toward zero, as torch.trunc(...).to(int64)
            cy = int(yi + move_dirs[k, 1])
            avail[b, i, 2 + k] = cx >= 0 and cx < SX and cy >= 0 and cy < SY and pathing[cx, cy]
        for k in range(nfov):
            avail[b, i, 6 + k] = True
        healer = healers and table[_unit_row(b, i, unit_kind, N, T, v2), C_HEALER] != 0
        for c in range(nt):
            if healer:  # "heal ally c": a live healable ally in range
                ok = c < N and shoot_ok[i, c] and alive[b, c]
                ok = ok and table[_unit_row(b, c, unit_kind, N, T, v2), C_HEALABLE] != 0
            else:
                ok = c < E and shoot_ok[i, N + c] and alive[b, N + c]
            avail[b, i, nna + c] = ok


# -- observations


@numba.njit(inline="always", **JIT)
def _update_tags(b, alive, enemy_tag, rank, ranked, N, E, see, observed):
    """``SMACv2Features.update_tags`` of env ``b``: updates ``enemy_tag [B, E]`` in place and fills
    ``observed [N, E]``. ``rank [B, N]``: the agents' visiting order (``visit_rank``) if ``ranked``, else
    agent id order."""
    for j in range(E):
        t = enemy_tag[b, j]
        tc = t if t > 0 else 0
        if not (t >= 0 and alive[b, tc] and alive[b, N + j]):
            t = -1
        first_rank = N
        first_agent = -1
        for i in range(N):
            r = rank[b, i] if ranked else i
            if see[i, N + j] and alive[b, i] and r < first_rank:
                first_rank = r
                first_agent = i
        was = t >= 0
        for i in range(N):
            r = rank[b, i] if ranked else i
            observed[i, j] = was or first_rank <= r
        if not was:
            enemy_tag[b, j] = first_agent if first_rank < N else -1
        else:
            enemy_tag[b, j] = t


@numba.njit(inline="always", **JIT)
def _grid_around(b, i, o, al, grid, cx, cy, obs_pts, n, SX, SY, dst):
    """``grid`` (pathing or terrain height) at the first ``n`` of SMAC's surrounding points of cell
    ``(cx, cy)``, 1 outside the map, times ``al``, into ``dst[b, i, o:o + n]``. Returns the next column."""
    for k in range(n):
        px = cx + obs_pts[k, 0]
        py = cy + obs_pts[k, 1]
        v = _ONE
        if px >= 0 and px < SX and py >= 0 and py < SY:
            v = np.float32(grid[px, py])
        dst[b, i, o] = v * al
        o += 1
    return o


@numba.njit(inline="always", **JIT)
def _move_block(b, i, al, pos, avail, pathing, height, obs_pts, flags, dst):
    """``move_block`` of agent ``i`` into ``dst[b, i, :]``: the move actions' availability, then the
    pathing grid (8 points) and terrain height (9) around it when enabled. Returns the next column."""
    SX, SY = flags[F_MAP_X], flags[F_MAP_Y]
    for k in range(4):
        dst[b, i, k] = (_ONE if avail[b, i, 2 + k] else _ZERO) * al
    o = 4
    cx = int(np.float64(pos[b, i, 0]))
    cy = int(np.float64(pos[b, i, 1]))
    if flags[F_OBS_PATHING] != 0:
        o = _grid_around(b, i, o, al, pathing, cx, cy, obs_pts, 8, SX, SY, dst)
    if flags[F_OBS_HEIGHT] != 0:
        o = _grid_around(b, i, o, al, height, cx, cy, obs_pts, 9, SX, SY, dst)
    return o


@numba.njit(inline="always", **JIT)
def _unit_block(dst, b, i, o, first, d, dx, dy, norm, m, al, health_u, shield_u, table, r, utb, all_health, shield_on):
    """One enemy or ally row of agent ``i``'s observation from column ``o`` (``unit_columns`` and the
    one-hot): ``first`` (attackable / visible), distance, rel x, rel y (float64 / ``norm``, the agent's
    sight range), health and shield (``obs_all_health``), the type one-hot of table row ``r``; each
    times the mask ``m`` and the agent's ``al``. Returns the next column."""
    dst[b, i, o] = (first * m) * al
    dst[b, i, o + 1] = (np.float32(d / norm) * m) * al
    dst[b, i, o + 2] = (np.float32(dx / norm) * m) * al
    dst[b, i, o + 3] = (np.float32(dy / norm) * m) * al
    o += 4
    if all_health:
        h, s = _health_frac(health_u, shield_u, table, r)
        dst[b, i, o] = (h * m) * al
        o += 1
        if shield_on:
            dst[b, i, o] = (s * m) * al
            o += 1
    for t in range(utb):
        dst[b, i, o] = (table[r, C_COUNT + t] * m) * al
        o += 1
    return o


@numba.njit(inline="always", **JIT)
def _own_block(v2, dst, b, i, o, al, pos, health, shield, episode_steps, fov_dir, table, ri, flags):
    """Agent ``i``'s own block from column ``o``: health and shield, position / map size (SMACv2
    ``obs_own_pos``), look direction (``conic_fov``), type one-hot, then SMAC v1's reserved slot and the
    timestep (``obs_timestep_number``; the timestep is not masked by ``al``, as ``finish_obs``)."""
    if flags[F_OWN_HEALTH] != 0:
        h, s = _health_frac(health[b, i], shield[b, i], table, ri)
        dst[b, i, o] = h * al
        o += 1
        if flags[F_SHIELD_A] != 0:
            dst[b, i, o] = s * al
            o += 1
    if v2 and flags[F_OWN_POS] != 0:
        dst[b, i, o] = (pos[b, i, 0] / np.float32(flags[F_MAP_X])) * al
        dst[b, i, o + 1] = (pos[b, i, 1] / np.float32(flags[F_MAP_Y])) * al
        o += 2
    if v2 and flags[F_CONIC] != 0:
        dst[b, i, o] = fov_dir[b, i, 0] * al
        dst[b, i, o + 1] = fov_dir[b, i, 1] * al
        o += 2
    for t in range(flags[F_UTB]):
        dst[b, i, o] = table[ri, C_COUNT + t] * al
        o += 1
    if flags[F_OBS_TIMESTEP] != 0:
        if not v2:
            dst[b, i, o] = _ZERO * al  # SMAC's reserved slot, never written
            o += 1
        dst[b, i, o] = np.float32(np.float64(episode_steps[b]) / np.float64(flags[F_EPISODE_LIMIT]))


@numba.njit(_nrt=False, **INNER, **JIT)
def _obs(
    v2, b, pos, health, shield, alive, last_action, episode_steps, unit_kind, fov_dir, enemy_tag, rank, table, pathing,
    height, obs_pts, flags, avail, gdx, gdy, gd, see, observed, dst,
):  # fmt: skip
    """``obs`` of env ``b`` into ``dst [B, N, obs_size]`` (enemy tags first, ``_update_tags``, when on, in
    the visiting order ``rank [B, N]``, or agent id order if ``rank`` has no rows):
    ``[move | enemy | ally | own | timestep]`` in SMAC's layout, from ``avail`` of the same step and the
    ``_geometry`` scratch. A SMACv2 agent's enemy rows up to the last enemy it does not observe are zeros.
    Not inlined: ``observe_env`` calls it twice (the state of ``obs_instead_of_state``), and one compiled
    body keeps the first use's compile short; both calls pass arguments of the same types (no literal
    ``False``, no read-only array), so that body is compiled once."""
    N, E, T, A, utb = flags[F_N], flags[F_E], flags[F_T], flags[F_A], flags[F_UTB]
    nna = flags[F_NNA]
    tags = v2
    all_health = flags[F_OBS_ALL_HEALTH] != 0
    shield_a, shield_e = flags[F_SHIELD_A] != 0, flags[F_SHIELD_E] != 0
    if tags:
        _update_tags(b, alive, enemy_tag, rank, rank.shape[0] > 0, N, E, see, observed)
    for i in range(N):
        al = _ONE if alive[b, i] else _ZERO
        ri = _unit_row(b, i, unit_kind, N, T, v2)
        sr = np.float64(table[ri, C_SIGHT])
        last_unobs = -1
        if tags:
            for j in range(E):
                if not observed[i, j]:
                    last_unobs = j
        o = _move_block(b, i, al, pos, avail, pathing, height, obs_pts, flags, dst)
        for j in range(E):
            u = N + j
            seen = see[i, u] and alive[b, u] and (not tags or (observed[i, j] and j > last_unobs))
            first = _ONE if avail[b, i, nna + j] else _ZERO
            ru = _unit_row(b, u, unit_kind, N, T, v2)
            o = _unit_block(dst, b, i, o, first, gd[i, u], gdx[i, u], gdy[i, u], sr, _ONE if seen else _ZERO, al,
                            health[b, u], shield[b, u], table, ru, utb, all_health, shield_e)  # fmt: skip
        for u in range(N):  # the other agents in id order
            if u == i:
                continue
            m = _ONE if (see[i, u] and alive[b, u]) else _ZERO
            ru = _unit_row(b, u, unit_kind, N, T, v2)
            o = _unit_block(dst, b, i, o, _ONE, gd[i, u], gdx[i, u], gdy[i, u], sr, m, al, health[b, u], shield[b, u],
                            table, ru, utb, all_health, shield_a)  # fmt: skip
            if flags[F_OBS_LAST_ACTION] != 0:
                la = last_action[b, u]
                for a in range(A):
                    dst[b, i, o] = ((_ONE if la == a else _ZERO) * m) * al
                    o += 1
        _own_block(v2, dst, b, i, o, al, pos, health, shield, episode_steps, fov_dir, table, ri, flags)


# -- state


@numba.njit(inline="always", **JIT)
def _state(
    v2, b, pos, health, shield, energy, cooldown, alive, last_action, episode_steps, unit_kind, fov_dir, table, flags, state
):
    """``state`` of env ``b`` (``state_vector``) into ``state [B, state_size]``: per unit health, (allies)
    cooldown or energy over its normaliser, position relative to the map centre, shield, (SMACv2 allies
    with ``conic_fov``) look direction, type one-hot, dead units zeros; then the last actions and the
    timestep when enabled."""
    N, E, T, A, utb = flags[F_N], flags[F_E], flags[F_T], flags[F_A], flags[F_UTB]
    shield_a, shield_e = flags[F_SHIELD_A] != 0, flags[F_SHIELD_E] != 0
    conic = v2 and flags[F_CONIC] != 0
    cx, cy = np.float32(flags[F_MAP_X] / 2), np.float32(flags[F_MAP_Y] / 2)
    sx, sy = np.float32(flags[F_MAP_X]), np.float32(flags[F_MAP_Y])
    o = 0
    for u in range(N + E):
        al = _ONE if alive[b, u] else _ZERO
        ru = _unit_row(b, u, unit_kind, N, T, v2)
        h, s = _health_frac(health[b, u], shield[b, u], table, ru)
        state[b, o] = h * al
        o += 1
        if u < N:
            src = energy[b, u] if table[ru, C_USES_ENERGY] != 0 else cooldown[b, u]
            state[b, o] = (src / table[ru, C_CD_NORM]) * al
            o += 1
        state[b, o] = ((pos[b, u, 0] - cx) / sx) * al
        state[b, o + 1] = ((pos[b, u, 1] - cy) / sy) * al
        o += 2
        if (u < N and shield_a) or (u >= N and shield_e):
            state[b, o] = s * al
            o += 1
        if u < N and conic:
            state[b, o] = fov_dir[b, u, 0] * al
            state[b, o + 1] = fov_dir[b, u, 1] * al
            o += 2
        for t in range(utb):
            state[b, o] = table[ru, C_COUNT + t] * al
            o += 1
    if flags[F_STATE_LAST_ACTION] != 0:
        for i in range(N):
            la = last_action[b, i]
            for a in range(A):
                state[b, o] = _ONE if la == a else _ZERO
                o += 1
    if flags[F_STATE_TIMESTEP] != 0:
        state[b, o] = np.float32(np.float64(episode_steps[b]) / np.float64(flags[F_EPISODE_LIMIT]))


@numba.njit(_nrt=False, **INNER, **JIT)
def observe_env(v2, b, units, episode, rank, tables, obs, obs_state, state, avail, geo, ok, observed):
    """Env ``b``: available actions, observations (updating the enemy tags) and state, as
    ``SMACSim._stage_observe`` calls ``avail_actions``, ``obs`` and ``state``.

    ``units``, ``episode``: the ``UnitState`` and ``EpisodeState`` (``numba.state``), ``tables`` the
    :class:`ObserveTables`; ``obs [B, N, obs_size]``, ``state [B, state_size]``, ``avail [B, N, n_actions]``;
    ``obs_state``: ``state`` viewed as ``[B, N, obs_size]`` with ``obs_instead_of_state`` (the observations
    again, in agent id order, which advances SMACv2's tags again), else any array of ``obs``'s type;
    ``rank``: ``[B, N]`` visiting order of the enemy tags or ``[0, 0]`` for id order; the scratch
    ``geo [3, N, U]`` float64 (``_geometry``'s dx, dy, distance), ``ok [2, N, U]`` bool (see, shoot) and
    ``observed [N, E]`` bool (``feature_scratch``). The groups are unpacked once, here (no reference
    counts: ``_nrt=False``), so that the inlined parts read plain arrays.
    """
    pos, health, shield, energy, cooldown, alive = units[:6]
    last_action, episode_steps, unit_kind, fov_dir, enemy_tag = episode[3:8]
    table, pathing, height, move_dirs, obs_pts, flags, fparams = tables
    gdx, gdy, gd = geo[0], geo[1], geo[2]
    see, shoot_ok = ok[0], ok[1]
    _geometry(v2, b, pos, unit_kind, fov_dir, table, flags, fparams, gdx, gdy, gd, see, shoot_ok)
    _avail_actions(v2, b, pos, alive, unit_kind, table, pathing, move_dirs, flags, shoot_ok, avail)
    _obs(v2, b, pos, health, shield, alive, last_action, episode_steps, unit_kind, fov_dir, enemy_tag, rank, table,
         pathing, height, obs_pts, flags, avail, gdx, gdy, gd, see, observed, obs)  # fmt: skip
    if flags[F_OBS_INSTEAD_OF_STATE] != 0:
        # the tags in agent id order: ``rank`` without its rows (same type as ``rank``)
        _obs(v2, b, pos, health, shield, alive, last_action, episode_steps, unit_kind, fov_dir, enemy_tag, rank[:0], table,
             pathing, height, obs_pts, flags, avail, gdx, gdy, gd, see, observed, obs_state)  # fmt: skip
    else:
        _state(v2, b, pos, health, shield, energy, cooldown, alive, last_action, episode_steps, unit_kind, fov_dir, table,
               flags, state)  # fmt: skip


@numba.njit(inline="always", **JIT)
def feature_scratch(flags):
    """Per-range scratch of ``observe_env``: ``geo, ok, observed`` (uninitialised: ``_geometry`` and
    ``_update_tags`` write every entry of an env before it is read). Each lies inside an allocation with
    ``SCRATCH_PAD`` bytes or more on either side, so the scratch of two threads' ranges, written for every
    (agent, unit) pair, never shares a cache line (false sharing)."""
    N, E = flags[F_N], flags[F_E]
    U = N + E
    pg = SCRATCH_PAD // (8 * N * U) + 1  # rows of padding on either side
    po = SCRATCH_PAD // (N * U) + 1
    pt = SCRATCH_PAD // E + 1
    geo = np.empty((3 + 2 * pg, N, U), np.float64)[pg : pg + 3]
    ok = np.empty((2 + 2 * po, N, U), np.bool_)[po : po + 2]
    observed = np.empty((N + 2 * pt, E), np.bool_)[pt : pt + N]
    return geo, ok, observed


@numba.njit(inline="always", **JIT)
def obs_state_view(obs, state, flags):
    """``state`` as ``[B, N, obs_size]`` with ``obs_instead_of_state`` (``observe_env``'s ``obs_state``), else ``obs``."""
    if flags[F_OBS_INSTEAD_OF_STATE] != 0:
        return state.reshape((state.shape[0], obs.shape[1], obs.shape[2]))
    return obs


# ------------------------------------------------------------------------------------------------
# drivers: the envs of ``env_ids`` in the calling thread; ``ObserveKernel._run`` gives chunks of them
# to threads (``runtime.chunks``). One per family, ``V2`` a constant of its code (a closure over a bool,
# as ``step._make_step_range``), which it passes on: ``step_env`` and ``observe_env`` are compiled for
# the family (``v2`` typed as that literal), so a SMAC v1 map's code has no roster look-ups, cone or tags.
def _make_observe_range(V2: bool):
    def observe_range(env_ids, do_step, units, episode, rank, actions, tables, obs, obs_state, state, avail, reward,
                      result, geo, ok, observed):  # fmt: skip
        # the groups named and the per-env loop run without reference counts (``_nrt=False``; observe_serial
        # holds every array)
        s, e, t = UnitState(*units), EpisodeState(*episode), ObserveTables(*tables)
        for k in range(env_ids.shape[0]):
            b = env_ids[k]
            if do_step:
                step_env(V2, b, s, e, actions, t, reward, result)
            observe_env(V2, b, s, e, rank, t, obs, obs_state, state, avail, geo, ok, observed)

    # a name of its own per family: Numba's on-disk cache is keyed by the function's qualified name
    observe_range.__name__ = observe_range.__qualname__ = "_observe_range_v2" if V2 else "_observe_range_v1"
    return numba.njit(_nrt=False, **INNER, **JIT)(observe_range)


# module globals of observe_serial, not closure variables (see step._finish_v1: a closure over a dispatcher
# would miss Numba's on-disk cache in every new process)
_observe_range_v1 = _make_observe_range(False)
_observe_range_v2 = _make_observe_range(True)


def _make_observe_serial(V2: bool):
    def observe_serial(env_ids, do_step, units, episode, rank, actions, tables, obs, state, avail, reward, result):
        """``step_env`` (with ``do_step``) and ``observe_env`` of the envs ``env_ids``: ``units``, ``episode``
        a ``UnitState`` and ``EpisodeState`` (``numba.state``), ``tables`` an :class:`ObserveTables`, as
        plain tuples."""
        flags = tables[_FLAGS]
        geo, ok, observed = feature_scratch(flags)
        obs_state = obs_state_view(obs, state, flags)
        if V2:
            _observe_range_v2(env_ids, do_step, units, episode, rank, actions, tables, obs, obs_state, state, avail,
                              reward, result, geo, ok, observed)  # fmt: skip
        else:
            _observe_range_v1(env_ids, do_step, units, episode, rank, actions, tables, obs, obs_state, state, avail,
                              reward, result, geo, ok, observed)  # fmt: skip

    observe_serial.__name__ = observe_serial.__qualname__ = "_observe_serial_v2" if V2 else "_observe_serial_v1"
    return numba.njit(**JIT)(observe_serial)


_OBSERVE_SERIAL = {False: _make_observe_serial(False), True: _make_observe_serial(True)}


# ------------------------------------------------------------------------------------------------
# tables and the kernel class


def option_flags(features, flags: np.ndarray) -> None:
    """Fill the options ``SMACFeatures`` and ``SMACv2Features`` share (SMAC's keyword names) into ``flags``."""
    f, cfg, rcfg = features, features.cfg, features.rcfg
    flags[F_N], flags[F_E], flags[F_A], flags[F_UTB] = f.n_agents, f.n_enemies, f.n_actions, f.utb
    flags[F_OBS_ALL_HEALTH] = cfg.obs_all_health
    flags[F_OWN_HEALTH] = f.own_health
    flags[F_OBS_LAST_ACTION] = cfg.obs_last_action
    flags[F_OBS_PATHING] = cfg.obs_pathing_grid
    flags[F_OBS_HEIGHT] = cfg.obs_terrain_height
    flags[F_OBS_TIMESTEP] = cfg.obs_timestep_number
    flags[F_OBS_INSTEAD_OF_STATE] = cfg.obs_instead_of_state
    flags[F_STATE_LAST_ACTION] = cfg.state_last_action
    flags[F_STATE_TIMESTEP] = cfg.state_timestep_number
    flags[F_REWARD_SPARSE] = rcfg.reward_sparse
    flags[F_REWARD_ONLY_POSITIVE] = rcfg.reward_only_positive
    flags[F_REWARD_SCALE] = rcfg.reward_scale
    flags[F_EPISODE_LIMIT] = f.spec.episode_limit


def reward_params(rcfg) -> np.ndarray:
    """The float64 ``fparams`` of ``RewardConfig`` ``rcfg`` (the cone entries and ``P_SCALE_DIV`` left 0)."""
    fp = np.zeros(P_COUNT, dtype=np.float64)
    fp[P_DEATH_VALUE] = rcfg.reward_death_value
    fp[P_WIN] = float(rcfg.reward_win)
    fp[P_DEFEAT] = float(rcfg.reward_defeat)
    fp[P_NEG_SCALE] = rcfg.reward_negative_scale
    # the torch code evaluates reward_death_value * reward_negative_scale * count left to right
    fp[P_DEATH_NEG] = rcfg.reward_death_value * rcfg.reward_negative_scale
    fp[P_SCALE_RATE] = rcfg.reward_scale_rate
    return fp


def v1_consts(features: SMACFeatures) -> tuple:
    """``(table, pathing, height, move_dirs, obs_pts, flags, fparams)``: the tables of the kernels for a SMAC
    v1 map's features (read from the torch object, so both paths use the same constants); one table row per
    unit."""
    f = features
    N, U, utb = f.n_agents, f.n_units, f.utb
    table = np.zeros((U, C_COUNT + utb), dtype=np.float32)
    table[:, C_MAX_HEALTH] = f._max_health.cpu().numpy()
    table[:, C_MAX_SHIELD_SAFE] = f._max_shield_safe.cpu().numpy()
    table[:, C_HAS_SHIELD] = f._has_shield.cpu().numpy()
    table[:N, C_CD_NORM] = f._cd_norm.cpu().numpy()
    table[:N, C_USES_ENERGY] = f._uses_energy.cpu().numpy()
    table[:N, C_HEALABLE] = f._healable.cpu().numpy()
    table[:N, C_HEALER] = f._ally_healer.cpu().numpy()
    table[:N, C_MEDIVAC] = f._ally_medivac.cpu().numpy()
    table[N:, C_MEDIVAC] = f._enemy_medivac.cpu().numpy()
    table[:, C_SIGHT] = SIGHT_RANGE
    table[:, C_SHOOT] = SHOOT_RANGE
    table[:, C_COUNT:] = f._onehot.cpu().numpy()
    flags = np.zeros(F_COUNT, dtype=np.int64)
    option_flags(f, flags)
    flags[F_NNA], flags[F_NTARGETS] = f.n_actions - f.n_enemies, f.n_enemies
    flags[F_SHIELD_A], flags[F_SHIELD_E] = f.shield_a, f.shield_e
    flags[F_HAS_HEALER] = f._has_healer
    flags[F_MEDIVAC_RULE] = MEDIVAC_MMM if f.is_mmm else MEDIVAC_NONE
    flags[F_REWARD_CLIP_REGEN] = f.rcfg.reward_clip_regen
    flags[F_MAP_X] = flags[F_MAP_Y] = f._map_size
    fp = reward_params(f.rcfg)
    fp[P_SCALE_DIV] = f.max_reward / f.rcfg.reward_scale_rate if f.rcfg.reward_scale else 1.0
    pathing = np.ascontiguousarray(f._pathing.cpu().numpy())
    height = np.ascontiguousarray(f._height.cpu().numpy())
    move_dirs = np.ascontiguousarray(f._move_dirs.cpu().numpy().astype(np.float64))
    obs_pts = np.ascontiguousarray(f._obs_pts.cpu().numpy().astype(np.int64))
    return table, pathing, height, move_dirs, obs_pts, flags, fp


# the UnitState, then the EpisodeState fields up to episode_steps (the roster fields: _NO_ROSTER)
_FIELDS = STATE_FIELDS + ("prev_health", "prev_shield", "prev_alive", "last_action", "episode_steps")
_get_fields = operator.attrgetter(*_FIELDS)
# what a SMAC v1 map never reads of ``unit_kind, fov_dir, enemy_tag, max_reward`` (same types: the same kernel)
_NO_ROSTER = (
    np.zeros((0, 0), np.int64),
    np.zeros((0, 0, 2), np.float32),
    np.zeros((0, 0), np.int64),
    np.zeros(0, np.float32),
)
# placeholders for the step-only arrays in a features-only call, and for id-order tags
_NO_ACTIONS = np.zeros((0, 0), dtype=np.int64)
_NO_REWARD = np.zeros(0, dtype=np.float32)
_NO_RESULT = np.zeros((0, 0), dtype=np.bool_)
NO_RANK = np.zeros((0, 0), dtype=np.int64)
_STEP_OUT = ("obs", "state", "avail_actions", "reward", "result")
_OBSERVE_OUT = ("obs", "state", "avail_actions")


class ObserveKernel:
    """``SMACSim._stage_observe`` of a SMAC v1 map as one compiled CPU call, bit-equal to the torch path.

    Built once per simulator from its :class:`~sc2_envs.sim.rules.features.SMACFeatures` (map, unit table,
    ``FeatureConfig`` and ``RewardConfig``); the per-map constants are copied into small NumPy tables here
    (``consts``, from ``v1_consts``), the options are passed to the kernel as values (one compiled kernel
    serves every map, scenario and option set).

    Args:
        features: the simulator's feature functions; their device must be the CPU.
        parallel: ``True`` always splits the envs into chunks on threads (one per Numba thread:
            ``numba.set_num_threads``; ``runtime.chunks``), ``False`` runs them in the calling
            thread, ``None`` splits from ``PARALLEL_MIN_ENVS`` envs up.

    Raises:
        ValueError: ``features`` lives on a non-CPU device or uses float32 distances.
        TypeError: ``parallel`` not ``None`` or a bool.
    """

    v2 = False
    """The kernel family: SMAC v1 maps (``False``) or SMACv2 scenarios (``ObserveKernelV2``); the compiled
    driver of ``_OBSERVE_SERIAL`` it runs."""

    def __init__(self, features: SMACFeatures, parallel: bool | None = None):
        name = type(self).__name__
        if features.device.type != "cpu":
            raise ValueError(f"{name} runs on the CPU; the features live on {features.device}")
        if features._ddt != torch.float64:
            raise ValueError(f"{name} reproduces the float64 distance path; these features use float32")
        if parallel not in (None, True, False):
            raise TypeError(f"parallel must be None, True or False, got {parallel!r}")
        self.features = features
        self.parallel = parallel
        self.n_agents, self.n_units, self.n_actions = features.n_agents, features.n_units, features.n_actions
        self.consts = self._consts(features)
        self._arange = np.zeros(0, dtype=np.int64)
        self._view_cache = None

    def _consts(self, features) -> tuple:
        return v1_consts(features)

    def __getstate__(self) -> dict:
        # the cached views alias this process's state tensors: a deep copy or unpickled sim views its own
        return {**self.__dict__, "_view_cache": None}

    # -- helpers
    def _all_envs(self, B: int) -> np.ndarray:
        if self._arange.shape[0] != B:
            self._arange = np.arange(B, dtype=np.int64)
        return self._arange

    def _chunks(self, n: int) -> int:
        par = self.parallel if self.parallel is not None else n >= PARALLEL_MIN_ENVS
        return max(1, min(n, kernel_threads())) if par else 1

    def _views(self, st: WorldState) -> tuple[tuple, int]:
        """Zero-copy NumPy views of the fields the kernel reads or writes as ``(units, episode)``, a
        ``UnitState`` and an ``EpisodeState`` as plain tuples (``numba.state``; placeholders for the
        SMACv2 fields), and ``B``.

        The views are kept while ``st`` holds the same tensor objects (the numba stages update them
        in place), so a step costs no view making; a field replaced by a new tensor (the torch
        stages, ``reset``, ``load_state_dict``) is checked and viewed again. A non-contiguous field
        is replaced by a contiguous copy in ``st`` first.
        """
        tensors = _get_fields(st)
        cache = self._view_cache
        if cache is not None and all(map(operator.is_, tensors, cache[0])):
            return cache[1], cache[2]
        B = self.features._check_state(st)
        for n, x in zip(_FIELDS, tensors, strict=True):
            if x.device.type != "cpu":
                raise ValueError(f"ObserveKernel runs on the CPU; WorldState.{n} is on {x.device}")
            if x.shape[0] != B:
                raise ValueError(f"WorldState.{n} has {x.shape[0]} envs; WorldState.health has {B}")
            if not x.is_contiguous():
                setattr(st, n, x.contiguous())
        tensors = _get_fields(st)
        arrays = tuple(x.numpy() for x in tensors)
        n = len(STATE_FIELDS)
        groups = (arrays[:n], arrays[n:] + _NO_ROSTER)
        self._view_cache = (tensors, groups, B)
        return groups, B

    def _out(self, B: int, out: dict | None, keys: tuple) -> tuple[np.ndarray, ...]:
        """NumPy arrays of the outputs named by ``keys``: fresh ones, or views of ``out``'s tensors after
        checking they are contiguous CPU tensors of the right shapes and dtypes (``ValueError`` if not)."""
        f, N = self.features, self.n_agents
        want = dict(
            obs=((B, N, f.obs_size), torch.float32, np.float32),
            state=((B, f.state_size), torch.float32, np.float32),
            avail_actions=((B, N, self.n_actions), torch.bool, np.bool_),
            reward=((B,), torch.float32, np.float32),
            result=((3, B), torch.bool, np.bool_),
        )
        if out is None:
            return tuple(np.empty(want[k][0], want[k][2]) for k in keys)
        res = []
        for k in keys:
            shape, dtype, _ = want[k]
            x = out.get(k)
            if not isinstance(x, torch.Tensor) or tuple(x.shape) != shape or x.dtype != dtype:
                got = None if not isinstance(x, torch.Tensor) else (x.dtype, tuple(x.shape))
                raise ValueError(f"out[{k!r}] must be a {dtype} tensor of shape {shape}, got {got}")
            if x.device.type != "cpu" or not x.is_contiguous():
                raise ValueError(f"out[{k!r}] must be a contiguous CPU tensor")
            res.append(x.numpy())
        return tuple(res)

    def _env_ids(self, env_ids, B: int) -> np.ndarray:
        if env_ids is None:
            return self._all_envs(B)
        ids = np.ascontiguousarray(torch.as_tensor(env_ids).cpu().numpy(), dtype=np.int64).reshape(-1)
        if ids.size and (ids.min() < 0 or ids.max() >= B):
            raise ValueError(f"env_ids must be in [0, {B}), got min {ids.min()} max {ids.max()}")
        return ids

    def _run(self, ids, do_step, v, rank, actions, obs, state, avail, reward, result) -> None:
        args = (do_step, *v, rank, actions, self.consts, obs, state, avail, reward, result)
        serial = _OBSERVE_SERIAL[self.v2]
        run_env_ids(lambda chunk: serial(chunk, *args), ids, self._chunks(ids.shape[0]))

    # -- entry points
    def __call__(self, st: WorldState, actions: torch.Tensor, out: dict | None = None) -> dict[str, torch.Tensor]:
        """The observe stage of one env step, in place on ``st``; same result as ``SMACSim._stage_observe``.

        Increments ``st.episode_steps``, sets ``st.last_action = actions``, scores the step, copies
        ``health / shield / alive`` into ``prev_*`` and computes the features of the new state (a SMACv2
        scenario also updates ``st.enemy_tag``).

        Args:
            st: the world state after the step's ticks (``B`` envs, CPU tensors; modified in place).
            actions: ``[B, N]`` int64, the validated actions of this step.
            out: optional preallocated outputs to write into (``obs``, ``state``, ``avail_actions``,
                ``reward``: as returned, and ``result``: ``[3, B]`` bool); by default fresh tensors,
                so that tensors returned by an earlier call are never overwritten.

        Returns:
            ``{"obs": [B, N, obs_size] float32, "state": [B, state_size] float32, "avail_actions":
            [B, N, n_actions] bool, "reward": [B] float32, "battle_won", "lost", "draw": [B] bool}``.

        Raises:
            ValueError: shapes that do not match the map, a non-CPU tensor, or bad ``out`` buffers.
        """
        v, B = self._views(st)
        N = self.n_agents
        if not isinstance(actions, torch.Tensor) or actions.dtype != torch.int64 or tuple(actions.shape) != (B, N):
            got = (actions.dtype, tuple(actions.shape)) if isinstance(actions, torch.Tensor) else type(actions)
            raise ValueError(f"actions must be an int64 tensor of shape ({B}, {N}), got {got}")
        if actions.device.type != "cpu":
            raise ValueError(f"{type(self).__name__} runs on the CPU; actions are on {actions.device}")
        o = self._out(B, out, _STEP_OUT)
        self._run(self._all_envs(B), True, v, NO_RANK, np.ascontiguousarray(actions.detach().numpy()), *o)
        if out is not None:
            res = out["result"]
            return dict(
                obs=out["obs"],
                state=out["state"],
                avail_actions=out["avail_actions"],
                reward=out["reward"],
                battle_won=res[0],
                lost=res[1],
                draw=res[2],
            )
        obs, state, avail, reward, result = map(torch.from_numpy, o)
        return dict(
            obs=obs, state=state, avail_actions=avail, reward=reward, battle_won=result[0], lost=result[1], draw=result[2]
        )

    def observe(self, st: WorldState, env_ids: torch.Tensor | None = None, out: dict | None = None) -> dict[str, torch.Tensor]:
        """Features only (no step bookkeeping): ``SMACSim._observe`` for all envs or rows ``env_ids``.

        Args:
            st: the world state (read only).
            env_ids: ``[k]`` int64 env indices; only those rows of ``out`` are written (the
                auto-reset path: observe the envs just reset, in the step's output tensors).
                ``None``: all envs, into fresh tensors (or ``out``).
            out: ``{"obs", "state", "avail_actions"}`` tensors of the full batch shape; required
                with ``env_ids``.

        Returns:
            ``{"obs": [B, N, obs_size] float32, "state": [B, state_size] float32,
            "avail_actions": [B, N, n_actions] bool}`` (``out``'s tensors when given).

        Raises:
            ValueError: bad shapes or devices, ``env_ids`` out of range, or ``env_ids`` without ``out``.
        """
        return self._observe(st, env_ids, out, None)

    def _observe(self, st: WorldState, env_ids, out: dict | None, visit_rank) -> dict[str, torch.Tensor]:
        v, B = self._views(st)
        if env_ids is not None and out is None:
            raise ValueError("observe(env_ids=...) writes rows of existing outputs: pass out")
        o = self._out(B, out, _OBSERVE_OUT)
        ids = self._env_ids(env_ids, B)
        self._run(ids, False, v, self._rank(visit_rank, B), _NO_ACTIONS, *o, _NO_REWARD, _NO_RESULT)
        if out is not None:
            return {k: out[k] for k in _OBSERVE_OUT}
        return dict(zip(_OBSERVE_OUT, map(torch.from_numpy, o), strict=True))

    def _rank(self, visit_rank, B: int) -> np.ndarray:
        if visit_rank is None:
            return NO_RANK
        r = torch.as_tensor(visit_rank).detach().cpu().to(torch.int64)
        N = self.n_agents
        if tuple(r.shape) != (B, N) or not bool((r.sort(1).values == torch.arange(N)).all()):
            raise ValueError(
                f"visit_rank must be [{B}, {N}] int64 rows, each a permutation of 0..{N - 1}, got {tuple(r.shape)}"
            )
        return np.ascontiguousarray(r.numpy())


__all__ = ["F_EPISODE_LIMIT", "NO_RANK", "PARALLEL_MIN_ENVS", "ObserveKernel", "observe_env", "step_env", "v1_consts"]
