"""Kafka's ``TopicsDelta.localChanges(brokerId)`` on the reference engine (docs/local-changes.md).

``LocalReplicaChanges`` says what one broker must do with a delta: partitions to delete, to lead,
to follow, the leaders whose leader epoch changed, the topic ids involved and the log directories
assigned to it. A partition is considered only if the delta touched it (it is in the topic delta's
``partition_changes``) and then only if it is new or its partition epoch changed; partitions of
deleted topics where the broker was a replica are deletes.

Directory ids follow Kafka exactly, including its **identity** comparison: Kafka compares the
two directory Uuid objects with ``!=`` (reference inequality), so a PartitionChangeRecord that
re-sends the same directories still reports the partition, while a MIGRATING→MIGRATING change
never does. :meth:`image.partition.PartitionRegistration.directory_identity` models those object
identities; this module compares identities, never values.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from image.image import MetadataImage
from image.partition import PartitionRegistration
from image.release import NEWEST, ReplayRules
from image.replay import SnapshotArg, delta_between
from image.topics import TopicDelta, TopicsDelta
from metadata.log.records import LogRecord


class TopicPartition(NamedTuple):
    """Kafka ``TopicPartition``: a partition by topic **name**."""

    topic: str
    partition: int


class TopicIdPartition(NamedTuple):
    """Kafka ``TopicIdPartition``: topic id plus the TopicPartition."""

    topic_id: str
    topic_partition: TopicPartition


class PartitionInfo(NamedTuple):
    """``LocalReplicaChanges.PartitionInfo``: topic id and the **new** registration."""

    topic_id: str
    partition: PartitionRegistration


@dataclass
class LocalReplicaChanges:
    """Kafka ``LocalReplicaChanges`` (members: deletes, electedLeaders, leaders, followers,
    topicIds, directoryIds)."""

    deletes: set[TopicPartition] = field(default_factory=set)
    elected_leaders: dict[TopicPartition, PartitionInfo] = field(default_factory=dict)
    leaders: dict[TopicPartition, PartitionInfo] = field(default_factory=dict)
    followers: dict[TopicPartition, PartitionInfo] = field(default_factory=dict)
    topic_ids: dict[str, str] = field(default_factory=dict)
    directory_ids: dict[TopicIdPartition, str] = field(default_factory=dict)

    def is_empty(self) -> bool:
        return not (self.deletes or self.leaders or self.followers or self.directory_ids)

    def merge(self, other: LocalReplicaChanges) -> None:
        """Union with ``other`` (maps keyed by TopicPartition: later entries win, as Java putAll)."""
        self.deletes |= other.deletes
        self.elected_leaders.update(other.elected_leaders)
        self.leaders.update(other.leaders)
        self.followers.update(other.followers)
        self.topic_ids.update(other.topic_ids)
        self.directory_ids.update(other.directory_ids)

    def to_json(self, broker: int, from_offset: int, to_offset: int) -> dict[str, Any]:
        """The oracle's ``changes --json`` object (tests/harness/README.md); lists by (topic, partition)."""

        def infos(members: dict[TopicPartition, PartitionInfo]) -> list[dict[str, Any]]:
            return [partition_info_json(tp, members[tp]) for tp in sorted(members)]

        return {
            "broker": broker,
            "fromOffset": from_offset,
            "toOffset": to_offset,
            "deletes": [{"topic": tp.topic, "partitionId": tp.partition} for tp in sorted(self.deletes)],
            "leaders": infos(self.leaders),
            "followers": infos(self.followers),
            "electedLeaders": infos(self.elected_leaders),
            "topicIds": dict(sorted(self.topic_ids.items())),
            "directoryIds": [
                {
                    "topicId": tip.topic_id,
                    "topic": tip.topic_partition.topic,
                    "partitionId": tip.topic_partition.partition,
                    "directory": directory,
                }
                for tip, directory in sorted(self.directory_ids.items(), key=lambda e: e[0].topic_partition)
            ],
        }


def partition_info_json(tp: TopicPartition, info: PartitionInfo) -> dict[str, Any]:
    """One ``leaders``/``followers``/``electedLeaders`` entry (the new registration)."""
    p = info.partition
    return {
        "topic": tp.topic,
        "topicId": info.topic_id,
        "partitionId": tp.partition,
        "leader": p.leader,
        "leaderEpoch": p.leader_epoch,
        "partitionEpoch": p.partition_epoch,
        "isr": list(p.isr),
        "replicas": list(p.replicas),
        "addingReplicas": list(p.adding_replicas),
        "removingReplicas": list(p.removing_replicas),
    }


def _same_directory_object(prev: PartitionRegistration, new: PartitionRegistration, broker: int) -> bool | None:
    """Kafka's ``prev.directory(b) == new.directory(b)`` by object identity; None when a lookup
    throws (the broker is not in that registration's replicas), left to right."""
    if broker not in prev.replicas or broker not in new.replicas:
        return None
    return prev.directory_identity(broker) == new.directory_identity(broker)


