"""Batch loader: provenance, metadata transactions, snapshots, lenient mode, replay entry points."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from image.configs import ConfigResource
from image.errors import ReplayError
from image.image import MetadataImage
from image.loader import MetadataLoader, load_snapshot, snapshot_to_start_from, snapshots_to_load
from image.provenance import MetadataProvenance
from image.release import rules_for
from image.replay import SnapshotSource, delta_between, replay_to
from metadata.log.records import LogRecord, Snapshot
from tests.logbuilder import (
    LogBuilder,
    abort,
    acl,
    begin,
    client_quota,
    config,
    end,
    feature_level,
    no_op,
    partition,
    partition_change,
    producer_ids,
    register_broker,
    remove_topic,
    scram,
    token,
    topic,
    uuid,
    zk_migration_state,
)

A, B, C = uuid(0xA0), uuid(0xB0), uuid(0xC0)


def names(image: MetadataImage) -> set[str]:
    return set(image.topics.topics_by_name)


def test_empty_image() -> None:
    image = replay_to([])
    assert image == MetadataImage.EMPTY
    assert image.provenance == MetadataProvenance(-1, -1, -1, False)


def test_provenance_advances_over_control_records_and_noops() -> None:
    log = LogBuilder()
    log.control("LEADER_CHANGE", {"version": 0, "leaderId": 1, "voters": [], "grantingVoters": []})
    log.batch(topic("a", A), partition(A, 0, [1]))
    content = replay_to(log.records)
    log.control("LEADER_CHANGE", epoch=2)
    log.batch(no_op(), no_op(), timestamp=5000)
    image = replay_to(log.records)
    assert image.provenance == MetadataProvenance(5, 2, 5000, True)
    assert image.topics == content.topics
    log.control("KRAFT_VOTERS", epoch=3)
    assert replay_to(log.records).provenance == MetadataProvenance(6, 3, 5001, True)


def test_image_inside_a_batch() -> None:
    log = LogBuilder()
    log.batch(topic("a", A), topic("b", B), topic("c", C), timestamp=2000)
    image = replay_to(log.records, 1)
    assert names(image) == {"a", "b"}
    assert image.provenance == MetadataProvenance(1, 1, 2000, False)
    assert replay_to(log.records, 2).provenance == MetadataProvenance(2, 1, 2000, True)


def test_records_beyond_the_offset_are_not_consumed() -> None:
    log = LogBuilder()
    log.batch(topic("a", A))
    log.batch(topic("b", B))

    def records() -> Iterator[LogRecord]:
        yield log.records[0]
        raise AssertionError("read past the requested offset")

    assert names(replay_to(records(), 0)) == {"a"}


def test_open_transaction_is_invisible() -> None:
    log = LogBuilder()
    log.batch(topic("a", A), timestamp=100)
    log.batch(begin("t"), topic("b", B), timestamp=200)
    log.batch(partition(B, 0, [1]), timestamp=300)
    for offset in (1, 2, 3):
        image = replay_to(log.records, offset)
        assert names(image) == {"a"}
        assert image.provenance == MetadataProvenance(0, 1, 100, True)  # Begin first in its batch
    assert names(replay_to(log.records)) == {"a"}  # still open at the end of the log


def test_begin_inside_a_batch_publishes_the_records_before_it() -> None:
    log = LogBuilder()
    log.batch(topic("a", A), timestamp=100)
    log.batch(topic("b", B), begin(), topic("c", C), timestamp=200, epoch=4)
    image = replay_to(log.records)
    assert names(image) == {"a", "b"}
    assert image.provenance == MetadataProvenance(1, 4, 200, False)


def test_committed_transaction_is_visible_at_its_end() -> None:
    log = LogBuilder()
    log.batch(begin("Bootstrap records"), feature_level("metadata.version", 22), timestamp=100)
    log.batch(topic("a", A), partition(A, 0, [1]), timestamp=200)
    log.batch(end(), topic("b", B), timestamp=300)
    assert replay_to(log.records, 3).features.metadata_version_level is None  # Kafka 4.0+'s empty image
    assert replay_to(log.records, 3, rules=rules_for("3.9")).features.metadata_version_level == 1
    at_end = replay_to(log.records, 4)
    assert (at_end.features.metadata_version_level, names(at_end)) == (22, {"a"})
    assert at_end.provenance == MetadataProvenance(4, 1, 300, False)
    assert names(replay_to(log.records)) == {"a", "b"}


def test_aborted_transaction_never_applies() -> None:
    log = LogBuilder()
    log.batch(topic("a", A))
    log.batch(begin(), topic("b", B))
    log.batch(partition(B, 0, [1]), abort("Controller failover"), topic("c", C), timestamp=700)
    at_abort = replay_to(log.records, 4)
    assert names(at_abort) == {"a"} and at_abort.provenance == MetadataProvenance(4, 1, 700, False)
    image = replay_to(log.records)
    assert names(image) == {"a", "c"}  # records after the Abort in the same batch do apply
    assert image.provenance == MetadataProvenance(5, 1, 700, True)


def test_abort_then_new_transaction_in_one_batch() -> None:
    log = LogBuilder()
    log.batch(begin(), topic("a", A))
    log.batch(abort(), begin("Bootstrap records"), topic("b", B), end())
    assert names(replay_to(log.records)) == {"b"}


def test_transaction_misuse_errors() -> None:
    for bodies, message in (
        ([begin(), begin()], "Encountered BeginTransactionRecord while already in a transaction"),
        ([end()], "Encountered EndTransactionRecord without having seen a BeginTransactionRecord"),
        ([abort()], "Encountered AbortTransactionRecord without having seen a BeginTransactionRecord"),
    ):
        log = LogBuilder()
        log.batch(topic("a", A), *bodies)
        with pytest.raises(ReplayError, match=message):
            replay_to(log.records)


def test_transaction_misuse_in_lenient_mode_keeps_the_state() -> None:
    log = LogBuilder()
    log.batch(end(), topic("a", A))
    log.batch(begin(), topic("b", B), begin(), topic("c", C), end())
    image = replay_to(log.records, lenient=True)
    assert names(image) == {"a", "b", "c"}
    assert [e.offset for e in image.errors] == [0, 4]
    assert str(image.errors[0]) == (
        "offset 0: END_TRANSACTION_RECORD: "
        "Encountered EndTransactionRecord without having seen a BeginTransactionRecord"
    )


def test_lenient_mode_skips_inconsistent_records() -> None:
    log = LogBuilder()
    log.batch(topic("a", A), partition(A, 0, [1, 2]))
    log.batch(partition_change(A, 5, isr=[1]), partition_change(B, 0, isr=[1]), partition_change(A, 0, leader=2))
    with pytest.raises(ReplayError, match="offset 2: PARTITION_CHANGE_RECORD: unknown partition"):
        replay_to(log.records)
    image = replay_to(log.records, lenient=True)
    assert image.topics.get_partition(A, 0).leader == 2
    assert [(e.offset, e.record_type) for e in image.errors] == [
        (2, "PARTITION_CHANGE_RECORD"),
        (3, "PARTITION_CHANGE_RECORD"),
    ]
    assert image.errors[1].to_json()["message"] == f"PartitionChangeRecord for unknown topic {B}"
    assert image == replay_to(log.records[:2] + log.records[4:])  # errors are not part of the value


def test_continuing_from_a_base_image() -> None:
    log = LogBuilder()
    log.batch(topic("a", A), partition(A, 0, [1]))
    log.batch(topic("b", B), begin())
    log.batch(topic("c", C), end())
    log.batch(partition_change(A, 0, leader=-1))
    full = replay_to(log.records)
    for offset in range(-1, log.next_offset):
        start = replay_to(log.records, offset)
        assert replay_to(log.records, base=start) == full
        assert replay_to(log.records, base=start).provenance == full.provenance


def test_published_images_do_not_change_when_replay_continues() -> None:
    log = LogBuilder()
    log.batch(topic("a", A), partition(A, 0, [1, 2]), config(2, "a", "k", "v"))
    log.batch(partition_change(A, 0, leader=2), config(2, "a", "k", "w"), register_broker(1, 1))
    log.batch(remove_topic(A), acl(uuid(1)), scram("u"), token("t"), client_quota({"user": "u"}, "k", 1))
    loader = MetadataLoader()
    seen: list[tuple[MetadataImage, dict[str, object]]] = []
    for record in log.records:
        loader.replay(record)
        image = loader.image()
        seen.append((image, image.to_json()))
    for image, json in seen:
        assert image.to_json() == json


def snapshot_log() -> LogBuilder:
    snap = LogBuilder()
    snap.control("SNAPSHOT_HEADER", {"version": 0, "lastContainedLogTimestamp": 4242})
    snap.batch(
        feature_level("group.version", 1),
        register_broker(2, 20),
        topic("b", B),
        partition(B, 0, [2]),
        config(2, "b", "retention.ms", "5"),
        client_quota({"user": "u"}, "producer_byte_rate", 9),
        acl(uuid(2)),
    )
    snap.control("SNAPSHOT_FOOTER", {"version": 0})
    return snap


def rich_base() -> MetadataImage:
    """An image of every part under Kafka 3.9's rules (which keep the ZooKeeper migration state and every
    config resource type)."""
    log = LogBuilder()
    log.batch(
        feature_level("metadata.version", 21),
        feature_level("transaction.version", 2),
        zk_migration_state(3),
        register_broker(1, 10),
        register_broker(2, 20),
        topic("a", A),
        partition(A, 0, [1]),
        topic("b", B),
        partition(B, 0, [1]),
        partition(B, 1, [1]),
        config(2, "a", "x", "1"),
        config(2, "b", "retention.ms", "1"),
        config(2, "b", "segment.ms", "2"),
        client_quota({"user": "u"}, "consumer_byte_rate", 1),
        acl(uuid(1)),
        scram("alice"),
        token("t"),
        producer_ids(7000),
    )
    return replay_to(log.records, rules=rules_for("3.9"))


def test_snapshot_onto_the_empty_image_equals_plain_replay() -> None:
    snap = snapshot_log()
    image = load_snapshot(MetadataImage.EMPTY, snap.records, 100, 3)
    plain = replay_to([r for r in snap.records if not r.is_control])
    assert image.to_json() == {**plain.to_json(), "offset": 99, "epoch": 3, "timestamp": 4242}
    assert image.provenance == MetadataProvenance(99, 3, 4242, True)


def test_snapshot_onto_a_non_empty_image_deletes_what_it_omits() -> None:
    base = rich_base()
    loader = MetadataLoader(base, rules=rules_for("3.9"))
    delta = loader.load_snapshot(snapshot_log().records, 200, 5)
    image = loader.image()
    assert image.provenance == MetadataProvenance(199, 5, 4242, True)
    assert image.features.finalized_versions == {"group.version": 1}
    assert (image.features.metadata_version_level, image.features.zk_migration_state) == (21, 3)  # not reset
    assert set(image.cluster.brokers) == {2}
    assert set(image.topics.topics_by_id) == {B} and sorted(image.topics.get_topic(B).partitions) == [0]
    assert image.configs.resource_data == {ConfigResource("TOPIC", "b"): {"retention.ms": "5"}}
    assert image.client_quotas.entities == {(("user", "u"),): {"producer_byte_rate": 9.0}}
    assert set(image.acls.acls) == {uuid(2)}
    assert image.scram.mechanisms == {} and image.delegation_tokens.tokens == {}
    assert image.producer_ids.next_producer_id == 7000  # not reset
    topics = delta.topics_delta
    assert delta.image is base and topics.deleted_topic_ids == {A}
    assert topics.changed_topic(B).image.partitions == {}  # re-declared: every partition looks new


def test_snapshot_rejects_transaction_records_and_needs_a_timestamp() -> None:
    snap = snapshot_log()
    snap.batch(begin())
    with pytest.raises(ReplayError, match=r"snapshot 00000000000000000100-0000000003 offset 9: .*Unknown metadata"):
        load_snapshot(MetadataImage.EMPTY, snap.records, 100, 3)
    lenient = load_snapshot(MetadataImage.EMPTY, snap.records, 100, 3, lenient=True)
    assert len(lenient.errors) == 1 and lenient.provenance.last_contained_offset == 99
    data = [r for r in snapshot_log().records if not r.is_control]
    with pytest.raises(ValueError, match="SNAPSHOT_HEADER"):
        load_snapshot(MetadataImage.EMPTY, data, 100, 3)
    assert load_snapshot(MetadataImage.EMPTY, data, 100, 3, 77).provenance.last_contained_log_time_ms == 77


def test_snapshot_to_start_from() -> None:
    snapshots = [Snapshot([], end, epoch) for end, epoch in [(100, 1), (250, 2), (250, 1), (400, 3)]]

    def choose_snapshot(offset: int) -> tuple[int, int] | None:
        chosen = snapshot_to_start_from(snapshots, offset)
        return None if chosen is None else (chosen.end_offset, chosen.epoch)

    assert choose_snapshot(98) is None
    assert choose_snapshot(99) == (100, 1)
    assert choose_snapshot(398) == (250, 2)
    assert choose_snapshot(399) == (400, 3)
    assert [(s.end_offset, s.epoch) for s in snapshots_to_load(snapshots)] == [(100, 1), (250, 2), (400, 3)]
    assert [(s.end_offset, s.epoch) for s in snapshots_to_load(snapshots, 250)] == [(400, 3)]


def test_replay_to_with_a_snapshot_and_the_log_after_it() -> None:
    snap = snapshot_log()
    log = LogBuilder()
    log.batch(topic("a", A))  # offset 0: covered by the snapshot, skipped
    log.batch(topic("c", C))  # offset 1 = snapshot end offset
    log.batch(partition(C, 0, [2]))
    image = replay_to(log.records, 2, snapshot=(snap.records, 1, 3))
    assert names(image) == {"b", "c"} and image.provenance.last_contained_offset == 2
    only_snapshot = replay_to(log.records, 0, snapshot=SnapshotSource(snap.records, 1, 3))
    assert names(only_snapshot) == {"b"} and only_snapshot.provenance == MetadataProvenance(0, 3, 4242, True)
    with pytest.raises(ValueError, match="beyond offset"):
        replay_to(log.records, 0, snapshot=(snap.records, 2, 3))


def test_delta_between_respects_transactions() -> None:
    log = LogBuilder()
    log.batch(topic("a", A))  # 0
    log.batch(topic("b", B), begin())  # 1, 2
    log.batch(partition(B, 0, [1]))  # 3
    log.batch(end(), begin(), topic("c", C))  # 4, 5, 6
    log.batch(abort(), config(4, "", "k", "v"))  # 7, 8
    log.batch(begin(), remove_topic(A))  # 9, 10
    start, delta, end_image = delta_between(log.records, 3, 10)
    assert names(start) == {"a", "b"} and start.provenance.last_contained_offset == 1
    changed = delta.topics_delta
    assert delta.image is start
    assert set(changed.changed_topics) == {B} and changed.deleted_topic_ids == set()  # not C, not the open removal
    assert end_image == replay_to(log.records, 10)
    assert end_image.provenance == MetadataProvenance(8, 1, log.records[8].timestamp, True)  # Begin first in its batch
    assert end_image.configs.resource_data == {ConfigResource("BROKER", ""): {"k": "v"}}
    assert delta_between(log.records, 10, 10)[1].is_empty


def test_delta_between_is_one_delta_like_a_kafka_chunk() -> None:
    log = LogBuilder()
    log.batch(topic("a", A), config(2, "a", "retention.ms", "v"))
    log.batch(remove_topic(A))
    _, delta, image = delta_between(log.records, -1, 2)
    assert delta.topics_delta.deleted_topic_ids == set()
    assert image.configs.resource_data == {
        ConfigResource("TOPIC", "a"): {"retention.ms": "v"}
    }  # RemoveTopicRecord quirk
    assert replay_to(log.records).configs.resource_data == {}  # per-batch replay
