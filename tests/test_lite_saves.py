"""Saving one lite game and loading it into another slot or env: the loaded game plays on bit for bit."""

import re

import numpy as np
import pytest

from sc2_envs.lite.env import GameSave, LiteFullGameVectorEnv
from sc2_envs.lite.policy import RandomLegalPolicy

SIZES = {"max_entities": 96, "max_selected": 8, "game_steps_per_episode": 4000}


def _copy(obs: dict, row: int) -> dict:
    return {k: v[row].copy() for k, v in obs.items()}


def _assert_obs_equal(a: dict, b: dict, what: str) -> None:
    assert a.keys() == b.keys()
    for k in a:
        np.testing.assert_array_equal(a[k], b[k], err_msg=f"{what}: {k}")


@pytest.fixture(scope="module")
def played():
    """Two games played 150 random legal steps (the bot's opening under way, builds pending), game 1
    saved there, then both played 60 more steps: the save, the actions, what game 1 gave and game 1 at
    the end (the bot's base is under fog: the observations alone would not show a bot playing another plan)."""
    venv = LiteFullGameVectorEnv(num_envs=2, **SIZES)
    policy = RandomLegalPolicy(venv.engine.catalog, SIZES["max_entities"], SIZES["max_selected"], seed=3)
    obs, _ = venv.reset(seed=5)
    for _ in range(150):
        obs, *_ = venv.step(policy(obs))
    saved = venv.save_game(1)
    at_save = _copy(obs, 1)
    actions, after = [], []
    for _ in range(60):
        action = policy(obs)
        actions.append({k: np.array(v, copy=True) for k, v in action.items()})
        obs, reward, term, trunc, info = venv.step(action)
        after.append((_copy(obs, 1), reward[1], term[1], trunc[1], info["game_loop"][1], info["action_errors"][1].copy()))
    final = venv.save_game(1)
    venv.close()
    return saved, at_save, actions, after, final


def test_a_loaded_game_plays_on_as_the_saved_one_did_in_another_slot_and_env(played):
    saved, at_save, actions, after, final = played
    assert isinstance(saved, GameSave) and saved.game_loop == 150 * 8
    venv = LiteFullGameVectorEnv(num_envs=3, **SIZES)
    obs, _ = venv.reset(seed=9)  # other games: nothing of them may leak into the loaded ones
    for _ in range(4):
        obs, *_ = venv.step({"action_type": np.zeros(3, np.int64)})
    venv.load_game(2, saved)
    venv.load_game(0, saved)  # the same save twice: nothing is shared between the copies
    _assert_obs_equal(_copy(obs, 2), at_save, "at the load")
    _assert_obs_equal(_copy(obs, 0), at_save, "at the load, second copy")
    for t, (action, (obs_a, reward_a, term_a, trunc_a, loop_a, errors_a)) in enumerate(zip(actions, after, strict=True)):
        heads = {k: v[[1, 1, 1]] for k, v in action.items()}  # game 1's action in both copies
        heads["action_type"][1] = 0  # the untouched game idles
        obs, reward, term, trunc, info = venv.step(heads)
        for row in (2, 0):
            _assert_obs_equal(_copy(obs, row), obs_a, f"step {t}, row {row}")
            assert (reward[row], term[row], trunc[row]) == (reward_a, term_a, trunc_a)
            assert info["game_loop"][row] == loop_a
            np.testing.assert_array_equal(info["action_errors"][row], errors_a)
    for row in (2, 0):  # the whole game, the bot's units and plan included
        end = venv.save_game(row)
        for name in ("uf", "ui", "oi", "of", "pq", "pf", "gi", "occ", "vis", "ghost", "err"):
            np.testing.assert_array_equal(getattr(end.engine, name), getattr(final.engine, name), err_msg=name)
        assert end.bot.keys() == final.bot.keys()
        for k in end.bot:
            np.testing.assert_array_equal(end.bot[k], final.bot[k], err_msg=k)
    venv.close()


def test_a_loaded_game_keeps_its_episode_start_for_the_loop_limit(played):
    saved = played[0]
    venv = LiteFullGameVectorEnv(num_envs=1, max_entities=96, max_selected=8, game_steps_per_episode=150 * 8 + 16)
    venv.reset(seed=0)
    venv.load_game(0, saved)
    noop = {"action_type": np.zeros(1, np.int64)}
    _, _, _, trunc, info = venv.step(noop)
    assert not trunc[0] and info["game_loop"][0] == 150 * 8 + 8
    _, _, _, trunc, info = venv.step(noop)  # the limit counts from the saved episode's start, loop 0
    assert trunc[0] and info["game_loop"][0] == 150 * 8 + 16
    venv.close()


