"""The temporal image of a lake read in process (a :class:`~image.temporal.reads.TemporalSource`): delta-rs
and pyarrow, no JVM (:mod:`metadata.lake.files`). Every read prunes files by their statistics on the
version interval (and the topic, for per-topic questions) before opening them."""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping, Sequence
from functools import cached_property
from itertools import starmap
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from image.errors import ReplayError
from image.parts import Row
from image.release import ReplayRules
from image.temporal.reads import (
    RecordPosition,
    SnapshotId,
    arrow_aggregates,
    dump_rows,
    lake_rules,
    log_bounds,
    version_filter,
)
from image.temporal.versions import Span
from metadata.lake.files import DataFile, LakeFiles
from metadata.lake.version_tables import PART_TABLES, PROVENANCE, REJECTIONS
from metadata.log.records import LOG_RECORD_COLUMNS, LogRecord, snapshot_kind

if TYPE_CHECKING:
    from metadata.log.summary import DumpRecord, LogInfo


def visible(offset: int) -> pc.Expression:
    """Versions visible at ``offset``."""
    return (pc.field("from_offset") <= offset) & (pc.field("to_offset").is_null() | (pc.field("to_offset") > offset))


def may_be_visible(offset: int):
    """File pruning for :func:`visible`: a file whose versions all start after ``offset`` or all end at
    or before it holds none."""

    def keep(f: DataFile) -> bool:
        return f.may_hold("from_offset", hi=offset) and f.may_hold("to_offset", lo=offset + 1, nulls=True)

    return keep


