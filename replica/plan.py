"""What each broker's ReplicaManager does with a delta: ``applyDelta`` and the coordinator hooks of
``BrokerMetadataPublisher`` (docs/local-changes.md), in process on the reference engine's objects
(:func:`apply_plan_rows`); :mod:`replica.spark_plan` computes the same rows for every broker on Spark.

One row per action (:data:`ACTION_FIELDS`), per broker, numbered (``step``) in the order the broker
performs them:

1. ``delete`` — every delete: ``remove-fetcher`` (replica and alter-log-dir fetchers), then
   ``remove-partition`` (hosted partition dropped and closed), then ``delete-log`` (async batch;
   ``deleteRemoteLog`` when the topic was deleted and the broker led the partition at A);
2. ``leader`` — ``remove-fetcher`` for every new leader partition, then ``make-leader`` with the
   LeaderAndIsrPartitionState (``isNew``; skipped when its partition epoch is older than the
   broker's);
3. ``follower`` — ``make-follower`` for every follower partition (the log is created even when the
   leader is absent), then for those whose leader epoch increased ``remove-fetcher`` and
   ``add-fetcher`` (grouped by leader and fetcher id) or ``no-fetcher`` when the leader is not
   registered in the new image or lacks the inter-broker listener; in controlled shutdown
   partitions without a leader or outside the ISR get ``stop-fetching`` instead (log kept);
4. ``directory`` — at metadata.version ≥ 3.7-IV2, ``check-directory`` per directoryIds entry (the
   broker reports the log's actual directory to the controller if it differs);
5. ``coordinator`` — for ``__consumer_offsets`` (group), ``__transaction_state`` (transaction)
   and optionally ``__share_group_state`` (share): ``resign`` for partitions the broker led in a
   deleted topic (old leader epoch), ``resign`` for deletes (no epoch), ``elect`` for elected
   leaders, ``resign`` for followers (new leader epoch); then ``partitions-deleted`` (group
   coordinator ``onPartitionsDeleted``) for every partition of every deleted topic.

Within a phase, actions are ordered by their kind (the order above), then by topic and partition
(Kafka iterates HashMaps; add-fetchers are grouped by leader and fetcher id first).

Runtime state the metadata does not hold is modelled as follows (documented assumptions):

* **hosted before** = the broker is a replica of the partition (same topic name and partition) at
  A, with the Partition object's leader, leader epoch and partition epoch as in image A; after
  the deletes of step 1 such partitions are no longer hosted. ``isNew`` = not hosted. A hosted
  partition whose topic id differs from the new one makes Kafka throw IllegalStateException out
  of ``applyDelta``: the row is ``abort`` and the broker's later steps 2-4 are dropped.
* a hosted partition's log exists; no log directory is offline (no KafkaStorageException, no
  Offline partitions); no future (alter-log-dir) replicas, no tiered storage, no idle fetcher
  shutdown modelled;
* ``in_controlled_shutdown`` is an input (Kafka's broker-local flag, not in the image).

A delete (a TopicPartition in Kafka) carries the partition at A it removes
(:class:`replica.local_changes.Removals`); whether the broker led it there (``deleteRemoteLog``) and
what a leader or follower change meets are looked up by name in image A, as ``applyDelta`` does.

Fetcher ids: ``abs(31 * javaStringHash(topic) + partition) % num.replica.fetchers`` in 32-bit
arithmetic (:func:`fetcher_id`).
"""

from __future__ import annotations

import struct
from collections.abc import Collection
from typing import Any, NamedTuple

from image.delta import MetadataDelta
from image.image import MetadataImage
from image.partition import PartitionRegistration
from image.topics import TopicsDelta
from metadata.log.errors import BadInput
from replica.local_changes import (
    LocalReplicaChanges,
    PartitionInfo,
    Removals,
    TopicPartition,
    candidate_brokers,
    local_changes,
    topic_local_changes,
)

DIRECTORY_ASSIGNMENT_LEVEL = 17
"""metadata.version 3.7-IV2: ``isDirectoryAssignmentSupported``."""

COORDINATOR_TOPICS = {"__consumer_offsets": "group", "__transaction_state": "transaction"}
SHARE_GROUP_STATE = "__share_group_state"

PHASES = ("delete", "leader", "follower", "directory", "coordinator")

