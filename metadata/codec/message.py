"""Schema-driven codec of message bodies (flexible versions, tagged fields).

A body decodes to the dict Kafka's generated JSON converters print: camelCase names, every
regular field of the version, tagged fields only when they differ from their default, Uuids in
Kafka's base64 form, ``bytes`` as standard base64. Unknown tagged fields are kept under
``_unknownTaggedFields`` ([{"tag", "data"}], data in base64) so that nothing is lost and the body
re-encodes byte for byte. Readers and writers are compiled once per (message, version).
"""

from __future__ import annotations

import base64
import json
import struct
from collections.abc import Callable
from typing import Any

from metadata.codec.primitives import read_uvarint, uuid_from_str, uuid_to_str, uvarint
from metadata.errors import DecodeError
from metadata.schema import FieldSpec, MessageSpec

UNKNOWN_TAGS = "_unknownTaggedFields"

Reader = Callable[[bytes, int, int], tuple[Any, int]]  # (buf, pos, end) -> (value, next pos)
Writer = Callable[[Any, bytearray], None]

_FIXED: dict[str, struct.Struct] = {
    "int8": struct.Struct(">b"), "int16": struct.Struct(">h"), "uint16": struct.Struct(">H"),
    "int32": struct.Struct(">i"), "uint32": struct.Struct(">I"), "int64": struct.Struct(">q"),
    "float64": struct.Struct(">d"),
}


def _need(pos: int, n: int, end: int, what: str) -> None:
    if pos + n > end:
        raise DecodeError(f"{what}: needs {n} byte(s) at body position {pos}, only {end - pos} left")


def _primitive_reader(type_: str, name: str, nullable: bool) -> Reader:
    if type_ in _FIXED:
        fmt = _FIXED[type_]
        size = fmt.size
        unpack = fmt.unpack_from

        def read_fixed(buf: bytes, pos: int, end: int) -> tuple[Any, int]:
            if pos + size > end:
                _need(pos, size, end, name)
            return unpack(buf, pos)[0], pos + size
        return read_fixed
    if type_ == "bool":
        def read_bool(buf: bytes, pos: int, end: int) -> tuple[Any, int]:
            if pos >= end:
                _need(pos, 1, end, name)
            return buf[pos] != 0, pos + 1
        return read_bool
    if type_ == "uuid":
        def read_uuid(buf: bytes, pos: int, end: int) -> tuple[Any, int]:
            if pos + 16 > end:
                _need(pos, 16, end, name)
            return uuid_to_str(bytes(buf[pos:pos + 16])), pos + 16
        return read_uuid
    if type_ in ("string", "bytes"):
        is_string = type_ == "string"

        def read_var(buf: bytes, pos: int, end: int) -> tuple[Any, int]:
            n, pos = read_uvarint(buf, pos)
            n -= 1
            if n < 0:
                if not nullable:
                    raise DecodeError(f"non-nullable field {name} was serialized as null")
                return None, pos
            if is_string and n > 32767:
                raise DecodeError(f"string field {name} had invalid length {n}")
            if pos + n > end:
                _need(pos, n, end, name)
            raw = bytes(buf[pos:pos + n])
            if is_string:
                return raw.decode("utf-8", errors="replace"), pos + n
            return base64.b64encode(raw).decode("ascii"), pos + n
        return read_var
    raise ValueError(f"unknown primitive type {type_}")


def _array_length(buf: bytes, pos: int, end: int, name: str, nullable: bool) -> tuple[int, int]:
    """A compact array's element count (-1 = null), checked as Kafka's generated readers do."""
    n, pos = read_uvarint(buf, pos)
    n -= 1
    if n < 0:
        if not nullable:
            raise DecodeError(f"non-nullable field {name} was serialized as null")
        return -1, pos
    if n > end - pos:
        raise DecodeError(f"Tried to allocate a collection of size {n} for field {name}, "
                          f"but there are only {end - pos} bytes remaining")
    return n, pos


