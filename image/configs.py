"""Configurations part of the image (docs/replay-rules.md, "Configurations")."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, NamedTuple

from image.cow import EMPTY_MAP, CowMap, empty_map, read_only, writable

RESOURCE_TYPES: Mapping[int, str] = {
    0: "UNKNOWN",
    2: "TOPIC",
    4: "BROKER",
    8: "BROKER_LOGGER",
    16: "CLIENT_METRICS",
    32: "GROUP",
}
"""ConfigResource.Type ids; any other id is UNKNOWN."""


class ConfigResource(NamedTuple):
    """(type name, resource name); name ``""`` is the default resource of the type."""

    type: str
    name: str


@dataclass(frozen=True, slots=True)
class ConfigurationsImage:
    """Config resource → (key → value); resources with no keys are absent."""

    resource_data: Mapping[ConfigResource, Mapping[str, str]] = field(default_factory=empty_map)

    EMPTY: ClassVar[ConfigurationsImage]

    def frozen(self) -> ConfigurationsImage:
        if isinstance(self.resource_data, CowMap):
            return ConfigurationsImage(self.resource_data.snapshot())
        return self


ConfigurationsImage.EMPTY = ConfigurationsImage()


class ConfigurationsDelta:
    """Per resource: key → new value, or None for a deleted key. ``supported(type, name)`` is the release's
    ``SupportedConfigChecker`` of a resource type id and name (:meth:`image.release.ReplayRules.supports_config`)."""

    def __init__(self, image: ConfigurationsImage, supported: Callable[[int, str], bool]) -> None:
        self.image = image
        self.supported = supported
        self.changes: dict[ConfigResource, dict[str, str | None]] = {}

    def replay_config(self, data: Mapping[str, Any]) -> None:
        """ConfigRecord: set the key, or delete it when Value is null; Kafka 4.3+ skips a name its config
        checker does not support (a config removed from Kafka, or a resource type brokers do not keep)."""
        resource = ConfigResource(RESOURCE_TYPES.get(data["resourceType"], "UNKNOWN"), data["resourceName"])
        if not self.supported(data["resourceType"], data["name"]):
            return
        self.changes.setdefault(resource, {})[data["name"]] = data["value"]

    def replay_remove_topic(self, topic_name: str) -> None:
        """RemoveTopicRecord: if the *base image* has configs for the topic, discard pending
        changes and delete every base key. Configs set earlier in this same delta for a topic
        without base configs survive (Kafka quirk, docs/replay-rules.md, "RemoveTopicRecord")."""
        resource = ConfigResource("TOPIC", topic_name)
        base = self.image.resource_data.get(resource)
        if base is not None:
            self.changes[resource] = dict.fromkeys(base)

    def finish_snapshot(self) -> None:
        """Delete every base key the snapshot did not set."""
        for resource, data in self.image.resource_data.items():
            changes = self.changes.setdefault(resource, {})
            for key in data:
                changes.setdefault(key, None)

    def build(self, in_place: bool) -> ConfigurationsImage:
        resources = writable(self.image.resource_data, in_place)
        for resource, changes in self.changes.items():
            data = dict(resources.get(resource, EMPTY_MAP))
            for key, value in changes.items():
                if value is None:
                    data.pop(key, None)
                else:
                    data[key] = value
            if data:
                resources.set(resource, read_only(data))
            else:
                resources.discard(resource)
        return ConfigurationsImage(resources)

    def apply(self) -> ConfigurationsImage:
        return self.build(in_place=False).frozen()
