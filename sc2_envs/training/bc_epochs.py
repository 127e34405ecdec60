"""The epoch bookkeeping of behaviour cloning (``algos/bc_reweight.py``): run folder, resume, TensorBoard, stop.

A behaviour-cloning run counts epochs, not env steps, so it keeps its own small loop around
:mod:`sc2_envs.training.run` (the run folder, ``run_meta.json``, ``resume.pt``, RNG states,
signals). The algorithm file calls, in order:

* :func:`resume_run` (``--resume``) and :func:`open_run_dir`, then trains inside
  (``sc2_envs.training.run.discard_unstarted_run`` removes the folder of a run that failed before its first epoch);
* :func:`resume_training` before the first epoch of a resumed run;
* :func:`end_epoch` after every epoch: the epoch's record goes to the history and to TensorBoard
  (:func:`log_scalars`, the epoch as the step), ``resume.pt`` is rewritten (:func:`save_epoch`), and a
  requested stop ends the run with :func:`stopped`'s summary.

The selection that follows the last epoch is :mod:`sc2_envs.training.bc_selection`.
"""

from __future__ import annotations

import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

import torch

from sc2_envs.training.cli import resume_args
from sc2_envs.training.run import (
    RESUME_FILE,
    GracefulStop,
    load_resume,
    make_run_dir,
    note_resume,
    rng_state,
    save_resume,
    set_rng_state,
    write_run_meta,
)
from sc2_envs.validation import check_out_dir

__all__ = [
    "end_epoch",
    "log_scalars",
    "open_run_dir",
    "restart_curves",
    "resume_run",
    "resume_training",
    "save_epoch",
    "stopped",
]

# one open TensorBoard writer per run folder: every event of a process goes into one file (see restart_curves)
_WRITERS: dict = {}


def _writer(run_dir: Path):
    """The run's open TensorBoard writer (opened on first use)."""
    from torch.utils.tensorboard import SummaryWriter

    key = str(run_dir)
    if key not in _WRITERS:
        _WRITERS[key] = SummaryWriter(key)
    return _WRITERS[key]


def log_scalars(run_dir: Path, rec: dict) -> None:
    """Write the numeric entries of ``rec`` to TensorBoard (``run_dir``), with ``rec["epoch"]`` as the step.

    A key without ``/`` is logged as ``bc/<key>``; booleans, lists and dicts are left out.
    """
    w = _writer(run_dir)
    for k, v in rec.items():
        if k != "epoch" and isinstance(v, (int, float)) and not isinstance(v, bool):
            w.add_scalar(k if "/" in k else f"bc/{k}", v, rec["epoch"])
    w.flush()


def restart_curves(run_dir: Path, history: list) -> None:
    """Supersede every earlier TensorBoard event of ``run_dir`` and write the ``bc/…`` figures of ``history`` again.

    A resumed run may already hold ``behaviour/…`` points of an earlier selection (the run had finished,
    or was killed while selecting); TensorBoard would show a second point per epoch beside them. A session
    start at step 1 (what ``SummaryWriter(purge_step=1)`` writes) makes TensorBoard drop all events before
    it (every step is an epoch >= 1), so the per-epoch figures are written once more from ``history`` and
    each curve has one point per epoch."""
    from tensorboard.compat.proto.event_pb2 import Event, SessionLog

    # into the open file, not a new one: TensorBoard reads a folder's files in name order, and two files one
    # process opens within a second sort by a counter as text (...pid.10 before ...pid.9)
    _writer(run_dir).file_writer.add_event(Event(step=1, session_log=SessionLog(status=SessionLog.START)))
    for rec in history:
        log_scalars(run_dir, rec)


def resume_run(args: Any, defaults: Any, changeable: tuple[str, ...], given: frozenset[str] | None, script: str):
    """Read ``args.resume`` and merge its saved flags with this command line's.

    Args:
        args: this command line's ``Args`` (``args.resume``: a run folder or its ``resume.pt``).
        defaults: ``Args()`` with every default (:func:`sc2_envs.training.cli.resume_args`).
        changeable: the flags a resumed run may change; every other one keeps the run's value.
        given: the flags the command line set (``given_fields``; None: those that differ from their defaults).
        script: the resuming script's file name; a run of another script is refused.

    Returns:
        ``(args, resumed, run_dir)``: the run's ``Args`` (``resume`` kept), the resume state and its folder.

    Raises:
        FileNotFoundError / ValueError: no resume state there, another script's run, a changed flag that
            may not change, or an ``--epochs`` below the epochs already done.
    """
    resumed, run_dir = load_resume(args.resume, script=script)
    resume_from = args.resume
    args = resume_args(resumed["args"], args, defaults, changeable, given)
    args.resume = resume_from
    if args.epochs < resumed["epoch"]:
        raise ValueError(f"--epochs {args.epochs}: the resumed run has done {resumed['epoch']} epochs; expected at least that")
    return args, resumed, run_dir


