"""Readers of metadata log inputs: log directories, segments, snapshots, and kafka-dump-log text.

Every reader produces decoded batches and runs of NoOp batches (:func:`iter_file_items`), which the
Arrow builder of the Spark ingest consumes (:mod:`metadata.log.columns`), or the same records as rows
(:data:`Row`, :func:`iter_file_rows`) for :class:`metadata.log.records.LogRecord` and the reference
engine. Problems are collected as :class:`Issue` values (warnings) or raised as
:class:`~metadata.log.errors.DecodeError` naming the file, byte position and base offset.
"""

from __future__ import annotations

import json
import mmap
import os
import re
import struct
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from enum import Enum
from pathlib import Path
from typing import Any

import numpy as np

from metadata.log.codec.batch import (
    _PREFIX,
    ATTR_COMPRESSION,
    ATTR_CONTROL,
    ATTR_TRANSACTIONAL,
    CRC_START,
    HEADER_DTYPE,
    HEADER_SIZE,
    LOG_OVERHEAD,
    batch_payload,
    check_batch,
    crc32c_rows,
    iter_records,
)
from metadata.log.codec.compression import MAX_BATCH_BYTES_ENV, MAX_BATCH_DECOMPRESSED_BYTES
from metadata.log.codec.crc import crc32c
from metadata.log.codec.message import decode_body, encode_body, json_text
from metadata.log.codec.records import (
    decode_control_record,
    decode_metadata_value,
    encode_control_record,
    metadata_spec,
    read_frame,
    unknown_record,
)
from metadata.log.errors import BadInput, DecodeError, UnknownRecordError
from metadata.log.records import BOOTSTRAP_CHECKPOINT_ID, Chunks, LogRecord, RecordLog, Snapshot, replay_starts
from metadata.log.schema import (
    CONTROL_TYPE_NAMES,
    MessageSpec,
    metadata_specs,
    record_type_name,
    schema_kafka_version,
    spec_by_type_name,
)

SEGMENT_RE = re.compile(r"^(\d{20})\.log$")
SNAPSHOT_RE = re.compile(r"^(\d{20})-(\d{10})\.checkpoint$")
BOOTSTRAP_NAME = "bootstrap.checkpoint"
METADATA_DIR = "__cluster_metadata-0"

Row = tuple
"""One decoded record: the values of :data:`~metadata.log.columns.DECODED_SCHEMA`'s columns from ``offset`` to
``position``, with ``data`` (a dict, or JSON text) for ``payload``."""


class InputKind(str, Enum):
    SEGMENT = "segment"
    SNAPSHOT = "snapshot"
    BOOTSTRAP = "bootstrap"
    DUMP = "dump"


@dataclass(frozen=True)
class InputFile:
    """One file to ingest."""

    path: str
    kind: InputKind
    size: int
    base_offset: int | None = None  # segments: from the file name
    end_offset: int | None = None  # snapshots: exclusive end offset from the file name
    epoch: int | None = None  # snapshots: epoch from the file name

    def to_json(self) -> str:
        """This file as JSON (shipped to the decode tasks; :meth:`from_json` reads it back)."""
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> InputFile:
        fields = json.loads(text)
        return cls(**{**fields, "kind": InputKind(fields["kind"])})


@dataclass(frozen=True)
class Issue:
    """Something a reader noticed and did not stop for (a warning) or stopped for (an error)."""

    file: str
    severity: str  # "warning"; "error" (a bad batch skipped under --allow-gaps); "fatal" (ingest stops)
    message: str
    position: int | None = None
    offset: int | None = None

    def __str__(self) -> str:
        where = ", ".join(
            x
            for x in (
                self.file,
                None if self.position is None else f"byte {self.position}",
                None if self.offset is None else f"offset {self.offset}",
            )
            if x
        )
        return f"{where}: {self.message}"


@dataclass(frozen=True)
class ReadOptions:
    """Policies for bad input (plain dataclasses, as the other reader types: a log read in process imports no
    pydantic)."""

    allow_gaps: bool = False  # skip corrupt batches (reported) instead of stopping
    skip_unknown: bool = False  # keep unknown record types as raw bytes instead of stopping
    max_batch_bytes: int = MAX_BATCH_DECOMPRESSED_BYTES  # a batch's records, decompressed; a dump line

    def __post_init__(self) -> None:
        if self.max_batch_bytes <= 0:
            raise BadInput(f"max_batch_bytes must be positive, not {self.max_batch_bytes}")

    def to_json(self) -> str:
        """These options as JSON (shipped to the decode tasks; :meth:`from_json` reads them back)."""
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> ReadOptions:
        return cls(**json.loads(text))


# ---------------------------------------------------------------- discovery


def _classify(path: Path) -> InputFile | None:
    name = path.name
    size = path.stat().st_size
    if m := SEGMENT_RE.match(name):
        return InputFile(path=str(path), kind=InputKind.SEGMENT, size=size, base_offset=int(m.group(1)))
    if m := SNAPSHOT_RE.match(name):
        return InputFile(
            path=str(path), kind=InputKind.SNAPSHOT, size=size, end_offset=int(m.group(1)), epoch=int(m.group(2))
        )
    if name == BOOTSTRAP_NAME:
        end_offset, epoch = BOOTSTRAP_CHECKPOINT_ID
        return InputFile(path=str(path), kind=InputKind.BOOTSTRAP, size=size, end_offset=end_offset, epoch=epoch)
    return None


def discover(path: str | os.PathLike[str]) -> list[InputFile]:
    """The files to read under ``path``, segments in offset order.

    ``path`` may be a node's metadata log dir (holding ``__cluster_metadata-0`` and, up to Kafka
    4.3, ``bootstrap.checkpoint``), the ``__cluster_metadata-0`` directory itself (its parent's
    ``bootstrap.checkpoint`` included), a single segment, snapshot or ``bootstrap.checkpoint``,
    or a text file written by ``kafka-dump-log.sh --cluster-metadata-decoder``.
    Indexes, ``quorum-state``, producer-state ``.snapshot`` files, partial or deleted snapshots
    and lock files are not inputs. Paths are made absolute: Spark's workers need not share the
    caller's working directory, and the lake records where each record came from.
    """
    if not Path(path).exists():
        raise DecodeError("no such file or directory", file=str(path))
    p = Path(os.path.abspath(path))
    if p.is_file():
        found = _classify(p)
        if found is not None:
            return [found]
        if p.suffix == ".log":  # a segment copied under another name
            return [InputFile(path=str(p), kind=InputKind.SEGMENT, size=p.stat().st_size)]
        return [InputFile(path=str(p), kind=InputKind.DUMP, size=p.stat().st_size)]
    dirs = [p / METADATA_DIR] if (p / METADATA_DIR).is_dir() else [p]
    files: list[InputFile] = []
    for boot in {p / BOOTSTRAP_NAME, *([p.parent / BOOTSTRAP_NAME] if p.name == METADATA_DIR else [])}:
        if boot.is_file():
            files.append(_classify(boot))  # type: ignore[arg-type]
    for d in dirs:
        for child in sorted(d.iterdir()):
            if child.is_file() and child.name != BOOTSTRAP_NAME and (found := _classify(child)) is not None:
                files.append(found)
    order = {InputKind.BOOTSTRAP: 0, InputKind.SNAPSHOT: 1, InputKind.SEGMENT: 2}
    files.sort(key=lambda f: (order[f.kind], f.end_offset or 0, f.base_offset or 0))
    if not files:
        raise DecodeError("no metadata log segments or snapshots found", file=str(p))
    return files


