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
from sc2_envs.policies import random_actions
from sc2_envs.training.cli import check_training_args


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


@pytest.mark.parametrize("device", ["mps", "xpu", "meta"])
def test_devices_the_simulator_cannot_run_on_are_value_errors(device):
    with pytest.raises(ValueError, match=f"device must be 'cpu' or a CUDA device .* got '{device}'"):
        sc2_envs.make_batched("3m", num_envs=1, device=device)


def test_cpu_device_index_other_than_0_is_a_value_error():
    with pytest.raises(ValueError, match="device 'cpu:1': the CPU device has index 0 only"):
        sc2_envs.make_batched("3m", num_envs=1, device="cpu:1")
    env = sc2_envs.make_batched("3m", num_envs=1, device="cpu:0")
    assert env.device == env.reset()["obs"].device  # 'cpu:0' is 'cpu', where the outputs are


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


def test_a3c_upgo_unknown_map_is_one_usage_error_line_before_any_run_folder(tmp_path):
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
    assert res.returncode == 2  # the command line's error status, as the other algos/ scripts
    assert res.stderr.strip().startswith("a3c_upgo.py: error: --map 'bogus'; expected one of 10m_vs_11m, "), res.stderr[-2000:]
    assert "Traceback" not in res.stderr
    assert not (tmp_path / "runs").exists()


def test_happo_gnn_mistyped_map_gets_the_suggestion_make_batched_gives(tmp_path):
    repo = Path(__file__).resolve().parents[1]
    with pytest.raises(ValueError) as api:
        sc2_envs.make_batched("protoss_5_vs5", num_envs=1)
    assert "(did you mean 'protoss_5_vs_5'?)" in str(api.value)
    env = dict(os.environ, PYTHONPATH=str(repo), OMP_NUM_THREADS="1")
    res = subprocess.run(
        [sys.executable, str(repo / "algos" / "happo_gnn.py"), "--no-cuda", "--map", "protoss_5_vs5"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        check=False,
    )
    assert res.returncode == 2
    assert res.stderr.strip().startswith(
        "happo_gnn.py: error: --map 'protoss_5_vs5' (did you mean 'protoss_5_vs_5'?): expected one of 10m_vs_11m, "
    ), res.stderr[-2000:]
    assert not (tmp_path / "runs").exists()


def test_mistyped_names_among_several_maps_and_eval_maps_each_get_their_suggestion(capsys):
    from dataclasses import replace

    from conftest import load_algo

    base = replace(load_algo("happo_gnn").Args(), num_envs=4, num_steps=8, total_timesteps=32)
    for change, message in (
        (
            {"map": ("3m", "protoss_5_vs5", "qqqq")},
            "(unknown: ['protoss_5_vs5', 'qqqq']; 'protoss_5_vs5' (did you mean 'protoss_5_vs_5'?))",
        ),
        (
            {"map": ("3m",), "eval_maps": ("qqqq", "zerg_5_vs_55")},
            "--eval-maps qqqq zerg_5_vs_55: unknown ['qqqq', 'zerg_5_vs_55']; 'zerg_5_vs_55' (did you mean 'zerg_5_vs_5'?); "
            "expected names of sc2_envs.list_maps('all')",
        ),
    ):
        with pytest.raises(SystemExit):
            check_training_args(replace(base, **change))
        assert message in capsys.readouterr().err


@pytest.mark.parametrize(
    "change, message",
    [
        ({"map": "3m"}, "--map '3m': expected a sequence of map names such as ('3m',), not one string"),
        ({"eval_maps": "2s3z"}, "--eval-maps '2s3z': expected a sequence of map names such as ('2s3z',), not one string"),
    ],
)
def test_a_map_flag_given_one_string_in_python_is_refused_not_split_into_letters(change, message, capsys):
    """``Args(map="3m")`` (a3c_upgo's --map is one string) was read as the maps '3' and 'm'."""
    from dataclasses import replace

    from conftest import load_algo

    base = replace(load_algo("happo_gnn").Args(), map=("8m",), num_envs=4, num_steps=8, total_timesteps=32)
    with pytest.raises(SystemExit):
        check_training_args(replace(base, **change))
    assert capsys.readouterr().err.strip().endswith(f"error: {message}")


def test_a3c_upgo_mistyped_map_gets_the_suggestion():
    from conftest import load_algo

    from sc2_envs.training.async_learner_checks import check_map_and_teacher

    with pytest.raises(SystemExit, match=r"--map '2s3Z' \(did you mean '2s3z'\?\); expected one of 10m_vs_11m, "):
        check_map_and_teacher(load_algo("a3c_upgo").Args(map="2s3Z"))


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
    # found by a tester: NumPy arrays (as PettingZoo gives) failed with an AttributeError, NaN observations and an
    # agent with no available action silently gave actions (action 0 for the latter)
    obs, avail = out["obs"], out["avail_actions"]
    with pytest.raises(ValueError, match="must be torch tensors, got ndarray and ndarray; convert with torch.as_tensor"):
        policy.act(obs.numpy(), avail.numpy())
    with pytest.raises(ValueError, match="avail must be a bool tensor"):
        policy.act(obs, avail.float())
    with pytest.raises(ValueError, match=r"avail\[1, 2\] has no available action"):
        policy.act(obs, avail.index_put((torch.tensor([1]), torch.tensor([2])), torch.tensor(False)))
    with pytest.raises(ValueError, match="obs holds NaN or inf"):
        policy.act(torch.full_like(obs, float("nan")), avail)
    with pytest.raises(TypeError, match="env_info must be the dict of env.get_env_info\\(\\), got NoneType"):
        models.load_checkpoint(str(Path(__file__).resolve().parents[1] / "checkpoints" / "2s3z_gnn.pt"), None)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(maps=["bogus"]), "--maps ['bogus']: unknown; expected names from 10m_vs_11m"),
        (dict(batch_sizes=[0]), "--batch-sizes values must be >= 1 envs, got [0]"),
        (dict(compile="yes"), "--compile 'yes'; expected off, on or both"),
        (dict(seconds=0.0), "--seconds 0.0; expected a timed budget > 0 s"),
        # found by a tester: an empty --maps truncated the results CSV, then failed with an IndexError
        (dict(maps=[]), "--maps: expected at least one map name"),
        (dict(devices=["gpu"]), "--devices ['gpu']: expected one or more of cpu, cuda, cuda:<index>"),
        (dict(loops_per_tick=0), "--loops-per-tick 0; expected >= 1 game loop per tick"),
        (dict(out="benchmarks"), "--out 'benchmarks' is a folder; expected a CSV file path"),
    ],
)
def test_env_throughput_rejects_bad_flags_before_measuring(kwargs, message):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    try:
        import env_throughput
    finally:
        sys.path.pop(0)
    with pytest.raises(SystemExit) as exc:
        env_throughput.main(env_throughput.Args(**{"devices": ["cpu"], **kwargs}))
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


