"""FullGame-v0: spaces, lazy launch, and conversions on real s2clientprotocol messages.

The protobuf messages are built with the real ``s2clientprotocol`` classes (as StarCraft II
sends them: ``ResponseGameInfo``, ``ResponseObservation``, ``ResponseQuery``) and actions are
serialized to bytes and parsed back, so the conversions are exercised on wire-format protos.
``check_env`` runs against real StarCraft II only where it is installed.
"""

import os
import pickle
import re

import gymnasium as gym
import numpy as np
import pytest

from sc2_envs.full_game._deps import MissingDependencyError, require

try:  # an ImportError, or the old s2clientprotocol dist failing under protobuf >= 4, skips the module
    sc_pb = require("s2clientprotocol.sc2api_pb2", "the full-game tests")
    common_pb2 = require("s2clientprotocol.common_pb2", "the full-game tests")
    query_pb2 = require("s2clientprotocol.query_pb2", "the full-game tests")
    raw_pb2 = require("s2clientprotocol.raw_pb2", "the full-game tests")
    require("pysc2_evolved.lib.actions", "the full-game tests")
except MissingDependencyError as e:
    pytest.skip(f"the full-game extra is not usable here: {e}", allow_module_level=True)

from sc2_envs.full_game import ENV_ID, convert, register_full_game, spec
from sc2_envs.full_game.env import FullGameEnv, SC2NotFoundError, sc2_available, sc2_path

PROBE, NEXUS, MARINE, MINERAL_FIELD = 84, 59, 48, 341
WARP_GATE_RESEARCH = 84
FN = {f.name: f.id for f in spec.raw_functions()}


def game_info(map_x=88, map_y=96):
    info = sc_pb.ResponseGameInfo(map_name="Simple64")
    info.start_raw.map_size.x = map_x
    info.start_raw.map_size.y = map_y
    info.player_info.add(player_id=1, type=sc_pb.Participant, race_requested=common_pb2.Protoss)
    info.player_info.add(player_id=2, type=sc_pb.Computer, race_requested=common_pb2.Terran)
    return info


def add_unit(obs, tag, unit_type, alliance, owner, x, y, **fields):
    u = obs.raw_data.units.add(
        tag=tag, unit_type=unit_type, alliance=alliance, owner=owner, display_type=raw_pb2.Visible, **fields
    )
    u.pos.x, u.pos.y, u.pos.z = x, y, 10.0
    return u


def response_observation():
    """A small real ResponseObservation: a probe (with an order), a nexus, a marine, a mineral."""
    resp = sc_pb.ResponseObservation()
    obs = resp.observation
    obs.game_loop = 224
    pc = obs.player_common
    pc.player_id, pc.minerals, pc.vespene, pc.food_used, pc.food_cap = 1, 75, 0, 13, 15
    pc.food_workers, pc.food_army, pc.idle_worker_count = 13, 0, 1
    obs.raw_data.player.upgrade_ids.append(WARP_GATE_RESEARCH)
    probe = add_unit(
        obs,
        0x100040001,
        PROBE,
        raw_pb2.Self,
        1,
        30.0,
        60.0,
        health=20,
        health_max=20,
        shield=20,
        shield_max=20,
        build_progress=1.0,
    )
    order = probe.orders.add(ability_id=298, target_unit_tag=0x100080001, progress=0.25)  # Harvest_Gather_Probe
    del order
    add_unit(
        obs,
        0x100000001,
        NEXUS,
        raw_pb2.Self,
        1,
        29.5,
        65.5,
        health=1000,
        health_max=1000,
        build_progress=1.0,
        assigned_harvesters=13,
    )
    add_unit(obs, 0x1000C0001, MARINE, raw_pb2.Enemy, 2, 60.0, 30.0, health=45, health_max=45, build_progress=1.0)
    add_unit(obs, 0x100080001, MINERAL_FIELD, raw_pb2.Neutral, 16, 25.0, 60.0, mineral_contents=1800, build_progress=1.0)
    # Minimap: 8-bit height map with a gradient, 1-bit packed pathable plane.
    r = 64
    height = np.arange(r * r, dtype=np.uint32).reshape(r, r) % 251
    renders = obs.feature_layer_data.minimap_renders
    renders.height_map.bits_per_pixel = 8
    renders.height_map.size.x = renders.height_map.size.y = r
    renders.height_map.data = height.astype(np.uint8).tobytes()
    pathable = np.zeros((r, r), dtype=np.uint8)
    pathable[10:20, 5:9] = 1
    renders.pathable.bits_per_pixel = 1
    renders.pathable.size.x = renders.pathable.size.y = r
    renders.pathable.data = np.packbits(pathable).tobytes()
    return sc_pb.ResponseObservation.FromString(resp.SerializeToString())