# ---------------------------------------------------------------- binary decoding

# One decoded batch: ``(base offset, last offset, leader epoch, max timestamp, producer id, producer epoch,
# transactional, control, position)`` and one ``(offset, control type, type, apiKey, version, data, raw)``
# per record; ``data`` is a dict, or its compact JSON text when reading with ``json_payload``.
Batch = tuple[tuple, list[tuple]]

NOOP_VALUE = bytes.fromhex("01140000")  # frame 1, apiKey 20 (NoOpRecord), version 0, no tagged fields
# the one record of a controller's NoOp batch: length 10, attributes, timestamp and offset deltas 0, no key
# (-1), a 4-byte value, no headers (zig-zag varints)
_NOOP_BATCH_RECORDS = bytes.fromhex("140000000108") + NOOP_VALUE + b"\x00"
_NOOP_BATCH_SIZE = HEADER_SIZE + len(_NOOP_BATCH_RECORDS)
_NOT_NOOP = ATTR_CONTROL | ATTR_COMPRESSION  # attributes under which those bytes are not a NoOp record
_NOOP_LENGTH_FIELD = struct.pack(">i", _NOOP_BATCH_SIZE - LOG_OVERHEAD)
_NOOP_RECORDS = np.frombuffer(_NOOP_BATCH_RECORDS, np.uint8)
_NOOP_HEADERS = np.dtype(
    {
        "names": HEADER_DTYPE.names,
        "itemsize": _NOOP_BATCH_SIZE,
        "formats": [HEADER_DTYPE.fields[n][0] for n in HEADER_DTYPE.names],
        "offsets": [HEADER_DTYPE.fields[n][1] for n in HEADER_DTYPE.names],
    }
)
MAX_OFFSET = (1 << 63) - 1  # offsets are int64
MIN_RUN = 16  # NoOp batches in a row before the vectorised path is tried
RUN_CHUNK = 65536  # most batches in one NoOpRun


@dataclass(frozen=True, slots=True)
class NoOpRun:
    """Consecutive batches of one NoOpRecord each (the bulk of an idle cluster's log), decoded
    column-wise: one array entry per batch, which is also the record."""

    position: np.ndarray  # int64
    offset: np.ndarray  # int64: base = last offset of the batch = offset of its record
    leader_epoch: np.ndarray  # int32
    timestamp: np.ndarray  # int64: max timestamp
    producer_id: np.ndarray  # int64
    producer_epoch: np.ndarray  # int32
    transactional: bool
    json_payload: bool

    def __len__(self) -> int:
        return len(self.offset)

    def rows(self) -> Iterator[Row]:
        """The run as decoded rows."""
        txn, as_json = self.transactional, self.json_payload
        for pos, off, epoch, ts, pid, pepoch in zip(
            self.position.tolist(),
            self.offset.tolist(),
            self.leader_epoch.tolist(),
            self.timestamp.tolist(),
            self.producer_id.tolist(),
            self.producer_epoch.tolist(),
        ):
            yield (
                off,
                off,
                off,
                epoch,
                ts,
                pid,
                pepoch,
                txn,
                False,
                None,
                "NO_OP_RECORD",
                20,
                0,
                "{}" if as_json else {},
                None,
                pos,
            )


def batch_rows(batch: Batch) -> Iterator[Row]:
    """The records of a decoded batch as rows."""
    (base, last, epoch, ts, pid, pepoch, txn, control, pos), records = batch
    for offset, control_type, type_name, api_key, version, data, raw in records:
        yield (
            offset,
            base,
            last,
            epoch,
            ts,
            pid,
            pepoch,
            txn,
            control,
            control_type,
            type_name,
            api_key,
            version,
            data,
            raw,
            pos,
        )


def item_rows(item: Batch | NoOpRun) -> Iterator[Row]:
    """The rows of what :func:`iter_segment_items` yields."""
    return item.rows() if isinstance(item, NoOpRun) else batch_rows(item)


def _data_record(value: bytes | None, key: bytes | None, options: ReadOptions, json_payload: bool) -> tuple:
    """(type name, apiKey, version, data, raw) of a data record's value."""
    if key is not None:
        raise DecodeError("metadata record has a key")
    if not value:
        raise DecodeError("metadata record has no value")
    if value == NOOP_VALUE:
        return "NO_OP_RECORD", 20, 0, "{}" if json_payload else {}, None
    try:
        spec, version, data = decode_metadata_value(value, json_payload)
        return spec.type_name, spec.key, version, data, None
    except UnknownRecordError:
        if not options.skip_unknown:
            raise
        api_key, version, _ = read_frame(value)
        return None, api_key, version, None, value


