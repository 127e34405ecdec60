"""The kernels' numba cache is stamped with every source file they are built from (``sim.runtime.cache``)."""

import numba
import pytest

from sc2_envs.sim.runtime import numba_available

pytestmark = pytest.mark.skipif(numba_available() is not None, reason=f"numba does not import: {numba_available()}")


def _locator(dispatcher):
    return dispatcher._cache._impl._locator


def test_kernel_entries_carry_the_digest_of_the_sources_they_are_built_from():
    from sc2_envs.sim.numba import dynamics, features, features_v2, reset, step
    from sc2_envs.sim.runtime import cache

    names = {f.name for f in cache.source_files()}
    # the fused step compiles in tick's and observe's functions and the constants of these modules
    assert {"step.py", "actions.py", "dynamics.py", "features.py", "state.py", "units.py"} <= names
    for fn in (
        step.step_dispatcher(False),
        step.step_dispatcher(True),
        dynamics.advance,
        features.observe_env,
    ):
        loc = _locator(fn)
        assert type(loc).__name__.startswith("SC2Envs"), type(loc)
        own, digest = loc.get_source_stamp()
        assert digest == cache.sources_digest() and own  # numba's own stamp of the file, then ours
    assert reset and features_v2  # imported: their kernels are stamped the same way


def test_other_cached_functions_keep_numbas_own_locator():
    @numba.njit(cache=True)
    def twice(x):
        return 2 * x

    assert twice(3) == 6
    assert not type(_locator(twice)).__name__.startswith("SC2Envs")


def test_the_digest_changes_with_any_source_file(tmp_path, monkeypatch):
    from sc2_envs.sim.runtime import cache

    pkg = tmp_path / "sc2_envs"
    (pkg / "sim" / "rules").mkdir(parents=True)
    (pkg / "sim" / "numba").mkdir()
    for rel in ("units.py", "smacv2.py", "sim/rules/dynamics.py", "sim/numba/dynamics.py"):
        (pkg / rel).write_text("X = 1\n")
    monkeypatch.setattr(cache, "_SIM", pkg / "sim")
    monkeypatch.setattr(cache, "_PACKAGE", pkg)
    cache.sources_digest.cache_clear()
    try:
        before = cache.sources_digest()
        cache.sources_digest.cache_clear()
        (pkg / "sim" / "rules" / "dynamics.py").write_text("X = 2\n")  # a constant the kernels would read
        assert cache.sources_digest() != before
    finally:
        monkeypatch.undo()
        cache.sources_digest.cache_clear()
