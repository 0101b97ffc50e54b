"""The diff of two images from the temporal image (:func:`diff_json`): only the versions that begin or end between
the two offsets are read, then diffed by Kafka's image diff rules (:func:`image.diff.diff_rows`)."""

from __future__ import annotations

from typing import Any

from image.diff import diff_rows
from image.parts import JSON_PARTS, Row
from image.temporal.reads import TemporalSource, provenance_at


def diff_json(source: TemporalSource, from_offset: int, to_offset: int) -> dict[str, Any]:
    """The diff of the images at two offsets from the temporal image: only versions that begin or end
    between them are read."""
    lo, hi = min(from_offset, to_offset), max(from_offset, to_offset)
    before: dict[str, list[Row]] = {}
    after: dict[str, list[Row]] = {}
    for part in JSON_PARTS:
        at_lo = source.versions(part, (lo, lo)).to_pylist(maps_as_pydicts="strict")
        at_hi = source.versions(part, (hi, hi)).to_pylist(maps_as_pydicts="strict")
        ending = [r for r in at_lo if r["to_offset"] is not None and r["to_offset"] <= hi]
        starting = [r for r in at_hi if r["from_offset"] > lo]
        if part in ("features", "producerIds"):  # always present: compare whole (a few rows)
            ending, starting = at_lo, at_hi
        before[part], after[part] = (ending, starting) if from_offset <= to_offset else (starting, ending)
    provenance = {}
    for side, offset in (("from", from_offset), ("to", to_offset)):
        p = provenance_at(source, offset)
        provenance[side] = {
            "offset": p.last_contained_offset,
            "epoch": p.last_contained_epoch,
            "timestamp": p.last_contained_log_time_ms,
        }
    return diff_rows(before, after, provenance["from"], provenance["to"])
