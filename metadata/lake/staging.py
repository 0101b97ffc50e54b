"""Staging: the decode tasks of an ingest, and where they put what they decode.

On Spark, each task (``mapInArrow`` over :func:`stage_tasks`, :mod:`metadata.lake.ingest_spark`) decodes one file or
byte range with
:func:`~metadata.log.columns.decode_to_arrow` and writes the rows with pyarrow, partitioned by record
type in the Hive layout Spark reads (``<staging>/type=<T>/part-<task>.parquet``). The records
cross into the JVM once, when Spark reads them for the Delta appends, and never through the
driver. What a task returns is small (:data:`SUMMARY_SCHEMA`): per (file, snapshot, record type,
control flag) a count and an offset span, and one row per issue the readers reported. File
names depend only on the task, so a retried task overwrites its own output.

The workers write to a local path (the inputs are local files too): the staging directory is
under the lake when the lake is a local path, else under ``KRAFT_REPLAY_STAGING`` or the
temporary directory.

In process (:mod:`metadata.lake.ingest_local`), :func:`decode_task` decodes one file or range into memory with the
same summary; an ingest's build of the temporal image stages its versions under the same directory.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from urllib.parse import urlparse

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from metadata.log.columns import DECODED_SCHEMA, decode_to_arrow
from metadata.log.errors import KraftReplayError
from metadata.log.readers import InputFile, Issue, ReadOptions


class IngestError(KraftReplayError, RuntimeError):
    """Bad input; the lake was left unchanged."""


Task = tuple[InputFile, int, int | None]  # a file, its start byte and end byte (None: to the end)

SUMMARY_SCHEMA = pa.schema(
    [
        ("source_file", pa.string()),
        ("snapshot_end_offset", pa.int64()),
        ("snapshot_epoch", pa.int32()),
        ("type", pa.string()),
        ("is_control", pa.bool_()),
        ("n", pa.int64()),
        ("lo", pa.int64()),
        ("hi", pa.int64()),
        ("issue_severity", pa.string()),
        ("issue", pa.string()),
    ]
)
_KEYS = ["source_file", "snapshot_end_offset", "snapshot_epoch", "type", "is_control"]
_TYPE = DECODED_SCHEMA.get_field_index("type")
_FILE_SCHEMA = DECODED_SCHEMA.remove(_TYPE)  # the partition column lives in the directory name
NULL_PARTITION = "__HIVE_DEFAULT_PARTITION__"
ROW_GROUP = 1 << 17

TASK_SCHEMA = pa.schema(
    [
        ("task", pa.int32()),
        ("file", pa.string()),
        ("start", pa.int64()),
        ("end", pa.int64()),
        ("options", pa.string()),
        ("staging", pa.string()),
    ]
)
"""One decode task: a file (:meth:`InputFile.to_json`), its byte range, the read options, the staging directory."""


_LAKE_ROOT = "_staging"  # under a local lake
_TEMP_ROOT = "kraft-replay-staging"  # under the temporary directory


def staging_dir(lake_uri: str, run_id: str) -> str:
    """Where the run's decode tasks write: a local directory."""
    if lake_uri.startswith("file:"):
        lake_uri = urlparse(lake_uri).path
    if "://" not in lake_uri:
        return os.path.join(os.path.abspath(lake_uri), _LAKE_ROOT, run_id)
    root = os.environ.get("KRAFT_REPLAY_STAGING") or os.path.join(tempfile.gettempdir(), _TEMP_ROOT)
    return os.path.join(root, run_id)


def remove(staging: str) -> None:
    """Delete a run's staging directory, and the lake's ``_staging`` (or the default temporary root)
    when no other run uses it; a ``KRAFT_REPLAY_STAGING`` directory stays."""
    shutil.rmtree(staging, ignore_errors=True)
    parent = os.path.dirname(staging)
    if os.path.basename(parent) in (_LAKE_ROOT, _TEMP_ROOT):
        with contextlib.suppress(OSError):
            os.rmdir(parent)


