"""Fixtures of the integration tests: short SMAC battles with a known ending."""

import dataclasses

import pytest

from sc2_envs.maps import get_map


@pytest.fixture
def short_3m():
    """3m with ``episode_limit=6`` env steps: the armies (spawned about 20 world units apart) have not met
    by then, so every episode with a passive policy ends by the time limit."""
    return dataclasses.replace(get_map("3m"), episode_limit=6)
