"""Multi-map training (algos/happo_gnn.py / hatrpo_gnn.py --map A B): batch layout, checkpoints, learning."""

import csv
import subprocess
import sys

import pytest
import torch
from conftest import REPO, load_algo

import sc2_envs
from models import build_models, build_multi_map_models, checkpoint_maps, load_checkpoint, save_checkpoint, zero_shot_views
from models.minibatches import minibatch_indices

happo = load_algo("happo_gnn")
hatrpo = load_algo("hatrpo_gnn")
transfer_table = load_algo("transfer_table", "benchmarks")


def _infos(*maps):
    return [sc2_envs.make_batched(m, num_envs=1).get_env_info() for m in maps]


def _batches(maps, num_envs=3, seed=0):
    envs = [sc2_envs.make_batched(m, num_envs=num_envs, seed=seed) for m in maps]
    return envs, [e.reset(seed=seed) for e in envs]


# ---------------------------------------------------------------------------- models shared across maps


def test_one_map_builds_exactly_what_build_models_builds():
    (info,) = _infos("2s3z")
    torch.manual_seed(0)
    p1, c1 = build_models(info, "gnn", hidden=16)
    torch.manual_seed(0)
    p2, c2, pols, crits = build_multi_map_models([info], "gnn", hidden=16)
    assert pols == [p2] and crits == [c2]
    for a, b in ((p1, p2), (c1, c2)):
        sa, sb = a.state_dict(), b.state_dict()
        assert sa.keys() == sb.keys() and all(torch.equal(sa[k], sb[k]) for k in sa)


def test_views_share_parameters_and_bind_each_map():
    policy, critic, pols, crits = build_multi_map_models(_infos("3m", "8m"), "gnn", hidden=16)
    assert pols[1].actors is policy.actors and crits[1].net is critic.net and crits[1].value_norm is critic.value_norm
    assert [p.n_agents for p in pols] == [3, 8] and [p.n_actions for p in pols] == [9, 14]
    assert pols[1].state_dict().keys() == policy.state_dict().keys()
    with torch.no_grad():
        next(policy.actors["marine"].parameters()).add_(1.0)  # a step through one view is a step of every view
    assert all(torch.equal(a, b) for a, b in zip(policy.parameters(), pols[1].parameters(), strict=True))


@pytest.mark.parametrize(
    "maps, actor, message",
    [
        (("2s3z", "3m"), "gnn", "maps 2s3z and 3m cannot share gnn models"),
        (("2s3z", "6h_vs_8z"), "gnn", "cannot share gnn models"),  # hydralisks have no shield column
        (("3m", "8m"), "mlp", "a flat MLP needs identical sizes on every map; use --actor gnn"),
        # equal sizes, but type bit 0 is a marine on one and a zergling on the other
        (("terran_5_vs_5", "zerg_5_vs_5"), "mlp", r"terran_5_vs_5 and zerg_5_vs_5 cannot share mlp models.*'marine'"),
        (("terran_5_vs_5", "zerg_5_vs_5"), "gnn", "terran_5_vs_5 and zerg_5_vs_5 cannot share gnn models"),
    ],
)
def test_maps_that_cannot_share_weights_are_refused(maps, actor, message):
    with pytest.raises(ValueError, match=message):
        build_multi_map_models(_infos(*maps), actor, hidden=16)


def test_maps_with_other_unit_type_lists_share_one_vocabulary():
    """2s3z (stalker, zealot bits), 1c3s5z (colossus, stalker, zealot) and 3s_vs_5z (no type bits: one
    type per side) read their types into one vocabulary, so one set of actors serves all three."""
    from models import ObsParser

    infos = _infos("2s3z", "1c3s5z", "3s_vs_5z")
    policy, critic, pols, crits = build_multi_map_models(infos, "gnn", hidden=16)
    assert policy.spec["type_vocab"] == critic.spec["type_vocab"] == ["stalker", "zealot", "colossus"]
    assert policy.classes == ["stalker", "zealot", "colossus"]
    envs, outs = _batches(("2s3z", "1c3s5z", "3s_vs_5z"), num_envs=2)
    for pol, crit, info, env, out in zip(pols, crits, infos, envs, outs, strict=True):
        ents = pol.parser(out["obs"])
        types = ents.own[..., -3:]  # own block: move, health, shield, type bits (no timestep on v1 maps)
        want = torch.tensor([[float(t == v) for v in policy.spec["type_vocab"]] for t in info["agent_unit_types"]])
        assert torch.equal(types, want.expand_as(types)), info["map_name"]
        seen = ents.enemy_mask.unsqueeze(-1).float()
        assert torch.equal(ents.enemies[..., -3:] * (1 - seen), torch.zeros_like(ents.enemies[..., -3:]))  # hidden rows stay 0
        act, _ = pol.act(out["obs"], out["avail_actions"])
        assert bool(out["avail_actions"].gather(-1, act.unsqueeze(-1)).all())
        assert torch.isfinite(crit(out["state"])).all()
        env.step(act)
    # a single map reads its own vocabulary, as before; a type outside a vocabulary is refused by name
    assert ObsParser(infos[0]).dims()["type_vocab"] == ["stalker", "zealot"]
    with pytest.raises(ValueError, match=r"1c3s5z has unit types \['colossus'\]"):
        ObsParser(infos[1], vocab=["stalker", "zealot"])


# ---------------------------------------------------------------------------- the multi-map batch layout


