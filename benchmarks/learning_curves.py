"""Learning curves: greedy win rate of HAPPO / HATRPO class actors against env steps and wall time.

Trains every (algorithm, map, seed) as its own subprocess of ``algos/<algo>_gnn.py`` (each with its
own log file and run directory), runs them in parallel, then collects each run's ``eval.csv``
(greedy win rate over 32 episodes per evaluation window) into one CSV, a summary and a PNG.

    python benchmarks/learning_curves.py --device cuda --maps 2s3z 3s5z --seeds 1 2 3 \\
        --total-timesteps 2000000 --num-envs 512 --num-steps 20 --time-budget-s 900

Outputs go to a new folder per invocation, ``<out-dir>/learning_curves__<unix time>/`` (``-2``,
``-3``, ... if taken; never an existing one, so two benchmarks never mix their runs):
``run_meta.json`` (configuration, git commit, package versions; see ``sc2_envs.runs``),
``learning_curves.csv`` (algo, map, seed, global_step, wall_time_s,
win_rate, eval_return), ``summary.csv`` (per algo and map: median final win rate, env steps and
wall time to the first greedy win rate >= ``--target``, SPS), ``learning_curves.png``,
``transfer.csv`` (each final checkpoint evaluated zero-shot on ``--transfer-maps``), ``logs/``
(one stdout log per run) and ``runs/`` (each run's own folder: TensorBoard events, ``eval.csv``,
checkpoints and ``resume.pt``, so an interrupted run can be continued with
``algos/<algo>_gnn.py --resume``).
"""

from __future__ import annotations

import csv
import glob
import os
import signal
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass

import tyro

from sc2_envs import runs

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ALGOS = {"happo": "algos/happo_gnn.py", "hatrpo": "algos/hatrpo_gnn.py"}


@dataclass
class Args:
    maps: tuple[str, ...] = ("2s3z", "3s5z")
    """SMAC maps to train on"""
    seeds: tuple[int, ...] = (1, 2, 3)
    """seeds per map"""
    algos: tuple[str, ...] = ("happo",)
    """algorithms: happo and/or hatrpo"""
    actor: str = "gnn"
    """actor type passed to the algorithm (gnn or mlp)"""
    device: str = "cpu"
    """cpu or cuda (every run puts its simulator and networks there)"""
    total_timesteps: int = 2_000_000
    """env steps per run"""
    num_envs: int = 512
    """parallel envs per run"""
    num_steps: int = 20
    """rollout length per iteration"""
    eval_interval: int = 5
    """iterations between greedy evaluations of 32 episodes"""
    time_budget_s: float = 0.0
    """wall-clock budget of the whole benchmark (0: none); each run stops training in time for its final evaluation"""
    max_parallel: int = 0
    """runs at the same time (0: all)"""
    target: float = 0.9
    """win rate whose first crossing is reported"""
    out_dir: str = "benchmarks/results"
    """parent folder: each invocation writes logs, runs, CSVs and the PNG into its own new <out_dir>/learning_curves__<unix time>"""
    extra: str = ""
    """extra arguments for every run, e.g. --extra="--ent-coef 0.005" """
    transfer_maps: tuple[str, ...] = ("2s3z", "3s5z", "3s5z_vs_3s6z")
    """zero-shot evaluation: every final checkpoint is also evaluated on these maps (empty: none)"""


