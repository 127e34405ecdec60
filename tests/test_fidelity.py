"""Loop-level fidelity suite: duels and small fights whose game-loop times are derived from SC2 data here.

Every expected number is computed in the test from the game-data values in ``DATA`` /
``TIMING`` below, with their source, never read back from the simulator's own tables (the tests
check that the tables agree with them). Loop numbering: ``set_units`` places the units, and loop
``k`` (1-based) is the ``k``-th game loop simulated after it; an env step is 8 loops.

Sources: GD = SC2Mapster/SC2GameData @949614a9 (SC2 4.6.2.69232, the same values at 4.10.4),
``mods/liberty.sc2mod/base.sc2data/GameData/{Unit,Weapon,Effect,Behavior}Data.xml`` (SMAC's maps
load ``Liberty.SC2Mod`` only: their ``DocumentHeader``); pysc2 ``docs/environment.md`` for the
-1..+2 loop random delay per attack (``CWeaponLegacy`` RandomDelayMin/Max in GD core).

Attack timeline checked here: an attack starts at the loop its weapon is ready with the target in
range; the hit lands ``ceil(damage point)`` loops later, or a missile launches then and deals its
damage ``ceil(centre distance / missile speed)`` loops after launch; the next attack starts one
weapon period (+ jitter) after the previous start. The engine's scheduling of fractional periods
is unpublished (the simulator carries the sub-loop fraction, see ``dynamics.py``), so each interval
between attack starts is checked within ``[floor(P) - 1, ceil(P) + 2]`` loops (period P plus the
-1..+2 jitter under either rounding), and where many seeded envs run, their mean death loop within
the range that mean jitter 0.5 gives under carry (``P + 0.5`` per interval) or round-up (up to
``P + 1.5``), one loop of slack either side.
"""

from __future__ import annotations

import math

import pytest
import torch

from sc2_envs import make_batched
from sc2_envs.maps import MapSpec, SpawnGroup, list_maps
from sc2_envs.policies import HeuristicPolicy, random_actions
from sc2_envs.sim import UnitPlacement as P
from sc2_envs.units import UNITS

LOOPS = 16  # game loops per normal-speed second

# Weapon timing, normal seconds and distance per normal second [GD WeaponData / MoverData]
TIMING = {  # unit: (damage point, missile speed or 0 for direct damage)
    "marine": (0.05, 0.0),
    "marauder": (0.0, 20.0),
    "stalker": (0.1667, 18.75),
    "zealot": (0.0, 0.0),
    "zergling": (0.1667, 0.0),
    "hydralisk": (0.2083, 40.0),
    "colossus": (0.0832, 0.0),
    "spine_crawler": (0.3332, 200.0),
}
ZEALOT_HIT_SPACING = 0.28  # normal s between the two PsiBlades hits [GD EffectData]
# Liberty stats [GD UnitData / WeaponData / EffectData]: HP, shields, armour, damage, bonus, period (s)
DATA = {
    "marine": dict(hp=45, sh=0, armor=0, dmg=6, period=0.8608),
    "marauder": dict(hp=125, sh=0, armor=1, dmg=10, bonus=10, period=1.5),  # +10 vs Armored
    "stalker": dict(hp=80, sh=80, armor=1, dmg=10, bonus=4, period=1.44),  # +4 vs Armored
    "zealot": dict(hp=100, sh=50, armor=1, dmg=8, period=1.2),  # x2
    "zergling": dict(hp=35, sh=0, armor=0, dmg=5, period=0.696),
    "colossus": dict(dmg=20),  # ThermalLancesMU, x2 (forward and reverse sweep)
    "baneling": dict(hp=30, dmg=20, bonus_light=15, radius=2.2),  # VolatileBurstU
}
ZERG_REGEN = 0.2734 / LOOPS  # HP per loop [GD UnitData LifeRegenRate]
HEAL_PER_LOOP, HEAL_ENERGY_PER_HP = 9.0 / LOOPS, 0.33  # MedivacHeal [GD EffectData]
ENERGY_REGEN = 0.5625 / LOOPS

