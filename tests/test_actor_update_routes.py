"""``benchmarks/actor_update_routes.py``: concurrent passes and ``torch.compile`` against the training update's passes."""

from __future__ import annotations

import sys

import pytest
from conftest import REPO

sys.path.insert(0, str(REPO / "benchmarks"))
import actor_update_routes as aur  # noqa: E402


@pytest.mark.slow
def test_it_times_the_three_routes_and_the_concurrent_gradients_match(capsys):
    """Slow: ``torch.compile`` of the actor's loss takes ~15 s on the 2-core machine."""
    got = aur.main(aur.Args(rows=96, pass_rows=32, threads=2, rounds=1, reps=1))
    assert all(got[k] > 0 for k in ("passes", "concurrent", "compiled", "compile_s"))
    assert got["max_grad_diff"] < 1e-4  # the same gradient (relative to its largest entry), up to float rounding
    out = capsys.readouterr().out
    assert "actor_update_routes: 96 rows in passes of 32, 2 threads" in out and "class actor" in out


@pytest.mark.parametrize("name", ["rows", "pass_rows", "threads", "rounds", "reps"])
def test_bad_counts_are_named(name):
    with pytest.raises(ValueError, match=f"--{name.replace('_', '-')} 0: expected an integer >= 1"):
        aur.check_args(aur.Args(**{name: 0}))


@pytest.mark.parametrize(
    ("kw", "message"),
    [({"seed": -1}, "--seed -1: expected an integer >= 0"), ({"checkpoint": "nope.pt"}, "--checkpoint nope.pt: no such file")],
)
def test_bad_seed_and_checkpoint_are_named(kw, message):
    """Found in review: a missing checkpoint gave a raw FileNotFoundError, a negative seed failed after the header."""
    with pytest.raises(ValueError, match=message):
        aur.check_args(aur.Args(**kw))
