"""Parse SMAC observations and states into entity sets (self, allies, enemies) with masks.

Everything is driven by ``env.get_env_info()`` (the layout the simulator reports), never by map
names, so the same code serves every map and every feature flag.

SMAC v1 observation of agent ``i`` (oxwhirl/smac ``smac/env/starcraft2/starcraft2.py`` ``get_obs_agent``)::

    [move (move_feats) | enemy rows (n_enemies x enemy_feats) | ally rows ((n_agents-1) x ally_feats)
     | own (own_feats) | timestep (timestep_feats)]

SMAC v1 global state (``get_state``; section 4)::

    [ally rows (n_agents x ally_state_feats) | enemy rows (n_enemies x enemy_state_feats)
     | last actions (n_agents x n_actions) | timestep]

Two things are re-encoded so that networks can share weights across maps and sides:

* Unit-type one-hots. SMAC gives the enemy side on stalkers-and-zealots maps the *reverse* bit
  order of the ally side (enemy id ``unit_type - 73``: zealot=0, stalker=1; allies stalker=0,
  zealot=1; ``starcraft2.py get_unit_type_id``, oxwhirl/smac#33). Type bits of every row are mapped
  by *name* (``env_info["ally_type_order"]`` / ``["enemy_type_order"]``) onto one vocabulary:
  the ally order, followed by enemy-only types if any.
* Count-dependent columns. Last-action one-hots (``n_actions = 6 + n_enemies`` wide) in ally obs
  rows (``obs_last_action``) are left out of the entity rows; the state's last-action block is
  compressed to 7 count-free columns per ally (the 6 non-target actions and "targeted a unit")
  plus, per enemy, the fraction of non-healer allies that attacked it.

Feature columns are recognised by their names in the layout: a name containing ``"type"`` is a
type bit, a name containing ``"last_action"`` a last-action column.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from sc2_envs.sim.rules.features import N_ACTIONS_NO_ATTACK
from sc2_envs.units import UNITS


def _require(d: dict, key: str, where: str):
    if key not in d:
        raise KeyError(f"{where} has no {key!r} (keys: {sorted(d)}); expected the layout of the sc2_envs contract")
    return d[key]


def _type_vocab(env_info: dict, vocab: list[str] | None = None) -> tuple[list[str], list[int], list[int], dict]:
    """The type vocabulary and where each side's type bits go in it.

    Without ``vocab``: the map's own vocabulary, the ally order followed by enemy-only types. With
    ``vocab`` (a model's, e.g. the union over its training maps): that list, which must name every
    type of the map. Returns ``(vocab, ally_bit_to_vocab, enemy_bit_to_vocab, constant)``;
    ``constant`` is set for a map without type bits (``unit_type_bits=0``: SMAC leaves them out
    when each side has one unit type) read with a non-empty ``vocab``: ``{"ally": v, "enemy": w}``,
    the vocabulary index of each side's single type, whose bit is then 1 on every visible row.

    Raises:
        ValueError: a type of the map missing from ``vocab``, or a map without type bits whose side
            has several unit types, or a SMACv2 scenario read with another vocabulary.
    """
    ally = list(env_info.get("ally_type_order") or [])
    enemy = list(env_info.get("enemy_type_order") or [])
    own_vocab = ally + [t for t in enemy if t not in ally]
    if vocab is not None:
        if not isinstance(vocab, (list, tuple)) or not all(isinstance(t, str) for t in vocab):
            raise TypeError(f"vocab must be a list of unit type names (an ordered sequence of str), got {vocab!r}")
        if len(set(vocab)) != len(vocab):
            raise ValueError(f"vocab {list(vocab)} names a unit type twice; expected each type once")
    if vocab is None or list(vocab) == own_vocab:
        return own_vocab, list(range(len(ally))), [own_vocab.index(t) for t in enemy], {}
    vocab = list(vocab)
    name = env_info.get("map_name")
    if env_info.get("unit_types_vary"):
        raise ValueError(
            f"{name}: a SMACv2 scenario's unit-type bits are its race's kinds {own_vocab}; they cannot be read with "
            f"the vocabulary {vocab}"
        )
    utb = int(env_info.get("unit_type_bits", 0))
    if utb:
        unseen = [t for t in own_vocab if t not in vocab]
        if unseen:
            raise ValueError(f"{name} has unit types {unseen} that the type vocabulary {vocab} does not have")
        return vocab, [vocab.index(t) for t in ally], [vocab.index(t) for t in enemy], {}
    if not vocab:
        return vocab, [], [], {}
    constant = {}
    for side, key in (("ally", "agent_unit_types"), ("enemy", "enemy_unit_types")):
        types = sorted(set(_require(env_info, key, "env_info")))
        if len(types) != 1:
            raise ValueError(f"{name} has no unit-type bits but its {side} side has the unit types {types}; expected one")
        if types[0] not in vocab:
            raise ValueError(f"{name} has unit types {types} that the type vocabulary {vocab} does not have")
        constant[side] = vocab.index(types[0])
    return vocab, [], [], constant


def _require_smac_actions(env_info: dict, where: str) -> None:
    """The entity models read SMAC's ``N_ACTIONS_NO_ATTACK`` (6) non-attack actions; SMACv2's
    ``conic_fov`` adds look actions in between (``n_actions_no_attack`` 18)."""
    nna = int(env_info.get("n_actions_no_attack", N_ACTIONS_NO_ATTACK))
    if nna != N_ACTIONS_NO_ATTACK:
        raise ValueError(
            f"{where}: {env_info.get('map_name')} has n_actions_no_attack={nna} (conic_fov=True adds look actions); "
            f"the GNN actor and critic read SMAC's {N_ACTIONS_NO_ATTACK} non-attack actions. Use conic_fov=False or "
            "an MLP actor (--actor mlp)"
        )


def _split_columns(names: list[str], width: int, utb: int, block: str) -> tuple[list[int], list[int]]:
    """Indices of the plain columns and of the type bits of a row with the given feature names."""
    if len(names) != width:
        raise ValueError(f"{block}: {len(names)} feature names {names} for a row width of {width}")
    type_cols = [k for k, n in enumerate(names) if "type" in n.lower()]
    plain = [k for k, n in enumerate(names) if k not in type_cols and "last_action" not in n.lower()]
    if len(type_cols) != utb:
        raise ValueError(
            f"{block}: found {len(type_cols)} type columns {[names[k] for k in type_cols]} but unit_type_bits={utb}"
        )
    return plain, type_cols


@dataclass
class Entities:
    """Entity view of a batch of observations.

    Attributes (``*`` = leading batch dims of the observation, e.g. ``[B, N]``):
        own: ``[*, own_dim]`` float32 -- move feats, own health/shield, canonical type bits, timestep.
        allies: ``[*, n_allies, ally_dim]`` float32 -- the other agents, in increasing agent id.
        ally_mask: ``[*, n_allies]`` bool -- the row is non-zero (ally alive and within sight).
        enemies: ``[*, n_enemies, enemy_dim]`` float32, enemy id order.
        enemy_mask: ``[*, n_enemies]`` bool -- non-zero row (enemy alive and within sight).
    """

    own: torch.Tensor
    allies: torch.Tensor
    ally_mask: torch.Tensor
    enemies: torch.Tensor
    enemy_mask: torch.Tensor


@dataclass
class StateEntities:
    """Entity view of a batch of global states.

    Attributes (``*`` = leading batch dims, e.g. ``[B]``):
        allies: ``[*, n_agents, ally_dim]`` float32 -- state ally row (plain columns, canonical type
            bits) plus 7 compressed last-action columns (zeros if the state has no last actions).
        enemies: ``[*, n_enemies, enemy_dim]`` float32 -- state enemy row plus the fraction of
            non-healer allies whose last action attacked this enemy.
        glob: ``[*, glob_dim]`` float32 -- the timestep feature (``glob_dim`` 0 or 1).
    """

    allies: torch.Tensor
    enemies: torch.Tensor
    glob: torch.Tensor


class ObsParser:
    """Splits SMAC observations ``[*, obs_size]`` into :class:`Entities`.

    Args:
        env_info: ``env.get_env_info()`` with ``obs_shape``, ``unit_type_bits``, ``ally_type_order``,
            ``enemy_type_order`` and ``obs_layout`` (contract keys ``move_feats``, ``n_enemies``,
            ``enemy_feats``, ``n_allies``, ``ally_feats``, ``own_feats``, ``timestep_feats`` and the
            three ``*_feature_names`` lists).

    Raises:
        KeyError / ValueError: when a layout key is missing or the sizes do not add up to ``obs_shape``.
    """

    def __init__(self, env_info: dict, vocab: list[str] | None = None):
        _require_smac_actions(env_info, "ObsParser")
        lay = _require(env_info, "obs_layout", "env_info")

        def g(k):
            return _require(lay, k, "obs_layout")

        self.move_feats, self.n_enemies, self.enemy_feats = g("move_feats"), g("n_enemies"), g("enemy_feats")
        self.n_allies, self.ally_feats, self.own_feats = g("n_allies"), g("ally_feats"), g("own_feats")
        self.timestep_feats = g("timestep_feats")
        self.obs_size = int(_require(env_info, "obs_shape", "env_info"))
        total = (
            self.move_feats
            + self.n_enemies * self.enemy_feats
            + self.n_allies * self.ally_feats
            + self.own_feats
            + self.timestep_feats
        )
        if total != self.obs_size:
            raise ValueError(f"obs_layout sizes add up to {total}, but obs_shape is {self.obs_size}: {lay}")
        utb = int(env_info.get("unit_type_bits", 0))
        self.vocab, ally_to_vocab, enemy_to_vocab, const = _type_vocab(env_info, vocab)
        if utb and len(env_info.get("ally_type_order") or []) != utb:
            raise ValueError(f"ally_type_order {env_info.get('ally_type_order')} does not have unit_type_bits={utb} names")
        self.type_dim = len(self.vocab) if (utb or const) else 0
        e_plain, e_type = _split_columns(list(g("enemy_feature_names")), self.enemy_feats, utb, "enemy obs row")
        a_plain, a_type = _split_columns(list(g("ally_feature_names")), self.ally_feats, utb, "ally obs row")
        o_plain, o_type = _split_columns(list(g("own_feature_names")), self.own_feats, utb, "own obs block")
        # Column index lists into a row extended by a zero column (index = width), so that a type
        # missing from one side's one-hot reads as 0, and a visibility column (width + 1) for the
        # single type of a side on a map without type bits.
        self._enemy_idx = _Columns(
            e_plain + _type_targets(e_type, enemy_to_vocab, self.type_dim, self.enemy_feats, const.get("enemy")),
            self.enemy_feats,
        )
        self._ally_idx = _Columns(
            a_plain + _type_targets(a_type, ally_to_vocab, self.type_dim, self.ally_feats, const.get("ally")),
            self.ally_feats,
        )
        self._own_idx = _Columns(
            o_plain + _type_targets(o_type, ally_to_vocab, self.type_dim, self.own_feats, const.get("ally")),
            self.own_feats,
        )
        self.enemy_dim = len(self._enemy_idx)
        self.ally_dim = len(self._ally_idx)
        self.own_dim = self.move_feats + len(self._own_idx) + self.timestep_feats

    def dims(self) -> dict:
        """Entity widths, the part of the layout a network's weights depend on (not the counts)."""
        return {
            "own_dim": self.own_dim,
            "ally_dim": self.ally_dim,
            "enemy_dim": self.enemy_dim,
            "type_vocab": list(self.vocab),
        }

    def __call__(self, obs: torch.Tensor) -> Entities:
        """``obs [*, obs_size]`` float32 -> :class:`Entities`."""
        if obs.shape[-1] != self.obs_size:
            raise ValueError(f"observation width {obs.shape[-1]} != obs_shape {self.obs_size} of this layout")
        lead = obs.shape[:-1]
        o = 0
        move = obs[..., o : o + self.move_feats]
        o += self.move_feats
        enemies = obs[..., o : o + self.n_enemies * self.enemy_feats].reshape(*lead, self.n_enemies, self.enemy_feats)
        o += self.n_enemies * self.enemy_feats
        allies = obs[..., o : o + self.n_allies * self.ally_feats].reshape(*lead, self.n_allies, self.ally_feats)
        o += self.n_allies * self.ally_feats
        own = obs[..., o : o + self.own_feats]
        o += self.own_feats
        timestep = obs[..., o : o + self.timestep_feats]
        return Entities(
            # the own block's visibility is the agent's whole observation (SMAC zeroes a dead agent's),
            # since the own block may have no other column (obs_own_health=False)
            own=torch.cat([move, self._own_idx(own, obs.ne(0).any(-1, keepdim=True)), timestep], dim=-1),
            allies=self._ally_idx(allies),
            ally_mask=allies.ne(0).any(-1),
            enemies=self._enemy_idx(enemies),
            enemy_mask=enemies.ne(0).any(-1),
        )


class StateParser:
    """Splits SMAC global states ``[*, state_size]`` into :class:`StateEntities`.

    Args:
        env_info: ``env.get_env_info()`` with ``state_shape``, ``n_actions``, ``agent_unit_types``,
            the type orders and ``state_layout`` (``n_agents``, ``ally_state_feats``, ``n_enemies``,
            ``enemy_state_feats``, ``last_action_feats``, ``timestep_feats`` and the two
            ``*_state_feature_names`` lists). ``last_action_feats`` is the width of the whole
            last-action block (``n_agents * n_actions``, or 0).
    """

    LAST_ACTION_DIM = N_ACTIONS_NO_ATTACK + 1

    def __init__(self, env_info: dict, vocab: list[str] | None = None):
        _require_smac_actions(env_info, "StateParser")
        lay = _require(env_info, "state_layout", "env_info")
        if lay.get("obs_instead_of_state"):
            raise ValueError(
                "obs_instead_of_state=True: the state is the stacked observations, which has no ally/enemy "
                "rows for an entity critic; use the MLP critic (--actor mlp)"
            )

        def g(k):
            return _require(lay, k, "state_layout")

        self.n_agents, self.ally_feats = g("n_agents"), g("ally_state_feats")
        self.n_enemies, self.enemy_feats = g("n_enemies"), g("enemy_state_feats")
        self.last_action_feats, self.timestep_feats = g("last_action_feats"), g("timestep_feats")
        self.n_actions = int(_require(env_info, "n_actions", "env_info"))
        self.state_size = int(_require(env_info, "state_shape", "env_info"))
        total = (
            self.n_agents * self.ally_feats + self.n_enemies * self.enemy_feats + self.last_action_feats + self.timestep_feats
        )
        if total != self.state_size:
            raise ValueError(f"state_layout sizes add up to {total}, but state_shape is {self.state_size}: {lay}")
        if self.last_action_feats not in (0, self.n_agents * self.n_actions):
            raise ValueError(
                f"last_action_feats={self.last_action_feats}; expected 0 or n_agents*n_actions="
                f"{self.n_agents * self.n_actions}"
            )
        utb = int(env_info.get("unit_type_bits", 0))
        self.vocab, ally_to_vocab, enemy_to_vocab, const = _type_vocab(env_info, vocab)
        self.type_dim = len(self.vocab) if (utb or const) else 0
        a_plain, a_type = _split_columns(list(g("ally_state_feature_names")), self.ally_feats, utb, "ally state row")
        e_plain, e_type = _split_columns(list(g("enemy_state_feature_names")), self.enemy_feats, utb, "enemy state row")
        self._ally_idx = _Columns(
            a_plain + _type_targets(a_type, ally_to_vocab, self.type_dim, self.ally_feats, const.get("ally")),
            self.ally_feats,
        )
        self._enemy_idx = _Columns(
            e_plain + _type_targets(e_type, enemy_to_vocab, self.type_dim, self.enemy_feats, const.get("enemy")),
            self.enemy_feats,
        )
        types = list(_require(env_info, "agent_unit_types", "env_info"))
        unknown = [t for t in types if t not in UNITS]
        if unknown:
            raise ValueError(f"agent_unit_types {unknown} are not unit types of sc2_envs.units.UNITS")
        # Medivac "attack" actions heal allies, so they do not count as attacks on enemy j.
        self._attacker = torch.tensor([not UNITS[t].is_healer for t in types], dtype=torch.float32)
        if env_info.get("unit_types_vary"):  # SMACv2: types change per env and episode; count every agent
            self._attacker = torch.ones(len(types), dtype=torch.float32)
        self.ally_dim = len(self._ally_idx) + self.LAST_ACTION_DIM
        self.enemy_dim = len(self._enemy_idx) + 1
        self.glob_dim = self.timestep_feats

    def dims(self) -> dict:
        return {
            "ally_dim": self.ally_dim,
            "enemy_dim": self.enemy_dim,
            "glob_dim": self.glob_dim,
            "type_vocab": list(self.vocab),
        }

    def __call__(self, state: torch.Tensor) -> StateEntities:
        """``state [*, state_size]`` float32 -> :class:`StateEntities`."""
        if state.shape[-1] != self.state_size:
            raise ValueError(f"state width {state.shape[-1]} != state_shape {self.state_size} of this layout")
        lead = state.shape[:-1]
        N, M, A = self.n_agents, self.n_enemies, self.n_actions
        o = N * self.ally_feats
        allies = state[..., :o].reshape(*lead, N, self.ally_feats)
        enemies = state[..., o : o + M * self.enemy_feats].reshape(*lead, M, self.enemy_feats)
        o += M * self.enemy_feats
        if self.last_action_feats:
            last = state[..., o : o + N * A].reshape(*lead, N, A)
            ally_last = torch.cat(
                [last[..., :N_ACTIONS_NO_ATTACK], last[..., N_ACTIONS_NO_ATTACK:].sum(-1, keepdim=True)], dim=-1
            )
            if self._attacker.device != state.device:
                self._attacker = self._attacker.to(state.device)
            w = self._attacker
            targeted = (last[..., N_ACTIONS_NO_ATTACK : N_ACTIONS_NO_ATTACK + M] * w[:, None]).sum(-2)
            targeted = targeted / w.sum().clamp(min=1.0)
        else:
            ally_last = state.new_zeros(*lead, N, self.LAST_ACTION_DIM)
            targeted = state.new_zeros(*lead, M)
        o += self.last_action_feats
        return StateEntities(
            allies=torch.cat([self._ally_idx(allies), ally_last], dim=-1),
            enemies=torch.cat([self._enemy_idx(enemies), targeted.unsqueeze(-1)], dim=-1),
            glob=state[..., o : o + self.timestep_feats],
        )


def _type_targets(
    type_cols: list[int], bit_to_vocab: list[int], vocab_size: int, width: int, constant: int | None = None
) -> list[int]:
    """Column indices giving the canonical one-hot: entry ``v`` reads the row column of vocab type ``v``.

    Index ``width`` reads the appended zero column (a type this side's one-hot does not have) and
    ``width + 1`` the appended visibility column: with ``constant`` (a map without type bits, one
    unit type per side), the entry of that vocabulary type is 1 on every visible (non-zero) row and
    0 on hidden or dead ones, as SMAC writes the type bits of the maps that have them.
    """
    out = [width] * vocab_size  # ``width`` indexes the appended zero column
    for bit, col in enumerate(type_cols):
        out[bit_to_vocab[bit]] = col
    if constant is not None:
        out[constant] = width + 1
    return out


class _Columns:
    """A column selection ``rows[..., idx]`` where index ``width`` reads an appended zero column and
    ``width + 1`` an appended column that is 1 where the row has a non-zero entry."""

    def __init__(self, idx: list[int], width: int):
        self.idx = idx
        self.pad = any(k >= width for k in idx)
        self.visible = any(k == width + 1 for k in idx)
        self._by_device: dict[torch.device, torch.Tensor] = {}

    def __len__(self) -> int:
        return len(self.idx)

    def __call__(self, rows: torch.Tensor, visible: torch.Tensor | None = None) -> torch.Tensor:
        """``rows [*, width]`` -> ``[*, len(idx)]``; ``visible [*, 1]`` bool replaces the rows' own
        non-zero test for the visibility column."""
        idx = self._by_device.get(rows.device)
        if idx is None:
            idx = self._by_device[rows.device] = torch.tensor(self.idx, dtype=torch.int64, device=rows.device)
        if self.pad:
            extra = [rows.new_zeros(*rows.shape[:-1], 1)]
            if self.visible:
                seen = rows.ne(0).any(-1, keepdim=True) if visible is None else visible
                extra.append(seen.to(rows.dtype))
            rows = torch.cat([rows, *extra], dim=-1)
        return rows.index_select(-1, idx)


def heal_target_rows(agent_ids: torch.Tensor, n_agents: int, n_targets: int) -> torch.Tensor:
    """Ally-row index of each medivac heal action, ``[len(agent_ids), n_targets]`` int64, -1 = no ally.

    For a medivac, SMAC's action ``6 + t`` heals *agent* ``t`` (``get_agent_action``). Agent ``i``
    sees the other agents in increasing id, so agent ``t`` is ally row ``t`` if ``t < i`` and
    ``t - 1`` if ``t > i``; ``t == i`` (itself) and ``t >= n_agents`` have no row.
    """
    t = torch.arange(n_targets, device=agent_ids.device)[None, :]
    i = agent_ids.long()[:, None]
    rows = torch.where(t < i, t, t - 1)
    return torch.where((t == i) | (t >= n_agents), torch.full_like(rows, -1), rows)
