"""A fresh episode: the state every env starts from (torch reference; ``numba.reset`` mirrors it).

SMAC v1 maps (:func:`fresh_state`): the map's spawn points (SMAC's ``launch`` places each unit type at
its map's fixed point; ``spawn_jitter`` adds a seeded offset where the cell is standable), full health,
shields and starting energy, enemies attack-moving to the map's attack point. SMACv2 scenarios
(:func:`fresh_scenario_state`): rosters and start positions drawn by ``smacv2.ScenarioSampler`` (or
pinned with ``SMACSim.pin_scenario``), enemies ordered by the map trigger (``EnemyAI``). Every draw is a
counter-based ``sim.rng`` value of (episode count, unit, stream, env seed), so an env's episode does not
depend on the others in its batch.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from sc2_envs.maps import MapSpec
from sc2_envs.sim import rng
from sc2_envs.sim.state import ORDER_ATTACK_MOVE, ORDER_NONE, UnitTable, WorldState

LOOPS_SINCE_DAMAGE_FRESH = 1e6
"""``loops_since_damage`` of a fresh unit: long enough ago that shields regenerate at once."""


def fresh_state(
    st: WorldState,
    table: UnitTable,
    spec: MapSpec,
    n_agents: int,
    spawn_jitter: float,
    can_stand: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
) -> WorldState:
    """A new SMAC v1 episode for every env of ``st`` (its ``env_seed``, ``episode_count + 1``).

    Args:
        st: the current state (``[B, ...]``), read for the env keys and episode counts only.
        table: the map's roster.
        spec: the map (attack point or segment).
        n_agents: ``N``, the ally rows.
        spawn_jitter: game units; each unit's spawn point moves by up to this much on each axis.
        can_stand: ``Dynamics.can_stand`` (a jittered point off the pathing grid keeps the spawn point).
    """
    t, B, N = table, st.pos.shape[0], n_agents
    device = st.pos.device
    new = WorldState.empty(B, len(t.names), N, device)
    new.env_seed = st.env_seed.clone()
    new.episode_count = st.episode_count + 1
    units = torch.arange(len(t.names), device=device)
    new.pos = t.spawn_pos.expand(B, -1, -1).clone()
    if spawn_jitter > 0:
        key = (
            new.episode_count[:, None, None],
            units[None, :, None],
            torch.arange(2, device=device)[None, None, :],
            rng.STREAM_SPAWN,
            new.env_seed[:, None, None],
        )
        offset = (rng.uniform(*key) * 2 - 1) * spawn_jitter
        jittered = new.pos + offset
        cell_ok = can_stand(jittered, new.pos)
        new.pos = torch.where(cell_ok.unsqueeze(-1), jittered, new.pos)
    new.health = t.max_health.expand(B, -1).clone()
    new.shield = t.max_shield.expand(B, -1).clone()
    new.energy = t.energy_start.expand(B, -1).clone()
    new.alive = torch.ones_like(new.alive)
    new.jitter_state = rng.mix(new.episode_count[:, None], units[None, :], rng.STREAM_COOLDOWN, new.env_seed[:, None])
    seg = spec.attack_segment
    if seg is not None:
        u = rng.uniform(new.episode_count, rng.STREAM_ATTACK_POINT, new.env_seed).unsqueeze(-1)
        a, b = torch.tensor(seg, dtype=torch.float32, device=device)
        new.attack_point = a + u * (b - a)
    elif spec.attack_point is not None:
        new.attack_point = torch.tensor(spec.attack_point, device=device).expand(B, 2).clone()
    enemy = ~t.is_ally
    new.order_kind = torch.where(enemy, ORDER_ATTACK_MOVE, ORDER_NONE).expand(B, -1).clone()
    point = new.attack_point.unsqueeze(1) if spec.attack_point is not None else new.pos
    new.order_point = torch.where(enemy.unsqueeze(-1), point, new.pos)
    new.loops_since_damage.fill_(LOOPS_SINCE_DAMAGE_FRESH)
    new.prev_health, new.prev_shield, new.prev_alive = new.health.clone(), new.shield.clone(), new.alive.clone()
    return new


def fresh_scenario_state(
    st: WorldState,
    table: UnitTable,
    n_agents: int,
    n_enemies: int,
    draw: dict[str, torch.Tensor],
    pins: tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor],
    max_reward_of: Callable[[torch.Tensor], torch.Tensor],
) -> WorldState:
    """A new SMACv2 episode for every env of ``st``: the drawn (or pinned) rosters and start positions.

    Args:
        st: the current state, read for the env keys, episode counts and ``max_reward``.
        table: the scenario's ``UnitTable`` (its ``kinds`` table: ``T`` ally kinds, then ``T`` enemy kinds).
        n_agents, n_enemies: ``N`` and ``E``.
        draw: ``ScenarioSampler.sample(st.episode_count + 1, st.env_seed)``: ``kind [B, N + E]`` int64,
            ``pos [B, N + E, 2]`` float32.
        pins: ``(mask [B] bool, kind [B, U] int64, has_pos [B] bool, pos [B, U, 2])`` of
            ``SMACSim.pin_scenario``.
        max_reward_of: ``SMACv2Features.max_reward_of`` (SMACv2 fixes ``max_reward`` on the first
            episode after seeding).
    """
    B, N = st.pos.shape[0], n_agents
    device = st.pos.device
    new = WorldState.empty(B, N + n_enemies, N, device)
    new.env_seed = st.env_seed.clone()
    new.episode_count = st.episode_count + 1
    pin_mask, pin_kind, pin_has_pos, pin_pos = pins
    kind = torch.where(pin_mask[:, None], pin_kind, draw["kind"])
    pos = torch.where((pin_mask & pin_has_pos)[:, None, None], pin_pos, draw["pos"])
    new.unit_kind = kind
    new.pos = pos
    kt = table.kinds
    T = len(kt.names) // 2
    row = torch.where(table.is_ally, kind, kind + T)
    new.health = kt.max_health[row]
    new.shield = kt.max_shield[row]
    new.energy = kt.energy_start[row]
    new.alive = torch.ones_like(new.alive)
    units = torch.arange(N + n_enemies, device=device)
    new.jitter_state = rng.mix(new.episode_count[:, None], units[None, :], rng.STREAM_COOLDOWN, new.env_seed[:, None])
    new.attack_point = torch.tensor([8.0, 16.0], device=device).expand(B, 2).clone()
    new.order_kind = torch.full_like(new.order_kind, ORDER_NONE)  # enemies get orders from the map trigger (EnemyAI)
    new.order_point = new.pos.clone()
    new.fov_dir = torch.tensor([1.0, 0.0], device=device).expand(B, N, 2).clone()
    new.max_reward = torch.where(new.episode_count == 0, max_reward_of(kind), st.max_reward)
    new.loops_since_damage.fill_(LOOPS_SINCE_DAMAGE_FRESH)
    new.prev_health, new.prev_shield, new.prev_alive = new.health.clone(), new.shield.clone(), new.alive.clone()
    return new


__all__ = ["LOOPS_SINCE_DAMAGE_FRESH", "fresh_scenario_state", "fresh_state"]
