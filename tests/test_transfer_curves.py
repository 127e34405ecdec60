"""benchmarks/transfer_curves.py: zero-shot win rate against the budget, per seed and the median over seeds."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from conftest import load_algo

tc = load_algo("transfer_curves", "benchmarks")

CONFIG = {"map": "2s3z", "eval_maps": ["3s5z"], "eval_episodes": 100, "num_envs": 128, "num_steps": 40, "learning_rate": 5e-4}
CONFIG |= {"anneal_lr": False, "total_timesteps": 1000, "num_iterations": 5, "time_budget_s": 0.0, "exp_name": "x"}


def _run(root, name, seed, own, zero_shot, **config):
    folder = root / name
    folder.mkdir()
    (folder / "run_meta.json").write_text(json.dumps({"config": {**CONFIG, "seed": seed, **config}}))
    with open(folder / "eval.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(
            [
                "global_step",
                "wall_time_s",
                "win_rate",
                "eval_return",
                "iteration",
                "zero_shot_win_rate/3s5z",
                "zero_shot_eval_return/3s5z",
            ]
        )
        for i, (a, b) in enumerate(zip(own, zero_shot, strict=True)):
            w.writerow([100 * (i + 1), i, a, 10.0, i + 1, b, 9.0])
    return str(folder)


def test_three_seeds_give_per_seed_figures_and_their_median(tmp_path, capsys):
    runs = [
        _run(tmp_path, "s1", 1, [0.5, 0.95, 0.97], [0.1, 0.6, 0.92]),
        _run(tmp_path, "s2", 2, [0.4, 0.91, 0.99], [0.2, 0.95, 0.88], total_timesteps=3000, time_budget_s=60.0),
        _run(tmp_path, "s3", 3, [0.3, 0.5, 0.93], [0.0, 0.3, 0.5]),
    ]
    out = tc.main(tc.Args(runs=runs, target=0.9, at=[200, 300], out_dir=str(tmp_path / "out"), plot=True))
    assert list(out["groups"]) == ["2s3z"]  # the total and the time budget do not split a recipe
    md = (out["out"] / "transfer_curves.md").read_text()
    assert "| **2s3z** | 200 [200, 200, 300] | 0.91 [0.95, 0.91, 0.50] | 0.97 [0.97, 0.99, 0.93] |" in md
    assert "| 3s5z (zero-shot) | 300 [300, 200, -] | 0.60 [0.60, 0.95, 0.30] | 0.88 [0.92, 0.88, 0.50] |" in md
    with open(out["out"] / "transfer_curves.csv") as f:
        rows = list(csv.DictReader(f))
    assert all(r["budget"].isdigit() for r in rows)  # one type per column: env steps, also for the last evaluation
    assert [(r["budget"], r["point"]) for r in rows if (r["seed"], r["map"]) == ("2", "3s5z")] == [
        ("200", "at"),
        ("300", "at"),
        ("300", "last"),
    ]
    (cell,) = [r for r in rows if (r["seed"], r["map"], r["budget"], r["point"]) == ("3", "3s5z", "300", "at")]
    assert float(cell["win_rate"]) == 0.5 and cell["zero_shot"] == "True" and cell["first_step_at_target"] == ""
    assert float(cell["ci_low"]) == pytest.approx(0.4038, abs=1e-4) and float(cell["ci_high"]) == pytest.approx(
        0.5962, abs=1e-4
    )
    assert (out["out"] / "transfer_curves.png").stat().st_size > 0
    assert capsys.readouterr().out.startswith("transfer_curves: 3 runs, 1 recipe 2s3z: seeds [1, 2, 3], zero-shot ['3s5z']")


def test_a_median_seed_that_never_crossed_is_not_reached(tmp_path):
    runs = [_run(tmp_path, f"s{s}", s, [0.1, 0.2], [0.95 if s == 1 else 0.1, 0.1]) for s in (1, 2, 3)]
    md = (tc.main(tc.Args(runs=runs, out_dir=str(tmp_path / "out"), plot=False))["out"] / "transfer_curves.md").read_text()
    assert "| 3s5z (zero-shot) | not reached [100, -, -] |" in md
    assert "| **2s3z** | not reached by any seed |" in md


def test_other_settings_are_another_recipe_and_anneal_lr_keeps_the_total(tmp_path):
    a = _run(tmp_path, "a", 1, [0.1], [0.1])
    b = _run(tmp_path, "b", 2, [0.1], [0.1], learning_rate=1e-3)
    c = _run(tmp_path, "c", 3, [0.1], [0.1], anneal_lr=True)
    d = _run(tmp_path, "d", 4, [0.1], [0.1], anneal_lr=True, total_timesteps=3000)
    groups = tc.group_recipes([tc.read_run(p) for p in (a, b, c, d)])
    assert [sorted(r.seed for r in g) for g in groups.values()] == [[1], [2], [3], [4]]
    assert list(groups) == ["2s3z", "2s3z#2", "2s3z#3", "2s3z#4"]


def test_the_fisher_product_form_does_not_split_a_hatrpo_recipe(tmp_path):
    # found in a review: a run saved before --fisher-product (no such field) and runs with either form
    # (the same matrix up to float rounding) were three recipes of one seed each
    hatrpo = {"cg_iters": 10, "cg_damping": 0.1}
    a = _run(tmp_path, "a", 1, [0.1], [0.1], **hatrpo)
    b = _run(tmp_path, "b", 2, [0.1], [0.1], **hatrpo, fisher_product="double-backward")
    c = _run(tmp_path, "c", 3, [0.1], [0.1], **hatrpo, fisher_product="gauss-newton")
    groups = tc.group_recipes([tc.read_run(p) for p in (a, b, c)])
    assert list(groups) == ["2s3z"] and sorted(r.seed for r in groups["2s3z"]) == [1, 2, 3]


def test_fine_tunes_of_each_seeds_own_checkpoint_are_one_recipe(tmp_path):
    """--init-from: seeds that each fine-tune their own seed's checkpoint of one recipe pool (the paths and
    seeds differ); a start from another recipe's checkpoint, or from an unreadable file, is another recipe."""
    import shutil

    from conftest import REPO

    budget = REPO / "checkpoints" / "marine_budget"
    for s in (1, 2):
        shutil.copy(budget / f"3m8m_seed{s}_gnn.pt", tmp_path / f"start{s}.pt")
    shutil.copy(REPO / "checkpoints" / "2s3z_gnn.pt", tmp_path / "other.pt")
    a = _run(tmp_path, "a", 1, [0.1], [0.1], init_from=str(tmp_path / "start1.pt"))
    b = _run(tmp_path, "b", 2, [0.1], [0.1], init_from=str(tmp_path / "start2.pt"))
    c = _run(tmp_path, "c", 3, [0.1], [0.1], init_from=str(tmp_path / "other.pt"))
    d = _run(tmp_path, "d", 4, [0.1], [0.1], init_from=str(tmp_path / "missing.pt"))
    e = _run(tmp_path, "e", 5, [0.1], [0.1])
    groups = tc.group_recipes([tc.read_run(p) for p in (a, b, c, d, e)])
    assert [sorted(r.seed for r in g) for g in groups.values()] == [[1, 2], [3], [4], [5]]
    # the summary says which recipes are fine-tunes, so a short fine-tune does not read as learning from scratch
    heads = [line for line in tc.summary_markdown(groups, 0.9, []).splitlines() if line.startswith("**")]
    assert f"; fine-tuned from {tmp_path / 'start1.pt'}, {tmp_path / 'start2.pt'} (env steps count from" in heads[0]
    assert "fine-tuned" not in heads[-1] and heads[-1].startswith("**2s3z#4**, seeds 5"), heads


