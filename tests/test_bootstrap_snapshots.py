"""Bootstrap files and empty snapshots as Kafka reads them.

* Kafka's bootstrap snapshot ``00000000000000000000-0000000000.checkpoint`` (from 4.4 it holds the formatter's
  feature levels and SCRAM credentials: real files in ``tests/fixtures/bootstrap``) and ``bootstrap.checkpoint``
  are ingested and listed (kind ``bootstrap``), their records dumped, and never where a replay starts: a broker's
  ``MetadataLoader`` ignores the one (``handleLoadBootstrap``) and never reads the other, so the image before the
  log's first record is the empty image, whatever these files hold.
* A snapshot of no metadata record (its header and footer only, as Kafka's ``testLoadEmptySnapshot`` loads one),
  and a directory of only such snapshots and an empty active segment: the image at a snapshot's offset is the
  empty image there.

Every read of a lake of these directories gives what ``--log`` gives (the lake read in process and on Spark), and
the temporal image built on the driver equals the one built on Spark.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

import cli.main  # noqa: F401 — registers every command
from cli.app import app
from image.parts import PART_KEYS
from image.replay import replay_to
from image.temporal.reads import image_at
from image.temporal.sources import log_source
from image.temporal.window import image_offset
from metadata.log.codec.batch import HEADER_SIZE, LOG_OVERHEAD
from metadata.log.readers import METADATA_DIR, discover, read_checkpoints, read_log, read_snapshots
from metadata.log.records import BOOTSTRAP_CHECKPOINT_ID, BOOTSTRAP_SNAPSHOT_ID
from tests.lakes import CRAFTED_SEGMENTS, crafted_log, write_log, write_snapshot

ROOT = Path(__file__).resolve().parent
BOOTSTRAP = ROOT / "fixtures" / "bootstrap"
KAFKA_44 = BOOTSTRAP / "4.4.0" / "standalone-controller"
KAFKA_44_STATIC = BOOTSTRAP / "4.4.0" / "combined-static"
KAFKA_43 = BOOTSTRAP / "4.3.1" / "standalone-controller"
BOOTSTRAP_SNAPSHOT = "00000000000000000000-0000000000.checkpoint"
RETENTION = ROOT / "fixtures" / "kafka" / "4.1.1" / "retention" / METADATA_DIR
EMPTY_AT = (135, 1), (200, 2)  # the empty snapshots' ids: Kafka's 135-1 cut to header and footer; one written here

runner = CliRunner()


def bootstrap_beside_log(root: Path) -> Path:
    """A controller's metadata log dir: the crafted log's segments (its first transaction: the bootstrap records
    as the active controller writes them), Kafka 4.4.0's bootstrap snapshot (metadata.version 33, two SCRAM users)
    beside them and Kafka 4.3.1's ``bootstrap.checkpoint`` (metadata.version 30) one level up."""
    log = write_log(crafted_log(), root / "node", CRAFTED_SEGMENTS)
    shutil.copy(KAFKA_44 / METADATA_DIR / BOOTSTRAP_SNAPSHOT, log)
    shutil.copy(KAFKA_43 / "bootstrap.checkpoint", log.parent)
    return log.parent


def cut_to_header_and_footer(snapshot: Path, out: Path) -> Path:
    """A real snapshot of Kafka cut to its first batch (the SNAPSHOT_HEADER, and KRAFT_VERSION and KRAFT_VOTERS of a
    dynamic quorum) and its last (the SNAPSHOT_FOOTER), the footer's base offset set to follow the first batch (the
    batch CRC does not cover it): Kafka's bytes, no metadata record."""
    raw = snapshot.read_bytes()
    batches, at = [], 0
    while at < len(raw):
        size = LOG_OVERHEAD + int.from_bytes(raw[at + 8 : at + 12], "big")
        batches.append(raw[at : at + size])
        at += size
    assert len(batches) > 2 and len(batches[0]) > HEADER_SIZE
    following = int.from_bytes(batches[0][23:27], "big") + 1  # the first batch's lastOffsetDelta + 1
    footer = following.to_bytes(8, "big") + batches[-1][8:]
    path = out / snapshot.name
    path.write_bytes(batches[0] + footer)
    return path


