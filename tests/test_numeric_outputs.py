"""Every API hands out numbers only: observations, states, rewards and infos of every map kind.

RL libraries turn what an env returns into tensors or stacked arrays: TorchRL's ``PettingZooWrapper``
builds a spec from every info value (a string raised ``TypeError: new(): invalid data type 'str'``),
Gymnasium's vector envs stack infos (strings become object arrays), RLlib and SuperSuit batch them.
TorchRL's wrappers also build their info specs from the reset's keys, and its ``GymWrapper`` reads each
value's ``.dtype``. So each value must be a bool, an int, a float or a fixed-shape numeric array / tensor
(on the Gymnasium API one with a ``dtype``), under the same keys at reset and every step, on SMAC v1 maps
and on SMACv2 scenarios (whose rosters change per episode: ``zerg_10_vs_11`` also has teams of two
sizes). SMAC's own ``StarCraft2Env`` API (``adapters.smac_compat``) keeps SMAC's lists of per-agent
arrays (``get_obs``); its step infos are checked here.
"""

from __future__ import annotations

import gymnasium
import numpy as np
import pytest
import torch

import sc2_envs

MAPS = ["2s3z", "protoss_5_vs_5", "zerg_10_vs_11"]


def non_numeric(x, path: str = "") -> list[str]:
    """Paths (with a description) of every value inside ``x`` that is not a number or a numeric array;
    dicts are walked (their keys name the path), anything else is a leaf."""
    if isinstance(x, dict):
        return [p for k, v in x.items() for p in non_numeric(v, f"{path}[{k!r}]")]
    if isinstance(x, (bool, int, float, np.bool_, np.integer, np.floating)):
        return []
    if isinstance(x, np.ndarray) and (np.issubdtype(x.dtype, np.number) or x.dtype == np.bool_):
        return []
    if isinstance(x, torch.Tensor):
        return []
    return [f"{path}: {type(x).__name__} {x!r}"[:200]]


def masked_choice(rng, mask) -> int:
    return int(rng.choice(np.flatnonzero(mask)))


@pytest.mark.parametrize("map_name", MAPS)
@pytest.mark.parametrize("dead_agents", ["remove", "absorbing"])
def test_pettingzoo_parallel_env_returns_numbers_only(map_name, dead_agents):
    env = sc2_envs.parallel_env(map_name, dead_agents=dead_agents, lenient_actions=True, info_action_mask=True)
    rng = np.random.default_rng(0)
    obs, infos = env.reset(seed=0)
    bad = non_numeric({"obs": obs, "infos": infos, "state": env.state()})
    while env.agents:  # a whole episode: deaths, the last step's infos
        obs, rew, term, trunc, infos = env.step({a: masked_choice(rng, obs[a]["action_mask"]) for a in env.agents})
        bad += non_numeric({"obs": obs, "rew": rew, "term": term, "trunc": trunc, "infos": infos, "state": env.state()})
    assert not bad, sorted(set(bad))


@pytest.mark.parametrize("map_name", MAPS)
@pytest.mark.parametrize("lenient_actions", [False, True])
def test_pettingzoo_infos_keep_the_reset_keys_at_every_step(map_name, lenient_actions):
    """TorchRL's ``PettingZooWrapper`` builds its info spec from the reset's infos; a key first seen at a
    step (``invalid_action`` once was) fails it."""
    env = sc2_envs.parallel_env(map_name, lenient_actions=lenient_actions)
    rng = np.random.default_rng(0)
    obs, infos = env.reset(seed=0)
    keys = {agent: set(info) for agent, info in infos.items()}
    assert set(keys) == set(env.possible_agents)
    changed = []
    while env.agents:
        obs, _, _, _, infos = env.step({a: masked_choice(rng, obs[a]["action_mask"]) for a in env.agents})
        changed += [(agent, sorted(info)) for agent, info in infos.items() if set(info) != keys[agent]]
    assert not changed, changed[:3]
    assert ("invalid_action" in keys["agent_0"]) == lenient_actions


