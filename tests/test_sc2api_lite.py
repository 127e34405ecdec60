"""Simple64 from the lite engine behind the StarCraft II API: pysc2's own launcher and RemoteController, and
FullGame-v0 with ``backend="sc2"``, play whole games on it; the server's messages convert to the direct arrays.

The server runs in its own process, launched by pysc2's ``run_configs`` from a folder laid out by
``python -m sc2_envs.sc2api install`` (as a user would run it). The lite env is built first in this process so
that the engine's Numba kernels are compiled (and cached) before the server process needs them.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

os.environ.setdefault("TIMEOUT_SECONDS", "300")  # pysc2-evolved's launch / request timeout on a loaded CI box
pytest.importorskip("s2clientprotocol", reason="the API server needs s2clientprotocol (full-game extra)")
pytest.importorskip("pysc2_evolved", reason="the FullGame-v0 sc2 backend needs pysc2-evolved (full-game extra)")

import gymnasium as gym  # noqa: E402
from s2clientprotocol import common_pb2, query_pb2, raw_pb2  # noqa: E402
from s2clientprotocol import sc2api_pb2 as sc  # noqa: E402

import sc2_envs  # noqa: E402, F401  (registers FullGame-v0)
from sc2_envs.full_game.env import FullGameEnv  # noqa: E402
from sc2_envs.lite.env import LiteFullGameEnv  # noqa: E402
from sc2_envs.lite.policy import RandomLegalPolicy  # noqa: E402
from sc2_envs.sc2api.client import import_pysc2  # noqa: E402
from sc2_envs.sc2api.install import install  # noqa: E402

PROBE, NEXUS = 84, 59
SIZES = {"max_entities": 256, "max_selected": 8}


@pytest.fixture(scope="module")
def sc2path(tmp_path_factory):
    LiteFullGameEnv(**SIZES).reset(seed=0)  # compile / load the kernels here, not inside the server's first request
    path = tmp_path_factory.mktemp("StarCraftII")
    install(path)
    old = os.environ.get("SC2PATH")
    os.environ["SC2PATH"] = str(path)
    yield path
    if old is None:
        os.environ.pop("SC2PATH", None)
    else:
        os.environ["SC2PATH"] = old


def test_install_lays_out_simple64_where_pysc2_looks_for_it(sc2path):
    maps = pytest.importorskip("pysc2_evolved.maps")
    assert (sc2path / "Maps" / maps.get("Simple64").path).is_file()


def test_fullgame_v0_on_the_server_plays_the_direct_lite_game(sc2path):
    """Same seed, same actions: FullGame-v0 through the server (convert.observation_to_arrays of its protobufs)
    gives the lite env's direct arrays at every step of two short games (the second after restart_game), and the
    same rewards, ends and game loops."""
    served = gym.make("sc2_envs/FullGame-v0", backend="sc2", game_steps_per_episode=320, **SIZES).unwrapped
    direct = gym.make("sc2_envs/FullGame-v0", game_steps_per_episode=320, **SIZES).unwrapped
    assert isinstance(served, FullGameEnv) and isinstance(direct, LiteFullGameEnv)
    policy = RandomLegalPolicy(direct.engine.catalog, SIZES["max_entities"], SIZES["max_selected"], noop_prob=0.2, seed=3)
    try:
        for episode in range(2):
            obs_s, info_s = served.reset(seed=11) if episode == 0 else served.reset()  # the second: restart_game
            obs_d, _ = direct.reset(seed=11)  # restart keeps the game's random_seed
            assert info_s["game_loop"] == 0
            steps = errors = 0
            while True:
                for key, value in obs_d.items():
                    np.testing.assert_array_equal(obs_s[key], value, err_msg=f"{key} at step {steps} of game {episode}")
                action = policy(obs_d)
                obs_s, r_s, term_s, trunc_s, info_s = served.step(action)
                obs_d, r_d, term_d, trunc_d, info_d = direct.step(action)
                assert (r_s, term_s, trunc_s, info_s["game_loop"]) == (r_d, term_d, trunc_d, info_d["game_loop"])
                assert info_s["invalid_action"] == info_d["invalid_action"]
                assert info_s["entities_left_out"] == info_d["entities_left_out"]
                errors += np.count_nonzero(info_s["action_errors"])  # fixed shape, 0-padded
                steps += 1
                if term_s or trunc_s:
                    break
            assert trunc_s and steps == 40
            assert errors > 0  # random legal actions include refused ones: reported, never a crash
    finally:
        served.close()


def test_fullgame_v0_on_the_server_cuts_and_counts_the_entity_rows_as_the_direct_game(sc2path):
    """With fewer entity rows than units in view, both doors keep the same first rows (entity_order) and
    report the same count of units left out."""
    sizes = {"max_entities": 24, "max_selected": 8}
    served = gym.make("sc2_envs/FullGame-v0", backend="sc2", game_steps_per_episode=160, **sizes).unwrapped
    direct = gym.make("sc2_envs/FullGame-v0", game_steps_per_episode=160, **sizes).unwrapped
    policy = RandomLegalPolicy(direct.engine.catalog, sizes["max_entities"], sizes["max_selected"], noop_prob=0.2, seed=5)
    try:
        obs_s, info_s = served.reset(seed=4)
        obs_d, info_d = direct.reset(seed=4)
        for step in range(20):
            assert info_s["entities_left_out"] == info_d["entities_left_out"] > 0, step
            np.testing.assert_array_equal(obs_s["entities"], obs_d["entities"], err_msg=f"step {step}")
            action = policy(obs_d)
            obs_s, _, _, _, info_s = served.step(action)
            obs_d, _, _, _, info_d = direct.step(action)
    finally:
        served.close()


def test_fullgame_v0_on_the_server_ends_when_the_direct_game_ends(sc2path):
    """A game played to its end on both doors: the agent's Probes destroy its own Nexus (Attack_unit, legal in
    the game); FullGame-v0 through the server terminates with reward -1 at the same step as the direct env."""
    from sc2_envs.full_game import spec

    sizes = {"max_entities": 256, "max_selected": 16}
    served = gym.make("sc2_envs/FullGame-v0", backend="sc2", **sizes).unwrapped
    direct = gym.make("sc2_envs/FullGame-v0", **sizes).unwrapped
    try:
        obs_s, _ = served.reset(seed=2)
        obs_d, _ = direct.reset(seed=2)
        kind, own = (
            obs_d["entities"][:, spec.ENTITY_INDEX["unit_type"]],
            obs_d["entities"][:, spec.ENTITY_INDEX["alliance"]] == 1,
        )
        probes = np.flatnonzero(own & (kind == spec.unit_type_index(PROBE)) & (obs_d["entity_mask"] == 1))
        nexus = int(np.flatnonzero(own & (kind == spec.unit_type_index(NEXUS)))[0])
        selected = np.full(16, sizes["max_entities"], np.int64)
        selected[: len(probes)] = probes
        attack = {"action_type": np.int64(3), "selected_units": selected, "target_unit": np.int64(nexus)}  # Attack_unit
        noop = {"action_type": np.int64(0)}
        for steps in range(1, 400):
            action = attack if steps == 1 else noop
            obs_s, r_s, term_s, trunc_s, info_s = served.step(action)
            obs_d, r_d, term_d, trunc_d, info_d = direct.step(action)
            assert (r_s, term_s, trunc_s, info_s["game_loop"]) == (r_d, term_d, trunc_d, info_d["game_loop"])
            for key, value in obs_d.items():  # a game over answers no query: FullGameEnv's last mask is all ones
                if not (term_s and key == "action_type_mask"):
                    np.testing.assert_array_equal(obs_s[key], value, err_msg=f"{key} at step {steps}")
            if term_s:
                break
        assert term_s and r_s == -1.0 and info_s["outcome"] == -1.0 and steps > 50
    finally:
        served.close()


def _unit_command(ability: int, tags, target=None, queued: bool = False) -> sc.Action:
    cmd = raw_pb2.ActionRawUnitCommand(ability_id=ability, unit_tags=list(tags), queue_command=queued)
    if isinstance(target, tuple):
        cmd.target_world_space_pos.CopyFrom(common_pb2.Point2D(x=target[0], y=target[1]))
    elif target is not None:
        cmd.target_unit_tag = target
    return sc.Action(action_raw=raw_pb2.ActionRaw(unit_command=cmd))


def test_pysc2_remote_controller_plays_simple64_to_the_end(sc2path):
    """pysc2's own launcher and RemoteController: create_game with a very_easy Terran Computer, join with raw,
    score and the minimap layer, game_info, observations, queries, raw commands (queued too) and refused ones as
    action_errors; the agent's Probes destroy its own Nexus (legal in the game), the melee rule ends the game with
    player_result Defeat / Victory and status ended; restart_game starts again; leave, quit."""
    run_configs, protocol = import_pysc2()
    rc = run_configs.get()
    proc = rc.start(want_rgb=False)
    controller = proc.controller
    try:
        path = "Melee/Simple64.SC2Map"
        create = sc.RequestCreateGame(local_map=sc.LocalMap(map_path=path, map_data=rc.map_data(path)), random_seed=5)
        create.player_setup.add(type=sc.Participant)
        create.player_setup.add(type=sc.Computer, race=common_pb2.Terran, difficulty=sc.VeryEasy)
        controller.create_game(create)
        options = sc.InterfaceOptions(raw=True, score=True)
        options.feature_layer.width = 24
        options.feature_layer.resolution.x = options.feature_layer.resolution.y = 64
        options.feature_layer.minimap_resolution.x = options.feature_layer.minimap_resolution.y = 64
        assert controller.join_game(sc.RequestJoinGame(race=common_pb2.Protoss, options=options)).player_id == 1

        info = controller.game_info()
        raw = info.start_raw
        assert info.map_name == "Simple64" and (raw.map_size.x, raw.map_size.y) == (88, 96)
        assert len(raw.pathing_grid.data) == 96 * 88 // 8 and len(raw.terrain_height.data) == 96 * 88
        assert [(p.x, p.y) for p in raw.start_locations] == [(59.5, 27.5)]  # the opponent's start
        assert [(p.player_id, p.race_requested) for p in info.player_info] == [(1, common_pb2.Protoss), (2, common_pb2.Terran)]

        obs = controller.observe()
        units = obs.observation.raw_data.units
        probes = [u.tag for u in units if u.unit_type == PROBE and u.alliance == raw_pb2.Self]
        nexus = next(u for u in units if u.unit_type == NEXUS)
        assert len(probes) == 12 and obs.observation.player_common.minerals == 50
        assert obs.observation.feature_layer_data.minimap_renders.player_relative.size.x == 64
        query = controller.query(
            query_pb2.RequestQuery(abilities=[query_pb2.RequestQueryAvailableAbilities(unit_tag=nexus.tag)])
        )
        assert 1006 in {a.ability_id for a in query.abilities[0].abilities}  # Train_Probe (50 minerals)

        result = controller.actions(
            sc.RequestAction(
                actions=[
                    _unit_command(16, probes[:1], (40.0, 40.0)),  # Move
                    _unit_command(16, probes[:1], (44.0, 40.0), queued=True),
                    _unit_command(881, probes[1:2], (1.0, 1.0)),  # Build_Pylon: 100 minerals, 50 held
                    _unit_command(1006, [nexus.tag]),  # Train_Probe
                    _unit_command(1006, [nexus.tag]),  # again: 0 minerals left
                ]
            )
        )
        assert list(result.result) == [1, 1, 9, 1, 9]  # Success / NotEnoughMinerals
        controller.step(8)
        obs = controller.observe()
        walker = next(u for u in obs.observation.raw_data.units if u.tag == probes[0])
        assert [(o.ability_id, o.target_world_space_pos.x) for o in walker.orders] == [(16, 40.0), (16, 44.0)]
        assert [(e.ability_id, e.result) for e in obs.action_errors] == [(881, 9), (1006, 9)]

        controller.actions(sc.RequestAction(actions=[_unit_command(23, probes, nexus.tag)]))  # Attack own Nexus
        while controller.status == protocol.Status.in_game:
            controller.step(8)
            assert obs.observation.game_loop < 2000
            obs = controller.observe()
        assert controller.status == protocol.Status.ended
        assert [(r.player_id, r.result) for r in obs.player_result] == [(1, sc.Defeat), (2, sc.Victory)]
        assert obs.observation.score.score_details.collected_minerals > 0

        controller.restart()
        assert controller.status == protocol.Status.in_game and controller.observe().observation.game_loop == 0
        controller.leave()
        assert controller.status == protocol.Status.launched
    finally:
        proc.close()  # quit, then the process is gone


def test_bad_setups_name_what_is_served():
    """In process (no socket): an unknown map, a Computer the lite bot is not, a race it does not play."""
    from sc2_envs.sc2api.server import SC2APIGame

    def create(path="Melee/Simple64.SC2Map", race=common_pb2.Terran, difficulty=sc.VeryEasy, build=None):
        game = SC2APIGame()
        req = sc.RequestCreateGame(local_map=sc.LocalMap(map_path=path))
        req.player_setup.add(type=sc.Participant)
        computer = req.player_setup.add(type=sc.Computer, race=race, difficulty=difficulty)
        if build is not None:
            computer.ai_build = build
        return game, sc.Response.FromString(game.handle(sc.Request(create_game=req).SerializeToString())).create_game

    _, r = create("Melee/Simple96.SC2Map")
    assert r.error == sc.ResponseCreateGame.InvalidMapPath and "Melee/Simple64.SC2Map" in r.error_details
    _, r = create(race=common_pb2.Zerg, difficulty=sc.Hard)
    assert r.error == sc.ResponseCreateGame.InvalidPlayerSetup
    assert "race Zerg (2), difficulty Hard (5)" in r.error_details and "race Terran, difficulty VeryEasy" in r.error_details
    _, r = create(build=sc.Rush)
    assert r.error == sc.ResponseCreateGame.InvalidPlayerSetup and "ai_build Rush" in r.error_details
    game, r = create()
    assert not r.HasField("error") and game.status == "init_game"
    join = sc.RequestJoinGame(race=common_pb2.Terran, options=sc.InterfaceOptions(raw=True))
    r = sc.Response.FromString(game.handle(sc.Request(join_game=join).SerializeToString())).join_game
    assert (
        r.error == sc.ResponseJoinGame.FeatureUnsupported
        and "plays Protoss" in r.error_details
        and "got Terran" in r.error_details
    )
    assert game.status == "init_game"
    join = sc.RequestJoinGame(race=common_pb2.Protoss, options=sc.InterfaceOptions(raw=True, raw_crop_to_playable_area=True))
    r = sc.Response.FromString(game.handle(sc.Request(join_game=join).SerializeToString())).join_game
    assert r.error == sc.ResponseJoinGame.FeatureUnsupported and "raw_crop_to_playable_area" in r.error_details


def test_a_minimap_resolution_above_the_lite_limit_is_feature_unsupported_not_a_crash():
    """A joined feature_layer.minimap_resolution of 100000 allocated (8, 100000, 100000) minimap planes: the server's
    handle() raised MemoryError. It is refused with FeatureUnsupported naming the value and the lite engine's limit."""
    from sc2_envs.lite.env import MAX_SIZES
    from sc2_envs.sc2api.server import SC2APIGame

    game = SC2APIGame()
    create = sc.RequestCreateGame(local_map=sc.LocalMap(map_path="Melee/Simple64.SC2Map"), random_seed=1)
    create.player_setup.add(type=sc.Participant)
    create.player_setup.add(type=sc.Computer, race=common_pb2.Terran, difficulty=sc.VeryEasy)
    game.handle(sc.Request(create_game=create).SerializeToString())
    options = sc.InterfaceOptions(raw=True)
    options.feature_layer.minimap_resolution.x = options.feature_layer.minimap_resolution.y = 100000
    join = sc.Request(join_game=sc.RequestJoinGame(race=common_pb2.Protoss, options=options))
    r = sc.Response.FromString(game.handle(join.SerializeToString())).join_game
    limit = MAX_SIZES["minimap_resolution"]
    assert r.error == sc.ResponseJoinGame.FeatureUnsupported
    assert f"minimap_resolution 100000x100000; expected a square resolution in [1, {limit}]" in r.error_details
    assert game.status == "init_game"


