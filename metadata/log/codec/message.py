"""Schema-driven codec of message bodies (flexible versions, tagged fields).

A body decodes to the dict Kafka's generated JSON converters print: camelCase names, every
regular field of the version, tagged fields only when they differ from their default, Uuids in
Kafka's base64 form, ``bytes`` as standard base64. Unknown tagged fields are kept under
``_unknownTaggedFields`` ([{"tag", "data"}], data in base64) so that nothing is lost and the body
re-encodes byte for byte.

Readers are generated as Python source once per (message, version) from the schema, in two modes of
the same generator: → the dict, and → that dict's compact JSON text (the ``payload`` column) written
directly. Writers are composed closures.
"""

from __future__ import annotations

import base64
import binascii
import json
import struct
from collections.abc import Callable
from functools import cache
from typing import Any

from metadata.log.cache import compiled
from metadata.log.codec.primitives import URLSAFE, read_uvarint, uuid_from_str, uvarint
from metadata.log.errors import DecodeError
from metadata.log.schema import FieldSpec, MessageSpec, Versions

UNKNOWN_TAGS = "_unknownTaggedFields"

Reader = Callable[[bytes, int, int], tuple[Any, int]]  # (buf, pos, end) -> (value, next pos)
Writer = Callable[[Any, bytearray], None]

_FIXED: dict[str, struct.Struct] = {
    "int8": struct.Struct(">b"),
    "int16": struct.Struct(">h"),
    "uint16": struct.Struct(">H"),
    "int32": struct.Struct(">i"),
    "uint32": struct.Struct(">I"),
    "int64": struct.Struct(">q"),
    "float64": struct.Struct(">d"),
}


json_text: Callable[[Any], str] = json.JSONEncoder(separators=(",", ":")).encode
"""Compact JSON text of a decoded body (the ``payload`` column)."""


def _need(pos: int, n: int, end: int, what: str) -> None:
    if pos + n > end:
        raise DecodeError(f"{what}: needs {n} byte(s) at body position {pos}, only {end - pos} left")


def _need_each(pos: int, end: int, sizes: tuple[tuple[int, str], ...]) -> None:
    """The error of the first of consecutive fixed-size fields that does not fit."""
    for size, name in sizes:
        _need(pos, size, end, name)
        pos += size


def _array_length(buf: bytes, pos: int, end: int, name: str, nullable: bool) -> tuple[int, int]:
    """A compact array's element count (-1 = null), checked as Kafka's generated readers do."""
    n, pos = read_uvarint(buf, pos)
    n -= 1
    if n < 0:
        if not nullable:
            raise DecodeError(f"non-nullable field {name} was serialized as null")
        return -1, pos
    if n > end - pos:
        raise DecodeError(
            f"Tried to allocate a collection of size {n} for field {name}, "
            f"but there are only {end - pos} bytes remaining"
        )
    return n, pos


@cache
def _unpack_array(code: str, n: int) -> Callable[[bytes, int], tuple]:
    return struct.Struct(f">{n}{code}").unpack_from


def _is_default(field: FieldSpec, value: Any) -> bool:
    return value == field.default_value() if value is not None else field.default_value() is None


_STRUCT_CODES = {
    "int8": "b",
    "int16": "h",
    "uint16": "H",
    "int32": "i",
    "uint32": "I",
    "int64": "q",
    "float64": "d",
    "bool": "?",
    "uuid": "16s",
}  # fixed-size fields, read in groups by one unpack
_UUID = "_b2a({}, newline=False)[:22].translate(_URLSAFE).decode('ascii')"  # primitives.uuid_to_str, inlined
_HELPERS: dict[str, Any] = {
    "DecodeError": DecodeError,
    "_need": _need,
    "_need_each": _need_each,
    "_array_length": _array_length,
    "_read_uvarint": read_uvarint,
    "_b2a": binascii.b2a_base64,
    "_URLSAFE": URLSAFE,
    "_b64": base64.b64encode,
    "_unpack_array": _unpack_array,
    "_jstr": json.encoder.encode_basestring_ascii,
    "_jfloat": json_text,
    "_jbool": {True: "true", False: "false"},
    "_json_text": json_text,
    "_ABSENT": object(),
}


