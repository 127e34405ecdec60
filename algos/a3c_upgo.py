# AlphaStar-style actor-learner (Vinyals et al. 2019; IMPALA, Espeholt et al. 2018) on SMAC maps and the full game:
# asynchronous actors, one learner, per-head V-trace, UPGO, TD(lambda), KL to a teacher, entropy.
# Facts and failure modes of the reference implementation: liuruoze/mini-AlphaStar's RL loop (see docs/a3c_upgo.md).
# Losses: models/offpolicy_losses.py. Docs: docs/a3c_upgo.md. Style: CleanRL.
"""Train an asynchronous actor-learner on a SMAC map of the embedded simulator, or (``--map Simple64``)
mini-AlphaStar's ``AlphaStarPolicy`` on the full game against the built-in bot from a supervised checkpoint.

    python algos/a3c_upgo.py --map 3m --num-actors 2 --time-budget-s 300
    python algos/a3c_upgo.py --map 2s3z --teacher runs/bc/bc.pt --kl-coef 0.02 --restart-actors
    python algos/a3c_upgo.py --map Simple64 --init runs/bc/bc.pt --teacher runs/bc/bc.pt --kl-coef 0.02 --gamma 1

The SMAC and full-game paths differ only in their ``LearnerPieces`` (actor target, collation, loss,
checkpoint): ``smac_pieces`` here, ``fullgame_pieces`` from ``sc2_envs.training.fullgame_rl`` and
``models.alphastar_rl`` (per-head V-trace, UPGO and teacher KL over AlphaStar's action arguments).

Processes: the learner (this process) owns the optimizer; ``--num-actors`` actors (``spawn``ed
processes, or Ray actors with ``--backend ray``) each own a batch of envs, act with the latest
published policy and send unrolls of ``--unroll-length`` env steps. Each actor writes its own log
``runs/<run>/actor_<slot>_gen<g>.log``, heartbeats, and is reported within seconds when it dies or
stalls (stack dump from ``faulthandler`` on SIGUSR1); ``--restart-actors`` replaces it.

Each run gets a new folder ``<run_dir>/<map>__<exp_name>__<seed>__<unix time>`` (``-2``, ``-3``, ...
if taken) with ``run_meta.json`` (config, git commit, package versions; ``sc2_envs.training.run``). Every
``--checkpoint-interval`` updates and at the end the learner writes ``<exp_name>.pt`` (last),
``<exp_name>_best.pt`` (best rolling train win rate) and ``resume.pt``. Ctrl-C (SIGINT) or SIGTERM
finishes the current update, writes them, stops the actors and exits with status 0 (a second signal
aborts at once); ``--resume <run folder>`` continues the run there: weights, optimiser, learner RNG,
counters and the rolling window are restored, and the actors of resumption ``s`` draw their envs
from ``actor_seed(seed, slot, gen, s)`` (seed splitting with ``s`` in the spawn key), so no battle
stream of an earlier session is replayed. (Actors are asynchronous: trajectories in flight at the stop are
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
import json
import multiprocessing as mp
import random
import sys
import time
from collections import deque
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
from torch import nn

from models import (
    ACTOR_TYPES,
    ClassPolicy,
    MaskedCategorical,
    build_critic,
    build_models,
)
from models.offpolicy_losses import masked_kl, masked_mean, td_lambda_returns, upgo_returns, vtrace
from sc2_envs.training import allocator
from sc2_envs.training.checkpoints import load_checkpoint, load_torch_file, save_checkpoint
from sc2_envs.training.cli import check_out_dir, cli_error, flowing_help, given_fields, refuse_computed_flags, resume_args
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
    starting_lineage,
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

ALGORITHM = os.path.basename(__file__)[: -len(".py")]  # recorded in every checkpoint (models.save_checkpoint)


@dataclass
class Args:
    exp_name: str = ALGORITHM
    """the name of this experiment"""
    seed: int = 1
    """seed of the experiment (actor `slot` of generation `g` draws from SeedSequence(seed, spawn_key=(ACTOR_SPAWN_KEY, slot, g)),
    plus the session number after a resume; see `actor_seed`). Not reproducible: the actors are asynchronous, so two runs
    with the same seed differ (which weights play each unroll and the order of unrolls depend on timing)"""
    torch_deterministic: bool = True
    """if toggled, sets `torch.backends.cudnn.deterministic=True`"""
    cuda: bool = True
    """if toggled, the learner uses cuda when available (actors always act on CPU)"""
    save_model: bool = True
    """whether to save <exp_name>.pt (last), <exp_name>_best.pt and resume.pt every --checkpoint-interval updates
    and at the end"""
    checkpoint_interval: int = 100
    """learner updates between checkpoints"""
    run_dir: str = "runs"
    """folder of the run folders (TensorBoard events, actor logs, checkpoint)"""
    resume: str = ""
    """a run folder (or its resume.pt) to continue, in the same folder; only --total-timesteps, --time-budget-s
    and the actor / fault-handling flags may change (RESUME_CHANGEABLE)"""

    # Environment and topology
    map: str = "3m"
    """the SMAC map (sc2_envs.list_maps()), or `Simple64`: AlphaStarPolicy on the full game (FullGame-v0) against
    the very_easy bot, from an SL checkpoint (--init; docs/a3c_upgo.md)"""
    env_backend: str = "sim"
    """`sim` (embedded batched simulator; for Simple64 the lite engine) or `sc2` (real StarCraft II; a SMAC map
    needs envs_per_actor 1)"""
    step_mul: int = 8
    """full game only: game loops per env step (mini-AlphaStar: 8)"""
    game_steps_per_episode: int = 18000
    """full game only: game loops after which a game is truncated (mini-AlphaStar's evaluation: 18,000; 0: none)"""
    max_entities: int = 512
    """full game only: the env's entity rows (the model reads its first max_entities of them)"""
    env_factory: str = ""
    """`module:function` building each actor's batched env as f(map_name, num_envs, seed) instead of the backend (fault-injection tests, custom envs); seed is the actor's numpy SeedSequence (`actor_seed`)"""
    backend: str = "process"
    """where actors run: `process` (spawned subprocesses) or `ray` (Ray actors; local cluster unless --ray-address)"""
    ray_address: str = ""
    """address of an existing Ray cluster (`auto`, `ray://host:10001`); empty starts a local one"""
    ray_actor_cpus: float = 1.0
    """CPUs Ray reserves for each actor (placement across nodes follows them)"""
    num_actors: int = 2
    """the number of actor processes"""
    envs_per_actor: int = 16
    """batched envs in each actor"""
    unroll_length: int = 16
    """env steps per trajectory sent by an actor (T)"""
    batch_unrolls: int = 2
    """trajectories per learner update (batch = batch_unrolls * envs_per_actor * unroll_length env steps)"""
    queue_size: int = 8
    """bound of the learner's trajectory queue; actors block (back-pressure) when it is full"""
    total_timesteps: int = 1_000_000
    """stop after the learner has received this many env steps"""
    time_budget_s: float = 0.0
    """also stop after this many wall-clock seconds (0: no limit)"""

    # Algorithm specific arguments
    actor: str = "gnn"
    """`gnn` (count-invariant attention actor per unit class) or `mlp` (baseline); ignored with --init"""
    hidden: int = 64
    """width of the networks (ignored with --init)"""
    actor_layers: int = 1
    """attention blocks in each GNN actor (ignored with --init)"""
    learning_rate: float = 5e-4
    """Adam learning rate of the policy and the critic"""
    gamma: float = 0.99
    """the discount factor gamma (per env step)"""
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
    """coefficient of the TD(lambda) value loss (0.5 * squared error of normalised values)"""
    ent_coef: float = 0.01
    """coefficient of the entropy bonus (over available actions, alive agents)"""
    kl_coef: float = 0.0
    """coefficient of KL(teacher || student) over available actions; > 0 requires --teacher, and --teacher requires > 0"""
    teacher: str = ""
    """path of the teacher checkpoint (a BC or HAPPO checkpoint, models.save_checkpoint format); never guessed;
    needs --kl-coef > 0 (with 0 the teacher would have no effect, so a new run refuses it)"""
    init: str = ""
    """path of a checkpoint initialising the student (policy, and the critic if it has one)"""
    max_grad_norm: float = 10.0
    """the maximum norm for the gradient clipping"""

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
    torch_threads: int = 1
    """torch CPU threads in the learner and in each actor (0: torch's default)"""
    win_window: int = 100
    """episodes in the rolling train win-rate window"""
    print_interval_s: float = 10.0
    """seconds between progress lines"""

    # to be filled in runtime
    session: int = 0
    """computed at runtime, do not set (refused): resumptions of this run so far (set by --resume; offsets the actors' env seeds)"""


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
        ValueError: ``seed``, ``slot`` or ``gen`` is not a non-negative int (the message names it).
    """
    for name, v in (("seed", seed), ("slot", slot), ("gen", gen), ("session", session)):
        if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < 0:
            raise ValueError(f"actor_seed: {name} must be a non-negative int, got {v!r}")
    key = (ACTOR_SPAWN_KEY, int(slot), int(gen)) + ((int(session),) if session else ())
    return np.random.SeedSequence(int(seed), spawn_key=key)


def pool_config(args: Args) -> ActorPoolConfig:
    """The actor pool's settings from the command line."""
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


def run_actor(args: Args, cfg: dict, slot: int, gen: int, channel) -> None:
    """Act in ``args.envs_per_actor`` envs and send unrolls until ``channel.stopped()``.

    The target of the actor pool (``functools.partial(run_actor, args, cfg)``); ``cfg`` is
    ``ClassPolicy.config()`` of the learner's policy. ``channel`` (an ``ActorChannel`` of
    ``sc2_envs.vector.actor_pool``) supplies ``beat_step()`` (an env step was made), ``send(traj)``
    (blocks while the learner's queue is full), ``pull_weights(policy, version) -> version | None``
    and ``stopped()``.

    A trajectory is a dict of NumPy arrays (T = unroll_length, B = envs_per_actor): ``obs [T,B,N,O]``,
    ``state [T,B,S]``, ``avail_actions [T,B,N,A]`` bool, ``actions [T,B,N]`` int64, ``logp [T,B,N]`` (behaviour),
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
        B, T = env.num_envs, args.unroll_length
        ep_ret = torch.zeros(B)
        ep_len = torch.zeros(B, dtype=torch.int64)
        n_unrolls = 0
        while not channel.stopped():
            new = channel.pull_weights(policy, version)
            if new is not None:
                version = new
            keys = ("obs", "state", "avail_actions", "actions", "logp", "reward", "terminated", "truncated", "final_state")
            buf: dict[str, list] = {k: [] for k in keys}
            episodes = []
            t0 = time.monotonic()
            for _ in range(T):
                if channel.stopped():
                    return
                with torch.no_grad():
                    actions, logp = policy.act(out["obs"], out["avail_actions"])
                buf["obs"].append(out["obs"])
                buf["state"].append(out["state"])
                buf["avail_actions"].append(out["avail_actions"])
                buf["actions"].append(actions.clone())  # an env may keep (and later edit) the tensor it was given
                buf["logp"].append(logp)
                out = env.step(actions)
                channel.beat_step()
                for k in ("reward", "terminated", "truncated", "final_state"):
                    buf[k].append(out[k])
                ep_ret += out["reward"]
                ep_len += 1
                done = out["terminated"] | out["truncated"]
                for b in torch.nonzero(done).flatten().tolist():
                    episodes.append((float(ep_ret[b]), int(ep_len[b]), bool(out["battle_won"][b])))
                ep_ret = torch.where(done, 0.0, ep_ret)
                ep_len = torch.where(done, 0, ep_len)
            traj = {k: torch.stack(v).cpu().numpy() for k, v in buf.items()}
            traj.update(
                next_state=out["state"].cpu().numpy(),
                episodes=episodes,
                version=version,
                slot=slot,
                gen=gen,
                act_time_s=time.monotonic() - t0,
            )
            channel.send(traj)
            n_unrolls += 1
            if n_unrolls % 50 == 0:
                print(f"[actor {slot} gen {gen}] {n_unrolls} unrolls, policy version {version}", flush=True)
    finally:
        if hasattr(env, "close"):
            env.close()


def collate(trajs: list[dict], device: torch.device) -> dict:
    """Concatenate trajectories along the env axis B; tensors on ``device``."""
    out = {}
    for k in ("obs", "state", "avail_actions", "actions", "logp", "reward", "terminated", "truncated", "final_state"):
        out[k] = torch.as_tensor(np.concatenate([t[k] for t in trajs], axis=1), device=device)
    out["next_state"] = torch.as_tensor(np.concatenate([t["next_state"] for t in trajs], axis=0), device=device)
    return out


def learner_loss(policy, critic, teacher, batch: dict, args: Args) -> tuple[torch.Tensor, dict]:
    """The total loss of one batch and its logged terms.

    Heads are the agents: each agent's action has its own importance ratio. Dead agents (only
    the no-op available, SMAC) have log-prob 0 and are left out of every mean.
    """
    obs, avail_actions, actions = batch["obs"], batch["avail_actions"], batch["actions"]
    T, B, N, O = obs.shape
    S = batch["state"].shape[-1]
    values_n = critic(batch["state"].reshape(T * B, S)).reshape(T, B)
    with torch.no_grad():
        values = critic.value_norm.denormalize(values_n)
        boot = critic.value_norm.denormalize(critic(batch["next_state"]))
        final_values = torch.zeros_like(values)
        trunc = batch["truncated"] & ~batch["terminated"]
        if bool(trunc.any()):
            final_values[trunc] = critic.value_norm.denormalize(critic(batch["final_state"][trunc]))
    logits = policy.logits(obs.reshape(T * B, N, O))
    flat_avail = avail_actions.reshape(T * B, N, -1)
    dist = MaskedCategorical(logits, flat_avail)
    logp = dist.log_prob(actions.reshape(T * B, N)).reshape(T, B, N)
    alive = (~avail_actions[..., 0]).float()
    log_rhos = logp.detach() - batch["logp"]
    r, term, trn = batch["reward"], batch["terminated"], batch["truncated"]
    vt = vtrace(log_rhos, r, values, boot, term, trn, final_values, args.gamma, args.rho_bar, args.c_bar, args.vtrace_lambda)
    pg_loss = -masked_mean(logp * vt.pg_advantages, alive)
    g_upgo = upgo_returns(r, values, boot, term, trn, final_values, args.gamma)
    upgo_adv = vt.clipped_rhos * (g_upgo - values).unsqueeze(-1)
    upgo_loss = -masked_mean(logp * upgo_adv, alive)
    g_td = td_lambda_returns(r, values, boot, term, trn, final_values, args.gamma, args.td_lambda)
    critic.value_norm.update(g_td)
    v_loss = 0.5 * ((critic.value_norm.normalize(g_td) - values_n) ** 2).mean()
    entropy = masked_mean(dist.entropy().reshape(T, B, N), alive)
    loss = args.pg_coef * pg_loss + args.upgo_coef * upgo_loss + args.vf_coef * v_loss - args.ent_coef * entropy
    logs = {
        "losses/policy_loss": pg_loss,
        "losses/upgo_loss": upgo_loss,
        "losses/value_loss": v_loss,
        "losses/entropy": entropy,
        "losses/rho_mean": masked_mean(vt.clipped_rhos, alive),
        "losses/rho_clipfrac": masked_mean((log_rhos.exp() > args.rho_bar).float(), alive),
        "losses/upgo_advantage": masked_mean(upgo_adv, alive),
        "losses/vtrace_advantage": masked_mean(vt.pg_advantages, alive),
        "losses/value_mean": values.mean(),
        "losses/td_lambda_return_mean": g_td.mean(),
    }
    if teacher is not None:
        with torch.no_grad():
            t_logits = teacher.logits(obs.reshape(T * B, N, O))
        kl = masked_kl(t_logits, logits, flat_avail).reshape(T, B, N)
        kl_loss = masked_mean(kl, alive)
        loss = loss + args.kl_coef * kl_loss
        logs["losses/kl_teacher"] = kl_loss
        for i in range(N):
            logs[f"kl_per_head/agent_{i}"] = masked_mean(kl[..., i], alive[..., i])
        for c in policy.class_agents:
            ids = policy.agent_ids(c)
            logs[f"kl_per_class/{c}"] = masked_mean(kl[..., ids], alive[..., ids])
    logs["losses/total_loss"] = loss
    return loss, logs


@dataclass
class LearnerPieces:
    """What the SMAC and the full-game learners do differently; ``_train`` runs either."""

    modules: dict[str, nn.Module]
    """the trained modules by their key in resume.pt (optimised in this order)"""
    published: nn.Module
    """the module whose weights the actors act with"""
    target: Callable
    """the actor pool's target ``(slot, gen, channel)``"""
    collate: Callable[[list[dict], torch.device], dict]
    loss: Callable[[dict], tuple[torch.Tensor, dict]]
    save: Callable[[Path, int], None]
    """write the model checkpoint ``(path, env_steps)`` atomically"""
    lineage: list
    summary: str


