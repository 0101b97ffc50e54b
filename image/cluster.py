"""Cluster part of the image: broker and controller registrations (docs/replay-rules.md, "Cluster")."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

from image.cow import CowMap, empty_map, frozen, writable
from image.errors import ReplayError
from image.uuids import uuid_sort_key

SECURITY_PROTOCOLS: Mapping[int, str] = {0: "PLAINTEXT", 1: "SSL", 2: "SASL_PLAINTEXT", 3: "SASL_SSL"}


@dataclass(frozen=True, slots=True)
class Endpoint:
    """A listener. ``security_protocol`` is the protocol id, None for an id Kafka does not know
    (brokers accept it, as ``SecurityProtocol.forId`` gives null)."""

    name: str
    host: str
    port: int
    security_protocol: int | None

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "host": self.host, "port": self.port, "securityProtocol": self.security_protocol}


@dataclass(frozen=True, slots=True)
class VersionRange:
    """A supported feature range ``[min_supported_version, max_supported_version]``."""

    name: str
    min_supported_version: int
    max_supported_version: int

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "minSupportedVersion": self.min_supported_version,
            "maxSupportedVersion": self.max_supported_version,
        }


def _listeners(endpoints: Iterable[Mapping[str, Any]]) -> tuple[Endpoint, ...]:
    """Listener map as a tuple sorted by name; a later endpoint with the same name wins."""
    by_name = {
        e["name"]: Endpoint(
            e["name"],
            e["host"],
            e["port"],
            e["securityProtocol"] if e["securityProtocol"] in SECURITY_PROTOCOLS else None,
        )
        for e in endpoints
    }
    return tuple(by_name[name] for name in sorted(by_name))


def _features(features: Iterable[Mapping[str, Any]]) -> tuple[VersionRange, ...]:
    """Supported-features map as a tuple sorted by name; a later entry with the same name wins."""
    by_name = {f["name"]: VersionRange(f["name"], f["minSupportedVersion"], f["maxSupportedVersion"]) for f in features}
    return tuple(by_name[name] for name in sorted(by_name))


def _directories(log_dirs: Iterable[str]) -> tuple[str, ...]:
    return tuple(sorted(log_dirs, key=uuid_sort_key))


def _cordoned(log_dirs: Iterable[str] | None) -> tuple[str, ...] | None:
    return None if log_dirs is None else tuple(log_dirs)


@dataclass(frozen=True, slots=True)
class BrokerRegistration:
    """Kafka ``BrokerRegistration``; listeners/features sorted by name (map semantics),
    directories sorted by Kafka Uuid order; cordoned directories (Kafka 4.3+, KIP-1066) in record order,
    None until the broker has sent them."""

    id: int
    epoch: int
    incarnation_id: str
    listeners: tuple[Endpoint, ...] = ()
    supported_features: tuple[VersionRange, ...] = ()
    rack: str | None = None
    fenced: bool = True
    in_controlled_shutdown: bool = False
    is_migrating_zk_broker: bool = False
    directories: tuple[str, ...] = ()
    cordoned_directories: tuple[str, ...] | None = None

    @classmethod
    def from_record(cls, data: Mapping[str, Any]) -> BrokerRegistration:
        """From a RegisterBrokerRecord body."""
        return cls(
            id=data["brokerId"],
            epoch=data["brokerEpoch"],
            incarnation_id=data["incarnationId"],
            listeners=_listeners(data["endPoints"]),
            supported_features=_features(data["features"]),
            rack=data["rack"],
            fenced=data.get("fenced", True),
            in_controlled_shutdown=data.get("inControlledShutdown", False),
            is_migrating_zk_broker=data.get("isMigratingZkBroker", False),
            directories=_directories(data.get("logDirs") or ()),
            cordoned_directories=_cordoned(data.get("cordonedLogDirs")),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "brokerId": self.id,
            "brokerEpoch": self.epoch,
            "incarnationId": self.incarnation_id,
            "fenced": self.fenced,
            "inControlledShutdown": self.in_controlled_shutdown,
            "isMigratingZkBroker": self.is_migrating_zk_broker,
            "rack": self.rack,
            "endPoints": [e.to_json() for e in self.listeners],
            "features": [f.to_json() for f in self.supported_features],
            "logDirs": list(self.directories),
            "cordonedLogDirs": None if self.cordoned_directories is None else list(self.cordoned_directories),
        }


@dataclass(frozen=True, slots=True)
class ControllerRegistration:
    """Kafka ``ControllerRegistration``."""

    id: int
    incarnation_id: str
    zk_migration_ready: bool
    listeners: tuple[Endpoint, ...] = ()
    supported_features: tuple[VersionRange, ...] = ()

    @classmethod
    def from_record(cls, data: Mapping[str, Any]) -> ControllerRegistration:
        """From a RegisterControllerRecord body; unknown security protocols are errors."""
        for endpoint in data["endPoints"]:
            if endpoint["securityProtocol"] not in SECURITY_PROTOCOLS:
                raise ReplayError(f"Unknown security protocol {endpoint['securityProtocol']}")
        return cls(
            id=data["controllerId"],
            incarnation_id=data["incarnationId"],
            zk_migration_ready=data["zkMigrationReady"],
            listeners=_listeners(data["endPoints"]),
            supported_features=_features(data["features"]),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "controllerId": self.id,
            "incarnationId": self.incarnation_id,
            "zkMigrationReady": self.zk_migration_ready,
            "endPoints": [e.to_json() for e in self.listeners],
            "features": [f.to_json() for f in self.supported_features],
        }


@dataclass(frozen=True, slots=True)
class ClusterImage:
    """Brokers and controllers by node id."""

    brokers: Mapping[int, BrokerRegistration] = field(default_factory=empty_map)
    controllers: Mapping[int, ControllerRegistration] = field(default_factory=empty_map)

    EMPTY: ClassVar[ClusterImage]

    def broker(self, node_id: int) -> BrokerRegistration | None:
        return self.brokers.get(node_id)

    def frozen(self) -> ClusterImage:
        if isinstance(self.brokers, CowMap) or isinstance(self.controllers, CowMap):
            return ClusterImage(frozen(self.brokers), frozen(self.controllers))
        return self


ClusterImage.EMPTY = ClusterImage()

_FENCED = {1: True, 0: None, -1: False}
_IN_CONTROLLED_SHUTDOWN = {1: True, 0: None}


class ClusterDelta:
    """Changed registrations by id (None = unregistered / removed)."""

    def __init__(self, image: ClusterImage) -> None:
        self.image = image
        self.changed_brokers: dict[int, BrokerRegistration | None] = {}
        self.changed_controllers: dict[int, ControllerRegistration | None] = {}

    def broker(self, node_id: int) -> BrokerRegistration | None:
        """Current registration: this delta's change first, then the base image."""
        if node_id in self.changed_brokers:
            return self.changed_brokers[node_id]
        return self.image.brokers.get(node_id)

    def replay_register_broker(self, data: Mapping[str, Any]) -> None:
        """RegisterBrokerRecord: full replacement, no epoch check."""
        broker = BrokerRegistration.from_record(data)
        self.changed_brokers[broker.id] = broker

    def replay_unregister_broker(self, data: Mapping[str, Any]) -> None:
        """UnregisterBrokerRecord: removed, without existence or epoch check (as the image does)."""
        self.changed_brokers[data["brokerId"]] = None

    def _broker_or_raise(self, broker_id: int, epoch: int, action: str) -> BrokerRegistration:
        broker = self.broker(broker_id)
        if broker is None:
            raise ReplayError(f"Tried to {action} broker {broker_id}, but that broker was not registered.")
        if broker.epoch != epoch:
            raise ReplayError(
                f"Tried to {action} broker {broker_id}, but the given epoch, {epoch}, "
                f"did not match the current broker epoch, {broker.epoch}"
            )
        return broker

    def replay_fence_broker(self, data: Mapping[str, Any]) -> None:
        """FenceBrokerRecord (before MV 3.3-IV2)."""
        broker = self._broker_or_raise(data["id"], data["epoch"], "fence")
        self.changed_brokers[broker.id] = replace(broker, fenced=True)

    def replay_unfence_broker(self, data: Mapping[str, Any]) -> None:
        """UnfenceBrokerRecord (before MV 3.3-IV2)."""
        broker = self._broker_or_raise(data["id"], data["epoch"], "unfence")
        self.changed_brokers[broker.id] = replace(broker, fenced=False)

    def replay_registration_change(self, data: Mapping[str, Any]) -> None:
        """BrokerRegistrationChangeRecord: Fenced 1/-1/0, InControlledShutdown 1/0, LogDirs
        (empty = unchanged), CordonedLogDirs (null = unchanged, ``[]`` = none cordoned); nothing is recorded
        when the registration does not change."""
        broker = self._broker_or_raise(data["brokerId"], data["brokerEpoch"], "change")
        fenced = data.get("fenced", 0)
        if fenced not in _FENCED:
            raise ReplayError(f"Unable to replay {dict(data)}: unknown value for fenced field: {fenced}")
        shutdown = data.get("inControlledShutdown", 0)
        if shutdown not in _IN_CONTROLLED_SHUTDOWN:
            raise ReplayError(
                f"Unable to replay {dict(data)}: unknown value for inControlledShutdown field: {shutdown}"
            )
        new_fenced = _FENCED[fenced]
        new_shutdown = _IN_CONTROLLED_SHUTDOWN[shutdown]
        log_dirs = data.get("logDirs")
        cordoned = data.get("cordonedLogDirs")
        changed = replace(
            broker,
            fenced=broker.fenced if new_fenced is None else new_fenced,
            in_controlled_shutdown=broker.in_controlled_shutdown if new_shutdown is None else new_shutdown,
            directories=_directories(log_dirs) if log_dirs else broker.directories,
            cordoned_directories=broker.cordoned_directories if cordoned is None else tuple(cordoned),
        )
        if changed != broker:
            self.changed_brokers[broker.id] = changed

    def replay_register_controller(self, data: Mapping[str, Any]) -> None:
        """RegisterControllerRecord: full replacement."""
        controller = ControllerRegistration.from_record(data)
        self.changed_controllers[controller.id] = controller

    def replay_unregister_controller(self, data: Mapping[str, Any]) -> None:
        """UnregisterControllerRecord (Kafka 4.4, KIP-1312): the controller's registration is removed."""
        self.changed_controllers[data["controllerId"]] = None

    def finish_snapshot(self) -> None:
        """Remove every base broker and controller the snapshot did not register."""
        for broker_id in self.image.brokers:
            self.changed_brokers.setdefault(broker_id, None)
        for controller_id in self.image.controllers:
            self.changed_controllers.setdefault(controller_id, None)

    def build(self, in_place: bool) -> ClusterImage:
        brokers = self.image.brokers
        if self.changed_brokers:
            brokers = writable(brokers, in_place)
            for broker_id, broker in self.changed_brokers.items():
                if broker is None:
                    brokers.discard(broker_id)
                else:
                    brokers.set(broker_id, broker)
        controllers = self.image.controllers
        if self.changed_controllers:
            controllers = writable(controllers, in_place)
            for controller_id, controller in self.changed_controllers.items():
                if controller is None:
                    controllers.discard(controller_id)
                else:
                    controllers.set(controller_id, controller)
        return ClusterImage(brokers, controllers)

    def apply(self) -> ClusterImage:
        return self.build(in_place=False).frozen()
