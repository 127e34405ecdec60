"""Numba's on-disk cache of the kernels, invalidated by a change to any module the kernels are built from.

Numba keeps the machine code of a ``cache=True`` function with a stamp of *its own* source file
(``numba.core.caching``: a SHA-256 of the file). A kernel also compiles in the code of the compiled
functions it calls and the module constants it reads, from other files: ``step._STEP_SERIAL`` holds
``numba.dynamics.advance`` and ``numba.features.observe_env``, whose constants come from ``sim.rules.dynamics``,
``sim.rules.features``, ``sim.state``, ``sim.rules.enemy_ai``, ``sim.weapons``. After an edit (or an upgrade)
of one of those files alone, numba would load the stale machine code and play the old rules
without a word. So the kernels' cache entries are stamped with the digest of every source file of
``sc2_envs.sim`` (kernels included) and ``sc2_envs.units`` / ``sc2_envs.smacv2`` as well: any change
there recompiles them (about 35-60 s once; see docs/speed.md, "First use").

:func:`install` puts locators doing that in front of numba's own (for the kernel files only; every
other ``cache=True`` function keeps numba's rule). It must run before the kernel modules are
imported (``sim.numba.__init__`` calls it), because numba picks a function's locator when the
decorator runs.
"""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path

_SIM = Path(__file__).resolve().parents[1]
_KERNELS = _SIM / "numba"  # the compiled mirror (sim.numba)
_PACKAGE = _SIM.parent


def source_files() -> list[Path]:
    """The files whose contents a kernel's machine code may depend on, sorted."""
    files = sorted(_SIM.rglob("*.py")) + [_PACKAGE / "units.py", _PACKAGE / "smacv2.py"]
    return [f for f in files if f.is_file()]


@functools.cache
def sources_digest() -> str:
    """SHA-256 over the relative names and contents of :func:`source_files` (hex; computed once per process)."""
    h = hashlib.sha256()
    for f in source_files():
        h.update(str(f.relative_to(_PACKAGE)).encode())
        h.update(b"\0")
        h.update(f.read_bytes())
        h.update(b"\0")
    return h.hexdigest()


def _is_kernel_file(py_file) -> bool:
    try:
        return Path(py_file).resolve().parent == _KERNELS
    except (OSError, TypeError):
        return False


def _stamped(base):
    """A subclass of numba locator ``base`` that serves the kernel files only, with the digest in the stamp."""

    class Locator(base):
        @classmethod
        def from_function(cls, py_func, py_file):
            if not _is_kernel_file(py_file):
                return None
            return super().from_function(py_func, py_file)

        def get_source_stamp(self):
            return (super().get_source_stamp(), sources_digest())

    Locator.__name__ = Locator.__qualname__ = f"SC2Envs{base.__name__}"
    return Locator


def install() -> None:
    """Put the digest-stamped locators first in numba's search (idempotent)."""
    from numba.core import caching

    have = caching.CacheImpl._locator_classes
    if any(getattr(c, "_sc2_envs", False) for c in have):
        return
    ours = []
    for base in (caching.UserProvidedCacheLocator, caching.InTreeCacheLocator, caching.UserWideCacheLocator):
        loc = _stamped(base)
        loc._sc2_envs = True
        ours.append(loc)
    caching.CacheImpl._locator_classes = ours + list(have)
