"""benchmarks/harl_side_by_side.py: HARL's HAPPO next to ours, env steps to a win rate.

The parsing, the table and the bad-input checks need no HARL. The end-to-end run needs a checkout of
github.com/PKU-MARL/HARL (not on the package registries) in ``HARL_PATH`` and is skipped otherwise.
"""

import csv
import os
import re
from pathlib import Path

import pytest
from conftest import load_algo

sbs = load_algo("harl_side_by_side", folder="benchmarks")

HARL_PATH = os.environ.get("HARL_PATH")
needs_harl = pytest.mark.skipif(
    not HARL_PATH or not (Path(HARL_PATH) / "examples" / "train.py").is_file(),
    reason="HARL is not on PyPI: set HARL_PATH to a checkout of github.com/PKU-MARL/HARL to run it side by side",
)


@pytest.fixture
def fake_harl(tmp_path):
    root = tmp_path / "HARL"
    (root / "harl").mkdir(parents=True)
    (root / "examples").mkdir()
    (root / "harl" / "__init__.py").write_text("")
    (root / "examples" / "train.py").write_text("")
    return str(root)


def _ours_folder(path: Path, rows: list[tuple]) -> str:
    path.mkdir()
    with open(path / "learning_curves.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["algo", "actor", "map", "seed", "global_step", "wall_time_s", "win_rate", "eval_return", "iteration"])
        for r in rows:
            w.writerow(r)
    return str(path)


def test_harl_progress_is_read_as_env_steps_return_and_win_rate(tmp_path):
    p = tmp_path / "progress.txt"
    p.write_text("20000,4.38,0.0\n40000,14.77,0.5643564356435643\n\n60000,15.4,0.91\n")
    curve = sbs.read_harl_progress(str(p))
    assert [c["global_step"] for c in curve] == [20000, 40000, 60000]
    assert curve[1]["win_rate"] == pytest.approx(57 / 101) and curve[2]["eval_return"] == pytest.approx(15.4)
    assert sbs.steps_to(curve, 0.9) == 60000 and sbs.steps_to(curve, 0.95) == float("inf")
    p.write_text("20000,4.38,0.0\nwin rate 0.5\n")
    with pytest.raises(ValueError, match=r"progress.txt:2: 'win rate 0.5'; expected 'env_steps,eval_return,eval_win_rate'"):
        sbs.read_harl_progress(str(p))
    for text, message in (
        ("20000,4.38,nan\n", "progress.txt:1: '20000,4.38,nan'; expected finite numbers and a win rate in"),
        ("20000,4.38,1.7\n", "progress.txt:1: '20000,4.38,1.7'; expected finite numbers and a win rate in"),
        ("20000,4.38,0.1\n20000,5,0.2\n", "progress.txt:2: env steps 20000 after 20000; expected increasing steps"),
    ):
        p.write_text(text)
        with pytest.raises(ValueError, match=re.escape(message)):
            sbs.read_harl_progress(str(p))


def test_summary_gives_each_seed_its_crossing_and_counts_a_miss_as_infinite():
    up = [{"global_step": 10_000.0, "win_rate": 0.5}, {"global_step": 20_000.0, "win_rate": 0.92}]
    never = [{"global_step": 10_000.0, "win_rate": 0.3}, {"global_step": 20_000.0, "win_rate": 0.6}]
    row = sbs.summary_row("m", "3m", {1: up, 2: never, 3: up}, [500.0, 700.0], 0.9, "every 10,000 env steps")
    assert row["env_steps_to_0.9"] == "20,000 (seed 1) / not reached (seed 2) / 20,000 (seed 3)"
    assert row["median_env_steps_to_0.9"] == "20,000" and row["seeds"] == 3
    assert row["median_last_eval_win_rate"] == "0.92" and row["median_sps"] == "600" and row["max_env_steps"] == "20,000"
    assert sbs.cadence({1: up, 2: never}) == "every 10,000 env steps" and sbs.cadence({1: []}) == ""
    two = sbs.summary_row("m", "3m", {1: up, 2: never}, [], 0.9, "")
    assert two["median_env_steps_to_0.9"] == "not reached" and two["median_sps"] == ""  # median of 20k and inf
    lost = sbs.summary_row("m", "3m", {1: up, 2: [], 3: []}, [500.0], 0.9, "")  # two runs left no evaluation
    assert lost["env_steps_to_0.9"] == "20,000 (seed 1) / no evaluations (seed 2) / no evaluations (seed 3)"
    assert lost["seeds"] == 1 and lost["median_env_steps_to_0.9"] == "not reached"  # they count as infinite
    empty = sbs.summary_row("m", "3m", {1: []}, [], 0.9, "")
    assert empty["seeds"] == 0 and empty["median_last_eval_win_rate"] == "" and empty["max_env_steps"] == ""


def test_harl_commands_use_its_defaults_and_name_each_run(fake_harl):
    jobs = sbs.harl_jobs(sbs.Args(harl_path=fake_harl, maps=("3m",), seeds=(4,), harl_extra="--n_rollout_threads 8"))
    (job,) = jobs
    cmd = job.script_args
    assert cmd[0].endswith(os.path.join("sc2_envs", "adapters", "harl_smac.py")) and os.path.isfile(cmd[0])
    flags = dict(zip(cmd[1::2], cmd[2::2], strict=False))
    assert flags["--harl-path"] == fake_harl and flags["--algo"] == "happo" and flags["--map_name"] == "3m"
    assert flags["--seed"] == "4" and flags["--exp_name"] == "sbs_3m_seed4" and flags["--cuda"] == "False"
    assert flags["--eval_episodes"] == "100" and flags["--n_rollout_threads"] == "8"
    assert job.name == "train_harl-happo_mlp_3m_seed4"


def test_harl_extra_is_pairs_of_flags_that_the_benchmark_does_not_set(fake_harl):
    assert sbs.harl_overrides("--n_rollout_threads 8 --note 'a b'") == {"--n_rollout_threads": "8", "--note": "a b"}
    args = sbs.Args(harl_path=fake_harl, harl_extra="--n_rollout_threads 8 --episode_length 50")
    assert sbs.harl_update_steps(args) == 400 and sbs.harl_update_steps(sbs.Args(harl_path=fake_harl)) == 4000
    for extra, message in (
        ("--seed 9", "--seed is set by this benchmark"),
        ("--exp_name x", "--exp_name is set by this benchmark"),
        ("--use_eval", "--use_eval has no value"),
        ("n_rollout_threads 8", "'n_rollout_threads' where a HARL --key was expected"),
        ("--lr 1 --lr 2", "--lr given twice"),
    ):
        with pytest.raises(ValueError, match=re.escape(message)):
            sbs.harl_overrides(extra)
    with pytest.raises(ValueError, match=re.escape("--harl-extra --episode_length '0': expected an integer >= 1")):
        sbs.harl_update_steps(sbs.Args(harl_path=fake_harl, harl_extra="--episode_length 0"))


def test_ours_is_read_from_a_learning_curves_folder(tmp_path):
    folder = _ours_folder(
        tmp_path / "lc",
        [
            ("happo", "gnn", "3m", 1, 20480, 40.0, 0.95, 19.0, 4),
            ("happo", "gnn", "3m", 1, 10240, 20.0, 0.4, 10.0, 2),
            ("happo", "mlp", "3m", 1, 10240, 20.0, 1.0, 10.0, 2),
        ],
    )
    ours = sbs.read_ours(folder)
    assert list(ours) == [("3m", 1)] and [p["global_step"] for p in ours[("3m", 1)]] == [10240, 20480]
    bad = _ours_folder(tmp_path / "bad", [("happo", "gnn", "3m", "1.5", 10240, 20.0, 0.4, 10.0, 2)])
    with pytest.raises(ValueError, match=r"learning_curves.csv:2: .*expected an integer seed and numbers"):
        sbs.read_ours(bad)
    (tmp_path / "cols").mkdir()
    (tmp_path / "cols" / "learning_curves.csv").write_text("algo,actor,map,seed,global_step\n")
    with pytest.raises(ValueError, match="no column wall_time_s, win_rate, eval_return"):
        sbs.read_ours(str(tmp_path / "cols"))


@pytest.mark.parametrize(
    "change, message",
    [
        ({"harl_path": "/nonexistent/HARL"}, "is not a HARL checkout: no harl/__init__.py"),
        ({"maps": ("protoss_5_vs_5",)}, "--maps 'protoss_5_vs_5': HARL's smac env plays SMAC v1 maps; expected one of"),
        ({"maps": ("3m", "3m")}, "--maps 3m 3m: expected distinct values"),
        ({"seeds": (1, 1)}, "--seeds 1 1: expected distinct values"),
        ({"num_env_steps": 0}, "--num-env-steps 0: expected an integer >= 1"),
        ({"eval_episodes": 0}, "--eval-episodes 0: expected an integer >= 1"),
        ({"target": 1.5}, "--target 1.5: expected a win rate in"),
        ({"target": float("nan")}, "--target nan"),
        ({"ours": "/nonexistent/lc"}, "--ours '/nonexistent/lc': expected a learning_curves output folder"),
        ({"ours_total_timesteps": 10}, "--ours-total-timesteps 10: expected at least one batch"),
        ({"num_env_steps": 3999, "eval_interval": 1}, "HARL would never evaluate; expected at least 4,000 env steps"),
        ({"harl_extra": "--seed 5"}, "--seed is set by this benchmark"),
        ({"out_dir": "<file>"}, "is a file; expected a folder"),
        ({"ours": "<lc>", "seeds": (1, 2)}, "no happo/gnn evaluations for 3m seed 2"),
        ({"ours_eval_interval": 0}, "--ours-eval-interval 0: expected an integer >= 1"),
        ({"ours_num_envs": 0}, "--ours-num-envs 0: expected an integer >= 1"),
        ({"heartbeat_timeout_s": 0.5}, "--heartbeat-timeout-s 0.5, --startup-timeout-s 120.0: expected positive"),
        ({"ours": "<lc>", "seeds": (1,), "stall_timeout_s": -1.0}, "--stall-timeout-s -1.0: expected a value >= 0"),
        ({"time_budget_s": -1.0}, "--time-budget-s -1.0: expected a value >= 0"),
        (
            {"ours_extra": "--hidden 64 --eval-episodes 5"},
            "--ours-extra '--hidden 64 --eval-episodes 5': --eval-episodes is set",
        ),
        ({"ours_extra": "--seed=4"}, "--ours-extra '--seed=4': --seed is set by this benchmark"),
        ({"ours": "<lc>", "seeds": (1,), "ours_extra": "--hidden 64"}, "--ours-extra '--hidden 64' with --ours"),
    ],
)
def test_bad_input_names_the_value_before_anything_starts(fake_harl, tmp_path, change, message):
    if change.get("ours") == "<lc>":  # a valid --ours folder (3m, seed 1)
        change = {**change, "ours": _ours_folder(tmp_path / "lc", [("happo", "gnn", "3m", 1, 512, 2.0, 0.25, 5.0, 1)])}
    if change.get("out_dir") == "<file>":
        (tmp_path / "afile").write_text("")
        change = {**change, "out_dir": str(tmp_path / "afile")}
    args = sbs.Args(**{"harl_path": fake_harl, "out_dir": str(tmp_path / "out"), "maps": ("3m",), **change})
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace("[", r"\[")):
        sbs.main(args)
    assert not (tmp_path / "out").exists()


