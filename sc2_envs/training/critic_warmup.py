"""The critic warm-up of the asynchronous actor-learner (``algos/a3c_upgo.py --critic-warmup-steps N``).

A policy cloned from replays starts reinforcement learning with an untrained value baseline (behaviour
cloning does not train one), so its first advantages are noise. The warm-up fits the baseline first:
in the run's first ``N`` env steps every update trains only the value baseline's parameters, on the
games of the unchanged policy (the actors keep acting with the ``--init`` weights, so V-trace's
importance ratios are 1 up to rounding, and the TD(lambda) target is on-policy).

Mechanism: during the loss's forward pass every other parameter has ``requires_grad`` False, so the
graph does not reach it; the backward pass leaves its ``grad`` None, and Adam (``torch.optim.Adam``
skips parameters without a gradient) leaves it and its optimiser state bit-identical. The loss itself
is unchanged; its policy terms are constants of the frozen parameters, so only the value term has a
gradient. A baseline that reads features of a torso shared with the policy (``AlphaStarPolicy``'s
``base.*`` heads) trains on the frozen torso's features.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator

from torch import nn

__all__ = ["in_warmup", "trainable_only", "value_params_text"]


def in_warmup(env_steps: int, warmup_steps: int) -> bool:
    """Whether an update whose batch brings the env steps received to ``env_steps`` is a warm-up update.

    Args:
        env_steps: env steps received from the actors, including this update's batch (CleanRL's
            ``global_step``; restored on ``--resume``, so a resumed run continues the warm-up where it stopped).
        warmup_steps: ``--critic-warmup-steps``, env steps (0: no warm-up).

    Returns:
        True while ``env_steps <= warmup_steps``: the updates whose batches lie within the first
        ``warmup_steps`` env steps.
    """
    return warmup_steps > 0 and env_steps <= warmup_steps


@contextlib.contextmanager
def trainable_only(modules: Iterable[nn.Module], keep: Iterable[nn.Parameter], active: bool = True) -> Iterator[None]:
    """Within the block, only the parameters ``keep`` of ``modules`` require gradients.

    Run the loss's forward pass inside it: the parameters left out get no gradient from its backward pass
    (``grad`` stays None). On leaving, every ``requires_grad`` flag is restored.

    Args:
        modules: the trained modules (``LearnerPieces.modules``).
        keep: the parameters that keep their ``requires_grad`` (``LearnerPieces.value_params``).
        active: False: the block changes nothing (an update after the warm-up).

    Raises:
        ValueError: ``active`` and no parameter of ``keep`` is in ``modules`` (nothing would train).
    """
    if not active:
        yield
        return
    kept = {id(p) for p in keep}
    params = [p for m in modules for p in m.parameters()]
    if not any(id(p) in kept for p in params):
        raise ValueError("trainable_only: none of the parameters to keep belongs to the modules; nothing would train")
    frozen = [p for p in params if id(p) not in kept and p.requires_grad]
    for p in frozen:
        p.requires_grad_(False)
    try:
        yield
    finally:
        for p in frozen:
            p.requires_grad_(True)


def value_params_text(value_params: dict[str, list[nn.Parameter]], modules: dict[str, nn.Module]) -> str:
    """What a warm-up trains, for the first screen: e.g. ``"base.winloss (2,465 of 43,017 parameters)"``.

    Args:
        value_params: the value baselines' parameters by baseline name (``LearnerPieces.value_params``).
        modules: the trained modules (their parameter total).
    """
    total = sum(p.numel() for m in modules.values() for p in m.parameters())
    n = sum(p.numel() for ps in value_params.values() for p in ps)
    return f"{', '.join(value_params)} ({n:,} of {total:,} parameters)"
