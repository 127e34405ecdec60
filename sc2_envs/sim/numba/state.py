"""The flat tables the Numba mirror reads: ``sim.state``'s unit tables and ``WorldState`` fields as arrays.

The kernels take them in a few named groups (``typing.NamedTuple`` of arrays, Numba's heterogeneous
tuples), with ``WorldState``'s field names: :class:`UnitState` (the unit state the ticks advance),
:class:`EpisodeState` (the step bookkeeping and SMACv2 fields), :class:`SeedState` (the random streams
of a reset), :class:`UnitTables` (a roster's tables, per env on a SMACv2 scenario), :class:`KindTables`
(a scenario's per-kind tables) and :class:`MapTables` (terrain and routing). Python hands each group
to a compiled entry point as a plain tuple in field order, made once where the kernel is set up, and
the compiled code names it (``UnitState(*units)``): Numba types a plain tuple of arrays in C when it
dispatches a call, a ``NamedTuple`` through Python's ``typeof`` (about 0.1 us more per array: several
per cent of a one-env step, which passes about 80). The step and observe kernels name their groups in
an ``_nrt=False`` function (``step.step_span``, ``features.observe_range``), where building a tuple or
reading a field takes no reference count; in a counting function each takes one per array (atomic
operations), which the stage kernels (``dynamics.ticks_range``, ``actions.orders_range``) pay once per call.

A roster's ``UnitTable`` (with what ``Dynamics`` and ``EnemyAI`` derive from it) becomes
``unit_floats [NCF, U]`` float32, ``unit_ints [NCI, U]`` int64 (bools as 0/1), ``dmg [U, U]`` and
``can_target [U, U]`` (:func:`unit_tables`); the simulator's flags become ``sim_flags [NFL]`` int64.
The ``CF_*`` (``unit_floats``), ``CI_*`` (``unit_ints``) and ``FL_*`` (``sim_flags``) names index
their rows. The scalar constants are the rules' constants in float32, so the kernels compute in the
reference's precision.
"""

from __future__ import annotations

from typing import NamedTuple

import numba
import numpy as np
import torch

from sc2_envs.sim.rules import dynamics as rules_dynamics
from sc2_envs.sim.rules import enemy_ai as rules_enemy_ai
from sc2_envs.sim.rules.dynamics import Dynamics
from sc2_envs.sim.rules.enemy_ai import EnemyAI
from sc2_envs.sim.rules.features import MOVE_AMOUNT, N_ACTIONS_NO_ATTACK
from sc2_envs.sim.state import SHIELD_REGEN_DELAY

F32 = np.float32
EPS = F32(rules_dynamics.EPS)
EPS2 = F32(2 * rules_dynamics.EPS)
ZERO = F32(0.0)
ONE = F32(1.0)
HALF = F32(0.5)
CEIL_SLACK = F32(1e-4)
PUSH_MIN_DIST = F32(1e-3)
DETOUR_SLACK = F32(1e-3)
OCTILE_DIAG = F32(2**0.5 - 1)
CENTRE = F32(0.5)
BEAM_HW = F32(rules_dynamics.BEAM_HALF_WIDTH)
BEAM_HL = F32(rules_dynamics.BEAM_HALF_LENGTH)
REGEN_DELAY = F32(SHIELD_REGEN_DELAY)
BIG = F32(rules_enemy_ai.INF)
KEEP = F32(rules_enemy_ai.KEEP_BONUS)
LEASH_F = F32(rules_enemy_ai.LEASH)
MOVE_F = F32(MOVE_AMOUNT)
NO_ATTACK = N_ACTIONS_NO_ATTACK
INF32 = F32(np.inf)
assert rules_enemy_ai.ACQUIRE_MIN > 0  # (the acquisition ranges are precomputed by EnemyAI)

