"""SubprocVectorEnv: fault reporting (raise / SIGKILL / stall / freeze), clean close, equality with
the in-process batch, and our Gymnasium env inside ``gymnasium.vector.AsyncVectorEnv``.

Workers use the ``spawn`` start method; the env factories below are module-level so a spawned
worker can import them. ``FakeEnv`` has the batched contract's methods with NumPy data and can
misbehave on a chosen step.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from functools import partial

import numpy as np
import psutil
import pytest

from sc2_envs.vector import SubprocVectorEnv, WorkerDied, WorkerError, WorkerStalled, make_subproc_batched

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="uses POSIX signals (SIGKILL, SIGSTOP, SIGUSR1)")

N_AGENTS, N_ACTIONS, OBS = 2, 7, 3
# Faults are detected within about 2 s here (heartbeat_timeout / timeout 1.5-2 s, sentinel poll 0.1 s).
# The bound separates "reported promptly" from "hung until an outer timeout" and leaves room for a
# loaded machine (2 shared cores); the waits below are on events, with generous deadlines.
DETECT_S = 15.0


class FakeEnv:
    """Batched-contract stand-in: obs depend on seed, step count and actions; faults on request.

    Args:
        num_envs: ``B``.
        fault: None, ``"raise"`` (step raises), ``"sleep"`` (step sleeps 60 s), ``"freeze"`` (step
            stops its own process with SIGSTOP).
        fault_at: env step (1-based, counted since the last reset) of the fault.
        launch_child: start a ``sleep`` subprocess, like a backend launching StarCraft II.
    """

    def __init__(self, num_envs=2, fault=None, fault_at=3, launch_child=False, map_name="fake"):
        self.num_envs, self.fault, self.fault_at, self.map_name = num_envs, fault, fault_at, map_name
        self.t = 0
        self.seeds = np.zeros(num_envs, dtype=np.int64)
        self.child = subprocess.Popen(["sleep", "60"]) if launch_child else None
        print(f"FakeEnv built in pid {os.getpid()}", flush=True)

    def get_env_info(self):
        return {
            "n_agents": N_AGENTS,
            "n_actions": N_ACTIONS,
            "obs_shape": OBS,
            "state_shape": 4,
            "n_enemies": 1,
            "episode_limit": 10,
            "map_name": self.map_name,
        }

    def _out(self):
        base = self.seeds[:, None, None] * 100.0 + self.t
        return {
            "obs": (base + np.arange(N_AGENTS * OBS).reshape(1, N_AGENTS, OBS)).astype(np.float32),
            "state": np.repeat(self.seeds[:, None], 4, axis=1).astype(np.float32),
            "avail_actions": np.ones((self.num_envs, N_AGENTS, N_ACTIONS), dtype=bool),
        }

    def reset(self, seed=None):
        """``seed``: None, an int (env b gets seed + b), or a list of per-env ints or ``SeedSequence``
        (what the vector env sends: entropy * 1000 + the global env index of the spawn key)."""
        self.t = 0
        if seed is not None:
            if np.isscalar(seed):
                self.seeds = np.arange(self.num_envs) + seed
            else:
                self.seeds = np.asarray(
                    [
                        int(s.entropy) * 1000 + s.spawn_key[-1] if isinstance(s, np.random.SeedSequence) else int(s)
                        for s in seed
                    ],
                    dtype=np.int64,
                )
        return self._out()

    def step(self, actions):
        self.t += 1
        print(f"FakeEnv step {self.t}", flush=True)
        if self.t == self.fault_at:
            if self.fault == "raise":
                raise RuntimeError(f"boom at step {self.t}")
            if self.fault == "sleep":
                time.sleep(60)
            if self.fault == "freeze":
                os.kill(os.getpid(), signal.SIGSTOP)
        out = self._out()
        out["reward"] = np.asarray(actions, dtype=np.float32).sum(axis=1)
        return out

    def get_stats(self):
        return {"battles_won": self.t, "battles_game": 2 * self.t, "battles_draw": 0, "timeouts": 0, "win_rate": 0.5}

    def close(self):
        if self.child is not None:
            self.child.kill()
            self.child.wait()


def _children():
    """Live descendants of this process, leaving out multiprocessing's resource tracker."""
    out = []
    for p in psutil.Process().children(recursive=True):
        try:
            if p.status() == psutil.STATUS_ZOMBIE or "resource_tracker" in " ".join(p.cmdline()):
                continue
        except psutil.NoSuchProcess:
            continue
        out.append(p)
    return out


@pytest.fixture
def no_leftover_children():
    before = {p.pid for p in _children()}
    yield
    left = [p for p in _children() if p.pid not in before]
    assert not left, f"child processes left behind: {[(p.pid, p.cmdline()) for p in left]}"


