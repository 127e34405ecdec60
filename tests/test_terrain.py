"""Terrain of the SMAC maps (pathing, cliff levels, height) and the enemy orders of the map scripts.

The grids are derived from SMAC's map archives (oxwhirl/smac ``smac/env/starcraft2/maps/SMAC_Maps``)
by ``scripts/derive_terrain.py`` and committed in ``sc2_envs/data/smac_terrain.npz``. Set
``SMAC_MAPS_DIR`` to a folder with the 23 ``.SC2Map`` archives (and ``pip install mpyq``) to
re-derive them here.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import numpy as np
import pytest
import torch

from sc2_envs import make_batched
from sc2_envs.maps import (
    CLIFF_STEP,
    TERRAIN_FILE,
    get_map,
    ground_distances,
    list_maps,
    needs_routing,
    terrain_grids,
)
from sc2_envs.sim import UnitPlacement as P
from sc2_envs.sim.rules.features import FeatureConfig, RewardConfig, SMACFeatures
from sc2_envs.sim.state import ORDER_ATTACK, ORDER_MOVE, UnitTable

ROOT = Path(__file__).resolve().parents[1]
BAND_MAPS = [
    "3m",
    "8m",
    "25m",
    "5m_vs_6m",
    "8m_vs_9m",
    "10m_vs_11m",
    "27m_vs_30m",
    "MMM",
    "MMM2",
    "2s3z",
    "3s5z",
    "3s5z_vs_3s6z",
    "1c3s5z",
]
OPEN_MAPS = ["3s_vs_3z", "3s_vs_4z", "3s_vs_5z"]


def _derive_module():
    spec = importlib.util.spec_from_file_location("derive_terrain", ROOT / "scripts" / "derive_terrain.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _cell(x, y):
    return int(x) * 32 + int(y)


def test_every_smac_map_has_archive_grids():
    """All 23 SMAC maps load their own archive-derived grids, [32, 32] indexed [x, y]."""
    with np.load(TERRAIN_FILE) as f:
        names = {k.split("/")[0] for k in f.files}
    assert names == set(list_maps()) and len(names) == 23
    for name in list_maps():
        g = terrain_grids(get_map(name).terrain)
        assert get_map(name).terrain == name
        assert g.pathing.shape == g.cliff_level.shape == g.height.shape == (32, 32)
        assert g.pathing.dtype == bool and g.height.dtype == np.uint8
        assert (g.cliff_level[g.pathing] > 0).all() or name in ("6h_vs_8z", "2s_vs_1sc")


def test_committed_grids_equal_the_map_archives():
    """Re-derive every grid from SMAC's archives (SMAC_MAPS_DIR) and compare with the committed file."""
    maps_dir = os.environ.get("SMAC_MAPS_DIR")
    if not maps_dir:
        pytest.skip("SMAC_MAPS_DIR is not set (a folder with oxwhirl/smac's SMAC_Maps/*.SC2Map archives)")
    pytest.importorskip("mpyq", reason="re-deriving the grids reads the MPQ archives with mpyq")
    derived = _derive_module().derive_all(Path(maps_dir))
    with np.load(TERRAIN_FILE) as f:
        assert sorted(f.files) == sorted(derived)
        for k, v in derived.items():
            assert np.array_equal(f[k], v), k


def test_pathing_equals_editor_flags_on_axis_aligned_cliffs():
    """On the band and open maps (straight cliffs) the cell pathing is exactly t3CellFlags' pathing;
    elsewhere the two differ only in single cells along diagonal cliffs (at most 14, corridor)."""
    with np.load(TERRAIN_FILE) as f:
        for name in BAND_MAPS + OPEN_MAPS:
            assert np.array_equal(f[f"{name}/pathing"], f[f"{name}/editor_pathing"]), name
        for name in set(list_maps()) - set(BAND_MAPS + OPEN_MAPS):
            assert 0 < int((f[f"{name}/pathing"] != f[f"{name}/editor_pathing"]).sum()) <= 14, name


def test_band_maps_walk_rows_8_to_23_and_open_maps_everything():
    """Marine/stalker-zealot/MMM maps: cliff level 64 on rows 7..24, the cliff faces on rows 7 and 24."""
    for name in BAND_MAPS:
        g = terrain_grids(name)
        assert g.pathing[:, 8:24].all() and not g.pathing[:, :8].any() and not g.pathing[:, 24:].any(), name
        assert (g.cliff_level[:, 7:25] == 64).all() and (g.height[g.pathing] == 191).all()
    for name in OPEN_MAPS:
        assert terrain_grids(name).pathing.all()


