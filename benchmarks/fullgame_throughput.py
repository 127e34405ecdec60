"""FullGame-v0 on the lite engine: env steps per second at B=1 and batched.

Plays the random legal-action policy (``sc2_envs.lite.policy``) at step_mul 8 against the very_easy
bot and prints, per batch size, env steps per second of the env alone (policy time excluded) and
with the policy. Games are truncated at ``--episode-loops`` game loops and reset (mini-AlphaStar's
RL episodes are at most 18,000 loops). The first call compiles the kernels (Numba's cache keeps
them for later runs); it is not timed.

On a shared machine wall-clock rates fall with the load of other processes, so it also prints
env steps per CPU second of this process (``time.process_time``, all its threads): on an idle
machine with C cores, wall-clock throughput approaches that figure times the cores the run keeps
busy (1 below 16 games, where the kernels are serial; up to C above). The load average is printed.

Usage:
    python benchmarks/fullgame_throughput.py                  # B = 1 and 256
    python benchmarks/fullgame_throughput.py --batch 1 16 256 --seconds 20

Last line: ``SUMMARY b1_env_steps_per_s=X b1_env_steps_per_cpu_s=Y ...`` (for each batch size given).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sc2_envs.lite.env import LiteFullGameEnv, LiteFullGameVectorEnv
from sc2_envs.lite.policy import RandomLegalPolicy


def run_single(seconds: float, episode_loops: int, seed: int) -> tuple[float, float, int]:
    env = LiteFullGameEnv(game_steps_per_episode=episode_loops)
    obs, _ = env.reset(seed=seed)
    policy = RandomLegalPolicy(env.engine.catalog, env.max_entities, env.max_selected, seed=seed)
    for _ in range(50):  # warm-up: compile, caches
        obs, _, term, trunc, _ = env.step(policy(obs))
        if term or trunc:
            obs, _ = env.reset()
    env_time = env_cpu = 0.0
    steps = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        action = policy(obs)
        t0, c0 = time.perf_counter(), time.process_time()
        obs, _, term, trunc, _ = env.step(action)
        if term or trunc:
            obs, _ = env.reset()
        env_time += time.perf_counter() - t0
        env_cpu += time.process_time() - c0
        steps += 1
    return steps / env_time, steps / env_cpu, steps


def run_batched(batch: int, seconds: float, episode_loops: int, seed: int) -> tuple[float, float, int]:
    venv = LiteFullGameVectorEnv(num_envs=batch, game_steps_per_episode=episode_loops)
    obs, _ = venv.reset(seed=seed)
    policy = RandomLegalPolicy(venv.engine.catalog, 512, 64, seed=seed)
    for _ in range(5):
        obs, *_ = venv.step(policy(obs))
    env_time = env_cpu = 0.0
    steps = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        action = policy(obs)
        t0, c0 = time.perf_counter(), time.process_time()
        obs, *_ = venv.step(action)
        env_time += time.perf_counter() - t0
        env_cpu += time.process_time() - c0
        steps += batch
    return steps / env_time, steps / env_cpu, steps


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--batch", type=int, nargs="+", default=[1, 256], help="batch sizes B to measure")
    p.add_argument("--seconds", type=float, default=15.0, help="timed seconds per batch size")
    p.add_argument("--episode-loops", type=int, default=18000, help="game loops before truncation")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    if any(b < 1 for b in args.batch):
        p.error(f"--batch {args.batch}: expected batch sizes >= 1")
    if not args.seconds > 0:
        p.error(f"--seconds {args.seconds}: expected a timed budget > 0 s")
    if args.episode_loops < 1:
        p.error(f"--episode-loops {args.episode_loops}: expected >= 1 game loop")
    if args.seed < 0:
        p.error(f"--seed {args.seed}: expected an integer >= 0")
    import numba

    load = os.getloadavg()[0]
    print(
        f"numba threads {numba.get_num_threads()}, cpus {os.cpu_count()}, load average {load:.1f}, "
        "step_mul 8, random legal actions"
    )
    summary = []
    for b in args.batch:
        if b == 1:
            env_sps, cpu_sps, steps = run_single(args.seconds, args.episode_loops, args.seed)
        else:
            env_sps, cpu_sps, steps = run_batched(b, args.seconds, args.episode_loops, args.seed)
        print(
            f"B={b:4d}: {env_sps:9.0f} env steps/s wall, {cpu_sps:9.0f} per CPU second "
            f"(env only, policy excluded), {steps} steps"
        )
        summary.append(f"b{b}_env_steps_per_s={env_sps:.0f} b{b}_env_steps_per_cpu_s={cpu_sps:.0f}")
    print("SUMMARY " + " ".join(summary))


if __name__ == "__main__":
    main()
