"""The temporal image of a lake read on Spark (a :class:`~image.temporal.reads.TemporalSource`): for lakes only
Spark can reach, and whenever the user names a Spark master."""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping, Sequence
from functools import cached_property
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from image.errors import ReplayError
from image.parts import Row
from image.temporal.reads import RecordPosition, SnapshotId, lake_rules, log_bounds, provenance_at
from image.temporal.spark.frames import SCHEMAS, ImageFrames
from image.temporal.versions import Span
from metadata.lake.protocol import Lake, LakeState
from metadata.lake.version_tables import PART_TABLES, PROVENANCE, REJECTIONS, version_schema
from metadata.log.records import LogRecord
from metadata.log.summary import DumpRecord, LogInfo


def visible_at(frame: DataFrame, offset: int) -> DataFrame:
    """The versions of ``frame`` visible at ``offset``."""
    return frame.where((F.col("from_offset") <= offset) & (F.col("to_offset").isNull() | (F.col("to_offset") > offset)))


class SparkSource:
    """The lake's temporal image at its committed state, read with Spark."""

    def __init__(self, lake: Lake, state: LakeState | None = None) -> None:
        self.lake = lake
        self.state = state or lake.state()
        self.rules = lake_rules(self.state)
        self._tables: dict[str, DataFrame] = {}

    def table(self, name: str) -> DataFrame:
        """Table ``name`` at the source's state, loaded once per source: a read that plans several queries over one
        table (an image, a diff, a delta's two images and typed tables) reuses its Delta snapshot and file index."""
        if name not in self._tables:
            self._tables[name] = self.lake.table(name, self.state)
        return self._tables[name]

    def rows_at(self, part: str, offset: int, topic_ids: Collection[str] | None = None) -> list[Row]:
        frame = visible_at(self.table(PART_TABLES[part]), offset)
        if topic_ids is not None:
            frame = frame.where(F.col("topicId").isin(sorted(topic_ids))) if topic_ids else frame.limit(0)
        return frame.toArrow().to_pylist(maps_as_pydicts="strict")

    @cached_property
    def _spans(self) -> list[Span]:
        return [Span(r["from_offset"], r["to_offset"], r["outcome"]) for r in self.table(PROVENANCE).collect()]

    def spans(self) -> Sequence[Span]:
        return self._spans

    @cached_property
    def _snapshots(self) -> list[SnapshotId]:
        from metadata.lake.query import snapshot_ids

        return [
            SnapshotId(
                s.end_offset, s.epoch, s.last_contained_timestamp if s.last_contained_timestamp is not None else -1
            )
            for s in snapshot_ids(self.lake, self.state)
            if s.kind == "snapshot"
        ]

    def snapshots(self) -> Sequence[SnapshotId]:
        return self._snapshots

    def record_at_or_before(self, offset: int) -> RecordPosition | None:
        row = (
            self.table("records")
            .where(F.col("offset") <= offset)
            .orderBy(F.col("offset").desc())
            .select("offset", "batch_leader_epoch", "timestamp")
            .limit(1)
            .collect()
        )
        return RecordPosition(*row[0]) if row else None

    def rejections(self, snapshot: SnapshotId | None, first: int, last: int) -> list[ReplayError]:
        t = self.table(REJECTIONS)
        log = F.col("snapshot_end_offset").isNull() & F.col("offset").between(first, last)
        own = (
            (F.col("snapshot_end_offset") == snapshot.end_offset) & (F.col("snapshot_epoch") == snapshot.epoch)
            if snapshot is not None
            else F.lit(False)
        )
        rows = t.where(log | own).orderBy(F.col("snapshot_end_offset").isNull(), "offset").collect()
        return [
            ReplayError(r["message"], location=r["location"], offset=r["offset"], record_type=r["record_type"])
            for r in rows
        ]

    def versions(
        self, part: str, during: tuple[int, int] | None = None, equal: Mapping[str, Any] | None = None
    ) -> pa.Table:
        frame = self.table(PART_TABLES[part])
        if during is not None:
            frame = frame.where(
                (F.col("from_offset") <= during[1]) & (F.col("to_offset").isNull() | (F.col("to_offset") > during[0]))
            )
        for column, value in (equal or {}).items():
            frame = frame.where(F.col(column) == value)
        return frame.toArrow().cast(version_schema(part))

    def records(self, first: int, last: int, only: Collection[int] | None = None) -> pa.Table:
        where = F.col("offset").between(first, last)
        if only is not None:
            where &= F.col("offset").isin(sorted(only))
        frame = (
            self.table("records")
            .where(where)
            .select("offset", "timestamp", F.coalesce("type", "control_type").alias("type"))
            .orderBy("offset")
        )
        return frame.toArrow()

    def bounds(self) -> tuple[int, int] | None:
        lo, hi = self.table("records").agg(F.min("offset"), F.max("offset")).first()
        return log_bounds(lo, hi, self.snapshots())

    def offset_at_time(self, ms: int) -> int | None:
        return self.table("records").where(F.col("timestamp") <= ms).agg(F.max("batch_last_offset")).first()[0]

    def batch_start(self, offset: int) -> int:
        row = self.table("records").where(F.col("offset") == offset).select("batch_base_offset").limit(1).collect()
        return row[0][0] if row else offset

    def replay_records(self, first: int, last: int) -> list[LogRecord]:
        return self.log_records(first, last)

    def log_records(self, first: int, last: int) -> list[LogRecord]:
        frame = self.table("records").where(F.col("offset").between(first, last)).orderBy("offset")
        return [LogRecord.from_row(r.asDict()) for r in frame.toLocalIterator()]

    def image_frames(self, offset: int) -> ImageFrames:
        """The image at ``offset`` as DataFrames, one per part (for Spark transforms over whole images)."""
        frames = {}
        for part, table in PART_TABLES.items():
            if part in SCHEMAS:
                frames[part] = visible_at(self.table(table), offset).select(*SCHEMAS[part].names)
        p = provenance_at(self, offset)
        session = self.lake.spark
        frames["provenance"] = session.createDataFrame(
            [(p.last_contained_offset, p.last_contained_epoch, p.last_contained_log_time_ms)], SCHEMAS["provenance"]
        )
        return ImageFrames(**frames)

    def snapshot_records(self, end_offset: int, epoch: int) -> list[LogRecord]:
        from metadata.lake.query import snapshot_records

        return snapshot_records(self.lake, end_offset, epoch, self.state)

    def log_info(self) -> LogInfo:
        from metadata.lake.query import log_info

        return log_info(self.lake)

    def dump(
        self, first: int | None, last: int | None, types: Sequence[str] = (), include_control: bool = False
    ) -> Iterator[DumpRecord]:
        from metadata.lake.query import dump

        return dump(self.lake, first, last, types, include_control)