def test_each_map_acts_with_its_own_avail_mask():
    """3m has 9 actions, 8m 14: each map's logits, masks and actions keep their own width, and no
    unavailable action is ever sampled on either map."""
    torch.manual_seed(0)
    _, _, pols, _ = build_multi_map_models(_infos("3m", "8m"), "gnn", hidden=16)
    envs, outs = _batches(("3m", "8m"), num_envs=4)
    for pol, env, out in zip(pols, envs, outs, strict=True):
        for _ in range(5):
            avail = out["avail_actions"]
            logits = pol.logits(out["obs"])
            assert logits.shape == avail.shape == (4, env.n_agents, env.n_actions)
            act, logp = pol.act(out["obs"], avail)
            assert bool(avail.gather(-1, act.unsqueeze(-1)).all())
            assert torch.isfinite(logp).all()
            out = env.step(act)
    with pytest.raises(ValueError, match=r"expected \[B, 3, obs_size\]"):
        pols[0].act(outs[1]["obs"], outs[1]["avail_actions"])  # 8m's batch through 3m's view


def test_minibatches_hold_every_map_in_its_own_index_range():
    torch.manual_seed(0)
    mbs = minibatch_indices([12, 20], 4, "cpu")
    assert len(mbs) == 4 and all(len(mb) == 2 for mb in mbs)
    assert [tuple(len(i) for i in mb) for mb in mbs] == [(3, 5)] * 4  # the same share of every map
    for k, n in enumerate((12, 20)):
        rows = torch.cat([mb[k] for mb in mbs])
        assert sorted(rows.tolist()) == list(range(n))  # a partition of map k's own rows
    torch.manual_seed(0)
    (single,) = zip(*minibatch_indices([12], 4, "cpu"), strict=True)
    torch.manual_seed(0)
    assert all(torch.equal(a, b) for a, b in zip(single, torch.randperm(12).split(3), strict=True))  # CleanRL's


class _Spy(torch.nn.Module):
    """A critic view that records the states it is given."""

    def __init__(self, critic, calls):
        super().__init__()
        self.critic, self.calls, self.value_norm = critic, calls, critic.value_norm

    def forward(self, state):
        self.calls.append(state)
        return self.critic(state)


def test_critic_minibatches_never_mix_the_states_of_two_maps():
    torch.manual_seed(0)
    _, _, _, crits = build_multi_map_models(_infos("3m", "8m"), "gnn", hidden=16)
    envs, outs = _batches(("3m", "8m"), num_envs=6)
    calls = [[], []]
    spies = [_Spy(c, calls[k]) for k, c in enumerate(crits)]
    states = [o["state"] for o in outs]
    returns = [torch.randn(6), torch.randn(6) + 5.0]
    values = [torch.randn(6), torch.randn(6)]
    data = [{"states": s, "returns": r, "values": v} for s, r, v in zip(states, returns, values, strict=True)]
    args = happo.Args()
    for mb in minibatch_indices([6, 6], 2, "cpu"):
        loss = happo.critic_backward(spies, data, mb, args, 1 << 62)
        assert torch.isfinite(loss)
        for k in range(2):
            assert torch.equal(calls[k][-1], states[k][mb[k]])  # map k's rows, through map k's view only
        # in passes of 2 states every map's rows still go to its own view only
        for k in range(2):
            calls[k].clear()
        happo.critic_backward(spies, data, mb, args, 2)
        for k in range(2):
            assert torch.equal(torch.cat(calls[k]), states[k][mb[k]])
    assert all(s.shape[-1] == 48 for s in calls[0]) and all(s.shape[-1] == 168 for s in calls[1])
    # the loss pools the samples: equal to the loss of one view over the concatenated values
    torch.manual_seed(1)
    mb = minibatch_indices([6, 6], 1, "cpu")[0]
    vn_state = {k: v.clone() for k, v in crits[0].value_norm.state_dict().items()}
    got = happo.critic_backward(crits, data, mb, args, 1 << 62)
    crits[0].value_norm.load_state_dict(vn_state)
    new = torch.cat([crits[k](states[k][mb[k]]) for k in range(2)])
    ret, old = torch.cat([returns[k][mb[k]] for k in range(2)]), torch.cat([values[k][mb[k]] for k in range(2)])
    vn = crits[0].value_norm
    vn.update(ret)
    want = happo.value_loss(new, vn.normalize(old), vn.normalize(ret), 0.2, True, 10.0).mean()
    assert torch.allclose(got, want)


def _class_parts(seed=0):
    """Each map's marine agent-steps, gathered as the training loop gathers them, with the gradient
    path back to that map's observations: ``(dist, actions, behaviour, advantages, factor)`` per map."""
    torch.manual_seed(seed)
    _, _, pols, _ = build_multi_map_models(_infos("3m", "8m"), "gnn", hidden=16)
    envs, outs = _batches(("3m", "8m"), num_envs=4, seed=seed)
    parts, obs = [], []
    for pol, out in zip(pols, outs, strict=True):
        o = out["obs"].clone().requires_grad_(True)
        R, N = o.shape[:2]
        rows, pos, flat = pol.class_rows("marine", o.detach(), torch.ones(R, N))
        dist = pol.class_dist_at("marine", o.reshape(R * N, -1)[flat], out["avail_actions"].reshape(R * N, -1)[flat], pos)
        act = dist.sample()
        parts.append((dist, act, dist.log_prob(act).detach() - 0.1, torch.randn(rows.numel()), (torch.rand(R) + 0.5)[rows]))
        obs.append(o)
    return parts, obs


