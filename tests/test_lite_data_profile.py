"""The lite engine's "3.16.1" data profile: known values, ids, provenance and the profile guard."""

from __future__ import annotations

import dataclasses
import gzip
import json
from pathlib import Path

import pytest

from sc2_envs.lite.data import ProfileMismatchError, check_same_profile, get_profile
from sc2_envs.lite.data import profile_3_16_1 as prof

STABLEID = Path(__file__).resolve().parents[1] / "sc2_envs" / "replays" / "data" / "stableid.json.gz"


@pytest.fixture(scope="module")
def stableid() -> dict:
    with gzip.open(STABLEID, "rt") as f:
        return json.load(f)


def test_probe_costs_50_minerals_one_supply_and_272_loops():
    probe = prof.UNITS["Probe"]
    assert (probe.minerals, probe.gas, probe.supply_cost, probe.build_time) == (50, 0, 1, 272)


def test_probe_at_nexus_takes_237_loops_and_is_born_236_apart():
    assert prof.ECONOMY.train_time(prof.UNITS["Probe"], "Nexus") == 237
    assert prof.BIRTH_GAP_MEASURED["Probe"] == 237 - 1 == prof.ECONOMY.nexus_probe_interval_measured


def test_scv_at_command_center_is_not_time_scaled():
    assert prof.ECONOMY.train_time(prof.UNITS["SCV"], "CommandCenter") == 272


@pytest.mark.parametrize(
    "name,loops",
    [
        ("Pylon", 400),
        ("Gateway", 1040),
        ("CyberneticsCore", 800),
        ("Assimilator", 480),
        ("SupplyDepot", 480),
        ("Barracks", 1040),
        ("BarracksTechLab", 400),
        ("Refinery", 480),
        ("Factory", 960),
        ("Starport", 800),
        ("CommandCenter", 1600),
    ],
)
def test_structure_build_time_equals_replay_init_to_done(name, loops):
    # The replays' UnitInit -> UnitDone intervals (1,462 of 1,463 structures).
    assert prof.UNITS[name].build_time == loops


def test_every_unit_but_the_mule_born_back_to_back_one_loop_under_its_train_time():
    for name, gap in prof.BIRTH_GAP_MEASURED.items():
        producer = prof.UNITS[name].producer
        assert prof.ECONOMY.train_time(prof.UNITS[name], producer) - 1 == gap


def test_supply_providers_give_15_for_town_halls_and_8_for_pylon_and_depot():
    assert [prof.UNITS[n].supply_provided for n in ("Nexus", "CommandCenter", "OrbitalCommand", "Pylon", "SupplyDepot")] == [
        15,
        15,
        15,
        8,
        8,
    ]


def test_orbital_morph_costs_150_of_550_and_starts_with_mule_energy():
    oc = prof.UNITS["OrbitalCommand"]
    assert (oc.minerals, oc.minerals_total, oc.build_time, oc.producer) == (150, 550, 560, "CommandCenter")
    assert oc.energy_start == prof.ECONOMY.mule_energy_cost == 50 and oc.energy_max == 200
    assert oc.energy_regen * prof.LOOPS_PER_SECOND == pytest.approx(0.5625)


def test_mule_energy_refill_matches_replay_gap_between_mules():
    # 50 energy at 0.5625 per normal second is 1422 loops; the replays' commonest MULE gap is 1424.
    loops = prof.ECONOMY.mule_energy_cost / prof.UNITS["OrbitalCommand"].energy_regen
    assert abs(loops - 1424) < 3


def test_zealot_hits_twice_for_8():
    (w,) = prof.UNITS["Zealot"].weapons
    assert (w.damage, w.attacks, w.cooldown_s, w.targets) == (8, 2, 1.2, "ground")


def test_stalker_keeps_liberty_weapon_in_3_16():
    (w,) = prof.UNITS["Stalker"].weapons
    assert (w.damage, w.bonus_attribute, w.bonus_damage, w.cooldown_s, w.range) == (10, "armored", 4, 1.44, 6)
    assert w.hits_air


def test_marauder_fires_two_grenades_of_5_plus_5_armoured():
    (w,) = prof.UNITS["Marauder"].weapons
    assert (w.damage, w.attacks, w.bonus_damage, w.bonus_attribute) == (5, 2, 5, "armored")


def test_marine_weapon_period_is_on_the_1_4096_second_grid():
    (w,) = prof.UNITS["Marine"].weapons
    assert w.cooldown == pytest.approx(3526 / 4096 * 16)
    assert w.range == 5


def test_economy_mining_constants():
    e = prof.ECONOMY
    assert (e.minerals_per_trip, e.gas_per_trip, e.mule_minerals_per_trip) == (5, 4, 25)
    assert e.mineral_harvest_time == pytest.approx(44.576)
    assert (e.mineral_field_contents, e.mineral_field_750_contents, e.geyser_contents) == (1500, 900, 2000)
    assert e.power_radius == prof.UNITS["Pylon"].power_radius == 6.5


