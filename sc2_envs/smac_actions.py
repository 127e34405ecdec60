"""SMAC's fixed action ids and the alive mask they give.

Every SMAC and SMACv2 map numbers an agent's actions the same way: ``0`` no-op, ``1`` stop, ``2``-``5``
move north, south, east, west, then (SMACv2 ``conic_fov``) the look actions, then one attack or heal
action per target (``sc2_envs.sim.rules.features.N_ACTIONS_NO_ATTACK``). SMAC makes the no-op available
exactly to dead agents and stop exactly to living ones (oxwhirl/smac, ``smac/env/starcraft2/starcraft2.py``,
``get_avail_agent_actions``: a dead agent gets ``[1] + [0] * (n_actions - 1)``, a living one stop and
never the no-op; the same in SMACv2 and in this simulator's ``avail_from_parts``), so ``avail_actions``
alone tells which agents are alive.
"""

from __future__ import annotations

import torch

__all__ = ["NO_OP", "STOP", "alive_mask"]

NO_OP = 0
"""The no-op: available exactly to dead agents (and then their only action)."""

STOP = 1
"""Stop: available exactly to living agents (their "do nothing")."""


_INTEGER_DTYPES = (torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64)


def alive_mask(avail_actions: torch.Tensor) -> torch.Tensor:
    """Which agents are alive, read from SMAC's available actions.

    Args:
        avail_actions: ``[..., n_agents, n_actions]`` bool, or an integer / floating tensor of 0s and 1s:
            SMAC's ``avail_actions`` (``n_actions >= 2``: no-op 0, stop 1).

    Returns:
        ``[..., n_agents]`` bool: True where stop is available, i.e. where the agent is alive (module
        docstring). Only the stop column is read: on SMAC's masks this equals "no-op unavailable", but a
        row with neither (such as ``[0, 0, 1]``, which SMAC never makes) reads as dead, and a row with both
        as alive.

    Raises:
        TypeError: ``avail_actions`` is not a ``torch.Tensor``, or its dtype is neither bool, an integer nor
            a floating type.
        ValueError: fewer than 2 dimensions, fewer than 2 actions (no stop column), or an integer / floating
            mask holding a value other than 0 and 1 (the first one is named).
    """
    if not isinstance(avail_actions, torch.Tensor):
        raise TypeError(
            f"avail_actions is a {type(avail_actions).__name__}; expected a torch.Tensor [..., n_agents, n_actions]"
        )
    if avail_actions.dim() < 2 or avail_actions.shape[-1] < 2:
        raise ValueError(
            f"avail_actions has shape {tuple(avail_actions.shape)}; expected [..., n_agents, n_actions] with "
            "n_actions >= 2 (no-op 0 and stop 1)"
        )
    dtype = avail_actions.dtype
    if dtype != torch.bool:
        if not (dtype.is_floating_point or dtype in _INTEGER_DTYPES):
            raise TypeError(f"avail_actions has dtype {dtype}; expected bool, or an integer / floating mask of 0s and 1s")
        bad = (avail_actions != 0) & (avail_actions != 1)
        if bool(bad.any()):
            raise ValueError(
                f"avail_actions holds {avail_actions[bad][0].item()!r} (dtype {dtype}); expected a mask of 0s and 1s"
            )
    return avail_actions[..., STOP].bool()
