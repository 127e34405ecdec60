# The IMPALA / AlphaStar actor-learner (Espeholt et al. 2018; Vinyals et al. 2019): actors send unrolls, not gradients;
# the learner corrects for their older policies with per-head V-trace and trains with UPGO, TD(lambda), teacher KL and
# entropy. The name is that of the reference it replaced, liuruoze/mini-AlphaStar's "A3C" RL loop (scripts, docs and
# checkpoints use it), though no actor computes a gradient as A3C's do. The loss: `learner_loss` below (SMAC) and
# models/alphastar_rl.py `alphastar_offpolicy_loss` (full game); their V-trace / UPGO / TD(lambda) targets:
# models/offpolicy_losses.py.
"""Train an IMPALA-style actor-learner (V-trace off-policy correction) on a SMAC map of the embedded simulator,
or (``--map Simple64``) mini-AlphaStar's ``AlphaStarPolicy`` on the full game against the built-in bot from a
supervised checkpoint.

    python algos/a3c_upgo.py --map 3m --num-actors 2 --time-budget-s 300
    python algos/a3c_upgo.py --map 2s3z --teacher runs/bc/bc.pt --kl-coef 0.02 --restart-actors
    python algos/a3c_upgo.py --map Simple64 --init runs/bc/bc.pt --teacher runs/bc/bc.pt --kl-coef 0.02 --gamma 1

The SMAC and full-game paths differ only in their ``LearnerPieces`` (actor target, collation, loss,
checkpoint): ``smac_pieces`` here (``run_actor``, ``collate``, ``learner_loss``), ``fullgame_pieces`` from
``sc2_envs.training.learner_models`` (``sc2_envs.training.fullgame_rl`` and ``models.alphastar_rl``: per-head
V-trace, UPGO and teacher KL over AlphaStar's action arguments).

Processes: the learner (this process) owns the optimizer; ``--num-actors`` actors (``spawn``ed processes, or
Ray actors with ``--backend ray``) each own a batch of envs, act with the latest published policy and send
unrolls of ``--unroll-length`` env steps. Each actor writes its own log ``runs/<run>/actor_<slot>_gen<g>.log``,
heartbeats, and is reported within seconds when it dies or stalls (stack dump from ``faulthandler`` on
SIGUSR1); ``--restart-actors`` replaces it. The run's bookkeeping (actor pool, event log, TensorBoard,
checkpoints, resume, signals) is ``sc2_envs.training.async_learner``; the flag checks ``async_learner_checks``.
Docs: docs/a3c_upgo.md.

Each run gets a new folder ``<run_dir>/<map>__<exp_name>__<seed>__<unix time>`` (``-2``, ``-3``, ...
if taken) with ``run_meta.json`` (config, git commit, package versions; ``sc2_envs.training.run``). Every
``--checkpoint-interval`` updates and at the end the learner writes ``<exp_name>.pt`` (last),
``<exp_name>_best.pt`` (best rolling train win rate) and ``resume.pt`` (with ``--keep-checkpoints`` also
``<exp_name>_step<env steps>.pt`` each time). Ctrl-C (SIGINT) or SIGTERM
finishes the current update, writes them, stops the actors and exits with status 0 (a second signal
aborts at once); ``--resume <run folder>`` continues the run there: weights, optimiser, learner RNG,
counters and the rolling window are restored, and the actors of resumption ``s`` draw their envs
from ``actor_seed(seed, slot, gen, s)`` (seed splitting with ``s`` in the spawn key), so no battle
stream of an earlier session is replayed. (Actors are asynchronous: unrolls in flight at the stop are
dropped, and a resumed run is not bit-identical to an uninterrupted one.)

Reproducibility: ``--seed`` fixes the initial weights, the learner's RNG and every actor's env stream
(``actor_seed``), and is recorded in ``run_meta.json`` and printed first; it does not make a run
repeatable. Which published weights each unroll is played with, and the order in which the learner
takes the actors' unrolls, depend on process timing, so two runs with the same command and seed give
different numbers (unlike ``happo_gnn.py`` / ``hatrpo_gnn.py``, whose runs repeat bit for bit).
"""

from __future__ import annotations

import os

