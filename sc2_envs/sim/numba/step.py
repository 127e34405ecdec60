"""One compiled call per env step: ``SMACSim.step`` on the numba path (bit-equal to the torch code).

``sim.numba.actions`` and ``enemy_ai`` (orders), ``dynamics`` (ticks) and ``features`` (result, reward, features) hold
the game rules as per-env Numba functions. Called stage by stage from Python, a small batch paid
more for the glue around them (argument views, action checks, result bookkeeping, copies, about
40 small torch operations per step) than for the rules themselves. :class:`StepKernel` runs the
whole step of one env in one loop body instead, and all envs in one call (from
``numba.dynamics.PARALLEL_MIN_ENVS`` envs up either serial or split into chunks of envs on threads,
``runtime.chunks``, whichever ``runtime.schedule.ScheduleChooser`` measures faster under the
machine's current load):

1. checks the actions against the previous step's available actions (range, then availability;
   with ``lenient_actions`` an unavailable action becomes stop, or no-op for a dead agent), before
   anything is changed, and reports the first bad entry for ``SMACSim`` to raise on;
2. ``actions.orders_env`` per env (SMAC actions -> orders, then the enemy AI), ``8 / loops_per_tick``
   ticks of ``dynamics.advance`` (``Dynamics.advance``; one call for the whole range on a SMAC v1 map, one
   per env on a SMACv2 scenario, whose envs each have their own unit tables), then per env
   ``features.step_env`` (step count, last action, game result, reward, previous-step snapshot),
   the step's flags and counts (terminated, truncated, dead allies / enemies, agent alive),
   ``features.observe_env`` (available actions, observations, state) and the ``final_*`` copies;
3. adds the step's won / ended / truncated episodes to ``SMACSim``'s ``get_stats`` counters.

Every output array is fresh (allocated by the caller each step), so a returned tensor never
shares memory with another or with the simulator. The rule functions are the same compiled
functions the stage kernels call, so the stage path and the fused path cannot drift apart;
``tests/test_kernel_step.py`` runs seeded play with auto-resets through the torch path and this
one and requires equal outputs and states after every step.
"""

from __future__ import annotations

import operator
from typing import NamedTuple

import numba
import numpy as np
import torch

from sc2_envs.sim import rng
from sc2_envs.sim.numba.actions import OK, OUT_OF_RANGE, UNAVAILABLE, check_actions, orders_env
from sc2_envs.sim.numba.dynamics import PARALLEL_MIN_ENVS, advance, tick_scratch
from sc2_envs.sim.numba.features import (
    F_EPISODE_LIMIT,
    F_N,
    ObserveTables,
    feature_scratch,
    obs_state_view,
    observe_env,
    step_env,
)
from sc2_envs.sim.numba.reset import fresh_state
from sc2_envs.sim.numba.state import (
    FL_PER_ENV,
    FL_T,
    INNER,
    JIT,
    STATE_FIELDS,
    EpisodeState,
    KindTables,
    MapTables,
    SeedState,
    UnitState,
    UnitTables,
    env_unit_tables,
    gather_env_tables,
)
from sc2_envs.sim.runtime.chunks import kernel_threads, run_chunks
from sc2_envs.sim.runtime.schedule import ScheduleChooser
from sc2_envs.sim.state import WorldState

# error codes returned by the kernel, with the flat index b * N + n of the first bad action (BAD_KIND:
# b * U + u of the first WorldState.unit_kind entry outside the scenario's kinds)
BAD_KIND = 3  # (OK, OUT_OF_RANGE, UNAVAILABLE: ``numba.actions``)

