"""SMAC's per-unit rules on raw unit records (observation, state, actions, reward, episode end).

``SMACUnitRules`` re-implements, on ``agents`` / ``enemies`` dicts of raw unit records, the methods of
oxwhirl SMAC's ``StarCraft2Env`` (``smac/env/starcraft2/starcraft2.py`` at d6aab33) that read units:
``get_obs_agent``, ``get_state``, ``get_state_dict``, ``get_avail_agent_actions``,
``get_visibility_matrix``, ``reward_battle``, ``init_units``/``update_units`` (given a raw unit list
instead of a live game), ``get_agent_action`` and the small helpers (``can_move``,
``get_surrounding_*``, ``unit_max_shield``, ``get_unit_type_id``, ...). It is written from the
documented behaviour, quirks included:

* the enemy unit-type one-hot is ``unit_type - 73`` on stalkers-and-zealots maps (zealot 0,
  stalker 1: the reverse of the ally order);
* ``only_medivac_left(ally=False)`` is true only when exactly one enemy is alive and it is a
  Medivac (type 54);
* with ``obs_timestep_number`` the own block has a reserved, never-written slot and the timestep is
  appended after it, so the vector is one longer than SMAC's ``get_obs_size()`` says;
* with ``reward_only_positive`` the reward is ``abs(delta)``, so enemy shield regeneration pays.

Two users: ``sc2_envs.adapters.smac_compat.StarCraft2Env`` (the helper methods SMAC codebases call;
the fast tensor path computes the same numbers) and the StarCraft II API route's checks
(``sc2_envs.sc2api.client``), which rebuild SMAC's view from the protocol's raw units.

Why SMAC's features have a form here beside the simulator's (``sc2_envs.sim.rules.features``): this one
reads what a client of the game sees, the protocol's raw unit records (from a real StarCraft II or
the served simulator), one unit at a time, in SMAC's own order and Python float arithmetic. It has no
``WorldState`` and no ``UnitTable``: unit types are read from each record, and units appear and die as
the game reports them, so it also works against the real game, whose units need not match a map's
roster. Routing raw units through the tensor rules would need a ``WorldState`` and a ``UnitTable``
built from the records at every observation, and the result would no longer be SMAC's per-unit
computation that the protocol route is checked against. The two forms agree to 1e-6 at every step
(``tests/integrations/test_smac_parity.py``).

Host class contract (attributes the mixin reads): ``n_agents``, ``n_enemies``, ``n_actions``,
``n_actions_no_attack``, ``n_actions_move``, ``n_obs_pathing``, ``n_obs_height``, ``episode_limit``,
``map_type``, ``unit_type_bits``, ``shield_bits_ally``, ``shield_bits_enemy``, the ``obs_*``,
``state_*`` and ``reward_*`` options, ``map_x``, ``map_y``, ``max_distance_x``, ``max_distance_y``,
``pathing_grid`` (``[map_x, map_y]`` bool, ``[x, y]``), ``terrain_height`` (same shape, in [0, 1]),
``_move_amount``, ``agents``, ``enemies``, ``last_action`` (``(N, n_actions)``), ``_episode_steps``,
``_episode_count``, ``death_tracker_ally``/``_enemy``, ``previous_ally_units``/``_enemy_units``,
``max_reward`` and the type ids set by ``_init_ally_unit_types``.
"""

from __future__ import annotations

import math
from copy import deepcopy
from typing import Any

import numpy as np

__all__ = [
    "COLOSSUS",
    "MEDIVAC",
    "SHOOT_RANGE",
    "SIGHT_RANGE",
    "SMAC_ABILITY_IDS",
    "SMAC_FEATURE_DEFAULTS",
    "STALKER",
    "ZEALOT",
    "SMACUnitRules",
]

SMAC_ABILITY_IDS = {"move": 16, "attack": 23, "stop": 4, "heal": 386}
"""Raw ability ids SMAC sends (its ``actions`` dict): Move, Attack (unit), Stop, MedivacHeal."""

