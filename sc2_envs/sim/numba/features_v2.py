"""The observe stage of a SMACv2 scenario as one compiled CPU kernel (Numba), bit-equal to torch.

The torch reference is ``sim.rules.features_v2.SMACv2Features`` (``game_result``, ``reward``,
``avail_actions``, ``update_tags``, ``obs``, ``state``), itself a re-statement of oxwhirl/smacv2
577ab5a ``starcraft2.py``. This module re-states it as loops over envs, agents and units with the
same IEEE operations in the same order and precision: distances in float64 as ``sqrt(dx*dx + dy*dy)``,
the cone test in the atan-free form of ``SMACv2Features._cone_angle``, the reward's sums left to
right (the torch code's ``cumsum``), float32 elsewhere, and the multiplications by the masks that
make ``-0.0`` of hidden negative offsets. What differs from SMAC v1 (``sim.numba.features``):
per-env rosters read from ``WorldState.unit_kind`` through per-kind tables (``ObserveKernelV2``),
per-unit sight and shoot ranges, the type one-hot in every block, own position and look direction,
the look actions, the enemy tags (``WorldState.enemy_tag``, updated in place as ``update_tags``
does) and a per-env ``max_reward``. ``tests/test_kernel_v2.py`` compares every output and state
field with the torch path over seeded play on every race and option, and
``tests/test_smacv2_golden.py`` runs SMACv2's golden vectors through both.

The per-env functions here are also called by ``sim.numba.step`` (the fused step).
"""

from __future__ import annotations

import math
import operator

import numba
import numpy as np
import torch

from sc2_envs.sim.rules.features_v2 import CONE_EPS, SMACv2Features
from sc2_envs.sim.runtime.chunks import kernel_threads, run_env_ids
from sc2_envs.sim.state import WorldState

PARALLEL_MIN_ENVS = 64
"""Batches of at least this many envs run in chunks on threads (as ``features.PARALLEL_MIN_ENVS``)."""

# int64 flags ``vfl``
(
    V_N,
    V_E,
    V_A,
    V_NNA,
    V_NFOV,
    V_UTB,
    V_T,
    V_NTARGETS,
    V_SHIELD,
    V_OBS_ALL_HEALTH,
    V_OWN_HEALTH,
    V_OBS_LAST_ACTION,
    V_OBS_PATHING,
    V_OBS_HEIGHT,
    V_OBS_TIMESTEP,
    V_OBS_INSTEAD_OF_STATE,
    V_STATE_LAST_ACTION,
    V_STATE_TIMESTEP,
    V_CONIC,
    V_OWN_POS,
    V_TERRAN,
    V_SPARSE,
    V_ONLY_POSITIVE,
    V_SCALE,
    V_LIMIT,
    V_MAP_X,
    V_MAP_Y,
    V_COUNT,
) = range(28)
# float64 parameters ``vfp``
(P_DEATH, P_WIN, P_DEFEAT, P_NEG, P_DEATH_NEG, P_SCALE_RATE, P_TAN_HALF_CONE, P_CONE_EPS, P_COUNT) = range(9)
# columns of the float32 per-kind table ``kcon [2T, K_COUNT]`` (rows: ally kinds, then enemy kinds)
(K_MAX_HEALTH, K_MAX_SHIELD_SAFE, K_HAS_SHIELD, K_SIGHT, K_SHOOT, K_MAX_CD, K_MEDIVAC, K_COUNT) = range(8)

JIT = dict(cache=True, nogil=True, error_model="numpy", fastmath=False)
_ONE = np.float32(1.0)
_ZERO = np.float32(0.0)


# ------------------------------------------------------------------------------------------------
# per-env bodies
@numba.njit(inline="always", **JIT)
def _row(b, u, unit_kind, N, T):
    """Unit ``u``'s row of the per-kind tables: its kind, plus ``T`` for enemies (``UnitTable.assign_kinds_``)."""
    return unit_kind[b, u] + (0 if u < N else T)


@numba.njit(inline="always", **JIT)
def _frac(health_u, shield_u, max_health, has_shield, max_shield_safe):
    """``SMACv2Features._health_frac`` of one unit: ``(health / max, shield / max or 0)`` float32."""
    h = health_u / max_health
    s = shield_u / max_shield_safe if has_shield != 0 else _ZERO
    return h, s


