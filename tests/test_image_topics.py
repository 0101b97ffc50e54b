"""Topics and partitions: TopicRecord, PartitionRecord, PartitionChangeRecord, RemoveTopicRecord,
ClearElrRecord, TopicsDelta bookkeeping and errors."""

from __future__ import annotations

import pytest

from image.configs import ConfigResource
from image.delta import MetadataDelta
from image.errors import ReplayError
from image.image import MetadataImage
from image.provenance import MetadataProvenance
from image.release import rules_for
from image.replay import delta_between, replay_to
from metadata.log.records import LogRecord
from tests.logbuilder import (
    Body,
    LogBuilder,
    clear_elr,
    config,
    partition,
    partition_change,
    remove_topic,
    topic,
)
from tests.logbuilder import uuid as make_uuid

A, B, C = make_uuid(0xA0), make_uuid(0xB0), make_uuid(0xC0)
PROV = MetadataProvenance(99, 1, 1, True)


def two_topics() -> LogBuilder:
    log = LogBuilder()
    log.batch(topic("a", A), partition(A, 0, [1, 2]), partition(A, 1, [2, 3]), config(2, "a", "retention.ms", "1"))
    log.batch(topic("b", B), partition(B, 0, [3, 1]))
    return log


def delta_on(image: MetadataImage, *bodies: tuple[str, dict[str, object]]) -> MetadataDelta:
    delta = MetadataDelta(image)
    log = LogBuilder(start_offset=image.offset + 1)
    for record in log.batch(*bodies):
        delta.replay(record)
    return delta


def test_topics_and_partitions_are_indexed_by_id_and_name() -> None:
    image = replay_to(two_topics().records)
    assert set(image.topics.topics_by_id) == {A, B}
    assert image.topics.get_topic_by_name("a") is image.topics.get_topic(A)
    assert sorted(image.topics.get_topic(A).partitions) == [0, 1]
    assert image.topics.get_partition(B, 0).replicas == (3, 1)
    assert image.topics.get_partition(B, 1) is None


def test_partition_change_through_the_log() -> None:
    log = two_topics()
    log.batch(partition_change(A, 0, leader=2), partition_change(A, 0, isr=[2]))
    p = replay_to(log.records).topics.get_partition(A, 0)
    assert (p.leader, p.isr, p.leader_epoch, p.partition_epoch) == (2, (2,), 1, 2)


def test_remove_topic_removes_partitions_and_topic_configs() -> None:
    log = two_topics()
    log.batch(config(2, "b", "cleanup.policy", "compact"))
    log.batch(remove_topic(A))
    image = replay_to(log.records)
    assert set(image.topics.topics_by_id) == {B}
    assert "a" not in image.topics.topics_by_name
    assert set(image.configs.resource_data) == {ConfigResource("TOPIC", "b")}


def test_remove_topic_in_the_same_delta_keeps_configs_created_in_that_delta() -> None:
    """Kafka quirk (docs/replay-rules.md, "RemoveTopicRecord"): only configs of the delta's base image are deleted."""
    log = LogBuilder()
    log.batch(topic("a", A), partition(A, 0, [1]), config(2, "a", "retention.ms", "1"), remove_topic(A))
    image = replay_to(log.records)
    assert image.topics.topics_by_id == {}
    assert image.configs.resource_data == {ConfigResource("TOPIC", "a"): {"retention.ms": "1"}}
    # In separate batches (separate deltas) the configs go away.
    log = LogBuilder()
    log.batch(topic("a", A), partition(A, 0, [1]), config(2, "a", "retention.ms", "1"))
    log.batch(remove_topic(A))
    assert replay_to(log.records).configs.resource_data == {}


def test_remove_topic_discards_pending_config_changes_of_base_configs() -> None:
    image = replay_to(two_topics().records)
    delta = delta_on(image, config(2, "a", "segment.ms", "5"), remove_topic(A), config(2, "a", "flush.ms", "1"))
    assert delta.apply(PROV).configs.resource_data == {ConfigResource("TOPIC", "a"): {"flush.ms": "1"}}


def test_created_and_deleted_in_one_delta_leaves_no_trace() -> None:
    image = replay_to(two_topics().records)
    delta = delta_on(image, topic("c", C), partition(C, 0, [1]), remove_topic(C))
    topics = delta.topics_delta
    assert topics is not None
    assert topics.deleted_topic_ids == set() and C not in topics.changed_topics
    assert delta.apply(PROV).topics == image.topics


def test_recreated_topic_name_in_one_delta() -> None:
    image = replay_to(two_topics().records)
    delta = delta_on(image, remove_topic(A), topic("a", C), partition(C, 0, [4]))
    topics = delta.topics_delta
    assert topics is not None
    assert topics.deleted_topic_ids == {A} and topics.created_topic_ids == {C}
    assert topics.topic_was_deleted("a") and not topics.topic_was_deleted("b")
    after = delta.apply(PROV)
    assert after.topics.get_topic_by_name("a").id == C
    assert set(after.topics.topics_by_id) == {B, C}
    assert after.topics.get_partition(C, 0).replicas == (4,)


