"""Ingest: decode inputs, stage them, then append what is new to the Delta lake — in process or on Spark.

1. Discover the input files, skip what the lake holds (a segment read to its end before, from the batch the
   lake's ``_ingests`` marked there: :func:`plan`), and cut large segments into byte ranges at batch boundaries.
2. Choose the engine (:func:`~metadata.lake.state.choose_engine`): a lake on a local path whose input fits one
   machine is ingested **in process** (:mod:`metadata.lake.ingest_local`: the decoder on this machine's cores, tables
   written with delta-rs, no JVM); a larger input, a remote lake or a named Spark master **on Spark**
   (:mod:`metadata.lake.ingest_spark`). Both write the same tables and rows, through one commit protocol.
3. Decode: one task per file or range, each returning counts, offset spans and the issues the readers reported;
   in process the records stay in memory, on Spark each task writes them as Parquet partitioned by record type
   (:mod:`metadata.lake.staging`).
4. Any fatal issue (corrupt batch without ``--allow-gaps``, unknown record type without ``--skip-unknown``,
   conflicting records for one offset) stops here: nothing was committed.
5. As one lake transaction (:meth:`metadata.lake.protocol.Lake.transact`: under the lake's lease, on top of the
   committed state, retried if another writer overtakes it): append only the staged records whose offset the committed
   ``records`` lacks (no comparison at all when every staged offset is beyond the committed high-water mark) to
   the typed tables, four at a time, then to ``records``; and to ``snapshots`` only snapshots (end offset, epoch)
   not yet stored. One Delta commit per table (offset-filtered appends: re-runs add nothing); what is derived
   from the records (the temporal image) in the same transaction; then commit the new table versions in
   ``_ingests``.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
import uuid
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import asdict, replace
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from pydantic import BaseModel

from metadata.lake.protocol import COMPACT_AT_FILES, INGESTS, Commit, Compactor, Lake, LakeState, LakeTransaction, Lease
from metadata.lake.staging import IngestError, Task, remove, staging_dir
from metadata.lake.state import choose_engine
from metadata.log.readers import (
    BatchMark,
    InputFile,
    InputKind,
    ReadOptions,
    batch_mark,
    batch_offset_at,
    discover,
    first_batch_after,
    last_batch,
    plan_ranges,
)
from metadata.log.schema.releases import kafka_releases

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

MAX_SPLIT_BYTES = 64 << 20
MIN_SPLIT_BYTES = 4 << 20


class LakeChange(BaseModel):
    """What an ingest is changing, for what is derived from the records (the temporal image) inside the
    same lake transaction: the transaction (its committed base, and where derived tables are written),
    the state with the records written so far (and their high-water mark), the lowest offset added, the
    snapshots added, and a staging directory of this attempt."""

    model_config = {"arbitrary_types_allowed": True}

    txn: LakeTransaction
    after: LakeState
    first_added: int | None
    snapshots_added: list[tuple[int, int]]
    staging: str


Derive = Callable[[LakeChange], None]
"""Writes tables derived from the ingest's records through ``change.txn`` (committed with the ingest)."""


class IngestReport(BaseModel):
    """What an ingest read and what it added."""

    lake: str
    run_id: str
    engine: str  # local (in process) or spark
    files: list[str]
    bytes_read: int
    bytes_skipped: int  # segment bytes not decoded: every offset in them is in the lake already
    records_decoded: int
    records_added: int
    snapshot_records_added: int
    snapshots: list[str]
    by_type: dict[str, int]
    control_records: int
    first_offset: int | None
    last_offset: int | None
    high_water_mark: int
    warnings: list[str]
    skipped: list[str]
    seconds: float
    seq: int | None = None  # the _ingests seq committed; None when nothing was (commit_empty=False)