@pytest.mark.parametrize("script", ["happo_gnn", "hatrpo_gnn"])
@pytest.mark.parametrize(
    "change, message",
    [
        # NaN passes no comparison: it trained into a checkpoint of NaN weights
        ({"ent_coef": float("nan")}, "--ent-coef nan: expected a finite number"),
        ({"clip_coef": float("inf")}, "--clip-coef inf: expected a finite number"),
        ({"vf_coef": -1.0}, "--vf-coef -1.0: expected a value > 0"),
        ({"max_grad_norm": -1.0}, "--max-grad-norm -1.0: expected a gradient-norm bound > 0"),
        ({"huber_delta": -5.0}, "--huber-delta -5.0: expected a value >= 0 (0: squared error)"),
    ],
)
def test_algorithm_coefficients_are_checked(script, change, message, capsys):
    from dataclasses import replace

    from conftest import load_algo

    mod = load_algo(script)
    if not all(hasattr(mod.Args(), k) for k in change):
        pytest.skip(f"{script} has no {list(change)} (HATRPO's actor step has no entropy bonus)")
    args = replace(mod.Args(), map=("3m",), num_envs=4, num_steps=8, total_timesteps=32, **change)
    with pytest.raises(SystemExit) as exc:
        check_training_args(args)
    assert exc.value.code == 2
    assert capsys.readouterr().err.strip().endswith(f"error: {message}")


def test_algorithm_specific_ranges_are_checked(capsys):
    from dataclasses import replace

    from conftest import load_algo

    for script, change, message in (
        ("happo_gnn", {"target_kl": -1.0}, "--target-kl -1.0: expected a KL > 0"),
        ("hatrpo_gnn", {"backtrack_coeff": 1.0}, "--backtrack-coeff 1.0: expected a shrink factor in (0, 1)"),
        ("hatrpo_gnn", {"cg_iters": 0}, "--cg-iters 0: expected an integer >= 1"),
    ):
        mod = load_algo(script)
        with pytest.raises(SystemExit):
            check_training_args(replace(mod.Args(), map=("3m",), num_envs=4, num_steps=8, total_timesteps=32, **change))
        assert message in capsys.readouterr().err


