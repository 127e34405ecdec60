"""benchmarks/train_sps.py: which training scripts it times, checked before any run starts."""

from __future__ import annotations

import pytest
from conftest import load_algo

sps = load_algo("train_sps", "benchmarks")


@pytest.mark.parametrize("script", ["a3c_upgo.py", "eval_transfer.py", "bc_select.py", "../algos/happo_gnn.py", "x.py", ""])
def test_a_script_it_cannot_time_is_one_line_error(script, monkeypatch):
    # found in a review: a3c_upgo.py, bc_*.py and eval_transfer.py were accepted (and listed as choices),
    # then failed with a traceback on their first run: they lack --eval-interval / print no sps=
    monkeypatch.setattr(sps, "run_once", lambda *a: pytest.fail("a run started"))
    with pytest.raises(SystemExit) as e:
        sps.main(sps.Args(script=script, rounds=1))
    assert str(e.value) == f"--script {script!r}: expected a training script of algos/ (happo_gnn.py, hatrpo_gnn.py)"


def test_every_timed_script_takes_the_flags_it_is_given():
    for name in sps.SCRIPTS:
        text = (sps.REPO / "algos" / name).read_text()
        assert all(
            f"    {field}:" in text for field in ("map", "total_timesteps", "eval_interval", "eval_episodes", "save_model")
        )
        assert "progress.update(" in text, name  # sc2_envs.runs' progress line, with sps=


def test_a_baseline_tree_without_the_script_is_refused(tmp_path, monkeypatch):
    (tmp_path / "algos").mkdir()
    (tmp_path / "algos" / "happo_gnn.py").write_text("")
    monkeypatch.setattr(sps, "run_once", lambda *a: pytest.fail("a run started"))
    with pytest.raises(SystemExit, match=r"no algos/hatrpo_gnn.py there"):
        sps.main(sps.Args(script="hatrpo_gnn.py", rounds=1, baseline_tree=str(tmp_path)))


def test_leading_environment_settings_are_split_from_the_flags():
    assert sps.split_env(["SC2_ENVS_KEEP_FREED_MEMORY=0", "OMP_NUM_THREADS=1", "--torch-threads", "1"]) == (
        {"SC2_ENVS_KEEP_FREED_MEMORY": "0", "OMP_NUM_THREADS": "1"},
        ["--torch-threads", "1"],
    )
    # after the first flag a VAR=value word is that flag's value; lower-case words are never settings
    assert sps.split_env(["--exp-name", "A=1"]) == ({}, ["--exp-name", "A=1"])
    assert sps.split_env(["a=1"]) == ({}, ["a=1"])
    assert sps.split_env([]) == ({}, [])


def test_a_variant_runs_with_its_environment(tmp_path, monkeypatch):
    seen = {}

    def fake_run(cmd, cwd, env, capture_output, text, timeout):
        seen["cmd"], seen["env"] = cmd, env

        class Out:
            returncode, stdout, stderr = 0, "iteration 1/1 sps=123 env=1%\n", ""

        return Out()

    monkeypatch.setattr(sps.subprocess, "run", fake_run)
    flags = sps.parse_variant("glibc-defaults=SC2_ENVS_KEEP_FREED_MEMORY=0 --torch-threads 1")[1]
    assert sps.run_once(sps.REPO, sps.Args(), flags, tmp_path) == (123, 1)
    assert seen["env"]["SC2_ENVS_KEEP_FREED_MEMORY"] == "0"
    assert seen["cmd"][-2:] == ["--torch-threads", "1"] and "SC2_ENVS_KEEP_FREED_MEMORY=0" not in seen["cmd"]
