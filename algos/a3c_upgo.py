# AlphaStar-style actor-learner (Vinyals et al. 2019; IMPALA, Espeholt et al. 2018) on SMAC maps:
# asynchronous actors, one learner, per-head V-trace, UPGO, TD(lambda), KL to a teacher, entropy.
# Facts and failure modes of the reference implementation: liuruoze/mini-AlphaStar's RL loop (see docs/a3c_upgo.md).
# Losses: models/offpolicy_losses.py. Docs: docs/a3c_upgo.md. Style: CleanRL.
"""Train an asynchronous actor-learner on a SMAC map of the embedded simulator.

    python algos/a3c_upgo.py --map 3m --num-actors 2 --time-budget-s 300
    python algos/a3c_upgo.py --map 2s3z --teacher runs/bc/bc.pt --kl-coef 0.02 --restart-actors

Processes: the learner (this process) owns the optimizer; ``--num-actors`` actors (``spawn``ed
processes, or Ray actors with ``--backend ray``) each own a batch of envs, act with the latest
published policy and send unrolls of ``--unroll-length`` env steps. Each actor writes its own log
``runs/<run>/actor_<slot>_gen<g>.log``, heartbeats, and is reported within seconds when it dies or
stalls (stack dump from ``faulthandler`` on SIGUSR1); ``--restart-actors`` replaces it.
"""

from __future__ import annotations

import faulthandler
import importlib
import json
import multiprocessing as mp
import os
import queue
import random
import signal
import sys
import threading
import time
import traceback
from collections import deque
from dataclasses import asdict, dataclass
from multiprocessing.connection import wait
from pathlib import Path

import numpy as np
import torch
from torch import nn

from models import ClassPolicy, MaskedCategorical, build_models, load_checkpoint, save_checkpoint
from models.offpolicy_losses import masked_kl, masked_mean, td_lambda_returns, upgo_returns, vtrace
from sc2_envs.vector.subproc import _describe_exit, _exit_on_sigterm, _heartbeat, _kill_group, _redirect_output, _tail


@dataclass
class Args:
    exp_name: str = os.path.basename(__file__)[: -len(".py")]
    """the name of this experiment"""
    seed: int = 1
    """seed of the experiment (actor `slot` of generation `g` seeds its envs with seed + 10_000 * (slot + 1) + 1_000_000 * g)"""
    torch_deterministic: bool = True
    """if toggled, sets `torch.backends.cudnn.deterministic=True`"""
    cuda: bool = True
    """if toggled, the learner uses cuda when available (actors always act on CPU)"""
    save_model: bool = False
    """whether to save a checkpoint to runs/<run_name>/<exp_name>.pt at the end (models.save_checkpoint format)"""
    run_dir: str = "runs"
    """folder of the run folders (TensorBoard events, actor logs, checkpoint)"""

    # Environment and topology
    map: str = "3m"
    """the SMAC map (sc2_envs.list_maps())"""
    env_backend: str = "sim"
    """`sim` (embedded batched simulator) or `sc2` (the SMAC map on real StarCraft II; envs_per_actor must be 1)"""
    env_factory: str = ""
    """`module:function` building each actor's batched env as f(map_name, num_envs, seed) instead of the backend (fault-injection tests, custom envs)"""
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
    """coefficient of KL(teacher || student) over available actions; > 0 requires --teacher"""
    teacher: str = ""
    """path of the teacher checkpoint (a BC or HAPPO checkpoint, models.save_checkpoint format); never guessed"""
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


# ------------------------------------------------------------------------------------------------
# envs and policies (used by actors and the learner)


def make_actor_env(args: Args, num_envs: int, seed: int):
    """The batched env of one actor: ``--env-factory``, the simulator, or SMAC on real StarCraft II."""
    if args.env_factory:
        module, _, name = args.env_factory.partition(":")
        return getattr(importlib.import_module(module), name)(args.map, num_envs, seed)
    if args.env_backend == "sim":
        import sc2_envs

        return sc2_envs.make_batched(args.map, num_envs=num_envs, seed=seed, autoreset=True)
    from sc2_envs.backends import make_sc2_backend

    return make_sc2_backend(args.map, seed=seed, autoreset=True)


def joint_logits(policy: ClassPolicy, obs: torch.Tensor) -> torch.Tensor:
    """Unmasked logits ``[R, N, A]`` of every agent from ``obs [R, N, obs_size]`` (routing by unit class)."""
    parts, order = [], []
    for c in policy.classes:
        if c not in policy.class_agents:
            continue
        ids = policy.agent_ids(c)
        parts.append(policy.class_logits(c, obs.index_select(1, ids)))
        order.append(ids)
    inverse = torch.argsort(torch.cat(order))
    return torch.cat(parts, dim=1).index_select(1, inverse)


def policy_config(policy: ClassPolicy) -> dict:
    """What an actor needs to rebuild ``policy`` (then loads the published weights)."""
    return {"actor_type": policy.actor_type, "classes": list(policy.classes), "spec": dict(policy.spec),
            "hparams": dict(policy.hparams)}


