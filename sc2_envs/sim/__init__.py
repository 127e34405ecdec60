"""The embedded, batched SMAC simulator (PyTorch, CPU or CUDA)."""

from sc2_envs.sim.env import SMACSim, UnitPlacement, make_batched

__all__ = ["SMACSim", "UnitPlacement", "make_batched"]
