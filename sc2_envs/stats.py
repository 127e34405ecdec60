"""Small statistics helpers for reporting evaluation results (win rates over a finite number of episodes).

Win rates measured over ``n`` episodes are binomial proportions; a point estimate alone hides how
much it would move on another ``n`` episodes, so every table of this project reports an interval.
"""

from __future__ import annotations

import argparse
import csv
import math
import numbers
import os
import sys


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


_KEYS = {  # an evaluation CSV's kind: the columns that name a row, and its column of games
    "eval_fullgame": (("policy",), "games"),
    "eval_transfer": (("checkpoint", "target_map"), "episodes"),
}


def _seed(value, path: str, key: tuple) -> int | None:
    """A CSV's ``eval_seed`` cell as an int (``"7"`` and ``"7.0"`` alike: a table tool may write floats); None
    when empty (CSVs written before the column existed). Raises ValueError for anything else."""
    text = (value or "").strip()
    if not text:
        return None
    try:
        number = float(text)
        if number.is_integer() and number >= 0:
            return int(number)
    except ValueError:
        pass
    raise ValueError(f"pool_results: {path} row {key}: eval_seed {value!r}; expected an integer seed >= 0")


def pool_results(paths: list[str]) -> list[dict]:
    """Pool the win counts of evaluation CSVs (one file per evaluation seed) into one interval per row.

    A row is a policy (``algos/eval_fullgame.py``'s CSV: column ``policy``) or a checkpoint on a target
    map (``algos/eval_transfer.py``'s: ``checkpoint`` and ``target_map``). Its pooled win rate is the sum of
    its ``wins`` over the sum of its games (``games`` or ``episodes``), with :func:`wilson_interval`.

    Args:
        paths: CSV files of one kind, each counted once.

    Returns:
        One dict per row, in order of first appearance: ``key`` (tuple of str), ``files`` (int), ``seeds`` (list
        of int: the evaluation seeds the files record for it, in ``paths`` order), ``unseeded`` (int: its files
        that record no seed, written before the column existed),
        ``win_rates`` (list of float, one per file that has the row, in ``paths`` order), ``wins``,
        ``games`` (int) and ``win_rate``, ``ci_low``, ``ci_high`` (float); a row that some file lacks or
        reports an ``error`` for has ``error`` (str) set and no pooled figure (``win_rate`` etc. None).

    Raises:
        ValueError: no path, a path given twice, a folder or a file that is not text, a file that is neither
            kind or of another kind than the first, a row twice in one file, wins / games that are not counts,
            or a row that two files played on the same evaluation seed (column ``eval_seed``, which CSVs written
            since 2026-12-07 carry): whatever the games at once (``num_envs``), one seed's games overlap, as game
            ``b``'s bot seed (``eval_fullgame``) or env ``b``'s stream (``eval_transfer``) is drawn by its index from
            the seed, so the second file would count some games twice.
        FileNotFoundError: a path that does not exist.
    """
    if not paths:
        raise ValueError("pool_results: expected at least one CSV file, got none")
    resolved = [os.path.realpath(p) for p in paths]
    twice = sorted({p for p, r in zip(paths, resolved, strict=True) if resolved.count(r) > 1})
    if twice:
        raise ValueError(f"pool_results: {twice} given more than once (each evaluation is counted once)")
    kind, pooled = None, {}
    for i, path in enumerate(paths):
        try:
            with open(path, newline="") as f:
                rows = list(csv.DictReader(f))
        except (IsADirectoryError, UnicodeDecodeError) as e:
            raise ValueError(f"pool_results: {path} is not a CSV file ({type(e).__name__})") from None
        columns = set(rows[0]) if rows else set()
        this = next((k for k, (key, games) in _KEYS.items() if {*key, games, "wins"} <= columns), None)
        if this is None or (kind is not None and this != kind):
            expected = kind or " or ".join(_KEYS)
            raise ValueError(f"pool_results: {path} is not an {expected} CSV (columns {sorted(columns)})")
        kind = this
        key_cols, games_col = _KEYS[kind]
        seen = set()
        for row in rows:
            key = tuple(row[c] for c in key_cols)
            if key in seen:
                raise ValueError(f"pool_results: {path} has the row {key} twice")
            seen.add(key)
            entry = pooled.setdefault(
                key, {"key": key, "files": 0, "win_rates": [], "wins": 0, "games": 0, "error": "", "seeds": {}, "unseeded": 0}
            )
            seed = _seed(row.get("eval_seed"), path, key)
            if seed is None:
                entry["unseeded"] += 1
            elif seed in entry["seeds"]:
                raise ValueError(
                    f"pool_results: {entry['seeds'][seed]} and {path} both played {key} on evaluation seed {seed} "
                    "(their games overlap, whatever the games at once); expected one file per evaluation seed"
                )
            else:
                entry["seeds"][seed] = path
            if entry["files"] < i:  # a file before this one lacked the row
                entry["error"] = entry["error"] or "missing from a file"
            if row.get("error"):
                entry["error"] = f"{path}: {row['error']}"
                entry["files"] = i + 1
                continue
            try:
                wins, games = int(row["wins"]), int(row[games_col])
            except ValueError:
                raise ValueError(
                    f"pool_results: {path} row {key}: wins {row['wins']!r} / {games_col} {row[games_col]!r} are not counts"
                ) from None
            entry["files"] = i + 1
            entry["win_rates"].append(wins / games if games else float("nan"))
            entry["wins"] += wins
            entry["games"] += games
    out = []
    for entry in pooled.values():
        entry["seeds"] = list(entry["seeds"])
        if entry["files"] < len(paths):
            entry["error"] = entry["error"] or "missing from a file"
        if entry["error"] or entry["games"] == 0:
            entry.update(win_rate=None, ci_low=None, ci_high=None, error=entry["error"] or "no games")
        else:
            low, high = wilson_interval(entry["wins"], entry["games"])
            entry.update(win_rate=entry["wins"] / entry["games"], ci_low=low, ci_high=high)
        out.append(entry)
    return out


def main(argv: list[str] | None = None) -> None:
    """``python -m sc2_envs.stats FILE...``: print :func:`pool_results` of evaluation CSVs, one line per row."""
    parser = argparse.ArgumentParser(
        prog="python -m sc2_envs.stats",
        description="Pool evaluation CSVs of algos/eval_fullgame.py or algos/eval_transfer.py (one per evaluation "
        "seed) into one win rate with its Wilson 95% interval per policy, or per checkpoint and target map.",
    )
    parser.add_argument("files", nargs="+", help="CSV files, each counted once")
    args = parser.parse_args(argv)
    try:
        results = pool_results(args.files)
    except (ValueError, FileNotFoundError) as e:
        parser.error(str(e))
    for r in results:
        name = " on ".join(r["key"])
        if r["error"]:
            print(f"{name}: n/a ({r['error']})")
            continue
        rates = " / ".join(f"{w:.2f}" for w in r["win_rates"])
        seeds = f" on evaluation seeds {', '.join(map(str, r['seeds']))}" if r["seeds"] else ""
        if r["seeds"] and r["unseeded"]:
            seeds += f" and {r['unseeded']} file{'s' if r['unseeded'] > 1 else ''} recording no seed (not checked)"
        print(
            f"{name}: {r['win_rate']:.3f} [{r['ci_low']:.3f}, {r['ci_high']:.3f}], {r['wins']} of {r['games']} games "
            f"over {r['files']} files ({rates}){seeds}"
        )


__all__ = ["pool_results", "wilson_interval"]

if __name__ == "__main__":
    sys.exit(main())
