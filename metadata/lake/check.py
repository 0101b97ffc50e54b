"""``kraft-replay check``: verify a lake and report what is wrong with it.

Each check is one function registered with :func:`lake_check`; it gets a :class:`CheckContext` (the lake,
its committed state, the tables that read without error) and returns its findings. Checks run in
registration order; a check whose tables could not be read says so instead of failing. The checks compute on
pyarrow tables: a lake on a local path is read in process (delta-rs and pyarrow, no JVM), any other lake's
columns are read on Spark and handed over as Arrow.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pydantic import BaseModel

from metadata.lake.files import LakeFiles
from metadata.lake.protocol import LEASE, Lake, LakeDamaged, LakeError, LakeState, explain, table_schemas
from metadata.lake.tables import TYPED_TABLES
from metadata.log.errors import BadInput
from metadata.log.schema import decodes
from metadata.log.summary import undecoded_records, undecoded_rows

_SHOWN = 5  # problems of one kind listed one by one; the rest are counted


class CheckResult(BaseModel):
    """The findings of one check: problems fail the lake, notes do not."""

    name: str
    ok: bool
    problems: list[str]
    notes: list[str]


class CheckReport(BaseModel):
    lake: str
    seq: int | None  # the newest committed ingest, if it could be read
    high_water_mark: int | None
    ok: bool
    checks: list[CheckResult]


@dataclass
class CheckContext:
    lake: Lake
    state: LakeState
    readable: set[str] = field(default_factory=set)  # tables read completely at their committed version

    def read(self, name: str, columns: Sequence[str]) -> pa.Table:
        """``columns`` of table ``name`` at its committed version: in process, or on Spark."""
        if self.files is not None:
            return self.files.read(name, columns=columns)
        return self.lake.table(name, self.state).select(*columns).toArrow()

    @cached_property
    def files(self) -> LakeFiles | None:
        """The checked state read in process (delta-rs and pyarrow, as the read commands read it) when the
        lake allows (:attr:`~metadata.lake.protocol.Lake.in_process`); else None (read on Spark)."""
        return self.lake.files(self.state)


@dataclass
class Findings:
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


CHECKS: dict[str, Callable[[CheckContext], Findings]] = {}


def lake_check(name: str) -> Callable[[Callable[[CheckContext], Findings]], Callable[[CheckContext], Findings]]:
    """Register a check (run by :func:`check_lake` in registration order)."""

    def register(fn: Callable[[CheckContext], Findings]) -> Callable[[CheckContext], Findings]:
        CHECKS[name] = fn
        return fn

    return register


def listed(items: list[str], what: str) -> list[str]:
    return items[:_SHOWN] + ([f"… and {len(items) - _SHOWN} more {what}"] if len(items) > _SHOWN else [])


def readable(ctx: CheckContext, name: str, found: Findings) -> bool:
    """Whether table ``name`` is committed and was read completely (a note says so when it was not)."""
    if name in ctx.state.versions and name not in ctx.readable:
        found.notes.append(f"skipped: {name} is not readable")
    return name in ctx.readable


def _failure(exc: BaseException, lake: Lake, table: str, version: int | None) -> str:
    return explain(exc, lake.uri, table, version) or " ".join(str(exc).split())[:300]


@lake_check("tables")
def check_tables(ctx: CheckContext) -> Findings:
    """Every table the newest ingest names reads completely (every file, every column) at its version;
    uncommitted versions and tables, and the lease, are noted."""
    found = Findings()
    lake, state = ctx.lake, ctx.state
    latest = lake.current_versions(list(dict.fromkeys([*table_schemas(), *state.versions, LEASE])))
    for name, version in sorted(state.versions.items()):
        try:
            if ctx.files is not None:  # every file, every column, in process
                ctx.files.read(name)
            else:  # every row and column decoded (Delta refuses a noop write of a DV table at a pinned version)
                from pyspark.sql import functions as F

                lake.table(name, state).select(F.max(F.xxhash64(F.to_json(F.struct("*"))))).collect()
        except Exception as exc:  # noqa: BLE001 — every failure is a finding
            found.problems.append(str(exc) if isinstance(exc, LakeDamaged) else _failure(exc, lake, name, version))
            continue
        ctx.readable.add(name)
    for name, version in sorted(state.versions.items()):
        if name in ctx.readable and (current := latest.get(name)) is not None and current > version:
            found.notes.append(
                f"table {name}: versions {version + 1}–{current} are not committed (an interrupted "
                "writer's, or one in progress; the next ingest undoes leftovers)"
            )
    for name, current in latest.items():
        if name != LEASE and name not in state.versions and current is not None:
            found.notes.append(
                f"table {name} exists but no ingest committed it (an interrupted first ingest's; "
                "the next ingest replaces it)"
            )
    if latest[LEASE] is not None:
        lease = lake.lease()
        if lease is not None and not lease.free(state.seq):
            found.notes.append(
                f"the lease is held by {lease.holder} (run {lease.owner}) until "
                f"{lease.expires_at:%Y-%m-%d %H:%M:%S} UTC: a writer is at work"
            )
    return found


@lake_check("ingests")
def check_ingests(ctx: CheckContext) -> Findings:
    """The ``_ingests`` chain is linear: seqs 1 … N, each once."""
    found = Findings()
    counts = Counter(ctx.lake.store.seqs()["seq"].to_pylist())
    twice = [f"seq {seq} was committed {n} times" for seq, n in sorted(counts.items()) if n > 1]
    found.problems += listed(twice, "seqs committed more than once")
    missing = sorted(set(range(1, max(counts, default=0) + 1)) - set(counts))
    if missing:
        found.problems.append(
            f"seqs missing from the chain: {', '.join(map(str, missing[:_SHOWN]))}"
            + (f" (and {len(missing) - _SHOWN} more)" if len(missing) > _SHOWN else "")
        )
    return found


def _ranges(values: np.ndarray) -> list[str]:
    """Sorted distinct integers as ranges (``3``, ``5–9``)."""
    if not len(values):
        return []
    breaks = np.flatnonzero(np.diff(values) != 1)
    starts, ends = values[np.r_[0, breaks + 1]], values[np.r_[breaks, len(values) - 1]]
    return [f"{a}–{b}" if a != b else str(a) for a, b in zip(starts.tolist(), ends.tolist())]


@lake_check("offsets")
def check_offsets(ctx: CheckContext) -> Findings:
    """``records`` holds every offset once from its first to the high-water mark; gaps are listed."""
    found = Findings()
    if not readable(ctx, "records", found):
        return found
    offsets = np.sort(ctx.read("records", ["offset"])["offset"].to_numpy(zero_copy_only=False))
    if not len(offsets):
        return found
    distinct, counts = np.unique(offsets, return_counts=True)
    lo, hi = int(offsets[0]), int(offsets[-1])
    if len(distinct) != len(offsets):
        dupes = [f"{o} ({n} rows)" for o, n in zip(distinct[counts > 1][:_SHOWN].tolist(), counts[counts > 1].tolist())]
        found.problems.append(f"{len(offsets) - len(distinct)} duplicate record rows, e.g. offset " + ", ".join(dupes))
    if hi != ctx.state.high_water_mark:
        found.problems.append(
            f"the last offset in records is {hi}, the committed high-water mark {ctx.state.high_water_mark}"
        )
    if hi - lo + 1 != len(distinct):
        present = np.zeros(hi - lo + 1, dtype=bool)
        present[distinct - lo] = True
        gaps = _ranges(np.flatnonzero(~present) + lo)
        found.problems.append(
            f"{hi - lo + 1 - len(distinct)} offsets missing between {lo} and {hi}: {', '.join(gaps[:_SHOWN])}"
            + (" …" if len(gaps) > _SHOWN else "")
        )
    return found


def _minus(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The multiset difference ``a - b`` of two integer arrays, sorted."""
    values, counts = np.unique(a, return_counts=True)
    other, other_counts = np.unique(b, return_counts=True)
    at = np.searchsorted(other, values)
    matched = (at < len(other)) & (other[np.minimum(at, len(other) - 1)] == values)
    left = counts - np.where(matched, other_counts[np.minimum(at, len(other) - 1)], 0)
    return np.repeat(values, np.maximum(left, 0))


