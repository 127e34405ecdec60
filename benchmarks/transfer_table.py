"""In-distribution / scale-up / scale-down transfer table of GNN and MLP actors, and the full transfer matrix.

Trains (or reuses) one HAPPO checkpoint per (source, actor type) with ``algos/happo_gnn.py``, each
as its own subprocess with its own log (a source ``3m+8m`` is a multi-map run, ``--map 3m 8m``),
then evaluates every checkpoint on every target map with ``algos/eval_transfer.py`` (greedy,
Wilson 95 % intervals) and prints a pivot table.

    python benchmarks/transfer_table.py --device cuda --total-timesteps 2000000 --num-envs 128

``--matrix``: the transfer matrix instead. Rows are checkpoints (the trained/reused ones of
``--sources`` x ``--actors``, plus ``--checkpoints`` files, single- or multi-map, GNN or MLP),
columns the SMAC maps of :data:`MATRIX_MAPS` that share a unit class with some row (``--maps``:
exactly the given ones), cells the greedy win rate with its Wilson 95 % interval over ``--episodes``
fresh-seed episodes (``sc2_envs.evaluation.evaluate`` through ``eval_transfer.evaluate_transfer``).
A cell the checkpoint cannot play is not an error: ``n/a (classes not covered)`` (a unit class of
the map has no actor in the checkpoint), ``n/a (size mismatch)`` (an MLP's flat input/output sizes
differ) or ``n/a (layout mismatch)`` (a GNN's entity widths differ, e.g. another unit-type
vocabulary: 1c3s5z's three type bits, or the single-type 3s_vs_3z with none, against 2s3z's two).
Outputs ``<out_dir>/transfer_matrix.{csv,md,png}`` (the PNG is a heat map).

    python benchmarks/transfer_table.py --matrix --sources --checkpoints checkpoints/*.pt --episodes 100
    python benchmarks/transfer_table.py --matrix --sources --checkpoints a.pt --maps 3m 8m --episodes 20   # a few cells

Outputs under ``--out-dir``: ``checkpoints/<map>_<actor>.pt`` (unless ``--checkpoint-dir``),
``logs/train_<map>_<actor>.log``, ``logs/eval.log``, ``train/runs/...`` (TensorBoard of each
training run), ``transfer_table__<unix time>/`` (the evaluation's own run folder, with its
``run_meta.json``), and ``transfer_table.{csv,md,png}`` (copied from it) plus ``transfer_pivot.md``.
A checkpoint file that already exists is reused (``--retrain`` to train again); e.g.
``--checkpoint-dir checkpoints`` evaluates the shipped GNN checkpoints and trains only the MLP ones.
"""

from __future__ import annotations

import csv
import glob
import os
import shlex
import shutil
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import tyro

REPO = Path(__file__).resolve().parents[1]

MATRIX_MAPS: tuple[str, ...] = (
    # protoss: stalker / zealot / colossus
    "2s3z",
    "3s5z",
    "1c3s5z",
    "3s5z_vs_3s6z",
    "3s_vs_3z",
    "3s_vs_4z",
    "3s_vs_5z",
    "2s_vs_1sc",
    "2c_vs_64zg",
    "corridor",
    "so_many_baneling",
    # marines
    "3m",
    "8m",
    "25m",
    "5m_vs_6m",
    "8m_vs_9m",
    "10m_vs_11m",
    "27m_vs_30m",
    "2m_vs_1z",
    # MMM family: marine / marauder / medivac
    "MMM",
    "MMM2",
    # zerg
    "6h_vs_8z",
    "bane_vs_bane",
)
"""Every SMAC map of ``sc2_envs.list_maps()``, grouped by the unit classes of the allies: the candidate
columns of the transfer matrix (a row shows those whose classes it covers)."""

TABLE_MAPS = ("2s3z", "3s5z", "3s5z_vs_3s6z")
"""Target maps of the (non-matrix) table when ``--maps`` is not given."""

NOT_COVERED = "n/a (classes not covered)"
SIZE_MISMATCH = "n/a (size mismatch)"
LAYOUT_MISMATCH = "n/a (layout mismatch)"


