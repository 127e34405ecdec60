"""Stable-Baselines3 through SuperSuit (``sc2_envs.adapters.sb3``): death, truncation and masks.

Needs the ``sb3`` extra (``supersuit``, ``stable-baselines3``, ``sb3-contrib``).
"""

import numpy as np
import pytest

ss = pytest.importorskip("supersuit", exc_type=ImportError, reason="needs supersuit (pip install 'sc2-envs[sb3]')")
pytest.importorskip("stable_baselines3", exc_type=ImportError, reason="needs stable-baselines3 (pip install 'sc2-envs[sb3]')")

from sc2_envs.adapters.sb3 import SB3MaskedVecEnv, make_sb3_vec_env  # noqa: E402 (after the skips)

N = 3  # agents on 3m


def passive_actions(masks: np.ndarray) -> np.ndarray:
    """Stop where stop is available (living agents), else no-op (dead agents)."""
    return np.where(masks[:, 1], 1, 0)


def test_first_death_does_not_end_episode_and_masks_follow():
    venv = make_sb3_vec_env("3m", num_battles=1, seed=0)
    obs = venv.reset()
    assert obs.shape == (N, venv.observation_space.shape[0]) and obs.dtype == np.float32
    steps, first_death = 0, None
    while True:
        masks = venv.action_masks()
        assert masks.shape == (N, 9) and masks.dtype == bool
        assert masks.tolist() == [list(m) for m in venv.env_method("action_masks")]
        obs, _rewards, dones, infos = venv.step(passive_actions(masks))
        steps += 1
        for info, mask in zip(infos, venv.action_masks(), strict=False):
            if not dones.any():  # the mask read by MaskablePPO is the env's mask of the new observation
                assert np.array_equal(info["action_mask"].astype(bool), mask)
        dead = [not info["agent_alive"] for info in infos]
        if any(dead) and first_death is None:
            first_death = steps
            assert not dones.any(), "the first death ended the episode"
            i = dead.index(True)
            assert np.all(obs[i] == 0) and venv.action_masks()[i].tolist() == [True] + [False] * 8
        if dones.any():
            break
    assert first_death == 11 and steps == 21
    assert dones.all()
    assert not any(info.get("TimeLimit.truncated", False) for info in infos)  # a lost battle is terminal
    assert all("terminal_observation" in info for info in infos)
    # auto-reset: the observation and masks are the new episode's (every agent alive)
    assert venv.action_masks()[:, 0].tolist() == [False] * N


def test_truncation_reaches_sb3(short_3m):
    venv = make_sb3_vec_env(short_3m, num_battles=2, seed=0)
    venv.reset()
    for t in range(6):
        obs, _rewards, dones, infos = venv.step(passive_actions(venv.action_masks()))
        assert dones.all() == (t == 5)
    assert all(info["TimeLimit.truncated"] for info in infos)
    assert all(info["terminal_observation"].shape == obs.shape[1:] for info in infos)


def test_battle_copies_get_distinct_seeds():
    venv = make_sb3_vec_env("3m", num_battles=2, seed=0)
    obs = venv.reset()
    assert not np.array_equal(obs[:N], obs[N:])  # copies draw different streams (spawn jitter differs)
    venv.seed(0)
    assert np.array_equal(venv.reset(), obs)


def _copy_keys(venv) -> list[int]:
    """The 64-bit stream key of each battle copy's simulator."""
    return [int(v.par_env.unwrapped.sim.st.env_seed[0]) for v in venv.venv.vec_envs]


