"""SMAC's actions: checked against the available actions, then turned into unit orders (torch reference).

Action ids (SMAC): 0 no-op, 1 stop, 2 north (+y), 3 south (-y), 4 east (+x), 5 west (-x), then (SMACv2
``conic_fov`` only) the look actions ``6 .. 6 + n_fov - 1``, then ``n_actions_no_attack + j`` target ``j``
(an enemy, or an ally for a healer). A move orders a walk to a point ``MOVE_AMOUNT`` units away; SMAC
replaces orders every step (no queueing). Source: SMAC ``starcraft2.py`` ``get_agent_action``.
``numba.actions`` mirrors this module function for function.
"""

from __future__ import annotations

import numpy as np
import torch

from sc2_envs.sim.rules.features import MOVE_AMOUNT
from sc2_envs.sim.state import ORDER_ATTACK, ORDER_HEAL, ORDER_MOVE, ORDER_NONE, WorldState
from sc2_envs.validation import contains_bool

MOVE_DIRS = torch.tensor([[0.0, 0.0], [0.0, 0.0], [0.0, 1.0], [0.0, -1.0], [1.0, 0.0], [-1.0, 0.0]])
"""``[6, 2]`` float32 unit directions of the actions 0..5 (rows 0 and 1 unused)."""

OK, OUT_OF_RANGE, UNAVAILABLE = 0, 1, 2
"""Codes of :func:`check_actions`'s first error (as ``numba.actions``)."""


def coerce_actions(actions, num_envs: int, n_agents: int, n_actions: int, device: torch.device) -> torch.Tensor:
    """``actions`` as a ``[B, N]`` int64 tensor on ``device`` (type and shape checked, values not).

    Args:
        actions: a tensor, array or nested sequence of integers, shape ``(num_envs, n_agents)``.

    Raises:
        TypeError: not integers (bools, floats, complex, a meta tensor).
        ValueError: a ragged sequence, the wrong shape, or an unsigned value ``>= n_actions`` (named as given,
            before the int64 cast could wrap it).
    """
    B, N = num_envs, n_agents
    if not isinstance(actions, torch.Tensor):
        if contains_bool(actions):  # np.asarray([[True, 1, 1]]) is an int array: True would be the action 1
            raise TypeError(f"actions must be an integer tensor of shape ({B}, {N}), got {actions!r}, which holds a bool")
        try:
            arr = np.asarray(actions)
        except ValueError:  # numpy: "inhomogeneous shape"
            raise ValueError(
                f"actions must be an integer tensor of shape ({B}, {N}), got a ragged sequence {actions!r}"
            ) from None
        if arr.dtype.kind not in "iu":
            raise TypeError(f"actions must be an integer tensor of shape ({B}, {N}), got {actions!r}")
        if not arr.dtype.isnative:  # torch reads native byte order only; the values are the same
            arr = arr.astype(arr.dtype.newbyteorder("="))
        if not arr.flags.writeable:  # torch warns on a read-only view (np.broadcast_to); a copy reads the same
            arr = arr.copy()
        actions = torch.as_tensor(arr)
    if actions.device.type == "meta":
        raise TypeError(f"actions must be an integer tensor of shape ({B}, {N}) holding values, got a meta tensor")
    if actions.dtype.is_floating_point or actions.dtype == torch.bool or actions.is_complex():
        raise TypeError(f"actions must be an integer tensor of shape ({B}, {N}), got dtype {actions.dtype}")
    if tuple(actions.shape) != (B, N):
        raise ValueError(f"actions must have shape (num_envs={B}, n_agents={N}), got {tuple(actions.shape)}")
    if actions.dtype in (torch.uint16, torch.uint32, torch.uint64):
        # the cast to int64 would wrap values >= 2**63 to negatives: name the value as given
        wide = actions.cpu().numpy()
        if (wide >= n_actions).any():
            b, n = (int(i) for i in np.argwhere(wide >= n_actions)[0])
            raise ValueError(f"env {b}, agent {n}: action {int(wide[b, n])} is out of range [0, {n_actions})")
    return actions.to(device=device, dtype=torch.int64)


