"""Concurrent and interrupted lake transactions: ingests in separate processes at once (same source, disjoint and
overlapping segments, into a new lake and an existing one), processes killed at each step, the lease, the
compare-and-set commit of ``_ingests``, and conflicts retried. Afterwards every lake equals, table by table and
row by row, one sequential ingest of what was ingested."""

from __future__ import annotations

import datetime as dt
import json
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from pyspark.sql import functions as F
from typer.testing import CliRunner

from cli.main import app
from image.ingest import ingest
from metadata.check import check_lake, lake_differences
from metadata.lake import (
    INGESTS,
    Commit,
    Lake,
    LakeBusy,
    LakeConflict,
    LakeTransaction,
    Lease,
    _LeaseKeeper,
    _now,
    _tagged,
    commit_infos,
    table_schemas,
)
from tests.processes import KRAFT_REPLAY, ROOT, environment

pytestmark = pytest.mark.spark

SAMPLE = ROOT / "data" / "sample"
LOG_DIR = SAMPLE / "__cluster_metadata-0"
SEGMENTS = sorted(LOG_DIR.glob("*.log"))
SNAPSHOT = next(LOG_DIR.glob("*.checkpoint"))
LEASE_SECONDS = 45  # a killed process blocks the next writer this long
KILLED_LEASE_SECONDS = 20  # the same, where the killed process ran alone (nothing else slows its heartbeat)


@pytest.fixture(scope="module")
def reference(sample_lake) -> Lake:
    """One sequential ingest of the whole sample: what every lake below must equal."""
    return sample_lake[0]


@pytest.fixture
def lake_of_first_segment(first_segment_lake, tmp_path) -> str:
    """A copy of the lake of the sample's first segment, for one test to change."""
    shutil.copytree(first_segment_lake, tmp_path / "lake")
    return str(tmp_path / "lake")


def assert_same_lake(lake: Lake, reference: Lake) -> None:
    """Every table of the committed states holds the same rows, and the lake passes every check (offsets once
    each, the ingest chain 1 … N, typed tables in step with records)."""
    assert lake_differences(lake, reference) == []
    report = check_lake(lake)
    assert report.ok, [c for c in report.checks if not c.ok]


