"""Building blocks shared by the actors, the critics and the algorithm files.

* ``layer_init``: CleanRL's orthogonal initialisation.
* ``MaskedCategorical``: a categorical over the *available* actions only (SMAC's ``avail_actions``).
* ``ValueNorm``: HARL's running mean / std value normaliser (``harl/common/valuenorm.py``), with its
  statistics in registered buffers so that they are saved in ``state_dict`` on every device (the
  on-policy/HARL versions keep them in parameters moved with ``.to(device)``, which leaves the
  GPU state dict empty; on-policy PR #51).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

MASKED_LOGIT = -1e10
"""Logit given to unavailable actions (HARL's ``-1e10``): finite, so ``p * log p`` is ``0``, never NaN."""


def layer_init(layer: nn.Linear, std: float = math.sqrt(2), bias_const: float = 0.0) -> nn.Linear:
    """Orthogonal weights with gain ``std`` and constant bias (CleanRL ``ppo.py``)."""
    nn.init.orthogonal_(layer.weight, std)
    nn.init.constant_(layer.bias, bias_const)
    return layer


def mlp(in_dim: int, hidden: int, out_dim: int, n_hidden: int = 2, out_std: float = math.sqrt(2)) -> nn.Sequential:
    """``n_hidden`` x (Linear -> ReLU -> LayerNorm) then a Linear to ``out_dim`` (HARL's MLPBase + head).

    Input ``[..., in_dim]`` float32, output ``[..., out_dim]``.
    """
    layers: list[nn.Module] = []
    d = in_dim
    for _ in range(n_hidden):
        layers += [layer_init(nn.Linear(d, hidden)), nn.ReLU(), nn.LayerNorm(hidden)]
        d = hidden
    layers.append(layer_init(nn.Linear(d, out_dim), std=out_std))
    return nn.Sequential(*layers)


class MaskedCategorical:
    """Categorical distribution restricted to the available actions.

    Unavailable actions get the logit ``MASKED_LOGIT`` before the softmax, so their probability is
    exactly ``0.0`` in float32 and their log-probability a large finite negative number. Entropy
    and KL sum only over available actions (a masked action contributes exactly 0, with zero
    gradient). A row with a single available action has ``log_prob = 0``, ``entropy = 0`` and a
    zero gradient with respect to every logit: this is how dead SMAC agents (only no-op available)
    drop out of the policy gradient.

    Args:
        logits: ``[..., A]`` float, unnormalised.
        avail: ``[..., A]`` bool, ``True`` where the action may be taken (SMAC ``avail_actions``),
            or ``None`` for no mask. Every row must have at least one available action (SMAC
            guarantees it: stop for the living, no-op for the dead); a row with none would be
            treated as uniform over all actions.
    """

    def __init__(self, logits: torch.Tensor, avail: torch.Tensor | None = None):
        if avail is not None:
            if avail.shape != logits.shape:
                raise ValueError(f"avail shape {tuple(avail.shape)} does not match logits shape {tuple(logits.shape)}")
            logits = torch.where(avail.bool(), logits, torch.full_like(logits, MASKED_LOGIT))
            self.avail = avail.bool()
        else:
            self.avail = torch.ones_like(logits, dtype=torch.bool)
        self.logits = logits
        self.log_probs = F.log_softmax(logits, dim=-1)
        self.probs = self.log_probs.exp()

    def log_prob(self, action: torch.Tensor) -> torch.Tensor:
        """``[...]`` int64 actions -> ``[...]`` float log-probabilities."""
        return self.log_probs.gather(-1, action.long().unsqueeze(-1)).squeeze(-1)

    def entropy(self) -> torch.Tensor:
        """``[...]`` entropy in nats over the available actions only."""
        plogp = torch.where(self.avail, self.probs * self.log_probs, torch.zeros_like(self.probs))
        return -plogp.sum(-1)

    def sample(self, generator: torch.Generator | None = None, uniform: torch.Tensor | None = None) -> torch.Tensor:
        """``[...]`` int64 sampled actions (never an unavailable one; Gumbel-max on the masked logits).

        Args:
            generator: the RNG of the uniform noise (torch's default one if None).
            uniform: ``[..., A]`` float noise in [0, 1) to use instead of drawing it (e.g. rows of a
                larger draw, so that sampling a subset of rows keeps the draws of the full batch);
                it is not modified.
        """
        if uniform is None:
            u = torch.rand(self.logits.shape, device=self.logits.device, generator=generator)
        elif uniform.shape != self.logits.shape:
            raise ValueError(
                f"uniform noise shape {tuple(uniform.shape)}; expected the logits shape {tuple(self.logits.shape)}"
            )
        else:
            u = uniform.clone()
        gumbel = -torch.log(-torch.log(u.clamp_(1e-20, 1.0 - 1e-7)))
        scores = torch.where(self.avail, self.log_probs + gumbel, torch.full_like(self.logits, -math.inf))
        return scores.argmax(-1)

    def mode(self) -> torch.Tensor:
        """``[...]`` int64 greedy actions (argmax over the available actions)."""
        return self.logits.argmax(-1)

    def kl(self, other: MaskedCategorical) -> torch.Tensor:
        """True KL(self || other) = sum_a p(a) (log p(a) - log q(a)) over available actions, ``[...]``.

        Both distributions must use the same mask (as in HATRPO: old and new policy on the same data).
        """
        term = self.probs * (self.log_probs - other.log_probs)
        return torch.where(self.avail, term, torch.zeros_like(term)).sum(-1)


class ValueNorm(nn.Module):
    """Running normaliser of value targets (HARL ``ValueNorm``; PopArt's statistics without rescaling).

    EMA of the mean and the mean of squares with factor ``beta`` per ``update`` call, debiased,
    variance clamped to ``>= 1e-2`` (HARL's defaults ``beta = 0.99999``, ``epsilon = 1e-5``).

    Args:
        beta: EMA factor per update (one update per minibatch of returns).
        epsilon: lower bound of the debiasing term.
    """

    def __init__(self, beta: float = 0.99999, epsilon: float = 1e-5):
        super().__init__()
        self.beta = beta
        self.epsilon = epsilon
        self.register_buffer("running_mean", torch.zeros(()))
        self.register_buffer("running_mean_sq", torch.zeros(()))
        self.register_buffer("debiasing_term", torch.zeros(()))

    def _stats(self) -> tuple[torch.Tensor, torch.Tensor]:
        d = self.debiasing_term.clamp(min=self.epsilon)
        mean = self.running_mean / d
        var = (self.running_mean_sq / d - mean**2).clamp(min=1e-2)
        return mean, var

    @torch.no_grad()
    def update(self, x: torch.Tensor) -> None:
        """Fold a batch of unnormalised returns (any shape) into the running statistics."""
        x = x.detach().float()
        self.running_mean.mul_(self.beta).add_(x.mean() * (1.0 - self.beta))
        self.running_mean_sq.mul_(self.beta).add_((x**2).mean() * (1.0 - self.beta))
        self.debiasing_term.mul_(self.beta).add_(1.0 - self.beta)

    def normalize(self, x: torch.Tensor) -> torch.Tensor:
        mean, var = self._stats()
        return (x - mean) / var.sqrt()

    def denormalize(self, x: torch.Tensor) -> torch.Tensor:
        mean, var = self._stats()
        return x * var.sqrt() + mean


def masked_ce(logits: torch.Tensor, labels: torch.Tensor, mask: torch.Tensor, weights: torch.Tensor | None = None):
    """Per-sample cross-entropy, zero where ``mask`` is False.

    Args:
        logits: ``[..., C]`` (masked entries already at ``MASKED_LOGIT``, a finite value).
        labels: ``[...]`` int64; entries where ``mask`` is False may hold anything (e.g. -1).
        mask: ``[...]`` bool, the head is used by this sample and has a label.
        weights: ``[...]`` per-sample weights or None.

    Returns:
        ``(loss_sum, n)``: the weighted sum of the CE over masked-in samples (a scalar, zero when none)
        and the number of masked-in samples. A row whose logits are all masked gets a finite, constant CE
        (log C) and no gradient, never NaN.
    """
    mask = mask.bool()
    safe = torch.where(mask, labels.long(), torch.zeros_like(labels.long())).clamp(0, logits.shape[-1] - 1)
    ce = -F.log_softmax(logits.float(), -1).gather(-1, safe.unsqueeze(-1)).squeeze(-1)
    if weights is not None:
        ce = ce * weights
    ce = torch.where(mask, ce, torch.zeros_like(ce))
    return ce.sum(), int(mask.sum())


def masked_mean(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """``sum(x * weight) / sum(weight)`` over all entries, ``0`` when the weights sum to 0 (e.g. every agent dead).

    Args:
        x: any shape, float. weight: broadcastable to ``x``; 0/1 masks (float or bool) or weights.

    Returns:
        a 0-d tensor.
    """
    return (x * weight).sum() / weight.sum().clamp(min=1.0)
