"""Supervised actors for asynchronous actor-learner algorithms (IMPALA, AlphaStar-style A3C).

The learner (this process) publishes policy weights into :class:`SharedWeights`; ``num_actors``
actors each run a *target* callable ``target(slot, gen, channel)`` that acts in its own envs and
sends trajectories through the :class:`ActorChannel` it is given. Actors run as ``spawn``ed
processes (:class:`ProcessActorPool`) or as Ray actors (:class:`RayActorPool`, one or many
machines). :class:`ActorSupervisor` starts them, reports a dead or stalled actor within about the
learner's poll interval (with the last lines of its log and, for a stall, a stack dump of every
thread), and restarts it as a new generation when configured to.

Each actor writes everything it prints to its own file ``<log_dir>/actor_<slot>_gen<gen>.log`` and
heartbeats (:mod:`sc2_envs.vector.supervision`). A stall is either a silent heartbeat thread (the
process is frozen, or holds the GIL in native code) or no env step for ``stall_timeout`` seconds,
not counting time blocked on the learner's full queue (back-pressure).

The failures this design removes are those of mini-AlphaStar's RL loop (liuruoze/mini-AlphaStar,
``alphastarmini/core/rl``): a consumer that quits after a queue timeout, one log shared by all
processes, stalls without stack traces.

Example::

    weights = SharedWeights(policy.state_dict(), ctx)
    pool = make_actor_pool(config, functools.partial(run_actor, args, cfg), weights, run_dir, ctx)
    supervisor = ActorSupervisor(pool, config, print)
    supervisor.start_all()
    while training:
        supervisor.check()               # raises ActorFailure when an actor fails for good
        item = pool.get(timeout=0.1)     # a trajectory, or None
        ...
        weights.publish(policy.state_dict())
    pool.close()
"""

from __future__ import annotations

import multiprocessing as mp
import os
import queue
import sys
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import wait
from pathlib import Path
from typing import Any, Protocol

import torch
from torch import nn

from sc2_envs.vector.supervision import (
    LOG_TAIL_LINES,
    describe_exit,
    dump_stack,
    kill_process_group,
    log_tail,
    setup_worker_process,
    start_heartbeat,
)

__all__ = [
    "ActorChannel",
    "ActorFailure",
    "ActorPoolConfig",
    "ActorSlot",
    "ActorSupervisor",
    "ProcessActorPool",
    "RayActorPool",
    "SharedWeights",
    "make_actor_pool",
]


@dataclass
class ActorPoolConfig:
    """Topology and fault handling of an actor pool. Times are wall-clock seconds."""

    num_actors: int = 2
    """number of actors (slots 0 .. num_actors - 1)"""
    backend: str = "process"
    """``process`` (``spawn``ed subprocesses) or ``ray`` (Ray actors; local cluster unless ``ray_address``)"""
    queue_size: int = 8
    """bound of the learner's trajectory queue; actors block (back-pressure) when it is full"""
    heartbeat_interval: float = 0.5
    """seconds between heartbeats of an actor's heartbeat thread"""
    heartbeat_timeout: float = 10.0
    """an actor whose heartbeat thread is silent this long is frozen"""
    stall_timeout: float = 120.0
    """an actor that made no env step for this long is stalled (not counted while it waits for the learner)"""
    startup_timeout: float = 180.0
    """seconds an actor may take to start (interpreter, imports, env and first step)"""
    torch_threads: int = 1
    """``torch.set_num_threads`` in each actor (0: torch's default)"""
    restart_actors: bool = False
    """replace a dead or stalled actor (otherwise :class:`ActorFailure` is raised)"""
    max_restarts: int = 20
    """raise :class:`ActorFailure` after this many restarts in total (a crash loop)"""
    ray_address: str = ""
    """address of an existing Ray cluster (``auto``, ``ray://host:10001``); empty starts a local one"""
    ray_actor_cpus: float = 1.0
    """CPUs Ray reserves for each actor (placement across nodes follows them)"""
    process_name: str = "actor"
    """actor process ``k`` is named ``<process_name>-<k>``"""
    failure_hint: str = "set restart_actors=True to replace failed actors"
    """appended to the :class:`ActorFailure` message when restarts are off (a CLI names its flag)"""

    def __post_init__(self) -> None:
        if self.backend not in ("process", "ray"):
            raise ValueError(f"backend={self.backend!r}; expected 'process' or 'ray'")
        for name in ("num_actors", "queue_size"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name}={getattr(self, name)}; expected >= 1")
        if self.heartbeat_timeout <= self.heartbeat_interval:
            raise ValueError(
                f"heartbeat_timeout={self.heartbeat_timeout} must exceed heartbeat_interval={self.heartbeat_interval}"
            )