@pytest.fixture
def ctx():
    return convert.context_from_game_info(
        game_info(), 1, raw_resolution=64, max_entities=8, max_selected=4, minimap_resolution=64
    )


@pytest.fixture
def env():
    e = FullGameEnv(max_entities=8, max_selected=4)
    yield e
    e.close()


def test_spaces_have_documented_shapes(env):
    obs_space, act_space = env.observation_space, env.action_space
    assert obs_space["entities"].shape == (8, len(spec.ENTITY_FEATURES)) == (8, 38)
    assert obs_space["scalars"].shape == (16,)
    assert obs_space["minimap"].shape == (8, 64, 64)
    assert obs_space["upgrades"].shape == (89,)
    assert obs_space["unit_counts"].shape == (375,)
    assert obs_space["action_type_mask"].shape == (564,)
    assert act_space["action_type"].n == 564
    assert act_space["delay"].n == 128
    assert act_space["queued"].n == 2
    assert act_space["selected_units"].nvec.tolist() == [9] * 4  # 8 entities + EOF
    assert act_space["target_unit"].n == 9
    assert act_space["target_location"].nvec.tolist() == [64, 64]


def test_construct_and_pickle_never_launch_the_game(env):
    clone = pickle.loads(pickle.dumps(env))
    assert env._proc is None and clone._proc is None
    assert clone.max_entities == 8 and clone.observation_space == env.observation_space


def test_reset_without_sc2_names_sc2path(tmp_path, monkeypatch, env):
    monkeypatch.setenv("SC2PATH", str(tmp_path))
    with pytest.raises(SC2NotFoundError, match=f"SC2PATH='{tmp_path}'.*install"):
        env.reset(seed=0)
    assert env._proc is None
    env.close()  # safe to call again


def test_reset_refuses_seeds_the_game_cannot_take(env):
    # found by a tester: random_seed was seed & 0x7FFFFFFF, so seed 2**31 + 5 silently replayed seed 5's game
    for seed in (2**31 + 5, -1, 1.5, True):  # True was seed 1
        with pytest.raises(ValueError, match=re.escape(f"seed={seed!r}; expected an int in [0, 2147483647]")):
            env.reset(seed=seed)
    assert env._proc is None
    env._seed = 2**31 - 1
    assert env.create_game_request("Simple64.SC2Map").random_seed == 2**31 - 1


def test_reset_options_are_refused_not_ignored(env):
    with pytest.raises(ValueError, match=re.escape("options={'foo': 1}; expected None or {}")):
        env.reset(options={"foo": 1})
    assert env._proc is None


def test_bad_options_name_the_value():
    with pytest.raises(ValueError, match="bot_difficulty='impossible'"):
        FullGameEnv(bot_difficulty="impossible")
    with pytest.raises(ValueError, match="race='elves'"):
        FullGameEnv(race="elves")
    with pytest.raises(ValueError, match="max_entities=0"):
        FullGameEnv(max_entities=0)
    # found by a tester: int() truncated these silently (2.5 -> 2 game loops per step, True -> 1)
    for kw in ({"step_mul": 2.5}, {"step_mul": True}, {"max_entities": 3.5}, {"game_steps_per_episode": 10.7}):
        ((name, value),) = kw.items()
        with pytest.raises(TypeError, match=re.escape(f"{name}={value!r}; expected an int")):
            FullGameEnv(**kw)
    assert FullGameEnv(step_mul=np.int64(4), max_entities=np.int32(16)).max_entities == 16  # NumPy ints are ints
    assert FullGameEnv(step_mul=None).step_mul is None