class _ReaderSource:
    """The readers of one message version, generated as Python source: per struct ``_d<i>`` (→ dict)
    and ``_j<i>`` (→ that dict's :func:`json_text`, written directly), both from the same field code.
    Every reader is ``(buf, pos, end) -> (value, next pos)`` and raises what Kafka's readers would."""

    def __init__(self, version: int) -> None:
        self.version = version
        self.lines: list[str] = []
        self.namespace: dict[str, Any] = dict(_HELPERS)
        self.structs = 0
        self.names = 0

    def name(self, prefix: str) -> str:
        self.names += 1
        return f"{prefix}{self.names}"

    def const(self, value: Any) -> str:
        name = self.name("_k")
        self.namespace[name] = value
        return name

    def compile(self) -> dict[str, Any]:
        """Execute the source (its code compiled once for every process: :func:`~metadata.log.cache.compiled`);
        the readers are in the returned namespace."""
        exec(compiled("\n".join(self.lines), "<kraft-replay body readers>"), self.namespace)  # noqa: S102
        return self.namespace

    def function(self, name: str, body: list[str], value: str) -> None:
        self.lines += [f"def {name}(buf, pos, end):", *body, f"    return {value}, pos", ""]

    # -- fields

    def fixed_group(self, fields: list[FieldSpec], out: list[str], json_mode: bool) -> list[str]:
        """Consecutive fixed-size fields read by one unpack; returns their values (dict mode) or
        f-string pieces of their JSON (JSON mode)."""
        codes = [_STRUCT_CODES[f.type] for f in fields]
        fmt = struct.Struct(">" + "".join(codes))
        sizes = tuple((struct.calcsize(">" + c), f.name) for c, f in zip(codes, fields))
        names = [self.name("v") for _ in fields]
        out += [
            f"    if pos + {fmt.size} > end:",
            f"        _need_each(pos, end, {self.const(sizes)})",
            f"    {', '.join(names)}, = {self.const(fmt.unpack_from)}(buf, pos)",
            f"    pos += {fmt.size}",
        ]
        pieces = []
        for f, v in zip(fields, names):
            if f.type == "uuid":
                out.append(f"    {v} = {_UUID.format(v)}")
            if not json_mode:
                pieces.append(v)
            else:
                pieces.append(
                    {"uuid": f'"{{{v}}}"', "bool": f"{{_jbool[{v}]}}", "float64": f"{{_jfloat({v})}}"}.get(
                        f.type, f"{{{v}}}"
                    )
                )
        return pieces

    def read_field(self, field: FieldSpec, out: list[str], json_mode: bool, nullable: bool) -> str:
        """Append code reading a variable-size ``field`` at ``pos`` into a new variable; returns its name
        (in JSON mode the variable holds the field's JSON text)."""
        v = self.name("v")
        null = "'null'" if json_mode else "None"
        name = field.name
        not_null = f"non-nullable field {name} was serialized as null"
        if field.is_array:
            out += [
                "    n = buf[pos]",
                "    if 0 < n < 0x80 and n <= end - pos:  # one-byte length, not null, fits",
                "        n -= 1",
                "        pos += 1",
                "    else:",
                f"        n, pos = _array_length(buf, pos, end, {name!r}, {nullable})",
                "    if n < 0:",
                f"        {v} = {null}",
                "    else:",
            ]
            element_type = field.element_type
            if element_type == "uuid":
                items = f"[{_UUID.format('buf[p:p + 16]')} for p in range(pos, pos + 16 * n, 16)]"
                out += [
                    "        if pos + 16 * n > end:",
                    f"            _need(pos, 16 * n, end, {name!r})",
                    f"        {v} = {items}",
                    "        pos += 16 * n",
                ]
                if json_mode:
                    out.append(f"""        {v} = '["' + '","'.join({v}) + '"]' if n else '[]'""")
            elif element_type in _FIXED:
                size, code = _FIXED[element_type].size, _FIXED[element_type].format[-1]
                items = f"_unpack_array({code!r}, n)(buf, pos)"
                out += [
                    f"        if pos + {size} * n > end:",
                    f"            _need(pos, {size} * n, end, {name!r})",
                    (
                        f"        {v} = '[' + ','.join(map(_jfloat, {items})) + ']'"
                        if code == "d"
                        else f"        {v} = str(list({items})).replace(' ', '') if n else '[]'"
                    )
                    if json_mode
                    else f"        {v} = list({items})",
                    f"        pos += {size} * n",
                ]
            else:
                element = self.element_reader(field, json_mode)
                out += [
                    f"        {v} = []",
                    "        for _ in range(n):",
                    f"            e, pos = {element}(buf, pos, end)",
                    f"            {v}.append(e)",
                ]
                if json_mode:
                    out.append(f"        {v} = '[' + ','.join({v}) + ']'")
            return v
        if field.is_struct:
            out.append(f"    {v}, pos = {'_j' if json_mode else '_d'}{self.struct(field.fields, name)}(buf, pos, end)")
            return v
        if field.type not in ("string", "bytes"):
            raise ValueError(f"unknown primitive type {field.type}")
        out += [
            "    n = buf[pos]",
            "    if n < 0x80:",
            "        pos += 1",
            "    else:",
            "        n, pos = _read_uvarint(buf, pos)",
            "    if n <= 0:",
            f"        {v} = {null}" if nullable else f"        raise DecodeError({not_null!r})",
            "    else:",
            "        n -= 1",
        ]
        if field.type == "string":
            text = "str(buf[pos:pos + n], 'utf-8', 'replace')"
            out += [
                "        if n > 32767:",
                f"            raise DecodeError({f'string field {name} had invalid length '!r} + str(n))",
            ]
        else:
            text = "_b64(buf[pos:pos + n]).decode('ascii')"
        out += [
            "        if pos + n > end:",
            f"            _need(pos, n, end, {name!r})",
            f"        {v} = "
            + (text if not json_mode else f"_jstr({text})" if field.type == "string" else f"""'"' + {text} + '"'"""),
            "        pos += n",
        ]
        return v

    def element_reader(self, field: FieldSpec, json_mode: bool) -> str:
        """The reader of one element of a (not packed) array field."""
        if field.is_struct:
            return f"{'_j' if json_mode else '_d'}{self.struct(field.fields, field.name)}"
        element = FieldSpec(
            field.name, field.element_type, field.versions, Versions(1, 0), Versions(1, 0), None, None, False, ()
        )
        body: list[str] = []
        if element.type in _STRUCT_CODES:
            piece = self.fixed_group([element], body, json_mode)[0]
            value = f"f{piece!r}" if json_mode else piece
        else:
            value = self.read_field(element, body, json_mode, nullable=False)
        name = self.name("_e")
        self.function(name, body, value)
        return name

    def tagged_value(self, field: FieldSpec) -> tuple[list[str], str]:
        """Dict-mode code reading a tagged field's value (indented for the tagged-fields loop) and its variable."""
        body: list[str] = []
        if field.type in _STRUCT_CODES:
            value = self.fixed_group([field], body, json_mode=False)[0]
        else:
            value = self.read_field(field, body, json_mode=False, nullable=self.version in field.nullable)
        return ["        " + line for line in body], value

    # -- structs

    def struct(self, fields: tuple[FieldSpec, ...], what: str) -> int:
        """Generate ``_d<i>`` and ``_j<i>`` of a struct; returns ``i``."""
        index = self.structs
        self.structs += 1
        version = self.version
        present = [f for f in fields if version in f.versions]
        regular = [f for f in present if version not in f.tagged]
        tagged = {f.tag: (f, *self.tagged_value(f), self.name("t")) for f in present if version in f.tagged}
        all_tags = self.const(frozenset(f.tag for f in fields if f.tag is not None))
        for json_mode in (False, True):
            body: list[str] = []
            values: dict[str, str] = {}  # json name -> variable (dict mode) or f-string piece (JSON mode)
            group: list[FieldSpec] = []
            for f in [*regular, None]:
                if f is not None and f.type in _STRUCT_CODES:
                    group.append(f)
                    continue
                if group:
                    values.update(zip((g.json_name for g in group), self.fixed_group(group, body, json_mode)))
                    group = []
                if f is not None:
                    v = self.read_field(f, body, json_mode, nullable=version in f.nullable)
                    values[f.json_name] = f"{{{v}}}" if json_mode else v
            if json_mode:
                pieces = [f'"{k}":{p}' for k, p in values.items()]
                fast = "f" + repr("{{" + ",".join(pieces) + "}}")
            else:
                fast = "{" + ", ".join(f"{k!r}: {v}" for k, v in values.items()) + "}"
            self.lines += [
                f"def {'_j' if json_mode else '_d'}{index}(buf, pos, end):",
                *body,
                "    if pos >= end:",
                f"        _need(pos, 1, end, {what + ' tagged fields'!r})",
                "    count = buf[pos]",
                "    if count == 0:",
                f"        return {fast}, pos + 1",
                *self.tagged_fields(what, tagged, all_tags),
            ]
            self.lines += self.tagged_output(present, values, {tag: t for tag, (*_, t) in tagged.items()}, json_mode)
        return index

    def tagged_output(
        self, present: list[FieldSpec], values: dict[str, str], variables: dict[int, str], json_mode: bool
    ) -> list[str]:
        """Code returning a struct read with tagged fields: every present field in declaration order,
        then the unknown tagged fields."""
        version = self.version
        lead = 0  # the regular fields before the first tagged one go in one piece
        while lead < len(present) and version not in present[lead].tagged:
            lead += 1
        if json_mode:
            first = ",".join(f'"{f.json_name}":{values[f.json_name]}' for f in present[:lead])
            lines = [f"    parts = [f{first!r}]" if lead else "    parts = []"]
        else:
            lines = ["    out = {" + ", ".join(f"{f.json_name!r}: {values[f.json_name]}" for f in present[:lead]) + "}"]
        for f in present[lead:]:
            key = f.json_name
            if version in f.tagged:
                t = variables[f.tag]
                text = f'"{key}":'
                lines += [
                    f"    if {t} is not _ABSENT:",
                    f"        parts.append({text!r} + {self.json_of(f, t)})"
                    if json_mode
                    else f"        out[{key!r}] = {t}",
                ]
            elif json_mode:
                text = f'"{key}":{values[key]}'
                lines.append(f"    parts.append(f{text!r})")
            else:
                lines.append(f"    out[{key!r}] = {values[key]}")
        text = f'"{UNKNOWN_TAGS}":'
        lines += [
            "    if unknown is not None:",
            f"        parts.append({text!r} + _json_text(unknown))"
            if json_mode
            else f"        out[{UNKNOWN_TAGS!r}] = unknown",
            "    return '{' + ','.join(parts) + '}', pos" if json_mode else "    return out, pos",
            "",
        ]
        return lines

    def tagged_fields(
        self, what: str, tagged: dict[int, tuple[FieldSpec, list[str], str, str]], all_tags: str
    ) -> list[str]:
        """Code reading the tagged fields (``count`` read, ``pos`` at it) into ``t<n>`` variables (left
        ``_ABSENT`` when missing or default) and ``unknown``, as Kafka's generated readers do."""
        lines = [
            "    if count < 0x80:",
            "        pos += 1",
            "    else:",
            "        count, pos = _read_uvarint(buf, pos)",
            *(f"    {t} = _ABSENT" for *_, t in tagged.values()),
            "    unknown = None",
            "    for _ in range(count):",
            "        tag = buf[pos]",
            "        if tag < 0x80:",
            "            pos += 1",
            "        else:",
            "            tag, pos = _read_uvarint(buf, pos)",
            "        size = buf[pos]",
            "        if size < 0x80:",
            "            pos += 1",
            "        else:",
            "            size, pos = _read_uvarint(buf, pos)",
            "        if size < 0 or pos + size > end:",
            f"            raise DecodeError(f'{what}: tagged field {{tag}} of size {{size}} overruns the body')",
            "        stop = pos + size",
        ]
        branches = []
        for tag, (field, code, value, t) in tagged.items():
            default = field.default_value()
            check = (
                f"{value} is not None"
                if default is None
                else f"{value} is None or not {value} == {self.const(default)}"
            )
            branches.append(
                (
                    f"tag == {tag}",
                    [
                        "            start, limit, end = pos, end, stop  # the value must fill its declared size",
                        *code,
                        "            end = limit",
                        "            if pos != stop:",
                        (
                            f"                raise DecodeError(f'{what}: tagged field {field.name} "
                            "declared {size} byte(s), its value used {pos - start}')"
                        ),
                        f"            if {check}:",
                        f"                {t} = {value}",
                    ],
                )
            )
        branches.append(
            (
                f"tag in {all_tags}",
                [f"            raise DecodeError(f'{what}: Tag {{tag}} is not valid for version {self.version}')"],
            )
        )
        for i, (condition, code) in enumerate(branches):
            lines += [f"        {'elif' if i else 'if'} {condition}:", *code]
        return lines + [
            "        else:",
            "            if unknown is None:",
            "                unknown = []",
            "            unknown.append({'tag': tag, 'data': _b64(buf[pos:stop]).decode()})",
            "        pos = stop",
        ]

    @staticmethod
    def json_of(field: FieldSpec, v: str) -> str:
        """An expression giving the JSON text of the decoded value ``v`` of a (tagged) field."""
        type_ = field.type
        if type_ in _FIXED and type_ != "float64":
            return f"str({v})"
        if type_ == "bool":
            return f"_jbool[{v}]"
        if type_ == "uuid":
            return f"""'"' + {v} + '"'"""
        if type_ == "string":
            return f"('null' if {v} is None else _jstr({v}))"
        if field.is_array and field.element_type in _FIXED and field.element_type != "float64":
            return f"('null' if {v} is None else str({v}).replace(' ', ''))"
        if field.is_array and field.element_type == "uuid":
            return f"""('null' if {v} is None else '["' + '","'.join({v}) + '"]' if {v} else '[]')"""
        if field.is_array and field.element_type == "string":
            return f"('null' if {v} is None else '[' + ','.join(map(_jstr, {v})) + ']')"
        return f"_json_text({v})"