def launch(args: Args, algo: str, map_name: str, seed: int, threads: int, budget: float, out: str):
    exp = f"{algo}_{args.actor}"
    cmd = [
        sys.executable,
        os.path.join(REPO, ALGOS[algo]),
        "--map",
        map_name,
        "--seed",
        str(seed),
        "--exp-name",
        exp,
        "--actor",
        args.actor,
        "--total-timesteps",
        str(args.total_timesteps),
        "--num-envs",
        str(args.num_envs),
        "--num-steps",
        str(args.num_steps),
        "--eval-interval",
        str(args.eval_interval),
        "--torch-threads",
        str(threads),
        "--cuda" if args.device == "cuda" else "--no-cuda",
        "--save-model",
    ]
    if budget > 0:
        cmd += ["--time-budget-s", f"{budget:.0f}"]
    cmd += args.extra.split()
    log = open(os.path.join(out, "logs", f"{algo}_{map_name}_seed{seed}.log"), "w")  # noqa: SIM115 -- closed when the run ends
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    # own session: a Ctrl-C in the terminal reaches only this script, which forwards one SIGINT to each run
    proc = subprocess.Popen(cmd, cwd=out, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    return proc, log, exp


def read_curve(out: str, map_name: str, exp: str, seed: int) -> list[dict]:
    runs = sorted(glob.glob(os.path.join(out, "runs", f"{map_name}__{exp}__{seed}__*", "eval.csv")))
    if not runs:
        return []
    with open(runs[-1]) as f:
        return [{k: float(v) for k, v in row.items()} for row in csv.DictReader(f)]


def _median_curve(rows: list[dict], algo: str, map_name: str) -> list[tuple[float, float]]:
    """Median win rate over seeds at each evaluation step that every seed reached."""
    by_seed: dict = {}
    for r in rows:
        if r["algo"] == algo and r["map"] == map_name:
            by_seed.setdefault(r["seed"], {})[r["global_step"]] = r["win_rate"]
    if not by_seed:
        return []
    common = sorted(set.intersection(*(set(d) for d in by_seed.values())))
    return [(x, statistics.median(d[x] for d in by_seed.values())) for x in common]


def plot(rows: list[dict], args: Args, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    fig, axes = plt.subplots(2, len(args.maps), figsize=(5 * len(args.maps), 7), squeeze=False)
    colours = {"happo": "tab:blue", "hatrpo": "tab:orange"}
    for j, m in enumerate(args.maps):
        for algo in args.algos:
            for s in args.seeds:
                pts = [r for r in rows if r["map"] == m and r["algo"] == algo and r["seed"] == s]
                if not pts:
                    continue
                label = f"{algo} seed {s}"
                axes[0][j].plot(
                    [p["global_step"] for p in pts],
                    [p["win_rate"] for p in pts],
                    color=colours.get(algo),
                    alpha=0.4 + 0.2 * (s % 3),
                    label=label,
                )
                axes[1][j].plot(
                    [p["wall_time_s"] / 60 for p in pts],
                    [p["win_rate"] for p in pts],
                    color=colours.get(algo),
                    alpha=0.4 + 0.2 * (s % 3),
                    label=label,
                )
            med = _median_curve(rows, algo, m)
            if med:
                axes[0][j].plot(
                    [p[0] for p in med], [p[1] for p in med], color=colours.get(algo), lw=2.5, label=f"{algo} median"
                )
        axes[0][j].xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda x, _: f"{x / 1e6:g}M"))
        for i, xl in enumerate(["env steps", "wall time (min)"]):
            ax = axes[i][j]
            ax.axhline(args.target, color="grey", ls="--", lw=0.8)
            ax.set_xlabel(xl)
            ax.set_ylabel("greedy win rate (32 episodes)")
            ax.set_ylim(-0.02, 1.02)
            ax.set_title(f"{m} ({args.actor} actor, {args.device})")
            ax.grid(alpha=0.3)
        axes[0][j].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def transfer(args: Args, out: str, done: list) -> None:
    """Greedy win rate of every run's final checkpoint on each of ``args.transfer_maps`` (zero-shot)."""
    import torch

    import sc2_envs
    from models import load_checkpoint
    from sc2_envs.evaluation import evaluate

    device = torch.device("cuda" if args.device == "cuda" and torch.cuda.is_available() else "cpu")
    results = []
    for a, m, s, exp, rc in done:
        ckpts = sorted(glob.glob(os.path.join(out, "runs", f"{m}__{exp}__{s}__*", f"{exp}.pt")))
        if rc != 0 or not ckpts:
            continue
        for target in args.transfer_maps:
            env = sc2_envs.make_batched(target, num_envs=32, device=device, seed=10**7 + s)
            try:
                policy, _, _ = load_checkpoint(ckpts[-1], env.get_env_info(), device=device, with_critic=False)
            except ValueError as e:  # e.g. an MLP actor on another team size
                results.append(
                    {
                        "algo": a,
                        "train_map": m,
                        "seed": s,
                        "eval_map": target,
                        "win_rate": "",
                        "eval_return": "",
                        "note": str(e)[:200],
                    }
                )
                continue
            res = evaluate(policy, env, 32, sc2_envs.eval_seed(s, 10**7))
            wr, ret = res["win_rate"], res["mean_return"]
            results.append(
                {
                    "algo": a,
                    "train_map": m,
                    "seed": s,
                    "eval_map": target,
                    "win_rate": wr,
                    "eval_return": ret,
                    "note": "in-distribution" if target == m else "zero-shot",
                }
            )
            print(f"transfer: {a} trained on {m} seed {s} -> {target}: greedy win rate {wr:.3f}")
    if results:
        with open(os.path.join(out, "transfer.csv"), "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(results[0]))
            w.writeheader()
            w.writerows(results)


def check_args(args: Args) -> None:
    """Reject a bad command line before anything is started or written.

    Raises:
        ValueError: an unknown algorithm, device or map (the message names it and the valid ones).
    """
    for a in args.algos:
        if a not in ALGOS:
            raise ValueError(f"--algos {a!r}; expected any of {sorted(ALGOS)}")
    if args.device not in ("cpu", "cuda"):
        raise ValueError(f"--device {args.device!r}; expected 'cpu' or 'cuda'")
    import sc2_envs

    for m in (*args.maps, *args.transfer_maps):
        if m not in sc2_envs.list_maps():
            raise ValueError(f"map {m!r}; expected one of {', '.join(sc2_envs.list_maps())}")


def main(args: Args) -> None:
    check_args(args)
    out = str(runs.make_run_dir(os.path.abspath(args.out_dir), f"learning_curves__{int(time.time())}"))
    runs.write_run_meta(out, args, script=os.path.basename(__file__))
    os.makedirs(os.path.join(out, "logs"))
    print(f"output folder: {out}")
    jobs = [(a, m, s) for a in args.algos for m in args.maps for s in args.seeds]
    parallel = args.max_parallel or len(jobs)
    waves = -(-len(jobs) // parallel)
    threads = max(1, (os.cpu_count() or 1) // parallel)
    # The zero-shot evaluations at the end get ~5 s each (32 greedy episodes on a GPU); each wave of
    # runs gets an equal share of the rest, and a run stops training ~1/8 of its share (at least
    # 30 s) early so that its last iteration, final evaluation and checkpoint fit.
    transfer_reserve = 5.0 * len(jobs) * len(args.transfer_maps)
    share = max(args.time_budget_s - transfer_reserve, 0.0) / waves if args.time_budget_s > 0 else 0.0
    run_budget = max(share - max(30.0, share / 8), 10.0) if share > 0 else 0.0
    print(
        f"{len(jobs)} runs ({', '.join(args.algos)} x {', '.join(args.maps)} x seeds {list(args.seeds)}), "
        f"{parallel} at a time, {threads} torch threads each, device {args.device}, "
        + (f"training budget per run {run_budget:.0f} s" if run_budget else "no time budget")
    )
    start = time.time()
    pending, running, done = list(jobs), [], []
    stop = runs.GracefulStop().install()  # SIGINT / SIGTERM: each run checkpoints and stops; results are still collected
    forwarded = False
    while pending or running:
        if stop.requested and not forwarded:
            forwarded, pending = True, []
            for proc, *_ in running:
                proc.send_signal(signal.SIGINT)
        while pending and len(running) < parallel:
            a, m, s = pending.pop(0)
            proc, log, exp = launch(args, a, m, s, threads, run_budget, out)
            running.append((proc, log, a, m, s, exp))
        time.sleep(2)
        for item in list(running):
            proc, log, a, m, s, exp = item
            if proc.poll() is not None:
                log.close()
                running.remove(item)
                done.append((a, m, s, exp, proc.returncode))
                print(f"[{time.time() - start:6.0f} s] {a} {m} seed {s} finished (exit {proc.returncode})")
        if args.time_budget_s > 0 and time.time() - start > args.time_budget_s + 120:
            for proc, _log, a, m, s, _exp in running:
                proc.kill()
                print(f"killed {a} {m} seed {s}: over the time budget")

    stop.restore()
    rows = []
    for a, m, s, exp, _rc in done:
        for r in read_curve(out, m, exp, s):
            rows.append({"algo": a, "map": m, "seed": s, **r})
    with open(os.path.join(out, "learning_curves.csv"), "w", newline="") as f:
        w = csv.DictWriter(
            f, fieldnames=["algo", "map", "seed", "global_step", "wall_time_s", "win_rate", "eval_return", "iteration"]
        )
        w.writeheader()
        w.writerows(rows)

    summary = []
    for a in args.algos:
        for m in args.maps:
            finals, steps_to, time_to, sps = [], [], [], []
            for s in args.seeds:
                pts = [r for r in rows if r["algo"] == a and r["map"] == m and r["seed"] == s]
                if not pts:
                    continue
                finals.append(pts[-1]["win_rate"])
                sps.append(pts[-1]["global_step"] / max(pts[-1]["wall_time_s"], 1e-9))
                hit = next((p for p in pts if p["win_rate"] >= args.target), None)
                steps_to.append(hit["global_step"] if hit else float("inf"))
                time_to.append(hit["wall_time_s"] if hit else float("inf"))
            if finals:
                summary.append(
                    {
                        "algo": a,
                        "map": m,
                        "seeds": len(finals),
                        "median_final_win_rate": statistics.median(finals),
                        "final_win_rates": " ".join(f"{x:.3f}" for x in finals),
                        f"median_steps_to_{args.target}": statistics.median(steps_to),
                        f"median_wall_s_to_{args.target}": statistics.median(time_to),
                        "median_sps": round(statistics.median(sps)),
                    }
                )
    if summary:
        with open(os.path.join(out, "summary.csv"), "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(summary[0]))
            w.writeheader()
            w.writerows(summary)
        for row in summary:
            print(", ".join(f"{k}={v}" for k, v in row.items()))
    if rows:
        plot(rows, args, os.path.join(out, "learning_curves.png"))
    if args.transfer_maps:
        transfer(args, out, done)
    print(f"wrote {out}/learning_curves.csv, summary.csv, learning_curves.png in {time.time() - start:.0f} s")
    failed = [(a, m, s, rc) for a, m, s, _, rc in done if rc != 0]
    if failed:
        print(f"failed runs (see {out}/logs): {failed}")
        sys.exit(1)


if __name__ == "__main__":
    cli_args = tyro.cli(Args)
    try:
        check_args(cli_args)
    except ValueError as e:  # bad command line: one line, exit status 2, no folder made
        runs.cli_error(str(e))
    main(cli_args)
