"""``SMACSim``: the batched, SMAC-compatible simulator (tensors in, tensors out).

This is the fast path for training: ``B`` independent environments stepped together on CPU or
CUDA, with SMAC v1's observation, state, available-action and reward layouts (``features.py``),
SC2-style unit dynamics (``dynamics.py``) and the built-in enemy behaviour (``enemy_ai.py``).
The PettingZoo and Gymnasium wrappers are thin adapters over it with ``num_envs=1``.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields

import numpy as np
import torch

from sc2_envs import smacv2 as v2
from sc2_envs.maps import (
    MapSpec,
    get_map,
    ground_distances,
    ground_edges,
    list_maps,
    needs_routing,
    terrain_grids,
)
from sc2_envs.sim import rng
from sc2_envs.sim.rules.actions import MOVE_DIRS, OUT_OF_RANGE, apply_actions, check_actions, coerce_actions
from sc2_envs.sim.rules.dynamics import Dynamics
from sc2_envs.sim.rules.enemy_ai import EnemyAI
from sc2_envs.sim.rules.features import N_ACTIONS_NO_ATTACK, FeatureConfig, RewardConfig, SMACFeatures
from sc2_envs.sim.rules.features_v2 import SMACv2Features
from sc2_envs.sim.rules.reset import fresh_scenario_state, fresh_state
from sc2_envs.sim.runtime.first_use import first_call
from sc2_envs.sim.runtime.threads import apply_num_threads, check_num_threads
from sc2_envs.sim.state import (
    ORDER_NONE,
    UnitTable,
    WorldState,
)
from sc2_envs.units import LOOPS_PER_STEP
from sc2_envs.validation import did_you_mean, off_map

_STATE_FIELDS = [f.name for f in fields(WorldState)]
_V2_FIELDS = ("unit_kind", "fov_dir", "enemy_tag", "max_reward")  # WorldState fields only SMACv2 scenarios use
_FEATURE_OPTIONS = {f.name for f in fields(FeatureConfig)}
_REWARD_OPTIONS = {f.name for f in fields(RewardConfig)}


def _is_int(v) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


def _is_real(v) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_))


def _plain(v):
    """A bool / int / float option as the Python value (NumPy scalars compare and pickle as plain values)."""
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    return int(v) if isinstance(v, (int, np.integer)) else float(v)


def _as_device(device) -> torch.device:
    """``torch.device(device)``, or a ``ValueError`` naming the value unless it is ``'cpu'`` (index 0)
    or a visible CUDA device."""
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError):
        raise ValueError(f"device must be a torch device such as 'cpu', 'cuda' or 'cuda:1', got {device!r}") from None
    if dev.type not in ("cpu", "cuda"):  # mps, xpu, meta, ...: the simulator's code paths are CPU and CUDA
        raise ValueError(f"device must be 'cpu' or a CUDA device such as 'cuda' or 'cuda:1', got {device!r}")
    if dev.type == "cpu" and dev.index not in (None, 0):  # torch accepts 'cpu:1' but puts tensors on 'cpu'
        raise ValueError(f"device {device!r}: the CPU device has index 0 only; expected 'cpu' or 'cpu:0'")
    if dev.type == "cpu":
        return torch.device("cpu")  # what CPU tensors report as their device ('cpu:0' would compare unequal)
    if dev.type == "cuda":
        n = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if n == 0:
            raise ValueError(
                f"device {device!r} needs CUDA, but torch.cuda.is_available() is False "
                f"(torch {torch.__version__}); use device='cpu'"
            )
        if dev.index is not None and dev.index >= n:
            raise ValueError(f"device {device!r}: CUDA device index {dev.index} out of range, {n} device(s) visible")
    return dev


_WRAPPER_KEYWORDS = ("render_mode", "dead_agents", "agent_names", "info_action_mask", "backend")
"""Keywords of the PettingZoo / Gymnasium wrappers that reach no simulator (named in the unknown-option error, for typos)."""

REWARD_OPTION_RANGE = (1e-15, 1e15)
"""Magnitudes a nonzero numeric reward option may have. SMAC's scaled reward is ``r * reward_scale_rate /
max_reward`` with ``max_reward`` at least a unit's HP (~35), so two options at the upper bound stay
below ~3e28, far from float32's 3.4e38 (1e30 each overflowed to inf), and one at the lower bound is
not flushed to 0."""


def _check_options(options: dict) -> None:
    """SMAC options must have the type of their default (bools stay bools, numbers numbers); numeric
    (reward) options must be 0 or within :data:`REWARD_OPTION_RANGE` in magnitude."""
    defaults = {f.name: f.default for f in fields(FeatureConfig) + fields(RewardConfig)}
    for name, value in options.items():
        want = defaults[name]
        if isinstance(want, bool):
            if not isinstance(value, (bool, np.bool_)):
                raise TypeError(f"option {name} must be a bool, got {value!r}")
        elif not _is_real(value) or not math.isfinite(float(value)):
            raise TypeError(f"option {name} must be a finite number, got {value!r}")
        elif value != 0 and not REWARD_OPTION_RANGE[0] <= abs(float(value)) <= REWARD_OPTION_RANGE[1]:
            # the rewards are float32 sums and ratios of these with unit HP: beyond this they overflow to inf/NaN or vanish
            lo, hi = REWARD_OPTION_RANGE
            raise ValueError(
                f"option {name}={value!r}: expected 0 or a magnitude in [{lo:g}, {hi:g}], which the simulator's float32 "
                "reward arithmetic holds without overflow or underflow"
            )
    if "reward_scale_rate" in options and options["reward_scale_rate"] <= 0:
        raise ValueError(f"option reward_scale_rate must be > 0, got {options['reward_scale_rate']!r}")


@dataclass
class UnitPlacement:
    """One unit of a scenario (see ``SMACSim.set_units``).

    Attributes:
        x, y: centre position in world units.
        health: absolute HP; ``None`` = full; 0 = dead (absent).
        shield: absolute shields; ``None`` = full.
        cooldown: weapon cooldown in game loops (0 = ready).
        energy: medivac energy; ``None`` = the unit's starting energy.
        unit: SMACv2 scenarios only: the unit type to place (one of the scenario race's types);
            ``None`` keeps the slot's current type. Must be ``None`` on SMAC v1 maps, whose
            rosters are fixed.
    """

    x: float
    y: float
    health: float | None = None
    shield: float | None = None
    cooldown: float = 0.0
    energy: float | None = None
    unit: str | None = None


class SMACSim:
    """``B`` SMAC environments of one map, batched.

    Args:
        map_name: a SMAC map name (``sc2_envs.list_maps()``) or a ``MapSpec`` for a custom map.
        num_envs: ``B``, the number of environments.
        device: torch device of every tensor in and out.
        seed: seeds the first reset, as ``reset(seed)`` does: an ``int`` or ``numpy.random.SeedSequence``
            ``s`` gives env ``b`` the stream of ``SeedSequence(s).spawn(B)[b]`` (distinct base seeds
            never share a stream; see ``sim.rng``), ``B`` per-env seeds set each env, ``None`` draws
            fresh entropy (kept in ``seed_entropy``). Evaluation envs: ``seed=sim.rng.eval_seed(s)``.
        autoreset: reset an env inside ``step`` when its episode ends; the pre-reset observation is
            in ``final_obs`` / ``final_state`` / ``final_avail_actions``.
        lenient_actions: replace unavailable actions by stop (no-op for dead agents) and flag them
            in ``invalid_actions`` instead of raising.
        loops_per_tick: game loops per simulation tick (1 = exact; 2, 4 or 8 trade movement and
            damage timing resolution for speed; weapon cooldowns stay loop-exact).
        spawn_jitter: each unit's start position is offset uniformly in a square of this half-width
            (world units) around its clump position, from the env's random stream. SC2's own
            placement is deterministic, so SMAC v1 starts are (almost) fixed and a fixed policy
            replays one trajectory; ``0.0`` reproduces that exactly. The default 0.5 gives episodes
            some variety (see docs/deviations.md).
        compile: fuse the step with ``torch.compile`` (same rules, one fused kernel per step; the
            first step compiles for a minute or more, later runs reuse the on-disk cache). Several
            times faster at small B on CPU; results match eager mode to float rounding, not bit for bit.
        num_threads: torch CPU threads (``torch.set_num_threads``, process-wide). ``None``: on the
            torch path the simulator picks them for ``num_envs`` (one thread below 2,048 envs on CPU;
            see ``sim.runtime.threads`` and README "Threads (torch path)") unless you chose already (``OMP_NUM_THREADS``, or
            ``torch.set_num_threads`` after importing ``sc2_envs``), and says so once on stderr; on
            the numba path it leaves torch's count as it is (the step runs no torch operations).
            The count in effect is ``self.num_threads``. An int also caps the numba kernels'
            threads (``numba.set_num_threads(min(num_threads, NUMBA_NUM_THREADS))`` in the calling
            thread), the number of chunks a threaded kernel call splits the envs into
            (``sim.runtime.chunks``): a run told to use one core steps its envs on one.
        kernel: execution path of the step's stages (actions -> orders, enemy AI, the 8 game loops,
            then result, reward, available actions, observations and state, and the observation
            of auto-reset envs): ``"torch"`` (the reference tensor code, any device, ``compile``),
            ``"numba"`` (compiled CPU loops, ``sim.numba.dynamics`` and ``sim.numba.features``, for SMACv2
            scenarios ``sim.numba.features_v2`` and ``sim.numba.reset``; ``step``
            is one compiled call, ``sim.numba.step``, auto-resets included; bit-equal to torch, much faster
            at small batches; the first use in a fresh install compiles for about 30 s on a 2-core
            machine per family, SMAC v1 maps and SMACv2 scenarios, saying so on stderr; later
            processes load the on-disk cache in about a second), or ``"auto"``: numba on CPU when it imports,
            ``compile=False``, else torch (SMAC v1 maps and SMACv2 scenarios alike). With ``"auto"`` the first
            use does not wait for the compile: while it runs in a background thread the simulator plays on
            the torch path (the same game bit for bit) and switches at its first ``reset`` or ``step`` after
            it ends (``sim.runtime.warmup``; :meth:`wait_for_kernel` waits for it;
            ``SC2_ENVS_BACKGROUND_COMPILE=0`` compiles in the foreground instead). The path in effect is
            ``self.kernel`` (also in ``get_env_info()["kernel"]``).
        **options: SMAC's keyword options (``obs_last_action``, ``reward_only_positive``, ...; see
            ``FeatureConfig`` and ``RewardConfig``). ``continuing_episode`` is accepted for SMAC
            compatibility; time limits are always reported as truncation here.

    Raises:
        ValueError: unknown map, bad ``num_envs``, a device torch cannot use here (unknown type, CUDA
            without a visible GPU), an unknown option (the message lists the valid ones), or
            ``kernel="numba"`` where it cannot run (CUDA, ``compile=True``, numba not importable).
        TypeError: an option of the wrong type (a bool option given a non-bool, ...).
    """

    def __init__(
        self,
        map_name: str | MapSpec = "2s3z",
        num_envs: int = 1,
        device: str | torch.device = "cpu",
        seed: int | None = None,
        autoreset: bool = True,
        lenient_actions: bool = False,
        loops_per_tick: int = 1,
        spawn_jitter: float = 0.5,
        compile: bool = False,
        num_threads: int | None = None,
        kernel: str = "auto",
        **options,
    ):
        self._kinds_stale = False  # (read by the table / dynamics / enemy_ai properties)
        # what a private simulator compiling the numba kernels in the background is made with (``_awaiting``)
        self._warm_config = dict(
            map_name=map_name,
            num_envs=min(int(num_envs), 8) if isinstance(num_envs, int) else 1,
            lenient_actions=lenient_actions,
            loops_per_tick=loops_per_tick,
            spawn_jitter=spawn_jitter,
            **{k: v for k, v in options.items() if k != "scenario"},
        )
        self.scenario = v2.get_scenario(map_name) if v2.is_scenario(map_name) else None
        if self.scenario is not None:
            self.spec = self.scenario
        elif isinstance(map_name, MapSpec):
            self.spec = map_name
        elif not isinstance(map_name, str) or map_name not in list_maps():
            hint = did_you_mean(map_name, [*list_maps(), *v2.list_scenarios()])
            raise ValueError(
                f"unknown map or scenario {map_name!r}{hint}; SMAC v1 maps: {', '.join(list_maps())}; "
                f"SMACv2 scenarios: {', '.join(v2.list_scenarios())} (or a MapSpec)"
            )
        else:
            self.spec = get_map(map_name)
        v2_opts = {}
        pin = options.pop("scenario", None)
        if self.scenario is not None:
            for name, default in (("conic_fov", False), ("use_unit_ranges", True), ("obs_own_pos", True)):
                v = options.pop(name, default)
                if not isinstance(v, (bool, np.bool_)):
                    raise TypeError(f"option {name} must be a bool, got {v!r}")
                v2_opts[name] = bool(v)
            mar = options.pop("min_attack_range", 2)
            if not _is_real(mar) or not math.isfinite(float(mar)) or mar < 0:
                raise ValueError(f"option min_attack_range must be a finite number >= 0, got {mar!r}")
            if float(mar) != self.scenario.min_attack_range:
                from dataclasses import replace

                self.scenario = self.spec = replace(self.scenario, min_attack_range=float(mar))
            poe = options.pop("prob_obs_enemy", 1.0)
            if isinstance(poe, (bool, np.bool_)):  # True == 1.0 would pass the check below
                raise TypeError(f"option prob_obs_enemy must be a probability (a float), got {poe!r}")
            poe == 1.0 or _unsupported("prob_obs_enemy", poe, "only 1.0 (SMACv2's default)")
            mask = options.pop("action_mask", True)
            (isinstance(mask, (bool, np.bool_)) and bool(mask)) or _unsupported(
                "action_mask", mask, "only True (SMACv2's default)"
            )
        elif pin is not None:
            raise ValueError(
                f"option scenario= (pinned composition) is for SMACv2 scenarios; {self.spec.name!r} is a SMAC v1 map"
            )
        for name, value in (("autoreset", autoreset), ("lenient_actions", lenient_actions), ("compile", compile)):
            if not isinstance(value, bool):
                raise TypeError(f"{name} must be a bool, got {value!r}")
        if not _is_int(loops_per_tick):
            raise TypeError(f"loops_per_tick must be an int (1, 2, 4 or 8), got {loops_per_tick!r}")
        if not (_is_real(spawn_jitter) and 0.0 <= spawn_jitter <= 2.0):
            raise ValueError(f"spawn_jitter must be a number in [0, 2] world units, got {spawn_jitter!r}")
        self.spawn_jitter = float(spawn_jitter)
        if not _is_int(num_envs) or num_envs < 1:
            raise ValueError(f"num_envs must be a positive int, got {num_envs!r}")
        num_envs = int(num_envs)
        # SMAC's continuing_episode only adds info["episode_limit"], which every step here reports anyway.
        continuing_episode = options.pop("continuing_episode", False)
        if not isinstance(continuing_episode, (bool, np.bool_)):
            raise TypeError(f"option continuing_episode must be a bool, got {continuing_episode!r}")
        unknown = set(options) - _FEATURE_OPTIONS - _REWARD_OPTIONS
        if unknown:
            extra = {"conic_fov", "use_unit_ranges", "obs_own_pos", "min_attack_range", "scenario"} if self.scenario else set()
            valid = _FEATURE_OPTIONS | _REWARD_OPTIONS | {"continuing_episode"} | extra
            # a typo of a simulator or wrapper keyword lands here too (e.g. render= for render_mode=): suggest across all
            near = [*valid, *_SIM_KEYWORDS, *_WRAPPER_KEYWORDS]
            hints = "".join(f"; {name!r}{did_you_mean(name, near)}" for name in sorted(unknown) if did_you_mean(name, near))
            raise ValueError(
                f"unknown option(s) {sorted(unknown)}{hints}; valid SMAC options: {sorted(valid)}; the simulator's own "
                f"keywords: {list(_SIM_KEYWORDS)}; the PettingZoo / Gymnasium wrappers add {list(_WRAPPER_KEYWORDS)}"
            )
        _check_options(options)
        self.map_name = self.spec.name
        self.num_envs = num_envs
        self.device = _as_device(device)
        check_num_threads(num_threads)  # applied once the kernel is known (the automatic rule is the torch path's)
        self._explicit_threads = num_threads is not None
        self.autoreset = autoreset
        self.lenient_actions = lenient_actions
        self.n_agents = self.spec.n_agents
        self.n_enemies = self.spec.n_enemies
        self.episode_limit = self.spec.episode_limit
        if self.scenario is not None:
            self.n_actions = 0  # set from the features below
            self.table = UnitTable.build_scenario(self.scenario, num_envs, self.device)
            terrain = terrain_grids("full")  # 32x32_flat: every cell pathable, one level
        else:
            self.n_actions = self.spec.n_actions
            self.agent_unit_types = self.spec.ally_units()
            self.table = UnitTable.build(self.spec, self.device)
            terrain = terrain_grids(self.spec.terrain)
        self.pathing = torch.as_tensor(terrain.pathing.copy(), device=self.device)
        self.dynamics = Dynamics(
            self.table,
            self.pathing,
            loops_per_tick,
            cliff_level=torch.as_tensor(terrain.cliff_level.astype("int32"), device=self.device),
            cliff_walkable=torch.as_tensor(terrain.cliff_walkable.copy(), device=self.device),
            **({} if self.scenario is not None else self._routing(self.spec.terrain)),
        )
        fcfg = FeatureConfig(**{k: v for k, v in options.items() if k in _FEATURE_OPTIONS})
        rcfg = RewardConfig(**{k: v for k, v in options.items() if k in _REWARD_OPTIONS})
        # what state_dict() records and load_state_dict() compares: the options that change the game
        self._snapshot_options = {
            **{f.name: _plain(getattr(fcfg, f.name)) for f in fields(FeatureConfig)},
            **{f.name: _plain(getattr(rcfg, f.name)) for f in fields(RewardConfig)},
            "lenient_actions": bool(lenient_actions),
            "loops_per_tick": int(loops_per_tick),
            "spawn_jitter": float(spawn_jitter),
            **{k: bool(v) for k, v in v2_opts.items()},
        }
        if self.scenario is not None:
            self._snapshot_options["min_attack_range"] = float(self.scenario.min_attack_range)
        if self.scenario is not None:
            self.enemy_ai = EnemyAI(self.table, self.n_agents, enemy_order="attack_closest")
            self.features = SMACv2Features(self.scenario, self.table, fcfg, rcfg, self.device, **v2_opts)
            self.n_actions = self.features.n_actions
            self.sampler = v2.ScenarioSampler(self.scenario, self.device)
            U = self.n_agents + self.n_enemies
            self._pin_mask = torch.zeros(num_envs, dtype=torch.bool, device=self.device)
            self._pin_kind = torch.zeros(num_envs, U, dtype=torch.int64, device=self.device)
            self._pin_pos = torch.zeros(num_envs, U, 2, device=self.device)
            self._pin_has_pos = torch.zeros(num_envs, dtype=torch.bool, device=self.device)
        else:
            self.enemy_ai = EnemyAI(self.table, self.n_agents, enemy_order=self.spec.enemy_order)
            self.features = SMACFeatures(self.spec, self.table, fcfg, rcfg, self.device)
        self._n_no_attack = getattr(self.features, "n_actions_no_attack", N_ACTIONS_NO_ATTACK)
        self._n_fov = getattr(self.features, "n_fov", 0)
        self.obs_size = self.features.obs_size
        self.state_size = self.features.state_size
        self.loops_per_tick = loops_per_tick
        self._move_dirs = MOVE_DIRS.to(self.device)
        self._arange_b = torch.arange(num_envs, device=self.device)
        self.st = WorldState.empty(num_envs, len(self.table.names), self.n_agents, self.device)
        self._avail = torch.zeros(num_envs, self.n_agents, self.n_actions, dtype=torch.bool, device=self.device)
        if seed is not None:
            rng.env_keys(seed, num_envs)  # a bad seed fails here, not at the first reset
        self._seed = seed
        self.seed_entropy = None
        """OS entropy of the envs' streams when the last seeding reset had no seed (``SeedSequence(seed_entropy)``
        replays it); None after a reset with a seed."""
        self._needs_reset = True
        self._seeded = False
        self._compile = compile
        self._compiled: dict = {}
        self.kernel = self._resolve_kernel(kernel)
        self.num_threads = apply_num_threads(num_threads, num_envs, self.device, self.kernel)
        self._awaiting = None  # the family (SMACv2 or not) whose numba kernels compile in the background
        if kernel == "auto" and self.kernel == "numba":
            from sc2_envs.sim.runtime import warmup

            if warmup.enabled() and not warmup.family_ready(self.scenario is not None):
                self.kernel, self._awaiting = "torch", self.scenario is not None
                self._compile_job()
        self._build_kernels()
        self._stat_counts = torch.zeros(3, dtype=torch.int64, device=self.device)
        if pin is not None:
            if not isinstance(pin, dict):
                raise TypeError(f"option scenario must be a dict of pin_scenario's arguments, got {pin!r}")
            self.pin_scenario(**pin)

    def _build_kernels(self) -> None:
        """Build the numba kernels from the current tables (``kernel="numba"``; nothing on torch).

        The kernels copy the unit, kind and feature tables at construction: after changing a table
        in place (e.g. ``table.kinds``), call this again."""
        self._tick_kernel = self._observe_kernel = self._step_kernel = self._scenario_reset = None
        if self.kernel != "numba":
            return
        if self._explicit_threads:
            from sc2_envs.sim.runtime import limit_numba_threads

            limit_numba_threads(self.num_threads)
        from sc2_envs.sim.numba.dynamics import TickKernel
        from sc2_envs.sim.numba.step import StepKernel

        fov = self.features._fov_dirs if self._n_fov else None
        self._tick_kernel = TickKernel(self.dynamics, self.enemy_ai, self.n_agents, self._move_dirs, self._n_no_attack, fov)
        if self.scenario is not None:
            from sc2_envs.sim.numba.features_v2 import ObserveKernelV2
            from sc2_envs.sim.numba.reset import ScenarioResetKernel

            self._observe_kernel = ObserveKernelV2(self.features)
            self._scenario_reset = ScenarioResetKernel(self)
        else:
            from sc2_envs.sim.numba.features import ObserveKernel

            self._observe_kernel = ObserveKernel(self.features)
        # the whole of step() in one compiled call (checks, orders, ticks, observe, statistics)
        self._step_kernel = StepKernel(
            self._tick_kernel, self._observe_kernel, LOOPS_PER_STEP // self.dynamics.L, self.lenient_actions
        )
        if self.scenario is None:
            self._step_kernel.set_fresh(self.table, self.spec, self._tick_kernel)

    # The numba path's auto-reset leaves the per-env unit table (and the tensors Dynamics derives
    # from it) to be rebuilt from ``st.unit_kind`` when next read: the kernels never read them, so a
    # step need not pay for the rebuild (a few ms at large batches).
    @property
    def table(self) -> UnitTable:
        """The roster's ``UnitTable`` (SMACv2: per env, for the current episodes)."""
        if self._kinds_stale:
            self._refresh_kinds()
        return self._table

    @table.setter
    def table(self, value: UnitTable) -> None:
        self._table = value

    @property
    def dynamics(self) -> Dynamics:
        """The torch game-loop dynamics (its per-env tensors follow the current episodes)."""
        if self._kinds_stale:
            self._refresh_kinds()
        return self._dynamics

    @dynamics.setter
    def dynamics(self, value: Dynamics) -> None:
        self._dynamics = value

    @property
    def enemy_ai(self) -> EnemyAI:
        """The torch enemy behaviour (reads the per-env table)."""
        if self._kinds_stale:
            self._refresh_kinds()
        return self._enemy_ai

    @enemy_ai.setter
    def enemy_ai(self, value: EnemyAI) -> None:
        self._enemy_ai = value

    def _compile_job(self):
        """This process's background compile of the numba kernels this simulator waits for (``sim.runtime.warmup``)."""
        from sc2_envs.sim.runtime import warmup

        config = self._warm_config  # not self: the thread must not keep this simulator alive
        return warmup.job(self._awaiting, lambda: _play_for_compile(config))

    def _adopt_kernel(self, timeout: float | None = 0.0) -> None:
        """Switch to the numba path once its background compile has ended (waiting up to ``timeout`` s, None:
        until it ends); after a failed compile stay on the torch path. The two paths give equal states and
        outputs (tested), so where the switch falls changes no result."""
        from sc2_envs.sim.runtime.warmup import numba_unusable

        if numba_unusable() is not None:  # forked mid-compile: no Numba in this process, the torch path stays
            self._awaiting = None
            return
        job = self._compile_job()
        if not job.finished(timeout):
            return
        self._awaiting = None
        if job.error is None:
            self.kernel = "numba"
            self._build_kernels()

    def wait_for_kernel(self, timeout: float | None = None) -> str:
        """Wait for a background compile of the numba kernels (``kernel="auto"`` on first use, see
        ``sim.runtime.warmup``) and switch to them; returns the path then in effect (``self.kernel``):
        ``"torch"`` if the compile failed (it said why on stderr) or is still running after ``timeout``
        seconds (None: no limit). Returns at once when nothing is compiling."""
        if self._awaiting is not None:
            self._adopt_kernel(timeout)
        return self.kernel

    def _resolve_kernel(self, kernel) -> str:
        """``"numba"`` or ``"torch"`` for the ``kernel`` option (see the class docstring)."""
        from sc2_envs.sim.runtime import KERNELS, numba_available

        if kernel not in KERNELS:
            raise ValueError(f"kernel must be one of {KERNELS}, got {kernel!r}")
        if kernel == "torch":
            return "torch"
        why = None
        if self.device.type != "cpu":
            why = f"it runs on CPU only (device={self.device})"
        elif self._compile:
            why = "compile=True fuses the torch path; use kernel='torch' with it"
        else:
            why = numba_available()
            if why is None:
                from sc2_envs.sim.runtime.warmup import numba_unusable

                why = numba_unusable()
            if why is None:
                from sc2_envs.sim.numba.dynamics import tick_kernel_supported

                why = tick_kernel_supported(self.table)
        if why is None:
            return "numba"
        if kernel == "numba":
            raise ValueError(f"kernel='numba' cannot be used here: {why}")
        return "torch"

    # ------------------------------------------------------------------ reset
    def _seed_envs(self, seed) -> None:
        """Give every env its own 64-bit key (its random stream) by seed splitting; see ``sim.rng``.

        ``int`` or ``SeedSequence`` ``s``: env ``b`` gets child ``b`` of ``SeedSequence(s)``
        (``SeedSequence(s, spawn_key=(b,))``); ``None``: the same with fresh OS entropy, kept in
        ``seed_entropy``; a sequence of ``B`` seeds: env ``b`` gets what a 1-env batch seeded with
        entry ``b`` gets (a ``SeedSequence`` entry is used as is).
        """
        # seed_entropy describes the streams in use: fresh entropy, or None once a seed set them (a stale value
        # would replay battles of an earlier, unseeded start; found in a newcomer trial)
        self.seed_entropy = None
        if seed is None:
            seed = np.random.SeedSequence()
            self.seed_entropy = seed.entropy
        keys = rng.env_keys(seed, self.num_envs)
        self.st.env_seed = torch.tensor(keys, dtype=torch.int64, device=self.device)
        self.st.episode_count = torch.full((self.num_envs,), -1, dtype=torch.int64, device=self.device)

    def _fresh_state(self) -> WorldState:
        """A new episode for every env (``rules.reset``; the numba path: ``numba.reset``, for the envs that ended)."""
        if self.scenario is not None:
            draw = self.sampler.sample(self.st.episode_count + 1, self.st.env_seed)
            pins = (self._pin_mask, self._pin_kind, self._pin_has_pos, self._pin_pos)
            return fresh_scenario_state(
                self.st, self.table, self.n_agents, self.n_enemies, draw, pins, self.features.max_reward_of
            )
        return fresh_state(self.st, self.table, self.spec, self.n_agents, self.spawn_jitter, self.dynamics.can_stand)

    def _refresh_kinds(self) -> None:
        """SMACv2: rebuild the per-env unit tables from ``st.unit_kind`` (after resets, loads, set_units)."""
        self._kinds_stale = False
        if self.scenario is None:
            return
        self._table.assign_kinds_(self.st.unit_kind)
        self._dynamics.refresh()

    def unit_types(self, env_index: int | None = None) -> list[list[str]] | tuple[list[str], list[str]]:
        """Unit type names of the current episode: ``(agent types, enemy types)`` of env ``env_index``,
        or a list of those for every env when ``env_index`` is None. On SMAC v1 maps they are the
        map's fixed rosters; in SMACv2 scenarios they change at every reset.

        Raises:
            TypeError, ValueError: ``env_index`` is not None or an int in ``[0, num_envs)``.
        """
        if env_index is None:
            return [self.unit_types(b) for b in range(self.num_envs)]
        env_index = self._check_env_index(env_index, none_means_all=True)
        if self.scenario is None:
            return list(self.spec.ally_units()), list(self.spec.enemy_units())
        kinds = self.scenario.kinds
        k = self.st.unit_kind[env_index].tolist()
        return [kinds[i] for i in k[: self.n_agents]], [kinds[i] for i in k[self.n_agents :]]

    def pin_scenario(self, allies, enemies, ally_positions=None, enemy_positions=None, env_index: int | None = None) -> None:
        """SMACv2: use this composition (and these start points) at every later reset of an env.

        Agent ``i`` gets ``allies[i]`` at ``ally_positions[i]`` and enemy ``j`` gets ``enemies[j]``
        at ``enemy_positions[j]``, exactly in the order given (SMACv2's agent sort by type and
        position applies to sampled teams only). Positions ``None``: drawn from the scenario's
        start-position distribution as usual. Takes effect at the next reset (call ``reset()``
        to start one now); ``unpin_scenario`` restores sampling.

        Args:
            allies: ``n_agents`` unit type names of the scenario's race; enemies: ``n_enemies`` names.
            ally_positions / enemy_positions: ``[n, 2]`` world points with ``0 <= x, y < 32``, or None
                (both or neither).
            env_index: the env to pin, or None for every env.

        Raises:
            ValueError: not a SMACv2 scenario; a team of the wrong size; a unit type of another
                race; a position off the map or of the wrong shape; an env index out of range.
            TypeError: a team that is not a sequence of names.
        """
        if self.scenario is None:
            raise ValueError(f"pin_scenario is for SMACv2 scenarios; {self.map_name!r} is a SMAC v1 map with a fixed roster")
        a, e = v2.validate_composition(self.scenario, allies, enemies)
        if (ally_positions is None) != (enemy_positions is None):
            raise ValueError("give both ally_positions and enemy_positions, or neither")
        envs = self._env_mask(env_index)
        self._pin_kind[envs] = torch.tensor(a + e, dtype=torch.int64, device=self.device)
        if ally_positions is not None:
            p = torch.cat(
                [
                    v2.validate_positions(self.scenario, "ally", ally_positions, self.n_agents),
                    v2.validate_positions(self.scenario, "enemy", enemy_positions, self.n_enemies),
                ]
            ).to(self.device)
            self._pin_pos[envs] = p
        self._pin_has_pos[envs] = ally_positions is not None
        self._pin_mask[envs] = True

    def unpin_scenario(self, env_index: int | None = None) -> None:
        """SMACv2: sample compositions and positions again at later resets (env ``env_index`` or all)."""
        if self.scenario is None:
            raise ValueError(f"unpin_scenario is for SMACv2 scenarios; {self.map_name!r} is a SMAC v1 map")
        self._pin_mask[self._env_mask(env_index)] = False

    def _env_mask(self, env_index) -> torch.Tensor:
        if env_index is None:
            return torch.ones(self.num_envs, dtype=torch.bool, device=self.device)
        m = torch.zeros(self.num_envs, dtype=torch.bool, device=self.device)
        m[self._check_env_index(env_index, none_means_all=True)] = True
        return m

    def _check_env_index(self, env_index, none_means_all: bool = False) -> int:
        """``env_index`` as an int, or TypeError / ValueError naming it (no negative indices: -1 would
        silently be the last env). ``none_means_all``: the caller also takes None (the message says so)."""
        if not _is_int(env_index):
            also = " or None" if none_means_all else ""
            raise TypeError(f"env_index must be an int in [0, {self.num_envs}){also}, got {env_index!r}")
        if not 0 <= env_index < self.num_envs:
            raise ValueError(f"env_index must be in [0, {self.num_envs}), got {env_index}")
        return int(env_index)

    def reset(self, seed: int | Sequence[int] | torch.Tensor | None = None) -> dict[str, torch.Tensor]:
        """Start a new episode in every env.

        Args:
            seed: for the batch, an ``int`` or ``numpy.random.SeedSequence`` ``s``: env ``b`` gets
                the stream of ``SeedSequence(s, spawn_key=(b,))`` (= ``SeedSequence(s).spawn(B)[b]``),
                which depends on ``b`` and ``s`` but not on ``B``: env ``b`` replays the same battles in a
                batch of any size, and no (seed, env) pair shares a stream with another. A sequence of
                ``B`` seeds (ints or ``SeedSequence``): env ``b`` gets what a 1-env batch reset with
                entry ``b`` gets. ``None``: keep each env's stream and continue with its next episode
                (fresh entropy on the first reset). After ``reset(seed)`` each env's episodes follow
                its stream: the ``k``-th episode of env ``b`` depends only on ``(s, b, k)``.

        Raises:
            TypeError: a seed of another type; ValueError: a negative int or a list of the wrong length.

        Returns:
            ``{"obs": [B, N, obs_size] float32, "state": [B, state_size] float32,
            "avail_actions": [B, N, n_actions] bool}``.
        """
        if self._awaiting is not None:
            self._adopt_kernel()
        if seed is not None or not self._seeded:
            self._seed_envs(seed if seed is not None else self._seed)
            self._seeded = True
        self.st = self._fresh_state()
        self._refresh_kinds()
        self._needs_reset = False
        return self._observe()

    def _observe(self) -> dict[str, torch.Tensor]:
        if self._observe_kernel is not None:
            kind = "observe (SMACv2)" if self.scenario is not None else "observe"
            out = first_call(kind, self._observe_kernel.observe, self.st)
            # the step kernel's own copy: changing the returned tensor never changes the action check
            self._avail = self._step_kernel.avail_buffer(out["avail_actions"])
            if self.scenario is not None:
                out["unit_kind"] = self.st.unit_kind[:, : self.n_agents].clone()
            return out
        avail = self.features.avail_actions(self.st)
        self._avail = avail.clone()  # the action check's own copy: changing the returned mask changes nothing
        out = {"obs": self.features.obs(self.st, avail), "state": self.features.state(self.st), "avail_actions": avail}
        if self.scenario is not None:
            out["unit_kind"] = self.st.unit_kind[:, : self.n_agents].clone()
        return out

    # ------------------------------------------------------------------ step
    def _coerce_actions(self, actions) -> torch.Tensor:
        """``actions`` as a ``[B, N]`` int64 tensor on the sim's device (``rules.actions.coerce_actions``)."""
        return coerce_actions(actions, self.num_envs, self.n_agents, self.n_actions, self.device)

    def _out_of_range(self, actions: torch.Tensor, b: int, n: int) -> ValueError:
        return ValueError(f"env {b}, agent {n}: action {int(actions[b, n])} is out of range [0, {self.n_actions})")

    def _unavailable(self, actions: torch.Tensor, b: int, n: int) -> ValueError:
        mask = self._avail[b, n].int().tolist()
        return ValueError(
            f"env {b}, agent {n} ({self.unit_types(b)[0][n]}): action {int(actions[b, n])} is unavailable; "
            f"avail_actions={mask}. Pass lenient_actions=True to replace unavailable actions by stop/no-op."
        )

    def _check_actions(self, actions) -> tuple[torch.Tensor, torch.Tensor]:
        """The actions to apply and which were replaced (``rules.actions.check_actions``); raises on a bad one."""
        actions = self._coerce_actions(actions)
        actions, invalid, error = check_actions(actions, self._avail, self.st.alive[:, : self.n_agents], self.lenient_actions)
        if error is not None:
            code, b, n = error
            raise (self._out_of_range if code == OUT_OF_RANGE else self._unavailable)(actions, b, n)
        return actions, invalid

    def _apply_actions(self, st: WorldState, actions: torch.Tensor) -> None:
        """Turn SMAC actions into unit orders (``rules.actions.apply_actions``)."""
        fov = self.features._fov_dirs if self._n_fov else None
        apply_actions(st, actions, self.table.is_healer[..., : self.n_agents], self._n_no_attack, self._move_dirs, fov)

    def step(self, actions) -> dict[str, torch.Tensor]:
        """Advance every env by one env step (8 game loops).

        Args:
            actions: ``[B, N]`` integer tensor (or array) of SMAC action ids; each must be available.

        Returns:
            dict with ``obs``, ``state``, ``avail_actions`` (of the new episode where an env was
            auto-reset), ``reward`` [B] float32, ``terminated`` [B] bool (battle won, lost or drawn),
            ``truncated`` [B] bool (time limit), ``battle_won`` [B] bool, ``dead_allies`` and
            ``dead_enemies`` [B] int64, ``episode_limit`` [B] bool, ``final_obs``, ``final_state``,
            ``final_avail_actions`` (before any auto-reset), ``agent_alive`` [B, N] bool and
            ``invalid_actions`` [B, N] bool.

        Raises:
            RuntimeError: stepping before ``reset``, or with ``autoreset=False`` after any env's episode
                ended (then call ``reset`` for the whole batch).
            TypeError / ValueError: actions of the wrong dtype or shape, out of range, or unavailable.
        """
        if self._needs_reset:
            raise RuntimeError("call reset() before step() (and after an episode ends when autoreset=False)")
        if self._awaiting is not None:
            self._adopt_kernel()
        if self._step_kernel is not None:
            return self._step_fused(actions)
        actions, invalid = self._check_actions(actions)
        N = self.n_agents
        core = self._core(actions)
        st, won = self.st, core["battle_won"]
        terminated = won | core["lost"] | core["draw"]
        truncated = ~terminated & (st.episode_steps >= self.episode_limit)
        out = {k: core[k] for k in ("obs", "state", "avail_actions", "reward", "battle_won")}
        out.update(
            terminated=terminated,
            truncated=truncated,
            dead_allies=(~st.alive[:, :N]).sum(1),
            dead_enemies=(~st.alive[:, N:]).sum(1),
            episode_limit=truncated.clone(),  # its own tensor, as every other key
            agent_alive=st.alive[:, :N].clone(),
            invalid_actions=invalid,
        )
        draw = core["draw"]
        done = terminated | truncated
        self._record_stats(won, draw, truncated, done)
        # copies, so that changing one returned tensor in place never changes another
        out["final_obs"], out["final_state"] = out["obs"].clone(), out["state"].clone()
        out["final_avail_actions"] = out["avail_actions"].clone()
        if bool(done.any()):
            if self.autoreset:
                self.st.copy_envs_from(self._fresh_state(), done)
                self._refresh_kinds()
                # observe only the envs that were reset (a few per step at large B), not the whole batch
                idx = done.nonzero().flatten()
                if self._observe_kernel is not None:
                    # writes the rows idx of out's tensors (fresh this step; final_* are copies)
                    self._observe_kernel.observe(self.st, idx, out)
                    self._avail = out["avail_actions"].clone()
                    return out
                sub = self.st.select(idx)
                avail = self.features.avail_actions(sub)
                out["obs"] = out["obs"].index_copy(0, idx, self.features.obs(sub, avail))
                out["state"] = out["state"].index_copy(0, idx, self.features.state(sub))
                out["avail_actions"] = out["avail_actions"].index_copy(0, idx, avail)
                if self.scenario is not None:  # the enemy tags the new episodes' observation set
                    self.st.enemy_tag = self.st.enemy_tag.index_copy(0, idx, sub.enemy_tag)
            else:
                self._needs_reset = True
        if self.scenario is not None:
            out["unit_kind"] = self.st.unit_kind[:, :N].clone()
        self._avail = out["avail_actions"].clone()  # the action check's own copy, as in _observe
        return out

    def _step_fused(self, actions) -> dict[str, torch.Tensor]:
        """``step`` on the numba path: one ``StepKernel`` call, then the auto-reset of ended envs."""
        B, N = self.num_envs, self.n_agents
        if type(actions) is torch.Tensor and actions.dtype is torch.int64 and actions.is_cpu and actions.shape == (B, N):
            a = actions.numpy()
        else:
            actions = self._coerce_actions(actions)
            a = actions.numpy()
        if not a.flags.c_contiguous:
            a = np.ascontiguousarray(a)
        kernel = self._step_kernel
        avail = self._avail
        if avail is not kernel._avail_t:
            avail = self._avail = kernel.avail_buffer(avail)
        code, value, arrays = first_call(kernel.family, kernel, self.st, a, avail, self._stat_counts)
        if code:
            from sc2_envs.sim.numba.step import BAD_KIND, OUT_OF_RANGE

            if code == BAD_KIND:
                b, u = divmod(value, N + self.n_enemies)
                raise ValueError(
                    f"WorldState.unit_kind[{b}, {u}] = {int(self.st.unit_kind[b, u])} is not a kind index in "
                    f"[0, {len(self.scenario.kinds)}) ({self.scenario.race}: {list(self.scenario.kinds)})"
                )
            b, n = divmod(value, N)
            actions = torch.from_numpy(a)
            raise (self._out_of_range if code == OUT_OF_RANGE else self._unavailable)(actions, b, n)
        out = dict(zip(kernel.out_keys, map(torch.from_numpy, arrays), strict=True))
        if value:  # some episodes ended
            if not self.autoreset:
                self._needs_reset = True
            else:
                done = arrays[5] | arrays[6]  # terminated | truncated
                idx = done.nonzero()[0]
                if self.scenario is not None:
                    self._reset_scenario_envs(idx)
                else:
                    # = self.st.copy_envs_from(self._fresh_state(), done), compiled (bit for bit, tested)
                    kernel.reset_envs(self.st, done, self.spawn_jitter)
                # observe only the envs that were reset, into rows of this step's fresh outputs (final_* are copies)
                self._observe_kernel.observe(self.st, idx, out)
                kernel._avail_np[idx] = arrays[2][idx]  # avail_actions
        if self.scenario is not None:
            out["unit_kind"] = self.st.unit_kind[:, :N].clone()
        return out

    def _reset_scenario_envs(self, idx: np.ndarray) -> None:
        """Numba path, SMACv2: new episodes for the envs ``idx`` ([k] int64), in place (the kernels'
        views stay valid): the rows of ``copy_envs_from(self._fresh_state(), done)``, compiled
        (``sim.numba.reset``, bit for bit); the unit table follows when next read (``table``)."""
        self._scenario_reset.reset_envs(self.st, idx)
        self._kinds_stale = True

    def _core(self, actions: torch.Tensor) -> dict[str, torch.Tensor]:
        """Orders and enemy AI, 8 game loops, then result, reward and features; updates ``self.st``.

        Three stages of pure tensor code (no host synchronisation); with ``compile=True`` each stage
        is one ``torch.compile`` graph (a per-tick graph compiles much faster than a whole step).
        """
        self._run_stage("orders", actions)
        if self._tick_kernel is not None:
            self._run_stage("ticks")  # one compiled call for the 8 loops
        else:
            for _ in range(0, LOOPS_PER_STEP, self.dynamics.L):
                self._run_stage("tick")
        return self._run_stage("observe", actions)

    def advance_loops(self, n: int) -> None:
        """Play ``n`` game loops with the units' current orders kept (the SC2-API server's ``step``).

        Each whole env step of ``LOOPS_PER_STEP`` loops runs as ``step`` does with every agent's no-op
        (orders and enemy AI, the loops, then the step count, reward and features), without the
        episode's end handling or auto-reset; the remaining ``n % LOOPS_PER_STEP`` loops run as ticks of
        ``loops_per_tick`` loops only (no enemy AI, no features). Updates ``self.st`` in place.

        Args:
            n: game loops, ``>= 0``; ``n % LOOPS_PER_STEP`` must be a multiple of ``loops_per_tick``.

        Raises:
            ValueError: ``n`` is negative, or its remainder is not a whole number of ticks.
        """
        if not _is_int(n) or n < 0:
            raise ValueError(f"advance_loops: n must be an int >= 0 game loops, got {n!r}")
        steps, rest = divmod(int(n), LOOPS_PER_STEP)
        if rest % self.dynamics.L:
            raise ValueError(
                f"advance_loops: n={n} leaves {rest} loops after whole env steps, not a multiple of "
                f"loops_per_tick={self.dynamics.L}"
            )
        keep = torch.zeros(self.num_envs, self.n_agents, dtype=torch.int64, device=self.device)  # no-op: keep orders
        for _ in range(steps):
            self._core(keep)
        for _ in range(rest // self.dynamics.L):
            self._run_stage("tick")

    # Stage functions: each runs one stage on ``st`` through the kernel in effect (``self.kernel``).
    def _stage_orders(self, st: WorldState, actions: torch.Tensor) -> None:
        """SMAC actions -> ally orders, then the enemy AI's orders."""
        if self._tick_kernel is not None:
            self._tick_kernel.orders(st, actions)
            return
        self._apply_actions(st, actions)
        self.enemy_ai.act(st)

    def _stage_tick(self, st: WorldState) -> None:
        """One tick of ``loops_per_tick`` game loops (``Dynamics.advance``)."""
        if self._tick_kernel is not None:
            self._tick_kernel.ticks(st, 1)
            return
        self.dynamics.advance(st)

    def _stage_ticks(self, st: WorldState) -> None:
        """All ticks of one env step (8 game loops)."""
        if self._tick_kernel is not None:
            self._tick_kernel.ticks(st, LOOPS_PER_STEP // self.dynamics.L)
            return
        for _ in range(0, LOOPS_PER_STEP, self.dynamics.L):
            self.dynamics.advance(st)

    def _stage_observe(self, st: WorldState, actions: torch.Tensor) -> dict[str, torch.Tensor]:
        """Step count, last action, game result, reward, previous-step snapshot, then the features."""
        if self._observe_kernel is not None:
            return self._observe_kernel(st, actions)
        st.episode_steps = st.episode_steps + 1
        st.last_action = actions.clone()  # the caller's tensor is never aliased into the state
        won, lost, draw = self.features.game_result(st)
        reward = self.features.reward(st, won, lost)
        st.prev_health, st.prev_shield, st.prev_alive = st.health.clone(), st.shield.clone(), st.alive.clone()
        avail = self.features.avail_actions(st)
        return dict(
            obs=self.features.obs(st, avail),
            state=self.features.state(st),
            avail_actions=avail,
            reward=reward,
            battle_won=won,
            lost=lost,
            draw=draw,
        )

    def _run_stage(self, name: str, arg: torch.Tensor | None = None):
        """Run stage ``name`` on ``self.st`` (with ``arg`` when given), eagerly or through its compiled flat-tuple form."""
        fn = getattr(self, f"_stage_{name}")
        if not self._compile:
            return fn(self.st) if arg is None else fn(self.st, arg)
        if name not in self._compiled:

            def flat(arg, *tensors):
                st = WorldState(*tensors)
                res = fn(st) if arg is None else fn(st, arg)
                return tuple(getattr(st, n) for n in _STATE_FIELDS), res

            self._compiled[name] = torch.compile(flat, dynamic=False)
        fields_out, res = self._compiled[name](arg, *(getattr(self.st, n) for n in _STATE_FIELDS))
        self.st = WorldState(*fields_out)
        return res

    def _record_stats(self, won, draw, truncated, done) -> None:
        # kept on the device and read in get_stats(): no host sync per step
        self._stat_counts = self._stat_counts + torch.stack([won.sum(), done.sum(), truncated.sum()])

    # ------------------------------------------------------------------ info
    def get_env_info(self) -> dict:
        """SMAC's ``get_env_info()`` keys plus the feature layouts and unit classes the models need.

        SMACv2 scenarios add ``unit_types_vary=True``, ``scenario``, ``race``, ``kinds`` (the
        race's unit types in one-hot order) and ``feature_options`` (``conic_fov``,
        ``use_unit_ranges``, ``obs_own_pos``, ``min_attack_range``: two of them change what the
        features mean without changing the layout, so checkpoints record them and
        ``models.load_checkpoint`` compares them); their ``agent_unit_types`` / ``enemy_unit_types``
        are env 0's current episode (they change at every reset: see :meth:`unit_types` and the
        ``unit_kind`` tensor of ``reset`` / ``step``).
        """
        info = dict(self.features.env_info())
        if self.scenario is not None:
            ally, enemy = self.unit_types(0)  # before the first reset: the race's type 0 everywhere
            info.update(
                map_name=self.map_name,
                agent_unit_types=ally,
                enemy_unit_types=enemy,
                unit_type_bits=self.features.utb,
                ally_type_order=list(self.scenario.kinds),
                enemy_type_order=list(self.scenario.kinds),
                episode_limit=self.episode_limit,
                unit_types_vary=True,
                scenario=self.scenario.name,
                race=self.scenario.race,
                kinds=list(self.scenario.kinds),
                feature_options={
                    k: self._snapshot_options[k] for k in ("conic_fov", "use_unit_ranges", "obs_own_pos", "min_attack_range")
                },
                kernel=self.kernel,
            )
            return info
        info.update(
            map_name=self.map_name,
            agent_unit_types=list(self.agent_unit_types),
            enemy_unit_types=self.spec.enemy_units(),
            unit_type_bits=self.spec.unit_type_bits,
            ally_type_order=list(self.spec.ally_type_order),
            enemy_type_order=list(self.spec.enemy_type_order),
            episode_limit=self.episode_limit,
            kernel=self.kernel,
        )
        return info

    def get_stats(self) -> dict:
        """SMAC's ``get_stats()``: battles won / played / drawn (= timeouts) and the win rate."""
        won, games, timeouts = (int(v) for v in self._stat_counts.tolist())
        s = dict(battles_won=won, battles_game=games, battles_draw=timeouts, timeouts=timeouts)
        s["win_rate"] = s["battles_won"] / s["battles_game"] if s["battles_game"] else 0.0
        return s

    # ------------------------------------------------------------------ snapshots
    def state_dict(self) -> dict:
        """A copy of everything the next ``reset()`` / ``step()`` depends on, for checkpoints.

        The simulator's randomness is counter-based (each env's ``env_seed`` and ``episode_count``,
        plus the per-unit cooldown-jitter state), so restoring this dict into a simulator built with
        the same map, ``num_envs`` and options continues every env bit for bit.

        Returns:
            ``{"map_name": str, "num_envs": int, "world": {field: tensor}}`` (the ``WorldState``
            fields, ``[B, ...]``, CPU copies) plus ``avail_actions [B, N, n_actions]`` bool,
            ``stat_counts [3]`` int64 (won, games, timeouts), ``seeded`` and ``needs_reset`` (bools),
            ``options`` (the options that change the game: SMAC's observation / reward options,
            ``lenient_actions``, ``loops_per_tick``, ``spawn_jitter`` and SMACv2's ``conic_fov``,
            ``use_unit_ranges``, ``obs_own_pos``, ``min_attack_range``; plain Python values);
            SMACv2 scenarios add ``scenario_pins`` (``pin_scenario``'s compositions and start points,
            which the next resets draw from: ``mask [B]``, ``kind [B, U]``, ``pos [B, U, 2]``, ``has_pos [B]``).
        """
        out = {
            "map_name": self.map_name,
            "num_envs": self.num_envs,
            "world": {n: getattr(self.st, n).detach().cpu().clone() for n in _STATE_FIELDS},
            "avail_actions": self._avail.detach().cpu().clone(),
            "stat_counts": self._stat_counts.detach().cpu().clone(),
            "seeded": bool(self._seeded),
            "needs_reset": bool(self._needs_reset),
            "options": dict(self._snapshot_options),
        }
        if self.scenario is not None:
            out["scenario_pins"] = {k: v.detach().cpu().clone() for k, v in self._pin_tensors().items()}
        return out

    def _pin_tensors(self) -> dict[str, torch.Tensor]:
        # the same tensor objects the compiled reset kernel reads (kernels.scenario): restored in place
        return {"mask": self._pin_mask, "kind": self._pin_kind, "pos": self._pin_pos, "has_pos": self._pin_has_pos}

    def load_state_dict(self, state: dict) -> None:
        """Restore a :meth:`state_dict` (tensors are copied to this simulator's device).

        A scenario snapshot without ``scenario_pins`` (taken before they were saved) leaves this
        simulator's pins as they are; a snapshot without ``options`` (taken before they were saved)
        is not checked for them. Nothing is changed when it raises.

        Raises:
            TypeError: ``state`` is not a mapping (a ``state_dict()``).
            ValueError: the snapshot is of another map or number of envs, was taken with other
                options, misses a field, a field's shape or dtype differs (the message names it,
                with both), or a float field holds NaN or infinity.
        """
        if not isinstance(state, Mapping):
            raise TypeError(f"env snapshot must be a dict from SMACSim.state_dict(), got {type(state).__name__} {state!r}")
        for key, mine in (("map_name", self.map_name), ("num_envs", self.num_envs)):
            if state.get(key) != mine:
                raise ValueError(f"env snapshot has {key}={state.get(key)!r}; this simulator has {key}={mine!r}")
        if "options" in state:
            theirs = state["options"]
            if not isinstance(theirs, Mapping):
                raise ValueError(f"env snapshot options must be a dict, got {theirs!r}")
            diff = {k: (theirs.get(k), v) for k, v in self._snapshot_options.items() if theirs.get(k) != v}
            diff.update({k: (v, None) for k, v in theirs.items() if k not in self._snapshot_options})
            if diff:
                k, (got, mine) = sorted(diff.items())[0]
                raise ValueError(
                    f"env snapshot was taken with {k}={got!r}; this simulator has {k}={mine!r} "
                    f"(a snapshot loads into a simulator built with the same options; differing: {sorted(diff)})"
                )
        missing = [k for k in ("avail_actions", "stat_counts", "seeded", "needs_reset") if k not in state]
        if missing:
            raise ValueError(f"env snapshot misses the key(s) {missing}")
        world = state.get("world", {})
        if not isinstance(world, Mapping):
            raise ValueError(f"env snapshot world must be a dict of tensors, got {type(world).__name__}")
        world = dict(world)
        if self.scenario is None:  # snapshots from before the SMACv2 fields: they are unused on v1 maps
            for n in _V2_FIELDS:
                world.setdefault(n, getattr(self.st, n).detach().cpu())
        missing = [n for n in _STATE_FIELDS if n not in world]
        if missing:
            raise ValueError(f"env snapshot misses the world field(s) {missing}")
        for n in _STATE_FIELDS:
            mine = getattr(self.st, n)
            if not isinstance(world[n], torch.Tensor):
                raise ValueError(f"env snapshot field {n!r} is {type(world[n]).__name__}; expected a {mine.dtype} tensor")
            if tuple(world[n].shape) != tuple(mine.shape) or world[n].dtype != mine.dtype:
                raise ValueError(
                    f"env snapshot field {n!r} is {world[n].dtype} {tuple(world[n].shape)}; expected "
                    f"{mine.dtype} {tuple(mine.shape)}"
                )
            if world[n].is_floating_point() and not bool(torch.isfinite(world[n]).all()):
                bad = world[n][~torch.isfinite(world[n])][0].item()
                raise ValueError(f"env snapshot field {n!r} holds {bad}; expected finite values")
        for key, mine in (("avail_actions", self._avail), ("stat_counts", self._stat_counts)):
            v = state[key]
            if not isinstance(v, torch.Tensor) or tuple(v.shape) != tuple(mine.shape) or v.dtype != mine.dtype:
                got = f"{v.dtype} {tuple(v.shape)}" if isinstance(v, torch.Tensor) else repr(v)
                raise ValueError(f"env snapshot {key} is {got}; expected {mine.dtype} {tuple(mine.shape)}")
        for key in ("seeded", "needs_reset"):
            if not isinstance(state[key], (bool, np.bool_)):
                raise ValueError(f"env snapshot {key} must be a bool, got {state[key]!r}")
        pins = state.get("scenario_pins")
        if pins is not None:
            if self.scenario is None:
                raise ValueError(f"env snapshot has scenario_pins, but {self.map_name!r} is a SMAC v1 map")
            for k, mine in self._pin_tensors().items():
                if k not in pins or tuple(pins[k].shape) != tuple(mine.shape) or pins[k].dtype != mine.dtype:
                    got = None if k not in pins else f"{pins[k].dtype} {tuple(pins[k].shape)}"
                    raise ValueError(f"env snapshot scenario_pins[{k!r}] is {got}; expected {mine.dtype} {tuple(mine.shape)}")
        self.st = WorldState(**{n: world[n].to(self.device).clone() for n in _STATE_FIELDS})
        self._avail = state["avail_actions"].to(self.device).clone()
        self._stat_counts = state["stat_counts"].to(self.device).clone()
        self._seeded = bool(state["seeded"])
        self._needs_reset = bool(state["needs_reset"])
        if pins is not None:
            for k, mine in self._pin_tensors().items():
                mine.copy_(pins[k].to(self.device))
        self._refresh_kinds()

    def render_data(self, env_index: int = 0) -> dict:
        """NumPy copies of what a renderer draws for env ``env_index`` (positions, bars, orders).

        Raises:
            TypeError, ValueError: ``env_index`` is not an int in ``[0, num_envs)``.
        """
        st, t, b = self.st, self.table, self._check_env_index(env_index)
        return dict(
            pos=st.pos[b].cpu().numpy().copy(),  # copies: the numba kernel updates the state in place
            radius=(t.radius if t.radius.dim() == 1 else t.radius[b]).cpu().numpy().copy(),
            health=st.health[b].cpu().numpy().copy(),
            max_health=(t.max_health if t.max_health.dim() == 1 else t.max_health[b]).cpu().numpy().copy(),
            shield=st.shield[b].cpu().numpy().copy(),
            max_shield=(t.max_shield if t.max_shield.dim() == 1 else t.max_shield[b]).cpu().numpy().copy(),
            alive=st.alive[b].cpu().numpy().copy(),
            is_ally=t.is_ally.cpu().numpy(),
            names=list(t.names) if self.scenario is None else sum(self.unit_types(b), []),
            order_kind=st.order_kind[b].cpu().numpy().copy(),
            order_target=st.order_target[b].cpu().numpy().copy(),
            cooldown=st.cooldown[b].cpu().numpy().copy(),
            pathing=self.pathing.cpu().numpy(),
            episode_steps=int(st.episode_steps[b]),
        )

    # ------------------------------------------------------------------ scenarios
    def set_units(
        self, env_index: int, allies: Sequence[UnitPlacement | None], enemies: Sequence[UnitPlacement | None]
    ) -> dict[str, torch.Tensor]:
        """Place the units of env ``env_index`` (a scenario): positions, health, shields, cooldowns.

        The roster (unit types) is the map's (in SMACv2 scenarios ``UnitPlacement.unit`` may set a
        slot's type, else the current episode's type stays); ``allies[i]`` places agent ``i`` and ``enemies[j]``
        enemy ``j``; ``None`` or ``health=0`` removes the unit. The previous-step snapshot used by
        the reward is set to the placed values, orders are reset (enemies attack-move), and the
        fresh observation of all envs is returned (as ``reset``).

        Raises:
            TypeError: ``env_index`` not an int, or an entry neither ``UnitPlacement`` nor ``None``.
            ValueError: wrong list lengths, an env index out of range, a non-finite value, a position
                off the map or (for ground units) on an unwalkable cell, or health / shield / energy
                outside ``[0, max]`` or a negative cooldown, a ``unit`` of another race (SMACv2) or any
                ``unit`` on a v1 map other than the slot's own. Nothing is changed when it raises.
        """
        if not _is_int(env_index):
            raise TypeError(f"env_index must be an int in [0, {self.num_envs}), got {env_index!r}")
        if not 0 <= env_index < self.num_envs:
            raise ValueError(f"env_index must be in [0, {self.num_envs}), got {env_index}")
        for side, units in (("allies", allies), ("enemies", enemies)):
            if isinstance(units, (str, bytes)) or not hasattr(units, "__len__"):
                raise TypeError(f"{side} must be a sequence of UnitPlacement or None, got {units!r}")
        if len(allies) != self.n_agents or len(enemies) != self.n_enemies:
            raise ValueError(
                f"expected {self.n_agents} allies and {self.n_enemies} enemies "
                f"(None for absent units), got {len(allies)} and {len(enemies)}"
            )
        placements = list(allies) + list(enemies)
        if not self._needs_reset or self.scenario is None:
            # v1 rosters are fixed, so the checks do not depend on the episode: check before resetting
            self._check_placements(env_index, placements)
            if self._needs_reset:
                self.reset()
        else:
            # SMACv2: a slot without ``unit`` keeps the type the reset draws, so check after it and undo it
            # on a bad placement
            before = self.state_dict()
            self.reset()
            try:
                self._check_placements(env_index, placements)
            except (TypeError, ValueError):
                self.load_state_dict(before)
                raise
        kinds = [self._placement_kind(env_index, u, p) for u, p in enumerate(placements)]
        st, b = self.st, env_index
        st.clear_attacks(b)  # no attack, missile or baneling burst carries over into a scenario
        if self.scenario is not None:
            st.unit_kind[b] = torch.tensor(kinds, dtype=torch.int64, device=self.device)
            st.enemy_tag[b] = -1
            self._refresh_kinds()
        for u, p in enumerate(placements):
            if p is None:
                st.health[b, u] = 0.0
                st.shield[b, u] = 0.0
                st.alive[b, u] = False
                continue
            c = self._unit_consts(u, kinds[u])
            st.pos[b, u] = torch.tensor([p.x, p.y], dtype=torch.float32)
            st.health[b, u] = c["health"] if p.health is None else p.health
            st.shield[b, u] = c["shield"] if p.shield is None else p.shield
            st.energy[b, u] = c["energy_start"] if p.energy is None else p.energy
            st.cooldown[b, u] = p.cooldown
            st.alive[b, u] = bool(st.health[b, u] > 0)
            if u >= self.n_agents:
                if self.scenario is not None:
                    st.order_kind[b, u] = ORDER_NONE
                    st.order_target[b, u] = -1
                    st.order_point[b, u] = st.pos[b, u]
                else:
                    st.order_point[b, u] = st.attack_point[b] if self.spec.attack_point is not None else st.pos[b, u]
            else:
                st.order_kind[b, u] = ORDER_NONE
                st.order_target[b, u] = -1
        st.prev_health[b], st.prev_shield[b], st.prev_alive[b] = (
            st.health[b].clone(),
            st.shield[b].clone(),
            st.alive[b].clone(),
        )
        return self._observe()

    def remove_allies(self, mask) -> dict[str, torch.Tensor]:
        """Remove allies from envs whose episodes have just started: team-size randomisation in training.

        Agent ``i`` of env ``b`` is removed where ``mask[b, i]`` is set: it starts the episode dead
        (health and shields 0), as an absent unit of ``set_units``. Its slot stays (SMAC's layouts
        do not change): its observation and state features are zero, only its no-op is available,
        and its death is no one's (the reward's death tracker starts it dead). In SMACv2 scenarios the
        envs' enemy tags are set afresh, so their first observation is that of a battle that started
        without the removed allies. Used by the training
        scripts' ``--ally-dropout`` so that a policy meets battles in which it is outnumbered
        (e.g. 7 marines against 8) before zero-shot play on maps such as ``5m_vs_6m``.

        Args:
            mask: ``[B, n_agents]`` bool tensor (any device); rows of envs that are not at step 0
                of an episode must be all False.

        Returns:
            The fresh observation of every env, as ``reset``: ``{"obs": [B, N, obs_size] float32,
            "state": [B, state_size] float32, "avail_actions": [B, N, n_actions] bool}`` (plus
            ``unit_kind`` in SMACv2 scenarios).

        Raises:
            RuntimeError: before ``reset`` (or when a reset is due).
            TypeError: ``mask`` not a bool tensor.
            ValueError: ``mask`` of the wrong shape; a removal in an env past its episode's first
                step (``episode_steps > 0``) or in an env with an ally already dead; a mask that
                removes every ally of an env. Nothing is changed when it raises.
        """
        if self._needs_reset:
            raise RuntimeError("call reset() before remove_allies() (and after an episode ends when autoreset=False)")
        B, N = self.num_envs, self.n_agents
        if not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool:
            raise TypeError(f"mask must be a bool tensor of shape ({B}, {N}), got {mask!r}")
        if tuple(mask.shape) != (B, N):
            raise ValueError(f"mask must have shape (num_envs={B}, n_agents={N}), got {tuple(mask.shape)}")
        st = self.st
        mask = mask.to(self.device)
        rows = mask.any(1)
        late = rows & (st.episode_steps > 0)
        if bool(late.any()):
            raise ValueError(
                f"remove_allies: envs {late.nonzero().flatten().tolist()} are past the first step of their episodes "
                f"(episode_steps {st.episode_steps[late].tolist()}); expected removals only at step 0"
            )
        dead = rows & ~st.alive[:, :N].all(1)
        if bool(dead.any()):
            raise ValueError(
                f"remove_allies: envs {dead.nonzero().flatten().tolist()} already have dead allies; expected "
                "full teams at step 0 (remove allies once per episode)"
            )
        empty = rows & mask.all(1)
        if bool(empty.any()):
            raise ValueError(
                f"remove_allies: the mask removes every ally of envs {empty.nonzero().flatten().tolist()}; "
                "expected at least one ally left in each env"
            )
        gone = torch.zeros_like(st.alive)
        gone[:, :N] = mask
        for name in ("health", "shield", "prev_health", "prev_shield"):
            t = getattr(st, name)
            t.masked_fill_(gone, 0.0)
        st.alive.masked_fill_(gone, False)
        st.prev_alive.masked_fill_(gone, False)
        if self.scenario is not None:
            # SMACv2: the reset's observation tagged the enemies in sight (``enemy_tag``); tag them afresh, as at
            # a reset without the removed allies (``set_units``), or the enemies tagged by the agents that remain
            # would count as observed by every agent in the envs' first observation
            st.enemy_tag[rows] = -1
        return self._observe()

    def _check_placements(self, b: int, placements: list) -> None:
        """Every check of ``set_units`` on env ``b``'s placements (raises; changes nothing)."""
        kinds = [self._placement_kind(b, u, p) for u, p in enumerate(placements)]
        for u, p in enumerate(placements):
            self._check_placement(u, p, kinds[u])

    def _routing(self, terrain: str) -> dict:
        """Shortest-path tables for ``Dynamics`` on maps where straight lines can fail (see ``maps.needs_routing``)."""
        if not needs_routing(terrain):
            return {}
        return dict(
            ground_dist=torch.as_tensor(ground_distances(terrain).copy(), device=self.device),
            ground_edges=torch.as_tensor(ground_edges(terrain), device=self.device),
        )

    def _placement_kind(self, b: int, u: int, p) -> int:
        """The kind index unit ``u`` of env ``b`` will have (SMACv2: ``p.unit`` or the current one; v1: 0)."""
        side, idx = ("allies", u) if u < self.n_agents else ("enemies", u - self.n_agents)
        if p is not None and not isinstance(p, UnitPlacement):
            if self.scenario is None:
                now = self.table.names[u]
            else:
                now = self.scenario.kinds[int(self.st.unit_kind[b, u])]
            raise TypeError(f"{side}[{idx}] ({now}) must be a UnitPlacement or None, got {p!r}")
        unit = None if p is None else p.unit
        if self.scenario is None:
            if unit is not None and unit != self.table.names[u]:
                raise ValueError(
                    f"{side}[{idx}]: unit={unit!r}, but {self.map_name} has a fixed roster ({self.table.names[u]} "
                    f"in this slot); unit types can be chosen only in SMACv2 scenarios"
                )
            return 0
        if unit is None:
            return int(self.st.unit_kind[b, u])
        if unit not in self.scenario.kinds:
            raise ValueError(
                f"{side}[{idx}]: unit {unit!r} is not a {self.scenario.race} unit; expected one of {list(self.scenario.kinds)}"
            )
        return self.scenario.kinds.index(unit)

    def _unit_consts(self, u: int, kind: int) -> dict:
        """Name, max health / shield / energy and starting energy of unit slot ``u`` holding ``kind``."""
        t = self.table
        if self.scenario is not None:
            t = t.kinds
            u = kind if u < self.n_agents else kind + len(t.names) // 2
        return {
            "name": t.names[u],
            "health": float(t.max_health[u]),
            "shield": float(t.max_shield[u]),
            "energy": float(t.energy_max[u]),
            "energy_start": float(t.energy_start[u]),
        }

    def _check_placement(self, u: int, p, kind: int = 0) -> None:
        """Validate the placement of unit ``u`` (see ``set_units``)."""
        if p is None:
            return
        t = self.table
        c = self._unit_consts(u, kind)
        side, idx = ("allies", u) if u < self.n_agents else ("enemies", u - self.n_agents)
        who = f"{side}[{idx}] ({c['name']})"
        if not isinstance(p, UnitPlacement):
            raise TypeError(f"{who} must be a UnitPlacement or None, got {p!r}")
        limits = {"health": c["health"], "shield": c["shield"], "energy": c["energy"]}
        for name in ("x", "y", "health", "shield", "energy", "cooldown"):
            v = getattr(p, name)
            if v is None and name in limits:
                continue
            if not _is_real(v) or not math.isfinite(float(v)):
                raise ValueError(f"{who}: {name} must be a finite number, got {v!r}")
            if name in limits and not 0.0 <= v <= limits[name]:
                raise ValueError(f"{who}: {name} must be in [0, {limits[name]:g}], got {v!r}")
        if p.cooldown < 0:
            raise ValueError(f"{who}: cooldown must be >= 0 game loops, got {p.cooldown!r}")
        size = self.pathing.shape[0]
        why = off_map(p.x, p.y, size)
        if why:
            raise ValueError(f"{who}: position {why}")
        if self.scenario is not None:
            return  # the 32x32_flat map is pathable everywhere
        pt = torch.tensor([p.x, p.y], dtype=torch.float32, device=self.device).expand(1, len(t.names), 2)
        if not bool(self.dynamics.can_stand(pt, pt)[0, u]):
            raise ValueError(
                f"{who}: position ({p.x}, {p.y}) is on a cell of {self.map_name} that a {t.names[u]} cannot stand on"
            )


def _unsupported(name: str, value, what: str):
    raise ValueError(f"option {name}={value!r}: the simulator supports {what}")


def _play_for_compile(config: dict) -> int:
    """Compile every numba kernel of ``config``'s family by playing a private numba-path simulator of
    that configuration through an auto-reset (the background job of ``runtime.warmup``, which is given
    this function so that it imports neither the simulator nor the policies); returns the steps played."""
    from sc2_envs.policies import random_actions
    from sc2_envs.sim.runtime.warmup import play_until_reset

    return play_until_reset(SMACSim(**config, num_threads=None, kernel="numba"), random_actions)


def make_batched(
    map_name: str | MapSpec = "2s3z", num_envs: int = 1, device: str | torch.device = "cpu", seed: int | None = None, **options
) -> SMACSim:
    """The native batched simulator (the fast path for training); see ``SMACSim`` for arguments."""
    return SMACSim(map_name, num_envs=num_envs, device=device, seed=seed, **options)


_SIM_KEYWORDS = tuple(p for p in inspect.signature(SMACSim.__init__).parameters if p not in ("self", "map_name", "options"))
"""``SMACSim``'s own keywords besides the SMAC options (named in the unknown-option error)."""
