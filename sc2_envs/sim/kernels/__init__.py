"""Old home of the simulator's compiled kernels, kept so that old imports work.

The kernels are now ``sim.numba`` (``tick`` -> ``numba.dynamics`` and ``numba.actions``, ``observe`` ->
``numba.features``, ``observe_v2`` -> ``numba.features_v2``, ``scenario`` -> ``numba.reset``, ``step`` ->
``numba.step``) and their runtime is ``sim.runtime`` (``cache``, ``chunks``, ``schedule``, ``warmup``);
each old module name here gives the new module itself.
"""

from __future__ import annotations

from sc2_envs.sim.runtime import KERNELS, keeping_torch_threads, limit_numba_threads, numba_available

__all__ = ["KERNELS", "keeping_torch_threads", "limit_numba_threads", "numba_available"]
