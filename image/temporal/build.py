"""The temporal image at ingest: every key's versions brought up to the records an ingest writes, inside its lake
transaction — the same steps whichever engine runs them.

1. **Where to replay** (:func:`build_versions`): the reference engine's recorder
   (:class:`~image.temporal.versions.VersionRecorder`) replays the log from the restart point as one shard on this
   process (:func:`record_here`) — always in process, and on Spark for a build of at most :data:`DRIVER_RECORDS`
   offsets — or sharded across Spark's Python workers (:mod:`image.temporal.spark.build`). Either way the versions, the
   closings of stored versions, the rejections and the transaction spans are staged as Parquet (:class:`Files`).
2. **What to undo first** (:func:`rewind`): when the restart point lies inside what the temporal image covers,
   the versions from there on are deleted or made current again.
3. **The writes** (:func:`write_versions`): stored versions are ended (one MERGE per table), new versions appended
   in the point-read layout (:func:`point_read_order`), rejections and provenance appended.

Steps 2 and 3 run with delta-rs in process (a lake ingested in process) or as Delta statements on Spark (an
ingest on Spark, :mod:`image.temporal.spark.build`): the same predicates, the same rows.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterator
from dataclasses import replace
from itertools import starmap
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from image.image import MetadataImage
from image.loader import snapshots_to_load
from image.parts import Row
from image.provenance import MetadataProvenance
from image.temporal.lake_source import ArrowSource
from image.temporal.reads import TemporalSource, lake_rules
from image.temporal.sharding import TOPIC_ID, ShardPlan, record_shard, routed_to
from image.temporal.staged import (
    STAGED,
    BuildReport,
    Files,
    TaskSink,
    build_report,
    key_match,
    lake_source,
    plan_inputs,
    rewind_steps,
)
from image.temporal.starts import restart_point
from image.temporal.versions import (
    VersionRecorder,
    replay_with_snapshots,
)
from metadata.lake.files import DataFile, LakeFiles
from metadata.lake.ingest import LakeChange
from metadata.lake.protocol import Compactor, Lake, LakeState, LakeTransaction, per_table
from metadata.lake.state import process_pool
from metadata.lake.version_tables import (
    PART_TABLES,
    PROVENANCE,
    REJECTIONS,
    closing_schema,
)
from metadata.log.columns import numpy_array
from metadata.log.errors import BadInput
from metadata.log.records import LOG_RECORD_COLUMNS, LogRecord, Snapshot, snapshot_kind

# --- the workers ----------------------------------------------------------------------------------


PARALLEL_BUILD_OFFSETS = 100_000
"""A build in process from the empty image of at least this many offsets replays as one shard per core, each in a
worker process (:func:`_record_shard`): the Spark pass's sharding (:mod:`image.temporal.sharding`) on this machine's
cores."""


def record_here(lake: Lake, state: LakeState, *, restart: int, stored_at: int | None, staging: str) -> list[Row]:
    """The build on this machine, into the staged files a Spark pass writes; the summary of each shard. One shard
    in this process: the sequential replay (:func:`~image.temporal.versions.replay_with_snapshots`) of what a Spark pass
    would ship — the log from ``restart`` without NoOps and control records, the snapshots to load, the versions
    current at ``stored_at``. A large build from the empty image of a lake read in process: one shard per core in
    worker processes, planned as a Spark pass plans them (:func:`plan_inputs`)."""
    source = lake_source(lake, state)
    started = time.monotonic()
    workers = os.cpu_count() or 1
    if (
        stored_at is None
        and workers > 1
        and lake.in_process
        and state.high_water_mark - max(restart, 0) >= PARALLEL_BUILD_OFFSETS
    ):
        weights, edges = plan_inputs(lake, state, restart, snapshots_to_load(source.snapshots(), restart), None)
        plan = ShardPlan.make(weights, edges, workers)
        with process_pool(workers) as pool:
            jobs = [(lake.uri, state, restart, staging, plan, shard) for shard in range(workers)]
            return list(pool.map(_record_shard, *zip(*jobs)))
    stored = {}
    if stored_at is not None:
        stored = {
            p: rows for p, t in PART_TABLES.items() if t in state.versions if (rows := source.rows_at(p, stored_at))
        }
    image = MetadataImage.from_rows(stored, MetadataProvenance(restart - 1, -1, -1, True)) if stored else None
    sink = TaskSink(Files(staging, 0))
    recorder = VersionRecorder(sink, image, stored or None, rules=lake_rules(state))
    log, snapshots = _replay_inputs(source, state, restart)
    replay_with_snapshots(recorder, log, snapshots)
    sink.flush()
    return [sink.summary(0, len(log) + sum(len(s.records) for s in snapshots), started)]


def _replay_inputs(source: TemporalSource, state: LakeState, restart: int) -> tuple[list[LogRecord], list[Snapshot]]:
    """What a build replays: the log from ``restart`` without NoOps and control records, the snapshots to load."""
    log = [r for r in source.log_records(max(restart, 0), state.high_water_mark) if replayed(r)]
    return log, _snapshot_inputs(source, restart)


def _snapshot_inputs(source: TemporalSource, restart: int) -> list[Snapshot]:
    """The snapshots a build from ``restart`` loads, without NoOps and control records."""
    return [
        Snapshot([r for r in source.snapshot_records(end, epoch) if replayed(r)], end, epoch, ts)
        for end, epoch, ts in snapshots_to_load(source.snapshots(), restart)
    ]


def _record_shard(location: str, state: LakeState, restart: int, staging: str, plan: ShardPlan, shard: int) -> Row:
    """A worker process of :func:`record_here`: shard ``shard`` of ``plan``, read from the lake at ``state``, into
    its own staged files. Only the shard's log records are made (:func:`shard_log`)."""
    started = time.monotonic()
    files = LakeFiles(location, state)
    log, snapshots = shard_log(files, state, restart, plan, shard), _snapshot_inputs(ArrowSource(files), restart)
    sink = TaskSink(Files(staging, shard))
    replayed_records = record_shard(log, snapshots, plan, shard, sink, lake_rules(state), routed=True)
    sink.flush()
    return sink.summary(shard, replayed_records, started)