class ActorChannel(Protocol):
    """What a target receives: its link to the learner (one per actor)."""

    def beat_step(self) -> None:
        """Record that an env step was made (the progress clock of the stall check)."""

    def send(self, traj: Any) -> None:
        """Send one trajectory (picklable); blocks while the learner's queue is full."""

    def pull_weights(self, module: nn.Module, version: int) -> int | None:
        """Load the published weights into ``module`` if newer than ``version``; the new version or None."""

    def stopped(self) -> bool:
        """True once the learner asked the actors to stop."""


ActorTarget = Callable[[int, int, ActorChannel], None]
"""``target(slot, gen, channel)``: picklable (a top-level function or a ``functools.partial`` of one);
runs in the actor until ``channel.stopped()``."""


class ActorFailure(RuntimeError):
    """An actor died or stalled and is not (or no longer) restarted."""


class SharedWeights:
    """Policy weights in shared CPU memory plus a version, published without a lock (a seqlock).

    The learner makes the sequence number odd while it copies and even after; a reader copies and
    keeps the copy only if the number was even and unchanged. No lock exists, so an actor killed in
    the middle of a read can never block the learner. ``version = seq // 2`` counts publications.

    Args:
        state_dict: the weights' names and shapes (copied to CPU shared memory).
        ctx: the multiprocessing context of the actors (``mp.get_context("spawn")``).
    """

    def __init__(self, state_dict: dict[str, torch.Tensor], ctx: Any):
        self.tensors = {k: v.detach().cpu().clone().share_memory_() for k, v in state_dict.items()}
        self.seq = ctx.Value("q", 0, lock=False)

    @property
    def version(self) -> int:
        return int(self.seq.value) // 2

    def publish(self, state_dict: dict[str, torch.Tensor]) -> int:
        """Copy ``state_dict`` (same names and shapes) into shared memory; returns the new version."""
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


class StopFlag:
    """The learner's "stop" to its actor processes: one byte in shared memory, set once, never cleared.

    Not a ``multiprocessing.Event``: an Event is five named POSIX semaphores, which the learner's
    ``os._exit`` (``training.async_learner.exit_process``) leaves for the resource tracker to unlink,
    with a "leaked semaphore objects" warning at every run's end. A shared byte needs no cleanup, and
    an actor only polls it.

    Args:
        ctx: the multiprocessing context of the actors (``mp.get_context("spawn")``).
    """

    def __init__(self, ctx: Any):
        self.flag = ctx.Value("b", 0, lock=False)

    def set(self) -> None:
        self.flag.value = 1

    def is_set(self) -> bool:
        return bool(self.flag.value)


@dataclass
class ActorSlot:
    """One running actor: its slot, generation, handle (``Process`` or Ray actor handle) and log file."""

    slot: int
    gen: int
    handle: object
    log_path: Path
    started: float
    pid: int | None = None
    conn: object = None
    heartbeat: object = None
    progress: object = None
    run_ref: object = None  # Ray: the actor's run() call
    node: str | None = None  # Ray: the node the actor runs on