def topic_local_changes(delta: TopicDelta, broker: int) -> LocalReplicaChanges:
    """Kafka ``TopicDelta.localChanges(brokerId)``."""
    changes = LocalReplicaChanges()
    name, topic_id = delta.name, delta.id
    for partition_id, new in delta.partition_changes.items():
        tp = TopicPartition(name, partition_id)
        prev = delta.image.partitions.get(partition_id)
        changed = prev is None or prev.partition_epoch != new.partition_epoch
        if broker not in new.replicas:
            if prev is not None and broker in prev.replicas:
                changes.deletes.add(tp)
        elif new.leader == broker:
            if changed:
                changes.leaders[tp] = PartitionInfo(topic_id, new)
                if prev is None or prev.leader_epoch != new.leader_epoch:
                    changes.elected_leaders[tp] = PartitionInfo(topic_id, new)
                changes.topic_ids.setdefault(name, topic_id)
        elif changed:
            changes.followers[tp] = PartitionInfo(topic_id, new)
            changes.topic_ids.setdefault(name, topic_id)

        if prev is None:
            report = broker in new.replicas
        else:
            report = _same_directory_object(prev, new, broker) is False
        if report:
            changes.directory_ids[TopicIdPartition(topic_id, tp)] = new.directory(broker)
    return changes


def local_changes(delta: TopicsDelta, broker: int) -> LocalReplicaChanges:
    """Kafka ``TopicsDelta.localChanges(brokerId)``: every changed topic, then the partitions of
    deleted (base-image) topics where the broker was a replica."""
    changes = LocalReplicaChanges()
    for topic_delta in delta.changed_topics.values():
        changes.merge(topic_local_changes(topic_delta, broker))
    for topic_id in delta.deleted_topic_ids:
        topic = delta.image.topics_by_id[topic_id]
        for partition_id, partition in topic.partitions.items():
            if broker in partition.replicas:
                changes.deletes.add(TopicPartition(topic.name, partition_id))
    return changes


def candidate_brokers(delta: TopicsDelta) -> set[int]:
    """Every broker id that can have local changes: replicas (before or after) of the touched
    partitions and of the deleted topics' partitions."""
    brokers: set[int] = set()
    for topic_delta in delta.changed_topics.values():
        for partition_id, new in topic_delta.partition_changes.items():
            brokers.update(new.replicas)
            prev = topic_delta.image.partitions.get(partition_id)
            if prev is not None:
                brokers.update(prev.replicas)
    for topic_id in delta.deleted_topic_ids:
        for partition in delta.image.topics_by_id[topic_id].partitions.values():
            brokers.update(partition.replicas)
    return brokers


class RemovedPartition(NamedTuple):
    """What a delete removes: the topic id and the partition at A, and whether the topic was deleted."""

    topic_id: str
    partition: PartitionRegistration
    topic_deleted: bool


class Removals:
    """The partition each delete of a broker's LocalReplicaChanges removes (Kafka names a delete by
    TopicPartition only): of the deleted topic of that name, else of the changed topic whose partition
    left the broker. Only one of them exists unless topic names collide (an invalid log); then the
    first by (deleted first, topic id)."""

    def __init__(self, delta: TopicsDelta) -> None:
        by_name: dict[str, list[tuple[bool, str, TopicDelta | None]]] = {}
        for topic_id in delta.deleted_topic_ids:
            by_name.setdefault(delta.image.topics_by_id[topic_id].name, []).append((False, topic_id, None))
        for topic_id, topic_delta in delta.changed_topics.items():
            by_name.setdefault(topic_delta.name, []).append((True, topic_id, topic_delta))
        self._delta = delta
        self._by_name = {name: sorted(origins, key=lambda o: o[:2]) for name, origins in by_name.items()}

    def removed(self, broker: int, tp: TopicPartition) -> RemovedPartition:
        """The partition a delete ``tp`` of ``broker`` removes."""
        for _, topic_id, topic_delta in self._by_name[tp.topic]:
            if topic_delta is None:
                at_a = self._delta.image.topics_by_id[topic_id].partitions.get(tp.partition)
                if at_a is not None and broker in at_a.replicas:
                    return RemovedPartition(topic_id, at_a, True)
            else:
                at_a = topic_delta.image.partitions.get(tp.partition)
                new = topic_delta.partition_changes.get(tp.partition)
                if at_a is not None and new is not None and broker in at_a.replicas and broker not in new.replicas:
                    return RemovedPartition(topic_id, at_a, False)
        raise KeyError(f"broker {broker} has no delete of {tp.topic}-{tp.partition}")


def local_changes_json(
    records: Iterable[LogRecord],
    from_offset: int,
    to_offset: int,
    broker: int | None = None,
    *,
    snapshot: SnapshotArg | None = None,
    base: MetadataImage | None = None,
    opening: SnapshotArg | None = None,
    rules: ReplayRules = NEWEST,
    lenient: bool = False,
) -> dict[str, Any]:
    """Local changes of ``broker`` for the ONE delta (from_offset, to_offset] (``delta_between``, under the Kafka
    release's ``rules``).

    With a broker: the oracle's object ``{broker, fromOffset, toOffset, deletes, leaders,
    followers, electedLeaders, topicIds, directoryIds}`` (offsets = the images' provenance
    offsets). Without: ``{fromOffset, toOffset, brokers: [one such object per broker with any
    change, by broker id]}``.
    """
    start, delta, end = delta_between(
        records, from_offset, to_offset, snapshot=snapshot, base=base, opening=opening, rules=rules, lenient=lenient
    )
    topics = delta.topics_delta
    if broker is not None:
        changes = local_changes(topics, broker) if topics is not None else LocalReplicaChanges()
        return changes.to_json(broker, start.offset, end.offset)
    per_broker = []
    if topics is not None:
        for candidate in sorted(candidate_brokers(topics)):
            changes = local_changes(topics, candidate)
            if not changes.is_empty():
                per_broker.append(changes.to_json(candidate, start.offset, end.offset))
    return {"fromOffset": start.offset, "toOffset": end.offset, "brokers": per_broker}
