"""The temporal image on Spark: the reference engine's recorder, run per shard of the log in Arrow-batched
Python workers, writing the versions tables of the lake.

One pass (three jobs, four stages, whatever the log's size or number of topics and transactions):

1. **Plan** (no job for a lake on a local path: :func:`_plan_inputs`): the (topic id, name) pairs of the
   TopicRecords and the topics' partition record counts, from the typed tables;
   :class:`~image.sharding.ShardPlan` turns them into a shard per topic component.
2. **Route and sort**: the records to replay (offset ≥ the restart point; no NoOps or control records),
   the records of the snapshots to load and one boundary row per snapshot and shard, and — when an ingest
   continues the lake's versions — the versions current at the restart point (the shard's starting
   image), read as :meth:`~metadata.lake.Lake.scan` gives them. Each row gets its shard (a broadcast join
   on the route key; transaction markers and ClearElr of every topic are copied to every shard), is
   hash-partitioned so that shard s is task s (:func:`~image.sharding.partition_keys`) and sorted within
   the task by (shard, offset, phase, position).
3. **Replay** (``mapInArrow``): each shard's rows go to a :class:`~image.versions.VersionRecorder`; its
   versions, closings of stored versions, rejections and transaction spans are written by the task itself
   as Parquet under the run's staging directory (like the ingest's decode tasks); the task returns
   counts.
4. **Write**: per table, new versions are appended (first time: created, with deletion vectors on and
   statistics of the interval columns), stored versions are ended with one MERGE, all as commits the
   caller makes visible in ``_ingests``.

The routing keeps every coupling of Kafka's replay inside one shard (:mod:`image.sharding`), so the result
is exactly that of one sequential replay for any number of shards.

A small build (:func:`build_place`) skips the plan, the shuffle and the workers: the same inputs, read in
process for a lake on a local path, are replayed by the same recorder as one shard on the driver
(:func:`_record_here`), into the same staged files.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pydantic import BaseModel
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.pandas.types import from_arrow_schema

from image.errors import ReplayError
from image.image import MetadataImage
from image.lake_source import ArrowSource
from image.parts import PART_KEYS, Row
from image.provenance import MetadataProvenance
from image.release import lake_rules, rules_for
from image.sharding import (
    EVERY_SHARD,
    TOPIC_ID,
    TOPIC_NAME,
    ShardPlan,
    partition_keys,
    route_key_sql,
    row_route_key,
    row_route_key_sql,
)
from image.spark.source import SparkSource
from image.temporal import TemporalSource, restart_point
from image.versions import Key, Rejection, Span, VersionRecorder, key_values, replay_with_snapshots, state_values
from metadata.ingest import LakeChange
from metadata.lake import Compactor, Lake, LakeState, LakeTransaction, per_table, sql_table
from metadata.lake_files import DataFile
from metadata.log import LogRecord, Snapshot, payload_data, snapshot_kind
from metadata.spark import glob_escaped
from metadata.version_tables import PART_TABLES, PROVENANCE, REJECTIONS, closing_schema, table_schemas, version_schema

FLUSH_ROWS = 50_000
"""Rows a task buffers per output file before writing it."""

_ROW, _LOG, _SNAPSHOT, _SNAPSHOT_BEGIN = "row", "log", "snap", "snapb"

INPUT_SCHEMA = T.StructType(
    [
        T.StructField("pkey", T.IntegerType()),
        T.StructField("shard", T.IntegerType()),
        T.StructField("o1", T.LongType()),
        T.StructField("o2", T.IntegerType()),
        T.StructField("o3", T.LongType()),
        T.StructField("kind", T.StringType()),
        T.StructField("part", T.StringType()),
        T.StructField("offset", T.LongType()),
        T.StructField("batch_base_offset", T.LongType()),
        T.StructField("batch_last_offset", T.LongType()),
        T.StructField("epoch", T.IntegerType()),
        T.StructField("timestamp", T.LongType()),
        T.StructField("type", T.StringType()),
        T.StructField("api_key", T.IntegerType()),
        T.StructField("version", T.IntegerType()),
        T.StructField("payload", T.StringType()),
        T.StructField("snapshot_end", T.LongType()),
        T.StructField("snapshot_epoch", T.IntegerType()),
        T.StructField("snapshot_ts", T.LongType()),
    ]
)
"""One row of a shard's input: a stored version (``row``), a log record (``log``), a snapshot boundary
(``snapb``) or a snapshot's record (``snap``)."""

_RECORD_COLUMNS = [
    "offset",
    "batch_base_offset",
    "batch_last_offset",
    "epoch",
    "timestamp",
    "type",
    "api_key",
    "version",
    "payload",
]
"""A log record's columns as the pass ships them (``epoch``: the batch's leader epoch)."""