_PARTITION_TABLES = {"partitions": "PARTITION_RECORD", "partition_changes": "PARTITION_CHANGE_RECORD"}
"""The typed tables of the partition records (the bulk of a log), and their record type."""


def shard_log(files: LakeFiles, state: LakeState, restart: int, plan: ShardPlan, shard: int) -> Iterator[LogRecord]:
    """The log records from ``restart`` that shard ``shard`` of ``plan`` replays (:func:`routed_to`), in offset order:
    what :func:`~image.temporal.sharding.record_shard` keeps of the whole log. A partition record (the bulk of a log)
    is routed by the topic id its typed table holds, so another shard's are never made from their payload JSON;
    every other record by its :func:`~image.temporal.sharding.route_key`."""
    first, last = max(restart, 0), state.high_water_mark
    t = files.read(
        "records",
        columns=list(LOG_RECORD_COLUMNS),
        where=(pc.field("offset") >= first)
        & (pc.field("offset") <= last)
        & pc.field("control_type").is_null()
        & (pc.field("type").is_null() | (pc.field("type") != "NO_OP_RECORD")),
        prune=lambda f: f.may_hold("offset", lo=first, hi=last),
    ).sort_by("offset")
    offsets = t["offset"].to_numpy()
    routed = np.zeros(len(offsets), dtype=bool)  # a partition record, its shard known from its topic id
    mine = np.zeros(len(offsets), dtype=bool)
    for table, kind in _PARTITION_TABLES.items():
        if table not in state.versions or not len(offsets):
            continue
        ids = files.read(
            table,
            columns=["offset", "topic_id"],
            where=(pc.field("offset") >= first) & (pc.field("offset") <= last) & pc.field("topic_id").is_valid(),
            prune=lambda f: f.may_hold("offset", lo=first, hi=last),
        )
        typed = ids["offset"].to_numpy()
        at = np.minimum(np.searchsorted(offsets, typed), len(offsets) - 1)
        of_kind = pc.fill_null(pc.equal(t["type"], kind), False).to_numpy(zero_copy_only=False)
        same = (offsets[at] == typed) & of_kind[at]  # the record at the typed row's offset, of its type
        topics = ids["topic_id"].filter(pa.array(same)).combine_chunks().dictionary_encode()
        shards = np.array([plan.shard(TOPIC_ID + i) for i in topics.dictionary.to_pylist()], dtype=np.int64)
        at = at[same]
        routed[at] = True
        mine[at] = shards[topics.indices.to_numpy()] == shard
    kept = mine | ~routed
    return _made(t.filter(pa.array(kept)), mine[kept], plan, shard)


