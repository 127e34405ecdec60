"""The very_easy Terran bot fitted to the Simple64 replays, and its seeded timeline sampler."""

from __future__ import annotations

import dataclasses

import pytest
from conftest import TEST_DATA, load_algo

from sc2_envs.lite.data import bot_very_easy as bot
from sc2_envs.lite.data.profile_3_16_1 import UNITS

REPLAYS = sorted((TEST_DATA / "replays" / "mas_simple64").glob("*.SC2Replay"))


def _loops(timeline) -> dict[str, int]:
    return {e.name: e.loop for e in timeline}


def test_same_seed_gives_the_same_timeline():
    assert bot.sample_timeline(7) == bot.sample_timeline(7)


def test_different_seeds_jitter_the_opening():
    draws = {tuple(sorted(_loops(bot.sample_timeline(s)).items())) for s in range(10)}
    assert len(draws) > 1


def test_sampler_leaves_the_global_numpy_state_alone():
    import numpy as np

    np.random.seed(3)
    expected = np.random.random()
    np.random.seed(3)
    bot.sample_timeline(11)
    assert np.random.random() == expected


def test_every_opening_event_stays_in_the_replays_range_over_100_seeds():
    for seed in range(100):
        loops = _loops(bot.sample_timeline(seed))
        for ev in bot.OPENING:
            if ev.name in loops:
                assert ev.min_loop <= loops[ev.name] <= ev.max_loop, (seed, ev.name, loops[ev.name])


def test_worker_and_army_counts_stay_in_the_replays_ranges():
    for seed in range(100):
        tl = bot.sample_timeline(seed)
        for loop, rows in bot.COUNTS.items():
            got = bot.counts_at(tl, loop)
            for key in ("scv_alive", "army_alive"):
                lo, _, hi = rows[key]
                assert lo <= got[key] <= hi, (seed, loop, key, got[key])


def test_untouched_bot_reaches_20_scvs_by_4_minutes():
    assert bot.counts_at(bot.sample_timeline(0), 5376)["scv_alive"] == bot.BotParams().worker_target == 20


def test_prerequisites_are_done_before_what_needs_them():
    for seed in range(100):
        t = _loops(bot.sample_timeline(seed))
        barracks_done = t["barracks_1"] + UNITS["Barracks"].build_time
        assert t["barracks_1"] >= t["supply_depot_1"] + UNITS["SupplyDepot"].build_time
        assert t["marine_1"] >= barracks_done + UNITS["Marine"].build_time
        assert t["barracks_tech_lab"] >= barracks_done
        assert t["orbital_command"] >= barracks_done + UNITS["OrbitalCommand"].build_time
        assert t["marine_2"] >= t["barracks_tech_lab"] + UNITS["BarracksTechLab"].build_time + UNITS["Marine"].build_time


def test_scvs_after_the_orbital_come_271_loops_apart():
    t = _loops(bot.sample_timeline(4))
    assert [t[f"scv_{k + 1}"] - t[f"scv_{k}"] for k in range(3, 8)] == [bot.SCV_INTERVAL] * 5


def test_mules_come_every_1424_loops():
    tl = bot.sample_timeline(5)
    mules = [e.loop for e in tl if e.unit == "MULE"]
    assert {b - a for a, b in zip(mules, mules[1:], strict=False)} == {bot.MULE_INTERVAL}


def test_units_start_one_train_time_before_they_are_born():
    for e in bot.sample_timeline(2):
        if e.kind == "born" and e.unit in ("SCV", "Marine", "Marauder"):
            assert e.loop - e.start_loop == UNITS[e.unit].build_time


def test_structures_have_the_replays_sites():
    tl = {e.name: e for e in bot.sample_timeline(1)}
    assert tl["barracks_1"].position == (51.5, 27.5) and tl["barracks_tech_lab"].position == (54.0, 27.0)
    assert tl["refinery_1"].position == (56.5, 20.5)


def test_starport_only_follows_a_factory():
    for seed in range(200):
        units = {e.unit for e in bot.sample_timeline(seed)}
        assert "Starport" not in units or "Factory" in units


def test_bot_never_attacks_by_default_and_every_assumption_is_documented():
    assert bot.BotParams().attack_loop is None
    for key in ("attack_loop", "defend_radius", "army_growth", "rebuild", "later_structures"):
        assert bot.ASSUMPTIONS[key]


def test_parameters_change_the_timeline():
    few = bot.sample_timeline(0, dataclasses.replace(bot.BotParams(), army_cap=3, later_tech=False))
    assert bot.counts_at(few, 18000)["army_trained"] == 3


def test_end_loop_cuts_the_timeline():
    assert max(e.loop for e in bot.sample_timeline(0, end_loop=3000)) <= 3000


@pytest.mark.parametrize("seed", [-1, 1.5, True, "0"])
def test_bad_seed_is_refused(seed):
    with pytest.raises(ValueError, match="seed"):
        bot.sample_timeline(seed)


