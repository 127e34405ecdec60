"""The auto-reset of SMACv2 scenarios on the numba path, compiled (bit-equal to the torch code).

The torch reference is ``rules.reset.fresh_scenario_state`` with ``smacv2.ScenarioSampler.sample``
(``_team``, ``_positions``, ``spread``, ``sort_allies``): every draw is a counter-based
``rng.uniform`` of the env's episode count and key, so one env's new episode can be computed on its
own. On the torch path it costs a few milliseconds whatever the number of envs (about 50 small
tensor operations); an env step on the numba path costs tens of microseconds, so with episodes of
about 50-100 steps the torch reset would dominate small batches. :class:`ScenarioResetKernel` runs
the same rules as loops for the envs that ended, in place on the ``WorldState`` (through its
NumPy views), with the same float32 operations and the same draws in the same key order;
``tests/test_kernel_v2.py`` compares it field by field with ``copy_envs_from(_fresh_state(), done)``
over every race, pinned scenarios, negative keys and large episode counts.
"""

from __future__ import annotations

import numba
import numpy as np

from sc2_envs import smacv2 as v2
from sc2_envs.sim import rng
from sc2_envs.sim.numba.dynamics import can_stand
from sc2_envs.sim.numba.rng import INIT, absorb, uniform
from sc2_envs.sim.numba.state import JIT, STATE_FIELDS, EpisodeState, SeedState
from sc2_envs.sim.state import ORDER_ATTACK_MOVE, ORDER_NONE, WorldState

_F32 = np.float32
_MAP_X, _MAP_Y = _F32(v2.MAP_X), _F32(v2.MAP_Y)
_HALF_X, _HALF_Y = _F32(v2.MAP_X / 2), _F32(v2.MAP_Y / 2)
_REFLECT_W = _F32(v2.MAP_X / 2 - 1)  # reflect: allies' x in [0, map_x / 2 - 1)
_OFF = _F32(2.0)  # surrounded: the groups' inner points are the centre +- 2
_SPACING_SLACK = _F32(0.05)  # ScenarioSampler.spread: lattice spacing = largest diameter + 0.05
_POS_HI = _F32(v2.MAP_X - 1e-3)
_TWO = _F32(2.0)
_FOUR = _F32(4.0)
ZERO32, ONE32, TWO32 = _F32(0.0), _F32(1.0), _F32(2.0)
LOOPS_SINCE_DAMAGE_FRESH = _F32(1e6)  # loops_since_damage of a fresh unit (rules.reset.fresh_state)
_ATTACK_POINT = (_F32(8.0), _F32(16.0))  # the scenario's unused attack point (UnitTable.build_scenario's kinds map)


@numba.njit(inline="always", **JIT)
def _u(ep, a, key, stream):
    """``rng.uniform(ep, a, stream, key)``."""
    return uniform(absorb(absorb(absorb(absorb(INIT, ep), a), stream), key))


@numba.njit(inline="always", **JIT)
def _u2(ep, a, i, key, stream):
    """``rng.uniform(ep, a, i, stream, key)``."""
    return uniform(absorb(absorb(absorb(absorb(absorb(INIT, ep), a), i), stream), key))


@numba.njit(**JIT)
def _team(ep, key, n, which, cum, config_kind, exception, stream, out, off):
    """``ScenarioSampler._team`` for one env: ``n`` kind indices into ``out[off : off + n]`` (attempt
    ``0, 1, ...`` until the team is not made only of exception types)."""
    if n == 0:
        return
    C = cum.shape[0]
    att = 0
    while True:
        only_exceptions = True
        for i in range(n):
            u = uniform(absorb(absorb(absorb(absorb(absorb(absorb(INIT, ep), which), att), i), stream), key))
            c = 0  # torch.searchsorted(cum, u, right=True): the entries <= u
            for q in range(C):
                if cum[q] <= u:
                    c += 1
            c = min(c, C - 1)
            k = config_kind[c]
            out[off + i] = k
            only_exceptions = only_exceptions and exception[k]
        if not only_exceptions:
            return
        att += 1


