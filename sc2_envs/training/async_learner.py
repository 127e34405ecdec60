"""The run harness of the asynchronous actor-learner (``algos/a3c_upgo.py``): everything around its update.

:class:`AsyncLearnerRun` is used as a ``with`` block, in the order the learner meets it:

1. The constructor loads a resumed run's weights, publishes them to shared memory
   (``SharedWeights``), creates the actor pool (``sc2_envs.vector.actor_pool``: spawned processes or
   Ray actors, ``--backend``) and opens the learner's event log ``<run>/learner_events.log``.
2. :meth:`~AsyncLearnerRun.start` starts the actors, restores the optimiser and the learner's RNG on
   ``--resume``, opens TensorBoard and installs the SIGINT / SIGTERM handlers.
3. Per loop: :meth:`~AsyncLearnerRun.should_stop` (a signal, ``--total-timesteps``,
   ``--time-budget-s``), :meth:`~AsyncLearnerRun.receive` (check the actors, then take one unroll and
   its env steps, which the learner adds to :attr:`~AsyncLearnerRun.env_steps`),
   :meth:`~AsyncLearnerRun.record_unroll` (its episodes, its actor's rate and policy lag), the loss within
   :meth:`~AsyncLearnerRun.critic_warmup` (``--critic-warmup-steps``: only the value baseline trains); after an
   update :meth:`~AsyncLearnerRun.publish` and :meth:`~AsyncLearnerRun.end_update` (counters, charts,
   the progress line, and the checkpoints every ``--checkpoint-interval`` updates).
4. :meth:`~AsyncLearnerRun.finish` writes the last checkpoints and the end-of-run line. Leaving the
   block stops every actor and closes the logs; an ``ActorFailure`` (a dead or stalled actor without
   ``--restart-actors``) becomes exit status 1 and ``KeyboardInterrupt`` 130.

Before it: :func:`start_learner_run` (``--resume`` through :func:`resume_learner_args`, the flag checks,
the learner's device and thread count, :func:`open_run_dir`: a new run folder with ``run_meta.json``,
or a note in the resumed one) and :func:`sc2_envs.training.run.discard_unstarted_run`; after it :func:`exit_process`. Actor
seeds come from :func:`actor_seed` (seed splitting, a new stream per restart and per resumption); an
actor keeps its episode statistics in :class:`EpisodeStats` and prints its progress with
:func:`actor_progress`.

TensorBoard tags: CleanRL's ``charts/episodic_return`` and ``charts/episodic_length``, plus
``charts/win_rate_window``, ``charts/return_window`` (the last ``--win-window`` episodes),
``charts/env_SPS``, ``charts/learner_SPS``, ``charts/queue_depth``, ``charts/policy_lag`` (per unroll),
``charts/policy_lag_batch`` (both in learner updates), ``charts/policy_version``, ``charts/actor_restarts``,
``charts/episodes_in_window``, ``charts/critic_warmup`` (1 for a warm-up update) and ``actors/env_sps/actor_<slot>``. Their
step is :attr:`~AsyncLearnerRun.env_steps`, the env steps received from the actors.
"""

from __future__ import annotations

import contextlib
import json
import multiprocessing as mp
import os
import sys
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, NoReturn

import numpy as np
import torch
from torch import nn

from sc2_envs.training.async_learner_checks import (
    adopt_init_networks,
    check_async_learner_args,
    check_save_loop_reached,
    is_full_game,
    resolve_step_mul,
    saved_starts_line,
    training_games_line,
    training_reward_line,
)
from sc2_envs.training.cli import cli_error, resume_args
from sc2_envs.training.critic_warmup import in_warmup, trainable_only, value_params_text
from sc2_envs.training.progress import resume_hint
from sc2_envs.training.run import (
    RESUME_FILE,
    GracefulStop,
    load_resume,
    make_run_dir,
    note_resume,
    rng_state,
    save_resume,
    set_rng_state,
    tune_allocator,
    write_run_meta,
)
from sc2_envs.training.wait_policy import wait_policy_line
from sc2_envs.vector.actor_pool import (
    ActorFailure,
    ActorPoolConfig,
    ActorSupervisor,
    SharedWeights,
    make_actor_pool,
)

LEARNER_LOG = "learner_events.log"
"""The learner's event log in the run folder: every line it prints, time-stamped."""