def test_no_harl_checkout_says_where_to_get_one(monkeypatch):
    monkeypatch.delenv("HARL_PATH", raising=False)
    with pytest.raises(ValueError, match="pass --harl-path DIR or set HARL_PATH .git clone https://github.com/PKU-MARL/HARL"):
        sbs.check_args(sbs.Args())


@needs_harl
def test_harl_runs_side_by_side_end_to_end(tmp_path):
    ours = _ours_folder(tmp_path / "lc", [("happo", "gnn", "3m", 1, 512, 2.0, 0.25, 5.0, 1)])
    args = sbs.Args(
        harl_path=HARL_PATH,
        maps=("3m",),
        seeds=(1,),
        num_env_steps=400,
        eval_interval=1,
        eval_episodes=2,
        harl_extra="--n_rollout_threads 2 --episode_length 100 --n_eval_rollout_threads 1 --log_interval 1",
        ours=ours,
        out_dir=str(tmp_path / "out"),
    )
    res = sbs.main(args)
    assert not res["failed"], res
    out = Path(res["out"])
    with open(out / "harl_curves.csv") as f:
        curve = list(csv.DictReader(f))
    assert [int(float(r["global_step"])) for r in curve] == [200, 400]  # 2 threads x 100 steps per update
    harl, mine = res["rows"]
    assert harl["method"].startswith("HARL") and harl["seeds"] == 1 and float(harl["median_sps"]) > 0
    assert harl["evaluations"] == "every 200 env steps"
    assert mine["median_env_steps_to_0.9"] == "not reached" and mine["median_last_eval_win_rate"] == "0.25"
    log = out / "logs" / "train_harl-happo_mlp_3m_seed1.log"
    assert log.stat().st_size > 0 and log.with_suffix(".heartbeat").exists()
    assert (out / "side_by_side.md").read_text().count("| 3m |") == 2


def test_ours_extra_reaches_every_run_of_our_side(fake_harl):
    """--ours-extra passes training flags (e.g. the network width of earlier figures) to our side's runs only."""
    args = sbs.Args(harl_path=fake_harl, maps=("3m",), seeds=(1,), ours_extra="--hidden 64")
    assert sbs.ours_args(args, "out").extra == "--eval-episodes 100 --hidden 64"
    assert sbs.ours_args(sbs.Args(harl_path=fake_harl), "out").extra == "--eval-episodes 100"
    assert all("--hidden" not in job.script_args for job in sbs.harl_jobs(args))
    cmd = sbs.lc.train_args(sbs.ours_args(args, "out"), "happo", "gnn", "3m", 1, 1, 0.0)
    assert cmd[0].endswith("happo_gnn.py") and cmd[-4:] == ["--eval-episodes", "100", "--hidden", "64"]
