"""PettingZoo contract of ``sc2_envs.wrappers.pettingzoo`` on the embedded simulator.

Official checkers (pettingzoo 1.27: ``parallel_api_test``, ``parallel_seed_test``, ``api_test``,
``seed_test``, ``state_test``, ``render_test``) plus what they do not cover: a long determinism run
(``parallel_seed_test`` stops after one step, PettingZoo PR #1437), the dead-agent contract in both
modes, space membership over long random runs, and episode ends (termination vs truncation).
"""

from __future__ import annotations

import pickle
import warnings

import matplotlib
import numpy as np
import pytest
import torch
from gymnasium.utils.env_checker import data_equivalence
from pettingzoo.test import api_test, parallel_api_test, parallel_seed_test, render_test, seed_test, state_test

from sc2_envs.maps import list_maps
from sc2_envs.sim.env import UnitPlacement as P
from sc2_envs.wrappers import pettingzoo as pz

matplotlib.use("Agg")  # render_test also opens render_mode="human"; draw off-screen

MAPS = ["3m", "2s3z", "MMM"]

# Warnings api_test raises for PettingZoo's own Dict-observation convention (its classic envs are
# exempted by name) and for SMAC's all-zero observation of dead agents; anything else fails the test.
EXPECTED_AEC_WARNINGS = {
    "Observation is not a NumPy array",
    "Observation space for each agent probably should be gymnasium.spaces.box or gymnasium.spaces.discrete",
    "Observation numpy array is all zeros.",
}


def masked_random_actions(env, obs, rng):
    return {ag: int(rng.choice(np.flatnonzero(obs[ag]["action_mask"]))) for ag in env.agents}


@pytest.mark.parametrize("map_name", MAPS)
@pytest.mark.parametrize("dead_agents", ["remove", "absorbing"])
def test_parallel_api_test_passes_without_warnings(map_name, dead_agents):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        parallel_api_test(pz.parallel_env(map_name, dead_agents=dead_agents), num_cycles=1000)


@pytest.mark.parametrize("map_name", MAPS)
def test_parallel_seed_test_passes(map_name):
    # parallel_seed_test samples without the mask, hence lenient actions.
    parallel_seed_test(lambda: pz.parallel_env(map_name, lenient_actions=True))


@pytest.mark.parametrize("map_name", MAPS)
def test_aec_api_test_passes_with_only_the_dict_obs_warnings(map_name):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        api_test(pz.env(map_name), num_cycles=500)
    unexpected = {str(w.message) for w in caught} - EXPECTED_AEC_WARNINGS
    assert not unexpected


@pytest.mark.parametrize("map_name", MAPS)
def test_aec_seed_test_passes(map_name):
    seed_test(lambda: pz.env(map_name), num_cycles=300)


@pytest.mark.parametrize("map_name", MAPS)
def test_state_test_passes(map_name):
    # state_test samples without the mask, hence lenient actions.
    state_test(pz.env(map_name, lenient_actions=True), pz.parallel_env(map_name, lenient_actions=True))


@pytest.mark.parametrize("map_name", MAPS)
def test_render_test_passes(map_name):
    render_test(lambda render_mode: pz.raw_env(map_name, render_mode=render_mode))


def rollout(env, seed, n_steps, action_seed):
    """(obs, rewards, terms, truncs, infos, state) of every step of n_steps masked random steps."""
    rng = np.random.default_rng(action_seed)
    obs, infos = env.reset(seed=seed)
    trace = [(obs, infos, env.state())]
    for _ in range(n_steps):
        if not env.agents:
            obs, infos = env.reset()
            trace.append((obs, infos, env.state()))
            continue
        out = env.step(masked_random_actions(env, obs, rng))
        obs = out[0]
        trace.append((*out, env.state()))
    return trace


