"""The run harness of the on-policy training scripts (``algos/happo_gnn.py``, ``algos/hatrpo_gnn.py``).

:class:`TrainingRun` is everything around the algorithm, in the order a script meets it:

1. :meth:`TrainingRun.from_command_line` parses ``Args`` (tyro), or, with ``--resume``, the run's
   saved ``Args`` with the few flags a continuation may change.
2. :meth:`~TrainingRun.init_weights` applies ``--init-from`` and records the run's lineage.
3. :meth:`~TrainingRun.start` creates the run folder ``runs/<maps>__<exp_name>__<seed>__<time>``
   (or reopens the resumed one), writes ``run_meta.json``, opens TensorBoard (and wandb with
   ``--track``) and ``eval.csv``, and prints the first screen.
4. :meth:`~TrainingRun.restore` continues a resumed run bit for bit: weights, optimisers, the
   simulators' states, the episodes in progress, the counters and every RNG.
5. Per iteration: :meth:`~TrainingRun.begin_iteration`, :meth:`~TrainingRun.env_time` around
   ``env.step``, :meth:`~TrainingRun.log_episodes`, then :meth:`~TrainingRun.end_iteration`, which
   evaluates on schedule (``eval_interval``, the last iteration, or a stop: SIGINT, SIGTERM or
   ``--time-budget-s``), writes the checkpoints ``<exp_name>.pt``, ``<exp_name>_best.pt`` and
   ``resume.pt``, and prints the progress line.
6. :meth:`~TrainingRun.finish` closes the logs and prints one line saying where everything is.

TensorBoard tags are CleanRL's (``charts/episodic_return``, ``charts/SPS``, ``losses/*``) plus
``charts/win_rate``, ``charts/eval_return``, ``charts/train_win_rate`` and, with several maps, the
same per map (``charts/win_rate/<map>``); zero-shot maps (``--eval-maps``) log
``charts/zero_shot_win_rate/<map>``. ``eval.csv`` holds one row per evaluation.
"""

from __future__ import annotations

import collections
import contextlib
import csv
import importlib.util
import os
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

import torch

from models.policy import describe_classes, zero_shot_views
from sc2_envs.sim.rng import eval_seed
from sc2_envs.training.checkpoints import save_checkpoint
from sc2_envs.training.cli import cli_error, flowing_help, given_fields, refuse_computed_flags, resume_args
from sc2_envs.training.envs import make_env
from sc2_envs.training.evaluation import evaluate
from sc2_envs.training.progress import EnvShares, Progress, plural, resume_hint, wall_time_note
from sc2_envs.training.run import (
    RESUME_FILE,
    GracefulStop,
    load_init_weights,
    load_resume,
    make_run_dir,
    note_resume,
    rng_state,
    save_resume,
    set_rng_state,
    start_lines,
    starting_lineage,
    truncate_csv,
    tune_allocator,
    write_run_meta,
    zero_shot_eval_seed,
)
from sc2_envs.training.wait_policy import wait_policy_line
from sc2_envs.validation import check_out_dir

COMPUTED_FIELDS = ("batch_size", "minibatch_size", "num_iterations")
RECENT_ITERATIONS = 10
"""Iterations the progress line's ``recent=`` rate covers (env steps per wall-clock second)."""
"""CleanRL's ``Args`` fields filled in at runtime; the command line may not set them."""


def config_record(args: Any) -> dict:
    """``asdict(args)`` as saved in checkpoints and resume files: ``map`` is the map name (a str) for one
    map and the list of names for several (the shipped checkpoints hold the str)."""
    d = asdict(args)
    maps = list(d["map"])
    d["map"] = maps[0] if len(maps) == 1 else maps
    return d