@numba.njit(**JIT)
def step_env_v2(
    b, health, shield, alive, prev_health, prev_shield, prev_alive, last_action, episode_steps, actions, unit_kind,
    max_reward, kcon, vfl, vfp, reward, result,
):  # fmt: skip
    """Env ``b``: step counter, last action, ``SMACv2Features.game_result`` and ``reward``, then the
    previous-step snapshot (``SMACSim._stage_observe`` before the features)."""
    N, E, T = vfl[V_N], vfl[V_E], vfl[V_T]
    U = N + E
    episode_steps[b] += 1
    for i in range(N):
        last_action[b, i] = actions[b, i]
    n_a = 0
    n_e = 0
    fighter_a = False
    fighter_e = False
    for u in range(U):
        if alive[b, u]:
            fighter = kcon[_row(b, u, unit_kind, N, T), K_MEDIVAC] == 0
            if u < N:
                n_a += 1
                fighter_a = fighter_a or fighter
            else:
                n_e += 1
                fighter_e = fighter_e or fighter
    lost = n_a == 0 and n_e > 0
    won = n_a > 0 and n_e == 0
    if vfl[V_TERRAN]:  # no non-medivac unit alive on a side (SMACv2 only_medivac_left, fixed for enemies)
        lost = lost or not fighter_a
        won = won or not fighter_e
    won = won and not lost
    draw = n_a == 0 and n_e == 0 and not lost and not won
    result[0, b] = won
    result[1, b] = lost
    result[2, b] = draw
    if vfl[V_SPARSE]:
        rew = 1.0 if won else (-1.0 if lost else 0.0)
    else:
        # float64, each side's sum left to right from its first unit (the torch code's cumsum)
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
        delta_ally = vfp[P_NEG] * d_ally
        delta_deaths = vfp[P_DEATH] * np.float64(died_e)
        if vfl[V_ONLY_POSITIVE]:
            d = d_enemy + delta_deaths
            rew = 0.0 if d < 0.0 else d
        else:
            delta_deaths = delta_deaths - vfp[P_DEATH_NEG] * np.float64(died_a)
            rew = d_enemy + delta_deaths - delta_ally
        rew = rew + (vfp[P_WIN] if won else (vfp[P_DEFEAT] if lost else 0.0))
    if vfl[V_SCALE]:
        rew = rew / (np.float64(max_reward[b]) / vfp[P_SCALE_RATE])
    reward[b] = np.float32(rew)
    for u in range(U):
        prev_health[b, u] = health[b, u]
        prev_shield[b, u] = shield[b, u]
        prev_alive[b, u] = alive[b, u]


@numba.njit(**JIT)
def _cone_ok(dx, dy, fx, fy, tan_half, eps):
    """``SMACv2Features._cone_angle`` of one (agent, unit) pair (float64 inputs)."""
    pos = dx > 0
    xd = max(dx, eps) if pos else min(dx, -eps)
    a = dy / xd
    fxc = max(fx, eps) if pos else min(fx, -eps)
    bb = fy / fxc
    return abs(a - bb) < tan_half * (a * bb + 1.0)


@numba.njit(**JIT)
def _geometry_env(b, pos, alive, unit_kind, fov_dir, kcon, vfl, vfp, gdx, gdy, gd, see, shoot_ok):
    """Distances of env ``b`` (``SMACv2Features._geometry``) into ``gdx/gdy/gd [N, U]`` float64, and
    ``see [N, U]`` (in the agent's sight: distance ``< sight`` or the cone, and the agent alive) and
    ``shoot_ok [N, U]`` (within its shoot range: ``<=``, or the cone) bool."""
    N, E, T = vfl[V_N], vfl[V_E], vfl[V_T]
    U = N + E
    conic = vfl[V_CONIC] != 0
    tan_half, eps = vfp[P_TAN_HALF_CONE], vfp[P_CONE_EPS]
    for i in range(N):
        ri = _row(b, i, unit_kind, N, T)
        sight = np.float64(kcon[ri, K_SIGHT])
        shoot = np.float64(kcon[ri, K_SHOOT])
        xi = np.float64(pos[b, i, 0])
        yi = np.float64(pos[b, i, 1])
        fx = np.float64(fov_dir[b, i, 0])
        fy = np.float64(fov_dir[b, i, 1])
        for u in range(U):
            dx = np.float64(pos[b, u, 0]) - xi
            dy = np.float64(pos[b, u, 1]) - yi
            d = math.sqrt(dx * dx + dy * dy)
            gdx[i, u] = dx
            gdy[i, u] = dy
            gd[i, u] = d
            if conic:
                ang = _cone_ok(dx, dy, fx, fy, tan_half, eps)
                see[i, u] = (not d > sight) and ang and alive[b, i]
                shoot_ok[i, u] = (not d > shoot) and ang
            else:
                see[i, u] = d < sight and alive[b, i]
                shoot_ok[i, u] = d <= shoot


