"""Simple64 ("Simple Test Map 64x64", pysc2's ``Simple64``): layout facts and a terrain description.

Layout (start locations, the 32 mineral fields, 8 geysers and 2 rocks, each player's 12 starting
workers): the loop-0 ``SUnitBornEvent``s that every replay carries, identical in all 80
mini-AlphaStar Simple64 replays (3.16.1.55958; liuruoze/HierNet-SC2 ``data/replay/`` and
liuruoze/Useful-Big-Resources ``replays/simple64_replays.7z``, Apache-2.0). The tracker truncates
positions to cells; exact centres follow from the footprint's parity (an odd side puts the centre
on a half cell). ``scripts/lite_simple64_facts.py REPLAY_DIR --check`` re-derives them.

Terrain: Blizzard's map archive is not redistributable, so the terrain here is our own coarse
description: polygons for the ground (low ground at cliff level 128, with the hole in the middle
of the map), two plateaus for the mains (cliff level 192) and two ramps (cliff levels 136-176
rising from the low end to the high end). ``cliff_level_grid``, ``height_grid``,
``pathing_grid`` and ``placement_grid`` rasterise it: a cell takes the level of the last region
whose polygon contains the cell's centre. ``scripts/lite_simple64_terrain.py`` measures its
agreement with a public copy of the archive (read, never stored); see ``TERRAIN_AGREEMENT``.
Where the user has the map (``StarCraftII/Maps/Melee/Simple64.SC2Map``), ``from_map_archive``
reads the exact grids from it instead.

Grids are numpy arrays indexed ``[y, x]`` (row = y, row 0 at y = 0, as python-sc2's ``PixelMap``
reads the SC2 API's ``ImageData``), shape ``(96, 88)`` = (map height, map width). Cell (x, y)
covers [x, x+1) x [y, y+1) in game units.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np

PROFILE = "3.16.1"
"""The data profile these positions were measured in (the map is the same in later builds)."""

MAP_SIZE = (88, 96)
"""(width, height) in cells: replay details ``m_mapSizeX`` / ``m_mapSizeY``."""

PLAYABLE_AREA = ((12, 12), (76, 76))
"""((x0, y0), (x1, y1)), game units: the map's camera bounds (the archive's ``MapInfo``), the 64 x 64
box the SC2 API reports as ``playable_area`` ("Simple test map. Size: 64x64" in its GameStrings)."""

START_LOCATIONS = ((28.5, 60.5), (59.5, 27.5))
"""Town hall centres (x, y) at loop 0, player 1 (top left) then player 2 (bottom right). In all 80
replays the human Protoss starts at the first and the Terran AI at the second."""

START_WORKER_CELLS = (
    ((25, 57), (25, 58), (25, 59), (25, 60), (25, 61), (25, 62), (25, 63), (26, 63), (27, 63), (28, 63), (29, 63), (30, 63)),
    ((57, 24), (58, 24), (59, 24), (60, 24), (61, 24), (62, 24), (62, 25), (62, 26), (62, 27), (62, 28), (62, 29), (62, 30)),
)
"""Cells (x, y) of each player's 12 workers at loop 0 (an L beside the town hall), per player."""


@dataclass(frozen=True)
class MineralSite:
    """One mineral field: centre (x, y) in game units, its type and the base it belongs to."""

    x: float
    y: float
    kind: str  # "MineralField" (1500 in the 3.16.1 profile) or "MineralField750" (900)
    base: str


BASES = ("protoss_main", "terran_main", "south_west", "north_east")
"""Base names: the two mains and the low-ground bases next to the Terran main (south west) and the
Protoss main (north east)."""


def _sites(base: str, large: tuple, small: tuple) -> tuple[MineralSite, ...]:
    return tuple(MineralSite(x, y, "MineralField", base) for x, y in large) + tuple(
        MineralSite(x, y, "MineralField750", base) for x, y in small
    )


MINERAL_FIELDS: tuple[MineralSite, ...] = (
    _sites("protoss_main", ((22, 60.5), (22, 62.5), (23, 65.5), (27, 66.5)), ((21, 61.5), (22, 64.5), (24, 66.5), (28, 67.5)))
    + _sites("terran_main", ((61, 21.5), (65, 22.5), (66, 25.5), (66, 27.5)), ((60, 20.5), (64, 21.5), (66, 23.5), (67, 26.5)))
    + _sites("south_west", ((18, 20.5), (19, 23.5), (22, 16.5), (26, 17.5)), ((18, 22.5), (19, 19.5), (21, 17.5), (25, 16.5)))
    + _sites("north_east", ((62, 70.5), (66, 71.5), (69, 64.5), (70, 67.5)), ((63, 71.5), (67, 70.5), (69, 68.5), (70, 65.5)))
)
"""The 32 mineral fields: 4 ``MineralField`` and 4 ``MineralField750`` per base."""