# rows of the float constant table ``unit_floats [NCF, U]``
(
    CF_RADIUS,
    CF_WRANGE,
    CF_HRANGE,
    CF_WCOOL,
    CF_DPOINT,
    CF_ATTACKS,
    CF_HITINT,
    CF_MSPEED,
    CF_MSPEED_CL,
    CF_SPEED,
    CF_MAXHP,
    CF_MAXSH,
    CF_ARMOR,
    CF_SPLASHR,
    CF_LIFEREGEN,
    CF_EREGEN,
    CF_EMAX,
    CF_HEALRATE,
    CF_HEALCOST,
    CF_HEALCOST_CL,
    CF_ACQUIRE,
    CF_PRIOCOST,
    NCF,
) = range(23)
# rows of the int constant table ``unit_ints [NCI, U]`` (bools as 0/1)
(
    CI_ARMED,
    CI_STATIC,
    CI_AIR,
    CI_BIO,
    CI_SPLASH,
    CI_SPACED,
    CI_MISSILE,
    CI_CLIFFW,
    CI_ROUTER,
    CI_HEALER,
    CI_ALLY,
    CI_FRIENDBIO,
    CI_COLLIDES,
    NCI,
) = range(14)
# flags ``sim_flags [NFL]``
(
    FL_L,
    FL_W,
    FL_H,
    FL_LEVELS,
    FL_CLIFFW,
    FL_ROUTE,
    FL_LINE,
    FL_SUICIDE,
    FL_HEALER,
    FL_MISSILE,
    FL_REGEN,
    FL_SHIELD,
    FL_N,
    FL_ATTACK_ALLIES,
    FL_AI_HEALER,
    FL_ATTACK_CLOSEST,
    FL_NNA,
    FL_NFOV,
    FL_PER_ENV,
    FL_T,
    NFL,
) = range(21)
# FL_PER_ENV: a SMACv2 scenario, whose unit tables differ per env: the kernels gather each env's
# tables from the per-kind tables (``kind_floats``, ``kind_ints``, ``kind_dmg``, ``kind_can_target``: rows ``0..T-1``
# ally kinds, ``T..2T-1`` enemy kinds, as ``UnitTable.build_scenario``'s ``kinds``) and ``WorldState.unit_kind``
# (``env_tables``). FL_NNA: the first target action (6, or 18 with SMACv2's ``conic_fov``);
# FL_NFOV: the look actions ``6 .. 6 + FL_NFOV - 1``.

STATE_FIELDS = (
    "pos",
    "health",
    "shield",
    "energy",
    "cooldown",
    "alive",
    "order_kind",
    "order_target",
    "order_point",
    "loops_since_damage",
    "last_attacker",
    "jitter_state",
    "windup",
    "windup_target",
    "hits_left",
    "missile_eta",
    "missile_target",
    "missile_hits",
    "burst_pending",
)


class UnitState(NamedTuple):
    """The ``WorldState`` fields a tick reads and writes (``STATE_FIELDS``, same names, shapes and
    dtypes: ``[B, U]``, ``pos``/``order_point [B, U, 2]``; bools as ``np.bool_``). The wind-up and
    missile fields (``windup`` .. ``burst_pending``) are ``Dynamics._fire``'s attack in progress."""

    pos: np.ndarray
    health: np.ndarray
    shield: np.ndarray
    energy: np.ndarray
    cooldown: np.ndarray
    alive: np.ndarray
    order_kind: np.ndarray
    order_target: np.ndarray
    order_point: np.ndarray
    loops_since_damage: np.ndarray
    last_attacker: np.ndarray
    jitter_state: np.ndarray
    windup: np.ndarray
    windup_target: np.ndarray
    hits_left: np.ndarray
    missile_eta: np.ndarray
    missile_target: np.ndarray
    missile_hits: np.ndarray
    burst_pending: np.ndarray


class EpisodeState(NamedTuple):
    """The ``WorldState`` fields of the step's bookkeeping (reward snapshot, last actions, step count)
    and of SMACv2 scenarios (``unit_kind``, ``fov_dir``, ``enemy_tag``, ``max_reward``); see ``WorldState``."""

    prev_health: np.ndarray
    prev_shield: np.ndarray
    prev_alive: np.ndarray
    last_action: np.ndarray
    episode_steps: np.ndarray
    unit_kind: np.ndarray
    fov_dir: np.ndarray
    enemy_tag: np.ndarray
    max_reward: np.ndarray


