"""Kafka's ``org.apache.kafka.image.node``: the image as a tree of directories and files, node for node, as Kafka's
metadata shell browses it (``/image/topics/byName/orders/0``, ``/image/cluster/brokers/3``, …).

A directory lists its children's names (in any order: every consumer sorts them, :func:`image.node.java.java_sorted`)
and gives a child by name — parsing the name as Kafka does, so ``/image/cluster/brokers/+1`` is broker 1 — or None.
A file prints its text, the ``toString()`` of Kafka's object (:mod:`image.node.texts`). ``to_json`` gives a node as
data: a directory as ``{name: child}``, a file as the image JSON's value of what it shows."""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterable, Mapping
from typing import Any, ClassVar, Protocol

from image.acls import AclsImage
from image.client_quotas import ClientQuotaEntity, ClientQuotasImage
from image.cluster import ClusterImage
from image.configs import RESOURCE_TYPES, ConfigResource, ConfigurationsImage
from image.delegation_tokens import DelegationTokenData, DelegationTokenImage
from image.features import FeaturesImage
from image.image import MetadataImage
from image.node.java import JavaException, java_double, java_sorted, parse_int, uuid_from_string, zoned_utc
from image.node.releases import ShellRelease
from image.node.texts import acl_text, broker_text, controller_text, metadata_version_text, partition_text
from image.parts import scram_row
from image.provenance import MetadataProvenance
from image.scram import SCRAM_MECHANISMS, ScramCredentialData, ScramImage
from image.topics import TopicImage, TopicsImage

PACKAGE = "org.apache.kafka.image.node"


class MetadataNodePrinter(Protocol):
    """Kafka's ``MetadataNodePrinter``: what ``print`` walks a node's subtree into."""

    def enter_node(self, name: str) -> None: ...

    def leave_node(self) -> None: ...

    def output(self, text: str) -> None: ...


class MetadataNode:
    """Kafka's ``MetadataNode``: a directory unless a subclass says otherwise."""

    JAVA_CLASS: ClassVar[str] = f"{PACKAGE}.MetadataNode"
    """The Java class this node mirrors (Kafka names it in some errors)."""

    release: ShellRelease

    def is_directory(self) -> bool:
        return True

    def child_names(self) -> Iterable[str]:
        return ()

    def child(self, name: str) -> MetadataNode | None:
        return None

    def print(self, printer: MetadataNodePrinter) -> None:
        """Every child by name (in Java's string order), entered, printed and left."""
        for name in java_sorted(self.child_names()):
            printer.enter_node(name)
            child = self.child(name)
            if child is not None:
                child.print(printer)
            elif not self.release.print_skips_missing_child:
                raise JavaException(
                    'Cannot invoke "org.apache.kafka.image.node.MetadataNode.print(org.apache.kafka.image.node.'
                    'printer.MetadataNodePrinter)" because "child" is null'
                )
            printer.leave_node()

    def to_json(self) -> Any:
        """This node as data: a directory as ``{name: child}`` (Java's order; a listed child that is missing is
        left out), a file as its value."""
        out = {}
        for name in java_sorted(self.child_names()):
            child = self.child(name)
            if child is not None:
                out[name] = child.to_json()
        return out


class MetadataLeafNode(MetadataNode):
    """Kafka's ``MetadataLeafNode``: a file holding ``text``; ``value`` is what it shows, as data."""

    JAVA_CLASS = f"{PACKAGE}.MetadataLeafNode"

    def __init__(self, text: str, value: Any = None) -> None:
        self.text = text
        self.value = text if value is None else value

    def is_directory(self) -> bool:
        return False

    def print(self, printer: MetadataNodePrinter) -> None:
        printer.output(self.text)

    def to_json(self) -> Any:
        return self.value


