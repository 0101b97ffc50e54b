"""The temporal image's tables: every image key's versions, the replay's rejections and its provenance.

For each part of the image (``image/README.md``) one Delta table ``image_<part>`` holds every version of
every key: the part's columns in the names of the image JSON, then

* ``from_offset`` — the first offset X at which ``replay --at-offset X`` shows this version,
* ``to_offset`` — the first offset at which it no longer does (the next version, or the key's removal);
  null while current,
* ``from_time`` — the append time (ms) of the batch whose record made this version visible.

The image at X is, per part, the rows with ``from_offset <= X AND (to_offset IS NULL OR to_offset > X)``.
``image_topic_names`` is Kafka's topic name index (hidden state that replay reads back; see
``image/parts.py``). ``image_provenance`` holds the metadata transactions as the loader saw them: inside
``[from_offset, to_offset)`` the image (and its provenance) is that of ``offset`` = ``from_offset - 1``; at
every other X the provenance is the last record at or before X (``records``), or the snapshot the image
starts from. ``image_rejections`` lists the records the replay rejected (a strict read raises the first
one it meets; a lenient read lists them).

The parts' columns and keys are their shapes (:data:`image.shapes.SHAPES`); this module is the one schema
source of these tables (pyarrow types of the shapes' kinds; Spark's are derived from them).
"""

from __future__ import annotations

import re
from functools import cache
from typing import TYPE_CHECKING

from image.shapes import PART_COLUMNS, PART_KEYS, SHAPES

if TYPE_CHECKING:
    import pyarrow as pa

VERSION_COLUMNS: list[tuple[str, str]] = [("from_offset", "int64"), ("to_offset", "int64"), ("from_time", "int64")]

PART_TABLES: dict[str, str] = {part: "image_" + re.sub("([A-Z])", r"_\1", part).lower() for part in SHAPES}
"""The versions table of every part."""

PROVENANCE = "image_provenance"
REJECTIONS = "image_rejections"

PROVENANCE_COLUMNS = [("from_offset", "int64"), ("to_offset", "int64"), ("offset", "int64"), ("outcome", "string")]
"""``outcome``: committed, aborted, superseded (a snapshot was loaded inside the transaction) or null (open)."""

REJECTIONS_COLUMNS = [
    ("offset", "int64"),
    ("snapshot_end_offset", "int64"),
    ("snapshot_epoch", "int32"),
    ("record_type", "string"),
    ("location", "string"),
    ("message", "string"),
]
"""``offset``: the record's log offset, or its position in the snapshot ``(snapshot_end_offset,
snapshot_epoch)`` it belongs to (null for log records)."""


def _arrow(kind: str) -> pa.DataType:
    import pyarrow as pa

    endpoint = pa.struct(
        [("name", pa.string()), ("host", pa.string()), ("port", pa.int32()), ("securityProtocol", pa.int32())]
    )
    feature = pa.struct(
        [("name", pa.string()), ("minSupportedVersion", pa.int32()), ("maxSupportedVersion", pa.int32())]
    )
    return {
        "string": pa.string(),
        "int32": pa.int32(),
        "int64": pa.int64(),
        "bool": pa.bool_(),
        "double": pa.float64(),
        "ints": pa.list_(pa.int32()),
        "strings": pa.list_(pa.string()),
        "endpoints": pa.list_(endpoint),
        "features": pa.list_(feature),
        "entity": pa.map_(pa.string(), pa.string()),
    }[kind]


def _schema(columns: list[tuple[str, str]]) -> pa.Schema:
    import pyarrow as pa

    return pa.schema([(name, _arrow(kind)) for name, kind in columns])


@cache
def part_schema(part: str) -> pa.Schema:
    """Arrow schema of the columns of ``part`` (as in the image JSON)."""
    return _schema(PART_COLUMNS[part])


@cache
def version_schema(part: str) -> pa.Schema:
    """Arrow schema of the versions table of ``part``."""
    return _schema([*PART_COLUMNS[part], *VERSION_COLUMNS])


@cache
def closing_schema(part: str) -> pa.Schema:
    """Arrow schema of the rows that end stored versions: the key columns, ``from_offset``, ``to_offset``."""
    types = dict(PART_COLUMNS[part])
    return _schema([*((k, types[k]) for k in PART_KEYS[part]), ("from_offset", "int64"), ("to_offset", "int64")])


@cache
def table_schemas() -> dict[str, pa.Schema]:
    """Every temporal-image table and its Arrow schema."""
    return {
        **{PART_TABLES[p]: version_schema(p) for p in PART_COLUMNS},
        PROVENANCE: _schema(PROVENANCE_COLUMNS),
        REJECTIONS: _schema(REJECTIONS_COLUMNS),
    }


TABLES = (*PART_TABLES.values(), PROVENANCE, REJECTIONS)
"""Every table of the temporal image."""


def stats_columns(name: str) -> str:
    """Columns Delta keeps file statistics of (data skipping): the version interval, and the topic for
    per-topic questions."""
    if name == "image_partitions":
        return "from_offset,to_offset,topic,topicId"
    if name == PROVENANCE:
        return "from_offset,to_offset"
    if name == REJECTIONS:
        return "offset,snapshot_end_offset"
    return "from_offset,to_offset"
