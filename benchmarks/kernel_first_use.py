"""First use of the numba kernels: seconds spent compiling them with an empty on-disk cache.

Each variant (this checkout, and optionally other source trees given with ``--baseline-tree``) runs
in a fresh process with its own empty ``NUMBA_CACHE_DIR``; the process makes each configuration in
turn (``map:B``, e.g. ``2s3z:1 2s3z:256``), resets it and plays ``--steps`` random masked steps,
and reports the CPU seconds (user + system; the compiler runs on one thread, so this is less
sensitive to other load on the machine than wall time) and the wall seconds of each. A second
process on the now warm cache shows what every later run pays. Variants alternate for
``--rounds`` rounds, so that a change of load hits them alike; medians are printed:

    python benchmarks/kernel_first_use.py --configs 2s3z:1 2s3z:256 --rounds 2 \\
        --baseline-tree /path/to/a/worktree/of/an/older/commit

``--background`` measures what a user of ``kernel="auto"`` waits for instead: this checkout from an
empty cache with the compile in a background thread (``sim.runtime.warmup``; the torch path plays
meanwhile) against the foreground compile (``SC2_ENVS_BACKGROUND_COMPILE=0``), alternating; for each
configuration the wall seconds until the first step returns and until the numba path is in effect,
and the env steps the torch path played in between:

    python benchmarks/kernel_first_use.py --background --configs 2s3z:1 2s3z:256 --rounds 2

``--processes N`` measures processes that start together on one empty cache (``SubprocVectorEnv``
workers, A3C actors, several runs), each with ``kernel="auto"`` and the background compile: this
checkout and every ``--baseline-tree`` in turn, N processes at once per variant and round; the wall
seconds until the first and the last process is on the numba path, and the CPU seconds of all N::

    python benchmarks/kernel_first_use.py --processes 4 --configs 2s3z:1 --rounds 2 \
        --baseline-tree /path/to/a/worktree/of/an/older/commit
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import tyro

REPO = Path(__file__).resolve().parents[1]

# the child: import, then each configuration; one JSON line per configuration
_CHILD = r"""
import json, resource, sys, time
def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime
c, w = cpu(), time.perf_counter()
import torch, sc2_envs
from sc2_envs.policies import random_actions
print(json.dumps({"config": "import", "cpu_s": cpu() - c, "wall_s": time.perf_counter() - w}), flush=True)
steps = int(sys.argv[1])
for spec in sys.argv[2:]:
    name, B = spec.rsplit(":", 1)
    c, w = cpu(), time.perf_counter()
    env = sc2_envs.make_batched(name, num_envs=int(B), seed=0, kernel="numba", num_threads=2)
    out = env.reset()
    g = torch.Generator().manual_seed(0)
    for _ in range(steps):
        out = env.step(random_actions(out["avail_actions"], g))
    print(json.dumps({"config": spec, "cpu_s": cpu() - c, "wall_s": time.perf_counter() - w}), flush=True)
"""

# the child of --background: kernel="auto" as a user gets it; when does the first step return, when is the
# numba path in effect, and how many steps did the torch path play meanwhile
_CHILD_BACKGROUND = r"""
import json, os, sys, time
w0 = time.perf_counter()
import torch, sc2_envs
from sc2_envs.policies import random_actions
print(json.dumps({"config": "import", "wall_s": time.perf_counter() - w0}), flush=True)
steps = int(sys.argv[1])
for spec in sys.argv[2:]:
    name, B = spec.rsplit(":", 1)
    w = time.perf_counter()
    env = sc2_envs.make_batched(name, num_envs=int(B), seed=0)
    g = torch.Generator().manual_seed(0)
    out = env.reset()
    out = env.step(random_actions(out["avail_actions"], g))
    first = time.perf_counter() - w
    torch_steps = int(env.kernel == "torch")
    while env.kernel == "torch" and env._awaiting is not None:
        out = env.step(random_actions(out["avail_actions"], g))
        torch_steps += env.kernel == "torch"
    ready = time.perf_counter() - w
    for _ in range(steps):
        out = env.step(random_actions(out["avail_actions"], g))
    print(json.dumps({"config": spec, "first_step_s": first, "ready_s": ready, "torch_steps": torch_steps,
                      "kernel": env.kernel}), flush=True)
