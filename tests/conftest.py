"""Shared pytest fixtures."""

import os
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def shared_data_dir() -> Path:
    """The shared data directory: ``$SC2_ENVS_SHARED_DATA``, default ``<repo>/../shared/data``.

    Tests that need a file under it must skip (with the reason) when it is absent.
    """
    default = Path(__file__).resolve().parent.parent.parent / "shared" / "data"
    return Path(os.environ.get("SC2_ENVS_SHARED_DATA", default))
