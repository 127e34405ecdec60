"""Vector envs that run batched envs in subprocess workers (see ``subproc``)."""

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