def _log_path(log_dir: Path, slot: int, gen: int) -> Path:
    return Path(log_dir) / f"actor_{slot}_gen{gen}.log"


# ------------------------------------------------------------------------------------------------
# process backend


class _ProcessChannel:
    """An actor process's link to the learner: a pipe, shared weights, the stop flag and two clocks."""

    def __init__(self, conn: Any, weights: SharedWeights, stop: StopFlag, progress: Any):
        self.conn, self.weights, self.stop, self.progress = conn, weights, stop, progress

    def beat_step(self) -> None:
        self.progress.value = time.monotonic()

    def send(self, traj: Any) -> None:
        # -1: waiting for the learner (back-pressure), which is not a stall of this actor.
        self.progress.value = -1.0
        self.conn.send(traj)
        self.progress.value = time.monotonic()

    def pull_weights(self, module: nn.Module, version: int) -> int | None:
        return self.weights.read_into(module, version)

    def stopped(self) -> bool:
        return self.stop.is_set()


def _actor_process(
    target: ActorTarget,
    slot: int,
    gen: int,
    conn: Any,
    weights: SharedWeights,
    stop: StopFlag,
    heartbeat: Any,
    progress: Any,
    log_path: str,
    heartbeat_interval: float,
    torch_threads: int,
) -> None:
    """Entry point of an actor process (``spawn``): own log file, faulthandler, heartbeat, then ``target``."""
    # Own process group: the learner can also kill what the env launched (StarCraft II).
    log = setup_worker_process(log_path)  # noqa: F841 - open for the life of the process
    # The heartbeat thread also ends this process when the learner dies (it sees a new parent pid).
    beat_stop = start_heartbeat(heartbeat, heartbeat_interval)
    if torch_threads > 0:
        torch.set_num_threads(torch_threads)
        if "numba" not in sys.modules:  # numba's pool as small, from its start (docs/speed.md, "Several runs on one machine")
            os.environ.setdefault("NUMBA_NUM_THREADS", str(torch_threads))
    code = 0
    try:
        target(slot, gen, _ProcessChannel(conn, weights, stop, progress))
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


