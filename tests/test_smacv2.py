"""SMACv2 scenarios: distributions, determinism, per-env rosters, rules, bad input and the APIs.

Facts checked against oxwhirl/smacv2 577ab5a (``distributions.py``, ``starcraft2.py``, the example
configs); the feature vectors themselves are checked against SMACv2's code in
``test_smacv2_golden.py``.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import torch

import sc2_envs
from sc2_envs import smacv2 as v2
from sc2_envs.sim import UnitPlacement as P
from sc2_envs.sim import make_batched, rng

NAMES = [f"{r}_{n}_vs_{e}" for r in v2.RACES for n, e in v2.TEAM_SIZES]


def _draw(name: str, B: int = 4096, seed: int = 0, episode: int = 0):
    spec = v2.get_scenario(name)
    s = v2.ScenarioSampler(spec, "cpu")
    key = torch.tensor(rng.env_keys(seed, B))
    return spec, s, s.sample(torch.full((B,), episode), key), key


def test_scenario_registry_and_list_maps():
    assert sc2_envs.list_scenarios() == sorted(NAMES) == sc2_envs.list_maps("smacv2")
    assert sc2_envs.list_maps() == sorted(sc2_envs.maps.MAPS)  # v1 output unchanged
    assert "protoss_5_vs_5" not in sc2_envs.list_maps()
    assert sc2_envs.list_maps("all") == sc2_envs.list_maps() + sc2_envs.list_scenarios()
    with pytest.raises(ValueError, match="expected one of"):
        sc2_envs.list_maps("v3")
    for name in NAMES:
        spec = v2.get_scenario(name)
        assert spec.episode_limit == 200 and spec.p_reflect == 0.5 and spec.min_attack_range == 2


@pytest.mark.parametrize("race", v2.RACES)
def test_team_weights_and_exceptions(race):
    """Per-unit type frequencies match the config weights (4 sigma); no team is all exceptions."""
    spec, s, out, _ = _draw(f"{race}_10_vs_11")
    kind = out["kind"]
    rs = spec.race_spec
    N = spec.n_units
    n = kind[:, :N].numel()
    for u, w in zip(rs.unit_types, rs.weights, strict=True):
        freq = (kind[:, :N] == spec.kinds.index(u)).float().mean().item()
        sigma = math.sqrt(w * (1 - w) / n)
        assert abs(freq - w) < 4 * sigma + 1e-3, (u, freq, w)
    for exc in rs.exception_unit_types:
        k = spec.kinds.index(exc)
        assert not (kind[:, :N] == k).all(1).any()
        # the one extra enemy is its own team: a lone exception type is redrawn, so it never appears
        assert not (kind[:, 2 * N] == k).any()


@pytest.mark.parametrize("name", ["protoss_5_vs_5", "terran_10_vs_11", "zerg_20_vs_23"])
def test_enemy_team_copies_ally_team(name):
    spec, _, out, _ = _draw(name, B=512)
    N = spec.n_units
    kind = out["kind"]
    a = torch.sort(kind[:, :N], 1).values
    e = torch.sort(kind[:, N : 2 * N], 1).values
    assert torch.equal(a, e)


def test_agent_order_is_smacv2_sort():
    """Agents sorted by ally unit type id (alphabetical *_RL ids), then x, then y."""
    spec, _, out, _ = _draw("protoss_10_vs_10", B=256)
    order = {"colossus": 0, "stalker": 1, "zealot": 2}
    for b in range(256):
        k = [spec.kinds[i] for i in out["kind"][b, :10].tolist()]
        pos = out["pos"][b, :10].tolist()
        keys = [(order[t], x, y) for t, (x, y) in zip(k, pos, strict=True)]
        assert keys == sorted(keys)


def test_start_position_mixture_and_reflect_symmetry():
    spec, s, out, key = _draw("terran_10_vs_11")
    surr = out["surrounded"]
    frac = surr.float().mean().item()
    assert abs(frac - 0.5) < 4 * math.sqrt(0.25 / len(surr))
    ally, enemy, gid, surr2 = s._positions(torch.zeros(len(key), dtype=torch.int64), key, None, None)
    assert torch.equal(surr, surr2)
    r = ~surr
    # reflect: allies in [0, 15) x [0, 32); enemy j mirrors team member j in x = 16; extras in the right half
    assert (ally[r, :, 0] >= 0).all() and (ally[r, :, 0] < 15).all() and (ally[r, :, 1] < 32).all()
    torch.testing.assert_close(enemy[r, :10, 0], 32 - ally[r, :, 0])
    torch.testing.assert_close(enemy[r, :10, 1], ally[r, :, 1])
    assert (enemy[r, 10:, 0] >= 16).all() and (enemy[r, 10:, 0] < 32).all()
    # and the mirror survives the agent sort: the ally multiset mirrors the first 10 enemies
    pos = out["pos"][r]
    a = torch.sort(pos[:, :10, 0] * 100 + pos[:, :10, 1], 1).values
    m = torch.sort((32 - pos[:, 10:20, 0]) * 100 + pos[:, 10:20, 1], 1).values
    torch.testing.assert_close(a, m, atol=0.15, rtol=0)  # units within 1e-3 of x = 32 are clamped inside


def test_surrounded_groups():
    spec, s, out, key = _draw("protoss_20_vs_23")
    B = len(key)
    ally, enemy, gid, surr = s._positions(torch.zeros(B, dtype=torch.int64), key, None, None)
    assert (ally[surr] == 16).all()
    e = enemy[surr]
    d = e - 16
    # every enemy point is on a diagonal, between the corner and centre +- 2
    torch.testing.assert_close(d[..., 0].abs(), d[..., 1].abs(), atol=1e-4, rtol=0)
    assert (d[..., 0].abs() >= 2 - 1e-4).all() and (d[..., 0].abs() <= 16 + 1e-4).all()
    quadrant = (d[..., 0] > 0).long() * 2 + (d[..., 1] > 0).long()
    groups = gid[surr][:, 20:] - 1
    counts = []
    for b in range(len(e)):
        g = groups[b]
        present = sorted(set(g.tolist()))  # a drawn group may get no enemy (multinomial)
        counts.append(len(present))
        quads = [set(quadrant[b][g == k].tolist()) for k in present]
        assert all(len(q) == 1 for q in quads)  # a group sits on one diagonal
        assert len({next(iter(q)) for q in quads}) == len(present)  # distinct diagonals
        for k in present:  # one point per group
            pts = e[b][g == k]
            assert (pts == pts[0]).all()
    # SMACv2's procedure in NumPy: groups uniform in 1..4, multinomial membership of 23 enemies
    gen = np.random.default_rng(0)
    ref = []
    for _ in range(20000):
        n = gen.integers(1, 5)
        ref.append(int((gen.multinomial(23, np.ones(n) / n) > 0).sum()))
    want = np.bincount(ref, minlength=5)[1:] / len(ref)
    hist = np.bincount(counts, minlength=5)[1:] / len(counts)
    assert np.all(np.abs(hist - want) < 4 * np.sqrt(want * (1 - want) / len(counts)) + 0.01), (hist, want)


def test_spread_units_do_not_overlap_and_stay_on_map():
    spec, s, out, key = _draw("protoss_20_vs_20", B=256)
    pos, kind = out["pos"], out["kind"]
    assert (pos >= 0).all() and (pos < 32).all()
    radius = torch.tensor([sc2_envs.units.UNITS[k].radius for k in spec.kinds])[kind]
    allies = pos[out["surrounded"], :20]
    r = radius[out["surrounded"], :20]
    d = torch.cdist(allies, allies) + torch.eye(20) * 100
    assert (d >= (r[:, :, None] + r[:, None, :]) - 1e-4).all()


def test_determinism_and_batch_invariance():
    a = make_batched("zerg_10_vs_11", num_envs=4, seed=7)
    b = make_batched("zerg_10_vs_11", num_envs=4, seed=7)
    c = make_batched("zerg_10_vs_11", num_envs=2, seed=7)
    oa, ob, oc = a.reset(), b.reset(), c.reset()
    assert torch.equal(oa["obs"], ob["obs"]) and torch.equal(oa["unit_kind"], ob["unit_kind"])
    assert torch.equal(oa["obs"][:2], oc["obs"]) and torch.equal(a.st.pos[:2], c.st.pos)
    g = torch.Generator().manual_seed(0)
    for _ in range(40):
        av = oa["avail_actions"]
        act = torch.multinomial(av.reshape(-1, av.shape[-1]).float(), 1, generator=g).reshape(av.shape[:2])
        oa, ob = a.step(act), b.step(act)
        for k in ("obs", "state", "reward", "unit_kind", "avail_actions", "terminated"):
            assert torch.equal(oa[k], ob[k]), k
    # reset(seed) after other episodes replays episode 1
    first = make_batched("zerg_10_vs_11", num_envs=4, seed=7).reset()
    again = a.reset(seed=7)
    assert torch.equal(first["obs"], again["obs"]) and torch.equal(first["unit_kind"], again["unit_kind"])


def test_rosters_vary_per_env_and_per_reset_with_autoreset():
    sim = make_batched("protoss_5_vs_5", num_envs=16, seed=3)
    out = sim.reset()
    assert len({tuple(k) for k in out["unit_kind"].tolist()}) > 1  # a batch holds different compositions
    seen = {tuple(out["unit_kind"][0].tolist())}
    max_r = sim.st.max_reward.clone()
    g = torch.Generator().manual_seed(1)
    resets = 0
    for _ in range(150):
        av = out["avail_actions"]
        act = torch.multinomial(av.reshape(-1, av.shape[-1]).float(), 1, generator=g).reshape(av.shape[:2])
        out = sim.step(act)
        done = out["terminated"] | out["truncated"]
        resets += int(done.sum())
        seen.add(tuple(out["unit_kind"][0].tolist()))
        # the observation after an auto-reset carries the new roster's own type one-hot
        own = out["obs"][..., -3:]
        alive = out["avail_actions"][..., 0] == 0
        want = torch.nn.functional.one_hot(out["unit_kind"], 3).float()
        assert torch.equal(own[alive], want[alive])
        assert (out["reward"] >= 0).all()
    assert resets > 16 and len(seen) > 1
    assert torch.equal(sim.st.max_reward, max_r)  # SMACv2 fixes max_reward on the first episode
    feat = sim.features
    first = make_batched("protoss_5_vs_5", num_envs=16, seed=3)
    first.reset()
    torch.testing.assert_close(max_r, feat.max_reward_of(first.st.unit_kind))


def test_pin_scenario_and_set_units():
    sim = make_batched("terran_5_vs_5", num_envs=3, seed=0)
    allies = ["marine", "marine", "marauder", "medivac", "marine"]
    enemies = ["marauder"] * 5
    ap = [[4.0 + i, 10.0] for i in range(5)]
    ep = [[20.0 + i, 10.0] for i in range(5)]
    sim.pin_scenario(allies, enemies, ap, ep, env_index=1)
    sim.reset()
    assert sim.unit_types(1) == (allies, enemies)
    assert sim.st.pos[1, :5].tolist() == ap and sim.st.pos[1, 5:].tolist() == ep
    for _ in range(3):  # stays pinned at later resets
        sim.reset()
        assert sim.unit_types(1) == (allies, enemies)
    sim.unpin_scenario(1)
    kinds = {tuple(sim.reset()["unit_kind"][1].tolist()) for _ in range(6)}
    assert len(kinds) > 1
    # set_units may choose a slot's type
    sim.set_units(0, [P(10, 10, unit="medivac")] + [P(11 + i, 10) for i in range(4)], [P(20 + i, 10) for i in range(5)])
    assert sim.unit_types(0)[0][0] == "medivac"
    assert float(sim.st.health[0, 0]) == sc2_envs.units.UNITS["medivac"].health


def test_only_medivac_left_wins_and_medivac_heals_allies():
    sim = make_batched("terran_5_vs_5", num_envs=1, seed=0)
    sim.reset()
    sim.set_units(
        0,
        [P(10, 10, unit="marine"), P(10.5, 10, unit="medivac"), None, None, None],
        [P(11, 10, unit="medivac"), None, None, None, None],
    )
    won, lost, draw = sim.features.game_result(sim.st)
    assert bool(won[0]) and not bool(lost[0])
    avail = sim.features.avail_actions(sim.st)
    nna = sim.features.n_actions_no_attack
    assert avail[0, 1, nna + 0].item() and not avail[0, 1, nna + 1].item()  # heal the marine, not itself
    sim.set_units(0, [P(10, 10, unit="medivac"), None, None, None, None], [P(11, 10, unit="marine")] + [None] * 4)
    won, lost, _ = sim.features.game_result(sim.st)
    assert bool(lost[0]) and not bool(won[0])


def test_enemies_attack_the_closest_ally():
    sim = make_batched("protoss_5_vs_5", num_envs=1, seed=0)
    sim.reset()
    al = [
        P(4, 4, unit="stalker"),
        P(28, 28, unit="stalker"),
        P(4, 28, unit="stalker"),
        P(28, 4, unit="stalker"),
        P(16, 30, unit="stalker"),
    ]
    en = [
        P(6, 6, unit="zealot"),
        P(26, 26, unit="zealot"),
        P(6, 26, unit="zealot"),
        P(26, 6, unit="zealot"),
        P(16, 27, unit="zealot"),
    ]
    out = sim.set_units(0, al, en)
    sim.step(torch.ones(1, 5, dtype=torch.int64))  # every agent stops
    assert sim.st.order_target[0, 5:].tolist() == [0, 1, 2, 3, 4]
    assert out["obs"].shape == (1, 5, sim.obs_size)


def test_conic_fov_actions():
    sim = make_batched("protoss_5_vs_5", num_envs=1, seed=0, conic_fov=True)
    out = sim.reset()
    assert sim.n_actions == 6 + 12 + 5 and out["avail_actions"][0, :, 6:18].all()
    act = torch.full((1, 5), 9)  # look action 3: direction (0, 1)
    sim.step(act)
    torch.testing.assert_close(sim.st.fov_dir[0], torch.tensor([[0.0, 1.0]] * 5), atol=1e-6, rtol=0)


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: make_batched("protoss_5_vs_6"), "SMACv2 scenarios: protoss_10_vs_10"),
        (lambda: v2.get_scenario("terran_3_vs_3"), "expected one of: protoss_10_vs_10"),
        (lambda: make_batched("3m", scenario={"allies": ["marine"] * 3, "enemies": ["marine"] * 3}), "SMAC v1 map"),
        (lambda: make_batched("protoss_5_vs_5", conic_fov=1), "conic_fov must be a bool"),
        (lambda: make_batched("protoss_5_vs_5", prob_obs_enemy=0.5), "prob_obs_enemy"),
    ],
)
def test_bad_scenario_input(call, match):
    with pytest.raises((ValueError, TypeError), match=match):
        call()


def test_bad_pinned_compositions_name_the_problem():
    sim = make_batched("zerg_5_vs_5", num_envs=2, seed=0)
    ok = ["zergling"] * 5
    with pytest.raises(ValueError, match=r"allies must have 5 unit types .* got 4"):
        sim.pin_scenario(ok[:4], ok)
    with pytest.raises(ValueError, match=r"enemies\[2\] = 'marine' is not a zerg unit"):
        sim.pin_scenario(ok, ["zergling", "zergling", "marine", "zergling", "zergling"])
    with pytest.raises(ValueError, match=r"ally position 3 = \(33.0, 1.0\) is off the 32x32 map"):
        sim.pin_scenario(ok, ok, [[1, 1]] * 3 + [[33, 1], [1, 1]], [[20, 1]] * 5)
    with pytest.raises(ValueError, match="both ally_positions and enemy_positions"):
        sim.pin_scenario(ok, ok, [[1, 1]] * 5)
    with pytest.raises(ValueError, match=r"allies\[0\]: unit 'stalker' is not a zerg unit"):
        sim.set_units(0, [P(1, 1, unit="stalker")] + [P(2 + i, 1) for i in range(4)], [P(20 + i, 1) for i in range(5)])
    assert not sim._pin_mask.any()  # nothing pinned by the failed calls
    v1 = make_batched("3m", num_envs=1)
    with pytest.raises(ValueError, match="fixed roster"):
        v1.set_units(0, [P(10, 10, unit="marauder"), P(11, 10), P(12, 10)], [P(20, 10), P(21, 10), P(22, 10)])
    with pytest.raises(ValueError, match="SMAC v1 map"):
        v1.pin_scenario(["marine"] * 3, ["marine"] * 3)


def test_pettingzoo_parallel_api_and_stable_agents():
    from pettingzoo.test import parallel_api_test

    env = sc2_envs.parallel_env("protoss_5_vs_5", seed=0)
    parallel_api_test(env, num_cycles=200)
    types = set()
    for s in range(50):
        _, infos = env.reset(seed=s)
        assert env.possible_agents == [f"agent_{i}" for i in range(5)] == env.agents
        roster = env.sim.unit_types(0)[0]
        assert [env.agent_unit_types[f"agent_{i}"] for i in range(5)] == roster
        types.add(tuple(roster))
    assert len(types) > 5
    with pytest.raises(ValueError, match="agent_names='unit_type' is not available"):
        sc2_envs.parallel_env("protoss_5_vs_5", agent_names="unit_type")


def test_gymnasium_ids_and_checker():
    import gymnasium
    from gymnasium.utils.env_checker import check_env

    for name in NAMES:
        assert f"sc2_envs/{name}-v0" in gymnasium.registry
    env = gymnasium.make("sc2_envs/terran_10_vs_11-v0", lenient_actions=True)
    check_env(env.unwrapped)
    obs, info = env.reset(seed=0)
    assert obs.shape == (10 * 191 - 10 * 29,) or obs.shape == (10 * env.unwrapped.sim.obs_size,)
    assert info["unit_kinds"].shape == (10,) and info["enemy_unit_kinds"].shape == (11,)


@pytest.mark.parametrize("name", ["protoss_5_vs_5", "zerg_10_vs_11"])
def test_pettingzoo_unit_kind_indexes_kinds_and_the_own_type_one_hot(name):
    """``infos[agent]["unit_kind"]`` is an int: ``get_env_info()["kinds"][k]`` is the agent's type name
    (``env.agent_unit_types``) and ``k`` the position of the 1 in its own ``type_*`` features, at reset and
    on every step of the episode (the roster is drawn at reset)."""
    env = sc2_envs.parallel_env(name, dead_agents="absorbing")
    info = env.get_env_info()
    kinds, layout = info["kinds"], info["obs_layout"]
    own = [i for i, f in enumerate(layout["own_feature_names"]) if f.startswith("type_")]
    own_start = env.sim.obs_size - layout["own_feats"] - layout["timestep_feats"]
    rng_ = np.random.default_rng(0)
    seen = set()
    for seed in range(3):
        obs, infos = env.reset(seed=seed)
        for _ in range(5):
            for a in env.agents:
                k = infos[a]["unit_kind"]
                assert type(k) is int and kinds[k] == env.agent_unit_types[a]
                if infos[a]["agent_alive"]:
                    assert obs[a]["observation"][own_start + np.array(own)].tolist() == np.eye(len(kinds))[k].tolist()
                seen.add(k)
            actions = {a: int(rng_.choice(np.flatnonzero(obs[a]["action_mask"]))) for a in env.agents}
            obs, _rew, _term, _trunc, infos = env.step(actions)
    assert len(seen) >= 2


def test_gymnasium_unit_kinds_name_the_rosters_through_kinds():
    import gymnasium

    env = gymnasium.make("sc2_envs/zerg_10_vs_11-v0").unwrapped
    kinds = env.get_env_info()["kinds"]
    with pytest.raises(RuntimeError, match="before reset"):
        env.unit_types()
    for seed in range(3):
        _, info = env.reset(seed=seed)
        allies, enemies = env.unit_types()
        assert info["unit_kinds"].dtype == info["enemy_unit_kinds"].dtype == np.int64
        assert [kinds[k] for k in info["unit_kinds"]] == allies and [kinds[k] for k in info["enemy_unit_kinds"]] == enemies
        _, _, _, _, step_info = env.step(np.zeros(10, np.int64) + 1)  # stop: available to every living unit
        assert np.array_equal(step_info["unit_kinds"], info["unit_kinds"])
    assert env.unit_types() == env.sim.unit_types(0)
    v1 = gymnasium.make("sc2_envs/2s3z-v0").unwrapped
    assert v1.unit_types() == (["stalker"] * 2 + ["zealot"] * 3,) * 2 and "unit_kinds" not in v1.reset(seed=0)[1]


def test_pettingzoos_aec_seed_and_state_checkers_pass():
    from pettingzoo.test import api_test, parallel_seed_test, seed_test, state_test

    with warnings.catch_warnings():  # api_test's notes on PettingZoo's own Dict-with-mask observations
        warnings.simplefilter("ignore")
        api_test(sc2_envs.env("terran_5_vs_5"), num_cycles=300)
    seed_test(lambda: sc2_envs.env("terran_5_vs_5"), num_cycles=100)
    # these two sample without the mask, hence lenient actions
    parallel_seed_test(lambda: sc2_envs.parallel_env("terran_5_vs_5", lenient_actions=True))
    state_test(
        sc2_envs.env("terran_5_vs_5", lenient_actions=True), sc2_envs.parallel_env("terran_5_vs_5", lenient_actions=True)
    )


def test_capability_wrapper_config_and_errors():
    from sc2_envs.adapters import StarCraftCapabilityEnvWrapper

    cap = {
        "n_units": 10,
        "n_enemies": 11,
        "team_gen": {
            "dist_type": "weighted_teams",
            "unit_types": ["stalker", "zealot", "colossus"],
            "weights": [0.45, 0.45, 0.1],
            "observe": True,
        },
        "start_positions": {"dist_type": "surrounded_and_reflect", "p": 0.5, "map_x": 32, "map_y": 32},
    }
    env = StarCraftCapabilityEnvWrapper(
        map_name="10gen_protoss", capability_config=cap, use_unit_ranges=True, obs_own_pos=True, seed=0
    )
    info = env.get_env_info()
    assert (info["obs_shape"], info["state_shape"], info["n_actions"]) == (191, 327, 17)
    assert info["agent_features"][-3:] == ["type_0", "type_1", "type_2"]
    obs, state = env.reset()
    assert len(obs) == 10 and state.shape == (327,) and env.get_capabilities().shape == (30,)
    frame = env.render("rgb_array")  # the same top-down renderer as the v1 StarCraft2Env
    assert frame.ndim == 3 and frame.shape[2] == 3 and frame.dtype == np.uint8 and frame.std() > 0
    with pytest.raises(ValueError, match="rgb_array"):
        env.render("rgb")
    with pytest.raises(NotImplementedError, match="render"):
        env.save_replay()
    env.close()
    env.close()
    bad = dict(cap, team_gen=dict(cap["team_gen"], weights=[0.2, 0.2, 0.6]))
    with pytest.raises(ValueError, match="weights"):
        StarCraftCapabilityEnvWrapper(map_name="10gen_protoss", capability_config=bad)
    with pytest.raises(ValueError, match="not implemented"):
        StarCraftCapabilityEnvWrapper(map_name="10gen_protoss", capability_config=dict(cap, attack={"observe": True}))
    with pytest.raises(ValueError, match="procedural maps"):
        StarCraftCapabilityEnvWrapper(map_name="3m", capability_config=cap)


def test_capability_wrapper_refuses_what_it_would_otherwise_ignore():
    """Found by trying: each of these was ignored, coerced or crashed with an AttributeError."""
    from sc2_envs.adapters import StarCraftCapabilityEnvWrapper

    team = {"dist_type": "weighted_teams", "unit_types": ["stalker", "zealot", "colossus"], "weights": [0.45, 0.45, 0.1]}
    pos = {"dist_type": "surrounded_and_reflect", "p": 0.5, "map_x": 32, "map_y": 32}
    cap = {"n_units": 5, "n_enemies": 5, "team_gen": team, "start_positions": pos}

    def make(config=cap, **kw):
        return StarCraftCapabilityEnvWrapper(map_name="10gen_protoss", capability_config=config, **kw)

    for config, error, words in (
        (dict(cap, start_positions=dict(pos, n_enemies=7)), ValueError, r"\['start_positions'\]\['n_enemies'\] = 7"),
        (dict(cap, team_gen=dict(team, wieghts=[1])), ValueError, r"\['team_gen'\] keys \['wieghts'\] are unknown"),
        (dict(cap, team_gen="weighted_teams"), TypeError, r"\['team_gen'\] must be a dict, got 'weighted_teams'"),
        (dict(cap, start_positions=5), TypeError, r"\['start_positions'\] must be a dict, got 5"),
        (dict(cap, start_positions=dict(pos, p=True)), ValueError, "p must be a number in"),
    ):
        with pytest.raises(error, match=words):
            make(config)
    for kw, words in (
        ({"conic_fov": "no"}, "conic_fov must be a bool, got 'no'"),
        ({"obs_own_pos": 0}, "obs_own_pos must be a bool, got 0"),
        ({"continuing_episode": "no"}, "continuing_episode must be a bool"),
        ({"num_fov_actions": 12.0}, "num_fov_actions must be an int, got 12.0"),
        ({"prob_obs_enemy": True}, "prob_obs_enemy must be a probability"),
    ):
        with pytest.raises(TypeError, match=words):
            make(**kw)
    env = make(dict(cap, team_gen=dict(team, n_units=5, env_key="team_gen")), seed=0)  # SMACv2's own injected keys
    pinned = {"team_gen": {"ally_team": ["zealot"] * 5, "enemy_team": ["stalker"] * 5, "id": 0}}
    env.reset(pinned)
    assert env.get_capabilities().reshape(5, 3).argmax(1).tolist() == [1] * 5
    for bad, error, words in (
        ([1, 2], TypeError, "episode_config must be a dict"),
        (dict(pinned, ally_start_position={"item": [[1, 1]] * 5}), ValueError, r"keys \['ally_start_position'\] are unknown"),
        ({"team_gen": {"ally_teams": ["zealot"] * 5}}, ValueError, "expected a dict with 'ally_team' and 'enemy_team'"),
        (dict(pinned, ally_start_positions=[[1, 1]] * 5), ValueError, r"expected \{'item'"),
    ):
        with pytest.raises(error, match=words):
            env.reset(bad)


def test_capability_config_takes_numpy_scalars_for_p():
    # found by a tester: p=np.float32(0.5) (a config loaded with NumPy) was refused with
    # "p must be a number in [0, 1], got np.float32(0.5)"
    from sc2_envs.adapters.smacv2_compat import scenario_from_capability_config

    team = {"dist_type": "weighted_teams", "unit_types": ["stalker", "zealot", "colossus"], "weights": [0.45, 0.45, 0.1]}
    pos = {"dist_type": "surrounded_and_reflect", "map_x": 32, "map_y": 32}
    for p, want in ((np.float32(0.25), 0.25), (np.float64(0.5), 0.5), (np.int64(1), 1.0)):
        cap = {"n_units": 5, "n_enemies": 5, "team_gen": team, "start_positions": dict(pos, p=p)}
        assert scenario_from_capability_config("10gen_protoss", cap).p_reflect == want
    for p in (np.bool_(True), float("nan"), np.float32(1.5), "0.5"):
        cap = {"n_units": 5, "n_enemies": 5, "team_gen": team, "start_positions": dict(pos, p=p)}
        with pytest.raises(ValueError, match="p must be a number in"):
            scenario_from_capability_config("10gen_protoss", cap)


@pytest.mark.parametrize(
    "change, error, words",
    [
        ({"weights": [0.5, 0.5]}, ValueError, r"weights \[0\.5, 0\.5\]: expected 3 numbers, one per unit type"),
        ({"weights": None}, ValueError, "weights None: expected 3 numbers"),
        ({"weights": ["a", "b", "c"]}, ValueError, "expected 3 numbers"),
        ({"unit_types": None}, ValueError, "unit_types None: expected a list of unit type names"),
        (  # names of another race's config (found by a tester: "expected a list of unit type names" said otherwise)
            {"unit_types": ["marine", "marauder", "medivac"]},
            ValueError,
            r"unit_types \['marine', 'marauder', 'medivac'\]: expected \['stalker', 'zealot', 'colossus'\] in that order",
        ),
        ({"exception_unit_types": None}, ValueError, "exception_unit_types None: expected a list of unit type names"),
        ({"exception_unit_types": [1, "x"]}, ValueError, r"exception_unit_types \[1, 'x'\]"),
        ({"observe": 1}, TypeError, "team_gen observe must be a bool, got 1"),
        ({"observe": "yes"}, TypeError, "got 'yes'"),
        ({"observe": np.False_}, ValueError, "observe=False"),
    ],
)
def test_malformed_team_gen_is_named(change, error, words):
    from sc2_envs.adapters.smacv2_compat import scenario_from_capability_config

    team = {"dist_type": "weighted_teams", "unit_types": ["stalker", "zealot", "colossus"], "weights": [0.45, 0.45, 0.1]}
    pos = {"dist_type": "surrounded_and_reflect", "p": 0.5}
    cap = {"n_units": 5, "n_enemies": 5, "team_gen": dict(team, **change), "start_positions": pos}
    with pytest.raises(error, match=words):
        scenario_from_capability_config("10gen_protoss", cap)
    good = dict(team, observe=np.True_, weights=np.array(team["weights"]), unit_types=tuple(team["unit_types"]))
    assert scenario_from_capability_config("10gen_protoss", dict(cap, team_gen=good)).n_agents == 5


def _capability_env(**kw):
    from sc2_envs.adapters import StarCraftCapabilityEnvWrapper

    team = {"dist_type": "weighted_teams", "unit_types": ["stalker", "zealot", "colossus"], "weights": [0.45, 0.45, 0.1]}
    pos = {"dist_type": "surrounded_and_reflect", "p": 0.5, "map_x": 32, "map_y": 32}
    cap = {"n_units": 5, "n_enemies": 5, "team_gen": team, "start_positions": pos}
    return StarCraftCapabilityEnvWrapper(map_name="10gen_protoss", capability_config=cap, **kw)


def test_capability_wrapper_resets_before_the_first_terminated_episode_continue_the_seeded_stream():
    env = _capability_env(seed=0)
    _, s1 = env.reset()
    env.step([1] * env.n_agents)  # abandoned: no episode has terminated yet
    _, s2 = env.reset()
    env.full_restart()
    s3 = env.get_state()
    assert not np.array_equal(s1, s2) and not np.array_equal(s2, s3)
    fresh = _capability_env(seed=0)
    assert np.array_equal(fresh.reset()[1], s1) and np.array_equal(fresh.reset()[1], s2)


def test_capability_wrapper_takes_actions_as_starcraft2env_does():
    from sc2_envs.adapters import StarCraft2Env

    env, v1 = _capability_env(seed=0), StarCraft2Env("3m", seed=0)
    env.reset()
    v1.reset()
    for bad, words in (
        (np.array([1.5] * 5), r"actions must be integers \(or floats holding whole numbers\)"),
        ([True] * 5, "actions must be integers"),
        (np.array([np.inf] + [1.0] * 4), r"agent 0: action inf is out of range; expected an int in \[0, 11\)"),
    ):
        with pytest.raises(ValueError, match=words):
            env.step(bad)
        with pytest.raises(ValueError, match=words.replace("11", "9")):
            v1.step(bad[:3])
    # SMAC and SMACv2 convert with int(a): whole-number floats (float buffers, torch float tensors) are their ints
    env.step(np.ones((5, 1), np.float32))
    env.step(torch.ones(5, dtype=torch.float64))
    v1.step(torch.ones(3, 1))
    assert env.last_action[:, 1].all() and v1.last_action[:, 1].all()


def test_capability_wrapper_refuses_obs_starcraft_false_and_checks_smac_keywords():
    assert _capability_env(obs_starcraft=True).get_obs_size() == _capability_env().get_obs_size()
    with pytest.raises(ValueError, match="obs_starcraft=False is not supported"):  # was silently dropped
        _capability_env(obs_starcraft=False)
    with pytest.raises(TypeError, match="obs_starcraft must be a bool, got 'no'"):
        _capability_env(obs_starcraft="no")
    with pytest.raises(TypeError, match="replay_dir must be a str or os.PathLike, got 5"):
        _capability_env(replay_dir=5)
    with pytest.warns(UserWarning, match="window_size_x=800 has no effect on the embedded simulator"):
        _capability_env(window_size_x=800)


def test_capability_wrapper_last_action_is_the_applied_action_in_lenient_mode():
    env = _capability_env(seed=0, lenient_actions=True)
    env.reset()
    _, _, info = env.step([0, 1, 1, 1, 1])  # no-op is unavailable to a living unit: the simulator runs stop
    assert info["invalid_actions"].tolist() == [True, False, False, False, False]
    assert env.last_action.argmax(1).tolist() == [1, 1, 1, 1, 1]  # was one-hot at 0 for agent 0
    with pytest.raises(ValueError, match=r"expected 5 actions \(one per agent\).*ragged"):
        env.step([1, [1], 1, 1, 1])


def test_class_policy_routes_each_agent_by_its_current_type():
    from models import build_models

    sim = make_batched("terran_5_vs_5", num_envs=8, seed=4)
    out = sim.reset()
    policy, critic = build_models(sim.get_env_info(), "gnn", hidden=16, device="cpu")
    assert sorted(policy.classes) == sorted(sim.scenario.kinds)
    obs, avail, kind = out["obs"], out["avail_actions"], out["unit_kind"]
    with torch.no_grad():
        logits = policy.logits(obs)
        for c in sim.scenario.kinds:
            mine = kind == sim.scenario.kinds.index(c)
            assert torch.equal(policy.class_mask(c, obs).bool(), mine)
            torch.testing.assert_close(logits[mine], policy.class_logits(c, obs)[mine])
        actions, logp = policy.act(obs, avail)
        assert torch.gather(avail, 2, actions.unsqueeze(-1)).all()
        assert critic(out["state"]).shape == (8,)
    out = sim.step(actions)  # still routes after a step (and after auto-resets, by the new one-hots)
    assert policy.act(out["obs"], out["avail_actions"])[0].shape == (8, 5)


@pytest.mark.parametrize("n, e", [(5, 5), (6, 5), (5, 6), (1, 8), (8, 1)])
def test_custom_team_sizes_sample_and_step(n, e):
    """JaxMARL PR #140's failure: scenario generators with more allies than enemies (and 1-unit teams)."""
    for race in v2.RACES:
        spec = v2.ScenarioSpec(f"{race}_{n}_vs_{e}", race, n, e)
        sim = make_batched(spec, num_envs=32, seed=1)
        out = sim.reset()
        want = 6 + (n if race == "terran" and n > e else e)  # SMACv2's n_actions rule for terran_gen
        assert sim.n_actions == want and out["obs"].shape == (32, n, sim.obs_size)
        for _ in range(3):
            act = torch.multinomial(out["avail_actions"].flatten(0, 1).float(), 1).view(32, n)
            out = sim.step(act)
        assert (sim.st.pos >= 0).all() and (sim.st.pos < 32).all()


