"""PPO from RLlib (Ray) on a SMAC battle, through RLlib's PettingZoo wrapper, with action masking.

    pip install "sc2-envs[rllib]"
    python examples/rllib_ppo.py --map-name 3m --sharing shared --iterations 20

Pipeline: ``SC2ParallelEnv`` (PettingZoo, ``sc2_envs.wrappers.pettingzoo``) ->
``RLlibMaskedObservation`` (obs ``{"observations", "action_mask"}``) -> ``ParallelPettingZooEnv``
(RLlib's wrapper; adds ``"__all__"``) -> PPO on RLlib's new API stack with the
``ActionMaskingTorchRLModule`` of RLlib's examples (logits of unavailable actions set to -inf).
``--sharing shared | per_class | per_agent`` picks one policy for all agents, one per unit type, or
one per agent.

Cluster. Without ``--address`` Ray starts a local cluster on this machine. To train on a multi-node
Ray cluster, start it (``ray start --head`` on one node, ``ray start --address=<head-ip>:6379`` on the
others, sc2-envs installed on every node), then run this script on the head node with
``--address auto`` (or from outside through Ray Client, ``--address ray://<head-ip>:10001``) and raise
``--num-env-runners`` (sampling processes; each runs its own simulator) and ``--num-learners``.
Nothing else changes.

Output: per iteration the mean *team* return of the episodes RLlib finished (RLlib's
``episode_return_mean`` sums every agent's reward; every agent gets the team reward here, so it is
divided by the number of agents, exact when no agent died before the end), and, before and after
training, an evaluation of the policies (``--eval-episodes`` episodes, team return and win rate).
"""

from __future__ import annotations

import os
import time
from dataclasses import asdict, dataclass

import numpy as np
import torch
import tyro

from sc2_envs.adapters.extras import require
from sc2_envs.maps import get_map


@dataclass
class Args:
    map_name: str = "3m"
    """SMAC map (``sc2_envs.list_maps()``)"""
    seed: int = 1
    """seed of the env runners' environments (runner ``w``, slot ``v`` draws SeedSequence(seed, spawn_key=(w, v)), see make_rllib_env) and of the learner"""  # noqa: E501
    sharing: str = "shared"
    """parameter sharing: ``shared``, ``per_class`` (one policy per unit type) or ``per_agent``"""
    dead_agents: str = "remove"
    """dead agents leave the episode (``remove``, PettingZoo's contract) or stay with no-op only (``absorbing``)"""
    loops_per_tick: int = 1
    """simulator resolution: 1 is loop-exact; 2/4/8 trade movement and damage timing for speed"""
    address: str | None = None
    """Ray cluster address (``auto``, ``<ip>:6379`` or ``ray://<ip>:10001``); None starts a local cluster"""
    num_cpus: int | None = None
    """CPUs of the local cluster (None: all of this machine); ignored with ``--address``"""
    num_env_runners: int = 0
    """remote sampling processes (0: sample in the driver)"""
    num_learners: int = 0
    """remote learner processes (0: learn in the driver)"""
    iterations: int = 20
    """training iterations"""
    time_budget_s: float = 0.0
    """stop training after this many seconds (0: no limit)"""
    train_batch_size: int = 1000
    """env steps per training batch (per learner; RLlib's default ``count_steps_by="env_steps"``)"""
    minibatch_size: int = 250
    """env steps per SGD minibatch"""
    num_epochs: int = 5
    """SGD epochs per batch"""
    lr: float = 5e-4
    """Adam learning rate"""
    gamma: float = 0.99
    """discount factor"""
    entropy_coeff: float = 0.01
    """entropy bonus"""
    hidden: int = 64
    """width of the two hidden layers of policy and value networks"""
    eval_episodes: int = 20
    """evaluation episodes before and after training (0: skip)"""
    eval_greedy: bool = False
    """evaluate with the argmax action instead of sampling from the masked policy"""
    torch_threads: int = 1
    """torch intra-op threads in the driver"""


