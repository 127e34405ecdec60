"""Registry of the SMAC v1 maps: rosters, episode limits, spawn points, enemy orders, terrain.

Source: oxwhirl/smac d6aab33 ``smac/env/starcraft2/maps/smac_maps.py`` (``map_param_registry``:
unit counts, episode limits, races, ``unit_type_bits``, ``map_type``) and each map's SC2Map archive
(``MapScript.galaxy`` spawn points and enemy orders, ``MapInfo`` 32x32 playable area; the terrain
grids ``t3CellFlags``, ``t3SyncCliffLevel`` and ``t3SyncHeightMap`` via ``scripts/derive_terrain.py``
into ``sc2_envs/data/smac_terrain.npz``). Where the map file leaves a detail to the engine (the clump
placement of a spawn group, how a unit picks its target from an ordered unit group),
``docs/deviations.md`` says what we chose.

Coordinates are world units, x to the right and y up, on a 32x32 map; ``pathing[x, y]`` is the
cell ``[x, x+1) x [y, y+1)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from functools import cache
from pathlib import Path

import numpy as np

from sc2_envs.units import UNITS
from sc2_envs.validation import did_you_mean

MAP_SIZE = 32
"""All SMAC maps are 32x32 with the playable area equal to the full map (MapInfo bounds)."""
ENEMY_ORDERS = ("attack_move", "attack_allies")
"""The enemy orders found in the SMAC map scripts (see ``MapSpec.enemy_order``)."""
RACES = ("T", "P", "Z")
OVERRIDABLE_STATS = (
    "health",
    "shield",
    "armor",
    "attacks",
    "cooldown",
    "range",
    "speed",
    "radius",
    "no_collision",
    "static",
    "life_regen",
    "energy_start",
    "energy_max",
    "energy_regen",
    "heal_rate",
    "heal_energy_cost",
    "heal_range",
    "splash_radius",
    "smac_max_cooldown",
    "attack_target_priority",
    "acceleration",
)
"""Unit stats a map may override (``MapSpec.unit_overrides``): the ones the simulator's unit table reads
through :meth:`MapSpec.unit_stat` (``sim.state.UnitTable.build``). Others (``damage``, ``bonus_*``,
``attributes``, ``is_air``, ``hits_air``, ``splash``, ...) come from the unit's own data and are refused
rather than silently ignored."""


def _is_count(v) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


def _is_number(v) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_))


def _check_unit(where: str, what: str, unit) -> None:
    if not isinstance(unit, str) or unit not in UNITS:
        raise ValueError(
            f"{where}: {what} {unit!r}{did_you_mean(unit, UNITS)} is not a known unit type; expected one of {sorted(UNITS)}"
        )


def _check_point(where: str, what: str, point) -> None:
    ok = isinstance(point, (tuple, list)) and len(point) == 2 and all(_is_number(v) and math.isfinite(v) for v in point)
    if not ok or not all(0.0 <= float(v) < MAP_SIZE for v in point):
        raise ValueError(
            f"{where}: {what} {point!r}; expected (x, y) numbers on the {MAP_SIZE}x{MAP_SIZE} map (0 <= x, y < {MAP_SIZE})"
        )


TERRAIN_FILE = Path(__file__).resolve().parent / "data" / "smac_terrain.npz"
"""Grids derived from SMAC's map archives by ``scripts/derive_terrain.py`` (see the README beside it)."""
CLIFF_STEP = 64
"""Cliff levels of plateaus are multiples of 64 (``t3SyncCliffLevel``); ramp cells lie in between."""


@dataclass(frozen=True)
class SpawnGroup:
    """``count`` units of type ``unit`` created at point ``(x, y)`` (SMAC's ``gf_Spawn``)."""

    unit: str
    count: int
    x: float
    y: float


