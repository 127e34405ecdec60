"""Tests of algos/bc_reweight.py and the library parts it uses (models.common.masked_ce,
models.alphastar.alphastar_losses, models.average_checkpoints, sc2_envs.training.evaluation): weight formula,
masked CE, averaging, behaviour evaluator, short runs."""

import dataclasses
import json
import math
import re
import time
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import REPO, load_algo

import sc2_envs
from models import average_checkpoints, build_models, load_checkpoint, save_checkpoint
from models.alphastar import alphastar_losses
from models.common import MASKED_LOGIT, masked_ce
from sc2_envs.training.demos import SamplingConfig, heuristic_demonstrator, record_demos
from sc2_envs.training.evaluation import behaviour_key, evaluate

bc = load_algo("bc_reweight")


# ------------------------------------------------------------------ weights
def test_weights_on_hand_computed_counts():
    counts = [80, 15, 5]  # data shares 0.8, 0.15, 0.05; uniform target 1/3
    w = bc.action_weights(counts, power=1.0)
    # (1/3)/0.8, (1/3)/0.15, (1/3)/0.05 = 0.41667, 2.22222, 6.66667; their data mean is already 1
    assert w == pytest.approx([5 / 12, 20 / 9, 20 / 3], rel=1e-9)
    w = bc.action_weights(counts, power=0.5)
    raw = np.sqrt([5 / 12, 20 / 9, 20 / 3])  # 0.645497, 1.490712, 2.581989
    mean = 0.8 * raw[0] + 0.15 * raw[1] + 0.05 * raw[2]  # 0.516398 + 0.223607 + 0.129099 = 0.869104
    assert w == pytest.approx(raw / mean, rel=1e-9)
    assert w[0] == pytest.approx(0.742716, abs=1e-6)


def test_weights_clip_then_normalise_and_power_zero_is_plain_bc():
    counts = [990, 10]  # ratios 0.5/0.99 = 0.50505, 0.5/0.01 = 50
    w = bc.action_weights(counts, 1.0, clip=(0.1, 10.0))
    raw = np.array([0.5 / 0.99, 10.0])
    assert w == pytest.approx(raw / (0.99 * raw[0] + 0.01 * raw[1]), rel=1e-9)
    assert bc.action_weights(counts, 0.0) == pytest.approx([1.0, 1.0])


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_weights_have_mean_one_over_the_data(seed):
    rng = np.random.default_rng(seed)
    counts = rng.integers(0, 1000, size=12)
    counts[3] = 0  # an unseen action
    target = rng.random(12)
    for p in (0.3, 1.0, 2.0):
        w = bc.action_weights(counts, p, target, (0.1, 50.0))
        assert (counts * w).sum() / counts.sum() == pytest.approx(1.0, rel=1e-12)
        assert w[3] == 1.0  # unseen actions never enter the loss


def test_weight_arguments_are_checked():
    with pytest.raises(ValueError, match="weight_clip"):
        bc.action_weights([1, 2], 1.0, clip=(0.0, 5.0))
    with pytest.raises(ValueError, match="reweight_power"):
        bc.action_weights([1, 2], -1.0)
    with pytest.raises(ValueError, match="no mass"):
        bc.action_weights([1, 0], 1.0, target=[0.0, 1.0])
    with pytest.raises(ValueError, match="non-negative"):
        bc.action_weights([-1, 2], 1.0)


def test_target_distribution_file_by_name_and_id(tmp_path):
    f = tmp_path / "t.json"
    f.write_text(json.dumps({"stop": 0.5, "7": 0.25}))
    t = bc.load_target(str(f), bc.smac_action_names(9))
    assert t.tolist() == [0, 0.5, 0, 0, 0, 0, 0, 0.25, 0]
    f.write_text(json.dumps({"jump": 1.0}))
    with pytest.raises(ValueError, match="'jump'"):
        bc.load_target(str(f), bc.smac_action_names(9))
    assert bc.load_target("uniform", ["a"]) is None


@pytest.mark.parametrize(
    "text, match",
    [
        ('{"no_op": NaN, "stop": 1}', "share of 'no_op' is nan"),
        ('{"no_op": Infinity}', "share of 'no_op' is inf"),
        ('{"no_op": -0.5}', "share of 'no_op' is -0.5"),
        ('{"no_op": null}', "share of 'no_op' is null"),
        ('{"no_op": [1]}', "share of 'no_op' is \\[1\\]"),
        ('{"no_op": "1"}', "share of 'no_op' is \"1\""),
        ('{"no_op": true}', "share of 'no_op' is true"),
        ('{"no_op": 0.1, "0": 0.9}', "'no_op' \\(id 0\\) given twice"),
        ('{"stop": 1, "stop": 2}', "'stop' \\(id 1\\) given twice"),
        ("[0.5, 0.5]", "a JSON array; expected an object"),
        ('{"no_op": 1,', "not valid JSON"),
    ],
)
def test_target_file_with_a_bad_share_key_or_syntax_is_refused_naming_the_file(tmp_path, text, match):
    f = tmp_path / "t.json"
    f.write_text(text)
    with pytest.raises(ValueError, match=match) as e:
        bc.load_target(str(f), bc.smac_action_names(9))
    assert str(f) in str(e.value)


@pytest.mark.parametrize("bad, shown", [(np.nan, "nan"), (np.inf, "inf"), (-1.0, "-1.0")])
def test_weights_refuse_a_non_finite_or_negative_target_naming_the_action(bad, shown):
    with pytest.raises(ValueError, match=f"action 1 is {shown}; expected finite shares >= 0"):
        bc.action_weights([5, 5, 5], 1.0, target=[1.0, bad, 1.0])


def test_target_mass_on_actions_absent_from_the_data_is_warned_with_its_share(tmp_path, capsys):
    f = tmp_path / "t.json"
    f.write_text(json.dumps({"no_op": 0.2, "target_1": 0.8}))
    names = bc.smac_action_names(9)
    counts = np.array([10, 5, 0, 0, 0, 0, 3, 0, 0])
    w, _ = bc.loss_weights(bc.Args(target_dist=str(f), reweight_power=1.0), names, counts, "cpu")
    out = capsys.readouterr().out
    assert "warning: --target-dist" in out and "80.0% of its mass on 1 action(s)" in out and "target_1" in out
    assert (counts * w).sum() / counts.sum() == pytest.approx(1.0)


def test_a_non_finite_target_share_is_refused_by_check_args_before_the_data_is_read(tmp_path):
    # found by a tester: {"no_op": NaN} trained a NaN model that then won val-acc selection, exit 0
    f = tmp_path / "t.json"
    f.write_text('{"no_op": NaN, "Smart_pt": 1}')
    with pytest.raises(ValueError, match=re.escape(f"--target-dist {f}: share of 'no_op' is nan")):
        bc.check_args(bc.Args(data=str(tmp_path / "missing"), target_dist=str(f), reweight_power=1.0))


