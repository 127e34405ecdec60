"""algos/a3c_upgo.py on the full game (``--map Simple64``): the actor's unrolls, the learner's
teacher-forced recomputation, a short run from a supervised checkpoint, the real game and Ray.

The lite engine compiles its kernels on first use (numba, cached afterwards); the runs here allow
for that with generous start-up deadlines.
"""

from __future__ import annotations

import copy
import os
import subprocess
import sys

import numpy as np
import psutil
import pytest
import torch
from conftest import REPO, load_algo

from sc2_envs.full_game._deps import MissingDependencyError, require

try:
    require("pysc2_evolved.lib.actions", "the full-game training tests")
except MissingDependencyError as e:
    pytest.skip(f"the full-game extra is not usable here: {e}", allow_module_level=True)

from models.alphastar import AlphaStarConfig, AlphaStarPolicy, load_alphastar, save_alphastar  # noqa: E402
from models.alphastar_rl import OffPolicySettings  # noqa: E402
from sc2_envs.training.fullgame_actor import AlphaStarActor, make_vector_env  # noqa: E402
from sc2_envs.training.fullgame_rl import MINERALS, FullGameLearner, UnrollCollector, collate_unrolls  # noqa: E402

SCRIPT = REPO / "algos" / "a3c_upgo.py"
ENV = {"max_entities": 96, "raw_resolution": 16, "minimap_resolution": 16, "game_steps_per_episode": 80}


def _model(seed=0):
    torch.manual_seed(seed)
    return AlphaStarPolicy(AlphaStarConfig.tiny(max_entities=64))


def _sl_checkpoint(path) -> str:
    """A stand-in for a behaviour-cloning checkpoint (same format as bc_reweight.py's)."""
    save_alphastar(str(path), _model(), {"bc": {"epoch": 1}})
    return str(path)


def _unrolls(model, n, T=7, games=2, seed=3):
    env = make_vector_env("lite", games, **ENV)
    actor = AlphaStarActor(model, games, max_entities=96, max_selected=64, raw_resolution=16)
    collector = UnrollCollector(actor, env, seed=seed)
    out = []
    for _ in range(n):
        traj = collector.collect(T)
        traj.update(slot=0, gen=0, version=0)
        out.append(traj)
    return out


def test_learner_recomputes_the_actors_log_probs_and_the_teacher_keeps_its_memory_across_unrolls():
    model = _model()
    # 80 game loops = 10 decisions: the 3 unrolls of 7 steps cross two episode ends (and autoreset steps)
    trajs = _unrolls(model, 3)
    assert not np.concatenate([t["valid"] for t in trajs]).all() and any(t["episodes"] for t in trajs)
    assert any(t["first"][:, 1:].any() for t in trajs)  # an LSTM reset inside an unroll
    learner = FullGameLearner(model, copy.deepcopy(model), OffPolicySettings(kl_coef=1.0))
    for traj in trajs:  # in the actor's order, one unroll per batch: the teacher's state carries over
        _, logs = learner.loss(collate_unrolls([traj]))
        # same weights: every log-ratio is 0 (rho = 1) and the teacher, whose LSTM state the learner
        # carried from the previous unroll, equals the student started from the actor's state
        assert logs["losses/clipped_rho_mean"].item() == pytest.approx(1.0, abs=1e-4)
        assert logs["losses/kl_teacher"].item() < 1e-5


def test_the_teachers_memory_follows_each_actors_unrolls_within_and_across_batches():
    model = _model()
    a, b = _unrolls(model, 3), _unrolls(model, 2, seed=4)  # two actors (slots 0 and 1), in each actor's order
    for t in b:
        t["slot"] = 1
    assert all(not t["first"][:, 0].all() for t in a[1:] + b[1:])  # each later unroll continues a game
    learner = FullGameLearner(model, copy.deepcopy(model), OffPolicySettings(kl_coef=1.0))
    # --batch-unrolls 3 then 2: actor 0 has two unrolls in the first batch, and its third opens the second
    for batch in ([a[0], a[1], b[0]], [b[1], a[2]]):
        _, logs = learner.loss(collate_unrolls(batch))
        # same weights: the teacher equals the student only if each unroll's teacher starts from the state
        # it ended the same actor's previous unroll with (the student starts from the actor's own state)
        assert logs["losses/kl_teacher"].item() < 1e-5


def test_unroll_layout_and_collation():
    trajs = _unrolls(_model(), 2, T=4)
    t = trajs[0]
    assert t["inputs"]["entities"].shape[:3] == (2, 5, t["rows"]) and t["labels"]["action_type"].shape == (2, 4)
    assert t["behaviour_logp"].shape == (4, 2, 6) and t["reward"].shape == (4, 2) and t["at_mask"].shape == (2, 5, 564)
    assert t["first"][:, 0].all()  # the first unroll starts every game
    batch = collate_unrolls(trajs)
    assert batch["inputs"]["entities"].shape[0] == 4 and batch["reward"].shape == (4, 4)
    assert batch["state0"][0].shape[1] == 4 and batch["keys"] == [(0, 0, 2), (0, 0, 2)]


