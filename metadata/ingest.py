"""Ingest: decode inputs on Spark in parallel, stage them, then append what is new to the Delta lake.

1. Discover the input files and cut large segments into byte ranges at batch boundaries.
2. Decode on Spark: one task per file or range; each task writes its records as Parquet
   partitioned by record type (:mod:`metadata.staging`) and returns counts, offset spans and
   issues. The driver collects only those, never the records.
3. Any fatal issue (corrupt batch without ``--allow-gaps``, unknown record type without
   ``--skip-unknown``, conflicting records for one offset) stops here: nothing was committed.
4. Append only the staged records whose offset the committed ``records`` lacks (no comparison at
   all when every staged offset is beyond the committed high-water mark) to the typed tables, four
   at a time, then to ``records``; and to ``snapshots`` only snapshots (end offset, epoch) not yet
   stored. One Delta commit per table (offset-filtered appends: re-runs add nothing); then commit
   the new table versions in ``_ingests`` (see :mod:`metadata.lake`).
"""

from __future__ import annotations

import datetime as dt
import os
import time
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial

from pydantic import BaseModel
from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import Window

from metadata.lake import Lake, LakeState
from metadata.progress import spark_progress
from metadata.readers import InputFile, InputKind, ReadOptions, batch_offset_at, discover, plan_ranges
from metadata.spark import default_parallelism, get_spark
from metadata.staging import remove, stage, staging_dir
from metadata.tables import TYPED_TABLES, typed_rows

MAX_SPLIT_BYTES = 64 << 20
MIN_SPLIT_BYTES = 4 << 20


class IngestError(RuntimeError):
    """Bad input; the lake was left unchanged."""


class LakeChange(BaseModel):
    """What an ingest changed, for what is derived from the records (the temporal image) before the
    ingest's commit: the committed state before it, the state it is about to commit (table versions
    written so far), the lowest offset it added and the snapshots it added."""

    model_config = {"arbitrary_types_allowed": True}

    lake: Lake
    before: LakeState
    after: LakeState
    first_added: int | None
    snapshots_added: list[tuple[int, int]]
    staging: str


Derive = Callable[[LakeChange], list[str]]
"""Writes tables derived from the ingest's records; returns their names (committed with the ingest)."""


class IngestReport(BaseModel):
    """What an ingest read and what it added."""

    lake: str
    run_id: str
    files: list[str]
    bytes_read: int
    bytes_skipped: int  # segment bytes not decoded: every offset in them is in the lake already
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


