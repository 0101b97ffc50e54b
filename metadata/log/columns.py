"""Decoded batches → Arrow columns: the hot path of ingest (no model object per record).

:data:`DECODED_SCHEMA` is what the decode tasks of an ingest stage: one row per record of a log,
snapshot or dump file; what the readers report goes to a list of :class:`~metadata.log.readers.Issue`.
Batches arrive column-wise from the readers (payloads already JSON text); runs of NoOp batches
arrive as numpy arrays and become Arrow arrays without a Python object per record.
"""

from __future__ import annotations

from collections.abc import Iterator
from operator import itemgetter

import numpy as np
import pyarrow as pa

from metadata.log.codec.message import json_text
from metadata.log.errors import DecodeError
from metadata.log.readers import Batch, InputFile, Issue, NoOpRun, ReadOptions, iter_file_items
from metadata.log.records import BOOTSTRAP_CHECKPOINT_ID

DECODED_SCHEMA = pa.schema(
    [
        ("offset", pa.int64()),
        ("batch_base_offset", pa.int64()),
        ("batch_last_offset", pa.int64()),
        ("batch_leader_epoch", pa.int32()),
        ("timestamp", pa.int64()),
        ("producer_id", pa.int64()),
        ("producer_epoch", pa.int32()),
        ("is_transactional", pa.bool_()),
        ("is_control", pa.bool_()),
        ("control_type", pa.string()),
        ("type", pa.string()),
        ("api_key", pa.int32()),
        ("version", pa.int32()),
        ("payload", pa.string()),
        ("raw", pa.binary()),
        ("position", pa.int64()),
        ("source_file", pa.string()),
        ("snapshot_end_offset", pa.int64()),
        ("snapshot_epoch", pa.int32()),
    ]
)
"""What a decode yields: one row per record of a log, snapshot or dump file; the lake's ``records`` and
``snapshots`` tables take their columns from it (:mod:`metadata.lake.tables`)."""

_TYPES = [f.type for f in DECODED_SCHEMA]
# batch-level columns (one value per batch) and record-level columns, as DECODED_SCHEMA indexes
_BATCH_COLUMNS = (1, 2, 3, 4, 5, 6, 7, 8, 15)
_RECORD_COLUMNS = (0, 9, 10, 11, 12, 13, 14)
_NUMPY = {
    i: {pa.int64(): np.int64, pa.int32(): np.int32, pa.bool_(): np.bool_}[_TYPES[i]]
    for i in (0, 1, 2, 3, 4, 5, 6, 7, 8, 12, 15)
}  # columns of numbers that are never null in record rows


def numpy_array(values: np.ndarray) -> pa.Array:
    """The Arrow array of a 1-D numpy array of numbers or booleans, without nulls (the numbers zero-copy). Unlike
    ``pa.array(values)``, which looks up ``numpy.ma`` to check for a masked array: numpy's import of it costs a
    small command 0.03 s."""
    values = np.ascontiguousarray(values, values.dtype.newbyteorder("="))  # (a big-endian header field: swapped)
    if values.dtype == np.bool_:
        bits = np.packbits(values, bitorder="little")
        return pa.Array.from_buffers(pa.bool_(), len(values), [None, pa.py_buffer(bits)])
    return pa.Array.from_buffers(pa.from_numpy_dtype(values.dtype), len(values), [None, pa.py_buffer(values)])


def payload_json(data: dict | None) -> str | None:
    """Canonical payload text: compact JSON in Kafka's field order."""
    return None if data is None else json_text(data)


def _snapshot(section: str) -> tuple[int | None, int | None]:
    """(snapshot end offset, snapshot epoch) of a section."""
    if section == "log":
        return None, None
    if section == "bootstrap":
        return BOOTSTRAP_CHECKPOINT_ID
    end, epoch = section.split(":")[1:]
    return int(end), int(epoch)


def _constant(value: object, n: int, type_: pa.DataType) -> pa.Array:
    return pa.nulls(n, type_) if value is None else pa.repeat(pa.scalar(value, type_), n)