STALKER, ZEALOT, COLOSSUS, MEDIVAC = 74, 73, 4, 54
"""Stock type ids SMAC hard-codes (``unit_max_shield``, ``get_unit_type_id``, ``only_medivac_left``)."""

SHOOT_RANGE, SIGHT_RANGE = 6, 9
"""SMAC's fixed ranges (``unit_shoot_range`` / ``unit_sight_range``), world units, centre to centre."""

_NORTH, _SOUTH, _EAST, _WEST = 0, 1, 2, 3


SMAC_FEATURE_DEFAULTS: dict[str, Any] = {
    "obs_all_health": True,
    "obs_own_health": True,
    "obs_last_action": False,
    "obs_pathing_grid": False,
    "obs_terrain_height": False,
    "obs_instead_of_state": False,
    "obs_timestep_number": False,
    "state_last_action": True,
    "state_timestep_number": False,
    "reward_sparse": False,
    "reward_only_positive": True,
    "reward_death_value": 10,
    "reward_win": 200,
    "reward_defeat": 0,
    "reward_negative_scale": 0.5,
    "reward_scale": True,
    "reward_scale_rate": 20,
}
"""SMAC's observation / state / reward keywords and their defaults (``StarCraft2Env.__init__``), kept as
attributes of the same names: the ``obs_*``, ``state_*`` and ``reward_*`` options that ``SMACUnitRules`` and its
hosts (``adapters.smac_compat``, ``sc2api.client``) read."""


