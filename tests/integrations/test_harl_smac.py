"""HARL's own runner trains on the simulator through ``sc2_envs.adapters.harl_smac`` (HARL unedited).

HARL (github.com/PKU-MARL/HARL) is not on the package registries: set ``HARL_PATH`` to a checkout
to run the end-to-end test; it is skipped otherwise. The env-interface tests need no HARL.
"""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from sc2_envs.adapters.harl_smac import (
    HARLStarCraft2Env,
    get_map_params,
    install_harl_shims,
)

HARL_PATH = os.environ.get("HARL_PATH")
needs_harl = pytest.mark.skipif(
    not HARL_PATH or not (Path(HARL_PATH) / "examples" / "train.py").is_file(),
    reason="HARL is not on PyPI: set HARL_PATH to a checkout of github.com/PKU-MARL/HARL to run HARL's own runner",
)


def _masked(avail, rng):
    return np.array([[rng.choice(np.flatnonzero(a))] for a in avail])


def test_harl_env_interface_fp():
    env = HARLStarCraft2Env({"map_name": "3m", "state_type": "FP"})
    env.seed(3)
    obs, share, avail = env.reset()
    n, a = 3, 9
    assert obs.shape == (n, env.observation_space[0][0]) and share.shape == (n, env.share_observation_space[0][0])
    assert avail.shape == (n, a) and [s.n for s in env.action_space] == [a] * n
    np.testing.assert_array_equal(obs[:, -n:], np.eye(n))  # obs_agent_id
    np.testing.assert_array_equal(share[:, -n:], np.eye(n))  # per-agent states: SMAC state + agent id
    np.testing.assert_array_equal(share[0, :-n], share[1, :-n])
    rng = np.random.default_rng(0)
    while True:
        obs, share, rewards, dones, infos, avail = env.step(_masked(avail, rng))
        assert len(rewards) == n and rewards[0] == rewards[1] and len(rewards[0]) == 1
        assert dones.dtype == bool and dones.shape == (n,)
        assert set(infos[0]) == {"battles_won", "battles_game", "battles_draw", "restarts", "bad_transition", "won"}
        for i in range(n):  # a dead agent is done before the episode ends
            assert dones[i] == (dones.all() or env.env.death_tracker_ally[i] == 1)
        if dones.all():
            break
    assert infos[0]["battles_game"] == 1


def test_bad_transition_only_at_the_time_limit():
    import dataclasses

    from sc2_envs.maps import get_map

    env = HARLStarCraft2Env({"map_name": "3m", "state_type": "EP"})
    env.env = type(env.env)(dataclasses.replace(get_map("3m"), episode_limit=5), seed=0, obs_last_action=True)
    _, share, _ = env.reset()
    assert share.shape == (3, env.env.get_state_size())
    for t in range(5):
        _, _, _, dones, infos, _ = env.step([[1]] * 3)
        assert infos[0]["bad_transition"] == (t == 4) and dones.all() == (t == 4)
    assert infos[0]["won"] is False and env.get_stats()["timeouts"] == 1


def test_bad_env_args():
    with pytest.raises(ValueError, match="map_name"):
        HARLStarCraft2Env({"state_type": "FP"})
    with pytest.raises(ValueError, match="state_type"):
        HARLStarCraft2Env({"map_name": "3m", "state_type": "XP"})
    with pytest.raises(ValueError, match="unknown map"):
        get_map_params("4m")


def test_shims_register_the_env():
    install_harl_shims()
    from harl.envs.smac.smac_maps import (
        get_map_params as harl_params,  # served by the shim
    )
    from harl.envs.smac.StarCraft2_Env import StarCraft2Env

    assert StarCraft2Env is HARLStarCraft2Env and harl_params("MMM")["n_agents"] == 10
    assert np.int is int


def test_launcher_without_harl_says_how(tmp_path):
    r = subprocess.run(
        [sys.executable, "-m", "sc2_envs.adapters.harl_smac", "--harl-path", str(tmp_path)],
        check=False,
        capture_output=True,
        text=True,
        env={**os.environ, "HARL_PATH": ""},
    )
    assert r.returncode != 0 and "not a HARL checkout" in r.stderr


@needs_harl
def test_harl_happo_trains_on_the_simulator(tmp_path):
    """HARL's examples/train.py (HAPPO, 2 rollout threads, evaluation on) runs 200 env steps on 3m."""
    pytest.importorskip("setproctitle", reason="HARL imports setproctitle")
    pytest.importorskip("tensorboardX", reason="HARL imports tensorboardX")
    cmd = [
        sys.executable,
        "-m",
        "sc2_envs.adapters.harl_smac",
        "--harl-path",
        HARL_PATH,
        "--algo",
        "happo",
        "--env",
        "smac",
        "--exp_name",
        "ci",
        "--map_name",
        "3m",
        "--n_rollout_threads",
        "2",
        "--episode_length",
        "50",
        "--num_env_steps",
        "200",
        "--cuda",
        "False",
        "--use_eval",
        "True",
        "--eval_interval",
        "1",
        "--n_eval_rollout_threads",
        "1",
        "--eval_episodes",
        "1",
        "--log_dir",
        str(tmp_path),
        "--torch_threads",
        "1",
        "--log_interval",
        "1",
    ]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).parents[2]), os.environ.get("PYTHONPATH", "")])}
    r = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=500, cwd=tmp_path, env=env)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "Task 3m Algo happo" in r.stdout and "total num timesteps 200/200" in r.stdout
    assert "Evaluation win rate is" in r.stdout
    assert list(tmp_path.rglob("events.out.tfevents*"))  # HARL's TensorBoard logs


@needs_harl
def test_harl_own_smac_env_trains_over_the_api(tmp_path):
    """``--sc2api``: HARL's own pysc2-based SMAC env, unedited, against the simulator's API server."""
    pytest.importorskip("pysc2_evolved", reason="--sc2api serves HARL's import pysc2 from pysc2-evolved")
    pytest.importorskip("setproctitle", reason="HARL imports setproctitle")
    pytest.importorskip("tensorboardX", reason="HARL imports tensorboardX")
    cmd = [
        sys.executable,
        "-m",
        "sc2_envs.adapters.harl_smac",
        "--harl-path",
        HARL_PATH,
        "--sc2api",
        "--algo",
        "happo",
        "--env",
        "smac",
        "--exp_name",
        "api",
        "--map_name",
        "3m",
        "--n_rollout_threads",
        "1",
        "--episode_length",
        "50",
        "--num_env_steps",
        "100",
        "--cuda",
        "False",
        "--use_eval",
        "False",
        "--log_dir",
        str(tmp_path),
        "--torch_threads",
        "1",
        "--log_interval",
        "1",
    ]
    env = {k: v for k, v in os.environ.items() if k != "SC2PATH"}
    env["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).parents[2]), os.environ.get("PYTHONPATH", "")])
    r = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=500, cwd=tmp_path, env=env)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "observation_space:  [[64," in r.stdout  # HARL's own feature layout (MAPPO-style), not ours
    assert "total num timesteps 100/100" in r.stdout
