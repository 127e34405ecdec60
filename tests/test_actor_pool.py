"""Tests of sc2_envs/vector/actor_pool.py and supervision.py: trajectories arrive in order with the
published weights, a killed actor is reported within seconds and restarted, a stalled actor is
reported with a stack dump, actors exit when the learner dies, bad settings fail clearly.

Targets are top-level functions of this module (``spawn``ed actors import it).
"""

from __future__ import annotations

import functools
import multiprocessing as mp
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest
import torch

from sc2_envs.vector.actor_pool import (
    ActorFailure,
    ActorPoolConfig,
    ActorSupervisor,
    ProcessActorPool,
    RayActorPool,
    SharedWeights,
    make_actor_pool,
)
from sc2_envs.vector.supervision import describe_exit, log_tail

REPO = Path(__file__).resolve().parents[1]


def counting_target(slot: int, gen: int, channel, hang_slot: int = -1, step_delay: float = 0.01) -> None:
    """Send ``(slot, gen, i, version)`` items; actor ``hang_slot`` hangs after its first item."""
    module = torch.nn.Linear(2, 1)
    version = channel.pull_weights(module, -1)
    print(f"[actor {slot} gen {gen}] pid {os.getpid()} version {version}", flush=True)
    i = 0
    while not channel.stopped():
        if slot == hang_slot and i >= 1:
            hang_in_env_step()
        time.sleep(step_delay)
        channel.beat_step()
        new = channel.pull_weights(module, version)
        version = version if new is None else new
        channel.send((slot, gen, i, version, float(module.weight.sum())))
        i += 1


def hang_in_env_step() -> None:
    time.sleep(3600)  # the stall the supervisor must detect (and dump the stack of)


def _pool(tmp_path, target=counting_target, **config):
    config.setdefault("num_actors", 2)
    config.setdefault("startup_timeout", 60.0)
    cfg = ActorPoolConfig(**config)
    ctx = mp.get_context("spawn")
    src = torch.nn.Linear(2, 1)
    with torch.no_grad():
        src.weight.fill_(0.25)
    weights = SharedWeights(src.state_dict(), ctx)
    weights.publish(src.state_dict())
    return cfg, make_actor_pool(cfg, target, weights, tmp_path, ctx), weights, src


def _get(pool, n: int, timeout: float = 60.0) -> list:
    items, deadline = [], time.monotonic() + timeout
    while len(items) < n and time.monotonic() < deadline:
        item = pool.get(timeout=0.1)
        if item is not None:
            items.append(item)
    assert len(items) == n, f"got {len(items)} of {n} items in {timeout} s"
    return items


def _no_process_left(pids):
    time.sleep(0.2)
    alive = [p for p in pids if psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE]
    assert not alive, f"actor processes still running: {alive}"


def test_shared_weights_publish_and_read_versions():
    src, dst = torch.nn.Linear(3, 2), torch.nn.Linear(3, 2)
    w = SharedWeights(src.state_dict(), mp.get_context("spawn"))
    assert w.version == 0
    with torch.no_grad():
        src.weight.fill_(0.5)
    assert w.publish(src.state_dict()) == 1
    assert w.read_into(dst, -1) == 1 and torch.equal(dst.weight, src.weight)
    assert w.read_into(dst, 1) is None  # nothing newer


def test_actors_send_in_order_with_the_published_weights_and_close_leaves_nothing(tmp_path):
    cfg, pool, weights, src = _pool(tmp_path)
    say = []
    sup = ActorSupervisor(pool, cfg, say.append)
    try:
        sup.start_all()
        items = _get(pool, 6)
        sup.check()
        for slot in (0, 1):
            mine = [it for it in items if it[0] == slot]
            assert [it[2] for it in mine] == list(range(len(mine)))  # one pipe per actor keeps its order
        assert all(it[3] == 1 and it[4] == pytest.approx(0.5) for it in items)
        with torch.no_grad():
            src.weight.fill_(1.0)
        assert weights.publish(src.state_dict()) == 2
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            item = pool.get(timeout=0.1)
            if item is not None and item[3] == 2:
                assert item[4] == pytest.approx(2.0)
                break
        else:
            raise AssertionError("no item acted with the new weights")
    finally:
        pool.close()
    pids = [s.pid for s in pool.slots.values()]
    _no_process_left(pids)
    assert [line.split(",")[0] for line in say] == [
        f"actor 0 gen 0 started (pid {pids[0]})",
        f"actor 1 gen 0 started (pid {pids[1]})",
    ]
    for slot in (0, 1):  # each actor wrote its own log
        text = (tmp_path / f"actor_{slot}_gen0.log").read_text()
        assert f"[actor {slot} gen 0] pid" in text and f"[actor {1 - slot} " not in text


def test_killed_actor_is_reported_within_seconds_and_restarted(tmp_path):
    cfg, pool, _, _ = _pool(tmp_path, restart_actors=True, max_restarts=1)
    say = []
    sup = ActorSupervisor(pool, cfg, say.append)
    try:
        sup.start_all()
        _get(pool, 4)
        victim = pool.slots[1].pid
        os.kill(victim, signal.SIGKILL)
        killed = time.monotonic()
        while not any("ACTOR DIED" in line for line in say) and time.monotonic() - killed < 60:
            sup.check()
            pool.get(timeout=0.1)
        # The supervisor polls sentinels every check (well under a second on an idle machine); the bound
        # only separates "reported promptly" from "noticed by a timeout" on a loaded 2-core machine.
        assert time.monotonic() - killed < 15.0
        report = next(line for line in say if "ACTOR DIED" in line)
        assert report.startswith("ACTOR DIED: actor 1 gen 0") and "SIGKILL" in report
        assert "restarting actor 1 as gen 1 (restart 1/1)" in say
        assert sup.restarts == 1 and sup.events[0]["kind"] == "died"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            sup.check()
            item = pool.get(timeout=0.1)
            if item is not None and item[:2] == (1, 1):
                break
        else:
            raise AssertionError("the replacement (actor 1 gen 1) sent nothing in 60 s")
    finally:
        pool.close()
    _no_process_left([victim] + [s.pid for s in pool.slots.values()])