# the WorldState fields the step reads or writes, in the kernel's argument order
_FIELDS = STATE_FIELDS + ("prev_health", "prev_shield", "prev_alive", "last_action", "episode_steps")
_FIELDS += ("unit_kind", "fov_dir", "enemy_tag", "max_reward")
_DTYPES = {
    "alive": torch.bool,
    "burst_pending": torch.bool,
    "prev_alive": torch.bool,
    "order_kind": torch.int64,
    "order_target": torch.int64,
    "last_attacker": torch.int64,
    "jitter_state": torch.int64,
    "windup_target": torch.int64,
    "missile_target": torch.int64,
    "last_action": torch.int64,
    "episode_steps": torch.int64,
    "unit_kind": torch.int64,
    "enemy_tag": torch.int64,
}
_get_fields = operator.attrgetter(*_FIELDS)
OUT_KEYS = (
    "obs",
    "state",
    "avail_actions",
    "reward",
    "battle_won",
    "terminated",
    "truncated",
    "dead_allies",
    "dead_enemies",
    "episode_limit",
    "agent_alive",
    "invalid_actions",
    "final_obs",
    "final_state",
    "final_avail_actions",
)
"""Keys of ``SMACSim.step``'s dict, in the order of the arrays :class:`StepKernel` returns."""


@numba.njit(**JIT)
def _check_kinds(unit_kind, sim_flags):
    """The flat index ``b * U + u`` of the first ``unit_kind`` entry outside ``[0, T)`` of a SMACv2
    scenario (the kernels index the kind tables with it, unchecked), ``-1`` if none or a v1 map."""
    if not sim_flags[FL_PER_ENV]:
        return -1
    B, U = unit_kind.shape
    T = sim_flags[FL_T]
    for b in range(B):
        for u in range(U):
            k = unit_kind[b, u]
            if k < 0 or k >= T:
                return b * U + u
    return -1


class StepOutputs(NamedTuple):
    """The step's output arrays, fresh each step, in the order (and with the names) of ``OUT_KEYS``:
    ``obs``/``final_obs [B, N, obs_size]`` float32, ``state``/``final_state [B, state_size]`` float32,
    ``avail_actions``/``final_avail_actions [B, N, n_actions]`` bool, ``reward [B]`` float32,
    ``battle_won``, ``terminated``, ``truncated``, ``episode_limit [B]`` bool, ``dead_allies``,
    ``dead_enemies [B]`` int64, ``agent_alive``, ``invalid_actions [B, N]`` bool."""

    obs: np.ndarray
    state: np.ndarray
    avail_actions: np.ndarray
    reward: np.ndarray
    battle_won: np.ndarray
    terminated: np.ndarray
    truncated: np.ndarray
    dead_allies: np.ndarray
    dead_enemies: np.ndarray
    episode_limit: np.ndarray
    agent_alive: np.ndarray
    invalid_actions: np.ndarray
    final_obs: np.ndarray
    final_state: np.ndarray
    final_avail_actions: np.ndarray


# positions in the plain tuples (compile-time constants of the kernels)
_ALIVE, _UNIT_KIND = UnitState._fields.index("alive"), EpisodeState._fields.index("unit_kind")
_COLLIDE_PAIR, _ENEMY_PAIR, _R2FAR = (UnitTables._fields.index(n) for n in ("collide_pair", "enemy_pair", "r2far"))
_OBSERVE_FLAGS = ObserveTables._fields.index("flags")
_INVALID, _BATTLE_WON, _TERMINATED, _TRUNCATED = (
    StepOutputs._fields.index(n) for n in ("invalid_actions", "battle_won", "terminated", "truncated")
)


def _make_finish(V2: bool):
    def finish(lo, hi, units, episode, act, tables, out, avail_in, result, obs_state, id_order, geo, ok, observed):
        """After the ticks of envs ``lo .. hi - 1``: per env ``step_env`` (result, reward), the step's flags
        and counts, ``observe_env`` and the ``final_*`` copies (``step_range``'s step 2; the groups as
        there, ``tables`` the ``features.ObserveTables``). No reference counts (``_nrt=False``: it allocates
        nothing, and ``step_range`` holds every array for the call), so the per-env calls count nothing."""
        alive, episode_steps = units.alive, episode.episode_steps
        obs, state, avail, reward, battle_won, terminated, truncated, dead_allies, dead_enemies, episode_limit = out[:10]
        agent_alive, final_obs, final_state, final_avail = out.agent_alive, out[12], out[13], out[14]
        N, U = tables.flags[F_N], alive.shape[1]
        limit = tables.flags[F_EPISODE_LIMIT]
        for b in range(lo, hi):
            step_env(V2, b, units, episode, act, tables, reward, result)
            won = result[0, b]
            term = won or result[1, b] or result[2, b]
            trunc = (not term) and episode_steps[b] >= limit
            terminated[b] = term
            truncated[b] = trunc
            battle_won[b] = won
            episode_limit[b] = trunc
            da = 0
            for n in range(N):
                agent_alive[b, n] = alive[b, n]
                if not alive[b, n]:
                    da += 1
            de = 0
            for u in range(N, U):
                if not alive[b, u]:
                    de += 1
            dead_allies[b] = da
            dead_enemies[b] = de
            observe_env(V2, b, units, episode, id_order, tables, obs, obs_state, state, avail, geo, ok, observed)
            for i in range(obs.shape[1]):
                for k in range(obs.shape[2]):
                    final_obs[b, i, k] = obs[b, i, k]
                for k in range(avail.shape[2]):
                    final_avail[b, i, k] = avail[b, i, k]
                    avail_in[b, i, k] = avail[b, i, k]
            for k in range(state.shape[1]):
                final_state[b, k] = state[b, k]

    finish.__name__ = finish.__qualname__ = "_finish_v2" if V2 else "_finish_v1"
    return numba.njit(_nrt=False, **INNER, **JIT)(finish)


