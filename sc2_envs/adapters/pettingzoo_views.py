"""Observation layouts that some consumers of PettingZoo envs need, as ``BaseParallelWrapper`` s.

``sc2_smac_v0`` (``sc2_envs.wrappers.pettingzoo``) gives each agent
``{"observation": Box(obs_size), "action_mask": Box(n_actions, int8)}`` (PettingZoo's convention;
the mask is in the observation only, unless ``info_action_mask=True``). Two consumers want
something else:

* ``FlatObservation``: the observation alone, a ``Box(-1, 1, (obs_size,), float32)``; the mask moves
  to ``infos[agent]["action_mask"]``. SuperSuit's vector conversions and ``black_death_v3`` accept
  only Box observations, and Stable-Baselines3 reads masks from the env, not from the observation.
* ``RLlibMaskedObservation``: renames ``observation`` to ``observations`` (plural), the key RLlib's
  ``ActionMaskingTorchRLModule`` example reads next to ``action_mask``.

Both leave ``possible_agents``, ``agents``, rewards, terminations, truncations, infos, ``state()``,
``state_space``, ``render()`` and ``close()`` as they are; spaces are built once per agent
(PettingZoo's identity check) and the wrappers pickle (SuperSuit copies envs with cloudpickle).
"""

from __future__ import annotations

import gymnasium
from pettingzoo import ParallelEnv
from pettingzoo.utils import BaseParallelWrapper

__all__ = ["FlatObservation", "RLlibMaskedObservation"]


def _check_dict_obs(env: ParallelEnv, key: str) -> None:
    for agent in env.possible_agents:
        space = env.observation_space(agent)
        if not isinstance(space, gymnasium.spaces.Dict) or key not in space.spaces or "action_mask" not in space.spaces:
            raise ValueError(
                f"observation_space({agent!r}) is {space}; expected a Dict with keys {key!r} and "
                "'action_mask' (sc2_envs.wrappers.pettingzoo.parallel_env)"
            )


class FlatObservation(BaseParallelWrapper):
    """Per-agent observation = ``obs["observation"]``, ``(obs_size,)`` float32; the mask moves to infos.

    Args:
        env: a parallel env with ``Dict(observation=Box, action_mask=Box)`` observations.

    Raises:
        ValueError: ``env``'s observation spaces are not of that form.
    """

    def __init__(self, env: ParallelEnv):
        _check_dict_obs(env, "observation")
        super().__init__(env)
        self.metadata = env.metadata
        self.render_mode = getattr(env, "render_mode", None)
        self._spaces = {a: env.observation_space(a)["observation"] for a in env.possible_agents}
        self.observation_spaces = self._spaces  # else BaseParallelWrapper.__getattr__ would show the inner Dicts

    def observation_space(self, agent):
        return self._spaces[agent]

    @staticmethod
    def _split(obs: dict, infos: dict) -> tuple[dict, dict]:
        """Observations without the mask; the mask moved to ``infos[agent]["action_mask"]`` (a copy)."""
        infos = {a: dict(i) for a, i in infos.items()}
        for a, o in obs.items():
            infos.setdefault(a, {})["action_mask"] = o["action_mask"].copy()
        return {a: o["observation"] for a, o in obs.items()}, infos

    def reset(self, seed=None, options=None):
        obs, infos = self.env.reset(seed=seed, options=options)
        return self._split(obs, infos)

    def step(self, actions):
        obs, rew, term, trunc, infos = self.env.step(actions)
        obs, infos = self._split(obs, infos)
        return obs, rew, term, trunc, infos


class RLlibMaskedObservation(BaseParallelWrapper):
    """Per-agent observation ``{"observations": Box(obs_size), "action_mask": Box(n_actions, int8)}``.

    RLlib's action-masking example module (``ray.rllib.examples.rl_modules.classes.action_masking_rlm``)
    reads ``batch["obs"]["action_mask"]`` and feeds ``batch["obs"]["observations"]`` to its network.

    Args:
        env: a parallel env with ``Dict(observation=Box, action_mask=Box)`` observations.

    Raises:
        ValueError: ``env``'s observation spaces are not of that form.
    """

    def __init__(self, env: ParallelEnv):
        _check_dict_obs(env, "observation")
        super().__init__(env)
        self.metadata = env.metadata
        self.render_mode = getattr(env, "render_mode", None)
        self._spaces = {
            a: gymnasium.spaces.Dict(
                {
                    "observations": env.observation_space(a)["observation"],
                    "action_mask": env.observation_space(a)["action_mask"],
                }
            )
            for a in env.possible_agents
        }
        self.observation_spaces = self._spaces  # else BaseParallelWrapper.__getattr__ would show the inner Dicts

    def observation_space(self, agent):
        return self._spaces[agent]

    @staticmethod
    def _rename(obs: dict) -> dict:
        return {a: {"observations": o["observation"], "action_mask": o["action_mask"]} for a, o in obs.items()}

    def reset(self, seed=None, options=None):
        obs, infos = self.env.reset(seed=seed, options=options)
        return self._rename(obs), infos

    def step(self, actions):
        obs, rew, term, trunc, infos = self.env.step(actions)
        return self._rename(obs), rew, term, trunc, infos
