"""Concurrent and interrupted lake transactions: ingests in separate processes at once (same source, disjoint and
overlapping segments, into a new lake and an existing one; in process and on Spark, mixed), processes killed at
each step, the lease, the compare-and-set commit of ``_ingests``, and conflicts retried. Afterwards every lake
equals, table by table and row by row, one sequential ingest of what was ingested."""

from __future__ import annotations

import datetime as dt
import json
import shutil
import subprocess
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from deltalake import DeltaTable
from typer.testing import CliRunner

from cli.main import app
from image.temporal.ingest import ingest
from metadata.lake.check import check_lake, lake_differences
from metadata.lake.files import LakeFiles
from metadata.lake.protocol import (
    INGESTS,
    Commit,
    Lake,
    LakeBusy,
    LakeConflict,
    LakeTransaction,
    Lease,
    _LeaseKeeper,
    _now,
    table_schemas,
)
from tests.processes import KRAFT_REPLAY, ROOT, environment

SAMPLE = ROOT / "data" / "sample"
LOG_DIR = SAMPLE / "__cluster_metadata-0"
SEGMENTS = sorted(LOG_DIR.glob("*.log"))
SNAPSHOT = next(LOG_DIR.glob("*.checkpoint"))
LEASE_SECONDS = 45  # a killed process blocks the next writer this long
KILLED_LEASE_SECONDS = {"local": 10, "spark": 20}
"""The same, where the killed process ran alone: a process running Spark (its JVM starting, compiling, collecting
garbage on two cores) renews its lease less promptly."""


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


