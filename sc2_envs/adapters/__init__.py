"""Adapters that plug the SMAC battles into other codebases and RL libraries.

* ``smac_compat.StarCraft2Env``: SMAC's ``StarCraft2Env`` API (pymarl / EPyMARL) on the simulator.
* ``smacv2_compat.StarCraftCapabilityEnvWrapper``: SMACv2's wrapper API (``capability_config``).
* ``pettingzoo_views``: ``FlatObservation`` (Box obs, mask in infos; SuperSuit / SB3) and
  ``RLlibMaskedObservation`` (``{"observations", "action_mask"}``; RLlib's masking module).
* ``rllib``: ``make_rllib_env`` and ``policy_ids_and_mapping`` (imports Ray lazily).
* ``sb3``: ``make_sb3_vec_env`` / ``SB3MaskedVecEnv`` (SuperSuit -> Stable-Baselines3 with masks and
  time-limit truncation; needs ``supersuit`` and ``stable-baselines3``).
* ``torchrl``: ``make_torchrl_env`` (``PettingZooWrapper`` with SMAC semantics; needs ``torchrl``).
* ``benchmarl``: ``SC2SmacTask`` (one BenchMARL task per map, on ``make_torchrl_env``; needs ``benchmarl``).

Optional libraries are imported only by the modules that need them.
"""

from sc2_envs.adapters.pettingzoo_views import FlatObservation, RLlibMaskedObservation
from sc2_envs.adapters.smac_compat import StarCraft2Env
from sc2_envs.adapters.smacv2_compat import StarCraftCapabilityEnvWrapper

__all__ = ["FlatObservation", "RLlibMaskedObservation", "StarCraft2Env", "StarCraftCapabilityEnvWrapper"]
