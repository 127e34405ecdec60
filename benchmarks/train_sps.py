"""Training throughput of ``algos/happo_gnn.py`` (or ``--script hatrpo_gnn.py``): env steps per second of whole runs,
interleaved.

Each variant is a set of extra flags for the training script; a baseline may be another checkout
of this repository (e.g. an older commit in a ``git worktree``), run with its own defaults. The
variants run one after another, round after round, in fresh processes (so a busy spell of a shared
machine hits every variant alike), each writing its run folder under a temporary directory; the
table gives the median over rounds of the final ``sps=`` the script prints (CleanRL's
``charts/SPS``: env steps over the wall time since the start; the runs here evaluate only after
their last iteration, so neither figure holds evaluation time), of the steady SPS after the first
``--skip-iterations`` iterations (close to what a long run such as the default 2M env steps
reports, where the first iteration's one-time work, e.g. loading the kernel cache, weighs nothing;
such a run also evaluates 32 episodes every 10,240 env steps, the defaults' 4 iterations), the env
share, and each variant's ratios to the baseline (or, without one, to the first variant). The
steady SPS comes from the progress lines alone (:func:`steady_sps`), so any checkout can be timed.

Example (the README's main job, HAPPO-GNN on 2s3z; the baseline is the commit before the compiled kernels, whose
networks are 64 wide, so the variants are too: today's default is 32)::

    git worktree add /tmp/wt_old 65dab88
    python benchmarks/train_sps.py --map 2s3z --rounds 2 --baseline-tree /tmp/wt_old \\
        --variants "default=--hidden 64" "one-thread-one-pass=--hidden 64 --torch-threads 1 --pass-rows 1000000000"

The training scripts' allocator tuning against glibc's defaults (a variant's leading ``VAR=value``
words set its environment)::

    python benchmarks/train_sps.py --map 2s3z --rounds 2 --total-timesteps 102400 \\
        --variants "default=" "glibc-defaults=SC2_ENVS_KEEP_FREED_MEMORY=0"

HATRPO's two forms of the Fisher-vector product (the same matrix up to float rounding)::

    python benchmarks/train_sps.py --script hatrpo_gnn.py --total-timesteps 10240 --rounds 2 \\
        --variants "gauss-newton=--num-envs 64" "double-backward=--num-envs 64 --fisher-product double-backward"
"""

from __future__ import annotations

import math
import os
import re
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import tyro

from sc2_envs.training.progress import plural

REPO = Path(__file__).resolve().parents[1]
SCRIPTS = ("happo_gnn.py", "hatrpo_gnn.py")
"""The scripts of ``algos/`` this benchmark can time: they take ``--map``, ``--total-timesteps``,
``--eval-interval``, ``--eval-episodes``, ``--no-save-model`` and print ``sps=`` per iteration
(the progress line of ``sc2_envs.training.progress``)."""


@dataclass
class Args:
    script: str = "happo_gnn.py"
    """the training script in ``algos/`` of every tree: ``happo_gnn.py`` or ``hatrpo_gnn.py``"""
    map: str = "2s3z"
    """the map of every run"""
    total_timesteps: int = 30720
    """env steps of each run (12 iterations of the default 64 envs x 40 steps)"""
    rounds: int = 2
    """times each variant runs (interleaved with the others); the table gives medians"""
    variants: list[str] = field(default_factory=lambda: ["default="])
    """``name=flags`` of this checkout's script, e.g. ``"one-thread=--torch-threads 1"``; leading ``VAR=value`` words
    set environment variables of that variant's runs, e.g. ``"glibc-defaults=SC2_ENVS_KEEP_FREED_MEMORY=0"``"""
    baseline_tree: str = ""
    """another checkout of the repository, run with its defaults as the baseline of the ratios ("" none)"""
    timeout_s: float = 900.0
    """per run; a run past it fails the benchmark (the table of the runs finished so far is printed)"""
    skip_iterations: int = 1
    """iterations left out of the steady SPS (the first one holds the one-time work); runs need more than this"""
    side_by_side: int = 1
    """copies of each run started at the same moment (several seeds sharing the machine, e.g. 2 on 2 cores); each
    copy's figures count as one sample of the variant"""


