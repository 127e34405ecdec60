"""Data profile "4.10": SC2 4.10.0.75689 (the last Linux package) with the multiplayer mods merged.

The same units, catalog fields and merge order as ``profile_3_16_1`` (whose docstring explains
them), read from SC2Mapster/SC2GameData at db03e82a9e091888d904a43245fc56fd6d0bbedb ("Update SC2
data to 4.10.0.75689"). ``scripts/lite_game_data.py GAMEDATA --commit db03e82a --profile 4.10
--check`` diffs every unit stat with the XML. Only these values differ from "3.16.1"
(``profile_3_16_1.DIFFERENCES_4_10``):

* Stalker: Particle Disruptors 13 (+5 armoured), period 1.87 s (VoidMulti);
* Marauder: one Punisher Grenade of 10 (+10 armoured) (Liberty's; the VoidMulti launch set of two
  5 (+5) missiles is no longer the weapon's effect);
* Assimilator: 300 HP and 300 shields (VoidMulti);
* Nexus: 50 of 200 energy (VoidMulti) and Chrono Boost (``ChronoBoostEnergyCost``: 50 energy,
  28 normal s, production x1.5) instead of 3.16.1's permanent x1.15;
* resources: ``MineralField`` 1800, ``VespeneGeyser`` 2250 (VoidMulti; ``MineralField750`` stays 900).

No replay of this build is in the project's data, so the replay measurements of "3.16.1" (Probe
birth gaps, the bot's timeline) have no counterpart here: ``ECONOMY.nexus_probe_interval_measured``
is the back-to-back gap the data implies (272 - 1). Records carry ``profile="4.10"``;
``profiles.check_same_profile`` refuses to mix them with "3.16.1".
"""

from __future__ import annotations

from dataclasses import replace

from sc2_envs.lite.data import profile_3_16_1 as _base
from sc2_envs.lite.data.profile_3_16_1 import LOOPS_PER_SECOND, TECHLAB_OFFSET, Economy, UnitType, Weapon

PROFILE = "4.10"
"""This profile's name."""

GAME_DATA_REPO = _base.GAME_DATA_REPO
GAME_DATA_COMMIT = _base.GAME_DATA_COMMIT_4_10
MOD_ORDER = _base.MOD_ORDER


def _retag(u: UnitType) -> UnitType:
    return replace(u, profile=PROFILE, weapons=tuple(replace(w, profile=PROFILE) for w in u.weapons))


UNITS: dict[str, UnitType] = {name: _retag(u) for name, u in _base.UNITS.items()}
"""Unit name -> ``UnitType`` of this profile (the "3.16.1" types with the 4.10 differences)."""

UNITS["Stalker"] = replace(
    UNITS["Stalker"],
    weapons=(
        Weapon(
            "ParticleDisruptors",
            range=6,
            damage=13,
            attacks=1,
            cooldown_s=1.87,
            damage_point_s=0.167,
            targets="ground_air",
            bonus_attribute="armored",
            bonus_damage=5,
            missile=True,
            profile=PROFILE,
        ),
    ),
)
UNITS["Marauder"] = replace(
    UNITS["Marauder"],
    weapons=(
        Weapon(
            "PunisherGrenades",
            range=6,
            damage=10,
            attacks=1,
            cooldown_s=1.5,
            damage_point_s=0.0,
            targets="ground",
            bonus_attribute="armored",
            bonus_damage=10,
            missile=True,
            profile=PROFILE,
        ),
    ),
)
UNITS["Assimilator"] = replace(UNITS["Assimilator"], hp=300, shield=300)
UNITS["Nexus"] = replace(UNITS["Nexus"], energy_start=50, energy_max=200, energy_regen=0.5625 / LOOPS_PER_SECOND)

ECONOMY = replace(
    _base.ECONOMY,
    mineral_field_contents=1800,
    geyser_contents=2250,
    nexus_train_time_scale=1.0,
    nexus_probe_interval_measured=271,
    chrono_energy_cost=50,
    chrono_duration=28 * LOOPS_PER_SECOND,
    chrono_rate=1.5,
    profile=PROFILE,
)
"""The economy constants of this profile."""

