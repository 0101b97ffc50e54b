"""Ingest into Delta (in process: the engine of a lake on a local path): counts, idempotence, increments, atomic
failure, dump-log text, CLI. (An ingest on Spark is compared with one in process in tests/test_engines.py.)"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from deltalake import DeltaTable
from typer.testing import CliRunner

from cli.main import app
from cli.render import iso_time
from image.temporal.lake_source import ArrowSource
from metadata.lake import tables
from metadata.lake.check import check_lake
from metadata.lake.files import LakeFiles
from metadata.lake.ingest import IngestError, ingest
from metadata.lake.protocol import Lake, LakeTransaction
from metadata.log.schema import MessageSpec, Versions, spec_by_type_name
from metadata.log.schema.releases import kafka_release
from tests.logbuilder import (
    append_batch,
    broker_change,
    cordoned,
    encoded,
    register_broker,
    unregister_controller,
    uuid,
)
from tests.test_render import EPOCH_MS, more_line, record_lines, table_rows

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "data" / "sample"
REPORT = json.loads((SAMPLE / "generate-report.json").read_text())
KAFKA_BASIC = ROOT / "tests" / "fixtures" / "kafka" / "4.1.1" / "basic"


def table(lake: Lake | str, name: str) -> pa.Table:
    """Table ``name`` of the lake's committed state, read in process."""
    return LakeFiles(lake if isinstance(lake, str) else lake.uri).read(name)


def distinct_offsets(rows: pa.Table) -> int:
    return len(pc.unique(rows["offset"]))


def test_sample_ingest_has_exactly_the_generator_counts(sample_lake):
    lake, report = sample_lake
    info = ArrowSource(LakeFiles(lake.uri)).log_info()
    assert info.records == REPORT["metadata_records"]
    assert info.control_records == REPORT["control_records"]
    assert info.by_type == REPORT["by_type"]
    assert (info.first_offset, info.last_offset) == (REPORT["first_offset"], REPORT["last_offset"])
    assert (info.first_timestamp, info.last_timestamp) == (REPORT["first_timestamp"], REPORT["last_timestamp"])
    assert info.missing_offsets == 0
    snap = REPORT["snapshots"][0]
    assert [(s.end_offset, s.epoch, s.records) for s in info.snapshots] == [
        (snap["end_offset"], snap["epoch"], snap["records"])
    ]
    assert report.records_added == REPORT["total_records"]


def test_typed_tables_hold_every_record_with_defaults_applied(sample_lake):
    lake, _ = sample_lake
    changes = table(lake, "partition_changes").to_pylist()
    assert len(changes) == REPORT["by_type"]["PARTITION_CHANGE_RECORD"]
    # an ISR-only change keeps leader = -2 ("no change") and null replicas ("unchanged")
    assert any(r["isr"] is not None and r["leader"] == -2 and r["replicas"] is None for r in changes)
    assert table(lake, "topics").num_rows == REPORT["by_type"]["TOPIC_RECORD"]
    brokers = table(lake, "broker_changes")
    assert brokers.num_rows == REPORT["by_type"].get("BROKER_REGISTRATION_CHANGE_RECORD", 0) + REPORT["by_type"].get(
        "UNREGISTER_BROKER_RECORD", 0
    )
    assert set(table(lake, "transaction_markers")["type"].to_pylist()) == {
        "BEGIN_TRANSACTION_RECORD",
        "END_TRANSACTION_RECORD",
        "ABORT_TRANSACTION_RECORD",
    }


def test_reingest_adds_nothing(sample_lake):
    lake, _ = sample_lake
    before = lake.state()
    again = ingest([str(SAMPLE)], lake.uri, progress=False)
    assert again.records_added == 0 and again.snapshot_records_added == 0
    # every segment and the snapshot hold only what the lake holds: none is decoded again (the last segment's
    # batch headers say so)
    files = sorted((SAMPLE / "__cluster_metadata-0").glob("*.log")) + sorted(SAMPLE.rglob("*.checkpoint"))
    assert again.bytes_skipped == sum(p.stat().st_size for p in files) and again.bytes_read == 0
    assert again.records_decoded == 0
    after = lake.state()
    assert after.seq == before.seq + 1 and after.versions == before.versions
    assert table(lake, "records").num_rows == REPORT["total_records"]


