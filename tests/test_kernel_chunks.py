"""``sim.runtime.chunks``: the envs of a threaded kernel call split into ranges, one thread per range."""

import os
import threading
import time

import numpy as np
import pytest

from sc2_envs.sim.runtime.chunks import chunk_bounds, run_chunks


@pytest.mark.parametrize("total,n", [(0, 1), (1, 1), (1, 4), (7, 2), (64, 2), (65, 3), (5, 8), (4096, 16)])
def test_bounds_cover_every_index_once_in_order(total, n):
    b = chunk_bounds(total, n)
    assert len(b) <= n
    covered = [i for lo, hi in b for i in range(lo, hi)]
    assert covered == list(range(total))
    assert all(hi > lo for lo, hi in b)


@pytest.mark.parametrize("total,n", [(-1, 2), (3, 0), (3, -1)])
def test_bad_bounds_are_refused_by_name(total, n):
    with pytest.raises(ValueError, match=f"total={total}, n_chunks={n}"):
        chunk_bounds(total, n)


def test_each_range_runs_once_the_first_in_the_calling_thread():
    seen, lock = [], threading.Lock()
    out = np.zeros(100, np.int64)

    def call(lo, hi):
        out[lo:hi] += 1
        with lock:
            seen.append((lo, hi, threading.current_thread() is threading.main_thread()))

    run_chunks(call, 100, 3)
    assert (out == 1).all()
    assert sorted((lo, hi) for lo, hi, _ in seen) == chunk_bounds(100, 3)
    assert [main for lo, _, main in seen if lo == 0] == [True]
    assert not any(main for lo, _, main in seen if lo != 0)


def test_ranges_overlap_in_time():
    """Two ranges that each wait for the other finish: they run at the same time, not one after the other."""
    barrier = threading.Barrier(2, timeout=10)
    run_chunks(lambda lo, hi: barrier.wait(), 2, 2)


def test_an_error_is_raised_after_every_range_has_ended():
    done = []

    def call(lo, hi):
        if lo == 0:
            raise RuntimeError("range 0 failed")
        time.sleep(0.05)
        done.append(lo)

    with pytest.raises(RuntimeError, match="range 0 failed"):
        run_chunks(call, 4, 4)
    assert sorted(done) == [1, 2, 3]  # the others were waited for, not left writing


def test_an_error_on_a_pool_thread_reaches_the_caller():
    def call(lo, hi):
        if lo == 2:
            raise ValueError(f"bad range {lo}")

    with pytest.raises(ValueError, match="bad range 2"):
        run_chunks(call, 4, 2)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_gets_a_pool_of_its_own():
    """The parent's pool threads do not exist in a forked child; a child's threaded call must not hang."""
    run_chunks(lambda lo, hi: None, 4, 2)  # the parent's pool exists now
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        try:
            out = np.zeros(8, np.int64)
            run_chunks(lambda lo, hi: out.__setitem__(slice(lo, hi), 1), 8, 2)
            os.write(w, b"ok" if out.sum() == 8 else b"bad")
        finally:
            os._exit(0)
    os.close(w)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        done, _ = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        time.sleep(0.02)
    else:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
        pytest.fail("the forked child's threaded call hung")
    assert os.read(r, 8) == b"ok"
    os.close(r)


def test_env_ids_are_split_into_contiguous_slices_or_passed_whole():
    from sc2_envs.sim.runtime.chunks import run_env_ids

    ids = np.arange(10, 17, dtype=np.int64)
    seen, lock = [], threading.Lock()

    def call(chunk):
        with lock:
            seen.append((chunk.tolist(), chunk.flags.c_contiguous))

    run_env_ids(call, ids, 1)
    assert seen == [(ids.tolist(), True)]
    seen.clear()
    run_env_ids(call, ids, 3)
    assert sorted(seen) == [([10, 11, 12], True), ([13, 14, 15], True), ([16], True)]
