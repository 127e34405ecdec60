"""SC2 game-data facts: target priority, zerg structure regeneration, fractional weapon periods.

Each test is named after the SC2 fact it checks; sources are in the docstrings. Unit indices: allies
first (agent ids), then enemies (``n_agents + enemy id``).
"""

import math

import pytest
import torch

from sc2_envs import make_batched
from sc2_envs.sim import UnitPlacement as P
from sc2_envs.units import UNITS

ABSENT = None


def sim(map_name, num_envs=1, **kw):
    e = make_batched(map_name, num_envs=num_envs, seed=0, autoreset=False, spawn_jitter=0.0, **kw)
    e.reset()
    return e


# ---------------------------------------------------------------- defect 4: AttackTargetPriority
def test_attack_target_priority_medivac_equals_marine_so_the_nearer_healing_medivac_is_attacked():
    """Liberty ``UnitData.xml``: Medivac and Marine both have ``AttackTargetPriority`` 20 (so do
    SMAC's ``Medivac_RL``/``Marine_RL``), and the Liberty medivac ``AlwaysThreatens``; automatic
    targeting (Liquipedia "Automatic Targeting") then takes the nearest. An enemy marine with a
    healing medivac 3.5 away and an allied marine 5 away (both centre distances, both in range)
    shoots the medivac."""
    e = sim("MMM")  # allies: 0-1 marauders, 2-8 marines, 9 medivac; enemies: units 10..19, marines 12..18
    c = 16.0
    d = 3.5 / math.sqrt(2)
    allies = [ABSENT, ABSENT, P(c + 5.0, c, health=20.0)] + [ABSENT] * 6 + [P(c + d, c + d)]
    enemies = [ABSENT, ABSENT, P(c, c, cooldown=0.0)] + [ABSENT] * 7
    e.set_units(0, allies, enemies)
    actions = [0, 0, 1] + [0] * 6 + [6 + 2]  # the medivac heals marine 2
    e.step(torch.tensor([actions]))
    assert int(e.st.order_target[0, 12]) == 9
    assert float(e.st.health[0, 9]) == pytest.approx(150.0 - (6 - 1))  # 6 damage, medivac armour 1
    assert float(e.st.health[0, 2]) > 20.0  # the marine was healed, not shot


def test_attack_target_priority_higher_value_is_attacked_before_a_nearer_lower_one():
    """Automatic targeting ranks ``AttackTargetPriority`` above distance (Liquipedia "Automatic
    Targeting"; e.g. Liberty uprooted spine 19 < rooted 20). No SMAC pair differs, so the table is
    edited: the farther marine gets priority 21 and must be chosen over the nearer one."""
    e = sim("3m", kernel="torch")  # the table is edited after construction; the numba kernel copies it at construction
    e.table.attack_target_priority[1] = 21.0
    e.enemy_ai.__init__(e.table, e.n_agents)
    e.set_units(0, [P(12.0, 16), P(10.5, 16), ABSENT], [P(16.0, 16, cooldown=5.0), ABSENT, ABSENT])
    e.step(torch.tensor([[1, 1, 0]]))
    assert int(e.st.order_target[0, 3]) == 1


# ---------------------------------------------------------------- defect 7: zerg structure regeneration
def test_zerg_structure_life_regeneration_0_2734_per_second_spine_crawler_on_creep():
    """Liberty ``SpineCrawler``: ``LifeRegenRate`` 0.2734 per normal second (Liquipedia "Zerg
    Regeneration"), no delay after damage. Its ``ZergBuildingNotOnCreep`` decay does not apply: the
    crawler's footprint ``Footprint2x2Contour2`` places creep on its own cells (Liberty
    ``FootprintData.xml``), so on 2s_vs_1sc (no other creep source in the map) it stands on creep."""
    e = sim("2s_vs_1sc")  # allies: 2 stalkers; enemy: the spine crawler (unit 2)
    # the SMAC spawn points; the stalker (stopped) is 8.5 edge to edge from the crawler (range 7)
    e.set_units(0, [P(11.12, 10.34), ABSENT], [P(13.92, 20.04, health=200.0)])
    for _ in range(32):  # 256 loops = 16 normal seconds
        e.step(torch.tensor([[1, 0]]))
    assert float(e.st.health[0, 2]) == pytest.approx(200.0 + 0.2734 * 16, abs=1e-3)


# ---------------------------------------------------------------- defect 8: fractional periods
def _mean_attack_interval(loops_per_tick: int, steps: int = 400, num_envs: int = 16) -> float:
    """Mean loops between a marine's shots while it fires continuously at a target kept alive.

    The first shot is at loop 1; the shot after the last counted one would come ``cooldown`` loops
    after the end, so ``shots`` intervals span ``8 * steps + cooldown - 1`` loops.
    """
    e = sim("3m", num_envs=num_envs, loops_per_tick=loops_per_tick)
    for b in range(num_envs):
        e.set_units(b, [P(10.0, 16), ABSENT, ABSENT], [P(14.0, 16), ABSENT, ABSENT])
    shots = torch.zeros(num_envs)
    actions = torch.tensor([[6, 0, 0]] * num_envs)
    for _ in range(steps):
        e.st.health[:, 0] = 45.0  # keep both alive (the enemy shoots back) and the episode running
        e.st.health[:, 3] = 45.0
        e.st.episode_steps.zero_()
        e.step(actions)
        shots += (45.0 - e.st.health[:, 3]) / 6.0
    span = 8 * steps + e.st.cooldown[:, 0] - 1
    return float(span.sum() / shots.sum())


@pytest.mark.parametrize("loops_per_tick", [1, 8])
def test_weapon_period_fraction_carries_over_marine_averages_14_27_loops(loops_per_tick):
    """SC2 game data keeps times in 1/4096 s fixed point: the marine's period is 3526/4096 normal s
    = 13.77 loops (BurnySc2/sc2-techtree ``data/data_readable.json``: 0.86083984375). The fraction
    carries over between shots rather than being rounded up to 14 loops, and the Core
    ``CWeaponLegacy`` random delay of -1..+2 loops (mean +0.5) comes on top: the mean interval of a
    marine firing continuously is 14.27 loops (rounding up would give >= 14.5)."""
    expected = UNITS["marine"].cooldown + 0.5
    assert expected == pytest.approx(14.27, abs=0.01)
    mean = _mean_attack_interval(loops_per_tick)
    assert mean == pytest.approx(expected, abs=0.1)
    assert mean < 14.45