RESUME_CHANGEABLE = (
    "total_timesteps", "time_budget_s", "torch_threads", "cuda", "num_actors", "backend", "ray_address", "ray_actor_cpus",
    "queue_size", "restart_actors", "max_restarts", "heartbeat_interval", "heartbeat_timeout", "stall_timeout",
    "startup_timeout", "print_interval_s", "checkpoint_interval", "keep_checkpoints",
)  # fmt: skip
"""The flags a resumed run may change (``--resume``); every other flag keeps the run's saved value."""

ACTOR_SPAWN_KEY = 0x61637472
"""First spawn-key word of actor seeds (ASCII "actr"): training envs of ``make_batched(seed=s)`` have spawn
key ``(b,)`` and evaluation envs ``(sc2_envs.sim.rng.EVAL_SPAWN_KEY, ...)``, so actor streams are disjoint
from both by construction."""


def actor_seed(seed: int, slot: int, gen: int, session: int = 0) -> np.random.SeedSequence:
    """The seed of actor ``slot`` in generation ``gen`` (restarts) of session ``session`` (0 for a fresh run,
    +1 per ``--resume``) of the run seeded ``seed``.

    ``SeedSequence(seed, spawn_key=(ACTOR_SPAWN_KEY, slot, gen))`` in the first session, with ``session``
    appended to the key after a resume (so a resumed run does not replay its first battles): NumPy seed splitting
    (numpy/random/bit_generator.pyx), so no (run seed, slot, generation) triple shares a stream with
    another; an offset such as ``seed + 10_000 * (slot + 1)`` made run seeds 10,000 apart share actors.
    The actor's envs get env ``b``'s child ``(ACTOR_SPAWN_KEY, slot, gen, b)`` from ``make_batched``.

    Raises:
        ValueError: ``seed``, ``slot``, ``gen`` or ``session`` is not a non-negative int (the message names it).
    """
    for name, v in (("seed", seed), ("slot", slot), ("gen", gen), ("session", session)):
        if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < 0:
            raise ValueError(f"actor_seed: {name} must be a non-negative int, got {v!r}")
    key = (ACTOR_SPAWN_KEY, int(slot), int(gen)) + ((int(session),) if session else ())
    return np.random.SeedSequence(int(seed), spawn_key=key)


def pool_config(args: Any) -> ActorPoolConfig:
    """The actor pool's settings from the learner's ``Args`` (``--num-actors``, ``--backend``, ``--queue-size``,
    the heartbeat, stall and start-up timeouts in seconds, ``--torch-threads``, ``--restart-actors``,
    ``--max-restarts`` and the Ray flags)."""
    return ActorPoolConfig(
        num_actors=args.num_actors,
        backend=args.backend,
        queue_size=args.queue_size,
        heartbeat_interval=args.heartbeat_interval,
        heartbeat_timeout=args.heartbeat_timeout,
        stall_timeout=args.stall_timeout,
        startup_timeout=args.startup_timeout,
        torch_threads=args.torch_threads,
        restart_actors=args.restart_actors,
        max_restarts=args.max_restarts,
        ray_address=args.ray_address,
        ray_actor_cpus=args.ray_actor_cpus,
        process_name="a3c-actor",
        failure_hint="rerun with --restart-actors to replace failed actors",
    )


@dataclass
class LearnerPieces:
    """What the learners of two game families (SMAC maps, the full game) do differently; :class:`AsyncLearnerRun`
    and the update loop run either."""

    modules: dict[str, nn.Module]
    """the trained modules by their key in resume.pt (optimised in this order)"""
    published: nn.Module
    """the module whose weights the actors act with"""
    target: Callable
    """the actor pool's target ``(slot, gen, channel)``"""
    collate: Callable[[list[dict], torch.device], dict]
    """unrolls -> one batch on the learner's device"""
    loss: Callable[[dict], tuple[torch.Tensor, dict]]
    """batch -> ``(loss, logs)``: the total loss (a 0-d tensor with its autograd graph) and the logged terms
    (TensorBoard tag -> 0-d tensor)"""
    save: Callable[[Path, int], None]
    """write the model checkpoint ``(path, env_steps)`` atomically"""
    lineage: list
    """the starting checkpoints, oldest first (``checkpoints.lineage_after``), saved in every checkpoint"""
    summary: str
    """one first-screen line: the map and the models"""
    value_params: dict[str, list[nn.Parameter]]
    """the value baselines the loss trains, by name (``"critic"``, ``"base.winloss"``) -> their parameters: the only
    parameters a critic warm-up trains (``--critic-warmup-steps``, ``sc2_envs.training.critic_warmup``)"""


