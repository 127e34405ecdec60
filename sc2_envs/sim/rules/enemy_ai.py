"""The enemy side's behaviour: SC2's built-in unit AI on SMAC maps.

On SMAC maps the enemy player does no micro of its own: the map trigger gives every enemy unit one
order after each spawn (``MapScript.galaxy`` ``gf_EnemyAttack``): an attack-move to the map's attack
point on most maps, an attack on the ally unit group on 2c_vs_64zg (``MapSpec.enemy_order``;
docs/maps.md lists them), and the engine's stock unit AI does the rest. We model that AI, once per env
step (2 Hz; SC2 re-scans for targets periodically rather than every loop):

    * Target acquisition: allies within the acquisition range (the larger of the weapon range and 5,
      edge to edge; SMAClite's ``minimum_scan_range``), that the weapon can hit.
    * Priority: the highest ``AttackTargetPriority`` first (a per-unit-type game-data value,
      ``UnitTable.attack_target_priority``: 20 for every SMAC unit including the medivac and the
      rooted spine crawler, in Liberty ``UnitData.xml`` and in the maps' ``_RL`` units; Liquipedia
      "Automatic Targeting": threats, then priority, then distance), then nearest. No unit type is
      penalised for being unarmed: the Liberty medivac has ``AlwaysThreatens=1``, so it counts as a
      threat like an armed unit. The current target is kept unless another of the same priority is
      clearly closer (a hysteresis of ``KEEP_BONUS`` distance units) or one of higher priority is
      acquirable, and is chased up to ``LEASH`` beyond the range.
    * Retaliation: a unit with nothing to acquire turns on the last ally that damaged it.
    * Enemy medivacs follow and heal the nearest damaged biological friend, else the nearest friend.
Allied units are SMAC's passive ``_RL`` copies: they never acquire targets and act only on orders.
"""

from __future__ import annotations

import torch

from sc2_envs.sim.rules.dynamics import sqrt32
from sc2_envs.sim.state import ORDER_ATTACK, ORDER_ATTACK_MOVE, ORDER_HEAL, UnitTable, WorldState

ACQUIRE_MIN = 5.0
KEEP_BONUS = 1.5
LEASH = 4.0
_PRIORITY_SCALE = 1000.0  # distance units per priority step: priority dominates distance (map is 32 wide)
INF = 1e9
ENEMY_ORDERS = ("attack_move", "attack_allies", "attack_closest")
"""``attack_closest``: the SMACv2 32x32_flat map's trigger (every 0.5 game s, each enemy without an
order attacks the ally closest to it, oxwhirl/smacv2 ``maps/SMAC_Maps/32x32_flat.SC2Map``
``MapScript.galaxy`` ``gt_Attack``); handled like ``attack_allies`` with centre distances."""


