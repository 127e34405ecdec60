"""Tests of sc2_envs/training/run.py, cli.py and progress.py (run folders, metadata, graceful stop, resume
state, progress) and of stopping and resuming algos/happo_gnn.py."""

import csv
import dataclasses
import io
import json
import os
import random
import signal
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
import torch
import tyro

import sc2_envs
from sc2_envs.training import progress
from sc2_envs.training.cli import cli_error, flowing_help, given_fields, resume_args
from sc2_envs.training.progress import (
    EnvShares,
    Progress,
    env_share_note,
    format_progress,
    plural,
    resume_hint,
    wall_time_note,
)
from sc2_envs.training.run import (
    GracefulStop,
    load_resume,
    make_run_dir,
    note_resume,
    rng_state,
    save_resume,
    set_rng_state,
    start_lines,
    truncate_csv,
    write_run_meta,
)

REPO = Path(__file__).resolve().parents[1]


# ---------------------------------------------------------------- run folders and metadata


def test_run_folders_are_never_shared(tmp_path):
    with ThreadPoolExecutor(8) as pool:
        dirs = list(pool.map(lambda _: make_run_dir(tmp_path / "runs", "3m__happo_gnn__1__100"), range(16)))
    assert len({d.name for d in dirs}) == 16
    assert sorted(d.name for d in dirs)[:2] == ["3m__happo_gnn__1__100", "3m__happo_gnn__1__100-10"]
    assert all(d.is_dir() and not any(d.iterdir()) for d in dirs)
    with pytest.raises(ValueError, match="without path separators"):
        make_run_dir(tmp_path, "a/b")


def test_run_meta_records_config_commit_and_versions(tmp_path):
    from dataclasses import dataclass

    @dataclass
    class Args:
        seed: int = 3
        maps: tuple = ("3m",)
        lr: float = float("nan")

    write_run_meta(tmp_path, Args(), run_name="x")
    meta = json.loads((tmp_path / "run_meta.json").read_text())
    assert meta["config"] == {"seed": 3, "maps": ["3m"], "lr": "nan"} and meta["run_name"] == "x"
    assert set(meta["packages"]) == {"torch", "numpy", "gymnasium", "pettingzoo", "sc2-envs"}
    assert meta["packages"]["torch"] == torch.__version__.split("+")[0] or meta["packages"]["torch"] == torch.__version__
    commit = meta["git_commit"]
    assert commit == "unknown" or len(commit.split("+")[0]) == 40
    note_resume(tmp_path, from_global_step=64)
    meta = json.loads((tmp_path / "run_meta.json").read_text())
    assert [r["from_global_step"] for r in meta["resumes"]] == [64]


def test_cli_error_is_one_line_and_exit_status_2(capsys):
    with pytest.raises(SystemExit) as e:
        cli_error("--episodes 0: expected\n an integer >= 1", prog="eval_transfer.py")
    assert e.value.code == 2
    assert capsys.readouterr().err == "eval_transfer.py: error: --episodes 0: expected an integer >= 1\n"


# ---------------------------------------------------------------- progress


def test_progress_shows_no_return_before_an_episode_has_finished():
    assert format_progress(None, float("nan"), 12) == "win=nan sps=12"
    assert format_progress(1.234, 0.5, 12) == "ret=1.23 win=0.50 sps=12"


def test_progress_without_a_terminal_prints_one_line_per_iteration():
    out = io.StringIO()
    p = Progress(3, 32, tty=False, stream=out)
    p.update(1, 32, None, float("nan"), 10)
    p.update(2, 64, 2.5, 0.25, 11)
    p.update(3, 96, None, 0.25, 12)  # no episode finished in iteration 3: the last known return stays
    p.close()
    lines = out.getvalue().splitlines()
    assert len(lines) == 3
    assert lines[0].startswith("iteration 1/3 step 32 win=nan sps=10") and "ret=" not in lines[0]
    assert lines[1].startswith("iteration 2/3 step 64 ret=2.50 win=0.25 sps=11")
    assert lines[2].startswith("iteration 3/3 step 96 ret=2.50 win=0.25 sps=12")
    # a resumed run's lines give the whole run's time, the clock its sps divides by
    out = io.StringIO()
    Progress(4, 32, start_iteration=2, tty=False, stream=out, elapsed_before=3600.0).update(3, 96, None, 0.5, 1)
    assert out.getvalue().strip().endswith("(3600 s)"), out.getvalue()


def test_a_resumed_bar_shows_the_whole_runs_sps_and_not_tqdms_rate_of_this_process():
    fresh, resumed = io.StringIO(), io.StringIO()
    for stream, start in ((fresh, 0), (resumed, 2)):
        p = Progress(4, 32, start_iteration=start, tty=True, stream=stream)
        p.update(start + 1, (start + 1) * 32, 1.0, 0.5, 7)
        p.close()
    assert "step/s" in fresh.getvalue() and "sps=7" in fresh.getvalue()
    assert "step/s" not in resumed.getvalue() and "96/128" in resumed.getvalue() and "sps=7" in resumed.getvalue()


# ---------------------------------------------------------------- graceful stop


def test_first_signal_requests_a_stop_and_the_second_aborts():
    err = io.StringIO()
    previous = signal.getsignal(signal.SIGTERM)
    with GracefulStop(stream=err) as stop:
        assert not stop.requested
        os.kill(os.getpid(), signal.SIGTERM)
        assert stop.requested and stop.reason == "SIGTERM"
        assert "finishing this iteration" in err.getvalue()
        with pytest.raises(SystemExit) as e:
            os.kill(os.getpid(), signal.SIGINT)
        assert e.value.code == 128 + signal.SIGINT
    assert signal.getsignal(signal.SIGTERM) is previous


# ---------------------------------------------------------------- resume state


def test_rng_state_round_trips_through_a_weights_only_file(tmp_path):
    random.seed(1), np.random.seed(2), torch.manual_seed(3)
    save_resume(tmp_path / "resume.pt", {"rng": rng_state()})
    expected = (random.random(), np.random.rand(), torch.rand(3))
    state, folder = load_resume(tmp_path)
    assert folder == tmp_path
    set_rng_state(state["rng"])
    got = (random.random(), np.random.rand(), torch.rand(3))
    assert got[0] == expected[0] and got[1] == expected[1] and torch.equal(got[2], expected[2])


