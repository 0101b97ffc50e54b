"""What each broker's ReplicaManager does with a delta (``applyDelta`` and the coordinator hooks of
``BrokerMetadataPublisher``, docs/local-changes.md, "ReplicaManager.applyDelta") for every broker at once, as
Spark transforms: the rows :func:`replica.plan.apply_plan_rows` computes in process (phases, order and assumptions are
described there), as a DataFrame of :data:`ACTIONS_SCHEMA`.

Fetcher ids: ``abs(31 * javaStringHash(topic) + partition) % num.replica.fetchers`` in 32-bit
arithmetic, computed by the Spark SQL expression :func:`fetcher_id_expr`.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from metadata.log.errors import BadInput
from replica.plan import (
    ACTION_FIELDS,
    DIRECTORY_ASSIGNMENT_LEVEL,
    PHASES,
    REQUIRED_FIELDS,
    TWO_31,
    TWO_32,
    coordinator_topics,
)
from replica.spark_changes import DELETE, FOLLOWER, LEADER, DeltaFrames

_TYPES = {
    "int": T.IntegerType(),
    "string": T.StringType(),
    "boolean": T.BooleanType(),
    "ints": T.ArrayType(T.IntegerType()),
}
ACTIONS_SCHEMA = T.StructType(
    [T.StructField(name, _TYPES[kind], name not in REQUIRED_FIELDS) for name, kind in ACTION_FIELDS]
)
"""The action table (stable; Delta-writable): :data:`replica.plan.ACTION_FIELDS`."""


def _signed32(value: Column) -> Column:
    """A value in [0, 2^32) as a signed 32-bit int (long column)."""
    return F.when(value >= TWO_31, value - TWO_32).otherwise(value)


def java_string_hash_expr(text: Column) -> Column:
    """Java ``String.hashCode`` (32-bit, signed) of an ASCII string column, as a long column."""
    chars = F.transform(F.sequence(F.lit(1), F.length(text)), lambda i: F.ascii(F.substring(text, i, F.lit(1))))
    unsigned = F.aggregate(chars, F.lit(0).cast("long"), lambda h, c: F.pmod(h * 31 + c, F.lit(TWO_32)))
    return _signed32(F.when(F.length(text) > 0, unsigned).otherwise(F.lit(0).cast("long")))


def fetcher_id_expr(topic: Column, partition: Column, num_replica_fetchers: int) -> Column:
    """``AbstractFetcherManager.getFetcherId``: ``Utils.abs(31 * topic.hashCode + partition) %
    numFetchers`` with Java int overflow and ``abs(Integer.MIN_VALUE) = 0``."""
    value = _signed32(F.pmod(java_string_hash_expr(topic) * 31 + partition, F.lit(TWO_32)))
    absolute = F.when(value == -TWO_31, F.lit(0).cast("long")).otherwise(F.abs(value))
    return (absolute % num_replica_fetchers).cast("int")


def _tp() -> Column:
    return F.concat_ws("-", F.col("topic"), F.col("partitionId").cast("string"))


_STATE = [
    "leader",
    "leaderEpoch",
    "isr",
    "partitionEpoch",
    "replicas",
    "addingReplicas",
    "removingReplicas",
    "leaderRecoveryState",
]
_ACTION_FIELDS = [f for f in ACTIONS_SCHEMA.fields if f.name not in ("broker", "step")]


def _action(
    phase: int,
    sub: int | Column,
    action: str | Column,
    reason: Column,
    group: Column | None = None,
    with_state: bool = True,
    **columns: Column,
) -> Column:
    """One action of the current row as a struct (fields of :data:`ACTIONS_SCHEMA` except broker and
    step, plus the sort keys ``_phase, _sub, _group``); the row's partition and, with
    ``with_state``, its state fields fill the common columns."""
    values: dict[str, Column] = {
        "phase": F.lit(PHASES[phase - 1]),
        "action": action if isinstance(action, Column) else F.lit(action),
        "reason": reason,
        "topic": F.col("topic"),
        "topicId": F.col("topicId"),
        "partition": F.col("partitionId"),
    }
    if with_state:
        values.update({name: F.col(name) for name in _STATE})
    values.update(columns)
    fields = [values.get(f.name, F.lit(None)).cast(f.dataType).alias(f.name) for f in _ACTION_FIELDS]
    keys = [
        F.lit(phase).alias("_phase"),
        (sub if isinstance(sub, Column) else F.lit(sub)).alias("_sub"),
        (group if group is not None else F.lit(None)).cast("long").alias("_group"),
    ]
    return F.struct(*fields, *keys)


def _explode(frame: DataFrame, actions: list[Column]) -> DataFrame:
    """The rows' actions (null entries = not taken), one output row each."""
    taken = F.filter(F.array(*actions), lambda a: a.isNotNull())
    return frame.select("broker", F.explode(taken).alias("_a")).select("broker", "_a.*")