def test_adjacent_seeds_share_no_battle_copy():
    """SuperSuit/SB3 hand copy i the int seed s + i; with plain offsets seed 1's copy 0 was seed 0's copy 1."""
    import sc2_envs

    k = 4
    keys, first_obs = {}, {}
    for s in (0, 1):
        venv = make_sb3_vec_env("3m", num_battles=k, seed=s)
        first_obs[s] = venv.reset()
        keys[s] = _copy_keys(venv)
        # copy i plays env i of make_batched(map, num_envs=k, seed=s)
        batched = sc2_envs.make_batched("3m", num_envs=k, seed=s)
        batched.reset()
        assert keys[s] == batched.st.env_seed.tolist()
    assert len(set(keys[0]) | set(keys[1])) == 2 * k
    for i in range(k - 1):  # the old coincidence: seed 1's copy i == seed 0's copy i + 1
        assert not np.array_equal(first_obs[1][i * N : (i + 1) * N], first_obs[0][(i + 1) * N : (i + 2) * N])


def test_split_copy_seed_rejects_impossible_seeds():
    from sc2_envs.adapters.sb3 import SplitCopySeed
    from sc2_envs.wrappers.pettingzoo import SC2ParallelEnv

    with pytest.raises(ValueError, match="copy_index"):
        SplitCopySeed(SC2ParallelEnv("3m"), -1)
    env = SplitCopySeed(SC2ParallelEnv("3m"), 2)
    with pytest.raises(ValueError, match="copy 2 got seed 1"):
        env.reset(seed=1)
    with pytest.raises(TypeError, match="seed must be an int"):
        env.reset(seed=1.5)


def test_wrapper_errors():
    with pytest.raises(ValueError, match="absorbing"):
        make_sb3_vec_env("3m", dead_agents="remove")
    # found by a tester: these were stored by venv.seed and failed only at the first reset (inside SB3's learn)
    with pytest.raises(ValueError, match="seed must be a non-negative int, got -1"):
        make_sb3_vec_env("3m", seed=-1)
    with pytest.raises(TypeError, match="seed must be an int or None, got 1.5"):
        make_sb3_vec_env("3m", seed=1.5)
    venv = make_sb3_vec_env("3m", seed=0)
    with pytest.raises(AttributeError, match="action_masks"):
        venv.env_method("render")
    assert isinstance(venv, SB3MaskedVecEnv)


def test_maskable_ppo_learns_without_invalid_actions():
    """MaskablePPO reads the masks: the env raises ValueError on any unavailable action, so a run that
    completes sampled only valid actions (a mask-blind PPO fails within a few steps)."""
    sb3_contrib = pytest.importorskip(
        "sb3_contrib", exc_type=ImportError, reason="needs sb3-contrib (pip install 'sc2-envs[sb3]')"
    )
    venv = make_sb3_vec_env("3m", num_battles=1, seed=0, loops_per_tick=8)
    model = sb3_contrib.MaskablePPO("MlpPolicy", venv, n_steps=64, batch_size=96, n_epochs=1, seed=0, device="cpu")
    model.learn(total_timesteps=2 * 64 * N)
    assert model.num_timesteps == 2 * 64 * N

    from stable_baselines3 import PPO

    blind = PPO(
        "MlpPolicy",
        make_sb3_vec_env("3m", num_battles=1, seed=0, loops_per_tick=8),
        n_steps=64,
        batch_size=96,
        n_epochs=1,
        seed=0,
        device="cpu",
    )
    with pytest.raises(ValueError, match="unavailable"):
        blind.learn(total_timesteps=2 * 64 * N)


def test_death_on_the_time_limit_step():
    """3m, seed 0, passive: the first death is at step 11; with ``episode_limit=11`` every slot, the dead
    agent's included, must reach SB3 as truncated (bootstrapped), not terminated."""
    import dataclasses

    from sc2_envs.maps import get_map

    venv = make_sb3_vec_env(dataclasses.replace(get_map("3m"), episode_limit=11), seed=0)
    venv.reset()
    for _ in range(11):
        _obs, _rewards, dones, infos = venv.step(passive_actions(venv.action_masks()))
    assert dones.all() and all(info["TimeLimit.truncated"] for info in infos)
    assert [info["agent_alive"] for info in infos].count(False) == 1


