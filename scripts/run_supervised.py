"""Run a Python script as a supervised child of a benchmark harness: heartbeat file and stack dumps.

    python scripts/run_supervised.py HEARTBEAT_FILE INTERVAL_S SCRIPT [ARG ...]

Before anything else (the script's imports included) this starts a daemon thread that touches
``HEARTBEAT_FILE`` (sets its modification time to now) every ``INTERVAL_S`` seconds, and enables
``faulthandler`` on stderr for crashes and for SIGUSR1 (a stack dump of every thread on request).
Then it runs ``SCRIPT`` as ``__main__`` with ``sys.argv = [SCRIPT, ARG, ...]`` (``runpy.run_path``),
so the script behaves as if started directly, and exits with its status.

The harness (``benchmarks/learning_curves.py``) reads the file's age: a heartbeat older than its
timeout means a frozen process (the interpreter no longer runs the thread); a log that stops
growing while the heartbeat goes on means a stalled run. When the harness process dies, the
heartbeat thread sends SIGTERM to this process (the training scripts then finish the iteration,
checkpoint and exit), so that no run lives on as an orphan. Only the standard library is imported
here, so beats start before the script's own (slow) imports.
"""

from __future__ import annotations

import faulthandler
import os
import runpy
import signal
import sys
import threading


def beat_loop(path: str, interval: float, stop: threading.Event) -> None:
    """Touch ``path`` every ``interval`` seconds until ``stop`` is set; SIGTERM this process if the
    parent (the harness) died, then return."""
    parent = os.getppid()
    while not stop.is_set():
        with open(path, "a"):
            os.utime(path)
        if os.getppid() != parent:
            os.kill(os.getpid(), signal.SIGTERM)
            return
        stop.wait(interval)


def main(argv: list[str]) -> None:
    """``argv``: ``[HEARTBEAT_FILE, INTERVAL_S, SCRIPT, ARG ...]``; see the module docstring.

    Raises:
        SystemExit(2): fewer than three arguments, an interval that is not a positive number, or a
            script that does not exist (one line on stderr naming it).
    """
    if len(argv) < 3:
        print("run_supervised.py: error: usage: run_supervised.py HEARTBEAT_FILE INTERVAL_S SCRIPT [ARG ...]", file=sys.stderr)
        sys.exit(2)
    path, interval, script = argv[0], argv[1], argv[2]
    try:
        seconds = float(interval)
    except ValueError:
        seconds = -1.0
    if not seconds > 0:
        print(f"run_supervised.py: error: INTERVAL_S {interval!r}; expected a positive number of seconds", file=sys.stderr)
        sys.exit(2)
    if not os.path.isfile(script):
        print(f"run_supervised.py: error: SCRIPT {script!r} does not exist", file=sys.stderr)
        sys.exit(2)
    faulthandler.enable(all_threads=True)
    if hasattr(signal, "SIGUSR1"):
        faulthandler.register(signal.SIGUSR1, all_threads=True)
    threading.Thread(target=beat_loop, args=(path, seconds, threading.Event()), daemon=True, name="heartbeat").start()
    sys.argv = [script, *argv[3:]]
    sys.path[0] = os.path.dirname(os.path.abspath(script))  # as `python SCRIPT`: the script's folder first
    runpy.run_path(script, run_name="__main__")


if __name__ == "__main__":
    main(sys.argv[1:])
