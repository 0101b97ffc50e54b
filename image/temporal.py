"""Reading the temporal image: the image at an offset from the versions, without a replay.

A :class:`TemporalSource` gives the few things a read needs — the rows visible at an offset, the
visibility spans of metadata transactions, the stored snapshots, the last record at or before an offset,
and the rejected records — and :func:`image_at` turns them into the image JSON and the errors exactly as
``replay_to`` (the reference engine) gives them. Sources: the lake read in process with pyarrow
(:mod:`image.lake_source`), the lake on Spark (:mod:`image.spark.source`), and a
:class:`~image.versions.VersionLog` in memory (:class:`MemorySource`).
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

from image.errors import ReplayError
from image.parts import JSON_PARTS, Row, assemble
from image.provenance import MetadataProvenance
from image.versions import Rejection, Span, VersionLog

VERSION_COLUMNS = ("from_offset", "to_offset", "from_time")


class RecordPosition(NamedTuple):
    """Where a log record sits, for provenance: its offset, its batch's epoch and append time."""

    offset: int
    epoch: int
    timestamp: int


class SnapshotId(NamedTuple):
    """A stored snapshot a replay can start from."""

    end_offset: int
    epoch: int
    last_contained_timestamp: int


class TemporalSource(Protocol):
    """What reading the temporal image needs from where it is stored."""

    def rows_at(self, part: str, offset: int) -> list[Row]:
        """The rows of ``part`` visible at ``offset`` (the version columns may be left in)."""

    def spans(self) -> Sequence[Span]:
        """The metadata transactions (visibility spans), any order."""

    def snapshots(self) -> Sequence[SnapshotId]:
        """The stored snapshots a replay can start from (not ``bootstrap.checkpoint``)."""

    def record_at_or_before(self, offset: int) -> RecordPosition | None:
        """The last log record (of any type, control records included) at or before ``offset``."""

    def rejections(self, snapshot: SnapshotId | None, first: int, last: int) -> list[ReplayError]:
        """The rejected records of ``snapshot`` (by position), then of the log in ``[first, last]`` (by offset)."""


def base_snapshot(snapshots: Sequence[SnapshotId], offset: int) -> SnapshotId | None:
    """The snapshot a replay to ``offset`` starts from: the latest with end offset ≤ offset + 1 (the
    highest epoch among equal end offsets)."""
    return max((s for s in snapshots if s.end_offset <= offset + 1), key=lambda s: (s.end_offset, s.epoch),
               default=None)


def provenance_at(source: TemporalSource, offset: int) -> MetadataProvenance:
    """The provenance of the image at ``offset``: inside a visibility span, that of ``begin - 1``; else
    the last record at or before it, unless the snapshot the replay starts from ends after that record,
    in which case the snapshot's."""
    for span in source.spans():
        if span.begin <= offset and (span.end is None or offset < span.end):
            offset = span.begin - 1
            break
    base = base_snapshot(source.snapshots(), offset)
    last = source.record_at_or_before(offset)
    if base is not None and (last is None or last.offset < base.end_offset):
        return MetadataProvenance(base.end_offset - 1, base.epoch, base.last_contained_timestamp, True)
    if last is None:
        return MetadataProvenance.EMPTY
    return MetadataProvenance(last.offset, last.epoch, last.timestamp, False)


def errors_at(source: TemporalSource, offset: int) -> list[ReplayError]:
    """The rejections a replay to ``offset`` meets, in replay order: those of the snapshot it starts
    from, then the log's after that snapshot."""
    base = base_snapshot(source.snapshots(), offset)
    return source.rejections(base, base.end_offset if base is not None else -1, offset)


def image_at(source: TemporalSource, offset: int, *, lenient: bool = False) -> tuple[dict[str, Any], list[ReplayError]]:
    """The image JSON at ``offset`` and the records a lenient replay to it skips; strict raises the
    first of them, as the reference engine does."""
    errors = errors_at(source, offset)
    if errors and not lenient:
        raise errors[0]
    p = provenance_at(source, offset)
    doc = assemble({part: source.rows_at(part, offset) for part in JSON_PARTS}, p.last_contained_offset,
                   p.last_contained_epoch, p.last_contained_log_time_ms)
    return doc, errors


@dataclass
class MemorySource:
    """A :class:`TemporalSource` over versions recorded in memory (``--log``, tests)."""

    versions: VersionLog
    positions: Sequence[RecordPosition]  # every log record, in offset order
    snapshot_ids: Sequence[SnapshotId]

    def rows_at(self, part: str, offset: int) -> list[Row]:
        return [row for row in self.versions.versions[part] if row["from_offset"] <= offset
                and (row["to_offset"] is None or offset < row["to_offset"])]

    def spans(self) -> Sequence[Span]:
        return self.versions.spans

    def snapshots(self) -> Sequence[SnapshotId]:
        return self.snapshot_ids

    def record_at_or_before(self, offset: int) -> RecordPosition | None:
        i = bisect.bisect_right(self.positions, (offset, float("inf"), float("inf"))) - 1
        return self.positions[i] if i >= 0 else None

    def rejections(self, snapshot: SnapshotId | None, first: int, last: int) -> list[ReplayError]:
        return ordered_rejections(self.versions.rejections, snapshot, first, last)


def ordered_rejections(rejections: Sequence[Rejection], snapshot: SnapshotId | None, first: int,
                       last: int) -> list[ReplayError]:
    """The rejections of ``snapshot`` (in position order), then of the log in ``[first, last]``."""
    own = (snapshot.end_offset, snapshot.epoch) if snapshot is not None else None
    from_snapshot = sorted((r.error for r in rejections if own is not None and r.snapshot == own),
                           key=lambda e: e.offset or 0)
    from_log = sorted((r.error for r in rejections if r.snapshot is None and first <= (r.error.offset or 0) <= last),
                      key=lambda e: e.offset or 0)
    return from_snapshot + from_log


def visible(rows: Mapping[str, Sequence[Row]], offset: int) -> dict[str, list[Row]]:
    """Per part, the rows visible at ``offset``."""
    return {part: [r for r in part_rows if r["from_offset"] <= offset and (r["to_offset"] is None
                                                                          or offset < r["to_offset"])]
            for part, part_rows in rows.items()}
