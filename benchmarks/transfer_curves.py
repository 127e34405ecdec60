"""Zero-shot transfer against the training budget, read from runs trained with ``--eval-maps``.

A run of ``algos/happo_gnn.py`` (or ``hatrpo_gnn.py``) with ``--eval-maps`` evaluates its actors greedily on
maps it never trains on at every evaluation (``zero_shot_win_rate/<map>`` columns of its ``eval.csv``). This
script turns the runs of one recipe (the same training maps and settings, several seeds) into one table:
per seed and map, the first evaluation at or above ``--target`` and the win rate at each ``--at`` budget,
then the median over the seeds.

    python algos/happo_gnn.py --map 2s3z --eval-maps 3s5z 3s5z_vs_3s6z --seed 2 --num-envs 128 --num-steps 40 \\
        --total-timesteps 1024000 --eval-interval 5 --eval-episodes 100        # one run per seed
    python benchmarks/transfer_curves.py --runs runs/2s3z__*__1__* runs/2s3z__*__2__* runs/2s3z__*__3__* \\
        --target 0.9 --at 512000 1024000 --out-dir runs/transfer_curves

Outputs, in a new folder ``<out-dir>/transfer_curves__<unix time>/`` (``-2``, ... if taken):
``transfer_curves.csv`` (one row per run, map and budget: ``recipe, run, seed, map, zero_shot, budget,
point, win_rate, ci_low, ci_high, episodes, first_step_at_target``; ``budget`` is always the env steps of
the evaluation, ``point`` says whether it is an ``--at`` budget, ``at``, or the run's last evaluation, ``last``),
``transfer_curves.md`` (the summary printed at the end) and ``transfer_curves.png`` (win rate against env steps, one panel per
map: thin lines per seed, thick the median). ``run_meta.json`` records the command.

Each figure is one in-training evaluation of ``eval_episodes`` greedy episodes (its Wilson 95 % interval,
``sc2_envs.stats.wilson_interval``, from ``round(win_rate * episodes)`` wins). Runs are grouped into
recipes by their saved configuration without ``seed``, ``exp_name`` and the flags that do not change
what is trained up to a budget (``total_timesteps`` unless ``--anneal-lr``, ``time_budget_s``, ``torch_threads``,
``pass_rows``, HATRPO's ``fisher_product``, ``track``, ``cuda``, ``save_model``): a run stopped at 1M env steps and one that
went on to 3M give the same rows up to 1M, while two learning rates are two recipes. Two runs of one recipe with the same seed
are refused (one run copied twice is not two seeds), as is a budget at which a run has no evaluation.
"""

from __future__ import annotations

import csv
import json
import math
import os
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import tyro

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from sc2_envs.stats import wilson_interval  # noqa: E402
from sc2_envs.training.cli import cli_error, flowing_help  # noqa: E402
from sc2_envs.training.progress import plural  # noqa: E402
from sc2_envs.training.run import make_run_dir, write_run_meta  # noqa: E402
from sc2_envs.validation import check_out_dir  # noqa: E402

NOT_RECIPE = ("seed", "exp_name", "total_timesteps", "num_iterations", "time_budget_s", "torch_threads", "pass_rows")
NOT_RECIPE += ("track", "cuda", "save_model", "resume", "wandb_project_name", "wandb_entity", "capture_video")
NOT_RECIPE += ("fisher_product",)
"""Saved ``Args`` fields that do not decide what a run has trained up to a given env step (with
``--anneal-lr`` the total does: the learning rate at a step depends on it, so it stays in the recipe).
``fisher_product`` (HATRPO) is the same matrix up to float rounding, as ``pass_rows`` the same update;
runs saved before the flag existed have no such field."""


@dataclass
class Args:
    runs: list[str]
    """run folders (each with eval.csv and run_meta.json) of algos/happo_gnn.py or hatrpo_gnn.py runs"""
    target: float = 0.9
    """win rate whose first crossing is reported per seed and map"""
    at: list[int] = field(default_factory=list)
    """env step budgets at which to report each seed's win rate (each must be an evaluation step of every run)"""
    out_dir: str = "runs"
    """parent folder of the output folder transfer_curves__<unix time>/ (a relative path is taken from the current folder)"""
    plot: bool = True
    """write transfer_curves.png (matplotlib)"""


