"""The simulator's execution path: the torch reference or the compiled numba mirror, and its first-use compile.

``ExecutionMixin`` holds the ``SMACSim`` methods that choose the path (``kernel="auto" | "numba" | "torch"``),
build the numba kernels from the simulator's tables, and switch to them once a background compile
(``runtime.warmup``) has ended. The compile job is given a function that builds and plays its own
simulator (:func:`play_for_compile`), so the runtime never imports the simulator.
"""

from __future__ import annotations

from sc2_envs.sim.runtime.threads import apply_num_threads
from sc2_envs.units import LOOPS_PER_STEP


def play_for_compile(sim_class, config: dict) -> int:
    """Compile every numba kernel of ``config``'s family by playing a private numba-path ``sim_class(**config)``
    through an auto-reset (``runtime.warmup.play_until_reset``); returns the steps played."""
    from sc2_envs.policies import random_actions
    from sc2_envs.sim.runtime.warmup import play_until_reset

    return play_until_reset(sim_class(**config, num_threads=None, kernel="numba"), random_actions)


class ExecutionMixin:
    """``SMACSim``'s choice of execution path and its numba kernels (see the module docstring)."""

    def _choose_kernel(self, kernel: str, num_threads: int | None) -> None:
        """Set ``self.kernel`` from the ``kernel`` option, torch's thread count, and (``"auto"`` on first use)
        the background compile of the numba kernels, then build them."""
        self.kernel = self._resolve_kernel(kernel)
        self.num_threads = apply_num_threads(num_threads, self.num_envs, self.device, self.kernel)
        self._awaiting = None  # the family (SMACv2 or not) whose numba kernels compile in the background
        if kernel == "auto" and self.kernel == "numba":
            from sc2_envs.sim.runtime import warmup

            if warmup.enabled() and not warmup.family_ready(self.scenario is not None):
                self.kernel, self._awaiting = "torch", self.scenario is not None
                self._compile_job()
        self._build_kernels()

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

    def _compile_job(self):
        """This process's background compile of the numba kernels this simulator waits for (``sim.runtime.warmup``)."""
        from sc2_envs.sim.runtime import warmup

        config = self._warm_config  # not self: the thread must not keep this simulator alive
        sim_class = type(self)
        return warmup.job(self._awaiting, lambda: play_for_compile(sim_class, config))

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
