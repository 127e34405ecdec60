"""Counter-based random numbers: one independent, batch-invariant stream per env.

A stateful ``torch.Generator`` cannot give each of B envs its own stream in one vectorised call,
and its draws would depend on the batch size. Instead every random number is a hash of
``(env seed, episode count, game loop, unit index, purpose)``, so env ``b`` draws the same numbers
whether it is stepped alone or inside a batch, on any device (integer arithmetic only).
The mixer is the "lowbias32" integer hash (C. Wellons, "Prospecting for hash functions", 2018).
"""

from __future__ import annotations

import torch

_MASK32 = 0xFFFFFFFF


def hash_u32(x: torch.Tensor) -> torch.Tensor:
    """lowbias32 on the low 32 bits of an int64 tensor; returns int64 values in ``[0, 2**32)``."""
    x = x & _MASK32
    x = x ^ (x >> 16)
    x = (x * 0x7FEB352D) & _MASK32
    x = x ^ (x >> 15)
    x = (x * 0x846CA68B) & _MASK32
    return x ^ (x >> 16)


def mix(*keys: torch.Tensor | int) -> torch.Tensor:
    """Hash several int64 keys (broadcastable tensors or ints) into one 32-bit value per element."""
    h = None
    for k in keys:
        k = k if isinstance(k, torch.Tensor) else torch.tensor(k, dtype=torch.int64)
        h = hash_u32(k) if h is None else hash_u32(h * 0x9E3779B1 + k)
    return h


def uniform(*keys: torch.Tensor | int) -> torch.Tensor:
    """Uniform float32 in ``[0, 1)`` from the hashed keys (24 bits of resolution)."""
    return (mix(*keys) >> 8).to(torch.float32) / float(1 << 24)


_LCG_A = 1664525  # Numerical Recipes' 32-bit LCG constants
_LCG_C = 1013904223


def lcg_next(state: torch.Tensor) -> torch.Tensor:
    """One step of a 32-bit linear congruential generator on int64 tensors (values < 2**32)."""
    return (state * _LCG_A + _LCG_C) & _MASK32


def lcg_top2(state: torch.Tensor) -> torch.Tensor:
    """The top two bits of a 32-bit LCG state (its best-distributed bits), as int64 in 0..3."""
    return state >> 30


# Purposes, so that different uses of randomness never share a stream.
STREAM_COOLDOWN = 1
STREAM_ATTACK_POINT = 2
STREAM_SPAWN = 3
