"""Bad input to the lite FullGame-v0 envs: each is refused with an error naming the value and what was expected."""

import re

import numpy as np
import pytest

from sc2_envs.full_game import spec
from sc2_envs.lite.env import MAX_NUM_ENVS, MAX_SIZES, LiteFullGameEnv, LiteFullGameVectorEnv

HEADS = "'action_type', 'queued', 'delay', 'selected_units', 'target_unit', 'target_location'"


@pytest.fixture(scope="module")
def env():
    e = LiteFullGameEnv(max_entities=64, max_selected=8)
    e.reset(seed=0)
    yield e
    e.close()


@pytest.fixture(scope="module")
def venv():
    v = LiteFullGameVectorEnv(num_envs=2, max_entities=64, max_selected=8)
    v.reset(seed=0)
    yield v


@pytest.mark.parametrize("action", [{"action_typ": 5}, {"action_type": 0, "extra": 1}])
def test_single_env_refuses_an_unknown_action_key_naming_it_and_the_accepted_keys(env, action):
    unknown = next(k for k in action if k != "action_type")
    with pytest.raises(ValueError, match=rf"unknown keys \['{unknown}'\]; expected keys from \[{HEADS}\]"):
        env.step(action)


def test_vector_env_refuses_an_unknown_action_key(venv):
    with pytest.raises(ValueError, match=r"unknown keys \['action_typ'\]"):
        venv.step({"action_typ": np.zeros(2, np.int64)})


@pytest.mark.parametrize("action", [None, [], 5])
def test_a_non_dict_action_is_a_value_error_naming_the_heads(env, venv, action):
    with pytest.raises(
        ValueError, match=re.escape(f"action={action!r}") + rf"; expected a dict of heads with keys from \[{HEADS}\]"
    ):
        env.step(action)
    with pytest.raises(ValueError, match="expected a dict of heads"):
        venv.step(action)


@pytest.mark.parametrize("value", [2**64 - 1, np.uint64(2**64 - 1)])
def test_unsigned_ints_above_int64_are_refused_not_wrapped_to_minus_one(env, value):
    with pytest.raises(ValueError, match=rf"selected_units={2**64 - 1}; expected an int in \[-1, 64\]"):
        env.step({"action_type": 3, "selected_units": [value]})
    with pytest.raises(ValueError, match=rf"action_type={2**64 - 1}; expected an int in \[0, "):
        env.step({"action_type": value})


@pytest.mark.parametrize("values", [[2**70], [2**70, 5]])
def test_python_ints_outside_every_numpy_int_dtype_get_the_range_error(env, values):
    with pytest.raises(ValueError, match=rf"^selected_units={values[0]}; expected an int in \[-1, 64\]$"):
        env.step({"action_type": 3, "selected_units": values})


def test_single_env_shape_errors_give_the_single_env_shapes(env):
    with pytest.raises(ValueError, match=r"action_type has shape \(1,\); expected \(\)$"):
        env.step({"action_type": [1]})
    with pytest.raises(ValueError, match=r"target_location has shape \(3,\); expected \(2,\)$"):
        env.step({"target_location": [1, 2, 3]})


@pytest.mark.parametrize(
    ("action", "shown"),
    [
        ({"action_type": 1.0}, "action_type=1.0; expected integer values (dtype float64 given)"),
        ({"action_type": "1"}, "action_type='1'; expected integer values (dtype <U1 given)"),
        ({"action_type": None}, "action_type=None; expected integer values (dtype object given)"),
        ({"target_location": [1.5, 0]}, "target_location=[1.5, 0.0]; expected integer values (dtype float64 given)"),
    ],
)
def test_single_env_type_errors_give_the_value_as_given_not_the_batched_array(env, action, shown):
    """found by a tester: the message showed the env's batch of one, ``action_type=array([1.])``."""
    with pytest.raises(ValueError, match="^" + re.escape(shown) + "$"):
        env.step(action)


def test_an_empty_selected_units_list_selects_nothing_instead_of_a_float_dtype_error(env):
    """``np.asarray([])`` is float64: ``selected_units=[]`` was refused as "dtype float64 given"."""
    train_probe = next(f.id for f in spec.raw_functions() if f.name == "Train_Probe_quick")
    info = env.step({"action_type": train_probe, "selected_units": []})[4]
    assert info["invalid_action"] == spec.InvalidAction.NO_SELECTED_UNITS