def _noop_run(
    arr: np.ndarray, pos: int, end: int, expected: int | None, epoch: int, limit: int, json_payload: bool
) -> NoOpRun | None:
    """The longest run (≤ ``limit`` batches) of NoOp batches at ``pos`` that the per-batch path would
    decode without a remark: same size and attributes, magic 2, one record with the NoOp bytes, valid
    CRC, consecutive offsets from ``expected``, leader epochs never going back from ``epoch``."""
    n = min((end - pos) // _NOOP_BATCH_SIZE, limit)
    head = np.frombuffer(arr, _NOOP_HEADERS, n, pos)
    attributes = int(head["attributes"][0])
    if attributes & _NOT_NOOP:  # control or compressed batches: the per-batch path decodes (or rejects) them
        return None
    raw = arr[pos : pos + n * _NOOP_BATCH_SIZE].reshape(n, _NOOP_BATCH_SIZE)
    base = int(head["base_offset"][0]) if expected is None else expected
    if not 0 <= base <= MAX_OFFSET - n:  # offsets out of range: the per-batch path reports them
        return None
    epochs = head["leader_epoch"]
    ok = (
        (head["batch_length"] == _NOOP_BATCH_SIZE - LOG_OVERHEAD)
        & (head["magic"] == 2)
        & (head["attributes"] == attributes)
        & (head["last_offset_delta"] == 0)
        & (head["record_count"] == 1)
        & (head["base_offset"] == np.arange(base, base + n, dtype=np.int64))
        & (epochs >= np.maximum.accumulate(np.maximum(epochs, epoch)))
        & (raw[:, HEADER_SIZE:] == _NOOP_RECORDS).all(axis=1)
    )
    m = n if ok.all() else int(np.argmin(ok))
    if m:
        ok = crc32c_rows(raw[:m, CRC_START:]) == head["crc"][:m]
        m = m if ok.all() else int(np.argmin(ok))
    if not m:
        return None
    head = head[:m]
    return NoOpRun(
        position=np.arange(pos, pos + m * _NOOP_BATCH_SIZE, _NOOP_BATCH_SIZE, dtype=np.int64),
        offset=head["base_offset"].astype(np.int64),
        leader_epoch=epochs[:m].astype(np.int32),
        timestamp=head["max_timestamp"].astype(np.int64),
        producer_id=head["producer_id"].astype(np.int64),
        producer_epoch=head["producer_epoch"].astype(np.int32),
        transactional=bool(attributes & ATTR_TRANSACTIONAL),
        json_payload=json_payload,
    )


def iter_segment_items(
    buf: bytes,
    file: str,
    issues: list[Issue],
    options: ReadOptions,
    start: int = 0,
    end: int | None = None,
    json_payload: bool = False,
    headers_only: bool = False,
) -> Iterator[Batch | NoOpRun]:
    """Decode the batches in ``buf[start:end]`` (a segment or snapshot file): a :data:`Batch` each, and
    long runs of NoOp batches as a :class:`NoOpRun` (checked and decoded with numpy). With
    ``headers_only`` each batch's framing, header and CRC are checked but its records are left undecoded
    (its :data:`Batch` holds none).

    A partially written last batch and a zero-filled tail are reported and end the scan; a
    corrupt batch raises (or, with ``allow_gaps``, is reported and skipped when the next batch
    can still be found from its length field).
    """
    end = len(buf) if end is None else end
    arr = np.frombuffer(buf, np.uint8) if end - start >= _NOOP_BATCH_SIZE * MIN_RUN else None
    probe = _NOOP_BATCH_SIZE * (MIN_RUN - 1) + HEADER_SIZE
    chunk = MIN_RUN * 16
    pos = start
    expected: int | None = None
    epoch = -1
    resync = _Resync(buf, file, start, end)
    while pos < end:
        if (
            arr is not None
            and end - pos >= _NOOP_BATCH_SIZE * MIN_RUN
            and buf[pos + 8 : pos + 12] == _NOOP_LENGTH_FIELD
            and buf[pos + HEADER_SIZE : pos + _NOOP_BATCH_SIZE] == _NOOP_BATCH_RECORDS
            and buf[pos + probe : pos + probe + len(_NOOP_BATCH_RECORDS)] == _NOOP_BATCH_RECORDS
        ):
            run = _noop_run(arr, pos, end, expected, epoch, chunk, json_payload)
            if run is not None:
                n = len(run)
                chunk = min(chunk * 4, RUN_CHUNK) if n == chunk else MIN_RUN * 16
                expected, epoch = int(run.offset[-1]) + 1, max(epoch, int(run.leader_epoch[-1]))
                pos += n * _NOOP_BATCH_SIZE
                yield run
                continue
        if end - pos < 17:
            issues.append(
                Issue(
                    file=file,
                    severity="warning",
                    position=pos,
                    message=f"{end - pos} trailing byte(s) too short for a batch; ignored",
                )
            )
            break
        base_offset, batch_length = _PREFIX.unpack_from(buf, pos)
        batch_end = pos + LOG_OVERHEAD + batch_length
        if batch_length == 0 and base_offset == 0 and not any(buf[pos : min(end, pos + 4096)]):
            issues.append(
                Issue(
                    file=file,
                    severity="warning",
                    position=pos,
                    message=f"zero-filled tail of {end - pos} byte(s); end of data",
                )
            )
            break
        if batch_length < HEADER_SIZE - LOG_OVERHEAD:
            err = DecodeError(
                f"batch length {batch_length} is smaller than the minimum record overhead",
                file=file,
                position=pos,
                offset=base_offset,
            )
            if not options.allow_gaps:
                raise err
            pos = resync.skip(pos, err.message, issues)
            continue
        if batch_end > end and resync.next_batch(pos + 1) is not None:  # not a torn tail: bad bytes
            message = f"batch length {batch_length} overruns the file, yet valid batches follow"
            if not options.allow_gaps:
                raise DecodeError(message, file=file, position=pos, offset=base_offset)
            pos = resync.skip(pos, message, issues)
            continue
        if batch_end > end:
            issues.append(
                Issue(
                    file=file,
                    severity="warning",
                    position=pos,
                    offset=base_offset,
                    message=f"truncated last batch: {end - pos} of {batch_end - pos} byte(s) "
                    "present; the valid prefix before it is kept",
                )
            )
            break
        try:
            header = check_batch(buf, pos, batch_end)
            batch = (
                (_batch_header(pos, header), [])
                if headers_only
                else _decode_batch(buf, pos, batch_end, header, options, json_payload)
            )
        except DecodeError as exc:
            located = exc.located(file=file, position=pos, offset=base_offset)
            if not options.allow_gaps:
                raise located from None
            pos = resync.skip(pos, f"offset {base_offset}: {located.message}", issues)
            continue
        if expected is not None and base_offset != expected:
            issues.append(
                Issue(
                    file=file,
                    severity="warning",
                    position=pos,
                    offset=base_offset,
                    message=f"non-consecutive offsets: expected {expected}, batch starts at {base_offset}",
                )
            )
        if header[2] < epoch:
            issues.append(
                Issue(
                    file=file,
                    severity="warning",
                    position=pos,
                    offset=base_offset,
                    message=f"partition leader epoch went back from {epoch} to {header[2]}",
                )
            )
        expected, epoch = batch[0][1] + 1, max(epoch, header[2])
        yield batch
        pos = batch_end


def iter_segment_rows(
    buf: bytes, file: str, issues: list[Issue], options: ReadOptions, start: int = 0, end: int | None = None
) -> Iterator[Row]:
    """The rows of :func:`iter_segment_items`."""
    for item in iter_segment_items(buf, file, issues, options, start, end):
        yield from item_rows(item)


RESYNC_BUDGET = 64 << 20  # CRC-checked bytes a scan may spend looking for valid batches, plus 8 per byte scanned
_DELTA_AND_COUNT = struct.Struct(">i30xi")  # lastOffsetDelta (byte 23 of a batch) ... recordCount (byte 57)


class _Resync:
    """Finds where valid batches resume after bad bytes (``--allow-gaps``, and telling a torn tail
    from bad bytes). A candidate is a position with magic 2 (found with ``find``), a length that
    fits, a base offset ≥ 0 and ``lastOffsetDelta = recordCount - 1`` (as every KRaft batch has; random
    bytes pass that about once in 2^32); its CRC is checked. Crafted bytes can still hold a
    candidate every few bytes, each spanning the rest of the file, so the CRC work of one scan is
    bounded (:data:`RESYNC_BUDGET` + 8 × the bytes scanned); past that it stops with a
    :class:`DecodeError` instead of running quadratically long."""

    def __init__(self, buf: bytes, file: str, start: int, end: int) -> None:
        self.buf, self.file, self.end = buf, file, end
        self.left = RESYNC_BUDGET + 8 * (end - start)

    def next_batch(self, pos: int) -> int | None:
        """The first position ≥ ``pos`` where a whole candidate batch with a valid CRC starts."""
        buf, end = self.buf, self.end
        view = memoryview(buf)
        start = pos
        while pos + HEADER_SIZE <= end:
            magic = buf.find(b"\x02", pos + 16, end - HEADER_SIZE + 17)
            if magic < 0:
                return None
            pos = magic - 16
            base_offset, batch_length = _PREFIX.unpack_from(buf, pos)
            stop = pos + LOG_OVERHEAD + batch_length
            if batch_length >= HEADER_SIZE - LOG_OVERHEAD and stop <= end and base_offset >= 0:
                last_delta, count = _DELTA_AND_COUNT.unpack_from(buf, pos + 23)
                if count >= 1 and last_delta == count - 1:
                    self.left -= stop - pos
                    if self.left < 0:
                        raise DecodeError(
                            f"no valid batch found in bytes {start}..{pos} within the CRC budget of "
                            "a scan (crafted input?)",
                            file=self.file,
                            position=start,
                        )
                    if crc32c(view[pos + 21 : stop]) == struct.unpack_from(">I", buf, pos + 17)[0]:
                        return pos
            pos += 1
        return None

    def skip(self, pos: int, why: str, issues: list[Issue]) -> int:
        """``--allow-gaps``: report the bad bytes at ``pos`` and resume at the next valid batch (or the end)."""
        resume = self.next_batch(pos + 1)
        stop = self.end if resume is None else resume
        issues.append(
            Issue(
                file=self.file,
                severity="error",
                position=pos,
                message=f"{why}; skipped bytes {pos}..{stop} ({stop - pos} bytes) under --allow-gaps",
            )
        )
        return stop


def _batch_header(pos: int, header: tuple) -> tuple:
    """``(base offset, last offset, leader epoch, max timestamp, producer id, producer epoch, transactional,
    control, position)`` of a checked batch header; DecodeError for what no batch may declare."""
    (base_offset, _, epoch, _, _, attributes, last_delta, _, max_ts, pid, pepoch, _, count) = header
    if count == 0:
        raise DecodeError("Batch must contain at least one record")
    last_offset = base_offset + last_delta
    if base_offset < 0 or last_offset > MAX_OFFSET:
        raise DecodeError(f"batch offsets {base_offset}..{last_offset} are not in 0..{MAX_OFFSET}")
    return (
        base_offset,
        last_offset,
        epoch,
        max_ts,
        pid,
        pepoch,
        bool(attributes & ATTR_TRANSACTIONAL),
        bool(attributes & ATTR_CONTROL),
        pos,
    )


def _decode_batch(buf: bytes, pos: int, end: int, header: tuple, options: ReadOptions, json_payload: bool) -> Batch:
    head = _batch_header(pos, header)
    base_offset, control = head[0], head[7]
    attributes, last_delta, count = header[5], header[6], header[12]
    if (
        count == 1
        and last_delta == 0
        and end - pos == _NOOP_BATCH_SIZE
        and not attributes & _NOT_NOOP
        and buf[pos + HEADER_SIZE : end] == _NOOP_BATCH_RECORDS
    ):  # one NoOp: decoded by comparison
        return head, [(base_offset, None, "NO_OP_RECORD", 20, 0, "{}" if json_payload else {}, None)]
    records: list[tuple] = []
    append = records.append
    index = 0
    try:
        for _, _, offset_delta, key, value, _ in iter_records(
            batch_payload(buf, pos, end, attributes, options.max_batch_bytes), count
        ):
            offset = base_offset + index
            try:
                if offset_delta != index:
                    raise DecodeError(f"record {index} has offset delta {offset_delta}")
                if control:
                    control_type, data = decode_control_record(key, value, json_payload)
                    append((offset, control_type, None, None, 0, data, None))
                else:
                    append((offset, None) + _data_record(value, key, options, json_payload))
            except DecodeError as exc:
                raise exc.located(offset=offset) from None
            index += 1
    except IndexError:
        raise DecodeError("record runs past the end of the batch") from None
    if index - 1 != last_delta:
        raise DecodeError(f"lastOffsetDelta {last_delta} does not match {index} record(s)")
    return head, records


# ---------------------------------------------------------------- kafka-dump-log text

_KV = re.compile(r"(\w+): (\S+)")
_TIME = re.compile(r"(?:CreateTime|LogAppendTime|NO_TIMESTAMP_TYPE): (\S+)")
_OFFSET = re.compile(r"\| offset: (\S+)")
_CONTROL_BODY = re.compile(r"\s(LeaderChange|SnapshotHeader|SnapshotFooter|KRaftVersion|KRaftVoters):? (?=\{)")
_CONTROL_TYPE = re.compile(r"controlType: (\w+)\((\d+)\)")
_CONTROL_NAMES = {
    "LeaderChange": "LEADER_CHANGE",
    "SnapshotHeader": "SNAPSHOT_HEADER",
    "SnapshotFooter": "SNAPSHOT_FOOTER",
    "KRaftVersion": "KRAFT_VERSION",
    "KRaftVoters": "KRAFT_VOTERS",
}
_TYPE_KEYS = {record_type_name(s.name): s.key for s in metadata_specs().values()}
_DUMP_ADVICE = (
    "upgrade kraft-replay (kafka-dump-log text holds no record bytes to keep raw: read the log's files to use "
    "--skip-unknown)"
)
_INT = re.compile(r"-?\d{1,19}")
_INT16, _INT32, _INT64 = (1 << 15) - 1, (1 << 31) - 1, MAX_OFFSET
_BATCH_FIELDS = (
    ("baseOffset", 0, _INT64),
    ("lastOffset", 0, _INT64),
    ("partitionLeaderEpoch", -_INT32 - 1, _INT32),
    ("producerId", -_INT64 - 1, _INT64),
    ("producerEpoch", -_INT16 - 1, _INT16),
)


def _dump_int(text: str, name: str, low: int, high: int, lineno: int) -> int:
    if not _INT.fullmatch(text) or not low <= int(text) <= high:
        raise DecodeError(f"line {lineno}: {name} {text[:40]!r} is not an integer in {low}..{high}")
    return int(text)


def _dump_bool(text: str | None, name: str, lineno: int) -> bool:
    if text not in ("true", "false"):
        raise DecodeError(
            f"line {lineno}: {name} is {'missing' if text is None else repr(text[:40])}, not true or false"
        )
    return text == "true"


def _no_constant(name: str) -> None:
    raise ValueError(f"{name} is not a JSON number")


def _dump_json(text: str, lineno: int) -> Any:
    """The JSON value of a payload: NaN/Infinity, numbers of thousands of digits and nesting deeper than
    the parser's recursion limit are errors like any malformed JSON."""
    try:
        return json.loads(text, parse_constant=_no_constant)
    except (ValueError, RecursionError) as exc:
        raise DecodeError(f"line {lineno}: bad payload JSON ({str(exc)[:200]})") from None


def _canonical_body(data: Any, spec: MessageSpec, version: int, encode: Any, decode: Any, lineno: int) -> dict:
    """The printed ``data`` as our decoder would give it: it must be a body of ``spec`` at ``version``
    (every field of the right type and range, nothing else), checked by encoding and decoding it."""
    try:
        decoded = decode(encode(data))
    except (DecodeError, TypeError, ValueError, KeyError, AttributeError, OverflowError, struct.error):
        decoded = None
    if not isinstance(data, dict) or decoded != data:
        raise DecodeError(f"line {lineno}: payload data is not a {spec.type_name} v{version} body")
    return decoded


def _dump_batch(line: str, lineno: int) -> dict[str, Any]:
    """The fields of a batch line that the rows use."""
    kv = dict(_KV.findall(line))
    ints = {}
    for name, low, high in _BATCH_FIELDS:
        if name not in kv:
            raise DecodeError(f"line {lineno}: batch line without {name}")
        ints[name] = _dump_int(kv[name], name, low, high, lineno)
    if ints["lastOffset"] < ints["baseOffset"]:
        raise DecodeError(f"line {lineno}: lastOffset {ints['lastOffset']} is before baseOffset {ints['baseOffset']}")
    t = _TIME.search(line)
    return {
        "base": ints["baseOffset"],
        "last": ints["lastOffset"],
        "epoch": ints["partitionLeaderEpoch"],
        "pid": ints["producerId"],
        "pepoch": ints["producerEpoch"],
        "txn": _dump_bool(kv.get("isTransactional"), "isTransactional", lineno),
        "control": _dump_bool(kv.get("isControl"), "isControl", lineno),
        "time": _dump_int(t.group(1), "timestamp", -_INT64 - 1, _INT64, lineno) if t else -1,
        "position": _dump_int(kv["position"], "position", 0, _INT64, lineno) if "position" in kv else -1,
    }


def _dump_control(line: str, lineno: int) -> tuple[str, dict]:
    """(control type, body) of a control record line; a body only where Kafka prints it (4.x)."""
    if body := _CONTROL_BODY.search(line):
        name = _CONTROL_NAMES[body.group(1)]
        text = line[body.end() :].rstrip()
        spec = spec_by_type_name(name)
        data = _canonical_body(
            _dump_json(text, lineno),
            spec,
            0,
            lambda d: encode_control_record(name, d),
            lambda kv: decode_control_record(*kv)[1],
            lineno,
        )
        return name, data
    if ct := _CONTROL_TYPE.search(line):
        name, type_id = ct.group(1), _dump_int(ct.group(2), "control type", 0, _INT16, lineno)
        if CONTROL_TYPE_NAMES.get(type_id) != name:
            raise DecodeError(f"line {lineno}: unknown control type {name}({type_id})")
        return name, {}
    return "UNKNOWN", {}


def _dump_record(text: str, lineno: int) -> tuple[str, int, dict]:
    """(type name, version, data) of a record's ``payload:`` JSON."""
    payload = _dump_json(text, lineno)
    if (
        not isinstance(payload, dict)
        or not isinstance(payload.get("type"), str)
        or type(payload.get("version")) is not int
        or "data" not in payload
    ):
        raise DecodeError(f'line {lineno}: payload is not {{"type": <name>, "version": <int>, "data": {{...}}}}')
    type_name, version = payload["type"], payload["version"]
    if type_name not in _TYPE_KEYS:
        raise UnknownRecordError(
            f"line {lineno}: record type {type_name[:100]!r} is not known to this kraft-replay (its schema is Kafka "
            f"{schema_kafka_version()}): {_DUMP_ADVICE}"
        )
    try:
        spec = metadata_spec(_TYPE_KEYS[type_name], version)
    except UnknownRecordError:
        raise UnknownRecordError(
            f"line {lineno}: {unknown_record(_TYPE_KEYS[type_name], version, _DUMP_ADVICE).message}"
        ) from None
    data = _canonical_body(
        payload["data"],
        spec,
        version,
        lambda d: encode_body(spec, version, d),
        lambda raw: decode_body(spec, version, raw),
        lineno,
    )
    return type_name, version, data


def _dump_lines(fh: Any, limit: int, file: str) -> Iterator[str]:
    """The lines of a text file; one longer than ``limit`` characters is an error (memory stays bounded)."""
    lineno = 0
    while line := fh.readline(limit + 1):
        lineno += 1
        if len(line) > limit:
            raise DecodeError(
                f"line {lineno}: longer than {limit:,} characters, the limit on a batch's size "
                f"(set {MAX_BATCH_BYTES_ENV} to raise it)",
                file=file,
            )
        yield line


def iter_dump_rows(lines: Iterator[str], file: str, issues: list[Issue]) -> Iterator[tuple[str, Row]]:
    """Rows from ``kafka-dump-log.sh --cluster-metadata-decoder`` output, each with its section
    (``"log"``, or ``"snapshot:<end>:<epoch>"`` / ``"bootstrap"`` for dumped checkpoint files).

    Batch lines give offsets, epochs, producer fields and times; record lines give payloads
    (with or without ``--skip-record-metadata``). Control records whose body the text does not show
    (LeaderChange before Kafka 4.x) get empty ``data``; under ``--skip-record-metadata`` control
    records are blank lines, so their type is ``UNKNOWN``. Every number must fit its Kafka type,
    every record offset its batch, and every payload must be a valid body of its type and version
    (it is encoded and decoded again); anything else is a :class:`DecodeError` naming the file and line.
    """
    section = "log"
    batch: dict[str, Any] | None = None
    index = 0
    for lineno, line in enumerate(lines, 1):
        line = line.rstrip("\n")
        if line.startswith("Dumping "):  # the path it names is never opened
            batch, section = None, "log"
            continue
        if line.startswith("Log starting offset:"):
            section = "log"
            continue
        if line.startswith("Snapshot end offset:"):
            m = re.fullmatch(r"Snapshot end offset: (\S+), epoch: (\S+)", line)
            if not m:
                raise DecodeError(f"line {lineno}: not 'Snapshot end offset: <offset>, epoch: <epoch>'", file=file)
            try:
                end, epoch = (
                    _dump_int(m.group(1), "snapshot end offset", 0, MAX_OFFSET, lineno),
                    _dump_int(m.group(2), "snapshot epoch", 0, _INT32, lineno),
                )
            except DecodeError as exc:
                raise exc.located(file=file) from None
            section = f"snapshot:{end}:{epoch}"
            continue
        if line.startswith("KRaft bootstrap snapshot"):
            section = "bootstrap"
            continue
        if line.startswith("baseOffset:"):
            try:
                batch = _dump_batch(line, lineno)
            except DecodeError as exc:
                raise exc.located(file=file) from None
            index = 0
            continue
        if batch is None or not (line.startswith("|") or line.startswith(" payload:") or line == ""):
            if line.strip() and not line.startswith(("Found ", "Starting offset", "Non-consecutive")):
                issues.append(Issue(file=file, severity="warning", message=f"line {lineno}: not understood, ignored"))
            continue
        if line == "" and not batch["control"]:
            continue
        m = _OFFSET.match(line)
        offset = batch["base"] + index
        try:
            if m:
                offset = _dump_int(m.group(1), "offset", 0, MAX_OFFSET, lineno)
            if not batch["base"] <= offset <= batch["last"]:
                raise DecodeError(
                    f"line {lineno}: record offset {offset} is outside its batch's offsets "
                    f"{batch['base']}..{batch['last']}"
                )
            index += 1
            common = (
                offset,
                batch["base"],
                batch["last"],
                batch["epoch"],
                batch["time"],
                batch["pid"],
                batch["pepoch"],
                batch["txn"],
            )
            if batch["control"]:
                name, data = _dump_control(line, lineno)
                yield section, common + (True, name, None, None, 0, data, None, batch["position"])
                continue
            p = line.find(" payload: ")
            if p < 0:
                raise DecodeError(f"line {lineno}: record line without payload")
            text = line[p + len(" payload: ") :]
            if text.startswith("Error at"):
                raise DecodeError(f"line {lineno}: kafka-dump-log could not decode the record: {text[:200]}")
            type_name, version, data = _dump_record(text, lineno)
        except DecodeError as exc:
            raise exc.located(file=file, offset=offset) from None
        yield section, common + (False, None, type_name, _TYPE_KEYS[type_name], version, data, None, batch["position"])


# ---------------------------------------------------------------- convenience


def open_bytes(path: str) -> bytes | mmap.mmap:
    """The file's bytes (memory-mapped; empty files give b"")."""
    with open(path, "rb") as fh:
        if os.fstat(fh.fileno()).st_size == 0:
            return b""
        return mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)


