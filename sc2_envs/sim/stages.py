"""The stages of one env step on the torch path: orders, the game loops, observe (``torch.compile``-able).

``StagesMixin`` holds the ``SMACSim`` methods that run one stage each on ``st`` through the kernel in
effect (the numba stage kernels when built, else the torch rules), ``_core`` (a whole env step's
stages) and ``advance_loops`` (game loops with the units' orders kept, the SC2-API server's ``step``).
With ``compile=True`` each stage is one ``torch.compile`` graph of a flat tuple of tensors.
"""

from __future__ import annotations

import torch

from sc2_envs.sim.options import is_int
from sc2_envs.sim.state import WORLD_STATE_FIELDS, WorldState
from sc2_envs.units import LOOPS_PER_STEP


class StagesMixin:
    """``SMACSim``'s step stages (see the module docstring)."""

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
        if not is_int(n) or n < 0:
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
                return tuple(getattr(st, n) for n in WORLD_STATE_FIELDS), res

            self._compiled[name] = torch.compile(flat, dynamic=False)
        fields_out, res = self._compiled[name](arg, *(getattr(self.st, n) for n in WORLD_STATE_FIELDS))
        self.st = WorldState(*fields_out)
        return res
