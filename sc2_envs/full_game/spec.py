"""One feature and action definition shared by the live env and the replay converter.

Everything a model sees is defined here once: the unit-type, upgrade and raw-function
vocabularies, the per-entity columns, the scalar columns and the action heads with their
argument masks. ``sc2_envs.full_game.convert`` fills these from live
``s2clientprotocol`` observations and ``sc2_envs.replays`` fills the replay-observable
subset from ``.SC2Replay`` files, so a policy trained on replays sees the same inputs when
it plays.

Vocabularies (sources):
    * Raw functions: ``pysc2_evolved.lib.actions.RAW_FUNCTIONS`` (564 entries, ids 0-563,
      identical ids to pysc2 3.0/4.0 and to mini-AlphaStar's action_type head).
    * Unit types: ``pysc2_evolved.lib.units`` enums Neutral, Protoss, Terran, Zerg
      (190 + 44 + 64 + 76 = 374 types), sorted by game unit id; index 0 is reserved for
      "unknown / padding", so the vocabulary has 375 entries.
    * Upgrades: ``pysc2_evolved.lib.upgrades.Upgrades`` (89), sorted by game upgrade id.
    * Game ids by name: ``stableid.json`` from Blizzard/s2client-proto (replays name units
      and upgrades by string; the live API uses the numeric ids).

The vocabularies are built lazily (first call) so that importing this module needs only
numpy.
"""

from __future__ import annotations

import enum
import functools
from dataclasses import dataclass

import numpy as np

from sc2_envs.full_game._deps import require

# --------------------------------------------------------------------------------------
# Entity columns (one row per unit; float32 in the env, int16 on disk for replays).
# AlphaStar's entity encoder (mini-AlphaStar ``entity_encoder.py``) one-hot/binary encodes
# these raw values; the encoding belongs to the model, the env emits raw values.
# --------------------------------------------------------------------------------------
ENTITY_FEATURES: tuple[str, ...] = (
    "unit_type",  # vocabulary index (0 = unknown)
    "alliance",  # s2clientprotocol Alliance: 1 self, 2 ally, 3 neutral, 4 enemy
    "owner",  # player id, 0..16 (16 = neutral in the live API, 0 in replays)
    "x",  # raw grid column, 0..raw_resolution-1
    "y",  # raw grid row (top-left origin, y flipped as in pysc2), 0..raw_resolution-1
    "build_progress",  # 0..1
    "health",
    "health_max",
    "shield",
    "shield_max",
    "energy",
    "energy_max",
    "display_type",  # 1 visible, 2 snapshot, 3 hidden, 4 placeholder
    "cloak",  # 1 cloaked, 2 cloaked detected, 3 not cloaked, 4 cloaked unknown
    "is_powered",
    "is_hallucination",
    "is_active",
    "is_on_screen",
    "is_flying",
    "is_burrowed",
    "is_selected",
    "mineral_contents",
    "vespene_contents",
    "cargo_space_taken",
    "cargo_space_max",
    "assigned_harvesters",
    "ideal_harvesters",
    "weapon_cooldown",  # game loops
    "order_length",
    "order_id_0",  # raw function id of the first order (0 when none or unmapped)
    "order_id_1",
    "order_progress_0",  # 0..1
    "order_progress_1",
    "buff_id_0",  # game buff id (stableid.json "Buffs")
    "buff_id_1",
    "attack_upgrade_level",
    "armor_upgrade_level",
    "shield_upgrade_level",
)
ENTITY_INDEX = {name: i for i, name in enumerate(ENTITY_FEATURES)}

#: The entity columns an engine-free replay converter can fill (from tracker events).
#: Positions are the last known cell (birth, then ``SUnitPositionsEvent`` every 240 loops
#: for units that dealt or took damage), so they are exact for buildings and approximate
#: for moving units; ``build_progress`` is 0 between ``SUnitInitEvent`` and
#: ``SUnitDoneEvent`` and 1 otherwise.
REPLAY_ENTITY_FEATURES: tuple[str, ...] = ("unit_type", "alliance", "owner", "x", "y", "build_progress")