def test_a_growing_last_segment_is_decoded_from_its_first_new_batch(tmp_path):
    """The next ingest of a log whose last segment grew decodes only the batches beyond the stored offsets (a live
    log's growth, an ``ingest --follow`` round)."""
    segment = sorted((SAMPLE / "__cluster_metadata-0").glob("*.log"))[0]
    live = tmp_path / "__cluster_metadata-0"
    live.mkdir()
    data = segment.read_bytes()
    cut = len(data) // 2
    from metadata.log.readers import discover, first_batch_after

    boundary = first_batch_after(discover(segment)[0], 0, None, 100)
    assert boundary is not None and 0 < boundary < cut
    (live / segment.name).write_bytes(data[:boundary])
    first = ingest([str(live)], str(tmp_path / "lake"), progress=False)
    (live / segment.name).write_bytes(data)
    second = ingest([str(live)], str(tmp_path / "lake"), progress=False)
    assert second.bytes_skipped == boundary and second.bytes_read == len(data) - boundary
    assert (
        second.records_decoded
        == second.records_added
        == int(sorted(SAMPLE.rglob("*.log"))[1].stem) - (first.high_water_mark + 1)
    )
    records = table(str(tmp_path / "lake"), "records")
    assert records.num_rows == distinct_offsets(records) == second.high_water_mark + 1


def test_the_next_ingest_of_a_grown_segment_hops_from_the_batch_the_last_one_marked(tmp_path, monkeypatch):
    """An ingest records the last whole batch of each segment it read to the end (``_ingests.segment_marks``); the
    next ingest of that segment grown, or of a copy of it elsewhere, finds that batch at that position and hops
    over batch headers from there only. A segment truncated since (no such batch there) is read as before: its
    headers hopped over from the start."""
    import metadata.lake.ingest as lake_ingest
    from metadata.log.readers import BatchMark, batch_mark, discover, first_batch_after

    segment = sorted((SAMPLE / "__cluster_metadata-0").glob("*.log"))[0]
    data = segment.read_bytes()
    boundary = first_batch_after(discover(segment)[0], 0, None, 100)
    assert boundary is not None and 0 < boundary < len(data) // 2
    live = tmp_path / "live" / "__cluster_metadata-0"
    live.mkdir(parents=True)
    (live / segment.name).write_bytes(data[:boundary])
    location = str(tmp_path / "lake")
    first = ingest([str(live)], location, progress=False)
    marks = Lake(location).state().segment_marks
    assert list(marks) == [str(live / segment.name)]
    mark = BatchMark(**marks[str(live / segment.name)])
    assert mark.last_offset == first.high_water_mark and mark.position < boundary  # the last batch
    assert batch_mark(discover(live / segment.name)[0], mark.position) == mark
    assert batch_mark(discover(live / segment.name)[0], mark.position + 1) is None  # not a batch boundary

    hops: list[int] = []  # where each walk over batch headers starts

    def watched(walk: Callable, at: int) -> Callable:
        return lambda *args: hops.append(args[at]) or walk(*args)

    for name, at in (("plan_ranges", 2), ("first_batch_after", 1), ("last_batch", 1)):
        monkeypatch.setattr(lake_ingest, name, watched(getattr(lake_ingest, name), at))
    copy = tmp_path / "copy" / "__cluster_metadata-0"
    copy.mkdir(parents=True)
    (copy / segment.name).write_bytes(data)
    second = ingest([str(copy)], location, progress=False)
    assert hops and min(hops) == mark.position
    assert second.bytes_skipped == boundary and second.bytes_read == len(data) - boundary
    assert (
        second.records_added
        == second.records_decoded
        == int(sorted(SAMPLE.rglob("*.log"))[1].stem) - (first.high_water_mark + 1)
    )
    newer = BatchMark(**Lake(location).state().segment_marks[str(copy / segment.name)])
    assert newer.position > mark.position and newer.last_offset == second.high_water_mark

    hops.clear()
    (copy / segment.name).write_bytes(data[: newer.position])  # truncated below its mark: read as before
    third = ingest([str(copy)], location, progress=False)
    assert min(hops) == 0 and third.records_added == 0 and third.bytes_read == 0
    assert third.bytes_skipped == newer.position
    records = table(location, "records")
    assert records.num_rows == distinct_offsets(records) == second.high_water_mark + 1