def open_run_dir(args: Any, data_name: str, script: str, device: torch.device, resumed: dict | None, resumed_dir: Path | None):
    """The run folder: the resumed one (its resume noted in ``run_meta.json``), ``--run-dir``, or a new one.

    A new run's folder is ``args.run_dir`` (created; it must be empty) or
    ``runs/<data_name>__<exp_name>__<seed>__<unix time>`` (``-2``, ``-3``, ... if taken), and gets
    ``run_meta.json`` with ``args``, the run name, ``script`` and ``device``.

    Raises:
        ValueError: ``--run-dir`` names a folder that holds files (two runs never share a folder), or the
            folder (``--run-dir``, or ``runs`` through ``make_run_dir``) cannot be created or written
            (``sc2_envs.validation.check_out_dir``).
    """
    if resumed is not None:
        note_resume(resumed_dir, from_epoch=resumed["epoch"], config=args, device=str(device))
        return resumed_dir
    if args.run_dir:
        check_out_dir(args.run_dir, "--run-dir")
        run_dir = Path(args.run_dir)
        run_dir.mkdir(parents=True, exist_ok=True)
        if any(run_dir.iterdir()):
            raise ValueError(
                f"--run-dir {args.run_dir}: the folder exists and is not empty; expected a new or empty folder "
                f"(or --resume {args.run_dir} to continue the run in it)"
            )
    else:
        run_dir = make_run_dir("runs", f"{data_name}__{args.exp_name}__{args.seed}__{int(time.time())}")
    write_run_meta(run_dir, args, run_name=run_dir.name, script=script, device=str(device))
    return run_dir


def _generator_state(g: torch.Generator | Any) -> Any:
    """The state of a shuffler, a ``torch.Generator`` or a NumPy ``Generator``, for ``resume.pt``."""
    return g.get_state() if isinstance(g, torch.Generator) else g.bit_generator.state


def _set_generator_state(g: torch.Generator | Any, state: Any) -> None:
    """Restore a state that :func:`_generator_state` returned."""
    if isinstance(g, torch.Generator):
        g.set_state(state)
    else:
        g.bit_generator.state = state


def save_epoch(run_dir: Path, args: Any, epoch: int, history: list, model, opt, extra: dict) -> None:
    """``run_dir/resume.pt`` after ``epoch``: ``asdict(args)``, weights, optimiser, RNG states, history and
    ``extra`` (the shuffler's state), written atomically (:func:`sc2_envs.training.run.save_resume`)."""
    save_resume(
        run_dir / RESUME_FILE,
        {
            "args": asdict(args),
            "epoch": epoch,
            "history": history,
            "model": model.state_dict(),
            "optimizer": opt.state_dict(),
            "rng": rng_state(),
            **extra,
        },
    )


def resume_training(resumed: dict, run_dir: Path, model, opt, generator) -> tuple[int, list]:
    """Restore weights, optimiser, RNG states and the shuffler ``generator`` (a ``torch.Generator`` or a
    NumPy ``Generator``, as :func:`end_epoch` saved it) of a resume state; returns ``(last epoch done, history)``.

    TensorBoard's
    writer reopens with a purge from the next epoch, so curves continue without the events logged
    after the resume state (after a hard kill).
    """
    model.load_state_dict(resumed["model"])
    opt.load_state_dict(resumed["optimizer"])
    set_rng_state(resumed["rng"])
    _set_generator_state(generator, resumed["generator"])
    from torch.utils.tensorboard import SummaryWriter

    _WRITERS[str(run_dir)] = SummaryWriter(str(run_dir), purge_step=int(resumed["epoch"]) + 1)
    print(f"resumed from {run_dir / RESUME_FILE} after epoch {resumed['epoch']}")
    return int(resumed["epoch"]), list(resumed["history"])


def stopped(args: Any, run_dir: Path, epoch: int, history: list, reason: str | None) -> dict:
    """The summary of a run stopped by a signal after ``epoch`` of ``args.epochs`` (no selection yet):
    ``{"history", "stopped_after_epoch"}``; prints how to continue."""
    print(
        f"stopped by {reason} after epoch {epoch}/{args.epochs}: run folder {run_dir} (epoch_{epoch:03d}.pt, "
        f"resume.pt); continue with --resume {run_dir}",
        flush=True,
    )
    return {"history": history, "stopped_after_epoch": epoch}


def end_epoch(
    run_dir: Path, args: Any, rec: dict, history: list, model, opt, generator, stop: GracefulStop | None
) -> dict | None:
    """Book epoch ``rec["epoch"]``: append ``rec`` to ``history``, log it, write ``resume.pt`` (with the
    state of the shuffler ``generator``, a ``torch.Generator`` or a NumPy ``Generator``, as ``generator``).

    Returns:
        :func:`stopped`'s summary when ``stop`` was requested (the run ends after this epoch), else None.
    """
    history.append(rec)
    log_scalars(run_dir, rec)
    save_epoch(run_dir, args, rec["epoch"], history, model, opt, {"generator": _generator_state(generator)})
    if stop is not None and stop.requested:
        return stopped(args, run_dir, rec["epoch"], history, stop.reason)
    return None