def smac_pieces(args: Args, device: torch.device, resumed: dict | None) -> LearnerPieces:
    """The SMAC learner: ``ClassPolicy`` actors (heads = agents), a central critic, ``learner_loss``."""
    import sc2_envs

    # Layouts of the real-SC2 backend equal the simulator's (docs/backends.md), so the sim gives env_info for both.
    probe = sc2_envs.make_batched(args.map, num_envs=1) if not args.env_factory else make_actor_env(args, 1, args.seed)
    env_info = probe.get_env_info()
    if args.init:
        policy, _, ckpt = load_checkpoint(args.init, env_info, device, with_critic=False)
        if "critic" in ckpt:
            _, critic, _ = load_checkpoint(args.init, env_info, device, with_critic=True)
        else:
            critic = build_critic(
                env_info,
                policy.actor_type,
                policy.hparams["hidden"],
                policy.hparams["heads"],
                policy.hparams["layers"],
                device=device,
            )
        print(f"student initialised from {args.init} (trained on {ckpt['config']['map_name']})")
    else:
        policy, critic = build_models(env_info, args.actor, hidden=args.hidden, actor_layers=args.actor_layers, device=device)
        ckpt = None
    lineage = starting_lineage(args.init, ckpt, resumed)  # saved in every checkpoint
    teacher = None
    if args.teacher:  # before the actors start: a teacher that does not fit the map is bad input, not an actor failure
        teacher, _, tck = load_checkpoint(args.teacher, env_info, device, with_critic=False)
        teacher.eval().requires_grad_(False)
        print(
            f"teacher {args.teacher} ({tck['config']['actor_type']}, trained on {tck['config']['map_name']}), "
            f"kl_coef {args.kl_coef}"
        )

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
        summary=(
            f"{args.map}: {env_info['n_agents']} agents, obs {env_info['obs_shape']}, state {env_info['state_shape']}, "
            f"{env_info['n_actions']} actions, episode limit {env_info['episode_limit']} env steps"
        ),
    )