class _Directory(MetadataNode):
    """A directory node of a release line; ``CHILDREN``: the names of a directory whose children are fixed."""

    CHILDREN: ClassVar[tuple[str, ...]] = ()

    def __init__(self, release: ShellRelease) -> None:
        self.release = release

    def child_names(self) -> Iterable[str]:
        return self.CHILDREN


class MetadataImageNode(_Directory):
    """``/image``."""

    NAME = "image"
    JAVA_CLASS = f"{PACKAGE}.MetadataImageNode"

    def __init__(self, image: MetadataImage, release: ShellRelease, zk_migration_state: Callable[[], str]) -> None:
        super().__init__(release)
        self.image = image
        self.zk_migration_state = zk_migration_state
        self._children: dict[str, Callable[[], MetadataNode]] = {
            ProvenanceNode.NAME: lambda: ProvenanceNode(image.provenance),
            FeaturesImageNode.NAME: lambda: FeaturesImageNode(image.features, release, zk_migration_state),
            ClusterImageNode.NAME: lambda: ClusterImageNode(image.cluster, release),
            TopicsImageNode.NAME: lambda: TopicsImageNode(image.topics, release),
            ConfigurationsImageNode.NAME: lambda: ConfigurationsImageNode(image.configs, release),
            ClientQuotasImageNode.NAME: lambda: ClientQuotasImageNode(image.client_quotas, release),
            ProducerIdsImageNode.NAME: lambda: ProducerIdsImageNode(image.producer_ids.next_producer_id, release),
            AclsImageNode.NAME: lambda: AclsImageNode(image.acls, release),
            ScramImageNode.NAME: lambda: ScramImageNode(image.scram, release),
            DelegationTokenImageNode.NAME: lambda: DelegationTokenImageNode(image.delegation_tokens, release),
        }

    def child_names(self) -> Iterable[str]:
        return self._children

    def child(self, name: str) -> MetadataNode | None:
        make = self._children.get(name)
        return None if make is None else make()


class ProvenanceNode(MetadataNode):
    """``/image/provenance``: ``offset N, epoch E, time <ISO zoned date-time, UTC>``."""

    NAME = "provenance"
    JAVA_CLASS = f"{PACKAGE}.ProvenanceNode"

    def __init__(self, provenance: MetadataProvenance) -> None:
        self.provenance = provenance

    def is_directory(self) -> bool:
        return False

    def print(self, printer: MetadataNodePrinter) -> None:
        p = self.provenance
        printer.output(
            f"offset {p.last_contained_offset}, epoch {p.last_contained_epoch}, "
            f"time {zoned_utc(p.last_contained_log_time_ms)}"
        )

    def to_json(self) -> Any:
        p = self.provenance
        return {
            "offset": p.last_contained_offset,
            "epoch": p.last_contained_epoch,
            "timestamp": p.last_contained_log_time_ms,
        }


class FeaturesImageNode(_Directory):
    """``/image/features``: ``metadataVersion``, ``zkMigrationState`` (per release line), ``finalized_<feature>``."""

    NAME = "features"
    JAVA_CLASS = f"{PACKAGE}.FeaturesImageNode"
    METADATA_VERSION = "metadataVersion"
    ZK_MIGRATION_STATE = "zkMigrationState"
    FINALIZED_PREFIX = "finalized_"

    def __init__(self, image: FeaturesImage, release: ShellRelease, zk_migration_state: Callable[[], str]) -> None:
        super().__init__(release)
        self.image = image
        self.zk_migration_state = zk_migration_state

    def child_names(self) -> Iterable[str]:
        names = [self.METADATA_VERSION]
        if self.release.zk_migration_state != "absent":
            names.append(self.ZK_MIGRATION_STATE)
        names.extend(self.FINALIZED_PREFIX + name for name in self.image.finalized_versions)
        return names

    def child(self, name: str) -> MetadataNode | None:
        if name == self.METADATA_VERSION:
            level = self.image.metadata_version_level
            text = metadata_version_text(self.image, self.release)
            return MetadataLeafNode(text, {"level": level, "text": text})
        if name == self.ZK_MIGRATION_STATE and self.release.zk_migration_state == "shown":
            return MetadataLeafNode(self.zk_migration_state())
        if name.startswith(self.FINALIZED_PREFIX):
            level = self.image.finalized_versions.get(name[len(self.FINALIZED_PREFIX) :], 0)
            return MetadataLeafNode(str(level), level)
        return None


