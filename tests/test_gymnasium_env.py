"""Gymnasium contract of ``sc2_envs.wrappers.gymnasium`` (joint-action env, ids ``sc2_envs/<map>-v0``)."""

from __future__ import annotations

import warnings

import gymnasium
import matplotlib
import numpy as np
import pytest
import torch
from gymnasium.utils.env_checker import check_env, data_equivalence

from sc2_envs.maps import list_maps
from sc2_envs.sim.env import UnitPlacement as P
from sc2_envs.wrappers import pettingzoo as pz
from sc2_envs.wrappers.gymnasium import SC2JointEnv, env_id, register_envs

matplotlib.use("Agg")  # check_env also builds the env with render_mode="human"

register_envs()


@pytest.mark.parametrize("map_name", ["3m", "2s3z", "MMM"])
@pytest.mark.parametrize("observation", ["obs", "state"])
def test_check_env_passes_with_warnings_as_errors(map_name, observation):
    # check_env samples actions without the mask, hence lenient actions.
    env = gymnasium.make(env_id(map_name), observation=observation, lenient_actions=True, render_mode="rgb_array")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        # check_env also renders a render_mode="human" env: headless, that warns (by design) that no window opens
        warnings.filterwarnings("ignore", message="render_mode='human' cannot open a window", category=UserWarning)
        check_env(env.unwrapped)


def test_every_map_is_registered_once_and_makes():
    assert register_envs() == []  # already registered at import of this test module: nothing new
    for name in list_maps():
        spec = gymnasium.spec(env_id(name))
        assert spec.namespace == "sc2_envs" and spec.name == name and spec.version == 0
        assert spec.nondeterministic is False
    env = gymnasium.make("sc2_envs/2s3z-v0")
    assert isinstance(env.unwrapped, SC2JointEnv) and env.unwrapped.map_name == "2s3z"
    assert env.action_space == gymnasium.spaces.MultiDiscrete([11] * 5)


def test_spaces_and_action_masks_layout():
    env = SC2JointEnv("2s3z")
    n, a, obs_size = 5, 11, env.sim.obs_size
    assert env.observation_space.shape == (n * obs_size,) and env.observation_space.dtype == np.float32
    obs, info = env.reset(seed=0)
    assert env.observation_space.contains(obs)
    assert info["action_mask"].shape == (n, a) and info["action_mask"].dtype == np.int8
    masks = env.action_masks()
    assert masks.shape == (n * a,) and masks.dtype == bool
    assert np.array_equal(masks, info["action_mask"].reshape(-1).astype(bool))
    assert info["state"].shape == (env.sim.state_size,) and info["state"].dtype == np.float32


def test_joint_obs_is_the_pettingzoo_obs_concatenated():
    genv, penv = SC2JointEnv("2s3z"), pz.parallel_env("2s3z")
    gobs, ginfo = genv.reset(seed=11)
    pobs, _ = penv.reset(seed=11)
    rng = np.random.default_rng(0)
    for _ in range(20):
        zero = np.zeros_like(gobs[: genv.sim.obs_size])
        expected = np.concatenate([pobs[ag]["observation"] if ag in pobs else zero for ag in penv.possible_agents])
        assert np.array_equal(gobs, expected)
        assert np.array_equal(ginfo["state"], penv.state())
        joint = [int(rng.choice(np.flatnonzero(m))) for m in ginfo["action_mask"]]
        gobs, grew, *_, ginfo = genv.step(np.array(joint))
        live = {a: joint[i] for i, a in enumerate(penv.possible_agents) if a in penv.agents}
        pobs, prew, *_ = penv.step(live)
        assert grew == prew["agent_0"]


def _rollout(env, seed, n_steps):
    rng = np.random.default_rng(0)
    obs, info = env.reset(seed=seed)
    trace = [(obs, info)]
    for _ in range(n_steps):
        joint = np.array([rng.choice(np.flatnonzero(m)) for m in info["action_mask"]])
        obs, rew, term, trunc, info = env.step(joint)
        trace.append((obs, rew, term, trunc, info))
        if term or trunc:
            obs, info = env.reset()
            trace.append((obs, info))
    return trace