_READERS: dict[tuple[str, int, bool], Reader] = {}
_WRITERS: dict[tuple[str, int], Writer] = {}


def body_reader(spec: MessageSpec, version: int, json_payload: bool = False) -> Reader:
    """The generated reader of ``spec`` at ``version``: → dict, or → its :func:`json_text`."""
    reader = _READERS.get((spec.name, version, json_payload))
    if reader is None:
        source = _ReaderSource(version)
        index = source.struct(spec.fields, spec.name)
        namespace = source.compile()
        _READERS[(spec.name, version, False)] = namespace[f"_d{index}"]
        _READERS[(spec.name, version, True)] = namespace[f"_j{index}"]
        reader = _READERS[(spec.name, version, json_payload)]
    return reader


def decode_body(
    spec: MessageSpec, version: int, buf: bytes, pos: int = 0, end: int | None = None, json_payload: bool = False
) -> Any:
    """Decode a whole body (dict, or its :func:`json_text` with ``json_payload``); trailing bytes are an
    error as in Kafka's serde."""
    end = len(buf) if end is None else end
    value, stop = body_reader(spec, version, json_payload)(buf, pos, end)
    check_body_end(spec, stop, end)
    return value


def check_body_end(spec: MessageSpec, stop: int, end: int) -> None:
    """Trailing bytes after a body are an error, as in Kafka's serde."""
    if stop != end:
        raise DecodeError(f"Found {end - stop} byte(s) of garbage after {spec.name}")


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
        element = (
            _struct_writer(field.fields, version)
            if field.is_struct
            else _primitive_writer(field.element_type, field.name)
        )

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
    tagged = sorted(((f.tag, f, _field_writer(f, version)) for f in present if version in f.tagged), key=lambda t: t[0])

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