def _run(tmp_path, *extra, timeout=900):
    ckpt = _sl_checkpoint(tmp_path / "sl.pt")
    cmd = [
        sys.executable, str(SCRIPT), "--map", "Simple64", "--init", ckpt, "--teacher", ckpt, "--kl-coef", "0.02",
        "--num-actors", "2", "--envs-per-actor", "2", "--unroll-length", "8", "--batch-unrolls", "2",
        "--max-entities", "96", "--game-steps-per-episode", "80", "--total-timesteps", "160",
        "--startup-timeout", "600", "--stall-timeout", "600", "--run-dir", str(tmp_path / "runs"),
        "--print-interval-s", "1", "--no-cuda", *extra,
    ]  # fmt: skip
    env = dict(os.environ, PYTHONPATH=str(REPO), OMP_NUM_THREADS="1")
    res = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
    return res, ckpt


def _no_actor_left(run_dir):
    for p in psutil.process_iter(["cmdline"]):
        cmd = " ".join(p.info["cmdline"] or [])
        assert str(run_dir) not in cmd, f"process {p.pid} of the run is still alive: {cmd}"


def test_short_run_updates_the_supervised_model_and_writes_a_loadable_checkpoint(tmp_path):
    res, ckpt = _run(tmp_path)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert "Simple64 (FullGame-v0, lite): AlphaStarPolicy from" in res.stdout
    assert "total_timesteps reached" in res.stdout
    # the learner compiles the engine once, before the actors start (they load Numba's cache)
    ready = res.stdout.index("lite engine ready in")
    assert ready < res.stdout.index("actor 0 gen 0 started")
    (run_dir,) = (tmp_path / "runs").iterdir()
    assert sorted(p.name for p in run_dir.glob("actor_*.log")) == ["actor_0_gen0.log", "actor_1_gen0.log"]
    saved = torch.load(run_dir / "a3c_upgo.pt", weights_only=True)
    assert saved["rl"]["env_steps"] >= 160 and saved["lineage"][0]["path"] == ckpt
    model, _ = load_alphastar(str(run_dir / "a3c_upgo.pt"))
    start, _ = load_alphastar(ckpt)
    changed = [k for k, v in model.state_dict().items() if not torch.equal(v, start.state_dict()[k])]
    assert changed, "no weight moved: the learner did not update"
    _no_actor_left(run_dir)


def test_a_full_game_run_resumes_in_its_folder_at_its_resolved_step_mul(tmp_path):
    ckpt = str(tmp_path / "sl.pt")
    save_alphastar(ckpt, _model(), {"bc": {"epoch": 1, "step_mul": 16}})  # --step-mul 0: this checkpoint's 16
    env = dict(os.environ, PYTHONPATH=str(REPO), OMP_NUM_THREADS="1")
    first = [
        sys.executable, str(SCRIPT), "--map", "Simple64", "--init", ckpt, "--num-actors", "1", "--envs-per-actor", "2",
        "--unroll-length", "8", "--batch-unrolls", "1", "--max-entities", "96", "--game-steps-per-episode", "80",
        "--total-timesteps", "32", "--startup-timeout", "600", "--run-dir", str(tmp_path / "runs"), "--no-cuda",
    ]  # fmt: skip
    res = subprocess.run(first, capture_output=True, text=True, env=env, timeout=900)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert "  step_mul = 16\n" in res.stdout
    assert f"(derived) step_mul = 16 game loops per env step: the step_mul the --init checkpoint {ckpt}" in res.stdout
    (run_dir,) = (tmp_path / "runs").iterdir()
    # found by a tester: a total the run has reached started actors and only rewrote the checkpoints
    done = [sys.executable, str(SCRIPT), "--resume", str(run_dir), "--total-timesteps", "32"]
    res = subprocess.run(done, capture_output=True, text=True, env=env, timeout=900)
    assert res.returncode == 2 and "--total-timesteps 32: the run has done 32 env steps; expected more" in res.stderr
    again = [sys.executable, str(SCRIPT), "--resume", str(run_dir), "--total-timesteps", "64"]
    res = subprocess.run(again, capture_output=True, text=True, env=env, timeout=900)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert "resumed from" in res.stdout and "at update 2, 32 env steps" in res.stdout
    assert "(derived) step_mul = 16 game loops per env step: kept from the resumed run" in res.stdout
    assert torch.load(run_dir / "a3c_upgo.pt", weights_only=True)["rl"]["env_steps"] == 64


def test_full_game_needs_a_supervised_checkpoint(tmp_path):
    algo = load_algo("a3c_upgo")
    with pytest.raises(SystemExit, match="--init PATH"):
        algo.check_args(algo.Args(map="Simple64", run_dir=str(tmp_path)))


