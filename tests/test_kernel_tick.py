"""The numba orders/tick kernel (``sim.numba.dynamics``) against the torch reference, bit for bit.

Every state tensor after every env step must be ``torch.equal`` between ``kernel="torch"`` and
``kernel="numba"``: seeded random and heuristic play on every map (spawn jitter on, both sides:
the allies' actions and the enemy AI), other ``loops_per_tick``, batches above the parallel
threshold, the per-tick stage, and the fidelity scenarios of ``tests/test_fidelity.py`` (re-run
here in lock step: each step starts both paths from the reference's state).
"""

from __future__ import annotations

from dataclasses import fields

import pytest
import test_fidelity as tf
import torch

from sc2_envs import list_maps, make_batched
from sc2_envs.policies import HeuristicPolicy, random_actions
from sc2_envs.sim.runtime import numba_available
from sc2_envs.sim.state import WorldState

pytestmark = pytest.mark.skipif(numba_available() is not None, reason=f"numba does not import: {numba_available()}")

_FIELDS = [f.name for f in fields(WorldState)]
_OUT_KEYS = ("obs", "state", "avail_actions", "reward", "terminated", "truncated", "battle_won")


def _assert_same(a, b, where: str) -> None:
    for n in _FIELDS:
        x, y = getattr(a.st, n), getattr(b.st, n)
        if not torch.equal(x, y):
            bad = (x != y).nonzero()[0].tolist()
            raise AssertionError(
                f"{where}: WorldState.{n} differs at {bad}: torch {x[tuple(bad)].item()!r}, numba {y[tuple(bad)].item()!r}"
            )


def _assert_same_out(oa: dict, ob: dict, where: str) -> None:
    for k in _OUT_KEYS:
        assert torch.equal(oa[k], ob[k]), f"{where}: output {k} differs"


def _play(map_name: str, policy: str, num_envs: int, steps: int, seed: int = 1, **kw) -> int:
    """Step a torch and a numba sim with the same actions; compare after every step. Returns episodes ended."""
    a = make_batched(map_name, num_envs=num_envs, seed=seed, kernel="torch", **kw)
    b = make_batched(map_name, num_envs=num_envs, seed=seed, kernel="numba", **kw)
    assert (a.kernel, b.kernel) == ("torch", "numba")
    oa, ob = a.reset(), b.reset()
    _assert_same(a, b, f"{map_name} reset")
    gen = torch.Generator().manual_seed(seed)
    heuristic = HeuristicPolicy(a) if policy == "heuristic" else None
    ended = 0
    for t in range(steps):
        act = heuristic(oa["avail_actions"]) if heuristic is not None else random_actions(oa["avail_actions"], gen)
        oa, ob = a.step(act), b.step(act)
        where = f"{map_name} {policy} step {t}"
        _assert_same(a, b, where)
        _assert_same_out(oa, ob, where)
        ended += int((oa["terminated"] | oa["truncated"]).sum())
    return ended


@pytest.mark.parametrize("map_name", list_maps())
def test_numba_equals_torch_every_map_random_and_heuristic(map_name):
    ended = _play(map_name, "random", 3, 60) + _play(map_name, "heuristic", 3, 60)
    assert ended >= 0  # (the comparison is the test; episodes ending inside the run also check auto-reset)


@pytest.mark.slow
@pytest.mark.parametrize("map_name", list_maps())
def test_numba_equals_torch_every_map_long(map_name):
    """A few hundred steps per map and policy: most battles end and auto-reset inside the run."""
    assert _play(map_name, "random", 8, 300, seed=5) + _play(map_name, "heuristic", 8, 300, seed=6) > 0


@pytest.mark.parametrize("map_name,loops_per_tick", [("MMM2", 2), ("2c_vs_64zg", 4), ("bane_vs_bane", 8), ("corridor", 2)])
def test_numba_equals_torch_coarse_ticks(map_name, loops_per_tick):
    _play(map_name, "heuristic", 2, 40, loops_per_tick=loops_per_tick)