def test_target_dist_with_reweight_power_zero_is_refused(tmp_path):
    f = tmp_path / "t.json"
    f.write_text("{}")
    with pytest.raises(ValueError, match="--reweight-power 0 would be ignored"):
        bc.check_args(bc.Args(target_dist=str(f), reweight_power=0.0))


def test_label_lines_list_seen_actions_by_id_or_most_frequent_first():
    from sc2_envs.training.bc_labels import effective_shares, per_action

    counts = np.array([0, 5, 9, 1])
    names = ["no_op", "stop", "north", "south"]
    assert per_action(names, counts, counts) == "stop 5, north 9, south 1"
    assert per_action(names, np.array([1.0, 0.5, 0.25, 2.0]), counts, ".3f", by_count=True) == (
        "north 0.250, stop 0.500, south 2.000"
    )
    w = bc.action_weights(counts, 1.0)
    assert np.allclose(effective_shares(w, counts)[1:], 1 / 3)  # power 1, no clip: uniform over the seen actions


@pytest.mark.parametrize(
    ("pick", "window", "epochs", "span"),
    [(5, 3, 10, (3, 5)), (1, 3, 10, (1, 3)), (2, 4, 3, (1, 3)), (10, 2, 10, (9, 10))],
)
def test_the_average_window_ends_at_the_pick_when_it_can(pick, window, epochs, span):
    from sc2_envs.training.bc_selection import average_span

    assert average_span(pick, window, epochs) == span


def test_a_run_failing_before_its_first_epoch_leaves_no_folder_and_a_started_one_keeps_it(tmp_path):
    from sc2_envs.training.run import RESUME_FILE, discard_unstarted_run

    fresh, started = tmp_path / "fresh", tmp_path / "started"
    fresh.mkdir()
    started.mkdir()
    (started / "resume.pt").write_bytes(b"")
    for folder in (fresh, started):
        with pytest.raises(ValueError) as info, discard_unstarted_run(folder, False, RESUME_FILE):
            raise ValueError("too little data")
        assert info.value.before_training is (folder == fresh)
    assert not fresh.exists() and started.exists()


# ------------------------------------------------------------------ masked CE
def test_masked_ce_values_weights_and_masks():
    logits = torch.log(torch.tensor([[0.5, 0.25, 0.25], [0.1, 0.1, 0.8], [0.2, 0.3, 0.5]]))
    labels = torch.tensor([0, 2, -1])
    mask = torch.tensor([True, True, False])
    s, n = masked_ce(logits, labels, mask)
    assert n == 2 and s.item() == pytest.approx(-math.log(0.5) - math.log(0.8), rel=1e-6)
    s, n = masked_ce(logits, labels, mask, torch.tensor([2.0, 0.5, 100.0]))
    assert s.item() == pytest.approx(-2 * math.log(0.5) - 0.5 * math.log(0.8), rel=1e-6)


def test_head_without_valid_entry_contributes_zero_loss_not_nan():
    logits = torch.full((4, 5), MASKED_LOGIT, requires_grad=True)  # every entry masked
    s, n = masked_ce(logits, torch.full((4,), -1), torch.zeros(4, dtype=torch.bool))
    s.backward()
    assert n == 0 and s.item() == 0.0
    assert torch.isfinite(logits.grad).all() and (logits.grad == 0).all()
    logits2 = torch.full((2, 5), MASKED_LOGIT, requires_grad=True)  # all masked but counted: finite
    s2, _ = masked_ce(logits2, torch.tensor([0, 1]), torch.ones(2, dtype=torch.bool))
    s2.backward()
    assert math.isfinite(s2.item()) and torch.isfinite(logits2.grad).all()


def test_alphastar_heads_unused_by_the_labels_give_zero_loss():
    pytest.importorskip("pysc2_evolved", reason="argument masks come from the pysc2_evolved raw-function table")
    from models.alphastar import AlphaStarConfig, AlphaStarPolicy

    cfg = AlphaStarConfig.replay(AlphaStarConfig.tiny())
    m = AlphaStarPolicy(cfg)
    B, T, E = 2, 2, cfg.max_entities
    obs = {
        "entities": torch.zeros(B, T, E, len(cfg.entity_features)),
        "entity_count": torch.zeros(B, T, dtype=torch.long),
        "scalars": torch.zeros(B, T, len(cfg.scalar_features)),
        "upgrades": torch.zeros(B, T, 89),
        "unit_counts": torch.zeros(B, T, 375),
        "build_order": torch.zeros(B, T, 20, dtype=torch.long),
    }
    z = torch.zeros(B, T, dtype=torch.long)
    labels = {
        "action_type": z,
        "delay": z,
        "queued": z,
        "selected": torch.full((B, T, 4), -1),
        "selected_count": z,
        "target_unit": z - 1,
        "target_location": z - 1,
    }  # no_op only: no argument head is used
    out, _ = m(obs, labels=labels)
    res, _ = alphastar_losses(m, out, labels, torch.ones(B, T, dtype=torch.bool), torch.ones(564))
    for h in ("queued", "selected_units", "target_unit", "target_location"):
        assert res[h][1] == 0 and res[h][0].item() == 0.0, h
    total = sum(v[0] for v in res.values())
    total.backward()
    assert all(torch.isfinite(p.grad).all() for p in m.parameters() if p.grad is not None)


# ------------------------------------------------------------------ averaging
def _ckpts(tmp_path, map_name="3m", hidden=64, seeds=(0, 1)):
    env = sc2_envs.make_batched(map_name, num_envs=1)
    info = env.get_env_info()
    paths = []
    for s in seeds:
        torch.manual_seed(s)
        pol, cri = build_models(info, "gnn", hidden=hidden)
        p = tmp_path / f"{map_name}_{hidden}_{s}.pt"
        save_checkpoint(str(p), pol, cri, info, {"seed": s})
        paths.append(str(p))
    return paths, info


def test_averaging_two_checkpoints_is_the_mean(tmp_path):
    paths, info = _ckpts(tmp_path)
    out = tmp_path / "avg.pt"
    avg = average_checkpoints(paths, str(out), allow_different_runs=True)
    a, b = (torch.load(p, weights_only=True) for p in paths)
    for part in ("actors", "critic"):
        for k, v in a[part].items():
            if v.is_floating_point():
                assert torch.allclose(avg[part][k], (v + b[part][k]) / 2), k
    _, _, ck = load_checkpoint(str(out), info, with_critic=True)
    assert ck["averaged_from"] == paths


