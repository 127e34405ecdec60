"""The full-game actor loop: AlphaStarPolicy <-> FullGame-v0 actions, batched, on the lite engine and
on the real game's protobuf messages (the live game only where StarCraft II is installed)."""

from __future__ import annotations

from decimal import Decimal

import numpy as np
import pytest
import torch

from sc2_envs.full_game._deps import MissingDependencyError, require

try:
    require("pysc2_evolved.lib.actions", "the full-game actor tests")
except MissingDependencyError as e:
    pytest.skip(f"the full-game extra is not usable here: {e}", allow_module_level=True)

from models.alphastar import AlphaStarConfig, AlphaStarPolicy
from models.common import MASKED_LOGIT
from sc2_envs.full_game import spec
from sc2_envs.full_game.env import sc2_available, sc2_path
from sc2_envs.lite.policy import RandomLegalPolicy
from sc2_envs.training.fullgame_actor import (
    AlphaStarActor,
    LiteProbe,
    env_actions_to_labels,
    idle_function_ids,
    make_vector_env,
    model_actions_to_env,
    model_inputs,
    play_games,
)

FN = {f.name: f.id for f in spec.raw_functions()}
R = 16  # the tiny preset's raw grid


def tiny(seed=0, **kw):
    torch.manual_seed(seed)
    return AlphaStarPolicy(AlphaStarConfig.tiny(**kw)).eval()


def lite_env(b, n=96, **kw):
    return make_vector_env("lite", b, max_entities=n, raw_resolution=R, minimap_resolution=R, **kw)


