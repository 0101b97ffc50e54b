"""Decoded log records as the engines consume them (one row of the ``records`` table)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple


@dataclass(frozen=True, slots=True)
class LogRecord:
    """One record of the metadata log (or of a snapshot), with its batch context.

    ``data`` is the record body in the shape of Kafka's JSON converters (what
    ``kafka-dump-log --cluster-metadata-decoder`` prints as ``payload.data``): camelCase field
    names, every regular field of the version, tagged fields only when not at their default,
    Uuids in Kafka's base64 form, ``bytes`` as standard base64.
    For control records ``type`` is None and ``control_type`` names the control record
    (``LEADER_CHANGE``, ``SNAPSHOT_HEADER``, ...); ``data`` is then the control body.
    """

    offset: int
    batch_base_offset: int
    batch_last_offset: int
    epoch: int
    timestamp: int
    type: str | None
    version: int
    data: dict[str, Any] = field(default_factory=dict)
    control_type: str | None = None
    is_transactional: bool = False
    producer_id: int = -1
    producer_epoch: int = -1
    source_file: str = ""

    @property
    def is_control(self) -> bool:
        return self.control_type is not None


class Snapshot(NamedTuple):
    """A snapshot (``*.checkpoint``): its records in file order (``offset`` = position in the file,
    control records included or not), its id (end offset = last contained offset + 1, epoch) and
    the SnapshotHeader's LastContainedLogTimestamp (None = read it from the SNAPSHOT_HEADER record)."""

    records: Sequence[LogRecord]
    end_offset: int
    epoch: int
    last_contained_timestamp: int | None = None