def test_same_seed_same_rollout_over_220_steps():
    a, b = _rollout(SC2JointEnv("3m"), 5, 220), _rollout(SC2JointEnv("3m"), 5, 220)
    assert sum(len(x) == 2 for x in a) >= 3  # several episodes
    assert data_equivalence(a, b)


def test_zero_d_integer_tensor_seed_is_its_int_and_a_float_one_is_refused():
    env = SC2JointEnv("3m")
    by_int, _ = env.reset(seed=3)
    by_tensor, _ = env.reset(seed=torch.tensor(3))
    assert np.array_equal(by_int, by_tensor)
    with pytest.raises(TypeError, match=r"tensor\(3\.\)"):
        env.reset(seed=torch.tensor(3.0))


def test_numpy_int_and_seed_sequence_seeds_are_taken_like_make_batched_and_pettingzoo():
    import sc2_envs

    env = SC2JointEnv("3m")
    by_int, _ = env.reset(seed=3)
    draw_int = env.np_random.integers(1 << 30)
    by_np, _ = env.reset(seed=np.int64(3))
    assert np.array_equal(by_int, by_np) and env.np_random_seed == 3 and env.np_random.integers(1 << 30) == draw_int
    par = pz.parallel_env("3m")
    for seed in (sc2_envs.eval_seed(1), np.random.SeedSequence(7)):
        obs, _ = env.reset(seed=seed)
        pobs, _ = par.reset(seed=seed)
        assert np.array_equal(obs, np.concatenate([pobs[f"agent_{i}"]["observation"] for i in range(3)]))
        draw = env.np_random.integers(1 << 30)
        env.reset(seed=seed)
        assert env.np_random.integers(1 << 30) == draw and env.np_random_seed == -1
    with pytest.raises(gymnasium.error.Error, match="Seed must be a python integer"):  # not an int: refused as before
        env.reset(seed=np.float64(3.0))


def test_time_limit_is_truncation_not_termination():
    env = SC2JointEnv("3m")
    env.reset(seed=0)
    env.sim.set_units(0, allies=[P(29, 8), P(30, 9.5), P(31, 8)], enemies=[P(8, 16), P(9, 17), P(9, 15)])
    for t in range(1, 61):
        _obs, _rew, term, trunc, info = env.step(np.ones(3, np.int64))
        assert term is False and trunc is (t == 60)
    assert info["episode_limit"].dtype == info["battle_won"].dtype == np.bool_
    assert info["episode_limit"] and not info["battle_won"]
    with pytest.raises(RuntimeError, match="reset"):
        env.step(np.ones(3, np.int64))


def test_bad_joint_actions_raise_clear_errors():
    env = SC2JointEnv("3m")
    with pytest.raises(RuntimeError, match="reset"):
        env.step(np.ones(3, np.int64))
    env.reset(seed=0)
    with pytest.raises(ValueError, match="3 integers"):
        env.step(np.ones(2, np.int64))
    with pytest.raises(ValueError, match="3 integers"):
        env.step(np.ones(3) * 1.0)
    with pytest.raises(ValueError, match=r"outside \[0, 9\)"):
        env.step(np.array([1, 1, 9]))
    with pytest.raises(ValueError, match="unavailable"):
        env.step(np.array([0, 1, 1]))  # no-op is for dead units only (SMAC)


def test_registered_id_fixes_the_map():
    with pytest.raises(
        ValueError, match=r"gymnasium.make\('sc2_envs/3m-v0'\) got map_name='8m', but the id fixes map_name='3m'"
    ):
        gymnasium.make("sc2_envs/3m-v0", map_name="8m")  # was a silent 8m under the 3m id
    env = gymnasium.make("sc2_envs/3m-v0", map_name="3m")
    assert env.unwrapped.map_name == "3m" and env.spec.id == "sc2_envs/3m-v0"
    assert SC2JointEnv("8m").spec is None


