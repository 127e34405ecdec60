"""The fused numba step (``sim.numba.step.StepKernel``: one compiled call per env step) against the
torch reference: every returned key (value, dtype, shape), every state tensor and ``get_stats``
after every step of seeded random play with auto-resets, lenient actions, ``autoreset=False``, the
errors on bad actions (same message, nothing changed), and the independence of returned tensors.
Also ``random_actions``: its compiled CPU choice equals its tensor form and is uniform.
"""

from __future__ import annotations

from dataclasses import fields

import numpy as np
import pytest
import torch

import sc2_envs.policies as policies
from sc2_envs import make_batched
from sc2_envs.policies import random_actions
from sc2_envs.sim.runtime import numba_available
from sc2_envs.sim.runtime.schedule import SERIAL, THREADED, ScheduleChooser
from sc2_envs.sim.state import WorldState

pytestmark = pytest.mark.skipif(numba_available() is not None, reason=f"numba does not import: {numba_available()}")

_FIELDS = [f.name for f in fields(WorldState)]
_KEYS = (
    "obs",
    "state",
    "avail_actions",
    "reward",
    "battle_won",
    "terminated",
    "truncated",
    "dead_allies",
    "dead_enemies",
    "episode_limit",
    "agent_alive",
    "invalid_actions",
    "final_obs",
    "final_state",
    "final_avail_actions",
)


def _same(a, b, oa: dict, ob: dict, where: str) -> None:
    assert list(oa) == list(ob) == list(_KEYS), where
    for k in _KEYS:
        x, y = oa[k], ob[k]
        assert x.dtype == y.dtype and x.shape == y.shape, (
            f"{where}: {k} {x.dtype}{tuple(x.shape)} vs {y.dtype}{tuple(y.shape)}"
        )
        assert torch.equal(x, y), f"{where}: output {k} differs"
    for n in _FIELDS:
        assert torch.equal(getattr(a.st, n), getattr(b.st, n)), f"{where}: WorldState.{n} differs"
    assert a.get_stats() == b.get_stats(), where


def _pair(map_name: str, B: int, seed: int, **kw):
    a = make_batched(map_name, num_envs=B, seed=seed, kernel="torch", **kw)
    b = make_batched(map_name, num_envs=B, seed=seed, kernel="numba", **kw)
    assert b._step_kernel is not None and a._step_kernel is None
    return a, b


@pytest.mark.parametrize(
    "map_name,B,steps", [("2s3z", 1, 150), ("3s5z", 3, 80), ("MMM2", 2, 80), ("bane_vs_bane", 2, 60), ("2c_vs_64zg", 1, 60)]
)
def test_fused_step_equals_torch_over_seeded_random_play_with_autoresets(map_name, B, steps):
    a, b = _pair(map_name, B, seed=3)
    oa, ob = a.reset(), b.reset()
    gen = torch.Generator().manual_seed(7)
    for t in range(steps):
        act = random_actions(oa["avail_actions"], gen)
        oa, ob = a.step(act), b.step(act)
        _same(a, b, oa, ob, f"{map_name} step {t}")
    if map_name == "2s3z":
        assert a.get_stats()["battles_game"] > 0, "no episode ended: the auto-reset path went untested"


class _Alternate(ScheduleChooser):
    """Serial and threaded calls in turn, whatever their times (both kinds meet the reference)."""

    def __init__(self):
        super().__init__()
        self.calls = []

    def choose(self):
        self.calls.append(len(self.calls) % 2)
        return self.calls[-1]


def test_fused_step_parallel_batch_equals_torch():
    import numba

    from sc2_envs.sim.numba.dynamics import PARALLEL_MIN_ENVS

    B = PARALLEL_MIN_ENVS + 3
    a, b = _pair("3s5z", B, seed=1, spawn_jitter=0.3)
    oa, ob = a.reset(), b.reset()
    alternate = _Alternate()
    b._step_kernel._schedule, b._step_kernel._schedule_key = alternate, (B, numba.get_num_threads())
    gen = torch.Generator().manual_seed(2)
    for t in range(70):
        act = random_actions(oa["avail_actions"], gen)
        oa, ob = a.step(act), b.step(act)
        _same(a, b, oa, ob, f"parallel step {t}")
    assert a.get_stats()["battles_game"] > 0
    if numba.get_num_threads() > 1:
        assert alternate.calls.count(SERIAL) == alternate.calls.count(THREADED) == 35


