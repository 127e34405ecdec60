"""The lite engine's rules, one behaviour per test, on Simple64 with game data profile 3.16.1.

Expected numbers come from the profile (``sc2_envs.lite.data.profile_3_16_1``: build times,
costs, weapons) and from the mini-AlphaStar replays' measurements it records (a Probe every 236
loops at a Nexus).
"""

import os
import subprocess
import sys

import numpy as np
import pytest
from conftest import REPO

from sc2_envs.lite import kernels
from sc2_envs.lite.catalog import EC_MINERAL_HARVEST, TI_ABILITY_ID, TI_GAME_ID
from sc2_envs.lite.engine import LiteEngine
from sc2_envs.lite.layout import (
    CK_KIND,
    CK_PARAM,
    CK_PLAYER,
    CK_QUEUED,
    CK_TARGET,
    CMD_ATTACK_UNIT,
    CMD_BUILD_PT,
    CMD_BUILD_UNIT,
    CMD_CANCEL_LAST,
    CMD_GATHER,
    CMD_MOVE_PT,
    CMD_TRAIN,
    NCK,
    OI_KIND,
    OI_TARGET,
    ORD_GATHER,
    ORD_MOVE,
    PF_COLLECTED_MINERALS,
    PF_COLLECTED_VESPENE,
    PF_FOOD_CAP,
    PF_MINERALS,
    PF_VESPENE,
    RESULT_P1_WINS,
    UF_HP,
    UF_SHIELD,
    UF_X,
    UF_Y,
    UI_ALIVE,
    UI_CARGO,
    UI_CONTENTS,
    UI_DONE,
    UI_GATHER,
    UI_NORDERS,
    UI_NQUEUE,
    UI_OCCUPANT,
    UI_OWNER,
    UI_TYPE,
    UI_WSTATE,
    WS_HARVEST,
)


@pytest.fixture(scope="module")
def engine():
    return LiteEngine(1)


@pytest.fixture
def eng(engine):
    engine.reset()
    return engine


def slots(eng, name, owner=None, done=None):
    ui = eng.state.ui[0]
    m = (ui[:, UI_ALIVE] == 1) & (ui[:, UI_TYPE] == eng.catalog.ids[name])
    if owner is not None:
        m &= ui[:, UI_OWNER] == owner
    if done is not None:
        m &= ui[:, UI_DONE] == int(done)
    return np.flatnonzero(m)


def command(eng, kind, sel, param=0, target=-1, x=0.0, y=0.0, player=1):
    ck = np.zeros((1, NCK), np.int64)
    ck[0, CK_KIND], ck[0, CK_PARAM], ck[0, CK_TARGET], ck[0, CK_PLAYER] = kind, param, target, player
    cs = np.full((1, max(len(sel), 1)), -1, np.int64)
    cs[0, : len(sel)] = sel
    return int(eng.apply(ck, np.array([[x, y]], np.float32), cs)[0])


def remove(eng, sl):
    eng.state.ui[0, sl, UI_ALIVE] = 0


def test_start_state_matches_every_replay(eng):
    pf = eng.state.pf[0]
    assert len(slots(eng, "Probe", 1)) == 12 and len(slots(eng, "SCV", 2)) == 12
    assert len(slots(eng, "MineralField")) + len(slots(eng, "MineralField750")) == 32
    assert len(slots(eng, "VespeneGeyser")) == 8
    assert pf[1, PF_MINERALS] == 50 and pf[2, PF_MINERALS] == 50


def test_two_workers_saturate_a_patch_and_a_third_mostly_waits(eng):
    def income(k):
        eng.reset()
        probes = slots(eng, "Probe", 1)
        patch = eng.state.ui[0, probes[0], UI_GATHER]
        remove(eng, probes[k:])
        remove(eng, slots(eng, "SCV", 2))
        for field in np.concatenate([slots(eng, "MineralField"), slots(eng, "MineralField750")]):
            if field != patch:  # no other field to move on to: the workers share this one
                eng.state.ui[0, field, UI_CONTENTS] = 0
        for p in probes[:k]:
            eng.state.ui[0, p, UI_GATHER] = patch
            eng.state.oi[0, p, 0, OI_KIND], eng.state.oi[0, p, 0, OI_TARGET] = ORD_GATHER, patch
            eng.state.ui[0, p, UI_NORDERS] = 1
        eng.advance(400)
        start = eng.state.pf[0, 1, PF_COLLECTED_MINERALS]
        eng.advance(2000)
        return eng.state.pf[0, 1, PF_COLLECTED_MINERALS] - start

    one, two, three = income(1), income(2), income(3)
    assert two > 1.6 * one  # the second worker nearly doubles the income
    assert three < two * 1.25  # the third mostly waits for the patch (occupancy, not a rate table)