def test_scenario_option_pins_at_construction_and_v1_adapter_points_to_v2():
    sim = make_batched("protoss_5_vs_5", num_envs=2, seed=0, scenario={"allies": ["colossus"] * 5, "enemies": ["zealot"] * 5})
    sim.reset()
    assert sim.unit_types(1) == (["colossus"] * 5, ["zealot"] * 5)
    from sc2_envs.adapters import StarCraft2Env

    with pytest.raises(ValueError, match="StarCraftCapabilityEnvWrapper"):
        StarCraft2Env(map_name="protoss_5_vs_5")


def test_snapshot_restores_rosters_and_old_v1_snapshots_load():
    s = make_batched("zerg_5_vs_5", num_envs=2, seed=0)
    s.reset()
    t = make_batched("zerg_5_vs_5", num_envs=2, seed=5)
    t.reset()
    t.load_state_dict(s.state_dict())
    assert t.unit_types() == s.unit_types()
    act = torch.ones(2, 5, dtype=torch.int64)
    assert torch.equal(s.step(act)["obs"], t.step(act)["obs"])
    a = make_batched("3m", num_envs=2, seed=0)
    a.reset()
    sd = a.state_dict()
    for n in ("unit_kind", "fov_dir", "enemy_tag", "max_reward"):  # a snapshot from before SMACv2
        del sd["world"][n]
    b = make_batched("3m", num_envs=2, seed=1)
    b.load_state_dict(sd)
    act = torch.ones(2, 3, dtype=torch.int64)
    assert torch.equal(a.step(act)["obs"], b.step(act)["obs"])


