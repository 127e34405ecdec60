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
fresh-seed episodes (``sc2_envs.training.evaluation.evaluate`` through ``eval_transfer.evaluate_transfer``).
A cell the checkpoint cannot play is not an error: ``n/a (classes not covered)`` (a unit class of
the map has no actor in the checkpoint), ``n/a (size mismatch)`` (an MLP's flat input/output sizes
differ) or ``n/a (layout mismatch)`` (a GNN's entity widths differ, e.g. another unit-type
vocabulary: 1c3s5z's three type bits, or the single-type 3s_vs_3z with none, against 2s3z's two).
Outputs ``<out_dir>/transfer_matrix.{csv,md,png}`` (the PNG is a heat map). Where several checkpoints
are independent seeds of one recipe (same training maps, actor type and env steps), it also writes
``<out_dir>/transfer_matrix_seeds.{csv,md}``: per recipe and map, the median win rate over the seeds,
its min-max range and the seeds' own figures (:func:`seed_summary`).

    python benchmarks/transfer_table.py --matrix --sources --checkpoints checkpoints/*.pt --episodes 100
    python benchmarks/transfer_table.py --matrix --sources --checkpoints a.pt --maps 3m 8m --episodes 20   # a few cells

``--smacv2``: the SMACv2 transfer table. Rows are checkpoints as for ``--matrix`` (e.g. trained on
``protoss_5_vs_5``, or on several scenarios, ``--sources protoss_5_vs_5+protoss_10_vs_10``), columns
the five team sizes of each SMACv2 race a row has a unit class of (``protoss_5_vs_5``,
``protoss_10_vs_10``, ``protoss_10_vs_11``, ``protoss_20_vs_20``, ``protoss_20_vs_23``; ``--maps``:
exactly the given scenarios), cells as above (greedy, ``--episodes`` fresh-seed episodes, 100 by
default, Wilson 95 % intervals). A cell the checkpoint cannot play is ``n/a`` with its reason in the
CSV's ``error`` column and under the Markdown table: ``n/a (other race)``, ``n/a (size mismatch)`` (an
MLP actor on another team size), ``n/a (layout mismatch)`` (other feature options) or
``n/a (SMAC v1 checkpoint)`` (a v1 checkpoint such as ``checkpoints/2s3z_gnn.pt``: no colossus actor,
two type bits against SMACv2's three, no own position; see :func:`smacv2_cell`). Outputs
``<out_dir>/transfer_smacv2.{csv,md,png}``.

    python benchmarks/transfer_table.py --smacv2 --sources protoss_5_vs_5 --actors gnn mlp --total-timesteps 2000000
    python benchmarks/transfer_table.py --smacv2 --sources --checkpoints a.pt checkpoints/2s3z_gnn.pt --episodes 100

Outputs under ``--out-dir``: ``checkpoints/<map>_<actor>.pt`` (unless ``--checkpoint-dir``),
``logs/train_<map>_<actor>.log``, ``logs/eval.log``, ``train/runs/...`` (TensorBoard of each
training run), ``transfer_table__<unix time>/`` (the evaluation's own run folder, with its
``run_meta.json``), and ``transfer_table.{csv,md,png}`` (copied from it) plus ``transfer_pivot.md``.
A checkpoint file that already exists is reused (``--retrain`` to train again); e.g.
``--checkpoint-dir checkpoints`` evaluates the shipped GNN checkpoints and trains only the MLP ones.
"""

from __future__ import annotations

import collections
import csv
import glob
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import textwrap
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import tyro

from sc2_envs.validation import check_out_dir

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
DEFAULT_SOURCES = ("2s3z", "3s5z")
"""Training maps when ``--sources`` is not given (SMAC v1 table and matrix)."""
DEFAULT_SMACV2_SOURCES = ("protoss_5_vs_5",)
"""Training scenarios when ``--sources`` is not given with ``--smacv2``."""
OTHER_RACE = "n/a (other race)"
V1_CHECKPOINT = "n/a (SMAC v1 checkpoint)"
"""SMACv2 table labels: a checkpoint whose actors are all of another race than the scenario's, and a
checkpoint trained on SMAC v1 maps (see :func:`smacv2_cell` for why those are not evaluated)."""


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
    sources: tuple[str, ...] | None = None
    """maps to train on (default: 2s3z and 3s5z; with --smacv2 protoss_5_vs_5; `--sources` with no names: none)"""
    actors: tuple[str, ...] = ("gnn", "mlp")
    """actor types to train"""
    maps: tuple[str, ...] = ()
    """target maps of the evaluation (empty: TABLE_MAPS); with --matrix a filter of the matrix columns (empty: every covered
    map)"""
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
    """--matrix / --smacv2: the simulator runs min(episodes, max_envs) envs per cell"""
    smacv2: bool = False
    """evaluate the SMACv2 transfer table (rows: checkpoints, columns: the 5 team sizes of each SMACv2 race a row's
    classes belong to; --maps: exactly the given scenarios) instead of the --maps table"""


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


TRAIN_FLAGS = (
    "--map",
    "--actor",
    "--seed",
    "--total-timesteps",
    "--num-envs",
    "--time-budget-s",
    "--save-model",
    "--no-save-model",
    "--exp-name",
    "--cuda",
    "--no-cuda",
)
"""The happo_gnn.py flags :func:`train_command` sets; ``--train-args`` may not repeat them."""


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
    """Markdown pivot of an eval_transfer CSV: one line per checkpoint, labelled ``source (actor)`` (with the
    file stem, or folders and stem where stems collide too, where two checkpoints share that label), one column per target
    map."""
    with open(csv_path, newline="") as f:
        rows = list(csv.DictReader(f))
    targets = list(dict.fromkeys(r["target_map"] for r in rows))
    # one line per checkpoint: two of one (source, actor), e.g. two seeds, are two lines, not the first one alone
    labels = {r["checkpoint"]: f"{r['source_map']} ({r['actor_type']})" for r in reversed(rows)}
    owners: dict[str, list[str]] = {}
    for ck, lab in labels.items():
        owners.setdefault(lab, []).append(ck)
    for lab, cks in owners.items():  # same label: the file names (with folders where stems collide) tell them apart
        if len(cks) > 1:
            labels.update({ck: f"{lab} {name}" for ck, name in _eval_transfer().short_names(cks).items()})
    series = list(dict.fromkeys(r["checkpoint"] for r in rows))
    lines = ["| source (actor) | " + " | ".join(targets) + " |", "|---|" + "---|" * len(targets)]
    for ck in series:
        cells = []
        for t in targets:
            r = next((r for r in rows if (r["checkpoint"], r["target_map"]) == (ck, t)), None)
            if r is None:
                cells.append("")
            elif r["error"]:
                cells.append("n/a (" + ("size mismatch" if "size mismatch" in r["error"] else "does not fit") + ")")
            else:
                cells.append(f"{float(r['win_rate']):.2f} [{float(r['ci_low']):.2f}, {float(r['ci_high']):.2f}]")
        lines.append(f"| {labels[ck]} | " + " | ".join(cells) + " |")
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


# ---------------------------------------------------------------------------- SMACv2 transfer table


def _eval_transfer():
    sys.path.insert(0, str(REPO / "algos"))
    try:
        import eval_transfer
    finally:
        sys.path.pop(0)
    return eval_transfer


def smacv2_columns(configs: list[dict], maps: tuple[str, ...] = ()) -> list[str]:
    """The SMACv2 table's columns: ``maps`` if given (race by race, in team-size order 5v5, 10v10,
    10v11, 20v20, 20v23), else the five scenarios of every race (protoss, terran, zerg) whose unit
    types share a class with at least one checkpoint (a SMAC v1 stalker/zealot checkpoint gets the
    protoss columns, where it shows as n/a with the reason).

    Raises:
        ValueError: a name of ``maps`` that is not a SMACv2 scenario, or no race shares a class with
            any checkpoint (the message lists the scenarios / the checkpoints' classes).
    """
    from sc2_envs import smacv2

    order = [f"{r}_{n}_vs_{e}" for r in smacv2.RACES for n, e in smacv2.TEAM_SIZES]
    bad = [m for m in maps if not smacv2.is_scenario(m)]
    if bad:
        raise ValueError(f"--maps: {bad} not SMACv2 scenario(s); expected names from {', '.join(order)}")
    if maps:
        return [m for m in order if m in maps]
    races = [r for r in smacv2.RACES if any(set(c["classes"]) & set(smacv2.RACE_SPECS[r].type_bit_order) for c in configs)]
    if not races:
        raise ValueError(
            f"no SMACv2 race has a unit class of the checkpoints (classes {[c['classes'] for c in configs]}); "
            f"races: { {r: list(smacv2.RACE_SPECS[r].type_bit_order) for r in smacv2.RACES} }"
        )
    return [m for m in order if m.split("_", 1)[0] in races]


def share_with_types(race: str, n: int, types: list[str]) -> float:
    """Probability that a SMACv2 ``weighted_teams`` ally team of ``n`` units of ``race`` holds at least
    one unit of ``types`` (a team made only of exception types is redrawn, as in SMACv2's
    ``WeightedTeamsDistribution``; weights from ``sc2_gen_{race}.yaml``)."""
    from sc2_envs import smacv2

    rs = smacv2.RACE_SPECS[race]
    w = dict(zip(rs.unit_types, rs.weights, strict=True))
    ok = sum(w[u] for u in rs.unit_types if u not in types)
    exc_ok = sum(w[u] for u in rs.exception_unit_types if u not in types)
    exc = sum(w[u] for u in rs.exception_unit_types)
    return 1.0 - (ok**n - exc_ok**n) / (1.0 - exc**n)


def smacv2_cell(config: dict, scenario: str) -> str:
    """``""`` if the checkpoint's actors can play SMACv2 ``scenario``, else ``"<n/a label>: <reason>"``.

    Labels: :data:`OTHER_RACE` (no actor of the scenario's race), :data:`V1_CHECKPOINT` (trained on
    SMAC v1 maps), :data:`NOT_COVERED`, :data:`SIZE_MISMATCH` (an MLP on another team size) or
    :data:`LAYOUT_MISMATCH` (e.g. trained with other feature options), the last three from
    ``eval_transfer.fit_error``, the check the evaluation itself makes.

    A SMAC v1 checkpoint is not evaluated on SMACv2 scenarios. Its classes can never cover a race
    (every SMACv2 team may draw each of the race's three types, e.g. a colossus with weight 0.1 per
    protoss unit), its observation layout differs (three unit-type bits instead of two; the own
    block has ``own_x``, ``own_y``), and the features it shares mean other things (distances and
    offsets over each unit's own sight range, SMACv2's enemy-visibility bookkeeping). Evaluating it
    only on episodes without a colossus, with the third type bit dropped, would measure another
    scenario; the reason names each of these for the checkpoint at hand.
    """
    from models import checkpoint_maps
    from sc2_envs import smacv2

    et = _eval_transfer()
    spec = smacv2.get_scenario(scenario)
    info = _env_info(scenario)
    src, classes = et.source_label(config), list(config["classes"])
    if not set(classes) & set(spec.kinds):
        return (
            f"{OTHER_RACE}: the checkpoint has actors for {classes} (trained on {src}); {scenario} is {spec.race} "
            f"({list(spec.kinds)})"
        )
    if not all(smacv2.is_scenario(m) for m in checkpoint_maps(config)):
        problems = []
        missing = [k for k in spec.kinds if k not in classes]
        if missing:
            share = share_with_types(spec.race, spec.n_units, missing)
            problems.append(
                f"no actor for {missing}, which SMACv2 draws into {share:.0%} of the {spec.n_units}-unit ally teams"
            )
        layout = et.fit_error({**config, "classes": classes + missing}, info)
        if layout:
            problems.append(layout)
        problems.append(
            "the features they share mean other things in SMACv2 (distances and offsets over each unit's own sight range, "
            "enemy-visibility bookkeeping)"
        )
        return f"{V1_CHECKPOINT}: trained on the SMAC v1 map(s) {src}: " + "; ".join(problems)
    err = et.fit_error(config, info)
    if not err:
        return ""
    label = NOT_COVERED if err.startswith("unit class") else SIZE_MISMATCH if "size mismatch" in err else LAYOUT_MISMATCH
    return f"{label}: {err}"


def smacv2_cells(config: dict, scenarios: list[str]) -> dict[str, str]:
    """:func:`smacv2_cell` of each scenario: ``{scenario: "" or "<n/a label>: <reason>"}``."""
    return {m: smacv2_cell(config, m) for m in scenarios}


def matrix_rows(args: Args, paths: list[Path], columns_fn=None, cells_fn=None) -> tuple[list, list[str], dict, dict]:
    """Evaluate every playable (checkpoint, map) cell; returns ``(rows, columns, seeds, amounts)``.

    ``seeds``: the training seed of each checkpoint path (``args["seed"]`` of its file, ``None`` if absent),
    for :func:`seed_summary`; ``amounts``: how much training each holds (``models.training_amount``: env
    steps, or a behaviour-cloning checkpoint's epochs), the budget part of its recipe.

    Raises ``ValueError`` before any evaluation when two checkpoints of one recipe (training maps, actor
    type, training amount) claim the same training seed (e.g. a checkpoint and its copy).

    ``rows``: ``eval_transfer.TransferRow`` per cell, ``error`` set to the n/a label (and no figures)
    where ``cells_fn`` says the checkpoint cannot play the map. ``columns_fn(configs, maps)`` /
    ``cells_fn(config, columns)``: :func:`matrix_columns` / :func:`matrix_cells` (default) or
    :func:`smacv2_columns` / :func:`smacv2_cells`.
    """
    et = _eval_transfer()
    columns_fn, cells_fn = columns_fn or matrix_columns, cells_fn or matrix_cells
    ckpts = {str(p): et.read_checkpoint(str(p)) for p in paths}
    amounts = {p: et.training_amount(c) for p, c in ckpts.items()}
    recipes: dict[tuple, list[str]] = {}
    for p, c in ckpts.items():
        recipes.setdefault((et.source_label(c["config"]), c["config"]["actor_type"], amounts[p]), []).append(p)
    for (source, actor, amount), members in recipes.items():  # seed_summary refuses this too, but after every cell
        known = [ckpts[p].get("args", {}).get("seed") for p in members]
        known = [s for s in known if s is not None]
        if len(known) != len(set(known)):
            raise ValueError(
                f"recipe {source} ({actor}, {amount}): checkpoints {members} share a seed ({known}); "
                "the same run twice is not two seeds (expected distinct training runs)"
            )
    columns = columns_fn([c["config"] for c in ckpts.values()], tuple(args.maps))
    rows = []
    for p, c in ckpts.items():
        cfg = c["config"]
        cells = cells_fn(cfg, columns)
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
                    source_steps=et.env_steps(c),
                    eval_seed=args.eval_seed,
                    num_envs=min(args.episodes, args.max_envs),
                )
            else:
                r = et.evaluate_transfer(p, m, args.episodes, args.max_envs, args.eval_seed, True, args.device, ckpt=c)
            rows.append(r)
            shown = (
                _cell_text(r) if r.error else f"{r.win_rate:.2f} [{r.ci_low:.2f}, {r.ci_high:.2f}] ({time.time() - t0:.0f} s)"
            )
            print(f"  {row_label(cfg)} -> {m}: {shown}", flush=True)
    return rows, columns, {p: c.get("args", {}).get("seed") for p, c in ckpts.items()}, amounts


def _cell_text(r) -> str:
    if r.error:  # "<n/a label>" or "<n/a label>: <reason>" (SMACv2 table), else an evaluation error
        return r.error.split(": ", 1)[0] if r.error.startswith("n/a") else "n/a (" + r.error.split(":")[0] + ")"
    text = f"{r.win_rate:.2f} [{r.ci_low:.2f}, {r.ci_high:.2f}]"
    return f"**{r.win_rate:.2f}** [{r.ci_low:.2f}, {r.ci_high:.2f}]" if r.kind == "in-distribution" else text


def series_labels(rows: list) -> dict[str, str]:
    """Row label of each checkpoint in ``rows`` (first-seen order): ``"3m+8m (gnn)"``, and where two
    checkpoints share one (e.g. two seeds of one recipe), each followed by its file name's stem."""
    plain: dict[str, str] = {}
    for r in rows:
        plain.setdefault(r.checkpoint, f"{r.source_map} ({r.actor_type})")
    counts = collections.Counter(plain.values())
    return {ck: lab if counts[lab] == 1 else f"{lab} {Path(ck).stem}" for ck, lab in plain.items()}


def matrix_markdown(rows: list, columns: list[str]) -> str:
    """Markdown pivot: one line per checkpoint, one column per map; in-distribution cells in bold."""
    lines = ["| checkpoint | " + " | ".join(columns) + " |", "|---|" + "---|" * len(columns)]
    for ck, label in series_labels(rows).items():
        mine = {r.target_map: r for r in rows if r.checkpoint == ck}
        lines.append(f"| {label} | " + " | ".join(_cell_text(mine[m]) if m in mine else "" for m in columns) + " |")
    return "\n".join(lines) + "\n"


SEED_COLUMNS = [
    "source_map",
    "actor_type",
    "source_steps",
    "target_map",
    "kind",
    "seeds",
    "n",
    "median",
    "min",
    "max",
    "win_rates",
    "episodes",
    "error",
]
"""Columns of ``transfer_matrix_seeds.csv`` (one line per recipe and target map; see :func:`seed_summary`)."""


def seed_summary(rows: list, seeds: dict[str, int | None], amounts: dict[str, str] | None = None) -> list[dict]:
    """Median over independent seeds of each recipe, per target map.

    A recipe is what a checkpoint was trained as, less its seed: the training map(s) (``source_map``),
    the actor type and the training amount (``amounts``, else the env steps ``source_steps``); two
    checkpoints of one recipe at other budgets are two recipes (so are two epochs of one behaviour-cloning
    run, which both have 0 env steps). Only recipes with >= 2 checkpoints are summarized.

    Args:
        rows: ``eval_transfer.TransferRow``-like rows of :func:`matrix_rows` (``checkpoint``,
            ``source_map``, ``actor_type``, ``source_steps``, ``target_map``, ``kind``, ``win_rate``,
            ``episodes``, ``error``).
        seeds: training seed of each checkpoint path (``args["seed"]`` of its file; ``None`` if unknown).
        amounts: training amount of each checkpoint path (:func:`matrix_rows`' ``amounts``); None or a
            missing path: ``"<source_steps> env steps"``.

    Returns:
        One dict per (recipe, target map) in first-seen order, keys :data:`SEED_COLUMNS`: ``n``
        checkpoints, ``seeds`` (``"1 2 3"``), ``median`` / ``min`` / ``max`` of their win rates and
        ``win_rates`` in the order of ``seeds`` (``None`` and ``error`` = the n/a label, shared by the
        seeds, where a cell is n/a for any of them), ``episodes`` per seed; and ``training`` (the recipe's
        training amount, not written to the CSV).

    Raises:
        ValueError: two checkpoints of one recipe claim the same seed (the same run twice is not two seeds).
    """
    groups: dict[tuple, list[str]] = {}
    for r in rows:
        amount = (amounts or {}).get(r.checkpoint) or f"{r.source_steps:,} env steps"
        ckpts = groups.setdefault((r.source_map, r.actor_type, amount), [])
        if r.checkpoint not in ckpts:
            ckpts.append(r.checkpoint)
    out = []
    for (source, actor, amount), ckpts in groups.items():
        if len(ckpts) < 2:
            continue
        known = [seeds.get(c) for c in ckpts if seeds.get(c) is not None]
        if len(known) != len(set(known)):
            raise ValueError(f"recipe {source} ({actor}, {amount}): checkpoints {ckpts} share a seed ({known})")
        cells: dict[str, list] = {}
        for r in rows:
            if r.checkpoint in ckpts:
                cells.setdefault(r.target_map, []).append(r)
        for target, cell in cells.items():
            cell.sort(key=lambda r: ckpts.index(r.checkpoint))
            errors = sorted({_cell_text(r) for r in cell if r.error})
            rates = None if errors else [float(r.win_rate) for r in cell]
            out.append(
                {
                    "source_map": source,
                    "actor_type": actor,
                    "source_steps": cell[0].source_steps,
                    "training": amount,
                    "target_map": target,
                    "kind": cell[0].kind,
                    "seeds": " ".join("?" if seeds.get(r.checkpoint) is None else str(seeds[r.checkpoint]) for r in cell),
                    "n": len(cell),
                    "median": None if rates is None else statistics.median(rates),
                    "min": None if rates is None else min(rates),
                    "max": None if rates is None else max(rates),
                    "win_rates": None if rates is None else " ".join(f"{x:.2f}" for x in rates),
                    "episodes": " ".join(str(r.episodes) for r in cell if r.episodes is not None),
                    "error": " / ".join(errors),
                }
            )
    return out


def seed_summary_markdown(summary: list[dict], columns: list[str]) -> str:
    """Markdown pivot of :func:`seed_summary`: one line per recipe, one column per map, cells
    ``median [min-max]`` (bold: a training map), ``""`` if there is no summary."""
    recipes: dict[tuple, dict[str, dict]] = {}
    for s in summary:
        recipes.setdefault((s["source_map"], s["actor_type"], s["training"], s["seeds"]), {})[s["target_map"]] = s
    if not recipes:
        return ""
    lines = ["| recipe (seeds) | " + " | ".join(columns) + " |", "|---|" + "---|" * len(columns)]
    for (source, actor, amount, seed_list), cells in recipes.items():
        texts = []
        for m in columns:
            s = cells.get(m)
            if s is None:
                texts.append("")
            elif s["median"] is None:
                texts.append(s["error"])
            else:
                med = f"**{s['median']:.2f}**" if s["kind"] == "in-distribution" else f"{s['median']:.2f}"
                texts.append(f"{med} [{s['min']:.2f}-{s['max']:.2f}]")
        label = f"{source} ({actor}, {amount}; seeds {seed_list.replace(' ', ', ')})"
        lines.append(f"| {label} | " + " | ".join(texts) + " |")
    return "\n".join(lines) + "\n"


def write_seed_summary(summary: list[dict], path: Path) -> None:
    """``summary`` as CSV (columns :data:`SEED_COLUMNS`, empty where a figure is absent)."""
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=SEED_COLUMNS)
        w.writeheader()
        for s in summary:
            w.writerow({k: ("" if s[k] is None else s[k]) for k in SEED_COLUMNS})


def plot_matrix(rows: list, columns: list[str], path: Path, title: str) -> None:
    """Heat map of the win rates (rows: checkpoints, columns: maps), each cell annotated with the win rate
    and its Wilson 95 % interval; cells the checkpoint cannot play are grey with their n/a label."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    named = series_labels(rows)
    series, labels = list(named), list(named.values())
    grid = np.full((len(series), len(columns)), np.nan)
    for i, ck in enumerate(series):
        mine = {r.target_map: r for r in rows if r.checkpoint == ck}
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
                # "n/a" over the reason, a few words a line: a whole label is wider than a cell
                reason = _cell_text(r).removeprefix("n/a").strip(" ()")
                text, color = "n/a\n" + textwrap.fill(reason, width=12), "#555555"
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


def na_notes(rows: list) -> str:
    """Markdown list of the reason of every n/a cell that has one (SMACv2 table), one line per
    (checkpoint, distinct reason) with the target maps it applies to; ``""`` if none."""
    by: dict = {}
    for r in rows:
        if r.error.startswith("n/a") and ": " in r.error:
            by.setdefault((f"{r.source_map} ({r.actor_type})", r.error), []).append(r.target_map)
    lines = [f"* {label} on {', '.join(maps)}: {err}" for (label, err), maps in by.items()]
    return ("\n**n/a cells**\n\n" + "\n".join(lines) + "\n") if lines else ""


def run_matrix(args: Args, paths: list[Path], out: Path, smacv2: bool = False) -> str:
    """Evaluate the matrix of ``paths`` and write ``transfer_matrix.{csv,md,png}`` into ``out`` (``smacv2``:
    the SMACv2 table, ``transfer_smacv2.{csv,md,png}``); returns the Markdown."""
    et = _eval_transfer()
    if args.episodes < 1:
        raise ValueError(f"--episodes {args.episodes}: expected an integer >= 1")
    t0 = time.time()
    stem, what = ("transfer_smacv2", "SMACv2 transfer table") if smacv2 else ("transfer_matrix", "transfer matrix")
    print(f"{what}: {len(paths)} checkpoints, {args.episodes} greedy episodes per cell, eval seed {args.eval_seed}")
    if args.episodes < 100:
        print(f"note: {args.episodes} episodes per cell (fewer than 100): a quick look, not a figure to report")
    if smacv2:
        rows, columns, seeds, amounts = matrix_rows(args, paths, smacv2_columns, smacv2_cells)
    else:
        rows, columns, seeds, amounts = matrix_rows(args, paths)
    out.mkdir(parents=True, exist_ok=True)
    et.write_csv(rows, str(out / f"{stem}.csv"))
    head = (
        f"Greedy win rate [Wilson 95% CI] over {args.episodes} episodes per cell (evaluation seed {args.eval_seed}, "
        f"fresh seeds disjoint from training; embedded simulator); rows: checkpoint (training maps, actor), columns: "
        f"target {'SMACv2 scenario' if smacv2 else 'map'}; bold: a training map of the row.\n\n"
    )
    table = matrix_markdown(rows, columns)
    (out / f"{stem}.md").write_text(head + table + na_notes(rows))
    title = f"{'SMACv2 transfer' if smacv2 else 'Transfer matrix'}: greedy win rate, {args.episodes} episodes per cell"
    plot_matrix(rows, columns, out / f"{stem}.png", title)
    print("\n" + table + na_notes(rows))
    summary = seed_summary(rows, seeds, amounts)
    if summary:
        seed_table = seed_summary_markdown(summary, columns)
        write_seed_summary(summary, out / f"{stem}_seeds.csv")
        (out / f"{stem}_seeds.md").write_text(
            f"Median greedy win rate [min-max] over the independent seeds of each recipe (same training maps, actor "
            f"and env steps), {args.episodes} episodes per seed and cell (evaluation seed {args.eval_seed}); bold: a "
            f"training map of the recipe; each seed's own figures in `{stem}_seeds.csv` and `{stem}.csv`.\n\n" + seed_table
        )
        print("median over seeds:\n" + seed_table)
    print(f"wrote {out / (stem + '.csv')}, .md, .png ({time.time() - t0:.0f} s)")
    return table


def resolve_sources(args: Args) -> tuple[str, ...]:
    """The training maps of a run: ``--sources`` as given, else :data:`DEFAULT_SOURCES`, or with
    ``--smacv2`` :data:`DEFAULT_SMACV2_SOURCES` (a SMAC v1 checkpoint cannot play a scenario)."""
    if args.sources is not None:
        return tuple(args.sources)
    return DEFAULT_SMACV2_SOURCES if args.smacv2 else DEFAULT_SOURCES


def check_names(args: Args) -> None:
    """``--maps`` and ``--sources`` name known maps (with ``--smacv2``, ``--maps`` SMACv2 scenarios only).

    Raises:
        ValueError: naming the bad names and the valid ones.
    """
    import sc2_envs

    valid = sc2_envs.list_maps("all")
    for flag, names in (("--sources", args.sources or ()), ("--maps", args.maps)):
        bad = [m for m in names if m not in valid]
        if bad:
            raise ValueError(f"{flag}: unknown map(s) {bad}; expected names from {', '.join(valid)}")
    if args.smacv2:
        smacv2_columns([], args.maps)  # raises for a v1 map among the columns
    elif args.matrix:
        matrix_columns([], args.maps)  # raises for a map that is not a matrix column (e.g. a SMACv2 scenario)


def check_args(args: Args) -> None:
    """Reject a bad command line before any training run: the evaluation's flags are checked here too, so
    that a typo does not surface only after hours of training.

    Raises:
        ValueError: ``--matrix`` with ``--smacv2``; ``--episodes`` or ``--max-envs`` below 1; a negative
            ``--eval-seed``; a ``--device`` other than cpu / cuda; an ``--actors`` entry other than gnn / mlp;
            an ``--out-dir`` or ``--checkpoint-dir`` that is (inside) a file (``check_out_dir``); a
            ``--train-args`` that repeats a flag of :data:`TRAIN_FLAGS`; unknown map names (:func:`check_names`).
    """
    from sc2_envs.training.cli import flag_clashes

    if args.matrix and args.smacv2:
        raise ValueError("--matrix and --smacv2: give one of them (the v1 transfer matrix or the SMACv2 table)")
    if args.episodes < 1:
        raise ValueError(f"--episodes {args.episodes}: expected an integer >= 1")
    if args.max_envs < 1:
        raise ValueError(f"--max-envs {args.max_envs}: expected an integer >= 1")
    if args.eval_seed < 0:
        raise ValueError(f"--eval-seed {args.eval_seed}: expected a non-negative integer")
    if args.device not in ("cpu", "cuda"):
        raise ValueError(f"--device {args.device!r}; expected 'cpu' or 'cuda' (happo_gnn.py selects the GPU with --cuda)")
    bad = [a for a in args.actors if a not in ("gnn", "mlp")]
    if bad:
        raise ValueError(f"--actors: {bad}; expected gnn and/or mlp")
    clash = flag_clashes(args.train_args, TRAIN_FLAGS, "--train-args")
    if clash:  # the last flag wins: e.g. --train-args '--actor mlp' would train an MLP saved as <map>_gnn.pt
        raise ValueError(
            f"--train-args {args.train_args!r} sets {', '.join(clash)}, which train_command sets on every run; "
            "use this script's own flags instead"
        )
    check_out_dir(args.out_dir)
    if args.checkpoint_dir:
        check_out_dir(args.checkpoint_dir, "--checkpoint-dir")
    check_names(args)


def main(args: Args) -> str:
    """Train/reuse, evaluate, write the tables; returns the pivot table (with ``--matrix``: the matrix's Markdown)."""
    out = Path(args.out_dir).resolve()
    ckpt_dir = Path(args.checkpoint_dir).resolve() if args.checkpoint_dir else out / "checkpoints"
    print("transfer_table configuration:")
    for k, v in asdict(args).items():
        print(f"  {k}: {v}")
    print(f"  checkpoint dir: {ckpt_dir}", flush=True)
    check_args(args)  # before any training: a typo must not cost the training runs
    missing = [p for p in args.checkpoints if not Path(p).is_file()]
    if missing:
        raise FileNotFoundError(f"--checkpoints: no such file(s) {missing}")
    if args.sources is None:
        args.sources = resolve_sources(args)
        print(f"  sources (default{' for --smacv2' if args.smacv2 else ''}): {' '.join(args.sources)}", flush=True)
    ckpts = [train_or_reuse(args, m, a, ckpt_dir, out) for m in args.sources for a in args.actors]
    ckpts += [Path(p).resolve() for p in args.checkpoints]
    if not ckpts:
        raise ValueError("no checkpoint to evaluate: give --sources to train/reuse or --checkpoints files")
    if args.matrix or args.smacv2:
        return run_matrix(args, ckpts, out, smacv2=args.smacv2)
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
    from sc2_envs.training.cli import flowing_help

    main(tyro.cli(flowing_help(Args)))