def _made(rows: pa.Table, known: np.ndarray, plan: ShardPlan, shard: int) -> Iterator[LogRecord]:
    """The records of :func:`shard_log`, made a slice of ``rows`` at a time (a replay holds a slice's, not the
    log's): those ``known`` to be the shard's, and the others :func:`routed_to` it."""
    for start in range(0, rows.num_rows, SLICE_ROWS):
        part = rows.slice(start, SLICE_ROWS)
        records = starmap(LogRecord.from_columns, zip(*(part[c].to_pylist() for c in LOG_RECORD_COLUMNS)))
        yield from (r for r, k in zip(records, known[start : start + SLICE_ROWS]) if k or routed_to(r, plan, shard))


SLICE_ROWS = 1 << 16
"""Records a build worker makes at a time (:func:`shard_log`)."""


def replayed(record: LogRecord) -> bool:
    """What a shard replays: no control records, no NoOps (they change no key)."""
    return not record.is_control and record.type != "NO_OP_RECORD"


DRIVER_RECORDS = 200_000
"""Builds on Spark that replay at most this many log offsets run on the driver (see :func:`build_place`)."""


def build_place(state: LakeState, restart: int) -> str:
    """Where a build on Spark replays: ``driver`` (one recorder in this process, :func:`record_here`) or ``spark``
    (sharded across Python workers). ``KRAFT_REPLAY_BUILD`` (``driver``, ``spark``, ``auto``) forces it; ``auto``
    takes the driver for at most :data:`DRIVER_RECORDS` offsets from the restart point to the high-water mark. The
    recorder replays ≈ 40k records/s a core, while a Spark pass pays seconds of planning, shuffle and worker
    start whatever its size (BENCHMARKS.md), so small logs and incremental ingests are faster here; large builds
    spread over the cluster's cores. (An ingest in process always replays here.)"""
    chosen = os.environ.get("KRAFT_REPLAY_BUILD", "auto")
    if chosen not in ("auto", "driver", "spark"):
        raise BadInput(f"KRAFT_REPLAY_BUILD must be auto, driver or spark, not {chosen!r}")
    if chosen != "auto":
        return chosen
    return "driver" if state.high_water_mark - max(restart, 0) < DRIVER_RECORDS else "spark"


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
    versions tables; None starts from the empty image. ``place``: where the recorder runs on Spark (see
    :func:`build_place`; naming ``shards`` means Spark); a lake written in process replays here. Returns the report
    (tables not yet written) and the staged directories per (kind, table).
    """
    started = time.monotonic()
    if shards or (lake.on_spark and (place or build_place(state, restart)) == "spark"):
        from image.temporal.spark.build import build_on_spark

        return build_on_spark(
            lake, state, restart=restart, shards=shards, stored_at=stored_at, staging=staging, seed=seed
        )
    summaries = record_here(lake, state, restart=restart, stored_at=stored_at, staging=staging)
    return build_report(restart, len(summaries), summaries, started)


# --- the writes -----------------------------------------------------------------------------------


def rewind(txn: LakeTransaction, state: LakeState, restart: int) -> list[str]:
    """Undo what the temporal image holds from offset ``restart`` on, before replaying from there:
    versions that begin there are deleted, versions that end there are current again, and the
    provenance and rejections from there on are deleted, as writes of the ingest's transaction ``txn``
    (``state``: what it reads). Returns the tables changed."""
    maybe = _may_hold_from(txn.lake, state, restart)
    if not maybe:
        return []
    if txn.lake.on_spark:
        from image.temporal.spark.build import rewind_on_spark

        return rewind_on_spark(txn, state, restart, maybe)
    from metadata.lake.local_store import open_table

    def undo(table: str) -> None:
        def run(path: str) -> None:
            for step, predicate in rewind_steps(table, restart):
                delta = open_table(path)
                if step == "delete":
                    delta.delete(predicate, commit_properties=txn.commit_properties)
                else:
                    delta.update({"to_offset": "NULL"}, predicate=predicate, commit_properties=txn.commit_properties)

        txn.apply(table, run)

    before = txn.lake.current_versions(sorted(maybe))
    per_table(undo, sorted(maybe))
    after = txn.lake.current_versions(sorted(maybe))
    return sorted(t for t in maybe if after[t] != before[t])


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
    if txn.lake.on_spark:
        from image.temporal.spark.build import write_on_spark

        return write_on_spark(txn, state, staging)
    from metadata.lake.local_store import open_table

    writes: dict[str, list[Any]] = {}  # per table, in order: its MERGE, then its append
    for part, table in PART_TABLES.items():
        directory = os.path.join(staging, "closings", table)
        if os.path.isdir(directory):

            def close(path: str, part: str = part, directory: str = directory) -> None:
                closings = pq.read_table(directory, schema=closing_schema(part))
                open_table(path).merge(
                    closings,
                    key_match(part),
                    source_alias="c",
                    target_alias="t",
                    commit_properties=txn.commit_properties,
                ).when_matched_update({"to_offset": "c.to_offset"}).execute()

            writes.setdefault(table, []).append(lambda table=table, close=close: txn.apply(table, close))
    for kind, table, schema in STAGED:
        directory = os.path.join(staging, kind, table)
        if os.path.isdir(directory):
            rows = pq.read_table(directory, schema=schema)
            new = table not in state.versions
            # a table's first write (the whole build) keeps its open versions apart; a later one is small
            parts = point_read_files(rows, apart=new) if kind == "versions" else [rows]
            for n, part in enumerate(parts):
                writes.setdefault(table, []).append(
                    lambda table=table, part=part, create=new and n == 0: txn.write(table, part, create=create)
                )
    per_table(lambda steps: [step() for step in steps], writes.values())
    return list(writes)


def point_read_order(rows: pa.Table) -> pa.Array:
    """The order of versions laid out for reads at one offset: grouped by how long they held (level = log2 of the
    interval, open versions last) and, within a level, by ``from_offset``. A file's (or, in process, a row
    group's) ``from_offset``/``to_offset`` statistics then span about its level's width, so the image at X reads,
    per level, only the files around X instead of every file holding an early ``from_offset``."""
    import numpy as np

    start = rows["from_offset"].to_numpy(zero_copy_only=False)
    end = pc.fill_null(rows["to_offset"], -1).to_numpy(zero_copy_only=False)
    level = np.where(end < 0, 64, np.floor(np.log2(np.maximum(end - start + 1, 1))).astype(np.int64))
    return numpy_array(np.lexsort((start, level)))


def point_read_files(rows: pa.Table, *, apart: bool) -> list[pa.Table]:
    """Versions in the point-read order (:func:`point_read_order`), as the writes that lay them out (one file
    each, or more for a large one): with ``apart``, the closed versions and the open ones (``to_offset`` null,
    last in that order) in writes of their own. The MERGE that ends stored versions (:func:`write_versions`,
    ``key_match``: ``t.to_offset IS NULL``) skips, by their statistics, the files holding no open version, and
    rewrites only the files holding one (delta-rs rewrites every file it matched a row in): kept apart, a
    large table's closed versions are not rewritten by every later ingest."""
    ordered = rows.take(point_read_order(rows))
    if not apart:
        return [ordered]
    closed = ordered.num_rows - ordered["to_offset"].null_count
    return [part for part in (ordered.slice(0, closed), ordered.slice(closed)) if part.num_rows]