@dataclass
class Run:
    """One run's evaluations: ``steps[i]`` env steps, ``curves[map][i]`` greedy win rate there;
    ``init_from`` its ``--init-from`` checkpoint as given ("" when it trained from scratch: a fine-tune's
    steps count from its own start)."""

    path: str
    recipe: str
    seed: int
    episodes: int
    train_maps: list[str]
    zero_shot_maps: list[str]
    steps: list[int]
    curves: dict[str, list[float]]
    init_from: str = ""


def init_recipe(path: str, cwd: str | None = None, _seen: tuple[Path, ...] = ()) -> str | dict:
    """What an ``--init-from`` run started from, for its recipe key: the starting checkpoint's own recipe
    key and env steps, so that seeds which each fine-tune their own seed's checkpoint of one recipe are
    one recipe (the checkpoints' paths and seeds differ).

    A relative ``path`` is read from ``cwd``, the folder the run was started in (``run_meta.json``'s
    ``cwd``), falling back to the current folder when that does not hold it, so the summary does not
    depend on where it is run from; so is the starting checkpoint's own relative ``--init-from`` (when it
    was a fine-tune too). A file that cannot be read keeps its path as given, with a warning
    on stderr: runs then pool only when they started from the same path; so does a chain of
    ``--init-from`` files that leads back to a file already read (``_seen``: those files)."""
    from models import read_checkpoint, training_amount

    candidates = [Path(cwd) / path] if cwd and not Path(path).is_absolute() else []
    candidates.append(Path(path))
    found = next((c for c in candidates if c.is_file()), None)
    problem = "no such file" if found is None else None
    if found is not None and found.resolve() in _seen:
        found, problem = None, "its chain of --init-from checkpoints leads back to it"
    if found is not None:
        try:
            ckpt = read_checkpoint(str(found))
        except (FileNotFoundError, ValueError) as e:
            problem = str(e)
        else:
            # the starting checkpoint's own --init-from (a fine-tune of a fine-tune): its run's folder is
            # not recorded in the checkpoint; this run's folder is the best guess, then the current one
            args = ckpt.get("args") or {}
            if "bc" in ckpt or "map" not in args:
                # not a happo/hatrpo run (e.g. bc_reweight's: no env steps, its epochs count): its own settings
                own = {k: v for k, v in args.items() if k not in NOT_RECIPE}
                return {"recipe": json.dumps(own, sort_keys=True, default=str), "training": training_amount(ckpt)}
            return {
                "recipe": recipe_label(args, cwd=cwd, _seen=(*_seen, found.resolve()))[1],
                "global_step": int(ckpt["global_step"]),
            }
    where = " or ".join(str(c) for c in candidates)
    print(
        f"warning: --init-from checkpoint {path!r} could not be read (tried {where}: {problem}); runs that "
        "started from it pool only with runs that name the same path",
        file=sys.stderr,
    )
    return path


def recipe_label(
    config: dict, resumes: list | tuple = (), cwd: str | None = None, _seen: tuple[Path, ...] = ()
) -> tuple[str, str]:
    """``(label, key)`` of a run's recipe: the label names its training maps, the key is every saved
    setting except :data:`NOT_RECIPE` (JSON, sorted), so runs compare equal only when they train alike.

    ``resumes``: ``run_meta.json``'s ``resumes`` entries. With ``--anneal-lr`` a resume that changes
    ``--total-timesteps`` changes the learning rate from its ``from_global_step`` on, so each
    ``(from_global_step, total_timesteps)`` is part of the key (the saved config keeps the first total).

    ``cwd``: the folder the run was started in (``run_meta.json``'s ``cwd``), where a relative
    ``init_from`` is looked up first (:func:`init_recipe`)."""
    maps = config["map"] if isinstance(config["map"], list) else [config["map"]]
    ignored = set(NOT_RECIPE) - ({"total_timesteps", "num_iterations"} if config.get("anneal_lr") else set())
    recipe = {k: v for k, v in config.items() if k not in ignored}
    if config.get("init_from"):
        recipe["init_from"] = init_recipe(config["init_from"], cwd, _seen)
    if config.get("anneal_lr"):
        totals = [
            (r.get("from_global_step"), (r.get("config") or {}).get("total_timesteps")) for r in resumes if isinstance(r, dict)
        ]
        recipe["resumed_totals"] = [t for t in totals if t[1] is not None and t[1] != config.get("total_timesteps")]
    key = json.dumps(recipe, sort_keys=True, default=str)
    return "+".join(maps), key