def test_load_resume_errors_name_the_path_and_what_was_expected(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_resume(tmp_path / "nope")
    with pytest.raises(FileNotFoundError, match="no resume.pt in that folder"):
        load_resume(tmp_path)
    torch.save({"format": "other"}, tmp_path / "resume.pt")
    with pytest.raises(ValueError, match="format 'other'; expected a 'sc2_envs.resume/2' file"):
        load_resume(tmp_path)
    (tmp_path / "resume.pt").write_bytes(b"garbage")
    with pytest.raises(ValueError, match="not readable as a torch file"):
        load_resume(tmp_path / "resume.pt")


def test_load_resume_refuses_another_scripts_run(tmp_path):
    # found in a review: hatrpo_gnn.py --resume <a happo_gnn run> went on silently with TRPO updates in the
    # happo run's folder, and happo_gnn.py --resume <a hatrpo_gnn run> ended in KeyError after noting the resume
    save_resume(tmp_path / "resume.pt", {"args": {}})
    write_run_meta(tmp_path, {"seed": 1}, script="happo_gnn.py")
    assert load_resume(tmp_path, script="happo_gnn.py")[1] == tmp_path
    with pytest.raises(ValueError, match=r"a run of happo_gnn.py \(its run_meta.json\); expected a run of hatrpo_gnn.py"):
        load_resume(tmp_path / "resume.pt", script="hatrpo_gnn.py")
    (tmp_path / "run_meta.json").unlink()  # no record: not checked
    assert load_resume(tmp_path, script="hatrpo_gnn.py")[1] == tmp_path


def test_resume_args_keep_the_saved_config_except_changeable_flags():
    from dataclasses import asdict, dataclass

    @dataclass
    class Args:
        seed: int = 1
        total_timesteps: int = 100
        lr: float = 0.1
        resume: str = ""

    saved = asdict(Args(seed=5, lr=0.2))
    got = resume_args(saved, Args(total_timesteps=300, resume="x"), Args(), ("total_timesteps",))
    assert (got.seed, got.total_timesteps, got.lr) == (5, 300, 0.2)
    assert resume_args(saved, Args(lr=0.2), Args(), ()).lr == 0.2  # repeating the saved value is fine
    with pytest.raises(ValueError, match=r"--lr 0.3: the resumed run has 0.2 .* only --total-timesteps may change"):
        resume_args(saved, Args(lr=0.3), Args(), ("total_timesteps",))


def test_given_fields_are_the_flags_on_the_command_line_whatever_their_value():
    """``given_fields`` names every field whose flag tyro would read, in each of tyro's spellings,
    including a value equal to the default (what ``resume_args`` must apply or check)."""
    from dataclasses import dataclass

    import tyro

    @dataclass
    class Args:
        seed: int = 1
        total_timesteps: int = 100
        cuda: bool = True
        map: tuple[str, ...] = ("3m",)
        target_kl: float | None = None
        resume: str = ""

    cases = [
        (["--total-timesteps", "100"], {"total_timesteps"}),
        (["--total_timesteps=100", "--seed", "-1"], {"total_timesteps", "seed"}),
        (["--no-cuda", "--map", "2s3z", "3s5z"], {"cuda", "map"}),
        (["--no_cuda", "--cuda", "--target-kl", "None"], {"cuda", "target_kl"}),
        (["--resume", "runs/x", "--seed=1"], {"resume", "seed"}),
        ([], set()),
    ]
    for argv, expected in cases:
        tyro.cli(Args, args=argv)  # tyro accepts each spelling
        assert given_fields(Args, argv) == expected, argv


def test_resume_args_apply_or_check_every_given_flag_even_at_its_default():
    """A given changeable flag is applied even when it equals its default (``--total-timesteps 2000000``
    once dropped, so a resumed run had nothing to do); a given other flag is checked against the run's
    value even when it equals its default (``--seed 1`` on a seed-5 run, ``--map 2s3z`` on a 3m run)."""
    from dataclasses import asdict, dataclass

    @dataclass
    class Args:
        seed: int = 1
        total_timesteps: int = 100
        torch_threads: int = 0
        map: tuple[str, ...] = ("2s3z",)
        resume: str = ""

    saved = asdict(Args(seed=5, total_timesteps=32, torch_threads=1, map=("3m",)))
    saved["map"] = list(saved["map"])
    change = ("total_timesteps", "torch_threads")
    got = resume_args(saved, Args(resume="x"), Args(), change, {"resume", "total_timesteps", "torch_threads"})
    assert (got.total_timesteps, got.torch_threads, got.seed, list(got.map)) == (100, 0, 5, ["3m"])
    got = resume_args(saved, Args(resume="x"), Args(), change, {"resume"})  # nothing given: the saved run
    assert (got.total_timesteps, got.torch_threads) == (32, 1)
    with pytest.raises(ValueError, match=r"--seed 1: the resumed run has 5 .* only --total-timesteps, --torch-threads"):
        resume_args(saved, Args(), Args(), change, {"seed"})
    with pytest.raises(ValueError, match=r"--map 2s3z: the resumed run has \['3m'\]"):
        resume_args(saved, Args(), Args(), change, {"map"})
    assert resume_args(saved, Args(seed=5, map=("3m",)), Args(), change, {"seed", "map"}).seed == 5  # the run's values


def test_end_of_run_wording():
    assert (plural(1, "iteration"), plural(2, "iteration"), plural(1000, "epoch")) == (
        "1 iteration",
        "2 iterations",
        "1,000 epochs",
    )
    assert resume_hint("runs/x", False, 64) == "continue with --resume runs/x"
    assert resume_hint("runs/x", True, 2048) == "to train longer: --resume runs/x --total-timesteps N (N > 2,048)"
    # the first iteration of a process (kernel compile) is left out of the mean, or labelled when alone
    assert (
        env_share_note(0.5, 2, 0.9)
        == ", env 25% of the iteration time (the first iteration and any with a one-time kernel compile or cache load, "
        "or during a background compile, excluded)"
    )
    assert env_share_note(0.0, 0, 0.9) == (
        ", env 90% of the iteration time (this process ran one iteration, including the one-time kernel compile or cache load)"
    )
    assert env_share_note(0.0, 0, None) == ""
    assert env_share_note(0.0, 0, 0.4, 2) == (
        ", env 40% of the last iteration's time (each of this process's 2 iterations included a one-time kernel "
        "compile or cache load, or ran during a background compile on the torch path)"
    )
    # a resumed run's wall time (what its SPS divides by) counts earlier processes: said so, with this one's
    assert wall_time_note(14.2, 14.2, False) == "14 s"
    assert wall_time_note(14.2, 4.6, True) == "14 s (whole run; 5 s in this process)"


def test_truncate_csv_drops_rows_after_the_resume_point(tmp_path):
    path = tmp_path / "eval.csv"
    path.write_text("global_step,win_rate\n32,0.1\n64,0.2\n96,0.3\n")
    assert truncate_csv(path, "global_step", 64) == 2
    assert path.read_text().splitlines() == ["global_step,win_rate", "32,0.1", "64,0.2"]


def test_simulator_snapshot_continues_every_env_bit_for_bit():
    a = sc2_envs.make_batched("2s3z", num_envs=6, seed=4)
    a.reset()
    gen = torch.Generator().manual_seed(0)

    def random_actions(out):
        logits = torch.rand(out["avail_actions"].shape, generator=gen).masked_fill(~out["avail_actions"], -1.0)
        return logits.argmax(-1)

    out = a.reset()
    for _ in range(70):  # past the episode limit (120) for some envs? 2s3z battles end sooner: autoresets
        out = a.step(random_actions(out))
    snap = a.state_dict()
    saved = Path(os.environ.get("TMPDIR", "/tmp")) / f"sim_snapshot_{os.getpid()}.pt"
    torch.save(snap, saved)
    snap = torch.load(saved, weights_only=True)
    saved.unlink()
    b = sc2_envs.make_batched("2s3z", num_envs=6, seed=999)
    b.load_state_dict(snap)
    gen_state = gen.get_state()
    outs_a = [a.step(random_actions(out)) for _ in range(1)]
    for _ in range(60):
        outs_a.append(a.step(random_actions(outs_a[-1])))
    gen.set_state(gen_state)
    outs_b = [b.step(random_actions(out)) for _ in range(1)]
    for _ in range(60):
        outs_b.append(b.step(random_actions(outs_b[-1])))
    assert sum(int((o["terminated"] | o["truncated"]).sum()) for o in outs_a) > 0  # episodes ended and restarted
    for oa, ob in zip(outs_a, outs_b, strict=True):
        for k in ("obs", "state", "avail_actions", "reward", "terminated", "truncated", "battle_won"):
            assert torch.equal(oa[k], ob[k]), k
    assert a.get_stats() == b.get_stats()
    with pytest.raises(ValueError, match="num_envs=6; this simulator has num_envs=2"):
        sc2_envs.make_batched("2s3z", num_envs=2).load_state_dict(snap)


# ---------------------------------------------------------------- happo_gnn.py: stop, resume, errors

TINY = ["--no-cuda", "--map", "3m", "--seed", "3", "--num-envs", "2", "--num-steps", "4", "--eval-episodes", "2"]
TINY += ["--eval-interval", "2", "--hidden", "16", "--total-timesteps", str(2 * 4 * 6)]  # 6 iterations


def _env():
    return dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""), OMP_NUM_THREADS="1")


