"""Maps the lite engine serves, in the engine's form (``LiteMap``).

A ``LiteMap`` holds what a game needs from a map: its size, the two start locations, the neutral
resources and the three grids (pathing, placement, terrain height) as ``(H, W)`` arrays whose row
``y`` is world y (bottom row first) and column ``x`` world x, as the SC2 API's ``game_info`` grids
are indexed. The map's facts come from ``sc2_envs.lite.data`` (Simple64); this module only puts
them in that form.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

SERVED_MAPS = ("Simple64",)


@dataclass(frozen=True)
class LiteMap:
    """One map in the engine's form.

    Attributes:
        name: map name (``"Simple64"``).
        map_size: ``(W, H)`` in cells (the SC2 API's ``start_raw.map_size``).
        start_locations: ``((x, y), (x, y))``: the agent's (player 1) then the bot's town-hall centre.
        minerals: ``((unit name, x, y), ...)`` mineral fields (``MineralField`` / ``MineralField750``).
        geysers: ``((unit name, x, y), ...)`` vespene geysers.
        pathing: ``(H, W)`` uint8, 1 where ground units may walk.
        placement: ``(H, W)`` uint8, 1 where structures may be placed.
        height: ``(H, W)`` uint8 terrain height as the minimap's ``height_map`` shows it (0-255).
        playable: ``(x0, y0, x1, y1)`` playable area in cells.
        start_workers: per player, the starting workers' positions (empty: a block by the hall).
    """

    name: str
    map_size: tuple[int, int]
    start_locations: tuple[tuple[float, float], tuple[float, float]]
    minerals: tuple[tuple[str, float, float], ...]
    geysers: tuple[tuple[str, float, float], ...]
    pathing: np.ndarray
    placement: np.ndarray
    height: np.ndarray
    playable: tuple[int, int, int, int]
    start_workers: tuple[tuple[tuple[float, float], ...], ...] = ((), ())


@functools.cache
def load_map(name: str) -> LiteMap:
    """The engine's form of a served map.

    Args:
        name: a name in ``SERVED_MAPS``.

    Returns:
        A ``LiteMap`` (cached: one per name and process; its arrays must not be modified).

    Raises:
        ValueError: the map is not served; the message lists the served maps.
    """
    if name not in SERVED_MAPS:
        raise ValueError(f"map_name={name!r} is not served by the lite engine; served maps: {list(SERVED_MAPS)}")
    from sc2_envs.lite.data import simple64

    return from_simple64_module(simple64)


def height_to_uint8(height: np.ndarray) -> np.ndarray:
    """Terrain height in game units -> the uint8 the SC2 API's ``terrain_height`` grid and the
    minimap's ``height_map`` carry: ``round((h + 16) / 32 * 255)`` (python-sc2 reads it back as
    ``-16 + 32 * v / 255``)."""
    return np.clip(np.round((np.asarray(height, np.float64) + 16.0) / 32.0 * 255.0), 0, 255).astype(np.uint8)


PLACEMENT_OFFSET = (1, -1)
"""(dx, dy) cells: structure cell (x, y) is buildable where the terrain description's (and
``simple64.from_map_archive``'s) placement grid holds cell (x + dx, y + dy). Measured on the 1,181
player structures (UnitInit, footprints from ``m_x``/``m_y`` with the footprint's parity) of the 80
mini-AlphaStar Simple64 replays: 81 of them cover an unbuildable cell of the grid as read, 7 with
this offset, and more with every other offset in [-1, 1]^2 (34 with (1, 0), 67 with (0, -1))."""


def align_placement(grid: np.ndarray) -> np.ndarray:
    """The placement grid moved by ``PLACEMENT_OFFSET``: ``out[y, x] = grid[y + dy, x + dx]``,
    0 where that cell is off the grid.

    Args:
        grid: ``(H, W)`` placement grid indexed [y, x].

    Returns:
        ``(H, W)`` array of the same dtype.
    """
    dx, dy = PLACEMENT_OFFSET
    h, w = grid.shape
    out = np.zeros_like(grid)
    ys, xs = slice(max(0, -dy), min(h, h - dy)), slice(max(0, -dx), min(w, w - dx))
    src_ys, src_xs = slice(ys.start + dy, ys.stop + dy), slice(xs.start + dx, xs.stop + dx)
    out[ys, xs] = grid[src_ys, src_xs]
    return out


def from_simple64_module(mod) -> LiteMap:
    """Build a ``LiteMap`` from the data module ``sc2_envs.lite.data.simple64``.

    Resource footprints are stamped unpathable (the SC2 API's pathing grid shows them so), mineral
    fields 2x1 and geysers 3x3; structures are stamped by the engine as they are placed.
    """
    pathing = np.asarray(mod.pathing_grid(), dtype=np.uint8)
    placement = align_placement(np.asarray(mod.placement_grid(rocks=False), dtype=np.uint8))
    for x, y in mod.ROCKS:  # the rocks sit at their game coordinates (loop-0 tracker events)
        placement[mod.footprint_cells((x, y), mod.ROCK_FOOTPRINT)] = 0
    height = height_to_uint8(mod.height_grid())
    h, w = pathing.shape
    minerals = tuple((m.kind, float(m.x), float(m.y)) for m in mod.MINERAL_FIELDS)
    geysers = tuple(("VespeneGeyser", float(x), float(y)) for x, y in mod.GEYSERS)
    for _, x, y in minerals:
        pathing[mod.footprint_cells((x, y), (2, 1))] = 0
    for _, x, y in geysers:
        pathing[mod.footprint_cells((x, y), (3, 3))] = 0
    starts = tuple((float(x), float(y)) for x, y in mod.START_LOCATIONS)
    (x0, y0), (x1, y1) = mod.PLAYABLE_AREA
    workers = tuple(tuple((cx + 0.5, cy + 0.5) for cx, cy in cells) for cells in mod.START_WORKER_CELLS)
    return LiteMap(
        name="Simple64",
        map_size=(w, h),
        start_locations=(starts[0], starts[1]),
        minerals=minerals,
        geysers=geysers,
        pathing=pathing,
        placement=placement,
        height=height,
        playable=(int(x0), int(y0), int(x1), int(y1)),
        start_workers=workers,
    )


def flat_simple64(size: tuple[int, int] = (88, 96)) -> LiteMap:
    """A stand-in Simple64 for tests of the engine alone: the real resource layout and start
    locations (fact sheet values, the loop-0 tracker events every replay carries) on open,
    flat, fully pathable and buildable ground. Not a model of Simple64's terrain."""
    w, h = size
    pathing = np.zeros((h, w), np.uint8)
    pathing[12:84, 12:76] = 1
    placement = pathing.copy()
    height = np.where(pathing == 1, 128, 0).astype(np.uint8)
    large = [(22, 60.5), (22, 62.5), (23, 65.5), (27, 66.5), (61, 21.5), (65, 22.5), (66, 25.5), (66, 27.5)]
    large += [(18, 20.5), (19, 23.5), (22, 16.5), (26, 17.5), (62, 70.5), (66, 71.5), (69, 64.5), (70, 67.5)]
    small = [(21, 61.5), (22, 64.5), (24, 66.5), (28, 67.5), (60, 20.5), (64, 21.5), (66, 23.5), (67, 26.5)]
    small += [(18, 22.5), (19, 19.5), (21, 17.5), (25, 16.5), (63, 71.5), (67, 70.5), (69, 68.5), (70, 65.5)]
    geysers = [(21.5, 57.5), (31.5, 67.5), (56.5, 20.5), (66.5, 30.5), (18.5, 26.5), (29.5, 16.5), (58.5, 71.5), (69.5, 61.5)]
    minerals = tuple(("MineralField", float(x), float(y)) for x, y in large) + tuple(
        ("MineralField750", float(x), float(y)) for x, y in small
    )
    # Resources are not pathable (the game's grid marks their footprints).
    for _, x, y in minerals:
        pathing[int(y), int(x) - 1 : int(x) + 1] = 0
    for x, y in geysers:
        pathing[int(y) - 1 : int(y) + 2, int(x) - 1 : int(x) + 2] = 0
    return LiteMap(
        name="Simple64",
        map_size=(w, h),
        start_locations=((28.5, 60.5), (59.5, 27.5)),
        minerals=minerals,
        geysers=tuple(("VespeneGeyser", float(x), float(y)) for x, y in geysers),
        pathing=pathing,
        placement=placement,
        height=height,
        playable=(12, 12, 76, 84),
    )