GEYSERS: tuple[tuple[float, float], ...] = (
    (21.5, 57.5),
    (31.5, 67.5),  # protoss_main
    (56.5, 20.5),
    (66.5, 30.5),  # terran_main
    (18.5, 26.5),
    (29.5, 16.5),  # south_west
    (58.5, 71.5),
    (69.5, 61.5),  # north_east
)
"""The 8 ``VespeneGeyser`` centres, two per base in ``BASES`` order."""

GEYSER_BASES = ("protoss_main",) * 2 + ("terran_main",) * 2 + ("south_west",) * 2 + ("north_east",) * 2

ROCKS: tuple[tuple[float, float], ...] = ((40.0, 19.0), (48.0, 69.0))
"""``UnbuildableRocksDestructible`` centres (type id 472): a 2x2 *underground* footprint
(liberty UnitData ``Footprint2x2Underground``), so they block placement but not pathing."""
ROCK_TYPE_ID = 472
ROCK_FOOTPRINT = (2, 2)

# ---------------------------------------------------------------------------------------------- terrain
LOW_GROUND = 128
"""Cliff level of the low ground (the archive's ``t3SyncCliffLevel`` value)."""
HIGH_GROUND = 192
"""Cliff level of the two main plateaus."""

# Polygon vertices are (x, y) in game units. Ground polygons combine by even-odd (the second is
# the impassable hole in the middle of the map).
GROUND_POLYGONS: tuple[tuple[tuple[float, float], ...], ...] = (
    (
        (21.5, 11.0), (26.5, 11.0), (28.5, 13.0), (31.5, 11.0), (33.5, 12.0), (36.5, 11.0), (44.5, 17.0), (53.5, 17.0),
        (55.5, 15.0), (59.5, 16.0), (64.5, 15.0), (71.0, 19.5), (71.0, 34.5), (64.5, 39.0), (59.5, 39.0), (59.0, 41.5),
        (68.5, 49.0), (70.5, 49.0), (75.0, 55.5), (75.0, 72.5), (72.5, 75.0), (68.5, 75.0), (66.5, 77.0), (61.5, 77.0),
        (59.5, 75.0), (56.5, 77.0), (54.5, 76.0), (51.5, 77.0), (43.5, 71.0), (34.5, 71.0), (32.5, 73.0), (28.5, 72.0),
        (23.5, 73.0), (17.0, 68.5), (17.0, 53.5), (23.5, 49.0), (29.0, 48.5), (29.0, 46.5), (19.5, 39.0), (17.5, 39.0),
        (13.0, 32.5), (13.0, 15.5), (15.5, 13.0), (19.5, 13.0),
    ),
    ((38.5, 41.0), (38.5, 43.0), (40.5, 43.0), (46.5, 47.0), (50.0, 46.5), (49.5, 45.0), (47.5, 45.0), (41.5, 41.0)),
)  # fmt: skip
"""Outline of the ground (cliff level > 0) and the hole in the middle of the map, even-odd."""

PLATEAU_POLYGONS: tuple[tuple[tuple[float, float], ...], ...] = (
    (
        (55.5, 15.0), (59.5, 16.0), (64.5, 15.0), (71.0, 19.5), (71.0, 34.5), (64.5, 39.0), (55.5, 39.0), (49.5, 35.0),
        (43.5, 35.0), (39.0, 30.5), (39.0, 27.5), (45.0, 21.5), (45.5, 17.0), (53.5, 17.0),
    ),
    (
        (23.5, 49.0), (32.5, 49.0), (38.5, 53.0), (44.5, 53.0), (49.0, 57.5), (49.0, 60.5), (43.0, 66.5), (42.5, 71.0),
        (34.5, 71.0), (32.5, 73.0), (28.5, 72.0), (23.5, 73.0), (17.0, 68.5), (17.0, 53.5),
    ),
)  # fmt: skip
"""The Terran main (bottom right) and the Protoss main (top left), cliff level 192."""


@dataclass(frozen=True)
class Ramp:
    """A ramp: the cells whose centres lie in ``polygon`` rise from ``low`` to ``high``.

    A ramp cell's cliff level is 136 + 40 t rounded to a multiple of 8 and clipped to [136, 176],
    where t in [0, 1] is the cell centre's projection on the segment from ``low`` to ``high``.
    """

    polygon: tuple[tuple[float, float], ...]
    low: tuple[float, float]
    high: tuple[float, float]