def test_a_step_count_above_the_lite_step_limit_is_an_error_and_runs_no_loop():
    """step(count=2**32 - 1) ran the lite engine for hours (about 6 s per 2**20 loops); counts above the direct
    env's step_mul limit (MAX_LOOPS) get a Response error naming the count and the limit, and the game stays put."""
    from sc2_envs.lite.env import MAX_LOOPS
    from sc2_envs.sc2api.server import SC2APIGame

    game = SC2APIGame()
    create = sc.RequestCreateGame(local_map=sc.LocalMap(map_path="Melee/Simple64.SC2Map"), random_seed=1)
    create.player_setup.add(type=sc.Participant)
    create.player_setup.add(type=sc.Computer, race=common_pb2.Terran, difficulty=sc.VeryEasy)
    game.handle(sc.Request(create_game=create).SerializeToString())
    join = sc.Request(join_game=sc.RequestJoinGame(race=common_pb2.Protoss, options=sc.InterfaceOptions(raw=True)))
    game.handle(join.SerializeToString())
    r = sc.Response.FromString(game.handle(sc.Request(step=sc.RequestStep(count=2**32 - 1)).SerializeToString()))
    assert list(r.error) == [
        f"step count {2**32 - 1} game loops; expected at most {MAX_LOOPS['step_mul']} per step on Melee/Simple64.SC2Map"
    ]
    assert game.game_loop == 0 and game.status == "in_game"