@numba.njit(**JIT)
def _avail_env(b, pos, alive, unit_kind, kcon, pathing, move_dirs, vfl, shoot_ok, avail):
    """``SMACv2Features.avail_actions`` of env ``b`` into ``avail [B, N, n_actions]``."""
    N, E, T, A = vfl[V_N], vfl[V_E], vfl[V_T], vfl[V_A]
    nna, nfov, nt = vfl[V_NNA], vfl[V_NFOV], vfl[V_NTARGETS]
    SX, SY = vfl[V_MAP_X], vfl[V_MAP_Y]
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
        medivac = vfl[V_TERRAN] != 0 and kcon[_row(b, i, unit_kind, N, T), K_MEDIVAC] != 0
        for c in range(nt):
            if medivac:  # "heal ally c": a live non-medivac ally in range
                ok = c < N and shoot_ok[i, c] and alive[b, c] and kcon[unit_kind[b, c], K_MEDIVAC] == 0
            else:
                ok = c < E and shoot_ok[i, N + c] and alive[b, N + c]
            avail[b, i, nna + c] = ok


@numba.njit(**JIT)
def _tags_env(b, alive, enemy_tag, rank, vfl, see, observed):
    """``SMACv2Features.update_tags`` of env ``b``: updates ``enemy_tag [B, E]`` in place and fills
    ``observed [N, E]``. ``rank [B, N]``: the agents' visiting order (``visit_rank``); an empty
    ``rank`` is agent id order."""
    N, E = vfl[V_N], vfl[V_E]
    ranked = rank.shape[0] > 0
    for j in range(E):
        t = enemy_tag[b, j]
        tc = t if t > 0 else 0
        if not (t >= 0 and alive[b, tc] and alive[b, N + j]):
            t = -1
        first_rank = N
        first_agent = -1
        for i in range(N):
            r = rank[b, i] if ranked else i
            if see[i, N + j] and r < first_rank:
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


@numba.njit(**JIT)
def _obs_env(
    b, pos, health, shield, alive, last_action, episode_steps, unit_kind, fov_dir, enemy_tag, rank, kcon, pathing, height,
    obs_pts, vfl, avail, gdx, gdy, gd, see, observed, dst,
):  # fmt: skip
    """``SMACv2Features.obs`` of env ``b`` (tags first, ``_tags_env``) into ``dst [B, N, obs_size]``."""
    N, E, T, A, utb = vfl[V_N], vfl[V_E], vfl[V_T], vfl[V_A], vfl[V_UTB]
    nna = vfl[V_NNA]
    SX, SY = vfl[V_MAP_X], vfl[V_MAP_Y]
    shield_on = vfl[V_SHIELD] != 0
    all_health = vfl[V_OBS_ALL_HEALTH] != 0
    _tags_env(b, alive, enemy_tag, rank, vfl, see, observed)
    one, zero = _ONE, _ZERO
    for i in range(N):
        al = one if alive[b, i] else zero
        ri = _row(b, i, unit_kind, N, T)
        sr = np.float64(kcon[ri, K_SIGHT])
        last_unobs = -1  # SMACv2 zeroes the enemy block at each enemy the agent does not observe
        for j in range(E):
            if not observed[i, j]:
                last_unobs = j
        o = 0
        for k in range(4):
            dst[b, i, o] = (one if avail[b, i, 2 + k] else zero) * al
            o += 1
        if vfl[V_OBS_PATHING] != 0 or vfl[V_OBS_HEIGHT] != 0:
            cx = int(np.float64(pos[b, i, 0]))
            cy = int(np.float64(pos[b, i, 1]))
            if vfl[V_OBS_PATHING] != 0:
                for k in range(8):
                    px = cx + obs_pts[k, 0]
                    py = cy + obs_pts[k, 1]
                    v = True
                    if px >= 0 and px < SX and py >= 0 and py < SY:
                        v = pathing[px, py]
                    dst[b, i, o] = (one if v else zero) * al
                    o += 1
            if vfl[V_OBS_HEIGHT] != 0:
                for k in range(9):
                    px = cx + obs_pts[k, 0]
                    py = cy + obs_pts[k, 1]
                    hv = one
                    if px >= 0 and px < SX and py >= 0 and py < SY:
                        hv = height[px, py]
                    dst[b, i, o] = hv * al
                    o += 1
        for j in range(E):
            u = N + j
            ru = _row(b, u, unit_kind, N, T)
            m = one if (see[i, u] and alive[b, u] and observed[i, j] and j > last_unobs) else zero
            dst[b, i, o] = ((one if avail[b, i, nna + j] else zero) * m) * al
            dst[b, i, o + 1] = (np.float32(gd[i, u] / sr) * m) * al
            dst[b, i, o + 2] = (np.float32(gdx[i, u] / sr) * m) * al
            dst[b, i, o + 3] = (np.float32(gdy[i, u] / sr) * m) * al
            o += 4
            if all_health:
                h, s = _frac(
                    health[b, u], shield[b, u], kcon[ru, K_MAX_HEALTH], kcon[ru, K_HAS_SHIELD], kcon[ru, K_MAX_SHIELD_SAFE]
                )
                dst[b, i, o] = (h * m) * al
                o += 1
                if shield_on:
                    dst[b, i, o] = (s * m) * al
                    o += 1
            k_u = unit_kind[b, u]
            for t in range(utb):
                dst[b, i, o] = ((one if t == k_u else zero) * m) * al
                o += 1
        for u in range(N):
            if u == i:
                continue
            ru = unit_kind[b, u]
            m = one if (see[i, u] and alive[b, u]) else zero
            dst[b, i, o] = (one * m) * al
            dst[b, i, o + 1] = (np.float32(gd[i, u] / sr) * m) * al
            dst[b, i, o + 2] = (np.float32(gdx[i, u] / sr) * m) * al
            dst[b, i, o + 3] = (np.float32(gdy[i, u] / sr) * m) * al
            o += 4
            if all_health:
                h, s = _frac(
                    health[b, u], shield[b, u], kcon[ru, K_MAX_HEALTH], kcon[ru, K_HAS_SHIELD], kcon[ru, K_MAX_SHIELD_SAFE]
                )
                dst[b, i, o] = (h * m) * al
                o += 1
                if shield_on:
                    dst[b, i, o] = (s * m) * al
                    o += 1
            for t in range(utb):
                dst[b, i, o] = ((one if t == ru else zero) * m) * al
                o += 1
            if vfl[V_OBS_LAST_ACTION] != 0:
                la = last_action[b, u]
                for a in range(A):
                    dst[b, i, o] = ((one if la == a else zero) * m) * al
                    o += 1
        if vfl[V_OWN_HEALTH] != 0:
            h, s = _frac(
                health[b, i], shield[b, i], kcon[ri, K_MAX_HEALTH], kcon[ri, K_HAS_SHIELD], kcon[ri, K_MAX_SHIELD_SAFE]
            )
            dst[b, i, o] = h * al
            o += 1
            if shield_on:
                dst[b, i, o] = s * al
                o += 1
        if vfl[V_OWN_POS] != 0:
            dst[b, i, o] = (pos[b, i, 0] / np.float32(SX)) * al
            dst[b, i, o + 1] = (pos[b, i, 1] / np.float32(SY)) * al
            o += 2
        if vfl[V_CONIC] != 0:
            dst[b, i, o] = fov_dir[b, i, 0] * al
            dst[b, i, o + 1] = fov_dir[b, i, 1] * al
            o += 2
        k_i = unit_kind[b, i]
        for t in range(utb):
            dst[b, i, o] = (one if t == k_i else zero) * al
            o += 1
        if vfl[V_OBS_TIMESTEP] != 0:
            dst[b, i, o] = np.float32(np.float64(episode_steps[b]) / np.float64(vfl[V_LIMIT]))