# --------------------------------------------------------------------------------------
# Scalar columns (float32 vector).
# --------------------------------------------------------------------------------------
#: Fields of ``sc2api_pb2.PlayerCommon`` copied into the scalar vector, in this order.
PLAYER_COMMON_FIELDS: tuple[str, ...] = (
    "minerals",
    "vespene",
    "food_used",
    "food_cap",
    "food_workers",
    "food_army",
    "idle_worker_count",
    "army_count",
    "warp_gate_count",
    "larva_count",
)

SCALAR_FEATURES: tuple[str, ...] = (
    "game_loop",  # game loops since the start (22.4 per real second at "faster")
    "home_race",  # 1 Terran, 2 Zerg, 3 Protoss, 4 Random (s2clientprotocol Race)
    "away_race",
    *PLAYER_COMMON_FIELDS,
    "last_action_type",  # general raw function id of the previous action (0 at start)
    "last_delay",  # game loops between the previous two actions, capped at MAX_DELAY
    "last_queued",
)
SCALAR_INDEX = {name: i for i, name in enumerate(SCALAR_FEATURES)}

#: Scalar columns the replay converter fills. ``food_workers`` comes from
#: ``m_scoreValueWorkersActiveCount`` (workers, equal to worker supply for SCV/Probe/Drone);
#: minerals, vespene and food are held between ``SPlayerStatsEvent``s (every 160 loops).
REPLAY_SCALAR_FEATURES: tuple[str, ...] = (
    "game_loop",
    "home_race",
    "away_race",
    "minerals",
    "vespene",
    "food_used",
    "food_cap",
    "food_workers",
    "last_action_type",
    "last_delay",
    "last_queued",
)

#: Minimap planes (uint8), from ``ObservationFeatureLayer.minimap_renders`` (pysc2 layer
#: names). Live only: a replay holds no map terrain, fog or creep.
MINIMAP_FEATURES: tuple[str, ...] = (
    "height_map",
    "visibility_map",
    "creep",
    "camera",
    "player_relative",
    "alerts",
    "pathable",
    "buildable",
)

#: AlphaStar caps the delay head at 128 classes (game loops 0..127).
MAX_DELAY = 127
#: Build order length used by AlphaStar's scalar encoder and z statistics.
BUILD_ORDER_LENGTH = 20

#: Action heads in AlphaStar order; ``argument_masks()`` columns follow it.
ACTION_HEADS: tuple[str, ...] = ("action_type", "delay", "queued", "selected_units", "target_unit", "target_location")

RACES = {"terran": 1, "zerg": 2, "protoss": 3, "random": 4}

# --------------------------------------------------------------------------------------
# Step infos. Every value is a number or a fixed-shape numeric array: Gymnasium's vector envs,
# Stable-Baselines3 and TorchRL turn infos into arrays or tensors, and a string or a list of
# varying length becomes an object array there, or a TypeError. What a code means is named by
# ``InvalidAction`` (ours) and ``action_result_name`` (the game's ActionResult enum).
# --------------------------------------------------------------------------------------
#: Length of ``info["action_errors"]``: the game refuses at most one command per step (FullGame-v0
#: sends one), and the lite engine also reports each Build order refused when its worker arrives at
#: the site, those that do not fit in a later step (the real game reports them in a later
#: observation's ``action_errors``).
MAX_ACTION_ERRORS = 2
#: The padding of ``info["action_errors"]``: no error. s2clientprotocol's ``ActionResult``
#: (``error.proto``) numbers its values from ``Success = 1``, so 0 is never a game's code.
NO_ACTION_ERROR = 0


class InvalidAction(enum.IntEnum):
    """``info["invalid_action"]`` of FullGame-v0: why a well-formed action was played as a no-op.

    The action heads were in range but point at nothing on this observation (the entity rows past
    ``entity_mask``'s real ones are padding); ``NONE`` (0): the action was played. The values the
    message named (the index, the entity count) are the step's own action and observation.
    ``InvalidAction(info["invalid_action"]).name`` gives the name.
    """

    NONE = 0
    SELECTED_UNIT_IS_PADDING = 1
    """a ``selected_units`` index before EOF is a padding row"""
    NO_SELECTED_UNITS = 2
    """a unit command whose ``selected_units`` starts with EOF"""
    TARGET_UNIT_IS_PADDING = 3
    """``target_unit`` of a function that targets a unit is a padding row"""


