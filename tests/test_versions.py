"""The temporal image (``image.temporal.versions``): the image that the recorded versions give at EVERY offset
equals the reference engine's replay to that offset (``replay_to`` from the best snapshot), errors
included in full; recording a log in pieces gives the same versions as one pass."""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from image.errors import ReplayError
from image.image import MetadataImage
from image.parts import row_key
from image.provenance import MetadataProvenance
from image.replay import replay_to
from image.temporal.reads import MemorySource, SnapshotId, image_at
from image.temporal.sharding import plan_for, record_sharded
from image.temporal.versions import (
    VersionLog,
    VersionRecorder,
    key_values,
    record_versions,
    row_state,
    state_row,
    state_values,
)
from metadata.lake.version_tables import PART_COLUMNS, PART_KEYS
from metadata.log.readers import read_log, read_snapshots
from metadata.log.records import LogRecord, Snapshot
from replica.inputs import window_replay
from replica.local_changes import local_changes_json
from tests.kafka_logs import KAFKA_FIXTURES, kafka_fixture_name
from tests.logbuilder import LogBuilder, abort, begin, end
from tests.logstrategies import Body, bodies, snapshot_bodies

ROOT = Path(__file__).resolve().parent.parent


def best_snapshot(snapshots: Sequence[Snapshot], offset: int) -> Snapshot | None:
    return max(
        (s for s in snapshots if s.end_offset <= offset + 1), key=lambda s: (s.end_offset, s.epoch), default=None
    )


def reference(log: Sequence[LogRecord], snapshots: Sequence[Snapshot], offset: int) -> tuple[dict, list[str]]:
    image = replay_to(log, offset, snapshot=best_snapshot(snapshots, offset), lenient=True)
    return image.to_json(), [str(e) for e in image.errors]


def from_versions(
    versions: VersionLog, log: Sequence[LogRecord], snapshots: Sequence[Snapshot], offset: int
) -> tuple[dict, list[str]]:
    source = MemorySource(
        versions, log, [SnapshotId(s.end_offset, s.epoch, s.last_contained_timestamp) for s in snapshots]
    )
    doc, errors = image_at(source, offset, lenient=True)
    return doc, [str(e) for e in errors]


def last_offset(log: Sequence[LogRecord], snapshots: Sequence[Snapshot]) -> int:
    return max([r.offset for r in log] + [s.end_offset - 1 for s in snapshots] + [-1])


def assert_exact(log: Sequence[LogRecord], snapshots: Sequence[Snapshot], offsets: Sequence[int]) -> VersionLog:
    versions = record_versions(log, snapshots)
    assert isinstance(versions, VersionLog)
    for offset in offsets:
        assert from_versions(versions, log, snapshots, offset) == reference(log, snapshots, offset), offset
    return versions


# --- random logs with transactions and snapshots --------------------------------------------------

markers = st.sampled_from([begin(), end(), abort()])
items = st.one_of(bodies, bodies, bodies, markers)