def test_final_infos_survive_the_auto_reset():
    """SuperSuit merges the reset infos over the final ones; the final battle outcome must still be readable."""
    venv = make_sb3_vec_env("3m", seed=0)
    venv.reset()
    for _ in range(21):  # passive: the battle is lost at step 21 with all three agents dead
        _obs, _rewards, dones, infos = venv.step(passive_actions(venv.action_masks()))
    assert dones.all()
    assert [info["dead_allies"] for info in infos] == [3, 3, 3]
    assert [info["agent_alive"] for info in infos] == [False] * 3
    assert all(info["battle_won"] is False and info["final_info"]["dead_allies"] == 3 for info in infos)
    # ... while the masks are the new episode's
    assert [info["action_mask"][0] for info in infos] == [0, 0, 0]


def test_supersuits_space_agnostic_wrappers_run_the_default_env_without_flags():
    """SuperSuit's wrappers that accept any observation space (reward clipping, action
    padding) run ``sc2_envs.parallel_env("3m")`` as it comes, whole episodes with agents dying.

    SuperSuit's observation wrappers (``dtype_v0``, ``normalize_obs_v0``, ``frame_stack_v1``,
    ``black_death_v3``, ``agent_indicator_v0``, ``pad_observations_v0``) accept only Box observations
    and its vector conversion only a fixed agent set; they run on ``FlatObservation`` of the absorbing
    env (next test), not on PettingZoo's Dict-with-mask default.
    """
    import sc2_envs

    env = ss.clip_reward_v0(ss.pad_action_space_v0(sc2_envs.parallel_env("3m")), lower_bound=-0.1, upper_bound=0.1)
    rng = np.random.default_rng(0)
    deaths = 0
    for seed in (0, 1):
        obs, _ = env.reset(seed=seed)
        steps = 0
        while env.agents:
            actions = {a: int(rng.choice(np.flatnonzero(obs[a]["action_mask"]))) for a in env.agents}
            obs, rew, term, trunc, infos = env.step(actions)
            steps += 1
            assert all(-0.1 <= r <= 0.1 for r in rew.values())
            deaths = max(deaths, max(i["dead_allies"] for i in infos.values()))
        assert 1 <= steps <= 60
    assert deaths >= 1, "the episodes had agents dying (leaving env.agents) under the wrappers"


def test_supersuits_observation_wrappers_run_the_flat_absorbing_env():
    """The Box-only SuperSuit wrappers and its vector conversion on ``FlatObservation(dead_agents="absorbing")``."""
    from sc2_envs.adapters.pettingzoo_views import FlatObservation
    from sc2_envs.wrappers.pettingzoo import SC2ParallelEnv

    par = FlatObservation(SC2ParallelEnv("3m", dead_agents="absorbing", seed=0))
    par = ss.agent_indicator_v0(ss.frame_stack_v1(ss.normalize_obs_v0(ss.dtype_v0(par, np.float32)), 2))
    venv = ss.concat_vec_envs_v1(ss.pettingzoo_env_to_vec_env_v1(par), 2, num_cpus=0, base_class="gymnasium")
    obs, infos = venv.reset(seed=0)
    assert obs.shape[0] == 2 * N and obs.dtype == np.float32
    ends = 0
    for _ in range(130):  # 3m's limit is 60 steps: at least two episode ends per copy
        masks = np.stack([np.asarray(i["action_mask"], bool) for i in infos])
        obs, rew, term, trunc, infos = venv.step(passive_actions(masks))
        ends += int(np.any(term | trunc))
    assert ends >= 2