DEVICES = [
    "cpu",
    pytest.param(
        "cuda",
        marks=pytest.mark.skipif(
            not torch.cuda.is_available(), reason="no CUDA device on this machine (runs where a GPU is lent)"
        ),
    ),
]


def period_loops(unit: str) -> float:
    return DATA[unit]["period"] * LOOPS


def interval_bounds(unit: str) -> tuple[int, int]:
    """Loops between two attack starts: period plus -1..+2 jitter, with either rounding of fractions."""
    p = period_loops(unit)
    return math.floor(p) - 1, math.ceil(p) + 2


def arena(allies: list[str], enemies: list[str], name: str = "arena") -> MapSpec:
    """A custom map with the given roster (one spawn group per unit); enemies have no attack-move point."""
    return MapSpec(
        name=name,
        allies=tuple(SpawnGroup(u, 1, 9.0, 16.0) for u in allies),
        enemies=tuple(SpawnGroup(u, 1, 23.0, 16.0) for u in enemies),
        episode_limit=1000,
        a_race="P",
        b_race="P",
        unit_type_bits=0,
        map_type="arena",
        ally_type_order=(),
        enemy_type_order=(),
        attack_point=None,
        terrain="full",
    )


class Recorder:
    """Runs a scenario in ``B`` seeded envs and records, per loop, every unit's HP + shields, life,
    position and energy. An env's record freezes at the end of its episode (the sim auto-resets it)."""

    def __init__(self, spec, allies, enemies, num_envs=1, device="cpu", seed=0):
        # kernel="torch": the recorder instruments the reference rules (Dynamics.advance), which the numba
        # kernel does not call; tests/test_kernel_tick.py runs these scenarios through both paths
        self.sim = make_batched(
            spec, num_envs=num_envs, seed=seed, autoreset=True, spawn_jitter=0.0, device=device, kernel="torch"
        )
        self.sim.reset()
        for b in range(num_envs):
            self.sim.set_units(b, allies, enemies)
        st = self.sim.st
        self.rows = {
            "missile": [st.missile_hits.cpu().clone()],
            "hp": [(st.health + st.shield).cpu().clone()],
            "alive": [st.alive.cpu().clone()],
            "pos": [st.pos.cpu().clone()],
            "energy": [st.energy.cpu().clone()],
            "shield": [st.shield.cpu().clone()],
            "health": [st.health.cpu().clone()],
        }
        self.done = torch.zeros(num_envs, dtype=torch.bool)
        dyn = self.sim.dynamics
        inner = dyn.advance

        def advance(st):
            inner(st)
            now = {
                "missile": st.missile_hits,
                "hp": st.health + st.shield,
                "alive": st.alive,
                "pos": st.pos,
                "energy": st.energy,
                "shield": st.shield,
                "health": st.health,
            }
            for k, v in now.items():
                v = v.cpu().clone()
                m = self.done.view(-1, *([1] * (v.dim() - 1)))
                self.rows[k].append(torch.where(m, self.rows[k][-1], v))

        dyn.advance = advance

    def step(self, actions, n=1):
        for _ in range(n):
            if bool(self.done.all()):
                return
            a = torch.tensor(actions, dtype=torch.int64, device=self.sim.device).expand(self.sim.num_envs, -1)
            avail = self.sim._avail.gather(2, a.unsqueeze(-1)).squeeze(-1)
            a = torch.where(avail, a, torch.where(self.sim._avail[..., 1], 1, 0))  # an ended target: stop
            out = self.sim.step(a)
            self.done |= (out["terminated"] | out["truncated"]).cpu()

    def trace(self, key: str) -> torch.Tensor:
        """``[T + 1, B, U(, 2)]``: row 0 before loop 1, row k after loop k."""
        return torch.stack(self.rows[key])

    def hp(self) -> torch.Tensor:
        return self.trace("hp")

    def final(self, key: str) -> torch.Tensor:
        return self.rows[key][-1]

    def death_loop(self, unit: int) -> torch.Tensor:
        """``[B]`` loop at which ``unit`` died (0: never)."""
        dead = ~self.trace("alive")[1:, :, unit]  # [T, B]
        first = dead.float().argmax(0) + 1
        return torch.where(dead.any(0), first, torch.zeros_like(first))

    def damage_loops(self, unit: int, b: int = 0) -> list[int]:
        """Loops at which ``unit`` lost HP or shields in env ``b`` (regeneration ignored)."""
        h = self.hp()[:, b, unit]
        return [k for k in range(1, len(h)) if float(h[k]) < float(h[k - 1]) - 0.05]