def test_type_ids_match_stableid_names(stableid):
    ids = {u["name"]: u["id"] for u in stableid["Units"]}
    for name, unit in prof.UNITS.items():
        assert ids[name] == unit.type_id, name


def test_ability_ids_match_stableid_ability_and_command(stableid):
    by_id = {a["id"]: a for a in stableid["Abilities"]}
    for name, unit in prof.UNITS.items():
        if unit.ability_id is None:
            continue
        entry = by_id[unit.ability_id]
        link, cmd = unit.ability_name.split(",")
        assert entry["name"] == link, name
        if cmd.startswith(("Train", "Build")):
            assert entry["index"] == int(cmd.removeprefix("Train").removeprefix("Build")) - 1, name


def test_requirements_and_producers_name_profile_units():
    for unit in prof.UNITS.values():
        for req in unit.requirements:
            assert req in prof.UNITS
        assert unit.producer is None or unit.producer in prof.UNITS


def test_structures_have_footprints_and_units_do_not():
    for unit in prof.UNITS.values():
        assert (unit.footprint is not None) == unit.is_structure, unit.name


def test_every_unit_has_provenance_for_its_core_stats():
    for name, unit in prof.UNITS.items():
        src = prof.PROVENANCE[name]
        for stat in ("hp", "shield", "armor", "speed", "sight", "radius", "minerals", "type_id"):
            assert src[stat], (name, stat)
        if unit.ability_name:
            assert "build_time" in src and "ability_id" in src
        for w in unit.weapons:
            assert f"weapon.{w.name}" in src


def test_every_economy_field_has_provenance():
    fields = {f.name for f in dataclasses.fields(prof.Economy)} - {"profile", "start_gas"}
    assert fields <= set(prof.ECONOMY_PROVENANCE)


def test_provenance_cites_no_machine_paths():
    texts = [s for d in prof.PROVENANCE.values() for s in d.values()] + list(prof.ECONOMY_PROVENANCE.values())
    assert not any("/work/" in t or "shared/" in t for t in texts)


def test_unit_types_are_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        prof.UNITS["Probe"].minerals = 0  # type: ignore[misc]


def test_get_profile_returns_the_module_and_refuses_unknown_names():
    assert get_profile("3.16.1") is prof
    with pytest.raises(ValueError, match="served profiles"):
        get_profile("5.0.14")


def test_records_of_two_profiles_cannot_be_mixed():
    other = dataclasses.replace(prof.UNITS["Stalker"], profile="4.10")
    assert check_same_profile(prof.UNITS["Probe"], prof.ECONOMY) == "3.16.1"
    with pytest.raises(ProfileMismatchError, match="4.10"):
        check_same_profile(prof.UNITS["Probe"], other)
    with pytest.raises(ProfileMismatchError):
        prof.ECONOMY.train_time(other, "Gateway")


def test_check_same_profile_refuses_objects_without_a_profile():
    with pytest.raises(ValueError, match="no 'profile'"):
        check_same_profile(object())


def test_protoss_shields_regenerate_2_per_second_after_10_seconds():
    zealot, marine = prof.UNITS["Zealot"], prof.UNITS["Marine"]
    assert zealot.shield_regen * prof.LOOPS_PER_SECOND == 2 and zealot.shield_regen_delay == 160
    assert marine.shield_regen == 0 and marine.shield_regen_delay == 0


def test_workers_accelerate_slowly_and_structures_are_low_priority_targets():
    assert prof.UNITS["Probe"].acceleration == 2.5 and prof.UNITS["Marine"].acceleration == 1000
    assert prof.UNITS["Pylon"].attack_target_priority == 11 < prof.UNITS["PhotonCannon"].attack_target_priority


@pytest.mark.parametrize("delivered,loop,rate", [(120, 320, 671), (125, 480, 699), (130, 960, 727), (25, 160, 209), (0, 5, 0)])
def test_collection_rate_matches_replay_player_stats(delivered, loop, rate):
    # Values seen in the replays' PlayerStats (e.g. 671, 699, 727 minerals per real minute).
    assert prof.ECONOMY.collection_rate(delivered, loop) == rate


def test_collection_rate_refuses_loop_zero():
    with pytest.raises(ValueError, match="loop"):
        prof.ECONOMY.collection_rate(5, 0)


def test_opening_collection_rates_are_whole_trips_of_5_minerals():
    rates = prof.OPENING_COLLECTION_MEASURED
    assert prof.ECONOMY.collection_rate(25, 160) == rates[160]
    assert prof.ECONOMY.collection_rate(120, 320) == rates[320]
    assert prof.ECONOMY.collection_rate(125, 480) == rates[480]
