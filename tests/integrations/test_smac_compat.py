"""SMAC ``StarCraft2Env`` compatibility (pymarl / EPyMARL): semantics checked with a pymarl-style runner."""

import numpy as np
import pytest
import torch

from sc2_envs.adapters import StarCraft2Env


def passive(env):
    """Stop for living agents, no-op for dead ones (always available); the enemy's attack-move kills the
    agents one by one (3m, seed 0: first death at step 11, the last at step 21)."""
    return [1 if avail[1] else 0 for avail in env.get_avail_actions()]


def random_masked(rng):
    def policy(env):
        return [int(rng.choice(np.flatnonzero(avail))) for avail in env.get_avail_actions()]

    return policy


def run_episode(env, policy):
    """A transcription of pymarl's ``EpisodeRunner.run`` data flow, without the learner: pre-transition
    data is read through ``get_state / get_avail_actions / get_obs``, the stored ``terminated`` is
    ``terminated != env_info.get("episode_limit", False)``, and the final observation is stored after the loop."""
    env.reset()
    terminated = False
    batch = {"state": [], "avail_actions": [], "obs": [], "actions": [], "reward": [], "terminated": []}
    episode_return = 0.0
    infos = []
    while not terminated:
        batch["state"].append(env.get_state())
        batch["avail_actions"].append(env.get_avail_actions())
        batch["obs"].append(env.get_obs())
        actions = torch.tensor(policy(env))  # pymarl passes actions[0], a tensor of N ints
        reward, terminated, env_info = env.step(actions)
        episode_return += reward
        batch["actions"].append(actions.tolist())
        batch["reward"].append(reward)
        batch["terminated"].append(terminated != env_info.get("episode_limit", False))
        infos.append(env_info)
    batch["state"].append(env.get_state())
    batch["avail_actions"].append(env.get_avail_actions())
    batch["obs"].append(env.get_obs())
    return batch, infos, episode_return


def test_env_info_matches_sizes():
    env = StarCraft2Env("3m", seed=0)
    info = env.get_env_info()
    assert {k: info[k] for k in ("n_agents", "n_actions", "episode_limit")} == {
        "n_agents": 3,
        "n_actions": 9,
        "episode_limit": 60,
    }
    obs, state = env.reset()
    assert len(obs) == 3 and all(o.shape == (info["obs_shape"],) and o.dtype == np.float32 for o in obs)
    assert state.shape == (info["state_shape"],) and state.dtype == np.float32
    assert env.get_obs_size() == info["obs_shape"] and env.get_state_size() == info["state_shape"]
    assert env.get_total_actions() == 9
    assert np.array_equal(env.get_obs_agent(2), obs[2])
    assert env.get_avail_agent_actions(0) == env.get_avail_actions()[0]


def test_first_death_does_not_end_episode():
    env = StarCraft2Env("3m", seed=0)
    batch, infos, _ = run_episode(env, passive)
    dead = [i["dead_allies"] for i in infos]
    first = dead.index(1)
    assert first == 10 and len(infos) == 21, (first, len(infos))  # died at step 11, battle lost at step 21
    assert not any(batch["terminated"][:-1]) and batch["terminated"][-1]
    # The dead agent stays: zero observation and only no-op available, as in SMAC.
    obs_after, avail_after = batch["obs"][first + 1], np.array(batch["avail_actions"][first + 1])
    dead_ids = [i for i in range(3) if avail_after[i, 0] == 1]
    assert len(dead_ids) == 1
    assert np.all(obs_after[dead_ids[0]] == 0)
    assert avail_after[dead_ids[0]].tolist() == [1] + [0] * 8
    assert infos[-1] == {"battle_won": False, "dead_allies": 3, "dead_enemies": 0}


@pytest.mark.parametrize("continuing_episode", [False, True])
def test_time_limit_flags(short_3m, continuing_episode):
    env = StarCraft2Env(short_3m, seed=0, continuing_episode=continuing_episode)
    batch, infos, _ = run_episode(env, passive)
    assert len(infos) == 6
    if continuing_episode:  # pymarl stores terminated=False and bootstraps the limit step
        assert infos[-1]["episode_limit"] is True
        assert batch["terminated"] == [False] * 6
    else:  # SMAC's default: the time limit looks like any other end (the key is absent)
        assert "episode_limit" not in infos[-1]
        assert batch["terminated"] == [False] * 5 + [True]
    assert env.get_stats() == {
        "battles_won": 0,
        "battles_game": 1,
        "battles_draw": 1,
        "timeouts": 1,
        "win_rate": 0.0,
        "restarts": 0,
    }