@pytest.mark.parametrize("map_name", ["3m", pytest.param("2s3z", marks=pytest.mark.slow)])
def test_same_seed_same_rollout_over_220_steps(map_name):
    a = rollout(pz.parallel_env(map_name), seed=7, n_steps=220, action_seed=1)
    b = rollout(pz.parallel_env(map_name), seed=7, n_steps=220, action_seed=1)
    n_resets = sum(len(step) == 3 for step in a)
    assert n_resets >= 2, "the run should span several episodes"
    for k, (x, y) in enumerate(zip(a, b, strict=False)):
        assert data_equivalence(x, y), f"rollouts differ at step {k}"


def test_reset_with_the_same_seed_replays_the_first_episode():
    env = pz.parallel_env("3m")
    first = rollout(env, seed=3, n_steps=40, action_seed=5)
    rollout(env, seed=None, n_steps=30, action_seed=9)
    again = rollout(env, seed=3, n_steps=40, action_seed=5)
    assert data_equivalence(first, again)


def test_different_seeds_give_different_episodes():
    a = rollout(pz.parallel_env("3m"), seed=1, n_steps=30, action_seed=0)
    b = rollout(pz.parallel_env("3m"), seed=2, n_steps=30, action_seed=0)
    assert not data_equivalence(a, b)


@pytest.mark.parametrize("seed", [torch.tensor(3), np.array(3), np.int64(3)])
def test_zero_d_integer_seed_seeds_the_action_spaces_like_its_int(seed):
    env = pz.parallel_env("3m")
    env.reset(seed=3)
    expected = [env.action_space(ag).sample() for ag in env.agents]
    env.reset(seed=seed)
    assert [env.action_space(ag).sample() for ag in env.agents] == expected


SPACE_RUNS = [
    pytest.param("3m", "remove", 300),
    pytest.param("2s3z", "absorbing", 300),
    pytest.param("MMM", "remove", 300),
    *[
        pytest.param(m, mode, 400, marks=pytest.mark.slow)
        for m in ["3s_vs_3z", "2c_vs_64zg", "bane_vs_bane", "corridor", "6h_vs_8z"]
        for mode in ["remove", "absorbing"]
    ],
]


@pytest.mark.parametrize(("map_name", "dead_agents", "n_steps"), SPACE_RUNS)
def test_spaces_contain_every_obs_state_and_mask_over_long_runs(map_name, dead_agents, n_steps):
    env = pz.parallel_env(map_name, dead_agents=dead_agents)
    rng = np.random.default_rng(0)
    obs, infos = env.reset(seed=0)
    for _ in range(n_steps):
        state = env.state()
        assert state.dtype == np.float32 and env.state_space.contains(state)
        for ag, o in obs.items():
            space = env.observation_space(ag)
            assert o["observation"].dtype == np.float32 and o["action_mask"].dtype == np.int8
            assert space.contains(o), f"{ag}: observation outside {space}"
            assert "action_mask" not in infos[ag]  # in the observation only (TorchRL's wrapper needs one copy)
        if not env.agents:
            obs, infos = env.reset()
            continue
        obs, rewards, terms, truncs, infos = env.step(masked_random_actions(env, obs, rng))
        assert all(type(r) is float for r in rewards.values())
        assert all(type(t) is bool for t in list(terms.values()) + list(truncs.values()))


def test_state_bound_covers_smac_cooldown_ratio_above_one():
    # SMAC divides a hydralisk's cooldown (Liberty 0.83 s = 13.28 game loops, + up to 2 of SC2's jitter) by 10.
    env = pz.parallel_env("6h_vs_8z")
    assert env.state_space.high[0] == pytest.approx((13.28125 + 2) / 10 + 1e-3, abs=1e-6)
    # marine: (13.7734 + 2) / 15 (observed 1.052 on 3m in random play)
    assert pz.parallel_env("3m").state_space.high[0] == pytest.approx((13.7734375 + 2) / 15 + 1e-3, abs=1e-6)


