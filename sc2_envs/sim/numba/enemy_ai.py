"""Numba mirror of ``sim.rules.enemy_ai``: the built-in enemy's orders for one env.

``act`` is ``EnemyAI.act`` for env ``b`` (SMAC's attack-group trigger or the in-game acquisition rule,
then the medivacs' heal orders), bit-equal to the torch reference (``tests/test_kernel_tick.py``).
"""

from __future__ import annotations

import numba
import numpy as np

from sc2_envs.sim.numba.state import (
    BIG,
    CF_ACQUIRE,
    CF_MAXHP,
    CF_PRIOCOST,
    CF_RADIUS,
    CI_ARMED,
    CI_FRIENDBIO,
    CI_HEALER,
    FL_AI_HEALER,
    FL_ATTACK_ALLIES,
    FL_ATTACK_CLOSEST,
    FL_N,
    JIT,
    KEEP,
    LEASH_F,
    ONE,
    ZERO,
)
from sc2_envs.sim.state import ORDER_ATTACK, ORDER_ATTACK_MOVE, ORDER_HEAL


@numba.njit(inline="always", **JIT)
def act(b, pos, alive, health, order_kind, order_target, last_attacker, unit_floats, unit_ints, can_target, sim_flags):
    """``EnemyAI.act`` for env ``b``: every enemy's order, in place. Each enemy reads only its own order
    fields, so updating them in place is safe."""
    U = pos.shape[1]
    N = sim_flags[FL_N]
    p, al, hp = pos[b], alive[b], health[b]
    ok_, ot = order_kind[b], order_target[b]
    group = sim_flags[FL_ATTACK_ALLIES] or sim_flags[FL_ATTACK_CLOSEST]
    for e in range(N, U):
        cur = ot[e]
        k = ok_[e]
        if group:  # EnemyAI._attack_group
            nearest = 0
            best = BIG
            any_valid = False
            for n in range(N):
                dx = p[e, 0] - p[n, 0]
                dy = p[e, 1] - p[n, 1]
                edge = np.sqrt(dx * dx + dy * dy)
                if not sim_flags[FL_ATTACK_CLOSEST]:  # (attack_closest: the map trigger's centre distance)
                    edge = edge - unit_floats[CF_RADIUS, e] - unit_floats[CF_RADIUS, n]
                valid = al[n] and can_target[e, n]
                s = edge if valid else BIG
                if n == 0 or s < best:
                    best = s
                    nearest = n
                any_valid = any_valid or valid
            keep = cur >= 0 and cur < N and al[cur] and can_target[e, cur]
            pick = cur if keep else nearest
            has = any_valid and al[e] and unit_ints[CI_ARMED, e] != 0
            t = pick if has else -1
            if has:
                k = ORDER_ATTACK
        else:
            best_n = 0
            best = BIG
            any_valid = False
            acq = unit_floats[CF_ACQUIRE, e]
            for n in range(N):
                dx = p[e, 0] - p[n, 0]
                dy = p[e, 1] - p[n, 1]
                edge = np.sqrt(dx * dx + dy * dy) - unit_floats[CF_RADIUS, e] - unit_floats[CF_RADIUS, n]
                is_cur = cur == n
                attacker = last_attacker[b, e] == n
                targetable = al[n] and can_target[e, n]
                valid = targetable and (edge <= acq or (is_cur and edge <= acq + LEASH_F) or attacker)
                score = edge + unit_floats[CF_PRIOCOST, n] - KEEP * (ONE if is_cur else ZERO)
                s = score if valid else BIG
                if n == 0 or s < best:
                    best = s
                    best_n = n
                any_valid = any_valid or valid
            has = any_valid and al[e] and unit_ints[CI_ARMED, e] != 0
            t = best_n if has else -1
        if sim_flags[FL_AI_HEALER]:  # EnemyAI._healers
            healer = unit_ints[CI_HEALER, e] != 0
            any_friend = False
            any_damaged = False
            best_d = BIG
            best_a = BIG
            pd = 0
            pa = 0
            for f in range(N, U):
                dx = p[e, 0] - p[f, 0]
                dy = p[e, 1] - p[f, 1]
                d = np.sqrt(dx * dx + dy * dy)
                friend = al[f] and unit_ints[CI_FRIENDBIO, f] != 0
                damaged = friend and hp[f] < unit_floats[CF_MAXHP, f]
                dd = d if damaged else BIG
                da = d if friend else BIG
                if f == N or dd < best_d:
                    best_d = dd
                    pd = f
                if f == N or da < best_a:
                    best_a = da
                    pa = f
                any_friend = any_friend or friend
                any_damaged = any_damaged or damaged
            pick = pd if any_damaged else pa
            heal = healer and al[e] and any_friend
            if heal:
                t = pick
                k = ORDER_HEAL
            elif healer:
                t = -1
                k = ORDER_ATTACK_MOVE
        ot[e] = t
        ok_[e] = k