@dataclass
class Args:
    total_timesteps: int = 2_000_000
    """env steps of each training run (algos/happo_gnn.py --total-timesteps)"""
    device: str = "cpu"
    """`cpu` or `cuda` (training: happo_gnn.py --cuda/--no-cuda; evaluation: eval_transfer.py --device)"""
    num_envs: int = 128
    """parallel envs of each training run"""
    time_budget_s: float = 0.0
    """wall-clock budget of EACH training run in seconds (0: none); the run still saves its checkpoint"""
    seed: int = 1
    """training seed"""
    sources: tuple[str, ...] = ("2s3z", "3s5z")
    """maps to train on"""
    actors: tuple[str, ...] = ("gnn", "mlp")
    """actor types to train"""
    maps: tuple[str, ...] = ()
    """target maps of the evaluation (empty: TABLE_MAPS); with --matrix a filter of the matrix columns (empty: every covered map)"""
    episodes: int = 100
    """evaluation episodes per (checkpoint, target map)"""
    eval_seed: int = 0
    """seed of the evaluation envs"""
    out_dir: str = "runs/transfer_table"
    """folder of the logs, training runs and tables"""
    checkpoint_dir: str = ""
    """where <map>_<actor>.pt are reused from / saved to (empty: <out_dir>/checkpoints)"""
    retrain: bool = False
    """train even if the checkpoint file exists"""
    train_args: str = ""
    """extra arguments for every happo_gnn.py run, one shell-quoted string, e.g. --train-args '--hidden 128 --num-steps 80'"""
    matrix: bool = False
    """evaluate the transfer matrix (rows: checkpoints, columns: every covered SMAC map) instead of the --maps table"""
    checkpoints: tuple[str, ...] = ()
    """further checkpoint files (rows of the matrix, or of the table), evaluated as they are, never trained"""
    max_envs: int = 128
    """--matrix: the simulator runs min(episodes, max_envs) envs per cell"""


def train_command(args: Args, map_name: str, actor: str) -> list[str]:
    """The ``algos/happo_gnn.py`` command line of one training run (``map_name`` ``A+B``: multi-map, ``--map A B``)."""
    if args.device not in ("cpu", "cuda"):
        raise ValueError(f"--device {args.device!r}; expected 'cpu' or 'cuda' (happo_gnn.py selects the GPU with --cuda)")
    return [
        sys.executable,
        str(REPO / "algos" / "happo_gnn.py"),
        "--map",
        *map_name.split("+"),
        "--actor",
        actor,
        "--seed",
        str(args.seed),
        "--total-timesteps",
        str(args.total_timesteps),
        "--num-envs",
        str(args.num_envs),
        "--time-budget-s",
        str(args.time_budget_s),
        "--save-model",
        "--exp-name",
        exp_name(map_name, actor),
        "--cuda" if args.device == "cuda" else "--no-cuda",
        *shlex.split(args.train_args),
    ]


def exp_name(map_name: str, actor: str) -> str:
    return f"transfer_{map_name}_{actor}"


def run_logged(cmd: list[str], log_path: Path, cwd: Path) -> float:
    """Run ``cmd`` with stdout and stderr into ``log_path``; returns the wall time in seconds.

    Raises:
        RuntimeError: non-zero exit status (the message has the log's last lines).
    """
    log_path.parent.mkdir(parents=True, exist_ok=True)
    cwd.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    with open(log_path, "w") as log:
        log.write("$ " + " ".join(cmd) + "\n")
        log.flush()
        rc = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=cwd, env=env, check=False).returncode
    if rc != 0:
        tail = "".join(log_path.read_text().splitlines(keepends=True)[-20:])
        raise RuntimeError(f"command failed with exit status {rc} (log {log_path}):\n{tail}")
    return time.time() - t0


def train_or_reuse(args: Args, map_name: str, actor: str, ckpt_dir: Path, out: Path) -> Path:
    """Checkpoint ``<ckpt_dir>/<map>_<actor>.pt``, trained now unless it exists (and not ``--retrain``)."""
    dest = ckpt_dir / f"{map_name}_{actor}.pt"
    if dest.exists() and not args.retrain:
        print(f"reusing {dest}")
        return dest
    cmd = train_command(args, map_name, actor)
    log = out / "logs" / f"train_{map_name}_{actor}.log"
    print(f"training {actor} on {map_name}: log {log}", flush=True)
    wall = run_logged(cmd, log, out / "train")
    name = exp_name(map_name, actor)
    found = glob.glob(str(out / "train" / "runs" / f"{map_name}__{name}__{args.seed}__*" / f"{name}.pt"))
    if not found:
        raise RuntimeError(f"training finished but wrote no {name}.pt under {out / 'train' / 'runs'} (log {log})")
    ckpt_dir.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(max(found, key=os.path.getmtime), dest)
    print(f"  done in {wall:.0f} s -> {dest}", flush=True)
    return dest


