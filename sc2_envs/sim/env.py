"""``SMACSim``: the batched, SMAC-compatible simulator (tensors in, tensors out).

This is the fast path for training: ``B`` independent environments stepped together on CPU or
CUDA, with SMAC v1's observation, state, available-action and reward layouts (``features.py``),
SC2-style unit dynamics (``dynamics.py``) and the built-in enemy behaviour (``enemy_ai.py``).
The PettingZoo and Gymnasium wrappers are thin adapters over it with ``num_envs=1``.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence

import numpy as np
import torch

from sc2_envs import smacv2 as v2
from sc2_envs.maps import (
    MapSpec,
    terrain_grids,
)
from sc2_envs.sim import rng
from sc2_envs.sim.editing import EditingMixin, UnitPlacement
from sc2_envs.sim.execution import ExecutionMixin
from sc2_envs.sim.options import (
    FEATURE_OPTIONS,
    REWARD_OPTION_RANGE,
    REWARD_OPTIONS,
    check_keywords,
    check_options,
    check_unknown_options,
    is_int,
    pop_scenario_options,
    resolve_map,
    snapshot_options,
)
from sc2_envs.sim.rules.actions import MOVE_DIRS, OUT_OF_RANGE, apply_actions, check_actions, coerce_actions
from sc2_envs.sim.rules.dynamics import Dynamics
from sc2_envs.sim.rules.enemy_ai import EnemyAI
from sc2_envs.sim.rules.features import N_ACTIONS_NO_ATTACK, FeatureConfig, RewardConfig, SMACFeatures
from sc2_envs.sim.rules.features_v2 import SMACv2Features
from sc2_envs.sim.rules.reset import fresh_scenario_state, fresh_state
from sc2_envs.sim.runtime.first_use import first_call
from sc2_envs.sim.runtime.threads import check_num_threads
from sc2_envs.sim.snapshot import SnapshotMixin
from sc2_envs.sim.stages import StagesMixin
from sc2_envs.sim.state import (
    UnitTable,
    WorldState,
)
from sc2_envs.validation import as_device

_V2_FIELDS = ("unit_kind", "fov_dir", "enemy_tag", "max_reward")  # WorldState fields only SMACv2 scenarios use


class SMACSim(StagesMixin, ExecutionMixin, SnapshotMixin, EditingMixin):
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
        self.scenario, self.spec = resolve_map(map_name)
        pin = options.pop("scenario", None)
        if self.scenario is not None:
            v2_opts, self.scenario = pop_scenario_options(options, self.scenario)
            self.spec = self.scenario
        else:
            v2_opts = {}
            if pin is not None:
                raise ValueError(
                    f"option scenario= (pinned composition) is for SMACv2 scenarios; {self.spec.name!r} is a SMAC v1 map"
                )
        check_keywords(autoreset, lenient_actions, compile, loops_per_tick, spawn_jitter, num_envs)
        self.spawn_jitter = float(spawn_jitter)
        num_envs = int(num_envs)
        # SMAC's continuing_episode only adds info["episode_limit"], which every step here reports anyway.
        continuing_episode = options.pop("continuing_episode", False)
        if not isinstance(continuing_episode, (bool, np.bool_)):
            raise TypeError(f"option continuing_episode must be a bool, got {continuing_episode!r}")
        check_unknown_options(options, self.scenario is not None, _SIM_KEYWORDS)
        check_options(options)
        self.map_name = self.spec.name
        self.num_envs = num_envs
        self.device = as_device(device)
        check_num_threads(num_threads)  # applied once the kernel is known (the automatic rule is the torch path's)
        self._explicit_threads = num_threads is not None
        self.autoreset = autoreset
        self.lenient_actions = lenient_actions
        self.n_agents = self.spec.n_agents
        self.n_enemies = self.spec.n_enemies
        self.episode_limit = self.spec.episode_limit
        fcfg = FeatureConfig(**{k: v for k, v in options.items() if k in FEATURE_OPTIONS})
        rcfg = RewardConfig(**{k: v for k, v in options.items() if k in REWARD_OPTIONS})
        # what state_dict() records and load_state_dict() compares: the options that change the game
        self._snapshot_options = snapshot_options(
            fcfg, rcfg, lenient_actions, loops_per_tick, spawn_jitter, v2_opts, self.scenario
        )
        self._build_rules(num_envs, loops_per_tick, fcfg, rcfg, v2_opts)
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
        self._choose_kernel(kernel, num_threads)
        self._stat_counts = torch.zeros(3, dtype=torch.int64, device=self.device)
        if pin is not None:
            keys = ("allies", "enemies", "ally_positions", "enemy_positions", "env_index")
            if not isinstance(pin, dict):
                raise TypeError(f"option scenario must be a dict of pin_scenario's arguments {list(keys)}, got {pin!r}")
            unknown = sorted(set(pin) - set(keys))
            if unknown or not {"allies", "enemies"} <= set(pin):
                raise ValueError(
                    f"option scenario={pin!r}: expected the keys allies and enemies (and optionally ally_positions, "
                    f"enemy_positions and env_index){f'; unknown: {unknown}' if unknown else ''}"
                )
            self.pin_scenario(**pin)

    def _build_rules(self, num_envs: int, loops_per_tick: int, fcfg: FeatureConfig, rcfg: RewardConfig, v2_opts: dict):
        """The roster's unit table, the terrain, and the torch rules on them (``Dynamics``, ``EnemyAI``, the
        features; SMACv2: the scenario sampler and the pinned-composition tensors)."""
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

    def _env_mask(self, env_index) -> torch.Tensor:
        if env_index is None:
            return torch.ones(self.num_envs, dtype=torch.bool, device=self.device)
        m = torch.zeros(self.num_envs, dtype=torch.bool, device=self.device)
        m[self._check_env_index(env_index, none_means_all=True)] = True
        return m

    def _check_env_index(self, env_index, none_means_all: bool = False) -> int:
        """``env_index`` as an int, or TypeError / ValueError naming it (no negative indices: -1 would
        silently be the last env). ``none_means_all``: the caller also takes None (the message says so)."""
        if not is_int(env_index):
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
                self._auto_reset(done, out)
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
            if self.autoreset:
                self._auto_reset(arrays[5] | arrays[6], out)  # terminated | truncated
            else:
                self._needs_reset = True
        if self.scenario is not None:
            out["unit_kind"] = self.st.unit_kind[:, :N].clone()
        return out

    def _auto_reset(self, done: torch.Tensor | np.ndarray, out: dict[str, torch.Tensor]) -> None:
        """New episodes for the envs ``done`` (``[B]`` bool, a tensor on the torch path, an array on the
        numba path), observed into those rows of this step's ``obs``, ``state`` and ``avail_actions``
        (fresh tensors; the ``final_*`` copies keep the ended episodes). Only the ended envs are observed
        (a few per step at large B), not the whole batch.

        The torch path runs ``st.copy_envs_from(_fresh_state(), done)`` and the features of those envs;
        the numba path the same rules compiled (``numba.reset``, ``numba.features`` / ``features_v2``),
        bit for bit, in place on the state (the kernels' views stay valid).
        """
        kernel = self._step_kernel
        if kernel is not None:
            idx = done.nonzero()[0]
            if self.scenario is not None:
                self._scenario_reset.reset_envs(self.st, idx)
                self._kinds_stale = True  # the unit table follows when next read (``table``)
            else:
                kernel.reset_envs(self.st, done, self.spawn_jitter)
            self._observe_kernel.observe(self.st, idx, out)
            kernel._avail_np[idx] = out["avail_actions"].numpy()[idx]
            return
        self.st.copy_envs_from(self._fresh_state(), done)
        self._refresh_kinds()
        idx = done.nonzero().flatten()
        sub = self.st.select(idx)
        avail = self.features.avail_actions(sub)
        out["obs"] = out["obs"].index_copy(0, idx, self.features.obs(sub, avail))
        out["state"] = out["state"].index_copy(0, idx, self.features.state(sub))
        out["avail_actions"] = out["avail_actions"].index_copy(0, idx, avail)
        if self.scenario is not None:  # the enemy tags the new episodes' observation set
            self.st.enemy_tag = self.st.enemy_tag.index_copy(0, idx, sub.enemy_tag)

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


def make_batched(
    map_name: str | MapSpec = "2s3z", num_envs: int = 1, device: str | torch.device = "cpu", seed: int | None = None, **options
) -> SMACSim:
    """The native batched simulator (the fast path for training); see ``SMACSim`` for arguments."""
    return SMACSim(map_name, num_envs=num_envs, device=device, seed=seed, **options)


_SIM_KEYWORDS = tuple(p for p in inspect.signature(SMACSim.__init__).parameters if p not in ("self", "map_name", "options"))
"""``SMACSim``'s own keywords besides the SMAC options (named in the unknown-option error)."""

__all__ = ["REWARD_OPTION_RANGE", "SMACSim", "UnitPlacement", "make_batched"]