def start(
    paths: list[Path], location: str, fault: str | None = None, lease: int = LEASE_SECONDS, engine: str = "local"
) -> subprocess.Popen:
    """``kraft-replay ingest PATHS --lake LOCATION --engine ENGINE --json`` in its own process."""
    env = environment(
        spark=engine == "spark",
        KRAFT_REPLAY_LEASE_SECONDS=str(lease),
        **({"KRAFT_REPLAY_FAULT": fault} if fault else {}),
    )
    return subprocess.Popen(
        [*KRAFT_REPLAY, "ingest", *map(str, paths), "--lake", location, "--engine", engine, "--json"],
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
@pytest.mark.parametrize(
    "engines", [("local", "local", "local"), pytest.param(("spark", "local", "spark"), marks=pytest.mark.spark)]
)
def test_concurrent_ingests_into_a_new_lake_add_every_record_once(reference, tmp_path, engines):
    """The same source twice and an overlapping slice at once, into a directory with no lake yet."""
    location = str(tmp_path / "lake")
    paths = [[SAMPLE], [SAMPLE], SEGMENTS[1:3]]
    procs = [start(p, location, engine=e) for p, e in zip(paths, engines)]
    results = [finish(p) for p in procs]
    assert all(code == 0 for code, _, _ in results), [err[-2000:] for _, _, err in results]
    reports = [r for _, r, _ in results]
    assert sum(r["records_added"] for r in reports) == total_records()  # none lost, none twice
    assert sorted(r["seq"] for r in reports) == [1, 2, 3]
    assert sum(bool(r["snapshots"]) for r in reports) == 1
    assert_same_lake(Lake(location), reference)


def concurrent_ingests(location: str, reference: Lake, later: list[list[Path]], engines: list[str]) -> None:
    """Into the lake of the first segment: the rest of the log, then (3 s later) each of ``later`` at once (the
    processes' engines: ``engines``); every process commits, the records are added once and the lake equals one
    sequential ingest of the sample."""
    first = Lake(location).state()
    procs = [start(SEGMENTS[1:], location, engine=engines[0])]
    time.sleep(3)
    procs += [start(paths, location, engine=engine) for paths, engine in zip(later, engines[1:], strict=True)]
    results = [finish(p) for p in procs]
    assert all(code == 0 for code, _, _ in results), [err[-2000:] for _, _, err in results]
    reports = [r for _, r, _ in results]
    assert [r["engine"] for r in reports] == engines
    assert sum(r["records_added"] for r in reports) == total_records() - first.records_added
    assert sorted(r["seq"] for r in reports) == list(range(2, 3 + len(later)))
    assert_same_lake(Lake(location), reference)


def test_concurrent_ingests_in_process_into_an_existing_lake(reference, lake_of_first_segment):
    """The issue's case, in process: the rest of the log, the snapshot (started 3 s later) and the rest again,
    all at once."""
    concurrent_ingests(lake_of_first_segment, reference, [[SNAPSHOT], SEGMENTS[1:]], ["local"] * 3)


@pytest.mark.spark
def test_concurrent_ingests_of_both_engines_into_an_existing_lake(reference, lake_of_first_segment):
    """The same on Spark beside one in process: the rest of the log on Spark, and 3 s later the snapshot with the
    rest again in process (a JVM and a process without one, on one lake)."""
    concurrent_ingests(lake_of_first_segment, reference, [[SNAPSHOT, *SEGMENTS[1:]]], ["spark", "local"])


@pytest.mark.parametrize(
    "engine, step",
    [
        ("local", "write"),
        ("local", "committed"),
        *(pytest.param("local", s, marks=pytest.mark.slow) for s in ("lease", "recovered", "written")),
        pytest.param("spark", "write", marks=pytest.mark.spark),
        *(
            pytest.param("spark", s, marks=[pytest.mark.spark, pytest.mark.slow])
            for s in ("lease", "written", "committed")
        ),
    ],
)
def test_an_ingest_killed_at_any_step_is_invisible_or_whole_and_the_next_repairs(
    reference, lake_of_first_segment, engine, step
):
    """A process killed at each step of its transaction (of each engine); the next ingest, in process, waits for
    its lease or finds it ended, undoes what it left and completes the lake."""
    location = lake_of_first_segment
    lake = Lake(location)
    before = lake.state()
    code, _, stderr = finish(
        start([SAMPLE], location, fault=f"kill@{step}", lease=KILLED_LEASE_SECONDS[engine], engine=engine)
    )
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
    rerun = ingest([str(SAMPLE)], location, progress=False, on_wait=waited.append)
    assert rerun.records_added == (0 if step == "committed" else total_records() - before.records_added)
    if step == "committed":
        assert not waited  # (otherwise it may or may not wait: the lease can expire while the rerun decodes)
    assert_same_lake(lake, reference)


@pytest.mark.slow
def test_a_killed_ingest_beside_a_live_one(reference, tmp_path):
    """One ingest dies after its first table write while another runs: the other waits for the dead lease (or
    goes first) and the lake ends whole."""
    location = str(tmp_path / "lake")
    killed, live = start([SAMPLE], location, fault="kill@write"), start([SAMPLE], location)
    (k, _, _), (code, report, stderr) = finish(killed), finish(live)
    assert code == 0, stderr[-2000:]
    assert k in (-9, 0)  # 0: it came second and had nothing to write
    assert report["records_added"] == total_records()
    assert_same_lake(Lake(location), reference)


def test_the_ingests_commit_is_a_compare_and_set_on_the_seq(lake_of_first_segment):
    """Two transactions on the same committed state: the second commit of seq N+1 is refused (delta-rs records
    the idempotent-write id; the snapshot the second commits on holds it at N+1 already)."""
    lake = Lake(lake_of_first_segment)
    base = lake.state()
    first, second = (LakeTransaction(lake, run, _LeaseKeeper(lake, run, None), ()) for run in ("a" * 32, "b" * 32))
    nothing = Commit(inputs=[], records_added=0, snapshots_added=0, high_water_mark=base.high_water_mark)
    assert first.commit(nothing).seq == base.seq + 1
    with pytest.raises(LakeConflict, match=f"committed ingest {base.seq + 1} first"):
        second.commit(nothing)
    rows = LakeFiles(lake.uri).ingests().filter(pc.equal(pc.field("seq"), base.seq + 1))
    assert rows["run_id"].to_pylist() == ["a" * 32]


def test_an_idempotent_write_id_is_a_compare_and_set_in_process(tmp_path):
    """What the lease and ``_ingests`` rest on, with delta-rs: an append whose id the table records at that
    version or later is skipped (as Delta-Spark skips it); of two appends of one id and version on the same
    snapshot, delta-rs fails the second (a concurrent commit recorded the id)."""
    from metadata.lake.local_store import LocalStore

    store = LocalStore(str(tmp_path))
    empty = pa.schema([("epoch", pa.int64())]).empty_table()
    store.append("t", empty, app="a", version=1, metadata="first")
    store.append("t", empty, app="a", version=1, metadata="again")  # recorded already: skipped
    assert [c.user_metadata for c in store.commits("t", 0, 1)] == ["first", None]
    assert store.versions(["t"]) == {"t": 0}
    from deltalake import CommitProperties, Transaction, write_deltalake
    from deltalake.exceptions import CommitFailedError

    one, two = DeltaTable(store.path("t")), DeltaTable(store.path("t"))
    for table in (one, two):
        assert table.transaction_version("a") == 1  # both see version 1: both would go on
    store.append("t", empty, app="a", version=2, metadata="winner")
    with pytest.raises(CommitFailedError):
        write_deltalake(
            two, empty, mode="append", commit_properties=CommitProperties(app_transactions=[Transaction("a", 2)])
        )
    assert DeltaTable(store.path("t")).transaction_version("a") == 2 and store.versions(["t"]) == {"t": 1}


def test_a_held_lease_makes_a_writer_wait_then_give_up_with_one_line(lake_of_first_segment):
    location = lake_of_first_segment
    lake = Lake(location)
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
        ingest([str(SEGMENTS[1])], location, progress=False, wait=2)
    assert lake.state() == before
    other.release()
    assert ingest([str(SEGMENTS[1])], location, progress=False, wait=2).seq == before.seq + 1


def test_a_foreign_commit_during_a_transaction_is_detected_and_the_attempt_retried(lake_of_first_segment):
    """Another writer appends to records between this transaction's write and its commit (as a writer whose lease
    expired might): the proof from the Delta log fails, the writes are undone, the body runs again."""
    location = lake_of_first_segment
    lake = Lake(location)
    base = lake.state()
    three = LakeFiles(location).read("records").sort_by("offset").slice(0, 3)
    mine = three.set_column(0, "offset", pc.add(three["offset"], 10_000_000))
    foreign = mine.set_column(0, "offset", pc.add(mine["offset"], 1_000))
    attempts = []

    def body(txn: LakeTransaction) -> Commit:
        attempts.append(txn.base.seq)
        txn.write("records", mine)
        if len(attempts) == 1:
            lake.write("records", foreign, create=False, tag="someone else")
        return Commit(inputs=[], records_added=3, snapshots_added=0, high_water_mark=base.high_water_mark)

    state = lake.transact(body)
    assert attempts == [base.seq, base.seq] and state.seq == base.seq + 1
    offsets = LakeFiles(location).read("records")["offset"].to_numpy()
    assert len(offsets) == base.high_water_mark + 1 + 3
    assert (offsets >= 10_000_000).sum() == 3 and (offsets >= 10_001_000).sum() == 0
    ops = [c.operation for c in lake.commits("records", base.versions["records"] + 1, state.versions["records"])]
    assert ops == ["WRITE", "WRITE", "RESTORE", "WRITE"]  # attempt 1, the foreign append, recovery, attempt 2


def test_optimize_is_a_transaction_and_readers_of_older_versions_still_read(reference, lake_of_first_segment):
    location = lake_of_first_segment
    ingest([str(SAMPLE)], location, progress=False)  # two files or more per table
    lake = Lake(location)
    old = lake.state()
    res = CliRunner().invoke(app, ["optimize", "--lake", location, "--json"])
    assert res.exit_code == 0, res.output
    state = lake.state()
    assert json.loads(res.stdout) == {
        "lake": lake.uri,
        "seq": old.seq + 1,
        "compacted": sorted(n for n in old.versions if state.versions[n] != old.versions[n]),
    }
    assert state.seq == old.seq + 1 and state.versions["records"] > old.versions["records"]
    pinned, now = LakeFiles(location, old), LakeFiles(location, state)
    assert len(now.files("records")) < len(pinned.files("records"))
    assert pinned.read("records").num_rows == now.read("records").num_rows == total_records()
    ingest([str(SAMPLE)], location, progress=False)  # the compaction is not "undone" as a leftover
    assert lake.state().versions == state.versions
    assert_same_lake(lake, reference)


def test_a_compaction_outside_kraft_replay_is_kept_not_undone(reference, lake_of_first_segment):
    """An OPTIMIZE run on a table directly (not committed in _ingests) changes no row: the next ingest builds on it
    instead of restoring the table to its committed version."""
    location = lake_of_first_segment
    ingest([str(SEGMENTS[1])], location, progress=False)
    lake = Lake(location)
    DeltaTable(lake.path("records")).optimize.compact()
    ingest([str(SAMPLE)], location, progress=False)
    ops = [c.operation for c in lake.commits("records", 0, lake.current_version("records"))]
    assert ops == ["WRITE", "WRITE", "OPTIMIZE", "WRITE"]
    assert_same_lake(lake, reference)


@pytest.mark.spark
def test_the_compare_and_set_holds_across_engines(spark, lake_of_first_segment):
    """The idempotent-write id read the same by both: Delta-Spark skips an append whose id delta-rs recorded at
    that version, and the store in process skips one Delta-Spark recorded; a commit of ``_ingests`` on Spark after
    one in process of the same seq is refused."""
    from metadata.lake.spark_store import SparkStore

    lake = Lake(lake_of_first_segment)
    local, on_spark = lake.store, SparkStore(lake.uri, spark)
    empty = pa.schema([("epoch", pa.int64())]).empty_table()
    local.append("t", empty, app="a", version=1, metadata="in process")
    on_spark.append("t", empty, app="a", version=1, metadata="on spark")  # skipped by Delta-Spark
    on_spark.append("t", empty, app="a", version=2, metadata="on spark")
    local.append("t", empty, app="a", version=2, metadata="in process again")  # skipped here
    assert [c.user_metadata for c in local.commits("t", 0, local.versions(["t"])["t"])] == ["in process", "on spark"]
    base = lake.state()
    nothing = Commit(inputs=[], records_added=0, snapshots_added=0, high_water_mark=base.high_water_mark)
    first = LakeTransaction(lake, "a" * 32, _LeaseKeeper(lake, "a" * 32, None), ())
    assert first.commit(nothing).seq == base.seq + 1
    spark_lake = Lake(lake.uri, spark)
    spark_lake.__dict__["store"] = on_spark  # this lake's protocol commits on Spark, as for a remote lake
    second = LakeTransaction(spark_lake, "b" * 32, _LeaseKeeper(spark_lake, "b" * 32, None), ())
    second.base = base
    with pytest.raises(LakeConflict, match=f"committed ingest {base.seq + 1} first"):
        second.commit(nothing)
    assert LakeFiles(lake.uri).ingests()["seq"].to_pylist().count(base.seq + 1) == 1
    assert INGESTS in lake.current_versions([INGESTS])