@pytest.mark.parametrize("name", ["query_available_actions", "realtime"])
@pytest.mark.parametrize("value", ["no", 0, None])
def test_the_bool_options_refuse_other_values_by_name(name, value):
    """found by a tester: query_available_actions='no' and realtime='no' were read as true."""
    with pytest.raises(TypeError, match=re.escape(f"{name}={value!r}; expected a bool")):
        FullGameEnv(**{name: value})


@pytest.mark.parametrize(
    ("name", "value", "top"),
    [
        ("max_entities", 2**40, 2**16),
        ("max_selected", 2**40, 2**16),
        ("raw_resolution", 10**6, 4096),
        ("minimap_resolution", 10**6, 1024),
        ("step_mul", 2**40, 2**20),
        ("game_steps_per_episode", 10**20, 2**62),
    ],
)
def test_sizes_and_loop_counts_above_the_lite_engines_limits_are_refused_on_the_real_game_too(name, value, top):
    """found by a tester: max_entities=2**40 and minimap_resolution=10**6 were MemoryErrors (38 TiB of space bounds),
    step_mul=2**40 would fail at the first step (RequestStep.count is a uint32)."""
    with pytest.raises(ValueError, match=re.escape(f"{name}={value}; expected an int <= {top}")):
        FullGameEnv(**{name: value})


@pytest.mark.parametrize("option", ["omniscient", "capacity", "data_profile"])
def test_a_lite_only_option_with_the_real_game_names_the_backend(option):
    """found by a tester: backend='sc2' with omniscient=True was Python's "unexpected keyword argument"."""
    with pytest.raises(ValueError, match=rf"^{option} is an option of the lite engine \(backend='lite'\)"):
        gym.make(ENV_ID, backend="sc2", **{option: {"omniscient": True, "capacity": 512, "data_profile": "4.10"}[option]})


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"bot_difficulty": ["x"]}, "bot_difficulty=['x']; expected one of ['very_easy'"),  # was "unhashable type"
        ({"bot_build": ["x"]}, "bot_build=['x']; expected one of ['random'"),
        ({"log_dir": 5}, "log_dir=5; expected a folder path or None"),  # failed at the first reset
        ({"version": 4.10}, "version=4.1; expected a StarCraft II version string such as '4.10.0', or None"),
    ],
)
def test_options_of_the_wrong_type_are_named_at_construction(kw, message):
    with pytest.raises((TypeError, ValueError), match="^" + re.escape(message)):
        FullGameEnv(**kw)


def test_game_requests_match_the_protocol():
    env = FullGameEnv(race="zerg", bot_race="protoss", bot_difficulty="hard", bot_build="macro", minimap_resolution=32)
    env._seed = 7
    create = env.create_game_request("Melee/Simple64.SC2Map")
    wire = sc_pb.Request(create_game=create).SerializeToString()
    create = sc_pb.Request.FromString(wire).create_game
    assert create.local_map.map_path == "Melee/Simple64.SC2Map"
    assert [p.type for p in create.player_setup] == [sc_pb.Participant, sc_pb.Computer]
    bot = create.player_setup[1]
    assert (bot.race, bot.difficulty, bot.ai_build) == (common_pb2.Protoss, sc_pb.Hard, sc_pb.Macro)
    assert create.random_seed == 7 and not create.realtime
    join = sc_pb.Request.FromString(sc_pb.Request(join_game=env.join_game_request()).SerializeToString()).join_game
    assert join.race == common_pb2.Zerg
    o = join.options
    assert o.raw and o.score and o.show_cloaked and o.show_placeholders and not o.raw_affects_selection
    assert (o.feature_layer.minimap_resolution.x, o.feature_layer.minimap_resolution.y) == (32, 32)
    env.close()


