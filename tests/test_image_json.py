"""The image JSON contract (image/README.md): exact content, order and types."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import ValidationError

from image.image import MetadataImage, empty_image
from image.release import rules_for
from image.replay import replay_to
from tests.image_json_schema import ImageJson
from tests.logbuilder import (
    LogBuilder,
    acl,
    client_quota,
    config,
    feature_level,
    partition,
    partition_change,
    producer_ids,
    register_broker,
    register_controller,
    scram,
    token,
    topic,
    uuid,
)

A, B, D1, D2 = uuid(0xA0), uuid(0xB0), uuid(7), uuid(6)


def rich_image() -> MetadataImage:
    log = LogBuilder()
    log.batch(
        feature_level("metadata.version", 22),
        feature_level("group.version", 1),
        register_broker(
            2,
            20,
            rack="r",
            fenced=False,
            log_dirs=[D1, D2],
            endpoints=[
                {"name": "SSL", "host": "h2", "port": 9093, "securityProtocol": 1},
                {"name": "PLAINTEXT", "host": "h2", "port": 9092, "securityProtocol": 0},
            ],
            features=[
                {"name": "metadata.version", "minSupportedVersion": 1, "maxSupportedVersion": 22},
                {"name": "group.version", "minSupportedVersion": 0, "maxSupportedVersion": 1},
            ],
        ),
        register_broker(1, 10),
        register_controller(3000),
    )
    log.batch(
        topic("b", B),
        partition(
            B,
            1,
            [2, 1],
            [2],
            leader=2,
            leader_epoch=3,
            partition_epoch=4,
            directories=[D1, D2],
            elr=[1],
            last_known_elr=[],
        ),
        partition(B, 0, [1, 2]),
        topic("a", A),
        partition(A, 0, [1]),
    )
    log.batch(
        config(2, "b", "segment.bytes", "1"),
        config(2, "b", "cleanup.policy", "2"),
        config(4, "", "k", "v"),
        client_quota({"user": "u", "client-id": "c"}, "q", 1.5),
        client_quota({"user": None}, "q", 2),
        client_quota({"user": "u"}, "q", 3),
        producer_ids(5000),
        acl(
            uuid(2),
            resource_type=4,
            resource_name="kafka-cluster",
            pattern_type=3,
            principal="User:x",
            host="h",
            operation=9,
            permission_type=2,
        ),
        acl(uuid(1)),
        scram("zed", 2),
        scram("amy", 1),
        scram("bob", 9),
        token("t2", renewers=[]),
        token("t1"),
    )
    log.batch(partition_change(A, 0, leader=-1, isr=[], leader_recovery_state=1), timestamp=5000, epoch=2)
    return replay_to(log.records)


EXPECTED: dict[str, Any] = {
    "offset": 24,
    "epoch": 2,
    "timestamp": 5000,
    "topics": [{"name": "a", "topicId": "AAAAAAAAAAAAAAAAAAAAoA"}, {"name": "b", "topicId": "AAAAAAAAAAAAAAAAAAAAsA"}],
    "partitions": [
        {
            "topic": "a",
            "topicId": "AAAAAAAAAAAAAAAAAAAAoA",
            "partitionId": 0,
            "replicas": [1],
            "isr": [],
            "removingReplicas": [],
            "addingReplicas": [],
            "leader": -1,
            "leaderRecoveryState": 1,
            "leaderEpoch": 1,
            "partitionEpoch": 1,
            "directories": ["AAAAAAAAAAAAAAAAAAAAAA"],
            "eligibleLeaderReplicas": [],
            "lastKnownElr": [],
        },
        {
            "topic": "b",
            "topicId": "AAAAAAAAAAAAAAAAAAAAsA",
            "partitionId": 0,
            "replicas": [1, 2],
            "isr": [1, 2],
            "removingReplicas": [],
            "addingReplicas": [],
            "leader": 1,
            "leaderRecoveryState": 0,
            "leaderEpoch": 0,
            "partitionEpoch": 0,
            "directories": ["AAAAAAAAAAAAAAAAAAAAAA", "AAAAAAAAAAAAAAAAAAAAAA"],
            "eligibleLeaderReplicas": [],
            "lastKnownElr": [],
        },
        {
            "topic": "b",
            "topicId": "AAAAAAAAAAAAAAAAAAAAsA",
            "partitionId": 1,
            "replicas": [2, 1],
            "isr": [2],
            "removingReplicas": [],
            "addingReplicas": [],
            "leader": 2,
            "leaderRecoveryState": 0,
            "leaderEpoch": 3,
            "partitionEpoch": 4,
            "directories": ["AAAAAAAAAAAAAAAAAAAABw", "AAAAAAAAAAAAAAAAAAAABg"],
            "eligibleLeaderReplicas": [1],
            "lastKnownElr": [],
        },
    ],
    "brokers": [
        {
            "brokerId": 1,
            "brokerEpoch": 10,
            "incarnationId": "AAAAAAAAAAAAAAAAAAAD6Q",
            "fenced": True,
            "inControlledShutdown": False,
            "isMigratingZkBroker": False,
            "rack": None,
            "endPoints": [{"name": "PLAINTEXT", "host": "b1", "port": 9092, "securityProtocol": 0}],
            "features": [{"name": "metadata.version", "minSupportedVersion": 1, "maxSupportedVersion": 22}],
            "logDirs": [],
            "cordonedLogDirs": None,
        },
        {
            "brokerId": 2,
            "brokerEpoch": 20,
            "incarnationId": "AAAAAAAAAAAAAAAAAAAD6g",
            "fenced": False,
            "inControlledShutdown": False,
            "isMigratingZkBroker": False,
            "rack": "r",
            "endPoints": [
                {"name": "PLAINTEXT", "host": "h2", "port": 9092, "securityProtocol": 0},
                {"name": "SSL", "host": "h2", "port": 9093, "securityProtocol": 1},
            ],
            "features": [
                {"name": "group.version", "minSupportedVersion": 0, "maxSupportedVersion": 1},
                {"name": "metadata.version", "minSupportedVersion": 1, "maxSupportedVersion": 22},
            ],
            "logDirs": ["AAAAAAAAAAAAAAAAAAAABg", "AAAAAAAAAAAAAAAAAAAABw"],
            "cordonedLogDirs": None,
        },
    ],
    "controllers": [
        {
            "controllerId": 3000,
            "incarnationId": "AAAAAAAAAAAAAAAAAAATiA",
            "zkMigrationReady": False,
            "endPoints": [{"name": "CONTROLLER", "host": "c3000", "port": 9093, "securityProtocol": 0}],
            "features": [],
        }
    ],
    "configs": [
        {"resourceType": "BROKER", "resourceName": "", "name": "k", "value": "v"},
        {"resourceType": "TOPIC", "resourceName": "b", "name": "cleanup.policy", "value": "2"},
        {"resourceType": "TOPIC", "resourceName": "b", "name": "segment.bytes", "value": "1"},
    ],
    "features": {"group.version": 1, "metadata.version": 22},
    "producerIds": {"nextProducerId": 5000},
    "clientQuotas": [
        {"entity": {"client-id": "c", "user": "u"}, "key": "q", "value": 1.5},
        {"entity": {"user": None}, "key": "q", "value": 2.0},
        {"entity": {"user": "u"}, "key": "q", "value": 3.0},
    ],
    "acls": [
        {
            "id": "AAAAAAAAAAAAAAAAAAAAAQ",
            "resourceType": 2,
            "resourceName": "t",
            "patternType": 3,
            "principal": "User:alice",
            "host": "*",
            "operation": 3,
            "permissionType": 3,
        },
        {
            "id": "AAAAAAAAAAAAAAAAAAAAAg",
            "resourceType": 4,
            "resourceName": "kafka-cluster",
            "patternType": 3,
            "principal": "User:x",
            "host": "h",
            "operation": 9,
            "permissionType": 2,
        },
    ],
    "scram": [
        {
            "mechanism": "SCRAM-SHA-256",
            "name": "amy",
            "salt": "c2FsdA==",
            "storedKey": "c3RvcmVk",
            "serverKey": "c2VydmVy",
            "iterations": 4096,
        },
        {
            "mechanism": "SCRAM-SHA-512",
            "name": "zed",
            "salt": "c2FsdA==",
            "storedKey": "c3RvcmVk",
            "serverKey": "c2VydmVy",
            "iterations": 4096,
        },
        {
            "mechanism": "UNKNOWN",
            "name": "bob",
            "salt": "c2FsdA==",
            "storedKey": "c3RvcmVk",
            "serverKey": "c2VydmVy",
            "iterations": 4096,
        },
    ],
    "delegationTokens": [
        {
            "tokenId": "t1",
            "owner": "User:alice",
            "requester": "User:alice",
            "renewers": ["User:bob"],
            "issueTimestamp": 1,
            "maxTimestamp": 100,
            "expirationTimestamp": 50,
        },
        {
            "tokenId": "t2",
            "owner": "User:alice",
            "requester": "User:alice",
            "renewers": [],
            "issueTimestamp": 1,
            "maxTimestamp": 100,
            "expirationTimestamp": 50,
        },
    ],
}


def test_exact_json() -> None:
    document = rich_image().to_json()
    assert document == EXPECTED
    assert json.loads(json.dumps(document)) == document  # plain JSON types only
    assert list(document) == list(EXPECTED)


def test_json_matches_the_schema_model() -> None:
    document = rich_image().to_json()
    assert ImageJson.model_validate(document).model_dump() == document
    assert ImageJson.model_validate(MetadataImage.EMPTY.to_json()).model_dump() == MetadataImage.EMPTY.to_json()
    with pytest.raises(ValidationError):
        ImageJson.model_validate({**document, "extra": 1})
    with pytest.raises(ValidationError):
        ImageJson.model_validate({**document, "offset": "24"})


@pytest.mark.parametrize(("release", "features"), [("3.9", {"metadata.version": 1}), ("4.0", {}), ("4.4", {})])
def test_empty_image_json(release: str, features: dict[str, int]) -> None:
    """Kafka 3.9's empty image holds metadata.version 3.0-IV1; 4.0's FeaturesImage has none (KAFKA-18601)."""
    assert empty_image(rules_for(release)).to_json() == {
        "offset": -1,
        "epoch": -1,
        "timestamp": -1,
        "topics": [],
        "partitions": [],
        "brokers": [],
        "controllers": [],
        "configs": [],
        "features": features,
        "producerIds": {"nextProducerId": -1},
        "clientQuotas": [],
        "acls": [],
        "scram": [],
        "delegationTokens": [],
    }


def test_partitions_sort_by_topic_name_then_partition_id() -> None:
    log = LogBuilder()
    log.batch(topic("z", uuid(1)), topic("m", uuid(2)))
    log.batch(*(partition(uuid(1 + i % 2), p, [1]) for i in range(2) for p in (10, 2, 1)))
    rows = [(p["topic"], p["partitionId"]) for p in replay_to(log.records).to_json()["partitions"]]
    assert rows == [("m", 1), ("m", 2), ("m", 10), ("z", 1), ("z", 2), ("z", 10)]