def test_dump_selects_offsets_and_types(sample_lake):
    lake, _ = sample_lake
    rows = list(ArrowSource(LakeFiles(lake.uri)).dump(100, 200, ["PARTITION_CHANGE_RECORD"]))
    assert rows and all(100 <= r.offset <= 200 and r.type == "PARTITION_CHANGE_RECORD" for r in rows)
    assert all("partitionId" in r.data and "topicId" in r.data for r in rows)


def test_incremental_ingest_adds_only_new_offsets_and_snapshot_plus_tail_is_valid(tmp_path):
    log_dir = SAMPLE / "__cluster_metadata-0"
    segments = sorted(log_dir.glob("*.log"))
    location = str(tmp_path / "lake")
    # the snapshot and the segments after it: a valid history without the offsets before the snapshot
    first = ingest(
        [str(s) for s in segments[2:]] + [str(next(log_dir.glob("*.checkpoint")))],
        location,
        progress=False,
    )
    assert first.first_offset == int(segments[2].stem)
    second = ingest([str(log_dir)], location, progress=False)
    assert second.records_added == REPORT["total_records"] - first.records_added
    # offsets below the stored ones are decoded and added; segments 2 and 3 lie inside them and are skipped, and
    # the stored snapshot is not read again
    snapshot = next(log_dir.glob("*.checkpoint"))
    assert second.bytes_skipped == sum(p.stat().st_size for p in [*segments[2:], snapshot])
    assert second.snapshot_records_added == 0
    assert table(location, "records").num_rows == REPORT["total_records"]


def test_the_data_files_counted_from_a_young_tables_log_are_those_delta_rs_lists(first_segment_lake, tmp_path):
    """What decides whether an ingest compacts a table (``LocalStore.data_files``): read from the commit files of a
    table without a checkpoint — through appends, MERGEs and rewinds of the temporal image, a DELETE, an OPTIMIZE —
    the same count as delta-rs's file list; a table with a checkpoint is counted by delta-rs."""
    from image.temporal.ingest import ingest as ingest_with_image

    location = tmp_path / "lake"
    shutil.copytree(first_segment_lake, location)
    log_dir = SAMPLE / "__cluster_metadata-0"
    ingest_with_image([str(s) for s in sorted(log_dir.glob("*.log"))[2:]], str(location), progress=False)
    ingest_with_image([str(log_dir)], str(location), progress=False)  # before the stored offsets: a rewind
    lake = Lake(str(location))
    DeltaTable(lake.store.path("configs")).delete("resource_type = 2")
    lake.optimize(["records", "topics"])
    DeltaTable(lake.store.path("partitions")).create_checkpoint()
    names = sorted(lake.state().versions)
    counts = {n: lake.data_files(n) for n in names}
    assert counts == {n: len(DeltaTable(lake.store.path(n)).file_uris()) for n in names}
    assert counts["records"] == 1 and counts["image_partitions"] > 1 and lake.data_files("no_such_table") == 0