def test_computed_cleanrl_fields_cannot_be_set(capsys):
    from dataclasses import replace

    from conftest import load_algo

    from sc2_envs.training.cli import given_fields, refuse_computed_flags

    mod = load_algo("happo_gnn")
    with pytest.raises(SystemExit):
        refuse_computed_flags(replace(mod.Args(), num_iterations=7), ("batch_size", "num_iterations"), "from --num-envs")
    assert "--num-iterations 7: this is computed at runtime (from --num-envs); do not set it" in capsys.readouterr().err
    refuse_computed_flags(mod.Args(), ("batch_size", "num_iterations"), "from --num-envs")  # unset: fine
    with pytest.raises(SystemExit):  # given on the command line, even as 0 (the unset value)
        refuse_computed_flags(mod.Args(), ("batch_size",), "from --num-envs", given_fields(mod.Args, ["--batch-size", "0"]))
    assert "--batch-size 0: this is computed at runtime" in capsys.readouterr().err
    refuse_computed_flags(mod.Args(), ("batch_size",), "from --num-envs", given_fields(mod.Args, ["--seed", "2"]))


@pytest.mark.parametrize("script", ["happo_gnn.py", "hatrpo_gnn.py"])
def test_help_marks_the_computed_fields(script):
    """``--help`` lists --batch-size, --minibatch-size and --num-iterations (tyro shows every field):
    their help says they are computed and refused, so that no one sets them expecting an effect."""
    repo = Path(__file__).resolve().parents[1]
    env = dict(os.environ, PYTHONPATH=str(repo), OMP_NUM_THREADS="1", COLUMNS="400")
    res = subprocess.run(
        [sys.executable, str(repo / "algos" / script), "--help"], capture_output=True, text=True, env=env, timeout=300
    )
    assert res.returncode == 0, res.stderr
    text = " ".join(res.stdout.replace("│", " ").split())
    for flag in ("--batch-size", "--minibatch-size", "--num-iterations"):
        line = text.split(flag, 1)[1][:80]
        assert "computed at runtime, do not set (refused)" in line, (flag, line)
    # the help opens with what the script does (its docstring's first paragraph; newcomer trial)
    name = script[: -len("_gnn.py")].upper()
    assert text.split("╭")[0].strip().split(" [OPTIONS] ")[1].startswith(f"Train {name} agents on a SMAC map"), text[:300]


def test_load_checkpoint_names_unreadable_files_and_diverged_weights(tmp_path):
    import models

    repo = Path(__file__).resolve().parents[1]
    info = sc2_envs.make_batched("2s3z", num_envs=1).get_env_info()
    text = tmp_path / "notes.pt"
    text.write_text("not a checkpoint")
    cut = tmp_path / "cut.pt"
    cut.write_bytes((repo / "checkpoints" / "2s3z_gnn.pt").read_bytes()[:4096])
    for bad, words in (
        (tmp_path / "missing.pt", "FileNotFoundError"),
        (tmp_path, "IsADirectoryError"),
        (text, "UnpicklingError"),
        (cut, "RuntimeError"),
    ):
        with pytest.raises(ValueError, match=f"cannot read checkpoint {bad}.*{words}") as exc:
            models.load_checkpoint(str(bad), info)
        assert "weights_only=False" not in str(exc.value)  # torch's unsafe advice is not passed on
    with pytest.raises(ValueError, match="checkpoint path 3: expected a file path"):
        models.load_checkpoint(3, info)
    for text in ("hello", "e", "epoch 1 loss 0.3"):  # torch.load: KeyError: 101, IndexError, ...
        odd = tmp_path / "odd.pt"
        odd.write_text(text)
        with pytest.raises(ValueError, match=f"cannot read checkpoint {odd}: not a torch file"):
            models.load_checkpoint(str(odd), info)
    for device, words in (("meta", "device must be 'cpu' or a CUDA device"), ("cpu:1", "index 0 only")):
        with pytest.raises(ValueError, match=words):
            models.load_checkpoint(str(repo / "checkpoints" / "2s3z_gnn.pt"), info, device=device)
    ckpt = torch.load(repo / "checkpoints" / "2s3z_gnn.pt", weights_only=True)
    name = next(iter(ckpt["actors"]))
    ckpt["actors"][name] = torch.full_like(ckpt["actors"][name], float("nan"))
    torch.save(ckpt, tmp_path / "nan.pt")
    with pytest.raises(ValueError, match=f"actors.{name} holds .* non-finite values"):
        models.load_checkpoint(str(tmp_path / "nan.pt"), info)
    ckpt["config"]["classes"] = "stalker"
    torch.save(ckpt, tmp_path / "classes.pt")
    with pytest.raises(ValueError, match="config.classes = 'stalker'; expected a list of unit class names"):
        models.load_checkpoint(str(tmp_path / "classes.pt"), info)


