"""Ingest: decode inputs on Spark in parallel, stage them, then append what is new to the Delta lake.

1. Discover the input files and cut large segments into byte ranges at batch boundaries.
2. Decode on Spark: one task per file or range (``mapInArrow`` over :func:`decode_to_arrow`);
   the output, records plus reported issues, is staged as Parquet under ``<lake>/_staging``.
   The driver only collects issues and small aggregates, never the records.
3. Any fatal issue (corrupt batch without ``--allow-gaps``, unknown record type without
   ``--skip-unknown``, conflicting records for one offset) stops here: nothing was committed.
4. Append to ``records`` and each typed table only the staged records whose offset the
   committed ``records`` lacks, and to ``snapshots`` only snapshots (end offset, epoch) not yet
   stored (offset-filtered appends: re-runs add nothing), then commit the new table versions in
   ``_ingests`` (see :mod:`metadata.lake`).
"""

from __future__ import annotations

import datetime as dt
import time
import uuid
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor

import pyarrow as pa
from pydantic import BaseModel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import Window
from pyspark.sql.pandas.types import from_arrow_schema
from pyspark.sql import types as T

from metadata.columns import DECODED_SCHEMA, decode_to_arrow
from metadata.lake import Lake, LakeState
from metadata.progress import spark_progress
from metadata.readers import InputFile, ReadOptions, discover, plan_ranges
from metadata.tables import RECORDS_SCHEMA, SNAPSHOTS_SCHEMA, TYPED_TABLES, typed_rows
from metadata.spark import get_spark

MAX_SPLIT_BYTES = 64 << 20
MIN_SPLIT_BYTES = 4 << 20


class IngestError(RuntimeError):
    """Bad input; the lake was left unchanged."""


class IngestReport(BaseModel):
    """What an ingest read and what it added."""

    lake: str
    run_id: str
    files: list[str]
    bytes_read: int
    records_decoded: int
    records_added: int
    snapshot_records_added: int
    snapshots: list[str]
    by_type: dict[str, int]
    control_records: int
    first_offset: int | None
    last_offset: int | None
    high_water_mark: int
    warnings: list[str]
    skipped: list[str]
    seconds: float


_TASK_SCHEMA = T.StructType([T.StructField("file", T.StringType()), T.StructField("start", T.LongType()),
                             T.StructField("end", T.LongType()), T.StructField("options", T.StringType())])


