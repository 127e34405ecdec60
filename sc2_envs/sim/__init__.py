"""The embedded, batched SMAC simulator (PyTorch, CPU or CUDA).

``rules/`` holds the torch reference, one module per rule family; ``numba/`` its compiled mirror
(same module and function names); ``runtime/`` the machinery around the compiled kernels; ``env.py``
the facade behind ``make_batched``.
"""

from sc2_envs.sim.env import SMACSim, UnitPlacement, make_batched

__all__ = ["SMACSim", "UnitPlacement", "make_batched"]