_WORKER_COLUMNS = ("shard", "kind", "part", *_RECORD_COLUMNS, "snapshot_end", "snapshot_epoch", "snapshot_ts")
"""The input columns a worker reads, in the order :func:`_replay_shards` unpacks them."""


def _not_noop() -> Column:
    """What a shard replays of the data records: not the NoOps (they change no key); records kept raw by
    ``--skip-unknown`` (null type) are, and reported."""
    return F.col("type").isNull() | (F.col("type") != "NO_OP_RECORD")


def _log_record(
    offset: int, base: int, last: int, epoch: int, ts: int, kind: str | None, api_key: int, version: int, payload: str
) -> LogRecord:
    """A shipped record (:data:`_RECORD_COLUMNS`) as the recorder replays it."""
    return LogRecord(offset, base, last, epoch, ts, kind, version, payload_data(payload), api_key=api_key)


SUMMARY = pa.schema(
    [
        ("shard", pa.int32()),
        ("records", pa.int64()),
        ("versions", pa.int64()),
        ("closings", pa.int64()),
        ("rejections", pa.int64()),
        ("first_rejection_at", pa.int64()),
        ("first_rejection", pa.string()),
        ("seconds", pa.float64()),
    ]
)


class BuildReport(BaseModel):
    """What a versions build did."""

    restart: int  # first log offset replayed (-1: from the start)
    shards: int
    records: int  # log and snapshot records replayed, summed over shards (broadcast ones counted per shard)
    versions: int
    closings: int
    rejections: int
    tables: dict[str, int]  # table → Delta version written
    seconds: float


# --- the workers ----------------------------------------------------------------------------------


@dataclass
class _Files:
    """A task's Parquet output: rows (value tuples in schema order) buffered per (kind, table), written
    column by column in files of ``FLUSH_ROWS``."""

    root: str
    task: int
    buffers: dict[tuple[str, str], list[tuple[Any, ...]]] = field(default_factory=dict)
    counts: dict[tuple[str, str], int] = field(default_factory=dict)

    def add(self, kind: str, table: str, row: tuple[Any, ...]) -> None:
        rows = self.buffers.get((kind, table))
        if rows is None:
            rows = self.buffers[(kind, table)] = []
        rows.append(row)
        if len(rows) >= FLUSH_ROWS:
            self.flush(kind, table)

    def flush(self, kind: str, table: str) -> None:
        rows = self.buffers.pop((kind, table), [])
        if not rows:
            return
        n = self.counts.get((kind, table), 0)
        self.counts[(kind, table)] = n + 1
        directory = os.path.join(self.root, kind, table)
        os.makedirs(directory, exist_ok=True)
        schema = _SCHEMAS[(kind, table)]
        columns = [pa.array(values, type=f.type) for values, f in zip(zip(*rows), schema)]
        pq.write_table(
            pa.Table.from_arrays(columns, schema=schema),
            os.path.join(directory, f"part-{self.task:05d}-{n:05d}.parquet"),
        )


class _TaskSink:
    """The :class:`~image.versions.VersionSink` of one task: everything goes to Parquet files."""

    def __init__(self, files: _Files) -> None:
        self.files = files
        self.versions = self.closings = self.rejections = 0
        self.first: tuple[tuple[int, int], ReplayError] | None = None

    def version(self, part: str, key: Key, state: Any, from_offset: int, to_offset: int | None, from_time: int) -> None:
        self.versions += 1
        self.files.add(
            "versions", PART_TABLES[part], (*state_values(part, key, state), from_offset, to_offset, from_time)
        )

    def close(self, part: str, key: Key, state: Any, from_offset: int, to_offset: int) -> None:
        self.closings += 1
        self.files.add("closings", PART_TABLES[part], (*key_values(part, key, state), from_offset, to_offset))

    def rejection(self, rejection: Rejection) -> None:
        self.rejections += 1
        error, snapshot = rejection
        at = (snapshot[0] - 1, error.offset or 0) if snapshot is not None else (error.offset or 0, -1)
        if self.first is None or at < self.first[0]:
            self.first = (at, error)
        self.files.add(  # in REJECTIONS_SCHEMA's order
            "rows",
            REJECTIONS,
            (
                error.offset,
                snapshot[0] if snapshot else None,
                snapshot[1] if snapshot else None,
                error.record_type,
                error.location,
                error.detail,
            ),
        )

    def span(self, span: Span) -> None:
        self.files.add("rows", PROVENANCE, (span.begin, span.end, span.begin - 1, span.outcome))  # PROVENANCE_SCHEMA

    def flush(self) -> None:
        for kind, table in list(self.files.buffers):
            self.files.flush(kind, table)

    def summary(self, shard: int, records: int, started: float) -> Row:
        """What the shard recorded, as a :data:`SUMMARY` row."""
        first = self.first
        return {
            "shard": shard,
            "records": records,
            "versions": self.versions,
            "closings": self.closings,
            "rejections": self.rejections,
            "first_rejection_at": first[0][0] if first else None,
            "first_rejection": str(first[1]) if first else None,
            "seconds": time.monotonic() - started,
        }