def _decode_tasks(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Spark task body: decode the files/ranges listed in the input rows."""
    for batch in batches:
        for task in batch.to_pylist():
            yield from decode_to_arrow(InputFile.model_validate_json(task["file"]),
                                       ReadOptions.model_validate_json(task["options"]), task["start"], task["end"])


def split_size(total_bytes: int, parallelism: int) -> int:
    """Byte-range size giving every core about two decode tasks, within [4 MiB, 64 MiB]."""
    return max(MIN_SPLIT_BYTES, min(MAX_SPLIT_BYTES, -(-total_bytes // max(1, 2 * parallelism))))


def plan(paths: Sequence[str], split_bytes: int | None = None, parallelism: int = 2
         ) -> list[tuple[InputFile, int, int | None]]:
    """Decode tasks for ``paths``: (file, start byte, end byte or None); ``split_bytes`` defaults
    to :func:`split_size` of the inputs' total size."""
    files = [f for path in paths for f in discover(path)]
    split = split_bytes or split_size(sum(f.size for f in files), parallelism)
    tasks = [(f, start, end) for f in files for start, end in plan_ranges(f, split)]
    unique = {(f.path, start, end): (f, start, end) for f, start, end in tasks}  # a file named twice is read once
    return list(unique.values())


def _stage(spark: SparkSession, tasks: list[tuple[InputFile, int, int | None]], options: ReadOptions,
           staging: str) -> DataFrame:
    rows = [(f.model_dump_json(), start, end, options.model_dump_json()) for f, start, end in tasks]
    frame = spark.createDataFrame(rows, _TASK_SCHEMA).repartition(max(1, len(rows)))
    schema = from_arrow_schema(DECODED_SCHEMA)
    # partitioned by record type: each typed-table append then reads only its types' files
    frame.mapInArrow(_decode_tasks, schema).write.mode("overwrite").partitionBy("type").parquet(staging)
    return spark.read.schema(schema).parquet(staging)


def _append(lake: Lake, name: str, rows: DataFrame, schema: T.StructType) -> int:
    """Append ``rows`` to table ``name`` (one Delta commit); returns its new version."""
    rows.select(*[F.col(f.name).cast(f.dataType) for f in schema.fields]).write.format("delta").mode("append") \
        .save(lake.path(name))
    return lake.current_version(name)


def _check_conflicts(log: DataFrame) -> None:
    """Two inputs holding different metadata records at one offset (divergent logs) is an error."""
    clash = (log.where("NOT is_control").groupBy("offset")
             .agg(F.countDistinct(F.coalesce("payload", F.lit("")), "type").alias("n"),
                                       F.collect_set("source_file").alias("files"))
             .where("n > 1").orderBy("offset").limit(1).collect())
    if clash:
        raise IngestError(f"offset {clash[0]['offset']} holds different records in {', '.join(clash[0]['files'])}"
                          " (divergent logs?)")


def ingest(paths: Sequence[str], lake_location: str, *, options: ReadOptions | None = None,
           spark: SparkSession | None = None, split_bytes: int | None = None,
           progress: bool = True) -> IngestReport:
    """Ingest log directories / segments / snapshots / dump-log texts into the lake; idempotent."""
    options = options or ReadOptions()
    started = time.monotonic()
    spark = spark or get_spark()
    tasks = plan(paths, split_bytes, spark.sparkContext.defaultParallelism)
    lake = Lake(lake_location, spark)
    run_id = uuid.uuid4().hex
    staging = lake.path(f"_staging/{run_id}")
    with spark_progress(spark, "decoding", enabled=progress):
        staged = _stage(spark, tasks, options, staging)
    try:
        issues = staged.where("issue_severity IS NOT NULL").select("issue_severity", "issue").collect()
        fatal = [i["issue"] for i in issues if i["issue_severity"] == "fatal"]
        if fatal:
            raise IngestError(fatal[0] + (f" (and {len(fatal) - 1} more)" if len(fatal) > 1 else ""))
        records = staged.where("issue_severity IS NULL")
        log = records.where("snapshot_end_offset IS NULL")
        spans, by_type, stats = _summarise(log)
        if any(b["lo"] <= a["hi"] for a, b in zip(spans, spans[1:])):  # inputs overlap: check, then dedupe
            _check_conflicts(log)
            # the same offset from several inputs (a segment and its dump-log text): keep the fullest row
            pick = Window.partitionBy("offset").orderBy(F.length(F.coalesce("payload", F.lit(""))).desc(),
                                                        "source_file")
            log = log.withColumn("_n", F.row_number().over(pick)).where("_n = 1").drop("_n")
            _, by_type, stats = _summarise(log)
        with spark_progress(spark, "writing Delta tables", enabled=progress):
            state = lake.prepare()
            added, snap_added, snapshots = _write(lake, state, log, records, stats, by_type)
        gaps = [f"non-consecutive offsets: {a['file']} ends at {a['hi']}, {b['file']} starts at {b['lo']}"
                for a, b in zip(spans, spans[1:]) if b["lo"] > a["hi"] + 1]
        hwm = max(state.high_water_mark, stats["hi"] if stats["hi"] is not None else -1)
        lake.commit(LakeState(seq=state.seq + 1, run_id=run_id, committed_at=_now(), inputs=[str(p) for p in paths],
                              records_added=added, snapshots_added=len(snapshots), high_water_mark=hwm,
                              versions=state.versions))
    finally:
        _remove(spark, staging)
    return IngestReport(
        lake=lake.uri, run_id=run_id, files=sorted({t[0].path for t in tasks}),
        bytes_read=sum(f.size for f, s, e in tasks if s == 0), records_decoded=stats["n"], records_added=added,
        snapshot_records_added=snap_added, snapshots=snapshots, by_type=dict(sorted(by_type.items())),
        control_records=int(stats["control"] or 0), first_offset=stats["lo"], last_offset=stats["hi"],
        high_water_mark=hwm, warnings=[i["issue"] for i in issues if i["issue_severity"] == "warning"] + gaps,
        skipped=[i["issue"] for i in issues if i["issue_severity"] == "error"], seconds=time.monotonic() - started)


def _write(lake: Lake, state: LakeState, log: DataFrame, records: DataFrame, stats: dict, by_type: dict[str, int]
           ) -> tuple[int, int, list[str]]:
    """Offset-filtered appends: only records (and snapshots) the committed state lacks are written."""
    added = 0
    if stats["n"]:
        if stats["lo"] > state.high_water_mark:  # all beyond the committed log: the staged rows as they are
            fresh = log
            added = stats["n"]
        else:
            stored = lake.table("records", state).where(F.col("offset").between(stats["lo"], stats["hi"]))
            fresh = log.join(stored.select("offset"), "offset", "left_anti").persist()
            added = fresh.count()
        if added:
            state.versions["records"] = _append(lake, "records", fresh, RECORDS_SCHEMA)
            wanted = [n for n, t in TYPED_TABLES.items() if any(r in by_type for r in t.record_types)]
            with ThreadPoolExecutor(4) as pool:  # one commit per table; tables are independent
                state.versions.update(pool.map(
                    lambda n: (n, _append(lake, n, typed_rows(n, fresh), TYPED_TABLES[n].schema())), wanted))
        fresh.unpersist()
    snaps = records.where("snapshot_end_offset IS NOT NULL")
    stored_ids = {(r[0], r[1]) for r in lake.table("snapshots", state)
                  .select("snapshot_end_offset", "snapshot_epoch").distinct().collect()}
    ids = sorted((r[0], r[1]) for r in snaps.select("snapshot_end_offset", "snapshot_epoch").distinct().collect())
    new_ids = [i for i in ids if i not in stored_ids]
    snap_added = 0
    if new_ids:
        snaps = snaps.where(" OR ".join(f"(snapshot_end_offset = {e} AND snapshot_epoch = {p})" for e, p in new_ids))
        header = (snaps.where("control_type = 'SNAPSHOT_HEADER'")
                  .select("snapshot_end_offset", "snapshot_epoch",
                          F.get_json_object("payload", "$.lastContainedLogTimestamp").cast("long")
                          .alias("last_contained_timestamp")))
        rows = (snaps.drop("position").withColumnRenamed("offset", "position")
                .join(header, ["snapshot_end_offset", "snapshot_epoch"], "left")
                .withColumn("kind", F.when(F.col("source_file").endswith("bootstrap.checkpoint"), "bootstrap")
                            .otherwise("snapshot"))
                .dropDuplicates(["snapshot_end_offset", "snapshot_epoch", "position"]).persist())
        snap_added = rows.count()
        state.versions["snapshots"] = _append(lake, "snapshots", rows, SNAPSHOTS_SCHEMA)
        rows.unpersist()
    return added, snap_added, ["bootstrap.checkpoint" if p < 0 else f"{e:020d}-{p:010d}" for e, p in new_ids]


def _summarise(log: DataFrame) -> tuple[list[dict], dict[str, int], dict]:
    """One small aggregation: per-file offset spans (by first offset), counts by type, totals."""
    rows = (log.groupBy("source_file", "type", "is_control")
            .agg(F.count("*").alias("n"), F.min("offset").alias("lo"), F.max("offset").alias("hi")).collect())
    files: dict[str, dict] = {}
    for r in rows:
        span = files.setdefault(r["source_file"], {"file": r["source_file"], "lo": r["lo"], "hi": r["hi"]})
        span["lo"], span["hi"] = min(span["lo"], r["lo"]), max(span["hi"], r["hi"])
    by_type: dict[str, int] = {}
    for r in rows:
        if r["type"] is not None:
            by_type[r["type"]] = by_type.get(r["type"], 0) + r["n"]
    stats = {"n": sum(r["n"] for r in rows), "control": sum(r["n"] for r in rows if r["is_control"]),
             "lo": min((r["lo"] for r in rows), default=None), "hi": max((r["hi"] for r in rows), default=None)}
    return sorted(files.values(), key=lambda f: (f["lo"], f["hi"])), by_type, stats


def _now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


def _remove(spark: SparkSession, uri: str) -> None:
    """Delete the staging directory (through Hadoop's FileSystem, so any URI works)."""
    jvm = spark.sparkContext._jvm
    path = jvm.org.apache.hadoop.fs.Path(uri)
    path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration()).delete(path, True)