@lake_check("typed")
def check_typed(ctx: CheckContext) -> Findings:
    """Each typed table holds exactly the offsets of its record types in ``records``."""
    found = Findings()
    typed = [n for n in TYPED_TABLES if n in ctx.state.versions]
    if not readable(ctx, "records", found):
        return found
    unreadable = [n for n in typed if n not in ctx.readable]
    if unreadable:
        found.notes.append(f"skipped (not readable): {', '.join(unreadable)}")
    records = ctx.read("records", ["offset", "type"])
    lacks, holds = [], []
    for name in sorted(n for n in TYPED_TABLES if n not in unreadable):
        mine = pc.is_in(records["type"], value_set=pa.array(TYPED_TABLES[name].record_types, pa.string()))
        expected = records.filter(pc.fill_null(mine, False))["offset"].to_numpy(zero_copy_only=False)
        actual = (
            ctx.read(name, ["offset"])["offset"].to_numpy(zero_copy_only=False)
            if name in ctx.state.versions
            else np.array([], dtype=np.int64)
        )
        if len(missing := _minus(expected, actual)):
            lacks.append(f"table {name} lacks {len(missing)} rows of records (first at offset {missing[0]})")
        if len(extra := _minus(actual, expected)):
            holds.append(f"table {name} holds {len(extra)} rows not in records (first at offset {extra[0]})")
    found.problems += lacks + holds
    return found


