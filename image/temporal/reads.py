"""Reading the temporal image: the image at an offset from the versions, without a replay.

A :class:`TemporalSource` gives the few things a read needs — the rows visible at an offset, the
visibility spans of metadata transactions, the stored snapshots, the last record at or before an offset,
and the rejected records — and :func:`image_at` turns them into the image JSON and the errors exactly as
``replay_to`` (the reference engine) gives them. Sources: the lake read in process with pyarrow
(:mod:`image.temporal.lake_source`), the lake on Spark (:mod:`image.temporal.spark.source`), and a
:class:`~image.temporal.versions.VersionLog` in memory (:class:`MemorySource`).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from image.errors import ReplayError
from image.loader import snapshot_to_start_from
from image.parts import JSON_PARTS, Row, assemble
from image.provenance import MetadataProvenance
from image.release import NEWEST, ReplayRules, rules_for
from image.temporal.versions import Rejection, Span, VersionLog, record_versions
from metadata.lake.state import LakeError, LakeState
from metadata.lake.version_tables import version_schema
from metadata.log.errors import BadInput
from metadata.log.records import LogRecord, RecordLog, Snapshot, replay_starts

if TYPE_CHECKING:  # pyarrow is imported where a table is made, the log summary models (pydantic) where one is:
    import pyarrow as pa  # a replay of a log read in process needs neither
    import pyarrow.compute as pc

    from metadata.log.summary import DumpRecord, LogInfo, RecordAggregates

VERSION_COLUMNS = ("from_offset", "to_offset", "from_time")


class RecordPosition(NamedTuple):
    """Where a log record sits, for provenance: its offset, its batch's epoch and append time."""

    offset: int
    epoch: int
    timestamp: int


class SnapshotId(NamedTuple):
    """A stored snapshot a replay can start from."""

    end_offset: int
    epoch: int
    last_contained_timestamp: int


class TemporalSource(Protocol):
    """What reading the temporal image needs from where it is stored."""

    @property
    def rules(self) -> ReplayRules:
        """The Kafka release's replay rules the versions follow (a replay from the stored records uses them)."""

    def rows_at(self, part: str, offset: int, topic_ids: Collection[str] | None = None) -> list[Row]:
        """The rows of ``part`` visible at ``offset`` (the version columns may be left in); ``topic_ids``: only
        those of these topics (a part keyed by ``topicId``)."""

    def spans(self) -> Sequence[Span]:
        """The metadata transactions (visibility spans), any order."""

    def snapshots(self) -> Sequence[SnapshotId]:
        """The stored snapshots a replay can start from (not the bootstrap files: ``bootstrap.checkpoint`` and
        the ``0-0`` bootstrap snapshot, :func:`metadata.log.records.snapshot_kind`)."""

    def record_at_or_before(self, offset: int) -> RecordPosition | None:
        """The last log record (of any type, control records included) at or before ``offset``."""

    def rejections(self, snapshot: SnapshotId | None, first: int, last: int) -> list[ReplayError]:
        """The rejected records of ``snapshot`` (by position), then of the log in ``[first, last]`` (by offset)."""

    def versions(
        self, part: str, during: tuple[int, int] | None = None, equal: Mapping[str, Any] | None = None
    ) -> pa.Table:
        """Versions of ``part`` (Arrow, :func:`metadata.lake.version_tables.version_schema`) that hold at some
        offset of ``during`` (inclusive; all if None) and whose columns equal ``equal``."""

    def records(self, first: int, last: int, only: Collection[int] | None = None) -> pa.Table:
        """``offset``, ``timestamp`` and ``type`` (a control record's control type) of the log records in
        ``[first, last]`` (``only`` those at these offsets, if given), by offset."""

    def bounds(self) -> tuple[int, int] | None:
        """The first and last offset of the log (None if it is empty): its records', and a snapshot's last
        contained offset counts as the log's end when it lies beyond them."""

    def offset_at_time(self, ms: int) -> int | None:
        """The last offset of the last batch appended at or before ``ms`` (epoch ms), None if none was."""

    def batch_start(self, offset: int) -> int:
        """The first offset of the batch holding ``offset`` (``offset`` itself if no record holds it)."""

    def log_records(self, first: int, last: int) -> list[LogRecord]:
        """The log records in ``[first, last]`` with their bodies, by offset (for the reference engine)."""

    def replay_records(self, first: int, last: int) -> Iterable[LogRecord]:
        """:meth:`log_records` for a replay that reads them once, in order (a log read in process decodes them
        while they are replayed)."""

    def snapshot_records(self, end_offset: int, epoch: int) -> list[LogRecord]:
        """The records of a stored snapshot or bootstrap file in file order (``offset`` = position in the file);
        none if no such snapshot is stored."""

    def log_info(self) -> LogInfo:
        """The ``log-info`` summary of the stored log."""

    def dump(
        self, first: int | None, last: int | None, types: Sequence[str] = (), include_control: bool = False
    ) -> Iterator[DumpRecord]:
        """The records in ``[first, last]`` (unbounded where None) for ``dump``: metadata records, control
        records too with ``include_control``, or only ``types`` (record or control type names)."""


