"""Run bookkeeping of the training scripts: folders, metadata, stop, resume, initial weights.

* :func:`make_run_dir` creates a new folder per run (atomic ``mkdir``; ``-2``, ``-3``, ... appended
  when the name is taken), so two runs started in the same second never share one.
* :func:`write_run_meta` records the run's full config, command line, git commit and package
  versions in ``run_meta.json``; :func:`note_resume` appends each resumption to it.
* :class:`GracefulStop` turns the first SIGINT / SIGTERM into a request to stop after the current
  iteration and the second into an immediate exit.
* :func:`rng_state` / :func:`set_rng_state` and :func:`save_resume` / :func:`load_resume` carry a
  run over a restart (``--resume``).

The layout follows CleanRL's ``runs/{run_name}`` folders (``cleanrl/ppo.py``).
"""

from __future__ import annotations

import contextlib
import csv
import dataclasses
import datetime
import json
import math
import os
import platform
import random
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path
from typing import Any, TextIO

import numpy as np
import torch

from sc2_envs.sim.rng import eval_seed
from sc2_envs.training import allocator
from sc2_envs.training.checkpoints import (
    ancestors,
    ancestry_text,
    init_weights,
    lineage_after,
    save_atomic,
    trained_by,
    trainer_text,
    training_amount,
    write_atomic,
)
from sc2_envs.training.cli import cli_error, is_plain_name
from sc2_envs.validation import check_out_dir

RESUME_FORMAT = "sc2_envs.resume/2"
"""``format`` key of the files written by :func:`save_resume`."""

RESUME_FILE = "resume.pt"
"""File name of the resume state inside a run folder."""

META_FILE = "run_meta.json"
"""File name of the run metadata inside a run folder."""

PACKAGES = ("torch", "numpy", "gymnasium", "pettingzoo", "sc2-envs")
"""Distributions whose versions :func:`write_run_meta` records."""


def tune_allocator() -> str:
    """:func:`sc2_envs.training.allocator.keep_freed_memory` for a training script: returns its start-up line.

    Raises:
        SystemExit: code 2 (:func:`cli_error`) when ``$SC2_ENVS_KEEP_FREED_MEMORY`` is neither ``"0"``
            nor ``"1"``, or glibc refuses the setting.
    """
    try:
        return allocator.keep_freed_memory()
    except (ValueError, RuntimeError) as e:
        cli_error(str(e))


def load_init_weights(init_from: str, resuming: bool, policy: Any, critic: Any) -> dict | None:
    """``--init-from``: copy the checkpoint's actor and critic weights into a new run's models
    (``checkpoints.init_weights``); a resumed run keeps its own weights and loads nothing.

    Returns:
        The starting checkpoint (``checkpoints.read_checkpoint``'s dict: ``global_step``, ``args``, ...), or
        None when nothing was loaded.

    Raises:
        SystemExit: via :func:`cli_error` (status 2) for a file that cannot be read or does not fit the
            models; the message names the path and what differs.
    """
    if not init_from or resuming:
        return None
    try:
        return init_weights(init_from, policy, critic)
    except (FileNotFoundError, ValueError) as e:
        cli_error(f"--init-from {init_from}: {e}")


def starting_lineage(init_from: str, init_ckpt: dict | None, resumed: dict | None) -> list[dict]:
    """A training run's ``lineage`` record (``checkpoints.lineage_after``: its starting checkpoints, oldest
    first), saved in its checkpoints, ``resume.pt`` and ``run_meta.json``: a resumed run's own record
    when its resume file has one, else the chain of the starting checkpoint ``init_from`` (its dict
    ``init_ckpt``, None when nothing was loaded), else empty (a run from scratch).

    Raises:
        OSError: ``init_from`` cannot be read to take its digest.
    """
    if resumed is not None and resumed.get("lineage"):
        return list(resumed["lineage"])
    if init_ckpt is None:
        return []
    return lineage_after(init_from, init_ckpt)