def _grouped_from_elsewhere(tmp_path, monkeypatch, started_in, init_from: dict[int, str]) -> dict:
    """Runs (seed -> relative --init-from) recorded as started in ``started_in``, grouped from another folder."""
    folders = []
    for s, start in init_from.items():
        folder = Path(_run(tmp_path, f"r{s}", s, [0.1], [0.1], init_from=start))
        meta = json.loads((folder / "run_meta.json").read_text())
        (folder / "run_meta.json").write_text(json.dumps({**meta, "cwd": str(started_in)}))
        folders.append(str(folder))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    return tc.group_recipes([tc.read_run(p) for p in folders])


def test_a_relative_init_from_is_read_from_the_runs_own_folder(tmp_path, monkeypatch, capsys):
    """Found by a newcomer trial: a relative --init-from was looked up in the folder the summary ran in,
    so summarising from elsewhere split the seeds silently. It is now read from run_meta.json's cwd,
    and a checkpoint that cannot be read is named in a warning."""
    import shutil

    from conftest import REPO

    started_in = tmp_path / "project"
    (started_in / "ckpts").mkdir(parents=True)
    for s in (1, 2):
        shutil.copy(REPO / "checkpoints" / "marine_budget" / f"3m8m_seed{s}_gnn.pt", started_in / "ckpts" / f"s{s}.pt")
    groups = _grouped_from_elsewhere(tmp_path, monkeypatch, started_in, {s: f"ckpts/s{s}.pt" for s in (1, 2, 3)})
    assert [sorted(r.seed for r in g) for g in groups.values()] == [[1, 2], [3]]
    err = capsys.readouterr().err
    assert "--init-from checkpoint 'ckpts/s3.pt' could not be read" in err and str(started_in / "ckpts" / "s3.pt") in err


