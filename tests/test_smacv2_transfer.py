"""SMACv2 transfer: benchmarks/transfer_table.py --smacv2, eval_transfer on scenarios, and
benchmarks/learning_curves.py with SMACv2 scenarios, GNN and MLP actors and supervised runs."""

import csv
import math
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from conftest import load_algo

import sc2_envs
from models import build_models, load_checkpoint, save_checkpoint

REPO = Path(__file__).resolve().parents[1]
et = load_algo("eval_transfer")
tt = load_algo("transfer_table", folder="benchmarks")
lc = load_algo("learning_curves", folder="benchmarks")

PROTOSS = ["protoss_5_vs_5", "protoss_10_vs_10", "protoss_10_vs_11", "protoss_20_vs_20", "protoss_20_vs_23"]


@pytest.fixture(autouse=True)
def one_torch_thread():
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def tiny_checkpoint(path, map_name="protoss_5_vs_5", actor="gnn"):
    """A randomly initialised small checkpoint in happo_gnn.py's format, built from the model API."""
    torch.manual_seed(0)
    info = sc2_envs.make_batched(map_name, num_envs=1).get_env_info()
    policy, critic = build_models(info, actor, hidden=8, heads=2)
    save_checkpoint(str(path), policy, critic, info, {"map": map_name, "actor": actor}, global_step=7)
    return str(path)


def config_of(path):
    return et.read_checkpoint(str(path))["config"]


# ---------------------------------------------------------------- eval_transfer on scenarios


def test_transfer_kinds_and_default_maps_of_scenarios(tmp_path):
    assert et.transfer_kind("protoss_5_vs_5", "protoss_5_vs_5") == "in-distribution"
    assert et.transfer_kind("protoss_5_vs_5", "protoss_10_vs_10") == "scale-up"
    assert et.transfer_kind("protoss_20_vs_20", "protoss_10_vs_11") == "scale-down"
    assert et.transfer_kind("protoss_10_vs_10", "protoss_10_vs_11") == "same-team-size"
    assert et.transfer_kind("protoss_5_vs_5+protoss_20_vs_20", "protoss_10_vs_10") == "interpolation"
    assert et.transfer_kind("2s3z", "protoss_10_vs_10") == "scale-up"
    with pytest.raises(ValueError, match="unknown map 'protoss_5_vs_6'"):
        et.n_agents_of("protoss_5_vs_6")
    cfg = config_of(tiny_checkpoint(tmp_path / "p.pt"))
    assert et.resolve_maps((), cfg) == PROTOSS  # the race's five team sizes, training scenario first
    assert et.resolve_maps(("terran_5_vs_5", "3m"), cfg) == ["terran_5_vs_5", "3m"]
    with pytest.raises(ValueError, match=r"unknown map\(s\) \['zerg_5_vs_6'\]"):
        et.resolve_maps(("zerg_5_vs_6",), cfg)


# ---------------------------------------------------------------- transfer_table --smacv2


def test_smacv2_columns_follow_the_races_of_the_checkpoints(tmp_path):
    protoss = config_of(tiny_checkpoint(tmp_path / "p.pt"))
    marine = config_of(tiny_checkpoint(tmp_path / "m.pt", "3m"))
    assert tt.smacv2_columns([protoss]) == PROTOSS
    assert tt.smacv2_columns([marine]) == [f"terran_{s}" for s in ("5_vs_5", "10_vs_10", "10_vs_11", "20_vs_20", "20_vs_23")]
    assert tt.smacv2_columns([marine, protoss])[:5] == PROTOSS  # race order protoss, terran, zerg
    assert tt.smacv2_columns([protoss], ("protoss_20_vs_23", "terran_5_vs_5", "protoss_5_vs_5")) == [
        "protoss_5_vs_5",
        "protoss_20_vs_23",
        "terran_5_vs_5",
    ]
    with pytest.raises(ValueError, match=r"\['2s3z'\] not SMACv2 scenario"):
        tt.smacv2_columns([protoss], ("2s3z",))