def _edge_place(attacker: str, target: str, gap: float, y: float = 16.0, x0: float = 10.0):
    """Positions of an attacker and a target ``gap`` apart edge to edge (radii from the roster table),
    but at most 5.95 apart centre to centre: SMAC offers an attack action only within a centre
    distance of 6 (``unit_shoot_range``)."""
    d = min(UNITS[attacker].radius + UNITS[target].radius + gap, 5.95)
    return (x0, y), (x0 + d, y)


def test_tables_agree_with_the_data_in_this_suite():
    from sc2_envs.sim.weapons import WEAPON_TIMING

    for unit, (dp, speed) in TIMING.items():
        assert WEAPON_TIMING[unit].damage_point == pytest.approx(dp), unit
        assert WEAPON_TIMING[unit].missile_speed == pytest.approx(speed), unit
    assert WEAPON_TIMING["zealot"].hit_interval == pytest.approx(ZEALOT_HIT_SPACING)
    for unit, d in DATA.items():
        u = UNITS[unit]
        if "period" in d:
            assert u.cooldown == pytest.approx(d["period"] * LOOPS, abs=1e-3), unit
        assert u.damage == d["dmg"], unit
        if "hp" in d:
            assert (u.health, u.shield if "sh" in d else 0) == (d["hp"], d.get("sh", 0)), unit


# ---------------------------------------------------------------- defect 9: damage point and missiles
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("attacker", ["marine", "marauder", "stalker", "zealot", "zergling", "hydralisk", "colossus"])
def test_first_hit_lands_damage_point_then_missile_flight_after_attack_start(attacker, device):
    """GD ``DamagePoint`` and missile ``CMoverMissile`` speeds: first damage at loop
    ``1 + ceil(DP * 16) + ceil(distance / (speed / 16))`` against a static spine crawler."""
    spec = arena([attacker], ["spine_crawler"])
    rng = 0.1 if attacker in ("zealot", "zergling") else UNITS[attacker].range
    (ax, ay), (tx, ty) = _edge_place(attacker, "spine_crawler", rng - 0.05)
    rec = Recorder(spec, [P(ax, ay)], [P(tx, ty)], device=device)
    rec.step([6], n=3)
    dp, speed = TIMING[attacker]
    flight = math.ceil((tx - ax) / (speed / LOOPS)) if speed else 0
    expected = 1 + math.ceil(dp * LOOPS) + flight
    assert rec.damage_loops(1)[0] == expected


@pytest.mark.parametrize("device", DEVICES)
def test_spine_crawler_tentacle_lands_after_its_damage_point(device):
    """Spine crawler: DamagePoint 0.3332 s (5.33 loops), tentacle missile up to 200/s [GD]."""
    spec = arena(["marine"], ["spine_crawler"])
    (ax, ay), (tx, ty) = _edge_place("marine", "spine_crawler", 6.0)  # in the crawler's range 7, out of the marine's 5
    rec = Recorder(spec, [P(ax, ay)], [P(tx, ty)], device=device)
    rec.step([1], n=2)  # the marine stops and never fires
    expected = 1 + math.ceil(0.3332 * LOOPS) + math.ceil((tx - ax) / (200.0 / LOOPS))
    assert rec.damage_loops(0)[0] == expected


