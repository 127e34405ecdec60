"""Hand-derived combat scenarios: each number below is worked out from SC2 game data (units.py).

One env step = 8 game loops. A unit whose weapon is ready (cooldown 0) and that is in range fires
in the first loop of the step; no weapon here is ready twice within 8 loops (shortest period:
zergling 11.1 loops), so each scenario sees exactly one attack per attacker per step.
"""

import pytest
import torch

from sc2_envs import make_batched
from sc2_envs.sim import UnitPlacement as P

ABSENT = None


def sim(map_name, **kw):
    e = make_batched(map_name, num_envs=1, seed=0, autoreset=False, spawn_jitter=0.0, **kw)
    e.reset()
    return e


def step(e, actions):
    return e.step(torch.tensor([actions]))


def hp(e, unit):
    return float(e.st.health[0, unit]), float(e.st.shield[0, unit])


def test_stalker_hits_zealot_shield_then_armour_on_hp_part():
    # 2s3z: agents 0-1 stalkers, 2-4 zealots; enemies 0-1 stalkers (units 5-6), 2-4 zealots (units 7-9)
    e = sim("2s3z")
    # the zealot has 5 shield left: 5 absorbed, the other 10 - 5 = 5 reaches HP minus 1 armour -> 4
    # (Liberty ParticleDisruptorsU: 10 (+4 Armored); the zealot is Light)
    e.set_units(0, [P(10, 16), ABSENT, ABSENT, ABSENT, ABSENT], [ABSENT, ABSENT, P(15, 16, shield=5.0), ABSENT, ABSENT])
    e.st.loops_since_damage[0, 7] = 0.0  # just damaged: no shield regeneration while the missile flies
    step(e, [6 + 2, 0, 0, 0, 0])
    assert hp(e, 7) == pytest.approx((96.0, 0.0))


def test_stalker_hits_full_shield_zealot():
    e = sim("2s3z")
    e.set_units(0, [P(10, 16), ABSENT, ABSENT, ABSENT, ABSENT], [ABSENT, ABSENT, P(15, 16), ABSENT, ABSENT])
    step(e, [8, 0, 0, 0, 0])
    assert hp(e, 7) == pytest.approx((100.0, 40.0))  # 10 on shields, shield armour 0


def test_zealot_two_hits_each_reduced_by_armour():
    e = sim("2s3z")
    # agent 2 (zealot) touching enemy stalker 0 (unit 5): edge gap 1.2 - 0.5 - 0.625 = 0.075 <= 0.1
    e.set_units(0, [ABSENT, ABSENT, P(10, 16), ABSENT, ABSENT], [P(11.2, 16, shield=0.0), ABSENT, ABSENT, ABSENT, ABSENT])
    step(e, [0, 0, 6 + 0, 0, 0])
    assert hp(e, 5) == pytest.approx((80.0 - 2 * (8 - 1), 0.0))


def test_zealot_hits_split_between_shield_and_hp():
    e = sim("2s3z")
    e.set_units(0, [ABSENT, ABSENT, P(10, 16), ABSENT, ABSENT], [P(11.2, 16, shield=10.0), ABSENT, ABSENT, ABSENT, ABSENT])
    step(e, [0, 0, 6, 0, 0])
    # hit 1: 8 on shields (10 -> 2); hit 2: 2 on shields, 6 on HP minus 1 armour -> 5
    assert hp(e, 5) == pytest.approx((75.0, 0.0))


def test_shield_regenerates_only_after_delay():
    e = sim("2s3z")
    # a lone enemy zealot far from the only agent; it was just damaged (loops_since_damage = 0)
    e.set_units(0, [P(1, 8), ABSENT, ABSENT, ABSENT, ABSENT], [ABSENT, ABSENT, P(30, 23, shield=20.0), ABSENT, ABSENT])
    e.st.loops_since_damage[0, 7] = 0.0
    for _ in range(20):  # 160 loops: still inside the 10 s (160 loop) delay
        step(e, [1, 0, 0, 0, 0])
    assert hp(e, 7)[1] == pytest.approx(20.0)
    step(e, [1, 0, 0, 0, 0])  # loops 161..168 regenerate at 2/s = 0.125 per loop
    assert hp(e, 7)[1] == pytest.approx(21.0)


def test_marauder_bonus_against_armoured_only():
    # MMM: agents 0-1 marauders, 2-8 marines, 9 medivac; enemies the same (units 10..19)
    e = sim("MMM")
    allies = [P(10, 16), P(10, 19)] + [ABSENT] * 8
    enemies = [P(15, 16)] + [ABSENT] * 2 + [P(15, 19)] + [ABSENT] * 6  # enemy marauder 0, enemy marine 3
    e.set_units(0, allies, enemies)
    step(e, [6 + 0, 6 + 3] + [0] * 8)
    assert hp(e, 10)[0] == pytest.approx(125.0 - (10 + 10 - 1))  # armoured: +10, armour 1
    assert hp(e, 13)[0] == pytest.approx(45.0 - 10)  # light marine: no bonus, armour 0