@dataclass(frozen=True)
class MapSpec:
    """Static description of one SMAC map.

    Attributes:
        name: SMAC map name.
        allies, enemies: spawn groups, in SMAC's agent / enemy id order (agents are sorted by
            type in ``ally_type_order``, then by position, as SMAC's ``init_units`` does).
        episode_limit: time limit in env steps (1 env step = 8 game loops).
        a_race, b_race: ``"T"``, ``"P"`` or ``"Z"`` for the ally and enemy side.
        unit_type_bits: SMAC's ``unit_type_bits`` (length of the type one-hot).
        map_type: SMAC's ``map_type`` (``"marines"``, ``"stalkers_and_zealots"``, ``"MMM"``, ...).
        ally_type_order: unit types in ally one-hot order (``unit_type - min ally custom id``).
        enemy_type_order: unit types in enemy one-hot order; on stalkers-and-zealots maps this is
            SMAC's swapped order (zealot=0, stalker=1, from ``unit_type - 73``).
        attack_point: enemy attack-move target; ``None`` when the map gives no attack-move order.
        attack_segment: if set, the attack point is drawn uniformly on this segment per episode
            (2m_vs_1z: "a random point between the two marine points").
        terrain: name of the terrain grids, see :func:`terrain_grids`: a SMAC map's own name (grids
            derived from its archive) or one of the synthetic outlines for custom maps.
        enemy_order: the order the map script (``gf_EnemyAttack``) gives every enemy after each
            spawn: ``"attack_move"`` (``OrderTargetingPoint(AbilityCommand("attack"), point)``, to
            ``attack_point``; no order at all when ``attack_point`` is ``None``, as on 2s_vs_1sc) or
            ``"attack_allies"`` (``OrderTargetingUnitGroup(AbilityCommand("attack"), gv_allies)``:
            attack the group of every ally unit, 2c_vs_64zg).
        unit_overrides: per-map stat overrides, e.g. ``{"hydralisk": {"health": 80}}``.
    """

    name: str
    allies: tuple[SpawnGroup, ...]
    enemies: tuple[SpawnGroup, ...]
    episode_limit: int
    a_race: str
    b_race: str
    unit_type_bits: int
    map_type: str
    ally_type_order: tuple[str, ...]
    enemy_type_order: tuple[str, ...]
    attack_point: tuple[float, float] | None
    terrain: str
    attack_segment: tuple[tuple[float, float], tuple[float, float]] | None = None
    unit_overrides: dict = field(default_factory=dict)
    enemy_order: str = "attack_move"

    def __post_init__(self):
        """Check every field (a custom map is a user's input): ValueError naming the field, the value and what is expected."""
        where = f"map {self.name!r}"
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"MapSpec name must be a non-empty string, got {self.name!r}")
        if self.enemy_order not in ENEMY_ORDERS:
            raise ValueError(f"{where}: enemy_order {self.enemy_order!r}, expected one of {ENEMY_ORDERS}")
        for side in ("allies", "enemies"):
            groups = getattr(self, side)
            if not isinstance(groups, (tuple, list)) or not groups:
                raise ValueError(f"{where}: {side} must be a non-empty tuple of SpawnGroup, got {groups!r}")
            for g in groups:
                if not isinstance(g, SpawnGroup):
                    raise ValueError(f"{where}: {side} must hold SpawnGroup entries, got {g!r}")
                _check_unit(where, f"{side} unit", g.unit)
                if not _is_count(g.count) or g.count < 1:
                    raise ValueError(f"{where}: {side} group of {g.unit} has count {g.count!r}; expected an int >= 1")
                _check_point(where, f"{side} spawn point of {g.unit}", (g.x, g.y))
        if not _is_count(self.episode_limit) or self.episode_limit < 1:
            raise ValueError(f"{where}: episode_limit {self.episode_limit!r}; expected an int >= 1 (env steps)")
        for side in ("a_race", "b_race"):
            if getattr(self, side) not in RACES:
                raise ValueError(f"{where}: {side} {getattr(self, side)!r}; expected one of {RACES}")
        if not _is_count(self.unit_type_bits) or self.unit_type_bits < 0:
            raise ValueError(f"{where}: unit_type_bits {self.unit_type_bits!r}; expected an int >= 0")
        for side, units in (("ally_type_order", self.ally_units()), ("enemy_type_order", self.enemy_units())):
            order = getattr(self, side)
            if isinstance(order, str) or not isinstance(order, (tuple, list)):
                raise ValueError(f"{where}: {side} {order!r}; expected a tuple of unit type names")
            for unit in order:
                _check_unit(where, side, unit)
            missing = sorted({u for u in units if u not in order})
            if self.unit_type_bits > 0 and missing:  # the type one-hot is the unit's index in this order
                raise ValueError(
                    f"{where}: {side} {tuple(order)!r} lacks {missing}, which the map spawns; with unit_type_bits="
                    f"{self.unit_type_bits} every spawned type needs its place in the order"
                )
        if not isinstance(self.map_type, str):
            raise ValueError(f"{where}: map_type {self.map_type!r}; expected a str such as 'marines'")
        if self.attack_point is not None:
            _check_point(where, "attack_point", self.attack_point)
        if self.attack_segment is not None:
            if not isinstance(self.attack_segment, (tuple, list)) or len(self.attack_segment) != 2:
                raise ValueError(f"{where}: attack_segment {self.attack_segment!r}; expected two (x, y) points or None")
            for end in self.attack_segment:
                _check_point(where, "attack_segment end", end)
        if not isinstance(self.unit_overrides, dict):
            raise ValueError(f"{where}: unit_overrides must be a dict {{unit: {{stat: value}}}}, got {self.unit_overrides!r}")
        for unit, stats in self.unit_overrides.items():
            _check_unit(where, "unit_overrides key", unit)
            if not isinstance(stats, dict):
                raise ValueError(f"{where}: unit_overrides[{unit!r}] = {stats!r}; expected a dict {{stat: value}}")
            for stat, value in stats.items():
                if stat not in OVERRIDABLE_STATS:
                    known = [f.name for f in fields(UNITS[unit])]
                    what = "is a unit stat the simulator takes from the unit's data" if stat in known else "is not a unit stat"
                    raise ValueError(
                        f"{where}: unit_overrides[{unit!r}] stat {stat!r}{did_you_mean(stat, OVERRIDABLE_STATS)} {what}; "
                        f"a map may override {list(OVERRIDABLE_STATS)}"
                    )
                if isinstance(getattr(UNITS[unit], stat), bool):
                    if not isinstance(value, (bool, np.bool_)):
                        raise ValueError(f"{where}: unit_overrides[{unit!r}][{stat!r}] = {value!r}; expected a bool")
                elif not _is_number(value) or not math.isfinite(value) or value < 0 or (stat == "health" and value <= 0):
                    raise ValueError(
                        f"{where}: unit_overrides[{unit!r}][{stat!r}] = {value!r}; expected a finite number >= 0"
                        f"{' (> 0 for health)' if stat == 'health' else ''}"
                    )

    @property
    def n_agents(self) -> int:
        return sum(g.count for g in self.allies)

    @property
    def n_enemies(self) -> int:
        return sum(g.count for g in self.enemies)

    @property
    def n_actions(self) -> int:
        """SMAC's ``n_actions = 6 + n_enemies`` (no-op, stop, 4 moves, one attack per enemy)."""
        return 6 + self.n_enemies

    def ally_units(self) -> list[str]:
        """Unit type of each agent, in agent id order."""
        return [g.unit for g in self.allies for _ in range(g.count)]

    def enemy_units(self) -> list[str]:
        """Unit type of each enemy, in enemy id order."""
        return [g.unit for g in self.enemies for _ in range(g.count)]

    def unit_stat(self, unit: str, stat: str) -> float:
        """A unit stat with this map's override applied (e.g. Hydralisk_RL health 80)."""
        return self.unit_overrides.get(unit, {}).get(stat, getattr(UNITS[unit], stat))


