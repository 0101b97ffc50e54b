"""ZooKeeper-era becomeLeaderOrFollower / StopReplica replay on one broker (docs/local-changes.md)
and the fetcher-id arithmetic (the "Fetcher ids" examples)."""

from __future__ import annotations

from typing import Any

import pytest

from replica.plan import fetcher_id, java_string_hash
from replica.zk import (
    FENCED_LEADER_EPOCH,
    INCONSISTENT_TOPIC_ID,
    KAFKA_STORAGE_ERROR,
    NONE,
    NOT_LEADER_OR_FOLLOWER,
    STALE_BROKER_EPOCH,
    STALE_CONTROLLER_EPOCH,
    UNKNOWN_TOPIC_OR_PARTITION,
    ZkBroker,
    replay_requests,
)

FOO, BAR = "AAAAAAAAAAAAAAAAAAAAEA", "AAAAAAAAAAAAAAAAAAAAEQ"


def test_java_string_hash_and_fetcher_ids_worked_values() -> None:
    assert java_string_hash("foo") == 101574
    assert java_string_hash("__consumer_offsets") == -970371369
    assert java_string_hash("") == 0
    assert java_string_hash("€😀") == 9810703  # UTF-16 units: 0x20AC, 0xD83D, 0xDE00
    expected = {0: (0, 0, 0, 2), 1: (0, 1, 1, 3), 2: (0, 0, 2, 0), 3: (0, 1, 0, 1)}
    for partition, ids in expected.items():
        assert tuple(fetcher_id("foo", partition, n) for n in (1, 2, 3, 4)) == ids
    assert [fetcher_id("__consumer_offsets", p, 4) for p in range(3)] == [3, 2, 1]


def test_fetcher_id_of_integer_min_value_is_zero() -> None:
    # 31 * hash("foo") + p == -2^31 (mod 2^32) for this partition: Utils.abs(MIN_VALUE) = 0
    partition = (-(1 << 31) - 31 * 101574) % (1 << 32)
    assert partition < (1 << 31)
    assert fetcher_id("foo", partition, 7) == 0
    assert fetcher_id("foo", partition + 1, 7) == ((1 << 31) - 1) % 7


def state(
    topic: str,
    partition: int,
    leader: int,
    leader_epoch: int,
    replicas: list[int],
    *,
    isr: list[int] | None = None,
    partition_epoch: int = 0,
    controller_epoch: int = 1,
) -> dict[str, Any]:
    return {
        "topicName": topic,
        "partitionIndex": partition,
        "controllerEpoch": controller_epoch,
        "leader": leader,
        "leaderEpoch": leader_epoch,
        "isr": replicas if isr is None else isr,
        "partitionEpoch": partition_epoch,
        "replicas": replicas,
        "addingReplicas": [],
        "removingReplicas": [],
        "isNew": False,
        "leaderRecoveryState": 0,
    }


def lisr(
    *states: dict[str, Any],
    controller_epoch: int = 1,
    broker_epoch: int = -1,
    topic_ids: dict[str, str] | None = None,
    kraft: bool = False,
) -> dict[str, Any]:
    return {
        "type": "LeaderAndIsr",
        "controllerId": 0,
        "isKRaftController": kraft,
        "controllerEpoch": controller_epoch,
        "brokerEpoch": broker_epoch,
        "topicIds": {"foo": FOO} if topic_ids is None else topic_ids,
        "partitionStates": list(states),
    }


def stop(*partitions: tuple[str, int, int, bool], controller_epoch: int = 1, broker_epoch: int = -1) -> dict[str, Any]:
    topics: dict[str, list[dict[str, Any]]] = {}
    for topic, partition, epoch, delete in partitions:
        topics.setdefault(topic, []).append(
            {"partitionIndex": partition, "leaderEpoch": epoch, "deletePartition": delete}
        )
    return {
        "type": "StopReplica",
        "controllerId": 0,
        "controllerEpoch": controller_epoch,
        "brokerEpoch": broker_epoch,
        "topicStates": [{"topicName": t, "partitionStates": p} for t, p in topics.items()],
    }


def broker(**kw: Any) -> ZkBroker:
    return ZkBroker(1, broker_epoch=kw.pop("broker_epoch", 5), alive_brokers={1: ("b1", 9092), 2: ("b2", 9093)}, **kw)


def codes(response: dict[str, Any]) -> dict[str, int]:
    return {f"{p['topicName']}-{p['partitionIndex']}": p["errorCode"] for p in response["partitionErrors"]}


