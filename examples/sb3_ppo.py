"""Stable-Baselines3 on a SMAC battle through SuperSuit: one policy shared by all agents.

    pip install "sc2-envs[sb3]"
    python examples/sb3_ppo.py --map-name 3m --total-timesteps 30000

Pipeline (``sc2_envs.adapters.sb3``): ``SC2ParallelEnv(dead_agents="absorbing")`` -> ``FlatObservation``
(Box obs, mask in ``infos[agent]["action_mask"]``) -> ``supersuit.pettingzoo_env_to_vec_env_v1`` ->
``supersuit.concat_vec_envs_v1`` -> ``SB3MaskedVecEnv`` (masks via ``action_masks()``, SMAC's time
limit as ``TimeLimit.truncated`` so SB3 bootstraps it) -> ``VecMonitor``.

``--algo maskable_ppo`` (default) is sb3-contrib's ``MaskablePPO``, which never samples an unavailable
action. ``--algo ppo`` is plain SB3 ``PPO``, which cannot read masks: the env is then built with
``lenient_actions=True`` (an unavailable action becomes stop / no-op, as SMAC would reject it), a
weaker but common baseline.

Output: the mean team return and win rate of ``--eval-episodes`` episodes (actions sampled from the
policy, masked for MaskablePPO) before and after training. Every agent receives the team reward, so
one agent's episode return is the team return.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass

import numpy as np
import torch
import tyro
from stable_baselines3.common.callbacks import BaseCallback

from sc2_envs.adapters.extras import require


@dataclass
class Args:
    map_name: str = "3m"
    """SMAC map (``sc2_envs.list_maps()``)"""
    seed: int = 1
    """seed of the battles (copy ``i`` draws SeedSequence(seed, spawn_key=(i,)), see make_sb3_vec_env) and of SB3"""
    algo: str = "maskable_ppo"
    """``maskable_ppo`` (sb3-contrib, masked) or ``ppo`` (SB3, unmasked with lenient actions)"""
    num_battles: int = 2
    """battle copies stepped together (SuperSuit ``num_vec_envs``); the vector env has num_battles * n_agents slots"""
    total_timesteps: int = 30_000
    """SB3 timesteps = agent steps (one per slot per env step)"""
    time_budget_s: float = 0.0
    """stop training after this many seconds (0: no limit)"""
    n_steps: int = 128
    """env steps per slot per rollout"""
    batch_size: int = 256
    """minibatch size (agent steps)"""
    n_epochs: int = 5
    """SGD epochs per rollout"""
    learning_rate: float = 5e-4
    """Adam learning rate"""
    gamma: float = 0.99
    """discount factor"""
    ent_coef: float = 0.01
    """entropy bonus"""
    hidden: int = 64
    """width of the two hidden layers of policy and value networks"""
    loops_per_tick: int = 1
    """simulator resolution: 1 is loop-exact; 2/4/8 trade movement and damage timing for speed"""
    eval_episodes: int = 20
    """evaluation episodes before and after training (0: skip)"""
    torch_threads: int = 1
    """torch intra-op threads"""


def evaluate(model, args: Args, masked: bool) -> tuple[float, float]:
    """Mean team return and win rate over ``args.eval_episodes`` episodes of one battle, seeds 10000, 10001, ...

    Actions are sampled from the policy (``deterministic=False``) with the env's masks when ``masked``.
    """
    from sc2_envs.adapters.pettingzoo_views import FlatObservation
    from sc2_envs.wrappers.pettingzoo import SC2ParallelEnv

    env = FlatObservation(
        SC2ParallelEnv(args.map_name, dead_agents="absorbing", lenient_actions=not masked, loops_per_tick=args.loops_per_tick)
    )
    torch.manual_seed(10_000)
    returns, wins = [], []
    for ep in range(args.eval_episodes):
        obs, infos = env.reset(seed=10_000 + ep)
        ret, won = 0.0, False
        while env.agents:
            agents = list(env.agents)
            batch = np.stack([obs[a] for a in agents])
            kw = {"action_masks": np.stack([infos[a]["action_mask"] for a in agents]).astype(bool)} if masked else {}
            actions, _ = model.predict(batch, deterministic=False, **kw)
            obs, rew, _term, _trunc, infos = env.step({a: int(x) for a, x in zip(agents, actions, strict=False)})
            ret += rew[agents[0]]
            won = won or infos[agents[0]]["battle_won"]
        returns.append(ret)
        wins.append(won)
    env.close()
    return float(np.mean(returns)), float(np.mean(wins))


class TimeBudget(BaseCallback):
    """Stops ``learn`` after ``seconds`` of wall-clock time (0: never)."""

    def __init__(self, seconds: float):
        super().__init__()
        self.seconds = seconds
        self.start = 0.0

    def _on_training_start(self) -> None:
        self.start = time.time()

    def _on_step(self) -> bool:
        return not self.seconds or time.time() - self.start < self.seconds


def main(args: Args) -> None:
    print(f"sb3_ppo configuration: {asdict(args)}", flush=True)  # the effective configuration, first
    require("sb3_contrib", "sb3", "examples/sb3_ppo.py")
    from stable_baselines3.common.vec_env import VecMonitor

    from sc2_envs.adapters.sb3 import make_sb3_vec_env

    torch.set_num_threads(args.torch_threads)
    masked = args.algo == "maskable_ppo"
    if args.algo == "maskable_ppo":
        from sb3_contrib import MaskablePPO as Algo
    elif args.algo == "ppo":
        from stable_baselines3 import PPO as Algo
    else:
        raise ValueError(f"--algo {args.algo!r}; expected 'maskable_ppo' or 'ppo'")
    venv = VecMonitor(
        make_sb3_vec_env(
            args.map_name, args.num_battles, seed=args.seed, lenient_actions=not masked, loops_per_tick=args.loops_per_tick
        )
    )
    model = Algo(
        "MlpPolicy",
        venv,
        n_steps=args.n_steps,
        batch_size=args.batch_size,
        n_epochs=args.n_epochs,
        learning_rate=args.learning_rate,
        gamma=args.gamma,
        ent_coef=args.ent_coef,
        seed=args.seed,
        policy_kwargs={"net_arch": [args.hidden, args.hidden]},
        verbose=0,
        device="cpu",
    )
    if args.eval_episodes:
        ret0, win0 = evaluate(model, args, masked)
        print(f"eval before training: team return {ret0:.3f}, win rate {win0:.2f} ({args.eval_episodes} episodes)")
    start = time.time()
    model.learn(total_timesteps=args.total_timesteps, callback=TimeBudget(args.time_budget_s))
    ep_info = list(model.ep_info_buffer)
    print(
        f"trained {model.num_timesteps} agent steps in {time.time() - start:.1f} s; "
        f"last {len(ep_info)} training episodes (per agent slot): mean return "
        f"{np.mean([e['r'] for e in ep_info]) if ep_info else float('nan'):.3f}"
    )
    if args.eval_episodes:
        ret1, win1 = evaluate(model, args, masked)
        print(f"eval after training: team return {ret1:.3f}, win rate {win1:.2f} ({args.eval_episodes} episodes)")
    venv.close()


if __name__ == "__main__":
    main(tyro.cli(Args))