def test_unsupported_and_malformed_commands_are_action_errors():
    """A command the engine does not model is NotSupported, a dead or unknown tag is an Error, a NaN point is an
    Error; each is a per-action result and an action_errors entry, and the game goes on."""
    from sc2_envs.sc2api.server import SC2APIGame

    game = SC2APIGame()

    def rpc(**request):
        return sc.Response.FromString(game.handle(sc.Request(**request).SerializeToString()))

    create = sc.RequestCreateGame(local_map=sc.LocalMap(map_path="Melee/Simple64.SC2Map"), random_seed=1)
    create.player_setup.add(type=sc.Participant)
    create.player_setup.add(type=sc.Computer, race=common_pb2.Terran, difficulty=sc.VeryEasy)
    rpc(create_game=create)
    assert not rpc(join_game=sc.RequestJoinGame(race=common_pb2.Protoss, options=sc.InterfaceOptions(raw=True))).error
    probe = next(
        u.tag for u in rpc(observation=sc.RequestObservation()).observation.observation.raw_data.units if u.unit_type == PROBE
    )
    actions = [
        _unit_command(3675, [probe]),  # Effect_Stim: not modelled by the engine
        _unit_command(16, [123456789], (40.0, 40.0)),  # no such unit
        _unit_command(16, [probe], (float("nan"), 40.0)),
        sc.Action(
            action_raw=raw_pb2.ActionRaw(toggle_autocast=raw_pb2.ActionRawToggleAutocast(ability_id=1, unit_tags=[probe]))
        ),
    ]
    r = rpc(action=sc.RequestAction(actions=actions))
    assert not r.error and list(r.action.result) == [2, 3, 3, 2]
    assert rpc(step=sc.RequestStep(count=8)).status == sc.in_game
    response = rpc(observation=sc.RequestObservation()).observation
    assert not response.observation.HasField("score")  # joined without options.score
    errors = response.action_errors
    assert [(e.unit_tag, e.ability_id, e.result) for e in errors] == [(probe, 3675, 2), (123456789, 16, 3), (probe, 16, 3)]