def test_2c_vs_64zg_plateau_is_level_128_reached_by_two_ramps():
    """2c_vs_64zg: plateau 128 at x 7..24, y 13..20 (height 10 -> byte 207), low ground 64 (byte 191),
    ramps of levels 72/88/104 at x 4..6 and 25..27; from the zerglings' spawn to the colossi's the
    ground path goes round through a ramp (28.7 world units for a 7-unit straight line)."""
    g = terrain_grids("2c_vs_64zg")
    assert g.cliff_level[16, 16] == 128 and g.cliff_level[16, 9] == 64
    assert set(np.unique(g.cliff_level[4:7, 14:18]).tolist()) == {72, 88, 104}
    assert g.height[16, 16] == 207 and g.height[16, 9] == 191
    assert not g.pathing[7:25, 12:14].any()  # the cliff face between the levels
    assert g.cliff_walkable[7:25, 12:14].all()  # ... which the colossus crosses
    assert needs_routing("2c_vs_64zg") and not needs_routing("3m")
    d = ground_distances("2c_vs_64zg")[_cell(16, 9), _cell(16, 16)]
    assert d == pytest.approx(28.657, abs=1e-3)


def test_corridor_neck_joins_the_zergling_spawn_to_the_attack_point():
    """corridor: the lower-left block and the upper-right area are joined by a neck, so the
    zerglings' attack-move from (27.91, 28.24) to (4.47, 4.33) is reachable on the ground."""
    assert np.isfinite(ground_distances("corridor")[_cell(27.91, 28.24), _cell(4.47, 4.33)])
    g = terrain_grids("corridor")
    assert g.pathing[:12, :12].sum() > 80 and g.pathing[14:, 14:].sum() > 180
    assert g.pathing[:, 12].sum() <= 6  # the neck


def _walk(e, orders, loops):
    """Give units ``{u: (x, y)}`` move orders and run ``loops`` game loops; positions per loop."""
    st = e.st
    for u, pt in orders.items():
        st.order_kind[0, u] = ORDER_MOVE
        st.order_point[0, u] = torch.tensor(pt)
        st.order_target[0, u] = -1
    out = []
    for _ in range(loops):
        e.dynamics.advance(st)
        out.append(st.pos[0].clone())
    return torch.stack(out)  # [loops, U, 2]


def test_zergling_below_the_2c_vs_64zg_plateau_walks_round_via_a_ramp():
    """SC2 ground units change cliff level only on ramps: a zergling at (12, 9) sent to (12, 17) on
    the plateau walks round through the western ramp (x < 7), never over the cliff face."""
    e = make_batched("2c_vs_64zg", num_envs=1, seed=0, autoreset=False, spawn_jitter=0.0)
    e.reset()
    zergling = e.n_agents + 63
    e.set_units(0, [None, None], [None] * 63 + [P(12, 9)])
    path = _walk(e, {zergling: (12.0, 17.0)}, 8 * 30)[:, zergling]
    assert path[-1].tolist() == pytest.approx([12.0, 17.0], abs=1e-4)
    on_face = (path[:, 1] >= 12) & (path[:, 1] < 14) & (path[:, 0] >= 7) & (path[:, 0] < 25)
    assert not on_face.any()
    assert (path[:, 0] < 7).any() and ((path[:, 1] > 14) & (path[:, 0] < 7)).any()  # up the ramp


def test_colossus_steps_up_the_cliff():
    """The colossus climbs cliffs (cliff walker): from (16, 9) it walks straight up onto the plateau."""
    e = make_batched("2c_vs_64zg", num_envs=1, seed=0, autoreset=False, spawn_jitter=0.0)
    e.reset()
    e.set_units(0, [P(16, 9), None], [None] * 64)
    path = _walk(e, {0: (16.0, 17.0)}, 8 * 8)[:, 0]
    assert path[-1].tolist() == pytest.approx([16.0, 17.0], abs=1e-4)
    assert (path[:, 0] == 16.0).all()  # straight, no detour
    assert int(terrain_grids("2c_vs_64zg").cliff_level[16, int(path[-1, 1])]) == 2 * CLIFF_STEP


def test_marine_stops_at_the_cliff_face_without_a_path():
    """A straight move into a cliff face stops at its edge on a map without routing (3m's band)."""
    e = make_batched("3m", num_envs=1, seed=0, autoreset=False, spawn_jitter=0.0)
    e.reset()
    path = _walk(e, {0: (float(e.st.pos[0, 0, 0]), 30.0)}, 8 * 20)[:, 0]
    assert float(path[:, 1].max()) < 24.0 and float(path[-1, 1]) > 23.5


