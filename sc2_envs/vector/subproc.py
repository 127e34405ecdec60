"""A vector env over subprocess workers, each owning one batched env; failures surface within seconds.

``SubprocVectorEnv(env_fns)`` starts one process per factory (``spawn`` by default). Worker ``w``
builds ``env_fns[w]()`` -- any object with the batched contract of ``sc2_envs.make_batched``
(``reset(seed) / step(actions)`` returning dicts of ``[B_w, ...]`` tensors, ``num_envs``,
``get_env_info()``, ``get_stats()``, ``close()``): a simulator batch, or the real-SC2 backend
(``B_w = 1``). The parent concatenates along the env axis, so the whole thing has the same contract
with ``B = sum(B_w)``; env ``b`` of the concatenation is env ``b - offset_w`` of its worker.

Fault handling (the failure modes of Gymnasium's ``AsyncVectorEnv`` reported in openai/gym#1544,
openai/gym#3281, Farama-Foundation/Gymnasium#222), built on :mod:`sc2_envs.vector.supervision`:

* each worker writes stdout/stderr to its own file ``<log_dir>/worker_<w>.log`` -- the worker
  redirects its file descriptors 1 and 2 at start, so output of C extensions and of child processes
  (StarCraft II) lands there too, never on a descriptor shared with other workers;
* a background thread in each worker writes a timestamp (``time.monotonic()``, seconds) to a shared
  value every ``heartbeat_interval`` seconds;
* while waiting for replies the parent watches every worker and raises

  - :class:`WorkerError` when the env raised (with the worker's formatted traceback),
  - :class:`WorkerDied` when the process exited (exit code or signal, last log lines), within
    about ``poll_interval`` of its death,
  - :class:`WorkerStalled` when the heartbeat is older than ``heartbeat_timeout`` (the process is
    frozen, or holds the GIL in native code) or no reply came within ``timeout`` seconds; the worker
    is first sent ``SIGUSR1``, on which ``faulthandler`` dumps every thread's stack into its log, and
    the error quotes that dump;

* after any of these the vector env is broken (further calls raise); ``close()`` always leaves no
  child processes: it asks each worker to close its env, joins, then terminates and kills.

Data crosses the pipes as NumPy arrays (tensors are converted in the worker), so no tensor
storage is shared between processes; the parent returns tensors on ``device``.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Sequence
from functools import partial
from multiprocessing.connection import wait
from pathlib import Path
from typing import Any

import numpy as np

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
    "SubprocVectorEnv",
    "SubprocVectorEnvError",
    "WorkerError",
    "WorkerDied",
    "WorkerStalled",
    "make_subproc_batched",
]


class SubprocVectorEnvError(RuntimeError):
    """A worker of a ``SubprocVectorEnv`` failed; ``worker`` is its index, ``log_path`` its log file."""

    def __init__(self, message: str, worker: int, log_path: Path):
        super().__init__(message)
        self.worker = worker
        self.log_path = log_path


class WorkerError(SubprocVectorEnvError):
    """The worker's env raised; ``remote_traceback`` is the formatted traceback from the worker."""

    def __init__(self, message: str, worker: int, log_path: Path, remote_traceback: str):
        super().__init__(message, worker, log_path)
        self.remote_traceback = remote_traceback


class WorkerDied(SubprocVectorEnvError):
    """The worker process exited without being asked to; ``exitcode`` as in ``Process.exitcode``."""

    def __init__(self, message: str, worker: int, log_path: Path, exitcode: int | None):
        super().__init__(message, worker, log_path)
        self.exitcode = exitcode


class WorkerStalled(SubprocVectorEnvError):
    """No heartbeat or no reply in time; the message quotes the stack dump from the worker's log."""


# ------------------------------------------------------------------------------------------------
# worker side (runs in the child; keep it free of parent state)


