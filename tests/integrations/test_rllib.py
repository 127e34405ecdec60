"""RLlib (``sc2_envs.adapters.rllib``): ``ParallelPettingZooEnv`` episode ends, masks, one PPO iteration.

Needs the ``rllib`` extra (``ray[rllib]``, which pins gymnasium==1.2.2).
"""

import numpy as np
import pytest

pytest.importorskip("ray.rllib", exc_type=ImportError, reason="needs ray[rllib] (pip install 'sc2-envs[rllib]')")

from sc2_envs.adapters.rllib import make_rllib_env, policy_ids_and_mapping


def passive(env, obs):
    """Stop for living agents (stop available), no-op otherwise, for the agents RLlib must act for."""
    return {a: 1 if obs[a]["action_mask"][1] else 0 for a in env.par_env.agents}


def test_first_death_and_all_flags():
    """Remove mode (default): the dead agent leaves with terminated=True, ``__all__`` stays False until the
    battle ends, and the agent never shows up again."""
    env = make_rllib_env({"map_name": "3m"})
    obs, _ = env.reset(seed=0)
    assert set(obs["agent_0"]) == {"observations", "action_mask"}
    assert env.observation_space["agent_0"]["observations"].shape == obs["agent_0"]["observations"].shape
    steps, gone = 0, set()
    while True:
        obs, _rew, term, trunc, _infos = env.step(passive(env, obs))
        steps += 1
        assert not gone & set(obs), "an agent came back after its final step"
        gone |= {a for a in term if a != "__all__" and term[a]}
        if term["__all__"] or trunc["__all__"]:
            break
        assert "__all__" in term and "__all__" in trunc
    assert steps == 21  # 3m, seed 0, passive: first death at step 11, battle lost at step 21
    assert term["__all__"] and not trunc["__all__"]


def test_truncation_sets_all(short_3m):
    env = make_rllib_env({"map_name": short_3m, "dead_agents": "absorbing"})
    obs, _ = env.reset(seed=0)
    for t in range(6):
        obs, _rew, term, trunc, infos = env.step(passive(env, obs))
        assert trunc["__all__"] == (t == 5) and not term["__all__"]
    assert all(infos[a]["episode_limit"] for a in infos)


def test_masks_reach_the_module():
    """RLlib's masking module turns the env's mask into -inf logits for unavailable actions."""
    import gymnasium as gym
    import torch
    from ray.rllib.core.columns import Columns
    from ray.rllib.examples.rl_modules.classes.action_masking_rlm import (
        ActionMaskingTorchRLModule,
    )

    env = make_rllib_env({"map_name": "3m", "seed": 0})
    obs, _ = env.reset(seed=0)
    module = ActionMaskingTorchRLModule(
        observation_space=env.observation_space["agent_0"],
        action_space=env.action_space["agent_0"],
        model_config={"fcnet_hiddens": [16]},
    )
    o = obs["agent_0"]
    batch = {
        Columns.OBS: {
            "observations": torch.as_tensor(o["observations"])[None],
            "action_mask": torch.as_tensor(o["action_mask"], dtype=torch.float32)[None],
        }
    }
    logits = module.forward_exploration(batch)[Columns.ACTION_DIST_INPUTS][0]
    blocked = np.flatnonzero(o["action_mask"] == 0)
    assert len(blocked) and (logits[blocked] < -1e30).all() and (logits[o["action_mask"] == 1] > -1e30).all()
    assert isinstance(env.observation_space["agent_0"], gym.spaces.Dict)


def test_policy_mappings():
    ids, mapping = policy_ids_and_mapping({"map_name": "2s3z"}, "per_class")
    assert ids == ["stalker", "zealot"] and mapping("agent_0") == "stalker" and mapping("agent_4") == "zealot"
    ids, mapping = policy_ids_and_mapping({"map_name": "3m"}, "shared")
    assert ids == ["shared"] and mapping("agent_2") == "shared"
    with pytest.raises(ValueError, match="sharing"):
        policy_ids_and_mapping({"map_name": "3m"}, "team")


def test_per_class_policies_are_refused_on_smacv2_scenarios():
    # found while checking SMACv2 with RLlib: before any reset a scenario's types are unknown, so
    # "per_class" returned the single policy id None
    with pytest.raises(ValueError, match="per_class.*SMACv2 scenario.*drawn at every reset"):
        policy_ids_and_mapping({"map_name": "protoss_5_vs_5"}, "per_class")
    ids, mapping = policy_ids_and_mapping({"map_name": "protoss_5_vs_5"}, "per_agent")
    assert ids == [f"agent_{i}" for i in range(5)] and mapping("agent_3") == "agent_3"


def test_one_ppo_iteration():
    """One training iteration of the example's config on a local single-CPU Ray: an unmasked sample would
    raise inside the env, so finishing proves the masks were applied during sampling."""
    import importlib.util
    import sys
    from pathlib import Path

    import ray

    path = Path(__file__).resolve().parents[2] / "examples" / "rllib_ppo.py"
    spec = importlib.util.spec_from_file_location("rllib_ppo_example", path)
    example = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = example  # dataclasses look their module up there
    spec.loader.exec_module(example)
    Args, build_config = example.Args, example.build_config

    ray.init(num_cpus=1, include_dashboard=False)
    try:
        config, _, _ = build_config(Args(train_batch_size=128, minibatch_size=64, num_epochs=1, loops_per_tick=8))
        algo = config.build_algo()
        result = algo.train()
        assert result["env_runners"]["num_env_steps_sampled_lifetime"] >= 128
        algo.stop()
    finally:
        ray.shutdown()