def test_agent_names_index_and_unit_type():
    assert pz.parallel_env("2s3z").possible_agents == [f"agent_{i}" for i in range(5)]
    env = pz.parallel_env("2s3z", agent_names="unit_type")
    assert env.possible_agents == ["stalker_0", "stalker_1", "zealot_0", "zealot_1", "zealot_2"]
    assert env.agent_unit_types["zealot_2"] == "zealot"


def test_reset_returns_every_agent_with_the_mask_in_obs():
    env = pz.parallel_env("2s3z")
    obs, infos = env.reset(seed=0, options={"unused": 1})
    assert env.agents == env.possible_agents
    assert set(obs) == set(infos) == set(env.agents)
    for ag in env.agents:
        assert obs[ag]["action_mask"][0] == 0 and obs[ag]["action_mask"][1] == 1  # living: stop, never no-op
        assert infos[ag]["battle_won"] is False and infos[ag]["episode_limit"] is False


def test_info_action_mask_is_off_by_default_and_can_be_turned_on():
    env = pz.parallel_env("3m")
    obs, infos = env.reset(seed=0)
    assert "action_mask" not in infos["agent_0"] and obs["agent_0"]["action_mask"].shape == (9,)
    *_, infos = env.step({ag: 1 for ag in env.agents})
    assert "action_mask" not in infos["agent_0"]
    env = pz.parallel_env("3m", info_action_mask=True)
    obs, infos = env.reset(seed=0)
    assert np.array_equal(infos["agent_0"]["action_mask"], obs["agent_0"]["action_mask"])
    obs, *_, infos = env.step({ag: 1 for ag in env.agents})
    assert infos["agent_0"]["action_mask"].dtype == np.int8
    assert np.array_equal(infos["agent_0"]["action_mask"], obs["agent_0"]["action_mask"])


def _doomed_agent_0(env):
    """3m: agent 0 at 1 HP in front of the enemy, the others far away; agent 0 dies on the first step."""
    env.reset(seed=0)
    env.sim.set_units(0, allies=[P(19, 16, health=1), P(5, 10), P(5, 22)], enemies=[P(23, 16), P(23, 17), P(23, 15)])


def test_dead_agent_leaves_agents_the_step_it_dies_with_final_data():
    env = pz.parallel_env("3m")
    _doomed_agent_0(env)
    obs, rewards, terms, truncs, infos = env.step({ag: 1 for ag in env.agents})
    assert env.agents == ["agent_1", "agent_2"]
    assert set(obs) == set(rewards) == set(terms) == set(truncs) == set(infos) == {"agent_0", "agent_1", "agent_2"}
    assert terms == {"agent_0": True, "agent_1": False, "agent_2": False}
    assert truncs == {"agent_0": False, "agent_1": False, "agent_2": False}
    assert not obs["agent_0"]["observation"].any()  # SMAC: a dead unit observes zeros
    assert obs["agent_0"]["action_mask"].tolist() == [1] + [0] * 8
    assert rewards["agent_0"] == rewards["agent_1"]  # team reward
    assert infos["agent_0"]["agent_alive"] is False and infos["agent_0"]["dead_allies"] == 1
    for _ in range(5):
        out = env.step({ag: 1 for ag in env.agents})
        assert all("agent_0" not in d for d in out), "a finished agent must never come back"
    # TorchRL sends actions for every agent of a group: a finished agent's entry is ignored (no-op).
    out = env.step({"agent_0": 1, "agent_1": 1, "agent_2": 1})
    assert all("agent_0" not in d for d in out)


@pytest.mark.parametrize(
    "bad, words", [("garbage", "'garbage'"), (99, "99"), (1.5, "1.5"), (np.True_, r"np.True_ \(a bool\)")]
)
def test_removed_agents_entry_is_ignored_but_must_be_an_action(bad, words):
    env = pz.parallel_env("3m")
    _doomed_agent_0(env)
    env.step({ag: 1 for ag in env.agents})
    assert env.agents == ["agent_1", "agent_2"]
    with pytest.raises(ValueError, match=rf"action for 'agent_0' is {words}"):
        env.step({"agent_0": bad, "agent_1": 1, "agent_2": 1})
    assert env._steps == 1  # refused before the battle moved
    env.step({"agent_0": None, "agent_1": 1, "agent_2": 1})
    env.step({"agent_0": np.int64(5), "agent_1": 1, "agent_2": 1})  # any action value: the unit is gone


