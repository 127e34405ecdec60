"""Tests of algos/happo_gnn.py: the factor M, the clipped surrogate, GAE at time limits, dead agents, runs."""

import csv
import glob
import math
import re
import subprocess
import sys

import pytest
import torch
from conftest import REPO, load_algo

import sc2_envs
from models import MaskedCategorical, build_models, load_checkpoint

happo = load_algo("happo_gnn")


def test_factor_multiplies_the_class_agents_ratios_and_skips_dead_agents():
    factor = torch.tensor([1.0, 2.0])
    # the class's alive agent-steps: both agents at env step 0, agent 0 at env step 1 (agent 1 is dead there)
    rows, pos = torch.tensor([0, 0, 1]), torch.tensor([0, 1, 0])
    new = torch.log(torch.tensor([2.0, 3.0, 5.0]))
    out = happo.happo_factor_update(factor, new, torch.zeros(3), rows, pos, 2)
    assert torch.allclose(out, torch.tensor([6.0, 10.0]))
    assert not out.requires_grad


def test_clipped_surrogate_is_weighted_by_the_factor():
    logits = torch.log(torch.tensor([[0.6, 0.4]]))  # one alive agent-step, 2 actions
    dist = MaskedCategorical(logits, torch.ones(1, 2, dtype=torch.bool))
    behaviour = torch.log(torch.tensor([0.4]))  # ratio for action 0: 0.6 / 0.4 = 1.5
    act, factor = torch.zeros(1, dtype=torch.long), torch.tensor([2.0])
    pg, ent, _, clipfrac = happo.happo_actor_loss(dist, act, behaviour, torch.tensor([1.0]), factor, 0.2)
    assert pg.item() == pytest.approx(-2.0 * 1.2)  # min(1.5 A, 1.2 A) with A = 1, times M = 2
    pg, *_ = happo.happo_actor_loss(dist, act, behaviour, torch.tensor([-1.0]), factor, 0.2)
    assert pg.item() == pytest.approx(2.0 * 1.5)  # min(-1.5, -1.2) = -1.5
    assert clipfrac.item() == 1.0
    assert ent.item() == pytest.approx(-(0.6 * math.log(0.6) + 0.4 * math.log(0.4)), abs=1e-6)


def test_gae_bootstraps_at_truncation_but_not_at_termination():
    gamma = 0.5
    rewards = torch.tensor([[1.0, 1.0], [2.0, 2.0], [0.0, 0.0]])  # [T=3, B=2]
    values = torch.tensor([[1.0, 1.0], [3.0, 3.0], [4.0, 4.0]])
    terminated = torch.tensor([[False, False], [True, False], [False, False]])
    truncated = torch.tensor([[False, False], [False, True], [False, False]])
    final_values = torch.tensor([[0.0, 0.0], [0.0, 8.0], [0.0, 0.0]])  # V(s_final) of env 1's timeout
    next_value = torch.tensor([6.0, 6.0])
    adv, ret = happo.compute_gae(rewards, values, next_value, terminated, truncated, final_values, gamma, 0.0)
    assert adv[1, 0].item() == pytest.approx(2.0 - 3.0)  # terminated: no future value
    assert adv[1, 1].item() == pytest.approx(2.0 + gamma * 8.0 - 3.0)  # truncated: bootstrap from V(s_final)
    assert adv[0, 0].item() == pytest.approx(1.0 + gamma * 3.0 - 1.0)
    assert adv[2, 0].item() == pytest.approx(0.0 + gamma * 6.0 - 4.0)  # new episode bootstraps from next_value
    adv1, _ = happo.compute_gae(rewards, values, next_value, terminated, truncated, final_values, gamma, 1.0)
    # lambda = 1: the advantage at t=0 sums the discounted TD errors up to the episode end only
    assert adv1[0, 0].item() == pytest.approx((1.0 + gamma * 2.0) - 1.0)
    assert adv1[0, 1].item() == pytest.approx((1.0 + gamma * 2.0 + gamma**2 * 8.0) - 1.0)
    assert torch.equal(ret, adv + values)


def _dead_batch(dead_agents):
    env = sc2_envs.make_batched("2s3z", num_envs=6, seed=0)
    out = env.reset(seed=0)
    obs, avail = out["obs"].clone(), out["avail_actions"].clone()
    obs[:, dead_agents] = 0.0  # SMAC: a dead agent sees zeros and may only take the no-op
    avail[:, dead_agents] = False
    avail[:, dead_agents, 0] = True
    return env.get_env_info(), obs, avail