def build_policy(cfg: dict, env_info: dict) -> ClassPolicy:
    """A :class:`ClassPolicy` of configuration ``cfg`` (from :func:`policy_config`) bound to ``env_info``."""
    h = cfg["hparams"]
    return ClassPolicy(cfg["actor_type"], cfg["classes"], cfg["spec"], h["hidden"], h["heads"], h["layers"]).bind(env_info)


class SharedWeights:
    """Policy weights in shared CPU memory plus a version, published without a lock (a seqlock).

    The learner makes the sequence number odd while it copies and even after; a reader copies and
    keeps the copy only if the number was even and unchanged. No lock exists, so an actor killed in
    the middle of a read can never block the learner. ``version = seq // 2`` counts publications.
    """

    def __init__(self, state_dict: dict, ctx):
        self.tensors = {k: v.detach().cpu().clone().share_memory_() for k, v in state_dict.items()}
        self.seq = ctx.Value("q", 0, lock=False)

    @property
    def version(self) -> int:
        return int(self.seq.value) // 2

    def publish(self, state_dict: dict) -> int:
        self.seq.value += 1
        for k, v in state_dict.items():
            self.tensors[k].copy_(v.detach())
        self.seq.value += 1
        return self.version

    def read_into(self, module: nn.Module, have_version: int) -> int | None:
        """Copy the weights into ``module`` if newer than ``have_version``; returns the new version or None."""
        while True:
            s1 = int(self.seq.value)
            if s1 % 2:
                time.sleep(0.001)
                continue
            if s1 // 2 == have_version:
                return None
            snapshot = {k: v.clone() for k, v in self.tensors.items()}
            if int(self.seq.value) == s1:
                module.load_state_dict(snapshot)
                return s1 // 2


# ------------------------------------------------------------------------------------------------
# actor side


def run_actor(args: Args, slot: int, gen: int, cfg: dict, channel) -> None:
    """Act in ``args.envs_per_actor`` envs and send unrolls until ``channel.stopped()``.

    ``channel`` supplies ``beat_step()`` (an env step was made), ``send(traj)`` (blocks while the
    learner's queue is full), ``pull_weights(policy, version) -> version | None`` and ``stopped()``.

    A trajectory is a dict of NumPy arrays (T = unroll_length, B = envs_per_actor): ``obs [T,B,N,O]``,
    ``state [T,B,S]``, ``avail [T,B,N,A]`` bool, ``actions [T,B,N]`` int64, ``logp [T,B,N]`` (behaviour),
    ``reward, terminated, truncated [T,B]``, ``final_state [T,B,S]`` (the pre-reset state where the env
    ended), ``next_state [B,S]`` (bootstrap), plus ``episodes`` (list of (return, length, won)),
    ``version`` (policy version acted with), ``slot``, ``gen``, ``act_time_s`` (seconds spent stepping).
    """
    seed = args.seed + 10_000 * (slot + 1) + 1_000_000 * gen
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)
    env = make_actor_env(args, args.envs_per_actor, seed)
    try:
        policy = build_policy(cfg, env.get_env_info())
        version = channel.pull_weights(policy, -1)
        print(f"[actor {slot} gen {gen}] pid {os.getpid()}: {env.num_envs} envs of {args.map}, policy version {version}",
              flush=True)
        out = env.reset(seed=seed)
        B, T = env.num_envs, args.unroll_length
        ep_ret = torch.zeros(B)
        ep_len = torch.zeros(B, dtype=torch.int64)
        n_unrolls = 0
        while not channel.stopped():
            new = channel.pull_weights(policy, version)
            if new is not None:
                version = new
            keys = ("obs", "state", "avail", "actions", "logp", "reward", "terminated", "truncated", "final_state")
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
                buf["avail"].append(out["avail_actions"])
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
            traj.update(next_state=out["state"].cpu().numpy(), episodes=episodes, version=version, slot=slot, gen=gen,
                        act_time_s=time.monotonic() - t0)
            channel.send(traj)
            n_unrolls += 1
            if n_unrolls % 50 == 0:
                print(f"[actor {slot} gen {gen}] {n_unrolls} unrolls, policy version {version}", flush=True)
    finally:
        if hasattr(env, "close"):
            env.close()


class _ProcessChannel:
    """An actor process's link to the learner: a pipe, shared weights, a stop event and two clocks."""

    def __init__(self, conn, weights: SharedWeights, stop, progress):
        self.conn, self.weights, self.stop, self.progress = conn, weights, stop, progress

    def beat_step(self) -> None:
        self.progress.value = time.monotonic()

    def send(self, traj: dict) -> None:
        # -1: waiting for the learner (back-pressure), which is not a stall of this actor.
        self.progress.value = -1.0
        self.conn.send(traj)
        self.progress.value = time.monotonic()

    def pull_weights(self, policy: nn.Module, version: int) -> int | None:
        return self.weights.read_into(policy, version)

    def stopped(self) -> bool:
        return self.stop.is_set()