class SeedState(NamedTuple):
    """The ``WorldState`` fields a reset draws from and writes: ``attack_point [B, 2]`` float32,
    ``env_seed [B]`` and ``episode_count [B]`` int64 (``sim.rng``)."""

    attack_point: np.ndarray
    env_seed: np.ndarray
    episode_count: np.ndarray


class UnitTables(NamedTuple):
    """A roster's tables (``unit_tables``, ``Dynamics``): ``unit_floats [NCF, U]`` float32, ``unit_ints [NCI, U]`` int64,
    ``dmg [U, U]`` float32 (``damage_vs``), ``can_target``, ``collide_pair`` and ``enemy_pair [U, U]``
    bool, ``rsum [U, U]`` float32 (radius sums) and ``r2far [U, U]`` float32 (``(rsum * 1.001) ** 2``).
    On a SMACv2 scenario the kernels gather them per env (``env_tables``)."""

    unit_floats: np.ndarray
    unit_ints: np.ndarray
    dmg: np.ndarray
    can_target: np.ndarray
    collide_pair: np.ndarray
    enemy_pair: np.ndarray
    rsum: np.ndarray
    r2far: np.ndarray


class KindTables(NamedTuple):
    """A SMACv2 scenario's per-kind tables (``unit_tables`` of its kinds table): rows ``0..T-1`` the ally
    kinds, ``T..2T-1`` the enemy kinds; one-row placeholders on a SMAC v1 map."""

    kind_floats: np.ndarray
    kind_ints: np.ndarray
    kind_dmg: np.ndarray
    kind_can_target: np.ndarray


class MapTables(NamedTuple):
    """The map's flattened terrain (``Dynamics._flat_pathing``, ``_flat_level``, ``_flat_cliff_walkable``:
    ``[H * W]``) and its route graph (``Dynamics._dist``, ``_edge_ok``, ``_nb_flat``, ``_nb_len``; one-cell
    placeholders on a map without routing)."""

    pathing: np.ndarray
    level: np.ndarray
    cliff_walkable: np.ndarray
    gdist: np.ndarray
    edge_ok: np.ndarray
    nb_flat: np.ndarray
    nb_len: np.ndarray


STATE_DTYPES = {
    "pos": torch.float32,
    "alive": torch.bool,
    "burst_pending": torch.bool,
    "order_kind": torch.int64,
    "order_target": torch.int64,
    "last_attacker": torch.int64,
    "jitter_state": torch.int64,
    "windup_target": torch.int64,
    "missile_target": torch.int64,
}

JIT = dict(cache=True, nogil=True, error_model="numpy", fastmath=False)
INNER = dict(no_cpython_wrapper=True, no_cfunc_wrapper=True)
"""Options of the kernels only compiled code calls: no Python or C entry is generated for them (their
unboxing of some 80 arrays was a good part of the first use's compile)."""


@numba.njit(**JIT)
def collision_consts(collide_pair, r2far, col):
    """Fill ``col [U]`` (unit collides with some other unit) and return the sweep distance
    ``sqrt(max r2far) * (1 + 1e-3)`` (float64, then float32) over the colliding pairs.

    Why the sweep is exact: for ``ddx = fl(x_j - x_i) > sweep``, ``dx = -ddx`` exactly, so
    ``d2 = fl(fl(dx*dx) + fl(dy*dy)) >= fl(ddx*ddx) >= ddx**2 * (1 - 2**-24) > max r2far``, i.e. the
    r2far test rejects the pair; and every later unit in x order has a larger or equal ``ddx``.
    """
    U = collide_pair.shape[0]
    m = 0.0
    for i in range(U):
        col[i] = False
        for j in range(U):
            if collide_pair[i, j]:
                col[i] = True
                r = np.float64(r2far[i, j])
                m = r if r > m else m
    return F32(np.sqrt(m) * 1.001)