def test_class_loss_over_maps_is_the_alive_mean_over_all_their_agents():
    parts, _ = _class_parts()
    sums = [happo.happo_actor_loss(*p, 0.2) for p in parts]
    n = sum(p[1].numel() for p in parts)  # alive agent-steps of both maps: 4 x 3 and 4 x 8
    pg, ent = (sums[0][0] + sums[1][0]) / n, (sums[0][1] + sums[1][1]) / n
    # one mean over every agent-step of both maps: -mean(M * min(r A, clip(r) A)), mean entropy
    ratio = torch.cat([(d.log_prob(a) - b).exp() for d, a, b, _, _ in parts])
    adv, factor = torch.cat([p[3] for p in parts]), torch.cat([p[4] for p in parts])
    want = -(factor * torch.min(ratio * adv, ratio.clamp(0.8, 1.2) * adv)).mean()
    assert torch.allclose(pg, want)
    assert torch.allclose(ent, torch.cat([p[0].entropy() for p in parts]).mean())


def test_a_maps_loss_has_no_gradient_through_another_maps_observations():
    parts, obs = _class_parts()
    pg, *_ = happo.happo_actor_loss(*parts[0], 0.2)  # map 0's part alone
    pg.backward()
    assert obs[0].grad is not None and obs[0].grad.abs().sum() > 0
    assert obs[1].grad is None


def test_hatrpo_step_over_two_maps_moves_the_shared_actor_within_the_trust_region():
    torch.manual_seed(0)
    _, _, pols, _ = build_multi_map_models(_infos("3m", "8m"), "gnn", hidden=16)
    envs, outs = _batches(("3m", "8m"), num_envs=8)
    obs = [o["obs"] for o in outs]
    avail = [o["avail_actions"] for o in outs]
    with torch.no_grad():  # as the rollout acts
        act, logp = zip(*(p.act(o, a) for p, o, a in zip(pols, obs, avail, strict=True)), strict=True)
    adv = [torch.randn(8 * p.n_agents) for p in pols]
    factor = [torch.ones(8 * p.n_agents) for p in pols]
    pos = [torch.arange(p.n_agents).repeat(8) for p in pols]  # every agent alive: all agent-steps, row-major
    flat = [[x.reshape(8 * x.shape[1], *x.shape[2:]) for x in xs] for xs in (obs, avail, act, logp)]
    args = hatrpo.Args(kl_threshold=0.01)
    stats = hatrpo.trpo_step(pols, "marine", *flat, adv, factor, pos, args)
    assert [t.shape for t in stats["new_logp"]] == [(8 * 3,), (8 * 8,)]
    assert all(torch.allclose(o, b) for o, b in zip(stats["old_logp"], flat[3], strict=True))  # behaviour = current policy
    assert stats["step_accepted"] == 1.0 and 0.0 < stats["kl"] < 0.01
    assert all(not torch.equal(o, n) for o, n in zip(stats["old_logp"], stats["new_logp"], strict=True))  # both maps


# ---------------------------------------------------------------------------- checkpoints and their rebinding


def _multi_checkpoint(path, maps):
    torch.manual_seed(0)
    infos = _infos(*maps)
    policy, critic, _, _ = build_multi_map_models(infos, "gnn", hidden=8, heads=2)
    save_checkpoint(str(path), policy, critic, infos[0], {"map": list(maps)}, global_step=7, maps=list(maps))
    return str(path)


@pytest.mark.parametrize("maps", [("3m", "8m"), ("2s3z", "3s5z"), ("MMM", "MMM2")], ids=["marines", "protoss", "mmm"])
def test_multi_map_checkpoint_rebinds_to_every_map_of_its_matrix_row(tmp_path, maps):
    path = _multi_checkpoint(tmp_path / "ckpt.pt", maps)
    raw = torch.load(path, weights_only=True)
    assert raw["config"]["train_maps"] == list(maps) and raw["config"]["map_name"] == maps[0]
    assert checkpoint_maps(raw["config"]) == list(maps)
    cells = transfer_table.matrix_cells(raw["config"], transfer_table.MATRIX_MAPS)
    covered = [m for m, why in cells.items() if not why]
    assert set(maps) <= set(covered)
    for m in covered:
        env = sc2_envs.make_batched(m, num_envs=2, seed=0)
        policy, critic, _ = load_checkpoint(path, env.get_env_info())
        out = env.reset(seed=0)
        act, _ = policy.act(out["obs"], out["avail_actions"], greedy=True)
        assert bool(out["avail_actions"].gather(-1, act.unsqueeze(-1)).all())
        assert torch.isfinite(critic(out["state"])).all()
    for m, why in cells.items():
        if why:  # outside the row: the loader refuses too, naming the checkpoint's maps
            with pytest.raises(ValueError, match=f"trained on {maps[0]}"):
                load_checkpoint(path, sc2_envs.make_batched(m, num_envs=1).get_env_info())


def test_single_map_checkpoint_has_no_train_maps_key(tmp_path):
    (info,) = _infos("3m")
    policy, critic = build_models(info, "gnn", hidden=8, heads=2)
    save_checkpoint(str(tmp_path / "c.pt"), policy, critic, info, {"map": "3m"}, maps=["3m"])
    cfg = torch.load(tmp_path / "c.pt", weights_only=True)["config"]
    assert "train_maps" not in cfg and checkpoint_maps(cfg) == ["3m"]


