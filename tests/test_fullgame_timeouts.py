"""``benchmarks/fullgame_timeouts.py``: tracing lite games to their end, and its tables."""

from __future__ import annotations

import pytest
from conftest import REPO, load_algo

pytest.importorskip("numba")

CHECKPOINT = REPO / "checkpoints" / "fullgame" / "bc_simple64_tiny_sqrtmix.pt"


@pytest.fixture(scope="module")
def ft():
    return load_algo("fullgame_timeouts", "benchmarks")


def _trace(ft, outcome, end_loop, actions=(), timeline=None, left=()):
    return ft.GameTrace(
        game=0,
        outcome=outcome,
        end_loop=end_loop,
        first_contact_loop=None,
        structures_lost_loops=[],
        structures_left=list(left),
        timeline=timeline or {},
        army_units=0,
        army_near=0,
        army_centre=None,
        army_distance=None,
        army_orders={},
        actions=list(actions),
    )


def test_a_cut_game_keeps_every_bot_structure_and_one_action_per_decision(ft):
    # the scripted expert's first 2 minutes: no army yet, so the bot's base stands whole and unseen
    (t,) = ft.trace_games("scripted", 1, seed=3, game_steps_per_episode=2688)
    assert t.outcome == 0 and t.end_loop == 2688
    assert len(t.actions) == 2688 // 8  # the baseline decides every 8 game loops
    names = {s.name for s in t.structures_left}
    # the bot's town hall (morphed or not) and its first depot (the bot lowers it once it is done)
    assert names & {"CommandCenter", "OrbitalCommand"} and names & {"SupplyDepot", "SupplyDepotLowered"}, names
    assert all(0 < s.hp <= s.hp_max and not s.seen for s in t.structures_left)
    assert t.structures_lost_loops == [] and t.army_lost == 0 and t.first_contact_loop is None


def test_a_won_game_ends_with_no_bot_structure_left_after_contact(ft):
    (t,) = ft.trace_games("scripted", 1, seed=3)
    assert t.outcome == 1
    assert t.structures_left == []
    assert t.first_contact_loop is not None and t.first_contact_loop < t.end_loop
    assert len(t.structures_lost_loops) >= 1 and max(t.structures_lost_loops) == t.end_loop


@pytest.mark.skipif(not CHECKPOINT.is_file(), reason="the shipped SL checkpoint is not in this checkout")
def test_a_checkpoint_plays_at_its_trained_step_mul(ft):
    (t,) = ft.trace_games(str(CHECKPOINT), 1, seed=5, game_steps_per_episode=1344)
    assert t.end_loop == 1344 and len(t.actions) == 1344 // 32  # the checkpoint records its dataset's stride, 32


def test_window_actions_count_only_the_last_minutes_when_start_is_negative(ft):
    minute = ft.LOOPS_PER_MINUTE
    t = _trace(ft, 0.0, 10 * minute, actions=[(0, 1, 0), (8 * minute, 0, 0), (9 * minute, 0, 3)])
    acts, refused, n = ft.window_actions([t], -3.0, None)
    assert n == 2 and acts == [("no_op", 1.0)]
    assert refused == [("no_op:Error", 0.5)]
    assert ft.window_actions([t], 0.0, 5.0)[2] == 1


def test_split_table_puts_each_game_in_the_bin_of_its_value(ft):
    low = _trace(ft, 0.0, 18000, timeline={5.0: dict.fromkeys(ft.TIMELINE, 1.0)})
    high = _trace(ft, 1.0, 9000, timeline={5.0: dict.fromkeys(ft.TIMELINE, 7.0)})
    table = ft.split_table([low, high, high], 5.0, "army_supply", (0, 2, 4))
    assert "| [0, 2) | 1 | 0 | 1 | 0 | 0.00 |" in table
    assert "| >= 4 | 2 | 2 | 0 | 0 | 1.00 |" in table


def test_split_table_refuses_a_minute_it_does_not_record(ft):
    with pytest.raises(ValueError, match="minute=7"):
        ft.split_table([], 7.0)


def test_outcome_table_counts_the_structures_left_and_those_seen(ft):
    s = ft.Structure("Barracks", 58.0, 34.0, 1000.0, 1000.0, True, seen=False, visible=False)
    seen = ft.Structure("SupplyDepot", 54.0, 27.0, 400.0, 400.0, True, seen=True, visible=False)
    table = ft.outcome_table([_trace(ft, 0.0, 18000, left=[s, seen])], 3.0)
    row = next(line for line in table.splitlines() if line.startswith("| timed out"))
    assert "| 2.0 | 1/2 |" in row


def test_bad_flags_end_with_a_usage_error(ft):
    with pytest.raises(SystemExit) as e:
        ft.main(["--policy", "scripted", "--games", "0"])
    assert e.value.code == 2
    with pytest.raises(SystemExit):
        ft.main(["--policy", "no_such_policy.pt", "--games", "1"])