def _packed_array_reader(type_: str, name: str, nullable: bool) -> Reader:
    """Arrays of fixed-width elements (replicas, isr, directories…) in one unpack call."""
    if type_ == "uuid":
        size = 16

        def convert(buf: bytes, pos: int, n: int) -> list:
            return [uuid_to_str(buf[p:p + 16]) for p in range(pos, pos + 16 * n, 16)]
    else:
        size, code = _FIXED[type_].size, _FIXED[type_].format[-1]

        def convert(buf: bytes, pos: int, n: int) -> list:
            return list(struct.unpack_from(f">{n}{code}", buf, pos))

    def read_packed(buf: bytes, pos: int, end: int) -> tuple[Any, int]:
        n, pos = _array_length(buf, pos, end, name, nullable)
        if n < 0:
            return None, pos
        stop = pos + n * size
        if stop > end:
            _need(pos, n * size, end, name)
        return convert(buf, pos, n), stop
    return read_packed


def _field_reader(field: FieldSpec, version: int) -> Reader:
    nullable = version in field.nullable
    if field.is_array and (field.element_type in _FIXED or field.element_type == "uuid"):
        return _packed_array_reader(field.element_type, field.name, nullable)
    if field.is_array:
        element = (_struct_reader(field.fields, version, field.name) if field.is_struct
                   else _primitive_reader(field.element_type, field.name, False))
        name = field.name

        def read_array(buf: bytes, pos: int, end: int) -> tuple[Any, int]:
            n, pos = _array_length(buf, pos, end, name, nullable)
            if n < 0:
                return None, pos
            out = []
            append = out.append
            for _ in range(n):
                value, pos = element(buf, pos, end)
                append(value)
            return out, pos
        return read_array
    if field.is_struct:
        return _struct_reader(field.fields, version, field.name)
    return _primitive_reader(field.type, field.name, nullable)


def _is_default(field: FieldSpec, value: Any) -> bool:
    return value == field.default_value() if value is not None else field.default_value() is None


def _struct_reader(fields: tuple[FieldSpec, ...], version: int, what: str) -> Reader:
    present = [f for f in fields if version in f.versions]
    regular = [(f.json_name, _field_reader(f, version)) for f in present if version not in f.tagged]
    tagged = {f.tag: (f, _field_reader(f, version)) for f in present if version in f.tagged}
    all_tags = {f.tag for f in fields if f.tag is not None}
    order = {f.json_name: i for i, f in enumerate(present)}

    def read_struct(buf: bytes, pos: int, end: int) -> tuple[Any, int]:
        out: dict[str, Any] = {}
        for key, reader in regular:
            out[key], pos = reader(buf, pos, end)
        if pos >= end:
            _need(pos, 1, end, f"{what} tagged fields")
        count = buf[pos]
        if count < 0x80:
            pos += 1
        else:
            count, pos = read_uvarint(buf, pos)
        if count:
            unknown = []
            for _ in range(count):
                tag, pos = read_uvarint(buf, pos)
                size, pos = read_uvarint(buf, pos)
                if size < 0 or pos + size > end:
                    raise DecodeError(f"{what}: tagged field {tag} of size {size} overruns the body")
                known = tagged.get(tag)
                if known is not None:
                    field, reader = known
                    value, stop = reader(buf, pos, pos + size)
                    if stop != pos + size:
                        raise DecodeError(f"{what}: tagged field {field.name} declared {size} byte(s), "
                                          f"its value used {stop - pos}")
                    if not _is_default(field, value):
                        out[field.json_name] = value
                elif tag in all_tags:
                    raise DecodeError(f"{what}: Tag {tag} is not valid for version {version}")
                else:
                    unknown.append({"tag": tag, "data": base64.b64encode(bytes(buf[pos:pos + size])).decode()})
                pos += size
            if len(out) > len(regular):
                out = dict(sorted(out.items(), key=lambda kv: order[kv[0]]))
            if unknown:
                out[UNKNOWN_TAGS] = unknown
        return out, pos
    return read_struct


_READERS: dict[tuple[str, int], Reader] = {}
_WRITERS: dict[tuple[str, int], Writer] = {}