_VERSION_SCHEMAS = {part: version_schema(part) for part in PART_KEYS}
_CLOSING_SCHEMAS = {part: closing_schema(part) for part in PART_KEYS}
PROVENANCE_SCHEMA, REJECTIONS_SCHEMA = table_schemas()[PROVENANCE], table_schemas()[REJECTIONS]
assert PROVENANCE_SCHEMA.names == ["from_offset", "to_offset", "offset", "outcome"]
assert REJECTIONS_SCHEMA.names == [
    "offset",
    "snapshot_end_offset",
    "snapshot_epoch",
    "record_type",
    "location",
    "message",
]
_SCHEMAS = {
    **{("versions", PART_TABLES[p]): s for p, s in _VERSION_SCHEMAS.items()},
    **{("closings", PART_TABLES[p]): s for p, s in _CLOSING_SCHEMAS.items()},
    ("rows", REJECTIONS): REJECTIONS_SCHEMA,
    ("rows", PROVENANCE): PROVENANCE_SCHEMA,
}


def _replay_shards(
    batches: Iterator[pa.RecordBatch], *, staging: str, plan: ShardPlan, restart: int, release: str
) -> Iterator[pa.RecordBatch]:
    """The ``mapInArrow`` function: replay the shards of this task, one recorder each, under the rules of Kafka
    ``release``."""
    from pyspark import TaskContext

    context = TaskContext.get()
    files = _Files(staging, context.partitionId() if context is not None else 0)
    summaries: list[Row] = []
    shard: int | None = None
    stored: dict[str, list[Row]] = {}
    recorder: VersionRecorder | None = None
    sink = _TaskSink(files)
    snapshot: tuple[int, int, int, list[LogRecord]] | None = None
    started, records = time.monotonic(), 0

    def open_recorder() -> VersionRecorder:
        image = MetadataImage.from_rows(stored, MetadataProvenance(restart - 1, -1, -1, True)) if stored else None
        return VersionRecorder(
            sink,
            image,
            stored if stored else None,
            rules=rules_for(release),
            owns=lambda part, row, s=shard: plan.shard(row_route_key(part, row)) == s,
            report_shared=shard == 0,
        )

    def load(recorder: VersionRecorder) -> None:
        nonlocal snapshot
        if snapshot is not None:
            end, epoch, ts, snap_records = snapshot
            recorder.load_snapshot(snap_records, end, epoch, ts)
            snapshot = None

    def close_shard() -> None:
        nonlocal recorder, stored, sink, started, records
        if shard is None:
            return
        recorder = recorder or open_recorder()
        load(recorder)
        recorder.finish()
        summaries.append(sink.summary(shard, records, started))
        recorder, stored, sink = None, {}, _TaskSink(files)
        started, records = time.monotonic(), 0

    for batch in batches:
        for row_shard, kind, part, offset, base, last, epoch, ts, kind_type, api_key, version, payload, *snap in zip(
            *(batch.column(name).to_pylist() for name in _WORKER_COLUMNS)
        ):
            if row_shard != shard:
                close_shard()
                shard = row_shard
            if kind == _LOG:
                records += 1
                load(recorder := recorder or open_recorder())
                recorder.replay(_log_record(offset, base, last, epoch, ts, kind_type, api_key, version, payload))
            elif kind == _ROW:
                stored.setdefault(part, []).append(payload_data(payload))
            elif kind == _SNAPSHOT_BEGIN:
                load(recorder := recorder or open_recorder())
                snapshot = (*snap, [])
            else:  # a snapshot's record
                assert snapshot is not None
                records += 1
                snapshot[3].append(_log_record(offset, base, last, epoch, ts, kind_type, api_key, version, payload))
    close_shard()
    sink.flush()
    yield pa.RecordBatch.from_pylist(summaries, schema=SUMMARY)


# --- the pass -------------------------------------------------------------------------------------


def _input(spark, frame: DataFrame, **values: object) -> DataFrame:
    """``frame`` completed to :data:`INPUT_SCHEMA` (missing columns null, ``values`` as literals)."""
    cols = []
    for f in INPUT_SCHEMA.fields:
        if f.name in values:
            cols.append(F.lit(values[f.name]).cast(f.dataType).alias(f.name))
        elif f.name in frame.columns:
            cols.append(F.col(f.name).cast(f.dataType).alias(f.name))
        else:
            cols.append(F.lit(None).cast(f.dataType).alias(f.name))
    return frame.select(*cols, "route")


