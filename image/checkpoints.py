"""Image checkpoints: images materialised every K offsets, so that a replay reads only the tail.

Layout under ``<lake>/_checkpoints/``: one Delta table per image part (``provenance``,
``topics``, ``partitions``, ...; the part's columns plus ``checkpoint_offset``, partitioned by
it) and ``index`` (one row per checkpoint: offset, provenance, the ``records`` table version and
record count it was built from, the records a lenient build skipped). Part tables are written
first (``replaceWhere`` on the new offsets, so the rows of a crashed run are replaced) and the
index last: a checkpoint exists once its index row does.

Checkpoint offsets: for each multiple ``n*K`` of ``every`` in the log, the last offset of the
batch holding ``n*K`` (the first record at or after it); if that lies inside a metadata
transaction, the last offset of the batch that closes it (none if the log ends inside it). So
every checkpoint is a batch-aligned image outside transactions, where the reference loader
publishes and a replay of the tail can start afresh.

A checkpoint stays valid while no record at or before its offset is added to the lake (checked
against the stored count when the ``records`` table has a newer version).
"""

from __future__ import annotations

import datetime as dt
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from pyspark.sql import functions as F
from pyspark.sql import types as T

from image.engine import snapshot_base
from image.errors import ReplayError
from image.frames import SCHEMAS, ImageFrames
from image.spark.plan import EMPTY_BASE, Base, interval_lookup, segment
from image.spark.run import replay_pass
from image.spark.transactions import transactions
from metadata.lake import Lake, LakeState, delta_version

ROOT = "_checkpoints"
INDEX = "index"

_ERROR = T.StructType([T.StructField("offset", T.LongType()), T.StructField("record_type", T.StringType()),
                       T.StructField("location", T.StringType()), T.StructField("message", T.StringType())])
INDEX_SCHEMA = T.StructType([
    T.StructField("checkpoint_offset", T.LongType(), False), T.StructField("epoch", T.IntegerType()),
    T.StructField("timestamp", T.LongType()), T.StructField("records_version", T.LongType()),
    T.StructField("records_upto", T.LongType()), T.StructField("errors", T.ArrayType(_ERROR)),
    T.StructField("created_at", T.TimestampType()),
])


@dataclass(frozen=True)
class Checkpoint:
    """An index row: the image at ``offset`` with its provenance; ``records_version`` and
    ``records_upto`` (records at or before the offset) of the lake it was built from."""

    offset: int
    epoch: int
    timestamp: int
    records_version: int
    records_upto: int
    errors: tuple[ReplayError, ...]


def path(lake: Lake, name: str) -> str:
    return lake.path(f"{ROOT}/{name}")


def listed(lake: Lake) -> list[Checkpoint]:
    """Every checkpoint in the index (the newest row per offset), by offset."""
    if delta_version(lake.spark, path(lake, INDEX)) is None:
        return []
    rows = lake.spark.read.format("delta").load(path(lake, INDEX)).orderBy("created_at").collect()
    newest = {r["checkpoint_offset"]: r for r in rows}
    return [Checkpoint(o, r["epoch"], r["timestamp"], r["records_version"], r["records_upto"],
                       tuple(ReplayError(e["message"], location=e["location"], offset=e["offset"],
                                         record_type=e["record_type"]) for e in r["errors"] or ()))
            for o, r in sorted(newest.items())]


def is_valid(lake: Lake, state: LakeState, checkpoint: Checkpoint) -> bool:
    """No record at or before the checkpoint was added since it was built."""
    if state.versions.get("records") == checkpoint.records_version:
        return True
    return lake.table("records", state).where(F.col("offset") <= checkpoint.offset).count() == checkpoint.records_upto


def latest(lake: Lake, state: LakeState, offset: int) -> Checkpoint | None:
    """The latest valid checkpoint at or before ``offset``."""
    for checkpoint in reversed([c for c in listed(lake) if c.offset <= offset]):
        if is_valid(lake, state, checkpoint):
            return checkpoint
    return None