def test_single_env_range_errors_give_the_index_without_the_batch_axis(env):
    with pytest.raises(ValueError, match=r"^action_type=100000; expected an int in"):
        env.step({"action_type": 100000})
    with pytest.raises(ValueError, match=r"^target_location=99 at index \(1,\); expected an int in \[0, 63\]$"):
        env.step({"target_location": [0, 99]})


def test_vector_env_range_errors_give_the_batch_index(venv):
    with pytest.raises(ValueError, match=r"^target_location=99 at index \(1, 0\); expected"):
        venv.step({"target_location": np.array([[0, 0], [99, 0]])})


@pytest.mark.parametrize("capacity", [1.5, "x", True, 0, MAX_SIZES["capacity"] + 1])
def test_capacity_must_be_an_int_in_range(capacity):
    with pytest.raises((TypeError, ValueError), match=re.escape(f"capacity={capacity!r}; expected an int")):
        LiteFullGameEnv(capacity=capacity)
    with pytest.raises((TypeError, ValueError), match=re.escape(f"capacity={capacity!r}; expected an int")):
        LiteFullGameVectorEnv(num_envs=1, capacity=capacity)


@pytest.mark.parametrize("name", ["max_entities", "max_selected", "raw_resolution", "minimap_resolution"])
def test_sizes_above_their_documented_maximum_are_refused_by_name(name):
    too_big = 2**40
    with pytest.raises(ValueError, match=rf"{name}={too_big}; expected an int >= 1 and <= {MAX_SIZES[name]}"):
        LiteFullGameEnv(**{name: too_big})


@pytest.mark.parametrize("name, value", [("step_mul", 2**40), ("step_mul", 10**20), ("game_steps_per_episode", 10**20)])
def test_loop_counts_that_would_run_for_hours_or_overflow_are_refused_by_name(name, value):
    """step_mul=2**40 ran the engine for 2**40 loops in one step; 10**20 was an OverflowError mid-step."""
    from sc2_envs.lite.env import MAX_LOOPS

    with pytest.raises(ValueError, match=rf"{name}={value}; expected an int >= \d and <= {MAX_LOOPS[name]}"):
        LiteFullGameEnv(**{name: value})
    with pytest.raises(ValueError, match=rf"{name}={value}; expected an int >= \d and <= {MAX_LOOPS[name]}"):
        LiteFullGameVectorEnv(num_envs=1, **{name: value})


def test_num_envs_above_its_documented_maximum_is_refused_by_name():
    with pytest.raises(ValueError, match=rf"num_envs={2**40}; expected an int >= 1 and <= {MAX_NUM_ENVS}"):
        LiteFullGameVectorEnv(num_envs=2**40)


@pytest.mark.parametrize("omniscient", ["no", 0, None])
def test_omniscient_must_be_a_bool(omniscient):
    with pytest.raises(TypeError, match=re.escape(f"omniscient={omniscient!r}; expected a bool")):
        LiteFullGameEnv(omniscient=omniscient)
    with pytest.raises(TypeError, match=re.escape(f"omniscient={omniscient!r}; expected a bool")):
        LiteFullGameVectorEnv(num_envs=1, omniscient=omniscient)


def test_an_unknown_bot_build_is_refused_naming_the_builds():
    with pytest.raises(ValueError, match=r"bot_build='garbage'; expected one of \['random', 'rush'"):
        LiteFullGameEnv(bot_build="garbage")
    LiteFullGameEnv(bot_build="rush")  # a FullGame-v0 build is accepted


def test_a_numpy_int_seed_is_accepted_as_its_python_int(env):
    env.reset(seed=np.int8(5))
    state_np = env.np_random.bit_generator.state
    env.reset(seed=5)
    assert env.np_random.bit_generator.state == state_np


@pytest.mark.parametrize("seed", [-1, 1.5, "abc", True, 2**70, [1, 2]])
def test_vector_env_seed_is_checked_like_the_single_env(venv, seed):
    with pytest.raises(ValueError, match=r"seed=.*; expected an int in \[0, 9223372036854775807\]"):
        venv.reset(seed=seed)


def test_vector_env_step_before_reset_raises():
    v = LiteFullGameVectorEnv(num_envs=2, max_entities=64, max_selected=8)
    with pytest.raises(RuntimeError, match=r"call reset\(\) first"):
        v.step({"action_type": np.zeros(2, np.int64)})


