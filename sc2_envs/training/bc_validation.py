"""Held-out figures of a behaviour-cloning checkpoint (``algos/bc_reweight.py``), once per epoch.

On the validation split (episodes or replay files the training never sees): the unweighted
cross-entropy per labelled sample, the accuracy of the argmax, the mean predicted probability of
each action and the share of each action among the argmax predictions. The loss is unweighted so
that runs with other ``--reweight-power`` compare on one scale; the shares show how far the
re-weighting moved the policy from the data's label shares.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

from models.alphastar import alphastar_losses
from models.common import MASKED_LOGIT, masked_ce

__all__ = ["accuracy_text", "replay_validate", "smac_validate"]


@torch.no_grad()
def smac_validate(policy, data: Any, A: int, batch: int = 1024) -> dict:
    """Validation figures of a SMAC actor over the living agents of the validation frames.

    Args:
        policy: an actor with ``logits(obs [T, N, obs_size]) -> [T, N, A]`` (``models.ClassPolicy``).
        data: the split (``sc2_envs.training.bc_data.SmacData``): ``val_idx`` frame ids, ``obs``,
            ``avail [T, N, A] bool``, ``labels [T, N] int64``, ``alive [T, N] bool`` on one device.
        A: ``n_actions``.
        batch: frames per forward pass (memory only; the figures do not depend on it).

    Returns:
        ``val_loss`` (mean CE over living agent-frames), ``val_acc``, and ``pred_share`` / ``argmax_share``
        (``[A]`` float32 NumPy arrays, each summing to 1 when there is a living agent-frame).
    """
    ce_sum, correct, n = 0.0, 0, 0
    probs = torch.zeros(A)
    argmax = torch.zeros(A)
    idx_all = torch.as_tensor(data.val_idx, device=data.obs.device)
    for s in range(0, len(idx_all), batch):
        idx = idx_all[s : s + batch]
        avail, lab, alive = data.avail[idx], data.labels[idx], data.alive[idx]
        logits = torch.where(avail, policy.logits(data.obs[idx]), torch.full_like(avail, MASKED_LOGIT, dtype=torch.float32))
        cs, k = masked_ce(logits, lab, alive)
        ce_sum, n = ce_sum + float(cs), n + k
        pred = logits.argmax(-1)
        correct += int(((pred == lab) & alive).sum())
        probs += F.softmax(logits, -1)[alive].sum(0).cpu()
        argmax += torch.bincount(pred[alive], minlength=A).float().cpu()
    n = max(n, 1)
    return {
        "val_loss": ce_sum / n,
        "val_acc": correct / n,
        "pred_share": (probs / n).numpy(),
        "argmax_share": (argmax / n).numpy(),
    }


@torch.no_grad()
def replay_validate(model, data: Any, device, cfg, heads: list[str], batch: int = 32) -> dict:
    """Validation figures of an ``AlphaStarPolicy``, teacher forced, over the validation sequences.

    Args:
        model: ``models.alphastar.AlphaStarPolicy``.
        data: ``sc2_envs.replays.dataset.ReplayData`` (``val_windows``, ``batch``).
        device: where the batches go.
        cfg: the model's ``AlphaStarConfig`` (``n_functions``, ``max_entities``, ``max_selected``).
        heads: the action heads to score (``spec.ACTION_HEADS``).
        batch: sequences per forward pass.

    Returns:
        ``val_loss`` (every head's CE summed, per step), ``val_acc`` (the action type's accuracy),
        ``val_head_acc`` and ``val_head_n`` (per head: accuracy, and the samples with a label for that
        head), and ``pred_share`` / ``argmax_share`` of the action type (``[n_functions]`` float32 NumPy
        arrays).
    """
    F_ = cfg.n_functions
    n = {h: 0 for h in heads}
    correct = {h: 0 for h in heads}
    loss_sum, steps = 0.0, 0
    probs, argmax = torch.zeros(F_), torch.zeros(F_)
    for s in range(0, len(data.val_windows), batch):
        obs, labels, m = data.batch(data.val_windows[s : s + batch], device, cfg.max_entities, cfg.max_selected)
        out, _ = model(obs, labels=labels)
        res, cor = alphastar_losses(model, out, labels, m, None)
        for h in heads:
            n[h] += res[h][1]
            correct[h] += cor[h]
        loss_sum += float(sum(v[0] for v in res.values()))
        steps += int(m.sum())
        p = F.softmax(out["action_type"], -1)[m]
        probs += p.sum(0).cpu()
        argmax += torch.bincount(out["action_type"].argmax(-1)[m], minlength=F_).float().cpu()
    steps = max(steps, 1)
    acc = {h: correct[h] / max(n[h], 1) for h in heads}
    return {
        "val_loss": loss_sum / steps,
        "val_acc": acc["action_type"],
        "val_head_acc": acc,
        "val_head_n": n,
        "pred_share": (probs / steps).numpy(),
        "argmax_share": (argmax / steps).numpy(),
    }


def accuracy_text(val: dict) -> str:
    """The accuracy part of an epoch's line: ``val acc`` (SMAC), or each head's (replays: ``val_head_acc``)."""
    if "val_head_acc" not in val:
        return f"val acc {val['val_acc']:.4f}"
    heads = ", ".join(f"{h} {a:.3f} (n={val['val_head_n'][h]})" for h, a in val["val_head_acc"].items())
    return f"held-out accuracy: {heads}"