class ProcessActorPool:
    """Actors as ``spawn``ed processes; trajectories over one pipe per actor into a bounded queue.

    A pipe per actor (its write end closed in the learner) means a killed actor shows up as EOF on
    its own pipe, never as a half-written message in a queue shared with the others. A receiver
    thread moves complete trajectories into ``self.queue`` (``queue_size`` items); when it is full
    the receiver waits and actors block in ``send``: back-pressure, not dropped data.

    Args:
        config: the pool's :class:`ActorPoolConfig`.
        target: ``target(slot, gen, channel)``, run in each actor process.
        weights: the published weights the actors read.
        log_dir: folder of the actors' log files.
        ctx: the multiprocessing context (``spawn``) that ``weights`` was made with.
    """

    def __init__(self, config: ActorPoolConfig, target: ActorTarget, weights: SharedWeights, log_dir: Path, ctx: Any):
        self.config, self.target, self.weights, self.log_dir = config, target, weights, Path(log_dir)
        self.ctx = ctx if ctx is not None else mp.get_context("spawn")
        self.stop = StopFlag(self.ctx)
        self.queue: queue.Queue = queue.Queue(maxsize=config.queue_size)
        self.slots: dict[int, ActorSlot] = {}
        self._conns: dict[object, int] = {}
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._receiver = threading.Thread(target=self._receive, daemon=True, name="receiver")
        self._receiver.start()

    def start(self, slot: int, gen: int) -> ActorSlot:
        """Start the actor of ``slot``, generation ``gen``."""
        reader, writer = self.ctx.Pipe(duplex=False)
        heartbeat = self.ctx.Value("d", 0.0, lock=False)
        progress = self.ctx.Value("d", 0.0, lock=False)
        log_path = _log_path(self.log_dir, slot, gen)
        cfg = self.config
        proc = self.ctx.Process(
            target=_actor_process,
            name=f"{cfg.process_name}-{slot}",
            daemon=True,
            args=(
                self.target,
                slot,
                gen,
                writer,
                self.weights,
                self.stop,
                heartbeat,
                progress,
                str(log_path),
                cfg.heartbeat_interval,
                cfg.torch_threads,
            ),
        )
        proc.start()
        writer.close()
        s = ActorSlot(slot, gen, proc, log_path, time.monotonic(), proc.pid, reader, heartbeat, progress)
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

    def get(self, timeout: float) -> Any:
        """The next trajectory, or None after ``timeout`` seconds."""
        try:
            return self.queue.get(timeout=timeout)
        except queue.Empty:
            return None

    def depth(self) -> int:
        """Trajectories waiting in the queue."""
        return self.queue.qsize()

    def problem(self, s: ActorSlot, now: float) -> tuple[str, str] | None:
        """``(kind, description)`` with kind ``died`` or ``stalled`` if the actor in ``s`` failed, else None."""
        proc, cfg = s.handle, self.config
        if not proc.is_alive():
            return "died", f"{describe_exit(proc.exitcode)}"
        beat, progress = s.heartbeat.value, s.progress.value
        if beat == 0.0:
            if now - s.started > cfg.startup_timeout:
                return "stalled", f"no heartbeat {now - s.started:.0f} s after start (startup_timeout={cfg.startup_timeout} s)"
            return None
        if now - beat > cfg.heartbeat_timeout:
            return "stalled", (
                f"heartbeat thread silent for {now - beat:.1f} s (frozen process; heartbeat_timeout={cfg.heartbeat_timeout} s)"
            )
        if progress == 0.0 and now - s.started > cfg.startup_timeout:
            return "stalled", f"no env step {now - s.started:.0f} s after start (startup_timeout={cfg.startup_timeout} s)"
        if progress > 0.0 and now - progress > cfg.stall_timeout:
            return "stalled", f"no env step for {now - progress:.1f} s (stall_timeout={cfg.stall_timeout} s)"
        return None

    def dump_stack(self, s: ActorSlot) -> bool:
        """SIGUSR1 -> faulthandler writes every thread's stack to the actor's log; True if it did."""
        if not s.handle.is_alive():
            return False
        return dump_stack(s.pid, s.log_path, timeout=2.0, settle=0.1)

    def kill(self, s: ActorSlot) -> None:
        """SIGKILL the actor and its process group."""
        proc = s.handle
        if proc.is_alive():
            proc.kill()
        proc.join(timeout=5.0)
        kill_process_group(s.pid)

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
            kill_process_group(s.pid)
        self._closing.set()
        self._receiver.join(timeout=5.0)
        with self._lock:
            for conn in self._conns:
                conn.close()
            self._conns.clear()


# ------------------------------------------------------------------------------------------------
# Ray backend