def _camera_move(x: float, y: float) -> sc.Action:
    move = raw_pb2.ActionRawCameraMove(center_world_space=common_pb2.Point(x=x, y=y))
    return sc.Action(action_raw=raw_pb2.ActionRaw(camera_move=move))


def test_a_nan_or_infinite_camera_move_is_an_error_and_leaves_the_camera():
    """A camera centre that names no place is refused like a NaN unit-command point (Error, an action_errors
    entry with tag 0 and ability 0); a finite one still moves the camera."""
    from sc2_envs.sc2api.server import SC2APIGame

    game = SC2APIGame()

    def rpc(**request):
        return sc.Response.FromString(game.handle(sc.Request(**request).SerializeToString()))

    create = sc.RequestCreateGame(local_map=sc.LocalMap(map_path="Melee/Simple64.SC2Map"), random_seed=1)
    create.player_setup.add(type=sc.Participant)
    create.player_setup.add(type=sc.Computer, race=common_pb2.Terran, difficulty=sc.VeryEasy)
    rpc(create_game=create)
    assert not rpc(join_game=sc.RequestJoinGame(race=common_pb2.Protoss, options=sc.InterfaceOptions(raw=True))).error
    actions = [_camera_move(20.0, 30.0), _camera_move(float("nan"), 30.0), _camera_move(20.0, float("inf"))]
    r = rpc(action=sc.RequestAction(actions=actions))
    assert not r.error and list(r.action.result) == [1, 3, 3]
    assert game.lite.games.observer.camera[0].tolist() == [20.0, 30.0]
    rpc(step=sc.RequestStep(count=8))
    errors = rpc(observation=sc.RequestObservation()).observation.action_errors
    assert [(e.unit_tag, e.ability_id, e.result) for e in errors] == [(0, 0, 3), (0, 0, 3)]