def test_a_snapshot_found_twice_is_stored_once_from_its_first_path(tmp_path):
    snapshot = next((SAMPLE / "__cluster_metadata-0").glob("*.checkpoint"))
    copy = tmp_path / "b-copy" / snapshot.name
    copy.parent.mkdir()
    shutil.copy(snapshot, copy)
    location = str(tmp_path / "lake")
    report = ingest([str(copy), str(snapshot)], location, progress=False)
    assert report.snapshots == [snapshot.stem]
    rows = table(location, "snapshots").to_pylist()
    assert len(rows) == len({r["position"] for r in rows}) == report.snapshot_records_added
    assert {r["source_file"] for r in rows} == {min(str(copy), str(snapshot))}


def test_failed_ingest_leaves_the_lake_unchanged(first_segment_lake, tmp_path):
    """A corrupt batch among what the lake lacks stops the ingest before the lake is touched."""
    shutil.copytree(first_segment_lake, tmp_path / "lake")
    lake = Lake(str(tmp_path / "lake"))
    damaged_dir = tmp_path / "__cluster_metadata-0"
    shutil.copytree(SAMPLE / "__cluster_metadata-0", damaged_dir)
    last = sorted(damaged_dir.glob("*.log"))[-1]
    raw = bytearray(last.read_bytes())
    raw[200] ^= 0x10
    last.write_bytes(bytes(raw))
    before = lake.state()
    with pytest.raises(IngestError, match=rf"{last.name}.*byte \d+, offset \d+: CRC mismatch"):
        ingest([str(damaged_dir)], lake.uri, progress=False)
    assert lake.state() == before
    assert not (Path(lake.uri) / "_staging").exists()  # the staged records are gone too


def test_interrupted_ingest_is_invisible_and_the_rerun_does_not_duplicate(tmp_path, monkeypatch):
    segments = sorted((SAMPLE / "__cluster_metadata-0").glob("*.log"))
    location = str(tmp_path / "lake")
    ingest([str(segments[0])], location, progress=False)
    lake = Lake(location)
    before = lake.state()

    def crash(self, commit):
        raise RuntimeError("killed before the commit")

    monkeypatch.setattr(LakeTransaction, "commit", crash)
    with pytest.raises(RuntimeError, match="killed"):
        ingest([str(segments[1])], location, progress=False)
    monkeypatch.undo()
    assert lake.state() == before
    assert lake.current_version("records") > before.versions["records"]  # the torn write is on disk ...
    assert table(lake, "records").num_rows == before.high_water_mark + 1  # ... but nobody reads it
    rerun = ingest([str(segments[0]), str(segments[1])], location, progress=False)
    assert rerun.records_added == int(segments[2].stem) - int(segments[1].stem)
    records = table(lake, "records")
    assert records.num_rows == distinct_offsets(records) == int(segments[2].stem)


def test_tables_an_interrupted_first_ingest_created_are_deleted_by_the_rerun(tmp_path, monkeypatch):
    """Nothing commits the first ingest: its tables are on disk but no state names them; the rerun
    deletes them and creates them again (no rows twice)."""
    location = str(tmp_path / "lake")

    def crash(self, commit):
        raise RuntimeError("killed before the commit")

    monkeypatch.setattr(LakeTransaction, "commit", crash)
    with pytest.raises(RuntimeError, match="killed"):
        ingest([str(SAMPLE)], location, progress=False)
    monkeypatch.undo()
    lake = Lake(location)
    assert not lake.exists() and lake.current_version("records") == 0
    rerun = ingest([str(SAMPLE)], location, progress=False)
    assert rerun.records_added == REPORT["total_records"]
    assert lake.current_version("records") == 0  # a new table, not a second version of the torn one
    records = table(lake, "records")
    assert records.num_rows == distinct_offsets(records) == REPORT["total_records"]
    topics = table(lake, "topics")
    assert topics.num_rows == distinct_offsets(topics) == REPORT["by_type"]["TOPIC_RECORD"]
    properties = DeltaTable(lake.path("records")).metadata().configuration
    assert properties["delta.dataSkippingStatsColumns"] == "offset,timestamp"


