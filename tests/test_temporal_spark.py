"""The temporal image built by ingest (in process, and on Spark): the image its versions give at an offset — read
in process (pyarrow) or on Spark — is the reference engine's replay to that offset, errors included; any sharding
on Spark gives the versions of the build on the driver; ingesting a log in pieces (on either engine) gives the
versions of one ingest."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from generator import generate
from image.replay import replay_to
from image.temporal.build import build_versions
from image.temporal.lake_source import ArrowSource
from image.temporal.reads import image_at
from image.temporal.spark.source import SparkSource
from metadata.lake.files import LakeFiles
from metadata.lake.protocol import Lake
from metadata.lake.version_tables import TABLES
from metadata.log.readers import read_log, read_snapshots
from metadata.log.records import LogRecord, Snapshot
from tests.kafka_logs import KAFKA_FIXTURES, kafka_fixture_name
from tests.lakes import broken_log, make_lake, write_crafted, write_log

pytestmark = pytest.mark.spark


def reference(log: Sequence[LogRecord], snapshots: Sequence[Snapshot], offset: int) -> tuple[dict, list[str]]:
    base = max(
        (s for s in snapshots if s.end_offset <= offset + 1), key=lambda s: (s.end_offset, s.epoch), default=None
    )
    image = replay_to(log, offset, snapshot=base, lenient=True)
    return image.to_json(), [str(e) for e in image.errors]


def assert_images(
    lake: Lake,
    log: Sequence[LogRecord],
    snapshots: Sequence[Snapshot],
    offsets: Sequence[int],
    spark_offsets: Sequence[int] = (),
) -> None:
    arrow = ArrowSource(LakeFiles(lake.uri))
    for offset in offsets:
        doc, errors = image_at(arrow, offset, lenient=True)
        assert (doc, [str(e) for e in errors]) == reference(log, snapshots, offset), offset
    spark = SparkSource(lake)
    for offset in spark_offsets:
        doc, errors = image_at(spark, offset, lenient=True)
        assert (doc, [str(e) for e in errors]) == reference(log, snapshots, offset), offset


def temporal_tables(lake: Lake) -> dict[str, list[str]]:
    """Every temporal-image table of the committed lake, as sorted row texts."""
    files = LakeFiles(lake.uri)
    return {t: sorted(repr(sorted(r.items())) for r in files.read(t).to_pylist()) for t in TABLES}


@pytest.fixture(scope="module")
def crafted(shared_lake) -> tuple[Lake, Path]:
    return shared_lake("crafted", write_crafted)


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> tuple[Lake, Path]:
    root = tmp_path_factory.mktemp("generated")
    generate(23, 4, 6, 3, 400, root / "gen", snapshot_at=900, segment_bytes=65536)
    log = root / "gen" / "__cluster_metadata-0"
    return make_lake(root, [log]), log


def test_crafted_log_every_offset_in_process_and_on_spark(crafted: tuple[Lake, Path]) -> None:
    lake, path = crafted
    log = read_log(path)
    last = log[-1].offset
    assert_images(lake, log, [], range(-1, last + 1), spark_offsets=[-1, 3, 47, 50, 58, last])


def test_broken_log_keeps_every_rejection_in_full(spark, tmp_path: Path) -> None:
    path = write_log(broken_log(), tmp_path / "log")
    lake = make_lake(tmp_path, [path])
    log = read_log(path)
    assert_images(lake, log, [], range(-1, log[-1].offset + 1), spark_offsets=[4, log[-1].offset])
    with pytest.raises(Exception) as raised:  # strict: the first rejection, as the reference engine raises it
        image_at(ArrowSource(LakeFiles(lake.uri)), log[-1].offset)
    with pytest.raises(Exception) as expected:
        replay_to(log, log[-1].offset)
    assert str(raised.value) == str(expected.value)


DEFAULT_FIXTURES = {"3.9.1/rolling-restart", "4.1.1/reassign", "4.1.1/retention", "4.1.1/snapshot-fetch"}
"""The real-Kafka logs compared in the default run: many snapshots, a reassignment, a log cut by retention, a
snapshot fetched from the leader (the others, in the slow tier, add no rule these do not exercise)."""


@pytest.mark.parametrize(
    "fixture",
    [
        p if kafka_fixture_name(p) in DEFAULT_FIXTURES else pytest.param(p, marks=pytest.mark.slow)
        for p in KAFKA_FIXTURES
    ],
    ids=kafka_fixture_name,
)
def test_real_kafka_logs_every_offset(shared_lake, fixture: Path) -> None:
    lake, _ = shared_lake(kafka_fixture_name(fixture), lambda root: fixture / "__cluster_metadata-0")
    log, snapshots = read_log(fixture), read_snapshots(fixture)
    assert_images(lake, log, snapshots, range(-1, log[-1].offset + 1))


def test_generated_log_with_a_snapshot(generated: tuple[Lake, Path]) -> None:
    lake, path = generated
    log, snapshots = read_log(path), read_snapshots(path)
    assert snapshots
    last = log[-1].offset
    ends = [s.end_offset for s in snapshots]
    offsets = sorted({-1, 0, last, last // 3, last // 2, *(e + d for e in ends for d in (-2, -1, 0))})
    assert_images(lake, log, snapshots, offsets, spark_offsets=offsets[:3])


def staged(root: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for kind in ("versions", "closings", "rows"):
        base = os.path.join(root, kind)
        for table in sorted(os.listdir(base)) if os.path.isdir(base) else []:
            rows = pa.concat_tables(
                [pq.read_table(os.path.join(base, table, f)) for f in sorted(os.listdir(os.path.join(base, table)))]
            ).to_pylist()
            out[f"{kind}/{table}"] = sorted(repr(sorted(r.items())) for r in rows)
    return out


@pytest.mark.parametrize("lake_name", [pytest.param("crafted", marks=pytest.mark.slow), "generated"])
def test_any_number_of_shards_and_any_routing_seed_build_the_same_versions(
    request, spark, tmp_path: Path, lake_name: str
) -> None:
    lake, _ = request.getfixturevalue(lake_name)
    lake = Lake(lake.uri, spark)
    state = lake.state()
    results = []
    for shards, seed in ((1, None), (2, 7), (7, 11), (64, 3)):
        root = str(tmp_path / f"s{shards}")
        report, _ = build_versions(lake, state, shards=shards, seed=seed, staging=root)
        assert report.shards == shards
        results.append(staged(root))
    report, _ = build_versions(lake, state, place="driver", staging=str(tmp_path / "driver"))
    assert report.shards == 1
    results.append(staged(str(tmp_path / "driver")))
    with pytest.MonkeyPatch.context() as patch:  # a lake only Spark reaches: plan inputs and reads on Spark
        patch.setattr(Lake, "files", lambda self, state: None)
        build_versions(lake, state, shards=3, seed=5, staging=str(tmp_path / "spark-only"))
    results.append(staged(str(tmp_path / "spark-only")))
    assert all(r == results[0] for r in results[1:])
    assert results[0]["versions/image_partitions"]


@pytest.mark.parametrize(
    "engine, lake_name",
    [
        ("spark", "crafted"),
        pytest.param("spark", "generated", marks=pytest.mark.slow),  # (its snapshot alone, on Spark: -m slow)
        ("local", "crafted"),
        ("local", "generated"),
    ],
)
def test_ingesting_segment_by_segment_gives_the_versions_of_one_ingest(
    request, spark, tmp_path: Path, engine: str, lake_name: str, monkeypatch
) -> None:
    """Each ingest continues the temporal image from where the last one stopped — the crafted log in two
    ingests, the first ending inside a metadata transaction (at 47, between its Begin and End); the generated
    log in three, its snapshot alone in the second — in process, or on Spark with the versions built sharded,
    both equal to one ingest of the whole log in process."""
    whole, path = request.getfixturevalue(lake_name)
    monkeypatch.setenv("KRAFT_REPLAY_BUILD", "spark")  # on Spark, sharded even for these small logs
    segments = sorted(path.glob("*.log"))
    if lake_name == "crafted":
        pieces = [[p for p in segments if int(p.stem) < 48], [p for p in segments if int(p.stem) >= 48]]
    else:
        pieces = [segments[: len(segments) // 2], sorted(path.glob("*.checkpoint")), segments[len(segments) // 2 :]]
    assert all(pieces), pieces
    for piece in pieces:
        make_lake(tmp_path, piece, name="pieces", engine=engine, spark=spark)
    assert temporal_tables(Lake(str(tmp_path / "pieces"))) == temporal_tables(whole)
