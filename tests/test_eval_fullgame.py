"""algos/eval_fullgame.py: mini-AlphaStar's evaluation table for full-game checkpoints and baselines."""

from __future__ import annotations

import csv
import os
import re
import subprocess
import sys

import pytest
import torch
from conftest import REPO, load_algo

from sc2_envs.full_game._deps import MissingDependencyError, require

try:
    require("pysc2_evolved.lib.actions", "the full-game evaluation tests")
except MissingDependencyError as e:
    pytest.skip(f"the full-game extra is not usable here: {e}", allow_module_level=True)

from models.alphastar import AlphaStarConfig, AlphaStarPolicy, save_alphastar
from sc2_envs.full_game import spec
from sc2_envs.training.fullgame_actor import GameRecord

ev = load_algo("eval_fullgame")
from sc2_envs.training import fullgame_evaluation as fe  # noqa: E402


def _checkpoint(path, replay=False):
    torch.manual_seed(0)
    cfg = AlphaStarConfig.tiny(max_entities=64)
    if replay:
        cfg = AlphaStarConfig.replay(cfg)
    save_alphastar(str(path), AlphaStarPolicy(cfg), {"bc": {"epoch": 1}})
    return str(path)


def test_smoke_run_prints_the_configuration_and_one_row_per_policy(tmp_path):
    ckpt = _checkpoint(tmp_path / "bc.pt", replay=True)
    out = tmp_path / "table.csv"
    cmd = [
        sys.executable, str(REPO / "algos" / "eval_fullgame.py"), "--checkpoints", ckpt, "--policy", "random", "scripted",
        "--games", "2", "--num-envs", "2", "--game-steps-per-episode", "160", "--seed", "3", "--csv", str(out),
    ]  # fmt: skip
    env = dict(os.environ, PYTHONPATH=str(REPO), OMP_NUM_THREADS="1")
    res = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    lines = res.stdout.splitlines()
    assert lines[0] == "eval_fullgame configuration:" and "  games: 2" in lines and "  seed: 3" in lines
    assert "  step_mul: 0 -> the baselines 8; each checkpoint its own (below)" in lines and f"  csv: {out}" in lines
    table = [ln for ln in lines if ln.startswith("| ") and not ln.startswith("| policy")]
    assert [ln.split(" | ")[0][2:] for ln in table] == ["random", "scripted", ckpt]
    rows = list(csv.DictReader(open(out)))
    assert [r["policy"] for r in rows] == ["random", "scripted", ckpt]
    for r in rows:
        assert r["games"] == "2" and r["ties"] == "2" and float(r["truncated_share"]) == 1.0  # 160 loops: no game ends
        assert 0.0 <= float(r["idle_share"]) <= 1.0 and float(r["minerals_collected"]) > 0
        assert abs(float(r["game_length_min"]) - 160 / 1344) < 1e-9
        assert (float(r["error_share"]) > 0) == bool(r["refused_top"])  # the kinds behind the errors column
    assert [ln.split(" (share")[0] for ln in lines if ln.startswith("refused commands of ")] == [
        f"refused commands of {p}" for p in ("random", "scripted", ckpt)
    ]


def test_summary_has_the_wilson_interval_and_army_only_of_games_still_running():
    recs = [
        GameRecord(1.0, False, 8000, 1000, 100, 10, {5.0: 6.0}, {"minerals_collected": 3000.0}),
        GameRecord(-1.0, False, 5000, 625, 625, 0, {}, {"minerals_collected": 1000.0}),
        GameRecord(0.0, True, 18000, 2250, 0, 0, {5.0: 10.0, 8.0: 20.0}, {"minerals_collected": 5000.0}),
        GameRecord(1.0, False, 9000, 1125, 25, 0, {5.0: 8.0, 8.0: 16.0}, {"minerals_collected": 4000.0}),
    ]
    row = fe.summarise("p", recs)
    assert (row.games, row.wins, row.losses, row.ties) == (4, 2, 1, 1)
    assert row.win_rate == 0.5 and (round(row.ci_low, 3), round(row.ci_high, 3)) == (0.150, 0.850)
    assert (row.army_supply_5min, row.army_supply_5min_n) == (8.0, 3)
    assert (row.army_supply_8min, row.army_supply_8min_n) == (18.0, 2)
    assert row.idle_share == 750 / 5000 and row.minerals_collected == 3250.0
    assert row.enemy_units_killed is None and "n/a" in fe.format_row(row)
    # the printed row says how the games not won ended (a tie at the limit or a loss), as the CSV does
    assert fe.format_row(row).startswith("| p | 4 | 2 / 1 / 1 | 0.500 [0.150, 0.850] |")
    assert fe.HEADER.count("|") == fe.format_row(row).count("|")