def test_dump_log_text_ingest_equals_binary_ingest_of_a_real_kafka_log(tmp_path):
    binary = ingest([str(KAFKA_BASIC / "__cluster_metadata-0")], str(tmp_path / "bin"), progress=False)
    text = ingest([str(KAFKA_BASIC / "dump-log.txt")], str(tmp_path / "txt"), progress=False)
    assert (text.records_decoded, text.by_type, text.control_records) == (
        binary.records_decoded,
        binary.by_type,
        binary.control_records,
    )
    cols = [
        "offset",
        "batch_base_offset",
        "batch_last_offset",
        "batch_leader_epoch",
        "timestamp",
        "type",
        "version",
        "payload",
        "control_type",
    ]
    a, b = (table(str(tmp_path / name), "records").select(cols).sort_by("offset") for name in ("bin", "txt"))
    assert a.equals(b)


def test_cli_ingest_log_info_and_dump(sample_lake, tmp_path):
    lake, _ = sample_lake
    runner = CliRunner()
    info = runner.invoke(app, ["log-info", "--lake", lake.uri, "--json"])
    assert info.exit_code == 0, info.output
    data = json.loads(info.stdout)
    assert {k: data[k] for k in ("first_offset", "last_offset", "records", "control_records")} == {
        "first_offset": REPORT["first_offset"],
        "last_offset": REPORT["last_offset"],
        "records": REPORT["metadata_records"],
        "control_records": REPORT["control_records"],
    }
    assert data["by_type"] == REPORT["by_type"] and data["snapshots"]
    out = runner.invoke(app, ["dump", "--lake", lake.uri, "--from-offset", "10", "--to-offset", "40", "--json"])
    lines = [json.loads(x) for x in out.stdout.splitlines()]
    assert lines and set(lines[0]) == {"offset", "timestamp", "type", "version", "data"}
    assert all(10 <= x["offset"] <= 40 for x in lines)
    bad = tmp_path / "00000000000000000000.log"
    bad.write_bytes(b"\x00" * 17 + b"garbage that is not a batch at all" * 3)
    res = runner.invoke(app, ["ingest", str(bad), "--lake", str(tmp_path / "new-lake")])
    assert res.exit_code == 1
    assert res.stderr.count("\n") == 1 and "error:" in res.stderr and str(bad) in res.stderr
    missing = runner.invoke(app, ["log-info", "--lake", str(tmp_path / "nowhere")])
    assert missing.exit_code == 1 and "no kraft-replay lake" in missing.stderr


def test_cli_log_info_and_dump_for_people(sample_lake):
    """Without --json: times as ISO-8601 (never epoch ms), the first records and how many more."""
    lake, _ = sample_lake
    runner = CliRunner()
    info = runner.invoke(app, ["log-info", "--lake", lake.uri]).stdout
    rows = table_rows(info)
    assert ["first time", iso_time(REPORT["first_timestamp"])] in rows
    assert ["last time", iso_time(REPORT["last_timestamp"])] in rows
    assert all([t, f"{n:,}"] in rows for t, n in REPORT["by_type"].items())
    assert not EPOCH_MS.search(info)
    shown = runner.invoke(app, ["dump", "--lake", lake.uri, "--from-offset", "10", "--to-offset", "40"]).stdout
    assert shown.startswith("31 records, the first 10 shown\n") and more_line(21) in shown
    assert [int(line.split()[0]) for line in record_lines(shown)] == list(range(10, 20))
    assert not EPOCH_MS.search(shown)
    every = runner.invoke(app, ["dump", "--lake", lake.uri, "--from-offset", "10", "--to-offset", "40", "--all"]).stdout
    assert [int(line.split()[0]) for line in record_lines(every)] == list(range(10, 41)) and "more" not in every
    five = runner.invoke(app, ["dump", "--lake", lake.uri, "--type", "TOPIC_RECORD", "--limit", "5"]).stdout
    topics = REPORT["by_type"]["TOPIC_RECORD"]
    assert five.startswith(f"{topics} records, the first 5 shown\n") and more_line(topics - 5) in five
    assert [line.split()[2] for line in record_lines(five)] == ["TOPIC_RECORD"] * 5


