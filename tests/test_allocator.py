"""``sc2_envs.training.allocator``: the training scripts' glibc tuning (freed memory kept, no page fault per pass)."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from pathlib import Path

import pytest

from sc2_envs.training import allocator

REPO = Path(__file__).resolve().parents[1]
GLIBC = platform.libc_ver()[0] == "glibc"

# A steady training-like loop (an MLP's forward and backward on 8,192 rows, activations of 2-8 MiB
# allocated and freed every pass), run in a fresh process; prints the start-up line and the minor
# page faults of the last 30 passes.
LOOP = """
import resource, torch
from sc2_envs.training import allocator
line = allocator.keep_freed_memory()
torch.manual_seed(0)
net = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 64))
x = torch.randn(8192, 64)
def one_pass():
    net(x).square().mean().backward()
for _ in range(10):
    one_pass()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(30):
    one_pass()
print(line)
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def run_loop(value: str | None) -> tuple[str, int]:
    env = {k: v for k, v in os.environ.items() if k != allocator.ENV_VAR}
    if value is not None:
        env[allocator.ENV_VAR] = value
    env["PYTHONPATH"] = str(REPO)
    out = subprocess.run([sys.executable, "-c", LOOP], capture_output=True, text=True, env=env, timeout=120, check=True)
    line, faults = out.stdout.strip().splitlines()[-2:]
    return line, int(faults)


@pytest.mark.parametrize(("value", "expected"), [(None, True), ("", True), (" 1 ", True), ("1", True), ("0", False)])
def test_enabled_reads_the_variable(monkeypatch, value, expected):
    if value is None:
        monkeypatch.delenv(allocator.ENV_VAR, raising=False)
    else:
        monkeypatch.setenv(allocator.ENV_VAR, value)
    assert allocator.enabled() is expected


@pytest.mark.parametrize("bad", ["yes", "2", "true", "off"])
def test_a_bad_value_is_refused_by_name(monkeypatch, bad):
    monkeypatch.setenv(allocator.ENV_VAR, bad)
    with pytest.raises(ValueError, match=rf"SC2_ENVS_KEEP_FREED_MEMORY='{bad}': expected '1' .* or '0'"):
        allocator.keep_freed_memory()


@pytest.mark.skipif(not GLIBC, reason="the tuning applies to glibc only; other C libraries are left as they are")
def test_a_steady_loop_stops_page_faulting():
    """A pass allocates ~36 MiB of activations and gradients (~9,000 pages of 4 KiB); faulted in
    again at every pass, 30 passes would take ~270,000 page faults. With the tuning they take at most
    a late first touch (1 to 4,609 faults in repeated runs here), bounded below one pass's worth over
    all 30. glibc's defaults are not bounded either way: their adaptive thresholds gave 1 to 155,000
    faults over the same 30 passes in repeated runs."""
    line, faults = run_loop(None)
    assert line.startswith("allocator: glibc keeps freed memory (mmap threshold 32 MiB, trim threshold 1 GiB")
    assert faults < 9_000, f"{faults} minor page faults in 30 steady passes with the tuning; expected under one pass's ~9,000"


def test_zero_leaves_the_defaults_and_says_so():
    line, _ = run_loop("0")
    assert line == "allocator: glibc's defaults (SC2_ENVS_KEEP_FREED_MEMORY=0)"


def test_training_script_refuses_a_bad_value_in_one_line(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(REPO), OMP_NUM_THREADS="1", SC2_ENVS_KEEP_FREED_MEMORY="on")
    res = subprocess.run(
        [sys.executable, str(REPO / "algos" / "happo_gnn.py"), "--map", "3m", "--num-envs", "2", "--num-steps", "4"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        check=False,
    )
    assert res.returncode == 2, res.stderr
    assert res.stderr.strip().splitlines()[-1] == (
        "happo_gnn.py: error: SC2_ENVS_KEEP_FREED_MEMORY='on': expected '1' (keep freed memory, the default) "
        "or '0' (glibc's defaults)"
    )
    assert not (tmp_path / "runs").exists()


def test_turning_it_off_after_it_was_applied_says_it_still_holds():
    code = (
        "import os\nfrom sc2_envs.training import allocator as a\nfirst = a.keep_freed_memory()\n"
        "os.environ[a.ENV_VAR] = '0'\nprint(first)\nprint(a.keep_freed_memory())\n"
    )
    env = dict(os.environ, PYTHONPATH=str(REPO))
    env.pop(allocator.ENV_VAR, None)
    first, second = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60, check=True
    ).stdout.splitlines()
    assert second.startswith(first)  # the tuning (or glibc's absence) is what holds, not glibc's defaults
    if GLIBC:
        assert second.endswith("applied earlier in this process, so SC2_ENVS_KEEP_FREED_MEMORY=0 no longer takes effect here")