def test_averaging_refuses_different_shapes_or_configs(tmp_path):
    p3m, _ = _ckpts(tmp_path, "3m", 64, (0,))
    p3m_wide, _ = _ckpts(tmp_path, "3m", 32, (0,))
    p8m, _ = _ckpts(tmp_path, "8m", 64, (0,))
    with pytest.raises(ValueError, match="different configs"):
        average_checkpoints([p3m[0], p3m_wide[0]])
    with pytest.raises(ValueError, match="different configs"):
        average_checkpoints([p3m[0], p8m[0]])
    ck = torch.load(p3m[0], weights_only=True)
    k = next(iter(ck["actors"]))
    ck["actors"][k] = torch.zeros(1, 2, 3)
    bad = tmp_path / "bad.pt"
    torch.save(ck, bad)
    with pytest.raises(ValueError, match="shape"):
        average_checkpoints([p3m[0], str(bad)])
    with pytest.raises(ValueError, match="at least two"):
        average_checkpoints([p3m[0]])


def test_averaging_refuses_runs_of_different_seeds_unless_asked(tmp_path, monkeypatch):
    # the mean of two independently initialised networks is no trained network (neurons in different orders)
    paths, _ = _ckpts(tmp_path, seeds=(0, 1))
    with pytest.raises(ValueError, match=r"different training seeds .*0.*1.*allow_different_runs=True"):
        average_checkpoints(paths)
    same, _ = _ckpts(tmp_path, "8m", seeds=(5,))
    ck = torch.load(same[0], weights_only=True)
    ck["global_step"] = 1  # a later save of the same run
    later = tmp_path / "later.pt"
    torch.save(ck, later)
    assert average_checkpoints([same[0], str(later)])["averaged_from"] == [same[0], str(later)]
    for record in ("bc", "rl"):  # full-game checkpoints record the seed under bc.args / rl.args
        a, b = ({"format": "f", "config": {}, record: {"args": {"seed": s}}, "model": {"w": torch.ones(1)}} for s in (1, 2))
        pa, pb = tmp_path / f"{record}_a.pt", tmp_path / f"{record}_b.pt"
        torch.save(a, pa), torch.save(b, pb)
        with pytest.raises(ValueError, match="different training seeds"):
            average_checkpoints([str(pa), str(pb)])
    monkeypatch.setattr("sys.argv", ["bc_select.py", "average", *paths, "--out", str(tmp_path / "x.pt")])
    with pytest.raises(SystemExit, match="^average: the files come from runs of different training seeds"):
        load_algo("bc_select").main()
    assert not (tmp_path / "x.pt").exists()


def test_averaging_refuses_two_runs_of_one_seed_and_unreadable_files(tmp_path):
    # found by a tester: two behaviour-cloning runs of seed 1 on different targets averaged without a word, and a
    # truncated file, a pickled list, a missing file or a string for the list gave raw torch / Python errors
    for record in ("bc", "rl"):
        args = ({"seed": 1, "target_dist": t, "epochs": e} for t, e in (("data", 4), ("sqrt", 6)))
        a, b = ({"format": "f", "config": {}, record: {"args": r}, "model": {"w": torch.ones(1)}} for r in args)
        pa, pb = tmp_path / f"{record}_a.pt", tmp_path / f"{record}_b.pt"
        torch.save(a, pa), torch.save(b, pb)
        with pytest.raises(ValueError, match=r"come from different runs .*\['target_dist'\]"):  # epochs may change on resume
            average_checkpoints([str(pa), str(pb)])
        assert average_checkpoints([str(pa), str(pb)], allow_different_runs=True)["model"]["w"].item() == 1.0
    paths, _ = _ckpts(tmp_path, seeds=(3,))
    good = paths[0]
    truncated = tmp_path / "truncated.pt"
    truncated.write_bytes(Path(good).read_bytes()[:1000])
    listed = tmp_path / "list.pt"
    torch.save([1, 2, 3], listed)
    for bad, match in (
        (truncated, "truncated.pt is not a torch checkpoint"),
        (listed, "list.pt holds a list, not a checkpoint"),
        (tmp_path / "absent.pt", "cannot read checkpoint .*absent.pt.*FileNotFoundError"),
        (tmp_path, "cannot read checkpoint"),
    ):
        with pytest.raises(ValueError, match=match):
            average_checkpoints([good, str(bad)])
    with pytest.raises(ValueError, match="is one path; expected a list"):
        average_checkpoints(good)


def test_the_arguments_a_resume_may_change_never_split_one_run():
    # checkpoints saved before and after a resume record the changed flags: the different-runs rule ignores them
    from sc2_envs.training.async_learner import RESUME_CHANGEABLE as A3C
    from sc2_envs.training.checkpoints import RUN_CHANGEABLE_ARGS

    for name in ("happo_gnn", "hatrpo_gnn", "bc_reweight"):
        assert set(load_algo(name).RESUME_CHANGEABLE) <= set(RUN_CHANGEABLE_ARGS), name
    assert set(A3C) <= set(RUN_CHANGEABLE_ARGS)
    # recomputed on a resume (found by a reviewer): happo's num_iterations from --total-timesteps, a3c_upgo's session
    assert {"num_iterations", "session"} <= set(RUN_CHANGEABLE_ARGS)


def test_averaging_refuses_a_file_twice_and_overwriting_an_input(tmp_path):
    # found by a tester: [a, a, b] silently gave (2a + b) / 3, and out=a replaced checkpoint a by the mean
    paths, _ = _ckpts(tmp_path)
    a, b = paths
    with pytest.raises(ValueError, match=re.escape(f"['{a}'] name the same file more than once")):
        average_checkpoints([a, a, b])
    before = Path(a).read_bytes()
    with pytest.raises(ValueError, match=re.escape(f"out='{a}' is one of the input checkpoints")):
        average_checkpoints([a, b], a)
    assert Path(a).read_bytes() == before


# ------------------------------------------------------------------ evaluator and runs
def test_evaluator_reports_wilson_interval_idle_share_and_damage():
    env = sc2_envs.make_batched("3m", num_envs=4, seed=0)
    pol, _ = build_models(env.get_env_info(), "mlp")
    r = evaluate(pol, env, 4, seed=0, greedy=False, behaviour=True)
    assert r["episodes"] == 4
    lo, hi = r["win_ci"]
    assert 0.0 <= lo <= r["win_rate"] <= hi <= 1.0
    assert sum(r["action_shares"]) == pytest.approx(1.0) and r["idle_share"] == r["action_shares"][1]
    assert r["damage_per_episode"] >= 0.0


@pytest.fixture(scope="module")
def demos_3m(tmp_path_factory):
    out = tmp_path_factory.mktemp("demos") / "3m_k2"
    env = sc2_envs.make_batched("3m", num_envs=8, seed=0)
    record_demos(env, heuristic_demonstrator(env), 16, out, SamplingConfig(stride=2), seed=0, log=lambda s: None)
    return out