class Steps(Protocol):
    """What an engine does with the records of one ingest (:mod:`metadata.lake.ingest_local`,
    :mod:`metadata.lake.ingest_spark`): ``Staged`` is its form of decoded records (a pyarrow table, a Spark
    DataFrame)."""

    lake: Lake
    parallelism: int

    def stage(self, tasks: list[Task], options: ReadOptions, staging: str) -> tuple[Any, Sequence[Mapping]]:
        """Decode ``tasks``: (the decoded records, the tasks' summary rows:
        :data:`metadata.lake.staging.SUMMARY_SCHEMA`)."""

    def log(self, staged: Any) -> Any:
        """The log records among ``staged`` (not a snapshot's)."""

    def check_conflicts(self, log: Any) -> None:
        """:class:`IngestError` if two inputs hold different metadata records at one offset (divergent logs)."""

    def dedupe(self, log: Any) -> Any:
        """One row per offset (a segment and its dump-log text): the fullest payload, then the first file."""

    def groups(self, log: Any) -> Sequence[Mapping]:
        """Counts and offset spans of ``log`` per (file, record type, control flag), as the tasks report them."""

    def new_rows(
        self, state: LakeState, log: Any, staged: Any, stats: dict, snapshot_ids: list[tuple[int, int]]
    ) -> tuple[Any, int, int | None, list[tuple[int, int]]]:
        """(the log records ``state`` lacks, their count, their lowest offset, the snapshot ids it lacks)."""

    def write(
        self, txn: LakeTransaction, fresh: Any, staged: Any, by_type: dict[str, int], new_ids: list[tuple[int, int]]
    ) -> int:
        """Append ``fresh`` to the typed tables and ``records``, and the snapshots ``new_ids`` to ``snapshots``
        (one commit per table); the snapshot records added."""

    def release(self, fresh: Any) -> None:
        """Free what :meth:`new_rows` kept for the writes."""

    def writing(self) -> contextlib.AbstractContextManager[None]:
        """Around the lake transaction (a progress bar of its Spark jobs)."""