def test_numba_equals_torch_parallel_batch_and_no_jitter():
    """A batch above ``PARALLEL_MIN_ENVS`` runs on the thread pool; spawn_jitter=0 is SMAC's fixed start."""
    from sc2_envs.sim.numba.dynamics import PARALLEL_MIN_ENVS

    _play("3s5z", "random", PARALLEL_MIN_ENVS + 5, 25)
    _play("so_many_baneling", "heuristic", 2, 30, spawn_jitter=0.0)


def test_numba_batch_equals_singles():
    """Env ``b`` of a numba batch equals a 1-env numba sim seeded with the batch's key for ``b``."""
    B = 40
    batch = make_batched("3s_vs_5z", num_envs=B, seed=11, kernel="numba")
    ob = batch.reset()
    singles = []
    snap = batch.state_dict()
    for b in (0, 17, 39):
        s = make_batched("3s_vs_5z", num_envs=1, seed=11, kernel="numba")
        s.reset()
        one = {**snap, "num_envs": 1, "world": {k: v[b : b + 1] for k, v in snap["world"].items()}}
        s.load_state_dict({**one, "avail_actions": snap["avail_actions"][b : b + 1]})
        singles.append((b, s))
    gen = torch.Generator().manual_seed(3)
    for _ in range(30):
        act = random_actions(ob["avail_actions"], gen)
        ob = batch.step(act)
        for b, s in singles:
            s.step(act[b : b + 1])
            for n in _FIELDS:
                assert torch.equal(getattr(batch.st, n)[b : b + 1], getattr(s.st, n)), (b, n)


def test_per_tick_stage_matches():
    """``_run_stage("tick")`` (one tick, as the protocol server steps single loops) on both paths."""
    a = make_batched("MMM", num_envs=2, seed=4, kernel="torch")
    b = make_batched("MMM", num_envs=2, seed=4, kernel="numba")
    a.reset(), b.reset()
    keep = torch.zeros(2, a.n_agents, dtype=torch.int64)
    for k in range(5):
        a._core(keep), b._core(keep)
        for _ in range(3):
            a._run_stage("tick"), b._run_stage("tick")
        _assert_same(a, b, f"tick round {k}")


def test_kernel_option():
    e = make_batched("3m", num_envs=2)
    assert e.kernel == "numba" and e.get_env_info()["kernel"] == "numba"
    assert make_batched("3m", kernel="torch").get_env_info()["kernel"] == "torch"
    assert make_batched("3m", compile=True).kernel == "torch"
    with pytest.raises(ValueError, match="compile=True"):
        make_batched("3m", compile=True, kernel="numba")
    with pytest.raises(ValueError, match=r"kernel must be one of \('auto', 'numba', 'torch'\), got 'cuda'"):
        make_batched("3m", kernel="cuda")


def test_render_data_is_a_copy_under_the_in_place_kernel():
    e = make_batched("3m", num_envs=1, seed=0, kernel="numba")
    e.reset()
    before = e.render_data()
    pos = before["pos"].copy()
    for _ in range(3):
        e.step(torch.tensor([[4, 4, 4]]))
    assert (before["pos"] == pos).all() and not (e.render_data()["pos"] == pos).all()


# ------------------------------------------------------------------ fidelity scenarios in lock step
class _Lockstep:
    """A torch sim (the one the scenario inspects and instruments) with a numba shadow: every
    ``step`` first loads the torch sim's full state into the shadow, steps both, and compares."""

    def __init__(self, main, shadow):
        object.__setattr__(self, "_main", main)
        object.__setattr__(self, "_shadow", shadow)
        object.__setattr__(self, "steps_compared", 0)

    def __getattr__(self, name):
        return getattr(self._main, name)

    def __setattr__(self, name, value):
        setattr(self._main, name, value)

    def step(self, actions):
        self._shadow.load_state_dict(self._main.state_dict())
        ob = self._shadow.step(actions)
        oa = self._main.step(actions)
        _assert_same(self._main, self._shadow, "fidelity scenario")
        _assert_same_out(oa, ob, "fidelity scenario")
        _LOCKSTEP_STEPS[0] += 1
        return oa


_LOCKSTEP_STEPS = [0]


