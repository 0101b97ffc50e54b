"""Record batch v2 (magic 2) and the records inside it: the one batch decoder and encoder."""

from __future__ import annotations

import struct
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from functools import cache

import numpy as np

from metadata.log.codec.compression import CODECS, MAX_BATCH_DECOMPRESSED_BYTES, compress, decompress, too_large
from metadata.log.codec.crc import crc32c
from metadata.log.codec.primitives import read_varint, read_varlong, varint, varlong
from metadata.log.errors import CorruptBatchError, DecodeError

HEADER = struct.Struct(">qiibIhiqqqhii")
HEADER_SIZE = HEADER.size  # 61
LOG_OVERHEAD = 12  # baseOffset + batchLength
_PREFIX = struct.Struct(">qi")
CRC_START = 21  # the CRC covers the batch from its attributes to its end

# The batch header as a numpy record (big-endian, unaligned): reads the headers of a run of
# equal-size batches at once (``np.ndarray`` of this dtype with ``itemsize`` set to the batch size).
HEADER_FIELDS = (
    "base_offset",
    "batch_length",
    "leader_epoch",
    "magic",
    "crc",
    "attributes",
    "last_offset_delta",
    "base_timestamp",
    "max_timestamp",
    "producer_id",
    "producer_epoch",
    "base_sequence",
    "record_count",
)
HEADER_DTYPE = np.dtype(
    list(zip(HEADER_FIELDS, (">i8", ">i4", ">i4", "i1", ">u4", ">i2", ">i4", ">i8", ">i8", ">i8", ">i2", ">i4", ">i4")))
)
assert HEADER_DTYPE.itemsize == HEADER.size

ATTR_COMPRESSION = 0x07
ATTR_LOG_APPEND_TIME = 0x08
ATTR_TRANSACTIONAL = 0x10
ATTR_CONTROL = 0x20
ATTR_DELETE_HORIZON = 0x40


@dataclass(slots=True)
class Record:
    """One record of a batch, every wire field kept."""

    offset_delta: int
    value: bytes | None
    key: bytes | None = None
    attributes: int = 0
    timestamp_delta: int = 0
    headers: list[tuple[str, bytes | None]] = field(default_factory=list)


@dataclass(slots=True)
class RecordBatch:
    """A decoded batch: every header field, and its records decompressed."""

    base_offset: int
    partition_leader_epoch: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records: list[Record]
    magic: int = 2
    crc: int = 0

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def compression(self) -> str:
        return CODECS[self.attributes & ATTR_COMPRESSION]

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & ATTR_CONTROL)

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & ATTR_TRANSACTIONAL)


def read_header(buf: bytes, pos: int) -> tuple:
    """The 13 header fields at ``pos`` (caller has checked that 61 bytes are there)."""
    return HEADER.unpack_from(buf, pos)


@cache
def _crc_tables(width: int) -> np.ndarray:
    """``(width, 256)`` table: the linear CRC-32C contribution of byte value b at position k of a
    ``width``-byte message (CRC-32C is affine: crc(a ^ d) = crc(a) ^ crc(d) ^ crc(zeros))."""
    zero = crc32c(bytes(width))
    bits = np.empty((width, 8), dtype=np.uint32)
    for k in range(width):
        for i in range(8):
            bits[k, i] = crc32c(bytes(k) + bytes((1 << i,)) + bytes(width - k - 1)) ^ zero
    values = np.arange(256, dtype=np.uint32)
    table = np.zeros((width, 256), dtype=np.uint32)
    for i in range(8):
        table ^= np.where((values >> i) & 1, bits[:, i : i + 1], np.uint32(0))
    return table


def crc32c_rows(rows: np.ndarray) -> np.ndarray:
    """CRC-32C of every row of a 2-D ``uint8`` array (equal to ``crc32c(row.tobytes())``), vectorised:
    the first row's CRC, corrected by table lookups at the byte positions where rows differ from it."""
    n, width = rows.shape
    out = np.full(n, crc32c(rows[0].tobytes()) if n else 0, dtype=np.uint32)
    if n < 2:
        return out
    diff = rows ^ rows[0]
    table = _crc_tables(width)
    for k in np.flatnonzero(diff.any(axis=0)):
        out ^= table[k][diff[:, k]]
    return out


