"""The observe stage of ``SMACSim``'s step as one compiled CPU kernel (Numba).

``SMACSim._stage_observe`` (``sim/env.py``) and the feature functions it calls
(``SMACFeatures.game_result``, ``reward``, ``avail_actions``, ``obs``, ``state``; ``sim/features.py``)
are about 150 small tensor operations per env step; at a batch of one env each costs microseconds
of dispatch for a few dozen numbers. :class:`ObserveKernel` does the same work in one Numba call:
a loop over envs (split into chunks on threads for large batches, ``runtime.chunks``) and, inside, over agents
and units, reading and writing the ``WorldState`` tensors in place through zero-copy NumPy views.

Bit equality with the torch path is by construction, not by tolerance: every value is computed
with the same IEEE operations in the same order and precision (float64 for distances and the
reward, float32 elsewhere; no ``fastmath``, so no reassociation or fused multiply-adds), including
the multiplications by the visibility and alive masks that produce ``-0.0`` for negative offsets
of dead or hidden units. Two places of the torch reference were rewritten for this without
changing any SMAC value: distances are ``sqrt(dx*dx + dy*dy)`` rather than ``torch.hypot`` (hypot
implementations differ by an ulp), and the reward's per-side sums use ``cumsum`` (a defined
left-to-right order; ``sum`` reorders with the vector width). ``tests/test_kernel_observe.py``
checks the equality on every map and feature option, and the golden SMAC vectors.

Compilation: the kernels are compiled on first use (several seconds) and cached on disk by Numba
(``cache=True``: ``__pycache__`` next to this file, or ``NUMBA_CACHE_DIR``); later processes load
them in well under a second. ``benchmarks/observe_kernel_timing.py`` prints both times and the
per-call time against the torch path.

Layout, beside ``sim.rules.features``: ``observe_env`` (one env) calls ``_avail_actions``, ``_obs`` and
``_state`` (``SMACFeatures.avail_actions``, ``obs``, ``state``), inlined; ``step_env`` is the game
result and reward; ``ObserveKernel`` drives them over a batch.
"""

from __future__ import annotations

import math
import operator

import numpy as np
import torch

try:
    import numba
except ImportError:  # pragma: no cover - exercised only where numba is absent
    numba = None

from sc2_envs.sim.rules.features import N_ACTIONS_NO_ATTACK, SHOOT_RANGE, SIGHT_RANGE, SMACFeatures
from sc2_envs.sim.runtime.chunks import kernel_threads, run_env_ids
from sc2_envs.sim.state import WorldState

PARALLEL_MIN_ENVS = 64
"""Batches of at least this many envs run in chunks on threads (``runtime.chunks``); smaller ones in
the calling thread, which saves the threads' wake-up (tens of microseconds) at B = 1."""

# indices into the int64 ``flags`` array the kernels take
(
    _F_N,
    _F_E,
    _F_A,
    _F_UTB,
    _F_OBS_ALL_HEALTH,
    _F_OWN_HEALTH,
    _F_OBS_LAST_ACTION,
    _F_OBS_PATHING,
    _F_OBS_HEIGHT,
    _F_OBS_TIMESTEP,
    _F_OBS_INSTEAD_OF_STATE,
    _F_STATE_LAST_ACTION,
    _F_STATE_TIMESTEP,
    _F_SHIELD_A,
    _F_SHIELD_E,
    _F_HAS_HEALER,
    _F_IS_MMM,
    _F_REWARD_SPARSE,
    _F_REWARD_ONLY_POSITIVE,
    _F_REWARD_CLIP_REGEN,
    _F_REWARD_SCALE,
    F_EPISODE_LIMIT,
    _F_MAP_SIZE,
    _F_COUNT,
) = range(24)

# indices into the float64 ``fparams`` array
(_P_DEATH_VALUE, _P_WIN, _P_DEFEAT, _P_NEG_SCALE, _P_DEATH_NEG, _P_SCALE_DIV, _P_HALF_MAP, _P_COUNT) = range(8)

# columns of the float32 per-unit table ``ucon`` [U, _U_COUNT + utb]; the type one-hot follows
_U_MAX_HEALTH, _U_MAX_SHIELD_SAFE, _U_HAS_SHIELD, _U_CD_NORM, _U_USES_ENERGY, _U_HEALABLE, _U_IS_HEALER, _U_MEDIVAC = range(8)
_U_COUNT = 8

