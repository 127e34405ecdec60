"""Same-run A/B of env throughput: this checkout against another source tree, in interleaved windows.

On a shared machine the load changes within seconds, so two ``env_throughput.py`` runs made one
after the other can differ by 30 % with the same code. Here both simulators stay alive side by
side: for each (map, B), one worker process per tree (started in that tree, so it imports that
tree's ``sc2_envs`` and Numba cache) makes the env, resets it and plays warm-up steps; then the
two play ``--windows`` timed windows of ``--window-s`` seconds each, one after the other, the
order alternating every window (A B, B A, ...), so a busy spell hits both alike. Each window
counts env steps with random masked actions and auto-reset, as ``env_throughput.measure``, and the
worker's CPU seconds (user + system of all its threads, ``time.process_time``).

Printed per (map, B): each tree's median env steps/s, the median and range of the per-window
ratios (this checkout / baseline, each window against its partner), and each tree's median CPU
microseconds per env step with the median per-window ratio (baseline CPU / this checkout's, so
above 1 means this checkout does less work). The CPU ratio is the steadier figure under load:
waiting for a core costs wall time, not CPU time.

    git worktree add /tmp/wt_main main
    python benchmarks/env_throughput_ab.py --baseline-tree /tmp/wt_main --maps 2s3z --batch-sizes 1 64 1024
    python benchmarks/env_throughput_ab.py --baseline-tree /tmp/wt_main --maps protoss_5_vs_5 --windows 20

The worker runs ``make_batched`` and ``sc2_envs.policies.random_actions``, so the baseline tree can be
any checkout that has both.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import tyro

# Run with ``python -c`` in a tree's root, so ``import sc2_envs`` finds that tree first. Reads one
# window length in seconds per line, answers one JSON line per window.
WORKER = """
import json, sys, time
import torch
import sc2_envs
from sc2_envs import make_batched
from sc2_envs.policies import random_actions

map_name, B, kernel, warmup = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
env = make_batched(map_name, num_envs=B, seed=0, kernel=kernel)
env.wait_for_kernel()
gen = torch.Generator().manual_seed(0)
out = env.reset()
for _ in range(warmup):
    out = env.step(random_actions(out["avail_actions"], gen))
print(json.dumps({"kernel": env.kernel, "module": sc2_envs.__file__}), flush=True)
for line in sys.stdin:
    seconds = float(line)
    steps, c0, t0 = 0, time.process_time(), time.perf_counter()
    while steps == 0 or time.perf_counter() - t0 < seconds:
        out = env.step(random_actions(out["avail_actions"], gen))
        steps += 1
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    print(json.dumps({"env_steps": steps * B, "wall_s": wall, "cpu_s": cpu}), flush=True)
"""


@dataclass
class Args:
    baseline_tree: str
    """the other source tree (e.g. a ``git worktree`` of main); its root holds its ``sc2_envs``"""
    maps: list[str] = field(default_factory=lambda: ["2s3z"])
    """maps or SMACv2 scenarios to measure"""
    batch_sizes: list[int] = field(default_factory=lambda: [1, 64, 1024])
    """numbers of envs B"""
    kernel: str = "numba"
    """the simulators' kernel: auto | torch | numba"""
    windows: int = 12
    """timed windows per tree and (map, B); medians are reported"""
    window_s: float = 0.5
    """wall-clock seconds per window (at least one step always runs)"""
    warmup_steps: int = 20
    """untimed steps after the reset (the first calls compile or load the kernels, fault pages in)"""