def actor_process(args: Args, slot: int, gen: int, cfg: dict, conn, weights: SharedWeights, stop, heartbeat, progress,
                  log_path: str) -> None:
    """Entry point of an actor process (``spawn``): own log file, faulthandler, heartbeat, then :func:`run_actor`."""
    log = _redirect_output(log_path)
    if hasattr(os, "setpgrp"):
        os.setpgrp()  # its own group: the learner can also kill what the env launched (StarCraft II)
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    faulthandler.enable(file=log, all_threads=True)
    if hasattr(signal, "SIGUSR1"):
        faulthandler.register(signal.SIGUSR1, file=log, all_threads=True)
    beat_stop = threading.Event()
    # The heartbeat thread also ends this process when the learner dies (it sees a new parent pid).
    threading.Thread(target=_heartbeat, args=(heartbeat, args.heartbeat_interval, beat_stop), daemon=True,
                     name="heartbeat").start()
    if args.torch_threads > 0:
        torch.set_num_threads(args.torch_threads)
    code = 0
    try:
        run_actor(args, slot, gen, cfg, _ProcessChannel(conn, weights, stop, progress))
    except (BrokenPipeError, EOFError):
        print(f"[actor {slot} gen {gen}] the learner closed the pipe", flush=True)
    except SystemExit as e:
        print(f"[actor {slot} gen {gen}] terminated", flush=True)
        code = e.code if isinstance(e.code, int) else 1
    except BaseException:  # noqa: BLE001 - any failure is logged here and becomes the exit code
        traceback.print_exc()
        code = 1
    beat_stop.set()
    print(f"[actor {slot} gen {gen}] exiting with code {code}", flush=True)
    sys.stderr.flush()
    # The env is closed and the log flushed; skip the interpreter's teardown of torch, which takes
    # seconds on a loaded machine and would delay the learner's shutdown.
    os._exit(code)


# ------------------------------------------------------------------------------------------------
# learner side: actor pools


class ActorFailure(RuntimeError):
    """An actor died or stalled and is not (or no longer) restarted."""


@dataclass
class _Slot:
    slot: int
    gen: int
    handle: object  # Process or Ray actor handle
    log_path: Path
    started: float
    pid: int | None = None
    conn: object = None
    heartbeat: object = None
    progress: object = None
    run_ref: object = None  # Ray: the actor's run() call
    node: str | None = None  # Ray: the node the actor runs on


class ProcessActorPool:
    """Actors as ``spawn``ed processes; trajectories over one pipe per actor into a bounded queue.

    A pipe per actor (its write end closed in the learner) means a killed actor shows up as EOF on
    its own pipe, never as a half-written message in a queue shared with the others. A receiver
    thread moves complete trajectories into ``self.queue`` (``queue_size`` items); when it is full
    the receiver waits and actors block in ``send``: back-pressure, not dropped data.
    """

    def __init__(self, args: Args, cfg: dict, weights: SharedWeights, log_dir: Path, ctx):
        self.args, self.cfg, self.weights, self.log_dir, self.ctx = args, cfg, weights, log_dir, ctx
        self.stop = ctx.Event()
        self.queue: queue.Queue = queue.Queue(maxsize=args.queue_size)
        self.slots: dict[int, _Slot] = {}
        self._conns: dict[object, int] = {}
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._receiver = threading.Thread(target=self._receive, daemon=True, name="receiver")
        self._receiver.start()

    def start(self, slot: int, gen: int) -> _Slot:
        reader, writer = self.ctx.Pipe(duplex=False)
        heartbeat = self.ctx.Value("d", 0.0, lock=False)
        progress = self.ctx.Value("d", 0.0, lock=False)
        log_path = self.log_dir / f"actor_{slot}_gen{gen}.log"
        proc = self.ctx.Process(target=actor_process, name=f"a3c-actor-{slot}", daemon=True,
                                args=(self.args, slot, gen, self.cfg, writer, self.weights, self.stop, heartbeat, progress,
                                      str(log_path)))
        proc.start()
        writer.close()
        s = _Slot(slot, gen, proc, log_path, time.monotonic(), proc.pid, reader, heartbeat, progress)
        with self._lock:
            self.slots[slot] = s
            self._conns[reader] = slot
        return s

    def _receive(self) -> None:
        while not self._closing.is_set():
            with self._lock:
                conns = list(self._conns)
            if not conns:
                time.sleep(0.05)
                continue
            for conn in wait(conns, timeout=0.1):
                try:
                    item = conn.recv()
                except (EOFError, OSError):
                    with self._lock:
                        self._conns.pop(conn, None)
                    conn.close()
                    continue
                while not self._closing.is_set():
                    if self.stop.is_set():
                        break  # shutting down: drain and drop so that actors blocked in send can exit
                    try:
                        self.queue.put(item, timeout=0.1)
                        break
                    except queue.Full:
                        continue

    def get(self, timeout: float):
        try:
            return self.queue.get(timeout=timeout)
        except queue.Empty:
            return None

    def depth(self) -> int:
        return self.queue.qsize()

    def problem(self, s: _Slot, now: float) -> tuple[str, str] | None:
        """``(kind, description)`` if the actor in ``s`` is dead or stalled, else None."""
        proc = s.handle
        if not proc.is_alive():
            return "died", f"{_describe_exit(proc.exitcode)}"
        beat, progress = s.heartbeat.value, s.progress.value
        if beat == 0.0:
            if now - s.started > self.args.startup_timeout:
                return "stalled", f"no heartbeat {now - s.started:.0f} s after start (startup_timeout={self.args.startup_timeout} s)"
            return None
        if now - beat > self.args.heartbeat_timeout:
            return "stalled", f"heartbeat thread silent for {now - beat:.1f} s (frozen process; heartbeat_timeout={self.args.heartbeat_timeout} s)"
        if progress == 0.0 and now - s.started > self.args.startup_timeout:
            return "stalled", f"no env step {now - s.started:.0f} s after start (startup_timeout={self.args.startup_timeout} s)"
        if progress > 0.0 and now - progress > self.args.stall_timeout:
            return "stalled", f"no env step for {now - progress:.1f} s (stall_timeout={self.args.stall_timeout} s)"
        return None

    def dump_stack(self, s: _Slot) -> bool:
        """SIGUSR1 -> faulthandler writes every thread's stack to the actor's log; True if it did."""
        if not hasattr(signal, "SIGUSR1") or not s.handle.is_alive():
            return False
        size = s.log_path.stat().st_size if s.log_path.exists() else 0
        os.kill(s.pid, signal.SIGUSR1)
        deadline = time.monotonic() + 2.0
        while time.monotonic() < deadline:
            time.sleep(0.05)
            if s.log_path.exists() and s.log_path.stat().st_size > size:
                time.sleep(0.1)  # let faulthandler finish every thread
                return True
        return False

    def kill(self, s: _Slot) -> None:
        proc = s.handle
        if proc.is_alive():
            proc.kill()
        proc.join(timeout=5.0)
        _kill_group(s.pid)

    def close(self, timeout: float = 10.0) -> None:
        """Stop every actor; returns with no actor process left."""
        self.stop.set()
        deadline = time.monotonic() + timeout
        for s in self.slots.values():
            s.handle.join(timeout=max(0.1, deadline - time.monotonic()))
        for s in self.slots.values():
            if s.handle.is_alive():
                s.handle.terminate()
                s.handle.join(timeout=2.0)
            if s.handle.is_alive():
                s.handle.kill()
                s.handle.join()
            _kill_group(s.pid)
        self._closing.set()
        self._receiver.join(timeout=5.0)
        with self._lock:
            for conn in self._conns:
                conn.close()
            self._conns.clear()