class ClusterImageNode(_Directory):
    """``/image/cluster``."""

    NAME = "cluster"
    JAVA_CLASS = f"{PACKAGE}.ClusterImageNode"
    CHILDREN = ("brokers", "controllers")

    def __init__(self, image: ClusterImage, release: ShellRelease) -> None:
        super().__init__(release)
        self.image = image

    def child(self, name: str) -> MetadataNode | None:
        if name == "brokers":
            return ClusterImageBrokersNode(self.image, self.release)
        if name == "controllers":
            return ClusterImageControllersNode(self.image, self.release)
        return None


class ClusterImageBrokersNode(_Directory):
    """``/image/cluster/brokers/<id>``: ``BrokerRegistration``."""

    JAVA_CLASS = f"{PACKAGE}.ClusterImageBrokersNode"

    def __init__(self, image: ClusterImage, release: ShellRelease) -> None:
        super().__init__(release)
        self.image = image

    def child_names(self) -> Iterable[str]:
        return [str(broker_id) for broker_id in self.image.brokers]

    def child(self, name: str) -> MetadataNode | None:
        broker_id = parse_int(name)
        broker = None if broker_id is None else self.image.brokers.get(broker_id)
        return None if broker is None else MetadataLeafNode(broker_text(broker, self.release), broker.to_json())


class ClusterImageControllersNode(_Directory):
    """``/image/cluster/controllers/<id>``: ``ControllerRegistration``."""

    JAVA_CLASS = f"{PACKAGE}.ClusterImageControllersNode"

    def __init__(self, image: ClusterImage, release: ShellRelease) -> None:
        super().__init__(release)
        self.image = image

    def child_names(self) -> Iterable[str]:
        return [str(controller_id) for controller_id in self.image.controllers]

    def child(self, name: str) -> MetadataNode | None:
        controller_id = parse_int(name)
        controller = None if controller_id is None else self.image.controllers.get(controller_id)
        return None if controller is None else MetadataLeafNode(controller_text(controller), controller.to_json())


class TopicsImageNode(_Directory):
    """``/image/topics``: ``byName`` and ``byId``."""

    NAME = "topics"
    JAVA_CLASS = f"{PACKAGE}.TopicsImageNode"
    CHILDREN = ("byName", "byId")

    def __init__(self, image: TopicsImage, release: ShellRelease) -> None:
        super().__init__(release)
        self.image = image

    def child(self, name: str) -> MetadataNode | None:
        if name == "byName":
            return TopicsImageByNameNode(self.image, self.release)
        if name == "byId":
            return TopicsImageByIdNode(self.image, self.release)
        return None


class TopicsImageByNameNode(_Directory):
    """``/image/topics/byName/<name>`` (Kafka's name index, hidden entries included)."""

    JAVA_CLASS = f"{PACKAGE}.TopicsImageByNameNode"

    def __init__(self, image: TopicsImage, release: ShellRelease) -> None:
        super().__init__(release)
        self.image = image

    def child_names(self) -> Iterable[str]:
        return self.image.topics_by_name

    def child(self, name: str) -> MetadataNode | None:
        topic = self.image.topics_by_name.get(name)
        return None if topic is None else TopicImageNode(topic, self.release)