def test_random_episodes_respect_masks_and_count_stats():
    rng = np.random.default_rng(0)
    env = StarCraft2Env("3m", seed=3)
    for _ in range(3):
        batch, _infos, ret = run_episode(env, random_masked(rng))
        for avail, acts in zip(batch["avail_actions"], batch["actions"], strict=False):
            assert all(avail[i][a] == 1 for i, a in enumerate(acts))
        assert len(batch["obs"]) == len(batch["actions"]) + 1
        assert ret >= 0.0  # reward_only_positive
    stats = env.get_stats()
    assert stats["battles_game"] == 3 and set(stats) == {
        "battles_won",
        "battles_game",
        "battles_draw",
        "win_rate",
        "timeouts",
        "restarts",
    }


def test_same_seed_same_episode():
    episodes = []
    for _ in range(2):
        rng = np.random.default_rng(1)
        env = StarCraft2Env("3m", seed=5)
        batch, _infos, ret = run_episode(env, random_masked(rng))
        episodes.append((np.array(batch["obs"]), batch["reward"], ret))
    assert np.array_equal(episodes[0][0], episodes[1][0]) and episodes[0][1] == episodes[1][1]


def test_errors_are_clear():
    env = StarCraft2Env("3m", seed=0)
    with pytest.raises(RuntimeError, match="reset"):
        env.step([1, 1, 1])
    env.reset()
    with pytest.raises(ValueError, match="unavailable"):
        env.step([0, 1, 1])  # no-op is for dead agents only
    with pytest.raises(ValueError, match="expected 3 actions"):
        env.step([1, 1])
    with pytest.raises(ValueError, match="agent_id"):
        env.get_obs_agent(3)
    with pytest.raises(ValueError, match="step_mul"):
        StarCraft2Env("3m", step_mul=4)
    with pytest.raises(ValueError, match="difficulty"):
        StarCraft2Env("3m", difficulty="3")


def test_smac_keywords_accepted():
    """pymarl's sc2.yaml passes every StarCraft2Env keyword; process-only ones are kept without effect."""
    env = StarCraft2Env(
        map_name="3m",
        seed=0,
        continuing_episode=False,
        difficulty="7",
        game_version=None,
        move_amount=2,
        obs_all_health=True,
        obs_instead_of_state=False,
        obs_last_action=True,
        obs_own_health=True,
        obs_pathing_grid=False,
        obs_terrain_height=False,
        obs_timestep_number=False,
        reward_death_value=10,
        reward_defeat=0,
        reward_negative_scale=0.5,
        reward_only_positive=True,
        reward_scale=True,
        reward_scale_rate=20,
        reward_sparse=False,
        reward_win=200,
        replay_dir="",
        replay_prefix="",
        state_last_action=True,
        state_timestep_number=False,
        step_mul=8,
        heuristic_ai=False,
        heuristic_rest=False,
        debug=False,
    )
    obs, _ = env.reset()
    assert obs[0].shape == (env.get_obs_size(),)
    assert env.seed() == 0
    frame = env.render(mode="rgb_array")  # SMAC's default mode is "human" (a window)
    assert frame.ndim == 3 and frame.dtype == np.uint8
    env.close()
    env.close()


def test_death_on_the_time_limit_step():
    """The first death (step 11 with the passive policy) on the limit step: still a time-limit end."""
    import dataclasses

    from sc2_envs.maps import get_map

    env = StarCraft2Env(dataclasses.replace(get_map("3m"), episode_limit=11), seed=0, continuing_episode=True)
    batch, infos, _ = run_episode(env, passive)
    assert len(infos) == 11 and infos[-1] == {"battle_won": False, "dead_allies": 1, "dead_enemies": 0, "episode_limit": True}
    assert batch["terminated"][-1] is False


@pytest.mark.parametrize("bad", ["no", float("nan"), 1, None])
def test_continuing_episode_must_be_a_bool(bad):
    with pytest.raises(TypeError, match=f"continuing_episode must be a bool, got {bad!r}"):
        StarCraft2Env("3m", continuing_episode=bad)
    assert StarCraft2Env("3m", continuing_episode=np.bool_(True)).continuing_episode is True