def read_run(path: str) -> tuple[Run, str]:
    """Read one run folder; returns the :class:`Run` and its recipe key.

    Raises:
        ValueError: the folder lacks ``eval.csv`` or ``run_meta.json``, its ``run_meta.json`` is not JSON
            or its config lacks ``map``, ``seed`` or ``eval_episodes``, its ``eval.csv`` has no
            evaluation row, lacks a win-rate column of a training or ``--eval-maps`` map, or holds a
            value that is not a number (the message names the folder and what was expected).
    """
    folder = Path(path)
    meta_path, eval_path = folder / "run_meta.json", folder / "eval.csv"
    missing = [p.name for p in (meta_path, eval_path) if not p.is_file()]
    if missing:
        raise ValueError(
            f"run {path}: no {' or '.join(missing)}; expected a run folder of algos/happo_gnn.py or hatrpo_gnn.py"
        )
    expected = "expected a run folder of algos/happo_gnn.py or hatrpo_gnn.py"
    try:
        meta = json.loads(meta_path.read_text())
        config = meta["config"]
    except (ValueError, KeyError, TypeError) as e:  # not JSON, or no config: another kind of folder
        raise ValueError(f"run {path}: run_meta.json has no readable config ({type(e).__name__}); {expected}") from None
    lacking = [k for k in ("map", "seed", "eval_episodes") if not isinstance(config, dict) or k not in config]
    if lacking:
        raise ValueError(f"run {path}: run_meta.json config has no {', '.join(lacking)}; {expected}")
    with open(eval_path, newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        raise ValueError(f"run {path}: eval.csv has no evaluation yet")
    train_maps = config["map"] if isinstance(config["map"], list) else [config["map"]]
    zero_shot = list(config.get("eval_maps") or [])
    columns = {m: (f"win_rate/{m}" if len(train_maps) > 1 else "win_rate") for m in train_maps}
    columns.update({m: f"zero_shot_win_rate/{m}" for m in zero_shot})
    absent = [c for c in ["global_step", *columns.values()] if c not in rows[0]]
    if absent:
        raise ValueError(f"run {path}: eval.csv has no column(s) {absent}; {expected} (with --eval-maps for zero-shot maps)")

    def number(i: int, column: str) -> float:
        try:
            return float(rows[i][column])
        except (TypeError, ValueError):
            raise ValueError(
                f"run {path}: eval.csv row {i + 1}, column {column}: {rows[i][column]!r} is not a number; {expected}"
            ) from None

    cwd = meta.get("cwd") if isinstance(meta.get("cwd"), str) else None
    label, key = recipe_label(config, meta.get("resumes") or [], cwd)
    run = Run(
        path=str(path),
        recipe=label,
        seed=int(config["seed"]),
        episodes=int(config["eval_episodes"]),
        train_maps=train_maps,
        zero_shot_maps=zero_shot,
        steps=[int(number(i, "global_step")) for i in range(len(rows))],
        curves={m: [number(i, c) for i in range(len(rows))] for m, c in columns.items()},
        init_from=str(config.get("init_from") or ""),
    )
    return run, key


def group_recipes(runs: list[tuple[Run, str]]) -> dict[str, list[Run]]:
    """Runs grouped by recipe (label, with ``#2``, ``#3`` ... when two recipes share training maps).

    Raises:
        ValueError: two runs of one recipe with the same seed (names both).
    """
    keys: dict[str, str] = {}
    groups: dict[str, list[Run]] = {}
    for run, key in runs:
        if key not in keys:
            same_label = sum(1 for k in keys.values() if k.split("#")[0] == run.recipe)
            keys[key] = run.recipe if same_label == 0 else f"{run.recipe}#{same_label + 1}"
        label = keys[key]
        for other in groups.get(label, []):
            if other.seed == run.seed:
                raise ValueError(
                    f"runs {other.path} and {run.path}: the same recipe and seed {run.seed}; expected one run per seed"
                )
        groups.setdefault(label, []).append(run)
    return groups


def first_at_target(steps: list[int], curve: list[float], target: float) -> int | None:
    """The env steps of the first evaluation with win rate ``>= target`` (None if none)."""
    return next((s for s, w in zip(steps, curve, strict=True) if w >= target), None)


def value_at(run: Run, map_name: str, budget: int) -> float:
    """The run's win rate on ``map_name`` at the evaluation of exactly ``budget`` env steps.

    Raises:
        ValueError: the run has no evaluation at ``budget`` (names the run and its evaluation steps).
    """
    if budget not in run.steps:
        shown = f"{run.steps[0]}..{run.steps[-1]}" if len(run.steps) > 3 else ", ".join(map(str, run.steps))
        raise ValueError(f"--at {budget}: run {run.path} has no evaluation at {budget} env steps (its evaluations: {shown})")
    return run.curves[map_name][run.steps.index(budget)]


def table_rows(groups: dict[str, list[Run]], target: float, budgets: list[int]) -> list[dict]:
    """One row per (recipe, run, map, budget): each ``--at`` budget (``point`` ``"at"``), then the run's last
    evaluation (``point`` ``"last"``); ``budget`` is the evaluation's env steps (int) in both."""
    rows = []
    for label, group in groups.items():
        for run in sorted(group, key=lambda r: r.seed):
            for m in run.train_maps + run.zero_shot_maps:
                first = first_at_target(run.steps, run.curves[m], target)
                points = [(b, "at", value_at(run, m, b)) for b in budgets] + [(run.steps[-1], "last", run.curves[m][-1])]
                for budget, point, wr in points:
                    lo, hi = wilson_interval(round(wr * run.episodes), run.episodes)
                    rows.append(
                        {
                            "recipe": label,
                            "run": run.path,
                            "seed": run.seed,
                            "map": m,
                            "zero_shot": m in run.zero_shot_maps,
                            "budget": budget,
                            "point": point,
                            "win_rate": wr,
                            "ci_low": round(lo, 4),
                            "ci_high": round(hi, 4),
                            "episodes": run.episodes,
                            "first_step_at_target": "" if first is None else first,
                        }
                    )
    return rows


def summary_markdown(groups: dict[str, list[Run]], target: float, budgets: list[int]) -> str:
    """One Markdown table per recipe: a row per map, columns = first crossing of ``target`` and the
    win rate at each budget, each ``median [seed values]`` over the seeds."""
    out = []
    for label, group in groups.items():
        group = sorted(group, key=lambda r: r.seed)
        seeds = ", ".join(str(r.seed) for r in group)
        header = ["map", f"first evaluation >= {target:g}: env steps"] + [f"win rate at {b:,}" for b in budgets]
        header += ["last evaluation"]
        starts = sorted({r.init_from for r in group if r.init_from})
        tuned = (
            f"; fine-tuned from {', '.join(starts)} (env steps count from the fine-tune's start; the starting "
            "checkpoints' own steps are not included)"
            if starts
            else ""
        )
        out.append(f"**{label}**, seeds {seeds} ({group[0].episodes} greedy episodes per evaluation){tuned}\n")
        out.append("| " + " | ".join(header) + " |")
        out.append("|" + "---|" * len(header))
        for m in group[0].train_maps + group[0].zero_shot_maps:
            firsts = [first_at_target(r.steps, r.curves[m], target) for r in group]
            seeds = ", ".join("-" if f is None else f"{f:,}" for f in firsts)
            # a seed that never crossed counts as infinitely late: the median is a step only when most crossed
            med = statistics.median(math.inf if f is None else f for f in firsts)
            if all(f is None for f in firsts):
                first_cell = "not reached by any seed"
            else:
                first_cell = ("not reached" if math.isinf(med) else f"{med:,.0f}") + f" [{seeds}]"
            cells = [f"{m} (zero-shot)" if m in group[0].zero_shot_maps else f"**{m}**", first_cell]
            for b in budgets:
                vals = [value_at(r, m, b) for r in group]
                cells.append(f"{statistics.median(vals):.2f} [" + ", ".join(f"{v:.2f}" for v in vals) + "]")
            last = [r.curves[m][-1] for r in group]
            cells.append(
                f"{statistics.median(last):.2f} ["
                + ", ".join(f"{v:.2f} @ {r.steps[-1]:,}" for v, r in zip(last, group, strict=True))
                + "]"
            )
            out.append("| " + " | ".join(cells) + " |")
        out.append("")
    return "\n".join(out)


def plot(groups: dict[str, list[Run]], target: float, path: str) -> None:
    """Win rate against env steps, one panel per (recipe, map): thin lines per seed, thick the median
    over the seeds at the evaluation steps they share."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [(label, m, group) for label, group in groups.items() for m in group[0].train_maps + group[0].zero_shot_maps]
    fig, axes = plt.subplots(1, len(panels), figsize=(4.5 * len(panels), 3.6), squeeze=False)
    for ax, (label, m, group) in zip(axes[0], panels, strict=True):
        for i, run in enumerate(sorted(group, key=lambda r: r.seed)):
            ax.plot(run.steps, run.curves[m], color=f"C{i}", lw=0.9, alpha=0.6, label=f"seed {run.seed}")
        shared = sorted(set.intersection(*(set(r.steps) for r in group)))
        if shared:
            med = [statistics.median(r.curves[m][r.steps.index(s)] for r in group) for s in shared]
            ax.plot(shared, med, color="black", lw=2.2, label="median")
        ax.axhline(target, color="grey", ls="--", lw=0.8)
        kind = "zero-shot" if m in group[0].zero_shot_maps else "training map"
        ax.set_title(f"{label} -> {m} ({kind})", fontsize=9)
        ax.set_xlabel("env steps")
        ax.set_ylabel("greedy win rate")
        ax.set_ylim(-0.02, 1.02)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def check_args(args: Args) -> None:
    """Refuse bad settings with one line naming the flag, the value and what was expected."""
    if not args.runs:
        cli_error("--runs: expected at least one run folder")
    if not (math.isfinite(args.target) and 0.0 <= args.target <= 1.0):
        cli_error(f"--target {args.target!r}: expected a win rate in [0, 1]")
    bad = [b for b in args.at if b < 1]
    if bad:
        cli_error(f"--at {' '.join(map(str, args.at))}: expected env step counts >= 1 (got {bad[0]})")
    repeated = sorted({b for b in args.at if args.at.count(b) > 1})
    if repeated:
        cli_error(
            f"--at {' '.join(map(str, args.at))}: budget {repeated[0]} is given more than once; "
            "expected distinct env step counts"
        )
    check_out_dir(args.out_dir)


def main(args: Args) -> dict:
    """Read the runs, print the configuration and the summary, write the outputs; returns the groups and paths."""
    check_args(args)
    try:
        groups = group_recipes([read_run(p) for p in args.runs])
        budgets = sorted(set(args.at))
        rows = table_rows(groups, args.target, budgets)
    except ValueError as e:
        cli_error(str(e))
    print(
        f"transfer_curves: {plural(len(args.runs), 'run')}, {plural(len(groups), 'recipe')} "
        + "; ".join(
            f"{label}: seeds {sorted(r.seed for r in g)}, zero-shot {g[0].zero_shot_maps}"
            + (" (fine-tunes: --init-from)" if any(r.init_from for r in g) else "")
            for label, g in groups.items()
        )
        + f" | target {args.target:g} | budgets {budgets or 'none'} | out-dir {args.out_dir}",
        flush=True,
    )
    out = make_run_dir(args.out_dir, f"transfer_curves__{int(time.time())}")
    write_run_meta(out, args, script=os.path.basename(__file__))
    with open(out / "transfer_curves.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    md = summary_markdown(groups, args.target, budgets)
    (out / "transfer_curves.md").write_text(md)
    if args.plot:
        plot(groups, args.target, str(out / "transfer_curves.png"))
    print(md)
    print(f"written: {out}/transfer_curves.csv, transfer_curves.md" + (", transfer_curves.png" if args.plot else ""))
    return {"groups": groups, "out": out, "rows": rows}


if __name__ == "__main__":
    main(tyro.cli(flowing_help(Args)))