def test_action_masks_before_reset_and_ragged_actions_are_errors():
    env = SC2JointEnv("3m")
    with pytest.raises(RuntimeError, match=r"action_masks\(\) called before reset\(\)"):
        env.action_masks()  # was all False
    env.reset(seed=0)
    assert env.action_masks().any()
    with pytest.raises(ValueError, match=r"action must be 3 integers \(one per agent\), shape \(3,\); got a ragged"):
        env.step([[1], [1, 1], 1])


def test_lenient_actions_flag_the_replaced_entries():
    env = SC2JointEnv("3m", lenient_actions=True)
    env.reset(seed=0)
    *_, info = env.step(np.array([0, 1, 1]))
    assert info["invalid_actions"].tolist() == [True, False, False]


def test_bad_constructor_arguments_name_the_value():
    with pytest.raises(ValueError, match="observation='pixels'"):
        SC2JointEnv("3m", observation="pixels")
    with pytest.raises(ValueError, match="render_mode"):
        SC2JointEnv("3m", render_mode="ansi")


@pytest.mark.slow
def test_maskable_ppo_trains_with_action_masks():
    sb3_contrib = pytest.importorskip("sb3_contrib")
    env = SC2JointEnv("3m")  # strict: any action outside the mask would raise ValueError
    model = sb3_contrib.MaskablePPO("MlpPolicy", env, n_steps=64, batch_size=32, n_epochs=1, seed=0)
    model.learn(128)
    obs, info = env.reset(seed=0)
    action, _ = model.predict(obs, action_masks=env.action_masks())
    assert info["action_mask"][np.arange(3), action].all()


@pytest.mark.slow
@pytest.mark.parametrize("map_name", list_maps())
def test_check_env_passes_on_every_map(map_name):
    env = gymnasium.make(env_id(map_name), lenient_actions=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        # check_env also renders a render_mode="human" env: headless, that warns (by design) that no window opens
        warnings.filterwarnings("ignore", message="render_mode='human' cannot open a window", category=UserWarning)
        check_env(env.unwrapped)


def test_a_bool_seed_is_refused_before_gymnasium_reseeds_np_random():
    """gymnasium takes True as the seed 1; the simulator refused it only after np_random was reseeded (review)."""
    from sc2_envs.wrappers.gymnasium import SC2JointEnv

    env = SC2JointEnv("3m")
    env.reset(seed=5)
    state = env.np_random.bit_generator.state
    for bad in (True, np.True_):
        with pytest.raises(TypeError, match="seed must be an int, a SeedSequence or None, got (np.)?True"):
            env.reset(seed=bad)
    assert env.np_random.bit_generator.state == state


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"battle_won": "False"}, r"battle_won='False'; expected a bool \(or 0 / 1\)"),
        ({"episode_limit": 0.5}, r"episode_limit=0\.5; expected a bool \(or 0 / 1\)"),
        ({"episode_limit": 2}, r"episode_limit=2; expected a bool \(or 0 / 1\)"),
        ({"dead_allies": 1.5}, r"dead_allies=1\.5; expected an int >= 0"),
        ({"dead_enemies": -2}, r"dead_enemies=-2; expected an int >= 0"),
        ({"dead_enemies": True}, r"dead_enemies=True; expected an int >= 0"),
    ],
)
def test_battle_info_refuses_values_it_would_misread_naming_them(kwargs, message):
    """bool('False') is True and np.int64(1.5) is 1: such values were stored as a win or a count."""
    from sc2_envs.wrappers.gymnasium import battle_info

    with pytest.raises(ValueError, match=message):
        battle_info(**kwargs)


def test_battle_info_takes_python_numpy_and_0d_torch_values():
    from sc2_envs.wrappers.gymnasium import battle_info

    info = battle_info(np.bool_(True), np.int64(2), torch.tensor(3), torch.tensor(False))
    assert bool(info["battle_won"]) and info["dead_allies"] == 2 and info["dead_enemies"] == 3
    assert not info["episode_limit"] and battle_info(1, 0, 0, 0)["battle_won"].dtype == bool