RAMPS: tuple[Ramp, ...] = (
    # The Terran main's ramp rises towards +x +y; the Protoss main's is its point reflection
    # through the map centre (44, 44). Each is a diamond around the ramp cells' centroid
    # (scripts/lite_simple64_terrain.py --derive: (40.7, 22.7) and (47.3, 65.3)) with a half-diagonal
    # of 2.7, which holds the 15 ramp cells' centres and none of their neighbours'.
    Ramp(polygon=((38.0, 22.7), (40.7, 20.0), (43.4, 22.7), (40.7, 25.4)), low=(39.5, 21.5), high=(42.0, 24.0)),
    Ramp(polygon=((44.6, 65.3), (47.3, 62.6), (50.0, 65.3), (47.3, 68.0)), low=(48.5, 66.5), high=(46.0, 64.0)),
)

TERRAIN_AGREEMENT: dict[str, float] = {
    "cliff_level_all_cells": 0.9950,
    "cliff_level_ground_cells": 0.9867,
    "pathing_all_cells": 0.9809,
    "pathing_ground_cells": 0.9492,
    "placement_all_cells": 0.9833,
    "placement_ground_cells": 0.9555,
}
"""Share of cells where this description's grids equal the archive's, measured by
``scripts/lite_simple64_terrain.py`` on the public copy natangold85/IAIAI_RL_pysc2
``Maps/Simple64.SC2Map`` @0542232 (57,663 bytes, sha256 307f07d9...c385700). "ground cells" are the
cells that are ground in either grid (3,148 in the archive); "all cells" are the 88 x 96 map. The
pathing rule alone, applied to the archive's own cliff levels, reaches 0.9858 / 0.9621: the
archive paints a few cliff-face cells at concave corners and beside the ramps that the rule leaves
walkable. ``from_map_archive`` gives the exact grids."""


def _cell_centres() -> tuple[np.ndarray, np.ndarray]:
    w, h = MAP_SIZE
    ys, xs = np.mgrid[0:h, 0:w]
    return xs + 0.5, ys + 0.5


def polygon_mask(polygon, shape: tuple[int, int] | None = None) -> np.ndarray:
    """Cells whose centre lies inside ``polygon`` (even-odd rule).

    Args:
        polygon: sequence of (x, y) vertices in game units, at least 3.
        shape: (height, width) of the grid; default the map's (96, 88).

    Returns:
        (height, width) bool array indexed [y, x].

    Raises:
        ValueError: fewer than 3 vertices.
    """
    pts = np.asarray(polygon, dtype=np.float64)
    if pts.ndim != 2 or pts.shape[1] != 2 or len(pts) < 3:
        raise ValueError(f"polygon needs at least 3 (x, y) vertices, got {pts.shape}")
    h, w = shape if shape is not None else (MAP_SIZE[1], MAP_SIZE[0])
    ys, xs = np.mgrid[0:h, 0:w]
    px, py = xs + 0.5, ys + 0.5
    inside = np.zeros((h, w), dtype=bool)
    x0, y0 = pts[:, 0], pts[:, 1]
    x1, y1 = np.roll(x0, 1), np.roll(y0, 1)
    for a, b, c, d in zip(x0, y0, x1, y1, strict=True):
        if b == d:
            continue  # a horizontal edge never crosses a horizontal ray
        crosses = (b > py) != (d > py)
        x_at = (c - a) * (py - b) / (d - b) + a
        inside ^= crosses & (px < x_at)
    return inside


def cliff_level_grid() -> np.ndarray:
    """Cliff levels of the description: 0 outside the ground, 128 low, 192 mains, 136-176 on ramps.

    Returns:
        (96, 88) uint8 array indexed [y, x].
    """
    ground = np.zeros((MAP_SIZE[1], MAP_SIZE[0]), dtype=bool)
    for poly in GROUND_POLYGONS:
        ground ^= polygon_mask(poly)
    level = np.where(ground, LOW_GROUND, 0).astype(np.uint8)
    for poly in PLATEAU_POLYGONS:
        level[polygon_mask(poly)] = HIGH_GROUND
    px, py = _cell_centres()
    for ramp in RAMPS:
        m = polygon_mask(ramp.polygon)
        (lx, ly), (hx, hy) = ramp.low, ramp.high
        t = ((px - lx) * (hx - lx) + (py - ly) * (hy - ly)) / ((hx - lx) ** 2 + (hy - ly) ** 2)
        ramp_level = np.clip(np.round((136 + 40 * t) / 8) * 8, 136, 176)
        level[m] = ramp_level[m].astype(np.uint8)
    return level