def test_supersuits_vector_conversion_runs_the_absorbing_dict_env():
    """``pettingzoo_env_to_vec_env_v1`` needs a fixed agent set, not Box observations: the env option
    ``dead_agents="absorbing"`` alone makes it (and ``concat_vec_envs_v1``) run, the Dict observation
    batched per key with the mask in ``obs["action_mask"]``; a dead agent's slot reads zeros and mask
    ``[1, 0, ..., 0]`` (no-op only) until the episode ends."""
    import sc2_envs

    default = ss.pettingzoo_env_to_vec_env_v1(sc2_envs.parallel_env("3m"))
    default.reset(seed=0)
    with pytest.raises(AssertionError, match="varying numbers of active agents"):  # the default removes the dead
        for _ in range(60):
            default.step(np.ones(N, np.int64))  # stop, until the first death (step 12 passive)
    par = sc2_envs.parallel_env("3m", dead_agents="absorbing")
    venv = ss.concat_vec_envs_v1(ss.pettingzoo_env_to_vec_env_v1(par), 2, num_cpus=0, base_class="gymnasium")
    obs, _ = venv.reset(seed=0)
    size = par.observation_space("agent_0")["observation"].shape[0]
    assert obs["observation"].shape == (2 * N, size) and obs["action_mask"].shape == (2 * N, 9)
    rng = np.random.default_rng(0)
    ends = dead_seen = 0
    for _ in range(130):  # 3m's limit is 60 steps: at least two episode ends per copy
        actions = np.array([rng.choice(np.flatnonzero(m)) for m in obs["action_mask"]])
        obs, _rew, term, trunc, infos = venv.step(actions)
        done = term | trunc
        ends += sum(int(done[c * N : (c + 1) * N].all()) for c in range(2))  # per battle copy
        dead = [j for j, info in enumerate(infos) if not info["agent_alive"] and not done[j]]
        dead_seen += len(dead)
        for j in dead:
            assert not obs["observation"][j].any() and obs["action_mask"][j].tolist() == [1] + [0] * 8
    assert ends >= 4 and dead_seen >= 1


@pytest.mark.parametrize("base_class", ["gymnasium", "stable_baselines3"])
def test_supersuits_vector_conversion_runs_a_smacv2_scenario(base_class):
    """SuperSuit's standard path on ``protoss_5_vs_5`` (``dead_agents="absorbing"``, the fixed agent set its
    vector conversion needs): episodes end and auto-reset with new rosters, and every info value it
    batches is a number (``unit_kind`` indexes ``get_env_info()["kinds"]``)."""
    import sc2_envs
    from sc2_envs.adapters.pettingzoo_views import FlatObservation

    par = sc2_envs.parallel_env("protoss_5_vs_5", dead_agents="absorbing")
    kinds = par.get_env_info()["kinds"]
    venv = ss.concat_vec_envs_v1(ss.pettingzoo_env_to_vec_env_v1(FlatObservation(par)), 2, num_cpus=0, base_class=base_class)
    if base_class == "gymnasium":
        obs, infos = venv.reset(seed=0)
    else:  # SB3's VecEnv API: reset() -> obs, the reset infos aside (SuperSuit 3.11's SB3 wrapper cannot seed)
        obs, infos = venv.reset(), venv.reset_infos
    assert obs.shape == (2 * 5, par.observation_space("agent_0")["observation"].shape[0])
    rng = np.random.default_rng(0)
    ends, rosters = 0, set()
    for _ in range(250):  # the limit is 200 steps: every copy ends at least once
        rosters.add(tuple(kinds[i["unit_kind"]] for i in infos[:5]))
        for info in infos:
            assert all(isinstance(v, (bool, int, float, np.ndarray)) for v in info.values()), info
        actions = np.array([rng.choice(np.flatnonzero(i["action_mask"])) for i in infos])
        if base_class == "gymnasium":
            obs, _rew, term, trunc, infos = venv.step(actions)
            ends += int((term | trunc).any())
        else:
            obs, _rew, dones, infos = venv.step(actions)
            ends += int(dones.any())
    assert ends >= 2 and len(rosters) >= 2