class _Writer:
    """One task's staged output: a Parquet file per record type, and the summary of what it holds.

    Decoded batches can be small (a generated log's NoOp runs cut them); they are gathered into
    chunks of about :data:`ROW_GROUP` rows (runs are at most 65,536), and each chunk is split by type
    with one stable sort and written at once: a task holds one chunk in memory. A file is written
    under a hidden temporary name and renamed when complete, so concurrent attempts of one task
    (speculation) each leave a whole file and Spark never reads a partial one.
    """

    def __init__(self, staging: str, task: int) -> None:
        self.staging, self.task = staging, task
        self.chunk: list[pa.RecordBatch] = []
        self.files: dict[str | None, tuple[pq.ParquetWriter, str, str]] = {}  # writer, temporary, final
        self.spans: dict[tuple, list[int]] = {}

    def write(self, batch: pa.RecordBatch) -> None:
        self.chunk.append(batch)
        if sum(b.num_rows for b in self.chunk) >= ROW_GROUP:
            self._split()

    def _split(self) -> None:
        rows = pa.Table.from_batches(self.chunk, DECODED_SCHEMA)
        self.chunk = []
        count_spans(rows, self.spans)
        types = rows.column("type").combine_chunks().dictionary_encode()
        codes = types.indices.fill_null(-1).to_numpy()
        order = np.argsort(codes, kind="stable")  # by type, offset order kept within a type
        codes = codes[order]
        rows = rows.take(order).drop_columns(["type"])
        bounds = [0, *(np.flatnonzero(codes[1:] != codes[:-1]) + 1).tolist(), len(codes)]
        for lo, hi in zip(bounds, bounds[1:]):
            value = None if codes[lo] < 0 else types.dictionary[codes[lo]].as_py()
            self._file(value).write_table(rows.slice(lo, hi - lo), row_group_size=ROW_GROUP)

    def _file(self, value: str | None) -> pq.ParquetWriter:
        if value not in self.files:
            folder = os.path.join(self.staging, f"type={NULL_PARTITION if value is None else value}")
            os.makedirs(folder, exist_ok=True)
            name = f"part-{self.task:05d}.parquet"
            temporary = os.path.join(folder, f".{name}.{uuid.uuid4().hex}")
            # dictionaries for the repetitive strings only, no statistics: Spark reads these files about
            # twice as fast as pyarrow's defaults, and writes the Delta tables from them a fifth faster
            writer = pq.ParquetWriter(
                temporary,
                _FILE_SCHEMA,
                compression="snappy",
                write_statistics=False,
                use_dictionary=["control_type", "payload", "source_file"],
            )
            self.files[value] = (writer, temporary, os.path.join(folder, name))
        return self.files[value][0]

    def close(self) -> None:
        """Write what is left and publish the files under their final names."""
        if self.chunk:
            self._split()
        for writer, temporary, final in self.files.values():
            writer.close()
            os.replace(temporary, final)

    def summary(self, issues: list[Issue]) -> pa.RecordBatch:
        return pa.RecordBatch.from_pylist(summary_rows(self.spans, issues), SUMMARY_SCHEMA)


Spans = dict[tuple, list[int]]
"""Per (file, snapshot end offset, snapshot epoch, record type, control flag): [count, lowest, highest offset]."""


def count_spans(rows: pa.Table, spans: Spans) -> None:
    """Add the records ``rows`` (:data:`~metadata.log.columns.DECODED_SCHEMA`) to ``spans``."""
    for row in (
        rows.group_by(_KEYS, use_threads=False)
        .aggregate([("offset", "count"), ("offset", "min"), ("offset", "max")])
        .to_pylist()
    ):
        key = tuple(row[k] for k in _KEYS)
        span = spans.setdefault(key, [0, row["offset_min"], row["offset_max"]])
        span[0] += row["offset_count"]
        span[1], span[2] = min(span[1], row["offset_min"]), max(span[2], row["offset_max"])


def summary_rows(spans: Spans, issues: list[Issue]) -> list[dict]:
    """A task's summary (:data:`SUMMARY_SCHEMA` rows): its spans, then one row per issue the readers reported."""
    empty = dict.fromkeys(SUMMARY_SCHEMA.names)
    rows = [{**empty, **dict(zip(_KEYS, key)), "n": n, "lo": lo, "hi": hi} for key, (n, lo, hi) in spans.items()]
    return rows + [{**empty, "source_file": i.file, "issue_severity": i.severity, "issue": str(i)} for i in issues]


def decoded(task: dict, issues: list[Issue]) -> Iterator[pa.RecordBatch]:
    """The records of one task row, decoded (:func:`~metadata.log.columns.decode_to_arrow`)."""
    return decode_to_arrow(
        InputFile.from_json(task["file"]),
        ReadOptions.from_json(task["options"]),
        issues,
        task["start"],
        task["end"],
    )


def stage_tasks(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Spark task body: decode and stage the files/ranges listed in the input rows (:data:`TASK_SCHEMA`)."""
    for batch in batches:
        for task in batch.to_pylist():
            writer = _Writer(task["staging"], task["task"])
            issues: list[Issue] = []
            try:
                for records in decoded(task, issues):
                    writer.write(records)
                writer.close()
            except OSError as exc:  # the staging directory, not the input: decode errors are issues
                issues.append(Issue(file=task["staging"], severity="fatal", message=f"cannot stage: {exc}"))
            yield writer.summary(issues)


def decode_task(file: str, start: int, end: int | None, options: str) -> tuple[pa.Table, list[dict]]:
    """One decode task in process: the records of ``file`` (:meth:`InputFile.to_json`) from byte ``start`` to
    ``end``, and its summary (:func:`summary_rows`), as a Spark task stages and summarises them."""
    issues: list[Issue] = []
    rows = pa.Table.from_batches(
        list(decode_to_arrow(InputFile.from_json(file), ReadOptions.from_json(options), issues, start, end)),
        DECODED_SCHEMA,
    )
    spans: Spans = {}
    count_spans(rows, spans)
    return rows, summary_rows(spans, issues)