def pivot_table(csv_path: Path) -> str:
    """Markdown pivot of an eval_transfer CSV: one line per (source, actor), one column per target map."""
    with open(csv_path, newline="") as f:
        rows = list(csv.DictReader(f))
    targets = list(dict.fromkeys(r["target_map"] for r in rows))
    series = list(dict.fromkeys((r["source_map"], r["actor_type"]) for r in rows))
    lines = ["| source (actor) | " + " | ".join(targets) + " |", "|---|" + "---|" * len(targets)]
    for src, actor in series:
        cells = []
        for t in targets:
            r = next((r for r in rows if (r["source_map"], r["actor_type"], r["target_map"]) == (src, actor, t)), None)
            if r is None:
                cells.append("")
            elif r["error"]:
                cells.append("n/a (" + ("size mismatch" if "size mismatch" in r["error"] else "does not fit") + ")")
            else:
                cells.append(f"{float(r['win_rate']):.2f} [{float(r['ci_low']):.2f}, {float(r['ci_high']):.2f}]")
        lines.append(f"| {src} ({actor}) | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


_INFO_CACHE: dict[str, dict] = {}


def _env_info(map_name: str) -> dict:
    """``get_env_info()`` of a map's default simulator (cached; building a 1-env simulator is cheap)."""
    if map_name not in _INFO_CACHE:
        import sc2_envs

        _INFO_CACHE[map_name] = sc2_envs.make_batched(map_name, num_envs=1).get_env_info()
    return _INFO_CACHE[map_name]


def matrix_cells(config: dict, maps: tuple[str, ...] | list[str]) -> dict[str, str]:
    """For each map, ``""`` if the checkpoint's actors can play it, else why not.

    Args:
        config: a checkpoint's ``config`` (``models.save_checkpoint``).
        maps: map names.

    Returns:
        ``{map: ""}`` for a playable cell, else :data:`NOT_COVERED` (a unit class of the map has no
        actor in the checkpoint), :data:`SIZE_MISMATCH` (MLP flat sizes differ) or
        :data:`LAYOUT_MISMATCH` (GNN entity widths / unit-type vocabulary differ), decided by
        ``eval_transfer.fit_error``, the check the evaluation itself makes.
    """
    sys.path.insert(0, str(REPO / "algos"))
    try:
        from eval_transfer import fit_error
    finally:
        sys.path.pop(0)
    from models import unit_classes

    out = {}
    for m in maps:
        info = _env_info(m)
        if not set(unit_classes(info)) <= set(config["classes"]):
            out[m] = NOT_COVERED
            continue
        err = fit_error(config, info)
        out[m] = "" if not err else (SIZE_MISMATCH if "size mismatch" in err else LAYOUT_MISMATCH)
    return out


def matrix_columns(configs: list[dict], maps: tuple[str, ...] = ()) -> list[str]:
    """The matrix columns: ``maps`` if given (in :data:`MATRIX_MAPS` order), else the maps of
    :data:`MATRIX_MAPS` that share a unit class with at least one checkpoint, so that a family's
    map a row cannot play shows as ``n/a`` (e.g. 1c3s5z next to a stalker/zealot checkpoint).

    Raises:
        ValueError: a name of ``maps`` that is not a SMAC map of :data:`MATRIX_MAPS`.
    """
    from models import unit_classes

    bad = [m for m in maps if m not in MATRIX_MAPS]
    if bad:
        raise ValueError(f"--maps: unknown map(s) {bad}; expected names from {', '.join(MATRIX_MAPS)}")
    if maps:
        return [m for m in MATRIX_MAPS if m in maps]
    return [m for m in MATRIX_MAPS if any(set(unit_classes(_env_info(m))) & set(c["classes"]) for c in configs)]


def row_label(config: dict) -> str:
    """``3m+8m (gnn)``: the training map(s) and the actor type of a checkpoint."""
    from models import checkpoint_maps

    return f"{'+'.join(checkpoint_maps(config))} ({config['actor_type']})"


def matrix_rows(args: Args, paths: list[Path]) -> tuple[list, list[str]]:
    """Evaluate every playable (checkpoint, map) cell; returns ``(rows, columns)``.

    ``rows``: ``eval_transfer.TransferRow`` per cell, ``error`` set to the n/a label (and no figures)
    where :func:`matrix_cells` says the checkpoint cannot play the map.
    """
    sys.path.insert(0, str(REPO / "algos"))
    try:
        import eval_transfer as et
    finally:
        sys.path.pop(0)
    ckpts = {str(p): et.read_checkpoint(str(p)) for p in paths}
    columns = matrix_columns([c["config"] for c in ckpts.values()], tuple(args.maps))
    rows = []
    for p, c in ckpts.items():
        cfg = c["config"]
        cells = matrix_cells(cfg, columns)
        for m in columns:
            t0 = time.time()
            if cells[m]:
                r = et.TransferRow(
                    target_map=m,
                    source_map=et.source_label(cfg),
                    actor_type=cfg["actor_type"],
                    kind=et.transfer_kind(et.source_label(cfg), m),
                    error=cells[m],
                    checkpoint=p,
                    source_steps=int(c.get("global_step", 0)),
                )
            else:
                r = et.evaluate_transfer(p, m, args.episodes, args.max_envs, args.eval_seed, True, args.device, ckpt=c)
            rows.append(r)
            shown = r.error or f"{r.win_rate:.2f} [{r.ci_low:.2f}, {r.ci_high:.2f}] ({time.time() - t0:.0f} s)"
            print(f"  {row_label(cfg)} -> {m}: {shown}", flush=True)
    return rows, columns


def _cell_text(r) -> str:
    if r.error:
        return r.error if r.error.startswith("n/a") else "n/a (" + r.error.split(":")[0] + ")"
    text = f"{r.win_rate:.2f} [{r.ci_low:.2f}, {r.ci_high:.2f}]"
    return f"**{r.win_rate:.2f}** [{r.ci_low:.2f}, {r.ci_high:.2f}]" if r.kind == "in-distribution" else text


def matrix_markdown(rows: list, columns: list[str]) -> str:
    """Markdown pivot: one line per checkpoint, one column per map; in-distribution cells in bold."""
    series = list(dict.fromkeys(r.checkpoint for r in rows))
    lines = ["| checkpoint | " + " | ".join(columns) + " |", "|---|" + "---|" * len(columns)]
    for ck in series:
        mine = {r.target_map: r for r in rows if r.checkpoint == ck}
        label = f"{mine[columns[0]].source_map} ({mine[columns[0]].actor_type})" if columns else ck
        lines.append(f"| {label} | " + " | ".join(_cell_text(mine[m]) if m in mine else "" for m in columns) + " |")
    return "\n".join(lines) + "\n"


def plot_matrix(rows: list, columns: list[str], path: Path, title: str) -> None:
    """Heat map of the win rates (rows: checkpoints, columns: maps), each cell annotated with the win rate
    and its Wilson 95 % interval; cells the checkpoint cannot play are grey with their n/a label."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    series = list(dict.fromkeys(r.checkpoint for r in rows))
    grid = np.full((len(series), len(columns)), np.nan)
    labels = []
    for i, ck in enumerate(series):
        mine = {r.target_map: r for r in rows if r.checkpoint == ck}
        any_row = next(iter(mine.values()))
        labels.append(f"{any_row.source_map} ({any_row.actor_type})")
        for j, m in enumerate(columns):
            if m in mine and not mine[m].error:
                grid[i, j] = mine[m].win_rate
    fig, ax = plt.subplots(figsize=(max(6.0, 1.05 * len(columns) + 2.5), max(2.5, 0.62 * len(series) + 1.6)))
    cmap = plt.get_cmap("viridis").with_extremes(bad="#d9d9d9")
    im = ax.imshow(np.ma.masked_invalid(grid), cmap=cmap, vmin=0.0, vmax=1.0, aspect="auto")
    for i, ck in enumerate(series):
        mine = {r.target_map: r for r in rows if r.checkpoint == ck}
        for j, m in enumerate(columns):
            r = mine.get(m)
            if r is None:
                continue
            if r.error:
                text, color = _cell_text(r).replace("n/a (", "n/a\n("), "#555555"
            else:
                text = f"{r.win_rate:.2f}\n[{r.ci_low:.2f}, {r.ci_high:.2f}]"
                color = "black" if r.win_rate > 0.6 else "white"
            weight = "bold" if r.kind == "in-distribution" and not r.error else "normal"
            ax.text(j, i, text, ha="center", va="center", fontsize=6.5, color=color, fontweight=weight)
    ax.set_xticks(range(len(columns)), columns, rotation=40, ha="right")
    ax.set_yticks(range(len(series)), labels)
    ax.set_xlabel("target map")
    ax.set_ylabel("checkpoint (actor)")
    ax.set_title(title, fontsize=9)
    fig.colorbar(im, ax=ax, label="greedy win rate", fraction=0.03)
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)


def run_matrix(args: Args, paths: list[Path], out: Path) -> str:
    """Evaluate the matrix of ``paths`` and write ``transfer_matrix.{csv,md,png}`` into ``out``; returns the Markdown."""
    sys.path.insert(0, str(REPO / "algos"))
    try:
        import eval_transfer as et
    finally:
        sys.path.pop(0)
    if args.episodes < 1:
        raise ValueError(f"--episodes {args.episodes}: expected an integer >= 1")
    t0 = time.time()
    print(f"transfer matrix: {len(paths)} checkpoints, {args.episodes} greedy episodes per cell, eval seed {args.eval_seed}")
    rows, columns = matrix_rows(args, paths)
    out.mkdir(parents=True, exist_ok=True)
    et.write_csv(rows, str(out / "transfer_matrix.csv"))
    head = (
        f"Greedy win rate [Wilson 95% CI] over {args.episodes} episodes per cell (evaluation seed {args.eval_seed}, "
        f"fresh seeds disjoint from training; embedded simulator); rows: checkpoint (training maps, actor), columns: "
        "target map; bold: a training map of the row.\n\n"
    )
    table = matrix_markdown(rows, columns)
    (out / "transfer_matrix.md").write_text(head + table)
    plot_matrix(
        rows, columns, out / "transfer_matrix.png", f"Transfer matrix: greedy win rate, {args.episodes} episodes per cell"
    )
    print("\n" + table)
    print(f"wrote {out / 'transfer_matrix.csv'}, .md, .png ({time.time() - t0:.0f} s)")
    return table


def main(args: Args) -> str:
    """Train/reuse, evaluate, write the tables; returns the pivot table (with ``--matrix``: the matrix's Markdown)."""
    out = Path(args.out_dir).resolve()
    ckpt_dir = Path(args.checkpoint_dir).resolve() if args.checkpoint_dir else out / "checkpoints"
    print("transfer_table configuration:")
    for k, v in asdict(args).items():
        print(f"  {k}: {v}")
    print(f"  checkpoint dir: {ckpt_dir}", flush=True)
    missing = [p for p in args.checkpoints if not Path(p).is_file()]
    if missing:
        raise FileNotFoundError(f"--checkpoints: no such file(s) {missing}")
    ckpts = [train_or_reuse(args, m, a, ckpt_dir, out) for m in args.sources for a in args.actors]
    ckpts += [Path(p).resolve() for p in args.checkpoints]
    if not ckpts:
        raise ValueError("no checkpoint to evaluate: give --sources to train/reuse or --checkpoints files")
    if args.matrix:
        return run_matrix(args, ckpts, out)
    cmd = [
        sys.executable,
        str(REPO / "algos" / "eval_transfer.py"),
        "--checkpoints",
        *map(str, ckpts),
        "--maps",
        *(args.maps or TABLE_MAPS),
        "--episodes",
        str(args.episodes),
        "--seed",
        str(args.eval_seed),
        "--device",
        args.device,
        "--out-dir",
        str(out),
        "--name",
        "transfer_table",
    ]
    print(
        f"evaluating {len(ckpts)} checkpoints on {list(args.maps or TABLE_MAPS)}: log {out / 'logs' / 'eval.log'}", flush=True
    )
    before = set(out.glob("transfer_table__*"))
    wall = run_logged(cmd, out / "logs" / "eval.log", out)
    # eval_transfer.py writes into a new folder <out>/transfer_table__<unix time>[-k]: the one that appeared
    (eval_dir,) = set(out.glob("transfer_table__*")) - before
    for ext in ("csv", "md", "png"):  # the latest tables also at the documented place, <out>/transfer_table.*
        shutil.copyfile(eval_dir / f"transfer_table.{ext}", out / f"transfer_table.{ext}")
    pivot = pivot_table(out / "transfer_table.csv")
    (out / "transfer_pivot.md").write_text(
        f"Win rate [Wilson 95% CI] over {args.episodes} greedy episodes (embedded simulator); rows: source map (actor), "
        f"columns: target map. Training: {args.total_timesteps} env steps, {args.num_envs} envs, time budget "
        f"{args.time_budget_s or 'none'} s, seed {args.seed}.\n\n" + pivot
    )
    print(f"evaluation took {wall:.0f} s\n")
    print((out / "transfer_table.md").read_text())
    print(pivot)
    print(f"wrote {out / 'transfer_table.csv'}, .md, .png and {out / 'transfer_pivot.md'}")
    return pivot


if __name__ == "__main__":
    main(tyro.cli(Args))
