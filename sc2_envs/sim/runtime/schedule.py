"""Serial or threaded kernel calls, chosen by their measured wall time (results are the same either way).

A threaded call is a fork/join (chunks of envs on threads, ``runtime.chunks``): it ends when the
last thread has done its chunk. On an idle 2-core machine it runs 2s3z's step 1.2-1.6x as fast as
the serial call from 128 envs up (``numba.dynamics.PARALLEL_MIN_ENVS``). When another process keeps a core busy, the scheduler
can leave one of the threads waiting for a time slice of several milliseconds, and every call waits for it.
Measured with one competing busy process on the 2-core machine when the threads were Numba's OpenMP
ones (2s3z, env steps/s, threaded / serial): 0.07x at B=32, 0.10x at B=64, 0.56x at B=256, 0.93x at
B=1024 (docs/speed.md, "Threads inside the numba step", which gives the one-off script's command). A fixed
rule by batch size cannot know the load, and the 1-minute load average reacts in tens of seconds,
so :class:`ScheduleChooser` measures instead: it times the calls of each kind (seconds per call,
smoothed), makes the faster kind the default, and re-times the other one every ``probe_every``
calls, so a change of load is followed within a few hundred steps.

The first choice is made on the fastest of ``calibrate`` timed calls of each kind, taken in turn.
One timed call each was not enough: the second threaded call of a 27m_vs_30m step at B=1,024 took
0.16 s against 0.028 s for the later ones (the threads' first touches of their memory), so the
serial call (0.054 s) won and, at 64 calls between probes, kept every call of a 3-second benchmark
window: 18,100 env steps/s where the threaded calls give 27,900 (the same run, forced, idle 2-core
machine, commit c5e86f9).

Envs never interact and each env's arithmetic is the same in both kinds, so the choice changes
speed only (``tests/test_kernel_tick.py`` and ``tests/test_kernel_step.py`` check serial ==
threaded bit for bit).
"""

from __future__ import annotations

import math
import time

SERIAL, THREADED = 0, 1


class ScheduleChooser:
    """Chooses serial or threaded for each call of one kernel of a fixed batch size.

    Args:
        probe_every: after this many calls of the preferred kind, one call of the other (its time
            refreshed); ``>= 2``.
        smoothing: weight of the newest time in each kind's exponential average, in ``(0, 1]``.
        warmup: calls of each kind that are not timed (the first ones compile or fault pages in).
        calibrate: timed calls of each kind, alternating, before the first choice; each kind's first
            time is the fastest of them (a one-off slow call does not decide).
        clock: seconds as a float (``time.perf_counter``; tests pass a fake clock).

    Use: ``kind = c.choose()``, run the call, then ``c.record(kind, seconds)``. ``c.times`` holds
    the smoothed seconds per call of each kind (``nan`` until timed).

    Raises:
        ValueError: ``probe_every < 2``, ``smoothing`` outside ``(0, 1]``, ``warmup < 0`` or
            ``calibrate < 1``, or a setting of another type (a bool or a string is not a number).
    """

    def __init__(
        self,
        probe_every: int = 64,
        smoothing: float = 0.25,
        warmup: int = 1,
        calibrate: int = 3,
        clock=time.perf_counter,
    ):
        def is_int(v) -> bool:  # a bool is not a count (True would pass as 1)
            return isinstance(v, int) and not isinstance(v, bool)

        if not is_int(probe_every) or probe_every < 2:
            raise ValueError(f"probe_every must be an int >= 2 (calls between probes), got {probe_every!r}")
        if isinstance(smoothing, bool) or not isinstance(smoothing, (int, float)) or not 0.0 < smoothing <= 1.0:
            raise ValueError(f"smoothing must be a number in (0, 1], got {smoothing!r}")
        if not is_int(warmup) or warmup < 0:
            raise ValueError(f"warmup must be an int >= 0 (untimed calls per kind), got {warmup!r}")
        if not is_int(calibrate) or calibrate < 1:
            raise ValueError(f"calibrate must be an int >= 1 (timed calls per kind before choosing), got {calibrate!r}")
        self.probe_every, self.smoothing, self.warmup, self.clock = probe_every, smoothing, warmup, clock
        self.calibrate = calibrate
        self.times = [math.nan, math.nan]
        self._seen = [0, 0]
        self._since_probe = 0

    @property
    def preferred(self) -> int:
        """The kind with the lower smoothed time (threaded until both are timed)."""
        s, t = self.times
        if math.isnan(s) or math.isnan(t):
            return THREADED
        return SERIAL if s < t else THREADED

    @property
    def calibrating(self) -> bool:
        """True until each kind has had ``warmup + calibrate`` calls."""
        return min(self._seen) < self.warmup + self.calibrate

    def choose(self) -> int:
        """``SERIAL`` or ``THREADED`` for the next call."""
        if self.calibrating:  # both kinds in turn (threaded first), so a passing load hits both
            return THREADED if self._seen[THREADED] <= self._seen[SERIAL] else SERIAL
        if self._since_probe >= self.probe_every:
            return 1 - self.preferred
        return self.preferred

    def record(self, kind: int, seconds: float) -> None:
        """Add one call's wall time (``seconds``) of ``kind``.

        While calibrating, each kind keeps its fastest timed call. Then a probe (a call of the kind
        not preferred) replaces that kind's time instead of being averaged in: one probe is all it
        gets for ``probe_every`` calls, and a stale average would keep the threaded kind out long
        after the competing load has gone.
        """
        calibrating = self.calibrating
        probe = not calibrating and kind != self.preferred
        self._since_probe = 0 if probe else self._since_probe + (not calibrating)
        self._seen[kind] += 1
        if self._seen[kind] <= self.warmup:
            return
        old = self.times[kind]
        if calibrating:
            self.times[kind] = seconds if math.isnan(old) else min(old, seconds)
        else:
            self.times[kind] = seconds if probe else old + self.smoothing * (seconds - old)

    def run(self, serial, threaded, *args):
        """Call ``serial(*args)`` or ``threaded(*args)`` by :meth:`choose`, time it, return its result."""
        kind = self.choose()
        t0 = self.clock()
        out = (threaded if kind == THREADED else serial)(*args)
        self.record(kind, self.clock() - t0)
        return out
