"""Features part of the image: finalized features, metadata.version, ZK migration state
(docs/replay-rules.md, "Features and metadata.version")."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from image.cow import CowMap, empty_map, writable
from image.errors import ReplayError

METADATA_VERSION = "metadata.version"

METADATA_VERSIONS: Mapping[int, str] = {
    1: "3.0-IV1",
    2: "3.1-IV0",
    3: "3.2-IV0",
    4: "3.3-IV0",
    5: "3.3-IV1",
    6: "3.3-IV2",
    7: "3.3-IV3",
    8: "3.4-IV0",
    9: "3.5-IV0",
    10: "3.5-IV1",
    11: "3.5-IV2",
    12: "3.6-IV0",
    13: "3.6-IV1",
    14: "3.6-IV2",
    15: "3.7-IV0",
    16: "3.7-IV1",
    17: "3.7-IV2",
    18: "3.7-IV3",
    19: "3.7-IV4",
    20: "3.8-IV0",
    21: "3.9-IV0",
    22: "4.0-IV0",
    23: "4.0-IV1",
    24: "4.0-IV2",
    25: "4.0-IV3",
}
"""metadata.version feature levels at the reference commit (levels ≥ 23 were unstable there)."""

MINIMUM_KRAFT_VERSION = 1

ZK_MIGRATION_STATES: Mapping[int, str] = {
    0: "NONE",
    1: "MIGRATION",
    2: "PRE_MIGRATION",
    3: "POST_MIGRATION",
    4: "ZK",
}


@dataclass(frozen=True, slots=True)
class FeaturesImage:
    """Finalized feature levels (without metadata.version), the metadata.version level and the
    ZK migration state."""

    finalized_versions: Mapping[str, int] = field(default_factory=empty_map)
    metadata_version_level: int = MINIMUM_KRAFT_VERSION
    zk_migration_state: int = 0

    EMPTY: ClassVar[FeaturesImage]

    @property
    def metadata_version_name(self) -> str | None:
        """Name of the metadata.version level, None for levels unknown at the reference commit."""
        return METADATA_VERSIONS.get(self.metadata_version_level)

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

    def __init__(self, image: FeaturesImage) -> None:
        self.image = image
        self.changes: dict[str, int | None] = {}
        self.metadata_version_change: int | None = None
        self.zk_migration_state_change: int | None = None

    def replay_feature_level(self, data: Mapping[str, Any]) -> None:
        """FeatureLevelRecord: metadata.version is kept apart; level 0 removes other features.

        Deviation: Kafka rejects metadata.version levels it does not know; levels above the
        reference table are accepted and kept raw (logs of newer Kafka), levels < 1 are errors.
        """
        name, level = data["name"], data["featureLevel"]
        if name == METADATA_VERSION:
            if level < MINIMUM_KRAFT_VERSION:
                raise ReplayError(f"No MetadataVersion with feature level {level}")
            self.metadata_version_change = level
        else:
            self.changes[name] = None if level == 0 else level

    def replay_zk_migration_state(self, data: Mapping[str, Any]) -> None:
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
