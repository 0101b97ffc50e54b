"""One replay pass: a base image plus the log records after it, images at several offsets."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import reduce
from typing import Any

from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from image.errors import ReplayError
from image.frames import SCHEMAS
from image.spark import parts as P
from image.spark.plan import SHIFT, Base, Plan, make_plan
from metadata.lake import Lake, LakeState
from metadata.spark import session_id
from metadata.tables import typed_rows


@dataclass
class PassResult:
    """The images of one pass, materialised as one small table (``part``, ``at`` = requested
    offset, ``json`` = the row in the image JSON shape), and the rejected records."""

    table: DataFrame
    errors: list[ReplayError]
    requested: list[int]

    def errors_at(self, offset: int) -> tuple[ReplayError, ...]:
        """The rejected records a replay to ``offset`` (one of :attr:`requested`) meets."""
        return tuple(e for e in self.errors if e.offset is None or e.offset <= offset)

    def part(self, name: str) -> DataFrame:
        """Image part ``name`` for every requested offset (columns ``at`` + the part's)."""
        return (self.table.where(F.col("part") == name)
                .select("at", F.from_json("json", SCHEMAS[name]).alias("r")).select("at", "r.*"))

    def rows(self) -> dict[int, dict[str, list[dict[str, Any]]]]:
        """requested offset → part → rows (one collect)."""
        out: dict[int, dict[str, list[dict[str, Any]]]] = {}
        for r in self.table.where(~F.col("part").startswith("_")).collect():
            out.setdefault(r["at"], {}).setdefault(r["part"], []).append(json.loads(r["json"]))
        return out


_TABLES: dict[tuple[str, str, int, str], DataFrame] = {}


def lake_table(lake: Lake, state: LakeState, name: str) -> DataFrame:
    """``lake.table(name, state)``, one DataFrame per session, table version and ingest: its analysed
    plan holds the Delta snapshot, which time travel would otherwise rebuild (a Spark job) for
    every read."""
    key = (session_id(lake.spark), lake.path(name), state.versions.get(name, -1), state.run_id)
    if key not in _TABLES:
        if len(_TABLES) > 256:
            _TABLES.clear()
        _TABLES[key] = lake.table(name, state)
    return _TABLES[key]


class Run:
    """The context the part transforms share (:class:`image.spark.parts.Context`)."""

    def __init__(self, lake: Lake, state: LakeState, plan: Plan, lenient: bool) -> None:
        self.lake, self.state, self.plan, self.lenient = lake, state, plan, lenient
        self.spark: SparkSession = lake.spark
        self._errors: list[DataFrame] = []
        self._collecting = True
        self._cached: dict[str, DataFrame] = {}
        # set by parts(): topic incarnations, valid topic removals, config events
        self.inc: DataFrame | None = None
        self.removed: DataFrame | None = None
        self.config_events: DataFrame | None = None

    @property
    def base(self) -> Base:
        return self.plan.base

    def _cache(self, key: str, frame: DataFrame) -> DataFrame:
        """``frame`` persisted for this pass: the part transforms read each slice many times, and
        every read of a lake table would otherwise list its Delta files again (a Spark job)."""
        if key not in self._cached:
            self._cached[key] = frame.persist(StorageLevel.MEMORY_AND_DISK)
        return self._cached[key]

    def release(self) -> None:
        """Drop the pass's cached slices (once its result is materialised)."""
        for frame in self._cached.values():
            frame.unpersist()
        self._cached.clear()

    def _snapshot_rows(self) -> DataFrame:
        end, epoch = self.base.snapshot or (0, 0)
        return self._cache("_snapshot", lake_table(self.lake, self.state, "snapshots")
                           .where((F.col("snapshot_end_offset") == end) & (F.col("snapshot_epoch") == epoch)
                                  & ~F.col("is_control"))
                           .withColumn("offset", F.lit(self.base.offset).cast("long"))
                           .withColumn("batch_base_offset", F.lit(self.base.offset).cast("long")))

    def typed(self, name: str) -> DataFrame:
        """Typed table ``name`` from the base (snapshot rows first) to the last target, with
        positions, segments and the aborted flag; cached for the pass."""
        if name in self._cached:
            return self._cached[name]
        in_range = (F.col("offset") > self.base.offset) & (F.col("offset") <= self.plan.upto)
        tail = lake_table(self.lake, self.state, name).where(in_range).withColumn("_seq", F.lit(0).cast("long"))
        if self.base.kind == "snapshot":
            snap = typed_rows(name, self._snapshot_rows())
            snap = snap.withColumn("_seq", F.col("position") + 1).drop("snapshot_end_offset", "snapshot_epoch", "position")
            tail = snap.unionByName(tail)
        return self._cache(name, tail.withColumn("_pos", F.col("offset") * SHIFT + F.col("_seq"))
                           .withColumn("_seg", self.plan.seg()).withColumn("_aborted", self.plan.aborted()))

    def base_rows(self, part: str, seq: int) -> DataFrame | None:
        if self.base.frames is None:
            return None
        return self._cache(f"_base_{part}", self.base.frames.parts()[part]
                           .withColumn("offset", F.lit(self.base.offset).cast("long"))
                           .withColumn("_seq", F.lit(seq).cast("long"))
                           .withColumn("_pos", F.lit(self.base.offset * SHIFT + seq).cast("long"))
                           .withColumn("_seg", F.lit(0)))

    def error(self, rows: DataFrame, message: Column) -> None:
        if self._collecting:
            self._errors.append(rows.select(F.col("offset").cast("long"), F.col("_seq").cast("long").alias("seq"),
                                            F.col("type").alias("record_type"), message.alias("message")))

    def _partition_skips(self, events: DataFrame, inc: DataFrame) -> DataFrame | None:
        """Lenient replay: the merges rejected for directories/replicas lengths, found one per
        partition and round (each rejection changes what the partition's later merges see)."""
        if not self.lenient:
            return None
        skip: list[int] = []
        self._collecting = False
        try:
            while True:
                frame = self.spark.createDataFrame([(p,) for p in skip], "_pos long") if skip else None
                states = P.partition_states(self, events, inc, frame)
                first = (states.where("_len_error").groupBy("topic_id", "partition_id", "_c_pos")
                         .agg(F.min("_pos").alias("p")).collect())
                if not first:
                    return frame
                skip.extend(r["p"] for r in first)
        finally:
            self._collecting = True

    def parts(self, effective: set[int]) -> dict[str, DataFrame]:
        """Every image part, rows tagged with the target index ``_i``; ``effective``: the topic
        removals that clear configs set earlier in their delta (§1.6)."""
        events = P.topic_events(self)
        self.inc = P.incarnations(self, events)
        self.removed = P.removals(events, self.plan)
        partition_events = P.partition_events(self)
        skip = self._partition_skips(partition_events, self.inc)
        if skip is not None:
            self.error(partition_events.join(F.broadcast(skip), "_pos"), F.lit(P.LENGTHS_DIFFER))
        states = P.partition_states(self, partition_events, self.inc, skip)
        out = {"topics": P.topics(self, self.inc), "partitions": P.partitions(self, states)}
        self.config_events = P.config_events(self)
        out["configs"] = P.configs(self, self.config_events, self.removed, effective)
        out.update({name: fn(self) for name, fn in P.SIMPLE_PARTS.items()})
        return out

    def error_rows(self) -> DataFrame | None:
        """Every rejected record up to the last requested offset (offset, seq, type, message)."""
        if not self._errors:
            return None
        return reduce(DataFrame.unionByName, self._errors).where(F.col("offset") <= self.plan.upto)

    def replay_error(self, row: dict[str, Any]) -> ReplayError:
        snapshot = self.base.kind == "snapshot" and row["seq"] > 0
        location = self.base.location(row["seq"]) if snapshot else f"offset {row['offset']}"
        return ReplayError(row["message"], location=location, offset=row["offset"], record_type=row["record_type"])


def _encode(kind: str, frame: DataFrame, columns: Sequence[str], at: Column | None = None) -> DataFrame:
    """Rows as (part, at, json) for the materialised pass table."""
    return frame.select(F.lit(kind).alias("part"), (at if at is not None else F.lit(None)).cast("long").alias("at"),
                        F.to_json(F.struct(*columns), {"ignoreNullFields": "false"}).alias("json"))


@contextmanager
def session_conf(spark: SparkSession, **settings: str) -> Iterator[None]:
    """Session settings for the duration of a block (previous values restored)."""
    keys = {k.replace("__", "."): v for k, v in settings.items()}
    before = {k: spark.conf.get(k, None) for k in keys}
    for k, v in keys.items():
        spark.conf.set(k, v)
    try:
        yield
    finally:
        for k, v in before.items():
            if v is None:
                spark.conf.unset(k)
            else:
                spark.conf.set(k, v)


SCAN_SETTINGS = {"spark__databricks__delta__stats__skipping": "false"}
"""A pass plans dozens of scans of small lake tables; Delta's stats-based file skipping costs a
Spark job per scan there, while Parquet row-group statistics still skip what the offset filters
exclude."""


def replay_pass(lake: Lake, state: LakeState, base: Base, requested: Sequence[int], lenient: bool) -> PassResult:
    """Images at ``requested`` offsets (each ≥ the base offset) from ``base``, computed in one
    Spark job; strict replay raises the first rejected record (ReplayError), lenient replay
    skips and lists them."""
    with session_conf(lake.spark, **SCAN_SETTINGS):
        return _replay_pass(lake, state, base, requested, lenient)


def _replay_pass(lake: Lake, state: LakeState, base: Base, requested: Sequence[int], lenient: bool) -> PassResult:
    records = lake_table(lake, state, "records")
    plan = make_plan(records, base, requested)
    run = Run(lake, state, plan, lenient)
    try:
        return _compute(run, records, base, requested, lenient)
    finally:
        run.release()


def _compute(run: Run, records: DataFrame, base: Base, requested: Sequence[int], lenient: bool) -> PassResult:
    plan = run.plan
    parts = run.parts(effective=set())
    parts["provenance"] = plan.provenance(records)
    offsets_of = [[t for t in plan.requested if plan.index[t] == i] for i in range(plan.m)]
    at = F.explode(F.element_at(F.array(*[F.array(*[F.lit(t).cast("long") for t in ts]) for ts in offsets_of]),
                                F.col("_i") + 1))

    def encode(name: str, frame: DataFrame) -> DataFrame:
        """Rows of target ``_i`` once per requested offset normalized to it."""
        return _encode(name, frame.withColumn("at", at), SCHEMAS[name].names, F.col("at"))

    pieces = [encode(name, frame) for name, frame in parts.items()]
    pieces.append(_encode("_candidate", P.quirk_candidates(run.config_events, run.removed), ["name", "offset", "_delta"]))
    errors = run.error_rows()
    if errors is not None:
        pieces.append(_encode("_error", errors, ["offset", "seq", "record_type", "message"]))
    table = reduce(DataFrame.unionByName, pieces).localCheckpoint(eager=True)
    small = [(r["part"], json.loads(r["json"])) for r in table.where(F.col("part").startswith("_")).collect()]
    candidates = [(c["name"], c["offset"], c["_delta"]) for kind, c in small if kind == "_candidate"]
    if candidates:
        effective = P.effective_clears(run.config_events, run.removed, candidates)
        configs = P.configs(run, run.config_events, run.removed, effective)
        table = (table.where(F.col("part") != "configs").unionByName(encode("configs", configs))
                 .localCheckpoint(eager=True))
    found = list(base.errors) + plan.marker_errors + [run.replay_error(e) for kind, e in small if kind == "_error"]
    found.sort(key=lambda e: (e.offset if e.offset is not None else -1))
    if found and not lenient:
        raise found[0]
    return PassResult(table, found, list(requested))