class RayActorPool:
    """Actors as Ray actors: a local Ray cluster, or ``config.ray_address`` for a multi-node one.

    Trajectories go through a bounded ``ray.util.queue.Queue``; weights and heartbeats through a
    small ``_Hub`` actor; a dead actor shows up as the failure of its ``run`` call. For a stall the
    learner sends SIGUSR1 to the actor's pid when it runs on the learner's node (its log file is on
    that node's disk), then kills it with ``ray.kill``. Ray workers import this module, so the
    package must be installed (``pip install``) where they run; ``target`` is pickled by Ray's
    cloudpickle (by value when it is defined in a script's ``__main__``).

    Args: as :class:`ProcessActorPool` (``ctx`` is unused).

    Raises:
        ImportError: Ray is not installed (the message says how to install it).
    """

    def __init__(self, config: ActorPoolConfig, target: ActorTarget, weights: SharedWeights, log_dir: Path, ctx: Any = None):
        try:
            import ray
            from ray.util.queue import Queue
        except ImportError:
            raise ImportError(
                "the ray actor backend needs Ray: pip install 'sc2-envs[ray]' (or -e '.[ray]' in a checkout: ray==2.60.0, the "
                "version tested; it does not touch torch); or use the process backend"
            ) from None
        self.ray, self.config, self.target, self.weights, self.log_dir = ray, config, target, weights, Path(log_dir)
        ray.init(
            address=config.ray_address or None,
            include_dashboard=False,
            log_to_driver=False,
            ignore_reinit_error=True,
            configure_logging=False,
        )
        self.hub = ray.remote(num_cpus=0)(_Hub).remote()
        self._weights_version = -1
        self._push_weights()
        self.queue = Queue(maxsize=config.queue_size, actor_options={"num_cpus": 0})
        self.actor_cls = ray.remote(num_cpus=config.ray_actor_cpus)(_RayActor)
        self.slots: dict[int, ActorSlot] = {}
        self.node_id = ray.get_runtime_context().get_node_id()

    def _push_weights(self) -> None:
        if self.weights.version != self._weights_version:
            self._weights_version = self.weights.version
            sd = {k: v.clone() for k, v in self.weights.tensors.items()}
            self.ray.get(self.hub.publish.remote(self._weights_version, sd))

    def start(self, slot: int, gen: int) -> ActorSlot:
        log_path = _log_path(self.log_dir, slot, gen)
        handle = self.actor_cls.options(max_concurrency=2).remote()
        run_ref = handle.run.remote(
            self.target,
            slot,
            gen,
            self.config.heartbeat_interval,
            self.config.torch_threads,
            self.hub,
            self.queue,
            str(log_path),
        )
        s = ActorSlot(slot, gen, handle, log_path, time.monotonic(), run_ref=run_ref)
        self.slots[slot] = s
        return s

    def get(self, timeout: float) -> Any:
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

    def problem(self, s: ActorSlot, now: float) -> tuple[str, str] | None:
        cfg = self.config
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
            if now - s.started > cfg.startup_timeout:
                return "stalled", f"no heartbeat {now - s.started:.0f} s after start (startup_timeout={cfg.startup_timeout} s)"
            return None
        s.pid, s.node = info["pid"], info["node"]
        # Hub times are the actor's wall clock: compare with ours (same clock on one node; NTP across nodes).
        age_beat, progress = time.time() - info["beat"], info["progress"]
        if age_beat > cfg.heartbeat_timeout:
            return "stalled", f"heartbeat thread silent for {age_beat:.1f} s (heartbeat_timeout={cfg.heartbeat_timeout} s)"
        if progress > 0 and time.time() - progress > cfg.stall_timeout:
            return "stalled", f"no env step for {time.time() - progress:.1f} s (stall_timeout={cfg.stall_timeout} s)"
        return None

    def dump_stack(self, s: ActorSlot) -> bool:
        if s.pid is None or s.node != self.node_id:
            return False
        return dump_stack(s.pid, s.log_path, timeout=2.0, settle=0.1)

    def kill(self, s: ActorSlot) -> None:
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

    def send(self, traj: Any) -> None:
        self.progress = -1.0
        while not self.stopped():
            try:
                self.queue.put(traj, block=True, timeout=0.5)
                break
            except Exception as e:  # ray.util.queue.Full (not importable without ray)
                if type(e).__name__ != "Full":
                    raise
        self.progress = time.time()

    def pull_weights(self, module: nn.Module, version: int) -> int | None:
        got = self.ray.get(self.hub.pull.remote(version))
        if got is None:
            return None
        module.load_state_dict(got[1])
        return got[0]

    def stopped(self) -> bool:
        if not self._stop and time.monotonic() - self._last_stop_check > 0.5:
            self._last_stop_check = time.monotonic()
            self._stop = bool(self.ray.get(self.hub.stopped.remote()))
        return self._stop


