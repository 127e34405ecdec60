"""How idle OpenMP threads wait in the training scripts (sc2_envs.training.wait_policy)."""

import ast

import pytest
from conftest import REPO

from sc2_envs.training.wait_policy import DEFAULT_SPIN_COUNT, SPIN_COUNT_VAR, WAIT_POLICY_VAR, wait_policy_line

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
    ("policy", "spin", "expected"),
    [
        (
            None,
            "1000",
            "idle OpenMP threads spin GOMP_SPINCOUNT=1000 polls, then sleep (OMP_WAIT_POLICY=PASSIVE to sleep at once)",
        ),
        (" passive ", None, "idle OpenMP threads sleep at once (OMP_WAIT_POLICY=PASSIVE)"),
        ("ACTIVE", None, "idle OpenMP threads spin (ACTIVE: slow on shared cores) (OMP_WAIT_POLICY=ACTIVE)"),
        ("PASSIVE", "50", "idle OpenMP threads spin GOMP_SPINCOUNT=50 polls, then sleep (OMP_WAIT_POLICY=PASSIVE)"),
        (
            None,
            None,
            "idle OpenMP threads spin libgomp's default ~3 ms, then sleep (slow on shared cores) "
            "(OMP_WAIT_POLICY=PASSIVE to sleep at once)",
        ),
        (
            "bogus",
            None,
            "idle OpenMP threads spin libgomp's default ~3 ms, then sleep (slow on shared cores); "
            "libgomp ignored OMP_WAIT_POLICY='bogus' (expected PASSIVE or ACTIVE)",
        ),
    ],
)
def test_first_screen_line_says_how_idle_threads_wait(monkeypatch, policy, spin, expected):
    for var, value in ((WAIT_POLICY_VAR, policy), (SPIN_COUNT_VAR, spin)):
        if value is None:
            monkeypatch.delenv(var, raising=False)
        else:
            monkeypatch.setenv(var, value)
    line = wait_policy_line()
    assert line.startswith("threads: torch ") and line.endswith(expected)


@pytest.mark.parametrize("script", SCRIPTS)
def test_script_sets_the_spin_count_before_importing_torch(script):
    """libgomp reads its variables once, when torch loads it: the default must be set first, and only
    where the user set neither variable."""
    tree = ast.parse((REPO / "algos" / script).read_text())
    expected = (
        f"if not (os.environ.get({WAIT_POLICY_VAR!r}) or os.environ.get({SPIN_COUNT_VAR!r})):\n"
        f"    os.environ[{SPIN_COUNT_VAR!r}] = {DEFAULT_SPIN_COUNT!r}"
    )
    set_line = torch_line = None
    for node in tree.body:
        src = ast.unparse(node)
        if set_line is None and src == expected:
            set_line = node.lineno
        if torch_line is None and isinstance(node, ast.Import | ast.ImportFrom) and "torch" in src:
            torch_line = node.lineno
    assert set_line is not None, f"algos/{script} does not set {SPIN_COUNT_VAR} by default"
    assert set_line < torch_line, f"algos/{script} sets {SPIN_COUNT_VAR} after importing torch (line {torch_line})"