@pytest.mark.parametrize("dead", [[0], [0, 1]], ids=["one-stalker-dead", "whole-class-dead"])
def test_agent_dead_for_the_whole_batch_gets_exactly_zero_gradient(dead):
    torch.manual_seed(0)
    info, obs, avail = _dead_batch(dead)
    policy, critic = build_models(info, "gnn", hidden=32)
    R, N = obs.shape[:2]
    alive = (~avail[..., 0]).float()
    obs = obs.clone().requires_grad_(True)
    # the training loop's form: the class actor runs on the alive agent-steps of the class only
    rows, pos, flat = policy.class_rows("stalker", obs.detach(), alive)
    dist = policy.class_dist_at("stalker", obs.reshape(R * N, -1)[flat], avail.reshape(R * N, -1)[flat], pos)
    act = dist.sample()
    behaviour = dist.log_prob(act).detach() + 0.1  # any behaviour policy
    adv, factor = torch.randn(rows.numel()), (torch.rand(R) + 0.5)[rows]
    pg, ent, _, _ = happo.happo_actor_loss(dist, act, behaviour, adv, factor, 0.2)
    loss = (pg - 0.01 * ent) / max(rows.numel(), 1)
    if rows.numel():
        loss.backward()
    for k in dead:
        assert obs.grad is None or torch.equal(obs.grad[:, k], torch.zeros_like(obs.grad[:, k]))
    grads = [p.grad for p in policy.actors["stalker"].parameters() if p.grad is not None]
    assert all(torch.isfinite(g).all() for g in grads) and torch.isfinite(loss)
    if len(dead) == 2:
        assert loss.item() == 0.0 and all(torch.equal(g, torch.zeros_like(g)) for g in grads)
    else:
        assert any(g.abs().sum() > 0 for g in grads)  # the living stalker still learns
    value = critic(sc2_envs.make_batched("2s3z", num_envs=6, seed=0).reset(seed=0)["state"])
    assert torch.isfinite(value).all()


def _run(script, tmp_path, *extra):
    cmd = [sys.executable, str(REPO / "algos" / script), "--no-cuda", "--seed", "3", *extra]
    res = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=600, check=False)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-4000:]
    return res.stdout


def _eval_rows(tmp_path, pattern):
    (path,) = glob.glob(str(tmp_path / "runs" / pattern / "eval.csv"))
    with open(path) as f:
        return [{k: float(v) for k, v in r.items()} for r in csv.DictReader(f)]


def test_happo_smoke_run_logs_evaluations_and_saves_a_loadable_checkpoint(tmp_path):
    out = _run(
        "happo_gnn.py",
        tmp_path,
        "--map",
        "3m",
        "--num-envs",
        "4",
        "--num-steps",
        "8",
        "--total-timesteps",
        "64",
        "--eval-episodes",
        "4",
        "--eval-interval",
        "1",
        "--save-model",
    )
    assert "obs 30, state 48, actions 9, agents 3 (marine x3)" in out and "classes: marine (" in out
    assert "params | hidden 32, 4 heads, 1 attention block\n" in out  # the default width, said on the first screen
    assert "2 iterations (64 env steps) | seed 3 |" in out  # the first screen shows the seed and the total
    # the progress line gives the run-long rate and the recent one (the last iterations' rate)
    assert re.search(r"iteration 2/2 step 64 .*sps=\d+ recent=\d+", out), out
    rows = _eval_rows(tmp_path, "3m__happo_gnn__3__*")
    assert [r["global_step"] for r in rows] == [32, 64]
    assert all(0.0 <= r["win_rate"] <= 1.0 for r in rows)
    (ckpt,) = glob.glob(str(tmp_path / "runs" / "3m__happo_gnn__3__*" / "happo_gnn.pt"))
    info = sc2_envs.make_batched("3m", num_envs=1).get_env_info()
    _, _, raw = load_checkpoint(ckpt, info)
    assert raw["args"]["map"] == "3m" and raw["config"]["actor_type"] == "gnn" and raw["global_step"] == 64
    assert raw["algorithm"] == "happo_gnn"  # the script that trained it, for a fine-tune's lineage


@pytest.mark.slow
def test_short_seeded_happo_run_on_3m_raises_the_return(tmp_path):
    _run(
        "happo_gnn.py",
        tmp_path,
        "--map",
        "3m",
        "--num-envs",
        "16",
        "--num-steps",
        "30",
        "--num-minibatches",
        "1",
        "--total-timesteps",
        "14400",
        "--eval-interval",
        "3",
        "--eval-episodes",
        "32",
    )
    rows = _eval_rows(tmp_path, "3m__happo_gnn__3__*")
    first, last = rows[0]["eval_return"], max(r["eval_return"] for r in rows[-3:])
    assert last > first + 3.0, rows
