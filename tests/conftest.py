"""Shared fixtures: one SparkSession per test run (local[2], few shuffle partitions, UI off)."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("KRAFT_REPLAY_SHUFFLE_PARTITIONS", "2")
os.environ.setdefault("KRAFT_REPLAY_DRIVER_MEMORY", "2g")


@pytest.fixture(scope="session")
def spark():
    """The one SparkSession of the test run (Delta-enabled)."""
    from metadata.spark import get_spark
    session = get_spark("local[2]", shuffle_partitions=2)
    yield session
    session.stop()