def test_recreated_topic_name_across_batches() -> None:
    log = two_topics()
    log.batch(remove_topic(A))
    log.batch(topic("a", C), partition(C, 0, [4]))
    image = replay_to(log.records)
    assert image.topics.get_topic_by_name("a").id == C
    assert [t["topicId"] for t in image.to_json()["topics"]] == [C, B]


def test_topic_record_for_existing_id_replaces_the_topic_wholesale() -> None:
    image = replay_to(two_topics().records)
    delta = delta_on(image, topic("a", A), partition(A, 1, [9]))
    topic_delta = delta.topics_delta.changed_topic(A)
    assert topic_delta.image.partitions == {}  # fresh empty base topic
    assert topic_delta.new_partitions() == topic_delta.partition_changes
    after = delta.apply(PROV)
    assert sorted(after.topics.get_topic(A).partitions) == [1]
    assert A in delta.topics_delta.created_topic_ids


def test_topic_delta_base_is_the_base_image_topic() -> None:
    image = replay_to(two_topics().records)
    delta = delta_on(image, partition_change(A, 1, leader=3), partition(A, 2, [1]))
    topic_delta = delta.topics_delta.changed_topic(A)
    assert topic_delta.image is image.topics.get_topic(A)
    assert set(topic_delta.new_partitions()) == {2}
    assert delta.topics_delta.image is image.topics


def test_partitions_are_never_removed_individually() -> None:
    image = replay_to(two_topics().records)
    after = delta_on(image, partition(A, 0, [5])).apply(PROV)
    assert sorted(after.topics.get_topic(A).partitions) == [0, 1]


def test_unknown_partition_and_topic_errors() -> None:
    image = replay_to(two_topics().records)
    with pytest.raises(ReplayError) as error:
        delta_on(image, partition_change(A, 7, isr=[1]))
    assert (
        str(error.value)
        == f"offset 6: PARTITION_CHANGE_RECORD: unknown partition {A}:7 (Unable to find partition {A}:7)"
    )
    assert error.value.offset == 6
    with pytest.raises(ReplayError, match=f"PartitionChangeRecord for unknown topic {C}"):
        delta_on(image, partition_change(C, 0, isr=[1]))
    with pytest.raises(ReplayError, match=f"PartitionRecord for unknown topic {C}"):
        delta_on(image, partition(C, 0, [1]))
    with pytest.raises(ReplayError, match=f"Unable to delete topic with id {C}: no such topic found"):
        delta_on(image, remove_topic(C))


def test_records_for_a_topic_deleted_earlier_in_the_delta_are_errors() -> None:
    image = replay_to(two_topics().records)
    for body in (partition_change(A, 0, isr=[1]), partition(A, 5, [1]), remove_topic(A)):
        with pytest.raises(ReplayError, match=r"deleted topic|no such topic"):
            delta_on(image, remove_topic(A), body)


def test_unknown_partition_leaves_the_topic_delta_like_kafka() -> None:
    image = replay_to(two_topics().records)
    delta = MetadataDelta(image)
    (record,) = LogBuilder(start_offset=3).batch(partition_change(B, 4, isr=[1]))
    with pytest.raises(ReplayError):
        delta.replay(record)
    assert delta.topics_delta.changed_topic(B).partition_changes == {}
    assert delta.apply(PROV).topics == image.topics


def test_name_collision_is_reported_after_applying() -> None:
    image = replay_to(two_topics().records)
    delta = MetadataDelta(image)
    (record,) = LogBuilder(start_offset=3).batch(topic("a", C))
    with pytest.raises(ReplayError, match=f"topic name 'a' of topic {C} is already used by topic {A}"):
        delta.replay(record)
    assert C in delta.topics_delta.changed_topics  # Kafka's effect is kept (lenient mode)
    log = LogBuilder()
    log.batch(topic("x", A))
    log.batch(topic("x", B))
    with pytest.raises(ReplayError, match="already used"):
        replay_to(log.records)
    assert set(replay_to(log.records, lenient=True).topics.topics_by_id) == {A, B}


def test_clear_elr_for_one_topic_bumps_partition_epochs() -> None:
    log = LogBuilder()
    log.batch(
        topic("a", A),
        partition(A, 0, [1, 2, 3], [1], elr=[2], last_known_elr=[]),
        partition(A, 1, [1, 2], [1], elr=[], last_known_elr=[2]),
        partition(A, 2, [1, 2], [1]),
        topic("b", B),
        partition(B, 0, [1, 2], [1], elr=[2]),
    )
    log.batch(clear_elr("a"))
    image = replay_to(log.records)
    a0, a1, a2 = (image.topics.get_partition(A, i) for i in range(3))
    assert (a0.elr, a0.last_known_elr, a0.partition_epoch, a0.leader_epoch) == ((), (), 1, 0)
    assert (a1.elr, a1.last_known_elr, a1.partition_epoch) == ((), (), 1)
    assert a2.partition_epoch == 0  # nothing to clear: untouched
    assert image.topics.get_partition(B, 0).elr == (2,)


