"""HARL's HAPPO (MLP actors) next to our HAPPO-GNN on the same simulator: env steps to a win rate.

The reference side is HARL itself (github.com/PKU-MARL/HARL, not on the package registries), unedited,
trained by its own ``examples/train.py`` through ``sc2_envs.adapters.harl_smac`` on the embedded
simulator with HARL's default HAPPO configuration (``harl/configs/algos_cfgs/happo.yaml``: 20 rollout
threads x 200 steps per update, MLP [128, 128], lr 5e-4, 5 PPO epochs, 1 minibatch) and its SMAC
defaults (``state_type FP``). Only the budget, the evaluation cadence and size, the seed, CUDA off
and the torch threads are set here; ``--harl-extra`` passes any other HARL override. HARL's
evaluations are greedy (``deterministic=True``) over at least ``--eval-episodes`` episodes on its own
10 evaluation envs (it stops at the step where the count reaches it, so e.g. 101), every ``--eval-interval`` updates (with the
defaults 5 x 4,000 = 20,000 env steps), and are read from the ``progress.txt`` its SMAC logger writes
(``env steps, mean return, win rate``).

Our side is ``benchmarks/learning_curves.py`` (HAPPO with GNN class actors, ``algos/happo_gnn.py``)
run in-process with ``--ours-*`` settings and greedy in-training evaluations of ``--eval-episodes``
episodes, or an existing learning_curves output folder given with ``--ours``.

    python benchmarks/harl_side_by_side.py --harl-path ~/HARL --maps 3m --seeds 1 2 3
    python benchmarks/harl_side_by_side.py --harl-path ~/HARL --maps 3m 2s3z --ours benchmarks/results/learning_curves__1796300000
    python benchmarks/harl_side_by_side.py --harl-path ~/HARL --maps 3m --dry-run   # print every HARL command

Every HARL run is its own supervised subprocess (``scripts/run_supervised.py``: own log
``logs/train_harl-happo_mlp_<map>_seed<s>.log``, heartbeat file, stack dump and kill when frozen or
stalled; ``learning_curves.supervise``). Outputs go to a new folder
``<out-dir>/harl_side_by_side__<unix time>/``: ``run_meta.json``, ``harl_curves.csv`` (map, seed,
global_step, eval_return, win_rate), ``side_by_side.csv`` and ``side_by_side.md`` (per method and
map: each seed's env steps to the first evaluation at or above ``--target``, their median, the median
last evaluation and the median env steps/s), HARL's own ``results/`` tree, and, when our side is run
here, its learning_curves folder under ``ours/``.

The two sides' evaluations differ in cadence (HARL: every ``--eval-interval`` updates; ours: every
``--ours-eval-interval`` iterations) so a crossing is only known to the nearer evaluation; the table
gives both cadences. A run that never reaches the target shows ``not reached`` and counts as infinite
in the median.
"""  # noqa: E501 -- the command example above stays on one line

from __future__ import annotations

import csv
import glob
import math
import os
import re
import shlex
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import tyro

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import learning_curves as lc  # noqa: E402 -- the sibling benchmark, not a package

from sc2_envs.training.cli import cli_error, flag_clashes, flowing_help, nonfinite_flag  # noqa: E402
from sc2_envs.training.run import make_run_dir, write_run_meta  # noqa: E402

REPO = lc.REPO
LAUNCHER = os.path.join(REPO, "sc2_envs", "adapters", "harl_smac.py")


