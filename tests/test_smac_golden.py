"""SMACFeatures against golden vectors produced by SMAC v1's own code (oxwhirl/smac d6aab33).

The golden files (``tests/data/smac_golden/<map>.json``, see its README) hold fabricated unit
configurations with SMAC's ``get_obs_agent``, ``get_state``, ``get_avail_agent_actions`` and
``reward_battle`` outputs (default flags). Each map's 20 feature cases are checked as one batch of
20 envs, which also exercises the vectorisation. The last tests cover SMAC rules the golden data
does not (end-of-battle codes, sparse reward, the ``reward_clip_regen`` option).
"""

from __future__ import annotations

import json

import pytest
import torch

from sc2_envs.maps import get_map
from sc2_envs.sim.rules.features import FeatureConfig, RewardConfig, SMACFeatures
from sc2_envs.sim.state import UnitTable, WorldState

GOLDEN_MAPS = ["3m", "8m", "5m_vs_6m", "10m_vs_11m", "2s3z", "3s5z", "3s5z_vs_3s6z", "1c3s5z", "MMM", "MMM2"]
ATOL = 1e-5
DEVICE = torch.device("cpu")


def _load(test_data_dir, name: str) -> dict:
    path = test_data_dir / "smac_golden" / f"{name}.json"
    assert path.is_file(), f"golden SMAC data {path} is missing from the repository (tests/data/smac_golden)"
    with open(path) as f:
        return json.load(f)


def _features(name: str, **reward_kwargs) -> SMACFeatures:
    spec = get_map(name)
    return SMACFeatures(spec, UnitTable.build(spec, DEVICE), FeatureConfig(), RewardConfig(**reward_kwargs), DEVICE)


def _check_roster(feat: SMACFeatures, units: list[dict]) -> None:
    """The golden units must be the map's roster, with our table's max health and shield."""
    t = feat.table
    assert [u["type"] for u in units] == t.names
    assert [float(u["health_max"]) for u in units] == t.max_health.tolist()
    assert [float(u["shield_max"]) for u in units] == t.max_shield.tolist()


def _fill(st: WorldState, b: int, units: list[dict], prev: bool = False) -> None:
    """Write one env's units (agent ids, then enemy ids) into ``st`` (or its ``prev_*`` snapshot)."""
    for k, u in enumerate(units):
        if prev:
            st.prev_health[b, k] = u["health"]
            st.prev_shield[b, k] = u["shield"]
            st.prev_alive[b, k] = u["health"] > 0
            continue
        st.pos[b, k, 0] = u["x"]
        st.pos[b, k, 1] = u["y"]
        st.health[b, k] = u["health"]
        st.shield[b, k] = u["shield"]
        st.cooldown[b, k] = u["weapon_cooldown"]
        st.energy[b, k] = u["energy"]
        st.alive[b, k] = u["health"] > 0  # SMAC: health 0 means dead


@pytest.mark.parametrize("name", GOLDEN_MAPS)
def test_golden_obs_state_avail(test_data_dir, name):
    gold = _load(test_data_dir, name)
    feat = _features(name)
    cases = gold["feature_cases"]
    assert (feat.n_agents, feat.n_enemies, feat.n_actions) == (gold["n_agents"], gold["n_enemies"], gold["n_actions"])
    st = WorldState.empty(len(cases), feat.n_units, feat.n_agents, DEVICE)
    for b, case in enumerate(cases):
        units = case["allies"] + case["enemies"]
        _check_roster(feat, units)
        _fill(st, b, units)
        st.last_action[b] = torch.tensor(case["last_action"])

    avail = feat.avail_actions(st)
    obs = feat.obs(st, avail)
    state = feat.state(st)
    assert avail.dtype == torch.bool and obs.dtype == torch.float32 and state.dtype == torch.float32
    want_avail = torch.tensor([c["avail"] for c in cases], dtype=torch.bool)
    want_obs = torch.tensor([c["obs"] for c in cases], dtype=torch.float32)
    want_state = torch.tensor([c["state"] for c in cases], dtype=torch.float32)
    assert obs.shape == want_obs.shape == (len(cases), feat.n_agents, feat.obs_size)
    assert state.shape == want_state.shape == (len(cases), feat.state_size)
    for b in range(len(cases)):
        assert torch.equal(avail[b], want_avail[b]), f"{name} case {b}: avail differs"
        torch.testing.assert_close(obs[b], want_obs[b], atol=ATOL, rtol=0, msg=lambda m, b=b: f"{name} case {b} obs: {m}")
        torch.testing.assert_close(
            state[b], want_state[b], atol=ATOL, rtol=0, msg=lambda m, b=b: f"{name} case {b} state: {m}"
        )