@numba.njit(**JIT)
def _sample_env(ep, key, N, E, p_reflect, cum, config_kind, exception, sort_rank, radius, hexo, stream_team, stream_pos,
                kind, pos, gid, spacing, tmp_kind, tmp_pos):  # fmt: skip
    """``ScenarioSampler.sample`` for one env: ``kind [U]`` and ``pos [U, 2]`` (scratch ``gid``,
    ``spacing``, ``tmp_kind [U]``, ``tmp_pos [U, 2]``)."""
    U = N + E
    P = stream_pos
    _team(ep, key, N, 0, cum, config_kind, exception, stream_team, kind, 0)
    for j in range(min(N, E)):  # the enemy team is a copy of the ally team ...
        kind[N + j] = kind[j]
    if E > N:  # ... and the extra enemies a separately drawn team
        _team(ep, key, E - N, 1, cum, config_kind, exception, stream_team, kind, 2 * N)
    # ScenarioSampler._positions
    surrounded = _u(ep, 0, key, P) > p_reflect
    for i in range(N):
        pos[i, 0] = _u2(ep, 1, i, key, P) * _REFLECT_W
        pos[i, 1] = _u2(ep, 2, i, key, P) * _MAP_Y
    for j in range(E):
        if j < N:
            pos[N + j, 0] = _MAP_X - pos[j, 0]
            pos[N + j, 1] = pos[j, 1]
        else:
            pos[N + j, 0] = _u2(ep, 3, j, key, P) * _HALF_X + _HALF_X
            pos[N + j, 1] = _u2(ep, 4, j, key, P) * _MAP_Y
    for u in range(U):
        gid[u] = -1
    if surrounded:
        n_groups = 1 + min(np.int64(_u(ep, 5, key, P) * _FOUR), 3)
        ng = _F32(n_groups)
        for j in range(E):  # labels, sorted: the multinomial counts assigned in group order
            lab = min(np.int64(_u2(ep, 6, j, key, P) * ng), n_groups - 1)
            c = j
            while c > 0 and gid[N + c - 1] > lab:
                gid[N + c] = gid[N + c - 1]
                c -= 1
            gid[N + c] = lab
        u7 = np.empty(4, np.float32)
        u8 = np.empty(4, np.float32)
        perm = np.empty(4, np.int64)
        for k in range(4):
            u7[k] = _u2(ep, 7, k, key, P)
            u8[k] = _u2(ep, 8, k, key, P)
            c = k  # stable argsort of u7
            while c > 0 and u7[perm[c - 1]] > u7[k]:
                perm[c] = perm[c - 1]
                c -= 1
            perm[c] = k
        for i in range(N):
            pos[i, 0] = _HALF_X
            pos[i, 1] = _HALF_Y
            gid[i] = 0
        for j in range(E):
            g = gid[N + j]
            d = perm[g]  # the group's diagonal: corners (0,0), (0,Y), (X,Y), (X,0); inner points centre +- 2
            t = u8[g]
            ix = _HALF_X - _OFF if d < 2 else _HALF_X + _OFF
            iy = _HALF_Y - _OFF if (d == 0 or d == 3) else _HALF_Y + _OFF
            cx = ZERO32 if d < 2 else _MAP_X
            cy = ZERO32 if (d == 0 or d == 3) else _MAP_Y
            pos[N + j, 0] = ix * t + cx * (ONE32 - t)
            pos[N + j, 1] = iy * t + cy * (ONE32 - t)
            gid[N + j] = 1 + g
    # ScenarioSampler.spread: the k-th member of a group onto the k-th lattice point, spaced by the
    # group's largest diameter + 0.05
    for u in range(U):
        big = ZERO32
        for v in range(U):
            if gid[v] >= 0 and gid[v] == gid[u]:
                r = radius[kind[v]]
                big = r if r > big else big
        spacing[u] = _TWO * big + _SPACING_SLACK
    H = hexo.shape[0]
    for u in range(U):
        if gid[u] >= 0:
            rank = 0
            for v in range(u):
                if gid[v] == gid[u]:
                    rank += 1
            rank = min(rank, H - 1)
            pos[u, 0] = pos[u, 0] + hexo[rank, 0] * spacing[u]
            pos[u, 1] = pos[u, 1] + hexo[rank, 1] * spacing[u]
        for c in range(2):
            pos[u, c] = min(max(pos[u, c], ZERO32), _POS_HI)
    # ScenarioSampler.sort_allies: stable by (ally type id, x, y)
    order = np.empty(N, np.int64)
    for i in range(N):
        c = i
        while c > 0:
            o = order[c - 1]
            ro, ri = sort_rank[kind[o]], sort_rank[kind[i]]
            later = ro > ri or (ro == ri and (pos[o, 0] > pos[i, 0] or (pos[o, 0] == pos[i, 0] and pos[o, 1] > pos[i, 1])))
            if not later:
                break
            order[c] = o
            c -= 1
        order[c] = i
    for i in range(N):
        tmp_kind[i] = kind[order[i]]
        tmp_pos[i, 0] = pos[order[i], 0]
        tmp_pos[i, 1] = pos[order[i], 1]
    for i in range(N):
        kind[i] = tmp_kind[i]
        pos[i, 0] = tmp_pos[i, 0]
        pos[i, 1] = tmp_pos[i, 1]


