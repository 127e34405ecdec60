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


def alive_mask(avail_actions: torch.Tensor) -> torch.Tensor:
    """Which agents are alive, read from SMAC's available actions.

    Args:
        avail_actions: ``[..., n_actions]`` bool (or 0/1), SMAC's ``avail_actions`` (``n_actions >= 2``).

    Returns:
        ``[...]`` bool: True where stop is available, i.e. where the agent is alive (module docstring);
        equally where the no-op is not available.

    Raises:
        ValueError: ``avail_actions`` has fewer than 2 actions (no stop column).
    """
    if avail_actions.dim() < 1 or avail_actions.shape[-1] < 2:
        raise ValueError(
            f"avail_actions has shape {tuple(avail_actions.shape)}; expected [..., n_actions] with no-op 0 and stop 1"
        )
    return avail_actions[..., STOP].bool()
