"""sc2_envs.adapters.StarCraft2Env (SMAC's class on the embedded simulator) and the API server's game_info.

Both publish SMAC's ``terrain_height``: oxwhirl/smac ``smac/env/starcraft2/starcraft2.py`` ``_launch``
reads ``GameInfo.start_raw.terrain_height`` (row-major, one byte per cell), transposes it, flips it in
y and divides by 255. These checks pin that the adapter's attribute and the server's bytes (decoded as
SMAC does) equal the height the simulator's ``obs_terrain_height`` reads.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
import torch

from sc2_envs.adapters.smac_compat import StarCraft2Env
from sc2_envs.maps import MAP_SIZE, get_map
from sc2_envs.sim.rules.features import FeatureConfig, RewardConfig, SMACFeatures
from sc2_envs.sim.state import UnitTable


def _sim_height(map_name: str) -> np.ndarray:
    spec = get_map(map_name)
    feat = SMACFeatures(
        spec,
        UnitTable.build(spec, torch.device("cpu")),
        FeatureConfig(obs_terrain_height=True),
        RewardConfig(),
        torch.device("cpu"),
    )
    return feat._height.numpy()  # [x, y] float32


@pytest.mark.parametrize("map_name", ["3m", "2c_vs_64zg"])
def test_adapter_constructs_steps_and_matches_simulator_height(map_name):
    env = StarCraft2Env(map_name=map_name, seed=0)
    try:
        assert env.terrain_height.shape == (MAP_SIZE, MAP_SIZE)
        np.testing.assert_allclose(env.terrain_height, _sim_height(map_name), atol=1e-6)
        env.reset()
        for _ in range(3):
            actions = [int(np.flatnonzero(env.get_avail_agent_actions(a))[0]) for a in range(env.n_agents)]
            reward, terminated, info = env.step(actions)
            assert np.isfinite(reward)
            assert isinstance(terminated, bool)
        assert env.get_obs()[0].shape == (env.get_obs_size(),)
    finally:
        env.close()


def test_server_game_info_height_decodes_like_smac_to_simulator_height():
    pytest.importorskip("s2clientprotocol", reason="the API server needs s2clientprotocol (full-game extra)")
    from sc2_envs.sc2api.server import SC2APIGame

    game = SC2APIGame()
    game.status, game.map_name = "in_game", "2c_vs_64zg"
    game.sim = SimpleNamespace(spec=get_map("2c_vs_64zg"))
    game.options = game.sc.InterfaceOptions(raw=True)
    resp = game.sc.Response()
    game._on_game_info(None, resp)
    data = resp.game_info.start_raw.terrain_height.data
    # SMAC _launch: np.flip(np.transpose(np.array(list(data)).reshape(map_x, map_y)), 1) / 255
    smac = np.flip(np.transpose(np.array(list(data)).reshape(MAP_SIZE, MAP_SIZE)), 1) / 255
    expected = _sim_height("2c_vs_64zg")
    assert not np.allclose(expected, expected[:, ::-1]), "2c_vs_64zg's plateau should make the y flip visible"
    np.testing.assert_allclose(smac, expected, atol=1e-6)
