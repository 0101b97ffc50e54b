"""Ingest: decode inputs on Spark in parallel, stage them, then append what is new to the Delta lake.

1. Discover the input files and cut large segments into byte ranges at batch boundaries.
2. Decode on Spark: one task per file or range; each task writes its records as Parquet
   partitioned by record type (:mod:`metadata.staging`) and returns counts, offset spans and
   issues. The driver collects only those, never the records.
3. Any fatal issue (corrupt batch without ``--allow-gaps``, unknown record type without
   ``--skip-unknown``, conflicting records for one offset) stops here: nothing was committed.
4. As one lake transaction (:meth:`metadata.lake.Lake.transact`: under the lake's lease, on top of
   the committed state, retried if another writer overtakes it): append only the staged records
   whose offset the committed ``records`` lacks (no comparison at all when every staged offset is
   beyond the committed high-water mark) to the typed tables, four at a time, then to ``records``;
   and to ``snapshots`` only snapshots (end offset, epoch) not yet stored. One Delta commit per
   table (offset-filtered appends: re-runs add nothing); then commit the new table versions in
   ``_ingests``.
"""

from __future__ import annotations

import operator
import os
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from functools import partial, reduce
from typing import Any

from pydantic import BaseModel
from pyspark.sql import Column, DataFrame, Row, SparkSession, Window
from pyspark.sql import functions as F

from metadata.lake import (
    COMPACT_AT_FILES,
    Commit,
    Compactor,
    Lake,
    LakeState,
    LakeTransaction,
    Lease,
    per_table,
)
from metadata.log import BOOTSTRAP_IDS
from metadata.progress import spark_progress
from metadata.readers import InputFile, InputKind, ReadOptions, batch_offset_at, discover, plan_ranges
from metadata.schema.releases import kafka_releases
from metadata.spark import default_parallelism, get_spark
from metadata.staging import remove, stage, staging_dir
from metadata.tables import TYPED_TABLES, typed_rows

MAX_SPLIT_BYTES = 64 << 20
MIN_SPLIT_BYTES = 4 << 20


class IngestError(RuntimeError):
    """Bad input; the lake was left unchanged."""


class LakeChange(BaseModel):
    """What an ingest is changing, for what is derived from the records (the temporal image) inside the
    same lake transaction: the transaction (its committed base, and where derived tables are written),
    the state with the records written so far (and their high-water mark), the lowest offset added, the
    snapshots added, and a staging directory of this attempt."""

    model_config = {"arbitrary_types_allowed": True}

    txn: LakeTransaction
    after: LakeState
    first_added: int | None
    snapshots_added: list[tuple[int, int]]
    staging: str


Derive = Callable[[LakeChange], None]
"""Writes tables derived from the ingest's records through ``change.txn`` (committed with the ingest)."""


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
    seq: int | None = None  # the _ingests seq committed; None when nothing was (commit_empty=False)