def test_make_sb3_vec_env_runs_a_smacv2_scenario():
    venv = make_sb3_vec_env("zerg_5_vs_5", num_battles=2, seed=0)
    obs = venv.reset()
    assert obs.shape[0] == 2 * 5
    rng = np.random.default_rng(0)
    ends = 0
    for _ in range(250):
        actions = np.array([rng.choice(np.flatnonzero(m)) for m in venv.action_masks()])
        obs, _rew, dones, infos = venv.step(actions)
        ends += int(dones.any())
        assert all(isinstance(i["unit_kind"], int) for i in infos)
    assert ends >= 2


def test_supersuits_remaining_observation_wrappers_run_the_flat_default_env():
    """``flatten_v0``, ``pad_observations_v0``, ``delay_observations_v0`` and ``max_observation_v0`` on
    ``FlatObservation`` of the default env (agents still leave): whole episodes with masked random actions,
    the mask read from the infos, which these wrappers leave current (on the Dict observation they would
    delay or max the mask too, and a stale mask offers unavailable actions)."""
    import sc2_envs
    from sc2_envs.adapters.pettingzoo_views import FlatObservation

    env = ss.max_observation_v0(
        ss.delay_observations_v0(ss.pad_observations_v0(ss.flatten_v0(FlatObservation(sc2_envs.parallel_env("3m")))), 1), 2
    )
    rng = np.random.default_rng(0)
    for seed in (0, 1):
        obs, infos = env.reset(seed=seed)
        steps = 0
        while env.agents:
            actions = {a: int(rng.choice(np.flatnonzero(infos[a]["action_mask"]))) for a in env.agents}
            obs, _rew, _term, _trunc, infos = env.step(actions)
            steps += 1
            assert all(o.dtype == np.float32 and o.ndim == 1 for o in obs.values())
        assert 1 <= steps <= 60


def test_supersuits_sticky_actions_need_lenient_actions():
    """``sticky_actions_v0`` repeats an agent's previous action, which may have become unavailable (a dead
    target, a dead agent's only no-op); with ``lenient_actions=True`` those become stop / no-op and are
    flagged in the infos instead of raising."""
    import sc2_envs

    env = ss.sticky_actions_v0(sc2_envs.parallel_env("3m", dead_agents="absorbing", lenient_actions=True), 0.5)
    rng = np.random.default_rng(0)
    replaced = 0
    for seed in (0, 1, 2):
        obs, _ = env.reset(seed=seed)
        steps = 0
        while env.agents:
            actions = {a: int(rng.choice(np.flatnonzero(obs[a]["action_mask"]))) for a in env.agents}
            obs, _rew, _term, _trunc, infos = env.step(actions)
            replaced += sum(bool(i.get("invalid_action")) for i in infos.values())
            steps += 1
        assert 1 <= steps <= 60
    assert replaced >= 1, "a repeated action became unavailable at least once (else this test shows nothing)"


def test_example_prints_its_configuration_first(capsys):
    """``examples/sb3_ppo.py`` prints its effective configuration before anything else (the project's rule
    for runs), here on a run too short to train."""
    import importlib.util
    import sys
    from pathlib import Path

    pytest.importorskip("sb3_contrib", exc_type=ImportError, reason="needs sb3-contrib (pip install 'sc2-envs[sb3]')")
    path = Path(__file__).resolve().parents[2] / "examples" / "sb3_ppo.py"
    spec = importlib.util.spec_from_file_location("sb3_ppo_example", path)
    example = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = example  # dataclasses look their module up there
    spec.loader.exec_module(example)
    example.main(example.Args(total_timesteps=1, n_steps=8, batch_size=24, n_epochs=1, eval_episodes=0, loops_per_tick=8))
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("sb3_ppo configuration: {'map_name': '3m', 'seed': 1, 'algo': 'maskable_ppo'"), lines
    assert "'n_steps': 8" in lines[0] and lines[1].startswith("trained 48 agent steps")
