"""The numba path of SMACv2 scenarios against the torch reference, bit for bit.

``kernel="numba"`` runs a scenario's step through ``sim.numba.step`` with per-env unit tables
gathered from ``WorldState.unit_kind`` (``sim.numba.dynamics``), the compiled SMACv2 features
(``sim.numba.features_v2``) and the compiled auto-reset (``sim.numba.reset``). Every output
key of ``step`` (value, dtype, shape, key order) and every ``WorldState`` field must be
``torch.equal`` to the torch path's after every step of seeded random play with auto-resets: every
race, the 5v5 / 10v11 / 20v23 sizes, ``conic_fov``, ``use_unit_ranges`` and ``obs_own_pos`` on and
off, SMAC's feature and reward options, lenient actions, coarse ticks, the threaded batch. Also
the compiled reset field for field, pinned scenarios, batch == singles, the stage-by-stage path,
snapshots, ``set_units`` and the per-env unit table after numba auto-resets.
"""

from __future__ import annotations

from dataclasses import fields

import pytest
import torch
from test_kernel_tick import _assert_same

from sc2_envs import make_batched
from sc2_envs.policies import random_actions
from sc2_envs.sim.env import UnitPlacement
from sc2_envs.sim.runtime import numba_available
from sc2_envs.sim.state import WorldState

pytestmark = pytest.mark.skipif(numba_available() is not None, reason=f"numba does not import: {numba_available()}")

_FIELDS = [f.name for f in fields(WorldState)]


def _same_out(a, b, oa: dict, ob: dict, where: str) -> None:
    assert list(oa) == list(ob), f"{where}: keys {list(oa)} vs {list(ob)}"
    assert "unit_kind" in oa, where
    for k in oa:
        x, y = oa[k], ob[k]
        assert x.dtype == y.dtype and x.shape == y.shape, (
            f"{where}: {k} {x.dtype}{tuple(x.shape)} vs {y.dtype}{tuple(y.shape)}"
        )
        if not torch.equal(x, y):
            bad = (x != y).nonzero()[0].tolist()
            raise AssertionError(f"{where}: output {k} differs at {bad}: torch {x[tuple(bad)]!r}, numba {y[tuple(bad)]!r}")
    _assert_same(a, b, where)
    assert a.get_stats() == b.get_stats(), where


def _pair(name: str, B: int, seed: int, **kw):
    a = make_batched(name, num_envs=B, seed=seed, kernel="torch", **kw)
    b = make_batched(name, num_envs=B, seed=seed, kernel="numba", **kw)
    assert (a.kernel, b.kernel) == ("torch", "numba") and b._step_kernel is not None
    return a, b


def _play(name: str, B: int, steps: int, seed: int = 3, lenient: bool = False, **kw) -> int:
    """Step a torch and a numba sim with the same actions and compare after every step; returns the episodes ended."""
    a, b = _pair(name, B, seed, lenient_actions=lenient, **kw)
    oa, ob = a.reset(), b.reset()
    _same_out(a, b, oa, ob, f"{name} reset")
    gen = torch.Generator().manual_seed(seed + 1)
    ended = 0
    for t in range(steps):
        if lenient:
            act = torch.randint(0, a.n_actions, (B, a.n_agents), generator=gen)  # many unavailable
        else:
            act = random_actions(oa["avail_actions"], gen)
        oa, ob = a.step(act), b.step(act)
        _same_out(a, b, oa, ob, f"{name} {kw} step {t}")
        ended += int((oa["terminated"] | oa["truncated"]).sum())
        if not a.autoreset and bool((oa["terminated"] | oa["truncated"]).any()):
            break
    return ended