# Module globals, not closure variables, of the functions that call them: Numba keys a closure's cache
# entry by its pickled cells, and a pickled dispatcher carries an id made anew in every process, so a
# closure over one would compile again in every process.
_finish_v1 = _make_finish(False)
_finish_v2 = _make_finish(True)


def _make_step_span(V2: bool):
    def step_span(b0, b1, n_ticks, act, units, episode, tables, kinds, terrain, sim_flags, move_dirs, fov_dirs, observe,
                  avail_in, out, result, w, feats, obs_state, id_order):  # fmt: skip
        """Orders, ticks and ``finish`` of envs ``b0 .. b1 - 1`` (``step_range``'s step 2, its arguments as
        there; ``w``, ``feats`` (``geo, ok, observed``), ``obs_state``, ``id_order``: ``step_range``'s
        scratch). No reference counts (``_nrt=False``: it allocates nothing, and ``step_range`` holds every
        array for the call), so naming the groups and reading their fields costs nothing, per call or per env."""
        s, e, t, m = UnitState(*units), EpisodeState(*episode), UnitTables(*tables), MapTables(*terrain)
        o, ot = StepOutputs(*out), ObserveTables(*observe)
        geo, ok, observed = feats
        sweep = w.sweep
        if V2:  # (V2 is a compile-time constant: Numba prunes the other branch, and compiles its calls only)
            k = KindTables(*kinds)
        # One ``advance`` (and ``finish``) call per span of envs: every call from a counting function takes
        # an atomic reference count on each of its array arguments (Numba's NRT), which per env was ~20 % of
        # a 2s3z step at 1,024 envs (perf: NRT_incref / NRT_decref), and the two threads' counts contend for
        # the same counters. A SMAC v1 map has one set of tables, so the whole range ticks in one call; a
        # SMACv2 scenario gathers each env's own tables first (into ``tables``), so its span is one env. The
        # envs are independent and ``advance`` resets its scratch per env, so the result is the same as env
        # by env.
        span = 1 if V2 else max(b1 - b0, 1)
        for lo in range(b0, b1, span):
            hi = min(lo + span, b1)
            for b in range(lo, hi):
                if V2:
                    sweep = gather_env_tables(b, e.unit_kind, sim_flags, k, t, w.col)
                orders_env(b, act, s.pos, s.alive, s.health, s.order_kind, s.order_target, s.order_point, s.last_attacker,
                           e.fov_dir, t.unit_floats, t.unit_ints, t.can_target, move_dirs, fov_dirs, sim_flags)  # fmt: skip
            advance(lo, hi, n_ticks, s, t, m, sim_flags, w, sweep)
            if V2:
                _finish_v2(lo, hi, s, e, act, ot, o, avail_in, result, obs_state, id_order, geo, ok, observed)
            else:
                _finish_v1(lo, hi, s, e, act, ot, o, avail_in, result, obs_state, id_order, geo, ok, observed)

    step_span.__name__ = step_span.__qualname__ = "_step_span_v2" if V2 else "_step_span_v1"
    return numba.njit(_nrt=False, **INNER, **JIT)(step_span)