def action_result_name(code: int) -> str:
    """The name of an ``info["action_errors"]`` code: ``ActionResult`` of s2clientprotocol's
    ``error.proto`` (Blizzard/s2client-proto ``s2clientprotocol/error.proto``: 9 is
    ``"NotEnoughMinerals"``, 44 ``"CantBuildLocationInvalid"``), or ``"None"`` for the padding 0.

    Raises:
        ValueError: ``code`` is not 0 and not an ``ActionResult`` value (1..214 in s2clientprotocol 5.0).
        MissingDependencyError: the full-game extra (``s2clientprotocol``) is not installed.
    """
    if isinstance(code, (bool, np.bool_)) or not isinstance(code, (int, np.integer)):
        raise ValueError(f"code={code!r}; expected an int ActionResult code (0: no error)")
    if int(code) == NO_ACTION_ERROR:
        return "None"
    enum_type = require("s2clientprotocol.error_pb2", "the names of ActionResult codes").ActionResult
    try:
        return enum_type.Name(int(code))
    except ValueError:
        raise ValueError(f"code={int(code)} is not an ActionResult value of s2clientprotocol's error.proto") from None


def step_info(game_loop: int, action_errors=(), invalid_action: int = 0, entities_left_out: int = 0) -> dict:
    """FullGame-v0's ``info`` of a reset or a step (both backends): the same keys every time, each a
    NumPy number or a fixed-shape array, so that TorchRL's ``GymWrapper`` info reader (it takes its keys
    from the reset's info and reads each value's ``.dtype``) and Gymnasium's vector envs stack them.
    ``step`` adds ``"outcome"`` (float, the final reward) when the game ends and ``"episode_limit"``
    (True) when ``game_steps_per_episode`` ends it, both also in ``reward`` and ``truncated``.

    Args:
        game_loop: the game loop after the step.
        action_errors: the ActionResult codes the step's commands were refused with (``pad_action_errors``).
        invalid_action: the ``InvalidAction`` code.
        entities_left_out: the units in view that the observation's ``max_entities`` rows had no room for
            (AlphaStar's cap keeps the first rows in ``entity_order``; 0 when every unit has a row).

    Returns:
        ``{"game_loop": int64, "action_errors": (MAX_ACTION_ERRORS,) int32, "invalid_action": int32,
        "entities_left_out": int32}``.

    Raises:
        ValueError: ``game_loop`` or ``entities_left_out`` is not an int >= 0, ``invalid_action`` is not an int
            ``InvalidAction`` value (a float or a string would be truncated or parsed), or ``pad_action_errors``
            refuses the codes.
    """
    if not _is_int(game_loop) or game_loop < 0:
        raise ValueError(f"game_loop={game_loop!r}; expected an int >= 0")
    if not _is_int(entities_left_out) or not 0 <= entities_left_out <= np.iinfo(np.int32).max:
        raise ValueError(f"entities_left_out={entities_left_out!r}; expected an int in [0, 2**31 - 1]")
    if not _is_int(invalid_action):
        raise ValueError(f"invalid_action={invalid_action!r}; expected an int InvalidAction code")
    return {
        "game_loop": np.int64(game_loop),
        "action_errors": pad_action_errors(action_errors),
        "invalid_action": np.int32(InvalidAction(int(invalid_action))),
        "entities_left_out": np.int32(entities_left_out),
    }