def build_versions(
    lake: Lake,
    state: LakeState,
    *,
    restart: int = -1,
    shards: int | None = None,
    stored_at: int | None = None,
    staging: str,
    seed: int | None = None,
    place: str | None = None,
) -> tuple[BuildReport, dict[str, str]]:
    """Replay the lake's committed log from ``restart`` (-1: the whole log) and stage its versions.

    ``stored_at``: continue the versions current at that offset (``restart - 1``), read from the lake's
    versions tables; None starts from the empty image. ``place``: where the recorder runs (see
    :func:`build_place`; naming ``shards`` means Spark). Returns the report (tables not yet written) and
    the staged directories per (kind, table).
    """
    spark = lake.spark
    started = time.monotonic()
    if not shards and (place or build_place(state, restart)) == "driver":
        summary = _record_here(lake, state, restart=restart, stored_at=stored_at, staging=staging)
        return _report(restart, 1, [summary], started)
    shards = shards or max(2, 2 * _parallelism(spark))
    records = (
        lake.scan("records", state)
        .where((F.col("offset") >= restart) & ~F.col("is_control") & _not_noop())
        .select(*[F.col(c) for c in _RECORD_COLUMNS if c != "epoch"], F.col("batch_leader_epoch").alias("epoch"))
        .withColumn("route", F.expr(route_key_sql()))
    )
    snapshot_ids = _snapshots_to_load(lake_source(lake, state), restart)
    snap_records = _snapshot_records(lake, state, snapshot_ids)
    stored = _stored_rows(lake, state, stored_at) if stored_at is not None else None

    weights, edges = _plan_inputs(lake, state, restart, snapshot_ids, stored_at)
    plan = ShardPlan.make(weights, edges, shards, seed)
    keys = partition_keys(shards)
    mapping = spark.createDataFrame([(k, s) for k, s in plan.assignment.items()], "route string, planned int")

    rows = [
        _input(
            spark,
            records.withColumn("kind", F.lit(_LOG))
            .withColumn("o1", F.col("offset"))
            .withColumn("o2", F.lit(0))
            .withColumn("o3", F.lit(0)),
        )
    ]
    if snap_records is not None:
        rows.append(
            _input(
                spark,
                snap_records.withColumn("kind", F.lit(_SNAPSHOT))
                .withColumn("o1", F.col("snapshot_end") - 1)
                .withColumn("o2", F.lit(1))
                .withColumn("o3", F.col("offset")),
            )
        )
    if stored is not None:
        rows.append(_input(spark, stored, kind=_ROW, o1=-2, o2=0, o3=0))
    routed = rows[0]
    for more in rows[1:]:
        routed = routed.unionByName(more)
    shard = F.coalesce(F.col("planned"), F.pmod(F.crc32(F.col("route").cast("binary")), F.lit(shards))).cast("int")
    every = F.col("route") == F.lit(EVERY_SHARD)
    targets = F.when(every, F.sequence(F.lit(0), F.lit(shards - 1))).otherwise(F.array(shard))
    parts = [routed.join(F.broadcast(mapping), "route", "left").withColumn("shard", F.explode(targets))]
    if snapshot_ids:  # a boundary row per snapshot and shard (spark.range and literals: no job to ship them)
        snaps = F.array(
            *[
                F.struct(
                    F.lit(end).cast("long").alias("snapshot_end"),
                    F.lit(epoch).cast("int").alias("snapshot_epoch"),
                    F.lit(ts).cast("long").alias("snapshot_ts"),
                )
                for end, epoch, ts in snapshot_ids
            ]
        )
        b = spark.range(shards).select(F.col("id").cast("int").alias("shard"), F.explode(snaps).alias("s"))
        parts.append(
            _input(
                spark,
                b.select("shard", "s.*").withColumn("o1", F.col("snapshot_end") - 1).withColumn("route", F.lit(None)),
                kind=_SNAPSHOT_BEGIN,
                o2=1,
                o3=-1,
            )
        )
    columns = [f.name for f in INPUT_SCHEMA.fields if f.name != "pkey"]
    shipped = parts[0].select(*columns)
    for more in parts[1:]:
        shipped = shipped.unionByName(more.select(*columns))
    key_of = F.element_at(F.array(*[F.lit(k) for k in keys]), F.col("shard") + 1).cast("int")
    shipped = (
        shipped.withColumn("pkey", key_of)
        .select(*[f.name for f in INPUT_SCHEMA.fields])
        .repartition(shards, "pkey")
        .sortWithinPartitions("shard", "o1", "o2", "o3")
    )
    summaries = shipped.mapInArrow(
        partial(_replay_shards, staging=staging, plan=plan, restart=restart, release=lake_rules(state).release),
        from_arrow_schema(SUMMARY),
    ).collect()
    return _report(restart, shards, [r.asDict() for r in summaries], started)