def iter_file_items(
    f: InputFile,
    issues: list[Issue],
    options: ReadOptions,
    start: int = 0,
    end: int | None = None,
    json_payload: bool = False,
) -> Iterator[tuple[str, Batch | NoOpRun]]:
    """(section, batch or NoOp run) for one input file (or the byte range ``[start, end)`` of a segment);
    see :func:`iter_dump_rows` for sections (each dumped record is a batch of its own). Snapshots must
    open with a SNAPSHOT_HEADER; a missing SNAPSHOT_FOOTER is reported as a truncated snapshot."""
    if f.kind is InputKind.DUMP:
        with open(f.path, encoding="utf-8", errors="replace") as fh:
            for section, row in iter_dump_rows(_dump_lines(fh, options.max_batch_bytes, f.path), f.path, issues):
                data = row[13]
                yield (
                    section,
                    (
                        row[1:9] + row[15:],
                        [
                            (row[0],)
                            + row[9:13]
                            + (json_text(data) if json_payload and data is not None else data, row[14])
                        ],
                    ),
                )
        return
    if f.kind is InputKind.SEGMENT:
        for item in iter_segment_items(open_bytes(f.path), f.path, issues, options, start, end, json_payload):
            yield "log", item
        return
    section = "bootstrap" if f.kind is InputKind.BOOTSTRAP else f"snapshot:{f.end_offset}:{f.epoch}"
    last: tuple | None = None  # (control type, position) of the last record so far
    for item in iter_segment_items(open_bytes(f.path), f.path, issues, options, json_payload=json_payload):
        if isinstance(item, NoOpRun):
            first, tail = (None, int(item.position[0])), (None, int(item.position[-1]))
        else:
            first, tail = (item[1][0][1], item[0][8]), (item[1][-1][1], item[0][8])
        if last is None and first[0] != "SNAPSHOT_HEADER":
            raise _no_snapshot_header(f, first[1])
        last = tail
        yield section, item
    if last is None:
        issues.append(Issue(file=f.path, severity="warning", message="empty snapshot file"))
    elif last[0] != "SNAPSHOT_FOOTER":
        issues.append(Issue(file=f.path, severity="warning", message="snapshot has no SNAPSHOT_FOOTER (truncated?)"))


