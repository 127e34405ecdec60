"""Tests of HATRPO (algos/hatrpo_gnn.py, models/trust_region.py): conjugate gradient, the Fisher-vector product of the masked
KL, the line search."""

import glob
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from conftest import REPO, load_algo

import sc2_envs
from models import MaskedCategorical, build_models, trust_region

hatrpo = load_algo("hatrpo_gnn")


def _gathered(policy, c, obs, avail, act, logp, adv, factor):
    """A class's ``[R, n_c]`` block of agent-steps, all alive, as the training loop passes it to ``trpo_step``:
    one map's lists of ``[R * n_c]`` agent-steps (row-major, as ``ClassPolicy.class_rows`` gathers them)."""
    R, n_c = act.shape
    flat = (obs.reshape(R * n_c, -1), avail.reshape(R * n_c, -1), act.reshape(-1), logp.reshape(-1), adv.reshape(-1))
    return ([policy], c, *([x] for x in flat), [factor.repeat_interleave(n_c)], [torch.arange(n_c).repeat(R)])


def test_conjugate_gradient_solves_a_small_spd_system():
    torch.manual_seed(0)
    m = torch.randn(5, 5, dtype=torch.float64)
    A = m @ m.T + torch.eye(5, dtype=torch.float64)
    b = torch.randn(5, dtype=torch.float64)
    x = trust_region.conjugate_gradient(lambda v: A @ v, b, nsteps=10)
    assert torch.allclose(x, torch.linalg.solve(A, b), atol=1e-8)
    # a zero right-hand side (no active agent-step) gives x = 0, not NaN from 0 / 0
    assert torch.equal(
        trust_region.conjugate_gradient(lambda v: A @ v, torch.zeros(5, dtype=torch.float64)),
        torch.zeros(5, dtype=torch.float64),
    )


@pytest.mark.parametrize("gauss_newton", [True, False])
def test_fisher_vector_product_equals_the_explicit_masked_fisher(gauss_newton):
    torch.manual_seed(0)
    R, A, D = 7, 4, 3
    x = torch.randn(R, 1, D, dtype=torch.float64)
    W = torch.randn(A, D, dtype=torch.float64, requires_grad=True)
    avail = torch.rand(R, 1, A) > 0.3
    avail[..., 0] = True
    alive = torch.ones(R, dtype=torch.bool)
    alive[2] = False  # a dead agent's row is not gathered, so it does not count

    def make():
        return [MaskedCategorical((x[alive, 0] @ W.T), avail[alive, 0])]

    with torch.no_grad():
        old = make()
    v = torch.randn(A * D, dtype=torch.float64)
    product = trust_region.kl_fisher(make, old, [W], damping=0.0, gauss_newton=gauss_newton)
    fvp = product(v)
    F = torch.zeros(A * D, A * D, dtype=torch.float64)
    for j, r in enumerate(alive.nonzero().flatten().tolist()):
        p = old[0].probs[j]
        J = torch.autograd.functional.jacobian(lambda w, xr=x[r, 0]: xr @ w.reshape(A, D).T, W.detach().reshape(-1))
        F += J.T @ (torch.diag(p) - torch.outer(p, p)) @ J
    F /= alive.sum()
    assert torch.allclose(fvp, F @ v, atol=1e-10)
    # the graphs are built once: a second product (another vector) is as exact
    v2 = torch.randn(A * D, dtype=torch.float64)
    assert torch.allclose(product(v2), F @ v2, atol=1e-10)


