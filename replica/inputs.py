"""The delta (A, B] of a lake or log as the inputs of ``replica/``, from the temporal image: the images at
both ends and, for the reference engine, the records between them."""

from __future__ import annotations

from typing import Any

from image.delta import MetadataDelta
from image.image import MetadataImage
from image.replay import delta_between
from image.temporal import TemporalSource, image_before, resolve_offset, restart_point
from metadata.log import LogRecord, Snapshot
from replica.local_changes import local_changes_json


def resolve_window(
    source: TemporalSource,
    from_offset: int | None,
    to_offset: int | None,
    from_time: str | None = None,
    to_time: str | None = None,
) -> tuple[int, int]:
    """(A, B): offsets, or the last offsets of the last batches appended at or before the times; B
    defaults to the end of the log."""
    if from_offset is None and from_time is None:
        raise ValueError("give --from-offset or --from-time")
    a = resolve_offset(source, from_offset, from_time)
    b = resolve_offset(source, to_offset, to_time)
    if b < a:
        raise ValueError(f"the window ends (offset {b}) before it starts (offset {a})")
    return a, b


def _window_replay(
    source: TemporalSource, from_offset: int, to_offset: int
) -> tuple[list[LogRecord], MetadataImage, Snapshot | None]:
    """The records the reference engine replays for the delta (A, B], the image it starts from and the
    snapshot the delta opens onto, if any: from the last delta boundary at or before A outside any metadata
    transaction (or the snapshot a replay to A loads), with the image the temporal image gives there — only
    the window's records are read. A log cut by retention (its first offset above 0) is whole only from its
    oldest snapshot on: a window opening before that snapshot's end loads the snapshot onto the image at A
    first, then reads the log after it."""
    restart = restart_point(source, from_offset + 1)
    snapshots = [s for s in source.snapshots() if s.end_offset <= from_offset + 1]
    if snapshots:  # a replay to A starts from the snapshot it would load, not from the log before it
        restart = max(restart, max(s.end_offset for s in snapshots))
    base = image_before(source, restart)
    oldest = min(source.snapshots(), key=lambda s: s.end_offset, default=None)
    bounds = source.bounds()
    if oldest is not None and bounds is not None and bounds[0] > 0 and restart < oldest.end_offset <= to_offset + 1:
        opening = Snapshot(
            source.snapshot_records(oldest.end_offset, oldest.epoch),
            oldest.end_offset,
            oldest.epoch,
            oldest.last_contained_timestamp,
        )
        records = source.log_records(restart, from_offset) + source.log_records(oldest.end_offset, to_offset)
        return records, base, opening
    return source.log_records(restart, to_offset), base, None


def reference_changes_json(
    source: TemporalSource, from_offset: int, to_offset: int, broker: int | None = None
) -> dict[str, Any]:
    """:func:`replica.local_changes.local_changes_json` of the delta (A, B] (see :func:`reference_delta`)."""
    records, base, opening = _window_replay(source, from_offset, to_offset)
    return local_changes_json(records, from_offset, to_offset, broker, base=base, opening=opening)


def reference_delta(
    source: TemporalSource, from_offset: int, to_offset: int
) -> tuple[MetadataImage, MetadataDelta, MetadataImage]:
    """The delta (A, B] on the reference engine: ``(image at A, ONE MetadataDelta, image at B)``
    (:func:`image.replay.delta_between`), replayed from the temporal image at the window's start."""
    records, base, opening = _window_replay(source, from_offset, to_offset)
    return delta_between(records, from_offset, to_offset, base=base, opening=opening)


def delta_frames(source: Any, from_offset: int, to_offset: int) -> Any:
    """The delta (A, B] on Spark: both images as DataFrames from the temporal image, and the typed tables
    (``source``: an :class:`image.spark.source.SparkSource`)."""
    from replica.spark_changes import DeltaFrames

    return DeltaFrames(
        source.image_frames(from_offset), source.image_frames(to_offset), source.table, from_offset, to_offset
    )
