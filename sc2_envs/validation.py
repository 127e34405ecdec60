"""Small input checks shared by the simulator and the adapters."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import torch


def contains_bool(values) -> bool:
    """Whether a (nested) list / tuple, or an object array, holds a Python or NumPy bool.

    Why: ``np.asarray([True, 1, 1])`` is an int array, so a bool mixed into a list of numbers would
    silently be read as 1 (an action, a coordinate); an all-bool list becomes a bool array, which the
    callers refuse by dtype.
    """
    if isinstance(values, (bool, np.bool_)):
        return True
    if isinstance(values, np.ndarray):
        return values.dtype == object and any(contains_bool(v) for v in values.ravel())
    if isinstance(values, (list, tuple)):
        return any(contains_bool(v) for v in values)
    return False


def did_you_mean(name, choices) -> str:
    """``" (did you mean '2s3z'?)"`` for the closest of ``choices`` to a mistyped ``name`` (``difflib``,
    case-insensitive), or ``""`` when none is close or ``name`` is not a string.

    Both sides are compared in Unicode NFKC form, so a name typed in compatibility characters that look
    like ASCII (the full-width ``"２s３z"`` of an East Asian input method) gets the name it looks like.
    """
    import difflib
    import unicodedata

    if not isinstance(name, str):
        return ""

    def key(s: str) -> str:
        return unicodedata.normalize("NFKC", s).casefold()

    folded = {key(c): c for c in choices}
    close = difflib.get_close_matches(key(name), list(folded), n=1, cutoff=0.6)
    return f" (did you mean {folded[close[0]]!r}?)" if close else ""


def off_map(x: float, y: float, size: float) -> str | None:
    """Why the point ``(x, y)`` is not on a ``size`` x ``size`` map as the simulator's float32 state holds it
    (``0 <= x, y < size`` after rounding: 31.99999999 is 32.0 there), or None when it is on the map."""
    x32, y32 = float(np.float32(x)), float(np.float32(y))
    if 0.0 <= x32 < size and 0.0 <= y32 < size:
        return None
    rounded = f" ({x32!r}, {y32!r} in float32, the state's precision)" if (x32, y32) != (x, y) else ""
    return f"({x}, {y}){rounded} is off the {size}x{size} map (0 <= x, y < {size})"


def as_device(device) -> torch.device:
    """``torch.device(device)``, or a ``ValueError`` naming the value unless it is ``'cpu'`` (index 0)
    or a visible CUDA device (the simulator's and the checkpoints' devices)."""
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError):
        raise ValueError(f"device must be a torch device such as 'cpu', 'cuda' or 'cuda:1', got {device!r}") from None
    if dev.type not in ("cpu", "cuda"):  # mps, xpu, meta, ...: the simulator's code paths are CPU and CUDA
        raise ValueError(f"device must be 'cpu' or a CUDA device such as 'cuda' or 'cuda:1', got {device!r}")
    if dev.type == "cpu" and dev.index not in (None, 0):  # torch accepts 'cpu:1' but puts tensors on 'cpu'
        raise ValueError(f"device {device!r}: the CPU device has index 0 only; expected 'cpu' or 'cpu:0'")
    if dev.type == "cpu":
        return torch.device("cpu")  # what CPU tensors report as their device ('cpu:0' would compare unequal)
    if dev.type == "cuda":
        n = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if n == 0:
            raise ValueError(
                f"device {device!r} needs CUDA, but torch.cuda.is_available() is False "
                f"(torch {torch.__version__}); use device='cpu'"
            )
        if dev.index is not None and dev.index >= n:
            raise ValueError(f"device {device!r}: CUDA device index {dev.index} out of range, {n} device(s) visible")
    return dev


def check_out_dir(path: str | os.PathLike, flag: str = "--out-dir") -> None:
    """Refuse an output folder that cannot be created or written to, before any work: ``path`` or its
    nearest existing parent is a file, or that folder is not writable. The scripts call it on their
    output flags first, so that a typo fails at once instead of after the runs or evaluations.

    Raises:
        ValueError: naming the flag, the value and the file (or folder) that is in the way.
    """
    p = Path(path).absolute()
    existing = next(q for q in (p, *p.parents) if q.exists() or q == q.parent)
    if not existing.is_dir():
        where = "is a file" if existing == p else f"is inside {str(existing)!r}, which is a file"
        raise ValueError(f"{flag} {str(path)!r} {where}; expected a folder (new or existing)")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise ValueError(
            f"{flag} {str(path)!r}: the folder {str(existing)!r} is not writable; expected a folder to write into"
        )
