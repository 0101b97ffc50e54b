"""The ``toString()`` of Kafka's image classes that the metadata shell prints as file contents, from
kraft-replay's image objects (``BrokerRegistration``, ``ControllerRegistration``, ``PartitionRegistration``,
``StandardAcl``, ``MetadataVersion``), per release line where they differ (:mod:`image.node.releases`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from image.acls import StandardAcl
from image.cluster import SECURITY_PROTOCOLS, BrokerRegistration, ControllerRegistration, Endpoint, VersionRange
from image.features import FeaturesImage
from image.node.java import java_bool, java_list, java_optional, java_order
from image.node.releases import ShellRelease
from image.partition import RECOVERING, PartitionRegistration

SHORT_MAX = (1 << 15) - 1

RESOURCE_TYPES = ("UNKNOWN", "ANY", "TOPIC", "GROUP", "CLUSTER", "TRANSACTIONAL_ID", "DELEGATION_TOKEN", "USER")
PATTERN_TYPES = ("UNKNOWN", "ANY", "MATCH", "LITERAL", "PREFIXED")
ACL_OPERATIONS = (
    "UNKNOWN",
    "ANY",
    "ALL",
    "READ",
    "WRITE",
    "CREATE",
    "DELETE",
    "ALTER",
    "DESCRIBE",
    "CLUSTER_ACTION",
    "DESCRIBE_CONFIGS",
    "ALTER_CONFIGS",
    "IDEMPOTENT_WRITE",
    "CREATE_TOKENS",
    "DESCRIBE_TOKENS",
    "TWO_PHASE_COMMIT",
)
PERMISSION_TYPES = ("UNKNOWN", "ANY", "DENY", "ALLOW")
"""Kafka's ACL enums by code (``ResourceType``, ``PatternType``, ``AclOperation``, ``AclPermissionType``)."""


def _name(names: tuple[str, ...], code: int) -> str:
    return names[code] if 0 <= code < len(names) else "UNKNOWN"


def metadata_version_text(features: FeaturesImage, release: ShellRelease) -> str:
    """``FeaturesImage.metadataVersion().toString()``: ``3.9-IV0`` (3.9), ``Optional[4.1-IV1]`` or, before the first
    metadata.version record, ``Optional.empty`` (4.0+)."""
    level = features.metadata_version_level
    name = None if level is None else features.metadata_version_name or str(level)
    return java_optional(name) if release.optional_metadata_version else str(name)


def _endpoint(e: Endpoint) -> str:
    protocol = SECURITY_PROTOCOLS.get(e.security_protocol) if e.security_protocol is not None else None
    return f"Endpoint(listenerName='{e.name}', securityProtocol={protocol or 'null'}, host='{e.host}', port={e.port})"


def _version_range(v: VersionRange) -> str:
    """``VersionRange.toString()``: ``n``, ``min+`` (up to Short.MAX_VALUE) or ``min-max``."""
    if v.min_supported_version == v.max_supported_version:
        return str(v.min_supported_version)
    if v.max_supported_version == SHORT_MAX:
        return f"{v.min_supported_version}+"
    return f"{v.min_supported_version}-{v.max_supported_version}"


def _listeners_and_features(listeners: Iterable[Endpoint], features: Iterable[VersionRange]) -> str:
    by_name = {e.name: e for e in listeners}
    ranges = {f.name: f for f in features}
    return (
        "listeners=["
        + ", ".join(_endpoint(by_name[n]) for n in sorted(by_name, key=java_order))
        + "], supportedFeatures={"
        + ", ".join(f"{n}: {_version_range(ranges[n])}" for n in sorted(ranges, key=java_order))
        + "}"
    )


def broker_text(broker: BrokerRegistration, release: ShellRelease) -> str:
    """``BrokerRegistration.toString()``."""
    text = (
        f"BrokerRegistration(id={broker.id}, epoch={broker.epoch}, incarnationId={broker.incarnation_id}, "
        + _listeners_and_features(broker.listeners, broker.supported_features)
        + f", rack={java_optional(broker.rack)}, fenced={java_bool(broker.fenced)}, "
        f"inControlledShutdown={java_bool(broker.in_controlled_shutdown)}, "
        f"isMigratingZkBroker={java_bool(broker.is_migrating_zk_broker)}, directories={java_list(broker.directories)}"
    )
    if release.cordoned_directories:
        cordoned = getattr(broker, "cordoned_directories", None)
        text += f", cordonedDirectories={'null' if cordoned is None else java_list(cordoned)}"
    return text + ")"


def controller_text(controller: ControllerRegistration) -> str:
    """``ControllerRegistration.toString()``."""
    return (
        f"ControllerRegistration(id={controller.id}, incarnationId={controller.incarnation_id}, "
        f"zkMigrationReady={java_bool(controller.zk_migration_ready)}, "
        + _listeners_and_features(controller.listeners, controller.supported_features)
        + ")"
    )


def partition_text(p: PartitionRegistration) -> str:
    """``PartitionRegistration.toString()``."""
    recovery = "RECOVERING" if p.leader_recovery_state == RECOVERING else "RECOVERED"
    return (
        f"PartitionRegistration(replicas={java_list(p.replicas)}, directories={java_list(p.directories)}, "
        f"isr={java_list(p.isr)}, removingReplicas={java_list(p.removing_replicas)}, "
        f"addingReplicas={java_list(p.adding_replicas)}, elr={java_list(p.elr)}, "
        f"lastKnownElr={java_list(p.last_known_elr)}, leader={p.leader}, leaderRecoveryState={recovery}, "
        f"leaderEpoch={p.leader_epoch}, partitionEpoch={p.partition_epoch})"
    )


def acl_text(acl: StandardAcl, release: ShellRelease) -> str:
    """``StandardAcl.toString()``: a class's ``StandardAcl(...)`` (3.9 – 4.1), a record's ``StandardAcl[...]``
    (4.2+)."""
    fields: Mapping[str, object] = {
        "resourceType": _name(RESOURCE_TYPES, acl.resource_type),
        "resourceName": acl.resource_name,
        "patternType": _name(PATTERN_TYPES, acl.pattern_type),
        "principal": acl.principal,
        "host": acl.host,
        "operation": _name(ACL_OPERATIONS, acl.operation),
        "permissionType": _name(PERMISSION_TYPES, acl.permission_type),
    }
    body = ", ".join(f"{k}={v}" for k, v in fields.items())
    return f"StandardAcl[{body}]" if release.acl_record else f"StandardAcl({body})"
