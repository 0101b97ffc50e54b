"""Ingest as the CLI runs it: the log's records into the lake (:mod:`metadata.lake.ingest`) and, in the same
commit, the temporal image brought up to them (:func:`image.temporal.build.maintain_versions`), its tables
compacted in the point-read layout when many ingests have fragmented them — in process or on Spark."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from image.temporal.build import COMPACTORS, maintain_versions
from metadata.lake.ingest import IngestReport
from metadata.lake.ingest import ingest as ingest_records


def ingest(paths: Sequence[str], lake_location: str, **options: Any) -> IngestReport:
    """Ingest ``paths`` into the lake with its temporal image (options as :func:`metadata.lake.ingest.ingest`)."""
    return ingest_records(paths, lake_location, derive=maintain_versions, compactors=COMPACTORS, **options)
