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
from pathlib import Path

import numpy as np

__all__ = ["effective_shares", "load_target", "per_action", "share_table"]


def load_target(spec: str, names: list[str]) -> np.ndarray | None:
    """``--target-dist``: None for ``uniform``, else the shares of a JSON file keyed by action name or id.

    Args:
        spec: ``uniform`` or the path of a JSON object ``{action name or id: share}`` (e.g.
            ``{"stop": 0.2, "target_0": 0.2}``); shares are non-negative, any scale (``action_weights``
            renormalises them over the actions seen in the data).
        names: the ``A`` action names, in id order.

    Returns:
        None (uniform), or ``[A]`` float64 shares, 0 for actions the file leaves out.

    Raises:
        FileNotFoundError: ``spec`` is neither ``uniform`` nor an existing file.
        ValueError: a key that is neither an action name nor an id in ``[0, A)``.
    """
    if spec == "uniform":
        return None
    path = Path(spec)
    if not path.exists():
        raise FileNotFoundError(f"--target-dist {spec!r} is neither 'uniform' nor an existing JSON file")
    raw = json.loads(path.read_text())
    out = np.zeros(len(names))
    index = {n: i for i, n in enumerate(names)}
    for k, v in raw.items():
        if k in index:
            i = index[k]
        elif str(k).isdigit() and int(k) < len(names):
            i = int(k)
        else:
            raise ValueError(f"{spec}: action {k!r} is neither an action name nor an id in [0, {len(names)})")
        out[i] = float(v)
    return out


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
