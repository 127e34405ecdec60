"""Game-loop dynamics: movement, collisions, terrain, weapons, damage, healing, regeneration.

Each function maps the batched ``WorldState`` to its next value in place, vectorised over
``[B envs, U units]`` (and ``[B, U, U]`` for pairwise terms). ``advance`` runs one *tick* of
``L`` game loops (``L = 1`` is exact loop-by-loop simulation); weapon cooldowns are kept at
game-loop resolution for any ``L``: a weapon that becomes ready inside a tick fires in that tick
and its next cooldown is counted from the loop it fired in.

Rules and their sources (SC2 game data and engine behaviour, see ``units.py`` and the fact sheet):
    * Weapon range is edge to edge: fire when ``centre distance - r_attacker - r_target <= range``.
    * Damage per hit = base + attribute bonus; shields absorb first (shield armour 0); HP armour is
      subtracted from the part of each hit that reaches HP, with SC2's floor of 0.5 per hit.
    * After each shot the next is ready -1..+2 loops off the nominal period (pysc2
      ``docs/environment.md``, "Determinism and Randomness"; Core ``CWeaponLegacy`` default
      ``RandomDelayMin -0.0625``/``RandomDelayMax 0.125`` s), drawn from the env's own stream.
    * Weapon periods are not whole loops (marine 3526/4096 s = 13.77 loops). Game data keeps times
      in 1/4096 s fixed point and the weapon timer counts down by one loop (256/4096 s) per loop; a
      weapon fires on the first loop its timer is <= 0 and the sub-loop remainder carries into the
      next period instead of being rounded away, so a marine firing continuously averages
      13.77 + 0.5 (mean jitter) = 14.27 loops per shot, not ceil(13.77 + jitter) = 14.5. The carry
      is at most one loop, and none is kept by a weapon that was ready and idle.
    * Shields regenerate 2/s after 10 s without damage; zerg units regenerate 0.2734 HP/s; the
      medivac regains 0.5625 energy/s and heals 9 HP/s at 0.33 energy per HP (Liberty data). Zerg
      structures regenerate too: the spine crawler's ``LifeRegenRate`` is 0.2734, and its
      ``ZergBuildingNotOnCreep`` decay (1 HP per 0.3332 s) never applies on SMAC's 2s_vs_1sc: its
      footprint ``Footprint2x2Contour2`` places creep on its own cells (Liberty FootprintData.xml).
    * Colossus: a beam of length 2.8 and width 0.3 centred on the target, perpendicular to the line
      of fire, hits every enemy ground unit it touches (SMAClite's LASER_BEAM geometry).
    * Baneling: explodes when within 0.25 of its target (edge to edge), hitting every enemy ground
      unit whose edge is within 2.2 of its centre, then dies. No friendly fire.
Deliberate simplifications are listed in ``docs/deviations.md``.
"""

from __future__ import annotations

import torch

from sc2_envs.sim import rng
from sc2_envs.sim.state import (
    ORDER_ATTACK,
    ORDER_ATTACK_MOVE,
    ORDER_HEAL,
    ORDER_MOVE,
    ORDER_NONE,
    SHIELD_REGEN_DELAY,
    SHIELD_REGEN_RATE,
    SPLASH_LINE,
    SPLASH_SUICIDE,
    UnitTable,
    WorldState,
)

_BEAM_HALF_LENGTH = 1.4
_BEAM_HALF_WIDTH = 0.15
_EPS = 1e-6