def check_actions(
    actions: torch.Tensor, avail: torch.Tensor, alive: torch.Tensor, lenient: bool
) -> tuple[torch.Tensor, torch.Tensor, tuple[int, int, int] | None]:
    """The actions to apply and which were replaced, or the first error.

    Args:
        actions: ``[B, N]`` int64 (from :func:`coerce_actions`).
        avail: ``[B, N, A]`` bool, the available actions the agents were shown.
        alive: ``[B, N]`` bool, the agents alive.
        lenient: replace an unavailable action by stop (alive) or no-op (dead) instead of failing.

    Returns:
        ``(actions [B, N] int64, invalid [B, N] bool, error)``; ``error`` is ``None`` or ``(code, b, n)``
        of the first bad action in row-major order, out-of-range (``OUT_OF_RANGE``) before unavailable
        (``UNAVAILABLE``, only when not ``lenient``).
    """
    A = avail.shape[2]
    out_of_range = (actions < 0) | (actions >= A)
    if out_of_range.any():
        b, n = (int(i) for i in out_of_range.nonzero()[0])
        return actions, out_of_range, (OUT_OF_RANGE, b, n)
    ok = torch.gather(avail, 2, actions.unsqueeze(-1)).squeeze(-1)
    invalid = ~ok
    if invalid.any():
        if not lenient:
            b, n = (int(i) for i in invalid.nonzero()[0])
            return actions, invalid, (UNAVAILABLE, b, n)
        actions = torch.where(invalid, torch.where(alive, 1, 0), actions)
    return actions, invalid, None


def apply_actions(
    st: WorldState,
    actions: torch.Tensor,
    is_healer: torch.Tensor,
    n_actions_no_attack: int,
    move_dirs: torch.Tensor,
    fov_dirs: torch.Tensor | None = None,
) -> None:
    """Turn the agents' SMAC actions into their orders, in place on ``st`` (the enemies' are left alone).

    Args:
        st: the state; its first ``N`` units are the agents.
        actions: ``[B, N]`` int64, checked (:func:`check_actions`).
        is_healer: ``[..., N]`` bool, the agents that heal (their target actions pick allies).
        n_actions_no_attack: the first target action (6; SMACv2 ``conic_fov``: 6 + the look actions).
        move_dirs: ``[6, 2]`` float32 (:data:`MOVE_DIRS`) on ``st``'s device.
        fov_dirs: ``[K, 2]`` float32 look directions of the actions ``6 .. 5 + K`` (SMACv2 ``conic_fov``),
            or ``None``; a look action sets ``st.fov_dir`` and keeps the agent's order.
    """
    N = actions.shape[1]
    kind, target = st.order_kind[:, :N], st.order_target[:, :N]
    point = st.order_point[:, :N]
    is_move = (actions >= 2) & (actions <= 5)
    nna = n_actions_no_attack
    is_target = actions >= nna
    j = (actions - nna).clamp(min=0)
    if fov_dirs is not None:  # SMACv2 conic_fov: a look action sends no game command
        n_fov = fov_dirs.shape[0]
        look = (actions >= 6) & (actions < 6 + n_fov)
        d = fov_dirs[(actions - 6).clamp(0, n_fov - 1)]
        st.fov_dir = torch.where(look.unsqueeze(-1), d, st.fov_dir)
    new_kind = torch.where(actions == 1, ORDER_NONE, kind)
    new_kind = torch.where(is_move, ORDER_MOVE, new_kind)
    new_kind = torch.where(is_target, torch.where(is_healer, ORDER_HEAL, ORDER_ATTACK), new_kind)
    keep = (actions == 0) | ((actions >= 6) & (actions < nna))  # no-op (dead) or a look action
    new_target = torch.where(is_target, torch.where(is_healer, j, j + N), torch.where(keep, target, -1))
    dirs = move_dirs[actions.clamp(max=5)]
    new_point = torch.where(is_move.unsqueeze(-1), st.pos[:, :N] + MOVE_AMOUNT * dirs, point)
    st.order_kind = torch.cat([new_kind, st.order_kind[:, N:]], 1)
    st.order_target = torch.cat([new_target, st.order_target[:, N:]], 1)
    st.order_point = torch.cat([new_point, st.order_point[:, N:]], 1)


__all__ = ["MOVE_DIRS", "OK", "OUT_OF_RANGE", "UNAVAILABLE", "apply_actions", "check_actions", "coerce_actions"]