def test_leader_and_follower_transitions_and_fetchers() -> None:
    b = broker(num_replica_fetchers=4)
    r = b.handle(lisr(state("foo", 0, 1, 3, [1, 2]), state("foo", 1, 2, 7, [1, 2]), state("foo", 2, 3, 1, [1, 3])))
    assert r["errorCode"] == NONE and codes(r) == {"foo-0": NONE, "foo-1": NONE, "foo-2": NONE}
    p0, p1, p2 = (b.partitions[("foo", i)] for i in range(3))
    assert (p0.leader, p0.leader_epoch, p0.isr, p0.log_topic_id) == (1, 3, [1, 2], FOO)
    assert (p1.leader, p1.leader_epoch, p1.isr) == (2, 7, [])
    assert p1.fetcher == {
        "leader": 2,
        "host": "b2",
        "port": 9093,
        "fetcherId": fetcher_id("foo", 1, 4),
        "leaderEpoch": 7,
    }
    # leader 3 is not alive: only the log is created, no state change, no fetcher
    assert (p2.has_log, p2.leader, p2.leader_epoch, p2.fetcher) == (True, None, -1, None)


def test_stale_controller_epoch_rejects_the_whole_request() -> None:
    b = broker()
    b.handle(lisr(state("foo", 0, 1, 3, [1, 2]), controller_epoch=4))
    r = b.handle(lisr(state("foo", 0, 2, 9, [1, 2]), controller_epoch=3))
    assert r["errorCode"] == STALE_CONTROLLER_EPOCH and codes(r) == {"foo-0": STALE_CONTROLLER_EPOCH}
    assert b.partitions[("foo", 0)].leader_epoch == 3 and b.controller_epoch == 4


def test_leader_epoch_not_newer_is_stale_unless_from_a_kraft_controller() -> None:
    b = broker()
    b.handle(lisr(state("foo", 0, 1, 3, [1, 2]), state("foo", 1, 2, 3, [1, 2])))
    r = b.handle(lisr(state("foo", 0, 1, 2, [1, 2]), state("foo", 1, 2, 3, [1, 2])))
    assert r["errorCode"] == NONE and codes(r) == {"foo-0": STALE_CONTROLLER_EPOCH, "foo-1": STALE_CONTROLLER_EPOCH}
    r = b.handle(lisr(state("foo", 1, 2, 3, [1, 2], isr=[2]), kraft=True))
    assert codes(r) == {"foo-1": NONE}


def test_broker_not_in_the_assignment_is_unknown_topic_or_partition_but_stays_hosted() -> None:
    b = broker()
    r = b.handle(lisr(state("foo", 0, 2, 1, [2, 3])))
    assert codes(r) == {"foo-0": UNKNOWN_TOPIC_OR_PARTITION}
    assert ("foo", 0) in b.partitions and not b.partitions[("foo", 0)].has_log


def test_inconsistent_topic_id() -> None:
    b = broker()
    b.handle(lisr(state("foo", 0, 1, 1, [1, 2])))
    r = b.handle(lisr(state("foo", 0, 1, 2, [1, 2]), topic_ids={"foo": BAR}))
    assert codes(r) == {"foo-0": INCONSISTENT_TOPIC_ID}
    # a zero topic id means "no id": accepted
    r = b.handle(lisr(state("foo", 0, 1, 2, [1, 2]), topic_ids={"foo": "AAAAAAAAAAAAAAAAAAAAAA"}))
    assert codes(r) == {"foo-0": NONE}


def test_equal_epoch_assigns_a_missing_topic_id_and_needs_the_log() -> None:
    b = broker()
    b.handle(lisr(state("foo", 0, 1, 1, [1, 2]), topic_ids={}))
    assert b.partitions[("foo", 0)].log_topic_id is None
    r = b.handle(lisr(state("foo", 0, 1, 1, [1, 2])))
    assert codes(r) == {"foo-0": NONE} and b.partitions[("foo", 0)].log_topic_id == FOO
    # same epoch, the request has an id but the fresh partition no log: the exception escapes
    b.handle(lisr(state("foo", 1, 2, 1, [2, 3])))  # hosted (rejected: not a replica), no log, epoch -1
    r = b.handle(lisr(state("foo", 1, 1, -1, [1, 2])))
    assert r["errorCode"] == NOT_LEADER_OR_FOLLOWER and codes(r) == {"foo-1": NOT_LEADER_OR_FOLLOWER}


def test_stale_broker_epoch() -> None:
    b = broker(broker_epoch=10)
    r = b.handle(lisr(state("foo", 0, 1, 1, [1, 2]), broker_epoch=9))
    assert r["errorCode"] == STALE_BROKER_EPOCH and codes(r) == {"foo-0": STALE_BROKER_EPOCH}
    assert not b.partitions
    assert codes(b.handle(lisr(state("foo", 0, 1, 1, [1, 2]), broker_epoch=-1))) == {"foo-0": NONE}
    r = b.handle(stop(("foo", 0, 1, True), broker_epoch=3))
    assert (r["errorCode"], r["partitionErrors"]) == (STALE_BROKER_EPOCH, [])