PYSC2_AGENT = '''
"""A raw agent written for pysc2 (``import pysc2``): it trains Probes, then its Probes attack their own Nexus."""
import sys

from pysc2.env import sc2_env
from pysc2.lib import actions, features, units

raw = actions.RAW_FUNCTIONS
env = sc2_env.SC2Env(
    map_name="Simple64",
    players=[sc2_env.Agent(sc2_env.Race.protoss), sc2_env.Bot(sc2_env.Race.terran, sc2_env.Difficulty.very_easy)],
    agent_interface_format=features.AgentInterfaceFormat(
        action_space=actions.ActionSpace.RAW, use_raw_units=True, raw_resolution=64
    ),
    step_mul=8,
    random_seed=int(sys.argv[1]),
)
for episode in range(2):
    ts = env.reset()[0]
    steps = 0
    while not ts.last():
        own = [u for u in ts.observation.raw_units if u.alliance == 1]  # raw_pb2.Alliance.Self
        nexus = [u.tag for u in own if u.unit_type == units.Protoss.Nexus]
        probes = [u.tag for u in own if u.unit_type == units.Protoss.Probe]
        if steps == 30 and nexus:
            act = raw.Attack_unit("now", probes, nexus[0])
        elif ts.observation.player.minerals >= 50 and nexus:
            act = raw.Train_Probe_quick("queued", nexus[0])
        else:
            act = raw.no_op()
        ts = env.step([act])[0]
        steps += 1
    print(f"episode {episode}: loop {ts.observation.game_loop[0]} reward {ts.reward} probes {len(probes)}", flush=True)
env.close()
'''


