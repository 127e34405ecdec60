"""models/alphastar_rl.py: per-head log-probs, entropies, teacher KL and AlphaStar's off-policy loss,
checked against hand computations on a two-step batch."""

from __future__ import annotations

import math

import pytest
import torch

from sc2_envs.full_game._deps import MissingDependencyError, require

try:
    require("pysc2_evolved.lib.actions", "the full-game loss tests")
except MissingDependencyError as e:
    pytest.skip(f"the full-game extra is not usable here: {e}", allow_module_level=True)

from models.alphastar_rl import OffPolicySettings, alphastar_offpolicy_loss, head_kl, head_terms  # noqa: E402
from models.common import MASKED_LOGIT  # noqa: E402

NO_OP, ATTACK_PT = 0, 2  # pysc2 raw function ids: no_op uses action_type and delay; Attack_pt also queued, selected, location
E, K, R2 = 4, 3, 16


def _fake_out(seed=0):
    """A forward output over B=1 game and 3 steps: Attack_pt (2 units then end of selection, cell 7),
    no_op, no_op (the bootstrap row)."""
    g = torch.Generator().manual_seed(seed)

    def r(*shape):
        return torch.randn(1, 3, *shape, generator=g)

    sel_mask = torch.ones(1, 3, K, E + 1, dtype=torch.bool)
    sel_mask[..., 0, E] = False  # no end of selection at the first pick
    sel_mask[..., 1, 1] = False  # unit 1 picked at step 0
    sel_mask[..., 2, 1] = sel_mask[..., 2, 3] = False
    su = torch.where(sel_mask, r(K, E + 1), torch.full((1, 3, K, E + 1), MASKED_LOGIT))
    return {
        "action_type": r(564),
        "delay": r(128),
        "queued": r(2),
        "selected_units": su,
        "selected_mask": sel_mask,
        "target_unit": r(E),
        "target_mask": torch.ones(1, 3, E, dtype=torch.bool),
        "target_location": r(R2),
        "value": {"winloss": torch.tensor([[0.2, 0.5, 0.1]], requires_grad=True)},
        "actions": {
            "action_type": torch.tensor([[ATTACK_PT, NO_OP, NO_OP]]),
            "delay": torch.tensor([[5, 0, 0]]),
            "queued": torch.tensor([[1, 0, 0]]),
            "selected": torch.tensor([[[1, 3, E], [E, E, E], [E, E, E]]]),
            "target_unit": torch.tensor([[-1, -1, -1]]),
            "target_location": torch.tensor([[7, -1, -1]]),
        },
    }


def _at_mask():
    m = torch.zeros(1, 3, 564, dtype=torch.bool)
    m[..., [NO_OP, ATTACK_PT, 3, 64]] = True
    return m


def _log_softmax_at(logits, i, mask=None):
    xs = [float(v) if mask is None or bool(mask[j]) else -math.inf for j, v in enumerate(logits)]
    top = max(xs)
    return xs[i] - top - math.log(sum(math.exp(x - top) for x in xs))


def _entropy(logits, mask=None):
    return -sum(math.exp(lp) * lp for i in range(len(logits)) if (lp := _log_softmax_at(logits, i, mask)) > -math.inf)


