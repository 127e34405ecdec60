"""Running a class actor only on the agent-steps it serves (``ClassPolicy.class_rows``) equals the masked form.

HAPPO and HATRPO used to run every class actor over all agents of its class (SMACv2: over every
agent) and mask the terms that do not count; they now gather the active agent-steps of the class.
These tests compare the two forms on seeded rollouts of a fixed-roster map, a map with a healer and
a SMACv2 scenario: same actions, same losses, gradients, factors and trust-region steps up to float
summation order.
"""

import copy

import pytest
import torch
from conftest import load_algo

import sc2_envs
from models import build_models

happo = load_algo("happo_gnn")
hatrpo = load_algo("hatrpo_gnn")
MAPS = ["2s3z", "MMM", "protoss_5_vs_5"]


def _rollout(map_name, steps=40, num_envs=6):
    torch.manual_seed(0)
    env = sc2_envs.make_batched(map_name, num_envs=num_envs, seed=1, autoreset=True)
    policy, _ = build_models(env.get_env_info(), "gnn", hidden=32)
    out = env.reset(seed=1)
    obs, avail, act, logp = [], [], [], []
    for _ in range(steps):
        with torch.no_grad():
            a, lp = policy.act(out["obs"], out["avail_actions"])
        obs.append(out["obs"])
        avail.append(out["avail_actions"])
        act.append(a)
        logp.append(lp)
        out = env.step(a)
    return policy, torch.cat(obs), torch.cat(avail), torch.cat(act), torch.cat(logp)


def _reference_act(policy, obs, avail):
    """Every class actor over its whole block, masked (the form before gathering)."""
    actions = torch.zeros(obs.shape[:2], dtype=torch.int64)
    logprobs = torch.zeros(obs.shape[:2])
    for c, ids in policy._ids.items():
        if policy.varying:
            m = policy.class_mask(c, obs).bool()
            d = policy.class_dist(c, obs, avail)
            a = d.sample()
            actions, logprobs = torch.where(m, a, actions), torch.where(m, d.log_prob(a), logprobs)
        else:
            d = policy.class_dist(c, obs.index_select(1, ids), avail.index_select(1, ids))
            a = d.sample()
            actions[:, ids], logprobs[:, ids] = a, d.log_prob(a)
    return actions, logprobs


@pytest.mark.parametrize("map_name", MAPS)
def test_act_on_gathered_rows_draws_the_same_actions(map_name):
    policy, obs, avail, _, _ = _rollout(map_name)
    assert (avail.sum(-1) == 1).any()  # some agents are dead (only the no-op): they are skipped
    with torch.no_grad():
        torch.manual_seed(7)
        a, lp = policy.act(obs, avail)
        torch.manual_seed(7)
        a_ref, lp_ref = _reference_act(policy, obs, avail)
        greedy = policy.act(obs, avail, greedy=True)[0]
    assert torch.equal(a, a_ref)
    torch.testing.assert_close(lp, lp_ref, rtol=0, atol=1e-6)
    assert torch.equal(lp[avail.sum(-1) == 1], torch.zeros(int((avail.sum(-1) == 1).sum())))
    assert bool(avail.gather(-1, greedy.unsqueeze(-1)).all())


def _loss_inputs(map_name):
    """A seeded rollout with the alive mask, seeded advantages ``[R, N]`` and factors ``[R]``, and
    the generator that drew them (for more draws)."""
    policy, obs, avail, act, logp = _rollout(map_name)
    R, N = act.shape
    g = torch.Generator().manual_seed(3)
    adv = torch.randn(R, N, generator=g)
    factor = torch.rand(R, generator=g) + 0.5
    return policy, obs, avail, act, logp, (~avail[..., 0]).float(), adv, factor, g


