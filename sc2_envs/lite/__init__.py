"""The lite full-game engine: StarCraft II's macro game on Simple64 without the game binary.

Protoss (the agent) against the very_easy Terran bot, batched over B games in dense arrays, time
in game loops. ``sc2_envs/FullGame-v0`` runs on it by default; see ``docs/full_game.md`` for what
it models and what it leaves out.

Public names (imported on first use, so ``import sc2_envs.lite`` stays cheap):
    LiteEngine: B games on one map (``engine``).
    LiteFullGameEnv, LiteFullGameVectorEnv: FullGame-v0, one game or B games (``env``).
    VeryEasyTerranBot: the scripted opponent (``bot``).
    RandomLegalPolicy: random legal actions (``policy``).
"""

from __future__ import annotations

import importlib

_EXPORTS = {
    "LiteEngine": "sc2_envs.lite.engine",
    "LiteFullGameEnv": "sc2_envs.lite.env",
    "LiteFullGameVectorEnv": "sc2_envs.lite.env",
    "VeryEasyTerranBot": "sc2_envs.lite.bot",
    "RandomLegalPolicy": "sc2_envs.lite.policy",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(importlib.import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'sc2_envs.lite' has no attribute {name!r}")
