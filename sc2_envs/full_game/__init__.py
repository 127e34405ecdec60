"""Full-game StarCraft II behind Gymnasium (``sc2_envs/FullGame-v0``).

Importing this package is cheap: it needs only numpy. The game protocol
(``s2clientprotocol``), the process launcher and raw-function table (``pysc2_evolved``)
are imported when an env is built or a conversion runs. See ``docs/full_game.md``.
"""

from __future__ import annotations

from sc2_envs.full_game._deps import MissingDependencyError

ENV_ID = "sc2_envs/FullGame-v0"

__all__ = ["ENV_ID", "MissingDependencyError", "register_full_game"]


def register_full_game() -> None:
    """Register ``sc2_envs/FullGame-v0`` with Gymnasium (a no-op when already registered).

    The entry point is ``sc2_envs.full_game.env:make_full_game_env``: ``gymnasium.make`` passes
    its keyword arguments to it; ``backend="lite"`` (the default) builds the lite engine's env,
    ``backend="sc2"`` the real game's ``FullGameEnv``. Registering never starts StarCraft II.
    """
    import gymnasium

    if ENV_ID in gymnasium.registry:
        return
    gymnasium.register(id=ENV_ID, entry_point="sc2_envs.full_game.env:make_full_game_env")
