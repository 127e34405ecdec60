"""Contract tests of the batched simulator: sizes, seeding, batching, episode ends, bad input."""

import numpy as np
import pytest
import torch

from sc2_envs import list_maps, make_batched
from sc2_envs.maps import get_map
from sc2_envs.policies import HeuristicPolicy, random_actions


def per_env_random(avail, gens):
    """Masked random actions where env b draws only from its own generator (batch-invariant)."""
    return torch.stack([random_actions(avail[b], gens[b]) for b in range(avail.shape[0])])


@pytest.mark.parametrize("map_name", list_maps())
def test_every_map_runs_with_smac_sizes(map_name):
    spec = get_map(map_name)
    e = make_batched(map_name, num_envs=2, seed=0)
    o = e.reset()
    info = e.get_env_info()
    assert o["obs"].shape == (2, spec.n_agents, info["obs_shape"])
    assert o["state"].shape == (2, info["state_shape"])
    assert o["avail_actions"].shape == (2, spec.n_agents, spec.n_actions)
    assert o["obs"].dtype == torch.float32 and o["avail_actions"].dtype == torch.bool
    g = torch.Generator().manual_seed(0)
    for _ in range(30):
        o = e.step(random_actions(o["avail_actions"], g))
        assert torch.isfinite(o["obs"]).all() and torch.isfinite(o["state"]).all() and torch.isfinite(o["reward"]).all()
        assert o["avail_actions"].any(-1).all()


def test_same_seed_same_trajectory_over_200_steps():
    def rollout():
        e = make_batched("2s3z", num_envs=3, seed=123)
        o = e.reset()
        g = torch.Generator().manual_seed(7)
        trace = []
        for _ in range(200):
            o = e.step(random_actions(o["avail_actions"], g))
            trace.append(torch.cat([o["obs"].flatten(), o["state"].flatten(), o["reward"]]))
        return torch.stack(trace)

    a, b = rollout(), rollout()
    assert torch.equal(a, b)


def test_different_seeds_differ():
    e1, e2 = make_batched("3m", 1, seed=1), make_batched("3m", 1, seed=2)
    assert not torch.equal(e1.reset()["state"], e2.reset()["state"])  # spawn jitter differs


def test_batched_envs_equal_the_same_envs_stepped_alone():
    B, seed = 4, 50
    batch = make_batched("3s5z", num_envs=B, seed=seed)
    # env b of a batch seeded with s is the 1-env batch given child b of SeedSequence(s)
    singles = [make_batched("3s5z", num_envs=1, seed=[np.random.SeedSequence(seed, spawn_key=(b,))]) for b in range(B)]
    ob = batch.reset()
    os_ = [s.reset() for s in singles]
    gens_b = [torch.Generator().manual_seed(b) for b in range(B)]
    gens_s = [torch.Generator().manual_seed(b) for b in range(B)]
    for _ in range(150):  # crosses episode ends (auto-reset)
        ab = per_env_random(ob["avail_actions"], gens_b)
        ob = batch.step(ab)
        for b in range(B):
            a = random_actions(os_[b]["avail_actions"][0], gens_s[b]).unsqueeze(0)
            os_[b] = singles[b].step(a)
            for k in ("obs", "state", "avail_actions", "reward", "terminated", "truncated", "final_obs"):
                assert torch.equal(ob[k][b], os_[b][k][0]), k


def test_timeout_is_truncation_with_episode_limit_flag():
    from sc2_envs.sim import UnitPlacement as P

    e = make_batched("3m", num_envs=1, seed=0, autoreset=False)
    e.reset()
    # the agents hide in a corner, out of reach of the enemies' attack-move to (9, 16)
    o = e.set_units(0, [P(1, 8), P(1, 9.5), P(2.5, 8)], [P(23, 15), P(23, 16), P(23, 17)])
    for t in range(60):
        o = e.step(torch.where(o["avail_actions"][..., 1], 1, 0))  # everyone stops: nobody fights
        if t < 59:
            assert not o["truncated"].any() and not o["terminated"].any()
    assert o["truncated"].all() and not o["terminated"].any() and o["episode_limit"].all()
    with pytest.raises(RuntimeError, match="reset"):
        e.step(torch.zeros(1, 3, dtype=torch.int64))


def test_dead_agent_gets_zero_obs_and_noop_only():
    e = make_batched("3m", num_envs=1, seed=0, autoreset=False)
    e.reset()
    from sc2_envs.sim import UnitPlacement as P

    o = e.set_units(0, [P(10, 16), None, P(10, 18)], [P(20, 16), P(20, 17), P(20, 18)])
    assert torch.equal(o["obs"][0, 1], torch.zeros_like(o["obs"][0, 1]))
    assert o["avail_actions"][0, 1].tolist() == [True] + [False] * 8