FULL_GAME_MAPS = ("Simple64",)
"""``--map`` values that train ``AlphaStarPolicy`` on FullGame-v0 (``--env-backend sim``: the lite engine)."""


def is_full_game(args: Args) -> bool:
    """``--map`` names a full-game map (``FULL_GAME_MAPS``) rather than a SMAC one."""
    return args.map in FULL_GAME_MAPS


def fullgame_pieces(args: Args, device: torch.device, resumed: dict | None) -> LearnerPieces:
    """The full-game learner: ``AlphaStarPolicy`` from ``--init`` (an SL checkpoint), its win/loss
    baseline as the value, per-head V-trace / UPGO and the per-head KL to ``--teacher``
    (``sc2_envs.training.fullgame_rl``, ``models.alphastar_rl``)."""
    from models.alphastar import load_alphastar, save_alphastar
    from models.alphastar_rl import OffPolicySettings
    from sc2_envs.training.checkpoints import file_sha256
    from sc2_envs.training.fullgame_rl import FullGameActorSettings, FullGameLearner, collate_unrolls, run_fullgame_actor

    try:  # bad input, reported before the actors start
        model, _ = load_alphastar(args.init, device)
        teacher = load_alphastar(args.teacher, device)[0] if args.teacher else None
        settings = OffPolicySettings(**{k: getattr(args, k) for k in OffPolicySettings.__dataclass_fields__})
        learner = FullGameLearner(model, teacher, settings)  # checks that the teacher fits the student
    except ValueError as e:
        raise SystemExit(f"--map {args.map}: {e}") from None
    cfg = model.cfg
    if resumed is not None and resumed.get("lineage"):
        lineage = list(resumed["lineage"])
    else:
        lineage = [{"path": args.init, "resolved": str(Path(args.init).resolve()), "sha256": file_sha256(args.init)}]
    env_kwargs = {
        "step_mul": args.step_mul,
        "game_steps_per_episode": args.game_steps_per_episode,
        "max_entities": args.max_entities,
        "raw_resolution": cfg.raw_resolution,
        "minimap_resolution": cfg.minimap_size,
    }
    actor_settings = FullGameActorSettings(
        "lite" if args.env_backend == "sim" else "sc2", args.envs_per_actor, args.unroll_length, env_kwargs
    )
    seed_fn = functools.partial(actor_seed, args.seed, session=args.session)

    def save(path: Path, env_steps: int) -> None:
        extra = {"rl": {"algorithm": ALGORITHM, "args": asdict(args), "env_steps": env_steps}, "lineage": lineage}
        save_alphastar(str(path), model, extra)  # atomic, loadable with weights_only=True

    teacher_line = f", teacher {args.teacher} (kl_coef {args.kl_coef})" if teacher is not None else ""
    return LearnerPieces(
        modules={"actors": model},
        published=model,
        target=functools.partial(run_fullgame_actor, actor_settings, cfg.to_dict(), seed_fn),
        collate=collate_unrolls,
        loss=learner.loss,
        save=save,
        lineage=lineage,
        summary=(
            f"{args.map} (FullGame-v0, {actor_settings.backend}): AlphaStarPolicy from {args.init} "
            f"({sum(p.numel() for p in model.parameters()):,} parameters){teacher_line}"
        ),
    )


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