BIRTH_GAP_MEASURED: dict[str, int] = {}
"""No replays of this build: nothing measured (see ``profile_3_16_1.BIRTH_GAP_MEASURED``)."""


def _at_this_commit(text: str) -> str:
    return text.replace(f"@{_base.GAME_DATA_COMMIT[:8]}", f"@{GAME_DATA_COMMIT[:8]}")


def _xml(mod: str, catalog: str, entry: str, fld: str) -> str:
    return f"{GAME_DATA_REPO}@{GAME_DATA_COMMIT[:8]} mods/{mod}.sc2mod/base.sc2data/GameData/{catalog}Data.xml {entry} {fld}"


PROVENANCE: dict[str, dict[str, str]] = {
    name: {stat: _at_this_commit(src) for stat, src in stats.items()} for name, stats in _base.PROVENANCE.items()
}
"""``PROVENANCE[unit][stat]``: the public source of each value of ``UNITS``."""
for _name in PROVENANCE:
    PROVENANCE[_name].pop("build_time_at_nexus", None)  # the 3.16.1 replay measurement
PROVENANCE["Stalker"]["weapon.ParticleDisruptors"] = (
    _xml("voidmulti", "Weapon", "CWeaponLegacy id=ParticleDisruptors", "Period")
    + "; damage and AttributeBonus: "
    + _xml("voidmulti", "Effect", "CEffectDamage id=ParticleDisruptorsU", "Amount, AttributeBonus")
)
PROVENANCE["Marauder"]["weapon.PunisherGrenades"] = (
    _xml("liberty", "Weapon", "CWeaponLegacy id=PunisherGrenades", "Range, Period, Effect=PunisherGrenadesLM")
    + "; damage: "
    + _xml("liberty", "Effect", "CEffectDamage id=PunisherGrenadesU", "Amount, AttributeBonus")
)
PROVENANCE["Assimilator"]["hp"] = _xml("voidmulti", "Unit", "CUnit id=Assimilator", "LifeMax")
PROVENANCE["Assimilator"]["shield"] = _xml("voidmulti", "Unit", "CUnit id=Assimilator", "ShieldsMax")
PROVENANCE["Nexus"]["energy"] = _xml("voidmulti", "Unit", "CUnit id=Nexus", "EnergyStart, EnergyMax")

ECONOMY_PROVENANCE: dict[str, str] = {k: _at_this_commit(v) for k, v in _base.ECONOMY_PROVENANCE.items()}
"""``ECONOMY_PROVENANCE[field]``: the source of each ``ECONOMY`` value."""
ECONOMY_PROVENANCE.update(
    {
        "mineral_field_contents": _xml("voidmulti", "Behavior", "CBehaviorResource id=MineralFieldMinerals", "Contents"),
        "geyser_contents": _xml("voidmulti", "Behavior", "CBehaviorResource id=RawVespeneGeyserGas", "Contents"),
        "nexus_train_time_scale": "no permanent production buff in 4.10 (Chrono Boost instead: chrono_*)",
        "nexus_probe_interval_measured": "not measured (no replays of this build): train time 272 - 1",
        "chrono_energy_cost": _xml("voidmulti", "Abil", "id=ChronoBoostEnergyCost", "Cost Vital[Energy]"),
        "chrono_duration": _xml("voidmulti", "Behavior", "CBehaviorBuff id=ChronoBoostEnergyCost", "Duration 28 x 16"),
        "chrono_rate": _xml(
            "voidmulti",
            "Behavior",
            "CBehaviorBuff id=ChronoBoostEnergyCost",
            "Modification RateMultiplierArray[Queueable] 1.5",
        ),
    }
)

__all__ = [
    "BIRTH_GAP_MEASURED",
    "ECONOMY",
    "ECONOMY_PROVENANCE",
    "Economy",
    "GAME_DATA_COMMIT",
    "LOOPS_PER_SECOND",
    "PROFILE",
    "PROVENANCE",
    "TECHLAB_OFFSET",
    "UNITS",
    "UnitType",
    "Weapon",
]
