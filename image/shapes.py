"""Each image part's shape, defined once: its columns and their kinds, its key, the order of its list in the
image JSON and the columns a diff shows with a change (pure data, nothing heavy imported).

Kafka keeps a part's serialised form with the part (``TopicImage.write``); here every form is derived from
:data:`SHAPES`: the rows and their JSON order (:mod:`image.parts`), the diff keys (:mod:`image.diff_keys`),
the Arrow and Delta schemas of the temporal image's tables (:mod:`metadata.lake.version_tables`) and the
Spark types of an image's frames (:mod:`image.temporal.spark.frames`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Kind = Literal["string", "int32", "int64", "bool", "double", "ints", "strings", "endpoints", "features", "entity"]
"""A column's kind: a scalar; ``ints`` / ``strings`` lists; ``endpoints`` Kafka's listeners (name, host, port,
securityProtocol); ``features`` supported version ranges (name, minSupportedVersion, maxSupportedVersion);
``entity`` a client quota entity (entity type → name, a null name for the default)."""


@dataclass(frozen=True)
class PartShape:
    """The shape of one image part."""

    columns: tuple[tuple[str, Kind], ...]
    """The part's columns in the names and order of the image JSON."""
    key: tuple[str, ...]
    """The columns that identify a row (none: the part has one row)."""
    order: tuple[str, ...] = ()
    """The columns its list in the image JSON is sorted by (none: not a list of the JSON); an ``entity`` sorts
    by its (type, name) pairs, a null name before every name."""
    context: tuple[str, ...] = ()
    """Columns a diff shows with a change but does not compare (a partition's topic name)."""
    hidden: bool = False
    """Hidden state a replay reads back, not part of the image JSON."""


SHAPES: dict[str, PartShape] = {
    "topics": PartShape((("name", "string"), ("topicId", "string")), ("topicId",), ("name", "topicId")),
    "partitions": PartShape(
        (
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
        ),
        ("topicId", "partitionId"),
        ("topic", "partitionId", "topicId"),
        context=("topic",),
    ),
    "brokers": PartShape(
        (
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
        ),
        ("brokerId",),
        ("brokerId",),
    ),
    "controllers": PartShape(
        (
            ("controllerId", "int32"),
            ("incarnationId", "string"),
            ("zkMigrationReady", "bool"),
            ("endPoints", "endpoints"),
            ("features", "features"),
        ),
        ("controllerId",),
        ("controllerId",),
    ),
    "configs": PartShape(
        (("resourceType", "string"), ("resourceName", "string"), ("name", "string"), ("value", "string")),
        ("resourceType", "resourceName", "name"),
        ("resourceType", "resourceName", "name"),
    ),
    "features": PartShape((("name", "string"), ("level", "int32")), ("name",)),
    "producerIds": PartShape((("nextProducerId", "int64"),), ()),
    "clientQuotas": PartShape(
        (("entity", "entity"), ("key", "string"), ("value", "double")), ("entity", "key"), ("entity", "key")
    ),
    "acls": PartShape(
        (
            ("id", "string"),
            ("resourceType", "int32"),
            ("resourceName", "string"),
            ("patternType", "int32"),
            ("principal", "string"),
            ("host", "string"),
            ("operation", "int32"),
            ("permissionType", "int32"),
        ),
        ("id",),
        ("id",),
    ),
    "scram": PartShape(
        (
            ("mechanism", "string"),
            ("name", "string"),
            ("salt", "string"),
            ("storedKey", "string"),
            ("serverKey", "string"),
            ("iterations", "int32"),
        ),
        ("mechanism", "name"),
        ("mechanism", "name"),
    ),
    "delegationTokens": PartShape(
        (
            ("tokenId", "string"),
            ("owner", "string"),
            ("requester", "string"),
            ("renewers", "strings"),
            ("issueTimestamp", "int64"),
            ("maxTimestamp", "int64"),
            ("expirationTimestamp", "int64"),
        ),
        ("tokenId",),
        ("tokenId",),
    ),
    "topicNames": PartShape((("name", "string"), ("topicId", "string")), ("name",), hidden=True),
}
"""Every image part, in the order of the image JSON (``features`` is a name → level map in the JSON,
``producerIds`` one object; ``topicNames``, Kafka's topic name index, is hidden: see :mod:`image.parts`)."""

PART_COLUMNS: dict[str, list[tuple[str, Kind]]] = {part: list(shape.columns) for part, shape in SHAPES.items()}
"""Columns of every part (from :data:`SHAPES`)."""

PART_KEYS: dict[str, tuple[str, ...]] = {part: shape.key for part, shape in SHAPES.items()}
"""Key columns of every part (from :data:`SHAPES`)."""
