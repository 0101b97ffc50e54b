"""The one-screen summary of an image (``kraft-replay replay`` without ``--json``).

:func:`image_summary` computes it from the image JSON (``image/README.md``) in plain Python.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from image.features import METADATA_VERSION, METADATA_VERSIONS

COUNTED_PARTS = (
    "topics",
    "partitions",
    "brokers",
    "controllers",
    "configs",
    "features",
    "clientQuotas",
    "acls",
    "scram",
    "delegationTokens",
)
"""The image parts whose rows :attr:`ImageSummary.counts` counts (``producerIds`` is one value)."""


class ImageSummary(BaseModel):
    """Provenance, metadata.version, broker and partition health, and the size of every part."""

    offset: int
    epoch: int
    timestamp: int
    """Last contained log time, epoch milliseconds (-1: the empty image)."""
    metadata_version: int | None
    next_producer_id: int
    """-1 when no producer id block was allocated."""
    fenced_brokers: list[int]
    brokers_in_controlled_shutdown: list[int]
    leaderless_partitions: int
    under_replicated_partitions: int
    """Partitions whose ISR is smaller than their replica set."""
    counts: dict[str, int]
    """Rows per part of :data:`COUNTED_PARTS` (features: finalized features incl. metadata.version)."""

    @property
    def metadata_version_name(self) -> str | None:
        """The release name of :attr:`metadata_version` (``3.9-IV0``), None if unknown."""
        return None if self.metadata_version is None else METADATA_VERSIONS.get(self.metadata_version)


def image_summary(image: Mapping[str, Any]) -> ImageSummary:
    """The summary of an image JSON document."""
    brokers, partitions = image["brokers"], image["partitions"]
    return ImageSummary(
        offset=image["offset"],
        epoch=image["epoch"],
        timestamp=image["timestamp"],
        metadata_version=image["features"].get(METADATA_VERSION),
        next_producer_id=image["producerIds"]["nextProducerId"],
        fenced_brokers=[b["brokerId"] for b in brokers if b["fenced"]],
        brokers_in_controlled_shutdown=[b["brokerId"] for b in brokers if b["inControlledShutdown"]],
        leaderless_partitions=sum(p["leader"] == -1 for p in partitions),
        under_replicated_partitions=sum(len(p["isr"]) < len(p["replicas"]) for p in partitions),
        counts={part: len(image[part]) for part in COUNTED_PARTS},
    )
