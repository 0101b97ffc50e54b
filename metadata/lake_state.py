"""What readers of a lake trust, without Spark: the committed state (the newest ``_ingests`` row) and
the lake's location."""

from __future__ import annotations

import datetime as dt
import os
from dataclasses import dataclass
from urllib.parse import urlparse

INGESTS = "_ingests"


@dataclass(frozen=True)
class LakeState:
    """The newest committed ingest: what readers see (the columns of its ``_ingests`` row). A dataclass, not a
    pydantic model: every read of a lake makes one, and pydantic's import is ≈ 0.1 s of a read's start-up."""

    seq: int
    run_id: str
    committed_at: dt.datetime
    inputs: list[str]
    records_added: int
    snapshots_added: int
    high_water_mark: int
    versions: dict[str, int]
    kafka_version: str | None = None
    """The Kafka release line whose replay rules built the temporal image (``--kafka-version``); None in a lake
    written before kraft-replay followed each release's rules."""


class LakeError(RuntimeError):
    """The lake is missing or not a kraft-replay lake."""


class LakeDamaged(LakeError):
    """A table, file or version the committed state needs is missing or unreadable (one line: which, and
    what to do)."""


def lake_uri(location: str) -> str:
    """A lake location as a URI (a local path made absolute)."""
    if "://" in location or location.startswith("file:"):
        return location.rstrip("/")
    return os.path.abspath(location)


def reachable(location: str) -> bool:
    """A lake on a local path or a ``file:`` URI: read in process (:mod:`metadata.lake_files`), no Spark needed."""
    scheme = urlparse(location).scheme
    return scheme in ("", "file") or (len(scheme) == 1 and os.name == "nt")
