"""Zero-shot transfer results (``algos/eval_transfer.py``): one row per (checkpoint, target map), and its files.

:class:`TransferRow` holds one pair's figures (or the reason it could not be evaluated); the
evaluation writes the rows as CSV (:func:`write_csv`, columns :data:`CSV_COLUMNS`), as a GitHub
Markdown table (:func:`markdown_table`) and as a grouped bar chart of the win rates with their Wilson
95 % intervals (:func:`plot_rows`); where several checkpoints share a source map and actor type
(seeds of one recipe), :func:`median_table` gives their median win rate per target map. ``benchmarks/transfer_table.py`` and
``benchmarks/learning_curves.py`` read these CSV files back.
"""

from __future__ import annotations

import csv
import os
import statistics
from dataclasses import asdict, dataclass, fields
from pathlib import Path

__all__ = ["CSV_COLUMNS", "TransferRow", "markdown_table", "median_table", "plot_rows", "short_names", "write_csv"]


@dataclass
class TransferRow:
    """One (checkpoint, target map) result; the figures are ``None`` where ``error`` is set.

    ``win_rate`` is ``wins / episodes``; ``ci_low`` / ``ci_high`` its Wilson 95 % interval
    (``sc2_envs.stats.wilson_interval``); ``mean_return`` the mean undiscounted sum of the
    environment's (scaled SMAC) rewards per episode; ``mean_length`` the mean episode length in env
    steps (1 env step = 8 game loops).
    """

    target_map: str
    source_map: str
    actor_type: str
    kind: str
    episodes: int | None = None
    wins: int | None = None
    win_rate: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    mean_return: float | None = None
    mean_length: float | None = None
    error: str = ""
    checkpoint: str = ""
    source_steps: int | None = None
    """the checkpoint's ``global_step``: env steps of the run that saved it (for an ``--init-from``
    fine-tune, the fine-tuning only; the start-up lines name the starting checkpoint); 0 for a
    behaviour-cloning checkpoint (``models.env_steps``)"""
    eval_seed: int | None = None
    """the evaluation seed the episodes were played on (``--seed``); ``sc2_envs.stats.pool_results`` refuses one
    seed twice for a row. Empty in CSVs written before the column existed (2026-12-07)"""
    num_envs: int | None = None
    """episodes played at once (``min(--episodes, --max-envs)``): with ``eval_seed``, what fixes the episodes"""


CSV_COLUMNS = [f.name for f in fields(TransferRow)]
"""The CSV header: :class:`TransferRow`'s fields, in their order."""


def _fmt(x, spec: str) -> str:
    """A table cell: ``x`` formatted with ``spec``, empty for a figure a failed pair does not have."""
    return "" if x is None else format(x, spec)


def write_csv(rows: list[TransferRow], path: str) -> None:
    """One line per row, columns :data:`CSV_COLUMNS`; figures with full precision, empty where absent."""
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=CSV_COLUMNS)
        w.writeheader()
        for r in rows:
            w.writerow({k: ("" if v is None else v) for k, v in asdict(r).items()})


def short_names(paths) -> dict[str, str]:
    """Each path's file stem, with as many parent folders as it takes to tell the paths apart
    (``seed2`` or, for ``runs/a/happo_gnn.pt`` and ``runs/b/happo_gnn.pt``, ``a/happo_gnn``)."""
    parts = {p: Path(p).with_suffix("").parts for p in paths}
    for k in range(1, max(len(v) for v in parts.values()) + 1):
        names = {p: "/".join(v[-k:]) for p, v in parts.items()}
        if len(set(names.values())) == len(names):
            return names
    return {p: str(p) for p in paths}


