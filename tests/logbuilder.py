"""Builders of metadata logs as LogRecords, for tests of the engines.

Record bodies are ``(type, data)`` pairs in the JSON-converter shape (camelCase, tagged fields
only when given). :class:`LogBuilder` assigns consecutive offsets and groups bodies into batches.
:func:`append_batch` and :func:`insert_into_snapshot` write records, encoded, into real log files.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from metadata.log.codec.batch import Record, decode_batch, encode_batch, encode_record_batch
from metadata.log.codec.primitives import uvarint
from metadata.log.codec.records import encode_metadata_value
from metadata.log.records import LogRecord

Body = tuple[str, dict[str, Any]]
VersionedBody = tuple[str, dict[str, Any], int]
"""A body with its record version (a plain :data:`Body` is version 0)."""


def uuid(n: int) -> str:
    """The Kafka Uuid string of the 128-bit number ``n`` (0 = MIGRATING, 1 = UNASSIGNED, ...)."""
    return base64.urlsafe_b64encode(n.to_bytes(16, "big")).decode().rstrip("=")


class LogBuilder:
    """Appends batches with consecutive offsets; every batch has one epoch and append time."""

    def __init__(self, start_offset: int = 0, epoch: int = 1, timestamp: int = 1000) -> None:
        self.records: list[LogRecord] = []
        self.next_offset = start_offset
        self.epoch = epoch
        self.timestamp = timestamp

    def batch(
        self, *bodies: Body | VersionedBody, epoch: int | None = None, timestamp: int | None = None
    ) -> list[LogRecord]:
        """One data batch; the time advances by 1 ms per batch unless given."""
        return self._append([(b[0], b[1], b[2] if len(b) > 2 else 0, None) for b in bodies], epoch, timestamp)

    def control(self, control_type: str, data: dict[str, Any] | None = None, *, epoch: int | None = None) -> LogRecord:
        """A control batch of one record (e.g. LEADER_CHANGE; a new epoch starts with one)."""
        return self._append([(None, data or {}, 0, control_type)], epoch, None)[0]

    def _append(
        self,
        items: Sequence[tuple[str | None, dict[str, Any], int, str | None]],
        epoch: int | None,
        timestamp: int | None,
    ) -> list[LogRecord]:
        if epoch is not None:
            self.epoch = epoch
        self.timestamp = self.timestamp + 1 if timestamp is None else timestamp
        base, last = self.next_offset, self.next_offset + len(items) - 1
        batch = [
            LogRecord(base + i, base, last, self.epoch, self.timestamp, kind, version, data, control_type)
            for i, (kind, data, version, control_type) in enumerate(items)
        ]
        self.records.extend(batch)
        self.next_offset = last + 1
        return batch


def _tagged(data: dict[str, Any], **fields: Any) -> dict[str, Any]:
    data.update({name: value for name, value in fields.items() if value is not None})
    return data


def topic(name: str, topic_id: str) -> Body:
    return "TOPIC_RECORD", {"name": name, "topicId": topic_id}


def partition(
    topic_id: str,
    partition_id: int,
    replicas: Sequence[int],
    isr: Sequence[int] | None = None,
    *,
    leader: int | None = None,
    leader_epoch: int = 0,
    partition_epoch: int = 0,
    directories: Sequence[str] = (),
    removing: Sequence[int] = (),
    adding: Sequence[int] = (),
    leader_recovery_state: int | None = None,
    elr: Sequence[int] | None = None,
    last_known_elr: Sequence[int] | None = None,
) -> Body:
    """PartitionRecord (v1 layout; ELR tags when given); leader defaults to the first replica."""
    data = {
        "partitionId": partition_id,
        "topicId": topic_id,
        "replicas": list(replicas),
        "isr": list(replicas if isr is None else isr),
        "removingReplicas": list(removing),
        "addingReplicas": list(adding),
        "leader": (replicas[0] if replicas else -1) if leader is None else leader,
        "leaderEpoch": leader_epoch,
        "partitionEpoch": partition_epoch,
        "directories": list(directories),
    }
    return "PARTITION_RECORD", _tagged(
        data,
        leaderRecoveryState=leader_recovery_state,
        eligibleLeaderReplicas=None if elr is None else list(elr),
        lastKnownElr=None if last_known_elr is None else list(last_known_elr),
    )


def partition_change(
    topic_id: str,
    partition_id: int,
    *,
    isr: Sequence[int] | None = None,
    leader: int | None = None,
    replicas: Sequence[int] | None = None,
    removing: Sequence[int] | None = None,
    adding: Sequence[int] | None = None,
    leader_recovery_state: int | None = None,
    directories: Sequence[str] | None = None,
    elr: Sequence[int] | None = None,
    last_known_elr: Sequence[int] | None = None,
) -> Body:
    """PartitionChangeRecord; only the given fields are present (absent = at its default)."""

    def listed(values: Sequence[Any] | None) -> list[Any] | None:
        return None if values is None else list(values)

    return "PARTITION_CHANGE_RECORD", _tagged(
        {"partitionId": partition_id, "topicId": topic_id},
        isr=listed(isr),
        leader=leader,
        replicas=listed(replicas),
        removingReplicas=listed(removing),
        addingReplicas=listed(adding),
        leaderRecoveryState=leader_recovery_state,
        directories=listed(directories),
        eligibleLeaderReplicas=listed(elr),
        lastKnownElr=listed(last_known_elr),
    )


def remove_topic(topic_id: str) -> Body:
    return "REMOVE_TOPIC_RECORD", {"topicId": topic_id}


def clear_elr(topic_name: str = "") -> Body:
    return "CLEAR_ELR_RECORD", {"topicName": topic_name}


def register_broker(
    broker_id: int,
    epoch: int,
    *,
    incarnation_id: str | None = None,
    fenced: bool = True,
    in_controlled_shutdown: bool = False,
    rack: str | None = None,
    endpoints: Sequence[dict[str, Any]] | None = None,
    features: Sequence[dict[str, Any]] | None = None,
    log_dirs: Sequence[str] = (),
    is_migrating_zk_broker: bool = False,
) -> Body:
    """RegisterBrokerRecord v3 (LogDirs tag only when non-empty; v4 with :func:`cordoned`)."""
    data: dict[str, Any] = {
        "brokerId": broker_id,
        "isMigratingZkBroker": is_migrating_zk_broker,
        "incarnationId": incarnation_id or uuid(1000 + broker_id),
        "brokerEpoch": epoch,
        "endPoints": list(
            endpoints
            if endpoints is not None
            else [{"name": "PLAINTEXT", "host": f"b{broker_id}", "port": 9092, "securityProtocol": 0}]
        ),
        "features": list(
            features
            if features is not None
            else [{"name": "metadata.version", "minSupportedVersion": 1, "maxSupportedVersion": 22}]
        ),
        "rack": rack,
        "fenced": fenced,
        "inControlledShutdown": in_controlled_shutdown,
    }
    return "REGISTER_BROKER_RECORD", _tagged(data, logDirs=list(log_dirs) or None)


def unregister_broker(broker_id: int, epoch: int) -> Body:
    return "UNREGISTER_BROKER_RECORD", {"brokerId": broker_id, "brokerEpoch": epoch}


def fence_broker(broker_id: int, epoch: int) -> Body:
    return "FENCE_BROKER_RECORD", {"id": broker_id, "epoch": epoch}


def unfence_broker(broker_id: int, epoch: int) -> Body:
    return "UNFENCE_BROKER_RECORD", {"id": broker_id, "epoch": epoch}


def broker_change(
    broker_id: int,
    epoch: int,
    *,
    fenced: int = 0,
    in_controlled_shutdown: int = 0,
    log_dirs: Sequence[str] = (),
) -> Body:
    """BrokerRegistrationChangeRecord v2 (tags only when not at their defaults; v3 with :func:`cordoned`)."""
    return "BROKER_REGISTRATION_CHANGE_RECORD", _tagged(
        {"brokerId": broker_id, "brokerEpoch": epoch},
        fenced=fenced or None,
        inControlledShutdown=in_controlled_shutdown or None,
        logDirs=list(log_dirs) or None,
    )


def register_controller(
    controller_id: int,
    *,
    incarnation_id: str | None = None,
    zk_migration_ready: bool = False,
    endpoints: Sequence[dict[str, Any]] | None = None,
    features: Sequence[dict[str, Any]] = (),
) -> Body:
    return "REGISTER_CONTROLLER_RECORD", {
        "controllerId": controller_id,
        "incarnationId": incarnation_id or uuid(2000 + controller_id),
        "zkMigrationReady": zk_migration_ready,
        "endPoints": list(
            endpoints
            if endpoints is not None
            else [{"name": "CONTROLLER", "host": f"c{controller_id}", "port": 9093, "securityProtocol": 0}]
        ),
        "features": list(features),
    }


def unregister_controller(controller_id: int) -> Body:
    """UnregisterControllerRecord (Kafka 4.4)."""
    return "UNREGISTER_CONTROLLER_RECORD", {"controllerId": controller_id}


_CORDONED_VERSIONS = {"REGISTER_BROKER_RECORD": 4, "BROKER_REGISTRATION_CHANGE_RECORD": 3}


def cordoned(body: Body, log_dirs: Sequence[str] | None) -> VersionedBody:
    """A broker registration (v4) or registration change (v3) body of Kafka 4.3+ with its CordonedLogDirs
    (None: the tag absent)."""
    kind, data = body
    return (
        kind,
        _tagged(dict(data), cordonedLogDirs=None if log_dirs is None else list(log_dirs)),
        _CORDONED_VERSIONS[kind],
    )


def config(resource_type: int, resource_name: str, name: str, value: str | None) -> Body:
    """ConfigRecord (resource type id: 2 TOPIC, 4 BROKER, ...; value None deletes)."""
    return "CONFIG_RECORD", {"resourceType": resource_type, "resourceName": resource_name, "name": name, "value": value}


def feature_level(name: str, level: int) -> Body:
    return "FEATURE_LEVEL_RECORD", {"name": name, "featureLevel": level}


def zk_migration_state(state: int) -> Body:
    return "ZK_MIGRATION_STATE_RECORD", {"zkMigrationState": state}


def producer_ids(next_producer_id: int, broker_id: int = 1, broker_epoch: int = 10) -> Body:
    return "PRODUCER_IDS_RECORD", {
        "brokerId": broker_id,
        "brokerEpoch": broker_epoch,
        "nextProducerId": next_producer_id,
    }


def client_quota(entity: dict[str, str | None], key: str, value: float = 0.0, *, remove: bool = False) -> Body:
    return "CLIENT_QUOTA_RECORD", {
        "entity": [{"entityType": t, "entityName": n} for t, n in entity.items()],
        "key": key,
        "value": value,
        "remove": remove,
    }


def acl(
    acl_id: str,
    *,
    resource_type: int = 2,
    resource_name: str = "t",
    pattern_type: int = 3,
    principal: str = "User:alice",
    host: str = "*",
    operation: int = 3,
    permission_type: int = 3,
) -> Body:
    return "ACCESS_CONTROL_ENTRY_RECORD", {
        "id": acl_id,
        "resourceType": resource_type,
        "resourceName": resource_name,
        "patternType": pattern_type,
        "principal": principal,
        "host": host,
        "operation": operation,
        "permissionType": permission_type,
    }


def remove_acl(acl_id: str) -> Body:
    return "REMOVE_ACCESS_CONTROL_ENTRY_RECORD", {"id": acl_id}


def scram(name: str, mechanism: int = 1, *, salt: str = "c2FsdA==", iterations: int = 4096) -> Body:
    return "USER_SCRAM_CREDENTIAL_RECORD", {
        "name": name,
        "mechanism": mechanism,
        "salt": salt,
        "storedKey": "c3RvcmVk",
        "serverKey": "c2VydmVy",
        "iterations": iterations,
    }


def remove_scram(name: str, mechanism: int = 1) -> Body:
    return "REMOVE_USER_SCRAM_CREDENTIAL_RECORD", {"name": name, "mechanism": mechanism}


def token(
    token_id: str,
    *,
    owner: str = "User:alice",
    requester: str = "User:alice",
    renewers: Sequence[str] = ("User:bob",),
    issue: int = 1,
    max_timestamp: int = 100,
    expiration: int = 50,
) -> Body:
    return "DELEGATION_TOKEN_RECORD", {
        "owner": owner,
        "requester": requester,
        "renewers": list(renewers),
        "issueTimestamp": issue,
        "maxTimestamp": max_timestamp,
        "expirationTimestamp": expiration,
        "tokenId": token_id,
    }


def remove_token(token_id: str) -> Body:
    return "REMOVE_DELEGATION_TOKEN_RECORD", {"tokenId": token_id}


def no_op() -> Body:
    return "NO_OP_RECORD", {}


def begin(name: str | None = None) -> Body:
    return "BEGIN_TRANSACTION_RECORD", _tagged({}, name=name)


def end() -> Body:
    return "END_TRANSACTION_RECORD", {}


def abort(reason: str | None = None) -> Body:
    return "ABORT_TRANSACTION_RECORD", _tagged({}, reason=reason)


def encoded(kind: str, data: dict[str, Any], version: int = 0) -> bytes:
    """A record value: a body (``kind``, ``data``) at ``version``."""
    return encode_metadata_value(kind, version, data)


def future_value(api_key: int, version: int, body: bytes = b"\x00") -> bytes:
    """The value of a record of a type or version the schema does not know (a newer Kafka's): Kafka's frame,
    then ``body`` (by default a struct with no field and no tagged field)."""
    return uvarint(1) + uvarint(api_key) + uvarint(version) + body


def _batches(path: Path) -> list:
    buf, pos, out = path.read_bytes(), 0, []
    while pos < len(buf):
        batch, pos = decode_batch(buf, pos)
        out.append(batch)
    return out


def append_batch(log_dir: Path, values: Sequence[bytes]) -> int:
    """One batch of the record ``values`` appended to the last segment under ``log_dir`` (a
    ``__cluster_metadata-0`` directory), as its leader would: the offsets after its last batch, that batch's
    epoch, 1 ms later. The first offset appended."""
    segment = sorted(log_dir.glob("*.log"))[-1]
    last = _batches(segment)[-1]
    first = last.last_offset + 1
    raw = encode_batch(
        first, [(None, v) for v in values], leader_epoch=last.partition_leader_epoch, timestamp=last.max_timestamp + 1
    )
    with segment.open("ab") as out:
        out.write(raw)
    return first


def insert_into_snapshot(snapshot: Path, value: bytes) -> int:
    """The record ``value`` appended to the last data batch of a snapshot file (the batches after it, the
    footer's, move one position on); its position."""
    batches = _batches(snapshot)
    data = [b for b in batches if not b.is_control][-1]
    position = data.last_offset + 1
    data.records.append(Record(offset_delta=data.last_offset_delta + 1, value=value))
    data.last_offset_delta += 1
    for b in batches:
        if b.base_offset > data.base_offset:
            b.base_offset += 1
    snapshot.write_bytes(b"".join(encode_record_batch(b) for b in batches))
    return position