class EpisodeStats:
    """An actor's running episode returns and lengths over its ``B`` envs, and the episodes that ended.

    Args:
        num_envs: ``B``, the actor's envs.
    """

    def __init__(self, num_envs: int):
        self.returns = torch.zeros(num_envs)
        self.lengths = torch.zeros(num_envs, dtype=torch.int64)
        self.ended: list[tuple[float, int, bool]] = []

    def step(self, reward: torch.Tensor, done: torch.Tensor, won: torch.Tensor) -> None:
        """Count one env step: ``reward [B]`` float, ``done [B]`` bool (terminated or truncated), ``won [B]`` bool
        (SMAC's ``battle_won``); an env that is done adds ``(return, length in env steps, won)`` to :attr:`ended`
        and starts a new episode."""
        self.returns += reward
        self.lengths += 1
        for b in torch.nonzero(done).flatten().tolist():
            self.ended.append((float(self.returns[b]), int(self.lengths[b]), bool(won[b])))
        self.returns = torch.where(done, 0.0, self.returns)
        self.lengths = torch.where(done, 0, self.lengths)

    def take(self) -> list[tuple[float, int, bool]]:
        """The episodes that ended since the last call, oldest first (sent with an unroll)."""
        ended, self.ended = self.ended, []
        return ended


def actor_progress(slot: int, gen: int, sent: int, version: int, every: int = 50) -> None:
    """Print actor ``slot`` (generation ``gen``)'s progress line after every ``every``-th unroll it sent;
    ``version``: the policy version it acts with."""
    if sent % every == 0:
        print(f"[actor {slot} gen {gen}] {sent} unrolls, policy version {version}", flush=True)


def env_rate(steps: int, seconds: float) -> float | None:
    """Env steps per second over a measured interval.

    Args:
        steps: env steps (summed over games) that arrived within the interval.
        seconds: the interval's length in wall-clock seconds.

    Returns:
        ``steps / seconds``, or None when nothing was measured yet (``seconds <= 0`` or ``steps <= 0``,
        e.g. at the update that the first unroll completes), rather than a rate over a zero interval.
    """
    if seconds <= 0 or steps <= 0:
        return None
    return steps / seconds


def saved_models_text(run_dir: Path, exp_name: str) -> str:
    """The end-of-run line's part naming the model files the run folder holds.

    Args:
        run_dir: the run folder.
        exp_name: ``--exp-name``; the files are ``<exp_name>.pt`` (last) and ``<exp_name>_best.pt`` (best
            rolling train win rate, written only once some episode has ended).

    Returns:
        e.g. ``"model saved to runs/x/a3c_upgo.pt (best: a3c_upgo_best.pt)"``; only the files that exist
        are named (``"no model file in runs/x"`` when neither does).
    """
    last, best = run_dir / f"{exp_name}.pt", run_dir / f"{exp_name}_best.pt"
    if not last.is_file():
        return f"best model saved to {best}" if best.is_file() else f"no model file in {run_dir}"
    text = f"model saved to {last}"
    if best.is_file():
        return f"{text} (best: {best.name})"
    return f"{text} (no {best.name}: no episode ended, so there is no win rate to rank by)"


# ------------------------------------------------------------------------------------------------
# before the learner starts, and after it