def test_short_bc_run_on_recorded_3m_reduces_the_loss(demos_3m, tmp_path, capsys):
    args = bc.Args(
        data=str(demos_3m),
        epochs=4,
        batch_size=32,
        reweight_power=1.0,
        run_dir=str(tmp_path / "run"),
        select_by="val-acc",
        eval_episodes=4,
        eval_envs=4,
        average_window=2,
    )
    summary = bc.main(args)
    hist = summary["history"]
    assert hist[-1]["train_loss"] < hist[0]["train_loss"]
    assert (tmp_path / "run" / "best.pt").exists() and len(list((tmp_path / "run").glob("epoch_*.pt"))) == 4
    assert "average" in summary and Path(summary["average"]["checkpoint"]).exists()
    screen = capsys.readouterr().out
    assert "shard_00000.npz" in screen and "training label counts" in screen and " effective " in screen
    assert "train loss" in screen and "(weighted), val loss" in screen and "(unweighted)" in screen
    ck = torch.load(tmp_path / "run" / "epoch_001.pt", weights_only=True)
    assert ck["bc"]["files"] and sum(ck["bc"]["data_counts"]) > 0
    assert ck["global_step"] == 0 and ck["bc"]["epoch"] == 1  # replays only: no env steps
    assert ck["algorithm"] == "bc_reweight"


