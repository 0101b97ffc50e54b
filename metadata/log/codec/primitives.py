"""Kafka's wire primitives: unsigned varints, zig-zag varints/varlongs and Uuids."""

from __future__ import annotations

import base64
import binascii

from metadata.log.errors import BadInput, DecodeError


def read_uvarint(buf: bytes, pos: int) -> tuple[int, int]:
    """Unsigned 32-bit varint at ``pos`` → (value as a 32-bit two's-complement int, next pos)."""
    b = buf[pos]
    if b < 0x80:
        return b, pos + 1
    value = b & 0x7F
    shift = 7
    pos += 1
    while True:
        if shift > 28:
            raise DecodeError("Varint is too long")
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            break
        shift += 7
    value &= 0xFFFFFFFF
    return (value - (1 << 32) if value & 0x80000000 else value), pos


def read_varint(buf: bytes, pos: int) -> tuple[int, int]:
    """Zig-zag signed 32-bit varint."""
    b = buf[pos]
    if b < 0x80:
        return (b >> 1) ^ -(b & 1), pos + 1
    b2 = buf[pos + 1]
    if b2 < 0x80:  # two bytes: lengths of 64..8191
        u = (b & 0x7F) | (b2 << 7)
        return (u >> 1) ^ -(u & 1), pos + 2
    u, pos = read_uvarint(buf, pos)
    u &= 0xFFFFFFFF
    return (u >> 1) ^ -(u & 1), pos


def read_varlong(buf: bytes, pos: int) -> tuple[int, int]:
    """Zig-zag signed 64-bit varlong (up to 10 bytes)."""
    value = 0
    shift = 0
    while True:
        if shift > 63:
            raise DecodeError("Varlong is too long")
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            break
        shift += 7
    value &= 0xFFFFFFFFFFFFFFFF
    return (value >> 1) ^ -(value & 1), pos


def uvarint(value: int) -> bytes:
    """Encode an unsigned varint (negative 32-bit values are taken as their unsigned form)."""
    value &= 0xFFFFFFFF
    if value < 0x80:
        return bytes((value,))
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def varint(value: int) -> bytes:
    """Encode a zig-zag signed 32-bit varint."""
    return uvarint(((value << 1) ^ (value >> 31)) & 0xFFFFFFFF)


def varlong(value: int) -> bytes:
    """Encode a zig-zag signed 64-bit varlong."""
    u = ((value << 1) ^ (value >> 63)) & 0xFFFFFFFFFFFFFFFF
    out = bytearray()
    while u >= 0x80:
        out.append((u & 0x7F) | 0x80)
        u >>= 7
    out.append(u)
    return bytes(out)


URLSAFE = bytes.maketrans(b"+/", b"-_")  # standard → URL-safe base64 alphabet


def uuid_to_str(raw: bytes) -> str:
    """16 Uuid bytes → Kafka's text form (URL-safe base64 without padding, 22 chars)."""
    return binascii.b2a_base64(raw, newline=False)[:22].translate(URLSAFE).decode("ascii")


def uuid_from_str(text: str) -> bytes:
    """Kafka's Uuid text form → 16 bytes."""
    raw = base64.urlsafe_b64decode(text + "==")
    if len(raw) != 16:
        raise BadInput(f"not a Kafka Uuid: {text!r}")
    return raw
