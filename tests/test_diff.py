"""image.diff: hand-built image pairs (one diff covers every change kind) and a differential test
against a plain-Python diff of reference-engine images of a generated log."""

from __future__ import annotations

from typing import Any

import pytest

from image.diff import diff_rows
from image.parts import json_rows


def _image(offset: int, **parts: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "offset": offset,
        "epoch": 3,
        "timestamp": 1_700_000_000_000 + offset,
        "topics": [],
        "partitions": [],
        "brokers": [],
        "controllers": [],
        "configs": [],
        "features": {"metadata.version": 21},
        "producerIds": {"nextProducerId": -1},
        "clientQuotas": [],
        "acls": [],
        "scram": [],
        "delegationTokens": [],
    }
    doc.update(parts)
    return doc


def _partition(topic: str, topic_id: str, pid: int, **fields: Any) -> dict[str, Any]:
    row = {
        "topic": topic,
        "topicId": topic_id,
        "partitionId": pid,
        "replicas": [1, 2, 3],
        "isr": [1, 2, 3],
        "removingReplicas": [],
        "addingReplicas": [],
        "leader": 1,
        "leaderRecoveryState": 0,
        "leaderEpoch": 3,
        "partitionEpoch": 5,
        "directories": ["d1", "d2", "d3"],
        "eligibleLeaderReplicas": [],
        "lastKnownElr": [],
    }
    return {**row, **fields}


def _endpoint(name: str, port: int, protocol: int | None = 0) -> dict[str, Any]:
    return {"name": name, "host": "h", "port": port, "securityProtocol": protocol}


def _broker(broker_id: int, **fields: Any) -> dict[str, Any]:
    row = {
        "brokerId": broker_id,
        "brokerEpoch": 10,
        "incarnationId": f"inc-{broker_id}",
        "fenced": False,
        "inControlledShutdown": False,
        "isMigratingZkBroker": False,
        "rack": None,
        "endPoints": [_endpoint("EXTERNAL", 9093, None), _endpoint("PLAINTEXT", 9092)],
        "features": [{"name": "metadata.version", "minSupportedVersion": 7, "maxSupportedVersion": 25}],
        "logDirs": ["dir-a"],
        "cordonedLogDirs": None,
    }
    return {**row, **fields}


def _config(rtype: str, rname: str, name: str, value: str) -> dict[str, Any]:
    return {"resourceType": rtype, "resourceName": rname, "name": name, "value": value}


def _scram(iterations: int) -> dict[str, Any]:
    return {
        "mechanism": "SCRAM-SHA-256",
        "name": "alice",
        "salt": "c2FsdA==",
        "storedKey": "c3Q=",
        "serverKey": "c2U=",
        "iterations": iterations,
    }


ACL = {
    "id": "acl-1",
    "resourceType": 2,
    "resourceName": "orders",
    "patternType": 3,
    "principal": "User:bob",
    "host": "*",
    "operation": 3,
    "permissionType": 3,
}
TOKEN = {
    "tokenId": "tok-1",
    "owner": "User:alice",
    "requester": "User:alice",
    "renewers": ["User:bob"],
    "issueTimestamp": 1,
    "maxTimestamp": 3,
    "expirationTimestamp": 2,
}

BEFORE = _image(
    10,
    topics=[
        {"name": "gone", "topicId": "G1"},
        {"name": "old", "topicId": "O"},
        {"name": "orders", "topicId": "A"},
        {"name": "payments", "topicId": "P"},
    ],
    partitions=[
        _partition("gone", "G1", 0),
        _partition("old", "O", 0),
        _partition("orders", "A", 0),
        _partition("orders", "A", 1),
        _partition("payments", "P", 0),
    ],
    brokers=[_broker(1), _broker(2, fenced=True), _broker(3), _broker(4), _broker(5), _broker(7)],
    controllers=[
        {"controllerId": 3000, "incarnationId": "c", "zkMigrationReady": False, "endPoints": [], "features": []}
    ],
    configs=[
        _config("BROKER", "1", "x", "1"),
        _config("TOPIC", "orders", "cleanup.policy", "delete"),
        _config("TOPIC", "orders", "retention.ms", "1000"),
    ],
    features={"group.version": 1, "kraft.version": 0, "metadata.version": 21},
    producerIds={"nextProducerId": 1000},
    clientQuotas=[{"entity": {"user": None}, "key": "producer_byte_rate", "value": 1024.0}],
    acls=[ACL],
    scram=[_scram(4096)],
)