def test_unknown_map_is_rejected_at_construction():
    with pytest.raises(ValueError, match="map_name='Nowhere64' is not a known pysc2 map"):
        FullGameEnv(map_name="Nowhere64")


def test_registration_is_idempotent_and_make_is_lazy():
    register_full_game()
    register_full_game()
    env = gym.make(ENV_ID, backend="sc2", max_entities=8, max_selected=4)
    try:
        assert env.unwrapped._proc is None
        assert env.action_space["action_type"].n == 564
    finally:
        env.close()


def test_observation_from_real_proto(ctx, env):
    obs, tags = convert.observation_to_arrays(response_observation(), ctx)
    env_space = FullGameEnv(max_entities=8, max_selected=4).observation_space
    assert env_space.contains(obs)
    c = spec.ENTITY_INDEX
    # Order: own units by tag (nexus 0x100000001 before probe 0x100040001), then enemy, then neutral.
    assert tags[:5].tolist() == [0x100000001, 0x100040001, 0x1000C0001, 0x100080001, 0]
    ent = obs["entities"]
    assert ent[:4, c["unit_type"]].tolist() == [spec.unit_type_index(u) for u in (NEXUS, PROBE, MARINE, MINERAL_FIELD)]
    assert ent[:4, c["alliance"]].tolist() == [1, 1, 4, 3]
    # Probe at (30, 60) on an 88x96 map, R = 64: col floor(30*64/96)=20, row floor((96-60)*64/96)=24.
    assert ent[1, [c["x"], c["y"]]].tolist() == [20, 24]
    assert ent[1, [c["health"], c["shield"], c["order_length"], c["order_progress_0"]]].tolist() == [20, 20, 1, 0.25]
    assert ent[1, c["order_id_0"]] == FN["Harvest_Gather_unit"]  # ability 298 -> specific -> general
    assert ent[3, c["mineral_contents"]] == 1800
    assert obs["entity_mask"].tolist() == [1, 1, 1, 1, 0, 0, 0, 0]
    assert obs["selectable_mask"].tolist() == [1, 1, 0, 0, 0, 0, 0, 0]
    s = dict(zip(spec.SCALAR_FEATURES, obs["scalars"].tolist(), strict=True))
    assert (s["game_loop"], s["minerals"], s["food_used"], s["food_cap"], s["idle_worker_count"]) == (224, 75, 13, 15, 1)
    assert (s["home_race"], s["away_race"]) == (3, 1)
    assert obs["upgrades"].sum() == 1 and obs["upgrades"][spec.upgrade_index(WARP_GATE_RESEARCH)] == 1
    assert obs["unit_counts"][spec.unit_type_index(PROBE)] == 1 and obs["unit_counts"].sum() == 2
    height = obs["minimap"][spec.MINIMAP_FEATURES.index("height_map")]
    assert height[0, :3].tolist() == [0, 1, 2] and height[63, 63] == (64 * 64 - 1) % 251
    pathable = obs["minimap"][spec.MINIMAP_FEATURES.index("pathable")]
    assert pathable.sum() == 40 and pathable[10:20, 5:9].all()
    assert obs["action_type_mask"].all()  # no query response: everything allowed


def test_minimap_size_mismatch_is_reported(ctx):
    resp = response_observation()
    resp.observation.feature_layer_data.minimap_renders.height_map.size.x = 32
    with pytest.raises(ValueError, match="minimap layer is 32x64; expected 64x64"):
        convert.observation_to_arrays(resp, ctx)