def load_base(lake: Lake, checkpoint: Checkpoint) -> Base:
    """The checkpoint as a replay base (its part tables filtered to its offset)."""
    frames = {part: lake.spark.read.format("delta").load(path(lake, part))
              .where(F.col("checkpoint_offset") == checkpoint.offset).drop("checkpoint_offset") for part in SCHEMAS}
    return Base("checkpoint", checkpoint.offset, checkpoint.epoch, checkpoint.timestamp,
                frames=ImageFrames(**frames), errors=checkpoint.errors)


def choose_base(lake: Lake, state: LakeState, offset: int, *, use_checkpoints: bool = True) -> Base:
    """The base for the image at ``offset``: the later of the best snapshot and the latest valid
    checkpoint (the snapshot on a tie, as the reference engine starts from it), else empty."""
    snapshot = snapshot_base(lake, state, offset)
    checkpoint = latest(lake, state, offset) if use_checkpoints else None
    if checkpoint is not None and (snapshot is None or checkpoint.offset > snapshot.offset):
        return load_base(lake, checkpoint)
    return snapshot or EMPTY_BASE


def checkpoint_offsets(lake: Lake, state: LakeState, every: int) -> list[int]:
    """Where checkpoints go for interval ``every`` (see the module doc)."""
    if every < 1:
        raise ValueError(f"checkpoint interval must be positive, got {every}")
    end = state.high_water_mark
    multiples = list(range(every, end + 1, every))
    if not multiples:
        return []
    records = lake.table("records", state)
    spans = [(m, (multiples[i + 1] - 1) if i + 1 < len(multiples) else end, str(i)) for i, m in enumerate(multiples)]
    batch_ends = (records.where(F.col("offset") >= multiples[0])
                  .groupBy(interval_lookup("offset", spans).alias("i"))
                  .agg(F.min_by("batch_last_offset", "offset").alias("last")).collect())
    txns, _ = transactions(records, -1, end)
    out: set[int] = set()
    for row in batch_ends:
        offset: int | None = row["last"]
        while offset is not None:
            inside = next((t for t in txns if t.begin <= offset and (t.close is None or offset < t.close)), None)
            if inside is None:
                break
            offset = inside.close_batch_last
        if offset is not None:
            out.add(offset)
    return sorted(out)


def checkpoint(lake: Lake, every: int, *, lenient: bool = False) -> list[int]:
    """Materialise the missing image checkpoints for interval ``every``; returns the offsets
    added (ascending). The new images are computed in one pass from the latest valid
    checkpoint or snapshot before the first of them. Strict (default): a record Kafka rejects
    raises ReplayError and nothing is written; ``lenient`` skips it and the checkpoints
    remember it."""
    state = lake.state()
    have = {c.offset for c in listed(lake) if is_valid(lake, state, c)}
    new = [o for o in checkpoint_offsets(lake, state, every) if o not in have]
    if not new:
        return []
    base = choose_base(lake, state, new[0])
    result = replay_pass(lake, state, base, new, lenient)
    records = lake.table("records", state)
    counts = dict(records.where(F.col("offset") <= new[-1]).groupBy(segment("offset", new).alias("i")).count()
                  .collect())
    where = f"checkpoint_offset IN ({', '.join(map(str, new))})"

    def write(part: str) -> None:
        (result.part(part).withColumnRenamed("at", "checkpoint_offset").write.format("delta").mode("overwrite")
         .option("replaceWhere", where).partitionBy("checkpoint_offset").save(path(lake, part)))

    with ThreadPoolExecutor(4) as pool:  # independent tables
        list(pool.map(write, SCHEMAS))
    now = dt.datetime.now(dt.timezone.utc)
    provenance = {r["at"]: r for r in result.part("provenance").collect()}
    rows, upto = [], 0
    for i, offset in enumerate(new):
        upto += counts.get(i, 0)
        prov = provenance[offset]
        errors = [(e.offset, e.record_type, e.location, e.detail) for e in result.errors
                  if e.offset is None or e.offset <= offset]
        rows.append((offset, prov["epoch"], prov["timestamp"], state.versions["records"], upto, errors, now))
    _write_index(lake, rows)
    return new


def _write_index(lake: Lake, rows: list[tuple]) -> None:
    """Append index rows: the commit that makes new checkpoints visible."""
    lake.spark.createDataFrame(rows, INDEX_SCHEMA).write.format("delta").mode("append").save(path(lake, INDEX))