class RayActorPool:
    """Actors as Ray actors (``--backend ray``): a local Ray cluster, or ``--ray-address`` for a multi-node one.

    Trajectories go through a bounded ``ray.util.queue.Queue``; weights and heartbeats through a
    small ``Hub`` actor; a dead actor shows up as the failure of its ``run`` call. For a stall the
    learner sends SIGUSR1 to the actor's pid when it runs on the learner's node (its log file is on
    that node's disk), then kills it with ``ray.kill``.
    """

    def __init__(self, args: Args, cfg: dict, weights: SharedWeights, log_dir: Path, ctx):
        try:
            import ray
            from ray.util.queue import Queue
        except ImportError:
            raise SystemExit("--backend ray needs Ray: pip install 'ray>=2.9' (it does not touch torch); "
                             "or use --backend process") from None
        self.ray, self.args, self.cfg, self.weights, self.log_dir = ray, args, cfg, weights, log_dir
        ray.init(address=args.ray_address or None, include_dashboard=False, log_to_driver=False,
                 ignore_reinit_error=True, configure_logging=False, runtime_env={"env_vars": _ray_env_vars()})
        self.hub = ray.remote(num_cpus=0)(_Hub).remote()
        self._weights_version = -1
        self._push_weights()
        self.queue = Queue(maxsize=args.queue_size, actor_options={"num_cpus": 0})
        self.actor_cls = ray.remote(num_cpus=args.ray_actor_cpus)(_RayActor)
        self.slots: dict[int, _Slot] = {}
        self.node_id = ray.get_runtime_context().get_node_id()

    def _push_weights(self) -> None:
        if self.weights.version != self._weights_version:
            self._weights_version = self.weights.version
            sd = {k: v.clone() for k, v in self.weights.tensors.items()}
            self.ray.get(self.hub.publish.remote(self._weights_version, sd))

    def start(self, slot: int, gen: int) -> _Slot:
        log_path = self.log_dir / f"actor_{slot}_gen{gen}.log"
        handle = self.actor_cls.options(max_concurrency=2).remote()
        run_ref = handle.run.remote(self.args, slot, gen, self.cfg, self.hub, self.queue, str(log_path))
        s = _Slot(slot, gen, handle, log_path, time.monotonic(), run_ref=run_ref)
        self.slots[slot] = s
        return s

    def get(self, timeout: float):
        self._push_weights()
        try:
            return self.queue.get(block=True, timeout=timeout)
        except queue.Empty:
            return None
        except Exception as e:  # ray.util.queue.Empty subclasses queue.Empty in recent Ray; older ones do not
            if type(e).__name__ == "Empty":
                return None
            raise

    def depth(self) -> int:
        return self.queue.qsize()

    def problem(self, s: _Slot, now: float) -> tuple[str, str] | None:
        ready, _ = self.ray.wait([s.run_ref], timeout=0)
        if ready:
            try:
                self.ray.get(s.run_ref)
                return "died", "its run() returned before the stop"
            except Exception as e:  # noqa: BLE001 - RayActorError (process died) or the actor's exception
                return "died", f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
        beats = self.ray.get(self.hub.beats.remote())
        info = beats.get((s.slot, s.gen))
        if info is None:
            if now - s.started > self.args.startup_timeout:
                return "stalled", f"no heartbeat {now - s.started:.0f} s after start (startup_timeout={self.args.startup_timeout} s)"
            return None
        s.pid, s.node = info["pid"], info["node"]
        # Hub times are the actor's wall clock: compare with ours (same clock on one node; NTP across nodes).
        age_beat, progress = time.time() - info["beat"], info["progress"]
        if age_beat > self.args.heartbeat_timeout:
            return "stalled", f"heartbeat thread silent for {age_beat:.1f} s (heartbeat_timeout={self.args.heartbeat_timeout} s)"
        if progress > 0 and time.time() - progress > self.args.stall_timeout:
            return "stalled", f"no env step for {time.time() - progress:.1f} s (stall_timeout={self.args.stall_timeout} s)"
        return None

    def dump_stack(self, s: _Slot) -> bool:
        if s.pid is None or s.node != self.node_id or not hasattr(signal, "SIGUSR1"):
            return False
        size = s.log_path.stat().st_size if s.log_path.exists() else 0
        try:
            os.kill(s.pid, signal.SIGUSR1)
        except ProcessLookupError:
            return False
        deadline = time.monotonic() + 2.0
        while time.monotonic() < deadline:
            time.sleep(0.05)
            if s.log_path.exists() and s.log_path.stat().st_size > size:
                time.sleep(0.1)
                return True
        return False

    def kill(self, s: _Slot) -> None:
        self.ray.kill(s.handle, no_restart=True)

    def close(self, timeout: float = 10.0) -> None:
        try:
            self.ray.get(self.hub.set_stop.remote())
            refs = [s.run_ref for s in self.slots.values()]
            deadline = time.monotonic() + timeout
            while refs and time.monotonic() < deadline:
                # Actors may be blocked on a full queue: drain it so they see the stop.
                while self.queue.qsize():
                    self.get(timeout=0.01)
                _, refs = self.ray.wait(refs, num_returns=len(refs), timeout=0.2)
            for s in self.slots.values():
                self.ray.kill(s.handle, no_restart=True)
        finally:
            self.ray.shutdown()


