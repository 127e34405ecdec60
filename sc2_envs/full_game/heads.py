"""Validation of FullGame-v0's action heads (``sc2_envs.full_game.spec.ACTION_HEADS``), for every backend.

An action is a dict of heads: ``action_type`` a raw function id in ``[0, spec.num_functions())``, ``queued``
0/1, ``delay`` in ``[0, spec.MAX_DELAY]``, ``selected_units`` up to ``max_selected`` entity rows ended by EOF
(``max_entities``; -1 also ends it, as in the replay datasets), ``target_unit`` an entity row or
``max_entities`` (none), ``target_location`` a raw-grid cell (col, row) in ``[0, raw_resolution)``. A missing
head takes its absent value (0, EOF, none, cell (0, 0)). Values outside these ranges, non-integer values
(a float would be truncated, a bool read as 0 / 1), wrong shapes and unknown keys are refused with a
``ValueError`` naming the head and the value; a well-formed action that points at padding rows is not
refused here (the backends play it as a no-op with a ``spec.InvalidAction`` code).

The lite engine (``sc2_envs.lite``) checks batched heads with :func:`check_heads`; the real game's
``FullGameEnv`` one game's with :func:`check_action`, so both backends refuse the same actions.
"""

from __future__ import annotations

import numpy as np

from sc2_envs.full_game import spec

__all__ = ["HEADS", "check_action", "check_action_keys", "check_heads"]

HEADS = ("action_type", "queued", "delay", "selected_units", "target_unit", "target_location")
_INT64_MAX = np.iinfo(np.int64).max


def _is_int(x) -> bool:
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def _without_batch_axis(v: np.ndarray):
    """One game's head as its caller gave it, without the batch axis of one added for ``check_heads``: ``1.5``,
    ``[1.5, 0.0]``."""
    return np.asarray(v[0] if v.ndim else v).tolist()


def check_action_keys(action) -> None:
    """Refuse an action that is not a dict of heads, or that names a head that does not exist.

    Why: a misspelled head (``"action_typ"``) would otherwise take its absent value and the step
    would silently be a no-op.

    Raises:
        ValueError: ``action`` is not a dict, or has a key outside ``HEADS`` (the message names the
            key and the accepted keys).
    """
    if not isinstance(action, dict):
        raise ValueError(f"action={action!r}; expected a dict of heads with keys from {list(HEADS)}")
    unknown = [k for k in action if k not in HEADS]
    if unknown:
        raise ValueError(f"action has unknown keys {unknown}; expected keys from {list(HEADS)}")


def check_heads(
    action: dict, num_games: int, max_entities: int, max_selected: int, resolution: int, batched: bool = True
) -> dict:
    """Validate batched heads and return them as int64 arrays with a leading B axis.

    Args:
        action: heads with a leading axis B (``action_type (B,)``, ``selected_units (B, K)``, ...);
            a missing head takes its absent value (EOF / no target / cell (0, 0) / 0).
        batched: False when ``action`` is one game's heads with a leading axis of 1 added by the
            caller: error messages then give the shapes and indices without that axis.

    Raises:
        ValueError: ``action`` not a dict, an unknown key, or a head that is not integer, has the
            wrong shape, or is out of its range; the message names the head and the value.
    """
    check_action_keys(action)
    n = num_games
    drop = 0 if batched else 1  # leading axes to leave out of messages
    out = {}
    defaults = {
        "action_type": np.zeros(n, np.int64),
        "queued": np.zeros(n, np.int64),
        "delay": np.zeros(n, np.int64),
        "selected_units": np.full((n, max_selected), max_entities, np.int64),
        "target_unit": np.full(n, max_entities, np.int64),
        "target_location": np.zeros((n, 2), np.int64),
    }
    shapes = {"selected_units": (n, max_selected), "target_location": (n, 2)}
    limits = {
        "action_type": (0, spec.num_functions() - 1),
        "queued": (0, 1),
        "delay": (0, spec.MAX_DELAY),
        "target_unit": (0, max_entities),
        "selected_units": (-1, max_entities),
        "target_location": (0, resolution - 1),
    }
    for head, default in defaults.items():
        if head not in action:
            out[head] = default
            continue
        v = np.asarray(action[head])
        if v.dtype == object and v.size and all(_is_int(x) for x in v.flat):
            # NumPy keeps Python ints that fit no integer dtype (2**70) as objects
            lo, hi = limits[head]
            big = next((int(x) for x in v.flat if not lo <= x <= hi), None)
            if big is not None:
                raise ValueError(f"{head}={big}; expected an int in [{lo}, {hi}]")
        if v.size == 0 and v.dtype == np.float64:  # np.asarray([]) is float64: an empty list selects nothing
            v = v.astype(np.int64)
        if v.dtype == bool or not np.issubdtype(v.dtype, np.integer):
            shown = action[head] if batched else _without_batch_axis(v)
            raise ValueError(f"{head}={shown!r}; expected integer values (dtype {v.dtype} given)")
        if v.dtype.kind == "u" and v.size and v.max() > _INT64_MAX:  # would wrap to negative in int64
            lo, hi = limits[head]
            raise ValueError(f"{head}={int(v.max())}; expected an int in [{lo}, {hi}]")
        want = shapes.get(head, (n,))
        if head == "selected_units" and v.ndim == 2 and v.shape[0] == n and v.shape[1] <= max_selected:
            pad = np.full((n, max_selected), max_entities, np.int64)
            pad[:, : v.shape[1]] = v
            v = pad
        if v.shape != want:
            raise ValueError(f"{head} has shape {v.shape[drop:]}; expected {want[drop:]}")
        out[head] = v.astype(np.int64)
    for head, (lo, hi) in limits.items():
        v = out[head]
        bad = (v < lo) | (v > hi)
        if bad.any():
            idx = tuple(int(i) for i in np.argwhere(bad)[0])
            where = f" at index {idx[drop:]}" if idx[drop:] else ""
            raise ValueError(f"{head}={int(v[idx])}{where}; expected an int in [{lo}, {hi}]")
    return out


def check_action(action, max_entities: int, max_selected: int, resolution: int) -> dict:
    """One game's action heads, checked (``check_action_keys``, then ``check_heads`` on a batch of one).

    Args:
        action: a dict of heads (a sample of FullGame-v0's ``action_space``); missing heads take their absent value.
        max_entities, max_selected, resolution: the env's N, K and raw grid R.

    Returns:
        The six heads as int64 NumPy values without a batch axis: ``action_type``, ``queued``, ``delay``,
        ``target_unit`` scalars, ``selected_units`` ``(max_selected,)`` (a shorter list padded with EOF),
        ``target_location`` ``(2,)``.

    Raises:
        ValueError: as ``check_heads`` (messages give shapes and indices without the batch axis).
    """
    check_action_keys(action)
    batched = {k: np.asarray(v)[None] for k, v in action.items()}
    heads = check_heads(batched, 1, max_entities, max_selected, resolution, batched=False)
    return {k: v[0] for k, v in heads.items()}