@pytest.mark.spark
def test_a_lake_named_through_a_symlink_reads_like_its_real_path(spark, tmp_path):
    """delta-rs names a table's files by its canonical location (symlinks resolved): the deletion vectors that
    an incremental ingest's MERGEs on Spark leave in the versions tables still apply when the lake is named
    through a symlink (they were silently ignored, and closed versions read as current)."""
    from image.temporal.ingest import ingest as ingest_with_versions

    segments = sorted((SAMPLE / "__cluster_metadata-0").glob("*.log"))
    location = tmp_path / "lake"
    ingest_with_versions([str(segments[0])], str(location), engine="local", progress=False)
    ingest_with_versions([str(segments[1])], str(location), engine="spark", spark=spark, progress=False)
    link = tmp_path / "link"
    link.symlink_to(location)
    real, linked = LakeFiles(str(location)), LakeFiles(str(link))
    names = sorted(real.state().versions)
    assert any(pa.table(DeltaTable(str(location / n)).deletion_vectors()).num_rows for n in names if "image_" in n)

    def rows(files: LakeFiles, name: str) -> list[str]:
        return sorted(repr(sorted(r.items())) for r in files.read(name).to_pylist())

    for name in names:
        assert rows(linked, name) == rows(real, name), name


def _typed_tables_of(line: str) -> Callable[[str], MessageSpec]:
    """The record specs as a kraft-replay whose schema was Kafka ``line``'s saw them: its versions, its fields (none
    for a type it did not know)."""
    release = kafka_release(line)

    def spec(type_name: str) -> MessageSpec:
        current = spec_by_type_name(type_name)
        versions = release.records.get(current.key, Versions(1, 0))
        fields = tuple(f for f in current.fields if f.versions.low <= versions.high)
        return replace(current, valid_versions=versions, fields=fields)

    return spec


def test_a_lake_made_with_an_older_schema_takes_the_columns_of_newer_fields(tmp_path, monkeypatch):
    """A lake whose typed tables were made with the schema of Kafka 4.1 (no CordonedLogDirs) ingests a Kafka 4.3+
    RegisterBrokerRecord v4 and BrokerRegistrationChangeRecord v3, and 4.4's UnregisterControllerRecord: the new
    columns join the typed tables, null in the rows before; the controllers table holds both controller records."""
    log = tmp_path / "log"
    shutil.copytree(KAFKA_BASIC, log)
    location = str(tmp_path / "lake")
    tables.table_schemas.cache_clear()
    with monkeypatch.context() as older:
        older.setattr(tables, "spec_by_type_name", _typed_tables_of("4.1"))
        ingest([str(log)], location, progress=False)
    tables.table_schemas.cache_clear()  # the schemas of the older specs are not this kraft-replay's
    before = LakeFiles(location).read("broker_registrations")
    assert "cordoned_log_dirs" not in DeltaTable(f"{location}/broker_registrations").schema().to_arrow().names
    first = append_batch(
        log / "__cluster_metadata-0",
        [
            encoded(*cordoned(register_broker(9, 900), [uuid(0xD1)])),
            encoded(*cordoned(broker_change(9, 900), [])),
            encoded(*unregister_controller(3000)),
        ],
    )
    ingest([str(log)], location, progress=False)
    files = LakeFiles(location)
    registrations = {r["offset"]: r["cordoned_log_dirs"] for r in files.read("broker_registrations").to_pylist()}
    assert len(registrations) == before.num_rows + 1
    assert registrations.pop(first) == [uuid(0xD1)] and set(registrations.values()) == {None}
    change = next(r for r in files.read("broker_changes").to_pylist() if r["offset"] == first + 1)
    assert (change["version"], change["broker_id"], change["cordoned_log_dirs"]) == (3, 9, [])
    controllers = next(r for r in files.read("controllers").to_pylist() if r["offset"] == first + 2)
    assert (controllers["type"], controllers["controller_id"]) == ("UNREGISTER_CONTROLLER_RECORD", 3000)
    assert controllers["end_points"] is None
    typed = next(c for c in check_lake(Lake(location), ["typed"]).checks if c.name == "typed")
    assert typed.ok, typed.problems


