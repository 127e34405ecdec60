"""``benchmarks/kernel_first_use.py``: its argument checks, and a failing child reported with its stderr."""

import pytest
from conftest import load_algo


def _module():
    return load_algo("kernel_first_use", "benchmarks")


@pytest.mark.parametrize(
    "kw,match",
    [
        (dict(configs=["2s3z"]), "map:num_envs"),
        (dict(configs=["2s3z:0"]), "'2s3z:0'"),
        (dict(configs=[":4"]), "':4'"),
        (dict(rounds=0), "--rounds >= 1"),
        (dict(steps=-1), "--steps >= 0"),
        (dict(baseline_tree=["/nonexistent/tree"]), "holds no sc2_envs"),
        (dict(background=True, baseline_tree=["."]), "drop --baseline-tree"),
        (dict(configs=["nosuchmap:1"]), "'nosuchmap' is neither a SMAC v1 map nor a SMACv2 scenario"),
    ],
)
def test_bad_arguments_are_named(kw, match):
    m = _module()
    with pytest.raises(ValueError, match=match):
        m.check_args(m.Args(**kw))


def test_a_failing_child_is_reported_with_its_stderr(tmp_path):
    m = _module()
    (tmp_path / "sc2_envs").mkdir()
    (tmp_path / "sc2_envs" / "__init__.py").write_text("raise ImportError('broken tree for the test')\n")
    with pytest.raises(RuntimeError, match="broken tree for the test"):
        m.run_child(tmp_path, str(tmp_path / "cache"), m.Args(configs=["3m:1"], steps=0))
