"""What ``log-info`` and ``dump`` answer about a stored log, whichever engine reads it: the models and the
one way a summary is composed from a log's aggregates.

A snapshot holds every offset up to its last contained offset: a log whose records begin after its oldest
snapshot (older segments deleted by retention) starts at that snapshot's last contained offset, a snapshot
beyond the last record ends the log there, and missing offsets are those neither a record nor a snapshot
holds.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from metadata.log.schema.releases import record_description

if TYPE_CHECKING:
    import pyarrow as pa


class SnapshotInfo(BaseModel):
    end_offset: int
    epoch: int
    kind: str
    records: int
    last_contained_timestamp: int | None

    @classmethod
    def of(cls, end_offset: int, epoch: int, records: int, last_contained_timestamp: int | None) -> SnapshotInfo:
        """A stored snapshot file, its kind from its id (:func:`~metadata.log.records.snapshot_kind`)."""
        from metadata.log.records import snapshot_kind

        kind = snapshot_kind(end_offset, epoch)
        return cls(
            end_offset=end_offset,
            epoch=epoch,
            kind=kind,
            records=records,
            last_contained_timestamp=last_contained_timestamp,
        )


class UndecodedRecords(BaseModel):
    """The records of one apiKey and version the reader kept raw (``--skip-unknown``: newer than the schema):
    not decoded, not replayed."""

    api_key: int
    version: int
    record: str  # e.g. "RegisterBrokerRecord v5 (newer than Kafka 4.4.0, which has v0-4)"
    count: int  # in the log and in the stored snapshots
    offsets: list[int]  # in the log
    snapshots: list[str]  # the stored snapshots holding some (``<end offset>-<epoch>`` as in the file name)


class LogInfo(BaseModel):
    """Summary of a stored log (a lake's committed state, or a log read in process)."""

    lake: str
    first_offset: int | None
    last_offset: int | None
    records: int  # metadata records only
    control_records: int
    by_type: dict[str, int]
    control_by_type: dict[str, int]
    first_timestamp: int | None
    last_timestamp: int | None
    snapshots: list[SnapshotInfo]
    ingests: int
    missing_offsets: int  # offsets between first and last that neither a record nor a snapshot holds
    undecoded: list[UndecodedRecords] = []  # records kept raw by --skip-unknown, by apiKey and version


class DumpRecord(BaseModel):
    offset: int
    timestamp: int
    type: str
    version: int
    data: dict[str, Any]


class RecordAggregates(BaseModel):
    """What a summary needs from the records: count, control count, offset and time bounds, counts per
    (control flag, type — a control record's control type), and how many records follow the newest
    snapshot (``after_snapshot``: offset ≥ its end offset)."""

    n: int
    control: int
    lo: int | None
    hi: int | None
    t0: int | None
    t1: int | None
    kinds: list[tuple[bool, str | None, int]]
    after_snapshot: int
    undecoded: list[tuple[int, int, int, str | None]] = []
    """Records kept raw: (apiKey, version, offset — or position in a snapshot —, the snapshot's
    ``<end offset>-<epoch>`` or None for the log)."""


def snapshot_name(end_offset: int, epoch: int) -> str:
    """A snapshot's id as its file name spells it: ``00000000000000000240-0000000001``."""
    return f"{end_offset:020d}-{epoch:010d}"


def undecoded_records(rows: Iterable[tuple[int, int, int, str | None]]) -> list[UndecodedRecords]:
    """Records kept raw, grouped by apiKey and version."""
    groups: dict[tuple[int, int], list[tuple[int, str | None]]] = {}
    for api_key, version, offset, snapshot in rows:
        groups.setdefault((api_key, version), []).append((offset, snapshot))
    return [
        UndecodedRecords(
            api_key=api_key,
            version=version,
            record=record_description(api_key, version),
            count=len(found),
            offsets=sorted(offset for offset, snapshot in found if snapshot is None),
            snapshots=sorted({snapshot for _, snapshot in found if snapshot is not None}),
        )
        for (api_key, version), found in sorted(groups.items())
    ]


def newest_snapshot_end(snapshots: Iterable[SnapshotInfo]) -> int | None:
    """The end offset of the newest snapshot of the log (``bootstrap.checkpoint`` is not one)."""
    return max((s.end_offset for s in snapshots if s.kind == "snapshot" and s.end_offset > 0), default=None)


def compose(location: str, records: RecordAggregates, snapshots: list[SnapshotInfo], ingests: int) -> LogInfo:
    """The :class:`LogInfo` of a log's aggregates (see the module doc for the bounds)."""
    ends = [s.end_offset - 1 for s in snapshots if s.kind == "snapshot" and s.end_offset > 0]
    first = records.lo if records.lo is not None else min(ends, default=None)
    if records.lo is not None and ends and min(ends) < records.lo:
        first = min(ends)
    last = max([o for o in (records.hi, *ends) if o is not None], default=None)
    missing = 0
    if first is not None and last is not None:
        newest = max(ends, default=first - 1)
        held_by_snapshot = max(0, newest - first + 1)
        missing = (
            (last - first + 1) - held_by_snapshot - records.after_snapshot if ends else (last - first + 1) - records.n
        )
    return LogInfo(
        lake=location,
        first_offset=first,
        last_offset=last,
        records=records.n - records.control,
        control_records=records.control,
        by_type=dict(sorted((t or "UNKNOWN", n) for control, t, n in records.kinds if not control)),
        control_by_type=dict(sorted((t or "UNKNOWN", n) for control, t, n in records.kinds if control)),
        first_timestamp=records.t0,
        last_timestamp=records.t1,
        snapshots=snapshots,
        ingests=ingests,
        missing_offsets=missing,
        undecoded=undecoded_records(records.undecoded),
    )


def undecoded_rows(records: pa.Table) -> list[tuple[int, int, int, str | None]]:
    """:attr:`~metadata.log.summary.RecordAggregates.undecoded` of a records table (``offset``, ``is_control``,
    ``type``, ``api_key``, ``version``) or of a snapshots table (with ``position``, ``snapshot_end_offset``,
    ``snapshot_epoch``)."""
    import pyarrow.compute as pc

    raw = records.filter(pc.and_(pc.invert(records["is_control"]), pc.is_null(records["type"]))).to_pylist()
    if "position" in records.column_names:
        return [
            (r["api_key"], r["version"], r["position"], snapshot_name(r["snapshot_end_offset"], r["snapshot_epoch"]))
            for r in raw
        ]
    return [(r["api_key"], r["version"], r["offset"], None) for r in raw]