# Shared spawn and attack points of the symmetric SMAC maps (MapScript.galaxy: "Team 1"/"Team 2").
_A = (9.0, 16.0)
_E = (23.0, 16.0)
_SZ_ALLY = ("stalker", "zealot")
_SZ_ENEMY = ("zealot", "stalker")  # SMAC: enemy type id = unit_type - 73 -> zealot 0, stalker 1
_MMM = ("marauder", "marine", "medivac")
_CSZ = ("colossus", "stalker", "zealot")


def _groups(spec: list[tuple[str, int]], point: tuple[float, float]) -> tuple[SpawnGroup, ...]:
    return tuple(SpawnGroup(u, n, point[0], point[1]) for u, n in spec)


def _symmetric(name, ally, enemy, limit, race, utb, map_type, ally_order=(), enemy_order=()):
    return MapSpec(
        name=name,
        allies=_groups(ally, _A),
        enemies=_groups(enemy, _E),
        episode_limit=limit,
        a_race=race,
        b_race=race,
        unit_type_bits=utb,
        map_type=map_type,
        ally_type_order=tuple(ally_order),
        enemy_type_order=tuple(enemy_order),
        attack_point=_A,
        terrain=name,
    )


def _marines(n_a: int, n_e: int, limit: int) -> MapSpec:
    name = f"{n_a}m" if n_a == n_e else f"{n_a}m_vs_{n_e}m"
    return _symmetric(name, [("marine", n_a)], [("marine", n_e)], limit, "T", 0, "marines")


