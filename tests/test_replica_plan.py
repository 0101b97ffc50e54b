"""The apply plan and the ZooKeeper-era requests in process (replica.plan, replica.zk) on hand-made
deltas: each phase's actions step by step, controlled shutdown, stale partition epochs, missing
listeners, coordinator hooks, the abort on a topic-id mismatch, the request documents. The same
scenarios run on Spark in tests/test_replica_spark.py (Spark rows = these rows)."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from cli.render import plan_lines
from image.delta import MetadataDelta
from image.image import MetadataImage
from image.replay import delta_between
from replica.plan import ACTION_FIELDS, apply_plan_rows
from replica.zk import NONE, leader_and_isr_doc, replay_requests
from tests.logbuilder import (
    LogBuilder,
    broker_change,
    feature_level,
    partition,
    partition_change,
    register_broker,
    remove_topic,
    topic,
)
from tests.logbuilder import uuid as make_uuid

FOO, BAR, CO, BAZ = make_uuid(0xF0), make_uuid(0xB0), make_uuid(0xC0), make_uuid(0x20)
TX, SH, CO2 = make_uuid(0x7C), make_uuid(0x5C), make_uuid(0xC2)
D1, D4 = make_uuid(0xD1), make_uuid(0xD4)

Delta = tuple[MetadataImage, MetadataDelta, MetadataImage]


def apply_scenario(metadata_version: int = 21) -> tuple[LogBuilder, int, int]:
    """Broker 1's view: foo-0 ISR shrink (stays leader), foo-1 leadership moves to 1, foo-2 moves
    to 2 (1 follows), foo-3 reassigned away from 1, bar deleted (1 led it), baz created with leader
    4 (not registered), __consumer_offsets-0 moves to 2 and -1 to 1."""
    log = LogBuilder()
    log.batch(
        feature_level("metadata.version", metadata_version),
        *[register_broker(b, 10 + b, fenced=False) for b in (1, 2, 3)],
    )
    log.batch(
        topic("foo", FOO),
        partition(FOO, 0, [1, 2, 3]),
        partition(FOO, 1, [2, 1, 3]),
        partition(FOO, 2, [3, 1, 2]),
        partition(FOO, 3, [1, 2]),
    )
    log.batch(topic("bar", BAR), partition(BAR, 0, [1, 2]))
    log.batch(topic("__consumer_offsets", CO), partition(CO, 0, [1, 2]), partition(CO, 1, [2, 1]))
    a = log.next_offset - 1
    log.batch(
        partition_change(FOO, 0, isr=[1, 2]),
        partition_change(FOO, 1, leader=1),
        partition_change(FOO, 2, leader=2),
        partition_change(FOO, 3, replicas=[2, 4], isr=[2], leader=2),
    )
    log.batch(remove_topic(BAR))
    log.batch(topic("baz", BAZ), partition(BAZ, 0, [4, 1], directories=[D4, D1]))
    log.batch(partition_change(CO, 0, leader=2), partition_change(CO, 1, leader=1))
    return log, a, log.next_offset - 1


def coordinator_scenario() -> tuple[LogBuilder, int, int]:
    """After the apply scenario and the creation of __transaction_state: __share_group_state is
    created, leaders move, broker 3 enters controlled shutdown, leaves the ISR of
    __share_group_state-0 and is reassigned away from __transaction_state-1, __consumer_offsets (1
    led partition 1, 2 led partition 0) is deleted and re-created under a new id."""
    log, _, _ = apply_scenario()
    log.batch(topic("__transaction_state", TX), partition(TX, 0, [1, 2]), partition(TX, 1, [2, 3]))
    a = log.next_offset - 1
    log.batch(topic("__share_group_state", SH), partition(SH, 0, [3, 1]))
    log.batch(partition_change(TX, 0, leader=2), partition_change(SH, 0, leader=1, isr=[1]))
    log.batch(broker_change(3, 13, in_controlled_shutdown=1), partition_change(TX, 1, replicas=[2, 1], isr=[2, 1]))
    log.batch(remove_topic(CO))
    log.batch(topic("__consumer_offsets", CO2), partition(CO2, 0, [2, 1]), partition(CO2, 1, [1, 3]))
    return log, a, log.next_offset - 1


def shutdown_scenario() -> tuple[LogBuilder, int, int]:
    """Broker 1 follows s-0..s-2 (leader 2): s-0 loses its leader, s-1's ISR drops 1, s-2 is
    re-registered with an older partition epoch (stale)."""
    s = make_uuid(0x50)
    log = LogBuilder()
    log.batch(*[register_broker(b, 10 + b, fenced=False) for b in (1, 2)])
    log.batch(
        topic("s", s),
        partition(s, 0, [1, 2], leader=2),
        partition(s, 1, [1, 2], leader=2),
        partition(s, 2, [1, 2], leader=2, partition_epoch=5),
    )
    a = log.next_offset - 1
    log.batch(
        partition_change(s, 0, leader=-1, isr=[2]),
        partition_change(s, 1, isr=[2]),
        partition(s, 2, [1, 2], leader=2, leader_epoch=9, partition_epoch=3),
    )
    return log, a, log.next_offset - 1


T, T2 = make_uuid(0x71), make_uuid(0x72)


def mismatch_scenario() -> tuple[LogBuilder, int, int]:
    """t-0 is hosted under id T and not deleted, but the delta declares t again with id T2 (a name
    collision, kept by a lenient replay): Kafka throws IllegalStateException out of applyDelta."""
    u, x = make_uuid(0x73), make_uuid(0x74)
    log = LogBuilder()
    log.batch(*[register_broker(b, 10 + b, fenced=False) for b in (1, 2)])
    log.batch(
        topic("a", x),
        partition(x, 0, [1, 2]),
        topic("t", T),
        partition(T, 0, [1, 2]),
        topic("u", u),
        partition(u, 0, [1, 2]),
    )
    a = log.next_offset - 1
    log.batch(
        partition_change(x, 0, isr=[1]), topic("t", T2), partition(T2, 0, [2, 1]), partition_change(u, 0, leader=2)
    )
    return log, a, log.next_offset - 1


SCENARIOS = {
    "apply": (apply_scenario, False),
    "coordinators": (coordinator_scenario, False),
    "shutdown": (shutdown_scenario, False),
    "mismatch": (mismatch_scenario, True),
}
"""name → (log and window, lenient)."""


def scenario_delta(name: str) -> Delta:
    make, lenient = SCENARIOS[name]
    log, a, b = make()
    return delta_between(log.records, a, b, lenient=lenient)


def summary(row: dict[str, Any]) -> tuple:
    """(step, action, topic-partition, the fields that matter for that action)."""
    detail: Any = None
    if row["action"] == "delete-log":
        detail = row["deleteRemoteLog"]
    elif row["action"] in ("make-leader", "make-follower"):
        detail = (row["isNew"], row["newLeaderEpoch"], row["createLog"], row["leaderEpoch"])
    elif row["action"] == "add-fetcher":
        detail = (row["fetcherLeaderId"], row["fetcherLeaderHost"], row["fetcherLeaderPort"], row["fetcherId"])
    elif row["action"] == "check-directory":
        detail = row["directory"]
    elif row["action"] in ("elect", "resign"):
        detail = (row["coordinator"], row["coordinatorEpoch"])
    return row["step"], row["action"], f"{row['topic']}-{row['partition']}", detail


def broker_rows(rows: list[dict[str, Any]], broker: int) -> list[dict[str, Any]]:
    return [r for r in rows if r["broker"] == broker]


def test_apply_plan_of_broker_1_step_by_step() -> None:
    rows = broker_rows(apply_plan_rows(*scenario_delta("apply"), num_replica_fetchers=2), 1)
    assert [summary(r) for r in rows] == [
        (1, "remove-fetcher", "bar-0", None),
        (2, "remove-fetcher", "foo-3", None),
        (3, "remove-partition", "bar-0", None),
        (4, "remove-partition", "foo-3", None),
        (5, "delete-log", "bar-0", True),  # topic deleted and broker 1 led bar-0: remote log too
        (6, "delete-log", "foo-3", False),
        (7, "remove-fetcher", "__consumer_offsets-1", None),
        (8, "remove-fetcher", "foo-0", None),
        (9, "remove-fetcher", "foo-1", None),
        (10, "make-leader", "__consumer_offsets-1", (False, True, False, 1)),
        (11, "make-leader", "foo-0", (False, False, False, 0)),  # ISR only: leader epoch kept
        (12, "make-leader", "foo-1", (False, True, False, 1)),
        (13, "make-follower", "__consumer_offsets-0", (False, True, False, 1)),
        (14, "make-follower", "baz-0", (True, True, True, 0)),  # new: isNew, creates the log
        (15, "make-follower", "foo-2", (False, True, False, 1)),
        (16, "remove-fetcher", "__consumer_offsets-0", None),
        (17, "remove-fetcher", "baz-0", None),
        (18, "remove-fetcher", "foo-2", None),
        (19, "no-fetcher", "baz-0", None),  # leader 4 is not registered
        # grouped by (leader, fetcher id): foo-2 → fetcher 0 of broker 2, __consumer_offsets-0 → 1
        (20, "add-fetcher", "foo-2", (2, "b2", 9092, 0)),
        (21, "add-fetcher", "__consumer_offsets-0", (2, "b2", 9092, 1)),
        (22, "check-directory", "baz-0", D1),  # metadata.version 3.9-IV0 ≥ 3.7-IV2
        (23, "elect", "__consumer_offsets-1", ("group", 1)),
        (24, "resign", "__consumer_offsets-0", ("group", 1)),
        (25, "partitions-deleted", "bar-0", None),
    ]
    assert rows[2]["reason"] == f"stopPartitions: drop hosted partition bar-0 (topic id {BAR}) and close it"
    assert rows[9]["reason"] == (
        "becomes the leader; starts leader epoch 1 at the log end offset; partition epoch 1, ISR 2,1"
    )
    assert rows[10]["reason"] == "already the leader; keeps leader epoch 0; partition epoch 1, ISR 1,2"
    assert rows[13]["reason"] == "follows leader 4 at new leader epoch 0; partition epoch 0; creates the log"
    assert rows[19]["reason"] == "fetch from broker 2 (b2:9092) in ReplicaFetcherThread-0-2 at leader epoch 1"
    assert rows[22]["reason"] == "group coordinator: onElection(1, 1)"
    assert rows[4]["reason"] == ("delete the local log (async batch) and the remote log: topic deleted, led here")
    assert (rows[4]["leader"], rows[4]["replicas"], rows[4]["topicId"]) == (1, [1, 2], BAR)  # the partition at A
    assert list(rows[0]) == [name for name, _ in ACTION_FIELDS]
    text = plan_lines(rows, None)
    assert text[0] == "Deleting 2 partition(s)." and "Transitioning 3 partition(s) to local leaders." in text
    assert any("ReplicaFetcherThread-1-2" in line for line in text)


def test_apply_plan_every_broker_at_once() -> None:
    rows = apply_plan_rows(*scenario_delta("apply"), num_replica_fetchers=2)
    counts = Counter((r["broker"], r["action"]) for r in rows)
    assert counts[(2, "make-leader")] == 3  # foo-2, foo-3 (reassigned to [2,4]), __consumer_offsets-0
    assert counts[(2, "delete-log")] == 1 and (2, "remove-partition") in counts  # bar-0 (led by 1: no remote)
    assert counts[(3, "make-follower")] == 3 and (3, "delete-log") not in counts
    # broker 4 is not registered at B: its changes are planned, the publisher's deleted-topic hooks are not
    assert {r["broker"] for r in rows} == {1, 2, 3, 4} and counts[(4, "make-leader")] == 1  # baz-0
    assert {r["broker"] for r in rows if r["action"] == "partitions-deleted"} == {1, 2, 3}
    for broker in {r["broker"] for r in rows}:
        steps = [r["step"] for r in broker_rows(rows, broker)]
        assert steps == list(range(1, len(steps) + 1))
    only = apply_plan_rows(*scenario_delta("apply"), brokers=[1, 7], num_replica_fetchers=2)
    assert broker_rows(only, 1) == broker_rows(rows, 1)
    assert [summary(r)[1:3] for r in broker_rows(only, 7)] == [("partitions-deleted", "bar-0")]


def test_directory_checks_need_metadata_version_3_7_iv2() -> None:
    log, a, b = apply_scenario(metadata_version=16)
    assert "check-directory" not in {r["action"] for r in apply_plan_rows(*delta_between(log.records, a, b))}


def test_coordinator_hooks_in_publisher_order() -> None:
    """Per coordinator topic: resignations of a deleted topic's led partitions (old epoch), then the
    changed topic's deletes (no epoch), elections, follower resignations; share only when configured;
    onPartitionsDeleted last, for every partition of the deleted topic."""
    start, delta, end = scenario_delta("coordinators")
    rows = apply_plan_rows(start, delta, end, share_coordinator=True, in_controlled_shutdown=[3])
    calls = [summary(r)[1:] for r in broker_rows(rows, 1) if r["phase"] == "coordinator"]
    assert calls == [
        ("resign", "__consumer_offsets-1", ("group", 1)),  # 1 led it at A, topic deleted: old leader epoch
        ("elect", "__consumer_offsets-1", ("group", 0)),  # the re-created topic's local changes
        ("resign", "__consumer_offsets-0", ("group", 0)),
        ("resign", "__transaction_state-0", ("transaction", 1)),
        ("resign", "__transaction_state-1", ("transaction", 0)),
        ("elect", "__share_group_state-0", ("share", 1)),
        ("partitions-deleted", "__consumer_offsets-0", None),
        ("partitions-deleted", "__consumer_offsets-1", None),
    ]
    assert [r["reason"] for r in broker_rows(rows, 1) if r["phase"] == "coordinator"][:2] == [
        "group coordinator: onResignation(1, 1)",
        "group coordinator: onElection(1, 0)",
    ]
    # broker 2 keeps leading __transaction_state-1 at the same leader epoch: no election
    assert [summary(r)[1:] for r in broker_rows(rows, 2) if r["phase"] == "coordinator"][:3] == [
        ("resign", "__consumer_offsets-0", ("group", 1)),
        ("elect", "__consumer_offsets-0", ("group", 0)),
        ("elect", "__transaction_state-0", ("transaction", 1)),
    ]
    # broker 3, in controlled shutdown: reassigned away from __transaction_state-1, out of an ISR
    assert [summary(r)[:3] for r in broker_rows(rows, 3)] == [
        (1, "remove-fetcher", "__transaction_state-1"),
        (2, "remove-partition", "__transaction_state-1"),
        (3, "delete-log", "__transaction_state-1"),
        (4, "make-follower", "__consumer_offsets-1"),
        (5, "make-follower", "__share_group_state-0"),
        (6, "remove-fetcher", "__consumer_offsets-1"),
        (7, "add-fetcher", "__consumer_offsets-1"),
        (8, "stop-fetching", "__share_group_state-0"),
        (9, "check-directory", "__consumer_offsets-1"),
        (10, "check-directory", "__share_group_state-0"),
        (11, "resign", "__consumer_offsets-1"),
        (12, "resign", "__transaction_state-1"),
        (13, "resign", "__share_group_state-0"),
        (14, "partitions-deleted", "__consumer_offsets-0"),
        (15, "partitions-deleted", "__consumer_offsets-1"),
    ]
    assert broker_rows(rows, 3)[11]["reason"] == "transaction coordinator: onResignation(1, empty)"
    assert "share" not in {r["coordinator"] for r in apply_plan_rows(start, delta, end)}
    # the deleted topic's partitions go first, the re-created ones are new
    made = {summary(r)[2]: r for r in broker_rows(rows, 1) if r["action"] in ("make-leader", "make-follower")}
    assert made["__consumer_offsets-1"]["isNew"] and made["__consumer_offsets-1"]["topicId"] == CO2


def test_controlled_shutdown_and_stale_partition_epoch() -> None:
    rows = apply_plan_rows(*scenario_delta("shutdown"), brokers=[1], in_controlled_shutdown=[1])
    assert [summary(r)[:3] for r in rows] == [
        (1, "make-follower", "s-0"),
        (2, "make-follower", "s-1"),
        (3, "make-follower", "s-2"),
        (4, "stop-fetching", "s-0"),
        (5, "stop-fetching", "s-1"),
    ]
    assert rows[2]["reason"] == "skipped: partition epoch 3 is older than the current 5"
    assert (rows[2]["newLeaderEpoch"], rows[2]["createLog"], rows[2]["isNew"]) == (False, False, False)
    assert (rows[3]["deleteLocalLog"], rows[3]["deleteRemoteLog"]) == (False, False)
    # not shutting down: s-0's new leader epoch restarts fetching, but there is no leader
    rows = apply_plan_rows(*scenario_delta("shutdown"), brokers=[1])
    assert [summary(r)[1:3] for r in rows][3:] == [("remove-fetcher", "s-0"), ("no-fetcher", "s-0")]
    assert rows[4]["reason"] == "leader -1 is not registered with listener PLAINTEXT: no fetcher (the log exists)"
    assert rows[1]["reason"] == "follows leader 2 at leader epoch 0 (not newer: fetcher unchanged); partition epoch 1"


def test_leader_without_the_inter_broker_listener_gets_no_fetcher() -> None:
    start, delta, end = scenario_delta("apply")
    rows = broker_rows(apply_plan_rows(start, delta, end, inter_broker_listener="INTERNAL"), 1)
    fetchers = [summary(r)[1:3] for r in rows if r["action"] in ("add-fetcher", "no-fetcher")]
    assert fetchers == [("no-fetcher", "__consumer_offsets-0"), ("no-fetcher", "baz-0"), ("no-fetcher", "foo-2")]
    assert rows[18]["reason"] == "leader 2 is not registered with listener INTERNAL: no fetcher (the log exists)"


def test_topic_id_mismatch_aborts_apply_delta() -> None:
    """u-0's follower steps never happen; the coordinator hooks would still run."""
    rows = apply_plan_rows(*scenario_delta("mismatch"), brokers=[1])
    assert [summary(r)[:3] for r in rows] == [
        (1, "remove-fetcher", "a-0"),
        (2, "make-leader", "a-0"),
        (3, "abort", "t-0"),
    ]
    assert rows[2]["reason"] == (
        f"IllegalStateException: Topic t-0 exists, but its ID is {T}, not {T2} as expected; applyDelta stops"
    )
    assert (rows[2]["topicId"], rows[2]["isNew"]) == (T2, False)