@numba.njit(**JIT)
def observe_env_v2(
    b, pos, health, shield, energy, cooldown, alive, last_action, episode_steps, unit_kind, fov_dir, enemy_tag, rank,
    kcon, pathing, height, move_dirs, obs_pts, vfl, vfp, obs, state, avail, gdx, gdy, gd, see, shoot_ok, observed,
):  # fmt: skip
    """Env ``b``: available actions, observations (updating the enemy tags) and state, as
    ``SMACSim._stage_observe`` calls ``SMACv2Features.avail_actions``, ``obs`` and ``state``.

    ``obs [B, N, obs_size]``, ``state [B, state_size]``, ``avail [B, N, n_actions]``; the scratch
    ``gdx, gdy, gd [N, U]`` float64, ``see, shoot_ok [N, U]`` and ``observed [N, E]`` bool (``v2_scratch``).
    """
    N, E, T, A, utb = vfl[V_N], vfl[V_E], vfl[V_T], vfl[V_A], vfl[V_UTB]
    U = N + E
    _geometry_env(b, pos, alive, unit_kind, fov_dir, kcon, vfl, vfp, gdx, gdy, gd, see, shoot_ok)
    _avail_env(b, pos, alive, unit_kind, kcon, pathing, move_dirs, vfl, shoot_ok, avail)
    _obs_env(b, pos, health, shield, alive, last_action, episode_steps, unit_kind, fov_dir, enemy_tag, rank, kcon, pathing,
             height, obs_pts, vfl, avail, gdx, gdy, gd, see, observed, obs)  # fmt: skip
    if vfl[V_OBS_INSTEAD_OF_STATE] != 0:
        # SMACv2Features.state: the observations again, in agent id order (which advances the tags again)
        F = obs.shape[2]
        dst = state.reshape((state.shape[0], N, F))
        _obs_env(b, pos, health, shield, alive, last_action, episode_steps, unit_kind, fov_dir, enemy_tag, rank[:0], kcon,
                 pathing, height, obs_pts, vfl, avail, gdx, gdy, gd, see, observed, dst)  # fmt: skip
        return
    one, zero = _ONE, _ZERO
    shield_on = vfl[V_SHIELD] != 0
    cx, cy = np.float32(vfl[V_MAP_X] / 2), np.float32(vfl[V_MAP_Y] / 2)
    sx, sy = np.float32(vfl[V_MAP_X]), np.float32(vfl[V_MAP_Y])
    o = 0
    for u in range(U):
        al = one if alive[b, u] else zero
        ru = _row(b, u, unit_kind, N, T)
        h, s = _frac(health[b, u], shield[b, u], kcon[ru, K_MAX_HEALTH], kcon[ru, K_HAS_SHIELD], kcon[ru, K_MAX_SHIELD_SAFE])
        state[b, o] = h * al
        o += 1
        if u < N:
            src = energy[b, u] if kcon[ru, K_MEDIVAC] != 0 else cooldown[b, u]
            state[b, o] = (src / kcon[ru, K_MAX_CD]) * al
            o += 1
        state[b, o] = ((pos[b, u, 0] - cx) / sx) * al
        state[b, o + 1] = ((pos[b, u, 1] - cy) / sy) * al
        o += 2
        if shield_on:
            state[b, o] = s * al
            o += 1
        if u < N and vfl[V_CONIC] != 0:
            state[b, o] = fov_dir[b, u, 0] * al
            state[b, o + 1] = fov_dir[b, u, 1] * al
            o += 2
        k_u = unit_kind[b, u]
        for t in range(utb):
            state[b, o] = (one if t == k_u else zero) * al
            o += 1
    if vfl[V_STATE_LAST_ACTION] != 0:
        for i in range(N):
            la = last_action[b, i]
            for a in range(A):
                state[b, o] = one if la == a else zero
                o += 1
    if vfl[V_STATE_TIMESTEP] != 0:
        state[b, o] = np.float32(np.float64(episode_steps[b]) / np.float64(vfl[V_LIMIT]))