def test_head_log_probs_and_entropies_count_only_the_heads_the_action_type_uses():
    out, m = _fake_out(), _at_mask()
    terms = head_terms(out, m)
    o = {k: v[0] for k, v in out.items() if k not in ("value", "actions")}
    su = o["selected_units"][0]
    used_steps = [(0, 1), (1, 3), (2, E)]  # two picks and the end of selection
    want0 = [
        _log_softmax_at(o["action_type"][0], ATTACK_PT, m[0, 0]),
        _log_softmax_at(o["delay"][0], 5),
        _log_softmax_at(o["queued"][0], 1),
        sum(_log_softmax_at(su[k], i, o["selected_mask"][0, k]) for k, i in used_steps),
        0.0,  # target_unit: Attack_pt takes a point
        _log_softmax_at(o["target_location"][0], 7),
    ]
    want1 = [_log_softmax_at(o["action_type"][1], NO_OP, m[0, 1]), _log_softmax_at(o["delay"][1], 0), 0, 0, 0, 0]
    assert terms.logp[0, 0].tolist() == pytest.approx(want0, abs=1e-5)
    assert terms.logp[0, 1].tolist() == pytest.approx(want1, abs=1e-5)
    assert terms.used[0, :2].tolist() == [[True, True, True, True, False, True], [True, True, False, False, False, False]]
    ent0 = _entropy(o["action_type"][0], m[0, 0])  # over the 4 available action types only
    assert float(terms.entropy[0, 0, 0]) == pytest.approx(ent0, abs=1e-5)
    su_ent = sum(_entropy(su[k], o["selected_mask"][0, k]) for k in range(3))
    assert float(terms.entropy[0, 0, 3]) == pytest.approx(su_ent, abs=1e-4)
    assert terms.entropy[0, 1, 2:].tolist() == [0.0] * 4


def test_teacher_kl_is_zero_when_the_teacher_is_the_policy():
    out = _fake_out()
    assert head_kl(out, out, _at_mask()).abs().max().item() == 0.0


def test_teacher_kl_counts_a_head_only_where_the_action_type_uses_it():
    student = _fake_out(0)
    teacher = dict(student)
    g = torch.Generator().manual_seed(5)
    teacher["target_location"] = torch.randn(1, 3, R2, generator=g)  # used at step 0 only
    teacher["target_unit"] = torch.randn(1, 3, E, generator=g)  # used nowhere
    kl = head_kl(teacher, student, _at_mask())
    want = sum(
        math.exp(_log_softmax_at(teacher["target_location"][0, 0], i))
        * (_log_softmax_at(teacher["target_location"][0, 0], i) - _log_softmax_at(student["target_location"][0, 0], i))
        for i in range(R2)
    )
    assert float(kl[0, 0, 5]) == pytest.approx(want, abs=1e-5) and want > 0
    assert kl[0, 1:].abs().max().item() == 0.0 and kl[..., 4].abs().max().item() == 0.0
    assert kl[0, 0, :5].abs().max().item() == 0.0


def test_offpolicy_loss_uses_each_heads_own_clipped_ratio_only_where_the_head_is_used():
    out, m = _fake_out(), _at_mask()
    logp = head_terms(out, m).logp[0, :2]  # [T, 6]
    # wanted log-ratios: action_type +0.5 (clipped to 1), selected_units -0.3, location -1.0 at step 0;
    # heads a step does not use get absurd behaviour log-probs, which must change nothing
    log_rho = torch.tensor([[0.5, 0.0, 0.2, -0.3, 0.0, -1.0], [-0.4, 0.1, 0.0, 0.0, 0.0, 0.0]])
    used = torch.tensor([[1, 1, 1, 1, 0, 1], [1, 1, 0, 0, 0, 0]], dtype=torch.bool)
    behaviour = torch.where(used, logp - log_rho, torch.full_like(logp, -50.0))
    batch = {
        "at_mask": m,
        "behaviour_logp": behaviour.unsqueeze(1),
        "reward": torch.tensor([[0.0], [1.0]]),
        "terminated": torch.tensor([[False], [True]]),
        "truncated": torch.tensor([[False], [False]]),
        "valid": torch.tensor([[True], [True]]),
    }
    s = OffPolicySettings(gamma=0.9, td_lambda=0.8, ent_coef=0.0)
    loss, logs = alphastar_offpolicy_loss(out, None, batch, s)

    v0, v1, g = 0.2, 0.5, 0.9
    pg = upgo = 0.0
    for h in range(6):
        rho0, rho1 = (min(1.0, math.exp(float(log_rho[t, h]))) for t in range(2))
        if used[1, h]:  # the terminal step: no future
            pg += float(logp[1, h]) * rho1 * (1.0 - v1)
            upgo += float(logp[1, h]) * rho1 * (1.0 - v1)
        if used[0, h]:
            vs1 = v1 + rho1 * (1.0 - v1)  # V-trace target of step 1 with this head's ratio
            pg += float(logp[0, h]) * rho0 * (0.0 + g * vs1 - v0)
            upgo += float(logp[0, h]) * rho0 * (g * 1.0 - v0)  # r1 + 0 >= V(1): UPGO follows the return
    assert logs["losses/policy_loss"].item() == pytest.approx(-pg / 2, abs=1e-5)
    assert logs["losses/upgo_loss"].item() == pytest.approx(-upgo / 2, abs=1e-5)
    g_td = [0.0 + g * (0.2 * v1 + 0.8 * 1.0), 1.0]
    v_loss = 0.5 * ((g_td[0] - v0) ** 2 + (g_td[1] - v1) ** 2) / 2
    assert logs["losses/value_loss"].item() == pytest.approx(v_loss, abs=1e-6)
    assert loss.item() == pytest.approx(-pg / 2 - upgo / 2 + v_loss, abs=1e-5)
    loss.backward()
    assert out["value"]["winloss"].grad is not None  # the value trains the win/loss baseline


