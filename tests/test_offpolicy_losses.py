"""Hand-computed checks of models/offpolicy_losses.py: V-trace, UPGO, TD(lambda), the masked teacher KL."""

import math

import pytest
import torch

from models.offpolicy_losses import masked_kl, masked_mean, next_values, td_lambda_returns, upgo_returns, vtrace


def t(*rows):
    """Column tensor ``[T, 1]`` from per-step values."""
    return torch.tensor(rows, dtype=torch.float32).unsqueeze(1)


def flags(T, *steps):
    out = torch.zeros(T, 1, dtype=torch.bool)
    for s in steps:
        out[s] = True
    return out


def test_vtrace_on_policy_truncated_then_new_episode():
    # Env 0: steps 0-1 are one episode truncated at step 1 (final obs value 5); steps 2-3 start a new one.
    rewards, values = t(1, 2, 3, 4), t(0.5, 1, 1.5, 2)
    boot, final = torch.tensor([10.0]), t(0, 5, 0, 0)
    term, trunc = flags(4), flags(4, 1)
    out = vtrace(torch.zeros(4, 1, 1), rewards, values, boot, term, trunc, final, gamma=0.9)
    # next values [V1, V_final, V3, boot] = [1, 5, 2, 10]; deltas [1.4, 5.5, 3.3, 11]
    # vs - V: t3 = 11, t2 = 3.3 + 0.9*11, t1 = 5.5 (trace cut at the truncation), t0 = 1.4 + 0.9*5.5
    assert torch.allclose(out.vs[:, 0, 0], torch.tensor([6.85, 6.5, 14.7, 13.0]))
    # pg advantage r_t + gamma v_{t+1} - V_t, with V(s_final) at the truncation: never the new episode's value
    assert torch.allclose(out.pg_advantages[:, 0, 0], torch.tensor([1 + 0.9 * 6.5 - 0.5, 2 + 0.9 * 5 - 1, 13.2, 11.0]))
    # on-policy with lambda 1, v_s is the n-step return inside the episode: 3 + 0.9*4 + 0.81*10
    assert math.isclose(float(out.vs[2, 0, 0]), 3 + 0.9 * 4 + 0.81 * 10, rel_tol=1e-6)


def test_vtrace_termination_never_bootstraps():
    rewards, values = t(1, 2, 3), t(0.5, 1, 1.5)
    out = vtrace(torch.zeros(3, 1, 1), rewards, values, torch.tensor([10.0]), flags(3, 1), flags(3), t(0, 99, 0), gamma=0.9)
    # t1 terminated: delta = 2 - 1 (no bootstrap, final_values unused); t0 = (1 + 0.9 - 0.5) + 0.9 * 1
    assert torch.allclose(out.vs[:, 0, 0], torch.tensor([0.5 + 1.4 + 0.9, 2.0, 3 + 9 - 1.5 + 1.5]))
    assert math.isclose(float(out.pg_advantages[1, 0, 0]), 1.0, rel_tol=1e-6)


def test_vtrace_per_head_ratios_are_clipped_separately():
    # head 0: pi/mu = [0.5, 2.0] -> rho = c = [0.5, 1]; head 1: on-policy.
    log_rhos = torch.log(torch.tensor([[[0.5, 1.0]], [[2.0, 1.0]]]))
    rewards, values = t(1, 1), t(0, 0)
    out = vtrace(log_rhos, rewards, values, torch.tensor([2.0]), flags(2), flags(2), t(0, 0), gamma=1.0)
    # head 0: deltas [0.5*1, 1*(1+2)] -> vs1 = 3, vs0 = 0.5 + 0.5*3 = 2; pg0 = 0.5*(1 + 3)
    # head 1: deltas [1, 3] -> vs = [4, 3]; pg0 = 1 + 3
    assert torch.allclose(out.vs[:, 0], torch.tensor([[2.0, 4.0], [3.0, 3.0]]))
    assert torch.allclose(out.pg_advantages[:, 0], torch.tensor([[2.0, 4.0], [3.0, 3.0]]))
    assert torch.allclose(out.clipped_rhos[:, 0], torch.tensor([[0.5, 1.0], [1.0, 1.0]]))
    # raising rho_bar lets the ratio 2 through for delta_1 and the advantage (c stays clipped at 1)
    hi = vtrace(log_rhos, rewards, values, torch.tensor([2.0]), flags(2), flags(2), t(0, 0), gamma=1.0, rho_bar=4.0)
    assert math.isclose(float(hi.vs[1, 0, 0]), 6.0) and math.isclose(float(hi.vs[0, 0, 0]), 0.5 + 0.5 * 6.0)