def height_grid(cliff_level: np.ndarray | None = None) -> np.ndarray:
    """Terrain height in game units: cliff level / 16 (low ground 8, mains 12, ramps between).

    The archive's ``t3SyncHeightMap`` puts the same cells 0.16-0.19 higher (8.16, 12.19; ramp
    middles 10.17), a constant offset that no game rule here depends on.

    Args:
        cliff_level: (96, 88) cliff levels; default ``cliff_level_grid()``.

    Returns:
        (96, 88) float32 array indexed [y, x]; 0 outside the ground.
    """
    lv = cliff_level_grid() if cliff_level is None else np.asarray(cliff_level)
    return (lv.astype(np.float32) / 16.0).astype(np.float32)


def _classes(level: np.ndarray) -> np.ndarray:
    # 0 outside, 1 low ground, 2 ramp, 3 high ground
    return np.select([level == 0, level <= LOW_GROUND, level >= HIGH_GROUND], [0, 1, 3], default=2)


def _near(cls: np.ndarray, targets: np.ndarray, radius: int) -> np.ndarray:
    """Cells with a cell of class ``targets[cell]`` within Chebyshev ``radius`` (outside counts as 0)."""
    h, w = cls.shape
    padded = np.pad(cls, radius, constant_values=0)
    hit = np.zeros((h, w), dtype=bool)
    for dy in range(-radius, radius + 1):
        for dx in range(-radius, radius + 1):
            hit |= padded[radius + dy : radius + dy + h, radius + dx : radius + dx + w] == targets
    return hit


def pathing_grid(cliff_level: np.ndarray | None = None) -> np.ndarray:
    """Ground-walkable cells of the terrain (no units or structures stamped).

    Rule (our model of the cliff faces): a ground cell is walkable unless a cell within one cell
    (8-neighbourhood) lies outside the ground or on the other plateau class (low vs high ground);
    ramps and their neighbours stay walkable, which is what connects each main to the low ground.

    Args:
        cliff_level: (96, 88) cliff levels; default ``cliff_level_grid()``.

    Returns:
        (96, 88) bool array indexed [y, x]; True = walkable.
    """
    lv = cliff_level_grid() if cliff_level is None else np.asarray(cliff_level)
    cls = _classes(lv)
    edge = _near(cls, np.zeros_like(cls), 1)
    other = np.where(cls == 1, 3, np.where(cls == 3, 1, -1))
    cliff = _near(cls, other, 1)
    return (cls > 0) & ~edge & ~cliff


def placement_grid(cliff_level: np.ndarray | None = None, rocks: bool = True) -> np.ndarray:
    """Cells a structure footprint may cover: walkable, off the ramps, and (by default) off the rocks.

    Resources and start town halls are not stamped (the engine stamps every footprint it places).

    Args:
        cliff_level: (96, 88) cliff levels; default ``cliff_level_grid()``.
        rocks: clear the two rocks' 2x2 underground footprints.

    Returns:
        (96, 88) bool array indexed [y, x]; True = buildable.
    """
    lv = cliff_level_grid() if cliff_level is None else np.asarray(cliff_level)
    cls = _classes(lv)
    grid = pathing_grid(lv) & (cls != 2)
    if rocks:
        for x, y in ROCKS:
            grid[footprint_cells((x, y), ROCK_FOOTPRINT)] = False
    return grid


def footprint_cells(centre: tuple[float, float], footprint: tuple[int, int]) -> tuple[slice, slice]:
    """The [y, x] slices of the cells a footprint centred at ``centre`` covers.

    Args:
        centre: (x, y) in game units; must sit on the footprint's grid (a half cell along an odd
            side, a whole cell along an even side).
        footprint: (width, height) in cells.

    Returns:
        (rows, cols) slices for a [y, x] grid.

    Raises:
        ValueError: the centre is off the footprint's grid.
    """
    (x, y), (w, h) = centre, footprint
    x0, y0 = x - w / 2, y - h / 2
    if x0 != int(x0) or y0 != int(y0):
        raise ValueError(f"centre {centre} is off the cell grid for a {w}x{h} footprint")
    return slice(int(y0), int(y0) + h), slice(int(x0), int(x0) + w)