_step_span_v1 = _make_step_span(False)
_step_span_v2 = _make_step_span(True)


def _make_step_range(V2: bool):
    def step_range(
        b0, b1, checks, n_ticks, lenient, actions, act, units, episode, tables, kinds, terrain, sim_flags, move_dirs, fov_dirs,
        observe, avail_in, out, result, stats,
    ):  # fmt: skip
        """The whole step of envs ``b0 .. b1 - 1`` (scratch allocated once per range). ``units``, ``episode``,
        ``tables``, ``kinds``, ``terrain``: a :class:`UnitState`, :class:`EpisodeState`, :class:`UnitTables`,
        :class:`KindTables` and :class:`MapTables` as plain tuples (``numba.state``), with the flags ``sim_flags``
        and the action directions ``move_dirs``/``fov_dirs`` of ``dynamics.TickKernel``; ``observe`` a
        ``features.ObserveTables`` and ``out`` a :class:`StepOutputs`, as plain tuples; ``avail_in [B, N,
        n_actions]`` the previous available actions (rewritten); ``result [3, B]`` scratch; ``stats [3]``
        ``SMACSim``'s counters. A SMACv2 scenario (``V2``) gathers each env's unit tables first
        (``state.env_tables``); a SMAC v1 map uses its fixed tables. The work is ``step_span``'s; this
        function allocates its scratch (the groups are named there, where no reference is counted).

        With ``checks`` (the serial call, ``b0 .. b1`` the whole batch) it first checks the actions of
        every env (``check_actions``, ``_check_kinds``: nothing is changed on an error) and ends with the
        statistics (``_tally``); returns ``(code, value)`` as ``StepKernel.__call__``. Without, the
        caller has done both (``_step_threaded``) and it returns ``(OK, 0)``."""
        if checks:
            code, where = check_actions(actions, units[_ALIVE], avail_in, lenient, act, out[_INVALID])
            if code != OK:
                return code, where
            bad = _check_kinds(episode[_UNIT_KIND], sim_flags)
            if bad >= 0:
                return BAD_KIND, bad
        if V2:  # each env's tables, gathered by step_span (enemy_pair: fixed)
            tables = env_unit_tables(tables[_ENEMY_PAIR])
        # the scratch, passed on without unpacking: here every tuple built or unpacked takes a reference
        # count per array
        w = tick_scratch(tables[_COLLIDE_PAIR], tables[_R2FAR])
        flags = observe[_OBSERVE_FLAGS]
        feats = feature_scratch(flags)
        # the enemy tags in agent id order. Made here, not features.NO_RANK: Numba types a global array as
        # read-only, and observe_env would compile a second time for that type (the ObserveKernel passes
        # its placeholder as an argument)
        id_order = np.empty((0, 0), np.int64)
        obs_state = obs_state_view(out[0], out[1], flags)
        if V2:  # (no tuple of the arguments: building one here would count a reference per array)
            _step_span_v2(b0, b1, n_ticks, act, units, episode, tables, kinds, terrain, sim_flags, move_dirs, fov_dirs,
                          observe, avail_in, out, result, w, feats, obs_state, id_order)  # fmt: skip
        else:
            _step_span_v1(b0, b1, n_ticks, act, units, episode, tables, kinds, terrain, sim_flags, move_dirs, fov_dirs,
                          observe, avail_in, out, result, w, feats, obs_state, id_order)  # fmt: skip
        if checks:
            return OK, _tally(out[_TERMINATED], out[_TRUNCATED], out[_BATTLE_WON], stats)
        return OK, 0

    step_range.__name__ = step_range.__qualname__ = "_step_range_v2" if V2 else "_step_range_v1"
    return numba.njit(**JIT)(step_range)


# one compiled step per family: a SMAC v1 map never compiles SMACv2's features, nor a scenario SMAC v1's
_step_range_v1 = _make_step_range(False)
_step_range_v2 = _make_step_range(True)
_STEP_RANGE = {False: _step_range_v1, True: _step_range_v2}


def step_dispatcher(v2: bool):
    """The compiled step of a family (``v2``: SMACv2 scenarios, else SMAC v1 maps), a Numba dispatcher:
    ``runtime.warmup`` reads its signatures and on-disk cache to tell whether the family needs a compile."""
    return _STEP_RANGE[v2]


