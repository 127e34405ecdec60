"""The OpenMP wait policy of the training scripts (sc2_envs.training.wait_policy)."""

import ast

import pytest
from conftest import REPO

from sc2_envs.training.wait_policy import DEFAULT, WAIT_POLICY_VAR, wait_policy_line

SCRIPTS = (
    "happo_gnn.py",
    "hatrpo_gnn.py",
    "a3c_upgo.py",
    "bc_reweight.py",
    "bc_select.py",
    "eval_fullgame.py",
    "eval_transfer.py",
)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("PASSIVE", "OpenMP wait policy PASSIVE (idle threads sleep; OMP_WAIT_POLICY=ACTIVE to spin)"),
        ("passive", "OpenMP wait policy PASSIVE (idle threads sleep; OMP_WAIT_POLICY=ACTIVE to spin)"),
        ("ACTIVE", "OpenMP wait policy ACTIVE (idle threads spin: slow on shared cores; OMP_WAIT_POLICY=PASSIVE to sleep)"),
        (" passive ", "OpenMP wait policy PASSIVE (idle threads sleep; OMP_WAIT_POLICY=ACTIVE to spin)"),
        (None, "OpenMP wait policy libgomp's default (spin, then sleep; OMP_WAIT_POLICY=PASSIVE to sleep at once)"),
        ("", "OpenMP wait policy libgomp's default (spin, then sleep; OMP_WAIT_POLICY=PASSIVE to sleep at once)"),
        (
            "bogus",
            "OpenMP wait policy libgomp's default (spin, then sleep): it ignored OMP_WAIT_POLICY='bogus'; expected PASSIVE or ACTIVE",
        ),
    ],
)
def test_first_screen_line_names_the_policy_in_effect(monkeypatch, value, expected):
    monkeypatch.delenv("GOMP_SPINCOUNT", raising=False)
    if value is None:
        monkeypatch.delenv(WAIT_POLICY_VAR, raising=False)
    else:
        monkeypatch.setenv(WAIT_POLICY_VAR, value)
    line = wait_policy_line()
    assert line.startswith("threads: torch ") and line.endswith(expected)


def test_first_screen_line_names_a_spin_count(monkeypatch):
    monkeypatch.setenv(WAIT_POLICY_VAR, "PASSIVE")
    monkeypatch.setenv("GOMP_SPINCOUNT", "10000")
    assert wait_policy_line().endswith("; GOMP_SPINCOUNT=10000 sets how long idle threads spin before they sleep")


@pytest.mark.parametrize("script", SCRIPTS)
def test_script_sets_the_default_before_importing_torch(script):
    """libgomp reads OMP_WAIT_POLICY once, when torch loads it: the default must be set first."""
    tree = ast.parse((REPO / "algos" / script).read_text())
    set_line = torch_line = None
    for node in tree.body:
        src = ast.unparse(node)
        if set_line is None and src == f"os.environ[{WAIT_POLICY_VAR!r}] = os.environ.get({WAIT_POLICY_VAR!r}) or {DEFAULT!r}":
            set_line = node.lineno
        if torch_line is None and isinstance(node, ast.Import | ast.ImportFrom) and "torch" in src:
            torch_line = node.lineno
    assert set_line is not None, f"algos/{script} does not set {WAIT_POLICY_VAR} by default"
    assert set_line < torch_line, f"algos/{script} sets {WAIT_POLICY_VAR} after importing torch (line {torch_line})"