def test_bad_map_names_fail_before_any_training(tmp_path, monkeypatch):
    def no_training(*a, **k):
        raise AssertionError("trained before checking the names")

    monkeypatch.setattr(tt, "train_or_reuse", no_training)
    base = dict(out_dir=str(tmp_path), episodes=1)
    with pytest.raises(ValueError, match=r"\['2s3z'\] not SMACv2 scenario"):
        tt.main(tt.Args(smacv2=True, sources=["protoss_5_vs_5"], maps=("protoss_5_vs_5", "2s3z"), **base))
    with pytest.raises(ValueError, match=r"--sources: unknown map\(s\) \['protos_5_vs_5'\]"):
        tt.main(tt.Args(smacv2=True, sources=["protos_5_vs_5"], **base))
    with pytest.raises(ValueError, match=r"--maps: unknown map\(s\) \['3s5zz'\]"):
        tt.main(tt.Args(matrix=True, sources=["2s3z"], maps=("3s5zz",), **base))


def test_share_of_teams_with_a_type_follows_smacv2_weights():
    # protoss: colossus weight 0.1, no exception types -> 1 - 0.9^n
    assert math.isclose(tt.share_with_types("protoss", 5, ["colossus"]), 1 - 0.9**5)
    assert math.isclose(tt.share_with_types("protoss", 20, ["colossus"]), 1 - 0.9**20)
    # terran: a medivac-only team is redrawn, so a team always has a marine or a marauder
    assert math.isclose(tt.share_with_types("terran", 5, ["marine", "marauder"]), 1.0)
    no_med = (0.9**5 - 0.0) / (1 - 0.1**5)
    assert math.isclose(tt.share_with_types("terran", 5, ["medivac"]), 1 - no_med)


def test_a_smac_v1_checkpoint_is_na_on_smacv2_with_every_reason():
    cfg = config_of(REPO / "checkpoints" / "2s3z_gnn.pt")  # stalker / zealot, trained on 2s3z
    cell = tt.smacv2_cell(cfg, "protoss_5_vs_5")
    label, reason = cell.split(": ", 1)
    assert label == tt.V1_CHECKPOINT
    assert "2s3z" in reason and "no actor for ['colossus']" in reason and "41% of the 5-unit ally teams" in reason
    assert "own_x" in reason
    assert "unit-type bits are its race's kinds ['stalker', 'zealot', 'colossus']" in reason
    assert "cannot be read with the vocabulary ['stalker', 'zealot']" in reason
    assert "a SMAC v1 checkpoint on a SMACv2 scenario" in reason and "feature options" not in reason
    assert tt.smacv2_cell(cfg, "terran_5_vs_5").startswith(tt.OTHER_RACE + ": ")