def _no_snapshot_header(f: InputFile, position: int) -> DecodeError:
    """A snapshot must open with a SNAPSHOT_HEADER (Kafka's snapshot reader refuses it otherwise)."""
    return DecodeError("First control record is not a snapshot header", file=f.path, position=position)


def iter_file_rows(
    f: InputFile, issues: list[Issue], options: ReadOptions, start: int = 0, end: int | None = None
) -> Iterator[tuple[str, Row]]:
    """(section, row) for every record of one input file; see :func:`iter_file_items`."""
    for section, item in iter_file_items(f, issues, options, start, end):
        for row in item_rows(item):
            yield section, row


def batch_offset_at(f: InputFile, position: int) -> int | None:
    """Base offset of the batch at byte ``position`` of a segment (None past its end)."""
    with open(f.path, "rb") as fh:
        fh.seek(position)
        head = fh.read(_PREFIX.size)
    return _PREFIX.unpack(head)[0] if len(head) == _PREFIX.size else None


_LAST_OFFSET_DELTA = struct.Struct(">i")
_LAST_OFFSET_DELTA_AT = 23  # baseOffset, batchLength, partitionLeaderEpoch, magic, crc, attributes


def first_batch_after(f: InputFile, start: int, end: int | None, offset: int) -> int | None:
    """Byte position, in ``[start, end)`` of segment ``f`` (``start`` a batch boundary), of the first batch holding
    an offset beyond ``offset`` — or whose header cannot be read (a torn tail, damage: the decoder reports it from
    there); None if every batch of the range ends at or before ``offset``. Hops over batch headers only."""
    buf = open_bytes(f.path)
    size = len(buf) if end is None else end
    pos = start
    while pos + _LAST_OFFSET_DELTA_AT + _LAST_OFFSET_DELTA.size <= size:
        base_offset, batch_length = _PREFIX.unpack_from(buf, pos)
        if batch_length < HEADER_SIZE - LOG_OVERHEAD:
            return pos
        (delta,) = _LAST_OFFSET_DELTA.unpack_from(buf, pos + _LAST_OFFSET_DELTA_AT)
        if base_offset + delta > offset:
            return pos
        pos += LOG_OVERHEAD + batch_length
    return pos if pos < size else None