def start(paths: list[Path], location: str, fault: str | None = None, lease: int = LEASE_SECONDS) -> subprocess.Popen:
    """``kraft-replay ingest PATHS --lake LOCATION --json`` in its own process (its own Spark session)."""
    env = environment(KRAFT_REPLAY_LEASE_SECONDS=str(lease), **({"KRAFT_REPLAY_FAULT": fault} if fault else {}))
    return subprocess.Popen(
        [*KRAFT_REPLAY, "ingest", *map(str, paths), "--lake", location, "--json"],
        env=env,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish(proc: subprocess.Popen) -> tuple[int, dict | None, str]:
    """(exit code, the JSON report if any, stderr without Java stack frames)."""
    stdout, stderr = proc.communicate(timeout=1800)
    lines = [ln for ln in stderr.splitlines() if not ln.lstrip().startswith(("at ", "..."))]
    return proc.returncode, (json.loads(stdout) if proc.returncode == 0 else None), "\n".join(lines)


def total_records() -> int:
    return int(json.loads((SAMPLE / "generate-report.json").read_text())["total_records"])


@pytest.mark.slow
def test_concurrent_ingests_into_a_new_lake_add_every_record_once(reference, spark, tmp_path):
    """The same source twice and an overlapping slice at once, into a directory with no lake yet."""
    location = str(tmp_path / "lake")
    procs = [start([SAMPLE], location), start([SAMPLE], location), start(SEGMENTS[1:3], location)]
    results = [finish(p) for p in procs]
    assert all(code == 0 for code, _, _ in results), [err[-2000:] for _, _, err in results]
    reports = [r for _, r, _ in results]
    assert sum(r["records_added"] for r in reports) == total_records()  # none lost, none twice
    assert sorted(r["seq"] for r in reports) == [1, 2, 3]
    assert sum(bool(r["snapshots"]) for r in reports) == 1
    assert_same_lake(Lake(location, spark), reference)


def concurrent_ingests(location: str, spark, reference: Lake, later: list[list[Path]]) -> None:
    """Into the lake of the first segment: the rest of the log, then (3 s later) each of ``later`` at once; every
    process commits, the records are added once and the lake equals one sequential ingest of the sample."""
    first = Lake(location, spark).state()
    procs = [start(SEGMENTS[1:], location)]
    time.sleep(3)
    procs += [start(paths, location) for paths in later]
    results = [finish(p) for p in procs]
    assert all(code == 0 for code, _, _ in results), [err[-2000:] for _, _, err in results]
    reports = [r for _, r, _ in results]
    assert sum(r["records_added"] for r in reports) == total_records() - first.records_added
    assert sorted(r["seq"] for r in reports) == list(range(2, 3 + len(later)))
    assert_same_lake(Lake(location, spark), reference)


@pytest.mark.slow  # (in the default run: the same with two processes, below)
def test_concurrent_ingests_into_an_existing_lake(reference, spark, lake_of_first_segment):
    """The issue's case: a lake holding the first segment; the rest of the log, the snapshot (started 3 s later)
    and the rest again, all at once."""
    concurrent_ingests(lake_of_first_segment, spark, reference, [[SNAPSHOT], SEGMENTS[1:]])


def test_two_concurrent_ingests_into_an_existing_lake(reference, spark, lake_of_first_segment):
    """The issue's case in two processes (one JVM per core): the rest of the log, and 3 s later the snapshot with
    the rest again."""
    concurrent_ingests(lake_of_first_segment, spark, reference, [[SNAPSHOT, *SEGMENTS[1:]]])


@pytest.mark.slow  # (in the default run: tests/test_ingest.py's interrupted ingests, the lease tests below)
@pytest.mark.parametrize("step", ["lease", "write", "written", "committed"])
def test_an_ingest_killed_at_any_step_is_invisible_or_whole_and_the_next_repairs(
    reference, spark, lake_of_first_segment, step
):
    location = lake_of_first_segment
    lake = Lake(location, spark)
    before = lake.state()
    code, _, stderr = finish(start([SAMPLE], location, fault=f"kill@{step}", lease=KILLED_LEASE_SECONDS))
    assert code == -9, stderr[-2000:]
    after = lake.state()
    assert after == before if step != "committed" else after.seq == before.seq + 1
    if step in ("write", "written"):  # torn writes on disk, invisible (records is written last)
        latest = lake.current_versions(list(table_schemas()))
        torn = [n for n, v in latest.items() if v is not None and v > before.versions.get(n, -1)]
        assert torn and (step == "write" or "records" in torn)
    # the dead process's lease holds the lake until it expires; a committed transaction's ended with its commit
    assert lake.lease().free(after.seq) is (step == "committed")
    waited = []
    rerun = ingest([str(SAMPLE)], location, spark=spark, progress=False, on_wait=waited.append)
    assert rerun.records_added == (0 if step == "committed" else total_records() - before.records_added)
    if step == "committed":
        assert not waited  # (otherwise it may or may not wait: the lease can expire while the rerun decodes)
    assert_same_lake(lake, reference)


@pytest.mark.slow
def test_a_killed_ingest_beside_a_live_one(reference, spark, tmp_path):
    """One ingest dies after its first table write while another runs: the other waits for the dead lease (or
    goes first) and the lake ends whole."""
    location = str(tmp_path / "lake")
    killed, live = start([SAMPLE], location, fault="kill@write"), start([SAMPLE], location)
    (k, _, _), (code, report, stderr) = finish(killed), finish(live)
    assert code == 0, stderr[-2000:]
    assert k in (-9, 0)  # 0: it came second and had nothing to write
    assert report["records_added"] == total_records()
    assert_same_lake(Lake(location, spark), reference)


def test_the_ingests_commit_is_a_compare_and_set_on_the_seq(spark, lake_of_first_segment):
    """Two transactions on the same committed state: the second commit of seq N+1 is refused by Delta itself."""
    location = lake_of_first_segment
    lake = Lake(location, spark)
    base = lake.state()
    first, second = (LakeTransaction(lake, run, _LeaseKeeper(lake, run, None), ()) for run in ("a" * 32, "b" * 32))
    nothing = Commit(inputs=[], records_added=0, snapshots_added=0, high_water_mark=base.high_water_mark)
    assert first.commit(nothing).seq == base.seq + 1
    with pytest.raises(LakeConflict, match=f"committed ingest {base.seq + 1} first"):
        second.commit(nothing)
    rows = spark.read.format("delta").load(lake.path(INGESTS)).where(f"seq = {base.seq + 1}").collect()
    assert [r["run_id"] for r in rows] == ["a" * 32]


def test_a_held_lease_makes_a_writer_wait_then_give_up_with_one_line(spark, lake_of_first_segment):
    location = lake_of_first_segment
    lake = Lake(location, spark)
    before = lake.state()
    other = _LeaseKeeper(lake, "other-run", None)
    held = Lease(
        epoch=lake.lease().epoch + 1,
        owner="other-run",
        holder="host-b pid 7",
        base_seq=before.seq,
        expires_at=_now() + dt.timedelta(minutes=5),
    )
    assert other._cas(held)
    other.held = held  # as acquire() records it: release() gives back only a lease its keeper holds
    with pytest.raises(LakeBusy, match=r"being written by host-b pid 7 \(run other-run.*nothing was changed"):
        ingest([str(SEGMENTS[1])], location, spark=spark, progress=False, wait=2)
    assert lake.state() == before
    other.release()
    assert ingest([str(SEGMENTS[1])], location, spark=spark, progress=False, wait=2).seq == before.seq + 1


def test_a_foreign_commit_during_a_transaction_is_detected_and_the_attempt_retried(spark, lake_of_first_segment):
    """Another writer appends to records between this transaction's write and its commit (as a writer whose lease
    expired might): the proof from the Delta log fails, the writes are undone, the body runs again."""
    location = lake_of_first_segment
    lake = Lake(location, spark)
    base = lake.state()
    mine = lake.table("records", base).limit(3).withColumn("offset", F.col("offset") + 10_000_000)
    foreign = mine.withColumn("offset", F.col("offset") + 1_000)
    attempts = []

    def body(txn: LakeTransaction) -> Commit:
        attempts.append(txn.base.seq)
        txn.write("records", mine)
        if len(attempts) == 1:
            with _tagged(spark, "someone else"):
                lake.write("records", foreign, create=False)
        return Commit(inputs=[], records_added=3, snapshots_added=0, high_water_mark=base.high_water_mark)

    state = lake.transact(body)
    assert attempts == [base.seq, base.seq] and state.seq == base.seq + 1
    records = lake.table("records", state)
    assert records.count() == base.high_water_mark + 1 + 3
    assert records.where("offset >= 10000000").count() == 3 and records.where("offset >= 10001000").count() == 0
    ops = [
        c.operation
        for c in commit_infos(spark, lake.path("records"), base.versions["records"] + 1, state.versions["records"])
    ]
    assert ops == ["WRITE", "WRITE", "RESTORE", "WRITE"]  # attempt 1, the foreign append, recovery, attempt 2


def test_optimize_is_a_transaction_and_readers_of_older_versions_still_read(reference, spark, lake_of_first_segment):
    location = lake_of_first_segment
    ingest([str(SAMPLE)], location, spark=spark, progress=False)  # two files or more per table
    lake = Lake(location, spark)
    old = lake.state()
    pinned = lake.table("records", old)
    res = CliRunner().invoke(app, ["optimize", "--lake", location, "--json"])
    assert res.exit_code == 0, res.output
    state = lake.state()
    assert json.loads(res.stdout) == {
        "lake": lake.uri,
        "seq": old.seq + 1,
        "compacted": sorted(n for n in old.versions if state.versions[n] != old.versions[n]),
    }
    assert state.seq == old.seq + 1 and state.versions["records"] > old.versions["records"]
    assert len(lake.table("records", state).inputFiles()) < len(pinned.inputFiles())
    assert pinned.count() == lake.table("records", state).count() == total_records()
    ingest([str(SAMPLE)], location, spark=spark, progress=False)  # the compaction is not "undone" as a leftover
    assert lake.state().versions == state.versions
    assert_same_lake(lake, reference)


def test_a_compaction_outside_kraft_replay_is_kept_not_undone(reference, spark, lake_of_first_segment):
    """An OPTIMIZE run on a table directly (not committed in _ingests) changes no row: the next ingest builds on it
    instead of restoring the table to its committed version."""
    location = lake_of_first_segment
    ingest([str(SEGMENTS[1])], location, spark=spark, progress=False)
    lake = Lake(location, spark)
    spark.sql(f"OPTIMIZE delta.`{lake.path('records')}`").collect()
    ingest([str(SAMPLE)], location, spark=spark, progress=False)
    ops = [c.operation for c in commit_infos(spark, lake.path("records"), 0, lake.current_version("records"))]
    assert ops == ["CREATE OR REPLACE TABLE AS SELECT", "WRITE", "OPTIMIZE", "WRITE"]
    assert_same_lake(lake, reference)
