"""Decoded log records as the engines consume them (one row of the ``records`` table)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
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

    @classmethod
    def from_row(cls, row: Mapping[str, Any], offset_column: str = "offset") -> LogRecord:
        """A row of the lake's ``records`` table (or of ``snapshots``, with ``offset_column="position"``)."""
        payload = row["payload"]
        return cls(
            offset=row[offset_column],
            batch_base_offset=row["batch_base_offset"],
            batch_last_offset=row["batch_last_offset"],
            epoch=row["batch_leader_epoch"],
            timestamp=row["timestamp"],
            type=row["type"],
            version=row["version"],
            data=json.loads(payload) if payload else {},
            control_type=row["control_type"],
            is_transactional=bool(row["is_transactional"]),
            producer_id=row["producer_id"],
            producer_epoch=row["producer_epoch"],
            source_file=row["source_file"],
        )


class Snapshot(NamedTuple):
    """A snapshot (``*.checkpoint``): its records in file order (``offset`` = position in the file,
    control records included or not), its id (end offset = last contained offset + 1, epoch) and
    the SnapshotHeader's LastContainedLogTimestamp (None = read it from the SNAPSHOT_HEADER record)."""

    records: Sequence[LogRecord]
    end_offset: int
    epoch: int
    last_contained_timestamp: int | None = None