def _ray_env_vars() -> dict:
    # Ray workers import this file as a module: they need the repository on their path (local cluster).
    repo = str(Path(__file__).resolve().parents[1])
    algos = str(Path(__file__).resolve().parent)
    return {"PYTHONPATH": os.pathsep.join([repo, algos, os.environ.get("PYTHONPATH", "")])}


class _Hub:
    """Ray actor: the published weights with their version, heartbeats of the actors, the stop flag."""

    def __init__(self):
        self.version, self.state_dict, self.stop, self._beats = -1, None, False, {}

    def publish(self, version, state_dict):
        self.version, self.state_dict = version, state_dict

    def pull(self, have_version):
        return None if have_version == self.version else (self.version, self.state_dict)

    def beat(self, key, pid, node, beat, progress):
        self._beats[key] = {"pid": pid, "node": node, "beat": beat, "progress": progress}

    def beats(self):
        return dict(self._beats)

    def set_stop(self):
        self.stop = True

    def stopped(self):
        return self.stop


class _RayChannel:
    def __init__(self, ray, hub, traj_queue, key):
        self.ray, self.hub, self.queue, self.key = ray, hub, traj_queue, key
        self.node = ray.get_runtime_context().get_node_id()
        self.progress, self._stop, self._last_stop_check = 0.0, False, 0.0

    def beat(self) -> None:
        self.hub.beat.remote(self.key, os.getpid(), self.node, time.time(), self.progress)

    def beat_step(self) -> None:
        self.progress = time.time()

    def send(self, traj: dict) -> None:
        self.progress = -1.0
        while not self.stopped():
            try:
                self.queue.put(traj, block=True, timeout=0.5)
                break
            except Exception as e:  # ray.util.queue.Full (not importable without ray)
                if type(e).__name__ != "Full":
                    raise
        self.progress = time.time()

    def pull_weights(self, policy: nn.Module, version: int) -> int | None:
        got = self.ray.get(self.hub.pull.remote(version))
        if got is None:
            return None
        policy.load_state_dict(got[1])
        return got[0]

    def stopped(self) -> bool:
        if not self._stop and time.monotonic() - self._last_stop_check > 0.5:
            self._last_stop_check = time.monotonic()
            self._stop = bool(self.ray.get(self.hub.stopped.remote()))
        return self._stop