def test_vtrace_lambda_scales_the_trace():
    rewards, values = t(1, 1), t(0, 0)
    out = vtrace(
        torch.zeros(2, 1, 1), rewards, values, torch.tensor([2.0]), flags(2), flags(2), t(0, 0), gamma=1.0, lambda_=0.5
    )
    assert torch.allclose(out.vs[:, 0, 0], torch.tensor([1 + 0.5 * 3, 3.0]))


def test_upgo_follows_better_actions_and_stops_at_episode_ends():
    rewards, values, boot = t(0, 1, 0, 5), t(1, 1, 2, 1), torch.tensor([3.0])
    g = upgo_returns(rewards, values, boot, flags(4), flags(4), t(0, 0, 0, 0), gamma=1.0)
    # G3 = 5 + 3; Q3 = 8 >= V3 -> G2 = 0 + 8; Q2 = 0 + V3 = 1 < V2 = 2 -> G1 = 1 + V2; Q1 = 1 + V2 = 3 >= V1 -> G0 = G1
    assert torch.allclose(g[:, 0], torch.tensor([3.0, 3.0, 8.0, 8.0]))
    # truncated at step 1 (final value 4), a new episode from step 2
    g = upgo_returns(rewards, values, boot, flags(4), flags(4, 1), t(0, 4, 0, 0), gamma=1.0)
    assert torch.allclose(g[:, 0], torch.tensor([5.0, 5.0, 8.0, 8.0]))
    # terminated at step 1
    g = upgo_returns(rewards, values, boot, flags(4, 1), flags(4), t(0, 4, 0, 0), gamma=1.0)
    assert torch.allclose(g[:, 0], torch.tensor([1.0, 1.0, 8.0, 8.0]))


def test_td_lambda_hand_values_and_boundaries():
    rewards, values, boot = t(0, 1, 0, 5), t(1, 1, 2, 1), torch.tensor([3.0])
    g = td_lambda_returns(rewards, values, boot, flags(4), flags(4), t(0, 0, 0, 0), gamma=1.0, lambda_=0.5)
    # next values [1, 2, 1, 3]: G3 = 8, G2 = 0.5*1 + 0.5*8, G1 = 1 + 0.5*2 + 0.5*G2, G0 = 0.5*1 + 0.5*G1
    assert torch.allclose(g[:, 0], torch.tensor([2.625, 4.25, 4.5, 8.0]))
    g = td_lambda_returns(rewards, values, boot, flags(4), flags(4, 1), t(0, 4, 0, 0), gamma=1.0, lambda_=0.5)
    assert torch.allclose(g[:, 0], torch.tensor([0.5 * 1 + 0.5 * 5, 5.0, 4.5, 8.0]))
    # lambda = 0 is the one-step target everywhere
    g0 = td_lambda_returns(rewards, values, boot, flags(4), flags(4), t(0, 0, 0, 0), gamma=1.0, lambda_=0.0)
    assert torch.allclose(g0[:, 0], rewards[:, 0] + next_values(values, boot, flags(4), flags(4), t(0, 0, 0, 0))[:, 0])


def test_two_envs_are_independent():
    # env 1 is env 0 shifted: the batch axis must not mix
    rewards = torch.tensor([[1.0, 0.0], [2.0, 1.0]])
    values = torch.zeros(2, 2)
    term = torch.tensor([[True, False], [False, False]])
    out = vtrace(
        torch.zeros(2, 2, 1),
        rewards,
        values,
        torch.tensor([1.0, 2.0]),
        term,
        torch.zeros(2, 2, dtype=torch.bool),
        torch.zeros(2, 2),
        gamma=1.0,
    )
    assert torch.allclose(out.vs[:, :, 0], torch.tensor([[1.0, 3.0], [3.0, 3.0]]))


