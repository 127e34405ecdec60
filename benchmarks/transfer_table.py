"""In-distribution / scale-up / scale-down transfer table of GNN and MLP actors.

Trains (or reuses) one HAPPO checkpoint per (source map, actor type) with ``algos/happo_gnn.py``,
each as its own subprocess with its own log, then evaluates every checkpoint on every target map
with ``algos/eval_transfer.py`` (greedy, Wilson 95 % intervals) and prints a pivot table.

    python benchmarks/transfer_table.py --device cuda --total-timesteps 2000000 --num-envs 128

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
    maps: tuple[str, ...] = ("2s3z", "3s5z", "3s5z_vs_3s6z")
    """target maps of the evaluation"""
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


def train_command(args: Args, map_name: str, actor: str) -> list[str]:
    """The ``algos/happo_gnn.py`` command line of one training run."""
    if args.device not in ("cpu", "cuda"):
        raise ValueError(f"--device {args.device!r}; expected 'cpu' or 'cuda' (happo_gnn.py selects the GPU with --cuda)")
    return [
        sys.executable,
        str(REPO / "algos" / "happo_gnn.py"),
        "--map",
        map_name,
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


def main(args: Args) -> str:
    """Train/reuse, evaluate, write the tables; returns the pivot table."""
    out = Path(args.out_dir).resolve()
    ckpt_dir = Path(args.checkpoint_dir).resolve() if args.checkpoint_dir else out / "checkpoints"
    print("transfer_table configuration:")
    for k, v in asdict(args).items():
        print(f"  {k}: {v}")
    print(f"  checkpoint dir: {ckpt_dir}", flush=True)
    ckpts = [train_or_reuse(args, m, a, ckpt_dir, out) for m in args.sources for a in args.actors]
    cmd = [
        sys.executable,
        str(REPO / "algos" / "eval_transfer.py"),
        "--checkpoints",
        *map(str, ckpts),
        "--maps",
        *args.maps,
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
    print(f"evaluating {len(ckpts)} checkpoints on {list(args.maps)}: log {out / 'logs' / 'eval.log'}", flush=True)
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