def test_autoreset_returns_final_observation_and_new_episode():
    e = make_batched("3m", num_envs=2, seed=0)
    o = e.reset()
    h = HeuristicPolicy(e)
    for _ in range(200):
        o = e.step(h(o["avail_actions"]))
        done = o["terminated"] | o["truncated"]
        if done.any():
            b = int(done.nonzero()[0])
            assert int(e.st.episode_steps[b]) == 0
            assert not torch.equal(o["final_state"][b], o["state"][b])
            return
    pytest.fail("no episode ended in 200 steps")


def test_heuristic_beats_random_on_3m():
    def win_rate(policy_name):
        e = make_batched("3m", num_envs=64, seed=0)
        o = e.reset()
        h, g = HeuristicPolicy(e), torch.Generator().manual_seed(0)
        for _ in range(62):
            a = h(o["avail_actions"]) if policy_name == "heuristic" else random_actions(o["avail_actions"], g)
            o = e.step(a)
        return e.get_stats()["win_rate"]

    assert win_rate("heuristic") > win_rate("random") + 0.2


def test_unknown_map_lists_valid_names():
    with pytest.raises(ValueError, match="2s3z"):
        make_batched("2s4z")


def test_unknown_option_is_an_error():
    with pytest.raises(ValueError, match="obs_last_action"):
        make_batched("3m", obs_last_actoin=True)


def test_unavailable_action_error_names_env_agent_action_and_mask():
    e = make_batched("3m", num_envs=2, seed=0)
    o = e.reset()
    a = torch.ones(2, 3, dtype=torch.int64)
    a[1, 2] = 6  # attack enemy 0: out of range at the start
    assert not o["avail_actions"][1, 2, 6]
    with pytest.raises(ValueError, match=r"env 1, agent 2 \(marine\): action 6 is unavailable; avail_actions=\["):
        e.step(a)


def test_lenient_mode_replaces_and_flags_unavailable_actions():
    e = make_batched("3m", num_envs=1, seed=0, lenient_actions=True)
    e.reset()
    o = e.step(torch.tensor([[6, 1, 0]]))  # attack out of range, stop, no-op while alive
    assert o["invalid_actions"].tolist() == [[True, False, True]]


@pytest.mark.parametrize(
    "bad, err",
    [
        (torch.ones(1, 2, dtype=torch.int64), ValueError),  # wrong shape
        (torch.ones(1, 3, dtype=torch.float32), TypeError),  # wrong dtype
        (torch.full((1, 3), 99), ValueError),  # out of range
    ],
)
def test_bad_action_shape_dtype_range(bad, err):
    e = make_batched("3m", num_envs=1, seed=0)
    e.reset()
    with pytest.raises(err):
        e.step(bad)


def test_step_before_reset_is_an_error():
    with pytest.raises(RuntimeError, match="reset"):
        make_batched("3m").step(torch.ones(1, 3, dtype=torch.int64))


def test_seed_list_must_match_num_envs():
    with pytest.raises(ValueError, match="one per env"):
        make_batched("3m", num_envs=2).reset(seed=[1, 2, 3])


def test_caller_actions_are_not_modified():
    e = make_batched("3m", num_envs=4, seed=7)
    o = e.reset()
    h = HeuristicPolicy(e)
    for _ in range(80):
        a = h(o["avail_actions"])
        before = a.clone()
        o = e.step(a)
        assert torch.equal(a, before)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_matches_shapes_and_runs():
    e = make_batched("2s3z", num_envs=8, device="cuda", seed=0)
    o = e.reset()
    for _ in range(20):
        o = e.step(random_actions(o["avail_actions"]))
    assert o["obs"].device.type == "cuda"


def _scenario_env():
    e = make_batched("3m", num_envs=2, seed=0)
    e.reset()
    return e


@pytest.mark.parametrize(
    "placement, match",
    [
        (dict(x=float("nan"), y=10), "x must be a finite number"),
        (dict(x=10, y=float("inf")), "y must be a finite number"),
        (dict(x=-100, y=-100), "off the 32x32 map"),
        (dict(x=0.5, y=0.5), "cannot stand on"),
        (dict(x=10, y=10, health=1000), r"health must be in \[0, 45\]"),
        (dict(x=10, y=10, health=-5), r"health must be in \[0, 45\]"),
        (dict(x=10, y=10, shield=50), r"shield must be in \[0, 0\]"),
        (dict(x=10, y=10, cooldown=float("nan")), "cooldown must be a finite number"),
        (dict(x=10, y=10, cooldown=-10), "cooldown must be >= 0"),
    ],
)
def test_set_units_rejects_bad_placements_and_changes_nothing(placement, match):
    from sc2_envs.sim import UnitPlacement as P

    e = _scenario_env()
    before = e.st.clone()
    allies = [P(11, 10), P(12, 10), P(**placement)]
    with pytest.raises(ValueError, match=match):
        e.set_units(0, allies, [P(14, 10), P(15, 10), P(16, 10)])
    assert torch.equal(e.st.pos, before.pos) and torch.equal(e.st.health, before.health)