# Idle OpenMP threads spin ~10 us, not libgomp's ~3 ms, before they sleep: long spins starve the working
# thread on shared cores (sc2_envs.training.wait_policy). Set before torch loads OpenMP; your own setting wins.
if not (os.environ.get("OMP_WAIT_POLICY") or os.environ.get("GOMP_SPINCOUNT")):
    os.environ["GOMP_SPINCOUNT"] = "1000"

import functools
import importlib
import random
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal

import numpy as np
import torch
from torch import nn

from models import ClassPolicy, MaskedCategorical
from models.offpolicy_losses import masked_kl, masked_mean, td_lambda_returns, upgo_returns, vtrace
from sc2_envs.smac_actions import alive_mask
from sc2_envs.training import allocator
from sc2_envs.training.async_learner import (
    ACTOR_SPAWN_KEY,  # noqa: F401 - public name of this script (tests, docs)
    LEARNER_LOG,
    RESUME_CHANGEABLE,  # noqa: F401 - the flags --resume may change (Args.resume)
    AsyncLearnerRun,
    EpisodeStats,
    LearnerPieces,
    actor_progress,
    actor_seed,
    exit_process,
    print_configuration,
    start_learner_run,
)
from sc2_envs.training.async_learner_checks import check_async_learner_args as check_args  # noqa: F401 - tests
from sc2_envs.training.async_learner_checks import is_full_game
from sc2_envs.training.checkpoints import save_checkpoint
from sc2_envs.training.cli import cli_error, flowing_help, given_fields, refuse_computed_flags
from sc2_envs.training.learner_models import fullgame_pieces, smac_models
from sc2_envs.training.run import discard_unstarted_run

ALGORITHM = os.path.basename(__file__)[: -len(".py")]  # recorded in every checkpoint (models.save_checkpoint)
SCRIPT = f"{ALGORITHM}.py"  # a resume file names the script that wrote it