"""


@dataclass
class Args:
    configs: list[str] = field(default_factory=lambda: ["2s3z:1", "2s3z:256"])
    """configurations made in turn in one process, ``map:num_envs`` (SMAC v1 maps or SMACv2 scenarios)"""
    steps: int = 3
    """random masked env steps per configuration after its reset"""
    rounds: int = 2
    """alternating rounds of every variant; the median is printed"""
    baseline_tree: list[str] = field(default_factory=list)
    """other source trees (e.g. a ``git worktree`` of an older commit) measured the same way"""
    background: bool = False
    """instead: this checkout's ``kernel="auto"`` with an empty cache, compiling in the background
    (``sim.runtime.warmup``) against in the foreground (``SC2_ENVS_BACKGROUND_COMPILE=0``), alternating:
    wall seconds until the first step returns and until the numba path is in effect, and the steps
    the torch path played meanwhile"""
    processes: int = 0
    """instead (when >= 1): this many processes at once per variant on one empty cache, each with
    ``kernel="auto"`` and the background compile; wall seconds until the first / last is on the numba
    path and the CPU seconds of all of them (variants: this checkout and ``--baseline-tree``)"""


def check_args(args: Args) -> None:
    """Raise ValueError naming a bad configuration, count or tree."""
    from sc2_envs.maps import list_maps
    from sc2_envs.smacv2 import is_scenario

    for spec in args.configs:
        name, sep, b = spec.rpartition(":")
        if not sep or not name or not b.isdigit() or int(b) < 1:
            raise ValueError(f"--configs entries are map:num_envs with num_envs >= 1, got {spec!r}")
        if name not in list_maps() and not is_scenario(name):
            raise ValueError(f"--configs {spec!r}: {name!r} is neither a SMAC v1 map nor a SMACv2 scenario")
    if args.steps < 0 or args.rounds < 1:
        raise ValueError(f"need --steps >= 0 and --rounds >= 1, got {args.steps} and {args.rounds}")
    if args.background and args.baseline_tree:
        raise ValueError("--background measures this checkout only; drop --baseline-tree")
    if args.processes < 0 or (args.processes and args.background):
        raise ValueError(
            f"--processes {args.processes}: expected a count >= 1 of processes started together (and not with "
            "--background, which compares foreground and background in one process), or 0 to leave it off"
        )
    for tree in args.baseline_tree:
        if not (Path(tree) / "sc2_envs" / "__init__.py").is_file():
            raise ValueError(f"--baseline-tree {tree!r} holds no sc2_envs package")


def run_child(tree: Path, cache_dir: str, args: Args, background: bool | None = None) -> dict[str, dict[str, float]]:
    """One process on ``tree``'s sources with ``cache_dir`` as Numba's cache: ``{config: {cpu_s, wall_s}}``
    (``background`` True / False: the ``--background`` child with ``SC2_ENVS_BACKGROUND_COMPILE`` 1 / 0,
    ``{config: {first_step_s, ready_s, torch_steps, kernel}}``)."""
    env = dict(os.environ, NUMBA_CACHE_DIR=cache_dir, PYTHONPATH=str(tree))
    child = _CHILD
    if background is not None:
        env["SC2_ENVS_BACKGROUND_COMPILE"] = "1" if background else "0"
        child = _CHILD_BACKGROUND
    proc = subprocess.run(
        [sys.executable, "-c", child, str(args.steps), *args.configs],
        cwd=tempfile.gettempdir(),  # not a source tree: PYTHONPATH decides which sc2_envs is imported
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(f"the child on {tree} failed (rc {proc.returncode}):\n{proc.stderr[-2000:]}")
    rows = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    return {r.pop("config"): r for r in rows}


def run_together(tree: Path, cache_dir: str, args: Args) -> tuple[list[dict[str, dict]], float]:
    """``--processes``: that many ``--background`` children at once on ``tree`` with one ``cache_dir``
    and the background compile on; returns each child's ``{config: {...}}`` and the CPU seconds
    (user + system) all of them used."""
    import resource

    env = dict(os.environ, NUMBA_CACHE_DIR=cache_dir, PYTHONPATH=str(tree), SC2_ENVS_BACKGROUND_COMPILE="1")

    def children_cpu() -> float:
        r = resource.getrusage(resource.RUSAGE_CHILDREN)
        return r.ru_utime + r.ru_stime

    before = children_cpu()
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _CHILD_BACKGROUND, str(args.steps), *args.configs],
            cwd=tempfile.gettempdir(),
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(args.processes)
    ]
    outs = [p.communicate() for p in procs]
    cpu = children_cpu() - before
    runs = []
    for p, (out, err) in zip(procs, outs, strict=True):
        if p.returncode != 0:
            raise RuntimeError(f"a child on {tree} failed (rc {p.returncode}):\n{err[-2000:]}")
        rows = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
        runs.append({r.pop("config"): r for r in rows})
    return runs, cpu


def main_together(args: Args) -> dict:
    """``--processes N``: N processes at once per variant (this checkout, ``--baseline-tree``), alternating."""
    trees = {"this checkout": REPO, **{f"baseline {i + 1}": Path(t).resolve() for i, t in enumerate(args.baseline_tree)}}
    print(
        f"kernel_first_use --processes {args.processes}: configs {' '.join(args.configs)} made in turn in each of "
        f"{args.processes} processes started together on one empty cache, kernel='auto' with the background compile, "
        f"{args.rounds} rounds; variants: {', '.join(f'{k} ({v})' for k, v in trees.items())}; load "
        f"{os.getloadavg()[0]:.1f}",
        flush=True,
    )
    results: dict = {k: [] for k in trees}
    for r in range(args.rounds):
        for name, tree in trees.items():
            with tempfile.TemporaryDirectory(prefix="numba_cache_") as cache:
                runs, cpu = run_together(tree, cache, args)
            last = args.configs[-1]
            ready = sorted(run[last]["ready_s"] for run in runs)
            results[name].append({"first_ready_s": ready[0], "last_ready_s": ready[-1], "cpu_s": cpu})
            print(
                f"  round {r + 1} {name}: {last} on the numba path from {ready[0]:.1f} s (first process) to "
                f"{ready[-1]:.1f} s (last); {cpu:.0f} CPU s in all",
                flush=True,
            )
    print(f"\nmedian over {args.rounds} rounds (wall seconds from make_batched of the last configuration):")
    for name, rows in results.items():
        first, last, cpu = (statistics.median(row[k] for row in rows) for k in ("first_ready_s", "last_ready_s", "cpu_s"))
        print(
            f"  {name:>14}: numba path from {first:.1f} s (first) / {last:.1f} s (last of {args.processes}), {cpu:.0f} CPU s"
        )
    return results


def main_background(args: Args) -> dict:
    """``--background``: foreground and background compile of this checkout, alternating, each from an empty cache."""
    print(
        f"kernel_first_use --background: configs {' '.join(args.configs)} made in turn in one process, kernel='auto', "
        f"{args.rounds} rounds, each from an empty cache; load {os.getloadavg()[0]:.1f}",
        flush=True,
    )
    results: dict = {"foreground": [], "background": []}
    for r in range(args.rounds):
        for name in results:
            with tempfile.TemporaryDirectory(prefix="numba_cache_") as cache:
                run = run_child(REPO, cache, args, background=name == "background")
            results[name].append(run)
            cells = [f"{spec}: first step {run[spec]['first_step_s']:.1f} s, numba from {run[spec]['ready_s']:.1f} s "
                     f"({run[spec]['torch_steps']} torch steps)" for spec in args.configs]  # fmt: skip
            print(f"  round {r + 1} {name}: " + " | ".join(cells), flush=True)
    print(
        f"\nmedian wall seconds over {args.rounds} rounds (from make_batched; import "
        f"{statistics.median(run['import']['wall_s'] for run in results['background']):.1f} s before):"
    )
    for name, runs in results.items():
        cells = []
        for spec in args.configs:
            first = statistics.median(run[spec]["first_step_s"] for run in runs)
            ready = statistics.median(run[spec]["ready_s"] for run in runs)
            steps = statistics.median(run[spec]["torch_steps"] for run in runs)
            cells.append(
                f"{spec} first step {first:.1f}, numba path from {ready:.1f}, {steps:.0f} env steps on torch meanwhile"
            )
        print(f"  {name:>10}: " + " | ".join(cells))
    return results


def main(args: Args) -> dict:
    check_args(args)
    if args.background:
        return main_background(args)
    if args.processes:
        return main_together(args)
    trees = {"this checkout": REPO, **{f"baseline {i + 1}": Path(t).resolve() for i, t in enumerate(args.baseline_tree)}}
    print(
        f"kernel_first_use: configs {' '.join(args.configs)}, {args.steps} steps each, {args.rounds} rounds, "
        f"variants: {', '.join(f'{k} ({v})' for k, v in trees.items())}; load {os.getloadavg()[0]:.1f}",
        flush=True,
    )
    results: dict = {k: {"cold": [], "warm": []} for k in trees}
    for r in range(args.rounds):
        for name, tree in trees.items():
            with tempfile.TemporaryDirectory(prefix="numba_cache_") as cache:
                cold = run_child(tree, cache, args)
                warm = run_child(tree, cache, args)
            results[name]["cold"].append(cold)
            results[name]["warm"].append(warm)
            total = sum(v["cpu_s"] for k, v in cold.items() if k != "import")
            print(f"  round {r + 1} {name}: empty cache {total:.1f} CPU s, warm cache "
                  f"{sum(v['cpu_s'] for k, v in warm.items() if k != 'import'):.1f} CPU s", flush=True)  # fmt: skip
    print(f"\nmedian CPU seconds (wall in brackets) over {args.rounds} rounds, per configuration in order:")
    for name in trees:
        for kind in ("cold", "warm"):
            cells = []
            for spec in args.configs:
                cpu = statistics.median(run[spec]["cpu_s"] for run in results[name][kind])
                wall = statistics.median(run[spec]["wall_s"] for run in results[name][kind])
                cells.append(f"{spec} {cpu:.1f} ({wall:.1f})")
            label = "empty cache" if kind == "cold" else "warm cache "
            print(f"  {name:>14} {label}: " + " | ".join(cells))
    return results


if __name__ == "__main__":
    from sc2_envs.training.cli import flowing_help

    try:
        main(tyro.cli(flowing_help(Args)))
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None