def _report(restart: int, shards: int, summaries: Sequence[Row], started: float) -> tuple[BuildReport, dict[str, str]]:
    report = BuildReport(
        restart=restart,
        shards=shards,
        records=sum(r["records"] for r in summaries),
        versions=sum(r["versions"] for r in summaries),
        closings=sum(r["closings"] for r in summaries),
        rejections=sum(r["rejections"] for r in summaries),
        tables={},
        seconds=time.monotonic() - started,
    )
    firsts = sorted((r["first_rejection_at"], r["first_rejection"]) for r in summaries if r["first_rejection"])
    return report, {"first_rejection": firsts[0][1] if firsts else ""}


def lake_source(lake: Lake, state: LakeState) -> TemporalSource:
    """The lake at ``state`` as a temporal source: read in process when it can be, else on Spark."""
    files = lake.files(state)
    return ArrowSource(files) if files is not None else SparkSource(lake, state)


def _record_here(lake: Lake, state: LakeState, *, restart: int, stored_at: int | None, staging: str) -> Row:
    """The build as one shard on the driver: the sequential replay (:func:`~image.versions.replay_with_snapshots`)
    of what a Spark pass would ship — the log from ``restart`` without NoOps and control records, the
    snapshots to load, the versions current at ``stored_at`` — into the same staged files."""
    source = lake_source(lake, state)
    started = time.monotonic()
    stored = {}
    if stored_at is not None:
        stored = {
            p: rows for p, t in PART_TABLES.items() if t in state.versions if (rows := source.rows_at(p, stored_at))
        }
    image = MetadataImage.from_rows(stored, MetadataProvenance(restart - 1, -1, -1, True)) if stored else None
    sink = _TaskSink(_Files(staging, 0))
    recorder = VersionRecorder(sink, image, stored or None, rules=lake_rules(state))
    log = [r for r in source.log_records(max(restart, 0), state.high_water_mark) if _replayed(r)]
    snapshots = [
        Snapshot([r for r in source.snapshot_records(end, epoch) if _replayed(r)], end, epoch, ts)
        for end, epoch, ts in _snapshots_to_load(source, restart)
    ]
    replay_with_snapshots(recorder, log, snapshots)
    sink.flush()
    return sink.summary(0, len(log) + sum(len(s.records) for s in snapshots), started)


def _replayed(record: LogRecord) -> bool:
    """What a shard replays: no control records, no NoOps (they change no key)."""
    return not record.is_control and record.type != "NO_OP_RECORD"


DRIVER_RECORDS = 200_000
"""Builds that replay at most this many log offsets run on the driver (see :func:`build_place`)."""


def build_place(state: LakeState, restart: int) -> str:
    """Where a build replays: ``driver`` (one recorder in this process, :func:`_record_here`) or ``spark``
    (sharded across Python workers). ``KRAFT_REPLAY_BUILD`` (``driver``, ``spark``,
    ``auto``) forces it; ``auto`` takes the driver for at most :data:`DRIVER_RECORDS` offsets from the
    restart point to the high-water mark. The recorder replays ≈ 40k records/s a core, while a Spark
    pass pays seconds of planning, shuffle and worker start whatever its size (BENCHMARKS.md), so small
    logs and incremental ingests are faster here; large builds spread over the cluster's cores."""
    chosen = os.environ.get("KRAFT_REPLAY_BUILD", "auto")
    if chosen not in ("auto", "driver", "spark"):
        raise ValueError(f"KRAFT_REPLAY_BUILD must be auto, driver or spark, not {chosen!r}")
    if chosen != "auto":
        return chosen
    return "driver" if state.high_water_mark - max(restart, 0) < DRIVER_RECORDS else "spark"


def _parallelism(spark) -> int:
    from metadata.spark import default_parallelism

    return default_parallelism(spark)


def _snapshots_to_load(source: TemporalSource, restart: int) -> list[tuple[int, int, int]]:
    """(end offset, epoch, last contained timestamp) of the snapshots the replay loads: per end offset
    the highest epoch (of those a replay can start from: :meth:`TemporalSource.snapshots`), only those at or
    after the restart point."""
    best: dict[int, tuple[int, int, int]] = {}
    for s in source.snapshots():
        if s.end_offset - 1 >= restart and (s.end_offset not in best or s.epoch > best[s.end_offset][1]):
            best[s.end_offset] = (s.end_offset, s.epoch, s.last_contained_timestamp)
    return sorted(best.values())


