"""Serial, threaded and automatically chosen numba step calls, on an idle and on a loaded machine.

The numba step (``sim.numba.step``) can run a batch serially or in chunks on threads (``runtime.chunks``);
``sim.runtime.schedule.ScheduleChooser`` picks by measured call time. This script measures env
steps/s of the three settings per batch size, first as the machine is, then with ``--busy``
competing processes that each keep one core busy (a plain Python loop), so that the cost of a
fork/join whose threads wait for a preempted peer shows:

    python benchmarks/kernel_schedule.py --maps 2s3z --batch-sizes 32 64 256 1024 4096 --busy 1

Settings are timed back to back in ``--rounds`` interleaved rounds of ``--seconds`` each; the best
round is reported (the least disturbed by other work). Random masked actions, auto-reset on.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import time
from dataclasses import dataclass, field

import numba
import torch
import tyro

import sc2_envs
from sc2_envs.policies import random_actions
from sc2_envs.sim.runtime.schedule import SERIAL, THREADED, ScheduleChooser


@dataclass
class Args:
    maps: list[str] = field(default_factory=lambda: ["2s3z"])
    """maps to measure"""
    batch_sizes: list[int] = field(default_factory=lambda: [32, 64, 256, 1024, 4096])
    """numbers of envs B"""
    busy: int = 1
    """competing busy processes in the loaded phase (0: idle phase only)"""
    seconds: float = 1.5
    """wall-clock seconds per timed window"""
    rounds: int = 2
    """interleaved rounds per setting; the best is reported"""


class _Forced(ScheduleChooser):
    """A chooser that always answers one kind (the fixed settings)."""

    def __init__(self, kind: int) -> None:
        super().__init__()
        self.kind = kind

    def choose(self) -> int:
        return self.kind


def _spin() -> None:
    while True:
        pass


def _rate(env, out, gen, seconds: float, setting: str) -> tuple[float, dict]:
    k = env._step_kernel
    if setting != "auto":  # StepKernel keeps a chooser made for its (B, threads)
        k._schedule = _Forced(SERIAL if setting == "serial" else THREADED)
        k._schedule_key = (env.num_envs, numba.get_num_threads())
    for _ in range(3):
        out = env.step(random_actions(out["avail_actions"], gen))
    n, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        out = env.step(random_actions(out["avail_actions"], gen))
        n += 1
    return n * env.num_envs / (time.perf_counter() - t0), out


def measure(args: Args, phase: str) -> None:
    for m in args.maps:
        for B in args.batch_sizes:
            env = sc2_envs.make_batched(m, num_envs=B, seed=0, kernel="numba")
            out, gen = env.reset(), torch.Generator().manual_seed(0)
            best = {s: 0.0 for s in ("serial", "threaded", "auto")}
            for _ in range(args.rounds):
                for s in best:
                    if s == "auto":
                        env._step_kernel._schedule = None  # a fresh chooser, as a new simulator has
                    r, out = _rate(env, out, gen, args.seconds, s)
                    best[s] = max(best[s], r)
            print(
                f"{phase:>6} {m:>12} {B:>6} {best['serial']:>12,.0f} {best['threaded']:>12,.0f} {best['auto']:>12,.0f}"
                f" {best['threaded'] / best['serial']:>9.2f} {best['auto'] / max(best['serial'], best['threaded']):>9.2f}",
                flush=True,
            )


def check_args(args: Args) -> None:
    """Exit with a message naming the bad value (before anything is built)."""
    import math

    from sc2_envs import list_maps

    bad = [m for m in args.maps if m not in list_maps()]
    if not args.maps or bad:
        raise SystemExit(f"--maps {args.maps}: expected one or more of {', '.join(list_maps())}")
    if not args.batch_sizes or any(b < 1 for b in args.batch_sizes):
        raise SystemExit(f"--batch-sizes {args.batch_sizes}: expected one or more ints >= 1")
    if not (math.isfinite(args.seconds) and args.seconds > 0):
        raise SystemExit(f"--seconds {args.seconds}: expected a finite number > 0")
    if args.rounds < 1 or args.busy < 0:
        raise SystemExit(f"--rounds {args.rounds} / --busy {args.busy}: expected >= 1 / >= 0")


def main(args: Args) -> None:
    check_args(args)
    print(
        f"kernel_schedule: maps={args.maps} B={args.batch_sizes} busy={args.busy} seconds={args.seconds} "
        f"rounds={args.rounds} numba threads={numba.get_num_threads()} ({numba.config.THREADING_LAYER}) "
        f"cpus={os.cpu_count()} load={'/'.join(f'{x:.1f}' for x in os.getloadavg())} probe_every={ScheduleChooser().probe_every}",
        flush=True,
    )
    print(f"{'phase':>6} {'map':>12} {'B':>6} {'serial':>12} {'threaded':>12} {'auto':>12} {'thr/ser':>9} {'auto/best':>9}")
    measure(args, "idle")
    if args.busy:
        procs = [mp.Process(target=_spin, daemon=True) for _ in range(args.busy)]
        for p in procs:
            p.start()
        try:
            time.sleep(0.5)
            measure(args, f"busy{args.busy}")
        finally:
            for p in procs:
                p.terminate()
                p.join()
    print(f"load at the end: {'/'.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    from sc2_envs.runs import flowing_help

    main(tyro.cli(flowing_help(Args)))