def _scalar_steps(run_dir: Path) -> dict:
    """``{tag: [step, ...]}`` of the scalars TensorBoard shows for ``run_dir`` (after its purges)."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(run_dir))
    acc.Reload()
    return {tag: [e.step for e in acc.Scalars(tag)] for tag in acc.Tags()["scalars"]}


def _next_second() -> None:
    """Wait for the clock's next second: event files are named by the second, then by a per-process counter
    that sorts as text, so two opened within one second in one process can be read out of order."""
    start = int(time.time())
    while int(time.time()) == start:
        time.sleep(0.02)


def test_resuming_a_finished_behaviour_selected_run_logs_each_epoch_once(demos_3m, tmp_path):
    # found by a reviewer: --resume on a finished run played every epoch again and added a second
    # behaviour/* point per epoch to the TensorBoard curves (the first ones were never purged)
    run = tmp_path / "run"
    common = dict(epochs=2, batch_size=64, hidden=16, select_by="behaviour", eval_episodes=2, eval_envs=2)
    first = bc.main(bc.Args(data=str(demos_3m), run_dir=str(run), **common))
    assert "win_rate" in first["history"][0]["behaviour"]
    before = _scalar_steps(run)
    assert before["behaviour/win_rate"] == [1, 2] and before["bc/val_acc"] == [1, 2]
    _next_second()
    again = bc.main(bc.Args(resume=str(run)))
    assert again["pick"] == first["pick"]
    assert _scalar_steps(run) == before  # every curve: one point per epoch, none dropped
    # a finished run trained longer: the new epoch is added, the first two still have one point each
    _next_second()
    bc.main(bc.Args(resume=str(run), epochs=3))
    steps = _scalar_steps(run)
    assert steps.keys() == before.keys() and all(s == [1, 2, 3] for s in steps.values()), steps


def test_demos_of_another_layout_with_the_same_sizes_are_refused(demos_3m, tmp_path):
    # found by a tester: only the sizes were compared, so demonstrations recorded with other feature options of
    # the same size were trained on and then evaluated on the default simulator's columns
    import shutil

    data = tmp_path / "demos"
    shutil.copytree(demos_3m, data)
    meta = json.loads((data / "meta.json").read_text())
    names = meta["env_info"]["obs_layout"]["enemy_feature_names"]
    meta["env_info"]["obs_layout"]["enemy_feature_names"] = names[:-1] + ["shield"]
    (data / "meta.json").write_text(json.dumps(meta))
    args = bc.Args(data=str(data), epochs=1, run_dir=str(tmp_path / "run"))
    with pytest.raises(ValueError, match=r"recorded with another obs_layout .*keys \['enemy_feature_names'\] differ"):
        bc.main(args)
    assert not (tmp_path / "run").exists()


def test_requesting_more_files_than_exist_is_an_error_unless_smoke(demos_3m, tmp_path):
    args = bc.Args(data=str(demos_3m), epochs=1, num_files=5, run_dir=str(tmp_path / "r1"), eval_episodes=2, eval_envs=2)
    with pytest.raises(ValueError, match="--num-files 5"):
        bc.main(args)
    args = bc.Args(
        data=str(demos_3m), epochs=1, num_files=5, smoke=True, run_dir=str(tmp_path / "r2"), eval_episodes=2, eval_envs=2
    )
    bc.main(args)


@pytest.mark.parametrize(
    "change, message",
    [
        # found by a tester: the first three trained every epoch, then failed in the selection
        ({"select_by": "win-rate"}, "--select-by 'win-rate'; expected one of ['val-acc', 'behaviour']"),
        ({"select_by": "behaviour", "eval_episodes": 0}, "--eval-episodes 0; expected an integer >= 1"),
        ({"select_by": "behaviour", "eval_envs": 0}, "--eval-envs 0; expected an integer >= 1"),
        ({"eval_backend": "sc2_api"}, "--eval-backend 'sc2_api'; expected one of ['lite', 'sc2']"),
        ({"eval_game_steps_per_episode": -1}, "--eval-game-steps-per-episode -1; expected an integer >= 0 (0: no limit)"),
        # found by a reviewer: a bad seed failed in the selection, after every epoch had trained
        ({"select_by": "behaviour", "eval_seed": -1}, "--eval-seed -1; expected an integer in [0, 9223372036854775807]"),
        ({"epochs": 0}, "--epochs 0; expected an integer >= 1"),  # before: max() of an empty history
        ({"batch_size": 0}, "--batch-size 0; expected an integer >= 1"),
        ({"actor": "lstm"}, "--actor 'lstm'; expected one of ['gnn', 'mlp']"),
        ({"val_fraction": 0.0}, "--val-fraction 0.0; expected a share in (0, 1)"),  # before: one episode held out anyway
        ({"val_fraction": 1.0}, "--val-fraction 1.0; expected a share in (0, 1)"),
        ({"num_files": 0}, "--num-files 0; expected an integer >= 1"),
        ({"average_window": -1}, "--average-window -1; expected 0 (off) or a window >= 2"),
        ({"average_window": 1}, "--average-window 1; expected 0 (off) or a window >= 2"),  # before: silently nothing
        # found by a tester: these loaded the data, then trained into NaN weights, failed in Adam or in the
        # re-weighting, or made nested run folders
        ({"learning_rate": float("nan")}, "--learning-rate nan: expected a finite number"),
        ({"learning_rate": -1.0}, "--learning-rate -1.0; expected an Adam learning rate > 0"),
        ({"weight_decay": -1.0}, "--weight-decay -1.0; expected a weight decay >= 0"),
        ({"max_grad_norm": 0.0}, "--max-grad-norm 0.0; expected a gradient-norm bound > 0"),
        ({"reweight_power": -1.0}, "--reweight-power -1.0; expected a power >= 0 (0: plain BC)"),
        ({"weight_clip": (5.0, 1.0)}, "--weight-clip 5.0 1.0; expected 0 < lo <= hi"),
        ({"weight_clip": (0.0, 1.0)}, "--weight-clip 0.0 1.0; expected 0 < lo <= hi"),
        ({"hidden": 0}, "--hidden 0; expected an integer >= 1"),
        ({"hidden": 6}, "--hidden 6; expected a width divisible by the GNN's 4 attention heads"),
        ({"torch_threads": -1}, "--torch-threads -1; expected an integer >= 0 (0: torch's default)"),
        ({"min_frames": -5}, "--min-frames -5; expected an integer >= 0"),
        ({"exp_name": "a/b"}, "--exp-name 'a/b'; expected a name without path separators"),
    ],
)
def test_bad_flags_are_refused_before_loading_data_or_training(tmp_path, change, message):
    args = bc.Args(**{"data": str(tmp_path / "missing"), "run_dir": str(tmp_path / "run"), **change})
    with pytest.raises(ValueError, match=re.escape(message)):
        bc.main(args)
    assert not (tmp_path / "run").exists()


def test_a_data_folder_that_does_not_exist_is_reported_so(tmp_path):
    with pytest.raises(FileNotFoundError, match=re.escape(f"--data {str(tmp_path / 'nope')!r} does not exist")):
        bc.check_data(bc.Args(data=str(tmp_path / "nope")))


def test_a_folder_of_replays_given_as_data_names_the_converter(tmp_path):
    """found by a tester: --data on a folder of .SC2Replay files said only that it has neither meta.json nor dataset.json."""
    (tmp_path / "replays" / "sub").mkdir(parents=True)
    (tmp_path / "replays" / "sub" / "a.SC2Replay").write_bytes(b"")
    data = str(tmp_path / "replays")
    with pytest.raises(FileNotFoundError, match=re.escape(
        f"--data {data!r} holds 1 .SC2Replay file(s), not a dataset; convert them first: "
        f"python -m sc2_envs.replays {data} --out DATASET, then --data DATASET"
    )):  # fmt: skip
        bc.check_data(bc.Args(data=data))


def test_no_limit_on_evaluation_game_length_is_accepted_as_in_a3c_upgo_and_eval_fullgame():
    bc.check_args(bc.Args(eval_game_steps_per_episode=0))  # 0: no limit, as the other two scripts take it


def _replay_dataset_without_sc2(tmp_path, monkeypatch):
    (tmp_path / "ds").mkdir()
    (tmp_path / "ds" / "dataset.json").write_text("{}")  # only its presence marks a replay dataset
    monkeypatch.setenv("SC2PATH", str(tmp_path / "no_sc2"))
    return str(tmp_path / "ds")


@pytest.mark.parametrize(
    ("kind", "change", "flag"),
    [
        ("replays", {"actor": "mlp"}, "--actor mlp"),
        ("replays", {"hidden": 128}, "--hidden 128"),
        ("demos", {"model_preset": "tiny"}, "--model-preset tiny"),
        ("demos", {"seq_len": 8}, "--seq-len 8"),
        ("demos", {"eval_step_mul": 16}, "--eval-step-mul 16"),
        ("demos", {"eval_game_steps_per_episode": 100}, "--eval-game-steps-per-episode 100"),
        ("demos", {"eval_backend": "sc2"}, "--eval-backend sc2"),
    ],
)
def test_a_flag_the_data_kind_does_not_read_is_refused_not_ignored(tmp_path, monkeypatch, kind, change, flag):
    """found by a tester: --actor / --hidden on replay data, and the replay model's and full-game evaluation's flags
    on SMAC demonstrations, were ignored."""
    if kind == "replays":
        data = _replay_dataset_without_sc2(tmp_path, monkeypatch)
    else:
        (tmp_path / "demos").mkdir()
        (tmp_path / "demos" / "meta.json").write_text("{}")  # only its presence marks a demonstration folder
        data = str(tmp_path / "demos")
    with pytest.raises(ValueError, match="^" + re.escape(flag) + r": only .* reads? it; .* it would be ignored"):
        bc.check_data(bc.Args(data=data, **change))
    # given on the command line at its default value (--model-preset mini, --actor gnn), it is refused too
    name = next(iter(change))
    with pytest.raises(ValueError, match=r"only .* reads? it; .* it would be ignored"):
        bc.check_data(bc.Args(data=data), frozenset({name}))
    bc.check_data(bc.Args(data=data), frozenset())  # not given: fine


def test_behaviour_selection_on_the_real_game_without_it_installed_is_refused_before_training(tmp_path, monkeypatch):
    # found by a reviewer: every epoch trained, then the selection died with SC2NotFoundError
    from sc2_envs.full_game.env import SC2NotFoundError

    data = _replay_dataset_without_sc2(tmp_path, monkeypatch)
    args = bc.Args(data=data, run_dir=str(tmp_path / "run"), select_by="behaviour", eval_backend="sc2")
    with pytest.raises(
        SC2NotFoundError, match=re.escape(f"--eval-backend sc2: No SC2_x64 under SC2PATH={str(tmp_path / 'no_sc2')!r}")
    ):
        bc.main(args)
    assert not (tmp_path / "run").exists()


def test_a_seed_beyond_the_games_random_seed_is_refused_before_training(tmp_path, monkeypatch):
    from sc2_envs.full_game.env import MAX_GAME_SEED

    data = _replay_dataset_without_sc2(tmp_path, monkeypatch)
    binary = tmp_path / "no_sc2" / "Versions" / "Base75689" / "SC2_x64"
    binary.parent.mkdir(parents=True)
    binary.touch()
    args = bc.Args(
        data=data,
        run_dir=str(tmp_path / "run"),
        select_by="behaviour",
        eval_backend="sc2",
        eval_envs=4,
        eval_seed=MAX_GAME_SEED,
    )
    with pytest.raises(
        ValueError,
        match=re.escape(
            f"--eval-seed {MAX_GAME_SEED} with --eval-backend sc2; expected an integer in [0, {MAX_GAME_SEED - 3}]"
        ),
    ):
        bc.main(args)
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (dict(eval_envs=70000, eval_episodes=70000), "--eval-envs 70000: expected games at once <= 65536"),
        (dict(eval_step_mul=2**21), "--eval-step-mul 2097152: expected game loops per decision <= 1048576"),
        (dict(eval_game_steps_per_episode=2**62 + 1), f"--eval-game-steps-per-episode {2**62 + 1}: expected game loops <= "),
    ],
)
def test_lite_evaluation_flags_beyond_the_engines_limits_are_refused_before_training(tmp_path, monkeypatch, change, message):
    """found by a tester: the lite vector env refused these only when the first epoch was evaluated, after training."""
    data = _replay_dataset_without_sc2(tmp_path, monkeypatch)
    args = bc.Args(data=data, run_dir=str(tmp_path / "run"), select_by="behaviour", **change)
    with pytest.raises(ValueError, match=re.escape(message)):
        bc.main(args)
    assert not (tmp_path / "run").exists()


def test_the_real_game_missing_is_a_command_line_error_with_status_2(tmp_path, monkeypatch):
    import subprocess
    import sys

    data = _replay_dataset_without_sc2(tmp_path, monkeypatch)
    cmd = [sys.executable, str(REPO / "algos" / "bc_reweight.py"), "--data", data, "--run-dir", str(tmp_path / "run")]
    cmd += ["--select-by", "behaviour", "--eval-backend", "sc2"]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert p.returncode == 2, p.stderr
    assert "--eval-backend sc2: No SC2_x64 under SC2PATH=" in p.stderr and "Traceback" not in p.stderr
    assert not (tmp_path / "run").exists()


def test_a_recording_with_nothing_to_validate_on_is_refused_unless_smoke(tmp_path):
    # found by a tester: one episode left no validation frames, every epoch reported val acc 0.0000 and the
    # val-acc selection silently picked epoch 1
    env = sc2_envs.make_batched("3m", num_envs=1, seed=0)
    record_demos(env, heuristic_demonstrator(env), 1, tmp_path / "one", SamplingConfig(), seed=0, log=lambda s: None)
    args = bc.Args(data=str(tmp_path / "one"), epochs=1, run_dir=str(tmp_path / "run"), eval_episodes=2, eval_envs=2)
    with pytest.raises(ValueError, match="single episode, so none is held out for validation .*pass --smoke"):
        bc.main(args)
    assert not (tmp_path / "run").exists()
    args.smoke, args.run_dir = True, str(tmp_path / "run2")
    assert bc.main(args)["pick"] == 1


def test_an_empty_replay_dataset_is_a_clear_error(tmp_path):
    # found by a tester: a dataset with no shard ended in IndexError from ReplayData (arrays[0])
    (tmp_path / "ds").mkdir()
    (tmp_path / "ds" / "dataset.json").write_text(json.dumps({"shards": 0, "config": {"sample": "actions", "k": 8}}))
    (tmp_path / "ds" / "index.json").write_text("[]")
    with pytest.raises(ValueError, match="ds: no shards selected \\(num_files=None, the dataset has 0\\)"):
        bc.main(bc.Args(data=str(tmp_path / "ds"), run_dir=str(tmp_path / "run")))
    assert not (tmp_path / "run").exists()


def test_a_replay_dataset_without_its_index_is_an_error_naming_the_file_and_the_writer(tmp_path):
    """found by a tester: dataset.json without index.json (a copy cut short) was Errno 2 on the index's path."""
    (tmp_path / "ds").mkdir()
    (tmp_path / "ds" / "dataset.json").write_text(json.dumps({"shards": 0, "config": {"sample": "actions", "k": 8}}))
    message = f"{tmp_path / 'ds'}: index.json is missing; expected a dataset written by sc2_envs.replays"
    with pytest.raises(FileNotFoundError, match=re.escape(message)):
        bc.main(bc.Args(data=str(tmp_path / "ds"), run_dir=str(tmp_path / "run")))
    assert not (tmp_path / "run").exists()


