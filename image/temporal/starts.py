"""Where a replay starts: the one entrance of every replay of a stored log — the reference engine's image at an
offset (:func:`replay_start`), a delta (A, B] (:func:`delta_start`), an ingest's incremental build
(:func:`restart_point`) — and the image a replay from the temporal image starts from (:func:`image_before`).
Which snapshot a replay loads is :func:`image.loader.snapshot_to_start_from` / :func:`image.loader.snapshots_to_load`.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import NamedTuple

from image.image import MetadataImage
from image.loader import snapshot_to_start_from
from image.parts import PART_KEYS
from image.temporal.reads import SnapshotId, TemporalSource, provenance_at


class ReplayStart(NamedTuple):
    """Where the reference engine's replay to an image starts: the snapshot it loads onto the empty image (None:
    none) and the first log offset it reads."""

    snapshot: SnapshotId | None
    first: int


def replay_start(source: TemporalSource, offset: int) -> ReplayStart:
    """Where a replay to the image at ``offset`` from the stored records starts: the snapshot it loads
    (:func:`~image.loader.snapshot_to_start_from`), then the log from that snapshot's end (else from the log's
    first offset)."""
    snapshot = snapshot_to_start_from(source.snapshots(), offset)
    bounds = source.bounds()
    first = snapshot.end_offset if snapshot is not None else -1
    return ReplayStart(snapshot, max(first, bounds[0]) if bounds else first)


def restart_point(source: TemporalSource, offset: int) -> int:
    """The first offset of a replay that must see what becomes visible from ``offset`` on: the start of the
    batch holding it (a delta boundary), or the BeginTransactionRecord of a metadata transaction open
    just before that (the replay then sees the whole transaction)."""
    restart = min(offset, source.batch_start(offset))
    for span in source.spans():
        if span.begin <= restart - 1 and (span.end is None or span.end >= restart):
            restart = min(restart, span.begin)
    return restart


def image_before(source: TemporalSource, restart: int, topic_ids: Collection[str] | None = None) -> MetadataImage:
    """The image a replay starting at ``restart`` (a :func:`restart_point`) starts from, hidden state
    included (:mod:`image.parts`), built from the versions current at ``restart - 1``; ``topic_ids``: with
    the partitions of these topics only (a replay that reads no other, ``replica.inputs``)."""
    rows = {part: source.rows_at(part, restart - 1, topic_ids if part == "partitions" else None) for part in PART_KEYS}
    return MetadataImage.from_rows(rows, provenance_at(source, restart - 1))


def delta_start(source: TemporalSource, after: int) -> int:
    """Where the reference engine's replay of a delta (A, B] (``after`` = A) starts from the temporal image: the
    last delta boundary at or before A outside any metadata transaction (:func:`restart_point` of A + 1), or the
    end of the snapshot a replay to A loads if later."""
    restart = restart_point(source, after + 1)
    snapshot = snapshot_to_start_from(source.snapshots(), after)
    return max(restart, snapshot.end_offset) if snapshot is not None else restart
