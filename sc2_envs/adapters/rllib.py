"""RLlib (``ray[rllib]``) entry points for the SMAC battles: an env creator and policy mappings.

RLlib consumes PettingZoo parallel envs through ``ray.rllib.env.wrappers.pettingzoo_env.ParallelPettingZooEnv``,
which adds the ``"__all__"`` keys (``all()`` over the step's terminations / truncations). Our parallel env
ends every agent still present with the same flag (won / lost / drawn: ``terminations``; time limit:
``truncations``, also for an agent that dies on that step), so ``"__all__"`` is True on the last step of
every episode and an episode ended by the time limit reaches RLlib as truncated (bootstrapped by PPO's GAE).

The observation is ``{"observations", "action_mask"}`` (``RLlibMaskedObservation``), the keys of RLlib's
``ActionMaskingTorchRLModule`` example, so the policy never samples an unavailable SMAC action.

Ray is imported only inside ``make_rllib_env``; this module itself needs only PettingZoo.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from sc2_envs.adapters.pettingzoo_views import RLlibMaskedObservation
from sc2_envs.wrappers.pettingzoo import SC2ParallelEnv

__all__ = ["POLICY_SHARING", "make_rllib_env", "policy_ids_and_mapping"]

POLICY_SHARING = ("shared", "per_class", "per_agent")


def make_rllib_env(env_config: dict[str, Any] | None = None):
    """Env creator for ``ray.tune.registry.register_env``: ``ParallelPettingZooEnv`` over the masked view.

    Args:
        env_config: keyword arguments of ``SC2ParallelEnv`` (``map_name``, ``dead_agents``, ``seed``, SMAC
            options ...). RLlib passes an ``EnvContext`` (a dict with ``worker_index`` / ``vector_index``);
            an int ``seed`` ``s`` becomes ``numpy.random.SeedSequence(s, spawn_key=(worker_index,
            vector_index))``, so env runners differ and no two (seed, runner, slot) triples share a
            stream (an offset ``s + 1000 * worker + slot`` would give run seed 1's slot 0 the battles
            of run seed 0's slot 1).

    Returns:
        ``ParallelPettingZooEnv`` (an RLlib ``MultiAgentEnv``).
    """
    from ray.rllib.env.wrappers.pettingzoo_env import ParallelPettingZooEnv

    cfg = dict(env_config or {})
    seed = cfg.pop("seed", None)
    if seed is not None:
        seed = np.random.SeedSequence(
            int(seed), spawn_key=(int(getattr(env_config, "worker_index", 0)), int(getattr(env_config, "vector_index", 0)))
        )
    return ParallelPettingZooEnv(RLlibMaskedObservation(SC2ParallelEnv(seed=seed, **cfg)))


def policy_ids_and_mapping(env_config: dict[str, Any], sharing: str) -> tuple[list[str], Callable[..., str]]:
    """Policy ids and RLlib's ``policy_mapping_fn`` for a parameter-sharing scheme.

    Args:
        env_config: the env's ``SC2ParallelEnv`` keywords (read for the map's agents and unit types; no
            episode is played).
        sharing: ``"shared"`` (one policy), ``"per_class"`` (one per unit type, e.g. ``stalker`` and
            ``zealot`` on 2s3z) or ``"per_agent"`` (one per agent id).

    Returns:
        ``(policy_ids, mapping_fn)``; ``mapping_fn(agent_id, episode=None, **kw) -> policy id``.

    Raises:
        ValueError: unknown ``sharing``; ``"per_class"`` on a SMACv2 scenario (its rosters are drawn at
            every reset, so an agent id has no fixed unit type).
    """
    if sharing not in POLICY_SHARING:
        raise ValueError(f"sharing={sharing!r}; expected one of {POLICY_SHARING}")
    probe = SC2ParallelEnv(**{k: v for k, v in env_config.items() if k != "seed"})
    types = dict(probe.agent_unit_types)
    agents = list(probe.possible_agents)
    varying = bool(probe.get_env_info().get("unit_types_vary"))
    probe.close()
    if sharing == "per_class" and varying:
        raise ValueError(
            f"sharing='per_class' needs fixed rosters, but {probe.map_name!r} is a SMACv2 scenario whose unit types "
            "are drawn at every reset (agent_i is a stalker in one episode and a zealot in the next); use "
            "'shared' (each observation carries the unit's type one-hot) or 'per_agent'"
        )
    if sharing == "shared":
        return ["shared"], lambda agent_id, episode=None, **kw: "shared"
    if sharing == "per_class":
        return sorted(set(types.values())), lambda agent_id, episode=None, **kw: types[agent_id]
    return agents, lambda agent_id, episode=None, **kw: agent_id
