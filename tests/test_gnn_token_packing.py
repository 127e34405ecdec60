"""benchmarks/gnn_token_packing.py: the packed forward it times gives the dense actor's available logits."""

from __future__ import annotations

import re

import pytest
from conftest import load_algo

bench = load_algo("gnn_token_packing", folder="benchmarks")


def test_packed_forward_equals_the_dense_one_on_available_actions_and_the_run_prints_it(capsys):
    bench.main(bench.Args(rows=64, rounds=1, reps=1))
    out = capsys.readouterr().out
    assert "64 agent-steps per pass" in out and "visible" in out
    diff = float(re.search(r"max \|dense - packed\| over available logits: (\S+)", out).group(1))
    assert diff < 1e-5  # the same products on fewer rows: equal up to float rounding
    assert "packed is" in out and "the dense speed" in out


def test_bad_counts_are_refused():
    with pytest.raises(SystemExit, match="--rounds 0"):
        bench.main(bench.Args(rounds=0))
