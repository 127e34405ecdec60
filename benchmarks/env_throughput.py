"""Env steps/s and agent steps/s of the embedded simulator for several batch sizes, maps and devices.

Random masked actions are drawn on the sim's device and counted in the timing (as a training loop
would); auto-reset is on. Each configuration is warmed up, then timed over a fixed wall budget.

    python benchmarks/env_throughput.py                       # CPU: B in {1, 64, 1024, 4096}
    python benchmarks/env_throughput.py --devices cpu cuda --compile both
    python benchmarks/env_throughput.py --maps 2s3z --batch-sizes 1 --threads 1

Prints one row per configuration and, per (map, device), the ratio to B=1, and writes a CSV.
"""

from __future__ import annotations

import csv
import platform
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch
import tyro

from sc2_envs import make_batched
from sc2_envs.policies import random_actions


@dataclass
class Args:
    maps: list[str] = field(default_factory=lambda: ["2s3z", "3s5z", "27m_vs_30m"])
    """maps to measure"""
    batch_sizes: list[int] = field(default_factory=lambda: [1, 64, 1024, 4096])
    """numbers of envs B"""
    devices: list[str] = field(default_factory=lambda: ["cpu"] + (["cuda"] if torch.cuda.is_available() else []))
    """torch devices"""
    compile: str = "off"
    """torch.compile the step: off | on | both"""
    loops_per_tick: int = 1
    """game loops per simulation tick (1 = exact)"""
    seconds: float = 5.0
    """timed wall-clock budget per configuration"""
    threads: int = 0
    """torch CPU threads (0 = leave torch's default)"""
    out: str = "benchmarks/results/env_throughput.csv"
    """CSV output path"""


def measure(map_name: str, B: int, device: str, compile_: bool, loops_per_tick: int, seconds: float) -> dict:
    env = make_batched(map_name, num_envs=B, device=device, seed=0, compile=compile_, loops_per_tick=loops_per_tick)
    out = env.reset()
    gen = torch.Generator(device=device).manual_seed(0)
    t0 = time.perf_counter()
    for _ in range(3):  # warm-up (and compilation)
        out = env.step(random_actions(out["avail_actions"], gen))
    warmup = time.perf_counter() - t0
    steps = 0
    sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)
    sync()
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        for _ in range(10):
            out = env.step(random_actions(out["avail_actions"], gen))
        steps += 10
        sync()
    dt = time.perf_counter() - t0
    return dict(map=map_name, B=B, device=device, compile=compile_, loops_per_tick=loops_per_tick,
                n_agents=env.n_agents, env_steps_per_s=steps * B / dt, agent_steps_per_s=steps * B * env.n_agents / dt,
                step_ms=1000 * dt / steps, warmup_s=warmup, episodes=env.get_stats()["battles_game"])


def main(args: Args) -> None:
    if args.threads:
        torch.set_num_threads(args.threads)
    modes = {"off": [False], "on": [True], "both": [False, True]}[args.compile]
    print(f"env_throughput: maps={args.maps} B={args.batch_sizes} devices={args.devices} compile={modes} "
          f"loops_per_tick={args.loops_per_tick} torch={torch.__version__} threads={torch.get_num_threads()} "
          f"cpu={platform.processor() or platform.machine()}"
          + (f" gpu={torch.cuda.get_device_name()}" if torch.cuda.is_available() else ""), flush=True)
    rows = []
    print(f"{'map':>12} {'B':>6} {'device':>6} {'compile':>7} {'env steps/s':>13} {'agent steps/s':>14} {'ms/step':>8} {'warmup s':>8}")
    for device in args.devices:
        for c in modes:
            for m in args.maps:
                base = None
                for B in args.batch_sizes:
                    r = measure(m, B, device, c, args.loops_per_tick, args.seconds)
                    base = base or r["env_steps_per_s"]
                    r["ratio_to_B1"] = r["env_steps_per_s"] / base
                    rows.append(r)
                    print(f"{m:>12} {B:>6} {device:>6} {str(c):>7} {r['env_steps_per_s']:>13,.0f} "
                          f"{r['agent_steps_per_s']:>14,.0f} {r['step_ms']:>8.2f} {r['warmup_s']:>8.1f}"
                          f"   x{r['ratio_to_B1']:.1f} vs first B", flush=True)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    with open(args.out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main(tyro.cli(Args))
