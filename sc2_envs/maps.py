"""Registry of the SMAC v1 maps: rosters, episode limits, spawn points, attack points, terrain.

Source: oxwhirl/smac d6aab33 ``smac/env/starcraft2/maps/smac_maps.py`` (``map_param_registry``:
unit counts, episode limits, races, ``unit_type_bits``, ``map_type``) and each map's SC2Map archive
(``MapScript.galaxy`` spawn and attack-move points, ``t3SyncCliffLevel`` walkable terrain, ``MapInfo``
32x32 playable area). Where the map file leaves a
detail to the engine (the clump placement of a spawn group) or only an outline of the terrain was
recoverable (corridor, 6h_vs_8z), ``docs/deviations.md`` says what we chose.

Coordinates are world units, x to the right and y up, on a 32x32 map; ``pathing[x, y]`` is the
cell ``[x, x+1) x [y, y+1)``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from sc2_envs.units import UNITS

MAP_SIZE = 32
"""All SMAC maps are 32x32 with the playable area equal to the full map (MapInfo bounds)."""


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
        attack_point: enemy attack-move target; ``None`` for no order (static structures).
        attack_segment: if set, the attack point is drawn uniformly on this segment per episode
            (2m_vs_1z: "a random point between the two marine points").
        terrain: name of the walkable-terrain outline, see ``pathing_grid``.
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


def _symmetric(name, ally, enemy, limit, race, utb, map_type, ally_order=(), enemy_order=(), terrain="band"):
    return MapSpec(
        name=name, allies=_groups(ally, _A), enemies=_groups(enemy, _E), episode_limit=limit,
        a_race=race, b_race=race, unit_type_bits=utb, map_type=map_type,
        ally_type_order=tuple(ally_order), enemy_type_order=tuple(enemy_order), attack_point=_A,
        terrain=terrain,
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
    _symmetric("2s3z", [("stalker", 2), ("zealot", 3)], [("stalker", 2), ("zealot", 3)], 120, "P", 2,
               "stalkers_and_zealots", _SZ_ALLY, _SZ_ENEMY),
    _symmetric("3s5z", [("stalker", 3), ("zealot", 5)], [("stalker", 3), ("zealot", 5)], 150, "P", 2,
               "stalkers_and_zealots", _SZ_ALLY, _SZ_ENEMY),
    _symmetric("3s5z_vs_3s6z", [("stalker", 3), ("zealot", 5)], [("stalker", 3), ("zealot", 6)], 170, "P", 2,
               "stalkers_and_zealots", _SZ_ALLY, _SZ_ENEMY),
    _symmetric("1c3s5z", [("colossus", 1), ("stalker", 3), ("zealot", 5)],
               [("colossus", 1), ("stalker", 3), ("zealot", 5)], 180, "P", 3, "colossi_stalkers_zealots",
               _CSZ, _CSZ),
    _symmetric("MMM", [("marauder", 2), ("marine", 7), ("medivac", 1)],
               [("marauder", 2), ("marine", 7), ("medivac", 1)], 150, "T", 3, "MMM", _MMM, _MMM),
    _symmetric("MMM2", [("marauder", 2), ("marine", 7), ("medivac", 1)],
               [("marauder", 3), ("marine", 8), ("medivac", 1)], 180, "T", 3, "MMM", _MMM, _MMM),
    _symmetric("3s_vs_3z", [("stalker", 3)], [("zealot", 3)], 150, "P", 0, "stalkers", terrain="full"),
    _symmetric("3s_vs_4z", [("stalker", 3)], [("zealot", 4)], 200, "P", 0, "stalkers", terrain="full"),
    _symmetric("3s_vs_5z", [("stalker", 3)], [("zealot", 5)], 250, "P", 0, "stalkers", terrain="full"),
    MapSpec(
        name="2m_vs_1z", allies=(SpawnGroup("marine", 1, 13.0, 12.0), SpawnGroup("marine", 1, 19.0, 12.0)),
        enemies=(SpawnGroup("zealot", 1, 16.0, 19.0),), episode_limit=150, a_race="T", b_race="P",
        unit_type_bits=0, map_type="marines", ally_type_order=(), enemy_type_order=(),
        attack_point=(16.0, 12.0), attack_segment=((13.0, 12.0), (19.0, 12.0)), terrain="octagon",
    ),
    MapSpec(
        name="2s_vs_1sc", allies=(SpawnGroup("stalker", 1, 11.12, 10.34), SpawnGroup("stalker", 1, 16.98, 10.37)),
        enemies=(SpawnGroup("spine_crawler", 1, 13.92, 20.04),), episode_limit=300, a_race="P", b_race="Z",
        unit_type_bits=0, map_type="stalkers", ally_type_order=(), enemy_type_order=(), attack_point=None,
        terrain="column",
    ),
    MapSpec(
        name="6h_vs_8z", allies=(SpawnGroup("hydralisk", 6, 14.60, 9.49),),
        enemies=(SpawnGroup("zealot", 8, 14.41, 16.76),), episode_limit=150, a_race="Z", b_race="P",
        unit_type_bits=0, map_type="hydralisks", ally_type_order=(), enemy_type_order=(),
        attack_point=(14.60, 9.49), terrain="box", unit_overrides={"hydralisk": {"health": 80.0}},
    ),
    MapSpec(
        name="corridor", allies=(SpawnGroup("zealot", 6, 19.04, 19.12),),
        enemies=(SpawnGroup("zergling", 24, 27.91, 28.24),), episode_limit=400, a_race="P", b_race="Z",
        unit_type_bits=0, map_type="zealots", ally_type_order=(), enemy_type_order=(),
        attack_point=(4.47, 4.33), terrain="corridor",
    ),
    MapSpec(
        name="so_many_baneling", allies=(SpawnGroup("zealot", 7, 11.47, 12.02),),
        enemies=(SpawnGroup("baneling", 32, 27.91, 28.24),), episode_limit=100, a_race="P", b_race="Z",
        unit_type_bits=0, map_type="zealots", ally_type_order=(), enemy_type_order=(),
        attack_point=(4.47, 4.33), terrain="near_full",
    ),
    MapSpec(
        name="bane_vs_bane",
        allies=(SpawnGroup("baneling", 4, 16.0, 8.0), SpawnGroup("zergling", 20, 16.0, 11.0)),
        enemies=(SpawnGroup("zergling", 20, 16.0, 21.0), SpawnGroup("baneling", 4, 16.0, 24.0)),
        episode_limit=200, a_race="Z", b_race="Z", unit_type_bits=2, map_type="bane",
        ally_type_order=("baneling", "zergling"), enemy_type_order=("baneling", "zergling"),
        attack_point=(16.0, 8.0), terrain="octagon",
    ),
    MapSpec(
        name="2c_vs_64zg", allies=(SpawnGroup("colossus", 2, 16.0, 16.0),),
        enemies=(SpawnGroup("zergling", 64, 16.0, 9.0),), episode_limit=400, a_race="P", b_race="Z",
        unit_type_bits=0, map_type="colossus", ally_type_order=(), enemy_type_order=(),
        attack_point=(16.0, 16.0), terrain="band_low",
    ),
]

MAPS: dict[str, MapSpec] = {m.name: m for m in _MAP_LIST}
"""Every SMAC v1 map, keyed by SMAC's map name."""