def _snapshot_records(lake: Lake, state: LakeState, ids: Sequence[tuple[int, int, int]]) -> DataFrame | None:
    if not ids:
        return None
    chosen = " OR ".join(f"(snapshot_end_offset = {e} AND snapshot_epoch = {p})" for e, p, _ in ids)
    return (
        lake.scan("snapshots", state)
        .where(chosen)
        .where(~F.col("is_control") & _not_noop())
        .select(
            F.col("position").alias("offset"),
            F.col("position").alias("batch_base_offset"),
            F.col("position").alias("batch_last_offset"),
            F.col("batch_leader_epoch").alias("epoch"),
            "timestamp",
            "type",
            "api_key",
            "version",
            "payload",
            F.col("snapshot_end_offset").alias("snapshot_end"),
            "snapshot_epoch",
            F.col("last_contained_timestamp").alias("snapshot_ts"),
        )
        .withColumn("route", F.expr(route_key_sql()))
    )


def _stored_rows(lake: Lake, state: LakeState, at: int) -> DataFrame | None:
    """The versions current at offset ``at``, one JSON row each (with their version columns)."""
    frames = []
    for part, table in PART_TABLES.items():
        if table not in state.versions:
            continue
        t = lake.scan(table, state).where(
            (F.col("from_offset") <= at) & (F.col("to_offset").isNull() | (F.col("to_offset") > at))
        )
        frames.append(
            t.select(
                F.lit(part).alias("part"),
                F.to_json(F.struct(*t.columns), {"ignoreNullFields": "false"}).alias("payload"),
                F.expr(row_route_key_sql(part)).alias("route"),
            )
        )
    if not frames:
        return None
    out = frames[0]
    for f in frames[1:]:
        out = out.unionByName(f)
    return out


def _plan_inputs(
    lake: Lake, state: LakeState, restart: int, snapshot_ids: Sequence[tuple[int, int, int]], stored_at: int | None
) -> tuple[dict[str, int], list[tuple[str, str]]]:
    """What the shard plan needs, from the typed tables rather than the records' payloads: the (topic id, name)
    pairs of every TopicRecord of the log (a superset of the replayed ones: coupling more topics is still
    exact), of the snapshots to load and of the versions the replay resumes from; and the weight of each topic
    id, its partition records from ``restart`` on (the bulk of any log; other keys weigh little and go to
    shards by hash). Read in process for a local lake, else with small Spark aggregations."""
    files = lake.files(state)
    weights: dict[str, int] = {}
    pairs: list[tuple[str, str]] = []
    typed = [t for t in ("partitions", "partition_changes") if t in state.versions]
    chosen = " OR ".join(f"(snapshot_end_offset = {e} AND snapshot_epoch = {p})" for e, p, _ in snapshot_ids)
    if files is not None:
        if "topics" in state.versions:
            t = files.read("topics", columns=["topic_id", "name"])
            pairs += zip(t["topic_id"].to_pylist(), t["name"].to_pylist())
        for table in typed:
            ids = files.read(
                table,
                columns=["topic_id"],
                where=pc.field("offset") >= restart,
                prune=lambda f: f.may_hold("offset", lo=restart),
            )["topic_id"]
            for r in pc.value_counts(ids).to_pylist():
                weights[TOPIC_ID + r["values"]] = weights.get(TOPIC_ID + r["values"], 0) + r["counts"]
        if snapshot_ids:
            ends = pa.array([e for e, _, _ in snapshot_ids], pa.int64())
            t = files.read(
                "snapshots",
                columns=["snapshot_end_offset", "snapshot_epoch", "payload"],
                where=(pc.field("type") == "TOPIC_RECORD") & pc.field("snapshot_end_offset").isin(ends),
            ).to_pylist()
            wanted = {(e, p) for e, p, _ in snapshot_ids}
            payloads = [r["payload"] for r in t if (r["snapshot_end_offset"], r["snapshot_epoch"]) in wanted]
            pairs += [(d["topicId"], d["name"]) for d in map(json.loads, payloads)]
    else:
        if "topics" in state.versions:
            pairs += [
                (r["topic_id"], r["name"]) for r in lake.table("topics", state).select("topic_id", "name").collect()
            ]
        if typed:
            union = lake.table(typed[0], state).select("offset", "topic_id")
            for table in typed[1:]:
                union = union.unionByName(lake.table(table, state).select("offset", "topic_id"))
            for r in union.where(F.col("offset") >= restart).groupBy("topic_id").count().collect():
                weights[TOPIC_ID + r["topic_id"]] = r["count"]
        if snapshot_ids:
            rows = lake.table("snapshots", state).where(f"type = 'TOPIC_RECORD' AND ({chosen})").select("payload")
            pairs += [(d["topicId"], d["name"]) for d in (json.loads(r["payload"]) for r in rows.collect())]
    if stored_at is not None:
        source = lake_source(lake, state)
        for part in ("topics", "topicNames"):
            if PART_TABLES[part] in state.versions:
                pairs += [(r["topicId"], r["name"]) for r in source.rows_at(part, stored_at)]
    return weights, [(TOPIC_ID + i, TOPIC_NAME + n) for i, n in pairs]


# --- the writes -----------------------------------------------------------------------------------