def test_a_build_worker_makes_exactly_the_records_its_shard_replays(tmp_path):
    """A build worker's log (``shard_log``: partition records routed by their typed table's ``topic_id``, their
    payloads never parsed by another shard) is exactly what routing the whole log gives its shard, in order."""
    from image.loader import snapshots_to_load
    from image.temporal.build import shard_log
    from image.temporal.ingest import ingest as ingest_with_versions
    from image.temporal.sharding import ShardPlan, routed_to
    from image.temporal.staged import plan_inputs
    from tests.lakes import write_crafted

    ingest_with_versions([str(write_crafted(tmp_path))], str(tmp_path / "lake"), progress=False)
    lake = Lake(str(tmp_path / "lake"))
    state = lake.committed()
    source = ArrowSource(LakeFiles(lake.uri, state))
    whole = source.log_records(0, state.high_water_mark)
    weights, edges = plan_inputs(lake, state, -1, snapshots_to_load(source.snapshots(), -1), None)
    for shards in (1, 2, 3):
        plan = ShardPlan.make(weights, edges, shards)
        logs = [list(shard_log(LakeFiles(lake.uri, state), state, -1, plan, s)) for s in range(shards)]
        assert logs == [[r for r in whole if routed_to(r, plan, s)] for s in range(shards)]
        changes = [r.offset for log in logs for r in log if r.type == "PARTITION_CHANGE_RECORD"]
        assert sorted(changes) == [r.offset for r in whole if r.type == "PARTITION_CHANGE_RECORD"] != []


def test_a_large_build_in_process_is_sharded_over_worker_processes(tmp_path, monkeypatch):
    """A build in process from the empty image beyond ``PARALLEL_BUILD_OFFSETS`` replays one shard per core in
    worker processes: the same versions, rejections and provenance as one sequential replay (the crafted log,
    every part and the delta-boundary quirks)."""
    import image.temporal.build
    from image.temporal.ingest import ingest as ingest_with_versions
    from metadata.lake.version_tables import TABLES
    from tests.lakes import write_crafted

    log = write_crafted(tmp_path)
    ingest_with_versions([str(log)], str(tmp_path / "one"), progress=False)
    monkeypatch.setattr(image.temporal.build, "PARALLEL_BUILD_OFFSETS", 0)
    monkeypatch.setattr("os.cpu_count", lambda: 2)
    shards = []
    build_report = image.temporal.build.build_report
    monkeypatch.setattr(image.temporal.build, "build_report", lambda *a: shards.append(a[1]) or build_report(*a))
    report = ingest_with_versions([str(log)], str(tmp_path / "sharded"), progress=False)
    assert report.seq == 1 and shards == [2]

    def versions(name: str) -> dict[str, list[str]]:
        files = LakeFiles(str(tmp_path / name))
        return {t: sorted(repr(sorted(r.items())) for r in files.read(t).to_pylist()) for t in TABLES if files.has(t)}

    assert versions("sharded") == versions("one")