@numba.njit(**JIT)
def fresh_state(
    done, spawn, is_ally, jitter, ap_mode, ap, enemy_ap, unit_ints, sim_flags, terrain, streams, units, episode, seeds
):
    """``rules.reset.fresh_state`` copied into the envs ``done`` (``copy_envs_from``), in place, for SMAC v1 maps.

    ``spawn``: ``(spawn_pos, max_health, max_shield, energy_start)`` of the ``UnitTable``; ``ap_mode``: 0
    no attack point, 1 the fixed point ``ap[0]``, 2 uniform on the segment ``ap[0] -> ap[1]``;
    ``enemy_ap``: enemies attack-move to the attack point (else to their own position); ``unit_ints``, ``sim_flags``,
    ``terrain``: the tick kernel's (``can_stand``); ``streams``: ``sim.rng``'s ``(STREAM_SPAWN,
    STREAM_COOLDOWN, STREAM_ATTACK_POINT)``. ``units``, ``episode``, ``seeds``: the ``WorldState`` as a
    ``UnitState``, ``EpisodeState`` and ``SeedState`` (plain tuples, ``numba.state``)."""
    spawn_pos, max_health, max_shield, energy_start = spawn
    pathing, level, cliff_walkable = terrain[0], terrain[1], terrain[2]
    stream_spawn, stream_cooldown, stream_attack_point = streams
    (pos, health, shield, energy, cooldown, alive, order_kind, order_target, order_point, loops_since_damage, last_attacker,
     jitter_state, windup, windup_target, hits_left, missile_eta, missile_target, missile_hits,
     burst_pending) = units  # fmt: skip
    prev_health, prev_shield, prev_alive, last_action, episode_steps, unit_kind, fov_dir, enemy_tag, max_reward = episode
    attack_point, env_seed, episode_count = seeds
    B, U = pos.shape[0], pos.shape[1]
    for b in range(B):
        if not done[b]:
            continue
        ec = episode_count[b] + 1
        seed = env_seed[b]
        episode_count[b] = ec
        if ap_mode == 2:
            u = uniform(absorb(absorb(absorb(INIT, ec), stream_attack_point), seed))
            for c in range(2):
                attack_point[b, c] = ap[0, c] + u * (ap[1, c] - ap[0, c])
        elif ap_mode == 1:
            attack_point[b, 0] = ap[0, 0]
            attack_point[b, 1] = ap[0, 1]
        else:
            attack_point[b, 0] = ZERO32
            attack_point[b, 1] = ZERO32
        for u in range(U):
            px, py = spawn_pos[u, 0], spawn_pos[u, 1]
            if jitter > ZERO32:
                h = absorb(absorb(INIT, ec), u)
                jx = px + (uniform(absorb(absorb(absorb(h, 0), stream_spawn), seed)) * TWO32 - ONE32) * jitter
                jy = py + (uniform(absorb(absorb(absorb(h, 1), stream_spawn), seed)) * TWO32 - ONE32) * jitter
                if can_stand(u, jx, jy, px, py, unit_ints, sim_flags, pathing, level, cliff_walkable):
                    px, py = jx, jy
            pos[b, u, 0] = px
            pos[b, u, 1] = py
            health[b, u] = max_health[u]
            shield[b, u] = max_shield[u]
            energy[b, u] = energy_start[u]
            cooldown[b, u] = ZERO32
            alive[b, u] = True
            enemy = not is_ally[u]
            order_kind[b, u] = ORDER_ATTACK_MOVE if enemy else ORDER_NONE
            order_target[b, u] = -1
            if enemy and enemy_ap:
                order_point[b, u, 0] = attack_point[b, 0]
                order_point[b, u, 1] = attack_point[b, 1]
            else:
                order_point[b, u, 0] = px
                order_point[b, u, 1] = py
            loops_since_damage[b, u] = LOOPS_SINCE_DAMAGE_FRESH
            last_attacker[b, u] = -1
            prev_health[b, u] = max_health[u]
            prev_shield[b, u] = max_shield[u]
            prev_alive[b, u] = True
            jitter_state[b, u] = np.int64(absorb(absorb(absorb(absorb(INIT, ec), u), stream_cooldown), seed))
            windup[b, u] = ZERO32
            windup_target[b, u] = -1
            hits_left[b, u] = ZERO32
            missile_eta[b, u] = ZERO32
            missile_target[b, u] = -1
            missile_hits[b, u] = ZERO32
            burst_pending[b, u] = False
            unit_kind[b, u] = 0
        for n in range(last_action.shape[1]):
            last_action[b, n] = -1
            fov_dir[b, n, 0] = ZERO32
            fov_dir[b, n, 1] = ZERO32
        for j in range(enemy_tag.shape[1]):
            enemy_tag[b, j] = -1
        episode_steps[b] = 0
        max_reward[b] = ZERO32