ACTION_FIELDS: tuple[tuple[str, str], ...] = (
    ("broker", "int"),
    ("step", "int"),
    ("phase", "string"),
    ("action", "string"),
    ("topic", "string"),
    ("topicId", "string"),
    ("partition", "int"),
    ("reason", "string"),
    ("leader", "int"),
    ("leaderEpoch", "int"),
    ("isr", "ints"),
    ("partitionEpoch", "int"),
    ("replicas", "ints"),
    ("addingReplicas", "ints"),
    ("removingReplicas", "ints"),
    ("leaderRecoveryState", "int"),
    ("isNew", "boolean"),
    ("newLeaderEpoch", "boolean"),
    ("createLog", "boolean"),
    ("deleteLocalLog", "boolean"),
    ("deleteRemoteLog", "boolean"),
    ("fetcherId", "int"),
    ("fetcherLeaderId", "int"),
    ("fetcherLeaderHost", "string"),
    ("fetcherLeaderPort", "int"),
    ("directory", "string"),
    ("coordinator", "string"),
    ("coordinatorEpoch", "int"),
)
"""The action table: (field, type ∈ int, string, boolean, ints = list of ints), in column order; every
field but :data:`REQUIRED_FIELDS` may be null. ``step`` numbers a broker's actions from 1 in the order
the broker performs them; ``phase`` ∈ :data:`PHASES`. State fields are the LeaderAndIsrPartitionState
(the new registration; for deletes the partition at A); ``isNew``, ``newLeaderEpoch`` (leader epoch
above the broker's), ``createLog`` (the log is created) for make-leader/make-follower; fetcher columns
for add-fetcher; ``coordinator`` and ``coordinatorEpoch`` (null = no epoch) for coordinator calls."""

REQUIRED_FIELDS = frozenset({"broker", "step", "phase", "action"})

TWO_32, TWO_31 = 1 << 32, 1 << 31
"""Java int arithmetic: values modulo 2^32, signed from 2^31."""


def _int32(value: int) -> int:
    value &= TWO_32 - 1
    return value - TWO_32 if value >= TWO_31 else value


def java_string_hash(text: str) -> int:
    """Java ``String.hashCode``: Σ s[i]·31^(n-1-i) over UTF-16 code units, 32-bit signed."""
    units = text.encode("utf-16-be")
    h = 0
    for unit in struct.unpack(f">{len(units) // 2}H", units):
        h = _int32(31 * h + unit)
    return h


def fetcher_id(topic: str, partition: int, num_replica_fetchers: int) -> int:
    """``AbstractFetcherManager.getFetcherId`` (``Utils.abs(Integer.MIN_VALUE) = 0``)."""
    value = _int32(31 * java_string_hash(topic) + partition)
    return (0 if value == -TWO_31 else abs(value)) % num_replica_fetchers


def coordinator_topics(share_coordinator: bool) -> dict[str, str]:
    """Coordinator by topic name, in the order the publisher updates them."""
    return {**COORDINATOR_TOPICS, SHARE_GROUP_STATE: "share"} if share_coordinator else dict(COORDINATOR_TOPICS)


SortKey = tuple[int, int, tuple[bool, int], str, int]
"""(phase 1-5, kind within the phase, add-fetcher group (nulls first), topic, partition)."""

Action = tuple[SortKey, dict[str, Any]]


def _state(p: PartitionRegistration) -> dict[str, Any]:
    """The LeaderAndIsrPartitionState fields of an action row."""
    return {
        "leader": p.leader,
        "leaderEpoch": p.leader_epoch,
        "isr": list(p.isr),
        "partitionEpoch": p.partition_epoch,
        "replicas": list(p.replicas),
        "addingReplicas": list(p.adding_replicas),
        "removingReplicas": list(p.removing_replicas),
        "leaderRecoveryState": p.leader_recovery_state,
    }


def _action(
    phase: int,
    sub: int,
    action: str,
    reason: str,
    tp: TopicPartition,
    topic_id: str,
    state: PartitionRegistration | None,
    group: int | None = None,
    **fields: Any,
) -> Action:
    row: dict[str, Any] = dict.fromkeys(name for name, _ in ACTION_FIELDS)
    row.update(
        phase=PHASES[phase - 1], action=action, reason=reason, topic=tp.topic, topicId=topic_id, partition=tp.partition
    )
    if state is not None:
        row.update(_state(state))
    row.update(fields)
    return (phase, sub, (group is not None, group or 0), tp.topic, tp.partition), row


