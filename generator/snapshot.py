"""Writes a metadata snapshot (``<end offset>-<epoch>.checkpoint``) of the simulated state.

Layout as ``RecordsSnapshotWriter`` / ``SnapshotEmitter`` produce it: a control batch with the
SNAPSHOT_HEADER (kraft.version 0, static quorum: no KRAFT_VERSION/KRAFT_VOTERS records), the image
records in ``MetadataImage.write`` order, appended in chunks of 1024 records that the accumulator packs
into batches of at most 8 MiB, then a control batch with the SNAPSHOT_FOOTER. Offsets inside the file
start at 0; every batch carries the snapshot epoch.
"""

from __future__ import annotations

import os
from typing import Any

from generator.state import TOPIC_RESOURCE, ClusterState
from metadata.log.codec.batch import encode_batch
from metadata.log.codec.records import encode_control_record, encode_metadata_value

SNAPSHOT_WRITE_CHUNK = 1024  # SnapshotEmitter DEFAULT_BATCH_SIZE
MAX_BATCH_BYTES = 8 * 1024 * 1024
REGISTER_BROKER_VERSION = 3
PARTITION_RECORD_VERSION = 1


def snapshot_file_name(end_offset: int, epoch: int) -> str:
    return f"{end_offset:020d}-{epoch:010d}.checkpoint"


def image_records(state: ClusterState) -> list[tuple[str, int, dict[str, Any]]]:
    """The image as records, in ``MetadataImage.write`` order (call at a delta boundary)."""
    out: list[tuple[str, int, dict[str, Any]]] = []
    # features: metadata.version first, then the other finalized features, then the ZK migration state
    out.append(("FEATURE_LEVEL_RECORD", 0, {"name": "metadata.version", "featureLevel": state.metadata_version}))
    for name in sorted(state.features):
        out.append(("FEATURE_LEVEL_RECORD", 0, {"name": name, "featureLevel": state.features[name]}))
    out.append(("ZK_MIGRATION_STATE_RECORD", 0, {"zkMigrationState": state.zk_migration_state or 0}))
    # cluster: brokers, then controllers
    for broker_id in sorted(state.brokers):
        b = state.brokers[broker_id]
        rec: dict[str, Any] = {
            "brokerId": b.id,
            "isMigratingZkBroker": False,
            "incarnationId": b.incarnation,
            "brokerEpoch": b.epoch,
            "endPoints": b.endpoints,
            "features": b.features,
            "rack": b.rack,
            "fenced": b.fenced,
            "inControlledShutdown": b.in_cs,
            "logDirs": b.dirs,
        }
        out.append(("REGISTER_BROKER_RECORD", REGISTER_BROKER_VERSION, rec))
    for controller_id in sorted(state.controllers):
        out.append(("REGISTER_CONTROLLER_RECORD", 0, state.controllers[controller_id]))
    # topics: TopicRecord then its PartitionRecords
    for topic in state.topics.values():
        out.append(("TOPIC_RECORD", 0, {"name": topic.name, "topicId": topic.id}))
        for pid, part in enumerate(topic.parts):
            out.append(("PARTITION_RECORD", PARTITION_RECORD_VERSION, part.to_record(topic.id, pid)))
    # configs: the controller's, then the image-only ones of removed topics
    configs = [
        *state.configs.items(),
        *(
            ((TOPIC_RESOURCE, name), entries)
            for name, entries in state.topic_config_image.orphans(state.configs).items()
        ),
    ]
    for (resource_type, resource_name), entries in configs:
        for key, value in entries.items():
            out.append(
                (
                    "CONFIG_RECORD",
                    0,
                    {"resourceType": resource_type, "resourceName": resource_name, "name": key, "value": value},
                )
            )
    # client quotas: none are generated; producer ids
    if state.next_producer_id >= 0:
        out.append(
            ("PRODUCER_IDS_RECORD", 0, {"brokerId": -1, "brokerEpoch": -1, "nextProducerId": state.next_producer_id})
        )
    # ACLs, SCRAM credentials and delegation tokens: none are generated
    return out


def write_snapshot(
    log_dir: str,
    state: ClusterState,
    *,
    end_offset: int,
    epoch: int,
    last_contained_log_timestamp: int,
    now: int,
    compression: str = "none",
) -> dict[str, Any]:
    """Write the snapshot file; returns its description (file, counts, by_type, bytes)."""
    records = image_records(state)
    name = snapshot_file_name(end_offset, epoch)
    by_type: dict[str, int] = {}
    chunks: list[list[tuple[None, bytes]]] = []
    for i in range(0, len(records), SNAPSHOT_WRITE_CHUNK):
        chunk = []
        for type_name, version, data in records[i : i + SNAPSHOT_WRITE_CHUNK]:
            chunk.append((None, encode_metadata_value(type_name, version, data)))
            by_type[type_name] = by_type.get(type_name, 0) + 1
        chunks.append(chunk)
    batches: list[list[tuple[None, bytes]]] = []
    current: list[tuple[None, bytes]] = []
    current_bytes = 0
    for chunk in chunks:
        size = sum(len(v) + 8 for _, v in chunk)
        if current and current_bytes + size > MAX_BATCH_BYTES:
            batches.append(current)
            current, current_bytes = [], 0
        current = current + chunk
        current_bytes += size
    if current:
        batches.append(current)

    offset = 0
    parts: list[bytes] = []
    header = encode_control_record(
        "SNAPSHOT_HEADER", {"version": 0, "lastContainedLogTimestamp": last_contained_log_timestamp}
    )
    parts.append(
        encode_batch(offset, [header], leader_epoch=epoch, timestamp=now, control=True, compression=compression)
    )
    offset += 1
    for batch in batches:
        parts.append(encode_batch(offset, batch, leader_epoch=epoch, timestamp=now, compression=compression))
        offset += len(batch)
    footer = encode_control_record("SNAPSHOT_FOOTER", {"version": 0})
    parts.append(
        encode_batch(offset, [footer], leader_epoch=epoch, timestamp=now, control=True, compression=compression)
    )
    offset += 1
    raw = b"".join(parts)
    with open(os.path.join(log_dir, name), "wb") as fh:
        fh.write(raw)
    return {
        "file": name,
        "end_offset": end_offset,
        "epoch": epoch,
        "last_contained_log_timestamp": last_contained_log_timestamp,
        "timestamp": now,
        "records": offset,
        "metadata_records": len(records),
        "control_records": 2,
        "batches": len(batches) + 2,
        "by_type": by_type,
        "bytes": len(raw),
    }
