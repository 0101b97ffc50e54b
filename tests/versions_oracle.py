"""Test oracle: version rows computed the slow, obviously correct way.

Replays the log with the reference engine to EVERY offset (``replay_to(records, X)`` afresh for
each X, O(n²): small logs only) and, per image part, emits a version row whenever a key's JSON
row appears, disappears or changes between consecutive offsets (the definition of version rows).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from image.parts import row_key
from image.replay import replay_to
from image.temporal.reads import MemorySource
from image.temporal.version_rows import PARTS
from image.temporal.versions import VersionLog
from metadata.log.records import LogRecord


def replayed_images(records: Sequence[LogRecord]) -> list[tuple[LogRecord, dict[str, Any]]]:
    """``(record, image JSON at its offset)`` for every record of the log."""
    return [(record, replay_to(records, record.offset).to_json()) for record in records]


def version_rows(images: Sequence[tuple[LogRecord, dict[str, Any]]]) -> dict[str, list[dict[str, Any]]]:
    """Per part, the version rows implied by the images at every offset."""
    rows: dict[str, list[dict[str, Any]]] = {part: [] for part in PARTS}
    current: dict[str, dict[tuple, dict[str, Any]]] = {part: {} for part in PARTS}
    for record, image in images:
        for part in PARTS:
            now = {row_key(part, row): row for row in image[part]}
            for key, version in list(current[part].items()):
                if now.get(key) != {
                    k: v for k, v in version.items() if k not in ("from_offset", "to_offset", "from_time")
                }:
                    version["to_offset"] = record.offset
                    del current[part][key]
            for key, row in now.items():
                if key not in current[part]:
                    version = {**row, "from_offset": record.offset, "to_offset": None, "from_time": record.timestamp}
                    rows[part].append(version)
                    current[part][key] = version
    return rows


def oracle_source(records: Sequence[LogRecord]) -> tuple[MemorySource, list[tuple[LogRecord, dict[str, Any]]]]:
    """A source of the oracle's version rows (the parts history and timeline read), and the images it
    was built from."""
    images = replayed_images(records)
    recorded = VersionLog()
    recorded.versions.update(version_rows(images))
    return MemorySource(recorded, records, []), images