def build_config(args: Args):
    """The ``PPOConfig`` for these arguments (new API stack, masked RLModule per policy)."""
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.multi_rl_module import MultiRLModuleSpec
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec
    from ray.rllib.examples.rl_modules.classes.action_masking_rlm import (
        ActionMaskingTorchRLModule,
    )
    from ray.tune.registry import register_env

    from sc2_envs.adapters.rllib import make_rllib_env, policy_ids_and_mapping

    register_env("sc2_smac", make_rllib_env)
    env_config = {
        "map_name": args.map_name,
        "dead_agents": args.dead_agents,
        "loops_per_tick": args.loops_per_tick,
        "seed": args.seed,
    }
    policy_ids, mapping = policy_ids_and_mapping(env_config, args.sharing)
    module = RLModuleSpec(
        module_class=ActionMaskingTorchRLModule,
        model_config={"fcnet_hiddens": [args.hidden, args.hidden], "head_fcnet_hiddens": [], "vf_share_layers": False},
    )
    return (
        (
            PPOConfig()
            # RLlib's env pre-check steps the env with unmasked random actions, which a SMAC env rejects (an
            # unavailable action raises); the masked RLModule is what keeps actions valid during training.
            .environment("sc2_smac", env_config=env_config, disable_env_checking=True)
            .framework("torch")
            .env_runners(num_env_runners=args.num_env_runners, num_envs_per_env_runner=1)
            .learners(num_learners=args.num_learners)
            .multi_agent(policies=set(policy_ids), policy_mapping_fn=mapping)
            .rl_module(rl_module_spec=MultiRLModuleSpec(rl_module_specs={pid: module for pid in policy_ids}))
            .training(
                train_batch_size_per_learner=args.train_batch_size,
                minibatch_size=args.minibatch_size,
                num_epochs=args.num_epochs,
                lr=args.lr,
                gamma=args.gamma,
                entropy_coeff=args.entropy_coeff,
            )
            .debugging(seed=args.seed)
        ),
        env_config,
        mapping,
    )


def evaluate(algo, env_config: dict, mapping, episodes: int, seed: int, greedy: bool) -> tuple[float, float]:
    """Mean team return and win rate over ``episodes`` episodes of the current policies.

    Plays the env directly with the learner's modules (actions sampled from the masked logits, or their
    argmax if ``greedy``), episodes seeded ``seed, seed + 1, ...``, actions from ``torch.Generator(seed)``.
    """
    from ray.rllib.core.columns import Columns

    from sc2_envs.adapters.rllib import make_rllib_env

    env = make_rllib_env({**env_config, "seed": None})
    gen = torch.Generator().manual_seed(seed)
    returns, wins = [], []
    for ep in range(episodes):
        obs, _ = env.reset(seed=seed + ep)
        ret, done, won = 0.0, False, False
        while not done:
            actions = {}
            for agent in env.par_env.agents:  # agents that died last step still have an obs, but no action
                o = obs[agent]
                module = algo.get_module(mapping(agent))
                batch = {
                    Columns.OBS: {
                        "observations": torch.as_tensor(o["observations"])[None],
                        "action_mask": torch.as_tensor(o["action_mask"], dtype=torch.float32)[None],
                    }
                }
                with torch.no_grad():
                    logits = module.forward_inference(batch)[Columns.ACTION_DIST_INPUTS]
                probs = torch.softmax(logits[0], -1)
                actions[agent] = int(probs.argmax() if greedy else torch.multinomial(probs, 1, generator=gen))
            obs, rew, term, trunc, infos = env.step(actions)
            ret += next(iter(rew.values()))  # the team reward, identical for every agent
            won = won or any(i.get("battle_won", False) for i in infos.values())
            done = term["__all__"] or trunc["__all__"]
        returns.append(ret)
        wins.append(won)
    env.close()
    return float(np.mean(returns)), float(np.mean(wins))


def main(args: Args) -> None:
    print(f"rllib_ppo configuration: {asdict(args)}", flush=True)  # the effective configuration, first
    require("ray", "rllib", "examples/rllib_ppo.py")
    import ray

    torch.set_num_threads(args.torch_threads)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    if args.address is None:
        ray.init(num_cpus=args.num_cpus, include_dashboard=False)
    else:
        ray.init(address=args.address)
    config, env_config, mapping = build_config(args)
    algo = config.build_algo()
    try:
        n_agents = get_map(args.map_name).n_agents
        if args.eval_episodes:
            ret0, win0 = evaluate(algo, env_config, mapping, args.eval_episodes, 10_000, args.eval_greedy)
            print(f"eval before training: team return {ret0:.3f}, win rate {win0:.2f} ({args.eval_episodes} episodes)")
        start = time.time()
        for it in range(args.iterations):
            result = algo.train()
            runners = result.get("env_runners", {})
            ep_ret = runners.get("episode_return_mean", float("nan"))
            team = ep_ret / n_agents
            steps = result.get("num_env_steps_sampled_lifetime", runners.get("num_env_steps_sampled_lifetime", 0))
            print(
                f"iter {it + 1}: env steps {steps}, episode_return_mean {ep_ret:.3f} (team ~{team:.3f}), "
                f"{time.time() - start:.0f}s"
            )
            if args.time_budget_s and time.time() - start > args.time_budget_s:
                break
        if args.eval_episodes:
            ret1, win1 = evaluate(algo, env_config, mapping, args.eval_episodes, 10_000, args.eval_greedy)
            print(f"eval after training: team return {ret1:.3f}, win rate {win1:.2f} ({args.eval_episodes} episodes)")
    finally:
        algo.stop()
        ray.shutdown()


if __name__ == "__main__":
    main(tyro.cli(Args))