class _Transition(NamedTuple):
    """How a leader or follower change meets the broker's Partition object (docs/local-changes.md,
    "ReplicaManager.applyDelta")."""

    hosted: tuple[str, PartitionRegistration] | None  # (topic id, partition at A) if hosted
    abort: bool
    stale: bool
    new_leader_epoch: bool
    create_log: bool
    current_partition_epoch: int
    current_leader_epoch: int

    def fields(self) -> dict[str, Any]:
        return {"isNew": self.hosted is None, "newLeaderEpoch": self.new_leader_epoch, "createLog": self.create_log}


class _Plan:
    """One delta's inputs, shared by every broker's plan."""

    def __init__(
        self,
        start: MetadataImage,
        topics: TopicsDelta,
        end: MetadataImage,
        num_replica_fetchers: int,
        in_controlled_shutdown: Collection[int],
        listener: str,
        coordinators: dict[str, str],
    ) -> None:
        self.start, self.topics, self.end = start, topics, end
        self.num_replica_fetchers = num_replica_fetchers
        self.in_controlled_shutdown = set(in_controlled_shutdown)
        self.listener = listener
        self.coordinators = coordinators
        level = end.features.metadata_version_level
        self.directories = level is not None and level >= DIRECTORY_ASSIGNMENT_LEVEL
        self.removals = Removals(topics)

    def rows(self, broker: int, notified: bool) -> list[dict[str, Any]]:
        """The broker's actions in step order; ``notified``: it runs the publisher's hooks for deleted
        topics (resignations of partitions it led, ``partitions-deleted``)."""
        changes = local_changes(self.topics, broker)
        actions = [a for tp in sorted(changes.deletes) for a in self._delete(broker, tp)]
        for tp, info in sorted(changes.leaders.items()):
            actions += self._leader(broker, tp, info, changes)
        for tp, info in sorted(changes.followers.items()):
            actions += self._follower(broker, tp, info, changes)
        if self.directories:
            for tip, directory in changes.directory_ids.items():
                new = self.topics.changed_topics[tip.topic_id].partition_changes[tip.topic_partition.partition]
                actions.append(
                    _action(
                        4,
                        1,
                        "check-directory",
                        f"assigned directory {directory}: if the log is "
                        "elsewhere, report its directory to the controller",
                        tip.topic_partition,
                        tip.topic_id,
                        new,
                        directory=directory,
                    )
                )
        actions += self._coordinators(broker, notified)
        actions.sort(key=lambda a: a[0])
        # an abort ends applyDelta (phases 2-4); the publisher's coordinator hooks still run
        stop = next((key for key, row in actions if row["action"] == "abort"), None)
        rows = [row for key, row in actions if stop is None or key <= stop or key[0] == 5]
        for step, row in enumerate(rows, 1):
            row.update(broker=broker, step=step)
        return rows

    def _hosted(self, broker: int, tp: TopicPartition) -> tuple[str, PartitionRegistration] | None:
        """(topic id, partition at A) when the broker was a replica of the partition of that name at A."""
        topic = self.start.topics.get_topic_by_name(tp.topic)
        partition = None if topic is None else topic.partitions.get(tp.partition)
        return None if partition is None or broker not in partition.replicas else (topic.id, partition)

    def _delete(self, broker: int, tp: TopicPartition) -> list[Action]:
        topic_id, at_a, _ = self.removals.removed(broker, tp)
        hosted = self._hosted(broker, tp)
        remote = self.topics.topic_was_deleted(tp.topic) and hosted is not None and hosted[1].leader == broker
        return [
            _action(
                1, 1, "remove-fetcher", "stopPartitions: remove replica and alter-log-dir fetchers", tp, topic_id, at_a
            ),
            _action(
                1,
                2,
                "remove-partition",
                f"stopPartitions: drop hosted partition {tp.topic}-{tp.partition} (topic id {topic_id}) and close it",
                tp,
                topic_id,
                at_a,
            ),
            _action(
                1,
                3,
                "delete-log",
                "delete the local log (async batch) and the remote log: topic deleted, led here"
                if remote
                else "delete the local log (async batch)",
                tp,
                topic_id,
                at_a,
                deleteLocalLog=True,
                deleteRemoteLog=remote,
            ),
        ]

    def _transition(
        self, broker: int, tp: TopicPartition, info: PartitionInfo, changes: LocalReplicaChanges
    ) -> _Transition:
        hosted = None if tp in changes.deletes else self._hosted(broker, tp)
        new = info.partition
        partition_epoch, leader_epoch = (
            (0, -1) if hosted is None else (hosted[1].partition_epoch, hosted[1].leader_epoch)
        )
        stale = new.partition_epoch < partition_epoch
        return _Transition(
            hosted,
            hosted is not None and hosted[0] != info.topic_id,
            stale,
            not stale and new.leader_epoch > leader_epoch,
            not stale and hosted is None,
            partition_epoch,
            leader_epoch,
        )

    def _abort_or_skip(self, tp: TopicPartition, info: PartitionInfo, t: _Transition) -> str | None:
        if t.abort:
            return (
                f"IllegalStateException: Topic {tp.topic}-{tp.partition} exists, but its ID is {t.hosted[0]}, "
                f"not {info.topic_id} as expected; applyDelta stops"
            )
        if t.stale:
            return (
                f"skipped: partition epoch {info.partition.partition_epoch} is older than the current "
                f"{t.current_partition_epoch}"
            )
        return None

    def _leader(
        self, broker: int, tp: TopicPartition, info: PartitionInfo, changes: LocalReplicaChanges
    ) -> list[Action]:
        new, t = info.partition, self._transition(broker, tp, info, changes)
        reason = self._abort_or_skip(tp, info, t) or "".join(
            (
                "already the leader" if t.hosted is not None and t.hosted[1].leader == broker else "becomes the leader",
                f"; starts leader epoch {new.leader_epoch} at the log end offset"
                if t.new_leader_epoch
                else f"; keeps leader epoch {t.current_leader_epoch}",
                f"; partition epoch {new.partition_epoch}, ISR {','.join(map(str, new.isr))}",
                "; creates the log" if t.create_log else "",
            )
        )
        return [
            _action(2, 1, "remove-fetcher", "become leader: remove the replica fetcher", tp, info.topic_id, new),
            _action(2, 2, "abort" if t.abort else "make-leader", reason, tp, info.topic_id, new, **t.fields()),
        ]

    def _follower(
        self, broker: int, tp: TopicPartition, info: PartitionInfo, changes: LocalReplicaChanges
    ) -> list[Action]:
        new, t = info.partition, self._transition(broker, tp, info, changes)
        reason = self._abort_or_skip(tp, info, t) or "".join(
            (
                f"follows leader {new.leader}",
                f" at new leader epoch {new.leader_epoch}"
                if t.new_leader_epoch
                else f" at leader epoch {new.leader_epoch} (not newer: fetcher unchanged)",
                f"; partition epoch {new.partition_epoch}",
                "; creates the log" if t.create_log else "",
            )
        )
        actions = [_action(3, 1, "abort" if t.abort else "make-follower", reason, tp, info.topic_id, new, **t.fields())]
        if t.abort:
            return actions
        if broker in self.in_controlled_shutdown and (new.leader == -1 or broker not in new.isr):
            return actions + [
                _action(
                    3,
                    4,
                    "stop-fetching",
                    "controlled shutdown, no leader or not in the ISR: remove the fetcher, keep the log",
                    tp,
                    info.topic_id,
                    new,
                    deleteLocalLog=False,
                    deleteRemoteLog=False,
                )
            ]
        if not t.new_leader_epoch:
            return actions
        actions.append(
            _action(3, 2, "remove-fetcher", "new leader epoch: remove the old fetcher first", tp, info.topic_id, new)
        )
        leader = self.end.cluster.broker(new.leader)
        endpoint = None if leader is None else next((e for e in leader.listeners if e.name == self.listener), None)
        if endpoint is None:
            return actions + [
                _action(
                    3,
                    3,
                    "no-fetcher",
                    f"leader {new.leader} is not registered with listener {self.listener}: no fetcher (the log exists)",
                    tp,
                    info.topic_id,
                    new,
                )
            ]
        fid = fetcher_id(tp.topic, tp.partition, self.num_replica_fetchers)
        return actions + [
            _action(
                3,
                3,
                "add-fetcher",
                f"fetch from broker {new.leader} ({endpoint.host}:{endpoint.port}) in "
                f"ReplicaFetcherThread-{fid}-{new.leader} at leader epoch {new.leader_epoch}",
                tp,
                info.topic_id,
                new,
                group=new.leader * self.num_replica_fetchers + fid,
                fetcherId=fid,
                fetcherLeaderId=new.leader,
                fetcherLeaderHost=endpoint.host,
                fetcherLeaderPort=endpoint.port,
            )
        ]

    def _coordinators(self, broker: int, notified: bool) -> list[Action]:
        """``updateCoordinator`` per coordinator topic, then ``onPartitionsDeleted`` (docs/local-changes.md,
        "ReplicaManager.applyDelta")."""
        actions: list[Action] = []
        for rank, (name, coordinator) in enumerate(self.coordinators.items()):

            def call(
                sub: int, pid: int, topic_id: str, state: PartitionRegistration, epoch: int | None, elect: bool = False
            ) -> None:
                hook = "onElection" if elect else "onResignation"
                actions.append(
                    _action(
                        5,
                        rank * 10 + sub,
                        "elect" if elect else "resign",
                        f"{coordinator} coordinator: {hook}({pid}, {'empty' if epoch is None else epoch})",
                        TopicPartition(name, pid),
                        topic_id,
                        state,
                        coordinator=coordinator,
                        coordinatorEpoch=epoch,
                    )
                )

            if notified and self.topics.topic_was_deleted(name):
                deleted = self.start.topics.get_topic_by_name(name)
                for pid, p in deleted.partitions.items():
                    if p.leader == broker:
                        call(1, pid, deleted.id, p, p.leader_epoch)
            current = self.end.topics.get_topic_by_name(name)
            topic_delta = None if current is None else self.topics.changed_topic(current.id)
            if topic_delta is None:
                continue
            changes = topic_local_changes(topic_delta, broker)
            for tp in changes.deletes:
                call(2, tp.partition, topic_delta.id, topic_delta.image.partitions[tp.partition], None)
            for tp, info in changes.elected_leaders.items():
                call(3, tp.partition, info.topic_id, info.partition, info.partition.leader_epoch, elect=True)
            for tp, info in changes.followers.items():
                call(4, tp.partition, info.topic_id, info.partition, info.partition.leader_epoch)
        if notified:
            for topic_id in self.topics.deleted_topic_ids:
                topic = self.topics.image.topics_by_id[topic_id]
                for pid in topic.partitions:
                    tp = TopicPartition(topic.name, pid)
                    actions.append(
                        _action(
                            5,
                            100,
                            "partitions-deleted",
                            f"group coordinator: onPartitionsDeleted({topic.name}-{pid})",
                            tp,
                            topic_id,
                            None,
                            coordinator="group",
                        )
                    )
        return actions