def test_save_checkpoint_refuses_a_diverged_model(tmp_path):
    import models

    info = sc2_envs.make_batched("3m", num_envs=1).get_env_info()
    policy, critic = models.build_models(info, "gnn", hidden=16)
    with torch.no_grad():
        next(critic.parameters()).fill_(float("inf"))
    with pytest.raises(ValueError, match=r"save_checkpoint\(.*\) at 64 env steps: critic\..* non-finite"):
        models.save_checkpoint(str(tmp_path / "x.pt"), policy, critic, info, {}, global_step=64)
    assert not (tmp_path / "x.pt").exists()


def test_exp_name_with_a_path_separator_is_a_cli_error(capsys):
    from dataclasses import replace

    from conftest import load_algo

    mod = load_algo("happo_gnn")
    with pytest.raises(SystemExit):
        check_training_args(replace(mod.Args(), map=("3m",), num_envs=4, num_steps=8, total_timesteps=32, exp_name="../evil"))
    assert "--exp-name '../evil': expected a name without path separators" in capsys.readouterr().err


def test_smac_adapters_refuse_bool_agent_ids_and_name_unknown_units():
    from sc2_envs.adapters.smac_compat import StarCraft2Env

    env = StarCraft2Env("3m", seed=0)
    with pytest.raises(KeyError, match="agent id 0: no units yet; call reset"):
        env.get_unit_by_id(0)
    env.reset()
    with pytest.raises(ValueError, match=r"agent_id=True; expected an int in \[0, 3\)"):
        env.get_obs_agent(True)
    with pytest.raises(KeyError, match=r"agent id 5: expected one of \[0, 1, 2\]"):
        env.get_unit_by_id(5)
    assert env.get_obs_agent(np.int64(1)).shape == (env.get_obs_size(),)


@pytest.mark.parametrize("bad", [float("inf"), 1e20, 2.0**63, np.uint64(2**64 - 1), 9])
def test_starcraft2env_names_an_out_of_range_action_as_given(bad):
    from sc2_envs.adapters.smac_compat import StarCraft2Env

    env = StarCraft2Env("3m", seed=0)
    env.reset()
    acts = np.array([bad, 1, 1], dtype=np.uint64 if isinstance(bad, np.uint64) else None)
    with pytest.raises(ValueError, match=r"agent 0: action (.*) is out of range; expected an int in \[0, 9\)") as exc:
        env.step(acts)
    assert "-" not in str(exc.value).split("action ")[1].split(" ")[0]  # never the int64-wrapped value


def test_parallel_env_before_reset_and_unknown_agents_are_named():
    env = sc2_envs.parallel_env("3m", seed=0)
    with pytest.raises(RuntimeError, match=r"state\(\) called before reset\(\)"):
        env.state()  # was a zero vector: a state of no battle
    with pytest.raises(RuntimeError, match=r"step\(\) called before reset\(\); call reset\(\) first"):
        env.step({a: 1 for a in env.possible_agents})
    with pytest.raises(KeyError, match="agent 'agent_9': expected one of possible_agents"):
        env.observation_space("agent_9")
    with pytest.raises(KeyError, match="agent 'agent_9'"):
        env.action_space("agent_9")
    env.reset(seed=0)
    assert env.state().shape == (env.get_env_info()["state_shape"],)
    with pytest.raises(ValueError, match=r"unknown agents \[0, 1, 2\]"):  # int keys shown as ints, not as '0'
        env.step({0: 1, 1: 1, 2: 1})


@pytest.mark.parametrize(
    "positions, words",
    [
        ([["a", "b"]] * 5, r"ally_positions = .* hold strings or bools; expected \[5, 2\] numbers"),
        ([[True, True]] * 5, r"ally_positions hold bools; expected \[5, 2\] numbers"),  # was silently the point (1, 1)
        ([[1.0, 1.0]] * 4 + [[1.0]], r"ally_positions: expected \[5, 2\] numbers"),  # ragged
        ([[1.0 + 2j, 1.0]] * 5, r"ally_positions = .* hold complex numbers; expected \[5, 2\] real"),  # was 1.0
        (np.full((5, 2), 3 + 0j), r"hold complex numbers"),
    ],
)
def test_pinned_positions_must_be_numbers(positions, words):
    env = sc2_envs.make_batched("protoss_5_vs_5", num_envs=1, seed=0)
    enemy = [[20.0, 10.0 + i] for i in range(5)]
    with pytest.raises(ValueError, match=words):
        env.pin_scenario(["zealot"] * 5, ["zealot"] * 5, positions, enemy)


