"""MAPPO with TorchRL on a SMAC battle: ``PettingZooWrapper``, masked actions, absorbing dead agents.

    pip install "sc2-envs[torchrl]"
    python examples/torchrl_mappo.py --map-name 3m --total-frames 30000

The structure follows TorchRL's multi-agent PPO tutorial: ``MultiAgentMLP`` actor with parameters shared
by the agents (decentralised: each agent sees its own observation) -> ``MaskedCategorical`` over SMAC's
actions with ``("agent", "action_mask")``; centralised ``MultiAgentMLP`` critic (every agent's value
sees all observations: MAPPO); ``Collector`` -> GAE -> ``ClipPPOLoss``.

The env (``sc2_envs.adapters.torchrl.make_torchrl_env``) keeps dead agents (zero observation, no-op
mask) so an episode ends only when the battle is won / lost / drawn or at SMAC's time limit
(``done_on_any=False``); a time-limit end arrives as ``truncated`` with the final observation in
``("next", ...)``, which GAE bootstraps.

Output: per batch the mean team return of the episodes that finished in it, and before / after
training the mean team return and win rate of ``--eval-episodes`` episodes (actions sampled from the
masked policy). Frames are env steps (one joint action each).
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass

import numpy as np
import torch
import tyro

from sc2_envs.adapters.extras import require


@dataclass
class Args:
    map_name: str = "3m"
    """SMAC map (``sc2_envs.list_maps()``; agents of one group must share spaces, true for every map)"""
    seed: int = 1
    """seed of the env and of torch"""
    total_frames: int = 30_000
    """env steps of training"""
    time_budget_s: float = 0.0
    """stop training after this many seconds (0: no limit)"""
    frames_per_batch: int = 1_000
    """env steps per PPO batch"""
    minibatch_size: int = 250
    """env steps per SGD minibatch"""
    num_epochs: int = 5
    """SGD epochs per batch"""
    lr: float = 5e-4
    """Adam learning rate"""
    gamma: float = 0.99
    """discount factor"""
    gae_lambda: float = 0.95
    """GAE lambda"""
    clip_epsilon: float = 0.2
    """PPO clip range"""
    entropy_coef: float = 0.01
    """entropy bonus"""
    max_grad_norm: float = 1.0
    """gradient clipping"""
    hidden: int = 64
    """width of the two hidden layers of actor and critic"""
    loops_per_tick: int = 1
    """simulator resolution: 1 is loop-exact; 2/4/8 trade movement and damage timing for speed"""
    eval_episodes: int = 20
    """evaluation episodes before and after training (0: skip)"""
    torch_threads: int = 1
    """torch intra-op threads"""


def build(args: Args, env):
    """Actor (``ProbabilisticActor`` with ``MaskedCategorical``) and centralised critic for ``env``'s group."""
    from tensordict.nn import TensorDictModule
    from torchrl.modules import MaskedCategorical, MultiAgentMLP, ProbabilisticActor

    n_agents = env.full_action_spec["agent", "action"].shape[0]
    n_actions = env.full_action_spec["agent", "action"].space.n
    obs_size = env.observation_spec["agent", "observation"].shape[-1]
    actor_net = MultiAgentMLP(
        n_agent_inputs=obs_size,
        n_agent_outputs=n_actions,
        n_agents=n_agents,
        centralized=False,
        share_params=True,
        depth=2,
        num_cells=args.hidden,
        activation_class=torch.nn.Tanh,
    )
    actor = ProbabilisticActor(
        TensorDictModule(actor_net, in_keys=[("agent", "observation")], out_keys=[("agent", "logits")]),
        in_keys={"logits": ("agent", "logits"), "mask": ("agent", "action_mask")},
        out_keys=[("agent", "action")],
        distribution_class=MaskedCategorical,
        return_log_prob=True,
        log_prob_key=("agent", "sample_log_prob"),
    )
    critic_net = MultiAgentMLP(
        n_agent_inputs=obs_size,
        n_agent_outputs=1,
        n_agents=n_agents,
        centralized=True,
        share_params=True,
        depth=2,
        num_cells=args.hidden,
        activation_class=torch.nn.Tanh,
    )
    critic = TensorDictModule(critic_net, in_keys=[("agent", "observation")], out_keys=[("agent", "state_value")])
    return actor, critic


