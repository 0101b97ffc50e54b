"""Entry points: the image at an offset, and the delta between two offsets."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from itertools import chain

from image.delta import MetadataDelta
from image.image import MetadataImage
from image.loader import DeltaCollector, MetadataLoader
from image.release import NEWEST, ReplayRules
from metadata.log.errors import BadInput, OffsetOutOfRange
from metadata.log.records import LogRecord, Snapshot

SnapshotSource = Snapshot
"""A snapshot to start from (:class:`metadata.log.records.Snapshot`)."""


SnapshotArg = SnapshotSource | tuple[Iterable[LogRecord], int, int] | tuple[Iterable[LogRecord], int, int, int]
"""A SnapshotSource or a plain ``(records, end_offset, epoch[, last_contained_timestamp])`` tuple."""


def _start(
    records: Iterable[LogRecord],
    offset: int | None,
    snapshot: SnapshotArg | None,
    base: MetadataImage | None,
    rules: ReplayRules,
    lenient: bool,
) -> tuple[MetadataLoader, Iterator[LogRecord]]:
    """A loader positioned at ``base`` (+ snapshot) and the log records that follow it."""
    loader = MetadataLoader(base, rules=rules, lenient=lenient)
    if snapshot is not None:
        source = SnapshotSource(*snapshot)
        if offset is not None and source.end_offset > offset + 1:
            raise OffsetOutOfRange(f"snapshot ending at {source.end_offset} is beyond offset {offset}")
        loader.load_snapshot(source.records, source.end_offset, source.epoch, source.last_contained_timestamp)
    if offset is not None and offset < loader.offset:
        raise OffsetOutOfRange(f"offset {offset} is before the starting image at offset {loader.offset}")
    start = loader.offset
    return loader, (record for record in records if record.offset > start)


def replay_to(
    records: Iterable[LogRecord],
    offset: int | None = None,
    *,
    snapshot: SnapshotArg | None = None,
    base: MetadataImage | None = None,
    rules: ReplayRules = NEWEST,
    lenient: bool = False,
) -> MetadataImage:
    """The image at ``offset`` (None, or an offset past the log: after the last record), as a broker of the
    ``rules``' Kafka release builds it (default: the newest).

    Starts from ``base`` (default: the rules' empty image), then loads ``snapshot`` (``(records, end_offset,
    epoch[, last_contained_timestamp])``; its end offset must be ≤ offset + 1), then replays the
    log records after that point up to ``offset`` (records at or before it are skipped; the
    iterable is not read beyond ``offset``). Inside an open transaction the image is the one
    just before its BeginTransactionRecord. With ``lenient`` inconsistent records are skipped
    and listed in ``image.errors``; otherwise ReplayError is raised.
    """
    loader, log = _start(records, offset, snapshot, base, rules, lenient)
    for record in log:
        if offset is not None and record.offset > offset:
            break
        loader.replay(record)
        if record.offset == offset:
            break
    return loader.image()


def delta_between(
    records: Iterable[LogRecord],
    from_offset: int,
    to_offset: int,
    *,
    snapshot: SnapshotArg | None = None,
    base: MetadataImage | None = None,
    opening: SnapshotArg | None = None,
    rules: ReplayRules = NEWEST,
    lenient: bool = False,
) -> tuple[MetadataImage, MetadataDelta, MetadataImage]:
    """``(image(from_offset), delta, delta.apply(provenance of image(to_offset)))``.

    The delta is ONE MetadataDelta based on image(from_offset) holding, in log order, every record
    visible at ``to_offset`` but not at ``from_offset``: committed transactions (also one that
    was open at ``from_offset``) are included, aborted ones are not, and a transaction still open
    at ``to_offset`` is left out (the delta stops before its Begin). Like a Kafka chunk, it can
    differ from per-batch replay (``replay_to``) only in delta-boundary quirks (e.g. topic
    configs created and deleted in the same delta, docs/replay-rules.md, "RemoveTopicRecord").
    ``snapshot``/``base``/``rules``/``lenient`` as for :func:`replay_to`; ``opening``: a snapshot the delta
    opens with, loaded onto image(from_offset) (a log cut by retention, the window starting before its
    oldest snapshot's end: :meth:`DeltaCollector.load_snapshot`; ``records`` then skip from
    ``from_offset`` to the snapshot's end); ``image.errors`` of the third element lists the records of
    the range that were skipped.
    """
    if to_offset < from_offset:
        raise BadInput(f"to_offset {to_offset} is before from_offset {from_offset}")
    loader, log = _start(records, from_offset, snapshot, base, rules, lenient)
    since_visible: list[LogRecord] = []  # records of a transaction open at from_offset
    after: list[LogRecord] = []
    for record in log:
        if record.offset > from_offset:
            after.append(record)
            break
        loader.replay(record)
        if loader.in_transaction:
            since_visible.append(record)
        else:
            since_visible.clear()
        if record.offset == from_offset:
            break
    start = loader.image()
    collector = DeltaCollector(start, rules=rules, lenient=lenient)
    if opening is not None:  # (loading a snapshot drops a transaction open before it)
        collector.load_snapshot(*SnapshotSource(*opening))
        since_visible = []
    for record in chain(since_visible, after, log):
        if record.offset > to_offset:
            break
        collector.replay(record)
        if record.offset == to_offset:
            break
    return start, collector.delta, collector.image()
