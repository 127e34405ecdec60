"""``benchmarks/actor_precision.py``: fp32 against bf16 autocast for a class actor's training pass."""

from __future__ import annotations

import math
import sys

import pytest
from conftest import REPO

sys.path.insert(0, str(REPO / "benchmarks"))
import actor_precision as ap  # noqa: E402


def test_it_times_both_precisions_and_measures_what_bf16_does_to_the_log_probs(capsys):
    args = ap.Args(checkpoints=["checkpoints/2s3z_gnn.pt"], rows=64, threads=1, rounds=1, reps=1)
    ap.main(args)
    out = capsys.readouterr().out
    assert "actor_precision: 64 rows per pass, 1 torch thread" in out and "2s3z_gnn.pt: class actor" in out
    assert "note: --rounds 1 times each form once, with no median" in out  # a single noisy timing is said to be one
    got = ap.compare("checkpoints/2s3z_gnn.pt", args)
    assert got["fp32_ms"] > 0 and got["bf16_ms"] > 0
    assert got["speedup"] == pytest.approx(got["fp32_ms"] / got["bf16_ms"])
    # bf16 keeps 8 bits of mantissa: the log-probs move, but by far less than PPO's clip range
    assert 1e-4 < got["max_dlogp"] < math.log(1.2) and 0 <= got["max_dlogp_top"] <= got["max_dlogp"]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ({"rows": 0}, "--rows 0: expected an integer >= 1"),
        ({"checkpoints": []}, "--checkpoints: expected at least one checkpoint file"),
        ({"checkpoints": ["nope.pt"]}, "--checkpoints nope.pt: no such file"),
        ({"checkpoints": ["checkpoints"]}, "--checkpoints checkpoints: checkpoint .* is a directory"),
        ({"checkpoints": ["checkpoints/mlp/1c3s5z_mlp_seed1.pt"]}, "a 'mlp' checkpoint; expected a GNN one"),
    ],
)
def test_bad_arguments_are_refused_with_the_value(argv, message):
    with pytest.raises(SystemExit, match=message):
        ap.main(ap.Args(**argv))
