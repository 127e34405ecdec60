"""``sim.runtime.first_use``: a line on stderr while a kernel compiles on its first call of the process."""

import io
import time

import pytest

from sc2_envs.sim.runtime import first_use


@pytest.fixture(autouse=True)
def _fresh(monkeypatch):
    monkeypatch.setattr(first_use, "_first_calls_done", set())
    monkeypatch.setattr(first_use, "COMPILE_NOTICE_AFTER_S", 0.05)


def test_a_slow_first_call_is_announced_and_timed():
    out = io.StringIO()
    with first_use.compile_notice("step", stream=out):
        time.sleep(0.3)
    lines = out.getvalue().splitlines()
    assert len(lines) == 2, lines
    assert "compiling the simulator's step kernel" in lines[0]
    assert lines[1].startswith("sc2_envs: step kernel ready after")


def test_a_fast_first_call_says_nothing():
    out = io.StringIO()
    with first_use.compile_notice("observe", stream=out):
        pass
    time.sleep(0.1)  # past the notice delay: the cancelled timer must not fire late
    assert out.getvalue() == ""


def test_later_calls_are_not_watched_and_errors_pass_through(capsys):
    calls = []
    assert first_use.first_call("step", lambda x: calls.append(x) or x, 1) == 1
    assert "step" in first_use._first_calls_done
    with pytest.raises(ZeroDivisionError):
        first_use.first_call("step", lambda: 1 / 0)
    assert calls == [1]
    assert capsys.readouterr().err == ""


def test_a_failing_first_call_still_counts_as_done():
    with pytest.raises(RuntimeError):
        with first_use.compile_notice("observe", stream=io.StringIO()):
            raise RuntimeError("boom")
    assert "observe" in first_use._first_calls_done
