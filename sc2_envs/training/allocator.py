"""Keep the memory a training process frees, instead of handing it back to the OS at every pass.

A CPU training iteration allocates and frees the same activation buffers thousands of times (2s3z,
HAPPO defaults: a few MiB each, every forward and backward pass). With glibc's default tuning the
allocator returns freed memory at the top of the heap to the OS (``M_TRIM_THRESHOLD``) and serves
large blocks with fresh ``mmap`` calls (``M_MMAP_THRESHOLD``, adjusted as it goes), so the next pass
touches new pages and the kernel zero-fills them: 3.2-4.1 million page faults and 5.5-8.2 s of
system time in a 10-iteration ``algos/happo_gnn.py --map 2s3z`` run of ~80 s. Fixing both thresholds
(blocks below 32 MiB from the heap, no trimming below 1 GiB free) leaves ~144 thousand faults, the
first touch of the pages the process needs, at the same peak resident memory (docs/speed.md, "Training speed").

The settings are glibc's documented ``mallopt(3)`` parameters (``M_TRIM_THRESHOLD`` = -1,
``M_MMAP_THRESHOLD`` = -3; 32 MiB is the ceiling of glibc's own adaptive mmap threshold on 64-bit
systems, ``DEFAULT_MMAP_THRESHOLD_MAX`` in its ``malloc/malloc.c``, a chosen value: newer glibc
accepts larger ones). They change where memory comes from, not what is computed: every
result is bit for bit the same. Other C libraries (macOS, musl) are left as they are.

``SC2_ENVS_KEEP_FREED_MEMORY=0`` keeps glibc's defaults. The training scripts of ``algos/`` call
:func:`keep_freed_memory` at start-up and print what it returns; a library import never changes
the process's allocator.
"""

from __future__ import annotations

import ctypes
import os
import platform

ENV_VAR = "SC2_ENVS_KEEP_FREED_MEMORY"
"""Environment variable: ``"1"`` (the default) keeps freed memory, ``"0"`` leaves glibc's defaults."""

M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD_BYTES = 32 << 20
"""Blocks below this come from the heap (the ceiling of glibc's adaptive threshold on 64-bit)."""
TRIM_THRESHOLD_BYTES = 1 << 30
"""Free memory at the top of the heap is returned to the OS only beyond this."""

_applied: str | None = None


def enabled() -> bool:
    """Whether :func:`keep_freed_memory` tunes the allocator (``$SC2_ENVS_KEEP_FREED_MEMORY``, default ``"1"``).

    Raises:
        ValueError: the variable is set to something other than ``"0"`` or ``"1"`` (set but empty
            counts as unset).
    """
    value = os.environ.get(ENV_VAR, "").strip() or "1"
    if value not in ("0", "1"):
        raise ValueError(f"{ENV_VAR}={value!r}: expected '1' (keep freed memory, the default) or '0' (glibc's defaults)")
    return value == "1"


def keep_freed_memory() -> str:
    """Fix glibc's trim and mmap thresholds for this process (see the module docstring); idempotent.

    Returns:
        One line for the run's start-up output saying what is in effect, e.g. ``"allocator: glibc
        keeps freed memory (mmap threshold 32 MiB, trim threshold 1 GiB)"``.

    Raises:
        ValueError: ``$SC2_ENVS_KEEP_FREED_MEMORY`` is neither ``"0"`` nor ``"1"``.
        RuntimeError: glibc refused a ``mallopt`` call (it returns 0 for an out-of-range value).
    """
    global _applied
    if not enabled():
        if _applied is not None:  # mallopt cannot be undone in a running process
            return f"{_applied}; applied earlier in this process, so {ENV_VAR}=0 no longer takes effect here"
        return f"allocator: glibc's defaults ({ENV_VAR}=0)"
    if _applied is not None:
        return _applied
    libc_name, _ = platform.libc_ver()
    if libc_name != "glibc":
        _applied = f"allocator: left as is (C library {libc_name or 'not identified'} on {platform.system()}, not glibc)"
        return _applied
    libc = ctypes.CDLL("libc.so.6")
    for name, param, value in (
        ("M_MMAP_THRESHOLD", M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES),
        ("M_TRIM_THRESHOLD", M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES),
    ):
        if libc.mallopt(param, value) != 1:
            raise RuntimeError(f"glibc mallopt({name}, {value}) failed; set {ENV_VAR}=0 to leave the allocator as is")
    _applied = (
        f"allocator: glibc keeps freed memory (mmap threshold {MMAP_THRESHOLD_BYTES >> 20} MiB, "
        f"trim threshold {TRIM_THRESHOLD_BYTES >> 30} GiB; {ENV_VAR}=0 for glibc's defaults)"
    )
    return _applied
