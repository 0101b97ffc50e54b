"""Seeded fuzzing of the readers with hostile input: the engine of ``benchmarks/bench_fuzz.py`` and of
``tests/test_hostile.py``.

A case is determined by (seed, case number) alone. It takes a batch from the corpus (every batch of
the real-Kafka fixtures' segments and checkpoints, and of small logs generated with each of the five
compressions) or a batch's lines from a fixture's ``kafka-dump-log`` text, applies one mutator
(:data:`BINARY_MUTATORS`, :data:`TEXT_MUTATORS`), writes the file (the mutated batch between
unchanged neighbours; a snapshot whole), and decodes it through both paths the readers serve: rows
with dict payloads (:func:`~metadata.log.readers.iter_file_rows`, what ``read_log`` uses) and Arrow
batches (:func:`~metadata.log.columns.decode_to_arrow`, what ingest's tasks use); a segment also in the
byte ranges ingest would cut it into. Acceptable outcomes: decoded (maybe with reported issues) or one
:class:`~metadata.log.errors.DecodeError` naming the file (and, for binary files, the byte position), the
same from both paths. Anything else is a :class:`Failure`.
"""

from __future__ import annotations

import random
import re
import struct
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import cramjam
from crc32c import crc32c

from metadata.log.codec.batch import HEADER, HEADER_SIZE, Record, encode_records, iter_records
from metadata.log.codec.compression import CODECS, compress, decompress
from metadata.log.codec.primitives import read_uvarint, read_varint, read_varlong, uvarint, varint
from metadata.log.codec.records import decode_control_record, decode_metadata_value, encode_metadata_value
from metadata.log.columns import decode_to_arrow
from metadata.log.errors import DecodeError
from metadata.log.readers import (
    NOOP_VALUE,
    InputFile,
    InputKind,
    Issue,
    ReadOptions,
    iter_file_items,
    iter_file_rows,
    plan_ranges,
)
from metadata.log.records import BOOTSTRAP_CHECKPOINT_ID

ROOT = Path(__file__).resolve().parent.parent
KAFKA = ROOT / "tests" / "fixtures" / "kafka"
GIB = 1 << 30


class Failure(Exception):
    """A case that ended in anything but decoded rows or one clean DecodeError."""


# ---------------------------------------------------------------- corpus


@dataclass(frozen=True)
class Source:
    """The batches of one real or generated segment or snapshot."""

    name: str
    kind: InputKind
    batches: tuple[bytes, ...]
    end_offset: int | None = None
    epoch: int | None = None


@dataclass(frozen=True)
class DumpSource:
    """A ``kafka-dump-log`` text: its head lines and each batch's lines (batch line + record lines)."""

    name: str
    head: tuple[str, ...]
    chunks: tuple[tuple[str, ...], ...]


def split_batches(buf: bytes) -> tuple[bytes, ...]:
    """The batches of a valid segment or snapshot file."""
    out, pos = [], 0
    while pos + 12 <= len(buf):
        end = pos + 12 + struct.unpack_from(">i", buf, pos + 8)[0]
        out.append(buf[pos:end])
        pos = end
    return tuple(out)


def _source(path: Path, name: str) -> Source:
    """The batches of a segment or checkpoint file, with what its name says."""
    batches = split_batches(path.read_bytes())
    if path.name == "bootstrap.checkpoint":
        return Source(name, InputKind.BOOTSTRAP, batches, *BOOTSTRAP_CHECKPOINT_ID)
    if path.suffix == ".checkpoint":
        end, epoch = path.stem.split("-")
        return Source(name, InputKind.SNAPSHOT, batches, int(end), int(epoch))
    return Source(name, InputKind.SEGMENT, batches)


def fixture_sources() -> list[Source]:
    """Every segment and checkpoint of the real-Kafka fixtures."""
    files = sorted(p for p in KAFKA.glob("*/*/**/*") if p.suffix in (".log", ".checkpoint") and p.is_file())
    return [_source(p, str(p.relative_to(KAFKA))) for p in files]


def generated_sources(directory: Path) -> list[Source]:
    """Small generated logs (and their snapshots), one per compression, written under ``directory``."""
    from generator import generate

    out = []
    for i, codec in enumerate(CODECS):
        target = directory / f"gen-{codec}"
        generate(
            seed=11 + i,
            brokers=3,
            topics=4,
            partitions=6,
            churn=120,
            out_dir=target,
            compression=codec,
            snapshot_at=150,
            segment_bytes=1 << 20,
            write_aux_files=False,
        )
        for p in sorted((target / "__cluster_metadata-0").iterdir()):
            if p.suffix in (".log", ".checkpoint"):
                out.append(_source(p, f"gen-{codec}/{p.name}"))
    return out


def dump_sources() -> list[DumpSource]:
    """Every ``kafka-dump-log`` text of the fixtures, cut into batches."""
    out = []
    for path in sorted(KAFKA.glob("*/*/dump-log*.txt")):
        lines = path.read_text().splitlines(keepends=True)
        starts = [i for i, line in enumerate(lines) if line.startswith("baseOffset:")]
        if not starts:
            continue
        bounds = [*starts, len(lines)]
        out.append(
            DumpSource(
                str(path.relative_to(KAFKA)),
                tuple(lines[: starts[0]]),
                tuple(tuple(lines[a:b]) for a, b in zip(bounds, bounds[1:])),
            )
        )
    return out


@dataclass(frozen=True)
class Corpus:
    real: tuple[Source, ...]
    generated: tuple[Source, ...]
    dumps: tuple[DumpSource, ...]

    def batches(self) -> int:
        return sum(len(s.batches) for s in self.real + self.generated)


