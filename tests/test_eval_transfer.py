"""Tests of algos/eval_transfer.py, sc2_envs/stats.py and benchmarks/transfer_table.py."""

import csv
import math
import os
import re
import subprocess
import sys

import pytest
import torch
from conftest import REPO, load_algo

import sc2_envs
from models import build_models, save_checkpoint
from sc2_envs.stats import wilson_interval


@pytest.fixture(autouse=True)
def one_torch_thread():
    # The small batched ops are much slower with several threads on a shared, busy CPU (thread
    # oversubscription); eval_transfer.py's CLI uses one thread by default for the same reason.
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


et = load_algo("eval_transfer")
tt = load_algo("transfer_table", folder="benchmarks")


def tiny_checkpoint(path, map_name="2s3z", actor="gnn", **smac_options):
    """A randomly initialised, small checkpoint written with happo_gnn.py's format (models.save_checkpoint)."""
    torch.manual_seed(0)
    env = sc2_envs.make_batched(map_name, num_envs=1, **smac_options)
    info = env.get_env_info()
    policy, critic = build_models(info, actor, hidden=8, heads=2)
    save_checkpoint(str(path), policy, critic, info, {"map": map_name, "actor": actor}, global_step=123)
    return str(path)


# ---------------------------------------------------------------- Wilson interval


def test_wilson_zero_wins():
    # n=10, p=0, z^2=3.8416: denom = 1 + 0.38416 = 1.38416; center = (0.19208)/1.38416 = 0.138770;
    # half = 1.96/1.38416 * sqrt(0 + 3.8416/400) = 1.416021 * 0.0980 = 0.138770 -> [0, 0.277540].
    low, high = wilson_interval(0, 10)
    assert low == 0.0
    assert high == pytest.approx(0.277540, abs=1e-6)


def test_wilson_all_wins_mirrors_zero_wins():
    # Symmetry p -> 1-p: [1 - 0.277540, 1].
    low, high = wilson_interval(10, 10)
    assert low == pytest.approx(0.722460, abs=1e-6)
    assert high == 1.0


def test_wilson_81_of_100():
    # p=0.81, z^2/n = 0.038416, denom = 1.038416; center = (0.81 + 0.019208)/1.038416 = 0.798532;
    # half = 1.96/1.038416 * sqrt(0.81*0.19/100 + 3.8416/40000) = 1.887489 * sqrt(0.00163504) = 0.076322
    # -> [0.722210, 0.874853].
    low, high = wilson_interval(81, 100)
    assert low == pytest.approx(0.722210, abs=1e-5)
    assert high == pytest.approx(0.874853, abs=1e-5)


def test_wilson_matches_scipy_with_the_exact_quantile():
    stats = pytest.importorskip("scipy.stats", reason="scipy is an optional cross-check")
    for wins, n in [(0, 10), (3, 7), (81, 100), (100, 100)]:
        ci = stats.binomtest(wins, n).proportion_ci(confidence_level=0.95, method="wilson")
        low, high = wilson_interval(wins, n, z=float(stats.norm.ppf(0.975)))
        assert (low, high) == pytest.approx((ci.low, ci.high), abs=1e-9)


@pytest.mark.parametrize(
    "wins,n,z,match",
    [
        (1, 0, 1.96, "n must be >= 1"),
        (11, 10, 1.96, "wins must be in"),
        (-1, 10, 1.96, "wins must be in"),
        (1, 10, 0.0, "z must be"),
        (1, 10, math.nan, "z must be"),
    ],
)
def test_wilson_rejects_bad_input(wins, n, z, match):
    with pytest.raises(ValueError, match=match):
        wilson_interval(wins, n, z)


@pytest.mark.parametrize("wins,n", [(0.5, 10), (1, 10.0), (True, 10)])
def test_wilson_rejects_non_integer_counts(wins, n):
    with pytest.raises(TypeError, match="integer count"):
        wilson_interval(wins, n)


# ---------------------------------------------------------------- evaluation


def test_tiny_gnn_checkpoint_in_distribution_and_scale_up(tmp_path):
    path = tiny_checkpoint(tmp_path / "g.pt")
    for target, kind in [("2s3z", "in-distribution"), ("3s5z", "scale-up")]:
        r = et.evaluate_transfer(path, target, episodes=5, max_envs=3, seed=0)
        assert r.error == ""
        assert (r.source_map, r.target_map, r.actor_type, r.kind, r.source_steps) == ("2s3z", target, "gnn", kind, 123)
        assert r.episodes == 5 and 0 <= r.wins <= 5 and (r.eval_seed, r.num_envs) == (0, 3)  # max_envs caps the envs
        assert r.win_rate == r.wins / 5
        assert (r.ci_low, r.ci_high) == wilson_interval(r.wins, 5)
        assert 1 <= r.mean_length <= sc2_envs.get_map(target).episode_limit
        assert math.isfinite(r.mean_return)