def _is_int(value) -> bool:
    # bool is an int subclass, and np.int32(1.7) would truncate: only Python and NumPy ints pass
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def pad_action_errors(codes) -> np.ndarray:
    """``codes`` (the ActionResult codes a step refused) as ``info["action_errors"]``:
    ``(MAX_ACTION_ERRORS,)`` int32, in order, padded with ``NO_ACTION_ERROR``.

    Raises:
        ValueError: not a sequence of ints, more than ``MAX_ACTION_ERRORS`` codes, or a code of 0 or 1
            (none, Success) or beyond int32.
    """
    top = np.iinfo(np.int32).max
    ok = not isinstance(codes, (str, bytes)) and np.ndim(codes) == 1 and len(codes) <= MAX_ACTION_ERRORS
    if not ok or not all(_is_int(c) and 1 < c <= top for c in codes):
        shown = codes if isinstance(codes, (str, bytes)) or np.ndim(codes) != 1 else [c for c in codes]
        raise ValueError(
            f"action errors {shown!r}; expected at most {MAX_ACTION_ERRORS} ActionResult error codes (ints in [2, {top}])"
        )
    out = np.zeros(MAX_ACTION_ERRORS, np.int32)
    out[: len(codes)] = [int(c) for c in codes]
    return out


# Excluded from the build order (as in mini-AlphaStar / AlphaStar: workers, supply, gas).
_BUILD_ORDER_EXCLUDED = frozenset(
    {
        "SCV",
        "Probe",
        "Drone",
        "SupplyDepot",
        "SupplyDepotLowered",
        "Pylon",
        "Overlord",
        "Refinery",
        "RefineryRich",
        "Assimilator",
        "AssimilatorRich",
        "Extractor",
        "ExtractorRich",
        "Larva",
        "Egg",
        "BroodlingEscort",
    }
)


@dataclass(frozen=True)
class RawFunction:
    """One entry of the 564-way action_type head.

    Attributes:
        id: raw function id (pysc2 ``RAW_FUNCTIONS`` index).
        name: pysc2 name, e.g. ``"Build_Pylon_pt"``.
        ability_id: s2client API ability id (0 for no_op / raw_move_camera).
        general_id: general ability id, or 0 when the function is already general.
        kind: one of ``no_op``, ``move_camera``, ``quick``, ``pt``, ``unit``, ``autocast``.
    """

    id: int
    name: str
    ability_id: int
    general_id: int
    kind: str


_KINDS = {
    "raw_no_op": "no_op",
    "raw_move_camera": "move_camera",
    "raw_cmd": "quick",
    "raw_cmd_pt": "pt",
    "raw_cmd_unit": "unit",
    "raw_autocast": "autocast",
}


@functools.lru_cache(maxsize=1)
def raw_functions() -> tuple[RawFunction, ...]:
    """The 564 raw functions, in id order.

    Returns:
        tuple of ``RawFunction`` with ``result[i].id == i``.

    Raises:
        MissingDependencyError: ``pysc2_evolved`` is not installed.
    """
    actions = require("pysc2_evolved.lib.actions", "the raw-function table")
    out = []
    for f in actions.RAW_FUNCTIONS:
        out.append(
            RawFunction(
                id=int(f.id),
                name=f.name,
                ability_id=int(f.ability_id),
                general_id=int(f.general_id),
                kind=_KINDS[f.function_type.__name__],
            )
        )
    assert all(f.id == i for i, f in enumerate(out))
    return tuple(out)


def num_functions() -> int:
    """Size of the action_type head (564)."""
    return len(raw_functions())


@functools.lru_cache(maxsize=1)
def function_by_ability() -> dict[tuple[int, str], int]:
    """Map ``(ability_id, kind)`` to a raw function id.

    ``kind`` is ``quick``, ``pt``, ``unit`` or ``autocast``. Several functions may share an
    ability and kind only for no_op/move_camera (ability 0), which are excluded.
    """
    out: dict[tuple[int, str], int] = {}
    for f in raw_functions():
        if f.ability_id == 0:
            continue
        out.setdefault((f.ability_id, f.kind), f.id)
    return out


@functools.lru_cache(maxsize=1)
def general_function_ids() -> np.ndarray:
    """For each raw function, the id of its general function (itself when already general).

    This matches pysc2's ``hide_specific_actions=True``: e.g. ``Harvest_Gather_Probe_unit``
    maps to ``Harvest_Gather_unit``.

    Returns:
        ``(num_functions,)`` int64.
    """
    by_ability = function_by_ability()
    out = np.arange(num_functions(), dtype=np.int64)
    for f in raw_functions():
        if f.general_id:
            out[f.id] = by_ability.get((f.general_id, f.kind), f.id)
    return out