@dataclass
class Args:
    exp_name: str = ALGORITHM
    """the name of this experiment"""
    seed: int = 1
    """seed of the experiment (actor `slot` of generation `g` draws from SeedSequence(seed, spawn_key=(ACTOR_SPAWN_KEY, slot,
    g)), plus the session number after a resume; see `actor_seed`). Not reproducible: the actors are asynchronous, so two runs
    with the same seed differ (which weights play each unroll and the order of unrolls depend on timing)"""
    torch_deterministic: bool = True
    """if toggled, sets `torch.backends.cudnn.deterministic=True` (the learner's cuDNN kernels; the run as a whole
    still does not repeat, see --seed)"""
    cuda: bool = True
    """if toggled, the learner uses cuda when available (actors always act on CPU)"""
    save_model: bool = True
    """whether to save <exp_name>.pt (last), <exp_name>_best.pt and resume.pt every --checkpoint-interval updates
    and at the end"""
    checkpoint_interval: int = 100
    """learner updates between checkpoints"""
    keep_checkpoints: bool = False
    """also keep every checkpoint as <exp_name>_step<env steps>.pt (a checkpoint at a step already kept, e.g. the
    end of a run that stopped on an interval, rewrites that file), to choose one afterwards by an evaluation on
    seeds kept for that (eval_fullgame.py, eval_transfer.py)"""
    run_dir: str = "runs"
    """folder of the run folders (TensorBoard events, actor logs, checkpoint)"""
    resume: str = ""
    """a run folder (or its resume.pt) to continue, in the same folder; only --total-timesteps, --time-budget-s
    and the actor / fault-handling flags may change (async_learner.RESUME_CHANGEABLE)"""

    # Environment and topology
    map: str = "3m"
    """the SMAC map (sc2_envs.list_maps()), or `Simple64`: AlphaStarPolicy on the full game (FullGame-v0) against
    the very_easy bot, from an SL checkpoint (--init; docs/a3c_upgo.md)"""
    env_backend: str = "sim"
    """`sim` (embedded batched simulator; for Simple64 the lite engine) or `sc2` (real StarCraft II; a SMAC map
    needs envs_per_actor 1)"""
    step_mul: int = 0
    """full game only: game loops per env step; 0: the step_mul the --init checkpoint was trained at (a BC
    checkpoint records its replay dataset's stride), else 8 (mini-AlphaStar's)"""
    game_steps_per_episode: int = 18000
    """full game only: the game's limit in game loops, after which a game is truncated (mini-AlphaStar's evaluation:
    18,000; 0: none); the training games' too, unless --train-game-loops is set"""
    train_game_loops: int = 0
    """full game only: game loops after which a training game is truncated (the value bootstraps its return), at most
    --game-steps-per-episode; 0: --game-steps-per-episode. This script evaluates nothing: eval_fullgame.py keeps 18,000"""
    discount_zero_after_timeout: bool = False
    """full game only: a training game that reaches its loop limit ends as a tie worth 0 (terminated, not a
    truncation the value bootstraps), so the objective is to win within the limit (pysc2's SC2Env option)"""
    saved_start_share: float = 0.0
    """full game on the lite engine only: the share of new training games that start from a saved training game
    instead of loop 0: games saved at --save-loop (which ones: --saved-start-games; UnrollCollector); 0: none"""
    save_loop: int = 10752
    """full game only: the game loop at which training games are saved for --saved-start-share (10,752: 8 real (Faster)
    minutes of 1,344 loops; the shipped RL checkpoint's won games end at about 7.3)"""
    saved_start_games: Literal["failed", "running"] = "failed"
    """full game only: which training games saved at --save-loop --saved-start-share draws from: `failed` (those that
    then ended without a win) or `running` (every game still running there, whatever followed)"""
    banked_minerals_cost: float = 0.0
    """full game only: a cost per env step for each 1,000 minerals held after it, subtracted from the game's reward (a
    pseudo-reward for spending; UnrollCollector; it weighs more at a smaller --step-mul); the win rate, charts/episodic_return
    and the progress line report the game's return, the losses/ value and return charts the trained one. 0: the game's
    reward"""
    max_entities: int = 512
    """full game only: the env's entity rows (the model reads its first max_entities of them)"""
    env_factory: str = ""
    """`module:function` building each actor's batched env as f(map_name, num_envs, seed) instead of the backend
    (fault-injection tests, custom envs); seed is the actor's numpy SeedSequence (`actor_seed`)"""
    backend: str = "process"
    """where actors run: `process` (spawned subprocesses) or `ray` (Ray actors; local cluster unless --ray-address)"""
    ray_address: str = ""
    """address of an existing Ray cluster (`auto`, `ray://host:10001`); empty starts a local one"""
    ray_actor_cpus: float = 1.0
    """CPUs Ray reserves for each actor (placement across nodes follows them)"""
    num_actors: int = 2
    """the number of actor processes"""
    envs_per_actor: int = 16
    """batched envs in each actor (B; on the full game, games played at once)"""
    unroll_length: int = 16
    """env steps per unroll sent by an actor (T; our choice, not tuned: IMPALA unrolls 20 on Atari and 100 on
    DMLab)"""
    batch_unrolls: int = 2
    """unrolls per learner update (batch = batch_unrolls * envs_per_actor * unroll_length env steps)"""
    queue_size: int = 8
    """bound of the learner's unroll queue; actors block (back-pressure) when it is full"""
    total_timesteps: int = 1_000_000
    """stop after the learner has received this many env steps, summed over every actor's envs (CleanRL's
    global_step)"""
    time_budget_s: float = 0.0
    """also stop after this many wall-clock seconds (0: no limit)"""

    # Algorithm specific arguments
    actor: str = "gnn"
    """SMAC: `gnn` (count-invariant attention actor per unit class) or `mlp` (baseline); with --init the checkpoint
    decides (given with it: refused)"""
    hidden: int = 64
    """SMAC: width of the networks (pymarl's `rnn_hidden_dim: 64`); with --init the checkpoint decides (given with
    it: refused)"""
    actor_layers: int = 1
    """SMAC: attention blocks in each GNN actor; with --init the checkpoint decides (given with it: refused)"""
    learning_rate: float = 5e-4
    """Adam learning rate of the policy and the critic (pymarl's default.yaml `lr: 0.0005`, SMAC's baselines')"""
    anneal_lr: bool = False
    """decay the learning rate linearly from --learning-rate to 0 at --total-timesteps env steps (CleanRL's ppo.py;
    IMPALA decays it linearly too); a resumed run follows its new --total-timesteps"""
    gamma: float = 0.99
    """the discount factor gamma (per env step); the default is the SMAC maps', the full game wants 1 (AlphaStar's)
    or close to it (docs/a3c_upgo.md)"""
    vtrace_lambda: float = 1.0
    """lambda of the V-trace traces c (IMPALA: 1; mini-AlphaStar: 0.8)"""
    td_lambda: float = 0.8
    """lambda of the TD(lambda) value target (AlphaStar: 0.8)"""
    rho_bar: float = 1.0
    """clip of the per-head importance ratios rho in V-trace and UPGO"""
    c_bar: float = 1.0
    """clip of the per-head trace ratios c in V-trace"""
    pg_coef: float = 1.0
    """coefficient of the V-trace policy-gradient loss"""
    upgo_coef: float = 1.0
    """coefficient of the UPGO policy-gradient loss"""
    vf_coef: float = 1.0
    """coefficient of the TD(lambda) value loss, 0.5 * squared error (SMAC: of values normalised by the critic's
    value_norm; full game: of the win/loss baseline, unnormalised)"""
    ent_coef: float = 0.01
    """coefficient of the entropy bonus (SMAC: over available actions, mean over alive agents; full game: summed over
    the heads the chosen action type uses, mean over valid steps)"""
    kl_coef: float = 0.0
    """coefficient of KL(teacher || student) over available actions (full game: summed over the used heads);
    > 0 requires --teacher, and --teacher requires > 0"""
    teacher: str = ""
    """path of the teacher checkpoint: on a SMAC map a BC or HAPPO checkpoint (models.save_checkpoint format), on
    the full game an AlphaStarPolicy checkpoint (models.alphastar.save_alphastar: bc_reweight.py); never guessed;
    needs --kl-coef > 0 (with 0 the teacher would have no effect, so a new run refuses it)"""
    init: str = ""
    """path of a checkpoint initialising the student (policy, and the critic if it has one); required on the
    full game (an AlphaStarPolicy SL checkpoint)"""
    max_grad_norm: float = 10.0
    """the maximum norm for the gradient clipping (pymarl's default.yaml `grad_norm_clip: 10`)"""
    critic_warmup_steps: int = 0
    """for the first this many env steps only the value baseline trains (the policy's parameters are frozen, so the
    actors keep playing the --init policy); 0: none (sc2_envs.training.critic_warmup)"""

    # Fault handling
    restart_actors: bool = False
    """replace a dead or stalled actor (otherwise the run stops with an error)"""
    max_restarts: int = 20
    """stop with an error after this many actor restarts in total (a crash loop)"""
    heartbeat_interval: float = 0.5
    """seconds between heartbeats of an actor's heartbeat thread"""
    heartbeat_timeout: float = 10.0
    """an actor whose heartbeat thread is silent this long (seconds) is frozen"""
    stall_timeout: float = 120.0
    """an actor that made no env step for this long (seconds) is stalled (not counted while it waits for the learner)"""
    startup_timeout: float = 180.0
    """seconds an actor may take to start (interpreter, imports, env and first step)"""

    # Processes and logging
    torch_threads: int = 1
    """torch CPU threads in the learner and in each actor (0: torch's default)"""
    win_window: int = 100
    """episodes in the rolling train win-rate window"""
    print_interval_s: float = 10.0
    """seconds between progress lines"""

    # to be filled in runtime
    session: int = 0
    """computed at runtime, do not set (refused): resumptions of this run so far (set by --resume; offsets the actors' env
    seeds)"""