def test_a_worker_whose_field_is_taken_moves_on_to_a_free_one(eng):
    probes = slots(eng, "Probe", 1)
    patch = eng.state.ui[0, probes[0], UI_GATHER]
    remove(eng, probes[3:])
    for p in probes[:3]:
        eng.state.ui[0, p, UI_GATHER] = patch
        eng.state.oi[0, p, 0, OI_TARGET] = patch
    eng.advance(300)
    assert len(set(eng.state.ui[0, probes[:3], UI_GATHER].tolist())) >= 2


def test_a_third_worker_on_a_field_moves_on_as_far_as_the_harvest_acquire_radius(eng):
    probes = slots(eng, "Probe", 1)
    uf, ui = eng.state.uf[0], eng.state.ui[0]
    patch = ui[probes[0], UI_GATHER]
    fields = np.concatenate([slots(eng, "MineralField"), slots(eng, "MineralField750")])
    dist = np.hypot(uf[fields, UF_X] - uf[patch, UF_X], uf[fields, UF_Y] - uf[patch, UF_Y])
    (far,) = fields[(dist > 4.0) & (dist < kernels.BOUNCE_RADIUS)][:1]
    for field in fields:
        if field not in (patch, far):
            ui[field, UI_CONTENTS] = 0
    remove(eng, probes[3:])
    for p in probes[:3]:
        ui[p, UI_GATHER] = patch
        eng.state.oi[0, p, 0, OI_TARGET] = patch
    eng.advance(300)
    assert far in ui[probes[:3], UI_GATHER]


def test_two_workers_on_a_field_wait_their_turn_in_its_queue(eng):
    probes = slots(eng, "Probe", 1)
    ui = eng.state.ui[0]
    patch = ui[probes[0], UI_GATHER]
    remove(eng, probes[2:])
    for p in probes[:2]:
        ui[p, UI_GATHER] = patch
        eng.state.oi[0, p, 0, OI_TARGET] = patch
    eng.advance(600)
    assert ui[probes[:2], UI_GATHER].tolist() == [patch, patch]


def test_a_worker_sent_to_another_field_lets_the_one_it_mines_go(eng):
    probes = slots(eng, "Probe", 1)
    ui = eng.state.ui[0]
    for _ in range(200):
        eng.advance(1)
        mining = [p for p in probes if ui[p, UI_WSTATE] == WS_HARVEST]
        if mining:
            break
    p = mining[0]
    field = ui[p, UI_GATHER]
    other = next(f for f in slots(eng, "MineralField") if f != field)
    assert ui[field, UI_OCCUPANT] == p
    command(eng, CMD_GATHER, [p], target=other)
    assert ui[field, UI_OCCUPANT] == -1 and ui[p, UI_GATHER] == other


def test_a_new_gather_order_drops_the_harvest_in_progress(eng):
    # Of the game's harvest stages only WaitToReturn is uninterruptible (core AbilData.xml,
    # CAbilHarvest UninterruptibleArray), so a worker re-ordered while harvesting starts over.
    p = slots(eng, "Probe", 1)[0]
    ui = eng.state.ui[0]
    while ui[p, UI_WSTATE] != WS_HARVEST:
        eng.advance(1)
    eng.advance(30)
    command(eng, CMD_GATHER, [p], target=ui[p, UI_GATHER])
    loops = 0
    while ui[p, UI_CARGO] == 0:
        eng.advance(1)
        loops += 1
    assert loops >= int(eng.catalog.ec[EC_MINERAL_HARVEST])


