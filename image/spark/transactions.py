"""Metadata transactions on Spark (replay-semantics.md §9.5): the one pairing of markers that the
Spark replay (:mod:`image.spark.plan`, :mod:`image.checkpoints`) and the Spark local changes
(:mod:`replica.spark_changes`) share.

The markers are few, so one window over them all pairs them. A marker is valid iff the previous
marker is a Begin exactly when it is an End/Abort: Kafka's loader rejects a Begin inside a
transaction and an End/Abort outside one, and a lenient replay skips such a marker, so it
changes nothing and the open/closed state before a marker is the kind of the marker before it.
A valid Begin closes at the first End/Abort after it.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from image.errors import ReplayError

BEGIN = "BEGIN_TRANSACTION_RECORD"
END = "END_TRANSACTION_RECORD"
ABORT = "ABORT_TRANSACTION_RECORD"
MARKERS = (BEGIN, END, ABORT)

_MISUSE = {
    BEGIN: "Encountered BeginTransactionRecord while already in a transaction",
    END: "Encountered EndTransactionRecord without having seen a BeginTransactionRecord",
    ABORT: "Encountered AbortTransactionRecord without having seen a BeginTransactionRecord",
}


def markers(rows: DataFrame) -> DataFrame:
    """The transaction markers among ``rows`` (``records`` or the ``transaction_markers`` table), one row
    each: ``offset``, ``type``, ``valid``, and for a Begin the End/Abort closing it (null while open):
    ``close``, ``aborted`` and ``close_batch_last`` (the last offset of the closing marker's batch, when
    ``rows`` has ``batch_last_offset``)."""
    batch_last = F.col("batch_last_offset") if "batch_last_offset" in rows.columns else F.lit(None).cast("long")
    # the markers are few: windows over them all, running ones (linear in the number of markers)
    closing = F.when(F.col("type") != BEGIN, F.struct(F.col("offset"), (F.col("type") == ABORT).alias("aborted"),
                                                      F.col("_batch_last")))
    later = Window.partitionBy(F.lit(0)).orderBy(F.desc("offset")).rowsBetween(Window.unboundedPreceding, -1)
    close = F.last(closing, ignorenulls=True).over(later)  # the nearest End/Abort after the marker
    previous = F.lag("type").over(Window.partitionBy(F.lit(0)).orderBy("offset"))
    valid = F.when(F.col("type") == BEGIN, F.coalesce(previous != BEGIN, F.lit(True))) \
        .otherwise(F.coalesce(previous == BEGIN, F.lit(False)))
    begin = F.col("type") == BEGIN
    return (rows.where(F.col("type").isin(*MARKERS))
            .select("offset", "type", batch_last.alias("_batch_last"))
            .select("offset", "type", valid.alias("valid"), F.when(begin, close).alias("_close"))
            .select("offset", "type", "valid", F.col("_close.offset").alias("close"),
                    F.coalesce(F.col("_close.aborted"), F.lit(False)).alias("aborted"),
                    F.col("_close._batch_last").alias("close_batch_last")))


def spans(rows: DataFrame) -> DataFrame:
    """The metadata transactions among ``rows``: ``(begin, close, aborted)`` per valid Begin (``close``
    null while open)."""
    return (markers(rows).where(F.col("valid") & (F.col("type") == BEGIN))
            .select(F.col("offset").alias("begin"), "close", "aborted"))


@dataclass(frozen=True)
class Txn:
    """A valid BeginTransactionRecord and the End/Abort closing it (None: still open at the
    end of the considered range), with the last offset of the closing record's batch and the
    next valid Begin after the close (or None)."""

    begin: int
    close: int | None
    aborted: bool
    close_batch_last: int | None
    next_begin: int | None = None


def transactions(records: DataFrame, after: int, upto: int) -> tuple[list[Txn], list[ReplayError]]:
    """The metadata transactions among the ``records`` in ``(after, upto]`` and the misplaced markers,
    collected (:func:`markers`)."""
    found = (markers(records.where((F.col("offset") > after) & (F.col("offset") <= upto)))
             .where(~F.col("valid") | (F.col("type") == BEGIN)).orderBy("offset").collect())
    errors = [ReplayError(_MISUSE[m["type"]], location=f"offset {m['offset']}", offset=m["offset"],
                          record_type=m["type"]) for m in found if not m["valid"]]
    begins = [m for m in found if m["valid"]]
    return [Txn(m["offset"], m["close"], m["aborted"], m["close_batch_last"],
                begins[i + 1]["offset"] if i + 1 < len(begins) else None)
            for i, m in enumerate(begins)], errors
