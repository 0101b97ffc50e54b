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

This module is the one schema source of these tables (pyarrow types; Spark's are derived from them).
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pyarrow as pa

PART_COLUMNS: dict[str, list[tuple[str, str]]] = {
    "topics": [("name", "string"), ("topicId", "string")],
    "partitions": [
        ("topic", "string"),
        ("topicId", "string"),
        ("partitionId", "int32"),
        ("replicas", "ints"),
        ("isr", "ints"),
        ("removingReplicas", "ints"),
        ("addingReplicas", "ints"),
        ("leader", "int32"),
        ("leaderRecoveryState", "int32"),
        ("leaderEpoch", "int32"),
        ("partitionEpoch", "int32"),
        ("directories", "strings"),
        ("eligibleLeaderReplicas", "ints"),
        ("lastKnownElr", "ints"),
    ],
    "brokers": [
        ("brokerId", "int32"),
        ("brokerEpoch", "int64"),
        ("incarnationId", "string"),
        ("fenced", "bool"),
        ("inControlledShutdown", "bool"),
        ("isMigratingZkBroker", "bool"),
        ("rack", "string"),
        ("endPoints", "endpoints"),
        ("features", "features"),
        ("logDirs", "strings"),
        ("cordonedLogDirs", "strings"),
    ],
    "controllers": [
        ("controllerId", "int32"),
        ("incarnationId", "string"),
        ("zkMigrationReady", "bool"),
        ("endPoints", "endpoints"),
        ("features", "features"),
    ],
    "configs": [("resourceType", "string"), ("resourceName", "string"), ("name", "string"), ("value", "string")],
    "features": [("name", "string"), ("level", "int32")],
    "producerIds": [("nextProducerId", "int64")],
    "clientQuotas": [("entity", "entity"), ("key", "string"), ("value", "double")],
    "acls": [
        ("id", "string"),
        ("resourceType", "int32"),
        ("resourceName", "string"),
        ("patternType", "int32"),
        ("principal", "string"),
        ("host", "string"),
        ("operation", "int32"),
        ("permissionType", "int32"),
    ],
    "scram": [
        ("mechanism", "string"),
        ("name", "string"),
        ("salt", "string"),
        ("storedKey", "string"),
        ("serverKey", "string"),
        ("iterations", "int32"),
    ],
    "delegationTokens": [
        ("tokenId", "string"),
        ("owner", "string"),
        ("requester", "string"),
        ("renewers", "strings"),
        ("issueTimestamp", "int64"),
        ("maxTimestamp", "int64"),
        ("expirationTimestamp", "int64"),
    ],
    "topicNames": [("name", "string"), ("topicId", "string")],
}
"""Columns of every image part, in the names and order of the image JSON (``topicNames`` is hidden)."""

PART_KEYS: dict[str, tuple[str, ...]] = {
    "topics": ("topicId",),
    "partitions": ("topicId", "partitionId"),
    "brokers": ("brokerId",),
    "controllers": ("controllerId",),
    "configs": ("resourceType", "resourceName", "name"),
    "features": ("name",),
    "producerIds": (),
    "clientQuotas": ("entity", "key"),
    "acls": ("id",),
    "scram": ("mechanism", "name"),
    "delegationTokens": ("tokenId",),
    "topicNames": ("name",),
}
"""Key columns of every part."""

VERSION_COLUMNS: list[tuple[str, str]] = [("from_offset", "int64"), ("to_offset", "int64"), ("from_time", "int64")]

PART_TABLES: dict[str, str] = {
    "topics": "image_topics",
    "partitions": "image_partitions",
    "brokers": "image_brokers",
    "controllers": "image_controllers",
    "configs": "image_configs",
    "features": "image_features",
    "producerIds": "image_producer_ids",
    "clientQuotas": "image_client_quotas",
    "acls": "image_acls",
    "scram": "image_scram",
    "delegationTokens": "image_delegation_tokens",
    "topicNames": "image_topic_names",
}
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