def test_a_gather_with_an_order_queued_behind_it_ends_once_the_worker_holds_its_cargo(eng):
    probes = slots(eng, "Probe", 1)
    ui, oi = eng.state.ui[0], eng.state.oi[0]
    p = probes[0]
    while ui[p, UI_WSTATE] != WS_HARVEST:
        eng.advance(1)
    ck = np.zeros((1, NCK), np.int64)
    ck[0, CK_KIND], ck[0, CK_PLAYER], ck[0, CK_TARGET], ck[0, CK_QUEUED] = CMD_MOVE_PT, 1, -1, 1
    eng.apply(ck, np.array([[40.0, 50.0]], np.float32), np.array([[p]], np.int64))
    assert ui[p, UI_NORDERS] == 2  # queued behind the gather
    while ui[p, UI_CARGO] == 0:
        eng.advance(1)
    assert oi[p, 0, OI_KIND] == ORD_MOVE and ui[p, UI_NORDERS] == 1


def test_a_worker_sent_to_an_assimilator_still_warping_in_waits_and_then_gathers(eng):
    probes = slots(eng, "Probe", 1)
    uf = eng.state.uf[0]
    geyser = min(slots(eng, "VespeneGeyser"), key=lambda g: np.hypot(uf[g, UF_X] - 28.5, uf[g, UF_Y] - 60.5))
    eng.state.pf[0, 1, PF_MINERALS] = 75
    assert command(eng, CMD_BUILD_UNIT, [probes[0]], eng.catalog.ids["Assimilator"], target=geyser) == kernels.AR_SUCCESS
    while not len(slots(eng, "Assimilator", 1)):
        eng.advance(1)
    assimilator = slots(eng, "Assimilator", 1)[0]
    assert command(eng, CMD_GATHER, [probes[1]], target=assimilator) == kernels.AR_SUCCESS
    while not eng.state.ui[0, assimilator, UI_DONE]:
        eng.advance(16)
        assert eng.state.ui[0, probes[1], UI_NORDERS] == 1  # waiting at it, not idle
    eng.advance(200)
    assert eng.state.pf[0, 1, PF_COLLECTED_VESPENE] > 0


def test_train_pays_at_queue_time_and_cancel_refunds(eng):
    nexus = slots(eng, "Nexus", 1)
    assert command(eng, CMD_TRAIN, nexus, eng.catalog.ids["Probe"]) == kernels.AR_SUCCESS
    assert eng.state.pf[0, 1, PF_MINERALS] == 0
    assert command(eng, CMD_CANCEL_LAST, nexus) == kernels.AR_SUCCESS
    assert eng.state.pf[0, 1, PF_MINERALS] == 50 and eng.state.ui[0, nexus[0], UI_NQUEUE] == 0


def test_queue_holds_five_and_refuses_a_sixth(eng):
    nexus = slots(eng, "Nexus", 1)
    eng.state.pf[0, 1, PF_MINERALS] = 1000
    results = [command(eng, CMD_TRAIN, nexus, eng.catalog.ids["Probe"]) for _ in range(6)]
    assert results == [kernels.AR_SUCCESS] * 5 + [kernels.AR_QUEUE_IS_FULL]


def test_probes_are_born_236_loops_apart_at_a_nexus(eng):
    nexus = slots(eng, "Nexus", 1)
    eng.state.pf[0, 1, PF_MINERALS] = 150
    for _ in range(3):
        command(eng, CMD_TRAIN, nexus, eng.catalog.ids["Probe"])
    births = []
    for _ in range(800):
        before = len(slots(eng, "Probe", 1))
        eng.advance(1)
        if len(slots(eng, "Probe", 1)) > before:
            births.append(int(eng.game_loop[0]))
    assert np.diff(births).tolist() == [236, 236]  # the 3.16.1 replays' measured interval


def test_supply_blocked_unit_waits_for_food(eng):
    nexus = slots(eng, "Nexus", 1)
    eng.state.pf[0, 1, PF_MINERALS] = 500
    for _ in range(3):
        command(eng, CMD_TRAIN, nexus, eng.catalog.ids["Probe"])
    eng.advance(1000)  # 12 + 3 = 15 of 15: all three fit
    assert len(slots(eng, "Probe", 1)) == 15
    assert command(eng, CMD_TRAIN, nexus, eng.catalog.ids["Probe"]) == kernels.AR_NOT_ENOUGH_FOOD


