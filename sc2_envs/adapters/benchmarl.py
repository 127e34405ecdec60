"""BenchMARL tasks for the SMAC battles on the embedded simulator (``SC2SmacTask.SMAC_3M`` ...).

BenchMARL (facebookresearch/BenchMARL) runs its algorithms (MAPPO, IPPO, QMIX, MASAC, ...) on TorchRL
envs described by a ``TaskClass``. ``SC2SmacClass.get_env_fun`` returns
``sc2_envs.adapters.torchrl.make_torchrl_env``: one group ``"agent"`` whose members never change (dead
agents are absorbed: zero observation, no-op-only mask; BenchMARL cannot handle a changing agent set,
BenchMARL #177), ``("agent", "action_mask")`` for its masked categorical policies, SMAC's global
state under ``"state"`` (for MAPPO / QMIX critics and mixers), and the time limit as truncation.

Use::

    from benchmarl.algorithms import MappoConfig
    from benchmarl.experiment import Experiment, ExperimentConfig
    from benchmarl.models.mlp import MlpConfig
    from sc2_envs.adapters.benchmarl import SC2SmacTask

    task = SC2SmacTask.SMAC_3M.get_task(config={})     # or {"loops_per_tick": 2, "reward_sparse": True, ...}
    Experiment(task=task, algorithm_config=MappoConfig.get_from_yaml(), model_config=MlpConfig.get_from_yaml(),
               critic_model_config=MlpConfig.get_from_yaml(), seed=0,
               config=ExperimentConfig.get_from_yaml()).run()

The task config is a dict of ``SC2ParallelEnv`` keywords (SMAC options, ``loops_per_tick``,
``spawn_jitter``); the tasks ship no YAML, so call ``get_task(config=...)`` rather than
``get_from_yaml()``. ``log_info`` reports ``collection/info/win_rate`` and
``collection/info/episode_limit_rate`` over the episodes that ended in a batch, as BenchMARL's SMACv2
task does.

Needs ``benchmarl`` (1.5.2 requires ``torchrl<0.12``; see docs/integrations.md).
"""

from __future__ import annotations

import copy
from collections.abc import Callable

import torch
from benchmarl.environments.common import Task, TaskClass
from tensordict import TensorDictBase
from torchrl.data import Composite
from torchrl.envs import EnvBase

from sc2_envs.adapters.torchrl import make_torchrl_env
from sc2_envs.maps import get_map, list_maps

__all__ = ["SC2SmacClass", "SC2SmacTask"]

_MAP_OF_MEMBER = {f"SMAC_{m.upper()}": m for m in list_maps()}


class SC2SmacClass(TaskClass):
    """BenchMARL ``TaskClass`` of one SMAC map; ``self.name`` is the ``SC2SmacTask`` member name."""

    @property
    def map_name(self) -> str:
        return _MAP_OF_MEMBER[self.name]

    def get_env_fun(self, num_envs: int, continuous_actions: bool, seed: int | None, device) -> Callable[[], EnvBase]:
        """A constructor of the TorchRL env (one battle; BenchMARL stacks ``num_envs`` of them in a SerialEnv)."""
        config = copy.deepcopy(self.config)
        map_name = self.map_name
        return lambda: make_torchrl_env(map_name, seed=seed, device=device, **config)

    def supports_continuous_actions(self) -> bool:
        return False

    def supports_discrete_actions(self) -> bool:
        return True

    def has_render(self, env: EnvBase) -> bool:
        return False

    def max_steps(self, env: EnvBase) -> int:
        """SMAC's ``episode_limit`` (env steps)."""
        return get_map(self.map_name).episode_limit

    def group_map(self, env: EnvBase) -> dict[str, list[str]]:
        return env.group_map

    def _group_keys(self, env: EnvBase, keep: str) -> Composite | None:
        spec = env.observation_spec.clone()
        for group in self.group_map(env):
            for key in list(spec[group].keys()):
                if key != keep:
                    del spec[group][key]
            if spec[group].is_empty():
                del spec[group]
        if "state" in spec:
            del spec["state"]
        return None if spec.is_empty() else spec

    def observation_spec(self, env: EnvBase) -> Composite:
        return self._group_keys(env, "observation")

    def action_mask_spec(self, env: EnvBase) -> Composite | None:
        return self._group_keys(env, "action_mask")

    def info_spec(self, env: EnvBase) -> Composite | None:
        return self._group_keys(env, "info")

    def state_spec(self, env: EnvBase) -> Composite | None:
        if "state" in env.observation_spec:
            return Composite({"state": env.observation_spec["state"].clone()})
        return None

    def action_spec(self, env: EnvBase) -> Composite:
        return env.full_action_spec

    @staticmethod
    def log_info(batch: TensorDictBase) -> dict[str, float]:
        """Win rate and time-limit rate of the episodes that ended in ``batch`` (SMAC's ``battle_won``)."""
        done = batch.get(("next", "done")).squeeze(-1)
        if not bool(done.any()):
            return {}
        info = batch.get(("next", "agent", "info"))
        return {
            "collection/info/win_rate": info["battle_won"][..., 0][done].to(torch.float).mean().item(),
            "collection/info/episode_limit_rate": info["episode_limit"][..., 0][done].to(torch.float).mean().item(),
        }

    @staticmethod
    def env_name() -> str:
        return "sc2_envs"


class SC2SmacTask(Task):
    """One member per SMAC map of the simulator (``SMAC_<MAP NAME IN CAPITALS>``)."""

    SMAC_10M_VS_11M = None
    SMAC_1C3S5Z = None
    SMAC_25M = None
    SMAC_27M_VS_30M = None
    SMAC_2C_VS_64ZG = None
    SMAC_2M_VS_1Z = None
    SMAC_2S3Z = None
    SMAC_2S_VS_1SC = None
    SMAC_3M = None
    SMAC_3S5Z = None
    SMAC_3S5Z_VS_3S6Z = None
    SMAC_3S_VS_3Z = None
    SMAC_3S_VS_4Z = None
    SMAC_3S_VS_5Z = None
    SMAC_5M_VS_6M = None
    SMAC_6H_VS_8Z = None
    SMAC_8M = None
    SMAC_8M_VS_9M = None
    SMAC_MMM = None
    SMAC_MMM2 = None
    SMAC_BANE_VS_BANE = None
    SMAC_CORRIDOR = None
    SMAC_SO_MANY_BANELING = None

    @staticmethod
    def associated_class():
        return SC2SmacClass