def body_reader(spec: MessageSpec, version: int) -> Reader:
    """The compiled reader of ``spec`` at ``version`` (highest known layout for newer versions)."""
    reader = _READERS.get((spec.name, version))
    if reader is None:
        reader = _READERS[(spec.name, version)] = _struct_reader(spec.fields, version, spec.name)
    return reader


json_text: Callable[[Any], str] = json.JSONEncoder(separators=(",", ":")).encode
"""Compact JSON text of a decoded body (the ``payload`` column)."""


def decode_body(spec: MessageSpec, version: int, buf: bytes, pos: int = 0, end: int | None = None,
                json_payload: bool = False) -> Any:
    """Decode a whole body (dict, or its :func:`json_text` with ``json_payload``); trailing bytes are an
    error as in Kafka's serde."""
    end = len(buf) if end is None else end
    value, stop = body_reader(spec, version)(buf, pos, end)
    if stop != end:
        raise DecodeError(f"Found {end - stop} byte(s) of garbage after {spec.name}")
    return json_text(value) if json_payload else value


# ---------------------------------------------------------------- writers


def _primitive_writer(type_: str, name: str) -> Writer:
    if type_ in _FIXED:
        pack = _FIXED[type_].pack

        def write_fixed(value: Any, out: bytearray) -> None:
            out += pack(value)
        return write_fixed
    if type_ == "bool":
        def write_bool(value: Any, out: bytearray) -> None:
            out.append(1 if value else 0)
        return write_bool
    if type_ == "uuid":
        def write_uuid(value: Any, out: bytearray) -> None:
            out += uuid_from_str(value)
        return write_uuid
    if type_ in ("string", "bytes"):
        is_string = type_ == "string"

        def write_var(value: Any, out: bytearray) -> None:
            if value is None:
                out.append(0)
                return
            raw = value.encode("utf-8") if is_string else base64.b64decode(value)
            out += uvarint(len(raw) + 1)
            out += raw
        return write_var
    raise ValueError(f"unknown primitive type {type_} of {name}")


def _field_writer(field: FieldSpec, version: int) -> Writer:
    if field.is_array:
        element = (_struct_writer(field.fields, version) if field.is_struct
                   else _primitive_writer(field.element_type, field.name))

        def write_array(value: Any, out: bytearray) -> None:
            if value is None:
                out.append(0)
                return
            out += uvarint(len(value) + 1)
            for item in value:
                element(item, out)
        return write_array
    if field.is_struct:
        return _struct_writer(field.fields, version)
    return _primitive_writer(field.type, field.name)


def _struct_writer(fields: tuple[FieldSpec, ...], version: int) -> Writer:
    present = [f for f in fields if version in f.versions]
    regular = [(f.json_name, f.default_value(), _field_writer(f, version)) for f in present if version not in f.tagged]
    tagged = sorted(((f.tag, f, _field_writer(f, version)) for f in present if version in f.tagged),
                    key=lambda t: t[0])

    def write_struct(value: dict[str, Any], out: bytearray) -> None:
        for key, default, writer in regular:
            writer(value.get(key, default), out)
        entries: list[tuple[int, bytes]] = []
        for tag, field, writer in tagged:
            if field.json_name in value and not _is_default(field, value[field.json_name]):
                data = bytearray()
                writer(value[field.json_name], data)
                entries.append((tag, bytes(data)))
        for unknown in value.get(UNKNOWN_TAGS, ()):
            entries.append((unknown["tag"], base64.b64decode(unknown["data"])))
        entries.sort(key=lambda e: e[0])
        out += uvarint(len(entries))
        for tag, data in entries:
            out += uvarint(tag)
            out += uvarint(len(data))
            out += data
    return write_struct


def body_writer(spec: MessageSpec, version: int) -> Writer:
    """The compiled writer of ``spec`` at ``version``."""
    writer = _WRITERS.get((spec.name, version))
    if writer is None:
        writer = _WRITERS[(spec.name, version)] = _struct_writer(spec.fields, version)
    return writer


def encode_body(spec: MessageSpec, version: int, data: dict[str, Any]) -> bytes:
    """Encode a body from its JSON-converter dict; absent fields take their schema default."""
    out = bytearray()
    body_writer(spec, version)(data, out)
    return bytes(out)