def env_rate(steps: int, seconds: float) -> float | None:
    """Env steps per second over a measured interval.

    Args:
        steps: env steps (summed over games) that arrived within the interval.
        seconds: the interval's length in wall-clock seconds.

    Returns:
        ``steps / seconds``, or None when nothing was measured yet (``seconds <= 0`` or ``steps <= 0``,
        e.g. at the update that the first trajectory completes), rather than a rate over a zero interval.
    """
    if seconds <= 0 or steps <= 0:
        return None
    return steps / seconds


def check_fullgame_env_flags(args: Args) -> None:
    """Refuse FullGame-v0 options that its envs would refuse in every actor (``FullGameEnv``, and for
    ``--env-backend sim`` the lite engine's ``sc2_envs.lite.env.MAX_SIZES``).

    Raises:
        SystemExit: status 2 (``cli_error``) for ``--step-mul`` below 1 game loop, ``--game-steps-per-episode``
            below 0 (0: no limit), or ``--max-entities`` below 1 or, on the lite engine, above its limit (65,536).
    """
    from sc2_envs.lite.env import MAX_SIZES

    if args.step_mul < 1:
        cli_error(f"--step-mul {args.step_mul}: expected game loops per env step >= 1 (8: half a normal-speed second)")
    if args.game_steps_per_episode < 0:
        cli_error(f"--game-steps-per-episode {args.game_steps_per_episode}: expected game loops >= 0 (0: no limit)")
    top = MAX_SIZES["max_entities"] if args.env_backend == "sim" else None
    if args.max_entities < 1 or (top is not None and args.max_entities > top):
        expected = f"an int in [1, {top}] (the lite engine's limit)" if top is not None else "an int >= 1"
        cli_error(f"--max-entities {args.max_entities}: expected entity rows per observation, {expected}")


