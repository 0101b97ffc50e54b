"""Local replica changes of every broker at once, on Spark (docs/local-changes.md, "Every broker at once").

Inputs are the images before and after the delta (ImageFrames at offsets A and B) and the
lake's typed tables, from which the partitions the delta (A, B] touched are derived:

* a record belongs to the delta when it becomes visible in (A, B]: outside a metadata
  transaction at its own offset, inside a committed one at its EndTransactionRecord, never when
  aborted or still open (the rules ``image.replay.delta_between`` follows, docs/replay-rules.md);
* topics declared by a TopicRecord of the delta (created or re-declared) have only **new**
  partitions (their topic delta starts from an empty topic): every partition they have at B;
* other topics: partitions named by a PartitionRecord or PartitionChangeRecord of the delta, plus
  partitions whose partition epoch differs between A and B (the ClearElrRecord of Kafka 4.x touches
  partitions without naming them; any other epoch change implies a record named the partition);
* topics of A removed by a RemoveTopicRecord of the delta are deleted: every partition of theirs
  where a broker was a replica is a delete for that broker.

The replicas of A and B are exploded per partition, joined and classified in one pass; nothing
loops over brokers or partitions on the driver. Directory ids follow Kafka's identity comparison
(see :mod:`replica.local_changes`): for a partition that existed at A and still hosts the broker,
the directory Uuid object is the same iff both arrays are the shared all-MIGRATING one, or the
array is not all-MIGRATING, no record of the delta carried Directories for the partition (a
PartitionRecord always does) and the broker's first index in the replica list did not move.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from image.temporal.spark.frames import ImageFrames
from image.temporal.versions import COMMITTED
from image.uuids import MIGRATING
from metadata.lake.version_tables import PROVENANCE

TableSource = Callable[[str], DataFrame]
"""Typed lake table by name (e.g. ``metadata.lake.protocol.Lake(...).table``)."""

DELETE, LEADER, FOLLOWER, DIRECTORY = "delete", "leader", "follower", "directory"

_INTS = T.ArrayType(T.IntegerType())
CHANGES_SCHEMA = T.StructType(
    [
        T.StructField("broker", T.IntegerType(), False),
        T.StructField("kind", T.StringType(), False),
        T.StructField("electedLeader", T.BooleanType(), False),
        T.StructField("topicDeleted", T.BooleanType(), False),
        T.StructField("topic", T.StringType()),
        T.StructField("topicId", T.StringType()),
        T.StructField("partitionId", T.IntegerType()),
        T.StructField("leader", T.IntegerType()),
        T.StructField("leaderEpoch", T.IntegerType()),
        T.StructField("partitionEpoch", T.IntegerType()),
        T.StructField("isr", _INTS),
        T.StructField("replicas", _INTS),
        T.StructField("addingReplicas", _INTS),
        T.StructField("removingReplicas", _INTS),
        T.StructField("leaderRecoveryState", T.IntegerType()),
        T.StructField("directory", T.StringType()),
    ]
)
"""One row per (broker, partition) with a local change.

``kind``: ``delete`` (state fields = the partition at A), ``leader`` / ``follower`` (state
fields = the new registration; ``electedLeader`` marks leaders whose leader epoch changed or
that are new), or ``directory`` (a directoryIds entry without a leader/follower change, only
possible for a PartitionRecord re-registering a partition with an unchanged partition epoch).
``topicDeleted``: the delete comes from a deleted topic. ``directory``: the directoryIds entry
of this broker and partition, if any.
"""

_STATE = [
    "leader",
    "leaderEpoch",
    "partitionEpoch",
    "isr",
    "replicas",
    "addingReplicas",
    "removingReplicas",
    "leaderRecoveryState",
]


def _prev(column: str) -> str:
    """Name of the column holding the partition's ``column`` at A."""
    return "prev" + column[0].upper() + column[1:]


def transactions(table: TableSource) -> DataFrame:
    """The log's metadata transactions as the replay saw them (the temporal image's ``image_provenance``):
    ``(begin, close, aborted)``, ``close`` null while open; a transaction a snapshot superseded counts as
    aborted (its records never became visible)."""
    return table(PROVENANCE).select(
        F.col("from_offset").alias("begin"),
        F.col("to_offset").alias("close"),
        (F.coalesce(F.col("outcome"), F.lit("")) != COMMITTED).alias("aborted"),
    )