def start_lines(
    train_maps: list[str], probs: list[float], init_from: str, init_ckpt: dict | None, lineage: list[dict] | None = None
) -> list[str]:
    """The configuration lines of ``--ally-dropout`` and ``--init-from`` printed at a training run's start
    (none when both are off); ``init_ckpt`` is the starting checkpoint (:func:`load_init_weights`), None
    on ``--resume``, where ``lineage`` (the run's saved record, ``checkpoints.lineage_after``) names the
    chain instead. A starting checkpoint that was itself fine-tuned counts only its own env steps, so
    its chain of starting points is named with their training (``checkpoints.ancestors``); one trained
    with ``--ally-dropout`` that this run does not repeat gets a line saying so."""
    lines = []
    shown = ", ".join(f"{m} {p:g}" for m, p in zip(train_maps, probs, strict=True)) if any(probs) else "none"
    if any(probs):
        lines.append(f"ally dropout (training episodes that start with one ally removed): {shown}")
    if init_from:
        if lineage:  # nearest first: the start itself, then where it started
            me, *chain = reversed(lineage)
            amount, who = me["training"], trainer_text(me.get("algorithm"), me.get("seed"))
        elif init_ckpt is not None:
            amount, chain, who = training_amount(init_ckpt), ancestors(init_ckpt), trained_by(init_ckpt)
        else:  # no record of the start (a hand-edited resume file): name the path only
            amount, chain, who = None, [], ""
        parts = []
        if amount:
            origin = f", itself fine-tuned from {ancestry_text(chain)}, whose steps are not included" if chain else ""
            parts.append(f"trained {amount}{f', {who}' if who else ''}{origin}")
        if init_ckpt is None:
            parts.append("the run's starting point; not reloaded on --resume")
        else:
            parts.append("this run's env steps count from 0, with fresh optimisers")
        note = "; ".join(parts)
        lines.append(f"initial weights: {init_from} ({note})")
        before = ((init_ckpt or {}).get("args") or {}).get("ally_dropout") or ()
        before = [float(p) for p in (before if isinstance(before, (list, tuple)) else [before])]
        config = (init_ckpt or {}).get("config") or {}
        was_on = dict(zip(config.get("train_maps") or [config.get("map_name", "?")], before, strict=False))
        now_on = dict(zip(train_maps, (float(p) for p in probs), strict=True))
        if any(p and now_on.get(m, 0.0) != p for m, p in was_on.items()):  # a setting a fine-tune may drop unawares
            was = ", ".join(f"{m} {p:g}" for m, p in was_on.items())
            lines.append(f"the starting checkpoint was trained with ally dropout {was}; this run: {shown}")
    return lines


def zero_shot_eval_seed(run_seed: int, round_index: int, map_index: int) -> np.random.SeedSequence:
    """The evaluation seed of the ``map_index``-th ``--eval-maps`` map at evaluation round ``round_index``.

    ``sc2_envs.eval_seed(run_seed, round_index, 1 + map_index)``: spawn keys of the form
    ``(EVAL_SPAWN_KEY, round, 1 + j, b)``, one element longer than a single-map run's evaluation
    streams ``(EVAL_SPAWN_KEY, round, b)`` and never starting like a training stream, so no zero-shot
    battle repeats a training or training-map evaluation battle (``sc2_envs.sim.rng``).

    Raises:
        ValueError: a negative or non-int argument (as ``eval_seed``).
    """
    return eval_seed(run_seed, round_index, 1 + map_index)


