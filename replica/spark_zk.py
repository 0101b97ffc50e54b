"""The ZooKeeper-era control requests of a delta for every broker at once, on Spark: the partitions of
the StopReplica and LeaderAndIsr requests, and :func:`leader_and_isr_json`, their documents (:mod:`replica.zk`
describes them and builds them in process)."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from replica.spark_changes import DELETE, FOLLOWER, LEADER, DeltaFrames
from replica.zk import (
    EPOCH_DURING_DELETE,
    LEADER_AND_ISR,
    NO_EPOCH,
    STOP_REPLICA,
    RegisteredBroker,
    requests_document,
)

_INTS = T.ArrayType(T.IntegerType())
ZK_SCHEMA = T.StructType(
    [
        T.StructField("broker", T.IntegerType(), False),
        T.StructField("request", T.StringType(), False),
        T.StructField("topic", T.StringType()),
        T.StructField("topicId", T.StringType()),
        T.StructField("partitionIndex", T.IntegerType()),
        T.StructField("controllerEpoch", T.IntegerType()),
        T.StructField("leader", T.IntegerType()),
        T.StructField("leaderEpoch", T.IntegerType()),
        T.StructField("isr", _INTS),
        T.StructField("partitionEpoch", T.IntegerType()),
        T.StructField("replicas", _INTS),
        T.StructField("addingReplicas", _INTS),
        T.StructField("removingReplicas", _INTS),
        T.StructField("isNew", T.BooleanType()),
        T.StructField("leaderRecoveryState", T.IntegerType()),
        T.StructField("deletePartition", T.BooleanType()),
    ]
)
"""One partition of one control request: ``request`` ∈ {StopReplica, LeaderAndIsr}; StopReplica
rows carry ``leaderEpoch`` and ``deletePartition`` only."""


def leader_and_isr_frame(
    delta: DeltaFrames, *, controller_epoch: int, brokers: Collection[int] | None = None
) -> DataFrame:
    """Every broker's StopReplica and LeaderAndIsr partitions for the delta (:data:`ZK_SCHEMA`);
    brokers not registered at B get none (a controller drops requests to offline brokers)."""
    registered = delta.after.brokers.select(F.col("brokerId").alias("broker"))
    changes = delta.changes.join(registered, "broker", "left_semi")
    if brokers is not None:
        changes = changes.where(F.col("broker").isin(list(brokers)))
    was_replica = delta.before.partitions.select(
        F.explode(F.array_distinct("replicas")).alias("broker"),
        "topicId",
        "partitionId",
        F.lit(True).alias("_wasReplica"),
    )
    epoch_at_b = delta.after.partitions.select("topicId", "partitionId", F.col("leaderEpoch").alias("_epochAtB"))
    stops = (
        changes.where(F.col("kind") == DELETE)
        .join(epoch_at_b, ["topicId", "partitionId"], "left")
        .select(
            "broker",
            F.lit(STOP_REPLICA).alias("request"),
            "topic",
            "topicId",
            F.col("partitionId").alias("partitionIndex"),
            F.when(F.col("topicDeleted"), F.lit(EPOCH_DURING_DELETE))
            .otherwise(F.coalesce("_epochAtB", F.lit(NO_EPOCH)))
            .alias("leaderEpoch"),
            F.lit(True).alias("deletePartition"),
        )
    )
    states = (
        changes.where(F.col("kind").isin(LEADER, FOLLOWER))
        .join(was_replica, ["broker", "topicId", "partitionId"], "left")
        .select(
            "broker",
            F.lit(LEADER_AND_ISR).alias("request"),
            "topic",
            "topicId",
            F.col("partitionId").alias("partitionIndex"),
            F.lit(controller_epoch).alias("controllerEpoch"),
            "leader",
            "leaderEpoch",
            "isr",
            "partitionEpoch",
            "replicas",
            "addingReplicas",
            "removingReplicas",
            F.col("_wasReplica").isNull().alias("isNew"),
            "leaderRecoveryState",
        )
    )
    rows = stops.unionByName(states, allowMissingColumns=True)
    return rows.select(*[F.col(f.name).cast(f.dataType).alias(f.name) for f in ZK_SCHEMA.fields])


def registered_brokers(delta: DeltaFrames, listener: str) -> dict[int, RegisteredBroker]:
    """The brokers registered at B (:class:`replica.zk.RegisteredBroker`; ``listener``: the inter-broker
    listener)."""
    registered = {}
    for r in delta.after.brokers.select("brokerId", "brokerEpoch", "fenced", "endPoints").collect():
        endpoint = next((e for e in r["endPoints"] or [] if e["name"] == listener), None)
        alive = None if r["fenced"] or endpoint is None else (endpoint["host"], endpoint["port"])
        registered[r["brokerId"]] = RegisteredBroker(r["brokerEpoch"], alive)
    return registered


def leader_and_isr_json(
    delta: DeltaFrames,
    *,
    controller_epoch: int,
    controller_id: int = 0,
    broker: int | None = None,
    inter_broker_listener: str = "PLAINTEXT",
) -> dict[str, Any]:
    """:func:`~replica.zk.leader_and_isr_doc` on Spark, from the delta's frames."""
    frame = leader_and_isr_frame(delta, controller_epoch=controller_epoch, brokers=None if broker is None else [broker])
    partitions: dict[int, list[dict[str, Any]]] = {}
    for r in frame.collect():
        partitions.setdefault(r["broker"], []).append(r.asDict(recursive=True))
    from_offset, to_offset = delta.offsets
    return requests_document(
        partitions,
        registered_brokers(delta, inter_broker_listener),
        from_offset=from_offset,
        to_offset=to_offset,
        controller_epoch=controller_epoch,
        controller_id=controller_id,
        broker=broker,
    )