def test_padding_rows_beyond_the_bucket_do_not_change_the_outputs():
    model = tiny(max_entities=96)
    env = lite_env(2)
    obs, _ = env.reset(seed=3)
    count = int(obs["entity_mask"].sum(1).max())
    assert 32 < count < 64  # 53 units at the start: the actor runs 64 rows instead of 96
    actor = AlphaStarActor(model, 2, 96, 64, R, greedy=True)
    rows = actor.rows_for(obs)
    assert rows == 64
    with torch.no_grad():
        full, _ = model(model_inputs(obs, model.cfg), greedy=True)
        cut, _ = actor._view(rows)(model_inputs(obs, model.cfg, rows), greedy=True)
    for head in ("action_type", "delay", "queued", "target_location"):
        torch.testing.assert_close(cut[head], full[head], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(cut["target_unit"][..., :count], full["target_unit"][..., :count], atol=1e-5, rtol=1e-5)
    su_full = full["selected_units"][..., list(range(count)) + [96]]
    su_cut = cut["selected_units"][..., list(range(count)) + [64]]
    torch.testing.assert_close(su_cut, su_full, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(cut["value"]["winloss"], full["value"]["winloss"], atol=1e-5, rtol=1e-5)


def test_model_actions_become_env_actions_with_unused_heads_blanked():
    n, k = 10, 4
    rows = 6
    at = torch.tensor([[FN["Attack_pt"]], [FN["Harvest_Gather_unit"]], [FN["no_op"]]])
    actions = {
        "action_type": at,
        "delay": torch.tensor([[3], [200], [0]]),
        "queued": torch.tensor([[1], [1], [1]]),
        "selected": torch.tensor([[[2, 0, rows]], [[1, rows, 3]], [[0, 1, 2]]]),
        "target_unit": torch.tensor([[5], [4], [2]]),
        "target_location": torch.tensor([[2 * R + 5], [7], [9]]),
    }
    out = model_actions_to_env(actions, rows, n, k, R)
    assert out["action_type"].tolist() == at.reshape(-1).tolist()
    assert out["selected_units"].tolist() == [[2, 0, n, n], [1, n, n, n], [n, n, n, n]]  # EOF ends; no_op selects none
    assert out["target_unit"].tolist() == [n, 4, n]  # only *_unit functions take a target unit
    assert out["target_location"].tolist() == [[5, 2], [0, 0], [0, 0]]  # (col, row) of row * R + col
    assert out["queued"].tolist() == [1, 1, 0]
    assert out["delay"].tolist() == [3, spec.MAX_DELAY, 0]


def test_a_target_row_the_model_never_saw_is_refused():
    actions = {
        "action_type": torch.tensor([[FN["Attack_unit"]]]),
        "delay": torch.tensor([[0]]),
        "queued": torch.tensor([[0]]),
        "selected": torch.tensor([[[0, 4]]]),
        "target_unit": torch.tensor([[4]]),
        "target_location": torch.tensor([[0]]),
    }
    with pytest.raises(ValueError, match="target_unit row 4"):
        model_actions_to_env(actions, 4, 10, 4, R)


def test_env_actions_teacher_forced_come_back_unchanged():
    model = tiny(max_entities=96)
    env = lite_env(3)
    obs, _ = env.reset(seed=1)
    action = RandomLegalPolicy(env.engine.catalog, 96, 64, R, noop_prob=0.0, seed=2)(obs)
    labels = env_actions_to_labels(action, 96, R)
    with torch.no_grad():
        out, _ = model(model_inputs(obs, model.cfg), labels=labels)
    back = model_actions_to_env(out["actions"], 96, 96, 64, R)
    argm = spec.argument_masks()[action["action_type"]].astype(bool)
    assert np.array_equal(back["action_type"], action["action_type"])
    k = model.cfg.max_selected
    for g in range(3):
        if argm[g, 3]:
            assert back["selected_units"][g, :k].tolist() == action["selected_units"][g, :k].tolist()
        if argm[g, 4]:
            assert back["target_unit"][g] == action["target_unit"][g]
        if argm[g, 5]:
            assert back["target_location"][g].tolist() == action["target_location"][g].tolist()


def test_actor_resets_only_the_games_that_restart():
    model = tiny(max_entities=96)
    env = lite_env(2)
    obs, _ = env.reset(seed=0)
    actor = AlphaStarActor(model, 2, 96, 64, R)
    actor(obs)
    h, _ = actor.state
    assert h[:, 0].abs().sum() > 0 and h[:, 1].abs().sum() > 0
    actor.reset(np.array([True, False]))
    assert h[:, 0].abs().sum() == 0 and h[:, 1].abs().sum() > 0


def test_replay_trained_model_plays_only_available_action_types():
    model = tiny(max_entities=96).__class__(AlphaStarConfig.replay(AlphaStarConfig.tiny(max_entities=96))).eval()
    env = lite_env(4)
    obs, _ = env.reset(seed=5)
    actor = AlphaStarActor(model, 4, 96, 64, R)
    for _ in range(5):
        action = actor(obs)
        assert obs["action_type_mask"][np.arange(4), action["action_type"]].all()
        obs, *_ = env.step(action)


def test_actor_refuses_a_raw_grid_it_was_not_built_for():
    with pytest.raises(ValueError, match="raw_resolution=64"):
        AlphaStarActor(tiny(), 1, raw_resolution=64)


def test_play_games_counts_exactly_the_requested_games():
    env = lite_env(2, game_steps_per_episode=80)  # 10 decisions per game
    policy = RandomLegalPolicy(env.engine.catalog, 96, 64, R, seed=0)
    records = play_games(policy, env, 3, seed=0, probe=LiteProbe(env.engine))
    assert len(records) == 3
    for r in records:
        assert r.truncated and r.outcome == 0.0 and r.game_loops == 80 and r.steps == 10
        assert 0 <= r.idle_steps <= r.steps
        assert r.probe["minerals_collected"] >= 0 and r.probe["enemy_units_killed"] == 0


def test_policy_memory_restarts_with_each_new_game():
    env = lite_env(1, game_steps_per_episode=40)

    class Counting:
        def __init__(self):
            self.resets = []

        def __call__(self, obs):
            return {
                "action_type": np.zeros(1, np.int64),
                "delay": np.zeros(1, np.int64),
                "queued": np.zeros(1, np.int64),
                "selected_units": np.full((1, 64), 96, np.int64),
                "target_unit": np.full(1, 96, np.int64),
                "target_location": np.zeros((1, 2), np.int64),
            }

        def reset(self, games):
            self.resets.append(games.tolist())

    pol = Counting()
    records = play_games(pol, env, 2, seed=0)
    assert len(records) == 2 and all(r.idle_steps == r.steps == 5 for r in records)
    assert pol.resets == [[True]]  # once, when the second game started


def test_lite_probe_counts_each_bot_unit_that_dies_once():
    env = lite_env(2)
    env.reset(seed=0)
    probe = LiteProbe(env.engine)
    from sc2_envs.lite import layout

    ui = env.engine.state.ui
    bot_units = np.flatnonzero((ui[1, :, layout.UI_ALIVE] == 1) & (ui[1, :, layout.UI_OWNER] == 2))
    ui[1, bot_units[:2], layout.UI_ALIVE] = 0
    probe.update()
    probe.update()
    assert probe.killed.tolist() == [0, 2]


def test_idle_functions_are_no_op_and_the_stops():
    names = {f.id: f.name for f in spec.raw_functions()}
    ids = idle_function_ids()
    assert 0 in ids and FN["Stop_quick"] in ids
    assert all(names[i] == "no_op" or names[i].startswith("Stop_") for i in ids)


# ------------------------------------------------------------------ the real game's messages
def _response_observation(sc_pb, raw_pb2):
    resp = sc_pb.ResponseObservation()
    obs = resp.observation
    obs.game_loop = 224
    pc = obs.player_common
    pc.player_id, pc.minerals, pc.food_used, pc.food_cap, pc.food_workers = 1, 75, 13, 15, 13
    for tag, utype, alliance, owner, x, y in (
        (0x100040001, 84, raw_pb2.Self, 1, 30.0, 60.0),  # Probe
        (0x100000001, 59, raw_pb2.Self, 1, 29.5, 65.5),  # Nexus
        (0x1000C0001, 48, raw_pb2.Enemy, 2, 60.0, 30.0),  # Marine
        (0x100080001, 341, raw_pb2.Neutral, 16, 25.0, 60.0),  # MineralField
    ):
        u = obs.raw_data.units.add(
            tag=tag, unit_type=utype, alliance=alliance, owner=owner, display_type=raw_pb2.Visible, build_progress=1.0
        )
        u.pos.x, u.pos.y = x, y
    return sc_pb.ResponseObservation.FromString(resp.SerializeToString())


def test_actor_actions_become_sc2_request_actions():
    try:
        sc_pb = require("s2clientprotocol.sc2api_pb2", "the sc2 backend")
        common_pb2 = require("s2clientprotocol.common_pb2", "the sc2 backend")
        raw_pb2 = require("s2clientprotocol.raw_pb2", "the sc2 backend")
    except MissingDependencyError as e:
        pytest.skip(f"s2clientprotocol is not usable here: {e}")
    from sc2_envs.full_game import convert

    info = sc_pb.ResponseGameInfo(map_name="Simple64")
    info.start_raw.map_size.x, info.start_raw.map_size.y = 88, 96
    info.player_info.add(player_id=1, type=sc_pb.Participant, race_requested=common_pb2.Protoss)
    info.player_info.add(player_id=2, type=sc_pb.Computer, race_requested=common_pb2.Terran)
    ctx = convert.context_from_game_info(info, 1, raw_resolution=16, max_entities=8, max_selected=4, minimap_resolution=16)
    single, tags = convert.observation_to_arrays(_response_observation(sc_pb, raw_pb2), ctx)
    obs = {k: np.stack([v, v]) for k, v in single.items()}
    actor = AlphaStarActor(tiny(max_entities=8), 2, 8, 4, 16)
    for _ in range(10):
        action = actor(obs)
        for g in range(2):
            a = {k: v[g] for k, v in action.items()}
            request = convert.action_to_request(a, tags, ctx)  # raises on anything the game could not take
            wire = sc_pb.RequestAction.FromString(request.SerializeToString())
            back = convert.request_to_action(wire, tags, ctx)
            assert back["action_type"] == a["action_type"] or a["action_type"] == FN["no_op"]


@pytest.mark.skipif(not sc2_available(), reason=f"StarCraft II is not installed under SC2PATH={str(sc2_path())!r}")
def test_actor_plays_the_real_game():
    env = make_vector_env("sc2", 1, max_entities=96, raw_resolution=16, minimap_resolution=16, game_steps_per_episode=160)
    try:
        records = play_games(AlphaStarActor(tiny(max_entities=96), 1, 96, 64, 16), env, 1, seed=0)
    finally:
        env.close()
    assert len(records) == 1 and records[0].steps == 20


def test_a_temperature_near_zero_plays_the_argmax_and_returns_the_policys_own_logits():
    model = tiny(max_entities=96)
    env = lite_env(4)
    obs, _ = env.reset(seed=5)
    inputs = model_inputs(obs, model.cfg)
    with torch.no_grad():
        greedy, _ = model(inputs, greedy=True)
        cold, _ = model(inputs, temperature=1e-6)
        torch.manual_seed(0)
        warm, _ = model(inputs, temperature=2.0)
    for head, chosen in greedy["actions"].items():
        assert torch.equal(cold["actions"][head], chosen), head
    # the returned logits are the policy's own, not the tempered distribution the actions came from
    torch.testing.assert_close(warm["action_type"], greedy["action_type"])
    # the action type is the first draw: the same generator state draws it from softmax(logits / 2)
    torch.manual_seed(0)
    expected = torch.distributions.Categorical(logits=greedy["action_type"] / 2.0).sample()
    assert torch.equal(warm["actions"]["action_type"], expected)


@pytest.mark.parametrize(
    "temperature", [0.0, -1.0, float("nan"), float("inf"), 1e-40, 1e39, 10**400, True, "0.5", None, Decimal("0.5")]
)
def test_a_temperature_the_heads_cannot_sample_at_is_refused(temperature):
    """found by a tester: 1e-40 passed and made NaN logits mid-game, "0.5" and Decimal passed the check and
    failed inside the forward pass, True was taken as 1."""
    model = tiny(max_entities=96)
    with pytest.raises(ValueError, match="^temperature=.*expected a real number in"):
        AlphaStarActor(model, 1, 96, 64, R, temperature=temperature)
    obs, _ = lite_env(1).reset(seed=0)
    with pytest.raises(ValueError, match="^temperature=.*expected a real number in"):
        model(model_inputs(obs, model.cfg), temperature=temperature)


def test_a_temperature_beside_greedy_is_refused_not_ignored():
    model = tiny(max_entities=96)
    with pytest.raises(ValueError, match="with greedy=True: the argmax samples nothing"):
        AlphaStarActor(model, 1, 96, 64, R, greedy=True, temperature=0.5)
    obs, _ = lite_env(1).reset(seed=0)
    with pytest.raises(ValueError, match="with greedy=True: the argmax samples nothing"):
        model(model_inputs(obs, model.cfg), greedy=True, temperature=0.5)


@pytest.mark.parametrize("temperature", [1.2e-38, 1e-6, 1e10, 3e38])
def test_any_accepted_temperature_samples_only_what_the_masks_allow_and_no_nan(temperature):
    """found by a tester: masked logits are MASKED_LOGIT (-1e10), so at 1e10 and above MASKED_LOGIT / t was
    about 0 and unavailable action types, units and targets were drawn as often as legal ones."""
    model = tiny(max_entities=96)
    env = lite_env(4)
    obs, _ = env.reset(seed=2)
    torch.manual_seed(0)
    actor = AlphaStarActor(model, 4, 96, 64, R, temperature=temperature)
    for _ in range(5):
        action, out = actor.act(obs)
        chosen = out["actions"]
        at = chosen["action_type"].reshape(-1)
        allowed = out["action_type"].reshape(4, -1).gather(1, at.view(-1, 1)) > MASKED_LOGIT
        assert bool(allowed.all())
        sel = chosen["selected"].reshape(4, -1)
        sel_mask = out["selected_mask"].reshape(4, sel.shape[-1], -1)
        end = sel_mask.shape[-1] - 1  # an action that selects nothing is forced to end; every unit picked was allowed
        assert bool((sel_mask.gather(2, sel.unsqueeze(-1)).squeeze(-1) | (sel == end)).all())
        tu, tu_mask = chosen["target_unit"].reshape(4, 1), out["target_mask"].reshape(4, -1)
        assert bool(tu_mask.gather(1, tu).all())
        obs, *_ = env.step(action)


def test_a_near_zero_temperature_draws_the_argmax_without_nan():
    model = tiny(max_entities=96)
    obs, _ = lite_env(3).reset(seed=4)
    inputs = model_inputs(obs, model.cfg)
    with torch.no_grad():
        greedy, _ = model(inputs, greedy=True)
        cold, _ = model(inputs, temperature=1.2e-38)  # float32's smallest normal: logits / t overflows
    for head, chosen in greedy["actions"].items():
        assert torch.equal(cold["actions"][head], chosen), head