@pytest.mark.parametrize(
    "kw, message",
    [
        ({}, "nothing to evaluate"),
        ({"policy": ("greedy",)}, "--policy"),
        ({"checkpoints": ("/no/such.pt",)}, "no such checkpoint"),
        ({"policy": ("random",), "games": 0}, "--games 0"),
        ({"policy": ("random",), "backend": "pysc2"}, "--backend"),
        ({"policy": ("scripted",), "backend": "sc2"}, "--enemy-start"),
        ({"policy": ("random",), "seed": -3}, r"^--seed -3: expected an integer in \[0, "),
        ({"policy": ("random",), "torch_threads": -2}, r"^--torch-threads -2: expected an integer >= 0"),
        ({"policy": ("random",), "noop_prob": 1.5}, r"^--noop-prob 1.5: expected a probability in \[0, 1\]"),
        ({"policy": ("random",), "noop_prob": float("nan")}, r"^--noop-prob nan: expected a probability"),
        ({"policy": ("random",), "temperature": 0.0}, r"^--temperature 0.0: expected a real number in \[1.18e-38, 3.4e\+38\]"),
        ({"policy": ("random",), "temperature": float("inf")}, r"^--temperature inf: expected a real number in \["),
        # found by a tester: these passed, then ran 2**40 loops in one step or overflowed int64 mid-game
        (
            {"policy": ("random",), "step_mul": 2**40},
            r"^--step-mul 1099511627776: expected game loops per decision <= 1048576",
        ),
        (
            {"policy": ("random",), "game_steps_per_episode": 10**20},
            r"^--game-steps-per-episode 10{20}: expected game loops in \[0, ",
        ),
        # found by a tester: the lite vector env refused it after the configuration, a ValueError traceback
        (
            {"policy": ("random",), "games": 70000, "num_envs": 70000},
            r"^--num-envs 70000: expected games at once <= 65536 \(the lite engine's limit\)",
        ),
    ],
)
def test_bad_command_lines_stop_before_any_game(kw, message):
    with pytest.raises(ValueError, match=message):
        ev.check_args(ev.Args(**kw))


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"games": 0}, "games=0; expected an int >= 1"),  # was "num_envs=0" from the vector env
        ({"games": 1.5}, "games=1.5; expected an int >= 1"),  # played 2 games
        ({"num_envs": 0}, "num_envs=0; expected an int >= 1"),
        ({"seed": -1}, "seed=-1; expected an int in [0, 9223372036854775807]"),  # was numpy's unnamed error
        ({"noop_prob": 2.0}, "noop_prob=2.0; expected a probability in [0, 1]"),  # was played as 1
    ],
)
def test_evaluate_fullgame_names_a_bad_argument_before_any_game(kw, message):
    """found by a tester: the library call (bc_reweight.py's selection, eval_fullgame.py) took these unchecked."""
    args = {"games": 1, "seed": 0, "num_envs": 1, "noop_prob": 0.5, **kw}
    with pytest.raises(ValueError, match="^" + re.escape(message)):
        fe.evaluate_fullgame("random", args.pop("games"), args.pop("seed"), game_steps_per_episode=16, **args)


def test_a_mistyped_baseline_gets_the_did_you_mean_the_training_scripts_give_for_maps():
    with pytest.raises(ValueError) as err:
        ev.check_args(ev.Args(policy=("random", "scriptd")))
    assert str(err.value) == (
        "--policy random scriptd: unknown ['scriptd']; 'scriptd' (did you mean 'scripted'?); "
        "expected names from ['random', 'scripted']"
    )


def test_a_baseline_named_twice_is_refused_not_evaluated_twice():
    with pytest.raises(ValueError) as err:
        ev.check_args(ev.Args(policy=("random", "scripted", "random")))
    assert str(err.value) == "--policy random scripted random: 'random' given twice; expected distinct baselines"