@numba.njit(**JIT)
def _tally(terminated, truncated, battle_won, stats):
    """Add the step's won / ended / truncated episodes to ``stats [3]``; returns the number ended."""
    ended = 0
    for b in range(terminated.shape[0]):
        done = terminated[b] or truncated[b]
        stats[0] += battle_won[b]
        stats[1] += done
        stats[2] += truncated[b]
        ended += done
    return ended


def _step_threaded(step_range, n_chunks, *args):
    """``step_range(0, B, True, *args)``'s work (``_STEP_RANGE[v2]``) with the envs split into
    ``n_chunks`` ranges, each on its own thread (``runtime.chunks``: the range function releases the
    GIL, and nothing new is compiled); the checks before and the statistics after run once here.
    Same arguments (``n_ticks .. stats``) and return value as the serial call."""
    n_ticks, lenient, actions, act, units, episode, tables, kinds, terrain, sim_flags = args[:10]
    avail_in, out, stats = args[-4], StepOutputs(*args[-3]), args[-1]
    code, where = check_actions(actions, units[_ALIVE], avail_in, lenient, act, out.invalid_actions)
    if code != OK:
        return code, where
    bad = _check_kinds(episode[_UNIT_KIND], sim_flags)
    if bad >= 0:
        return BAD_KIND, bad
    run_chunks(lambda lo, hi: step_range(np.int64(lo), np.int64(hi), False, *args), units[0].shape[0], n_chunks)
    return OK, _tally(out.terminated, out.truncated, out.battle_won, stats)


