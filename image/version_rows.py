"""Version rows of the temporal image, in memory, and the seam that reads a window of them.

A *version row* (the lead's layout, docs/health.md) is one state of one key of an image part:
the part's columns, named as in the image JSON, plus ``from_offset`` (the first offset X at
which ``replay --at-offset X`` shows it), ``to_offset`` (the first offset at which it no
longer does; null while current) and ``from_time`` (append time, ms, of the batch whose record
made it visible). The image at X is, per part, the rows with ``from_offset <= X < to_offset``.

History, timeline and report read the ``topics``, ``partitions``, ``brokers`` and ``configs``
parts and the records' offsets, times and types through :class:`VersionSource` (one method,
:meth:`VersionSource.load`), so that a lake (Delta tables, filters pushed down) and a log read in
process serve them alike. :class:`TableSource` is the in-memory implementation.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Protocol

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pydantic import BaseModel

from metadata.log import Snapshot

PARTS = ("topics", "partitions", "brokers", "configs")
"""The image parts history and timeline read."""

VERSION_COLUMNS = (("from_offset", pa.int64()), ("to_offset", pa.int64()), ("from_time", pa.int64()))

RECORDS_SCHEMA = pa.schema([("offset", pa.int64()), ("timestamp", pa.int64()), ("type", pa.string())])
"""The records of a window: offset, batch append time (ms) and record type name (for a control
record its control type, e.g. ``LEADER_CHANGE``: the lake's ``coalesce(type, control_type)``)."""


def _schemas() -> dict[str, pa.Schema]:
    from pyspark.sql.pandas.types import to_arrow_schema  # type conversion only: no JVM

    from image.frames import SCHEMAS
    return {part: pa.schema([*to_arrow_schema(SCHEMAS[part]), *VERSION_COLUMNS]) for part in PARTS}


SCHEMAS: dict[str, pa.Schema] = _schemas()
"""Arrow schema of each part's version rows: the image JSON columns of ``image.frames.SCHEMAS``
plus the version columns."""

def iso_time(ms: int) -> str:
    """Epoch milliseconds as ISO-8601 UTC with milliseconds (``2026-01-30T17:05:00.123Z``),
    the form ``--from-time`` / ``--to-time`` accept."""
    moment = dt.datetime.fromtimestamp(ms / 1000, dt.UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


class Window(BaseModel):
    """The offsets (inclusive) or times a command asked for; unset ends are the log's ends."""

    from_offset: int | None = None
    to_offset: int | None = None
    from_time: int | None = None
    to_time: int | None = None


class Selection(BaseModel):
    """Which rows to read: ``parts``, and optionally only one topic (by name: its topic rows,
    its partitions — or one of them — and its TOPIC configs) or one broker."""

    parts: tuple[str, ...] = PARTS
    topic: str | None = None
    partition: int | None = None
    broker: int | None = None


@dataclass(frozen=True)
class VersionWindow:
    """What :meth:`VersionSource.load` returns.

    ``first_offset`` / ``last_offset``: the window resolved to offsets (inclusive). Parts not
    selected are empty tables. With a topic or broker selection every version of the selected
    keys is returned (history needs the versions before the window); otherwise the rows valid
    at some offset of ``[first_offset - 1, last_offset]`` (the ``- 1`` keeps the predecessor of a
    version starting at ``first_offset``). ``records``: every record with an offset in the window
    (columns of :data:`RECORDS_SCHEMA`, ordered by offset).
    """

    first_offset: int
    last_offset: int
    topics: pa.Table
    partitions: pa.Table
    brokers: pa.Table
    configs: pa.Table
    records: pa.Table

    def part(self, name: str) -> pa.Table:
        return getattr(self, name)

    @cached_property
    def _offsets(self) -> np.ndarray:
        return self.records.column("offset").to_numpy()

    def time_at(self, offset: int) -> int | None:
        """Append time of the record at ``offset`` (None if the window has no such record)."""
        offsets = self._offsets
        at = int(np.searchsorted(offsets, offset))
        if at < len(offsets) and offsets[at] == offset:
            return int(self.records.column("timestamp")[at].as_py())
        return None


class VersionSource(Protocol):
    """Where history, timeline and report read their data (the seam a lake implements)."""

    def load(self, window: Window, selection: Selection) -> VersionWindow:
        """The version rows and records of ``window`` (see :class:`VersionWindow`).

        A time resolves as ``replay --at-time`` does: to the last offset of the last batch whose
        append time is at or before it. ValueError for an empty log, a window with no offset, or
        offsets/times that cannot be combined.
        """
        ...

    def image_diff(self, from_offset: int, to_offset: int) -> dict[str, Any]:
        """The ``diff --json`` document (``image.diff.ImageDiff.to_json``) of the images at the two offsets."""
        ...


def empty(part: str) -> pa.Table:
    return SCHEMAS[part].empty_table()


def table(part: str, rows: Iterable[Mapping[str, Any]]) -> pa.Table:
    """Version rows given as dicts (image JSON fields + version columns) as an Arrow table."""
    return pa.Table.from_pylist(list(rows), schema=SCHEMAS[part])


def records_table(rows: Iterable[tuple[int, int, str | None]]) -> pa.Table:
    """``(offset, timestamp, type)`` triples as the records table of a window."""
    listed = list(rows)
    offsets, times, types = zip(*listed, strict=True) if listed else ((), (), ())
    return pa.table([pa.array(offsets, pa.int64()), pa.array(times, pa.int64()), pa.array(types, pa.string())],
                    schema=RECORDS_SCHEMA)


def resolve(records: pa.Table, window: Window) -> tuple[int, int]:
    """``window`` as inclusive offsets over ``records`` (the whole log's offset, time, type).

    An unset end is the log's first / last offset; a time is the last offset whose batch was
    appended at or before it (``image.engine.resolve_offset``).
    """
    if records.num_rows == 0:
        raise ValueError("the log has no records")
    offsets = records.column("offset")
    first, last = pc.min(offsets).as_py(), pc.max(offsets).as_py()

    def at_time(ms: int, which: str) -> int:
        before = pc.filter(offsets, pc.less_equal(records.column("timestamp"), ms))
        if len(before) == 0:
            raise ValueError(f"--{which}-time {iso_time(ms)}: no batch of the log was appended at or before it "
                             f"(the log starts at {iso_time(pc.min(records.column('timestamp')).as_py())})")
        return int(pc.max(before).as_py())

    for side in ("from", "to"):
        if getattr(window, f"{side}_offset") is not None and getattr(window, f"{side}_time") is not None:
            raise ValueError(f"give --{side}-offset or --{side}-time, not both")
    start = window.from_offset if window.from_offset is not None else (
        at_time(window.from_time, "from") if window.from_time is not None else first)
    end = window.to_offset if window.to_offset is not None else (
        at_time(window.to_time, "to") if window.to_time is not None else last)
    start, end = max(start, first), min(end, last)
    if start > end:
        raise ValueError(f"the window {start} … {end} holds no offset of the log ({first} … {last})")
    return start, end


def _valid_during(rows: pa.Table, first: int, last: int) -> pa.Table:
    """Rows valid at some offset of ``[first, last]``."""
    to = rows.column("to_offset")
    return rows.filter(pc.and_(pc.less_equal(rows.column("from_offset"), last),
                               pc.or_kleene(pc.is_null(to), pc.greater(to, first))))


def _selected(part: str, rows: pa.Table, selection: Selection) -> pa.Table:
    """The rows of ``part`` the topic / partition / broker selection keeps (all if none)."""
    def equal(column: str, value: Any) -> pa.Array:
        return pc.equal(rows.column(column), value)

    if selection.topic is not None:
        if part == "topics":
            return rows.filter(equal("name", selection.topic))
        if part == "partitions":
            kept = equal("topic", selection.topic)
            if selection.partition is not None:
                kept = pc.and_(kept, equal("partitionId", selection.partition))
            return rows.filter(kept)
        if part == "configs":
            return rows.filter(pc.and_(equal("resourceType", "TOPIC"), equal("resourceName", selection.topic)))
        return rows.slice(0, 0)
    if selection.broker is not None:
        if part == "brokers":
            return rows.filter(equal("brokerId", selection.broker))
        if part == "configs":
            return rows.filter(pc.and_(equal("resourceType", "BROKER"), equal("resourceName", str(selection.broker))))
        return rows.slice(0, 0)
    return rows


@dataclass(frozen=True)
class TableSource:
    """A :class:`VersionSource` over version rows and records held in memory (a log read in
    process, or tests). ``records``: the whole log's offset, timestamp and type."""

    parts: Mapping[str, pa.Table]
    records: pa.Table

    def load(self, window: Window, selection: Selection) -> VersionWindow:
        first, last = resolve(self.records, window)
        keyed = selection.topic is not None or selection.broker is not None
        tables = {}
        for part in PARTS:
            rows = self.parts.get(part, empty(part))
            if part not in selection.parts:
                rows = rows.slice(0, 0)
            rows = _selected(part, rows, selection)
            tables[part] = rows if keyed else _valid_during(rows, first - 1, last)
        offsets = self.records.column("offset")
        in_window = pc.and_(pc.greater_equal(offsets, first), pc.less_equal(offsets, last))
        records = self.records.filter(in_window).sort_by("offset").select(RECORDS_SCHEMA.names)
        return VersionWindow(first, last, records=records, **tables)


@dataclass(frozen=True)
class LogSource(TableSource):
    """A :class:`VersionSource` over a log read in process (``--log``): the lead's recorder
    (:func:`image.versions.record_versions`) replays its records and snapshots once; images for the
    diff are assembled from the versions (no replay) and diffed on Spark (``spark()`` gives the session)."""

    versions: Mapping[str, list[dict[str, Any]]] = field(default_factory=dict)
    positions: Sequence[Any] = ()
    snapshots: Sequence[Snapshot] = ()
    spans: Sequence[Any] = ()
    spark: Callable[[], Any] | None = None

    @classmethod
    def read(cls, path: str | os.PathLike[str], spark: Callable[[], Any] | None = None) -> LogSource:
        """Read the segments and snapshots under ``path`` and record every key's versions."""
        from image.versions import RecordPosition, record_versions
        from metadata.readers import read_log, read_snapshots

        records, snapshots = read_log(path), read_snapshots(path)
        if not records and not snapshots:
            raise ValueError(f"{path}: no metadata log segments or snapshots found")
        recorded = record_versions(records, snapshots)
        return cls(parts={part: table(part, recorded.versions[part]) for part in PARTS},
                   records=records_table((r.offset, r.timestamp, r.type or r.control_type) for r in records),
                   versions=recorded.versions, positions=[RecordPosition(r.offset, r.epoch, r.timestamp)
                                                          for r in records],
                   snapshots=snapshots, spans=recorded.spans, spark=spark)

    def image_json(self, offset: int) -> dict[str, Any]:
        """The image JSON at ``offset``, assembled from the versions valid there."""
        from image.parts import assemble
        from image.versions import provenance_at, rows_at

        provenance = provenance_at(offset, self.positions, self.snapshots, self.spans)
        return assemble(rows_at(self.versions, offset), provenance.last_contained_offset,
                        provenance.last_contained_epoch, provenance.last_contained_log_time_ms)

    def image_diff(self, from_offset: int, to_offset: int) -> dict[str, Any]:
        from image.diff import diff_images
        from image.frames import ImageFrames

        if self.spark is None:
            raise ValueError("the image diff needs Spark: give the source a SparkSession factory")
        session = self.spark()
        return diff_images(ImageFrames.from_json(session, self.image_json(from_offset)),
                           ImageFrames.from_json(session, self.image_json(to_offset))).to_json()