def test_attack_interrupted_during_damage_point_deals_nothing():
    """A move order inside the stalker's 0.1667 s wind-up cancels the attack: no missile, no damage."""
    spec = arena(["stalker"], ["spine_crawler"])
    (ax, ay), (tx, ty) = _edge_place("stalker", "spine_crawler", 5.9)
    results = {}
    for second_action in (6, 1):  # keep attacking / stop during the wind-up
        rec = Recorder(spec, [P(ax, ay, cooldown=6.5)], [P(tx, ty, health=300.0)])
        rec.step([6])  # the weapon is ready at loop 7: wind-up over loops 7..9, hit or launch at loop 10
        rec.step([second_action])
        rec.step([1])
        results[second_action] = rec.damage_loops(1)
    flight = math.ceil((tx - ax) / (18.75 / LOOPS))
    assert results[6][0] == 7 + math.ceil(0.1667 * LOOPS) + flight
    assert results[1] == []


def test_zealot_two_hits_land_0_28_s_apart():
    """PsiBlades: two 8-damage hits, the second 0.28 s (ceil 4.48 = 5 loops) after the first [GD]."""
    spec = arena(["zealot"], ["marine"])
    (ax, ay), (tx, ty) = _edge_place("zealot", "marine", 0.05)
    rec = Recorder(spec, [P(ax, ay)], [P(tx, ty)])
    rec.step([6], n=2)
    h = rec.hp()[:, 0, 1]
    loops = rec.damage_loops(1)
    assert loops[:2] == [1, 1 + math.ceil(ZEALOT_HIT_SPACING * LOOPS)]
    assert float(h[loops[0]]) == pytest.approx(45 - 8) and float(h[loops[1]]) == pytest.approx(45 - 16)


def test_missile_in_flight_is_wasted_when_its_target_dies_first():
    """Overkill: two stalkers fire at a 10-HP marine; the first missile kills it, the second (already
    launched) arrives at a dead unit and deals nothing to anyone."""
    spec = arena(["stalker", "stalker"], ["marine", "marine"])
    rec = Recorder(spec, [P(10, 16), P(10, 17.0, cooldown=1.5)], [P(15.9, 16, health=10.0), P(30, 30)])
    rec.step([6, 6], n=3)
    death = int(rec.death_loop(2)[0])
    missile = rec.trace("missile")[:, 0, 1]  # stalker 2's missile in flight
    assert bool(missile[death] > 0), "the second missile was launched before the kill"
    assert float(missile[-1]) == 0.0
    assert rec.damage_loops(2) == [death]  # one damaging hit: the killing one
    assert rec.damage_loops(3) == []


# ---------------------------------------------------------------- duels (expected loop windows from data)
@pytest.mark.parametrize("device", DEVICES)
def test_zealot_kills_marine_with_third_attack_second_hit(device):
    """45 HP / 16 per zealot attack (2 x 8, armour 0) -> 3 attacks; death at the 3rd attack's 2nd hit:
    ``1 + I1 + I2 + ceil(0.28 * 16)``, each interval I a 1.2 s period plus jitter."""
    spec = arena(["marine"], ["zealot"])
    (ax, ay), (tx, ty) = _edge_place("marine", "zealot", 0.05)
    rec = Recorder(spec, [P(ax, ay)], [P(tx, ty)], num_envs=32, device=device)
    rec.step([6], n=8)
    lo, hi = interval_bounds("zealot")
    second = math.ceil(ZEALOT_HIT_SPACING * LOOPS)
    death = rec.death_loop(0)
    assert bool(((death >= 1 + 2 * lo + second) & (death <= 1 + 2 * hi + second)).all()), death
    p = period_loops("zealot")
    assert 1 + 2 * (p + 0.5) + second - 1 <= float(death.float().mean()) <= 1 + 2 * (p + 1.5) + second + 1
    assert bool(rec.final("alive")[:, 1].all())  # the zealot wins: the marine's 6 per shot can't kill 150