def _key_match(part: str) -> str:
    """The MERGE condition matching a stored version with its closing row."""
    conds = []
    for k in PART_KEYS[part]:
        if k == "entity":  # a map: compare its sorted entries
            conds.append("to_json(array_sort(map_entries(t.entity))) = to_json(array_sort(map_entries(c.entity)))")
        else:
            conds.append(f"t.`{k}` = c.`{k}`")
    return " AND ".join([*conds, "t.from_offset = c.from_offset", "t.to_offset IS NULL"])


def rewind(txn: LakeTransaction, state: LakeState, restart: int) -> list[str]:
    """Undo what the temporal image holds from offset ``restart`` on, before replaying from there:
    versions that begin there are deleted, versions that end there are current again, and the
    provenance and rejections from there on are deleted, as writes of the ingest's transaction ``txn``
    (``state``: what it reads). Returns the tables changed."""
    lake, spark = txn.lake, txn.lake.spark
    maybe = _may_hold_from(lake, state, restart)
    checks = []
    for part, table in PART_TABLES.items():
        if table in maybe:
            checks.append(
                lake.table(table, state)
                .where((F.col("from_offset") >= restart) | (F.col("to_offset") >= restart))
                .select(F.lit(table).alias("t"))
                .limit(1)
            )
    for table, cond in (
        (PROVENANCE, F.col("from_offset") >= restart),
        (
            REJECTIONS,
            (F.col("snapshot_end_offset").isNull() & (F.col("offset") >= restart))
            | (F.col("snapshot_end_offset") - 1 >= restart),
        ),
    ):
        if table in maybe:
            checks.append(lake.table(table, state).where(cond).select(F.lit(table).alias("t")).limit(1))
    if not checks:
        return []
    union = checks[0]
    for c in checks[1:]:
        union = union.unionByName(c)
    touched = sorted({r["t"] for r in union.collect()})

    def statements(table: str) -> list[str]:
        path = sql_table(lake.path(table))
        if table == PROVENANCE:
            return [f"DELETE FROM {path} WHERE from_offset >= {restart}"]
        if table == REJECTIONS:
            return [
                f"DELETE FROM {path} WHERE (snapshot_end_offset IS NULL AND offset >= {restart}) "
                f"OR snapshot_end_offset - 1 >= {restart}"
            ]
        return [
            f"DELETE FROM {path} WHERE from_offset >= {restart}",
            f"UPDATE {path} SET to_offset = NULL WHERE to_offset >= {restart}",
        ]

    per_table(lambda table: txn.apply(table, lambda _: [spark.sql(q).collect() for q in statements(table)]), touched)
    return touched


def _may_hold_from(lake: Lake, state: LakeState, restart: int) -> set[str]:
    """The temporal-image tables of ``state`` that may hold rows :func:`rewind` changes: for a lake read in
    process, those whose files' statistics allow an offset at or after ``restart`` (an ingest that only
    appends has none, and needs no Spark job to know it); else all."""
    tables = [t for t in [*PART_TABLES.values(), PROVENANCE, REJECTIONS] if t in state.versions]
    files = lake.files(state)
    if files is None:
        return set(tables)

    def later(table: str, f: DataFile) -> bool:
        if table == PROVENANCE:
            return f.may_hold("from_offset", lo=restart)
        if table == REJECTIONS:
            return f.may_hold("offset", lo=restart) or f.may_hold("snapshot_end_offset", lo=restart + 1)
        return f.may_hold("from_offset", lo=restart) or f.may_hold("to_offset", lo=restart)

    return {t for t in tables if any(later(t, f) for f in files.files(t))}


def write_versions(txn: LakeTransaction, state: LakeState, staging: str) -> list[str]:
    """Write what a build staged, as writes of the lake transaction ``txn`` (``state``: the versions it
    read): closings first (one MERGE per table), then new versions, rejections and provenance (one
    append each; a table's first write creates it). Returns the tables written."""
    spark = txn.lake.spark
    writes: dict[str, list[Callable[[], None]]] = {}  # per table, in order: its MERGE, then its append
    closings = os.path.join(staging, "closings")
    for part, table in PART_TABLES.items():
        directory = os.path.join(closings, table)
        if os.path.isdir(directory):
            frame = spark.read.schema(from_arrow_schema(_CLOSING_SCHEMAS[part])).parquet(glob_escaped(directory))
            writes.setdefault(table, []).append(partial(_close, txn, part, table, frame))
    staged = [("versions", PART_TABLES[p], _VERSION_SCHEMAS[p]) for p in PART_KEYS]
    staged += [("rows", REJECTIONS, REJECTIONS_SCHEMA), ("rows", PROVENANCE, PROVENANCE_SCHEMA)]
    for kind, table, schema in staged:
        directory = os.path.join(staging, kind, table)
        if os.path.isdir(directory):
            frame = spark.read.schema(from_arrow_schema(schema)).parquet(glob_escaped(directory))
            if kind == "versions":
                frame = point_read_layout(frame, _staged_rows(directory))
            writes.setdefault(table, []).append(partial(txn.write, table, frame, create=table not in state.versions))
    per_table(lambda steps: [step() for step in steps], writes.values())
    return list(writes)


