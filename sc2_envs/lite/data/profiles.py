"""Data profiles: one named set of game data per StarCraft II build, never mixed.

A *profile* is the unit, weapon and economy data of one game build as a given map loads it
(``"3.16.1"``: the build of the mini-AlphaStar Simple64 replays, multiplayer mods merged). Every
record a profile module defines carries the profile's name in its ``profile`` field, and
``check_same_profile`` refuses records of two profiles in one game, because the builds differ in
ways that change outcomes (the Stalker's weapon, the Marauder's two grenades, Chrono Boost; see
``profile_3_16_1.DIFFERENCES_4_10``).
"""

from __future__ import annotations

import importlib
from types import ModuleType

PROFILES: dict[str, str] = {"3.16.1": "sc2_envs.lite.data.profile_3_16_1", "4.10": "sc2_envs.lite.data.profile_4_10"}
"""Profile name -> module path. Each module defines ``PROFILE`` (its name), ``UNITS``, ``ECONOMY``
and ``PROVENANCE``."""


class ProfileMismatchError(ValueError):
    """Records of two data profiles were combined."""


def get_profile(name: str) -> ModuleType:
    """The module of one data profile.

    Args:
        name: a key of ``PROFILES`` (``"3.16.1"``).

    Returns:
        The profile module (``UNITS``, ``ECONOMY``, ``PROVENANCE``, ``PROFILE``).

    Raises:
        ValueError: ``name`` is not a served profile; the message lists those served.
    """
    if not isinstance(name, str) or name not in PROFILES:
        raise ValueError(f"unknown data profile {name!r}; served profiles: {sorted(PROFILES)}")
    return importlib.import_module(PROFILES[name])


def check_same_profile(*records: object) -> str:
    """Check that every record comes from one data profile and return that profile's name.

    Args:
        *records: objects with a ``profile`` attribute (unit types, weapons, economy records,
            map or bot records built for a profile). At least one.

    Returns:
        The common profile name.

    Raises:
        ValueError: no records were given, or one has no ``profile`` attribute.
        ProfileMismatchError: two records name different profiles.
    """
    if not records:
        raise ValueError("check_same_profile needs at least one record")
    names = []
    for r in records:
        name = getattr(r, "profile", None)
        if not isinstance(name, str):
            raise ValueError(f"{r!r} has no 'profile' name; expected a record of a data profile")
        names.append(name)
    if len(set(names)) > 1:
        raise ProfileMismatchError(
            f"records of different data profiles were combined: {sorted(set(names))}; "
            "one game uses one profile (see sc2_envs.lite.data.profiles)"
        )
    return names[0]