def visible_in(
    table: TableSource, name: str, from_offset: int, to_offset: int, txns: DataFrame | None = None
) -> DataFrame:
    """Rows of typed table ``name`` that become visible in (from_offset, to_offset]: records after
    ``from_offset``, and those of a transaction that began before and commits in the window."""
    txns = transactions(table) if txns is None else txns
    first = (
        txns.where((F.col("begin") <= from_offset) & (F.col("close") > from_offset) & (F.col("close") <= to_offset))
        .agg(F.min("begin"))
        .first()[0]
    )
    lower = from_offset if first is None else min(first, from_offset)
    rows = table(name).where((F.col("offset") > lower) & (F.col("offset") <= to_offset))
    txns = txns.select(*[F.col(c).alias("_tx" + c) for c in ("begin", "close", "aborted")])
    enclosing = (F.col("offset") > F.col("_txbegin")) & (
        F.col("_txclose").isNull() | (F.col("offset") < F.col("_txclose"))
    )
    joined = rows.join(F.broadcast(txns), enclosing, "left")
    visible_at = F.when(F.col("_txbegin").isNull(), F.col("offset")).when(~F.col("_txaborted"), F.col("_txclose"))
    return joined.where((visible_at > from_offset) & (visible_at <= to_offset)).select(
        *[F.col(c) for c in rows.columns]
    )


def _all_migrating(directories: Column) -> Column:
    return F.forall(directories, lambda d: d == F.lit(MIGRATING))


def touched_partitions(
    before: ImageFrames,
    after: ImageFrames,
    table: TableSource,
    from_offset: int,
    to_offset: int,
    txns: DataFrame | None = None,
    opening: ImageFrames | None = None,
) -> DataFrame:
    """Partitions of B in the delta's topic deltas (``partition_changes``), with the partition
    at A as ``prev*`` columns (null when new) and ``directoriesSupplied``. ``opening``: the image of
    the snapshot the delta opens with (``replica.inputs.opening_snapshot``), whose topics it declares."""
    txns = transactions(table) if txns is None else txns
    declared = visible_in(table, "topics", from_offset, to_offset, txns).select(F.col("topic_id").alias("topicId"))
    if opening is not None:
        declared = declared.unionByName(opening.topics.select("topicId"))
    declared = declared.distinct().withColumn("redeclared", F.lit(True))
    records = (
        visible_in(table, "partitions", from_offset, to_offset, txns)
        .select(
            F.col("topic_id").alias("topicId"),
            F.col("partition_id").alias("partitionId"),
            F.lit(True).alias("supplied"),
        )
        .unionByName(
            visible_in(table, "partition_changes", from_offset, to_offset, txns).select(
                F.col("topic_id").alias("topicId"),
                F.col("partition_id").alias("partitionId"),
                F.col("directories").isNotNull().alias("supplied"),
            )
        )
        .groupBy("topicId", "partitionId")
        .agg(F.max("supplied").alias("directoriesSupplied"))
    )
    prev = before.partitions.select(
        "topicId", "partitionId", *[F.col(c).alias(_prev(c)) for c in (*_STATE, "directories")]
    )
    new = after.partitions.join(declared, "topicId", "left").withColumn(
        "redeclared", F.coalesce("redeclared", F.lit(False))
    )
    joined = new.join(records, ["topicId", "partitionId"], "left").join(prev, ["topicId", "partitionId"], "left")
    is_new = F.col("redeclared") | F.col("prevPartitionEpoch").isNull()
    touched = (
        F.col("redeclared")
        | F.col("directoriesSupplied").isNotNull()
        | (F.col("prevPartitionEpoch") != F.col("partitionEpoch"))
    )
    prev_columns = [c for c in prev.columns if c.startswith("prev")]
    return joined.where(touched).select(
        "topic",
        "topicId",
        "partitionId",
        *_STATE,
        "directories",
        *[F.when(~is_new, F.col(c)).alias(c) for c in prev_columns],
        F.coalesce("directoriesSupplied", F.lit(False)).alias("directoriesSupplied"),
    )