@pytest.fixture(scope="module")
def replays_tiny(test_data_dir, tmp_path_factory):
    """The three committed Simple64 replays as a small dataset (32 entities, a 16x16 raw grid)."""
    pytest.importorskip("s2protocol", reason="converting replays needs s2protocol")
    from sc2_envs.replays.dataset import convert_replays, find_replays
    from sc2_envs.replays.extract import StreamConfig

    files = find_replays(test_data_dir / "replays" / "mas_simple64")[:3]
    assert len(files) == 3
    out = tmp_path_factory.mktemp("replays") / "ds"
    convert_replays(
        files, out, StreamConfig(max_entities=32, max_selected=8, raw_resolution=16), progress=False, log=lambda s: None
    )
    return out


def _replay_copy_with(src: Path, dst: Path, corrupt) -> Path:
    """A copy of the replay dataset ``src`` whose first shard's columns ``corrupt`` edited in place."""
    import shutil

    shutil.copytree(src, dst)
    shard = dst / "shard_00000.npz"
    with np.load(shard) as z:
        a = {k: z[k] for k in z.files}
    corrupt(a)
    np.savez_compressed(shard, **a)
    return dst


def _first_row_using(a: dict, head: int) -> int:
    from sc2_envs.full_game import spec

    uses = spec.argument_masks()[a["function"].astype(np.int64), head].astype(bool)
    if head == 3:
        uses &= a["selected_count"] > 0
    if head == 4:
        uses &= a["target_unit"] >= 0
    return int(np.flatnonzero(uses)[0])


def _target_beyond_the_entities(a):
    i = _first_row_using(a, 4)
    a["target_unit"][i] = a["entity_count"][i]


def _an_enemy_selected(a):
    i = _first_row_using(a, 3)
    alliance = a["entities"][i, : a["entity_count"][i], 1]
    a["selected"][i, 0] = int(np.flatnonzero(alliance == 4)[0])


def _a_unit_selected_twice(a):
    i = _first_row_using(a, 3)
    a["selected_count"][i] = max(2, int(a["selected_count"][i]))
    a["selected"][i, 1] = a["selected"][i, 0]


def test_every_label_of_the_committed_replays_is_one_the_model_can_choose(replays_tiny):
    from sc2_envs.replays.dataset import ReplayData

    data = ReplayData(str(replays_tiny), None, 4, 0.34, 1)
    for windows in (data.train_windows, data.val_windows):
        data.batch(windows, "cpu", data.E, data.K)  # raises on a label the pointer masks exclude


@pytest.mark.parametrize("corrupt", [_target_beyond_the_entities, _an_enemy_selected, _a_unit_selected_twice])
def test_a_replay_label_the_model_masks_out_is_refused_naming_its_row(replays_tiny, tmp_path, corrupt):
    # found by a reviewer: such a label was forced as a target at the finite MASKED_LOGIT and cost ~1e10
    from sc2_envs.replays.dataset import ReplayData

    data = ReplayData(str(_replay_copy_with(replays_tiny, tmp_path / "ds", corrupt)), None, 4, 0.34, 1)
    with pytest.raises(ValueError, match=r"row \d+ \(.*SC2Replay, player \d, game loop \d+\): action .*masks this label"):
        for windows in (data.train_windows, data.val_windows):
            data.batch(windows, "cpu", data.E, data.K)