def start_learner_run(
    args: Any, defaults: Any, given: frozenset[str] | None, script: str
) -> tuple[Any, dict | None, Path, torch.device, tuple[str, ...]]:
    """Everything before the learner trains: ``--resume`` (:func:`resume_learner_args` with
    ``RESUME_CHANGEABLE``), the flag checks (``async_learner_checks``), the allocator, the learner's
    device (``--cuda``) and thread count (``--torch-threads``), and the run folder (:func:`open_run_dir`).
    Prints the allocator's and OpenMP's wait-policy lines.

    Args:
        args: the command line's ``Args``.
        defaults: ``Args()``, to tell given flags from defaults when ``given`` is None.
        given: the flags the command line set (``cli.given_fields``), or None.
        script: the script's file name (``"a3c_upgo.py"``), recorded in ``run_meta.json`` and checked on resume.

    Returns:
        ``(args, resumed, run_dir, device, notes)``: the run's ``Args`` (a full game's ``step_mul`` 0 resolved:
        ``async_learner_checks.resolve_step_mul``), its resume state (None for a new run), its folder, the
        learner's device, and the lines saying where derived settings come from (for :func:`print_configuration`;
        on the full game the step_mul, where training games end, how they start and what reward they train on:
        ``async_learner_checks.training_games_line``, ``saved_starts_line``, ``training_reward_line``).

    Raises:
        SystemExit: status 2, ``<script>: error: <message>``: a bad flag or resume file (one line naming it).
    """
    resumed = run_dir = None
    try:
        if args.resume:  # continue a run: its saved Args, with the flags a continuation may change
            args, resumed, run_dir = resume_learner_args(args, defaults, RESUME_CHANGEABLE, given, script)
        check_async_learner_args(args, given)
        adopt_init_networks(args)  # before run_meta.json records the Args
        notes = (
            (resolve_step_mul(args), training_games_line(args), saved_starts_line(args), training_reward_line(args))
            if is_full_game(args)
            else ()
        )
        if is_full_game(args):
            check_save_loop_reached(args)
    except SystemExit as e:
        if isinstance(e.code, str):  # a check's one-line message: the command line's error form and status 2
            cli_error(e.code, script)
        raise
    allocator_line = tune_allocator()
    device = torch.device("cuda" if torch.cuda.is_available() and args.cuda else "cpu")
    run_dir = open_run_dir(args, resumed, run_dir, script, device.type)
    if args.torch_threads > 0:  # before wait_policy_line, which names the count in effect
        torch.set_num_threads(args.torch_threads)
    print(allocator_line)
    print(wait_policy_line())
    return args, resumed, run_dir, device, notes