def test_no_topic_changes_no_actions_and_fetchers_must_be_positive() -> None:
    log, a, _ = apply_scenario()
    assert apply_plan_rows(*delta_between(log.records, a, a)) == []
    log.batch(feature_level("group.version", 1))
    assert apply_plan_rows(*delta_between(log.records, log.next_offset - 2, log.next_offset - 1)) == []
    with pytest.raises(ValueError, match="num.replica.fetchers must be at least 1"):
        apply_plan_rows(*scenario_delta("apply"), num_replica_fetchers=0)


def test_leader_and_isr_requests_replay_cleanly() -> None:
    start, delta, end = scenario_delta("apply")
    doc = leader_and_isr_doc(start, delta, end, controller_epoch=3, broker=1)
    stop_request, lisr_request = doc["requests"]
    assert stop_request["type"] == "StopReplica" and lisr_request["type"] == "LeaderAndIsr"
    assert [
        (t["topicName"], [(p["partitionIndex"], p["leaderEpoch"]) for p in t["partitionStates"]])
        for t in stop_request["topicStates"]
    ] == [("bar", [(0, -2)]), ("foo", [(3, 1)])]
    states = {(s["topicName"], s["partitionIndex"]): s for s in lisr_request["partitionStates"]}
    assert sorted(states) == [
        ("__consumer_offsets", 0),
        ("__consumer_offsets", 1),
        ("baz", 0),
        ("foo", 0),
        ("foo", 1),
        ("foo", 2),
    ]
    assert states[("baz", 0)]["isNew"] and not states[("foo", 0)]["isNew"]
    assert (states[("foo", 0)]["partitionEpoch"], states[("foo", 0)]["controllerEpoch"]) == (1, 3)
    assert [b["brokerId"] for b in lisr_request["liveLeaders"]] == [1, 2]
    assert lisr_request["topicIds"] == {"__consumer_offsets": CO, "baz": BAZ, "foo": FOO}
    assert (doc["brokerEpoch"], stop_request["brokerEpoch"]) == (11, 11)
    result = replay_requests(doc)
    assert all(p["errorCode"] == NONE for r in result["responses"] for p in r["partitionErrors"])
    everyone = leader_and_isr_doc(start, delta, end, controller_epoch=3, controller_id=9)
    assert (everyone["fromOffset"], everyone["toOffset"]) == (start.offset, end.offset)
    assert [d["brokerId"] for d in everyone["brokers"]] == [1, 2, 3]  # 4 is not registered at B
    assert everyone["brokers"][0]["requests"][0]["controllerId"] == 9
    assert leader_and_isr_doc(start, delta, end, controller_epoch=3, broker=4) == {
        "brokerId": 4,
        "brokerEpoch": -1,
        "aliveBrokers": doc["aliveBrokers"],
        "requests": [],
    }


def test_leader_and_isr_alive_brokers_need_the_listener_and_no_fence() -> None:
    log, a, b = apply_scenario()
    log.batch(broker_change(3, 13, fenced=1))
    start, delta, end = delta_between(log.records, a, b + 1)
    doc = leader_and_isr_doc(start, delta, end, controller_epoch=1, broker=3)
    assert [a["brokerId"] for a in doc["aliveBrokers"]] == [1, 2]
    assert (
        leader_and_isr_doc(start, delta, end, controller_epoch=1, broker=3, inter_broker_listener="INTERNAL")[
            "aliveBrokers"
        ]
        == []
    )
