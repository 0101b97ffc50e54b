"""The temporal image of a lake read on Spark (a :class:`~image.temporal.TemporalSource`): for lakes only
Spark can reach, and whenever the user names a Spark master."""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from image.errors import ReplayError
from image.parts import Row
from image.temporal import RecordPosition, SnapshotId
from image.versions import Span
from metadata.lake import Lake, LakeState
from metadata.version_tables import PART_TABLES, PROVENANCE, REJECTIONS


def visible_at(frame: DataFrame, offset: int) -> DataFrame:
    """The versions of ``frame`` visible at ``offset``."""
    return frame.where((F.col("from_offset") <= offset) & (F.col("to_offset").isNull() | (F.col("to_offset") > offset)))


class SparkSource:
    """The lake's temporal image at its committed state, read with Spark."""

    def __init__(self, lake: Lake, state: LakeState | None = None) -> None:
        self.lake = lake
        self.state = state or lake.state()

    def table(self, name: str) -> DataFrame:
        return self.lake.table(name, self.state)

    def rows_at(self, part: str, offset: int) -> list[Row]:
        return visible_at(self.table(PART_TABLES[part]), offset).toArrow().to_pylist(maps_as_pydicts="strict")

    @cached_property
    def _spans(self) -> list[Span]:
        return [Span(r["from_offset"], r["to_offset"], r["outcome"]) for r in self.table(PROVENANCE).collect()]

    def spans(self) -> Sequence[Span]:
        return self._spans

    @cached_property
    def _snapshots(self) -> list[SnapshotId]:
        from metadata.query import snapshot_ids
        return [SnapshotId(s.end_offset, s.epoch, s.last_contained_timestamp if s.last_contained_timestamp is not None
                           else -1) for s in snapshot_ids(self.lake, self.state) if s.kind == "snapshot"]

    def snapshots(self) -> Sequence[SnapshotId]:
        return self._snapshots

    def record_at_or_before(self, offset: int) -> RecordPosition | None:
        row = (self.table("records").where(F.col("offset") <= offset).orderBy(F.col("offset").desc())
               .select("offset", "batch_leader_epoch", "timestamp").limit(1).collect())
        return RecordPosition(*row[0]) if row else None

    def rejections(self, snapshot: SnapshotId | None, first: int, last: int) -> list[ReplayError]:
        t = self.table(REJECTIONS)
        log = F.col("snapshot_end_offset").isNull() & F.col("offset").between(first, last)
        own = (F.col("snapshot_end_offset") == snapshot.end_offset) & (F.col("snapshot_epoch") == snapshot.epoch) \
            if snapshot is not None else F.lit(False)
        rows = t.where(log | own).orderBy(F.col("snapshot_end_offset").isNull(), "offset").collect()
        return [ReplayError(r["message"], location=r["location"], offset=r["offset"], record_type=r["record_type"])
                for r in rows]