def test_make_batched_names_a_non_string_map_with_every_valid_name():
    for bad in (None, 3):
        with pytest.raises(ValueError, match=rf"unknown map or scenario {bad!r}; SMAC v1 maps: .*SMACv2 scenarios: "):
            sc2_envs.make_batched(bad, num_envs=1)
    with pytest.raises(TypeError, match="option prob_obs_enemy must be a probability"):
        sc2_envs.make_batched("protoss_5_vs_5", num_envs=1, prob_obs_enemy=True)


def test_parallel_env_flag_must_be_a_bool():
    with pytest.raises(TypeError, match="info_action_mask must be a bool, got 'yes'"):
        sc2_envs.parallel_env("3m", info_action_mask="yes")


# ---- found by a break-it review (2026-12-05) ----


def test_smacv2_positions_refuse_strings_and_are_checked_after_rounding_to_float32():
    sim = sc2_envs.make_batched("zerg_5_vs_5", 1, seed=0)
    with pytest.raises(ValueError, match=r"ally_positions = .* hold strings or bools; expected \[5, 2\] numbers"):
        sim.pin_scenario(["zergling"] * 5, ["zergling"] * 5, [["4", "16"]] * 5, [[20, 16]] * 5)
    # 31.999999999 < 32 in float64 but is 32.0 in the float32 state: off the map
    with pytest.raises(ValueError, match=r"ally position 0 = \(31\.999999999, 16\.0\) \(32\.0, 16\.0 in float32"):
        sim.pin_scenario(["zergling"] * 5, ["zergling"] * 5, [[31.999999999, 16]] * 5, [[20, 16]] * 5)
    sim.pin_scenario(["zergling"] * 5, ["zergling"] * 5, [[31.99, 16]] * 5, [[20, 16]] * 5)  # still on the map


def test_set_units_checks_positions_as_the_float32_state_holds_them():
    from sc2_envs import UnitPlacement as U

    sim = sc2_envs.make_batched("protoss_5_vs_5", 1, seed=0)
    sim.reset()
    allies = [U(31.99999999, 16)] + [U(5, 5 + 2 * i) for i in range(4)]
    with pytest.raises(ValueError, match=r"allies\[0\] .*: position \(31\.99999999, 16\) \(32\.0, 16\.0 in float32"):
        sim.set_units(0, allies, [U(25, 16)] * 5)


@pytest.mark.parametrize("map_name", ["3m", "protoss_5_vs_5"])
def test_unit_types_and_render_data_name_a_bad_env_index(map_name):
    sim = sc2_envs.make_batched(map_name, 2, seed=0)
    sim.reset()
    assert sim.unit_types(np.int64(1)) == sim.unit_types()[1]
    for bad, err in ((-1, ValueError), (2, ValueError), (1.0, TypeError), ("x", TypeError), (True, TypeError)):
        with pytest.raises(err, match=r"env_index must be .*\[0, 2\)"):
            sim.unit_types(bad)
        with pytest.raises(err, match=r"env_index must be .*\[0, 2\)"):
            sim.render_data(bad)


def test_mistyped_map_and_scenario_names_get_a_suggestion():
    with pytest.raises(ValueError, match=r"unknown map or scenario '2s3zz' \(did you mean '2s3z'\?\)"):
        sc2_envs.make_batched("2s3zz")
    with pytest.raises(ValueError, match=r"unknown map '3mm' \(did you mean '3m'\?\)"):
        sc2_envs.get_map("3mm")
    with pytest.raises(ValueError, match=r"did you mean 'protoss_5_vs_5'\?"):
        sc2_envs.make_batched("Protoss_5_vs5")
    from sc2_envs.smacv2 import get_scenario

    with pytest.raises(ValueError, match=r"unknown SMACv2 scenario 'terran_5_vs_6' \(did you mean 'terran_5_vs_5'\?\)"):
        get_scenario("terran_5_vs_6")
    with pytest.raises(ValueError, match=r"unknown map 'qqqq'; expected one of"):  # nothing close: no suggestion
        sc2_envs.get_map("qqqq")