@pytest.mark.parametrize("device", DEVICES)
def test_zealot_beats_stalker_in_11_attacks(device):
    """Zealot vs stalker (Liberty): the stalker's 10 (+4 Armored; the zealot is Light) needs 5 hits on
    shields + ceil(100 / 9) = 12 on HP = 17 attacks; the zealot's 2 x 8 needs 80/8 = 10 hits on
    shields + ceil(80 / 7) = 12 on HP = 22 hits = 11 attacks. Death at ``1 + sum of 10 intervals + 5``."""
    spec = arena(["stalker"], ["zealot"])
    (ax, ay), (tx, ty) = _edge_place("stalker", "zealot", 0.05)
    rec = Recorder(spec, [P(ax, ay)], [P(tx, ty)], num_envs=16, device=device)
    rec.step([6], n=32)
    lo, hi = interval_bounds("zealot")
    second = math.ceil(ZEALOT_HIT_SPACING * LOOPS)
    death = rec.death_loop(0)
    assert bool(((death >= 1 + 10 * lo + second) & (death <= 1 + 10 * hi + second)).all()), death
    assert bool(rec.final("alive")[:, 1].all())


@pytest.mark.parametrize("device", DEVICES)
def test_marine_kills_charging_zergling_in_7_shots_because_of_regeneration(device):
    """A zergling (35 HP, regenerates 0.2734 HP/s) charging a marine (6 per shot): 6 shots deal 36,
    but by the 6th shot (>= 61 loops in) it has regenerated > 1 HP, so the 7th shot kills it:
    death at ``1 + I1 + ... + I6 + ceil(0.05 * 16)``. The marine takes whole zergling hits of 5."""
    spec = arena(["marine"], ["zergling"])
    (ax, ay), (tx, ty) = _edge_place("marine", "zergling", 4.9)
    rec = Recorder(spec, [P(ax, ay)], [P(tx, ty)], num_envs=32, device=device)
    rec.step([6], n=16)
    lo, hi = interval_bounds("marine")
    dp = math.ceil(0.05 * LOOPS)
    assert 5 * lo * ZERG_REGEN > 36 - 35  # the regeneration argument above, from the data
    death = rec.death_loop(1)
    assert bool(((death >= 1 + 6 * lo + dp) & (death <= 1 + 6 * hi + dp)).all()), death
    marine_hp = rec.final("health")[:, 0]
    assert bool(rec.final("alive")[:, 0].all())
    assert torch.allclose((45 - marine_hp) / 5, torch.round((45 - marine_hp) / 5), atol=1e-4)


@pytest.mark.parametrize("device", DEVICES)
def test_marauder_kills_unshielded_stalker_in_5_missiles(device):
    """Marauder 10 (+10 Armored) - armour 1 = 19 per missile vs 80 HP -> 5 missiles; damage point 0,
    missile 20/s: death at ``1 + I1..I4 + ceil(distance / 1.25)``; the stalker (13 per shot on 125 HP,
    10 shots) loses."""
    spec = arena(["marauder"], ["stalker"])
    (ax, ay), (tx, ty) = _edge_place("marauder", "stalker", 5.9)
    rec = Recorder(spec, [P(ax, ay)], [P(tx, ty, shield=0.0)], num_envs=32, device=device)
    rec.step([6], n=16)
    lo, hi = interval_bounds("marauder")
    flight = math.ceil((tx - ax) / (20.0 / LOOPS))
    death = rec.death_loop(1)
    assert bool(((death >= 1 + 4 * lo + flight) & (death <= 1 + 4 * hi + flight)).all()), death
    assert bool(rec.final("alive")[:, 0].all())


@pytest.mark.parametrize("device", DEVICES)
def test_colossus_beam_kills_a_row_of_zerglings_at_once(device):
    """Colossus (Liberty ThermalLancesMU 20 x 2 = 40 >= 35 HP) fires at the middle of a row of five
    touching zerglings across its line of fire: all five die in loop ``1 + ceil(0.0832 * 16) = 3``."""
    spec = arena(["colossus"], ["zergling"] * 5)
    x = 15.9  # centre distance 5.9: in range (6 + radii) and within SMAC's attack-action distance 6
    row = [P(x, 16.0 + 0.75 * k) for k in (-2, -1, 0, 1, 2)]
    rec = Recorder(spec, [P(10, 16)], row, device=device)
    rec.step([6 + 2], n=1)
    assert [int(rec.death_loop(1 + k)[0]) for k in range(5)] == [1 + math.ceil(0.0832 * LOOPS)] * 5


