"""Client quotas part of the image (docs/replay-rules.md, "Client quotas")."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from image.cow import EMPTY_MAP, CowMap, empty_map, read_only, writable

ClientQuotaEntity = tuple[tuple[str, str | None], ...]
"""(entityType, entityName) pairs sorted by type; a None name is the type's default entity."""


def quota_entity(entity_data: Iterable[Mapping[str, Any]]) -> ClientQuotaEntity:
    """Entity of a ClientQuotaRecord (map semantics: order irrelevant, duplicate types last wins)."""
    entries = {e["entityType"]: e["entityName"] for e in entity_data}
    return tuple(sorted(entries.items(), key=lambda item: item[0]))


@dataclass(frozen=True, slots=True)
class ClientQuotasImage:
    """Entity → (quota key → value); entities without quotas are absent."""

    entities: Mapping[ClientQuotaEntity, Mapping[str, float]] = field(default_factory=empty_map)

    EMPTY: ClassVar[ClientQuotasImage]

    def frozen(self) -> ClientQuotasImage:
        if isinstance(self.entities, CowMap):
            return ClientQuotasImage(self.entities.snapshot())
        return self


ClientQuotasImage.EMPTY = ClientQuotasImage()


class ClientQuotasDelta:
    """Per entity: key → new value, or None for a removed key."""

    def __init__(self, image: ClientQuotasImage) -> None:
        self.image = image
        self.changes: dict[ClientQuotaEntity, dict[str, float | None]] = {}

    def replay_client_quota(self, data: Mapping[str, Any]) -> None:
        """ClientQuotaRecord: Remove deletes the key, else sets it to Value."""
        changes = self.changes.setdefault(quota_entity(data["entity"]), {})
        changes[data["key"]] = None if data["remove"] else float(data["value"])

    def finish_snapshot(self) -> None:
        """Remove every base quota the snapshot did not set."""
        for entity, quotas in self.image.entities.items():
            changes = self.changes.setdefault(entity, {})
            for key in quotas:
                changes.setdefault(key, None)

    def build(self, in_place: bool) -> ClientQuotasImage:
        entities = writable(self.image.entities, in_place)
        for entity, changes in self.changes.items():
            quotas = dict(entities.get(entity, EMPTY_MAP))
            for key, value in changes.items():
                if value is None:
                    quotas.pop(key, None)
                else:
                    quotas[key] = value
            if quotas:
                entities.set(entity, read_only(quotas))
            else:
                entities.discard(entity)
        return ClientQuotasImage(entities)

    def apply(self) -> ClientQuotasImage:
        return self.build(in_place=False).frozen()