@functools.lru_cache(maxsize=1)
def argument_masks() -> np.ndarray:
    """Which heads each action type uses (mini-AlphaStar ``get_mask_by_raw_action_id``).

    Returns:
        ``(num_functions, 6)`` int8 over ``ACTION_HEADS``: action_type and delay are always
        1; queued for commands, selected_units for unit commands and autocast,
        target_unit for ``*_unit`` functions, target_location for ``*_pt`` and
        ``raw_move_camera``.
    """
    masks = np.zeros((num_functions(), len(ACTION_HEADS)), dtype=np.int8)
    masks[:, 0] = 1
    masks[:, 1] = 1
    for f in raw_functions():
        if f.kind in ("quick", "pt", "unit"):
            masks[f.id, 2] = 1
            masks[f.id, 3] = 1
        if f.kind == "autocast":
            masks[f.id, 3] = 1
        if f.kind == "unit":
            masks[f.id, 4] = 1
        if f.kind in ("pt", "move_camera"):
            masks[f.id, 5] = 1
    return masks


@functools.lru_cache(maxsize=1)
def unit_type_ids() -> np.ndarray:
    """Game unit ids of the vocabulary; position ``i + 1`` is the one-hot index.

    Returns:
        ``(374,)`` int64, sorted ascending (Neutral, Protoss, Terran, Zerg from pysc2_evolved).
    """
    units = require("pysc2_evolved.lib.units", "the unit-type vocabulary")
    ids = sorted({int(u) for race in (units.Neutral, units.Protoss, units.Terran, units.Zerg) for u in race})
    return np.asarray(ids, dtype=np.int64)


def num_unit_types() -> int:
    """Unit-type vocabulary size including index 0 (unknown / padding)."""
    return len(unit_type_ids()) + 1


@functools.lru_cache(maxsize=1)
def unit_type_lookup() -> np.ndarray:
    """Dense table from game unit id to vocabulary index (0 for unknown ids).

    Returns:
        ``(max_id + 1,)`` int64.
    """
    ids = unit_type_ids()
    table = np.zeros(int(ids.max()) + 1, dtype=np.int64)
    table[ids] = np.arange(1, len(ids) + 1)
    return table


def unit_type_index(game_unit_id: int) -> int:
    """Vocabulary index of a game unit id, 0 when the id is not in the vocabulary."""
    table = unit_type_lookup()
    return int(table[game_unit_id]) if 0 <= game_unit_id < len(table) else 0


@functools.lru_cache(maxsize=1)
def upgrade_ids() -> np.ndarray:
    """Game upgrade ids of the upgrade vocabulary (``(89,)`` int64, ascending)."""
    upgrades = require("pysc2_evolved.lib.upgrades", "the upgrade vocabulary")
    return np.asarray(sorted(int(u) for u in upgrades.Upgrades), dtype=np.int64)


def upgrade_index(game_upgrade_id: int) -> int:
    """Position of a game upgrade id in ``upgrade_ids()``, or -1 when absent."""
    ids = upgrade_ids()
    pos = int(np.searchsorted(ids, game_upgrade_id))
    return pos if pos < len(ids) and ids[pos] == game_upgrade_id else -1


@functools.lru_cache(maxsize=1)
def build_order_excluded_ids() -> frozenset[int]:
    """Game unit ids skipped by the build order (workers, supply, gas buildings, larva)."""
    units = require("pysc2_evolved.lib.units", "the unit-type vocabulary")
    out = set()
    for race in (units.Protoss, units.Terran, units.Zerg):
        for u in race:
            if u.name in _BUILD_ORDER_EXCLUDED:
                out.add(int(u))
    return frozenset(out)


def race_id(race: str) -> int:
    """s2clientprotocol ``Race`` value of a race name.

    Raises:
        ValueError: ``race`` is not one of ``terran``, ``zerg``, ``protoss``, ``random``.
    """
    key = str(race).lower()
    if key not in RACES:
        raise ValueError(f"race={race!r} is not a known race; expected one of {sorted(RACES)}")
    return RACES[key]