_MAP_LIST: list[MapSpec] = [
    _marines(3, 3, 60),
    _marines(8, 8, 120),
    _marines(25, 25, 150),
    _marines(5, 6, 70),
    _marines(8, 9, 120),
    _marines(10, 11, 150),
    _marines(27, 30, 180),
    _symmetric(
        "2s3z",
        [("stalker", 2), ("zealot", 3)],
        [("stalker", 2), ("zealot", 3)],
        120,
        "P",
        2,
        "stalkers_and_zealots",
        _SZ_ALLY,
        _SZ_ENEMY,
    ),
    _symmetric(
        "3s5z",
        [("stalker", 3), ("zealot", 5)],
        [("stalker", 3), ("zealot", 5)],
        150,
        "P",
        2,
        "stalkers_and_zealots",
        _SZ_ALLY,
        _SZ_ENEMY,
    ),
    _symmetric(
        "3s5z_vs_3s6z",
        [("stalker", 3), ("zealot", 5)],
        [("stalker", 3), ("zealot", 6)],
        170,
        "P",
        2,
        "stalkers_and_zealots",
        _SZ_ALLY,
        _SZ_ENEMY,
    ),
    _symmetric(
        "1c3s5z",
        [("colossus", 1), ("stalker", 3), ("zealot", 5)],
        [("colossus", 1), ("stalker", 3), ("zealot", 5)],
        180,
        "P",
        3,
        "colossi_stalkers_zealots",
        _CSZ,
        _CSZ,
    ),
    _symmetric(
        "MMM",
        [("marauder", 2), ("marine", 7), ("medivac", 1)],
        [("marauder", 2), ("marine", 7), ("medivac", 1)],
        150,
        "T",
        3,
        "MMM",
        _MMM,
        _MMM,
    ),
    _symmetric(
        "MMM2",
        [("marauder", 2), ("marine", 7), ("medivac", 1)],
        [("marauder", 3), ("marine", 8), ("medivac", 1)],
        180,
        "T",
        3,
        "MMM",
        _MMM,
        _MMM,
    ),
    _symmetric("3s_vs_3z", [("stalker", 3)], [("zealot", 3)], 150, "P", 0, "stalkers"),
    _symmetric("3s_vs_4z", [("stalker", 3)], [("zealot", 4)], 200, "P", 0, "stalkers"),
    _symmetric("3s_vs_5z", [("stalker", 3)], [("zealot", 5)], 250, "P", 0, "stalkers"),
    MapSpec(
        name="2m_vs_1z",
        allies=(SpawnGroup("marine", 1, 13.0, 12.0), SpawnGroup("marine", 1, 19.0, 12.0)),
        enemies=(SpawnGroup("zealot", 1, 16.0, 19.0),),
        episode_limit=150,
        a_race="T",
        b_race="P",
        unit_type_bits=0,
        map_type="marines",
        ally_type_order=(),
        enemy_type_order=(),
        attack_point=(16.0, 12.0),
        attack_segment=((13.0, 12.0), (19.0, 12.0)),
        terrain="2m_vs_1z",
    ),
    MapSpec(
        name="2s_vs_1sc",
        allies=(SpawnGroup("stalker", 1, 11.12, 10.34), SpawnGroup("stalker", 1, 16.98, 10.37)),
        enemies=(SpawnGroup("spine_crawler", 1, 13.92, 20.04),),
        episode_limit=300,
        a_race="P",
        b_race="Z",
        unit_type_bits=0,
        map_type="stalkers",
        ally_type_order=(),
        enemy_type_order=(),
        attack_point=None,
        terrain="2s_vs_1sc",
    ),
    MapSpec(
        name="6h_vs_8z",
        allies=(SpawnGroup("hydralisk", 6, 14.60, 9.49),),
        enemies=(SpawnGroup("zealot", 8, 14.41, 16.76),),
        episode_limit=150,
        a_race="Z",
        b_race="P",
        unit_type_bits=0,
        map_type="hydralisks",
        ally_type_order=(),
        enemy_type_order=(),
        attack_point=(14.60, 9.49),
        terrain="6h_vs_8z",
        unit_overrides={"hydralisk": {"health": 80.0}},
    ),
    MapSpec(
        name="corridor",
        allies=(SpawnGroup("zealot", 6, 19.04, 19.12),),
        enemies=(SpawnGroup("zergling", 24, 27.91, 28.24),),
        episode_limit=400,
        a_race="P",
        b_race="Z",
        unit_type_bits=0,
        map_type="zealots",
        ally_type_order=(),
        enemy_type_order=(),
        attack_point=(4.47, 4.33),
        terrain="corridor",
    ),
    MapSpec(
        name="so_many_baneling",
        allies=(SpawnGroup("zealot", 7, 11.47, 12.02),),
        enemies=(SpawnGroup("baneling", 32, 27.91, 28.24),),
        episode_limit=100,
        a_race="P",
        b_race="Z",
        unit_type_bits=0,
        map_type="zealots",
        ally_type_order=(),
        enemy_type_order=(),
        attack_point=(4.47, 4.33),
        terrain="so_many_baneling",
    ),
    MapSpec(
        name="bane_vs_bane",
        allies=(SpawnGroup("baneling", 4, 16.0, 8.0), SpawnGroup("zergling", 20, 16.0, 11.0)),
        enemies=(SpawnGroup("zergling", 20, 16.0, 21.0), SpawnGroup("baneling", 4, 16.0, 24.0)),
        episode_limit=200,
        a_race="Z",
        b_race="Z",
        unit_type_bits=2,
        map_type="bane",
        ally_type_order=("baneling", "zergling"),
        enemy_type_order=("baneling", "zergling"),
        attack_point=(16.0, 8.0),
        terrain="bane_vs_bane",
    ),
    MapSpec(
        name="2c_vs_64zg",
        allies=(SpawnGroup("colossus", 2, 16.0, 16.0),),
        enemies=(SpawnGroup("zergling", 64, 16.0, 9.0),),
        episode_limit=400,
        a_race="P",
        b_race="Z",
        unit_type_bits=0,
        map_type="colossus",
        ally_type_order=(),
        enemy_type_order=(),
        attack_point=None,
        terrain="2c_vs_64zg",
        enemy_order="attack_allies",
    ),
]