def test_a_build_keeps_its_open_versions_apart_and_the_next_ingest_rewrites_only_their_files(tmp_path):
    """A versions table's first write (the whole build) and its compaction put the open versions in files of their
    own: the MERGE of a later ingest ending some of them (``t.to_offset IS NULL``) skips the closed versions' files
    by their statistics, so they stay in the table, not rewritten; the rows are what they were."""
    from image.temporal.build import COMPACTORS
    from image.temporal.ingest import ingest as ingest_with_versions
    from metadata.lake.version_tables import PART_TABLES

    location = str(tmp_path / "lake")

    def files() -> dict[str, dict[str, tuple[int, int]]]:
        """Per versions table, its files: (rows, open versions)."""
        out = {}
        for name in PART_TABLES.values():
            if LakeFiles(location).has(name):
                adds = pa.table(DeltaTable(f"{location}/{name}").get_add_actions(flatten=True))
                out[name] = dict(
                    zip(
                        adds["path"].to_pylist(),
                        zip(adds["num_records"].to_pylist(), adds["null_count.to_offset"].to_pylist()),
                    )
                )
        return out

    def apart(tables: dict[str, dict[str, tuple[int, int]]]) -> bool:
        return all(nulls in (0, rows) for table in tables.values() for rows, nulls in table.values())

    segments = sorted((SAMPLE / "__cluster_metadata-0").glob("*.log"))
    ingest_with_versions([str(segments[0])], location, progress=False)
    built = files()
    assert apart(built)
    closed = {name: {p for p, (_, nulls) in table.items() if nulls == 0} for name, table in built.items()}
    held_open = {p for p, (_, nulls) in built["image_partitions"].items() if nulls}
    assert closed["image_partitions"] and held_open
    ingest_with_versions([str(s) for s in segments[:2]], location, progress=False)  # appends: no rewind
    grown = files()
    assert all(closed[name] <= set(grown[name]) for name in closed)  # no closed version's file rewritten
    assert not held_open & set(grown["image_partitions"])  # the MERGE ended versions there: rewritten
    before = {name: table(location, name).num_rows for name in grown}
    Lake(location).optimize(list(grown), compactors=COMPACTORS)
    assert apart(files()) and {name: table(location, name).num_rows for name in grown} == before


def test_parquet_row_groups_written_in_process_hold_about_a_mebibyte(tmp_path):
    """delta-rs closes a row group at 2^20 rows; the lake's writes in process close one at about 1 MiB of Arrow data,
    as Spark's sessions do (``parquet.block.size``), so that a point read decodes the groups around its offset:
    an ingest's writes, and ``optimize``'s rewrite of the files incremental ingests left."""
    import pyarrow.parquet as pq

    from image.temporal.ingest import ingest as ingest_with_versions
    from metadata.lake.local_store import local_path
    from metadata.lake.tables import ROW_GROUP_BYTES

    def groups(location: str, name: str) -> list[pa.Table]:
        out = []
        for file in LakeFiles(location).files(name):
            parquet = pq.ParquetFile(local_path(file.uri))
            out += [parquet.read_row_group(i) for i in range(parquet.num_row_groups)]
        assert sum(g.num_rows for g in out) == table(location, name).num_rows
        assert all(g.nbytes <= 1.25 * ROW_GROUP_BYTES for g in out)
        return out

    whole = str(tmp_path / "whole")
    ingest_with_versions([str(SAMPLE)], whole, progress=False)
    assert len(LakeFiles(whole).files("records")) == 1 and len(groups(whole, "records")) >= 2

    grown = str(tmp_path / "grown")
    segments = sorted((SAMPLE / "__cluster_metadata-0").glob("*.log"))
    for n in range(1, len(segments) + 1):
        ingest_with_versions([str(s) for s in segments[:n]], grown, progress=False)
    assert len(LakeFiles(grown).files("records")) == len(segments)
    groups(grown, "records")
    before = table(grown, "records").sort_by("offset")
    Lake(grown).optimize(["records"])
    assert len(LakeFiles(grown).files("records")) == 1 and len(groups(grown, "records")) >= 2
    assert table(grown, "records").sort_by("offset").equals(before)