# SMAC get_surrounding_points for move_amount 2: N, S, E, W at 4, then the diagonals at 2, then the centre
_OBS_POINTS = np.array([[0, 4], [0, -4], [4, 0], [-4, 0], [2, 2], [-2, -2], [2, -2], [-2, 2], [0, 0]], dtype=np.int64)
# move probes at move_amount / 2 = 1: north, south, east, west (as SMACFeatures._move_dirs)
_PROBES = np.array([[0.0, 1.0], [0.0, -1.0], [1.0, 0.0], [-1.0, 0.0]], dtype=np.float64)


def _njit(**kw):
    if numba is None:
        return lambda f: f
    return numba.njit(cache=True, **kw)


# ------------------------------------------------------------------------------------------------
# per-env bodies (compiled into the drivers below)


@_njit()
def _frac(health_u, shield_u, max_health, has_shield, max_shield_safe):
    """``(health / max_health, shield / max_shield or 0)`` of one unit, float32 (``SMACFeatures._health_frac``).

    Scalars only: an array argument costs Numba an atomic reference count increment and decrement
    per call, and this runs for every (agent, unit) pair of every env.
    """
    h = health_u / max_health
    if has_shield != 0:
        s = shield_u / max_shield_safe
    else:
        s = np.float32(0.0)
    return h, s


@_njit()
def step_env(
    b,
    health,
    shield,
    alive,
    prev_health,
    prev_shield,
    prev_alive,
    last_action,
    episode_steps,
    actions,
    ucon,
    flags,
    fparams,
    reward,
    result,
):
    """Env ``b``: step counter, last action, game result and reward, then the previous-step snapshot."""
    N, E = flags[_F_N], flags[_F_E]
    U = N + E
    episode_steps[b] += 1
    for i in range(N):
        last_action[b, i] = actions[b, i]

    # SMACFeatures.game_result
    n_a = 0
    n_e = 0
    any_fighter = False
    for i in range(N):
        if alive[b, i]:
            n_a += 1
            if ucon[i, _U_MEDIVAC] == 0:
                any_fighter = True
    enemy_medivac_alive = False
    for j in range(N, U):
        if alive[b, j]:
            n_e += 1
            if ucon[j, _U_MEDIVAC] != 0:
                enemy_medivac_alive = True
    lost = n_a == 0 and n_e > 0
    won = n_a > 0 and n_e == 0
    if flags[_F_IS_MMM] != 0:
        lost = lost or not any_fighter
        won = won or (n_e == 1 and enemy_medivac_alive)
    won = won and not lost
    draw = n_a == 0 and n_e == 0 and not lost and not won
    result[0, b] = won
    result[1, b] = lost
    result[2, b] = draw

    # SMACFeatures.reward, float64, sums left to right from 0 (torch cumsum)
    if flags[_F_REWARD_SPARSE] != 0:
        if won:
            rew = 1.0
        elif lost:
            rew = -1.0
        else:
            rew = 0.0
    else:
        delta_enemy = 0.0
        delta_ally_sum = 0.0
        died_e = 0
        died_a = 0
        for u in range(U):
            tracked = prev_alive[b, u]
            died = tracked and not alive[b, u]
            prev_hs = np.float64(prev_health[b, u]) + np.float64(prev_shield[b, u])
            cur_hs = np.float64(health[b, u]) + np.float64(shield[b, u])
            lost_hs = prev_hs if died else prev_hs - cur_hs
            lost_hs = lost_hs * (1.0 if tracked else 0.0)
            if u < N:
                delta_ally_sum += lost_hs
                if died:
                    died_a += 1
            else:
                delta_enemy += lost_hs
                if died:
                    died_e += 1
        delta_ally = fparams[_P_NEG_SCALE] * delta_ally_sum
        delta_deaths = fparams[_P_DEATH_VALUE] * np.float64(died_e)
        if flags[_F_REWARD_ONLY_POSITIVE] != 0:
            d = delta_enemy + delta_deaths
            if flags[_F_REWARD_CLIP_REGEN] != 0:
                rew = 0.0 if d < 0.0 else d
            else:
                rew = abs(d)
        else:
            delta_deaths = delta_deaths - fparams[_P_DEATH_NEG] * np.float64(died_a)
            rew = delta_enemy + delta_deaths - delta_ally
        if won:
            bonus = fparams[_P_WIN]
        elif lost:
            bonus = fparams[_P_DEFEAT]
        else:
            bonus = 0.0
        rew = rew + bonus
    if flags[_F_REWARD_SCALE] != 0:
        rew = rew / fparams[_P_SCALE_DIV]
    reward[b] = np.float32(rew)

    for u in range(U):
        prev_health[b, u] = health[b, u]
        prev_shield[b, u] = shield[b, u]
        prev_alive[b, u] = alive[b, u]


