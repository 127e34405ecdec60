"""The scripted expert: the replays' build order, played on the lite engine through FullGame-v0."""

from __future__ import annotations

import sys

import numpy as np
import pytest
from conftest import REPO, TEST_DATA, shared_data_root

from sc2_envs.full_game._deps import MissingDependencyError, require

try:
    require("pysc2_evolved.lib.actions", "the scripted expert tests")
except MissingDependencyError as e:
    pytest.skip(f"the full-game extra is not usable here: {e}", allow_module_level=True)

from sc2_envs.full_game import spec
from sc2_envs.training.fullgame_actor import LiteProbe, make_vector_env, play_games
from sc2_envs.training.fullgame_scripted import EXPERT_BUILD, GATEWAY, PROBE, PYLON, ZEALOT, ScriptedExpert

_E = spec.ENTITY_INDEX


def _own_count(obs, g, game_id):
    own = (obs["entity_mask"][g] == 1) & (obs["entities"][g, :, _E["alliance"]] == 1)
    return int((own & (obs["entities"][g, :, _E["unit_type"]] == spec.unit_type_index(game_id))).sum())


def test_expert_opens_with_the_replays_build_order():
    env = make_vector_env("lite", 1)
    pol = ScriptedExpert.for_lite(env)
    obs, _ = env.reset(seed=0)
    first = {}
    for _ in range(450):  # 3,600 game loops, 2.7 real minutes
        obs, *_ = env.step(pol(obs))
        food = float(obs["scalars"][0, spec.SCALAR_INDEX["food_used"]])
        for name, uid in (("pylon", PYLON), ("gateway", GATEWAY), ("zealot", ZEALOT)):
            if name not in first and _own_count(obs, 0, uid):
                first[name] = food
    assert set(first) == {"pylon", "gateway", "zealot"}
    # each started when the build order says (a building appears once its probe arrives: food may have grown by 1-2)
    assert EXPERT_BUILD.pylon_food[0] <= first["pylon"] <= EXPERT_BUILD.pylon_food[0] + 2
    assert EXPERT_BUILD.gateway_food[0] <= first["gateway"] <= EXPERT_BUILD.gateway_food[0] + 3
    assert _own_count(obs, 0, PROBE) >= 16
    assert _own_count(obs, 0, GATEWAY) == 2  # the third waits for 28 food


def test_expert_needs_an_enemy_start_on_the_grid():
    with pytest.raises(ValueError, match="enemy_start"):
        ScriptedExpert((64, 3), raw_resolution=64)


def test_expert_reset_forgets_only_the_given_games():
    env = make_vector_env("lite", 2)
    pol = ScriptedExpert.for_lite(env)
    obs, _ = env.reset(seed=0)
    pol(obs)
    pol._games[0]["attacking"] = pol._games[1]["attacking"] = True
    pol.reset(np.array([False, True]))
    assert pol._games[0]["attacking"] and not pol._games[1]["attacking"]


@pytest.mark.slow
def test_expert_beats_the_lite_bot():
    env = make_vector_env("lite", 2, game_steps_per_episode=18000)
    records = play_games(ScriptedExpert.for_lite(env), env, 2, seed=11, probe=LiteProbe(env.engine))
    assert [r.outcome for r in records] == [1.0, 1.0]
    assert all(r.probe["enemy_units_killed"] > 10 for r in records)


def _build_order_facts(folder):
    sys.path.insert(0, str(REPO / "benchmarks"))
    import fullgame_build_order

    return [fullgame_build_order.facts(p) for p in sorted(folder.glob("*.SC2Replay"))]


def test_build_order_facts_read_the_committed_replays():
    rows = _build_order_facts(TEST_DATA / "replays" / "mas_simple64")
    assert len(rows) == 3
    # Simple64_2021-11-21-11-55-57: Pylon at 14 food, Gateway at 17, 3 Gateways and 5 Zealots at the first attack
    first = rows[0]
    assert (first["pylon1_food"], first["gateway1_food"], first["gateways_at_attack"], first["zealots_at_attack"]) == (
        14,
        17,
        3,
        5,
    )


@pytest.mark.slow
def test_expert_build_order_is_the_median_of_the_80_replays():
    root = shared_data_root()
    if root is None or not (root / "replays" / "mas_simple64").is_dir():
        pytest.skip("set SC2_ENVS_SHARED_DATA to a folder holding replays/mas_simple64 (the 80 Simple64 replays)")
    rows = _build_order_facts(root / "replays" / "mas_simple64")

    def median(c):
        v = np.array([r[c] for r in rows], float)
        return float(np.median(v[~np.isnan(v)]))

    assert EXPERT_BUILD.pylon_food == (median("pylon1_food"), median("pylon2_food"))
    assert EXPERT_BUILD.gateway_food == (median("gateway1_food"), median("gateway2_food"), median("gateway3_food"))
    assert EXPERT_BUILD.max_workers == median("max_workers_before_attack")
    assert EXPERT_BUILD.attack_zealots == median("zealots_at_attack")
