"""Plumbing shared by the single-env wrappers: building a B=1 backend and converting its outputs.

Both wrappers talk to one object with the batched contract of ``sc2_envs.make_batched`` at
``num_envs=1`` (the embedded simulator, or the real-SC2 backend of
``sc2_envs.backends.smac_sc2``), so every rule of the game lives behind that object.
"""

from __future__ import annotations

import numpy as np
import torch

BACKENDS = ("sim", "sc2")


def make_backend(map_name: str, backend: str, device, seed, lenient_actions: bool, smac_options: dict):
    """Build a B=1 batched env without auto-reset.

    Args:
        map_name: SMAC map name.
        backend: ``"sim"`` (embedded batched simulator) or ``"sc2"`` (oxwhirl SMAC on real StarCraft II,
            imported lazily because it needs the ``smac`` package and the game).
        device: torch device of the backend's tensors.
        seed: seed of the first episode (``None``: nondeterministic).
        lenient_actions: replace unavailable actions by stop / no-op instead of raising ``ValueError``.
        smac_options: SMAC's keyword arguments (``obs_last_action``, ``reward_sparse``, ...).

    Raises:
        ValueError: unknown ``backend``.
    """
    if backend == "sim":
        from sc2_envs.sim.env import make_batched

        return make_batched(
            map_name=map_name,
            num_envs=1,
            device=device,
            seed=seed,
            autoreset=False,
            lenient_actions=lenient_actions,
            **smac_options,
        )
    if backend == "sc2":
        from sc2_envs.backends.smac_sc2 import make_sc2_backend

        return make_sc2_backend(
            map_name, seed=seed, device=device, autoreset=False, lenient_actions=lenient_actions, **smac_options
        )
    raise ValueError(f"unknown backend {backend!r}; expected one of {BACKENDS}")


def as_numpy(x: torch.Tensor, dtype) -> np.ndarray:
    """A fresh numpy array (never a view of the backend's buffers, which it may reuse next step)."""
    return np.array(x.detach().cpu().numpy(), dtype=dtype, copy=True)


OBS_BOUND = 1.0
"""SMAC normalises every observation feature into [-1, 1]: relative positions and distances are divided
by the sight range and only units within sight range are observed, health / shield / cooldown are
fractions, the rest are one-hot or 0/1 flags (SMAC ``get_obs_agent``)."""

COOLDOWN_JITTER_LOOPS = 2
"""SC2 lengthens each weapon cooldown by up to 2 game loops at random (-1..+2; ``sc2_envs.sim.rules.dynamics``)."""


def state_bound(agent_unit_types) -> float:
    """Bound ``b`` of the global state space ``Box(-b, b)`` for a team of these unit types.

    Every SMAC state feature lies in [-1, 1] (positions are relative to the map centre divided by the
    map size, health / shield / energy are fractions, the rest one-hot) except the allies'
    ``weapon_cooldown / unit_max_cooldown`` (SMAC ``get_state``): SMAC's hard-coded normaliser is below
    the real cooldown of some units (hydralisk: up to 13.2 + 2 loops over 10). So
    ``b = max(1, max over types of (cooldown + 2) / smac_max_cooldown)``, plus float32 rounding slack.
    """
    from sc2_envs.units import UNITS

    ratios = [
        (UNITS[t].cooldown + COOLDOWN_JITTER_LOOPS) / UNITS[t].smac_max_cooldown
        for t in set(agent_unit_types)
        if UNITS[t].smac_max_cooldown > 0
    ]
    return max([1.0, *ratios]) + 1e-3


class SimRenderMixin:
    """``render()`` and ``close()`` shared by the PettingZoo and Gymnasium views of one simulator.

    Expects ``self.sim``, ``self.render_mode``, ``self.map_name``, ``self._steps`` (env steps of the
    episode), ``self._has_reset`` (``reset`` was called), ``self._viewer`` (``None`` until a window is
    opened) and ``self.metadata["render_fps"]``.
    """

    def render(self):
        """``rgb_array``: the current top-down frame, ``(H, W, 3)`` uint8. ``human``: draw it in a window
        (without a display: off-screen, with a ``UserWarning``; ``sc2_envs.render.HumanViewer``) and
        return ``None``. Without a ``render_mode``: a warning and ``None``.

        Raises:
            RuntimeError: before the first ``reset()`` (there is no battle to draw), as ``state()``.
        """
        if self.render_mode is None:
            import gymnasium

            gymnasium.logger.warn("render() called without a render_mode; pass render_mode='rgb_array' or 'human'")
            return None
        if not self._has_reset:
            raise RuntimeError("render() called before reset(); call reset() first")
        from sc2_envs.render import HumanViewer, render_frame

        title = f"{self.map_name}  step {self._steps}/{self.sim.episode_limit}"
        frame = render_frame(self.sim.render_data(0), title=title)
        if self.render_mode == "rgb_array":
            return frame
        if self._viewer is None:
            self._viewer = HumanViewer(self.metadata["render_fps"])
        self._viewer.show(frame)
        return None

    def close(self):
        if self._viewer is not None:
            self._viewer.close()
            self._viewer = None
        close = getattr(self.sim, "close", None)
        if close is not None:
            close()
