"""Threaded kernel calls: a batch split into contiguous chunks of envs, one Python thread per chunk.

The kernels are compiled with ``nogil=True``, so Python threads calling the *serial* kernel on
disjoint ranges of envs run in parallel. This replaces Numba's ``parallel=True`` drivers for two
reasons, both measured on the 2-core machine:

* **First use.** A ``parallel=True`` driver is a second compilation of the whole step: Numba
  re-links and re-optimises every rule function into it (``_step_parallel`` took 55 s on top of
  ``_step_serial``'s 75 s with an empty cache, under load). A thread calling the already compiled
  serial range function compiles nothing new.
* **Load.** Numba's OpenMP workers spin-wait between calls and share torch's OpenMP runtime; with
  a competing process on the cores a fork/join waited for a preempted worker on every call
  (``runtime.schedule``). Plain threads block instead of spinning.

Envs never interact and each env's arithmetic is the same whichever thread runs it, so results
are bit-equal to the serial call (``tests/test_kernel_step.py``, ``tests/test_kernel_tick.py``).

The pool is process-wide, grows to the largest chunk count asked for, and is dropped in a forked
child (its threads do not survive ``fork``), which makes a new one on first use.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

import numba

from sc2_envs.sim.runtime import keeping_torch_threads

_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None
_pool_size = 0


def _forget_pool() -> None:
    global _pool, _pool_size, _lock
    _pool, _pool_size, _lock = None, 0, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)


def _workers(n: int) -> ThreadPoolExecutor:
    """The process-wide pool with at least ``n`` threads."""
    global _pool, _pool_size
    with _lock:
        if _pool is None or _pool_size < n:
            old = _pool
            _pool, _pool_size = ThreadPoolExecutor(max_workers=n, thread_name_prefix="sc2_envs-kernel"), n
            if old is not None:
                old.shutdown(wait=False)
        return _pool


def chunk_bounds(total: int, n_chunks: int) -> list[tuple[int, int]]:
    """``n_chunks`` contiguous ``(lo, hi)`` ranges covering ``[0, total)``, each of ``ceil(total / n_chunks)``
    items but the last (empty ranges dropped), as the ``prange`` drivers split them.

    Raises:
        ValueError: ``total < 0`` or ``n_chunks < 1``.
    """
    if total < 0 or n_chunks < 1:
        raise ValueError(f"need total >= 0 and n_chunks >= 1, got total={total}, n_chunks={n_chunks}")
    per = -(-total // n_chunks) if total else 0
    return [(c * per, min(total, (c + 1) * per)) for c in range(n_chunks) if c * per < total]


def run_chunks(call: Callable[[int, int], object], total: int, n_chunks: int) -> None:
    """``call(lo, hi)`` for each range of :func:`chunk_bounds`, concurrently: the first range in the
    calling thread, the others on the pool. Returns when all have finished.

    ``call`` must release the GIL for the ranges to overlap (a ``nogil=True`` Numba function) and
    must write disjoint memory for different ranges.

    Raises:
        whatever a ``call`` raised (the first range's error first), after every range has ended.
    """
    bounds = chunk_bounds(total, n_chunks)
    if len(bounds) <= 1:
        for lo, hi in bounds:
            call(lo, hi)
        return
    pool = _workers(len(bounds) - 1)
    futures: list[Future] = [pool.submit(call, lo, hi) for lo, hi in bounds[1:]]
    error: BaseException | None = None
    try:
        call(*bounds[0])
    except BaseException as exc:  # the other ranges still write into the caller's arrays: wait for them first
        error = exc
    for f in futures:
        exc = f.exception()
        if error is None and exc is not None:
            error = exc
    if error is not None:
        raise error


def kernel_threads() -> int:
    """The number of threads a threaded kernel call uses: ``numba.get_num_threads()`` (the simulator's
    cap, ``runtime.limit_numba_threads``), read keeping torch's thread count (``keeping_torch_threads``)."""
    return keeping_torch_threads(numba.get_num_threads)


def run_env_ids(call: Callable, env_ids, n_chunks: int) -> None:
    """``call(env_ids)``, or with ``n_chunks > 1`` ``call`` on that many contiguous slices of ``env_ids``
    (a C-contiguous int64 array, so each slice has the compiled signature of the whole) on threads."""
    if n_chunks <= 1:
        call(env_ids)
        return
    run_chunks(lambda lo, hi: call(env_ids[lo:hi]), env_ids.shape[0], n_chunks)


__all__ = ["chunk_bounds", "kernel_threads", "run_chunks", "run_env_ids"]
