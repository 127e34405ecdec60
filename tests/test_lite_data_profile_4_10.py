"""The optional "4.10" data profile: the 4.10.0.75689 differences, and that it never mixes with "3.16.1"."""

from __future__ import annotations

import pytest

from sc2_envs.lite.data import ProfileMismatchError, check_same_profile, get_profile
from sc2_envs.lite.data import profile_3_16_1 as p316
from sc2_envs.lite.data import profile_4_10 as p410


def test_registry_serves_both_profiles():
    assert get_profile("4.10") is p410 and get_profile("3.16.1") is p316


def test_stalker_hits_13_plus_5_every_1_87_seconds():
    (w,) = p410.UNITS["Stalker"].weapons
    assert (w.damage, w.bonus_damage, w.cooldown_s) == (13, 5, 1.87)


def test_marauder_fires_one_grenade_of_10_plus_10():
    (w,) = p410.UNITS["Marauder"].weapons
    assert (w.damage, w.attacks, w.bonus_damage) == (10, 1, 10)


def test_assimilator_and_resources_follow_4_10():
    assert (p410.UNITS["Assimilator"].hp, p410.UNITS["Assimilator"].shield) == (300, 300)
    assert (p410.ECONOMY.mineral_field_contents, p410.ECONOMY.mineral_field_750_contents, p410.ECONOMY.geyser_contents) == (
        1800,
        900,
        2250,
    )


def test_nexus_has_chrono_energy_and_no_permanent_buff():
    nexus = p410.UNITS["Nexus"]
    assert (nexus.energy_start, nexus.energy_max) == (50, 200)
    assert p410.ECONOMY.train_time(p410.UNITS["Probe"], "Nexus") == 272
    assert (p410.ECONOMY.chrono_energy_cost, p410.ECONOMY.chrono_duration, p410.ECONOMY.chrono_rate) == (50, 448, 1.5)
    assert p316.ECONOMY.chrono_energy_cost == 0


def test_unchanged_units_equal_3_16_1_but_for_the_profile_name():
    for name in ("Probe", "Zealot", "Pylon", "Gateway", "SCV", "Marine", "Barracks", "OrbitalCommand"):
        a, b = p316.UNITS[name], p410.UNITS[name]
        assert b.profile == "4.10"
        assert (a.minerals, a.gas, a.build_time, a.hp, a.shield, a.speed) == (
            b.minerals,
            b.gas,
            b.build_time,
            b.hp,
            b.shield,
            b.speed,
        )


def test_every_record_carries_the_4_10_name():
    assert all(u.profile == "4.10" and all(w.profile == "4.10" for w in u.weapons) for u in p410.UNITS.values())
    assert p410.ECONOMY.profile == "4.10"


def test_profiles_do_not_mix():
    with pytest.raises(ProfileMismatchError):
        check_same_profile(p316.UNITS["Stalker"], p410.UNITS["Zealot"])
    with pytest.raises(ProfileMismatchError):
        p316.ECONOMY.train_time(p410.UNITS["Probe"], "Nexus")


def test_provenance_names_the_4_10_commit():
    assert "@db03e82a" in p410.PROVENANCE["Stalker"]["weapon.ParticleDisruptors"]
    assert all("@f597e057" not in s for d in p410.PROVENANCE.values() for s in d.values())
    assert "build_time_at_nexus" not in p410.PROVENANCE["Probe"]