def test_missing_real_game_is_reported_before_any_process_starts(tmp_path, monkeypatch, capsys):
    algo = load_algo("a3c_upgo")
    ckpt = _sl_checkpoint(tmp_path / "sl.pt")
    monkeypatch.setenv("SC2PATH", str(tmp_path / "no_sc2_here"))
    with pytest.raises(SystemExit) as e:
        algo.check_args(algo.Args(map="Simple64", init=ckpt, env_backend="sc2", envs_per_actor=2))
    assert e.value.code == 2 and "SC2PATH" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("flag", "value", "expected"),
    [
        ("step_mul", -1, "expected game loops per env step >= 1"),
        ("game_steps_per_episode", -5, "expected game loops >= 0 (0: no limit)"),
        ("max_entities", 0, "expected entity rows per observation, an int in [1, 65536]"),
        ("max_entities", -1, "expected entity rows per observation, an int in [1, 65536]"),
        ("max_entities", 70000, "expected entity rows per observation, an int in [1, 65536]"),
        # found by a tester: these reached every actor's LiteFullGameEnv, a ValueError traceback per actor
        ("step_mul", 2**21, "expected game loops per env step <= 1048576 (the full game's limit)"),
        ("game_steps_per_episode", 2**62 + 1, f"expected game loops <= {2**62} (the full game's limit)"),
        ("envs_per_actor", 70000, "expected games per actor <= 65536 (the lite engine's limit)"),
    ],
)
def test_full_game_env_options_the_env_refuses_are_refused_before_a_run_starts(tmp_path, capsys, flag, value, expected):
    algo = load_algo("a3c_upgo")
    ckpt = _sl_checkpoint(tmp_path / "sl.pt")
    with pytest.raises(SystemExit) as e:
        algo.check_args(algo.Args(map="Simple64", init=ckpt, run_dir=str(tmp_path), **{flag: value}))
    assert e.value.code == 2
    assert f"--{flag.replace('_', '-')} {value}: {expected}" in capsys.readouterr().err
    assert [p.name for p in tmp_path.iterdir()] == ["sl.pt"]  # no run folder


def test_step_mul_zero_becomes_the_init_checkpoints_trained_stride_and_run_meta_records_it(tmp_path, capsys):
    # before: --step-mul defaulted to 8, so a policy cloned from 32-loop labels issued 4x its experts' commands
    import json

    from sc2_envs.training.async_learner import start_learner_run

    algo = load_algo("a3c_upgo")
    ckpt = str(tmp_path / "bc32.pt")
    save_alphastar(ckpt, _model(), {"bc": {"epoch": 1, "step_mul": 32}})
    args, resumed, run_dir, _, notes = start_learner_run(
        algo.Args(map="Simple64", init=ckpt, max_entities=96, run_dir=str(tmp_path / "runs"), cuda=False),
        algo.Args(),
        None,
        "a3c_upgo.py",
    )
    assert args.step_mul == 32 and resumed is None
    assert notes[0] == f"step_mul = 32 game loops per env step: the step_mul the --init checkpoint {ckpt} was trained at"
    assert notes[1].startswith("training games end at 18000 game loops (563 env steps of 32 loops) unless won or lost")
    assert json.loads((run_dir / "run_meta.json").read_text())["config"]["step_mul"] == 32


def test_step_mul_zero_without_a_record_is_eight_and_given_or_resumed_values_are_kept(tmp_path):
    from sc2_envs.training.async_learner_checks import resolve_step_mul

    algo = load_algo("a3c_upgo")
    ckpt = _sl_checkpoint(tmp_path / "sl.pt")  # records no step_mul
    args = algo.Args(map="Simple64", init=ckpt)
    assert "mini-AlphaStar's default" in resolve_step_mul(args) and args.step_mul == 8
    args = algo.Args(map="Simple64", init=ckpt, step_mul=16)
    assert resolve_step_mul(args).endswith("16 game loops per env step: --step-mul as given") and args.step_mul == 16
    args = algo.Args(map="Simple64", init=ckpt, step_mul=32, resume=str(tmp_path))
    assert resolve_step_mul(args).endswith("kept from the resumed run") and args.step_mul == 32


def test_an_init_checkpoint_recording_an_invalid_step_mul_is_a_one_line_argument_error(tmp_path, capsys):
    from sc2_envs.training.async_learner_checks import resolve_step_mul

    algo = load_algo("a3c_upgo")
    ckpt = str(tmp_path / "odd.pt")
    save_alphastar(ckpt, _model(), {"bc": {"epoch": 1, "step_mul": 2.7}})
    with pytest.raises(SystemExit) as e:
        resolve_step_mul(algo.Args(map="Simple64", init=ckpt))
    assert e.value.code == 2 and f"--init {ckpt}: its bc record's step_mul is 2.7" in capsys.readouterr().err


def test_shipped_checkpoint_trains_at_its_datasets_stride_by_default(tmp_path):
    from sc2_envs.training.async_learner_checks import resolve_step_mul

    algo = load_algo("a3c_upgo")
    args = algo.Args(map="Simple64", init=str(REPO / "checkpoints" / "fullgame" / "bc_simple64_tiny.pt"))
    resolve_step_mul(args)
    assert args.step_mul == 32


def test_no_episode_limit_is_accepted(tmp_path):
    algo = load_algo("a3c_upgo")
    algo.check_args(
        algo.Args(map="Simple64", init=_sl_checkpoint(tmp_path / "sl.pt"), game_steps_per_episode=0, run_dir=str(tmp_path))
    )


def test_max_entities_below_the_models_rows_is_refused_naming_both(tmp_path, capsys):
    algo = load_algo("a3c_upgo")
    ckpt = _sl_checkpoint(tmp_path / "sl.pt")  # a model of 64 entity rows
    algo.check_args(algo.Args(map="Simple64", init=ckpt, max_entities=64, run_dir=str(tmp_path)))
    with pytest.raises(SystemExit) as e:
        algo.check_args(algo.Args(map="Simple64", init=ckpt, max_entities=16, run_dir=str(tmp_path)))
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "--max-entities 16 is below the 64 entity rows of the --init model" in err