def make_run_dir(root: str | os.PathLike, name: str) -> Path:
    """Create and return a new, empty folder ``root/name`` (``root/name-2``, ``-3``, ... if taken).

    ``os.mkdir`` is atomic, so two processes asking for the same name at the same moment get two
    different folders; an existing folder is never reused. ``root`` is created if needed.

    Raises:
        ValueError: ``name`` is empty or contains a path separator; ``root`` is a file, lies inside one, or is
            not writable (``sc2_envs.validation.check_out_dir``).
    """
    if not is_plain_name(name):
        raise ValueError(f"run name {name!r}: expected a non-empty folder name without path separators")
    check_out_dir(root, "the run folders' root")  # a file in the way: its name, not a FileExistsError from mkdir
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    for k in range(1, 100_000):
        path = root / (name if k == 1 else f"{name}-{k}")
        try:
            path.mkdir()
        except FileExistsError:
            continue
        return path
    raise RuntimeError(f"no free run folder name {name}-<k> under {root}")  # pragma: no cover


def git_commit(path: str | os.PathLike | None = None) -> str:
    """The commit hash of the git checkout holding ``path`` (default: this package), with ``+dirty``
    when tracked files have uncommitted changes; ``"unknown"`` outside a checkout or without git."""
    where = str(path or Path(__file__).resolve().parent)
    try:
        head = subprocess.run(
            ["git", "-C", where, "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", where, "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return head + ("+dirty" if dirty else "") if head else "unknown"


def package_versions(packages: tuple[str, ...] = PACKAGES) -> dict[str, str]:
    """Installed versions of ``packages`` (``"not installed"`` for a missing one)."""
    out = {}
    for name in packages:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


def _jsonable(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        value = dataclasses.asdict(value)
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


def write_run_meta(run_dir: str | os.PathLike, config: Any, **extra: Any) -> Path:
    """Write ``run_dir/run_meta.json``: what is needed to tell runs apart and rerun one.

    Args:
        run_dir: the run folder.
        config: the run's full configuration (a dataclass such as a script's ``Args``, or a dict).
        **extra: more top-level keys (e.g. ``run_name``).

    Keys: ``config``, ``argv`` (the command line), ``cwd``, ``git_commit`` (:func:`git_commit`),
    ``packages`` (:func:`package_versions`), ``python``, ``platform``, ``hostname``, ``started_utc``
    (ISO 8601), ``resumes`` (empty; see :func:`note_resume`), then ``extra``. The training scripts
    pass ``device``, the device actually used (``"cpu"`` when ``config["cuda"]`` is true but no GPU
    is available: ``cuda`` is the flag, not the device); ``happo_gnn.py`` and ``hatrpo_gnn.py`` also pass
    ``torch_threads_used``, the torch CPU thread count in effect (their ``--torch-threads 0`` is torch's
    default, which depends on the machine, and another thread count rounds the updates differently).
    """
    meta = {
        "config": _jsonable(config),
        "argv": [sys.executable, *sys.argv],
        "cwd": os.getcwd(),
        "git_commit": git_commit(),
        "packages": package_versions(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "hostname": platform.node(),
        "started_utc": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "resumes": [],
        **_jsonable(extra),
    }
    path = Path(run_dir) / META_FILE
    _atomic_write_text(path, json.dumps(meta, indent=2) + "\n")
    return path


def note_resume(run_dir: str | os.PathLike, **info: Any) -> None:
    """Append ``{time, argv, git_commit, **info}`` to ``resumes`` in ``run_dir/run_meta.json``
    (the file is created, without a config, if it is missing)."""
    path = Path(run_dir) / META_FILE
    meta = json.loads(path.read_text()) if path.is_file() else {"resumes": []}
    meta.setdefault("resumes", []).append(
        {
            "time_utc": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            "argv": [sys.executable, *sys.argv],
            "git_commit": git_commit(),
            **_jsonable(info),
        }
    )
    _atomic_write_text(path, json.dumps(meta, indent=2) + "\n")


def _atomic_write_text(path: Path, text: str) -> None:
    write_atomic(path, lambda f: f.write(text), binary=False)


class GracefulStop:
    """Context manager: the first SIGINT / SIGTERM asks the loop to stop, the second exits at once.

    Inside the ``with`` block the first signal only sets :attr:`requested` (and prints one line to
    stderr saying so); the training loop checks it after each iteration, then writes its checkpoint
    and exits normally. A second signal raises ``SystemExit(128 + signum)`` (130 for SIGINT, 143 for
    SIGTERM, the shell's convention) wherever the program is. The previous handlers are restored on
    exit. Outside the main thread (where Python cannot install handlers) only :meth:`request` works.

    Attributes:
        requested: ``True`` once a stop was asked for.
        reason: ``"SIGINT"``, ``"SIGTERM"``, the reason given to :meth:`request`, or ``None``.
    """

    def __init__(self, signals: tuple[int, ...] = (signal.SIGINT, signal.SIGTERM), stream: TextIO | None = None):
        self.signals = tuple(signals)
        self.requested = False
        self.reason: str | None = None
        self._stream = stream
        self._previous: dict[int, Any] = {}

    def request(self, reason: str = "request") -> None:
        """Ask for a stop after the current iteration (what the first signal does)."""
        self.requested = True
        self.reason = self.reason or reason

    def _handle(self, signum, frame) -> None:
        name = signal.Signals(signum).name
        if self.requested:
            print(f"{name} again: aborting now, without a checkpoint", file=self._stream or sys.stderr, flush=True)
            raise SystemExit(128 + signum)
        self.request(name)
        print(
            f"{name} received: finishing this iteration, then checkpoint and exit (send it again to abort now)",
            file=self._stream or sys.stderr,
            flush=True,
        )

    def install(self) -> GracefulStop:
        """Install the handlers (what entering the ``with`` block does); returns ``self``."""
        if threading.current_thread() is threading.main_thread():
            for s in self.signals:
                self._previous[s] = signal.signal(s, self._handle)
        return self

    def restore(self) -> None:
        """Put the previous handlers back (what leaving the ``with`` block does)."""
        for s, h in self._previous.items():
            signal.signal(s, h)
        self._previous.clear()

    def __enter__(self) -> GracefulStop:
        return self.install()

    def __exit__(self, *exc) -> None:
        self.restore()


def rng_state() -> dict:
    """The states of Python's ``random``, NumPy's global generator and torch's CPU (and CUDA)
    generators, in a form ``torch.load(weights_only=True)`` accepts (NumPy's key as an int64 tensor)."""
    np_state = np.random.get_state(legacy=False)
    state = {
        "python": random.getstate(),
        "numpy": {
            "bit_generator": np_state["bit_generator"],
            "key": torch.from_numpy(np.asarray(np_state["state"]["key"], dtype=np.int64)),
            "pos": int(np_state["state"]["pos"]),
            "has_gauss": int(np_state["has_gauss"]),
            "gauss": float(np_state["gauss"]),
        },
        "torch": torch.get_rng_state(),
    }
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict) -> None:
    """Restore what :func:`rng_state` returned (CUDA states only if saved and CUDA is in use)."""
    py = state["python"]
    random.setstate((py[0], tuple(py[1]), py[2]))
    n = state["numpy"]
    np.random.set_state(
        {
            "bit_generator": n["bit_generator"],
            "state": {"key": n["key"].numpy().astype(np.uint32), "pos": n["pos"]},
            "has_gauss": n["has_gauss"],
            "gauss": n["gauss"],
        }
    )
    torch.set_rng_state(state["torch"].cpu())
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all([s.cpu() for s in state["cuda"]])


def to_cpu(obj: Any) -> Any:
    """``obj`` with every tensor (in nested dicts, lists and tuples) detached and copied to the CPU."""
    if isinstance(obj, torch.Tensor):
        return obj.detach().cpu().clone()
    if isinstance(obj, dict):
        return {k: to_cpu(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(to_cpu(v) for v in obj)
    return obj


def save_resume(path: str | os.PathLike, state: dict) -> Path:
    """Write ``{"format": RESUME_FORMAT, **state}`` to ``path`` atomically (a temporary file in the
    same folder, then ``os.replace``), so a crash mid-write leaves the previous file intact.

    ``state`` must hold only tensors, Python scalars, strings and containers of them (what
    ``torch.load(weights_only=True)`` reads back); tensors are copied to the CPU.
    """
    return save_atomic({"format": RESUME_FORMAT, **to_cpu(state)}, path)


def load_resume(path: str | os.PathLike, script: str | None = None) -> tuple[dict, Path]:
    """Read a resume state written by :func:`save_resume`.

    Args:
        path: a run folder (its ``resume.pt`` is read) or the file itself.
        script: the resuming script's file name (``happo_gnn.py``); if given, a run whose
            ``run_meta.json`` names another ``script`` is refused (its saved flags and state are
            another algorithm's). A folder without that record is not checked.

    Returns:
        ``(state, run_dir)``: the dict (tensors on the CPU) and the folder holding the file.

    Raises:
        FileNotFoundError: no such folder or file, or a folder without ``resume.pt``.
        ValueError: the file is not a resume state of this format, or the run is another script's.
    """
    path = Path(path)
    if path.is_dir():
        path = path / RESUME_FILE
        if not path.is_file():
            raise FileNotFoundError(
                f"--resume {path.parent}: no {RESUME_FILE} in that folder; expected a run folder "
                "written by a script of this package (it saves one at each evaluation)"
            )
    elif not path.is_file():
        raise FileNotFoundError(f"--resume {str(path)!r} does not exist; expected a run folder or its {RESUME_FILE}")
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:
        if isinstance(e, MemoryError):
            raise
        raise ValueError(
            f"--resume {path}: not readable as a torch file ({type(e).__name__}); expected a {RESUME_FILE}"
        ) from None
    if not isinstance(state, dict) or state.get("format") != RESUME_FORMAT:
        found = state.get("format") if isinstance(state, dict) else type(state).__name__
        raise ValueError(f"--resume {path}: format {found!r}; expected a {RESUME_FORMAT!r} file ({RESUME_FILE})")
    if script is not None and (path.parent / META_FILE).is_file():
        try:
            written_by = json.loads((path.parent / META_FILE).read_text()).get("script")
        except (ValueError, AttributeError):  # an unreadable record: nothing to compare
            written_by = None
        if written_by is not None and written_by != script:
            raise ValueError(
                f"--resume {path.parent}: a run of {written_by} (its {META_FILE}); expected a run of {script}, "
                f"which continues only its own runs"
            )
    return state, path.parent


def truncate_csv(path: str | os.PathLike, column: str, last: float) -> int:
    """Drop the rows of CSV ``path`` whose ``column`` exceeds ``last`` (rows written after the state a
    run resumes from); returns the number of rows kept. A missing file is left missing (0)."""
    path = Path(path)
    if not path.is_file():
        return 0
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    if not rows:
        return 0
    col = rows[0].index(column)
    kept = [rows[0]] + [r for r in rows[1:] if r and float(r[col]) <= last]
    write_atomic(path, lambda f: csv.writer(f).writerows(kept), binary=False)
    return len(kept) - 1


@contextlib.contextmanager
def discard_unstarted_run(run_dir: str | os.PathLike, resumed: bool, started_file: str) -> Iterator[None]:
    """Around a run's start: a new run that fails before it started leaves no folder.

    On an exception the folder is removed unless the run was resumed or ``run_dir / started_file``
    exists (the file a run writes once it has started: the learner's event log, the first
    ``resume.pt``), and the exception gets ``before_training`` (True when the folder was removed),
    which a command line reads to tell bad input (one line, exit status 2) from a failure in training.
    The exception is never swallowed.

    Args:
        run_dir: the run folder.
        resumed: the run continues an earlier one (its folder is always kept).
        started_file: name of the file whose presence says the run has started.
    """
    try:
        yield
    except BaseException as exc:
        started = resumed or (Path(run_dir) / started_file).exists()
        if not started:  # e.g. bad input found while building the models: nothing worth keeping
            shutil.rmtree(run_dir, ignore_errors=True)
        if isinstance(exc, Exception):
            exc.before_training = not started
        raise
