"""Team-size randomisation of the training scripts (``--ally-dropout``): training episodes that start
with one ally removed, so that the actors also meet battles in which they are outnumbered."""

from __future__ import annotations

import numbers
from typing import Any

import torch

from sc2_envs.training.cli import cli_error


def check_ally_dropout(ally_dropout: Any, train_maps: list[str], backend: str) -> list[float]:
    """Refuse a bad ``--ally-dropout`` of a training script; return one probability per training map.

    Args:
        ally_dropout: the flag's value, one probability in ``[0, 1)`` for every map, or one per map.
        train_maps: the run's ``--map`` names.
        backend: ``--backend``; removing units at reset needs the embedded simulator (``sim``).

    Raises:
        SystemExit: via :func:`cli_error` (status 2) for a value that is not a number or lies outside
            ``[0, 1)``, no value or a count of values that is neither 1 nor the number of maps, or a
            non-zero value with ``--backend sc2``.
    """
    values = list(ally_dropout) if isinstance(ally_dropout, (list, tuple)) else [ally_dropout]  # one number: one value
    shown = " ".join(map(str, values)) or "(no value)"
    if any(isinstance(p, bool) or not isinstance(p, numbers.Real) for p in values):
        cli_error(f"--ally-dropout {shown}: expected probabilities in [0, 1) (numbers)")
    probs = [float(p) for p in values]
    if len(probs) not in (1, len(train_maps)):
        cli_error(
            f"--ally-dropout {shown}: expected one probability (used for every map) or one per --map ({len(train_maps)}: "
            f"{' '.join(train_maps)})"
        )
    bad = [p for p in probs if not 0.0 <= p < 1.0]
    if bad:
        cli_error(f"--ally-dropout {shown}: expected probabilities in [0, 1) (got {bad})")
    probs = probs * len(train_maps) if len(probs) == 1 else probs
    if any(probs) and backend != "sim":
        cli_error(f"--ally-dropout {shown} with --backend {backend}: expected --backend sim (SMACSim.remove_allies) or 0")
    return probs


def ally_dropout_for(ally_dropout: Any, train_maps: list[str], backend: str, infos: list[dict]) -> list[float]:
    """:func:`check_ally_dropout`, then refuse dropout on a map of one agent (its only ally would go).

    Args:
        infos: each training map's ``get_env_info()``, in ``train_maps`` order.

    Returns:
        One probability per training map.

    Raises:
        SystemExit: via :func:`cli_error` (status 2), as :func:`check_ally_dropout`, or for a non-zero
            probability on a map with fewer than 2 agents.
    """
    probs = check_ally_dropout(ally_dropout, train_maps, backend)
    for m, p, info in zip(train_maps, probs, infos, strict=True):
        if p > 0 and info["n_agents"] < 2:
            cli_error(f"--ally-dropout {p} on {m}: it has {info['n_agents']} agent; expected maps of 2 or more agents")
    return probs


def drop_allies(env: Any, obs: dict, started: torch.Tensor, prob: float) -> dict:
    """Team-size randomisation of ``--ally-dropout``: in each env that has just started an episode, with
    probability ``prob`` remove one of its allies, drawn uniformly (``SMACSim.remove_allies``). A draw
    that would leave only healers (medivacs) removes no one.

    The draws use torch's global generator (seeded by the script, saved in resume files), and none is
    made when ``prob`` is 0 or no episode started, so a run without dropout draws exactly as before.

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