# ------------------------------------------------------------------------------------------------
# envs (used by actors and the learner)


def make_actor_env(args: Args, num_envs: int, seed: int | np.random.SeedSequence):
    """The batched env of one actor: ``--env-factory``, the simulator, or SMAC on real StarCraft II."""
    if args.env_factory:
        module, _, name = args.env_factory.partition(":")
        return getattr(importlib.import_module(module), name)(args.map, num_envs, seed)
    if args.env_backend == "sim":
        import sc2_envs

        # the actor's thread count (--torch-threads), not the simulator's automatic one
        return sc2_envs.make_batched(
            args.map, num_envs=num_envs, seed=seed, autoreset=True, num_threads=torch.get_num_threads()
        )
    from sc2_envs.backends import make_sc2_backend

    return make_sc2_backend(args.map, seed=seed, autoreset=True)


# ------------------------------------------------------------------------------------------------
# actor side


UNROLL_STEP_KEYS = (
    "obs",
    "state",
    "avail_actions",
    "actions",
    "behaviour_logp",
    "reward",
    "terminated",
    "truncated",
    "final_state",
)
"""The per-step arrays of a SMAC unroll, each ``[T, B, ...]`` (``run_actor``)."""


def run_actor(args: Args, cfg: dict, slot: int, gen: int, channel) -> None:
    """Act in ``args.envs_per_actor`` envs and send unrolls until ``channel.stopped()``.

    The target of the actor pool (``functools.partial(run_actor, args, cfg)``); ``cfg`` is
    ``ClassPolicy.config()`` of the learner's policy. ``channel`` (an ``ActorChannel`` of
    ``sc2_envs.vector.actor_pool``) supplies ``beat_step()`` (an env step was made), ``send(unroll)``
    (blocks while the learner's queue is full), ``pull_weights(policy, version) -> version | None``
    and ``stopped()``.

    An unroll is a dict of NumPy arrays (T = unroll_length, B = envs_per_actor): ``obs [T,B,N,O]``,
    ``state [T,B,S]``, ``avail_actions [T,B,N,A]`` bool, ``actions [T,B,N]`` int64, ``behaviour_logp [T,B,N]``,
    ``reward, terminated, truncated [T,B]``, ``final_state [T,B,S]`` (the pre-reset state where the env
    ended), ``next_state [B,S]`` (bootstrap), plus ``episodes`` (list of (return, length, won)),
    ``version`` (policy version acted with), ``slot``, ``gen``, ``act_time_s`` (seconds spent stepping).
    """
    seed = actor_seed(args.seed, slot, gen, args.session)
    int_seed = int(seed.generate_state(1, np.uint64)[0])  # the actor's Python / NumPy / torch global seeds
    random.seed(int_seed)
    np.random.seed(seed.generate_state(2, np.uint32))
    torch.manual_seed(int_seed)
    allocator_line = allocator.keep_freed_memory()  # the learner checked the setting; each actor tunes its own allocator
    env = make_actor_env(args, args.envs_per_actor, seed)
    try:
        policy = ClassPolicy.from_config(cfg, env.get_env_info())
        version = channel.pull_weights(policy, -1)
        print(
            f"[actor {slot} gen {gen}] pid {os.getpid()}: {env.num_envs} envs of {args.map}, policy version {version}",
            flush=True,
        )
        print(f"[actor {slot} gen {gen}] {allocator_line}", flush=True)  # with ray, the remote machine's setting
        out = env.reset(seed=seed)
        stats = EpisodeStats(env.num_envs)
        sent = 0
        while not channel.stopped():
            new = channel.pull_weights(policy, version)
            if new is not None:
                version = new
            steps: dict[str, list] = {k: [] for k in UNROLL_STEP_KEYS}
            t0 = time.monotonic()
            for _ in range(args.unroll_length):
                if channel.stopped():
                    return
                with torch.no_grad():
                    actions, logp = policy.act(out["obs"], out["avail_actions"])
                steps["obs"].append(out["obs"])
                steps["state"].append(out["state"])
                steps["avail_actions"].append(out["avail_actions"])
                steps["actions"].append(actions.clone())  # an env may keep (and later edit) the tensor it was given
                steps["behaviour_logp"].append(logp)
                out = env.step(actions)
                channel.beat_step()
                for k in ("reward", "terminated", "truncated", "final_state"):
                    steps[k].append(out[k])
                stats.step(out["reward"], out["terminated"] | out["truncated"], out["battle_won"])
            unroll = {k: torch.stack(v).cpu().numpy() for k, v in steps.items()}
            unroll.update(
                next_state=out["state"].cpu().numpy(),
                episodes=stats.take(),
                version=version,
                slot=slot,
                gen=gen,
                act_time_s=time.monotonic() - t0,
            )
            channel.send(unroll)
            sent += 1
            actor_progress(slot, gen, sent, version)
    finally:
        if hasattr(env, "close"):
            env.close()


