"""Hypothesis strategies for record bodies, derived from the schema source."""

from __future__ import annotations

import base64

from hypothesis import strategies as st

from metadata.log.codec.primitives import uuid_to_str
from metadata.log.schema import FieldSpec, MessageSpec

_INTS = {
    "int8": (-128, 127),
    "int16": (-32768, 32767),
    "uint16": (0, 65535),
    "int32": (-(2**31), 2**31 - 1),
    "uint32": (0, 2**32 - 1),
    "int64": (-(2**63), 2**63 - 1),
}


def _primitive(type_: str) -> st.SearchStrategy:
    if type_ in _INTS:
        lo, hi = _INTS[type_]
        return st.integers(lo, hi)
    if type_ == "bool":
        return st.booleans()
    if type_ == "float64":
        return st.floats(allow_nan=False)
    if type_ == "uuid":
        return st.binary(min_size=16, max_size=16).map(uuid_to_str)
    if type_ == "string":
        return st.text(max_size=12)
    if type_ == "bytes":
        return st.binary(max_size=12).map(lambda b: base64.b64encode(b).decode())
    raise ValueError(type_)


def field_value(field: FieldSpec, version: int) -> st.SearchStrategy:
    element = struct_value(field.fields, version) if field.is_struct else _primitive(field.element_type)
    value = st.lists(element, max_size=4) if field.is_array else element
    if version in field.nullable:
        value = st.one_of(st.none(), value)
    return value


def struct_value(fields: tuple[FieldSpec, ...], version: int) -> st.SearchStrategy:
    """A dict in the JSON-converter shape: regular fields always, tagged ones only when not default."""
    present = [f for f in fields if version in f.versions]
    required = {f.json_name: field_value(f, version) for f in present if version not in f.tagged}
    optional = {
        f.json_name: field_value(f, version).filter(
            lambda v, f=f: v != f.default_value() if v is not None else f.default_value() is not None
        )
        for f in present
        if version in f.tagged
    }
    return st.fixed_dictionaries(required, optional=optional).map(
        lambda d: {f.json_name: d[f.json_name] for f in present if f.json_name in d}
    )


def body(spec: MessageSpec, version: int) -> st.SearchStrategy:
    return struct_value(spec.fields, version)
