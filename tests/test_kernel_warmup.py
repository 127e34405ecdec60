"""``kernel="auto"`` on first use: the numba step compiles in a background thread (``sim.runtime.warmup``)
while the torch path plays, and a simulator switches at its next step.

The switch must change no result: the two paths give equal states and outputs, so a run that switches
at any step equals a run on the numba path from the start (every output key, every step, auto-resets
included). The suite runs with ``SC2_ENVS_BACKGROUND_COMPILE=0`` (conftest); these tests turn it on.
"""

import io
import os
import pickle
import threading

import pytest
import torch

from sc2_envs import policies
from sc2_envs.policies import random_actions
from sc2_envs.sim.env import SMACSim
from sc2_envs.sim.runtime import warmup


class FakeJob:
    """A background compile that ends when the test says so (``error``: a failed one)."""

    def __init__(self, error=None):
        self.done, self.error, self.waits = False, error, []
        self.waiting_for_lock = False

    def finished(self, timeout=0.0):
        self.waits.append(timeout)
        if timeout is None:
            self.done = True
        return self.done


@pytest.fixture
def background(monkeypatch):
    """Background compile on, the family reported not compiled, ``warmup.job`` answering with one FakeJob."""
    monkeypatch.setenv(warmup.ENV_VAR, "1")
    monkeypatch.setattr(warmup, "family_ready", lambda v2: False)
    job = FakeJob()
    monkeypatch.setattr(warmup, "job", lambda v2, warm, stream=None: job)
    return job


def _play_and_compare(sim, ref, steps, switch_at, job):
    """Step ``sim`` (awaiting the compile) and ``ref`` (numba from the start) alike; the compile ends before step
    ``switch_at``."""
    gen = torch.Generator().manual_seed(3)
    out, ref_out = sim.reset(seed=11), ref.reset(seed=11)
    kernels = []
    for t in range(steps):
        if t == switch_at:
            job.done = True
        for k in ref_out:
            assert torch.equal(out[k], ref_out[k]), (k, t, sim.kernel)
        actions = random_actions(ref_out["avail_actions"], gen)
        out, ref_out = sim.step(actions), ref.step(actions)
        kernels.append(sim.kernel)
    for k in ref_out:
        assert torch.equal(out[k], ref_out[k]), (k, steps, sim.kernel)
    assert sim.get_stats() == ref.get_stats() and ref.get_stats()["battles_game"] > 0  # auto-resets on both sides
    return kernels


@pytest.mark.parametrize("switch_at", [1, 9, 60])
def test_switching_at_any_step_equals_the_numba_path_from_the_start(background, switch_at):
    sim = SMACSim("2s3z", num_envs=3, seed=0)
    ref = SMACSim("2s3z", num_envs=3, seed=0, kernel="numba")
    assert sim.kernel == "torch" and sim.get_env_info()["kernel"] == "torch"
    kernels = _play_and_compare(sim, ref, 150, switch_at, background)
    assert kernels[: switch_at - 1] == ["torch"] * (switch_at - 1) and set(kernels[switch_at:]) == {"numba"}
    assert sim.get_env_info()["kernel"] == "numba"


def test_a_smacv2_scenario_switches_with_equal_results(background):
    sim = SMACSim("protoss_5_vs_5", num_envs=2, seed=0)
    ref = SMACSim("protoss_5_vs_5", num_envs=2, seed=0, kernel="numba")
    assert sim.kernel == "torch"
    kernels = _play_and_compare(sim, ref, 120, 25, background)
    assert kernels[-1] == "numba" and sim._scenario_reset is not None


def test_reset_switches_too_and_wait_for_kernel_waits(background):
    sim = SMACSim("3m", num_envs=1, seed=0)
    sim.reset()
    assert sim.kernel == "torch" and background.waits[-1] == 0.0  # a step or reset only looks, never waits
    background.done = True
    sim.reset()
    assert sim.kernel == "numba" and sim._step_kernel is not None
    other = SMACSim("3m", num_envs=1, seed=0)
    background.done = False
    assert other.kernel == "torch" and other.wait_for_kernel() == "numba" and background.waits[-1] is None
    assert other.wait_for_kernel(timeout=0) == "numba"  # nothing to wait for any more


def test_a_failed_compile_keeps_the_torch_path(monkeypatch):
    monkeypatch.setenv(warmup.ENV_VAR, "1")
    monkeypatch.setattr(warmup, "family_ready", lambda v2: False)
    job = FakeJob(error="Traceback: TypingError for the test")
    job.done = True
    monkeypatch.setattr(warmup, "job", lambda v2, warm, stream=None: job)
    sim = SMACSim("3m", num_envs=2, seed=0)
    out = sim.reset()
    out = sim.step(random_actions(out["avail_actions"], seed=0))
    assert sim.kernel == "torch" and sim._awaiting is None and sim.wait_for_kernel() == "torch"


