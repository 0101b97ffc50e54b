"""The default run's two pytest-xdist workers (``-n 2 --dist loadgroup``, pyproject.toml): the tests of the shared
SparkSession — and those of the background work, which runs beside the session — form one group, run first by one
worker, so that one JVM runs them all; the other tests form a group per module, run by either worker. Without
xdist (``-n 0``) the same order: the Spark group first.

pytest-xdist's own ``loadgroup`` names a test's group in its node id, which pytest 9.2 no longer takes (node ids
come from the collection tree): the groups reach the scheduler of the main process here through a file each worker
writes when it has collected (the same tests in each), in a directory the main process names for the run.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest

SPARK_GROUP = "spark"
GROUPS = "KRAFT_REPLAY_TEST_GROUPS"  # the run's directory of the workers' group files (set by the main process)


def group(item: pytest.Item) -> str:
    """The Spark group, or the test's module."""
    if item.get_closest_marker("spark") or item.get_closest_marker("background"):
        return SPARK_GROUP
    return item.nodeid.split("::")[0]


def order(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The Spark group first; in a worker, every test's group written for the main process's scheduler."""
    items.sort(key=lambda item: group(item) != SPARK_GROUP)
    if hasattr(config, "workerinput") and os.environ.get(GROUPS):
        path = Path(os.environ[GROUPS]) / f"{config.workerinput['workerid']}.json"
        path.with_suffix(".tmp").write_text(json.dumps({item.nodeid: group(item) for item in items}))
        path.with_suffix(".tmp").replace(path)


def distributed(config: pytest.Config) -> bool:
    """Whether this is the main process of a run with pytest-xdist workers."""
    return not hasattr(config, "workerinput") and (config.getoption("numprocesses", None) or 0) > 0


def configure(config: pytest.Config) -> None:
    """In the main process of a run with workers: the directory the workers write their groups to."""
    if distributed(config) and config.getoption("dist", None) == "loadgroup":
        os.environ[GROUPS] = tempfile.mkdtemp(prefix="kraft-replay-test-groups-")


def unconfigure(config: pytest.Config) -> None:
    if distributed(config) and os.environ.get(GROUPS):
        shutil.rmtree(os.environ.pop(GROUPS), ignore_errors=True)


def make_scheduler(config: pytest.Config, log: Any) -> Any:
    """A scheduler that hands each group whole to one worker, groups in collection order (the Spark group
    first)."""
    from xdist.scheduler import LoadScopeScheduling

    class GroupScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            if not hasattr(self, "_groups"):
                files = sorted(Path(os.environ[GROUPS]).glob("*.json"))
                assert files, f"no worker wrote its test groups to {os.environ[GROUPS]}"
                self._groups: dict[str, str] = json.loads(files[0].read_text())
            return self._groups.get(nodeid) or nodeid.split("::")[0]

    return GroupScheduling(config, log)
