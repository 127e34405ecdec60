"""First use without the wait: the numba step compiles in a background thread while the torch path plays.

With an empty cache (a fresh install, an upgrade, an edit of ``sc2_envs.sim``) the numba step of a
family (SMAC v1 maps, SMACv2 scenarios) compiles for 15-30 CPU seconds on a 2-core machine (docs/speed.md,
"First use"), most of it Numba's front end, which no setting shortens. A ``kernel="auto"`` simulator
therefore does not wait for it: when this process has not compiled the family and Numba's on-disk
cache holds no machine code of it for this CPU (:func:`family_ready`), it starts on the torch path,
which plays the same game bit for bit (``tests/test_kernel_step.py``, ``tests/test_kernel_v2.py``),
and one background thread per family and process (:func:`job`) compiles the kernels by playing a
small private simulator of the same configuration (:func:`play_until_reset`) until an auto-reset
has run, so every kernel a step can call is compiled. Each simulator switches to the numba path at
its first ``reset`` or ``step`` after that (``SMACSim.wait_for_kernel`` waits for it). Since the two
paths give equal states and outputs, where the switch falls changes no result.

Measured on the idle 2-core machine, 2s3z at 1 env, empty cache (``python benchmarks/kernel_first_use.py
--background --configs 2s3z:1 2s3z:256 --rounds 2``): the first step returned 0.2 s after
``make_batched`` instead of 15.3 s; the numba path was in effect from 16.0 s (15.3 s in the foreground),
and the torch path played 1,469 env steps meanwhile. A whole short first run costs about the same
either way (docs/speed.md, "First use"); what the background buys is that nothing waits before the first step.

Processes that start together (``SubprocVectorEnv`` workers, A3C actors, several runs) do not all
compile the same family at once: one holds a file lock beside the cache while it compiles, and the
others wait for it with their simulators on the torch path, then load its machine code from the cache
(:func:`family_lock`).

A forked child must not inherit a compile under way (Numba's compiler lock and state would belong to
a thread it does not have), so a fork waits for it first; an exiting process waits for it too (its
cache would be lost), except worker processes closed on a deadline (:func:`skip_exit_wait`).

``SC2_ENVS_BACKGROUND_COMPILE=0`` restores the foreground compile (the test suite sets it, so that a
test of the numba path never runs on the torch path while a compile is under way).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
import threading
import time
import traceback
from collections.abc import Callable

ENV_VAR = "SC2_ENVS_BACKGROUND_COMPILE"
"""Environment variable: ``"0"`` compiles in the foreground (the first call waits), ``"1"`` (the default) in the background."""


def enabled() -> bool:
    """Whether ``kernel="auto"`` compiles in the background (``$SC2_ENVS_BACKGROUND_COMPILE``, default ``"1"``).

    Raises:
        ValueError: the variable is set to something other than ``"0"`` or ``"1"``.
    """
    value = os.environ.get(ENV_VAR, "").strip() or "1"  # set but empty: as if unset
    if value not in ("0", "1"):
        raise ValueError(f"{ENV_VAR}={value!r}: expected '0' (compile in the foreground) or '1' (in the background)")
    return value == "1"


def _step_dispatcher(v2: bool):
    from sc2_envs.sim.numba.step import step_dispatcher

    return step_dispatcher(v2)


def family_ready(v2: bool) -> bool:
    """Whether the step kernel of a family (``v2``: SMACv2 scenarios, else SMAC v1 maps) needs no compile:
    compiled in this process, or in Numba's on-disk cache for this machine's CPU and the current
    sources (``sim.runtime.cache``'s stamp). The step is the proxy for the family's other kernels
    (observe, auto-reset), which are compiled and cached with it."""
    disp = _step_dispatcher(v2)
    if disp.signatures:
        return True
    try:  # Numba's cache index (internal API): on any surprise, say "not ready" and compile in the background
        index = disp._cache._cache_file._load_index()
        magic = disp.targetctx.codegen().magic_tuple()
        return any(key[1] == magic for key in index)
    except Exception:
        return False


class Job:
    """One background compile of a family in one process.

    Attributes:
        v2: the family (SMACv2 scenarios or SMAC v1 maps).
        pid: the process it runs in (a forked child or an unpickled copy of a simulator starts its own).
        error: the exception text (traceback) if the compile failed, else None.
        seconds: wall seconds it took, once finished.
        waiting_for_lock: True while it waits for another process's compile of the family (:func:`family_lock`);
            the exit wait skips such a job, since the other process writes the cache.
    """

    def __init__(self, v2: bool, warm: Callable[[], object], stream=None):
        self.v2, self.pid = v2, os.getpid()
        self.error: str | None = None
        self.seconds: float | None = None
        self.waiting_for_lock = False  # blocked on another process's compile (family_lock), not compiling
        self._done = threading.Event()
        self._out = stream if stream is not None else sys.stderr
        self._thread = threading.Thread(target=self._run, args=(warm,), name="sc2_envs-compile", daemon=True)

    @property
    def family(self) -> str:
        return "SMACv2 scenarios" if self.v2 else "SMAC v1 maps"

    def _say(self, text: str) -> None:
        try:  # a closed or broken stderr must not stop the compile from being marked finished
            self._out.write(f"sc2_envs: {text}\n")
            self._out.flush()
        except (OSError, ValueError):
            pass

    def start(self) -> Job:
        from sc2_envs.sim.runtime.first_use import WHEN_COMPILED

        self._say(
            f"compiling the simulator's numba step kernel ({self.family}) in a background thread ({WHEN_COMPILED}); "
            f"until it is ready the torch path plays the same game, bit for bit, more slowly (set {ENV_VAR}=0 to wait "
            f"for it instead)"
        )
        self._thread.start()
        return self

    def _run(self, warm: Callable[[], object]) -> None:
        from sc2_envs.sim.runtime.first_use import quiet_compile_notices

        t0 = time.perf_counter()
        waited = cached = False

        def on_wait(holder: str) -> None:
            self.waiting_for_lock = True
            self._say(
                f"another process ({holder}) is compiling the same numba step kernel ({self.family}); this one waits "
                f"for it and then loads the kernel from the on-disk cache (the torch path plays meanwhile)"
            )

        try:
            with family_lock(self.v2, on_wait) as waited, quiet_compile_notices():
                self.waiting_for_lock = False
                cached = waited and family_ready(self.v2)  # the holder may have died before writing the cache
                warm()
        except BaseException:
            self.error = traceback.format_exc()
        self.seconds = time.perf_counter() - t0
        try:
            if self.error is None:
                if cached:
                    how = "loaded from the on-disk cache (found there after the wait)"
                elif waited:
                    how = "compiled here (the process it waited for left no cache) and cached on disk"
                else:
                    how = "cached on disk"
                self._say(
                    f"numba step kernel ({self.family}) ready after {self.seconds:.0f} s and {how}; simulators "
                    f"switch to it at their next reset or step"
                )
            else:
                self._say(
                    f"compiling the numba step kernel ({self.family}) failed after {self.seconds:.0f} s; the torch path "
                    f"stays in effect (same game, slower). The error:\n{self.error}"
                )
        finally:
            self._done.set()

    def finished(self, timeout: float | None = 0.0) -> bool:
        """Whether the compile has ended (successfully or not), waiting up to ``timeout`` seconds (None: until it ends)."""
        if timeout is not None and timeout <= 0:
            return self._done.is_set()
        return self._done.wait(timeout)


@contextlib.contextmanager
def family_lock(v2: bool, on_wait: Callable[[str], None] | None = None):
    """Hold the cross-process lock of family ``v2``'s compile for the body; yields whether it had to wait.

    Why: worker processes that start together (``SubprocVectorEnv``, A3C actors, several training runs)
    would each compile the same kernels at once, 15-30 CPU seconds each, on cores their envs need. With
    the lock one compiles while the others wait (idle, their simulators on the torch path) and then load
    the machine code from Numba's on-disk cache in about a second. The lock is ``fcntl.flock`` on a file
    beside the kernels' cache (``sc2_envs_compile_v1.lock`` / ``_v2.lock``), released when the body ends
    or its process dies; where there is no ``fcntl`` (Windows) or the file cannot be opened, the body
    runs without it, as before, and so it does where ``flock`` itself fails (``ENOSYS`` / ``ENOLCK``: Lustre,
    NFS without lockd). ``on_wait`` gets the holder (``"pid N"``) before a blocking wait.
    """
    fd = _open_lock_file(v2)
    if fd is None:
        yield False
        return
    import fcntl

    _lock_fds.add(fd)  # a forked child closes its copy (:func:`_after_fork_in_child`), else it would hold the lock
    try:
        waited = False
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                if on_wait is not None:
                    holder = os.pread(fd, 32, 0).decode(errors="replace").strip()
                    on_wait(f"pid {holder}" if holder.isdigit() else "pid unknown")
                fcntl.flock(fd, fcntl.LOCK_EX)
                waited = True
            os.ftruncate(fd, 0)
            os.pwrite(fd, str(os.getpid()).encode(), 0)
        except OSError:  # a file system without flock (ENOSYS, ENOLCK: Lustre, NFS without lockd): run unlocked
            pass
        yield waited
    finally:
        _lock_fds.discard(fd)
        os.close(fd)  # releases the lock (before the job is marked finished, so no fork inherits it)


def _open_lock_file(v2: bool) -> int | None:
    """A descriptor of family ``v2``'s lock file in the step kernel's cache directory, or None (no
    ``fcntl``, or the directory is unknown or not writable: the compile then runs unlocked)."""
    try:
        import fcntl  # noqa: F401  (POSIX only)

        folder = _step_dispatcher(v2)._cache._cache_path  # Numba's cache locator (internal API)
        os.makedirs(folder, exist_ok=True)  # numba makes it only when it first saves
        return os.open(os.path.join(folder, f"sc2_envs_compile_{'v2' if v2 else 'v1'}.lock"), os.O_RDWR | os.O_CREAT, 0o666)
    except Exception:
        return None


_lock_fds: set[int] = set()
"""Descriptors of lock files this process has open (:func:`family_lock`)."""

_jobs: dict[tuple[int, bool], Job] = {}
_lock = threading.Lock()


def job(v2: bool, warm: Callable[[], object], stream=None) -> Job:
    """This process's background compile of family ``v2``, started if there is none yet (``warm()``
    compiles the family's kernels, e.g. :func:`play_until_reset` on a private simulator that the
    caller builds, so this module never imports the simulator): every simulator of the family waits on the same one. In a
    forked child, the parent's finished compile serves: its machine code came with the fork, and a compile that failed
    there would fail again here (the child stays on the torch path without retrying)."""
    global _hooks
    pid = os.getpid()
    with _lock:
        j = _jobs.get((pid, v2))
        if j is not None:
            return j
        for (p, family), inherited in _jobs.items():
            if family == v2 and p != pid and inherited.finished():
                return inherited
        if not _hooks:  # before the job exists, so that no fork can slip between the two
            atexit.register(finish_at_exit)
            if hasattr(os, "register_at_fork"):
                os.register_at_fork(before=_finish_before_fork, after_in_child=_after_fork_in_child)
            _hooks = True
        j = _jobs[(pid, v2)] = Job(v2, warm, stream)
    return j.start()  # outside the lock: it writes to stderr, which can block


_hooks = False
_forked_mid_compile = False


def _after_fork_in_child() -> None:
    """In a forked child: a fresh lock (the parent's may have been held by another thread at the fork), and
    note whether a compile was under way in the parent (its wait cut short by Ctrl-C), in which case
    this process must not touch Numba's compiler: see :func:`numba_unusable`."""
    global _lock, _forked_mid_compile
    _lock = threading.Lock()
    for fd in list(_lock_fds):  # flock belongs to the open file, shared with the parent: the child must not keep it
        try:
            os.close(fd)
        except OSError:
            pass
    _lock_fds.clear()
    parent = os.getppid()
    if any(j.pid == parent and not j.finished() for j in list(_jobs.values())):
        _forked_mid_compile = True


def numba_unusable() -> str | None:
    """Why this process cannot compile or load Numba kernels, or None. Set in a child forked while a
    background compile was under way (a Ctrl-C ended the fork's wait): Numba's compiler lock and
    llvmlite's belong to a thread the child does not have, so the first compile or cache lookup would
    wait forever (found in review). Its simulators stay on the torch path (same game)."""
    if _forked_mid_compile:
        return "this process was forked while the simulator's kernels were compiling in the parent"
    return None


def _pending(other_threads_only: bool = False) -> list[Job]:
    """This process's unfinished compiles (``other_threads_only``: run by a thread other than the caller)."""
    me, pid = threading.current_thread(), os.getpid()
    return [
        j for j in list(_jobs.values()) if j.pid == pid and not (other_threads_only and j._thread is me) and not j.finished()
    ]


def _wait_for(pending: list[Job], message: str, stream=None, interrupted: str = "background compile abandoned") -> None:
    """Say ``message`` on ``stream`` (default stderr), then wait for ``pending`` to finish; a Ctrl-C (or a
    SIGTERM handler's SystemExit) ends the wait, saying ``interrupted``."""
    out = stream if stream is not None else sys.stderr
    out.write(f"sc2_envs: {message}\n")
    out.flush()
    try:
        for j in pending:
            # short waits: a Ctrl-C delivered to the compile thread instead of this one runs its handler
            # only when this thread runs bytecode again (a newcomer's Ctrl-C was once ignored for 13 s)
            while not j.finished(timeout=0.2):
                pass
    except (KeyboardInterrupt, SystemExit):
        out.write(f"sc2_envs: {interrupted}\n")
        out.flush()


def finish_at_exit(stream=None) -> None:
    """At interpreter exit, wait for this process's unfinished compiles, saying so (Ctrl-C skips the wait).

    Why: the compile thread is a daemon, and a script shorter than the compile (a smoke test, a short
    evaluation) would end it before Numba wrote its cache, so every such run would start the compile
    anew and never reach the numba path. Waiting once is what the foreground compile cost up front."""
    # a job still waiting for another process's lock writes no cache of its own: the holder does
    pending = [j for j in _pending() if not j.waiting_for_lock]
    if pending and _wait_at_exit:
        _wait_for(
            pending,
            "waiting for the background compile of the numba step kernel to finish, so that later runs load it from "
            "the on-disk cache (Ctrl-C skips this; the next run then compiles it again)",
            stream,
        )


_wait_at_exit = True


def skip_exit_wait() -> None:
    """Let this process exit without waiting for an unfinished compile (:func:`finish_at_exit`): for worker
    processes whose parent closes them on a deadline (``sc2_envs.vector``), where the wait would run
    into the parent's terminate. Their cache is then written only by a run that outlasts the compile."""
    global _wait_at_exit
    _wait_at_exit = False


def _finish_before_fork(stream=None) -> None:
    """Before ``os.fork`` (``multiprocessing``'s fork start method included), wait for this process's
    unfinished compiles, saying so.

    Why: a child forked mid-compile inherits Numba's compiler state held by a thread that does not
    exist there, so any compile in the child fails ("compiler re-entrant to the same function
    signature") or waits forever on the compiler lock (found in review)."""
    pending = _pending(other_threads_only=True)
    if pending:  # a Ctrl-C cannot stop the fork from here (CPython forks anyway): the child then keeps off Numba
        _wait_for(
            pending,
            "a fork waits for the background compile of the numba step kernel to finish (a child process cannot "
            "inherit a compile under way; if interrupted, the child plays on the torch path)",
            stream,
            interrupted="fork wait interrupted: the fork goes ahead (a fork hook cannot stop it) and the child plays on "
            "the torch path",
        )


def compiling() -> bool:
    """Whether a background compile of this process is under way (its simulators still play on the torch path)."""
    return bool(_pending())


def compiling_elsewhere() -> bool:
    """Whether a background compile of this process is under way in a thread other than the caller's (or
    this process cannot compile at all, :func:`numba_unusable`): a first call of another Numba function
    here would wait for Numba's compiler lock until it ends."""
    return _forked_mid_compile or bool(_pending(other_threads_only=True))


def play_until_reset(sim, random_actions: Callable, max_steps: int = 100_000) -> int:
    """Reset ``sim`` (a numba-path ``SMACSim`` with ``autoreset=True``) and step it with uniformly random
    available actions until an episode has ended and been reset, so that every kernel a step can call
    has run (reset's observe, the step, the auto-reset and its observe); returns the steps taken.

    Args:
        sim: the simulator to play (the caller builds it: this module imports no simulator).
        random_actions: ``(avail_actions [B, N] bool, generator) -> [B, N] int64`` available actions
            (``sc2_envs.policies.random_actions``).
        max_steps: a guard against a bug; an episode ends by ``episode_limit`` at the latest.

    The actions come from a generator of its own (seed 0): the process's global random state is not
    touched.

    Raises:
        RuntimeError: no episode ended within ``max_steps`` steps.
    """
    import torch

    gen = torch.Generator().manual_seed(0)
    out = sim.reset(seed=0)
    for steps in range(1, max_steps + 1):
        out = sim.step(random_actions(out["avail_actions"], gen))
        if bool((out["terminated"] | out["truncated"]).any()):
            return steps
    raise RuntimeError(f"no episode of the warm-up simulator ended within {max_steps} steps")


__all__ = [
    "ENV_VAR",
    "Job",
    "compiling",
    "compiling_elsewhere",
    "enabled",
    "family_lock",
    "family_ready",
    "finish_at_exit",
    "job",
    "play_until_reset",
]
