"""Env steps per second of SMACv2 scenarios next to SMAC v1 maps with the same unit count.

Each (scenario, v1 map) pair runs in this one process, at every batch size and on every kernel
asked for, with uniformly random available actions (``sc2_envs.policies.random_actions``) and
auto-reset (a SMACv2 env draws a new roster at every reset, inside ``step``). Prints a Markdown
table with the ratio v2 / v1 per kernel and numba / torch per map, which is what to compare on a
loaded machine: the two runs of a ratio are measured back to back, alternating, in ``--rounds``
rounds (the best round of each counts, so a burst of other load on a shared machine does not
decide a ratio).

    python benchmarks/smacv2_speed.py --kernel both --batch-sizes 1 64 1024 --seconds 3
"""

from __future__ import annotations

import argparse
import time

import torch

import sc2_envs
from sc2_envs.policies import random_actions

PAIRS = [
    ("protoss_5_vs_5", "2s3z"),  # 10 units
    ("terran_10_vs_11", "10m_vs_11m"),  # 21 units
    ("zerg_20_vs_23", "27m_vs_30m"),  # 43 vs 57 units (no v1 map with 43)
]


class Runner:
    """One simulator, warmed up (kernels compiled or loaded), stepped in timed slices."""

    def __init__(self, name: str, num_envs: int, kernel: str, seed: int = 0):
        self.sim = sc2_envs.make_batched(name, num_envs=num_envs, seed=seed, kernel=kernel)
        self.sim.wait_for_kernel()  # on first use ("auto", empty cache): time the numba path, not a mix
        self.num_envs = num_envs
        self.gen = torch.Generator().manual_seed(seed)
        self.out = self.sim.reset()
        for _ in range(3):  # warm-up (and compilation)
            self._step()

    def _step(self) -> None:
        self.out = self.sim.step(random_actions(self.out["avail_actions"], self.gen))

    def steps_per_second(self, seconds: float) -> float:
        """Env steps per second (``num_envs`` x batched steps / wall time) over about ``seconds``."""
        n, t0 = 0, time.perf_counter()
        while time.perf_counter() - t0 < seconds or n == 0:
            self._step()
            n += 1
        return n * self.num_envs / (time.perf_counter() - t0)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--batch-sizes", type=int, nargs="+", default=[1, 64, 1024], help="envs per simulator")
    p.add_argument("--kernel", choices=("auto", "torch", "numba", "both"), default="both", help="both: torch and numba")
    p.add_argument("--seconds", type=float, default=3.0, help="timed seconds per run and round")
    p.add_argument("--rounds", type=int, default=2, help="alternating rounds per pair (the best of each counts)")
    p.add_argument("--pairs", nargs="+", default=None, help="scenarios to run (default: all three pairs)")
    a = p.parse_args()
    if min(a.batch_sizes) < 1 or a.seconds <= 0 or a.rounds < 1:
        p.error("--batch-sizes must be >= 1, --seconds > 0 and --rounds >= 1")
    pairs = [pr for pr in PAIRS if a.pairs is None or pr[0] in a.pairs]
    if not pairs:
        p.error(f"--pairs: none of {a.pairs} is one of {[v2 for v2, _ in PAIRS]}")
    kernels = ("torch", "numba") if a.kernel == "both" else (a.kernel,)
    print(f"torch {torch.__version__}, {a.seconds:g} s per run, best of {a.rounds} alternating rounds")
    print()
    print("| scenario | v1 map | B | kernel | scenario steps/s | v1 steps/s | scenario / v1 |")
    print("|---|---|---:|---|---:|---:|---:|")
    rows = {}
    for v2, v1 in pairs:
        for B in a.batch_sizes:
            for k in kernels:
                r2, r1 = Runner(v2, B, k), Runner(v1, B, k)
                best2 = best1 = 0.0
                for _ in range(a.rounds):
                    best2 = max(best2, r2.steps_per_second(a.seconds))
                    best1 = max(best1, r1.steps_per_second(a.seconds))
                kname = r2.sim.kernel if k == "auto" else k
                rows[v2, B, kname] = (best2, best1)
                print(f"| {v2} | {v1} | {B:,} | {kname} | {best2:,.0f} | {best1:,.0f} | {best2 / best1:.2f} |", flush=True)
    if len(kernels) == 2:
        print()
        print("| scenario | B | scenario numba / torch | v1 map numba / torch |")
        print("|---|---:|---:|---:|")
        for v2, _ in pairs:
            for B in a.batch_sizes:
                (t2, t1), (n2, n1) = rows[v2, B, "torch"], rows[v2, B, "numba"]
                print(f"| {v2} | {B:,} | {n2 / t2:.1f}x | {n1 / t1:.1f}x |")


if __name__ == "__main__":
    main()