# ---------------------------------------------------------------------------------------------- the map archive
@dataclass(frozen=True)
class ArchiveTerrain:
    """Grids read from a copy of the map archive (all (96, 88) indexed [y, x]).

    Attributes:
        cliff_level: uint8 cliff levels (``t3SyncCliffLevel``).
        pathable: bool, ground walkable: ground cells without the archive's unpathable cell flag
            (``t3CellFlags`` bit 0, the painted cliff faces and map edge).
        placement: bool, buildable: ``pathable`` off the ramps and the rocks.
        height: float32 game units, cliff level / 16 (as ``height_grid``).
        playable_area: ((x0, y0), (x1, y1)), the camera bounds in ``MapInfo``.
    """

    cliff_level: np.ndarray
    pathable: np.ndarray
    placement: np.ndarray
    height: np.ndarray
    playable_area: tuple[tuple[int, int], tuple[int, int]]


def default_map_path() -> Path:
    """Where a StarCraft II install keeps Simple64 (``$SC2PATH`` or the platform default)."""
    import os

    root = os.environ.get("SC2PATH") or (
        "C:/Program Files (x86)/StarCraft II" if os.name == "nt" else os.path.expanduser("~/StarCraftII")
    )
    return Path(root) / "Maps" / "Melee" / "Simple64.SC2Map"


def _grid(data: bytes, itemsize: int, name: str) -> np.ndarray:
    w, h = MAP_SIZE
    need = w * h * itemsize
    if len(data) < need + 16:
        raise ValueError(f"{name} holds {len(data)} bytes; expected a header and {need} bytes of {w}x{h} cells")
    # The cells are the last w*h items; the header before them varies by file version.
    dtype = "<u2" if itemsize == 2 else np.uint8
    return np.frombuffer(data[-need:], dtype=dtype).reshape(h, w).copy()


def _camera_bounds(data: bytes) -> tuple[tuple[int, int], tuple[int, int]]:
    w, h = MAP_SIZE
    # After the fixed header come two NUL-terminated strings (loading screen, tileset), then the
    # camera bounds left, bottom, right, top as int32.
    start = next(i for i in range(24, len(data) - 3) if data[i : i + 3].isalpha())
    end = data.index(b"\x00", data.index(b"\x00", start) + 1) + 1
    left, bottom, right, top = struct.unpack_from("<4i", data, end)
    if not (0 <= left < right <= w and 0 <= bottom < top <= h):
        raise ValueError(f"MapInfo camera bounds {(left, bottom, right, top)} are not inside a {w}x{h} map")
    return (left, bottom), (right, top)


def from_map_archive(path: str | Path | None = None) -> ArchiveTerrain:
    """Read the exact terrain grids from the user's own ``Simple64.SC2Map``.

    Args:
        path: the map file; default ``default_map_path()`` (``$SC2PATH/Maps/Melee/Simple64.SC2Map``).

    Returns:
        ``ArchiveTerrain`` with the cliff, pathing, placement and height grids and the playable area.

    Raises:
        FileNotFoundError: no map at ``path``.
        ImportError: ``mpyq`` (installed with the ``full-game`` extra, via s2protocol / sc2reader)
            is missing.
        ValueError: the archive is not an 88 x 96 Simple64 (a file missing or of the wrong size).
    """
    p = Path(path) if path is not None else default_map_path()
    if not p.is_file():
        raise FileNotFoundError(
            f"no Simple64 map at {p}; install the Melee map pack into StarCraftII/Maps/Melee "
            "or pass the path of your Simple64.SC2Map (the lite engine also runs without it)"
        )
    try:
        import mpyq
    except ImportError as e:
        raise ImportError("reading a .SC2Map needs mpyq: pip install 'sc2-envs[full-game]' (or pip install mpyq)") from e
    archive = mpyq.MPQArchive(str(p))
    files = {f.decode() if isinstance(f, bytes) else f for f in archive.files}
    for name in ("t3SyncCliffLevel", "t3CellFlags", "MapInfo"):
        if name not in files:
            raise ValueError(f"{p} has no {name!r}; is it a Simple64.SC2Map?")
    cliff = _grid(archive.read_file("t3SyncCliffLevel"), 2, "t3SyncCliffLevel")
    if cliff.max() > 255:
        raise ValueError(f"{p}: cliff levels up to {cliff.max()}; expected at most 255")
    cliff = cliff.astype(np.uint8)
    flags = _grid(archive.read_file("t3CellFlags"), 1, "t3CellFlags")
    pathable = (cliff > 0) & ((flags & 1) == 0)
    placement = pathable & (_classes(cliff) != 2)
    for x, y in ROCKS:
        placement[footprint_cells((x, y), ROCK_FOOTPRINT)] = False
    return ArchiveTerrain(
        cliff_level=cliff,
        pathable=pathable,
        placement=placement,
        height=height_grid(cliff),
        playable_area=_camera_bounds(archive.read_file("MapInfo")),
    )