def test_gauss_newton_and_double_backward_fisher_products_agree_on_the_gnn_actor():
    # two maps' views of one class actor (multi-map lists), dead agents inactive
    torch.manual_seed(0)
    maps = [sc2_envs.make_batched(m, num_envs=6, seed=0) for m in ("2s3z", "3s5z")]
    outs = [e.reset(seed=0) for e in maps]
    policy, _ = build_models(maps[0].get_env_info(), "gnn", hidden=32)
    views = [policy, policy.view(maps[1].get_env_info())]
    data = []
    for view, out in zip(views, outs, strict=True):
        alive = torch.ones(6, view.n_agents)
        alive[0, view.agent_ids("zealot")[0]] = 0.0  # one zealot dead: not gathered
        rows, pos, flat = view.class_rows("zealot", out["obs"], alive)
        R, N = alive.shape
        data.append((view, out["obs"].reshape(R * N, -1)[flat], out["avail_actions"].reshape(R * N, -1)[flat], pos))

    def make():
        return [v.class_dist_at("zealot", o, a, i) for v, o, a, i in data]

    with torch.no_grad():
        old = make()
    params = list(policy.actors["zealot"].parameters())
    v = torch.randn(sum(p.numel() for p in params))
    gn = trust_region.kl_fisher(make, old, params, damping=0.1)(v)
    db = trust_region.kl_fisher(make, old, params, damping=0.1, gauss_newton=False)(v)
    assert (gn - db).abs().max() <= 1e-5 * db.abs().max()
    assert float(v @ gn) > 0.1 * float(v @ v) * 0.999  # positive definite with the damping


def test_trpo_step_respects_the_trust_region_and_improves_the_surrogate():
    torch.manual_seed(0)
    env = sc2_envs.make_batched("2s3z", num_envs=16, seed=0)
    out = env.reset(seed=0)
    policy, _ = build_models(env.get_env_info(), "gnn", hidden=32)
    ids = policy.agent_ids("stalker")
    obs, avail = out["obs"][:, ids], out["avail_actions"][:, ids]
    with torch.no_grad():
        d = policy.class_dist("stalker", obs, avail)
        act = d.sample()
        logp = d.log_prob(act)
    zealot_before = [p.clone() for p in policy.actors["zealot"].parameters()]
    args = hatrpo.Args()
    adv = torch.randn(16, 2)
    factor = torch.ones(16)
    stats = hatrpo.trpo_step(*_gathered(policy, "stalker", obs, avail, act, logp, adv, factor), args)
    assert stats["step_accepted"] == 1.0
    assert 0.0 < stats["kl"] < args.kl_threshold
    with torch.no_grad():
        d_new = policy.class_dist("stalker", obs, avail)
        assert d.kl(d_new).mean().item() == pytest.approx(stats["kl"], rel=1e-4)
        new_surr = (torch.exp(d_new.log_prob(act) - logp) * adv).mean().item()
    assert new_surr > (adv.mean().item())  # the surrogate at the old policy is mean(A)
    assert all(torch.equal(a, b) for a, b in zip(zealot_before, policy.actors["zealot"].parameters(), strict=False))


def test_hatrpo_smoke_run(tmp_path):
    cmd = [
        sys.executable,
        str(REPO / "algos" / "hatrpo_gnn.py"),
        "--no-cuda",
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
    ]
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    res = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=600, check=False, env=env)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-4000:]
    assert "HATRPO (gnn) on 3m" in res.stdout
    assert "idle OpenMP threads spin GOMP_SPINCOUNT=1000 polls, then sleep" in res.stdout  # the default, first screen
    (ckpt,) = glob.glob(str(tmp_path / "runs" / "3m__hatrpo_gnn__1__*" / "hatrpo_gnn.pt"))
    assert torch.load(ckpt, weights_only=True)["algorithm"] == "hatrpo_gnn"
    meta = json.loads((Path(ckpt).parent / "run_meta.json").read_text())
    assert meta["config"]["torch_threads"] == 0 and meta["torch_threads_used"] >= 1  # the count in effect