class TopicsImageByIdNode(_Directory):
    """``/image/topics/byId/<Uuid>``."""

    JAVA_CLASS = f"{PACKAGE}.TopicsImageByIdNode"

    def __init__(self, image: TopicsImage, release: ShellRelease) -> None:
        super().__init__(release)
        self.image = image

    def child_names(self) -> Iterable[str]:
        return self.image.topics_by_id

    def child(self, name: str) -> MetadataNode | None:
        topic_id = uuid_from_string(name)
        topic = None if topic_id is None else self.image.topics_by_id.get(topic_id)
        return None if topic is None else TopicImageNode(topic, self.release)


class TopicImageNode(_Directory):
    """A topic: ``name``, ``id`` and ``<partition>`` (``PartitionRegistration``)."""

    JAVA_CLASS = f"{PACKAGE}.TopicImageNode"

    def __init__(self, image: TopicImage, release: ShellRelease) -> None:
        super().__init__(release)
        self.image = image

    def child_names(self) -> Iterable[str]:
        return ["name", "id", *(str(p) for p in self.image.partitions)]

    def child(self, name: str) -> MetadataNode | None:
        topic = self.image
        if name == "name":
            return MetadataLeafNode(topic.name)
        if name == "id":
            return MetadataLeafNode(topic.id)
        partition_id = parse_int(name)
        partition = None if partition_id is None else topic.partitions.get(partition_id)
        if partition is None:
            return None
        return MetadataLeafNode(partition_text(partition), partition.to_json(topic.name, topic.id, partition_id))


CONFIG_RESOURCE_TYPES = ("GROUP", "CLIENT_METRICS", "BROKER_LOGGER", "BROKER", "TOPIC", "UNKNOWN")
"""``ConfigResource.Type.values()``, in the order ``resourceFromName`` tries them."""
assert set(CONFIG_RESOURCE_TYPES) == set(RESOURCE_TYPES.values())


class ConfigurationsImageNode(_Directory):
    """``/image/configs/<TYPE>`` (a type's default resource) and ``/image/configs/<TYPE>:<name>``."""

    NAME = "configs"
    JAVA_CLASS = f"{PACKAGE}.ConfigurationsImageNode"

    def __init__(self, image: ConfigurationsImage, release: ShellRelease) -> None:
        super().__init__(release)
        self.image = image

    def child_names(self) -> Iterable[str]:
        return [r.type if r.name == "" else f"{r.type}:{r.name}" for r in self.image.resource_data]

    @staticmethod
    def resource_from_name(name: str) -> ConfigResource | None:
        """Kafka's ``resourceFromName``: the first type the name starts with decides (so ``BROKER_LOGGER:x`` is
        never read as BROKER)."""
        for resource_type in CONFIG_RESOURCE_TYPES:
            if name.startswith(resource_type):
                key = name[len(resource_type) :]
                if key == "":
                    return ConfigResource(resource_type, "")
                if key.startswith(":"):
                    return ConfigResource(resource_type, key[1:])
                return None
        return None

    def child(self, name: str) -> MetadataNode | None:
        resource = self.resource_from_name(name)
        data = None if resource is None else self.image.resource_data.get(resource)
        return None if data is None else ConfigurationImageNode(data, self.release)


class ConfigurationImageNode(_Directory):
    """One resource's configs: ``<key>`` holds the value (never redacted: the shell's printer redacts nothing)."""

    JAVA_CLASS = f"{PACKAGE}.ConfigurationImageNode"

    def __init__(self, data: Mapping[str, str], release: ShellRelease) -> None:
        super().__init__(release)
        self.data = data

    def child_names(self) -> Iterable[str]:
        return self.data

    def child(self, name: str) -> MetadataNode | None:
        value = self.data.get(name)
        return None if value is None else MetadataLeafNode(value)


CLIENT_ID, IP, USER = "client-id", "ip", "user"


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