def test_pylon_is_done_exactly_its_build_time_after_placement(eng):
    probe = slots(eng, "Probe", 1)[0]
    eng.state.pf[0, 1, PF_MINERALS] = 100
    assert command(eng, CMD_BUILD_PT, [probe], eng.catalog.ids["Pylon"], x=30.0, y=53.0) == kernels.AR_SUCCESS
    placed = None
    for _ in range(600):
        eng.advance(1)
        if placed is None and len(slots(eng, "Pylon", 1)):
            placed = int(eng.game_loop[0])
        if len(slots(eng, "Pylon", 1, done=True)):
            break
    assert int(eng.game_loop[0]) - placed == 400  # 25 normal s, as Init -> Done in the replays


def test_a_mining_probe_that_warps_in_a_pylon_stands_idle_after(eng):
    probe = slots(eng, "Probe", 1)[0]
    ui = eng.state.ui[0]
    eng.advance(100)
    assert ui[probe, UI_NORDERS] == 1  # mining
    eng.state.pf[0, 1, PF_MINERALS] = 100
    assert command(eng, CMD_BUILD_PT, [probe], eng.catalog.ids["Pylon"], x=30.0, y=53.0) == kernels.AR_SUCCESS
    while not len(slots(eng, "Pylon", 1)):
        eng.advance(1)
    eng.advance(50)
    assert ui[probe, UI_NORDERS] == 0


def test_gateway_needs_a_pylon_field(eng):
    probe = slots(eng, "Probe", 1)[0]
    eng.state.pf[0, 1, PF_MINERALS] = 1000
    code = command(eng, CMD_BUILD_PT, [probe], eng.catalog.ids["Gateway"], x=32.5, y=55.5)
    assert code == kernels.AR_CANT_BUILD_TOO_FAR_FROM_POWER


def test_build_site_off_the_placement_grid_is_refused(eng):
    probe = slots(eng, "Probe", 1)[0]
    eng.state.pf[0, 1, PF_MINERALS] = 100
    code = command(eng, CMD_BUILD_PT, [probe], eng.catalog.ids["Pylon"], x=2.0, y=2.0)
    assert code == kernels.AR_CANT_BUILD_LOCATION_INVALID


def test_stalker_requires_a_cybernetics_core(eng):
    nexus = slots(eng, "Nexus", 1)
    s = kernels.spawn(
        *(a[0] for a in (eng.state.uf, eng.state.ui, eng.state.oi, eng.state.pq, eng.state.occ)),
        eng.catalog.ti,
        eng.catalog.tf,
        eng.catalog.ids["Gateway"],
        1,
        34.5,
        52.5,
        True,
        eng.first_free,
    )
    eng.state.pf[0, 1, PF_MINERALS] = 500
    eng.state.pf[0, 1, PF_VESPENE] = 500
    assert nexus.size and command(eng, CMD_TRAIN, [s], eng.catalog.ids["Stalker"]) == kernels.AR_TECH_REQUIREMENTS_NOT_MET


def test_a_probe_walks_from_the_protoss_main_to_the_terran_main_over_the_ramps(eng):
    probe = slots(eng, "Probe", 1)[0]
    tx, ty = eng.map.start_locations[1]
    assert command(eng, CMD_MOVE_PT, [probe], x=tx - 4, y=ty + 4) == kernels.AR_SUCCESS
    for _ in range(200):
        eng.advance(16)
        if eng.state.ui[0, probe, UI_NORDERS] == 0:
            break
    pos = eng.state.uf[0, probe, [UF_X, UF_Y]]
    assert np.hypot(pos[0] - (tx - 4), pos[1] - (ty + 4)) < 0.5
    # every position it walked stays on pathable ground: check the end cell
    assert eng.map.pathing[int(pos[1]), int(pos[0])] == 1


