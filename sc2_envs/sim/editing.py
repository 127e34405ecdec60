"""Editing a running simulator: placing units, removing allies, pinning SMACv2 compositions, render data.

``EditingMixin`` holds the ``SMACSim`` methods that change or show a battle from outside its rules
(``set_units``, ``remove_allies``, ``pin_scenario`` / ``unpin_scenario``, ``unit_types``, ``render_data``);
``UnitPlacement`` is one unit's placement for ``set_units``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from sc2_envs import smacv2 as v2
from sc2_envs.maps import ground_distances, ground_edges, needs_routing
from sc2_envs.sim.options import is_int, is_real
from sc2_envs.sim.state import ORDER_NONE
from sc2_envs.validation import off_map


@dataclass
class UnitPlacement:
    """One unit of a scenario (see ``SMACSim.set_units``).

    Attributes:
        x, y: centre position in world units.
        health: absolute HP; ``None`` = full; 0 = dead (absent).
        shield: absolute shields; ``None`` = full.
        cooldown: weapon cooldown in game loops (0 = ready).
        energy: medivac energy; ``None`` = the unit's starting energy.
        unit: SMACv2 scenarios only: the unit type to place (one of the scenario race's types);
            ``None`` keeps the slot's current type. Must be ``None`` on SMAC v1 maps, whose
            rosters are fixed.
    """

    x: float
    y: float
    health: float | None = None
    shield: float | None = None
    cooldown: float = 0.0
    energy: float | None = None
    unit: str | None = None


class EditingMixin:
    """``SMACSim``'s editing methods (see the module docstring); they read and write the simulator's state."""

    def unit_types(self, env_index: int | None = None) -> list[list[str]] | tuple[list[str], list[str]]:
        """Unit type names of the current episode: ``(agent types, enemy types)`` of env ``env_index``,
        or a list of those for every env when ``env_index`` is None. On SMAC v1 maps they are the
        map's fixed rosters; in SMACv2 scenarios they change at every reset.

        Raises:
            TypeError, ValueError: ``env_index`` is not None or an int in ``[0, num_envs)``.
        """
        if env_index is None:
            return [self.unit_types(b) for b in range(self.num_envs)]
        env_index = self._check_env_index(env_index, none_means_all=True)
        if self.scenario is None:
            return list(self.spec.ally_units()), list(self.spec.enemy_units())
        kinds = self.scenario.kinds
        k = self.st.unit_kind[env_index].tolist()
        return [kinds[i] for i in k[: self.n_agents]], [kinds[i] for i in k[self.n_agents :]]

    def pin_scenario(self, allies, enemies, ally_positions=None, enemy_positions=None, env_index: int | None = None) -> None:
        """SMACv2: use this composition (and these start points) at every later reset of an env.

        Agent ``i`` gets ``allies[i]`` at ``ally_positions[i]`` and enemy ``j`` gets ``enemies[j]``
        at ``enemy_positions[j]``, exactly in the order given (SMACv2's agent sort by type and
        position applies to sampled teams only). Positions ``None``: drawn from the scenario's
        start-position distribution as usual. Takes effect at the next reset (call ``reset()``
        to start one now); ``unpin_scenario`` restores sampling.

        Args:
            allies: ``n_agents`` unit type names of the scenario's race; enemies: ``n_enemies`` names.
            ally_positions / enemy_positions: ``[n, 2]`` world points with ``0 <= x, y < 32``, or None
                (both or neither).
            env_index: the env to pin, or None for every env.

        Raises:
            ValueError: not a SMACv2 scenario; a team of the wrong size; a unit type of another
                race; a position off the map or of the wrong shape; an env index out of range.
            TypeError: a team that is not a sequence of names.
        """
        if self.scenario is None:
            raise ValueError(f"pin_scenario is for SMACv2 scenarios; {self.map_name!r} is a SMAC v1 map with a fixed roster")
        a, e = v2.validate_composition(self.scenario, allies, enemies)
        if (ally_positions is None) != (enemy_positions is None):
            raise ValueError("give both ally_positions and enemy_positions, or neither")
        envs = self._env_mask(env_index)
        self._pin_kind[envs] = torch.tensor(a + e, dtype=torch.int64, device=self.device)
        if ally_positions is not None:
            p = torch.cat(
                [
                    v2.validate_positions(self.scenario, "ally", ally_positions, self.n_agents),
                    v2.validate_positions(self.scenario, "enemy", enemy_positions, self.n_enemies),
                ]
            ).to(self.device)
            self._pin_pos[envs] = p
        self._pin_has_pos[envs] = ally_positions is not None
        self._pin_mask[envs] = True

    def unpin_scenario(self, env_index: int | None = None) -> None:
        """SMACv2: sample compositions and positions again at later resets (env ``env_index`` or all)."""
        if self.scenario is None:
            raise ValueError(f"unpin_scenario is for SMACv2 scenarios; {self.map_name!r} is a SMAC v1 map")
        self._pin_mask[self._env_mask(env_index)] = False

    def render_data(self, env_index: int = 0) -> dict:
        """NumPy copies of what a renderer draws for env ``env_index`` (positions, bars, orders).

        Raises:
            TypeError, ValueError: ``env_index`` is not an int in ``[0, num_envs)``.
        """
        st, t, b = self.st, self.table, self._check_env_index(env_index)
        return dict(
            pos=st.pos[b].cpu().numpy().copy(),  # copies: the numba kernel updates the state in place
            radius=(t.radius if t.radius.dim() == 1 else t.radius[b]).cpu().numpy().copy(),
            health=st.health[b].cpu().numpy().copy(),
            max_health=(t.max_health if t.max_health.dim() == 1 else t.max_health[b]).cpu().numpy().copy(),
            shield=st.shield[b].cpu().numpy().copy(),
            max_shield=(t.max_shield if t.max_shield.dim() == 1 else t.max_shield[b]).cpu().numpy().copy(),
            alive=st.alive[b].cpu().numpy().copy(),
            is_ally=t.is_ally.cpu().numpy(),
            names=list(t.names) if self.scenario is None else sum(self.unit_types(b), []),
            order_kind=st.order_kind[b].cpu().numpy().copy(),
            order_target=st.order_target[b].cpu().numpy().copy(),
            cooldown=st.cooldown[b].cpu().numpy().copy(),
            pathing=self.pathing.cpu().numpy(),
            episode_steps=int(st.episode_steps[b]),
        )

    def set_units(
        self, env_index: int, allies: Sequence[UnitPlacement | None], enemies: Sequence[UnitPlacement | None]
    ) -> dict[str, torch.Tensor]:
        """Place the units of env ``env_index`` (a scenario): positions, health, shields, cooldowns.

        The roster (unit types) is the map's (in SMACv2 scenarios ``UnitPlacement.unit`` may set a
        slot's type, else the current episode's type stays); ``allies[i]`` places agent ``i`` and ``enemies[j]``
        enemy ``j``; ``None`` or ``health=0`` removes the unit. The previous-step snapshot used by
        the reward is set to the placed values, orders are reset (enemies attack-move), and the
        fresh observation of all envs is returned (as ``reset``).

        Raises:
            TypeError: ``env_index`` not an int, or an entry neither ``UnitPlacement`` nor ``None``.
            ValueError: wrong list lengths, an env index out of range, a non-finite value, a position
                off the map or (for ground units) on an unwalkable cell, or health / shield / energy
                outside ``[0, max]`` or a negative cooldown, a ``unit`` of another race (SMACv2) or any
                ``unit`` on a v1 map other than the slot's own. Nothing is changed when it raises.
        """
        if not is_int(env_index):
            raise TypeError(f"env_index must be an int in [0, {self.num_envs}), got {env_index!r}")
        if not 0 <= env_index < self.num_envs:
            raise ValueError(f"env_index must be in [0, {self.num_envs}), got {env_index}")
        for side, units in (("allies", allies), ("enemies", enemies)):
            if isinstance(units, (str, bytes)) or not hasattr(units, "__len__"):
                raise TypeError(f"{side} must be a sequence of UnitPlacement or None, got {units!r}")
        if len(allies) != self.n_agents or len(enemies) != self.n_enemies:
            raise ValueError(
                f"expected {self.n_agents} allies and {self.n_enemies} enemies "
                f"(None for absent units), got {len(allies)} and {len(enemies)}"
            )
        placements = list(allies) + list(enemies)
        if not self._needs_reset or self.scenario is None:
            # v1 rosters are fixed, so the checks do not depend on the episode: check before resetting
            self._check_placements(env_index, placements)
            if self._needs_reset:
                self.reset()
        else:
            # SMACv2: a slot without ``unit`` keeps the type the reset draws, so check after it and undo it
            # on a bad placement
            before = self.state_dict()
            self.reset()
            try:
                self._check_placements(env_index, placements)
            except (TypeError, ValueError):
                self.load_state_dict(before)
                raise
        kinds = [self._placement_kind(env_index, u, p) for u, p in enumerate(placements)]
        st, b = self.st, env_index
        st.clear_attacks(b)  # no attack, missile or baneling burst carries over into a scenario
        if self.scenario is not None:
            st.unit_kind[b] = torch.tensor(kinds, dtype=torch.int64, device=self.device)
            st.enemy_tag[b] = -1
            self._refresh_kinds()
        for u, p in enumerate(placements):
            if p is None:
                st.health[b, u] = 0.0
                st.shield[b, u] = 0.0
                st.alive[b, u] = False
                continue
            c = self._unit_consts(u, kinds[u])
            st.pos[b, u] = torch.tensor([p.x, p.y], dtype=torch.float32)
            st.health[b, u] = c["health"] if p.health is None else p.health
            st.shield[b, u] = c["shield"] if p.shield is None else p.shield
            st.energy[b, u] = c["energy_start"] if p.energy is None else p.energy
            st.cooldown[b, u] = p.cooldown
            st.alive[b, u] = bool(st.health[b, u] > 0)
            if u >= self.n_agents:
                if self.scenario is not None:
                    st.order_kind[b, u] = ORDER_NONE
                    st.order_target[b, u] = -1
                    st.order_point[b, u] = st.pos[b, u]
                else:
                    st.order_point[b, u] = st.attack_point[b] if self.spec.attack_point is not None else st.pos[b, u]
            else:
                st.order_kind[b, u] = ORDER_NONE
                st.order_target[b, u] = -1
        st.prev_health[b], st.prev_shield[b], st.prev_alive[b] = (
            st.health[b].clone(),
            st.shield[b].clone(),
            st.alive[b].clone(),
        )
        return self._observe()

    def remove_allies(self, mask) -> dict[str, torch.Tensor]:
        """Remove allies from envs whose episodes have just started: team-size randomisation in training.

        Agent ``i`` of env ``b`` is removed where ``mask[b, i]`` is set: it starts the episode dead
        (health and shields 0), as an absent unit of ``set_units``. Its slot stays (SMAC's layouts
        do not change): its observation and state features are zero, only its no-op is available,
        and its death is no one's (the reward's death tracker starts it dead). In SMACv2 scenarios the
        envs' enemy tags are set afresh, so their first observation is that of a battle that started
        without the removed allies. Used by the training
        scripts' ``--ally-dropout`` so that a policy meets battles in which it is outnumbered
        (e.g. 7 marines against 8) before zero-shot play on maps such as ``5m_vs_6m``.

        Args:
            mask: ``[B, n_agents]`` bool tensor (any device); rows of envs that are not at step 0
                of an episode must be all False.

        Returns:
            The fresh observation of every env, as ``reset``: ``{"obs": [B, N, obs_size] float32,
            "state": [B, state_size] float32, "avail_actions": [B, N, n_actions] bool}`` (plus
            ``unit_kind`` in SMACv2 scenarios).

        Raises:
            RuntimeError: before ``reset`` (or when a reset is due).
            TypeError: ``mask`` not a bool tensor.
            ValueError: ``mask`` of the wrong shape; a removal in an env past its episode's first
                step (``episode_steps > 0``) or in an env with an ally already dead; a mask that
                removes every ally of an env. Nothing is changed when it raises.
        """
        if self._needs_reset:
            raise RuntimeError("call reset() before remove_allies() (and after an episode ends when autoreset=False)")
        B, N = self.num_envs, self.n_agents
        if not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool:
            raise TypeError(f"mask must be a bool tensor of shape ({B}, {N}), got {mask!r}")
        if tuple(mask.shape) != (B, N):
            raise ValueError(f"mask must have shape (num_envs={B}, n_agents={N}), got {tuple(mask.shape)}")
        st = self.st
        mask = mask.to(self.device)
        rows = mask.any(1)
        late = rows & (st.episode_steps > 0)
        if bool(late.any()):
            raise ValueError(
                f"remove_allies: envs {late.nonzero().flatten().tolist()} are past the first step of their episodes "
                f"(episode_steps {st.episode_steps[late].tolist()}); expected removals only at step 0"
            )
        dead = rows & ~st.alive[:, :N].all(1)
        if bool(dead.any()):
            raise ValueError(
                f"remove_allies: envs {dead.nonzero().flatten().tolist()} already have dead allies; expected "
                "full teams at step 0 (remove allies once per episode)"
            )
        empty = rows & mask.all(1)
        if bool(empty.any()):
            raise ValueError(
                f"remove_allies: the mask removes every ally of envs {empty.nonzero().flatten().tolist()}; "
                "expected at least one ally left in each env"
            )
        gone = torch.zeros_like(st.alive)
        gone[:, :N] = mask
        for name in ("health", "shield", "prev_health", "prev_shield"):
            t = getattr(st, name)
            t.masked_fill_(gone, 0.0)
        st.alive.masked_fill_(gone, False)
        st.prev_alive.masked_fill_(gone, False)
        if self.scenario is not None:
            # SMACv2: the reset's observation tagged the enemies in sight (``enemy_tag``); tag them afresh, as at
            # a reset without the removed allies (``set_units``), or the enemies tagged by the agents that remain
            # would count as observed by every agent in the envs' first observation
            st.enemy_tag[rows] = -1
        return self._observe()

    def _check_placements(self, b: int, placements: list) -> None:
        """Every check of ``set_units`` on env ``b``'s placements (raises; changes nothing)."""
        kinds = [self._placement_kind(b, u, p) for u, p in enumerate(placements)]
        for u, p in enumerate(placements):
            self._check_placement(u, p, kinds[u])

    def _routing(self, terrain: str) -> dict:
        """Shortest-path tables for ``Dynamics`` on maps where straight lines can fail (see ``maps.needs_routing``)."""
        if not needs_routing(terrain):
            return {}
        return dict(
            ground_dist=torch.as_tensor(ground_distances(terrain).copy(), device=self.device),
            ground_edges=torch.as_tensor(ground_edges(terrain), device=self.device),
        )

    def _placement_kind(self, b: int, u: int, p) -> int:
        """The kind index unit ``u`` of env ``b`` will have (SMACv2: ``p.unit`` or the current one; v1: 0)."""
        side, idx = ("allies", u) if u < self.n_agents else ("enemies", u - self.n_agents)
        if p is not None and not isinstance(p, UnitPlacement):
            if self.scenario is None:
                now = self.table.names[u]
            else:
                now = self.scenario.kinds[int(self.st.unit_kind[b, u])]
            raise TypeError(f"{side}[{idx}] ({now}) must be a UnitPlacement or None, got {p!r}")
        unit = None if p is None else p.unit
        if self.scenario is None:
            if unit is not None and unit != self.table.names[u]:
                raise ValueError(
                    f"{side}[{idx}]: unit={unit!r}, but {self.map_name} has a fixed roster ({self.table.names[u]} "
                    f"in this slot); unit types can be chosen only in SMACv2 scenarios"
                )
            return 0
        if unit is None:
            return int(self.st.unit_kind[b, u])
        if unit not in self.scenario.kinds:
            raise ValueError(
                f"{side}[{idx}]: unit {unit!r} is not a {self.scenario.race} unit; expected one of {list(self.scenario.kinds)}"
            )
        return self.scenario.kinds.index(unit)

    def _unit_consts(self, u: int, kind: int) -> dict:
        """Name, max health / shield / energy and starting energy of unit slot ``u`` holding ``kind``."""
        t = self.table
        if self.scenario is not None:
            t = t.kinds
            u = kind if u < self.n_agents else kind + len(t.names) // 2
        return {
            "name": t.names[u],
            "health": float(t.max_health[u]),
            "shield": float(t.max_shield[u]),
            "energy": float(t.energy_max[u]),
            "energy_start": float(t.energy_start[u]),
        }

    def _check_placement(self, u: int, p, kind: int = 0) -> None:
        """Validate the placement of unit ``u`` (see ``set_units``)."""
        if p is None:
            return
        t = self.table
        c = self._unit_consts(u, kind)
        side, idx = ("allies", u) if u < self.n_agents else ("enemies", u - self.n_agents)
        who = f"{side}[{idx}] ({c['name']})"
        if not isinstance(p, UnitPlacement):
            raise TypeError(f"{who} must be a UnitPlacement or None, got {p!r}")
        limits = {"health": c["health"], "shield": c["shield"], "energy": c["energy"]}
        for name in ("x", "y", "health", "shield", "energy", "cooldown"):
            v = getattr(p, name)
            if v is None and name in limits:
                continue
            if not is_real(v) or not math.isfinite(float(v)):
                raise ValueError(f"{who}: {name} must be a finite number, got {v!r}")
            if name in limits and not 0.0 <= v <= limits[name]:
                raise ValueError(f"{who}: {name} must be in [0, {limits[name]:g}], got {v!r}")
        if p.cooldown < 0:
            raise ValueError(f"{who}: cooldown must be >= 0 game loops, got {p.cooldown!r}")
        size = self.pathing.shape[0]
        why = off_map(p.x, p.y, size)
        if why:
            raise ValueError(f"{who}: position {why}")
        if self.scenario is not None:
            return  # the 32x32_flat map is pathable everywhere
        pt = torch.tensor([p.x, p.y], dtype=torch.float32, device=self.device).expand(1, len(t.names), 2)
        if not bool(self.dynamics.can_stand(pt, pt)[0, u]):
            raise ValueError(
                f"{who}: position ({p.x}, {p.y}) is on a cell of {self.map_name} that a {t.names[u]} cannot stand on"
            )