@lake_check("snapshots")
def check_snapshots(ctx: CheckContext) -> Findings:
    """Each stored snapshot has positions 0 … n-1 once, a header first and a footer last."""
    found = Findings()
    if not readable(ctx, "snapshots", found):
        return found
    rows = ctx.read("snapshots", ["snapshot_end_offset", "snapshot_epoch", "position", "control_type"])
    keys = ["snapshot_end_offset", "snapshot_epoch"]
    shape = {
        (r["snapshot_end_offset"], r["snapshot_epoch"]): r
        for r in rows.group_by(keys, use_threads=False)
        .aggregate([("position", "count"), ("position", "count_distinct"), ("position", "min"), ("position", "max")])
        .to_pylist()
    }
    marks: dict[tuple[int, int, str], int] = {}
    for r in rows.filter(
        pc.is_in(rows["control_type"], value_set=pa.array(["SNAPSHOT_HEADER", "SNAPSHOT_FOOTER"]))
    ).to_pylist():
        at = (r["snapshot_end_offset"], r["snapshot_epoch"], r["control_type"])
        marks[at] = max(marks.get(at, r["position"]), r["position"])
    bad = []
    for (end, epoch), r in sorted(shape.items()):
        n, distinct, lo, hi = r["position_count"], r["position_count_distinct"], r["position_min"], r["position_max"]
        name = f"snapshot {end}-{epoch}"
        if distinct != n or lo != 0 or hi != n - 1:
            bad.append(f"{name}: {n} rows at positions {lo}–{hi} ({distinct} distinct)")
        if marks.get((end, epoch, "SNAPSHOT_HEADER")) != 0:
            bad.append(f"{name}: no SNAPSHOT_HEADER at position 0")
        if marks.get((end, epoch, "SNAPSHOT_FOOTER")) != hi:
            bad.append(f"{name}: no SNAPSHOT_FOOTER at its last position")
    found.problems += listed(bad, "snapshot problems")
    return found


