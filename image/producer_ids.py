"""Producer ids part of the image (docs/replay-rules.md, "Producer ids")."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar


@dataclass(frozen=True, slots=True)
class ProducerIdsImage:
    """The next producer id block start (-1 when none was ever allocated)."""

    next_producer_id: int = -1

    EMPTY: ClassVar[ProducerIdsImage]

    def frozen(self) -> ProducerIdsImage:
        return self


ProducerIdsImage.EMPTY = ProducerIdsImage()


class ProducerIdsDelta:
    """Last ProducerIdsRecord wins; no monotonicity check; snapshots do not reset it."""

    def __init__(self, image: ProducerIdsImage) -> None:
        self.image = image
        self.next_producer_id = image.next_producer_id

    def replay_producer_ids(self, data: Mapping[str, Any]) -> None:
        self.next_producer_id = data["nextProducerId"]

    def finish_snapshot(self) -> None:
        """Nothing: the base value survives a snapshot without a ProducerIdsRecord."""

    def build(self, in_place: bool) -> ProducerIdsImage:
        return ProducerIdsImage(self.next_producer_id)

    def apply(self) -> ProducerIdsImage:
        return self.build(in_place=False)