MAPS: dict[str, MapSpec] = {m.name: m for m in _MAP_LIST}
"""Every SMAC v1 map, keyed by SMAC's map name."""


MAP_KINDS = ("smac", "smacv2", "all")


def list_maps(kind: str = "smac") -> list[str]:
    """Names of the maps / scenarios the simulator supports, sorted.

    Args:
        kind: ``"smac"`` (default): the SMAC v1 maps (and custom maps added by ``register_map``);
            ``"smacv2"``: the SMACv2 scenarios (``sc2_envs.smacv2.list_scenarios()``, e.g.
            ``protoss_5_vs_5``); ``"all"``: both, v1 maps first.

    Raises:
        ValueError: another ``kind``.
    """
    if kind == "smac":
        return sorted(MAPS)
    from sc2_envs.smacv2 import list_scenarios

    if kind == "smacv2":
        return list_scenarios()
    if kind == "all":
        return sorted(MAPS) + list_scenarios()
    raise ValueError(f"list_maps(kind={kind!r}); expected one of {MAP_KINDS}")


def get_map(name: str) -> MapSpec:
    """Return the spec of map ``name``.

    Raises:
        ValueError: if ``name`` is not a SMAC v1 map; the message suggests the closest name and lists the valid ones.
    """
    if not isinstance(name, str) or name not in MAPS:
        raise ValueError(f"unknown map {name!r}{did_you_mean(name, MAPS)}; expected one of: {', '.join(list_maps())}")
    return MAPS[name]


