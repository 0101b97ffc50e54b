"""Configs, features, producer ids, client quotas, ACLs, SCRAM and delegation tokens."""

from __future__ import annotations

from dataclasses import replace

import pytest

from image.acls import StandardAcl
from image.configs import ConfigResource
from image.delta import MetadataDelta
from image.errors import ReplayError
from image.image import MetadataImage, empty_image
from image.release import rules_for
from image.replay import replay_to
from image.scram import ScramCredentialData
from tests.logbuilder import (
    LogBuilder,
    acl,
    client_quota,
    config,
    feature_level,
    producer_ids,
    remove_acl,
    remove_scram,
    remove_token,
    scram,
    token,
    uuid,
    zk_migration_state,
)

Body = tuple[str, dict[str, object]]


def batches(*batches: list[Body] | Body, release: str | None = None) -> MetadataImage:
    """Replay under the rules of Kafka ``release`` (default the newest); each argument is one batch (a body or a
    list of bodies)."""
    log = LogBuilder()
    for batch in batches:
        log.batch(*(batch if isinstance(batch, list) else [batch]))
    return replay_to(log.records, rules=rules_for(release))


def test_configs_set_overwrite_and_delete_by_null() -> None:
    image = batches(
        config(4, "", "log.retention.ms", "10"),
        config(4, "1", "log.retention.ms", "20"),
        [config(4, "1", "log.retention.ms", "30"), config(4, "1", "num.io.threads", "8")],
        config(4, "", "log.retention.ms", None),
    )
    assert image.configs.resource_data == {
        ConfigResource("BROKER", "1"): {"log.retention.ms": "30", "num.io.threads": "8"}
    }


def test_configs_resource_types_and_unknown() -> None:
    """Every resource type id (any other is UNKNOWN), under Kafka 4.1's rules: 4.2.1+ keep only supported names
    (tests/test_image_releases.py)."""
    image = batches([config(t, "x", "k", str(t)) for t in (2, 8, 16, 32, 0, 99)], release="4.1")
    assert {r.type: v["k"] for r, v in image.configs.resource_data.items()} == {
        "TOPIC": "2",
        "BROKER_LOGGER": "8",
        "CLIENT_METRICS": "16",
        "GROUP": "32",
        "UNKNOWN": "99",  # 0 and 99 are the same resource; the later value wins
    }


def test_features_set_and_level_zero_removes() -> None:
    image = batches(feature_level("group.version", 1), [feature_level("transaction.version", 2)])
    assert image.features.finalized_versions == {"group.version": 1, "transaction.version": 2}
    image = batches(feature_level("group.version", 1), feature_level("group.version", 0))
    assert image.features.finalized_versions == {}


def test_metadata_version_is_kept_apart() -> None:
    empty = MetadataImage.EMPTY.features
    assert (empty.metadata_version_level, empty.metadata_version_name) == (None, None)
    old_empty = empty_image(rules_for("3.9")).features
    assert (old_empty.metadata_version_level, old_empty.metadata_version_name) == (1, "3.0-IV1")
    image = batches(feature_level("metadata.version", 22))
    assert image.features.finalized_versions == {}
    assert (image.features.metadata_version_level, image.features.metadata_version_name) == (22, "4.0-IV0")
    assert batches(feature_level("metadata.version", 33)).features.metadata_version_name == "4.4-IV2"
    newer = batches(feature_level("metadata.version", 40))  # a newer Kafka's level: kept raw (deviation)
    assert (newer.features.metadata_version_level, newer.features.metadata_version_name) == (40, None)
    with pytest.raises(ReplayError, match="No MetadataVersion with feature level 0"):
        batches(feature_level("metadata.version", 0), release="3.9")
    assert batches(feature_level("metadata.version", 6), release="3.9").features.metadata_version_level == 6
    with pytest.raises(ReplayError, match=r"Unsupported metadata version .* set to 3\.3-IV3 .* feature level 6\."):
        batches(feature_level("metadata.version", 6), release="4.0")


def test_kraft_version_feature_level_records_are_skipped_from_kafka_4_0() -> None:
    """KAFKA-18979: Kafka 4.0+ skips a FeatureLevelRecord for kraft.version; 3.9 keeps it as a feature."""
    assert batches(feature_level("kraft.version", 1), release="3.9").features.finalized_versions == {"kraft.version": 1}
    assert batches(feature_level("kraft.version", 1), release="4.0").features.finalized_versions == {}


