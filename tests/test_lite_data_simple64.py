"""Simple64 layout facts and the terrain description of the lite engine."""

from __future__ import annotations

import os
from collections import deque
from pathlib import Path

import numpy as np
import pytest
from conftest import TEST_DATA, load_algo

from sc2_envs.lite.data import simple64
from sc2_envs.lite.data.profile_3_16_1 import UNITS

REPLAYS = sorted((TEST_DATA / "replays" / "mas_simple64").glob("*.SC2Replay"))


def _cell(p):
    return int(p[1]), int(p[0])  # [y, x]


def _reachable(grid: np.ndarray, start: tuple[int, int]) -> np.ndarray:
    seen = np.zeros_like(grid, dtype=bool)
    seen[start] = True
    todo = deque([start])
    h, w = grid.shape
    while todo:
        y, x = todo.popleft()
        for dy in (-1, 0, 1):
            for dx in (-1, 0, 1):
                ny, nx = y + dy, x + dx
                if 0 <= ny < h and 0 <= nx < w and grid[ny, nx] and not seen[ny, nx]:
                    seen[ny, nx] = True
                    todo.append((ny, nx))
    return seen


def test_simple64_has_32_mineral_fields_half_of_them_750():
    kinds = [m.kind for m in simple64.MINERAL_FIELDS]
    assert len(kinds) == 32 and kinds.count("MineralField750") == 16


def test_each_base_has_8_minerals_and_2_geysers():
    for base in simple64.BASES:
        assert sum(m.base == base for m in simple64.MINERAL_FIELDS) == 8
        assert simple64.GEYSER_BASES.count(base) == 2
    assert len(simple64.GEYSERS) == 8 and len(simple64.ROCKS) == 2


def test_start_locations_are_the_replays_town_halls():
    assert simple64.START_LOCATIONS == ((28.5, 60.5), (59.5, 27.5))


def test_map_is_point_symmetric_about_its_centre():
    def mirror(p):
        return (88 - p[0], 88 - p[1])

    assert mirror(simple64.START_LOCATIONS[0]) == simple64.START_LOCATIONS[1]
    minerals = {(m.x, m.y, m.kind) for m in simple64.MINERAL_FIELDS}
    assert {(88 - x, 88 - y, k) for x, y, k in minerals} == minerals
    assert {(88 - x, 88 - y) for x, y in simple64.GEYSERS} == set(simple64.GEYSERS)


@pytest.mark.parametrize("replay", REPLAYS, ids=lambda p: p.name)
def test_layout_equals_replay_loop_zero(replay):
    facts = load_algo("lite_simple64_facts", "scripts")
    from sc2_envs.replays import decode_replay

    lay = facts.layout(decode_replay(replay))
    assert [pos for _, pos in lay["starts"].values()] == list(simple64.START_LOCATIONS)
    assert lay["objects"]["VespeneGeyser"] == sorted(simple64.GEYSERS)
    assert lay["objects"]["MineralField750"] == sorted(
        (m.x, m.y) for m in simple64.MINERAL_FIELDS if m.kind == "MineralField750"
    )
    assert lay["objects"]["UnbuildableRocksDestructible"] == sorted(simple64.ROCKS)
    assert [sorted(c) for c in lay["workers"].values()] == [sorted(c) for c in simple64.START_WORKER_CELLS]


def test_grids_have_map_shape_and_documented_dtypes():
    h, w = simple64.MAP_SIZE[1], simple64.MAP_SIZE[0]
    assert simple64.cliff_level_grid().shape == (h, w) and simple64.cliff_level_grid().dtype == np.uint8
    assert simple64.height_grid().dtype == np.float32
    assert simple64.pathing_grid().dtype == bool and simple64.placement_grid().shape == (h, w)


def test_cliff_levels_are_low_high_ramp_or_outside():
    levels = set(np.unique(simple64.cliff_level_grid()).tolist())
    assert levels <= {0, 128, 136, 144, 152, 160, 168, 176, 192}
    assert {0, 128, 192} <= levels


