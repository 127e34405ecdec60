"""Supervision of worker processes: own log file, heartbeat, stack dumps, exit reports, clean kills.

Used by :mod:`sc2_envs.vector.subproc` (env workers) and :mod:`sc2_envs.vector.actor_pool`
(actors of asynchronous learners). The worker side sets up a process so that every failure can be
reported from the parent within seconds; the parent side turns what it sees into a message.

Worker side:

* :func:`setup_worker_process` points file descriptors 1 and 2 at the worker's own log file (so C
  extensions and child processes such as StarCraft II write there too, never on a descriptor shared
  with other workers), optionally starts a new process group and makes SIGTERM unwind through
  ``finally`` blocks, and enables ``faulthandler`` for crashes and for SIGUSR1 (a stack dump of
  every thread on request);
* :func:`start_heartbeat` starts a daemon thread writing ``time.monotonic()`` (seconds) to a shared
  value every ``interval`` seconds; it also ends an orphaned worker whose parent died without
  closing it.

Parent side: :func:`dump_stack` (SIGUSR1, then wait until the log grows), :func:`log_tail`,
:func:`describe_exit`, :func:`kill_process_group`.

The failure modes addressed are those of Gymnasium's ``AsyncVectorEnv`` reported in openai/gym#1544,
openai/gym#3281 and Farama-Foundation/Gymnasium#222 (silent hangs, lost worker output, orphans).
"""

from __future__ import annotations

import faulthandler
import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import IO, Any

__all__ = [
    "LOG_TAIL_LINES",
    "describe_exit",
    "dump_stack",
    "exit_on_sigterm",
    "heartbeat_loop",
    "kill_process_group",
    "log_tail",
    "redirect_output",
    "setup_worker_process",
    "start_heartbeat",
]

LOG_TAIL_LINES = 20
"""Log lines quoted in a report of a dead worker (twice as many when a stack dump is quoted)."""


# ------------------------------------------------------------------------------------------------
# worker side


def heartbeat_loop(value: Any, interval: float, stop: threading.Event) -> None:
    """Write ``time.monotonic()`` to ``value.value`` every ``interval`` seconds until ``stop`` is set.

    Args:
        value: a shared double (``multiprocessing.Value("d")``) the parent reads.
        interval: seconds between beats.
        stop: ends the loop.

    When the parent process has died (the parent pid changed), sends SIGTERM to this process so
    that it unwinds (closing its env) instead of living on as an orphan, and returns.
    """
    parent = os.getppid()
    while not stop.is_set():
        value.value = time.monotonic()
        if os.getppid() != parent:
            os.kill(os.getpid(), signal.SIGTERM)
            return
        stop.wait(interval)


def start_heartbeat(value: Any, interval: float) -> threading.Event:
    """Start :func:`heartbeat_loop` in a daemon thread named ``heartbeat``; returns the event that stops it."""
    stop = threading.Event()
    threading.Thread(target=heartbeat_loop, args=(value, interval, stop), daemon=True, name="heartbeat").start()
    return stop


def exit_on_sigterm(signum: int, frame: Any) -> None:
    """SIGTERM handler: raise ``SystemExit(128 + signum)`` so that ``finally`` blocks run."""
    raise SystemExit(128 + signum)


def redirect_output(log_path: str | os.PathLike) -> IO[str]:
    """Point fds 1 and 2 (and so C code and child processes) at ``log_path`` (appended, line-buffered).

    Returns:
        the open log file (keep it open for the life of the process; ``faulthandler`` writes to it).
    """
    log = open(log_path, "a", buffering=1, encoding="utf-8", errors="replace")  # noqa: SIM115 - lives with the process
    sys.stdout.flush()
    sys.stderr.flush()
    os.dup2(log.fileno(), 1)
    os.dup2(log.fileno(), 2)
    for stream in (sys.stdout, sys.stderr):
        if stream is not None and hasattr(stream, "reconfigure"):
            stream.reconfigure(line_buffering=True)
    return log


def setup_worker_process(
    log_path: str | os.PathLike, *, own_process_group: bool = True, handle_sigterm: bool = True
) -> IO[str]:
    """Prepare a worker process for supervision; call first thing in the worker.

    Args:
        log_path: the worker's own log file (see :func:`redirect_output`).
        own_process_group: start a new process group (POSIX), so that the parent can also kill what
            the worker launched (StarCraft II) with :func:`kill_process_group`.
        handle_sigterm: install :func:`exit_on_sigterm`.

    Returns:
        the open log file. ``faulthandler`` writes crash tracebacks to it, and on SIGUSR1 (POSIX) the
        stack of every thread.
    """
    log = redirect_output(log_path)
    if own_process_group and hasattr(os, "setpgrp"):
        os.setpgrp()
    if handle_sigterm:
        signal.signal(signal.SIGTERM, exit_on_sigterm)
    faulthandler.enable(file=log, all_threads=True)
    if hasattr(signal, "SIGUSR1"):
        faulthandler.register(signal.SIGUSR1, file=log, all_threads=True)
    return log


# ------------------------------------------------------------------------------------------------
# parent side


def log_tail(path: Path, lines: int = LOG_TAIL_LINES) -> str:
    """The last ``lines`` lines of the text file ``path`` (``<log is empty>`` / ``<log unreadable: ...>``)."""
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        return f"<log unreadable: {exc}>"
    return "\n".join(text.splitlines()[-lines:]) or "<log is empty>"


def kill_process_group(pid: int | None) -> None:
    """SIGKILL what is left of a (dead) worker's process group, e.g. a game it launched; no-op off POSIX."""
    if pid is None or not hasattr(os, "killpg"):
        return
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass  # the group is already empty


def describe_exit(code: int | None) -> str:
    """Words for a ``multiprocessing.Process.exitcode``: ``exit code 1``, ``killed by signal SIGKILL (exit code -9)``."""
    if code is None:
        return "still running"
    if code < 0:
        try:
            return f"killed by signal {signal.Signals(-code).name} (exit code {code})"
        except ValueError:
            return f"killed by signal {-code} (exit code {code})"
    return f"exit code {code}"


def dump_stack(pid: int, log_path: Path, timeout: float = 2.0, settle: float = 0.1) -> bool:
    """Ask a worker set up by :func:`setup_worker_process` for a stack dump of every thread.

    Sends SIGUSR1 (``faulthandler`` writes the stacks to the worker's log), then waits up to
    ``timeout`` seconds for the log to grow and ``settle`` seconds more for the dump to finish.

    Returns:
        True if the log grew (the dump is there); False when it did not, when the process no longer
        exists, or off POSIX (no SIGUSR1).
    """
    if not hasattr(signal, "SIGUSR1"):
        return False
    log_path = Path(log_path)
    size = log_path.stat().st_size if log_path.exists() else 0
    try:
        os.kill(pid, signal.SIGUSR1)
    except ProcessLookupError:
        return False
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        time.sleep(0.05)
        if log_path.exists() and log_path.stat().st_size > size:
            time.sleep(settle)  # let faulthandler finish every thread
            return True
    return False
