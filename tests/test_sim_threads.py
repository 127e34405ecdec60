"""The simulator's automatic CPU thread count never overrides the user's choice."""

from __future__ import annotations

import pytest
import torch

from sc2_envs import make_batched
from sc2_envs.sim.runtime import threads


@pytest.fixture
def restore_threads(monkeypatch):
    before = torch.get_num_threads()
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.delenv("MKL_NUM_THREADS", raising=False)
    monkeypatch.setattr(threads, "_auto_choice", None)
    monkeypatch.setattr(threads, "_explicit_choice", None)
    monkeypatch.setattr(threads, "_announced", False)
    yield
    torch.set_num_threads(before)


def test_rule_one_thread_below_the_parallel_threshold_and_capped_by_cpus(monkeypatch):
    monkeypatch.setattr(threads, "usable_cpus", lambda: 16)
    monkeypatch.setattr(threads.os, "getloadavg", lambda: (0.0, 0.0, 0.0))
    assert threads.auto_num_threads(1) == threads.auto_num_threads(threads.PARALLEL_MIN_ENVS - 1) == 1
    assert threads.auto_num_threads(4 * threads.ENVS_PER_THREAD) == 4
    assert threads.auto_num_threads(10**6) == 16
    monkeypatch.setattr(threads.os, "getloadavg", lambda: (15.2, 0.0, 0.0))  # a busy machine: one thread
    assert threads.auto_num_threads(10**6) == 1
    assert threads.auto_num_threads(10**6, "cuda") is None


def test_automatic_choice_is_applied_and_announced_once(restore_threads, monkeypatch, capsys):
    monkeypatch.setattr(threads, "_THREADS_AT_IMPORT", torch.get_num_threads())
    torch.set_num_threads(2)
    monkeypatch.setattr(threads, "_THREADS_AT_IMPORT", 2)  # as if torch's default were 2
    env = make_batched("3m", num_envs=8, kernel="torch")
    assert env.num_threads == 1 and torch.get_num_threads() == 1
    assert "torch.set_num_threads(1) for a 8-env CPU simulator (was 2" in capsys.readouterr().err
    make_batched("3m", num_envs=4, kernel="torch")  # our own earlier choice may be revised; no second message
    assert capsys.readouterr().err == ""


def test_explicit_choices_win(restore_threads, monkeypatch):
    monkeypatch.setattr(threads, "_THREADS_AT_IMPORT", torch.get_num_threads())
    torch.set_num_threads(2 if threads._THREADS_AT_IMPORT != 2 else 3)  # the user's own set_num_threads
    mine = torch.get_num_threads()
    assert make_batched("3m", num_envs=8, kernel="torch").num_threads == mine and torch.get_num_threads() == mine
    assert make_batched("3m", num_envs=8, num_threads=1).num_threads == 1 and torch.get_num_threads() == 1
    torch.set_num_threads(threads._THREADS_AT_IMPORT)
    monkeypatch.setenv("OMP_NUM_THREADS", "2")  # the environment variable counts as a choice too
    assert make_batched("3m", num_envs=8, kernel="torch").num_threads == threads._THREADS_AT_IMPORT


@pytest.mark.parametrize("bad, err", [(0, ValueError), (-2, ValueError), (1.5, TypeError), (True, TypeError)])
def test_bad_num_threads_is_named(bad, err):
    with pytest.raises(err, match=f"got {bad!r}"):
        make_batched("3m", num_envs=2, num_threads=bad)


def test_an_explicit_count_is_kept_by_later_automatic_simulators(restore_threads, monkeypatch):
    """A training script passes its thread count to its training envs; the evaluation envs it makes
    later without ``num_threads`` must not drop it to the automatic one thread (they did: training
    ran on one thread whatever ``--torch-threads`` said, when it equalled torch's default)."""
    monkeypatch.setattr(threads, "_THREADS_AT_IMPORT", 2)  # torch's default 2, and the user wants 2
    assert make_batched("3m", num_envs=8, num_threads=2).num_threads == 2
    assert make_batched("3m", num_envs=8, kernel="torch").num_threads == 2 and torch.get_num_threads() == 2
    torch.set_num_threads(3)  # a later explicit set_num_threads is the user's too
    assert make_batched("3m", num_envs=8, kernel="torch").num_threads == 3


def test_explicit_count_caps_the_numba_kernels_threads(restore_threads):
    """A run told to use one thread steps its envs on one (the kernels split a batch into numba.get_num_threads() chunks)."""
    numba = pytest.importorskip("numba")
    before = numba.get_num_threads()
    try:
        env = make_batched("3m", num_envs=64, num_threads=1, kernel="numba")
        assert numba.get_num_threads() == 1
        out = env.reset(seed=0)
        env.step(
            out["avail_actions"].to(torch.int64).argmax(-1)
        )  # a batch at the threaded threshold (tick.PARALLEL_MIN_ENVS = 64)
        assert numba.get_num_threads() == 1
        big = numba.config.NUMBA_NUM_THREADS + 5  # more than the pool holds: capped at its size, not an error
        make_batched("3m", num_envs=4, num_threads=big, kernel="numba")
        assert numba.get_num_threads() == numba.config.NUMBA_NUM_THREADS
    finally:
        numba.set_num_threads(before)


def test_numba_path_leaves_torch_threads_alone(restore_threads, monkeypatch, capsys):
    """The numba step runs no torch op: an automatic simulator on it must not change the process's torch
    count (it did: a one-env Gymnasium env set one thread for the user's own networks)."""
    pytest.importorskip("numba")
    torch.set_num_threads(2)
    monkeypatch.setattr(threads, "_THREADS_AT_IMPORT", 2)  # as if torch's default were 2
    for b in (1, 64, 1024):
        env = make_batched("3m", num_envs=b, kernel="numba")
        assert env.kernel == "numba" and env.num_threads == 2 and torch.get_num_threads() == 2
    assert capsys.readouterr().err == ""
    assert make_batched("3m", num_envs=8, kernel="torch").num_threads == 1  # the torch path keeps its rule
