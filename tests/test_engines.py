"""One lake, one protocol: an ingest on Spark writes the lake an ingest in process writes — the same tables, the
same rows, the same schemas, protocols and properties — for every real-Kafka log, generated logs and the sample; a
lake started by one engine is continued by the other; the recovery in process undoes what a writer on Spark left
(deletion vectors included); the first Spark start on a machine says one line, Ivy's output going to a log file
(a cold process run while the shared session works: :mod:`tests.background`)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import DeltaTable

from generator import generate
from image.temporal.ingest import ingest
from metadata.lake.check import check_lake, lake_differences
from metadata.lake.protocol import Lake, LakeTransaction
from metadata.lake.state import INGESTS
from metadata.log.readers import read_log, read_snapshots
from tests import background
from tests.kafka_logs import KAFKA_FIXTURES, kafka_fixture_name
from tests.processes import KRAFT_REPLAY, ROOT, environment

pytestmark = pytest.mark.spark

SAMPLE = ROOT / "data" / "sample"
SEGMENTS = sorted((SAMPLE / "__cluster_metadata-0").glob("*.log"))
SNAPSHOT = next((SAMPLE / "__cluster_metadata-0").glob("*.checkpoint"))


def table_shapes(lake: Lake) -> dict[str, tuple]:
    """Per committed table (and ``_ingests``): its Delta schema, protocol and properties."""
    shapes = {}
    for name in [*lake.state().versions, INGESTS]:
        table = DeltaTable(lake.path(name))
        p = table.protocol()
        shapes[name] = (
            table.schema().to_json(),
            (
                p.min_reader_version,
                p.min_writer_version,
                sorted(p.reader_features or []),
                sorted(p.writer_features or []),
            ),
            table.metadata().configuration,
        )
    return shapes


def assert_same(lake: Lake, reference: Lake) -> None:
    """The same rows in every table, the same table shapes, and every check passes."""
    assert lake_differences(lake, reference) == []
    assert table_shapes(lake) == table_shapes(reference)
    report = check_lake(lake)
    assert report.ok, [c for c in report.checks if not c.ok]


def generated_log(root: Path, seed: int, compression: str) -> Path:
    generate(seed, 4, 6, 3, 400, root / "gen", snapshot_at=900, segment_bytes=65536, compression=compression)
    return root / "gen" / "__cluster_metadata-0"


LOGS = {
    **{kafka_fixture_name(p): (lambda root, p=p: p / "__cluster_metadata-0") for p in KAFKA_FIXTURES},
    "generated": lambda root: generated_log(root, 23, "none"),
    "generated-zstd": lambda root: generated_log(root, 5, "zstd"),
    "sample": lambda root: SAMPLE,
}
"""Every log both engines ingest: the real-Kafka fixtures, generated logs (a snapshot half-way, small segments,
compressed or not) and the data sample."""

DEFAULT_TIER = {
    "3.9.1/basic",
    "3.9.1/rolling-restart",
    "4.1.1/reassign",
    "4.1.1/retention",
    "4.1.1/snapshot-fetch",
    "4.3.2/rolling-restart",
    "4.4.0/upgrade",
    "generated-zstd",
    "sample",
}
"""The logs compared in the default run: real-Kafka logs holding, between them, every record type and version of
every fixture (in the log and in snapshots: 3.9's ZooKeeper-migration snapshot records, 4.1's broker and 4.4's
controller unregistrations), a log cut by retention and one whose snapshot was fetched from the leader; a generated
log in zstd batches. The uncompressed generated log (uncompressed like the sample and the real-Kafka logs) and the
other real-Kafka logs — a Spark ingest each, on 2 cores — run in the slow tier (``-m slow``)."""


@pytest.mark.parametrize("name", [n if n in DEFAULT_TIER else pytest.param(n, marks=pytest.mark.slow) for n in LOGS])
def test_both_engines_write_the_same_lake(spark, shared_lake, sample_lake, tmp_path: Path, name: str) -> None:
    """In process and on Spark (the versions built sharded, as a large log's would be): table by table, row by
    row, schema, protocol and properties."""
    write = LOGS[name]
    if name == "sample":
        local, log = sample_lake[0], SAMPLE
    elif name in {kafka_fixture_name(p) for p in KAFKA_FIXTURES}:
        local, log = shared_lake(name, write)
    else:
        log = write(tmp_path)
        ingest([str(log)], str(tmp_path / "local"), engine="local", progress=False)
        local = Lake(str(tmp_path / "local"))
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("KRAFT_REPLAY_BUILD", "spark")
        report = ingest([str(log)], str(tmp_path / "spark"), engine="spark", spark=spark, progress=False)
    assert report.engine == "spark"
    assert_same(Lake(str(tmp_path / "spark")), local)


def test_the_default_tier_holds_every_record_type_and_version_of_the_fixtures() -> None:
    """What :data:`DEFAULT_TIER` stands for: no real-Kafka fixture left to the slow tier holds a record type and
    version (in its log or its snapshots) that the default tier's logs lack."""

    def kinds(path: Path) -> set[tuple[str, int, bool]]:
        log = [(r, False) for r in read_log(path)]
        snapshots = [(r, True) for s in read_snapshots(path) for r in s.records]
        return {(r.control_type or r.type, r.version, in_snapshot) for r, in_snapshot in log + snapshots}

    fixtures = {kafka_fixture_name(p): kinds(p / "__cluster_metadata-0") for p in KAFKA_FIXTURES}
    default = set().union(*(k for name, k in fixtures.items() if name in DEFAULT_TIER))
    assert {name: k - default for name, k in fixtures.items() if k - default} == {}


@pytest.mark.parametrize("first, then", [("local", "spark"), ("spark", "local")])
def test_a_lake_started_by_one_engine_is_continued_by_the_other(spark, sample_lake, tmp_path, first, then):
    """The first segment by one engine, then the snapshot and the rest by the other, then everything again by
    the first (nothing new): the lake of one ingest of the sample."""
    location = str(tmp_path / "lake")
    ingest([str(SEGMENTS[0])], location, engine=first, spark=spark, progress=False)
    second = ingest([str(SNAPSHOT), *map(str, SEGMENTS[1:])], location, engine=then, spark=spark, progress=False)
    assert second.engine == then and second.records_added > 0
    again = ingest([str(SAMPLE)], location, engine=first, spark=spark, progress=False)
    assert again.records_added == 0
    assert lake_differences(Lake(location), sample_lake[0]) == []
    assert check_lake(Lake(location)).ok


def test_the_recovery_in_process_undoes_what_an_ingest_on_spark_left(spark, sample_lake, tmp_path, monkeypatch):
    """An ingest on Spark that ends stored versions with deletion vectors (a MERGE marks rows) dies before its
    commit; the next ingest, in process, restores every table it wrote — delta-rs's RESTORE compares files only by
    path, so the deletion vectors of files both versions hold are checked too — and the lake ends whole."""
    location = str(tmp_path / "lake")
    ingest([str(SEGMENTS[0])], location, engine="local", progress=False)
    ingest([str(SEGMENTS[1])], location, engine="spark", spark=spark, progress=False)  # versions now carry DVs
    lake = Lake(location)
    before = lake.state()

    def crash(self, commit):
        raise RuntimeError("killed before the commit")

    monkeypatch.setattr(LakeTransaction, "commit", crash)
    with pytest.raises(RuntimeError, match="killed"):
        ingest([str(SEGMENTS[2])], location, engine="spark", spark=spark, progress=False)
    monkeypatch.undo()
    assert lake.state() == before

    def masks(name: str, version: int | None = None) -> list[dict]:
        return pa.table(DeltaTable(lake.path(name), version=version).deletion_vectors()).to_pylist()

    marked = [n for n in before.versions if n.startswith("image_") and masks(n) != masks(n, before.versions[n])]
    assert marked  # the dead writer's MERGEs changed deletion vectors of committed files
    ingest([str(SAMPLE)], location, engine="local", progress=False)
    assert lake_differences(lake, sample_lake[0]) == []
    assert check_lake(lake).ok


def run_in_background(env: dict[str, str], root: Path) -> dict[str, Any]:
    """An ingest on Spark in a cold process with no remembered jars (a fresh machine's cache): run while the shared
    session works (:mod:`tests.background`)."""
    cache = root / "cache"
    proc = subprocess.run(
        [*KRAFT_REPLAY, "ingest", str(KAFKA_FIXTURES[0] / "__cluster_metadata-0"), "--lake", str(root / "lake")],
        env=environment(env, spark=True, XDG_CACHE_HOME=str(cache)),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )
    return {"proc": proc, "cache": cache}


@pytest.mark.background
def test_the_first_spark_start_says_one_line_and_logs_the_resolver():
    """With no remembered jars (a fresh machine's cache), an ingest on Spark resolves the Delta connector in a
    child process: one progress line on stderr, Ivy's report in the log it names, the jar paths remembered for
    the next start."""
    side = background.result(__name__)
    proc, cache = side["proc"], side["cache"]
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = [ln for ln in proc.stderr.splitlines() if not ln.startswith("WARNING: Using incubator modules")]
    assert len(lines) == 1 and lines[0].startswith("resolving the Delta Lake connector"), proc.stderr
    log = next((cache / "kraft-replay").glob("delta-*-resolve.log"))
    assert str(log) in lines[0] and "io.delta#delta-spark" in log.read_text()
    jars = next((cache / "kraft-replay").glob("delta-*-jars.txt")).read_text().split()
    assert jars and all(os.path.isfile(j.removeprefix("file://")) for j in jars)
    assert "ingested into" in proc.stdout  # the report for people, on stdout