# ---------------------------------------------------------------------------- command line and a short run


def _run(script, cwd, *extra, check=True):
    cmd = [sys.executable, str(REPO / "algos" / script), "--no-cuda", *extra]
    res = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=600, check=False)
    if check:
        assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-4000:]
    return res


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--map", "3m", "8m", "--num-envs", "5"], "--num-envs 5: expected a multiple of the number of maps (2)"),
        (["--map", "3m", "3m"], "--map 3m 3m: expected distinct maps"),
        (["--map", "3m", "2s3z"], "--map 3m 2s3z: maps 3m and 2s3z cannot share gnn models"),
        (["--map", "3m", "8m", "--num-minibatches", "3"], "a divisor of each map's batch of 8 env steps"),
    ],
    ids=["envs-not-divisible", "duplicate", "other-classes", "minibatches"],
)
def test_bad_multi_map_settings_are_one_line_errors(tmp_path, flags, message):
    res = _run("happo_gnn.py", tmp_path, "--num-envs", "4", "--num-steps", "4", "--total-timesteps", "16", *flags, check=False)
    assert res.returncode == 2 and res.stderr.count("\n") == 1, res.stderr[-2000:]
    assert message in res.stderr, res.stderr
    assert not (tmp_path / "runs").exists()


def _eval_rows(run_dir):
    with open(run_dir / "eval.csv") as f:
        return [{k: float(v) for k, v in r.items()} for r in csv.DictReader(f)]


def _scalars(run_dir):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(run_dir))
    acc.Reload()
    return {tag: [e.value for e in acc.Scalars(tag)] for tag in acc.Tags()["scalars"]}


TINY = ["--map", "3m", "8m", "--seed", "3", "--num-envs", "4", "--num-steps", "4", "--hidden", "16"]
TINY += ["--eval-episodes", "2", "--eval-interval", "2"]


@pytest.mark.parametrize("script", ["happo_gnn.py", "hatrpo_gnn.py"])
def test_multi_map_run_logs_every_map_and_resumes_bit_for_bit(tmp_path, script):
    """Two maps, 2 iterations: the configuration is printed first, eval.csv and TensorBoard have the
    all-map and per-map figures, the checkpoint records both maps and loads on each; a run stopped
    after 1 iteration and resumed ends with the parameters of the uninterrupted run, bit for bit."""
    exp = script[: -len(".py")]
    (tmp_path / "a").mkdir(), (tmp_path / "b").mkdir()
    out = _run(script, tmp_path / "a", *TINY, "--total-timesteps", "32").stdout
    lines = out.splitlines()
    assert lines[0].startswith(f"{exp.split('_')[0].upper()} (gnn) on 2 maps 3m, 8m | backend sim | 4 envs (2 per map)")
    assert "device cpu" in lines[0]
    assert lines[1].startswith("  3m: 2 envs, obs 30, state 48, actions 9, agents 3 (marine x3)")
    assert lines[2].startswith("  8m: 2 envs, obs 80, state 168, actions 14, agents 8 (marine x8)")
    assert "env " in lines[-1] and "% of the iteration time" in lines[-1]
    (run_dir,) = (tmp_path / "a" / "runs").iterdir()
    assert run_dir.name.startswith(f"3m+8m__{exp}__3__")
    (row,) = _eval_rows(run_dir)
    assert row["global_step"] == 32
    assert row["win_rate"] == pytest.approx((row["win_rate/3m"] + row["win_rate/8m"]) / 2)
    assert row["eval_return"] == pytest.approx((row["eval_return/3m"] + row["eval_return/8m"]) / 2)
    tags = _scalars(run_dir)
    for tag in ("charts/win_rate", "charts/win_rate/3m", "charts/win_rate/8m", "charts/eval_return/8m"):
        assert len(tags[tag]) == 1, tag
    assert len(tags["charts/env_time_fraction"]) == 2 and all(0.0 < f < 1.0 for f in tags["charts/env_time_fraction"])
    ckpt = run_dir / f"{exp}.pt"
    raw = torch.load(ckpt, weights_only=True)
    assert raw["config"]["train_maps"] == ["3m", "8m"] and raw["args"]["map"] == ["3m", "8m"] and raw["global_step"] == 32
    for m in ("3m", "8m", "25m"):
        load_checkpoint(str(ckpt), sc2_envs.make_batched(m, num_envs=1).get_env_info())

    _run(script, tmp_path / "b", *TINY, "--total-timesteps", "16")
    (stopped,) = (tmp_path / "b" / "runs").iterdir()
    res = _run(script, tmp_path / "b", "--resume", str(stopped), "--total-timesteps", "32")
    assert "resumed from" in res.stdout and "at iteration 1, 16 env steps" in res.stdout
    ref, got = (torch.load(d / "resume.pt", weights_only=True) for d in (run_dir, stopped))
    assert got["global_step"] == ref["global_step"] == 32 and len(got["env"]) == 2  # one simulator state per map
    for part in ("actors", "critic"):
        assert ref[part].keys() == got[part].keys()
        assert all(torch.equal(ref[part][k], got[part][k]) for k in ref[part]), part
    drop = ("wall_time_s",)  # the only column that may differ: the resumed run has its own wall clock
    assert {k: v for k, v in _eval_rows(stopped)[-1].items() if k not in drop} == {
        k: v for k, v in row.items() if k not in drop
    }