def test_shipped_checkpoint_needs_its_192_entity_rows(tmp_path, capsys):
    algo = load_algo("a3c_upgo")
    ckpt = str(REPO / "checkpoints" / "fullgame" / "bc_simple64_tiny.pt")
    with pytest.raises(SystemExit) as e:
        algo.check_args(algo.Args(map="Simple64", init=ckpt, max_entities=100, run_dir=str(tmp_path)))
    assert e.value.code == 2 and "--max-entities 100 is below the 192 entity rows" in capsys.readouterr().err


def test_short_run_on_the_real_game(tmp_path):
    from sc2_envs.full_game.env import SC2NotFoundError, find_sc2_binary

    try:
        find_sc2_binary()
    except SC2NotFoundError as e:
        pytest.skip(f"StarCraft II is not installed here, so the backend='sc2' run cannot start: {e}")
    res, _ = _run(tmp_path, "--env-backend", "sc2", "--envs-per-actor", "1", "--num-actors", "1", "--batch-unrolls", "1")
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]


@pytest.mark.slow
def test_short_run_with_ray_actors(tmp_path):
    pytest.importorskip("ray")
    res, _ = _run(tmp_path, "--backend", "ray", "--ray-actor-cpus", "0.5")
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    (run_dir,) = (tmp_path / "runs").iterdir()
    assert torch.load(run_dir / "a3c_upgo.pt", weights_only=True)["rl"]["env_steps"] >= 160


def test_a_teacher_reading_other_inputs_is_refused():
    from sc2_envs.training.fullgame_rl import check_teacher_fits

    tiny = AlphaStarConfig.tiny()
    with pytest.raises(ValueError, match="entity_features"):
        check_teacher_fits(tiny, AlphaStarConfig.replay(tiny))
    check_teacher_fits(tiny, AlphaStarConfig.tiny(entity_dim=32))  # other sizes are fine


# ------------------------------------------------------------------------------------------------
# the critic warm-up (--critic-warmup-steps) and truncated training games (--train-game-loops)


def _update(model, teacher, batch, warmup: bool):
    """One learner update as algos/a3c_upgo.py makes it (loss, backward, clip, Adam), the loss's forward pass
    within trainable_only as AsyncLearnerRun.critic_warmup runs it; returns the loss, its logs and the optimiser."""
    from sc2_envs.training.critic_warmup import trainable_only

    learner = FullGameLearner(model, teacher, OffPolicySettings(gamma=1.0, kl_coef=0.02))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2, eps=1e-5)
    with trainable_only([model], model.base["winloss"].parameters(), active=warmup):
        loss, logs = learner.loss(batch)
    optimizer.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(list(model.parameters()), 10.0)
    optimizer.step()
    return loss, logs, optimizer


def test_a_critic_warmup_update_leaves_the_policy_bit_identical_and_trains_the_win_loss_baseline():
    model = _model()
    start = copy.deepcopy(model.state_dict())
    batch = collate_unrolls(_unrolls(model, 1))
    _, logs, optimizer = _update(model, copy.deepcopy(model), batch, warmup=True)
    moved = {k for k, v in model.state_dict().items() if not torch.equal(v, start[k])}
    assert moved and all(k.startswith("base.winloss.") for k in moved), sorted(moved)
    # the policy's parameters got no gradient, so Adam kept no state for them either
    assert all(p.grad is None for n, p in model.named_parameters() if not n.startswith("base.winloss."))
    assert all(p.requires_grad for p in model.parameters())  # restored after the forward pass
    assert len(optimizer.state) == len(list(model.base["winloss"].parameters()))
    # the actors play the unchanged policy: every importance ratio is 1 and the teacher (the start) is the student
    assert logs["losses/clipped_rho_mean"].item() == pytest.approx(1.0, abs=1e-4)
    assert logs["losses/kl_teacher"].item() < 1e-5


def test_default_flags_make_the_update_of_a_run_without_warmup_bit_for_bit():
    from sc2_envs.training.critic_warmup import in_warmup

    model = _model()
    batch = collate_unrolls(_unrolls(model, 1))
    plain, again = copy.deepcopy(model), copy.deepcopy(model)
    learner = FullGameLearner(plain, copy.deepcopy(model), OffPolicySettings(gamma=1.0, kl_coef=0.02))
    optimizer = torch.optim.Adam(plain.parameters(), lr=1e-2, eps=1e-5)
    loss, logs = learner.loss(batch)  # the update of a3c_upgo.py before --critic-warmup-steps existed
    optimizer.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(list(plain.parameters()), 10.0)
    optimizer.step()
    assert not in_warmup(16, 0)  # --critic-warmup-steps 0 (the default): no update is a warm-up update
    loss2, logs2, _ = _update(again, copy.deepcopy(model), batch, warmup=in_warmup(16, 0))
    assert torch.equal(loss.detach(), loss2.detach())
    assert all(torch.equal(logs[k].detach(), logs2[k].detach()) for k in logs)
    after = again.state_dict()
    assert all(torch.equal(v, after[k]) for k, v in plain.state_dict().items())


