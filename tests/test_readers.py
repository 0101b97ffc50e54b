"""Readers: directory discovery, damaged files, unknown records, snapshots, kafka-dump-log text."""

from __future__ import annotations

import json
import random
import shutil
import struct
from pathlib import Path

import pytest

from metadata.log.codec.batch import encode_batch
from metadata.log.codec.records import encode_metadata_value
from metadata.log.errors import DecodeError, UnknownRecordError
from metadata.log.readers import (
    InputKind,
    Issue,
    ReadOptions,
    decode_path,
    discover,
    iter_file_rows,
    iter_segment_rows,
    plan_ranges,
    read_log,
    read_snapshots,
    scan_log,
)
from metadata.log.schema import metadata_specs, schema_kafka_version

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "data" / "sample"
SEGMENT = SAMPLE / "__cluster_metadata-0" / "00000000000000000000.log"
KAFKA = ROOT / "tests" / "fixtures" / "kafka"


def _batch_bounds(buf: bytes, count: int) -> list[int]:
    pos, bounds = 0, [0]
    for _ in range(count):
        pos += 12 + struct.unpack_from(">i", buf, pos + 8)[0]
        bounds.append(pos)
    return bounds


def _rows(buf: bytes, options: ReadOptions | None = None) -> tuple[list, list[Issue]]:
    issues: list[Issue] = []
    return list(iter_segment_rows(buf, "seg.log", issues, options or ReadOptions())), issues


def test_discover_reads_segments_and_snapshots_in_order_and_ignores_the_rest(tmp_path):
    d = tmp_path / "__cluster_metadata-0"
    shutil.copytree(SAMPLE / "__cluster_metadata-0", d)
    for junk in (
        "00000000000000000000.index",
        "00000000000000000000.timeindex",
        "00000000000000003012.snapshot",
        "00000000000000003012-0000000008-123.checkpoint.part",
        "quorum-state",
        ".lock",
    ):
        (d / junk).write_bytes(b"junk")
    files = discover(tmp_path)
    assert [f.kind for f in files] == [InputKind.SNAPSHOT] + [InputKind.SEGMENT] * 4
    assert [f.base_offset for f in files[1:]] == sorted(f.base_offset for f in files[1:])
    assert (files[0].end_offset, files[0].epoch) == (3012, 8)
    assert discover(d) == files


def test_sample_decodes_to_the_generator_report():
    report = json.loads((SAMPLE / "generate-report.json").read_text())
    rows = [r for r in decode_path(SAMPLE) if r["section"] == "log"]
    assert len(rows) == report["total_records"]
    assert [r["offset"] for r in rows] == list(range(report["first_offset"], report["last_offset"] + 1))
    by_type: dict[str, int] = {}
    for r in rows:
        if r["type"]:
            by_type[r["type"]] = by_type.get(r["type"], 0) + 1
    assert by_type == report["by_type"]


def test_a_flipped_bit_anywhere_in_a_batch_is_caught():
    whole = SEGMENT.read_bytes()
    bounds = _batch_bounds(whole, 4)
    clean, _ = _rows(whole[: bounds[4]])
    lo, hi = bounds[1], bounds[2]  # flip every bit of the second batch
    for byte in range(lo, hi):
        for bit in range(8):
            damaged = bytearray(whole[: bounds[4]])
            damaged[byte] ^= 1 << bit
            try:
                rows, issues = _rows(bytes(damaged))
            except DecodeError as exc:
                assert exc.file == "seg.log" and exc.position is not None, exc
                continue
            assert issues, f"flip of byte {byte} bit {bit} went unnoticed"
            assert rows != clean or any("epoch" in i.message or "offset" in i.message for i in issues)


def test_crc_mismatch_names_file_position_and_base_offset_and_allow_gaps_skips_it():
    whole = SEGMENT.read_bytes()
    bounds = _batch_bounds(whole, 3)
    damaged = bytearray(whole)
    damaged[bounds[1] + 70] ^= 0xFF
    base_offset = struct.unpack_from(">q", whole, bounds[1])[0]
    with pytest.raises(DecodeError) as info:
        _rows(bytes(damaged))
    assert "CRC mismatch" in str(info.value)
    assert (info.value.file, info.value.position, info.value.offset) == ("seg.log", bounds[1], base_offset)
    rows, issues = _rows(bytes(damaged), ReadOptions(allow_gaps=True))
    clean, _ = _rows(whole)
    missing = {r[0] for r in clean} - {r[0] for r in rows}
    assert missing == {r[0] for r in clean if r[1] == base_offset}
    assert any(i.severity == "error" and i.position == bounds[1] for i in issues)


