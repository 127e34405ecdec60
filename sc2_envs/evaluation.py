"""Import alias of :mod:`sc2_envs.training.evaluation`."""

from sc2_envs.training.evaluation import (
    STOP,
    behaviour_key,
    enemy_hp,
    episode_quota,
    evaluate,
    format_result,
)

__all__ = [
    "STOP",
    "behaviour_key",
    "enemy_hp",
    "episode_quota",
    "evaluate",
    "format_result",
]