def test_aec_step_none_for_the_dead_agent_sends_no_command():
    aec = pz.env("3m")
    aec.reset(seed=0)
    par = aec.unwrapped  # the SC2ParallelEnv under parallel_to_aec
    par.sim.set_units(0, allies=[P(19, 16, health=1), P(5, 10), P(5, 22)], enemies=[P(23, 16), P(23, 17), P(23, 15)])
    sent = []
    step = par.sim.step
    par.sim.step = lambda actions: (sent.append(actions.clone()), step(actions))[1]
    for _ag in ["agent_0", "agent_1", "agent_2"]:  # one round: the battle steps once, agent 0 dies
        aec.step(1)
    assert aec.terminations["agent_0"] and aec.agent_selection == "agent_0"
    aec.step(None)  # the dead agent's final turn
    assert "agent_0" not in aec.agents
    for _ag in list(aec.agents):
        aec.step(1)
    assert len(sent) == 2
    assert int(sent[1][0, 0]) == 0  # SMAC's no-op, the only action of a dead unit: no command


def test_absorbing_dead_agent_stays_with_zero_obs_and_noop_mask_until_episode_end():
    env = pz.parallel_env("3m", dead_agents="absorbing")
    _doomed_agent_0(env)
    obs, rewards, terms, truncs, infos = env.step({ag: 1 for ag in env.agents})
    assert env.agents == env.possible_agents
    assert terms["agent_0"] is False and infos["agent_0"]["agent_alive"] is False
    assert not obs["agent_0"]["observation"].any()
    assert obs["agent_0"]["action_mask"].tolist() == [1] + [0] * 8
    with pytest.raises(ValueError, match="unavailable"):
        env.step({"agent_0": 1, "agent_1": 1, "agent_2": 1})
    obs, *_ = env.step({"agent_0": None, "agent_1": 1, "agent_2": 1})
    obs, *_ = env.step({"agent_0": 0, "agent_1": 1, "agent_2": 1})
    obs, *_ = env.step({"agent_1": 1, "agent_2": 1})
    assert env.agents == env.possible_agents and not obs["agent_0"]["observation"].any()
    while env.agents:
        obs, _rewards, terms, truncs, infos = env.step({ag: 1 if infos[ag]["agent_alive"] else 0 for ag in env.agents})
    assert set(terms) == set(env.possible_agents)
    assert all(terms[ag] or truncs[ag] for ag in env.possible_agents)


def _out_of_sight(env):
    """3m with the teams 20 units apart: nobody fights, so the episode runs into the time limit."""
    env.reset(seed=0)
    env.sim.set_units(0, allies=[P(29, 8), P(30, 9.5), P(31, 8)], enemies=[P(8, 16), P(9, 17), P(9, 15)])


@pytest.mark.parametrize("dead_agents", ["remove", "absorbing"])
def test_time_limit_truncates_every_agent_and_empties_agents(dead_agents):
    env = pz.parallel_env("3m", dead_agents=dead_agents)
    _out_of_sight(env)
    for t in range(1, 61):
        _obs, _rewards, terms, truncs, infos = env.step({ag: 1 for ag in env.agents})
        if t < 60:
            assert not any(truncs.values()) and not any(terms.values()) and len(env.agents) == 3
    assert env.sim.episode_limit == 60
    assert truncs == {ag: True for ag in env.possible_agents}
    assert terms == {ag: False for ag in env.possible_agents}
    assert all(i["episode_limit"] and not i["battle_won"] for i in infos.values())
    assert env.agents == []
    with pytest.raises(RuntimeError, match="reset"):
        env.step({})