def test_explicit_kernels_and_the_switch_off_never_wait(background, monkeypatch):
    assert SMACSim("3m", kernel="numba").kernel == "numba"
    assert SMACSim("3m", kernel="torch")._awaiting is None
    assert SMACSim("3m", compile=True)._awaiting is None  # auto resolves to torch: nothing to compile
    monkeypatch.setenv(warmup.ENV_VAR, "0")
    assert SMACSim("3m").kernel == "numba"  # compiled in the foreground (already, in this process)


def test_an_awaiting_simulator_pickles(background):
    sim = SMACSim("3m", num_envs=2, seed=0)
    copy = pickle.loads(pickle.dumps(sim))
    assert copy.kernel == "torch" and copy._awaiting is False
    background.done = True
    assert copy.wait_for_kernel(timeout=0) == "numba"


@pytest.mark.parametrize("value", ["yes", "2", "true"])
def test_a_bad_switch_value_is_named(monkeypatch, value):
    monkeypatch.setenv(warmup.ENV_VAR, value)
    with pytest.raises(ValueError, match=f"SC2_ENVS_BACKGROUND_COMPILE={value!r}"):
        SMACSim("3m")


def test_family_ready_once_compiled_in_this_process():
    SMACSim("3m", kernel="numba").reset()  # the v1 family's step is compiled (or loaded) by its first use
    out = SMACSim("3m", kernel="numba")
    o = out.reset()
    out.step(random_actions(o["avail_actions"], seed=0))
    assert warmup.family_ready(False)


def test_a_real_background_job_plays_a_private_simulator_and_reports(monkeypatch, capsys):
    """The real thread, on a warm process (the compile itself is what the suite's other tests pay for)."""
    monkeypatch.setenv(warmup.ENV_VAR, "1")
    monkeypatch.setattr(warmup, "family_ready", lambda v2: False)
    monkeypatch.setattr(warmup, "_jobs", {})
    seen = []
    real = SMACSim.__init__

    def spy(self, *args, **kw):
        seen.append(kw.get("kernel"))
        real(self, *args, **kw)

    monkeypatch.setattr(SMACSim, "__init__", spy)
    sim = SMACSim("3m", num_envs=200, seed=0, lenient_actions=True, obs_last_action=False)
    assert sim.kernel == "torch"
    assert sim.wait_for_kernel(timeout=600) == "numba"
    job = warmup._jobs[next(iter(warmup._jobs))]
    assert job.error is None and job.seconds is not None
    assert seen == [None, "numba"]  # the private simulator runs the numba path (the first: the default, auto)
    err = capsys.readouterr().err
    assert "in a background thread" in err and "SMAC v1 maps) ready after" in err
    assert sim._warm_config["num_envs"] == 8 and sim._warm_config["lenient_actions"] is True
    assert sim._warm_config["obs_last_action"] is False


def test_a_real_job_that_fails_says_so_and_ends(capsys):
    def broken():
        raise RuntimeError("no simulator for the test")

    job = warmup.Job(False, broken).start()
    assert job.finished(timeout=60)
    assert "no simulator for the test" in job.error
    assert "failed" in capsys.readouterr().err


def test_play_until_reset_reaches_an_auto_reset():
    sim = SMACSim("3m", num_envs=2, seed=0, kernel="numba")
    steps = warmup.play_until_reset(sim, random_actions)
    assert 1 <= steps <= sim.episode_limit + 1 and sim.get_stats()["battles_game"] >= 1


def _slow_job(monkeypatch):
    gate = threading.Event()

    def slow():
        gate.wait(30)
        raise RuntimeError("ended for the test")

    monkeypatch.setattr(warmup, "_jobs", {})
    return gate, warmup.job(False, slow, stream=io.StringIO())


def test_exit_waits_for_an_unfinished_compile_and_says_so(monkeypatch):
    gate, j = _slow_job(monkeypatch)
    assert warmup.compiling_elsewhere() and not j.finished()
    threading.Timer(0.2, gate.set).start()
    out = io.StringIO()
    warmup.finish_at_exit(out)
    assert j.finished() and "waiting for the background compile" in out.getvalue()
    assert not warmup.compiling_elsewhere()
    out = io.StringIO()
    warmup.finish_at_exit(out)  # nothing left: says nothing
    assert out.getvalue() == ""


def test_random_actions_do_not_wait_for_the_compiler_lock(monkeypatch):
    """While another thread compiles, an uncompiled pick loop is not called; the tensor path gives the same actions."""
    avail = torch.rand(64, 5, 12, generator=torch.Generator().manual_seed(0)) < 0.4
    avail[..., 1] = True
    want = policies.random_actions(avail, torch.Generator().manual_seed(7))

    class Uncompiled:
        signatures: list = []

        def __call__(self, *args):
            raise AssertionError("the compiled loop was called during a background compile")

    monkeypatch.setattr(policies, "_PICK", [Uncompiled()])
    monkeypatch.setattr(policies, "_compiling_elsewhere", lambda: True)
    assert torch.equal(policies.random_actions(avail, torch.Generator().manual_seed(7)), want)


