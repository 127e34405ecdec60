"""BenchMARL's MAPPO on a SMAC battle of the simulator (``sc2_envs.adapters.benchmarl.SC2SmacTask``).

    pip install benchmarl "torch==2.13.0"     # benchmarl 1.5.2 pins torchrl<0.12: use its own venv
    python examples/torchrl_benchmarl.py --map-name 3m --max-frames 20000

BenchMARL's experiment loop (collection, MAPPO losses, evaluation, CSV logs under ``--save-folder``)
runs on ``make_torchrl_env``: a fixed agent group ``"agent"`` (dead agents absorbed), masks in
``("agent", "action_mask")``, SMAC's state in ``"state"`` for the critic. Defaults are BenchMARL's
``base_experiment.yaml`` and ``mappo.yaml`` except the sizes below, scaled for a CPU laptop, and no
wandb. BenchMARL prints its evaluation return (the sum over agents of the team reward) and logs
``collection/info/win_rate``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch
import tyro

from sc2_envs.adapters.extras import require


@dataclass
class Args:
    map_name: str = "3m"
    """SMAC map (``sc2_envs.list_maps()``)"""
    seed: int = 1
    """BenchMARL experiment seed"""
    max_frames: int = 20_000
    """env steps of training (BenchMARL's ``max_n_frames``)"""
    frames_per_batch: int = 1_000
    """env steps per batch (``on_policy_collected_frames_per_batch``)"""
    n_envs: int = 1
    """battles per collector (``on_policy_n_envs_per_worker``; stepped in a SerialEnv)"""
    minibatch_size: int = 250
    """``on_policy_minibatch_size``"""
    minibatch_iters: int = 20
    """``on_policy_n_minibatch_iters``"""
    lr: float = 5e-4
    """Adam learning rate"""
    eval_interval: int = 5_000
    """env steps between evaluations (a multiple of ``frames_per_batch``)"""
    eval_episodes: int = 10
    """episodes per evaluation"""
    loops_per_tick: int = 1
    """simulator resolution: 1 is loop-exact; 2/4/8 trade movement and damage timing for speed"""
    save_folder: str = "runs/benchmarl"
    """where BenchMARL writes its CSV logs"""


def make_experiment(args: Args):
    """The ``benchmarl.experiment.Experiment`` for these arguments (MAPPO, MLP actor and critic)."""
    from benchmarl.algorithms import MappoConfig
    from benchmarl.experiment import Experiment, ExperimentConfig
    from benchmarl.models.mlp import MlpConfig

    from sc2_envs.adapters.benchmarl import SC2SmacTask

    member = f"SMAC_{args.map_name.upper()}"
    if member not in SC2SmacTask.__members__:
        raise ValueError(f"--map-name {args.map_name!r} has no BenchMARL task; expected one of sc2_envs.list_maps()")
    task = SC2SmacTask[member].get_task(config={"loops_per_tick": args.loops_per_tick})
    config = ExperimentConfig.get_from_yaml()
    config.max_n_frames = args.max_frames
    config.on_policy_collected_frames_per_batch = args.frames_per_batch
    config.on_policy_n_envs_per_worker = args.n_envs
    config.on_policy_minibatch_size = args.minibatch_size
    config.on_policy_n_minibatch_iters = args.minibatch_iters
    config.lr = args.lr
    config.evaluation_interval = args.eval_interval
    config.evaluation_episodes = args.eval_episodes
    config.evaluation_deterministic_actions = False
    config.render = False
    config.loggers = ["csv"]
    config.create_json = False
    Path(args.save_folder).mkdir(parents=True, exist_ok=True)
    config.save_folder = args.save_folder
    return Experiment(
        task=task,
        algorithm_config=MappoConfig.get_from_yaml(),
        model_config=MlpConfig.get_from_yaml(),
        critic_model_config=MlpConfig.get_from_yaml(),
        seed=args.seed,
        config=config,
    )


if __name__ == "__main__":
    require("benchmarl", "benchmarl", "examples/torchrl_benchmarl.py")
    torch.set_num_threads(1)
    make_experiment(tyro.cli(Args)).run()