class ClientQuotasImageNode(_Directory):
    """``/image/clientQuotas/<entity>``: ``clientId(a)_ip(b)_user(c)`` with ``\\``, ``(``, ``)`` escaped; a default
    entity (null name) shows no component, as in Kafka, and so cannot be opened."""

    NAME = "clientQuotas"
    JAVA_CLASS = f"{PACKAGE}.ClientQuotasImageNode"

    def __init__(self, image: ClientQuotasImage, release: ShellRelease) -> None:
        super().__init__(release)
        self.image = image

    def child_names(self) -> Iterable[str]:
        return [self.entity_name(entity) for entity in self.image.entities]

    @staticmethod
    def entity_name(entity: ClientQuotaEntity) -> str:
        """Kafka's ``clientQuotaEntityToString``."""
        if not entity:
            raise JavaException("Invalid empty entity")
        names: dict[str, str | None] = {}
        for entity_type, entity_name in entity:
            if entity_type not in (CLIENT_ID, IP, USER):
                raise JavaException(f"Invalid entity type {entity_type}")
            names[entity_type] = entity_name
        parts = [
            f"{label}({_escape(value)})"
            for label, key in (("clientId", CLIENT_ID), ("ip", IP), ("user", USER))
            if (value := names.get(key)) is not None
        ]
        return "_".join(parts)

    @staticmethod
    def decode_entity(text: str) -> ClientQuotaEntity | None:
        """Kafka's ``decodeEntity``: the entity a name stands for, None if it is not one."""
        entries: dict[str, str] = {}
        entity_type: str | None = None
        value: list[str] = []
        escaping = False
        i = 0
        while True:
            if i >= len(text):
                return None
            if entity_type is None:
                for label, key in (("clientId(", CLIENT_ID), ("ip(", IP), ("user(", USER)):
                    if text.startswith(label, i):
                        entity_type, i = key, i + len(label)
                        break
                else:
                    return None
            else:
                c = text[i]
                i += 1
                if escaping:
                    value.append(c)
                    escaping = False
                elif c == ")":
                    entries[entity_type] = "".join(value)
                    entity_type, value = None, []
                elif c == "\\":
                    escaping = True
                else:
                    value.append(c)
                if entity_type is None:
                    if i >= len(text):
                        return tuple(sorted(entries.items()))
                    if text[i] != "_":
                        return None
                    i += 1

    def child(self, name: str) -> MetadataNode | None:
        entity = self.decode_entity(name)
        quotas = None if entity is None else self.image.entities.get(entity)
        return None if quotas is None else ClientQuotaImageNode(quotas, self.release)


class ClientQuotaImageNode(_Directory):
    """One entity's quotas: ``<key>`` holds the value as Java's ``Double.toString``."""

    JAVA_CLASS = f"{PACKAGE}.ClientQuotaImageNode"

    def __init__(self, quotas: Mapping[str, float], release: ShellRelease) -> None:
        super().__init__(release)
        self.quotas = quotas

    def child_names(self) -> Iterable[str]:
        return self.quotas

    def child(self, name: str) -> MetadataNode | None:
        value = self.quotas.get(name)
        return None if value is None else MetadataLeafNode(java_double(value), value)


class ProducerIdsImageNode(_Directory):
    """``/image/producerIds/nextProducerId``."""

    NAME = "producerIds"
    JAVA_CLASS = f"{PACKAGE}.ProducerIdsImageNode"
    CHILDREN = ("nextProducerId",)

    def __init__(self, next_producer_id: int, release: ShellRelease) -> None:
        super().__init__(release)
        self.next_producer_id = next_producer_id

    def child(self, name: str) -> MetadataNode | None:
        return MetadataLeafNode(str(self.next_producer_id), self.next_producer_id) if name in self.CHILDREN else None


class AclsImageNode(_Directory):
    """``/image/acls/byId``."""

    NAME = "acls"
    JAVA_CLASS = f"{PACKAGE}.AclsImageNode"
    CHILDREN = ("byId",)

    def __init__(self, image: AclsImage, release: ShellRelease) -> None:
        super().__init__(release)
        self.image = image

    def child(self, name: str) -> MetadataNode | None:
        return AclsImageByIdNode(self.image, self.release) if name == "byId" else None


