"""Old home of ``sc2_envs.sim.numba.features_v2``: importing this name gives that module itself (its state included)."""

import sys

import sc2_envs.sim.numba.features_v2

sys.modules[__name__] = sc2_envs.sim.numba.features_v2