def test_one_map_checkpoint_and_resume_file_keep_the_single_map_format(tmp_path):
    _run("happo_gnn.py", tmp_path, "--map", "3m", "--num-envs", "2", "--num-steps", "4", "--total-timesteps", "8")
    (run_dir,) = (tmp_path / "runs").iterdir()
    raw = torch.load(run_dir / "happo_gnn.pt", weights_only=True)
    assert raw["args"]["map"] == "3m" and "train_maps" not in raw["config"]
    resume = torch.load(run_dir / "resume.pt", weights_only=True)
    assert resume["args"]["map"] == "3m"
    assert [type(resume[key]) for key in ("env", "next_obs")] == [list, list] and len(resume["env"]) == 1  # one map
    with open(run_dir / "eval.csv") as f:
        assert f.readline().strip() == "global_step,wall_time_s,win_rate,eval_return,iteration"


def test_short_seeded_multi_map_run_raises_both_maps_returns(tmp_path):
    """3m + 8m, 16 envs per map x 10 steps, 8 iterations (2,560 env steps; seed 1, CPU, deterministic):
    one shared marine actor. The mean training return of each map over the last 3 iterations must
    exceed that of the first iteration in which an episode of the map ended by 0.75 (measured: 3m
    2.33 -> 3.56, 8m 2.98 -> 4.73; the run takes about 18 s of CPU time)."""
    _run(
        "happo_gnn.py",
        tmp_path,
        *["--map", "3m", "8m", "--seed", "1", "--num-envs", "32", "--num-steps", "10", "--hidden", "32"],
        *["--num-minibatches", "1", "--learning-rate", "1e-3", "--critic-learning-rate", "1e-3"],
        *["--total-timesteps", "2560", "--eval-interval", "100", "--eval-episodes", "4", "--no-save-model"],
    )
    (run_dir,) = (tmp_path / "runs").iterdir()
    tags = _scalars(run_dir)
    for m in ("3m", "8m"):
        curve = tags[f"charts/episodic_return/{m}"]
        assert len(curve) >= 5, (m, curve)
        assert sum(curve[-3:]) / 3 > curve[0] + 0.75, (m, curve)


# ---------------------------------------------------------------------------- the transfer matrix


def test_matrix_maps_are_every_smac_map_once():
    assert sorted(transfer_table.MATRIX_MAPS) == sorted(sc2_envs.list_maps())


def test_matrix_cells_say_why_a_checkpoint_cannot_play_a_map(tmp_path):
    raw = torch.load(_multi_checkpoint(tmp_path / "p.pt", ("2s3z", "3s5z")), weights_only=True)
    cells = transfer_table.matrix_cells(raw["config"], ("2s3z", "3s5z", "3s5z_vs_3s6z", "1c3s5z", "3s_vs_3z", "3m"))
    assert cells == {
        "2s3z": "",
        "3s5z": "",
        "3s5z_vs_3s6z": "",
        "1c3s5z": transfer_table.NOT_COVERED,  # no colossus actor
        "3s_vs_3z": "",  # no unit-type bits (one type per side): read with the checkpoint's vocabulary
        "3m": transfer_table.NOT_COVERED,
    }
    protoss = raw["config"]
    assert transfer_table.matrix_columns([protoss]) == (
        "2s3z 3s5z 1c3s5z 3s5z_vs_3s6z 3s_vs_3z 3s_vs_4z 3s_vs_5z 2s_vs_1sc corridor so_many_baneling".split()
    )  # every map with a stalker or a zealot (1c3s5z then shows as n/a); not 2c_vs_64zg (colossi only)
    assert transfer_table.matrix_columns([protoss], ("3s5z", "2s3z")) == ["2s3z", "3s5z"]
    with pytest.raises(ValueError, match=r"unknown map\(s\) \['nosuchmap'\]"):
        transfer_table.matrix_columns([protoss], ("nosuchmap",))