def deleted_topic_partitions(
    before: ImageFrames,
    table: TableSource,
    from_offset: int,
    to_offset: int,
    txns: DataFrame | None = None,
    opening: ImageFrames | None = None,
) -> DataFrame:
    """Partitions at A of the topics the delta deleted (``deletedTopicIds``): removed by a record, or
    absent from the snapshot the delta opens with (``opening``, as ``TopicsDelta.finishSnapshot``)."""
    removed = visible_in(table, "topic_removals", from_offset, to_offset, txns).select(
        F.col("topic_id").alias("topicId")
    )
    if opening is not None:
        removed = removed.unionByName(before.topics.select("topicId").subtract(opening.topics.select("topicId")))
    return before.partitions.join(F.broadcast(removed.distinct()), "topicId", "left_semi")


def local_changes_frame(
    before: ImageFrames,
    after: ImageFrames,
    table: TableSource,
    from_offset: int,
    to_offset: int,
    txns: DataFrame | None = None,
    opening: ImageFrames | None = None,
) -> DataFrame:
    """Every broker's LocalReplicaChanges for the delta (from_offset, to_offset], as rows of
    :data:`CHANGES_SCHEMA` (one per broker and partition); ``opening`` as for :func:`touched_partitions`."""
    txns = transactions(table) if txns is None else txns
    touched = touched_partitions(before, after, table, from_offset, to_offset, txns, opening)
    broker = F.col("broker")
    exploded = touched.withColumn(
        "broker", F.explode(F.array_distinct(F.concat("replicas", F.coalesce("prevReplicas", F.array().cast(_INTS)))))
    )
    in_new = F.array_contains("replicas", broker)
    is_new = F.col("prevPartitionEpoch").isNull()
    in_prev = ~is_new & F.array_contains("prevReplicas", broker)
    changed = is_new | (F.col("prevPartitionEpoch") != F.col("partitionEpoch"))
    kind = (
        F.when(~in_new, F.when(in_prev, F.lit(DELETE)))
        .when(F.col("leader") == broker, F.when(changed, F.lit(LEADER)))
        .when(changed, F.lit(FOLLOWER))
    )
    new_index = F.array_position("replicas", broker)
    same_directory = F.when(_all_migrating(F.col("directories")), _all_migrating(F.col("prevDirectories"))).otherwise(
        ~F.col("directoriesSupplied") & (F.array_position("prevReplicas", broker) == new_index)
    )
    report_directory = in_new & (is_new | (in_prev & ~same_directory))
    directory = F.when(report_directory, F.element_at("directories", new_index.cast("int")))
    partition_rows = (
        exploded.withColumn("directory", directory)
        .withColumn("kind", F.coalesce(kind, F.when(report_directory, F.lit(DIRECTORY))))
        .where(F.col("kind").isNotNull())
        .withColumn(
            "electedLeader", (F.col("kind") == LEADER) & (is_new | (F.col("prevLeaderEpoch") != F.col("leaderEpoch")))
        )
        .withColumn("topicDeleted", F.lit(False))
    )
    # a delete's state is the partition at A
    partition_rows = partition_rows.select(
        "broker",
        "kind",
        "electedLeader",
        "topicDeleted",
        "topic",
        "topicId",
        "partitionId",
        *[F.when(F.col("kind") == DELETE, F.col(_prev(c))).otherwise(F.col(c)).alias(c) for c in _STATE],
        "directory",
    )
    deleted = deleted_topic_partitions(before, table, from_offset, to_offset, txns, opening)
    deleted_rows = deleted.select(
        F.explode(F.array_distinct("replicas")).alias("broker"),
        F.lit(DELETE).alias("kind"),
        F.lit(False).alias("electedLeader"),
        F.lit(True).alias("topicDeleted"),
        "topic",
        "topicId",
        "partitionId",
        *_STATE,
        F.lit(None).cast("string").alias("directory"),
    )
    rows = partition_rows.unionByName(deleted_rows)
    # Kafka keys deletes, leaders and followers by TopicPartition (name, partition) and
    # directoryIds by TopicIdPartition: one row per key (for deletes, a deleted topic's first);
    # duplicates only arise from topic name collisions
    key = ["broker", "kind", "topic", "partitionId", F.when(F.col("kind") == DIRECTORY, F.col("topicId"))]
    one = Window.partitionBy(*key).orderBy(F.col("topicDeleted").desc(), "topicId")
    result = rows.withColumn("_n", F.row_number().over(one)).where(F.col("_n") == 1)
    return result.select(*[F.col(f.name).cast(f.dataType).alias(f.name) for f in CHANGES_SCHEMA.fields])