def register_map(spec: MapSpec) -> None:
    """Add a custom map (same rules as the SMAC maps) to the registry.

    Raises:
        ValueError: if the name is taken or a unit type is unknown.
    """
    if spec.name in MAPS:
        raise ValueError(f"map {spec.name!r} already exists")
    for g in spec.allies + spec.enemies:
        if g.unit not in UNITS:
            raise ValueError(f"unknown unit type {g.unit!r} in map {spec.name!r}; expected one of {sorted(UNITS)}")
    MAPS[spec.name] = spec


@dataclass(frozen=True)
class TerrainGrids:
    """The static terrain of one map; every array is ``[32, 32]`` indexed ``[x, y]`` (y up).

    Attributes:
        pathing: bool, cells ground units may stand on (SC2's pathing grid). For the SMAC maps:
            the cliff faces (one cell on each side of every change of plateau) and the ground the
            editor marks unpathable (``t3CellFlags`` bit 0) are closed; see
            ``scripts/derive_terrain.py``.
        cliff_level: uint16 ``t3SyncCliffLevel``: plateaus at multiples of ``CLIFF_STEP`` (0, 64,
            128), ramp cells in between (72, 88, 104 on 2c_vs_64zg).
        height: uint8 terrain-height byte per cell as the SC2 API reports it in
            ``GameInfo.start_raw.terrain_height`` (world height ``z = -16 + 32 * byte / 255``;
            BurnySc2/python-sc2 ``sc2/bot_ai.py`` ``get_terrain_z_height``). Plateau 64 is 191
            (z = 8), plateau 128 is 207 (z = 10).
        cliff_walkable: bool, cells a cliff-walking unit (the colossus) may stand on: ``pathing``
            plus the cliff faces between two pathable plateaus (a face cell with pathable cells of
            two different plateaus within two cells). Unpathable ground away from cliffs stays
            closed.
    """

    pathing: np.ndarray
    cliff_level: np.ndarray
    height: np.ndarray
    cliff_walkable: np.ndarray


def _plateau(level: np.ndarray) -> np.ndarray:
    """Plateau index of each cell: ``round(level / 64)`` (ramp cells join the nearer plateau)."""
    return np.floor(level.astype(np.float64) / CLIFF_STEP + 0.5).astype(np.int64)


def _cliff_faces(pathing: np.ndarray, level: np.ndarray) -> np.ndarray:
    """Unpathable cells above level 0 with pathable cells of two plateaus within Chebyshev distance 2."""
    plat = _plateau(level)
    n = pathing.shape[0]
    lo = np.full(pathing.shape, np.iinfo(np.int64).max)
    hi = np.full(pathing.shape, np.iinfo(np.int64).min)
    big = np.where(pathing, plat, np.iinfo(np.int64).max)
    small = np.where(pathing, plat, np.iinfo(np.int64).min)
    pad_big = np.pad(big, 2, constant_values=np.iinfo(np.int64).max)
    pad_small = np.pad(small, 2, constant_values=np.iinfo(np.int64).min)
    for dx in range(5):
        for dy in range(5):
            lo = np.minimum(lo, pad_big[dx : dx + n, dy : dy + n])
            hi = np.maximum(hi, pad_small[dx : dx + n, dy : dy + n])
    return ~pathing & (level > 0) & (hi > lo) & (lo != np.iinfo(np.int64).max)