@pytest.mark.parametrize(
    "case, message",
    [
        ("same-seed", "the same recipe and seed 1; expected one run per seed"),
        ("budget", "--at 250: run"),
        ("repeated-budget", "--at 100 100: budget 100 is given more than once"),
        ("not-a-run", "no run_meta.json or eval.csv"),
        ("target", "--target 1.5: expected a win rate in [0, 1]"),
        # found in a review: these were a KeyError traceback or a message without the folder
        ("meta-not-json", "run_meta.json has no readable config (JSONDecodeError)"),
        ("meta-of-another-script", "run_meta.json config has no map, seed, eval_episodes; expected a run folder"),
        ("no-zero-shot-column", "eval.csv has no column(s) ['zero_shot_win_rate/3s5z']"),
        ("empty-cell", "eval.csv row 2, column zero_shot_win_rate/3s5z: '' is not a number"),
    ],
)
def test_bad_input_is_one_line_error(tmp_path, capsys, case, message):
    a = _run(tmp_path, "a", 1, [0.1, 0.2], [0.1, 0.2])
    runs, at, target = [a], [], 0.9
    if case == "same-seed":
        runs.append(_run(tmp_path, "b", 1, [0.1], [0.1]))
    elif case == "budget":
        at = [250]
    elif case == "repeated-budget":
        at = [100, 100]
    elif case == "not-a-run":
        runs.append(str(tmp_path))
    elif case == "meta-not-json":
        (tmp_path / "a" / "run_meta.json").write_text("{not json")
    elif case == "meta-of-another-script":  # e.g. an eval_transfer.py folder given an eval.csv
        (tmp_path / "a" / "run_meta.json").write_text(json.dumps({"config": {"checkpoints": ["x.pt"]}}))
    elif case in ("no-zero-shot-column", "empty-cell"):
        text = (tmp_path / "a" / "eval.csv").read_text().splitlines()
        if case == "empty-cell":
            text[2] = ",".join("" if i == 5 else v for i, v in enumerate(text[2].split(",")))
        else:
            text = [",".join(v.split(",")[:5]) for v in text]
        (tmp_path / "a" / "eval.csv").write_text("\n".join(text) + "\n")
    else:
        target = 1.5
    with pytest.raises(SystemExit) as e:
        tc.main(tc.Args(runs=runs, at=at, target=target, out_dir=str(tmp_path / "out"), plot=False))
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1, err
    assert not (tmp_path / "out").exists()


