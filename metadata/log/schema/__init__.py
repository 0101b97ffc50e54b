"""The one schema source: record and control-record specs loaded from ``records.json``.

Everything that knows a record's fields (codec, Spark schemas of the typed tables, the dump-log text
reader) derives it from here. ``records.json`` is generated from a Kafka release's own specs by
``python -m metadata.log.schema.update`` (docs/records.md); :mod:`metadata.log.schema.releases` loads what each
supported Kafka release line knows.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

PRIMITIVES = frozenset(
    {"bool", "int8", "int16", "uint16", "int32", "uint32", "int64", "float64", "uuid", "string", "bytes"}
)


@dataclass(frozen=True, slots=True)
class Versions:
    """A Kafka version range such as ``0+``, ``1-2`` or ``3``; ``none`` is empty."""

    low: int
    high: int  # inclusive; 32767 for open ranges

    @classmethod
    def parse(cls, text: str | None) -> "Versions":
        if text is None or text == "none":
            return cls(1, 0)
        text = str(text)
        if text.endswith("+"):
            return cls(int(text[:-1]), 32767)
        if "-" in text:
            lo, hi = text.split("-")
            return cls(int(lo), int(hi))
        return cls(int(text), int(text))

    def __contains__(self, version: int) -> bool:
        return self.low <= version <= self.high


@dataclass(frozen=True, slots=True)
class FieldSpec:
    """One field of a struct, as declared in the schema."""

    name: str  # PascalCase, as in Kafka's JSON specs
    type: str  # primitive, ``[]primitive``, ``[]Struct`` or ``Struct``
    versions: Versions
    nullable: Versions
    tagged: Versions
    tag: int | None
    default: Any
    has_default: bool
    fields: tuple["FieldSpec", ...]  # for struct types

    @property
    def json_name(self) -> str:
        """Kafka's camelCase name (``PartitionId`` → ``partitionId``)."""
        return self.name[0].lower() + self.name[1:]

    @property
    def snake_name(self) -> str:
        return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", self.name).lower()

    @property
    def is_array(self) -> bool:
        return self.type.startswith("[]")

    @property
    def element_type(self) -> str:
        return self.type[2:] if self.is_array else self.type

    @property
    def is_struct(self) -> bool:
        return self.element_type not in PRIMITIVES

    def default_value(self) -> Any:
        """The value a reader assumes when the field is absent (Kafka's ``fieldDefault``)."""
        if self.has_default:
            return self.default
        if self.is_array:
            return []
        return {"bool": False, "string": "", "bytes": "", "uuid": "AAAAAAAAAAAAAAAAAAAAAA", "float64": 0.0}.get(
            self.type, 0
        )


@dataclass(frozen=True, slots=True)
class MessageSpec:
    """A metadata record type or a control record body."""

    name: str  # e.g. PartitionChangeRecord
    type_name: str  # e.g. PARTITION_CHANGE_RECORD or LEADER_CHANGE
    key: int  # apiKey, or the control type id
    valid_versions: Versions
    fields: tuple[FieldSpec, ...]


def _field(raw: dict[str, Any]) -> FieldSpec:
    return FieldSpec(
        name=raw["name"],
        type=raw["type"],
        versions=Versions.parse(raw["versions"]),
        nullable=Versions.parse(raw.get("nullableVersions")),
        tagged=Versions.parse(raw.get("taggedVersions")),
        tag=raw.get("tag"),
        default=raw.get("default"),
        has_default="default" in raw,
        fields=tuple(_field(f) for f in raw.get("fields", [])),
    )


def record_type_name(spec_name: str) -> str:
    """Kafka's MetadataRecordType name: ``PartitionChangeRecord`` → ``PARTITION_CHANGE_RECORD``."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", spec_name).upper()


SCHEMA_FILES = resources.files("metadata.log.schema")
"""Where ``records.json`` and ``releases.json`` are (the package's data)."""


@cache
def _raw() -> dict[str, Any]:
    return json.loads(SCHEMA_FILES.joinpath("records.json").read_text())


@cache
def _load() -> tuple[dict[int, MessageSpec], dict[int, MessageSpec]]:
    raw = _raw()
    metadata = {
        m["apiKey"]: MessageSpec(
            m["name"],
            record_type_name(m["name"]),
            m["apiKey"],
            Versions.parse(m["validVersions"]),
            tuple(_field(f) for f in m["fields"]),
        )
        for m in raw["metadata"]
    }
    control = {
        c["controlType"]: MessageSpec(
            c["name"],
            c["type"],
            c["controlType"],
            Versions.parse(c["validVersions"]),
            tuple(_field(f) for f in c["fields"]),
        )
        for c in raw["control"]
    }
    return metadata, control


def schema_kafka_version() -> str:
    """The Kafka release whose specs ``records.json`` was generated from (e.g. ``4.4.0``)."""
    return _raw()["kafka"]


def metadata_specs() -> dict[int, MessageSpec]:
    """apiKey → spec of every known metadata record type."""
    return _load()[0]


def decodes(api_key: int, version: int) -> bool:
    """Whether the schema knows the metadata record type ``api_key`` at ``version``."""
    spec = metadata_specs().get(api_key)
    return spec is not None and version in spec.valid_versions


def control_specs() -> dict[int, MessageSpec]:
    """Control type id → spec of the KRaft control record bodies (types 2–6)."""
    return _load()[1]


@cache
def spec_by_type_name(type_name: str) -> MessageSpec:
    """Spec by Kafka's type name (``TOPIC_RECORD``) or control type name (``LEADER_CHANGE``)."""
    for spec in (*metadata_specs().values(), *control_specs().values()):
        if spec.type_name == type_name:
            return spec
    raise KeyError(f"unknown record type {type_name!r}")


CONTROL_TYPE_NAMES: dict[int, str] = {
    0: "ABORT",
    1: "COMMIT",
    2: "LEADER_CHANGE",
    3: "SNAPSHOT_HEADER",
    4: "SNAPSHOT_FOOTER",
    5: "KRAFT_VERSION",
    6: "KRAFT_VOTERS",
}
