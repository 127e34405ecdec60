"""Baseline policies on the batched simulator: uniform random and SMAC's heuristic.

Both return ``[B, N]`` int64 action tensors that are always available.
"""

from __future__ import annotations

import torch

from sc2_envs.sim.env import SMACSim
from sc2_envs.sim.features import N_ACTIONS_NO_ATTACK


def random_actions(
    avail_actions: torch.Tensor, generator: torch.Generator | None = None, *, seed: int | None = None
) -> torch.Tensor:
    """Uniform random choice among the available actions.

    Reproducible draws need a source of randomness you own: pass ``generator`` (a
    ``torch.Generator`` on ``avail_actions``' device, advanced by every call: the usual choice in a
    loop) or ``seed`` (a fresh generator seeded with it, for a one-off draw). With neither, torch's
    global generator is used (``torch.manual_seed`` decides).

    Args:
        avail_actions: ``[..., n_actions]`` bool mask; every row must have an available action.
        generator: torch generator to draw from.
        seed: non-negative int seed of a generator made for this call only.

    Returns:
        ``[...]`` int64 actions.

    Raises:
        ValueError: both ``generator`` and ``seed`` given, a negative or non-int ``seed``, or a row
            with no available action (named by its index).
    """
    if seed is not None:
        if generator is not None:
            raise ValueError("pass generator or seed, not both")
        if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
            raise ValueError(f"seed must be a non-negative int, got {seed!r}")
        generator = torch.Generator(device=avail_actions.device).manual_seed(seed)
    flat = avail_actions.reshape(-1, avail_actions.shape[-1])
    empty = ~flat.any(-1)
    if bool(empty.any()):
        row = int(empty.nonzero()[0])
        index = tuple(int(i) for i in torch.unravel_index(torch.tensor(row), avail_actions.shape[:-1]))
        raise ValueError(f"avail_actions{list(index)} has no available action; expected at least one True per row")
    return torch.multinomial(flat.float(), 1, generator=generator).view(avail_actions.shape[:-1])


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
        healer = sim.table.is_healer[:N]
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
            patient = st.alive[:, :N] & ~healer & (st.health[:, :N] < sim.table.max_health[:N])
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
        return torch.where(avail_actions[..., 1], actions, torch.zeros_like(actions))  # dead agents: no-op
