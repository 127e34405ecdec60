"""Env steps/s and agent steps/s of the embedded simulator for several batch sizes, maps and devices.

Random masked actions are drawn on the sim's device and counted in the timing (as a training loop
would); auto-reset is on. Each configuration is warmed up, then timed over a fixed wall budget.

    python benchmarks/env_throughput.py                       # CPU: B in {1, 64, 1024, 4096}
    python benchmarks/env_throughput.py --devices cpu cuda --compile both
    python benchmarks/env_throughput.py --maps 2s3z --batch-sizes 1 --threads 1
    python benchmarks/env_throughput.py --maps 2s3z --batch-sizes 1 64 256 1024 4096 --threads 0 1 2
    python benchmarks/env_throughput.py --kernel both          # torch vs numba orders/tick stages
    python benchmarks/env_throughput.py --peers --maps 2s3z 3s5z 27m_vs_30m --batch-sizes 1 64 1024 4096

Prints one row per configuration and, per (map, device), the ratio to B=1, and writes a CSV. With
``--kernel both`` it measures the torch and the numba orders/tick kernel (``SMACSim(kernel=...)``)
back to back per configuration and prints numba's speed-up. With several ``--threads`` values it also prints a table of CPU env
steps/s per batch size and torch thread count (0 = the simulator's automatic choice, ``num_threads=None``), with the best count
per B.

``--peers`` instead measures JaxMARL SMAX (jit+vmap over B envs on CPU JAX) and SMAClite (B=1, its
gym env) in the same process as ours, in interleaved windows (ours, SMAX, SMAClite, repeat), and
prints medians, the ratio of ours to SMAX per (map, B), and our simulator's resident memory per env
(psutil RSS growth over the env's creation / B, after the first and the last window, so growth with
run length shows). Peers that are not installed are skipped with the reason; see
``benchmarks/peers.py`` (the ``peers`` extra in pyproject.toml, SMAClite from GitHub).
"""

from __future__ import annotations

import csv
import os
import platform
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch
import tyro

from sc2_envs import list_maps, make_batched
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
    threads: list[int] = field(default_factory=lambda: [0])
    """torch CPU thread counts to sweep (0 = the simulator's automatic choice for B, num_threads=None)"""
    kernel: str = "auto"
    """orders/tick stages: auto | torch | numba | both (numba runs on CPU without --compile only)"""
    out: str = "benchmarks/results/env_throughput.csv"
    """CSV output path"""
    peers: bool = False
    """measure JaxMARL SMAX and SMAClite beside ours in one interleaved run (CPU); writes <out stem>_peers.csv"""
    peer_windows: int = 3
    """--peers: timed windows per simulator and (map, B); medians are reported"""
    peer_window_s: float = 2.0
    """--peers: wall-clock seconds per window (at least one step, or 10 at B < 64, always runs)"""
    peer_settle_s: float = 0.5
    """--peers: idle seconds before each window, so that the previous simulator's worker threads (XLA's
    spin-waiting pool after a SMAX window or compile, OpenMP's after ours) have gone to sleep and
    do not compete with the next one (measured: our 2-thread step at B=64 ran at 9k env steps/s right
    after SMAX's compile, 185k after a 1 s pause)"""


def measure(
    map_name: str,
    B: int,
    device: str,
    compile_: bool,
    loops_per_tick: int,
    seconds: float,
    threads: int = 0,
    kernel: str = "auto",
) -> dict:
    env = make_batched(
        map_name,
        num_envs=B,
        device=device,
        seed=0,
        compile=compile_,
        loops_per_tick=loops_per_tick,
        num_threads=threads or None,
        kernel=kernel,
    )
    env.wait_for_kernel()  # on first use ("auto", empty cache): time the numba path, not a mix with the torch one
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
    return dict(
        map=map_name,
        B=B,
        device=device,
        compile=compile_,
        loops_per_tick=loops_per_tick,
        threads=torch.get_num_threads() if device == "cpu" else 0,
        threads_asked=threads,
        kernel=env.kernel,
        n_agents=env.n_agents,
        env_steps_per_s=steps * B / dt,
        agent_steps_per_s=steps * B * env.n_agents / dt,
        step_ms=1000 * dt / steps,
        warmup_s=warmup,
        episodes=env.get_stats()["battles_game"],
    )