def test_evaluation_is_deterministic_for_a_seed(tmp_path):
    path = tiny_checkpoint(tmp_path / "g.pt")
    a = et.evaluate_transfer(path, "2s3z", episodes=3, max_envs=8, seed=7)
    assert (a.eval_seed, a.num_envs) == (7, 3)  # no more envs than episodes
    b = et.evaluate_transfer(path, "2s3z", episodes=3, max_envs=8, seed=7)
    assert (a.wins, a.mean_return, a.mean_length) == (b.wins, b.mean_return, b.mean_length)


# ---------------------------------------------------------------- mismatches


def test_unknown_class_is_an_error_row_not_a_guess(tmp_path):
    path = tiny_checkpoint(tmp_path / "g.pt")
    r = et.evaluate_transfer(path, "3m", episodes=2, max_envs=2)
    assert "['marine']" in r.error and "absent from the checkpoint" in r.error
    assert r.episodes is None and r.win_rate is None and r.ci_low is None


def test_mlp_size_mismatch_is_an_error_row(tmp_path):
    path = tiny_checkpoint(tmp_path / "m.pt", actor="mlp")
    r = et.evaluate_transfer(path, "3s5z", episodes=2, max_envs=2)
    assert "size mismatch" in r.error and "obs_size=80" in r.error and "obs_size=128" in r.error
    assert r.win_rate is None
    ok = et.evaluate_transfer(path, "2s3z", episodes=2, max_envs=2)
    assert ok.error == "" and ok.episodes == 2


def test_mlp_same_sizes_other_layout_is_an_error():
    env = sc2_envs.make_batched("2s3z", num_envs=1)
    info = env.get_env_info()
    config = {
        "map_name": "2s3z",
        "actor_type": "mlp",
        "classes": ["stalker", "zealot"],
        "obs_shape": info["obs_shape"],
        "n_actions": info["n_actions"],
        "obs_layout": dict(info["obs_layout"], own_feature_names=["a", "b", "c", "d"]),
    }
    assert "observation layout mismatch" in et.fit_error(config, info)


def test_gnn_other_observation_layout_is_an_error_row(tmp_path):
    # Trained without health features: entity rows have other columns than the default 2s3z layout.
    path = tiny_checkpoint(tmp_path / "g.pt", obs_all_health=False)
    r = et.evaluate_transfer(path, "2s3z", episodes=2, max_envs=2)
    assert "observation layout mismatch" in r.error and "health" in r.error
    assert r.win_rate is None


def test_gnn_transfer_ignores_last_action_columns(tmp_path):
    # obs_last_action only adds count-dependent columns that the entity parser drops: still transferable.
    path = tiny_checkpoint(tmp_path / "g.pt", obs_last_action=True)
    env = sc2_envs.make_batched("3s5z", num_envs=1)
    assert et.fit_error(torch.load(path, weights_only=True)["config"], env.get_env_info()) == ""


def test_not_a_checkpoint_raises(tmp_path):
    torch.save({"weights": torch.zeros(2)}, tmp_path / "other.pt")
    with pytest.raises(ValueError, match="is not a 'sc2_envs.class_actor_critic/1' checkpoint"):
        et.read_checkpoint(str(tmp_path / "other.pt"))
    (tmp_path / "garbage.pt").write_bytes(b"not a torch file")
    with pytest.raises(ValueError, match="could not be read"):
        et.read_checkpoint(str(tmp_path / "garbage.pt"))
    with pytest.raises(FileNotFoundError, match="does not exist"):
        et.read_checkpoint(str(tmp_path / "missing.pt"))


def test_unknown_map_raises_with_the_valid_names():
    with pytest.raises(ValueError, match="unknown map.*'nosuchmap'.*valid maps"):
        et.resolve_maps(("2s3z", "nosuchmap"), {"map_name": "2s3z", "classes": ["stalker", "zealot"]})
    with pytest.raises(ValueError, match="3s5z given more than once"):
        et.resolve_maps(("3s5z", "2s3z", "3s5z"), {"map_name": "2s3z", "classes": ["stalker", "zealot"]})