@pytest.mark.parametrize("device", DEVICES)
def test_baneling_bursts_on_a_marine_ball_for_35_each_in_radius(device):
    """VolatileBurstU 20 (+15 Light) within 2.2 of the baneling's centre (target radius counts):
    marines (Light, 45 HP) in the radius drop to 10, the others keep 45; the baneling dies."""
    spec = arena(["marine"] * 7, ["baneling"])
    ball = [
        P(10.0 + dx, 16.0 + dy) for dx, dy in [(0, 0), (0.8, 0), (-0.8, 0), (0.4, 0.7), (-0.4, 0.7), (0.4, -0.7), (-3.5, 0)]
    ]
    rec = Recorder(spec, ball, [P(14.0, 16.0)], device=device)
    rec.step([1] * 7, n=4)
    t = int(rec.death_loop(7)[0])
    assert t > 0
    pos = rec.trace("pos")[t, 0]  # positions in the loop of the burst
    d_edge = (pos[:7] - pos[7]).norm(dim=-1) - UNITS["marine"].radius
    inside = d_edge <= DATA["baneling"]["radius"]
    assert 0 < int(inside.sum()) < 7
    hp = rec.final("health")[0, :7]
    expect = torch.where(inside, torch.tensor(45.0 - 35.0), torch.tensor(45.0))
    assert torch.allclose(hp, expect)


def test_medivac_heals_a_marine_under_fire_at_9_hp_per_second_for_0_33_energy_per_hp():
    """One enemy marine (6 per 0.8608 s = 0.44 HP/loop) against 9 HP/s of heal (0.5625/loop): the
    marine never dies while energy lasts, and energy = 50 - 0.33 x healed + 0.5625/s x time."""
    spec = MapSpec(
        name="heal",
        allies=(SpawnGroup("marine", 1, 9, 16), SpawnGroup("medivac", 1, 9, 16)),
        enemies=(SpawnGroup("marine", 2, 23, 16),),
        episode_limit=1000,
        a_race="T",
        b_race="T",
        unit_type_bits=0,
        map_type="arena",
        ally_type_order=(),
        enemy_type_order=(),
        attack_point=None,
        terrain="full",
    )
    rec = Recorder(spec, [P(10, 16), P(9.0, 16.0, energy=50.0)], [P(15.0, 16), None])
    n_steps = 25
    rec.step([1, 6 + 0], n=n_steps)  # the medivac's target action 6 + 0 = ally 0
    h = rec.hp()[:, 0, 0]
    drops = -(h[1:] - h[:-1])
    n_hits = int((drops > 1).sum())  # a loop with a hit: -6, plus that loop's heal if the marine was hurt
    assert n_hits >= 10
    healed = 6.0 * n_hits - (45.0 - float(h[-1]))
    assert bool((drops[drops > 1] <= 6.0 + 1e-4).all()) and bool((drops[drops > 1] >= 6.0 - HEAL_PER_LOOP - 1e-4).all())
    assert bool(rec.final("alive")[0, 0])
    loops = n_steps * 8
    assert float(rec.final("energy")[0, 1]) == pytest.approx(50 - HEAL_ENERGY_PER_HP * healed + ENERGY_REGEN * loops, abs=1e-3)


