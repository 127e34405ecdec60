"""``sim.runtime.schedule.ScheduleChooser``: serial or threaded calls by measured time (fake clock)."""

import math
import re

import pytest

from sc2_envs.sim.runtime.schedule import SERIAL, THREADED, ScheduleChooser


class _Clock:
    """A clock that the fake kernel calls advance by their configured cost."""

    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def _kernels(clock, cost):
    """Serial and threaded fake kernels that take ``cost[kind]`` seconds and return their kind."""

    def serial():
        clock.now += cost[SERIAL]
        return SERIAL

    def threaded():
        clock.now += cost[THREADED]
        return THREADED

    return serial, threaded


def test_times_both_kinds_then_prefers_the_faster_and_probes_the_other():
    clock = _Clock()
    cost = {SERIAL: 2.0, THREADED: 1.0}
    c = ScheduleChooser(probe_every=8, warmup=1, calibrate=3, clock=clock)
    serial, threaded = _kernels(clock, cost)
    kinds = [c.run(serial, threaded) for _ in range(44)]
    assert kinds[:8] == [THREADED, SERIAL] * 4  # each kind in turn: one warm-up call, three timed
    assert c.times == [2.0, 1.0] and c.preferred == THREADED and not c.calibrating
    rest = kinds[8:]
    assert rest.count(SERIAL) == 4  # one probe per 8 preferred calls
    assert all(rest[i] == SERIAL for i in range(8, len(rest), 9))


def test_one_slow_call_while_calibrating_does_not_decide():
    # measured: the second threaded call of a 27m_vs_30m step at B=1,024 took ~6x the later ones
    clock = _Clock()
    cost = {SERIAL: 2.0, THREADED: 1.0}
    c = ScheduleChooser(probe_every=64, warmup=1, calibrate=3, clock=clock)
    serial, threaded = _kernels(clock, cost)
    c.run(serial, threaded)  # threaded warm-up
    c.run(serial, threaded)  # serial warm-up
    cost[THREADED] = 6.0
    assert c.run(serial, threaded) == THREADED  # the one slow timed call
    cost[THREADED] = 1.0
    kinds = [c.run(serial, threaded) for _ in range(20)]
    assert c.times[THREADED] == 1.0 and c.preferred == THREADED
    assert kinds[5:] == [THREADED] * 15


def test_follows_a_change_of_load_both_ways():
    clock = _Clock()
    cost = {SERIAL: 2.0, THREADED: 1.0}
    c = ScheduleChooser(probe_every=8, clock=clock)
    serial, threaded = _kernels(clock, cost)
    for _ in range(20):
        c.run(serial, threaded)
    assert c.preferred == THREADED
    cost[THREADED] = 20.0  # another process takes a core: the threaded call waits for a time slice
    kinds = [c.run(serial, threaded) for _ in range(30)]
    assert c.preferred == SERIAL and kinds[-8:].count(THREADED) <= 1
    assert kinds.index(SERIAL) <= 9  # switched within one probe interval
    cost[THREADED] = 1.0  # the load is gone: the next probe's time replaces the stale average
    kinds = [c.run(serial, threaded) for _ in range(20)]
    assert c.preferred == THREADED and kinds[-8:].count(THREADED) >= 7


def test_untimed_kinds_are_nan_and_bad_settings_are_refused():
    c = ScheduleChooser()
    assert all(math.isnan(t) for t in c.times) and c.choose() == THREADED
    with pytest.raises(ValueError, match="probe_every"):
        ScheduleChooser(probe_every=1)
    with pytest.raises(ValueError, match="smoothing"):
        ScheduleChooser(smoothing=0.0)
    with pytest.raises(ValueError, match="warmup"):
        ScheduleChooser(warmup=-1)
    with pytest.raises(ValueError, match="calibrate must be an int >= 1.*got 0"):
        ScheduleChooser(calibrate=0)
    # found in a review: True passed as a count (1) or a weight (1.0), a string ended in a bare TypeError
    for name, bad in (("probe_every", True), ("warmup", True), ("calibrate", True), ("smoothing", True), ("smoothing", "0.5")):
        with pytest.raises(ValueError, match=rf"{name} must be .*got {re.escape(repr(bad))}"):
            ScheduleChooser(**{name: bad})
