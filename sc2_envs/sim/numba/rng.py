"""Numba mirror of ``sim.rng``: the counter-based hash behind every random draw of an episode.

``absorb`` folds one key into a ``mix`` value and ``uniform`` turns a finished value into a float32 in
``[0, 1)``, as ``rng.mix`` / ``rng.uniform`` do on tensors, so the compiled resets draw the same numbers
(``tests/test_kernel_step.py``, ``tests/test_kernel_v2.py``).
"""

from __future__ import annotations

import numba
import numpy as np

from sc2_envs.sim import rng
from sc2_envs.sim.numba.state import JIT

_M32 = np.uint64(0xFFFFFFFF)
GOLDEN = np.uint64(rng.GOLDEN32)
INIT = np.uint64(rng.MIX_INIT)
_H1 = np.uint64(0x7FEB352D)
_H2 = np.uint64(0x846CA68B)
_S8, _S15, _S16, _S32 = np.uint64(8), np.uint64(15), np.uint64(16), np.uint64(32)
_U24 = np.float32(1 << 24)


@numba.njit(**JIT)
def hash_u32(x):
    """``rng.hash_u32`` on a uint64 (the low 32 bits; the torch code's int64 wrap-around keeps them alike)."""
    x = x & _M32
    x = x ^ (x >> _S16)
    x = (x * _H1) & _M32
    x = x ^ (x >> _S15)
    x = (x * _H2) & _M32
    return x ^ (x >> _S16)


@numba.njit(**JIT)
def absorb(h, k):
    """One key of ``rng.mix``: its low, then its high 32-bit word."""
    ku = np.uint64(k)
    h = hash_u32(h * GOLDEN + (ku & _M32))
    return hash_u32(h * GOLDEN + ((ku >> _S32) & _M32))


@numba.njit(**JIT)
def uniform(h):
    """``rng.uniform`` from a finished ``mix`` value: float32 in [0, 1) with 24 bits."""
    return np.float32(h >> _S8) / _U24