def _algo(script, cwd, *args, check=True):
    res = subprocess.run(
        [sys.executable, str(REPO / "algos" / script), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
        env=_env(),
        check=False,
    )
    if check:
        assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    return res


def _interrupt_after(script, cwd, iteration, *args):
    """Start a run, send SIGINT once it has printed the line of ``iteration``; return its stdout and status."""
    return _interrupt_after_line(script, cwd, f"iteration {iteration}/", *args, prefix=True)


def _interrupt_after_line(script, cwd, text, *args, prefix=False):
    """Start a run, send SIGINT once a line starts with (or, for ``prefix=False``, contains) ``text``."""
    proc = subprocess.Popen(
        [sys.executable, str(REPO / "algos" / script), *args],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(),
    )
    lines = []
    for line in proc.stdout:
        lines.append(line)
        if line.startswith(text) if prefix else text in line:
            proc.send_signal(signal.SIGINT)
            break
    out, err = proc.communicate(timeout=600)
    return "".join(lines) + out, err, proc.returncode


def _rows(run_dir):
    with open(run_dir / "eval.csv") as f:
        return {int(r["global_step"]): (r["win_rate"], r["eval_return"]) for r in csv.DictReader(f)}


@pytest.mark.parametrize("script", ["happo_gnn.py", "hatrpo_gnn.py"])
def test_sigint_then_resume_equals_an_uninterrupted_run(tmp_path, script):
    """SIGINT after iteration 2 stops the run at the end of iteration 2 or 3 (whichever is running
    when the signal lands) with exit status 0, a checkpoint and an eval row; ``--resume`` then runs
    the remaining iterations. Since the stop falls on an iteration boundary, the final actor and
    critic parameters, optimiser states and step counters must equal those of a run never stopped,
    bit for bit, and every evaluation both runs made must give the same figures."""
    exp = script[: -len(".py")]
    (tmp_path / "a").mkdir(), (tmp_path / "b").mkdir()
    _algo(script, tmp_path / "a", *TINY)
    (ref_dir,) = (tmp_path / "a" / "runs").iterdir()

    out, err, rc = _interrupt_after(script, tmp_path / "b", 2, *TINY)
    assert rc == 0, out[-2000:] + err[-2000:]
    assert "SIGINT received" in err and "Traceback" not in err
    (run_dir,) = (tmp_path / "b" / "runs").iterdir()
    summary = out.strip().splitlines()[-1]
    stopped_at = int(summary.split("after iteration ")[1].split("/")[0])
    assert stopped_at in (2, 3) and summary.startswith("stopped by SIGINT"), summary
    assert f"run folder runs/{run_dir.name}" in summary and f"--resume runs/{run_dir.name}" in summary
    assert max(_rows(run_dir)) == stopped_at * 8  # the last eval row is the stop's
    assert (run_dir / f"{exp}.pt").is_file() and (run_dir / f"{exp}_best.pt").is_file()

    res = _algo(script, tmp_path / "b", "--resume", f"runs/{run_dir.name}")
    assert f"resumed from runs/{run_dir.name}/resume.pt at iteration {stopped_at}" in res.stdout
    assert [p.name for p in (tmp_path / "b" / "runs").iterdir()] == [run_dir.name]  # same folder
    assert len(list(run_dir.glob("events.out.tfevents.*"))) == 2  # the TensorBoard curve continues there

    ref, got = torch.load(ref_dir / "resume.pt", weights_only=True), torch.load(run_dir / "resume.pt", weights_only=True)
    assert got["global_step"] == ref["global_step"] == 48 and got["iteration"] == ref["iteration"] == 6
    for part in ("actors", "critic"):
        assert ref[part].keys() == got[part].keys()
        for k in ref[part]:
            assert torch.equal(ref[part][k], got[part][k]), (part, k)
    assert torch.equal(ref["rng"]["torch"], got["rng"]["torch"])
    assert torch.equal(ref["env"][0]["world"]["pos"], got["env"][0]["world"]["pos"])  # one map: one simulator state
    ref_rows, got_rows = _rows(ref_dir), _rows(run_dir)
    assert set(ref_rows) <= set(got_rows) and all(got_rows[s] == ref_rows[s] for s in ref_rows)
    meta = json.loads((run_dir / "run_meta.json").read_text())
    assert meta["config"]["seed"] == 3 and [r["from_global_step"] for r in meta["resumes"]] == [stopped_at * 8]


def test_resume_refuses_a_changed_algorithm_flag(tmp_path):
    _algo("happo_gnn.py", tmp_path, *TINY[:-2], "--total-timesteps", "8", "--eval-interval", "1")
    (run_dir,) = (tmp_path / "runs").iterdir()
    res = _algo("happo_gnn.py", tmp_path, "--resume", str(run_dir), "--learning-rate", "0.1", check=False)
    assert res.returncode == 2 and res.stderr.count("\n") == 1, res.stderr
    assert "--learning-rate 0.1: the resumed run has 0.0005" in res.stderr
    # flags at their default values count as given: --seed 1 (the default) on this seed-3 run is refused
    for flags, message in ((["--seed", "1"], "--seed 1: the resumed run has 3"), (["--map", "2s3z"], "--map 2s3z: the")):
        res = _algo("happo_gnn.py", tmp_path, "--resume", str(run_dir), *flags, check=False)
        assert res.returncode == 2 and res.stderr.count("\n") == 1 and message in res.stderr, res.stderr


def test_resume_applies_a_changeable_flag_given_at_its_default_value(tmp_path):
    """``--total-timesteps 2000000`` is the default, and was once dropped on --resume ("nothing to do");
    with a time budget the resumed run stops after one more iteration of the 250,000 asked for."""
    first = _algo("happo_gnn.py", tmp_path, *TINY[:-2], "--total-timesteps", "8", "--eval-interval", "1")
    (run_dir,) = (tmp_path / "runs").iterdir()
    # the end-of-run line of a run that used its whole budget (one iteration): singular, no plain --resume
    summary = first.stdout.strip().splitlines()[-1]
    assert summary.startswith("finished 1 iteration: 8 env steps"), summary
    assert f"to train longer: --resume {run_dir.relative_to(tmp_path)} --total-timesteps N (N > 8)" in summary, summary
    assert "(this process ran one iteration, including the one-time kernel compile or cache load)" in summary, summary
    meta = json.loads((run_dir / "run_meta.json").read_text())
    assert meta["config"]["cuda"] is False and meta["device"] == "cpu"  # --no-cuda (TINY): the device used
    # --torch-threads 0 (the default) is torch's count, machine-dependent: the count in effect is recorded
    assert meta["config"]["torch_threads"] == 0 and meta["torch_threads_used"] == 1  # OMP_NUM_THREADS=1 (_env)
    again = _algo("happo_gnn.py", tmp_path, "--resume", str(run_dir))
    assert "nothing to do: the run already has 1 iteration:" in again.stdout, again.stdout[-2000:]
    res = _algo(
        "happo_gnn.py",
        tmp_path,
        "--resume",
        str(run_dir),
        "--total-timesteps",
        "2000000",
        "--time-budget-s",
        "0.001",
        "--torch-threads",
        "2",
    )
    summary = res.stdout.strip().splitlines()[-1]
    assert "reached after iteration 2/250000" in summary, res.stdout[-2000:]
    # the resumed process ran one iteration; the run's wall time counts the first process too
    assert "s in this process), env " in summary and "(whole run; " in summary, summary
    assert "(this process ran one iteration, including" in summary, summary
    meta = json.loads((run_dir / "run_meta.json").read_text())
    assert meta["resumes"][-1]["config"]["total_timesteps"] == 2_000_000
    assert meta["resumes"][-1]["config"]["torch_threads"] == meta["resumes"][-1]["torch_threads_used"] == 2


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--backend", "sc2", "--num-envs", "1"], "or --backend sim"),
        (["--backend", "sc2", "--num-envs", "2"], "--num-envs 2: expected 1 with --backend sc2"),
        (["--resume", "runs/nosuchrun"], "--resume 'runs/nosuchrun' does not exist"),
    ],
    ids=["sc2-without-the-game", "sc2-with-2-envs", "missing-resume"],
)
def test_happo_start_errors_are_one_line_exit_2_and_leave_no_run_folder(tmp_path, flags, message):
    if "--backend sim" in message:
        from sc2_envs.backends import default_sc2_path

        if os.path.isdir(os.environ.get("SC2PATH") or default_sc2_path()):
            pytest.skip("StarCraft II is installed here: this case needs a machine without the game")
    res = _algo("happo_gnn.py", tmp_path, "--map", "3m", "--num-steps", "4", "--total-timesteps", "8", *flags, check=False)
    assert res.returncode == 2, res.stdout[-2000:] + res.stderr[-2000:]
    assert res.stderr.count("\n") == 1 and res.stderr.startswith("happo_gnn.py: error: ") and message in res.stderr
    assert not (tmp_path / "runs").exists()


