"""What a training run prints: the per-iteration progress (a tqdm bar on a terminal, one line per
iteration otherwise; the training return is left out until an episode has finished), the env's
share of the iteration time, and the notes of the end-of-run line."""

from __future__ import annotations

import os
import sys
import time
from typing import Any, TextIO


def plural(n: int, word: str, many: str | None = None) -> str:
    """``"1 iteration"``, ``"2 iterations"``, ``"1,000 iterations"``; ``many`` is the plural when it is
    not ``word + "s"`` (``plural(2, "pass", "passes")``)."""
    return f"{n:,} {word if n == 1 else (many or word + 's')}"


def resume_hint(run_dir: str | os.PathLike, finished: bool, total_timesteps: int) -> str:
    """What the end-of-run line suggests: ``continue with --resume <run>`` for a run that stopped
    early, or, for one that used its whole budget (where a plain ``--resume`` has nothing to do),
    ``train longer with --resume <run> --total-timesteps N`` with N above the steps done."""
    if finished:
        return f"to train longer: --resume {run_dir} --total-timesteps N (N > {total_timesteps:,})"
    return f"continue with --resume {run_dir}"


def env_share_note(share_sum: float, share_n: int, apart_share: float | None, apart_n: int = 1) -> str:
    """``", env 24% of the iteration time"`` for the end-of-run line: the mean share of this process's
    iterations other than those kept apart, which are its first and any other in which a kernel of the
    simulator ran for the first time (a one-time compile or cache load: ``sim.runtime.first_use``; e.g. the
    auto-reset's kernel when the first episode ends). ``share_sum`` / ``share_n``: the other iterations'
    shares and count; ``apart_share``: the last kept-apart iteration's share, given (labelled) only when
    there is no other; ``apart_n``: how many were kept apart."""
    if share_n:
        return (
            f", env {share_sum / share_n:.0%} of the iteration time (the first iteration and any with a one-time "
            "kernel compile or cache load, or during a background compile, excluded)"
        )
    if apart_share is not None:
        if apart_n <= 1:
            return (
                f", env {apart_share:.0%} of the iteration time (this process ran one iteration, including the "
                "one-time kernel compile or cache load)"
            )
        return (
            f", env {apart_share:.0%} of the last iteration's time (each of this process's {apart_n} iterations "
            "included a one-time kernel compile or cache load, or ran during a background compile on the torch path)"
        )
    return ""


def _background_compile() -> bool:
    """Whether this process is compiling the simulator's numba kernels in the background (``sim.runtime.warmup``)."""
    from sc2_envs.sim.runtime.warmup import compiling  # imports no Numba itself (no job without it)

    return compiling()


class EnvShares:
    """The env's share of each training iteration's wall time, for the end-of-run line
    (:func:`env_share_note`). A process's first iteration, and any iteration in which a simulator kernel
    ran for the first time (``sim.runtime.first_use.first_calls_done`` grew: a compile or cache load), are
    kept apart from the mean. Usage: :meth:`start` at the top of an iteration, :meth:`add` with its
    share at the end, :meth:`note` after the last."""

    def __init__(self) -> None:
        self.share_sum, self.share_n = 0.0, 0
        self.apart_share: float | None = None
        self.apart_n = 0
        self._first_calls = 0
        self._compiling = False

    def start(self) -> None:
        from sc2_envs.sim.runtime.first_use import first_calls_done

        self._first_calls = first_calls_done()
        self._compiling = _background_compile()

    def add(self, share: float) -> str:
        """Record an iteration's env share; returns it as the progress line shows it, marked when a
        kernel made its first call in the iteration (its compile or cache load counts as env time) or
        a background compile ran during it (the simulators played on the slower torch path meanwhile,
        ``sim.runtime.warmup``); such iterations are kept apart too."""
        from sc2_envs.sim.runtime.first_use import first_calls_done

        first_call = first_calls_done() > self._first_calls
        compiling_now = _background_compile()
        compiling = self._compiling or compiling_now
        if self.share_n + self.apart_n == 0 or first_call or compiling:
            self.apart_share, self.apart_n = share, self.apart_n + 1
        else:
            self.share_sum, self.share_n = self.share_sum + share, self.share_n + 1
        if compiling:
            return f"{share:.0%} (torch path while the kernel compiled in the background)"
        return f"{share:.0%} (incl. a kernel's first call)" if first_call else f"{share:.0%}"

    def note(self) -> str:
        return env_share_note(self.share_sum, self.share_n, self.apart_share, self.apart_n)


