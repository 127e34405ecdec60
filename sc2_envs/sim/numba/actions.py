"""Numba mirror of ``sim.rules.actions``: SMAC actions checked and turned into unit orders.

``check_actions`` is ``rules.actions.check_actions`` over a whole batch, ``apply_actions``
``rules.actions.apply_actions`` for one env; ``orders_env`` is the orders stage of one env (the actions,
then ``numba.enemy_ai.act``), run over ranges of envs by ``orders_range`` / ``orders_serial``.
Bit-equal to the torch reference (``tests/test_kernel_tick.py``, ``tests/test_kernel_step.py``).
"""

from __future__ import annotations

import numba
import numpy as np

from sc2_envs.sim.numba.enemy_ai import act
from sc2_envs.sim.numba.state import (
    CI_HEALER,
    FL_N,
    FL_NFOV,
    FL_NNA,
    FL_PER_ENV,
    JIT,
    MOVE_F,
    KindTables,
    UnitState,
    UnitTables,
    env_unit_tables,
    gather_env_tables,
)
from sc2_envs.sim.state import ORDER_ATTACK, ORDER_HEAL, ORDER_MOVE, ORDER_NONE

# error codes of ``check_actions``, with the flat index b * N + n of the first bad action
OK, OUT_OF_RANGE, UNAVAILABLE = 0, 1, 2


@numba.njit(**JIT)
def check_actions(actions, alive, avail_in, lenient, act, invalid):
    """Validate ``actions [B, N]`` against ``avail_in [B, N, A]``; write the actions to apply into ``act``
    and the replaced ones into ``invalid``. Returns ``(code, flat index)`` of the first error (row-major,
    out-of-range before unavailable, as ``rules.actions.check_actions``), ``(OK, -1)`` when there is none."""
    B, N = actions.shape
    A = avail_in.shape[2]
    for b in range(B):
        for n in range(N):
            a = actions[b, n]
            if a < 0 or a >= A:
                return OUT_OF_RANGE, b * N + n
    for b in range(B):
        for n in range(N):
            a = actions[b, n]
            ok = avail_in[b, n, a]
            invalid[b, n] = not ok
            if ok:
                act[b, n] = a
            elif lenient:
                act[b, n] = 1 if alive[b, n] else 0
            else:
                return UNAVAILABLE, b * N + n
    return OK, -1


@numba.njit(inline="always", **JIT)
def apply_actions(b, actions, pos, order_kind, order_target, order_point, fov_dir, unit_ints, move_dirs, fov_dirs, sim_flags):
    """``rules.actions.apply_actions`` for env ``b``: the agents' SMAC actions -> their orders, in place.

    ``fov_dir [B, N, 2]`` and ``fov_dirs [K, 2]`` (``SMACv2Features._fov_dirs``): a look action
    ``6 + k`` (SMACv2 ``conic_fov``, ``k < sim_flags[FL_NFOV]``) sets the agent's look direction and keeps its order.
    """
    N = sim_flags[FL_N]
    nna = sim_flags[FL_NNA]
    nfov = sim_flags[FL_NFOV]
    p = pos[b]
    ok_, ot, op = order_kind[b], order_target[b], order_point[b]
    for u in range(N):
        a = actions[b, u]
        is_move = a >= 2 and a <= 5
        is_target = a >= nna
        look = nfov > 0 and a >= 6 and a < 6 + nfov
        j = a - nna
        j = j if j > 0 else 0
        healer = unit_ints[CI_HEALER, u] != 0
        k = ok_[u]
        if a == 1:
            k = ORDER_NONE
        if is_move:
            k = ORDER_MOVE
        if is_target:
            k = ORDER_HEAL if healer else ORDER_ATTACK
        if is_target:
            t = j if healer else j + N
        elif a == 0 or look:
            t = ot[u]
        else:
            t = -1
        ok_[u] = k
        ot[u] = t
        if is_move:
            d = min(a, 5)
            op[u, 0] = p[u, 0] + MOVE_F * move_dirs[d, 0]
            op[u, 1] = p[u, 1] + MOVE_F * move_dirs[d, 1]
        if look:
            fov_dir[b, u, 0] = fov_dirs[a - 6, 0]
            fov_dir[b, u, 1] = fov_dirs[a - 6, 1]


@numba.njit(**JIT)
def orders_env(b, actions, pos, alive, health, order_kind, order_target, order_point, last_attacker, fov_dir,
               unit_floats, unit_ints, can_target, move_dirs, fov_dirs, sim_flags):  # fmt: skip
    """The orders stage of env ``b``: ``apply_actions``, then the enemy AI's orders (``enemy_ai.act``)."""
    apply_actions(b, actions, pos, order_kind, order_target, order_point, fov_dir, unit_ints, move_dirs, fov_dirs, sim_flags)
    act(b, pos, alive, health, order_kind, order_target, last_attacker, unit_floats, unit_ints, can_target, sim_flags)


@numba.njit(**JIT)
def orders_range(b0, b1, actions, units, fov_dir, tables, move_dirs, fov_dirs, sim_flags, unit_kind, kinds):
    """``orders_env`` for envs ``b0 .. b1 - 1`` (each env's own tables with ``sim_flags[FL_PER_ENV]``). ``units``,
    ``tables``, ``kinds``: a ``UnitState``, ``UnitTables`` and ``KindTables`` as plain tuples (``numba.state``);
    ``fov_dir``, ``unit_kind``: ``WorldState``'s."""
    s, t = UnitState(*units), UnitTables(*tables)
    pos, alive, health, order_kind, order_target, order_point = (
        s.pos,
        s.alive,
        s.health,
        s.order_kind,
        s.order_target,
        s.order_point,
    )
    last_attacker = s.last_attacker
    if sim_flags[FL_PER_ENV]:
        k = KindTables(*kinds)
        et = env_unit_tables(t.enemy_pair)
        ecf, eci, ecan = et.unit_floats, et.unit_ints, et.can_target
        col = np.zeros(pos.shape[1], np.bool_)
        for b in range(b0, b1):
            gather_env_tables(b, unit_kind, sim_flags, k, et, col)
            orders_env(b, actions, pos, alive, health, order_kind, order_target, order_point, last_attacker, fov_dir, ecf,
                       eci, ecan, move_dirs, fov_dirs, sim_flags)  # fmt: skip
        return
    unit_floats, unit_ints, can_target = t.unit_floats, t.unit_ints, t.can_target
    for b in range(b0, b1):
        orders_env(b, actions, pos, alive, health, order_kind, order_target, order_point, last_attacker, fov_dir,
                   unit_floats, unit_ints, can_target, move_dirs, fov_dirs, sim_flags)  # fmt: skip


@numba.njit(**JIT)
def orders_serial(n_chunks, actions, units, fov_dir, tables, move_dirs, fov_dirs, sim_flags, unit_kind, kinds):
    orders_range(0, units[0].shape[0], actions, units, fov_dir, tables, move_dirs, fov_dirs, sim_flags, unit_kind, kinds)