class SMACUnitRules:
    """Mixin: SMAC's unit-level rules (see the module docstring for the host contract)."""

    def get_stats(self) -> dict:
        """SMAC's statistics since construction: ``battles_won``, ``battles_game``, ``battles_draw``
        (= ``timeouts``), ``win_rate`` (0.0 before any battle, where SMAC divides by zero), ``timeouts``,
        ``restarts`` (``force_restarts``). The host keeps the four counters."""
        return {
            "battles_won": self.battles_won,
            "battles_game": self.battles_game,
            "battles_draw": self.timeouts,
            "win_rate": self.battles_won / self.battles_game if self.battles_game else 0.0,
            "timeouts": self.timeouts,
            "restarts": self.force_restarts,
        }

    # ------------------------------------------------------------------ small helpers
    @staticmethod
    def distance(x1, y1, x2, y2) -> float:
        """Euclidean distance between two points (world units)."""
        return math.hypot(x2 - x1, y2 - y1)

    def unit_shoot_range(self, agent_id) -> int:
        """SMAC's attack-availability range: 6 for every unit."""
        return SHOOT_RANGE

    def unit_sight_range(self, agent_id) -> int:
        """SMAC's observation range: 9 for every unit."""
        return SIGHT_RANGE

    def unit_max_cooldown(self, unit) -> int:
        """SMAC's normaliser of ``weapon_cooldown`` (game loops) in the state, by ally type id;
        200 (max energy) for the medivac, 15 for anything not listed."""
        table = {
            self.marine_id: 15,
            self.marauder_id: 25,
            self.medivac_id: 200,
            self.stalker_id: 35,
            self.zealot_id: 22,
            self.colossus_id: 24,
            self.hydralisk_id: 10,
            self.zergling_id: 11,
            self.baneling_id: 1,
        }
        return table.get(unit.unit_type, 15)

    def unit_max_shield(self, unit):
        """Maximum shield of a Protoss unit (stalker 80, zealot 50, colossus 150); ``None`` otherwise,
        as in SMAC (which then fails dividing by it)."""
        if unit.unit_type in (STALKER, self.stalker_id):
            return 80
        if unit.unit_type in (ZEALOT, self.zealot_id):
            return 50
        if unit.unit_type in (COLOSSUS, self.colossus_id):
            return 150
        return None

    def check_bounds(self, x, y) -> bool:
        """Whether the integer cell ``(x, y)`` is on the map."""
        return 0 <= x < self.map_x and 0 <= y < self.map_y

    def can_move(self, unit, direction) -> bool:
        """Whether the cell ``move_amount / 2`` ahead in ``direction`` (0 N, 1 S, 2 E, 3 W; SMAC's
        ``Direction`` enum values are accepted too) is on the map and pathable."""
        d = getattr(direction, "value", direction)
        if isinstance(d, str):
            d = {"north": _NORTH, "south": _SOUTH, "east": _EAST, "west": _WEST}[d.lower()]
        m = self._move_amount / 2
        x, y = unit.pos.x, unit.pos.y
        dx, dy = {_NORTH: (0, m), _SOUTH: (0, -m), _EAST: (m, 0)}.get(d, (-m, 0))
        cx, cy = int(x + dx), int(y + dy)
        return bool(self.check_bounds(cx, cy) and self.pathing_grid[cx, cy])

    def get_surrounding_points(self, unit, include_self: bool = False) -> list[tuple[int, int]]:
        """The 8 cells SMAC samples around a unit (N, S, E, W at ``2 * move_amount``, then the
        diagonals at ``move_amount``), plus the unit's own cell when ``include_self``."""
        x, y, ma = int(unit.pos.x), int(unit.pos.y), self._move_amount
        pts = [
            (x, y + 2 * ma),
            (x, y - 2 * ma),
            (x + 2 * ma, y),
            (x - 2 * ma, y),
            (x + ma, y + ma),
            (x - ma, y - ma),
            (x + ma, y - ma),
            (x - ma, y + ma),
        ]
        if include_self:
            pts.append((x, y))
        return pts

    def get_surrounding_pathing(self, unit) -> list:
        """Pathability of the 8 surrounding cells (1 off the map)."""
        return [
            self.pathing_grid[x, y] if self.check_bounds(x, y) else 1
            for x, y in self.get_surrounding_points(unit, include_self=False)
        ]

    def get_surrounding_height(self, unit) -> list:
        """Terrain height (in [0, 1]) of the 8 surrounding cells and the unit's own (1 off the map)."""
        return [
            self.terrain_height[x, y] if self.check_bounds(x, y) else 1
            for x, y in self.get_surrounding_points(unit, include_self=True)
        ]

    def get_unit_by_id(self, a_id):
        """Agent ``a_id``'s unit record.

        Raises:
            KeyError: (SMAC's type) no such agent, or no unit records yet (before ``reset()``); the
                message names the id and the valid ones.
        """
        if a_id not in self.agents:
            held = sorted(self.agents)
            raise KeyError(
                f"agent id {a_id!r}: expected one of {held}"
                if held
                else f"agent id {a_id!r}: no units yet; call reset() first"
            )
        return self.agents[a_id]

    def get_unit_type_id(self, unit, ally: bool) -> int:
        """Index of the unit's type in the one-hot: ``unit_type - min ally type`` for allies; for
        enemies SMAC's per-map table (stalkers-and-zealots: ``unit_type - 73``)."""
        if ally:
            return unit.unit_type - self._min_unit_type
        t = unit.unit_type
        if self.map_type == "stalkers_and_zealots":
            return t - 73
        if self.map_type == "colossi_stalkers_zealots":
            return {COLOSSUS: 0, STALKER: 1}.get(t, 2)
        if self.map_type == "bane":
            return 0 if t == 9 else 1
        if self.map_type == "MMM":
            return {51: 0, 48: 1}.get(t, 2)
        return 0

    def _init_ally_unit_types(self, min_unit_type: int) -> None:
        """Ally type ids from the smallest one, in SMAC's per-map order."""
        self._min_unit_type = min_unit_type
        order = {
            "marines": ["marine_id"],
            "stalkers_and_zealots": ["stalker_id", "zealot_id"],
            "colossi_stalkers_zealots": ["colossus_id", "stalker_id", "zealot_id"],
            "MMM": ["marauder_id", "marine_id", "medivac_id"],
            "zealots": ["zealot_id"],
            "hydralisks": ["hydralisk_id"],
            "stalkers": ["stalker_id"],
            "colossus": ["colossus_id"],
            "bane": ["baneling_id", "zergling_id"],
        }.get(self.map_type, [])
        for k, name in enumerate(order):
            setattr(self, name, min_unit_type + k)

    def _reset_type_ids(self) -> None:
        self._min_unit_type = 0
        for name in (
            "marine_id",
            "marauder_id",
            "medivac_id",
            "hydralisk_id",
            "zergling_id",
            "baneling_id",
            "stalker_id",
            "colossus_id",
            "zealot_id",
        ):
            setattr(self, name, 0)

    def only_medivac_left(self, ally: bool) -> bool:
        """MMM maps: allies have no non-medivac unit alive (``ally=True``), or exactly one enemy is
        alive and it is a Medivac (``ally=False``; SMAC's filter compares enemies against the ally
        medivac id, so it removes nothing)."""
        if self.map_type != "MMM":
            return False
        units = self.agents if ally else self.enemies
        alive = [u for u in units.values() if u.health > 0 and u.unit_type != self.medivac_id]
        if ally:
            return len(alive) == 0
        return len(alive) == 1 and alive[0].unit_type == MEDIVAC

    # ------------------------------------------------------------------ sizes
    def get_obs_move_feats_size(self) -> int:
        """Length of the movement block: 4 (+8 pathing, +9 height)."""
        return (
            self.n_actions_move
            + (self.n_obs_pathing if self.obs_pathing_grid else 0)
            + (self.n_obs_height if self.obs_terrain_height else 0)
        )

    def get_obs_enemy_feats_size(self) -> tuple[int, int]:
        """``(n_enemies, features per enemy)``."""
        nf = 4 + self.unit_type_bits
        if self.obs_all_health:
            nf += 1 + self.shield_bits_enemy
        return self.n_enemies, nf

    def get_obs_ally_feats_size(self) -> tuple[int, int]:
        """``(n_agents - 1, features per ally)``."""
        nf = 4 + self.unit_type_bits
        if self.obs_all_health:
            nf += 1 + self.shield_bits_ally
        if self.obs_last_action:
            nf += self.n_actions
        return self.n_agents - 1, nf

    def get_obs_own_feats_size(self) -> int:
        """Length of the own block (SMAC counts the timestep here too; see the module docstring)."""
        nf = self.unit_type_bits
        if self.obs_own_health:
            nf += 1 + self.shield_bits_ally
        if self.obs_timestep_number:
            nf += 1
        return nf

    def get_ally_num_attributes(self) -> int:
        """Features per agent in the state."""
        return len(self.ally_state_attr_names)

    def get_enemy_num_attributes(self) -> int:
        """Features per enemy in the state."""
        return len(self.enemy_state_attr_names)

    def _state_attr_names(self) -> tuple[list[str], list[str]]:
        ally = ["health", "energy/cooldown", "rel_x", "rel_y"]
        enemy = ["health", "rel_x", "rel_y"]
        if self.shield_bits_ally > 0:
            ally.append("shield")
        if self.shield_bits_enemy > 0:
            enemy.append("shield")
        bits = [f"type_{b}" for b in range(self.unit_type_bits)]
        return ally + bits, enemy + bits

    # ------------------------------------------------------------------ actions
    def rules_avail_agent_actions(self, agent_id: int) -> list[int]:
        """SMAC's ``get_avail_agent_actions`` from the unit records: ``n_actions`` 0/1 ints."""
        unit = self.get_unit_by_id(agent_id)
        if unit.health <= 0:
            return [1] + [0] * (self.n_actions - 1)
        avail = [0] * self.n_actions
        avail[1] = 1
        for d in range(4):
            if self.can_move(unit, d):
                avail[2 + d] = 1
        shoot = self.unit_shoot_range(agent_id)
        targets = self.enemies.items()
        if self.map_type == "MMM" and unit.unit_type == self.medivac_id:
            targets = [(i, u) for i, u in self.agents.items() if u.unit_type != self.medivac_id]
        for t_id, t in targets:
            if t.health > 0 and self.distance(unit.pos.x, unit.pos.y, t.pos.x, t.pos.y) <= shoot:
                avail[self.n_actions_no_attack + t_id] = 1
        return avail

    def get_agent_action(self, a_id: int, action: int):
        """The raw command SMAC sends for agent ``a_id``'s ``action``.

        Returns:
            ``None`` (no-op) or ``(ability_id, unit_tag, target)`` with ``target`` ``None`` (stop),
            an ``(x, y)`` point (move) or a unit tag (attack / heal).

        Raises:
            ValueError: the action is not available for the agent (SMAC asserts).
        """
        avail = self.rules_avail_agent_actions(a_id)
        if not 0 <= action < self.n_actions or avail[action] != 1:
            raise ValueError(f"agent {a_id} cannot perform action {action}; available: {avail}")
        unit = self.get_unit_by_id(a_id)
        if action == 0:
            return None
        if action == 1:
            return SMAC_ABILITY_IDS["stop"], unit.tag, None
        if 2 <= action <= 5:
            ma = self._move_amount
            dx, dy = [(0, ma), (0, -ma), (ma, 0), (-ma, 0)][action - 2]
            return SMAC_ABILITY_IDS["move"], unit.tag, (unit.pos.x + dx, unit.pos.y + dy)
        t_id = action - self.n_actions_no_attack
        if self.map_type == "MMM" and unit.unit_type == self.medivac_id:
            return SMAC_ABILITY_IDS["heal"], unit.tag, self.agents[t_id].tag
        return SMAC_ABILITY_IDS["attack"], unit.tag, self.enemies[t_id].tag

    def get_agent_action_heuristic(self, a_id: int, action: int):
        """SMAC's scripted ally policy (``heuristic_ai``): keep attacking the nearest live enemy (a
        marauder skips medivacs) until it dies; a medivac heals the nearest damaged non-medivac ally.
        With ``heuristic_rest``, an unavailable target becomes a cardinal step toward it.

        Returns:
            ``(command, action_num)``: ``command`` as :meth:`get_agent_action` returns it (``None``
            when there is nothing to do) and the SMAC action id it amounts to (0 for nothing).
        """
        if getattr(self, "heuristic_targets", None) is None:
            self.heuristic_targets = [None] * self.n_agents
        unit = self.get_unit_by_id(a_id)
        target = self.heuristic_targets[a_id]
        far = math.hypot(self.max_distance_x, self.max_distance_y)
        healer = unit.unit_type == self.medivac_id
        pool = self.agents if healer else self.enemies
        stale = target is None or pool[target].health == 0 or (healer and pool[target].health == pool[target].health_max)
        if stale:
            best, best_id = far, -1
            for k, u in pool.items():
                if healer and (u.unit_type == self.medivac_id or u.health == 0 or u.health == u.health_max):
                    continue
                if not healer and (u.health <= 0 or (unit.unit_type == self.marauder_id and u.unit_type == self.medivac_id)):
                    continue
                d = self.distance(unit.pos.x, unit.pos.y, u.pos.x, u.pos.y)
                if d < best:
                    best, best_id = d, k
            if best_id == -1:
                self.heuristic_targets[a_id] = None
                return None, 0
            self.heuristic_targets[a_id] = best_id
        t_id = self.heuristic_targets[a_id]
        action_num = t_id + self.n_actions_no_attack
        target_unit = pool[t_id]
        ability = SMAC_ABILITY_IDS["heal" if healer else "attack"]
        if self.heuristic_rest and self.get_avail_agent_actions(a_id)[action_num] == 0:
            dx, dy = target_unit.pos.x - unit.pos.x, target_unit.pos.y - unit.pos.y
            ma = self._move_amount
            if abs(dx) > abs(dy):
                action_num, point = (4, (unit.pos.x + ma, unit.pos.y)) if dx > 0 else (5, (unit.pos.x - ma, unit.pos.y))
            else:
                action_num, point = (2, (unit.pos.x, unit.pos.y + ma)) if dy > 0 else (3, (unit.pos.x, unit.pos.y - ma))
            return (SMAC_ABILITY_IDS["move"], unit.tag, point), action_num
        return (ability, unit.tag, target_unit.tag), action_num

    # ------------------------------------------------------------------ observations
    def rules_obs_agent(self, agent_id: int) -> np.ndarray:
        """SMAC's ``get_obs_agent`` from the unit records, float32 (real length; module docstring)."""
        unit = self.get_unit_by_id(agent_id)
        move = np.zeros(self.get_obs_move_feats_size(), dtype=np.float32)
        n_e, nf_e = self.get_obs_enemy_feats_size()
        n_al, nf_al = self.get_obs_ally_feats_size()
        enemy = np.zeros((n_e, nf_e), dtype=np.float32)
        ally = np.zeros((n_al, nf_al), dtype=np.float32)
        own = np.zeros(self.get_obs_own_feats_size(), dtype=np.float32)
        if unit.health > 0:
            x, y = unit.pos.x, unit.pos.y
            sight = self.unit_sight_range(agent_id)
            avail = self.rules_avail_agent_actions(agent_id)
            move[: self.n_actions_move] = avail[2:6]
            k = self.n_actions_move
            if self.obs_pathing_grid:
                move[k : k + self.n_obs_pathing] = self.get_surrounding_pathing(unit)
                k += self.n_obs_pathing
            if self.obs_terrain_height:
                move[k:] = self.get_surrounding_height(unit)
            for e_id, e in self.enemies.items():
                dist = self.distance(x, y, e.pos.x, e.pos.y)
                if dist < sight and e.health > 0:
                    row = [avail[self.n_actions_no_attack + e_id], dist / sight, (e.pos.x - x) / sight, (e.pos.y - y) / sight]
                    if self.obs_all_health:
                        row.append(e.health / e.health_max)
                        if self.shield_bits_enemy > 0:
                            row.append(e.shield / self.unit_max_shield(e))
                    enemy[e_id, : len(row)] = row
                    if self.unit_type_bits > 0:
                        enemy[e_id, len(row) + self.get_unit_type_id(e, False)] = 1
            others = [i for i in range(self.n_agents) if i != agent_id]
            for slot, al_id in enumerate(others):
                a = self.get_unit_by_id(al_id)
                dist = self.distance(x, y, a.pos.x, a.pos.y)
                if dist < sight and a.health > 0:
                    row = [1, dist / sight, (a.pos.x - x) / sight, (a.pos.y - y) / sight]
                    if self.obs_all_health:
                        row.append(a.health / a.health_max)
                        if self.shield_bits_ally > 0:
                            row.append(a.shield / self.unit_max_shield(a))
                    ally[slot, : len(row)] = row
                    k = len(row)
                    if self.unit_type_bits > 0:
                        ally[slot, k + self.get_unit_type_id(a, True)] = 1
                        k += self.unit_type_bits
                    if self.obs_last_action:
                        ally[slot, k:] = self.last_action[al_id]
            k = 0
            if self.obs_own_health:
                own[0] = unit.health / unit.health_max
                k = 1
                if self.shield_bits_ally > 0:
                    own[1] = unit.shield / self.unit_max_shield(unit)
                    k = 2
            if self.unit_type_bits > 0:
                own[k + self.get_unit_type_id(unit, True)] = 1
        out = np.concatenate([move, enemy.ravel(), ally.ravel(), own])
        if self.obs_timestep_number:
            out = np.append(out, self._episode_steps / self.episode_limit)
        return out.astype(np.float32)

    def get_state_dict(self) -> dict[str, np.ndarray]:
        """SMAC's ``get_state_dict``: ``allies`` ``(N, ally attrs)``, ``enemies`` ``(E, enemy attrs)``
        float64 (as SMAC), plus ``last_action`` ``(N, n_actions)`` and ``timestep`` (a float) when enabled. Positions
        are relative to the map centre over the playable width; dead units are zeros."""
        nf_al, nf_en = self.get_ally_num_attributes(), self.get_enemy_num_attributes()
        allies = np.zeros((self.n_agents, nf_al))
        enemies = np.zeros((self.n_enemies, nf_en))
        cx, cy = self.map_x / 2, self.map_y / 2
        for al_id, a in self.agents.items():
            if a.health > 0:
                row = [a.health / a.health_max]
                if self.map_type == "MMM" and a.unit_type == self.medivac_id:
                    row.append(a.energy / self.unit_max_cooldown(a))
                else:
                    row.append(a.weapon_cooldown / self.unit_max_cooldown(a))
                row += [(a.pos.x - cx) / self.max_distance_x, (a.pos.y - cy) / self.max_distance_y]
                if self.shield_bits_ally > 0:
                    row.append(a.shield / self.unit_max_shield(a))
                allies[al_id, : len(row)] = row
                if self.unit_type_bits > 0:
                    allies[al_id, len(row) + self.get_unit_type_id(a, True)] = 1
        for e_id, e in self.enemies.items():
            if e.health > 0:
                row = [e.health / e.health_max, (e.pos.x - cx) / self.max_distance_x, (e.pos.y - cy) / self.max_distance_y]
                if self.shield_bits_enemy > 0:
                    row.append(e.shield / self.unit_max_shield(e))
                enemies[e_id, : len(row)] = row
                if self.unit_type_bits > 0:
                    enemies[e_id, len(row) + self.get_unit_type_id(e, False)] = 1
        out = {"allies": allies, "enemies": enemies}
        if self.state_last_action:
            out["last_action"] = self.last_action
        if self.state_timestep_number:
            out["timestep"] = self._episode_steps / self.episode_limit
        return out

    def rules_state(self) -> np.ndarray:
        """SMAC's ``get_state`` from the unit records, ``(state_size,)`` float32."""
        if self.obs_instead_of_state:
            return np.concatenate([self.rules_obs_agent(i) for i in range(self.n_agents)]).astype(np.float32)
        d = self.get_state_dict()
        parts = [d["allies"].ravel(), d["enemies"].ravel()]
        if "last_action" in d:
            parts.append(d["last_action"].ravel())
        if "timestep" in d:
            parts.append(np.atleast_1d(d["timestep"]))
        return np.concatenate(parts).astype(np.float32)

    def get_visibility_matrix(self) -> np.ndarray:
        """``(N, N + E)`` bool: which live units each live agent sees (centre distance < 9)."""
        arr = np.zeros((self.n_agents, self.n_agents + self.n_enemies), dtype=bool)
        for i in range(self.n_agents):
            a = self.get_unit_by_id(i)
            if a.health <= 0:
                continue
            sight = self.unit_sight_range(i)
            for e_id, e in self.enemies.items():
                if e.health > 0 and self.distance(a.pos.x, a.pos.y, e.pos.x, e.pos.y) < sight:
                    arr[i, self.n_agents + e_id] = True
            for j in range(i + 1, self.n_agents):
                b = self.get_unit_by_id(j)
                if b.health > 0 and self.distance(a.pos.x, a.pos.y, b.pos.x, b.pos.y) < sight:
                    arr[i, j] = arr[j, i] = True
        return arr

    # ------------------------------------------------------------------ units, reward, end
    def init_units_from(self, raw_units) -> bool:
        """SMAC's ``init_units`` on one raw unit list: agents = owner-1 units sorted by
        ``(unit_type, pos.x, pos.y)``, enemies = owner-2 units in list order. On the first episode
        it adds each enemy's ``health_max + shield_max`` to ``max_reward`` and sets the ally type
        ids. Returns whether both counts match the map (SMAC steps one loop and retries if not)."""
        allies = sorted((u for u in raw_units if u.owner == 1), key=lambda u: (u.unit_type, u.pos.x, u.pos.y))
        self.agents = {i: u for i, u in enumerate(allies)}
        self.enemies = {}
        for u in raw_units:
            if u.owner == 2:
                self.enemies[len(self.enemies)] = u
                if self._episode_count == 0:
                    self.max_reward += u.health_max + u.shield_max
        if self._episode_count == 0 and self.agents:
            self._init_ally_unit_types(min(u.unit_type for u in self.agents.values()))
        self._unit_types = [u.unit_type for u in allies] + [u.unit_type for u in raw_units if u.owner == 2]
        return len(self.agents) == self.n_agents and len(self.enemies) == self.n_enemies

    def update_units_from(self, raw_units):
        """SMAC's ``update_units`` on one raw unit list: snapshot the previous units, refresh each
        tracked tag (a missing tag is dead: health set to 0) and return the end code (-1 lost,
        1 won, 0 draw, ``None`` ongoing)."""
        self.previous_ally_units = deepcopy(self.agents)
        self.previous_enemy_units = deepcopy(self.enemies)
        by_tag = {u.tag: u for u in raw_units}
        n_ally = n_enemy = 0
        for side in (self.agents, self.enemies):
            for k, u in side.items():
                new = by_tag.get(u.tag)
                if new is None:
                    u.health = 0
                else:
                    side[k] = new
                    if side is self.agents:
                        n_ally += 1
                    else:
                        n_enemy += 1
        if (n_ally == 0 and n_enemy > 0) or self.only_medivac_left(ally=True):
            return -1
        if (n_ally > 0 and n_enemy == 0) or self.only_medivac_left(ally=False):
            return 1
        if n_ally == 0 and n_enemy == 0:
            return 0
        return None

    def reward_battle(self) -> float:
        """SMAC's dense reward of the last update (before the win bonus and scaling): HP+shield the
        enemies lost plus ``reward_death_value`` per enemy death; ``abs`` of it with
        ``reward_only_positive``, else minus ``reward_negative_scale`` x the allies' losses.
        Marks new deaths in ``death_tracker_*``. 0 with ``reward_sparse``."""
        if self.reward_sparse:
            return 0
        neg = self.reward_negative_scale
        delta_deaths = delta_ally = delta_enemy = 0.0
        for al_id, a in self.agents.items():
            if self.death_tracker_ally[al_id]:
                continue
            prev = self.previous_ally_units[al_id].health + self.previous_ally_units[al_id].shield
            if a.health == 0:
                self.death_tracker_ally[al_id] = 1
                if not self.reward_only_positive:
                    delta_deaths -= self.reward_death_value * neg
                delta_ally += prev * neg
            else:
                delta_ally += neg * (prev - a.health - a.shield)
        for e_id, e in self.enemies.items():
            if self.death_tracker_enemy[e_id]:
                continue
            prev = self.previous_enemy_units[e_id].health + self.previous_enemy_units[e_id].shield
            if e.health == 0:
                self.death_tracker_enemy[e_id] = 1
                delta_deaths += self.reward_death_value
                delta_enemy += prev
            else:
                delta_enemy += prev - e.health - e.shield
        if self.reward_only_positive:
            return abs(delta_enemy + delta_deaths)
        return delta_enemy + delta_deaths - delta_ally
