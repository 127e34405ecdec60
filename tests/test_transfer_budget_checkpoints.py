"""The shipped checkpoints of ``checkpoints/transfer_budget/`` and the figures documented for them.

Three independent seeds each of HAPPO-GNN trained on 2s3z alone and on 3s5z alone for 1,024,000 env
steps (``checkpoints/README.md``, "Longer budgets"); ``final_eval.csv`` holds their greedy win rates
on 2s3z, 3s5z and 3s5z_vs_3s6z (100 episodes, evaluation seed 0) as ``algos/eval_transfer.py``
wrote them.
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
import torch
from conftest import REPO, load_algo

BUDGET = REPO / "checkpoints" / "transfer_budget"
SEEDS = (1, 2, 3)
MAPS = ("2s3z", "3s5z", "3s5z_vs_3s6z")
STEPS = 1_024_000


def _rows() -> list[dict]:
    with open(BUDGET / "final_eval.csv", newline="") as f:
        return list(csv.DictReader(f))


def test_three_seeds_per_map_each_with_its_final_evaluation():
    shipped = sorted(p.name for p in BUDGET.glob("*.pt"))
    assert shipped == sorted(f"{m}_seed{s}_gnn.pt" for m in ("2s3z", "3s5z") for s in SEEDS)
    rows = _rows()
    for name in shipped:
        ckpt = torch.load(BUDGET / name, weights_only=True)
        train_map, seed = name.split("_seed")[0], int(name.split("_seed")[1][0])
        assert ckpt["config"]["map_name"] == train_map and ckpt["args"]["seed"] == seed
        assert int(ckpt["global_step"]) == STEPS
        mine = [r for r in rows if Path(r["checkpoint"]).name == name]
        assert sorted(r["target_map"] for r in mine) == sorted(MAPS), name
        for r in mine:
            assert int(r["episodes"]) == 100 and int(r["source_steps"]) == STEPS and r["source_map"] == train_map
            assert float(r["win_rate"]) == int(r["wins"]) / 100


def test_a_documented_zero_shot_figure_replays_exactly():
    """2s3z seed 1 on 3s5z: the same episodes, wins and mean length as in final_eval.csv."""
    et = load_algo("eval_transfer")
    path = BUDGET / "2s3z_seed1_gnn.pt"
    (want,) = [r for r in _rows() if Path(r["checkpoint"]).name == path.name and r["target_map"] == "3s5z"]
    row = et.evaluate_transfer(str(path), "3s5z", episodes=100, seed=0)
    assert (row.episodes, row.wins) == (100, int(want["wins"]))
    assert row.mean_length == pytest.approx(float(want["mean_length"]), abs=1e-9)
