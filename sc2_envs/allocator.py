"""Import alias of :mod:`sc2_envs.training.allocator`."""

from sc2_envs.training.allocator import (
    ENV_VAR,
    M_MMAP_THRESHOLD,
    M_TRIM_THRESHOLD,
    MMAP_THRESHOLD_BYTES,
    TRIM_THRESHOLD_BYTES,
    enabled,
    keep_freed_memory,
)

__all__ = [
    "ENV_VAR",
    "MMAP_THRESHOLD_BYTES",
    "M_MMAP_THRESHOLD",
    "M_TRIM_THRESHOLD",
    "TRIM_THRESHOLD_BYTES",
    "enabled",
    "keep_freed_memory",
]
