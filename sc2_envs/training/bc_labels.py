"""The action labels of a behaviour-cloning run (``algos/bc_reweight.py``): wanted shares, counts, weights.

``--target-dist`` names the label distribution the re-weighting aims at (:func:`load_target`). Every
epoch compares, per action, the label share of the training split, the effective share the weighted
loss trains towards (:func:`effective_shares`: the data's shares times the weights, normalised; the
target only where no weight is clipped), and on the validation split the mean predicted probability
and the argmax share (:func:`share_table`); the first screen lists the training label counts and the
weights (:func:`per_action`).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

__all__ = ["dropped_share", "effective_shares", "load_target", "read_target_file", "per_action", "share_table"]


class _Pairs(list):
    """A JSON object as its ``(key, value)`` pairs, in file order (``json.loads``'s ``object_pairs_hook``)."""


def read_target_file(spec: str) -> list[tuple[str, float]]:
    """The ``(key, share)`` pairs of a ``--target-dist`` JSON file, in file order, their shares checked; the keys
    are checked against the action names by :func:`load_target` (the names come with the data).

    Raises:
        FileNotFoundError: ``spec`` is not an existing file.
        ValueError: the file is not valid JSON, or not a JSON object; a share that is not a number (null, a
            string, a bool, a list, an object), not finite (NaN, Infinity) or negative; each naming the file
            (and the key).
    """
    path = Path(spec)
    if not path.is_file():
        raise FileNotFoundError(f"--target-dist {spec!r} is neither 'uniform' nor an existing JSON file")
    try:
        pairs = json.loads(path.read_text(), object_pairs_hook=_Pairs)  # keeps a key given twice
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ValueError(
            f"--target-dist {spec}: not valid JSON ({e}); expected an object {{action name or id: share}}"
        ) from None
    if not isinstance(pairs, _Pairs):
        kind = {list: "array", str: "string", bool: "bool", int: "number", float: "number"}.get(type(pairs), "null")
        raise ValueError(f"--target-dist {spec}: a JSON {kind}; expected an object {{action name or id: share}}")
    for k, v in pairs:
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            shown = "an object" if isinstance(v, _Pairs) else json.dumps(v)
            raise ValueError(f"--target-dist {spec}: share of {k!r} is {shown}; expected a finite number >= 0")
        if not math.isfinite(v) or v < 0:
            raise ValueError(f"--target-dist {spec}: share of {k!r} is {v}; expected a finite number >= 0")
    return list(pairs)


def load_target(spec: str, names: list[str]) -> np.ndarray | None:
    """``--target-dist``: None for ``uniform``, else the shares of a JSON file keyed by action name or id.

    Args:
        spec: ``uniform`` or the path of a JSON object ``{action name or id: share}`` (e.g.
            ``{"stop": 0.2, "target_0": 0.2}``); shares are finite numbers >= 0, any scale (``action_weights``
            renormalises them over the actions seen in the data).
        names: the ``A`` action names, in id order.

    Returns:
        None (uniform), or ``[A]`` float64 shares, 0 for actions the file leaves out.

    Raises:
        FileNotFoundError: ``spec`` is neither ``uniform`` nor an existing file.
        ValueError: a bad file or share (:func:`read_target_file`); a key that is neither an action name
            nor an id in ``[0, A)``; an action given twice (by name and by id, or the same key twice).
    """
    if spec == "uniform":
        return None
    pairs = read_target_file(spec)
    out = np.zeros(len(names))
    index = {n: i for i, n in enumerate(names)}
    given: dict[int, str] = {}
    for k, v in pairs:
        if k in index:
            i = index[k]
        elif k.isdigit() and int(k) < len(names):
            i = int(k)
        else:
            raise ValueError(f"--target-dist {spec}: action {k!r} is neither an action name nor an id in [0, {len(names)})")
        if i in given:
            raise ValueError(
                f"--target-dist {spec}: action {names[i]!r} (id {i}) given twice, as {given[i]!r} and {k!r}; expected once"
            )
        given[i] = k
        out[i] = float(v)
    return out


def dropped_share(target: np.ndarray | None, counts: np.ndarray) -> float:
    """Share of ``target``'s mass on actions absent from the data (``counts == 0``), which the re-weighting
    drops (it renormalises the rest); 0 for the uniform target (None).

    Args:
        target: ``[A]`` shares (:func:`load_target`) or None.
        counts: ``[A]`` training label counts.
    """
    if target is None or target.sum() <= 0:
        return 0.0
    return float(target[np.asarray(counts) == 0].sum() / target.sum())


def effective_shares(weights: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Label shares the weighted loss effectively trains on: ``data[a] w[a]`` normalised to sum to 1.

    They equal ``--target-dist``'s shares when no weight was clipped and the power is 1.

    Args:
        weights: ``[A]`` per-action loss weights (``action_weights``).
        counts: ``[A]`` training label counts, positive sum.

    Returns:
        ``[A]`` float64 shares.
    """
    d = counts / counts.sum()
    return d * weights / (d * weights).sum()


target_shares = effective_shares  # the former name


def share_table(names, data_share, effective_share, pred_share, argmax_share, top: int = 12) -> str:
    """Text table of action shares, one row per action, the ``top`` largest data shares first.

    Args:
        names: ``A`` action names (truncated to 28 characters).
        data_share, effective_share, pred_share, argmax_share: ``[A]`` shares: of the training labels
            (``data``), of the weighted loss (``effective``, :func:`effective_shares`), and on the validation
            split the mean predicted probability (``val pred``) and the argmax predictions (``val argmax``).
        top: rows shown.
    """
    order = np.argsort(-np.asarray(data_share))[:top]
    lines = [f"    {'action':28s} {'data':>7s} {'effective':>9s} {'val pred':>8s} {'val argmax':>10s}"]
    for i in order:
        lines.append(
            f"    {names[i][:28]:28s} {data_share[i]:7.3f} {effective_share[i]:9.3f} {pred_share[i]:8.3f} "
            f"{argmax_share[i]:10.3f}"
        )
    return "\n".join(lines)


def per_action(names, values, counts, fmt: str = "", by_count: bool = False) -> str:
    """``"name value, ..."`` over the actions seen in the data (``counts > 0``).

    Args:
        names: ``A`` action names.
        values: ``[A]`` figures to show (the counts themselves, the weights), formatted with ``fmt``.
        counts: ``[A]`` training label counts: which actions are shown, and their order with ``by_count``.
        by_count: most frequent first (a replay dataset has hundreds of action types); else by id.
    """
    order = np.argsort(-counts) if by_count else range(len(counts))
    return ", ".join(f"{names[i]} {values[i]:{fmt}}" for i in order if counts[i])