def _outline(terrain: str) -> np.ndarray | None:
    """Synthetic walkable outlines for custom maps (the pre-archive approximations of SMAC's maps)."""
    x, y = np.meshgrid(np.arange(MAP_SIZE) + 0.5, np.arange(MAP_SIZE) + 0.5, indexing="ij")
    outlines = {
        "band": lambda: (y > 7) & (y < 25),
        "full": lambda: np.ones_like(x, dtype=bool),
        "octagon": lambda: (x > 5) & (x < 27) & (y > 5) & (y < 27) & (np.abs(x - 16) + np.abs(y - 16) < 16),
        "column": lambda: (x > 7) & (x < 21) & (y > 7) & (y < 25),
        "box": lambda: (x > 6.5) & (x < 22.5) & (y > 5) & (y < 19.5) & (np.abs(x - 14.5) + np.abs(y - 12.25) < 13),
        "near_full": lambda: (x > 1) & (x < 31) & (y > 1) & (y < 31),
        "band_low": lambda: (y > 5) & (y < 21),
    }
    return outlines[terrain]() if terrain in outlines else None


SYNTHETIC_OUTLINES = ("band", "full", "octagon", "column", "box", "near_full", "band_low")
"""Flat outlines for custom maps: one plateau (level 64, height byte 191) surrounded by level 0."""


@cache
def _archive_grids() -> dict[str, np.ndarray]:
    if not TERRAIN_FILE.is_file():
        raise FileNotFoundError(f"terrain data {TERRAIN_FILE} is missing; regenerate it with scripts/derive_terrain.py")
    with np.load(TERRAIN_FILE) as f:
        return {k: f[k] for k in f.files}


@cache
def terrain_grids(terrain: str) -> TerrainGrids:
    """The terrain grids named ``terrain`` (read-only arrays; copy before modifying).

    ``terrain`` is a SMAC map name (grids derived from that map's archive, oxwhirl/smac
    ``smac/env/starcraft2/maps/SMAC_Maps/<map>.SC2Map``, by ``scripts/derive_terrain.py``) or one of
    ``SYNTHETIC_OUTLINES`` for custom maps.

    Raises:
        ValueError: for a name that is neither.
    """
    data = _archive_grids()
    if f"{terrain}/pathing" in data:
        pathing = data[f"{terrain}/pathing"].astype(bool)
        level = data[f"{terrain}/cliff_level"].astype(np.uint16)
        height = data[f"{terrain}/height"].astype(np.uint8)
    else:
        grid = _outline(terrain) if terrain in SYNTHETIC_OUTLINES else None
        if grid is None:
            names = sorted({k.split("/")[0] for k in data})
            raise ValueError(
                f"unknown terrain {terrain!r}; expected a SMAC map ({', '.join(names)}) or a "
                f"synthetic outline ({', '.join(SYNTHETIC_OUTLINES)})"
            )
        pathing = grid
        level = np.where(grid, CLIFF_STEP, 0).astype(np.uint16)
        height = np.where(grid, 191, 135).astype(np.uint8)
    cliff_walkable = pathing | _cliff_faces(pathing, level)
    for a in (pathing, level, height, cliff_walkable):
        a.setflags(write=False)
    return TerrainGrids(pathing, level, height, cliff_walkable)


def pathing_grid(terrain: str) -> np.ndarray:
    """Walkable cells of ground units, a ``[32, 32]`` bool array indexed ``[x, y]`` (a fresh copy).

    See :func:`terrain_grids` for the names accepted and the source of the grids.

    Raises:
        ValueError: for an unknown terrain name.
    """
    return terrain_grids(terrain).pathing.copy()


_NEIGHBOURS = ((1, 0), (-1, 0), (0, 1), (0, -1), (1, 1), (1, -1), (-1, 1), (-1, -1))
"""The 8 moves of the ground path graph, axis moves first."""