def collate(unrolls: list[dict], device: torch.device) -> dict:
    """Concatenate ``K`` unrolls of ``B`` envs each along the env axis; tensors on ``device``.

    Returns:
        The ``UNROLL_STEP_KEYS`` arrays as ``[T, K*B, ...]`` tensors (``learner_loss``'s batch) and
        ``next_state [K*B, S]``.
    """
    out = {k: torch.as_tensor(np.concatenate([u[k] for u in unrolls], axis=1), device=device) for k in UNROLL_STEP_KEYS}
    out["next_state"] = torch.as_tensor(np.concatenate([u["next_state"] for u in unrolls], axis=0), device=device)
    return out


def learner_loss(policy, critic, teacher, batch: dict, args: Args) -> tuple[torch.Tensor, dict]:
    """The total loss of one batch and its logged terms. Heads are the agents: each agent's action has its own
    importance ratio (the joint policy factorises over agents). Dead agents (``alive_mask``) are left out of every mean.

    Args:
        policy: the student ``ClassPolicy`` (trained). critic: its ``CentralCritic`` with ``value_norm``
            (trained; its running statistics are updated here). teacher: the frozen ``ClassPolicy`` of the KL, or None.
        batch: ``collate``'s dict over ``B`` envs: ``obs [T,B,N,O]``, ``state [T,B,S]`` float, ``avail_actions [T,B,N,A]``
            bool, ``actions [T,B,N]`` int64, ``behaviour_logp [T,B,N]``, ``reward [T,B]`` float, ``terminated``,
            ``truncated [T,B]`` bool, ``final_state [T,B,S]``, ``next_state [B,S]`` float.
        args: ``gamma``, ``rho_bar``, ``c_bar``, ``vtrace_lambda``, ``td_lambda`` and the loss coefficients.

    Returns:
        ``(loss, logs)``: the total loss (0-d, with its graph) and the logged terms by TensorBoard tag
        (``losses/*``; with a teacher also ``kl_per_agent/agent_<i>`` and ``kl_per_class/<class>``).
    """
    obs, avail_actions, actions = batch["obs"], batch["avail_actions"], batch["actions"]
    rewards, terminated, truncated = batch["reward"], batch["terminated"], batch["truncated"]
    T, B, N, O = obs.shape
    S = batch["state"].shape[-1]
    normalized_values = critic(batch["state"].reshape(T * B, S)).reshape(T, B)
    with torch.no_grad():
        values = critic.value_norm.denormalize(normalized_values)
        bootstrap_value = critic.value_norm.denormalize(critic(batch["next_state"]))
        final_values = torch.zeros_like(values)
        cut = truncated & ~terminated  # episodes cut at the limit: bootstrap from V(final state)
        if bool(cut.any()):
            final_values[cut] = critic.value_norm.denormalize(critic(batch["final_state"][cut]))
    logits = policy.logits(obs.reshape(T * B, N, O))
    flat_avail = avail_actions.reshape(T * B, N, -1)
    dist = MaskedCategorical(logits, flat_avail)
    logp = dist.log_prob(actions.reshape(T * B, N)).reshape(T, B, N)
    alive = alive_mask(avail_actions).float()
    log_rhos = logp.detach() - batch["behaviour_logp"]
    # the inputs every target shares, by models.offpolicy_losses' names
    shared = dict(rewards=rewards, values=values, bootstrap_value=bootstrap_value, terminated=terminated)
    shared.update(truncated=truncated, final_values=final_values, gamma=args.gamma)
    # log_rhos [T, B, H], H = N agents. Only V-trace's policy-gradient advantages and clipped ratios are used: the
    # value target is TD(lambda), AlphaStar's (Vinyals et al. 2019, supplementary: "the baseline is trained with
    # TD(lambda)"), not V-trace's vs.
    vtrace_returns = vtrace(log_rhos=log_rhos, **shared, rho_bar=args.rho_bar, c_bar=args.c_bar, lambda_=args.vtrace_lambda)
    pg_loss = -masked_mean(logp * vtrace_returns.pg_advantages, alive)
    upgo_return = upgo_returns(**shared)
    upgo_adv = vtrace_returns.clipped_rhos * (upgo_return - values).unsqueeze(-1)
    upgo_loss = -masked_mean(logp * upgo_adv, alive)
    td_return = td_lambda_returns(**shared, lambda_=args.td_lambda)
    # MAPPO / HARL order: update the running statistics with this batch's targets, then normalise them
    # (HARL harl/algorithms/critics/v_critic.py, cal_value_loss); here because only the SMAC loss has a normaliser.
    critic.value_norm.update(td_return)
    v_loss = 0.5 * ((critic.value_norm.normalize(td_return) - normalized_values) ** 2).mean()
    entropy = masked_mean(dist.entropy().reshape(T, B, N), alive)
    loss = args.pg_coef * pg_loss + args.upgo_coef * upgo_loss + args.vf_coef * v_loss - args.ent_coef * entropy
    logs = {
        "losses/policy_loss": pg_loss,
        "losses/upgo_loss": upgo_loss,
        "losses/value_loss": v_loss,
        "losses/entropy": entropy,
        "losses/clipped_rho_mean": masked_mean(vtrace_returns.clipped_rhos, alive),
        "losses/rho_clipfrac": masked_mean((log_rhos.exp() > args.rho_bar).float(), alive),
        "losses/upgo_advantage": masked_mean(upgo_adv, alive),
        "losses/vtrace_advantage": masked_mean(vtrace_returns.pg_advantages, alive),
        "losses/value_mean": values.mean(),
        "losses/td_lambda_return_mean": td_return.mean(),
    }
    if teacher is not None:
        with torch.no_grad():
            teacher_logits = teacher.logits(obs.reshape(T * B, N, O))
        kl = masked_kl(teacher_logits, logits, flat_avail).reshape(T, B, N)
        kl_loss = masked_mean(kl, alive)
        loss = loss + args.kl_coef * kl_loss
        logs["losses/kl_teacher"] = kl_loss
        for i in range(N):
            logs[f"kl_per_agent/agent_{i}"] = masked_mean(kl[..., i], alive[..., i])
        for c in policy.class_agents:
            ids = policy.agent_ids(c)
            logs[f"kl_per_class/{c}"] = masked_mean(kl[..., ids], alive[..., ids])
    logs["losses/total_loss"] = loss
    return loss, logs