@pytest.mark.parametrize(
    "typed, meant",
    [
        ("\uff12s\uff13z", "2s3z"),  # full-width digits (an East Asian input method)
        ("\uff4d\uff4d\uff4d", "MMM"),  # full-width letters, another case
        ("protoss\uff3f5\uff3fvs\uff3f5", "protoss_5_vs_5"),  # full-width low lines
    ],
)
def test_a_map_typed_in_compatibility_characters_gets_the_name_it_looks_like(typed, meant):
    with pytest.raises(ValueError, match=rf"\(did you mean '{meant}'\?\)"):
        sc2_envs.make_batched(typed)


def test_a_name_mistyped_twice_among_several_maps_gets_one_suggestion(capsys):
    from dataclasses import replace

    from conftest import load_algo

    base = replace(load_algo("happo_gnn").Args(), num_envs=4, num_steps=8, total_timesteps=32)
    with pytest.raises(SystemExit):
        check_training_args(replace(base, map=("3M", "3M")))
    assert capsys.readouterr().err.count("did you mean '3m'") == 1


def test_unsupported_smacv2_options_name_the_value_and_numpy_bools_pass():
    with pytest.raises(ValueError, match=r"option prob_obs_enemy=0\.5: the simulator supports only 1\.0"):
        sc2_envs.make_batched("protoss_5_vs_5", prob_obs_enemy=0.5)
    with pytest.raises(ValueError, match=r"option action_mask=False: the simulator supports only True"):
        sc2_envs.make_batched("protoss_5_vs_5", action_mask=False)
    sc2_envs.make_batched("protoss_5_vs_5", action_mask=np.True_)


@pytest.mark.parametrize(
    "options",
    [
        {"reward_scale_rate": 1e300},
        {"reward_scale_rate": 1e-300},
        {"reward_negative_scale": 1e308, "reward_only_positive": False},
        {"reward_defeat": -1e300},
        {"reward_death_value": 1e308},
    ],
)
def test_reward_options_beyond_float32_arithmetic_are_refused(options):
    with pytest.raises(ValueError, match=r"expected 0 or a magnitude in \[1e-15, 1e\+15\]"):
        sc2_envs.make_batched("3m", 2, seed=0, **options)


def test_reward_options_inside_the_range_give_finite_rewards():
    env = sc2_envs.make_batched("3m", 8, seed=0, reward_scale_rate=1e15, reward_defeat=-1e15, reward_only_positive=False)
    out = env.reset()
    gen = torch.Generator().manual_seed(0)
    for _ in range(80):
        out = env.step(random_actions(out["avail_actions"], gen))
        assert torch.isfinite(out["reward"]).all()


def test_random_actions_seed_and_generator_are_checked():
    mask = torch.ones(2, 3, 9, dtype=torch.bool)
    assert torch.equal(random_actions(mask, seed=np.int64(1)), random_actions(mask, seed=1))
    random_actions(mask, seed=2**64 - 1)
    for bad in (2**64, -1, 1.0, True):
        with pytest.raises(ValueError, match=r"seed must be a non-negative int below 2\*\*64"):
            random_actions(mask, seed=bad)
    with pytest.raises(TypeError, match=r"generator must be a torch.Generator .* got 3; pass an int as seed="):
        random_actions(mask, 3)


def test_eval_seed_refuses_none_and_names_what_it_takes():
    for bad in (None, True, 2.0, "1"):
        with pytest.raises(TypeError, match=r"eval_seed needs the run's seed \(a non-negative int or a SeedSequence\), got"):
            sc2_envs.eval_seed(bad)
    with pytest.raises(ValueError, match="a non-negative int .* got -1"):
        sc2_envs.eval_seed(-1)


def test_bools_mixed_into_lists_are_not_read_as_1():
    from sc2_envs.adapters import StarCraft2Env

    env = StarCraft2Env("3m", seed=0)
    env.reset()
    for acts in ([True, 1, 1], [1, 1, np.True_]):
        with pytest.raises(ValueError, match="holds a bool"):
            env.step(acts)
    batched = sc2_envs.make_batched("3m", 1, seed=0)
    batched.reset()
    with pytest.raises(TypeError, match="holds a bool"):
        batched.step([[True, 1, 1]])
    sim = sc2_envs.make_batched("zerg_5_vs_5", 1, seed=0)
    with pytest.raises(ValueError, match="ally_positions hold bools"):
        sim.pin_scenario(["zergling"] * 5, ["zergling"] * 5, [[10, 10]] * 4 + [[True, 10]], [[20, 16]] * 5)