def pair_dist(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Centre distances ``[B, P, Q]`` between points ``a [B, P, 2]`` and ``b [B, Q, 2]``.

    ``sqrt(dx*dx + dy*dy)`` with each operation rounded in float32 (``dynamics.sqrt32``): ``torch.cdist`` switches to a
    matrix-product formula above 25 points, whose rounding no other execution path (``sim.numba``)
    reproduces.
    """
    dx = a[..., :, None, 0] - b[..., None, :, 0]
    dy = a[..., :, None, 1] - b[..., None, :, 1]
    return sqrt32(dx * dx + dy * dy)


class EnemyAI:
    """Chooses targets for the enemy units (units ``n_agents..U-1``) in place on a ``WorldState``."""

    def __init__(self, table: UnitTable, n_agents: int, enemy_order: str = "attack_move"):
        if enemy_order not in ENEMY_ORDERS:
            raise ValueError(f"enemy_order must be one of {ENEMY_ORDERS}, got {enemy_order!r}")
        self.t = table
        self.N = n_agents
        self.attack_allies = enemy_order == "attack_allies"
        self.attack_closest = enemy_order == "attack_closest"
        flags = table.kinds if table.kinds is not None else table
        self.has_healer = bool(flags.is_healer[n_agents:].any()) if table.kinds is None else bool(flags.is_healer.any())

    # Per-unit views, ``[E]`` / ``[E, N]`` for per-unit tables and ``[B, E]`` / ``[B, E, N]`` for the
    # per-env tables of SMACv2 scenarios (read at each call: the scenario tables change at resets).
    @property
    def acquire(self) -> torch.Tensor:
        return torch.clamp(self.t.weapon_range[..., self.N :], min=ACQUIRE_MIN)

    @property
    def can_target(self) -> torch.Tensor:
        return self.t.can_target[..., self.N :, : self.N]

    @property
    def priority_cost(self) -> torch.Tensor:
        # higher AttackTargetPriority -> lower score; distance breaks ties within a priority
        return -self.t.attack_target_priority[..., : self.N] * _PRIORITY_SCALE

    @property
    def armed(self) -> torch.Tensor:
        return self.t.is_armed[..., self.N :]

    @property
    def healer(self) -> torch.Tensor:
        return self.t.is_healer[..., self.N :]

    @property
    def friend_bio(self) -> torch.Tensor:
        t = self.t
        return t.is_biological[..., self.N :] & ~t.is_healer[..., self.N :]

    def act(self, st: WorldState) -> None:
        """Update ``order_target``/``order_kind`` of every enemy for the coming env step."""
        if self.attack_allies or self.attack_closest:
            self._attack_group(st)
            return
        t, N = self.t, self.N
        pos_e, pos_a = st.pos[:, N:], st.pos[:, :N]
        alive_e, alive_a = st.alive[:, N:], st.alive[:, :N]
        edge = pair_dist(pos_e, pos_a) - t.radius[..., N:, None] - t.radius[..., None, :N]  # [B, E, N]
        ally_ids = torch.arange(N, device=st.pos.device)
        current = st.order_target[:, N:]
        is_current = current.unsqueeze(-1) == ally_ids
        attacker = st.last_attacker[:, N:].unsqueeze(-1) == ally_ids
        targetable = alive_a.unsqueeze(1) & self.can_target
        acq = self.acquire.unsqueeze(-1)
        valid = targetable & ((edge <= acq) | (is_current & (edge <= acq + LEASH)) | attacker)
        score = edge + self.priority_cost.unsqueeze(-2) - KEEP_BONUS * is_current
        score = torch.where(valid, score, torch.full_like(score, INF))
        best = score.argmin(-1)
        has = valid.any(-1) & alive_e & self.armed
        new_target = torch.where(has, best, torch.full_like(best, -1))
        new_kind = st.order_kind[:, N:]
        if self.has_healer:
            new_target, new_kind = self._healers(st, new_target, new_kind)
        st.order_target = torch.cat([st.order_target[:, :N], new_target], 1)
        st.order_kind = torch.cat([st.order_kind[:, :N], new_kind], 1)

    def _healers(self, st: WorldState, target: torch.Tensor, kind: torch.Tensor):
        """Enemy medivacs: heal the nearest damaged biological friend, else follow the nearest friend.

        Returned targets of healers are *unit* indices (enemy side), like every order_target.
        """
        t, N = self.t, self.N
        pos_e = st.pos[:, N:]
        d = pair_dist(pos_e, pos_e)  # [B, E, E]
        friend = st.alive[:, N:].unsqueeze(1) & self.friend_bio.unsqueeze(-2)
        damaged = friend & (st.health[:, N:] < t.max_health[..., N:]).unsqueeze(1)
        d_dmg = torch.where(damaged, d, torch.full_like(d, INF))
        d_any = torch.where(friend, d, torch.full_like(d, INF))
        pick = torch.where(damaged.any(-1), d_dmg.argmin(-1), d_any.argmin(-1)) + N
        heal = self.healer & st.alive[:, N:] & friend.any(-1)
        target = torch.where(heal, pick, torch.where(self.healer, torch.full_like(target, -1), target))
        kind = torch.where(
            heal, torch.full_like(kind, ORDER_HEAL), torch.where(self.healer, torch.full_like(kind, ORDER_ATTACK_MOVE), kind)
        )
        return target, kind

    def _attack_group(self, st: WorldState) -> None:
        """The map script's ``OrderTargetingUnitGroup(AbilityCommand("attack"), gv_allies)`` (2c_vs_64zg).

        Each enemy holds a unit-targeted attack order on one member of the ally group, which it
        chases wherever it goes (no acquisition range, no leash); when that unit dies it takes the
        nearest living member (edge distance) that its weapon can hit. SC2 does not document how a
        unit picks from a targeted group; nearest-first is our choice (docs/deviations.md).
        """
        t, N = self.t, self.N
        ally_ids = torch.arange(N, device=st.pos.device)
        if self.attack_closest:  # UnitGroupClosestToPoint: centre distance
            edge = pair_dist(st.pos[:, N:], st.pos[:, :N])
        else:
            edge = pair_dist(st.pos[:, N:], st.pos[:, :N]) - t.radius[..., N:, None] - t.radius[..., None, :N]  # [B, E, N]
        valid = st.alive[:, :N].unsqueeze(1) & self.can_target
        nearest = torch.where(valid, edge, torch.full_like(edge, INF)).argmin(-1)
        current = st.order_target[:, N:]
        keep = (current >= 0) & (current < N) & (valid & (current.unsqueeze(-1) == ally_ids)).any(-1)
        pick = torch.where(keep, current, nearest)
        has = valid.any(-1) & st.alive[:, N:] & self.armed
        target = torch.where(has, pick, torch.full_like(pick, -1))
        kind = torch.where(has, torch.full_like(pick, ORDER_ATTACK), st.order_kind[:, N:])
        if self.has_healer:
            target, kind = self._healers(st, target, kind)
        st.order_target = torch.cat([st.order_target[:, :N], target], 1)
        st.order_kind = torch.cat([st.order_kind[:, :N], kind], 1)