def build_corpus(directory: Path) -> Corpus:
    """The fixtures plus logs generated under ``directory`` (deterministic)."""
    return Corpus(tuple(fixture_sources()), tuple(generated_sources(directory)), tuple(dump_sources()))


# ---------------------------------------------------------------- batch surgery

_COUNT_AT, _CRC_AT, _LENGTH_AT = 57, 17, 8


def with_crc(batch: bytes | bytearray) -> bytes:
    """The batch with its CRC-32C recomputed (so that a mutation reaches past the CRC check)."""
    out = bytearray(batch)
    if len(out) >= HEADER_SIZE:
        struct.pack_into(">I", out, _CRC_AT, crc32c(bytes(out[21:])))
    return bytes(out)


def header(batch: bytes) -> list:
    """The 13 header fields of a batch (``HEADER`` order), as a list to change and pack again."""
    return list(HEADER.unpack_from(batch, 0))


def records_of(batch: bytes) -> bytes:
    """A valid batch's records section, decompressed."""
    codec = header(batch)[5] & 7
    raw = batch[HEADER_SIZE:]
    return raw if codec == 0 else decompress(codec, raw)


def rebuild(
    batch: bytes, records: bytes, *, count: int | None = None, codec: int | None = None, compressed: bytes | None = None
) -> bytes:
    """``batch`` with another records section (compressed with the batch's codec unless given), its
    length, record count (unless given) and CRC made consistent."""
    fields = header(batch)
    codec = fields[5] & 7 if codec is None else codec
    fields[5] = (fields[5] & ~7) | codec
    body = compressed if compressed is not None else compress(codec, records) if codec else records
    if count is not None:
        fields[12] = count
    fields[1] = HEADER_SIZE - 12 + len(body)
    return with_crc(HEADER.pack(*fields) + body)


def parsed_records(records: bytes, count: int) -> list[Record]:
    """The records of a valid records section, to change and encode again."""
    return [
        Record(offset_delta=o, value=v, key=k, attributes=a, timestamp_delta=t, headers=h)
        for a, t, o, k, v, h in iter_records(records, count)
    ]


def record_varints(records: bytes) -> list[tuple[str, int, int]]:
    """(field, start, end) of every varint of the record framing in a records section."""
    out, pos = [], 0
    while pos < len(records):
        length, p = read_varint(records, pos)
        out.append(("record length", pos, p))
        stop = p + length
        p += 1  # attributes
        _, q = read_varlong(records, p)
        out.append(("timestamp delta", p, q))
        p = q
        for name in ("offset delta", "key length", "value length"):
            n, q = read_varint(records, p)
            out.append((name, p, q))
            p = q + max(n, 0) if name != "offset delta" else q
        _, q = read_varint(records, p)
        out.append(("header count", p, q))
        pos = stop
    return out


class _Trace(bytes):
    """Bytes that remember which single positions a reader looked at: the varints of a body (lengths,
    counts, tags, tagged sizes) are read byte by byte, fixed-size fields by ``struct``."""

    seen: set[int]

    def __getitem__(self, index: int | slice) -> int | bytes:  # type: ignore[override]
        if isinstance(index, int):
            self.seen.add(index)
        return super().__getitem__(index)


def body_varints(value: bytes, key: bytes | None, control: bool) -> list[tuple[int, int]]:
    """(start, end) of every varint a reader reads in a record value (frame, lengths, counts, tags)."""
    trace = _Trace(value)
    trace.seen = set()
    try:
        if control:
            decode_control_record(key, trace)
        else:
            decode_metadata_value(trace)
    except DecodeError:
        pass
    starts = sorted(p for p in trace.seen if p - 1 not in trace.seen or value[p - 1] < 0x80)
    out = []
    for p in starts:
        q = p
        while q < len(value) and value[q] >= 0x80 and q - p < 5:
            q += 1
        out.append((p, min(q + 1, len(value))))
    return out


# ---------------------------------------------------------------- interesting values

_U32 = (0, 1, 2, 3, 0x7F, 0x80, 0x3FFF, 0x4000, 0x1FFFFF, 1 << 21, 1 << 28, (1 << 31) - 1, 1 << 31, (1 << 32) - 1)
_I32 = (0, 1, -1, -2, 2, 0x7F, 0x80, -0x80, 1 << 16, (1 << 31) - 1, -(1 << 31), 1 << 30, -(1 << 30))
_I64 = (0, -1, 1, (1 << 63) - 1, -(1 << 63), (1 << 63) - 2, 1 << 62, (1 << 31) - 1, 1 << 32)


def overlong(rng: random.Random) -> bytes:
    """A varint of too many bytes: continuation bits past 5 (varint) or 10 (varlong) bytes, or never ending."""
    return rng.choice(
        (b"\xff" * rng.randint(5, 11) + b"\x01", b"\x80" * rng.randint(5, 12) + b"\x00", b"\xff" * rng.randint(1, 16))
    )


def _lie(rng: random.Random, real: int, size: int) -> int:
    """A value for a length or count whose true value is ``real``, in a section of ``size`` bytes."""
    return rng.choice(
        (
            *_I32,
            real - 1,
            real + 1,
            real + 2,
            real * 2,
            -real,
            size,
            size + 1,
            size - 1,
            rng.randrange(-(1 << 31), 1 << 31),
        )
    )


# ---------------------------------------------------------------- binary mutators

# Each takes (rng, batch) and returns the mutated batch bytes and a short description.
Mutation = tuple[bytes, str]


