"""Learning curves: greedy win rate of HAPPO / HATRPO class actors (GNN and MLP) against env steps and wall time.

Trains every (algorithm, actor, map, seed) as its own supervised subprocess of ``algos/<algo>_gnn.py``
(each with its own log file and run directory), runs them in parallel, evaluates each run's final
checkpoint with ``algos/eval_transfer.py`` (greedy, ``--final-episodes`` fresh-seed episodes, 100 by
default, on its training map(s) and zero-shot on ``--transfer-maps``, Wilson 95 % intervals), then
collects everything into CSVs, a summary and a PNG. Maps may be SMAC v1 maps or SMACv2 scenarios
(``sc2_envs.list_maps("all")``); ``A+B`` is a multi-map run (``--map A B``).

    python benchmarks/learning_curves.py --device cuda --maps 2s3z 3s5z --seeds 1 2 3 \\
        --total-timesteps 2000000 --num-envs 512 --num-steps 20 --time-budget-s 900
    python benchmarks/learning_curves.py --device cuda --maps protoss_5_vs_5 terran_5_vs_5 --actors gnn mlp \\
        --seeds 1 2 3 --transfer-maps protoss_10_vs_10 protoss_20_vs_20 terran_10_vs_10 terran_20_vs_20
    python benchmarks/learning_curves.py --maps protoss_5_vs_5 --actors gnn mlp --dry-run   # print the job plan

Without ``--transfer-maps`` each final checkpoint is evaluated where ``algos/eval_transfer.py`` would
evaluate it by default (``auto``): a SMACv2 run on every scenario of its race, a SMAC v1 run on the
maps of its unit classes.

The in-training evaluations (``eval.csv`` of each run, ``--eval-episodes`` of the algorithm, 32 by
default, every ``--eval-interval`` iterations) give the curves; the reported final figure is the
evaluation of the final checkpoint after the run (``--final-episodes``). A transfer target the
checkpoint cannot play (an MLP actor on another team size, a unit class without an actor, another
observation layout) is a row with the reason in ``error`` and no figures (``eval_transfer.fit_error``).

Supervision: each run is started through ``scripts/run_supervised.py``, which touches a
heartbeat file every ``--heartbeat-interval-s`` seconds from a thread of the run and dumps every
thread's stack on SIGUSR1. Every second the harness checks each run: an exit is reported at once
(with the log's last lines when the status is not 0); a heartbeat older than
``--heartbeat-timeout-s`` (or none ``--startup-timeout-s`` after the start) is a frozen run, a log
that has not grown for ``--stall-timeout-s`` while the heartbeat goes on a stalled one: either is
reported within seconds with a stack dump in its log, then killed (its ``resume.pt`` is kept).
Every ``--status-interval-s`` seconds the harness prints one status line per run (last log line,
heartbeat and log age).

Outputs go to a new folder per invocation, ``<out-dir>/learning_curves__<unix time>/`` (``-2``,
``-3``, ... if taken; never an existing one, so two benchmarks never mix their runs):
``run_meta.json`` (configuration, git commit, package versions; see ``sc2_envs.training.run``),
``learning_curves.csv`` (algo, actor, map, seed, global_step, wall_time_s, win_rate, eval_return,
iteration), ``final_eval.csv`` (each final checkpoint on each target: kind, episodes, wins, win
rate, Wilson interval, mean return and length, error, evaluation seed and envs at once),
``summary.csv`` (per algo, actor and map:
median over seeds of the final win rate, each seed's with its interval, env steps and wall time to
the first in-training greedy win rate >= ``--target``, SPS), ``transfer_summary.csv`` (per algo,
actor, training map and target: median over seeds and the seeds' pooled win rate with its
interval), ``summary.md`` (both as Markdown), ``learning_curves.png``, ``logs/`` (one log per run,
``train_<algo>_<actor>_<map>_seed<s>.log`` and ``eval_....log``, plus heartbeat files),
``evals/`` (each final evaluation's own folder) and ``runs/`` (each run's own folder: TensorBoard
events, ``eval.csv``, checkpoints and ``resume.pt``, so an interrupted run can be continued with
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
from dataclasses import dataclass, field
from pathlib import Path

import tyro

from sc2_envs.stats import wilson_interval
from sc2_envs.training.cli import cli_error, flag_clashes, flowing_help, nonfinite_flag, split_flags
from sc2_envs.training.run import GracefulStop, make_run_dir, write_run_meta
from sc2_envs.validation import check_out_dir
from sc2_envs.vector.supervision import describe_exit, dump_stack, kill_process_group, log_tail

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ALGOS = {"happo": "algos/happo_gnn.py", "hatrpo": "algos/hatrpo_gnn.py"}
ACTORS = ("gnn", "mlp")
SUPERVISED = os.path.join(REPO, "scripts", "run_supervised.py")
EVAL_SCRIPT = os.path.join(REPO, "algos", "eval_transfer.py")


@dataclass
class SupervisionArgs:
    """The supervision settings of a harness's runs (:func:`supervise`, :func:`health`), shared by the
    benchmarks that start supervised runs (this one, ``harl_side_by_side.py``)."""

    heartbeat_interval_s: float = 1.0
    """seconds between the heartbeats of each run"""
    heartbeat_timeout_s: float = 10.0
    """a run whose heartbeat is older than this is frozen: stack dump, killed"""
    startup_timeout_s: float = 120.0
    """a run with no heartbeat this long after its start is frozen"""
    stall_timeout_s: float = 900.0
    """a run whose log has not grown for this long (heartbeat alive) is stalled: stack dump, killed (0: never)"""
    status_interval_s: float = 60.0
    """seconds between the harness's status lines (one per running job)"""


