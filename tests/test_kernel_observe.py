"""The Numba observe kernel (``sim.numba.features``) against the torch path, bit for bit.

Three sources of states: the golden SMAC cases (``tests/data/smac_golden``), fabricated random
states on every map (dead units, off-map positions, lone medivacs, both sides wiped, ...) under
every feature and reward option set below, and seeded random play through ``SMACSim`` on every
map, where each step's observe stage runs both ways and every output and state field must match.
Floats are compared by their bits (so ``-0.0`` must stay ``-0.0``), not only with ``torch.equal``.
"""

from __future__ import annotations

import json
from dataclasses import fields

import pytest
import torch

pytest.importorskip("numba", reason="the observe kernel needs numba (pip install numba==0.68.1)")

from sc2_envs import list_maps, make_batched  # noqa: E402
from sc2_envs.maps import get_map  # noqa: E402
from sc2_envs.policies import random_actions  # noqa: E402
from sc2_envs.sim.numba.features import ObserveKernel  # noqa: E402
from sc2_envs.sim.rules.features import FeatureConfig, RewardConfig, SMACFeatures  # noqa: E402
from sc2_envs.sim.state import UnitTable, WorldState  # noqa: E402

CPU = torch.device("cpu")
ALL_MAPS = list_maps()
GOLDEN_MAPS = ["3m", "8m", "5m_vs_6m", "10m_vs_11m", "2s3z", "3s5z", "3s5z_vs_3s6z", "1c3s5z", "MMM", "MMM2"]

# option sets that change what the kernel computes (every FeatureConfig / RewardConfig field is set
# away from its default in at least one of them)
OPTION_SETS = {
    "default": {},
    "obs_extras": dict(
        obs_last_action=True,
        obs_pathing_grid=True,
        obs_terrain_height=True,
        obs_timestep_number=True,
        state_last_action=False,
        state_timestep_number=True,
    ),
    "own_health_only": dict(obs_all_health=False, obs_own_health=True, obs_last_action=True, obs_instead_of_state=True),
    "no_health": dict(obs_all_health=False, obs_own_health=False, obs_timestep_number=True, obs_instead_of_state=True),
    "signed_unscaled": dict(
        reward_only_positive=False, reward_scale=False, reward_defeat=-7.5, reward_negative_scale=0.7, reward_death_value=3.3
    ),
    "signed_scaled": dict(reward_only_positive=False, reward_scale_rate=7.3, reward_win=123.4, reward_defeat=-1.1),
    "sparse": dict(reward_sparse=True, state_timestep_number=True),
    "sparse_unscaled": dict(reward_sparse=True, reward_scale=False),
    "clip_regen": dict(reward_clip_regen=True, reward_death_value=0.1, reward_scale_rate=3.0),
}
_FEATURE_KEYS = {f.name for f in fields(FeatureConfig)}


def _features(name: str, options: dict) -> SMACFeatures:
    spec = get_map(name)
    cfg = FeatureConfig(**{k: v for k, v in options.items() if k in _FEATURE_KEYS})
    rcfg = RewardConfig(**{k: v for k, v in options.items() if k not in _FEATURE_KEYS})
    return SMACFeatures(spec, UnitTable.build(spec, CPU), cfg, rcfg, CPU)


