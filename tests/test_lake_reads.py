"""Reads of a lake's Parquet files without Spark (:mod:`metadata.lake.files`): a narrow read — the filter's
columns first, the others only from the row groups holding a match — returns exactly the rows and columns
of a plain filtered read, for keys spread over every row group, ranges, sets and files of another schema."""

from __future__ import annotations

import random
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from metadata.lake.files import _read

TOPICS = [f"topic-{i}" for i in range(30)]


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    """Three files of version-like rows ordered by offset, in row groups of 64 rows (a group's first and last
    rows of the first file have topics of their own); the last one was written before the ``directories``
    column existed."""
    root: Path = tmp_path_factory.mktemp("narrow")
    rng = random.Random(11)
    paths, offset = [], 0
    for n in range(3):
        rows = []
        for i in range(1500):
            offset += rng.randint(1, 3)
            edge = {0: "first-of-group", 63: "last-of-group"}.get(i % 64) if n == 0 else None
            rows.append(
                {
                    "topic": edge or rng.choice(TOPICS),
                    "partitionId": rng.randrange(8),
                    "from_offset": offset,
                    "to_offset": None if rng.random() < 0.2 else offset + rng.randint(1, 500),
                    "replicas": [rng.randrange(5) for _ in range(3)],
                    "directories": [f"dir-{rng.randrange(4)}"],
                }
            )
        table = pa.Table.from_pylist(rows)
        if n == 2:
            table = table.drop_columns(["directories"])
        paths.append(str(root / f"part-{n}.parquet"))
        pq.write_table(table, paths[-1], row_group_size=64)
    return paths


SCHEMA = pa.schema(
    [
        ("topic", pa.string()),
        ("partitionId", pa.int64()),
        ("from_offset", pa.int64()),
        ("to_offset", pa.int64()),
        ("replicas", pa.list_(pa.int64())),
        ("directories", pa.list_(pa.string())),
    ]
)

CASES = [
    ("one partition", (pc.field("topic") == "topic-7") & (pc.field("partitionId") == 3), ["topic", "partitionId"]),
    ("one topic", pc.field("topic") == "topic-29", ["topic"]),
    ("no such key", pc.field("topic") == "topic-99", ["topic"]),
    ("first rows of groups", pc.field("topic") == "first-of-group", ["topic"]),
    ("last rows of groups", pc.field("topic") == "last-of-group", ["topic"]),
    (
        "a key over a window",
        (pc.field("topic") == "topic-1") & (pc.field("from_offset") <= 3000) & pc.field("to_offset").is_null(),
        ["topic", "from_offset", "to_offset"],
    ),
    ("offsets", pc.field("from_offset").isin(pa.array([1, 500, 501, 4000, 8000], pa.int64())), ["from_offset"]),
    ("an offset range", (pc.field("from_offset") >= 2000) & (pc.field("from_offset") <= 2100), ["from_offset"]),
]


@pytest.mark.parametrize("name, where, narrow", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("columns", [None, ["from_offset", "directories"]], ids=["all columns", "two columns"])
def test_a_narrow_read_returns_what_a_plain_read_returns(files, name, where, narrow, columns):
    plain = _read(files, where, columns, SCHEMA)
    assert _read(files, where, columns, SCHEMA, narrow).equals(plain)
    assert plain.num_rows == 0 if name == "no such key" else plain.num_rows > 0


@pytest.mark.parametrize("name", ["lake", "lake, 1 {x}", "läke #2%"])
def test_the_committed_state_is_read_in_process_at_any_path(tmp_path: Path, name: str) -> None:
    """``_ingests`` (the newest row: the committed state) read with delta-rs and pyarrow from a lake whose path
    needs quoting in a URI (delta-rs's ``file_uris`` percent-encode it: pyarrow then finds no file). Spark's
    INT96 times, read back as datetimes, are covered where Spark writes the table (``tests/test_lake_damage.py``)."""
    import datetime as dt

    from deltalake import write_deltalake

    from metadata.lake.files import LakeFiles

    at = dt.datetime(2026, 11, 27, 12, 0, 0, 123456, tzinfo=dt.timezone.utc)
    rows = [
        {
            "seq": seq,
            "run_id": f"run-{seq}",
            "committed_at": at + dt.timedelta(seconds=seq),
            "inputs": [f"/logs/{seq}"],
            "records_added": 10 * seq,
            "snapshots_added": 0,
            "high_water_mark": 10 * seq - 1,
            "versions": [("records", seq - 1), ("_ingests", seq)],
        }
        for seq in (1, 2, 3)
    ]
    schema = pa.schema(
        [
            ("seq", pa.int64()),
            ("run_id", pa.string()),
            ("committed_at", pa.timestamp("ns", "UTC")),
            ("inputs", pa.list_(pa.string())),
            ("records_added", pa.int64()),
            ("snapshots_added", pa.int64()),
            ("high_water_mark", pa.int64()),
            ("versions", pa.map_(pa.string(), pa.int64())),
        ]
    )
    lake = tmp_path / name
    for row in (rows[1], rows[2], rows[0]):  # one commit (one file) each, the newest not last
        write_deltalake(str(lake / "_ingests"), pa.Table.from_pylist([row], schema), mode="append")
    state = LakeFiles(str(lake)).state()
    assert (state.seq, state.run_id, state.high_water_mark, state.versions) == (
        3,
        "run-3",
        29,
        {"records": 2, "_ingests": 3},
    )
    assert type(state.committed_at) is dt.datetime and state.committed_at == at + dt.timedelta(seconds=3)