class _RayActor:
    """Ray actor running a target; its own log file, faulthandler on SIGUSR1, a heartbeat thread."""

    def run(
        self,
        target: ActorTarget,
        slot: int,
        gen: int,
        heartbeat_interval: float,
        torch_threads: int,
        hub,
        traj_queue,
        log_path: str,
    ) -> None:
        import ray

        # Ray owns the worker process: no new process group, Ray's own SIGTERM handling.
        setup_worker_process(log_path, own_process_group=False, handle_sigterm=False)
        if torch_threads > 0:
            torch.set_num_threads(torch_threads)
        channel = _RayChannel(ray, hub, traj_queue, (slot, gen))
        done = threading.Event()

        def beat_loop():
            while not done.is_set():
                channel.beat()
                done.wait(heartbeat_interval)

        threading.Thread(target=beat_loop, daemon=True, name="heartbeat").start()
        try:
            target(slot, gen, channel)
        except BaseException:
            traceback.print_exc()
            raise
        finally:
            done.set()
            print(f"[actor {slot} gen {gen}] exiting", flush=True)


# ------------------------------------------------------------------------------------------------
# supervision


def make_actor_pool(
    config: ActorPoolConfig, target: ActorTarget, weights: SharedWeights, log_dir: Path, ctx: Any = None
) -> ProcessActorPool | RayActorPool:
    """The pool of ``config.backend``; see :class:`ProcessActorPool` for the arguments."""
    pool_cls = RayActorPool if config.backend == "ray" else ProcessActorPool
    return pool_cls(config, target, weights, log_dir, ctx)


class ActorSupervisor:
    """Starts the actors, reports dead or stalled ones at each :meth:`check`, restarts them if configured.

    Args:
        pool: a :class:`ProcessActorPool` or :class:`RayActorPool`.
        config: the pool's config (``num_actors``, ``restart_actors``, ``max_restarts``, ``failure_hint``).
        say: called with every event line (e.g. ``print`` or a logger).

    Attributes:
        restarts: actor restarts so far. events: one dict per failure (slot, gen, kind, why, time).
    """

    def __init__(self, pool: ProcessActorPool | RayActorPool, config: ActorPoolConfig, say: Callable[[str], None]):
        self.pool, self.config, self.say = pool, config, say
        self.restarts = 0
        self.events: list[dict] = []

    def start_all(self) -> None:
        for slot in range(self.config.num_actors):
            self._start(slot, 0)

    def _start(self, slot: int, gen: int) -> None:
        s = self.pool.start(slot, gen)
        pid = f"pid {s.pid}" if s.pid is not None else "Ray actor"
        self.say(f"actor {slot} gen {gen} started ({pid}), log {s.log_path}")

    def check(self) -> None:
        """Check every actor once; report (with its log tail) and kill or restart a failed one.

        Raises:
            ActorFailure: an actor failed and ``restart_actors`` is off, or ``max_restarts`` is used up.
        """
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
            lines = 2 * LOG_TAIL_LINES if dumped else LOG_TAIL_LINES
            self.say(
                f"ACTOR {kind.upper()}: actor {slot} gen {s.gen} (pid {s.pid}) {kind}: {why}.{note}\n"
                f"--- last lines of {s.log_path} ---\n{log_tail(s.log_path, lines)}\n--- end of {s.log_path} ---"
            )
            self.events.append({"slot": slot, "gen": s.gen, "kind": kind, "why": why, "time": time.time()})
            if not self.config.restart_actors:
                raise ActorFailure(f"actor {slot} {kind} ({why}); {self.config.failure_hint}")
            if self.restarts >= self.config.max_restarts:
                raise ActorFailure(f"actor {slot} {kind} ({why}) after {self.restarts} restarts (max_restarts)")
            self.restarts += 1
            self.say(f"restarting actor {slot} as gen {s.gen + 1} (restart {self.restarts}/{self.config.max_restarts})")
            self._start(slot, s.gen + 1)