def test_render_rgb_array():
    env = sc2_envs.parallel_env("protoss_5_vs_5", render_mode="rgb_array")
    env.reset(seed=0)
    frame = env.render()
    assert frame.dtype == np.uint8 and frame.ndim == 3 and frame.shape[2] == 3


def test_capability_wrapper_render_before_reset_raises_like_get_state():
    env = _capability_env(seed=0)
    with pytest.raises(RuntimeError, match=r"render\(\) called before reset\(\); call reset\(\) first"):
        env.render("rgb_array")
    env.reset()
    assert env.render("rgb_array").dtype == np.uint8


@pytest.mark.parametrize("kernel", ["torch", "numba"])
def test_state_dict_keeps_the_pinned_compositions_of_later_resets(kernel):
    sim = make_batched("zerg_10_vs_11", num_envs=2, seed=0, kernel=kernel)
    sim.reset()
    sim.pin_scenario(["baneling"] * 10, ["zergling"] * 11)
    snap = sim.state_dict()
    other = make_batched("zerg_10_vs_11", num_envs=2, seed=0, kernel=kernel)
    other.load_state_dict(snap)
    a, b = sim.reset(), other.reset()
    assert torch.equal(a["obs"], b["obs"]) and sim.unit_types(0) == other.unit_types(0)
    assert sim.unit_types(0)[0] == ["baneling"] * 10
    bad = sim.state_dict()
    bad["world"]["health"] = bad["world"]["health"].double()
    with pytest.raises(ValueError, match=r"'health' is torch.float64"):
        other.load_state_dict(bad)