def empty_snapshots(root: Path) -> Path:
    """A ``__cluster_metadata-0`` of empty snapshots only and an empty active segment: Kafka 4.1.1's snapshot
    135-1 cut to its header and footer, and 200-2 written with no record."""
    out = root / "empty" / METADATA_DIR
    out.mkdir(parents=True)
    cut_to_header_and_footer(RETENTION / "00000000000000000135-0000000001.checkpoint", out)
    write_snapshot(out, 200, 2, 5000)
    (out / "00000000000000000200.log").write_bytes(b"")
    return out


# ---------------------------------------------------------------------------------------------- --log


@pytest.mark.parametrize(
    "node, kraft_records",
    [(KAFKA_44, ["KRAFT_VERSION", "KRAFT_VOTERS"]), (KAFKA_44_STATIC, [])],
    ids=["standalone", "static quorum"],
)
def test_kafka_44_formats_a_bootstrap_snapshot_with_the_bootstrap_records(node: Path, kraft_records) -> None:
    """``kafka-storage format`` of Kafka 4.4.0 writes no ``bootstrap.checkpoint`` but a 0-0 snapshot holding the
    feature levels (metadata.version first) and the SCRAM credentials; it is read as the bootstrap snapshot."""
    (checkpoint,) = read_checkpoints(node)
    assert (checkpoint.end_offset, checkpoint.epoch) == BOOTSTRAP_SNAPSHOT_ID
    assert not read_snapshots(node) and not (node / "bootstrap.checkpoint").exists()
    kinds = [r.control_type or r.type for r in checkpoint.records]
    scram = ["USER_SCRAM_CREDENTIAL_RECORD"] * 2 if node == KAFKA_44 else []
    assert kinds == ["SNAPSHOT_HEADER", *kraft_records, *["FEATURE_LEVEL_RECORD"] * 6, *scram, "SNAPSHOT_FOOTER"]
    features = [r.data for r in checkpoint.records if r.type == "FEATURE_LEVEL_RECORD"]
    assert features[0] == {"name": "metadata.version", "featureLevel": 33}
    assert checkpoint.last_contained_timestamp == checkpoint.records[0].data["lastContainedLogTimestamp"] > 0


@pytest.mark.parametrize(
    "node, ids",
    [
        (KAFKA_44, [BOOTSTRAP_SNAPSHOT_ID]),
        (KAFKA_44_STATIC, [BOOTSTRAP_SNAPSHOT_ID]),
        (KAFKA_43, [BOOTSTRAP_CHECKPOINT_ID, BOOTSTRAP_SNAPSHOT_ID]),
    ],
    ids=["4.4.0 standalone", "4.4.0 static quorum", "4.3.1 standalone"],
)
def test_a_node_formatted_and_never_started_has_the_empty_image(node: Path, ids: list[tuple[int, int]]) -> None:
    """No record, no snapshot a replay starts from: the image is the empty one before offset 0, as a broker's;
    ``log-info`` lists the bootstrap files."""
    source = log_source(node)
    assert source.snapshots() == [] and source.bounds() is None and image_offset(source) == -1
    doc, errors = image_at(source, -1)
    assert doc == replay_to([], -1).to_json() and not errors
    listed = [(s.end_offset, s.epoch, s.kind, s.records) for s in source.log_info().snapshots]
    assert listed == [(c.end_offset, c.epoch, "bootstrap", len(c.records)) for c in read_checkpoints(node)]
    assert [(e, p) for e, p, _, _ in listed] == ids