def test_a_checkpoint_named_twice_is_refused_before_it_is_read(tmp_path):
    path = str(tmp_path / "a.pt")
    with pytest.raises(ValueError) as err:
        ev.check_args(ev.Args(checkpoints=(path, path)))
    assert str(err.value) == f"--checkpoints {path} {path}: {path!r} given twice; expected distinct checkpoint files"
    other = str(tmp_path / "." / "a.pt")  # another spelling of the same file
    with pytest.raises(ValueError, match=re.escape(f"{other!r} given twice; expected distinct checkpoint files")):
        ev.check_args(ev.Args(checkpoints=(path, other)))


@pytest.mark.parametrize("flag, value", [("policy", "random"), ("checkpoints", "a.pt")])
def test_one_string_for_policy_or_checkpoints_is_refused_not_read_letter_by_letter(flag, value):
    """``Args(policy="random")`` in Python was read as the baselines 'r', 'a', 'n', ..."""
    with pytest.raises(ValueError) as err:
        ev.check_args(ev.Args(**{flag: value}))
    assert str(err.value) == f"--{flag} {value!r}: expected a sequence of names such as ({value!r},), not one string"


def test_a_repeated_mistyped_baseline_gets_one_suggestion():
    with pytest.raises(ValueError) as err:
        ev.check_args(ev.Args(policy=("scriptd", "scriptd")))
    assert str(err.value).count("did you mean") == 1


def test_a_bad_flag_ends_the_script_with_one_usage_error_line_and_exit_status_2(tmp_path, capsys):
    """As argparse, tyro and the other algos/ scripts (``cli.cli_error``): ``<prog>: error: <message>``, status 2;
    the script once exited 1 with a different style."""
    cmd = [sys.executable, str(REPO / "algos" / "eval_fullgame.py"), "--policy", "random", "--games", "0"]
    env = dict(os.environ, PYTHONPATH=str(REPO), OMP_NUM_THREADS="1")
    res = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    assert res.returncode == 2 and res.stdout == "", (res.returncode, res.stdout[-2000:])
    assert res.stderr == "eval_fullgame.py: error: --games 0: expected an integer >= 1\n"
    with pytest.raises(SystemExit) as stop:  # main() itself, as a caller in Python sees it
        ev.main(ev.Args(policy=("greedy",), csv=str(tmp_path / "x.csv")))
    assert stop.value.code == 2
    assert re.fullmatch(
        r"\S+: error: --policy greedy: unknown \['greedy'\]; expected names from \[.*\]\n", capsys.readouterr().err
    )
    assert not (tmp_path / "x.csv").exists()


def test_a_file_that_is_not_an_alphastar_checkpoint_is_refused(tmp_path):
    p = tmp_path / "x.pt"
    torch.save({"format": "something else"}, p)
    with pytest.raises(ValueError, match="not a sc2_envs.alphastar/1 checkpoint"):
        ev.check_args(ev.Args(checkpoints=(str(p),)))
    (tmp_path / "t.txt").write_text("hello")
    with pytest.raises(ValueError, match="not a torch checkpoint"):
        ev.check_args(ev.Args(checkpoints=(str(tmp_path / "t.txt"),)))


def test_a_folder_or_a_smac_checkpoint_is_refused_saying_what_it_is(tmp_path):
    """found by a tester: a run folder was "no such checkpoint file"; a SMAC checkpoint did not say what it was."""
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "best.pt").write_bytes(b"")
    folder = str(tmp_path / "run")
    with pytest.raises(ValueError, match=re.escape(f"--checkpoints {folder!r} is a folder (it holds best.pt); expected")):
        ev.check_args(ev.Args(checkpoints=(folder,)))
    smac = str(REPO / "checkpoints" / "2s3z_gnn.pt")
    with pytest.raises(ValueError, match=re.escape("this one is 'sc2_envs.class_actor_critic/1' (a SMAC-map checkpoint")):
        ev.check_args(ev.Args(checkpoints=(smac,)))


