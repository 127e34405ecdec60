"""Baseline policies on the batched simulator: uniform random and SMAC's heuristic.

Both return ``[B, N]`` int64 action tensors that are always available.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np
import torch

from sc2_envs.sim.rules.features import N_ACTIONS_NO_ATTACK
from sc2_envs.smac_actions import alive_mask

if TYPE_CHECKING:  # the simulator imports this module for its compile warm-up: no import at run time
    from sc2_envs.sim.env import SMACSim


def random_actions(
    avail_actions: torch.Tensor, generator: torch.Generator | None = None, *, seed: int | None = None
) -> torch.Tensor:
    """Uniform random choice among the available actions.

    Reproducible draws need a source of randomness you own: pass ``generator`` (a
    ``torch.Generator`` on ``avail_actions``' device, advanced by every call: the usual choice in a
    loop) or ``seed`` (a fresh generator seeded with it, for a one-off draw). With neither, torch's
    global generator is used (``torch.manual_seed`` decides).

    Each row draws one float64 ``u`` uniform in ``[0, 1)`` (``torch.rand``, one number per row from
    the generator) and takes its ``k``-th available action, ``k = floor(u * count)``: every available
    action has probability ``1 / count`` (up to ``count * 2**-53``). On CPU, with numba installed,
    the choice runs as one small compiled loop, elsewhere as four tensor operations; both give the
    same actions for the same ``u`` (the tensor operations also while the simulator's kernels compile in
    another thread, whose compiler lock the compiled loop's first call would wait for).

    Args:
        avail_actions: ``[..., n_actions]`` bool mask; every row must have an available action.
        generator: torch generator to draw from.
        seed: non-negative int (Python or NumPy) below ``2**64``, the seed of a generator made for this
            call only.

    Returns:
        ``[...]`` int64 actions.

    Raises:
        TypeError: ``generator`` is not a ``torch.Generator``.
        ValueError: both ``generator`` and ``seed`` given, a ``seed`` that is not an int in ``[0, 2**64)``, a mask
            that is not a bool tensor with at least one dimension, or a row with no available
            action (named by its index).
    """
    if seed is not None:
        if generator is not None:
            raise ValueError("pass generator or seed, not both")
        if not isinstance(seed, (int, np.integer)) or isinstance(seed, (bool, np.bool_)) or not 0 <= seed < 2**64:
            raise ValueError(f"seed must be a non-negative int below 2**64 (torch.Generator's range), got {seed!r}")
        generator = torch.Generator(device=avail_actions.device).manual_seed(int(seed))
    elif generator is not None and not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator (or None), got {generator!r}; pass an int as seed=")
    if not isinstance(avail_actions, torch.Tensor) or avail_actions.dtype != torch.bool or avail_actions.dim() < 1:
        got = (
            f"{avail_actions.dtype} tensor of shape {tuple(avail_actions.shape)}"
            if isinstance(avail_actions, torch.Tensor)
            else type(avail_actions).__name__
        )
        raise ValueError(f"avail_actions must be a bool tensor [..., n_actions], got {got}")
    shape = avail_actions.shape[:-1]
    n_rows = math.prod(shape)
    pick = _pick_kernel() if avail_actions.is_cpu else None
    if pick is not None and not pick.signatures and _compiling_elsewhere():
        pick = None  # its first call would wait for Numba's compiler lock until the background compile ends
    if pick is not None:  # NumPy views and one compiled loop: a few microseconds at B = 1
        mask = avail_actions.numpy()
        u = torch.rand(n_rows, generator=generator, dtype=torch.float64)
        out = np.empty(mask.shape[:-1], np.int64)
        empty = pick(np.ascontiguousarray(mask).reshape(n_rows, mask.shape[-1]), u.numpy(), out.reshape(n_rows))
        actions = torch.from_numpy(out)
    else:
        flat = avail_actions.reshape(n_rows, avail_actions.shape[-1])
        u = torch.rand(n_rows, generator=generator, dtype=torch.float64, device=flat.device)
        count = flat.sum(-1)
        bad = (count == 0).nonzero()
        empty = int(bad[0]) if bad.numel() else -1
        k = torch.minimum((u * count).long(), count - 1)
        actions = (flat.cumsum(-1) <= k.unsqueeze(-1)).sum(-1).view(shape)
    if empty >= 0:
        index = tuple(int(i) for i in torch.unravel_index(torch.tensor(empty), shape))
        raise ValueError(f"avail_actions{list(index)} has no available action; expected at least one True per row")
    return actions


_PICK: list = []


def _compiling_elsewhere() -> bool:
    """Whether another thread of this process is compiling the simulator's kernels (``sim.runtime.warmup``)."""
    from sc2_envs.sim.runtime.warmup import compiling_elsewhere

    return compiling_elsewhere()


def _pick_kernel():
    """The compiled CPU choice of ``random_actions`` (``None`` without numba; compiled once, cached on disk)."""
    if not _PICK:
        try:
            import numba
        except Exception:  # numba missing or broken: the tensor path gives the same actions
            _PICK.append(None)
            return None

        @numba.njit(cache=True, nogil=True)
        def pick(avail, u, out):
            """``out[r]`` = the ``floor(u[r] * count)``-th available action of row ``r``; returns the
            first row without one (its ``out`` undefined), or -1."""
            R, A = avail.shape
            for r in range(R):
                count = 0
                for a in range(A):
                    count += avail[r, a]
                if count == 0:
                    return r
                k = np.int64(u[r] * np.float64(count))
                if k > count - 1:
                    k = count - 1
                for a in range(A):
                    if avail[r, a]:
                        if k == 0:
                            out[r] = a
                            break
                        k -= 1
            return -1

        _PICK.append(pick)
    return _PICK[0]


class HeuristicPolicy:
    """SMAC's scripted ally policy (``heuristic_ai=True`` with ``heuristic_rest=True``).

    Each agent attacks the nearest live enemy and keeps that target until it dies; when the
    attack is not available (beyond SMAC's shoot range of 6) it steps toward the target along the
    larger axis. A medivac heals the nearest damaged non-medivac ally, else follows the nearest ally.
    Source: oxwhirl/smac ``starcraft2.py`` ``get_agent_action_heuristic``. It reads unit positions
    from the simulator (privileged, as SMAC's version reads the raw units).

    Args:
        sim: the batched simulator to act in.
    """

    def __init__(self, sim: SMACSim):
        self.sim = sim
        self.target = torch.full((sim.num_envs, sim.n_agents), -1, dtype=torch.int64, device=sim.device)

    def __call__(self, avail_actions: torch.Tensor) -> torch.Tensor:
        """Actions ``[B, N]`` int64 for the current state, given ``avail_actions [B, N, A]`` bool."""
        sim, st, N = self.sim, self.sim.st, self.sim.n_agents
        healer = sim.table.is_healer[..., :N]  # [N], or per env [B, N] on SMACv2
        pos_a, pos_e = st.pos[:, :N], st.pos[:, N:]
        alive_e = st.alive[:, N:]
        d = torch.cdist(pos_a, pos_e)
        nearest = torch.where(alive_e.unsqueeze(1), d, torch.full_like(d, 1e9)).argmin(-1)
        cur_ok = (self.target >= 0) & torch.gather(alive_e, 1, self.target.clamp(min=0)) & (st.episode_steps > 0).unsqueeze(1)
        self.target = torch.where(cur_ok, self.target, nearest)
        goal = torch.gather(pos_e, 1, self.target.unsqueeze(-1).expand(-1, -1, 2))
        act_idx = self.target + N_ACTIONS_NO_ATTACK

        if bool(healer.any()):
            d_al = torch.cdist(pos_a, pos_a)
            patient = st.alive[:, :N] & ~healer & (st.health[:, :N] < sim.table.max_health[..., :N])
            friend = st.alive[:, :N] & ~healer
            d_p = torch.where(patient.unsqueeze(1), d_al, torch.full_like(d_al, 1e9))
            d_f = torch.where(friend.unsqueeze(1), d_al, torch.full_like(d_al, 1e9))
            pick = torch.where(patient.any(-1, keepdim=True), d_p.argmin(-1), d_f.argmin(-1))
            act_idx = torch.where(healer, pick + N_ACTIONS_NO_ATTACK, act_idx)
            goal = torch.where(healer.unsqueeze(-1), torch.gather(pos_a, 1, pick.unsqueeze(-1).expand(-1, -1, 2)), goal)

        can_act = torch.gather(avail_actions, 2, act_idx.unsqueeze(-1)).squeeze(-1)
        delta = goal - pos_a
        horizontal = delta[..., 0].abs() >= delta[..., 1].abs()
        move = torch.where(horizontal, torch.where(delta[..., 0] > 0, 4, 5), torch.where(delta[..., 1] > 0, 2, 3))
        can_move = torch.gather(avail_actions, 2, move.unsqueeze(-1)).squeeze(-1)
        actions = torch.where(can_act, act_idx, torch.where(can_move, move, torch.ones_like(move)))
        return torch.where(alive_mask(avail_actions), actions, torch.zeros_like(actions))  # dead agents: no-op