def test_garbage_in_the_middle_is_an_error_and_allow_gaps_resynchronises():
    whole = SEGMENT.read_bytes()
    bounds = _batch_bounds(whole, 3)
    damaged = whole[: bounds[2]] + bytes(range(1, 40)) + whole[bounds[2] :]
    with pytest.raises(DecodeError) as info:
        _rows(damaged)
    assert info.value.position == bounds[2]
    rows, issues = _rows(damaged, ReadOptions(allow_gaps=True))
    clean, _ = _rows(whole)
    assert [r[0] for r in rows] == [r[0] for r in clean]
    assert any("skipped bytes" in i.message and i.position == bounds[2] for i in issues)


def test_truncated_last_batch_is_reported_and_the_prefix_kept():
    whole = SEGMENT.read_bytes()
    bounds = _batch_bounds(whole, 5)
    rows, issues = _rows(whole[: bounds[5] - 7])
    clean, _ = _rows(whole[: bounds[4]])
    assert rows == clean
    assert len(issues) == 1 and "truncated last batch" in issues[0].message and issues[0].position == bounds[4]


def test_zero_filled_tail_ends_the_data():
    whole = SEGMENT.read_bytes()
    bounds = _batch_bounds(whole, 2)
    rows, issues = _rows(whole[: bounds[2]] + bytes(8192))
    assert len(rows) == len(_rows(whole[: bounds[2]])[0]) and "zero-filled" in issues[0].message


def _segment_with(values: list[bytes]) -> bytes:
    return b"".join(encode_batch(i, [(None, v)], leader_epoch=1, timestamp=1000 + i) for i, v in enumerate(values))


def test_unknown_record_type_names_file_and_offset_or_is_kept_raw(tmp_path):
    noop = encode_metadata_value("NO_OP_RECORD", 0, {})
    unknown = bytes.fromhex("01630000")  # apiKey 99
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(_segment_with([noop, unknown, noop]))
    with pytest.raises(UnknownRecordError) as info:
        list(decode_path(path))
    assert info.value.offset == 1 and info.value.file == str(path)
    assert str(info.value) == (
        f"{path}, byte {len(_segment_with([noop]))}, offset 1: apiKey 99 v0 (newer than Kafka "
        f"{schema_kafka_version()}, whose apiKeys end at {max(metadata_specs())}) is not known to this "
        "kraft-replay: upgrade kraft-replay, or use --skip-unknown to keep such records raw"
    )
    f = discover(path)[0]
    rows = [r for _, r in iter_file_rows(f, [], ReadOptions(skip_unknown=True))]
    assert rows[1][10] is None and rows[1][11] == 99 and rows[1][14] == unknown


def test_non_consecutive_offsets_are_reported():
    noop = encode_metadata_value("NO_OP_RECORD", 0, {})
    buf = encode_batch(0, [(None, noop)], leader_epoch=1, timestamp=1) + encode_batch(
        5, [(None, noop)], leader_epoch=1, timestamp=2
    )
    rows, issues = _rows(buf)
    assert [r[0] for r in rows] == [0, 5] and "expected 1, batch starts at 5" in issues[0].message


def test_snapshot_must_start_with_a_header(tmp_path):
    path = tmp_path / "00000000000000000010-0000000001.checkpoint"
    path.write_bytes(_segment_with([encode_metadata_value("NO_OP_RECORD", 0, {})]))
    with pytest.raises(DecodeError, match="snapshot header"):
        list(decode_path(path))
    with pytest.raises(DecodeError, match="snapshot header") as info:
        read_snapshots(tmp_path)
    assert info.value.file == str(path)


def test_sample_snapshot_has_header_and_footer():
    snapshot = next(f for f in discover(SAMPLE) if f.kind is InputKind.SNAPSHOT)
    issues: list[Issue] = []
    rows = [r for _, r in iter_file_rows(snapshot, issues, ReadOptions())]
    assert rows[0][9] == "SNAPSHOT_HEADER" and rows[-1][9] == "SNAPSHOT_FOOTER" and not issues
    assert rows[1][10] == "FEATURE_LEVEL_RECORD"