@numba.njit(**JIT)
def fresh_scenario_state(idx, N, E, T, p_reflect, tables, reward_base, streams, pins, units, episode, seeds):
    """``rules.reset.fresh_scenario_state`` copied into the envs ``idx`` ([k] int64), in place.

    ``tables``: ``ScenarioResetKernel.tables`` (the sampler's and the kinds' tables); ``streams``:
    ``sim.rng``'s ``(STREAM_SCENARIO_TEAM, STREAM_SCENARIO_POS, STREAM_COOLDOWN)``; ``pins``: ``SMACSim``'s
    ``(pin_mask, pin_kind, pin_pos, pin_has_pos)``; ``units``, ``episode``, ``seeds``: the ``WorldState``
    as a ``UnitState``, ``EpisodeState`` and ``SeedState`` (plain tuples, ``numba.state``)."""
    cum, config_kind, exception, sort_rank, radius, hexo, kmaxh, kmaxs, kestart = tables
    stream_team, stream_pos, stream_cooldown = streams
    pin_mask, pin_kind, pin_pos, pin_has_pos = pins
    (pos, health, shield, energy, cooldown, alive, order_kind, order_target, order_point, loops_since_damage, last_attacker,
     jitter_state, windup, windup_target, hits_left, missile_eta, missile_target, missile_hits,
     burst_pending) = units  # fmt: skip
    prev_health, prev_shield, prev_alive, last_action, episode_steps, unit_kind, fov_dir, enemy_tag, max_reward = episode
    attack_point, env_seed, episode_count = seeds
    U = N + E
    kind = np.zeros(U, np.int64)
    p = np.zeros((U, 2), np.float32)
    gid = np.zeros(U, np.int64)
    spacing = np.zeros(U, np.float32)
    tmp_kind = np.zeros(U, np.int64)
    tmp_pos = np.zeros((U, 2), np.float32)
    for q in range(idx.shape[0]):
        b = idx[q]
        ec = episode_count[b] + 1
        seed = env_seed[b]
        episode_count[b] = ec
        _sample_env(ec, seed, N, E, p_reflect, cum, config_kind, exception, sort_rank, radius, hexo, stream_team,
                    stream_pos, kind, p, gid, spacing, tmp_kind, tmp_pos)  # fmt: skip
        if pin_mask[b]:
            for u in range(U):
                kind[u] = pin_kind[b, u]
                if pin_has_pos[b]:
                    p[u, 0] = pin_pos[b, u, 0]
                    p[u, 1] = pin_pos[b, u, 1]
        hp = 0.0
        for u in range(U):
            r = kind[u] + (0 if u < N else T)
            pos[b, u, 0] = p[u, 0]
            pos[b, u, 1] = p[u, 1]
            health[b, u] = kmaxh[r]
            shield[b, u] = kmaxs[r]
            energy[b, u] = kestart[r]
            cooldown[b, u] = ZERO32
            alive[b, u] = True
            order_kind[b, u] = ORDER_NONE  # enemies get orders from the map trigger (EnemyAI)
            order_target[b, u] = -1
            order_point[b, u, 0] = p[u, 0]
            order_point[b, u, 1] = p[u, 1]
            loops_since_damage[b, u] = LOOPS_SINCE_DAMAGE_FRESH
            last_attacker[b, u] = -1
            prev_health[b, u] = kmaxh[r]
            prev_shield[b, u] = kmaxs[r]
            prev_alive[b, u] = True
            jitter_state[b, u] = np.int64(absorb(absorb(absorb(absorb(INIT, ec), u), stream_cooldown), seed))
            windup[b, u] = ZERO32
            windup_target[b, u] = -1
            hits_left[b, u] = ZERO32
            missile_eta[b, u] = ZERO32
            missile_target[b, u] = -1
            missile_hits[b, u] = ZERO32
            burst_pending[b, u] = False
            unit_kind[b, u] = kind[u]
            if u >= N:  # SMACv2Features.max_reward_of: whole numbers, exact in any order
                hp += np.float64(kmaxh[r] + kmaxs[r])
        attack_point[b, 0] = _ATTACK_POINT[0]
        attack_point[b, 1] = _ATTACK_POINT[1]
        for n in range(N):
            last_action[b, n] = -1
            fov_dir[b, n, 0] = ONE32
            fov_dir[b, n, 1] = ZERO32
        for j in range(E):
            enemy_tag[b, j] = -1
        episode_steps[b] = 0
        if ec == 0:  # SMACv2 fixes max_reward on the first episode after seeding
            max_reward[b] = np.float32(reward_base + hp)


