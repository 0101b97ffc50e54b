"""Version rows of the temporal image, in memory, and the seam that reads a window of them.

A *version row* (the lead's layout, docs/health.md) is one state of one key of an image part:
the part's columns, named as in the image JSON, plus ``from_offset`` (the first offset X at
which ``replay --at-offset X`` shows it), ``to_offset`` (the first offset at which it no
longer does; null while current) and ``from_time`` (append time, ms, of the batch whose record
made it visible). The image at X is, per part, the rows with ``from_offset <= X < to_offset``.

History, timeline and report read the ``topics``, ``partitions``, ``brokers`` and ``configs``
parts and the records' offsets, times and types of a window with :func:`load`, from any
:class:`~image.temporal.reads.TemporalSource`: a lake read in process or on Spark (filters pushed down to
the Delta tables) or a log read in process (:func:`image.temporal.sources.log_source`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
import pyarrow as pa
from pydantic import BaseModel

from image.temporal.reads import TemporalSource
from image.temporal.window import Window
from metadata.lake.version_tables import version_schema

PARTS = ("topics", "partitions", "brokers", "configs")
"""The image parts history and timeline read."""

RECORDS_SCHEMA = pa.schema([("offset", pa.int64()), ("timestamp", pa.int64()), ("type", pa.string())])
"""The records of a window: offset, batch append time (ms) and record type name (for a control
record its control type, e.g. ``LEADER_CHANGE``: the lake's ``coalesce(type, control_type)``)."""


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
    (columns of :data:`RECORDS_SCHEMA`, ordered by offset) — with a key selection only those at the
    offsets where a selected version ends and none begins (the append times of removals history shows).
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


def empty(part: str) -> pa.Table:
    """No version rows of ``part``."""
    return version_schema(part).empty_table()


def _equal(part: str, selection: Selection) -> dict[str, Any] | None:
    """The column values ``part``'s rows must have for ``selection`` (None: the part has no such rows)."""
    if selection.topic is not None:
        if part == "topics":
            return {"name": selection.topic}
        if part == "partitions":
            return {"topic": selection.topic} | (
                {} if selection.partition is None else {"partitionId": selection.partition}
            )
        if part == "configs":
            return {"resourceType": "TOPIC", "resourceName": selection.topic}
        return None
    if selection.broker is not None:
        if part == "brokers":
            return {"brokerId": selection.broker}
        if part == "configs":
            return {"resourceType": "BROKER", "resourceName": str(selection.broker)}
        return None
    return {}


def load(source: TemporalSource, window: Window, selection: Selection) -> VersionWindow:
    """The version rows and records of ``window``'s records (:meth:`~image.temporal.window.Window.records`; see
    :class:`VersionWindow`) from ``source``."""
    first, last = window.records(source)
    keyed = selection.topic is not None or selection.broker is not None
    tables = {}
    for part in PARTS:
        equal = _equal(part, selection) if part in selection.parts else None
        tables[part] = (
            empty(part) if equal is None else source.versions(part, None if keyed else (first - 1, last), equal)
        )
    only = None
    if keyed:  # where a selected key may disappear: a version ends and none begins
        ends = {o for t in tables.values() for o in t.column("to_offset").drop_null().to_pylist() if first <= o <= last}
        only = ends - {o for t in tables.values() for o in t.column("from_offset").to_pylist()}
    # (no removal: no read — on Spark an empty offset list would still cost a job)
    records = RECORDS_SCHEMA.empty_table() if only == set() else source.records(first, last, only)
    return VersionWindow(first, last, records=records.select(RECORDS_SCHEMA.names), **tables)


def image_diff(source: TemporalSource, from_offset: int, to_offset: int) -> dict[str, Any]:
    """The ``diff --json`` document of the images at the two offsets (from the versions, no replay)."""
    from image.temporal.diff import diff_json

    return diff_json(source, from_offset, to_offset)