@pytest.mark.parametrize("map_name", MAPS)
@pytest.mark.parametrize("api", ["parallel", "aec"])
@pytest.mark.filterwarnings("ignore:PettingZoo in TorchRL is tested using version")
def test_pettingzoo_infos_in_lenient_mode_are_read_by_torchrls_pettingzoo_wrapper(map_name, api):
    pytest.importorskip("torchrl", reason="needs torchrl (pip install 'sc2-envs[torchrl]')")
    from torchrl.envs import PettingZooWrapper
    from torchrl.envs.utils import check_env_specs

    make = sc2_envs.parallel_env if api == "parallel" else sc2_envs.env
    pz = make(map_name, lenient_actions=True, seed=0)
    env = PettingZooWrapper(pz, use_mask=True, categorical_actions=True, done_on_any=False)
    check_env_specs(env)  # was: TypeError 'NoneType' object does not support item assignment
    td = env.rollout(5, break_when_any_done=False)["next"]
    # TorchRL groups the parallel env's agents in "agent" and puts each AEC agent in a group of its own
    invalid = td["agent", "info", "invalid_action"] if api == "parallel" else td["agent_0", "info", "invalid_action"]
    assert invalid.shape == ((5, len(pz.possible_agents)) if api == "parallel" else (5, 1))
    assert not invalid.any()  # TorchRL samples from the mask


@pytest.mark.parametrize("map_name", MAPS)
def test_pettingzoo_aec_env_returns_numbers_only(map_name):
    env = sc2_envs.env(map_name)
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    bad = []
    for _agent in env.agent_iter(3000):
        obs, rew, term, trunc, info = env.last()
        bad += non_numeric({"obs": obs, "rew": rew, "info": info, "infos": env.infos})
        env.step(None if term or trunc else masked_choice(rng, obs["action_mask"]))
    assert not bad, sorted(set(bad))


@pytest.mark.parametrize("map_name", MAPS)
@pytest.mark.parametrize("observation", ["obs", "state"])
def test_gymnasium_env_returns_numbers_only(map_name, observation):
    env = gymnasium.make(f"sc2_envs/{map_name}-v0", observation=observation, lenient_actions=True)
    rng = np.random.default_rng(0)
    obs, info = env.reset(seed=0)
    bad = non_numeric({"obs": obs, "info": info})
    done = False
    while not done:
        obs, rew, term, trunc, info = env.step(np.array([masked_choice(rng, m) for m in info["action_mask"]]))
        bad += non_numeric({"obs": obs, "rew": rew, "info": info})
        done = term or trunc
    assert not bad, sorted(set(bad))


def dtypes(info: dict) -> dict:
    """``{key: (dtype, shape)}`` of an info whose values all have a ``dtype`` (AttributeError otherwise)."""
    return {k: (v.dtype, v.shape) for k, v in info.items()}


@pytest.mark.parametrize("map_name", MAPS)
@pytest.mark.parametrize("lenient_actions", [False, True])
def test_gymnasium_env_infos_keep_the_reset_keys_dtypes_and_shapes_at_every_step(map_name, lenient_actions):
    """TorchRL's ``GymWrapper`` reads the keys of the reset's info only, with each value's ``.dtype``
    (Python bools once failed it); Gymnasium's vector envs size their arrays from the first value."""
    env = gymnasium.make(f"sc2_envs/{map_name}-v0", lenient_actions=lenient_actions)
    rng = np.random.default_rng(0)
    _, info = env.reset(seed=0)
    first = dtypes(info)
    done, seen = False, []
    while not done:
        _, _, term, trunc, info = env.step(np.array([masked_choice(rng, m) for m in info["action_mask"]]))
        seen.append(dtypes(info))
        done = term or trunc
    assert all(d == first for d in seen), next(d for d in seen if d != first)
    smac = {"battle_won": (np.bool_, ()), "dead_allies": (np.int64, ()), "dead_enemies": (np.int64, ())}
    smac["episode_limit"] = (np.bool_, ())
    assert {k: first[k] for k in smac} == {k: (np.dtype(t), s) for k, (t, s) in smac.items()}
    assert ("invalid_actions" in first) == lenient_actions
    n_agents = env.unwrapped.n_agents  # the last info still says how the battle ended
    assert info["battle_won"] or info["dead_allies"] == n_agents or info["episode_limit"]