def test_start_locations_are_on_the_mains_and_pathable():
    cliff, path = simple64.cliff_level_grid(), simple64.pathing_grid()
    for p in simple64.START_LOCATIONS:
        assert cliff[_cell(p)] == simple64.HIGH_GROUND and path[_cell(p)]


def test_town_hall_footprints_at_start_are_buildable():
    place = simple64.placement_grid()
    for p in simple64.START_LOCATIONS:
        assert place[simple64.footprint_cells(p, UNITS["Nexus"].footprint)].all()


def test_start_workers_stand_on_pathable_cells():
    path = simple64.pathing_grid()
    for cells in simple64.START_WORKER_CELLS:
        assert all(path[y, x] for x, y in cells)


def test_mains_are_connected_only_through_their_ramps():
    path = simple64.pathing_grid()
    a, b = _cell(simple64.START_LOCATIONS[0]), _cell(simple64.START_LOCATIONS[1])
    assert _reachable(path, a)[b]
    no_ramps = path.copy()
    for ramp in simple64.RAMPS:
        no_ramps &= ~simple64.polygon_mask(ramp.polygon)
    assert not _reachable(no_ramps, a)[b]


def test_ramps_rise_from_low_to_high_ground():
    cliff = simple64.cliff_level_grid()
    for ramp in simple64.RAMPS:
        (lx, ly), (hx, hy) = ramp.low, ramp.high
        levels = [cliff[_cell((lx + t * (hx - lx), ly + t * (hy - ly)))] for t in np.linspace(0, 0.9, 10)]
        assert levels[0] == 136 and levels == sorted(levels) and levels[-1] > levels[0]


def test_rocks_block_placement_not_pathing():
    path, place = simple64.pathing_grid(), simple64.placement_grid()
    for r in simple64.ROCKS:
        cells = simple64.footprint_cells(r, simple64.ROCK_FOOTPRINT)
        assert path[cells].all() and not place[cells].any()


def test_height_is_cliff_level_over_16():
    np.testing.assert_array_equal(simple64.height_grid(), simple64.cliff_level_grid().astype(np.float32) / 16)


def test_playable_area_is_64_by_64_around_the_map_centre():
    (x0, y0), (x1, y1) = simple64.PLAYABLE_AREA
    assert (x1 - x0, y1 - y0) == (64, 64) and ((x0 + x1) / 2, (y0 + y1) / 2) == (44, 44)


def test_footprint_cells_refuses_an_off_grid_centre():
    with pytest.raises(ValueError, match="off the cell grid"):
        simple64.footprint_cells((28.0, 60.5), (5, 5))


def test_polygon_mask_refuses_fewer_than_three_vertices():
    with pytest.raises(ValueError, match="at least 3"):
        simple64.polygon_mask([(0, 0), (1, 1)])


def test_from_map_archive_names_the_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="Simple64"):
        simple64.from_map_archive(tmp_path / "Simple64.SC2Map")


def test_recorded_agreement_meets_the_bar():
    assert simple64.TERRAIN_AGREEMENT["cliff_level_all_cells"] >= 0.98


def _user_map() -> Path | None:
    env = os.environ.get("SC2_ENVS_SIMPLE64_MAP")
    path = Path(env) if env else simple64.default_map_path()
    return path if path.is_file() else None


@pytest.mark.skipif(_user_map() is None, reason="needs a Simple64.SC2Map: set SC2_ENVS_SIMPLE64_MAP or install the map")
def test_description_agrees_with_the_map_archive():
    arc = simple64.from_map_archive(_user_map())
    assert arc.playable_area == simple64.PLAYABLE_AREA
    assert (simple64.cliff_level_grid() == arc.cliff_level).mean() >= 0.98
    for p in simple64.START_LOCATIONS:
        assert arc.pathable[_cell(p)]


def test_served_placement_grid_is_the_description_moved_by_the_measured_offset():
    from sc2_envs.lite.maps import PLACEMENT_OFFSET, load_map

    dx, dy = PLACEMENT_OFFSET
    served = load_map("Simple64").placement
    desc = simple64.placement_grid(rocks=False)
    # a cell of the main plateau, away from the rocks and the grid's border
    for x, y in ((18, 59), (30, 53), (40, 60)):
        assert served[y, x] == desc[y + dy, x + dx]
