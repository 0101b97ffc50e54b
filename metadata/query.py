"""Questions about an ingested log: summary (``log-info``) and record listing (``dump``)."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

from pydantic import BaseModel
from pyspark.sql import functions as F

from metadata.lake import Lake, LakeState
from metadata.log import LogRecord


class SnapshotInfo(BaseModel):
    end_offset: int
    epoch: int
    kind: str
    records: int
    last_contained_timestamp: int | None


class LogInfo(BaseModel):
    """Summary of the committed log in a lake."""

    lake: str
    first_offset: int | None
    last_offset: int | None
    records: int  # metadata records only
    control_records: int
    by_type: dict[str, int]
    control_by_type: dict[str, int]
    first_timestamp: int | None
    last_timestamp: int | None
    snapshots: list[SnapshotInfo]
    ingests: int
    missing_offsets: int  # offsets between first and last that are not stored


class DumpRecord(BaseModel):
    offset: int
    timestamp: int
    type: str
    version: int
    data: dict[str, Any]


def log_info(lake: Lake) -> LogInfo:
    """Counts, offsets, times and snapshots of the committed state."""
    with lake.reading():
        return _log_info(lake)


def _log_info(lake: Lake) -> LogInfo:
    state = lake.state()
    records = lake.table("records", state)
    s = records.agg(F.min("offset").alias("lo"), F.max("offset").alias("hi"), F.count("*").alias("n"),
                    F.sum(F.col("is_control").cast("long")).alias("control"),
                    F.min("timestamp").alias("t0"), F.max("timestamp").alias("t1")).first()
    by_kind = records.groupBy("is_control", F.coalesce("type", "control_type").alias("t")).count().collect()
    snaps = (lake.table("snapshots", state)
             .groupBy("snapshot_end_offset", "snapshot_epoch", "kind")
             .agg(F.count("*").alias("n"), F.max("last_contained_timestamp").alias("ts"))
             .orderBy("snapshot_end_offset", "snapshot_epoch").collect())
    n = s["n"] or 0
    control = int(s["control"] or 0)
    return LogInfo(
        lake=lake.uri, first_offset=s["lo"], last_offset=s["hi"], records=n - control, control_records=control,
        by_type=dict(sorted((r["t"] or "UNKNOWN", r["count"]) for r in by_kind if not r["is_control"])),
        control_by_type=dict(sorted((r["t"], r["count"]) for r in by_kind if r["is_control"])),
        first_timestamp=s["t0"], last_timestamp=s["t1"],
        snapshots=[SnapshotInfo(end_offset=r["snapshot_end_offset"], epoch=r["snapshot_epoch"], kind=r["kind"],
                                records=r["n"], last_contained_timestamp=r["ts"]) for r in snaps],
        ingests=state.seq, missing_offsets=(s["hi"] - s["lo"] + 1 - n) if n else 0)


def dump(lake: Lake, from_offset: int | None = None, to_offset: int | None = None,
         types: Sequence[str] = (), include_control: bool = False) -> Iterator[DumpRecord]:
    """Metadata records in ``[from_offset, to_offset]`` in offset order, optionally of some types only."""
    rows = lake.table("records")
    if from_offset is not None:
        rows = rows.where(F.col("offset") >= from_offset)
    if to_offset is not None:
        rows = rows.where(F.col("offset") <= to_offset)
    if types:
        rows = rows.where(F.col("type").isin(*types) | F.col("control_type").isin(*types))
    elif not include_control:
        rows = rows.where(~F.col("is_control"))
    with lake.reading():
        for r in rows.select("offset", "timestamp", F.coalesce("type", "control_type").alias("t"), "version",
                             "payload").orderBy("offset").toLocalIterator():
            yield DumpRecord(offset=r["offset"], timestamp=r["timestamp"], type=r["t"] or "UNKNOWN",
                             version=r["version"], data=json.loads(r["payload"]) if r["payload"] else {})


class SnapshotId(BaseModel):
    """A snapshot stored in the lake."""

    end_offset: int
    epoch: int
    kind: str
    last_contained_timestamp: int | None


def _log_record(r, offset_column: str = "offset") -> LogRecord:
    return LogRecord(offset=r[offset_column], batch_base_offset=r["batch_base_offset"],
                     batch_last_offset=r["batch_last_offset"], epoch=r["batch_leader_epoch"], timestamp=r["timestamp"],
                     type=r["type"], version=r["version"], data=json.loads(r["payload"]) if r["payload"] else {},
                     control_type=r["control_type"], is_transactional=bool(r["is_transactional"]),
                     producer_id=r["producer_id"], producer_epoch=r["producer_epoch"], source_file=r["source_file"])


def log_records(lake: Lake, from_offset: int | None = None, to_offset: int | None = None,
                state: LakeState | None = None) -> Iterator[LogRecord]:
    """Committed log records in offset order, streamed to the driver (for the reference engine)."""
    rows = lake.table("records", state)
    if from_offset is not None:
        rows = rows.where(F.col("offset") >= from_offset)
    if to_offset is not None:
        rows = rows.where(F.col("offset") <= to_offset)
    with lake.reading():
        for r in rows.orderBy("offset").toLocalIterator():
            yield _log_record(r)


def snapshot_ids(lake: Lake, state: LakeState | None = None) -> list[SnapshotId]:
    """Snapshots in the lake (``bootstrap.checkpoint`` included, kind ``bootstrap``), by end offset."""
    with lake.reading():
        rows = (lake.table("snapshots", state).groupBy("snapshot_end_offset", "snapshot_epoch", "kind")
                .agg(F.max("last_contained_timestamp").alias("ts")).orderBy("snapshot_end_offset", "snapshot_epoch")
                .collect())
    return [SnapshotId(end_offset=r[0], epoch=r[1], kind=r[2], last_contained_timestamp=r[3]) for r in rows]


def snapshot_records(lake: Lake, end_offset: int, epoch: int, state: LakeState | None = None) -> list[LogRecord]:
    """The records of one stored snapshot in file order (``offset`` = position inside the snapshot)."""
    with lake.reading():
        rows = (lake.table("snapshots", state).where((F.col("snapshot_end_offset") == end_offset)
                                                     & (F.col("snapshot_epoch") == epoch))
                .withColumn("batch_base_offset", F.col("position"))
                .withColumn("batch_last_offset", F.col("position"))
                .withColumn("is_transactional", F.lit(False)).withColumn("producer_id", F.lit(-1).cast("long"))
                .withColumn("producer_epoch", F.lit(-1)).orderBy("position").collect())
    return [_log_record(r, "position") for r in rows]