def test_set_units_rejects_bad_env_index_and_entries():
    from sc2_envs.sim import UnitPlacement as P

    e = _scenario_env()
    units = [P(11, 10), P(12, 10), P(13, 10)]
    with pytest.raises(TypeError, match="env_index"):
        e.set_units(1.5, units, units)
    with pytest.raises(TypeError, match=r"allies\[0\] \(marine\) must be a UnitPlacement"):
        e.set_units(0, [(10, 10)] + units[1:], units)


@pytest.mark.parametrize("map_name", ["3m", "protoss_5_vs_5"])
def test_set_units_on_an_ended_batch_checks_before_it_resets(map_name):
    """With a reset pending (start, or autoreset=False after an episode ended), a bad call changes nothing."""
    from sc2_envs.sim import UnitPlacement as P

    e = make_batched(map_name, num_envs=2, seed=0, autoreset=False)
    e.reset()
    e._needs_reset = True  # as after an episode end with autoreset=False
    before = e.state_dict()
    n, m = e.n_agents, e.n_enemies
    good = [P(10 + i, 10) for i in range(n)], [P(14 + i, 12) for i in range(m)]
    with pytest.raises(ValueError, match=r"health must be in \[0, "):
        e.set_units(0, good[0], [P(14, 12, health=-1)] + good[1][1:])
    with pytest.raises(ValueError, match=r"env_index must be in \[0, 2\), got 5"):
        e.set_units(5, *good)
    after = e.state_dict()
    assert after["needs_reset"] and after["seeded"] == before["seeded"]
    for k in before["world"]:
        assert torch.equal(before["world"][k], after["world"][k]), k
    assert e.set_units(0, *good)["obs"].shape == (2, n, e.obs_size)  # a good call still resets, then places


def test_ragged_actions_name_the_expected_shape():
    e = make_batched("3m", num_envs=2, seed=0)
    e.reset()
    with pytest.raises(ValueError, match=r"actions must be an integer tensor of shape \(2, 3\), got a ragged sequence"):
        e.step([[1, 1, 1], [1, 1]])


def test_load_state_dict_checks_type_options_and_finite_values():
    a = make_batched("3m", num_envs=2, seed=0)
    a.reset()
    with pytest.raises(TypeError, match="env snapshot must be a dict from SMACSim.state_dict\\(\\), got NoneType None"):
        a.load_state_dict(None)
    for kw, name in (
        ({"obs_last_action": True}, "obs_last_action"),
        ({"lenient_actions": True}, "lenient_actions"),
        ({"loops_per_tick": 2}, "loops_per_tick"),
        ({"spawn_jitter": 0.0}, "spawn_jitter"),
    ):
        other = make_batched("3m", num_envs=2, seed=0, **kw)
        other.reset()
        with pytest.raises(ValueError, match=f"env snapshot was taken with {name}="):
            a.load_state_dict(other.state_dict())
    snap = a.state_dict()
    snap["world"]["health"] = snap["world"]["health"].clone()
    snap["world"]["health"][1, 0] = float("nan")
    before = a.state_dict()
    with pytest.raises(ValueError, match="env snapshot field 'health' holds nan; expected finite values"):
        a.load_state_dict(snap)
    assert torch.equal(a.st.health, before["world"]["health"])
    old = a.state_dict()
    del old["options"]  # a snapshot from before the options were recorded still loads
    b = make_batched("3m", num_envs=2, seed=5)
    b.load_state_dict(old)
    act = torch.ones(2, 3, dtype=torch.int64)
    assert torch.equal(a.step(act)["obs"], b.step(act)["obs"])


@pytest.mark.parametrize("seed", [-1, 2.5, True, [1.5, 2.7], "7"])
def test_bad_seeds_are_rejected(seed):
    with pytest.raises((TypeError, ValueError)):
        make_batched("3m", num_envs=2).reset(seed=seed)


def test_large_seeds_do_not_collide():
    obs = lambda s: make_batched("3m", num_envs=1, seed=s).reset()["state"]  # noqa: E731
    assert not torch.equal(obs(2**32), obs(0))
    assert not torch.equal(obs(2**63), obs(0))


@pytest.mark.parametrize(
    "kwargs, err",
    [
        (dict(obs_last_action="no"), TypeError),
        (dict(reward_death_value="x"), TypeError),
        (dict(reward_scale_rate=-1), ValueError),
        (dict(autoreset="no"), TypeError),
        (dict(spawn_jitter=True), ValueError),
        (dict(loops_per_tick=2.0), TypeError),
    ],
)
def test_option_types_are_checked(kwargs, err):
    with pytest.raises(err):
        make_batched("3m", **kwargs)