def test_zealot_kills_a_marine_in_three_attacks(eng):
    st, cat = eng.state, eng.catalog
    args = (st.uf[0], st.ui[0], st.oi[0], st.pq[0], st.occ[0], cat.ti, cat.tf)
    z = kernels.spawn(*args, cat.ids["Zealot"], 1, 40.0, 40.0, True, eng.first_free)
    m = kernels.spawn(*args, cat.ids["Marine"], 2, 40.9, 40.0, True, eng.first_free)
    st.uf[0, m, UF_X] = 40.0 + 0.5 + 0.375 + 0.05  # in melee range (edge to edge 0.05 <= 0.1)
    command(eng, CMD_ATTACK_UNIT, [z], target=m)
    hp = []
    for _ in range(60):
        eng.advance(1)
        hp.append(float(st.uf[0, m, UF_HP]) if st.ui[0, m, UI_ALIVE] else 0.0)
    # 8 x 2 per attack against 0 armour; period 1.2 normal s = 19.2 loops
    assert sorted(set(hp), reverse=True)[:3] == [29.0, 13.0, 0.0]
    assert st.uf[0, z, UF_SHIELD] < 50  # the marine shot back


def test_destroying_the_last_enemy_structure_wins(eng):
    st = eng.state
    for s in np.flatnonzero((st.ui[0, :, UI_ALIVE] == 1) & (st.ui[0, :, UI_OWNER] == 2)):
        if eng.catalog.ti[st.ui[0, s, UI_TYPE], 2]:  # TI_STRUCTURE
            st.uf[0, s, UF_HP] = 1.0
            st.uf[0, s, UF_SHIELD] = 0.0
            probe = slots(eng, "Probe", 1)[0]
            st.uf[0, probe, UF_X], st.uf[0, probe, UF_Y] = st.uf[0, s, UF_X] + 2.9, st.uf[0, s, UF_Y]
            command(eng, CMD_ATTACK_UNIT, [probe], target=int(s))
    eng.advance(200)
    assert eng.result[0] == RESULT_P1_WINS


def test_a_move_off_the_map_stops_on_walkable_ground(eng):
    probe = slots(eng, "Probe", 1)[0]
    assert command(eng, CMD_MOVE_PT, [probe], x=95.0, y=60.0) == kernels.AR_SUCCESS  # the map is 88 wide
    for _ in range(100):
        eng.advance(16)
        if eng.state.ui[0, probe, UI_NORDERS] == 0:
            break
    x, y = eng.state.uf[0, probe, [UF_X, UF_Y]]
    assert eng.state.ui[0, probe, UI_NORDERS] == 0 and eng.map.pathing[int(y), int(x)] == 1


def test_a_worker_accelerates_from_a_stop_at_its_game_data_rate(eng):
    # Probe: Acceleration 2.5 and Speed 2.8125 per normal second (profile 3.16.1), 16 loops a second.
    probe = slots(eng, "Probe", 1)[0]
    x0, y0 = eng.state.uf[0, probe, [UF_X, UF_Y]]
    assert command(eng, CMD_MOVE_PT, [probe], x=x0 + 10.0, y=y0) == kernels.AR_SUCCESS
    accel, top = 2.5 / 16**2, 2.8125 / 16
    walked = []
    for _ in range(24):
        before = eng.state.uf[0, probe, [UF_X, UF_Y]].copy()
        eng.advance(1)
        walked.append(np.hypot(*(eng.state.uf[0, probe, [UF_X, UF_Y]] - before)))
    expected = [min(top, accel * (k + 1)) for k in range(24)]
    np.testing.assert_allclose(walked, expected, rtol=1e-3, atol=1e-5)


def test_a_build_refused_on_arrival_is_reported_for_its_own_player_only(eng):
    """``err`` holds each player's refusals (a count, then the codes): the bot's failed Build is not the agent's."""
    scv = slots(eng, "SCV", 2)[0]
    eng.state.pf[0, 2, PF_MINERALS] = 100
    depot = eng.catalog.ids["SupplyDepot"]
    assert command(eng, CMD_BUILD_PT, [scv], depot, x=55.0, y=32.0, player=2) == kernels.AR_SUCCESS
    eng.state.pf[0, 2, PF_MINERALS] = 0  # spent before the SCV arrives: the placement is refused then
    eng.state.err[:] = 0
    for _ in range(400):
        eng.advance(1)
        if eng.state.err[0, 1, 0] != 0:
            break
    assert eng.state.err[0, 1, :2].tolist() == [1, kernels.AR_NOT_ENOUGH_MINERALS] and eng.state.err[0, 0, 0] == 0


def test_a_process_that_will_compile_the_engine_says_so_once(tmp_path):
    code = "import sc2_envs.lite.engine as e; print(e.compile_notice(), e.compile_notice())"
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path), "PYTHONPATH": str(REPO)}
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    assert res.stdout.split() == ["True", "False"]  # an empty cache: one notice, then none
    assert res.stderr.count("compiling the engine's kernels for the first game") == 1


