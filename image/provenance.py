"""MetadataProvenance: where an image ends in the metadata log."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar


@dataclass(frozen=True, slots=True)
class MetadataProvenance:
    """(lastContainedOffset, lastContainedEpoch, lastContainedLogTimeMs, isOffsetBatchAligned)."""

    last_contained_offset: int
    last_contained_epoch: int
    last_contained_log_time_ms: int
    is_offset_batch_aligned: bool

    EMPTY: ClassVar[MetadataProvenance]

    def snapshot_id(self) -> tuple[int, int]:
        """(end offset, epoch) of a snapshot of this image: ``(lastContainedOffset + 1, epoch)``."""
        return self.last_contained_offset + 1, self.last_contained_epoch


MetadataProvenance.EMPTY = MetadataProvenance(-1, -1, -1, False)
