"""Resident memory of the embedded simulator per env, and whether it grows with run length.

Each (map, B) runs in a fresh Python process of its own (so nothing another configuration or a peer
simulator allocated is counted): the process's RSS is read before the simulator is built, after the
build and ``--warmup-steps`` steps, and then every ``--every`` env steps up to ``--steps``; random
masked actions, auto-reset on (so the run crosses many episode ends). Prints, per configuration,
MiB per env after the warm-up, at the end and the largest seen (``(RSS - RSS before the build) / B``),
the growth from the warm-up to the end, and the peak RSS of the process (``getrusage`` max RSS):

    python benchmarks/env_memory.py --maps 2s3z 27m_vs_30m --batch-sizes 4096 --steps 2000

A simulator that keeps nothing per step shows the same figure after the warm-up and at the end
(allocator noise of a few MiB aside); a leak shows as growth proportional to ``--steps``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass, field


@dataclass
class Args:
    maps: list[str] = field(default_factory=lambda: ["2s3z", "27m_vs_30m"])
    """maps to measure"""
    batch_sizes: list[int] = field(default_factory=lambda: [4096])
    """numbers of envs B"""
    steps: int = 2000
    """env steps after the warm-up"""
    warmup_steps: int = 50
    """env steps before the first reading (compilation, first episode ends, allocator pools)"""
    every: int = 250
    """env steps between readings"""
    kernel: str = "auto"
    """the simulator's kernel option (auto | numba | torch)"""


def _child(map_name: str, B: int, steps: int, warmup: int, every: int, kernel: str) -> dict:
    """Runs in the fresh process: build, step, read RSS; returns the readings (bytes)."""
    import resource

    import psutil
    import torch

    import sc2_envs
    from sc2_envs.policies import random_actions

    proc = psutil.Process()
    rss0 = proc.memory_info().rss
    env = sc2_envs.make_batched(map_name, num_envs=B, seed=0, kernel=kernel)
    env.wait_for_kernel()  # on first use ("auto", empty cache): measure the numba path's memory, not the torch one's
    out, gen = env.reset(), torch.Generator().manual_seed(0)
    for _ in range(warmup):
        out = env.step(random_actions(out["avail_actions"], gen))
    readings = [proc.memory_info().rss - rss0]
    for t in range(1, steps + 1):
        out = env.step(random_actions(out["avail_actions"], gen))
        if t % every == 0 or t == steps:
            readings.append(proc.memory_info().rss - rss0)
    return dict(
        readings=readings,
        episodes=int(env.get_stats()["battles_game"]),
        kernel=env.kernel,
        max_rss=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
    )


def main(args: Args) -> None:
    from sc2_envs import list_maps

    for name, v in (("steps", args.steps), ("every", args.every)):
        if v < 1:
            raise SystemExit(f"--{name} {v}: expected >= 1")
    if args.warmup_steps < 0:
        raise SystemExit(f"--warmup-steps {args.warmup_steps}: expected >= 0")
    if not args.batch_sizes or any(b < 1 for b in args.batch_sizes):
        raise SystemExit(f"--batch-sizes {args.batch_sizes}: expected one or more ints >= 1")
    bad = [m for m in args.maps if m not in list_maps("all")]
    if not args.maps or bad:
        raise SystemExit(f"--maps {args.maps}: expected one or more of {', '.join(list_maps('all'))}")
    if args.kernel not in ("auto", "numba", "torch"):
        raise SystemExit(f"--kernel {args.kernel!r}: expected auto, numba or torch")
    print(
        f"env_memory: maps={args.maps} B={args.batch_sizes} steps={args.steps} warmup={args.warmup_steps} "
        f"every={args.every} kernel={args.kernel} (one fresh process per configuration)",
        flush=True,
    )
    print(
        f"{'map':>12} {'B':>6} {'kernel':>6} {'episodes':>8} {'MiB/env warm':>12} {'MiB/env end':>11} "
        f"{'MiB/env max':>11} {'growth MiB':>10} {'peak RSS MiB':>12}"
    )
    for m in args.maps:
        for B in args.batch_sizes:
            code = (
                "import json, sys; sys.path.insert(0, sys.argv[1]); import env_memory as e; "
                "print('RESULT ' + json.dumps(e._child(sys.argv[2], *map(int, sys.argv[3:7]), sys.argv[7])))"
            )
            argv = [os.path.dirname(os.path.abspath(__file__)), m, B, args.steps, args.warmup_steps, args.every]
            res = subprocess.run(
                [sys.executable, "-c", code, *map(str, argv), args.kernel], capture_output=True, text=True, check=False
            )
            line = [x for x in res.stdout.splitlines() if x.startswith("RESULT ")]
            if res.returncode != 0 or not line:
                raise SystemExit(f"{m} B={B}: the measuring process failed (exit {res.returncode}):\n{res.stderr[-2000:]}")
            r = json.loads(line[-1][len("RESULT ") :])
            mib = [x / 2**20 for x in r["readings"]]
            print(
                f"{m:>12} {B:>6} {r['kernel']:>6} {r['episodes']:>8} {mib[0] / B:>12.4f} {mib[-1] / B:>11.4f} "
                f"{max(mib) / B:>11.4f} {mib[-1] - mib[0]:>10.1f} {r['max_rss'] / 2**20:>12.0f}",
                flush=True,
            )


if __name__ == "__main__":
    import tyro

    from sc2_envs.training.cli import flowing_help

    main(tyro.cli(flowing_help(Args)))