@pytest.mark.parametrize(
    "name,kw",
    [
        ("protoss_5_vs_5", {}),
        ("protoss_10_vs_11", {"conic_fov": True}),
        ("protoss_20_vs_23", {"use_unit_ranges": False, "obs_own_pos": False}),
        ("terran_5_vs_5", {"conic_fov": True, "obs_own_pos": False}),
        ("terran_10_vs_11", {}),
        ("terran_20_vs_23", {"conic_fov": True, "use_unit_ranges": False}),
        ("zerg_5_vs_5", {"use_unit_ranges": False}),
        ("zerg_10_vs_11", {"conic_fov": True}),
        ("zerg_20_vs_23", {}),
    ],
    ids=lambda x: x if isinstance(x, str) else "-".join(f"{k}={int(v)}" for k, v in x.items()) or "defaults",
)
def test_numba_equals_torch_seeded_play_with_autoresets(name, kw):
    steps = 150 if name.endswith("5_vs_5") else 100
    assert _play(name, 3, steps, **kw) > 0, "no episode ended: the compiled auto-reset went untested"


@pytest.mark.parametrize(
    "name,kw",
    [
        ("protoss_5_vs_5", {"obs_last_action": True, "state_last_action": True, "obs_timestep_number": True}),
        ("terran_5_vs_5", {"obs_instead_of_state": True, "conic_fov": True}),
        ("zerg_5_vs_5", {"obs_pathing_grid": True, "obs_terrain_height": True, "state_timestep_number": True}),
        ("terran_10_vs_11", {"reward_sparse": True}),
        ("protoss_10_vs_11", {"reward_only_positive": False, "reward_scale": False, "obs_all_health": False}),
        ("zerg_10_vs_11", {"obs_own_health": False, "obs_all_health": False, "reward_death_value": 7.0}),
    ],
    ids=lambda x: x if isinstance(x, str) else "-".join(sorted(x)),
)
def test_numba_equals_torch_smac_options(name, kw):
    _play(name, 2, 80, **kw)


def test_numba_equals_torch_lenient_coarse_ticks_and_no_autoreset():
    _play("terran_5_vs_5", 3, 60, lenient=True, loops_per_tick=2)
    _play("zerg_5_vs_5", 2, 300, autoreset=False, conic_fov=True)


def test_numba_equals_torch_threaded_batch():
    """Batches above the threaded-kernel thresholds (step: 32 envs, features-only observe: 64)."""
    assert _play("terran_10_vs_11", 66, 40, seed=1) > 0


def test_compiled_reset_equals_fresh_state_field_for_field():
    """``ScenarioResetKernel.reset_envs`` == ``copy_envs_from(_fresh_state(), done)`` on every race,
    with pinned envs (with and without positions), negative keys, large episode counts and an env
    whose next episode is its first (``max_reward`` is fixed then)."""
    for name in ("protoss_5_vs_5", "terran_10_vs_11", "zerg_20_vs_23", "terran_20_vs_23", "zerg_5_vs_5"):
        B = 48
        sim = make_batched(name, num_envs=B, seed=list(range(B - 2)) + [2**40 + 3, 2**62 + 5], kernel="numba")
        sim.reset()
        kinds, N, E = sim.scenario.kinds, sim.n_agents, sim.n_enemies
        sim.st.env_seed[3] = -123456789012345  # a key with the sign bit set
        sim.st.episode_count += torch.arange(B) * 37
        sim.st.episode_count[5] = 2**33
        sim.st.episode_count[6] = -1
        sim.pin_scenario([kinds[1]] * N, [kinds[0]] * E, env_index=7)
        pts = ([[3.0 + 0.5 * i, 4.0] for i in range(N)], [[20.0, 1.0 + i] for i in range(E)])
        sim.pin_scenario([kinds[2]] * N, [kinds[1]] * E, *pts, env_index=8)
        sim.step(torch.ones(B, N, dtype=torch.int64))  # some non-fresh state to overwrite
        done = torch.rand(B, generator=torch.Generator().manual_seed(1)) < 0.7
        done[[3, 5, 6, 7, 8]] = True
        done[9] = False
        ref = sim.st.clone()
        ref.copy_envs_from(sim._fresh_state(), done)
        sim._scenario_reset.reset_envs(sim.st, done.nonzero().flatten().numpy())
        for n in _FIELDS:
            assert torch.equal(getattr(ref, n), getattr(sim.st, n)), f"{name}: WorldState.{n} differs"
        assert sim.unit_types(7) == ([kinds[1]] * N, [kinds[0]] * E)


