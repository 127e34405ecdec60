"""Raw unit commands the simulator's StarCraft II API server applies or refuses.

Real s2clientprotocol ``Request`` messages go through ``SC2APIGame.handle`` in this process (no pysc2,
no socket); the unit orders are read back from the simulator's state.
"""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest
import torch

pytest.importorskip("s2clientprotocol", reason="the API server needs s2clientprotocol (full-game extra)")
from s2clientprotocol import common_pb2, error_pb2, raw_pb2  # noqa: E402
from s2clientprotocol import sc2api_pb2 as sc  # noqa: E402

from sc2_envs.sc2api.server import SC2APIGame  # noqa: E402
from sc2_envs.sc2api.smac_rules import SMACUnitRules  # noqa: E402
from sc2_envs.sim.state import ORDER_MOVE  # noqa: E402

MOVE, ATTACK = 16, 23


def _rpc(game: SC2APIGame, **request) -> sc.Response:
    return sc.Response.FromString(game.handle(sc.Request(**request).SerializeToString()))


@pytest.fixture(scope="module")
def game():
    """A 3m game joined with the raw interface; each test sets the orders it reads."""
    g = SC2APIGame()
    create = sc.RequestCreateGame(local_map=sc.LocalMap(map_path="SMAC_Maps/3m.SC2Map"), realtime=False, random_seed=1)
    create.player_setup.add(type=sc.Participant)
    create.player_setup.add(type=sc.Computer, race=1, difficulty=7)
    assert not _rpc(g, create_game=create).error
    assert not _rpc(g, join_game=sc.RequestJoinGame(race=1, options=sc.InterfaceOptions(raw=True))).error
    return g


def _agent_tags(game: SC2APIGame) -> list[int]:
    units = _rpc(game, observation=sc.RequestObservation()).observation.observation.raw_data.units
    return [u.tag for u in units if u.owner == 1]


def _command(tag: int, ability: int, x: float, y: float) -> sc.Action:
    cmd = raw_pb2.ActionRawUnitCommand(
        ability_id=ability, unit_tags=[tag], target_world_space_pos=common_pb2.Point2D(x=x, y=y)
    )
    return sc.Action(action_raw=raw_pb2.ActionRaw(unit_command=cmd))


def _act(game: SC2APIGame, *actions: sc.Action) -> list[int]:
    resp = _rpc(game, action=sc.RequestAction(actions=list(actions)))
    assert not resp.error, resp.error  # per-action refusals, never a failed request
    return list(resp.action.result)


def _orders(game: SC2APIGame) -> tuple[torch.Tensor, torch.Tensor]:
    st = game.sim.st
    return st.order_kind[0].clone(), st.order_point[0].clone()


@pytest.mark.parametrize(
    "x, y",
    [(math.nan, 16.0), (16.0, math.inf), (-math.inf, 16.0), (math.nan, math.nan)],
    ids=["nan x", "inf y", "-inf x", "nan"],
)
@pytest.mark.parametrize("ability", [MOVE, ATTACK], ids=["move", "attack-move"])
def test_a_non_finite_target_point_is_an_error_and_changes_no_order(game, ability, x, y):
    # found by a reviewer: Move to NaN was accepted (Success) and the unit's position became NaN
    a, b, _ = _agent_tags(game)
    _act(game, _command(a, MOVE, 10.0, 10.0))
    kind, point = _orders(game)
    results = _act(game, _command(a, ability, x, y), _command(b, MOVE, 12.0, 14.0))
    assert results == [error_pb2.Error, error_pb2.Success]  # the valid command beside it still applies
    kind_after, point_after = _orders(game)
    u, v = (game._unit_index(t) for t in (a, b))
    assert kind_after[u] == kind[u] and torch.equal(point_after[u], point[u])
    assert kind_after[v] == ORDER_MOVE and point_after[v].tolist() == [12.0, 14.0]
    _rpc(game, step=sc.RequestStep(count=8))
    assert torch.isfinite(game.sim.st.pos).all()


@pytest.mark.parametrize("x, y", [(34.01, 16.0), (-2.01, 16.0), (16.0, 40.0), (1e30, 16.0), (-1e30, -1e30)], ids=str)
@pytest.mark.parametrize("ability", [MOVE, ATTACK], ids=["move", "attack-move"])
def test_a_point_beyond_smacs_move_reach_off_the_map_is_not_supported(game, ability, x, y):
    # found by a reviewer: accepted, and from about 1.8e19 on the unit silently stayed where it was
    (a, *_) = _agent_tags(game)
    _act(game, _command(a, MOVE, 10.0, 10.0))
    kind, point = _orders(game)
    assert _act(game, _command(a, ability, x, y)) == [error_pb2.NotSupported]
    kind_after, point_after = _orders(game)
    u = game._unit_index(a)
    assert kind_after[u] == kind[u] and torch.equal(point_after[u], point[u])


@pytest.mark.parametrize("x, y", [(33.5, 16.0), (-1.5, 16.0), (34.0, 34.0), (-2.0, -2.0), (0.0, 32.0)], ids=str)
def test_a_move_off_the_map_within_smacs_reach_is_served_as_the_embedded_env_serves_it(game, x, y):
    a, *_ = _agent_tags(game)
    assert _act(game, _command(a, MOVE, x, y)) == [error_pb2.Success]
    kind, point = _orders(game)
    u = game._unit_index(a)
    assert kind[u] == ORDER_MOVE and point[u].tolist() == [x, y]  # as given: the embedded env does not clip either


def test_smac_sends_moves_up_to_its_move_amount_past_the_map_edge():
    """Why points within 2 of the playable area are served: SMAC's ``can_move`` checks the cell one
    unit ahead, then ``get_agent_action`` moves two ahead."""
    host = SimpleNamespace(_move_amount=2, map_x=32, map_y=32, pathing_grid=np.ones((32, 32), bool))
    host.check_bounds = lambda x, y: SMACUnitRules.check_bounds(host, x, y)
    east_edge = SimpleNamespace(pos=SimpleNamespace(x=30.9, y=16.0))
    west_edge = SimpleNamespace(pos=SimpleNamespace(x=0.1, y=16.0))
    assert SMACUnitRules.can_move(host, east_edge, "east")  # its move targets x = 32.9
    assert SMACUnitRules.can_move(host, west_edge, "west")  # int(-0.9) == 0: targets x = -1.9
    for x in (32.9, -1.9):
        assert SC2APIGame.target_point_result(x, 16.0) is None


def test_refused_commands_are_the_next_observations_action_errors(game):
    """sc2api.proto: ResponseObservation.action_errors is the "error result of actions since the last
    observation": each refused command once, then cleared; served commands add nothing."""
    _rpc(game, observation=sc.RequestObservation())  # clear what earlier tests left
    tag = _agent_tags(game)[0]
    results = _act(game, _command(tag, MOVE, 16.0, 16.0), _command(tag, MOVE, math.nan, 1.0), _command(tag, 9999, 16.0, 16.0))
    assert results[0] == error_pb2.Success and results[1] == error_pb2.Error and results[2] == error_pb2.NotSupported
    errors = _rpc(game, observation=sc.RequestObservation()).observation.action_errors
    assert [(e.unit_tag, e.ability_id, e.result) for e in errors] == [
        (tag, MOVE, error_pb2.Error),
        (tag, 9999, error_pb2.NotSupported),
    ]
    assert not _rpc(game, observation=sc.RequestObservation()).observation.action_errors
