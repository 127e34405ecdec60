"""Off-policy actor-critic targets and the masked teacher KL of AlphaStar-style training.

All functions work on *unrolls* of ``T`` env steps for ``B`` envs, time-major, with the episode
semantics of the batched env contract (``sc2_envs.make_batched``):

* ``terminated[t]`` (battle won, lost or drawn): there is no future after step ``t``;
* ``truncated[t]`` (``episode_limit`` reached): the episode was cut, so step ``t`` bootstraps from
  the value of the *final* observation ``final_values[t] = V(s_final)`` (the observation before the
  auto-reset; Pardo et al. 2018, "Time limits in RL"; CleanRL #198), never from the next row, which
  belongs to a new episode;
* otherwise step ``t + 1`` continues the episode, and the last step ``T - 1`` bootstraps from
  ``bootstrap_value = V(s_T)``.

A row's traces never cross an episode boundary: an unroll may hold the end of one episode and the
start of the next for the same env.

Targets (returned detached, as in the references, which stop gradients through the targets):

* :func:`vtrace` -- V-trace (Espeholt et al. 2018, IMPALA, eq. 1 and Remark 1) with *per-head*
  importance ratios: ``log_rhos`` has a trailing head axis ``H`` and every head gets its own
  clipped ratios ``rho = min(rho_bar, pi/mu)`` and ``c = lambda * min(c_bar, pi/mu)`` (AlphaStar,
  Vinyals et al. 2019, "Methods": V-trace applied per action argument). In SMAC the heads are the
  agents (the joint policy factorises over agents); in the full game they are the action arguments.
* :func:`td_lambda_returns` -- TD(lambda) value targets (AlphaStar's baseline target, lambda=0.8).
* :func:`upgo_returns` -- UPGO (AlphaStar): follow the return while the next action was better than
  the value estimate, otherwise bootstrap on the value.
* :func:`masked_kl` -- KL(teacher || student) over the *valid* actions only: the mask is applied to
  the logits before the softmax, so both distributions renormalise over the valid set; the result is
  ``>= 0``, ``0`` where they agree on the valid set, and ``0`` (not NaN, with zero gradient) for a
  row with no valid action. It replaces the masked partial sum of mini-AlphaStar's RL loss
  (liuruoze/mini-AlphaStar), which can be negative.
"""

from __future__ import annotations

from typing import NamedTuple

import torch
import torch.nn.functional as F

from models.common import MASKED_LOGIT, masked_mean

__all__ = ["VTraceReturns", "masked_kl", "masked_mean", "next_values", "td_lambda_returns", "upgo_returns", "vtrace"]


def _check_unroll(rewards, values, bootstrap_value, terminated, truncated, final_values) -> None:
    if rewards.dim() != 2:
        raise ValueError(f"rewards has shape {tuple(rewards.shape)}; expected [T, B]")
    shape = rewards.shape
    for name, x in (("values", values), ("terminated", terminated), ("truncated", truncated), ("final_values", final_values)):
        if x.shape != shape:
            raise ValueError(f"{name} has shape {tuple(x.shape)}; expected [T, B] = {tuple(shape)} like rewards")
    if bootstrap_value.shape != shape[1:]:
        raise ValueError(f"bootstrap_value has shape {tuple(bootstrap_value.shape)}; expected [B] = ({shape[1]},)")
    if terminated.dtype != torch.bool or truncated.dtype != torch.bool:
        raise ValueError(f"terminated/truncated dtypes {terminated.dtype}/{truncated.dtype}; expected torch.bool")


def next_values(
    values: torch.Tensor,
    bootstrap_value: torch.Tensor,
    terminated: torch.Tensor,
    truncated: torch.Tensor,
    final_values: torch.Tensor,
) -> torch.Tensor:
    """The value of the state after each step, within its episode: ``[T, B]``.

    ``0`` after a termination, ``final_values[t]`` after a truncation (a termination on the same
    step wins: the env contract may set both only when the battle ended on the limit step),
    ``values[t + 1]`` inside an episode and ``bootstrap_value`` after the last step.
    """
    nxt = torch.cat([values[1:], bootstrap_value.unsqueeze(0)], dim=0)
    nxt = torch.where(truncated, final_values, nxt)
    return torch.where(terminated, torch.zeros_like(nxt), nxt)


class VTraceReturns(NamedTuple):
    """Outputs of :func:`vtrace`, each ``[T, B, H]`` float, detached.

    vs: the V-trace value targets ``v_s``. pg_advantages: ``rho_s (r_s + gamma v_{s+1} - V(x_s))``
    with ``v_{s+1}`` the next target within the episode. clipped_rhos: ``min(rho_bar, pi/mu)``.
    """

    vs: torch.Tensor
    pg_advantages: torch.Tensor
    clipped_rhos: torch.Tensor