def test_bc_select_ranks_and_averages_full_game_checkpoints(tmp_path):
    sel = load_algo("bc_select")
    a = _checkpoint(tmp_path / "epoch_001.pt", replay=True)
    torch.manual_seed(1)
    save_alphastar(
        str(tmp_path / "epoch_002.pt"), AlphaStarPolicy(AlphaStarConfig.replay(AlphaStarConfig.tiny(max_entities=64)))
    )
    b = str(tmp_path / "epoch_002.pt")
    sel.check_eval(sel.Eval(checkpoints=[a, b]))  # full-game checkpoints pass the SMAC checks
    with pytest.raises(SystemExit, match="--map is for SMAC checkpoints"):
        sel.check_eval(sel.Eval(checkpoints=[a], map="3m"))
    r = sel.evaluate_fullgame_checkpoint(a, episodes=2, num_envs=2, seed=0, game_steps_per_episode=80)
    assert (r["episodes"], r["wins"], r["win_ci"][0]) == (2, 0, 0.0) and 0 <= r["idle_share"] <= 1
    assert r["mean_length"] == 10 and r["fullgame"]["ties"] == 2
    from sc2_envs.training.evaluation import behaviour_key, format_result

    assert behaviour_key(r) == (0.0, -r["idle_share"], r["damage_per_episode"]) and format_result("a", r).startswith("a: win")
    from models import average_checkpoints

    avg = average_checkpoints([a, b], str(tmp_path / "avg.pt"))
    assert avg["averaged_from"] == [a, b]
    from models.alphastar import load_alphastar

    model, ckpt = load_alphastar(str(tmp_path / "avg.pt"))  # weights_only=True inside
    assert ckpt["format"] == "sc2_envs.alphastar/1" and model.cfg.max_entities == 64


def test_the_trained_step_mul_is_the_bc_datasets_stride_or_the_rl_step_mul():
    assert fe.trained_step_mul({"bc": {"epoch": 3, "step_mul": 32}}) == 32
    assert fe.trained_step_mul({"rl": {"args": {"step_mul": 16}}}) == 16
    assert fe.trained_step_mul({"bc": {"epoch": 1}}) is None and fe.trained_step_mul({}) is None


def _edited(tmp_path, name, edit):
    """A valid tiny checkpoint with ``edit(ckpt dict)`` applied, saved as ``name``."""
    ckpt = torch.load(_checkpoint(tmp_path / "base.pt"), weights_only=True)
    edit(ckpt)
    torch.save(ckpt, tmp_path / name)
    return str(tmp_path / name)


@pytest.mark.parametrize("value", [0, -5, 2.7, True, "32", "abc", float("nan"), [32], 10**12])
@pytest.mark.parametrize("record", ["bc", "rl.args"])
def test_an_invalid_recorded_step_mul_is_refused_naming_the_checkpoint_and_value_before_any_game(tmp_path, record, value):
    def edit(c):
        if record == "bc":
            c["bc"]["step_mul"] = value
        else:
            c.pop("bc")
            c["rl"] = {"args": {"step_mul": value}}

    path = _edited(tmp_path, "odd.pt", edit)
    with pytest.raises(ValueError, match=f"its {record} record's step_mul is {re.escape(repr(value))}; expected"):
        fe.trained_step_mul(torch.load(path, weights_only=True), path)
    with pytest.raises(ValueError, match=f"^--checkpoints {re.escape(path)}: its {record} record's step_mul"):
        ev.check_args(ev.Args(checkpoints=(path,)))


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda c: c.update(bc=[1]), "its bc record is a list"),
        (lambda c: c.update(rl="x"), "its rl record is a str"),
        (lambda c: c.update(rl={"args": 5}), "its rl.args record is a int"),
        (lambda c: c["bc"].update(args=[1]), "its bc.args record is a list"),
        (lambda c: c.pop("model"), "its 'model' entry is missing"),
        (lambda c: c.update(config=None), "its 'config' entry is a NoneType"),
        (lambda c: c["config"].update(hidden="wide"), "its config and model do not make an AlphaStarPolicy"),
        (lambda c: c["model"].popitem(), "its config and model do not make an AlphaStarPolicy"),
    ],
)
def test_a_checkpoint_with_bad_records_config_or_model_is_refused_in_check_args(tmp_path, edit, message):
    path = _edited(tmp_path, "odd.pt", edit)
    with pytest.raises(ValueError, match=f"^--checkpoints {re.escape(path)}: {re.escape(message)}"):
        ev.check_args(ev.Args(checkpoints=(path,)))


