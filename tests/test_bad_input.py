"""Bad input to public entry points raises one clear error naming the bad value (found by trying them)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import sc2_envs


def test_num_envs_accepts_numpy_ints_and_names_bad_values():
    env = sc2_envs.make_batched("3m", num_envs=np.int64(2), seed=0)
    assert env.num_envs == 2 and type(env.num_envs) is int
    assert env.reset()["obs"].shape[0] == 2
    for bad in (0, -1, 2.0, "2", True, np.int64(0)):
        with pytest.raises(ValueError, match="num_envs must be a positive int"):
            sc2_envs.make_batched("3m", num_envs=bad)


@pytest.mark.parametrize("device", ["tpu", "cpu:x", 3.5])
def test_unknown_device_is_a_value_error_naming_it(device):
    with pytest.raises(ValueError, match=r"device must be a torch device .* got " + repr(device).replace(".", r"\.")):
        sc2_envs.make_batched("3m", num_envs=1, device=device)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message on a machine without CUDA")
def test_cuda_without_gpu_is_a_value_error():
    with pytest.raises(ValueError, match=r"device 'cuda' needs CUDA, but torch.cuda.is_available\(\) is False"):
        sc2_envs.make_batched("3m", num_envs=1, device="cuda")


def test_continuing_episode_must_be_a_bool():
    assert sc2_envs.make_batched("3m", num_envs=1, continuing_episode=True).num_envs == 1
    with pytest.raises(TypeError, match="option continuing_episode must be a bool, got 'yes'"):
        sc2_envs.make_batched("3m", num_envs=1, continuing_episode="yes")


def test_parallel_env_step_rejects_a_non_mapping():
    env = sc2_envs.parallel_env("3m", seed=0)
    env.reset(seed=0)
    with pytest.raises(TypeError, match=r"actions must be a dict \{agent name: int action\}.*got list \[1, 1, 1\]"):
        env.step([1, 1, 1])


@pytest.mark.parametrize("script", ["happo_gnn.py", "hatrpo_gnn.py"])
def test_num_minibatches_must_divide_the_batch(tmp_path, script):
    """8 envs x 10 steps = 80 env steps split 3 ways used to give minibatches of 26, 26, 26 and 2."""
    repo = Path(__file__).resolve().parents[1]
    env = dict(os.environ, PYTHONPATH=str(repo), OMP_NUM_THREADS="1")
    res = subprocess.run(
        [
            sys.executable,
            str(repo / "algos" / script),
            "--no-cuda",
            "--map",
            "3m",
            "--num-envs",
            "8",
            "--num-steps",
            "10",
            "--total-timesteps",
            "80",
            "--num-minibatches",
            "3",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        check=False,
    )
    assert res.returncode == 2, res.stdout[-2000:] + res.stderr[-2000:]
    assert res.stderr.strip() == (
        f"{script}: error: --num-minibatches 3: expected a divisor of the batch of 80 env "
        "steps (--num-envs x --num-steps), for equal minibatches"
    )
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize("case", ["path-is-a-file", "bad-build"])
def test_sc2api_install_cli_reports_an_unusable_path_in_one_line(tmp_path, capsys, case):
    from sc2_envs.sc2api.__main__ import main

    target = tmp_path / "afile"
    target.write_text("not a folder")
    argv = (
        ["install", "--path", str(target)]
        if case == "path-is-a-file"
        else ["install", "--path", str(tmp_path / "d"), "--build", "0"]
    )
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith("python -m sc2_envs.sc2api install: error: --path ")
    assert ("Not a directory" in err) if case == "path-is-a-file" else ("build must be a positive int" in err), err


def test_a3c_upgo_unknown_map_is_one_line_before_any_run_folder(tmp_path):
    repo = Path(__file__).resolve().parents[1]
    env = dict(os.environ, PYTHONPATH=str(repo), OMP_NUM_THREADS="1")
    res = subprocess.run(
        [sys.executable, str(repo / "algos" / "a3c_upgo.py"), "--no-cuda", "--map", "bogus"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        check=False,
    )
    assert res.returncode != 0
    assert res.stderr.strip().startswith("--map 'bogus'; expected one of 10m_vs_11m, "), res.stderr[-2000:]
    assert "Traceback" not in res.stderr
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize("case", ["missing", "text", "npy", "fps0"])
def test_render_cli_reports_a_bad_replay_in_one_line(tmp_path, capsys, case):
    from sc2_envs.render import main

    replay = tmp_path / "r.npz"
    if case == "text":
        replay.write_text("not a replay")
    elif case == "npy":
        replay = tmp_path / "r.npy"
        np.save(replay, np.zeros(3))
    extra = ["--fps", "0"] if case == "fps0" else []
    with pytest.raises(SystemExit) as exc:
        main([str(replay), "--out", str(tmp_path / "x.gif"), *extra])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    expected = {
        "missing": "No such file or directory",
        "text": "is not a sc2_envs",
        "npy": "is a .npy array, not a",
        "fps0": "--fps 0.0: expected env steps per second > 0",
    }[case]
    assert err.startswith("python -m sc2_envs.render: error: ") and expected in err, err


def test_time_budget_line_says_the_budget_is_per_process(tmp_path):
    """The budget counts this process, the seconds printed after it count the whole run (across --resume)."""
    repo = Path(__file__).resolve().parents[1]
    env = dict(os.environ, PYTHONPATH=str(repo), OMP_NUM_THREADS="1")
    res = subprocess.run(
        [
            sys.executable,
            str(repo / "algos" / "happo_gnn.py"),
            "--no-cuda",
            "--map",
            "3m",
            "--num-envs",
            "2",
            "--num-steps",
            "4",
            "--total-timesteps",
            "80",
            "--eval-episodes",
            "2",
            "--no-save-model",
            "--time-budget-s",
            "0.001",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        check=False,
    )
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    assert "time budget of 0 s (this process) reached after iteration 1/10: 8 env steps" in res.stdout, res.stdout[-2000:]


def test_policy_act_names_observations_of_the_wrong_team_size():
    import models

    env = sc2_envs.make_batched("2s3z", num_envs=2, seed=0)
    policy, _, _ = models.load_checkpoint(
        str(Path(__file__).resolve().parents[1] / "checkpoints" / "2s3z_gnn.pt"), env.get_env_info()
    )
    out = env.reset()
    with pytest.raises(ValueError, match=r"obs \(2, 3, 80\) and avail \(2, 3, 11\); expected \[B, 5, obs_size\]"):
        policy.act(out["obs"][:, :3], out["avail_actions"][:, :3], greedy=True)
    actions, logp = policy.act(out["obs"], out["avail_actions"], greedy=True)
    assert actions.shape == (2, 5) and logp.shape == (2, 5)
    with pytest.raises(TypeError, match="env_info must be the dict of env.get_env_info\\(\\), got NoneType"):
        models.load_checkpoint(str(Path(__file__).resolve().parents[1] / "checkpoints" / "2s3z_gnn.pt"), None)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(maps=["bogus"]), "--maps ['bogus']: unknown; expected names from 10m_vs_11m"),
        (dict(batch_sizes=[0]), "--batch-sizes values must be >= 1 envs, got [0]"),
        (dict(compile="yes"), "--compile 'yes'; expected off, on or both"),
        (dict(seconds=0.0), "--seconds 0.0; expected a timed budget > 0 s"),
    ],
)
def test_env_throughput_rejects_bad_flags_before_measuring(kwargs, message):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    try:
        import env_throughput
    finally:
        sys.path.pop(0)
    with pytest.raises(SystemExit) as exc:
        env_throughput.main(env_throughput.Args(devices=["cpu"], **kwargs))
    assert str(exc.value).startswith(message), exc.value


@pytest.mark.parametrize("script", ["happo_gnn.py", "hatrpo_gnn.py"])
@pytest.mark.parametrize(
    ("flag", "value", "expected"),
    [("--actor-layers", "0", "an integer >= 1"), ("--torch-threads", "-1", "an integer >= 0")],
)
def test_layer_and_thread_counts_are_checked(tmp_path, script, flag, value, expected):
    """--actor-layers -2 used to train with no attention block, --torch-threads -1 was ignored."""
    repo = Path(__file__).resolve().parents[1]
    env = dict(os.environ, PYTHONPATH=str(repo), OMP_NUM_THREADS="1")
    res = subprocess.run(
        [sys.executable, str(repo / "algos" / script), "--map", "3m", flag, value],
        cwd=tmp_path, capture_output=True, text=True, timeout=300, env=env, check=False,
    )  # fmt: skip
    assert res.returncode == 2 and f"{flag} {value}: expected {expected}" in res.stderr, res.stderr[-2000:]