# ---------------------------------------------------------------- eval_transfer.py: bad input


def _tiny_checkpoint(path):
    from models import build_models, save_checkpoint

    torch.manual_seed(0)
    info = sc2_envs.make_batched("3m", num_envs=1).get_env_info()
    policy, critic = build_models(info, "gnn", hidden=8, heads=2)
    save_checkpoint(str(path), policy, critic, info, {"map": "3m"}, global_step=1)
    return str(path)


@pytest.mark.parametrize(
    "case, message",
    [
        ("missing", "checkpoint 'missing.pt' does not exist"),
        ("not-a-checkpoint", "checkpoint 'other.pt' is not a 'sc2_envs.class_actor_critic/1' checkpoint"),
        ("garbage", "checkpoint 'garbage.pt' could not be read as a torch file with weights_only=True"),
        ("episodes-0", "--episodes 0: expected an integer >= 1"),
        ("unknown-map", "unknown map(s) ['nosuchmap']; valid maps:"),
    ],
)
def test_eval_transfer_bad_input_is_one_line_exit_2_and_writes_nothing(tmp_path, case, message):
    torch.save({"weights": torch.zeros(2)}, tmp_path / "other.pt")
    (tmp_path / "garbage.pt").write_bytes(b"PK\x03\x04 not a torch file")
    good = _tiny_checkpoint(tmp_path / "good.pt")
    ckpt = {"missing": "missing.pt", "not-a-checkpoint": "other.pt", "garbage": "garbage.pt"}.get(case, good)
    extra = {"episodes-0": ["--episodes", "0"], "unknown-map": ["--maps", "3m", "nosuchmap"]}.get(case, [])
    res = _algo("eval_transfer.py", tmp_path, "--checkpoints", ckpt, *extra, check=False)
    assert res.returncode == 2, res.stdout[-2000:] + res.stderr[-2000:]
    assert res.stderr.count("\n") == 1 and res.stderr.startswith("eval_transfer.py: error: "), res.stderr
    assert message in res.stderr and "Traceback" not in res.stderr and "Please file an issue" not in res.stderr
    assert not (tmp_path / "runs").exists()