def test_a_csv_that_cannot_be_written_is_refused_before_any_game(tmp_path):
    with pytest.raises(ValueError, match="is a folder; expected a file"):
        ev.check_args(ev.Args(policy=("random",), csv=str(tmp_path)))
    (tmp_path / "f").write_text("x")
    with pytest.raises(ValueError, match="is a file; expected a folder"):
        ev.check_args(ev.Args(policy=("random",), csv=str(tmp_path / "f" / "sub" / "rows.csv")))
    ev.check_args(ev.Args(policy=("random",), csv=str(tmp_path / "new" / "rows.csv")))  # a new folder is fine


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs Linux's /proc, where no file can be created")
def test_a_csv_in_a_folder_that_takes_no_new_file_is_refused_before_any_game():
    """found by a tester: --csv /proc/rows.csv passed (os.access says root may write anywhere), the games ran, and
    the CSV failed at the end; a file is now created (and removed) in the folder first."""
    with pytest.raises(ValueError, match=re.escape("--csv '/proc/rows.csv': a file cannot be created in '/proc' (")):
        ev.check_args(ev.Args(policy=("random",), csv="/proc/rows.csv"))


@pytest.mark.parametrize("device", ["tpu", "cuda:99"])
def test_a_device_torch_cannot_use_is_refused_before_any_game(device):
    with pytest.raises(ValueError, match=f"^--device '{device}': torch cannot use it"):
        ev.check_args(ev.Args(policy=("random",), device=device))


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"policy": ("scripted",), "noop_prob": 0.1}, "--noop-prob 0.1: only the random baseline reads it"),
        ({"policy": ("random",), "enemy_start": (10, 10)}, "--enemy-start 10 10: only the scripted baseline reads it"),
        (  # found by a tester: on the lite engine it moved the scripted baseline's attack target off the enemy base
            {"policy": ("scripted",), "enemy_start": (5, 5)},
            "--enemy-start 5 5: only the scripted baseline on --backend sc2 reads it",
        ),
        ({"policy": ("random",), "greedy": True}, "--greedy: only checkpoints read it"),
        ({"policy": ("random",), "mask_action_type": False}, "--no-mask-action-type: only checkpoints read it"),
        ({"policy": ("random",), "temperature": 0.5}, "--temperature 0.5: only checkpoints read it"),
        (
            {"policy": ("scripted",), "backend": "sc2", "enemy_start": (10, 10), "omniscient": True},
            "--omniscient: only the lite engine reads it",
        ),
    ],
)
def test_a_flag_no_evaluated_policy_reads_is_refused_not_ignored(kw, message):
    """found by a tester: --noop-prob without the random baseline, --greedy without a checkpoint and --omniscient on
    the real game were ignored, silently."""
    with pytest.raises(ValueError, match="^" + re.escape(message)):
        ev.check_args(ev.Args(**kw))


def test_the_configuration_screen_gives_what_a_default_resolves_to_and_which_options_go_unused(tmp_path):
    """found in a review: the screen printed ``step_mul: 0`` and ``csv:`` (empty) for the values actually used,
    and the random baseline's --noop-prob on a checkpoint-only run as if it applied."""
    out = tmp_path / "rows.csv"
    only_ckpt = ev.Args(checkpoints=("a.pt",))
    assert ev.config_note(only_ckpt, "step_mul", out) == " -> each checkpoint its own (below)"
    assert ev.config_note(only_ckpt, "csv", out) == f" -> {out} (the default)"
    assert ev.config_note(only_ckpt, "noop_prob", out) == " (unused: only the random baseline reads it)"
    assert ev.config_note(only_ckpt, "enemy_start", out) == " (unused: only the scripted baseline reads it)"
    assert ev.config_note(only_ckpt, "greedy", out) == ev.config_note(only_ckpt, "games", out) == ""
    baselines = ev.Args(policy=("random", "scripted"), backend="sc2", csv=str(out))
    assert ev.config_note(baselines, "step_mul", out) == " -> the baselines 8"
    assert ev.config_note(baselines, "csv", out) == "" and ev.config_note(baselines, "noop_prob", out) == ""
    assert ev.config_note(baselines, "mask_action_type", out) == " (unused: only checkpoints read it)"
    assert ev.config_note(baselines, "omniscient", out) == " (unused: only the lite engine reads it)"
    assert ev.config_note(ev.Args(step_mul=16, checkpoints=("a.pt",)), "step_mul", out) == ""
    # argmax play samples nothing: a temperature beside --greedy would be ignored
    greedy = ev.Args(checkpoints=("a.pt",), greedy=True)
    assert ev.config_note(greedy, "temperature", out) == " (unused: only sampled play reads it, not --greedy's argmax)"
    assert ev.config_note(only_ckpt, "temperature", out) == ""