def test_stalled_actor_is_reported_with_a_stack_dump_and_no_restart_raises(tmp_path):
    target = functools.partial(counting_target, hang_slot=0)
    cfg, pool, _, _ = _pool(tmp_path, target=target, stall_timeout=1.5, failure_hint="rerun with --restart")
    say = []
    sup = ActorSupervisor(pool, cfg, say.append)
    try:
        sup.start_all()
        deadline = time.monotonic() + 60
        with pytest.raises(ActorFailure, match=r"actor 0 stalled \(no env step for .*; rerun with --restart"):
            while time.monotonic() < deadline:
                sup.check()
                pool.get(timeout=0.1)
    finally:
        pool.close()
    (report,) = [line for line in say if "ACTOR" in line]
    assert report.startswith("ACTOR STALLED: actor 0 gen 0") and "Stack dump (faulthandler, SIGUSR1)" in report
    assert "in hang_in_env_step" in report, report  # the dump shows where it hangs
    _no_process_left([s.pid for s in pool.slots.values()])


_ORPHAN_SCRIPT = """
import functools, multiprocessing as mp, sys, time, torch
from test_actor_pool import counting_target
from sc2_envs.vector.actor_pool import ActorPoolConfig, ActorSupervisor, SharedWeights, make_actor_pool
if __name__ == "__main__":
    cfg = ActorPoolConfig(num_actors=2)
    ctx = mp.get_context("spawn")
    w = SharedWeights(torch.nn.Linear(2, 1).state_dict(), ctx)
    pool = make_actor_pool(cfg, counting_target, w, sys.argv[1], ctx)
    ActorSupervisor(pool, cfg, print).start_all()
    sys.stdout.flush()
    while True:
        pool.get(timeout=0.1)
"""


def test_actors_exit_when_the_learner_is_killed(tmp_path):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO / "tests"), str(REPO), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.Popen([sys.executable, "-c", _ORPHAN_SCRIPT, str(tmp_path)], env=env, stdout=subprocess.PIPE, text=True)
    try:
        pids = [int(proc.stdout.readline().split("(pid ")[1].split(")")[0]) for _ in range(2)]
        logs = [tmp_path / f"actor_{k}_gen0.log" for k in (0, 1)]
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not all(p.exists() and "version" in p.read_text() for p in logs):
            time.sleep(0.1)
        proc.kill()  # SIGKILL: no clean-up in the learner; the actors must notice on their own
        proc.wait(timeout=10)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and any(
            psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE for p in pids
        ):
            time.sleep(0.2)
    finally:
        if proc.poll() is None:
            proc.kill()
    _no_process_left(pids)


def test_config_rejects_bad_settings():
    with pytest.raises(ValueError, match="backend='threads'; expected 'process' or 'ray'"):
        ActorPoolConfig(backend="threads")
    with pytest.raises(ValueError, match="num_actors=0; expected >= 1"):
        ActorPoolConfig(num_actors=0)
    with pytest.raises(ValueError, match="heartbeat_timeout=0.5 must exceed heartbeat_interval=0.5"):
        ActorPoolConfig(heartbeat_timeout=0.5, heartbeat_interval=0.5)


def test_ray_backend_without_ray_says_how_to_install(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "ray", None)  # makes `import ray` raise ImportError
    with pytest.raises(ImportError, match="pip install"):
        RayActorPool(ActorPoolConfig(backend="ray"), counting_target, None, tmp_path)


def test_exit_descriptions_and_log_tail(tmp_path):
    assert describe_exit(None) == "still running"
    assert describe_exit(3) == "exit code 3"
    assert describe_exit(-9) == "killed by signal SIGKILL (exit code -9)"
    log = tmp_path / "w.log"
    assert log_tail(log).startswith("<log unreadable:")
    log.write_text("")
    assert log_tail(log) == "<log is empty>"
    log.write_text("\n".join(f"line {i}" for i in range(30)))
    assert log_tail(log, 2) == "line 28\nline 29"


def test_process_pool_is_the_default_backend(tmp_path):
    cfg = ActorPoolConfig()
    pool = make_actor_pool(cfg, counting_target, SharedWeights({}, mp.get_context("spawn")), tmp_path)
    try:
        assert isinstance(pool, ProcessActorPool) and pool.depth() == 0 and pool.get(timeout=0.01) is None
    finally:
        pool.close()


def env_report_target(slot: int, gen: int, channel) -> None:
    """Send the actor's ``NUMBA_NUM_THREADS`` and torch's thread count, once."""
    channel.pull_weights(torch.nn.Linear(2, 1), -1)
    channel.send((os.environ.get("NUMBA_NUM_THREADS"), torch.get_num_threads()))
    while not channel.stopped():
        channel.beat_step()
        time.sleep(0.01)


def test_actors_get_a_numba_pool_as_small_as_their_torch_threads(tmp_path, monkeypatch):
    monkeypatch.delenv("NUMBA_NUM_THREADS", raising=False)
    cfg, pool, _, _ = _pool(tmp_path, target=env_report_target, num_actors=1, torch_threads=1)
    try:
        ActorSupervisor(pool, cfg, lambda _: None).start_all()
        assert _get(pool, 1)[0] == ("1", 1)
    finally:
        pool.close()
