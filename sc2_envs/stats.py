"""Small statistics helpers for reporting evaluation results (win rates over a finite number of episodes).

Win rates measured over ``n`` episodes are binomial proportions; a point estimate alone hides how
much it would move on another ``n`` episodes, so every table of this project reports an interval.
"""

from __future__ import annotations

import math
import numbers


def wilson_interval(wins: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion ``wins / n``.

    ``center = (p + z^2 / 2n) / (1 + z^2 / n)``,
    ``half = z / (1 + z^2 / n) * sqrt(p (1 - p) / n + z^2 / 4n^2)``, interval ``center -/+ half``,
    with ``p = wins / n`` (Wilson, "Probable inference, the law of succession, and statistical
    inference", JASA 22, 1927; recommended over the normal "Wald" interval by Brown, Cai and
    DasGupta, Statistical Science 16, 2001, because it stays inside [0, 1] and keeps a useful
    width at 0 or n successes, where the Wald interval collapses to a point).

    Args:
        wins: number of successes (e.g. battles won), an int in ``[0, n]``.
        n: number of trials (episodes), an int ``>= 1``.
        z: standard-normal quantile of the two-sided level; 1.96 for 95 %
            (``scipy.stats.norm.ppf(0.975) = 1.95996...``).

    Returns:
        ``(low, high)`` floats with ``0 <= low <= wins/n <= high <= 1``.

    Raises:
        ValueError: ``n < 1``, ``wins`` outside ``[0, n]``, or ``z`` not a positive finite number.
        TypeError: ``wins`` or ``n`` is not an integer (a bool is not a count).
    """
    for name, v in (("wins", wins), ("n", n)):
        if isinstance(v, bool) or not isinstance(v, numbers.Integral):
            raise TypeError(f"{name} must be an integer count, got {v!r}")
    if n < 1:
        raise ValueError(f"n must be >= 1 episode, got {n}")
    if not 0 <= wins <= n:
        raise ValueError(f"wins must be in [0, n={n}], got {wins}")
    if isinstance(z, bool) or not (isinstance(z, numbers.Real) and math.isfinite(z) and 0 < z <= 10):
        raise ValueError(f"z must be a positive finite normal quantile (1.96 for 95 %; at most 10), got {z!r}")
    p = wins / n
    z2 = z * z
    denom = 1.0 + z2 / n
    center = (p + z2 / (2 * n)) / denom
    half = z / denom * math.sqrt(p * (1.0 - p) / n + z2 / (4 * n * n))
    # At wins == 0 (or n) the exact bound is 0 (or 1); center - half only differs from it by rounding.
    low = 0.0 if wins == 0 else center - half
    high = 1.0 if wins == n else center + half
    return low, high


__all__ = ["wilson_interval"]