def test_a_load_drops_a_pending_autoreset():
    venv = LiteFullGameVectorEnv(num_envs=2, max_entities=96, max_selected=8, game_steps_per_episode=16)
    venv.reset(seed=0)
    noop = {"action_type": np.zeros(2, np.int64)}
    venv.step(noop)
    saved = venv.save_game(0)  # loop 8
    _, _, _, trunc, _ = venv.step(noop)
    assert trunc.all()  # both reset on the next step ...
    venv.load_game(1, saved)  # ... but game 1 now goes on from loop 8
    _, _, _, trunc, info = venv.step(noop)
    assert info["game_loop"].tolist() == [0, 16] and trunc.tolist() == [False, True]
    venv.close()


def test_bad_saves_and_indices_are_refused_by_name(played):
    saved = played[0]
    venv = LiteFullGameVectorEnv(num_envs=2, **SIZES)
    with pytest.raises(RuntimeError, match="before reset"):
        venv.save_game(0)
    with pytest.raises(RuntimeError, match="before reset"):
        venv.load_game(0, saved)
    venv.reset(seed=0)
    for bad in (2, -1, 1.0, True, "0"):
        with pytest.raises(ValueError, match="game="):
            venv.save_game(bad)
        with pytest.raises(ValueError, match="game="):
            venv.load_game(bad, saved)
    with pytest.raises(ValueError, match="expected a GameSave"):
        venv.load_game(0, {"engine": saved.engine})
    other = LiteFullGameVectorEnv(num_envs=1, capacity=256, **SIZES)
    other.reset(seed=0)
    with pytest.raises(ValueError, match="256 unit slots"):
        other.load_game(0, saved)
    venv.close()
    other.close()


@pytest.mark.parametrize(
    "other, expected",
    [
        ({"max_entities": 64}, "max_entities=96; these games have max_entities=64"),
        ({"max_entities": 1}, "max_entities=96; these games have max_entities=1"),
        ({"data_profile": "4.10"}, "data_profile='3.16.1'; these games have data_profile='4.10'"),
        ({"omniscient": True}, "omniscient=False; these games have omniscient=True"),
        ({"capacity": 256}, "saved with 384 unit slots on a 88 x 96 map; this engine has 256 unit slots"),
    ],
)
def test_a_save_from_other_games_is_refused_before_anything_is_written(played, other, expected):
    """Found by a tester: a save from 96-row games half-loaded into 64-row ones (the engine and bot written,
    then numpy failed on the observation rows), and one from 1-row games loaded into 96-row ones by broadcasting."""
    saved = played[0]
    venv = LiteFullGameVectorEnv(num_envs=2, **{**SIZES, **other})
    venv.reset(seed=0)
    before = venv.save_game(0)
    with pytest.raises(ValueError, match=re.escape(expected)):
        venv.load_game(0, saved)
    after = venv.save_game(0)
    for name in ("uf", "ui", "gi", "pf"):
        np.testing.assert_array_equal(getattr(after.engine, name), getattr(before.engine, name), err_msg=name)
    assert after.bot["next_macro"] == before.bot["next_macro"] and after.start_loop == before.start_loop
    venv.close()


def test_a_game_that_just_ended_cannot_be_saved_and_saves_compare_by_identity(played):
    venv = LiteFullGameVectorEnv(num_envs=1, max_entities=96, max_selected=8, game_steps_per_episode=16)
    venv.reset(seed=0)
    noop = {"action_type": np.zeros(1, np.int64)}
    venv.step(noop)
    venv.step(noop)  # at its limit: it resets on the next step
    with pytest.raises(ValueError, match="game=0 ended on the last step"):
        venv.save_game(0)
    venv.close()
    saved = played[0]
    assert saved == saved and saved != played[4] and saved in {saved}  # no elementwise array comparison


def test_a_save_past_the_loading_games_limit_is_refused(played):
    """A reviewer's point: it would end on its first step, silently."""
    saved = played[0]  # 1,200 loops into its episode
    venv = LiteFullGameVectorEnv(num_envs=1, max_entities=96, max_selected=8, game_steps_per_episode=1200)
    venv.reset(seed=0)
    with pytest.raises(
        ValueError, match="saved 1200 game loops into its episode; these games end at game_steps_per_episode=1200"
    ):
        venv.load_game(0, saved)
    venv.close()