@st.composite
def logs(draw: st.DrawFn) -> tuple[list[LogRecord], list[Snapshot]]:
    """Batches of random records and transaction markers (well placed or not), control batches, and
    snapshots taken at some batch ends: mostly the image at that point, sometimes another image."""
    builder = LogBuilder()
    snapshots: list[Snapshot] = []
    for _ in range(draw(st.integers(1, 14))):
        kind = draw(st.sampled_from(["batch", "batch", "batch", "txn", "control", "snapshot"]))
        if kind == "batch":
            builder.batch(*draw(st.lists(items, min_size=1, max_size=5)))
        elif kind == "txn":  # a well-formed transaction over one or more batches
            inner = draw(st.lists(st.lists(bodies, max_size=3), min_size=1, max_size=3))
            closing = draw(st.sampled_from([end(), abort(), None]))
            first = (
                [begin(), *inner[0]]
                if draw(st.booleans())
                else [*draw(st.lists(bodies, max_size=2)), begin(), *inner[0]]
            )
            rest = inner[1:]
            if closing is None:
                builder.batch(*first)
                for batch in rest:
                    if batch:
                        builder.batch(*batch)
            elif rest:
                builder.batch(*first)
                for batch in rest[:-1]:
                    if batch:
                        builder.batch(*batch)
                builder.batch(*rest[-1], closing, *draw(st.lists(bodies, max_size=2)))
            else:
                builder.batch(*first, closing, *draw(st.lists(bodies, max_size=2)))
        elif kind == "control":
            builder.control("LEADER_CHANGE", epoch=builder.epoch + 1)
        elif builder.records and builder.records[-1].offset + 1 not in {s.end_offset for s in snapshots}:
            at = builder.records[-1].offset
            if draw(st.booleans()):
                image = replay_to(builder.records, at, lenient=True)
            else:  # a snapshot that disagrees with the log: it must replace the state anyway
                other = LogBuilder()
                other.batch(*draw(st.lists(bodies, min_size=1, max_size=6)))
                image = replay_to(other.records, lenient=True)
            snapshots.append(snapshot_of(image, at, builder.epoch, builder.timestamp))
    if draw(st.booleans()) and builder.records:  # a snapshot beyond the end of the log
        image = replay_to(builder.records, lenient=True)
        snapshots.append(snapshot_of(image, builder.records[-1].offset + 3, builder.epoch, builder.timestamp + 5))
    for s in snapshots:
        names = [r.data["name"] for r in s.records if r.type == "TOPIC_RECORD"]
        assume(len(names) == len(set(names)))  # a snapshot cannot carry a name collision
    return builder.records, snapshots


def snapshot_of(image: MetadataImage, last_contained: int, epoch: int, timestamp: int) -> Snapshot:
    records = LogBuilder(epoch=epoch)
    records.control("SNAPSHOT_HEADER", {"version": 0, "lastContainedLogTimestamp": timestamp})
    records.batch(*snapshot_bodies(image))
    records.control("SNAPSHOT_FOOTER", {"version": 0})
    return Snapshot(records.records, last_contained + 1, epoch, timestamp)


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(logs())
def test_versions_give_the_reference_image_and_errors_at_every_offset(log_and_snapshots: Any) -> None:
    log, snapshots = log_and_snapshots
    assert_exact(log, snapshots, range(-1, last_offset(log, snapshots) + 2))


@pytest.mark.parametrize("fixture", KAFKA_FIXTURES, ids=kafka_fixture_name)
def test_versions_match_the_reference_at_every_offset_of_real_kafka_logs(fixture: Path) -> None:
    log, snapshots = read_log(fixture), read_snapshots(fixture)
    assert_exact(log, snapshots, range(-1, last_offset(log, snapshots) + 1))


def test_versions_match_the_reference_at_sampled_offsets_of_the_sample_log() -> None:
    sample = ROOT / "data" / "sample"
    log, snapshots = read_log(sample), read_snapshots(sample)
    last = last_offset(log, snapshots)
    offsets = sorted({*range(-1, last + 1, 613), *(s.end_offset - 1 for s in snapshots), last})
    versions = assert_exact(log, snapshots, offsets)
    assert sum(len(rows) for rows in versions.versions.values()) > 1000


# --- recording in pieces ------------------------------------------------------------------------


def resume_point(versions: VersionLog, log: Sequence[LogRecord], cut: int) -> int:
    """Where a recorder continuing a log recorded up to ``cut - 1`` must restart: ``cut`` (a batch
    start), or the BeginTransactionRecord of a transaction still open there."""
    open_spans = [s.begin for s in versions.spans if s.begin < cut and (s.end is None or s.end >= cut)]
    return min(open_spans, default=cut)