def _vec(tmp_path, fns, **kw):
    kw.setdefault("heartbeat_timeout", 2.0)
    kw.setdefault("timeout", 30.0)
    return SubprocVectorEnv(fns, log_dir=tmp_path, torch_threads=None, actions_as="numpy", **kw)


def _actions(vec):
    return np.ones((vec.num_envs, N_AGENTS), dtype=np.int64)


def test_concatenates_workers_along_env_axis_and_splits_seeds(tmp_path, no_leftover_children):
    vec = _vec(tmp_path, [partial(FakeEnv, 2), partial(FakeEnv, 3)])
    try:
        assert vec.num_envs == 5 and vec.worker_num_envs == [2, 3]
        out = vec.reset(seed=10)
        assert out["obs"].shape == (5, N_AGENTS, OBS) and str(out["obs"].dtype) == "torch.float32"
        # env b gets SeedSequence(10, spawn_key=(b,)): the global index, whichever worker holds it
        assert out["state"][:, 0].tolist() == [10_000, 10_001, 10_002, 10_003, 10_004]
        out = vec.reset(seed=[5, 6, 7, 8, 9])  # per-env seeds are split among the workers
        assert out["state"][:, 0].tolist() == [5, 6, 7, 8, 9]
        with pytest.raises(ValueError, match="expected an int or 5 seeds"):
            vec.reset(seed=[1, 2])
        out = vec.step(np.arange(10).reshape(5, 2))
        assert out["reward"].tolist() == [1, 5, 9, 13, 17]
        assert vec.get_stats() == {"battles_won": 2, "battles_game": 4, "battles_draw": 0, "timeouts": 0, "win_rate": 0.5}
        logs = sorted(p.name for p in tmp_path.iterdir())
        assert logs == ["worker_0.log", "worker_1.log"]
        assert "FakeEnv step 1" in (tmp_path / "worker_1.log").read_text()
        with pytest.raises(ValueError, match=r"expected \(5, 2\)"):
            vec.step(np.ones((4, 2), dtype=np.int64))
    finally:
        vec.close()


def test_workers_of_another_map_with_the_same_sizes_are_refused(tmp_path, no_leftover_children):
    # found by a tester: e.g. terran_5_vs_5 and zerg_5_vs_5 (both obs 82, 11 actions) were concatenated, and the
    # batch reported worker 0's map_name, episode_limit and unit types for every env
    with pytest.raises(
        ValueError, match=r"worker 1's env differs from worker 0's in \['map_name'\]: \['other'\] vs \['fake'\]"
    ):
        _vec(tmp_path, [partial(FakeEnv, 2), partial(FakeEnv, 2, map_name="other")])


def test_worker_exception_reraised_with_its_traceback(tmp_path, no_leftover_children):
    vec = _vec(tmp_path, [FakeEnv, partial(FakeEnv, fault="raise", fault_at=2)])
    try:
        vec.reset(seed=0)
        vec.step(_actions(vec))
        start = time.monotonic()
        with pytest.raises(WorkerError) as err:
            vec.step(_actions(vec))
        assert time.monotonic() - start < DETECT_S
        assert err.value.worker == 1
        assert "RuntimeError: boom at step 2" in err.value.remote_traceback
        assert "in step" in err.value.remote_traceback and "raise RuntimeError" in str(err.value)
        with pytest.raises(RuntimeError, match="broken by an earlier worker failure"):
            vec.step(_actions(vec))
    finally:
        vec.close()


def test_env_factory_failure_reported_at_startup(tmp_path, no_leftover_children):
    with pytest.raises(WorkerError, match=r"worker 0 raised TypeError during startup") as err:
        _vec(tmp_path, [partial(FakeEnv, bogus=1)])
    assert "unexpected keyword argument 'bogus'" in err.value.remote_traceback


def test_sigkilled_worker_gives_clear_error_within_seconds(tmp_path, no_leftover_children):
    vec = _vec(tmp_path, [FakeEnv, FakeEnv])
    try:
        vec.reset(seed=0)
        vec.step(_actions(vec))
        os.kill(vec.processes[1].pid, signal.SIGKILL)
        start = time.monotonic()
        with pytest.raises(WorkerDied) as err:
            vec.step(_actions(vec))
        assert time.monotonic() - start < DETECT_S
        msg = str(err.value)
        assert "worker 1" in msg and "SIGKILL" in msg and err.value.exitcode == -signal.SIGKILL
        assert "FakeEnv step 1" in msg  # the worker's last log lines
    finally:
        vec.close()