@pytest.mark.parametrize("name", GOLDEN_MAPS)
def test_golden_reward(test_data_dir, name):
    gold = _load(test_data_dir, name)
    cases = gold["reward_cases"]
    pos_raw = _features(name, reward_scale=False)
    signed_raw = _features(name, reward_scale=False, reward_only_positive=False)
    pos_scaled = _features(name)
    signed_scaled = _features(name, reward_only_positive=False)
    assert pos_scaled.max_reward == gold["max_reward"]

    st = WorldState.empty(len(cases), pos_raw.n_units, pos_raw.n_agents, DEVICE)
    for b, case in enumerate(cases):
        _check_roster(pos_raw, case["allies"] + case["enemies"])
        _fill(st, b, case["allies"] + case["enemies"])
        _fill(st, b, case["prev_allies"] + case["prev_enemies"], prev=True)
    # Bonuses are not part of the golden values: score every case as a battle still running.
    no = torch.zeros(len(cases), dtype=torch.bool)
    want_pos = torch.tensor([c["reward_raw_only_positive"] for c in cases], dtype=torch.float64)
    want_signed = torch.tensor([c["reward_raw_signed"] for c in cases], dtype=torch.float64)
    scale = gold["max_reward"] / 20
    # rtol: the float32 result of a raw reward of a few hundred carries ~3e-5 rounding.
    tol = dict(atol=ATOL, rtol=1e-6)
    torch.testing.assert_close(pos_raw.reward(st, no, no).double(), want_pos, **tol)
    torch.testing.assert_close(signed_raw.reward(st, no, no).double(), want_signed, **tol)
    torch.testing.assert_close(pos_scaled.reward(st, no, no).double(), want_pos / scale, **tol)
    torch.testing.assert_close(signed_scaled.reward(st, no, no).double(), want_signed / scale, **tol)
    assert (want_pos != 0).any() and (want_signed < 0).any(), "golden cases should exercise both signs"


# ---------------------------------------------------------------------------------------------
# SMAC rules outside the golden data (hand-built states, values derived from starcraft2.py).


def _state(feat: SMACFeatures, alive: list[list[bool]]) -> WorldState:
    st = WorldState.empty(len(alive), feat.n_units, feat.n_agents, DEVICE)
    st.alive[:] = torch.tensor(alive)
    st.health[:] = torch.where(st.alive, feat.table.max_health, 0.0)
    st.prev_alive[:] = st.alive
    st.prev_health[:] = st.health
    st.pos[:, :, 0] = 16.0
    st.pos[:, :, 1] = 16.0
    return st


def test_game_result_mmm_medivac_rules():
    feat = _features("MMM")  # allies: 2 marauders, 7 marines, medivac 9; enemies the same
    full = [True] * 10
    only_medivac = [False] * 9 + [True]
    none = [False] * 10
    marine_only = [False, False, True] + [False] * 7
    two = [False, False, True] + [False] * 6 + [True]
    rows = [
        full + full,  # running
        only_medivac + full,  # ally medivac alone: loss
        full + only_medivac,  # lone enemy medivac: win
        none + none,  # both wiped: loss on MMM (no non-medivac ally)
        full + marine_only,  # one enemy marine: running
        full + two,  # enemy marine + medivac: running
        full + none,  # win
    ]
    won, lost, draw = feat.game_result(_state(feat, rows))
    assert won.tolist() == [False, False, True, False, False, False, True]
    assert lost.tolist() == [False, True, False, True, False, False, False]
    assert not draw.any()


def test_game_result_plain_map_draw():
    feat = _features("3m")
    won, lost, draw = feat.game_result(
        _state(feat, [[True] * 6, [False] * 6, [True] * 3 + [False] * 3, [False] * 3 + [True] * 3])
    )
    assert won.tolist() == [False, False, True, False]
    assert lost.tolist() == [False, False, False, True]
    assert draw.tolist() == [False, True, False, False]


