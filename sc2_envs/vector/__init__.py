"""Worker processes: vector envs over subprocess workers (``subproc``), supervised actors for
asynchronous learners (``actor_pool``, imported explicitly: it needs torch), and the supervision
they share (``supervision``: per-process logs, heartbeat, stack dumps, clean kills)."""

from sc2_envs.vector.subproc import (
    SubprocVectorEnv,
    SubprocVectorEnvError,
    WorkerDied,
    WorkerError,
    WorkerStalled,
    make_subproc_batched,
)

__all__ = [
    "SubprocVectorEnv",
    "SubprocVectorEnvError",
    "WorkerDied",
    "WorkerError",
    "WorkerStalled",
    "make_subproc_batched",
]