@pytest.mark.parametrize("inside", [False, True], ids=["metadata log dir", "__cluster_metadata-0"])
def test_a_bootstrap_snapshot_is_never_where_a_replay_starts(tmp_path: Path, inside: bool) -> None:
    """Beside a log, the bootstrap files (4.4's 0-0 with features and SCRAM users, 4.3's ``bootstrap.checkpoint``)
    change no image: at every offset the image is the replay of the log from the empty image (Kafka's oracle does
    the same), and every key's versions are those of the log alone."""
    node = bootstrap_beside_log(tmp_path)
    path = node / METADATA_DIR if inside else node
    assert [(f.kind.value, f.end_offset, f.epoch) for f in discover(path) if f.kind.value != "segment"] == [
        ("bootstrap", *BOOTSTRAP_CHECKPOINT_ID),
        ("snapshot", *BOOTSTRAP_SNAPSHOT_ID),
    ]
    source, records = log_source(path), read_log(path)
    assert source.snapshots() == [] and not read_snapshots(path)
    assert source.bounds() == (0, records[-1].offset)
    for offset in range(-1, records[-1].offset + 1):
        doc, _ = image_at(source, offset)
        assert doc == replay_to(records, offset, lenient=True).to_json(), offset
    alone = log_source(write_log(crafted_log(), tmp_path / "alone", CRAFTED_SEGMENTS))
    for part in PART_KEYS:  # every key's versions: as if the bootstrap files were not there
        assert source.versions(part).equals(alone.versions(part)), part
    info = source.log_info()
    assert [(s.end_offset, s.epoch, s.kind, s.records) for s in info.snapshots] == [
        (0, -1, "bootstrap", 9),
        (0, 0, "bootstrap", 12),
    ]
    assert (info.first_offset, info.last_offset, info.missing_offsets) == (0, records[-1].offset, 0)


def test_empty_snapshots_and_an_empty_segment_are_the_empty_image_at_their_offsets(tmp_path: Path) -> None:
    """Each empty snapshot is the empty image at its last contained offset, with its epoch and header time (Kafka's
    ``MetadataProvenance(end - 1, epoch, lastContainedLogTimestamp, true)``); the log spans the snapshots."""
    path = empty_snapshots(tmp_path)
    source = log_source(path)
    snapshots = read_snapshots(path)
    assert [(s.end_offset, s.epoch) for s in snapshots] == list(EMPTY_AT)
    for snapshot in snapshots:  # control records only
        kinds = [r.control_type for r in snapshot.records]
        assert kinds[0] == "SNAPSHOT_HEADER" and kinds[-1] == "SNAPSHOT_FOOTER" and None not in kinds
    assert len(snapshots[0].records) == 4 and len(snapshots[1].records) == 2
    assert source.bounds() == (134, 199) and image_offset(source) == 199
    for offset in (134, 150, 198, 199):
        snapshot = max((s for s in snapshots if s.end_offset <= offset + 1), key=lambda s: s.end_offset)
        doc, errors = image_at(source, offset)
        assert doc == replay_to([], offset, snapshot=snapshot).to_json() and not errors, offset
        assert (doc["offset"], doc["epoch"], doc["timestamp"]) == (
            snapshot.end_offset - 1,
            snapshot.epoch,
            snapshot.last_contained_timestamp,
        )
    info = source.log_info()
    assert (info.first_offset, info.last_offset, info.records, info.control_records, info.missing_offsets) == (
        134,
        199,
        0,
        0,
        0,
    )


def test_an_empty_snapshot_after_records_starts_the_image_anew(tmp_path: Path) -> None:
    """The crafted log with an empty snapshot ending at 60: from offset 59 on a replay starts from it (the empty
    image at 59, then the records after it: those about what the snapshot lacks are rejected), before it from the
    empty image."""
    log = write_log(crafted_log(), tmp_path / "node", CRAFTED_SEGMENTS)
    write_snapshot(log, 60, 1, 4000)
    source, records = log_source(log), read_log(log)
    (snapshot,) = read_snapshots(log)
    for offset in range(-1, records[-1].offset + 1):
        doc, errors = image_at(source, offset, lenient=True)
        expected = replay_to(records, offset, snapshot=snapshot if offset >= 59 else None, lenient=True)
        assert doc == expected.to_json() and list(map(str, errors)) == list(map(str, expected.errors)), offset
    assert image_at(source, 59)[0] == replay_to([], 59, snapshot=snapshot).to_json()


def run(*args: Any) -> Result:
    return runner.invoke(app, [str(a) for a in args])