def test_a_step_the_env_ignored_changes_no_term():
    out, m = _fake_out(), _at_mask()
    base = {
        "at_mask": m,
        "behaviour_logp": head_terms(out, m).logp[0, :2].unsqueeze(1).detach(),
        "reward": torch.tensor([[0.0], [0.0]]),
        "terminated": torch.tensor([[True], [False]]),
        "truncated": torch.tensor([[False], [False]]),
        "valid": torch.tensor([[True], [False]]),  # step 1: the autoreset step after the episode's end
    }
    _, logs = alphastar_offpolicy_loss(out, None, base, OffPolicySettings(gamma=0.9))
    changed = dict(base, behaviour_logp=base["behaviour_logp"].clone())
    changed["behaviour_logp"][1] = -20.0
    _, logs2 = alphastar_offpolicy_loss(out, None, changed, OffPolicySettings(gamma=0.9))
    for k in ("losses/policy_loss", "losses/upgo_loss", "losses/value_loss", "losses/entropy"):
        assert logs[k].item() == logs2[k].item(), k
    assert logs["losses/value_loss"].item() == pytest.approx(0.5 * (0.0 - 0.2) ** 2)  # only step 0, terminal


def test_a_truncated_step_bootstraps_from_the_value_of_the_final_observation_and_a_terminated_one_does_not():
    # next-step autoreset: row 1 is the game's final observation (its own step is the ignored autoreset step)
    out, m = _fake_out(), _at_mask()

    def td_return(terminated, truncated):
        batch = {
            "at_mask": m,
            "behaviour_logp": head_terms(out, m).logp[0, :2].unsqueeze(1).detach(),
            "reward": torch.tensor([[0.0], [0.0]]),
            "terminated": torch.tensor([[terminated], [False]]),
            "truncated": torch.tensor([[truncated], [False]]),
            "valid": torch.tensor([[True], [False]]),
        }
        _, logs = alphastar_offpolicy_loss(out, None, batch, OffPolicySettings(gamma=0.9, td_lambda=0.8))
        return logs["losses/td_lambda_return_mean"].item(), logs["losses/vtrace_advantage"].item()

    v0, v_final = 0.2, 0.5
    g, adv = td_return(terminated=False, truncated=True)  # a training game cut at --train-game-loops
    assert g == pytest.approx(0.9 * v_final) and adv == pytest.approx(0.9 * v_final - v0)
    g, adv = td_return(terminated=True, truncated=False)  # a game that ended (a tie here: reward 0)
    assert g == 0.0 and adv == pytest.approx(-v0)