# games of 80 game loops (10 decisions) against the lite bot: seconds of CPU per checkpoint
REPLAY_RUN = {"epochs": 2, "batch_size": 8, "model_preset": "tiny", "val_fraction": 0.34, "eval_episodes": 2}
REPLAY_EVAL = {"eval_envs": 2, "eval_game_steps_per_episode": 80}


def test_replay_run_trains_every_alphastar_head(replays_tiny, tmp_path):
    summary = bc.main(bc.Args(data=str(replays_tiny), **REPLAY_RUN, reweight_power=1.0, run_dir=str(tmp_path / "rv")))
    h = summary["history"][0]
    assert set(h["val_head_acc"]) == {"action_type", "delay", "queued", "selected_units", "target_unit", "target_location"}
    assert math.isfinite(h["train_loss"])
    assert "behaviour" not in h  # val-acc selection without averaging plays no game


def test_the_selection_stride_line_names_its_value_and_source():
    from sc2_envs.training.bc_selection import fullgame_play_stride

    assert fullgame_play_stride(16, 32) == "selection games: 16 game loops per decision (--eval-step-mul)"
    assert fullgame_play_stride(0, 32).startswith("selection games: 32 game loops per decision (the dataset's every_k")
    assert fullgame_play_stride(0, None).startswith("selection games: 8 game loops per decision (mini-AlphaStar's")


def test_behaviour_selection_on_replays_plays_every_epoch_against_the_lite_bot(replays_tiny, tmp_path, capsys):
    args = bc.Args(
        data=str(replays_tiny),
        **REPLAY_RUN,
        **REPLAY_EVAL,
        select_by="behaviour",
        average_window=2,
        run_dir=str(tmp_path / "rb"),
    )
    summary = bc.main(args)
    for r in summary["history"]:
        b = r["behaviour"]
        assert b["episodes"] == 2 and 0.0 <= b["idle_share"] <= 1.0
        assert b["fullgame"]["games"] == 2 and b["fullgame"]["mean_steps"] == 10  # 80 loops / 8 per decision
    pick = max(summary["history"], key=lambda r: behaviour_key(r["behaviour"]))
    assert summary["pick"] == pick["epoch"]
    assert torch.load(tmp_path / "rb" / "best.pt", weights_only=True)["bc"]["epoch"] == pick["epoch"]
    avg = summary["average"]
    assert avg["checkpoint"].endswith("avg_001_002.pt") and avg["behaviour"]["fullgame"]["games"] == 2
    assert torch.load(avg["checkpoint"], weights_only=True)["format"] == torch.load(tmp_path / "rb" / "best.pt")["format"]
    screen = capsys.readouterr().out
    assert "epoch 2 (val acc" in screen and "average of epochs 1..2" in screen
    # the committed replays sample actions (no stride): the games are played at mini-AlphaStar's 8, and said so
    assert "selection games: 8 game loops per decision (mini-AlphaStar's default" in screen


def test_full_game_selection_repeats_its_figures(replays_tiny, tmp_path):
    runs = {}
    for name in ("a", "b"):
        args = bc.Args(data=str(replays_tiny), **{**REPLAY_RUN, "epochs": 1}, **REPLAY_EVAL, select_by="behaviour")
        runs[name] = bc.main(dataclasses.replace(args, run_dir=str(tmp_path / name)))["history"][0]["behaviour"]
        del runs[name]["fullgame"]["policy"]  # the checkpoint's path, in its own run folder
    assert runs["a"] == runs["b"]  # the games' bot jitter and the sampled actions both come from --eval-seed


def test_full_game_selection_plays_with_the_eval_flags(replays_tiny, tmp_path, monkeypatch):
    from sc2_envs.training import fullgame_evaluation

    calls = []
    real = fullgame_evaluation.evaluate_fullgame

    def spy(policy, games, seed, **kw):
        calls.append((games, seed, kw))
        return real(policy, games, seed, **kw)

    monkeypatch.setattr(fullgame_evaluation, "evaluate_fullgame", spy)
    args = bc.Args(
        data=str(replays_tiny),
        **{**REPLAY_RUN, "epochs": 1},
        **REPLAY_EVAL,
        select_by="behaviour",
        eval_seed=123,
        eval_greedy=True,
    )
    bc.main(dataclasses.replace(args, run_dir=str(tmp_path / "r")))
    ((games, seed, kw),) = calls
    assert (games, seed) == (2, 123)
    assert kw["num_envs"] == 2 and kw["backend"] == "lite" and kw["game_steps_per_episode"] == 80 and kw["greedy"]
    assert kw["step_mul"] == 0  # the step_mul the checkpoint was trained at (none recorded for event-sampled data: 8)


def test_a_fixed_stride_dataset_trains_a_policy_that_decides_at_its_stride(test_data_dir, tmp_path):
    pytest.importorskip("s2protocol", reason="converting replays needs s2protocol")
    from sc2_envs.replays.dataset import convert_replays, find_replays
    from sc2_envs.replays.extract import StreamConfig

    files = find_replays(test_data_dir / "replays" / "mas_simple64")[:3]
    data = tmp_path / "k16"
    cfg = StreamConfig(max_entities=32, max_selected=8, raw_resolution=16, sample="every_k", k=16)
    convert_replays(files, data, cfg, progress=False, log=lambda s: None)
    args = bc.Args(
        data=str(data), **{**REPLAY_RUN, "epochs": 1}, **REPLAY_EVAL, select_by="behaviour", run_dir=str(tmp_path / "r")
    )
    (rec,) = bc.main(args)["history"]
    assert torch.load(tmp_path / "r" / "epoch_001.pt", weights_only=True)["bc"]["step_mul"] == 16
    assert rec["behaviour"]["fullgame"]["mean_steps"] == 5 and rec["behaviour"]["fullgame"]["step_mul"] == 16  # 80 / 16
    forced = bc.main(dataclasses.replace(args, eval_step_mul=8, run_dir=str(tmp_path / "r8")))["history"][0]
    assert forced["behaviour"]["fullgame"]["mean_steps"] == 10