SPS = re.compile(r"sps=(\d+)(?: env=(\d+)%)?")
ITERATION = re.compile(r"^iteration (\d+)/\d+ step (\d+) .*?\bsps=(\d+)", re.M)
STEADY_TOLERANCE = 0.01
"""The largest relative error :func:`steady_sps` accepts from the rounding of its time marks."""
ENV_SETTING = re.compile(r"[A-Z_][A-Z0-9_]*=")
SHOWN_ENVIRONMENT = (
    "SC2_ENVS_", "OMP_", "MKL_", "KMP_", "GOMP_", "NUMBA_", "TORCH", "PYTORCH_", "MALLOC_", "GLIBC_TUNABLES",
    "LD_PRELOAD", "ONEDNN_", "DNNL_", "OPENBLAS_", "PYTHONMALLOC",
)  # fmt: skip
"""Prefixes of the variables, set in the shell, that apply to every run and may change its speed; the
header names those set, so that the table's figures are not read as taken without them."""


class RunFigures(NamedTuple):
    """One run's figures: ``sps`` the final ``sps=`` (env steps/s since the start), ``steady`` env steps/s
    after the first ``--skip-iterations`` iterations (None when the run had no more), ``env_share`` in %
    (None when the script does not print it)."""

    sps: int
    steady: float | None
    env_share: int | None


def parse_variant(text: str) -> tuple[str, list[str]]:
    """``"name=--flag value"`` -> ``(name, ["--flag", "value"])``.

    Raises:
        ValueError: no ``=``, an empty name or one with ``|`` (it would break the Markdown table), or
            words that are neither leading upper-case ``VAR=value`` settings nor flags (the first word
            after the settings must start with ``-``), e.g. a lower-case ``omp_num_threads=1``.
    """
    name, sep, flags = text.partition("=")
    if not sep or not name or "|" in name:
        raise ValueError(f"--variants {text!r}: expected name=flags (flags may be empty, no '|' in the name), e.g. 'default='")
    words = flags.split()
    _, rest = split_env(words)
    if rest and not rest[0].startswith("-"):
        raise ValueError(
            f"--variants {text!r}: {rest[0]!r} is neither a setting (upper-case VAR=value, before the flags) nor a flag "
            "(starting with '-')"
        )
    return name, words


def split_env(words: list[str]) -> tuple[dict[str, str], list[str]]:
    """A variant's leading ``VAR=value`` words (upper-case names, as shells write them) -> ``(environment, flags)``.

    ``["SC2_ENVS_KEEP_FREED_MEMORY=0", "--torch-threads", "1"]`` -> ``({"SC2_ENVS_KEEP_FREED_MEMORY": "0"},
    ["--torch-threads", "1"])``; a ``VAR=value`` word after the first flag stays a flag value.

    Raises:
        ValueError: a ``PYTHONPATH=`` setting (each run's ``PYTHONPATH`` is its tree, so that it imports that
            checkout's ``sc2_envs``; time another checkout with ``--baseline-tree``).
    """
    env: dict[str, str] = {}
    for i, word in enumerate(words):
        if not ENV_SETTING.match(word):
            return env, words[i:]
        var, _, value = word.partition("=")
        if var == "PYTHONPATH":
            raise ValueError(
                f"--variants setting {word!r}: PYTHONPATH is each run's tree (its own sc2_envs); "
                "time another checkout with --baseline-tree"
            )
        env[var] = value
    return env, []


def shell_settings_line(environ: Mapping[str, str]) -> str:
    """The header line naming the speed-relevant variables (:data:`SHOWN_ENVIRONMENT`) set in ``environ``."""
    shared = sorted(f"{k}={v}" for k, v in environ.items() if k.startswith(SHOWN_ENVIRONMENT))
    kinds = ", ".join(p + "*" for p in SHOWN_ENVIRONMENT)
    return f"set in the shell, for every variant unless its own VAR= overrides it ({kinds}): {' '.join(shared) or 'none'}"


def time_mark(step: int, sps: int) -> tuple[float, float]:
    """The interval ``(low, high)`` of wall seconds since the start ``t`` at which a progress line's ``sps``
    was taken: the scripts print ``sps=int(step / t)``, so ``step / (sps + 1) < t <= step / sps`` (no upper
    bound when ``sps`` is 0). (The line's ``(N s)`` is not used: older checkouts count it from another
    moment than ``sps``.)"""
    return step / (sps + 1), (step / sps if sps > 0 else math.inf)