@numba.njit(**JIT)
def v2_scratch(vfl):
    """Per-range scratch of ``observe_env_v2``: ``gdx, gdy, gd, see, shoot_ok, observed``."""
    N, E = vfl[V_N], vfl[V_E]
    U = N + E
    return (
        np.zeros((N, U), np.float64),
        np.zeros((N, U), np.float64),
        np.zeros((N, U), np.float64),
        np.zeros((N, U), np.bool_),
        np.zeros((N, U), np.bool_),
        np.zeros((N, E), np.bool_),
    )


# ------------------------------------------------------------------------------------------------
# driver: the envs of ``env_ids`` in the calling thread; ``ObserveKernelV2._run`` gives chunks of them
# to threads (``runtime.chunks``)
@numba.njit(**JIT)
def _observe_v2_serial(
    env_ids, do_step, pos, health, shield, energy, cooldown, alive, prev_health, prev_shield, prev_alive,
    last_action, episode_steps, unit_kind, fov_dir, enemy_tag, max_reward, rank, actions, kcon, pathing, height,
    move_dirs, obs_pts, vfl, vfp, obs, state, avail, reward, result,
):  # fmt: skip
    gdx, gdy, gd, see, shoot_ok, observed = v2_scratch(vfl)
    for k in range(env_ids.shape[0]):
        b = env_ids[k]
        if do_step:
            step_env_v2(b, health, shield, alive, prev_health, prev_shield, prev_alive, last_action, episode_steps,
                         actions, unit_kind, max_reward, kcon, vfl, vfp, reward, result)  # fmt: skip
        observe_env_v2(b, pos, health, shield, energy, cooldown, alive, last_action, episode_steps, unit_kind,
                        fov_dir, enemy_tag, rank, kcon, pathing, height, move_dirs, obs_pts, vfl, vfp, obs, state,
                        avail, gdx, gdy, gd, see, shoot_ok, observed)  # fmt: skip


_NO_ACTIONS = np.zeros((0, 0), dtype=np.int64)
NO_RANK = np.zeros((0, 0), dtype=np.int64)
_NO_REWARD = np.zeros(0, dtype=np.float32)
_NO_RESULT = np.zeros((0, 0), dtype=np.bool_)

_FIELDS = ("pos", "health", "shield", "energy", "cooldown", "alive", "prev_health", "prev_shield", "prev_alive")
_FIELDS += ("last_action", "episode_steps", "unit_kind", "fov_dir", "enemy_tag", "max_reward")
_get_fields = operator.attrgetter(*_FIELDS)
_DTYPES = {
    "alive": torch.bool,
    "prev_alive": torch.bool,
    "last_action": torch.int64,
    "episode_steps": torch.int64,
    "unit_kind": torch.int64,
    "enemy_tag": torch.int64,
}