@dataclass
class Args(lc.SupervisionArgs):
    harl_path: str = ""
    """a checkout of github.com/PKU-MARL/HARL (default: $HARL_PATH)"""
    maps: tuple[str, ...] = ("3m", "2s3z")
    """SMAC v1 maps (HARL's `--env smac`)"""
    seeds: tuple[int, ...] = (1, 2, 3)
    """independent seeds per map and method"""
    num_env_steps: int = 1_000_000
    """HARL's training budget per run, env steps"""
    eval_interval: int = 5
    """HARL updates between its greedy evaluations (5 x 4,000 env steps at HARL's defaults)"""
    eval_episodes: int = 100
    """greedy episodes per evaluation, both sides"""
    target: float = 0.9
    """win rate whose first crossing is reported"""
    torch_threads: int = 1
    """HARL's `--torch_threads` (its rollout envs run in their own processes besides)"""
    harl_extra: str = ""
    """extra HARL overrides for every HARL run, pairs of --key value (shell quoting), e.g.
    --harl-extra="--n_rollout_threads 8"; not the keys this script sets (RESERVED)"""
    ours: str = ""
    """an existing learning_curves output folder (its learning_curves.csv) for our side; empty: run it here"""
    ours_total_timesteps: int = 409_600
    """our side, run here: env steps per run"""
    ours_num_envs: int = 128
    """our side, run here: envs per run"""
    ours_num_steps: int = 40
    """our side, run here: steps per env per iteration"""
    ours_eval_interval: int = 2
    """our side, run here: iterations between greedy evaluations (2 x 5,120 = 10,240 env steps)"""
    ours_extra: str = ""
    """our side, run here: extra `algos/happo_gnn.py` flags for every run, e.g. --ours-extra="--hidden 64" (the network of
    the figures in docs/learning_speed.md, made before the default became 32)"""
    max_parallel: int = 1
    """runs at the same time (each side in turn: ours first, then HARL)"""
    out_dir: str = "benchmarks/results"
    """parent folder of this invocation's own new folder"""
    time_budget_s: float = 0.0
    """HARL side: past this many seconds (+120) nothing new starts and running HARL runs are killed (0: none)"""
    dry_run: bool = False
    """print the HARL commands and our side's plan, start nothing"""


def harl_root(args: Args) -> str:
    """The HARL checkout (``--harl-path``, else ``$HARL_PATH``).

    Raises:
        ValueError: none given, or the folder lacks ``harl/__init__.py`` or ``examples/train.py``."""
    root = args.harl_path or os.environ.get("HARL_PATH", "")
    if not root:
        raise ValueError(
            "no HARL checkout: pass --harl-path DIR or set HARL_PATH (git clone https://github.com/PKU-MARL/HARL)"
        )
    root = os.path.abspath(os.path.expanduser(root))
    for part in ("harl/__init__.py", "examples/train.py"):
        if not os.path.isfile(os.path.join(root, part)):
            raise ValueError(f"--harl-path {root!r} is not a HARL checkout: no {part}")
    return root


RESERVED = (
    "--harl-path",
    "--algo",
    "--env",
    "--exp_name",
    "--map_name",
    "--num_env_steps",
    "--cuda",
    "--torch_threads",
    "--eval_interval",
    "--eval_episodes",
    "--seed",
    "--log_dir",
    "--use_eval",
    "--dry-run",
)
"""HARL flags this benchmark sets (or relies on) itself; ``--harl-extra`` may not override them."""


def harl_overrides(extra: str) -> dict[str, str]:
    """``--harl-extra`` as HARL's ``--key value`` pairs (shell quoting honoured, ``shlex.split``).

    Raises:
        ValueError: a token that is not ``--key`` where a key is due, a key without a value, a key
            given twice, or a key in :data:`RESERVED` (HARL's ``train.py`` pairs its leftover
            arguments as key/value and silently drops keys it does not know, so a stray token would
            silently change the run)."""
    tokens = shlex.split(extra)
    out: dict[str, str] = {}
    for i in range(0, len(tokens), 2):
        key = tokens[i]
        if not key.startswith("--") or len(key) < 3:
            raise ValueError(f"--harl-extra {extra!r}: {key!r} where a HARL --key was expected (pairs of --key value)")
        if i + 1 >= len(tokens):
            raise ValueError(f"--harl-extra {extra!r}: {key} has no value (pairs of --key value)")
        if key in RESERVED:
            raise ValueError(f"--harl-extra {extra!r}: {key} is set by this benchmark; expected none of {', '.join(RESERVED)}")
        if key in out:
            raise ValueError(f"--harl-extra {extra!r}: {key} given twice")
        out[key] = tokens[i + 1]
    return out


def harl_update_steps(args: Args) -> int:
    """Env steps per HARL update: ``n_rollout_threads x episode_length`` (20 x 200 by HARL's happo defaults,
    or as ``--harl-extra`` sets them).

    Raises:
        ValueError: either override is not a positive integer."""
    extra = harl_overrides(args.harl_extra)
    sizes = []
    for key, default in (("--n_rollout_threads", 20), ("--episode_length", 200)):
        value = extra.get(key, str(default))
        if not value.isdigit() or int(value) < 1:
            raise ValueError(f"--harl-extra {key} {value!r}: expected an integer >= 1")
        sizes.append(int(value))
    return sizes[0] * sizes[1]