def steady_sps(stdout: str, skip: int, tolerance: float = STEADY_TOLERANCE) -> float | None:
    """Env steps/s from the end of iteration ``skip`` to the last iteration of a run's progress lines.

    Each line ``iteration I/N step S ... sps=P`` gives the time since the start to within the rounding
    of ``P`` (:func:`time_mark`); ``skip = 0`` measures from the start. Returns None
    when the lines have no iteration after ``skip`` or lack the line of iteration ``skip`` (a resumed
    run's log), or when the rounding could move the figure by more than ``tolerance`` (relative; e.g.
    tiny iterations after a long first one).

    Raises:
        ValueError: ``skip`` < 0.
    """
    if skip < 0:
        raise ValueError(f"skip={skip}: expected an iteration count >= 0")
    lines = {int(i): (int(step), time_mark(int(step), int(sps))) for i, step, sps in ITERATION.findall(stdout)}
    start = (0, (0.0, 0.0)) if skip == 0 else lines.get(skip)
    last = max(lines, default=0)
    if start is None or last <= skip:
        return None
    (s0, (lo0, hi0)), (s1, (lo1, hi1)) = start, lines[last]
    t0, t1 = (lo0 + hi0) / 2, (lo1 + hi1) / 2
    if not t1 > t0 or ((hi0 - lo0) + (hi1 - lo1)) / 2 > tolerance * (t1 - t0):
        return None
    return (s1 - s0) / (t1 - t0)


def run_once(tree: Path, args: Args, flags: list[str], workdir: Path) -> RunFigures:
    """One training run of ``tree``'s script and its figures."""
    settings, flags = split_env(flags)
    cmd = [
        sys.executable,
        str(tree / "algos" / args.script),
        "--map",
        args.map,
        "--total-timesteps",
        str(args.total_timesteps),
        "--eval-interval",
        "1000",
        "--eval-episodes",
        "1",
        "--no-save-model",
        *flags,
    ]
    env = {**os.environ, **settings, "PYTHONPATH": str(tree)}
    try:  # on any exception (also SIGTERM, see __main__) subprocess.run kills the child before raising
        out = subprocess.run(cmd, cwd=workdir, env=env, capture_output=True, text=True, timeout=args.timeout_s)
    except subprocess.TimeoutExpired:
        shown = " ".join([*(f"{k}={v}" for k, v in settings.items()), *cmd])
        raise RuntimeError(f"{shown} ran past --timeout-s {args.timeout_s:g} and was stopped") from None
    found = SPS.findall(out.stdout)
    if out.returncode != 0 or not found:
        tail = (out.stdout + out.stderr)[-2000:]
        shown = " ".join([*(f"{k}={v}" for k, v in settings.items()), *cmd])
        raise RuntimeError(f"{shown} failed (exit {out.returncode}):\n{tail}")
    sps, share = found[-1]
    return RunFigures(int(sps), steady_sps(out.stdout, args.skip_iterations), int(share) if share else None)


def run_copies(tree: Path, args: Args, flags: list[str], workdir: Path) -> list[RunFigures]:
    """``--side-by-side`` copies of one run started together (each in its own folder); their figures in copy order."""
    if args.side_by_side == 1:
        return [run_once(tree, args, flags, workdir)]
    folders = [workdir / f"copy_{k}" for k in range(args.side_by_side)]
    for folder in folders:
        folder.mkdir(exist_ok=True)
    with ThreadPoolExecutor(max_workers=args.side_by_side) as pool:  # threads only wait on the child processes
        return list(pool.map(lambda folder: run_once(tree, args, flags, folder), folders))