def split_size(total_bytes: int, parallelism: int) -> int:
    """Byte-range size giving every core about two decode tasks, within [4 MiB, 64 MiB]."""
    return max(MIN_SPLIT_BYTES, min(MAX_SPLIT_BYTES, -(-total_bytes // max(1, 2 * parallelism))))


class Plan(NamedTuple):
    """What an ingest decodes: the decode tasks, the tasks skipped (every offset in them is in the lake), and the
    :class:`~metadata.log.readers.BatchMark` of the last whole batch of every segment that ends its directory's
    log, by absolute path (what the ingest records in ``_ingests``)."""

    tasks: list[Task]
    skipped: list[Task]
    marks: dict[str, BatchMark]


def plan(
    paths: Sequence[str],
    split_bytes: int | None = None,
    parallelism: int = 2,
    stored: tuple[int, int] | None = None,
    stored_snapshots: Collection[tuple[int, int]] = (),
    marks: Mapping[str, BatchMark] | None = None,
) -> Plan:
    """The plan of an ingest of ``paths``; ``split_bytes`` defaults to :func:`split_size` of the inputs' total
    size.

    ``stored`` = (first, last) offsets the lake holds without a gap: segment ranges whose offsets all
    lie inside it are skipped, so a re-run, or the next ingest of a growing log, decodes only what
    is new. A segment followed by another in its directory holds the offsets from its first batch to the next
    one's first: one wholly inside is skipped without reading further. A segment holding the batch an earlier
    ingest marked at the end of a segment of its name (``marks``, by path: :func:`_resume_mark`), that same batch
    at that position (:func:`batch_mark`, CRC checked), is skipped up to it when the offsets before it are stored,
    without hopping over the headers before it (a segment rewritten since holds another batch there, and is read as
    if it had no mark). The rest is cut into ranges; a range's
    offsets run from its first batch to the batch that starts the next range or the next segment of its
    directory; a range whose end is unknown (the last of its directory) is decoded from its first batch holding an
    offset beyond ``last`` (found by hopping over batch headers: a live segment's growth is all that is decoded
    again), and skipped if it holds none. A snapshot whose (end offset, epoch) is in ``stored_snapshots``
    (``bootstrap.checkpoint``: (0, -1)) is skipped.
    """
    found = [f for path in paths for f in discover(path)]
    split = split_bytes or split_size(sum(f.size for f in found), parallelism)
    files = list({f.path: f for f in found}.values())  # a file named twice is read once
    skip: list[Task] = [(f, 0, None) for f in files if _snapshot_id(f) in stored_snapshots]
    files = [f for f in files if _snapshot_id(f) not in stored_snapshots]
    segments = sorted(
        (f for f in files if f.kind is InputKind.SEGMENT), key=lambda f: (os.path.dirname(f.path), f.base_offset)
    )
    following = {
        a.path: b for a, b in zip(segments, segments[1:]) if os.path.dirname(a.path) == os.path.dirname(b.path)
    }

    def inside(lo: int | None) -> bool:
        return stored is not None and lo is not None and stored[0] <= lo <= stored[1]

    keep: list[Task] = []
    recorded: dict[str, BatchMark] = {}
    for f in files:
        begin = 0
        if f.kind is InputKind.SEGMENT and stored is not None:
            lo = batch_offset_at(f, 0)
            after = batch_offset_at(following[f.path], 0) if f.path in following else None
            if inside(lo) and after is not None and after - 1 <= stored[1]:
                skip.append((f, 0, None))
                continue
            mark = _resume_mark(f, marks or {}, stored[1]) if inside(lo) else None
            if mark is not None:
                begin = mark.position
                skip.append((f, 0, begin))
        last = begin
        for start, end in plan_ranges(f, split, begin):
            task, last = (f, start, end), start
            if f.kind is InputKind.SEGMENT and stored is not None:
                lo = batch_offset_at(f, start)
                after = (
                    batch_offset_at(f, end)
                    if end is not None
                    else batch_offset_at(following[f.path], 0)
                    if f.path in following
                    else None
                )
                if inside(lo) and after is not None and after - 1 <= stored[1]:
                    skip.append(task)
                    continue
                if inside(lo) and after is None:  # the end of its directory's log: decode only what lies beyond
                    new = first_batch_after(f, start, end, stored[1])
                    if new is None:
                        skip.append(task)
                        continue
                    if new > start:
                        skip.append((f, start, new))
                        task, last = (f, new, end), new
            keep.append(task)
        if f.kind is InputKind.SEGMENT and f.path not in following and (mark := last_batch(f, last)) is not None:
            recorded[os.path.abspath(f.path)] = mark
    return Plan(keep, skip, recorded)


def _resume_mark(f: InputFile, marks: Mapping[str, BatchMark], last: int) -> BatchMark | None:
    """The mark of an earlier ingest that segment ``f`` holds, below which every offset is at most ``last``: one
    recorded for a segment of ``f``'s name (its own path first; a copy of the log elsewhere has the same names)
    whose batch ``f`` holds at that position (:func:`batch_mark`); None if none."""
    path, name = os.path.abspath(f.path), os.path.basename(f.path)
    for at, mark in sorted(marks.items(), key=lambda item: item[0] != path):
        if os.path.basename(at) == name and mark.base_offset - 1 <= last and batch_mark(f, mark.position) == mark:
            return mark
    return None


def _snapshot_id(f: InputFile) -> tuple[int, int] | None:
    """The (end offset, epoch) a snapshot file is stored under (``bootstrap.checkpoint``: epoch -1); else None."""
    if f.kind is InputKind.BOOTSTRAP:
        return 0, -1
    return (f.end_offset, f.epoch) if f.kind is InputKind.SNAPSHOT else None  # type: ignore[return-value]


def _stored_snapshots(lake: Lake, state: LakeState) -> set[tuple[int, int]]:
    """The (end offset, epoch) of every snapshot the committed state holds."""
    if "snapshots" not in state.versions:
        return set()
    files = lake.files(state)
    if files is not None:
        ids = files.read("snapshots", columns=["snapshot_end_offset", "snapshot_epoch"])
        return set(zip(ids["snapshot_end_offset"].to_pylist(), ids["snapshot_epoch"].to_pylist()))
    rows = lake.table("snapshots", state).select("snapshot_end_offset", "snapshot_epoch").distinct().collect()
    return {(r[0], r[1]) for r in rows}


def _stored_span(lake: Lake, state: LakeState) -> tuple[int, int] | None:
    """(first, last) offsets of the committed log when it has no gap, else None."""
    if "records" not in state.versions:
        return None
    files = lake.files(state)
    stored = files.files("records") if files is not None and not files.masked("records") else None
    if stored is not None and all(f.stats.get("offset", (None,))[0] is not None for f in stored):
        # the files' statistics: the table is only appended to and compacted (no deletion vectors)
        first, count = min((f.stats["offset"][0] for f in stored), default=None), sum(f.rows for f in stored)
    elif files is not None:
        import pyarrow.compute as pc

        offsets = files.read("records", columns=["offset"])["offset"]
        first, count = pc.min(offsets).as_py(), len(offsets)
    else:
        from pyspark.sql import functions as F

        first, count = lake.table("records", state).agg(F.min("offset"), F.count(F.lit(1))).first()
    return (first, state.high_water_mark) if count and count == state.high_water_mark - first + 1 else None


def _steps(
    lake_location: str,
    engine: str,
    spark: SparkSession | None,
    paths: Sequence[str],
    split_bytes: int | None,
    progress: bool,
) -> tuple[Steps, LakeState, Plan]:
    """The engine's steps for this ingest (:func:`~metadata.lake.state.choose_engine`: in process when the input
    fits, so the plan comes first), the lake's committed state and the plan."""
    if choose_engine(lake_location, engine) == "local":
        from metadata.lake.ingest_local import LocalSteps

        steps: Steps = LocalSteps(Lake(lake_location), progress)
        committed = steps.lake.committed()
        planned = _plan(steps, committed, paths, split_bytes)
        if choose_engine(lake_location, engine, input_bytes=_bytes(planned.tasks)) == "local":
            return steps, committed, planned
    from metadata.lake.ingest_spark import SparkSteps
    from metadata.lake.spark import get_spark

    steps = SparkSteps(Lake(lake_location, spark or get_spark()), progress)
    committed = steps.lake.committed()
    return steps, committed, _plan(steps, committed, paths, split_bytes)


def _plan(steps: Steps, committed: LakeState, paths: Sequence[str], split_bytes: int | None) -> Plan:
    """:func:`plan` against what the committed state holds (and the segments' marks its ingest recorded)."""
    lake = steps.lake
    return plan(
        paths,
        split_bytes,
        steps.parallelism,
        _stored_span(lake, committed),
        _stored_snapshots(lake, committed),
        {path: BatchMark(**mark) for path, mark in committed.segment_marks.items()},
    )


def lake_release(committed: LakeState, kafka_version: str | None) -> str:
    """The Kafka release line an ingest into a lake at ``committed`` follows (see :func:`ingest`)."""
    lines = [r.line for r in kafka_releases()]
    if kafka_version is not None and kafka_version not in lines:
        raise IngestError(
            f"Kafka {kafka_version} is not supported: kraft-replay follows Kafka {lines[0]} to {lines[-1]}"
        )
    if committed.seq == 0:
        return kafka_version or lines[-1]
    if committed.kafka_version is None:
        raise IngestError(
            "this lake was written before kraft-replay followed each Kafka release's replay rules: ingest into a "
            "new lake (its temporal image would mix two rule sets)"
        )
    if kafka_version is not None and kafka_version != committed.kafka_version:
        raise IngestError(
            f"this lake follows Kafka {committed.kafka_version}'s replay rules (its first ingest's --kafka-version); "
            f"ingest into a new lake to follow Kafka {kafka_version}'s"
        )
    return committed.kafka_version


def ingest(
    paths: Sequence[str],
    lake_location: str,
    *,
    options: ReadOptions | None = None,
    engine: str = "auto",
    spark: SparkSession | None = None,
    split_bytes: int | None = None,
    progress: bool = True,
    wait: float = 600.0,
    commit_empty: bool = True,
    on_wait: Callable[[Lease], None] | None = None,
    derive: Derive | None = None,
    compactors: Mapping[str, Compactor] | None = None,
    kafka_version: str | None = None,
) -> IngestReport:
    """Ingest log directories / segments / snapshots / dump-log texts into the lake; idempotent.

    ``kafka_version``: the Kafka release line whose replay rules the temporal image follows, recorded in the
    lake (a new lake: default the newest; a lake that has one keeps it, and another is an error).
    ``engine``: ``local`` (in process), ``spark``, or ``auto`` (``KRAFT_REPLAY_ENGINE``, else in process for a
    lake on a local path whose input fits one machine, unless a Spark master is named in the environment;
    :func:`~metadata.lake.state.choose_engine`); ``spark``: the session to use when Spark runs.
    The inputs are decoded first; then, as one lake transaction (:meth:`Lake.transact`, which waits at most
    ``wait`` seconds for another writer's lease), what the committed state lacks is appended, ``derive`` writes
    what is derived from the records (the temporal image) in the same transaction, a table the transaction
    wrote that now has more than :data:`~metadata.lake.protocol.COMPACT_AT_FILES` data files is compacted
    (``compactors``: per table, else Delta ``OPTIMIZE``), and all is committed. ``commit_empty=False``: when the
    inputs hold nothing new, nothing is committed (``seq`` None in the report).
    """
    options = options or ReadOptions()
    started = time.monotonic()
    steps, committed, (tasks, skipped, marks) = _steps(lake_location, engine, spark, paths, split_bytes, progress)
    lake = steps.lake
    release = lake_release(committed, kafka_version)
    run_id = uuid.uuid4().hex
    staging = staging_dir(lake.uri, run_id)
    try:
        _make_dir(staging)
        staged, summary = steps.stage(tasks, options, staging)
        issues = [r for r in summary if r["issue_severity"] is not None]
        fatal = [i["issue"] for i in issues if i["issue_severity"] == "fatal"]
        if fatal:
            raise IngestError(fatal[0] + (f" (and {len(fatal) - 1} more)" if len(fatal) > 1 else ""))
        log = steps.log(staged)
        spans, by_type, stats = _summarise(
            [r for r in summary if r["issue_severity"] is None and r["snapshot_end_offset"] is None]
        )
        if any(b["lo"] <= a["hi"] for a, b in zip(spans, spans[1:])):  # inputs overlap: check, then dedupe
            steps.check_conflicts(log)
            log = steps.dedupe(log)
            _, by_type, stats = _summarise(steps.groups(log))
        snapshot_ids = sorted(
            {
                (r["snapshot_end_offset"], r["snapshot_epoch"])
                for r in summary
                if r["issue_severity"] is None and r["snapshot_end_offset"] is not None
            }
        )
        written: dict = {"added": 0, "snap_added": 0, "snapshots": [], "hwm": committed.high_water_mark}
        seq: int | None = None

        def body(txn: LakeTransaction) -> Commit:
            fresh, added, first_added, new_ids = steps.new_rows(txn.base, log, staged, stats, snapshot_ids)
            try:
                snap_added = steps.write(txn, fresh if added else None, staged, by_type, new_ids)
            finally:
                steps.release(fresh)
            hwm = max(txn.base.high_water_mark, stats["hi"] if stats["hi"] is not None else -1)
            if derive is not None:
                derive(
                    LakeChange(
                        txn=txn,
                        after=replace(txn.state(), high_water_mark=hwm, kafka_version=release),
                        first_added=first_added,
                        snapshots_added=new_ids,
                        staging=os.path.join(staging, f"derived-{txn.attempt}"),
                    )
                )
            txn.compact(txn.written, compactors, at_files=COMPACT_AT_FILES)
            names = ["bootstrap.checkpoint" if p < 0 else f"{e:020d}-{p:010d}" for e, p in new_ids]
            written.update(added=added, snap_added=snap_added, snapshots=names, hwm=hwm)
            return Commit(
                inputs=[os.path.abspath(p) for p in paths],
                records_added=added,
                snapshots_added=len(names),
                high_water_mark=hwm,
                kafka_version=release,
                segment_marks={path: asdict(mark) for path, mark in marks.items()},
            )

        if commit_empty or _holds_news(steps, committed, log, staged, stats, snapshot_ids):
            with steps.writing():
                seq = lake.transact(body, run_id=run_id, wait=wait, on_wait=on_wait).seq
        gaps = [
            f"non-consecutive offsets: {a['file']} ends at {a['hi']}, {b['file']} starts at {b['lo']}"
            for a, b in zip(spans, spans[1:])
            if b["lo"] > a["hi"] + 1
        ]
    finally:
        remove(staging)
    return IngestReport(
        lake=lake.uri,
        run_id=run_id,
        engine="spark" if lake.on_spark else "local",
        files=sorted({t[0].path for t in tasks + skipped}),
        bytes_read=_bytes(tasks),
        bytes_skipped=_bytes(skipped),
        records_decoded=stats["n"],
        records_added=written["added"],
        snapshot_records_added=written["snap_added"],
        snapshots=written["snapshots"],
        by_type=dict(sorted(by_type.items())),
        control_records=int(stats["control"] or 0),
        first_offset=stats["lo"],
        last_offset=stats["hi"],
        high_water_mark=written["hwm"],
        warnings=[i["issue"] for i in issues if i["issue_severity"] == "warning"] + gaps,
        skipped=[i["issue"] for i in issues if i["issue_severity"] == "error"],
        seconds=time.monotonic() - started,
        seq=seq,
    )


Inputs = tuple[tuple[str, int, int], ...]
"""What a round of ``--follow`` found: every input file's (path, size, modification time in ns)."""


def _inputs(paths: Sequence[str]) -> Inputs:
    """The input files as they are now (a directory listing and a ``stat`` per file: no file is read)."""
    found = []
    for path in paths:
        for f in discover(path):
            try:
                found.append((f.path, f.size, os.stat(f.path).st_mtime_ns))
            except FileNotFoundError:  # removed meanwhile (retention): the next round sees the change
                found.append((f.path, -1, -1))
    return tuple(sorted(found))


def follow(
    paths: Sequence[str],
    lake_location: str,
    *,
    interval: float,
    stop: threading.Event,
    on_round: Callable[[int, IngestReport | None, Exception | None], None],
    **options: Any,
) -> int:
    """Ingest ``paths`` (a live log directory) every ``interval`` seconds until ``stop`` is set; the number
    of rounds. Each round is :func:`ingest` committing only what is new (``commit_empty=False``); a round
    that fails (bad input, another writer's lease held past ``wait``) is reported to ``on_round`` and the
    next one tries again. A round interrupted midway leaves nothing visible (see :mod:`metadata.lake.protocol`).

    A round whose input files are what the last round that succeeded read (the same files, sizes and
    modification times) while the lake's ``_ingests`` is at the version that round left finds nothing new
    without reading a file: a committed state only grows, so what held nothing new then holds nothing new now.
    It reads a directory listing, a ``stat`` per file and the ``_ingests`` log listing (milliseconds), and
    reports what that round reported, with nothing decoded or added."""
    rounds = 0
    seen: tuple[Inputs, int | None] | None = None  # the inputs a round read, the _ingests version it left
    last: IngestReport | None = None
    lake = Lake(lake_location)
    while not stop.is_set():
        rounds += 1
        started = time.monotonic()
        try:
            inputs = _inputs(paths)
            if last is not None and seen == (inputs, lake.current_version(INGESTS)):
                report = last.model_copy(
                    update={
                        "run_id": uuid.uuid4().hex,
                        "bytes_read": 0,
                        "bytes_skipped": sum(size for _, size, _ in inputs),
                        "records_decoded": 0,
                        "records_added": 0,
                        "snapshot_records_added": 0,
                        "snapshots": [],
                        "seconds": time.monotonic() - started,
                        "seq": None,
                    }
                )
            else:
                report = ingest(paths, lake_location, commit_empty=False, **options)
                seen, last = (inputs, lake.current_version(INGESTS)), report
        except Exception as exc:  # noqa: BLE001 — a live log's next round may succeed
            seen = None
            on_round(rounds, None, exc)
        else:
            on_round(rounds, report, None)
        stop.wait(interval)
    return rounds


def _make_dir(path: str) -> None:
    """Create ``path``; a concurrent ingest may remove an empty parent (its ``_staging``) meanwhile."""
    for _ in range(5):
        try:
            os.makedirs(path, exist_ok=True)
            return
        except FileNotFoundError:
            continue
    os.makedirs(path, exist_ok=True)


def _holds_news(
    steps: Steps, state: LakeState, log: Any, staged: Any, stats: dict, snapshot_ids: list[tuple[int, int]]
) -> bool:
    """Whether the staged inputs hold records or snapshots the committed ``state`` lacks (a committed state
    only grows: nothing new for it is nothing new for any later one)."""
    fresh, added, _, new_ids = steps.new_rows(state, log, staged, stats, snapshot_ids)
    steps.release(fresh)
    return bool(added or new_ids)


def _summarise(groups: Sequence[Mapping]) -> tuple[list[dict], dict[str, int], dict]:
    """Per-file offset spans (by first offset), counts by type and totals of the log's groups."""
    files: dict[str, dict] = {}
    for r in groups:
        span = files.setdefault(r["source_file"], {"file": r["source_file"], "lo": r["lo"], "hi": r["hi"]})
        span["lo"], span["hi"] = min(span["lo"], r["lo"]), max(span["hi"], r["hi"])
    by_type: dict[str, int] = {}
    for r in groups:
        if r["type"] is not None:
            by_type[r["type"]] = by_type.get(r["type"], 0) + r["n"]
    stats = {
        "n": sum(r["n"] for r in groups),
        "control": sum(r["n"] for r in groups if r["is_control"]),
        "lo": min((r["lo"] for r in groups), default=None),
        "hi": max((r["hi"] for r in groups), default=None),
    }
    return sorted(files.values(), key=lambda f: (f["lo"], f["hi"])), by_type, stats


def _bytes(tasks: list[Task]) -> int:
    return sum((f.size if end is None else end) - start for f, start, end in tasks)
