"""Logs and lakes the tests share: crafted and broken logs written as real segments, lakes ingested with their
temporal image."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from image.temporal.ingest import ingest
from metadata.lake.protocol import Lake
from metadata.log.codec.batch import encode_batch
from metadata.log.codec.records import encode_control_record, encode_metadata_value
from metadata.log.records import LogRecord
from metadata.log.schema import spec_by_type_name
from tests.logbuilder import (
    Body,
    LogBuilder,
    abort,
    acl,
    begin,
    broker_change,
    clear_elr,
    client_quota,
    config,
    end,
    feature_level,
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
    zk_migration_state,
)

T1, T2, T3, T4, T5, T6, T9 = (uuid(0x100 + i) for i in range(7))
D1, D2, D3 = uuid(0xD001), uuid(0xD002), uuid(0xD003)
LEADER_CHANGE = {"version": 0, "leaderId": 3000, "voters": [{"voterId": 3000}], "grantingVoters": []}


def write_log(log: LogBuilder, directory: Path, segments_at: Sequence[int] = ()) -> Path:
    """The builder's batches as segments (records at their type's latest version); a new segment starts at
    each batch base offset of ``segments_at``."""
    out = directory / "__cluster_metadata-0"
    out.mkdir(parents=True)
    raw = bytearray()
    start = 0
    for base, records in _batches(log):
        if base in segments_at and raw:
            (out / f"{start:020d}.log").write_bytes(bytes(raw))
            raw, start = bytearray(), base
        raw += _encoded(records)
    (out / f"{start:020d}.log").write_bytes(bytes(raw))
    return out


def write_snapshot(
    directory: Path, end_offset: int, epoch: int, last_contained_timestamp: int, *bodies: Body, timestamp: int = 1000
) -> Path:
    """A snapshot file ``<end offset>-<epoch>.checkpoint`` in ``directory`` as Kafka's ``RecordsSnapshotWriter``
    lays one out: a SNAPSHOT_HEADER batch, ``bodies`` in one batch (none: an empty snapshot, as Kafka's
    ``MetadataLoaderTest.testLoadEmptySnapshot`` loads one), a SNAPSHOT_FOOTER batch; positions from 0, every
    batch at ``epoch``."""
    snap = LogBuilder(epoch=epoch, timestamp=timestamp)
    snap.control("SNAPSHOT_HEADER", {"version": 0, "lastContainedLogTimestamp": last_contained_timestamp})
    if bodies:
        snap.batch(*bodies)
    snap.control("SNAPSHOT_FOOTER", {"version": 0})
    path = directory / f"{end_offset:020d}-{epoch:010d}.checkpoint"
    path.write_bytes(b"".join(_encoded(records) for _, records in _batches(snap)))
    return path


def _batches(log: LogBuilder) -> list[tuple[int, list[LogRecord]]]:
    """The builder's batches: (base offset, records), by base offset."""
    batches: dict[int, list[LogRecord]] = {}
    for r in log.records:
        batches.setdefault(r.batch_base_offset, []).append(r)
    return sorted(batches.items())


def _encoded(records: list[LogRecord]) -> bytes:
    """One batch's bytes (data records at their type's latest version)."""
    first = records[0]
    if first.is_control:
        items = [encode_control_record(first.control_type, first.data)]
    else:
        items = [
            (None, encode_metadata_value(r.type, spec_by_type_name(r.type).valid_versions.high, r.data))
            for r in records
        ]
    return encode_batch(
        first.batch_base_offset, items, leader_epoch=first.epoch, timestamp=first.timestamp, control=first.is_control
    )


CRAFTED_SEGMENTS = (20, 45, 48, 60)
"""Where the crafted log's segments start (one ends inside a metadata transaction, at 47)."""


def write_crafted(root: Path) -> Path:
    """The crafted log as segments starting at :data:`CRAFTED_SEGMENTS`, under ``root``; its directory."""
    return write_log(crafted_log(), root / "log", segments_at=CRAFTED_SEGMENTS)


def make_lake(root: Path, inputs: Sequence[Path], name: str = "lake", *, engine: str = "local", spark=None) -> Lake:
    """A lake of ``inputs`` with its temporal image, ingested in process (``engine="spark"``: on ``spark``)."""
    ingest([str(p) for p in inputs], str(root / name), engine=engine, spark=spark, progress=False)
    return Lake(str(root / name))