class AclsImageByIdNode(_Directory):
    """``/image/acls/byId/<Uuid>``: ``StandardAcl``."""

    JAVA_CLASS = f"{PACKAGE}.AclsImageByIdNode"

    def __init__(self, image: AclsImage, release: ShellRelease) -> None:
        super().__init__(release)
        self.image = image

    def child_names(self) -> Iterable[str]:
        return self.image.acls

    def child(self, name: str) -> MetadataNode | None:
        acl_id = uuid_from_string(name)
        acl = None if acl_id is None else self.image.acls.get(acl_id)
        return None if acl is None else MetadataLeafNode(acl_text(acl, self.release), acl.to_json(acl_id))


MECHANISMS_BY_NAME = {name: code for code, name in SCRAM_MECHANISMS.items() if code != 0}
"""``ScramMechanism.values()`` but UNKNOWN, by mechanism name."""


class ScramImageNode(_Directory):
    """``/image/scram/<mechanism>`` for every mechanism Kafka knows, with users or not."""

    NAME = "scram"
    JAVA_CLASS = f"{PACKAGE}.ScramImageNode"

    def __init__(self, image: ScramImage, release: ShellRelease) -> None:
        super().__init__(release)
        self.image = image

    def child_names(self) -> Iterable[str]:
        return MECHANISMS_BY_NAME

    def child(self, name: str) -> MetadataNode | None:
        code = MECHANISMS_BY_NAME.get(name)
        if code is None:
            return None
        return ScramMechanismNode(code, self.image.mechanisms.get(code) or {}, self.release)


class ScramMechanismNode(_Directory):
    """One mechanism's users: ``<user>`` holds ``ScramCredentialData(...)``."""

    JAVA_CLASS = f"{PACKAGE}.ScramMechanismNode"

    def __init__(self, mechanism: int, users: Mapping[str, ScramCredentialData], release: ShellRelease) -> None:
        super().__init__(release)
        self.mechanism = mechanism
        self.users = users

    def child_names(self) -> Iterable[str]:
        return self.users

    def child(self, name: str) -> MetadataNode | None:
        data = self.users.get(name)
        if data is None:
            return None
        return MetadataLeafNode(scram_text(data), scram_row(self.mechanism, name, data))


def _hex(standard_base64: str) -> str:
    return base64.b64decode(standard_base64).hex()


def scram_text(data: ScramCredentialData) -> str:
    """``ScramCredentialDataNode`` as the shell prints it (nothing redacted)."""
    return (
        f"ScramCredentialData(salt={_hex(data.salt)}, storedKey={_hex(data.stored_key)}, "
        f"serverKey={_hex(data.server_key)}, iterations={data.iterations})"
    )


class DelegationTokenImageNode(_Directory):
    """``/image/delegationToken/<tokenId>``."""

    NAME = "delegationToken"
    JAVA_CLASS = f"{PACKAGE}.DelegationTokenImageNode"

    def __init__(self, image: DelegationTokenImage, release: ShellRelease) -> None:
        super().__init__(release)
        self.image = image

    def child_names(self) -> Iterable[str]:
        return self.image.tokens

    def child(self, name: str) -> MetadataNode | None:
        token = self.image.tokens.get(name)
        return None if token is None else MetadataLeafNode(delegation_token_text(token), token.to_json())


def delegation_token_text(t: DelegationTokenData) -> str:
    """``DelegationTokenDataNode`` as the shell prints it, its unbalanced parentheses included."""
    return (
        f"DelegationTokenDatatokenId={t.token_id}(owner={t.owner}(tokenRequester={t.requester}"
        f"(renewers={' '.join(t.renewers)}, issueTimestamp={t.issue_timestamp}, maxTimestamp={t.max_timestamp})"
        f", expiryTimestamp={t.expiration_timestamp}"
    )
