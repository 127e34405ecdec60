"""The machinery around the simulator's compiled kernels; no game rule lives here.

``sim.numba`` holds the compiled mirror of the torch rules (``sim.rules``); this package holds what
runs it: Numba's on-disk cache and its invalidation (``cache``), threaded calls over chunks of envs
(``chunks``), the serial-or-threaded choice by measured time (``schedule``), the background compile
on first use (``warmup``), torch's thread count (``threads``) and the first-call notice
(``first_use``). ``SMACSim(kernel=...)`` picks the execution path: ``"torch"`` (the reference, any
device, ``compile=True``), ``"numba"`` (the compiled mirror, CPU), or ``"auto"`` (numba on CPU when
it imports, torch otherwise; on first use the torch path plays while ``warmup`` compiles the numba
step in a background thread).
"""

from __future__ import annotations

KERNELS = ("auto", "numba", "torch")


def numba_available() -> str | None:
    """``None`` when numba imports, else the reason (the import error's message)."""
    try:
        import numba  # noqa: F401
    except Exception as exc:  # a broken install (e.g. a numpy it does not support) raises more than ImportError
        return f"{type(exc).__name__}: {exc}"
    return None


def keeping_torch_threads(fn, *args):
    """``fn(*args)``, with torch's intra-op thread count as it was before the call; returns its result.

    Why: numba's ``omp`` threading layer runs on torch's OpenMP runtime, and starting its pool (which
    ``numba.get_num_threads`` does) can change the count torch reads (``torch.get_num_threads()`` read
    2 instead of the simulator's 1 after a parallel step in a benchmark run)."""
    import torch

    n = torch.get_num_threads()
    out = fn(*args)
    if torch.get_num_threads() != n:
        torch.set_num_threads(n)
    return out


def limit_numba_threads(num_threads: int) -> int:
    """Cap numba's threads in the calling thread at ``num_threads`` (and at ``NUMBA_NUM_THREADS``,
    the pool's size), keeping torch's count; returns the count in effect. The kernels' threaded
    calls use one thread per chunk and ``numba.get_num_threads()`` chunks (``runtime.chunks``).

    Why: ``numba.get_num_threads()`` defaults to the core count whatever torch was told, so a
    training run given one thread (``--torch-threads 1``) would step its envs on two (measured when
    the threaded calls were OpenMP ``parallel=True`` kernels, whose worker spin-waited between
    calls: 93 % of a second core, and two such runs side by side at 45 env steps/s instead of ~185)."""
    import numba

    n = max(1, min(int(num_threads), numba.config.NUMBA_NUM_THREADS))
    keeping_torch_threads(numba.set_num_threads, n)
    return n


__all__ = ["KERNELS", "keeping_torch_threads", "limit_numba_threads", "numba_available"]