class _RayActor:
    """Ray actor running :func:`run_actor`; its own log file, faulthandler on SIGUSR1, a heartbeat thread."""

    def run(self, args: Args, slot: int, gen: int, cfg: dict, hub, traj_queue, log_path: str) -> None:
        import ray

        log = _redirect_output(log_path)
        faulthandler.enable(file=log, all_threads=True)
        if hasattr(signal, "SIGUSR1"):
            faulthandler.register(signal.SIGUSR1, file=log, all_threads=True)
        if args.torch_threads > 0:
            torch.set_num_threads(args.torch_threads)
        channel = _RayChannel(ray, hub, traj_queue, (slot, gen))
        done = threading.Event()

        def beat_loop():
            while not done.is_set():
                channel.beat()
                done.wait(args.heartbeat_interval)

        threading.Thread(target=beat_loop, daemon=True, name="heartbeat").start()
        try:
            run_actor(args, slot, gen, cfg, channel)
        except BaseException:
            traceback.print_exc()
            raise
        finally:
            done.set()
            print(f"[actor {slot} gen {gen}] exiting", flush=True)


# ------------------------------------------------------------------------------------------------
# learner side: supervision and the update


class Supervisor:
    """Starts the actors, reports dead or stalled ones within ``poll`` seconds, restarts them if configured."""

    def __init__(self, pool, args: Args, say):
        self.pool, self.args, self.say = pool, args, say
        self.restarts = 0
        self.events: list[dict] = []

    def start_all(self) -> None:
        for slot in range(self.args.num_actors):
            self._start(slot, 0)

    def _start(self, slot: int, gen: int) -> None:
        s = self.pool.start(slot, gen)
        pid = f"pid {s.pid}" if s.pid is not None else "Ray actor"
        self.say(f"actor {slot} gen {gen} started ({pid}), log {s.log_path}")

    def check(self) -> None:
        now = time.monotonic()
        for slot, s in list(self.pool.slots.items()):
            found = self.pool.problem(s, now)
            if found is None:
                continue
            kind, why = found
            dumped = False
            if kind == "stalled":
                dumped = self.pool.dump_stack(s)
            self.pool.kill(s)
            note = " Stack dump (faulthandler, SIGUSR1) in the log lines below." if dumped else ""
            lines = 2 * 20 if dumped else 20
            self.say(f"ACTOR {kind.upper()}: actor {slot} gen {s.gen} (pid {s.pid}) {kind}: {why}.{note}\n"
                     f"--- last lines of {s.log_path} ---\n{_tail(s.log_path, lines)}\n--- end of {s.log_path} ---")
            self.events.append({"slot": slot, "gen": s.gen, "kind": kind, "why": why, "time": time.time()})
            if not self.args.restart_actors:
                raise ActorFailure(f"actor {slot} {kind} ({why}); rerun with --restart-actors to replace failed actors")
            if self.restarts >= self.args.max_restarts:
                raise ActorFailure(f"actor {slot} {kind} ({why}) after {self.restarts} restarts (max_restarts)")
            self.restarts += 1
            self.say(f"restarting actor {slot} as gen {s.gen + 1} (restart {self.restarts}/{self.args.max_restarts})")
            self._start(slot, s.gen + 1)


def collate(trajs: list[dict], device: torch.device) -> dict:
    """Concatenate trajectories along the env axis B; tensors on ``device``."""
    out = {}
    for k in ("obs", "state", "avail", "actions", "logp", "reward", "terminated", "truncated", "final_state"):
        out[k] = torch.as_tensor(np.concatenate([t[k] for t in trajs], axis=1), device=device)
    out["next_state"] = torch.as_tensor(np.concatenate([t["next_state"] for t in trajs], axis=0), device=device)
    return out


def learner_loss(policy, critic, teacher, batch: dict, args: Args) -> tuple[torch.Tensor, dict]:
    """The total loss of one batch and its logged terms.

    Heads are the agents: each agent's action has its own importance ratio. Dead agents (only
    the no-op available, SMAC) have log-prob 0 and are left out of every mean.
    """
    obs, avail, actions = batch["obs"], batch["avail"], batch["actions"]
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
    logits = joint_logits(policy, obs.reshape(T * B, N, O))
    flat_avail = avail.reshape(T * B, N, -1)
    dist = MaskedCategorical(logits, flat_avail)
    logp = dist.log_prob(actions.reshape(T * B, N)).reshape(T, B, N)
    alive = (~avail[..., 0]).float()
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
    logs = {"losses/policy_loss": pg_loss, "losses/upgo_loss": upgo_loss, "losses/value_loss": v_loss,
            "losses/entropy": entropy, "losses/rho_mean": masked_mean(vt.clipped_rhos, alive),
            "losses/rho_clipfrac": masked_mean((log_rhos.exp() > args.rho_bar).float(), alive),
            "losses/upgo_advantage": masked_mean(upgo_adv, alive), "losses/vtrace_advantage": masked_mean(vt.pg_advantages, alive),
            "losses/value_mean": values.mean(), "losses/td_lambda_return_mean": g_td.mean()}
    if teacher is not None:
        with torch.no_grad():
            t_logits = joint_logits(teacher, obs.reshape(T * B, N, O))
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