def check_batch(buf: bytes, pos: int, end: int) -> tuple:
    """Validate magic, CRC-32C and size of the batch at ``[pos, end)``; returns its header."""
    header = HEADER.unpack_from(buf, pos)
    base_offset, _, _, magic, crc = header[:5]
    if magic != 2:
        raise CorruptBatchError(
            f"unsupported batch magic {magic} (KRaft logs use magic 2)", position=pos, offset=base_offset
        )
    actual = crc32c(memoryview(buf)[pos + 21 : end])
    if actual != crc:
        raise CorruptBatchError(
            f"CRC mismatch: stored 0x{crc:08x}, computed 0x{actual:08x}", position=pos, offset=base_offset
        )
    if (header[5] & ATTR_COMPRESSION) > 4:
        raise CorruptBatchError(
            f"Unknown compression type id: {header[5] & ATTR_COMPRESSION}", position=pos, offset=base_offset
        )
    if header[12] < 0:
        raise CorruptBatchError(f"negative record count {header[12]}", position=pos, offset=base_offset)
    return header


_ZIGZAG = tuple((b >> 1) ^ -(b & 1) for b in range(0x80))  # one-byte signed varints


def iter_records(payload: bytes, count: int) -> Iterator[tuple[int, int, int, bytes | None, bytes | None, list]]:
    """Yield ``(attributes, timestampDelta, offsetDelta, key, value, headers)`` of ``count`` records."""
    pos = 0
    end = len(payload)
    for _ in range(count):
        if pos >= end:
            raise DecodeError("batch declares more records than it holds")
        b = payload[pos]
        length, pos = (_ZIGZAG[b], pos + 1) if b < 0x80 else read_varint(payload, pos)
        start = pos
        if length <= 0 or pos + length > end:
            raise DecodeError(f"record length {length} out of bounds")
        attributes = payload[pos]
        b = payload[pos + 1]
        ts_delta, pos = (_ZIGZAG[b], pos + 2) if b < 0x80 else read_varlong(payload, pos + 1)
        b = payload[pos]
        offset_delta, pos = (_ZIGZAG[b], pos + 1) if b < 0x80 else read_varint(payload, pos)
        b = payload[pos]
        key_len, pos = (_ZIGZAG[b], pos + 1) if b < 0x80 else read_varint(payload, pos)
        key = None
        if key_len >= 0:
            key = bytes(payload[pos : pos + key_len])
            pos += key_len
        b = payload[pos]
        value_len, pos = (_ZIGZAG[b], pos + 1) if b < 0x80 else read_varint(payload, pos)
        value = None
        if value_len >= 0:
            value = bytes(payload[pos : pos + value_len])
            pos += value_len
        b = payload[pos]
        n_headers, pos = (_ZIGZAG[b], pos + 1) if b < 0x80 else read_varint(payload, pos)
        if n_headers < 0:
            raise DecodeError(f"negative header count {n_headers}")
        headers: list = []
        for _ in range(n_headers):
            hk_len, pos = read_varint(payload, pos)
            if hk_len < 0:
                raise DecodeError("negative header key length")
            hkey = bytes(payload[pos : pos + hk_len]).decode("utf-8", errors="replace")
            pos += hk_len
            hv_len, pos = read_varint(payload, pos)
            hval = None
            if hv_len >= 0:
                hval = bytes(payload[pos : pos + hv_len])
                pos += hv_len
            headers.append((hkey, hval))
        if pos - start != length:
            raise DecodeError(f"record declared {length} bytes but used {pos - start}")
        yield attributes, ts_delta, offset_delta, key, value, headers
    if pos != end:
        raise DecodeError(f"Incorrect declared batch size: {end - pos} byte(s) left after {count} records")


def batch_payload(buf: bytes, pos: int, end: int, attributes: int, limit: int = MAX_BATCH_DECOMPRESSED_BYTES) -> bytes:
    """The records bytes of a batch, decompressed; more than ``limit`` bytes is an error."""
    raw = buf[pos + HEADER_SIZE : end]
    codec = attributes & ATTR_COMPRESSION
    if codec:
        return decompress(codec, bytes(raw), limit)
    if len(raw) > limit:
        raise too_large(f"uncompressed records of {len(raw):,} bytes are", limit)
    return bytes(raw)