def main(args: Args) -> None:
    if args.rounds < 1:
        raise SystemExit(f"--rounds {args.rounds}: expected an integer >= 1")
    if args.side_by_side < 1:
        raise SystemExit(f"--side-by-side {args.side_by_side}: expected an integer >= 1")
    if args.skip_iterations < 0:
        raise SystemExit(f"--skip-iterations {args.skip_iterations}: expected an iteration count >= 0")
    if args.script not in SCRIPTS:  # the others (a3c_upgo.py, bc_*.py, eval_transfer.py) lack these flags
        raise SystemExit(f"--script {args.script!r}: expected a training script of algos/ ({', '.join(SCRIPTS)})")
    if not args.variants:
        raise SystemExit("--variants: expected at least one name=flags, e.g. 'default='")
    try:  # every variant checked before the first run
        variants = [(name, flags, REPO) for name, flags in map(parse_variant, args.variants)]
    except ValueError as e:
        raise SystemExit(str(e)) from None
    if args.baseline_tree:
        tree = Path(args.baseline_tree).resolve()
        if not (tree / "algos" / args.script).is_file():
            raise SystemExit(f"--baseline-tree {args.baseline_tree}: no algos/{args.script} there")
        variants.insert(0, (f"baseline {tree.name}", [], tree))
    names = [name for name, _, _ in variants]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise SystemExit(
            f"--variants: the name(s) {', '.join(map(repr, twice))} appear twice (the baseline is {names[0]!r} when given); "
            "each row needs its own"
        )
    print(
        f"train_sps: {args.script}, {args.map}, {args.total_timesteps:,} env steps per run, {plural(args.rounds, 'round')} x "
        f"{plural(len(variants), 'variant')} "
        f"(interleaved), CPUs {os.cpu_count()}, load {os.getloadavg()[0]:.2f}",
        flush=True,
    )
    print(shell_settings_line(os.environ), flush=True)
    results: dict[str, list[RunFigures]] = {name: [] for name, _, _ in variants}
    flags_of = {n: f for n, f, _ in variants}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            for name, flags, tree in variants:
                try:
                    figs = run_copies(tree, args, flags, Path(tmp))
                except RuntimeError as e:  # the rounds finished so far are not lost
                    if any(results.values()):
                        print("\nthe runs finished before the failure:")
                        print("\n".join(table(results, names[0], args.skip_iterations, flags_of)))
                    raise SystemExit(f"\n{e}") from None
                for k, fig in enumerate(figs):
                    results[name].append(fig)
                    steady = "-" if fig.steady is None else f"{fig.steady:,.0f}"
                    share = "" if fig.env_share is None else f", env {fig.env_share}%"
                    copy = f" copy {k + 1}" if len(figs) > 1 else ""
                    print(f"  round {r + 1} {name}{copy}: sps {fig.sps}, steady {steady}{share}", flush=True)
    print()
    for line in table(results, names[0], args.skip_iterations, flags_of):
        print(line)


def median_or_none(values: list[float | None]) -> float | None:
    """The median of ``values``, or None if any is None (a figure some round could not give)."""
    return None if not values or any(v is None for v in values) else statistics.median(values)


def table(results: dict[str, list[RunFigures]], ref_name: str, skip: int, flags: dict[str, list[str]]) -> list[str]:
    """The Markdown table of medians over each variant's rounds and their ratios to variant ``ref_name``
    (variants without a finished run are left out; ratios are "-" while ``ref_name`` has none)."""
    ref = {key: median_or_none([getattr(f, key) for f in results[ref_name]]) for key in ("sps", "steady")}
    rounds = sorted({len(figs) for figs in results.values() if figs})
    lines = [
        f"| variant | flags | SPS (median of {'/'.join(map(str, rounds))}) | SPS after iteration {skip} | env share | ratio | "
        f"ratio after iteration {skip} |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, figs in results.items():
        if not figs:
            continue
        sps = median_or_none([f.sps for f in figs])
        steady = median_or_none([f.steady for f in figs])
        shares = [f.env_share for f in figs if f.env_share is not None]
        share = f"{statistics.median(shares):.0f}%" if shares else "-"
        steady_text = "-" if steady is None else f"{steady:,.0f}"
        steady_ratio = "-" if steady is None or ref["steady"] is None else f"{steady / ref['steady']:.2f}x"
        ratio = "-" if ref["sps"] is None else f"{sps / ref['sps']:.2f}x"
        lines.append(
            f"| {name} | `{' '.join(flags[name]) or '(defaults)'}` | {sps:,.0f} | {steady_text} | {share} | "
            f"{ratio} | {steady_ratio} |"
        )
    return lines


if __name__ == "__main__":
    import signal

    from sc2_envs.training.cli import flowing_help

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # unwinds, so the running child is killed too
    main(tyro.cli(flowing_help(Args)))