_EPOCH_MAGIC_CRC = struct.Struct(">ibI")  # partitionLeaderEpoch, magic, crc (byte 12 of a batch)


@dataclass(frozen=True)
class BatchMark:
    """A batch of a segment as an ingest saw it: its byte position and what its header says. An ingest records
    one per segment it read to the end (the segment's last whole batch); the next ingest of that segment finds the
    same batch at that position (:func:`batch_mark`) and hops over batch headers from there, not from the start."""

    position: int
    base_offset: int
    last_offset: int
    leader_epoch: int
    crc: int


def batch_mark(f: InputFile, position: int) -> BatchMark | None:
    """The batch at byte ``position`` of segment ``f``, if a whole batch of magic 2 whose CRC-32C checks starts
    there; else None."""
    buf = open_bytes(f.path)
    if position < 0 or position + HEADER_SIZE > len(buf):
        return None
    base_offset, batch_length = _PREFIX.unpack_from(buf, position)
    stop = position + LOG_OVERHEAD + batch_length
    if batch_length < HEADER_SIZE - LOG_OVERHEAD or stop > len(buf) or buf[position + 16] != 2:
        return None
    epoch, _, crc = _EPOCH_MAGIC_CRC.unpack_from(buf, position + 12)
    if crc32c(memoryview(buf)[position + CRC_START : stop]) != crc:
        return None
    (delta,) = _LAST_OFFSET_DELTA.unpack_from(buf, position + _LAST_OFFSET_DELTA_AT)
    return BatchMark(position, base_offset, base_offset + delta, epoch, crc)