@pytest.mark.parametrize(
    "kwargs, err, words",
    [
        ({"step_mul": np.array([8])}, TypeError, r"step_mul must be an int, got array\(\[8\]\)"),
        ({"step_mul": 8.0}, TypeError, "step_mul must be an int, got 8.0"),
        ({"move_amount": "2"}, TypeError, "move_amount must be a number, got '2'"),
        ({"difficulty": True}, TypeError, "difficulty must be a str"),
        ({"difficulty": 7}, TypeError, r"difficulty must be a str such as '7' \(SMAC's difficulty keys are strings\), got 7"),
        ({"heuristic_ai": 0}, TypeError, "heuristic_ai must be a bool, got 0"),
        ({"replay_dir": 5}, TypeError, "replay_dir must be a str or os.PathLike, got 5"),
        ({"replay_prefix": None}, TypeError, "replay_prefix must be a str, got None"),
        ({"window_size_x": "abc"}, TypeError, "window_size_x must be a positive int, got 'abc'"),
        ({"window_size_y": 0}, ValueError, "window_size_y must be a positive int, got 0"),
        ({"debug": "yes"}, TypeError, "debug must be a bool, got 'yes'"),
        ({"game_version": 4.10}, TypeError, "game_version must be None or a str"),
    ],
)
def test_smac_keywords_of_the_wrong_type_are_named(kwargs, err, words):
    with pytest.raises(err, match=words):
        StarCraft2Env("3m", **kwargs)


@pytest.mark.parametrize(
    "key, value", [("game_version", "9.9"), ("window_size_x", 640), ("window_size_y", 480), ("debug", True)]
)
def test_process_keywords_without_effect_warn_when_not_smacs_default(key, value):
    with pytest.warns(UserWarning, match=rf"{key}={value!r} has no effect on the embedded simulator"):
        env = StarCraft2Env("3m", **{key: value})
    assert getattr(env, key, None) == value or value in env.window_size


def test_smac_default_keywords_give_no_warning(tmp_path):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        env = StarCraft2Env(
            "3m",
            game_version=None,
            window_size_x=1920,
            window_size_y=1200,
            debug=False,
            replay_dir=tmp_path,
            replay_prefix="x",
        )
    assert env.replay_dir == tmp_path  # replay_dir / replay_prefix name save_replay's files: no warning


@pytest.mark.parametrize("bad, err", [(-5, ValueError), (1.5, TypeError), (True, TypeError), ("abc", TypeError)])
def test_seed_checks_its_argument_at_the_call_with_resets_message(bad, err):
    env = StarCraft2Env("3m", seed=0)
    with pytest.raises(err, match=repr(bad).replace(".", r"\.")) as at_call:
        env.seed(bad)
    assert env.seed() == 0  # unchanged
    env._seed, env._episode_count = bad, 0  # what seed() used to store: reset gives the same message
    with pytest.raises(err) as at_reset:
        env.reset()
    assert str(at_call.value) == str(at_reset.value)


def test_ragged_actions_name_the_expected_shape():
    env = StarCraft2Env("3m", seed=0)
    env.reset()
    with pytest.raises(ValueError, match=r"expected 3 actions \(one per agent\), shaped \(3,\) or \(3, 1\); got a ragged"):
        env.step([1, [1], 1])


def test_state_dict_and_reward_battle_need_a_reset_like_get_state():
    env = StarCraft2Env("3m", seed=0)
    for read in (env.get_state, env.get_state_dict, env.reward_battle):
        with pytest.raises(RuntimeError, match=r"call reset\(\) before reading observations"):
            read()
    env.reset()
    assert set(env.get_state_dict()) >= {"allies", "enemies"}


def test_resets_before_the_first_terminated_episode_continue_the_seeded_stream():
    env = StarCraft2Env("3m", seed=0)
    _, s1 = env.reset()
    env.step([1, 1, 1])  # abandoned: no episode has terminated yet
    _, s2 = env.reset()
    env.full_restart()
    _, s3 = env.get_obs(), env.get_state()
    assert not np.array_equal(s1, s2) and not np.array_equal(s2, s3)
    fresh = StarCraft2Env("3m", seed=0)
    assert np.array_equal(fresh.reset()[1], s1)
    assert np.array_equal(fresh.reset()[1], s2)  # the second episode of the seeded stream, as make_batched(seed=0)
    fresh.seed(0)  # seed(s) restarts the stream at the next reset
    assert np.array_equal(fresh.reset()[1], s1)


def test_save_replay_names_a_replay_dir_it_cannot_write(tmp_path):
    # found by a tester: replay_dir="/etc/passwd" (a file) gave a FileExistsError from mkdir
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    env = StarCraft2Env("3m", seed=0, replay_dir=str(blocker))
    env.reset()
    env.step([1] * env.n_agents)
    with pytest.raises(ValueError, match=r"replay_dir '.*a_file' is a file; expected a folder"):
        env.save_replay()
    env.close()
