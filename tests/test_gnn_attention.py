"""models.gnn.attention: the fused (SDPA) and explicit forms are one function, equal up to float rounding."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import models.gnn as gnn


def _inputs(T: int, masked: bool, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(64, 4, T, 16, generator=g, requires_grad=True) for _ in range(3))
    if not masked:
        return q, k, v, None
    valid = torch.rand(64, T, generator=g) < 0.6
    valid[:, 0] = True
    return q, k, v, valid[:, None, None, :]


@pytest.fixture
def form(monkeypatch):
    def set_form(name):
        monkeypatch.setattr(gnn, "ATTENTION_FORM", name)

    return set_form


@pytest.mark.parametrize("T", [1, 10, 17, 32, 57])
@pytest.mark.parametrize("masked", [True, False])
def test_both_forms_give_the_same_output_and_gradients(T, masked, form):
    results = {}
    for name in ("sdpa", "explicit"):
        form(name)
        q, k, v, mask = _inputs(T, masked)
        out = gnn.attention(q, k, v, mask)
        out.square().sum().backward()
        results[name] = (out.detach(), q.grad, k.grad, v.grad)
    for a, b in zip(results["sdpa"], results["explicit"], strict=True):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)
    q, k, v, mask = _inputs(T, masked)
    torch.testing.assert_close(results["sdpa"][0], F.scaled_dot_product_attention(q, k, v, attn_mask=mask).detach())


def test_masked_keys_get_no_weight(form):
    """A masked key changes nothing, whatever its value, in either form."""
    for name in ("sdpa", "explicit"):
        form(name)
        q, k, v, mask = _inputs(10, True)
        k2, v2 = k.detach().clone(), v.detach().clone()
        hidden = ~mask[:, 0, 0, :]
        k2[hidden.nonzero(as_tuple=True)[0], :, hidden.nonzero(as_tuple=True)[1]] = 1e3
        v2[hidden.nonzero(as_tuple=True)[0], :, hidden.nonzero(as_tuple=True)[1]] = -1e3
        torch.testing.assert_close(gnn.attention(q, k, v, mask), gnn.attention(q, k2, v2, mask))


def test_sdpa_is_the_default_form():
    assert gnn.ATTENTION_FORM == "sdpa"


def test_a_whole_actor_plays_alike_in_both_forms(form):
    """The shipped 2s3z checkpoint's logits on real observations: equal up to rounding across forms."""
    from conftest import REPO

    import sc2_envs
    from models import load_checkpoint

    env = sc2_envs.make_batched("2s3z", num_envs=16, seed=3)
    policy, _, _ = load_checkpoint(str(REPO / "checkpoints" / "2s3z_gnn.pt"), env.get_env_info(), with_critic=False)
    obs = env.reset()
    for _ in range(5):
        with torch.no_grad():
            actions, _ = policy.act(obs["obs"], obs["avail_actions"])
        obs = env.step(actions)
    logits = {}
    for name in ("sdpa", "explicit"):
        form(name)
        with torch.no_grad():
            logits[name] = policy.logits(obs["obs"])
    avail = obs["avail_actions"]
    torch.testing.assert_close(logits["sdpa"][avail], logits["explicit"][avail], rtol=1e-5, atol=1e-5)


def test_an_unknown_form_is_refused(form):
    form("flash")
    with pytest.raises(ValueError, match="ATTENTION_FORM = 'flash': expected 'sdpa' or 'explicit'"):
        gnn.attention(*_inputs(10, True))