# The three parts of ``observe_env``, as ``SMACFeatures.avail_actions``, ``obs`` and ``state``, are inlined
# into it; ``observe_env`` takes no reference counts (``_nrt=False``: it allocates nothing, and its caller
# holds every array for the call), so neither its arguments nor the inlined parts' count per env.
@_njit(inline="always")
def _avail_actions(b, pos, alive, ucon, pathing, flags, avail):
    """``SMACFeatures.avail_actions`` for env ``b``: ``avail [N, A]`` (no-op for the dead; moves whose probe
    cell is pathable; targets within shooting range, or live healable allies for a medivac)."""
    N, E, A = flags[_F_N], flags[_F_E], flags[_F_A]
    S = flags[_F_MAP_SIZE]
    has_healer = flags[_F_HAS_HEALER] != 0
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
            cx = int(xi + _PROBES[k, 0])  # truncation toward zero, as torch.trunc(...).to(int64)
            cy = int(yi + _PROBES[k, 1])
            ok = False
            if cx >= 0 and cx < S and cy >= 0 and cy < S:
                ok = pathing[cx, cy]
            avail[b, i, 2 + k] = ok
        healer = has_healer and ucon[i, _U_IS_HEALER] != 0
        for j in range(E):
            u = j if healer else N + j
            ok = False
            if (not healer or j < N) and alive[b, u] and (not healer or ucon[u, _U_HEALABLE] != 0):
                dx = np.float64(pos[b, u, 0]) - xi
                dy = np.float64(pos[b, u, 1]) - yi
                ok = math.sqrt(dx * dx + dy * dy) <= SHOOT_RANGE
            avail[b, i, N_ACTIONS_NO_ATTACK + j] = ok


