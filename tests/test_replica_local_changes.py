"""Kafka's TopicsDelta.localChanges rules, case by case, on the reference engine
(docs/local-changes.md, "TopicDelta.localChanges"). ``SCENARIOS`` is reused by the Spark differential tests."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from image.replay import delta_between
from image.uuids import MIGRATING
from replica.local_changes import TopicPartition, local_changes, local_changes_json
from tests.kafka_logs import KAFKA_FIXTURES
from tests.logbuilder import (
    LogBuilder,
    abort,
    begin,
    clear_elr,
    end,
    partition,
    partition_change,
    register_broker,
    remove_topic,
    topic,
)
from tests.logbuilder import uuid as make_uuid

T, U, T2 = make_uuid(0x7001), make_uuid(0x7002), make_uuid(0x7003)
D1, D2, D3, D4 = (make_uuid(0xD000 + i) for i in range(1, 5))

Window = tuple[LogBuilder, int, int]


def base() -> LogBuilder:
    """Brokers 1-5 registered; topic t: p0 [1,2,3] leader 1, p1 [2,3,1] leader 2 (MIGRATING dirs)."""
    log = LogBuilder()
    log.batch(*[register_broker(b, 10 + b, fenced=False) for b in range(1, 6)])
    log.batch(topic("t", T), partition(T, 0, [1, 2, 3]), partition(T, 1, [2, 3, 1]))
    return log


def window(log: LogBuilder, *batches: list[tuple[str, dict[str, Any]]]) -> Window:
    """(log, A, B) with one batch per element of ``batches`` after the current end A."""
    a = log.next_offset - 1
    for bodies in batches:
        log.batch(*bodies)
    return log, a, log.next_offset - 1


def isr_only() -> Window:
    return window(base(), [partition_change(T, 0, isr=[1, 2])])


def leader_moves() -> Window:
    return window(base(), [partition_change(T, 0, leader=2)])


def reassignment_removes_broker() -> Window:
    return window(base(), [partition_change(T, 0, replicas=[1, 2, 4], isr=[1, 2], leader=1)])


def topic_deleted() -> Window:
    return window(base(), [remove_topic(T)])


def new_topic() -> Window:
    return window(base(), [topic("u", U), partition(U, 0, [4, 5], directories=[D1, D2])])


def untouched_and_restored() -> Window:
    return window(base(), [partition_change(T, 1, leader=3)], [partition_change(T, 1, leader=2)])


def recreated_topic() -> Window:
    return window(base(), [remove_topic(T)], [topic("t", T2), partition(T2, 0, [3, 4, 5])])


def directories() -> Window:
    """u/0..u/4 led by 1 at A, real directories of brokers 1,2 (u/4 MIGRATING); then: u/0
    re-sends the same directories, u/1 changes ISR only, u/2 reorders replicas without
    directories, u/3 gains broker 3 (directories given), u/4 changes ISR only."""
    log = base()
    log.batch(
        topic("u", U), *[partition(U, p, [1, 2], directories=[D1, D2]) for p in range(4)], partition(U, 4, [1, 2])
    )
    return window(
        log,
        [
            partition_change(U, 0, directories=[D1, D2]),
            partition_change(U, 1, isr=[1]),
            partition_change(U, 2, replicas=[2, 1]),
            partition_change(U, 3, replicas=[1, 2, 3], directories=[D1, D2, D3]),
            partition_change(U, 4, isr=[1]),
        ],
    )


def migrating_to_real_and_back() -> Window:
    """p0 MIGRATING → real directories; p1 real (at A) → MIGRATING."""
    log = base()
    log.batch(partition_change(T, 1, directories=[D1, D2, D3]))
    return window(
        log, [partition_change(T, 0, directories=[D4, D2, D3]), partition_change(T, 1, directories=[MIGRATING] * 3)]
    )


def transactions() -> Window:
    """An aborted transaction and one still open at B are not part of the delta; one open at A
    and committed before B is."""
    log = base()
    log.batch(begin("open at A"), partition_change(T, 0, isr=[1, 3]))
    return window(
        log,
        [end()],
        [begin(), partition_change(T, 1, leader=1), abort()],
        [begin(), topic("u", U), partition(U, 0, [1, 2])],
    )


def leader_not_in_replicas() -> Window:
    return window(base(), [partition_change(T, 0, replicas=[2, 3], leader=1)])


def elr_cleared() -> Window:
    log = base()
    log.batch(partition_change(T, 0, elr=[3], isr=[1, 2]))
    return window(log, [clear_elr("t")])


SCENARIOS: dict[str, Callable[[], Window]] = {
    f.__name__: f
    for f in (
        isr_only,
        leader_moves,
        reassignment_removes_broker,
        topic_deleted,
        new_topic,
        untouched_and_restored,
        recreated_topic,
        directories,
        migrating_to_real_and_back,
        transactions,
        leader_not_in_replicas,
        elr_cleared,
    )
}


def changes(scenario: Callable[[], Window], broker: int) -> dict[str, Any]:
    log, a, b = scenario()
    return local_changes_json(log.records, a, b, broker)


def kinds(c: dict[str, Any]) -> dict[str, list[str]]:
    """Members as "topic-partition" lists (directories as "topic-partition=dir")."""

    def names(entries: list[dict[str, Any]]) -> list[str]:
        return [f"{e['topic']}-{e['partitionId']}" for e in entries]

    return {
        "deletes": names(c["deletes"]),
        "leaders": names(c["leaders"]),
        "followers": names(c["followers"]),
        "electedLeaders": names(c["electedLeaders"]),
        "directoryIds": [f"{e['topic']}-{e['partitionId']}={e['directory']}" for e in c["directoryIds"]],
    }


def expect(deletes=(), leaders=(), followers=(), elected=(), directories=()) -> dict[str, list[str]]:
    return {
        "deletes": list(deletes),
        "leaders": list(leaders),
        "followers": list(followers),
        "electedLeaders": list(elected),
        "directoryIds": list(directories),
    }


def test_isr_only_change_is_listed_because_the_partition_epoch_changed() -> None:
    assert kinds(changes(isr_only, 1)) == expect(leaders=["t-0"])
    assert kinds(changes(isr_only, 3)) == expect(followers=["t-0"])
    leader = changes(isr_only, 1)["leaders"][0]
    assert (leader["isr"], leader["leaderEpoch"], leader["partitionEpoch"]) == ([1, 2], 0, 1)


def test_leader_moving_to_the_broker_makes_it_leader_and_elected_leader() -> None:
    assert kinds(changes(leader_moves, 2)) == expect(leaders=["t-0"], elected=["t-0"])
    assert kinds(changes(leader_moves, 1)) == expect(followers=["t-0"])


def test_broker_removed_by_reassignment_gets_a_delete_and_the_added_one_no_directory() -> None:
    assert kinds(changes(reassignment_removes_broker, 3)) == expect(deletes=["t-0"])
    # broker 4 gains the partition: a follower, but prev.directory(4) throws → no directoryIds entry
    assert kinds(changes(reassignment_removes_broker, 4)) == expect(followers=["t-0"])
    # the forced leader-epoch bump elects broker 1 again
    assert kinds(changes(reassignment_removes_broker, 1)) == expect(leaders=["t-0"], elected=["t-0"])


def test_deleted_topic_deletes_every_partition_the_broker_hosted() -> None:
    assert kinds(changes(topic_deleted, 1)) == expect(deletes=["t-0", "t-1"])
    assert kinds(changes(topic_deleted, 4)) == expect()


def test_new_topic_reports_leaders_followers_and_directories() -> None:
    c = changes(new_topic, 4)
    assert kinds(c) == expect(leaders=["u-0"], elected=["u-0"], directories=[f"u-0={D1}"])
    assert c["topicIds"] == {"u": U}
    assert kinds(changes(new_topic, 5)) == expect(followers=["u-0"], directories=[f"u-0={D2}"])


def test_broker_outside_the_replicas_and_untouched_partitions_report_nothing() -> None:
    log, a, b = isr_only()
    assert local_changes_json(log.records, a, b, 5) == {
        "broker": 5,
        "fromOffset": a,
        "toOffset": b,
        "deletes": [],
        "leaders": [],
        "followers": [],
        "electedLeaders": [],
        "topicIds": {},
        "directoryIds": [],
    }
    assert kinds(changes(isr_only, 2)) == expect(followers=["t-0"])  # t-1 (led by 2) untouched


def test_touched_then_restored_in_the_same_window_still_counts_by_epoch() -> None:
    c = changes(untouched_and_restored, 2)
    assert kinds(c) == expect(leaders=["t-1"], elected=["t-1"])
    assert (c["leaders"][0]["leaderEpoch"], c["leaders"][0]["partitionEpoch"]) == (2, 2)
    assert kinds(changes(untouched_and_restored, 3)) == expect(followers=["t-1"])


def test_recreated_topic_is_deleted_and_created_under_the_same_name() -> None:
    c = changes(recreated_topic, 3)
    assert kinds(c) == expect(
        deletes=["t-0", "t-1"], leaders=["t-0"], elected=["t-0"], directories=[f"t-0={MIGRATING}"]
    )
    assert c["leaders"][0]["topicId"] == T2 and c["topicIds"] == {"t": T2}
    assert kinds(changes(recreated_topic, 1)) == expect(deletes=["t-0", "t-1"])


def test_directory_ids_compare_uuid_objects_like_kafka() -> None:
    assert kinds(changes(directories, 1)) == expect(
        leaders=["u-0", "u-1", "u-2", "u-3", "u-4"],
        # u-0: same values, new objects; u-1, u-4: same objects; u-2: the kept array is looked up
        # at broker 1's new index, so Kafka reports broker 2's directory for broker 1
        directories=[f"u-0={D1}", f"u-2={D2}", f"u-3={D1}"],
    )
    # broker 3 joins u-3: no entry (it was not a replica at A)
    assert kinds(changes(directories, 3)) == expect(followers=["u-3"])


def test_directory_ids_migrating_transitions() -> None:
    assert kinds(changes(migrating_to_real_and_back, 1)) == expect(
        leaders=["t-0"], followers=["t-1"], directories=[f"t-0={D4}", f"t-1={MIGRATING}"]
    )


def test_transactions_aborted_or_open_at_b_are_not_in_the_delta() -> None:
    c = changes(transactions, 3)
    assert kinds(c) == expect(followers=["t-0"])
    assert c["followers"][0]["isr"] == [1, 3]


def test_leader_outside_the_replicas_counts_as_not_a_replica() -> None:
    assert kinds(changes(leader_not_in_replicas, 1)) == expect(deletes=["t-0"])


def test_clear_elr_touches_partitions_without_naming_them() -> None:
    assert kinds(changes(elr_cleared, 1)) == expect(leaders=["t-0"])


def test_elected_leaders_subset_of_leaders_and_topic_ids_only_for_leaders_and_followers() -> None:
    for scenario in SCENARIOS.values():
        for broker in range(1, 6):
            c = changes(scenario, broker)
            assert all(e in c["leaders"] for e in c["electedLeaders"])
            assert set(c["topicIds"]) == {e["topic"] for e in c["leaders"] + c["followers"]}


def test_without_a_broker_every_broker_with_a_change() -> None:
    log, a, b = reassignment_removes_broker()
    everything = local_changes_json(log.records, a, b)
    assert [c["broker"] for c in everything["brokers"]] == [1, 2, 3, 4]
    assert everything["brokers"][2] == local_changes_json(log.records, a, b, 3)
    assert (everything["fromOffset"], everything["toOffset"]) == (a, b)


def test_local_changes_object_members() -> None:
    log, a, b = recreated_topic()
    _, delta, _ = delta_between(log.records, a, b)
    c = local_changes(delta.topics_delta, 3)
    assert c.deletes == {TopicPartition("t", 0), TopicPartition("t", 1)}
    assert c.leaders[TopicPartition("t", 0)].topic_id == T2
    assert c.elected_leaders.keys() == c.leaders.keys()


@pytest.mark.parametrize("a_b", [(0, 0), (100, 200)])
def test_empty_windows_have_no_changes(a_b: tuple[int, int]) -> None:
    log = base()
    assert kinds(local_changes_json(log.records, *a_b, 1)) == expect()


@pytest.mark.parametrize(
    "path",
    [*KAFKA_FIXTURES, Path(__file__).parents[1] / "data" / "sample"],
    ids=lambda p: f"{p.parent.name}/{p.name}",
)
def test_changes_from_the_temporal_image_equal_the_replay_from_the_log(path: Path) -> None:
    """The reference engine started from the temporal image at the window's last delta boundary reads only
    the window's records and reports what a replay from the log (and its best snapshot) reports; on a log cut
    by retention a window opening before its oldest snapshot's end loads that snapshot onto the image at its
    start, then reads the log after it (the images at both ends are the temporal image's:
    tests/test_snapshot_logs.py)."""
    from image.temporal.reads import MemorySource
    from metadata.log.readers import read_log, read_snapshots
    from replica.inputs import reference_changes_json

    log, snapshots = read_log(path), read_snapshots(path)
    source = MemorySource.replay(log, snapshots)
    last = log[-1].offset
    oldest = min(snapshots, key=lambda s: s.end_offset) if snapshots and log[0].offset > 0 else None
    windows = [(a, b) for a in range(-1, last + 1, max(1, last // 12)) for b in (a, min(last, a + 7), last)]
    for a, b in windows:
        base = max((s for s in snapshots if s.end_offset <= a + 1), key=lambda s: (s.end_offset, s.epoch), default=None)
        if oldest is not None and base is None and oldest.end_offset <= b + 1:
            skipped = [r for r in log if r.offset <= a or r.offset >= oldest.end_offset]
            expected = local_changes_json(skipped, a, b, opening=oldest)
        else:
            expected = local_changes_json(log, a, b, snapshot=base)
        assert reference_changes_json(source, a, b) == expected, (a, b)


def test_a_window_replays_from_the_partitions_of_the_topics_its_records_reach() -> None:
    """``changes`` reads the image at the window's start with only the partitions of the topics its records
    reach: a ClearElrRecord names its topic by name, so the name's topic id at A joins the scope (an empty
    name reaches every topic) — and the local changes are those of the whole image."""
    from image.temporal.reads import MemorySource
    from replica.inputs import topic_scope, window_replay

    log = LogBuilder()
    log.batch(topic("a", T), partition(T, 0, [1, 2], [1], leader=1, elr=[2], last_known_elr=[2]))
    log.batch(topic("b", T2), partition(T2, 0, [1, 2], [1, 2], leader=2))
    log.batch(clear_elr("a"))
    source = MemorySource.replay(log.records, [])
    a, b = log.records[-2].offset, log.records[-1].offset
    records, scoped, _ = window_replay(source, a, b, scoped=True)
    assert [p["topicId"] for p in scoped.to_json()["partitions"]] == [T]
    changes = local_changes_json(records, a, b, base=scoped)
    assert changes == local_changes_json(log.records, a, b)
    assert [c["broker"] for c in changes["brokers"]] == [1, 2]  # the ELR cleared: a new partition epoch
    log.batch(clear_elr(""))
    assert topic_scope(log.records[-1:], {}) is None