def list_maps() -> list[str]:
    """Names of every map the simulator supports, sorted."""
    return sorted(MAPS)


def get_map(name: str) -> MapSpec:
    """Return the spec of map ``name``.

    Raises:
        ValueError: if ``name`` is not a SMAC v1 map; the message lists the valid names.
    """
    if not isinstance(name, str) or name not in MAPS:
        raise ValueError(f"unknown map {name!r}; expected one of: {', '.join(list_maps())}")
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


def pathing_grid(terrain: str) -> np.ndarray:
    """Walkable cells of a terrain outline, as a ``[32, 32]`` bool array indexed ``[x, y]``.

    The outlines follow the cliff-level-64 areas of the SMAC map files:
    ``band`` rows y=7..24 (the symmetric 2s3z/3s5z/MMM/marine maps), ``full`` (3s_vs_xz),
    ``octagon`` cells 5..26 with cut corners (2m_vs_1z, bane_vs_bane), ``column`` x=7..20,
    y=7..24 (2s_vs_1sc), ``box`` a rounded 16x14 box (6h_vs_8z), ``corridor`` a diagonal corridor
    from (28,28) to (4,4) (corridor), ``near_full`` cells 1..30 (so_many_baneling) and ``band_low``
    rows y=5..20 (2c_vs_64zg).

    Raises:
        ValueError: for an unknown outline name.
    """
    x, y = np.meshgrid(np.arange(MAP_SIZE) + 0.5, np.arange(MAP_SIZE) + 0.5, indexing="ij")
    if terrain == "band":
        grid = (y > 7) & (y < 25)
    elif terrain == "full":
        grid = np.ones_like(x, dtype=bool)
    elif terrain == "octagon":
        grid = (x > 5) & (x < 27) & (y > 5) & (y < 27) & (np.abs(x - 16) + np.abs(y - 16) < 16)
    elif terrain == "column":
        grid = (x > 7) & (x < 21) & (y > 7) & (y < 25)
    elif terrain == "box":
        grid = (x > 6.5) & (x < 22.5) & (y > 5) & (y < 19.5) & (np.abs(x - 14.5) + np.abs(y - 12.25) < 13)
    elif terrain == "corridor":
        grid = (np.abs(x - y) < 5) & (x > 1) & (x < 31) & (y > 1) & (y < 31)
    elif terrain == "near_full":
        grid = (x > 1) & (x < 31) & (y > 1) & (y < 31)
    elif terrain == "band_low":
        grid = (y > 5) & (y < 21)
    else:
        raise ValueError(f"unknown terrain outline {terrain!r}")
    return grid
