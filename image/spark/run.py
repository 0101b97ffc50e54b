"""One replay pass: a base image plus the log records after it, images at several offsets."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import reduce

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from image.errors import ReplayError
from image.frames import SCHEMAS
from image.spark import parts as P
from image.spark.plan import SHIFT, Base, Plan, make_plan
from metadata.lake import Lake, LakeState
from metadata.tables import typed_rows

_ERROR_SCHEMA = T.StructType([T.StructField("offset", T.LongType()), T.StructField("seq", T.LongType()),
                              T.StructField("record_type", T.StringType()), T.StructField("message", T.StringType())])


@dataclass
class PassResult:
    """Image parts for the requested offsets (column ``at`` = requested offset), their
    provenance, and the rejected records (errors) up to the largest requested offset."""

    parts: dict[str, DataFrame]
    provenance: dict[int, tuple[int, int, int]]
    errors: list[ReplayError]


class Run:
    """The context the part transforms share (:class:`image.spark.parts.Context`)."""

    def __init__(self, lake: Lake, state: LakeState, plan: Plan, lenient: bool) -> None:
        self.lake, self.state, self.plan, self.lenient = lake, state, plan, lenient
        self.spark: SparkSession = lake.spark
        self._errors: list[DataFrame] = []
        self._collecting = True

    @property
    def base(self) -> Base:
        return self.plan.base

    def _snapshot_rows(self) -> DataFrame:
        end, epoch = self.base.snapshot or (0, 0)
        return (self.lake.table("snapshots", self.state)
                .where((F.col("snapshot_end_offset") == end) & (F.col("snapshot_epoch") == epoch) & ~F.col("is_control"))
                .withColumn("offset", F.lit(self.base.offset).cast("long"))
                .withColumn("batch_base_offset", F.lit(self.base.offset).cast("long")))

    def typed(self, name: str) -> DataFrame:
        tail = (self.lake.table(name, self.state)
                .where((F.col("offset") > self.base.offset) & (F.col("offset") <= self.plan.upto))
                .withColumn("_seq", F.lit(0).cast("long")))
        if self.base.kind == "snapshot":
            snap = typed_rows(name, self._snapshot_rows())
            snap = snap.withColumn("_seq", F.col("position") + 1).drop("snapshot_end_offset", "snapshot_epoch", "position")
            tail = snap.unionByName(tail)
        return (tail.withColumn("_pos", F.col("offset") * SHIFT + F.col("_seq"))
                .withColumn("_seg", self.plan.seg()).withColumn("_aborted", self.plan.aborted()))

    def base_rows(self, part: str, seq: int) -> DataFrame | None:
        if self.base.frames is None:
            return None
        return (self.base.frames.parts()[part].withColumn("offset", F.lit(self.base.offset).cast("long"))
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

    def parts(self) -> dict[str, DataFrame]:
        """Every image part, rows tagged with the target index ``_i``."""
        events = P.topic_events(self)
        inc = P.incarnations(self, events)
        removed = P.removals(events, self.plan)
        partition_events = P.partition_events(self)
        skip = self._partition_skips(partition_events, inc)
        states = P.partition_states(self, partition_events, inc, skip)
        out = {"topics": P.topics(self, inc), "partitions": P.partitions(self, states)}
        config_events = P.config_events(self)
        candidates = [tuple(r) for r in P.quirk_candidates(config_events, removed).collect()]
        effective = P.effective_clears(config_events, removed, candidates) if candidates else set()
        out["configs"] = P.configs(self, config_events, removed, effective)
        out.update({name: fn(self) for name, fn in P.SIMPLE_PARTS.items()})
        return out

    def errors(self, first_only: bool) -> list[ReplayError]:
        """Rejected records up to the last requested offset, in log order (snapshot first)."""
        found = list(self.base.errors) + [e for e in self.plan.marker_errors]
        if self._errors:
            rows = reduce(DataFrame.unionByName, self._errors).where(F.col("offset") <= self.plan.upto)
            rows = rows.orderBy("offset", "seq")
            for r in (rows.limit(1) if first_only else rows).collect():
                snapshot = self.base.kind == "snapshot" and r["seq"] > 0
                location = self.base.location(r["seq"]) if snapshot else f"offset {r['offset']}"
                found.append(ReplayError(r["message"], location=location, offset=r["offset"],
                                         record_type=r["record_type"]))
        found.sort(key=lambda e: (e.offset if e.offset is not None else -1))
        return found[:1] if first_only else found


def replay_pass(lake: Lake, state: LakeState, base: Base, requested: Sequence[int], lenient: bool) -> PassResult:
    """Images at ``requested`` offsets (each ≥ the base offset) from ``base``; strict replay
    raises the first rejected record (ReplayError), lenient replay skips and lists them."""
    records = lake.table("records", state)
    plan = make_plan(records, base, requested)
    run = Run(lake, state, plan, lenient)
    parts = run.parts()
    errors = run.errors(first_only=not lenient)
    if errors and not lenient:
        raise errors[0]
    mapping = lake.spark.createDataFrame([(plan.index[t], t) for t in plan.requested], "_i int, at long")
    out = {name: frame.join(F.broadcast(mapping), "_i").drop("_i") for name, frame in parts.items()}
    prov = plan.provenance(records)
    provenance = {t: prov[plan.index[t]] for t in plan.requested}
    out["provenance"] = lake.spark.createDataFrame(
        [(t, *provenance[t]) for t in plan.requested],
        T.StructType([T.StructField("at", T.LongType()), *SCHEMAS["provenance"].fields]))
    return PassResult(out, provenance, errors)