def test_metadata_version_change_creates_every_sub_delta() -> None:
    delta = MetadataDelta(MetadataImage.EMPTY)
    delta.replay(LogBuilder().batch(feature_level("metadata.version", 14))[0])
    assert not delta.is_empty and delta.topics_delta is not None and delta.metadata_version_changed == 14
    assert delta.apply(MetadataImage.EMPTY.provenance).topics == MetadataImage.EMPTY.topics


def test_zk_migration_state() -> None:
    """Kafka 3.9 validates and keeps the ZooKeeper migration state; 4.0 replays the record as a no-op."""
    assert batches(zk_migration_state(3), release="3.9").features.zk_migration_state_name == "POST_MIGRATION"
    with pytest.raises(ReplayError, match="not a valid Zk migration state"):
        batches(zk_migration_state(5), release="3.9")
    no_op = batches(zk_migration_state(3), zk_migration_state(5), release="4.0")
    assert replace(no_op, provenance=MetadataImage.EMPTY.provenance) == MetadataImage.EMPTY


def test_producer_ids_last_record_wins() -> None:
    assert MetadataImage.EMPTY.producer_ids.next_producer_id == -1
    assert batches(producer_ids(1000), producer_ids(2000), producer_ids(500)).producer_ids.next_producer_id == 500


def test_client_quotas_set_remove_and_default_entity() -> None:
    user = {"user": "alice"}
    default_user = {"user": None}
    both = {"user": "alice", "client-id": "app"}
    image = batches(
        client_quota(user, "producer_byte_rate", 100),
        client_quota(default_user, "consumer_byte_rate", 5),
        client_quota({"client-id": "app", "user": "alice"}, "request_percentage", 12.5),
        client_quota(user, "consumer_byte_rate", 7),
        client_quota(user, "producer_byte_rate", remove=True),
    )
    entities = image.client_quotas.entities
    assert entities[(("user", "alice"),)] == {"consumer_byte_rate": 7.0}
    assert entities[(("user", None),)] == {"consumer_byte_rate": 5.0}
    assert entities[tuple(sorted(both.items()))] == {"request_percentage": 12.5}
    image = batches(client_quota(user, "k", 1), client_quota(user, "k", remove=True))
    assert image.client_quotas.entities == {}  # empty entities are dropped


def test_acls_add_replace_remove() -> None:
    a1, a2 = uuid(1), uuid(2)
    image = batches(acl(a1), acl(a2, operation=4), acl(a1, principal="User:bob", operation=99), remove_acl(a2))
    assert image.acls.acls == {a1: StandardAcl(2, "t", 3, "User:bob", "*", 0, 3)}  # unknown code -> UNKNOWN
    assert batches([acl(a1), remove_acl(a1)]).acls.acls == {}  # added and removed in one delta


def test_acl_remove_unknown_is_an_error() -> None:
    with pytest.raises(ReplayError, match=f"Failed to find existing ACL with ID {uuid(3)} in either image or changes"):
        batches(acl(uuid(1)), remove_acl(uuid(3)))


def test_scram_credentials() -> None:
    image = batches(scram("alice"), scram("bob", 2), [scram("carol", 7)], scram("alice", iterations=8192))
    mechanisms = image.scram.mechanisms
    assert set(mechanisms) == {0, 1, 2}  # unknown mechanism kept as UNKNOWN (0)
    assert mechanisms[1]["alice"] == ScramCredentialData("c2FsdA==", "c3RvcmVk", "c2VydmVy", 8192)
    image = batches(scram("alice"), remove_scram("alice"), remove_scram("nobody", 2))
    assert image.scram.mechanisms == {}


def test_scram_remove_and_add_in_one_delta_uses_intended_semantics() -> None:
    image = batches(scram("bob"), [remove_scram("bob"), scram("alice")])
    assert set(image.scram.mechanisms[1]) == {"alice"}


def test_delegation_tokens() -> None:
    image = batches(token("t1"), token("t2", renewers=[]), remove_token("t1"), remove_token("missing"))
    assert list(image.delegation_tokens.tokens) == ["t2"]
    assert image.delegation_tokens.tokens["t2"].owner == "User:alice"


@pytest.mark.parametrize(
    "body",
    [token("t", owner="alice"), token("t", requester=""), token("t", renewers=["User:x", "bob"])],
)
def test_delegation_token_with_malformed_principal(body: Body) -> None:
    with pytest.raises(ReplayError, match="expected a string in format principalType:principalName"):
        batches(body)