# ---------------------------------------------------------------- defect 1: death before heal
def test_marine_killed_in_a_loop_is_not_healed_back_by_a_medivac():
    """A heal never revives a unit killed in the same loop: a 10-HP marine beside a medivac, four enemy marines in range (4 x
    6 = 24): it dies to the first volley (loop 1 + ceil(0.05 * 16) = 2) and stays dead."""
    e = make_batched("MMM", num_envs=1, seed=0, autoreset=False, spawn_jitter=0.0)
    e.reset()
    allies = [None, None, P(10, 16, health=10.0)] + [None] * 6 + [P(9.0, 16.0)]  # medivac behind: not nearer
    enemies = [None, None, P(14.5, 15.0), P(14.5, 16.0), P(14.5, 17.0), P(15.2, 16.5)] + [None] * 4
    e.set_units(0, allies, enemies)
    for _ in range(40):
        o = e.step(torch.tensor([[0, 0, 1] + [0] * 6 + [6 + 2]]) if bool(e.st.alive[0, 2]) else torch.tensor([[0] * 9 + [1]]))
        if o["terminated"].any():
            break
        assert not bool(e.st.alive[0, 2])
        assert float(e.st.health[0, 2]) == 0.0


def test_killed_baneling_bursts_on_the_zealot_beside_it():
    """Banelings burst on death: BanelingExplode's DeathResponse runs VolatileBurst on death [GD liberty
    BehaviorData]: a stalker kills a baneling next to a zealot; the zealot (Light) takes 20 + 15 = 35
    (on its 50 shields), the stalker 4.3 away takes nothing (no friendly fire is moot: it's an ally)."""
    spec = arena(["stalker", "zealot"], ["baneling"])
    rec = Recorder(spec, [P(10.0, 16.0), P(16.5, 16.0)], [P(14.0, 16.0, health=5.0)])
    rec.step([6, 1], n=3)
    death = int(rec.death_loop(2)[0])
    assert death > 0
    assert float(rec.final("shield")[0, 1]) == pytest.approx(50.0 - 35.0)
    assert float(rec.final("health")[0, 1]) == pytest.approx(100.0)
    assert rec.damage_loops(1) == [death]  # the burst comes in the loop of the death
    assert rec.damage_loops(0) == []


def test_baneling_killed_by_its_own_attack_bursts_once():
    """Manual/attack detonation removes BanelingExplode first [GD], so there is one burst, not two."""
    spec = arena(["zealot"], ["baneling"])
    rec = Recorder(spec, [P(10.0, 16.0)], [P(11.2, 16.0)])
    rec.step([1], n=3)
    assert float(rec.final("hp")[0, 0]) == pytest.approx(150.0 - 35.0)


def _check_invariants(sim, policy: str, steps: int, gen: torch.Generator):
    """Run ``steps`` env steps and check the death invariants each game loop, for both sides."""
    dyn = sim.dynamics
    t = sim.table
    checks = {"loops": 0}
    inner_adv, inner_heal, inner_regen = dyn.advance, dyn._heal, dyn._regenerate

    def heal(st, heals, tgt, L):
        assert not bool((st.alive & (st.health <= 0)).any()), "a unit at HP <= 0 is alive when heals run"
        dead = ~st.alive
        inner_heal(st, heals, tgt, L)
        assert bool((st.health[dead] == 0).all()), "a heal reached a dead unit"

    def regen(st):
        assert not bool((st.alive & (st.health <= 0)).any()), "a unit at HP <= 0 is alive when regeneration runs"
        dead = ~st.alive
        inner_regen(st)
        assert bool((st.health[dead] == 0).all()) and bool((st.shield[dead] == 0).all()), "a dead unit regenerated"

    def advance(st):
        was_alive = st.alive.clone()
        js, pos, energy = st.jitter_state.clone(), st.pos.clone(), st.energy.clone()
        inner_adv(st)
        dead_before = ~was_alive
        assert not bool((st.alive & dead_before).any()), "a dead unit came back"
        assert bool((st.alive == (st.health > 0)).all()), "alive != (HP > 0)"
        assert bool((st.health[~st.alive] == 0).all()) and bool((st.shield[~st.alive] == 0).all())
        assert bool((st.jitter_state[dead_before] == js[dead_before]).all()), "a dead unit started an attack"
        assert bool((st.hits_left[~st.alive] == 0).all()), "a dead unit still has an attack pending"
        assert bool((st.pos[dead_before] == pos[dead_before]).all()), "a dead unit moved"
        assert bool((st.energy[dead_before] == energy[dead_before]).all()), "a dead unit's energy changed"
        assert bool((st.health <= t.max_health + 1e-4).all()) and bool((st.shield <= t.max_shield + 1e-4).all())
        checks["loops"] += 1

    ai = sim.enemy_ai
    inner_act = ai.act

    def act(st):
        inner_act(st)
        tgt = st.order_target[:, sim.n_agents :]
        live = torch.gather(st.alive, 1, tgt.clamp(min=0))
        assert bool((live | (tgt < 0)).all()), "the enemy AI targeted a dead unit"

    dyn.advance, dyn._heal, dyn._regenerate, ai.act = advance, heal, regen, act
    heuristic = HeuristicPolicy(sim)
    o = sim.reset()
    N = sim.n_agents
    for _ in range(steps):
        a = heuristic(o["avail_actions"]) if policy == "heuristic" else random_actions(o["avail_actions"], gen)
        o = sim.step(a)
        st = sim.st
        avail_att = o["avail_actions"][:, :, 6:]  # [B, N, n_enemies]: attack enemy j / medivac: heal ally j
        healer = sim.table.is_healer[:N]
        M = avail_att.shape[-1]
        ally_alive = torch.zeros(st.alive.shape[0], M, dtype=torch.bool)
        ally_alive[:, : min(N, M)] = st.alive[:, : min(N, M)]
        target_alive = torch.where(healer[None, :, None], ally_alive.unsqueeze(1), st.alive[:, N:].unsqueeze(1))
        assert not bool((avail_att & ~target_alive).any()), "a dead unit can be attacked or healed"
    return checks["loops"]


