"""Training throughput of ``algos/happo_gnn.py`` (or ``--script hatrpo_gnn.py``): env steps per second of whole runs, interleaved.

Each variant is a set of extra flags for the training script; a baseline may be another checkout
of this repository (e.g. an older commit in a ``git worktree``), run with its own defaults. The
variants run one after another, round after round, in fresh processes (so a busy spell of a shared
machine hits every variant alike), each writing its run folder under a temporary directory; the
table gives the median over rounds of the final ``sps=`` the script prints (CleanRL's
``charts/SPS``: env steps over the wall time since the start, evaluation included) and its
env share, and each variant's ratio to the baseline (or, without one, to the first variant).

Example (the README's main job, HAPPO-GNN on 2s3z; the baseline is the commit before the compiled kernels)::

    git worktree add /tmp/wt_old 65dab88
    python benchmarks/train_sps.py --map 2s3z --rounds 2 --baseline-tree /tmp/wt_old \\
        --variants "default=" "one-thread-one-pass=--torch-threads 1 --pass-rows 1000000000"

The training scripts' allocator tuning against glibc's defaults (a variant's leading ``VAR=value``
words set its environment)::

    python benchmarks/train_sps.py --map 2s3z --rounds 2 --total-timesteps 102400 \\
        --variants "default=" "glibc-defaults=SC2_ENVS_KEEP_FREED_MEMORY=0"

HATRPO's two forms of the Fisher-vector product (the same matrix up to float rounding)::

    python benchmarks/train_sps.py --script hatrpo_gnn.py --total-timesteps 10240 --rounds 2 \\
        --variants "gauss-newton=--num-envs 64" "double-backward=--num-envs 64 --fisher-product double-backward"
"""

from __future__ import annotations

import os
import re
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import tyro

from sc2_envs.runs import plural

REPO = Path(__file__).resolve().parents[1]
SCRIPTS = ("happo_gnn.py", "hatrpo_gnn.py")
"""The scripts of ``algos/`` this benchmark can time: they take ``--map``, ``--total-timesteps``,
``--eval-interval``, ``--eval-episodes``, ``--no-save-model`` and print ``sps=`` per iteration
(``sc2_envs.runs``' progress line)."""


@dataclass
class Args:
    script: str = "happo_gnn.py"
    """the training script in ``algos/`` of every tree: ``happo_gnn.py`` or ``hatrpo_gnn.py``"""
    map: str = "2s3z"
    """the map of every run"""
    total_timesteps: int = 30720
    """env steps of each run (3 iterations of the default 256 envs x 40 steps)"""
    rounds: int = 2
    """times each variant runs (interleaved with the others); the table gives medians"""
    variants: list[str] = field(default_factory=lambda: ["default="])
    """``name=flags`` of this checkout's script, e.g. ``"one-thread=--torch-threads 1"``; leading ``VAR=value`` words
    set environment variables of that variant's runs, e.g. ``"glibc-defaults=SC2_ENVS_KEEP_FREED_MEMORY=0"``"""
    baseline_tree: str = ""
    """another checkout of the repository, run with its defaults as the baseline of the ratios ("" none)"""
    timeout_s: float = 900.0
    """per run; a run past it counts as failed"""


SPS = re.compile(r"sps=(\d+)(?: env=(\d+)%)?")
ENV_SETTING = re.compile(r"[A-Z_][A-Z0-9_]*=")


def parse_variant(text: str) -> tuple[str, list[str]]:
    """``"name=--flag value"`` -> ``(name, ["--flag", "value"])``; raises ValueError without ``=``."""
    name, sep, flags = text.partition("=")
    if not sep or not name:
        raise ValueError(f"--variants {text!r}: expected name=flags (flags may be empty), e.g. 'default='")
    return name, flags.split()


def split_env(words: list[str]) -> tuple[dict[str, str], list[str]]:
    """A variant's leading ``VAR=value`` words (upper-case names, as shells write them) -> ``(environment, flags)``.

    ``["SC2_ENVS_KEEP_FREED_MEMORY=0", "--torch-threads", "1"]`` -> ``({"SC2_ENVS_KEEP_FREED_MEMORY": "0"},
    ["--torch-threads", "1"])``; a ``VAR=value`` word after the first flag stays a flag value.
    """
    env: dict[str, str] = {}
    for i, word in enumerate(words):
        if not ENV_SETTING.match(word):
            return env, words[i:]
        var, _, value = word.partition("=")
        env[var] = value
    return env, []


def run_once(tree: Path, args: Args, flags: list[str], workdir: Path) -> tuple[int, int | None]:
    """One training run of ``tree``'s script; returns (final sps, env share in % or None)."""
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
    out = subprocess.run(cmd, cwd=workdir, env=env, capture_output=True, text=True, timeout=args.timeout_s)
    found = SPS.findall(out.stdout)
    if out.returncode != 0 or not found:
        tail = (out.stdout + out.stderr)[-2000:]
        shown = " ".join([*(f"{k}={v}" for k, v in settings.items()), *cmd])
        raise RuntimeError(f"{shown} failed (exit {out.returncode}):\n{tail}")
    sps, share = found[-1]
    return int(sps), (int(share) if share else None)


def main(args: Args) -> None:
    if args.rounds < 1:
        raise SystemExit(f"--rounds {args.rounds}: expected an integer >= 1")
    if args.script not in SCRIPTS:  # the others (a3c_upgo.py, bc_*.py, eval_transfer.py) lack these flags
        raise SystemExit(f"--script {args.script!r}: expected a training script of algos/ ({', '.join(SCRIPTS)})")
    variants = [(name, flags, REPO) for name, flags in map(parse_variant, args.variants)]
    if args.baseline_tree:
        tree = Path(args.baseline_tree).resolve()
        if not (tree / "algos" / args.script).is_file():
            raise SystemExit(f"--baseline-tree {args.baseline_tree}: no algos/{args.script} there")
        variants.insert(0, (f"baseline {tree.name}", [], tree))
    print(
        f"train_sps: {args.script}, {args.map}, {args.total_timesteps:,} env steps per run, {plural(args.rounds, 'round')} x {plural(len(variants), 'variant')} "
        f"(interleaved), CPUs {os.cpu_count()}, load {os.getloadavg()[0]:.2f}",
        flush=True,
    )
    results: dict[str, list[tuple[int, int | None]]] = {name: [] for name, _, _ in variants}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            for name, flags, tree in variants:
                results[name].append(run_once(tree, args, flags, Path(tmp)))
                sps, share = results[name][-1]
                print(f"  round {r + 1} {name}: sps {sps}" + (f", env {share}%" if share is not None else ""), flush=True)
    ref = statistics.median(s for s, _ in results[variants[0][0]])
    print(f"\n| variant | flags | SPS (median of {args.rounds}) | env share | ratio to {variants[0][0]} |")
    print("|---|---|---|---|---|")
    for name, flags, _ in variants:
        sps = statistics.median(s for s, _ in results[name])
        shares = [s for _, s in results[name] if s is not None]
        share = f"{statistics.median(shares):.0f}%" if shares else "-"
        print(f"| {name} | `{' '.join(flags) or '(defaults)'}` | {sps:,.0f} | {share} | {sps / ref:.2f}x |")


if __name__ == "__main__":
    from sc2_envs.runs import flowing_help

    main(tyro.cli(flowing_help(Args)))