@dataclass
class Args(SupervisionArgs):
    maps: tuple[str, ...] = ("2s3z", "3s5z")
    """SMAC maps or SMACv2 scenarios to train on (sc2_envs.list_maps("all")); `A+B` trains one run on both"""
    seeds: tuple[int, ...] = (1, 2, 3)
    """seeds per (algo, actor, map)"""
    algos: tuple[str, ...] = ("happo",)
    """algorithms: happo and/or hatrpo"""
    actors: tuple[str, ...] = ("gnn",)
    """actor types, each trained as its own runs side by side: gnn and/or mlp (the baseline)"""
    device: str = "cpu"
    """cpu or cuda (every run puts its simulator and networks there; so do the final evaluations)"""
    total_timesteps: int = 2_000_000
    """env steps per run"""
    num_envs: int = 512
    """parallel envs per run"""
    num_steps: int = 20
    """rollout length per iteration"""
    eval_interval: int = 5
    """iterations between the in-training greedy evaluations (the algorithm's --eval-episodes, 32 by default)"""
    final_episodes: int = 100
    """greedy fresh-seed episodes of the final evaluation of each run, per target map (the reported figure)"""
    eval_max_envs: int = 128
    """the final evaluation runs min(final_episodes, eval_max_envs) envs at once"""
    time_budget_s: float = 0.0
    """wall-clock budget of the whole benchmark (0: none); each run stops training in time for the final evaluations"""
    eval_reserve_s: float = 30.0
    """with --time-budget-s: seconds set aside per final-evaluation target of the last runs"""
    max_parallel: int = 0
    """runs (training or final evaluation) at the same time (0: all training runs)"""
    target: float = 0.9
    """win rate whose first crossing is reported"""
    out_dir: str = "benchmarks/results"
    """parent folder: each invocation writes logs, runs, CSVs and the PNG into its own new
    <out_dir>/learning_curves__<unix time>"""
    extra: str = ""
    """extra arguments for every training run, e.g. --extra="--ent-coef 0.005" """
    transfer_maps: tuple[str, ...] = ("auto",)
    """zero-shot evaluation: every final checkpoint is also evaluated on these maps / scenarios. `auto` (the
    default): what algos/eval_transfer.py picks without --maps, per run: for a SMACv2 scenario every scenario of
    its race (5v5 to 20v23), for a SMAC v1 map the maps of its unit classes (2s3z: 2s3z 3s5z 3s5z_vs_3s6z;
    3m: 3m 5m_vs_6m 8m 25m; MMM: MMM MMM2); `--transfer-maps` with no name: none"""
    dry_run: bool = False
    """print the job plan (every command) and exit: nothing is started or written"""


@dataclass
class Job:
    """One subprocess of the benchmark: a training run or the final evaluation of one.

    Attributes:
        kind: ``"train"`` or ``"eval"``.
        algo, actor, map, seed: the run (``map`` may be ``A+B``).
        script_args: the script path and its arguments (run under ``run_supervised.py``).
        name: ``<kind>_<algo>_<actor>_<map>_seed<seed>``: the log and heartbeat file stem.
    """

    kind: str
    algo: str
    actor: str
    map: str
    seed: int
    script_args: list[str] = field(default_factory=list)

    @property
    def exp(self) -> str:
        """The training run's ``--exp-name``: ``<algo>_<actor>``."""
        return f"{self.algo}_{self.actor}"

    @property
    def name(self) -> str:
        return f"{self.kind}_{self.algo}_{self.actor}_{self.map}_seed{self.seed}"

    @property
    def label(self) -> str:
        return f"{self.kind} {self.algo} {self.actor} {self.map} seed {self.seed}"


