"""Ingest on Spark: decoding in parallel tasks that stage Parquet, Delta writes on Spark.

Each Spark task (``mapInArrow`` over :func:`metadata.lake.staging.stage_tasks`) decodes one file or byte range and
writes its records as Parquet partitioned by record type under the run's staging directory, returning only
counts, offset spans and issues; the driver collects only those, never the records. The typed tables and the
snapshots' rows are computed by the same pyarrow code an ingest in process runs (:mod:`metadata.lake.tables`), here
in Spark's Python workers; every table is written by Delta on Spark.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from functools import partial

import pyarrow as pa
from pyspark.sql import DataFrame, Row, SparkSession, Window
from pyspark.sql import functions as F

from metadata.lake.progress import spark_progress
from metadata.lake.protocol import Lake, LakeState, LakeTransaction, per_table
from metadata.lake.spark import default_parallelism, glob_escaped
from metadata.lake.spark_store import spark_schema
from metadata.lake.staging import SUMMARY_SCHEMA, TASK_SCHEMA, IngestError, Task, stage_tasks
from metadata.lake.tables import SNAPSHOTS_SCHEMA, TYPED_TABLES, snapshot_rows, typed_rows
from metadata.log.columns import DECODED_SCHEMA
from metadata.log.errors import KraftReplayError
from metadata.log.readers import ReadOptions


class StagingError(KraftReplayError, RuntimeError):
    """The staged files are not what the decode tasks wrote (a staging path the workers do not share)."""


def task_frame(spark: SparkSession, tasks: list[Task], options: ReadOptions, staging: str) -> DataFrame:
    """One row per decode task (:data:`~metadata.lake.staging.TASK_SCHEMA`), one Spark partition each."""
    rows = [(i, f.to_json(), start, end, options.to_json(), staging) for i, (f, start, end) in enumerate(tasks)]
    return spark.createDataFrame(rows, spark_schema(TASK_SCHEMA)).repartition(max(1, len(rows)))


def stage(spark: SparkSession, tasks: list[Task], options: ReadOptions, staging: str) -> tuple[DataFrame, list[Row]]:
    """Decode and stage ``tasks`` on Spark: (the staged records, the tasks' summary rows)."""
    frame = task_frame(spark, tasks, options, staging)
    summary = frame.mapInArrow(stage_tasks, spark_schema(SUMMARY_SCHEMA)).collect()
    schema = spark_schema(DECODED_SCHEMA)
    expected = sum(r["n"] for r in summary if r["issue_severity"] is None)
    if not expected or any(r["issue_severity"] == "fatal" for r in summary):
        return spark.createDataFrame([], schema), summary
    staged = spark.read.schema(schema).parquet(f"file://{glob_escaped(os.path.abspath(staging))}")
    found = staged.count()  # from the Parquet footers
    if found != expected:
        raise StagingError(
            f"the decode tasks staged {expected} records under {staging} but {found} are "
            "readable there: set KRAFT_REPLAY_STAGING to a directory every Spark worker shares"
        )
    return staged, summary


def _typed_batches(name: str, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """``mapInArrow`` body: the typed rows of table ``name`` (:func:`metadata.lake.tables.typed_rows`)."""
    for batch in batches:
        yield from typed_rows(name, pa.Table.from_batches([batch])).to_batches()


def _snapshot_group(snapshot: pa.Table) -> pa.Table:
    """``applyInArrow`` body: the ``snapshots`` rows of one snapshot's staged records."""
    first = snapshot.slice(0, 1).to_pylist()[0]
    return snapshot_rows(snapshot, [(first["snapshot_end_offset"], first["snapshot_epoch"])])


class SparkSteps:
    """The steps of an ingest on Spark (:class:`metadata.lake.ingest.Steps`; decoded records: a Spark DataFrame)."""

    def __init__(self, lake: Lake, progress: bool = False) -> None:
        self.lake, self.progress = lake, progress
        self.spark = lake.spark
        self.parallelism = default_parallelism(self.spark)

    def stage(self, tasks: list[Task], options: ReadOptions, staging: str) -> tuple[DataFrame, list[Row]]:
        with spark_progress(self.spark, "decoding", enabled=self.progress):
            return stage(self.spark, tasks, options, staging)

    def log(self, staged: DataFrame) -> DataFrame:
        return staged.where("snapshot_end_offset IS NULL")

    def check_conflicts(self, log: DataFrame) -> None:
        clash = (
            log.where("NOT is_control")
            .groupBy("offset")
            .agg(
                F.countDistinct(F.coalesce("payload", F.lit("")), "type").alias("n"),
                F.array_sort(F.collect_set("source_file")).alias("files"),
            )
            .where("n > 1")
            .orderBy("offset")
            .limit(1)
            .collect()
        )
        if clash:
            raise IngestError(
                f"offset {clash[0]['offset']} holds different records in {', '.join(clash[0]['files'])} "
                "(divergent logs?)"
            )

    def dedupe(self, log: DataFrame) -> DataFrame:
        pick = Window.partitionBy("offset").orderBy(F.length(F.coalesce("payload", F.lit(""))).desc(), "source_file")
        return log.withColumn("_n", F.row_number().over(pick)).where("_n = 1").drop("_n")

    def groups(self, log: DataFrame) -> list[Row]:
        return (
            log.groupBy("source_file", "type", "is_control")
            .agg(F.count("*").alias("n"), F.min("offset").alias("lo"), F.max("offset").alias("hi"))
            .collect()
        )

    def new_rows(
        self, state: LakeState, log: DataFrame, staged: DataFrame, stats: dict, snapshot_ids: list[tuple[int, int]]
    ) -> tuple[DataFrame, int, int | None, list[tuple[int, int]]]:
        """No comparison at all when every staged offset is beyond the committed high-water mark."""
        lake = self.lake
        fresh, added, first = log, stats["n"], stats["lo"]
        if stats["n"] and stats["lo"] <= state.high_water_mark:  # some offsets may be stored: only those it lacks
            stored = lake.table("records", state).where(F.col("offset").between(stats["lo"], stats["hi"]))
            fresh = log.join(stored.select("offset"), "offset", "left_anti").persist()
            added, first = fresh.agg(F.count(F.lit(1)), F.min("offset")).first()
        stored_ids = (
            {
                (r[0], r[1])
                for r in lake.table("snapshots", state)
                .select("snapshot_end_offset", "snapshot_epoch")
                .distinct()
                .collect()
            }
            if snapshot_ids
            else set()
        )
        return fresh, added, first if added else None, [i for i in snapshot_ids if i not in stored_ids]

    def write(
        self,
        txn: LakeTransaction,
        fresh: DataFrame | None,
        staged: DataFrame,
        by_type: dict[str, int],
        new_ids: list[tuple[int, int]],
    ) -> int:
        """The typed tables and snapshots (mostly driver-side Delta work on little data) four at a time, then
        ``records`` alone: it keeps every core busy, and the small appends beside it only slow each other down
        (measured on 2 cores)."""
        small: list[tuple[str, Callable[[], DataFrame]]] = []
        if fresh is not None:
            small += [
                (n, partial(self._typed, n, fresh))
                for n, t in TYPED_TABLES.items()
                if any(r in by_type for r in t.record_types)
            ]
        snapshots = self._snapshots(staged, new_ids).persist() if new_ids else None
        if snapshots is not None:
            small.append(("snapshots", lambda: snapshots))
        per_table(lambda a: txn.write(a[0], a[1]()), small)
        if fresh is not None:
            txn.write("records", fresh)
        if snapshots is None:
            return 0
        added = snapshots.count()
        snapshots.unpersist()
        return added

    def _typed(self, name: str, fresh: DataFrame) -> DataFrame:
        """Typed table ``name``'s rows of ``fresh``, projected in Spark's Python workers."""
        schema = spark_schema(TYPED_TABLES[name].schema())
        types = TYPED_TABLES[name].record_types
        return fresh.where(F.col("type").isin(*types)).mapInArrow(partial(_typed_batches, name), schema)

    def _snapshots(self, staged: DataFrame, ids: list[tuple[int, int]]) -> DataFrame:
        """Rows of the ``snapshots`` table for the staged snapshots ``ids`` (end offset, epoch)."""
        chosen = " OR ".join(f"(snapshot_end_offset = {e} AND snapshot_epoch = {p})" for e, p in ids)
        return (
            staged.where(chosen)
            .groupBy("snapshot_end_offset", "snapshot_epoch")
            .applyInArrow(_snapshot_group, spark_schema(SNAPSHOTS_SCHEMA))
        )

    def release(self, fresh: DataFrame) -> None:
        fresh.unpersist()

    def writing(self) -> contextlib.AbstractContextManager[None]:
        return spark_progress(self.spark, "writing Delta tables", enabled=self.progress)