def test_won_battle_terminates_every_agent_with_battle_won():
    env = pz.parallel_env("3m")
    env.reset(seed=0)
    # One enemy left, at 1 HP, in range of all three marines; the other two removed.
    env.sim.set_units(0, allies=[P(16, 16), P(16, 17), P(16, 15)], enemies=[P(19, 16, health=1), None, None])
    _obs, rewards, terms, truncs, infos = env.step({ag: 6 for ag in env.agents})
    assert terms == {ag: True for ag in env.possible_agents}
    assert truncs == {ag: False for ag in env.possible_agents}
    assert infos["agent_0"]["battle_won"] is True and infos["agent_0"]["dead_enemies"] == 3
    assert rewards["agent_0"] > 0 and env.agents == []


def test_bad_actions_are_rejected_with_the_agent_named():
    env = pz.parallel_env("3m")
    env.reset(seed=0)
    with pytest.raises(ValueError, match="unavailable"):  # no-op is for dead units only (SMAC)
        env.step({"agent_0": 0, "agent_1": 1, "agent_2": 1})
    with pytest.raises(ValueError, match="agent_2"):
        env.step({"agent_0": 1, "agent_1": 1})
    with pytest.raises(ValueError, match="agent_1"):
        env.step({"agent_0": 1, "agent_1": 99, "agent_2": 1})
    with pytest.raises(ValueError, match="agent_0"):
        env.step({"agent_0": 1.5, "agent_1": 1, "agent_2": 1})
    with pytest.raises(ValueError, match="marine_0"):
        env.step({"marine_0": 1, "agent_0": 1, "agent_1": 1, "agent_2": 1})


@pytest.mark.parametrize(
    "bad, words",
    [
        (torch.tensor(True), "a bool"),
        (np.True_, "a bool"),
        (torch.tensor([1]), r"shape \[1\]"),
        (torch.tensor([[1]]), r"shape \[1, 1\]"),
        (np.array([1]), r"shape \[1\]"),
    ],
)
def test_bool_and_non_scalar_tensor_actions_are_refused(bad, words):
    env = pz.parallel_env("3m")
    env.reset(seed=0)
    with pytest.raises(ValueError, match=rf"action for 'agent_1' is .*{words}"):
        env.step({"agent_0": 1, "agent_1": bad, "agent_2": 1})
    env.step({"agent_0": 1, "agent_1": torch.tensor(1), "agent_2": np.int64(1)})  # 0-d ints are ints


@pytest.mark.parametrize("bad", [99, -1, 1.5, "a", np.array([1]), None, torch.tensor(True)])
def test_aec_env_names_a_bad_action_when_it_is_given(bad):
    aec = pz.env("3m")
    aec.reset(seed=0)
    with pytest.raises(ValueError, match="'agent_0'"):
        aec.step(bad)
    assert aec.agent_selection == "agent_0"  # nothing was recorded
    aec.step(np.int32(1))  # accepted values go on as ints (AssertOutOfBoundsWrapper still holds)
    aec.step(torch.tensor(1))
    assert aec.agent_selection == "agent_2"


def test_aec_env_refuses_an_unavailable_action_when_it_is_given():
    aec = pz.env("3m")
    aec.reset(seed=0)
    with pytest.raises(ValueError, match=r"'agent_0' is 0, which is unavailable; available actions: \[1, 2, 3, 4, 5\]"):
        aec.step(0)  # no-op is for dead units only (SMAC)
    assert aec.agent_selection == "agent_0"  # nothing was recorded: the round goes on
    for _ag in ["agent_0", "agent_1", "agent_2"]:
        aec.step(1)
    assert aec.agent_selection == "agent_0" and aec.unwrapped._steps == 1
    lenient = pz.env("3m", lenient_actions=True)
    lenient.reset(seed=0)
    for _ag in ["agent_0", "agent_1", "agent_2"]:
        lenient.step(0)
    assert lenient.infos["agent_0"]["invalid_action"] is True