@_njit(inline="always")
def _obs(b, pos, health, shield, alive, last_action, episode_steps, ucon, pathing, height, flags, obs, avail):
    """``SMACFeatures.obs`` for env ``b``: ``obs [N, obs_size]`` (move, enemy, ally and own features; SMAC's
    layout and visibility rules), from ``avail`` of the same step."""
    N, E, A, utb = flags[_F_N], flags[_F_E], flags[_F_A], flags[_F_UTB]
    S = flags[_F_MAP_SIZE]
    one = np.float32(1.0)
    zero = np.float32(0.0)
    all_health = flags[_F_OBS_ALL_HEALTH] != 0
    shield_a = flags[_F_SHIELD_A] != 0
    shield_e = flags[_F_SHIELD_E] != 0
    steps = episode_steps[b]
    for i in range(N):
        al = one if alive[b, i] else zero
        xi = np.float64(pos[b, i, 0])
        yi = np.float64(pos[b, i, 1])
        o = 0
        for k in range(4):
            obs[b, i, o] = (one if avail[b, i, 2 + k] else zero) * al
            o += 1
        if flags[_F_OBS_PATHING] != 0 or flags[_F_OBS_HEIGHT] != 0:
            cx = int(xi)
            cy = int(yi)
            if flags[_F_OBS_PATHING] != 0:
                for k in range(8):
                    px = cx + _OBS_POINTS[k, 0]
                    py = cy + _OBS_POINTS[k, 1]
                    v = True
                    if px >= 0 and px < S and py >= 0 and py < S:
                        v = pathing[px, py]
                    obs[b, i, o] = (one if v else zero) * al
                    o += 1
            if flags[_F_OBS_HEIGHT] != 0:
                for k in range(9):
                    px = cx + _OBS_POINTS[k, 0]
                    py = cy + _OBS_POINTS[k, 1]
                    hv = one
                    if px >= 0 and px < S and py >= 0 and py < S:
                        hv = height[px, py]
                    obs[b, i, o] = hv * al
                    o += 1
        # enemies
        for j in range(E):
            u = N + j
            dx64 = np.float64(pos[b, u, 0]) - xi
            dy64 = np.float64(pos[b, u, 1]) - yi
            d64 = math.sqrt(dx64 * dx64 + dy64 * dy64)
            vis = one if (d64 < SIGHT_RANGE and alive[b, u]) else zero
            obs[b, i, o] = ((one if avail[b, i, N_ACTIONS_NO_ATTACK + j] else zero) * vis) * al
            obs[b, i, o + 1] = (np.float32(d64 / SIGHT_RANGE) * vis) * al
            obs[b, i, o + 2] = (np.float32(dx64 / SIGHT_RANGE) * vis) * al
            obs[b, i, o + 3] = (np.float32(dy64 / SIGHT_RANGE) * vis) * al
            o += 4
            if all_health:
                h, s = _frac(
                    health[b, u], shield[b, u], ucon[u, _U_MAX_HEALTH], ucon[u, _U_HAS_SHIELD], ucon[u, _U_MAX_SHIELD_SAFE]
                )
                obs[b, i, o] = (h * vis) * al
                o += 1
                if shield_e:
                    obs[b, i, o] = (s * vis) * al
                    o += 1
            for t in range(utb):
                obs[b, i, o] = (ucon[u, _U_COUNT + t] * vis) * al
                o += 1
        # allies other than i, in id order
        for u in range(N):
            if u == i:
                continue
            dx64 = np.float64(pos[b, u, 0]) - xi
            dy64 = np.float64(pos[b, u, 1]) - yi
            d64 = math.sqrt(dx64 * dx64 + dy64 * dy64)
            vis = one if (d64 < SIGHT_RANGE and alive[b, u]) else zero
            obs[b, i, o] = (one * vis) * al
            obs[b, i, o + 1] = (np.float32(d64 / SIGHT_RANGE) * vis) * al
            obs[b, i, o + 2] = (np.float32(dx64 / SIGHT_RANGE) * vis) * al
            obs[b, i, o + 3] = (np.float32(dy64 / SIGHT_RANGE) * vis) * al
            o += 4
            if all_health:
                h, s = _frac(
                    health[b, u], shield[b, u], ucon[u, _U_MAX_HEALTH], ucon[u, _U_HAS_SHIELD], ucon[u, _U_MAX_SHIELD_SAFE]
                )
                obs[b, i, o] = (h * vis) * al
                o += 1
                if shield_a:
                    obs[b, i, o] = (s * vis) * al
                    o += 1
            for t in range(utb):
                obs[b, i, o] = (ucon[u, _U_COUNT + t] * vis) * al
                o += 1
            if flags[_F_OBS_LAST_ACTION] != 0:
                la = last_action[b, u]
                for a in range(A):
                    obs[b, i, o] = ((one if la == a else zero) * vis) * al
                    o += 1
        # own
        if flags[_F_OWN_HEALTH] != 0:
            h, s = _frac(
                health[b, i], shield[b, i], ucon[i, _U_MAX_HEALTH], ucon[i, _U_HAS_SHIELD], ucon[i, _U_MAX_SHIELD_SAFE]
            )
            obs[b, i, o] = h * al
            o += 1
            if shield_a:
                obs[b, i, o] = s * al
                o += 1
        for t in range(utb):
            obs[b, i, o] = ucon[i, _U_COUNT + t] * al
            o += 1
        if flags[_F_OBS_TIMESTEP] != 0:
            obs[b, i, o] = zero * al  # SMAC's reserved slot, never written
            obs[b, i, o + 1] = np.float32(np.float64(steps) / np.float64(flags[F_EPISODE_LIMIT]))
            o += 2


