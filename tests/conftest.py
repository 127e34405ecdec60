"""Shared pytest fixtures.

Test data lives in ``tests/data`` (committed; see ``tests/data/README.md``), so every clone runs the
SMAC golden-vector and replay tests. A few slow tests also use the larger optional data set named by
the environment variable ``SC2_ENVS_SHARED_DATA`` (a folder holding ``replays/``; see the README) and
skip, saying so, when it is not set.
"""

import os
from pathlib import Path

import pytest

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