def evaluate(env, actor, episodes: int, seed: int) -> tuple[float, float]:
    """Mean team return and win rate over ``episodes`` episodes seeded ``seed, seed + 1, ...`` (sampled actions)."""
    from torchrl.envs.utils import ExplorationType, set_exploration_type

    returns, wins = [], []
    with torch.no_grad(), set_exploration_type(ExplorationType.RANDOM):
        for ep in range(episodes):
            # reset(seed=...) starts the seeded battle; set_seed would reset too and rollout's own reset would then
            # play that seed's second battle (a newcomer found it), not the one SB3 and RLlib evaluate on
            start = env.reset(seed=seed + ep)
            td = env.rollout(max_steps=10_000, policy=actor, break_when_any_done=True, auto_reset=False, tensordict=start)
            returns.append(float(td["next", "agent", "reward"][:, 0].sum()))  # team reward, same for every agent
            wins.append(bool(td["next", "agent", "info", "battle_won"][-1, 0]))
    return float(np.mean(returns)), float(np.mean(wins))


def main(args: Args) -> None:
    print(f"torchrl_mappo configuration: {asdict(args)}", flush=True)  # the effective configuration, first
    require("torchrl", "torchrl", "examples/torchrl_mappo.py")
    try:
        from torchrl.collectors import Collector
    except ImportError:  # torchrl < 0.14 names it SyncDataCollector
        from torchrl.collectors import SyncDataCollector as Collector
    from torchrl.data import LazyTensorStorage, ReplayBuffer, SamplerWithoutReplacement
    from torchrl.objectives import ClipPPOLoss, ValueEstimators

    from sc2_envs.adapters.torchrl import make_torchrl_env

    torch.set_num_threads(args.torch_threads)
    torch.manual_seed(args.seed)
    env = make_torchrl_env(args.map_name, seed=args.seed, loops_per_tick=args.loops_per_tick)
    eval_env = make_torchrl_env(args.map_name, seed=10_000, loops_per_tick=args.loops_per_tick)
    actor, critic = build(args, env)
    if args.eval_episodes:
        ret0, win0 = evaluate(eval_env, actor, args.eval_episodes, 10_000)
        print(f"eval before training: team return {ret0:.3f}, win rate {win0:.2f} ({args.eval_episodes} episodes)")

    collector = Collector(env, actor, frames_per_batch=args.frames_per_batch, total_frames=args.total_frames)
    buffer = ReplayBuffer(
        storage=LazyTensorStorage(args.frames_per_batch), sampler=SamplerWithoutReplacement(), batch_size=args.minibatch_size
    )
    loss_module = ClipPPOLoss(
        actor_network=actor,
        critic_network=critic,
        clip_epsilon=args.clip_epsilon,
        entropy_coeff=args.entropy_coef,
        normalize_advantage=False,
    )
    loss_module.set_keys(
        reward=("agent", "reward"),
        action=("agent", "action"),
        sample_log_prob=("agent", "sample_log_prob"),
        value=("agent", "state_value"),
        done=("agent", "done"),
        terminated=("agent", "terminated"),
    )
    loss_module.make_value_estimator(ValueEstimators.GAE, gamma=args.gamma, lmbda=args.gae_lambda)
    optim = torch.optim.Adam(loss_module.parameters(), args.lr)

    start, frames = time.time(), 0
    for batch in collector:
        frames += batch.numel()
        with torch.no_grad():
            loss_module.value_estimator(
                batch, params=loss_module.critic_network_params, target_params=loss_module.target_critic_network_params
            )
        buffer.extend(batch.reshape(-1))
        for _ in range(args.num_epochs):
            for _ in range(args.frames_per_batch // args.minibatch_size):
                loss = loss_module(buffer.sample())
                total = loss["loss_objective"] + loss["loss_critic"] + loss["loss_entropy"]
                optim.zero_grad()
                total.backward()
                torch.nn.utils.clip_grad_norm_(loss_module.parameters(), args.max_grad_norm)
                optim.step()
        collector.update_policy_weights_()
        # Team return of the episodes that ended in this batch: cumulate rewards along the batch's episodes.
        done = batch["next", "done"][:, 0]
        reward = batch["next", "agent", "reward"][:, 0, 0]
        ep_returns, acc = [], 0.0
        for r, d in zip(reward.tolist(), done.tolist(), strict=False):
            acc += r
            if d:
                ep_returns.append(acc)
                acc = 0.0
        print(
            f"frames {frames}: {len(ep_returns)} episodes ended, mean team return "
            f"{np.mean(ep_returns) if ep_returns else float('nan'):.3f}, {time.time() - start:.0f}s"
        )
        if args.time_budget_s and time.time() - start > args.time_budget_s:
            break
    collector.shutdown()
    if args.eval_episodes:
        ret1, win1 = evaluate(eval_env, actor, args.eval_episodes, 10_000)
        print(f"eval after training: team return {ret1:.3f}, win rate {win1:.2f} ({args.eval_episodes} episodes)")
    env.close()
    eval_env.close()


if __name__ == "__main__":
    main(tyro.cli(Args))