def test_worker_stuck_in_a_step_is_reported_with_its_stack(tmp_path, no_leftover_children):
    vec = _vec(tmp_path, [FakeEnv, partial(FakeEnv, fault="sleep", fault_at=1)], timeout=1.5)
    try:
        vec.reset(seed=0)
        start = time.monotonic()
        with pytest.raises(WorkerStalled) as err:
            vec.step(_actions(vec))
        assert time.monotonic() - start < DETECT_S
        msg = str(err.value)
        assert "worker 1" in msg and "no reply within 1.5 s" in msg
        assert "faulthandler" in msg and "in step" in msg and "time.sleep(60)" not in msg
        assert "Current thread" in msg or "Thread 0x" in msg  # faulthandler's dump format
    finally:
        vec.close()


def test_frozen_worker_detected_by_heartbeat_and_its_game_killed(tmp_path, no_leftover_children):
    vec = _vec(
        tmp_path,
        [FakeEnv, partial(FakeEnv, fault="freeze", fault_at=1, launch_child=True)],
        heartbeat_timeout=1.5,
        timeout=None,
    )
    try:
        vec.reset(seed=0)
        assert len(psutil.Process(vec.processes[1].pid).children()) == 1  # the "game" it launched
        start = time.monotonic()
        with pytest.raises(WorkerStalled, match=r"worker 1 .*no heartbeat for \d+\.\d s"):
            vec.step(_actions(vec))
        assert time.monotonic() - start < DETECT_S
    finally:
        vec.close()


def test_close_is_idempotent_and_blocks_use(tmp_path, no_leftover_children):
    vec = _vec(tmp_path, [FakeEnv])
    vec.close()
    vec.close()
    with pytest.raises(RuntimeError, match="closed"):
        vec.reset()


def test_matches_in_process_batch_for_the_same_seeds(tmp_path, no_leftover_children):
    torch = pytest.importorskip("torch")
    sim = pytest.importorskip("sc2_envs.sim.env", reason="embedded simulator not built yet")
    from sc2_envs.vector import make_subproc_batched

    ref = sim.make_batched("3m", num_envs=4)
    vec = make_subproc_batched("3m", num_workers=2, envs_per_worker=2, log_dir=tmp_path, timeout=60.0)
    try:
        assert vec.get_env_info()["obs_shape"] == ref.obs_size
        a, b = ref.reset(seed=7), vec.reset(seed=7)
        gen = torch.Generator().manual_seed(0)
        for t in range(70):  # past 3m's 60-step limit: auto-resets included
            for k in a:
                assert torch.equal(a[k], b[k]), (t, k)
            probs = a["avail_actions"].float()
            act = torch.multinomial(probs.view(-1, probs.shape[-1]), 1, generator=gen).view(4, -1)
            a, b = ref.step(act.clone()), vec.step(act)  # clone: the simulator writes into its actions
        assert vec.get_stats() == ref.get_stats()
    finally:
        vec.close()
    # found in review: closing a worker whose env is make_batched's simulator (no close()) logged a traceback
    logs = [p.read_text() for p in sorted(tmp_path.glob("worker_*.log"))]
    assert len(logs) == 2 and all("exiting" in log and "Traceback" not in log for log in logs), logs


def test_constructor_seed_gives_the_in_process_batch_battles_over_several_episodes(tmp_path, no_leftover_children):
    """Each worker gets its global env indices, not the same seed as every other worker."""
    torch = pytest.importorskip("torch")
    from sc2_envs import make_batched
    from sc2_envs.vector import make_subproc_batched

    ref = make_batched("3m", num_envs=6, seed=7)
    vec = make_subproc_batched("3m", num_workers=3, envs_per_worker=2, seed=7, log_dir=tmp_path, timeout=120.0)
    try:
        a, b = ref.reset(), vec.reset()  # no reset seed: the constructor's seed decides
        assert not torch.equal(a["obs"][0], a["obs"][2]) and not torch.equal(a["obs"][1], a["obs"][3])
        gen = torch.Generator().manual_seed(0)
        episodes = torch.zeros(6, dtype=torch.int64)
        t = 0
        while int(episodes.min()) < 3:  # every env through at least 3 episodes (auto-resets included)
            for k in a:
                assert torch.equal(a[k], b[k]), (t, k)
            probs = a["avail_actions"].float()
            act = torch.multinomial(probs.view(-1, probs.shape[-1]), 1, generator=gen).view(6, -1)
            a, b = ref.step(act.clone()), vec.step(act)
            episodes += (a["terminated"] | a["truncated"]).long()
            t += 1
        for k in a:
            assert torch.equal(a[k], b[k]), (t, k)
        assert vec.get_stats() == ref.get_stats()
    finally:
        vec.close()


