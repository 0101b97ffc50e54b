"""Shared fixtures: one SparkSession per test run (local[2], few shuffle partitions, UI off), lakes several
modules read (ingested in process: no JVM); the run's two pytest-xdist workers (:mod:`tests.workers`); the count
of real-Kafka tests that ran, printed at the end of the run."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from tests import background, workers

# The run starts hundreds of Python processes (the CLI, an ingest's workers, Spark's Python workers, two pytest-xdist
# workers): they read the modules compiled once into __pycache__ (gitignored), also where PYTHONDONTWRITEBYTECODE is
# set (as on many CI machines), instead of each compiling the package again.
sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
os.environ.setdefault("KRAFT_REPLAY_SHUFFLE_PARTITIONS", "2")
os.environ.setdefault("KRAFT_REPLAY_DRIVER_MEMORY", "2g")
os.environ.setdefault("SPARK_CONF_DIR", str(Path(__file__).resolve().parent / "spark-conf"))

SAMPLE = Path(__file__).resolve().parent.parent / "data" / "sample"


@pytest.fixture(scope="session")
def spark():
    """The one SparkSession of the test run (Delta-enabled)."""
    from metadata.lake.spark import get_spark

    session = get_spark("local[2]", shuffle_partitions=2)
    yield session
    session.stop()


@pytest.fixture(scope="session")
def sample_lake(tmp_path_factory):
    """The lake of one ingest (in process) of the data sample and that ingest's report, shared by the test
    modules that only read it (a re-ingest of the same sample, which adds nothing, is allowed)."""
    from image.temporal.ingest import ingest
    from metadata.lake.protocol import Lake

    location = str(tmp_path_factory.mktemp("lake") / "sample")
    report = ingest([str(SAMPLE)], location, engine="local", progress=False)
    return Lake(location), report


@pytest.fixture(scope="session")
def first_segment_lake(tmp_path_factory) -> Path:
    """The directory of a lake of the sample's first segment (one ingest in process); tests copy it before
    changing it."""
    from image.temporal.ingest import ingest

    location = tmp_path_factory.mktemp("first-segment") / "lake"
    ingest([str(min((SAMPLE / "__cluster_metadata-0").glob("*.log")))], str(location), engine="local", progress=False)
    return location


@pytest.fixture(scope="session")
def shared_lake(tmp_path_factory):
    """``shared_lake(name, write)``: the lake (with its temporal image, ingested in process) of the log directory
    ``write(root)`` writes under a fresh directory and returns, built once per test run for the test modules that
    only read it; returns (lake, log directory)."""
    from metadata.lake.protocol import Lake
    from tests.lakes import make_lake

    built: dict[str, tuple[Lake, Path]] = {}

    def lake(name: str, write) -> tuple[Lake, Path]:
        if name not in built:
            root = tmp_path_factory.mktemp("shared-lake")
            log = write(root)
            built[name] = make_lake(root, [log]), log
        return built[name]

    return lake


# ---------------------------------------------------------------------------- the two workers (tests/workers.py)


def pytest_configure(config: pytest.Config) -> None:
    workers.configure(config)


def pytest_unconfigure(config: pytest.Config) -> None:
    workers.unconfigure(config)


def pytest_xdist_make_scheduler(config: pytest.Config, log):
    if config.getoption("dist", None) == "loadgroup":
        return workers.make_scheduler(config, log)
    return None


# ---------------------------------------------------------------------------- real-Kafka test count
# CI must see whether the real-Kafka comparisons ran or silently skipped: the terminal summary ends
# with one line counting the tests marked ``kafka``, also written as JSON to $KRAFT_REPLAY_KAFKA_SUMMARY.
# A kafka test's reports carry the property ``KAFKA`` (set where the test is collected: in a pytest-xdist
# worker, whose reports reach the main process, which counts them).

KAFKA = "kraft-replay-kafka-test"
_KAFKA_IDS: set[str] = set()
_KAFKA_OUTCOMES: dict[str, str] = {}  # nodeid -> passed | failed | skipped
_KAFKA_SKIPS: dict[str, str] = {}  # nodeid -> skip reason


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests marked ``slow`` run only when the marker expression names ``slow`` (``-m slow``, ``-m "slow and
    not kafka"``): a ``-m`` without it (the fast tier, ``-m "not spark and not kafka"``) leaves them out as the
    default run does. The Spark group first (:func:`tests.workers.order`)."""
    if "slow" not in (config.option.markexpr or ""):
        slow = [item for item in items if item.get_closest_marker("slow")]
        if slow:
            config.hook.pytest_deselected(items=slow)
            items[:] = [item for item in items if not item.get_closest_marker("slow")]
    workers.order(config, items)
    for item in items:
        if item.get_closest_marker("kafka"):
            item.user_properties.append((KAFKA, True))


def pytest_collection_finish(session: pytest.Session) -> None:
    if not hasattr(session.config, "workerinput"):  # one process: the background work starts with the run
        background.start(session.items)


def pytest_runtest_setup(item: pytest.Item) -> None:
    """In a pytest-xdist worker, the background work starts with the first test of the Spark group it runs."""
    if hasattr(item.config, "workerinput") and workers.group(item) == workers.SPARK_GROUP:
        background.start(item.session.items)


def pytest_sessionfinish(session: pytest.Session) -> None:
    background.finish()


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """A test's outcome: failed if any phase failed, skipped if its setup or call skipped, else passed."""
    if (KAFKA, True) not in report.user_properties or _KAFKA_OUTCOMES.get(report.nodeid) == "failed":
        return
    _KAFKA_IDS.add(report.nodeid)
    if report.failed:
        _KAFKA_OUTCOMES[report.nodeid] = "failed"
    elif report.skipped:
        _KAFKA_OUTCOMES[report.nodeid] = "skipped"
        _KAFKA_SKIPS[report.nodeid] = str(report.longrepr[2] if isinstance(report.longrepr, tuple) else report.longrepr)
    elif report.when == "call":
        _KAFKA_OUTCOMES[report.nodeid] = "passed"


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    outcomes = list(_KAFKA_OUTCOMES.values())
    summary = {
        "selected": len(_KAFKA_IDS),
        "ran": outcomes.count("passed") + outcomes.count("failed"),
        "passed": outcomes.count("passed"),
        "failed": outcomes.count("failed"),
        "skipped": outcomes.count("skipped"),
        "skipReasons": sorted(set(_KAFKA_SKIPS.values())),
    }
    line = (
        f"real-Kafka tests (-m kafka): {summary['ran']} ran ({summary['passed']} passed, {summary['failed']} "
        f"failed), {summary['skipped']} skipped, of {summary['selected']} selected"
    )
    terminalreporter.write_sep("-", line)
    for reason in summary["skipReasons"]:
        terminalreporter.write_line(f"  skipped: {reason}")
    target = os.environ.get("KRAFT_REPLAY_KAFKA_SUMMARY")
    if target:
        with open(target, "w") as f:
            json.dump(summary, f)