def test_available_action_mask_from_query_response():
    resp = query_pb2.ResponseQuery()
    probe = resp.abilities.add(unit_tag=1, unit_type_id=PROBE)
    for ability in (881, 298, 3674):  # build pylon, gather (probe-specific), attack
        probe.abilities.add(ability_id=ability)
    resp = query_pb2.ResponseQuery.FromString(resp.SerializeToString())
    mask = convert.available_function_mask(resp)
    on = {spec.raw_functions()[i].name for i in np.flatnonzero(mask)}
    assert on == {
        "no_op",
        "raw_move_camera",
        "Smart_pt",
        "Smart_unit",
        "Build_Pylon_pt",
        "Harvest_Gather_Probe_unit",
        "Harvest_Gather_unit",
        "Attack_pt",
        "Attack_unit",
    }


ACTIONS = [
    pytest.param(
        {"action_type": FN["Build_Pylon_pt"], "queued": 1, "selected_units": [1, 8, 8, 8], "target_location": [20, 24]},
        id="pt",
    ),
    pytest.param({"action_type": FN["Attack_unit"], "queued": 0, "selected_units": [1, 0, 8, 8], "target_unit": 2}, id="unit"),
    pytest.param({"action_type": FN["Train_Probe_quick"], "queued": 0, "selected_units": [0, 8, 8, 8]}, id="quick"),
    pytest.param({"action_type": FN["Build_Interceptors_autocast"], "selected_units": [0, 8, 8, 8]}, id="autocast"),
    pytest.param({"action_type": FN["raw_move_camera"], "target_location": [63, 0]}, id="camera"),
    pytest.param({"action_type": 0}, id="no_op"),
]


@pytest.mark.parametrize("heads", ACTIONS)
def test_actions_round_trip_through_request_action(ctx, heads):
    _, tags = convert.observation_to_arrays(response_observation(), ctx)
    action = convert.empty_action(ctx)
    action.update({k: np.asarray(v) if isinstance(v, list) else v for k, v in heads.items()})
    request = convert.action_to_request(action, tags, ctx)
    wire = sc_pb.RequestAction.FromString(request.SerializeToString())
    back = convert.request_to_action(wire, tags, ctx)
    masks = spec.argument_masks()[int(action["action_type"])]
    assert back["action_type"] == action["action_type"]
    for head, used in zip(spec.ACTION_HEADS[2:], masks[2:], strict=True):
        if used:
            assert np.array_equal(np.asarray(back[head]), np.asarray(action[head])), head


def test_request_action_fields_match_the_protocol(ctx):
    _, tags = convert.observation_to_arrays(response_observation(), ctx)
    action = convert.empty_action(ctx)
    action.update(
        action_type=FN["Build_Pylon_pt"], queued=1, selected_units=np.array([1, 8, 8, 8]), target_location=np.array([20, 24])
    )
    cmd = convert.action_to_request(action, tags, ctx).actions[0].action_raw.unit_command
    assert (cmd.ability_id, list(cmd.unit_tags), cmd.queue_command) == (881, [0x100040001], True)
    # Cell centre of (20, 24): ((20 + 0.5) * 1.5, 96 - (24 + 0.5) * 1.5) with 96/64 = 1.5 units per cell.
    assert (cmd.target_world_space_pos.x, cmd.target_world_space_pos.y) == (30.75, 59.25)
    assert convert.action_to_request(convert.empty_action(ctx), tags, ctx).actions == []