def check_args(args: Args) -> None:
    """Clear errors for bad or inconsistent options, before any process starts."""
    if args.kl_coef < 0:
        raise SystemExit(f"--kl-coef {args.kl_coef}; expected >= 0")
    if args.kl_coef > 0 and not args.teacher:
        raise SystemExit(f"--kl-coef {args.kl_coef} > 0 needs --teacher PATH (a BC or HAPPO checkpoint); "
                         "the teacher is never guessed from a folder")
    for name in ("teacher", "init"):
        path = getattr(args, name)
        if path and not Path(path).is_file():
            raise SystemExit(f"--{name} {path!r} is not a file; expected a checkpoint written by models.save_checkpoint")
    if args.backend not in ("process", "ray"):
        raise SystemExit(f"--backend {args.backend!r}; expected 'process' or 'ray'")
    if args.env_backend not in ("sim", "sc2"):
        raise SystemExit(f"--env-backend {args.env_backend!r}; expected 'sim' or 'sc2'")
    if args.env_backend == "sc2" and not args.env_factory:
        from sc2_envs.full_game.env import find_sc2_binary

        find_sc2_binary()  # SC2NotFoundError naming SC2PATH and the install steps when the game is missing
        if args.envs_per_actor != 1:
            raise SystemExit(f"--env-backend sc2 runs one game per actor: use --envs-per-actor 1 (got {args.envs_per_actor})")
    for name in ("num_actors", "envs_per_actor", "unroll_length", "batch_unrolls", "queue_size"):
        if getattr(args, name) < 1:
            raise SystemExit(f"--{name.replace('_', '-')} {getattr(args, name)}; expected >= 1")
    if args.heartbeat_timeout <= args.heartbeat_interval:
        raise SystemExit(f"--heartbeat-timeout {args.heartbeat_timeout} must exceed --heartbeat-interval {args.heartbeat_interval}")