def test_an_enemy_start_off_the_raw_grid_is_refused_in_check_args():
    with pytest.raises(ValueError, match=re.escape("--enemy-start -5 999: expected a cell of the 64x64 raw grid")):
        ev.check_args(ev.Args(policy=("scripted",), backend="sc2", enemy_start=(-5, 999)))


def test_a_checkpoint_plays_at_its_trained_step_mul_unless_step_mul_is_given(tmp_path, capsys):
    cfg = AlphaStarConfig.replay(AlphaStarConfig.tiny(max_entities=64))
    path = str(tmp_path / "k32.pt")
    save_alphastar(path, AlphaStarPolicy(cfg), {"bc": {"epoch": 1, "step_mul": 32}})
    own = fe.evaluate_fullgame(path, 1, 0, num_envs=1, game_steps_per_episode=64)
    assert (own.step_mul, own.mean_steps) == (32, 2)
    given = fe.evaluate_fullgame(path, 1, 0, num_envs=1, game_steps_per_episode=64, step_mul=8)
    assert (given.step_mul, given.mean_steps) == (8, 8)
    assert fe.evaluate_fullgame("random", 1, 0, num_envs=1, game_steps_per_episode=64).step_mul == 8
    with pytest.raises(ValueError, match="step_mul=-1"):
        fe.evaluate_fullgame(path, 1, 0, step_mul=-1)
    ev.main(ev.Args(checkpoints=(path,), games=1, num_envs=1, game_steps_per_episode=32, csv=str(tmp_path / "a.csv")))
    assert f"  {path}: decides every 32 game loops (the step_mul it was trained at)" in capsys.readouterr().out
    ev.main(
        ev.Args(checkpoints=(path,), games=1, num_envs=1, game_steps_per_episode=32, step_mul=8, csv=str(tmp_path / "b.csv"))
    )
    assert "decides every 8 game loops (--step-mul; it was trained to decide every 32)" in capsys.readouterr().out
    with pytest.raises(ValueError, match="--step-mul -8: expected game loops per decision >= 1"):
        ev.check_args(ev.Args(policy=("random",), step_mul=-8))


def test_the_selection_seed_of_a_behaviour_selected_checkpoint_is_read_from_its_bc_record(tmp_path):
    cfg = AlphaStarConfig.replay(AlphaStarConfig.tiny(max_entities=64))
    picked = {"bc": {"epoch": 3, "args": {"select_by": "behaviour", "eval_seed": 10_000}}}
    save_alphastar(str(tmp_path / "picked.pt"), AlphaStarPolicy(cfg), picked)
    save_alphastar(str(tmp_path / "by_acc.pt"), AlphaStarPolicy(cfg), {"bc": {"args": {"select_by": "val-acc"}}})
    assert ev.selection_seed(str(tmp_path / "picked.pt")) == 10_000
    assert ev.selection_seed(str(tmp_path / "by_acc.pt")) is None
    assert ev.selection_seed(_checkpoint(tmp_path / "rl.pt")) is None  # no selection record


def test_evaluating_on_the_selection_seed_warns_that_its_figures_are_biased_without_claiming_a_pick(tmp_path, capsys):
    cfg = AlphaStarConfig.replay(AlphaStarConfig.tiny(max_entities=64))
    path = str(tmp_path / "picked.pt")
    save_alphastar(path, AlphaStarPolicy(cfg), {"bc": {"args": {"select_by": "behaviour", "eval_seed": 5}}})
    common = {"checkpoints": (path,), "games": 1, "num_envs": 1, "game_steps_per_episode": 16}
    ev.main(ev.Args(**common, seed=5, csv=str(tmp_path / "a.csv")))
    out = capsys.readouterr().out
    # every epoch of a behaviour-selected run was evaluated on the seed, not only the one picked
    assert f"WARNING: {path} was evaluated for behaviour selection on seed 5: this seed's figures are not an unbiased" in out
    assert "was selected" not in out
    ev.main(ev.Args(**common, seed=6, csv=str(tmp_path / "b.csv")))
    assert "WARNING" not in capsys.readouterr().out