def test_colossus_line_splash_hits_units_on_the_beam_only():
    # 1c3s5z: agent 0 colossus; enemy 0 colossus (unit 9), 1-3 stalkers (10-12), 4-8 zealots (13-17)
    e = sim("1c3s5z")
    allies = [P(10, 16)] + [ABSENT] * 8
    enemies = [ABSENT] * 4 + [P(14, 16), P(14, 17.2), P(14, 18.5), P(15.5, 16), ABSENT]  # range 6 + radii
    e.set_units(0, allies, enemies)
    step(e, [6 + 4] + [0] * 8)
    per_attack = 2 * 20  # Liberty ThermalLancesMU: 20, once per sweep (forward + reverse), shield armour 0
    assert hp(e, 13) == pytest.approx((100.0, 50.0 - per_attack))  # the target
    assert hp(e, 14) == pytest.approx((100.0, 50.0 - per_attack))  # 1.2 beside it, on the beam
    assert hp(e, 15) == pytest.approx((100.0, 50.0))  # 2.5 beside: beyond half-length 1.4 + radius
    assert hp(e, 16) == pytest.approx((100.0, 50.0))  # behind the target, off the 0.3-wide beam


def test_baneling_explosion_splash_no_friendly_fire_and_suicide():
    # bane_vs_bane: agents 0-3 banelings, 4-23 zerglings; enemies 0-19 zerglings (units 24-43), 20-23 banelings (44-47)
    e = sim("bane_vs_bane")
    allies = [P(16, 16)] + [ABSENT] * 3 + [P(16, 14.5)] + [ABSENT] * 19
    enemies = [P(16.7, 16), P(16, 17.5), P(16, 19.0)] + [ABSENT] * 17 + [P(14.9, 16)] + [ABSENT] * 3
    e.set_units(0, allies, enemies)
    step(e, [6 + 0] + [0] * 3 + [1] + [0] * 19)
    assert hp(e, 0)[0] == 0.0  # the baneling is gone
    assert hp(e, 24)[0] == 0.0 and hp(e, 25)[0] == 0.0  # 20 + 15 vs Light = 35 kills zerglings (35 HP)
    assert hp(e, 26)[0] == pytest.approx(35.0)  # 2.625 from the centre: outside the 2.2 radius
    assert hp(e, 44)[0] == pytest.approx(30.0 - 20.0 + 8 * 0.2734 / 16)  # not Light: 20, then 8 loops of zerg regen
    assert hp(e, 4)[0] == pytest.approx(35.0)  # own zergling inside the radius: no friendly fire


def test_medivac_heals_and_spends_energy():
    e = sim("MMM")
    allies = [ABSENT, ABSENT, P(11, 16, health=20.0)] + [ABSENT] * 6 + [P(10, 16, energy=50.0)]
    enemies = [ABSENT] * 3 + [P(30, 23)] + [ABSENT] * 6
    e.set_units(0, allies, enemies)
    step(e, [0, 0, 1] + [0] * 6 + [6 + 2])
    healed = 9.0 / 16 * 8  # 9 HP per normal second for 8 loops
    assert hp(e, 2)[0] == pytest.approx(20.0 + healed)
    assert float(e.st.energy[0, 9]) == pytest.approx(50.0 - healed * 0.33 + 0.5625 / 16 * 8)  # DrainVitalCostFactor


def test_weapon_cooldown_jitter_is_minus1_to_plus2_loops():
    e = sim("3m")
    e.set_units(0, [P(10, 16), ABSENT, ABSENT], [P(14, 16, health=45.0), ABSENT, ABSENT])
    step(e, [6, 0, 0])
    # fired at loop 1; the cooldown after 8 loops is period + jitter - 7
    cd = float(e.st.cooldown[0, 0])
    assert 0.8608 * 16 - 1 - 7 - 1e-4 <= cd <= 0.8608 * 16 + 2 - 7 + 1e-4


def test_chase_to_edge_range_then_fire():
    # marines: range 5 edge to edge = 5.75 centre distance; start 7 apart -> walk, then shoot
    e = sim("3m")
    e.set_units(0, [P(8, 16, cooldown=0.0), ABSENT, ABSENT], [P(14.0, 16), ABSENT, ABSENT])
    e.st.order_point[0, 3] = e.st.pos[0, 3]  # the enemy holds its position
    step(e, [6, 0, 0])
    d = float((e.st.pos[0, 0] - e.st.pos[0, 3]).norm())
    assert d <= 5.75 + 1e-3
    assert hp(e, 3)[0] < 45.0


def test_units_do_not_overlap_after_collision():
    e = sim("8m")
    o = e.reset()
    for _ in range(5):
        o = e.step(torch.where(o["avail_actions"][..., 4], 4, 1))  # everyone walks east
    alive = e.st.alive[0, :8]
    pos = e.st.pos[0, :8][alive]
    d = torch.cdist(pos, pos) + torch.eye(len(pos)) * 10
    assert float(d.min()) > 2 * 0.375 - 0.2  # soft push: overlaps stay small