def main(args: Args) -> int:
    check_args(args)
    run_name = f"{args.map}__{args.exp_name}__{args.seed}__{int(time.time())}"
    run_dir = Path(args.run_dir) / run_name
    run_dir.mkdir(parents=True, exist_ok=True)
    print("effective configuration:")
    for k, v in asdict(args).items():
        print(f"  {k} = {v!r}")
    print(f"  (derived) batch = {args.batch_unrolls} x {args.envs_per_actor} envs x {args.unroll_length} steps "
          f"= {args.batch_unrolls * args.envs_per_actor * args.unroll_length} env steps per update; run dir {run_dir}", flush=True)

    random.seed(args.seed)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    torch.backends.cudnn.deterministic = args.torch_deterministic
    if args.torch_threads > 0:
        torch.set_num_threads(args.torch_threads)
    device = torch.device("cuda" if torch.cuda.is_available() and args.cuda else "cpu")

    import sc2_envs

    # Layouts of the real-SC2 backend equal the simulator's (docs/backends.md), so the sim gives env_info for both.
    probe = sc2_envs.make_batched(args.map, num_envs=1) if not args.env_factory else make_actor_env(args, 1, args.seed)
    env_info = probe.get_env_info()
    if args.init:
        policy, _, ckpt = load_checkpoint(args.init, env_info, device, with_critic=False)
        if "critic" in ckpt:
            _, critic, _ = load_checkpoint(args.init, env_info, device, with_critic=True)
        else:
            _, critic = build_models(env_info, policy.actor_type, policy.hparams["hidden"], policy.hparams["heads"],
                                     policy.hparams["layers"], device=device)
        print(f"student initialised from {args.init} (trained on {ckpt['config']['map_name']})")
    else:
        policy, critic = build_models(env_info, args.actor, hidden=args.hidden, actor_layers=args.actor_layers, device=device)
    # Actors start first: their start-up (interpreter, imports, env) overlaps the rest of the learner's.
    ctx = mp.get_context("spawn")
    weights = SharedWeights({k: v.cpu() for k, v in policy.state_dict().items()}, ctx)
    weights.publish(policy.state_dict())
    pool_cls = RayActorPool if args.backend == "ray" else ProcessActorPool
    pool = pool_cls(args, policy_config(policy), weights, run_dir, ctx)
    log_file = open(run_dir / "learner_events.log", "a", buffering=1)  # noqa: SIM115 - closed in the finally below

    def say(msg: str) -> None:
        stamp = time.strftime("%H:%M:%S")
        log_file.write(f"[{stamp}] {msg}\n")
        try:
            print(f"[learner {stamp}] {msg}", flush=True)
        except OSError:
            pass  # a closed terminal or pipe must not end the run; learner_events.log has every line

    supervisor = Supervisor(pool, args, say)
    start = time.monotonic()
    env_steps = updates = 0
    trained_steps = 0
    update_time = 0.0
    window: deque = deque(maxlen=args.win_window)
    buffer: list[dict] = []
    last_print = last_item = start
    first_item = None
    rc = 0
    writer = None
    try:
        supervisor.start_all()
        teacher = None
        if args.teacher:
            teacher, _, tck = load_checkpoint(args.teacher, env_info, device, with_critic=False)
            teacher.eval().requires_grad_(False)
            print(f"teacher {args.teacher} ({tck['config']['actor_type']}, trained on {tck['config']['map_name']}), "
                  f"kl_coef {args.kl_coef}")
        optimizer = torch.optim.Adam(list(policy.parameters()) + list(critic.parameters()), lr=args.learning_rate, eps=1e-5)
        print(f"{args.map}: {env_info['n_agents']} agents, obs {env_info['obs_shape']}, state {env_info['state_shape']}, "
              f"{env_info['n_actions']} actions, episode limit {env_info['episode_limit']} env steps | learner on {device}",
              flush=True)
        from torch.utils.tensorboard import SummaryWriter  # here, not at the top: spawned actors re-import this file

        writer = SummaryWriter(str(run_dir))
        writer.add_text("hyperparameters", "|param|value|\n|-|-|\n" + "\n".join(f"|{k}|{v}|" for k, v in asdict(args).items()))
        start = time.monotonic()
        while True:
            if env_steps >= args.total_timesteps:
                say(f"total_timesteps reached: {env_steps} env steps")
                break
            if args.time_budget_s > 0 and time.monotonic() - start > args.time_budget_s:
                say(f"time budget of {args.time_budget_s:.0f} s reached after {env_steps} env steps")
                break
            supervisor.check()
            # A short poll that never ends the run: an empty queue only means the actors are busy (episodes
            # on the real game can take many minutes), see reference/full_game.md 3.5 (1).
            item = pool.get(timeout=0.1)
            now = time.monotonic()
            if item is None:
                if now - last_item > 60 and now - last_print > 60:
                    say(f"waiting for trajectories for {now - last_item:.0f} s; queue depth {pool.depth()}")
                    last_print = now
                continue
            last_item = now
            first_item = first_item or now
            steps = int(item["reward"].size)
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
            batch = collate(buffer, device)
            buffer = []
            t0 = time.monotonic()
            loss, logs = learner_loss(policy, critic, teacher, batch, args)
            optimizer.zero_grad()
            loss.backward()
            grad_norm = nn.utils.clip_grad_norm_(list(policy.parameters()) + list(critic.parameters()), args.max_grad_norm)
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
            env_sps = env_steps / max(now - (first_item or now), 1e-9) if env_steps else 0.0
            learner_sps = trained_steps / max(update_time, 1e-9)
            writer.add_scalar("charts/win_rate_window", win_rate, env_steps)
            writer.add_scalar("charts/return_window", mean_ret, env_steps)
            writer.add_scalar("charts/env_SPS", env_sps, env_steps)
            writer.add_scalar("charts/learner_SPS", learner_sps, env_steps)
            writer.add_scalar("charts/queue_depth", pool.depth(), env_steps)
            writer.add_scalar("charts/policy_lag_batch", lag, env_steps)
            writer.add_scalar("charts/policy_version", version, env_steps)
            writer.add_scalar("charts/actor_restarts", supervisor.restarts, env_steps)
            writer.add_scalar("charts/episodes", len(window), env_steps)
            if time.monotonic() - last_print > args.print_interval_s:
                last_print = time.monotonic()
                say(f"update {updates} | env steps {env_steps} | env SPS {env_sps:.0f} | learner SPS {learner_sps:.0f} | "
                    f"win rate {win_rate:.2f} return {mean_ret:.2f} (last {len(window)} episodes) | queue {pool.depth()} | "
                    f"lag {lag:.1f} | restarts {supervisor.restarts} | {elapsed:.0f} s")
        say(f"done: {updates} updates, {env_steps} env steps in {time.monotonic() - start:.0f} s; "
            f"win rate {np.mean([e[2] for e in window]) if window else float('nan'):.2f} over the last {len(window)} episodes")
        if args.save_model:
            save_checkpoint(str(run_dir / f"{args.exp_name}.pt"), policy, critic, env_info, asdict(args), env_steps)
            say(f"model saved to {run_dir / (args.exp_name + '.pt')}")
    except ActorFailure as e:
        say(f"stopping: {e}")
        rc = 1
    except KeyboardInterrupt:
        say("interrupted")
        rc = 130
    finally:
        pool.close()
        say("all actors stopped")
        (run_dir / "actor_events.json").write_text(json.dumps(supervisor.events, indent=1))
        if writer is not None:
            writer.close()
        log_file.close()
    return rc


if __name__ == "__main__":
    import tyro

    exit_code = main(tyro.cli(Args))
    sys.stdout.flush()
    sys.stderr.flush()
    # Every process, file and writer is closed by now; skip the seconds-long teardown of torch.
    os._exit(exit_code)