def log_bounds(first: int | None, last: int | None, snapshots: Sequence[SnapshotId]) -> tuple[int, int] | None:
    """:meth:`TemporalSource.bounds` from the records' first and last offsets and the snapshots."""
    ends = [s.end_offset - 1 for s in snapshots if s.end_offset > 0]
    if first is None or last is None:
        return (min(ends), max(ends)) if ends else None
    return first, max([last, *ends])


def arrow_aggregates(
    records: pa.Table, newest_snapshot: int | None, undecoded: Sequence[tuple[int, int, int, str | None]] = ()
) -> RecordAggregates:
    """The :class:`~metadata.log.summary.RecordAggregates` of a records table (``offset``, ``timestamp``,
    ``is_control``, ``type``, ``control_type``), with the ``undecoded`` records of
    :func:`~metadata.log.summary.undecoded_rows`."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from metadata.log.summary import RecordAggregates

    n = records.num_rows
    kinds = (
        pa.table({"is_control": records["is_control"], "t": pc.coalesce(records["type"], records["control_type"])})
        .group_by(["is_control", "t"])
        .aggregate([([], "count_all")])
        .to_pylist()
    )
    after = (
        pc.sum(pc.greater_equal(records["offset"], newest_snapshot)).as_py() if newest_snapshot is not None and n else n
    )
    return RecordAggregates(
        n=n,
        control=pc.sum(records["is_control"]).as_py() or 0 if n else 0,
        lo=pc.min(records["offset"]).as_py() if n else None,
        hi=pc.max(records["offset"]).as_py() if n else None,
        t0=pc.min(records["timestamp"]).as_py() if n else None,
        t1=pc.max(records["timestamp"]).as_py() if n else None,
        kinds=[(r["is_control"], r["t"], r["count_all"]) for r in kinds],
        after_snapshot=after or 0,
        undecoded=list(undecoded),
    )


def dump_rows(records: pa.Table, types: Sequence[str], include_control: bool) -> Iterator[DumpRecord]:
    """:meth:`TemporalSource.dump` over a records table (``offset``, ``timestamp``, ``is_control``, ``type``,
    ``control_type``, ``version``, ``payload``)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from metadata.log.summary import DumpRecord

    if types:
        wanted = pa.array(list(types))
        chosen = pc.or_kleene(pc.is_in(records["type"], wanted), pc.is_in(records["control_type"], wanted))
        records = records.filter(pc.fill_null(chosen, False))
    elif not include_control:
        records = records.filter(pc.invert(records["is_control"]))
    for r in records.sort_by("offset").to_pylist():
        yield DumpRecord(
            offset=r["offset"],
            timestamp=r["timestamp"],
            type=r["type"] or r["control_type"] or "UNKNOWN",
            version=r["version"],
            data=json.loads(r["payload"]) if r["payload"] else {},
        )