def test_byte_ranges_cover_a_segment_exactly():
    f = discover(SEGMENT)[0]
    ranges = plan_ranges(f, 20_000)
    assert len(ranges) > 3 and ranges[0][0] == 0 and ranges[-1][1] is None
    assert all(a[1] == b[0] for a, b in zip(ranges, ranges[1:]))
    pieces = [r for start, end in ranges for _, r in iter_file_rows(f, [], ReadOptions(), start, end)]
    assert pieces == [r for _, r in iter_file_rows(f, [], ReadOptions())]


def test_byte_ranges_hop_equal_sized_batches_like_one_at_a_time(tmp_path, monkeypatch):
    """Stretches of equal-sized batches (NoOps) are hopped over with numpy: the cuts are the ones the
    one-batch-at-a-time hop finds, for runs broken by other sizes, a torn tail and any split size."""
    from metadata.log import readers

    noop = readers.NOOP_VALUE
    topic = encode_metadata_value("TOPIC_RECORD", 0, {"name": "t", "topicId": "f62ptyETTjet8SL5ZeREiw"})
    batches, offset = [], 0
    for run in (40, 3, 700, 17, 16, 1, 250):
        batches += [encode_batch(offset + i, [(None, noop)], leader_epoch=1, timestamp=i) for i in range(run)]
        offset += run
        batches.append(encode_batch(offset, [(None, topic)] * (1 + run % 3), leader_epoch=1, timestamp=0))
        offset += 1 + run % 3
    data = b"".join(batches)
    for tail in (b"", data[-30:-10]):
        path = tmp_path / "00000000000000000000.log"
        path.write_bytes(data + tail)
        f = discover(path)[0]
        for split in (100, 997, 4096, 20_000, len(data) // 2):
            fast = plan_ranges(f, split)
            with monkeypatch.context() as m:
                m.setattr(readers, "MIN_RUN", 10**9)
                assert fast == plan_ranges(f, split), split
            assert all(a[1] == b[0] for a, b in zip(fast, fast[1:]))


KAFKA_SCENARIOS = sorted(p for p in KAFKA.glob("*/*") if (p / "dump-log.txt").is_file())


@pytest.mark.parametrize("scenario", KAFKA_SCENARIOS, ids=lambda p: f"{p.parent.name}-{p.name}")
@pytest.mark.parametrize("dump", ["dump-log.txt", "dump-log-skip-metadata.txt"])
def test_dump_log_text_reads_like_the_binary_log(scenario, dump):
    """Kafka's own kafka-dump-log rendering gives the same records as our binary decoder."""
    binary = [r for r in decode_path(scenario / "__cluster_metadata-0") if r["section"] == "log"]
    text = list(decode_path(scenario / dump))
    assert [r["offset"] for r in text] == [r["offset"] for r in binary]
    for ours, theirs in zip(binary, text):
        assert (ours["type"], ours["timestamp"]) == (theirs["type"], theirs["timestamp"]), ours["offset"]
        if ours["control_type"] and dump == "dump-log.txt":
            assert ours["control_type"] == theirs["control_type"], ours["offset"]
            assert theirs["data"] in ({}, ours["data"]), ours["offset"]  # 3.x prints no LeaderChange body
        if ours["type"]:
            assert (ours["version"], ours["data"]) == (theirs["version"], theirs["data"]), ours["offset"]


def _noop_runs_segment(path: Path) -> Path:
    """A segment of NoOp runs (decoded column-wise) broken by topic records."""
    noop = encode_metadata_value("NO_OP_RECORD", 0, {})
    topic = encode_metadata_value("TOPIC_RECORD", 0, {"name": "t", "topicId": "f62ptyETTjet8SL5ZeREiw"})
    batches, offset = [], 0
    for run in (40, 3, 700, 17, 1):
        batches += [encode_batch(offset + i, [(None, noop)], leader_epoch=1, timestamp=i) for i in range(run)]
        offset += run
        batches.append(encode_batch(offset, [(None, topic)] * 3, leader_epoch=2, timestamp=offset))
        offset += 3
    path.write_bytes(b"".join(batches))
    return path


@pytest.mark.parametrize(
    "name",
    ["sample", "noop-runs", "4.1.1/basic/dump-log.txt", *(f"{p.parent.name}/{p.name}" for p in KAFKA_SCENARIOS)],
)
def test_a_scanned_log_reads_like_read_log_in_any_order_of_access(name, tmp_path):
    """:func:`scan_log` decodes batches as they are asked for: any ranges, in any order, give what
    :func:`read_log` reads, and its positions (record at or before, batch start, offset at a time) are
    those of the records."""
    path = {"sample": SAMPLE, "noop-runs": None}.get(name, KAFKA / name)
    if path is None:
        path = _noop_runs_segment(tmp_path / "00000000000000000000.log")
    whole = read_log(path)
    log = scan_log(path)
    assert len(log) == len(whole) and log.decoded == (len(whole) if path.suffix == ".txt" else 0)
    rng = random.Random(name)
    offsets = [r.offset for r in whole]
    probes = rng.sample(range(offsets[0] - 1, offsets[-1] + 2), min(40, len(offsets)))
    for a, b in zip(probes, probes[1:]):
        lo, hi = min(a, b), max(a, b)
        assert log.between(lo, hi) == [r for r in whole if lo <= r.offset <= hi], (lo, hi)
    assert log[-1] == whole[-1] and log[3:9] == whole[3:9] and log[::7] == whole[::7]
    assert list(log) == whole and log.decoded == len(whole)
    for o in probes:
        before = [r for r in whole if r.offset <= o]
        at = [r for r in whole if r.offset == o]
        assert log.at_or_before(o) == ((before[-1].offset, before[-1].epoch, before[-1].timestamp) if before else None)
        assert log.batch_start(o) == (at[0].batch_base_offset if at else o)
    for ms in [r.timestamp + d for r in rng.sample(whole, min(20, len(whole))) for d in (-1, 0, 1)]:
        timed = [r.batch_last_offset for r in whole if r.timestamp <= ms]
        assert log.offset_at_time(ms) == (max(timed) if timed else None)
    assert log.bounds() == (offsets[0], offsets[-1])


@pytest.mark.parametrize(
    "path", [SAMPLE, KAFKA / "3.9.1" / "rolling-restart", KAFKA / "4.1.1" / "snapshot-fetch"], ids=lambda p: p.name
)
def test_a_replay_decodes_only_its_snapshot_and_the_batches_after_it(path):
    """``--log``: every batch header is read; the records only of the snapshot the replay starts from and from
    the batch holding its end on. The image is the one a replay of the fully decoded log gives."""
    from image.loader import snapshot_to_start_from
    from image.temporal.reads import MemorySource
    from image.temporal.sources import reference_image

    log, snapshots = scan_log(path), read_snapshots(path)
    whole = read_log(path)
    lazy = MemorySource.replay(log, snapshots)
    end = lazy.bounds()[1]
    eager = read_snapshots(path)
    header_batch = [sum(1 for r in e.records if r.batch_base_offset == e.records[0].batch_base_offset) for e in eager]
    assert [s.records.decoded for s in snapshots] == header_batch  # the header, for its timestamp
    assert reference_image(lazy, end).to_json() == reference_image(MemorySource.replay(whole, eager), end).to_json()
    base = snapshot_to_start_from(lazy.snapshots(), end)
    assert [s.records.decoded for s in snapshots] == [
        len(s.records) if (s.end_offset, s.epoch) == (base.end_offset, base.epoch) else n
        for s, n in zip(snapshots, header_batch)
    ]
    start = next((r.batch_base_offset for r in whole if r.offset >= base.end_offset), None)
    assert log.decoded == sum(1 for r in whole if start is not None and r.offset >= start) < len(whole)


def test_a_scan_checks_the_crc_of_batches_it_does_not_decode(tmp_path):
    d = tmp_path / "__cluster_metadata-0"
    shutil.copytree(SAMPLE / "__cluster_metadata-0", d)
    first = d / SEGMENT.name
    whole = first.read_bytes()
    bounds = _batch_bounds(whole, 3)
    damaged = bytearray(whole)
    damaged[bounds[1] + 70] ^= 0xFF
    first.write_bytes(bytes(damaged))
    with pytest.raises(DecodeError, match="CRC mismatch") as info:
        scan_log(d)
    offset = struct.unpack_from(">q", whole, bounds[1])[0]
    assert (info.value.file, info.value.position, info.value.offset) == (str(first), bounds[1], offset)
