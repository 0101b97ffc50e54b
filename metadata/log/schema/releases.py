"""What each supported Kafka release line says about its metadata log, loaded from ``releases.json``.

``releases.json`` is generated with ``records.json`` by ``python -m metadata.log.schema.update`` from the jars of
the newest patch of each release line (docs/records.md): the record versions each release's decoder knows,
its metadata.version levels and names, and the config names its ``DefaultSupportedConfigChecker`` accepts.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache

from metadata.log.errors import BadInput
from metadata.log.schema import SCHEMA_FILES, Versions, metadata_specs, schema_kafka_version


@dataclass(frozen=True, slots=True)
class SupportedConfigs:
    """The config names a release's ``DefaultSupportedConfigChecker`` accepts, by ``ConfigRecord.ResourceType``
    (2 TOPIC, 4 BROKER, 16 CLIENT_METRICS, 32 GROUP): the names, or None for any name. A resource type not
    listed accepts no name. Kafka's ``ConfigurationDelta.replay`` skips a ConfigRecord it does not accept."""

    names: Mapping[int, frozenset[str] | None]

    def is_supported(self, resource_type: int, name: str) -> bool:
        """Kafka's ``SupportedConfigChecker.isSupported`` for a ConfigRecord's resource type and name."""
        if resource_type not in self.names:
            return False
        names = self.names[resource_type]
        return names is None or name in names


@dataclass(frozen=True, slots=True)
class KafkaRelease:
    """One Kafka release line as its newest patch release's jars describe it."""

    line: str  # "4.4"
    version: str  # "4.4.0": the patch release whose jars were read
    records: Mapping[int, Versions]  # apiKey → the versions its decoder (kafka-metadata) knows
    metadata_versions: Mapping[int, str]  # metadata.version level → name, e.g. 33 → "4.4-IV2"
    latest_production: int  # the level kafka-storage format writes by default
    supported_configs: SupportedConfigs | None  # None: no checker, every ConfigRecord is replayed

    def knows(self, api_key: int, version: int) -> bool:
        """Whether this release's decoder reads the record type ``api_key`` at ``version``."""
        versions = self.records.get(api_key)
        return versions is not None and version in versions


def _release(raw: dict) -> KafkaRelease:
    configs = raw["supportedConfigs"]
    return KafkaRelease(
        line=raw["line"],
        version=raw["kafka"],
        records={r["apiKey"]: Versions.parse(r["validVersions"]) for r in raw["records"]},
        metadata_versions={v["level"]: v["name"] for v in raw["metadataVersions"]},
        latest_production=raw["latestProduction"],
        supported_configs=None
        if configs is None
        else SupportedConfigs(
            {t["id"]: None if t["names"] is None else frozenset(t["names"]) for t in configs.values()}
        ),
    )


@cache
def kafka_releases() -> tuple[KafkaRelease, ...]:
    """Every supported release line, oldest first."""
    raw = json.loads(SCHEMA_FILES.joinpath("releases.json").read_text())
    return tuple(_release(r) for r in raw["releases"])


def kafka_release(line: str) -> KafkaRelease:
    """The release line ``line`` (``"4.3"``); ValueError naming the supported lines."""
    for release in kafka_releases():
        if release.line == line:
            return release
    raise BadInput(f"Kafka {line} is not a supported release line ({', '.join(r.line for r in kafka_releases())})")


def first_release(api_key: int, version: int) -> KafkaRelease | None:
    """The oldest supported release line whose decoder reads ``api_key`` at ``version`` (None: none does)."""
    return next((r for r in kafka_releases() if r.knows(api_key, version)), None)


def record_description(api_key: int, version: int) -> str:
    """A record type and version as an operator reads it, with the Kafka release it comes from:
    ``RegisterBrokerRecord v4 (Kafka 4.3+)``, ``RegisterBrokerRecord v0 (Kafka 3.9 and older)``, or, when the
    schema does not know it, ``RegisterBrokerRecord v5 (newer than Kafka 4.4.0, which has v0-4)`` /
    ``apiKey 30 v0 (newer than Kafka 4.4.0, whose apiKeys end at 29)``."""
    spec = metadata_specs().get(api_key)
    if spec is None:
        newest = max(metadata_specs())
        return f"apiKey {api_key} v{version} (newer than Kafka {schema_kafka_version()}, whose apiKeys end at {newest})"
    first = first_release(api_key, version) if version in spec.valid_versions else None
    if first is None:
        low, high = spec.valid_versions.low, spec.valid_versions.high
        known = f"v{low}" if low == high else f"v{low}-{high}"
        return f"{spec.name} v{version} (newer than Kafka {schema_kafka_version()}, which has {known})"
    return f"{spec.name} v{version} (Kafka {first.line}{' and older' if first is kafka_releases()[0] else '+'})"