def _bits_equal(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Same dtype, shape and bits (floats by their bit patterns: -0.0 != 0.0 here)."""
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.dtype == torch.float32:
        return torch.equal(a.view(torch.int32), b.view(torch.int32))
    if a.dtype == torch.float64:
        return torch.equal(a.view(torch.int64), b.view(torch.int64))
    return torch.equal(a, b)


def _assert_same(got: dict, want: dict, where: str) -> None:
    assert set(got) == set(want), where
    for k in want:
        if not _bits_equal(got[k], want[k]):
            diff = (got[k] != want[k]).nonzero()[:5].tolist() if got[k].shape == want[k].shape else "shape"
            raise AssertionError(
                f"{where}: {k} differs from the torch path ({got[k].dtype} {tuple(got[k].shape)}; first at {diff})"
            )


def _assert_state_same(got: WorldState, want: WorldState, where: str) -> None:
    for f in fields(WorldState):
        assert _bits_equal(getattr(got, f.name), getattr(want, f.name)), f"{where}: WorldState.{f.name} differs"


def _torch_observe_stage(feat: SMACFeatures, st: WorldState, actions: torch.Tensor) -> dict:
    """``SMACSim._stage_observe`` on a bare ``SMACFeatures`` (the same calls, in the same order)."""
    st.episode_steps = st.episode_steps + 1
    st.last_action = actions.clone()
    won, lost, draw = feat.game_result(st)
    reward = feat.reward(st, won, lost)
    st.prev_health, st.prev_shield, st.prev_alive = st.health.clone(), st.shield.clone(), st.alive.clone()
    avail = feat.avail_actions(st)
    return dict(
        obs=feat.obs(st, avail),
        state=feat.state(st),
        avail_actions=avail,
        reward=reward,
        battle_won=won,
        lost=lost,
        draw=draw,
    )


def _random_state(feat: SMACFeatures, B: int, seed: int) -> WorldState:
    """``B >= 8`` fabricated states covering the edge cases of the feature rules.

    Units clump around a random centre (so that sight and shooting ranges are crossed) with some
    off-map positions; a third of the units are dead now, some were dead before; a few envs have
    every ally, every enemy or every unit dead, or only medivacs left.
    """
    g = torch.Generator().manual_seed(seed)
    t, N, U, A = feat.table, feat.n_agents, feat.n_units, feat.n_actions
    st = WorldState.empty(B, U, N, CPU)
    centre = torch.rand(B, 1, 2, generator=g) * 30 + 1
    st.pos = (centre + torch.randn(B, U, 2, generator=g) * 5).clamp(-1.5, 33.5)
    st.pos[:, :, 0] = torch.where(torch.rand(B, U, generator=g) < 0.05, torch.tensor(-0.5), st.pos[:, :, 0])
    frac = torch.rand(B, U, generator=g)
    st.health = torch.where(frac < 0.3, torch.zeros(()), frac * t.max_health)
    st.shield = torch.rand(B, U, generator=g) * t.max_shield * (st.health > 0)
    st.alive = st.health > 0
    st.alive[0] = False  # both sides wiped
    st.alive[1, :N] = False  # every ally dead
    st.alive[2, N:] = False  # every enemy dead
    medivac = torch.tensor([n == "medivac" for n in t.names])
    if bool(medivac.any()):
        st.alive[3] = medivac  # only medivacs on both sides
        st.alive[4, N:] = medivac[N:]  # a lone enemy medivac
        st.alive[5, :N] = medivac[:N]  # a lone ally medivac
    st.health = torch.where(st.alive, st.health.clamp(min=0.5), torch.zeros(()))
    st.shield = st.shield * st.alive
    st.energy = torch.rand(B, U, generator=g) * t.energy_max
    st.cooldown = torch.rand(B, U, generator=g) * 30
    st.prev_alive = st.alive | (torch.rand(B, U, generator=g) < 0.3)
    st.prev_alive[6] = False  # nothing tracked (all counted dead already)
    st.prev_health = torch.where(st.prev_alive, st.health + torch.rand(B, U, generator=g) * 40, torch.zeros(()))
    st.prev_shield = torch.where(st.prev_alive, st.shield + (torch.rand(B, U, generator=g) - 0.3) * 10, torch.zeros(()))
    st.last_action = torch.randint(-1, A, (B, N), generator=g)
    st.episode_steps = torch.randint(0, 400, (B,), generator=g)
    return st


def _random_actions(feat: SMACFeatures, B: int, seed: int) -> torch.Tensor:
    return torch.randint(0, feat.n_actions, (B, feat.n_agents), generator=torch.Generator().manual_seed(seed))


# ---------------------------------------------------------------------------------------------
# golden SMAC cases


def _golden(test_data_dir, name: str) -> dict:
    path = test_data_dir / "smac_golden" / f"{name}.json"
    assert path.is_file(), f"golden SMAC data {path} is missing from the repository (tests/data/smac_golden)"
    with open(path) as f:
        return json.load(f)


def _fill(st: WorldState, b: int, units: list[dict], prev: bool = False) -> None:
    for k, u in enumerate(units):
        if prev:
            st.prev_health[b, k], st.prev_shield[b, k], st.prev_alive[b, k] = u["health"], u["shield"], u["health"] > 0
            continue
        st.pos[b, k, 0], st.pos[b, k, 1] = u["x"], u["y"]
        st.health[b, k], st.shield[b, k] = u["health"], u["shield"]
        st.cooldown[b, k], st.energy[b, k] = u["weapon_cooldown"], u["energy"]
        st.alive[b, k] = u["health"] > 0


@pytest.mark.parametrize("name", GOLDEN_MAPS)
def test_golden_features_through_kernel(test_data_dir, name):
    gold = _golden(test_data_dir, name)
    feat = _features(name, {})
    cases = gold["feature_cases"]
    st = WorldState.empty(len(cases), feat.n_units, feat.n_agents, CPU)
    for b, case in enumerate(cases):
        _fill(st, b, case["allies"] + case["enemies"])
        st.last_action[b] = torch.tensor(case["last_action"])
    got = ObserveKernel(feat).observe(st)
    avail = feat.avail_actions(st)
    _assert_same(got, dict(obs=feat.obs(st, avail), state=feat.state(st), avail_actions=avail), f"{name} golden")
    assert torch.equal(got["avail_actions"], torch.tensor([c["avail"] for c in cases], dtype=torch.bool))
    torch.testing.assert_close(got["obs"], torch.tensor([c["obs"] for c in cases]), atol=1e-5, rtol=0)
    torch.testing.assert_close(got["state"], torch.tensor([c["state"] for c in cases]), atol=1e-5, rtol=0)


@pytest.mark.parametrize("name", GOLDEN_MAPS)
@pytest.mark.parametrize("only_positive", [True, False])
def test_golden_reward_through_kernel(test_data_dir, name, only_positive):
    gold = _golden(test_data_dir, name)
    feat = _features(name, dict(reward_scale=False, reward_only_positive=only_positive))
    cases = gold["reward_cases"]
    st = WorldState.empty(len(cases), feat.n_units, feat.n_agents, CPU)
    for b, case in enumerate(cases):
        _fill(st, b, case["allies"] + case["enemies"])
        _fill(st, b, case["prev_allies"] + case["prev_enemies"], prev=True)
    actions = torch.zeros(len(cases), feat.n_agents, dtype=torch.int64)
    ref_st = st.clone()
    want = _torch_observe_stage(feat, ref_st, actions)
    got = ObserveKernel(feat)(st, actions)
    _assert_same(got, want, f"{name} golden reward")
    _assert_state_same(st, ref_st, f"{name} golden reward")
    # the golden values leave out the end-of-battle bonus: compare the cases still running
    running = ~(got["battle_won"] | got["lost"] | got["draw"])
    key = "reward_raw_only_positive" if only_positive else "reward_raw_signed"
    gold_rew = torch.tensor([c[key] for c in cases], dtype=torch.float64)
    assert running.any()
    torch.testing.assert_close(got["reward"][running].double(), gold_rew[running], atol=1e-5, rtol=1e-6)


# ---------------------------------------------------------------------------------------------
# fabricated states: every map x every option set, serial and threaded kernels


@pytest.mark.parametrize("options", list(OPTION_SETS), ids=list(OPTION_SETS))
@pytest.mark.parametrize("name", ALL_MAPS)
def test_random_states_bit_equal(name, options):
    feat = _features(name, OPTION_SETS[options])
    B = 16
    for parallel in (False, True) if options in ("default", "obs_extras", "signed_scaled") else (None,):
        st = _random_state(feat, B, seed=len(name))
        actions = _random_actions(feat, B, seed=1)
        ref_st = st.clone()
        want = _torch_observe_stage(feat, ref_st, actions)
        got = ObserveKernel(feat, parallel=parallel)(st, actions)
        where = f"{name} {options} parallel={parallel}"
        _assert_same(got, want, where)
        _assert_state_same(st, ref_st, where)
        # the features-only entry point, all envs and a subset of rows
        kern = ObserveKernel(feat, parallel=parallel)
        avail = feat.avail_actions(st)
        ref = dict(obs=feat.obs(st, avail), state=feat.state(st), avail_actions=avail)
        _assert_same(kern.observe(st), ref, where + " observe")
        rows = torch.tensor([0, 3, 7, B - 1])
        out = {k: torch.zeros_like(v) for k, v in ref.items()}
        kern.observe(st, rows, out=out)
        for k in ref:
            assert _bits_equal(out[k][rows], ref[k][rows]), f"{where} observe rows: {k}"
            others = torch.ones(B, dtype=torch.bool)
            others[rows] = False
            assert not out[k][others].any(), f"{where} observe rows wrote rows outside env_ids ({k})"


def test_results_cover_every_outcome():
    """The fabricated states reach won, lost, draw and running on a plain and an MMM map."""
    for name in ("2s3z", "MMM2"):
        feat = _features(name, {})
        st = _random_state(feat, 16, seed=len(name))
        got = ObserveKernel(feat)(st, _random_actions(feat, 16, seed=1))
        running = ~(got["battle_won"] | got["lost"] | got["draw"])
        assert got["battle_won"].any() and got["lost"].any() and running.any(), name
        if name == "2s3z":
            assert got["draw"].any()
        assert (got["reward"] != 0).any()


# ---------------------------------------------------------------------------------------------
# seeded random play through SMACSim: each step's observe stage both ways


def _play_both_ways(name: str, B: int, steps: int, seed: int, **options) -> int:
    """Step a sim with random valid actions; at each step run the kernel on a copy of the state
    before the torch observe stage and compare everything. Returns the number of episode ends seen."""
    sim = make_batched(name, num_envs=B, seed=seed, loops_per_tick=4, kernel="torch", **options)
    kern = ObserveKernel(sim.features)
    torch_stage = sim._stage_observe
    compared = []

    def both(st, actions):
        mine = st.clone()
        got = kern(mine, actions)
        want = torch_stage(st, actions)
        where = f"{name} {options} step {len(compared)}"
        _assert_same(got, want, where)
        _assert_state_same(mine, st, where)
        compared.append(1)
        return want

    sim._stage_observe = both
    out = sim.reset()
    _assert_same(kern.observe(sim.st), {k: out[k] for k in ("obs", "state", "avail_actions")}, f"{name} reset")
    gen = torch.Generator().manual_seed(seed)
    ends = 0
    for _ in range(steps):
        out = sim.step(random_actions(out["avail_actions"], gen))
        done = out["terminated"] | out["truncated"]
        ends += int(done.sum())
        # after auto-reset, the returned features are those of sim.st (reset envs included)
        _assert_same(kern.observe(sim.st), {k: out[k] for k in ("obs", "state", "avail_actions")}, f"{name} after step")
    assert len(compared) == steps
    return ends


@pytest.mark.parametrize("name", ALL_MAPS)
def test_random_play_bit_equal(name):
    _play_both_ways(name, B=4, steps=12, seed=3, obs_last_action=True, obs_pathing_grid=True, obs_terrain_height=True)


@pytest.mark.parametrize("options", ["default", "signed_scaled", "sparse", "own_health_only"])
def test_random_play_to_episode_ends(options):
    ends = _play_both_ways("3m", B=8, steps=60, seed=5, **OPTION_SETS[options])
    assert ends > 0, "the run should include episode ends (terminal rewards and auto-resets)"


@pytest.mark.parametrize("name", ["3m", "MMM2"])
def test_sim_numba_equals_torch_end_to_end(name):
    """``SMACSim(kernel="numba")`` and ``kernel="torch"`` step in lock step: every output, auto-resets included."""
    B, options = 8, OPTION_SETS["obs_extras"]
    sims = [make_batched(name, num_envs=B, seed=7, loops_per_tick=4, kernel=k, **options) for k in ("numba", "torch")]
    assert sims[0].kernel == "numba" and sims[1].kernel == "torch"
    outs = [s.reset() for s in sims]
    _assert_same(outs[0], outs[1], f"{name} reset")
    gen = torch.Generator().manual_seed(7)
    ends = 0
    for t in range(80):
        actions = random_actions(outs[1]["avail_actions"], gen)
        outs = [s.step(actions) for s in sims]
        _assert_same(outs[0], outs[1], f"{name} step {t}")
        _assert_state_same(sims[0].st, sims[1].st, f"{name} step {t}")
        ends += int((outs[1]["terminated"] | outs[1]["truncated"]).sum())
    assert ends > 0, "the run should include auto-resets"
    assert sims[0].get_stats() == sims[1].get_stats()


@pytest.mark.slow
@pytest.mark.parametrize("options", list(OPTION_SETS), ids=list(OPTION_SETS))
@pytest.mark.parametrize("name", ALL_MAPS)
def test_random_play_long_bit_equal(name, options):
    _play_both_ways(name, B=16, steps=150, seed=11, **OPTION_SETS[options])


# ---------------------------------------------------------------------------------------------
# bad input


def test_bad_input_is_named():
    feat = _features("3m", {})
    kern = ObserveKernel(feat)
    st = _random_state(feat, 8, seed=0)
    with pytest.raises(ValueError, match="actions must be an int64 tensor of shape \\(8, 3\\)"):
        kern(st, torch.zeros(8, 2, dtype=torch.int64))
    with pytest.raises(ValueError, match="actions must be an int64"):
        kern(st, torch.zeros(8, 3, dtype=torch.int32))
    with pytest.raises(ValueError, match="out\\['obs'\\]"):
        kern(st, torch.zeros(8, 3, dtype=torch.int64), out=dict(obs=torch.zeros(8, 3, 1)))
    with pytest.raises(ValueError, match="env_ids must be in \\[0, 8\\)"):
        kern.observe(st, torch.tensor([8]), out=kern.observe(st))
    with pytest.raises(ValueError, match="pass out"):
        kern.observe(st, torch.tensor([0]))
    with pytest.raises(TypeError, match="parallel"):
        ObserveKernel(feat, parallel="yes")
    other = _features("8m", {})
    with pytest.raises(ValueError, match="expected \\[B, 6\\]"):
        kern(_random_state(other, 8, seed=0), torch.zeros(8, 3, dtype=torch.int64))


def test_preallocated_outputs_and_noncontiguous_state():
    """``out=`` buffers are written in place; a non-contiguous state field is made contiguous, not misread."""
    feat = _features("2s3z", {})
    B = 8
    st = _random_state(feat, B, seed=2)
    st.health = st.health.t().contiguous().t()  # same values, transposed strides
    assert not st.health.is_contiguous()
    actions = _random_actions(feat, B, seed=3)
    ref_st = st.clone()
    want = _torch_observe_stage(feat, ref_st, actions)
    kern = ObserveKernel(feat)
    buf = dict(
        obs=torch.empty(B, feat.n_agents, feat.obs_size),
        state=torch.empty(B, feat.state_size),
        avail_actions=torch.empty(B, feat.n_agents, feat.n_actions, dtype=torch.bool),
        reward=torch.empty(B),
        result=torch.empty(3, B, dtype=torch.bool),
    )
    got = kern(st, actions, out=buf)
    _assert_same(got, want, "out buffers")
    assert got["obs"].data_ptr() == buf["obs"].data_ptr() and got["battle_won"].data_ptr() == buf["result"].data_ptr()
    _assert_state_same(st, ref_st, "non-contiguous health")


def test_views_follow_replaced_fields():
    """A field replaced by a new tensor between calls (as the torch stages do) is read anew, not from stale views."""
    feat = _features("2s3z", {})
    kern = ObserveKernel(feat)
    st = _random_state(feat, 8, seed=4)
    actions = _random_actions(feat, 8, seed=5)
    kern(st, actions)
    other = _random_state(feat, 8, seed=6)
    st.pos, st.health, st.alive = other.pos, other.health, other.alive  # new objects, new values
    ref_st = st.clone()
    want = _torch_observe_stage(feat, ref_st, actions)
    _assert_same(kern(st, actions), want, "replaced fields")
    _assert_state_same(st, ref_st, "replaced fields")


def test_deepcopy_of_a_numba_sim_observes_its_own_state():
    """A deep copy's kernel must not write through views of the original's tensors (the view cache is dropped)."""
    import copy

    a = make_batched("3m", num_envs=2, seed=0, kernel="numba")
    a.reset()
    a.step(torch.full((2, 3), 4, dtype=torch.int64))  # caches the observe kernel's views of a's state
    b = copy.deepcopy(a)
    assert b._observe_kernel._view_cache is None
    act = torch.full((2, 3), 2, dtype=torch.int64)
    got_b = b.step(act)
    c = make_batched("3m", num_envs=2, seed=0, kernel="torch")
    c.load_state_dict(a.state_dict())
    want = c.step(act)
    got_a = a.step(act)
    for k in ("obs", "state", "avail_actions", "reward"):
        assert _bits_equal(got_a[k], want[k]) and _bits_equal(got_b[k], want[k]), k
    _assert_state_same(b.st, c.st, "deep copy")
