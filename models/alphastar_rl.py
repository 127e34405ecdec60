"""Per-head log-probabilities, entropies, teacher KL and the off-policy loss of ``AlphaStarPolicy``.

AlphaStar (Vinyals et al., Nature 2019, "Methods": "Reinforcement learning") trains each action
argument (head) with its own importance ratio, V-trace and UPGO terms, and distils every head
towards the supervised policy with a KL, each head counted only where the chosen action type uses
it. This module computes those terms from ``AlphaStarPolicy.forward`` outputs (``models.alphastar``);
the V-trace, UPGO and TD(lambda) targets are those of ``models.offpolicy_losses``.

Heads (``spec.ACTION_HEADS``): action_type, delay, queued, selected_units, target_unit,
target_location. A head is *used* at a step where ``spec.argument_masks()[action_type]`` says so
(action_type and delay always). ``selected_units`` is a sequence of pointer steps: its log-prob,
entropy and KL are sums over the steps up to and including the end-of-selection step (all ``K``
steps when the selection fills them), the steps the policy actually sampled.

All functions read the *chosen* indices from ``out["actions"]``: the sampled ones in an actor's
forward, the teacher-forced labels in a learner's (``forward(obs, labels=...)``), so behaviour and
target log-probs are computed by the same code.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import torch
import torch.nn.functional as F

from models.common import MASKED_LOGIT
from models.offpolicy_losses import masked_kl, td_lambda_returns, upgo_returns, vtrace
from sc2_envs.full_game import spec

__all__ = ["HEADS", "HeadTerms", "OffPolicySettings", "alphastar_offpolicy_loss", "head_kl", "head_terms"]

HEADS = spec.ACTION_HEADS
_ARGUMENT_MASKS = torch.as_tensor(spec.argument_masks(), dtype=torch.bool)


class HeadTerms(NamedTuple):
    """Per-head terms of one forward pass, each ``[B, T, 6]`` over ``HEADS``.

    logp: log-probability of the chosen index (0 where the head is unused). entropy: entropy of the
    head's distribution (0 where unused). used: bool, the chosen action type uses the head.
    """

    logp: torch.Tensor
    entropy: torch.Tensor
    used: torch.Tensor


def _masked_action_type(logits: torch.Tensor, at_mask: torch.Tensor) -> torch.Tensor:
    if at_mask.shape != logits.shape:
        raise ValueError(
            f"at_mask has shape {tuple(at_mask.shape)}; expected {tuple(logits.shape)} like the action_type logits"
        )
    return torch.where(at_mask.bool(), logits, torch.full_like(logits, MASKED_LOGIT))


def _pointer_steps(selected: torch.Tensor, eof: int, used: torch.Tensor) -> torch.Tensor:
    """``[B, T, K]`` bool: pointer steps sampled (up to and including the first end-of-selection)."""
    is_eof = selected == eof
    ended_before = (torch.cumsum(is_eof.long(), -1) - is_eof.long()) > 0
    return used.unsqueeze(-1) & ~ended_before


def _entropy(logp: torch.Tensor) -> torch.Tensor:
    return -(logp.exp() * logp).sum(-1)


def head_terms(out: dict, at_mask: torch.Tensor) -> HeadTerms:
    """Log-probabilities and entropies of the chosen indices of every head.

    Args:
        out: ``AlphaStarPolicy.forward`` output over ``[B, T]`` (logits and ``actions``).
        at_mask: ``[B, T, F]`` bool, the action types available (the observation's
            ``action_type_mask`` with no_op set); applied to the action-type logits as the actor
            applied it when it sampled (a replay-trained model does not read the mask itself).

    Returns:
        :class:`HeadTerms`.

    Raises:
        ValueError: ``at_mask`` does not match the action-type logits.
    """
    acts = out["actions"]
    a = acts["action_type"].long()
    used = _ARGUMENT_MASKS.to(a.device)[a]
    lp_at = F.log_softmax(_masked_action_type(out["action_type"], at_mask), -1)
    lp_delay = F.log_softmax(out["delay"], -1)
    lp_q = F.log_softmax(out["queued"], -1)
    lp_sel = F.log_softmax(out["selected_units"], -1)  # masked by the model (selected_mask)
    lp_tu = F.log_softmax(out["target_unit"], -1)
    lp_loc = F.log_softmax(out["target_location"], -1)

    def pick(lp, idx):
        return lp.gather(-1, idx.long().clamp(min=0).unsqueeze(-1)).squeeze(-1)

    steps = _pointer_steps(acts["selected"], out["selected_units"].shape[-1] - 1, used[..., 3])
    logp = torch.stack(
        [
            pick(lp_at, a),
            pick(lp_delay, acts["delay"]),
            pick(lp_q, acts["queued"]),
            (pick(lp_sel, acts["selected"]) * steps).sum(-1),
            pick(lp_tu, acts["target_unit"]),
            pick(lp_loc, acts["target_location"]),
        ],
        -1,
    )
    entropy = torch.stack(
        [
            _entropy(lp_at),
            _entropy(lp_delay),
            _entropy(lp_q),
            (_entropy(lp_sel) * steps).sum(-1),
            _entropy(lp_tu),
            _entropy(lp_loc),
        ],
        -1,
    )
    zero = torch.zeros_like(logp)
    return HeadTerms(torch.where(used, logp, zero), torch.where(used, entropy, zero), used)


def head_kl(teacher_out: dict, student_out: dict, at_mask: torch.Tensor) -> torch.Tensor:
    """``KL(teacher || student)`` of every head at the chosen indices' contexts: ``[B, T, 6]``.

    Both outputs must come from the same observations and the same teacher-forced labels (so the
    autoregressive heads condition on the same choices). Each head's KL is ``masked_kl`` over its
    valid entries (the available action types; the pointer masks; every delay, queued value and
    grid cell), ``0`` where the chosen action type does not use the head (AlphaStar masks the
    teacher KL per head by the argument mask); ``selected_units`` sums over its sampled steps.

    Raises:
        ValueError: the two outputs' logits differ in shape (different entity rows or heads).
    """
    for k in ("action_type", "selected_units", "target_unit", "target_location"):
        if teacher_out[k].shape != student_out[k].shape:
            raise ValueError(
                f"teacher {k} logits {tuple(teacher_out[k].shape)} vs student {tuple(student_out[k].shape)}; "
                "run both on the same (row-padded) observations"
            )
    acts = student_out["actions"]
    used = _ARGUMENT_MASKS.to(at_mask.device)[acts["action_type"].long()]
    steps = _pointer_steps(acts["selected"], student_out["selected_units"].shape[-1] - 1, used[..., 3])

    def full(x):
        return torch.ones_like(x, dtype=torch.bool)

    t, s = teacher_out, student_out
    kl = torch.stack(
        [
            masked_kl(t["action_type"], s["action_type"], at_mask.bool()),
            masked_kl(t["delay"], s["delay"], full(s["delay"])),
            masked_kl(t["queued"], s["queued"], full(s["queued"])),
            (masked_kl(t["selected_units"], s["selected_units"], s["selected_mask"]) * steps).sum(-1),
            masked_kl(t["target_unit"], s["target_unit"], s["target_mask"]),
            masked_kl(t["target_location"], s["target_location"], full(s["target_location"])),
        ],
        -1,
    )
    return torch.where(used, kl, torch.zeros_like(kl))


@dataclass(frozen=True)
class OffPolicySettings:
    """Discount, trace and loss coefficients (``algos/a3c_upgo.py``'s flags of the same names).

    The script sets every field from its flags (``learner_models.fullgame_pieces``), so these defaults serve
    direct callers only; ``gamma`` 1 here (AlphaStar's) differs from the flag's 0.99 (the SMAC maps').
    """

    gamma: float = 1.0
    rho_bar: float = 1.0
    c_bar: float = 1.0
    vtrace_lambda: float = 1.0
    td_lambda: float = 0.8
    pg_coef: float = 1.0
    upgo_coef: float = 1.0
    vf_coef: float = 1.0
    ent_coef: float = 0.01
    kl_coef: float = 0.0


def alphastar_offpolicy_loss(
    out: dict, teacher_out: dict | None, batch: dict, s: OffPolicySettings
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """AlphaStar's actor-critic loss on one batch of unrolls: per-head V-trace and UPGO, a TD(lambda)
    value loss on the win/loss baseline, an entropy bonus and the per-head teacher KL.

    Args:
        out: the student's teacher-forced ``forward`` over ``[B, T + 1]`` steps (row ``T`` is the
            bootstrap observation; its head outputs are unused), with gradients.
        teacher_out: the teacher's teacher-forced ``forward`` over the first ``T`` steps, or None
            (no KL; ``s.kl_coef`` must then be 0).
        batch: ``at_mask [B, T+1, F]`` bool; time-major ``behaviour_logp [T, B, 6]`` (per-head
            log-probs of the actor, :func:`head_terms`), ``reward [T, B]``, ``terminated``,
            ``truncated`` and ``valid [T, B]`` bool (False on a next-step autoreset step, whose action
            the env ignored: such a step is left out of every mean and cuts every trace).

    Returns:
        ``(loss, logs)``. Every policy term sums over the heads and averages over valid steps.

    Per head ``h``: ``log_rho_h = (log pi_h - log mu_h) * used_h`` (an unused head has ratio 1 and
    no policy term), V-trace per head (``models.offpolicy_losses.vtrace``), UPGO advantage
    ``min(rho_bar, rho_h) (G^UPGO - V)``. With next-step autoreset the observation after a truncated
    step is the episode's final observation, so ``V(s_final)`` is the next row's value.

    Raises:
        ValueError: ``kl_coef > 0`` without a teacher output, or a student output whose step count
            is not ``T + 1``.
    """
    if s.kl_coef > 0 and teacher_out is None:
        raise ValueError(f"kl_coef={s.kl_coef} > 0 needs the teacher's output")
    T = batch["reward"].shape[0]
    at_mask = batch["at_mask"]
    values_all = out["value"]["winloss"].transpose(0, 1)  # [T+1, B]
    if values_all.shape[0] != T + 1:
        raise ValueError(f"the student's output has {values_all.shape[0]} steps; expected T + 1 = {T + 1}")
    cur = {k: v[:, :T] for k, v in out.items() if k not in ("value", "actions")}
    cur["actions"] = {k: v[:, :T] for k, v in out["actions"].items()}
    terms = head_terms(cur, at_mask[:, :T])
    logp, used = terms.logp.transpose(0, 1), terms.used.transpose(0, 1)  # [T, B, 6]
    valid = batch["valid"]
    weight = used & valid.unsqueeze(-1)
    n = valid.sum().clamp(min=1).to(logp.dtype)
    values = values_all[:T]  # with its graph: the value loss trains it
    v_det = values.detach()
    # With next-step autoreset the row after a truncated step holds the episode's final observation, so the next
    # row's value is V(final state); row T is the bootstrap observation.
    next_row_values = values_all[1:].detach()
    # The env ignored an invalid (autoreset) step's action: ending the episode there cuts every trace through it.
    terminated = batch["terminated"] | ~valid
    truncated = batch["truncated"] & ~terminated
    # an unused head has log-ratio 0 (ratio 1): it did not shape the action
    log_rhos = torch.where(weight, logp.detach() - batch["behaviour_logp"], torch.zeros_like(logp))
    # the inputs every target shares, by models.offpolicy_losses' names (as algos/a3c_upgo.py's learner_loss)
    shared = dict(rewards=batch["reward"], values=v_det, bootstrap_value=next_row_values[-1], terminated=terminated)
    shared.update(truncated=truncated, final_values=next_row_values, gamma=s.gamma)
    vtrace_returns = vtrace(log_rhos=log_rhos, **shared, rho_bar=s.rho_bar, c_bar=s.c_bar, lambda_=s.vtrace_lambda)
    pg_loss = -(logp * vtrace_returns.pg_advantages * weight).sum() / n
    upgo_return = upgo_returns(**shared)
    upgo_adv = vtrace_returns.clipped_rhos * (upgo_return - v_det).unsqueeze(-1)
    upgo_loss = -(logp * upgo_adv * weight).sum() / n
    td_return = td_lambda_returns(**shared, lambda_=s.td_lambda)
    v_loss = 0.5 * (((td_return - values) ** 2) * valid).sum() / n
    ent = terms.entropy.transpose(0, 1) * weight
    entropy = ent.sum() / n
    loss = s.pg_coef * pg_loss + s.upgo_coef * upgo_loss + s.vf_coef * v_loss - s.ent_coef * entropy
    wsum = weight.sum((0, 1)).clamp(min=1)
    logs = {
        "losses/policy_loss": pg_loss,
        "losses/upgo_loss": upgo_loss,
        "losses/value_loss": v_loss,
        "losses/entropy": entropy,
        "losses/clipped_rho_mean": (vtrace_returns.clipped_rhos * weight).sum() / weight.sum().clamp(min=1),
        "losses/rho_clipfrac": ((log_rhos.exp() > s.rho_bar) & weight).sum() / weight.sum().clamp(min=1),
        "losses/upgo_advantage": (upgo_adv * weight).sum() / weight.sum().clamp(min=1),
        "losses/vtrace_advantage": (vtrace_returns.pg_advantages * weight).sum() / weight.sum().clamp(min=1),
        "losses/value_mean": (v_det * valid).sum() / n,
        "losses/td_lambda_return_mean": (td_return * valid).sum() / n,
    }
    for i, h in enumerate(HEADS):
        logs[f"entropy_per_head/{h}"] = ent[..., i].sum() / wsum[i]
        logs[f"heads_used/{h}"] = weight[..., i].sum() / n
    if teacher_out is not None:
        kl = head_kl(teacher_out, cur, at_mask[:, :T]).transpose(0, 1) * weight
        kl_loss = kl.sum() / n
        loss = loss + s.kl_coef * kl_loss
        logs["losses/kl_teacher"] = kl_loss
        for i, h in enumerate(HEADS):
            logs[f"kl_per_head/{h}"] = kl[..., i].sum() / wsum[i]
    logs["losses/total_loss"] = loss
    return loss, logs