@_njit(inline="always")
def _state(b, pos, health, shield, energy, cooldown, alive, last_action, episode_steps, ucon, flags, fparams, obs, state):
    """``SMACFeatures.state`` for env ``b``: ``state [state_size]`` (per-unit health, cooldown or energy,
    position, shield and type; last actions; timestep), or the agents' observations concatenated."""
    N, E, A, utb = flags[_F_N], flags[_F_E], flags[_F_A], flags[_F_UTB]
    S = flags[_F_MAP_SIZE]
    U = N + E
    one = np.float32(1.0)
    zero = np.float32(0.0)
    shield_a = flags[_F_SHIELD_A] != 0
    shield_e = flags[_F_SHIELD_E] != 0
    if flags[_F_OBS_INSTEAD_OF_STATE] != 0:
        F = obs.shape[2]
        for i in range(N):
            for k in range(F):
                state[b, i * F + k] = obs[b, i, k]
        return
    c = np.float32(fparams[_P_HALF_MAP])
    size = np.float32(S)
    o = 0
    for u in range(U):
        al = one if alive[b, u] else zero
        h, s = _frac(health[b, u], shield[b, u], ucon[u, _U_MAX_HEALTH], ucon[u, _U_HAS_SHIELD], ucon[u, _U_MAX_SHIELD_SAFE])
        state[b, o] = h * al
        o += 1
        if u < N:
            src = energy[b, u] if ucon[u, _U_USES_ENERGY] != 0 else cooldown[b, u]
            state[b, o] = (src / ucon[u, _U_CD_NORM]) * al
            o += 1
        state[b, o] = ((pos[b, u, 0] - c) / size) * al
        state[b, o + 1] = ((pos[b, u, 1] - c) / size) * al
        o += 2
        if (u < N and shield_a) or (u >= N and shield_e):
            state[b, o] = s * al
            o += 1
        for t in range(utb):
            state[b, o] = ucon[u, _U_COUNT + t] * al
            o += 1
    if flags[_F_STATE_LAST_ACTION] != 0:
        for i in range(N):
            la = last_action[b, i]
            for a in range(A):
                state[b, o] = one if la == a else zero
                o += 1
    if flags[_F_STATE_TIMESTEP] != 0:
        state[b, o] = np.float32(np.float64(episode_steps[b]) / np.float64(flags[F_EPISODE_LIMIT]))


@_njit(_nrt=False)
def observe_env(
    b, pos, health, shield, energy, cooldown, alive, last_action, episode_steps, ucon, pathing, height, flags, fparams,
    obs, state, avail,
):  # fmt: skip
    """Env ``b``: available actions, observations and state (``SMACFeatures.avail_actions / obs / state``)."""
    _avail_actions(b, pos, alive, ucon, pathing, flags, avail)
    _obs(b, pos, health, shield, alive, last_action, episode_steps, ucon, pathing, height, flags, obs, avail)
    _state(b, pos, health, shield, energy, cooldown, alive, last_action, episode_steps, ucon, flags, fparams, obs, state)


# ------------------------------------------------------------------------------------------------
# driver: all envs of ``env_ids`` in one call, or chunks of them on threads (``_drive``)


def _make_driver():
    def drive(
        env_ids,
        do_step,
        pos,
        health,
        shield,
        energy,
        cooldown,
        alive,
        prev_health,
        prev_shield,
        prev_alive,
        last_action,
        episode_steps,
        actions,
        ucon,
        pathing,
        height,
        flags,
        fparams,
        obs,
        state,
        avail,
        reward,
        result,
    ):
        for k in range(env_ids.shape[0]):
            b = env_ids[k]
            if do_step:
                step_env(
                    b,
                    health,
                    shield,
                    alive,
                    prev_health,
                    prev_shield,
                    prev_alive,
                    last_action,
                    episode_steps,
                    actions,
                    ucon,
                    flags,
                    fparams,
                    reward,
                    result,
                )
            observe_env(
                b,
                pos,
                health,
                shield,
                energy,
                cooldown,
                alive,
                last_action,
                episode_steps,
                ucon,
                pathing,
                height,
                flags,
                fparams,
                obs,
                state,
                avail,
            )

    # a name of its own: Numba's on-disk cache is keyed by the function's qualified name
    drive.__name__ = drive.__qualname__ = "observe_serial"
    return _njit()(drive)


# one compiled driver serves both entry points (step and features-only) and the threaded calls
_SERIAL = _make_driver()


def _drive(parallel: bool, env_ids: np.ndarray, *args) -> None:
    """``_SERIAL(env_ids, *args)``; with ``parallel``, on contiguous chunks of ``env_ids`` (one per
    Numba thread, ``numba.get_num_threads()``), each on its own thread (``runtime.chunks``)."""
    n = min(env_ids.shape[0], kernel_threads()) if parallel else 1
    run_env_ids(lambda ids: _SERIAL(ids, *args), env_ids, n)