def split_size(total_bytes: int, parallelism: int) -> int:
    """Byte-range size giving every core about two decode tasks, within [4 MiB, 64 MiB]."""
    return max(MIN_SPLIT_BYTES, min(MAX_SPLIT_BYTES, -(-total_bytes // max(1, 2 * parallelism))))


Task = tuple[InputFile, int, int | None]  # a file, its start byte and end byte (None: to the end)


def plan(paths: Sequence[str], split_bytes: int | None = None, parallelism: int = 2,
         stored: tuple[int, int] | None = None) -> tuple[list[Task], list[Task]]:
    """(decode tasks, skipped tasks) for ``paths``; ``split_bytes`` defaults to :func:`split_size` of
    the inputs' total size.

    ``stored`` = (first, last) offsets the lake holds without a gap: segment ranges whose offsets all
    lie inside it are skipped, so a re-run, or the next ingest of a growing log, decodes only what
    is new. A range's offsets run from its first batch to the batch that starts the next range or the
    next segment of its directory; the last range of the last segment is always decoded.
    """
    files = [f for path in paths for f in discover(path)]
    split = split_bytes or split_size(sum(f.size for f in files), parallelism)
    tasks = [(f, start, end) for f in files for start, end in plan_ranges(f, split)]
    unique = list({(f.path, s, e): (f, s, e) for f, s, e in tasks}.values())  # a file named twice is read once
    if stored is None:
        return unique, []
    segments = sorted({f.path: f for f, _, _ in unique if f.kind is InputKind.SEGMENT}.values(),
                      key=lambda f: (os.path.dirname(f.path), f.base_offset))
    following = {a.path: b for a, b in zip(segments, segments[1:])
                 if os.path.dirname(a.path) == os.path.dirname(b.path)}
    keep: list[Task] = []
    skip: list[Task] = []
    for task in unique:
        f, start, end = task
        if f.kind is InputKind.SEGMENT:
            lo = batch_offset_at(f, start)
            after = (batch_offset_at(f, end) if end is not None
                     else batch_offset_at(following[f.path], 0) if f.path in following else None)
            if lo is not None and after is not None and stored[0] <= lo and after - 1 <= stored[1]:
                skip.append(task)
                continue
        keep.append(task)
    return keep, skip


def _stored_span(lake: Lake, state: LakeState) -> tuple[int, int] | None:
    """(first, last) offsets of the committed log when it has no gap, else None."""
    if "records" not in state.versions:
        return None
    first, count = lake.table("records", state).agg(F.min("offset"), F.count(F.lit(1))).first()
    return (first, state.high_water_mark) if count and count == state.high_water_mark - first + 1 else None


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
           progress: bool = True, derive: Derive | None = None) -> IngestReport:
    """Ingest log directories / segments / snapshots / dump-log texts into the lake; idempotent.
    ``derive`` writes what is derived from the records (the temporal image) in the same commit."""
    options = options or ReadOptions()
    started = time.monotonic()
    spark = spark or get_spark()
    lake = Lake(lake_location, spark)
    state = lake.prepare()  # the committed state, after undoing an interrupted ingest (readers see no change)
    tasks, skipped = plan(paths, split_bytes, default_parallelism(spark), _stored_span(lake, state))
    run_id = uuid.uuid4().hex
    staging = staging_dir(lake.uri, run_id)
    try:
        with spark_progress(spark, "decoding", enabled=progress):
            staged, summary = stage(spark, tasks, options, staging)
        issues = [r for r in summary if r["issue_severity"] is not None]
        fatal = [i["issue"] for i in issues if i["issue_severity"] == "fatal"]
        if fatal:
            raise IngestError(fatal[0] + (f" (and {len(fatal) - 1} more)" if len(fatal) > 1 else ""))
        log = staged.where("snapshot_end_offset IS NULL")
        spans, by_type, stats = _summarise([r for r in summary if r["issue_severity"] is None
                                            and r["snapshot_end_offset"] is None])
        if any(b["lo"] <= a["hi"] for a, b in zip(spans, spans[1:])):  # inputs overlap: check, then dedupe
            _check_conflicts(log)
            # the same offset from several inputs (a segment and its dump-log text): keep the fullest row
            pick = Window.partitionBy("offset").orderBy(F.length(F.coalesce("payload", F.lit(""))).desc(),
                                                        "source_file")
            log = log.withColumn("_n", F.row_number().over(pick)).where("_n = 1").drop("_n")
            _, by_type, stats = _summarise(_groups(log))
        snapshot_ids = sorted({(r["snapshot_end_offset"], r["snapshot_epoch"]) for r in summary
                               if r["issue_severity"] is None and r["snapshot_end_offset"] is not None})
        before = state.model_copy(deep=True)
        with spark_progress(spark, "writing Delta tables", enabled=progress):
            added, snap_added, snapshots, first_added, new_ids = _write(lake, state, log, staged, stats, by_type,
                                                                        snapshot_ids)
        if derive is not None:
            with spark_progress(spark, "building the temporal image", enabled=progress):
                derived = derive(LakeChange(lake=lake, before=before, after=state, first_added=first_added,
                                            snapshots_added=new_ids, staging=staging))
            if missing := [n for n, v in lake.current_versions(derived).items() if v is None]:
                raise RuntimeError(f"tables {', '.join(missing)} were written but have no Delta version")
            state.versions.update(lake.current_versions(derived))
        gaps = [f"non-consecutive offsets: {a['file']} ends at {a['hi']}, {b['file']} starts at {b['lo']}"
                for a, b in zip(spans, spans[1:]) if b["lo"] > a["hi"] + 1]
        hwm = max(before.high_water_mark, stats["hi"] if stats["hi"] is not None else -1)
        lake.commit(LakeState(seq=state.seq + 1, run_id=run_id, committed_at=_now(),
                              inputs=[os.path.abspath(p) for p in paths], records_added=added,
                              snapshots_added=len(snapshots), high_water_mark=hwm, versions=state.versions))
    finally:
        remove(staging)
    return IngestReport(
        lake=lake.uri, run_id=run_id, files=sorted({t[0].path for t in tasks + skipped}),
        bytes_read=_bytes(tasks), bytes_skipped=_bytes(skipped), records_decoded=stats["n"], records_added=added,
        snapshot_records_added=snap_added, snapshots=snapshots, by_type=dict(sorted(by_type.items())),
        control_records=int(stats["control"] or 0), first_offset=stats["lo"], last_offset=stats["hi"],
        high_water_mark=hwm, warnings=[i["issue"] for i in issues if i["issue_severity"] == "warning"] + gaps,
        skipped=[i["issue"] for i in issues if i["issue_severity"] == "error"], seconds=time.monotonic() - started)


def _write(lake: Lake, state: LakeState, log: DataFrame, staged: DataFrame, stats: dict, by_type: dict[str, int],
           snapshot_ids: list[tuple[int, int]]) -> tuple[int, int, list[str], int | None, list[tuple[int, int]]]:
    """Offset-filtered appends: only records (and snapshots) the committed state lacks are written.

    One Delta commit per table. The typed tables and snapshots (mostly driver-side Delta work on
    little data) are appended four at a time, then ``records`` alone: it keeps every core busy, and
    the small appends beside it only slow each other down (measured on 2 cores).
    """
    committed = set(state.versions)  # the tables that exist (before the writes add to state)
    added = 0
    first_added: int | None = None
    small: list[tuple[str, Callable[[], DataFrame]]] = []  # typed tables and snapshots
    fresh = log
    if stats["n"]:
        if stats["lo"] <= state.high_water_mark:  # some offsets may be stored: only those the lake lacks
            stored = lake.table("records", state).where(F.col("offset").between(stats["lo"], stats["hi"]))
            fresh = log.join(stored.select("offset"), "offset", "left_anti").persist()
            added, first_added = fresh.agg(F.count(F.lit(1)), F.min("offset")).first()
        else:  # all beyond the committed log: the staged rows as they are
            added, first_added = stats["n"], stats["lo"]
        if added:
            small += [(n, partial(typed_rows, n, fresh)) for n, t in TYPED_TABLES.items()
                      if any(r in by_type for r in t.record_types)]
    stored_ids = {(r[0], r[1]) for r in lake.table("snapshots", state)
                  .select("snapshot_end_offset", "snapshot_epoch").distinct().collect()}
    new_ids = [i for i in snapshot_ids if i not in stored_ids]
    snapshot_rows = _snapshot_rows(staged, new_ids).persist() if new_ids else None
    if snapshot_rows is not None:
        small.append(("snapshots", lambda: snapshot_rows))
    with ThreadPoolExecutor(4) as pool:
        list(pool.map(lambda a: lake.write(a[0], a[1](), create=a[0] not in committed), small))
    written = [name for name, _ in small]
    if added:
        lake.write("records", fresh, create="records" not in committed)
        written.append("records")
    versions = lake.current_versions(written)
    if missing := [name for name, version in versions.items() if version is None]:
        raise RuntimeError(f"tables {', '.join(missing)} were written but have no Delta version at {lake.uri}")
    state.versions.update(versions)
    snap_added = 0
    if snapshot_rows is not None:
        snap_added = snapshot_rows.count()
        snapshot_rows.unpersist()
    fresh.unpersist()
    names = ["bootstrap.checkpoint" if p < 0 else f"{e:020d}-{p:010d}" for e, p in new_ids]
    return added, snap_added, names, first_added if added else None, new_ids


def _snapshot_rows(staged: DataFrame, ids: list[tuple[int, int]]) -> DataFrame:
    """Rows of the ``snapshots`` table for the staged snapshots ``ids`` (end offset, epoch)."""
    snaps = staged.where(" OR ".join(f"(snapshot_end_offset = {e} AND snapshot_epoch = {p})" for e, p in ids))
    header = (snaps.where("control_type = 'SNAPSHOT_HEADER'")
              .select("snapshot_end_offset", "snapshot_epoch",
                      F.get_json_object("payload", "$.lastContainedLogTimestamp").cast("long")
                      .alias("last_contained_timestamp")))
    first_copy = Window.partitionBy("snapshot_end_offset", "snapshot_epoch", "position").orderBy("source_file")
    return (snaps.drop("position").withColumnRenamed("offset", "position")
            .join(header, ["snapshot_end_offset", "snapshot_epoch"], "left")
            .withColumn("kind", F.when(F.col("source_file").endswith("bootstrap.checkpoint"), "bootstrap")
                        .otherwise("snapshot"))
            # a snapshot found twice (a copy elsewhere): the rows of its first path
            .withColumn("_n", F.row_number().over(first_copy)).where("_n = 1").drop("_n"))


def _groups(log: DataFrame) -> list[Row]:
    """Counts and offset spans of ``log`` per (file, record type, control flag), as staging reports them."""
    return (log.groupBy("source_file", "type", "is_control")
            .agg(F.count("*").alias("n"), F.min("offset").alias("lo"), F.max("offset").alias("hi")).collect())


def _summarise(groups: Sequence[Row | dict]) -> tuple[list[dict], dict[str, int], dict]:
    """Per-file offset spans (by first offset), counts by type and totals of the log's groups."""
    files: dict[str, dict] = {}
    for r in groups:
        span = files.setdefault(r["source_file"], {"file": r["source_file"], "lo": r["lo"], "hi": r["hi"]})
        span["lo"], span["hi"] = min(span["lo"], r["lo"]), max(span["hi"], r["hi"])
    by_type: dict[str, int] = {}
    for r in groups:
        if r["type"] is not None:
            by_type[r["type"]] = by_type.get(r["type"], 0) + r["n"]
    stats = {"n": sum(r["n"] for r in groups), "control": sum(r["n"] for r in groups if r["is_control"]),
             "lo": min((r["lo"] for r in groups), default=None), "hi": max((r["hi"] for r in groups), default=None)}
    return sorted(files.values(), key=lambda f: (f["lo"], f["hi"])), by_type, stats


def _bytes(tasks: list[Task]) -> int:
    return sum((f.size if end is None else end) - start for f, start, end in tasks)


def _now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