def exit_process(status: int) -> NoReturn:
    """Flush stdout and stderr and end the process with ``status`` at once (``os._exit``): every actor, file
    and writer is closed by then, and torch's teardown would take seconds."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)


def resume_learner_args(
    args: Any, defaults: Any, changeable: tuple[str, ...], given: frozenset[str] | None, script: str
) -> tuple[Any, dict, Path]:
    """``--resume``: the run's saved ``Args`` with the ``changeable`` flags the command line gave anew.

    Args:
        args: the command line's ``Args`` (``args.resume``: a run folder or its resume.pt).
        defaults: ``Args()``, to tell given flags from defaults when ``given`` is None.
        changeable: the flags a continuation may change (the script's ``RESUME_CHANGEABLE``).
        given: the flags the command line set (``cli.given_fields``), or None.
        script: the script's file name (``"a3c_upgo.py"``); a resume file of another script is refused.

    Returns:
        ``(args, resumed, run_dir)``: the continued run's ``Args`` with ``resume`` kept and ``session`` one
        above the saved run's (so its actors draw new env streams, :func:`actor_seed`), the resume state
        (``run.load_resume``) and the run folder.

    Raises:
        SystemExit: status 2 (``cli_error``): the resume file cannot be read or is another script's, a
            flag outside ``changeable`` differs from the saved run's, or ``--total-timesteps`` is not above the
            env steps the run has done.
    """
    try:
        resumed, run_dir = load_resume(args.resume, script=script)
        resume_from = args.resume
        args = resume_args(resumed["args"], args, defaults, changeable, given)
    except (OSError, ValueError) as e:
        cli_error(str(e))
    done = int(resumed["global_step"])
    if args.total_timesteps <= done:  # nothing to train: it would start actors and only rewrite the checkpoints
        cli_error(f"--total-timesteps {args.total_timesteps}: the run has done {done:,} env steps; expected more to go on")
    args.resume, args.session = resume_from, int(resumed["args"].get("session", 0)) + 1
    return args, resumed, run_dir


def open_run_dir(args: Any, resumed: dict | None, run_dir: Path | None, script: str, device: str) -> Path:
    """A new run folder ``<run_dir>/<map>__<exp_name>__<seed>__<unix time>`` (``-2``, ``-3``, ... if taken) with
    ``run_meta.json`` (config, git commit, package versions), or, for a resumed run, its own folder
    ``run_dir`` with the resumption noted in ``run_meta.json``. ``device``: the learner's (``"cpu"``, ``"cuda"``)."""
    if resumed is None:  # a new folder, never an existing one
        run_dir = make_run_dir(args.run_dir, f"{args.map}__{args.exp_name}__{args.seed}__{int(time.time())}")
        write_run_meta(run_dir, args, run_name=run_dir.name, script=script, device=device)
    else:
        note_resume(run_dir, from_global_step=resumed["global_step"], session=args.session, config=args, device=device)
    return run_dir


def print_configuration(args: Any, run_dir: Path, notes: tuple[str, ...] = ()) -> None:
    """Print every option of ``args``, the ``notes`` (where derived settings come from, one a line), then the
    batch of one update in env steps and the run folder."""
    print("effective configuration:")
    for k, v in asdict(args).items():
        print(f"  {k} = {v!r}")
    for line in notes:
        print(f"  (derived) {line}")
    print(
        f"  (derived) batch = {args.batch_unrolls} x {args.envs_per_actor} envs x {args.unroll_length} steps "
        f"= {args.batch_unrolls * args.envs_per_actor * args.unroll_length} env steps per update; run dir {run_dir}",
        flush=True,
    )


# ------------------------------------------------------------------------------------------------
# the run


class AsyncLearnerRun:
    """One asynchronous actor-learner run: its actors, counters, logs, checkpoints and stop signals.

    Args:
        args: the learner's ``Args`` (pool flags, ``win_window``, ``total_timesteps``, ``time_budget_s``,
            ``print_interval_s``, ``checkpoint_interval``, ``save_model``, ``exp_name``, ``session``).
        run_dir: the run folder (:func:`open_run_dir`).
        resumed: the resume state (``run.load_resume``), or None for a new run.
        pieces: the game family's models, actor target, checkpoint writer (:class:`LearnerPieces`).

    Raises:
        SystemExit: ``--backend ray`` without Ray installed (the message names the flag).

    Attributes:
        env_steps: env steps received from the actors (summed over their games; the learner adds each
            unroll's, :meth:`receive`), the TensorBoard step and CleanRL's ``global_step`` (resume.pt key).
        updates: learner updates done. trained_steps: env steps the updates trained on.
        window: ``(return, length, won)`` of the last ``--win-window`` episodes.
        saved_start_window: the same for episodes that started from a saved game (full game, ``--saved-start-share``),
            kept apart so that :attr:`window` stays the win rate of whole games.
        writer: the TensorBoard ``SummaryWriter`` (after :meth:`start`).
        exit_status: 0, 1 after an ``ActorFailure``, 130 after ``KeyboardInterrupt``.
    """

    def __init__(self, args: Any, run_dir: Path, resumed: dict | None, pieces: LearnerPieces):
        self.args, self.run_dir, self.resumed, self.pieces = args, run_dir, resumed, pieces
        if resumed is not None:  # before the actors start, so that they act with the resumed weights
            for key, module in pieces.modules.items():
                module.load_state_dict(resumed[key])
        ctx = mp.get_context("spawn")
        policy = pieces.published
        self.weights = SharedWeights({k: v.cpu() for k, v in policy.state_dict().items()}, ctx)
        self.weights.publish(policy.state_dict())
        self.config = pool_config(args)
        try:
            self.pool = make_actor_pool(self.config, pieces.target, self.weights, run_dir, ctx)
        except ImportError as e:
            raise SystemExit(f"--backend {args.backend}: {e}") from None
        self.log_file = open(run_dir / LEARNER_LOG, "a", buffering=1)  # noqa: SIM115 - closed in close()
        self.supervisor = ActorSupervisor(self.pool, self.config, self.say)
        self.start_time = time.monotonic()
        self.env_steps = self.updates = self.trained_steps = 0
        self.update_time = self.elapsed_before = 0.0
        self.session_trained_steps = 0  # since this process started (charts/learner_SPS)
        self.best: float | None = None
        self.window: deque = deque(maxlen=args.win_window)
        self.saved_start_window: deque = deque(maxlen=args.win_window)
        if resumed is not None:
            self.env_steps, self.updates, self.trained_steps = (
                int(resumed[k]) for k in ("global_step", "updates", "trained_steps")
            )
            self.elapsed_before, self.best = float(resumed["elapsed_s"]), resumed["best"]
            self.window.extend(tuple(e) for e in resumed["window"])
        self.stop = GracefulStop()
        self.last_print = self.last_unroll = self.start_time
        # the env rate counts what arrives after the first unroll, over the time since it
        self.first_unroll: float | None = None
        self.steps_at_first = 0
        self.optimizer: torch.optim.Optimizer | None = None
        self.writer = None
        self.exit_status = 0
        self.warming = False  # the last update was a critic warm-up update (critic_warmup)

    def say(self, msg: str) -> None:
        """Print an event line and append it to ``learner_events.log``, both time-stamped."""
        stamp = time.strftime("%H:%M:%S")
        self.log_file.write(f"[{stamp}] {msg}\n")
        try:
            print(f"[learner {stamp}] {msg}", flush=True)
        except OSError:
            pass  # a closed terminal or pipe must not end the run; learner_events.log has every line

    def __enter__(self) -> AsyncLearnerRun:
        return self

    def __exit__(self, exc_type: type | None, exc: BaseException | None, tb: Any) -> bool:
        """Report an actor failure (exit status 1) or an interrupt (130), then :meth:`close`; other
        exceptions (a second signal's ``SystemExit``) pass on after the close."""
        handled = False
        if exc_type is not None and issubclass(exc_type, ActorFailure):
            self.say(f"stopping: {exc}")
            self.exit_status, handled = 1, True
        elif exc_type is not None and issubclass(exc_type, KeyboardInterrupt):
            self.say("interrupted")
            self.exit_status, handled = 130, True
        self.close()
        return handled

    def start(self, optimizer: torch.optim.Optimizer, summary: str) -> None:
        """Start the actors; on ``--resume`` load the optimiser's state and the learner's RNG; print ``summary``,
        open TensorBoard (a resumed run drops the events logged after its resume state) and install the
        SIGINT / SIGTERM handlers (finish the update, checkpoint, stop the actors, exit 0)."""
        a = self.args
        self.supervisor.start_all()
        self.optimizer = optimizer
        if self.resumed is not None:
            optimizer.load_state_dict(self.resumed["optimizer"])
            set_rng_state(self.resumed["rng"])
            self.say(
                f"resumed from {self.run_dir / RESUME_FILE} at update {self.updates}, {self.env_steps} env steps "
                f"(session {a.session}: new actor env seeds)"
            )
        print(summary, flush=True)
        if in_warmup(self.env_steps + 1, a.critic_warmup_steps):  # a resumed run may be past it
            self.say(
                f"critic warm-up: until {a.critic_warmup_steps} env steps only the value baseline trains: "
                f"{value_params_text(self.pieces.value_params, self.pieces.modules)}; the policy's parameters are "
                "frozen, so the actors play the starting policy"
            )
        from torch.utils.tensorboard import SummaryWriter  # here, not at the top: spawned actors import the script

        # a resumed run drops the events logged after its resume state (e.g. after a hard kill)
        self.writer = SummaryWriter(str(self.run_dir), purge_step=None if self.resumed is None else self.env_steps + 1)
        if self.resumed is None:
            table = "\n".join(f"|{k}|{v}|" for k, v in asdict(a).items())
            self.writer.add_text("hyperparameters", "|param|value|\n|-|-|\n" + table)
        self.start_time = time.monotonic()
        self.stop.install()

    def should_stop(self) -> bool:
        """Whether the run is over: a signal, ``--total-timesteps`` env steps, or ``--time-budget-s`` seconds of
        this process's training (the reason is logged)."""
        a = self.args
        if self.stop.requested:
            self.say(f"{self.stop.reason}: stopping after update {self.updates}, {self.env_steps} env steps")
            return True
        if self.env_steps >= a.total_timesteps:
            self.say(f"total_timesteps reached: {self.env_steps} env steps")
            return True
        if a.time_budget_s > 0 and time.monotonic() - self.start_time > a.time_budget_s:
            self.say(f"time budget of {a.time_budget_s:.0f} s reached after {self.env_steps} env steps")
            return True
        return False

    def receive(self) -> tuple[dict, int] | None:
        """Check the actors (a dead or stalled one is reported, and replaced with ``--restart-actors``), then
        wait up to 0.1 s for one unroll.

        Returns:
            ``(unroll, env_steps)``: the actor's unroll (a dict with ``reward [T, B]``, ``episodes``,
            ``version``, ``slot``, ``act_time_s``) and the env steps it holds (``T * B``), which the learner
            adds to :attr:`env_steps` before :meth:`record_unroll`; or None when none arrived in 0.1 s.

        Raises:
            ActorFailure: an actor failed without ``--restart-actors``, or ``--max-restarts`` is used up.
        """
        self.supervisor.check()
        # A short poll that never ends the run: an empty queue only means the actors are busy (episodes
        # on the real game can take many minutes); mini-AlphaStar's consumer quit on a queue timeout.
        unroll = self.pool.get(timeout=0.1)
        now = time.monotonic()
        if unroll is None:
            if now - self.last_unroll > 60 and now - self.last_print > 60:
                self.say(f"waiting for unrolls for {now - self.last_unroll:.0f} s; queue depth {self.pool.depth()}")
                self.last_print = now
            return None
        self.last_unroll = now
        return unroll, int(unroll["reward"].size)

    def record_unroll(self, unroll: dict) -> None:
        """Log a received unroll at the current :attr:`env_steps` (which already counts it): its ended episodes
        (also into :attr:`window`; those started from a saved game into :attr:`saved_start_window`), its actor's env
        steps per second of acting and its policy lag in updates."""
        steps = int(unroll["reward"].size)
        if self.first_unroll is None:
            self.first_unroll, self.steps_at_first = self.last_unroll, self.env_steps
        w, step = self.writer, self.env_steps
        for ret, length, won in unroll["episodes"]:
            self.window.append((ret, length, won))
        if unroll["episodes"]:
            w.add_scalar("charts/episodic_return", float(np.mean([e[0] for e in unroll["episodes"]])), step)
            w.add_scalar("charts/episodic_length", float(np.mean([e[1] for e in unroll["episodes"]])), step)
        from_saves = unroll.get("saved_start_episodes", ())
        self.saved_start_window.extend(from_saves)
        if from_saves:
            w.add_scalar("charts/saved_start_won", float(np.mean([e[2] for e in from_saves])), step)
        w.add_scalar(f"actors/env_sps/actor_{unroll['slot']}", steps / max(unroll["act_time_s"], 1e-9), step)
        w.add_scalar("charts/policy_lag", self.weights.version - unroll["version"], step)

    def policy_lag(self, unrolls: list[dict]) -> float:
        """The mean over ``unrolls`` of the published version minus the version each was acted with, in learner
        updates (each update publishes one version)."""
        return float(np.mean([self.weights.version - u["version"] for u in unrolls]))

    @contextlib.contextmanager
    def critic_warmup(self) -> Iterator[bool]:
        """Run the update's loss (forward pass) inside: within ``--critic-warmup-steps`` env steps
        (:attr:`env_steps`, including this update's batch) only ``LearnerPieces.value_params`` require
        gradients, so the update trains the value baseline alone (``critic_warmup.trainable_only``); after
        it, nothing changes. Yields whether this is a warm-up update; says when the warm-up is over."""
        warming = in_warmup(self.env_steps, self.args.critic_warmup_steps)
        if self.warming and not warming:
            self.say(f"critic warm-up over at {self.env_steps} env steps: the policy trains from update {self.updates + 1}")
        self.warming = warming
        params = [p for ps in self.pieces.value_params.values() for p in ps]
        with trainable_only(self.pieces.modules.values(), params, active=warming):
            yield warming

    def publish(self) -> int:
        """Publish the updated weights to the actors (from their next unroll); returns the new version."""
        return self.weights.publish(self.pieces.published.state_dict())

    def end_update(self, trained_steps: int, update_s: float, lag: float, version: int) -> None:
        """Count an update of ``trained_steps`` env steps that took ``update_s`` seconds (collation, loss, backward
        and optimiser step; ``charts/learner_SPS`` divides by it) with policy lag ``lag`` (updates); log the charts,
        print the progress line every ``--print-interval-s`` seconds and checkpoint every
        ``--checkpoint-interval`` updates."""
        a, w, step = self.args, self.writer, self.env_steps
        self.update_time += update_s
        self.session_trained_steps += trained_steps
        self.updates += 1
        self.trained_steps += trained_steps
        elapsed = time.monotonic() - self.start_time
        win_rate, mean_ret = self.win_rate(), self.mean_return()
        env_sps = env_rate(self.env_steps - self.steps_at_first, self.last_unroll - self.first_unroll)
        # this session's steps over this session's update time: a resumed run's total over the session's time
        # read 1,038,630 on its first line
        learner_sps = self.session_trained_steps / max(self.update_time, 1e-9)
        w.add_scalar("charts/win_rate_window", win_rate, step)
        w.add_scalar("charts/return_window", mean_ret, step)
        if env_sps is not None:
            w.add_scalar("charts/env_SPS", env_sps, step)
        w.add_scalar("charts/learner_SPS", learner_sps, step)
        w.add_scalar("charts/queue_depth", self.pool.depth(), step)
        w.add_scalar("charts/policy_lag_batch", lag, step)
        w.add_scalar("charts/policy_version", version, step)
        w.add_scalar("charts/actor_restarts", self.supervisor.restarts, step)
        w.add_scalar("charts/episodes_in_window", len(self.window), step)  # <= --win-window, not a total
        w.add_scalar("charts/critic_warmup", float(self.warming), step)  # 1: only the value baseline trained
        if time.monotonic() - self.last_print > a.print_interval_s:
            self.last_print = time.monotonic()
            self.say(
                f"update {self.updates} | env steps {self.env_steps} | env SPS "
                f"{'n/a' if env_sps is None else f'{env_sps:.0f}'} | "
                f"learner SPS {learner_sps:.0f} | win rate {win_rate:.2f} return {mean_ret:.2f} (last {len(self.window)} "
                f"episodes) | queue {self.pool.depth()} | lag {lag:.1f} | restarts {self.supervisor.restarts} | "
                f"{elapsed:.0f} s"
                + (" | critic warm-up" if self.warming else "")
                + (
                    f" | games from saves won {np.mean([e[2] for e in self.saved_start_window]):.2f} (last "
                    f"{len(self.saved_start_window)})"
                    if self.saved_start_window
                    else ""
                )
            )
        if a.save_model and self.updates % a.checkpoint_interval == 0:
            self.checkpoint()

    def win_rate(self) -> float:
        """The rolling train win rate over :attr:`window` (NaN while no episode has ended)."""
        return float(np.mean([e[2] for e in self.window])) if self.window else float("nan")

    def mean_return(self) -> float:
        """The mean return over :attr:`window` (NaN while no episode has ended)."""
        return float(np.mean([e[0] for e in self.window])) if self.window else float("nan")

    def checkpoint(self) -> None:
        """Write ``<exp_name>.pt`` (last), ``<exp_name>_best.pt`` (when the rolling train win rate is at least
        the best so far; the latest among ties), with ``keep_checkpoints`` ``<exp_name>_step<env steps>.pt``,
        and ``resume.pt``, at an update boundary."""
        a = self.args
        self.pieces.save(self.run_dir / f"{a.exp_name}.pt", self.env_steps)  # written atomically
        if a.keep_checkpoints:  # a snapshot to choose from later by a held-out evaluation
            self.pieces.save(self.run_dir / f"{a.exp_name}_step{self.env_steps}.pt", self.env_steps)
        wr = float(np.mean([e[2] for e in self.window])) if self.window else None
        if wr is not None and (self.best is None or wr >= self.best):
            self.best = wr
            self.pieces.save(self.run_dir / f"{a.exp_name}_best.pt", self.env_steps)
        save_resume(
            self.run_dir / RESUME_FILE,
            {
                "args": asdict(a),
                "lineage": self.pieces.lineage,
                "global_step": self.env_steps,
                "updates": self.updates,
                "trained_steps": self.trained_steps,
                "elapsed_s": self.elapsed_before + time.monotonic() - self.start_time,
                "best": self.best,
                "window": [list(e) for e in self.window],
                **{key: module.state_dict() for key, module in self.pieces.modules.items()},
                "optimizer": self.optimizer.state_dict(),
                "rng": rng_state(),
            },
        )

    def finish(self) -> None:
        """The end-of-run line, and with ``--save-model`` the last checkpoints and where they are."""
        a = self.args
        self.say(
            f"done: {self.updates} updates, {self.env_steps} env steps in {time.monotonic() - self.start_time:.0f} s; "
            f"win rate {self.win_rate():.2f} over the last {len(self.window)} episodes; run folder {self.run_dir}"
        )
        if a.save_model:
            self.checkpoint()
            finished = self.env_steps >= a.total_timesteps
            self.say(saved_models_text(self.run_dir, a.exp_name) + "; " + resume_hint(self.run_dir, finished, self.env_steps))

    def close(self) -> None:
        """Restore the signal handlers, stop every actor (``actor_events.json`` lists each death and stall),
        close TensorBoard and the event log."""
        self.stop.restore()
        self.pool.close()
        self.say("all actors stopped")
        (self.run_dir / "actor_events.json").write_text(json.dumps(self.supervisor.events, indent=1))
        if self.writer is not None:
            self.writer.close()
        self.log_file.close()