@pytest.fixture
def lockstep(monkeypatch):
    def make(*args, **kw):
        kw.pop("kernel", None)
        return _Lockstep(make_batched(*args, kernel="torch", **kw), make_batched(*args, kernel="numba", **kw))

    monkeypatch.setattr(tf, "make_batched", make)
    _LOCKSTEP_STEPS[0] = 0
    yield
    assert _LOCKSTEP_STEPS[0] > 0, "the scenario never stepped a lock-step sim"


_SCENARIOS = [
    n
    for n in dir(tf)
    if n.startswith("test_")
    and not n.startswith(("test_death_invariants", "test_tables_agree", "test_fidelity_table"))
    and callable(getattr(tf, n))
]


@pytest.mark.parametrize("name", _SCENARIOS)
def test_fidelity_scenarios_bit_equal_through_both_kernels(name, lockstep):
    fn = getattr(tf, name)
    if any(m.name == "slow" for m in getattr(fn, "pytestmark", [])):
        pytest.skip("slow scenario (runs with -m slow in test_fidelity.py)")
    grids = [{}]
    for mark in getattr(fn, "pytestmark", []):
        if mark.name != "parametrize":
            continue
        names = [a.strip() for a in mark.args[0].split(",")] if isinstance(mark.args[0], str) else list(mark.args[0])
        rows = []
        for values in mark.args[1]:
            values = getattr(values, "values", values)
            values = values if len(names) > 1 else (values,)
            rows.append(dict(zip(names, values, strict=True)))
        grids = [{**g, **r} for g in grids for r in rows]
    for kwargs in grids:
        if kwargs.get("device", "cpu") == "cpu":
            fn(**kwargs)


def test_deepcopy_of_a_numba_sim_steps_its_own_state():
    import copy

    a = make_batched("3m", num_envs=2, seed=0, kernel="numba")
    a.reset()
    a.step(torch.ones(2, 3, dtype=torch.int64) * 4)  # caches the kernel's views of a's state
    b = copy.deepcopy(a)
    act = torch.ones(2, 3, dtype=torch.int64) * 2
    b.step(act)
    c = make_batched("3m", num_envs=2, seed=0, kernel="torch")
    c.load_state_dict(a.state_dict())
    a.step(act), c.step(act)
    _assert_same(c, a, "original")
    _assert_same(c, b, "deep copy")


def test_parallel_kernel_keeps_torch_thread_count():
    """The parallel kernels (B >= PARALLEL_MIN_ENVS) leave ``torch.get_num_threads()`` as the simulator set it."""
    from sc2_envs.sim.numba.dynamics import PARALLEL_MIN_ENVS

    e = make_batched("3m", num_envs=PARALLEL_MIN_ENVS, seed=0, kernel="numba", num_threads=1)
    o = e.reset()
    e.step(random_actions(o["avail_actions"], torch.Generator().manual_seed(0)))
    assert torch.get_num_threads() == 1


def test_cell_lookup_uses_each_axis_extent_on_a_non_square_grid():
    """Both paths bound x by the grid's width and y by its height (every SMAC map is 32 x 32, so
    only a non-square grid tells the two apart)."""
    from types import SimpleNamespace

    from sc2_envs.sim.numba.dynamics import cell
    from sc2_envs.sim.rules.dynamics import Dynamics

    W, H = 40, 24
    grid = SimpleNamespace(map_w=W, map_h=H)
    pts = torch.tensor([[x + 0.5, y + 0.5] for x in range(-1, W + 1) for y in range(-1, H + 1)])
    flat, inside = Dynamics._cell(grid, pts)
    want_inside = (pts[:, 0] >= 0) & (pts[:, 0] < W) & (pts[:, 1] >= 0) & (pts[:, 1] < H)
    assert torch.equal(inside, want_inside)
    assert not bool(inside[(pts[:, 0] == 30.5) & (pts[:, 1] == 30.5)].any())  # x inside, y past the height
    for (px, py), f, i in zip(pts.tolist(), flat.tolist(), inside.tolist(), strict=True):
        assert cell(px, py, W, H) == (f, i)
