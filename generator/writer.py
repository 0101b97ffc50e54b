"""Batches records like the KRaft raft layer and writes them into rolled ``.log`` segments.

Batching follows ``BatchAccumulator``: records of controller operations that arrive within the
append linger (25 ms, ``controller.quorum.append.linger.ms``) share one batch whose timestamp is the
time the batch was started; an operation's records are never split across batches unless the
operation itself asks for it (metadata transactions written in several batches). A control batch
(LEADER_CHANGE) is always a batch of its own. Segments roll when the next batch would push the
segment past ``segment_bytes`` (``LocalLog.maybeRoll``); a segment is named after the base offset
of its first batch.

``on_delta_end(last_offset)`` reports where the batch loader publishes a delta, as each batch is written:
the written batches are read by the loader's own rule (``image.loader.DeltaEnds``).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from image.loader import DeltaEnds
from metadata.log.codec.batch import encode_batch
from metadata.log.codec.records import encode_control_record, encode_metadata_value
from metadata.log.records import LogRecord

LINGER_MS = 25
MAX_RECORDS_PER_BATCH = 10_000  # QuorumController.MAX_RECORDS_PER_BATCH: records per append of an operation
MAX_BATCH_BYTES = 8 * 1024 * 1024  # KafkaRaftClient.MAX_BATCH_SIZE_BYTES
RECORD_OVERHEAD = 8  # generous estimate of the per-record framing, for the size limit only

# (offset, epoch, batch timestamp, type name or control type, version, data, is_control)
RecordSink = Callable[[int, int, int, str, int, dict[str, Any], bool], None]


class SegmentStats:
    __slots__ = ("base_offset", "batches", "bytes", "file", "last_offset", "records")

    def __init__(self, file: str, base_offset: int) -> None:
        self.file = file
        self.base_offset = base_offset
        self.last_offset = base_offset - 1
        self.batches = 0
        self.records = 0
        self.bytes = 0


class LogWriter:
    """Accumulates records into batches and appends the batches to segment files."""

    def __init__(
        self,
        log_dir: str,
        *,
        compression: str = "none",
        segment_bytes: int = 1 << 20,
        linger_ms: int = LINGER_MS,
        sink: RecordSink | None = None,
    ) -> None:
        self.log_dir = log_dir
        self.compression = compression
        self.segment_bytes = segment_bytes
        self.linger_ms = linger_ms
        self.sink = sink
        # called at batch boundaries between controller operations, outside metadata transactions
        self.on_boundary: Callable[[], None] | None = None
        # called with the last offset of each delta the batch loader publishes (see the module doc)
        self.on_delta_end: Callable[[int], None] | None = None

        self.epoch = 0
        self.next_offset = 0
        self.epoch_starts: list[tuple[int, int]] = []  # (epoch, first offset) as in leader-epoch-checkpoint

        self._pending: list[tuple[None, bytes]] = []
        self._pending_types: list[str] = []
        self._pending_bytes = 0
        self._pending_time = 0
        self._op_time = 0
        self._op_start = 0

        self._file: Any = None
        self._segment: SegmentStats | None = None
        self.segments: list[SegmentStats] = []

        # counts of what has been assigned an offset (everything assigned is written at close)
        self.metadata_records = 0
        self.control_records = 0
        self.by_type: dict[str, int] = {}
        self.control_by_type: dict[str, int] = {}
        self.data_batches = 0
        self.control_batches = 0
        self.first_timestamp: int | None = None
        self.last_timestamp: int | None = None
        self.bytes_written = 0
        # metadata transactions (as the batch loader sees them)
        self._txn_open = False
        self._txn_records = 0
        self.transactions_committed = 0
        self.transactions_aborted = 0
        self.aborted_transaction_records = 0
        self.committed_transaction_records = 0

        self._noop_value = encode_metadata_value("NO_OP_RECORD", 0, {})
        self._delta_ends = DeltaEnds(self._delta_end)

    # ------------------------------------------------------------------ records

    @property
    def pending_count(self) -> int:
        return len(self._pending)

    def begin_op(self, t: int) -> None:
        """Start a controller operation at time ``t`` (ms): the open batch is completed first if the
        linger has expired."""
        if self._pending and t - self._pending_time > self.linger_ms:
            self.flush()
        if not self._pending:
            self._boundary()
        self._op_time = t
        self._op_start = len(self._pending)

    def end_op(self) -> None:
        """End an operation; if it overflowed the open batch, the records before it form their own batch."""
        if self._pending_bytes > MAX_BATCH_BYTES and self._op_start:
            head, tail = self._pending[: self._op_start], self._pending[self._op_start :]
            tail_types = self._pending_types[self._op_start :]
            self._pending, self._pending_types = head, self._pending_types[: self._op_start]
            self.flush()
            self._pending, self._pending_types = tail, tail_types
            self._pending_bytes = sum(len(v) + RECORD_OVERHEAD for _, v in tail)
            self._pending_time = self._op_time
        self._op_start = len(self._pending)

    def add(self, type_name: str, version: int, data: dict[str, Any]) -> int:
        """Append a metadata record to the open batch; returns its offset."""
        value = encode_metadata_value(type_name, version, data) if type_name != "NO_OP_RECORD" else self._noop_value
        if (
            self._pending_bytes > MAX_BATCH_BYTES // 2
            and (len(self._pending) - self._op_start) % MAX_RECORDS_PER_BATCH == 0
        ):
            # a huge non-atomic operation is appended in chunks of 10,000 records; a chunk that no
            # longer fits starts a new batch
            self.flush()
        if not self._pending:
            self._pending_time = self._op_time
        self._pending.append((None, value))
        self._pending_types.append(type_name)
        self._pending_bytes += len(value) + RECORD_OVERHEAD
        offset = self.next_offset
        self.next_offset = offset + 1
        self.metadata_records += 1
        by_type = self.by_type
        by_type[type_name] = by_type.get(type_name, 0) + 1
        if self._txn_open:
            if type_name == "END_TRANSACTION_RECORD":
                self._txn_open = False
                self.transactions_committed += 1
                self.committed_transaction_records += self._txn_records
            elif type_name == "ABORT_TRANSACTION_RECORD":
                self._txn_open = False
                self.transactions_aborted += 1
                self.aborted_transaction_records += self._txn_records
            else:
                self._txn_records += 1
        elif type_name == "BEGIN_TRANSACTION_RECORD":
            self._txn_open = True
            self._txn_records = 0
        if self.sink is not None:
            self.sink(offset, self.epoch, self._pending_time, type_name, version, data, False)
        return offset

    def add_noop(self) -> int:
        return self.add("NO_OP_RECORD", 0, {})

    def flush(self) -> None:
        """Complete the open batch (if any) and write it."""
        if not self._pending:
            return
        records = self._pending
        base = self.next_offset - len(records)
        self._write_batch(
            base,
            len(records),
            encode_batch(
                base, records, leader_epoch=self.epoch, timestamp=self._pending_time, compression=self.compression
            ),
            self._pending_time,
        )
        self.data_batches += 1
        self._read_batch(base, self._pending_types, self._pending_time, None)
        self._pending = []
        self._pending_types = []
        self._pending_bytes = 0
        self._op_start = 0

    def control(self, t: int, control_type: str, data: dict[str, Any]) -> int:
        """Write a control batch holding one control record at time ``t``; returns its offset."""
        self.flush()
        key, value = encode_control_record(control_type, data)
        offset = self.next_offset
        self.next_offset += 1
        self._write_batch(
            offset,
            1,
            encode_batch(
                offset, [(key, value)], leader_epoch=self.epoch, timestamp=t, control=True, compression=self.compression
            ),
            t,
        )
        self.control_batches += 1
        self._read_batch(offset, [None], t, control_type)
        self.control_records += 1
        self.control_by_type[control_type] = self.control_by_type.get(control_type, 0) + 1
        if self.sink is not None:
            self.sink(offset, self.epoch, t, control_type, 0, data, True)
        self._boundary()
        return offset

    def set_epoch(self, epoch: int) -> None:
        self.flush()
        self._boundary()
        self.epoch = epoch
        self.epoch_starts.append((epoch, self.next_offset))

    def _read_batch(
        self, base_offset: int, types: list[str] | list[None], timestamp: int, control_type: str | None
    ) -> None:
        """The batch loader reads the batch just written (data records by type, or one control record)."""
        last_offset = base_offset + len(types) - 1
        for offset, type_name in enumerate(types, base_offset):
            self._delta_ends.replay(
                LogRecord(
                    offset, base_offset, last_offset, self.epoch, timestamp, type_name, 0, control_type=control_type
                )
            )

    def _delta_end(self, last_offset: int) -> None:
        if self.on_delta_end is not None:
            self.on_delta_end(last_offset)

    def _boundary(self) -> None:
        if self.on_boundary is not None and not self._txn_open:
            self.on_boundary()

    # ------------------------------------------------------------------ files

    def _write_batch(self, base_offset: int, count: int, raw: bytes, timestamp: int) -> None:
        seg = self._segment
        if seg is None or (seg.bytes > 0 and seg.bytes + len(raw) > self.segment_bytes):
            self._roll(base_offset)
            seg = self._segment
        self._file.write(raw)
        seg.bytes += len(raw)
        seg.batches += 1
        seg.records += count
        seg.last_offset = base_offset + count - 1
        self.bytes_written += len(raw)
        if self.first_timestamp is None:
            self.first_timestamp = timestamp
        self.last_timestamp = timestamp

    def _roll(self, base_offset: int) -> None:
        if self._file is not None:
            self._file.close()
        name = f"{base_offset:020d}.log"
        self._file = open(os.path.join(self.log_dir, name), "wb", buffering=1 << 20)  # noqa: SIM115 (closed on roll/close)
        self._segment = SegmentStats(name, base_offset)
        self.segments.append(self._segment)

    def close(self) -> None:
        self.flush()
        if self._file is not None:
            self._file.close()
            self._file = None

    @property
    def total_records(self) -> int:
        return self.metadata_records + self.control_records
