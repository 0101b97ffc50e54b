"""Questions about an ingested log: summary (``log-info``) and record listing (``dump``)."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence

from pydantic import BaseModel
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from metadata.lake.protocol import Lake, LakeState
from metadata.log.records import LogRecord, snapshot_kind
from metadata.log.summary import (
    DumpRecord,
    LogInfo,
    RecordAggregates,
    SnapshotInfo,
    compose,
    newest_snapshot_end,
    snapshot_name,
)


def log_info(lake: Lake) -> LogInfo:
    """Counts, offsets, times and snapshots of the committed state."""
    with lake.reading():
        return _log_info(lake)


def _log_info(lake: Lake) -> LogInfo:
    state = lake.state()
    records = lake.table("records", state)
    snaps = (
        lake.table("snapshots", state)
        .groupBy("snapshot_end_offset", "snapshot_epoch")
        .agg(F.count("*").alias("n"), F.max("last_contained_timestamp").alias("ts"))
        .orderBy("snapshot_end_offset", "snapshot_epoch")
        .collect()
    )
    snapshots = [SnapshotInfo.of(r["snapshot_end_offset"], r["snapshot_epoch"], r["n"], r["ts"]) for r in snaps]
    newest = newest_snapshot_end(snapshots)
    s = records.agg(
        F.min("offset").alias("lo"),
        F.max("offset").alias("hi"),
        F.count("*").alias("n"),
        F.sum(F.col("is_control").cast("long")).alias("control"),
        F.min("timestamp").alias("t0"),
        F.max("timestamp").alias("t1"),
        F.count(F.when(F.col("offset") >= (newest if newest is not None else 0), 1)).alias("after"),
    ).first()
    by_kind = records.groupBy("is_control", F.coalesce("type", "control_type").alias("t")).count().collect()
    aggregates = RecordAggregates(
        n=s["n"] or 0,
        control=int(s["control"] or 0),
        lo=s["lo"],
        hi=s["hi"],
        t0=s["t0"],
        t1=s["t1"],
        kinds=[(r["is_control"], r["t"], r["count"]) for r in by_kind],
        after_snapshot=s["after"] or 0,
        undecoded=_undecoded_on_spark(records, lake.table("snapshots", state)),
    )
    return compose(lake.uri, aggregates, snapshots, state.seq)


def _undecoded_on_spark(records: DataFrame, snapshots: DataFrame | None) -> list[tuple[int, int, int, str | None]]:
    """:attr:`~metadata.log.summary.RecordAggregates.undecoded` of a lake's ``records`` and ``snapshots``: the
    records kept raw by ``ingest --skip-unknown``."""
    raw = ~F.col("is_control") & F.col("type").isNull()
    rows = [(r[0], r[1], r[2], None) for r in records.where(raw).select("api_key", "version", "offset").collect()]
    if snapshots is not None:
        rows += [
            (r[0], r[1], r[2], snapshot_name(r[3], r[4]))
            for r in snapshots.where(raw)
            .select("api_key", "version", "position", "snapshot_end_offset", "snapshot_epoch")
            .collect()
        ]
    return rows


def dump(
    lake: Lake,
    from_offset: int | None = None,
    to_offset: int | None = None,
    types: Sequence[str] = (),
    include_control: bool = False,
) -> Iterator[DumpRecord]:
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
        for r in (
            rows.select("offset", "timestamp", F.coalesce("type", "control_type").alias("t"), "version", "payload")
            .orderBy("offset")
            .toLocalIterator()
        ):
            yield DumpRecord(
                offset=r["offset"],
                timestamp=r["timestamp"],
                type=r["t"] or "UNKNOWN",
                version=r["version"],
                data=json.loads(r["payload"]) if r["payload"] else {},
            )


class SnapshotId(BaseModel):
    """A snapshot stored in the lake."""

    end_offset: int
    epoch: int
    kind: str
    last_contained_timestamp: int | None


def log_records(
    lake: Lake, from_offset: int | None = None, to_offset: int | None = None, state: LakeState | None = None
) -> Iterator[LogRecord]:
    """Committed log records in offset order, streamed to the driver (for the reference engine)."""
    rows = lake.table("records", state)
    if from_offset is not None:
        rows = rows.where(F.col("offset") >= from_offset)
    if to_offset is not None:
        rows = rows.where(F.col("offset") <= to_offset)
    with lake.reading():
        for r in rows.orderBy("offset").toLocalIterator():
            yield LogRecord.from_row(r)


def snapshot_ids(lake: Lake, state: LakeState | None = None) -> list[SnapshotId]:
    """Snapshots in the lake (the bootstrap files included, kind ``bootstrap``: :func:`snapshot_kind`), by id."""
    with lake.reading():
        rows = (
            lake.table("snapshots", state)
            .groupBy("snapshot_end_offset", "snapshot_epoch")
            .agg(F.max("last_contained_timestamp").alias("ts"))
            .orderBy("snapshot_end_offset", "snapshot_epoch")
            .collect()
        )
    return [
        SnapshotId(end_offset=r[0], epoch=r[1], kind=snapshot_kind(r[0], r[1]), last_contained_timestamp=r[2])
        for r in rows
    ]


def snapshot_records(lake: Lake, end_offset: int, epoch: int, state: LakeState | None = None) -> list[LogRecord]:
    """The records of one stored snapshot in file order (``offset`` = position inside the snapshot)."""
    with lake.reading():
        rows = (
            lake.table("snapshots", state)
            .where((F.col("snapshot_end_offset") == end_offset) & (F.col("snapshot_epoch") == epoch))
            .withColumn("batch_base_offset", F.col("position"))
            .withColumn("batch_last_offset", F.col("position"))
            .withColumn("is_transactional", F.lit(False))
            .withColumn("producer_id", F.lit(-1).cast("long"))
            .withColumn("producer_epoch", F.lit(-1))
            .orderBy("position")
            .collect()
        )
    return [LogRecord.from_row(r, "position") for r in rows]
