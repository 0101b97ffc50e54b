"""What ``generate`` wrote: exact counts, to be compared with an independent read of the files."""

from __future__ import annotations

from pydantic import BaseModel, Field


class SegmentReport(BaseModel):
    """One ``<base offset>.log`` file."""

    file: str
    base_offset: int
    last_offset: int
    batches: int
    records: int
    bytes: int


class SnapshotReport(BaseModel):
    """One ``<end offset>-<epoch>.checkpoint`` file. Offsets inside the file start at 0."""

    file: str
    end_offset: int = Field(description="exclusive: the snapshot holds the effect of offsets < end_offset")
    epoch: int = Field(description="raft epoch of the log batch holding end_offset - 1")
    last_contained_log_timestamp: int = Field(description="SnapshotHeaderRecord.LastContainedLogTimestamp")
    timestamp: int = Field(description="timestamp of every batch of the file")
    records: int = Field(description="all records of the file, header and footer included")
    metadata_records: int
    control_records: int
    batches: int
    by_type: dict[str, int] = Field(description="metadata records of the file by MetadataRecordType name")
    bytes: int


class GenerateReport(BaseModel):
    """Counts of the generated ``__cluster_metadata-0`` log.

    Unless a field says otherwise, counts cover the **log segments only** (not the snapshot).
    ``total_records = metadata_records + control_records``; every record occupies one offset, so
    ``total_records == last_offset - first_offset + 1``. Timestamps are batch timestamps
    (``maxTimestamp``; every record of a batch carries it).
    """

    # parameters
    seed: int
    brokers: int
    topics: int
    partitions: int
    churn: int
    replication_factor: int
    noop_interval_ms: int
    compression: str
    segment_bytes: int
    snapshot_at: int | None

    log_dir: str = Field(description="the __cluster_metadata-0 directory that was written")

    # records and batches
    total_records: int
    metadata_records: int = Field(description="records of data batches (metadata records)")
    control_records: int = Field(description="records of control batches (LEADER_CHANGE)")
    by_type: dict[str, int] = Field(description="metadata records by MetadataRecordType name (e.g. NO_OP_RECORD)")
    control_by_type: dict[str, int] = Field(description="control records by control type name (LEADER_CHANGE)")
    batches: int
    data_batches: int
    control_batches: int
    first_offset: int
    last_offset: int
    first_timestamp: int
    last_timestamp: int
    first_epoch: int
    last_epoch: int
    epochs: list[int] = Field(description="raft epochs in log order (one LEADER_CHANGE batch starts each)")
    bytes: int = Field(description="total size of the segment files")

    # files
    segments_written: int
    segments: list[SegmentReport]
    snapshots_written: int
    snapshots: list[SnapshotReport]

    # metadata transactions
    transactions_committed: int
    transactions_aborted: int
    committed_transaction_records: int = Field(
        description="metadata records strictly between a BeginTransactionRecord and its EndTransactionRecord"
    )
    aborted_transaction_records: int = Field(
        description="metadata records strictly between a BeginTransactionRecord and its AbortTransactionRecord "
        "(never visible in any image); the Begin/Abort markers and control records are not counted"
    )

    # what happened
    churn_events: dict[str, int] = Field(description="top-level churn events by kind (follow-ups not counted)")
    final_live_topics: int
    final_live_partitions: int
    final_registered_brokers: int
    final_fenced_brokers: int
    final_next_producer_id: int