def check_args(args: Args) -> None:
    """Reject a bad command line before anything starts.

    Raises:
        ValueError: no or a bad HARL checkout (:func:`harl_root`), a map that is not a SMAC v1 map (HARL's
            ``smac`` env; the message lists them), repeated maps or seeds, a negative seed, a budget,
            interval, episode count, thread count or parallelism below 1, a ``--target`` outside (0, 1],
            a non-finite float, a HARL budget too small for one evaluation, a bad ``--harl-extra``
            (:func:`harl_overrides`), an ``--out-dir`` that is a file, an ``--ours`` folder without
            ``learning_curves.csv`` or without evaluations for every map and seed (or one :func:`read_ours`
            cannot read), bad ``--ours-*`` sizes, a negative time budget, or
            supervision settings :func:`learning_curves.check_supervision_args` rejects.
    """
    harl_root(args)
    nonfinite = nonfinite_flag(args)
    if nonfinite:
        raise ValueError(nonfinite)
    import sc2_envs

    valid = sc2_envs.list_maps()
    if not args.maps or not args.seeds:
        raise ValueError("--maps and --seeds each need at least one value")
    for m in args.maps:
        if m not in valid:
            raise ValueError(f"--maps {m!r}: HARL's smac env plays SMAC v1 maps; expected one of {', '.join(valid)}")
    for flag, values in (("--maps", args.maps), ("--seeds", args.seeds)):
        if len(set(values)) < len(values):
            raise ValueError(f"{flag} {' '.join(map(str, values))}: expected distinct values")
    if min(args.seeds) < 0:
        raise ValueError(f"--seeds {' '.join(map(str, args.seeds))}: expected non-negative integers")
    for flag in ("num_env_steps", "eval_interval", "eval_episodes", "torch_threads", "max_parallel"):
        if getattr(args, flag) < 1:
            raise ValueError(f"--{flag.replace('_', '-')} {getattr(args, flag)}: expected an integer >= 1")
    per_update = harl_update_steps(args)
    if args.num_env_steps < args.eval_interval * per_update:  # HARL evaluates every eval_interval updates, never at the end
        raise ValueError(
            f"--num-env-steps {args.num_env_steps} with --eval-interval {args.eval_interval}: HARL would never evaluate; "
            f"expected at least {args.eval_interval * per_update:,} env steps ({args.eval_interval} updates of {per_update:,})"
        )
    if not 0.0 < args.target <= 1.0:
        raise ValueError(f"--target {args.target}: expected a win rate in (0, 1]")
    if os.path.exists(args.out_dir) and not os.path.isdir(args.out_dir):
        raise ValueError(f"--out-dir {args.out_dir!r} is a file; expected a folder (made if absent)")
    if args.ours:
        if not os.path.isfile(os.path.join(args.ours, "learning_curves.csv")):
            raise ValueError(f"--ours {args.ours!r}: expected a learning_curves output folder with learning_curves.csv")
        ours = read_ours(args.ours)
        missing = [f"{m} seed {s}" for m in args.maps for s in args.seeds if not ours.get((m, s))]
        if missing:
            raise ValueError(f"--ours {args.ours!r}: no happo/gnn evaluations for {', '.join(missing)}")
        if args.ours_extra:  # read, not run: flags would describe runs that are not the folder's
            raise ValueError(
                f"--ours-extra {args.ours_extra!r} with --ours {args.ours!r}: our side is read, not run; expected one"
            )
    if args.time_budget_s < 0:
        raise ValueError(f"--time-budget-s {args.time_budget_s}: expected a value >= 0 (0: none)")
    lc.check_supervision_args(args)
    if not args.ours:
        clash = flag_clashes(args.ours_extra, {*lc.HARNESS_FLAGS, "--eval-episodes"}, "--ours-extra")
        if clash:
            raise ValueError(
                f"--ours-extra {args.ours_extra!r}: {', '.join(clash)} is set by this benchmark on every run of our side "
                "(--ours-* flags, --eval-episodes); set it there"
            )
        for flag in ("ours_total_timesteps", "ours_num_envs", "ours_num_steps", "ours_eval_interval"):
            if getattr(args, flag) < 1:
                raise ValueError(f"--{flag.replace('_', '-')} {getattr(args, flag)}: expected an integer >= 1")
        batch = args.ours_num_envs * args.ours_num_steps
        if args.ours_total_timesteps < batch:
            raise ValueError(
                f"--ours-total-timesteps {args.ours_total_timesteps}: expected at least one batch of {batch} env steps "
                "(--ours-num-envs x --ours-num-steps)"
            )
        lc.check_args(ours_args(args, "<out>"))


