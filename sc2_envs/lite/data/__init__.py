"""Game data of the lite full-game engine: the "3.16.1" profile, the Simple64 map, the very_easy bot.

Modules:
    profiles: the profile registry (``get_profile``) and the guard against mixing profiles.
    profile_3_16_1: unit, weapon and economy data of SC2 3.16.1 with the multiplayer mods merged.
    simple64: Simple64's layout (start locations, resources, rocks) and terrain grids.
    bot_very_easy: the built-in very_easy Terran AI's timeline fitted to real replays.
"""

from sc2_envs.lite.data.profiles import PROFILES, ProfileMismatchError, check_same_profile, get_profile

__all__ = ["PROFILES", "ProfileMismatchError", "check_same_profile", "get_profile"]
