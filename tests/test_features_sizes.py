"""Observation, state and action sizes of SMACFeatures against SMAC v1's, on every map.

Expected values were obtained by executing SMAC's own size and feature code (oxwhirl/smac
``smac/env/starcraft2/starcraft2.py``), except where marked "formula": those maps were not run and
the value is SMAC's ``get_obs_size`` / ``get_state_size`` worked out by hand for the map's races and
``unit_type_bits``.
"""

from __future__ import annotations

import pytest
import torch

from sc2_envs.maps import get_map, list_maps
from sc2_envs.sim.rules.features import FeatureConfig, RewardConfig, SMACFeatures
from sc2_envs.sim.state import UnitTable, WorldState

DEVICE = torch.device("cpu")

# map: (obs, state, n_actions, max_reward) with default flags.
SMAC_SIZES = {
    "3m": (30, 48, 9, 365),
    "8m": (80, 168, 14, 640),
    "25m": (250, 950, 31, 1575),  # formula: state 25*4 + 25*3 + 25*31, max_reward 250 + 200 + 25*45
    "5m_vs_6m": (55, 98, 12, 530),
    "8m_vs_9m": (85, 179, 15, 695),  # state: formula 8*4 + 9*3 + 8*15
    "10m_vs_11m": (105, 243, 17, 805),
    "27m_vs_30m": (285, 1170, 36, 1850),
    "2s3z": (80, 120, 11, 1020),
    "3s5z": (128, 216, 14, 1510),
    "3s5z_vs_3s6z": (136, 230, 15, 1670),
    "1c3s5z": (162, 270, 15, 1870),
    "MMM": (160, 290, 16, 1015),
    "MMM2": (176, 322, 18, 1205),
    # formula: obs 4 + 3*6 + 2*6 + 2, state 3*5 + 3*4 + 3*9, max_reward 30 + 200 + 3*150
    "3s_vs_3z": (36, 54, 9, 680),
    # formula: obs 4 + 4*6 + 2*6 + 2, state 3*5 + 4*4 + 3*10, max_reward 40 + 200 + 4*150
    "3s_vs_4z": (42, 61, 10, 840),
    "3s_vs_5z": (48, 68, 11, 1000),
    "2s_vs_1sc": (17, 27, 7, 510),
    "2m_vs_1z": (16, 26, 7, 360),
    "6h_vs_8z": (78, 140, 14, 1480),
    "corridor": (156, 282, 30, 1280),
    "so_many_baneling": (202, 397, 38, 1480),
    "bane_vs_bane": (336, 984, 30, 1260),
    # formula: obs 4 + 64*5 + 1*6 + 2, state 2*5 + 64*3 + 2*70, max_reward 640 + 200 + 64*35
    "2c_vs_64zg": (332, 342, 70, 3080),
}

# Flag deltas on 3m / 2s3z: (FeatureConfig kwargs, obs 3m, obs 2s3z, state 3m, state 2s3z).
FLAG_CASES = [
    (dict(obs_last_action=True), 48, 124, 48, 120),
    (dict(obs_pathing_grid=True), 38, 88, 48, 120),
    (dict(obs_terrain_height=True), 39, 89, 48, 120),
    (dict(obs_all_health=False), 25, 62, 48, 120),
    (dict(obs_all_health=False, obs_own_health=False), 24, 60, 48, 120),
    (dict(obs_instead_of_state=True), 30, 80, 90, 400),
    # SMAC's get_obs_size() says 31 / 81, but the vector it returns is one longer (measured by running SMAC).
    (dict(obs_timestep_number=True), 32, 82, 48, 120),
    (dict(obs_timestep_number=True, obs_instead_of_state=True), 32, 82, 96, 410),
    # formula: state without the last-action block / with the timestep.
    (dict(state_last_action=False), 30, 80, 21, 65),
    (dict(state_timestep_number=True), 30, 80, 49, 121),
]


def _features(name: str, **flags) -> SMACFeatures:
    spec = get_map(name)
    return SMACFeatures(spec, UnitTable.build(spec, DEVICE), FeatureConfig(**flags), RewardConfig(), DEVICE)


def _spawned_state(feat: SMACFeatures, num_envs: int = 2) -> WorldState:
    st = WorldState.empty(num_envs, feat.n_units, feat.n_agents, DEVICE)
    st.pos[:] = feat.table.spawn_pos
    st.health[:] = feat.table.max_health
    st.shield[:] = feat.table.max_shield
    st.alive[:] = True
    return st


def _check_layout(feat: SMACFeatures) -> None:
    info = feat.env_info()
    lay, sl = info["obs_layout"], info["state_layout"]
    assert info["obs_shape"] == feat.obs_size and info["state_shape"] == feat.state_size
    assert feat.obs_size == (
        lay["move_feats"]
        + lay["n_enemies"] * lay["enemy_feats"]
        + lay["n_allies"] * lay["ally_feats"]
        + lay["own_feats"]
        + lay["timestep_feats"]
    )
    assert len(lay["enemy_feature_names"]) == lay["enemy_feats"]
    assert len(lay["ally_feature_names"]) == lay["ally_feats"]
    assert len(lay["own_feature_names"]) == lay["own_feats"]
    if sl["obs_instead_of_state"]:
        assert feat.state_size == sl["n_agents"] * feat.obs_size
    else:
        assert feat.state_size == (
            sl["n_agents"] * sl["ally_state_feats"]
            + sl["n_enemies"] * sl["enemy_state_feats"]
            + sl["last_action_feats"]
            + sl["timestep_feats"]
        )
        assert len(sl["ally_state_feature_names"]) == sl["ally_state_feats"]
        assert len(sl["enemy_state_feature_names"]) == sl["enemy_state_feats"]


def _check_tensors(feat: SMACFeatures) -> None:
    st = _spawned_state(feat)
    avail = feat.avail_actions(st)
    obs, state = feat.obs(st, avail), feat.state(st)
    assert avail.shape == (2, feat.n_agents, feat.n_actions) and avail.dtype == torch.bool
    assert obs.shape == (2, feat.n_agents, feat.obs_size) and obs.dtype == torch.float32
    assert state.shape == (2, feat.state_size) and state.dtype == torch.float32
    assert avail[..., 1].all() and not avail[..., 0].any()  # alive agents: stop, never no-op


def test_every_map_has_expected_sizes():
    assert sorted(SMAC_SIZES) == list_maps()


@pytest.mark.parametrize("name", list_maps())
def test_default_sizes(name):
    obs, state, n_actions, max_reward = SMAC_SIZES[name]
    feat = _features(name)
    assert (feat.obs_size, feat.state_size, feat.n_actions) == (obs, state, n_actions)
    assert feat.max_reward == max_reward
    _check_layout(feat)
    _check_tensors(feat)


@pytest.mark.parametrize("flags,obs_3m,obs_2s3z,state_3m,state_2s3z", FLAG_CASES)
def test_flag_sizes(flags, obs_3m, obs_2s3z, state_3m, state_2s3z):
    for name, obs, state in (("3m", obs_3m, state_3m), ("2s3z", obs_2s3z, state_2s3z)):
        feat = _features(name, **flags)
        assert (feat.obs_size, feat.state_size) == (obs, state), (name, flags)
        _check_layout(feat)
        _check_tensors(feat)


def test_all_flags_on_every_map():
    flags = dict(
        obs_last_action=True,
        obs_pathing_grid=True,
        obs_terrain_height=True,
        obs_timestep_number=True,
        state_timestep_number=True,
    )
    for name in list_maps():
        feat = _features(name, **flags)
        _check_layout(feat)
        _check_tensors(feat)
