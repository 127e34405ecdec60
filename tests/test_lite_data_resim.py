"""The replay side of benchmarks/fullgame_resim.py: what it reads from a real Simple64 replay."""

from __future__ import annotations

import dataclasses

import pytest
from conftest import TEST_DATA, load_algo

from sc2_envs.lite.data.profile_3_16_1 import BIRTH_GAP_MEASURED

REPLAY = TEST_DATA / "replays" / "mas_simple64" / "Simple64_2021-11-21-11-55-57.SC2Replay"


@pytest.fixture(scope="module")
def ref():
    return load_algo("fullgame_resim", "benchmarks").reference(REPLAY)


def test_contact_is_the_first_kill_by_the_other_player(ref):
    # This replay's first kill is the human's: an SCV at loop 6,867 (MULE expiries do not count).
    assert ref.contact == 6867


def test_probe_trains_start_one_nexus_train_time_before_birth(ref):
    probes = [t for t in ref.trains if t[1] == "Probe"]
    assert probes[0][0] == 359 - 237
    assert {b[0] - a[0] for a, b in zip(probes[:3], probes[1:3], strict=False)} == {BIRTH_GAP_MEASURED["Probe"]}


def test_player_stats_samples_come_at_loop_1_then_every_160_loops(ref):
    loops = [s[0] for s in ref.stats[:5]]
    assert loops == [1, 160, 320, 480, 640]


def test_structures_carry_init_and_done_loops(ref):
    name, init, done = ref.structures[0]
    assert (name, init, done) == ("Pylon", 606, 1006)


def test_loop_zero_units_include_both_town_halls(ref):
    halls = {(n, o) for _, n, o, _, _ in ref.initial if n in ("Nexus", "CommandCenter")}
    assert halls == {("Nexus", 1), ("CommandCenter", 2)}


def test_a_human_replay_is_not_classed_as_an_agent_one(ref):
    assert not load_algo("fullgame_resim", "benchmarks").played_by_agent(ref.actions)


def test_commands_all_on_the_8_loop_grid_are_classed_as_an_agent_one(ref):
    resim = load_algo("fullgame_resim", "benchmarks")
    on_grid = [dataclasses.replace(a, game_loop=8 * k) for k, a in enumerate(ref.actions)]
    assert len(on_grid) >= 20 and resim.played_by_agent(on_grid)


def test_compare_keeps_every_sample_with_its_signed_error():
    resim = load_algo("fullgame_resim", "benchmarks")
    ref = resim.Reference(contact=1000, stats=[(160, 200, 13.0, 12)], structures=[["Pylon", 100, 500]])
    sim = {"samples": [(160, 300, 13.0, 12.0)], "structures": [["Pylon", 100, 500]], "end": 1000}
    assert resim.compare(ref, sim, 16)["samples"] == [(160, 200, 300, 0.5, 13.0, 13.0, 12, 12.0)]