def wall_time_note(run_s: float, process_s: float, resumed: bool) -> str:
    """``"14 s"`` for the end-of-run line, the run's wall time in seconds (what its SPS divides by);
    a resumed run's counts its earlier processes too, so this process's own share is added:
    ``"14 s (whole run; 5 s in this process)"``."""
    if not resumed:
        return f"{run_s:.0f} s"
    return f"{run_s:.0f} s (whole run; {process_s:.0f} s in this process)"


def format_progress(ret: float | None, win: float, sps: int | float, **extra: Any) -> str:
    """``ret=… win=… sps=…`` for a progress line; ``ret`` is left out while it is ``None`` (no
    training episode has finished yet) and ``win`` shows ``nan`` until the first evaluation."""
    parts = [] if ret is None else [f"ret={ret:.2f}"]
    parts.append(f"win={win:.2f}")
    parts.append(f"sps={int(sps)}")
    parts += [f"{k}={v}" for k, v in extra.items()]
    return " ".join(parts)


class Progress:
    """Per-iteration progress: a tqdm bar when stdout is a terminal, else one plain line per iteration.

    Args:
        num_iterations: iterations of the whole run.
        batch_size: env steps per iteration.
        start_iteration: iterations already done (a resumed run's bar starts there).
        tty: force the bar (``True``) or the lines (``False``); default ``sys.stdout.isatty()``.
        stream: where lines go (default ``sys.stdout``).
        elapsed_before: wall seconds of the run's earlier processes (a resumed run): a line's time is
            the whole run's, as its ``sps`` (env steps over the whole run's time). The bar's own
            elapsed time is tqdm's, for this process; a resumed bar (``start_iteration > 0``) leaves
            out tqdm's rate, which would count this process only, next to the whole run's ``sps``.
    """

    def __init__(
        self,
        num_iterations: int,
        batch_size: int,
        start_iteration: int = 0,
        tty: bool | None = None,
        stream: TextIO | None = None,
        elapsed_before: float = 0.0,
    ):
        self.num_iterations, self.batch_size = int(num_iterations), int(batch_size)
        self.elapsed_before = float(elapsed_before)
        self.stream = stream or sys.stdout
        self.tty = self.stream.isatty() if tty is None else bool(tty)
        self.last_return: float | None = None
        self._t0 = time.time()
        self.bar = None
        if self.tty:
            from tqdm import tqdm

            resumed = int(start_iteration) > 0
            self.bar = tqdm(
                total=self.num_iterations * self.batch_size,
                initial=int(start_iteration) * self.batch_size,
                unit="step",
                dynamic_ncols=True,
                file=self.stream,
                bar_format="{l_bar}{bar}| {n_fmt}/{total_fmt} [{elapsed}<{remaining}{postfix}]" if resumed else None,
            )

    def update(
        self,
        iteration: int,
        global_step: int,
        ret: float | None,
        win: float,
        sps: int | float,
        extra: dict[str, Any] | None = None,
    ) -> str:
        """Report iteration ``iteration`` (1-based). ``ret``: mean return of the training episodes
        that finished in it (``None`` if none did: the last known one is shown, nothing before the
        first). ``extra``: further ``name=value`` fields shown after ``sps`` (e.g. the env's share
        of the iteration time). Returns the text of the fields."""
        if ret is not None:
            self.last_return = ret
        fields = format_progress(self.last_return, win, sps, **(extra or {}))
        if self.bar is not None:
            self.bar.update(self.batch_size)
            self.bar.set_postfix_str(fields)
        else:
            print(
                f"iteration {iteration}/{self.num_iterations} step {global_step} {fields} "
                f"({self.elapsed_before + time.time() - self._t0:.0f} s)",
                file=self.stream,
                flush=True,
            )
        return fields

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