def test_fused_step_lenient_actions_and_coarse_ticks():
    a, b = _pair("MMM", 3, seed=2, lenient_actions=True, loops_per_tick=2)
    oa, ob = a.reset(), b.reset()
    gen = torch.Generator().manual_seed(4)
    for t in range(40):
        act = torch.randint(0, a.n_actions, (3, a.n_agents), generator=gen)  # many unavailable
        oa, ob = a.step(act), b.step(act)
        _same(a, b, oa, ob, f"lenient step {t}")
        assert bool(ob["invalid_actions"].any()) or t > 0


def test_fused_step_without_autoreset_stops_like_torch():
    a, b = _pair("3m", 2, seed=0, autoreset=False)
    oa, ob = a.reset(), b.reset()
    gen = torch.Generator().manual_seed(0)
    for t in range(400):
        act = random_actions(oa["avail_actions"], gen)
        oa, ob = a.step(act), b.step(act)
        _same(a, b, oa, ob, f"no-autoreset step {t}")
        if bool((oa["terminated"] | oa["truncated"]).any()):
            break
    else:
        raise AssertionError("no episode ended in 400 steps")
    for sim in (a, b):
        with pytest.raises(RuntimeError, match="call reset"):
            sim.step(act)


@pytest.mark.parametrize(
    "bad,err,text",
    [
        (lambda e: torch.full((1, 5), 11), ValueError, r"env 0, agent 0: action 11 is out of range \[0, 11\)"),
        (lambda e: torch.tensor([[1, 1, 1, 1, -1]]), ValueError, r"env 0, agent 4: action -1 is out of range"),
        (  # an unsigned 2**64 - 1 is named as given, not as the -1 an int64 cast makes of it
            lambda e: np.array([[1, 1, 1, 2**64 - 1, 1]], dtype=np.uint64),
            ValueError,
            r"env 0, agent 3: action 18446744073709551615 is out of range",
        ),
        (lambda e: torch.tensor([[1, 70000, 1, 1, 1]], dtype=torch.uint32), ValueError, r"agent 1: action 70000 is out"),
        (lambda e: torch.tensor([[1, 1, 0, 1, 1]]), ValueError, r"env 0, agent 2 \(zealot\): action 0 is unavailable"),
        (lambda e: torch.ones(1, 5), TypeError, "integer tensor"),
        (lambda e: torch.ones(5, dtype=torch.int64), ValueError, r"shape \(num_envs=1, n_agents=5\)"),
    ],
)
def test_fused_step_bad_actions_raise_as_torch_and_change_nothing(bad, err, text):
    a, b = _pair("2s3z", 1, seed=0)
    a.reset(), b.reset()
    before = b.state_dict()
    for sim in (a, b):
        with pytest.raises(err, match=text):
            sim.step(bad(sim))
    after = b.state_dict()
    for n in _FIELDS:
        assert torch.equal(before["world"][n], after["world"][n]), n
    assert torch.equal(before["avail_actions"], after["avail_actions"])
    assert torch.equal(before["stat_counts"], after["stat_counts"])
    act = torch.ones(1, 5, dtype=torch.int64)
    _same(a, b, a.step(act), b.step(act), "after the error")


def test_fused_step_accepts_numpy_lists_and_strided_int32_actions():
    a, b = _pair("3m", 2, seed=5)
    a.reset(), b.reset()
    act = torch.tensor([[4, 1, 2], [1, 1, 1]])
    for variant in (act.numpy().tolist(), act.numpy().astype("int32"), act.t().contiguous().t(), act.to(torch.int16)):
        _same(a, b, a.step(variant), b.step(variant), repr(type(variant)))


