"""The fast decode paths: vectorised NoOp runs and CRC-32C, Arrow columns, JSON payload text — each
checked against the per-batch path on real-format bytes built with the project's encoder."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from crc32c import crc32c

from metadata.log import readers
from metadata.log.codec.batch import HEADER_SIZE, crc32c_rows, encode_batch
from metadata.log.codec.records import encode_metadata_value
from metadata.log.columns import DECODED_SCHEMA, decode_to_arrow
from metadata.log.readers import InputFile, InputKind, NoOpRun, ReadOptions, iter_segment_items

NOOP = readers.NOOP_VALUE
TOPIC = encode_metadata_value("TOPIC_RECORD", 0, {"name": 't\u00e9"x', "topicId": "f62ptyETTjet8SL5ZeREiw"})


def _noops(first: int, count: int, epoch: int = 3, t0: int = 1_700_000_000_000) -> bytes:
    return b"".join(
        encode_batch(first + i, [(None, NOOP)], leader_epoch=epoch, timestamp=t0 + 500 * i) for i in range(count)
    )


def _decode(tmp_path, buf: bytes, options: ReadOptions, vectorised: bool, monkeypatch) -> tuple[pa.Table, list]:
    path = tmp_path / "seg.log"
    path.write_bytes(buf)
    f = InputFile(path=str(path), kind=InputKind.SEGMENT, size=len(buf))
    issues: list = []
    with monkeypatch.context() as m:
        if not vectorised:
            m.setattr(readers, "MIN_RUN", 10**9)
        table = pa.Table.from_batches(list(decode_to_arrow(f, options, issues, batch_rows=100)), schema=DECODED_SCHEMA)
    return table, [str(i) for i in issues]


def _same_as_per_batch(
    tmp_path, monkeypatch, buf: bytes, options: ReadOptions | None = None
) -> tuple[pa.Table, list[str]]:
    options = options or ReadOptions()
    fast, fast_issues = _decode(tmp_path, buf, options, True, monkeypatch)
    slow, slow_issues = _decode(tmp_path, buf, options, False, monkeypatch)
    assert fast.equals(slow) and fast_issues == slow_issues
    return fast, fast_issues


def _runs(buf: bytes) -> list[int]:
    return [len(i) for i in iter_segment_items(buf, "seg.log", [], ReadOptions()) if isinstance(i, NoOpRun)]


def test_vectorised_crc_equals_crc32c():
    rng = np.random.default_rng(5)
    for width in (1, 7, 51, 300):
        rows = rng.integers(0, 256, (200, width), dtype=np.uint8)
        rows[::4] = rows[1]
        assert crc32c_rows(rows).tolist() == [crc32c(r.tobytes()) for r in rows]
    batches = np.frombuffer(_noops(0, 50), np.uint8).reshape(50, -1)
    assert crc32c_rows(batches[:, 21:]).tolist() == [int.from_bytes(b[17:21].tobytes(), "big") for b in batches]


def test_noop_run_is_decoded_column_wise_with_the_per_batch_output(tmp_path, monkeypatch):
    buf = encode_batch(0, [(None, TOPIC)], leader_epoch=1, timestamp=5) + _noops(1, 1000)
    assert sum(_runs(buf)) == 1000
    table, _ = _same_as_per_batch(tmp_path, monkeypatch, buf)
    assert table.column("offset").to_pylist() == list(range(1001))
    assert set(table.column("payload").to_pylist()[1:]) == {"{}"}


def test_run_broken_by_other_batches_and_offset_or_epoch_remarks(tmp_path, monkeypatch):
    topic = encode_batch(300, [(None, TOPIC), (None, NOOP)], leader_epoch=3, timestamp=9)
    buf = _noops(0, 300) + topic + _noops(302, 100) + _noops(500, 40) + _noops(540, 40, epoch=2)
    assert len(_runs(buf)) >= 4
    _, issues = _same_as_per_batch(tmp_path, monkeypatch, buf)
    assert any("expected 402, batch starts at 500" in i for i in issues)
    assert any("epoch went back from 3 to 2" in i for i in issues)


@pytest.mark.parametrize("attributes", [0x20, 0x01])
def test_noop_bytes_in_a_control_or_compressed_batch_are_not_a_noop(tmp_path, monkeypatch, attributes):
    """Only a plain data batch holding the NoOp bytes is a NoOp: with the control bit the record needs a
    control key; with a codec bit the bytes are not gzip (Kafka rejects both)."""
    batch = bytearray(_noops(0, 1))
    batch[21:23] = attributes.to_bytes(2, "big")
    batch[17:21] = crc32c(bytes(batch[21:])).to_bytes(4, "big")
    single = bytes(batch)
    run = b"".join(_rebased(single, i) for i in range(40))
    for buf in (single, run):
        table, issues = _same_as_per_batch(tmp_path, monkeypatch, buf)
        assert table.num_rows == 0 and len(issues) == 1 and "byte 0, offset 0: " in issues[0]


def _rebased(batch: bytes, offset: int) -> bytes:
    """``batch`` moved to base offset ``offset`` (the CRC does not cover the base offset)."""
    return offset.to_bytes(8, "big") + batch[8:]


@pytest.mark.parametrize("where", [21, 30, 40, HEADER_SIZE + 5, 17])
def test_corrupt_batch_in_a_run_is_caught_with_the_per_batch_message(tmp_path, monkeypatch, where):
    buf = bytearray(_noops(0, 500))
    size = len(buf) // 500
    buf[250 * size + where] ^= 0x04
    strict, fatal = _same_as_per_batch(tmp_path, monkeypatch, bytes(buf))
    assert len(fatal) == 1 and f"byte {250 * size}, offset 250: " in fatal[0]
    assert strict.column("offset").to_pylist()[:250] == list(range(250))
    gaps, _ = _same_as_per_batch(tmp_path, monkeypatch, bytes(buf), ReadOptions(allow_gaps=True))
    assert gaps.column("offset").to_pylist() == [o for o in range(500) if o != 250]


def test_torn_tail_garbage_and_zero_tail_after_a_run(tmp_path, monkeypatch):
    buf = _noops(0, 200)
    size = len(buf) // 200
    for damaged in (buf[:-30], buf + bytes(5000), buf[: 100 * size] + b"garbage!" + buf[100 * size :]):
        for options in (ReadOptions(), ReadOptions(allow_gaps=True)):
            _same_as_per_batch(tmp_path, monkeypatch, damaged, options)


def test_random_damage_matches_the_per_batch_path(tmp_path, monkeypatch):
    rng = random.Random(11)
    clean = _noops(0, 120) + encode_batch(120, [(None, TOPIC)], leader_epoch=3, timestamp=1) + _noops(121, 120)
    for _ in range(25):
        buf = bytearray(clean)
        for _ in range(rng.randint(1, 3)):
            buf[rng.randrange(len(buf))] ^= 1 << rng.randrange(8)
        for options in (ReadOptions(), ReadOptions(allow_gaps=True)):
            _same_as_per_batch(tmp_path, monkeypatch, bytes(buf), options)


def test_snapshot_starting_with_a_noop_run_is_rejected_at_its_first_batch(tmp_path):
    path = tmp_path / "00000000000000000040-0000000003.checkpoint"
    path.write_bytes(_noops(0, 40))
    f = readers.discover(path)[0]
    found: list = []
    assert not any(b.num_rows for b in decode_to_arrow(f, ReadOptions(), found))
    issues = [str(i) for i in found]
    assert len(issues) == 1 and issues[0].endswith(f"{path}, byte 0: First control record is not a snapshot header")


def test_repeated_and_unknown_tags_give_the_dicts_json():
    from metadata.log.codec.message import json_text
    from metadata.log.codec.records import decode_metadata_value

    raw = encode_metadata_value("PARTITION_CHANGE_RECORD", 0, {"partitionId": 1, "topicId": "f62ptyETTjet8SL5ZeREiw"})

    def leader(n: int) -> bytes:  # tag 1, 4 bytes
        return bytes.fromhex("0104") + n.to_bytes(4, "big", signed=True)

    for tags in ([leader(3), leader(-1)], [leader(-1), leader(3)], [leader(3), bytes.fromhex("1e01ff")]):
        body = raw[:-1] + bytes((len(tags),)) + b"".join(tags)
        data = decode_metadata_value(body)[2]
        assert decode_metadata_value(body, json_payload=True)[2] == json_text(data)
    assert "leader" in data and data["_unknownTaggedFields"] == [{"tag": 30, "data": "/w=="}]


def test_staged_files_hold_exactly_the_decoded_rows_and_a_retry_overwrites_them(tmp_path, monkeypatch):
    """A decode task's staging (Parquet per record type, written in row groups) holds the decoder's rows,
    in offset order within each type; its summary counts and spans them; a second run of the same
    task (a retried Spark task) leaves the same files, not twice the rows."""
    import pyarrow.dataset as ds

    from metadata.lake import staging

    monkeypatch.setattr(staging, "ROW_GROUP", 50)  # several chunks and row groups per type
    segment = Path(__file__).resolve().parent.parent / "data" / "sample" / "__cluster_metadata-0"
    f = readers.discover(sorted(segment.glob("*.log"))[0])[0]
    expected = pa.Table.from_batches(list(decode_to_arrow(f, ReadOptions(), [])), schema=DECODED_SCHEMA)
    task = pa.RecordBatch.from_pylist(
        [
            {
                "task": 3,
                "file": f.to_json(),
                "start": 0,
                "end": None,
                "options": ReadOptions().to_json(),
                "staging": str(tmp_path),
            }
        ]
    )
    for _ in range(2):
        summary = pa.Table.from_batches(list(staging.stage_tasks(iter([task])))).to_pylist()
    files = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*.parquet"))
    assert files == sorted(
        {f"type={t or staging.NULL_PARTITION}/part-00003.parquet" for t in expected.column("type").to_pylist()}
    )
    staged = ds.dataset(tmp_path, format="parquet", partitioning="hive").to_table()
    staged = staged.set_column(staged.schema.get_field_index("type"), "type", staged.column("type").cast(pa.string()))
    assert staged.num_rows == expected.num_rows
    assert staged.sort_by("offset").select(DECODED_SCHEMA.names).equals(expected.sort_by("offset"))
    for t in {r["type"] for r in summary}:
        offsets = staged.filter(pc.equal(staged.column("type"), t) if t else pc.is_null(staged.column("type")))
        assert offsets.column("offset").to_pylist() == sorted(offsets.column("offset").to_pylist())
    assert sum(r["n"] for r in summary) == expected.num_rows and not any(r["issue"] for r in summary)
    for r in summary:
        rows = expected.filter(
            pc.equal(expected.column("type"), r["type"]) if r["type"] else pc.is_null(expected.column("type"))
        )
        rows = rows.filter(pc.equal(rows.column("is_control"), r["is_control"]))
        assert (r["n"], r["lo"], r["hi"]) == (
            rows.num_rows,
            pc.min(rows.column("offset")).as_py(),
            pc.max(rows.column("offset")).as_py(),
        )


def test_a_staging_directory_that_cannot_be_written_is_one_fatal_issue(tmp_path):
    """A task that cannot write its staging reports it (naming the directory) instead of dying."""
    from metadata.lake import staging

    blocker = tmp_path / "not-a-directory"
    blocker.write_text("")
    segment = Path(__file__).resolve().parent.parent / "data" / "sample" / "__cluster_metadata-0"
    f = readers.discover(sorted(segment.glob("*.log"))[0])[0]
    task = pa.RecordBatch.from_pylist(
        [
            {
                "task": 0,
                "file": f.to_json(),
                "start": 0,
                "end": None,
                "options": ReadOptions().to_json(),
                "staging": str(blocker / "run"),
            }
        ]
    )
    summary = pa.Table.from_batches(list(staging.stage_tasks(iter([task])))).to_pylist()
    fatal = [r["issue"] for r in summary if r["issue_severity"] == "fatal"]
    assert len(fatal) == 1 and fatal[0].startswith(f"{blocker / 'run'}: cannot stage: ")
