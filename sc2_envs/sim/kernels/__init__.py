"""Compiled CPU kernels of the simulator's stages (Numba), bit-equal to the torch reference.

``SMACSim(kernel=...)`` picks the execution path of each stage: ``"torch"`` (the reference, any
device, ``compile=True``), ``"numba"`` (these kernels, CPU), or ``"auto"`` (numba on CPU when it
imports, torch otherwise; on first use the torch path plays while ``warmup`` compiles the numba
step in a background thread). ``tick.TickKernel`` runs the orders and tick stages,
``observe.ObserveKernel`` the observe stage (game result, reward, available actions, observations,
state) and the observation of auto-reset envs. ``step.StepKernel`` is what ``SMACSim.step`` calls on
the numba path: the whole env step (action checks, orders, ticks, observe, the ``final_*`` copies,
the episode statistics) and the auto-reset of finished envs in one compiled call each, built from
the same per-env functions as the stage kernels (which still serve ``SMACSim._core``).

SMACv2 scenarios run through the same kernels: the tick and orders stages gather each env's unit
tables from per-kind tables and ``WorldState.unit_kind`` (``tick._env_tables``), ``observe_v2``
holds the SMACv2 features (``observe_v2.ObserveKernelV2``) and ``scenario`` the compiled auto-reset
(``scenario.ScenarioResetKernel``: new rosters and start positions for the envs that ended).
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
    calls use one thread per chunk and ``numba.get_num_threads()`` chunks (``kernels.chunks``).

    Why: ``numba.get_num_threads()`` defaults to the core count whatever torch was told, so a
    training run given one thread (``--torch-threads 1``) would step its envs on two (measured when
    the threaded calls were OpenMP ``parallel=True`` kernels, whose worker spin-waited between
    calls: 93 % of a second core, and two such runs side by side at 45 env steps/s instead of ~185)."""
    import numba

    n = max(1, min(int(num_threads), numba.config.NUMBA_NUM_THREADS))
    keeping_torch_threads(numba.set_num_threads, n)
    return n


if numba_available() is None:  # before any kernel module is imported: numba picks cache locators at decoration
    from sc2_envs.sim.kernels.cache import install as _install_cache_locators

    _install_cache_locators()

__all__ = ["KERNELS", "keeping_torch_threads", "limit_numba_threads", "numba_available"]