def split_size(total_bytes: int, parallelism: int) -> int:
    """Byte-range size giving every core about two decode tasks, within [4 MiB, 64 MiB]."""
    return max(MIN_SPLIT_BYTES, min(MAX_SPLIT_BYTES, -(-total_bytes // max(1, 2 * parallelism))))


Task = tuple[InputFile, int, int | None]  # a file, its start byte and end byte (None: to the end)


def plan(
    paths: Sequence[str], split_bytes: int | None = None, parallelism: int = 2, stored: tuple[int, int] | None = None
) -> tuple[list[Task], list[Task]]:
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
    segments = sorted(
        {f.path: f for f, _, _ in unique if f.kind is InputKind.SEGMENT}.values(),
        key=lambda f: (os.path.dirname(f.path), f.base_offset),
    )
    following = {
        a.path: b for a, b in zip(segments, segments[1:]) if os.path.dirname(a.path) == os.path.dirname(b.path)
    }
    keep: list[Task] = []
    skip: list[Task] = []
    for task in unique:
        f, start, end = task
        if f.kind is InputKind.SEGMENT:
            lo = batch_offset_at(f, start)
            after = (
                batch_offset_at(f, end)
                if end is not None
                else batch_offset_at(following[f.path], 0)
                if f.path in following
                else None
            )
            if lo is not None and after is not None and stored[0] <= lo and after - 1 <= stored[1]:
                skip.append(task)
                continue
        keep.append(task)
    return keep, skip


def _stored_span(lake: Lake, state: LakeState) -> tuple[int, int] | None:
    """(first, last) offsets of the committed log when it has no gap, else None."""
    if "records" not in state.versions:
        return None
    files = lake.files(state)
    stored = files.files("records") if files is not None and not files.masked("records") else None
    if stored is not None and all(f.stats.get("offset", (None,))[0] is not None for f in stored):
        # the files' statistics: the table is only appended to and compacted (no deletion vectors)
        first, count = min((f.stats["offset"][0] for f in stored), default=None), sum(f.rows for f in stored)
    else:
        first, count = lake.table("records", state).agg(F.min("offset"), F.count(F.lit(1))).first()
    return (first, state.high_water_mark) if count and count == state.high_water_mark - first + 1 else None


def _check_conflicts(log: DataFrame) -> None:
    """Two inputs holding different metadata records at one offset (divergent logs) is an error."""
    clash = (
        log.where("NOT is_control")
        .groupBy("offset")
        .agg(
            F.countDistinct(F.coalesce("payload", F.lit("")), "type").alias("n"),
            F.collect_set("source_file").alias("files"),
        )
        .where("n > 1")
        .orderBy("offset")
        .limit(1)
        .collect()
    )
    if clash:
        raise IngestError(
            f"offset {clash[0]['offset']} holds different records in {', '.join(clash[0]['files'])} (divergent logs?)"
        )


def lake_release(committed: LakeState, kafka_version: str | None) -> str:
    """The Kafka release line an ingest into a lake at ``committed`` follows (see :func:`ingest`)."""
    lines = [r.line for r in kafka_releases()]
    if kafka_version is not None and kafka_version not in lines:
        raise IngestError(
            f"Kafka {kafka_version} is not supported: kraft-replay follows Kafka {lines[0]} to {lines[-1]}"
        )
    if committed.seq == 0:
        return kafka_version or lines[-1]
    if committed.kafka_version is None:
        raise IngestError(
            "this lake was written before kraft-replay followed each Kafka release's replay rules: ingest into a "
            "new lake (its temporal image would mix two rule sets)"
        )
    if kafka_version is not None and kafka_version != committed.kafka_version:
        raise IngestError(
            f"this lake follows Kafka {committed.kafka_version}'s replay rules (its first ingest's --kafka-version); "
            f"ingest into a new lake to follow Kafka {kafka_version}'s"
        )
    return committed.kafka_version


def ingest(
    paths: Sequence[str],
    lake_location: str,
    *,
    options: ReadOptions | None = None,
    spark: SparkSession | None = None,
    split_bytes: int | None = None,
    progress: bool = True,
    wait: float = 600.0,
    commit_empty: bool = True,
    on_wait: Callable[[Lease], None] | None = None,
    derive: Derive | None = None,
    compactors: Mapping[str, Compactor] | None = None,
    kafka_version: str | None = None,
) -> IngestReport:
    """Ingest log directories / segments / snapshots / dump-log texts into the lake; idempotent.

    ``kafka_version``: the Kafka release line whose replay rules the temporal image follows, recorded in the
    lake (a new lake: default the newest; a lake that has one keeps it, and another is an error).

    The inputs are decoded and staged first; then, as one lake transaction (:meth:`Lake.transact`, which
    waits at most ``wait`` seconds for another writer's lease), what the committed state lacks is
    appended, ``derive`` writes what is derived from the records (the temporal image) in the same
    transaction, a table the transaction wrote that now has more than
    :data:`~metadata.lake.COMPACT_AT_FILES` data files is compacted (``compactors``: per table, else Delta
    ``OPTIMIZE``), and all is committed. ``commit_empty=False``: when the inputs hold nothing new,
    nothing is committed (``seq`` None in the report).
    """
    options = options or ReadOptions()
    started = time.monotonic()
    spark = spark or get_spark()
    lake = Lake(lake_location, spark)
    committed = lake.committed()  # what the lake holds already (the lease is taken only to write)
    release = lake_release(committed, kafka_version)
    tasks, skipped = plan(paths, split_bytes, default_parallelism(spark), _stored_span(lake, committed))
    run_id = uuid.uuid4().hex
    staging = staging_dir(lake.uri, run_id)
    try:
        _make_dir(staging)
        with spark_progress(spark, "decoding", enabled=progress):
            staged, summary = stage(spark, tasks, options, staging)
        issues = [r for r in summary if r["issue_severity"] is not None]
        fatal = [i["issue"] for i in issues if i["issue_severity"] == "fatal"]
        if fatal:
            raise IngestError(fatal[0] + (f" (and {len(fatal) - 1} more)" if len(fatal) > 1 else ""))
        log = staged.where("snapshot_end_offset IS NULL")
        spans, by_type, stats = _summarise(
            [r for r in summary if r["issue_severity"] is None and r["snapshot_end_offset"] is None]
        )
        if any(b["lo"] <= a["hi"] for a, b in zip(spans, spans[1:])):  # inputs overlap: check, then dedupe
            _check_conflicts(log)
            # the same offset from several inputs (a segment and its dump-log text): keep the fullest row
            pick = Window.partitionBy("offset").orderBy(
                F.length(F.coalesce("payload", F.lit(""))).desc(), "source_file"
            )
            log = log.withColumn("_n", F.row_number().over(pick)).where("_n = 1").drop("_n")
            _, by_type, stats = _summarise(_groups(log))
        snapshot_ids = sorted(
            {
                (r["snapshot_end_offset"], r["snapshot_epoch"])
                for r in summary
                if r["issue_severity"] is None and r["snapshot_end_offset"] is not None
            }
        )
        written: dict = {"added": 0, "snap_added": 0, "snapshots": [], "hwm": committed.high_water_mark}
        seq: int | None = None

        def body(txn: LakeTransaction) -> Commit:
            added, snap_added, snapshots, first_added, new_ids = _write(txn, log, staged, stats, by_type, snapshot_ids)
            hwm = max(txn.base.high_water_mark, stats["hi"] if stats["hi"] is not None else -1)
            if derive is not None:
                derive(
                    LakeChange(
                        txn=txn,
                        after=replace(txn.state(), high_water_mark=hwm, kafka_version=release),
                        first_added=first_added,
                        snapshots_added=new_ids,
                        staging=os.path.join(staging, f"derived-{txn.attempt}"),
                    )
                )
            txn.compact(txn.written, compactors, at_files=COMPACT_AT_FILES)
            written.update(
                added=added,
                snap_added=snap_added,
                snapshots=snapshots,
                hwm=hwm,
            )
            return Commit(
                inputs=[os.path.abspath(p) for p in paths],
                records_added=added,
                snapshots_added=len(snapshots),
                high_water_mark=written["hwm"],
                kafka_version=release,
            )

        if commit_empty or _holds_news(lake, committed, log, staged, stats, snapshot_ids):
            with spark_progress(spark, "writing Delta tables", enabled=progress):
                seq = lake.transact(body, run_id=run_id, wait=wait, on_wait=on_wait).seq
        gaps = [
            f"non-consecutive offsets: {a['file']} ends at {a['hi']}, {b['file']} starts at {b['lo']}"
            for a, b in zip(spans, spans[1:])
            if b["lo"] > a["hi"] + 1
        ]
    finally:
        remove(staging)
    return IngestReport(
        lake=lake.uri,
        run_id=run_id,
        files=sorted({t[0].path for t in tasks + skipped}),
        bytes_read=_bytes(tasks),
        bytes_skipped=_bytes(skipped),
        records_decoded=stats["n"],
        records_added=written["added"],
        snapshot_records_added=written["snap_added"],
        snapshots=written["snapshots"],
        by_type=dict(sorted(by_type.items())),
        control_records=int(stats["control"] or 0),
        first_offset=stats["lo"],
        last_offset=stats["hi"],
        high_water_mark=written["hwm"],
        warnings=[i["issue"] for i in issues if i["issue_severity"] == "warning"] + gaps,
        skipped=[i["issue"] for i in issues if i["issue_severity"] == "error"],
        seconds=time.monotonic() - started,
        seq=seq,
    )


def follow(
    paths: Sequence[str],
    lake_location: str,
    *,
    interval: float,
    stop: threading.Event,
    on_round: Callable[[int, IngestReport | None, Exception | None], None],
    **options: Any,
) -> int:
    """Ingest ``paths`` (a live log directory) every ``interval`` seconds until ``stop`` is set; the number
    of rounds. Each round is :func:`ingest` committing only what is new (``commit_empty=False``); a round
    that fails (bad input, another writer's lease held past ``wait``) is reported to ``on_round`` and the
    next one tries again. A round interrupted midway leaves nothing visible (see :mod:`metadata.lake`)."""
    rounds = 0
    while not stop.is_set():
        rounds += 1
        try:
            report = ingest(paths, lake_location, commit_empty=False, **options)
        except Exception as exc:  # noqa: BLE001 — a live log's next round may succeed
            on_round(rounds, None, exc)
        else:
            on_round(rounds, report, None)
        stop.wait(interval)
    return rounds


def _make_dir(path: str) -> None:
    """Create ``path``; a concurrent ingest may remove an empty parent (its ``_staging``) meanwhile."""
    for _ in range(5):
        try:
            os.makedirs(path, exist_ok=True)
            return
        except FileNotFoundError:
            continue
    os.makedirs(path, exist_ok=True)


def _new_rows(
    lake: Lake, state: LakeState, log: DataFrame, staged: DataFrame, stats: dict, snapshot_ids: list[tuple[int, int]]
) -> tuple[DataFrame, int, int | None, list[tuple[int, int]]]:
    """(the log records ``state`` lacks, their count, their lowest offset, the snapshot ids it lacks): no
    comparison at all when every staged offset is beyond the committed high-water mark."""
    fresh, added, first = log, stats["n"], stats["lo"]
    if stats["n"] and stats["lo"] <= state.high_water_mark:  # some offsets may be stored: only those the lake lacks
        stored = lake.table("records", state).where(F.col("offset").between(stats["lo"], stats["hi"]))
        fresh = log.join(stored.select("offset"), "offset", "left_anti").persist()
        added, first = fresh.agg(F.count(F.lit(1)), F.min("offset")).first()
    stored_ids = (
        {
            (r[0], r[1])
            for r in lake.table("snapshots", state).select("snapshot_end_offset", "snapshot_epoch").distinct().collect()
        }
        if snapshot_ids
        else set()
    )
    return fresh, added, first if added else None, [i for i in snapshot_ids if i not in stored_ids]


def _holds_news(
    lake: Lake, state: LakeState, log: DataFrame, staged: DataFrame, stats: dict, snapshot_ids: list[tuple[int, int]]
) -> bool:
    """Whether the staged inputs hold records or snapshots the committed ``state`` lacks (a committed state
    only grows: nothing new for it is nothing new for any later one)."""
    fresh, added, _, new_ids = _new_rows(lake, state, log, staged, stats, snapshot_ids)
    fresh.unpersist()
    return bool(added or new_ids)


def _write(
    txn: LakeTransaction,
    log: DataFrame,
    staged: DataFrame,
    stats: dict,
    by_type: dict[str, int],
    snapshot_ids: list[tuple[int, int]],
) -> tuple[int, int, list[str], int | None, list[tuple[int, int]]]:
    """Offset-filtered appends: only records (and snapshots) the committed state lacks are written.

    One Delta commit per table. The typed tables and snapshots (mostly driver-side Delta work on
    little data) are appended four at a time, then ``records`` alone: it keeps every core busy, and
    the small appends beside it only slow each other down (measured on 2 cores).
    """
    fresh, added, first_added, new_ids = _new_rows(txn.lake, txn.base, log, staged, stats, snapshot_ids)
    small: list[tuple[str, Callable[[], DataFrame]]] = []  # typed tables and snapshots
    if added:
        small += [
            (n, partial(typed_rows, n, fresh))
            for n, t in TYPED_TABLES.items()
            if any(r in by_type for r in t.record_types)
        ]
    snapshot_rows = _snapshot_rows(staged, new_ids).persist() if new_ids else None
    if snapshot_rows is not None:
        small.append(("snapshots", lambda: snapshot_rows))
    per_table(lambda a: txn.write(a[0], a[1]()), small)
    if added:
        txn.write("records", fresh)
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
    header = snaps.where("control_type = 'SNAPSHOT_HEADER'").select(
        "snapshot_end_offset",
        "snapshot_epoch",
        F.get_json_object("payload", "$.lastContainedLogTimestamp").cast("long").alias("last_contained_timestamp"),
    )
    first_copy = Window.partitionBy("snapshot_end_offset", "snapshot_epoch", "position").orderBy("source_file")
    return (
        snaps.drop("position")
        .withColumnRenamed("offset", "position")
        .join(header, ["snapshot_end_offset", "snapshot_epoch"], "left")
        .withColumn("kind", F.when(_bootstrap_id(), "bootstrap").otherwise("snapshot"))
        # a snapshot found twice (a copy elsewhere): the rows of its first path
        .withColumn("_n", F.row_number().over(first_copy))
        .where("_n = 1")
        .drop("_n")
    )


def _bootstrap_id() -> Column:
    """Whether a snapshots row's id is a bootstrap file's (:func:`~metadata.log.snapshot_kind`)."""
    return reduce(
        operator.or_,
        ((F.col("snapshot_end_offset") == end) & (F.col("snapshot_epoch") == epoch) for end, epoch in BOOTSTRAP_IDS),
    )


def _groups(log: DataFrame) -> list[Row]:
    """Counts and offset spans of ``log`` per (file, record type, control flag), as staging reports them."""
    return (
        log.groupBy("source_file", "type", "is_control")
        .agg(F.count("*").alias("n"), F.min("offset").alias("lo"), F.max("offset").alias("hi"))
        .collect()
    )


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
    stats = {
        "n": sum(r["n"] for r in groups),
        "control": sum(r["n"] for r in groups if r["is_control"]),
        "lo": min((r["lo"] for r in groups), default=None),
        "hi": max((r["hi"] for r in groups), default=None),
    }
    return sorted(files.values(), key=lambda f: (f["lo"], f["hi"])), by_type, stats


def _bytes(tasks: list[Task]) -> int:
    return sum((f.size if end is None else end) - start for f, start, end in tasks)
