"""``kraft-replay check``: verify a lake and report what is wrong with it.

Each check is one function registered with :func:`lake_check`; it gets a :class:`CheckContext` (the lake,
its committed state, the tables that read without error) and returns its findings. Checks run in
registration order; a check whose tables could not be read says so instead of failing.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property

from pydantic import BaseModel
from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from metadata.lake import INGESTS, LEASE, Lake, LakeDamaged, LakeError, LakeState, explain, table_schemas
from metadata.lake_files import LakeFiles
from metadata.log_summary import undecoded_records
from metadata.query import undecoded_rows
from metadata.schema import decodes
from metadata.tables import TYPED_TABLES

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

    def table(self, name: str) -> DataFrame:
        return self.lake.table(name, self.state)

    @cached_property
    def files(self) -> LakeFiles | None:
        """The checked state read in process (delta-rs and pyarrow, as the read commands read it) when the
        lake allows (:attr:`~metadata.lake.Lake.in_process`); else None (read on Spark)."""
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
                ctx.table(name).select(F.max(F.xxhash64(F.to_json(F.struct("*"))))).collect()
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
    rows = (
        ctx.lake.spark.read.format("delta").load(ctx.lake.path(INGESTS)).groupBy("seq").count().orderBy("seq").collect()
    )
    seqs = [r["seq"] for r in rows]
    twice = [f"seq {r['seq']} was committed {r['count']} times" for r in rows if r["count"] > 1]
    found.problems += listed(twice, "seqs committed more than once")
    missing = sorted(set(range(1, max(seqs, default=0) + 1)) - set(seqs))
    if missing:
        found.problems.append(
            f"seqs missing from the chain: {', '.join(map(str, missing[:_SHOWN]))}"
            + (f" (and {len(missing) - _SHOWN} more)" if len(missing) > _SHOWN else "")
        )
    return found


@lake_check("offsets")
def check_offsets(ctx: CheckContext) -> Findings:
    """``records`` holds every offset once from its first to the high-water mark; gaps are listed."""
    found = Findings()
    if not readable(ctx, "records", found):
        return found
    records = ctx.table("records")
    s = records.agg(
        F.min("offset").alias("lo"),
        F.max("offset").alias("hi"),
        F.count("*").alias("n"),
        F.countDistinct("offset").alias("distinct"),
    ).first()
    if s["n"] == 0:
        return found
    if s["distinct"] != s["n"]:
        dupes = records.groupBy("offset").count().where("count > 1").orderBy("offset").limit(_SHOWN).collect()
        found.problems.append(
            f"{s['n'] - s['distinct']} duplicate record rows, e.g. offset "
            + ", ".join(f"{r['offset']} ({r['count']} rows)" for r in dupes)
        )
    if s["hi"] != ctx.state.high_water_mark:
        found.problems.append(
            f"the last offset in records is {s['hi']}, the committed high-water mark {ctx.state.high_water_mark}"
        )
    if s["hi"] - s["lo"] + 1 != s["distinct"]:
        offsets = records.select("offset").distinct()
        gaps = (
            offsets.withColumn("prev", F.lag("offset").over(Window.orderBy("offset")))
            .where(F.col("offset") > F.col("prev") + 1)
            .select((F.col("prev") + 1).alias("from"), (F.col("offset") - 1).alias("to"))
            .orderBy("from")
        )
        total = s["hi"] - s["lo"] + 1 - s["distinct"]
        shown = [
            f"{r['from']}–{r['to']}" if r["from"] != r["to"] else str(r["from"]) for r in gaps.limit(_SHOWN).collect()
        ]
        found.problems.append(
            f"{total} offsets missing between {s['lo']} and {s['hi']}: {', '.join(shown)}"
            + (" …" if gaps.count() > _SHOWN else "")
        )
    return found


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
    names = [n for n in TYPED_TABLES if n not in unreadable]
    owner = F.lit(None).cast("string")
    for n in names:
        owner = F.when(F.col("type").isin(*TYPED_TABLES[n].record_types), F.lit(n)).otherwise(owner)
    expected = ctx.table("records").select("offset", owner.alias("t")).where("t IS NOT NULL")
    actual = None
    for n in (n for n in names if n in ctx.state.versions):
        part = ctx.table(n).select("offset", F.lit(n).alias("t"))
        actual = part if actual is None else actual.unionByName(part)
    if actual is None:
        actual = expected.limit(0)
    for what, rows in (
        ("lacks {n} rows of records", expected.exceptAll(actual)),
        ("holds {n} rows not in records", actual.exceptAll(expected)),
    ):
        for r in rows.groupBy("t").agg(F.count("*").alias("n"), F.min("offset").alias("first")).orderBy("t").collect():
            found.problems.append(f"table {r['t']} {what.format(n=r['n'])} (first at offset {r['first']})")
    return found


@lake_check("snapshots")
def check_snapshots(ctx: CheckContext) -> Findings:
    """Each stored snapshot has positions 0 … n-1 once, a header first and a footer last."""
    found = Findings()
    if not readable(ctx, "snapshots", found):
        return found
    rows = (
        ctx.table("snapshots")
        .groupBy("snapshot_end_offset", "snapshot_epoch")
        .agg(
            F.count("*").alias("n"),
            F.countDistinct("position").alias("distinct"),
            F.min("position").alias("lo"),
            F.max("position").alias("hi"),
            F.max(F.when(F.col("control_type") == "SNAPSHOT_HEADER", F.col("position"))).alias("header"),
            F.max(F.when(F.col("control_type") == "SNAPSHOT_FOOTER", F.col("position"))).alias("footer"),
        )
        .orderBy("snapshot_end_offset", "snapshot_epoch")
        .collect()
    )
    bad = []
    for r in rows:
        name = f"snapshot {r['snapshot_end_offset']}-{r['snapshot_epoch']}"
        if r["distinct"] != r["n"] or r["lo"] != 0 or r["hi"] != r["n"] - 1:
            bad.append(f"{name}: {r['n']} rows at positions {r['lo']}–{r['hi']} ({r['distinct']} distinct)")
        if r["header"] != 0:
            bad.append(f"{name}: no SNAPSHOT_HEADER at position 0")
        if r["footer"] != r["hi"]:
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
    snapshots = ctx.table("snapshots") if readable(ctx, "snapshots", found) else None
    groups = undecoded_records(undecoded_rows(ctx.table("records"), snapshots))
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
        raise ValueError(f"no check named {', '.join(unknown)} (checks: {', '.join(CHECKS)})")
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
