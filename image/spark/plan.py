"""What one Spark replay pass starts from and where it stops.

A pass computes the images at several *target* offsets from one *base* image (empty, a stored
snapshot or an image checkpoint) plus the log records after it. Every event carries a position
``_pos = offset * 2**32 + seq`` (``seq`` orders the records of a base, which all sit at the base
offset; log records have seq 0) and a segment ``_seg`` = index of the first target at or after
its offset, so "the state of a key at target i" is the state after its last event with
``_seg <= i``.

Metadata transactions (replay-semantics.md §9.5, intended mode) are resolved here from the few
transaction markers: a target inside an open transaction is *normalized* to the offset before
its BeginTransactionRecord (image and provenance as the reference engine gives them), records of
aborted transactions are dropped, and the records of a committed transaction need nothing
special, because no target lies between its Begin and its End. The markers also give the
delta boundaries the reference loader uses (one delta per batch, a transaction's delta from its
Begin to the end of the batch holding its End), which two Kafka quirks depend on. The markers
are paired in :mod:`image.spark.transactions`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from image.errors import ReplayError
from image.frames import ImageFrames
from image.spark.transactions import Txn, transactions

SHIFT = 1 << 32
"""Positions: ``offset * SHIFT + seq``."""


@dataclass(frozen=True)
class Base:
    """The image a pass starts from.

    ``kind`` is ``empty``, ``snapshot`` (``snapshot`` = (end offset, epoch) of a stored snapshot,
    loaded onto the empty image) or ``checkpoint`` (``frames`` = a stored image). ``offset``,
    ``epoch``, ``timestamp`` are its provenance; ``errors`` are the records a lenient replay
    skipped up to it (checkpoints remember them).
    """

    kind: str
    offset: int = -1
    epoch: int = -1
    timestamp: int = -1
    snapshot: tuple[int, int] | None = None
    frames: ImageFrames | None = None
    errors: tuple[ReplayError, ...] = ()

    def location(self, seq: int) -> str:
        """Where record ``seq`` of this base is (snapshots only: their records have no offset)."""
        assert self.snapshot is not None
        return f"snapshot {self.snapshot[0]:020d}-{self.snapshot[1]:010d} offset {seq - 1}"


EMPTY_BASE = Base("empty")


def _tree(x: str, intervals: Sequence[tuple[int, int, str]], lo: int, hi: int) -> str:
    if lo > hi:
        return "NULL"
    mid = (lo + hi) // 2
    a, b, value = intervals[mid]
    return (f"CASE WHEN {x} < {a} THEN {_tree(x, intervals, lo, mid - 1)} WHEN {x} <= {b} THEN {value} "
            f"ELSE {_tree(x, intervals, mid + 1, hi)} END")


def interval_lookup(x: str, intervals: Sequence[tuple[int, int, str]]) -> Column:
    """The SQL value of the interval ``[lo, hi]`` holding column ``x`` (sorted, disjoint
    intervals; a binary search as nested CASE, depth log n), NULL outside all of them."""
    return F.expr(_tree(x, sorted(intervals), 0, len(intervals) - 1))


def _count_below(x: str, targets: Sequence[int], lo: int, hi: int) -> str:
    if lo == hi:
        return str(lo)
    mid = (lo + hi) // 2
    return f"CASE WHEN {x} <= {targets[mid]} THEN {_count_below(x, targets, lo, mid)} " \
           f"ELSE {_count_below(x, targets, mid + 1, hi)} END"


def segment(x: str, targets: Sequence[int]) -> Column:
    """Index of the first of the ascending ``targets`` ≥ column ``x`` (``len(targets)`` beyond
    the last): a binary search as nested CASE."""
    return F.expr(_count_below(x, targets, 0, len(targets))).cast("int")


@dataclass
class Plan:
    """One pass: a base, the requested offsets and what the transactions make of them."""

    base: Base
    requested: list[int]
    """Requested offsets (clamped to the log), in the caller's order."""
    upto: int
    """Largest requested offset: records up to it are read (errors inside open transactions count)."""
    txns: list[Txn]
    marker_errors: list[ReplayError]
    targets: list[int] = field(init=False)
    """Distinct normalized offsets, ascending; target index = position in this list."""
    index: dict[int, int] = field(init=False)
    """Requested offset → target index."""

    def __post_init__(self) -> None:
        normalized = {t: self.normalize(t) for t in self.requested}
        self.targets = sorted(set(normalized.values()))
        self.index = {t: self.targets.index(n) for t, n in normalized.items()}

    def normalize(self, offset: int) -> int:
        """The offset whose image equals the image at ``offset``: before the Begin of a
        transaction open at ``offset``, else ``offset``."""
        for txn in self.txns:
            if txn.begin <= offset and (txn.close is None or offset < txn.close):
                return txn.begin - 1
        return offset

    @property
    def m(self) -> int:
        return len(self.targets)

    def seg(self, x: str = "offset") -> Column:
        """Index of the first target ≥ column ``x`` (``m`` beyond the last one)."""
        return segment(x, self.targets)

    def aborted(self, x: str = "offset") -> Column:
        """Column ``x`` lies in an aborted transaction (Begin to Abort)."""
        spans = [(t.begin, t.close, "true") for t in self.txns if t.aborted]
        return F.lit(False) if not spans else F.coalesce(interval_lookup(x, spans), F.lit(False))

    def delta_start(self, x: str = "offset", batch_base: str = "batch_base_offset") -> Column:
        """First offset of the reference loader's delta holding the record at ``x``: its batch,
        except for the records of a transaction (from the Begin to the end of the batch holding
        the End, or to the next Begin) and the records after an Abort in its batch."""
        spans: list[tuple[int, int, str]] = []
        for t in self.txns:
            stop = t.next_begin - 1 if t.next_begin is not None else None
            if t.close is None:
                spans.append((t.begin, stop if stop is not None else (1 << 62), str(t.begin)))
                continue
            end = t.close_batch_last if stop is None else min(t.close_batch_last, stop)
            if not t.aborted:
                spans.append((t.begin, end, str(t.begin)))
            elif t.close + 1 <= end:
                spans.append((t.close + 1, end, str(t.close + 1)))
        if not spans:
            return F.col(batch_base)
        return F.coalesce(interval_lookup(x, spans), F.col(batch_base))

    def provenance(self, records: DataFrame) -> DataFrame:
        """``(_i, offset, epoch, timestamp)`` per target: the last record at or before it (control
        records included), or the base's provenance when no log record lies in between."""
        spark = records.sparkSession
        targets = spark.createDataFrame([(i,) for i in range(self.m)], "_i int")
        base = [F.lit(v) for v in (self.base.offset, self.base.epoch, self.base.timestamp)]
        if self.targets[-1] <= self.base.offset:
            return targets.select("_i", base[0].cast("long").alias("offset"), base[1].cast("int").alias("epoch"),
                                  base[2].cast("long").alias("timestamp"))
        last = F.struct(F.col("offset"), F.col("batch_leader_epoch").alias("epoch"), F.col("timestamp"))
        by_seg = (records.where((F.col("offset") > self.base.offset) & (F.col("offset") <= self.targets[-1]))
                  .groupBy(self.seg().alias("_s")).agg(F.max_by(last, F.col("offset")).alias("_last")))
        latest = (targets.join(F.broadcast(by_seg), F.col("_s") <= F.col("_i"), "left").groupBy("_i")
                  .agg(F.max_by("_last", "_s").alias("_last")))
        return latest.select("_i", *[F.coalesce(F.col("_last").getField(name), value).cast(kind).alias(name)
                                     for name, value, kind in zip(("offset", "epoch", "timestamp"), base,
                                                                  ("long", "int", "long"))])


def make_plan(records: DataFrame, base: Base, requested: Sequence[int]) -> Plan:
    """The pass from ``base`` to the ``requested`` offsets (each ≥ the base offset)."""
    upto = max(requested)
    txns, errors = transactions(records, base.offset, upto)
    return Plan(base, list(requested), upto, txns, errors)