def train_args(args: Args, algo: str, actor: str, map_name: str, seed: int, threads: int, budget: float) -> list[str]:
    """``[script, args...]`` of one training run (``map_name`` ``A+B``: ``--map A B``)."""
    cmd = [
        os.path.join(REPO, ALGOS[algo]),
        "--map",
        *map_name.split("+"),
        "--seed",
        str(seed),
        "--exp-name",
        f"{algo}_{actor}",
        "--actor",
        actor,
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
    return cmd + extra_tokens(args)


HARNESS_FLAGS = (
    "--map",
    "--seed",
    "--exp-name",
    "--actor",
    "--total-timesteps",
    "--num-envs",
    "--num-steps",
    "--eval-interval",
    "--torch-threads",
    "--cuda",
    "--no-cuda",
    "--save-model",
    "--no-save-model",
)
"""Flags :func:`train_args` sets on every training run (``--time-budget-s`` too when ``--time-budget-s`` > 0):
``--extra`` may not repeat them, since the last one would win and the run would differ from its label."""


def extra_tokens(args: Args) -> list[str]:
    """``--extra`` split as a shell would (``split_flags``; ValueError on unbalanced quotes)."""
    return split_flags(args.extra, "--extra")


def extra_conflicts(args: Args) -> list[str]:
    """The flags of ``--extra`` that :func:`train_args` already sets (see :data:`HARNESS_FLAGS`)."""
    return flag_clashes(args.extra, set(HARNESS_FLAGS) | ({"--time-budget-s"} if args.time_budget_s > 0 else set()), "--extra")


AUTO = "auto"
"""``--transfer-maps auto`` (the default): :func:`auto_transfer_maps` of each run's training map(s)."""


def auto_transfer_maps(train_maps: list[str]) -> list[str]:
    """What ``algos/eval_transfer.py`` evaluates a checkpoint of ``train_maps`` on without ``--maps``
    (``eval_transfer.default_maps``): for SMACv2 scenarios every scenario of their race, for SMAC v1
    maps the maps made of the same unit classes (``eval_transfer.DEFAULT_MAPS``), after the
    training maps. A SMACv2 checkpoint is never sent to the SMAC v1 maps, where it cannot play."""
    import importlib.util

    import sc2_envs

    et = sys.modules.get("eval_transfer")
    if et is None or Path(getattr(et, "__file__", "")).resolve() != Path(EVAL_SCRIPT).resolve():
        spec = importlib.util.spec_from_file_location("eval_transfer", EVAL_SCRIPT)
        et = importlib.util.module_from_spec(spec)
        sys.modules["eval_transfer"] = et  # dataclasses resolve string annotations through sys.modules
        spec.loader.exec_module(et)
    classes = {g.unit for m in train_maps if m in sc2_envs.list_maps() for g in sc2_envs.get_map(m).allies}
    return et.default_maps({"map_name": train_maps[0], "train_maps": list(train_maps), "classes": sorted(classes)})


def eval_targets(args: Args, map_name: str) -> list[str]:
    """The final evaluation's targets of a run: its training map(s), then ``--transfer-maps`` (``auto``:
    :func:`auto_transfer_maps` of the training map(s))."""
    parts = map_name.split("+")
    more = auto_transfer_maps(parts) if tuple(args.transfer_maps) == (AUTO,) else list(args.transfer_maps)
    return list(dict.fromkeys([*parts, *more]))


def eval_args(args: Args, job: Job, checkpoint: str, out: str) -> list[str]:
    """``[script, args...]`` of the final evaluation of ``job``'s ``checkpoint`` (``algos/eval_transfer.py``,
    greedy, evaluation seed = the run's seed: streams disjoint from every training run's)."""
    return [
        EVAL_SCRIPT,
        "--checkpoints",
        checkpoint,
        "--maps",
        *eval_targets(args, job.map),
        "--episodes",
        str(args.final_episodes),
        "--max-envs",
        str(args.eval_max_envs),
        "--seed",
        str(job.seed),
        "--device",
        args.device,
        "--out-dir",
        os.path.join(out, "evals"),
        "--name",
        Job("eval", job.algo, job.actor, job.map, job.seed).name,
    ]


def schedule(args: Args) -> tuple[int, int, int, float]:
    """``(n_jobs, parallel, threads, run_budget)``: the number of training runs, how many run at once,
    the torch threads of each (the CPU count split over the parallel runs, at least 1) and each run's
    training budget in seconds (0: none). The dry run prints the commands this gives, so what it shows
    is what runs.

    The final evaluations of the last wave get ``--eval-reserve-s`` per target; each wave of runs gets an
    equal share of the rest, and a run stops training ~1/8 of its share (at least 30 s) early so that
    its last iteration, in-training evaluation and checkpoint fit.
    """
    n_jobs = len(args.algos) * len(args.actors) * len(args.maps) * len(args.seeds)
    parallel = min(args.max_parallel or n_jobs, n_jobs)  # --max-parallel 8 with 2 runs: 2 at a time, not 8
    waves = -(-n_jobs // parallel)
    threads = max(1, (os.cpu_count() or 1) // parallel)
    n_targets = max(len(eval_targets(args, m)) for m in args.maps)
    reserve = args.eval_reserve_s * n_targets
    share = max(args.time_budget_s - reserve, 0.0) / waves if args.time_budget_s > 0 else 0.0
    run_budget = max(share - max(30.0, share / 8), 10.0) if share > 0 else 0.0
    return n_jobs, parallel, threads, run_budget


def plan(args: Args, threads: int = 1, budget: float = 0.0) -> list[Job]:
    """The training jobs, (algo, actor, map, seed) in that nesting order; each is followed by its
    final-evaluation job (:func:`eval_args`) once it has written a checkpoint."""
    return [
        Job("train", a, actor, m, s, train_args(args, a, actor, m, s, threads, budget))
        for a in args.algos
        for actor in args.actors
        for m in args.maps
        for s in args.seeds
    ]


def print_plan(args: Args, jobs: list[Job], out: str = "<out>") -> None:
    """Print every training command and the final-evaluation command that follows each."""
    if out == "<out>":
        print(
            "<out> below is the output folder a real run creates: "
            f"{os.path.join(args.out_dir, 'learning_curves__<unix time>')} "
            "(-2, -3, ... if taken); <time> is the unix time a training run starts"
        )
    print(
        f"{len(jobs)} training runs, each followed by its final evaluation ({args.final_episodes} greedy episodes per target):"
    )
    for j in jobs:
        print(f"  [{j.name}] python {' '.join(j.script_args)}")
        ckpt = os.path.join(out, "runs", f"{j.map}__{j.exp}__{j.seed}__<time>", f"{j.exp}.pt")
        print(f"      then python {' '.join(eval_args(args, j, ckpt, out))}")


# ---------------------------------------------------------------------------- supervision


@dataclass
class Running:
    """A started job: its process, open log, log and heartbeat paths, start time (``time.time()``)."""

    job: Job
    proc: subprocess.Popen
    log: object
    log_path: Path
    beat_path: Path
    started: float


def child_env(threads: int | None) -> dict[str, str]:
    """The environment of a run: this repository first on ``PYTHONPATH``, and with ``threads`` (the
    runs' ``--torch-threads``) ``NUMBA_NUM_THREADS`` too, unless it is set already.

    Why numba's pool size: the kernels split a batch into ``numba.get_num_threads()`` chunks on
    threads (``sim.runtime.chunks``), so a run given one thread steps its envs on one. When those
    threads were numba's ``omp`` pool (on torch's OpenMP runtime), several runs sharing the cores each
    with numba's default pool (one thread per CPU) crawled: 3 runs of terran_5_vs_5 at once on 2
    cores (64 envs, ``--torch-threads 1``, 2 iterations) made 33 env steps/s each, and 273-284 with
    ``NUMBA_NUM_THREADS=1``.
    """
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    if threads is not None and "NUMBA_NUM_THREADS" not in os.environ:
        env["NUMBA_NUM_THREADS"] = str(threads)
    return env


def launch(job: Job, out: str, heartbeat_interval: float, threads: int | None = None) -> Running:
    """Start ``job`` under ``run_supervised.py`` in its own session (a Ctrl-C in the terminal reaches only
    the harness, which forwards one SIGINT to each training run), stdout and stderr into ``logs/<name>.log``;
    ``threads``: the CPU threads of each run (:func:`child_env`)."""
    log_path = Path(out) / "logs" / f"{job.name}.log"
    beat_path = Path(out) / "logs" / f"{job.name}.heartbeat"
    cmd = [sys.executable, SUPERVISED, str(beat_path), str(heartbeat_interval), *job.script_args]
    log = open(log_path, "w")  # noqa: SIM115 -- closed when the job ends
    log.write("$ " + " ".join(cmd) + "\n")
    log.flush()
    proc = subprocess.Popen(cmd, cwd=out, stdout=log, stderr=subprocess.STDOUT, env=child_env(threads), start_new_session=True)
    return Running(job, proc, log, log_path, beat_path, time.time())


def _mtime(path: Path) -> float | None:
    try:
        return path.stat().st_mtime
    except OSError:
        return None


def health(r: Running, args: Args, now: float | None = None) -> tuple[str, str] | None:
    """``None`` while ``r`` runs normally, else ``(status, words)``: ``"exited"`` (any exit status),
    ``"frozen"`` (no heartbeat for ``heartbeat_timeout_s``, or none ``startup_timeout_s`` after the
    start) or ``"stalled"`` (log silent for ``stall_timeout_s`` while the heartbeat goes on)."""
    now = time.time() if now is None else now
    rc = r.proc.poll()
    if rc is not None:
        return "exited", describe_exit(rc)
    beat = _mtime(r.beat_path)
    if beat is None:
        if now - r.started > args.startup_timeout_s:
            return (
                "frozen",
                f"no heartbeat {now - r.started:.0f} s after the start (--startup-timeout-s {args.startup_timeout_s:g})",
            )
        return None
    if now - beat > args.heartbeat_timeout_s:
        return "frozen", f"heartbeat silent for {now - beat:.1f} s (--heartbeat-timeout-s {args.heartbeat_timeout_s:g})"
    logged = _mtime(r.log_path) or r.started
    if args.stall_timeout_s > 0 and now - logged > args.stall_timeout_s:
        return "stalled", (
            f"log silent for {now - logged:.0f} s while the heartbeat goes on (--stall-timeout-s {args.stall_timeout_s:g})"
        )
    return None


def stop_hung(r: Running) -> int:
    """Stack dump of every thread of a frozen or stalled job into its log (if it still answers), then
    SIGKILL its process group; returns the exit status."""
    dump_stack(r.proc.pid, r.log_path)
    kill_process_group(r.proc.pid)
    return r.proc.wait()


def status_line(r: Running, now: float) -> str:
    """``<job>: <last log line> | heartbeat x s ago, log y s ago``."""
    last = (log_tail(r.log_path, 1) or "").strip()
    last = last if len(last) <= 110 else "..." + last[-107:]
    beat, logged = _mtime(r.beat_path), _mtime(r.log_path)
    ages = f"heartbeat {now - beat:.1f} s ago" if beat else "no heartbeat yet"
    if logged:
        ages += f", log {now - logged:.0f} s ago"
    return f"  {r.job.label}: {last} | {ages}"


def supervise(
    jobs: list[Job], out: str, args, parallel: int, threads: int | None = None, follow_up=None, start: float | None = None
) -> list[tuple[Job, int, str]]:
    """Run ``jobs`` (at most ``parallel`` at a time, each :func:`launch`-ed with its own log and heartbeat)
    until all have ended; returns ``(job, exit status, reason)`` per ended job, in the order they ended.

    Every second each running job is checked (:func:`health`): an exit is reported at once (with its
    log's last lines when the status is not 0), a frozen or stalled job gets a stack dump and is killed
    (:func:`stop_hung`). ``follow_up(job, rc, status)`` (optional) returns jobs to run next, before the
    jobs still pending (e.g. a training run's final evaluation). SIGINT / SIGTERM: the pending jobs are
    dropped and one SIGINT goes to each running training job (which checkpoints and stops); the jobs
    already queued by ``follow_up`` still run. Past ``args.time_budget_s + 120`` s (when > 0) nothing
    new starts and the running jobs are killed. ``args`` needs the timeouts :func:`health` reads,
    ``status_interval_s`` and ``time_budget_s``.
    """
    start = time.time() if start is None else start
    pending, queued, running, done = list(jobs), [], [], []
    last_status = start
    stop = GracefulStop().install()  # SIGINT / SIGTERM: each run checkpoints and stops; results are still collected
    forwarded = False
    try:
        while pending or queued or running:
            if stop.requested and not forwarded:
                forwarded, pending = True, []
                for r in running:
                    if r.job.kind == "train":
                        r.proc.send_signal(signal.SIGINT)
            while (queued or pending) and len(running) < parallel:
                job = queued.pop(0) if queued else pending.pop(0)
                running.append(launch(job, out, args.heartbeat_interval_s, threads))
            time.sleep(1.0)
            now = time.time()
            for r in list(running):
                h = health(r, args, now)
                if h is None:
                    continue
                status, words = h
                rc = r.proc.returncode if status == "exited" else stop_hung(r)
                r.log.close()
                running.remove(r)
                reason = words if status == "exited" else f"{status}: {words}; killed ({describe_exit(rc)})"
                done.append((r.job, rc, reason))
                print(f"[{now - start:6.0f} s] {r.job.label}: {reason}", flush=True)
                if rc != 0 or status != "exited":
                    print("    " + log_tail(r.log_path, 12).replace("\n", "\n    "), flush=True)
                if follow_up is not None:
                    queued.extend(follow_up(r.job, rc, status))
            if running and args.status_interval_s > 0 and now - last_status >= args.status_interval_s:
                last_status = now
                print(f"[{now - start:6.0f} s] status:\n" + "\n".join(status_line(r, now) for r in running), flush=True)
            if args.time_budget_s > 0 and now - start > args.time_budget_s + 120:
                pending, queued = [], []
                for r in running:
                    if r.proc.poll() is None:
                        kill_process_group(r.proc.pid)
                        print(f"killed {r.job.label}: over the time budget", flush=True)
    finally:
        stop.restore()
    return done


# ---------------------------------------------------------------------------- results


def read_curve(out: str, map_name: str, exp: str, seed: int) -> list[dict]:
    found = sorted(glob.glob(os.path.join(out, "runs", f"{map_name}__{exp}__{seed}__*", "eval.csv")))
    if not found:
        return []
    with open(found[-1]) as f:
        return [{k: float(v) for k, v in row.items()} for row in csv.DictReader(f)]


def find_checkpoint(out: str, job: Job) -> str | None:
    """The last checkpoint ``<exp>.pt`` of a training job's run folder, or ``None``."""
    found = sorted(glob.glob(os.path.join(out, "runs", f"{job.map}__{job.exp}__{job.seed}__*", f"{job.exp}.pt")))
    return found[-1] if found else None


def read_final(out: str, job: Job) -> list[dict]:
    """The rows of an evaluation job's ``eval_transfer`` CSV (empty if it wrote none)."""
    found = sorted(glob.glob(os.path.join(out, "evals", f"{job.name}__*", f"{job.name}.csv")))
    if not found:
        return []
    with open(found[-1], newline="") as f:
        return list(csv.DictReader(f))


def _median_curve(rows: list[dict], algo: str, actor: str, map_name: str) -> list[tuple[float, float]]:
    """Median win rate over seeds at each evaluation step that every seed reached."""
    by_seed: dict = {}
    for r in rows:
        if (r["algo"], r["actor"], r["map"]) == (algo, actor, map_name):
            by_seed.setdefault(r["seed"], {})[r["global_step"]] = r["win_rate"]
    if not by_seed:
        return []
    common = sorted(set.intersection(*(set(d) for d in by_seed.values())))
    return [(x, statistics.median(d[x] for d in by_seed.values())) for x in common]


def _fmt_ci(r: dict) -> str:
    return f"{float(r['win_rate']):.3f} [{float(r['ci_low']):.3f}, {float(r['ci_high']):.3f}]"


def summarise(args: Args, curves: list[dict], finals: list[dict]) -> tuple[list[dict], list[dict]]:
    """``(summary, transfer_summary)`` rows; see the module docstring (``summary.csv``, ``transfer_summary.csv``).

    The final win rate of a seed is its in-distribution final evaluation (multi-map: the mean over
    its training maps); the median is over the seeds that have one.
    """
    summary, transfer = [], []
    for a in args.algos:
        for actor in args.actors:
            for m in args.maps:
                mine = [r for r in finals if (r["algo"], r["actor"], r["train_map"]) == (a, actor, m) and r["win_rate"] != ""]
                finals_by_seed, shown = {}, []
                for s in args.seeds:
                    ind = [r for r in mine if int(r["seed"]) == s and r["kind"] == "in-distribution"]
                    if ind:
                        finals_by_seed[s] = statistics.fmean(float(r["win_rate"]) for r in ind)
                        shown.append(f"seed {s}: " + "; ".join(_fmt_ci(r) for r in ind))
                last, steps_to, time_to, sps = [], [], [], []
                for s in args.seeds:
                    pts = [r for r in curves if (r["algo"], r["actor"], r["map"], r["seed"]) == (a, actor, m, s)]
                    if not pts:
                        continue
                    last.append(pts[-1]["win_rate"])
                    sps.append(pts[-1]["global_step"] / max(pts[-1]["wall_time_s"], 1e-9))
                    hit = next((p for p in pts if p["win_rate"] >= args.target), None)
                    steps_to.append(hit["global_step"] if hit else float("inf"))
                    time_to.append(hit["wall_time_s"] if hit else float("inf"))
                if not (finals_by_seed or last):
                    continue
                summary.append(
                    {
                        "algo": a,
                        "actor": actor,
                        "map": m,
                        "seeds": len(finals_by_seed),
                        "final_episodes": args.final_episodes,
                        "median_final_win_rate": statistics.median(finals_by_seed.values()) if finals_by_seed else "",
                        "final_win_rates": " | ".join(shown),
                        "median_last_training_eval_win_rate": statistics.median(last) if last else "",
                        f"median_steps_to_{args.target}": statistics.median(steps_to) if steps_to else "",
                        f"median_wall_s_to_{args.target}": statistics.median(time_to) if time_to else "",
                        "median_sps": round(statistics.median(sps)) if sps else "",
                    }
                )
                every = [r for r in finals if (r["algo"], r["actor"], r["train_map"]) == (a, actor, m)]
                for t in dict.fromkeys(r["target_map"] for r in every):
                    rows = [r for r in every if r["target_map"] == t]
                    ok = [r for r in rows if r["win_rate"] != ""]
                    row = {
                        "algo": a,
                        "actor": actor,
                        "train_map": m,
                        "target_map": t,
                        "kind": rows[0]["kind"],
                        "seeds": len(ok),
                        "median_win_rate": "",
                        "per_seed": " | ".join(f"seed {r['seed']}: {_fmt_ci(r)}" for r in ok),
                        "pooled_wins": "",
                        "pooled_episodes": "",
                        "pooled_ci_low": "",
                        "pooled_ci_high": "",
                        "note": "" if ok else rows[0]["error"][:300],
                    }
                    if ok:
                        wins, n = sum(int(r["wins"]) for r in ok), sum(int(r["episodes"]) for r in ok)
                        lo, hi = wilson_interval(wins, n)
                        row.update(
                            median_win_rate=statistics.median(float(r["win_rate"]) for r in ok),
                            pooled_wins=wins,
                            pooled_episodes=n,
                            pooled_ci_low=lo,
                            pooled_ci_high=hi,
                        )
                    transfer.append(row)
    return summary, transfer


def markdown_table(rows: list[dict], columns: list[str]) -> str:
    """A Markdown table of ``rows`` with one column per name in ``columns`` (floats to 3 decimals;
    a missing value is an empty cell, a ``|`` inside a value becomes ``/``)."""

    def cell(v) -> str:
        return f"{v:.3f}" if isinstance(v, float) else str(v).replace("|", "/")

    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(cell(r.get(c, "")) for c in columns) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def write_csv(path: str, rows: list[dict], columns: list[str] | None = None) -> None:
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=columns or (list(rows[0]) if rows else []), extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)


def plot(rows: list[dict], args: Args, path: str, summary: list[dict]) -> None:
    """Win rate against env steps (top) and wall time (bottom), one column per map: thin lines per
    seed, thick the median over seeds, one colour per (algo, actor); the median final win rate
    (``--final-episodes`` episodes) is a diamond at the end of the median curve."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    fig, axes = plt.subplots(2, len(args.maps), figsize=(5 * len(args.maps), 7), squeeze=False)
    series = [(a, actor) for a in args.algos for actor in args.actors]
    colours = {s: f"C{i}" for i, s in enumerate(series)}
    for j, m in enumerate(args.maps):
        for a, actor in series:
            col = colours[(a, actor)]
            for s in args.seeds:
                pts = [r for r in rows if (r["map"], r["algo"], r["actor"], r["seed"]) == (m, a, actor, s)]
                if not pts:
                    continue
                for i, key, scale in ((0, "global_step", 1.0), (1, "wall_time_s", 1 / 60)):
                    axes[i][j].plot([p[key] * scale for p in pts], [p["win_rate"] for p in pts], color=col, alpha=0.35, lw=0.9)
            med = _median_curve(rows, a, actor, m)
            if med:
                axes[0][j].plot([p[0] for p in med], [p[1] for p in med], color=col, lw=2.5, label=f"{a} {actor} median")
                fin = next((r for r in summary if (r["algo"], r["actor"], r["map"]) == (a, actor, m)), None)
                if fin and fin["median_final_win_rate"] != "":
                    axes[0][j].plot([med[-1][0]], [fin["median_final_win_rate"]], "D", color=col, ms=7, mec="black")
        axes[0][j].xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda x, _: f"{x / 1e6:g}M"))
        for i, xl in enumerate(["env steps", "wall time (min)"]):
            ax = axes[i][j]
            ax.axhline(args.target, color="grey", ls="--", lw=0.8)
            ax.set_xlabel(xl)
            ax.set_ylabel("greedy win rate (in-training evaluations)")
            ax.set_ylim(-0.02, 1.02)
            ax.set_title(f"{m} ({args.device}); diamond: final, {args.final_episodes} episodes", fontsize=9)
            ax.grid(alpha=0.3)
        axes[0][j].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


# ---------------------------------------------------------------------------- main


_ZERO = {"time_budget_s": "none", "eval_reserve_s": "none", "max_parallel": "all training runs"}


def check_supervision_args(args: SupervisionArgs) -> None:
    """Reject supervision settings that cannot work.

    Raises:
        ValueError: a heartbeat interval, startup timeout or status interval that is not positive, a
            heartbeat timeout not above the heartbeat interval, or a negative stall timeout.
    """
    if min(args.heartbeat_interval_s, args.startup_timeout_s) <= 0 or args.heartbeat_timeout_s <= args.heartbeat_interval_s:
        raise ValueError(
            f"--heartbeat-interval-s {args.heartbeat_interval_s}, --heartbeat-timeout-s {args.heartbeat_timeout_s}, "
            f"--startup-timeout-s {args.startup_timeout_s}: expected positive seconds, the timeout above the interval"
        )
    if args.status_interval_s <= 0:
        raise ValueError(f"--status-interval-s {args.status_interval_s}: expected seconds > 0")
    if args.stall_timeout_s < 0:
        raise ValueError(f"--stall-timeout-s {args.stall_timeout_s}: expected a value >= 0 (0: never)")


def check_args(args: Args) -> None:
    """Reject a bad command line before anything is started or written.

    Raises:
        ValueError: an unknown algorithm, actor, device or map (the message names it and the valid
            ones), a repeated algorithm, actor, map or seed (two jobs would share a log), a
            multi-map run naming one map twice, a non-finite float, a size, interval or step budget
            below what one training iteration needs, a ``--target`` outside (0, 1], a negative
            budget, reserve, parallelism or stall timeout, ``--device cuda`` without CUDA,
            ``--final-episodes`` or ``--eval-max-envs`` below 1, timeouts that are not positive /
            a heartbeat timeout not above the heartbeat interval, or an ``--extra`` that repeats a flag
            the harness sets (:func:`extra_conflicts`), or an ``--out-dir`` that is (inside) a file or
            not writable (``check_out_dir``).
    """
    for a in args.algos:
        if a not in ALGOS:
            raise ValueError(f"--algos {a!r}; expected any of {sorted(ALGOS)}")
    for a in args.actors:
        if a not in ACTORS:
            raise ValueError(f"--actors {a!r}; expected any of {list(ACTORS)}")
    if not (args.algos and args.actors and args.maps and args.seeds):
        raise ValueError("--algos, --actors, --maps and --seeds each need at least one value")
    if args.device not in ("cpu", "cuda"):
        raise ValueError(f"--device {args.device!r}; expected 'cpu' or 'cuda'")
    if args.final_episodes < 1 or args.eval_max_envs < 1:
        raise ValueError(
            f"--final-episodes {args.final_episodes} / --eval-max-envs {args.eval_max_envs}: expected integers >= 1"
        )
    check_supervision_args(args)
    nonfinite = nonfinite_flag(args)
    if nonfinite:  # NaN passes no comparison, so it would slip through the ranges below
        raise ValueError(nonfinite)
    for flag, values in (("--algos", args.algos), ("--actors", args.actors), ("--maps", args.maps), ("--seeds", args.seeds)):
        if len(set(values)) < len(values):  # two identical jobs would share one log and one run-folder pattern
            raise ValueError(f"{flag} {' '.join(map(str, values))}: expected distinct values")
    if min(args.seeds) < 0:
        raise ValueError(f"--seeds {' '.join(map(str, args.seeds))}: expected non-negative integers")
    for flag in ("num_envs", "num_steps", "eval_interval"):
        if getattr(args, flag) < 1:
            raise ValueError(f"--{flag.replace('_', '-')} {getattr(args, flag)}: expected an integer >= 1")
    batch = args.num_envs * args.num_steps
    if args.total_timesteps < batch:
        raise ValueError(
            f"--total-timesteps {args.total_timesteps}: expected at least one batch of {batch} env steps "
            "(--num-envs x --num-steps)"
        )
    if not 0.0 < args.target <= 1.0:
        raise ValueError(f"--target {args.target}: expected a win rate in (0, 1]")
    check_out_dir(args.out_dir)  # a file in the way: one line from the CLI, not a FileExistsError traceback
    clash = extra_conflicts(args)
    if clash:  # e.g. --extra "--seed 7": every run would train seed 7 while the tables label it 1, 2, 3
        raise ValueError(
            f"--extra {args.extra!r} sets {', '.join(clash)}, which the harness sets on every run (the last one wins, "
            "so runs would not be what their labels say); use this script's own flags instead"
        )
    for flag in ("time_budget_s", "eval_reserve_s", "max_parallel"):  # the stall timeout: check_supervision_args
        if getattr(args, flag) < 0:
            raise ValueError(f"--{flag.replace('_', '-')} {getattr(args, flag)}: expected a value >= 0 (0: {_ZERO[flag]})")
    import torch

    if args.device == "cuda" and not torch.cuda.is_available():
        raise ValueError("--device cuda: torch.cuda.is_available() is False on this machine")
    import sc2_envs

    valid = sc2_envs.list_maps("all")
    if AUTO in args.transfer_maps and len(args.transfer_maps) > 1:
        raise ValueError(
            f"--transfer-maps {' '.join(args.transfer_maps)}: `auto` stands alone (the default targets of each run); "
            "expected `auto` or map names"
        )
    for name in (*(part for m in args.maps for part in m.split("+")), *(t for t in args.transfer_maps if t != AUTO)):
        if name not in valid:
            raise ValueError(f"map {name!r}; expected one of {', '.join(valid)}")
    for m in args.maps:
        parts = m.split("+")
        if len(set(parts)) < len(parts):
            raise ValueError(f"--maps {m!r}: a multi-map run needs distinct maps")


def main(args: Args) -> dict:
    """Plan, run, supervise, evaluate and summarise; returns ``{"out", "done", "summary", "transfer"}``
    (with ``--dry-run``: ``{"jobs"}`` only, nothing started or written)."""
    check_args(args)
    n_jobs, parallel, threads, run_budget = schedule(args)
    if args.dry_run:
        jobs = plan(args, threads, run_budget)
        print_plan(args, jobs)
        return {"jobs": jobs}
    out = str(make_run_dir(os.path.abspath(args.out_dir), f"learning_curves__{int(time.time())}"))
    write_run_meta(out, args, script=os.path.basename(__file__))
    os.makedirs(os.path.join(out, "logs"))
    print(f"output folder: {out}")
    jobs = plan(args, threads, run_budget)
    print(
        f"{n_jobs} runs ({', '.join(args.algos)} x actors {', '.join(args.actors)} x {', '.join(args.maps)} x seeds "
        f"{list(args.seeds)}), {parallel} at a time, {threads} torch threads each, device {args.device}, "
        + (f"training budget per run {run_budget:.0f} s" if run_budget else "no time budget")
        + f"; final evaluation: {args.final_episodes} greedy episodes on "
        + "; ".join(f"{m}: {', '.join(eval_targets(args, m))}" for m in args.maps)
    )
    if args.final_episodes < 100:
        print(f"note: --final-episodes {args.final_episodes} (< 100): the final figures are a quick look, not for reporting")

    def follow_up(job: Job, rc: int, status: str) -> list[Job]:
        if job.kind != "train" or rc != 0 or status != "exited":
            return []
        ckpt = find_checkpoint(out, job)
        if ckpt is None:
            print(f"    no checkpoint {job.exp}.pt in its run folder: no final evaluation", flush=True)
            return []
        return [Job("eval", job.algo, job.actor, job.map, job.seed, eval_args(args, job, ckpt, out))]

    start = time.time()
    done = supervise(jobs, out, args, parallel, threads if args.device == "cpu" else None, follow_up, start)

    curves = []
    for job, _rc, _ in done:
        if job.kind == "train":
            for r in read_curve(out, job.map, job.exp, job.seed):
                curves.append({"algo": job.algo, "actor": job.actor, "map": job.map, "seed": job.seed, **r})
    curve_cols = ["algo", "actor", "map", "seed", "global_step", "wall_time_s", "win_rate", "eval_return", "iteration"]
    write_csv(os.path.join(out, "learning_curves.csv"), curves, curve_cols)
    finals = []
    for job, rc, _ in done:
        if job.kind == "eval" and rc == 0:
            for r in read_final(out, job):
                finals.append({"algo": job.algo, "actor": job.actor, "train_map": job.map, "seed": job.seed, **r})
    final_cols = ["algo", "actor", "train_map", "seed", "target_map", "kind", "episodes", "wins", "win_rate", "ci_low"]
    final_cols += ["ci_high", "mean_return", "mean_length", "error", "checkpoint", "source_steps", "eval_seed", "num_envs"]
    write_csv(os.path.join(out, "final_eval.csv"), finals, final_cols)
    summary, transfer = summarise(args, curves, finals)
    write_csv(os.path.join(out, "summary.csv"), summary)
    write_csv(os.path.join(out, "transfer_summary.csv"), transfer)
    md = (
        f"Final greedy win rate over {args.final_episodes} fresh-seed episodes per seed and target (Wilson 95% "
        f"intervals), median over seeds; curves from the in-training evaluations.\n\n"
        + (markdown_table(summary, list(summary[0])) if summary else "(no run finished)\n")
        + "\nZero-shot transfer of the final checkpoints (pooled: all seeds' episodes together).\n\n"
        + (markdown_table(transfer, list(transfer[0])) if transfer else "(none)\n")
    )
    Path(out, "summary.md").write_text(md)
    print("\n" + md)
    if curves:
        plot(curves, args, os.path.join(out, "learning_curves.png"), summary)
    print(
        f"wrote {out}/learning_curves.csv, final_eval.csv, summary.csv, transfer_summary.csv, summary.md in "
        f"{time.time() - start:.0f} s"
    )
    failed = [(j.label, reason) for j, rc, reason in done if rc != 0]
    if failed:
        print(f"failed jobs (see {out}/logs): {failed}")
    return {"out": out, "done": done, "summary": summary, "transfer": transfer, "failed": failed}


if __name__ == "__main__":
    cli_args = tyro.cli(flowing_help(Args))
    try:
        check_args(cli_args)
    except ValueError as e:  # bad command line: one line, exit status 2, no folder made
        cli_error(str(e))
    result = main(cli_args)
    if result.get("failed"):
        sys.exit(1)
