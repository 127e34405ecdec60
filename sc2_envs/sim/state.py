"""The simulator's state: a few tensors of shape ``[B envs, U units]`` plus per-map constant tables.

Units are ordered allies first (agent ids ``0..n_agents-1``), then enemies (enemy id ``j`` is unit
``n_agents + j``). All floats are float32; positions are world units on the 32x32 map.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np
import torch

from sc2_envs.maps import CLIFF_STEP, MapSpec, terrain_grids
from sc2_envs.sim.weapons import get_timing
from sc2_envs.units import LOOPS_PER_SECOND, UNITS

# Order kinds (one per unit). Allies get orders from actions; enemies from the built-in AI.
ORDER_NONE = 0  # idle / stop
ORDER_MOVE = 1  # walk to order_point
ORDER_ATTACK = 2  # chase order_target and fire when in weapon range (edge to edge)
ORDER_HEAL = 3  # medivac: follow order_target and heal it when in heal range
ORDER_ATTACK_MOVE = 4  # walk to order_point, engaging targets acquired on the way (enemy AI)

SPLASH_NONE, SPLASH_LINE, SPLASH_SUICIDE = 0, 1, 2

SHIELD_REGEN_DELAY = 10.0 * LOOPS_PER_SECOND
"""Game loops without damage before shields regenerate (ShieldRegenDelay 10 normal s, SMAC maps)."""
SHIELD_REGEN_RATE = 2.0 / LOOPS_PER_SECOND
"""Shield points per game loop once regenerating (ShieldRegenRate 2 per normal s)."""


@dataclass
class WorldState:
    """Mutable batched world state.

    Attributes (``B`` envs, ``U = n_agents + n_enemies`` units, ``N = n_agents``):
        pos: ``[B, U, 2]`` float32, unit centres.
        health, shield, energy: ``[B, U]`` float32, absolute values (0 health = dead).
        cooldown: ``[B, U]`` float32, game loops until the weapon is ready (the raw API's
            ``weapon_cooldown``), >= 0.
        alive: ``[B, U]`` bool.
        order_kind: ``[B, U]`` int64, one of the ``ORDER_*`` constants.
        order_target: ``[B, U]`` int64, unit index of the order's target (-1 for none).
        order_point: ``[B, U, 2]`` float32, target point of move / attack-move orders.
        loops_since_damage: ``[B, U]`` float32, game loops since the unit last lost HP or shield.
        last_attacker: ``[B, U]`` int64, unit index of the last unit that damaged it (-1 none).
        prev_health, prev_shield: ``[B, U]`` float32, snapshot at the end of the previous env step
            (SMAC's ``previous_ally_units`` / ``previous_enemy_units``, used by the reward).
        prev_alive: ``[B, U]`` bool, alive at the end of the previous env step (SMAC's death tracker
            is ``~prev_alive``).
        last_action: ``[B, N]`` int64, each agent's action at the previous env step, -1 after reset.
        episode_steps: ``[B]`` int64, env steps since reset.
        attack_point: ``[B, 2]`` float32, the enemy attack-move target of this episode.
        env_seed: ``[B]`` int64, each env's seed (its random stream; see ``sim.rng``).
        episode_count: ``[B]`` int64, episodes started by this env since its last seeding.
        jitter_state: ``[B, U]`` int64, per-unit 32-bit LCG state of the weapon-cooldown jitter,
            seeded from ``(env_seed, episode_count, unit)`` at reset and advanced at each shot.
        windup: ``[B, U]`` float32, game loops until the pending hit of the unit's current attack
            lands (its damage point, then the spacing of further hits); meaningful where
            ``hits_left > 0``.
        windup_target: ``[B, U]`` int64, unit index the pending attack is aimed at (-1 none).
        hits_left: ``[B, U]`` float32, hits of the current attack still to land (0 = no attack
            pending; an attack is cancelled, dealing nothing, if its attacker dies, gets another
            order or loses its target before the hit).
        missile_eta: ``[B, U]`` float32, game loops until the unit's missile in flight hits.
        missile_target: ``[B, U]`` int64, unit index the missile flies at (-1 none).
        missile_hits: ``[B, U]`` float32, hits the missile carries (0 = no missile in flight).
        burst_pending: ``[B, U]`` bool, a baneling that died (not by its own attack) in the previous
            tick and bursts (VolatileBurst) in this one.
        unit_kind: ``[B, U]`` int64, SMACv2 scenarios: each unit's kind (index into the scenario's
            ``kinds``, its unit-type one-hot order); 0 on SMAC v1 maps.
        fov_dir: ``[B, N, 2]`` float32, SMACv2 ``conic_fov``: each agent's look direction (unit
            vector, (1, 0) after reset); zeros otherwise.
        enemy_tag: ``[B, E]`` int64, SMACv2: the agent whose sight first tagged enemy ``j`` as
            observed (SMACv2 ``enemy_tags``), -1 for none.
        max_reward: ``[B]`` float32, SMACv2: the reward normaliser, fixed from the enemy team of the
            first episode after seeding (as SMACv2 sets it on its first episode); 0 on v1 maps.
    """

    pos: torch.Tensor
    health: torch.Tensor
    shield: torch.Tensor
    energy: torch.Tensor
    cooldown: torch.Tensor
    alive: torch.Tensor
    order_kind: torch.Tensor
    order_target: torch.Tensor
    order_point: torch.Tensor
    loops_since_damage: torch.Tensor
    last_attacker: torch.Tensor
    prev_health: torch.Tensor
    prev_shield: torch.Tensor
    prev_alive: torch.Tensor
    last_action: torch.Tensor
    episode_steps: torch.Tensor
    attack_point: torch.Tensor
    env_seed: torch.Tensor
    episode_count: torch.Tensor
    jitter_state: torch.Tensor
    windup: torch.Tensor
    windup_target: torch.Tensor
    hits_left: torch.Tensor
    missile_eta: torch.Tensor
    missile_target: torch.Tensor
    missile_hits: torch.Tensor
    burst_pending: torch.Tensor
    unit_kind: torch.Tensor
    fov_dir: torch.Tensor
    enemy_tag: torch.Tensor
    max_reward: torch.Tensor

    @classmethod
    def empty(cls, num_envs: int, n_units: int, n_agents: int, device: torch.device) -> WorldState:
        """Allocate a zeroed state (everything dead, no orders)."""
        B, U = num_envs, n_units
        f = dict(dtype=torch.float32, device=device)
        i = dict(dtype=torch.int64, device=device)
        return cls(
            pos=torch.zeros(B, U, 2, **f),
            health=torch.zeros(B, U, **f),
            shield=torch.zeros(B, U, **f),
            energy=torch.zeros(B, U, **f),
            cooldown=torch.zeros(B, U, **f),
            alive=torch.zeros(B, U, dtype=torch.bool, device=device),
            order_kind=torch.zeros(B, U, **i),
            order_target=torch.full((B, U), -1, **i),
            order_point=torch.zeros(B, U, 2, **f),
            loops_since_damage=torch.zeros(B, U, **f),
            last_attacker=torch.full((B, U), -1, **i),
            prev_health=torch.zeros(B, U, **f),
            prev_shield=torch.zeros(B, U, **f),
            prev_alive=torch.zeros(B, U, dtype=torch.bool, device=device),
            last_action=torch.full((B, n_agents), -1, **i),
            episode_steps=torch.zeros(B, **i),
            attack_point=torch.zeros(B, 2, **f),
            env_seed=torch.zeros(B, **i),
            episode_count=torch.zeros(B, **i),
            jitter_state=torch.zeros(B, U, **i),
            windup=torch.zeros(B, U, **f),
            windup_target=torch.full((B, U), -1, **i),
            hits_left=torch.zeros(B, U, **f),
            missile_eta=torch.zeros(B, U, **f),
            missile_target=torch.full((B, U), -1, **i),
            missile_hits=torch.zeros(B, U, **f),
            burst_pending=torch.zeros(B, U, dtype=torch.bool, device=device),
            unit_kind=torch.zeros(B, U, **i),
            fov_dir=torch.zeros(B, n_agents, 2, **f),
            enemy_tag=torch.full((B, U - n_agents), -1, **i),
            max_reward=torch.zeros(B, **f),
        )

    def clear_attacks(self, env_index: int) -> None:
        """Cancel every pending attack, missile and baneling burst of env ``env_index``."""
        b = env_index
        self.windup[b] = 0.0
        self.windup_target[b] = -1
        self.hits_left[b] = 0.0
        self.missile_eta[b] = 0.0
        self.missile_target[b] = -1
        self.missile_hits[b] = 0.0
        self.burst_pending[b] = False

    def copy_envs_from(self, other: WorldState, mask: torch.Tensor) -> None:
        """In place: for envs where ``mask`` ([B] bool) is set, take every field from ``other``."""
        for f in fields(self):
            dst, src = getattr(self, f.name), getattr(other, f.name)
            m = mask.view(-1, *([1] * (dst.dim() - 1)))
            dst.copy_(torch.where(m, src, dst))

    def select(self, idx: torch.Tensor) -> WorldState:
        """The sub-batch of envs ``idx`` ([k] int64), as a new state (copies)."""
        return WorldState(**{f.name: getattr(self, f.name)[idx] for f in fields(self)})

    def clone(self) -> WorldState:
        return WorldState(**{f.name: getattr(self, f.name).clone() for f in fields(self)})


WORLD_STATE_FIELDS = tuple(f.name for f in fields(WorldState))
"""The names of ``WorldState``'s fields, in declaration order (a snapshot's ``world`` keys)."""


@dataclass
class UnitTable:
    """Per-unit constants of a map roster, each ``[U]`` (or ``[U, U]``) on the sim device.

    Built from ``units.UNITS`` with the map's overrides. Enemies are the stock units of the data the
    SMAC maps load (Core + Liberty) and allies the maps' ``_RL`` copies, whose stats are the same
    (they differ only in acquire behaviour, ``units.RL_DIFFERENCES``; checked per map by
    ``tests/test_game_data.py``). ``damage_vs[a, t]`` is the damage per hit
    of unit ``a`` against unit ``t`` before armour (base + attribute bonus); ``can_target[a, t]``
    says whether ``a``'s weapon can hit ``t`` (ground/air planes, enemies only).
    """

    names: list[str]
    is_ally: torch.Tensor  # [U] bool
    max_health: torch.Tensor  # [U]
    max_shield: torch.Tensor  # [U]
    armor: torch.Tensor  # [U]
    attacks: torch.Tensor  # [U] float (hits per attack)
    damage_vs: torch.Tensor  # [U, U]
    can_target: torch.Tensor  # [U, U] bool
    weapon_cooldown: torch.Tensor  # [U] game loops
    weapon_range: torch.Tensor  # [U] edge to edge
    speed: torch.Tensor  # [U] distance per game loop
    radius: torch.Tensor  # [U]
    is_air: torch.Tensor  # [U] bool
    collides: torch.Tensor  # [U] bool (ground units that are pushed apart)
    is_armed: torch.Tensor  # [U] bool
    is_static: torch.Tensor  # [U] bool
    is_biological: torch.Tensor  # [U] bool
    life_regen: torch.Tensor  # [U] HP per loop
    energy_start: torch.Tensor  # [U]
    energy_max: torch.Tensor  # [U]
    energy_regen: torch.Tensor  # [U] per loop
    heal_rate: torch.Tensor  # [U] HP per loop
    heal_energy_cost: torch.Tensor  # [U] energy per HP
    heal_range: torch.Tensor  # [U] edge to edge
    is_healer: torch.Tensor  # [U] bool
    splash: torch.Tensor  # [U] int64 SPLASH_*
    splash_radius: torch.Tensor  # [U]
    damage_point: torch.Tensor  # [U] game loops from attack start to hit / launch (sim.weapons)
    missile_speed: torch.Tensor  # [U] distance per game loop, 0 = direct damage
    hit_interval: torch.Tensor  # [U] game loops between the hits of one attack, 0 = together
    smac_max_cooldown: torch.Tensor  # [U] SMAC's state normaliser
    attack_target_priority: torch.Tensor  # [U] AttackTargetPriority (game data); higher is attacked first
    acceleration: torch.Tensor  # [U] Acceleration, distance per normal second squared (game data)
    type_bit: torch.Tensor  # [U] int64, index into the side's one-hot (SMAC's get_unit_type_id), -1 if utb=0
    spawn_pos: torch.Tensor  # [U, 2] default spawn positions (clump around the group point)
    kinds: UnitTable | None = None  # SMACv2 scenarios: the per-kind table (see build_scenario)
    unit_kind: torch.Tensor | None = None  # SMACv2 scenarios: [B, U] int64 kind index of every unit

    @classmethod
    def build_scenario(cls, spec, num_envs: int, device: torch.device) -> UnitTable:
        """A per-env table for a SMACv2 scenario (``sc2_envs.smacv2.ScenarioSpec``).

        Every per-unit field is ``[B, U]`` (``damage_vs`` / ``can_target`` ``[B, U, U]``) and is
        filled from the unit kinds by :meth:`assign_kinds_`, in place (the tensors keep their
        identity, so code holding them sees the new rosters). ``kinds`` is the table of the race's
        unit types (kind ``k`` = ``spec.kinds[k]``; ally rows ``0..T-1``, enemy rows ``T..2T-1``),
        ``names`` the slot labels ``ally_i`` / ``enemy_j``. Until the first assignment every unit is
        of kind 0.
        """
        from sc2_envs.maps import MapSpec, SpawnGroup

        kinds = list(spec.kinds)
        kspec = MapSpec(
            name=f"{spec.name}/kinds",
            allies=tuple(SpawnGroup(k, 1, 8.0, 16.0) for k in kinds),
            enemies=tuple(SpawnGroup(k, 1, 24.0, 16.0) for k in kinds),
            episode_limit=spec.episode_limit,
            a_race=spec.a_race,
            b_race=spec.b_race,
            unit_type_bits=len(kinds),
            map_type=spec.map_type,
            ally_type_order=tuple(kinds),
            enemy_type_order=tuple(kinds),
            attack_point=(8.0, 16.0),
            terrain="full",
        )
        kt = cls.build(kspec, device)
        B, N, E = int(num_envs), spec.n_units, spec.n_enemies
        U = N + E
        out = {}
        for f in fields(cls):
            v = getattr(kt, f.name)
            if f.name in ("kinds", "unit_kind"):
                continue
            if f.name == "names":
                out[f.name] = [f"ally_{i}" for i in range(N)] + [f"enemy_{j}" for j in range(E)]
            elif f.name == "is_ally":
                out[f.name] = torch.tensor([u < N for u in range(U)], device=device)
            elif f.name == "spawn_pos":
                out[f.name] = torch.zeros(U, 2, device=device)
            elif f.name in ("damage_vs", "can_target"):
                out[f.name] = torch.zeros(B, U, U, dtype=v.dtype, device=device)
            else:
                out[f.name] = torch.zeros(B, U, dtype=v.dtype, device=device)
        table = cls(**out, kinds=kt, unit_kind=torch.zeros(B, U, dtype=torch.int64, device=device))
        table.assign_kinds_(table.unit_kind.clone())
        return table

    def assign_kinds_(self, kind: torch.Tensor, envs: torch.Tensor | None = None) -> None:
        """Set the unit kinds of a scenario table in place (``kind [B, U]`` int64; ``envs [B]`` bool
        restricts the change to those envs)."""
        kt = self.kinds
        if kt is None:
            raise RuntimeError("assign_kinds_ needs a table built by UnitTable.build_scenario")
        T = len(kt.names) // 2
        if envs is not None:
            kind = torch.where(envs[:, None], kind, self.unit_kind)
        self.unit_kind.copy_(kind)
        ally = self.is_ally.unsqueeze(0)
        row = torch.where(ally, kind, kind + T)  # the kinds table's row of each unit
        for f in fields(self):
            if f.name in ("names", "is_ally", "spawn_pos", "kinds", "unit_kind"):
                continue
            dst, src = getattr(self, f.name), getattr(kt, f.name)
            if f.name in ("damage_vs", "can_target"):
                dst.copy_(src[row.unsqueeze(-1), row.unsqueeze(-2)])
            elif f.name == "type_bit":
                dst.copy_(kind)
            else:
                dst.copy_(src[row])

    @classmethod
    def build(cls, spec: MapSpec, device: torch.device) -> UnitTable:
        """Build the constant tables for ``spec`` on ``device``."""
        names = spec.ally_units() + spec.enemy_units()
        n_agents = spec.n_agents
        U = len(names)

        def col(stat, dtype=torch.float32):
            return torch.tensor([spec.unit_stat(n, stat) for n in names], dtype=dtype, device=device)

        is_ally = torch.tensor([k < n_agents for k in range(U)], device=device)
        attrs = [set(UNITS[n].attributes) for n in names]
        dmg = np.zeros((U, U), dtype=np.float32)
        can = np.zeros((U, U), dtype=bool)
        for a, na in enumerate(names):
            ua = UNITS[na]
            for t, nt in enumerate(names):
                if (a < n_agents) == (t < n_agents) or not ua.is_armed:
                    continue
                bonus = ua.bonus_damage if ua.bonus_attribute in attrs[t] else 0.0
                dmg[a, t] = ua.damage + bonus
                can[a, t] = (not UNITS[nt].is_air) or ua.hits_air
                if nt == "colossus":  # Colossus_RL is in the ground and the air planes
                    can[a, t] = True
        type_bit = []
        for k, n in enumerate(names):
            order = spec.ally_type_order if k < n_agents else spec.enemy_type_order
            type_bit.append(order.index(n) if spec.unit_type_bits > 0 else -1)
        spawn = np.concatenate([_clump(spec.allies, spec), _clump(spec.enemies, spec)])
        return cls(
            names=names,
            is_ally=is_ally,
            max_health=col("health"),
            max_shield=col("shield"),
            armor=col("armor"),
            attacks=col("attacks"),
            damage_vs=torch.tensor(dmg, device=device),
            can_target=torch.tensor(can, device=device),
            weapon_cooldown=col("cooldown"),
            weapon_range=col("range"),
            speed=col("speed") / LOOPS_PER_SECOND,
            radius=col("radius"),
            is_air=col("is_air", torch.bool),
            collides=~col("no_collision", torch.bool) & ~col("is_air", torch.bool),
            is_armed=torch.tensor([UNITS[n].is_armed for n in names], device=device),
            is_static=col("static", torch.bool),
            is_biological=torch.tensor(["biological" in a for a in attrs], device=device),
            life_regen=col("life_regen"),
            energy_start=col("energy_start"),
            energy_max=col("energy_max"),
            energy_regen=col("energy_regen"),
            heal_rate=col("heal_rate"),
            heal_energy_cost=col("heal_energy_cost"),
            heal_range=col("heal_range"),
            is_healer=torch.tensor([UNITS[n].is_healer for n in names], device=device),
            splash=torch.tensor(
                [{"none": 0, "line": 1, "suicide": 2}[UNITS[n].splash] for n in names], dtype=torch.int64, device=device
            ),
            splash_radius=col("splash_radius"),
            damage_point=torch.tensor([get_timing(n).damage_point_loops for n in names], device=device),
            missile_speed=torch.tensor([get_timing(n).missile_speed_per_loop for n in names], device=device),
            hit_interval=torch.tensor([get_timing(n).hit_interval_loops for n in names], device=device),
            smac_max_cooldown=col("smac_max_cooldown"),
            attack_target_priority=col("attack_target_priority"),
            acceleration=col("acceleration"),
            type_bit=torch.tensor(type_bit, dtype=torch.int64, device=device),
            spawn_pos=torch.tensor(spawn, dtype=torch.float32, device=device),
        )


def _clump(groups, spec: MapSpec) -> np.ndarray:
    """Non-overlapping spawn positions around each group point, shape ``[n, 2]``.

    SC2 places units created at one point in a tight clump chosen by the engine (not stored in the
    map). We fill a hexagonal lattice (spacing = the largest diameter at that point + 0.05) in
    order of distance from the point, skipping unwalkable cells and other plateaus; units of all
    groups that share a point share the lattice. Deterministic, so SMAC v1 start positions are fixed, as in SC2.
    """
    terrain = terrain_grids(spec.terrain)
    grid, level = terrain.pathing, terrain.cliff_level.astype(np.int64)
    out = []
    by_point: dict[tuple[float, float], list[int]] = {}
    names = [g.unit for g in groups for _ in range(g.count)]
    points = [(g.x, g.y) for g in groups for _ in range(g.count)]
    for k, p in enumerate(points):
        by_point.setdefault(p, []).append(k)
    pos = np.zeros((len(names), 2), dtype=np.float64)
    for (px, py), idx in by_point.items():
        spacing = 2 * max(UNITS[names[k]].radius for k in idx) + 0.05
        cands = []
        r = int(np.ceil(np.sqrt(len(idx)))) + 3
        for i in range(-r, r + 1):
            for j in range(-r, r + 1):
                cx = px + spacing * (i + 0.5 * (j % 2))
                cy = py + spacing * j * np.sqrt(3) / 2
                xi, yi = int(np.floor(cx)), int(np.floor(cy))
                if (
                    0 <= xi < grid.shape[0]
                    and 0 <= yi < grid.shape[1]
                    and grid[xi, yi]
                    and (abs(level[xi, yi] - level[int(px), int(py)]) < CLIFF_STEP // 2)
                ):  # the point's plateau
                    cands.append((np.hypot(cx - px, cy - py), cy, cx))
        cands.sort()
        for k, (_, cy, cx) in zip(idx, cands, strict=False):
            pos[k] = (cx, cy)
    out.append(pos)
    return np.concatenate(out)
