"""Kafka's replay rules per release line: where brokers of two Kafka releases build different images from one
log (docs/replay-rules.md, "Kafka releases").

A :class:`ReplayRules` is what a broker of one release line (``"3.9"`` … ``"4.4"``) does differently; every
part delta of the reference engine takes the rules of its :class:`~image.delta.MetadataDelta`. The image
follows the newest release line by default (:data:`NEWEST`); ``--kafka-version X.Y`` selects another
(:func:`rules_for`). The facts that come from Kafka's own classes of each release — the record versions it
decodes, its metadata.version levels, the config names its ``DefaultSupportedConfigChecker`` accepts — are
generated into ``metadata/log/schema/releases.json`` by ``python -m metadata.log.schema.update``
(:mod:`metadata.log.schema.releases`); the rules that are code (a changed ``replay``) are the flags below, each
naming the Kafka change that made it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache

from metadata.log.errors import BadInput
from metadata.log.schema import metadata_specs
from metadata.log.schema.releases import KafkaRelease, SupportedConfigs, kafka_releases

RELEASES: tuple[str, ...] = tuple(r.line for r in kafka_releases())
"""The Kafka release lines whose replay kraft-replay follows, oldest first (those of ``releases.json``)."""


class UnsupportedRelease(BadInput):
    """A ``--kafka-version`` that names no supported release line."""


def _line(release: str) -> tuple[int, int]:
    major, minor = release.split(".")[:2]
    return int(major), int(minor)


@dataclass(frozen=True, slots=True)
class ReplayRules:
    """How a broker of Kafka ``release`` (a line such as ``"4.3"``) replays the metadata log."""

    release: str
    kafka: str
    """The newest patch release of the line (the one the tests run as the oracle)."""
    record_versions: Mapping[str, int]
    """Record type → the highest version this release decodes; a type it does not know is absent."""
    metadata_versions: Mapping[int, str]
    """metadata.version levels this release knows, with their names (``30 → "4.3-IV0"``)."""
    supported_configs: SupportedConfigs | None
    """Kafka 4.2.1+ (``DefaultSupportedConfigChecker``, KAFKA-19851): the config names per resource type a
    ConfigRecord may set (TOPIC, GROUP, CLIENT_METRICS; every BROKER name; no other type). None: all."""
    empty_metadata_version: int | None
    """metadata.version of the empty image: 3.9 reports ``3.0-IV1`` (1); 4.0+ none (``FeaturesImage`` holds an
    ``Optional``, KAFKA-18601)."""
    minimum_metadata_version: int
    """The lowest metadata.version level the release accepts (4.0 dropped the levels below ``3.3-IV3``,
    KAFKA-18601)."""
    keeps_zk_migration_state: bool
    """3.9 validates and keeps ZkMigrationStateRecord; 4.0 made it a no-op (KAFKA-18136)."""
    ignores_kraft_version_feature: bool
    """4.0+: a FeatureLevelRecord for ``kraft.version`` is skipped (KAFKA-18979)."""
    forgets_removed_created_topics: bool
    """4.2+: RemoveTopicRecord also removes the topic's name from the delta's created topics, so a ClearElrRecord
    after a topic created and removed in one delta resolves past it (KAFKA-19497)."""

    @property
    def newest_metadata_version(self) -> int:
        return max(self.metadata_versions)

    def knows(self, record_type: str, version: int) -> bool:
        """This release decodes ``record_type`` at ``version``."""
        highest = self.record_versions.get(record_type)
        return highest is not None and version <= highest

    def introduced_by(self, record_type: str, version: int) -> str | None:
        """The oldest supported release line that decodes ``record_type`` at ``version``, if any."""
        return next((r for r in RELEASES if rules_for(r).knows(record_type, version)), None)

    def supports_config(self, resource_type: int, name: str) -> bool:
        """``SupportedConfigChecker.isSupported`` of a ConfigRecord's resource type id and name: whether it is
        replayed."""
        return self.supported_configs is None or self.supported_configs.is_supported(resource_type, name)

    def __str__(self) -> str:
        return f"Kafka {self.release}"


def rules_for(version: str | None = None) -> ReplayRules:
    """The rules of the release line ``version`` names (``"4.3"``, ``"4.3.1"``; None: the newest line).

    Raises UnsupportedRelease for a version outside the supported lines."""
    if version is None:
        version = RELEASES[-1]
    try:
        release = ".".join(str(part) for part in _line(version))
    except ValueError:
        raise UnsupportedRelease(f"not a Kafka version: {version!r} (expected X.Y, e.g. {RELEASES[-1]})") from None
    if release not in RELEASES:
        raise UnsupportedRelease(
            f"Kafka {version} is not supported: kraft-replay follows Kafka {RELEASES[0]} to {RELEASES[-1]}"
        )
    return _rules(release)


@cache
def _rules(release: str) -> ReplayRules:
    facts: KafkaRelease = next(r for r in kafka_releases() if r.line == release)
    specs = metadata_specs()
    line = _line(release)
    return ReplayRules(
        release=release,
        kafka=facts.version,
        record_versions={specs[key].type_name: v.high for key, v in facts.records.items() if key in specs},
        metadata_versions=facts.metadata_versions,
        supported_configs=facts.supported_configs,
        empty_metadata_version=min(facts.metadata_versions) if line < (4, 0) else None,
        minimum_metadata_version=min(facts.metadata_versions),
        keeps_zk_migration_state=line < (4, 0),
        ignores_kraft_version_feature=line >= (4, 0),
        forgets_removed_created_topics=line >= (4, 2),
    )


NEWEST: ReplayRules = rules_for()
"""The rules of the newest supported release line: the default everywhere."""
