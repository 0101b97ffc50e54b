"""A newer Kafka than the schema: a real Kafka 4.1.1 log with records of a future version and a future type written
into its last segment and its newest snapshot. Without ``--skip-unknown`` every reader stops with one line naming
the file, byte, offset, record and what to do; with it the records are kept raw, listed by ``log-info``, ``check``
and every replay, and the replay of everything else is exactly that of the log without them."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

from cli.main import app
from image.temporal.sharding import plan_for, record_sharded
from image.temporal.versions import VersionLog, record_versions
from metadata.log.codec.batch import decode_batch
from metadata.log.readers import ReadOptions, read_log, read_snapshots
from metadata.log.schema import schema_kafka_version
from metadata.log.schema.releases import record_description
from tests.logbuilder import (
    append_batch,
    encoded,
    future_value,
    insert_into_snapshot,
    no_op,
    register_broker,
    topic,
    uuid,
)
from tests.test_render import run_wide, table_rows
from tests.test_versions import assert_same_recording

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "kafka" / "4.1.1" / "rolling-restart"
SNAPSHOT_ID = "00000000000000000253-0000000001"  # the newest snapshot of the fixture
SNAPSHOT = f"{SNAPSHOT_ID}.checkpoint"
FUTURE_VERSION = future_value(0, 5, encoded(*register_broker(9, 77, incarnation_id=uuid(0x99)), 4)[3:])
"""RegisterBrokerRecord v5: a version after the schema's newest (laid out as v4, as a newer Kafka might)."""
FUTURE_TYPE = future_value(30, 0)
"""apiKey 30: a record type after the schema's newest."""
ADVICE = "is not known to this kraft-replay: upgrade kraft-replay, or use --skip-unknown to keep such records raw"
KEPT = "kept raw by --skip-unknown, not replayed"

runner = CliRunner()


def run(*args: Any) -> Result:
    return runner.invoke(app, [str(a) for a in args])


class Logs:
    """Copies of the fixture: ``unknown`` with the future records, ``plain`` with NoOps in their places."""

    def __init__(self, root: Path) -> None:
        self.unknown, self.plain = root / "unknown", root / "plain"
        noop = encoded(*no_op())
        after = encoded(*topic("after-the-unknown", uuid(0xAF)))
        for directory, values, in_snapshot in (
            (self.unknown, [FUTURE_VERSION, FUTURE_TYPE, after], FUTURE_VERSION),
            (self.plain, [noop, noop, after], noop),
        ):
            shutil.copytree(FIXTURE, directory)
            log_dir = directory / "__cluster_metadata-0"
            self.first = append_batch(log_dir, values)
            self.position = insert_into_snapshot(log_dir / SNAPSHOT, in_snapshot)


@pytest.fixture(scope="module")
def logs(tmp_path_factory) -> Logs:
    return Logs(tmp_path_factory.mktemp("unknown-records"))


def _one_error_line(result: Result) -> str:
    assert result.exit_code == 1 and result.stdout == "", result.output
    assert result.stderr.count("\n") == 1, result.stderr
    return result.stderr.rstrip("\n")


@pytest.mark.parametrize("where", ["log version", "log type", "snapshot"])
def test_a_newer_record_is_one_error_line_naming_file_byte_offset_record_and_what_to_do(tmp_path, where):
    directory = tmp_path / "log"
    shutil.copytree(FIXTURE, directory)
    log_dir = directory / "__cluster_metadata-0"
    if where == "snapshot":
        path = log_dir / SNAPSHOT
        offset = insert_into_snapshot(path, FUTURE_VERSION)
        byte = _position_of_last_data_batch(path)
        record = f"RegisterBrokerRecord v5 (newer than Kafka {schema_kafka_version()}, which has v0-4)"
    else:
        path = log_dir / "00000000000000000000.log"
        byte = path.stat().st_size
        value = FUTURE_VERSION if where == "log version" else FUTURE_TYPE
        offset = append_batch(log_dir, [value])
        record = record_description(0, 5) if where == "log version" else record_description(30, 0)
    expected = f"error: {path}, byte {byte}, offset {offset}: {record} {ADVICE}"
    for command in ("replay", "log-info"):
        assert _one_error_line(run(command, "--log", directory)) == expected


def _position_of_last_data_batch(snapshot: Path) -> int:
    buf, pos, found = snapshot.read_bytes(), 0, 0
    while pos < len(buf):
        batch, end = decode_batch(buf, pos)
        if not batch.is_control:
            found = pos
        pos = end
    return found


def _skipped(result: Result) -> list[str]:
    return [line for line in result.stderr.splitlines() if line.startswith("skipped:")]