def snapshot_dump(
    source: TemporalSource,
    snapshot: tuple[int, int],
    first: int | None,
    last: int | None,
    types: Sequence[str] = (),
    include_control: bool = False,
) -> Iterator[DumpRecord]:
    """:meth:`TemporalSource.dump` of a stored snapshot or bootstrap file (its id, ``(end offset, epoch)``):
    its records at positions ``[first, last]`` (unbounded where None), each with its position as ``offset``."""
    from metadata.log.summary import DumpRecord

    records = source.snapshot_records(*snapshot)
    if not records:
        raise BadInput(f"no snapshot {snapshot[0]}-{snapshot[1]} is stored (log-info lists the snapshots)")
    lo, hi = first if first is not None else -(1 << 62), last if last is not None else 1 << 62

    def wanted(r: LogRecord) -> bool:
        if not lo <= r.offset <= hi:
            return False
        return (r.type or r.control_type) in types if types else include_control or not r.is_control

    return (
        DumpRecord(
            offset=r.offset,
            timestamp=r.timestamp,
            type=r.type or r.control_type or "UNKNOWN",
            version=r.version,
            data=r.data,
        )
        for r in records
        if wanted(r)
    )


def version_filter(during: tuple[int, int] | None, equal: Mapping[str, Any] | None) -> pc.Expression | None:
    """The filter of :meth:`TemporalSource.versions` as an Arrow expression."""
    import pyarrow.compute as pc

    where = None
    if during is not None:
        lo, hi = during
        where = (pc.field("from_offset") <= hi) & (pc.field("to_offset").is_null() | (pc.field("to_offset") > lo))
    for column, value in (equal or {}).items():
        where = (pc.field(column) == value) if where is None else where & (pc.field(column) == value)
    return where


def provenance_at(source: TemporalSource, offset: int) -> MetadataProvenance:
    """The provenance of the image at ``offset``: inside a visibility span, that of ``begin - 1``; else
    the last record at or before it, unless the snapshot the replay starts from ends after that record,
    in which case the snapshot's."""
    for span in source.spans():
        if span.begin <= offset and (span.end is None or offset < span.end):
            offset = span.begin - 1
            break
    base = snapshot_to_start_from(source.snapshots(), offset)
    last = source.record_at_or_before(offset)
    if base is not None and (last is None or last.offset < base.end_offset):
        return MetadataProvenance(base.end_offset - 1, base.epoch, base.last_contained_timestamp, True)
    if last is None:
        return MetadataProvenance.EMPTY
    return MetadataProvenance(last.offset, last.epoch, last.timestamp, False)


def errors_at(source: TemporalSource, offset: int) -> list[ReplayError]:
    """The rejections a replay to ``offset`` meets, in replay order: those of the snapshot it starts
    from, then the log's after that snapshot."""
    base = snapshot_to_start_from(source.snapshots(), offset)
    return source.rejections(base, base.end_offset if base is not None else -1, offset)


def image_at(source: TemporalSource, offset: int, *, lenient: bool = False) -> tuple[dict[str, Any], list[ReplayError]]:
    """The image JSON at ``offset`` and the records a lenient replay to it skips; strict raises the
    first of them, as the reference engine does (records kept raw by ``--skip-unknown`` are listed in both
    modes)."""
    errors = errors_at(source, offset)
    fatal = [e for e in errors if not e.undecoded]
    if fatal and not lenient:
        raise fatal[0]
    p = provenance_at(source, offset)
    doc = assemble(
        {part: source.rows_at(part, offset) for part in JSON_PARTS},
        p.last_contained_offset,
        p.last_contained_epoch,
        p.last_contained_log_time_ms,
    )
    return doc, errors