def m_bitflip(rng: random.Random, batch: bytes) -> Mutation:
    """1–8 flipped bits anywhere, the CRC fixed half of the time."""
    out = bytearray(batch)
    flips = [rng.randrange(len(out) * 8) for _ in range(rng.randint(1, 8))]
    for bit in flips:
        out[bit // 8] ^= 1 << (bit % 8)
    fix = rng.random() < 0.5
    return (with_crc(out) if fix else bytes(out)), f"bits {flips}{' +crc' if fix else ''}"


def m_bytes(rng: random.Random, batch: bytes) -> Mutation:
    """1–4 bytes set to 0x00, 0xFF, 0x7F, 0x80, 0x01 or anything, the CRC mostly fixed."""
    out = bytearray(batch)
    where = []
    for _ in range(rng.randint(1, 4)):
        i = rng.randrange(len(out))
        out[i] = rng.choice((0, 0xFF, 0x7F, 0x80, 0x01, rng.randrange(256)))
        where.append(i)
    fix = rng.random() < 0.7
    return (with_crc(out) if fix else bytes(out)), f"bytes at {where}{' +crc' if fix else ''}"


_HEADER_BOUNDS = (1, 8, 12, 16, 17, 21, 23, 27, 35, 43, 51, 53, 57, 61)


def m_truncate(rng: random.Random, batch: bytes) -> Mutation:
    """Cut the batch at a header field boundary, at a record boundary, or anywhere."""
    choice = rng.random()
    if choice < 0.4:
        cut = rng.choice(_HEADER_BOUNDS)
    elif choice < 0.7 and header(batch)[5] & 7 == 0:
        cut = HEADER_SIZE + rng.choice(
            [0] + [s for f, s, _ in record_varints(batch[HEADER_SIZE:]) if f == "record length"]
        )
    else:
        cut = rng.randrange(1, len(batch))
    if rng.random() < 0.5 or cut < HEADER_SIZE:
        return batch[:cut], f"cut at {cut} (length field kept)"
    out = bytearray(batch[:cut])
    struct.pack_into(">i", out, _LENGTH_AT, cut - 12)
    return with_crc(out), f"cut at {cut}, length and CRC fixed"


def m_batch_length(rng: random.Random, batch: bytes) -> Mutation:
    """A batch length that lies (the field is outside the CRC); a shorter one sometimes with its CRC."""
    real = len(batch) - 12
    lie = rng.choice(
        (
            0,
            1,
            48,
            49,
            real - 1,
            real + 1,
            real + 12,
            real * 2,
            (1 << 31) - 1,
            -1,
            -(1 << 31),
            rng.randrange(-(1 << 31), 1 << 31),
        )
    )
    out = bytearray(batch)
    struct.pack_into(">i", out, _LENGTH_AT, lie)
    if 49 <= lie <= real and rng.random() < 0.5:  # a shorter batch whose CRC is right
        out = bytearray(with_crc(out[: 12 + lie])) + out[12 + lie :]
        return bytes(out), f"batch length {lie} (real {real}), CRC of the shorter batch"
    return bytes(out), f"batch length {lie} (real {real})"


def m_record_count(rng: random.Random, batch: bytes) -> Mutation:
    """A record count that lies: 2^31 - 1, -2^31, 2^30, ±1, 0, -1; the CRC fixed."""
    real = header(batch)[12]
    lie = rng.choice((-1, 0, real - 1, real + 1, (1 << 31) - 1, -(1 << 31), 1 << 30, rng.randrange(1 << 31)))
    out = bytearray(batch)
    struct.pack_into(">i", out, _COUNT_AT, lie)
    return with_crc(out), f"record count {lie} (real {real})"


def m_header_field(rng: random.Random, batch: bytes) -> Mutation:
    """A header field with a value that lies: base offset, last offset delta, magic, attributes, epochs."""
    fields = header(batch)
    name, index, values = rng.choice(
        (
            ("base offset", 0, _I64),
            ("leader epoch", 2, _I32),
            ("magic", 3, (0, 1, 3, -1, 127)),
            ("attributes", 5, tuple(range(0, 0x80, 3)) + (0x7FFF, -1)),
            ("last offset delta", 6, _I32),
            ("timestamps", 8, _I64),
            ("producer id", 9, _I64),
            ("producer epoch", 10, (-1, 0, 32767, -32768)),
        )
    )
    fields[index] = rng.choice(values)
    out = HEADER.pack(*fields) + batch[HEADER_SIZE:]
    return (with_crc(out) if index >= 5 else out), f"{name} = {fields[index]}"


def m_codec_swap(rng: random.Random, batch: bytes) -> Mutation:
    """The records compressed with one codec (or none) under the attributes of another (0–7)."""
    fields = header(batch)
    records = records_of(batch)
    actual = rng.randrange(5)
    body = compress(actual, records) if actual else records
    claimed = rng.choice([c for c in range(8) if c != actual])
    return rebuild(
        batch, records, codec=claimed, compressed=body
    ), f"{CODECS[actual]} bytes under codec id {claimed}" + (
        "" if fields[5] & 7 == actual else f" (batch was {CODECS[fields[5] & 7]})"
    )


def m_compressed_damage(rng: random.Random, batch: bytes) -> Mutation:
    """Flipped bits or a cut in the compressed stream, the CRC fixed (decompressors see garbage)."""
    fields = header(batch)
    codec = fields[5] & 7 or rng.randrange(1, 5)
    body = bytearray(compress(codec, records_of(batch)))
    if rng.random() < 0.5 and len(body) > 1:
        cut = rng.randrange(len(body))
        body = body[:cut]
        what = f"cut at {cut}"
    else:
        bits = [rng.randrange(len(body) * 8) for _ in range(rng.randint(1, 4))]
        for bit in bits:
            body[bit // 8] ^= 1 << (bit % 8)
        what = f"bits {bits}"
    return rebuild(batch, b"", codec=codec, compressed=bytes(body)), f"{CODECS[codec]} stream {what}"


def m_record_framing(rng: random.Random, batch: bytes) -> Mutation:
    """A varint of the record framing (record length, deltas, key/value length, header count) lies or
    overflows; the enclosing lengths are left alone or made consistent."""
    records = records_of(batch)
    fields = record_varints(records)
    name, start, end = rng.choice(fields)
    real, _ = read_varint(records, start) if name != "timestamp delta" else read_varlong(records, start)
    if rng.random() < 0.2:
        new = overlong(rng)
        what = f"{name} overlong {new.hex()}"
    else:
        lie = _lie(rng, real, len(records))
        new = varint(lie)
        what = f"{name} {lie} (real {real})"
    mutated = records[:start] + new + records[end:]
    return rebuild(batch, mutated), what


def _value_record(rng: random.Random, batch: bytes) -> tuple[list[Record], int, bool]:
    """The batch's records, one of them picked, and whether the batch is a control batch."""
    fields = header(batch)
    records = parsed_records(records_of(batch), fields[12])
    return records, rng.randrange(len(records)), bool(fields[5] & 0x20)


def m_body_length(rng: random.Random, batch: bytes) -> Mutation:
    """A varint inside a record value — array count, compact string length, tag, tagged size, frame —
    set to a lie or an overlong encoding; the record re-encoded around it (or its length left stale)."""
    records, i, control = _value_record(rng, batch)
    r = records[i]
    value = r.value or b""
    spots = body_varints(value, r.key, control)
    if not spots:
        return m_bitflip(rng, batch)
    start, end = rng.choice(spots)
    real, _ = read_uvarint(value, start)
    if rng.random() < 0.2:
        new = overlong(rng)
        what = f"overlong {new.hex()}"
    else:
        lie = rng.choice(
            (*_U32, real - 1, real + 1, real + 2, len(value) - start, len(value) - start + 1, rng.randrange(1 << 32))
        )
        new = uvarint(lie)
        what = f"{lie} (real {real})"
    records[i].value = value[:start] + new + value[end:]
    return rebuild(batch, encode_records(records)), f"record {i} value byte {start}: varint {what}"


def m_nested_size(rng: random.Random, batch: bytes) -> Mutation:
    """An inner length that fits the value but overruns what encloses it: a later varint of the body
    set to the bytes left in the whole value (plus 0–2), or a record's value length set to its record
    length, so that a nested reader runs into its parent's bytes."""
    records, i, control = _value_record(rng, batch)
    r = records[i]
    value = r.value or b""
    spots = body_varints(value, r.key, control)
    if len(spots) >= 2 and rng.random() < 0.7:
        start, end = rng.choice(spots[1:])
        lie = len(value) - start + rng.randint(-1, 2)
        records[i].value = value[:start] + uvarint(max(lie, 0)) + value[end:]
        return rebuild(batch, encode_records(records)), f"record {i} value byte {start}: length {lie} = rest of value"
    raw = encode_records(records)
    fields = [f for f in record_varints(raw) if f[0] == "value length"]
    lengths = [f for f in record_varints(raw) if f[0] == "record length"]
    j = rng.randrange(len(fields))
    record_length, _ = read_varint(raw, lengths[j][1])
    _, start, end = fields[j]
    return rebuild(
        batch, raw[:start] + varint(record_length) + raw[end:]
    ), f"record {j} value length = its record length {record_length}"


def m_body_damage(rng: random.Random, batch: bytes) -> Mutation:
    """Bit flips, a cut or trailing bytes in one record value; framing and CRC made consistent."""
    records, i, _ = _value_record(rng, batch)
    value = bytearray(records[i].value or b"")
    choice = rng.random()
    if choice < 0.4 and value:
        bits = [rng.randrange(len(value) * 8) for _ in range(rng.randint(1, 3))]
        for bit in bits:
            value[bit // 8] ^= 1 << (bit % 8)
        what = f"bits {bits}"
    elif choice < 0.7:
        cut = rng.randrange(len(value) + 1)
        value = value[:cut]
        what = f"cut at {cut}"
    elif choice < 0.85:
        value += bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
        what = "trailing bytes"
    else:
        value[0:3] = rng.choice(
            (b"\x00", b"\x02", b"\x01\xff\xff\xff\xff\x0f", b"\x01\x7f\x00", b"\x01\x02\x7f", b"\x01\x14\x05", b"")
        )
        what = "frame"
    records[i].value = bytes(value)
    return rebuild(batch, encode_records(records)), f"record {i} value {what}"


def m_records_section(rng: random.Random, batch: bytes) -> Mutation:
    """The records section cut at a record boundary or anywhere, or with bytes after the last record;
    the header (count unchanged) and CRC consistent."""
    records = records_of(batch)
    if rng.random() < 0.6:
        starts = [s for f, s, _ in record_varints(records) if f == "record length"]
        cut = (
            rng.choice(starts[1:] + [rng.randrange(len(records) + 1)])
            if len(starts) > 1
            else rng.randrange(len(records) + 1)
        )
        return rebuild(batch, records[:cut]), f"records cut at {cut} of {len(records)}"
    extra = rng.choice((b"\x00", b"\x02\x00", bytes(rng.randrange(256) for _ in range(rng.randint(1, 32)))))
    return rebuild(batch, records + extra), f"{len(extra)} byte(s) after the records"


@cache
def _bombs() -> dict[str, bytes]:
    """Compressed streams that declare or produce ~1 GiB (built once per process)."""
    zeros = bytes(1 << 20)
    gz = zlib.compressobj(9, zlib.DEFLATED, 31)
    first = gz.compress(zeros) + gz.flush(zlib.Z_FULL_FLUSH)
    again = gz.compress(zeros) + gz.flush(zlib.Z_FULL_FLUSH)  # after a full flush every MiB compresses alike
    # a final empty block, then CRC-32 and size of 1 GiB of zeros: a valid 1 MB gzip member of 1 GiB
    gzip_1g = first + again * 1023 + b"\x03\x00" + struct.pack("<II", 0x5B64C2B0, GIB)
    rle = (((1 << 17) - 1) << 3 | 1 << 1).to_bytes(3, "little") + b"\x00"  # a 128 KiB RLE block of zeros
    last = (((1 << 17) - 1) << 3 | 1 << 1 | 1).to_bytes(3, "little") + b"\x00"
    zstd_1g = b"\x28\xb5\x2f\xfd\x00\x58" + rle * 8191 + last
    lz4_block = bytes(cramjam.lz4.compress_block(bytes(4 << 20), store_size=False))
    lz4_head = struct.pack("<I", 0x184D2204) + bytes((0x60, 0x70))
    lz4_1g = (
        lz4_head
        + bytes((_lz4_hc(lz4_head[4:]),))
        + (struct.pack("<I", len(lz4_block)) + lz4_block) * 256
        + struct.pack("<I", 0)
    )
    snappy_chunk = bytes(cramjam.snappy.compress_raw(bytes(1 << 20)))
    xerial = b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)
    return {
        "gzip produces 1 GiB": gzip_1g,
        "gzip declares 4 GiB": gzip_1g[:10] + zlib.compress(b"x")[2:-4] + struct.pack("<II", 0, 0xFFFFFFFF),
        "zstd produces 1 GiB": zstd_1g,
        "zstd declares 1 TiB": b"\x28\xb5\x2f\xfd\xe0" + struct.pack("<Q", 1 << 40) + last,
        "zstd declares 120 MiB": b"\x28\xb5\x2f\xfd\xe0"
        + struct.pack("<Q", 120 << 20)
        + rle * 960
        + (((120 << 20) - 960 * ((1 << 17) - 1)) << 3 | 3).to_bytes(3, "little")
        + b"\x00",
        "zstd window 2 GiB": b"\x28\xb5\x2f\xfd\x00\xa8" + last,
        "lz4 produces 1 GiB": lz4_1g,
        "lz4 declares 8 EiB": _lz4_declaring(1 << 63),
        "lz4 block of 2 GiB": lz4_head + bytes((_lz4_hc(lz4_head[4:]),)) + struct.pack("<I", 0x7FFFFFFF) + b"x" * 64,
        "snappy declares 4 GiB": b"\xff\xff\xff\xff\x0f" + b"\x00" * 8,
        "snappy chunks declare 2 GiB each": xerial + (struct.pack(">i", 6) + b"\x80\x80\x80\x80\x08\x00") * 64,
        "snappy produces 64 MiB": xerial + (struct.pack(">i", len(snappy_chunk)) + snappy_chunk) * 64,
    }


def _lz4_hc(descriptor: bytes) -> int:
    """The LZ4 frame header checksum byte of a frame descriptor."""
    from metadata.log.codec.compression import xxhash32

    return xxhash32(descriptor) >> 8 & 0xFF


def _lz4_declaring(size: int) -> bytes:
    """An LZ4 frame declaring a content size of ``size`` bytes and holding 4."""
    descriptor = bytes((0x68, 0x40)) + struct.pack("<Q", size)  # content size present
    return (
        struct.pack("<I", 0x184D2204)
        + descriptor
        + bytes((_lz4_hc(descriptor),))
        + struct.pack("<I", 0x80000004)
        + b"\x00\x01\x02\x03"
        + struct.pack("<I", 0)
    )


_BOMB_CODECS = {"gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}


def m_bomb(rng: random.Random, batch: bytes) -> Mutation:
    """A batch (valid CRC) whose compressed records declare or produce gigabytes."""
    name = rng.choice(sorted(_bombs()))
    codec = _BOMB_CODECS[name.split()[0]]
    count = rng.choice((1, header(batch)[12], (1 << 31) - 1))
    return rebuild(batch, b"", codec=codec, compressed=_bombs()[name], count=count), f"{name}, count {count}"


@cache
def _valid_bombs() -> dict[str, bytes]:
    """zstd batches that decode and are as large as may be (just under the decompressed-size limit):
    the memory of the worst valid batch. One of NoOp records (the most records), one of a single
    RegisterBrokerRecord with millions of 7-byte endpoints (the most Python objects per byte)."""
    from metadata.log.codec.compression import MAX_BATCH_DECOMPRESSED_BYTES

    limit = MAX_BATCH_DECOMPRESSED_BYTES
    records = bytearray()
    n = 0
    tail = b"\x01\x08" + NOOP_VALUE + b"\x00"  # no key, a 4-byte value, no headers
    while len(records) + 16 <= limit:  # what encode_records writes for Record(offset_delta=n, value=NOOP_VALUE)
        body = b"\x00\x00" + varint(n) + tail
        records += varint(len(body)) + body
        n += 1
    noops = HEADER.pack(0, 0, 1, 2, 0, 4, n - 1, 0, 0, -1, -1, -1, n) + compress(4, bytes(records))
    empty = encode_metadata_value(
        "REGISTER_BROKER_RECORD", 0, {"brokerId": 1, "brokerEpoch": 1, "endPoints": [], "rack": None}
    )
    endpoint = b"\x01\x01\x00\x00\x00\x00\x00"  # name "", host "", port 0, securityProtocol 0, no tags
    n = (limit - 64) // len(endpoint)
    value = empty[:31] + uvarint(n + 1) + endpoint * n + empty[32:]  # the endPoints count follows brokerEpoch
    endpoints = HEADER.pack(0, 0, 1, 2, 0, 4, 0, 0, 0, -1, -1, -1, 1) + compress(
        4, encode_records([Record(offset_delta=0, value=value)])
    )
    return {
        f"{len(records):,} bytes of NoOps in zstd": noops,
        f"a RegisterBrokerRecord of {n:,} endpoints in zstd": endpoints,
    }


def m_valid_bomb(rng: random.Random, batch: bytes) -> Mutation:
    """One of :func:`_valid_bombs` at the batch's base offset."""
    name = rng.choice(sorted(_valid_bombs()))
    bomb = _valid_bombs()[name]
    return rebuild(struct.pack(">q", header(batch)[0]) + bomb[8:], b"", compressed=bomb[HEADER_SIZE:]), name


def resync_trap(size: int, length: int) -> bytes:
    """``size`` bytes crafted so that every 64th position looks like the start of a batch of ``length``
    bytes (magic 2, lastOffsetDelta = recordCount - 1) whose CRC must be checked: finding where valid
    batches resume in them would cost (size / 64) × length bytes of CRC."""
    unit = bytearray(64)
    struct.pack_into(">qi", unit, 0, 0, length)
    unit[16] = 2
    struct.pack_into(">i", unit, 23, 0)
    struct.pack_into(">i", unit, 57, 1)
    return bytes(unit) * (size // 64)


def m_resync_trap(rng: random.Random, batch: bytes) -> Mutation:
    """After the batch, a :func:`resync_trap` (``--allow-gaps`` scans it after the first candidate's
    CRC fails; a strict read when the first candidate overruns the file)."""
    size = rng.choice((64 << 10, 256 << 10, 1 << 20))
    length = rng.choice((size // 2, size - 200, size + 1000))
    return batch + resync_trap(size, length), f"{size:,} bytes of candidate batches of length {length:,}"


BINARY_MUTATORS: dict[str, tuple[Callable[[random.Random, bytes], Mutation], float]] = {
    "bitflip": (m_bitflip, 12),
    "bytes": (m_bytes, 8),
    "truncate": (m_truncate, 8),
    "batch-length": (m_batch_length, 6),
    "record-count": (m_record_count, 5),
    "header-field": (m_header_field, 6),
    "codec-swap": (m_codec_swap, 4),
    "compressed-damage": (m_compressed_damage, 5),
    "record-framing": (m_record_framing, 10),
    "body-length": (m_body_length, 14),
    "nested-size": (m_nested_size, 6),
    "body-damage": (m_body_damage, 10),
    "records-section": (m_records_section, 5),
    "bomb": (m_bomb, 0.4),
    "valid-bomb": (m_valid_bomb, 0.0005),
    "resync-trap": (m_resync_trap, 0.1),
}


# ---------------------------------------------------------------- dump text mutators

_NUMBER = re.compile(r"-?\d+")
_HUGE = (
    "9223372036854775808",
    "-9223372036854775809",
    "2147483648",
    "-1",
    "1" + "0" * 30,
    "9" * 5000,
    "1e999",
    "0x10",
    "NaN",
    "Infinity",
    "",
    "1.5",
    "٣",
)


def t_bitflip(rng: random.Random, text: str) -> tuple[str, str]:
    """1–6 flipped bits in the text's UTF-8 bytes."""
    raw = bytearray(text.encode())
    bits = [rng.randrange(len(raw) * 8) for _ in range(rng.randint(1, 6))]
    for bit in bits:
        raw[bit // 8] ^= 1 << (bit % 8)
    return raw.decode("utf-8", errors="surrogateescape"), f"bits {bits}"


def t_truncate(rng: random.Random, text: str) -> tuple[str, str]:
    """The text cut anywhere."""
    cut = rng.randrange(len(text))
    return text[:cut], f"cut at {cut}"


def t_number(rng: random.Random, text: str) -> tuple[str, str]:
    """A number replaced by one out of range, of 5,000 digits, in another notation, or none."""
    spots = list(_NUMBER.finditer(text))
    m = rng.choice(spots)
    new = rng.choice(_HUGE)
    return text[: m.start()] + new + text[m.end() :], f"number at {m.start()} -> {new[:20]}"


_LIES = (
    (r"lastOffset: \d+", "lastOffset: 0"),
    (r"baseOffset: \d+", "baseOffset: 999999"),
    (r"isControl: (true|false)", "isControl: maybe"),
    (r"isControl: true", "isControl: false"),
    (r"isControl: false", "isControl: true"),
    (r"isTransactional: false", "isTransactional: true"),
    (r"\| offset: \d+", "| offset: 123456789"),
    (r"producerEpoch: -?\d+", "producerEpoch: 40000"),
    (r"partitionLeaderEpoch: \d+ ", ""),
    (r"controlType: \w+\(\d+\)", "controlType: BOGUS(99)"),
    (r"controlType: \w+\(\d+\)", "controlType: COMMIT(2)"),
    (r'"version":\d+', '"version":999'),
    (r'"version":\d+', '"version":-1'),
    (r'"version":\d+', '"version":"0"'),
    (r'"type":"\w+"', '"type":"NOPE"'),
    (r'"type":"\w+"', '"type":["x"]'),
    (r'"data":', '"dat":'),
    (r'"name":"[^"]*"', '"name":7'),
    (r'"partitionId":\d+', '"partitionId":-99999999999'),
    (r'"replicas":\[[^\]]*\]', '"replicas":"all"'),
    (r'"topicId":"[^"]*"', '"topicId":"not-a-uuid"'),
    (r'\{"', '{"unknownField":1,"'),
    (r'("data":\{)', r'\1"_unknownTaggedFields":[{"tag":"x"}],'),
)


def t_lie(rng: random.Random, text: str) -> tuple[str, str]:
    """A field that lies: offsets, flags, epochs, control types, payload types, versions and data."""
    candidates = [(p, r) for p, r in _LIES if re.search(p, text)]
    if not candidates:
        return t_number(rng, text)
    pattern, replacement = rng.choice(candidates)
    matches = list(re.finditer(pattern, text))
    m = rng.choice(matches)
    return text[: m.start()] + m.expand(replacement) + text[m.end() :], f"{pattern} -> {replacement}"


def t_json(rng: random.Random, text: str) -> tuple[str, str]:
    """Malformed payload JSON: a deleted or inserted delimiter, deep nesting, a huge payload."""
    spots = [m.start() for m in re.finditer(r'[{}\[\]":,]', text)]
    choice = rng.random()
    if choice < 0.5 and spots:
        i = rng.choice(spots)
        new = rng.choice(("", "{", "}", "[", "]", '"', ",", ":", "\\", "\x00", "\u2028", "\ud800"))
        return text[:i] + new + text[i + 1 :], f"char {i} -> {new!r}"
    if choice < 0.8:
        depth = rng.choice((100, 1000, 20000, 200000))
        nest = rng.choice((("[" * depth, "]" * depth), ('{"a":' * depth, "}" * depth)))
        if '"data":{' in text:
            return text.replace('"data":{', '"data":{"deep":' + nest[0] + "1" + nest[1] + ",", 1), f"depth {depth}"
        return text.replace("\n", " " + nest[0] + nest[1] + "\n", 1), f"depth {depth} on a line"
    width = rng.choice((10_000, 1_000_000))
    return text.replace('"data":{', '"data":{"pad":"' + "x" * width + '",', 1), f"{width}-char field"


def t_lines(rng: random.Random, text: str) -> tuple[str, str]:
    """Garbage lines: random bytes, lone prefixes, repeated control markers, a duplicate, a dropped line."""
    lines = text.splitlines(keepends=True)
    i = rng.randrange(len(lines) + 1)
    choice = rng.random()
    if choice < 0.25 and lines:
        del lines[min(i, len(lines) - 1)]
        return "".join(lines), f"line {i} dropped"
    if choice < 0.4 and lines:
        lines.insert(i, lines[rng.randrange(len(lines))])
        return "".join(lines), f"a line repeated at {i}"
    garbage = rng.choice(
        (
            "baseOffset:\n",
            "baseOffset: 1 lastOffset: 0\n",
            "| offset: \n",
            " payload: {\n",
            "|\n",
            "\x00" * 100 + "\n",
            "| offset: 1 LeaderChange {" * 5000 + "\n",
            "| offset: 1 headerKeys: [] " + "LeaderChange: {" * 20000 + "}\n",
            "Snapshot end offset: 99999999999999999999999, epoch: x\n",
            "Snapshot end offset: 5\n",
            "KRaft bootstrap snapshot\n",
            "Dumping /etc/passwd\n",
            "Dumping ../../../../tmp/evil\n",
            "\r\n\r\n",
            bytes(rng.randrange(256) for _ in range(64)).decode("latin-1") + "\n",
        )
    )
    lines.insert(i, garbage)
    return "".join(lines), f"line {i}: {garbage[:30]!r}"


TEXT_MUTATORS: dict[str, tuple[Callable[[random.Random, str], tuple[str, str]], float]] = {
    "text-bitflip": (t_bitflip, 4),
    "text-truncate": (t_truncate, 2),
    "text-number": (t_number, 3),
    "text-lie": (t_lie, 4),
    "text-json": (t_json, 4),
    "text-lines": (t_lines, 3),
}


# ---------------------------------------------------------------- cases


@dataclass
class Case:
    """One mutated input file, ready to write and decode."""

    number: int
    mutator: str
    source: str
    description: str
    data: bytes
    file: InputFile
    options: ReadOptions


def _pick(rng: random.Random, table: dict) -> str:
    """A mutator name, by weight."""
    names = list(table)
    return rng.choices(names, weights=[table[n][1] for n in names])[0]


def original_cases(corpus: Corpus, path: str) -> list[Case]:
    """Every corpus file unmutated (all must decode): a check of the corpus, and a warm-up."""
    cases = [
        Case(
            -1,
            "none",
            s.name,
            "unmutated",
            b"".join(s.batches),
            InputFile(path=path, kind=s.kind, size=sum(map(len, s.batches)), end_offset=s.end_offset, epoch=s.epoch),
            ReadOptions(),
        )
        for s in corpus.real + corpus.generated
    ]
    for d in corpus.dumps:
        data = "".join(d.head + sum(d.chunks, ())).encode()
        cases.append(
            Case(
                -1,
                "none",
                d.name,
                "unmutated",
                data,
                InputFile(path=path, kind=InputKind.DUMP, size=len(data)),
                ReadOptions(),
            )
        )
    return cases


def make_case(corpus: Corpus, seed: int, number: int, path: str, text_share: float) -> Case:
    """Case ``number`` of ``seed``: which source, batch, mutator and options follow from them alone."""
    rng = random.Random(f"{seed}:{number}")
    options = ReadOptions(allow_gaps=rng.random() < 0.5, skip_unknown=rng.random() < 0.25)
    if rng.random() < text_share:
        dump = rng.choice(corpus.dumps)
        i = rng.randrange(len(dump.chunks))
        mutator = _pick(rng, TEXT_MUTATORS)
        chunk = "".join(dump.chunks[i])
        text, description = TEXT_MUTATORS[mutator][0](rng, chunk)
        after = "".join(dump.chunks[i + 1]) if i + 1 < len(dump.chunks) and rng.random() < 0.5 else ""
        data = ("".join(dump.head) + text + after).encode("utf-8", errors="surrogatepass")
        return Case(
            number,
            mutator,
            f"{dump.name} batch {i}",
            description,
            data,
            InputFile(path=path, kind=InputKind.DUMP, size=len(data)),
            options,
        )
    group = corpus.real if rng.random() < 0.5 else corpus.generated  # then every batch of the group alike
    source = rng.choices(group, weights=[len(x.batches) for x in group])[0]
    i = rng.randrange(len(source.batches))
    mutator = _pick(rng, BINARY_MUTATORS)
    mutated, description = BINARY_MUTATORS[mutator][0](rng, source.batches[i])
    if source.kind is InputKind.SEGMENT:  # between up to two unchanged neighbours on each side
        before = source.batches[max(0, i - rng.randint(0, 2)) : i]
        after = source.batches[i + 1 : i + 1 + rng.randint(0, 2)]
    else:  # a snapshot must open with its header batch: the whole file
        before, after = source.batches[:i], source.batches[i + 1 :]
    data = b"".join(before) + mutated + b"".join(after)
    return Case(
        number,
        mutator,
        f"{source.name} batch {i}",
        description,
        data,
        InputFile(path=path, kind=source.kind, size=len(data), end_offset=source.end_offset, epoch=source.epoch),
        options,
    )


def error_kind(exc: DecodeError) -> str:
    """A DecodeError's message without numbers, quotes and line prefix: the kind of error it is."""
    text = re.sub(r"^line \d+: ", "", exc.message)
    text = re.sub(r"'[^']*'|\"[^\"]*\"", "'…'", text)
    text = re.sub(r"0x[0-9a-f]+|-?\d[\d,]*", "N", text)
    return f"{type(exc).__name__}: {text[:90]}"


def run_case(case: Case) -> str:
    """Write and decode ``case`` through both paths: its outcome (``accepted``, ``accepted with issues``
    or the error's kind), or :class:`Failure`."""
    Path(case.file.path).write_bytes(case.data)
    if case.file.kind is InputKind.SEGMENT:
        _byte_ranges(case)
    issues: list[Issue] = []
    error: DecodeError | None = None
    rows = 0
    try:
        for _ in iter_file_rows(case.file, issues, case.options):
            rows += 1
    except DecodeError as exc:
        error = exc
    except Exception as exc:  # noqa: BLE001 — what the fuzzer looks for
        raise Failure(f"dict path raised {type(exc).__name__}: {exc}") from exc
    if error is not None and (
        error.file != case.file.path or error.position is None and case.file.kind is not InputKind.DUMP
    ):
        raise Failure(f"DecodeError does not name the file and byte position: {error}")
    arrow_issues: list[Issue] = []
    try:
        arrow_rows = sum(b.num_rows for b in decode_to_arrow(case.file, case.options, arrow_issues))
    except Exception as exc:  # noqa: BLE001
        raise Failure(f"Arrow path raised {type(exc).__name__}: {exc}") from exc
    fatal = [str(i) for i in arrow_issues if i.severity == "fatal"]
    others = [str(i) for i in arrow_issues if i.severity != "fatal"]
    if error is not None:
        if fatal != [str(error)]:
            raise Failure(f"dict path: {error}; Arrow path: {fatal or 'no error'}")
        if others != [str(i) for i in issues]:
            raise Failure(f"issues differ: dict {[str(i) for i in issues]}, Arrow {others}")
        return error_kind(error)
    if fatal or arrow_rows != rows or others != [str(i) for i in issues]:
        raise Failure(
            f"dict path: {rows} rows, issues {[str(i) for i in issues]}; Arrow path: {arrow_rows} rows, "
            f"issues {[str(i) for i in arrow_issues]}"
        )
    return "accepted with issues" if issues else "accepted"


def _byte_ranges(case: Case) -> None:
    """A segment cut into byte ranges as ingest cuts a large one (:func:`plan_ranges`, hopping over the
    length fields, which may lie), each range decoded on its own: rows or a DecodeError."""
    try:
        ranges = plan_ranges(case.file, max(256, len(case.data) // 3))
        for start, end in ranges:
            try:
                for _ in iter_file_items(case.file, [], case.options, start, end, json_payload=True):
                    pass
            except DecodeError:
                pass
    except Exception as exc:  # noqa: BLE001
        raise Failure(f"byte ranges raised {type(exc).__name__}: {exc}") from exc