def test_the_learner_says_when_the_critic_warmup_ends_and_marks_its_updates():
    from types import SimpleNamespace

    from sc2_envs.training.async_learner import AsyncLearnerRun

    model, said = _model(), []
    run = SimpleNamespace(
        args=SimpleNamespace(critic_warmup_steps=32),
        pieces=SimpleNamespace(modules={"actors": model}, value_params={"base.winloss": list(model.base.parameters())}),
        warming=False,
        updates=0,
        say=said.append,
    )
    phases = []
    for env_steps in (16, 32, 48, 64):  # updates of 16 env steps each
        run.env_steps = env_steps
        with AsyncLearnerRun.critic_warmup(run) as warming:
            phases.append((warming, model.core.weight_ih_l0.requires_grad, model.base["winloss"][0].weight.requires_grad))
        run.updates += 1
    assert phases == [(True, False, True), (True, False, True), (False, True, True), (False, True, True)]
    assert said == ["critic warm-up over at 48 env steps: the policy trains from update 3"]


def test_training_games_end_at_train_game_loops_as_truncations_not_terminations(tmp_path):
    from sc2_envs.training.learner_models import fullgame_actor_settings

    algo = load_algo("a3c_upgo")
    model = _model()
    args = algo.Args(map="Simple64", init="sl.pt", step_mul=8, game_steps_per_episode=80, train_game_loops=40)
    settings = fullgame_actor_settings(args, model.cfg)
    assert settings.env_kwargs["game_steps_per_episode"] == 40  # the actors' envs: the training limit
    assert (
        fullgame_actor_settings(algo.Args(map="Simple64", step_mul=8), model.cfg).env_kwargs["game_steps_per_episode"] == 18000
    )
    kw = dict(settings.env_kwargs, max_entities=96)
    env = make_vector_env("lite", 2, **kw)
    actor = AlphaStarActor(model, 2, max_entities=96, max_selected=64, raw_resolution=16)
    traj = UnrollCollector(actor, env, seed=3).collect(7)
    # 40 loops = 5 decisions of 8: step 4 ends both games, cut by the limit (not won, not lost)
    assert traj["truncated"][4].all() and not traj["terminated"].any()
    assert not traj["truncated"][:4].any() and traj["valid"][:5].all() and not traj["valid"][5].any()
    assert [(r, n) for r, n, _ in traj["episodes"]] == [(0.0, 5), (0.0, 5)]


def test_discount_zero_after_timeout_ends_a_game_at_its_limit_as_a_terminal_tie():
    from sc2_envs.training.async_learner_checks import training_games_line
    from sc2_envs.training.learner_models import fullgame_actor_settings

    algo = load_algo("a3c_upgo")
    model = _model()
    args = algo.Args(map="Simple64", step_mul=8, game_steps_per_episode=40, discount_zero_after_timeout=True)
    settings = fullgame_actor_settings(args, model.cfg)
    assert settings.discount_zero_after_timeout
    env = make_vector_env("lite", 2, **dict(settings.env_kwargs, max_entities=96))
    actor = AlphaStarActor(model, 2, max_entities=96, max_selected=64, raw_resolution=16)
    traj = UnrollCollector(actor, env, seed=3, discount_zero_after_timeout=True).collect(7)
    # 40 loops = 5 decisions of 8: step 4 ends both games at the limit, now terminal (no bootstrap), reward 0
    assert traj["terminated"][4].all() and not traj["truncated"].any() and not traj["terminated"][:4].any()
    assert [(r, n) for r, n, _ in traj["episodes"]] == [(0.0, 5), (0.0, 5)]
    assert "as a tie worth 0" in training_games_line(args)


def test_bad_critic_warmup_and_train_game_loops_are_refused_naming_the_value(tmp_path, capsys):
    algo = load_algo("a3c_upgo")
    ckpt = _sl_checkpoint(tmp_path / "sl.pt")
    cases = [
        (dict(critic_warmup_steps=-1), "--critic-warmup-steps -1: expected env steps >= 0 (0: no warm-up)"),
        (dict(critic_warmup_steps=100, vf_coef=0.0), "--critic-warmup-steps 100 with --vf-coef 0"),
        (dict(train_game_loops=-1), "--train-game-loops -1: expected game loops in [1, 18000]"),
        (dict(train_game_loops=18001), "--train-game-loops 18001: expected game loops in [1, 18000]"),
        (dict(train_game_loops=-3, game_steps_per_episode=0), "--train-game-loops -3: expected game loops >= 1, or 0"),
    ]
    for kw, expected in cases:
        with pytest.raises(SystemExit) as e:
            algo.check_args(algo.Args(map="Simple64", init=ckpt, run_dir=str(tmp_path), **kw))
        assert e.value.code == 2 and expected in capsys.readouterr().err, kw
    algo.check_args(algo.Args(map="Simple64", init=ckpt, run_dir=str(tmp_path), train_game_loops=18000))
    algo.check_args(
        algo.Args(map="Simple64", init=ckpt, run_dir=str(tmp_path), train_game_loops=13440, game_steps_per_episode=0)
    )
    with pytest.raises(SystemExit) as e:
        algo.check_args(algo.Args(map="3m", train_game_loops=13440))
    assert "--train-game-loops 13440: only the full game" in capsys.readouterr().err


