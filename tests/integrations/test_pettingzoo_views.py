"""``FlatObservation`` and ``RLlibMaskedObservation``: PettingZoo's API test, spaces, pickling, pass-through."""

import pickle

import numpy as np
import pytest
from pettingzoo.test import parallel_api_test

from sc2_envs.adapters.pettingzoo_views import FlatObservation, RLlibMaskedObservation
from sc2_envs.wrappers.pettingzoo import SC2ParallelEnv


@pytest.mark.parametrize("view", [FlatObservation, RLlibMaskedObservation])
def test_parallel_api(view):
    # parallel_api_test samples unmasked actions for Box observations: lenient mode turns the invalid ones into stop.
    parallel_api_test(view(SC2ParallelEnv("3m", seed=0, lenient_actions=True)), num_cycles=200)


def test_flat_observation_matches_inner_env(short_3m):
    inner = SC2ParallelEnv(short_3m, seed=0)
    env = FlatObservation(SC2ParallelEnv(short_3m, seed=0))
    assert env.observation_space("agent_0") is env.observation_space("agent_0")
    assert env.observation_spaces["agent_0"] is env.observation_space("agent_0")
    assert env.observation_space("agent_0") == inner.observation_space("agent_0")["observation"]
    (o_in, _), (o, i) = inner.reset(seed=1), env.reset(seed=1)
    assert all(np.array_equal(o[a], o_in[a]["observation"]) for a in env.agents)
    assert all(np.array_equal(i[a]["action_mask"], o_in[a]["action_mask"]) for a in env.agents)
    for _ in range(6):
        actions = {a: 1 for a in env.agents}
        out_in, out = inner.step(actions), env.step(actions)
        assert out[1:4] == out_in[1:4]  # rewards, terminations, truncations unchanged
    assert all(out[3].values()) and env.agents == []  # the time limit reaches the consumer as truncation
    assert np.array_equal(env.state(), inner.state())


def test_rllib_keys_and_pickling():
    env = RLlibMaskedObservation(SC2ParallelEnv("3m", seed=0))
    copy = pickle.loads(pickle.dumps(env))  # SuperSuit and Ray copy envs by pickling
    obs, _ = copy.reset(seed=0)
    assert set(obs["agent_1"]) == {"observations", "action_mask"}
    assert env.observation_space("agent_1").contains(obs["agent_1"])


def test_rejects_other_observation_spaces():
    with pytest.raises(ValueError, match="observation"):
        FlatObservation(FlatObservation(SC2ParallelEnv("3m")))
