"""Throughput of the full-game actor loop: AlphaStarPolicy playing FullGame-v0 on the lite engine.

For each B in ``--num-envs`` it plays ``--steps`` env steps of B games (after ``--warmup`` steps that
are not timed) with ``sc2_envs.training.fullgame_actor.AlphaStarActor`` (one batched forward pass
per step, sampled actions, the action-type mask applied) and prints env steps per second of the
whole loop (observation -> policy -> env step), with the share of time in the policy. The machine's
load average before and after is printed with it: the CPU here is shared, so figures from one run
compare with each other, not with another run's.

Usage:
    python benchmarks/fullgame_actor.py --num-envs 1 32 64 --steps 60 --preset mini --threads 2

Besides wall-clock steps/s it prints steps per CPU second of its own process
(``time.process_time``, all its threads): on a machine other jobs load, that is what the loop gets
from the CPU time it is given, while the wall figure depends on the load.

The last line: ``SUMMARY preset=P threads=T B=<b>:<wall steps/s>/<steps per CPU s> ...``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def run(b: int, steps: int, warmup: int, preset: str, seed: int) -> dict:
    """Time ``steps`` steps of the actor loop with B = ``b`` games; returns steps/s and the policy share."""
    import torch

    from models.alphastar import AlphaStarConfig, AlphaStarPolicy
    from sc2_envs.training.fullgame_actor import AlphaStarActor, make_vector_env

    torch.manual_seed(seed)
    cfg = {"mini": AlphaStarConfig.mini, "tiny": AlphaStarConfig.tiny}[preset]()
    model = AlphaStarPolicy(cfg)
    env = make_vector_env(
        "lite", b, max_entities=cfg.max_entities, raw_resolution=cfg.raw_resolution, minimap_resolution=cfg.minimap_size
    )
    actor = AlphaStarActor(model, b, cfg.max_entities, 64, cfg.raw_resolution)
    obs, _ = env.reset(seed=seed)
    for _ in range(warmup):
        obs, *_ = env.step(actor(obs))
    t_policy = 0.0
    c0 = time.process_time()
    t0 = time.perf_counter()
    for _ in range(steps):
        t1 = time.perf_counter()
        action = actor(obs)
        t_policy += time.perf_counter() - t1
        obs, *_ = env.step(action)
    wall = time.perf_counter() - t0
    cpu = time.process_time() - c0
    rows = actor.rows_for(obs)
    return {
        "steps_per_s": b * steps / wall,
        "steps_per_cpu_s": b * steps / cpu,
        "policy_share": t_policy / wall,
        "wall_s": wall,
        "cpu_s": cpu,
        "rows": rows,
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--num-envs", type=int, nargs="+", default=[1, 32, 64], help="B values")
    p.add_argument("--steps", type=int, default=60, help="timed env steps per B")
    p.add_argument("--warmup", type=int, default=5, help="untimed steps first")
    p.add_argument("--preset", choices=("mini", "tiny"), default="mini", help="AlphaStarConfig preset")
    p.add_argument("--threads", type=int, default=2, help="torch CPU threads")
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    import torch

    from sc2_envs.training.allocator import keep_freed_memory

    torch.set_num_threads(a.threads)
    print(keep_freed_memory(), flush=True)  # as the training scripts: no page faults per forward pass
    print(f"cpus {os.cpu_count()}, torch threads {a.threads}, load average before {os.getloadavg()}", flush=True)
    out = []
    for b in a.num_envs:
        r = run(b, a.steps, a.warmup, a.preset, a.seed)
        print(
            f"B={b}: {r['steps_per_s']:.1f} env steps/s wall, {r['steps_per_cpu_s']:.1f} per CPU second of this "
            f"process ({a.steps} steps in {r['wall_s']:.1f} s wall, {r['cpu_s']:.1f} s CPU; policy "
            f"{100 * r['policy_share']:.0f}% of the time; {r['rows']} entity rows)",
            flush=True,
        )
        out.append(f"B={b}:{r['steps_per_s']:.1f}/{r['steps_per_cpu_s']:.1f}")
    print(f"load average after {tuple(np.round(os.getloadavg(), 2))}")
    print(f"SUMMARY preset={a.preset} threads={a.threads} " + " ".join(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