def test_the_row_names_the_refused_commands_behind_its_error_share():
    names = [f.name for f in spec.raw_functions()]
    pylon, probe = names.index("Build_Pylon_pt"), names.index("Train_Probe_quick")
    recs = [
        GameRecord(1.0, False, 8000, 100, 0, 6, refused={(pylon, 44): 4, (probe, 9): 2}),
        GameRecord(0.0, True, 18000, 100, 0, 1, refused={(pylon, 44): 1}),
    ]
    row = fe.summarise("p", recs)
    assert row.error_share == 7 / 200
    assert row.refused_top == "Build_Pylon_pt:CantBuildLocationInvalid=0.025; Train_Probe_quick:NotEnoughMinerals=0.010"
    assert fe.refused_kinds(recs, top=1) == [("Build_Pylon_pt:CantBuildLocationInvalid", 5 / 200)]


def test_played_games_record_each_refused_decision_by_command_and_result():
    from sc2_envs.lite.policy import RandomLegalPolicy
    from sc2_envs.training.fullgame_actor import make_vector_env, play_games

    env = make_vector_env("lite", 2, step_mul=8, game_steps_per_episode=1600, raw_resolution=64, minimap_resolution=64)
    policy = RandomLegalPolicy(env.engine.catalog, raw_resolution=64, noop_prob=0.5, seed=5)
    records = play_games(policy, env, 2, seed=5)
    env.close()
    assert sum(r.error_steps for r in records) > 0  # a random policy builds where the game refuses
    for r in records:
        assert sum(r.refused.values()) == r.error_steps
        assert all(code != spec.NO_ACTION_ERROR for _, code in r.refused)


def test_each_row_says_how_its_checkpoint_played_and_a_baseline_takes_no_sampling_option(tmp_path):
    """found by a tester: CSVs of different temperatures (or argmax) were told apart only by their file names,
    and the Python API played a baseline as always when given greedy or a temperature."""
    cfg = AlphaStarConfig.replay(AlphaStarConfig.tiny(max_entities=64))
    path = str(tmp_path / "k.pt")
    save_alphastar(path, AlphaStarPolicy(cfg), {"bc": {"epoch": 1, "step_mul": 32}})
    play = {
        kw.get("temperature", "argmax" if kw.get("greedy") else 1.0): fe.evaluate_fullgame(
            path, 1, 0, num_envs=1, game_steps_per_episode=64, **kw
        ).play
        for kw in ({}, {"temperature": 0.75}, {"greedy": True})
    }
    assert play == {1.0: "sample", 0.75: "sample at temperature 0.75", "argmax": "argmax"}
    assert fe.evaluate_fullgame("random", 1, 0, num_envs=1, game_steps_per_episode=64).play == ""
    for kw in ({"temperature": 0.5}, {"greedy": True}):
        with pytest.raises(ValueError, match="the random baseline samples no network"):
            fe.evaluate_fullgame("random", 1, 0, num_envs=1, game_steps_per_episode=64, **kw)
    with pytest.raises(ValueError, match="with greedy=True: the argmax samples nothing"):
        fe.evaluate_fullgame(path, 1, 0, greedy=True, temperature=0.5)
    # the command line plays the baselines beside a sampled or argmax checkpoint as they always play
    rows = ev.main(
        ev.Args(
            checkpoints=(path,),
            policy=("random",),
            games=1,
            num_envs=1,
            game_steps_per_episode=32,
            greedy=True,
            csv=str(tmp_path / "rows.csv"),
        )  # fmt: skip
    )
    assert [r.play for r in rows] == ["", "argmax"]
    assert [r["play"] for r in csv.DictReader(open(tmp_path / "rows.csv"))] == ["", "argmax"]
    # each row records what fixes its games: the evaluation seed and the games played at once
    assert [(r["eval_seed"], r["num_envs"]) for r in csv.DictReader(open(tmp_path / "rows.csv"))] == [("0", "1")] * 2
    row = fe.evaluate_fullgame("random", 2, 5, num_envs=8, game_steps_per_episode=32)
    assert (row.eval_seed, row.num_envs) == (5, 2)  # no more games at once than games


def test_the_library_refuses_an_enemy_start_on_the_lite_engine_too():
    # found by a reviewer: only the CLI refused it; make_actor gave the scripted expert another target than the
    # lite engine's enemy base
    from sc2_envs.training.fullgame_evaluation import make_actor

    with pytest.raises(ValueError, match=r"enemy_start=\(5, 5\) with backend='lite'"):
        make_actor("scripted", None, None, 2, backend="lite", enemy_start=(5, 5))
