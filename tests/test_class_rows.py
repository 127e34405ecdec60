"""Running a class actor only on the agent-steps it serves (``ClassPolicy.class_rows``) equals the masked form.

HAPPO and HATRPO run each class actor on the alive agent-steps of its class only (SMACv2: of that class
at that step). These tests compare the training loop's gathered form with the paper's masked form
(every agent of the class, the terms that do not count weighted 0, written out in the tests) on seeded
rollouts of a fixed-roster map, a map with a healer and a SMACv2 scenario: same actions, same losses,
gradients, factors and trust-region steps up to float summation order.
"""

import pytest
import torch
from conftest import load_algo

import sc2_envs
from models import build_models, trust_region
from models.minibatches import split_rows_by_minibatch

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


def _masked_loss(dist, actions, behaviour, adv, factor, alive, clip_coef):
    """HAPPO's surrogate over a class's whole ``[R, n_c]`` block, dead agents masked (the paper's form):
    ``(pg, entropy, approx_kl, clipfrac)``, each a mean over the alive agents."""
    logratio = dist.log_prob(actions) - behaviour
    ratio = logratio.exp()
    surr = torch.min(ratio * adv, torch.clamp(ratio, 1 - clip_coef, 1 + clip_coef) * adv)
    n = alive.sum().clamp(min=1.0)
    with torch.no_grad():
        kl = (((ratio - 1) - logratio) * alive).sum() / n
        clipfrac = (((ratio - 1.0).abs() > clip_coef).float() * alive).sum() / n
    return -(factor[:, None] * surr * alive).sum() / n, (dist.entropy() * alive).sum() / n, kl, clipfrac


@pytest.mark.parametrize("map_name", MAPS)
def test_gathered_class_loss_gradient_and_factor_equal_the_masked_ones(map_name):
    policy, obs, avail, act, logp, alive, adv, factor, g = _loss_inputs(map_name)
    R, N = act.shape
    new_logp = logp + 0.1 * torch.randn(R, N, generator=g)
    for c in policy.class_agents:
        ids = policy.agent_ids(c)
        # masked form: the class's whole [R, n_c] block
        o, a, b, x = obs[:, ids], act[:, ids], logp[:, ids], adv[:, ids]
        av, on = avail[:, ids], alive[:, ids] * policy.class_mask(c, obs[:, ids])
        policy.zero_grad()
        ref = _masked_loss(policy.class_dist(c, o, av), a, b, x, factor, on, 0.2)
        (ref[0] - 0.01 * ref[1]).backward()
        g_ref = [p.grad.clone() for p in policy.actors[c].parameters()]
        f_ref = factor * torch.exp(((new_logp[:, ids] - b) * on).sum(-1))
        # gathered form, as the training loop runs it
        rows, pos, flat = policy.class_rows(c, obs, alive)
        assert rows.numel() == int(on.sum())
        policy.zero_grad()
        dist = policy.class_dist_at(c, obs.reshape(R * N, -1)[flat], avail.reshape(R * N, -1)[flat], pos)
        sums = happo.happo_actor_loss(
            dist, act.reshape(-1)[flat], logp.reshape(-1)[flat], adv.reshape(-1)[flat], factor[rows], 0.2
        )
        got = [s / rows.numel() for s in sums]
        (got[0] - 0.01 * got[1]).backward()
        for r, v in zip(ref, got, strict=True):
            torch.testing.assert_close(v, r, rtol=1e-5, atol=1e-6)
        for gr, gg in zip(g_ref, (p.grad for p in policy.actors[c].parameters()), strict=True):
            torch.testing.assert_close(gg, gr, rtol=1e-4, atol=1e-6)
        f_got = happo.happo_factor_update(factor, new_logp.reshape(-1)[flat], logp.reshape(-1)[flat], rows, pos, ids.numel())
        torch.testing.assert_close(f_got, f_ref, rtol=1e-5, atol=0)


def test_minibatch_split_keeps_each_agent_step_with_its_env_step():
    rows = torch.tensor([0, 0, 1, 3, 3, 3, 4, 6, 7, 7])
    perm = torch.tensor([5, 3, 0, 7, 6, 1, 2, 4])
    parts = split_rows_by_minibatch(rows, list(perm.split(4)), 8)
    assert [set(rows[p].tolist()) for p in parts] == [{0, 3, 7}, {1, 4, 6}]
    assert sorted(torch.cat(parts).tolist()) == list(range(rows.numel()))
    assert all(bool((p[1:] > p[:-1]).all()) for p in parts)


@pytest.mark.parametrize("map_name", ["2s3z", "MMM"])
def test_gathered_trpo_step_moves_along_the_masked_natural_gradient(map_name):
    """The training loop's step on the gathered alive agent-steps goes along ``F^-1 g`` of the masked form
    (the class's whole block, dead agents weighted 0), and its stats are the masked means after the step."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    from models.common import masked_mean

    policy, obs, avail, act, logp = _rollout(map_name, steps=30)
    R, N = act.shape
    alive = (~avail[..., 0]).float()
    adv = torch.randn(R, N, generator=torch.Generator().manual_seed(5))
    factor = torch.ones(R)
    args = hatrpo.Args()
    c = next(iter(policy.class_agents))
    ids = policy.agent_ids(c)
    params = list(policy.actors[c].parameters())
    before = torch.nn.utils.parameters_to_vector(params).detach().clone()
    o, av, a, b, x, on = obs[:, ids], avail[:, ids], act[:, ids], logp[:, ids], adv[:, ids], alive[:, ids]

    def surrogate():
        return masked_mean(factor[:, None] * torch.exp(policy.class_dist(c, o, av).log_prob(a) - b) * x, on)

    with sdpa_kernel(SDPBackend.MATH):  # the KL's double backward
        g = trust_region.flat_grad(surrogate(), params)
        with torch.no_grad():
            old = policy.class_dist(c, o, av)
        grad_kl = trust_region.flat_grad(masked_mean(old.kl(policy.class_dist(c, o, av)), on), params, create_graph=True)
        direction = trust_region.conjugate_gradient(
            lambda v: trust_region.flat_grad(grad_kl @ v, params, retain_graph=True) + args.cg_damping * v, g, args.cg_iters
        )
    rows, pos, flat = policy.class_rows(c, obs, alive)
    got = hatrpo.trpo_step(
        [policy],
        c,
        [obs.reshape(R * N, -1)[flat]],
        [avail.reshape(R * N, -1)[flat]],
        [act.reshape(-1)[flat]],
        [logp.reshape(-1)[flat]],
        [adv.reshape(-1)[flat]],
        [factor[rows]],
        [pos],
        args,
    )
    assert got["step_accepted"] == 1.0
    step = torch.nn.utils.parameters_to_vector(params).detach() - before
    assert float(step @ direction / (step.norm() * direction.norm())) > 1 - 1e-3  # CG's solution, up to float order
    with torch.no_grad():
        new = policy.class_dist(c, o, av)
        masked = {"kl": masked_mean(old.kl(new), on), "policy_loss": -surrogate(), "entropy": masked_mean(new.entropy(), on)}
    for key, value in masked.items():
        assert got[key] == pytest.approx(float(value), rel=1e-3, abs=1e-6), key