@numba.njit(**JIT)
def env_tables(
    b,
    unit_kind,
    sim_flags,
    kind_floats,
    kind_ints,
    kind_dmg,
    kind_can_target,
    unit_floats,
    unit_ints,
    dmg,
    can_target,
    collide_pair,
    rsum,
    r2far,
    col,
):
    """The unit tables of env ``b`` of a SMACv2 scenario, gathered from the per-kind tables.

    Unit ``u``'s row in the kind tables is ``unit_kind[b, u]`` for allies and ``T + unit_kind[b, u]``
    for enemies (``UnitTable.assign_kinds_``), so ``unit_floats``/``unit_ints``/``dmg``/``can_target`` hold what the
    torch path's per-env ``UnitTable`` holds for env ``b``; ``collide_pair``, ``rsum`` and ``r2far``
    are derived as ``Dynamics.refresh`` and ``TickKernel`` derive them. Fills ``col`` and returns the
    sweep distance (``collision_consts``). ``unit_kind`` is checked by the caller (``0 <= k < T``).
    """
    U = unit_floats.shape[1]
    N = sim_flags[FL_N]
    T = sim_flags[FL_T]
    for u in range(U):
        r = unit_kind[b, u] + (0 if u < N else T)
        for k in range(NCF):
            unit_floats[k, u] = kind_floats[k, r]
        for k in range(NCI):
            unit_ints[k, u] = kind_ints[k, r]
    for i in range(U):
        ri = unit_kind[b, i] + (0 if i < N else T)
        ci_col = unit_ints[CI_COLLIDES, i] != 0
        ra = unit_floats[CF_RADIUS, i]
        for j in range(U):
            rj = unit_kind[b, j] + (0 if j < N else T)
            dmg[i, j] = kind_dmg[ri, rj]
            can_target[i, j] = kind_can_target[ri, rj]
            collide_pair[i, j] = ci_col and unit_ints[CI_COLLIDES, j] != 0 and i != j
            rs = ra + unit_floats[CF_RADIUS, j]
            rsum[i, j] = rs
            r2 = np.float64(rs) * 1.001
            r2far[i, j] = F32(r2 * r2)
    return collision_consts(collide_pair, r2far, col)


@numba.njit(**JIT)
def env_scratch(U):
    """Per-range buffers of ``env_tables``: ``unit_floats, unit_ints, dmg, can_target, collide_pair, rsum, r2far``."""
    return (
        np.zeros((NCF, U), np.float32),
        np.zeros((NCI, U), np.int64),
        np.zeros((U, U), np.float32),
        np.zeros((U, U), np.bool_),
        np.zeros((U, U), np.bool_),
        np.zeros((U, U), np.float32),
        np.zeros((U, U), np.float32),
    )


@numba.njit(**JIT)
def env_unit_tables(enemy_pair):
    """Per-range :class:`UnitTables` of a SMACv2 scenario for ``env_tables`` to fill (``env_scratch``),
    with the fixed ``enemy_pair [U, U]`` (the teams, the same in every env)."""
    unit_floats, unit_ints, dmg, can_target, collide_pair, rsum, r2far = env_scratch(enemy_pair.shape[0])
    return UnitTables(unit_floats, unit_ints, dmg, can_target, collide_pair, enemy_pair, rsum, r2far)


@numba.njit(inline="always", **JIT)
def gather_env_tables(b, unit_kind, sim_flags, kinds, t, col):
    """``env_tables`` of env ``b`` into the :class:`UnitTables` ``t`` from the :class:`KindTables` ``kinds``;
    returns the sweep distance."""
    return env_tables(
        b, unit_kind, sim_flags, kinds.kind_floats, kinds.kind_ints, kinds.kind_dmg, kinds.kind_can_target, t.unit_floats,
        t.unit_ints, t.dmg, t.can_target, t.collide_pair, t.rsum, t.r2far, col,
    )  # fmt: skip


def as_f32(x: torch.Tensor) -> np.ndarray:
    return x.detach().cpu().to(torch.float32).numpy()


