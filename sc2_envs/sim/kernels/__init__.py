"""Compiled CPU kernels of the simulator's stages (Numba), bit-equal to the torch reference.

The runtime around them (cache, chunks, schedule, warm-up, threads) is ``sim.runtime``; its names
``KERNELS``, ``numba_available``, ``keeping_torch_threads`` and ``limit_numba_threads`` are kept here
as aliases of their old home.
"""

from __future__ import annotations

# importing the runtime installs the digest-stamped cache locators before any kernel module is decorated
from sc2_envs.sim.runtime import KERNELS, keeping_torch_threads, limit_numba_threads, numba_available

__all__ = ["KERNELS", "keeping_torch_threads", "limit_numba_threads", "numba_available"]