@pytest.mark.parametrize("map_name", MAPS)
def test_gymnasium_vector_env_stacks_infos_into_numeric_arrays(map_name):
    env = gymnasium.make_vec(f"sc2_envs/{map_name}-v0", num_envs=2, lenient_actions=True)
    env.action_space.seed(0)
    _, info = env.reset(seed=0)
    bad = non_numeric(info)
    for _ in range(25):
        obs, rew, term, trunc, info = env.step(env.action_space.sample())
        bad += non_numeric({"obs": obs, "rew": rew, "info": info})
    env.close()
    assert not bad, sorted(set(bad))
    stacked = {k: (info[k].dtype, info[k].shape) for k in ("battle_won", "dead_enemies", "episode_limit")}
    assert stacked == {"battle_won": (np.bool_, (2,)), "dead_enemies": (np.int64, (2,)), "episode_limit": (np.bool_, (2,))}
    assert info["invalid_actions"].dtype == np.bool_ and info["invalid_actions"].shape[0] == 2


@pytest.mark.parametrize("map_name", MAPS)
def test_gymnasium_env_infos_are_read_by_torchrls_gym_wrapper(map_name):
    """``auto_register_info_dict`` reads the reset's info and runs ``check_env_specs`` with random
    actions, so the env is lenient (as for Gymnasium's ``check_env``)."""
    pytest.importorskip("torchrl", reason="needs torchrl (pip install 'sc2-envs[torchrl]')")
    from torchrl.envs import GymWrapper

    genv = gymnasium.make(f"sc2_envs/{map_name}-v0", lenient_actions=True)
    env = GymWrapper(genv)
    env.auto_register_info_dict()
    td = env.rollout(5)["next"]
    n = genv.unwrapped.n_agents
    assert td["battle_won"].dtype == td["episode_limit"].dtype == torch.bool and td["battle_won"].shape == (5,)
    assert td["dead_allies"].dtype == td["dead_enemies"].dtype == torch.int64 and td["dead_enemies"].shape == (5,)
    assert td["invalid_actions"].shape == (5, n) and td["action_mask"].shape == (5, n, genv.unwrapped.n_actions)
    assert td["state"].shape == (5, genv.unwrapped.sim.state_size)
    if map_name != "2s3z":  # SMACv2: this episode's roster
        assert td["unit_kinds"].shape == (5, n) and td["unit_kinds"].dtype == torch.int64


@pytest.mark.parametrize("map_name", MAPS)
def test_batched_simulator_returns_tensors_only(map_name):
    sim = sc2_envs.make_batched(map_name, num_envs=2, seed=0)
    out = sim.reset(seed=0)
    bad = [k for k, v in out.items() if not isinstance(v, torch.Tensor)]
    g = torch.Generator().manual_seed(0)
    for _ in range(25):
        avail = out["avail_actions"]
        actions = torch.multinomial(avail.reshape(-1, avail.shape[-1]).float(), 1, generator=g).reshape(avail.shape[:-1])
        out = sim.step(actions)
        bad += [k for k, v in out.items() if not isinstance(v, torch.Tensor)]
    assert not bad, sorted(set(bad))


def test_smac_and_smacv2_compat_step_infos_are_numbers():
    from sc2_envs.adapters import StarCraft2Env, StarCraftCapabilityEnvWrapper

    cap = {
        "n_units": 5,
        "n_enemies": 5,
        "team_gen": {
            "dist_type": "weighted_teams",
            "unit_types": ["stalker", "zealot", "colossus"],
            "weights": [0.45, 0.45, 0.1],
        },
        "start_positions": {"dist_type": "surrounded_and_reflect", "p": 0.5, "map_x": 32, "map_y": 32},
    }
    rng = np.random.default_rng(0)
    bad = []
    for env in (
        StarCraft2Env(map_name="2s3z", seed=0),
        StarCraftCapabilityEnvWrapper(map_name="10gen_protoss", capability_config=cap, seed=0),
    ):
        env.reset()
        n_agents = env.get_env_info()["n_agents"]
        terminated = False
        while not terminated:
            actions = [masked_choice(rng, env.get_avail_agent_actions(i)) for i in range(n_agents)]
            _, terminated, info = env.step(actions)
            bad += non_numeric(info, type(env).__name__)
            bad += non_numeric({"state": env.get_state(), "obs": np.stack(env.get_obs())}, type(env).__name__)
        env.close()
    assert not bad, sorted(set(bad))


