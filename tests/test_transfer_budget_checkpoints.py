"""The shipped long-budget checkpoints and the figures documented for them (``checkpoints/README.md``).

- ``checkpoints/transfer_budget/``: three independent seeds each of HAPPO-GNN trained on 2s3z alone and
  on 3s5z alone for 1,024,000 env steps ("Longer budgets").
- ``checkpoints/marine_budget/``: three independent seeds of HAPPO-GNN trained on 3m and 8m at once
  for 1,658,880 env steps ("Marines at a longer budget").
- ``checkpoints/marine_dropout/``: each of those fine-tuned for 409,600 more env steps with
  ``--ally-dropout 0 0.5`` ("Fine-tuned with ally dropout").
- ``checkpoints/marine_dropout09/``: each of those fine-tuned again for 409,600 env steps with
  ``--ally-dropout 0 0.9`` ("Fine-tuned again with dropout in 9 of 10 8m episodes").
- ``checkpoints/protoss_dropout/``: each 3s5z seed of ``transfer_budget/`` fine-tuned for 230,400 more
  env steps with ``--ally-dropout 0.9`` ("Fine-tuned with ally dropout: 3s5z").
- ``checkpoints/protoss3_dropout/``: the three-class (stalker, zealot, colossus) checkpoints of 2s3z+3s5z+1c3s5z
  fine-tuned on those three maps for 691,200 env steps with ``--ally-dropout 0 0.9 0`` ("... with the
  colossus").

Each folder's ``final_eval.csv`` holds the greedy win rates of its checkpoints on the listed maps
(100 episodes, evaluation seed 0) as ``algos/eval_transfer.py`` wrote them; ``final_eval_seed101.csv`` and
``final_eval_seed102.csv`` the same on evaluation seeds 101 and 102 (the marine dropout folders also 103 and 104).
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
import torch
from conftest import REPO, load_algo

SEEDS = (1, 2, 3)
BUDGETS = {
    "transfer_budget": {
        "recipes": {"2s3z": ["2s3z"], "3s5z": ["3s5z"]},
        "maps": ("2s3z", "3s5z", "3s5z_vs_3s6z"),
        "steps": 1_024_000,
        "replay": ("2s3z_seed1_gnn.pt", "3s5z"),
    },
    "marine_budget": {
        "recipes": {"3m8m": ["3m", "8m"]},
        "maps": ("3m", "8m", "25m", "5m_vs_6m", "8m_vs_9m", "10m_vs_11m"),
        "steps": 1_658_880,
        "replay": ("3m8m_seed2_gnn.pt", "25m"),
    },
    "marine_dropout": {
        "recipes": {"3m8m_dropout": ["3m", "8m"]},
        "maps": ("3m", "8m", "25m", "5m_vs_6m", "8m_vs_9m", "10m_vs_11m"),
        "steps": 409_600,
        "replay": ("3m8m_dropout_seed3_gnn.pt", "5m_vs_6m"),
        "fine_tune": ("marine_budget/3m8m", (0.0, 0.5)),
        "more_seeds": (103, 104),
    },
    "marine_dropout09": {
        "recipes": {"3m8m_dropout09": ["3m", "8m"]},
        "maps": ("3m", "8m", "25m", "5m_vs_6m", "8m_vs_9m", "10m_vs_11m"),
        "steps": 409_600,
        "replay": ("3m8m_dropout09_seed2_gnn.pt", "5m_vs_6m"),
        "fine_tune": ("marine_dropout/3m8m_dropout", (0.0, 0.9)),
        "more_seeds": (103, 104),
    },
    "protoss_dropout": {
        "recipes": {"3s5z_dropout": ["3s5z"]},
        "maps": ("3s5z_vs_3s6z", "3s5z", "2s3z"),
        "steps": 230_400,
        "replay": ("3s5z_dropout_seed2_gnn.pt", "3s5z_vs_3s6z"),
        "fine_tune": ("transfer_budget/3s5z", (0.9,)),
    },
    "protoss3_dropout": {
        "recipes": {"2s3z3s5z1c3s5z_dropout": ["2s3z", "3s5z", "1c3s5z"]},
        "maps": ("3s5z_vs_3s6z", "2s3z", "3s5z", "1c3s5z"),
        "steps": 691_200,
        "replay": ("2s3z3s5z1c3s5z_dropout_seed3_gnn.pt", "3s5z_vs_3s6z"),
        # seed 1 started from the top-level three-class checkpoint, seeds 2 and 3 from those under seeds/
        "fine_tune": (
            {
                1: "checkpoints/protoss_2s3z3s5z1c3s5z_gnn.pt",
                2: "checkpoints/seeds/protoss_2s3z3s5z1c3s5z_seed2_gnn.pt",
                3: "checkpoints/seeds/protoss_2s3z3s5z1c3s5z_seed3_gnn.pt",
            },
            (0.0, 0.9, 0.0),
        ),
    },
}


def _starting_checkpoint(spec: dict, seed: int) -> str:
    """The repository-relative checkpoint that seed ``seed``'s fine-tune started from."""
    start = spec["fine_tune"][0]
    return start[seed] if isinstance(start, dict) else f"checkpoints/{start}_seed{seed}_gnn.pt"