def test_a_run_in_critic_warmup_keeps_the_policy_and_a_resumed_one_goes_on_to_train_it(tmp_path):
    ckpt = str(tmp_path / "sl.pt")
    save_alphastar(ckpt, _model(), {"bc": {"epoch": 1, "step_mul": 8}})
    env = dict(os.environ, PYTHONPATH=str(REPO), OMP_NUM_THREADS="1")
    first = [
        sys.executable, str(SCRIPT), "--map", "Simple64", "--init", ckpt, "--num-actors", "1", "--envs-per-actor", "2",
        "--unroll-length", "8", "--batch-unrolls", "1", "--max-entities", "96", "--game-steps-per-episode", "80",
        "--train-game-loops", "40", "--critic-warmup-steps", "32", "--total-timesteps", "32", "--gamma", "1",
        "--startup-timeout", "600", "--run-dir", str(tmp_path / "runs"), "--no-cuda",
    ]  # fmt: skip
    res = subprocess.run(first, capture_output=True, text=True, env=env, timeout=900)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert "  critic_warmup_steps = 32\n" in res.stdout and "  train_game_loops = 40\n" in res.stdout
    assert "(derived) training games end at 40 game loops (5 env steps of 8 loops) unless won or lost" in res.stdout
    assert "critic warm-up: until 32 env steps only the value baseline trains: base.winloss (" in res.stdout
    (run_dir,) = (tmp_path / "runs").iterdir()
    start = load_alphastar(ckpt)[0].state_dict()
    warmed = load_alphastar(str(run_dir / "a3c_upgo.pt"))[0].state_dict()
    moved = {k for k, v in warmed.items() if not torch.equal(v, start[k])}
    assert moved and all(k.startswith("base.winloss.") for k in moved), sorted(moved)
    again = [sys.executable, str(SCRIPT), "--resume", str(run_dir), "--total-timesteps", "64"]
    res = subprocess.run(again, capture_output=True, text=True, env=env, timeout=900)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert "critic warm-up: until" not in res.stdout  # resumed past it: env steps count from the saved run's
    trained = load_alphastar(str(run_dir / "a3c_upgo.pt"))[0].state_dict()
    assert any(not torch.equal(v, start[k]) for k, v in trained.items() if not k.startswith("base."))


def test_saved_starts_begin_new_games_from_games_that_did_not_win_at_the_save_loop():
    """Games saved at loop 24 that end in a tie (the 80-loop limit) join the pool; half the new games start
    there: 7 decisions of 8 loops left instead of 10, kept out of ``episodes`` (the whole games' win rate)."""
    model = _model()
    env = make_vector_env("lite", 4, **dict(ENV, game_steps_per_episode=80))
    actor = AlphaStarActor(model, 4, max_entities=96, max_selected=64, raw_resolution=16)
    collector = UnrollCollector(actor, env, seed=3, saved_start_share=0.5, save_loop=24, save_pool=3)
    whole, from_saves = [], []
    for _ in range(8):
        traj = collector.collect(8)
        whole += traj["episodes"]
        from_saves += traj["saved_start_episodes"]
    assert len(collector.pool) == 3  # a FIFO of the latest saves of tied games
    assert all(s.game_loop == 24 for s in collector.pool)
    assert whole and from_saves, (len(whole), len(from_saves))
    assert {n for _, n, _ in whole} == {10} and {n for _, n, _ in from_saves} == {7}


def test_saved_starts_from_running_games_pool_every_game_at_the_save_loop_before_it_ends():
    """``saved_start_games="running"``: each game joins the pool when it crosses loop 24, before its outcome is
    known (here every game ties at the 80-loop limit); ``"failed"`` holds the same saves until the game ends."""
    model = _model()
    pools = {}
    for games in ("running", "failed"):
        env = make_vector_env("lite", 4, **dict(ENV, game_steps_per_episode=80))
        actor = AlphaStarActor(model, 4, max_entities=96, max_selected=64, raw_resolution=16)
        collector = UnrollCollector(
            actor, env, seed=3, saved_start_share=0.5, save_loop=24, save_pool=8, saved_start_games=games
        )
        traj = collector.collect(5)  # 5 steps of 8 loops: past loop 24, no game ended
        assert not traj["episodes"]
        pools[games] = (len(collector.pool), sum(h is not None for h in collector.held))
        assert all(s.game_loop == 24 for s in collector.pool)
    assert pools == {"running": (4, 0), "failed": (0, 4)}
    with pytest.raises(ValueError, match=r"saved_start_games='won'; expected one of \('failed', 'running'\)"):
        UnrollCollector(actor, env, seed=3, saved_start_share=0.5, save_loop=24, saved_start_games="won")