def test_a_fork_waits_for_an_unfinished_compile(monkeypatch):
    """Found in review: a child forked mid-compile failed every compile ("compiler re-entrant") or hung."""
    gate, j = _slow_job(monkeypatch)
    threading.Timer(0.2, gate.set).start()
    out = io.StringIO()
    warmup._finish_before_fork(out)
    assert j.finished() and "a fork waits for the background compile" in out.getvalue()


def test_a_forked_child_uses_the_parents_finished_compile(monkeypatch):
    parent = warmup.Job(False, lambda: None)
    parent.pid = -1  # as a forked child sees its parent's job
    parent._done.set()
    monkeypatch.setattr(warmup, "_jobs", {(-1, False): parent})

    def never():
        raise AssertionError("a second compile was started")

    assert warmup.job(False, never) is parent
    failed = warmup.Job(True, lambda: None)
    failed.pid, failed.error = -1, "failed in the parent"
    failed._done.set()
    warmup._jobs[(-1, True)] = failed
    assert warmup.job(True, never) is failed  # a compile that failed in the parent would fail again: not retried


def test_an_empty_switch_means_the_default(monkeypatch):
    """Found in review: ``SC2_ENVS_BACKGROUND_COMPILE=`` (set but empty) made every auto simulator fail."""
    monkeypatch.setenv(warmup.ENV_VAR, "")
    assert warmup.enabled()
    monkeypatch.setenv(warmup.ENV_VAR, " 0 ")
    assert not warmup.enabled()


def test_a_worker_skips_the_exit_wait(monkeypatch):
    """Found in review: SubprocVectorEnv workers waited at exit for their compile and ran into close()'s terminate."""
    gate, j = _slow_job(monkeypatch)
    monkeypatch.setattr(warmup, "_wait_at_exit", True)
    warmup.skip_exit_wait()
    out = io.StringIO()
    warmup.finish_at_exit(out)
    assert out.getvalue() == "" and not j.finished()
    gate.set()
    assert j.finished(timeout=30)


def test_a_sigterm_during_the_exit_wait_ends_it(monkeypatch):
    """Found in review: a SIGTERM handler's SystemExit inside the wait came out as 'Exception ignored in atexit'."""
    gate, j = _slow_job(monkeypatch)

    class Interrupting(FakeJob):
        def finished(self, timeout=0.0):
            if timeout is None or timeout > 0:  # a wait: the signal arrives during it
                raise SystemExit(143)
            return False

    monkeypatch.setattr(warmup, "_pending", lambda other_threads_only=False: [Interrupting()])
    out = io.StringIO()
    warmup.finish_at_exit(out)  # returns: the interpreter goes on exiting
    assert "background compile abandoned" in out.getvalue()
    gate.set()


def test_a_child_forked_mid_compile_keeps_off_numba(monkeypatch, background):
    """Found in review: a Ctrl-C ended a fork's wait, the fork went ahead mid-compile and the child hung in its
    first Numba call (the compiler and llvmlite locks belonged to the parent's compile thread)."""
    gate = threading.Event()
    j = warmup.Job(False, lambda: gate.wait(30), stream=io.StringIO())  # the parent's compile, under way
    monkeypatch.setattr(warmup, "_jobs", {(j.pid, False): j.start()})
    monkeypatch.setattr(os, "getppid", lambda: j.pid)  # as the child sees its parent
    monkeypatch.setattr(warmup, "_forked_mid_compile", False)
    monkeypatch.setattr(warmup, "_lock", warmup._lock)  # restored after the test: the call below replaces it
    warmup._after_fork_in_child()
    gate.set()
    assert warmup.numba_unusable() and warmup.compiling_elsewhere()
    sim = SMACSim("3m", num_envs=2, seed=0)
    assert sim.kernel == "torch" and sim._awaiting is None  # auto: the torch path, nothing to wait for
    with pytest.raises(ValueError, match="kernel='numba' cannot be used here: this process was forked while"):
        SMACSim("3m", kernel="numba")
    monkeypatch.setattr(warmup, "_forked_mid_compile", False)
    awaiting = SMACSim("3m", num_envs=2, seed=0)  # made before the fork, awaiting the parent's compile
    monkeypatch.setattr(warmup, "_forked_mid_compile", True)
    background.done = True
    assert awaiting.wait_for_kernel() == "torch" and awaiting._awaiting is None


