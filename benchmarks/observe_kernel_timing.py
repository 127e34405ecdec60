"""Per-call time of the observe stage: torch (``SMACSim._stage_observe``) vs the Numba kernel.

    python benchmarks/observe_kernel_timing.py                   # 2s3z and 27m_vs_30m, B in {1, 64, 1024}
    python benchmarks/observe_kernel_timing.py --maps 2s3z --batch-sizes 1 --seconds 0.5
    python benchmarks/observe_kernel_timing.py --no-compile-times

First it measures the kernel's compile costs in fresh subprocesses with an empty Numba cache
(``NUMBA_CACHE_DIR`` set to a temporary folder): the first call in a process that has to compile
(serial and threaded drivers), then the first call in a second process that loads them from the
cache, each with the time to import the module. Then, per map and batch size, it brings a
simulator to a mid-battle state with random valid actions and times the torch stage and the kernel
on that state in alternating windows (median of the windows' per-call means; both work in place,
and repeating the stage on one state is the same work each time). The "rows" column times the
auto-reset observation of 1/64 of the envs (at least one): ``select`` + features + ``index_copy``
in torch against ``ObserveKernel.observe(st, env_ids, out)``; "fresh" the torch work that makes
those envs' new episodes (``copy_envs_from(_fresh_state(), done)``), which both paths still run.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field

import torch
import tyro

from sc2_envs import make_batched
from sc2_envs.policies import random_actions


@dataclass
class Args:
    maps: list[str] = field(default_factory=lambda: ["2s3z", "27m_vs_30m"])
    """maps to measure"""
    batch_sizes: list[int] = field(default_factory=lambda: [1, 64, 1024])
    """numbers of envs B"""
    seconds: float = 2.0
    """timed wall-clock budget per configuration and path (split into alternating windows)"""
    windows: int = 10
    """alternating torch / kernel windows per configuration"""
    compile_times: bool = True
    """measure the first-use compile and the cached start-up in subprocesses"""


_PROBE = r"""
import json, sys, time
t0 = time.perf_counter()
import torch
from sc2_envs import make_batched
from sc2_envs.sim.numba.features import ObserveKernel
t_import = time.perf_counter() - t0
sim = make_batched("2s3z", num_envs=2, seed=0, kernel="torch")  # compile only the observe kernel below
sim.reset()
out = {}
for parallel in (False, True):
    k = ObserveKernel(sim.features, parallel=parallel)
    st = sim.st.clone()
    a = torch.zeros(2, sim.n_agents, dtype=torch.int64)
    t0 = time.perf_counter()
    k(st, a)
    out["step_parallel" if parallel else "step_serial"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    k.observe(st)
    out["rows_parallel" if parallel else "rows_serial"] = time.perf_counter() - t0
out["import"] = t_import
print(json.dumps(out))
"""


def compile_times() -> None:
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, NUMBA_CACHE_DIR=cache)
        rows = []
        for label in ("first use (compiles)", "second process (cache)"):
            t0 = time.perf_counter()
            res = subprocess.run([sys.executable, "-c", _PROBE], env=env, capture_output=True, text=True, check=True)
            wall = time.perf_counter() - t0
            rows.append((label, json.loads(res.stdout.strip().splitlines()[-1]), wall))
    print("Numba kernel start-up (fresh processes, empty NUMBA_CACHE_DIR; seconds)")
    print(f"{'':24} {'import':>7} {'step ser':>9} {'rows ser':>9} {'step par':>9} {'rows par':>9} {'all 4':>7} {'process':>8}")
    for label, r, wall in rows:
        total = r["step_serial"] + r["rows_serial"] + r["step_parallel"] + r["rows_parallel"]
        print(
            f"{label:24} {r['import']:7.2f} {r['step_serial']:9.3f} {r['rows_serial']:9.3f} "
            f"{r['step_parallel']:9.3f} {r['rows_parallel']:9.3f} {total:7.2f} {wall:8.2f}"
        )
    print()


def _time(fn, budget: float) -> float:
    """Mean seconds per call of ``fn`` over about ``budget`` seconds (at least 3 calls)."""
    n, t0 = 0, time.perf_counter()
    while n < 3 or time.perf_counter() - t0 < budget:
        fn()
        n += 1
    return (time.perf_counter() - t0) / n


def measure(map_name: str, B: int, seconds: float, windows: int) -> dict:
    from sc2_envs.sim.numba.features import ObserveKernel

    sim = make_batched(map_name, num_envs=B, seed=0, loops_per_tick=8, kernel="torch")
    out = sim.reset()
    gen = torch.Generator().manual_seed(0)
    for _ in range(20):  # a mid-battle state, some envs reset
        out = sim.step(random_actions(out["avail_actions"], gen))
    actions = random_actions(out["avail_actions"], gen)
    kern = ObserveKernel(sim.features)
    st_t, st_k = sim.st.clone(), sim.st.clone()
    kern(st_k, actions)  # warm (compile or cache load)
    ids = torch.arange(0, B, 64)
    bufs = kern.observe(st_k)

    def torch_rows():
        sub = st_t.select(ids)
        avail = sim.features.avail_actions(sub)
        bufs["obs"].index_copy(0, ids, sim.features.obs(sub, avail))
        bufs["state"].index_copy(0, ids, sim.features.state(sub))
        bufs["avail_actions"].index_copy(0, ids, avail)

    done = torch.zeros(B, dtype=torch.bool)
    done[ids] = True

    def torch_fresh():  # the auto-reset's new episodes, still torch on both paths
        sim.st.copy_envs_from(sim._fresh_state(), done)

    paths = dict(
        fresh=torch_fresh,
        torch=lambda: sim._stage_observe(st_t, actions),
        numba=lambda: kern(st_k, actions),
        torch_rows=torch_rows,
        numba_rows=lambda: kern.observe(st_k, ids, bufs),
    )
    per = {k: [] for k in paths}
    for _ in range(windows):
        for k, fn in paths.items():
            per[k].append(_time(fn, seconds / windows))
    med = {k: statistics.median(v) for k, v in per.items()}
    return dict(map=map_name, B=B, rows=len(ids), threads_torch=torch.get_num_threads(), **med)


def main(args: Args) -> None:
    import numba

    if args.compile_times:
        compile_times()
    print(
        f"observe stage, per call (median of {args.windows} alternating windows); torch threads as the sim picks, "
        f"numba threads {numba.get_num_threads()}, threaded kernel from B >= 64"
    )
    print(
        f"{'map':12} {'B':>5} {'torch us':>10} {'numba us':>10} {'speedup':>8} {'rows':>5} {'torch rows us':>14} {'numba rows us':>14} {'fresh us':>9}"
    )
    for m in args.maps:
        for B in args.batch_sizes:
            r = measure(m, B, args.seconds, args.windows)
            print(
                f"{m:12} {B:5d} {r['torch'] * 1e6:10.1f} {r['numba'] * 1e6:10.1f} {r['torch'] / r['numba']:7.1f}x "
                f"{r['rows']:5d} {r['torch_rows'] * 1e6:14.1f} {r['numba_rows'] * 1e6:14.1f} {r['fresh'] * 1e6:9.1f}",
                flush=True,
            )


if __name__ == "__main__":
    from sc2_envs.runs import flowing_help

    main(tyro.cli(flowing_help(Args)))
