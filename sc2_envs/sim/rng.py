"""Counter-based random numbers: one independent, batch-invariant stream per env.

A stateful ``torch.Generator`` cannot give each of B envs its own stream in one vectorised call,
and its draws would depend on the batch size. Instead every random number is a hash of
``(episode count, game loop, unit index, purpose, env key)``, so env ``b`` draws the same numbers
whether it is stepped alone or inside a batch, on any device (integer arithmetic only).
The mixer is the "lowbias32" integer hash (C. Wellons, "Prospecting for hash functions", 2018).

Env keys (seed splitting). Env ``b`` of a batch seeded with ``seed`` gets a 64-bit key from NumPy's
``SeedSequence(seed, spawn_key=(b,))`` -- the same object as ``SeedSequence(seed).spawn(B)[b]``
(NumPy's recommended way to derive independent streams, numpy/random/bit_generator.pyx), but
addressable for any ``b`` without building the others. So (base seed, env index) pairs never share
a stream: not ``seed + b``, where seed 1's env 0 was seed 0's env 1. Evaluation envs use
``eval_seed(seed, ...)``, a ``SeedSequence`` whose spawn key starts with ``EVAL_SPAWN_KEY``; the
spawn keys of training envs have one element, so the two families are disjoint by construction.

The key is 64 bits wide because a 32-bit key space makes some pair of streams coincide with
probability ``n**2 / 2**33`` by the birthday bound (12 % for the 32,768 streams of 8 seeds x 4,096
envs); with 64 bits it is about ``3e-11``. ``mix`` absorbs every key as two 32-bit words and the
env key is hashed in last, so two different env keys never share the whole stream (only single
32-bit draws can coincide, at chance level).
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise

import numpy as np
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


GOLDEN32 = 0x9E3779B1  # 2**32 / golden ratio, odd
MIX_INIT = 0x243F6A88  # first digits of pi: an arbitrary non-zero start


def mix(*keys: torch.Tensor | int) -> torch.Tensor:
    """Hash int64 keys (broadcastable tensors or ints) into one 32-bit value per element.

    Every key is absorbed as two 32-bit words (low, then high), so all 64 bits of a key count.
    Put the env key last (see the module docstring). Returns int64 values in ``[0, 2**32)``.
    """
    h = torch.tensor(MIX_INIT, dtype=torch.int64)
    for k in keys:
        k = k if isinstance(k, torch.Tensor) else torch.tensor(k, dtype=torch.int64)
        h = hash_u32(h * GOLDEN32 + (k & _MASK32))
        h = hash_u32(h * GOLDEN32 + ((k >> 32) & _MASK32))
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
STREAM_SCENARIO_TEAM = 4  # SMACv2 team composition (sc2_envs.smacv2)
STREAM_SCENARIO_POS = 5  # SMACv2 start positions


# ------------------------------------------------------------------------------------------------
# seed splitting

EVAL_SPAWN_KEY = 0x6576616C
"""First spawn-key word of evaluation seeds (ASCII "eval"); training env keys have spawn key ``(b,)``."""


def _is_seed_int(v) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)) and int(v) >= 0


def eval_seed(seed: int | np.random.SeedSequence, *index: int) -> np.random.SeedSequence:
    """The seed of evaluation envs for the run seeded with ``seed``: disjoint from its training streams.

    ``make_batched(map, B, seed=eval_seed(s))`` gives env ``b`` the key of
    ``SeedSequence(s, spawn_key=(EVAL_SPAWN_KEY, b))`` while training with ``seed=s`` uses spawn
    key ``(b,)``, so no evaluation battle repeats a training battle of any run seed. ``index``
    (e.g. the evaluation round) is appended to the spawn key for a fresh, still disjoint set of
    battles per round: ``eval_seed(s, k)`` -> spawn key ``(EVAL_SPAWN_KEY, k, b)``.

    Args:
        seed: the run's non-negative int seed, or a ``SeedSequence`` (its spawn key is extended).
        index: non-negative ints appended after ``EVAL_SPAWN_KEY``.

    Returns:
        ``numpy.random.SeedSequence``, accepted as ``seed`` by ``make_batched``, ``SMACSim.reset``,
        the subprocess vector env and the sc2 backend.

    Raises:
        TypeError / ValueError: ``seed`` (None included) or an index is not a non-negative int.
    """
    if isinstance(seed, (int, np.integer)) and not isinstance(seed, (bool, np.bool_)) and int(seed) < 0:
        raise ValueError(f"eval_seed needs the run's seed, a non-negative int (or a SeedSequence), got {seed!r}")
    if not (_is_seed_int(seed) or isinstance(seed, np.random.SeedSequence)):
        # None included: as_seed_sequence would draw fresh entropy, evaluation battles no later run could repeat
        raise TypeError(f"eval_seed needs the run's seed (a non-negative int or a SeedSequence), got {seed!r}")
    bad = [v for v in index if not _is_seed_int(v)]
    if bad:
        raise ValueError(f"eval_seed index values must be non-negative ints, got {bad[0]!r}")
    root = as_seed_sequence(seed)
    return np.random.SeedSequence(
        root.entropy, spawn_key=tuple(root.spawn_key) + (EVAL_SPAWN_KEY, *map(int, index)), pool_size=root.pool_size
    )


def as_seed_sequence(seed: int | np.random.SeedSequence | None) -> np.random.SeedSequence:
    """``SeedSequence(seed)`` for an int, the object itself for a ``SeedSequence``, fresh entropy for None.

    Raises:
        TypeError: anything else (the message names the value); ValueError: a negative int.
    """
    if seed is None:
        return np.random.SeedSequence()
    if isinstance(seed, np.random.SeedSequence):
        return seed
    if isinstance(seed, (int, np.integer)) and not isinstance(seed, (bool, np.bool_)):
        if int(seed) < 0:
            raise ValueError(f"seed must be a non-negative int, got {seed!r}")
        return np.random.SeedSequence(int(seed))
    raise TypeError(f"seed must be a non-negative int, a numpy.random.SeedSequence or None, got {seed!r}")


def env_seed_sequence(root: np.random.SeedSequence, index: int) -> np.random.SeedSequence:
    """Child ``index`` of ``root``: equal to ``root.spawn(index + 1)[index]`` for a fresh ``root``."""
    return np.random.SeedSequence(root.entropy, spawn_key=tuple(root.spawn_key) + (int(index),), pool_size=root.pool_size)


def key_of(seq: np.random.SeedSequence) -> int:
    """The 64-bit env key of a ``SeedSequence``, as a signed int64 value (two's complement)."""
    return int(seq.generate_state(1, np.uint64).view(np.int64)[0])


def unwrap_scalar_seed(seed):
    """A 0-d integer tensor or array as its Python int; other values unchanged.

    Raises:
        TypeError: a 0-d tensor or array of another dtype (float, bool, complex), naming it.
    """
    if isinstance(seed, (torch.Tensor, np.ndarray)) and seed.ndim == 0:
        integer = (
            not seed.dtype.is_floating_point and not seed.dtype.is_complex and seed.dtype != torch.bool
            if isinstance(seed, torch.Tensor)
            else np.issubdtype(seed.dtype, np.integer)
        )
        if not integer:
            raise TypeError(f"seed must be a non-negative int, a numpy.random.SeedSequence or None, got {seed!r}")
        return int(seed.item())
    return seed


def env_keys(seed, num_envs: int, first_index: int = 0) -> list[int]:
    """The 64-bit keys of envs ``first_index .. first_index + num_envs - 1`` for a batch seed.

    Args:
        seed: ``int`` or ``SeedSequence`` -> env ``b`` gets child ``b`` of it (``env_seed_sequence``);
            ``None`` -> child ``b`` of fresh OS entropy; a sequence (list, tuple, array, tensor) of
            ``num_envs`` entries -> env ``b`` gets entry ``b``: an int ``v`` means what a 1-env batch
            seeded with ``v`` gets (child 0 of ``SeedSequence(v)``), a ``SeedSequence`` is used as is.
        num_envs: number of keys.
        first_index: global index of the first env (a subprocess worker's offset in the batch).

    Returns:
        ``num_envs`` signed int64 values.

    Raises:
        TypeError: a seed of another type; ValueError: a negative int, or a sequence whose length is
        not ``num_envs``.
    """
    seed = unwrap_scalar_seed(seed)
    if isinstance(seed, torch.Tensor):
        seed = seed.tolist()
    if isinstance(seed, np.ndarray):
        seed = seed.tolist()
    if seed is None or isinstance(seed, (np.random.SeedSequence, int, np.integer)) and not isinstance(seed, bool):
        root = as_seed_sequence(seed)
        return [key_of(env_seed_sequence(root, first_index + b)) for b in range(num_envs)]
    if isinstance(seed, (list, tuple)):
        if len(seed) != num_envs:
            raise ValueError(f"seed must be an int or {num_envs} seeds (one per env), got {len(seed)} values")
        out = []
        for v in seed:
            if isinstance(v, np.random.SeedSequence):
                out.append(key_of(v))
            elif _is_seed_int(v):
                out.append(key_of(env_seed_sequence(np.random.SeedSequence(int(v)), 0)))
            else:
                raise ValueError(f"per-env seeds must be non-negative ints or numpy.random.SeedSequence, got {v!r}")
        return out
    raise TypeError(
        f"seed must be a non-negative int, a numpy.random.SeedSequence, None, or a list of "
        f"{num_envs} of them (one per env), got {seed!r}"
    )


def split_for_workers(seed, sizes: Sequence[int]) -> list:
    """Per-worker seeds for a batch split into consecutive blocks of ``sizes`` envs.

    Worker ``w`` (envs ``offset_w .. offset_w + sizes[w] - 1`` of the whole batch) gets a list of
    ``SeedSequence`` children with their global indices, so the workers together draw exactly the
    streams of one ``make_batched(num_envs=sum(sizes), seed=seed)``. ``None`` stays ``None`` for
    every worker (each keeps or draws its own stream); a per-env list is sliced.

    Raises:
        ValueError: a per-env list whose length is not ``sum(sizes)``; TypeError as ``env_keys``.
    """
    offsets = np.cumsum([0, *sizes]).tolist()
    seed = unwrap_scalar_seed(seed)
    if seed is None:
        return [None] * len(sizes)
    if isinstance(seed, (np.random.SeedSequence, int, np.integer)) and not isinstance(seed, bool):
        root = as_seed_sequence(seed)
        return [[env_seed_sequence(root, offsets[w] + i) for i in range(n)] for w, n in enumerate(sizes)]
    if isinstance(seed, torch.Tensor):
        seed = seed.tolist()
    flat = list(np.asarray(seed, dtype=object).flatten()) if not isinstance(seed, (list, tuple)) else list(seed)
    if len(flat) != offsets[-1]:
        raise ValueError(f"seed has {len(flat)} values; expected an int or {offsets[-1]} seeds (one per env)")
    return [flat[a:b] for a, b in pairwise(offsets)]
