"""Shared pytest fixtures and helpers.

Test data lives in ``tests/data`` (committed; see ``tests/data/README.md``), so every clone runs the
SMAC golden-vector and replay tests. A few slow tests also use the larger optional data set named by
the environment variable ``SC2_ENVS_SHARED_DATA`` (a folder holding ``replays/``; see ``tests/data/README.md``) and
skip, saying so, when it is not set. Tests against SMAClite (uoe-agents/smaclite, not on PyPI) run when
it is installed or when ``SMACLITE_PATH`` names a checkout of it (the folder holding the ``smaclite``
package; its runtime dependencies come with the ``peers`` extra), and skip, saying why, otherwise.

Test modules import the helpers with ``from conftest import REPO, TEST_DATA, load_algo``
(pytest puts this folder on ``sys.path``).
"""

from __future__ import annotations

import dataclasses
import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType

import pytest

from sc2_envs.maps import get_map

REPO = Path(__file__).resolve().parents[1]
"""The repository root."""

# kernel="auto" compiles the numba step in the foreground here (it is on in the background for users,
# sim.runtime.warmup): a test of the numba path must not run on the torch path while a compile is under
# way. Set before any simulator is made; child processes of the tests inherit it.
os.environ["SC2_ENVS_BACKGROUND_COMPILE"] = "0"

# The scripts the tests start (``python algos/happo_gnn.py``, ``python -m sc2_envs...``) import this
# checkout's packages, not whichever checkout pip's editable install points at: a test of a branch in
# another worktree would otherwise run main's code.
os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)


def load_algo(name: str, folder: str = "algos") -> ModuleType:
    """Import the script ``<folder>/<name>.py`` as module ``name`` (once; later calls return the same module).

    The module is registered in ``sys.modules`` before it runs, because dataclasses with postponed
    annotations (``from __future__ import annotations``) look their module up there.
    """
    mod = sys.modules.get(name)
    path = REPO / folder / f"{name}.py"
    if mod is not None and Path(getattr(mod, "__file__", "")).resolve() == path.resolve():
        return mod
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


TEST_DATA = Path(__file__).resolve().parent / "data"


def shared_data_root() -> Path | None:
    """``$SC2_ENVS_SHARED_DATA`` as a path, or None when the variable is unset or empty."""
    root = os.environ.get("SC2_ENVS_SHARED_DATA")
    return Path(root) if root else None


@pytest.fixture(scope="session")
def test_data_dir() -> Path:
    """The committed test data folder, ``tests/data``."""
    return TEST_DATA


@pytest.fixture(scope="session")
def shared_data_dir() -> Path:
    """The optional large data set ``$SC2_ENVS_SHARED_DATA``; skips the test when it is not set."""
    root = shared_data_root()
    if root is None:
        pytest.skip("needs the optional large data set: set SC2_ENVS_SHARED_DATA (see tests/data/README.md)")
    return root


@pytest.fixture(scope="session")
def smaclite_module() -> ModuleType:
    """SMAClite, imported as installed or from ``$SMACLITE_PATH`` (``benchmarks/peers.py``
    ``import_smaclite``); skips the test with the reason when it is not importable."""
    mod, reason = load_algo("peers", folder="benchmarks").import_smaclite()
    if mod is None:
        pytest.skip(reason)
    return mod


@pytest.fixture
def short_3m():
    """3m with ``episode_limit=6`` env steps: the armies (spawned about 20 world units apart) have not met
    by then, so every episode with a passive policy ends by the time limit (integration tests)."""
    return dataclasses.replace(get_map("3m"), episode_limit=6)
