"""Random metadata logs for property tests: record bodies, batches, and an image written back as
snapshot records (hypothesis strategies over the builders of :mod:`tests.logbuilder`)."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from image.image import MetadataImage
from image.uuids import MIGRATING
from metadata.log.records import LogRecord
from tests.logbuilder import (
    Body,
    LogBuilder,
    acl,
    broker_change,
    clear_elr,
    client_quota,
    config,
    feature_level,
    fence_broker,
    no_op,
    partition,
    partition_change,
    producer_ids,
    register_broker,
    register_controller,
    remove_acl,
    remove_scram,
    remove_token,
    remove_topic,
    scram,
    token,
    topic,
    unfence_broker,
    unregister_broker,
    uuid,
)

TOPIC_IDS = [uuid(0x100 + i) for i in range(3)]
NAMES = ["a", "b", "c"]
BROKERS = st.integers(1, 3)
DIRS = st.sampled_from([MIGRATING, uuid(501), uuid(502)])
replica_lists = st.lists(BROKERS, min_size=1, max_size=3, unique=True)
small_lists = st.lists(BROKERS, max_size=3, unique=True)


@st.composite
def partition_bodies(draw: st.DrawFn) -> Body:
    replicas = draw(replica_lists)
    return partition(
        draw(st.sampled_from(TOPIC_IDS)),
        draw(st.integers(0, 2)),
        replicas,
        draw(small_lists),
        leader=draw(st.integers(-1, 3)),
        leader_epoch=draw(st.integers(0, 3)),
        partition_epoch=draw(st.integers(0, 3)),
        directories=draw(st.one_of(st.just([]), st.lists(DIRS, min_size=len(replicas), max_size=len(replicas)))),
        elr=draw(st.none() | small_lists),
        last_known_elr=draw(st.none() | small_lists),
        leader_recovery_state=draw(st.sampled_from([None, 1])),
    )


@st.composite
def change_bodies(draw: st.DrawFn) -> Body:
    fields: dict[str, Any] = draw(
        st.fixed_dictionaries(
            {},
            optional={
                "isr": small_lists,
                "leader": st.integers(-1, 3),
                "replicas": replica_lists,
                "directories": st.lists(DIRS, max_size=3),
                "elr": small_lists,
                "last_known_elr": small_lists,
                "leader_recovery_state": st.sampled_from([0, 1]),
            },
        )
    )
    return partition_change(draw(st.sampled_from(TOPIC_IDS)), draw(st.integers(0, 2)), **fields)


names = st.sampled_from(NAMES)
bodies = st.one_of(
    st.builds(topic, names, st.sampled_from(TOPIC_IDS)),
    partition_bodies(),
    change_bodies(),
    change_bodies(),
    st.builds(remove_topic, st.sampled_from(TOPIC_IDS)),
    st.builds(clear_elr, st.sampled_from(["", *NAMES])),
    st.builds(
        config,
        st.sampled_from([2, 4]),
        st.sampled_from(["", *NAMES]),
        st.sampled_from(["k1", "k2"]),
        st.sampled_from([None, "v1", "v2"]),
    ),
    st.builds(
        register_broker,
        BROKERS,
        st.integers(1, 2),
        fenced=st.booleans(),
        log_dirs=st.lists(DIRS, max_size=2, unique=True),
    ),
    st.builds(unregister_broker, BROKERS, st.integers(1, 2)),
    st.builds(
        broker_change,
        BROKERS,
        st.integers(1, 2),
        fenced=st.sampled_from([-1, 0, 1]),
        in_controlled_shutdown=st.sampled_from([0, 1]),
        log_dirs=st.lists(DIRS, max_size=2, unique=True),
    ),
    st.builds(fence_broker, BROKERS, st.integers(1, 2)),
    st.builds(unfence_broker, BROKERS, st.integers(1, 2)),
    st.builds(register_controller, st.integers(3000, 3001)),
    st.builds(acl, st.sampled_from([uuid(1), uuid(2)]), operation=st.integers(0, 20)),
    st.builds(remove_acl, st.sampled_from([uuid(1), uuid(2)])),
    st.builds(scram, names, st.integers(0, 3)),
    st.builds(remove_scram, names, st.integers(0, 3)),
    st.builds(token, names),
    st.builds(remove_token, names),
    st.builds(
        client_quota,
        st.fixed_dictionaries({"user": st.none() | names}),
        st.sampled_from(["q1", "q2"]),
        st.floats(0, 10),
        remove=st.booleans(),
    ),
    st.builds(feature_level, st.sampled_from(["group.version", "metadata.version"]), st.integers(0, 3)),
    st.builds(producer_ids, st.integers(0, 10_000)),
    st.builds(no_op),
)
batch_lists = st.lists(st.lists(bodies, min_size=1, max_size=5) | st.just([]), min_size=1, max_size=12)


def build_log(batches: list[list[Body]]) -> list[LogRecord]:
    """Empty lists become LEADER_CHANGE control batches with a new epoch."""
    log = LogBuilder()
    for batch in batches:
        if batch:
            log.batch(*batch)
        else:
            log.control("LEADER_CHANGE", epoch=log.epoch + 1)
    return log.records


def snapshot_bodies(image: MetadataImage) -> list[Body]:
    """The image written as snapshot records (like Kafka's ImageWriter)."""
    level = image.features.metadata_version_level
    out: list[Body] = [] if level is None else [feature_level("metadata.version", level)]
    out += [feature_level(name, level) for name, level in image.features.finalized_versions.items()]
    out.append(("ZK_MIGRATION_STATE_RECORD", {"zkMigrationState": image.features.zk_migration_state}))
    for b in image.cluster.brokers.values():
        json = b.to_json()
        out.append(
            register_broker(
                b.id,
                b.epoch,
                incarnation_id=b.incarnation_id,
                fenced=b.fenced,
                in_controlled_shutdown=b.in_controlled_shutdown,
                rack=b.rack,
                endpoints=json["endPoints"],
                features=json["features"],
                log_dirs=b.directories,
            )
        )
    for c in image.cluster.controllers.values():
        json = c.to_json()
        out.append(
            register_controller(
                c.id,
                incarnation_id=c.incarnation_id,
                zk_migration_ready=c.zk_migration_ready,
                endpoints=json["endPoints"],
                features=json["features"],
            )
        )
    for t in image.topics.topics_by_id.values():
        out.append(topic(t.name, t.id))
        for pid, p in t.partitions.items():
            out.append(
                partition(
                    t.id,
                    pid,
                    p.replicas,
                    p.isr,
                    leader=p.leader,
                    leader_epoch=p.leader_epoch,
                    partition_epoch=p.partition_epoch,
                    directories=p.directories,
                    removing=p.removing_replicas,
                    adding=p.adding_replicas,
                    leader_recovery_state=p.leader_recovery_state,
                    elr=p.elr,
                    last_known_elr=p.last_known_elr,
                )
            )
    types = {"TOPIC": 2, "BROKER": 4}
    for resource, data in image.configs.resource_data.items():
        out += [config(types[resource.type], resource.name, key, value) for key, value in data.items()]
    for entity, quotas in image.client_quotas.entities.items():
        out += [client_quota(dict(entity), key, value) for key, value in quotas.items()]
    out.append(producer_ids(image.producer_ids.next_producer_id))
    for acl_id, a in image.acls.acls.items():
        out.append(
            acl(
                acl_id,
                resource_type=a.resource_type,
                resource_name=a.resource_name,
                pattern_type=a.pattern_type,
                principal=a.principal,
                host=a.host,
                operation=a.operation,
                permission_type=a.permission_type,
            )
        )
    for mechanism, users in image.scram.mechanisms.items():
        for user, credential in users.items():
            out.append(scram(user, mechanism, salt=credential.salt, iterations=credential.iterations))
    for t in image.delegation_tokens.tokens.values():
        out.append(
            token(
                t.token_id,
                owner=t.owner,
                requester=t.requester,
                renewers=t.renewers,
                issue=t.issue_timestamp,
                max_timestamp=t.max_timestamp,
                expiration=t.expiration_timestamp,
            )
        )
    return out