def ours_args(args: Args, out: str) -> lc.Args:
    """learning_curves' arguments for our side (HAPPO, GNN actors, greedy evaluations of ``--eval-episodes``
    episodes every ``--ours-eval-interval`` iterations, no transfer targets)."""
    return lc.Args(
        maps=args.maps,
        seeds=args.seeds,
        algos=("happo",),
        actors=("gnn",),
        total_timesteps=args.ours_total_timesteps,
        num_envs=args.ours_num_envs,
        num_steps=args.ours_num_steps,
        eval_interval=args.ours_eval_interval,
        final_episodes=args.eval_episodes,
        target=args.target,
        out_dir=out,
        extra=f"--eval-episodes {args.eval_episodes} {args.ours_extra}".strip(),
        transfer_maps=(),
        max_parallel=args.max_parallel,
        heartbeat_interval_s=args.heartbeat_interval_s,
        heartbeat_timeout_s=args.heartbeat_timeout_s,
        startup_timeout_s=args.startup_timeout_s,
        stall_timeout_s=args.stall_timeout_s,
        status_interval_s=args.status_interval_s,
    )


def harl_exp(map_name: str, seed: int) -> str:
    """HARL's ``--exp_name`` of one run (unique per map and seed, so its results folder is found)."""
    return f"sbs_{map_name}_seed{seed}"


def harl_jobs(args: Args) -> list[lc.Job]:
    """One HARL training job per (map, seed): the launcher's path and HARL's ``train.py`` overrides."""
    root = harl_root(args)
    jobs = []
    for m in args.maps:
        for s in args.seeds:
            cmd = [LAUNCHER, "--harl-path", root, "--algo", "happo", "--env", "smac", "--exp_name", harl_exp(m, s)]
            cmd += ["--map_name", m, "--state_type", "FP", "--num_env_steps", str(args.num_env_steps), "--cuda", "False"]
            cmd += ["--torch_threads", str(args.torch_threads), "--eval_interval", str(args.eval_interval)]
            cmd += ["--eval_episodes", str(args.eval_episodes), "--seed", str(s)]
            cmd += [t for kv in harl_overrides(args.harl_extra).items() for t in kv]
            jobs.append(lc.Job("train", "harl-happo", "mlp", m, s, cmd))
    return jobs


def read_harl_progress(path: str) -> list[dict]:
    """HARL's SMAC ``progress.txt``: one ``env_steps,eval_return,eval_win_rate`` line per evaluation ->
    ``[{"global_step", "eval_return", "win_rate"}]`` (floats).

    Raises:
        ValueError: a line that is not three comma-separated finite numbers, a win rate outside [0, 1], or
            env steps that do not increase from line to line (names the file and line)."""
    rows = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for i, line in enumerate(f, 1):
            if not line.strip():
                continue
            parts = line.strip().split(",")
            try:
                step, ret, win = (float(p) for p in parts)
            except ValueError:
                raise ValueError(f"{path}:{i}: {line.strip()!r}; expected 'env_steps,eval_return,eval_win_rate'") from None
            if not all(math.isfinite(v) for v in (step, ret, win)) or not 0.0 <= win <= 1.0:
                raise ValueError(f"{path}:{i}: {line.strip()!r}; expected finite numbers and a win rate in [0, 1]")
            if rows and step <= rows[-1]["global_step"]:
                raise ValueError(
                    f"{path}:{i}: env steps {step:g} after {rows[-1]['global_step']:g}; expected increasing steps"
                )
            rows.append({"global_step": step, "eval_return": ret, "win_rate": win})
    return rows


def harl_curve(out: str, map_name: str, seed: int) -> list[dict]:
    """The evaluations of one HARL run under ``out/results`` (the newest run folder), or ``[]``."""
    found = sorted(
        glob.glob(os.path.join(out, "results", "smac", map_name, "happo", harl_exp(map_name, seed), "*", "progress.txt"))
    )
    return read_harl_progress(found[-1]) if found else []


def last_fps(log_path: str) -> float | None:
    """The last ``FPS <n>`` HARL printed in a run's log (its env steps per wall second), or None."""
    try:
        found = re.findall(r"FPS (\d+)", Path(log_path).read_text(errors="replace"))
    except OSError:
        return None
    return float(found[-1]) if found else None