def _indexed(topics: list[str]) -> Column:
    """Position of the row's topic in ``topics`` (null if absent)."""
    rank: Column = F.lit(None).cast("int")
    for i, topic in reversed(list(enumerate(topics))):
        rank = F.when(F.col("topic") == topic, F.lit(i)).otherwise(rank)
    return rank


def _coordinator_call(coordinators: dict[str, str], sub: int, action: str, epoch: Column | None) -> Column:
    """``election(partition, epoch)`` / ``resignation(partition, epoch)`` of the row's coordinator
    (all calls of one coordinator before the next one's)."""
    rank = _indexed(list(coordinators))
    name = F.element_at(F.array(*[F.lit(c) for c in coordinators.values()]), rank + 1)
    reason = F.format_string(
        "%s coordinator: %s(%d, %s)",
        name,
        F.lit("onElection" if action == "elect" else "onResignation"),
        F.col("partitionId"),
        F.lit("empty") if epoch is None else F.format_string("%d", epoch),
    )
    return _action(
        5, rank * 10 + sub, action, reason, coordinator=name, coordinatorEpoch=F.lit(None) if epoch is None else epoch
    )


def apply_plan(
    delta: DeltaFrames,
    *,
    brokers: Collection[int] | None = None,
    num_replica_fetchers: int = 1,
    in_controlled_shutdown: Collection[int] = (),
    inter_broker_listener: str = "PLAINTEXT",
    share_coordinator: bool = False,
) -> DataFrame:
    """Every broker's actions for the delta (:data:`ACTIONS_SCHEMA`), or only ``brokers``': the rows of
    :func:`replica.plan.apply_plan_rows` (options described there)."""
    if num_replica_fetchers < 1:
        raise BadInput("num.replica.fetchers must be at least 1")
    changes = delta.changes
    running = (
        delta.after.brokers.select(F.col("brokerId").alias("broker"))
        if brokers is None
        else delta.after.brokers.sparkSession.createDataFrame([(b,) for b in brokers], "broker int")
    )
    if brokers is not None:
        changes = changes.where(F.col("broker").isin(list(brokers)))
    coordinators = coordinator_topics(share_coordinator)
    before = delta.before.partitions
    deleted = delta.deleted_partitions

    # the Partition object a change meets: hosted before = a replica at A (by name); the deletes
    # of step 1 run first; a hosted partition's leader/epochs are those at A
    hosted = before.select(
        F.explode(F.array_distinct("replicas")).alias("broker"),
        "topic",
        "partitionId",
        F.col("topicId").alias("_hostedTopicId"),
        F.col("leader").alias("_curLeader"),
        F.col("leaderEpoch").alias("_curLeaderEpoch"),
        F.col("partitionEpoch").alias("_curPartitionEpoch"),
    )
    endpoints = (
        delta.after.brokers.select(F.col("brokerId").alias("leader"), F.explode("endPoints").alias("_ep"))
        .where(F.col("_ep.name") == inter_broker_listener)
        .select("leader", F.col("_ep.host").alias("_host"), F.col("_ep.port").alias("_port"))
    )
    current = delta.after.topics.select(F.col("name").alias("topic"), "topicId", F.lit(True).alias("_current"))
    deleted_names = deleted.select("topic").distinct().withColumn("_topicWasDeleted", F.lit(True))
    same_tp = Window.partitionBy("broker", "topic", "partitionId")
    rows = (
        changes.join(hosted, ["broker", "topic", "partitionId"], "left")
        .withColumn("_deletedFirst", F.max((F.col("kind") == DELETE).cast("int")).over(same_tp) == 1)
        .join(endpoints, "leader", "left")
        .join(F.broadcast(deleted_names), "topic", "left")
        .join(current, ["topic", "topicId"], "left")
    )
    is_hosted = F.col("_hostedTopicId").isNotNull() & ~F.col("_deletedFirst")
    cur_partition_epoch = F.when(is_hosted, F.col("_curPartitionEpoch")).otherwise(F.lit(0))
    cur_leader_epoch = F.when(is_hosted, F.col("_curLeaderEpoch")).otherwise(F.lit(-1))
    kind = F.col("kind")
    abort = is_hosted & (F.col("_hostedTopicId") != F.col("topicId"))
    stale = F.col("partitionEpoch") < cur_partition_epoch
    new_leader_epoch = ~stale & (F.col("leaderEpoch") > cur_leader_epoch)
    create_log = ~stale & ~is_hosted
    stop = (
        (kind == FOLLOWER)
        & ~abort
        & F.col("broker").isin(list(in_controlled_shutdown))
        & ((F.col("leader") == -1) | ~F.array_contains("isr", F.col("broker")))
    )
    start = (kind == FOLLOWER) & ~abort & ~stop & new_leader_epoch
    alive = F.col("_host").isNotNull()
    fetcher_id = fetcher_id_expr(F.col("topic"), F.col("partitionId"), num_replica_fetchers)
    delete_remote = F.coalesce(F.col("_topicWasDeleted"), F.lit(False)) & F.coalesce(
        F.col("_curLeader") == F.col("broker"), F.lit(False)
    )
    # updateCoordinator reads the topic delta of the NEW image's topic of that name
    coordinator_topic = F.col("topic").isin(list(coordinators)) & ~F.col("topicDeleted") & F.col("_current")

    abort_reason = F.format_string(
        "IllegalStateException: Topic %s exists, but its ID is %s, not %s as expected; applyDelta stops",
        _tp(),
        F.col("_hostedTopicId"),
        F.col("topicId"),
    )
    stale_reason = F.format_string(
        "skipped: partition epoch %d is older than the current %d", F.col("partitionEpoch"), cur_partition_epoch
    )
    created = F.when(create_log, F.lit("; creates the log")).otherwise(F.lit(""))
    make_leader_reason = F.concat(
        F.when(is_hosted & (F.col("_curLeader") == F.col("broker")), F.lit("already the leader")).otherwise(
            F.lit("becomes the leader")
        ),
        F.when(
            new_leader_epoch, F.format_string("; starts leader epoch %d at the log end offset", F.col("leaderEpoch"))
        ).otherwise(F.format_string("; keeps leader epoch %d", cur_leader_epoch)),
        F.format_string("; partition epoch %d, ISR %s", F.col("partitionEpoch"), F.array_join("isr", ",")),
        created,
    )
    make_follower_reason = F.concat(
        F.format_string("follows leader %d", F.col("leader")),
        F.when(new_leader_epoch, F.format_string(" at new leader epoch %d", F.col("leaderEpoch"))).otherwise(
            F.format_string(" at leader epoch %d (not newer: fetcher unchanged)", F.col("leaderEpoch"))
        ),
        F.format_string("; partition epoch %d", F.col("partitionEpoch")),
        created,
    )
    transition = {"isNew": ~is_hosted, "newLeaderEpoch": new_leader_epoch, "createLog": create_log}

    actions = [
        # 1. deletes: stopPartitions
        F.when(
            kind == DELETE,
            _action(1, 1, "remove-fetcher", F.lit("stopPartitions: remove replica and alter-log-dir fetchers")),
        ),
        F.when(
            kind == DELETE,
            _action(
                1,
                2,
                "remove-partition",
                F.format_string(
                    "stopPartitions: drop hosted partition %s (topic id %s) and close it", _tp(), F.col("topicId")
                ),
            ),
        ),
        F.when(
            kind == DELETE,
            _action(
                1,
                3,
                "delete-log",
                F.when(
                    delete_remote,
                    F.lit("delete the local log (async batch) and the remote log: topic deleted, led here"),
                ).otherwise(F.lit("delete the local log (async batch)")),
                deleteLocalLog=F.lit(True),
                deleteRemoteLog=delete_remote,
            ),
        ),
        # 2. leaders: applyLocalLeadersDelta
        F.when(kind == LEADER, _action(2, 1, "remove-fetcher", F.lit("become leader: remove the replica fetcher"))),
        F.when(
            kind == LEADER,
            _action(
                2,
                2,
                F.when(abort, F.lit("abort")).otherwise(F.lit("make-leader")),
                F.when(abort, abort_reason).when(stale, stale_reason).otherwise(make_leader_reason),
                **transition,
            ),
        ),
        # 3. followers: applyLocalFollowersDelta
        F.when(
            kind == FOLLOWER,
            _action(
                3,
                1,
                F.when(abort, F.lit("abort")).otherwise(F.lit("make-follower")),
                F.when(abort, abort_reason).when(stale, stale_reason).otherwise(make_follower_reason),
                **transition,
            ),
        ),
        F.when(start, _action(3, 2, "remove-fetcher", F.lit("new leader epoch: remove the old fetcher first"))),
        F.when(
            start & alive,
            _action(
                3,
                3,
                "add-fetcher",
                F.format_string(
                    "fetch from broker %d (%s:%d) in ReplicaFetcherThread-%d-%d at leader epoch %d",
                    F.col("leader"),
                    F.col("_host"),
                    F.col("_port"),
                    fetcher_id,
                    F.col("leader"),
                    F.col("leaderEpoch"),
                ),
                group=F.col("leader").cast("long") * num_replica_fetchers + fetcher_id,
                fetcherId=fetcher_id,
                fetcherLeaderId=F.col("leader"),
                fetcherLeaderHost=F.col("_host"),
                fetcherLeaderPort=F.col("_port"),
            ),
        ),
        F.when(
            start & ~alive,
            _action(
                3,
                3,
                "no-fetcher",
                F.format_string(
                    "leader %d is not registered with listener %s: no fetcher (the log exists)",
                    F.col("leader"),
                    F.lit(inter_broker_listener),
                ),
            ),
        ),
        F.when(
            stop,
            _action(
                3,
                4,
                "stop-fetching",
                F.lit("controlled shutdown, no leader or not in the ISR: remove the fetcher, keep the log"),
                deleteLocalLog=F.lit(False),
                deleteRemoteLog=F.lit(False),
            ),
        ),
        # 5. coordinators: the changed topic's local changes (resignations of deleted topics below)
        F.when(coordinator_topic & (kind == DELETE), _coordinator_call(coordinators, 2, "resign", None)),
        F.when(
            coordinator_topic & (kind == LEADER) & F.col("electedLeader"),
            _coordinator_call(coordinators, 3, "elect", F.col("leaderEpoch")),
        ),
        F.when(
            coordinator_topic & (kind == FOLLOWER), _coordinator_call(coordinators, 4, "resign", F.col("leaderEpoch"))
        ),
    ]
    mv = delta.after.features.where(F.col("name") == "metadata.version").select("level").first()
    if mv is not None and mv["level"] >= DIRECTORY_ASSIGNMENT_LEVEL:
        actions.append(
            F.when(
                F.col("directory").isNotNull(),
                _action(
                    4,
                    1,
                    "check-directory",
                    F.format_string(
                        "assigned directory %s: if the log is elsewhere, report its directory to the controller",
                        F.col("directory"),
                    ),
                    directory=F.col("directory"),
                ),
            )
        )
    per_change = _explode(rows, actions)

    led = (
        deleted.where(F.col("topic").isin(list(coordinators)) & (F.col("leader") >= 0))
        .withColumn("broker", F.col("leader"))
        .join(running, "broker", "left_semi")
    )
    resignations = _explode(led, [_coordinator_call(coordinators, 1, "resign", F.col("leaderEpoch"))])
    notified = _explode(
        running.crossJoin(deleted.select("topic", "topicId", "partitionId")),
        [
            _action(
                5,
                100,
                "partitions-deleted",
                F.format_string("group coordinator: onPartitionsDeleted(%s)", _tp()),
                with_state=False,
                coordinator=F.lit("group"),
            )
        ],
    )

    order = Window.partitionBy("broker")
    numbered = (
        per_change.unionByName(resignations)
        .unionByName(notified)
        .withColumn("_key", F.struct("_phase", "_sub", "_group", "topic", "partition"))
    )
    # an abort ends applyDelta (phases 2-4); the publisher's coordinator hooks still run
    numbered = (
        numbered.withColumn("_stop", F.min(F.when(F.col("action") == "abort", F.col("_key"))).over(order))
        .where(F.col("_stop").isNull() | (F.col("_key") <= F.col("_stop")) | (F.col("_phase") == 5))
        .withColumn("step", F.row_number().over(order.orderBy("_key")))
    )
    return numbered.select(*[F.col(f.name).cast(f.dataType).alias(f.name) for f in ACTIONS_SCHEMA.fields])


def plan_rows(actions: DataFrame, broker: int) -> list[dict[str, Any]]:
    """One broker's actions in step order."""
    return [r.asDict(recursive=True) for r in actions.where(F.col("broker") == broker).orderBy("step").collect()]
