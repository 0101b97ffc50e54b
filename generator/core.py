"""``generate``: simulate a cluster and write its ``__cluster_metadata-0`` directory."""

from __future__ import annotations

import json
import os
import re
from typing import Any

from generator.report import GenerateReport, SegmentReport, SnapshotReport
from generator.simulator import CONTROLLER_IDS, Simulator
from generator.snapshot import write_snapshot
from generator.state import METADATA_TOPIC_ID, ClusterState
from generator.writer import LogWriter, RecordSink
from metadata.log.codec.compression import CODECS

LOG_DIR_NAME = "__cluster_metadata-0"
DEFAULT_SEGMENT_BYTES = 1 << 20
_OWN_FILES = re.compile(
    r"^(\d{20}\.log|\d{20}-\d{10}\.checkpoint|leader-epoch-checkpoint|partition\.metadata|"
    r"quorum-state)$"
)


def generate(
    seed: int,
    brokers: int,
    topics: int,
    partitions: int,
    churn: int,
    out_dir: str | os.PathLike[str],
    *,
    replication_factor: int = 3,
    snapshot_at: int | None = None,
    noop_interval_ms: int = 500,
    compression: str = "none",
    segment_bytes: int = DEFAULT_SEGMENT_BYTES,
    write_aux_files: bool = True,
    record_sink: RecordSink | None = None,
) -> GenerateReport:
    """Simulate a KRaft cluster deterministically and write its metadata log.

    Writes ``out_dir/__cluster_metadata-0/<20-digit base offset>.log`` segments (rolled at
    ``segment_bytes``), optionally one snapshot ``<end offset>-<epoch>.checkpoint`` whose end offset
    is the first batch boundary ``>= snapshot_at`` that lies outside any metadata transaction and
    after the bootstrap records (the log end if the log is shorter), and — unless
    ``write_aux_files`` is False — the small text files Kafka keeps next to them
    (``partition.metadata``, ``leader-epoch-checkpoint``, ``quorum-state``). Files of those names
    already in the directory are replaced. Same arguments → byte-identical files.

    ``record_sink(offset, epoch, batch_timestamp, type_or_control_type, version, data, is_control)``
    sees every log record as it is written (for checkers and tests).
    """
    if brokers < 1:
        raise ValueError("brokers must be at least 1")
    if not 1 <= replication_factor <= brokers:
        raise ValueError(f"replication factor must be between 1 and the number of brokers ({brokers})")
    if partitions < 1:
        raise ValueError("partitions must be at least 1")
    if topics < 0 or churn < 0:
        raise ValueError("topics and churn must not be negative")
    if compression not in CODECS:
        raise ValueError(f"compression must be one of {', '.join(CODECS)}")
    if segment_bytes < 1:
        raise ValueError("segment_bytes must be positive")
    if snapshot_at is not None and snapshot_at < 1:
        raise ValueError("snapshot_at must be at least 1")

    log_dir = os.path.join(os.fspath(out_dir), LOG_DIR_NAME)
    os.makedirs(log_dir, exist_ok=True)
    for name in os.listdir(log_dir):
        if _OWN_FILES.match(name):
            os.remove(os.path.join(log_dir, name))

    writer = LogWriter(log_dir, compression=compression, segment_bytes=segment_bytes, sink=record_sink)
    snapshots: list[dict[str, Any]] = []

    def on_snapshot(state: ClusterState, end_offset: int, epoch: int, last_ts: int, now: int) -> None:
        snapshots.append(
            write_snapshot(
                log_dir,
                state,
                end_offset=end_offset,
                epoch=epoch,
                last_contained_log_timestamp=last_ts,
                now=now,
                compression=compression,
            )
        )

    sim = Simulator(
        seed=seed,
        brokers=brokers,
        topics=topics,
        partitions=partitions,
        churn=churn,
        replication_factor=replication_factor,
        noop_interval_ms=noop_interval_ms,
        writer=writer,
        snapshot_at=snapshot_at,
        on_snapshot=on_snapshot,
    )
    try:
        sim.run()
        if snapshot_at is not None and not sim.snapshot_taken:
            sim.take_snapshot()  # the log ended before snapshot_at: snapshot of the whole log
    finally:
        writer.close()

    if write_aux_files:
        _write_aux_files(log_dir, writer, sim)

    state = sim.state
    epochs = [e for e, _ in writer.epoch_starts]
    return GenerateReport(
        seed=seed,
        brokers=brokers,
        topics=topics,
        partitions=partitions,
        churn=churn,
        replication_factor=replication_factor,
        noop_interval_ms=noop_interval_ms,
        compression=compression,
        segment_bytes=segment_bytes,
        snapshot_at=snapshot_at,
        log_dir=log_dir,
        total_records=writer.total_records,
        metadata_records=writer.metadata_records,
        control_records=writer.control_records,
        by_type=dict(sorted(writer.by_type.items())),
        control_by_type=dict(sorted(writer.control_by_type.items())),
        batches=writer.data_batches + writer.control_batches,
        data_batches=writer.data_batches,
        control_batches=writer.control_batches,
        first_offset=0,
        last_offset=writer.next_offset - 1,
        first_timestamp=writer.first_timestamp,
        last_timestamp=writer.last_timestamp,
        first_epoch=epochs[0],
        last_epoch=epochs[-1],
        epochs=epochs,
        bytes=writer.bytes_written,
        segments_written=len(writer.segments),
        segments=[
            SegmentReport(
                file=s.file,
                base_offset=s.base_offset,
                last_offset=s.last_offset,
                batches=s.batches,
                records=s.records,
                bytes=s.bytes,
            )
            for s in writer.segments
        ],
        snapshots_written=len(snapshots),
        snapshots=[SnapshotReport(**s) for s in snapshots],
        transactions_committed=writer.transactions_committed,
        transactions_aborted=writer.transactions_aborted,
        committed_transaction_records=writer.committed_transaction_records,
        aborted_transaction_records=writer.aborted_transaction_records,
        churn_events=dict(sorted(sim.churn_events.items())),
        final_live_topics=len(state.topics),
        final_live_partitions=sum(len(t.parts) for t in state.topics.values()),
        final_registered_brokers=len(state.brokers),
        final_fenced_brokers=sum(1 for b in state.brokers.values() if b.fenced),
        final_next_producer_id=state.next_producer_id,
    )


def _write_aux_files(log_dir: str, writer: LogWriter, sim: Simulator) -> None:
    with open(os.path.join(log_dir, "partition.metadata"), "w", newline="\n") as fh:
        fh.write(f"version: 0\ntopic_id: {METADATA_TOPIC_ID}\n")
    with open(os.path.join(log_dir, "leader-epoch-checkpoint"), "w", newline="\n") as fh:
        fh.write(f"0\n{len(writer.epoch_starts)}\n")
        fh.writelines(f"{epoch} {start}\n" for epoch, start in writer.epoch_starts)
    quorum = {
        "clusterId": "",
        "leaderId": sim.raft_leader,
        "leaderEpoch": sim.raft_epoch,
        "votedId": -1,
        "appliedOffset": 0,
        "currentVoters": [{"voterId": c} for c in CONTROLLER_IDS],
        "data_version": 0,
    }
    with open(os.path.join(log_dir, "quorum-state"), "w", newline="\n") as fh:
        fh.write(json.dumps(quorum, separators=(",", ":")))