def ground_edges(terrain: str) -> np.ndarray:
    """``[8, 32, 32]`` bool: whether a ground unit may step from cell ``(x, y)`` to its neighbour ``k``.

    Both cells walkable, cliff levels less than ``CLIFF_STEP / 2`` apart (plateaus connect only
    through ramp cells), and a diagonal step only when both axis cells beside it are walkable (no
    cutting corners). Neighbours ``k`` follow ``_NEIGHBOURS``.
    """
    g = terrain_grids(terrain)
    n = g.pathing.shape[0]
    walk = np.pad(g.pathing, 1, constant_values=False)
    lvl = np.pad(g.cliff_level.astype(np.int64), 1)
    out = np.zeros((len(_NEIGHBOURS), n, n), dtype=bool)
    for k, (dx, dy) in enumerate(_NEIGHBOURS):
        nb = walk[1 + dx : 1 + dx + n, 1 + dy : 1 + dy + n]
        ok = g.pathing & nb & (np.abs(lvl[1 + dx : 1 + dx + n, 1 + dy : 1 + dy + n] - g.cliff_level) < CLIFF_STEP // 2)
        if dx and dy:
            ok &= walk[1 + dx : 1 + dx + n, 1 : 1 + n] & walk[1 : 1 + n, 1 + dy : 1 + dy + n]
        out[k] = ok
    return out


@cache
def ground_distances(terrain: str) -> np.ndarray:
    """Shortest ground-path lengths between cell centres, ``[32*32, 32*32]`` float32 (``inf``: no path).

    Entry ``[a, b]`` (flat cell index ``x * 32 + y``) is the length in world units of the shortest
    path of :func:`ground_edges` steps (1 or sqrt 2) between cells ``a`` and ``b``. Computed once
    per terrain from every walkable cell at once, by raster sweeps (+x, -x, +y, -y) repeated until
    nothing changes (exact: each sweep is a Bellman-Ford relaxation); read-only.
    """
    edges = ground_edges(terrain)
    n = edges.shape[1]
    walk = terrain_grids(terrain).pathing.reshape(-1)
    src = np.flatnonzero(walk)
    dist = np.full((len(src), n, n), np.inf, dtype=np.float32)
    dist[np.arange(len(src)), src // n, src % n] = 0.0
    k_of = {d: k for k, d in enumerate(_NEIGHBOURS)}
    diag = np.float32(np.sqrt(2.0))

    def relax_x(x, dx):  # cells in column x from column x - dx (steps (-dx, 0) and (-dx, +-1))
        col = dist[:, x, :]
        prev = dist[:, x - dx, :]
        np.minimum(col, np.where(edges[k_of[(-dx, 0)], x], prev + 1.0, np.inf), out=col)
        up = np.full_like(col, np.inf)
        up[:, 1:] = prev[:, :-1] + diag  # from (x - dx, y - 1)
        np.minimum(col, np.where(edges[k_of[(-dx, -1)], x], up, np.inf), out=col)
        down = np.full_like(col, np.inf)
        down[:, :-1] = prev[:, 1:] + diag  # from (x - dx, y + 1)
        np.minimum(col, np.where(edges[k_of[(-dx, 1)], x], down, np.inf), out=col)

    def relax_y(y, dy):
        row = dist[:, :, y]
        np.minimum(row, np.where(edges[k_of[(0, -dy)], :, y], dist[:, :, y - dy] + 1.0, np.inf), out=row)

    while True:
        before = dist.copy()
        for x in range(1, n):
            relax_x(x, 1)
        for x in range(n - 2, -1, -1):
            relax_x(x, -1)
        for y in range(1, n):
            relax_y(y, 1)
        for y in range(n - 2, -1, -1):
            relax_y(y, -1)
        if np.array_equal(before, dist):
            break
    out = np.full((n * n, n * n), np.inf, dtype=np.float32)
    out[src] = dist.reshape(len(src), n * n)
    out.setflags(write=False)
    return out


def needs_routing(terrain: str) -> bool:
    """Whether straight lines can fail between walkable cells: the walkable cells are not one
    axis-aligned rectangle on one cliff level (the band and open maps are; the others get
    shortest-path routing from :func:`ground_distances`)."""
    g = terrain_grids(terrain)
    xs, ys = np.nonzero(g.pathing)
    if len(xs) == 0:
        return False
    box = g.pathing[xs.min() : xs.max() + 1, ys.min() : ys.max() + 1]
    return not (box.all() and len(np.unique(g.cliff_level[g.pathing])) == 1)
