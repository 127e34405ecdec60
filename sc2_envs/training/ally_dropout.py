"""Team-size randomisation of the training scripts (``--ally-dropout``): training episodes that start
with one ally removed, so that the actors also meet battles in which they are outnumbered."""

from __future__ import annotations

import numbers
from typing import Any

import torch


def drop_allies(env: Any, obs: dict, started: torch.Tensor, prob: float) -> dict:
    """Team-size randomisation of ``--ally-dropout``: in each env that has just started an episode, with
    probability ``prob`` remove one of its allies, drawn uniformly (``SMACSim.remove_allies``). A draw
    that would leave only healers (medivacs) removes no one.

    The draws use torch's global generator (seeded by the script, saved in resume files), and none is
    made when ``prob`` is 0 or no episode started, so a run without dropout draws nothing extra.

    Args:
        env: the training simulator (``SMACSim``) of one map, ``B`` envs and ``N`` agents.
        obs: its last ``reset`` / ``step`` output; ``obs``, ``state`` and ``avail_actions`` rows of the
            envs that lost an ally are replaced in place (copies of the tensors, so no caller's
            tensor changes).
        started: ``[B]`` bool, the envs at step 0 of a new episode.
        prob: the probability, in ``[0, 1)``.

    Returns:
        ``obs`` (the same dict).

    Raises:
        ValueError: ``prob`` not a number in ``[0, 1)`` (NaN included); with ``prob > 0``, ``started``
            not a ``[B]`` bool tensor (``B`` the env's ``num_envs``).
    """
    if isinstance(prob, bool) or not isinstance(prob, numbers.Real) or not 0.0 <= prob < 1.0:
        raise ValueError(f"drop_allies: prob must be a probability in [0, 1), got {prob!r}")
    if prob == 0.0:  # off: no check of the env (any backend), no draw
        return obs
    if not isinstance(started, torch.Tensor) or started.dtype != torch.bool or tuple(started.shape) != (env.num_envs,):
        got = (started.dtype, tuple(started.shape)) if isinstance(started, torch.Tensor) else type(started).__name__
        raise ValueError(f"drop_allies: started must be a bool tensor of shape ({env.num_envs},), got {got}")
    if not bool(started.any()):
        return obs
    B, N = started.shape[0], env.n_agents
    pick = started & (torch.rand(B, device=started.device) < prob)
    who = torch.randint(N, (B,), device=started.device)
    # a team of healers alone (a SMACv2 terran team whose only non-medivac was drawn) cannot fight: such a
    # draw removes no one. Where no team is left that way the draws are used as they are.
    fighter = ~env.table.is_healer[..., :N].to(started.device).expand(B, N)
    pick &= fighter.sum(1) - fighter.gather(1, who[:, None]).squeeze(1).long() > 0
    if not bool(pick.any()):
        return obs
    mask = torch.zeros(B, N, dtype=torch.bool, device=started.device)
    mask[pick, who[pick]] = True
    fresh = env.remove_allies(mask)
    idx = pick.nonzero().flatten()
    for key in ("obs", "state", "avail_actions"):
        rows = fresh[key][idx.to(fresh[key].device)].to(obs[key].device)
        obs[key] = obs[key].index_copy(0, idx.to(obs[key].device), rows)
    return obs