def test_transfer_matrix_writes_csv_markdown_and_a_heat_map(tmp_path, capsys):
    multi = _multi_checkpoint(tmp_path / "m.pt", ("3m", "8m"))
    (info,) = _infos("3m")
    torch.manual_seed(0)
    p, c = build_models(info, "mlp", hidden=8)
    save_checkpoint(str(tmp_path / "mlp.pt"), p, c, info, {"map": "3m"}, global_step=5)
    args = transfer_table.Args(
        matrix=True,
        sources=(),
        checkpoints=(multi, str(tmp_path / "mlp.pt")),
        maps=("3m", "8m", "MMM"),
        episodes=2,
        max_envs=2,
        out_dir=str(tmp_path / "out"),
    )
    table = transfer_table.main(args)
    lines = table.splitlines()
    assert lines[0] == "| checkpoint | 3m | 8m | MMM |"
    assert lines[2].startswith("| 3m+8m (gnn) | **") and lines[2].count("**") == 4  # both training maps in bold
    assert lines[2].endswith("| n/a (classes not covered) |")  # MMM's marauders and medivac have no actor
    assert lines[3].startswith("| 3m (mlp) | **") and lines[3].endswith("| n/a (size mismatch) | n/a (classes not covered) |")
    with open(tmp_path / "out" / "transfer_matrix.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert [(r["source_map"], r["target_map"], r["kind"]) for r in rows] == [
        ("3m+8m", "3m", "in-distribution"),
        ("3m+8m", "8m", "in-distribution"),
        ("3m+8m", "MMM", "scale-up"),
        ("3m", "3m", "in-distribution"),
        ("3m", "8m", "scale-up"),
        ("3m", "MMM", "scale-up"),
    ]
    assert [int(rows[k]["episodes"]) for k in (0, 1, 3)] == [2, 2, 2]
    assert rows[4]["error"] == transfer_table.SIZE_MISMATCH and rows[4]["win_rate"] == ""
    assert rows[2]["error"] == rows[5]["error"] == transfer_table.NOT_COVERED
    lo, hi = float(rows[0]["ci_low"]), float(rows[0]["ci_high"])
    assert 0.0 <= lo <= float(rows[0]["win_rate"]) <= hi <= 1.0
    assert (tmp_path / "out" / "transfer_matrix.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "transfer matrix: 2 checkpoints" in capsys.readouterr().out


def test_matrix_rows_of_two_seeds_of_one_recipe_are_told_apart_by_file_name():
    from types import SimpleNamespace as Row

    rows = [
        Row(checkpoint="ck/marine_s1.pt", source_map="3m+8m", actor_type="gnn", target_map="3m"),
        Row(checkpoint="ck/marine_s1.pt", source_map="3m+8m", actor_type="gnn", target_map="8m"),
        Row(checkpoint="ck/marine_s2.pt", source_map="3m+8m", actor_type="gnn", target_map="3m"),
        Row(checkpoint="ck/mmm.pt", source_map="MMM", actor_type="gnn", target_map="3m"),
    ]
    assert transfer_table.series_labels(rows) == {
        "ck/marine_s1.pt": "3m+8m (gnn) marine_s1",
        "ck/marine_s2.pt": "3m+8m (gnn) marine_s2",
        "ck/mmm.pt": "MMM (gnn)",  # a unique label stays short
    }


def _seed_row(ck, target, win_rate, steps=100, source="3m+8m", error="", kind="in-distribution"):
    from types import SimpleNamespace as Row

    return Row(
        checkpoint=ck,
        source_map=source,
        actor_type="gnn",
        source_steps=steps,
        target_map=target,
        kind=kind,
        win_rate=None if error else win_rate,
        episodes=None if error else 100,
        error=error,
    )


def test_seed_summary_takes_the_median_over_the_seeds_of_one_recipe_only():
    rows = [
        _seed_row("s1.pt", "3m", 1.0),
        _seed_row("s1.pt", "25m", 0.46, kind="scale-up"),
        _seed_row("s2.pt", "3m", 0.9),
        _seed_row("s2.pt", "25m", 0.74, kind="scale-up"),
        _seed_row("s3.pt", "3m", 0.95),
        _seed_row("s3.pt", "25m", 0.60, kind="scale-up"),
        _seed_row("s4.pt", "3m", 0.2, steps=50),  # another budget: another recipe, alone, not summarized
        _seed_row("mmm.pt", "3m", 0.5, source="MMM"),
    ]
    seeds = {"s1.pt": 1, "s2.pt": 2, "s3.pt": 3, "s4.pt": 4, "mmm.pt": 1}
    summary = transfer_table.seed_summary(rows, seeds)
    assert [(s["target_map"], s["n"], s["seeds"], s["median"], s["min"], s["max"], s["win_rates"]) for s in summary] == [
        ("3m", 3, "1 2 3", 0.95, 0.9, 1.0, "1.00 0.90 0.95"),
        ("25m", 3, "1 2 3", 0.60, 0.46, 0.74, "0.46 0.74 0.60"),
    ]
    table = transfer_table.seed_summary_markdown(summary, ["3m", "25m", "MMM"])
    assert (
        table.splitlines()[2] == "| 3m+8m (gnn, 100 env steps; seeds 1, 2, 3) | **0.95** [0.90-1.00] | 0.60 [0.46-0.74] |  |"
    )
    assert transfer_table.seed_summary(rows[:2] + rows[6:], seeds) == []  # no recipe with two seeds


def test_seed_summary_keeps_n_a_cells_and_refuses_one_seed_twice():
    na = transfer_table.NOT_COVERED
    rows = [_seed_row("a.pt", "MMM", None, error=na), _seed_row("b.pt", "MMM", None, error=na)]
    (s,) = transfer_table.seed_summary(rows, {"a.pt": 1, "b.pt": None})
    assert s["median"] is None and s["error"] == na and s["seeds"] == "1 ?"
    assert transfer_table.seed_summary_markdown([s], ["MMM"]).splitlines()[2].endswith(f"| {na} |")
    with pytest.raises(ValueError, match=r"share a seed \(\[1, 1\]\)"):
        transfer_table.seed_summary(rows, {"a.pt": 1, "b.pt": 1})


def test_transfer_matrix_refuses_a_seed_twice_before_evaluating(tmp_path, monkeypatch):
    # found by a tester: a checkpoint and its copy were evaluated on every map, the tables written, and
    # only then did seed_summary raise "share a seed"
    import shutil

    info = sc2_envs.make_batched("3m", num_envs=1).get_env_info()
    p, c = build_models(info, "gnn", hidden=8)
    save_checkpoint(str(tmp_path / "a.pt"), p, c, info, {"map": "3m", "seed": 1}, global_step=100)
    shutil.copyfile(tmp_path / "a.pt", tmp_path / "copy.pt")
    et = transfer_table._eval_transfer()
    monkeypatch.setattr(et, "evaluate_transfer", lambda *a, **k: pytest.fail("evaluated before checking the seeds"))
    args = transfer_table.Args(matrix=True, maps=("3m",), episodes=2)
    with pytest.raises(ValueError, match=r"checkpoints \[.*a\.pt', '.*copy\.pt'\] share a seed \(\[1, 1\]\)"):
        transfer_table.matrix_rows(args, [tmp_path / "a.pt", tmp_path / "copy.pt"])


def test_two_epochs_of_one_behaviour_cloning_run_are_two_recipes(tmp_path, monkeypatch):
    """Found by a review: BC checkpoints record 0 env steps, so two epochs of one run (one seed) were taken
    for one recipe run twice ("share a seed") and their cells would have been pooled as seeds."""
    info = sc2_envs.make_batched("3m", num_envs=1).get_env_info()
    p, c = build_models(info, "gnn", hidden=8)
    paths = []
    for epoch in (1, 3):
        paths.append(tmp_path / f"epoch_{epoch:03d}.pt")
        save_checkpoint(str(paths[-1]), p, c, info, {"map": "3m", "seed": 1}, global_step=0)
        ck = torch.load(paths[-1], weights_only=True)
        ck["bc"] = {"epoch": epoch}
        torch.save(ck, paths[-1])
    et = transfer_table._eval_transfer()

    def fake_cell(path, m, *a, **k):
        row = _seed_row(str(path), m, 0.5, steps=0)
        row.ci_low, row.ci_high = 0.2, 0.8
        return row

    monkeypatch.setattr(et, "evaluate_transfer", fake_cell)
    args = transfer_table.Args(matrix=True, maps=("3m",), episodes=2)
    rows, _, seeds, amounts = transfer_table.matrix_rows(args, paths)
    assert sorted(amounts.values()) == [
        "1 epoch of behaviour cloning on replays, no env steps",
        "3 epochs of behaviour cloning on replays, no env steps",
    ]
    assert transfer_table.seed_summary(rows, seeds, amounts) == []  # one checkpoint per recipe: no median


def test_transfer_matrix_writes_the_median_over_two_seeds(tmp_path):
    paths = []
    for seed in (1, 2):
        torch.manual_seed(seed)
        infos = _infos("3m", "8m")
        policy, critic, _, _ = build_multi_map_models(infos, "gnn", hidden=8, heads=2)
        paths.append(str(tmp_path / f"s{seed}.pt"))
        save_checkpoint(
            paths[-1], policy, critic, infos[0], {"map": ["3m", "8m"], "seed": seed}, global_step=7, maps=["3m", "8m"]
        )
    args = transfer_table.Args(
        matrix=True,
        sources=(),
        checkpoints=tuple(paths),
        maps=("3m", "8m"),
        episodes=3,
        max_envs=3,
        out_dir=str(tmp_path / "out"),
    )
    transfer_table.main(args)
    with open(tmp_path / "out" / "transfer_matrix.csv", newline="") as f:
        cells = {(r["checkpoint"], r["target_map"]): float(r["win_rate"]) for r in csv.DictReader(f)}
    with open(tmp_path / "out" / "transfer_matrix_seeds.csv", newline="") as f:
        summary = list(csv.DictReader(f))
    assert [(s["target_map"], s["seeds"], s["n"]) for s in summary] == [("3m", "1 2", "2"), ("8m", "1 2", "2")]
    for s in summary:
        per_seed = [cells[(p, s["target_map"])] for p in paths]
        assert float(s["median"]) == pytest.approx(sum(per_seed) / 2)
        assert (float(s["min"]), float(s["max"])) == (min(per_seed), max(per_seed))
    assert "seeds 1, 2" in (tmp_path / "out" / "transfer_matrix_seeds.md").read_text()


def test_maps_without_type_bits_but_other_unit_types_get_a_vocabulary():
    """so_many_baneling (zealots vs banelings) and corridor (zealots vs zerglings) have no type bits;
    read alike they would give banelings and zerglings one anonymous enemy encoding."""
    from models import type_vocab_union

    assert type_vocab_union(_infos("so_many_baneling", "corridor")) == ["zealot", "baneling", "zergling"]
    assert type_vocab_union(_infos("3m", "8m")) is None  # the same types, read alike: each map's own
    assert type_vocab_union(_infos("3s_vs_3z", "2s3z")) == ["stalker", "zealot"]  # read differently: one vocabulary
    policy, _, _, _ = build_multi_map_models(_infos("so_many_baneling", "corridor"), "gnn", hidden=8)
    assert policy.spec["type_vocab"] == ["zealot", "baneling", "zergling"]


def test_vocabulary_arguments_are_checked_and_the_own_bit_survives_an_empty_own_block():
    from models import ObsParser, build_models

    info = _infos("2s3z")[0]
    for bad, err in ((["stalker", "zealot", "stalker"], ValueError), (["stalker", 3], TypeError), ("stalker", TypeError)):
        with pytest.raises(err, match="vocab"):
            ObsParser(info, bad)
    with pytest.raises(TypeError, match="ordered sequence"):
        ObsParser(info, {"stalker", "zealot"})  # a set has no stable order
    env = sc2_envs.make_batched("3s_vs_5z", num_envs=1, seed=0, obs_own_health=False, obs_all_health=False)
    own = ObsParser(env.get_env_info(), ["stalker", "zealot"])(env.reset()["obs"]).own
    assert torch.equal(own[0, :, -2:], torch.tensor([[1.0, 0.0]] * 3))  # no own column but the type bits
    conic = sc2_envs.make_batched("zerg_10_vs_11", num_envs=1, seed=0, conic_fov=True).get_env_info()
    with pytest.raises(ValueError, match="conic_fov=True adds look actions"):
        build_models(conic, "gnn")


def test_first_screen_class_text_does_not_read_smacv2_classes_as_agent_counts():
    from models import describe_classes

    assert describe_classes(_infos("2s3z")[0]) == "stalker x2, zealot x3"
    # every SMACv2 class maps to every agent id, so "stalker x5, zealot x5, colossus x5" would read as 15 agents
    assert (
        describe_classes(_infos("protoss_5_vs_5")[0])
        == "stalker, zealot, colossus (drawn per episode for each of the 5 agents)"
    )


@pytest.mark.parametrize("script", ["happo_gnn.py", "hatrpo_gnn.py"])
def test_zero_shot_eval_maps_are_logged_and_equal_an_evaluation_of_the_checkpoint(tmp_path, script):
    """--eval-maps: printed first, one eval.csv column and TensorBoard tag per map, not in the all-map
    figure; the figures are those of the saved actors on that map with sc2_envs.training.run.zero_shot_eval_seed."""
    from sc2_envs.training.evaluation import evaluate
    from sc2_envs.training.run import zero_shot_eval_seed

    exp = script[: -len(".py")]
    flags = ["--map", "3m", "--seed", "2", "--num-envs", "4", "--num-steps", "4", "--hidden", "16"]
    flags += ["--eval-episodes", "3", "--eval-interval", "1", "--total-timesteps", "32", "--eval-maps", "8m", "5m_vs_6m"]
    out = _run(script, tmp_path, *flags).stdout.splitlines()
    assert out[2].startswith("  zero-shot evaluation on 8m (not trained on): agents 8 (marine x8), 3 greedy episodes")
    assert out[3].startswith("  zero-shot evaluation on 5m_vs_6m (not trained on): agents 5 (marine x5)")
    (run_dir,) = (tmp_path / "runs").iterdir()
    rows = _eval_rows(run_dir)
    assert [r["iteration"] for r in rows] == [1, 2]
    assert set(rows[0]) == {
        "global_step", "wall_time_s", "win_rate", "eval_return", "iteration",
        "zero_shot_win_rate/8m", "zero_shot_eval_return/8m", "zero_shot_win_rate/5m_vs_6m", "zero_shot_eval_return/5m_vs_6m",
    }  # fmt: skip
    tags = _scalars(run_dir)
    assert len(tags["charts/zero_shot_win_rate/8m"]) == len(tags["charts/zero_shot_eval_return/5m_vs_6m"]) == 2
    ckpt = str(run_dir / f"{exp}.pt")  # the last evaluation's weights
    for j, m in enumerate(("8m", "5m_vs_6m")):
        env = sc2_envs.make_batched(m, num_envs=3, autoreset=True)
        policy, _, _ = load_checkpoint(ckpt, env.get_env_info(), with_critic=False)
        r = evaluate(policy, env, 3, zero_shot_eval_seed(2, 2, j))
        assert rows[-1][f"zero_shot_eval_return/{m}"] == pytest.approx(r["mean_return"], abs=1e-9)
        assert rows[-1][f"zero_shot_win_rate/{m}"] == r["win_rate"]


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--eval-maps", "3m"], "--eval-maps 3m: ['3m'] also in --map; expected maps not trained on"),
        (["--eval-maps", "8m", "8m"], "--eval-maps 8m 8m: expected distinct maps"),
        (["--eval-maps", "9m"], "--eval-maps 9m: unknown ['9m']"),
        (["--eval-maps", "2s3z"], "--eval-maps 2s3z: this env (2s3z) has unit classes"),
        (["--eval-maps", "8m", "--actor", "mlp"], "--eval-maps 8m: an MLP actor needs"),
    ],
    ids=["training-map", "duplicate", "unknown", "classes", "mlp-size"],
)
def test_bad_eval_maps_are_one_line_errors(tmp_path, flags, message):
    res = _run(
        "happo_gnn.py",
        tmp_path,
        "--map",
        "3m",
        "--num-envs",
        "4",
        "--num-steps",
        "4",
        "--total-timesteps",
        "16",
        *flags,
        check=False,
    )
    assert res.returncode == 2 and res.stderr.count("\n") == 1, res.stderr[-2000:]
    assert message in res.stderr, res.stderr
    assert not (tmp_path / "runs").exists()


def test_zero_shot_views_share_the_actors_and_refuse_an_mlp_on_another_layout():
    (info_3m,) = _infos("3m")
    (info_8m,) = _infos("8m")
    policy, _, _, _ = build_multi_map_models([info_3m], "gnn", hidden=16)
    (view,) = zero_shot_views(policy, info_3m, [info_8m])
    assert view.actors is policy.actors and view.n_agents == 8
    mlp, _, _, _ = build_multi_map_models([info_3m], "mlp", hidden=16)
    other = dict(info_3m, map_name="3m-moved", obs_layout={**info_3m["obs_layout"], "move_feats": 5})
    with pytest.raises(ValueError, match="3m-moved: an MLP reads its inputs by position .*move_feats: 4 vs 5"):
        zero_shot_views(mlp, info_3m, [other])
