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
    rows: list[tuple] = []
    source = f.path

    def flush() -> pa.RecordBatch:
        columns = list(zip(*rows))
        rows.clear()
        return pa.RecordBatch.from_arrays([pa.array(c, type=t.type) for c, t in zip(columns, DECODED_SCHEMA)],
                                          schema=DECODED_SCHEMA)

    issues: list[Issue] = []
    try:
        for section, row in iter_file_rows(f, issues, options, start, end):
            data = row[13]
            if section == "log":
                snapshot: tuple = (None, None)
            elif section == "bootstrap":  # epoch -1: never the id of a real (0, 0) bootstrap snapshot
                snapshot = (0, -1)
            else:
                snapshot = tuple(map(int, section.split(":")[1:]))
            rows.append(row[:13] + (("{}" if not data else _dumps(data)) if data is not None else None,
                                    row[14], row[15], source) + snapshot + (None, None))
            if len(rows) >= batch_rows:
                yield flush()
    except Exception as exc:  # noqa: BLE001 — every failure becomes one reported error row
        issues.append(Issue(file=source, severity="fatal", message=str(exc) or type(exc).__name__))
    if rows:
        yield flush()
    for issue in issues:  # issue rows: the offset column is null; batch_base_offset carries the issue's offset
        rows.append((None, issue.offset) + (None,) * 13 + (issue.position, issue.file, None, None,
                                                           issue.severity, str(issue)))
    if rows:
        yield flush()