def test_bad_shapes_raise_clear_errors():
    with pytest.raises(ValueError, match="log_rhos has shape"):
        vtrace(torch.zeros(3, 1), t(1, 2, 3), t(0, 0, 0), torch.zeros(1), flags(3), flags(3), t(0, 0, 0), gamma=1.0)
    with pytest.raises(ValueError, match="bootstrap_value"):
        upgo_returns(t(1, 2), t(0, 0), torch.zeros(2), flags(2), flags(2), t(0, 0), gamma=1.0)
    with pytest.raises(ValueError, match="torch.bool"):
        td_lambda_returns(t(1, 2), t(0, 0), torch.zeros(1), torch.zeros(2, 1), flags(2), t(0, 0), gamma=1.0, lambda_=0.5)


def test_masked_kl_hand_value_renormalises_over_the_valid_set():
    mask = torch.tensor([True, True, False])
    teacher = torch.tensor([0.0, math.log(3.0), 7.0])  # valid part -> [1/4, 3/4]; most raw mass on the masked action
    student = torch.tensor([0.0, 0.0, -3.0])  # valid part -> [1/2, 1/2]
    expected = 0.25 * math.log(0.25 / 0.5) + 0.75 * math.log(0.75 / 0.5)
    kl = masked_kl(teacher, student, mask)
    assert math.isclose(float(kl), expected, rel_tol=1e-5)
    # what lies outside the mask does not matter
    teacher2 = teacher.clone()
    teacher2[2] = -50.0
    assert math.isclose(float(masked_kl(teacher2, student, mask)), expected, rel_tol=1e-5)
    # the reference's partial sum over the full softmaxes is a different (here negative) number
    pt, ps = teacher.softmax(-1), student.softmax(-1)
    legacy = float((pt * (pt.log() - ps.log()) * mask).sum())
    assert legacy < 0 < float(kl)


def test_masked_kl_is_nonnegative_and_zero_when_distributions_agree():
    g = torch.Generator().manual_seed(0)
    teacher = torch.randn(500, 9, generator=g) * 3
    student = torch.randn(500, 9, generator=g) * 3
    mask = torch.rand(500, 9, generator=g) < 0.5
    mask[:, 0] = True
    kl = masked_kl(teacher, student, mask)
    assert kl.shape == (500,) and bool((kl >= 0).all())
    # agreeing on the valid set (a shift of the logits is the same distribution) gives 0
    same = masked_kl(teacher, teacher + 2.0, mask)
    assert float(same.abs().max()) < 1e-5
    # a single valid action: both are certain of it
    one = torch.zeros(9, dtype=torch.bool)
    one[4] = True
    assert float(masked_kl(teacher[0], student[0], one)) == 0.0


def test_entirely_masked_head_gives_zero_not_nan_with_finite_gradients():
    teacher = torch.tensor([[1.0, 2.0, 3.0], [0.5, -1.0, 2.0]])
    student = torch.tensor([[3.0, 2.0, 1.0], [1.0, 1.0, 1.0]], requires_grad=True)
    mask = torch.tensor([[False, False, False], [True, False, True]])
    kl = masked_kl(teacher, student, mask)
    assert float(kl[0].detach()) == 0.0 and not torch.isnan(kl.detach()).any()
    kl.sum().backward()
    assert torch.isfinite(student.grad).all()
    assert float(student.grad[0].abs().sum()) == 0.0


def test_masked_kl_rejects_float_masks_and_shape_mismatch():
    with pytest.raises(ValueError, match="torch.bool"):
        masked_kl(torch.zeros(3), torch.zeros(3), torch.ones(3))
    with pytest.raises(ValueError, match="expected all equal"):
        masked_kl(torch.zeros(3), torch.zeros(4), torch.ones(3, dtype=torch.bool))


def test_masked_mean_of_nothing_is_zero():
    assert float(masked_mean(torch.ones(3), torch.zeros(3))) == 0.0
    assert float(masked_mean(torch.tensor([1.0, 3.0, 5.0]), torch.tensor([1.0, 1.0, 0.0]))) == 2.0