def _make_gym_3m():
    import gymnasium

    from sc2_envs.wrappers.gymnasium import env_id, register_envs

    register_envs()
    return gymnasium.make(env_id("3m"))


def test_gymnasium_env_runs_in_async_vector_env(no_leftover_children):
    gymnasium = pytest.importorskip("gymnasium")
    pytest.importorskip("sc2_envs.wrappers.gymnasium", reason="Gymnasium wrapper not built yet")
    async_envs = gymnasium.vector.AsyncVectorEnv([_make_gym_3m] * 2, context="spawn")
    sync_envs = gymnasium.vector.SyncVectorEnv([_make_gym_3m] * 2)
    try:
        (obs_a, info_a), (obs_s, info_s) = async_envs.reset(seed=3), sync_envs.reset(seed=3)
        ended = np.zeros(2, dtype=bool)
        for _ in range(65):  # 3m ends within its 60-step limit: covers an episode end and the NEXT_STEP reset
            np.testing.assert_array_equal(obs_a, obs_s)
            assert async_envs.observation_space.contains(obs_a)
            act = info_a["action_mask"].argmax(-1)  # first available action of each agent (stop / no-op)
            obs_a, rew_a, term_a, trunc_a, info_a = async_envs.step(act)
            obs_s, rew_s, term_s, trunc_s, info_s = sync_envs.step(act)
            np.testing.assert_array_equal(rew_a, rew_s)
            np.testing.assert_array_equal(term_a, term_s)
            np.testing.assert_array_equal(trunc_a, trunc_s)
            ended |= term_a | trunc_a
        assert ended.all()
    finally:
        async_envs.close()
        sync_envs.close()


def test_sc2_backend_runs_in_workers_and_reports_timeouts(tmp_path, no_leftover_children):
    from test_smac_backend import FakeStarCraft2Env  # SMAC test double; a spawned worker imports it too

    from sc2_envs.backends import make_sc2_backend

    fn = partial(make_sc2_backend, "3m", env_factory=FakeStarCraft2Env)
    vec = SubprocVectorEnv([fn, fn], log_dir=tmp_path, heartbeat_timeout=2.0, timeout=30.0)
    try:
        out = vec.reset()
        assert out["obs"].shape == (2, 3, 30) and vec.episode_limit == 60
        stop = np.ones((2, 3), dtype=np.int64)
        for _ in range(60):
            out = vec.step(stop)
        assert out["truncated"].tolist() == [True, True] and out["terminated"].tolist() == [False, False]
        stats = vec.get_stats()
        assert (stats["battles_game"], stats["timeouts"], stats["win_rate"]) == (2, 2, 0.0)
    finally:
        vec.close()


_ORPHAN_SCRIPT = """
import sys, numpy as np
from functools import partial
sys.path.insert(0, {tests!r})
from test_subproc_vector import FakeEnv
from sc2_envs.vector import SubprocVectorEnv
vec = SubprocVectorEnv([partial(FakeEnv, fault="sleep", fault_at=1, launch_child=True)], log_dir={logs!r},
                       torch_threads=None, actions_as="numpy", timeout=None)
vec.reset()
print(vec.processes[0].pid, flush=True)
vec.step(np.ones((2, 2), dtype=np.int64))
"""


def test_worker_exits_when_its_parent_is_killed(tmp_path):
    script = _ORPHAN_SCRIPT.format(tests=os.path.dirname(__file__), logs=str(tmp_path))
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    procs = []
    try:
        worker = psutil.Process(int(parent.stdout.readline()))
        procs = [worker, worker.children()[0]]  # the worker and the "game" its env launched
        log = tmp_path / "worker_0.log"
        deadline = time.monotonic() + 60  # wait until the worker is inside its 60 s step
        while "FakeEnv step 1" not in (log.read_text() if log.is_file() else "") and time.monotonic() < deadline:
            time.sleep(0.05)
        assert "FakeEnv step 1" in log.read_text()
        parent.kill()
        parent.wait()
        gone, alive = psutil.wait_procs(procs, timeout=30)
        assert not alive, f"still running 30 s after the parent died: {alive}"
    finally:
        parent.kill()
        for p in procs:
            if p.is_running():
                p.kill()


@pytest.mark.parametrize("bad", [True, 0, 1.0])
def test_num_workers_must_be_a_positive_int_not_a_bool(bad):
    # True == 1 passed the int check and ran one worker
    with pytest.raises(ValueError, match=f"num_workers must be a positive int, got {bad!r}"):
        make_subproc_batched("3m", num_workers=bad)