def steps_to(curve: list[dict], target: float) -> float:
    """Env steps of the first evaluation with a win rate >= ``target`` (``inf`` if none)."""
    return next((p["global_step"] for p in curve if p["win_rate"] >= target), float("inf"))


def summary_row(
    method: str, map_name: str, curves: dict[int, list[dict]], sps: list[float], target: float, cadence: str
) -> dict:
    """One line of the table from each seed's evaluations (``{seed: curve}``): a seed without any
    evaluation shows ``no evaluations`` and counts as never reaching ``target`` (infinite) in the median;
    ``seeds`` counts the seeds with evaluations, ``sps`` holds those seeds' env steps per second."""
    hits = {s: steps_to(c, target) for s, c in curves.items()}
    fmt = {
        s: ("no evaluations" if not curves[s] else "not reached" if h == float("inf") else f"{h:,.0f}")
        for s, h in hits.items()
    }
    med = statistics.median(hits.values()) if hits else None
    return {
        "method": method,
        "map": map_name,
        "seeds": sum(1 for c in curves.values() if c),
        f"env_steps_to_{target}": " / ".join(f"{fmt[s]} (seed {s})" for s in sorted(fmt)),
        f"median_env_steps_to_{target}": "" if med is None else ("not reached" if med == float("inf") else f"{med:,.0f}"),
        "median_last_eval_win_rate": (
            f"{statistics.median(c[-1]['win_rate'] for c in curves.values() if c):.2f}" if any(curves.values()) else ""
        ),
        "max_env_steps": f"{max(c[-1]['global_step'] for c in curves.values() if c):,.0f}" if any(curves.values()) else "",
        "median_sps": f"{statistics.median(sps):.0f}" if sps else "",
        "evaluations": cadence,
    }


def cadence(curves: dict[int, list[dict]]) -> str:
    """``"every N env steps"``: the most common gap between successive evaluations of the curves ("" if none)."""
    gaps = [round(b["global_step"] - a["global_step"]) for c in curves.values() for a, b in zip(c[:-1], c[1:], strict=True)]
    return f"every {statistics.mode(gaps):,} env steps" if gaps else ""


def read_ours(path: str) -> dict[tuple[str, int], list[dict]]:
    """learning_curves.csv of a learning_curves folder -> ``{(map, seed): curve}`` (happo, gnn rows).

    Raises:
        ValueError: a missing column, or a row whose seed is not an integer or whose figures are not
            finite numbers (a win rate in [0, 1]); the message names the file and line."""
    out: dict = {}
    file = os.path.join(path, "learning_curves.csv")
    cols = ("global_step", "wall_time_s", "win_rate", "eval_return")
    with open(file, newline="", encoding="utf-8", errors="replace") as f:
        reader = csv.DictReader(f)
        lacking = [c for c in ("algo", "actor", "map", "seed", *cols) if c not in (reader.fieldnames or [])]
        if lacking:
            raise ValueError(f"{file}: no column {', '.join(lacking)}; expected learning_curves.py's learning_curves.csv")
        for i, r in enumerate(reader, 2):
            if (r["algo"], r["actor"]) != ("happo", "gnn"):
                continue
            try:
                point, seed = {k: float(r[k]) for k in cols}, int(r["seed"])
            except (TypeError, ValueError):
                raise ValueError(f"{file}:{i}: {r}; expected an integer seed and numbers") from None
            if not all(math.isfinite(v) for v in point.values()) or not 0.0 <= point["win_rate"] <= 1.0:
                raise ValueError(f"{file}:{i}: {r}; expected finite numbers and a win rate in [0, 1]")
            out.setdefault((r["map"], seed), []).append(point)
    for c in out.values():
        c.sort(key=lambda p: p["global_step"])
    return out