def smac_pieces(args: Args, device: torch.device, resumed: dict | None) -> LearnerPieces:
    """The SMAC learner: ``ClassPolicy`` actors (heads = agents), a central critic, ``learner_loss``."""
    import sc2_envs

    # Layouts of the real-SC2 backend equal the simulator's (docs/backends.md), so the sim gives env_info for both.
    probe = sc2_envs.make_batched(args.map, num_envs=1) if not args.env_factory else make_actor_env(args, 1, args.seed)
    env_info = probe.get_env_info()
    policy, critic, teacher, lineage = smac_models(args, env_info, device, resumed)

    def save(path: Path, env_steps: int) -> None:
        extra = {"lineage": lineage} if lineage else None
        save_checkpoint(str(path), policy, critic, env_info, asdict(args), env_steps, extra=extra, algorithm=ALGORITHM)

    return LearnerPieces(
        modules={"actors": policy, "critic": critic},
        published=policy,
        target=functools.partial(run_actor, args, policy.config()),
        collate=collate,
        loss=lambda batch: learner_loss(policy, critic, teacher, batch, args),
        save=save,
        lineage=lineage,
        value_params={"critic": list(critic.parameters())},
        summary=(
            f"{args.map}: {env_info['n_agents']} agents, obs {env_info['obs_shape']}, state {env_info['state_shape']}, "
            f"{env_info['n_actions']} actions, episode limit {env_info['episode_limit']} env steps"
        ),
    )


