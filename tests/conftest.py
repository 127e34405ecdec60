"""Shared pytest fixtures and helpers.

Test modules import the helpers with ``from conftest import REPO, load_algo, shared_data_path``
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


def shared_data_path() -> Path:
    """Folder of the larger test data (SMAC golden vectors, replays): ``$SC2_ENVS_SHARED_DATA``.

    Defaults to ``shared/data`` beside the repository. Tests that need a file under it must skip,
    with the path in the reason, when it is absent.
    """
    return Path(os.environ.get("SC2_ENVS_SHARED_DATA", REPO.parent / "shared" / "data"))


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


@pytest.fixture(scope="session")
def shared_data_dir() -> Path:
    """:func:`shared_data_path` as a fixture."""
    return shared_data_path()


@pytest.fixture
def short_3m():
    """3m with ``episode_limit=6`` env steps: the armies (spawned about 20 world units apart) have not met
    by then, so every episode with a passive policy ends by the time limit (integration tests)."""
    return dataclasses.replace(get_map("3m"), episode_limit=6)
