"""The five batch compression codecs, with the stream framings Kafka's clients use.

gzip: RFC 1952 (several members accepted). snappy: xerial snappy-java stream framing (or one raw
block). lz4: the LZ4 frame subset Kafka reads (independent blocks, header checksum verified).
zstd: standard frames, content size usually absent.

Decompression is bounded: no codec produces (or allocates for) more than ``limit`` bytes, by
default :data:`MAX_BATCH_DECOMPRESSED_BYTES`; past it the batch is rejected with a
:class:`DecodeError`, so that a small hostile batch cannot inflate to gigabytes (a compression bomb).
"""

from __future__ import annotations

import gzip
import os
import struct
import zlib

import cramjam
import numpy as np

from metadata.log.errors import BadInput, DecodeError

CODECS = ("none", "gzip", "snappy", "lz4", "zstd")

MAX_BATCH_BYTES_ENV = "KRAFT_REPLAY_MAX_BATCH_BYTES"


def _limit_from_env() -> int:
    """The limit set by ``KRAFT_REPLAY_MAX_BATCH_BYTES``, else 16 MiB."""
    text = os.environ.get(MAX_BATCH_BYTES_ENV, "")
    if not text:
        return 16 << 20
    if not text.isdigit() or int(text) < 1:
        raise BadInput(f"{MAX_BATCH_BYTES_ENV} must be a positive number of bytes, not {text!r}")
    return int(text)


MAX_BATCH_DECOMPRESSED_BYTES = _limit_from_env()
"""The most bytes a batch's records section may hold once decompressed (the size of an uncompressed
batch's records): 16 MiB, twice the largest batch Kafka's raft layer writes
(``KafkaRaftClient.MAX_BATCH_SIZE_BYTES``, 8 MiB); ``KRAFT_REPLAY_MAX_BATCH_BYTES`` sets another."""


def too_large(what: str, limit: int) -> DecodeError:
    """The error of a batch whose records exceed ``limit`` bytes."""
    return DecodeError(
        f"{what} more than {limit:,} bytes, the limit on a batch's decompressed size "
        f"(set {MAX_BATCH_BYTES_ENV} to raise it)"
    )


_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_LZ4_MAGIC = 0x184D2204
_LZ4_BLOCK_SIZES = {4: 1 << 16, 5: 1 << 18, 6: 1 << 20, 7: 1 << 22}

_P1, _P2, _P3, _P4, _P5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
_M32 = 0xFFFFFFFF


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def xxhash32(data: bytes, seed: int = 0) -> int:
    """xxHash32, used by the LZ4 frame header checksum (inputs here are a few bytes)."""
    n = len(data)
    pos = 0
    if n >= 16:
        v = [(seed + _P1 + _P2) & _M32, (seed + _P2) & _M32, seed & _M32, (seed - _P1) & _M32]
        while pos + 16 <= n:
            for i in range(4):
                lane = int.from_bytes(data[pos : pos + 4], "little")
                v[i] = (_rotl((v[i] + lane * _P2) & _M32, 13) * _P1) & _M32
                pos += 4
        h = (_rotl(v[0], 1) + _rotl(v[1], 7) + _rotl(v[2], 12) + _rotl(v[3], 18)) & _M32
    else:
        h = (seed + _P5) & _M32
    h = (h + n) & _M32
    while pos + 4 <= n:
        h = (_rotl((h + int.from_bytes(data[pos : pos + 4], "little") * _P3) & _M32, 17) * _P4) & _M32
        pos += 4
    while pos < n:
        h = (_rotl((h + data[pos] * _P5) & _M32, 11) * _P1) & _M32
        pos += 1
    h ^= h >> 15
    h = (h * _P2) & _M32
    h ^= h >> 13
    h = (h * _P3) & _M32
    return h ^ (h >> 16)


def _gunzip(data: bytes, limit: int) -> bytes:
    out = bytearray()
    while data:
        d = zlib.decompressobj(wbits=31)
        out += d.decompress(data, limit + 1 - len(out))  # stops one byte past the limit
        if len(out) > limit:
            raise too_large("gzip records decompress to", limit)
        if not d.eof:
            raise DecodeError("gzip stream ends early")
        data = d.unused_data
    return bytes(out)


def _snappy_block(block: bytes, done: int, limit: int) -> bytes:
    """One raw snappy block, after ``done`` bytes of output: its declared length is checked first."""
    if done + cramjam.snappy.decompress_raw_len(block) > limit:
        raise too_large("snappy records declare", limit)
    return bytes(cramjam.snappy.decompress_raw(block))


def _unsnappy(data: bytes, limit: int) -> bytes:
    if not data:
        raise DecodeError("empty snappy stream")
    if len(data) < 16 or data[:8] != _XERIAL_MAGIC:
        return _snappy_block(data, 0, limit)
    out = bytearray()
    pos = 16
    while pos + 4 <= len(data):
        (n,) = struct.unpack_from(">i", data, pos)
        pos += 4
        if n == -2108469695:  # the first 4 magic bytes: a concatenated stream starts
            pos += 12
            continue
        if n < 0 or pos + n > len(data):
            raise DecodeError(f"bad snappy chunk length {n}")
        out += _snappy_block(data[pos : pos + n], len(out), limit)
        pos += n
    return bytes(out)