def provenance_offset(frames: ImageFrames) -> int:
    """The image's last contained offset."""
    return int(frames.provenance.first()["offset"])


@dataclass
class DeltaFrames:
    """The delta (from_offset, to_offset] as Spark inputs: the images at both ends, the lake's typed
    tables and the image of the snapshot the delta opens with, if any; derived frames are built once."""

    before: ImageFrames
    after: ImageFrames
    table: TableSource
    from_offset: int
    to_offset: int
    opening: ImageFrames | None = None

    @cached_property
    def transactions(self) -> DataFrame:
        return transactions(self.table)

    @cached_property
    def changes(self) -> DataFrame:
        """All brokers' local changes (:data:`CHANGES_SCHEMA`)."""
        return local_changes_frame(
            self.before, self.after, self.table, self.from_offset, self.to_offset, self.transactions, self.opening
        )

    @cached_property
    def deleted_partitions(self) -> DataFrame:
        """Partitions at A of the deleted topics (image partition columns)."""
        return deleted_topic_partitions(
            self.before, self.table, self.from_offset, self.to_offset, self.transactions, self.opening
        )

    @cached_property
    def offsets(self) -> tuple[int, int]:
        """The provenance offsets of the two images (the JSON's fromOffset, toOffset)."""
        return provenance_offset(self.before), provenance_offset(self.after)

    def changes_json(self, broker: int | None = None) -> dict[str, Any]:
        """:func:`changes_json` of this delta."""
        return changes_json(self.changes, *self.offsets, broker)


def _info(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "topic": row["topic"],
        "topicId": row["topicId"],
        "partitionId": row["partitionId"],
        "leader": row["leader"],
        "leaderEpoch": row["leaderEpoch"],
        "partitionEpoch": row["partitionEpoch"],
        "isr": list(row["isr"]),
        "replicas": list(row["replicas"]),
        "addingReplicas": list(row["addingReplicas"]),
        "removingReplicas": list(row["removingReplicas"]),
    }


def broker_json(rows: list[dict[str, Any]], broker: int, from_offset: int, to_offset: int) -> dict[str, Any]:
    """The oracle's ``changes --json`` object of one broker from its collected rows."""
    rows = sorted(rows, key=lambda r: (r["topic"], r["partitionId"]))
    led = [r for r in rows if r["kind"] == LEADER]
    topic_ids: dict[str, str] = {}
    for r in rows:
        if r["kind"] in (LEADER, FOLLOWER):
            topic_ids.setdefault(r["topic"], r["topicId"])
    return {
        "broker": broker,
        "fromOffset": from_offset,
        "toOffset": to_offset,
        "deletes": [{"topic": r["topic"], "partitionId": r["partitionId"]} for r in rows if r["kind"] == DELETE],
        "leaders": [_info(r) for r in led],
        "followers": [_info(r) for r in rows if r["kind"] == FOLLOWER],
        "electedLeaders": [_info(r) for r in led if r["electedLeader"]],
        "topicIds": dict(sorted(topic_ids.items())),
        "directoryIds": [
            {"topicId": r["topicId"], "topic": r["topic"], "partitionId": r["partitionId"], "directory": r["directory"]}
            for r in rows
            if r["directory"] is not None
        ],
    }


def changes_json(frame: DataFrame, from_offset: int, to_offset: int, broker: int | None = None) -> dict[str, Any]:
    """The JSON of :func:`replica.local_changes.local_changes_json` from a changes frame
    (offsets = the images' provenance offsets)."""
    if broker is not None:
        rows = [r.asDict(recursive=True) for r in frame.where(F.col("broker") == broker).collect()]
        return broker_json(rows, broker, from_offset, to_offset)
    by_broker: dict[int, list[dict[str, Any]]] = {}
    for r in frame.collect():
        by_broker.setdefault(r["broker"], []).append(r.asDict(recursive=True))
    return {
        "fromOffset": from_offset,
        "toOffset": to_offset,
        "brokers": [broker_json(rows, b, from_offset, to_offset) for b, rows in sorted(by_broker.items())],
    }