def test_aec_env_done_agent_takes_none_and_absorbing_dead_agent_may_pass_none():
    aec = pz.env("3m", dead_agents="absorbing")
    aec.reset(seed=0)
    par = aec.unwrapped
    par.sim.set_units(0, allies=[P(19, 16, health=1), P(5, 10), P(5, 22)], enemies=[P(23, 16), P(23, 17), P(23, 15)])
    for _ag in ["agent_0", "agent_1", "agent_2"]:
        aec.step(1)
    assert not par._unit_alive[0] and aec.agent_selection == "agent_0"
    aec.step(None)  # dead unit in absorbing mode: None is its no-op
    aec.step(1)
    aec.step(1)
    removing = pz.env("3m")
    removing.reset(seed=0)
    removing.unwrapped.sim.set_units(
        0, allies=[P(19, 16, health=1), P(5, 10), P(5, 22)], enemies=[P(23, 16), P(23, 17), P(23, 15)]
    )
    for _ag in ["agent_0", "agent_1", "agent_2"]:
        removing.step(1)
    assert removing.terminations["agent_0"]
    with pytest.raises(ValueError, match="'agent_0' is 1, but the agent is done"):
        removing.step(1)


def test_lenient_actions_replace_unavailable_and_flag_them():
    env = pz.parallel_env("3m", lenient_actions=True)
    env.reset(seed=0)
    _, _, _, _, infos = env.step({"agent_0": 0, "agent_1": 1, "agent_2": 1})
    assert infos["agent_0"]["invalid_action"] is True and infos["agent_1"]["invalid_action"] is False


def test_bad_constructor_arguments_name_the_value():
    with pytest.raises(ValueError, match="dead_agents='zombie'"):
        pz.parallel_env("3m", dead_agents="zombie")
    with pytest.raises(ValueError, match="agent_names"):
        pz.parallel_env("3m", agent_names="nick")
    with pytest.raises(ValueError, match="render_mode"):
        pz.parallel_env("3m", render_mode="ansi")
    with pytest.raises(ValueError, match="backend"):
        pz.parallel_env("3m", backend="jax")
    with pytest.raises(ValueError, match="4m"):
        pz.parallel_env("4m")


def test_smac_options_pass_through_with_smac_names():
    plain = pz.parallel_env("3m")
    with_last_action = pz.parallel_env("3m", obs_last_action=True)
    extra = with_last_action.sim.obs_size - plain.sim.obs_size
    assert extra == 2 * 9  # SMAC get_obs_ally_feats_size: + n_actions per other ally (2 allies, 9 actions)
    assert with_last_action.observation_space("agent_0")["observation"].shape == (with_last_action.sim.obs_size,)


def test_sc2_backend_is_built_through_smac_sc2(monkeypatch):
    from sc2_envs.backends import smac_sc2
    from sc2_envs.sim.env import make_batched

    calls = []

    def fake_make_sc2_backend(map_name, seed=None, **options):
        calls.append((map_name, seed, options))
        return make_batched(
            map_name, num_envs=1, seed=seed, autoreset=options["autoreset"], lenient_actions=options["lenient_actions"]
        )

    monkeypatch.setattr(smac_sc2, "make_sc2_backend", fake_make_sc2_backend)
    env = pz.parallel_env("3m", backend="sc2", seed=4, lenient_actions=True, difficulty="7")
    env.reset()
    assert calls == [("3m", 4, {"device": "cpu", "autoreset": False, "lenient_actions": True, "difficulty": "7"})]


ALL_OBS_OPTIONS = dict(
    obs_last_action=True,
    obs_pathing_grid=True,
    obs_terrain_height=True,
    obs_timestep_number=True,
    state_last_action=True,
    state_timestep_number=True,
)


@pytest.mark.parametrize("map_name", ["3m", "MMM"])
def test_spaces_hold_with_every_smac_obs_option_on(map_name):
    env = pz.parallel_env(map_name, **ALL_OBS_OPTIONS)
    rng = np.random.default_rng(1)
    obs, _ = env.reset(seed=1)
    for _ in range(120):
        assert env.state_space.contains(env.state())
        assert all(env.observation_space(ag).contains(o) for ag, o in obs.items())
        if not env.agents:
            obs, _ = env.reset()
            continue
        obs, *_ = env.step(masked_random_actions(env, obs, rng))