def main(args: Args) -> None:
    if any(t < 0 for t in args.threads):
        raise SystemExit(f"--threads values must be >= 0 (0 = automatic), got {args.threads}")
    if not args.maps:
        raise SystemExit("--maps: expected at least one map name")
    if not args.devices or any(not (d == "cpu" or re.fullmatch(r"cuda(:\d+)?", d)) for d in args.devices):
        raise SystemExit(f"--devices {args.devices}: expected one or more of cpu, cuda, cuda:<index>")
    if any(d.startswith("cuda") for d in args.devices) and not torch.cuda.is_available():
        raise SystemExit("--devices cuda: no CUDA device is visible here; expected --devices cpu")
    if args.loops_per_tick < 1:
        raise SystemExit(f"--loops-per-tick {args.loops_per_tick}; expected >= 1 game loop per tick")
    if Path(args.out).is_dir():
        raise SystemExit(f"--out {args.out!r} is a folder; expected a CSV file path")
    bad_maps = [m for m in args.maps if m not in list_maps()]
    if bad_maps:
        raise SystemExit(f"--maps {bad_maps}: unknown; expected names from {', '.join(list_maps())}")
    if not args.batch_sizes or any(b < 1 for b in args.batch_sizes):
        raise SystemExit(f"--batch-sizes values must be >= 1 envs, got {args.batch_sizes}")
    if args.compile not in ("off", "on", "both"):
        raise SystemExit(f"--compile {args.compile!r}; expected off, on or both")
    if not args.seconds > 0:
        raise SystemExit(f"--seconds {args.seconds}; expected a timed budget > 0 s")
    if args.peers and (args.peer_windows < 1 or not args.peer_window_s > 0 or args.peer_settle_s < 0):
        raise SystemExit(
            f"--peer-windows {args.peer_windows} / --peer-window-s {args.peer_window_s} / --peer-settle-s "
            f"{args.peer_settle_s}: expected >= 1, > 0 and >= 0"
        )
    modes = {"off": [False], "on": [True], "both": [False, True]}[args.compile]
    if args.kernel not in ("auto", "torch", "numba", "both"):
        raise SystemExit(f"--kernel {args.kernel!r}; expected auto, torch, numba or both")
    kernels = ["torch", "numba"] if args.kernel == "both" else [args.kernel]
    print(
        f"env_throughput: maps={args.maps} B={args.batch_sizes} devices={args.devices} compile={modes} "
        f"loops_per_tick={args.loops_per_tick} kernel={kernels} torch={torch.__version__} threads={args.threads} "
        f"cpus={os.cpu_count()} load={'/'.join(f'{v:.1f}' for v in os.getloadavg())} "
        f"cpu={platform.processor() or platform.machine()}"
        + (f" gpu={torch.cuda.get_device_name()}" if torch.cuda.is_available() else ""),
        flush=True,
    )
    if args.peers:
        run_peers(args, modes)
        return
    rows = []
    print(
        f"{'map':>12} {'B':>6} {'device':>6} {'compile':>7} {'kernel':>6} {'threads':>7} {'env steps/s':>13} "
        f"{'agent steps/s':>14} {'ms/step':>8} {'warmup s':>8}"
    )
    for device in args.devices:
        for c in modes:
            for m in args.maps:
                for t in args.threads if device == "cpu" else [0]:
                    base = {}
                    for B in args.batch_sizes:
                        by_kernel = {}
                        for k in kernels:
                            if k == "numba" and (device != "cpu" or c):
                                continue  # the numba kernel runs on CPU without torch.compile only
                            r = measure(m, B, device, c, args.loops_per_tick, args.seconds, t, kernel=k)
                            base.setdefault(k, r["env_steps_per_s"])
                            r["ratio_to_B1"] = r["env_steps_per_s"] / base[k]
                            by_kernel[k] = r["env_steps_per_s"]
                            rows.append(r)
                            label = f"{r['threads']}" + ("*" if t == 0 and device == "cpu" else "")
                            vs = (
                                f"   numba/torch x{by_kernel['numba'] / by_kernel['torch']:.1f}"
                                if k == "numba" and "torch" in by_kernel
                                else ""
                            )
                            print(
                                f"{m:>12} {B:>6} {device:>6} {str(c):>7} {r['kernel']:>6} {label:>7} "
                                f"{r['env_steps_per_s']:>13,.0f} "
                                f"{r['agent_steps_per_s']:>14,.0f} {r['step_ms']:>8.2f} {r['warmup_s']:>8.1f}"
                                f"   x{r['ratio_to_B1']:.1f} vs first B" + vs,
                                flush=True,
                            )
    if len(args.threads) > 1:
        print_thread_table(rows)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    with open(args.out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    print(f"wrote {args.out}")


def print_thread_table(rows: list[dict]) -> None:
    """Env steps/s per (map, compile, B) and thread count on CPU; ``*`` = the simulator's automatic choice."""
    cpu = [r for r in rows if r["device"] == "cpu"]
    for m in dict.fromkeys(r["map"] for r in cpu):
        for c in dict.fromkeys(r["compile"] for r in cpu):
            sel = [r for r in cpu if r["map"] == m and r["compile"] == c]
            cols = sorted({r["threads_asked"] for r in sel})
            names = [
                f"auto({'/'.join(sorted({str(r['threads']) for r in sel if r['threads_asked'] == 0}))})"
                if t == 0
                else f"{t} thr"
                for t in cols
            ]
            print(f"\nthread sweep, {m}, compile={c}: env steps/s (CPU)")
            print(f"{'B':>6} " + " ".join(f"{n:>12}" for n in names) + f" {'best':>8}")
            for B in dict.fromkeys(r["B"] for r in sel):
                vals = {r["threads_asked"]: r["env_steps_per_s"] for r in sel if r["B"] == B}
                auto_t = next((r["threads"] for r in sel if r["B"] == B and r["threads_asked"] == 0), None)
                fixed = {t: v for t, v in vals.items() if t}
                best = max(fixed, key=fixed.get) if fixed else auto_t
                print(
                    f"{B:>6} "
                    + " ".join(f"{vals.get(t, float('nan')):>12,.0f}" for t in cols)
                    + f" {f'{best} thr':>8}"
                    + (f"   (auto picked {auto_t})" if auto_t is not None else "")
                )


class _OursStepper:
    """Our simulator on CPU with random masked actions (as :func:`measure`), for the ``--peers`` windows.

    ``step`` samples the process RSS after every call, so ``peak_rss`` is the largest value seen
    (bytes) since the last :meth:`reset_peak`.
    """

    def __init__(self, map_name: str, B: int, compile_: bool, loops_per_tick: int, threads: int) -> None:
        import psutil

        self._proc = psutil.Process()
        self.num_envs = B
        self.env = make_batched(
            map_name, num_envs=B, device="cpu", seed=0, compile=compile_, loops_per_tick=loops_per_tick,
            num_threads=threads or None,
        )  # fmt: skip
        self.out = self.env.reset()
        self.gen = torch.Generator().manual_seed(0)
        self.peak_rss = 0
        self.step(3)  # warm-up (and compilation)

    def rss(self) -> int:
        """Resident set size of this process, bytes."""
        return self._proc.memory_info().rss

    def reset_peak(self) -> None:
        self.peak_rss = self.rss()

    def step(self, n: int) -> None:
        for _ in range(n):
            self.out = self.env.step(random_actions(self.out["avail_actions"], self.gen))
            self.peak_rss = max(self.peak_rss, self.rss())

    def sync(self) -> None:
        pass


def _load_peers():
    """``benchmarks/peers.py`` as a module, whether this file runs as a script or is imported by path."""
    try:
        import peers
    except ImportError:
        import importlib.util
        import sys

        spec = importlib.util.spec_from_file_location("peers", Path(__file__).with_name("peers.py"))
        peers = importlib.util.module_from_spec(spec)
        sys.modules["peers"] = peers
        spec.loader.exec_module(peers)
    return peers


def run_peers(args: Args, modes: list[bool]) -> list[dict]:
    """``--peers``: ours (each compile mode), SMAX and SMAClite in interleaved windows; medians and ratios.

    For each (map, B): SMAX is built and compiled first (``peers.SMAXStepper``; not timed), then our
    env (RSS measured around its creation and warm-up), then SMAClite at B=1. Windows run in the order
    ours, SMAX, SMAClite, repeated ``--peer-windows`` times, each ``--peer-window-s`` long
    (``peers.time_window``); env steps/s are medians over the windows. Our memory per env is
    (peak RSS during a window - RSS before our env was created) / B, after the first and after the
    last window; equal values mean memory does not grow with run length. Returns the rows (also
    written to ``<out stem>_peers.csv``).
    """
    import gc
    import statistics

    import psutil

    peers = _load_peers()
    smax_mod, smax_reason = peers.import_smax()
    lite_mod, lite_reason = peers.import_smaclite()
    jax_info = ""
    if smax_mod is not None:
        import jax

        jax_info = (
            f" jax={jax.__version__} jax_devices={[str(d) for d in jax.devices()]} "
            f"jaxmarl={getattr(smax_mod, '__version__', '?')}"
        )
    print(
        f"peers: {args.peer_windows} interleaved windows of {args.peer_window_s} s per simulator and (map, B), "
        f"{args.peer_settle_s} s idle before each; "
        f"medians; ours on CPU, torch threads auto={args.threads == [0]}{jax_info}"
        + (f"\n  SMAX skipped: {smax_reason}" if smax_reason else "")
        + (f"\n  SMAClite skipped: {lite_reason}" if lite_reason else ""),
        flush=True,
    )
    proc = psutil.Process()
    rows = []
    names = [f"ours{'+compile' if c else ''}" for c in modes]
    print(
        f"{'map':>12} {'B':>6} "
        + " ".join(f"{n:>14}" for n in names)
        + f" {'SMAX':>10} {'SMAClite':>9} "
        + " ".join(f"{n + '/SMAX':>13}" for n in names)
        + f" {'MiB/env w1':>10} {'MiB/env wN':>10} {'threads':>7}",
        flush=True,
    )
    for m in args.maps:
        if smax_mod is not None and m not in peers.SMAX_MAPS:
            print(f"  {m}: SMAX has no such scenario (it has {', '.join(peers.SMAX_MAPS)})", flush=True)
        if lite_mod is not None and m not in peers.SMACLITE_MAPS:
            print(f"  {m}: SMAClite has no such map (it has {', '.join(peers.SMACLITE_MAPS)})", flush=True)
        for B in args.batch_sizes:
            smax = lite = None
            if smax_mod is not None:
                if m in peers.SMAX_MAPS:
                    smax = peers.SMAXStepper(m, B, seed=0)
            if lite_mod is not None and B == 1 and m in peers.SMACLITE_MAPS:
                lite = peers.SMACliteStepper(m, seed=0)
            gc.collect()
            rss0 = proc.memory_info().rss
            ours = [_OursStepper(m, B, c, args.loops_per_tick, args.threads[0]) for c in modes]
            chunk = 10 if B < 64 else 1
            rates: dict[str, list[float]] = {n: [] for n in names + ["SMAX", "SMAClite"]}
            mem = []
            for _ in range(args.peer_windows):
                for n, o in zip(names, ours, strict=True):
                    time.sleep(args.peer_settle_s)
                    o.reset_peak()
                    rates[n].append(peers.time_window(o, args.peer_window_s, chunk))
                mem.append(max(o.peak_rss for o in ours) - rss0)
                if smax is not None:
                    time.sleep(args.peer_settle_s)
                    rates["SMAX"].append(peers.time_window(smax, args.peer_window_s, chunk))
                if lite is not None:
                    time.sleep(args.peer_settle_s)
                    rates["SMAClite"].append(peers.time_window(lite, args.peer_window_s, 10))
            med = {k: statistics.median(v) if v else float("nan") for k, v in rates.items()}
            row = dict(
                map=m,
                B=B,
                **{f"{n}_env_steps_per_s": med[n] for n in names},
                smax_env_steps_per_s=med["SMAX"],
                smaclite_env_steps_per_s=med["SMAClite"],
                **{f"{n}_over_smax": med[n] / med["SMAX"] for n in names},
                ours_mib_per_env_first_window=mem[0] / B / 2**20,
                ours_mib_per_env_last_window=mem[-1] / B / 2**20,
                torch_threads=torch.get_num_threads(),
                windows=args.peer_windows,
                window_s=args.peer_window_s,
                raw=repr({k: [round(x) for x in v] for k, v in rates.items() if v}),
            )
            rows.append(row)
            print(
                f"{m:>12} {B:>6} "
                + " ".join(f"{med[n]:>14,.0f}" for n in names)
                + f" {med['SMAX']:>10,.0f} {med['SMAClite']:>9,.0f} "
                + " ".join(f"{med[n] / med['SMAX']:>12.3f}x" for n in names)
                + f" {row['ours_mib_per_env_first_window']:>10.4f} {row['ours_mib_per_env_last_window']:>10.4f}"
                + f" {row['torch_threads']:>7}",
                flush=True,
            )
            del ours, smax, lite
            gc.collect()
    print(f"load average at the end: {'/'.join(f'{v:.1f}' for v in os.getloadavg())}")
    out = Path(args.out)
    out = out.with_name(out.stem + "_peers.csv")
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    print(f"wrote {out}")
    return rows


if __name__ == "__main__":
    from sc2_envs.training.cli import flowing_help

    main(tyro.cli(flowing_help(Args)))