def _record_batch(columns: dict[int, pa.Array], n: int, source: str, section: str) -> pa.RecordBatch:
    """A record batch from the given columns; source file and snapshot columns filled in."""
    snapshot_end, snapshot_epoch = _snapshot(section)
    columns[16] = _constant(source, n, pa.string())
    columns[17] = _constant(snapshot_end, n, pa.int64())
    columns[18] = _constant(snapshot_epoch, n, pa.int32())
    return pa.RecordBatch.from_arrays([columns[i] for i in range(len(_TYPES))], schema=DECODED_SCHEMA)


def _column(rows: list[tuple], field: int, i: int) -> pa.Array:
    """Column ``i`` of :data:`DECODED_SCHEMA` from ``field`` of every row (numbers never null go through numpy)."""
    values = map(itemgetter(field), rows)
    dtype = _NUMPY.get(i)
    return pa.array(list(values), _TYPES[i]) if dtype is None else numpy_array(np.fromiter(values, dtype, len(rows)))


class _Batches:
    """Decoded batches of one section, collected until they make an Arrow record batch."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.section = "log"
        self.heads: list[tuple] = []
        self.counts: list[int] = []  # records per batch
        self.records: list[tuple] = []

    def add(self, section: str, batch: Batch) -> None:
        self.section = section
        self.heads.append(batch[0])
        self.counts.append(len(batch[1]))
        self.records += batch[1]

    def flush(self) -> pa.RecordBatch:
        heads, records = self.heads, self.records
        n = len(records)
        columns: dict[int, pa.Array] = {}
        for field, i in enumerate(_RECORD_COLUMNS):
            columns[i] = _column(records, field, i)
        repeat = None if len(heads) == n else numpy_array(np.repeat(np.arange(len(heads)), self.counts))
        for field, i in enumerate(_BATCH_COLUMNS):
            values = _column(heads, field, i)
            columns[i] = values if repeat is None else values.take(repeat)
        self.heads, self.counts, self.records = [], [], []
        return _record_batch(columns, n, self.source, self.section)


def _run_batch(run: NoOpRun, source: str, section: str) -> pa.RecordBatch:
    """The Arrow record batch of a NoOp run: straight from its numpy arrays."""
    n = len(run)
    offset = numpy_array(run.offset)
    columns = {
        0: offset,
        1: offset,
        2: offset,
        3: numpy_array(run.leader_epoch),
        4: numpy_array(run.timestamp),
        5: numpy_array(run.producer_id),
        6: numpy_array(run.producer_epoch),
        7: _constant(run.transactional, n, pa.bool_()),
        8: _constant(False, n, pa.bool_()),
        9: pa.nulls(n, pa.string()),
        10: _constant("NO_OP_RECORD", n, pa.string()),
        11: _constant(20, n, pa.int32()),
        12: _constant(0, n, pa.int32()),
        13: _constant("{}", n, pa.string()),
        14: pa.nulls(n, pa.binary()),
        15: numpy_array(run.position),
    }
    return _record_batch(columns, n, source, section)


def decode_to_arrow(
    f: InputFile,
    options: ReadOptions,
    issues: list[Issue],
    start: int = 0,
    end: int | None = None,
    batch_rows: int = 65536,
) -> Iterator[pa.RecordBatch]:
    """Decode one input file (or byte range) into Arrow batches of :data:`DECODED_SCHEMA`.

    What the readers report is appended to ``issues``; a fatal decode error is not raised but
    appended as a ``fatal`` issue, so that a Spark task never dies with a Python traceback: the
    driver turns it into one clear error.
    """
    source = f.path
    pending = _Batches(source)
    try:
        for section, item in iter_file_items(f, issues, options, start, end, json_payload=True):
            if pending.records and (section != pending.section or isinstance(item, NoOpRun)):
                yield pending.flush()
            if isinstance(item, NoOpRun):
                yield _run_batch(item, source, section)
                continue
            pending.add(section, item)
            if len(pending.records) >= batch_rows:
                yield pending.flush()
    except DecodeError as exc:  # the file, byte position and offset, as the readers name them
        issues.append(
            Issue(
                file=exc.file or source, severity="fatal", message=exc.message, position=exc.position, offset=exc.offset
            )
        )
    except Exception as exc:  # noqa: BLE001 — not expected from any input; still one reported error
        issues.append(Issue(file=source, severity="fatal", message=f"{type(exc).__name__}: {exc}"))
    if pending.records:
        yield pending.flush()