def test_a_broken_stderr_still_marks_the_compile_finished():
    """Found in review: the ready line raised BrokenPipeError before the job was marked finished, and every
    simulator then stayed on the torch path (and a wait without timeout would never end)."""

    class Broken(io.StringIO):
        def write(self, text):
            raise BrokenPipeError("for the test")

    def fails():
        raise RuntimeError("no compile for the test")

    j = warmup.Job(False, fails, stream=Broken()).start()
    assert j.finished(timeout=30) and "no compile for the test" in j.error
    ok = warmup.Job(False, lambda: None, stream=Broken()).start()  # the ready line raises too
    assert ok.finished(timeout=30) and ok.error is None


def test_a_job_waits_while_another_holds_the_family_lock_then_loads_its_cache():
    """Workers that start together compile a family once: the others wait on the lock (torch path
    meanwhile), then load the kernels from the cache. flock conflicts between two opens of the file, so
    the main thread can play the other process here (the cross-process case: the next test)."""
    out = io.StringIO()
    with warmup.family_lock(False) as waited:
        assert waited is False
        job = warmup.Job(False, lambda: SMACSim("3m", num_envs=2, seed=0, kernel="numba"), stream=out).start()
        assert not job.finished(timeout=1.0)  # blocked on the lock, not compiling
        assert f"another process (pid {os.getpid()}) is compiling the same numba step kernel (SMAC v1 maps)" in out.getvalue()
    assert job.finished(timeout=300) and job.error is None
    assert "ready after" in out.getvalue() and "loaded from the on-disk cache (found there after the wait)" in out.getvalue()


def test_the_family_lock_holds_across_processes_and_names_the_holder():
    import subprocess
    import sys

    child = (
        "import sys\n"
        "from sc2_envs.sim.runtime import warmup\n"
        "say = lambda holder: print('waiting for', holder, flush=True)\n"
        "with warmup.family_lock(False, say) as waited:\n"
        "    print('got it, waited', waited, flush=True)\n"
    )
    with warmup.family_lock(False):
        proc = subprocess.Popen([sys.executable, "-c", child], stdout=subprocess.PIPE, text=True)
        assert proc.stdout.readline().strip() == f"waiting for pid {os.getpid()}"
    assert proc.stdout.readline().strip() == "got it, waited True"
    assert proc.wait(timeout=60) == 0


def test_without_a_lock_file_the_compile_runs_unlocked(monkeypatch):
    monkeypatch.setattr(warmup, "_open_lock_file", lambda v2: None)  # no fcntl (Windows) or an unwritable cache folder
    with warmup.family_lock(True) as outer, warmup.family_lock(True) as inner:
        assert (outer, inner) == (False, False)


def test_a_file_system_without_flock_runs_the_compile_unlocked(monkeypatch):
    """Lustre without -o flock says ENOSYS, NFS without lockd ENOLCK: the compile must still run (review)."""
    import errno
    import fcntl

    def no_flock(fd, op):
        raise OSError(errno.ENOSYS, "Function not implemented")

    monkeypatch.setattr(fcntl, "flock", no_flock)
    ran = []
    with warmup.family_lock(False) as waited:
        ran.append(waited)
    assert ran == [False]


def test_a_job_waiting_for_another_process_does_not_hold_up_exit():
    """Only the holder writes the cache: a process whose job still waits for the lock exits at once (review)."""
    out = io.StringIO()
    with warmup.family_lock(False):
        job = warmup.Job(False, lambda: SMACSim("3m", num_envs=2, seed=0, kernel="numba"), stream=out).start()
        for _ in range(100):
            if job.waiting_for_lock:
                break
            job.finished(timeout=0.05)
        assert job.waiting_for_lock
        saved = dict(warmup._jobs)
        warmup._jobs[(os.getpid(), False)] = job
        try:
            exit_out = io.StringIO()
            warmup.finish_at_exit(stream=exit_out)
            assert exit_out.getvalue() == ""  # no wait, no message
        finally:
            warmup._jobs.clear()
            warmup._jobs.update(saved)
    assert job.finished(timeout=300) and job.error is None


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_does_not_keep_the_lock_of_its_parent():
    """flock belongs to the open file, which a fork shares: the child closes its copy, or the lock would last
    as long as the child (review: a fork whose wait was interrupted kept other processes waiting)."""
    import fcntl
    import time

    ready_r, ready_w = os.pipe()
    with warmup.family_lock(False):
        pid = os.fork()
        if pid == 0:  # the child: what the fork hook does, then outlive the parent's hold
            warmup._after_fork_in_child()
            os.write(ready_w, b"x")
            time.sleep(3)
            os._exit(0)
        os.read(ready_r, 1)  # the child has run its fork hook
    try:
        fd = warmup._open_lock_file(False)
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # free while the child still runs
        os.close(fd)
    finally:
        os.waitpid(pid, 0)