def test_smacv2_transfer_table_cells_and_na_labels(tmp_path, capsys):
    gnn = tiny_checkpoint(tmp_path / "p_gnn.pt", actor="gnn")
    mlp = tiny_checkpoint(tmp_path / "p_mlp.pt", actor="mlp")
    v1 = str(REPO / "checkpoints" / "2s3z_gnn.pt")
    args = tt.Args(
        smacv2=True,
        sources=(),
        checkpoints=(gnn, mlp, v1),
        maps=("protoss_5_vs_5", "protoss_10_vs_11", "terran_5_vs_5"),
        episodes=2,
        max_envs=2,
        out_dir=str(tmp_path / "out"),
    )
    table = tt.main(args)
    lines = table.splitlines()
    assert lines[0] == "| checkpoint | protoss_5_vs_5 | protoss_10_vs_11 | terran_5_vs_5 |"
    assert lines[2].startswith("| protoss_5_vs_5 (gnn) | **0.") and lines[2].endswith("] | n/a (other race) |")
    assert lines[3].startswith("| protoss_5_vs_5 (mlp) | **0.")
    assert lines[3].endswith("| n/a (size mismatch) | n/a (other race) |")
    assert lines[4] == "| 2s3z (gnn) | n/a (SMAC v1 checkpoint) | n/a (SMAC v1 checkpoint) | n/a (other race) |"
    with open(tmp_path / "out" / "transfer_smacv2.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert [(r["source_map"], r["actor_type"], r["target_map"], r["kind"]) for r in rows] == [
        ("protoss_5_vs_5", "gnn", "protoss_5_vs_5", "in-distribution"),
        ("protoss_5_vs_5", "gnn", "protoss_10_vs_11", "scale-up"),
        ("protoss_5_vs_5", "gnn", "terran_5_vs_5", "same-team-size"),
        ("protoss_5_vs_5", "mlp", "protoss_5_vs_5", "in-distribution"),
        ("protoss_5_vs_5", "mlp", "protoss_10_vs_11", "scale-up"),
        ("protoss_5_vs_5", "mlp", "terran_5_vs_5", "same-team-size"),
        ("2s3z", "gnn", "protoss_5_vs_5", "same-team-size"),
        ("2s3z", "gnn", "protoss_10_vs_11", "scale-up"),
        ("2s3z", "gnn", "terran_5_vs_5", "same-team-size"),
    ]
    for k in (0, 1, 3):  # evaluated cells: 2 episodes, a Wilson interval around the win rate, no error
        assert rows[k]["error"] == "" and int(rows[k]["episodes"]) == 2
        assert 0.0 <= float(rows[k]["ci_low"]) <= float(rows[k]["win_rate"]) <= float(rows[k]["ci_high"]) <= 1.0
    assert rows[4]["error"].startswith(tt.SIZE_MISMATCH + ": MLP input/output size mismatch") and rows[4]["win_rate"] == ""
    assert rows[6]["error"].startswith(tt.V1_CHECKPOINT + ": ") and rows[6]["episodes"] == ""
    assert all(rows[k]["error"].startswith(tt.OTHER_RACE + ": ") for k in (2, 5, 8))
    md = (tmp_path / "out" / "transfer_smacv2.md").read_text()
    assert "**n/a cells**" in md and "2s3z (gnn) on protoss_5_vs_5: n/a (SMAC v1 checkpoint)" in md
    assert (tmp_path / "out" / "transfer_smacv2.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    out = capsys.readouterr().out
    assert "SMACv2 transfer table: 3 checkpoints" in out and "not a figure to report" in out


def test_matrix_and_smacv2_together_is_refused(tmp_path):
    with pytest.raises(ValueError, match="--matrix and --smacv2"):
        tt.main(tt.Args(matrix=True, smacv2=True, sources=(), out_dir=str(tmp_path)))


# ---------------------------------------------------------------- learning_curves: plan


def test_learning_curves_plans_smacv2_gnn_and_mlp_runs(tmp_path, capsys):
    args = lc.Args(
        maps=("protoss_5_vs_5",),
        actors=("gnn", "mlp"),
        seeds=(1, 2),
        transfer_maps=("protoss_10_vs_10", "protoss_20_vs_20"),
        out_dir=str(tmp_path),
        dry_run=True,
    )
    jobs = lc.main(args)["jobs"]
    assert not any(tmp_path.iterdir())  # a dry run writes nothing
    assert [(j.kind, j.algo, j.actor, j.map, j.seed) for j in jobs] == [
        ("train", "happo", "gnn", "protoss_5_vs_5", 1),
        ("train", "happo", "gnn", "protoss_5_vs_5", 2),
        ("train", "happo", "mlp", "protoss_5_vs_5", 1),
        ("train", "happo", "mlp", "protoss_5_vs_5", 2),
    ]
    cmd = " ".join(jobs[2].script_args)
    assert jobs[2].script_args[0].endswith("algos/happo_gnn.py")
    for part in ("--map protoss_5_vs_5", "--actor mlp", "--exp-name happo_mlp", "--seed 1", "--save-model"):
        assert part in cmd
    ev = lc.eval_args(args, jobs[2], "ck.pt", "/o")
    assert ev[0].endswith("algos/eval_transfer.py")
    joined = " ".join(ev)
    assert "--maps protoss_5_vs_5 protoss_10_vs_10 protoss_20_vs_20 --episodes 100" in joined
    assert "--seed 1" in joined and "--name eval_happo_mlp_protoss_5_vs_5_seed1" in joined
    printed = capsys.readouterr().out
    assert "4 training runs" in printed and printed.count("then python") == 4
    multi = lc.plan(lc.Args(maps=("protoss_5_vs_5+protoss_10_vs_10",), seeds=(3,)))
    assert "--map protoss_5_vs_5 protoss_10_vs_10" in " ".join(multi[0].script_args)
    assert lc.eval_targets(lc.Args(transfer_maps=("protoss_10_vs_10",)), "protoss_5_vs_5+protoss_10_vs_10") == [
        "protoss_5_vs_5",
        "protoss_10_vs_10",
    ]


def test_learning_curves_default_transfer_targets_follow_the_training_map(tmp_path, capsys):
    """The default ``--transfer-maps`` (``auto``) once was 2s3z 3s5z 3s5z_vs_3s6z for every run, n/a for a
    SMACv2 checkpoint; it is now what eval_transfer.py picks without --maps: the scenarios of the race
    for SMACv2, the maps of the unit classes for SMAC v1. An empty --transfer-maps means none."""
    auto = lc.Args()
    assert auto.transfer_maps == ("auto",)
    assert lc.eval_targets(auto, "protoss_5_vs_5") == [
        "protoss_5_vs_5",
        "protoss_10_vs_10",
        "protoss_10_vs_11",
        "protoss_20_vs_20",
        "protoss_20_vs_23",
    ]
    assert lc.eval_targets(auto, "2s3z") == ["2s3z", "3s5z", "3s5z_vs_3s6z"]  # the earlier default, for v1
    assert lc.eval_targets(auto, "3m+8m") == ["3m", "8m", "5m_vs_6m", "25m"]
    assert lc.eval_targets(lc.Args(transfer_maps=()), "protoss_5_vs_5") == ["protoss_5_vs_5"]
    lc.main(lc.Args(maps=("protoss_5_vs_5",), seeds=(1,), out_dir=str(tmp_path), dry_run=True))
    printed = capsys.readouterr().out
    assert f"<out> below is the output folder a real run creates: {tmp_path}/learning_curves__<unix time>" in printed
    assert "--maps protoss_5_vs_5 protoss_10_vs_10" in printed and " 2s3z" not in printed


def test_learning_curves_dry_run_shows_the_threads_and_budget_of_the_real_run(monkeypatch, tmp_path):
    # The dry run once printed "--torch-threads 1" and no budget whatever --max-parallel and --time-budget-s said.
    monkeypatch.setattr(lc.os, "cpu_count", lambda: 2)
    one = lc.Args(maps=("2s3z",), seeds=(1, 2), max_parallel=1, out_dir=str(tmp_path), dry_run=True)
    cmd = " ".join(lc.main(one)["jobs"][0].script_args)
    assert "--torch-threads 2" in cmd and "--time-budget-s" not in cmd
    assert lc.schedule(one) == (2, 1, 2, 0.0)
    both = lc.Args(maps=("2s3z",), seeds=(1, 2), max_parallel=2, time_budget_s=1000.0, eval_reserve_s=30.0, dry_run=True)
    n_jobs, parallel, threads, budget = lc.schedule(both)
    # one wave: (1000 - 3 targets x 30 s) minus 1/8 of it for the last iteration and checkpoint
    assert (n_jobs, parallel, threads) == (2, 2, 1) and budget == pytest.approx(910 - 910 / 8)
    cmd = " ".join(lc.main(both)["jobs"][1].script_args)
    assert "--torch-threads 1" in cmd and f"--time-budget-s {budget:.0f}" in cmd
    # found by a tester: --max-parallel above the number of runs split the CPUs over runs that do not exist
    # (2 runs on 4 CPUs got 1 thread each) and the plan said "8 at a time"
    monkeypatch.setattr(lc.os, "cpu_count", lambda: 4)
    assert lc.schedule(lc.Args(maps=("2s3z",), seeds=(1, 2), max_parallel=8))[:3] == (2, 2, 2)


@pytest.mark.parametrize(
    "change, message",
    [
        ({"actors": ("gnn", "transformer")}, "--actors 'transformer'"),
        ({"maps": ("protoss_5_vs_6",)}, "map 'protoss_5_vs_6'"),
        ({"transfer_maps": ("protoss_7_vs_7",)}, "map 'protoss_7_vs_7'"),
        ({"final_episodes": 0}, "--final-episodes 0"),
        ({"heartbeat_timeout_s": 0.5}, "the timeout above the interval"),
        # found by trying: each of these used to pass the dry run
        ({"time_budget_s": -5.0}, "--time-budget-s -5.0: expected a value >= 0 (0: none)"),
        ({"time_budget_s": float("nan")}, "--time-budget-s nan: expected a finite number"),
        ({"seeds": (1, 1)}, "--seeds 1 1: expected distinct values"),
        ({"algos": ("happo", "happo")}, "--algos happo happo: expected distinct values"),
        ({"maps": ("3m+3m",)}, "--maps '3m+3m': a multi-map run needs distinct maps"),
        ({"seeds": (-1,)}, "--seeds -1: expected non-negative integers"),
        ({"num_envs": 0}, "--num-envs 0: expected an integer >= 1"),
        ({"total_timesteps": 10}, "--total-timesteps 10: expected at least one batch of 10240 env steps"),
        ({"target": 1.5}, "--target 1.5: expected a win rate in (0, 1]"),
        ({"max_parallel": -1}, "--max-parallel -1: expected a value >= 0 (0: all training runs)"),
        ({"status_interval_s": 0.0}, "--status-interval-s 0.0: expected seconds > 0"),
        ({"transfer_maps": ("auto", "3m")}, "--transfer-maps auto 3m: `auto` stands alone"),
        # found by a tester: the last flag wins, so every "seed" trained seed 7 (and so on) under its own label
        ({"extra": "--seed 7 --ent-coef 0.01"}, "--extra '--seed 7 --ent-coef 0.01' sets --seed, which the harness sets"),
        ({"extra": "--num-envs=8 --actor mlp"}, "sets --num-envs, --actor, which the harness sets"),
        ({"extra": "--time-budget-s 60", "time_budget_s": 600.0}, "sets --time-budget-s, which the harness sets"),
    ],
)
def test_learning_curves_bad_arguments(tmp_path, change, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        lc.main(lc.Args(out_dir=str(tmp_path), **change))
    assert not any(tmp_path.iterdir())


def test_learning_curves_out_dir_that_is_a_file_is_a_clean_error(tmp_path):
    # before: check_args passed it and main's make_run_dir raised FileExistsError with a traceback
    (tmp_path / "f").write_text("x")
    with pytest.raises(ValueError, match=re.escape(f"--out-dir {str(tmp_path / 'f')!r} is a file; expected a folder")):
        lc.check_args(lc.Args(out_dir=str(tmp_path / "f")))


def test_learning_curves_extra_may_set_what_the_harness_leaves_alone():
    # docs/learning_speed.md: --extra="--time-budget-s 600 --eval-episodes 100" with no harness budget
    assert lc.extra_conflicts(lc.Args(extra="--time-budget-s 600 --eval-episodes 100")) == []
    assert lc.extra_conflicts(lc.Args(extra="--seed-offset 3 --ent-coef 0.005")) == []


def test_learning_curves_extra_is_split_as_a_shell_would():
    # before: str.split broke quoted values into pieces ("--exp-name 'a b'" -> "'a", "b'")
    assert lc.extra_tokens(lc.Args(extra="--wandb-project-name 'my runs' --eval-episodes 100")) == [
        "--wandb-project-name",
        "my runs",
        "--eval-episodes",
        "100",
    ]
    with pytest.raises(ValueError, match='--extra "--wandb-project-name \'my runs": No closing quotation'):
        lc.check_args(lc.Args(extra="--wandb-project-name 'my runs"))


def test_learning_curves_summary_uses_the_final_evaluation():
    args = lc.Args(maps=("protoss_5_vs_5",), actors=("mlp",), seeds=(1, 2), transfer_maps=("protoss_10_vs_10",), target=0.5)
    curves = [
        {
            "algo": "happo",
            "actor": "mlp",
            "map": "protoss_5_vs_5",
            "seed": s,
            "global_step": g,
            "wall_time_s": g / 10,
            "win_rate": w,
        }
        for s, pts in ((1, [(100, 0.2), (200, 0.6)]), (2, [(100, 0.1), (200, 0.4)]))
        for g, w in pts
    ]

    def final(seed, target, kind, wins, error=""):
        if error:
            return dict(algo="happo", actor="mlp", train_map="protoss_5_vs_5", seed=seed, target_map=target, kind=kind,
                        episodes="", wins="", win_rate="", ci_low="", ci_high="", error=error)  # fmt: skip
        return dict(algo="happo", actor="mlp", train_map="protoss_5_vs_5", seed=seed, target_map=target, kind=kind,
                    episodes="100", wins=str(wins), win_rate=str(wins / 100), ci_low="0.1", ci_high="0.9",
                    error="")  # fmt: skip

    finals = [
        final(1, "protoss_5_vs_5", "in-distribution", 70),
        final(2, "protoss_5_vs_5", "in-distribution", 50),
        final(1, "protoss_10_vs_10", "scale-up", 0, "n/a: MLP input/output size mismatch"),
        final(2, "protoss_10_vs_10", "scale-up", 0, "n/a: MLP input/output size mismatch"),
    ]
    summary, transfer = lc.summarise(args, curves, finals)
    (s,) = summary
    assert s["seeds"] == 2 and s["final_episodes"] == 100 and s["median_final_win_rate"] == pytest.approx(0.6)
    assert s["median_last_training_eval_win_rate"] == pytest.approx(0.5)
    assert s["median_steps_to_0.5"] == float("inf")  # seed 1 at 200 steps, seed 2 never: the median is inf
    ind, up = transfer
    assert ind["pooled_wins"] == 120 and ind["pooled_episodes"] == 200 and ind["median_win_rate"] == pytest.approx(0.6)
    assert ind["pooled_ci_low"] < 0.6 < ind["pooled_ci_high"]
    assert up["seeds"] == 0 and up["median_win_rate"] == "" and "size mismatch" in up["note"]


# ---------------------------------------------------------------- learning_curves: supervision


def _supervised(tmp_path, body: str, **timeouts):
    (tmp_path / "logs").mkdir(exist_ok=True)
    script = tmp_path / "child.py"
    script.write_text(body)
    args = lc.Args(heartbeat_interval_s=0.2, heartbeat_timeout_s=1.5, startup_timeout_s=20, **timeouts)
    r = lc.launch(lc.Job("train", "happo", "gnn", "3m", 1, [str(script)]), str(tmp_path), args.heartbeat_interval_s)
    t0 = time.time()
    while (h := lc.health(r, args)) is None:
        assert time.time() - t0 < 25, lc.log_tail(r.log_path)
        time.sleep(0.1)
    return r, h, time.time() - t0


def test_runs_get_numba_threads_equal_to_their_torch_threads_unless_set(monkeypatch):
    monkeypatch.delenv("NUMBA_NUM_THREADS", raising=False)
    assert lc.child_env(1)["NUMBA_NUM_THREADS"] == "1"
    assert "NUMBA_NUM_THREADS" not in lc.child_env(None)  # CUDA runs: numba's default
    assert lc.child_env(1)["PYTHONPATH"].startswith(lc.REPO)
    monkeypatch.setenv("NUMBA_NUM_THREADS", "2")
    assert lc.child_env(1)["NUMBA_NUM_THREADS"] == "2"  # the user's choice wins


def test_a_dead_run_is_reported_with_its_exit_status(tmp_path):
    r, (status, words), _ = _supervised(tmp_path, "import sys\nprint('about to fail', flush=True)\nsys.exit(3)\n")
    assert (status, words) == ("exited", "exit code 3")
    r.log.close()
    assert "about to fail" in r.log_path.read_text()


def test_a_frozen_run_is_detected_within_seconds_and_killed(tmp_path):
    body = "import os, signal, time\ntime.sleep(0.5)\nos.kill(os.getpid(), signal.SIGSTOP)\n"
    r, (status, words), waited = _supervised(tmp_path, body)
    assert status == "frozen" and "heartbeat silent" in words and waited < 10
    assert lc.stop_hung(r) == -9  # SIGKILL of the stopped process group
    r.log.close()


def test_a_stalled_run_gets_a_stack_dump_and_is_killed(tmp_path):
    body = "import time\nprint('iteration 1', flush=True)\ndef train_step():\n    time.sleep(60)\ntrain_step()\n"
    r, (status, words), waited = _supervised(tmp_path, body, stall_timeout_s=2.0)
    assert status == "stalled" and "log silent" in words and waited < 10
    line = lc.status_line(r, time.time())  # what the harness's periodic status shows for the run
    assert line.startswith("  train happo gnn 3m seed 1: iteration 1 | heartbeat ") and ", log " in line
    assert lc.stop_hung(r) == -9
    r.log.close()
    assert "train_step" in r.log_path.read_text()  # faulthandler's dump of the main thread, on SIGUSR1


def test_supervise_runs_every_job_and_its_follow_ups_and_reports_each_exit(tmp_path, capsys):
    (tmp_path / "logs").mkdir()
    ok, bad = tmp_path / "ok.py", tmp_path / "bad.py"
    ok.write_text("print('fine', flush=True)\n")
    bad.write_text("import sys\nsys.exit(4)\n")
    args = lc.Args(heartbeat_interval_s=0.2, heartbeat_timeout_s=5, startup_timeout_s=20, status_interval_s=0.5)
    jobs = [lc.Job("train", "happo", "gnn", "3m", s, [str(ok if s == 1 else bad)]) for s in (1, 2)]
    asked = []

    def follow_up(job, rc, status):
        asked.append((job.seed, rc, status))
        return [lc.Job("eval", job.algo, job.actor, job.map, job.seed, [str(ok)])] if job.kind == "train" and rc == 0 else []

    done = lc.supervise(jobs, str(tmp_path), args, parallel=1, follow_up=follow_up)
    assert [(j.kind, j.seed, rc) for j, rc, _ in done] == [("train", 1, 0), ("eval", 1, 0), ("train", 2, 4)]
    assert sorted(asked) == [(1, 0, "exited"), (1, 0, "exited"), (2, 4, "exited")]
    assert done[2][2] == "exit code 4" and "train happo gnn 3m seed 2: exit code 4" in capsys.readouterr().out
    assert (tmp_path / "logs" / "eval_happo_gnn_3m_seed1.log").read_text().rstrip().endswith("fine")


def test_run_supervised_rejects_bad_arguments(tmp_path):
    for argv, message in ((["b"], "usage"), (["b", "x", "s.py"], "INTERVAL_S 'x'"), (["b", "1", "nope.py"], "'nope.py'")):
        res = subprocess.run(
            [sys.executable, str(REPO / "scripts" / "run_supervised.py"), *argv],
            capture_output=True,
            text=True,
            cwd=tmp_path,
        )
        assert res.returncode == 2 and message in res.stderr and res.stderr.count("\n") == 1


# ---------------------------------------------------------------- learning_curves: a tiny real run


@pytest.mark.slow
def test_learning_curves_runs_smacv2_gnn_and_mlp_end_to_end(tmp_path):
    args = lc.Args(
        maps=("protoss_5_vs_5",),
        actors=("gnn", "mlp"),
        seeds=(1,),
        total_timesteps=16,
        num_envs=2,
        num_steps=4,
        eval_interval=1,
        final_episodes=2,
        eval_max_envs=2,
        transfer_maps=("protoss_10_vs_10",),
        out_dir=str(tmp_path),
        extra="--eval-episodes 2 --hidden 16",
    )
    res = lc.main(args)
    assert not res["failed"]
    out = Path(res["out"])
    with open(out / "learning_curves.csv") as f:
        curve = list(csv.DictReader(f))
    assert sorted({(r["actor"], int(float(r["global_step"]))) for r in curve}) == [
        ("gnn", 8),
        ("gnn", 16),
        ("mlp", 8),
        ("mlp", 16),
    ]
    with open(out / "final_eval.csv") as f:
        finals = {(r["actor"], r["target_map"]): r for r in csv.DictReader(f)}
    assert finals[("gnn", "protoss_10_vs_10")]["episodes"] == "2" and finals[("gnn", "protoss_10_vs_10")]["kind"] == "scale-up"
    assert finals[("mlp", "protoss_5_vs_5")]["episodes"] == "2"
    assert "size mismatch" in finals[("mlp", "protoss_10_vs_10")]["error"]
    assert [s["actor"] for s in res["summary"]] == ["gnn", "mlp"]
    for name in ("train_happo_gnn_protoss_5_vs_5_seed1", "eval_happo_mlp_protoss_5_vs_5_seed1"):
        assert (out / "logs" / f"{name}.log").stat().st_size > 0 and (out / "logs" / f"{name}.heartbeat").exists()
    assert (out / "learning_curves.png").exists() and (out / "summary.md").exists()


def test_a_checkpoint_of_other_feature_options_is_a_layout_mismatch(tmp_path):
    # (conic_fov=True has no GNN checkpoint at all: the entity models refuse its look actions)
    info = sc2_envs.make_batched("protoss_5_vs_5", num_envs=1, obs_own_pos=False).get_env_info()
    policy, critic = build_models(info, "gnn", hidden=8, heads=2)
    save_checkpoint(str(tmp_path / "o.pt"), policy, critic, info, {"map": "protoss_5_vs_5"})
    label, reason = tt.smacv2_cell(config_of(tmp_path / "o.pt"), "protoss_10_vs_10").split(": ", 1)
    assert label == tt.LAYOUT_MISMATCH and "own_feature_names" in reason


@pytest.mark.slow
def test_smacv2_table_trains_one_iteration_per_actor_then_evaluates(tmp_path):
    args = tt.Args(
        smacv2=True,
        sources=("protoss_5_vs_5",),
        actors=("gnn", "mlp"),
        total_timesteps=8,
        num_envs=2,
        train_args="--num-steps 4 --eval-episodes 2 --hidden 16",
        maps=("protoss_5_vs_5", "protoss_10_vs_10"),
        episodes=2,
        max_envs=2,
        out_dir=str(tmp_path),
    )
    lines = tt.main(args).splitlines()
    assert lines[2].startswith("| protoss_5_vs_5 (gnn) | **0.") and "n/a" not in lines[2]
    assert lines[3].startswith("| protoss_5_vs_5 (mlp) | **0.") and lines[3].endswith("| n/a (size mismatch) |")
    for actor in ("gnn", "mlp"):
        assert et.read_checkpoint(str(tmp_path / "checkpoints" / f"protoss_5_vs_5_{actor}.pt"))["global_step"] == 8
        assert (tmp_path / "logs" / f"train_protoss_5_vs_5_{actor}.log").stat().st_size > 0


def test_smacv2_table_trains_on_a_scenario_by_default():
    assert tt.resolve_sources(tt.Args(smacv2=True)) == ("protoss_5_vs_5",)
    assert tt.resolve_sources(tt.Args()) == ("2s3z", "3s5z")
    assert tt.resolve_sources(tt.Args(smacv2=True, sources=())) == ()  # `--sources` alone: checkpoints only
    assert tt.resolve_sources(tt.Args(smacv2=True, sources=("terran_5_vs_5",))) == ("terran_5_vs_5",)


@pytest.mark.parametrize("actor", ["gnn", "mlp"])
def test_a_checkpoint_of_other_unit_ranges_is_refused_though_its_layout_is_the_same(tmp_path, actor):
    # use_unit_ranges=False: SMAC's 9 / 6 sight and shoot ranges for every unit; same columns, other meaning
    info = sc2_envs.make_batched("protoss_5_vs_5", num_envs=1, use_unit_ranges=False).get_env_info()
    assert info["feature_options"]["use_unit_ranges"] is False
    policy, critic = build_models(info, actor, hidden=8, heads=2)
    save_checkpoint(str(tmp_path / "r.pt"), policy, critic, info, {"map": "protoss_5_vs_5"})
    default = sc2_envs.make_batched("protoss_5_vs_5", num_envs=1).get_env_info()
    assert default["obs_layout"] == info["obs_layout"]
    with pytest.raises(ValueError, match=r"use_unit_ranges: False vs True"):
        load_checkpoint(str(tmp_path / "r.pt"), default)
    label, reason = tt.smacv2_cell(config_of(tmp_path / "r.pt"), "protoss_5_vs_5").split(": ", 1)
    assert label == tt.LAYOUT_MISMATCH and "use_unit_ranges: False vs True" in reason
    load_checkpoint(str(tmp_path / "r.pt"), info)  # the training options: loads