def test_bad_actions_name_the_value(ctx):
    _, tags = convert.observation_to_arrays(response_observation(), ctx)
    action = convert.empty_action(ctx)
    with pytest.raises(ValueError, match="action_type=564 is not a raw function id"):
        convert.action_to_request(dict(action, action_type=564), tags, ctx)
    with pytest.raises(convert.InvalidActionError, match="Train_Probe_quick.*needs selected_units") as nothing:
        convert.action_to_request(dict(action, action_type=FN["Train_Probe_quick"]), tags, ctx)
    assert nothing.value.code == spec.InvalidAction.NO_SELECTED_UNITS
    with pytest.raises(
        convert.InvalidActionError, match="selected_units index 6 points at a padding row; there are 4 entities"
    ) as padding:
        convert.action_to_request(
            dict(action, action_type=FN["Train_Probe_quick"], selected_units=np.array([6, 8, 8, 8])), tags, ctx
        )
    assert padding.value.code == spec.InvalidAction.SELECTED_UNIT_IS_PADDING
    with pytest.raises(ValueError, match=r"target_location=\(64, 3\) is outside the raw grid"):
        convert.action_to_request(dict(action, action_type=168, target_location=np.array([64, 3])), tags, ctx)
    # found by a tester: queued=2 was read as True and a delay of -5 or 1000 (outside Discrete(128)) stepped
    # max(delay, 1) game loops with step_mul=None, silently
    for head, value in (("queued", 2), ("queued", 0.5), ("delay", -5), ("delay", 1000), ("delay", 3.5)):
        with pytest.raises(ValueError, match=re.escape(f"{head}={value!r}; expected an int in [0, ")):
            convert.action_to_request(dict(action, action_type=FN["Build_Pylon_pt"], **{head: value}), tags, ctx)
    for head, value in (("selected_units", np.array([1.9, 8, 8, 8])), ("target_unit", 2.5), ("action_type", 168.0)):
        with pytest.raises(ValueError, match=f"{head}=.*expected integer entity / function indices"):
            convert.action_to_request({**action, "action_type": FN["Build_Pylon_pt"], head: value}, tags, ctx)
    for loc in (np.array([20.7, 24.2]), [1.5, 2], [3], np.array([np.nan, 1.0])):  # before: 20.7 was cell 20, NaN garbage
        with pytest.raises(ValueError, match="expected two integer grid coordinates"):
            convert.action_to_request(dict(action, action_type=168, target_location=loc), tags, ctx)
    ok = dict(action, action_type=FN["Build_Pylon_pt"], selected_units=np.array([1, 8, 8, 8]), queued=np.int64(1), delay=127)
    assert convert.action_to_request(ok, tags, ctx).actions[0].action_raw.unit_command.queue_command


# found by a tester: on the real game a missing action_type was a KeyError, None a TypeError, an unknown key and
# selected_units longer than K were sent as given, and 2**64 - 1 as uint64 wrapped to -1 (EOF: a silent no-op)
MALFORMED = [
    pytest.param(None, "action=None; expected a dict of heads", id="not-a-dict"),
    pytest.param({"action_type": 0, "action_typ": 3}, "action has unknown keys ['action_typ']", id="unknown-key"),
    pytest.param({"action_type": np.array([1])}, "action_type has shape (1,); expected ()", id="action-type-shape"),
    pytest.param({"action_type": 1.0}, "action_type=1.0; expected integer values (dtype float64 given)", id="float"),
    pytest.param({"selected_units": [1, 1, 1, 1, 1]}, "selected_units has shape (5,); expected (4,)", id="too-many-units"),
    pytest.param(
        {"selected_units": np.array([2**64 - 1], np.uint64)},
        f"selected_units={2**64 - 1}; expected an int in [-1, 8]",
        id="uint64-max",
    ),
    pytest.param({"selected_units": [-5]}, "selected_units=-5 at index (0,); expected an int in [-1, 8]", id="below-eof"),
    pytest.param({"target_unit": 99}, "target_unit=99; expected an int in [0, 8]", id="target-unit-off-space"),
    pytest.param({"target_location": [[1], [2]]}, "target_location has shape (2, 1); expected (2,)", id="location-shape"),
]


@pytest.mark.parametrize(("action", "message"), MALFORMED)
def test_the_real_game_refuses_a_malformed_action_as_the_lite_engine_does(env, action, message):
    env.set_game_info(game_info(), 1)
    env.convert_observation(response_observation())
    with pytest.raises(ValueError, match="^" + re.escape(message)):
        env.action_request(action)