@torch.no_grad()
def vtrace(
    log_rhos: torch.Tensor,
    rewards: torch.Tensor,
    values: torch.Tensor,
    bootstrap_value: torch.Tensor,
    terminated: torch.Tensor,
    truncated: torch.Tensor,
    final_values: torch.Tensor,
    gamma: float,
    rho_bar: float = 1.0,
    c_bar: float = 1.0,
    lambda_: float = 1.0,
) -> VTraceReturns:
    """V-trace targets and policy-gradient advantages with per-head importance ratios.

    Args:
        log_rhos: ``[T, B, H]`` float, ``log pi(a_h|x) - log mu(a_h|x)`` per head (target minus behaviour).
        rewards: ``[T, B]`` float, reward of step ``t`` (shared by the heads).
        values: ``[T, B]`` float, ``V(x_t)`` (unnormalised).
        bootstrap_value: ``[B]`` float, ``V(x_T)`` of the observation after the last step.
        terminated, truncated: ``[T, B]`` bool, how step ``t`` ended (see the module docstring).
        final_values: ``[T, B]`` float, ``V`` of the final observation where ``truncated`` (other entries unused).
        gamma: discount per env step.
        rho_bar, c_bar: clipping thresholds of the ratios (IMPALA's bar-rho, bar-c; both 1 in AlphaStar).
        lambda_: trace coefficient multiplying ``c`` (IMPALA Remark 1; 0.8 in mini-AlphaStar, 1 in IMPALA).

    Returns:
        VTraceReturns, each ``[T, B, H]``.

    Recursion (IMPALA eq. 1, written backwards): ``v_s - V(x_s) = delta_s + gamma c_s (v_{s+1} - V(x_{s+1}))``
    with ``delta_s = rho_s (r_s + gamma V_next(s) - V(x_s))``; the correction term is dropped after the
    last step and at every episode end, where ``V_next`` is ``0`` (terminated) or ``V(s_final)`` (truncated).
    """
    _check_unroll(rewards, values, bootstrap_value, terminated, truncated, final_values)
    if log_rhos.dim() != 3 or log_rhos.shape[:2] != rewards.shape:
        raise ValueError(
            f"log_rhos has shape {tuple(log_rhos.shape)}; expected [T, B, H] with [T, B] = {tuple(rewards.shape)}"
        )
    if rho_bar <= 0 or c_bar <= 0:
        raise ValueError(f"rho_bar={rho_bar}, c_bar={c_bar}; expected positive clipping thresholds")
    if not 0.0 <= lambda_ <= 1.0:
        raise ValueError(f"lambda_={lambda_}; expected a value in [0, 1]")
    T = rewards.shape[0]
    rhos = log_rhos.exp()
    clipped_rhos = rhos.clamp(max=rho_bar)
    cs = lambda_ * rhos.clamp(max=c_bar)
    nv = next_values(values, bootstrap_value, terminated, truncated, final_values).unsqueeze(-1)
    v = values.unsqueeze(-1)
    deltas = clipped_rhos * (rewards.unsqueeze(-1) + gamma * nv - v)
    # The trace continues only inside an episode and inside the unroll.
    cont = (~(terminated | truncated)).to(values.dtype).unsqueeze(-1)
    acc = torch.zeros_like(deltas[0])
    vs_minus_v = torch.zeros_like(deltas)
    for t in reversed(range(T)):
        if t == T - 1:
            acc = deltas[t]
        else:
            acc = deltas[t] + gamma * cs[t] * cont[t] * acc
        vs_minus_v[t] = acc
    vs = vs_minus_v + v
    # v_{s+1}: the next V-trace target inside the episode; the plain next value at its end or the unroll's end.
    vs_next = torch.cat([vs[1:], bootstrap_value.reshape(1, -1, 1).expand_as(vs[:1])], dim=0)
    vs_next = torch.where(cont.bool(), vs_next, nv.expand_as(vs_next))
    vs_next[-1] = nv[-1].expand_as(vs_next[-1])
    pg_advantages = clipped_rhos * (rewards.unsqueeze(-1) + gamma * vs_next - v)
    return VTraceReturns(vs, pg_advantages, clipped_rhos)