def test_a_mistyped_target_map_gets_the_suggestion_the_training_scripts_give():
    cfg = {"map_name": "protoss_5_vs_5", "classes": ["stalker", "zealot", "colossus"]}
    with pytest.raises(ValueError, match=re.escape("'protoss_10_vs11' (did you mean 'protoss_10_vs_11'?)")):
        et.resolve_maps(("protoss_10_vs11", "zerg_5_vs_5"), cfg)


@pytest.mark.parametrize("flag, value", [("maps", "3m"), ("checkpoints", "a.pt")])
def test_one_string_for_maps_or_checkpoints_is_refused_not_read_letter_by_letter(flag, value):
    """``Args(maps="3m")`` in Python was read as the maps '3' and 'm'."""
    args = et.Args(**{"checkpoints": ("missing.pt",), flag: value})
    with pytest.raises(ValueError, match=re.escape(f"--{flag} {value!r}: expected a sequence of names such as ({value!r},)")):
        et.prepare(args)


@pytest.mark.parametrize(
    "change, message",
    [
        ({"checkpoints": ("a.pt", "a.pt")}, "--checkpoints: a.pt given more than once; expected distinct files"),
        # found in a review: another spelling of one path evaluated the file twice (two rows, one checkpoint)
        ({"checkpoints": ("a.pt", "./a.pt")}, "--checkpoints: ./a.pt, a.pt given more than once; expected distinct"),
        ({"seed": -1}, "--seed -1: expected a non-negative integer"),
        ({"torch_threads": -2}, "--torch-threads -2: expected an integer >= 0"),
        ({"spawn_jitter": float("nan")}, "--spawn-jitter nan: expected a distance in [0, 2] world units"),
        ({"spawn_jitter": -1.0}, "--spawn-jitter -1.0: expected a distance in [0, 2] world units"),
        # found by a tester: these passed prepare(), then gave a traceback or only failed rows and status 0
        ({"spawn_jitter": 5.0}, "--spawn-jitter 5.0: expected a distance in [0, 2] world units (the simulator's range)"),
        ({"device": "cpu:1"}, "--device cpu:1: torch has one CPU device; expected --device cpu"),
        ({"device": "meta"}, "--device meta: the simulator runs on the CPU or a CUDA GPU; expected cpu, cuda or cuda:N"),
        ({"device": "mps"}, "--device mps: the simulator runs on the CPU or a CUDA GPU"),
        ({"device": "gpu"}, "--device 'gpu': expected cpu, cuda or cuda:N"),
        ({"name": "a/b"}, "--name 'a/b': expected a file stem without path separators"),
    ],
)
def test_bad_command_lines_are_refused_before_reading_any_checkpoint(change, message):
    # before: a traceback from deep inside the simulator or the run folder code, or silent acceptance
    args = et.Args(**{"checkpoints": ("missing.pt",), **change})
    with pytest.raises(ValueError, match=re.escape(message)):
        et.prepare(args)


def test_out_dir_that_is_a_file_is_refused_before_any_evaluation(tmp_path):
    # before: every (checkpoint, map) pair was evaluated, then make_run_dir raised FileExistsError
    f = tmp_path / "afile"
    f.write_text("x")
    for out, where in ((f, "is a file"), (f / "sub", f"is inside {str(f)!r}, which is a file")):
        args = et.Args(checkpoints=("missing.pt",), out_dir=str(out))
        with pytest.raises(ValueError, match=re.escape(f"--out-dir {str(out)!r} {where}; expected a folder")):
            et.prepare(args)
    et.check_out_dir(tmp_path / "new" / "deeper")  # a folder still to be made is fine
    assert not (tmp_path / "new").exists()


def test_default_maps_follow_the_checkpoint_classes():
    assert et.resolve_maps((), {"map_name": "3s5z", "classes": ["stalker", "zealot"]}) == ["3s5z", "2s3z", "3s5z_vs_3s6z"]
    assert et.resolve_maps((), {"map_name": "3m", "classes": ["marine"]}) == ["3m", "5m_vs_6m", "8m", "25m"]