_FIELDS = STATE_FIELDS + EpisodeState._fields + SeedState._fields  # (views split by group)
_N_UNITS, _N_EPISODE = len(STATE_FIELDS), len(EpisodeState._fields)


class ScenarioResetKernel:
    """New SMACv2 episodes for some envs of a ``SMACSim``, compiled; see the module docstring.

    Args:
        sim: the scenario's simulator (its ``sampler``, kinds table, features, reward options and
            pin tensors, which are read through views: later ``pin_scenario`` calls take effect).

    The tables are copied at construction (``SMACSim._build_kernels`` rebuilds them).
    """

    def __init__(self, sim):
        s = sim.sampler
        spec = sim.scenario
        kt = sim.table.kinds
        T = len(kt.names) // 2
        self.N, self.E, self.T = spec.n_units, spec.n_enemies, T
        self.p_reflect = np.float32(spec.p_reflect)  # (torch compares the float32 draw with it in float32)

        def a(x, dtype):
            return np.ascontiguousarray(x.detach().cpu().numpy().astype(dtype))

        self.tables = (
            a(s._cum, np.float32),
            a(s._config_kind, np.int64),
            a(s._exception, np.bool_),
            a(s._sort_rank, np.int64),
            a(s._radius, np.float32),
            a(s._hex, np.float32),
            a(kt.max_health, np.float32),
            a(kt.max_shield, np.float32),
            a(kt.energy_start, np.float32),
        )
        r = sim.features.rcfg
        self.reward_base = float(self.E * r.reward_death_value + r.reward_win)  # as SMACv2Features.max_reward_of
        self._sim_pins = (sim._pin_mask, sim._pin_kind, sim._pin_pos, sim._pin_has_pos)
        self._key: tuple | None = None
        self._arrays: tuple = ()

    def _pins(self) -> tuple:
        out = []
        for x in self._sim_pins:
            if x.device.type != "cpu" or not x.is_contiguous():
                raise ValueError("the pinned-scenario tensors must be contiguous CPU tensors for the numba reset")
            out.append(x.numpy())
        return tuple(out)

    def _views(self, st: WorldState) -> tuple:
        """NumPy views of every ``WorldState`` field as ``(units, episode, seeds)`` (``numba.state``'s
        ``UnitState``, ``EpisodeState``, ``SeedState``, plain tuples; kept while ``st`` holds the same tensors; a
        non-contiguous field is replaced by a contiguous copy in ``st`` first)."""
        tensors = tuple(getattr(st, n) for n in _FIELDS)
        key = self._key
        if key is not None and all(a is b for a, b in zip(tensors, key, strict=True)):
            return self._arrays
        for n, x in zip(_FIELDS, tensors, strict=True):
            if x.device.type != "cpu" or not x.is_contiguous() or x.requires_grad:
                setattr(st, n, x.detach().cpu().contiguous())
        self._key = tuple(getattr(st, n) for n in _FIELDS)
        a, n, m = tuple(x.numpy() for x in self._key), _N_UNITS, _N_UNITS + _N_EPISODE
        self._arrays = (a[:n], a[n:m], a[m:])
        return self._arrays

    def __getstate__(self) -> dict:
        # the cached views alias this process's tensors: a copied or unpickled sim views its own
        return {**self.__dict__, "_key": None, "_arrays": ()}

    def reset_envs(self, st: WorldState, idx: np.ndarray) -> None:
        """``st.copy_envs_from(sim._fresh_state(), done)`` for the envs ``idx`` ([k] int64), in place."""
        ids = np.ascontiguousarray(idx, dtype=np.int64)
        streams = (rng.STREAM_SCENARIO_TEAM, rng.STREAM_SCENARIO_POS, rng.STREAM_COOLDOWN)
        units, episode, seeds = self._views(st)
        fresh_scenario_state(
            ids, self.N, self.E, self.T, self.p_reflect, self.tables, self.reward_base, streams, self._pins(), units,
            episode, seeds,
        )  # fmt: skip


__all__ = ["ScenarioResetKernel"]
