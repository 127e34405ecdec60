"""The simulator's choice of torch's intra-op CPU thread count, when the user has not made one.

One env step is a few hundred small tensor operations of ``[B, U, ...]`` shapes. Below about a
thousand envs each op is too small to split across threads, and torch's default (one thread per
physical core) makes every op pay the OpenMP fork/join and, on a busy machine, wait for threads
that other processes have preempted. Measured with ``benchmarks/env_throughput.py --threads 0 1 2``
(the table is in docs/speed.md, "Threads (torch path)"): on a 2-core machine one thread was faster at every batch size.

Rule (``auto_num_threads``): one thread below ``PARALLEL_MIN_ENVS`` envs; from there one thread per
``ENVS_PER_THREAD`` envs, capped by the CPUs this process may run on minus the load already on them
(the 1-minute load average), and never below one. CUDA simulators do not change the CPU threads, nor
do simulators on the numba path (``kernel="numba"``, the CPU default), whose step runs no torch op.

The user's choice always wins: ``num_threads=<int>`` sets it, and later simulators made without
``num_threads`` keep it while torch's count is still that value (a training script that passes its
``--torch-threads`` to its training envs keeps it for the evaluation envs it makes later);
otherwise nothing is changed when ``OMP_NUM_THREADS`` or ``MKL_NUM_THREADS`` is set, or when
``torch.get_num_threads()`` differs from its value when ``sc2_envs`` was imported (an explicit
``torch.set_num_threads``), unless the difference is this module's own earlier choice. A ``torch.set_num_threads`` made
*before* importing ``sc2_envs`` cannot be told apart from torch's default: pass ``num_threads`` or set
``OMP_NUM_THREADS`` then. The change is process-wide (torch has one intra-op pool) and is reported
once per process on stderr.
"""

from __future__ import annotations

import os
import sys

import torch

PARALLEL_MIN_ENVS = 2048
"""Below this many envs the simulator runs on one CPU thread (measured; see the module docstring)."""

ENVS_PER_THREAD = 1024
"""From ``PARALLEL_MIN_ENVS`` on, one thread per this many envs (then capped by idle CPUs)."""

_THREADS_AT_IMPORT = torch.get_num_threads()
_auto_choice: int | None = None
_explicit_choice: int | None = None
_announced = False


def usable_cpus() -> int:
    """CPUs this process may run on (``sched_getaffinity``, else ``os.cpu_count()``)."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


def auto_num_threads(num_envs: int, device: torch.device | str = "cpu") -> int | None:
    """The thread count the simulator picks for ``num_envs`` envs on ``device`` (None: leave as is).

    Args:
        num_envs: the batch size ``B``.
        device: the simulator's device; for a CUDA device the CPU threads are left alone.

    Returns:
        an int ``>= 1`` for CPU simulators, None otherwise.
    """
    if torch.device(device).type != "cpu":
        return None
    if num_envs < PARALLEL_MIN_ENVS:
        return 1
    cpus = usable_cpus()
    try:
        busy = int(os.getloadavg()[0])
    except (OSError, AttributeError):
        busy = 0
    return max(1, min(num_envs // ENVS_PER_THREAD, cpus - busy, cpus))


def user_chose_threads() -> bool:
    """True when the thread count is the user's: ``OMP_NUM_THREADS`` / ``MKL_NUM_THREADS``, an earlier
    ``num_threads=<int>`` still in effect, or an explicit ``torch.set_num_threads``."""
    if os.environ.get("OMP_NUM_THREADS") or os.environ.get("MKL_NUM_THREADS"):
        return True
    now = torch.get_num_threads()
    if _explicit_choice is not None and now == _explicit_choice:
        return True
    return now != _THREADS_AT_IMPORT and now != _auto_choice


def check_num_threads(num_threads: int | None) -> None:
    """Raise ``TypeError`` / ``ValueError`` (naming the value) unless ``num_threads`` is None or an int ``>= 1``."""
    if num_threads is None:
        return
    if not isinstance(num_threads, int) or isinstance(num_threads, bool):
        raise TypeError(f"num_threads must be None (automatic) or an int >= 1, got {num_threads!r}")
    if num_threads < 1:
        raise ValueError(f"num_threads must be None (automatic) or an int >= 1, got {num_threads!r}")


def apply_num_threads(num_threads: int | None, num_envs: int, device: torch.device | str, kernel: str = "torch") -> int:
    """Set torch's intra-op threads for a simulator of ``num_envs`` envs; returns the count in effect.

    Args:
        num_threads: an int ``>= 1`` (always applied: ``torch.set_num_threads(num_threads)``) or None
            (automatic: ``auto_num_threads`` on the torch path, unless ``user_chose_threads()``).
        num_envs: the batch size ``B``.
        device: the simulator's device.
        kernel: the simulator's step path, ``"torch"`` or ``"numba"``. With None on the numba path
            nothing is changed: its step is one compiled call that runs no torch operation (its
            threads are numba's, ``sim.runtime.chunks``), so a process-wide change would only slow
            the caller's own networks (e.g. a one-env Gymnasium env would have set one thread).

    Raises:
        TypeError / ValueError: ``num_threads`` not None and not an int ``>= 1``.
    """
    global _auto_choice, _announced, _explicit_choice
    check_num_threads(num_threads)
    if num_threads is not None:
        torch.set_num_threads(num_threads)
        _explicit_choice = num_threads
        return num_threads
    if kernel == "numba" or user_chose_threads():
        return torch.get_num_threads()
    want = auto_num_threads(num_envs, device)
    if want is None:
        return torch.get_num_threads()
    before = torch.get_num_threads()
    if want != before:
        torch.set_num_threads(want)
        if not _announced:
            _announced = True
            sys.stderr.write(
                f"sc2_envs: torch.set_num_threads({want}) for a {num_envs}-env CPU simulator (was {before}; "
                f"faster for its small ops, see README 'Threads (torch path)'). Pass num_threads= or set OMP_NUM_THREADS "
                f"to choose.\n"
            )
    _auto_choice = want
    return want