def test_offline_partition_is_a_storage_error() -> None:
    b = ZkBroker.from_json({"brokerId": 1, "offlinePartitions": [{"topicName": "foo", "partitionIndex": 0}]})
    assert codes(b.handle(lisr(state("foo", 0, 1, 1, [1])))) == {"foo-0": KAFKA_STORAGE_ERROR}
    assert codes(b.handle(stop(("foo", 0, 1, True)))) == {"foo-0": KAFKA_STORAGE_ERROR}


def test_stop_replica_epochs_and_deletion() -> None:
    b = broker()
    b.handle(lisr(state("foo", 0, 1, 5, [1, 2]), state("foo", 1, 2, 5, [1, 2]), state("foo", 2, 1, 5, [1, 2])))
    r = b.handle(stop(("foo", 0, 4, True), ("foo", 1, 5, False), ("foo", 2, -2, True), ("bar", 0, 3, True)))
    assert r["errorCode"] == NONE
    assert codes(r) == {"foo-0": FENCED_LEADER_EPOCH, "foo-1": NONE, "foo-2": NONE, "bar-0": NONE}
    assert ("foo", 0) in b.partitions  # fenced: untouched
    assert b.partitions[("foo", 1)].fetcher is None and b.partitions[("foo", 1)].has_log  # stopped, log kept
    assert ("foo", 2) not in b.partitions  # deleted; led here with EPOCH_DURING_DELETE: remote log too
    assert "delete foo-2: partition removed, log deleted, remote log deleted" in r["events"]
    assert "delete bar-0: not hosted, stray log deleted" in r["events"]
    r = b.handle(stop(("foo", 0, 1, True), controller_epoch=0))
    assert (r["errorCode"], r["partitionErrors"]) == (STALE_CONTROLLER_EPOCH, [])


def test_stop_replica_v0_format_and_coordinator_resignations() -> None:
    b = broker()
    b.handle(
        lisr(state("__consumer_offsets", 0, 1, 4, [1, 2]), state("__transaction_state", 1, 2, 6, [1, 2]), topic_ids={})
    )
    r = b.handle(
        {
            "type": "StopReplica",
            "controllerId": 0,
            "controllerEpoch": 1,
            "deletePartitions": True,
            "partitions": [{"topicName": "__consumer_offsets", "partitionIndex": 0}],
        }
    )
    assert codes(r) == {"__consumer_offsets-0": NONE}
    assert r["events"][-1] == "group coordinator: onResignation(0, empty)"
    r = b.handle(stop(("__transaction_state", 1, 6, True)))
    assert r["events"][-1] == "transaction coordinator: onResignation(1, 6)"


def test_coordinator_election_only_when_newly_leader() -> None:
    b = broker()
    first = b.handle(lisr(state("__consumer_offsets", 0, 1, 1, [1, 2]), topic_ids={}))
    assert "group coordinator: onElection(0, 1)" in first["events"]
    again = b.handle(lisr(state("__consumer_offsets", 0, 1, 2, [1, 2]), topic_ids={}))
    assert not any("coordinator" in e for e in again["events"])
    moved = b.handle(lisr(state("__consumer_offsets", 0, 2, 3, [1, 2]), topic_ids={}))
    assert "group coordinator: onResignation(0, 3)" in moved["events"]


def test_stale_partition_epoch_is_skipped_by_make_leader() -> None:
    b = broker()
    b.handle(lisr(state("foo", 0, 1, 1, [1, 2], partition_epoch=5)))
    r = b.handle(lisr(state("foo", 0, 1, 2, [1, 2], partition_epoch=4)))
    assert codes(r) == {"foo-0": NONE}
    assert b.partitions[("foo", 0)].leader_epoch == 1
    assert "make-leader foo-0: skipped, partition epoch 4 < 5" in r["events"]


def test_shutting_down_adds_no_fetchers_and_replay_document() -> None:
    result = replay_requests(
        {
            "brokerId": 1,
            "brokerEpoch": 2,
            "shuttingDown": True,
            "aliveBrokers": [{"brokerId": 2, "host": "b2", "port": 1}],
            "requests": [lisr(state("foo", 0, 2, 1, [1, 2]))],
        }
    )
    (p,) = result["broker"]["partitions"]
    assert (p["leader"], p["fetcher"], result["responses"][0]["errorCode"]) == (2, None, NONE)
    with pytest.raises(ValueError, match="unknown request type"):
        replay_requests({"brokerId": 1, "requests": [{"type": "UpdateMetadata"}]})