def _rows(folder: Path, name: str = "final_eval.csv") -> list[dict]:
    with open(folder / name, newline="") as f:
        return list(csv.DictReader(f))


@pytest.mark.parametrize("name", sorted(BUDGETS))
def test_three_seeds_per_recipe_each_with_its_final_evaluation(name):
    spec, folder = BUDGETS[name], REPO / "checkpoints" / name
    shipped = sorted(p.name for p in folder.glob("*.pt"))
    assert shipped == sorted(f"{r}_seed{s}_gnn.pt" for r in spec["recipes"] for s in SEEDS)
    rows = _rows(folder)
    for file in shipped:
        ckpt = torch.load(folder / file, weights_only=True)
        recipe, seed = file.split("_seed")[0], int(file.split("_seed")[1][0])
        train_maps = spec["recipes"][recipe]
        assert ckpt["config"].get("train_maps", [ckpt["config"]["map_name"]]) == train_maps
        assert ckpt["args"]["seed"] == seed and int(ckpt["global_step"]) == spec["steps"]
        if "fine_tune" in spec:  # fine-tuned from the same seed's checkpoint of the longer budget
            dropout = spec["fine_tune"][1]
            assert tuple(ckpt["args"]["ally_dropout"]) == dropout
            assert ckpt["args"]["init_from"] == _starting_checkpoint(spec, seed)
            assert (REPO / ckpt["args"]["init_from"]).is_file()
        mine = [r for r in rows if Path(r["checkpoint"]).name == file]
        assert sorted(r["target_map"] for r in mine) == sorted(spec["maps"]), file
        for r in mine:
            assert int(r["episodes"]) == 100 and int(r["source_steps"]) == spec["steps"]
            assert r["source_map"] == "+".join(train_maps)
            assert float(r["win_rate"]) == int(r["wins"]) / 100


@pytest.mark.parametrize("name", sorted(BUDGETS))
def test_the_second_and_third_evaluation_seeds_cover_the_same_checkpoints_and_maps(name):
    """final_eval_seed101.csv / final_eval_seed102.csv (and a folder's ``more_seeds``; docs/results.md's
    per-seed medians): the same
    checkpoints on the same maps as final_eval.csv, 100 episodes each, no errors, other episodes."""
    folder = REPO / "checkpoints" / name
    cells = {(r["checkpoint"], r["target_map"]): r for r in _rows(folder)}
    for seed in (101, 102, *BUDGETS[name].get("more_seeds", ())):
        rows = _rows(folder, f"final_eval_seed{seed}.csv")
        assert {(r["checkpoint"], r["target_map"]) for r in rows} == set(cells)
        assert all(r["episodes"] == "100" and not r["error"] for r in rows)
        assert any(r["mean_length"] != cells[r["checkpoint"], r["target_map"]]["mean_length"] for r in rows)


@pytest.mark.parametrize("name", sorted(BUDGETS))
def test_a_documented_zero_shot_figure_replays_exactly(name):
    """One zero-shot cell per folder: the same episodes, wins and mean length as in final_eval.csv."""
    et = load_algo("eval_transfer")
    file, target = BUDGETS[name]["replay"]
    path = REPO / "checkpoints" / name / file
    (want,) = [r for r in _rows(path.parent) if Path(r["checkpoint"]).name == file and r["target_map"] == target]
    row = et.evaluate_transfer(str(path), target, episodes=100, seed=0)
    assert (row.episodes, row.wins) == (100, int(want["wins"]))
    assert row.mean_length == pytest.approx(float(want["mean_length"]), abs=1e-9)