def v2_consts(features: SMACv2Features) -> tuple:
    """``(kcon, pathing, height, move_dirs, obs_pts, vfl, vfp)``: the tables of the v2 kernels for a
    scenario's features (read from the torch object, so both paths use the same constants)."""
    f, cfg, rcfg = features, features.cfg, features.rcfg
    kt = f.table.kinds
    T = len(kt.names) // 2
    kcon = np.zeros((2 * T, K_COUNT), np.float32)
    mh = kt.max_health.detach().cpu().to(torch.float32)
    ms = kt.max_shield.detach().cpu().to(torch.float32)
    kcon[:, K_MAX_HEALTH] = mh.numpy()
    kcon[:, K_MAX_SHIELD_SAFE] = torch.where(ms > 0, ms, torch.ones_like(ms)).numpy()
    kcon[:, K_HAS_SHIELD] = (ms > 0).numpy()
    for side in (0, T):  # the per-kind SMACv2 tables are indexed by kind, whatever the side
        kcon[side : side + T, K_SIGHT] = f._sight_k.cpu().numpy()
        kcon[side : side + T, K_SHOOT] = f._shoot_k.cpu().numpy()
        kcon[side : side + T, K_MAX_CD] = f._max_cd_k.cpu().numpy()
        kcon[side : side + T, K_MEDIVAC] = f._medivac_k.cpu().numpy()
    vfl = np.zeros(V_COUNT, np.int64)
    vfl[V_N], vfl[V_E], vfl[V_A] = f.n_agents, f.n_enemies, f.n_actions
    vfl[V_NNA], vfl[V_NFOV], vfl[V_UTB], vfl[V_T] = f.n_actions_no_attack, f.n_fov, f.utb, T
    vfl[V_NTARGETS] = f.n_targets
    vfl[V_SHIELD] = f.shield
    vfl[V_OBS_ALL_HEALTH] = cfg.obs_all_health
    vfl[V_OWN_HEALTH] = f.own_health
    vfl[V_OBS_LAST_ACTION] = cfg.obs_last_action
    vfl[V_OBS_PATHING] = cfg.obs_pathing_grid
    vfl[V_OBS_HEIGHT] = cfg.obs_terrain_height
    vfl[V_OBS_TIMESTEP] = cfg.obs_timestep_number
    vfl[V_OBS_INSTEAD_OF_STATE] = cfg.obs_instead_of_state
    vfl[V_STATE_LAST_ACTION] = cfg.state_last_action
    vfl[V_STATE_TIMESTEP] = cfg.state_timestep_number
    vfl[V_CONIC] = f.conic_fov
    vfl[V_OWN_POS] = f.obs_own_pos
    vfl[V_TERRAN] = f.is_terran
    vfl[V_SPARSE] = rcfg.reward_sparse
    vfl[V_ONLY_POSITIVE] = rcfg.reward_only_positive
    vfl[V_SCALE] = rcfg.reward_scale
    vfl[V_LIMIT] = f.spec.episode_limit
    vfl[V_MAP_X], vfl[V_MAP_Y] = f._pathing.shape
    vfp = np.zeros(P_COUNT, np.float64)
    vfp[P_DEATH] = rcfg.reward_death_value
    vfp[P_WIN] = float(rcfg.reward_win)
    vfp[P_DEFEAT] = float(rcfg.reward_defeat)
    vfp[P_NEG] = rcfg.reward_negative_scale
    # the torch code evaluates reward_death_value * reward_negative_scale * count left to right
    vfp[P_DEATH_NEG] = rcfg.reward_death_value * rcfg.reward_negative_scale
    vfp[P_SCALE_RATE] = rcfg.reward_scale_rate
    vfp[P_TAN_HALF_CONE] = f._tan_half_cone
    vfp[P_CONE_EPS] = CONE_EPS
    pathing = np.ascontiguousarray(f._pathing.cpu().numpy().astype(np.bool_))
    height = np.ascontiguousarray(f._height.cpu().numpy().astype(np.float32))
    move_dirs = np.ascontiguousarray(f._move_dirs.cpu().numpy().astype(np.float64))
    obs_pts = np.ascontiguousarray(f._obs_pts.cpu().numpy().astype(np.int64))
    return kcon, pathing, height, move_dirs, obs_pts, vfl, vfp


def v2_placeholders() -> tuple:
    """Tables of the same types as ``v2_consts`` for a SMAC v1 map (the fused step's v2 branch is off)."""
    vfl = np.zeros(V_COUNT, np.int64)
    return (
        np.zeros((1, K_COUNT), np.float32),
        np.zeros((1, 1), np.bool_),
        np.zeros((1, 1), np.float32),
        np.zeros((4, 2), np.float64),
        np.zeros((9, 2), np.int64),
        vfl,
        np.zeros(P_COUNT, np.float64),
    )


