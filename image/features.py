"""Features part of the image: finalized features, metadata.version, ZK migration state
(docs/replay-rules.md, "Features and metadata.version")."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from image.cow import CowMap, empty_map, writable
from image.errors import ReplayError
from image.release import RELEASES, ReplayRules, rules_for

METADATA_VERSION = "metadata.version"
KRAFT_VERSION = "kraft.version"

METADATA_VERSIONS: Mapping[int, str] = {
    level: name for rules in map(rules_for, RELEASES) for level, name in rules.metadata_versions.items()
}
"""Every metadata.version level a supported Kafka release knows, with its name (a level's name never changes)."""

ZK_MIGRATION_STATES: Mapping[int, str] = {
    0: "NONE",
    1: "MIGRATION",
    2: "PRE_MIGRATION",
    3: "POST_MIGRATION",
    4: "ZK",
}


@dataclass(frozen=True, slots=True)
class FeaturesImage:
    """Finalized feature levels (without metadata.version), the metadata.version level (None: none yet, Kafka
    4.0+'s empty image) and the ZK migration state (Kafka 3.9)."""

    finalized_versions: Mapping[str, int] = field(default_factory=empty_map)
    metadata_version_level: int | None = None
    zk_migration_state: int = 0

    EMPTY: ClassVar[FeaturesImage]

    @property
    def metadata_version_name(self) -> str | None:
        """Name of the metadata.version level, None for none or a level no supported Kafka release knows."""
        return None if self.metadata_version_level is None else METADATA_VERSIONS.get(self.metadata_version_level)

    @property
    def zk_migration_state_name(self) -> str:
        return ZK_MIGRATION_STATES[self.zk_migration_state]

    def frozen(self) -> FeaturesImage:
        if isinstance(self.finalized_versions, CowMap):
            return FeaturesImage(
                self.finalized_versions.snapshot(), self.metadata_version_level, self.zk_migration_state
            )
        return self


FeaturesImage.EMPTY = FeaturesImage()


class FeaturesDelta:
    """Feature changes (None = removed), metadata.version and ZK migration state changes."""

    def __init__(self, image: FeaturesImage, rules: ReplayRules) -> None:
        self.image = image
        self.rules = rules
        self.changes: dict[str, int | None] = {}
        self.metadata_version_change: int | None = None
        self.zk_migration_state_change: int | None = None

    def replay_feature_level(self, data: Mapping[str, Any]) -> None:
        """FeatureLevelRecord: metadata.version is kept apart; level 0 removes other features; Kafka 4.0+
        skips ``kraft.version`` (KAFKA-18979).

        Deviation: Kafka rejects metadata.version levels it does not know; levels above the release's
        newest are accepted and kept raw (logs of a newer Kafka), levels below its oldest are errors.
        """
        name, level = data["name"], data["featureLevel"]
        if name == METADATA_VERSION:
            if level < self.rules.minimum_metadata_version:
                raise ReplayError(_unsupported_metadata_version(self.rules, level))
            self.metadata_version_change = level
        elif name == KRAFT_VERSION and self.rules.ignores_kraft_version_feature:
            return
        else:
            self.changes[name] = None if level == 0 else level

    def replay_zk_migration_state(self, data: Mapping[str, Any]) -> None:
        """ZkMigrationStateRecord (Kafka 3.9; a no-op from 4.0, :class:`~image.delta.MetadataDelta`)."""
        state = data["zkMigrationState"]
        if state not in ZK_MIGRATION_STATES:
            raise ReplayError(f"Value {state} is not a valid Zk migration state")
        self.zk_migration_state_change = state

    def finish_snapshot(self) -> None:
        """Remove base features the snapshot did not set (metadata.version and the ZK migration
        state are not reset)."""
        for name in self.image.finalized_versions:
            self.changes.setdefault(name, None)

    def build(self, in_place: bool) -> FeaturesImage:
        versions = writable(self.image.finalized_versions, in_place)
        for name, level in self.changes.items():
            if level is None:
                versions.discard(name)
            else:
                versions.set(name, level)
        return FeaturesImage(
            versions,
            self.image.metadata_version_level if self.metadata_version_change is None else self.metadata_version_change,
            self.image.zk_migration_state if self.zk_migration_state_change is None else self.zk_migration_state_change,
        )

    def apply(self) -> FeaturesImage:
        return self.build(in_place=False).frozen()


def _unsupported_metadata_version(rules: ReplayRules, level: int) -> str:
    """Kafka's message for a metadata.version level below the release's oldest."""
    if rules.empty_metadata_version is not None:  # Kafka 3.x: MetadataVersion.fromFeatureLevel
        return f"No MetadataVersion with feature level {level}"
    oldest = rules.metadata_versions[rules.minimum_metadata_version]
    return (
        "Unsupported metadata version - if you are currently upgrading your cluster, please ensure the metadata "
        f"version is set to {oldest} (or higher) before updating the software version. The metadata version can be "
        f"updated via the `kafka-features` command-line tool. (No MetadataVersion with feature level {level}. "
        f"Valid feature levels are from {rules.minimum_metadata_version} to {rules.newest_metadata_version}.)"
    )