def crafted_log() -> LogBuilder:
    """A valid log exercising every part and the delta-boundary quirks (offsets in comments)."""
    log = LogBuilder()
    log.batch(begin("Bootstrap records"), feature_level("metadata.version", 21), zk_migration_state(0), end())  # 0-3
    log.batch(
        register_broker(1, 10, log_dirs=[D2, D1]),  # 4
        register_broker(
            2,
            11,
            rack="r1",
            endpoints=[
                {"name": "A", "host": "h1", "port": 1, "securityProtocol": 0},
                {"name": "A", "host": "h2", "port": 2, "securityProtocol": 9},
                {"name": "B", "host": "h3", "port": 3, "securityProtocol": 1},
            ],
        ),
        register_controller(3000),
    )
    log.batch(broker_change(1, 10, fenced=-1), unfence_broker(2, 11))  # 7-8
    log.batch(
        topic("a", T1),
        partition(T1, 0, [1, 2], directories=[D1, D2]),
        partition(T1, 1, [2, 1]),  # 9-11
        config(2, "a", "retention.ms", "1"),
        config(4, "", "x", "y"),
    )  # 12-13
    log.batch(
        partition_change(T1, 0, isr=[1]),
        partition_change(T1, 0, leader=2),  # 14-15
        partition_change(T1, 1, leader=1, replicas=[2, 1, 3]),
        partition_change(T1, 0, leader=2),  # 16-17
        partition_change(T1, 1, leader_recovery_state=1),  # 18
        partition_change(T1, 0, elr=[2], last_known_elr=[1]),
    )  # 19
    log.batch(
        acl(uuid(0xA1)),
        acl(uuid(0xA2), operation=99),
        client_quota({"user": None}, "producer_byte_rate", 1024.0),
        client_quota({"user": "u", "client-id": "c"}, "k", 2.5),
        scram("alice", 1),
        scram("bob", 2),
        scram("carol", 7),
        token("tok1"),
        token("tok2", renewers=()),
        producer_ids(1000),
    )  # 20-29
    log.batch(
        remove_acl(uuid(0xA1)),
        client_quota({"client-id": "c", "user": "u"}, "k", remove=True),
        remove_scram("bob", 2),
        remove_token("tok1"),
        feature_level("group.version", 1),
    )  # 30-34
    # ACL added and removed in one delta; topic "b" created, configured and removed in one delta
    # (its config survives, docs/replay-rules.md, "RemoveTopicRecord")
    log.batch(
        acl(uuid(0xA3)), remove_acl(uuid(0xA3)), topic("b", T2), config(2, "b", "k", "v"), remove_topic(T2)
    )  # 35-39
    # "a" had configs when this delta started: the config set just before the removal is discarded
    log.batch(config(2, "a", "segment.ms", "5"), remove_topic(T1))  # 40-41
    log.batch(topic("a", T3), partition(T3, 0, [1]), config(2, "a", "x", "1"))  # 42-44
    log.batch(begin("t"), topic("c", T4), partition(T4, 0, [2]))  # 45-47: batch ends inside the transaction
    log.batch(partition_change(T4, 0, isr=[2]), end(), config(4, "1", "k", "v"))  # 48-50: a record after End
    log.batch(begin(), topic("d", T5), abort())  # 51-53
    log.batch(no_op(), begin(), topic("e", T6), end(), no_op())  # 54-58: Begin in the middle of a batch
    log.control("LEADER_CHANGE", LEADER_CHANGE, epoch=2)  # 59
    log.batch(
        feature_level("group.version", 0),
        zk_migration_state(1),
        producer_ids(2000),  # 60-62
        register_broker(1, 20, log_dirs=[D3]),
        broker_change(1, 20, in_controlled_shutdown=1),  # 63-64
        unregister_broker(2, 11),
    )  # 65
    log.batch(topic("a2", T1), partition(T1, 0, [3]))  # 66-67: a removed id declared again
    log.batch(topic("b2", T4), partition(T4, 1, [1]))  # 68-69: a live id declared again (partition 0 goes)
    log.batch(config(2, "b2", "k1", "v1"), partition_change(T3, 0, replicas=[1, 2], directories=[D1, D2]))  # 70-71
    log.batch(config(2, "b2", "k2", "v2"), remove_topic(T4), config(2, "b2", "k3", "v3"))  # 72-74
    log.batch(remove_acl(uuid(0xA2)), remove_acl(uuid(0xA2)))  # 75-76: an image ACL removed twice in a delta
    log.batch(
        register_controller(3000, endpoints=[{"name": "C", "host": "c", "port": 9, "securityProtocol": 3}]),
        partition_change(T3, 0, leader=-1, isr=[]),
        broker_change(1, 20, log_dirs=[D1, D2]),
    )  # 77-79
    log.batch(partition_change(T3, 0, elr=[1], last_known_elr=[]), partition_change(T1, 0, elr=[3]))  # 80-81
    # ClearElrRecord (Kafka 4.x): a named topic, then every topic (only a2-0 still has an ELR), then a2 again
    log.batch(clear_elr("a"), clear_elr(""), clear_elr("a2"))  # 82-84
    return log


def broken_log() -> LogBuilder:
    """A log with one inconsistency of each kind (first at offset 5)."""
    log = LogBuilder()
    log.batch(register_broker(1, 10), topic("a", T1), partition(T1, 0, [1]), no_op())  # 0-3
    log.batch(no_op())  # 4
    log.batch(partition_change(T1, 5, isr=[1]))  # 5: unknown partition
    log.batch(partition_change(T9, 0, isr=[1]), partition(T9, 0, [1]))  # 6-7: unknown topic
    log.batch(unfence_broker(7, 1), broker_change(1, 99, fenced=-1), broker_change(1, 10, fenced=5))  # 8-10
    log.batch(remove_topic(T9), remove_acl(uuid(0xAA)))  # 11-12
    log.batch(end(), begin(), begin(), end())  # 13-16: End without Begin, Begin inside a transaction
    log.batch(partition(T1, 1, [1, 2], directories=[D1]), partition_change(T1, 0, leader_recovery_state=5))  # 17-18
    log.batch(
        partition_change(T1, 0, directories=[D1]),
        partition_change(T1, 0, replicas=[1, 2]),  # 19-20
        partition_change(T1, 0, isr=[1]),
    )  # 21: the merge at 20 is rejected, this one applies
    log.batch(feature_level("metadata.version", 0), zk_migration_state(9))  # 22-23
    log.batch(
        token("t", owner="alice"),
        register_controller(3000, endpoints=[{"name": "C", "host": "c", "port": 9, "securityProtocol": 9}]),
    )  # 24-25
    log.batch(topic("a", T2), partition(T2, 0, [1]))  # 26-27: name collision (applied, then reported)
    log.batch(begin(), partition(T1, 3, [1], leader_recovery_state=9), abort())  # 28-30: rejected, then aborted
    log.batch(partition_change(T1, 0, leader=1))  # 31
    log.batch(clear_elr("nope"))  # 32: no such topic
    return log