def continue_recording(
    versions: VersionLog, log: Sequence[LogRecord], snapshots: Sequence[Snapshot], restart: int
) -> VersionLog:
    """What a later ingest does: start from the versions visible at ``restart - 1``, record the rest,
    and merge: versions from ``restart`` on are replaced, closed stored versions get their end."""
    keep = {part: [r for r in rows if r["from_offset"] < restart] for part, rows in versions.versions.items()}
    for rows in keep.values():
        for r in rows:
            if r["to_offset"] is not None and r["to_offset"] >= restart:
                r["to_offset"] = None
    stored = {part: [r for r in rows if r["to_offset"] is None] for part, rows in keep.items()}
    image = MetadataImage.from_rows(stored, MetadataProvenance(restart - 1, -1, -1, True))
    sink = VersionLog()
    recorder = VersionRecorder(sink, image, stored)
    rest = [s for s in snapshots if s.end_offset - 1 >= restart]
    for record in (r for r in log if r.offset >= restart):
        while rest and rest[0].end_offset - 1 < record.offset:
            snap = rest.pop(0)
            recorder.load_snapshot(snap.records, snap.end_offset, snap.epoch, snap.last_contained_timestamp)
        recorder.replay(record)
    for snap in rest:
        recorder.load_snapshot(snap.records, snap.end_offset, snap.epoch, snap.last_contained_timestamp)
    recorder.finish()
    ends = {
        (part, tuple(sorted((k, repr(v)) for k, v in c.items() if k != "to_offset"))): c["to_offset"]
        for part, closings in sink.closings.items()
        for c in closings
    }
    merged = VersionLog()
    for part, rows in keep.items():
        for r in rows:
            identity = tuple(sorted((k, repr(r[k])) for k in (*_key_columns(part), "from_offset")))
            end_offset = ends.get((part, identity), r["to_offset"])
            merged.versions[part].append({**r, "to_offset": end_offset})
        merged.versions[part].extend(sink.versions[part])
    merged.rejections = [
        r
        for r in versions.rejections
        if r.snapshot is None
        and (r.error.offset or 0) < restart
        or r.snapshot is not None
        and r.snapshot[0] - 1 < restart
    ] + sink.rejections
    merged.spans = [s for s in versions.spans if s.begin < restart] + sink.spans
    return merged


def _key_columns(part: str) -> tuple[str, ...]:
    from image.parts import PART_KEYS

    return PART_KEYS[part]


def canonical_versions(versions: VersionLog) -> dict[str, list[str]]:
    return {part: sorted(repr(sorted(r.items())) for r in rows) for part, rows in versions.versions.items()}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(logs(), st.lists(st.integers(0, 60), max_size=3))
def test_recording_in_pieces_gives_the_versions_of_one_pass(log_and_snapshots: Any, cuts: list[int]) -> None:
    log, snapshots = log_and_snapshots
    whole = record_versions(log, snapshots)
    starts = sorted({r.batch_base_offset for r in log})
    pieces = sorted({starts[c % len(starts)] for c in cuts if starts and starts[c % len(starts)] > 0})
    first = pieces[0] if pieces else None
    done = record_versions(
        [r for r in log if first is None or r.offset < first],
        [s for s in snapshots if first is None or s.end_offset - 1 < first],
    )
    assert isinstance(done, VersionLog)
    for i, cut in enumerate(pieces):
        upto = pieces[i + 1] if i + 1 < len(pieces) else None
        part_log = [r for r in log if upto is None or r.offset < upto]
        part_snaps = [s for s in snapshots if upto is None or s.end_offset - 1 < upto]
        done = continue_recording(done, part_log, part_snaps, resume_point(done, part_log, cut))
    assert isinstance(whole, VersionLog)
    assert canonical_versions(done) == canonical_versions(whole)
    assert sorted(map(str, done.spans)) == sorted(map(str, whole.spans))
    assert sorted(str(r) for r in done.rejections) == sorted(str(r) for r in whole.rejections)
    for offset in range(-1, last_offset(log, snapshots) + 1):
        assert from_versions(done, log, snapshots, offset) == reference(log, snapshots, offset)


def test_an_open_transaction_at_the_end_shows_the_image_before_its_begin() -> None:
    builder = LogBuilder()
    builder.batch(*[b for b in bodies_example()])
    builder.batch(begin(), ("TOPIC_RECORD", {"name": "late", "topicId": "AAAAAAAAAAAAAAAAAAAABw"}))
    log = builder.records
    versions = assert_exact(log, [], range(-1, log[-1].offset + 1))
    assert [s.end for s in versions.spans] == [None]
    assert not [r for r in versions.versions["topics"] if r["name"] == "late"]


def bodies_example() -> list[Body]:
    from tests.logbuilder import partition, topic, uuid

    return [topic("t", uuid(7)), partition(uuid(7), 0, [1, 2], [1, 2], leader=1)]


# --- sharding -------------------------------------------------------------------------------------


