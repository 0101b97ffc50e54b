"""The temporal image on Spark: the reference engine's recorder, run per shard of the log in Arrow-batched
Python workers, and the Delta writes of an ingest on Spark (:mod:`image.temporal.build` says what is built and written).

One pass (three jobs, four stages, whatever the log's size or number of topics and transactions):

1. **Plan** (no job for a lake on a local path: :func:`image.temporal.build.plan_inputs`): the (topic id, name) pairs
   of the TopicRecords and the topics' partition record counts, from the typed tables;
   :class:`~image.temporal.sharding.ShardPlan` turns them into a shard per topic component.
2. **Route and sort**: the records to replay (offset ≥ the restart point; no NoOps or control records),
   the records of the snapshots to load and one boundary row per snapshot and shard, and — when an ingest
   continues the lake's versions — the versions current at the restart point (the shard's starting
   image), read as :meth:`~metadata.lake.protocol.Lake.scan` gives them. Each row gets its shard (a broadcast join
   on the route key; transaction markers and ClearElr of every topic are copied to every shard), is
   hash-partitioned so that shard s is task s (:func:`~image.temporal.sharding.partition_keys`) and sorted within
   the task by (shard, offset, phase, position).
3. **Replay** (``mapInArrow``): each shard's rows go to a :class:`~image.temporal.versions.VersionRecorder`; its
   versions, closings of stored versions, rejections and transaction spans are written by the task itself
   as Parquet under the run's staging directory (like the ingest's decode tasks); the task returns
   counts.
4. **Write** (:func:`write_on_spark`): per table, new versions are appended (first time: created, with deletion
   vectors on and statistics of the interval columns), stored versions are ended with one MERGE, all as commits
   the caller makes visible in ``_ingests``.

The routing keeps every coupling of Kafka's replay inside one shard (:mod:`image.temporal.sharding`), so the result
is exactly that of one sequential replay for any number of shards.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator, Sequence
from functools import partial

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from image.image import MetadataImage
from image.loader import snapshots_to_load
from image.parts import Row
from image.provenance import MetadataProvenance
from image.release import rules_for
from image.temporal.reads import lake_rules
from image.temporal.sharding import (
    EVERY_SHARD,
    ShardPlan,
    partition_keys,
    route_key_sql,
    row_route_key,
    row_route_key_sql,
)
from image.temporal.staged import (
    FILE_ROWS,
    STAGED,
    SUMMARY,
    BuildReport,
    Files,
    TaskSink,
    build_report,
    key_match,
    lake_source,
    plan_inputs,
    rewind_steps,
)
from image.temporal.versions import VersionRecorder
from metadata.lake.protocol import Lake, LakeState, LakeTransaction, per_table
from metadata.lake.spark import default_parallelism, glob_escaped
from metadata.lake.spark_store import spark_schema, sql_table
from metadata.lake.version_tables import PART_TABLES, closing_schema
from metadata.log.records import LogRecord, payload_data

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


def _replay_shards(
    batches: Iterator[pa.RecordBatch], *, staging: str, plan: ShardPlan, restart: int, release: str
) -> Iterator[pa.RecordBatch]:
    """The ``mapInArrow`` function: replay the shards of this task, one recorder each, under the rules of Kafka
    ``release``."""
    from pyspark import TaskContext

    context = TaskContext.get()
    files = Files(staging, context.partitionId() if context is not None else 0)
    summaries: list[Row] = []
    shard: int | None = None
    stored: dict[str, list[Row]] = {}
    recorder: VersionRecorder | None = None
    sink = TaskSink(files)
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
        recorder, stored, sink = None, {}, TaskSink(files)
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


def build_on_spark(
    lake: Lake,
    state: LakeState,
    *,
    restart: int = -1,
    shards: int | None = None,
    stored_at: int | None = None,
    staging: str,
    seed: int | None = None,
) -> tuple[BuildReport, dict[str, str]]:
    """:func:`image.temporal.build.build_versions` as one sharded pass on Spark (``shards``: default two per core)."""
    spark = lake.spark
    started = time.monotonic()
    shards = shards or max(2, 2 * default_parallelism(spark))
    records = (
        lake.scan("records", state)
        .where((F.col("offset") >= restart) & ~F.col("is_control") & _not_noop())
        .select(*[F.col(c) for c in _RECORD_COLUMNS if c != "epoch"], F.col("batch_leader_epoch").alias("epoch"))
        .withColumn("route", F.expr(route_key_sql()))
    )
    snapshot_ids = snapshots_to_load(lake_source(lake, state).snapshots(), restart)
    snap_records = _snapshot_records(lake, state, snapshot_ids)
    stored = _stored_rows(lake, state, stored_at) if stored_at is not None else None

    weights, edges = plan_inputs(lake, state, restart, snapshot_ids, stored_at)
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
        spark_schema(SUMMARY),
    ).collect()
    return build_report(restart, shards, [r.asDict() for r in summaries], started)


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


# --- the writes -----------------------------------------------------------------------------------


def rewind_on_spark(txn: LakeTransaction, state: LakeState, restart: int, maybe: set[str]) -> list[str]:
    """:func:`image.temporal.build.rewind` on Spark for the tables ``maybe`` (those that may hold rows from
    ``restart`` on):
    one job finds those that do, then per table the Delta statements of :func:`image.temporal.build.rewind_steps`."""
    lake, spark = txn.lake, txn.lake.spark
    checks = [
        lake.table(table, state)
        .where(" OR ".join(f"({p})" for _, p in rewind_steps(table, restart)))
        .select(F.lit(table).alias("t"))
        .limit(1)
        for table in sorted(maybe)
    ]
    union = checks[0]
    for c in checks[1:]:
        union = union.unionByName(c)
    touched = sorted({r["t"] for r in union.collect()})

    def statements(table: str) -> list[str]:
        path = sql_table(lake.path(table))
        return [
            f"DELETE FROM {path} WHERE {p}" if step == "delete" else f"UPDATE {path} SET to_offset = NULL WHERE {p}"
            for step, p in rewind_steps(table, restart)
        ]

    per_table(lambda table: txn.apply(table, lambda _: [spark.sql(q).collect() for q in statements(table)]), touched)
    return touched


def write_on_spark(txn: LakeTransaction, state: LakeState, staging: str) -> list[str]:
    """:func:`image.temporal.build.write_versions` on Spark: a MERGE per table ending stored versions, appends in the
    point-read layout (:func:`point_read_layout`)."""
    spark = txn.lake.spark
    writes: dict[str, list[Callable[[], None]]] = {}  # per table, in order: its MERGE, then its append
    closings = os.path.join(staging, "closings")
    for part, table in PART_TABLES.items():
        directory = os.path.join(closings, table)
        if os.path.isdir(directory):
            frame = spark.read.schema(spark_schema(closing_schema(part))).parquet(glob_escaped(directory))
            writes.setdefault(table, []).append(partial(_close, txn, part, table, frame))
    for kind, table, schema in STAGED:
        directory = os.path.join(staging, kind, table)
        if os.path.isdir(directory):
            frame = spark.read.schema(spark_schema(schema)).parquet(glob_escaped(directory))
            if kind == "versions":
                frame = point_read_layout(frame, _staged_rows(directory))
            writes.setdefault(table, []).append(partial(txn.write, table, frame, create=table not in state.versions))
    per_table(lambda steps: [step() for step in steps], writes.values())
    return list(writes)


_ENTITY_EQUAL = "to_json(array_sort(map_entries(t.entity))) = to_json(array_sort(map_entries(c.entity)))"
"""Spark compares no maps: a quota entity as its sorted entries."""


def _close(txn: LakeTransaction, part: str, table: str, closings: DataFrame) -> None:
    """End the stored versions of ``table`` that ``closings`` names (one MERGE)."""
    spark = txn.lake.spark
    view = f"closings_{table}"
    closings.createOrReplaceTempView(view)
    merge = (
        f"MERGE INTO {sql_table(txn.lake.path(table))} t USING {view} c ON {key_match(part, _ENTITY_EQUAL)} "
        "WHEN MATCHED THEN UPDATE SET t.to_offset = c.to_offset"
    )
    txn.apply(table, lambda _: spark.sql(merge).collect())
    spark.catalog.dropTempView(view)


def compact_on_spark(txn: LakeTransaction, table: str) -> None:
    """:func:`image.temporal.build.compact_versions` on Spark: an overwrite with ``dataChange=false``."""
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


def point_read_layout(frame: DataFrame, rows: int) -> DataFrame:
    """Versions laid out for reads at one offset (:func:`image.temporal.build.point_read_order`), in files of about
    :data:`~image.temporal.build.FILE_ROWS`."""
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