class Worker:
    """One tree's simulator for one (map, B) in its own process, stepped in timed windows."""

    def __init__(self, tree: Path, map_name: str, B: int, kernel: str, warmup: int):
        cmd = [sys.executable, "-c", WORKER, map_name, str(B), kernel, str(warmup)]
        # PYTHONPATH as well as the working directory: an editable install of another checkout must not win
        env = dict(os.environ, PYTHONPATH=str(tree))
        self.proc = subprocess.Popen(
            cmd, cwd=tree, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        self.tree = tree
        first = self._answer()
        self.kernel = first["kernel"]
        if not Path(first["module"]).resolve().is_relative_to(tree):
            self.close()
            raise SystemExit(f"the worker started in {tree} imported {first['module']}, another checkout's sc2_envs")

    def _answer(self) -> dict:
        line = self.proc.stdout.readline()
        if not line:
            err = self.proc.stderr.read()
            raise SystemExit(f"the worker in {self.tree} stopped:\n{err.strip()[-2000:]}")
        return json.loads(line)

    def window(self, seconds: float) -> dict:
        """``{"env_steps", "wall_s", "cpu_s"}`` of one timed window of about ``seconds``."""
        self.proc.stdin.write(f"{seconds}\n")
        self.proc.stdin.flush()
        return self._answer()

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait()


def compare(args: Args, ours: Path, base: Path, map_name: str, B: int) -> dict:
    """Interleaved windows of this checkout (``ours``) and the baseline tree on one (map, B)."""
    workers = {}
    try:
        workers = {"ours": Worker(ours, map_name, B, args.kernel, args.warmup_steps)}
        workers["base"] = Worker(base, map_name, B, args.kernel, args.warmup_steps)
        runs = {"ours": [], "base": []}
        loads = []
        for w in range(args.windows):
            for name in ("ours", "base") if w % 2 == 0 else ("base", "ours"):
                runs[name].append(workers[name].window(args.window_s))
            loads.append(os.getloadavg()[0])
    finally:
        for wk in workers.values():
            wk.close()

    def sps(r):
        return r["env_steps"] / r["wall_s"]

    def cpu_us(r):
        return 1e6 * r["cpu_s"] / r["env_steps"]

    wall = [sps(a) / sps(b) for a, b in zip(runs["ours"], runs["base"], strict=True)]
    cpu = [cpu_us(b) / cpu_us(a) for a, b in zip(runs["ours"], runs["base"], strict=True)]
    med = statistics.median
    return dict(
        map=map_name,
        B=B,
        kernel=workers["ours"].kernel,
        ours_sps=med(map(sps, runs["ours"])),
        base_sps=med(map(sps, runs["base"])),
        ratio=med(wall),
        ratio_min=min(wall),
        ratio_max=max(wall),
        ours_cpu_us=med(map(cpu_us, runs["ours"])),
        base_cpu_us=med(map(cpu_us, runs["base"])),
        cpu_ratio=med(cpu),
        load=med(loads),
    )


def main(args: Args) -> None:
    ours, base = Path(__file__).resolve().parents[1], Path(args.baseline_tree).resolve()
    if not (base / "sc2_envs").is_dir():
        raise SystemExit(f"--baseline-tree {args.baseline_tree}: no sc2_envs package in it")
    if args.windows < 1 or not args.window_s > 0 or args.warmup_steps < 0:
        raise SystemExit(f"--windows {args.windows} / --window-s {args.window_s} / --warmup-steps {args.warmup_steps}: "
                         "expected >= 1, > 0 and >= 0")  # fmt: skip
    if not args.batch_sizes or min(args.batch_sizes) < 1:
        raise SystemExit(f"--batch-sizes values must be >= 1 envs, got {args.batch_sizes}")
    if args.kernel not in ("auto", "torch", "numba"):
        raise SystemExit(f"--kernel {args.kernel!r}; expected auto, torch or numba")
    print(
        f"env_throughput_ab: this checkout {ours} against {base}; {args.windows} windows of {args.window_s:g} s "
        f"per tree, alternating; cpus={os.cpu_count()} load={'/'.join(f'{v:.1f}' for v in os.getloadavg())}",
        flush=True,
    )
    print(
        f"{'map':>16} {'B':>6} {'kernel':>6} {'ours steps/s':>13} {'base steps/s':>13} {'ratio':>6} {'range':>12} "
        f"{'ours us/step':>12} {'base us/step':>12} {'cpu ratio':>9} {'load':>5}"
    )
    for m in args.maps:
        for B in args.batch_sizes:
            r = compare(args, ours, base, m, B)
            spread = f"[{r['ratio_min']:.2f}, {r['ratio_max']:.2f}]"
            print(
                f"{m:>16} {B:>6} {r['kernel']:>6} {r['ours_sps']:>13,.0f} {r['base_sps']:>13,.0f} {r['ratio']:>6.3f} "
                f"{spread:>12} {r['ours_cpu_us']:>12.2f} "
                f"{r['base_cpu_us']:>12.2f} {r['cpu_ratio']:>9.3f} {r['load']:>5.1f}",
                flush=True,
            )


if __name__ == "__main__":
    from sc2_envs.training.cli import flowing_help

    main(tyro.cli(flowing_help(Args)))
