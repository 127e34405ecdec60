"""``sc2_envs.stats``: pooling evaluation CSVs (one per evaluation seed) into one Wilson interval per row."""

import csv
import glob
import subprocess
import sys

import pytest
from conftest import REPO

from sc2_envs.stats import pool_results, wilson_interval

FULLGAME = ["policy", "games", "wins", "losses", "ties", "win_rate"]
TRANSFER = ["target_map", "source_map", "episodes", "wins", "win_rate", "error", "checkpoint"]


def _transfer_row(target_map, episodes, wins, error=""):
    """An eval_transfer CSV row of checkpoint ``x.pt`` trained on 3m."""
    rate = wins / episodes if episodes else ""
    return {"target_map": target_map, "source_map": "3m", "episodes": episodes, "wins": wins, "win_rate": rate,
            "error": error, "checkpoint": "x.pt"}  # fmt: skip


def _write(path, columns, rows):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=columns)
        w.writeheader()
        for row in rows:
            w.writerow(row)
    return str(path)


def test_the_shipped_full_game_figure_is_the_pool_of_its_eleven_fresh_seeds():
    # the README's 0.940 [0.924, 0.953]: seeds 39-47, 49 and 50 of the shipped RL checkpoint
    files = [f"{REPO}/checkpoints/fullgame/a3c_upgo_simple64_tiny_3m_seed{s}.csv" for s in (*range(39, 48), 49, 50)]
    (row,) = pool_results(files)
    assert row["key"] == ("checkpoints/fullgame/a3c_upgo_simple64_tiny_3m.pt",)
    assert (row["wins"], row["games"], row["files"]) == (1034, 1100, 11)
    assert (round(row["win_rate"], 3), round(row["ci_low"], 3), round(row["ci_high"], 3)) == (0.940, 0.924, 0.953)


def test_eval_transfer_rows_pool_per_checkpoint_and_target_map(tmp_path):
    a = _write(tmp_path / "a.csv", TRANSFER, [
        _transfer_row("3m", 100, 90),
        _transfer_row("8m", 100, 40),
    ])  # fmt: skip
    b = _write(tmp_path / "b.csv", TRANSFER, [
        _transfer_row("8m", 50, 30),
        _transfer_row("3m", 100, 80),
    ])  # fmt: skip
    rows = {r["key"]: r for r in pool_results([a, b])}
    assert rows[("x.pt", "3m")]["win_rates"] == [0.9, 0.8]
    assert (rows[("x.pt", "8m")]["wins"], rows[("x.pt", "8m")]["games"]) == (70, 150)
    assert (rows[("x.pt", "8m")]["ci_low"], rows[("x.pt", "8m")]["ci_high"]) == wilson_interval(70, 150)


def test_a_row_missing_from_a_file_or_with_an_error_gets_no_pooled_figure(tmp_path):
    ok = {
        "target_map": "3m",
        "source_map": "3m",
        "episodes": 10,
        "wins": 5,
        "win_rate": 0.5,
        "error": "",
        "checkpoint": "x.pt",
    }
    a = _write(tmp_path / "a.csv", TRANSFER, [ok, {**ok, "target_map": "8m"}])
    b = _write(tmp_path / "b.csv", TRANSFER, [ok, {**ok, "target_map": "25m", "episodes": "", "wins": "", "error": "size"}])
    rows = {r["key"][1]: r for r in pool_results([a, b])}
    assert rows["3m"]["win_rate"] == 0.5 and not rows["3m"]["error"]
    assert rows["8m"]["win_rate"] is None and rows["8m"]["error"] == "missing from a file"
    assert rows["25m"]["win_rate"] is None and "size" in rows["25m"]["error"]