def _bot_depot(eng, x=55.0, y=32.0):
    """A finished Supply Depot of player 2 at (x, y)."""
    st, cat = eng.state, eng.catalog
    args = (st.uf[0], st.ui[0], st.oi[0], st.pq[0], st.occ[0], cat.ti, cat.tf)
    return kernels.spawn(*args, cat.ids["SupplyDepot"], 2, x, y, True, eng.first_free)


def test_a_finished_depot_lowers_on_its_morph_ability_at_once_and_keeps_its_supply(eng):
    # SupplyDepotLower (ability 556): no price, no Abils-section delay; SupplyDepotLowered (unit 47), Food 8
    cat = eng.catalog
    lowered = cat.ids["SupplyDepotLowered"]
    assert (cat.ti[lowered, TI_GAME_ID], cat.ti[lowered, TI_ABILITY_ID]) == (47, 556)
    depot = _bot_depot(eng)
    eng.advance(1)
    cap = eng.state.pf[0, 2, PF_FOOD_CAP]
    minerals = eng.state.pf[0, 2, PF_MINERALS]
    assert command(eng, CMD_TRAIN, [depot], lowered, player=2) == kernels.AR_SUCCESS
    eng.advance(1)
    ui = eng.state.ui[0]
    assert ui[depot, UI_TYPE] == lowered and ui[depot, UI_DONE] == 1 and ui[depot, UI_NQUEUE] == 0
    assert eng.state.pf[0, 2, PF_FOOD_CAP] == cap and eng.state.pf[0, 2, PF_MINERALS] == minerals
    # a lowered depot does not lower again
    assert command(eng, CMD_TRAIN, [depot], lowered, player=2) == kernels.AR_CANT_TARGET_THAT_UNIT


def test_a_lowered_depot_still_counts_as_a_supply_depot_for_the_barracks(eng):
    # SupplyDepotLowered's TechAliasArray is Alias_SupplyDepot (liberty UnitData)
    cat = eng.catalog
    for s in slots(eng, "SupplyDepot", 2):
        remove(eng, s)
    depot = _bot_depot(eng)
    assert command(eng, CMD_TRAIN, [depot], cat.ids["SupplyDepotLowered"], player=2) == kernels.AR_SUCCESS
    eng.advance(1)
    scv = slots(eng, "SCV", 2)[0]
    eng.state.pf[0, 2, PF_MINERALS] = 150
    assert command(eng, CMD_BUILD_PT, [scv], cat.ids["Barracks"], x=51.5, y=27.5, player=2) == kernels.AR_SUCCESS


def test_a_lowered_depot_blocks_placement_but_not_a_marine_walking_over_it(eng):
    # Footprint2x2Underground: no building on it, ground units cross it
    st, cat = eng.state, eng.catalog
    depot = _bot_depot(eng, 55.0, 32.0)
    command(eng, CMD_TRAIN, [depot], cat.ids["SupplyDepotLowered"], player=2)
    eng.advance(1)
    scv = slots(eng, "SCV", 2)[0]
    st.pf[0, 2, PF_MINERALS] = 100
    assert (
        command(eng, CMD_BUILD_PT, [scv], cat.ids["SupplyDepot"], x=55.0, y=32.0, player=2)
        == kernels.AR_CANT_BUILD_LOCATION_INVALID
    )
    args = (st.uf[0], st.ui[0], st.oi[0], st.pq[0], st.occ[0], cat.ti, cat.tf)
    marine = kernels.spawn(*args, cat.ids["Marine"], 2, 52.5, 32.0, True, eng.first_free)
    assert command(eng, CMD_MOVE_PT, [marine], x=57.5, y=32.0, player=2) == kernels.AR_SUCCESS
    on_depot = False
    for _ in range(60):
        eng.advance(1)
        x, y = st.uf[0, marine, [UF_X, UF_Y]]
        on_depot |= bool(54.0 <= x < 56.0 and 31.0 <= y < 33.0)  # the depot's 2x2 cells
    assert on_depot and abs(float(st.uf[0, marine, UF_X]) - 57.5) < 0.3
