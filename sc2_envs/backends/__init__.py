"""Alternative backends behind the simulator's batched interface.

Only light modules are imported here; SMAC, pysc2 and the game are imported when a backend is built.

* ``smac_sc2``: oxwhirl SMAC's ``StarCraft2Env`` on real StarCraft II (``make_sc2_backend``).
"""

from sc2_envs.backends.smac_sc2 import (
    SMAC_REQUIREMENT,
    SC2Backend,
    SC2BackendUnavailable,
    SC2GameError,
    default_sc2_path,
    make_sc2_backend,
)

__all__ = [
    "SMAC_REQUIREMENT",
    "SC2Backend",
    "SC2BackendUnavailable",
    "SC2GameError",
    "default_sc2_path",
    "make_sc2_backend",
]