def test_death_on_the_time_limit_step():
    """3m, seed 0, passive: the first agent dies at step 11; with ``episode_limit=11`` that is also the
    time-limit step. Mixed terminated / truncated flags must still give ``truncateds["__all__"]``."""
    import dataclasses

    from sc2_envs.maps import get_map

    env = make_rllib_env({"map_name": dataclasses.replace(get_map("3m"), episode_limit=11)})
    obs, _ = env.reset(seed=0)
    for _ in range(11):
        obs, _rew, term, trunc, infos = env.step(passive(env, obs))
    assert trunc["__all__"] and not term["__all__"]
    died = [a for a in term if a != "__all__" and term[a]]
    assert len(died) == 1 and trunc[died[0]] and infos[died[0]]["dead_allies"] == 1
    assert env.par_env.agents == []


def test_rllibs_own_wrapper_runs_the_default_env_without_flags():
    """RLlib's ``ParallelPettingZooEnv`` over ``sc2_envs.parallel_env("3m")`` as it comes:
    whole episodes, ``__all__`` only at the battle's end, finished agents never come back, every
    observation inside RLlib's observation space."""
    from ray.rllib.env.wrappers.pettingzoo_env import ParallelPettingZooEnv

    import sc2_envs

    env = ParallelPettingZooEnv(sc2_envs.parallel_env("3m"))
    rng = np.random.default_rng(0)
    for seed in (0, 1):
        obs, infos = env.reset(seed=seed)
        assert set(obs) == {"agent_0", "agent_1", "agent_2"} and "action_mask" not in infos["agent_0"]
        gone, steps = set(), 0
        while True:
            for a, o in obs.items():
                assert env.observation_space[a].contains(o), a
            actions = {a: int(rng.choice(np.flatnonzero(obs[a]["action_mask"]))) for a in env.par_env.agents}
            obs, rew, term, trunc, infos = env.step(actions)
            steps += 1
            assert not gone & set(obs), "an agent came back after its final step"
            gone |= {a for a in term if a != "__all__" and (term[a] or trunc[a])}
            if term["__all__"] or trunc["__all__"]:
                break
            assert not env.par_env.agents == []
        assert env.par_env.agents == [] and 1 <= steps <= 60


def test_env_runner_seeds_are_split_not_offset():
    """Run seed 1's runner slot 0 and run seed 0's slot 1 play different battles (an offset scheme shares them)."""

    class Ctx(dict):  # RLlib's EnvContext: a dict with worker_index / vector_index attributes
        def __init__(self, cfg, worker_index, vector_index):
            super().__init__(cfg)
            self.worker_index, self.vector_index = worker_index, vector_index

    def first_obs(seed, worker, slot):
        obs, _ = make_rllib_env(Ctx({"map_name": "3m", "seed": seed}, worker, slot)).reset()
        return np.concatenate([obs[a]["observations"] for a in sorted(obs)])

    assert np.array_equal(first_obs(1, 0, 0), first_obs(1, 0, 0))
    assert not np.array_equal(first_obs(1, 0, 0), first_obs(0, 0, 1))
    assert not np.array_equal(first_obs(0, 1, 0), first_obs(0, 0, 1000))


@pytest.mark.parametrize("make", ["rllib_own_wrapper", "make_rllib_env"])
def test_smacv2_scenario_runs_whole_episodes_with_numeric_infos(make):
    """RLlib's ``ParallelPettingZooEnv`` over ``sc2_envs.parallel_env("protoss_5_vs_5")`` as it comes, and
    ``make_rllib_env``: whole episodes (rosters drawn per reset), every observation inside RLlib's
    space, every info value a number (``unit_kind`` indexes ``get_env_info()["kinds"]``)."""
    from ray.rllib.env.wrappers.pettingzoo_env import ParallelPettingZooEnv

    import sc2_envs

    if make == "rllib_own_wrapper":
        env = ParallelPettingZooEnv(sc2_envs.parallel_env("protoss_5_vs_5"))
    else:
        env = make_rllib_env({"map_name": "protoss_5_vs_5", "seed": 0})
    kinds = env.par_env.get_env_info()["kinds"]
    rng = np.random.default_rng(0)
    for seed in (0, 1):
        obs, infos = env.reset(seed=seed)
        names = [kinds[infos[f"agent_{i}"]["unit_kind"]] for i in range(5)]
        assert names == [env.par_env.unwrapped.agent_unit_types[f"agent_{i}"] for i in range(5)]
        steps = 0
        while True:
            for a, o in obs.items():
                assert env.observation_space[a].contains(o), a
            for info in infos.values():
                assert all(isinstance(v, (bool, int, float)) for v in info.values()), info
            actions = {a: int(rng.choice(np.flatnonzero(obs[a]["action_mask"]))) for a in env.par_env.agents}
            obs, _rew, term, trunc, infos = env.step(actions)
            steps += 1
            if term["__all__"] or trunc["__all__"]:
                break
        assert env.par_env.agents == [] and 1 <= steps <= 200