def test_one_evaluation_seed_twice_is_refused_and_the_seeds_are_reported(tmp_path):
    columns = [*TRANSFER, "eval_seed"]
    a = _write(tmp_path / "a.csv", columns, [{**_transfer_row("3m", 100, 90), "eval_seed": 101}])
    b = _write(tmp_path / "b.csv", columns, [{**_transfer_row("3m", 100, 80), "eval_seed": 102}])
    again = _write(tmp_path / "again.csv", columns, [{**_transfer_row("3m", 100, 85), "eval_seed": 101}])
    old = _write(tmp_path / "old.csv", TRANSFER, [_transfer_row("3m", 100, 70)])  # written before the column
    floats = _write(tmp_path / "floats.csv", columns, [{**_transfer_row("3m", 100, 85), "eval_seed": "101.0"}])
    bad = _write(tmp_path / "bad.csv", columns, [{**_transfer_row("3m", 100, 85), "eval_seed": "1.5"}])
    (row,) = pool_results([a, b, old])
    assert row["seeds"] == [101, 102] and row["unseeded"] == 1 and (row["wins"], row["games"]) == (240, 300)
    with pytest.raises(ValueError, match=r"a\.csv and .*again\.csv both played .*evaluation seed 101"):
        pool_results([a, b, again])
    with pytest.raises(ValueError, match=r"evaluation seed 101"):  # a table tool's 101.0 is seed 101
        pool_results([a, floats])
    with pytest.raises(ValueError, match=r"bad\.csv row .*: eval_seed '1\.5'; expected an integer seed >= 0"):
        pool_results([bad])
    out = subprocess.run([sys.executable, "-m", "sc2_envs.stats", a, b], capture_output=True, text=True, check=True).stdout
    assert out.rstrip().endswith("on evaluation seeds 101, 102")
    mixed = subprocess.run([sys.executable, "-m", "sc2_envs.stats", a, old], capture_output=True, text=True, check=True)
    assert mixed.stdout.rstrip().endswith("on evaluation seeds 101 and 1 file recording no seed (not checked)")


def test_bad_input_is_refused_with_the_reason(tmp_path):
    full = _write(
        tmp_path / "full.csv", FULLGAME, [{"policy": "p", "games": 4, "wins": 1, "losses": 3, "ties": 0, "win_rate": 0.25}]
    )
    trans = _write(tmp_path / "trans.csv", TRANSFER, [
        _transfer_row("3m", 4, 1),
    ])  # fmt: skip
    other = _write(tmp_path / "other.csv", ["a", "b"], [{"a": 1, "b": 2}])
    twice = _write(
        tmp_path / "twice.csv", FULLGAME, [{"policy": "p", "games": 4, "wins": 1}, {"policy": "p", "games": 4, "wins": 2}]
    )
    frac = _write(tmp_path / "frac.csv", FULLGAME, [{"policy": "p", "games": 4, "wins": 1.5}])
    with pytest.raises(ValueError, match="at least one"):
        pool_results([])
    with pytest.raises(ValueError, match="more than once"):
        pool_results([full, str(tmp_path / "." / "full.csv")])
    with pytest.raises(ValueError, match="is not an eval_fullgame CSV"):
        pool_results([full, trans])
    with pytest.raises(ValueError, match="is not an eval_fullgame or eval_transfer CSV"):
        pool_results([other])
    with pytest.raises(ValueError, match="twice"):
        pool_results([twice])
    with pytest.raises(ValueError, match="not counts"):
        pool_results([frac])
    with pytest.raises(FileNotFoundError):
        pool_results([str(tmp_path / "absent.csv")])


def test_the_command_line_prints_one_line_per_row_and_refuses_bad_files(tmp_path):
    files = sorted(glob.glob(f"{REPO}/checkpoints/fullgame/a3c_upgo_simple64_tiny_anneal_seed3*.csv"))
    out = subprocess.run([sys.executable, "-m", "sc2_envs.stats", *files], capture_output=True, text=True, check=True).stdout
    assert out.strip().endswith(")") and "over 4 files" in out and out.count("\n") == 1
    bad = subprocess.run(
        [sys.executable, "-m", "sc2_envs.stats", str(tmp_path / "absent.csv")], capture_output=True, text=True
    )
    assert bad.returncode == 2 and "absent.csv" in bad.stderr