def compact_versions(txn: LakeTransaction, table: str) -> None:
    """Rewrite a versions table in the point-read layout (:func:`point_read_order`) as a write of ``txn`` that
    changes no row: many incremental ingests' small files become few, still laid out for reads at one offset
    (Delta's ``OPTIMIZE`` would bin-pack them in any order). On Spark the commit says ``dataChange=false``;
    delta-rs cannot, so in process it is an overwrite with the same rows."""
    if txn.lake.on_spark:
        from image.temporal.spark.build import compact_on_spark

        compact_on_spark(txn, table)
        return
    from deltalake import write_deltalake

    from metadata.lake.local_store import conforming, open_table, table_schema, writer_properties

    files = txn.lake.files(txn.state())
    assert files is not None
    rows = files.read(table)

    def overwrite(path: str) -> None:
        delta = open_table(path)
        schema = table_schema(delta)
        for n, part in enumerate(point_read_files(rows, apart=True) or [rows]):
            write_deltalake(
                delta,
                conforming(part, schema),
                mode="append" if n else "overwrite",
                commit_properties=txn.commit_properties,
                writer_properties=writer_properties(part),
            )
            delta.update_incremental()

    txn.apply(table, overwrite)


COMPACTORS: dict[str, Compactor] = {table: compact_versions for table in PART_TABLES.values()}
"""How ingest and ``kraft-replay optimize`` compact the temporal image's versions tables."""


def maintain_versions(change: LakeChange) -> None:
    """The ingest's :data:`~metadata.lake.ingest.Derive` step: bring the temporal image up to the records
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