@pytest.mark.parametrize("map_name", list_maps())
def test_death_invariants_every_map_random_and_heuristic(map_name):
    """Each game loop, both sides: a unit at HP <= 0 is dead before heals and regeneration run, and
    a dead unit never acts (starts an attack, moves), heals, regenerates, is attackable or comes back."""
    gen = torch.Generator().manual_seed(0)
    loops = 0
    for policy in ("random", "heuristic"):
        sim = make_batched(map_name, num_envs=4, seed=1, kernel="torch")  # instrumented reference
        loops += _check_invariants(sim, policy, 30, gen)
    assert loops == 2 * 30 * 8


@pytest.mark.slow
@pytest.mark.parametrize("map_name", list_maps())
def test_death_invariants_every_map_long(map_name):
    gen = torch.Generator().manual_seed(1)
    for policy in ("random", "heuristic"):
        sim = make_batched(map_name, num_envs=16, seed=7, kernel="torch")
        assert _check_invariants(sim, policy, 400, gen) == 400 * 8


def test_fidelity_table_counts_one_episode_per_env_with_wilson_intervals():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "fidelity_table.py"
    spec = importlib.util.spec_from_file_location("fidelity_table", path)
    mod = importlib.util.module_from_spec(spec)
    import sys

    sys.modules["fidelity_table"] = mod  # dataclasses look their module up there
    spec.loader.exec_module(mod)
    r = mod.evaluate("3m", "heuristic", 0.0, mod.Args(episodes=3, num_envs=2))
    assert r["episodes"] == 3 and 0 <= r["wins"] <= 3 and r["wins"] + r["timeouts"] <= 3
    assert r["win_ci"][0] <= r["wins"] / 3 <= r["win_ci"][1]
    assert 1 <= r["mean_length"] <= 60  # 3m's episode limit
    with pytest.raises(ValueError, match="unknown policy"):
        mod.evaluate("3m", "greedy", 0.0, mod.Args(episodes=1, num_envs=1))
    # env e draws SeedSequence(seed, spawn_key=(e,)) whatever the round size, so the episodes (and the
    # figures) do not depend on num_envs (with seed + round offsets, round 2 replayed run seed + 2's envs)
    by_rounds = mod.evaluate("3m", "heuristic", 0.5, mod.Args(episodes=4, num_envs=2))
    assert by_rounds == mod.evaluate("3m", "heuristic", 0.5, mod.Args(episodes=4, num_envs=4))