class Dynamics:
    """The per-tick update for one map roster.

    Args:
        table: the roster's constant tables.
        pathing: ``[32, 32]`` bool walkable grid indexed ``[x, y]``, on the sim device.
        loops_per_tick: game loops simulated per tick (1 = exact); must divide 8.
    """

    def __init__(self, table: UnitTable, pathing: torch.Tensor, loops_per_tick: int = 1):
        if loops_per_tick not in (1, 2, 4, 8):
            raise ValueError(f"loops_per_tick must be one of 1, 2, 4, 8 (divides the 8 loops of a step), got {loops_per_tick!r}")
        self.t = table
        self.L = loops_per_tick
        self.pathing = pathing
        self._flat_pathing = pathing.flatten()
        self.map_w, self.map_h = pathing.shape
        self.has_line = bool((table.splash == SPLASH_LINE).any())
        self.has_suicide = bool((table.splash == SPLASH_SUICIDE).any())
        self.has_healer = bool(table.is_healer.any())
        self.has_regen = bool((table.life_regen > 0).any())
        self.has_shield = bool((table.max_shield > 0).any())
        self.side = table.is_ally.long()
        # pairs that push each other apart: both ground units that collide, not the same unit
        c = table.collides
        self.collide_pair = (c[:, None] & c[None, :]) & ~torch.eye(len(c), dtype=torch.bool, device=c.device)
        self.enemy_pair = table.is_ally[:, None] != table.is_ally[None, :]
        self._radius_sum = table.radius[:, None] + table.radius[None, :]
        self.ground = ~table.is_air
        self._unit_idx = torch.arange(len(table.names), device=pathing.device)
        self._dense = pathing.device.type != "cpu"

    # ------------------------------------------------------------------ helpers
    @staticmethod
    def _gather(x: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
        """``x[b, idx[b, u]]`` for ``x`` of shape ``[B, U]`` or ``[B, U, 2]``."""
        if x.dim() == 3:
            return torch.gather(x, 1, idx.unsqueeze(-1).expand(-1, -1, x.shape[-1]))
        return torch.gather(x, 1, idx)

    def _walkable(self, p: torch.Tensor) -> torch.Tensor:
        """Whether the cells containing points ``p [..., 2]`` are walkable (outside the map: no)."""
        cell = torch.floor(p).long()
        inside = ((cell >= 0) & (cell < self.map_w)).all(-1)
        flat = cell[..., 0].clamp(0, self.map_w - 1) * self.map_h + cell[..., 1].clamp(0, self.map_h - 1)
        return inside & self._flat_pathing[flat]

    # ------------------------------------------------------------------ tick
    def advance(self, st: WorldState, loop_index: torch.Tensor) -> None:
        """Simulate one tick of ``L`` game loops in place: fire, apply deaths, move, regenerate.

        Units in range fire first and the others walk, as SC2 units do; everything that happens
        in one tick is simultaneous (SC2 updates units in a random order within a loop).

        Args:
            st: the world state (modified in place).
            loop_index: ``[B]`` int64, game loops since the episode started (kept for callers that
                key randomness on time; the cooldown jitter uses each unit's own stream).
        """
        t = self.t
        alive = st.alive
        kind = st.order_kind
        tgt = st.order_target.clamp(min=0)
        tgt_alive = self._gather(alive, tgt) & (st.order_target >= 0)
        tgt_pos = self._gather(st.pos, tgt)
        engage = alive & tgt_alive & ((kind == ORDER_ATTACK) | (kind == ORDER_ATTACK_MOVE) | (kind == ORDER_HEAL))
        healing = engage & (kind == ORDER_HEAL)
        reach = torch.where(healing, t.heal_range, t.weapon_range)
        gap = (tgt_pos - st.pos).norm(dim=-1) - t.radius - t.radius[tgt] - reach  # > 0: out of range by this much
        in_range = engage & (gap <= _EPS)

        self._fire(st, engage & ~healing & in_range, tgt, tgt_pos, alive)
        if self.has_healer:
            self._heal(st, healing & in_range, tgt, self.L)
        st.alive = alive & (st.health > 0)
        st.health = st.health * st.alive
        st.shield = st.shield * st.alive
        self._move(st, engage & ~in_range, engage, tgt_pos, gap)
        self._regenerate(st)

    def _fire(self, st: WorldState, can_fire: torch.Tensor, tgt, tgt_pos, alive) -> None:
        """Weapons ready within this tick fire once, at loop ``ready_at`` (1..L) of the tick."""
        t, L = self.t, self.L
        ready_at = torch.ceil(st.cooldown).clamp(min=1)
        fire = can_fire & t.is_armed & (ready_at <= L)
        nxt = rng.lcg_next(st.jitter_state)
        jitter = (rng.lcg_top2(nxt) - 1).to(torch.float32)  # -1..+2 loops
        st.jitter_state = torch.where(fire, nxt, st.jitter_state)
        # the fraction of a loop by which the timer overshot 0 carries into the next period
        carry = torch.where(st.cooldown > 0, ready_at - st.cooldown, torch.zeros_like(st.cooldown))
        st.cooldown = torch.where(fire, t.weapon_cooldown + jitter - carry - (L - ready_at),
                                  (st.cooldown - L).clamp(min=0))
        per_attack = fire * t.attacks  # [B, U] hits each attacker lands on its target
        splash = self.has_line or self.has_suicide
        if self._dense or splash:
            # hits[b, a, v]: hits attacker a lands on unit v in this tick. Dense sums are
            # deterministic on every device (scatter_add uses float atomics on CUDA).
            hits = torch.nn.functional.one_hot(tgt, st.pos.shape[1]).to(torch.float32) * per_attack.unsqueeze(-1)
            if splash:
                hits = self._splash_hits(st, hits, fire, tgt_pos, alive)
            raw, n_hits = (hits * t.damage_vs).sum(1), hits.sum(1)
        else:  # one target per attacker: scatter the hits, no [B, U, U] work
            raw = torch.zeros_like(st.health).scatter_add(1, tgt, per_attack * t.damage_vs[self._unit_idx, tgt])
            n_hits = torch.zeros_like(st.health).scatter_add(1, tgt, per_attack)
        attacker = torch.where(fire, self._unit_idx, -1)
        last = torch.full_like(st.last_attacker, -1).scatter_reduce(1, tgt, attacker, "amax")
        self._apply_damage(st, raw, n_hits, last)
        if self.has_suicide:  # exploded banelings die
            st.health = torch.where(fire & (t.splash == SPLASH_SUICIDE), torch.zeros_like(st.health), st.health)

    def _move(self, st: WorldState, chase: torch.Tensor, engage: torch.Tensor, tgt_pos, gap) -> None:
        """Walk toward the target until in range, or toward the order point; then collide and slide."""
        t, L, alive, kind = self.t, self.L, st.alive, st.order_kind
        goal = torch.where(engage.unsqueeze(-1), tgt_pos, st.order_point)
        to_goal = goal - st.pos
        goal_dist = to_goal.norm(dim=-1)
        walk = alive & ~t.is_static & (chase | (~engage & ((kind == ORDER_MOVE) | (kind == ORDER_ATTACK_MOVE))))
        limit = torch.where(engage, gap + 2 * _EPS, goal_dist)
        step = torch.minimum(t.speed * L, limit).clamp(min=0) * walk
        new_pos = st.pos + to_goal / goal_dist.clamp(min=_EPS).unsqueeze(-1) * step.unsqueeze(-1)
        arrived = (kind == ORDER_MOVE) & (goal_dist <= t.speed * L)
        st.order_kind = torch.where(arrived & alive, torch.full_like(kind, ORDER_NONE), kind)
        # collisions: push overlapping ground units apart, half the overlap each
        x, y = new_pos[..., 0], new_pos[..., 1]
        dx = x.unsqueeze(2) - x.unsqueeze(1)  # [B, U, U], from j to i (component-wise: cheaper than a norm over 2)
        dy = y.unsqueeze(2) - y.unsqueeze(1)
        dist = torch.sqrt(dx * dx + dy * dy)
        overlap = (self._radius_sum - dist).clamp(min=0)
        pair = self.collide_pair & alive.unsqueeze(1) & alive.unsqueeze(2)
        push_w = torch.where(pair, overlap * 0.5 / dist.clamp(min=1e-3), 0.0)
        movable = (~t.is_static & alive).float()
        push = torch.stack([(dx * push_w).sum(2), (dy * push_w).sum(2)], -1) * movable.unsqueeze(-1)
        new_pos = new_pos + push
        # terrain: ground units slide along unwalkable cells (keep the axis that stays walkable)
        slide_x = torch.stack([new_pos[..., 0], st.pos[..., 1]], -1)
        slide_y = torch.stack([st.pos[..., 0], new_pos[..., 1]], -1)
        ok, ok_x, ok_y = self._walkable(torch.stack([new_pos, slide_x, slide_y]))
        ok = ok | t.is_air
        new_pos = torch.where(ok.unsqueeze(-1), new_pos,
                              torch.where(ok_x.unsqueeze(-1), slide_x, torch.where(ok_y.unsqueeze(-1), slide_y, st.pos)))
        st.pos = new_pos.clamp(0.0, float(self.map_w) - 1e-3)

    def _regenerate(self, st: WorldState) -> None:
        """Shield regeneration after its delay, zerg life regeneration, medivac energy."""
        t, L, alive = self.t, self.L, st.alive
        if self.has_shield:
            regen = (st.loops_since_damage >= SHIELD_REGEN_DELAY) & alive
            st.shield = torch.where(regen, (st.shield + SHIELD_REGEN_RATE * L).clamp(max=t.max_shield), st.shield)
        if self.has_regen:
            st.health = torch.where(alive, (st.health + t.life_regen * L).clamp(max=t.max_health), st.health)
        if self.has_healer:
            st.energy = torch.where(alive, (st.energy + t.energy_regen * L).clamp(max=t.energy_max), st.energy)
        st.loops_since_damage = st.loops_since_damage + L

    def _splash_hits(self, st, hits, fire, tgt_pos, alive) -> torch.Tensor:
        """Replace the rows of splash attackers in ``hits [B, U, U]`` by everything their splash touches."""
        t = self.t
        victims = self.enemy_pair & self.ground[None, :] & alive.unsqueeze(1)  # [B, a, v]
        vpos = st.pos.unsqueeze(1)  # [B, 1, v, 2]
        rel = vpos - tgt_pos.unsqueeze(2)  # victim relative to a's target, [B, a, v, 2]
        if self.has_line:
            fwd = tgt_pos - st.pos
            fwd = fwd / fwd.norm(dim=-1, keepdim=True).clamp(min=_EPS)
            along = (rel * fwd.unsqueeze(2)).sum(-1)  # distance along the line of fire
            perp = (rel[..., 0] * -fwd[..., 1].unsqueeze(2) + rel[..., 1] * fwd[..., 0].unsqueeze(2))
            r_v = t.radius[None, None, :]
            in_beam = (along.abs() <= _BEAM_HALF_WIDTH + r_v) & (perp.abs() <= _BEAM_HALF_LENGTH + r_v)
            line = (t.splash == SPLASH_LINE)[None, :, None] & fire.unsqueeze(-1)
            hits = torch.where(line, (in_beam & victims) * t.attacks[None, :, None], hits)
        if self.has_suicide:
            d_self = (vpos - st.pos.unsqueeze(2)).norm(dim=-1) - t.radius[None, None, :]
            in_blast = d_self <= t.splash_radius[None, :, None]
            boom = (t.splash == SPLASH_SUICIDE)[None, :, None] & fire.unsqueeze(-1)
            hits = torch.where(boom, (in_blast & victims).float(), hits)
        return hits

    def _apply_damage(self, st: WorldState, raw, n_hits, last_attacker) -> None:
        """Shields first, then HP minus armour per hit that reaches HP (floor 0.5 per hit).

        Hits landing in the same tick are pooled: the number of hits that reach HP is estimated as
        ``ceil(remaining / mean hit)``, exact for a single attacker (see docs/deviations.md).
        """
        t = self.t
        absorbed = torch.minimum(st.shield, raw)
        rest = raw - absorbed
        mean_hit = raw / n_hits.clamp(min=1)
        k = torch.minimum(torch.ceil(rest / mean_hit.clamp(min=_EPS) - 1e-4), n_hits)
        hp_loss = torch.where(rest > 0, torch.maximum(rest - t.armor * k, 0.5 * k), torch.zeros_like(rest))
        st.shield = st.shield - absorbed
        st.health = (st.health - hp_loss).clamp(min=0)
        damaged = raw > 0
        st.loops_since_damage = torch.where(damaged, torch.zeros_like(st.loops_since_damage), st.loops_since_damage)
        # the retaliation target: the highest-index unit that targeted it this tick (splash victims keep theirs)
        st.last_attacker = torch.where(damaged & (last_attacker >= 0), last_attacker, st.last_attacker)

    def _heal(self, st: WorldState, heals: torch.Tensor, tgt: torch.Tensor, L: int) -> None:
        """Medivacs heal their (biological, damaged) target, paying energy per HP."""
        t = self.t
        missing = (t.max_health[tgt] - self._gather(st.health, tgt)).clamp(min=0)
        ok = heals & t.is_biological[tgt]
        amount = torch.minimum(torch.minimum(t.heal_rate * L, missing),
                               st.energy / t.heal_energy_cost.clamp(min=_EPS)) * ok
        st.energy = st.energy - amount * t.heal_energy_cost
        st.health = torch.minimum(st.health.scatter_add(1, tgt, amount), t.max_health)