def test_pinned_scenarios_on_the_numba_path():
    a, b = _pair("zerg_5_vs_5", 3, seed=2)
    for sim in (a, b):
        sim.pin_scenario(
            ["zergling"] * 4 + ["hydralisk"],
            ["baneling", "zergling", "zergling", "zergling", "hydralisk"],
            ally_positions=[[4.0 + i, 16.0] for i in range(5)],
            enemy_positions=[[26.0, 10.0 + 2 * i] for i in range(5)],
            env_index=1,
        )
        sim.pin_scenario(["hydralisk"] * 5, ["zergling"] * 5, env_index=2)
    oa, ob = a.reset(), b.reset()
    _same_out(a, b, oa, ob, "pinned reset")
    gen = torch.Generator().manual_seed(5)
    resets = 0
    for t in range(200):
        act = random_actions(oa["avail_actions"], gen)
        oa, ob = a.step(act), b.step(act)
        _same_out(a, b, oa, ob, f"pinned step {t}")
        resets += int((oa["terminated"] | oa["truncated"])[1:].sum())
        assert b.unit_types(1) == (
            ["zergling"] * 4 + ["hydralisk"],
            ["baneling", "zergling", "zergling", "zergling", "hydralisk"],
        )
        assert b.unit_types(2) == (["hydralisk"] * 5, ["zergling"] * 5)
    assert resets > 0, "no pinned env was reset"
    b.unpin_scenario()
    a.unpin_scenario()
    for t in range(60):
        act = random_actions(oa["avail_actions"], gen)
        oa, ob = a.step(act), b.step(act)
        _same_out(a, b, oa, ob, f"unpinned step {t}")


def test_numba_batch_equals_singles():
    """Env ``b`` of a numba batch (threaded kernels) equals a 1-env numba sim holding its state and stream."""
    B = 40
    batch = make_batched("protoss_10_vs_11", num_envs=B, seed=11, kernel="numba", conic_fov=True)
    ob = batch.reset()
    snap = batch.state_dict()
    singles = []
    for b in (0, 17, 39):
        s = make_batched("protoss_10_vs_11", num_envs=1, seed=11, kernel="numba", conic_fov=True)
        s.reset()
        one = {**snap, "num_envs": 1, "world": {k: v[b : b + 1] for k, v in snap["world"].items()}}
        one["scenario_pins"] = {k: v[b : b + 1] for k, v in snap["scenario_pins"].items()}
        s.load_state_dict({**one, "avail_actions": snap["avail_actions"][b : b + 1]})
        singles.append((b, s))
    gen = torch.Generator().manual_seed(3)
    ended = 0
    for t in range(80):
        act = random_actions(ob["avail_actions"], gen)
        ob = batch.step(act)
        ended += int((ob["terminated"] | ob["truncated"]).sum())
        for b, s in singles:
            os_ = s.step(act[b : b + 1])
            for k in ob:
                assert torch.equal(ob[k][b : b + 1], os_[k]), (t, b, k)
            for n in _FIELDS:
                assert torch.equal(getattr(batch.st, n)[b : b + 1], getattr(s.st, n)), (t, b, n)
    assert ended > 0


def test_stage_path_equals_torch():
    """``SMACSim._core`` (orders, ticks, observe as separate compiled stages, one tick at a time too)."""
    a, b = _pair("terran_10_vs_11", 2, seed=4, conic_fov=True)
    oa = a.reset()
    b.reset()
    gen = torch.Generator().manual_seed(1)
    for t in range(25):
        act = random_actions(oa["avail_actions"], gen)
        ca, cb = a._core(act), b._core(act)
        for k in ("obs", "state", "avail_actions", "reward", "battle_won", "lost", "draw"):
            assert torch.equal(ca[k], cb[k]), (t, k)
        _assert_same(a, b, f"stage step {t}")
        oa = {"avail_actions": ca["avail_actions"]}
        for sim in (a, b):
            sim._run_stage("tick")
        _assert_same(a, b, f"single tick {t}")


