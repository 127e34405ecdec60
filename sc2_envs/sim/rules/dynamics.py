"""Game-loop dynamics: movement, collisions, terrain, weapons, damage, healing, regeneration.

Each function maps the batched ``WorldState`` to its next value in place, vectorised over
``[B envs, U units]`` (and ``[B, U, U]`` for pairwise terms). ``advance`` runs one *tick* of
``L`` game loops (``L = 1`` is exact loop-by-loop simulation); weapon cooldowns are kept at
game-loop resolution for any ``L``: a weapon that becomes ready inside a tick fires in that tick
and its next cooldown is counted from the loop it fired in.

Rules and their sources (SC2 game data and engine behaviour, see ``units.py`` and ``docs/game_data.md``):
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
      unit whose edge is within 2.2 of its centre, then dies. No friendly fire. A baneling killed
      by anything else bursts the same way in the loop it dies (VolatileBurst through the hidden
      BanelingExplode behaviour's DeathResponse, SC2 game data ``BehaviorData.xml``).
    * Attacks have a damage point (wind-up) and, for the stalker, hydralisk, marauder and spine
      crawler, a missile that deals the damage on arrival; the zealot's two hits land 0.28 s apart
      (``sim.weapons``). An attack whose attacker dies, gets another order or loses its target
      during the wind-up deals nothing; a missile whose target died meanwhile is wasted.
    * Within a loop, damage and deaths come first; only then do live medivacs heal live units and
      live units regenerate: a unit at HP <= 0 never acts, heals, regenerates or comes back.
    * Terrain: ground units stand only on pathable cells and change cliff level only on ramps;
      the colossus also crosses cliff faces; air units ignore terrain (grids from SMAC's map
      archives, see ``maps.terrain_grids``).
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

BEAM_HALF_LENGTH = 1.4
BEAM_HALF_WIDTH = 0.15
EPS = 1e-6


def sqrt32(x: torch.Tensor) -> torch.Tensor:
    """Correctly rounded float32 square root: ``sqrt`` in float64, rounded once to float32.

    ``torch.sqrt`` on float32 CPU tensors is not always correctly rounded (its AVX-512 kernel is
    off by one ulp for about 0.7 % of inputs, measured with torch 2.13), while the float64 root
    rounded to float32 is the correctly rounded float32 root on every device, as IEEE ``sqrtss``
    in the compiled kernels (``sim.numba``) is.
    """
    return torch.sqrt(x.double()).float()


def norm2(v: torch.Tensor) -> torch.Tensor:
    """Euclidean length of ``v [..., 2]`` as ``sqrt(x*x + y*y)``, each operation rounded in float32.

    Used instead of ``Tensor.norm``, whose reduction may fuse or reorder the multiply-adds by CPU
    or GPU kernel, so that every execution path (this torch code, ``sim.numba``) rounds alike.
    """
    sq = v * v
    return sqrt32(sq[..., 0] + sq[..., 1])


def tree_sum(x: torch.Tensor) -> torch.Tensor:
    """Sum over the last dim in a fixed pairwise order (bit-identical on every device and kernel).

    The last dim is zero-padded to a power of two ``P`` and halved ``log2(P)`` times
    (``x[..., :h] + x[..., h:]``). ``Tensor.sum``'s order depends on the CPU's vector width and on
    the device, so a float sum of more than two non-zero terms could differ between paths.
    """
    n = x.shape[-1]
    p = 1
    while p < n:
        p *= 2
    if p != n:
        x = torch.nn.functional.pad(x, (0, p - n))
    while p > 1:
        p //= 2
        x = x[..., :p] + x[..., p:]
    return x[..., 0]


CLIFF_WALKERS = frozenset({"colossus"})
"""Ground units whose mover climbs cliffs (SC2 game data: the colossus walks up and down cliffs;
Liquipedia "Colossus": "can traverse cliffs"). Other ground units change cliff level only on ramps."""
RAMP_MAX_STEP = 32
"""Largest cliff-level change a non-cliff-walking ground unit makes between two cells: ramp cells
step by 8-24 (``t3SyncCliffLevel`` on 2c_vs_64zg: 64, 72, 88, 104, 128), plateaus by 64."""


class Dynamics:
    """The per-tick update for one map roster.

    Args:
        table: the roster's constant tables.
        pathing: ``[32, 32]`` bool walkable grid indexed ``[x, y]``, on the sim device.
        loops_per_tick: game loops simulated per tick (1 = exact); must divide 8.
        cliff_level: ``[32, 32]`` int cliff level (``TerrainGrids.cliff_level``); ``None`` = one level.
        cliff_walkable: ``[32, 32]`` bool cells cliff walkers may stand on
            (``TerrainGrids.cliff_walkable``); ``None`` = ``pathing``.
        ground_dist: ``[32*32, 32*32]`` float32 shortest ground-path lengths between cells
            (``maps.ground_distances``), or ``None`` to walk in straight lines. With it, ground
            units that are not cliff walkers walk round cliffs and through necks: when the path to
            their goal is longer than the straight line, they head for the neighbouring cell on a
            shortest path (SC2 units path-find; its exact planner is not public).
        ground_edges: ``[8, 32, 32]`` bool allowed steps (``maps.ground_edges``), with ``ground_dist``.

    Raises:
        ValueError: for a ``loops_per_tick`` that does not divide 8 or grids of another shape.
    """

    def __init__(
        self,
        table: UnitTable,
        pathing: torch.Tensor,
        loops_per_tick: int = 1,
        cliff_level: torch.Tensor | None = None,
        cliff_walkable: torch.Tensor | None = None,
        ground_dist: torch.Tensor | None = None,
        ground_edges: torch.Tensor | None = None,
    ):
        if loops_per_tick not in (1, 2, 4, 8):
            raise ValueError(
                f"loops_per_tick must be one of 1, 2, 4, 8 (divides the 8 loops of a step), got {loops_per_tick!r}"
            )
        for name, g in (("cliff_level", cliff_level), ("cliff_walkable", cliff_walkable)):
            if g is not None and g.shape != pathing.shape:
                raise ValueError(f"{name} has shape {tuple(g.shape)}, expected the pathing grid's {tuple(pathing.shape)}")
        self.t = table
        self.L = loops_per_tick
        self.pathing = pathing
        self._flat_pathing = pathing.flatten()
        self.map_w, self.map_h = pathing.shape
        # positions stay 1e-3 inside the map's far edges (x < map_w, y < map_h)
        self._pos_hi = torch.tensor([self.map_w - 1e-3, self.map_h - 1e-3], dtype=torch.float32, device=pathing.device)
        level = torch.zeros_like(pathing, dtype=torch.int32) if cliff_level is None else cliff_level.to(torch.int32)
        self._flat_level = level.to(pathing.device).flatten()
        walk_levels = level.to(pathing.device)[pathing.bool()]
        self._has_levels = bool(walk_levels.numel() > 0 and (walk_levels != walk_levels[0]).any())  # ramps, plateaus
        cw = pathing if cliff_walkable is None else cliff_walkable.to(device=pathing.device, dtype=torch.bool)
        self._flat_cliff_walkable = cw.flatten()
        # per-kind flags of SMACv2 scenario tables (table.kinds: ally rows then enemy rows)
        flags = table.kinds if table.kinds is not None else table
        if table.kinds is not None:
            self._kind_cliff = torch.tensor([n in CLIFF_WALKERS for n in flags.names], dtype=torch.bool, device=pathing.device)
            self._any_cliff_walker = bool(self._kind_cliff.any())
        else:
            self.cliff_walker = torch.tensor(
                [n in CLIFF_WALKERS for n in table.names], dtype=torch.bool, device=pathing.device
            )
            self._any_cliff_walker = bool(self.cliff_walker.any())
        self._route = ground_dist is not None
        if self._route:
            cells = self.map_w * self.map_h
            if ground_dist.shape != (cells, cells) or ground_edges is None or ground_edges.shape != (8, *pathing.shape):
                raise ValueError(
                    f"ground_dist must be [{cells}, {cells}] with ground_edges [8, {self.map_w}, {self.map_h}], "
                    f"got {tuple(ground_dist.shape)} and "
                    f"{None if ground_edges is None else tuple(ground_edges.shape)}"
                )
            dev = pathing.device
            self._dist = ground_dist.to(device=dev, dtype=torch.float32).flatten()
            self._edge_ok = ground_edges.to(dev).reshape(8, cells).T.contiguous()  # [cells, 8]
            nb = torch.tensor([(1, 0), (-1, 0), (0, 1), (0, -1), (1, 1), (1, -1), (-1, 1), (-1, -1)], device=dev)
            self._nb_flat = nb[:, 0] * self.map_h + nb[:, 1]  # [8]
            self._nb_len = nb.float().norm(dim=-1)  # [8]
            self._router_dev = dev
        self.has_line = bool((flags.splash == SPLASH_LINE).any())
        self.has_suicide = bool((flags.splash == SPLASH_SUICIDE).any())
        self.has_healer = bool(flags.is_healer.any())
        self.has_missile = bool((flags.missile_speed > 0).any())
        self.has_regen = bool((flags.life_regen > 0).any())
        self.has_shield = bool((flags.max_shield > 0).any())
        self.side = table.is_ally.long()
        self.enemy_pair = table.is_ally[:, None] != table.is_ally[None, :]
        self._unit_idx = torch.arange(len(table.names), device=pathing.device)
        self._dense = pathing.device.type != "cpu"
        self.refresh()

    def refresh(self) -> None:
        """Recompute the tensors derived from the unit table (after a SMACv2 table changed its
        kinds with ``UnitTable.assign_kinds_``). Per-unit tables give ``[U]`` / ``[U, U]``
        tensors, per-env tables ``[B, U]`` / ``[B, U, U]``; the code below broadcasts over both."""
        table = self.t
        if table.kinds is not None:
            T = len(table.kinds.names) // 2
            row = torch.where(table.is_ally, table.unit_kind, table.unit_kind + T)
            self._set("cliff_walker", self._kind_cliff[row])
        if self._route:
            self._set("_router", table.collides & ~self.cliff_walker & ~table.is_air)
        self._set("is_missile", table.missile_speed > 0)
        self._set("spaced", table.hit_interval > 0)  # attacks whose hits land apart (zealot)
        # pairs that push each other apart: both ground units that collide, not the same unit
        c = table.collides
        U = c.shape[-1]
        self._set("collide_pair", (c.unsqueeze(-1) & c.unsqueeze(-2)) & ~torch.eye(U, dtype=torch.bool, device=c.device))
        self._set("_radius_sum", table.radius.unsqueeze(-1) + table.radius.unsqueeze(-2))
        self._set("ground", ~table.is_air)

    def _set(self, name: str, value: torch.Tensor) -> None:
        """Set a derived tensor, in place when it exists with that shape (it keeps its identity)."""
        old = getattr(self, name, None)
        if isinstance(old, torch.Tensor) and old.shape == value.shape and old.dtype == value.dtype:
            old.copy_(value)
        else:
            setattr(self, name, value)

    # ------------------------------------------------------------------ helpers
    @staticmethod
    def _gather(x: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
        """``x[b, idx[b, u]]`` for ``x`` of shape ``[B, U]`` or ``[B, U, 2]``."""
        if x.dim() == 3:
            return torch.gather(x, 1, idx.unsqueeze(-1).expand(-1, -1, x.shape[-1]))
        return torch.gather(x, 1, idx)

    @staticmethod
    def _per_unit(x: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
        """A per-unit constant of unit ``idx[b, u]``: ``x[idx]`` for ``[U]`` tables, a gather for ``[B, U]``."""
        return x[idx] if x.dim() == 1 else torch.gather(x, 1, idx)

    def _cell(self, p: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Flat cell index of points ``p [..., 2]`` (clamped) and whether they lie on the map."""
        cell = torch.floor(p).long()
        inside = (cell >= 0).all(-1) & (cell[..., 0] < self.map_w) & (cell[..., 1] < self.map_h)
        flat = cell[..., 0].clamp(0, self.map_w - 1) * self.map_h + cell[..., 1].clamp(0, self.map_h - 1)
        return flat, inside

    def can_stand(self, p: torch.Tensor, frm: torch.Tensor) -> torch.Tensor:
        """Whether each unit may move from ``frm`` to ``p`` (both ``[..., B, U, 2]``), ``[..., B, U]`` bool.

        Air units: anywhere on the map. Cliff walkers (the colossus): cells of ``cliff_walkable``.
        Other ground units: walkable cells whose cliff level differs from the level at ``frm`` by
        less than ``RAMP_MAX_STEP``, so they change plateau only along a ramp.
        """
        flat, inside = self._cell(p)
        ground = self._flat_pathing[flat]
        if self._has_levels:
            src, _ = self._cell(frm)
            ground = ground & ((self._flat_level[flat] - self._flat_level[src]).abs() < RAMP_MAX_STEP)
        if self._any_cliff_walker:
            ground = torch.where(self.cliff_walker, self._flat_cliff_walkable[flat], ground)
        return inside & (ground | self.t.is_air)

    # ------------------------------------------------------------------ tick
    def advance(self, st: WorldState) -> None:
        """Simulate one tick of ``L`` game loops in place.

        Order within a tick (all units of one stage act simultaneously; SC2 updates units in a
        random order within a loop, pysc2 ``docs/environment.md``):

            1. attacks: units whose weapon is ready and whose target is in range start an attack;
               pending hits whose damage point has passed land (direct weapons) or launch their
               missile; missiles that arrive deal their damage; all of it is applied together;
               then banelings killed by it burst (a baneling killed by a burst bursts in the
               next tick);
            2. deaths: every unit at HP <= 0 dies now; it never acts, heals, regenerates, is
               targeted or comes back after this point (its pending attack is cancelled);
            3. heals (only live medivacs on live targets), then movement, then shield / life /
               energy regeneration of live units.

        Args:
            st: the world state (modified in place).
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
        gap = norm2(tgt_pos - st.pos) - t.radius - self._per_unit(t.radius, tgt) - reach  # > 0: out of range by this much
        in_range = engage & (gap <= EPS)

        burst = self._fire(st, engage & ~healing, in_range, tgt, tgt_pos, alive)
        self._resolve_deaths(st, alive, burst)
        if self.has_healer:
            self._heal(st, healing & in_range & st.alive, tgt, self.L)
        busy = st.hits_left > 0  # in the middle of an attack: stands still
        self._move(st, engage & ~in_range & ~busy, engage, tgt_pos, gap)
        self._regenerate(st)

    def _resolve_deaths(self, st: WorldState, alive: torch.Tensor, burst: torch.Tensor) -> None:
        """Units at HP <= 0 die (before any heal or regeneration of this loop); banelings killed by a
        burst and not yet burst themselves (not in ``burst``) burst in the next tick.

        A baneling killed by anything but its own attack bursts (see ``_fire``): the hidden
        ``BanelingExplode`` behaviour's DeathResponse runs the ``VolatileBurst`` effect on every
        death type except Remove (SC2Mapster/SC2GameData ``mods/liberty.sc2mod/base.sc2data/
        GameData/BehaviorData.xml``; the baneling's own attack removes that behaviour first, so it
        bursts once).
        """
        died = alive & (st.health <= 0)
        st.alive = alive & (st.health > 0)
        st.health = st.health * st.alive
        st.shield = st.shield * st.alive
        st.hits_left = st.hits_left * st.alive  # a dead unit never finishes its attack
        if self.has_suicide:
            st.burst_pending = died & (self.t.splash == SPLASH_SUICIDE) & ~burst

    def _fire(self, st: WorldState, attacking: torch.Tensor, in_range: torch.Tensor, tgt, tgt_pos, alive) -> torch.Tensor:
        """Start, land and deliver attacks for one tick; apply their damage. Returns ``[B, U]`` bool:
        the banelings that burst in this tick (by their own attack, or killed by this tick's damage).

        Attack timeline (``sim.weapons``, from SC2 game data): a weapon ready within this tick at
        loop ``ready_at`` (1..L) with its target in range starts an attack and its next cooldown
        (period + jitter) counts from that loop; ``ceil(damage_point)`` loops later the first hit
        lands, or launches a missile; further hits of the attack (zealot) follow ``hit_interval``
        loops apart. The attack is cancelled, dealing nothing, if its attacker dies, gets another
        order or its target dies first. A missile flies the centre distance at launch at its
        speed and deals its hits on arrival if the target is still alive (a missile in flight
        lands even if its shooter has died).
        """
        t, L = self.t, self.L
        idx = self._unit_idx
        # 1. start attacks (the weapon period runs from the start of the attack)
        ready_at = torch.ceil(st.cooldown).clamp(min=1)
        start = attacking & in_range & t.is_armed & (ready_at <= L) & (st.hits_left <= 0)
        nxt = rng.lcg_next(st.jitter_state)
        jitter = (rng.lcg_top2(nxt) - 1).to(torch.float32)  # -1..+2 loops
        st.jitter_state = torch.where(start, nxt, st.jitter_state)
        # the fraction of a loop by which the timer overshot 0 carries into the next period
        carry = torch.where(st.cooldown > 0, ready_at - st.cooldown, torch.zeros_like(st.cooldown))
        st.cooldown = torch.where(start, t.weapon_cooldown + jitter - carry - (L - ready_at), (st.cooldown - L).clamp(min=0))
        st.windup = torch.where(start, t.damage_point - (L - ready_at), st.windup - L)  # (only read while hits_left > 0)
        st.hits_left = torch.where(start, t.attacks, st.hits_left)
        st.windup_target = torch.where(start, tgt, st.windup_target)
        # 2. cancel attacks whose attacker is dead, re-ordered, or whose target is dead
        # (``attacking``: alive, with a live target and an attack order; the pending attack's target
        # must be the ordered one, so below ``tgt``/``tgt_pos`` are the pending attack's target)
        keep = attacking & (st.order_target == st.windup_target)
        wt = tgt
        st.hits_left = torch.where(keep, st.hits_left, 0.0)
        # 3. hits whose damage point (or spacing) has passed land now
        land = (st.hits_left > 0) & (st.windup <= EPS)
        n_now = torch.where(land, torch.where(self.spaced, 1.0, st.hits_left), 0.0)
        st.hits_left = st.hits_left - n_now
        st.windup = torch.where(land, st.windup + t.hit_interval, st.windup)
        # 4. missiles: earlier ones arrive, then the landed hits of missile weapons launch new ones
        is_missile = self.is_missile
        mt = st.missile_target.clamp(min=0)
        impact_hits = torch.zeros_like(st.health)
        if self.has_missile:
            flying = st.missile_hits > 0
            st.missile_eta = st.missile_eta - L  # (only read while missile_hits > 0)
            arrive = flying & (st.missile_eta <= EPS)
            impact_hits = torch.where(arrive & self._gather(alive, mt), st.missile_hits, 0.0)  # a dead target: wasted
            st.missile_hits = torch.where(arrive, torch.zeros_like(st.missile_hits), st.missile_hits)
            launch = land & is_missile
            dist = norm2(tgt_pos - st.pos)
            st.missile_eta = torch.where(launch, dist / t.missile_speed.clamp(min=EPS), st.missile_eta)
            st.missile_target = torch.where(launch, wt, st.missile_target)
            st.missile_hits = torch.where(launch, n_now, st.missile_hits)
        direct = land & ~is_missile
        dmg_tgt = torch.where(is_missile, mt, wt)
        per_attack = torch.where(is_missile, impact_hits, n_now)  # hits each attacker deals to dmg_tgt
        # 5. damage
        boom = (t.splash == SPLASH_SUICIDE) & (direct | st.burst_pending) if self.has_suicide else None
        splash = self.has_line or self.has_suicide
        if self._dense or splash:
            # hits[b, a, v]: hits attacker a lands on unit v in this tick. Dense sums are
            # deterministic on every device (scatter_add uses float atomics on CUDA).
            hits = torch.nn.functional.one_hot(dmg_tgt, st.pos.shape[1]).to(torch.float32) * per_attack.unsqueeze(-1)
            if splash:
                hits = self._splash_hits(st, hits, direct, boom, tgt_pos, alive)
            raw, n_hits = (hits * t.damage_vs).sum(1), hits.sum(1)
        else:  # one target per attacker: scatter the hits, no [B, U, U] work
            if t.damage_vs.dim() == 3:
                dvs = torch.gather(t.damage_vs, 2, dmg_tgt.unsqueeze(-1)).squeeze(-1)
            else:
                dvs = t.damage_vs[idx, dmg_tgt]
            raw = torch.zeros_like(st.health).scatter_add(1, dmg_tgt, per_attack * dvs)
            n_hits = torch.zeros_like(st.health).scatter_add(1, dmg_tgt, per_attack)
        attacker = torch.where(per_attack > 0, idx, -1)
        last = torch.full_like(st.last_attacker, -1).scatter_reduce(1, dmg_tgt, attacker, "amax")
        self._apply_damage(st, raw, n_hits, last)
        if not self.has_suicide:
            return torch.zeros_like(alive)
        suicide = t.splash == SPLASH_SUICIDE
        exploded = direct & suicide
        st.health = torch.where(exploded, torch.zeros_like(st.health), st.health)  # exploded banelings die
        # banelings killed by this tick's damage burst at once (DeathResponse); the banelings those
        # bursts kill burst in the next tick (burst_pending), so a chain advances one loop per link
        killed = alive & suicide & ~exploded & (st.health <= 0)
        zero = torch.zeros_like(st.health).unsqueeze(-1).expand(-1, -1, st.health.shape[1])
        hits = self._splash_hits(st, zero, torch.zeros_like(killed), killed, st.pos, alive)
        self._apply_damage(st, (hits * t.damage_vs).sum(1), hits.sum(1), torch.full_like(st.last_attacker, -1))
        st.burst_pending = torch.zeros_like(st.burst_pending)
        return exploded | killed

    def _move(self, st: WorldState, chase: torch.Tensor, engage: torch.Tensor, tgt_pos, gap) -> None:
        """Walk toward the target until in range, or toward the order point; then collide and slide."""
        t, L, alive, kind = self.t, self.L, st.alive, st.order_kind
        goal = torch.where(engage.unsqueeze(-1), tgt_pos, st.order_point)
        to_goal = goal - st.pos
        goal_dist = norm2(to_goal)
        heading, heading_len = to_goal, goal_dist
        if self._route:
            heading = self._route_heading(st.pos, goal, to_goal)
            heading_len = norm2(heading)
        walk = alive & ~t.is_static & (chase | (~engage & ((kind == ORDER_MOVE) | (kind == ORDER_ATTACK_MOVE))))
        limit = torch.where(engage, gap + 2 * EPS, goal_dist)
        step = torch.minimum(t.speed * L, limit).clamp(min=0) * walk
        new_pos = st.pos + heading / heading_len.clamp(min=EPS).unsqueeze(-1) * step.unsqueeze(-1)
        arrived = (kind == ORDER_MOVE) & (goal_dist <= t.speed * L)
        st.order_kind = torch.where(arrived & alive, torch.full_like(kind, ORDER_NONE), kind)
        # collisions: push overlapping ground units apart, half the overlap each
        x, y = new_pos[..., 0], new_pos[..., 1]
        dx = x.unsqueeze(2) - x.unsqueeze(1)  # [B, U, U], from j to i (component-wise: cheaper than a norm over 2)
        dy = y.unsqueeze(2) - y.unsqueeze(1)
        dist = sqrt32(dx * dx + dy * dy)
        overlap = (self._radius_sum - dist).clamp(min=0)
        pair = self.collide_pair & alive.unsqueeze(1) & alive.unsqueeze(2)
        push_w = torch.where(pair, overlap * 0.5 / dist.clamp(min=1e-3), 0.0)
        movable = (~t.is_static & alive).float()
        push = tree_sum(torch.stack([dx * push_w, dy * push_w], -2)) * movable.unsqueeze(-1)
        new_pos = new_pos + push
        # terrain: ground units slide along unwalkable cells (keep the axis that stays walkable)
        slide_x = torch.stack([new_pos[..., 0], st.pos[..., 1]], -1)
        slide_y = torch.stack([st.pos[..., 0], new_pos[..., 1]], -1)
        ok, ok_x, ok_y = self.can_stand(torch.stack([new_pos, slide_x, slide_y]), st.pos)
        ok = ok | t.is_air
        new_pos = torch.where(
            ok.unsqueeze(-1),
            new_pos,
            torch.where(ok_x.unsqueeze(-1), slide_x, torch.where(ok_y.unsqueeze(-1), slide_y, st.pos)),
        )
        st.pos = torch.minimum(new_pos.clamp(min=0.0), self._pos_hi)

    def _route_heading(self, pos: torch.Tensor, goal: torch.Tensor, to_goal: torch.Tensor) -> torch.Tensor:
        """Direction to walk ``[B, U, 2]``: straight to the goal when the shortest ground path between
        their cells is as short as on open ground, else toward the centre of the neighbouring cell
        on a shortest path."""
        a, a_in = self._cell(pos)
        b, b_in = self._cell(goal)
        cells = self.map_w * self.map_h
        d_ab = self._dist[a * cells + b]
        cell_gap = (
            torch.div(a, self.map_h, rounding_mode="floor") - torch.div(b, self.map_h, rounding_mode="floor"),
            a % self.map_h - b % self.map_h,
        )
        gx, gy = cell_gap[0].abs().float(), cell_gap[1].abs().float()
        octile = torch.maximum(gx, gy) + (2**0.5 - 1) * torch.minimum(gx, gy)  # path length with no obstacle
        detour = torch.isfinite(d_ab) & (d_ab > octile + 1e-3) & a_in & b_in & self._router
        nb = (a.unsqueeze(-1) + self._nb_flat).clamp(0, cells - 1)  # [B, U, 8]
        cost = self._nb_len + self._dist[nb * cells + b.unsqueeze(-1)]
        cost = torch.where(self._edge_ok[a], cost, torch.full_like(cost, float("inf")))
        nxt = torch.gather(nb, -1, cost.argmin(-1, keepdim=True)).squeeze(-1)
        centre = torch.stack([torch.div(nxt, self.map_h, rounding_mode="floor"), nxt % self.map_h], -1).float() + 0.5
        return torch.where(detour.unsqueeze(-1), centre - pos, to_goal)

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

    def _splash_hits(self, st, hits, fire, boom, tgt_pos, alive) -> torch.Tensor:
        """Replace the rows of splash attackers in ``hits [B, U, U]`` by everything their splash touches.

        ``fire [B, U]``: colossi whose beam lands now, centred on ``tgt_pos [B, U, 2]``;
        ``boom [B, U]`` (or None): banelings that burst now, centred on their own position (their
        attack, or their death: VolatileBurst either way). Victims are live enemy ground units.
        """
        t = self.t
        victims = self.enemy_pair & self.ground.unsqueeze(-2) & alive.unsqueeze(1)  # [B, a, v]
        vpos = st.pos.unsqueeze(1)  # [B, 1, v, 2]
        rel = vpos - tgt_pos.unsqueeze(2)  # victim relative to a's target, [B, a, v, 2]
        if self.has_line:
            fwd = tgt_pos - st.pos
            fwd = fwd / norm2(fwd).clamp(min=EPS).unsqueeze(-1)
            along = (rel * fwd.unsqueeze(2)).sum(-1)  # distance along the line of fire
            perp = rel[..., 0] * -fwd[..., 1].unsqueeze(2) + rel[..., 1] * fwd[..., 0].unsqueeze(2)
            r_v = t.radius.unsqueeze(-2)
            in_beam = (along.abs() <= BEAM_HALF_WIDTH + r_v) & (perp.abs() <= BEAM_HALF_LENGTH + r_v)
            line = (t.splash == SPLASH_LINE).unsqueeze(-1) & fire.unsqueeze(-1)
            hits = torch.where(line, (in_beam & victims) * t.attacks.unsqueeze(-1), hits)
        if self.has_suicide:
            d_self = norm2(vpos - st.pos.unsqueeze(2)) - t.radius.unsqueeze(-2)
            in_blast = d_self <= t.splash_radius.unsqueeze(-1)
            hits = torch.where(boom.unsqueeze(-1), (in_blast & victims).float(), hits)
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
        k = torch.minimum(torch.ceil(rest / mean_hit.clamp(min=EPS) - 1e-4), n_hits)
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
        missing = (self._per_unit(t.max_health, tgt) - self._gather(st.health, tgt)).clamp(min=0)
        ok = heals & self._per_unit(t.is_biological, tgt) & self._gather(st.alive, tgt)  # never heals the dead
        amount = torch.minimum(torch.minimum(t.heal_rate * L, missing), st.energy / t.heal_energy_cost.clamp(min=EPS)) * ok
        st.energy = st.energy - amount * t.heal_energy_cost
        st.health = torch.minimum(st.health.scatter_add(1, tgt, amount), t.max_health)