def apply_plan_rows(
    start: MetadataImage,
    delta: MetadataDelta,
    end: MetadataImage,
    *,
    brokers: Collection[int] | None = None,
    num_replica_fetchers: int = 1,
    in_controlled_shutdown: Collection[int] = (),
    inter_broker_listener: str = "PLAINTEXT",
    share_coordinator: bool = False,
) -> list[dict[str, Any]]:
    """Every broker's actions for the delta (rows of :data:`ACTION_FIELDS`, by broker then step), or
    only ``brokers``'. ``start``/``delta``/``end``: the images at A and B and the ONE delta between them
    (:func:`image.replay.delta_between`, :func:`replica.inputs.reference_delta`).

    ``num_replica_fetchers``: ``num.replica.fetchers``; ``in_controlled_shutdown``: brokers whose
    local controlled-shutdown flag is set; ``inter_broker_listener``: the listener name fetchers
    connect to; ``share_coordinator``: a share coordinator is configured. Deleted topics'
    resignations and ``partitions-deleted`` rows go to ``brokers`` if given, else to every broker
    registered at B.
    """
    if num_replica_fetchers < 1:
        raise BadInput("num.replica.fetchers must be at least 1")
    topics = delta.topics_delta
    if topics is None:
        return []
    notified = set(end.cluster.brokers) if brokers is None else set(brokers)
    plan = _Plan(
        start,
        topics,
        end,
        num_replica_fetchers,
        in_controlled_shutdown,
        inter_broker_listener,
        coordinator_topics(share_coordinator),
    )
    every = candidate_brokers(topics) | notified if brokers is None else notified
    return [row for broker in sorted(every) for row in plan.rows(broker, broker in notified)]