AFTER = _image(
    20,
    topics=[
        {"name": "gone", "topicId": "G2"},
        {"name": "new", "topicId": "O"},
        {"name": "orders", "topicId": "A"},
        {"name": "payments", "topicId": "P"},
    ],
    partitions=[
        _partition("gone", "G2", 0),
        _partition("new", "O", 0),
        _partition("orders", "A", 0, isr=[1, 2], partitionEpoch=6),
        _partition("orders", "A", 1, replicas=[2, 1, 3], leader=2, leaderEpoch=4, partitionEpoch=6),
        _partition("payments", "P", 0),
        _partition("payments", "P", 1),
    ],
    brokers=[
        _broker(1, rack="r1", endPoints=[_endpoint("EXTERNAL", 9093, None), _endpoint("PLAINTEXT", 19092)]),
        _broker(2),
        _broker(3, fenced=True),
        _broker(4, inControlledShutdown=True),
        _broker(6),
        _broker(
            7,
            brokerEpoch=11,
            incarnationId="inc-7b",
            endPoints=[_endpoint("PLAINTEXT", 9092), _endpoint("EXTERNAL", 9093, None)],
        ),
    ],
    controllers=BEFORE["controllers"],
    configs=[
        _config("BROKER", "1", "x", "1"),
        _config("TOPIC", "orders", "retention.ms", "2000"),
        _config("TOPIC", "payments", "retention.ms", "1000"),
    ],
    features={"kraft.version": 1, "metadata.version": 22, "transaction.version": 2},
    producerIds={"nextProducerId": 2000},
    clientQuotas=[
        {"entity": {"client-id": None, "user": "alice"}, "key": "producer_byte_rate", "value": 10.0},
        {"entity": {"user": None}, "key": "producer_byte_rate", "value": 2048.0},
    ],
    scram=[_scram(8192)],
    delegationTokens=[TOKEN],
)


