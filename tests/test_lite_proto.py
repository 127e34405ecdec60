"""The lite engine's direct arrays equal ``convert.observation_to_arrays`` of its SC2 API messages."""

import numpy as np
import pytest

from sc2_envs.full_game._deps import MissingDependencyError, require

try:
    sc_pb = require("s2clientprotocol.sc2api_pb2", "the lite proto tests")
    common_pb2 = require("s2clientprotocol.common_pb2", "the lite proto tests")
except MissingDependencyError as e:
    pytest.skip(f"the full-game extra is not usable here: {e}", allow_module_level=True)

from sc2_envs.full_game import convert
from sc2_envs.lite.env import LiteFullGameEnv
from sc2_envs.lite.policy import RandomLegalPolicy
from sc2_envs.lite.proto import observation_proto


def context(env):
    info = sc_pb.ResponseGameInfo(map_name="Simple64")
    info.start_raw.map_size.x, info.start_raw.map_size.y = env.engine.map.map_size
    info.player_info.add(player_id=1, type=sc_pb.Participant, race_requested=common_pb2.Protoss)
    info.player_info.add(player_id=2, type=sc_pb.Computer, race_requested=common_pb2.Terran)
    return convert.context_from_game_info(
        info, 1, raw_resolution=env.raw_resolution, max_entities=env.max_entities, max_selected=env.max_selected,
        minimap_resolution=env.minimap_resolution,
    )  # fmt: skip


@pytest.mark.parametrize("omniscient", [False, True])
def test_direct_arrays_equal_the_conversion_of_the_served_protos(omniscient):
    env = LiteFullGameEnv(max_entities=256, max_selected=8, omniscient=omniscient, game_steps_per_episode=3200)
    obs, _ = env.reset(seed=5)
    policy = RandomLegalPolicy(env.engine.catalog, env.max_entities, env.max_selected, noop_prob=0.3, seed=1)
    ctx = context(env)
    core = env._games
    last = (0, 0, 0)
    for step in range(400):
        resp, query = observation_proto(env.engine, core.observer, 0)
        wire = sc_pb.ResponseObservation.FromString(resp.SerializeToString())
        converted, tags = convert.observation_to_arrays(wire, ctx, last, query)
        if step % 40 == 0 or step == 399:
            for key, value in obs.items():
                np.testing.assert_array_equal(converted[key], value, err_msg=f"{key} at step {step}")
            assert (tags[obs["entity_mask"] == 1] == core.observer.row_tag[0][obs["entity_mask"] == 1].astype(np.uint64)).all()
        action = policy(obs)
        obs, _, terminated, truncated, _ = env.step(action)
        last = tuple(int(v) for v in core.observer.last_action[0])
        if terminated or truncated:
            break
    # the compared observations were not trivial: entities with orders, and (with fog) snapshots
    ents = converted["entities"]
    assert converted["entity_mask"].sum() > 40 and (ents[:, convert.spec.ENTITY_INDEX["order_id_0"]] > 0).sum() > 5
    assert omniscient or (ents[:, convert.spec.ENTITY_INDEX["display_type"]] == 2).sum() > 0


def test_the_bots_lowered_depot_is_served_as_supply_depot_lowered_in_protos_and_arrays():
    # SupplyDepotLowered: unit type 47 (s2client-proto stableid.json); the bot lowers its first depot by loop 942
    env = LiteFullGameEnv(max_entities=256, omniscient=True, game_steps_per_episode=2000)
    obs, _ = env.reset(seed=0)
    while env.engine.game_loop[0] < 960:
        obs, *_ = env.step({"action_type": 0})
    resp, query = observation_proto(env.engine, env._games.observer, 0)
    depots = [u for u in resp.observation.raw_data.units if u.unit_type in (19, 47) and u.owner == 2]
    assert [u.unit_type for u in depots] == [47]
    converted, _ = convert.observation_to_arrays(resp, context(env), (0, 0, 0), query)
    rows = obs["entities"][obs["entity_mask"] == 1, convert.spec.ENTITY_INDEX["unit_type"]]
    assert convert.spec.unit_type_index(47) in rows
    np.testing.assert_array_equal(converted["entities"], obs["entities"])