@dataclass
class MemorySource:
    """A :class:`TemporalSource` over versions recorded in memory (``--log``, tests). ``log`` are the
    log's records (offset, epoch, append time, type per record, in offset order); ``stored_snapshots`` the
    snapshots and bootstrap files (listed by ``log-info``; only the snapshots, ``snapshot_ids``, are loaded);
    ``given`` the versions recorded, or None: recorded from ``log`` and the snapshots when first asked (a
    question that reads records and snapshots only — the reference engine's image at one offset — records
    none)."""

    given: VersionLog | None
    log: RecordLog
    snapshot_ids: Sequence[SnapshotId]
    stored_snapshots: Sequence[Snapshot] = ()
    location: str = ""
    rules: ReplayRules = NEWEST

    def __post_init__(self) -> None:
        if not isinstance(self.log, RecordLog):
            self.log = RecordLog.of(self.log)

    @classmethod
    def replay(
        cls,
        log: Sequence[LogRecord] | RecordLog,
        snapshots: Sequence[Snapshot],
        location: str = "",
        rules: ReplayRules = NEWEST,
    ) -> MemorySource:
        """The source of ``log`` and ``snapshots`` (bootstrap files among them are listed, never loaded),
        versions recorded on demand under ``rules`` (:func:`image.temporal.versions.record_versions`)."""
        return cls(
            None,
            log,
            [
                SnapshotId(
                    s.end_offset, s.epoch, s.last_contained_timestamp if s.last_contained_timestamp is not None else -1
                )
                for s in replay_starts(snapshots)
            ],
            snapshots,
            location,
            rules,
        )

    @cached_property
    def recorded(self) -> VersionLog:
        """Every key's versions."""
        if self.given is not None:
            return self.given
        bounds = self.log.bounds()
        recorded = record_versions(
            self.log.stream(*bounds) if bounds else [], replay_starts(self.stored_snapshots), rules=self.rules
        )
        assert isinstance(recorded, VersionLog)
        return recorded

    @cached_property
    def _tables(self) -> dict[str, pa.Table]:
        import pyarrow as pa

        return {
            part: pa.Table.from_pylist(rows, schema=version_schema(part))
            for part, rows in self.recorded.versions.items()
        }

    def rows_at(self, part: str, offset: int, topic_ids: Collection[str] | None = None) -> list[Row]:
        return [
            row
            for row in self.recorded.versions[part]
            if row["from_offset"] <= offset
            and (row["to_offset"] is None or offset < row["to_offset"])
            and (topic_ids is None or row["topicId"] in topic_ids)
        ]

    def spans(self) -> Sequence[Span]:
        return self.recorded.spans

    def snapshots(self) -> Sequence[SnapshotId]:
        return self.snapshot_ids

    def record_at_or_before(self, offset: int) -> RecordPosition | None:
        found = self.log.at_or_before(offset)
        return RecordPosition(*found) if found is not None else None

    def rejections(self, snapshot: SnapshotId | None, first: int, last: int) -> list[ReplayError]:
        return ordered_rejections(self.recorded.rejections, snapshot, first, last)

    def versions(
        self, part: str, during: tuple[int, int] | None = None, equal: Mapping[str, Any] | None = None
    ) -> pa.Table:
        where = version_filter(during, equal)
        return self._tables[part] if where is None else self._tables[part].filter(where)

    def records(self, first: int, last: int, only: Collection[int] | None = None) -> pa.Table:
        import pyarrow as pa

        chosen = self.log.between(first, last)
        if only is not None:
            wanted = set(only)
            chosen = [r for r in chosen if r.offset in wanted]
        return pa.table(
            {
                "offset": pa.array([r.offset for r in chosen], pa.int64()),
                "timestamp": pa.array([r.timestamp for r in chosen], pa.int64()),
                "type": pa.array([r.type or r.control_type for r in chosen], pa.string()),
            }
        )

    def bounds(self) -> tuple[int, int] | None:
        first, last = self.log.bounds() or (None, None)
        return log_bounds(first, last, self.snapshot_ids)

    def offset_at_time(self, ms: int) -> int | None:
        return self.log.offset_at_time(ms)

    def batch_start(self, offset: int) -> int:
        return self.log.batch_start(offset)

    def log_records(self, first: int, last: int) -> list[LogRecord]:
        return self.log.between(first, last)

    def replay_records(self, first: int, last: int) -> Iterator[LogRecord]:
        return self.log.stream(first, last)

    def snapshot_records(self, end_offset: int, epoch: int) -> list[LogRecord]:
        found = [s for s in self.stored_snapshots if (s.end_offset, s.epoch) == (end_offset, epoch)]
        return list(found[0].records) if found else []

    @cached_property
    def _records(self) -> pa.Table:
        import pyarrow as pa

        return pa.table(
            {
                "offset": pa.array([r.offset for r in self.log], pa.int64()),
                "timestamp": pa.array([r.timestamp for r in self.log], pa.int64()),
                "is_control": pa.array([r.is_control for r in self.log], pa.bool_()),
                "type": pa.array([r.type for r in self.log], pa.string()),
                "control_type": pa.array([r.control_type for r in self.log], pa.string()),
                "api_key": pa.array([r.api_key for r in self.log], pa.int32()),
                "version": pa.array([r.version for r in self.log], pa.int32()),
                "payload": pa.array(
                    [json.dumps(r.data, separators=(",", ":")) if r.data else None for r in self.log], pa.string()
                ),
            }
        )

    def log_info(self) -> LogInfo:
        from metadata.log.summary import SnapshotInfo, compose, newest_snapshot_end, snapshot_name, undecoded_rows

        snapshots = [
            SnapshotInfo.of(s.end_offset, s.epoch, len(s.records), s.last_contained_timestamp)
            for s in self.stored_snapshots
        ]
        undecoded = undecoded_rows(self._records) + [
            (r.api_key, r.version, r.offset, snapshot_name(s.end_offset, s.epoch))
            for s in self.stored_snapshots
            for r in s.records
            if r.is_undecoded
        ]
        aggregates = arrow_aggregates(self._records, newest_snapshot_end(snapshots), undecoded)
        return compose(self.location, aggregates, snapshots, 0)

    def dump(
        self, first: int | None, last: int | None, types: Sequence[str] = (), include_control: bool = False
    ) -> Iterator[DumpRecord]:
        import pyarrow.compute as pc

        lo, hi = first if first is not None else -(1 << 62), last if last is not None else 1 << 62
        t = self._records
        return dump_rows(t.filter((pc.field("offset") >= lo) & (pc.field("offset") <= hi)), types, include_control)


def ordered_rejections(
    rejections: Sequence[Rejection], snapshot: SnapshotId | None, first: int, last: int
) -> list[ReplayError]:
    """The rejections of ``snapshot`` (in position order), then of the log in ``[first, last]``."""
    own = (snapshot.end_offset, snapshot.epoch) if snapshot is not None else None
    from_snapshot = sorted(
        (r.error for r in rejections if own is not None and r.snapshot == own), key=lambda e: e.offset or 0
    )
    from_log = sorted(
        (r.error for r in rejections if r.snapshot is None and first <= (r.error.offset or 0) <= last),
        key=lambda e: e.offset or 0,
    )
    return from_snapshot + from_log


def lake_rules(state: LakeState) -> ReplayRules:
    """The rules a lake's temporal image follows: its ingests' ``--kafka-version``. A lake written before
    kraft-replay recorded one (its temporal image has no cordoned directories either) is a LakeError."""
    if state.kafka_version is None:
        raise LakeError(
            "this lake was written by an earlier kraft-replay, before it followed each Kafka release's replay rules: "
            "ingest the log into a new lake"
        )
    return rules_for(state.kafka_version)