def test_render_data_does_not_offer_none_and_an_extra_algorithm_record_is_refused(tmp_path):
    sim = sc2_envs.make_batched("3m", 2, seed=0)
    sim.reset()
    with pytest.raises(TypeError, match=r"env_index must be an int in \[0, 2\), got None"):
        sim.render_data(None)
    from models import build_models, save_checkpoint, trained_by

    info = sim.get_env_info()
    policy, critic = build_models(info, "mlp", hidden=16)
    with pytest.raises(ValueError, match=r"extra keys \['algorithm'\] would replace"):
        save_checkpoint(str(tmp_path / "c.pt"), policy, critic, info, {}, extra={"algorithm": 5})
    assert trained_by({"algorithm": 5, "args": {"seed": 2}}) == "seed 2"  # a hand-edited record still lists


def test_actions_in_foreign_byte_order_read_only_or_on_meta():
    import warnings

    env = sc2_envs.make_batched("3m", 2, seed=0)
    env.reset()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # torch's "not writable" warning is not the user's problem
        a = env.step(np.ones((2, 3), dtype=">i8"))
        b = env.step(np.broadcast_to(np.int64(1), (2, 3)))
    assert a["obs"].shape == b["obs"].shape == (2, 3, 30)
    with pytest.raises(TypeError, match="holding values, got a meta tensor"):
        env.step(torch.ones(2, 3, dtype=torch.int64, device="meta"))


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"unit_overrides": {"marin": {"health": 5}}}, r"unit_overrides key 'marin' \(did you mean 'marine'\?\)"),
        ({"unit_overrides": {"marine": {"helth": 5}}}, r"stat 'helth' \(did you mean 'health'\?\) is not a unit stat"),
        (
            {"unit_overrides": {"marine": {"health": -5}}},
            r"\['health'\] = -5; expected a finite number >= 0 \(> 0 for health\)",
        ),
        ({"episode_limit": 0}, r"episode_limit 0; expected an int >= 1"),
        ({"episode_limit": 2.5}, r"episode_limit 2\.5; expected an int >= 1"),
        ({"a_race": "X"}, r"a_race 'X'; expected one of \('T', 'P', 'Z'\)"),
        ({"unit_type_bits": -1}, r"unit_type_bits -1; expected an int >= 0"),
        ({"attack_point": (40.0, 16.0)}, r"attack_point \(40\.0, 16\.0\); expected \(x, y\) numbers on the 32x32 map"),
        ({"allies": ()}, r"allies must be a non-empty tuple of SpawnGroup, got \(\)"),
        ({"unit_overrides": {"marine": {"damage": 600}}}, r"stat 'damage' is a unit stat the simulator takes from the unit"),
        ({"unit_overrides": {"marine": {"static": "yes"}}}, r"\['static'\] = 'yes'; expected a bool"),
        ({"unit_overrides": {"marine": "health"}}, r"unit_overrides\['marine'\] = 'health'; expected a dict"),
        ({"ally_type_order": "marine"}, r"ally_type_order 'marine'; expected a tuple of unit type names"),
        ({"ally_type_order": (["marine"],)}, r"ally_type_order \['marine'\] is not a known unit type"),
        ({"unit_type_bits": 1, "ally_type_order": ("marauder",)}, r"ally_type_order \('marauder',\) lacks \['marine'\]"),
        ({"map_type": 5}, r"map_type 5; expected a str"),
    ],
)
def test_a_custom_map_spec_is_checked_field_by_field(change, message):
    import dataclasses

    with pytest.raises(ValueError, match=r"map '3m': .*" + message):
        dataclasses.replace(sc2_envs.get_map("3m"), **change)


def test_a_missing_optional_library_is_named_with_its_install_command():
    from sc2_envs.adapters.extras import require

    require("numpy", "test", "this test")  # installed: nothing happens
    with pytest.raises(ModuleNotFoundError, match=r"examples/x\.py needs no_such_lib_xyz, .* pip install 'sc2-envs\[rllib\]'"):
        require("no_such_lib_xyz", "rllib", "examples/x.py")


def test_a_mistyped_wrapper_keyword_is_suggested_and_the_named_keywords_are_real():
    import inspect

    from sc2_envs.sim.env import _SIM_KEYWORDS, SMACSim
    from sc2_envs.sim.options import WRAPPER_KEYWORDS
    from sc2_envs.wrappers.pettingzoo import SC2ParallelEnv

    with pytest.raises(ValueError, match=r"unknown option\(s\) \['render'\]; 'render' \(did you mean 'render_mode'\?\)"):
        sc2_envs.parallel_env("3m", render="rgb_array")
    assert set(_SIM_KEYWORDS) == set(inspect.signature(SMACSim.__init__).parameters) - {"self", "map_name", "options"}
    assert set(WRAPPER_KEYWORDS) <= set(inspect.signature(SC2ParallelEnv.__init__).parameters)


