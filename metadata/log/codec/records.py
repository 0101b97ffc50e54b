"""Record values: the metadata value frame (frameVersion, apiKey, version) and control records."""

from __future__ import annotations

import struct
from typing import Any

from metadata.log.codec.message import Reader, body_reader, check_body_end, decode_body, encode_body, json_text
from metadata.log.codec.primitives import read_uvarint, uvarint
from metadata.log.errors import DecodeError, UnknownRecordError
from metadata.log.schema import CONTROL_TYPE_NAMES, MessageSpec, control_specs, metadata_specs, spec_by_type_name
from metadata.log.schema.releases import record_description

_CONTROL_KEY = struct.Struct(">hh")
_SPECS = metadata_specs()


def read_frame(value: bytes) -> tuple[int, int, int]:
    """(apiKey, version, body start) of a metadata record value."""
    try:
        frame, pos = read_uvarint(value, 0)
        if frame != 1:
            if frame == 0:
                raise DecodeError("Could not deserialize metadata record with frame version 0")
            raise DecodeError(f"unknown frame version {frame}")
        api_key, pos = read_uvarint(value, pos)
        version, pos = read_uvarint(value, pos)
    except IndexError:
        raise DecodeError("Error while reading the metadata record frame") from None
    if not 0 <= api_key <= 32767:
        raise DecodeError(f"Value for type was too large: {api_key}")
    if not 0 <= version <= 32767:
        raise DecodeError(f"Value for version was too large: {version}")
    return api_key, version, pos


SKIP_UNKNOWN = "upgrade kraft-replay, or use --skip-unknown to keep such records raw"
"""What to do about a record the schema does not know."""


def unknown_record(api_key: int, version: int, advice: str = SKIP_UNKNOWN) -> UnknownRecordError:
    """The error of a record type or version the schema does not know, e.g. ``RegisterBrokerRecord v5 (newer than
    Kafka 4.4.0, which has v0-4) is not known to this kraft-replay: upgrade kraft-replay, or ...``."""
    return UnknownRecordError(f"{record_description(api_key, version)} is not known to this kraft-replay: {advice}")


def metadata_spec(api_key: int, version: int) -> MessageSpec:
    """The spec for a frame, or :func:`unknown_record` (an unknown apiKey, or a version above the schema)."""
    spec = _SPECS.get(api_key)
    if spec is None or version not in spec.valid_versions:
        raise unknown_record(api_key, version)
    return spec


_READERS: dict[tuple[int, int, bool], tuple[MessageSpec, Reader]] = {}  # (apiKey, version, JSON?) -> body reader


def decode_metadata_value(value: bytes, json_payload: bool = False) -> tuple[MessageSpec, int, Any]:
    """Decode a data record's value → (spec, version, JSON-converter dict, or its compact JSON text)."""
    if len(value) >= 3 and value[0] == 1 and value[1] < 0x80 and value[2] < 0x80:  # the usual 3-byte frame
        api_key, version, pos = value[1], value[2], 3
    else:
        api_key, version, pos = read_frame(value)
    found = _READERS.get((api_key, version, json_payload))
    if found is None:
        spec = metadata_spec(api_key, version)
        found = _READERS[(api_key, version, json_payload)] = spec, body_reader(spec, version, json_payload)
    spec, reader = found
    end = len(value)
    try:
        data, stop = reader(value, pos, end)
    except IndexError:
        raise DecodeError(f"{spec.name} v{version}: body ends early") from None
    check_body_end(spec, stop, end)
    return spec, version, data


def encode_metadata_value(type_name: str, version: int, data: dict[str, Any]) -> bytes:
    """Frame + body of a metadata record given Kafka's type name (``TOPIC_RECORD``)."""
    spec = spec_by_type_name(type_name)
    return uvarint(1) + uvarint(spec.key) + uvarint(version) + encode_body(spec, version, data)


def decode_control_key(key: bytes | None) -> int:
    """Control type id from a control record key (version int16, type int16)."""
    if key is None or len(key) < 4:
        raise DecodeError("control record key must hold at least 4 bytes")
    key_version, control_type = _CONTROL_KEY.unpack_from(key, 0)
    if key_version < 0:
        raise DecodeError(f"invalid negative control record key version {key_version}")
    return control_type


def decode_control_record(key: bytes | None, value: bytes | None, json_payload: bool = False) -> tuple[str, Any]:
    """(control type name, body dict or its compact JSON text) of a control record. ABORT/COMMIT carry
    the legacy 6-byte body."""
    control_type = decode_control_key(key)
    name = CONTROL_TYPE_NAMES.get(control_type)
    if name is None:
        raise DecodeError(f"Unknown control record type {control_type}")
    if not value:
        raise DecodeError(f"control record {name} has no value")
    if control_type in (0, 1):
        if len(value) != 6:
            raise DecodeError(f"{name} marker must have 6 bytes, has {len(value)}")
        version, coordinator_epoch = struct.unpack(">hi", value)
        data = {"version": version, "coordinatorEpoch": coordinator_epoch}
        return name, json_text(data) if json_payload else data
    try:
        return name, decode_body(control_specs()[control_type], 0, value, json_payload=json_payload)
    except IndexError:
        raise DecodeError(f"{name}: body ends early") from None


def encode_control_record(control_type: str, data: dict[str, Any]) -> tuple[bytes, bytes]:
    """(key, value) of a control record given its type name (``LEADER_CHANGE``, ...)."""
    if control_type in ("ABORT", "COMMIT"):
        type_id = 0 if control_type == "ABORT" else 1
        return _CONTROL_KEY.pack(0, type_id), struct.pack(">hi", data.get("version", 0), data["coordinatorEpoch"])
    spec = spec_by_type_name(control_type)
    return _CONTROL_KEY.pack(0, spec.key), encode_body(spec, 0, data)