# ------------------------------------------------------------------ algos/bc_select.py (CLI smoke run)
@pytest.mark.parametrize(
    "change, message",
    [
        # before: no checkpoint printed the header and exited 0 having evaluated nothing; a missing file
        # (or a bad flag) was found only when its turn came, after the checkpoints before it were played
        ({"checkpoints": []}, "eval needs at least one checkpoint file"),
        ({"checkpoints": ["CK", "missing.pt"]}, "eval: no such checkpoint file(s) ['missing.pt']"),
        ({"episodes": 0}, "eval --episodes 0: expected an integer >= 1"),
        ({"num_envs": 0}, "eval --num-envs 0: expected an integer >= 1"),
        ({"map": "3z"}, "eval --map '3z'; expected one of"),
        # before: KeyError: 'config' / KeyError: 101 from torch.load's result, in that checkpoint's turn
        ({"checkpoints": ["CK", "NOTCK"]}, "eval: checkpoint 'NOTCK' is not a 'sc2_envs.class_actor_critic/1' checkpoint"),
        ({"checkpoints": ["TXT"]}, "eval: checkpoint 'TXT' could not be read as a torch file"),
    ],
)
def test_bc_select_eval_refuses_a_bad_command_line_before_playing(tmp_path, change, message):
    from conftest import REPO

    sel = load_algo("bc_select")
    ck = str(REPO / "checkpoints" / "2s3z_gnn.pt")
    torch.save({"a": 1}, tmp_path / "notck.pt")
    (tmp_path / "txt.pt").write_text("hello")
    files = {"CK": ck, "NOTCK": str(tmp_path / "notck.pt"), "TXT": str(tmp_path / "txt.pt")}
    message = message.replace("NOTCK", files["NOTCK"]).replace("TXT", files["TXT"])
    change = {k: [files.get(p, p) for p in v] if k == "checkpoints" else v for k, v in change.items()}
    with pytest.raises(SystemExit, match=re.escape(message)):
        sel.check_eval(sel.Eval(**{"checkpoints": [ck], **change}))
    sel.check_eval(sel.Eval(checkpoints=[ck], map="protoss_5_vs_5"))  # a SMACv2 scenario is a valid --map


def test_bc_select_records_evaluates_and_averages_checkpoints(tmp_path):
    import subprocess
    import sys

    from conftest import REPO

    paths, _ = _ckpts(tmp_path)
    script = str(REPO / "algos" / "bc_select.py")

    def run(*cli):
        out = subprocess.run([sys.executable, script, *cli], cwd=REPO, capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stdout + out.stderr
        return out.stdout

    run("record", paths[0], "--out", str(tmp_path / "demos"), "--episodes", "2", "--num-envs", "2")
    meta = json.loads((tmp_path / "demos" / "meta.json").read_text())
    assert meta["episodes"] == 2 and meta["demonstrator"] == paths[0]
    text = run("eval", *paths, "--episodes", "2", "--num-envs", "2")
    header, *lines = text.splitlines()
    assert [line.split(":")[0] for line in lines] == paths and "idle" in text
    # sampled by default (eval_transfer.py is greedy): the first line says which
    assert (
        header.startswith("eval: 2 checkpoint(s) on each checkpoint's own map, 2 episodes each")
        and "sampled actions" in header
    )
    assert "greedy (argmax) actions" in run("eval", paths[0], "--episodes", "1", "--num-envs", "1", "--greedy").splitlines()[0]
    run("average", *paths, "--out", str(tmp_path / "avg.pt"), "--allow-different-runs")
    assert torch.load(tmp_path / "avg.pt", weights_only=True)["averaged_from"] == paths


def test_bc_select_eval_builds_at_most_episodes_envs_and_repeats_its_sampled_figures(monkeypatch):
    bc_select = load_algo("bc_select")
    built = []
    make = sc2_envs.make_batched
    monkeypatch.setattr(sc2_envs, "make_batched", lambda *a, **k: built.append(k["num_envs"]) or make(*a, **k))
    ckpt = str(REPO / "checkpoints" / "marine_budget" / "3m8m_seed1_gnn.pt")
    greedy_few = bc_select.evaluate_checkpoint(ckpt, "3m", episodes=3, num_envs=32, greedy=True)
    assert built == [3] and greedy_few["episodes"] == 3
    # greedy: the quota rule counts env b's first episodes, so the env count does not matter
    assert bc_select.evaluate_checkpoint(ckpt, "3m", episodes=3, num_envs=3, greedy=True) == greedy_few
    # sampled: the same call gives the same figures, whatever drew from torch's generator in between
    sampled = bc_select.evaluate_checkpoint(ckpt, "3m", episodes=3, num_envs=3)
    torch.rand(17)
    assert bc_select.evaluate_checkpoint(ckpt, "3m", episodes=3, num_envs=3) == sampled


def test_selection_lines_give_full_game_length_in_eval_fullgames_minutes_and_smac_length_in_env_steps():
    # found by a reviewer: the selection line printed "length 100.0" (decisions) where eval_fullgame.py prints minutes
    from sc2_envs.training.evaluation import format_result

    smac = {"win_rate": 0.5, "win_ci": (0.1, 0.9), "wins": 1, "episodes": 2, "idle_share": 0.25}
    smac |= {"damage_per_episode": 10.0, "mean_return": 0.0, "mean_length": 100.0}
    assert format_result("epoch 1", smac).endswith("length 100.0 env steps")
    full = smac | {"fullgame": {"game_length_min": 13.392857}}  # 18,000 game loops
    assert format_result("epoch 1", full).endswith("length 13.39 min")


def _bc_doc_try_it_commands() -> list[str]:
    text = (REPO / "docs" / "bc.md").read_text()
    block = text.split("**Try it**", 1)[1].split("```bash\n", 1)[1].split("```", 1)[0]
    return [" ".join(line.split()) for line in block.replace("\\\n", " ").strip().split("\n") if line.strip()]


def test_bc_doc_tries_the_committed_replays_and_explains_the_large_set_before_using_it():
    # found by a reviewer: the full-game commands used $SC2_ENVS_SHARED_DATA unexplained, never the committed set
    commands = _bc_doc_try_it_commands()
    assert commands[0].startswith("python -m sc2_envs.replays tests/data/replays/mas_simple64 ")
    assert len(list((REPO / "tests/data/replays/mas_simple64").glob("*.SC2Replay"))) == 3
    assert any("bc_reweight.py" in c and "--select-by behaviour" in c for c in commands)
    text = (REPO / "docs" / "bc.md").read_text()
    explained = text.index("`$SC2_ENVS_SHARED_DATA`: an environment variable")
    assert explained < text.index("$SC2_ENVS_SHARED_DATA/replays/mas_simple64")
    assert "liuruoze/Useful-Big-Resources" in text[explained - 400 : explained]


@pytest.mark.slow
def test_bc_doc_try_it_commands_run(tmp_path):
    import shlex
    import subprocess
    import sys

    pytest.importorskip("s2protocol", reason="converting replays needs s2protocol")
    for cmd in _bc_doc_try_it_commands():
        argv = [a.replace("/tmp/", f"{tmp_path}/") for a in shlex.split(cmd)]
        argv[0] = sys.executable
        p = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, f"{cmd}\n{p.stderr[-2000:]}"
    assert (tmp_path / "bc_try" / "best.pt").is_file()
