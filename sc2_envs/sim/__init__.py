"""The embedded, batched SMAC simulator (PyTorch, CPU or CUDA).

``rules/`` holds the torch reference, one module per rule family; ``numba/`` its compiled mirror
(same module and function names); ``runtime/`` the machinery around the compiled kernels; ``env.py``
the facade behind ``make_batched``.
"""

import sys

from sc2_envs.sim.env import SMACSim, UnitPlacement, make_batched
from sc2_envs.sim.rules import dynamics, enemy_ai, features, features_v2
from sc2_envs.sim.runtime import first_use, threads

# Old module names of moved modules: ``sc2_envs.sim.features`` etc. are the new modules themselves.
for _module in (dynamics, enemy_ai, features, features_v2, first_use, threads):
    sys.modules.setdefault(f"{__name__}.{_module.__name__.rsplit('.', 1)[1]}", _module)
del _module

__all__ = ["SMACSim", "UnitPlacement", "make_batched"]