def check_checkpoint_kinds(args: Args) -> None:
    """Read ``--init`` and ``--teacher`` (CPU, ``weights_only``) and refuse a file that is not a torch
    checkpoint, a checkpoint of the other kind of run (``models.alphastar`` for ``--map Simple64``,
    ``models.save_checkpoint`` for a SMAC map), or, for the full game, ``--max-entities`` below the entity
    rows the ``--init`` model was built for (``config.max_entities``).

    Raises:
        SystemExit: status 2 (``cli_error``), naming the flag, the path and what was expected.
    """
    from models.alphastar import CHECKPOINT_FORMAT as FULL_GAME_FORMAT

    for name in ("init", "teacher"):
        path = getattr(args, name)
        if not path:
            continue
        try:
            ckpt = load_torch_file(path)
        except (OSError, ValueError) as e:
            cli_error(f"--{name} {e}")
        found = ckpt.get("format") if isinstance(ckpt, dict) else type(ckpt).__name__
        if is_full_game(args) and found != FULL_GAME_FORMAT:
            cli_error(
                f"--{name} {path}: --map {args.map} trains AlphaStarPolicy and needs a full-game checkpoint "
                f"(format {FULL_GAME_FORMAT}, models.alphastar.save_alphastar: bc_reweight.py); this one is {found!r}"
            )
        if not is_full_game(args) and found == FULL_GAME_FORMAT:
            cli_error(
                f"--{name} {path} is a full-game (AlphaStarPolicy, {FULL_GAME_FORMAT}) checkpoint: train it with "
                f"--map {' or '.join(FULL_GAME_MAPS)} (FullGame-v0), not on the SMAC map {args.map}"
            )
        cfg = ckpt.get("config") if isinstance(ckpt, dict) else None
        if name == "init" and is_full_game(args) and isinstance(cfg, dict) and "max_entities" in cfg:
            rows = int(cfg["max_entities"])  # a config without it is refused when the model is built (load_alphastar)
            if args.max_entities < rows:
                cli_error(
                    f"--max-entities {args.max_entities} is below the {rows} entity rows of the --init model "
                    f"({path}, config.max_entities): it would see only the first {args.max_entities} units; "
                    f"give --max-entities {rows} or more"
                )