def _snappy(data: bytes) -> bytes:
    out = bytearray(_XERIAL_MAGIC + struct.pack(">ii", 1, 1))
    for i in range(0, len(data), 32 * 1024):
        block = bytes(cramjam.snappy.compress_raw(data[i : i + 32 * 1024]))
        out += struct.pack(">i", len(block)) + block
    return bytes(out)


def _unlz4(data: bytes, limit: int) -> bytes:
    if len(data) < 7 or struct.unpack_from("<I", data, 0)[0] != _LZ4_MAGIC:
        raise DecodeError("Stream unsupported (invalid magic bytes)")
    flg, bd = data[4], data[5]
    if flg >> 6 != 1:
        raise DecodeError("lz4: unsupported frame version")
    if not flg & 0x20:
        raise DecodeError("Dependent block stream is unsupported")
    if flg & 0x03 or bd & 0x8F:
        raise DecodeError("lz4: reserved bits set")
    max_block = _LZ4_BLOCK_SIZES.get((bd >> 4) & 7)
    if max_block is None:
        raise DecodeError("lz4: bad block size")
    pos = 6 + (8 if flg & 0x08 else 0)
    if xxhash32(bytes(data[4:pos])) >> 8 & 0xFF != data[pos]:
        raise DecodeError("Stream frame descriptor corrupted")
    pos += 1
    out = bytearray()
    buffer: bytearray | None = None
    while True:
        if pos + 4 > len(data):
            raise DecodeError("lz4: stream ends before the end mark")
        (size,) = struct.unpack_from("<I", data, pos)
        pos += 4
        if size == 0:
            break
        stored, size = size & 0x80000000, size & 0x7FFFFFFF
        if size > max_block or pos + size > len(data):
            raise DecodeError("lz4: block too large")
        block = bytes(data[pos : pos + size])
        pos += size
        if flg & 0x10:
            if xxhash32(block) != struct.unpack_from("<I", data, pos)[0]:
                raise DecodeError("lz4: block checksum mismatch")
            pos += 4
        if stored:
            out += block
        else:
            if buffer is None:
                buffer = bytearray(max_block)
            n = cramjam.lz4.decompress_block_into(block, buffer)
            out += memoryview(buffer)[:n]
        if len(out) > limit:  # each block adds at most max_block (≤ 4 MiB)
            raise too_large("lz4 records decompress to", limit)
    return bytes(out)


def _unzstd(data: bytes, limit: int) -> bytes:
    size = min(limit, max(1 << 16, 32 * len(data)))  # enough for most batches, and no 16 MiB buffer each
    while True:
        buffer = np.empty(size + 1, np.uint8)  # uninitialised: only the pages written are touched
        try:
            n = cramjam.zstd.decompress_into(data, buffer)
        except cramjam.DecompressionError as exc:
            if "failed to write whole buffer" not in str(exc):  # else: more output than the buffer holds
                raise
            n = size + 1
        if n <= size:
            return buffer[:n].tobytes()
        if size == limit:
            raise too_large("zstd records decompress to", limit)
        size = limit


def _lz4(data: bytes) -> bytes:
    descriptor = bytes((0x60, 0x40))  # version 01, independent blocks; 64 KiB blocks
    out = bytearray(struct.pack("<I", _LZ4_MAGIC) + descriptor + bytes((xxhash32(descriptor) >> 8 & 0xFF,)))
    for i in range(0, len(data), 1 << 16):
        chunk = data[i : i + (1 << 16)]
        block = bytes(cramjam.lz4.compress_block(chunk, store_size=False))
        if len(block) >= len(chunk):
            out += struct.pack("<I", len(chunk) | 0x80000000) + chunk
        else:
            out += struct.pack("<I", len(block)) + block
    return bytes(out + struct.pack("<I", 0))


def decompress(codec: int, data: bytes, limit: int = MAX_BATCH_DECOMPRESSED_BYTES) -> bytes:
    """Decompress a batch's record stream (codec id 1–4), to at most ``limit`` bytes."""
    try:
        if codec == 1:
            return _gunzip(data, limit)
        if codec == 2:
            return _unsnappy(data, limit)
        if codec == 3:
            return _unlz4(data, limit)
        if codec == 4:
            return _unzstd(data, limit)
    except DecodeError:
        raise
    except Exception as exc:  # the codec libraries raise their own types
        raise DecodeError(f"cannot decompress {CODECS[codec]} records: {exc}") from None
    raise DecodeError(f"Unknown compression type id: {codec}")


def compress(codec: int, data: bytes) -> bytes:
    """Compress a record stream with codec id 1–4."""
    if codec == 1:
        return gzip.compress(data, mtime=0)
    if codec == 2:
        return _snappy(data)
    if codec == 3:
        return _lz4(data)
    if codec == 4:
        return bytes(cramjam.zstd.compress(data))
    raise ValueError(f"Unknown compression type id: {codec}")