def test_snapshot_set_units_and_unit_table_on_the_numba_path():
    a, b = _pair("terran_5_vs_5", 2, seed=6)
    oa, _ = a.reset(), b.reset()
    gen = torch.Generator().manual_seed(2)
    for t in range(120):  # several auto-resets: the numba sim's per-env table is rebuilt when read
        act = random_actions(oa["avail_actions"], gen)
        oa, ob = a.step(act), b.step(act)
        _same_out(a, b, oa, ob, f"step {t}")
    assert a.get_stats()["battles_game"] > 0
    for f in ("max_health", "weapon_range", "damage_vs", "can_target", "is_healer"):
        assert torch.equal(getattr(a.table, f), getattr(b.table, f)), f
    assert torch.equal(a.dynamics.collide_pair, b.dynamics.collide_pair)
    assert a.render_data(1)["names"] == b.render_data(1)["names"]
    snap = b.state_dict()
    c = make_batched("terran_5_vs_5", num_envs=2, seed=0, kernel="numba")
    c.load_state_dict(snap)
    a.load_state_dict(snap)
    placed = [UnitPlacement(10.0 + i, 12.0, unit="marauder") for i in range(5)]
    foes = [UnitPlacement(14.0, 10.0 + i, unit="medivac" if i == 0 else "marine") for i in range(5)]
    _same_out(a, c, a.set_units(0, placed, foes), c.set_units(0, placed, foes), "set_units")
    oa = {"avail_actions": a._avail}
    for t in range(60):
        act = random_actions(oa["avail_actions"], gen)
        oa, oc = a.step(act), c.step(act)
        _same_out(a, c, oa, oc, f"after set_units step {t}")


def test_auto_kernel_picks_numba_for_scenarios_and_bad_kinds_raise():
    sim = make_batched("zerg_10_vs_11", num_envs=2, seed=0)
    assert sim.kernel == "numba" and sim.get_env_info()["kernel"] == "numba"
    assert make_batched("zerg_10_vs_11", num_envs=1, kernel="torch").get_env_info()["kernel"] == "torch"
    sim.reset()
    sim.st.unit_kind[1, 4] = 3
    with pytest.raises(ValueError, match=r"unit_kind\[1, 4\] = 3 is not a kind index in \[0, 3\)"):
        sim.step(torch.ones(2, sim.n_agents, dtype=torch.int64))


def test_copied_and_unpickled_numba_scenario_sims_continue_alike():
    """The kernels' cached views and the reset kernel's pin tensors belong to each copy."""
    import copy
    import pickle

    sim = make_batched("terran_5_vs_5", num_envs=3, seed=1, kernel="numba")
    o = sim.reset()
    gen = torch.Generator().manual_seed(0)
    for _ in range(40):
        o = sim.step(random_actions(o["avail_actions"], gen))
    sim.pin_scenario(["marine"] * 5, ["marauder"] * 5, env_index=0)
    copies = (copy.deepcopy(sim), pickle.loads(pickle.dumps(sim)))
    for t in range(120):
        act = random_actions(o["avail_actions"], gen)
        o = sim.step(act)
        for c in copies:
            oc = c.step(act)
            for k in o:
                assert torch.equal(o[k], oc[k]), (t, k)
    assert sim.get_stats()["battles_game"] > 0
    copies[0].unpin_scenario()
    assert bool(sim._pin_mask[0]) and not bool(copies[0]._pin_mask[0])
    assert sim.unit_types(0) == (["marine"] * 5, ["marauder"] * 5)