# --------------------------------------------------------------------------------------
# Geometry and entity order (shared by the env and the replay converter).
# --------------------------------------------------------------------------------------
def world_to_grid(x, y, map_size: tuple[int, int], resolution: int) -> tuple[np.ndarray, np.ndarray]:
    """World position (game units) to the raw grid used by entities and target_location.

    pysc2's raw transform without cropping: ``col = floor(x * R / max(W, H))``,
    ``row = floor((H - y) * R / max(W, H))`` (y flipped to a top-left origin), clipped to
    ``[0, R - 1]``.

    Args:
        x, y: scalars or arrays, game units (1 unit = 1 map cell).
        map_size: ``(W, H)`` in cells (``StartRaw.map_size`` live, ``m_mapSizeX/Y`` in replays).
        resolution: raw resolution R (grid cells per side).

    Returns:
        ``(col, row)`` int64 arrays.

    Raises:
        ValueError: non-positive map size or resolution.
    """
    w, h = map_size
    if w <= 0 or h <= 0 or resolution <= 0:
        raise ValueError(f"map_size={map_size!r} and resolution={resolution!r} must be positive")
    scale = resolution / max(w, h)
    col = np.floor(np.asarray(x, dtype=np.float64) * scale).astype(np.int64)
    row = np.floor((h - np.asarray(y, dtype=np.float64)) * scale).astype(np.int64)
    return np.clip(col, 0, resolution - 1), np.clip(row, 0, resolution - 1)


def grid_to_world(col: int, row: int, map_size: tuple[int, int], resolution: int) -> tuple[float, float]:
    """Centre of a raw grid cell in game units (inverse of ``world_to_grid``).

    Raises:
        ValueError: ``col``/``row`` outside ``[0, resolution)``.
    """
    if not (0 <= col < resolution and 0 <= row < resolution):
        raise ValueError(f"target_location=({col}, {row}) is outside the raw grid [0, {resolution})")
    w, h = map_size
    cell = max(w, h) / resolution
    return (col + 0.5) * cell, h - (row + 0.5) * cell


_ALLIANCE_RANK = {1: 0, 2: 1, 4: 2, 3: 3}  # self, ally, enemy, neutral


def entity_order(alliance: np.ndarray, tags: np.ndarray) -> np.ndarray:
    """Order in which units become entity rows: own units, allies, enemies, neutral; then tag.

    The same order is used live and in replays, so entity indices in action labels
    (selected_units, target_unit) mean the same thing in both.

    Args:
        alliance: ``(U,)`` int, s2clientprotocol Alliance values.
        tags: ``(U,)`` uint64/int64 unit tags.

    Returns:
        ``(U,)`` int64 permutation.
    """
    rank = np.asarray([_ALLIANCE_RANK.get(int(a), 4) for a in alliance], dtype=np.int64)
    return np.lexsort((np.asarray(tags, dtype=np.uint64), rank)).astype(np.int64)


class BuildOrderTracker:
    """First ``BUILD_ORDER_LENGTH`` own unit types created after the first observation.

    Workers, supply providers, gas buildings and larva are skipped (AlphaStar's build order
    statistic). Feed it the own units of every observation; units seen in the first call
    (the starting base and workers) are never counted.
    """

    def __init__(self) -> None:
        self._seen: set[int] = set()
        self._started = False
        self.order: list[int] = []

    def update(self, tags, unit_type_game_ids) -> None:
        """Record own units ``tags`` (iterable of int) with their game unit ids."""
        excluded = build_order_excluded_ids()
        for tag, uid in zip(tags, unit_type_game_ids, strict=True):
            tag = int(tag)
            if tag in self._seen:
                continue
            self._seen.add(tag)
            if self._started and int(uid) not in excluded and len(self.order) < BUILD_ORDER_LENGTH:
                self.order.append(unit_type_index(int(uid)))
        self._started = True

    def as_array(self) -> np.ndarray:
        """``(BUILD_ORDER_LENGTH,)`` int64 vocabulary indices, 0-padded."""
        out = np.zeros(BUILD_ORDER_LENGTH, dtype=np.int64)
        out[: len(self.order)] = self.order
        return out