def test_every_overridable_stat_reaches_the_simulators_unit_table():
    """What MapSpec accepts as an override the simulator applies (found in review: damage was accepted and ignored)."""
    import dataclasses

    from sc2_envs.maps import OVERRIDABLE_STATS
    from sc2_envs.sim.state import UnitTable
    from sc2_envs.units import UNITS

    base_spec = sc2_envs.get_map("3m")
    base = UnitTable.build(base_spec, torch.device("cpu"))
    for stat in OVERRIDABLE_STATS:
        old = getattr(UNITS["marine"], stat)
        new = (not old) if isinstance(old, bool) else float(old) + 1.0
        table = UnitTable.build(dataclasses.replace(base_spec, unit_overrides={"marine": {stat: new}}), torch.device("cpu"))
        changed = [
            f.name
            for f in dataclasses.fields(UnitTable)
            if torch.is_tensor(getattr(base, f.name)) and not torch.equal(getattr(base, f.name), getattr(table, f.name))
        ]
        assert changed, f"override of {stat} changed nothing in the unit table"


def test_a_runs_file_and_track_without_wandb_are_one_line_errors_before_the_run(tmp_path, monkeypatch, capsys):
    # found by a tester: a file named runs gave a FileExistsError traceback, and --track without wandb a
    # ModuleNotFoundError after the run folder was written
    import importlib.util

    from conftest import load_algo

    from sc2_envs.training.harness import TrainingRun

    mod = load_algo("happo_gnn")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "runs").write_text("")
    monkeypatch.setattr("sys.argv", ["happo_gnn.py", "--map", "3m"])
    with pytest.raises(SystemExit):
        TrainingRun.from_command_line(mod.Args, "happo_gnn.py", mod.RESUME_CHANGEABLE)
    assert "the run folders' root 'runs' is a file; expected a folder (new or existing)" in capsys.readouterr().err
    if importlib.util.find_spec("wandb") is not None:
        pytest.skip("wandb is installed: --track is usable here")
    (tmp_path / "runs").unlink()
    monkeypatch.setattr("sys.argv", ["happo_gnn.py", "--map", "3m", "--track"])
    with pytest.raises(SystemExit):
        TrainingRun.from_command_line(mod.Args, "happo_gnn.py", mod.RESUME_CHANGEABLE)
    assert "--track: needs wandb (pip install wandb), which is not installed" in capsys.readouterr().err
    assert not (tmp_path / "runs").exists()


def test_a_wrapper_keyword_or_a_bad_pinned_scenario_given_to_make_batched_is_named_plainly():
    # found by a tester: backend= read "'backend' (did you mean 'backend'?)", and scenario={'foo': 1} a TypeError
    # naming an internal method
    with pytest.raises(ValueError, match="'backend' is a keyword of the PettingZoo / Gymnasium wrappers, not of make_batched"):
        sc2_envs.make_batched("3m", num_envs=2, backend="sc2")
    with pytest.raises(
        ValueError, match=r"option scenario=\{'foo': 1\}: expected the keys allies and enemies .*unknown: \['foo'\]"
    ):
        sc2_envs.make_batched("protoss_5_vs_5", num_envs=1, scenario={"foo": 1}, kernel="torch")
    team = ["stalker"] * 5  # every pin_scenario argument passes, env_index among them (found by a reviewer)
    env = sc2_envs.make_batched("protoss_5_vs_5", num_envs=2, scenario={"allies": team, "enemies": team, "env_index": 1},
                                kernel="torch")  # fmt: skip
    env.reset()
    assert env.unit_types(1)[0] == team


def test_reset_options_of_a_smac_gymnasium_env_and_per_game_seeds_of_the_full_game_vector_env_are_refused():
    # found by a tester: SMAC's Gymnasium env ignored reset(options={...}) silently, and LiteFullGameVectorEnv's
    # answer to reset(seed=[1, 2]) (Gymnasium's per-env seeds) said only "expected an int"
    import gymnasium

    env = gymnasium.make("sc2_envs/3m-v0", lenient_actions=True)
    with pytest.raises(ValueError, match=r"options=\{'junk': 1\}; expected None or \{\}"):
        env.reset(seed=1, options={"junk": 1})
    assert env.reset(seed=1, options={})[0].shape == (90,)
    from sc2_envs.lite.env import LiteFullGameVectorEnv

    venv = LiteFullGameVectorEnv(num_envs=2, game_steps_per_episode=64)
    with pytest.raises(ValueError, match=r"seed=\[1, 2\]: one seed per game is not supported here; expected an int in"):
        venv.reset(seed=[1, 2])
