"""Cluster: broker and controller registrations."""

from __future__ import annotations

import pytest

from image.cluster import BrokerRegistration, Endpoint, VersionRange
from image.delta import MetadataDelta
from image.errors import ReplayError
from image.image import MetadataImage
from image.replay import replay_to
from tests.logbuilder import (
    LogBuilder,
    broker_change,
    fence_broker,
    register_broker,
    register_controller,
    unfence_broker,
    unregister_broker,
    uuid,
)

D_LOW, D_HIGH, D_NEG = uuid(5), uuid(1 << 70), uuid((1 << 127) + 1)  # msb 0, msb 64, msb negative


def registered(*bodies: tuple[str, dict[str, object]]) -> MetadataImage:
    log = LogBuilder()
    log.batch(register_broker(1, 10), register_broker(2, 20, fenced=False))
    for body in bodies:
        log.batch(body)
    return replay_to(log.records)


def test_register_broker_builds_the_registration() -> None:
    endpoints = [
        {"name": "SSL", "host": "h", "port": 9093, "securityProtocol": 1},
        {"name": "PLAINTEXT", "host": "h", "port": 9092, "securityProtocol": 0},
        {"name": "SSL", "host": "h2", "port": 9094, "securityProtocol": 1},
    ]
    features = [{"name": "metadata.version", "minSupportedVersion": 1, "maxSupportedVersion": 22}]
    log = LogBuilder()
    log.batch(
        register_broker(
            7, 42, rack="r1", endpoints=endpoints, features=features, log_dirs=[D_HIGH, D_NEG, D_LOW], fenced=False
        )
    )
    broker = replay_to(log.records).cluster.broker(7)
    assert broker == BrokerRegistration(
        id=7,
        epoch=42,
        incarnation_id=uuid(1007),
        listeners=(Endpoint("PLAINTEXT", "h", 9092, 0), Endpoint("SSL", "h2", 9094, 1)),
        supported_features=(VersionRange("metadata.version", 1, 22),),
        rack="r1",
        fenced=False,
        in_controlled_shutdown=False,
        is_migrating_zk_broker=False,
        directories=(D_NEG, D_LOW, D_HIGH),  # Kafka Uuid order: signed msb first
    )


def test_register_broker_v0_defaults() -> None:
    kind, data = register_broker(3, 1)
    del data["isMigratingZkBroker"], data["inControlledShutdown"]
    log = LogBuilder()
    log.batch((kind, data))
    broker = replay_to(log.records).cluster.broker(3)
    assert (broker.is_migrating_zk_broker, broker.in_controlled_shutdown, broker.directories) == (False, False, ())
    assert broker.rack is None and broker.fenced


def test_reregistration_replaces_without_epoch_check() -> None:
    image = registered(broker_change(1, 10, in_controlled_shutdown=1), register_broker(1, 5, rack="x"))
    broker = image.cluster.broker(1)
    assert (broker.epoch, broker.rack, broker.in_controlled_shutdown) == (5, "x", False)


def test_unregister_needs_no_registration_or_epoch() -> None:
    image = registered(unregister_broker(2, 999), unregister_broker(8, 1))
    assert set(image.cluster.brokers) == {1}


def test_fence_and_unfence() -> None:
    image = registered(unfence_broker(1, 10))
    assert not image.cluster.broker(1).fenced
    assert registered(unfence_broker(1, 10), fence_broker(1, 10)).cluster.broker(1).fenced


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (fence_broker(9, 1), "Tried to fence broker 9, but that broker was not registered."),
        (
            unfence_broker(1, 11),
            "Tried to unfence broker 1, but the given epoch, 11, did not match the current broker epoch, 10",
        ),
        (broker_change(9, 1, fenced=1), "Tried to change broker 9, but that broker was not registered."),
        (
            broker_change(2, 21, fenced=1),
            "Tried to change broker 2, but the given epoch, 21, did not match the current broker epoch, 20",
        ),
        (broker_change(2, 20, fenced=2), "unknown value for fenced field: 2"),
        (broker_change(2, 20, in_controlled_shutdown=-1), "unknown value for inControlledShutdown field: -1"),
    ],
)
def test_registration_checks(body: tuple[str, dict[str, object]], message: str) -> None:
    with pytest.raises(ReplayError, match=message.replace(".", r"\.")):
        registered(body)


def test_fence_after_unregister_in_the_same_delta_is_an_error() -> None:
    image = registered()
    delta = MetadataDelta(image)
    first, second = LogBuilder(start_offset=image.offset + 1).batch(unregister_broker(1, 10), fence_broker(1, 10))
    delta.replay(first)
    with pytest.raises(ReplayError, match="was not registered"):
        delta.replay(second)


def test_broker_registration_change() -> None:
    image = registered(broker_change(1, 10, fenced=-1))
    assert not image.cluster.broker(1).fenced
    image = registered(broker_change(2, 20, fenced=1, in_controlled_shutdown=1, log_dirs=[D_HIGH, D_LOW]))
    broker = image.cluster.broker(2)
    assert (broker.fenced, broker.in_controlled_shutdown, broker.directories) == (True, True, (D_LOW, D_HIGH))
    image = registered(broker_change(2, 20, log_dirs=[D_LOW]), broker_change(2, 20, fenced=0))
    assert image.cluster.broker(2).directories == (D_LOW,)  # empty LogDirs: unchanged


def test_noop_registration_change_adds_nothing_to_the_delta() -> None:
    image = registered()
    delta = MetadataDelta(image)
    for record in LogBuilder(start_offset=image.offset + 1).batch(
        broker_change(2, 20, fenced=-1), broker_change(1, 10), broker_change(1, 10, fenced=1)
    ):
        delta.replay(record)
    assert delta.cluster_delta is not None and delta.cluster_delta.changed_brokers == {}


def test_controller_registration() -> None:
    features = [{"name": "kraft.version", "minSupportedVersion": 0, "maxSupportedVersion": 1}]
    log = LogBuilder()
    log.batch(register_controller(3000, zk_migration_ready=True, features=features))
    log.batch(register_controller(3001))
    log.batch(register_controller(3001, incarnation_id=uuid(9)))
    image = replay_to(log.records)
    assert sorted(image.cluster.controllers) == [3000, 3001]
    controller = image.cluster.controllers[3000]
    assert controller.zk_migration_ready and controller.supported_features == (VersionRange("kraft.version", 0, 1),)
    assert controller.listeners == (Endpoint("CONTROLLER", "c3000", 9093, 0),)
    assert image.cluster.controllers[3001].incarnation_id == uuid(9)
    log.batch(register_controller(3002, endpoints=[{"name": "C", "host": "h", "port": 1, "securityProtocol": 9}]))
    with pytest.raises(ReplayError, match="Unknown security protocol 9"):
        replay_to(log.records)


def test_broker_accepts_unknown_security_protocol_as_null() -> None:
    endpoint = {"name": "X", "host": "h", "port": 1, "securityProtocol": 9}
    log = LogBuilder()
    log.batch(register_broker(1, 1, endpoints=[endpoint]))
    image = replay_to(log.records)
    assert image.cluster.broker(1).listeners == (Endpoint("X", "h", 1, None),)
    assert image.to_json()["brokers"][0]["endPoints"] == [
        {"name": "X", "host": "h", "port": 1, "securityProtocol": None}
    ]