@pytest.mark.parametrize("name", list_maps())
def test_spawn_points_are_legal_and_connected(name):
    """Every unit starts on a cell it may stand on, on its spawn point's plateau, and every mobile
    ground enemy can reach the ally spawn on the ground."""
    spec = get_map(name)
    t = UnitTable.build(spec, torch.device("cpu"))
    g = terrain_grids(spec.terrain)
    groups = [grp for grp in spec.allies + spec.enemies for _ in range(grp.count)]
    d = ground_distances(spec.terrain)
    for u, (pos, grp) in enumerate(zip(t.spawn_pos.tolist(), groups, strict=True)):
        x, y = int(pos[0]), int(pos[1])
        assert g.pathing[x, y] or bool(t.is_air[u]), (name, u, pos)
        assert abs(int(g.cliff_level[x, y]) - int(g.cliff_level[int(grp.x), int(grp.y)])) < CLIFF_STEP // 2
        if u >= spec.n_agents and not bool(t.is_air[u]) and not bool(t.is_static[u]):
            a = spec.allies[0]
            assert np.isfinite(d[x * 32 + y, int(a.x) * 32 + int(a.y)]), (name, u)


def test_obs_terrain_height_is_smacs_flipped_height_bytes():
    """SMAC's obs_terrain_height reads the API height bytes / 255 flipped in y (starcraft2.py
    ``_launch``), while the pathing grid is not flipped: on 2c_vs_64zg an agent in cell (16, 16)
    reads cell (16, 15)'s byte (plateau, 207) as its own height."""
    spec = get_map("2c_vs_64zg")
    feat = SMACFeatures(
        spec,
        UnitTable.build(spec, torch.device("cpu")),
        FeatureConfig(obs_terrain_height=True),
        RewardConfig(),
        torch.device("cpu"),
    )
    e = make_batched("2c_vs_64zg", num_envs=1, seed=0, autoreset=False, spawn_jitter=0.0)
    e.reset()
    e.set_units(0, [P(16.5, 16.5), P(16.5, 9.5)], [None] * 64)
    st = e.st
    obs = feat.obs(st, feat.avail_actions(st))
    h = terrain_grids("2c_vs_64zg").height
    height = obs[0, :, 4:13]  # N, S, E, W at 4, then the diagonals at 2, then self
    pts = [(0, 4), (0, -4), (4, 0), (-4, 0), (2, 2), (-2, -2), (2, -2), (-2, 2), (0, 0)]
    for a, (cx, cy) in enumerate([(16, 16), (16, 9)]):
        want = [h[cx + dx, 31 - (cy + dy)] / 255.0 for dx, dy in pts]
        assert height[a].tolist() == pytest.approx(want, abs=1e-7)
    # the agent on the low ground at (16, 9) (byte 191) reads the slope north of the plateau instead
    assert height[0, 8].item() == pytest.approx(207 / 255) and height[1, 8].item() == pytest.approx(h[16, 22] / 255)
    assert h[16, 9] == 191 and h[16, 22] != 191


def test_map_scripts_enemy_orders():
    """gf_EnemyAttack: attack-move to a point on 21 maps, none on 2s_vs_1sc, attack the ally unit
    group on 2c_vs_64zg (OrderTargetingUnitGroup(AbilityCommand("attack"), gv_allies))."""
    orders = {name: (get_map(name).enemy_order, get_map(name).attack_point) for name in list_maps()}
    assert orders["2c_vs_64zg"] == ("attack_allies", None)
    assert orders["2s_vs_1sc"] == ("attack_move", None)
    assert orders["corridor"] == orders["so_many_baneling"] == ("attack_move", (4.47, 4.33))
    assert sum(o == "attack_move" and p is not None for o, p in orders.values()) == 21


def test_2c_vs_64zg_zerglings_attack_the_colossi_wherever_they_go():
    """The zerglings hold attack orders on the colossi (not an attack-move to a point): they follow
    a colossus that walks away, and turn to the other colossus when their target dies."""
    e = make_batched("2c_vs_64zg", num_envs=1, seed=0, autoreset=False, spawn_jitter=0.0)
    e.reset()
    N = e.n_agents
    e.set_units(0, [P(28.5, 16.5), P(3.5, 16.5)], [P(16, 9)] + [None] * 63)
    e.step(torch.tensor([[1, 1]]))
    assert int(e.st.order_kind[0, N]) == ORDER_ATTACK
    first = int(e.st.order_target[0, N])
    far = 1 - first
    for _ in range(25):
        e.step(torch.tensor([[1, 1]]))
    gap = float((e.st.pos[0, N] - e.st.pos[0, first]).norm()) - 1.0 - 0.375  # colossus and zergling radii
    assert gap < 0.2  # in melee range of its colossus (about 15 units away at the start, via a ramp)
    e.st.health[0, first] = 0.0
    e.st.alive[0, first] = False
    e.enemy_ai.act(e.st)  # the enemy's order update at the start of the next step
    assert int(e.st.order_target[0, N]) == far and int(e.st.order_kind[0, N]) == ORDER_ATTACK
