"""Old home of ``sc2_envs.sim.runtime.schedule``: importing this name gives that module itself (its state included)."""

import sys

import sc2_envs.sim.runtime.schedule

sys.modules[__name__] = sc2_envs.sim.runtime.schedule