def decode_batch(buf: bytes, pos: int = 0) -> tuple[RecordBatch, int]:
    """Decode (and verify) the batch at ``pos`` → (batch, position after it)."""
    if len(buf) - pos < HEADER_SIZE:
        raise CorruptBatchError("fewer than 61 bytes for a batch header", position=pos)
    base_offset, batch_length = _PREFIX.unpack_from(buf, pos)
    end = pos + LOG_OVERHEAD + batch_length
    if batch_length < HEADER_SIZE - LOG_OVERHEAD or end > len(buf):
        raise CorruptBatchError(f"batch length {batch_length} does not fit", position=pos, offset=base_offset)
    header = check_batch(buf, pos, end)
    (base_offset, _, ple, magic, crc, attributes, last_delta, base_ts, max_ts, pid, pepoch, base_seq, count) = header
    try:
        records = [
            Record(offset_delta=o, value=v, key=k, attributes=a, timestamp_delta=t, headers=h)
            for a, t, o, k, v, h in iter_records(batch_payload(buf, pos, end, attributes), count)
        ]
    except (DecodeError, IndexError) as exc:
        message = exc.message if isinstance(exc, DecodeError) else "record runs past the end of the batch"
        raise CorruptBatchError(message, position=pos, offset=base_offset) from None
    return RecordBatch(
        base_offset, ple, attributes, last_delta, base_ts, max_ts, pid, pepoch, base_seq, records, magic, crc
    ), end


def encode_records(records: Sequence[Record]) -> bytes:
    """The uncompressed records section."""
    out = bytearray()
    for r in records:
        body = bytearray((r.attributes,))
        body += varlong(r.timestamp_delta)
        body += varint(r.offset_delta)
        if r.key is None:
            body += varint(-1)
        else:
            body += varint(len(r.key)) + r.key
        if r.value is None:
            body += varint(-1)
        else:
            body += varint(len(r.value)) + r.value
        body += varint(len(r.headers))
        for hkey, hval in r.headers:
            raw_key = hkey.encode("utf-8")
            body += varint(len(raw_key)) + raw_key
            body += varint(-1) if hval is None else varint(len(hval)) + hval
        out += varint(len(body))
        out += body
    return bytes(out)


def encode_record_batch(batch: RecordBatch) -> bytes:
    """Encode a :class:`RecordBatch` (CRC recomputed; compression per its attributes)."""
    payload = encode_records(batch.records)
    codec = batch.attributes & ATTR_COMPRESSION
    if codec:
        payload = compress(codec, payload)
    body = (
        struct.pack(
            ">hiqqqhii",
            batch.attributes,
            batch.last_offset_delta,
            batch.base_timestamp,
            batch.max_timestamp,
            batch.producer_id,
            batch.producer_epoch,
            batch.base_sequence,
            len(batch.records),
        )
        + payload
    )
    crc = crc32c(body)
    return (
        struct.pack(">qiibI", batch.base_offset, len(body) + 9, batch.partition_leader_epoch, batch.magic, crc) + body
    )


def encode_batch(
    base_offset: int,
    records: Sequence[tuple[bytes | None, bytes]],
    *,
    leader_epoch: int,
    timestamp: int,
    control: bool = False,
    compression: str = "none",
    transactional: bool = False,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
) -> bytes:
    """A batch as the KRaft raft layer writes it: CreateTime, every record at ``timestamp``,
    offset deltas 0..n-1, no headers."""
    attributes = CODECS.index(compression)
    if control:
        attributes |= ATTR_CONTROL
    if transactional:
        attributes |= ATTR_TRANSACTIONAL
    batch = RecordBatch(
        base_offset,
        leader_epoch,
        attributes,
        len(records) - 1,
        timestamp,
        timestamp,
        producer_id,
        producer_epoch,
        base_sequence,
        [Record(offset_delta=i, key=k, value=v) for i, (k, v) in enumerate(records)],
    )
    return encode_record_batch(batch)