def test_dump_lists_a_snapshots_records(tmp_path: Path) -> None:
    """``dump --snapshot`` lists a stored snapshot's records (the bootstrap files' too), positions as offsets."""
    node = bootstrap_beside_log(tmp_path)
    for name, id_ in (
        ("0-0", BOOTSTRAP_SNAPSHOT_ID),
        (BOOTSTRAP_SNAPSHOT, BOOTSTRAP_SNAPSHOT_ID),
        ("bootstrap.checkpoint", BOOTSTRAP_CHECKPOINT_ID),
        ("0--1", BOOTSTRAP_CHECKPOINT_ID),
    ):
        (checkpoint,) = [c for c in read_checkpoints(node) if (c.end_offset, c.epoch) == id_]
        res = run("dump", "--log", node, "--snapshot", name, "--control", "--json")
        assert res.exit_code == 0, res.output
        rows = [json.loads(line) for line in res.stdout.splitlines()]
        assert rows == [
            {
                "offset": r.offset,
                "timestamp": r.timestamp,
                "type": r.control_type or r.type,
                "version": r.version,
                "data": r.data,
            }
            for r in checkpoint.records
        ], name
    scram = run("dump", "--log", node, "--snapshot", "0-0", "--type", "USER_SCRAM_CREDENTIAL_RECORD", "--json")
    assert [json.loads(line)["data"]["name"] for line in scram.stdout.splitlines()] == ["alice", "bob"]
    data = run("dump", "--log", node, "--snapshot", "0-0", "--from-offset", 3, "--to-offset", 4, "--json")
    assert [json.loads(line)["offset"] for line in data.stdout.splitlines()] == [3, 4]
    for name, error in (("7-1", "no snapshot 7-1 is stored"), ("latest", "--snapshot 'latest': expected END-EPOCH")):
        res = run("dump", "--log", node, "--snapshot", name)
        assert res.exit_code != 0 and res.stderr.startswith("error:") and error in res.stderr, res.stderr


# ---------------------------------------------------------------------------------------------- lakes


def formatted_44(root: Path) -> Path:
    """Kafka 4.4.0's standalone controller as formatted: the bootstrap snapshot alone."""
    return Path(shutil.copytree(KAFKA_44, root / "formatted"))


DIRECTORIES = {"bootstrap beside a log": bootstrap_beside_log, "empty snapshots": empty_snapshots}
DIRECTORIES["4.4.0 formatted"] = formatted_44
WINDOWS = {"bootstrap beside a log": (29, 80)}
"""``changes`` windows: the crafted log's where Kafka rejects none of its records in one delta (as in
``tests/test_replica_engines.py``)."""
SPARK_BUILT = ("bootstrap beside a log", "empty snapshots")  # also ingested with the temporal image built on Spark


class Ingested:
    """A directory of :data:`DIRECTORIES`, its lake (ingested in process) and, for :data:`SPARK_BUILT`, a lake
    of it ingested on Spark with the temporal image built on Spark."""

    def __init__(self, spark, root: Path, name: str) -> None:
        from image.temporal.ingest import ingest

        self.log = DIRECTORIES[name](root)
        self.lake = str(root / "lake")
        self.report = ingest([str(self.log)], self.lake, engine="local", progress=False)
        self.spark_built: str | None = None
        if name in SPARK_BUILT:
            self.spark_built = str(root / "lake-spark-built")
            with pytest.MonkeyPatch.context() as patch:
                patch.setenv("KRAFT_REPLAY_BUILD", "spark")
                ingest([str(self.log)], self.spark_built, spark=spark, progress=False)


@pytest.fixture(scope="module")
def ingested(spark, tmp_path_factory) -> dict[str, Ingested]:
    return {name: Ingested(spark, tmp_path_factory.mktemp("bootstrap"), name) for name in DIRECTORIES}


def reads(log: Path, window: tuple[int, int] | None) -> list[tuple[tuple[Any, ...], bool]]:
    """Every read command, at offsets of the log at ``log`` (its start, middle and end); ``changes`` over (-1, a]
    and (a, b] of ``window`` (default: the middle and the end); each command once (a log of no record has one
    offset, -1). With each, whether the lake is read on Spark too: the reads whose answer the directory's files
    decide on Spark's own path — the lake's summary, the first stored file's records, the image before the log and
    at its end, the changes from the empty image. Every one of them is read in process; each command is read both
    ways on a log's lake in tests/test_cli_image.py."""
    source = log_source(log)
    first, last = source.bounds() or (-1, -1)
    mid = (first + last) // 2
    a, b = window or (mid, last)
    stored = [f"{s.end_offset}-{s.epoch}" for s in source.log_info().snapshots]
    commands = [
        (("log-info",), True),
        (("dump", "--control"), False),
        *((("dump", "--snapshot", name, "--control"), i == 0) for i, name in enumerate(stored)),
        (("replay", "--at-offset", -1), True),
        (("replay", "--at-offset", mid), False),
        (("replay",), True),
        (("show", "features", "--at-offset", first), False),
        (("show", "brokers"), False),
        (("show", "partitions", "--at-offset", mid), False),
        (("diff", "--after-offset", -1), False),
        (("diff", "--after-offset", mid), False),
        (("changes", "--after-offset", -1, "--to-offset", a), True),
        (("changes", "--after-offset", a, "--to-offset", b), False),
        (("history", "broker", "--broker", 1), False),
        (("history", "topic", "--topic", "t1"), False),
        (("timeline",), False),
        (("timeline", "--points", 5), False),
    ]
    on_spark: dict[tuple[Any, ...], bool] = {}
    for command, spark in commands:  # (read on Spark if any of its occurrences is)
        on_spark[command] = on_spark.get(command, False) or spark
    return list(on_spark.items())