def check_args(args: Args) -> None:
    """Clear errors for bad or inconsistent options, before any process starts."""
    from sc2_envs import list_maps

    if is_full_game(args):
        if not args.init:
            raise SystemExit(f"--map {args.map} trains AlphaStarPolicy from a supervised checkpoint: give --init PATH")
        if args.env_factory:
            raise SystemExit(f"--env-factory builds SMAC envs; --map {args.map} plays FullGame-v0")
        check_fullgame_env_flags(args)
    elif not args.env_factory and args.map not in list_maps():
        raise SystemExit(f"--map {args.map!r}; expected one of {', '.join(list_maps() + list(FULL_GAME_MAPS))}")
    if args.kl_coef < 0:
        raise SystemExit(f"--kl-coef {args.kl_coef}; expected >= 0")
    if args.kl_coef > 0 and not args.teacher:
        raise SystemExit(
            f"--kl-coef {args.kl_coef} > 0 needs --teacher PATH (a BC or HAPPO checkpoint); "
            "the teacher is never guessed from a folder"
        )
    if args.teacher and args.kl_coef == 0:
        no_effect = f"--teacher {args.teacher!r} with --kl-coef 0: the teacher would have no effect (its KL is weighted by 0)"
        if not args.resume:
            raise SystemExit(f"{no_effect}; set --kl-coef > 0 (e.g. 0.02) or drop --teacher")
        # a run saved before this was refused: neither flag may change on --resume, so say it and go on
        print(f"note: {no_effect}; this run was started so, and a resumed run keeps both flags", flush=True)
    for name in ("teacher", "init"):
        path = getattr(args, name)
        if path and not Path(path).is_file():
            raise SystemExit(f"--{name} {path!r} is not a file; expected a checkpoint written by models.save_checkpoint")
    check_checkpoint_kinds(args)
    if args.backend not in ("process", "ray"):
        raise SystemExit(f"--backend {args.backend!r}; expected 'process' or 'ray'")
    if args.env_backend not in ("sim", "sc2"):
        raise SystemExit(f"--env-backend {args.env_backend!r}; expected 'sim' or 'sc2'")
    if args.env_backend == "sc2" and not args.env_factory:
        from sc2_envs.full_game.env import SC2NotFoundError, find_sc2_binary

        try:
            find_sc2_binary()
        except SC2NotFoundError as e:  # names SC2PATH and the install steps
            cli_error(f"--env-backend sc2: {e}")
        if args.envs_per_actor != 1 and not is_full_game(args):
            raise SystemExit(f"--env-backend sc2 runs one game per actor: use --envs-per-actor 1 (got {args.envs_per_actor})")
    if args.actor not in ACTOR_TYPES:
        raise SystemExit(f"--actor {args.actor!r}; expected one of {', '.join(ACTOR_TYPES)}")
    for name in (
        "num_actors",
        "envs_per_actor",
        "unroll_length",
        "batch_unrolls",
        "queue_size",
        "checkpoint_interval",
        "win_window",
    ):
        if getattr(args, name) < 1:
            raise SystemExit(f"--{name.replace('_', '-')} {getattr(args, name)}; expected >= 1")
    if not args.resume:  # a new run folder goes under --run-dir: a file in the way is a traceback from mkdir otherwise
        try:
            check_out_dir(args.run_dir, "--run-dir")
        except ValueError as e:
            raise SystemExit(str(e)) from None
    if args.heartbeat_timeout <= args.heartbeat_interval:
        raise SystemExit(
            f"--heartbeat-timeout {args.heartbeat_timeout} must exceed --heartbeat-interval {args.heartbeat_interval}"
        )


RESUME_CHANGEABLE = (
    "total_timesteps",
    "time_budget_s",
    "torch_threads",
    "cuda",
    "num_actors",
    "backend",
    "ray_address",
    "ray_actor_cpus",
    "queue_size",
    "restart_actors",
    "max_restarts",
    "heartbeat_interval",
    "heartbeat_timeout",
    "stall_timeout",
    "startup_timeout",
    "print_interval_s",
    "checkpoint_interval",
)
"""The flags a resumed run may change (``--resume``); every other flag keeps the run's saved value."""


def main(args: Args, given: frozenset[str] | None = None) -> int:
    """Train (or continue, ``--resume``); returns the exit status. ``given``: the flags the command line set
    (``given_fields``; None: those that differ from their defaults), which ``--resume`` applies or checks."""
    resumed = None
    if args.resume:  # continue a run: its saved Args, with the flags a continuation may change
        try:
            resumed, run_dir = load_resume(args.resume, script=os.path.basename(__file__))
            resume_from = args.resume
            args = resume_args(resumed["args"], args, Args(), RESUME_CHANGEABLE, given)
        except (OSError, ValueError) as e:
            cli_error(str(e))
        args.resume, args.session = resume_from, int(resumed["args"].get("session", 0)) + 1
    check_args(args)
    allocator_line = tune_allocator()
    device = "cuda" if torch.cuda.is_available() and args.cuda else "cpu"  # the learner's (_train)
    if resumed is None:  # a new folder, never an existing one
        run_dir = make_run_dir(args.run_dir, f"{args.map}__{args.exp_name}__{args.seed}__{int(time.time())}")
        write_run_meta(run_dir, args, run_name=run_dir.name, script=os.path.basename(__file__), device=device)
    else:
        note_resume(run_dir, from_global_step=resumed["global_step"], session=args.session, config=args, device=device)
    if args.torch_threads > 0:  # before wait_policy_line, which names the count in effect
        torch.set_num_threads(args.torch_threads)
    try:
        print(allocator_line)
        print(wait_policy_line())
        return _train(args, run_dir, resumed)
    except BaseException:
        if resumed is None and not (run_dir / "learner_events.log").exists():
            import shutil

            shutil.rmtree(run_dir, ignore_errors=True)  # failed before training started: leave no run folder
        raise