class ObserveKernelV2:
    """``SMACSim._stage_observe`` of a SMACv2 scenario as one compiled CPU call, bit-equal to torch.

    Same interface as ``features.ObserveKernel`` (``__call__`` for a step, ``observe`` for the
    features of all envs or rows ``env_ids``), plus ``visit_rank`` (``SMACv2Features.update_tags``).
    The per-kind tables are copied from ``features`` at construction (``v2_consts``): a change to
    ``features.table.kinds`` needs a new kernel (``SMACSim._build_kernels``).

    Args:
        features: the scenario's ``SMACv2Features`` on the CPU (float64 distances).
        parallel: ``True`` / ``False`` force chunks on threads (one per Numba thread) / the
            calling thread; ``None`` splits from ``PARALLEL_MIN_ENVS`` envs up.

    Raises:
        ValueError: features on another device than the CPU.
        TypeError: ``parallel`` not ``None`` or a bool.
    """

    def __init__(self, features: SMACv2Features, parallel: bool | None = None):
        if features.device.type != "cpu" or features._ddt != torch.float64:
            raise ValueError(f"ObserveKernelV2 runs on the CPU with float64 distances; the features live on {features.device}")
        if parallel not in (None, True, False):
            raise TypeError(f"parallel must be None, True or False, got {parallel!r}")
        self.features = features
        self.parallel = parallel
        self.n_agents, self.n_units, self.n_actions = features.n_agents, features.n_units, features.n_actions
        self.consts = v2_consts(features)
        self._arange = np.zeros(0, dtype=np.int64)
        self._view_cache = None

    def __getstate__(self) -> dict:
        # the cached views alias this process's state tensors: a deep copy or unpickled sim views its own
        return {**self.__dict__, "_view_cache": None}

    def _all_envs(self, B: int) -> np.ndarray:
        if self._arange.shape[0] != B:
            self._arange = np.arange(B, dtype=np.int64)
        return self._arange

    def _chunks(self, n: int) -> int:
        par = self.parallel if self.parallel is not None else n >= PARALLEL_MIN_ENVS
        return max(1, min(n, kernel_threads())) if par else 1

    def _views(self, st: WorldState) -> tuple[tuple, int]:
        """Zero-copy NumPy views of the fields read or written (kept while ``st`` holds the same
        tensors; a non-contiguous field is replaced by a contiguous copy in ``st`` first)."""
        tensors = _get_fields(st)
        cache = self._view_cache
        if cache is not None and all(map(operator.is_, tensors, cache[0])):
            return cache[1], cache[2]
        B = st.health.shape[0]
        U, N = self.n_units, self.n_agents
        for n, x in zip(_FIELDS, tensors, strict=True):
            want = _DTYPES.get(n, torch.float32)
            if x.device.type != "cpu" or x.dtype != want or x.shape[0] != B:
                raise ValueError(
                    f"WorldState.{n} must be a CPU {want} tensor with {B} envs, got {x.dtype} {tuple(x.shape)} on {x.device}"
                )
            if not x.is_contiguous():
                setattr(st, n, x.contiguous())
        if tuple(st.health.shape) != (B, U) or tuple(st.enemy_tag.shape) != (B, U - N):
            raise ValueError(f"WorldState holds {tuple(st.health.shape)} units; this scenario has {U} ({N} agents)")
        tensors = _get_fields(st)
        arrays = tuple(x.numpy() for x in tensors)
        self._view_cache = (tensors, arrays, B)
        return arrays, B

    def _check_kinds(self, unit_kind: np.ndarray) -> None:
        T = int(self.consts[5][V_T])
        if unit_kind.size and (int(unit_kind.min()) < 0 or int(unit_kind.max()) >= T):
            bad = np.argwhere((unit_kind < 0) | (unit_kind >= T))[0].tolist()
            raise ValueError(f"WorldState.unit_kind{bad} = {int(unit_kind[tuple(bad)])} is not a kind index in [0, {T})")

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

    def _out(self, B: int, out: dict | None, keys: tuple) -> tuple:
        f, N = self.features, self.n_agents
        want = dict(
            obs=((B, N, f.obs_size), torch.float32),
            state=((B, f.state_size), torch.float32),
            avail_actions=((B, N, self.n_actions), torch.bool),
            reward=((B,), torch.float32),
            result=((3, B), torch.bool),
        )
        if out is None:
            return tuple(torch.empty(want[k][0], dtype=want[k][1]) for k in keys)
        res = []
        for k in keys:
            shape, dtype = want[k]
            x = out.get(k)
            if not isinstance(x, torch.Tensor) or tuple(x.shape) != shape or x.dtype != dtype:
                got = None if not isinstance(x, torch.Tensor) else (x.dtype, tuple(x.shape))
                raise ValueError(f"out[{k!r}] must be a {dtype} tensor of shape {shape}, got {got}")
            if x.device.type != "cpu" or not x.is_contiguous():
                raise ValueError(f"out[{k!r}] must be a contiguous CPU tensor")
            res.append(x)
        return tuple(res)

    def _run(self, ids, do_step, v, rank, actions, obs, state, avail, reward, result) -> None:
        n = self._chunks(ids.shape[0])
        args = (do_step, *v, rank, actions, *self.consts, obs, state, avail, reward, result)
        run_env_ids(lambda chunk: _observe_v2_serial(chunk, *args), ids, n)

    def __call__(self, st: WorldState, actions: torch.Tensor, out: dict | None = None) -> dict[str, torch.Tensor]:
        """The observe stage of one env step, in place on ``st`` (as ``SMACSim._stage_observe``).

        Args:
            st: the world state after the step's ticks (modified: step count, last action, previous
                snapshot, enemy tags).
            actions: ``[B, N]`` int64, the validated actions of this step.
            out: optional preallocated ``obs``, ``state``, ``avail_actions``, ``reward`` and
                ``result`` (``[3, B]`` bool) tensors; by default fresh ones.

        Returns:
            ``{"obs": [B, N, obs_size] float32, "state": [B, state_size] float32, "avail_actions":
            [B, N, n_actions] bool, "reward": [B] float32, "battle_won", "lost", "draw": [B] bool}``.
        """
        v, B = self._views(st)
        self._check_kinds(v[11])
        N = self.n_agents
        if not isinstance(actions, torch.Tensor) or actions.dtype != torch.int64 or tuple(actions.shape) != (B, N):
            got = (actions.dtype, tuple(actions.shape)) if isinstance(actions, torch.Tensor) else type(actions)
            raise ValueError(f"actions must be an int64 tensor of shape ({B}, {N}), got {got}")
        obs, state, avail, reward, result = self._out(B, out, ("obs", "state", "avail_actions", "reward", "result"))
        a = np.ascontiguousarray(actions.detach().cpu().numpy())
        self._run(
            self._all_envs(B), True, v, NO_RANK, a, obs.numpy(), state.numpy(), avail.numpy(), reward.numpy(), result.numpy()
        )
        return dict(
            obs=obs, state=state, avail_actions=avail, reward=reward, battle_won=result[0], lost=result[1], draw=result[2]
        )

    def observe(
        self, st: WorldState, env_ids: torch.Tensor | np.ndarray | None = None, out: dict | None = None, visit_rank=None
    ) -> dict[str, torch.Tensor]:
        """Features only (``SMACSim._observe``): all envs, or rows ``env_ids`` of ``out``; updates the
        enemy tags of those envs.

        Args:
            st: the world state.
            env_ids: ``[k]`` int64 env indices (with ``out``), or ``None`` for every env.
            out: ``{"obs", "state", "avail_actions"}`` of the full batch shape; required with ``env_ids``.
            visit_rank: ``[B, N]`` int64, each agent's place in SMACv2's visiting order of the enemy
                bookkeeping (``SMACv2Features.update_tags``); ``None``: agent id order.

        Returns:
            ``{"obs": [B, N, obs_size] float32, "state": [B, state_size] float32,
            "avail_actions": [B, N, n_actions] bool}`` (``out``'s tensors when given).

        Raises:
            ValueError: bad shapes or devices, ``env_ids`` out of range or without ``out``, a bad
                ``visit_rank`` or a ``unit_kind`` outside the race's kinds.
        """
        v, B = self._views(st)
        self._check_kinds(v[11])
        if env_ids is not None and out is None:
            raise ValueError("observe(env_ids=...) writes rows of existing outputs: pass out")
        obs, state, avail = self._out(B, out, ("obs", "state", "avail_actions"))
        if env_ids is None:
            ids = self._all_envs(B)
        else:
            ids = np.ascontiguousarray(torch.as_tensor(env_ids).cpu().numpy(), dtype=np.int64).reshape(-1)
            if ids.size and (ids.min() < 0 or ids.max() >= B):
                raise ValueError(f"env_ids must be in [0, {B}), got min {ids.min()} max {ids.max()}")
        rank = self._rank(visit_rank, B)
        self._run(ids, False, v, rank, _NO_ACTIONS, obs.numpy(), state.numpy(), avail.numpy(), _NO_REWARD, _NO_RESULT)
        return {"obs": obs, "state": state, "avail_actions": avail}


__all__ = ["PARALLEL_MIN_ENVS", "ObserveKernelV2", "v2_consts", "v2_placeholders"]