@pytest.mark.parametrize("map_name", MAPS)
def test_gathered_class_loss_gradient_and_factor_equal_the_masked_ones(map_name):
    policy, obs, avail, act, logp, active, adv, factor, g = _loss_inputs(map_name)
    R, N = act.shape
    new_logp = logp + 0.1 * torch.randn(R, N, generator=g)
    for c in policy.class_agents:
        ids = policy.agent_ids(c)
        # masked form: the class's whole [R, n_c] block
        o, a, b, x = obs[:, ids], act[:, ids], logp[:, ids], adv[:, ids]
        av, on = avail[:, ids], active[:, ids] * policy.class_mask(c, obs[:, ids])
        policy.zero_grad()
        ref = happo.happo_actor_loss(policy.class_dist(c, o, av), a, b, x, factor, on, 0.2)
        (ref[0] - 0.01 * ref[1]).backward()
        g_ref = [p.grad.clone() for p in policy.actors[c].parameters()]
        f_ref = happo.happo_factor_update(factor, new_logp[:, ids], b, on)
        # gathered form
        rows, pos, flat = policy.class_rows(c, obs, active)
        assert rows.numel() == int(on.sum())
        policy.zero_grad()
        dist = policy.class_dist_at(c, obs.reshape(R * N, -1)[flat], avail.reshape(R * N, -1)[flat], pos)
        got = happo.happo_actor_loss_maps(
            [
                (
                    dist,
                    act.reshape(-1)[flat],
                    logp.reshape(-1)[flat],
                    adv.reshape(-1)[flat],
                    factor[rows],
                    torch.ones(rows.numel()),
                )
            ],
            0.2,
        )
        (got[0] - 0.01 * got[1]).backward()
        for r, v in zip(ref, got, strict=True):
            torch.testing.assert_close(v, r, rtol=1e-5, atol=1e-6)
        for gr, gg in zip(g_ref, (p.grad for p in policy.actors[c].parameters()), strict=True):
            torch.testing.assert_close(gg, gr, rtol=1e-4, atol=1e-6)
        f_got = happo.happo_factor_update_rows(
            factor, new_logp.reshape(-1)[flat], logp.reshape(-1)[flat], rows * ids.numel() + pos, ids.numel()
        )
        torch.testing.assert_close(f_got, f_ref, rtol=1e-5, atol=0)


def test_minibatch_split_keeps_each_agent_step_with_its_env_step():
    rows = torch.tensor([0, 0, 1, 3, 3, 3, 4, 6, 7, 7])
    perm = torch.tensor([5, 3, 0, 7, 6, 1, 2, 4])
    parts = happo.split_rows_by_minibatch(rows, list(perm.split(4)), 8)
    assert [set(rows[p].tolist()) for p in parts] == [{0, 3, 7}, {1, 4, 6}]
    assert sorted(torch.cat(parts).tolist()) == list(range(rows.numel()))
    assert all(bool((p[1:] > p[:-1]).all()) for p in parts)


@pytest.mark.parametrize("map_name", ["2s3z", "MMM"])
def test_gathered_trpo_step_equals_the_masked_one(map_name):
    policy, obs, avail, act, logp = _rollout(map_name, steps=30)
    R, N = act.shape
    active = (~avail[..., 0]).float()
    adv = torch.randn(R, N, generator=torch.Generator().manual_seed(5))
    factor = torch.ones(R)
    args = hatrpo.Args()
    c = next(iter(policy.class_agents))
    ids = policy.agent_ids(c)
    twin = copy.deepcopy(policy)
    before = torch.nn.utils.parameters_to_vector(policy.actors[c].parameters()).detach().clone()
    ref = hatrpo.trpo_step(
        policy, c, obs[:, ids], avail[:, ids], act[:, ids], logp[:, ids], adv[:, ids], factor, active[:, ids], args
    )
    rows, pos, flat = twin.class_rows(c, obs, active)
    got = hatrpo.trpo_step(
        twin,
        c,
        obs.reshape(R * N, -1)[flat],
        avail.reshape(R * N, -1)[flat],
        act.reshape(-1)[flat],
        logp.reshape(-1)[flat],
        adv.reshape(-1)[flat],
        factor[rows],
        torch.ones(rows.numel()),
        args,
        pos=pos,
    )
    assert got["step_accepted"] == ref["step_accepted"] == 1.0
    for key in ("kl", "policy_loss", "entropy", "step_fraction"):
        assert got[key] == pytest.approx(ref[key], rel=1e-3, abs=1e-6), key
    step_ref = torch.nn.utils.parameters_to_vector(policy.actors[c].parameters()).detach() - before
    step_got = torch.nn.utils.parameters_to_vector(twin.actors[c].parameters()).detach() - before
    assert float((step_got - step_ref).norm() / step_ref.norm()) < 1e-3  # CG's solution, up to float summation order
