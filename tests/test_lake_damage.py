"""Damaged lakes: a data file missing or truncated, a Delta log entry missing or corrupt, a table missing, a
committed version VACUUMed away. Every command says in one line which table, file or version and what to do;
``kraft-replay check`` finds each, and the inconsistencies a lake can hold (gaps, duplicates, typed tables out
of step with ``records``, torn snapshots, a forked ingest chain)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from dataclasses import asdict
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from deltalake import DeltaTable, write_deltalake
from typer.testing import CliRunner

from cli.main import app
from image.temporal.ingest import ingest
from image.temporal.lake_source import ArrowSource
from metadata.lake.check import CHECKS, check_lake
from metadata.lake.files import LakeFiles
from metadata.lake.protocol import INGESTS, Commit, Lake, LakeDamaged, LakeTransaction
from metadata.lake.tables import INGESTS_SCHEMA
from tests import background
from tests.processes import KRAFT_REPLAY, ROOT, environment

LOG_DIR = ROOT / "data" / "sample" / "__cluster_metadata-0"
SEGMENTS = sorted(LOG_DIR.glob("*.log"))
SNAPSHOT = next(LOG_DIR.glob("*.checkpoint"))


@pytest.fixture(scope="module")
def pristine(first_segment_lake, tmp_path_factory) -> Path:
    """A lake of two ingests (two files and versions per table) and the sample's snapshot."""
    location = tmp_path_factory.mktemp("damage") / "pristine"
    shutil.copytree(first_segment_lake, location)
    ingest([str(SEGMENTS[1]), str(SNAPSHOT)], str(location), progress=False)
    return location


@pytest.fixture
def copy(pristine, tmp_path) -> Path:
    target = tmp_path / "lake"
    shutil.copytree(pristine, target)
    return target


def one_line_error(*args: str) -> str:
    res = CliRunner().invoke(app, list(args))
    assert res.exit_code == 1, res.output
    assert res.stderr.count("\n") == 1 and res.stderr.startswith("error: "), res.stderr
    return res.stderr.strip()


def problems(lake: Path, check: str) -> list[str]:
    report = check_lake(Lake(str(lake)), only=[check])
    assert not report.ok
    return next(c for c in report.checks if c.name == check).problems


def data_file(lake: Path, table: str) -> Path:
    return sorted((lake / table).glob("*.parquet"))[0]


def test_a_pristine_lake_passes_every_check(pristine):
    res = CliRunner().invoke(app, ["check", "--lake", str(pristine), "--json"])
    report = json.loads(res.stdout)  # check_lake's report
    assert res.exit_code == 0 and report["ok"] is True and [c["name"] for c in report["checks"]] == list(CHECKS)
    assert all(c["ok"] and not c["problems"] for c in report["checks"])
    table = CliRunner().invoke(app, ["check", "--lake", str(pristine)])
    assert table.exit_code == 0 and table.stdout.count(" ok ") == len(CHECKS)


def test_a_missing_data_file_is_named_with_what_to_do(copy):
    lost = data_file(copy, "records")
    lost.unlink()
    line = one_line_error("log-info", "--lake", str(copy))
    assert f"table records: data file {lost.name} is missing (deleted outside Delta)" in line
    assert "restore it from a backup, or re-ingest the sources into a new lake" in line
    found = problems(copy, "tables")
    assert len(found) == 1 and lost.name in found[0] and "table records" in found[0]
    res = CliRunner().invoke(app, ["check", "--lake", str(copy), "--json"])
    assert res.exit_code == 1
    tables = next(c for c in json.loads(res.stdout)["checks"] if c["name"] == "tables")
    assert tables["ok"] is False and lost.name in tables["problems"][0]