def _json(res: Result, location: str, command: tuple[Any, ...]) -> Any:
    """A command's JSON output (the read's location and the lake's ingest count left out), or its error line (a
    replay of the whole crafted log meets the records it makes Kafka reject; a log of no record has no history)."""
    if res.exit_code:
        assert res.stdout == "" and res.stderr.startswith("error:"), (command, res.output)
        return res.stderr
    if command[0] == "dump":
        return [json.loads(line) for line in res.stdout.splitlines()]
    doc = json.loads(res.stdout)
    if command[0] == "log-info":
        assert doc.pop("lake") == location
        doc.pop("ingests")
    return doc


@pytest.mark.spark
@pytest.mark.parametrize("name", list(DIRECTORIES))
def test_every_read_of_the_lake_gives_what_the_log_gives(ingested, name: str) -> None:
    """Each directory ingests (what it holds: its records, its snapshots and bootstrap files), and every read
    command on its lake — read in process and (:func:`reads`) on Spark — answers what ``--log`` answers."""
    case = ingested[name]
    stored = [(s.end_offset, s.epoch) for s in log_source(case.log).log_info().snapshots]
    names = ["bootstrap.checkpoint" if id_ == BOOTSTRAP_CHECKPOINT_ID else "%020d-%010d" % id_ for id_ in stored]
    assert sorted(case.report.snapshots) == sorted(names)
    for command, on_spark in reads(case.log, WINDOWS.get(name)):
        expected = _json(run(*command, "--log", case.log, "--json"), str(case.log), command)
        for reader in ("arrow", "spark") if on_spark else ("arrow",):
            found = _json(run("--reader", reader, *command, "--lake", case.lake, "--json"), case.lake, command)
            assert found == expected, (reader, command)


@pytest.mark.spark
@pytest.mark.parametrize("name", SPARK_BUILT)
def test_the_temporal_image_built_on_spark_equals_the_one_built_on_the_driver(ingested, name: str) -> None:
    """The same tables, row for row, whichever builds the temporal image; ``check`` finds both lakes whole."""
    from metadata.lake.check import lake_differences
    from metadata.lake.protocol import Lake

    case = ingested[name]
    assert case.spark_built is not None
    assert lake_differences(Lake(case.spark_built), Lake(case.lake)) == []
    for lake in (case.lake, case.spark_built):
        res = run("check", "--lake", lake, "--json")
        assert res.exit_code == 0 and json.loads(res.stdout)["ok"], res.output


@pytest.mark.spark
def test_the_lake_stores_the_bootstrap_files_as_bootstrap(ingested, spark) -> None:
    """The ``snapshots`` table holds each file under its id with kind ``bootstrap``; an empty snapshot with kind
    ``snapshot``; no ``records`` table where no log record was ingested."""
    from metadata.lake.protocol import Lake

    kinds = {}
    for case in ingested.values():
        lake = Lake(case.lake, spark)
        rows = lake.table("snapshots").select("snapshot_end_offset", "snapshot_epoch", "kind").distinct().collect()
        kinds.update({(r[0], r[1]): r[2] for r in rows})
        assert ("records" in lake.state().versions) == (case.report.records_added > 0)
    assert kinds == {
        BOOTSTRAP_CHECKPOINT_ID: "bootstrap",
        BOOTSTRAP_SNAPSHOT_ID: "bootstrap",
        **{id_: "snapshot" for id_ in EMPTY_AT},
    }