def _readme_table(folder: str) -> tuple[list[str], dict[str, list[str]]]:
    """The ``| checkpoint | <map> | ... |`` table of ``folder``'s files in checkpoints/README.md:
    (maps, {file or "median...": cells})."""
    lines = (REPO / "checkpoints" / "README.md").read_text().splitlines()
    first = next(
        i for i, line in enumerate(lines) if line.startswith(f"| `{BUDGETS[folder]['replay'][0].split('_seed')[0]}_seed1")
    )
    maps = [c.strip().removesuffix(" (zero-shot)") for c in lines[first - 2].strip("|").split("|")[1:]]
    rows = {}
    for line in lines[first:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        rows[cells[0].strip("`")] = cells[1:]
    return maps, rows


@pytest.mark.parametrize("name", ["protoss_dropout", "protoss3_dropout"])
def test_the_readme_table_of_a_folder_shows_its_final_evaluation(name):
    """Every ``w [lo, hi]`` cell of the folder's table in checkpoints/README.md is its final_eval.csv row,
    and the medians row holds the median over the seeds."""
    import statistics

    maps, table = _readme_table(name)
    rows = _rows(REPO / "checkpoints" / name)
    rate = {(Path(r["checkpoint"]).name, r["target_map"]): r for r in rows}
    files = [f for f in table if f.endswith(".pt")]
    assert len(files) == 3 and set(maps) <= set(BUDGETS[name]["maps"])
    for file in files:
        for m, cell in zip(maps, table[file], strict=True):
            r = rate[(file, m)]
            assert cell == f"{float(r['win_rate']):.2f} [{float(r['ci_low']):.2f}, {float(r['ci_high']):.2f}]", (file, m)
    (median_row,) = [cells for label, cells in table.items() if label.startswith("median")]
    for m, cell in zip(maps, median_row, strict=True):
        want = statistics.median(float(rate[(f, m)]["win_rate"]) for f in files)
        assert cell.replace("*", "").split(" ")[0] == f"{want:.2f}", m


def test_the_three_class_fine_tunes_start_from_their_own_seeds_three_class_checkpoint():
    spec = BUDGETS["protoss3_dropout"]
    for seed in SEEDS:
        ckpt = torch.load(
            REPO / "checkpoints" / "protoss3_dropout" / f"2s3z3s5z1c3s5z_dropout_seed{seed}_gnn.pt", weights_only=True
        )
        start = torch.load(REPO / _starting_checkpoint(spec, seed), weights_only=True)
        assert start["args"]["seed"] == seed and int(start["global_step"]) == 1_190_400
        assert start["config"]["classes"] == ckpt["config"]["classes"] == ["stalker", "zealot", "colossus"]
        assert start["config"]["train_maps"] == ckpt["config"]["train_maps"] == ["2s3z", "3s5z", "1c3s5z"]


def test_the_marine_dropout09_table_is_its_csvs_on_five_evaluation_seeds():
    """checkpoints/README.md's 5m_vs_6m table of ``marine_dropout09/``: each file's win rate per evaluation seed
    (0, 101-104), the medians, and ``marine_dropout/``'s medians on the same seeds, from the shipped CSVs."""
    import statistics

    seeds = (0, 101, 102, 103, 104)

    def rates(folder: str) -> dict[str, list[float]]:
        out: dict[str, list[float]] = {}
        for seed in seeds:
            name = "final_eval.csv" if seed == 0 else f"final_eval_seed{seed}.csv"
            for r in _rows(REPO / "checkpoints" / folder, name):
                if r["target_map"] == "5m_vs_6m":
                    out.setdefault(Path(r["checkpoint"]).name, []).append(float(r["win_rate"]))
        return out

    lines = (REPO / "checkpoints" / "README.md").read_text().splitlines()
    new, old = rates("marine_dropout09"), rates("marine_dropout")
    for file, values in new.items():
        (line,) = [ln for ln in lines if ln.startswith(f"| `{file}` | ")]
        assert line == f"| `{file}` | " + " | ".join(f"{v:.2f}" for v in values) + " |"
    medians = [statistics.median(column) for column in zip(*new.values(), strict=True)]
    (line,) = [ln for ln in lines if ln.startswith("| median | ") and ln.count("|") == 7]
    assert [c.strip().strip("*") for c in line.strip("|").split("|")[1:]] == [f"{m:.2f}" for m in medians]
    old_medians = [statistics.median(column) for column in zip(*old.values(), strict=True)]
    (line,) = [ln for ln in lines if ln.startswith("| `marine_dropout/`, median (the same seeds) | ")]
    assert [c.strip() for c in line.strip("|").split("|")[1:]] == [f"{m:.2f}" for m in old_medians]