@lake_check("unknown")
def check_unknown(ctx: CheckContext) -> Findings:
    """Records ``ingest --skip-unknown`` kept raw (newer than the schema it read them with): listed, not
    replayed; a note, not a problem. Those this kraft-replay's schema decodes are named as such."""
    found = Findings()
    if not readable(ctx, "records", found):
        return found
    rows = undecoded_rows(ctx.read("records", ["offset", "is_control", "type", "api_key", "version"]))
    if readable(ctx, "snapshots", found):
        columns = ["position", "snapshot_end_offset", "snapshot_epoch", "is_control", "type", "api_key", "version"]
        rows += undecoded_rows(ctx.read("snapshots", columns))
    groups = undecoded_records(rows)
    if not groups:
        return found
    found.notes.append(f"{sum(g.count for g in groups):,} records kept raw by --skip-unknown, not replayed:")
    for g in groups:
        where = [
            f"{what} {', '.join(map(str, items[:_SHOWN]))}{' …' if len(items) > _SHOWN else ''}"
            for what, items in (("offsets", g.offsets), ("in snapshots", g.snapshots))
            if items
        ]
        known = decodes(g.api_key, g.version)
        found.notes.append(
            f"{g.record}: {g.count:,} ({'; '.join(where)})"
            + ("; this kraft-replay decodes them: ingest the sources into a new lake to replay them" if known else "")
        )
    return found


def lake_differences(lake: Lake, reference: Lake) -> list[str]:
    """How the committed state of ``lake`` differs from ``reference``'s, table by table and row by row
    (rows as multisets; a table one lake lacks counts as empty: a lake built in pieces may hold a table
    whose rows a later ingest rewound); empty when they hold the same. (How concurrent ingests are
    checked against one sequential ingest of what they ingested; both lakes on local paths, read in process.)"""
    mine, theirs = LakeFiles(lake.uri), LakeFiles(reference.uri)
    state, expected = mine.state(), theirs.state()
    found = []
    if state.high_water_mark != expected.high_water_mark:
        found.append(f"high-water mark {state.high_water_mark}, expected {expected.high_water_mark}")
    for name in sorted(set(state.versions) | set(expected.versions)):
        a, b = (
            _rows(files, name) if name in s.versions else Counter() for files, s in ((mine, state), (theirs, expected))
        )
        if name not in state.versions or name not in expected.versions:
            present, where = (a, "only here") if name in state.versions else (b, "only in the reference")
            if present:
                found.append(f"table {name} ({where}) holds {present.total()} rows")
        elif a != b:
            found.append(f"table {name}: {(a - b).total()} rows more, {(b - a).total()} rows fewer than expected")
    return found


def _rows(files: LakeFiles, name: str) -> Counter[str]:
    """The rows of a table as a multiset of JSON texts."""
    return Counter(json.dumps(r, sort_keys=True, default=str) for r in files.read(name).to_pylist())


def check_lake(lake: Lake, only: Sequence[str] | None = None) -> CheckReport:
    """Run every registered check (``only``: those named, in registration order; ``tables`` always runs
    first, as the others read only the tables it read completely) on the committed state of ``lake``."""
    unknown = sorted(set(only or ()) - set(CHECKS))
    if unknown:
        raise BadInput(f"no check named {', '.join(unknown)} (checks: {', '.join(CHECKS)})")
    try:
        state = lake.state()
    except LakeError as exc:
        if not lake.exists():
            raise
        return CheckReport(
            lake=lake.uri,
            seq=None,
            high_water_mark=None,
            ok=False,
            checks=[CheckResult(name="ingests", ok=False, problems=[str(exc)], notes=[])],
        )
    ctx = CheckContext(lake, state)
    results = []
    for name, fn in CHECKS.items():
        if only and name not in only and name != "tables":
            continue
        try:
            found = fn(ctx)
        except Exception as exc:  # noqa: BLE001 — a check that cannot run is a finding
            found = Findings(problems=[_failure(exc, lake, name, None)])
        results.append(CheckResult(name=name, ok=not found.problems, problems=found.problems, notes=found.notes))
    return CheckReport(
        lake=lake.uri,
        seq=state.seq,
        high_water_mark=state.high_water_mark,
        ok=all(r.ok for r in results),
        checks=results,
    )