def markdown_table(rows: list[TransferRow]) -> str:
    """GitHub Markdown table of the rows (win rate with its Wilson 95 % interval). Where two checkpoints
    share a source map and actor type (e.g. two seeds), the source cell also names the file's stem."""
    owners: dict[tuple, set] = {}
    for r in rows:
        owners.setdefault((r.source_map, r.actor_type), set()).add(r.checkpoint)
    names = {path: name for paths in owners.values() if len(paths) > 1 for path, name in short_names(paths).items()}
    lines = [
        "| source | actor | target | kind | episodes | win rate [95% CI] | mean return | mean length | error |",
        "|---|---|---|---|---:|---|---:|---:|---|",
    ]
    for r in rows:
        wr = "" if r.win_rate is None else f"{r.win_rate:.2f} [{r.ci_low:.2f}, {r.ci_high:.2f}]"
        err = r.error.replace("|", "\\|")
        src = r.source_map if r.checkpoint not in names else f"{r.source_map} ({names[r.checkpoint]})"
        lines.append(
            f"| {src} | {r.actor_type} | {r.target_map} | {r.kind} | {_fmt(r.episodes, 'd')} | {wr} | "
            f"{_fmt(r.mean_return, '.2f')} | {_fmt(r.mean_length, '.1f')} | {err} |"
        )
    return "\n".join(lines) + "\n"


def median_table(rows: list[TransferRow]) -> str:
    """GitHub Markdown table of the median win rate over the checkpoints that share a source map and actor
    type (seeds of one recipe), per target map: the figure the README's results quote ("medians of 3
    seeds"). Pairs that could not be evaluated (``error``) are left out of the median and counted.

    Returns:
        the table, or ``""`` when no source map and actor type has two or more checkpoints (nothing to
        summarise beyond :func:`markdown_table`).
    """
    groups: dict[tuple, list[TransferRow]] = {}
    for r in rows:
        groups.setdefault((r.source_map, r.actor_type, r.target_map, r.kind), []).append(r)
    if all(len({r.checkpoint for r in g}) < 2 for g in groups.values()):
        return ""
    lines = [
        "| source | actor | target | kind | checkpoints | median win rate | min | max | not evaluated |",
        "|---|---|---|---|---:|---:|---:|---:|---:|",
    ]
    for (src, actor, target, kind), g in groups.items():
        rates = [r.win_rate for r in g if r.win_rate is not None]
        med, lo, hi = (statistics.median(rates), min(rates), max(rates)) if rates else (None, None, None)
        lines.append(
            f"| {src} | {actor} | {target} | {kind} | {len(g)} | {_fmt(med, '.2f')} | {_fmt(lo, '.2f')} | "
            f"{_fmt(hi, '.2f')} | {len(g) - len(rates)} |"
        )
    return "\n".join(lines) + "\n"


def plot_rows(rows: list[TransferRow], path: str, title: str = "Zero-shot transfer") -> None:
    """Grouped bar chart: one group per target map, one bar per checkpoint (source map, actor type), with Wilson
    95 % intervals as error bars; a pair that could not be evaluated is marked ``n/a`` instead of a bar."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    targets = list(dict.fromkeys(r.target_map for r in rows))
    series = list(dict.fromkeys(r.checkpoint for r in rows))  # one series per checkpoint
    names = {c: next(f"{r.source_map} ({r.actor_type})" for r in rows if r.checkpoint == c) for c in series}
    if len(set(names.values())) < len(names):  # two checkpoints of the same source map and actor type
        names = {c: f"{n}, {os.path.basename(c)}" for c, n in names.items()}
    width = 0.8 / max(len(series), 1)
    fig, ax = plt.subplots(figsize=(max(6.0, 1.6 * len(targets) * max(1, len(series)) ** 0.5), 4.2))
    labelled: set = set()
    for k, ckpt in enumerate(series):
        for t, tgt in enumerate(targets):
            match = [r for r in rows if r.target_map == tgt and r.checkpoint == ckpt]
            if not match:
                continue
            r = match[0]
            x = t - 0.4 + width * (k + 0.5)
            if r.win_rate is None:
                ax.text(x, 0.02, "n/a", ha="center", va="bottom", fontsize=7, rotation=90, color=f"C{k}")
                continue
            label = None if ckpt in labelled else names[ckpt]
            labelled.add(ckpt)
            ax.bar(x, r.win_rate, width * 0.9, color=f"C{k}", label=label)
            ax.errorbar(
                x,
                r.win_rate,
                yerr=[[r.win_rate - r.ci_low], [r.ci_high - r.win_rate]],
                fmt="none",
                ecolor="black",
                capsize=3,
                lw=1,
            )
    ax.set_xticks(range(len(targets)), targets)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("win rate (Wilson 95% CI)")
    ax.set_xlabel("target map")
    ax.set_title(title)
    if labelled:
        ax.legend(title="source (actor)", fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