FULL_GAME = {"max_entities": 64, "max_selected": 8, "game_steps_per_episode": 48}  # 6 steps of 8 game loops


def _full_game_extra():
    from sc2_envs.full_game._deps import MissingDependencyError, require

    try:
        require("pysc2_evolved.lib.actions", "FullGame-v0")
    except MissingDependencyError as e:
        pytest.skip(f"the full-game extra is not usable here: {e}")


def test_fullgame_v0_infos_are_numbers_with_the_reset_keys_at_every_step():
    """FullGame-v0 once put the reason of an invalid action in a string and refused commands in a list of
    varying length; sampled actions hit both (padding rows, refused commands)."""
    _full_game_extra()
    from sc2_envs.full_game import spec

    env = gymnasium.make("sc2_envs/FullGame-v0", **FULL_GAME)
    env.action_space.seed(0)
    _, info = env.reset(seed=0)
    keys, bad, codes = set(info), non_numeric(info), set()
    done = False
    while not done:
        _, rew, term, trunc, info = env.step(env.action_space.sample())
        bad += non_numeric({"rew": rew, "info": info})
        assert keys <= set(info) <= keys | {"outcome", "episode_limit"}, sorted(info)
        assert info["action_errors"].shape == (spec.MAX_ACTION_ERRORS,) and info["action_errors"].dtype == np.int32
        codes.add(int(info["invalid_action"]))
        done = term or trunc
    assert not bad, sorted(set(bad))
    assert keys == {"game_loop", "action_errors", "invalid_action", "entities_left_out"}
    assert codes - {0}, "no sampled action was invalid: the test no longer covers invalid_action"
    assert {spec.InvalidAction(c).name for c in codes} <= set(spec.InvalidAction.__members__)


def test_fullgame_v0_infos_stack_in_gymnasiums_vector_env_and_the_lite_vector_env():
    _full_game_extra()
    from sc2_envs.full_game import spec
    from sc2_envs.lite.env import LiteFullGameVectorEnv

    venv = gymnasium.vector.SyncVectorEnv([lambda: gymnasium.make("sc2_envs/FullGame-v0", **FULL_GAME)] * 2)
    lite = LiteFullGameVectorEnv(num_envs=2, **FULL_GAME)
    for env in (venv, lite):
        env.action_space.seed(0)
        _, info = env.reset(seed=0)
        bad = non_numeric(info)
        for _ in range(8):  # past the end: the autoreset step
            _, rew, term, trunc, info = env.step(env.action_space.sample())
            bad += non_numeric({"rew": rew, "info": info})
            assert info["action_errors"].shape == (2, spec.MAX_ACTION_ERRORS) and info["invalid_action"].shape == (2,)
        env.close()
        assert not bad, (type(env).__name__, sorted(set(bad)))


def test_fullgame_v0_infos_are_read_by_torchrls_gym_wrapper():
    """TorchRL's info reader takes its keys from the reset's info and reads each value's dtype."""
    _full_game_extra()
    pytest.importorskip("torchrl")
    from torchrl.envs import GymWrapper

    from sc2_envs.full_game import spec

    env = GymWrapper(gymnasium.make("sc2_envs/FullGame-v0", **FULL_GAME))
    env.auto_register_info_dict()  # runs TorchRL's check_env_specs
    td = env.rollout(6)["next"]
    assert td["action_errors"].shape == (6, spec.MAX_ACTION_ERRORS) and td["action_errors"].dtype == torch.int32
    assert td["invalid_action"].shape == (6,) and td["game_loop"].tolist() == [8, 16, 24, 32, 40, 48]