@pytest.mark.slow
@pytest.mark.parametrize("map_name", list_maps())
def test_parallel_api_test_passes_on_every_map(map_name):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        parallel_api_test(pz.parallel_env(map_name), num_cycles=400)
        parallel_api_test(pz.parallel_env(map_name, dead_agents="absorbing"), num_cycles=400)


def test_death_on_the_time_limit_step_sets_both_flags_and_ends_the_episode():
    # Agent 0 dies on the very step the time limit hits. The sim cannot be steered onto
    # that exact step cheaply, so its output for the death step is marked as the time-limit step.
    env = pz.parallel_env("3m")
    _doomed_agent_0(env)
    step = env.sim.step

    def last_step(actions):
        out = step(actions)
        out["truncated"][:] = True
        out["episode_limit"][:] = True
        return out

    env.sim.step = last_step
    _obs, _rewards, terms, truncs, _infos = env.step({ag: 1 for ag in env.agents})
    assert truncs == {"agent_0": True, "agent_1": True, "agent_2": True}
    assert terms == {"agent_0": True, "agent_1": False, "agent_2": False}
    assert env.agents == []


def test_double_wrapped_aec_round_trip_is_deterministic():
    from pettingzoo.utils import aec_to_parallel

    a = rollout(aec_to_parallel(pz.raw_env("3m")), seed=2, n_steps=80, action_seed=3)
    b = rollout(pz.parallel_env("3m"), seed=2, n_steps=80, action_seed=3)
    assert data_equivalence([x[:5] for x in a], [x[:5] for x in b])


def test_env_pickles_before_and_after_reset():
    # SuperSuit's concat_vec_envs_v1 cloudpickles the env before its first reset.
    env = pz.parallel_env("3m")
    clone = pickle.loads(pickle.dumps(env))
    env.reset(seed=0)
    clone.reset(seed=0)
    clone2 = pickle.loads(pickle.dumps(env))
    assert data_equivalence(env.step({ag: 1 for ag in env.agents}), clone2.step({ag: 1 for ag in clone2.agents}))


def test_unknown_smac_option_is_rejected_by_name():
    with pytest.raises(ValueError, match="obs_lastaction"):
        pz.parallel_env("3m", obs_lastaction=True)


def test_sc2_backend_test_double_passes_parallel_api_test():
    double = pytest.importorskip("test_smac_backend", reason="needs the StarCraft2Env double of tests/test_smac_backend.py")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        parallel_api_test(pz.parallel_env("3m", backend="sc2", env_factory=double.FakeStarCraft2Env), num_cycles=200)


@pytest.mark.slow
@pytest.mark.parametrize("dead_agents", ["remove", "absorbing"])
def test_torchrl_pettingzoo_wrapper_runs_whole_episodes(dead_agents):
    pytest.importorskip("torchrl")
    from torchrl.envs.libs.pettingzoo import PettingZooWrapper
    from torchrl.envs.utils import check_env_specs

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="PettingZoo in TorchRL is tested")
        env = PettingZooWrapper(
            pz.parallel_env("3m", dead_agents=dead_agents), use_mask=True, done_on_any=False, return_state=True, seed=0
        )
    check_env_specs(env)
    td = env.rollout(200, break_when_any_done=True)
    done = td["next", "done"].reshape(-1)
    assert done[-1] and not done[:-1].any(), "the episode ends once, when the battle ends (not at the first death)"
    alive = td["next", "agent", "info", "agent_alive"].reshape(len(td), 3)
    if dead_agents == "remove":  # TorchRL masks an agent out from the step after it died
        assert (td["agent", "mask"].reshape(len(td), 3)[1:] <= alive[:-1]).all()
    else:
        assert td["agent", "mask"].all()