def test_clear_elr_for_all_topics_includes_topics_created_in_the_delta() -> None:
    log = LogBuilder()
    log.batch(topic("a", A), partition(A, 0, [1, 2], [1], elr=[2]))
    log.batch(topic("b", B), partition(B, 0, [1, 2], [1], elr=[2]), partition_change(A, 0, isr=[1]), clear_elr())
    image = replay_to(log.records)
    assert image.topics.get_partition(A, 0).elr == () and image.topics.get_partition(A, 0).partition_epoch == 2
    assert image.topics.get_partition(B, 0).elr == () and image.topics.get_partition(B, 0).partition_epoch == 1


def test_clear_elr_skips_deleted_topics_and_rejects_unknown_names() -> None:
    log = LogBuilder()
    log.batch(topic("a", A), partition(A, 0, [1, 2], [1], elr=[2]))
    log.batch(remove_topic(A), clear_elr())
    assert replay_to(log.records).topics.topics_by_id == {}
    log.batch(clear_elr("a"))
    with pytest.raises(ReplayError, match="Unable to clear elr for topic with name a: no such topic found"):
        replay_to(log.records)


def test_clear_elr_resolves_names_like_kafka() -> None:
    """Kafka's TopicsDelta: a name resolves to the id declared in this delta, else to the base topic of that name
    even when this delta deleted it (then nothing happens). A topic declared and removed in the same delta: up to
    Kafka 4.1 it is still a created topic, with no image to clear (Kafka: NullPointerException); 4.2 forgets it
    (KAFKA-19497), so a ClearElr by its name finds no topic and one of every topic skips it."""
    log = LogBuilder()
    log.batch(topic("a", A), partition(A, 0, [1, 2], [1], elr=[2]))
    log.batch(remove_topic(A), clear_elr("a"))
    assert replay_to(log.records).topics.topics_by_id == {}

    def created_and_removed(clear: Body) -> list[LogRecord]:
        log = LogBuilder()
        log.batch(topic("b", B), partition(B, 0, [1, 2], [1], elr=[2]), remove_topic(B), clear)
        return log.records

    for clear in (clear_elr("b"), clear_elr()):
        with pytest.raises(
            ReplayError,
            match=f"offset 3: CLEAR_ELR_RECORD: ClearElrRecord for topic {B}, which "
            "was created and removed in this delta",
        ):
            replay_to(created_and_removed(clear), rules=rules_for("4.1"))
    with pytest.raises(ReplayError, match="offset 3: CLEAR_ELR_RECORD: Unable to clear elr for topic with name b"):
        replay_to(created_and_removed(clear_elr("b")), rules=rules_for("4.2"))
    assert replay_to(created_and_removed(clear_elr())).topics.topics_by_id == {}


def test_clear_elr_named_topic_prefers_the_recreated_id() -> None:
    log = LogBuilder()
    log.batch(topic("a", A), partition(A, 0, [1, 2], [1], elr=[2]))
    log.batch(remove_topic(A), topic("a", C), partition(C, 0, [1, 2], [1], elr=[1]), clear_elr("a"))
    image = replay_to(log.records)
    assert set(image.topics.topics_by_id) == {C}
    assert image.topics.get_partition(C, 0).elr == ()


def test_delta_between_exposes_local_changes_inputs() -> None:
    log = two_topics()
    log.batch(remove_topic(A))
    log.batch(topic("a", C), partition(C, 0, [1, 2]))
    log.batch(partition_change(B, 0, leader=1))
    start, delta, end = delta_between(log.records, 4, log.next_offset - 1)
    topics = delta.topics_delta
    assert delta.image is start and topics.image is start.topics
    assert topics.deleted_topic_ids == {A} and set(topics.changed_topics) == {C, B}
    assert topics.changed_topic(B).image is start.topics.get_topic(B)
    assert end == replay_to(log.records)


def test_redeclaring_a_topic_id_under_another_name_keeps_the_old_name_entry() -> None:
    """Kafka's TopicsDelta.apply never removes the base name of a re-declared id."""
    log = LogBuilder()
    log.batch(topic("a", A), partition(A, 0, [1]))
    log.batch(topic("b", A))
    image = replay_to(log.records)
    assert image.topics.get_topic(A).name == "b" and image.topics.get_topic(A).partitions == {}
    assert image.topics.topics_by_name["a"].name == "a"  # stale entry, as in Kafka
    assert image.to_json()["topics"] == [{"name": "b", "topicId": A}]