class StepKernel:
    """``SMACSim.step``'s work (checks, orders, ticks, result, reward, features, statistics) as one
    compiled call; see the module docstring. Built by ``SMACSim`` on the numba path.

    Args:
        tick: the simulator's ``dynamics.TickKernel`` (rule tables of the orders and tick stages).
        observe: the simulator's ``features.ObserveKernel`` (SMAC v1 map) or
            ``features_v2.ObserveKernelV2`` (SMACv2 scenario, with ``per_env`` set).
        n_ticks: ticks per env step (``8 / loops_per_tick``).
        lenient: ``SMACSim.lenient_actions``.
    """

    def __init__(self, tick, observe, n_ticks: int, lenient: bool):
        from sc2_envs.sim.numba.features_v2 import ObserveKernelV2

        self.n_ticks = int(n_ticks)
        self.out_keys = OUT_KEYS
        self.lenient = bool(lenient)
        self.n_agents = observe.n_agents
        self.n_actions = observe.n_actions
        self.obs_size = observe.features.obs_size
        self.state_size = observe.features.state_size
        k, o = tick, observe
        self.v2 = isinstance(o, ObserveKernelV2)
        if self.v2 != bool(k.per_env):
            raise ValueError("a SMACv2 scenario needs ObserveKernelV2 and a per-env TickKernel; a SMAC v1 map neither")
        self.tick = k
        self.family = "step (SMACv2)" if self.v2 else "step"  # which compiled step it runs
        self._range = _STEP_RANGE[self.v2]
        # the tables of the step (tick_kernel's groups, then the observe kernel's), made once
        self._consts = (k.tables, k.kinds, k.terrain, k.sim_flags, k.move_dirs, k.fov_dirs, tuple(o.consts))
        self._reset_cache()

    def _reset_cache(self) -> None:
        self._key: tuple | None = None
        self._arrays: tuple = ()
        self._avail_t: torch.Tensor | None = None
        self._avail_np: np.ndarray | None = None
        self._stats_t: torch.Tensor | None = None
        self._stats_np: np.ndarray | None = None
        self._act: np.ndarray | None = None
        self._schedule: ScheduleChooser | None = None  # serial or threaded, by measured time (runtime.schedule)
        self._schedule_key: tuple | None = None

    def __getstate__(self) -> dict:
        # the cached views alias this process's tensors: a copied or unpickled sim views its own
        d = dict(self.__dict__)
        d.update(_key=None, _arrays=(), _avail_t=None, _avail_np=None, _stats_t=None, _stats_np=None, _act=None)
        d.update(_schedule=None, _schedule_key=None)  # timings of this process's machine and load
        return d

    def views(self, st: WorldState) -> tuple[tuple, tuple]:
        """NumPy views of the state fields as ``(units, episode)``, a ``UnitState`` and an ``EpisodeState``
        as plain tuples (kept while ``st`` holds the same tensors; a replaced field is checked and viewed
        again, a non-contiguous one replaced by a contiguous copy first)."""
        tensors = _get_fields(st)
        key = self._key
        if key is not None and all(map(operator.is_, tensors, key)):
            return self._arrays
        B = tensors[0].shape[0]
        arrays = []
        for name, x in zip(_FIELDS, tensors, strict=True):
            want = _DTYPES.get(name, torch.float32)
            if x.device.type != "cpu" or x.dtype != want or x.shape[0] != B:
                raise ValueError(
                    f"WorldState.{name} must be a CPU {want} tensor with {B} envs for the numba kernel, "
                    f"got {x.dtype} {tuple(x.shape)} on {x.device}"
                )
            if not x.is_contiguous() or x.requires_grad:
                x = x.detach().contiguous()
                setattr(st, name, x)
            arrays.append(x.numpy())
        self._key = _get_fields(st)
        n = len(STATE_FIELDS)
        self._arrays = (tuple(arrays[:n]), tuple(arrays[n:]))
        return self._arrays

    def avail_buffer(self, avail: torch.Tensor) -> torch.Tensor:
        """The kernel's own ``[B, N, n_actions]`` bool buffer of the current available actions (read
        to check the next actions, rewritten every step), filled from ``avail`` when that is another
        tensor (after ``reset``, ``load_state_dict``, ...). Never handed to the caller."""
        if avail is self._avail_t:
            return avail
        if self._avail_np is None or self._avail_np.shape != tuple(avail.shape):
            self._avail_np = np.empty(tuple(avail.shape), np.bool_)
            self._avail_t = torch.from_numpy(self._avail_np)
        self._avail_t.copy_(avail)
        return self._avail_t

    def stats_buffer(self, stats: torch.Tensor) -> np.ndarray:
        """A writable NumPy view of ``SMACSim._stat_counts`` ([3] int64), which the kernel adds to."""
        if stats is not self._stats_t:
            if stats.device.type != "cpu" or stats.dtype != torch.int64 or not stats.is_contiguous():
                raise ValueError(f"stat counts must be a contiguous CPU int64 tensor, got {stats.dtype} on {stats.device}")
            self._stats_t, self._stats_np = stats, stats.numpy()
        return self._stats_np

    def __call__(self, st: WorldState, actions: np.ndarray, avail: torch.Tensor, stats: torch.Tensor):
        """One env step of every env, in place on ``st``.

        Args:
            st: the world state (CPU tensors; updated in place).
            actions: ``[B, N]`` int64 C-contiguous array of SMAC action ids (not modified).
            avail: ``[B, N, n_actions]`` bool, the available actions of the previous step: the
                tensor of :meth:`avail_buffer` (rewritten in place with the new ones).
            stats: ``SMACSim._stat_counts`` (updated in place).

        Returns:
            ``(code, value, arrays)``: ``code`` ``OK`` with ``value`` the number of envs whose episode
            ended and ``arrays`` the step's fresh NumPy outputs in the order of ``OUT_KEYS``
            (``obs``, ``state``, ``avail_actions``, ``reward``, ``battle_won``, ``terminated``,
            ``truncated``, ``dead_allies``, ``dead_enemies``, ``episode_limit``, ``agent_alive``,
            ``invalid_actions``, ``final_obs``, ``final_state``, ``final_avail_actions``); or
            ``OUT_OF_RANGE`` / ``UNAVAILABLE`` with ``value`` the flat index ``b * N + n`` of the first
            bad action, or ``BAD_KIND`` with ``b * U + u`` of the first ``unit_kind`` outside the
            scenario's kinds, ``arrays`` ``None``, and nothing changed.
        """
        units, episode = self.views(st)
        if avail is not self._avail_t:
            raise ValueError("avail must be the tensor of StepKernel.avail_buffer")
        if stats is not self._stats_t:
            self.stats_buffer(stats)
        B = units[0].shape[0]
        N, A, F, S = self.n_agents, self.n_actions, self.obs_size, self.state_size
        empty, f32, b8 = np.empty, np.float32, np.bool_
        act = self._act
        if act is None or act.shape[0] != B:
            act = self._act = np.empty((B, N), np.int64)  # the actions applied (lenient), not returned
        out = (
            empty((B, N, F), f32),  # obs
            empty((B, S), f32),  # state
            empty((B, N, A), b8),  # avail_actions
            empty(B, f32),  # reward
            empty(B, b8),  # battle_won
            empty(B, b8),  # terminated
            empty(B, b8),  # truncated
            empty(B, np.int64),  # dead_allies
            empty(B, np.int64),  # dead_enemies
            empty(B, b8),  # episode_limit
            empty((B, N), b8),  # agent_alive
            empty((B, N), b8),  # invalid_actions
            empty((B, N, F), f32),  # final_obs
            empty((B, S), f32),  # final_state
            empty((B, N, A), b8),  # final_avail_actions
        )
        threads = kernel_threads()  # the simulator's cap (limit_numba_threads)
        par = B >= PARALLEL_MIN_ENVS and threads > 1
        result = np.empty((3, B), np.bool_)  # (won, lost, draw) of each env, scratch
        # (step_range's arguments from n_ticks on; self._consts: tables .. observe)
        args = (
            self.n_ticks, self.lenient, actions, act, units, episode, *self._consts, self._avail_np, out, result,
            self._stats_np,
        )  # fmt: skip
        step_range, start = self._range, np.int64(0)  # (int64: one compiled signature for every call)
        if par:
            if self._schedule is None or self._schedule_key != (B, threads):
                self._schedule, self._schedule_key = ScheduleChooser(), (B, threads)
            n = min(B, threads)
            # same results, the faster call
            code, value = self._schedule.run(
                lambda: step_range(start, B, True, *args), lambda: _step_threaded(step_range, n, *args)
            )
        else:
            code, value = step_range(start, B, True, *args)
        if code != OK:
            return code, value, None
        return code, value, out

    # -- auto-reset
    def set_fresh(self, table, spec, tick) -> None:
        """Tables of ``rules.reset.fresh_state`` for :meth:`reset_envs` (SMAC v1 map ``spec``, its ``UnitTable``)."""

        def f(x):
            return x.detach().cpu().to(torch.float32).numpy().copy()

        ap = np.zeros((2, 2), np.float32)
        if spec.attack_segment is not None:
            mode = 2
            ap[:] = torch.tensor(spec.attack_segment, dtype=torch.float32).numpy()
        elif spec.attack_point is not None:
            mode = 1
            ap[0] = torch.tensor(spec.attack_point, dtype=torch.float32).numpy()
        else:
            mode = 0
        self._fresh = (
            (f(table.spawn_pos), f(table.max_health), f(table.max_shield), f(table.energy_start)),
            table.is_ally.detach().cpu().numpy().astype(np.bool_).copy(),
            (mode, ap, spec.attack_point is not None, tick.unit_ints, tick.sim_flags, tick.terrain),
        )

    def reset_envs(self, st: WorldState, done: np.ndarray, spawn_jitter: float) -> None:
        """``st.copy_envs_from(sim._fresh_state(), done)`` for a SMAC v1 map, in place, bit for bit
        (``tests/test_kernel_step.py``); ``done``: ``[B]`` bool."""
        tables, is_ally, rest = self._fresh
        units, episode = self.views(st)
        seeds = []
        for name in SeedState._fields:
            x = getattr(st, name)
            if x.device.type != "cpu" or not x.is_contiguous() or x.requires_grad:
                x = x.detach().cpu().contiguous()
                setattr(st, name, x)
            seeds.append(x.numpy())
        streams = (rng.STREAM_SPAWN, rng.STREAM_COOLDOWN, rng.STREAM_ATTACK_POINT)
        fresh_state(done, tables, is_ally, np.float32(spawn_jitter), *rest, streams, units, episode, tuple(seeds))


__all__ = ["BAD_KIND", "OK", "OUT_KEYS", "OUT_OF_RANGE", "UNAVAILABLE", "StepKernel"]
