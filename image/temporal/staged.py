"""What a build of the temporal image stages, whichever engine replays: the Parquet files a shard writes (its
versions, the closings of stored versions, its rejections and transaction spans: :class:`Files`,
:class:`TaskSink`), its summary and the build's report; the inputs of the shard plan (:func:`plan_inputs`); and
the statements both engines run on the versions tables (:func:`key_match`, :func:`rewind_steps`). Shared by
:mod:`image.temporal.build` and :mod:`image.temporal.spark.build`."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pydantic import BaseModel

from image.errors import ReplayError
from image.parts import PART_KEYS, Row
from image.temporal.lake_source import ArrowSource
from image.temporal.reads import TemporalSource
from image.temporal.sharding import TOPIC_ID, TOPIC_NAME
from image.temporal.versions import (
    Key,
    Rejection,
    Span,
    key_values,
    state_values,
)
from metadata.lake.protocol import Lake, LakeState
from metadata.lake.version_tables import (
    PART_TABLES,
    PROVENANCE,
    REJECTIONS,
    closing_schema,
    table_schemas,
    version_schema,
)

FLUSH_ROWS = 50_000
"""Rows a task buffers per output file before writing it."""


SUMMARY = pa.schema(
    [
        ("shard", pa.int32()),
        ("records", pa.int64()),
        ("versions", pa.int64()),
        ("closings", pa.int64()),
        ("rejections", pa.int64()),
        ("first_rejection_at", pa.int64()),
        ("first_rejection", pa.string()),
        ("seconds", pa.float64()),
    ]
)


class BuildReport(BaseModel):
    """What a versions build did."""

    restart: int  # first log offset replayed (-1: from the start)
    shards: int
    records: int  # log and snapshot records replayed, summed over shards (broadcast ones counted per shard)
    versions: int
    closings: int
    rejections: int
    tables: dict[str, int]  # table → Delta version written
    seconds: float


@dataclass
class Files:
    """A task's Parquet output: rows (value tuples in schema order) buffered per (kind, table), written
    column by column in files of ``FLUSH_ROWS``."""

    root: str
    task: int
    buffers: dict[tuple[str, str], list[tuple[Any, ...]]] = field(default_factory=dict)
    counts: dict[tuple[str, str], int] = field(default_factory=dict)

    def add(self, kind: str, table: str, row: tuple[Any, ...]) -> None:
        rows = self.buffers.get((kind, table))
        if rows is None:
            rows = self.buffers[(kind, table)] = []
        rows.append(row)
        if len(rows) >= FLUSH_ROWS:
            self.flush(kind, table)

    def flush(self, kind: str, table: str) -> None:
        rows = self.buffers.pop((kind, table), [])
        if not rows:
            return
        n = self.counts.get((kind, table), 0)
        self.counts[(kind, table)] = n + 1
        directory = os.path.join(self.root, kind, table)
        os.makedirs(directory, exist_ok=True)
        schema = _SCHEMAS[(kind, table)]
        columns = [pa.array(values, type=f.type) for values, f in zip(zip(*rows), schema)]
        pq.write_table(
            pa.Table.from_arrays(columns, schema=schema),
            os.path.join(directory, f"part-{self.task:05d}-{n:05d}.parquet"),
        )


class TaskSink:
    """The :class:`~image.temporal.versions.VersionSink` of one task: everything goes to Parquet files."""

    def __init__(self, files: Files) -> None:
        self.files = files
        self.versions = self.closings = self.rejections = 0
        self.first: tuple[tuple[int, int], ReplayError] | None = None

    def version(self, part: str, key: Key, state: Any, from_offset: int, to_offset: int | None, from_time: int) -> None:
        self.versions += 1
        self.files.add(
            "versions", PART_TABLES[part], (*state_values(part, key, state), from_offset, to_offset, from_time)
        )

    def close(self, part: str, key: Key, state: Any, from_offset: int, to_offset: int) -> None:
        self.closings += 1
        self.files.add("closings", PART_TABLES[part], (*key_values(part, key, state), from_offset, to_offset))

    def rejection(self, rejection: Rejection) -> None:
        self.rejections += 1
        error, snapshot = rejection
        at = (snapshot[0] - 1, error.offset or 0) if snapshot is not None else (error.offset or 0, -1)
        if self.first is None or at < self.first[0]:
            self.first = (at, error)
        self.files.add(  # in REJECTIONS_SCHEMA's order
            "rows",
            REJECTIONS,
            (
                error.offset,
                snapshot[0] if snapshot else None,
                snapshot[1] if snapshot else None,
                error.record_type,
                error.location,
                error.detail,
            ),
        )

    def span(self, span: Span) -> None:
        self.files.add("rows", PROVENANCE, (span.begin, span.end, span.begin - 1, span.outcome))  # PROVENANCE_SCHEMA

    def flush(self) -> None:
        for kind, table in list(self.files.buffers):
            self.files.flush(kind, table)

    def summary(self, shard: int, records: int, started: float) -> Row:
        """What the shard recorded, as a :data:`SUMMARY` row."""
        first = self.first
        return {
            "shard": shard,
            "records": records,
            "versions": self.versions,
            "closings": self.closings,
            "rejections": self.rejections,
            "first_rejection_at": first[0][0] if first else None,
            "first_rejection": str(first[1]) if first else None,
            "seconds": time.monotonic() - started,
        }


_VERSION_SCHEMAS = {part: version_schema(part) for part in PART_KEYS}


_CLOSING_SCHEMAS = {part: closing_schema(part) for part in PART_KEYS}


PROVENANCE_SCHEMA, REJECTIONS_SCHEMA = table_schemas()[PROVENANCE], table_schemas()[REJECTIONS]


assert PROVENANCE_SCHEMA.names == ["from_offset", "to_offset", "offset", "outcome"]


assert REJECTIONS_SCHEMA.names == [
    "offset",
    "snapshot_end_offset",
    "snapshot_epoch",
    "record_type",
    "location",
    "message",
]


_SCHEMAS = {
    **{("versions", PART_TABLES[p]): s for p, s in _VERSION_SCHEMAS.items()},
    **{("closings", PART_TABLES[p]): s for p, s in _CLOSING_SCHEMAS.items()},
    ("rows", REJECTIONS): REJECTIONS_SCHEMA,
    ("rows", PROVENANCE): PROVENANCE_SCHEMA,
}


def build_report(
    restart: int, shards: int, summaries: Sequence[Row], started: float
) -> tuple[BuildReport, dict[str, str]]:
    report = BuildReport(
        restart=restart,
        shards=shards,
        records=sum(r["records"] for r in summaries),
        versions=sum(r["versions"] for r in summaries),
        closings=sum(r["closings"] for r in summaries),
        rejections=sum(r["rejections"] for r in summaries),
        tables={},
        seconds=time.monotonic() - started,
    )
    firsts = sorted((r["first_rejection_at"], r["first_rejection"]) for r in summaries if r["first_rejection"])
    return report, {"first_rejection": firsts[0][1] if firsts else ""}


def lake_source(lake: Lake, state: LakeState) -> TemporalSource:
    """The lake at ``state`` as a temporal source: read in process when it can be, else on Spark."""
    files = lake.files(state)
    if files is not None:
        return ArrowSource(files)
    from image.temporal.spark.source import SparkSource

    return SparkSource(lake, state)


def plan_inputs(
    lake: Lake, state: LakeState, restart: int, snapshot_ids: Sequence[tuple[int, int, int]], stored_at: int | None
) -> tuple[dict[str, int], list[tuple[str, str]]]:
    """What the shard plan needs, from the typed tables rather than the records' payloads: the (topic id, name)
    pairs of every TopicRecord of the log (a superset of the replayed ones: coupling more topics is still
    exact), of the snapshots to load and of the versions the replay resumes from; and the weight of each topic
    id, its partition records from ``restart`` on (the bulk of any log; other keys weigh little and go to
    shards by hash). Read in process for a local lake, else with small Spark aggregations."""
    files = lake.files(state)
    weights: dict[str, int] = {}
    pairs: list[tuple[str, str]] = []
    typed = [t for t in ("partitions", "partition_changes") if t in state.versions]
    chosen = " OR ".join(f"(snapshot_end_offset = {e} AND snapshot_epoch = {p})" for e, p, _ in snapshot_ids)
    if files is not None:
        if "topics" in state.versions:
            t = files.read("topics", columns=["topic_id", "name"])
            pairs += zip(t["topic_id"].to_pylist(), t["name"].to_pylist())
        for table in typed:
            ids = files.read(
                table,
                columns=["topic_id"],
                where=pc.field("offset") >= restart,
                prune=lambda f: f.may_hold("offset", lo=restart),
            )["topic_id"]
            for r in pc.value_counts(ids).to_pylist():
                weights[TOPIC_ID + r["values"]] = weights.get(TOPIC_ID + r["values"], 0) + r["counts"]
        if snapshot_ids:
            ends = pa.array([e for e, _, _ in snapshot_ids], pa.int64())
            t = files.read(
                "snapshots",
                columns=["snapshot_end_offset", "snapshot_epoch", "payload"],
                where=(pc.field("type") == "TOPIC_RECORD") & pc.field("snapshot_end_offset").isin(ends),
            ).to_pylist()
            wanted = {(e, p) for e, p, _ in snapshot_ids}
            payloads = [r["payload"] for r in t if (r["snapshot_end_offset"], r["snapshot_epoch"]) in wanted]
            pairs += [(d["topicId"], d["name"]) for d in map(json.loads, payloads)]
    else:
        from pyspark.sql import functions as F

        if "topics" in state.versions:
            pairs += [
                (r["topic_id"], r["name"]) for r in lake.table("topics", state).select("topic_id", "name").collect()
            ]
        if typed:
            union = lake.table(typed[0], state).select("offset", "topic_id")
            for table in typed[1:]:
                union = union.unionByName(lake.table(table, state).select("offset", "topic_id"))
            for r in union.where(F.col("offset") >= restart).groupBy("topic_id").count().collect():
                weights[TOPIC_ID + r["topic_id"]] = r["count"]
        if snapshot_ids:
            rows = lake.table("snapshots", state).where(f"type = 'TOPIC_RECORD' AND ({chosen})").select("payload")
            pairs += [(d["topicId"], d["name"]) for d in (json.loads(r["payload"]) for r in rows.collect())]
    if stored_at is not None:
        source = lake_source(lake, state)
        for part in ("topics", "topicNames"):
            if PART_TABLES[part] in state.versions:
                pairs += [(r["topicId"], r["name"]) for r in source.rows_at(part, stored_at)]
    return weights, [(TOPIC_ID + i, TOPIC_NAME + n) for i, n in pairs]


def key_match(part: str, entity_equal: str = "t.entity = c.entity") -> str:
    """The MERGE condition matching a stored version (``t``) with its closing row (``c``); ``entity_equal``: how
    the engine compares a quota entity (a map)."""
    conds = [entity_equal if k == "entity" else f"t.`{k}` = c.`{k}`" for k in PART_KEYS[part]]
    return " AND ".join([*conds, "t.from_offset = c.from_offset", "t.to_offset IS NULL"])


def rewind_steps(table: str, restart: int) -> list[tuple[str, str]]:
    """What :func:`rewind` does to ``table``, in order: (``delete`` or ``reopen``, the rows' SQL predicate).
    ``reopen`` sets ``to_offset`` to null."""
    if table == PROVENANCE:
        return [("delete", f"from_offset >= {restart}")]
    if table == REJECTIONS:
        return [
            ("delete", f"(snapshot_end_offset IS NULL AND offset >= {restart}) OR snapshot_end_offset - 1 >= {restart}")
        ]
    return [("delete", f"from_offset >= {restart}"), ("reopen", f"to_offset >= {restart}")]


STAGED: list[tuple[str, str, pa.Schema]] = [
    *(("versions", PART_TABLES[p], _VERSION_SCHEMAS[p]) for p in PART_KEYS),
    ("rows", REJECTIONS, REJECTIONS_SCHEMA),
    ("rows", PROVENANCE, PROVENANCE_SCHEMA),
]
"""What a build stages to append: (kind, table, schema)."""


FILE_ROWS = 1 << 18
"""Versions per file a build on Spark writes (a point read opens a few such files per level, see
:func:`point_read_order`)."""