# placeholders for the step-only arrays in a features-only call (same types, so the same compiled kernel)
_NO_ACTIONS = np.zeros((0, 0), dtype=np.int64)
_NO_REWARD = np.zeros(0, dtype=np.float32)
_NO_RESULT = np.zeros((0, 0), dtype=np.bool_)


# ------------------------------------------------------------------------------------------------
# public entry point


def v1_placeholders() -> tuple:
    """Tables of the types of ``ObserveKernel``'s ``(ucon, pathing, height, flags, fparams)``, for the
    fused step of a SMACv2 scenario (whose v1 observe branch is off)."""
    return (
        np.zeros((1, _U_COUNT), np.float32),
        np.zeros((1, 1), np.bool_),
        np.zeros((1, 1), np.float32),
        np.zeros(_F_COUNT, np.int64),
        np.zeros(_P_COUNT, np.float64),
    )


_FIELDS = ("pos", "health", "shield", "energy", "cooldown", "alive", "prev_health", "prev_shield", "prev_alive")
_FIELDS += ("last_action", "episode_steps")
_get_fields = operator.attrgetter(*_FIELDS)
_STEP_OUT = ("obs", "state", "avail_actions", "reward", "result")
_OBSERVE_OUT = ("obs", "state", "avail_actions")


class ObserveKernel:
    """``SMACSim._stage_observe`` as one compiled CPU call, bit-equal to the torch path.

    Built once per simulator from its :class:`~sc2_envs.sim.rules.features.SMACFeatures` (map, unit table,
    ``FeatureConfig`` and ``RewardConfig``); the per-map constants are copied into small NumPy
    tables here, the options are passed to the kernel as values (one compiled kernel serves every
    map and option set).

    Args:
        features: the simulator's feature functions; their device must be the CPU.
        parallel: ``True`` always splits the envs into chunks on threads (one per Numba thread:
            ``numba.set_num_threads``; ``runtime.chunks``), ``False`` runs them in the calling
            thread, ``None`` splits from ``PARALLEL_MIN_ENVS`` envs up.

    Raises:
        RuntimeError: Numba is not installed.
        ValueError: ``features`` lives on a non-CPU device.
    """

    def __init__(self, features: SMACFeatures, parallel: bool | None = None):
        if numba is None:
            raise RuntimeError("ObserveKernel needs numba (pip install numba==0.68.1); use the torch path without it")
        if features.device.type != "cpu":
            raise ValueError(f"ObserveKernel runs on the CPU; the features live on {features.device}")
        if parallel not in (None, True, False):
            raise TypeError(f"parallel must be None, True or False, got {parallel!r}")
        self.features = features
        self.parallel = parallel
        f, cfg, rcfg = features, features.cfg, features.rcfg
        N, E, U, utb = f.n_agents, f.n_enemies, f.n_units, f.utb
        self.n_agents, self.n_units, self.n_actions = N, U, f.n_actions
        t = f.table
        ucon = np.zeros((U, _U_COUNT + utb), dtype=np.float32)
        ucon[:, _U_MAX_HEALTH] = f._max_health.cpu().numpy()
        ucon[:, _U_MAX_SHIELD_SAFE] = f._max_shield_safe.cpu().numpy()
        ucon[:, _U_HAS_SHIELD] = f._has_shield.cpu().numpy()
        ucon[:N, _U_CD_NORM] = f._cd_norm.cpu().numpy()
        ucon[:N, _U_USES_ENERGY] = f._uses_energy.cpu().numpy()
        ucon[:N, _U_HEALABLE] = f._healable.cpu().numpy()
        ucon[:N, _U_IS_HEALER] = f._ally_healer.cpu().numpy()
        ucon[:N, _U_MEDIVAC] = f._ally_medivac.cpu().numpy()
        ucon[N:, _U_MEDIVAC] = f._enemy_medivac.cpu().numpy()
        ucon[:, _U_COUNT:] = f._onehot.cpu().numpy()
        self._ucon = ucon
        del t
        self._pathing = np.ascontiguousarray(f._pathing.cpu().numpy())
        self._height = np.ascontiguousarray(f._height.cpu().numpy())
        if f._ddt != torch.float64:
            raise ValueError("ObserveKernel reproduces the float64 distance path; these features use float32")
        flags = np.zeros(_F_COUNT, dtype=np.int64)
        flags[_F_N], flags[_F_E], flags[_F_A], flags[_F_UTB] = N, E, f.n_actions, utb
        flags[_F_OBS_ALL_HEALTH] = cfg.obs_all_health
        flags[_F_OWN_HEALTH] = f.own_health
        flags[_F_OBS_LAST_ACTION] = cfg.obs_last_action
        flags[_F_OBS_PATHING] = cfg.obs_pathing_grid
        flags[_F_OBS_HEIGHT] = cfg.obs_terrain_height
        flags[_F_OBS_TIMESTEP] = cfg.obs_timestep_number
        flags[_F_OBS_INSTEAD_OF_STATE] = cfg.obs_instead_of_state
        flags[_F_STATE_LAST_ACTION] = cfg.state_last_action
        flags[_F_STATE_TIMESTEP] = cfg.state_timestep_number
        flags[_F_SHIELD_A], flags[_F_SHIELD_E] = f.shield_a, f.shield_e
        flags[_F_HAS_HEALER] = f._has_healer
        flags[_F_IS_MMM] = f.is_mmm
        flags[_F_REWARD_SPARSE] = rcfg.reward_sparse
        flags[_F_REWARD_ONLY_POSITIVE] = rcfg.reward_only_positive
        flags[_F_REWARD_CLIP_REGEN] = rcfg.reward_clip_regen
        flags[_F_REWARD_SCALE] = rcfg.reward_scale
        flags[F_EPISODE_LIMIT] = f.spec.episode_limit
        flags[_F_MAP_SIZE] = f._map_size
        self._flags = flags
        fp = np.zeros(_P_COUNT, dtype=np.float64)
        fp[_P_DEATH_VALUE] = rcfg.reward_death_value
        fp[_P_WIN] = float(rcfg.reward_win)
        fp[_P_DEFEAT] = float(rcfg.reward_defeat)
        fp[_P_NEG_SCALE] = rcfg.reward_negative_scale
        # the torch code evaluates reward_death_value * reward_negative_scale * count left to right
        fp[_P_DEATH_NEG] = rcfg.reward_death_value * rcfg.reward_negative_scale
        fp[_P_SCALE_DIV] = f.max_reward / rcfg.reward_scale_rate if rcfg.reward_scale else 1.0
        fp[_P_HALF_MAP] = f._map_size / 2
        self._fparams = fp
        self._arange = np.zeros(0, dtype=np.int64)
        self._view_cache = None

    def __getstate__(self) -> dict:
        # the cached views alias this process's state tensors: a deep copy or unpickled sim views its own
        return {**self.__dict__, "_view_cache": None}

    # -- helpers
    def _all_envs(self, B: int) -> np.ndarray:
        if self._arange.shape[0] != B:
            self._arange = np.arange(B, dtype=np.int64)
        return self._arange

    def _use_parallel(self, n: int) -> bool:
        return self.parallel if self.parallel is not None else n >= PARALLEL_MIN_ENVS

    def _views(self, st: WorldState) -> tuple[tuple, int]:
        """Zero-copy NumPy views of the fields the kernel reads or writes, and ``B``.

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
        self._view_cache = (tensors, arrays, B)
        return arrays, B

    def _check_out(self, B: int, out: dict, keys: tuple) -> dict:
        """``out`` if it holds contiguous CPU tensors of the shapes and dtypes ``keys`` name, else ``ValueError``."""
        f, N = self.features, self.n_agents
        want = dict(
            obs=((B, N, f.obs_size), torch.float32),
            state=((B, f.state_size), torch.float32),
            avail_actions=((B, N, self.n_actions), torch.bool),
            reward=((B,), torch.float32),
            result=((3, B), torch.bool),
        )
        for k in keys:
            shape, dtype = want[k]
            x = out.get(k)
            if not isinstance(x, torch.Tensor) or tuple(x.shape) != shape or x.dtype != dtype:
                got = None if not isinstance(x, torch.Tensor) else (x.dtype, tuple(x.shape))
                raise ValueError(f"out[{k!r}] must be a {dtype} tensor of shape {shape}, got {got}")
            if x.device.type != "cpu" or not x.is_contiguous():
                raise ValueError(f"out[{k!r}] must be a contiguous CPU tensor")
        return out

    # -- entry points
    def __call__(self, st: WorldState, actions: torch.Tensor, out: dict | None = None) -> dict[str, torch.Tensor]:
        """The observe stage of one env step, in place on ``st``; same result as ``SMACSim._stage_observe``.

        Increments ``st.episode_steps``, sets ``st.last_action = actions``, scores the step, copies
        ``health / shield / alive`` into ``prev_*`` and computes the features of the new state.

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
        (pos, health, shield, energy, cooldown, alive, prev_health, prev_shield, prev_alive, last_action, steps), B = (
            self._views(st)
        )
        N = self.n_agents
        if not isinstance(actions, torch.Tensor) or actions.dtype != torch.int64 or actions.shape != (B, N):
            got = (actions.dtype, tuple(actions.shape)) if isinstance(actions, torch.Tensor) else type(actions)
            raise ValueError(f"actions must be an int64 tensor of shape ({B}, {N}), got {got}")
        if actions.device.type != "cpu":
            raise ValueError(f"ObserveKernel runs on the CPU; actions are on {actions.device}")
        if out is None:
            f = self.features
            obs = np.empty((B, N, f.obs_size), dtype=np.float32)
            state = np.empty((B, f.state_size), dtype=np.float32)
            avail = np.empty((B, N, self.n_actions), dtype=np.bool_)
            reward = np.empty(B, dtype=np.float32)
            result = np.empty((3, B), dtype=np.bool_)
        else:
            o = self._check_out(B, out, _STEP_OUT)
            obs, state, avail = o["obs"].numpy(), o["state"].numpy(), o["avail_actions"].numpy()
            reward, result = o["reward"].numpy(), o["result"].numpy()
        _drive(
            self._use_parallel(B),
            self._all_envs(B),
            True,
            pos,
            health,
            shield,
            energy,
            cooldown,
            alive,
            prev_health,
            prev_shield,
            prev_alive,
            last_action,
            steps,
            np.ascontiguousarray(actions.numpy()),
            self._ucon,
            self._pathing,
            self._height,
            self._flags,
            self._fparams,
            obs,
            state,
            avail,
            reward,
            result,
        )
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
        return dict(
            obs=torch.from_numpy(obs),
            state=torch.from_numpy(state),
            avail_actions=torch.from_numpy(avail),
            reward=torch.from_numpy(reward),
            battle_won=torch.from_numpy(result[0]),
            lost=torch.from_numpy(result[1]),
            draw=torch.from_numpy(result[2]),
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
            "avail_actions": [B, N, n_actions] bool}`` (``out`` itself when given).

        Raises:
            ValueError: bad shapes or devices, ``env_ids`` out of range, or ``env_ids`` without ``out``.
        """
        (pos, health, shield, energy, cooldown, alive, prev_health, prev_shield, prev_alive, last_action, steps), B = (
            self._views(st)
        )
        if out is None:
            if env_ids is not None:
                raise ValueError("observe(env_ids=...) writes rows of existing outputs: pass out")
            f = self.features
            out = dict(
                obs=torch.empty(B, self.n_agents, f.obs_size),
                state=torch.empty(B, f.state_size),
                avail_actions=torch.empty(B, self.n_agents, self.n_actions, dtype=torch.bool),
            )
        else:
            self._check_out(B, out, _OBSERVE_OUT)
        if env_ids is None:
            ids = self._all_envs(B)
        else:
            ids = np.ascontiguousarray(torch.as_tensor(env_ids).cpu().numpy(), dtype=np.int64).reshape(-1)
            if ids.size and (ids.min() < 0 or ids.max() >= B):
                raise ValueError(f"env_ids must be in [0, {B}), got min {ids.min()} max {ids.max()}")
        _drive(
            self._use_parallel(ids.size),
            ids,
            False,
            pos,
            health,
            shield,
            energy,
            cooldown,
            alive,
            prev_health,
            prev_shield,
            prev_alive,
            last_action,
            steps,
            _NO_ACTIONS,
            self._ucon,
            self._pathing,
            self._height,
            self._flags,
            self._fparams,
            out["obs"].numpy(),
            out["state"].numpy(),
            out["avail_actions"].numpy(),
            _NO_REWARD,
            _NO_RESULT,
        )
        return out