def test_saved_start_games_is_checked_and_refused_without_a_share(tmp_path, capsys):
    from sc2_envs.training.async_learner_checks import saved_starts_line

    algo = load_algo("a3c_upgo")
    ckpt = _sl_checkpoint(tmp_path / "sl.pt")
    cases = [
        (dict(saved_start_share=0.3, saved_start_games="won"), "--saved-start-games 'won': expected one of failed, running"),
        (dict(saved_start_games="running"), "--saved-start-games running: only --saved-start-share reads it"),
    ]  # fmt: skip
    for kw, expected in cases:
        with pytest.raises(SystemExit) as e:
            algo.check_args(algo.Args(map="Simple64", init=ckpt, run_dir=str(tmp_path), **kw))
        assert e.value.code == 2 and expected in capsys.readouterr().err, kw
    with pytest.raises(SystemExit):
        algo.check_args(algo.Args(map="3m", saved_start_games="running"))
    assert "--saved-start-games running: only the full game" in capsys.readouterr().err
    args = algo.Args(map="Simple64", saved_start_share=0.3, save_loop=8064, saved_start_games="running")
    assert "saved at loop 8064 (6.0 real (Faster) minutes) while still running, whatever follows" in saved_starts_line(args)
    args.saved_start_games = "failed"
    assert "(6.0 real (Faster) minutes) that went on to end without a win" in saved_starts_line(args)


def test_a_run_with_saved_starts_reports_their_games_apart(tmp_path):
    res, _ = _run(
        tmp_path, "--saved-start-share", "0.5", "--save-loop", "24", "--total-timesteps", "480", "--print-interval-s", "0"
    )
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert "games from saves won 0.00" in res.stdout  # random weights: every game a tie at the 80-loop limit
    assert "a share 0.5 of the new ones start from a save, each actor's games saved at loop 24 (0.0 real" in res.stdout


def test_saved_starts_are_refused_out_of_range_on_the_real_game_and_past_the_training_games_end(tmp_path, capsys):
    algo = load_algo("a3c_upgo")
    ckpt = _sl_checkpoint(tmp_path / "sl.pt")
    cases = [
        (dict(saved_start_share=1.0), "--saved-start-share 1.0: expected a share of new training games in [0, 1)"),
        (dict(saved_start_share=-0.1), "--saved-start-share -0.1: expected a share of new training games in [0, 1)"),
        (dict(saved_start_share=0.3, env_backend="sc2"), "only the lite engine saves and loads a game"),
        (dict(saved_start_share=0.3, save_loop=0), "--save-loop 0: expected a game loop in [1, 17999]"),
        (dict(saved_start_share=0.3, save_loop=13440, train_game_loops=13440),
         "--save-loop 13440: expected a game loop in [1, 13439]"),
    ]  # fmt: skip
    for kw, expected in cases:
        with pytest.raises(SystemExit) as e:
            algo.check_args(algo.Args(map="Simple64", init=ckpt, run_dir=str(tmp_path), **kw))
        assert e.value.code == 2 and expected in capsys.readouterr().err, kw
    algo.check_args(algo.Args(map="Simple64", init=ckpt, run_dir=str(tmp_path), saved_start_share=0.3))
    with pytest.raises(SystemExit):
        algo.check_args(algo.Args(map="3m", saved_start_share=0.3))
    assert "--saved-start-share 0.3: only the full game" in capsys.readouterr().err
    model = _model()
    env = make_vector_env("lite", 2, **ENV)
    actor = AlphaStarActor(model, 2, max_entities=96, max_selected=64, raw_resolution=16)
    for kw in (
        dict(saved_start_share=0.5, save_loop=0),
        dict(saved_start_share=1.5),
        dict(saved_start_share=0.5, save_pool=0),
    ):
        with pytest.raises(ValueError, match="expected"):
            UnrollCollector(actor, env, seed=3, **kw)


def test_a_save_loop_no_training_game_can_be_saved_at_is_refused_once_the_step_mul_is_known(tmp_path, capsys):
    """Found by a tester: a save loop past the last step boundary before the training games' end is crossed only
    by the step that ends the game, so no game was ever saved and --saved-start-share did nothing."""
    from sc2_envs.training.async_learner_checks import check_save_loop_reached, last_save_loop

    assert last_save_loop(13440, 32) == 13408 and last_save_loop(80, 8) == 72 and last_save_loop(81, 8) == 80
    algo = load_algo("a3c_upgo")
    args = algo.Args(map="Simple64", step_mul=32, train_game_loops=13440, saved_start_share=0.3, save_loop=13409)
    with pytest.raises(SystemExit) as e:
        check_save_loop_reached(args)
    assert e.value.code == 2
    assert "--save-loop 13409: a training game's last step starts at loop 13408 (--step-mul 32" in capsys.readouterr().err
    check_save_loop_reached(
        algo.Args(map="Simple64", step_mul=32, train_game_loops=13440, saved_start_share=0.3, save_loop=13408)
    )
    ckpt = _sl_checkpoint(tmp_path / "sl.pt")
    with pytest.raises(SystemExit) as e:  # read only with a share above 0
        algo.check_args(algo.Args(map="Simple64", init=ckpt, run_dir=str(tmp_path), save_loop=-5))
    assert "--save-loop -5: only --saved-start-share reads it" in capsys.readouterr().err
    model = _model()
    env = make_vector_env("lite", 2, **ENV)
    actor = AlphaStarActor(model, 2, max_entities=96, max_selected=64, raw_resolution=16)
    for kw in (dict(saved_start_share="0.5"), dict(saved_start_share=True), dict(saved_start_share=0.5, save_loop=2.5)):
        with pytest.raises(ValueError, match="expected"):
            UnrollCollector(actor, env, seed=3, **kw)