def test_a_missing_head_takes_its_absent_value_on_the_real_game_as_on_the_lite_engine(env):
    env.set_game_info(game_info(), 1)
    env.convert_observation(response_observation())
    assert env.action_request({}) == (sc_pb.RequestAction(), None)  # action_type 0: no_op
    _, error = env.action_request({"action_type": FN["Build_Pylon_pt"]})  # no selected_units: EOF
    assert error.code == spec.InvalidAction.NO_SELECTED_UNITS


class _EndingController:
    """Enough of pysc2's RemoteController for ``FullGameEnv.step``: each step advances the loop; none ends the game."""

    status_ended = False

    def __init__(self):
        self.loop = 0

    def actions(self, request):
        return sc_pb.ResponseAction(result=[1] * len(request.actions))

    def step(self, loops):
        self.loop += loops

    def observe(self):
        resp = response_observation()
        resp.observation.game_loop = self.loop
        return resp


def test_a_step_after_the_episode_ended_raises_until_reset():
    """found by a tester: after truncation the real game played on past game_steps_per_episode, silently."""
    env = FullGameEnv(max_entities=8, max_selected=4, game_steps_per_episode=16, query_available_actions=False)
    env.set_game_info(game_info(), 1)
    env.convert_observation(response_observation())
    env._controller, env._start_loop, env._loop = _EndingController(), 0, 0  # a game at loop 0, no process
    try:
        assert env.step({})[3] is False
        assert env.step({})[3] is True  # 16 loops: truncated
        with pytest.raises(RuntimeError, match=r"step\(\) called after the episode ended \(truncated at game loop 16\)"):
            env.step({})
    finally:
        env._controller = None


@pytest.mark.parametrize("max_entities, left_out", [(2, 2), (4, 0), (8, 0)])
def test_the_real_game_counts_the_units_its_entity_rows_had_no_room_for(max_entities, left_out):
    env = FullGameEnv(max_entities=max_entities, max_selected=2, query_available_actions=False)
    env.set_game_info(game_info(), 1)
    env.convert_observation(response_observation())  # 4 units: nexus, probe, marine, mineral field
    env._controller, env._start_loop, env._loop = _EndingController(), 0, 0  # a game at loop 0, no process
    try:
        obs, _, _, _, info = env.step({})
        assert info["entities_left_out"] == left_out and info["entities_left_out"].dtype == np.int32
        assert obs["entity_mask"].sum() == 4 - left_out
    finally:
        env._controller = None


def test_every_sampled_action_converts_or_becomes_a_reported_no_op(env):
    env.set_game_info(game_info(), 1)
    obs = env.convert_observation(response_observation())
    assert env.observation_space.contains(obs)
    env.action_space.seed(0)
    kinds = {"ok": 0, "invalid": 0}
    for _ in range(300):
        request, error = env.action_request(env.action_space.sample())
        if error is None:
            kinds["ok"] += 1
        else:
            kinds["invalid"] += 1
            reason = str(error)
            assert request.actions == [] and (
                "padding row" in reason or "needs selected_units" in reason or "target_unit" in reason
            )
            assert error.code != spec.InvalidAction.NONE  # the number step() reports in info["invalid_action"]
    assert kinds["ok"] > 0 and kinds["invalid"] > 0


def test_live_and_replay_features_agree(ctx):
    """Feature parity: the replay converter's snapshot equals the live replay-observable subset."""
    from sc2_envs.replays.extract import Roster, StreamConfig, snapshot_entities

    resp = response_observation()
    live = convert.replay_observable(convert.observation_to_arrays(resp, ctx)[0])
    roster = Roster({})
    for u in resp.observation.raw_data.units:
        # tracker events give integer cells and owner 0 for neutral units
        roster.units[u.tag] = [u.unit_type, u.owner if u.owner != 16 else 0, u.pos.x, u.pos.y, u.build_progress == 1.0]
    _, rows = snapshot_entities(roster, 1, {2}, StreamConfig(max_entities=8), ctx.map_size)
    assert np.array_equal(rows, live["entities"][: len(rows)])
    assert live["entities"].dtype == rows.dtype == np.int16
    assert live["scalars"].shape == (len(spec.REPLAY_SCALAR_FEATURES),)


