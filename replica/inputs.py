"""The delta (A, B] of a lake or log as the inputs of ``replica/``, from the temporal image: the images at
both ends and, for the reference engine, the records between them."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from image.delta import MetadataDelta
from image.image import MetadataImage
from image.parts import Row
from image.replay import delta_between
from image.temporal.reads import SnapshotId, TemporalSource
from image.temporal.sharding import EVERY_SHARD, TOPIC_ID, TOPIC_NAME, components, route_key, topic_edges
from image.temporal.starts import delta_start, image_before
from metadata.log.records import LogRecord, Snapshot
from replica.local_changes import local_changes_json


def opening_snapshot(
    source: TemporalSource, from_offset: int, to_offset: int, restart: int | None = None
) -> SnapshotId | None:
    """The snapshot the delta (A, B] opens with, if any: the newest snapshot ending in the window that the log
    cannot stand in for — the oldest one of a log cut by retention (its first offset above 0: before that
    snapshot's end the temporal image is partial), or one beyond the log's last record (a follower that fetched
    it). Like Kafka's loader, the delta then loads it onto the image at A (its topics are new, the image's
    others deleted) and reads the log after it; a whole log replays without its snapshots. ``restart``: the
    window's :func:`~image.temporal.starts.delta_start`, if known."""
    snapshots = source.snapshots()
    if not snapshots:
        return None
    bounds = source.bounds()  # (on Spark a job: only for a log with snapshots)
    if bounds is None:
        return None
    oldest = min(s.end_offset for s in snapshots)
    last = source.record_at_or_before(bounds[1])

    def needed(snapshot: SnapshotId) -> bool:
        cut = bounds[0] > 0 and snapshot.end_offset == oldest
        return cut or last is None or last.offset < snapshot.end_offset - 1

    restart = delta_start(source, from_offset) if restart is None else restart
    window = [s for s in snapshots if restart < s.end_offset <= to_offset + 1 and needed(s)]
    return max(window, default=None, key=lambda s: (s.end_offset, s.epoch))


def topic_scope(records: Iterable[LogRecord], rows: Mapping[str, Iterable[Row]]) -> set[str] | None:
    """The topic ids whose partitions a replay of ``records`` (from an image with these ``topics`` and
    ``topicNames`` rows) can read or write — the topics the records name, joined through every (id, name)
    pair of the records and of the image, as :mod:`image.temporal.sharding` couples keys; None when a record reaches
    every topic (a ClearElrRecord without a topic name)."""
    records = list(records)
    seeds = set()
    for record in records:
        if record.is_control or record.type in (None, "NO_OP_RECORD"):
            continue
        key = route_key(record)
        if record.type == "CLEAR_ELR_RECORD" and key == EVERY_SHARD:
            return None
        if key.startswith((TOPIC_ID, TOPIC_NAME)):
            seeds.add(key)
    root = components(topic_edges(records, rows))
    reached = {root.get(seed, seed) for seed in seeds}
    return {n.removeprefix(TOPIC_ID) for n in {*seeds, *root} if n.startswith(TOPIC_ID) and root.get(n, n) in reached}


def window_replay(
    source: TemporalSource, from_offset: int, to_offset: int, scoped: bool = False
) -> tuple[list[LogRecord], MetadataImage, Snapshot | None]:
    """The records the reference engine replays for the delta (A, B], the image it starts from (the temporal
    image's at :func:`~image.temporal.starts.delta_start`; only the window's records are read) and the
    :func:`opening_snapshot`. ``scoped``: the image holds only the partitions of the :func:`topic_scope` of the
    records (enough for the delta's topics, not for images of the whole cluster at A and B)."""
    restart = delta_start(source, from_offset)
    snapshot = opening_snapshot(source, from_offset, to_offset, restart)
    if snapshot is None:
        records = source.log_records(restart, to_offset)
        scope = None
        if scoped:
            scope = topic_scope(records, {p: source.rows_at(p, restart - 1) for p in ("topics", "topicNames")})
        return records, image_before(source, restart, scope), None
    opening = Snapshot(
        source.snapshot_records(snapshot.end_offset, snapshot.epoch),
        snapshot.end_offset,
        snapshot.epoch,
        snapshot.last_contained_timestamp,
    )
    records = source.log_records(restart, from_offset) + source.log_records(snapshot.end_offset, to_offset)
    return records, image_before(source, restart), opening


def reference_changes_json(
    source: TemporalSource, from_offset: int, to_offset: int, broker: int | None = None
) -> dict[str, Any]:
    """:func:`replica.local_changes.local_changes_json` of the delta (A, B] (see :func:`reference_delta`)."""
    records, base, opening = window_replay(source, from_offset, to_offset, scoped=True)
    return local_changes_json(records, from_offset, to_offset, broker, base=base, opening=opening, rules=source.rules)


def reference_delta(
    source: TemporalSource, from_offset: int, to_offset: int
) -> tuple[MetadataImage, MetadataDelta, MetadataImage]:
    """The delta (A, B] on the reference engine: ``(image at A, ONE MetadataDelta, image at B)``
    (:func:`image.replay.delta_between`), replayed from the temporal image at the window's start."""
    records, base, opening = window_replay(source, from_offset, to_offset)
    return delta_between(records, from_offset, to_offset, base=base, opening=opening, rules=source.rules)


def delta_frames(source: Any, from_offset: int, to_offset: int) -> Any:
    """The delta (A, B] on Spark: both images as DataFrames from the temporal image, and the typed tables
    (``source``: an :class:`image.temporal.spark.source.SparkSource`)."""
    from replica.spark_changes import DeltaFrames

    snapshot = opening_snapshot(source, from_offset, to_offset)
    return DeltaFrames(
        source.image_frames(from_offset),
        source.image_frames(to_offset),
        source.table,
        from_offset,
        to_offset,
        None if snapshot is None else source.image_frames(snapshot.end_offset - 1),
    )