def test_with_skip_unknown_a_replay_reports_the_records_kept_raw_and_replays_the_rest_exactly(logs):
    expected = run("replay", "--log", logs.plain, "--json")
    assert expected.exit_code == 0 and _skipped(expected) == []
    kept = [
        f"skipped: snapshot {SNAPSHOT_ID} offset {logs.position}: {record_description(0, 5)} {KEPT}",
        f"skipped: offset {logs.first}: {record_description(0, 5)} {KEPT}",
        f"skipped: offset {logs.first + 1}: {record_description(30, 0)} {KEPT}",
    ]
    for engine in ("reference", "temporal"):  # strict: reported, not fatal
        got = run("replay", "--log", logs.unknown, "--skip-unknown", "--engine", engine, "--json")
        assert got.exit_code == 0, got.output
        assert _skipped(got) == kept
        assert json.loads(got.stdout) == json.loads(expected.stdout)
    topics = json.loads(expected.stdout)["topics"]
    assert "after-the-unknown" in json.dumps(topics)
    assert run("replay", "--lake", logs.unknown, "--skip-unknown").stderr.startswith(
        "error: --skip-unknown reads --log"
    )


def _undecoded(logs: Logs) -> list[dict[str, Any]]:
    return [
        {
            "api_key": 0,
            "version": 5,
            "record": record_description(0, 5),
            "count": 2,
            "offsets": [logs.first],
            "snapshots": [SNAPSHOT_ID],
        },
        {
            "api_key": 30,
            "version": 0,
            "record": record_description(30, 0),
            "count": 1,
            "offsets": [logs.first + 1],
            "snapshots": [],
        },
    ]


def test_log_info_lists_the_records_kept_raw_by_type_and_version(logs):
    result = run("log-info", "--log", logs.unknown, "--skip-unknown", "--json")
    assert result.exit_code == 0, result.output
    info = json.loads(result.stdout)
    assert info["undecoded"] == _undecoded(logs)
    assert info["by_type"]["UNKNOWN"] == 2
    plain = json.loads(run("log-info", "--log", logs.plain, "--json").stdout)
    assert plain["undecoded"] == [] and plain["records"] == info["records"]
    people = run_wide("log-info", "--log", logs.unknown, "--skip-unknown")
    assert "records kept raw by --skip-unknown, not replayed (3)" in people.stdout
    rows = table_rows(people.stdout)
    # lists of offsets and of snapshots, in brackets: never read as a count
    assert [record_description(0, 5), "2", f"[{logs.first}]", f"[{SNAPSHOT_ID}]"] in rows
    assert [record_description(30, 0), "1", f"[{logs.first + 1}]", "none"] in rows


def test_every_sharding_of_the_temporal_image_reports_the_records_kept_raw_once(logs):
    options = ReadOptions(skip_unknown=True)
    log, snapshots = read_log(logs.unknown, options), read_snapshots(logs.unknown, options)
    whole = record_versions(log, snapshots)
    assert isinstance(whole, VersionLog)
    assert [(r.error.offset, r.snapshot) for r in whole.rejections if r.error.undecoded] == [
        (logs.position, (253, 1)),
        (logs.first, None),
        (logs.first + 1, None),
    ]
    for shards in (2, 7):
        plan = plan_for(log, [s.records for s in snapshots], shards=shards, seed=shards)
        assert_same_recording(record_sharded(log, snapshots, plan), whole)


@pytest.mark.spark
def test_a_lake_ingested_with_skip_unknown_lists_them_and_replays_the_rest_as_the_log(logs, tmp_path, monkeypatch):
    """The ingest builds the temporal image sharded on Spark (as it does a large log)."""
    monkeypatch.setenv("KRAFT_REPLAY_BUILD", "spark")
    lake = tmp_path / "lake"
    refused = run("ingest", logs.unknown, "--lake", lake, "--json")
    assert refused.exit_code == 1 and refused.stderr.startswith("error: ") and ADVICE in refused.stderr
    assert run("ingest", logs.unknown, "--lake", lake, "--skip-unknown", "--json").exit_code == 0
    info = json.loads(run("log-info", "--lake", lake, "--json").stdout)
    assert info["undecoded"] == _undecoded(logs)
    on_spark = json.loads(run("--reader", "spark", "log-info", "--lake", lake, "--json").stdout)
    assert on_spark["undecoded"] == _undecoded(logs)
    from_log = run("replay", "--log", logs.unknown, "--skip-unknown", "--json")
    got = run("replay", "--lake", lake, "--json")
    assert got.exit_code == 0, got.output
    assert json.loads(got.stdout) == json.loads(from_log.stdout)
    assert _skipped(got) == _skipped(from_log) and len(_skipped(got)) == 3
    check = run("check", "--lake", lake, "--json")
    assert check.exit_code == 0, check.stdout
    notes = next(c for c in json.loads(check.stdout)["checks"] if c["name"] == "unknown")["notes"]
    assert notes == [
        "3 records kept raw by --skip-unknown, not replayed:",
        f"{record_description(0, 5)}: 2 (offsets {logs.first}; in snapshots {SNAPSHOT_ID})",
        f"{record_description(30, 0)}: 1 (offsets {logs.first + 1})",
    ]
