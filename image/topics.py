"""Topics part of the image: TopicImage/TopicsImage and TopicDelta/TopicsDelta
(docs/replay-rules.md, "Topics and partitions")."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from image.cow import CowMap, empty_map, frozen, read_only, writable
from image.errors import ReplayError
from image.partition import PartitionRegistration


@dataclass(frozen=True, slots=True)
class TopicImage:
    """A topic: name, id and its partitions by partition id."""

    name: str
    id: str
    partitions: Mapping[int, PartitionRegistration] = field(default_factory=empty_map)

    def frozen(self) -> TopicImage:
        """This topic with read-only partitions (self if already read-only)."""
        if isinstance(self.partitions, CowMap):
            return TopicImage(self.name, self.id, self.partitions.snapshot())
        return self


@dataclass(frozen=True, slots=True)
class TopicsImage:
    """Topics by id and by name (same TopicImage objects)."""

    topics_by_id: Mapping[str, TopicImage] = field(default_factory=empty_map)
    topics_by_name: Mapping[str, TopicImage] = field(default_factory=empty_map)

    EMPTY: ClassVar[TopicsImage]

    def get_topic(self, topic_id: str) -> TopicImage | None:
        return self.topics_by_id.get(topic_id)

    def get_topic_by_name(self, name: str) -> TopicImage | None:
        return self.topics_by_name.get(name)

    def get_partition(self, topic_id: str, partition_id: int) -> PartitionRegistration | None:
        topic = self.topics_by_id.get(topic_id)
        return None if topic is None else topic.partitions.get(partition_id)

    def frozen(self) -> TopicsImage:
        """A read-only copy of a live image (self if already read-only)."""
        if not isinstance(self.topics_by_id, CowMap) and not isinstance(self.topics_by_name, CowMap):
            return self
        frozen_topics: dict[int, TopicImage] = {}  # by object identity: both maps keep sharing objects

        def freeze(topic: TopicImage) -> TopicImage:
            if id(topic) not in frozen_topics:
                frozen_topics[id(topic)] = topic.frozen()
            return frozen_topics[id(topic)]

        by_id = {topic_id: freeze(topic) for topic_id, topic in self.topics_by_id.items()}
        by_name = {name: freeze(topic) for name, topic in self.topics_by_name.items()}
        return TopicsImage(read_only(by_id), read_only(by_name))


TopicsImage.EMPTY = TopicsImage()


class TopicDelta:
    """Changes to one topic. ``image`` is the base-image topic, or a fresh empty topic when the
    topic was (re)declared by a TopicRecord in this delta."""

    def __init__(self, image: TopicImage) -> None:
        self.image = image
        self.partition_changes: dict[int, PartitionRegistration] = {}

    @property
    def name(self) -> str:
        return self.image.name

    @property
    def id(self) -> str:
        return self.image.id

    def new_partitions(self) -> dict[int, PartitionRegistration]:
        """Changed partitions that do not exist in the base topic."""
        return {pid: p for pid, p in self.partition_changes.items() if pid not in self.image.partitions}

    def replay_partition(self, data: Mapping[str, Any]) -> None:
        """PartitionRecord: replace the partition (absolute values)."""
        self.partition_changes[data["partitionId"]] = PartitionRegistration.from_record(data)

    def replay_partition_change(self, data: Mapping[str, Any]) -> None:
        """PartitionChangeRecord: merge onto this delta's version of the partition, else the base's."""
        partition_id = data["partitionId"]
        current = self.partition_changes.get(partition_id) or self.image.partitions.get(partition_id)
        if current is None:
            raise ReplayError(
                f"unknown partition {data['topicId']}:{partition_id} "
                f"(Unable to find partition {data['topicId']}:{partition_id})"
            )
        self.partition_changes[partition_id] = current.merge(data)

    def clear_elr(self) -> None:
        """ClearElrRecord (Kafka ≥ 4.0): every partition (changed ones first, then untouched base
        ones) with a non-empty ELR or lastKnownElr gets both set to empty through a merge, which
        bumps its partition epoch by one; other fields are unchanged."""
        clear = {"eligibleLeaderReplicas": (), "lastKnownElr": ()}
        for partition_id, partition in list(self.partition_changes.items()):
            if partition.elr or partition.last_known_elr:
                self.partition_changes[partition_id] = partition.merge(clear)
        for partition_id, partition in self.image.partitions.items():
            if partition_id not in self.partition_changes and (partition.elr or partition.last_known_elr):
                self.partition_changes[partition_id] = partition.merge(clear)

    def build(self, in_place: bool) -> TopicImage:
        """The resulting (live) topic; with ``in_place`` a live base topic is updated directly."""
        partitions = self.image.partitions
        if in_place and isinstance(partitions, CowMap):
            result = self.image
        else:
            partitions = CowMap(frozen(partitions))
            result = TopicImage(self.image.name, self.image.id, partitions)
        for partition_id, partition in self.partition_changes.items():
            partitions.set(partition_id, partition)
        return result

    def apply(self) -> TopicImage:
        """Base partitions overlaid with the changes (partitions are never removed individually)."""
        return self.build(in_place=False).frozen()


class TopicsDelta:
    """Changes to the topics, all relative to the base image ``image``.

    ``changed_topics`` holds a TopicDelta per touched, not deleted topic id;
    ``deleted_topic_ids`` the base-image topics deleted by this delta (topics created and deleted
    within the delta leave no trace); ``created_topics`` the latest id declared per name (Kafka 4.2+
    forgets the name when that topic is removed in the delta: ``forgets_removed_created_topics``).
    """

    def __init__(
        self, image: TopicsImage, *, check_base_names: bool = True, forgets_removed_created_topics: bool = True
    ) -> None:
        self.image = image
        self.changed_topics: dict[str, TopicDelta] = {}
        self.deleted_topic_ids: set[str] = set()
        self.created_topics: dict[str, str] = {}
        self._check_base_names = check_base_names
        self._forgets_removed_created_topics = forgets_removed_created_topics

    @property
    def created_topic_ids(self) -> set[str]:
        """Kafka's ``createdTopicIds()``: the ids of :attr:`created_topics`."""
        return set(self.created_topics.values())

    def _name_owner(self, name: str) -> str | None:
        """Id of the live topic currently holding ``name`` (as of this delta), if any."""
        created = self.created_topics.get(name)
        if created is not None and created in self.changed_topics and self.changed_topics[created].name == name:
            return created
        if self._check_base_names:
            base = self.image.topics_by_name.get(name)
            if base is not None and base.id not in self.deleted_topic_ids:
                changed = self.changed_topics.get(base.id)
                if changed is None or changed.name == name:
                    return base.id
        return None

    def replay_topic(self, data: Mapping[str, Any]) -> None:
        """TopicRecord: a fresh topic delta (empty base topic) replaces any earlier one for the id.

        Kafka accepts a name already used by another live topic; the record is applied and then
        reported as an error (name collision), so lenient replay keeps Kafka's effect.
        """
        name, topic_id = data["name"], data["topicId"]
        owner = self._name_owner(name)
        self.changed_topics[topic_id] = TopicDelta(TopicImage(name, topic_id))
        self.created_topics[name] = topic_id
        if owner is not None and owner != topic_id:
            raise ReplayError(f"topic name {name!r} of topic {topic_id} is already used by topic {owner}")

    def _existing_topic_delta(self, topic_id: str, record: str) -> TopicDelta:
        delta = self.changed_topics.get(topic_id)
        if delta is None:
            base = self.image.topics_by_id.get(topic_id)
            if base is None or topic_id in self.deleted_topic_ids:
                state = "deleted" if base is not None else "unknown"
                raise ReplayError(f"{record} for {state} topic {topic_id}")
            delta = self.changed_topics[topic_id] = TopicDelta(base)
        return delta

    def replay_partition(self, data: Mapping[str, Any]) -> None:
        """PartitionRecord: set the partition of a topic of this delta or of the base image."""
        self._existing_topic_delta(data["topicId"], "PartitionRecord").replay_partition(data)

    def replay_partition_change(self, data: Mapping[str, Any]) -> None:
        """PartitionChangeRecord: merge onto the current partition (docs/replay-rules.md, "PartitionChangeRecord")."""
        self._existing_topic_delta(data["topicId"], "PartitionChangeRecord").replay_partition_change(data)

    def replay_remove_topic(self, data: Mapping[str, Any]) -> str:
        """RemoveTopicRecord: drop the topic delta and delete the base topic; returns the name. Kafka 4.2+ also
        drops the topic delta's name from the created topics, whichever id it names (KAFKA-19497)."""
        topic_id = data["topicId"]
        delta = self.changed_topics.pop(topic_id, None)
        base = self.image.topics_by_id.get(topic_id)
        if delta is not None:
            if self._forgets_removed_created_topics:
                self.created_topics.pop(delta.name, None)
            if base is not None:
                self.deleted_topic_ids.add(topic_id)
            return delta.name
        if base is None or topic_id in self.deleted_topic_ids:
            raise ReplayError(f"Unable to delete topic with id {topic_id}: no such topic found.")
        self.deleted_topic_ids.add(topic_id)
        return base.name

    def replay_clear_elr(self, data: Mapping[str, Any]) -> None:
        """ClearElrRecord (Kafka ≥ 4.0, ``topicName``).

        Follows Kafka's TopicsDelta: a named topic resolves to the id last declared with that
        name in this delta, else the base-image topic of that name (else the record is rejected);
        an empty name means every base-image topic plus every topic declared in this delta.
        Deleted base topics are skipped. Each resolved topic then gets :meth:`TopicDelta.clear_elr`
        (partition epoch +1 per partition whose ELR or lastKnownElr was non-empty).
        """
        name = data.get("topicName", "")
        if name:
            topic_id = self.created_topics.get(name)
            if topic_id is None:
                base = self.image.topics_by_name.get(name)
                if base is None:
                    raise ReplayError(f"Unable to clear elr for topic with name {name}: no such topic found.")
                topic_id = base.id
            self._clear_elr(topic_id)
        else:
            for topic_id in list(self.image.topics_by_id):
                self._clear_elr(topic_id)
            for topic_id in list(self.created_topics.values()):
                self._clear_elr(topic_id)

    def _clear_elr(self, topic_id: str) -> None:
        if topic_id in self.deleted_topic_ids:
            return
        delta = self.changed_topics.get(topic_id)
        if delta is None:
            base = self.image.topics_by_id.get(topic_id)
            if base is None:  # Kafka: a TopicDelta without a topic image, NullPointerException
                raise ReplayError(f"ClearElrRecord for topic {topic_id}, which was created and removed in this delta")
            delta = self.changed_topics[topic_id] = TopicDelta(base)
        delta.clear_elr()

    def finish_snapshot(self) -> None:
        """Delete every base topic the snapshot did not declare."""
        for topic_id in self.image.topics_by_id:
            if topic_id not in self.changed_topics:
                self.deleted_topic_ids.add(topic_id)

    def changed_topic(self, topic_id: str) -> TopicDelta | None:
        return self.changed_topics.get(topic_id)

    def topic_was_deleted(self, name: str) -> bool:
        """The base image has a topic named ``name`` and this delta deleted it (true even if a
        topic with the same name was created again in this delta)."""
        topic = self.image.topics_by_name.get(name)
        return topic is not None and topic.id in self.deleted_topic_ids

    def build(self, in_place: bool) -> TopicsImage:
        """Deletes first (id and base name), then every changed topic put by id and by name."""
        by_id = writable(self.image.topics_by_id, in_place)
        by_name = writable(self.image.topics_by_name, in_place)
        for topic_id in self.deleted_topic_ids:
            topic = self.image.topics_by_id[topic_id]
            by_id.discard(topic_id)
            by_name.discard(topic.name)
        for topic_id, delta in self.changed_topics.items():
            topic = delta.build(in_place)
            if by_id.get(topic_id) is not topic:
                by_id.set(topic_id, topic)
            if by_name.get(topic.name) is not topic:
                by_name.set(topic.name, topic)
        return TopicsImage(by_id, by_name)

    def apply(self) -> TopicsImage:
        return self.build(in_place=False).frozen()