@pytest.mark.parametrize(
    ("map_name", "kernel"), [("2s3z", "numba"), ("2s3z", "torch"), ("protoss_5_vs_5", "torch")], ids=lambda x: x
)
def test_step_outputs_are_independent_of_each_other_and_of_the_sim(map_name, kernel):
    sim = make_batched(map_name, num_envs=2, seed=0, kernel=kernel)
    o = sim.reset()
    o["avail_actions"].zero_()  # the caller's copy only: the next step still checks the real mask
    out = sim.step(torch.ones(2, 5, dtype=torch.int64))
    snap = {k: v.clone() for k, v in out.items()}
    st = {n: getattr(sim.st, n).clone() for n in _FIELDS}
    ptrs = {k: v.untyped_storage().data_ptr() for k, v in out.items()}
    assert len(set(ptrs.values())) == len(ptrs), "two returned tensors share memory"
    k0 = "final_avail_actions"
    out[k0].fill_(False)  # one changed in place: the others keep their values
    for k, v in out.items():
        assert k == k0 or torch.equal(v, snap[k]), k
    for v in out.values():
        v.fill_(True if v.dtype == torch.bool else 7)
    for n in _FIELDS:
        assert torch.equal(getattr(sim.st, n), st[n]), f"changing the outputs changed WorldState.{n}"
    sim.step(torch.ones(2, 5, dtype=torch.int64))  # the sim's mask was not changed by fill_
    with pytest.raises(ValueError, match="unavailable|not available"):
        sim.step(torch.full((2, 5), 9, dtype=torch.int64))  # nor made permissive by the fill_(True) above


def test_fused_step_state_dict_round_trip_and_get_stats():
    a = make_batched("3m", num_envs=3, seed=1, kernel="numba")
    o = a.reset()
    gen = torch.Generator().manual_seed(1)
    for _ in range(30):
        o = a.step(random_actions(o["avail_actions"], gen))
    snap = a.state_dict()
    b = make_batched("3m", num_envs=3, seed=1, kernel="torch")
    b.load_state_dict(snap)
    a.load_state_dict(snap)  # new tensors: the kernel must view them afresh
    for t in range(80):
        act = random_actions(o["avail_actions"], gen)
        oa, ob = a.step(act), b.step(act)
        _same(a, b, oa, ob, f"restored step {t}")
        o = oa
    assert a.get_stats()["battles_game"] == b.get_stats()["battles_game"] > 0


def test_random_actions_compiled_choice_equals_tensor_form_and_is_uniform(monkeypatch):
    gen = torch.Generator().manual_seed(0)
    mask = torch.rand(64, 7, 13, generator=gen) < 0.4
    mask[..., 1] |= ~mask.any(-1)
    fast = random_actions(mask, seed=3)
    monkeypatch.setattr(policies, "_PICK", [None])  # the tensor form (numba absent, or a GPU)
    slow = random_actions(mask, seed=3)
    monkeypatch.undo()
    assert torch.equal(fast, slow)
    assert torch.gather(mask, 2, fast.unsqueeze(-1)).all()
    one = torch.tensor([[True, False, True, True, False, True]])
    draws = random_actions(one.expand(40000, -1).contiguous(), seed=1)
    freq = torch.bincount(draws, minlength=6).double() / draws.numel()
    assert freq[[1, 4]].sum() == 0
    assert torch.allclose(freq[[0, 2, 3, 5]], torch.full((4,), 0.25, dtype=torch.float64), atol=0.01)  # 4.6 sigma


@pytest.mark.parametrize("jitter", [0.5, 0.0, 0.3, 1.7])
def test_reset_kernel_equals_fresh_state_on_every_map(jitter):
    """``StepKernel.reset_envs`` == ``st.copy_envs_from(sim._fresh_state(), done)`` field for field,
    over several episode counts, env keys (negative ones too), spawn jitters and every map."""
    from sc2_envs import list_maps

    for map_name in list_maps():
        sim = make_batched(map_name, num_envs=6, seed=[0, 1, 2**40 + 3, 7, 11, 2**62 + 5], kernel="numba", spawn_jitter=jitter)
        sim.reset()
        sim.st.env_seed[3] = -123456789012345  # a key with the sign bit set
        sim.st.episode_count += torch.tensor([0, 1, 5, 1000, 2**33, 3])
        o = sim.step(torch.ones(6, sim.n_agents, dtype=torch.int64))  # some non-fresh state to overwrite
        done = torch.tensor([True, False, True, True, True, False])
        ref = sim.st.clone()
        ref.copy_envs_from(sim._fresh_state(), done)
        sim._step_kernel.reset_envs(sim.st, done.numpy(), sim.spawn_jitter)
        for n in _FIELDS:
            assert torch.equal(getattr(ref, n), getattr(sim.st, n)), f"{map_name} jitter {jitter}: WorldState.{n} differs"
        assert o["obs"].shape[0] == 6
