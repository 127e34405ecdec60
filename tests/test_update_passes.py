"""A minibatch run in several forward/backward passes (``Args.pass_rows``) gives the one-pass update.

HAPPO's actor and critic losses are means over the minibatch; ``happo_actor_loss`` returns sums and
``critic_backward`` backpropagates per-pass sums divided by the whole minibatch's count, so the
accumulated gradients equal the one-pass gradients up to float summation order.
"""

import copy

import pytest
import torch
from conftest import load_algo
from test_class_rows import _loss_inputs
from test_multimap import _batches, _infos

from models import build_multi_map_models
from models.minibatches import minibatch_indices, pass_rows_for

happo = load_algo("happo_gnn")


def _grads(module):
    return [p.grad.clone() for p in module.parameters()]


@pytest.mark.parametrize("map_name", ["2s3z", "MMM", "protoss_5_vs_5"])
def test_actor_passes_accumulate_the_one_pass_gradient(map_name):
    policy, obs, avail, act, logp, alive, adv, factor, _ = _loss_inputs(map_name)
    R, N = act.shape
    for c in policy.class_agents:
        rows, pos, flat = policy.class_rows(c, obs, alive)
        assert rows.numel() > 7

        def part(i, c=c, rows=rows, pos=pos, flat=flat):
            f = flat[i]
            dist = policy.class_dist_at(c, obs.reshape(R * N, -1)[f], avail.reshape(R * N, -1)[f], pos[i])
            return (
                dist,
                act.reshape(-1)[f],
                logp.reshape(-1)[f] + 0.05,
                adv.reshape(-1)[f],
                factor[rows[i]],
            )

        everything = torch.arange(rows.numel())
        policy.zero_grad()
        ref = [s / rows.numel() for s in happo.happo_actor_loss(*part(everything), 0.2)]
        (ref[0] - 0.01 * ref[1]).backward()
        g_ref = _grads(policy.actors[c])
        policy.zero_grad()
        sums = torch.zeros(4)
        for i in everything.split(7):  # uneven passes, the last one short
            pg, ent, kl, clip = happo.happo_actor_loss(*part(i), 0.2)
            ((pg - 0.01 * ent) / rows.numel()).backward()
            sums += torch.stack([pg.detach(), ent.detach(), kl, clip])
        torch.testing.assert_close(sums / rows.numel(), torch.stack(list(ref)).detach(), rtol=1e-5, atol=1e-6)
        for gr, gg in zip(g_ref, _grads(policy.actors[c]), strict=True):
            torch.testing.assert_close(gg, gr, rtol=1e-4, atol=1e-6)


def test_critic_passes_accumulate_the_one_pass_gradient_and_update_the_normaliser_once():
    torch.manual_seed(0)
    _, critic, _, crits = build_multi_map_models(_infos("3m", "8m"), "gnn", hidden=16)
    _, outs = _batches(("3m", "8m"), num_envs=6)
    data = [
        {"states": o["state"], "returns": r, "values": torch.randn(6)}
        for o, r in zip(outs, (torch.randn(6), torch.randn(6) + 5.0), strict=True)
    ]
    args = happo.Args(vf_coef=0.5)
    mb = minibatch_indices([6, 6], 1, "cpu")[0]
    vn_before = copy.deepcopy(crits[0].value_norm.state_dict())
    critic.zero_grad()
    ref = happo.critic_backward(crits, data, mb, args, 1 << 62)  # one pass
    g_ref, vn_ref = _grads(critic), copy.deepcopy(crits[0].value_norm.state_dict())
    crits[0].value_norm.load_state_dict(vn_before)
    critic.zero_grad()
    got = happo.critic_backward(crits, data, mb, args, 4)
    torch.testing.assert_close(got, ref, rtol=1e-5, atol=1e-6)
    for a, b in zip(crits[0].value_norm.state_dict().values(), vn_ref.values(), strict=True):
        assert torch.equal(a, b)  # one update with the minibatch's returns, not one per pass
    for gr, gg in zip(g_ref, _grads(critic), strict=True):
        torch.testing.assert_close(gg, gr, rtol=1e-4, atol=1e-6)


def test_pass_rows_automatic_and_explicit():
    assert pass_rows_for(0, torch.device("cpu")) == 1024
    assert pass_rows_for(0, torch.device("cuda")) >= 1 << 40
    assert pass_rows_for(300, torch.device("cpu")) == 300