class TrainingRun:
    """One training run: its ``Args``, folder, logs, checkpoints, resume state and stop signals.

    Attributes:
        args: the run's ``Args`` (the saved ones on ``--resume``).
        resumed: the resume state read on ``--resume`` (``sc2_envs.training.run.load_resume``), else None.
        run_dir: the run folder (None until :meth:`start`, unless resumed).
        writer: the TensorBoard ``SummaryWriter`` (after :meth:`start`).
        start_iteration: iterations already done (0, or the resumed run's).
        global_step: env steps already done when the run (re)started.
        win_rate: the last greedy win rate (NaN before the first evaluation).
        lineage: the starting checkpoints, oldest first (``checkpoints.lineage_after``).
    """

    def __init__(self, args: Any, script: str, resumed: dict | None, run_dir: Path | None):
        self.args, self.script, self.resumed, self.run_dir = args, script, resumed, run_dir
        self.algorithm = script[: -len(".py")]
        self.allocator_line = tune_allocator()
        self.start_iteration = 0 if resumed is None else int(resumed["iteration"])
        self.global_step = 0 if resumed is None else int(resumed["global_step"])
        self.win_rate = float("nan") if resumed is None else float(resumed["win_rate"])
        self.best = None if resumed is None or resumed["best"] is None else tuple(resumed["best"])
        self.elapsed_before = 0.0 if resumed is None else float(resumed["elapsed_s"])
        self.lineage: list[dict] = []
        self.init_ckpt: dict | None = None
        self.writer = None
        self._iter_start = self._env_s = 0.0
        # (wall time, global_step) at the last RECENT_ITERATIONS + 1 iteration ends, for the recent rate
        self._recent: collections.deque = collections.deque(maxlen=RECENT_ITERATIONS + 1)

    # ------------------------------------------------------------------ set-up

    @classmethod
    def from_command_line(cls, args_cls: type, script_path: str, changeable: tuple[str, ...]) -> TrainingRun:
        """Parse the command line into ``args_cls``; with ``--resume <run>``, the run's saved ``Args``
        where only the ``changeable`` flags may be given anew.

        Raises:
            SystemExit: (status 2, one line) a computed field was set, the resume file cannot be read
                or is another script's, or a non-changeable flag differs from the saved run's.
        """
        script = os.path.basename(script_path)
        cli = tyro_cli(args_cls)
        given = given_fields(args_cls)
        refuse_computed_flags(cli, COMPUTED_FIELDS, "--num-envs x --num-steps, --num-minibatches, --total-timesteps", given)
        if cli.track and importlib.util.find_spec("wandb") is None:
            cli_error("--track: needs wandb (pip install wandb), which is not installed")
        if not cli.resume:
            try:  # a file named runs in the way: one line now, not a FileExistsError after the simulators are built
                check_out_dir("runs", "the run folders' root")
            except ValueError as e:
                cli_error(str(e))
            return cls(cli, script, None, None)
        try:
            resumed, run_dir = load_resume(cli.resume, script=script)
            saved = dict(resumed["args"])
            saved["map"] = [saved["map"]] if isinstance(saved["map"], str) else list(saved["map"])
            args = resume_args(saved, cli, args_cls(), changeable, given)
        except (OSError, ValueError) as e:
            cli_error(str(e))
        args.map, args.eval_maps, args.resume = tuple(args.map), tuple(args.eval_maps), cli.resume
        return cls(args, script, resumed, run_dir)

    def set_iterations(self) -> None:
        """Fill CleanRL's runtime fields (``batch_size``, ``minibatch_size``, ``num_iterations``).

        Raises:
            SystemExit: (status 2) a resumed run already past ``--total-timesteps``.
        """
        a = self.args
        a.batch_size = int(a.num_envs * a.num_steps)
        a.minibatch_size = int(a.batch_size // a.num_minibatches)
        a.num_iterations = max(1, a.total_timesteps // a.batch_size)
        if a.num_iterations * a.batch_size != a.total_timesteps:
            print(
                f"note: --total-timesteps {a.total_timesteps} is rounded down to whole iterations of {a.batch_size}: "
                f"{a.num_iterations * a.batch_size} env steps"
            )
        if self.start_iteration > a.num_iterations:
            cli_error(
                f"--total-timesteps {a.total_timesteps}: the resumed run is at {self.global_step} env steps; "
                "expected at least that many"
            )

    def init_weights(self, policy: Any, critic: Any) -> None:
        """``--init-from``: a new run starts from the checkpoint's weights; the run's lineage is recorded."""
        self.init_ckpt = load_init_weights(self.args.init_from, self.resumed is not None, policy, critic)
        self.lineage = starting_lineage(self.args.init_from, self.init_ckpt, self.resumed)

    def zero_shot_maps(self, policy: Any, train_info: dict, device: torch.device) -> list[tuple[str, Any, Any]]:
        """``--eval-maps``: ``(map, policy view, simulator)`` of each map played zero-shot at every evaluation,
        on streams no training or training-map evaluation plays (:func:`zero_shot_eval_seed`).

        Raises:
            SystemExit: (status 2) the actors cannot play a map (its classes or entity widths).
        """
        a = self.args
        envs = [
            make_env(a.backend, m, a.eval_episodes, device, zero_shot_eval_seed(a.seed, 0, j))
            for j, m in enumerate(a.eval_maps)
        ]
        try:
            views = zero_shot_views(policy, train_info, [e.get_env_info() for e in envs])
        except ValueError as e:
            cli_error(f"--eval-maps {e} (the actors of {'+'.join(a.map)}, {a.actor}, cannot play it)")
        return list(zip(a.eval_maps, views, envs, strict=True))

    def start(
        self,
        device: torch.device,
        policy: Any,
        critic: Any,
        optimizers: dict[str, torch.optim.Optimizer],
        envs: list,
        eval_policies: list,
        eval_envs: list,
        seeds: list,
        zero_shot: list[tuple[str, Any, Any]],
        dropout: list[float],
        name: str,
        infos: list[dict],
        extra_lines: list[str],
    ) -> None:
        """Create (or reopen) the run folder and its logs and print the first screen.

        Args:
            device: where the models and simulators run.
            policy, critic: the models saved in the checkpoints.
            optimizers: every optimiser, by name (saved in ``resume.pt``).
            envs: the training simulators, one per map (their states are saved in ``resume.pt``).
            eval_policies, eval_envs, seeds: per training map, the policy view, the evaluation
                simulator and the training seed (evaluations use ``eval_seed(seed, iteration)``).
            zero_shot: ``(map, policy view, simulator)`` of each ``--eval-maps`` map.
            dropout: the ``--ally-dropout`` probability of each training map.
            name: the algorithm's name on the first screen (``"HAPPO"``).
            infos: each training map's ``get_env_info()``.
            extra_lines: the algorithm's own first-screen lines (its update).
        """
        a = self.args
        self.device, self.policy, self.critic, self.optimizers, self.envs = device, policy, critic, optimizers, envs
        self.eval_policies, self.eval_envs, self.seeds, self.zero_shot = eval_policies, eval_envs, seeds, zero_shot
        self.maps = list(a.map)
        self.record = config_record(a)
        per_map = a.num_envs // len(self.maps)
        self.ep_return = [torch.zeros(per_map, device=device) for _ in self.maps]  # the episodes in progress
        self.ep_length = [torch.zeros(per_map, device=device) for _ in self.maps]
        if self.run_dir is None:
            self.run_dir = make_run_dir("runs", f"{'+'.join(self.maps)}__{a.exp_name}__{a.seed}__{int(time.time())}")
            write_run_meta(
                self.run_dir,
                a,
                run_name=self.run_dir.name,
                script=self.script,
                device=str(device),
                torch_threads_used=torch.get_num_threads(),
                allocator=self.allocator_line,
                lineage=self.lineage,
            )
        else:
            note_resume(
                self.run_dir,
                from_global_step=self.global_step,
                config=a,
                device=str(device),
                torch_threads_used=torch.get_num_threads(),
                allocator=self.allocator_line,
            )
        if a.track:
            import wandb

            wandb.init(
                project=a.wandb_project_name,
                entity=a.wandb_entity,
                sync_tensorboard=True,
                config=self.record,
                name=self.run_dir.name,
                id=self.run_dir.name,
                resume="allow",
                save_code=True,
            )
        from torch.utils.tensorboard import SummaryWriter

        # a resumed run drops the events logged after its resume state (e.g. after a hard kill)
        self.writer = SummaryWriter(str(self.run_dir), purge_step=None if self.resumed is None else self.global_step + 1)
        if self.resumed is None:
            table = {**vars(a), **self.record}
            self.writer.add_text(
                "hyperparameters", "|param|value|\n|-|-|\n" + "\n".join(f"|{k}|{v}|" for k, v in table.items())
            )
        self.env_info = infos[0]
        for line in map_lines(name, a, infos, device):
            print(line)
        for m, _, env in zero_shot:
            info = env.get_env_info()
            print(
                f"  zero-shot evaluation on {m} (not trained on): agents {info['n_agents']} "
                f"({describe_classes(info)}), {a.eval_episodes} greedy episodes per evaluation"
            )
        n_params, h = policy.n_params(), policy.hparams
        width = f"hidden {h['hidden']}" + (  # the width's default changed (64 -> 32): say which one this run has
            f", {h['heads']} heads, {h['layers']} attention block{'s' if h['layers'] > 1 else ''}"
            if policy.actor_type == "gnn" else ""
        )  # fmt: skip
        print(
            "classes: " + ", ".join(f"{c} ({n_params[c]:,} params)" for c in policy.classes)
            + f" | critic {sum(p.numel() for p in critic.parameters()):,} params | {width}"
        )  # fmt: skip
        for line in extra_lines:
            print(line)
        print(self.allocator_line)
        print(wait_policy_line())
        for line in start_lines(self.maps, dropout, a.init_from, self.init_ckpt, self.lineage):
            print(line)
        print(f"logs: {self.run_dir} (tensorboard --logdir runs)", flush=True)

    def restore(self, actor_memory: dict[str, list] | None = None) -> list[dict]:
        """Load the resume state into the models, optimisers and simulators; returns each map's last
        observation dict. A real game (``--backend sc2``) cannot be snapshot: new episodes start.

        ``actor_memory`` (a recurrent actor's state per map, e.g. ``{"hidden": [...], "episode_start": [...]}``,
        as given to :meth:`open_logs`): its lists are refilled in place with the saved values when the envs
        continue; when new episodes start, the caller's initial values stay."""
        r = self.resumed
        self.policy.load_state_dict(r["actors"])
        self.critic.load_state_dict(r["critic"])
        for name, opt in self.optimizers.items():
            opt.load_state_dict(r["optimizers"][name])
        if r["env"] is not None and all(hasattr(env, "load_state_dict") for env in self.envs):
            next_obs = []
            for k, env in enumerate(self.envs):  # the simulators continue every env bit for bit
                env.load_state_dict(r["env"][k])
                next_obs.append({key: v.to(self.device) for key, v in r["next_obs"][k].items()})
                self.ep_return[k].copy_(r["ep_return"][k])
                self.ep_length[k].copy_(r["ep_length"][k])
            if actor_memory is not None:
                for key, values in (r.get("actor_memory") or {}).items():
                    actor_memory[key][:] = [None if v is None else v.to(self.device) for v in values]
        else:
            print("the env state cannot be restored on this backend: new episodes start now")
            next_obs = [env.reset() for env in self.envs]
        set_rng_state(r["rng"])
        print(f"resumed from {self.run_dir / RESUME_FILE} at iteration {self.start_iteration}, {self.global_step} env steps")
        return next_obs

    def open_logs(self, next_obs: list[dict], actor_memory: dict[str, list] | None = None) -> None:
        """Start the clock, ``eval.csv``, the progress line and the signal handlers; ``next_obs`` (each map's
        last observations) and ``actor_memory`` (name -> one tensor or None per map: what a recurrent actor
        carries between env steps), both updated in place by the script, go into ``resume.pt``."""
        a = self.args
        self.next_obs, self.actor_memory = next_obs, actor_memory
        self.session_start = time.time()
        self.start_time = self.session_start - self.elapsed_before  # wall time and SPS continue across resumptions
        eval_path = self.run_dir / "eval.csv"
        if self.resumed is not None:
            truncate_csv(eval_path, "global_step", self.global_step)
        new_csv = not eval_path.exists()
        self.eval_log = open(eval_path, "a", newline="")  # noqa: SIM115 -- open for the whole run
        self.eval_csv = csv.writer(self.eval_log)
        if new_csv:
            cols = [f"{c}/{m}" for m in self.maps for c in ("win_rate", "eval_return")] if len(self.maps) > 1 else []
            cols += [f"zero_shot_{c}/{m}" for m, _, _ in self.zero_shot for c in ("win_rate", "eval_return")]
            self.eval_csv.writerow(["global_step", "wall_time_s", "win_rate", "eval_return", "iteration", *cols])
        self.progress = Progress(a.num_iterations, a.batch_size, self.start_iteration, elapsed_before=self.elapsed_before)
        self.env_shares = EnvShares()  # the first iteration, and any with a kernel compile or cache load, kept apart
        self.stopper = GracefulStop().install()  # SIGINT / SIGTERM: finish the iteration, then stop

    # ------------------------------------------------------------------ per iteration

    def begin_iteration(self) -> None:
        self._iter_start, self._env_s = time.perf_counter(), 0.0
        self.env_shares.start()
        self.finished = [torch.zeros(4, device=self.device) for _ in self.maps]  # return, length, won, count

    def record_step(self, k: int, out: dict) -> None:
        """Add map ``k``'s env step (its ``reward``, ``terminated``, ``truncated``, ``battle_won``) to the
        returns of the episodes in progress, and the episodes it ended to this iteration's sums."""
        self.ep_return[k] += out["reward"]
        self.ep_length[k] += 1
        done = (out["terminated"] | out["truncated"]).float()
        won = out["battle_won"].float()
        self.finished[k] += torch.stack(
            [(self.ep_return[k] * done).sum(), (self.ep_length[k] * done).sum(), (won * done).sum(), done.sum()]
        )
        self.ep_return[k] *= 1.0 - done
        self.ep_length[k] *= 1.0 - done

    @contextlib.contextmanager
    def env_time(self):
        """Time a block as env time (``charts/env_time_fraction``); on CUDA, what the env has finished."""
        self._sync()
        t = time.perf_counter()
        yield
        self._sync()
        self._env_s += time.perf_counter() - t

    def _sync(self) -> None:
        if self.device.type == "cuda":  # kernels run asynchronously
            torch.cuda.synchronize(self.device)

    def log_episodes(self, global_step: int) -> float | None:
        """Log the episodes that ended in this iteration (:meth:`record_step`); returns their mean return
        over all maps (None if none ended)."""
        finished = self.finished
        total = torch.stack(finished).sum(0)
        tags = ("episodic_return", "episodic_length", "train_win_rate")
        if float(total[3]) > 0:  # all maps: the mean over the episodes that finished, whichever map they were on
            for j, tag in enumerate(tags):
                self.writer.add_scalar(f"charts/{tag}", float(total[j]) / float(total[3]), global_step)
        if len(self.maps) > 1:
            for m, f in zip(self.maps, finished, strict=True):
                if float(f[3]) > 0:
                    for j, tag in enumerate(tags):
                        self.writer.add_scalar(f"charts/{tag}/{m}", float(f[j] / f[3]), global_step)
        return float(total[0]) / float(total[3]) if float(total[3]) > 0 else None

    def end_iteration(self, iteration: int, global_step: int, episode_return: float | None) -> bool:
        """Log SPS and the env's time share, evaluate (and save) when due, print the progress line;
        returns whether to stop (a signal or the time budget)."""
        a = self.args
        self.iteration, self.global_step = iteration, global_step
        now = time.time()
        sps = int(global_step / (now - self.start_time))
        if not self._recent:  # the rate of the iterations since the run (or this process) started
            self._recent.append((self.start_time, 0))
        self._recent.append((now, global_step))
        (t0, s0), (t1, s1) = self._recent[0], self._recent[-1]
        recent = int((s1 - s0) / max(t1 - t0, 1e-9))
        env_share = self._env_s / max(time.perf_counter() - self._iter_start, 1e-9)  # rollout + update
        shown = self.env_shares.add(env_share)
        self.writer.add_scalar("charts/SPS", sps, global_step)
        self.writer.add_scalar("charts/env_time_fraction", env_share, global_step)
        out_of_time = a.time_budget_s > 0 and time.time() - self.session_start > a.time_budget_s
        stopping = self.stopper.requested or out_of_time
        if iteration % a.eval_interval == 0 or iteration == a.num_iterations or stopping:
            self.evaluate_and_save(iteration, global_step)
        # sps= is the run-long average (first-use compiles and evaluations included); recent= the last
        # RECENT_ITERATIONS iterations' rate, which is what the run does now
        self.progress.update(
            iteration, global_step, episode_return, self.win_rate, sps, extra={"recent": recent, "env": shown}
        )
        return stopping

    # ------------------------------------------------------------------ evaluation and files

    def evaluate_and_save(self, iteration: int, global_step: int) -> float:
        """Greedy evaluation on every training map (their mean picks ``<exp_name>_best.pt``), then on
        every ``--eval-maps`` map zero-shot (logged only); then the checkpoints and ``resume.pt``."""
        a, w, K = self.args, self.writer, len(self.maps)
        frames = [] if a.capture_video else None
        results = [
            evaluate(pol, env, a.eval_episodes, eval_seed(seed, iteration), frames=frames if k == 0 else None)
            for k, (pol, env, seed) in enumerate(zip(self.eval_policies, self.eval_envs, self.seeds, strict=True))
        ]
        wr = sum(r["win_rate"] for r in results) / K
        ret = sum(r["mean_return"] for r in results) / K
        w.add_scalar("charts/win_rate", wr, global_step)
        w.add_scalar("charts/eval_return", ret, global_step)
        columns = []
        if K > 1:
            for m, r in zip(self.maps, results, strict=True):
                w.add_scalar(f"charts/win_rate/{m}", r["win_rate"], global_step)
                w.add_scalar(f"charts/eval_return/{m}", r["mean_return"], global_step)
                columns += [r["win_rate"], r["mean_return"]]
        for j, (m, pol, env) in enumerate(self.zero_shot):
            r = evaluate(pol, env, a.eval_episodes, zero_shot_eval_seed(a.seed, iteration, j))
            w.add_scalar(f"charts/zero_shot_win_rate/{m}", r["win_rate"], global_step)
            w.add_scalar(f"charts/zero_shot_eval_return/{m}", r["mean_return"], global_step)
            columns += [r["win_rate"], r["mean_return"]]
        self.eval_csv.writerow([global_step, round(time.time() - self.start_time, 2), wr, ret, iteration, *columns])
        self.eval_log.flush()
        if frames:
            from sc2_envs.render import save_episode_video

            os.makedirs(f"videos/{self.run_dir.name}", exist_ok=True)
            save_episode_video(frames, f"videos/{self.run_dir.name}/step_{global_step}.gif")
        self.win_rate = wr
        if a.save_model:
            self.save_checkpoint(self.run_dir / f"{a.exp_name}.pt", global_step)
            if self.best is None or (wr, ret) > self.best:
                self.best = (wr, ret)
                self.save_checkpoint(self.run_dir / f"{a.exp_name}_best.pt", global_step)
            self.save_resume(iteration, global_step)
        return wr

    def save_checkpoint(self, path: Path, global_step: int) -> None:
        extra = {"lineage": self.lineage} if self.lineage else None
        save_checkpoint(
            path,
            self.policy,
            self.critic,
            self.env_info,
            self.record,
            global_step,
            maps=self.maps,
            extra=extra,
            algorithm=self.algorithm,
        )

    def save_resume(self, iteration: int, global_step: int) -> None:
        snapshot = all(hasattr(env, "state_dict") for env in self.envs)
        save_resume(
            self.run_dir / RESUME_FILE,
            {
                "args": self.record,
                "lineage": self.lineage,
                "iteration": iteration,
                "global_step": global_step,
                "elapsed_s": time.time() - self.start_time,
                "win_rate": self.win_rate,
                "best": None if self.best is None else list(self.best),
                "actors": self.policy.state_dict(),
                "critic": self.critic.state_dict(),
                "optimizers": {name: opt.state_dict() for name, opt in self.optimizers.items()},
                "rng": rng_state(),
                "env": [env.state_dict() for env in self.envs] if snapshot else None,
                "next_obs": list(self.next_obs),
                "actor_memory": None if self.actor_memory is None else {k: list(v) for k, v in self.actor_memory.items()},
                "ep_return": list(self.ep_return),
                "ep_length": list(self.ep_length),
            },
        )

    def finish(self, iteration: int, global_step: int) -> None:
        """Close the logs and print where everything is."""
        a, K = self.args, len(self.maps)
        self.stopper.restore()
        self.progress.close()
        self.eval_log.close()
        self.writer.close()
        if iteration == self.start_iteration:
            how = f"nothing to do: the run already has {plural(a.num_iterations, 'iteration')}"
        elif self.stopper.requested:
            how = f"stopped by {self.stopper.reason} after iteration {iteration}/{a.num_iterations}"
        elif iteration < a.num_iterations:
            how = (
                f"time budget of {a.time_budget_s:.0f} s (this process) reached after iteration {iteration}/{a.num_iterations}"
            )
        else:
            how = f"finished {plural(a.num_iterations, 'iteration')}"
        saved = (
            f"checkpoints {a.exp_name}.pt, {a.exp_name}_best.pt; "
            + resume_hint(self.run_dir, iteration >= a.num_iterations, a.num_iterations * a.batch_size)
            if a.save_model
            else "no checkpoint (--no-save-model)"
        )
        now = time.time()
        wall = wall_time_note(now - self.start_time, now - self.session_start, self.resumed is not None)
        over = f"{a.eval_episodes} episodes" + (f" on each of {K} maps (mean)" if K > 1 else "")
        print(
            f"{how}: {global_step} env steps, {wall}{self.env_shares.note()}, greedy win rate {self.win_rate:.3f} over "
            f"{over} | run folder {self.run_dir}: eval.csv, TensorBoard events, {saved}",
            flush=True,
        )


def tyro_cli(args_cls: type) -> Any:
    import tyro

    return tyro.cli(flowing_help(args_cls))


def map_lines(name: str, args: Any, infos: list[dict], device: torch.device) -> list[str]:
    """The first-screen lines of an on-policy run: algorithm, maps, envs, budget, seed, device and sizes."""
    maps, K = list(args.map), len(args.map)
    budget = f"{plural(args.num_iterations, 'iteration')} ({args.num_iterations * args.batch_size:,} env steps)"
    if K == 1:
        info = infos[0]
        return [
            f"{name} ({args.actor}) on {maps[0]} | backend {args.backend} | {args.num_envs} envs x {args.num_steps} steps "
            f"= {args.batch_size} env steps/iteration, {budget} | seed {args.seed} | device {device}",
            f"obs {info['obs_shape']}, state {info['state_shape']}, actions {info['n_actions']}, agents {info['n_agents']} "
            f"({describe_classes(info)}), episode limit {info['episode_limit']} env steps",
        ]
    lines = [
        f"{name} ({args.actor}) on {K} maps {', '.join(maps)} | backend {args.backend} | {args.num_envs} envs "
        f"({args.num_envs // K} per map) x {args.num_steps} steps = {args.batch_size} env steps/iteration, {budget} | "
        f"seed {args.seed} | device {device} | one shared class-factored critic"
    ]
    for m, info in zip(maps, infos, strict=True):
        lines.append(
            f"  {m}: {args.num_envs // K} envs, obs {info['obs_shape']}, state {info['state_shape']}, actions "
            f"{info['n_actions']}, agents {info['n_agents']} ({describe_classes(info)}), episode limit "
            f"{info['episode_limit']} env steps"
        )
    return lines
