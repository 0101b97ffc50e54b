"""Hand-made metadata logs for the health tests: an incident with every kind of event the
history words and the timeline gauges know (LogBuilder records, one batch per step)."""

from __future__ import annotations

from metadata.log.records import LogRecord
from tests.logbuilder import (
    LogBuilder,
    abort,
    begin,
    broker_change,
    config,
    end,
    feature_level,
    fence_broker,
    partition,
    partition_change,
    register_broker,
    remove_topic,
    topic,
    unfence_broker,
    unregister_broker,
    uuid,
)

ORDERS, ORDERS_AGAIN, AUDIT = uuid(0x0D), uuid(0x0E), uuid(0xA0)
START_MS = 1_767_225_600_000  # 2026-01-01T00:00:00Z
TOPIC, BROKER = 2, 4  # ConfigResource type ids


def incident_log() -> list[LogRecord]:
    """Brokers 1-4, topic ``orders`` (3 partitions) and ``audit``: min.insync.replicas at the
    topic, per-broker and cluster levels; ISR shrinks and expansions; a controlled shutdown;
    fencing; clean elections, an offline partition recovered from its ELR and one recovered
    uncleanly; reassignments completed and cancelled; an aborted transaction; a broker
    unregistered; ``orders`` deleted and re-created under a new id."""
    log = LogBuilder(timestamp=START_MS)

    def step(*bodies, seconds: int = 30) -> None:
        log.batch(*bodies, timestamp=log.timestamp + seconds * 1000)

    step(feature_level("metadata.version", 21))
    step(*(register_broker(b, 10 + b, rack=f"rack-{b}") for b in (1, 2, 3)))
    step(*(unfence_broker(b, 10 + b) for b in (1, 2, 3)))
    step(
        topic("orders", ORDERS),
        partition(ORDERS, 0, [1, 2, 3]),
        partition(ORDERS, 1, [2, 3, 1]),
        partition(ORDERS, 2, [3, 1, 2]),
    )
    step(topic("audit", AUDIT), partition(AUDIT, 0, [1, 2]))
    step(config(TOPIC, "orders", "min.insync.replicas", "2"), config(TOPIC, "orders", "retention.ms", "3600000"))
    step(config(BROKER, "", "min.insync.replicas", "3"))  # cluster default: audit (RF 2) needs min(3, 2)
    step(config(BROKER, "2", "min.insync.replicas", "1"))  # broker 2 only
    step(partition_change(ORDERS, 0, isr=[1, 2]))  # 2 ≥ 2: not under min ISR
    step(partition_change(ORDERS, 1, isr=[2]))  # 1 < 2 (topic level wins over broker 2's 1)
    step(partition_change(AUDIT, 0, isr=[1]))  # 1 < min(3, 2) from the cluster default
    step(config(TOPIC, "orders", "min.insync.replicas", None))  # orders-1 now resolves broker 2's 1
    step(partition_change(ORDERS, 0, isr=[1, 2, 3]), partition_change(AUDIT, 0, isr=[1, 2]))  # expansions
    step(broker_change(3, 13, in_controlled_shutdown=1))
    step(partition_change(ORDERS, 2, leader=1, isr=[1, 2]))  # clean election 3→1
    step(fence_broker(3, 13), partition_change(ORDERS, 0, isr=[1, 2]))
    step(
        fence_broker(1, 11),
        partition_change(ORDERS, 0, leader=2, isr=[2]),
        partition_change(ORDERS, 2, leader=2, isr=[2]),
        partition_change(AUDIT, 0, leader=2, isr=[2]),
    )
    step(
        fence_broker(2, 12),
        partition_change(ORDERS, 0, leader=-1, isr=[], elr=[2], last_known_elr=[2]),
        partition_change(ORDERS, 1, leader=-1, isr=[], elr=[2], last_known_elr=[2]),
    )  # offline
    step(unfence_broker(2, 12), partition_change(ORDERS, 0, leader=2, isr=[2], elr=[], last_known_elr=[]))
    step(register_broker(3, 40, rack="rack-3"))  # broker 3 restarts: re-registered, fenced
    step(unfence_broker(3, 40))
    step(partition_change(ORDERS, 1, leader=3, isr=[3], leader_recovery_state=1, elr=[], last_known_elr=[]))
    step(partition_change(ORDERS, 1, leader_recovery_state=0))  # unclean recovery done
    step(register_broker(4, 50, rack="rack-4"))
    step(unfence_broker(4, 50))
    step(partition_change(ORDERS, 2, replicas=[3, 1, 2, 4], adding=[4], removing=[3]))
    step(partition_change(ORDERS, 2, replicas=[1, 2, 4], isr=[2, 4], adding=[], removing=[]))  # completed
    step(partition_change(AUDIT, 0, replicas=[1, 2, 4], adding=[4]))
    step(begin("aborted"), partition_change(AUDIT, 0, leader=4, isr=[4]), abort("test"))  # never visible
    step(partition_change(AUDIT, 0, replicas=[1, 2], adding=[]))  # cancelled
    step(
        unfence_broker(1, 11),
        partition_change(ORDERS, 2, isr=[2, 4, 1]),
        partition_change(ORDERS, 1, isr=[3, 1]),
        partition_change(ORDERS, 0, isr=[2, 1]),
        partition_change(AUDIT, 0, isr=[2, 1]),
    )
    step(partition_change(ORDERS, 0, leader=1), partition_change(AUDIT, 0, leader=1))  # preferred elections
    step(broker_change(4, 50, fenced=1), partition_change(ORDERS, 2, isr=[2, 1]))
    step(unregister_broker(4, 50))
    step(begin("move"), partition_change(ORDERS, 2, replicas=[1, 2]), end(), seconds=5)
    step(remove_topic(ORDERS))
    step(
        topic("orders", ORDERS_AGAIN),
        partition(ORDERS_AGAIN, 0, [2, 3]),
        config(TOPIC, "orders", "cleanup.policy", "compact"),
    )
    return log.records
