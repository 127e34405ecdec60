"""A line on stderr while a kernel compiles on first use, so that a run does not look hung.

Kept out of ``sim.numba`` (which imports Numba) so that ``sim.env`` can use it without importing
Numba on the torch path.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time

COMPILE_NOTICE_AFTER_S = 2.0
"""A kernel's first call in a process that takes longer than this (seconds) is compiling: say so."""

WHEN_COMPILED = (
    "each kernel family, SMAC v1 maps or SMACv2 scenarios, compiles once per CPU and version of sc2_envs' "
    "simulator code; later runs load it from Numba's on-disk cache"
)
"""When a kernel compiles, for the notices: each family has kernels of its own (``sim.numba.step``), and
Numba's cache entries are keyed by the CPU and stamped with a digest of the simulator's sources
(``sim.runtime.cache``), so a first SMACv2 run after SMAC v1 ones compiles again, as does an upgrade or
an edit of ``sc2_envs.sim``; options and batch sizes do not (one signature per family)."""

_first_calls_done: set[str] = set()
_quiet = threading.local()


@contextlib.contextmanager
def quiet_compile_notices():
    """No :func:`compile_notice` lines from the calling thread inside this block (a background compile,
    ``sim.runtime.warmup``, says what it does itself); first calls are still counted."""
    before = getattr(_quiet, "on", False)
    _quiet.on = True
    try:
        yield
    finally:
        _quiet.on = before


def first_calls_done() -> int:
    """How many kernels have made their first call in this process (each a Numba compile or cache load).
    A training script compares it before and after an iteration to tell iterations that paid this
    one-time cost from the others."""
    return len(_first_calls_done)


@contextlib.contextmanager
def compile_notice(what: str, stream=None):
    """Around the first call of kernel ``what`` in this process: if it is still running after
    ``COMPILE_NOTICE_AFTER_S`` seconds, Numba is compiling it (the first use of its family, SMAC v1 maps
    or SMACv2 scenarios, on this CPU after an install, an upgrade or an edit of ``sc2_envs.sim``: see
    ``WHEN_COMPILED``; later processes load the machine code from Numba's on-disk cache in about a
    second), so one line on ``stream`` (default ``sys.stderr``) says so, and a second one how long it took. Later calls of
    ``what`` are not watched (see :func:`first_call`).

    Why: with an empty cache the first ``reset`` and ``step`` compile for about 10 s and 30 s on a
    2-core machine (more under load), and a training run that prints nothing meanwhile looks hung."""
    if what in _first_calls_done or getattr(_quiet, "on", False):
        try:
            yield
        finally:
            _first_calls_done.add(what)
        return
    out = stream if stream is not None else sys.stderr
    said = threading.Event()

    def say():
        said.set()
        out.write(f"sc2_envs: compiling the simulator's {what} kernel (Numba: {WHEN_COMPILED})...\n")
        out.flush()

    timer = threading.Timer(COMPILE_NOTICE_AFTER_S, say)
    timer.daemon = True
    t0 = time.perf_counter()
    timer.start()
    try:
        yield
    finally:
        timer.cancel()
        _first_calls_done.add(what)
        if said.is_set():
            out.write(f"sc2_envs: {what} kernel ready after {time.perf_counter() - t0:.0f} s\n")
            out.flush()


def first_call(what: str, fn, *args):
    """``fn(*args)``, under :func:`compile_notice` the first time ``what`` runs in this process (later:
    one set lookup, no context manager on the hot path of a step)."""
    if what in _first_calls_done:
        return fn(*args)
    with compile_notice(what):
        return fn(*args)


__all__ = [
    "COMPILE_NOTICE_AFTER_S",
    "WHEN_COMPILED",
    "compile_notice",
    "first_call",
    "first_calls_done",
    "quiet_compile_notices",
]
