"""The replay rules of each Kafka release line (image/release.py, docs/replay-rules.md "Kafka releases"): one log,
the images brokers of each release build from it."""

from __future__ import annotations

import pytest

from image.errors import ReplayError
from image.release import RELEASES, UnsupportedRelease, rules_for
from image.replay import replay_to
from image.temporal.reads import MemorySource
from image.temporal.version_rows import Selection, load
from image.temporal.window import Window
from image.views.health import image_gauges
from image.views.history import broker_history
from image.views.timeline import timeline
from metadata.log.records import LogRecord
from tests.logbuilder import (
    LogBuilder,
    broker_change,
    clear_elr,
    config,
    cordoned,
    feature_level,
    register_broker,
    register_controller,
    topic,
    unregister_controller,
    uuid,
)

A = uuid(0xA)
DIR_1, DIR_2 = uuid(0x101), uuid(0x102)


def test_release_lines_and_versions() -> None:
    assert RELEASES == ("3.9", "4.0", "4.1", "4.2", "4.3", "4.4")
    assert rules_for() is rules_for("4.4") and rules_for("4.3.1") is rules_for("4.3")
    assert rules_for("4.3").kafka == "4.3.2"
    for bad, why in (("3.8", "is not supported"), ("5.0", "is not supported"), ("four", "not a Kafka version")):
        with pytest.raises(UnsupportedRelease, match=why):
            rules_for(bad)


def _config_log() -> list[LogRecord]:
    """A topic with a known and a removed topic config, a group config, broker configs and configs of types
    Kafka does not keep (BROKER_LOGGER, an unknown type)."""
    log = LogBuilder()
    log.batch(
        feature_level("metadata.version", 21),
        topic("t", A),
        config(2, "t", "retention.ms", "1000"),
        config(2, "t", "message.format.version", "2.8"),  # removed from Kafka in 4.0
        config(32, "g", "consumer.session.timeout.ms", "45000"),
        config(32, "g", "no.such.group.config", "1"),
        config(4, "1", "any.broker.name", "x"),
        config(8, "1", "kafka.server", "DEBUG"),
        config(99, "r", "k", "v"),
    )
    return log.records


@pytest.mark.parametrize("release", RELEASES)
def test_configs_of_unsupported_names_are_skipped_from_kafka_4_2(release: str) -> None:
    """KAFKA-19851 (4.3.0, backported to 4.2.1): brokers skip ConfigRecords their DefaultSupportedConfigChecker
    does not support."""
    configs = {
        (r, n)
        for (r, _), data in replay_to(_config_log(), rules=rules_for(release)).configs.resource_data.items()
        for n in data
    }
    kept = {("TOPIC", "retention.ms"), ("GROUP", "consumer.session.timeout.ms"), ("BROKER", "any.broker.name")}
    dropped = {
        ("TOPIC", "message.format.version"),
        ("GROUP", "no.such.group.config"),
        ("BROKER_LOGGER", "kafka.server"),
        ("UNKNOWN", "k"),
    }
    filtered = tuple(map(int, release.split("."))) >= (4, 2)
    assert configs == (kept if filtered else kept | dropped)


def test_the_config_filter_is_kafkas_from_4_2() -> None:
    assert [r for r in RELEASES if rules_for(r).supported_configs is not None] == ["4.2", "4.3", "4.4"]
    rules = rules_for("4.4")
    assert rules.supports_config(2, "cleanup.policy") and not rules.supports_config(2, "nope")  # TOPIC
    assert rules.supports_config(4, "listener.name.internal.ssl.keystore.location")  # BROKER: any name
    assert not rules.supports_config(8, "kafka.server")  # BROKER_LOGGER
    assert rules_for("4.1").supports_config(8, "kafka.server")


def test_cordoned_log_directories_from_kafka_4_3() -> None:
    """KIP-1066: null until the broker sends them; a change record's list, even empty, replaces them."""
    log = LogBuilder()
    log.batch(cordoned(register_broker(1, 10, log_dirs=[DIR_2, DIR_1]), None))
    log.batch(cordoned(broker_change(1, 10), []))
    log.batch(cordoned(broker_change(1, 10), [DIR_2]))
    log.batch(cordoned(broker_change(1, 10, fenced=-1), None))
    log.batch(cordoned(register_broker(1, 11, log_dirs=[DIR_1, DIR_2]), [DIR_2, DIR_1]))

    def cordoned_at(offset: int) -> list[str] | None:
        return replay_to(log.records, offset).to_json()["brokers"][0]["cordonedLogDirs"]

    assert [cordoned_at(o) for o in range(5)] == [None, [], [DIR_2], [DIR_2], [DIR_2, DIR_1]]  # record order kept
    assert replay_to(log.records, 3).to_json()["brokers"][0]["fenced"] is False
    with pytest.raises(
        ReplayError,
        match=r"offset 0: REGISTER_BROKER_RECORD: .*version 4 is not known to Kafka 4\.2 "
        r"\(valid: 0-3\) \(written by Kafka 4\.3 and later\)",
    ):
        replay_to(log.records, rules=rules_for("4.2"))


def test_unregister_controller_from_kafka_4_4() -> None:
    log = LogBuilder()
    log.batch(register_controller(3000), register_controller(3001))
    log.batch(unregister_controller(3001))
    assert [c["controllerId"] for c in replay_to(log.records).to_json()["controllers"]] == [3000]
    older = replay_to(log.records, rules=rules_for("4.3"), lenient=True)
    assert [c["controllerId"] for c in older.to_json()["controllers"]] == [3000, 3001]
    assert [str(e) for e in older.errors] == [
        "offset 2: UNREGISTER_CONTROLLER_RECORD: UNREGISTER_CONTROLLER_RECORD is not a record type Kafka 4.3 knows "
        "(written by Kafka 4.4 and later)"
    ]


def test_clear_elr_is_not_a_record_kafka_3_9_knows() -> None:
    log = LogBuilder()
    log.batch(topic("t", A), clear_elr("t"))
    assert replay_to(log.records, rules=rules_for("4.0")).topics.get_topic(A) is not None
    with pytest.raises(ReplayError, match="CLEAR_ELR_RECORD is not a record type Kafka 3.9 knows"):
        replay_to(log.records, rules=rules_for("3.9"))


def test_cordoned_directories_in_history_and_timeline() -> None:
    """A cordoned directory is operational news: words in ``history broker``, a gauge of the timeline."""
    log = LogBuilder()
    log.batch(feature_level("metadata.version", 30), cordoned(register_broker(1, 10, log_dirs=[DIR_1, DIR_2]), None))
    log.batch(cordoned(broker_change(1, 10), []))
    log.batch(cordoned(broker_change(1, 10), [DIR_2]))
    log.batch(cordoned(broker_change(1, 10), []))
    source = MemorySource.replay(log.records, [])
    window = load(source, Window(), Selection(broker=1))
    assert [v.events for v in broker_history(window, 1).versions] == [
        [
            f"registered (epoch 10, incarnation {uuid(1001)}, endpoints PLAINTEXT://b1:9092, rack none, "
            "features metadata.version 1-22); fenced"
        ],
        ["cordoned log dirs reported: none"],
        [f"log dir {DIR_2} cordoned"],
        [f"log dir {DIR_2} uncordoned"],
    ]
    everything = load(source, Window(), Selection())
    points = timeline(everything, [(r.offset, r.timestamp) for r in log.records]).points
    assert [p.cordonedBrokers for p in points] == [[], [], [], [1], []]
    assert [image_gauges(replay_to(log.records, p.offset).to_json()).cordonedBrokers for p in points] == [
        p.cordonedBrokers for p in points
    ]