def test_reward_regen_abs_vs_clip_and_bonuses():
    # An enemy stalker regenerates 1 shield and nothing else happens: SMAC's abs() pays +1 raw.
    kw = dict(reward_scale=False)
    smac, clip = _features("2s3z", **kw), _features("2s3z", reward_clip_regen=True, **kw)
    st = _state(smac, [[True] * 10])
    st.prev_shield[0, 5] = 40.0
    st.shield[0, 5] = 41.0
    no = torch.zeros(1, dtype=torch.bool)
    yes = torch.ones(1, dtype=torch.bool)
    assert smac.reward(st, no, no).item() == 1.0
    assert clip.reward(st, no, no).item() == 0.0
    assert smac.reward(st, yes, no).item() == 201.0
    assert _features("2s3z", reward_defeat=-7, **kw).reward(st, no, yes).item() == -6.0
    sparse = _features("2s3z", reward_sparse=True, **kw)
    assert [sparse.reward(st, w, l).item() for w, l in ((no, no), (yes, no), (no, yes))] == [0.0, 1.0, -1.0]
    scaled = _features("2s3z")
    assert scaled.reward(st, yes, no).item() == pytest.approx(201.0 / (1020 / 20), rel=1e-6)


def test_dead_agent_obs_and_avail():
    feat = SMACFeatures(
        get_map("3m"), UnitTable.build(get_map("3m"), DEVICE), FeatureConfig(obs_timestep_number=True), RewardConfig(), DEVICE
    )
    st = _state(feat, [[False, True, True, True, True, True]])
    st.episode_steps[0] = 30
    avail = feat.avail_actions(st)
    assert avail[0, 0].tolist() == [True] + [False] * 8
    obs = feat.obs(st, avail)
    assert obs.shape[-1] == 32  # SMAC's get_obs_size() says 31; the real vector has a dead slot
    assert torch.count_nonzero(obs[0, 0, :-1]) == 0
    assert obs[0, 0, -1].item() == 0.5 and obs[0, 1, -2].item() == 0.0  # timestep; the reserved own slot


def test_visibility_attack_and_move_boundaries():
    # 3m's terrain from its map archive (walkable rows y = 8..23). Agent 0 at (0.5, 16): its West probe is
    # int(-0.5) = 0 (Python truncation), inside the map; agent 1 at (31.5, 16): East probe int(32.5) is
    # outside. Enemy 0 is exactly 6 from agent 0 (attackable), enemy 1 exactly 9 (not visible).
    feat = SMACFeatures(
        get_map("3m"), UnitTable.build(get_map("3m"), DEVICE), FeatureConfig(obs_pathing_grid=True), RewardConfig(), DEVICE
    )
    st = _state(feat, [[True] * 6])
    st.pos[0] = torch.tensor([[0.5, 16.0], [31.5, 16.0], [0.5, 23.5], [6.5, 16.0], [0.5, 7.0], [20.0, 16.0]])
    avail = feat.avail_actions(st)
    # [no-op, stop, N, S, E, W, attack e0, e1, e2]
    assert avail[0, 0].tolist() == [False, True, True, True, True, True, True, False, False]
    assert avail[0, 1].tolist() == [False, True, True, True, False, True, False, False, False]
    # Agent 1 at y = 22.5: North probes row 23 (walkable); agent 2 at y = 8: South probes row 7 (not).
    st.pos[0, 1] = torch.tensor([0.5, 22.5])
    st.pos[0, 2] = torch.tensor([10.0, 8.0])
    avail = feat.avail_actions(st)
    assert avail[0, 1, 2].item() and not avail[0, 2, 3].item()
    obs = feat.obs(st, avail)
    lay = feat.env_info()["obs_layout"]
    e0 = obs[0, 0, lay["move_feats"] : lay["move_feats"] + lay["enemy_feats"]]
    e1 = obs[0, 0, lay["move_feats"] + lay["enemy_feats"] : lay["move_feats"] + 2 * lay["enemy_feats"]]
    assert e0.tolist() == pytest.approx([1.0, 6 / 9, 6 / 9, 0.0, 1.0])
    assert torch.count_nonzero(e1) == 0
    # Pathing points of agent 0 at cell (0, 16): x-4 and x-2 are outside the map and read as 1;
    # (4, 20), (0, 12), (2, 18), (2, 14) are walkable.
    assert obs[0, 0, 4:12].tolist() == [1.0] * 8
    # Agent 2 at cell (10, 8): (10, 4), (8, 6), (12, 6) are below the band.
    assert obs[0, 2, 4:12].tolist() == [1.0, 0.0, 1.0, 1.0, 1.0, 0.0, 0.0, 1.0]