def last_batch(f: InputFile, start: int) -> BatchMark | None:
    """The last whole batch of segment ``f`` (a torn last batch left out), found by hopping over batch headers
    from ``start`` (a batch boundary); None if the hop meets a length no batch has (damage, a zero-filled tail) or
    that batch's CRC-32C fails."""
    buf = open_bytes(f.path)
    size = len(buf)
    pos, last = start, None
    while pos + LOG_OVERHEAD <= size:
        _, batch_length = _PREFIX.unpack_from(buf, pos)
        if batch_length < HEADER_SIZE - LOG_OVERHEAD:
            return None
        if pos + LOG_OVERHEAD + batch_length > size:
            break
        last, pos = pos, pos + LOG_OVERHEAD + batch_length
    return None if last is None else batch_mark(f, last)


def plan_ranges(f: InputFile, split_bytes: int, start: int = 0) -> list[tuple[int, int | None]]:
    """Byte ranges of a segment from ``start`` (a batch boundary) cut at batch boundaries, each about
    ``split_bytes`` long, so that a large segment decodes in several tasks. Found by hopping over batch headers
    only; a stretch of batches of one size (an idle cluster's NoOps) is hopped over in one numpy step."""
    if f.kind is not InputKind.SEGMENT or f.size - start <= split_bytes:
        return [(start, None)]
    buf = open_bytes(f.path)
    octets = np.frombuffer(buf, np.uint8)
    ranges: list[tuple[int, int | None]] = []
    pos = start
    size = len(buf)
    step = run = 0  # the last batch's size; batches in a row of that size
    while pos + LOG_OVERHEAD <= size:
        _, batch_length = _PREFIX.unpack_from(buf, pos)
        if batch_length < HEADER_SIZE - LOG_OVERHEAD:
            break
        run = run + 1 if LOG_OVERHEAD + batch_length == step else 0
        step = LOG_OVERHEAD + batch_length
        hops = 1
        # whole batches before the next cut; checked in numpy chunks once MIN_RUN equal sizes went by
        ahead = min((size - pos) // step, -(-(start + split_bytes - pos) // step), 1 << 16)
        if run >= MIN_RUN and ahead > 1:
            at = pos + 8 + step * np.arange(1, ahead)  # the length field of each following batch
            same = (
                octets[at].astype(np.int64) << 24
                | octets[at + 1].astype(np.int64) << 16
                | octets[at + 2].astype(np.int64) << 8
                | octets[at + 3]
            ) == batch_length
            hops = ahead if same.all() else int(np.argmin(same)) + 1
        pos += step * hops
        if pos - start >= split_bytes and pos < size:
            ranges.append((start, pos))
            start = pos
    ranges.append((start, None))
    return ranges


def to_log_record(row: Row, source_file: str = "") -> LogRecord:
    """A decoded row as the engines' :class:`LogRecord`."""
    (offset, base, last, epoch, ts, pid, pepoch, txn, _, control_type, type_name, api_key, version, data, _, _) = row
    return LogRecord(
        offset,
        base,
        last,
        epoch,
        ts,
        type_name,
        version,
        data or {},
        control_type,
        txn,
        pid,
        pepoch,
        source_file,
        api_key,
    )


def read_log(path: str | os.PathLike[str], options: ReadOptions | None = None) -> list[LogRecord]:
    """The log records under ``path`` (snapshots left out) as :class:`LogRecord` values, read without
    Spark: the reference engine's input for a small log."""
    options = options or ReadOptions()
    return [
        to_log_record(row, f.path)
        for f in discover(path)
        for section, row in iter_file_rows(f, [], options)
        if section == "log"
    ]


def scan_log(path: str | os.PathLike[str], options: ReadOptions | None = None) -> RecordLog:
    """The log records under ``path`` (snapshots left out) as :func:`read_log` reads them, as a
    :class:`RecordLog` that decodes a batch's records only when they are asked for: one pass reads every
    batch header (framing, offsets and CRC-32C checked), so a replay from the newest snapshot decodes only
    the records after it, as Kafka's loader does. kafka-dump-log text is read whole."""
    return _scan([f for f in discover(path) if f.kind in (InputKind.SEGMENT, InputKind.DUMP)], options or ReadOptions())


def _scan(files: list[InputFile], options: ReadOptions) -> RecordLog:
    """The records of segments, snapshots or dump text (its log section) as a :class:`RecordLog`."""
    blocks: list[tuple[np.ndarray, ...]] = []  # (count, first offset, base, last, epoch, time, file, position)
    rows: list[tuple[int, ...]] = []
    preloaded: list[list[LogRecord] | None] = []  # per chunk: its records when read with the scan (dump text)

    def flush() -> None:
        if rows:
            blocks.append(tuple(np.array(c, np.int64) for c in zip(*rows)))
            rows.clear()

    for fi, f in enumerate(files):
        if f.kind is InputKind.DUMP:
            for section, item in iter_file_items(f, [], options):
                if section == "log":
                    (base, last, epoch, ts, *_), ((offset, *_),) = item
                    preloaded.append([to_log_record(row, f.path) for row in item_rows(item)])
                    rows.append((1, offset, base, last, epoch, ts, fi, -1))
            continue
        for item in iter_segment_items(open_bytes(f.path), f.path, [], options, headers_only=True):
            if isinstance(item, NoOpRun):
                flush()
                ones = np.ones(len(item), np.int64)
                blocks.append(
                    (
                        ones,
                        item.offset,
                        item.offset,
                        item.offset,
                        item.leader_epoch,
                        item.timestamp,
                        ones * fi,
                        item.position,
                    )
                )
                preloaded.extend([None] * len(item))
            else:
                base, last, epoch, ts, *_, pos = item[0]
                rows.append((last - base + 1, base, base, last, epoch, ts, fi, pos))
                preloaded.append(None)
    flush()
    columns = (
        [np.concatenate([b[i] for b in blocks]).astype(np.int64) for i in range(8)]
        if blocks
        else [np.zeros(0, np.int64)] * 8
    )
    count, file_of, position = columns[0], columns[6], columns[7]

    def load(first: int, last: int) -> list[list[LogRecord]]:
        """Decode chunks ``first..last`` (consecutive batches of one file, or of several in order)."""
        out: list[list[LogRecord]] = []
        k = first
        while k <= last:
            f = files[int(file_of[k])]
            end = k
            while end < last and file_of[end + 1] == file_of[k]:
                end += 1
            stop = int(position[end + 1]) if end + 1 < len(count) and file_of[end + 1] == file_of[k] else None
            records = [
                to_log_record(row, f.path)
                for item in iter_segment_items(open_bytes(f.path), f.path, [], options, int(position[k]), stop)
                for row in item_rows(item)
            ]
            wanted = int(count[k : end + 1].sum())
            if len(records) != wanted:
                raise DecodeError(
                    f"bytes {int(position[k])}..{stop} hold {len(records)} record(s) where the scan found {wanted} "
                    "(the file changed while read?)",
                    file=f.path,
                    position=int(position[k]),
                )
            at = 0
            for n in count[k : end + 1].tolist():
                out.append(records[at : at + n])
                at += n
            k = end + 1
        return out

    return RecordLog(Chunks(count, *columns[1:6]), load, preloaded)


def read_checkpoints(path: str | os.PathLike[str], options: ReadOptions | None = None) -> list[Snapshot]:
    """Every snapshot under ``path`` and the bootstrap files (``bootstrap.checkpoint`` under its id
    :data:`~metadata.log.records.BOOTSTRAP_CHECKPOINT_ID`), in the order of their ids, read without Spark; each one's
    records are decoded when first asked for (see :func:`scan_log`), so a replay decodes only the snapshot it
    starts from."""
    options = options or ReadOptions()
    out = []
    for f in discover(path):
        if f.kind not in (InputKind.SNAPSHOT, InputKind.BOOTSTRAP) or f.end_offset is None or f.epoch is None:
            continue
        records = _scan([f], options)
        if records and records[0].control_type != "SNAPSHOT_HEADER":
            raise _no_snapshot_header(f, 0)
        timestamp = records[0].data["lastContainedLogTimestamp"] if records else -1
        out.append(Snapshot(records, f.end_offset, f.epoch, timestamp))
    return sorted(out, key=lambda s: (s.end_offset, s.epoch))


def read_snapshots(path: str | os.PathLike[str], options: ReadOptions | None = None) -> list[Snapshot]:
    """The snapshots under ``path`` a replay can start from (:func:`read_checkpoints` without the bootstrap
    files: ``bootstrap.checkpoint`` and the ``0-0`` bootstrap snapshot)."""
    return replay_starts(read_checkpoints(path, options))


def decode_path(path: str | os.PathLike[str], options: ReadOptions | None = None) -> Iterator[dict[str, Any]]:
    """Every record under ``path`` as ``{offset, timestamp, control_type, type, version, data, section}``."""
    options = options or ReadOptions()
    issues: list[Issue] = []
    for f in discover(path):
        for section, row in iter_file_rows(f, issues, options):
            yield {
                "offset": row[0],
                "timestamp": row[4],
                "control_type": row[9],
                "type": row[10],
                "version": row[12],
                "data": row[13],
                "section": section,
                "file": f.path,
            }