def test_an_unmodified_pysc2_raw_agent_plays_two_games_to_the_end(tmp_path):
    """``python -m sc2_envs.sc2api run`` runs a script written for pysc2's ``SC2Env`` (raw actions and raw units):
    two Simple64 games (the second after pysc2's restart) end by the melee rule with reward -1."""
    import subprocess
    import sys
    from pathlib import Path

    script = tmp_path / "agent.py"
    script.write_text(PYSC2_AGENT)
    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": str(root), "OMP_NUM_THREADS": "1", "SC2PATH": str(tmp_path / "sc2")}
    out = subprocess.run(
        [sys.executable, "-m", "sc2_envs.sc2api", "run", str(script), "7"],
        env=env, capture_output=True, text=True, timeout=600, cwd=root,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-3000:]
    lines = [line for line in out.stdout.splitlines() if line.startswith("episode")]
    assert len(lines) == 2 and lines[0][9:] == lines[1][9:]  # the restart replays the seeded game
    probes = int(lines[0].rsplit("probes ", 1)[1])
    assert "reward -1" in lines[0] and probes > 12, lines  # the agent's Train_Probe orders took effect


def test_throughput_benchmark_times_only_the_env_on_simple64():
    """``benchmarks/sc2api_throughput.py --maps Simple64`` counts timed steps and finished games only, and its
    CPU seconds add the server's (here a stub) to this process's."""
    import time

    from conftest import load_algo

    bench = load_algo("sc2api_throughput", folder="benchmarks")

    class ShortGames:
        max_entities, max_selected = 8, 2

        def __init__(self):
            self.calls = 0

        def _obs(self):
            obs = {"entity_mask": np.zeros(8, np.int8), "selectable_mask": np.zeros(8, np.int8)}
            obs["action_type_mask"] = np.zeros(564, np.int8)
            obs["action_type_mask"][0] = 1
            obs["entities"] = np.zeros((8, 38), np.float32)
            return obs

        def reset(self, seed=None):
            return self._obs(), {}

        def step(self, action):
            self.calls += 1
            time.sleep(0.001)
            return self._obs(), 0.0, False, self.calls % 5 == 0, {}

    server = iter(range(0, 100, 2))
    loop = bench.FullGameLoop(ShortGames(), seed=0, server_cpu=lambda: float(next(server)))
    loop.run(7, timed=False)
    loop.run(10)
    assert (loop.steps, loop.episodes) == (10, 2)  # games ended at calls 10 and 15
    assert loop.seconds >= 0.01 and loop.cpu_seconds >= 2.0  # the stub server "used" 2 s over the chunk


def test_the_servers_codes_are_the_engines():
    """``sc2api.lite_game`` takes the engine's codes from its numba-free modules (``lite.layout``,
    ``lite.commands``), so server start-up compiles nothing: the codes it answers are the kernels'."""
    from sc2_envs.lite import commands, kernels
    from sc2_envs.sc2api import lite_game

    assert (lite_game.AR_SUCCESS, lite_game.AR_NOT_SUPPORTED, lite_game.AR_ERROR) == (
        kernels.AR_SUCCESS,
        kernels.AR_NOT_SUPPORTED,
        kernels.AR_ERROR,
    )
    assert (lite_game.ENGINE_CMD_UNSUPPORTED, lite_game.RAW_MOVE_CAMERA) == (commands.CMD_UNSUPPORTED, commands.MOVE_CAMERA)