def test_bad_end_loop_is_refused():
    with pytest.raises(ValueError, match="end_loop"):
        bot.sample_timeline(0, end_loop=0)


@pytest.mark.parametrize("replay", REPLAYS, ids=lambda p: p.name)
def test_committed_replays_fall_inside_the_fitted_ranges(replay):
    fit = load_algo("lite_bot_fit", "scripts")
    rep = fit.read(replay)
    for ev in bot.OPENING:
        hit = fit.nth_event(rep, ev.kind, ev.unit, ev.nth)
        if hit is not None:
            assert ev.min_loop <= hit[0] <= ev.max_loop, ev.name


def test_deciles_span_min_to_max():
    for ev in bot.OPENING:
        assert ev.deciles[0] == ev.min_loop and ev.deciles[-1] == ev.max_loop
        assert list(ev.deciles) == sorted(ev.deciles)


@pytest.mark.slow
def test_fit_on_all_replays_reproduces_the_module(shared_data_dir):
    fit = load_algo("lite_bot_fit", "scripts")
    reps = [fit.read(p) for p in sorted((shared_data_dir / "replays" / "mas_simple64").glob("*.SC2Replay"))]
    res = fit.fit(reps)
    for ev in bot.OPENING:
        row = res["opening"][ev.name]
        assert (row["min"], row["median"], row["max"], row["n"], row["deciles"]) == (
            ev.min_loop,
            ev.median_loop,
            ev.max_loop,
            ev.replays,
            ev.deciles,
        )
    for loop, rows in res["counts"].items():
        assert {k: v[:3] for k, v in rows.items()} == bot.COUNTS[loop]


def test_sample_opening_lists_the_scripted_orders_in_loop_order():
    opening = bot.sample_opening(3)
    assert opening == sorted(opening)
    units = [u for _, _, u in opening]
    assert units.count("SCV") == 2 and units.count("SupplyDepot") == 2 and units.count("Refinery") == 2
    assert ("done", "OrbitalCommand") in {(k, u) for _, k, u in opening}
    assert all(u in UNITS for u in units)


def test_first_mule_follows_the_orbital_command():
    for seed in range(100):
        t = _loops(bot.sample_timeline(seed))
        assert t["mule_1"] > t["orbital_command"]


def test_bot_benchmark_timeline_source_finds_every_event_in_range():
    bench = load_algo("fullgame_bot", "benchmarks")
    events, counts = bench.from_timelines(20)
    for per_game in events:
        for ev in bot.OPENING:
            if ev.name in per_game:
                assert ev.min_loop <= per_game[ev.name] <= ev.max_loop
    assert all(set(c) == set(bot.COUNTS) for c in counts)


def test_later_structures_go_to_the_replays_cells():
    from sc2_envs.lite.data import simple64

    placed = {e.unit: e.position for s in range(100) for e in bot.sample_timeline(s) if e.unit in bot.LATER_TECH}
    assert placed["CommandCenter"] == (25.5, 23.5) and placed["Factory"] == (58.5, 34.5)
    # The expansion's Command Center stands at the south-west base, beside its minerals.
    sw = [(m.x, m.y) for m in simple64.MINERAL_FIELDS if m.base == "south_west"]
    assert min(abs(x - 25.5) + abs(y - 23.5) for x, y in sw) < 9


def test_every_structure_site_is_buildable_on_the_terrain_description():
    from sc2_envs.lite.data import simple64

    place = simple64.placement_grid()
    for name, centre in bot.STRUCTURE_SITES.items():
        if name.startswith("refinery"):
            assert centre in simple64.GEYSERS
            continue
        unit = {"commandcenter": "CommandCenter", "factory": "Factory", "starport": "Starport"}.get(name)
        unit = unit or (
            "SupplyDepot" if name.startswith("supply_depot") else "Barracks" if name == "barracks_1" else "BarracksTechLab"
        )
        assert place[simple64.footprint_cells(centre, UNITS[unit].footprint)].all(), name


def test_untouched_bot_opens_marine_marine_marauder_then_a_marine_as_the_replays_without_a_loss_do():
    assert bot.ARMY_ORDERS_BEFORE_LOSS[0] == (("Marine", "Marine", "Marauder"), 47)
    for seed in range(50):
        army = bot.sample_army(seed)
        assert army[:4] == ("Marine", "Marine", "Marauder", bot.FOURTH_BEFORE_LOSS[0])
        assert len(army) == bot.BotParams().army_cap


def test_the_first_depot_lowered_and_the_third_depot_are_later_orders_at_their_sampled_loops():
    for seed in range(20):
        later = bot.sample_later_orders(seed)
        t = _loops(bot.sample_timeline(seed))
        assert later == [
            (t["supply_depot_1_lowered"], "done", "SupplyDepotLowered"),
            (t["supply_depot_3"], "init", "SupplyDepot"),
        ]
        assert t["supply_depot_1_lowered"] >= t["supply_depot_1"] + UNITS["SupplyDepot"].build_time