def _to_numpy(value: Any) -> Any:
    """Tensors (any object with ``.numpy()``/``.cpu()``) -> NumPy; dicts, lists, tuples recursively."""
    if isinstance(value, dict):
        return {k: _to_numpy(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_to_numpy(v) for v in value)
    if hasattr(value, "detach") and hasattr(value, "cpu"):
        return value.detach().cpu().numpy()
    return value


def _worker(
    index: int,
    env_fn: Callable[[], Any],
    conn: Any,
    log_path: str,
    heartbeat: Any,
    heartbeat_interval: float,
    torch_threads: int | None,
    actions_as: str,
) -> None:
    # Own process group (close() can also kill what the env launched, StarCraft II); SIGTERM unwinds
    # through ``finally`` so the env (and the game it launched) is closed.
    log = setup_worker_process(log_path)  # noqa: F841 - open for the life of the worker
    stop = start_heartbeat(heartbeat, heartbeat_interval)
    print(f"[worker {index}] pid {os.getpid()} started", flush=True)
    env = None
    try:
        if torch_threads is not None:
            # Intra-op threads of several workers compete for the same cores (pytorch-a3c#3).
            import torch

            torch.set_num_threads(torch_threads)
        env = env_fn()
        info = _to_numpy(env.get_env_info())
        conn.send(("ok", {"num_envs": int(env.num_envs), "env_info": info}))
        while True:
            cmd, data = conn.recv()
            if cmd == "close":
                break
            try:
                if cmd == "reset":
                    result = env.reset(seed=data)
                elif cmd == "step":
                    if actions_as == "torch":
                        import torch

                        data = torch.as_tensor(data)
                    result = env.step(data)
                elif cmd == "call":
                    name, args, kwargs = data
                    result = getattr(env, name)(*args, **kwargs)
                else:
                    raise ValueError(f"unknown command {cmd!r}")
                conn.send(("ok", _to_numpy(result)))
            except Exception as exc:  # noqa: BLE001 - every env error goes to the parent
                tb = traceback.format_exc()
                print(tb, file=sys.stderr, flush=True)
                conn.send(("error", (type(exc).__name__, str(exc), tb)))
    except (EOFError, KeyboardInterrupt, BrokenPipeError):
        pass  # the parent went away or interrupted: just clean up
    except Exception as exc:  # noqa: BLE001 - a failing env factory is reported like a failing step
        tb = traceback.format_exc()
        print(tb, file=sys.stderr, flush=True)
        try:
            conn.send(("error", (type(exc).__name__, str(exc), tb)))
        except (BrokenPipeError, OSError):
            pass
    finally:
        stop.set()
        _skip_compile_wait()  # the parent closes workers on a deadline (close(timeout=...))
        if env is not None and hasattr(env, "close"):  # make_batched's simulator holds nothing to close
            try:
                env.close()
            except Exception:  # noqa: BLE001 - closing is best effort; the error is logged
                traceback.print_exc()
        print(f"[worker {index}] exiting", flush=True)
        conn.close()


def _skip_compile_wait() -> None:
    """A closing worker does not wait at exit for a background compile of the simulator's kernels
    (``sim.runtime.warmup.skip_exit_wait``); only if the simulator's kernels were ever imported."""
    warmup = sys.modules.get("sc2_envs.sim.runtime.warmup")
    if warmup is not None:
        warmup.skip_exit_wait()


# ------------------------------------------------------------------------------------------------
# parent side


class SubprocVectorEnv:
    """Batched envs in subprocess workers, concatenated along the env axis (``B = sum(B_w)``).

    Args:
        env_fns: one picklable zero-argument factory per worker (top-level functions or
            ``functools.partial`` of them, as ``spawn`` requires), each returning an env with the
            batched contract. All must have the same ``n_agents``, ``n_actions``, ``obs_shape``,
            ``state_shape``, ``map_name``, ``episode_limit`` and observation / state layouts
            (``ValueError`` naming what differs otherwise).
        context: multiprocessing start method (``"spawn"``, ``"forkserver"`` or ``"fork"``).
        log_dir: folder for ``worker_<w>.log``; a new temporary folder if None.
        device: torch device of the returned tensors.
        heartbeat_interval: seconds between worker heartbeats.
        heartbeat_timeout: a heartbeat older than this (seconds) means the worker is stalled.
        timeout: seconds to wait for a reply to ``reset`` / ``step`` / ``call``; None waits forever
            (the heartbeat still catches frozen workers).
        startup_timeout: seconds to wait for every worker to build its env.
        poll_interval: seconds between liveness checks while waiting.
        torch_threads: ``torch.set_num_threads`` in each worker (None leaves it and does not import torch).
        actions_as: how a worker hands actions to its env: ``"torch"`` (an int64 CPU tensor, the
            batched contract) or ``"numpy"`` (an int64 array, for NumPy envs; spares each worker
            the ~2 s torch import).

    Attributes:
        num_envs, n_agents, n_enemies, n_actions, obs_size, state_size, episode_limit, map_name,
        agent_unit_types: as in the simulator; ``worker_num_envs`` lists ``B_w``; ``log_paths`` the
        log files; ``processes`` the ``multiprocessing.Process`` objects.

    Raises:
        WorkerError, WorkerDied, WorkerStalled: from any method that talks to the workers.
    """

    def __init__(
        self,
        env_fns: Sequence[Callable[[], Any]],
        *,
        context: str = "spawn",
        log_dir: str | os.PathLike | None = None,
        device: str = "cpu",
        heartbeat_interval: float = 0.5,
        heartbeat_timeout: float = 5.0,
        timeout: float | None = 600.0,
        startup_timeout: float = 300.0,
        poll_interval: float = 0.1,
        torch_threads: int | None = 1,
        actions_as: str = "torch",
    ) -> None:
        env_fns = list(env_fns)
        if not env_fns:
            raise ValueError("env_fns is empty; expected at least one env factory")
        bad = [i for i, f in enumerate(env_fns) if not callable(f)]
        if bad:
            raise TypeError(f"env_fns[{bad[0]}] is {env_fns[bad[0]]!r}; expected a callable returning an env")
        if actions_as not in ("torch", "numpy"):
            raise ValueError(f"actions_as={actions_as!r}; expected 'torch' or 'numpy'")
        if heartbeat_timeout <= heartbeat_interval:
            raise ValueError(f"heartbeat_timeout={heartbeat_timeout} must exceed heartbeat_interval={heartbeat_interval}")
        self._closed = False
        self._broken: SubprocVectorEnvError | None = None
        self.processes: list[mp.process.BaseProcess] = []
        self._conns: list[Any] = []
        self.device = device
        self.heartbeat_timeout = float(heartbeat_timeout)
        self.timeout = timeout
        self.poll_interval = float(poll_interval)
        self.log_dir = Path(log_dir) if log_dir is not None else Path(tempfile.mkdtemp(prefix="sc2_envs_workers_"))
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.log_paths = [self.log_dir / f"worker_{w}.log" for w in range(len(env_fns))]
        ctx = mp.get_context(context)
        # 0.0 = no beat yet: interpreter start-up and unpickling in a spawned worker can take seconds,
        # which startup_timeout bounds; the heartbeat is checked from the first beat on.
        self._heartbeats = [ctx.Value("d", 0.0, lock=False) for _ in env_fns]
        try:
            for w, fn in enumerate(env_fns):
                parent, child = ctx.Pipe()
                proc = ctx.Process(
                    target=_worker,
                    name=f"sc2_envs-worker-{w}",
                    daemon=True,
                    args=(
                        w,
                        fn,
                        child,
                        str(self.log_paths[w]),
                        self._heartbeats[w],
                        heartbeat_interval,
                        torch_threads,
                        actions_as,
                    ),
                )
                proc.start()
                child.close()
                self.processes.append(proc)
                self._conns.append(parent)
            ready = self._gather(range(len(env_fns)), startup_timeout, "startup")
        except BaseException:
            self.close()
            raise
        self.worker_num_envs = [r["num_envs"] for r in ready]
        self._offsets = np.cumsum([0] + self.worker_num_envs).tolist()
        self.num_envs = self._offsets[-1]
        self._env_info = ready[0]["env_info"]
        # the map and the layouts too: terran_5_vs_5 and zerg_5_vs_5 (or 3m with other feature options) have
        # equal sizes, and map_name, episode_limit and agent_unit_types are reported from worker 0 alone
        keys = ("n_agents", "n_actions", "obs_shape", "state_shape", "map_name", "episode_limit", "obs_layout", "state_layout")
        for w, r in enumerate(ready[1:], start=1):
            diff = [k for k in keys if r["env_info"].get(k) != self._env_info.get(k)]
            if diff:
                self.close()
                raise ValueError(
                    f"worker {w}'s env differs from worker 0's in {diff}: "
                    f"{[r['env_info'].get(k) for k in diff]} vs {[self._env_info.get(k) for k in diff]}"
                )
        info = self._env_info
        self.n_agents, self.n_actions = int(info["n_agents"]), int(info["n_actions"])
        self.obs_size, self.state_size = int(info["obs_shape"]), int(info["state_shape"])
        self.n_enemies = int(info.get("n_enemies", self.n_actions - 6))
        self.episode_limit = info.get("episode_limit")
        self.map_name = info.get("map_name")
        self.agent_unit_types = info.get("agent_unit_types")

    # -- waiting ---------------------------------------------------------------------------------
    def _gather(self, workers: Sequence[int], timeout: float | None, what: str) -> list[Any]:
        """Wait for one reply from each worker in ``workers``, watching all of them for failures."""
        pending = {self._conns[w]: w for w in workers}
        replies: dict[int, Any] = {}
        start = time.monotonic()
        while pending:
            ready = wait(list(pending), timeout=self.poll_interval)
            for conn in ready:
                w = pending.pop(conn)
                try:
                    status, payload = conn.recv()
                except (EOFError, OSError):
                    self.processes[w].join(timeout=1.0)
                    raise self._fail(self._died(w, what)) from None
                if status == "error":
                    name, msg, tb = payload
                    raise self._fail(
                        WorkerError(
                            f"worker {w} raised {name} during {what}: {msg}\n--- worker {w} traceback ---\n{tb}"
                            f"--- log: {self.log_paths[w]}",
                            w,
                            self.log_paths[w],
                            tb,
                        )
                    )
                replies[w] = payload
            now = time.monotonic()
            for w in pending.values():
                if not self.processes[w].is_alive():
                    # A reply may have been sent just before exiting; read it on the next pass.
                    if self._conns[w].poll():
                        continue
                    self.processes[w].join(timeout=1.0)
                    raise self._fail(self._died(w, what))
                beat = self._heartbeats[w].value
                age = now - beat
                if beat > 0.0 and age > self.heartbeat_timeout:
                    raise self._fail(
                        self._stalled(w, what, f"no heartbeat for {age:.1f} s (heartbeat_timeout={self.heartbeat_timeout} s)")
                    )
            if timeout is not None and now - start > timeout and pending:
                w = next(iter(pending.values()))
                raise self._fail(self._stalled(w, what, f"no reply within {timeout} s (timeout)"))
        return [replies[w] for w in workers]

    def _died(self, w: int, what: str) -> WorkerDied:
        code = self.processes[w].exitcode
        return WorkerDied(
            f"worker {w} (pid {self.processes[w].pid}) died during {what}: {describe_exit(code)}. "
            f"Last lines of {self.log_paths[w]}:\n{log_tail(self.log_paths[w])}",
            w,
            self.log_paths[w],
            code,
        )

    def _stalled(self, w: int, what: str, why: str) -> WorkerStalled:
        proc = self.processes[w]
        dumped = proc.is_alive() and dump_stack(proc.pid, self.log_paths[w], timeout=1.0, settle=0.05)
        note = (
            "stack dump (faulthandler, SIGUSR1) is in the lines below"
            if dumped
            else "the worker wrote no stack dump on SIGUSR1 (frozen or stopped process)"
        )
        return WorkerStalled(
            f"worker {w} (pid {proc.pid}) stalled during {what}: {why}; {note}. "
            f"Last lines of {self.log_paths[w]}:\n{log_tail(self.log_paths[w], 2 * LOG_TAIL_LINES)}",
            w,
            self.log_paths[w],
        )

    def _fail(self, err: SubprocVectorEnvError) -> SubprocVectorEnvError:
        self._broken = err
        return err

    def _check_usable(self) -> None:
        if self._closed:
            raise RuntimeError("SubprocVectorEnv is closed")
        if self._broken is not None:
            raise RuntimeError(
                f"SubprocVectorEnv is broken by an earlier worker failure; close() it. "
                f"Earlier failure: {self._broken.args[0].splitlines()[0]}"
            )

    def _send(self, w: int, message: tuple) -> None:
        try:
            self._conns[w].send(message)
        except (BrokenPipeError, OSError):
            self.processes[w].join(timeout=1.0)
            raise self._fail(self._died(w, f"send of {message[0]!r}")) from None

    def _request(self, messages: Sequence[tuple], what: str) -> list[Any]:
        self._check_usable()
        for w, msg in enumerate(messages):
            self._send(w, msg)
        return self._gather(range(len(messages)), self.timeout, what)

    def _concat(self, parts: list[dict]) -> dict:
        import torch

        return {k: torch.as_tensor(np.concatenate([p[k] for p in parts], axis=0), device=self.device) for k in parts[0]}

    # -- API -------------------------------------------------------------------------------------
    def reset(self, seed: Any = None) -> dict:
        """Reset every env.

        Args:
            seed: as ``make_batched``'s ``reset``: an ``int`` or ``numpy.random.SeedSequence`` ``s``
                gives env ``b`` of the concatenation the stream of ``SeedSequence(s, spawn_key=(b,))``
                (each worker gets the ``SeedSequence`` children of its own global env indices), so the
                battles equal one ``make_batched(map, num_envs=B).reset(seed=s)``; a sequence of
                ``num_envs`` per-env seeds is split among the workers; ``None`` continues each
                worker's streams. Worker envs must accept a list of ``SeedSequence`` (the simulator
                and the sc2 backend do).

        Returns:
            dict of tensors on ``device``: ``obs [B, N, obs_size] float32``, ``state [B, S] float32``,
            ``avail_actions [B, N, A] bool``.

        Raises:
            TypeError / ValueError: a seed of another type, a negative int, or a list of the wrong length.
        """
        from sc2_envs.sim.rng import split_for_workers

        seeds = split_for_workers(seed, self.worker_num_envs)
        return self._concat(self._request([("reset", s) for s in seeds], "reset"))

    def step(self, actions: Any) -> dict:
        """Step every env once.

        Args:
            actions: ``[B, N]`` integer tensor or array; rows ``offset_w : offset_w + B_w`` go to worker ``w``.

        Returns:
            the concatenation of the workers' step dicts (keys and shapes of ``make_batched``'s ``step``).
        """
        if hasattr(actions, "detach"):
            actions = actions.detach().cpu().numpy()
        actions = np.asarray(actions)
        if actions.shape != (self.num_envs, self.n_agents):
            raise ValueError(f"actions has shape {actions.shape}; expected ({self.num_envs}, {self.n_agents})")
        if not np.issubdtype(actions.dtype, np.integer):
            raise ValueError(f"actions dtype {actions.dtype}; expected an integer dtype (int64)")
        parts = [actions[a:b].astype(np.int64) for a, b in zip(self._offsets[:-1], self._offsets[1:], strict=True)]
        return self._concat(self._request([("step", p) for p in parts], "step"))

    def call(self, name: str, *args: Any, **kwargs: Any) -> list[Any]:
        """Call ``env.<name>(*args, **kwargs)`` in every worker; returns the per-worker results."""
        return self._request([("call", (name, args, kwargs))] * len(self.processes), f"call {name!r}")

    def get_env_info(self) -> dict:
        """Worker 0's ``get_env_info()`` (all workers were checked to match at startup)."""
        return dict(self._env_info)

    def get_stats(self) -> dict:
        """Counts summed over workers; ``win_rate = battles_won / battles_game`` (0.0 before any game)."""
        stats = self.call("get_stats")
        total = {k: sum(s[k] for s in stats) for k in stats[0] if k != "win_rate"}
        total["win_rate"] = total["battles_won"] / total["battles_game"] if total.get("battles_game") else 0.0
        return total

    def close(self, timeout: float = 5.0) -> None:
        """Stop every worker; returns with no child process left. Safe to call more than once.

        Healthy workers get ``close`` (they close their env) and ``timeout`` seconds to exit; a
        stalled worker gets SIGTERM at once (it unwinds and closes its env if its interpreter
        runs). Whatever is left is killed with SIGKILL, on POSIX together with its process group,
        which holds anything the env launched.
        """
        if self._closed:
            return
        self._closed = True
        stalled = self._broken.worker if isinstance(self._broken, WorkerStalled) else None
        for w, proc in enumerate(self.processes):
            if not proc.is_alive():
                continue
            if w == stalled:
                proc.terminate()
                if hasattr(signal, "SIGCONT"):
                    os.kill(proc.pid, signal.SIGCONT)  # a stopped worker runs again and handles SIGTERM
                continue
            try:
                self._conns[w].send(("close", None))
            except (BrokenPipeError, OSError):
                proc.terminate()
        deadline = time.monotonic() + timeout
        for w, proc in enumerate(self.processes):
            # A stalled worker stuck in native code may never handle SIGTERM: 1 s, not the full timeout.
            proc.join(timeout=1.0 if w == stalled else max(0.0, deadline - time.monotonic()))
        for w, proc in enumerate(self.processes):
            if proc.is_alive() and w != stalled:
                proc.terminate()
                proc.join(timeout=1.0)
            if proc.is_alive():
                proc.kill()  # SIGKILL also ends a stopped (SIGSTOP) process
                proc.join()
            kill_process_group(proc.pid)
        for conn in self._conns:
            conn.close()
        for proc in self.processes:
            proc.close()

    def __enter__(self) -> SubprocVectorEnv:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        if not getattr(self, "_closed", True):
            try:
                self.close()
            except Exception:  # noqa: BLE001 - interpreter shutdown may have torn down modules
                pass


def make_subproc_batched(map_name: str, num_workers: int, envs_per_worker: int = 1, **kwargs: Any) -> SubprocVectorEnv:
    """``num_workers`` processes, each running ``sc2_envs.make_batched(map_name, num_envs=envs_per_worker)``.

    Args:
        map_name: SMAC map name.
        num_workers: number of worker processes.
        envs_per_worker: ``B_w`` of every worker; ``num_envs = num_workers * envs_per_worker``.
        **kwargs: ``SubprocVectorEnv`` keywords (``context``, ``log_dir``, ``device``, timeouts,
            ``torch_threads``); ``seed`` (int, ``SeedSequence``, per-env list or None) is split by
            global env index, so worker ``w``'s env ``i`` is env ``w * envs_per_worker + i`` of one
            ``make_batched(map_name, num_envs=num_workers * envs_per_worker, seed=seed)``; every
            other keyword goes to ``make_batched`` in the workers (``autoreset``,
            ``lenient_actions``, SMAC options). Worker envs run on CPU.

    Returns:
        SubprocVectorEnv: its battles equal those of the in-process batch with the same seed, at
        construction and after ``reset(seed=s)``.
    """
    from sc2_envs.sim.env import make_batched

    if not isinstance(num_workers, int) or isinstance(num_workers, bool) or num_workers < 1:
        raise ValueError(f"num_workers must be a positive int, got {num_workers!r}")
    own = {
        "context",
        "log_dir",
        "device",
        "heartbeat_interval",
        "heartbeat_timeout",
        "timeout",
        "startup_timeout",
        "poll_interval",
        "torch_threads",
        "actions_as",
    }
    if not isinstance(envs_per_worker, int) or isinstance(envs_per_worker, bool) or envs_per_worker < 1:
        raise ValueError(f"envs_per_worker must be a positive int, got {envs_per_worker!r}")
    vec_kwargs = {k: kwargs.pop(k) for k in list(kwargs) if k in own}
    from sc2_envs.sim.rng import split_for_workers

    seeds = split_for_workers(kwargs.pop("seed", None), [envs_per_worker] * num_workers)
    fns = [partial(make_batched, map_name, num_envs=envs_per_worker, seed=s, **kwargs) for s in seeds]
    return SubprocVectorEnv(fns, **vec_kwargs)
