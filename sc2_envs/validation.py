"""Small input checks shared by the simulator and the adapters."""

from __future__ import annotations

import numpy as np


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