def _close(txn: LakeTransaction, part: str, table: str, closings: DataFrame) -> None:
    """End the stored versions of ``table`` that ``closings`` names (one MERGE)."""
    spark = txn.lake.spark
    view = f"closings_{table}"
    closings.createOrReplaceTempView(view)
    merge = (
        f"MERGE INTO {sql_table(txn.lake.path(table))} t USING {view} c ON {_key_match(part)} "
        "WHEN MATCHED THEN UPDATE SET t.to_offset = c.to_offset"
    )
    txn.apply(table, lambda _: spark.sql(merge).collect())
    spark.catalog.dropTempView(view)


def compact_versions(txn: LakeTransaction, table: str) -> None:
    """Rewrite a versions table in the point-read layout (:func:`point_read_layout`) as a write of ``txn``
    that changes no row (``dataChange=false``): many incremental ingests' small files become few, still
    laid out for reads at one offset (Delta's ``OPTIMIZE`` would bin-pack them in any order)."""
    frame = txn.lake.table(table, txn.state())
    rows = frame.count()
    txn.apply(
        table,
        lambda path: (
            point_read_layout(frame, rows)
            .write.format("delta")
            .mode("overwrite")
            .option("dataChange", "false")
            .save(path)
        ),
    )


COMPACTORS: dict[str, Compactor] = {table: compact_versions for table in PART_TABLES.values()}
"""How ingest and ``kraft-replay optimize`` compact the temporal image's versions tables."""


FILE_ROWS = 1 << 18
"""Versions per file a build writes (a point read opens a few such files per level, see :func:`point_read_layout`)."""


def point_read_layout(frame: DataFrame, rows: int) -> DataFrame:
    """Versions laid out for reads at one offset: grouped by how long they held (level = log2 of the
    interval, open versions last) and, within a level, by ``from_offset``, in files of about
    :data:`FILE_ROWS`. A file's ``from_offset``/``to_offset`` statistics then span about its level's width, so
    the image at X reads, per level, only the files around X (Delta's data skipping, or the in-process
    reader's pruning) — a few files per level instead of every file holding an early ``from_offset``."""
    level = (
        F.when(F.col("to_offset").isNull(), F.lit(64))
        .otherwise(F.floor(F.log2(F.col("to_offset") - F.col("from_offset") + 1)))
        .cast("int")
    )
    files = max(1, -(-rows // FILE_ROWS))
    leveled = frame.withColumn("_level", level)
    # one file needs no range bounds (repartitionByRange samples the rows first: a Spark job per table)
    spread = leveled.repartition(1) if files == 1 else leveled.repartitionByRange(files, "_level", "from_offset")
    return spread.sortWithinPartitions("_level", "from_offset").drop("_level")


def _staged_rows(directory: str) -> int:
    """Rows of the staged Parquet files in ``directory`` (from their footers)."""
    return sum(
        pq.ParquetFile(os.path.join(directory, f)).metadata.num_rows
        for f in os.listdir(directory)
        if f.endswith(".parquet")
    )


def maintain_versions(change: LakeChange) -> None:
    """The ingest's :data:`~metadata.ingest.Derive` step: bring the temporal image up to the records
    just written, inside the ingest's transaction. A lake without versions gets them built from the
    whole log; otherwise only the new tail is replayed, from the versions current at its restart point
    (earlier if the ingest added records or a snapshot before the end, or a transaction was open there)."""
    txn, after = change.txn, change.after
    lake, before = txn.lake, txn.base
    staging = os.path.join(change.staging, "versions")
    shutil.rmtree(staging, ignore_errors=True)
    if not any(t in before.versions for t in PART_TABLES.values()):
        if "records" in after.versions or "snapshots" in after.versions:
            build_versions(lake, after, staging=staging)
            write_versions(txn, after, staging)
        return
    starts = [end - 1 for end, epoch in change.snapshots_added if snapshot_kind(end, epoch) == "snapshot"]
    if change.first_added is not None:
        starts.append(change.first_added)
    if not starts:
        return
    restart = restart_point(lake_source(lake, after), min(starts))
    # versions may reach past the records' high-water mark (a snapshot ending beyond the log): always look
    if rewind(txn, after, restart):
        # the tables as rewound
        after = replace(txn.state(), high_water_mark=after.high_water_mark, kafka_version=after.kafka_version)
    build_versions(lake, after, restart=restart, stored_at=restart - 1, staging=staging)
    write_versions(txn, after, staging)
