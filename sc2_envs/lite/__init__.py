"""The lite full-game engine: StarCraft II's macro game on Simple64 without the game binary.

Protoss (the agent) against the very_easy Terran bot, batched over B games in dense arrays, time
in game loops. ``sc2_envs/FullGame-v0`` runs on it by default; see ``docs/full_game.md`` for what
it models and what it leaves out.
"""