def main(args: Args) -> dict:
    """Run (or read) our side, run HARL's, write and print the table; returns ``{"out", "rows", "failed"}``."""
    check_args(args)
    jobs = harl_jobs(args)
    header = (
        f"HARL side by side: maps {', '.join(args.maps)}, seeds {list(args.seeds)}, backend: embedded simulator, "
        f"device cpu; HARL happo (its defaults, {args.num_env_steps:,} env steps, evaluation every {args.eval_interval} "
        f"updates x {args.eval_episodes} greedy episodes); ours: "
        + (
            f"learning_curves folder {args.ours}"
            if args.ours
            else f"happo_gnn {args.ours_total_timesteps:,} env steps, {args.ours_num_envs} envs x {args.ours_num_steps} "
            f"steps, evaluation every {args.ours_eval_interval} iterations x {args.eval_episodes} episodes"
            + (f", flags {args.ours_extra}" if args.ours_extra else "")
        )
        + f"; {args.max_parallel} run(s) at a time; target {args.target}"
    )
    oa = ours_args(args, "<out>/ours")
    _, _, our_threads, our_budget = lc.schedule(oa)
    print(header, flush=True)
    print(
        f"threads: HARL --torch_threads {args.torch_threads} plus its own env processes "
        f"(n_rollout_threads x episode_length = {harl_update_steps(args):,} env steps per update)"
        + ("" if args.ours else f"; ours --torch-threads {our_threads} per run (the CPUs over --max-parallel)"),
        flush=True,
    )
    if args.ours:
        print(f"note: our side is read from {args.ours} as it was run there (its own budget and evaluation settings)")
    if args.dry_run:
        for j in jobs:
            print(f"  [{j.name}] python {' '.join(j.script_args)}")
        if not args.ours:
            lc.print_plan(oa, lc.plan(oa, our_threads, our_budget))
        return {"jobs": jobs}
    out = str(make_run_dir(os.path.abspath(args.out_dir), f"harl_side_by_side__{int(time.time())}"))
    write_run_meta(out, args, script=os.path.basename(__file__))
    os.makedirs(os.path.join(out, "logs"))
    print(f"output folder: {out}", flush=True)
    failed = []
    ours_dir = args.ours
    if not ours_dir:
        result = lc.main(ours_args(args, os.path.join(out, "ours")))
        ours_dir = result["out"]
        failed += [f"ours: {label}: {reason}" for label, reason in result.get("failed", [])]
    start = time.time()
    done = lc.supervise(jobs, out, args, args.max_parallel, args.torch_threads, None, start)
    failed += [f"{j.label}: {reason}" for j, rc, reason in done if rc != 0]

    ours = read_ours(ours_dir)
    harl_rows, rows = [], []
    for m in args.maps:
        curves, sps = {}, []
        for s in args.seeds:
            try:
                curves[s] = harl_curve(out, m, s)
            except (OSError, ValueError) as e:  # one unreadable run: reported, the others still summarised
                curves[s] = []
                failed.append(f"HARL {m} seed {s}: {e}")
            if not curves[s] and not any(f.startswith(f"HARL {m} seed {s}:") for f in failed):
                failed.append(f"HARL {m} seed {s}: no evaluations in its progress.txt")
            harl_rows += [{"map": m, "seed": s, **p} for p in curves[s]]
            fps = last_fps(os.path.join(out, "logs", lc.Job("train", "harl-happo", "mlp", m, s).name + ".log"))
            if fps is not None and curves[s]:
                sps.append(fps)
        rows.append(summary_row("HARL happo (MLP)", m, curves, sps, args.target, cadence(curves)))
        mine = {s: ours.get((m, s), []) for s in args.seeds}
        our_sps = [c[-1]["global_step"] / max(c[-1]["wall_time_s"], 1e-9) for c in mine.values() if c]
        label = f"ours happo_gnn (GNN{', ' + args.ours_extra if args.ours_extra else ''})"
        rows.append(summary_row(label, m, mine, our_sps, args.target, cadence(mine)))
    lc.write_csv(os.path.join(out, "harl_curves.csv"), harl_rows, ["map", "seed", "global_step", "eval_return", "win_rate"])
    lc.write_csv(os.path.join(out, "side_by_side.csv"), rows)
    md = (
        f"Env steps to the first greedy evaluation (of {args.eval_episodes} episodes) with a win rate >= {args.target}, "
        "on the embedded simulator; median over seeds (a seed that never reaches it counts as infinite).\n\n"
        + lc.markdown_table(rows, list(rows[0]))
    )
    Path(out, "side_by_side.md").write_text(md)
    print("\n" + md)
    print(f"wrote {out}/harl_curves.csv, side_by_side.csv, side_by_side.md (HARL side: {time.time() - start:.0f} s)")
    if failed:
        print(f"failed runs (see {out}/logs): {failed}")
    return {"out": out, "rows": rows, "failed": failed}


if __name__ == "__main__":
    cli_args = tyro.cli(flowing_help(Args))
    try:
        check_args(cli_args)
    except ValueError as e:
        cli_error(str(e))
    sys.exit(1 if main(cli_args).get("failed") else 0)
