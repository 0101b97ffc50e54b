"""Decoded rows → Arrow columns: the hot path of ingest (no model object per record).

:data:`DECODED_SCHEMA` is the output of the Spark decode tasks: one row per record of a log,
snapshot or dump file, plus ``issue`` rows (offset null) carrying what the reader reported.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pyarrow as pa

from metadata.readers import InputFile, Issue, ReadOptions, iter_file_rows

DECODED_SCHEMA = pa.schema([
    ("offset", pa.int64()), ("batch_base_offset", pa.int64()), ("batch_last_offset", pa.int64()),
    ("batch_leader_epoch", pa.int32()), ("timestamp", pa.int64()), ("producer_id", pa.int64()),
    ("producer_epoch", pa.int32()), ("is_transactional", pa.bool_()), ("is_control", pa.bool_()),
    ("control_type", pa.string()), ("type", pa.string()), ("api_key", pa.int32()), ("version", pa.int32()),
    ("payload", pa.string()), ("raw", pa.binary()), ("position", pa.int64()), ("source_file", pa.string()),
    ("snapshot_end_offset", pa.int64()), ("snapshot_epoch", pa.int32()),
    ("issue_severity", pa.string()), ("issue", pa.string()),
])

_N_ROW = 16  # fields of a decoded row before the section/issue columns
_dumps = json.JSONEncoder(separators=(",", ":")).encode


def payload_json(data: dict | None) -> str | None:
    """Canonical payload text: compact JSON in Kafka's field order."""
    return None if data is None else _dumps(data)


def decode_to_arrow(f: InputFile, options: ReadOptions, start: int = 0, end: int | None = None,
                    batch_rows: int = 65536) -> Iterator[pa.RecordBatch]:
    """Decode one input file into Arrow batches of :data:`DECODED_SCHEMA`; issues come last.

    A fatal decode error is not raised here but emitted as an ``error`` issue row, so that a
    Spark task never dies with a Python traceback: the driver turns it into one clear error.
    """
    cols: list[list] = [[] for _ in DECODED_SCHEMA]
    names = DECODED_SCHEMA.names
    source, payload_i, source_i = f.path, names.index("payload"), names.index("source_file")

    def flush() -> pa.RecordBatch:
        batch = pa.RecordBatch.from_arrays([pa.array(c, type=t.type) for c, t in zip(cols, DECODED_SCHEMA)],
                                           schema=DECODED_SCHEMA)
        for c in cols:
            c.clear()
        return batch

    issues: list[Issue] = []
    try:
        for section, row in iter_file_rows(f, issues, options, start, end):
            for i in range(_N_ROW):
                cols[i].append(row[i])
            cols[payload_i][-1] = _dumps(row[13]) if row[13] is not None else None
            cols[source_i].append(source)
            if section == "log":
                cols[17].append(None)
                cols[18].append(None)
            else:
                end, epoch = (0, 0) if section == "bootstrap" else map(int, section.split(":")[1:])
                cols[17].append(end)
                cols[18].append(epoch)
            cols[19].append(None)
            cols[20].append(None)
            if len(cols[0]) >= batch_rows:
                yield flush()
    except Exception as exc:  # noqa: BLE001 — every failure becomes one reported error row
        issues.append(Issue(file=source, severity="fatal", message=str(exc) or type(exc).__name__))
    if cols[0]:
        yield flush()
    for issue in issues:
        row = [None] * len(names)
        row[names.index("offset")] = None
        row[source_i] = issue.file
        row[names.index("position")] = issue.position
        row[names.index("batch_base_offset")] = issue.offset
        row[19], row[20] = issue.severity, str(issue)
        for c, v in zip(cols, row):
            c.append(v)
    if cols[0]:
        yield flush()