class ArrowSource:
    """The lake's temporal image at its committed state, read with pyarrow."""

    def __init__(self, files: LakeFiles) -> None:
        self.files = files

    @cached_property
    def rules(self) -> ReplayRules:
        return lake_rules(self.files.state())

    def rows_at(self, part: str, offset: int, topic_ids: Collection[str] | None = None) -> list[Row]:
        where = visible(offset)
        if topic_ids is not None:
            where &= pc.field("topicId").isin(pa.array(sorted(topic_ids), pa.string()))
        table = self.files.read(PART_TABLES[part], where=where, prune=may_be_visible(offset))
        return table.to_pylist(maps_as_pydicts="strict")

    @cached_property
    def _spans(self) -> list[Span]:
        rows = self.files.read(PROVENANCE).to_pylist()
        return [Span(r["from_offset"], r["to_offset"], r["outcome"]) for r in rows]

    def spans(self) -> Sequence[Span]:
        return self._spans

    @cached_property
    def _snapshots(self) -> list[SnapshotId]:
        t = self.files.read("snapshots", columns=["snapshot_end_offset", "snapshot_epoch", "last_contained_timestamp"])
        ids = {
            (r["snapshot_end_offset"], r["snapshot_epoch"]): r
            for r in t.to_pylist()
            if snapshot_kind(r["snapshot_end_offset"], r["snapshot_epoch"]) == "snapshot"
        }
        return sorted(
            SnapshotId(e, p, r["last_contained_timestamp"] if r["last_contained_timestamp"] is not None else -1)
            for (e, p), r in ids.items()
        )

    def snapshots(self) -> Sequence[SnapshotId]:
        return self._snapshots

    def record_at_or_before(self, offset: int) -> RecordPosition | None:
        width = 1
        while True:  # look back over a widening window: a few row groups of a few files, not the table
            lo = offset - width + 1 if width < (1 << 62) else None
            where = pc.field("offset") <= offset
            if lo is not None:
                where &= pc.field("offset") >= lo
            t = self.files.read(
                "records",
                columns=["offset", "batch_leader_epoch", "timestamp"],
                where=where,
                prune=lambda f, lo=lo: f.may_hold("offset", lo=lo, hi=offset),
            )
            if t.num_rows:
                row = t.slice(pc.index(t["offset"], pc.max(t["offset"])).as_py(), 1).to_pylist()[0]
                return RecordPosition(row["offset"], row["batch_leader_epoch"], row["timestamp"])
            if lo is None:
                return None
            width = width * 1024 if width < (1 << 40) else 1 << 62

    def rejections(self, snapshot: SnapshotId | None, first: int, last: int) -> list[ReplayError]:
        log = pc.field("snapshot_end_offset").is_null() & (pc.field("offset") >= first) & (pc.field("offset") <= last)
        where = log
        if snapshot is not None:
            where = log | (
                (pc.field("snapshot_end_offset") == snapshot.end_offset)
                & (pc.field("snapshot_epoch") == snapshot.epoch)
            )
        rows = self.files.read(REJECTIONS, where=where).to_pylist()
        rows.sort(key=lambda r: (r["snapshot_end_offset"] is None, r["offset"]))
        return [
            ReplayError(r["message"], location=r["location"], offset=r["offset"], record_type=r["record_type"])
            for r in rows
        ]

    def versions(
        self, part: str, during: tuple[int, int] | None = None, equal: Mapping[str, Any] | None = None
    ) -> pa.Table:
        def keep(f: DataFile) -> bool:
            if during is not None and not (
                f.may_hold("from_offset", hi=during[1]) and f.may_hold("to_offset", lo=during[0] + 1, nulls=True)
            ):
                return False
            return all(f.may_hold(c, lo=v, hi=v) for c, v in (equal or {}).items())

        # a key's versions are spread over the whole table (it is ordered by offset): find their row groups first
        narrow = [*equal, *(("from_offset", "to_offset") if during else ())] if equal else None
        return self.files.read(PART_TABLES[part], where=version_filter(during, equal), prune=keep, narrow=narrow)

    def records(self, first: int, last: int, only: Collection[int] | None = None) -> pa.Table:
        where = (pc.field("offset") >= first) & (pc.field("offset") <= last)
        lo, hi = first, last
        if only is not None:  # files pruned to the offsets' span; row groups found by reading offsets first
            lo, hi = min(only, default=last + 1), max(only, default=first - 1)
            where &= pc.field("offset").isin(pa.array(sorted(only), pa.int64()))
        t = self.files.read(
            "records",
            columns=["offset", "timestamp", "type", "control_type"],
            where=where,
            prune=lambda f: f.may_hold("offset", lo=lo, hi=hi),
            narrow=None if only is None else ["offset"],
        )
        t = t.sort_by("offset")
        return pa.table(
            {"offset": t["offset"], "timestamp": t["timestamp"], "type": pc.coalesce(t["type"], t["control_type"])}
        )

    def bounds(self) -> tuple[int, int] | None:
        offsets = [
            v for f in self.files.files("records") for v in f.stats.get("offset", (None, None, 0))[:2] if v is not None
        ]
        return log_bounds(min(offsets, default=None), max(offsets, default=None), self.snapshots())

    def offset_at_time(self, ms: int) -> int | None:
        best: int | None = None
        candidates = [f for f in self.files.files("records") if f.may_hold("timestamp", hi=ms)]
        for f in sorted(candidates, key=lambda f: -(f.stats.get("offset", (0, 0, 0))[1] or 0)):
            high = f.stats.get("offset", (None, None, 0))[1]
            if best is not None and high is not None and high <= best:
                break
            t = self.files.read(
                "records",
                columns=["offset", "batch_last_offset"],
                where=pc.field("timestamp") <= ms,
                prune=lambda g, f=f: g.uri == f.uri,
            )
            if t.num_rows:
                last = pc.max(t["batch_last_offset"]).as_py()
                best = last if best is None else max(best, last)
        return best

    def batch_start(self, offset: int) -> int:
        t = self.files.read(
            "records",
            columns=["batch_base_offset"],
            where=pc.field("offset") == offset,
            prune=lambda f: f.may_hold("offset", lo=offset, hi=offset),
        )
        return t["batch_base_offset"][0].as_py() if t.num_rows else offset

    def replay_records(self, first: int, last: int) -> list[LogRecord]:
        return self.log_records(first, last)

    def log_records(self, first: int, last: int) -> list[LogRecord]:
        t = self.files.read(
            "records",
            columns=list(LOG_RECORD_COLUMNS),
            where=(pc.field("offset") >= first) & (pc.field("offset") <= last),
            prune=lambda f: f.may_hold("offset", lo=first, hi=last),
        ).sort_by("offset")
        # column by column (a dict per row would cost about as much as parsing the payloads)
        return list(starmap(LogRecord.from_columns, zip(*(t[c].to_pylist() for c in LOG_RECORD_COLUMNS))))

    def snapshot_records(self, end_offset: int, epoch: int) -> list[LogRecord]:
        t = self.files.read(
            "snapshots",
            where=(pc.field("snapshot_end_offset") == end_offset) & (pc.field("snapshot_epoch") == epoch),
            prune=lambda f: f.may_hold("snapshot_end_offset", lo=end_offset, hi=end_offset),
        )
        rows = t.sort_by("position").to_pylist()
        return [
            LogRecord.from_row(
                {
                    **r,
                    "batch_base_offset": r["position"],
                    "batch_last_offset": r["position"],
                    "is_transactional": False,
                    "producer_id": -1,
                    "producer_epoch": -1,
                },
                "position",
            )
            for r in rows
        ]

    def log_info(self) -> LogInfo:
        from metadata.log.summary import (  # pydantic: only here
            SnapshotInfo,
            compose,
            newest_snapshot_end,
            undecoded_rows,
        )

        snaps = self.files.read(
            "snapshots",
            columns=[
                "snapshot_end_offset",
                "snapshot_epoch",
                "last_contained_timestamp",
                "position",
                "is_control",
                "type",
                "api_key",
                "version",
            ],
        )
        grouped = (
            snaps.group_by(["snapshot_end_offset", "snapshot_epoch"])
            .aggregate([("snapshot_end_offset", "count"), ("last_contained_timestamp", "max")])
            .to_pylist()
        )
        snapshots = sorted(
            (
                SnapshotInfo.of(
                    r["snapshot_end_offset"],
                    r["snapshot_epoch"],
                    r["snapshot_end_offset_count"],
                    r["last_contained_timestamp_max"],
                )
                for r in grouped
            ),
            key=lambda s: (s.end_offset, s.epoch),
        )
        records = self.files.read(
            "records", columns=["offset", "timestamp", "is_control", "type", "control_type", "api_key", "version"]
        )
        undecoded = undecoded_rows(records) + undecoded_rows(snaps)
        aggregates = arrow_aggregates(records, newest_snapshot_end(snapshots), undecoded)
        return compose(self.files.uri, aggregates, snapshots, self.files.state().seq)

    def dump(
        self, first: int | None, last: int | None, types: Sequence[str] = (), include_control: bool = False
    ) -> Iterator[DumpRecord]:
        lo, hi = first if first is not None else -(1 << 62), last if last is not None else 1 << 62
        t = self.files.read(
            "records",
            columns=["offset", "timestamp", "is_control", "type", "control_type", "version", "payload"],
            where=(pc.field("offset") >= lo) & (pc.field("offset") <= hi),
            prune=lambda f: f.may_hold("offset", lo=lo, hi=hi),
        )
        return dump_rows(t, types, include_control)
