"""``StarCraft2Env`` carries every public name of oxwhirl SMAC's class, with SMAC's meaning.

The pinned list ``tests/data/smac_starcraft2env_public_names.json`` was enumerated from
oxwhirl/smac@d6aab33 (``smac/env/starcraft2/starcraft2.py`` and ``smac/env/multiagentenv.py``).
SMAC's own rules, re-implemented on the raw unit records (``sc2_envs.sc2api.smac_rules``), must give
the same obs / state / avail as the simulator's tensor path.
"""

import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch

from sc2_envs.adapters import StarCraft2Env
from sc2_envs.render import load_replay, replay_to_video
from sc2_envs.sc2api.raw import RL_TYPE_ID_BASE, RawUnit

NAMES = json.loads((Path(__file__).parent.parent / "data" / "smac_starcraft2env_public_names.json").read_text())


def test_pinned_list_is_smac_d6aab33():
    assert "d6aab33" in NAMES["source"]
    assert len(NAMES["methods"]) == 44 and len(NAMES["attributes"]) == 74


@pytest.mark.parametrize("name", NAMES["methods"])
def test_every_smac_method_exists(name):
    env = StarCraft2Env("MMM", seed=0)
    assert callable(getattr(env, name)), name


@pytest.mark.parametrize("name", NAMES["attributes"])
def test_every_smac_attribute_exists(name):
    env = StarCraft2Env("2s3z", seed=0)
    env.reset()
    getattr(env, name)


def test_attribute_values_mean_what_smac_means():
    env = StarCraft2Env("2s3z", seed=0)
    assert (env.shield_bits_ally, env.shield_bits_enemy, env.unit_type_bits, env.map_type) == (1, 1, 2, "stalkers_and_zealots")
    assert (env.reward_scale, env.reward_scale_rate, env.reward_sparse, env.n_actions_no_attack) == (True, 20, False, 6)
    assert env.max_reward == 5 * 10 + 200  # before the first reset, as SMAC's __init__
    assert env.obs_last_action is False and env.state_last_action is True
    assert env.difficulty == "7" and env.window_size == (1920, 1200)
    env.reset()
    assert env.max_reward == 1020  # + sum of enemy health_max + shield_max at the first init_units
    assert env.stalker_id == RL_TYPE_ID_BASE and env.zealot_id == RL_TYPE_ID_BASE + 1
    assert [u.unit_type for u in env.agents.values()] == [RL_TYPE_ID_BASE] * 2 + [RL_TYPE_ID_BASE + 1] * 3
    assert [u.unit_type for u in env.enemies.values()] == [74, 74, 73, 73, 73]
    u = env.get_unit_by_id(0)
    assert isinstance(u, RawUnit) and u.owner == 1 and (u.health, u.health_max, u.shield, u.shield_max) == (80, 80, 80, 80)
    assert isinstance(u.pos.x, float) and env.unit_max_shield(u) == 80 and env.unit_max_shield(env.enemies[2]) == 50
    assert env.get_unit_type_id(env.enemies[0], False) == 1  # SMAC's enemy stalker/zealot swap
    assert env.get_unit_type_id(u, True) == 0
    assert env.get_obs_enemy_feats_size() == (5, 8) and env.get_obs_ally_feats_size() == (4, 8)
    assert env.get_obs_own_feats_size() == 4 and env.get_obs_move_feats_size() == 4
    assert env.get_ally_num_attributes() == 7 and env.get_enemy_num_attributes() == 6
    assert env.last_action.shape == (5, 11) and not env.last_action.any()
    assert env.death_tracker_ally.tolist() == [0.0] * 5 and env.previous_ally_units is None
    assert env.battles_won == env.battles_game == env.timeouts == env.force_restarts == 0
    assert env.distance(0, 0, 3, 4) == 5.0 and env.unit_shoot_range(0) == 6 and env.unit_sight_range(0) == 9
    assert env.check_bounds(31, 0) and not env.check_bounds(32, 0)
    assert len(env.get_surrounding_points(u, include_self=True)) == 9
    assert env.get_visibility_matrix().shape == (5, 10)


def _random_episode(env, rng, steps=400):
    env.reset()
    for _ in range(steps):
        yield
        acts = [int(rng.choice(np.flatnonzero(a))) for a in env.get_avail_actions()]
        _, terminated, _ = env.step(acts)
        if terminated:
            yield
            return


@pytest.mark.parametrize(
    "map_name,options",
    [
        ("3m", {}),
        ("2s3z", {"obs_last_action": True, "obs_pathing_grid": True, "obs_terrain_height": True}),
        ("MMM", {"state_timestep_number": True, "obs_timestep_number": True}),
    ],
)
def test_smac_rules_on_unit_records_equal_tensor_path(map_name, options):
    """SMAC's per-unit rules on ``env.agents`` / ``env.enemies`` reproduce the simulator's vectors every step."""
    env = StarCraft2Env(map_name, seed=1, **options)
    rng = np.random.default_rng(0)
    n = 0
    for _ in _random_episode(env, rng):
        for i in range(env.n_agents):
            assert env.rules_avail_agent_actions(i) == env.get_avail_agent_actions(i)
            np.testing.assert_allclose(env.rules_obs_agent(i), env.get_obs_agent(i), atol=1e-6)
        np.testing.assert_allclose(env.rules_state(), env.get_state(), atol=1e-6)
        d = env.get_state_dict()
        assert d["allies"].shape == (env.n_agents, env.get_ally_num_attributes())
        n += 1
    assert n > 5