def main(args: Args, given: frozenset[str] | None = None) -> int:
    """Train (or continue, ``--resume``); returns the exit status. ``given``: the flags the command line set
    (``given_fields``; None: those that differ from their defaults), which ``--resume`` applies or checks."""
    # --resume (RESUME_CHANGEABLE), the flag checks, the learner's device and threads, the run folder
    args, resumed, run_dir, device, notes = start_learner_run(args, Args(), given, SCRIPT)
    # a run that fails before training starts leaves no run folder
    with discard_unstarted_run(run_dir, resumed is not None, LEARNER_LOG):
        return train(args, run_dir, resumed, device, notes)


def train(args: Args, run_dir: Path, resumed: dict | None, device: torch.device, notes: tuple[str, ...] = ()) -> int:
    """The learner: start the actors, update on their unrolls until a stop condition, checkpoint; returns the
    exit status (0; 1 when an actor failed without --restart-actors; 130 on KeyboardInterrupt). ``notes``: where
    derived settings come from (``start_learner_run``), printed with the configuration."""
    print_configuration(args, run_dir, notes)

    # seeding: the initial weights and the learner's RNG (the run does not repeat: the actors are asynchronous)
    random.seed(args.seed)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    torch.backends.cudnn.deterministic = args.torch_deterministic

    try:
        if is_full_game(args):
            pieces = fullgame_pieces(args, device, resumed, ALGORITHM)
        else:
            pieces = smac_pieces(args, device, resumed)
    except ValueError as e:  # a checkpoint that does not fit the map (load_checkpoint names the mismatch): bad input
        cli_error(str(e), SCRIPT)
    params = [p for m in pieces.modules.values() for p in m.parameters()]
    # The models are built (and bad checkpoints refused) before any actor starts; the actors start in run.start.
    with AsyncLearnerRun(args, run_dir, resumed, pieces) as run:  # on leaving: actors stopped, logs closed
        optimizer = torch.optim.Adam(params, lr=args.learning_rate, eps=1e-5)
        run.start(optimizer, f"{pieces.summary} | learner on {device}")  # on --resume: optimiser state, learner RNG
        unrolls: list[dict] = []
        while not run.should_stop():  # a signal, --total-timesteps or --time-budget-s
            received = run.receive()  # checks the actors, then waits up to 0.1 s for an unroll
            if received is None:
                continue
            unroll, env_steps = received
            run.env_steps += env_steps  # env steps received from the actors (CleanRL's global_step)
            run.record_unroll(unroll)  # its episodes, its actor's env rate and policy lag
            unrolls.append(unroll)
            if len(unrolls) < args.batch_unrolls:
                continue

            # ALGO LOGIC: one update on batch_unrolls unrolls, acted with (possibly older) published weights
            t0 = time.monotonic()
            lag = run.policy_lag(unrolls)
            batch = pieces.collate(unrolls, device)
            unrolls = []
            # SMAC: learner_loss; full game: models.alphastar_rl.alphastar_offpolicy_loss (FullGameLearner.loss);
            # in the first --critic-warmup-steps env steps only the value baseline gets a gradient
            with run.critic_warmup():
                loss, logs = pieces.loss(batch)
            if args.anneal_lr:  # by env steps received: the actors' clock, as --total-timesteps counts it
                frac = max(0.0, 1.0 - run.env_steps / args.total_timesteps)
                optimizer.param_groups[0]["lr"] = frac * args.learning_rate
            optimizer.zero_grad()
            loss.backward()
            grad_norm = nn.utils.clip_grad_norm_(params, args.max_grad_norm)
            optimizer.step()
            version = run.publish()  # the actors act with it from their next unroll

            # TRY NOT TO MODIFY: record the losses; counters, charts, progress line and checkpoints
            update_s = time.monotonic() - t0
            for k, v in logs.items():
                run.writer.add_scalar(k, float(v.detach()), run.env_steps)
            run.writer.add_scalar("losses/grad_norm", float(grad_norm), run.env_steps)
            run.writer.add_scalar("charts/learning_rate", optimizer.param_groups[0]["lr"], run.env_steps)
            run.end_update(int(batch["reward"].numel()), update_s, lag, version)
        run.finish()  # the end-of-run line and the last checkpoints
    return run.exit_status


if __name__ == "__main__":
    import tyro

    cli, given = tyro.cli(flowing_help(Args)), given_fields(Args)
    refuse_computed_flags(cli, ("session",), "the number of times the run was resumed", given)
    exit_process(main(cli, given))  # every process, file and writer is closed by now