# ---------------------------------------------------------------- benchmarks/learning_curves.py


def _learning_curves():
    import importlib.util

    spec = importlib.util.spec_from_file_location("learning_curves", REPO / "benchmarks" / "learning_curves.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["learning_curves"] = mod  # dataclasses resolve string annotations through sys.modules
    spec.loader.exec_module(mod)
    return mod


def test_learning_curves_rejects_an_unknown_map_before_making_a_folder(tmp_path):
    lc = _learning_curves()
    with pytest.raises(ValueError, match="map 'nosuchmap'; expected one of 10m_vs_11m|map 'nosuchmap'; expected one of"):
        lc.main(lc.Args(maps=("nosuchmap",), out_dir=str(tmp_path)))
    assert not any(tmp_path.iterdir())


@pytest.mark.slow
def test_learning_curves_gives_each_invocation_its_own_folder(tmp_path):
    lc = _learning_curves()
    args = lc.Args(
        maps=("3m",),
        seeds=(1,),
        total_timesteps=16,
        num_envs=2,
        num_steps=4,
        eval_interval=1,
        transfer_maps=(),
        final_episodes=2,
        eval_max_envs=2,
        out_dir=str(tmp_path),
        extra="--eval-episodes 2 --hidden 16",
    )
    lc.main(args)
    lc.main(args)
    folders = sorted(tmp_path.iterdir())
    assert len(folders) == 2 and all(f.name.startswith("learning_curves__") for f in folders)
    for f in folders:
        assert json.loads((f / "run_meta.json").read_text())["config"]["maps"] == ["3m"]
        with open(f / "learning_curves.csv") as fh:
            assert [int(float(r["global_step"])) for r in csv.DictReader(fh)] == [8, 16]


# ---------------------------------------------------------------- a3c_upgo.py: stop and resume


def test_a3c_sigint_then_resume_continues_the_run(tmp_path):
    """The learner is asynchronous (actors act while it updates), so a resumed run cannot equal an
    uninterrupted one bit for bit. What must hold: SIGINT ends the run with status 0 after the
    current update, with checkpoints; ``--resume`` continues in the same folder with the update and
    env-step counters, the optimiser state (its step count equals the updates made) and the rolling
    window of the old session, with actors seeded for the new session, until ``--total-timesteps``."""
    base = ["--map", "3m", "--num-actors", "1", "--envs-per-actor", "2", "--unroll-length", "8", "--batch-unrolls", "1"]
    base += ["--print-interval-s", "0", "--run-dir", "a3c", "--hidden", "16", "--checkpoint-interval", "1000"]
    out, err, rc = _interrupt_after_line("a3c_upgo.py", tmp_path, "update 2 ", *base, "--total-timesteps", "100000")
    assert rc == 0, out[-3000:] + err[-2000:]
    assert "SIGINT: stopping after update" in out and "Traceback" not in out + err
    (run_dir,) = (tmp_path / "a3c").iterdir()
    first = torch.load(run_dir / "resume.pt", weights_only=True)
    assert first["updates"] >= 2 and (run_dir / "a3c_upgo.pt").is_file()
    assert f"continue with --resume a3c/{run_dir.name}" in out

    total = first["global_step"] + 48
    res = _algo(
        "a3c_upgo.py", tmp_path, "--resume", f"a3c/{run_dir.name}", "--total-timesteps", str(total), "--print-interval-s", "0"
    )
    assert f"at update {first['updates']}, {first['global_step']} env steps (session 1" in res.stdout
    assert f"update {first['updates'] + 1} |" in res.stdout and "update 1 |" not in res.stdout
    last = torch.load(run_dir / "resume.pt", weights_only=True)
    assert last["global_step"] >= total and last["updates"] > first["updates"]
    steps = {int(v["step"]) for v in last["optimizer"]["state"].values()}
    assert steps == {last["updates"]}  # Adam continued: one step per update over both sessions
    assert last["args"]["session"] == 1 and len(list(run_dir.glob("events.out.tfevents.*"))) == 2
    assert [p.name for p in (tmp_path / "a3c").iterdir()] == [run_dir.name]


# ---------------------------------------------------------------- bc_reweight.py: stop and resume


@pytest.fixture(scope="module")
def demos_3m_small(tmp_path_factory):
    from sc2_envs.training.demos import SamplingConfig, heuristic_demonstrator, record_demos

    out = tmp_path_factory.mktemp("demos") / "3m_k2"
    env = sc2_envs.make_batched("3m", num_envs=4, seed=0)
    record_demos(env, heuristic_demonstrator(env), 8, out, SamplingConfig(stride=2), seed=0, log=lambda s: None)
    return out


def test_bc_stop_after_an_epoch_then_resume_equals_an_uninterrupted_run(demos_3m_small, tmp_path, capsys):
    """A stop requested during epoch 1 (the in-process form of the first SIGINT) ends the run after
    that epoch with its checkpoint and resume.pt; ``--resume`` runs epochs 2 and 3 and the selection.
    Every epoch checkpoint and best.pt must equal those of a run never stopped, bit for bit."""
    from conftest import load_algo

    bc = load_algo("bc_reweight")
    common = dict(data=str(demos_3m_small), epochs=3, batch_size=32, reweight_power=1.0, hidden=16, select_by="val-acc")
    ref = bc.main(bc.Args(**common, run_dir=str(tmp_path / "ref")))
    stop = GracefulStop()
    stop.request("test")
    part = bc.main(bc.Args(**common, run_dir=str(tmp_path / "cut")), stop=stop)
    assert part["stopped_after_epoch"] == 1 and not (tmp_path / "cut" / "best.pt").exists()
    assert "continue with --resume" in capsys.readouterr().out
    with pytest.raises(ValueError, match="the folder exists and is not empty"):
        bc.main(bc.Args(**common, run_dir=str(tmp_path / "cut")))
    with pytest.raises(ValueError, match="--hidden 32: the resumed run has 16"):
        bc.main(bc.Args(data=common["data"], hidden=32, resume=str(tmp_path / "cut")))
    got = bc.main(bc.Args(resume=str(tmp_path / "cut")))
    assert [r["epoch"] for r in got["history"]] == [1, 2, 3] and got["pick"] == ref["pick"]
    for name in ("epoch_001.pt", "epoch_002.pt", "epoch_003.pt", "best.pt"):
        a = torch.load(tmp_path / "ref" / name, weights_only=True)
        b = torch.load(tmp_path / "cut" / name, weights_only=True)
        assert a["actors"].keys() == b["actors"].keys()
        assert all(torch.equal(a["actors"][k], b["actors"][k]) for k in a["actors"]), name
    assert [r["val_acc"] for r in got["history"]] == [r["val_acc"] for r in ref["history"]]


def _help_text(cls, capsys, monkeypatch) -> str:
    """``--help`` of ``tyro.cli(cls)`` on a 400-column terminal (one line per option)."""
    monkeypatch.setenv("COLUMNS", "400")
    with pytest.raises(SystemExit):
        tyro.cli(cls, args=["--help"])
    return capsys.readouterr().out


def test_flowing_help_joins_a_field_docstrings_lines_and_leaves_parsing_alone(capsys, monkeypatch):
    """Found by a newcomer trial: tyro kept each docstring line break, so --help broke mid-sentence on a
    terminal narrower than the source. Paragraphs now flow; flags and defaults parse as before."""
    import tyro
    from conftest import load_algo

    Args = load_algo("happo_gnn").Args
    parsed_before = tyro.cli(Args, args=["--map", "3m", "8m", "--ally-dropout", "0", "0.5"])
    flowing_help(Args)
    assert flowing_help(Args) is Args  # a second call changes nothing
    parsed_after = tyro.cli(Args, args=["--map", "3m", "8m", "--ally-dropout", "0", "0.5"])
    assert parsed_after == parsed_before and parsed_after.ally_dropout == (0.0, 0.5)
    assert tyro.cli(Args, args=[]) == Args()
    out = _help_text(Args, capsys, monkeypatch)
    assert "one value for every --map or one per map" in out  # the source breaks this line after "every"
    assert "(default: 0.0)" in out and "(default: True)" in out


@dataclasses.dataclass
class _HelpBase:
    shared: int = 1
    """a base field whose docstring is wrapped
    at the source's width"""


@dataclasses.dataclass
class _HelpChild(_HelpBase):
    own: int = 2
    """a field of the subclass, also wrapped
    at the source's width"""


def test_flowing_help_flows_inherited_fields_too(capsys, monkeypatch):
    """Found in review: only the class's own body was read, so the docstrings of fields inherited from a
    dataclass base (learning_curves.py's and harl_side_by_side.py's SupervisionArgs) kept their breaks."""
    import tyro

    assert flowing_help(_HelpChild) is _HelpChild
    assert tyro.cli(_HelpChild, args=["--shared", "3"]) == _HelpChild(shared=3, own=2)
    out = _help_text(_HelpChild, capsys, monkeypatch)
    assert "a base field whose docstring is wrapped at the source's width" in out
    assert "a field of the subclass, also wrapped at the source's width" in out


def test_a_run_folder_or_its_resume_state_given_as_a_checkpoint_names_the_checkpoints_there(tmp_path):
    # found in a newcomer trial: --init-from <run folder> / <run>/resume.pt said what was wrong, not what to give
    from models import read_checkpoint

    save_resume(tmp_path / "resume.pt", {"args": {}})
    (tmp_path / "happo_gnn.pt").write_bytes(b"x")
    (tmp_path / "happo_gnn_best.pt").write_bytes(b"x")
    with pytest.raises(
        ValueError, match=r"is a directory, not a checkpoint file \(its checkpoints: happo_gnn.pt, happo_gnn_best.pt\)$"
    ):
        read_checkpoint(str(tmp_path))
    with pytest.raises(
        ValueError,
        match=r"found 'sc2_envs.resume/\d+'.*the run's model checkpoints beside it: happo_gnn.pt, happo_gnn_best.pt$",
    ):
        read_checkpoint(str(tmp_path / "resume.pt"))


def test_a_chain_of_fine_tunes_is_named_with_each_start_and_its_training(tmp_path, monkeypatch):
    from models import ancestors, ancestry_text, lineage_after

    monkeypatch.chdir(tmp_path)
    for name in ("a.pt", "b.pt", "c.pt"):
        (tmp_path / name).write_bytes(name.encode())  # lineage_after records each file's digest
    a = {"global_step": 102400, "args": {"init_from": ""}, "config": {"map_name": "3m", "train_maps": ["3m", "8m"]}}
    assert ancestors(a) == []
    (entry,) = lineage_after("a.pt", a)
    assert entry["path"] == "a.pt" and entry["resolved"] == str(tmp_path / "a.pt") and entry["global_step"] == 102400
    assert entry["training"] == "102,400 env steps" and entry["maps"] == ["3m", "8m"] and len(entry["sha256"]) == 64
    b = {
        "global_step": 20480,
        "args": {"init_from": "a.pt"},
        "config": {"map_name": "3m"},
        "lineage": lineage_after("a.pt", a),
    }
    c = {
        "global_step": 10240,
        "args": {"init_from": "b.pt"},
        "config": {"map_name": "3m"},
        "lineage": lineage_after("b.pt", b),
    }
    assert [e["path"] for e in c["lineage"]] == ["a.pt", "b.pt"]
    want = "b.pt (20,480 env steps on 3m), itself fine-tuned from a.pt (102,400 env steps on 3m+8m)"
    assert ancestry_text(ancestors(c)) == want
    assert start_lines(["3m"], [0.0], "c.pt", c) == [
        f"initial weights: c.pt (trained 10,240 env steps, itself fine-tuned from {want}, whose steps are not included; "
        "this run's env steps count from 0, with fresh optimisers)"
    ]
    # --resume: the run's saved record names the chain (found in a newcomer trial: only the nearest start was named)
    assert start_lines(["3m"], [0.0], "c.pt", None, lineage_after("c.pt", c)) == [
        f"initial weights: c.pt (trained 10,240 env steps, itself fine-tuned from {want}, whose steps are not included; "
        "the run's starting point; not reloaded on --resume)"
    ]
    # a start whose file was overwritten after it was recorded (e.g. its run was resumed) says so
    (tmp_path / "b.pt").write_bytes(b"other weights")
    assert ancestry_text(ancestors(c)).startswith("b.pt (20,480 env steps on 3m; the file has changed since)")
    # the script and seed that trained each start (checkpoints written from 2026-12-05 on record the script)
    (tmp_path / "b.pt").write_bytes(b"b.pt")
    b2 = {**b, "algorithm": "hatrpo_gnn", "args": {"init_from": "a.pt", "seed": 7}}
    a2 = {**a, "algorithm": "happo_gnn", "args": {"seed": 1}}
    (e_a,) = lineage_after("a.pt", a2)
    assert (e_a["algorithm"], e_a["seed"]) == ("happo_gnn", 1)
    b2["lineage"] = [e_a]
    c2 = {**c, "lineage": lineage_after("b.pt", b2)}
    who = (
        "b.pt (20,480 env steps on 3m, hatrpo_gnn seed 7), "
        "itself fine-tuned from a.pt (102,400 env steps on 3m+8m, happo_gnn seed 1)"
    )
    assert ancestry_text(ancestors(c2)) == who
    assert start_lines(["3m"], [0.0], "b.pt", b2)[0].startswith(
        "initial weights: b.pt (trained 20,480 env steps, hatrpo_gnn seed 7, itself fine-tuned from a.pt (102,400"
    )
    assert start_lines(["3m"], [0.0], "b.pt", None, lineage_after("b.pt", b2))[0].startswith(
        "initial weights: b.pt (trained 20,480 env steps, hatrpo_gnn seed 7, itself"
    )
    # a checkpoint written before the chain was recorded: its nearest start only, amount unknown
    old = {"global_step": 10240, "args": {"init_from": "b.pt"}}
    assert ancestors(old) == [{"path": "b.pt", "training": None}] and ancestry_text(ancestors(old)) == "b.pt"
    assert [e["path"] for e in lineage_after("c.pt", old)] == ["b.pt", "c.pt"]


def test_start_line_of_a_fine_tuned_starting_checkpoint_names_its_own_start():
    """A fine-tune's ``global_step`` counts its own env steps only: the start-up line says where it began."""
    plain = {"global_step": 409600, "args": {"init_from": ""}}
    tuned = {"global_step": 230400, "args": {"init_from": "checkpoints/transfer_budget/3s5z_seed1_gnn.pt"}}
    assert start_lines(["3s5z"], [0.0], "a.pt", plain) == [
        "initial weights: a.pt (trained 409,600 env steps; this run's env steps count from 0, with fresh optimisers)"
    ]
    assert start_lines(["3s5z"], [0.0], "b.pt", tuned) == [
        "initial weights: b.pt (trained 230,400 env steps, itself fine-tuned from "
        "checkpoints/transfer_budget/3s5z_seed1_gnn.pt, whose steps are not included; this run's env steps count "
        "from 0, with fresh optimisers)"
    ]
    # found in a newcomer trial: a fine-tune of a dropout-trained checkpoint silently trained without it
    dropped = {
        "global_step": 691200,
        "args": {"init_from": "", "ally_dropout": [0.0, 0.9, 0.0]},
        "config": {"map_name": "2s3z", "train_maps": ["2s3z", "3s5z", "1c3s5z"]},
    }
    assert start_lines(["2s3z", "3s5z", "1c3s5z"], [0.0, 0.0, 0.0], "c.pt", dropped)[1] == (
        "the starting checkpoint was trained with ally dropout 2s3z 0, 3s5z 0.9, 1c3s5z 0; this run: none"
    )
    one_map = {"global_step": 230400, "args": {"ally_dropout": [0.9]}, "config": {"map_name": "3s5z"}}
    assert len(start_lines(["2s3z", "3s5z"], [0.0, 0.9], "d.pt", one_map)) == 2  # 3s5z keeps its 0.9: no line
    assert start_lines(["2s3z", "3s5z"], [0.0, 0.5], "d.pt", one_map)[2] == (
        "the starting checkpoint was trained with ally dropout 3s5z 0.9; this run: 2s3z 0, 3s5z 0.5"
    )
    assert len(start_lines(["2s3z", "3s5z", "1c3s5z"], [0.0, 0.9, 0.0], "c.pt", dropped)) == 2  # dropout + weights
    assert start_lines(["3s5z"], [0.5], "", None) == [
        "ally dropout (training episodes that start with one ally removed): 3s5z 0.5"
    ]


def test_a_behaviour_cloning_checkpoint_is_reported_in_epochs_not_env_steps():
    """Found by a review: bc_reweight saved the epoch as ``global_step``, so ``--init-from`` and
    ``eval_transfer`` reported a BC checkpoint's epochs as env steps (files written before the fix too)."""
    from models import env_steps, training_amount

    for old_or_new in (3, 0):  # global_step: the epoch (before the fix) or 0
        bc = {"global_step": old_or_new, "args": {"init_from": ""}, "bc": {"epoch": 3}}
        assert env_steps(bc) == 0
        assert start_lines(["3m"], [0.0], "bc.pt", bc) == [
            "initial weights: bc.pt (trained 3 epochs of behaviour cloning on replays, no env steps; this run's env "
            "steps count from 0, with fresh optimisers)"
        ]
    assert training_amount({"global_step": 1, "bc": {"epoch": 1}}) == "1 epoch of behaviour cloning on replays, no env steps"
    assert env_steps({"global_step": 7}) == 7 and training_amount({"global_step": 7}) == "7 env steps"
    assert training_amount({"bc": None}) == "behaviour cloning on replays (epochs not recorded), no env steps"
    averaged = {"bc": {"epoch": 2}, "averaged_from": ["epoch_002.pt", "epoch_003.pt"]}
    assert training_amount(averaged) == "behaviour cloning on replays, the average of 2 checkpoints, no env steps"


@dataclasses.dataclass
class _HelpLiterals:
    plain: list[str] = dataclasses.field(default_factory=list)
    """the script's ``--pass-rows`` and ``a b``"""
    odd: tuple[int, ...] = ()
    """a literal holding a backtick, ``a`b``, and a fence, ```x```"""
    appended: tyro.conf.UseAppendAction[list[str]] = dataclasses.field(default_factory=list)
    """given once per value"""


def test_flowing_help_literals_and_empty_defaults(capsys, monkeypatch):
    """Found in review: every double-backtick pair became a single backtick, so ``a`b`` read `a`b` and a
    fence lost a backtick; and "(default: empty)" replaced tyro's "(repeatable)" of an append flag."""
    flowing_help(_HelpLiterals)
    assert tyro.cli(_HelpLiterals, args=["--appended", "x", "--appended", "y", "--odd"]) == _HelpLiterals(appended=["x", "y"])
    out = _help_text(_HelpLiterals, capsys, monkeypatch)
    assert "the script's `--pass-rows` and `a b` (default: empty)" in out
    assert "a literal holding a backtick, ``a`b``, and a fence, ```x``` (default: empty)" in out
    assert "given once per value (repeatable)" in out


def test_env_shares_keep_apart_iterations_with_a_first_kernel_call():
    """Found in a newcomer trial: the auto-reset's kernel first ran in iteration 2 (86 % env time) and
    was averaged in while the line said the compile was excluded. Any iteration in which a kernel runs
    for the first time is now kept apart, as is the process's first."""
    from sc2_envs.sim.runtime import first_use

    shares, shown = EnvShares(), []
    for share, first_kernel in ((0.12, None), (0.86, "test-only kernel a"), (0.02, None), (0.04, None)):
        shares.start()
        if first_kernel is not None:  # a kernel's first call (compile or cache load) in this iteration
            assert first_kernel not in first_use._first_calls_done
            first_use.first_call(first_kernel, lambda: None)
        shown.append(shares.add(share))
    assert (shares.share_n, shares.apart_n, shares.apart_share) == (2, 2, 0.86)
    # a newcomer saw env=86% in iteration 2 next to an end line of 14 %: the progress line says why
    assert shown == ["12%", "86% (incl. a kernel's first call)", "2%", "4%"]
    assert shares.note().startswith(", env 3% of the iteration time (the first iteration and any with"), shares.note()


def test_env_shares_keep_apart_iterations_played_during_a_background_compile(monkeypatch):
    """With ``kernel="auto"`` on first use the simulators play on the torch path while the numba step compiles
    in the background (``sim.runtime.warmup``): those iterations' env shares are not the numba path's."""
    compiling = iter([False, False, True, True, True, False, False, False])  # start / add of each iteration
    monkeypatch.setattr(progress, "_background_compile", lambda: next(compiling))
    shares = EnvShares()
    shown = []
    for share in (0.02, 0.30, 0.25, 0.03):
        shares.start()
        shown.append(shares.add(share))
    assert shown == ["2%", "30% (torch path while the kernel compiled in the background)",
                     "25% (torch path while the kernel compiled in the background)", "3%"]  # fmt: skip
    assert (shares.share_n, shares.apart_n) == (1, 3) and shares.share_sum == 0.03


def test_env_shares_add_without_start():
    """Found in review: ``add`` before any ``start`` raised AttributeError after the background-compile change."""
    shares = EnvShares()
    assert shares.add(0.5).startswith("50%") and shares.apart_n == 1