def test_configuration_prints_the_resolved_default_maps_and_the_cli_refuses_bad_devices(tmp_path):
    """Without --maps the first screen once said ``maps: ()``; it lists the targets that will run."""
    g = tiny_checkpoint(tmp_path / "g.pt")
    env = dict(os.environ, PYTHONPATH=str(REPO), OMP_NUM_THREADS="1")
    cmd = [sys.executable, str(REPO / "algos" / "eval_transfer.py"), "--checkpoints", g, "--episodes", "1", "--max-envs", "1"]
    res = subprocess.run([*cmd, "--out-dir", str(tmp_path / "o")], capture_output=True, text=True, env=env, timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    assert "  maps: 2s3z 3s5z 3s5z_vs_3s6z (default for the checkpoint(s)" in res.stdout, res.stdout[:2000]
    for flag in (["--device", "cpu:1"], ["--spawn-jitter", "5"]):
        res = subprocess.run([*cmd, *flag], capture_output=True, text=True, env=env, timeout=600)
        assert res.returncode == 2 and res.stderr.count("\n") == 1 and flag[0] in res.stderr, res.stderr


def test_transfer_kinds():
    assert et.transfer_kind("2s3z", "2s3z") == "in-distribution"
    assert et.transfer_kind("2s3z", "3s5z") == "scale-up"
    assert et.transfer_kind("3s5z", "2s3z") == "scale-down"
    assert et.transfer_kind("3s5z", "3s5z_vs_3s6z") == "same-team-size"


# ---------------------------------------------------------------- outputs


def test_main_writes_csv_markdown_and_png(tmp_path, capsys):
    g = tiny_checkpoint(tmp_path / "g.pt")
    m = tiny_checkpoint(tmp_path / "m.pt", actor="mlp")
    args = et.Args(checkpoints=(g, m), maps=("2s3z", "3s5z"), episodes=2, max_envs=2, out_dir=str(tmp_path / "out"))
    rows = et.main(args)
    printed = capsys.readouterr().out
    assert printed.startswith("eval_transfer configuration:") and "episodes: 2" in printed
    assert "  maps: 2s3z 3s5z\n" in printed and "  greedy: True (argmax actions)" in printed
    (run_dir,) = (tmp_path / "out").iterdir()  # one new folder per evaluation
    assert run_dir.name.startswith("transfer__") and (run_dir / "run_meta.json").is_file()
    with open(run_dir / "transfer.csv", newline="") as f:
        table = list(csv.DictReader(f))
    assert list(table[0]) == et.CSV_COLUMNS
    assert {(r["eval_seed"], r["num_envs"]) for r in table} == {(str(args.seed), "2")}  # what fixes the episodes
    assert [(r["source_map"], r["actor_type"], r["target_map"]) for r in table] == [
        ("2s3z", "gnn", "2s3z"),
        ("2s3z", "gnn", "3s5z"),
        ("2s3z", "mlp", "2s3z"),
        ("2s3z", "mlp", "3s5z"),
    ]
    mlp_up = table[3]
    assert "size mismatch" in mlp_up["error"] and mlp_up["win_rate"] == "" and mlp_up["episodes"] == ""
    for r, row in zip(table[:3], rows[:3], strict=True):
        assert r["error"] == "" and int(r["episodes"]) == 2
        assert float(r["ci_low"]) == row.ci_low and float(r["ci_high"]) == row.ci_high
    md = (run_dir / "transfer.md").read_text()
    assert md.count("\n| 2s3z |") == 4 and "size mismatch" in md
    assert (run_dir / "transfer.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    et.main(args)  # the same command again: a second folder, the first one untouched
    assert len(list((tmp_path / "out").iterdir())) == 2


def test_median_table_gives_the_median_over_the_seeds_of_each_source_and_target():
    # the README's results quote "medians of 3 seeds" next to this command; it printed only the per-seed rows
    def row(target, rate, seed, error=""):
        figures = (10, int(rate * 10), rate, 0.0, 1.0) if not error else ()
        return et.TransferRow(target, "3m+8m", "gnn", "scale-up", *figures, error=error, checkpoint=f"s{seed}.pt")

    rows = [row("25m", 1.0, 1), row("25m", 0.9, 2), row("25m", 0.5, 3), row("3m", 1.0, 1), row("3m", 0.0, 2, "x")]
    lines = et.median_table(rows).splitlines()
    assert lines[2:] == [
        "| 3m+8m | gnn | 25m | scale-up | 3 | 0.90 | 0.50 | 1.00 | 0 |",
        "| 3m+8m | gnn | 3m | scale-up | 2 | 1.00 | 1.00 | 1.00 | 1 |",
    ]


def test_median_table_is_empty_without_two_checkpoints_of_one_source():
    rows = [
        et.TransferRow("3m", "3m", "gnn", "in-distribution", 10, 9, 0.9, 0.6, 0.98, checkpoint="a.pt"),
        et.TransferRow("3m", "3m", "mlp", "in-distribution", 10, 5, 0.5, 0.2, 0.8, checkpoint="b.pt"),
    ]
    assert et.median_table(rows) == ""


# ---------------------------------------------------------------- benchmark script


def test_transfer_table_training_command_and_device_check():
    args = tt.Args(total_timesteps=1000, num_envs=4, time_budget_s=30, device="cpu", train_args="--hidden 16")
    cmd = tt.train_command(args, "2s3z", "mlp")
    assert cmd[1].endswith("algos/happo_gnn.py")
    joined = " ".join(cmd[2:])
    for part in [
        "--map 2s3z",
        "--actor mlp",
        "--total-timesteps 1000",
        "--num-envs 4",
        "--time-budget-s 30",
        "--save-model",
        "--no-cuda",
        "--hidden 16",
    ]:
        assert part in joined
    with pytest.raises(ValueError, match="expected 'cpu' or 'cuda'"):
        tt.train_command(tt.Args(device="tpu"), "2s3z", "gnn")


@pytest.mark.parametrize(
    "change, message",
    [
        # found by a tester: each of these trained every source first, then failed in the evaluation
        ({"episodes": 0}, "--episodes 0: expected an integer >= 1"),
        ({"max_envs": 0}, "--max-envs 0: expected an integer >= 1"),
        ({"eval_seed": -1}, "--eval-seed -1: expected a non-negative integer"),
        ({"actors": ("gnn", "transformer")}, "--actors: ['transformer']; expected gnn and/or mlp"),
        ({"matrix": True, "maps": ("protoss_5_vs_5",)}, "--maps: unknown map(s) ['protoss_5_vs_5']"),
        ({"out_dir": "FILE"}, "is a file; expected a folder"),
        ({"checkpoint_dir": "FILE/ck"}, "--checkpoint-dir"),
        # the last flag wins: an MLP would have been trained and saved as 3m_gnn.pt, a seed mislabelled
        ({"train_args": "--hidden 16 --actor mlp"}, "--train-args '--hidden 16 --actor mlp' sets --actor, which"),
        ({"train_args": "--seed=3"}, "sets --seed, which train_command sets"),
    ],
)
def test_transfer_table_refuses_bad_evaluation_flags_before_training(tmp_path, monkeypatch, change, message):
    (tmp_path / "f").write_text("x")
    change = {k: v.replace("FILE", str(tmp_path / "f")) if isinstance(v, str) else v for k, v in change.items()}
    monkeypatch.setattr(tt, "train_or_reuse", lambda *a: pytest.fail("trained before checking the command line"))
    args = tt.Args(**{"sources": ("3m",), "out_dir": str(tmp_path / "out"), **change})
    with pytest.raises(ValueError, match=re.escape(message)):
        tt.main(args)


def test_transfer_table_pivot_keeps_every_checkpoint_of_one_source(tmp_path):
    # found by a tester: two checkpoints of one (source, actor), e.g. two seeds, gave one pivot line,
    # the first checkpoint's, and the other's figures were dropped without a word
    rows = [
        et.TransferRow("2s3z", "2s3z", "gnn", "in-distribution", 10, 9, 0.9, 0.6, 0.98, checkpoint="runs/s1/gnn.pt"),
        et.TransferRow("2s3z", "2s3z", "gnn", "in-distribution", 10, 2, 0.2, 0.05, 0.5, checkpoint="runs/s2/seed2.pt"),
        et.TransferRow("2s3z", "2s3z", "mlp", "in-distribution", 10, 5, 0.5, 0.2, 0.8, checkpoint="mlp.pt"),
    ]
    et.write_csv(rows, str(tmp_path / "t.csv"))
    # eval_transfer's own Markdown table: the two 2s3z GNN rows could not be told apart either
    md = et.markdown_table(rows).splitlines()[2:]
    assert [line.split(" | ")[0] for line in md] == ["| 2s3z (gnn)", "| 2s3z (seed2)", "| 2s3z"]
    # the same file name in two run folders (learning_curves' runs/<run>/happo_gnn.pt): the folder tells them apart
    same = [
        et.TransferRow("3s5z", "2s3z", "gnn", "scale-up", 10, 7, 0.7, 0.4, 0.9, checkpoint=f"runs/{d}/happo_gnn.pt")
        for d in "ab"
    ]
    md = et.markdown_table(same).splitlines()[2:]
    assert [line.split(" | ")[0] for line in md] == ["| 2s3z (a/happo_gnn)", "| 2s3z (b/happo_gnn)"]
    lines = tt.pivot_table(tmp_path / "t.csv").splitlines()
    assert lines[2:] == [
        "| 2s3z (gnn) gnn | 0.90 [0.60, 0.98] |",
        "| 2s3z (gnn) seed2 | 0.20 [0.05, 0.50] |",
        "| 2s3z (mlp) | 0.50 [0.20, 0.80] |",
    ]


@pytest.mark.slow
def test_transfer_table_reuses_checkpoints_and_builds_the_pivot(tmp_path):
    ck = tmp_path / "ck"
    ck.mkdir()
    for m in ("2s3z", "3s5z"):
        for a in ("gnn", "mlp"):
            tiny_checkpoint(ck / f"{m}_{a}.pt", map_name=m, actor=a)
    pivot = tt.main(tt.Args(checkpoint_dir=str(ck), out_dir=str(tmp_path / "out"), maps=("2s3z", "3s5z"), episodes=2))
    lines = pivot.splitlines()
    assert lines[0] == "| source (actor) | 2s3z | 3s5z |"
    assert lines[3].startswith("| 2s3z (mlp) |") and lines[3].endswith("| n/a (size mismatch) |")
    assert lines[5].startswith("| 3s5z (mlp) | n/a (size mismatch) |")
    assert not (tmp_path / "out" / "logs" / "train_2s3z_gnn.log").exists()  # reused, not trained


def test_sampled_evaluation_is_reproducible_for_a_seed():
    path = str(REPO / "checkpoints" / "3s5z_gnn.pt")
    rows = []
    for _ in range(2):
        torch.rand(7)  # whatever ran before must not change the figures
        rows.append(et.evaluate_transfer(path, "3s_vs_3z", episodes=4, max_envs=4, seed=3, greedy=False))
    assert (rows[0].mean_return, rows[0].mean_length) == (rows[1].mean_return, rows[1].mean_length)


def test_transfer_table_pivot_names_the_folder_when_file_stems_collide(tmp_path):
    # learning_curves writes runs/<run>/happo_gnn.pt for every seed: the stem alone labelled both lines alike
    rows = [
        et.TransferRow("3s5z", "2s3z", "gnn", "scale-up", 10, 7, 0.7, 0.4, 0.9, checkpoint=f"runs/{d}/happo_gnn.pt")
        for d in "ab"
    ]
    et.write_csv(rows, str(tmp_path / "t.csv"))
    lines = tt.pivot_table(tmp_path / "t.csv").splitlines()[2:]
    assert [line.split(" | ")[0] for line in lines] == ["| 2s3z (gnn) a/happo_gnn", "| 2s3z (gnn) b/happo_gnn"]


def test_a_fine_tuned_checkpoint_names_its_starting_checkpoint(tmp_path, capsys):
    """Found by a newcomer trial: a fine-tune's global_step counts the fine-tuning only, and the start-up
    lines did not say so; they now name the --init-from checkpoint."""
    ckpt = REPO / "checkpoints" / "marine_dropout" / "3m8m_dropout_seed1_gnn.pt"
    et.main(et.Args(checkpoints=(str(ckpt),), maps=("3m",), episodes=1, max_envs=1, out_dir=str(tmp_path / "out")))
    printed = capsys.readouterr().out
    assert (
        "trained on 3m+8m for 409,600 env steps (seed 1; fine-tuned from checkpoints/marine_budget/3m8m_seed1_gnn.pt; "
        "its steps are not included)"
    ) in printed


def test_progress_lines_name_the_checkpoint_when_there_are_several(tmp_path, capsys):
    """Found by a newcomer trial: two fine-tunes of one map printed the same "2s3z (gnn) -> 2s3z" line with
    different win rates; with several checkpoints each line now names its file (one: unchanged)."""
    a, b = (str(REPO / "checkpoints" / "marine_dropout" / f"3m8m_dropout_seed{s}_gnn.pt") for s in (1, 2))
    et.main(et.Args(checkpoints=(a, b), maps=("3m",), episodes=1, max_envs=1, out_dir=str(tmp_path / "out")))
    printed = capsys.readouterr().out
    assert f"3m+8m (gnn, {a}) -> 3m [" in printed and f"3m+8m (gnn, {b}) -> 3m [" in printed, printed
    et.main(et.Args(checkpoints=(a,), maps=("3m",), episodes=1, max_envs=1, out_dir=str(tmp_path / "out")))
    assert "3m+8m (gnn) -> 3m [" in capsys.readouterr().out