@torch.no_grad()
def td_lambda_returns(
    rewards: torch.Tensor,
    values: torch.Tensor,
    bootstrap_value: torch.Tensor,
    terminated: torch.Tensor,
    truncated: torch.Tensor,
    final_values: torch.Tensor,
    gamma: float,
    lambda_: float,
) -> torch.Tensor:
    """TD(lambda) returns ``G_t = r_t + gamma ((1 - lambda) V_next(t) + lambda G_{t+1})``: ``[T, B]``, detached.

    ``G_{t+1}`` is used only inside the episode and the unroll; at an episode end and after the last
    step ``G_t = r_t + gamma V_next(t)`` (``V_next`` as in :func:`next_values`). Shapes as in :func:`vtrace`.
    """
    _check_unroll(rewards, values, bootstrap_value, terminated, truncated, final_values)
    if not 0.0 <= lambda_ <= 1.0:
        raise ValueError(f"lambda_={lambda_}; expected a value in [0, 1]")
    T = rewards.shape[0]
    nv = next_values(values, bootstrap_value, terminated, truncated, final_values)
    cont = ~(terminated | truncated)
    out = torch.zeros_like(rewards)
    for t in reversed(range(T)):
        one_step = rewards[t] + gamma * nv[t]
        if t == T - 1:
            out[t] = one_step
        else:
            out[t] = torch.where(cont[t], rewards[t] + gamma * ((1 - lambda_) * nv[t] + lambda_ * out[t + 1]), one_step)
    return out


@torch.no_grad()
def upgo_returns(
    rewards: torch.Tensor,
    values: torch.Tensor,
    bootstrap_value: torch.Tensor,
    terminated: torch.Tensor,
    truncated: torch.Tensor,
    final_values: torch.Tensor,
    gamma: float,
) -> torch.Tensor:
    """UPGO returns (AlphaStar, "Methods"): ``[T, B]``, detached.

    ``G_t = r_t + gamma G_{t+1}`` if ``Q_{t+1} >= V(x_{t+1})`` else ``r_t + gamma V(x_{t+1})``, with
    ``Q_{t+1} = r_{t+1} + gamma V_next(t + 1)`` the one-step value of the action actually taken next.
    At an episode end and after the last step, ``G_t = r_t + gamma V_next(t)``. The UPGO advantage
    is ``rho_t (G_t - V(x_t))`` with the clipped ratio of the head. Shapes as in :func:`vtrace`.
    """
    _check_unroll(rewards, values, bootstrap_value, terminated, truncated, final_values)
    T = rewards.shape[0]
    nv = next_values(values, bootstrap_value, terminated, truncated, final_values)
    cont = ~(terminated | truncated)
    out = torch.zeros_like(rewards)
    for t in reversed(range(T)):
        one_step = rewards[t] + gamma * nv[t]
        if t == T - 1:
            out[t] = one_step
            continue
        q_next = rewards[t + 1] + gamma * nv[t + 1]
        follow = cont[t] & (q_next >= values[t + 1])
        out[t] = torch.where(follow, rewards[t] + gamma * out[t + 1], one_step)
    return out


def masked_kl(teacher_logits: torch.Tensor, student_logits: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """``KL(q_T || q_S)`` over the valid actions, per row: ``[...]`` float.

    Args:
        teacher_logits, student_logits: ``[..., A]`` unnormalised logits (same temperature).
        mask: ``[..., A]`` bool, True for valid actions (SMAC ``avail_actions``; an action-argument mask).

    Both logit vectors get ``MASKED_LOGIT`` (finite, so no ``inf - inf``) at invalid actions before
    ``log_softmax``; the sum runs over valid actions only. The result is ``>= 0`` up to rounding
    (Gibbs' inequality on the renormalised distributions), ``0`` when the two agree on the valid set
    whatever they put elsewhere, and ``0`` with zero gradient where the row has no valid action.
    Gradients flow into both arguments; detach the teacher's logits to distill.
    """
    if teacher_logits.shape != student_logits.shape or mask.shape != teacher_logits.shape:
        raise ValueError(
            f"shapes teacher {tuple(teacher_logits.shape)}, student {tuple(student_logits.shape)}, "
            f"mask {tuple(mask.shape)}; expected all equal [..., A]"
        )
    if mask.dtype != torch.bool:
        raise ValueError(f"mask dtype {mask.dtype}; expected torch.bool")
    fill = torch.full_like(teacher_logits, MASKED_LOGIT)
    log_qt = F.log_softmax(torch.where(mask, teacher_logits, fill), dim=-1)
    log_qs = F.log_softmax(torch.where(mask, student_logits, fill), dim=-1)
    term = log_qt.exp() * (log_qt - log_qs)
    kl = torch.where(mask, term, torch.zeros_like(term)).sum(-1)
    # Rounding can leave -1e-8 where the distributions agree; the divergence itself is never negative.
    return kl.clamp(min=0.0)