def test_trpo_step_treats_behaviour_logprobs_as_constants():
    """Log-probs that still carry the actor's graph step exactly as the rollout's detached ones."""

    def step(keep_graph):
        torch.manual_seed(0)
        env = sc2_envs.make_batched("3m", num_envs=8, seed=0)
        out = env.reset(seed=0)
        policy, _ = build_models(env.get_env_info(), "gnn", hidden=16)
        obs, avail = out["obs"], out["avail_actions"]
        d = policy.class_dist("marine", obs, avail)
        act = d.sample()
        logp = d.log_prob(act) if keep_graph else d.log_prob(act).detach()
        args = hatrpo.Args()
        adv, factor = torch.randn(8, 3), torch.ones(8)
        return hatrpo.trpo_step(*_gathered(policy, "marine", obs, avail, act, logp, adv, factor), args)

    ref, got = step(False), step(True)
    assert ref["step_accepted"] == 1.0 and 0.0 < ref["kl"] < 0.01
    assert got["kl"] == ref["kl"] and got["step_fraction"] == ref["step_fraction"]
    assert torch.equal(got["new_logp"][0], ref["new_logp"][0])


def test_hatrpo_trains_on_a_smacv2_scenario_and_its_checkpoint_plays_a_larger_one(tmp_path):
    """Varying compositions: each agent is routed to its class's actor at every step, and the per-class
    actors rebind to another team size of the race."""
    from models import load_checkpoint

    cmd = [sys.executable, str(REPO / "algos" / "hatrpo_gnn.py"), "--no-cuda", "--map", "protoss_5_vs_5"]
    cmd += ["--num-envs", "4", "--num-steps", "8", "--total-timesteps", "64", "--eval-episodes", "2", "--eval-interval", "1"]
    res = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=600, check=False)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-4000:]
    assert "HATRPO (gnn) on protoss_5_vs_5" in res.stdout
    (ckpt,) = glob.glob(str(tmp_path / "runs" / "protoss_5_vs_5__hatrpo_gnn__1__*" / "hatrpo_gnn.pt"))
    env = sc2_envs.make_batched("protoss_10_vs_10", num_envs=3, seed=0)
    policy, _, _ = load_checkpoint(ckpt, env.get_env_info())
    out = env.reset()
    for _ in range(5):
        with torch.no_grad():
            act, _ = policy.act(out["obs"], out["avail_actions"], greedy=True)
        assert bool(out["avail_actions"].gather(-1, act.unsqueeze(-1)).all())
        out = env.step(act)


@pytest.mark.parametrize("accept_ratio", [0.5, 1e9])  # the step accepted; every step rejected (old weights back)
def test_trpo_step_writes_the_weights_in_place(accept_ratio):
    """Each parameter keeps its own storage (no view into one flat vector), as after loading resume.pt.

    Views at offsets of a shared vector can be rounded differently by the CPU matrix kernels, so a
    resumed run (fresh tensors) drifted from one that never stopped."""
    torch.manual_seed(0)
    env = sc2_envs.make_batched("3m", num_envs=8, seed=0)
    out = env.reset(seed=0)
    policy, _ = build_models(env.get_env_info(), "gnn", hidden=16)
    obs, avail = out["obs"], out["avail_actions"]
    with torch.no_grad():
        d = policy.class_dist("marine", obs, avail)
        act = d.sample()
        logp = d.log_prob(act)
    params = list(policy.actors["marine"].parameters())
    ptrs = [p.data_ptr() for p in params]
    before = [p.detach().clone() for p in params]
    args = hatrpo.Args(ls_step=3, accept_ratio=accept_ratio, fisher_product="double-backward")
    adv, factor = torch.randn(8, 3), torch.ones(8)
    stats = hatrpo.trpo_step(*_gathered(policy, "marine", obs, avail, act, logp, adv, factor), args)
    assert stats["step_accepted"] == (1.0 if accept_ratio < 1 else 0.0)
    assert [p.data_ptr() for p in params] == ptrs
    assert all(p.data._base is None and p.is_contiguous() for p in params)
    changed = any(not torch.equal(a, p) for a, p in zip(before, params, strict=True))
    assert changed == (accept_ratio < 1)