def test_build_order_skips_initial_units_workers_and_supply():
    tracker = spec.BuildOrderTracker()
    tracker.update([1, 2], [NEXUS, PROBE])  # starting units
    tracker.update([1, 2, 3, 4, 5], [NEXUS, PROBE, PROBE, 60, 62])  # new probe, pylon (60), gateway (62)
    assert tracker.as_array()[:2].tolist() == [spec.unit_type_index(62), 0]


@pytest.mark.skipif(not sc2_available(), reason=f"StarCraft II is not installed under SC2PATH={str(sc2_path())!r}")
def test_check_env_against_real_starcraft(tmp_path):
    from gymnasium.utils.env_checker import check_env

    env = FullGameEnv(max_entities=64, max_selected=8, game_steps_per_episode=64, log_dir=str(tmp_path))
    try:
        check_env(env, skip_render_check=True)
        obs, info = env.reset(seed=1)
        assert env.observation_space.contains(obs)
        pid = env._proc._proc.pid
        keys = {"game_loop", "action_errors", "invalid_action", "entities_left_out"}
        assert os.path.getsize(env.log_path) >= 0 and set(info) == keys
    finally:
        env.close()
    assert env._proc is None
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


@pytest.mark.parametrize(
    "args, message",
    [
        ((8, [], 1.7), r"invalid_action=1\.7; expected an int InvalidAction code"),
        ((8, [], "1"), r"invalid_action='1'; expected an int InvalidAction code"),
        ((8, [], True), r"invalid_action=True; expected an int InvalidAction code"),
        ((8, [2.5]), r"action errors \[2\.5\]; expected at most 2 ActionResult error codes \(ints in \[2, 2147483647\]\)"),
        ((8, [True]), r"action errors \[True\]; expected at most 2 ActionResult error codes"),
        ((8, "23"), r"action errors '23'; expected at most 2 ActionResult error codes"),
        ((8, [2**40]), r"action errors \[1099511627776\]; expected at most 2 ActionResult error codes"),
        ((1.5,), r"game_loop=1\.5; expected an int >= 0"),
        ((-8,), r"game_loop=-8; expected an int >= 0"),
        ((8, [], 0, -1), r"entities_left_out=-1; expected an int in \[0, 2\*\*31 - 1\]"),
        ((8, [], 0, 2.0), r"entities_left_out=2\.0; expected an int"),
    ],
)
def test_step_info_refuses_values_it_would_truncate_or_overflow_naming_them(args, message):
    with pytest.raises(ValueError, match=message):
        spec.step_info(*args)


def test_info_codes_have_public_names_and_bad_codes_are_refused():
    assert spec.action_result_name(9) == "NotEnoughMinerals" and spec.action_result_name(44) == "CantBuildLocationInvalid"
    assert spec.action_result_name(np.int32(0)) == "None"  # the padding
    with pytest.raises(ValueError, match="code=999 is not an ActionResult value"):
        spec.action_result_name(999)
    with pytest.raises(ValueError, match="code='9'; expected an int"):
        spec.action_result_name("9")
    assert spec.pad_action_errors([9]).tolist() == [9, 0] and spec.pad_action_errors([]).dtype == np.int32
    with pytest.raises(ValueError, match=r"action errors \[9, 44, 2\]; expected at most 2"):
        spec.pad_action_errors([9, 44, 2])
    with pytest.raises(ValueError, match="expected at most 2 ActionResult error codes"):
        spec.pad_action_errors([1])  # Success is not an error
    assert spec.InvalidAction(2).name == "NO_SELECTED_UNITS"
    info = spec.step_info(8, [9], spec.InvalidAction.TARGET_UNIT_IS_PADDING)
    assert info["game_loop"] == 8 and info["action_errors"].tolist() == [9, 0] and info["invalid_action"] == 3
    with pytest.raises(ValueError, match="4 is not a valid InvalidAction"):
        spec.step_info(8, [], 4)