@pytest.mark.spark
def test_a_truncated_data_file_is_named(copy, spark):
    """Read on Spark (Parquet's own reader meets it), and in process."""
    damaged = data_file(copy, "partition_changes")
    damaged.write_bytes(damaged.read_bytes()[: damaged.stat().st_size // 2])
    damaged.with_name(f".{damaged.name}.crc").unlink(missing_ok=True)  # no checksum to catch it
    lake = Lake(str(copy), spark)
    with (
        pytest.raises(LakeDamaged, match=f"table partition_changes: data file {damaged.name} is damaged"),
        lake.reading(),
    ):
        lake.table("partition_changes").write.format("noop").mode("overwrite").save()
    assert damaged.name in problems(copy, "tables")[0]


def test_a_corrupt_delta_log_entry_is_named(copy):
    entry = copy / "records" / "_delta_log" / f"{1:020d}.json"
    entry.write_text('{"commitInfo": {"operation": "WRITE", broken\n')
    line = one_line_error("log-info", "--lake", str(copy))
    assert "table records" in line and ("00000000000000000001.json" in line or "Delta log" in line), line
    assert "restore the table's _delta_log from a backup" in line
    assert "table records" in problems(copy, "tables")[0]


def test_a_missing_delta_log_entry_is_named(copy):
    (copy / "records" / "_delta_log" / f"{0:020d}.json").unlink()
    line = one_line_error("dump", "--lake", str(copy), "--to-offset", "5")
    assert f"table records at version 1: its Delta log file _delta_log/{0:020d}.json is missing" in line
    assert "restore the table's _delta_log from a backup" in line
    assert f"_delta_log/{0:020d}.json is missing" in problems(copy, "tables")[0]


def test_a_missing_table_is_named_and_an_ingest_refuses_to_build_on_it(copy):
    shutil.rmtree(copy / "topics")
    line = one_line_error("ingest", str(SEGMENTS[2]), "--lake", str(copy))
    assert re.search(r"table topics \(version \d+ committed by ingest 2\) is missing; restore the table dir", line)
    found = problems(copy, "tables")
    assert len(found) == 1 and "table topics" in found[0] and "is missing" in found[0]


def test_a_committed_version_vacuumed_away_is_named(copy):
    """OPTIMIZE outside kraft-replay, then VACUUM without retention: the committed version's files are gone."""
    table = DeltaTable(str(copy / "records"))
    table.optimize.compact()
    DeltaTable(str(copy / "records")).vacuum(retention_hours=0, enforce_retention_duration=False, dry_run=False)
    line = one_line_error("log-info", "--lake", str(copy))
    assert "table records: data file" in line and "a VACUUM (table version" in line
    assert "removed it though the committed state still reads it" in line


def test_the_committed_state_needs_a_log_version_that_is_gone(copy):
    """The newest ingest names version 1, but the table's log ends at 0 (its newest entry deleted)."""
    for f in (copy / "records" / "_delta_log").glob(f"*{1:020d}*"):
        f.unlink()
    line = one_line_error("log-info", "--lake", str(copy))
    assert "table records: version 1 is not in the table's Delta log any more (it holds versions 0–0)" in line


def run_in_background(env: dict[str, str], root: Path) -> subprocess.CompletedProcess[str]:
    """A lake of the first segment, one of its ``records`` data files gone, replayed through the real command on
    Spark (its own JVM), while the shared session works (:mod:`tests.background`)."""
    lake = root / "lake"
    ingest([str(SEGMENTS[0])], str(lake), engine="local", progress=False)
    data_file(lake, "records").unlink()
    return subprocess.run(
        [*KRAFT_REPLAY, "replay", "--lake", str(lake), "--engine", "reference"],
        env=environment(env, spark=True),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.mark.spark
@pytest.mark.background
def test_a_damaged_lake_is_one_line_from_a_real_process():
    """Through the real command (its own JVM): stderr holds the one line and no Java stack trace."""
    proc = background.result(__name__)
    assert proc.returncode == 1
    lines = [ln for ln in proc.stderr.splitlines() if not ln.startswith("WARNING: Using incubator modules")]
    assert len(lines) == 1 and lines[0].startswith("error: lake ") and "data file" in lines[0], proc.stderr


def test_check_reports_gaps_duplicates_typed_tables_and_snapshots(copy):
    """Inconsistencies a bug could commit: one record deleted (its typed row kept), one record twice, a typed
    row deleted, a snapshot's footer deleted."""
    lake = Lake(str(copy))
    records = LakeFiles(str(copy)).read("records", columns=["offset", "type"]).sort_by("offset").to_pylist()
    topic = next(r["offset"] for r in records if r["type"] == "TOPIC_RECORD")
    hole = next(r["offset"] for r in records if r["offset"] > topic and r["type"] == "PARTITION_RECORD")

    def delete(txn: LakeTransaction, table: str, where: str) -> None:
        txn.apply(table, lambda path: DeltaTable(path).delete(where, commit_properties=txn.commit_properties))

    def damage(txn: LakeTransaction) -> Commit:
        delete(txn, "records", f"offset = {hole}")
        twice = LakeFiles(str(copy), txn.base).read("records")
        txn.write("records", twice.filter(pc.equal(twice["offset"], topic)))
        delete(txn, "topics", f"offset = {topic}")
        delete(txn, "snapshots", "control_type = 'SNAPSHOT_FOOTER'")
        return Commit(inputs=[], records_added=0, snapshots_added=0, high_water_mark=txn.base.high_water_mark)

    lake.transact(damage)
    report = check_lake(lake)
    found = {c.name: c.problems for c in report.checks}
    assert not report.ok and found["tables"] == [] and found["ingests"] == []
    assert found["offsets"] == [
        f"1 duplicate record rows, e.g. offset {topic} (2 rows)",
        f"1 offsets missing between 0 and {lake.state().high_water_mark}: {hole}",
    ]
    assert found["typed"] == [
        f"table topics lacks 2 rows of records (first at offset {topic})",
        f"table partitions holds 1 rows not in records (first at offset {hole})",
    ]
    end, epoch = (int(x) for x in SNAPSHOT.stem.split("-"))
    assert found["snapshots"] == [f"snapshot {end}-{epoch}: no SNAPSHOT_FOOTER at its last position"]


def test_check_reports_a_forked_ingest_chain(copy):
    lake = Lake(str(copy))
    state = lake.state()
    again = pa.Table.from_pylist([asdict(state)], INGESTS_SCHEMA)
    write_deltalake(lake.path(INGESTS), again, mode="append")  # a blind append: the pre-protocol bug
    assert problems(copy, "ingests") == [f"seq {state.seq} was committed 2 times"]
    assert ArrowSource(LakeFiles(str(copy))).log_info().ingests == state.seq