def test_reward_battle_and_death_trackers_follow_smac():
    """After each step the records' reward terms (SMAC's ``reward_battle``) give the step's reward."""
    env = StarCraft2Env("3m", seed=0, reward_only_positive=False)
    rng = np.random.default_rng(1)
    env.reset()
    for _ in range(60):
        acts = [int(rng.choice(np.flatnonzero(a))) for a in env.get_avail_actions()]
        trackers = env.death_tracker_ally.copy(), env.death_tracker_enemy.copy()
        reward, terminated, info = env.step(acts)
        # replay SMAC's reward_battle on the records from the trackers before the step
        env.death_tracker_ally, env.death_tracker_enemy = trackers
        dense = env.reward_battle()
        bonus = env.reward_win if info["battle_won"] else (env.reward_defeat if env.defeat_counted else 0)
        assert math.isclose(reward, (dense + bonus) / (env.max_reward / env.reward_scale_rate), rel_tol=1e-5, abs_tol=1e-6)
        assert env.death_tracker_ally.sum() == info["dead_allies"] and env.death_tracker_enemy.sum() == info["dead_enemies"]
        assert np.array_equal(env.last_action, np.eye(env.n_actions)[acts])
        if terminated:
            break


@pytest.mark.parametrize(
    "make", [lambda a: torch.tensor(a).reshape(-1, 1), lambda a: np.array(a).reshape(-1, 1), lambda a: [[x] for x in a]]
)
def test_actions_shaped_n_by_1(make):
    a, b = StarCraft2Env("3m", seed=2), StarCraft2Env("3m", seed=2)
    a.reset(), b.reset()
    for _ in range(5):
        acts = [1, 2, 4]
        assert a.step(make(acts))[0] == b.step(acts)[0]
    np.testing.assert_array_equal(a.get_state(), b.get_state())
    with pytest.raises(ValueError, match=r"shaped \(3,\) or \(3, 1\)"):
        a.step(np.ones((3, 2), int))


def test_save_replay_plays_back(tmp_path, capsys):
    env = StarCraft2Env("3m", seed=0, replay_dir=str(tmp_path), replay_prefix="eval")
    for _ in range(2):
        env.reset()
        terminated = False
        while not terminated:
            _, terminated, _ = env.step([1 if a[1] else 0 for a in env.get_avail_actions()])
    path = env.save_replay()
    assert path.parent == tmp_path.resolve() and path.name.startswith("eval_") and path.suffix == ".npz"
    assert str(path) in capsys.readouterr().err
    frames = load_replay(path)
    episodes = [f["episode"] for f in frames]
    assert sorted(set(episodes)) == [0, 1] and min(episodes.count(0), episodes.count(1)) > 10
    assert [f["episode_steps"] for f in frames if f["episode"] == 1][:3] == [0, 1, 2]
    last = frames[-1]
    np.testing.assert_allclose(last["pos"], env.sim.render_data(0)["pos"])
    assert not last["alive"][:3].any()  # the passive agents all died
    gif = replay_to_video(path, tmp_path / "replay.gif", fps=8, scale=4)
    assert gif.stat().st_size > 1000
    from sc2_envs.render import main

    assert main([str(path), "--out", str(tmp_path / "cli.gif"), "--scale", "3"]) == 0


def test_save_replay_before_reset_and_bad_files(tmp_path):
    env = StarCraft2Env("3m", seed=0, replay_dir=str(tmp_path))
    with pytest.raises(RuntimeError, match="nothing recorded"):
        env.save_replay()
    np.savez(tmp_path / "x.npz", a=np.zeros(2))
    with pytest.raises(ValueError, match="not a sc2_envs.sim_replay"):
        load_replay(tmp_path / "x.npz")


def test_render_human_without_display_says_why(monkeypatch):
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    env = StarCraft2Env("3m", seed=0)
    env.reset()
    with pytest.raises(RuntimeError, match="no display"):
        env.render()
    assert env.render(mode="rgb_array").dtype == np.uint8
    with pytest.raises(ValueError, match="expected 'human' or 'rgb_array'"):
        env.render(mode="ansi")


def test_render_human_opens_a_pygame_window(monkeypatch):
    pygame = pytest.importorskip("pygame", reason="render(mode='human') uses pygame")
    monkeypatch.setenv("SDL_VIDEODRIVER", "dummy")  # SDL's dummy driver: a real pygame surface, no screen
    from sc2_envs.adapters import smac_compat

    monkeypatch.setattr(smac_compat, "_display_problem", lambda: None)
    env = StarCraft2Env("3m", seed=0)
    env.reset()
    assert env.render() is None
    assert pygame.display.get_surface().get_size() == env.render(mode="rgb_array").shape[1::-1]
    env.close()
    assert env.renderer is None


def test_lenient_actions_record_what_was_done():
    env = StarCraft2Env("3m", seed=0, lenient_actions=True)
    env.reset()
    _, _, info = env.step([0, 1, 1])  # no-op is for dead agents only: replaced by stop
    assert info["invalid_actions"].tolist() == [True, False, False]
    assert env.last_action.argmax(1).tolist() == [1, 1, 1]