def _train(args: Args, run_dir: Path, resumed: dict | None) -> int:
    """The learner: start the actors, update until a stop condition, checkpoint; returns the exit status."""
    print("effective configuration:")
    for k, v in asdict(args).items():
        print(f"  {k} = {v!r}")
    print(
        f"  (derived) batch = {args.batch_unrolls} x {args.envs_per_actor} envs x {args.unroll_length} steps "
        f"= {args.batch_unrolls * args.envs_per_actor * args.unroll_length} env steps per update; run dir {run_dir}",
        flush=True,
    )

    random.seed(args.seed)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    torch.backends.cudnn.deterministic = args.torch_deterministic  # torch's thread count: set by main
    device = torch.device("cuda" if torch.cuda.is_available() and args.cuda else "cpu")

    pieces = (fullgame_pieces if is_full_game(args) else smac_pieces)(args, device, resumed)
    if resumed is not None:  # before the actors start, so that they act with the resumed weights
        for key, module in pieces.modules.items():
            module.load_state_dict(resumed[key])
    policy, lineage = pieces.published, pieces.lineage
    params = [p for m in pieces.modules.values() for p in m.parameters()]
    # Actors start first: their start-up (interpreter, imports, env) overlaps the rest of the learner's.
    ctx = mp.get_context("spawn")
    weights = SharedWeights({k: v.cpu() for k, v in policy.state_dict().items()}, ctx)
    weights.publish(policy.state_dict())
    config = pool_config(args)
    try:
        pool = make_actor_pool(config, pieces.target, weights, run_dir, ctx)
    except ImportError as e:
        raise SystemExit(f"--backend {args.backend}: {e}") from None
    log_file = open(run_dir / "learner_events.log", "a", buffering=1)  # noqa: SIM115 - closed in the finally below

    def say(msg: str) -> None:
        stamp = time.strftime("%H:%M:%S")
        log_file.write(f"[{stamp}] {msg}\n")
        try:
            print(f"[learner {stamp}] {msg}", flush=True)
        except OSError:
            pass  # a closed terminal or pipe must not end the run; learner_events.log has every line

    supervisor = ActorSupervisor(pool, config, say)
    start = time.monotonic()
    env_steps = updates = 0
    trained_steps = 0
    update_time = 0.0
    elapsed_before = 0.0
    best = None
    window: deque = deque(maxlen=args.win_window)
    if resumed is not None:
        env_steps, updates, trained_steps = (int(resumed[k]) for k in ("global_step", "updates", "trained_steps"))
        elapsed_before, best = float(resumed["elapsed_s"]), resumed["best"]
        window.extend(tuple(e) for e in resumed["window"])
    buffer: list[dict] = []
    stop = GracefulStop()
    last_print = last_item = start
    first_item, steps_at_first = None, 0
    rc = 0
    writer = None
    try:
        supervisor.start_all()
        optimizer = torch.optim.Adam(params, lr=args.learning_rate, eps=1e-5)
        if resumed is not None:
            optimizer.load_state_dict(resumed["optimizer"])
            set_rng_state(resumed["rng"])
            say(
                f"resumed from {run_dir / RESUME_FILE} at update {updates}, {env_steps} env steps "
                f"(session {args.session}: new actor env seeds)"
            )

        def save_model_file(path: Path) -> None:
            pieces.save(path, env_steps)  # written atomically

        def checkpoint() -> None:
            """Last and best checkpoints and the resume state (at an update boundary)."""
            nonlocal best
            save_model_file(run_dir / f"{args.exp_name}.pt")
            wr = float(np.mean([e[2] for e in window])) if window else None
            if wr is not None and (best is None or wr >= best):  # rolling train win rate; the latest among ties
                best = wr
                save_model_file(run_dir / f"{args.exp_name}_best.pt")
            save_resume(
                run_dir / RESUME_FILE,
                {
                    "args": asdict(args),
                    "lineage": lineage,
                    "global_step": env_steps,
                    "updates": updates,
                    "trained_steps": trained_steps,
                    "elapsed_s": elapsed_before + time.monotonic() - start,
                    "best": best,
                    "window": [list(e) for e in window],
                    **{key: module.state_dict() for key, module in pieces.modules.items()},
                    "optimizer": optimizer.state_dict(),
                    "rng": rng_state(),
                },
            )

        print(f"{pieces.summary} | learner on {device}", flush=True)
        from torch.utils.tensorboard import SummaryWriter  # here, not at the top: spawned actors re-import this file

        # a resumed run drops the events logged after its resume state (e.g. after a hard kill)
        writer = SummaryWriter(str(run_dir), purge_step=None if resumed is None else env_steps + 1)
        if resumed is None:
            table = "\n".join(f"|{k}|{v}|" for k, v in asdict(args).items())
            writer.add_text("hyperparameters", "|param|value|\n|-|-|\n" + table)
        start = time.monotonic()
        stop.install()  # SIGINT / SIGTERM: finish the update, checkpoint, stop the actors, exit 0
        while True:
            if stop.requested:
                say(f"{stop.reason}: stopping after update {updates}, {env_steps} env steps")
                break
            if env_steps >= args.total_timesteps:
                say(f"total_timesteps reached: {env_steps} env steps")
                break
            if args.time_budget_s > 0 and time.monotonic() - start > args.time_budget_s:
                say(f"time budget of {args.time_budget_s:.0f} s reached after {env_steps} env steps")
                break
            supervisor.check()
            # A short poll that never ends the run: an empty queue only means the actors are busy (episodes
            # on the real game can take many minutes); mini-AlphaStar's consumer quit on a queue timeout.
            item = pool.get(timeout=0.1)
            now = time.monotonic()
            if item is None:
                if now - last_item > 60 and now - last_print > 60:
                    say(f"waiting for trajectories for {now - last_item:.0f} s; queue depth {pool.depth()}")
                    last_print = now
                continue
            last_item = now
            steps = int(item["reward"].size)
            if first_item is None:  # the env rate counts what arrives after the first trajectory, over the time since it
                first_item, steps_at_first = now, env_steps + steps
            env_steps += steps
            for ret, length, won in item["episodes"]:
                window.append((ret, length, won))
            if item["episodes"]:
                rets = np.array([e[0] for e in item["episodes"]])
                writer.add_scalar("charts/episodic_return", float(rets.mean()), env_steps)
                writer.add_scalar("charts/episodic_length", float(np.mean([e[1] for e in item["episodes"]])), env_steps)
            writer.add_scalar(f"actors/env_sps/actor_{item['slot']}", steps / max(item["act_time_s"], 1e-9), env_steps)
            writer.add_scalar("charts/policy_lag", weights.version - item["version"], env_steps)
            buffer.append(item)
            if len(buffer) < args.batch_unrolls:
                continue
            lag = float(np.mean([weights.version - t["version"] for t in buffer]))
            batch = pieces.collate(buffer, device)
            buffer = []
            t0 = time.monotonic()
            loss, logs = pieces.loss(batch)
            optimizer.zero_grad()
            loss.backward()
            grad_norm = nn.utils.clip_grad_norm_(params, args.max_grad_norm)
            optimizer.step()
            version = weights.publish(policy.state_dict())
            update_time += time.monotonic() - t0
            updates += 1
            trained_steps += int(batch["reward"].numel())
            elapsed = time.monotonic() - start
            for k, v in logs.items():
                writer.add_scalar(k, float(v.detach()), env_steps)
            writer.add_scalar("losses/grad_norm", float(grad_norm), env_steps)
            win_rate = float(np.mean([e[2] for e in window])) if window else float("nan")
            mean_ret = float(np.mean([e[0] for e in window])) if window else float("nan")
            env_sps = env_rate(env_steps - steps_at_first, now - first_item)
            learner_sps = trained_steps / max(update_time, 1e-9)
            writer.add_scalar("charts/win_rate_window", win_rate, env_steps)
            writer.add_scalar("charts/return_window", mean_ret, env_steps)
            if env_sps is not None:
                writer.add_scalar("charts/env_SPS", env_sps, env_steps)
            writer.add_scalar("charts/learner_SPS", learner_sps, env_steps)
            writer.add_scalar("charts/queue_depth", pool.depth(), env_steps)
            writer.add_scalar("charts/policy_lag_batch", lag, env_steps)
            writer.add_scalar("charts/policy_version", version, env_steps)
            writer.add_scalar("charts/actor_restarts", supervisor.restarts, env_steps)
            writer.add_scalar("charts/episodes_in_window", len(window), env_steps)  # <= --win-window, not a total
            if time.monotonic() - last_print > args.print_interval_s:
                last_print = time.monotonic()
                say(
                    f"update {updates} | env steps {env_steps} | env SPS {'n/a' if env_sps is None else f'{env_sps:.0f}'} | learner SPS {learner_sps:.0f} | "
                    f"win rate {win_rate:.2f} return {mean_ret:.2f} (last {len(window)} episodes) | queue {pool.depth()} | "
                    f"lag {lag:.1f} | restarts {supervisor.restarts} | {elapsed:.0f} s"
                )
            if args.save_model and updates % args.checkpoint_interval == 0:
                checkpoint()
        say(
            f"done: {updates} updates, {env_steps} env steps in {time.monotonic() - start:.0f} s; "
            f"win rate {np.mean([e[2] for e in window]) if window else float('nan'):.2f} "
            f"over the last {len(window)} episodes; run folder {run_dir}"
        )
        if args.save_model:
            checkpoint()
            say(
                saved_models_text(run_dir, args.exp_name)
                + "; "
                + resume_hint(run_dir, env_steps >= args.total_timesteps, env_steps)
            )
    except ActorFailure as e:
        say(f"stopping: {e}")
        rc = 1
    except KeyboardInterrupt:
        say("interrupted")
        rc = 130
    finally:
        stop.restore()
        pool.close()
        say("all actors stopped")
        (run_dir / "actor_events.json").write_text(json.dumps(supervisor.events, indent=1))
        if writer is not None:
            writer.close()
        log_file.close()
    return rc


if __name__ == "__main__":
    import tyro

    cli, given = tyro.cli(flowing_help(Args)), given_fields(Args)
    refuse_computed_flags(cli, ("session",), "the number of times the run was resumed", given)
    exit_code = main(cli, given)
    sys.stdout.flush()
    sys.stderr.flush()
    # Every process, file and writer is closed by now; skip the seconds-long teardown of torch.
    os._exit(exit_code)
