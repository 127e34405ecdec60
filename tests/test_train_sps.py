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