def python_doc(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """The in-process diff of two image documents."""

    def provenance(doc: dict[str, Any]) -> dict[str, Any]:
        return {k: doc[k] for k in ("offset", "epoch", "timestamp")}

    return diff_rows(json_rows(before), json_rows(after), provenance(before), provenance(after))


@pytest.fixture(scope="module")
def doc() -> dict[str, Any]:
    """The diff of BEFORE and AFTER."""
    return python_doc(BEFORE, AFTER)


def _keys(entries: list[dict[str, Any]], *cols: str) -> list[tuple]:
    return [tuple(e[c] for c in cols) for e in entries]


def test_provenance_and_summary(doc):
    assert doc["from"] == {"offset": 10, "epoch": 3, "timestamp": 1_700_000_000_010}
    assert doc["to"] == {"offset": 20, "epoch": 3, "timestamp": 1_700_000_000_020}
    assert list(doc)[:3] == ["from", "to", "summary"]
    assert doc["summary"] == {
        "topics": {"added": 1, "removed": 1, "changed": 1},
        "partitions": {"added": 2, "removed": 1, "changed": 2},
        "brokers": {"added": 1, "removed": 1, "changed": 5},
        "controllers": {"added": 0, "removed": 0, "changed": 0},
        "configs": {"added": 1, "removed": 1, "changed": 1},
        "features": {"added": 1, "removed": 1, "changed": 2},
        "producerIds": {"added": 0, "removed": 0, "changed": 1},
        "clientQuotas": {"added": 1, "removed": 0, "changed": 1},
        "acls": {"added": 0, "removed": 1, "changed": 0},
        "scram": {"added": 0, "removed": 0, "changed": 1},
        "delegationTokens": {"added": 1, "removed": 0, "changed": 0},
    }
    assert all(len(doc[s][c]) == n for s, counts in doc["summary"].items() for c, n in counts.items())


def test_recreated_topic_is_delete_plus_create_and_rename_is_a_change(doc):
    assert doc["topics"] == {
        "added": [{"name": "gone", "topicId": "G2"}],
        "removed": [{"name": "gone", "topicId": "G1"}],
        "changed": [{"topicId": "O", "fields": ["name"], "before": {"name": "old"}, "after": {"name": "new"}}],
    }
    # the re-created topic's partitions go and come; a rename alone changes no partition
    assert _keys(doc["partitions"]["added"], "topicId", "partitionId") == [("G2", 0), ("P", 1)]
    assert doc["partitions"]["removed"] == [_partition("gone", "G1", 0)]
    assert doc["partitions"]["added"][0] == _partition("gone", "G2", 0)


def test_partition_changes_list_only_changed_fields(doc):
    isr_only, moved = doc["partitions"]["changed"]
    assert isr_only == {
        "topicId": "A",
        "partitionId": 0,
        "topic": "orders",
        "fields": ["isr", "partitionEpoch"],
        "before": {"isr": [1, 2, 3], "partitionEpoch": 5},
        "after": {"isr": [1, 2], "partitionEpoch": 6},
    }
    assert moved["partitionId"] == 1
    assert moved["fields"] == ["replicas", "leader", "leaderEpoch", "partitionEpoch"]  # replica order matters
    assert (moved["before"]["replicas"], moved["after"]["replicas"]) == ([1, 2, 3], [2, 1, 3])
    assert (moved["before"]["leader"], moved["after"]["leader"]) == (1, 2)


def test_broker_changes(doc):
    brokers = doc["brokers"]
    assert _keys(brokers["added"], "brokerId") == [(6,)] and brokers["added"][0] == _broker(6)
    assert _keys(brokers["removed"], "brokerId") == [(5,)]
    changed = {e["brokerId"]: e for e in brokers["changed"]}
    assert list(changed) == [1, 2, 3, 4, 7]
    assert changed[1]["fields"] == ["rack", "endPoints"]
    assert changed[1]["before"]["rack"] is None and changed[1]["after"]["rack"] == "r1"
    assert [e["port"] for e in changed[1]["after"]["endPoints"]] == [9093, 19092]
    assert changed[1]["after"]["endPoints"][0]["securityProtocol"] is None
    assert changed[2] == {"brokerId": 2, "fields": ["fenced"], "before": {"fenced": True}, "after": {"fenced": False}}
    assert changed[3] == {"brokerId": 3, "fields": ["fenced"], "before": {"fenced": False}, "after": {"fenced": True}}
    assert changed[4] == {
        "brokerId": 4,
        "fields": ["inControlledShutdown"],
        "before": {"inControlledShutdown": False},
        "after": {"inControlledShutdown": True},
    }
    # re-registration: epoch and incarnation; endpoints only listed in another order are no change
    assert changed[7] == {
        "brokerId": 7,
        "fields": ["brokerEpoch", "incarnationId"],
        "before": {"brokerEpoch": 10, "incarnationId": "inc-7"},
        "after": {"brokerEpoch": 11, "incarnationId": "inc-7b"},
    }


def test_config_set_changed_deleted(doc):
    assert doc["configs"] == {
        "added": [_config("TOPIC", "payments", "retention.ms", "1000")],
        "removed": [_config("TOPIC", "orders", "cleanup.policy", "delete")],
        "changed": [
            {
                "resourceType": "TOPIC",
                "resourceName": "orders",
                "name": "retention.ms",
                "fields": ["value"],
                "before": {"value": "1000"},
                "after": {"value": "2000"},
            }
        ],
    }


def test_feature_changes_and_removal(doc):
    assert doc["features"] == {
        "added": [{"name": "transaction.version", "level": 2}],
        "removed": [{"name": "group.version", "level": 1}],
        "changed": [
            {"name": "kraft.version", "fields": ["level"], "before": {"level": 0}, "after": {"level": 1}},
            {"name": "metadata.version", "fields": ["level"], "before": {"level": 21}, "after": {"level": 22}},
        ],
    }


def test_other_parts(doc):
    assert doc["controllers"] == {"added": [], "removed": [], "changed": []}
    assert doc["producerIds"]["changed"] == [
        {"fields": ["nextProducerId"], "before": {"nextProducerId": 1000}, "after": {"nextProducerId": 2000}}
    ]
    # a null entity name is its own key (the default entity), sorted before any name
    assert doc["clientQuotas"]["changed"] == [
        {
            "entity": {"user": None},
            "key": "producer_byte_rate",
            "fields": ["value"],
            "before": {"value": 1024.0},
            "after": {"value": 2048.0},
        }
    ]
    assert doc["clientQuotas"]["added"] == [AFTER["clientQuotas"][0]]
    assert doc["acls"]["removed"] == [ACL]
    assert doc["scram"]["changed"] == [
        {
            "mechanism": "SCRAM-SHA-256",
            "name": "alice",
            "fields": ["iterations"],
            "before": {"iterations": 4096},
            "after": {"iterations": 8192},
        }
    ]
    assert doc["delegationTokens"]["added"] == [TOKEN]
