"""sc2-envs: StarCraft II multi-agent RL environments with an embedded SMAC simulator.

Public surface (stable names):
    * ``make_batched(map_name, num_envs, device, seed, **options)``: the native batched simulator,
      tensors in and out (the fast path for training).
    * ``parallel_env(map_name, backend="sim", **options)``: a PettingZoo ``ParallelEnv``;
      ``env(...)`` / ``raw_env(...)``: the AEC version, with and without PettingZoo's wrappers.
    * Gymnasium ids ``sc2_envs/<map>-v0`` (joint action) and ``sc2_envs/FullGame-v0``, registered
      on import.
    * ``list_maps()``: the SMAC v1 maps the simulator supports; ``list_maps("smacv2")`` /
      ``list_scenarios()``: the SMACv2 scenarios (``protoss_5_vs_5`` ... ``zerg_20_vs_23``), usable
      wherever a map name is (``make_batched``, ``parallel_env``, Gymnasium ids, the adapters).
    * ``eval_seed(seed, *index)``: the seed of evaluation envs, whose battles never repeat a
      training env's (``sim.rng``).
"""

from sc2_envs.full_game import register_full_game
from sc2_envs.maps import get_map, list_maps
from sc2_envs.sim import SMACSim, UnitPlacement, make_batched
from sc2_envs.sim.rng import eval_seed
from sc2_envs.smacv2 import list_scenarios
from sc2_envs.wrappers.gymnasium import register_envs
from sc2_envs.wrappers.pettingzoo import env, parallel_env, raw_env

register_envs()
register_full_game()

__all__ = [
    "SMACSim",
    "UnitPlacement",
    "env",
    "eval_seed",
    "get_map",
    "list_maps",
    "list_scenarios",
    "make_batched",
    "parallel_env",
    "raw_env",
]
__version__ = "0.1.0"