def assert_same_recording(sharded: VersionLog, whole: VersionLog) -> None:
    assert canonical_versions(sharded) == canonical_versions(whole)
    assert sorted(map(str, sharded.spans)) == sorted(map(str, whole.spans))
    assert sorted(repr((str(r.error), r.error.offset, r.snapshot)) for r in sharded.rejections) == sorted(
        repr((str(r.error), r.error.offset, r.snapshot)) for r in whole.rejections
    )


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(logs(), st.sampled_from([1, 2, 7, 64]), st.integers(0, 2**32))
def test_any_sharding_records_what_one_sequential_replay_records(
    log_and_snapshots: Any, shards: int, seed: int
) -> None:
    log, snapshots = log_and_snapshots
    plan = plan_for(log, [s.records for s in snapshots], shards=shards, seed=seed)
    whole = record_versions(log, snapshots)
    assert isinstance(whole, VersionLog)
    assert_same_recording(record_sharded(log, snapshots, plan), whole)


@cache
def recorded(path: Path) -> tuple[list[LogRecord], list[Snapshot], VersionLog]:
    """A log's records, snapshots and the versions one sequential replay records (once per log)."""
    log, snapshots = read_log(path), read_snapshots(path)
    whole = record_versions(log, snapshots)
    assert isinstance(whole, VersionLog)
    return log, snapshots, whole


@pytest.mark.parametrize("shards", [2, 7, 64])
def test_sharding_real_kafka_logs_and_the_sample_changes_nothing(shards: int) -> None:
    """Every real-Kafka log and the sample over 2 and 7 shards; 64 shards (more than any real-Kafka log has
    topics: empty shards, as 7 gives the smaller logs already) over the sample's 119 topics."""
    for path in [*KAFKA_FIXTURES, ROOT / "data" / "sample"] if shards < 64 else [ROOT / "data" / "sample"]:
        log, snapshots, whole = recorded(path)
        plan = plan_for(log, [s.records for s in snapshots], shards=shards, seed=shards)
        assert_same_recording(record_sharded(log, snapshots, plan), whole)
        if shards == 7 and path.name == "sample":  # the plan spreads a real log's topics over the shards
            used = {plan.shard(f"id:{r['topicId']}") for r in whole.versions["topics"]}
            assert len(used) == shards


def test_a_state_gives_its_row_and_its_columns_in_table_order() -> None:
    """What the Spark build writes from a key's state (``state_values``, ``key_values``) is its row's values
    in the versions table's column order, for every part of the sample log's and a real Kafka log's image."""
    for path in [ROOT / "data" / "sample", *KAFKA_FIXTURES[:1]]:
        image = replay_to(read_log(path), lenient=True)
        for part, rows in image.rows().items():
            columns = [name for name, _ in PART_COLUMNS[part]]
            for row in rows:
                key, state = row_key(part, row), row_state(part, row)
                assert state_row(part, key, state) == row
                values = state_values(part, key, state)
                assert [list(v) if isinstance(v, tuple) else v for v in values] == [row[c] for c in columns]
                assert key_values(part, key, state) == tuple(row[k] for k in PART_KEYS[part])
        assert image.rows()["partitions"], path


def _changes_or_error(source: MemorySource, a: int, b: int, scoped: bool) -> Any:
    records, base, opening = window_replay(source, a, b, scoped=scoped)
    try:
        return local_changes_json(records, a, b, base=base, opening=opening)
    except ReplayError as error:
        return f"{type(error).__name__}: {error}"


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(logs(), st.data())
def test_a_window_replayed_with_only_the_partitions_of_its_topic_scope_reports_every_local_change(
    log_and_snapshots: Any, data: st.DataObject
) -> None:
    """``changes`` starts the window's replay from an image holding only the partitions of the topics its
    records reach (``replica.inputs.topic_scope``: the sharding's coupling of topic ids and names): every
    broker's local changes — or the replay error — are those of the whole image."""
    log, snapshots = log_and_snapshots
    source = MemorySource.replay(log, snapshots)
    end = last_offset(log, snapshots)
    a = data.draw(st.integers(-1, end))
    b = data.draw(st.integers(a, end))
    assert _changes_or_error(source, a, b, scoped=True) == _changes_or_error(source, a, b, scoped=False)