@pytest.mark.parametrize("cls", [LiteFullGameEnv, LiteFullGameVectorEnv])
@pytest.mark.parametrize("profile", ["9.9", None, 4.10])
def test_an_unknown_data_profile_is_refused_at_construction_by_name(cls, profile):
    """found by a tester: the single env accepted data_profile='9.9' and failed at the first reset, without the flag."""
    with pytest.raises(ValueError, match=re.escape(f"data_profile={profile!r}; expected one of ['3.16.1', '4.10']")):
        cls(data_profile=profile) if cls is LiteFullGameEnv else cls(num_envs=1, data_profile=profile)


def test_realtime_is_refused_not_ignored_by_the_step_mode_engine():
    """found by a tester: realtime=True was accepted and the game ran in step mode (the API server refuses it too)."""
    with pytest.raises(ValueError, match=r"realtime=True is not served by the lite engine \(it runs in step mode"):
        LiteFullGameEnv(realtime=True)
    LiteFullGameEnv(realtime=False)


def test_a_game_version_is_refused_naming_the_lite_engines_data_profile():
    """found by a tester: version='4.10' was ignored and the game played the 3.16.1 data."""
    with pytest.raises(ValueError, match=r"version='4.10' picks a StarCraft II binary \(backend='sc2'\).*data_profile"):
        LiteFullGameEnv(version="4.10")


@pytest.mark.parametrize("name", ["query_available_actions", "realtime"])
@pytest.mark.parametrize("value", ["no", 0, None])
def test_the_compatibility_flags_must_be_bools(name, value):
    """found by a tester: query_available_actions='no' was accepted (read as true)."""
    with pytest.raises(TypeError, match=re.escape(f"{name}={value!r}; expected a bool")):
        LiteFullGameEnv(**{name: value})


@pytest.mark.parametrize("options", [{"foo": 1}, 5, {"reset_mask": np.array([True, False])}])
def test_reset_options_are_refused_not_ignored(env, venv, options):
    """found by a tester: reset(options=...) was ignored; Gymnasium's vector ``reset_mask`` reset every game."""
    with pytest.raises(ValueError, match=re.escape(f"options={options!r}; expected None or {{}}")):
        env.reset(seed=0, options=options)
    with pytest.raises(ValueError, match=re.escape(f"options={options!r}; expected None or {{}}")):
        venv.reset(seed=0, options=options)
    env.reset(seed=0, options={})
    venv.reset(seed=0, options={})


@pytest.fixture(scope="module")
def engine():
    from sc2_envs.lite import LiteEngine

    return LiteEngine(2)


@pytest.mark.parametrize(
    ("loops", "message"),
    [
        (-5, "loops=-5; expected game loops >= 0"),  # ran nothing, silently
        (1.5, "loops=1.5; expected integer game loops"),  # ran 1
        (np.array([1, 2, 3]), "loops has shape (3,); expected () or (2,)"),
    ],
)
def test_engine_advance_names_bad_loop_counts(engine, loops, message):
    """found by a tester: LiteEngine.advance(-5) ran nothing and advance(1.5) ran 1 loop, silently."""
    before = engine.game_loop.copy()
    with pytest.raises(ValueError, match="^" + re.escape(message)):
        engine.advance(loops)
    np.testing.assert_array_equal(engine.game_loop, before)


@pytest.mark.parametrize("games", [np.array([2]), np.array([-1]), np.array([0.5]), np.array([True, False, True])])
def test_engine_reset_names_games_outside_the_batch(engine, games):
    """found by a tester: reset([-1]) reset the last game (a negative index), reset([2]) was an IndexError."""
    with pytest.raises(ValueError, match=r"^games="):
        engine.reset(games)


def test_engine_capacity_must_be_an_int():
    from sc2_envs.lite import LiteEngine

    with pytest.raises(ValueError, match=re.escape("capacity=400.5; expected an int")):
        LiteEngine(1, capacity=400.5)  # was truncated to 400 slots


@pytest.mark.parametrize("noop_prob", [2.0, -0.1, float("nan")])
def test_random_legal_policy_noop_prob_must_be_a_probability(engine, noop_prob):
    from sc2_envs.lite import RandomLegalPolicy

    with pytest.raises(ValueError, match=re.escape(f"noop_prob={noop_prob!r}; expected a probability in [0, 1]")):
        RandomLegalPolicy(engine.catalog, noop_prob=noop_prob)


@pytest.mark.parametrize("name", ["bot_difficulty", "bot_build"])
def test_a_list_for_a_name_option_is_named_not_an_unhashable_type_error(name):
    with pytest.raises(ValueError, match=re.escape(f"{name}=['x']; expected one of [")):
        LiteFullGameEnv(**{name: ["x"]})
