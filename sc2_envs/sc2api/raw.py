"""Raw-interface unit records of the embedded simulator, shaped like the StarCraft II API's.

The StarCraft II API reports each unit as an ``s2clientprotocol.raw_pb2.Unit``; SMAC
(oxwhirl/smac ``smac/env/starcraft2/starcraft2.py``) reads ``tag``, ``unit_type``, ``owner``,
``pos.x/.y``, ``health``, ``health_max``, ``shield``, ``shield_max``, ``energy`` and
``weapon_cooldown`` from them, and mutates ``health`` to 0 when a unit disappears. ``RawUnit`` is a
plain mutable record with those fields (plus ``radius``, ``energy_max`` and ``orders``), so SMAC-style
code can read it without protobuf; ``sc2_envs.sc2api.server`` turns it into the protocol message.

Unit type ids:

* enemies use the stock ids of the game's ``stableid.json`` (Marine 48, Marauder 51, Medivac 54,
  Zealot 73, Stalker 74, Colossus 4, Zergling 105, Baneling 9, Hydralisk 107, SpineCrawler 98),
  which SMAC hard-codes for the enemy one-hot and ``unit_max_shield``;
* agents are the SMAC maps' custom ``*_RL`` copies. Their ids are build dependent and appear in no
  public table (e.g. 1935 = Baneling_RL on SC2 4.6, REFIL issue oxwhirl/smac#2 discussion), and
  SMAC only needs them consecutive in ``_init_ally_unit_types`` order (it subtracts the smallest).
  We number a map's ally types ``RL_TYPE_ID_BASE + k`` in that order (``MapSpec.ally_type_order``).

Tags are fresh per episode, as after SMAC's kill-all-units reset on the real maps:
``tag = (episode_index + 1) << 18 | (unit_index + 1)`` (SC2 tags are ``index | recycle << 18``).
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field

import numpy as np

from sc2_envs.maps import MapSpec

__all__ = [
    "RL_TYPE_ID_BASE",
    "STOCK_UNIT_TYPE_IDS",
    "Point",
    "RawUnit",
    "ally_type_ids",
    "make_tag",
    "raw_units_from_sim",
    "raw_units_from_snapshot",
    "sim_snapshot",
    "unit_type_ids",
]

STOCK_UNIT_TYPE_IDS: dict[str, int] = {
    "marine": 48,
    "marauder": 51,
    "medivac": 54,
    "zealot": 73,
    "stalker": 74,
    "colossus": 4,
    "zergling": 105,
    "baneling": 9,
    "hydralisk": 107,
    "spine_crawler": 98,
}
"""Stock unit type ids (game data ``stableid.json``; the enemies' ids in SMAC)."""

RL_TYPE_ID_BASE = 1970
"""First emulated ``*_RL`` unit type id (ours; see the module docstring)."""

OWNER_AGENTS, OWNER_ENEMY = 1, 2
"""Player ids: SMAC's agents are player 1, the built-in AI player 2."""


@dataclass
class Point:
    """A world position (``pos.x``, ``pos.y``, ``pos.z``), world units."""

    x: float
    y: float
    z: float = 0.0


@dataclass
class RawUnit:
    """One unit as the raw interface reports it (the fields SMAC reads, and a few more).

    Attributes:
        tag: unique id within the game (fresh each episode).
        unit_type: type id (``unit_type_ids``).
        owner: 1 (agents) or 2 (enemy).
        pos: centre, world units.
        health, health_max, shield, shield_max, energy, energy_max: absolute values.
        weapon_cooldown: game loops until the weapon is ready (0 = ready).
        radius: collision radius, world units.
        orders: ``[(ability_id, target)]`` with target a tag or ``(x, y)``; empty when idle.
    """

    tag: int
    unit_type: int
    owner: int
    pos: Point
    health: float
    health_max: float
    shield: float
    shield_max: float
    energy: float
    energy_max: float
    weapon_cooldown: float
    radius: float
    orders: list = field(default_factory=list)


def ally_type_ids(spec: MapSpec) -> dict[str, int]:
    """Emulated ``*_RL`` type id of each ally unit type of ``spec`` (consecutive, SMAC's order)."""
    order = list(spec.ally_type_order) or list(dict.fromkeys(spec.ally_units()))
    return {name: RL_TYPE_ID_BASE + k for k, name in enumerate(order)}


def unit_type_ids(spec: MapSpec) -> list[int]:
    """Type id of every unit of ``spec`` in simulator order (agents, then enemies)."""
    ally = ally_type_ids(spec)
    return [ally[n] for n in spec.ally_units()] + [STOCK_UNIT_TYPE_IDS[n] for n in spec.enemy_units()]


def make_tag(episode_index: int, unit_index: int) -> int:
    """The tag of simulator unit ``unit_index`` in episode ``episode_index`` (module docstring)."""
    return ((int(episode_index) + 1) << 18) | (int(unit_index) + 1)


_RAW_CONSTS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
"""Per simulator: its unit table's constant columns as float64 arrays and the unit type ids (computed once)."""

_ORDER_ABILITY = {1: 16, 2: 23, 3: 386, 4: 23}  # move, attack, heal, attack-move (SMAC's ``actions`` ids)

_SNAP_FIELDS = (
    "pos",
    "health",
    "shield",
    "energy",
    "cooldown",
    "alive",
    "order_kind",
    "order_target",
    "order_point",
    "episode_count",
)


def sim_snapshot(sim, env_index: int = 0) -> dict[str, np.ndarray]:
    """NumPy copies of env ``env_index``'s unit state (one small host copy per field).

    Returns:
        ``pos`` ``[U, 2]`` float32, ``health``/``shield``/``energy``/``cooldown`` ``[U]`` float32,
        ``alive`` ``[U]`` bool, ``order_kind``/``order_target`` ``[U]`` int64, ``order_point``
        ``[U, 2]`` float32 and ``episode_count`` (a 0-d int64).
    """
    st = sim.st
    return {k: getattr(st, k)[env_index].detach().cpu().numpy().copy() for k in _SNAP_FIELDS}


def raw_units_from_snapshot(sim, snap: dict[str, np.ndarray], include_dead: bool = False) -> list[RawUnit]:
    """Raw records of a :func:`sim_snapshot` of ``sim`` (constants come from ``sim.table``).

    Args:
        sim: the ``SMACSim`` the snapshot was taken from.
        snap: :func:`sim_snapshot` output.
        include_dead: also list dead units (health 0, last position). The game lists only live
            units (SMAC relies on that to detect deaths), so the protocol server leaves them out.

    Returns:
        ``RawUnit`` list in simulator order: agents (owner 1, ``*_RL`` ids) then enemies (owner 2).
    """
    t = sim.table
    consts = _RAW_CONSTS.get(sim)
    if consts is None:
        consts = {
            k: getattr(t, k).detach().cpu().numpy().astype(np.float64)
            for k in ("max_health", "max_shield", "energy_max", "radius")
        }
        consts["ids"] = unit_type_ids(sim.spec)
        _RAW_CONSTS[sim] = consts
    ids = consts["ids"]
    episode = int(snap["episode_count"])
    out = []
    for u in range(len(t.names)):
        alive = bool(snap["alive"][u])
        if not alive and not include_dead:
            continue
        kind, orders = int(snap["order_kind"][u]), []
        if alive and kind in _ORDER_ABILITY:
            tgt = int(snap["order_target"][u])
            if kind in (2, 3) and tgt >= 0:
                orders.append((_ORDER_ABILITY[kind], make_tag(episode, tgt)))
            elif kind in (1, 4):
                orders.append((_ORDER_ABILITY[kind], (float(snap["order_point"][u, 0]), float(snap["order_point"][u, 1]))))
        out.append(
            RawUnit(
                tag=make_tag(episode, u),
                unit_type=ids[u],
                owner=OWNER_AGENTS if u < sim.n_agents else OWNER_ENEMY,
                pos=Point(float(snap["pos"][u, 0]), float(snap["pos"][u, 1])),
                health=float(snap["health"][u]) if alive else 0.0,
                health_max=float(consts["max_health"][u]),
                shield=float(snap["shield"][u]),
                shield_max=float(consts["max_shield"][u]),
                energy=float(snap["energy"][u]),
                energy_max=float(consts["energy_max"][u]),
                weapon_cooldown=float(snap["cooldown"][u]),
                radius=float(consts["radius"][u]),
                orders=orders,
            )
        )
    return out


def raw_units_from_sim(sim, env_index: int = 0, include_dead: bool = False) -> list[RawUnit]:
    """The units of env ``env_index`` of a ``SMACSim`` as raw records (see :func:`raw_units_from_snapshot`)."""
    return raw_units_from_snapshot(sim, sim_snapshot(sim, env_index), include_dead)