def test_an_anneal_lr_run_resumed_to_a_longer_total_is_its_own_recipe(tmp_path):
    # the learning rate after the resume follows the new total: not the recipe of a fresh 1,000-step run
    fresh = _run(tmp_path, "fresh", 1, [0.1], [0.1], anneal_lr=True)
    longer = _run(tmp_path, "longer", 2, [0.1], [0.1], anneal_lr=True)
    also = _run(tmp_path, "also", 3, [0.1], [0.1], anneal_lr=True)
    for folder in (longer, also):
        meta_path = tmp_path / folder / "run_meta.json"
        meta = json.loads(meta_path.read_text())
        meta["resumes"] = [{"from_global_step": 1000, "config": {**meta["config"], "total_timesteps": 3000}}]
        meta_path.write_text(json.dumps(meta))
    groups = tc.group_recipes([tc.read_run(p) for p in (fresh, longer, also)])
    assert [sorted(r.seed for r in g) for g in groups.values()] == [[1], [2, 3]]
    # without --anneal-lr the total does not change what is trained up to a step
    plain = [_run(tmp_path, f"p{s}", s, [0.1], [0.1]) for s in (1, 2)]
    meta_path = tmp_path / plain[1] / "run_meta.json"
    meta = json.loads(meta_path.read_text())
    meta["resumes"] = [{"from_global_step": 1000, "config": {**meta["config"], "total_timesteps": 3000}}]
    meta_path.write_text(json.dumps(meta))
    assert [sorted(r.seed for r in g) for g in tc.group_recipes([tc.read_run(p) for p in plain]).values()] == [[1, 2]]


def test_a_fine_tune_of_a_fine_tune_pools_its_seeds_from_any_folder(tmp_path, monkeypatch):
    """Found in review: the starting checkpoint's own relative --init-from (the shipped marine_dropout
    checkpoints name checkpoints/marine_budget/... from the repository root) was read from the folder
    the summary ran in, so fine-tunes of each seed's marine_dropout checkpoint split by seed when the
    summary ran elsewhere. It is read from the run's recorded cwd too."""
    from conftest import REPO

    starts = {s: f"checkpoints/marine_dropout/3m8m_dropout_seed{s}_gnn.pt" for s in (1, 2)}
    groups = _grouped_from_elsewhere(tmp_path, monkeypatch, REPO, starts)
    assert [sorted(r.seed for r in g) for g in groups.values()] == [[1, 2]]


def test_an_init_from_chain_that_leads_back_to_itself_stops(tmp_path, capsys):
    """Found in review: a checkpoint whose own --init-from names its own path (a fine-tune copied over the
    file it started from) made init_recipe load it again and again (about 1,000 nested loads, gigabytes
    held, until a RecursionError or the OOM killer). The chain now stops at the first file read twice."""
    import shutil

    from conftest import REPO

    # the shipped fine-tune names checkpoints/marine_budget/3m8m_seed1_gnn.pt; put it at that path
    (tmp_path / "checkpoints" / "marine_budget").mkdir(parents=True)
    shutil.copy(
        REPO / "checkpoints" / "marine_dropout" / "3m8m_dropout_seed1_gnn.pt",
        tmp_path / "checkpoints" / "marine_budget" / "3m8m_seed1_gnn.pt",
    )
    got = tc.init_recipe("checkpoints/marine_budget/3m8m_seed1_gnn.pt", str(tmp_path))
    assert isinstance(got, dict) and got["global_step"] == 409_600
    assert "leads back to it" in capsys.readouterr().err


def test_fine_tunes_of_two_epochs_of_one_behaviour_cloning_run_are_two_recipes(tmp_path):
    """Found by a review: a behaviour-cloning starting checkpoint (no ``map`` in its args) raised KeyError,
    and its 0 env steps would have pooled fine-tunes of different epochs."""
    import torch
    from conftest import REPO

    keys = []
    for epoch in (1, 3):
        ck = torch.load(REPO / "checkpoints" / "2s3z_gnn.pt", weights_only=True)
        ck["args"] = {"data": "demos/3m", "seed": 1, "epochs": 5}
        ck["global_step"], ck["bc"] = 0, {"epoch": epoch}
        torch.save(ck, tmp_path / f"epoch_{epoch:03d}.pt")
        keys.append(tc.init_recipe(f"epoch_{epoch:03d}.pt", str(tmp_path)))
    assert keys[0]["recipe"] == keys[1]["recipe"] and keys[0] != keys[1]
    assert keys[1]["training"] == "3 epochs of behaviour cloning on replays, no env steps"