def as_i64(x: torch.Tensor) -> np.ndarray:
    return x.detach().cpu().to(torch.int64).numpy()


def unit_tables(dynamics: Dynamics, enemy_ai: EnemyAI, n_agents: int) -> tuple[np.ndarray, ...]:
    """``unit_floats [NCF, U]`` float32, ``unit_ints [NCI, U]`` int64, ``dmg [U, U]`` float32 and ``can_target [U, U]``
    bool of a roster with per-unit tables (``[U]``, ``[U, U]``): a SMAC v1 map, or the per-kind
    table of a SMACv2 scenario (with the ``Dynamics`` and ``EnemyAI`` built on it, ``n_agents`` its
    ally rows), read from the torch objects so that both paths use the same derived values."""
    t = dynamics.t
    U, N = len(t.names), n_agents
    unit_floats = np.zeros((NCF, U), np.float32)
    unit_floats[CF_RADIUS] = as_f32(t.radius)
    unit_floats[CF_WRANGE] = as_f32(t.weapon_range)
    unit_floats[CF_HRANGE] = as_f32(t.heal_range)
    unit_floats[CF_WCOOL] = as_f32(t.weapon_cooldown)
    unit_floats[CF_DPOINT] = as_f32(t.damage_point)
    unit_floats[CF_ATTACKS] = as_f32(t.attacks)
    unit_floats[CF_HITINT] = as_f32(t.hit_interval)
    unit_floats[CF_MSPEED] = as_f32(t.missile_speed)
    unit_floats[CF_MSPEED_CL] = as_f32(t.missile_speed.clamp(min=rules_dynamics.EPS))
    unit_floats[CF_SPEED] = as_f32(t.speed)
    unit_floats[CF_MAXHP] = as_f32(t.max_health)
    unit_floats[CF_MAXSH] = as_f32(t.max_shield)
    unit_floats[CF_ARMOR] = as_f32(t.armor)
    unit_floats[CF_SPLASHR] = as_f32(t.splash_radius)
    unit_floats[CF_LIFEREGEN] = as_f32(t.life_regen)
    unit_floats[CF_EREGEN] = as_f32(t.energy_regen)
    unit_floats[CF_EMAX] = as_f32(t.energy_max)
    unit_floats[CF_HEALRATE] = as_f32(t.heal_rate)
    unit_floats[CF_HEALCOST] = as_f32(t.heal_energy_cost)
    unit_floats[CF_HEALCOST_CL] = as_f32(t.heal_energy_cost.clamp(min=rules_dynamics.EPS))
    unit_floats[CF_ACQUIRE, N:] = as_f32(enemy_ai.acquire)
    unit_floats[CF_PRIOCOST, :N] = as_f32(enemy_ai.priority_cost)
    unit_ints = np.zeros((NCI, U), np.int64)
    unit_ints[CI_ARMED] = as_i64(t.is_armed)
    unit_ints[CI_STATIC] = as_i64(t.is_static)
    unit_ints[CI_AIR] = as_i64(t.is_air)
    unit_ints[CI_BIO] = as_i64(t.is_biological)
    unit_ints[CI_SPLASH] = as_i64(t.splash)
    unit_ints[CI_SPACED] = as_i64(dynamics.spaced)
    unit_ints[CI_MISSILE] = as_i64(dynamics.is_missile)
    unit_ints[CI_CLIFFW] = as_i64(dynamics.cliff_walker)
    if dynamics._route:
        unit_ints[CI_ROUTER] = as_i64(dynamics._router)
    unit_ints[CI_HEALER] = as_i64(t.is_healer)
    unit_ints[CI_ALLY] = as_i64(t.is_ally)
    unit_ints[CI_FRIENDBIO, N:] = as_i64(enemy_ai.friend_bio)
    unit_ints[CI_COLLIDES] = as_i64(t.collides)
    return unit_floats, unit_ints, as_f32(t.damage_vs).copy(), t.can_target.detach().cpu().numpy().copy()