def test_a_game_from_a_save_starts_a_new_episode_with_a_fresh_lstm_state_on_its_observation():
    """A reviewer's point: each load happens on a game whose next step is marked ``first`` (the learner zeroes its
    LSTM state there too), with the actor's state for it already zero, and the observation the actor reads next
    is the saved game's."""
    model = _model()
    env = make_vector_env("lite", 4, **dict(ENV, game_steps_per_episode=80))
    actor = AlphaStarActor(model, 4, max_entities=96, max_selected=64, raw_resolution=16)
    collector = UnrollCollector(actor, env, seed=3, saved_start_share=0.5, save_loop=24)
    load, loads = env.load_game, []

    def spy(g, saved):
        h, c = actor.state
        assert collector.first[g] and not h[:, g].any() and not c[:, g].any()
        load(g, saved)
        assert collector.obs["scalars"] is not None and env.save_game(g).game_loop == saved.game_loop == 24
        loads.append(g)

    env.load_game = spy
    for _ in range(8):
        collector.collect(8)
    assert loads


class _MineralsWriter:
    """The env, with a distinct mineral count written into each step's observation (``scalars`` column
    ``MINERALS``: 100 x step + game) and game 0's last step of each game made a win (reward +1)."""

    def __init__(self, env):
        self.env, self.minerals = env, []

    def __getattr__(self, name):
        return getattr(self.env, name)

    def step(self, action):
        obs, reward, term, trunc, info = self.env.step(action)
        obs = dict(obs, scalars=np.array(obs["scalars"], copy=True))
        obs["scalars"][:, MINERALS] = 100 * (len(self.minerals) + 1) + np.arange(self.env.num_envs)
        self.minerals.append(obs["scalars"][:, MINERALS].copy())
        reward = np.array(reward, np.float32, copy=True)
        reward[0] = 1.0 if (term[0] or trunc[0]) else reward[0]
        return obs, reward, term, trunc, info


def test_banked_minerals_cost_is_subtracted_from_each_live_steps_reward_and_episodes_keep_the_games_return():
    """The same games twice (same weights and sampling seed): the trained reward is the game's minus cost / 1000 x
    the minerals held after the step (not before it), on every live step; the episodes (return, length, won) are equal."""
    model = _model()
    trajs, envs = [], []
    for cost in (0.0, 0.5):
        env = _MineralsWriter(make_vector_env("lite", 2, **ENV))
        actor = AlphaStarActor(model, 2, max_entities=96, max_selected=64, raw_resolution=16)
        torch.manual_seed(7)
        trajs.append(UnrollCollector(actor, env, seed=3, banked_minerals_cost=cost).collect(12))
        envs.append(env)
    plain, shaped = trajs
    minerals = np.stack(envs[1].minerals)  # [T, B]: 100 x (step + 1) + game
    assert plain["valid"][:10].all() and not plain["valid"][10].any()  # 80 loops = 10 steps, then the autoreset step
    np.testing.assert_array_equal(shaped["valid"], plain["valid"])
    expected = plain["reward"] - np.float32(0.5 / 1000) * minerals
    np.testing.assert_array_equal(shaped["reward"][shaped["valid"]], expected[plain["valid"]])
    assert shaped["reward"][9, 0] == np.float32(1.0) - np.float32(0.5 / 1000) * np.float32(1000)  # the win, less its cost
    assert [won for _, _, won in plain["episodes"]] == [True, False]
    assert shaped["episodes"] == plain["episodes"]  # the game's return and outcome, never the cost


def test_a_negative_or_non_finite_banked_minerals_cost_is_refused_and_the_first_screen_says_the_reward(tmp_path, capsys):
    from sc2_envs.training.async_learner_checks import training_reward_line
    from sc2_envs.training.learner_models import fullgame_actor_settings

    algo = load_algo("a3c_upgo")
    ckpt = _sl_checkpoint(tmp_path / "sl.pt")
    for value, expected in (
        (-0.5, "--banked-minerals-cost -0.5: expected a cost per env step per 1,000 minerals held, a finite number >= 0"),
        (float("nan"), "--banked-minerals-cost nan: expected a finite number"),
    ):
        with pytest.raises(SystemExit) as e:
            algo.check_args(algo.Args(map="Simple64", init=ckpt, run_dir=str(tmp_path), banked_minerals_cost=value))
        assert e.value.code == 2 and expected in capsys.readouterr().err, value
    model = _model()
    env = make_vector_env("lite", 2, **ENV)
    actor = AlphaStarActor(model, 2, max_entities=96, max_selected=64, raw_resolution=16)
    for value in (-1.0, float("inf"), float("nan"), True, "0.5"):
        with pytest.raises(ValueError, match="banked_minerals_cost=.*expected a cost per env step per 1,000 minerals held"):
            UnrollCollector(actor, env, seed=3, banked_minerals_cost=value)
    line = training_reward_line(algo.Args(banked_minerals_cost=0.5, step_mul=32))
    assert "minus 0.5 per env step for each 1,000 minerals held after it (21 per real (Faster) minute at step_mul 32" in line
    args = algo.Args(map="Simple64", step_mul=8, banked_minerals_cost=0.5)
    assert fullgame_actor_settings(args, model.cfg).banked_minerals_cost == 0.5  # what the actors' collectors get
    assert "the game's (+1 won, -1 lost, 0 otherwise; --banked-minerals-cost 0)" in training_reward_line(
        algo.Args(step_mul=32)
    )
