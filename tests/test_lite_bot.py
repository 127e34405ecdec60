"""The lite engine's very_easy bot (``sc2_envs.lite.bot``) playing one untouched game.

The expected behaviour is the fitted plan of ``sc2_envs.lite.data.bot_very_easy`` (the 80
mini-AlphaStar Simple64 replays): its army composition and its scripted orders.
"""

from __future__ import annotations

import numpy as np
import pytest

from sc2_envs.lite.bot import VeryEasyTerranBot
from sc2_envs.lite.data import bot_very_easy as plan
from sc2_envs.lite.engine import LiteEngine
from sc2_envs.lite.layout import UI_ALIVE, UI_OWNER, UI_TYPE

SEED = 5
END = 7300  # past the fourth army unit (army_growth_start 6290 + a Marine's 400 loops)


@pytest.fixture(scope="module")
def game():
    """One game to loop END, read every 8 loops: per (engine slot, type), the loop the bot's unit
    was first seen (units appear at birth, structures at placement; a slot a MULE freed takes a
    later unit)."""
    eng = LiteEngine(1)
    bot = VeryEasyTerranBot(eng)
    bot.reset(np.array([0]), np.array([SEED]))
    born: dict[tuple[int, str], tuple[int, str]] = {}
    while int(eng.game_loop[0]) < END:
        bot.run(np.array([8]))
        ui = eng.state.ui[0]
        mine = np.flatnonzero((ui[:, UI_ALIVE] == 1) & (ui[:, UI_OWNER] == 2))
        for s in mine:
            name = eng.catalog.names[ui[s, UI_TYPE]]
            born.setdefault((int(s), name), (int(eng.game_loop[0]), name))
    return eng, born


def test_bot_trains_the_army_its_sampled_plan_gives_in_that_order(game):
    _, born = game
    army = [name for _, name in sorted(born.values()) if name in ("Marine", "Marauder")]
    assert len(army) == 4
    assert tuple(army) == plan.sample_army(SEED)[:4] == ("Marine", "Marine", "Marauder", "Marine")


def test_bot_places_its_third_depot_at_the_sampled_loop(game):
    _, born = game
    depots = sorted(loop for loop, name in born.values() if name == "SupplyDepot")
    (third,) = [loop for loop, _, unit in plan.sample_later_orders(SEED) if unit == "SupplyDepot"]
    assert len(depots) == 3
    # its SCV waits 2 cells from the site from BUILD_LEAD loops before, is ordered to build at the
    # sampled loop and places it on arrival (seen within the 8-loop reading step)
    assert third <= depots[2] <= third + 16


def test_bot_lowers_its_first_depot_at_the_sampled_loop_and_each_later_one_once_done(game):
    eng, born = game
    (first,) = [loop for loop, _, unit in plan.sample_later_orders(SEED) if unit == "SupplyDepotLowered"]
    lowered = sorted(loop for loop, name in born.values() if name == "SupplyDepotLowered")
    placed = sorted(loop for loop, name in born.values() if name == "SupplyDepot")
    assert first <= lowered[0] <= first + 8  # the morph lands the loop after the order (read every 8)
    # the later ones: at the first decision (every 16 loops) after their 480-loop build
    assert len(lowered) == len(placed) == 3
    for init, low in zip(placed[1:], lowered[1:], strict=True):
        assert init + 480 <= low <= init + 480 + 16 + 8
    ui = eng.state.ui[0]
    assert not ((ui[:, UI_ALIVE] == 1) & (ui[:, UI_TYPE] == eng.catalog.ids["SupplyDepot"])).any()
