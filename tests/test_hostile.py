"""Hostile input: a small seeded run of the fuzzer (``tests/fuzz.py``; the large one is
``benchmarks/bench_fuzz.py``), and one test per kind of bug it found: compression bombs of every codec,
batches over the decompressed-size limit, offsets outside int64, quadratic resynchronisation, the
kafka-dump-log text reader's tracebacks and lying fields. And: paths inside input files are never
opened or written."""

from __future__ import annotations

import os
import random
import shutil
import struct
import sys
import tempfile
import zlib
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pytest
from crc32c import crc32c

from metadata.log import readers
from metadata.log.codec.batch import encode_batch
from metadata.log.codec.compression import (
    MAX_BATCH_BYTES_ENV,
    MAX_BATCH_DECOMPRESSED_BYTES,
    _limit_from_env,
    compress,
    decompress,
)
from metadata.log.codec.records import encode_metadata_value
from metadata.log.columns import decode_to_arrow
from metadata.log.errors import DecodeError, UnknownRecordError
from metadata.log.readers import (
    NOOP_VALUE,
    InputFile,
    InputKind,
    ReadOptions,
    decode_path,
    discover,
    iter_file_rows,
    iter_segment_rows,
    read_log,
)
from metadata.log.schema import schema_kafka_version
from tests import fuzz

KAFKA = Path(__file__).resolve().parent / "fixtures" / "kafka"
DUMP = KAFKA / "4.1.1" / "basic" / "dump-log.txt"
SEGMENT = KAFKA / "4.1.1" / "basic" / "__cluster_metadata-0" / "00000000000000000000.log"
MIB = 1 << 20


@pytest.fixture(scope="module")
def work():
    """Case files on tmpfs where there is one (a case is a file write), else in the temporary directory."""
    path = Path(tempfile.mkdtemp(prefix="kraft-replay-hostile-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="module")
def corpus(work):
    return fuzz.build_corpus(work / "corpus")


def test_the_unmutated_corpus_decodes(corpus, work):
    cases = fuzz.original_cases(corpus, str(work / "case.bin"))
    assert len(corpus.real) >= 20 and len(corpus.generated) == 10 and len(corpus.dumps) >= 10
    assert [fuzz.run_case(c) for c in cases] == ["accepted"] * len(cases)


def test_seeded_fuzzing_ends_in_rows_or_one_clean_error(corpus, work):
    """1,000 cases of every mutator (108 different outcomes; benchmarks/bench_fuzz.py runs many more): each
    decodes, or both paths raise the same DecodeError naming the file."""
    outcomes: Counter = Counter()
    mutators: Counter = Counter()
    for number in range(1000):
        case = fuzz.make_case(corpus, 17, number, str(work / "case.bin"), 0.25)
        try:
            outcomes[fuzz.run_case(case)] += 1
        except fuzz.Failure as exc:
            pytest.fail(f"case 17:{number} ({case.mutator} on {case.source}: {case.description}): {exc}")
        mutators[case.mutator] += 1
    assert set(mutators) >= set(fuzz.BINARY_MUTATORS) - {"valid-bomb", "resync-trap"} | set(fuzz.TEXT_MUTATORS)
    assert outcomes["accepted"] > 100 and len(outcomes) > 60  # the mutations reach deep and varied errors


# ---------------------------------------------------------------- compression bombs


def _segment_with_batch(batch: bytes) -> bytes:
    """The fixture segment's first two batches, then ``batch`` at the next offset."""
    first = fuzz.split_batches(SEGMENT.read_bytes())[:2]
    base = fuzz.header(first[1])[0] + fuzz.header(first[1])[6] + 1
    return b"".join(first) + struct.pack(">q", base) + batch[8:]


@pytest.mark.parametrize("name", sorted(fuzz._bombs()))
def test_a_compression_bomb_of_every_codec_ends_in_one_clean_error(tmp_path, name):
    """A small batch whose records declare or produce gigabytes: decompression stops at the limit on a
    batch's decompressed size (or the codec's own framing rejects it first), naming file, byte, offset."""
    codec = fuzz._BOMB_CODECS[name.split()[0]]
    batch = fuzz.rebuild(fuzz.split_batches(SEGMENT.read_bytes())[0], b"", codec=codec, compressed=fuzz._bombs()[name])
    path = tmp_path / "00000000000000000000.log"
    data = _segment_with_batch(batch)
    path.write_bytes(data)
    with pytest.raises(DecodeError) as info:
        list(decode_path(path))
    position = len(data) - len(batch)
    assert (info.value.file, info.value.position) == (str(path), position) and info.value.offset is not None
    if "produces" in name or name in (
        "snappy declares 4 GiB",
        "snappy chunks declare 2 GiB each",
        "zstd declares 120 MiB",
    ):
        assert f"more than {MAX_BATCH_DECOMPRESSED_BYTES:,} bytes, the limit on a batch's decompressed size" in str(
            info.value
        )


@pytest.mark.parametrize("codec", [1, 2, 3, 4])
def test_decompression_stops_exactly_at_the_limit(codec):
    data = bytes(range(256)) * 4096 + bytes(MIB)  # 2 MiB, partly compressible
    packed = compress(codec, data)
    assert decompress(codec, packed, limit=len(data)) == data
    with pytest.raises(DecodeError, match=f"more than {len(data) - 1:,} bytes"):
        decompress(codec, packed, limit=len(data) - 1)


def test_an_uncompressed_batch_over_the_limit_is_an_error_and_the_limit_can_be_raised(tmp_path):
    values = [encode_metadata_value("NO_OP_RECORD", 0, {})] * 200
    batch = encode_batch(0, [(None, v) for v in values], leader_epoch=1, timestamp=1)
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(batch)
    f = discover(path)[0]
    size = len(batch) - 61
    with pytest.raises(DecodeError, match=f"uncompressed records of {size:,} bytes are more than {size - 1:,} bytes"):
        list(iter_file_rows(f, [], ReadOptions(max_batch_bytes=size - 1)))
    assert len(list(iter_file_rows(f, [], ReadOptions(max_batch_bytes=size)))) == 200


def test_the_limit_comes_from_the_environment(monkeypatch):
    monkeypatch.delenv(MAX_BATCH_BYTES_ENV, raising=False)
    assert _limit_from_env() == 16 * MIB == ReadOptions().max_batch_bytes
    monkeypatch.setenv(MAX_BATCH_BYTES_ENV, str(64 * MIB))
    assert _limit_from_env() == 64 * MIB
    for bad in ("0", "-5", "16MiB"):
        monkeypatch.setenv(MAX_BATCH_BYTES_ENV, bad)
        with pytest.raises(ValueError, match=MAX_BATCH_BYTES_ENV):
            _limit_from_env()


# ---------------------------------------------------------------- offsets, resynchronisation, Arrow errors


@pytest.mark.parametrize("base, count", [((1 << 63) - 1, 2), (-1, 1), ((1 << 63) - 10, 20)])
def test_offsets_outside_int64_are_an_error_on_both_paths(tmp_path, base, count):
    """Offsets past 2^63 - 1 (base + lastOffsetDelta) or negative; 20 NoOp batches take the vectorised path."""
    noop = [(None, NOOP_VALUE)]
    if count == 20:
        buf = b"".join(
            encode_batch((base + i + (1 << 63)) % (1 << 64) - (1 << 63), noop, leader_epoch=1, timestamp=i)
            for i in range(count)
        )
    else:
        buf = encode_batch(base, noop * count, leader_epoch=1, timestamp=1)
    path = tmp_path / "seg.log"
    path.write_bytes(buf)
    f = InputFile(path=str(path), kind=InputKind.SEGMENT, size=len(buf))
    with pytest.raises(DecodeError, match="are not in 0..9223372036854775807") as info:
        list(iter_file_rows(f, [], ReadOptions()))
    issues: list = []
    assert sum(b.num_rows for b in decode_to_arrow(f, ReadOptions(), issues)) == (10 if count == 20 else 0)
    assert [str(i) for i in issues] == [str(info.value)]


def test_a_fatal_arrow_issue_reads_like_the_decode_error(tmp_path):
    """The issue of a fatal decode error names the file once, with byte and offset, like the DecodeError."""
    data = bytearray(SEGMENT.read_bytes())
    data[200] ^= 0xFF
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(data)
    f = discover(path)[0]
    with pytest.raises(DecodeError) as info:
        list(iter_file_rows(f, [], ReadOptions()))
    issues: list = []
    list(decode_to_arrow(f, ReadOptions(), issues))
    assert [str(i) for i in issues] == [str(info.value)] and str(info.value).count(str(path)) == 1


@pytest.mark.parametrize("allow_gaps", [False, True])
def test_resynchronisation_over_crafted_candidates_stays_within_its_crc_budget(monkeypatch, allow_gaps):
    """A candidate batch every 64 bytes, each spanning half the file: finding the next valid batch would
    checksum (size / 64) × (size / 2) bytes; the scan stops at its budget with a clean error. Strict
    reads scan too, to tell a torn tail (here: a first candidate overrunning the file) from bad bytes."""
    checked = []
    monkeypatch.setattr(readers, "crc32c", lambda data: checked.append(len(data)) or crc32c(data))
    monkeypatch.setattr(readers, "RESYNC_BUDGET", MIB)
    first = fuzz.split_batches(SEGMENT.read_bytes())[0]
    overrun = fuzz.resync_trap(64, 4 * MIB)
    buf = first + (b"" if allow_gaps else overrun) + fuzz.resync_trap(MIB, MIB // 2)
    with pytest.raises(DecodeError, match="no valid batch found in bytes .* within the CRC budget") as info:
        list(iter_segment_rows(buf, "seg.log", [], ReadOptions(allow_gaps=allow_gaps)))
    assert info.value.file == "seg.log" and info.value.position == len(first) + 1
    assert sum(checked) <= MIB + 8 * len(buf)


def test_allow_gaps_resynchronises_across_a_mebibyte_of_random_garbage():
    """Random bytes almost never pass the candidate filter (lastOffsetDelta = recordCount - 1), so the
    budget is not touched and the batch after the garbage is found."""
    batches = fuzz.split_batches(SEGMENT.read_bytes())
    garbage = random.Random(5).randbytes(MIB)
    issues: list = []
    rows = list(
        iter_segment_rows(batches[0] + garbage + b"".join(batches[1:]), "seg.log", issues, ReadOptions(allow_gaps=True))
    )
    assert len(rows) == len(list(iter_segment_rows(SEGMENT.read_bytes(), "seg.log", [], ReadOptions())))
    assert [i.severity for i in issues] == ["error"] and f"({MIB} bytes)" in issues[0].message


# ---------------------------------------------------------------- kafka-dump-log text


def _first(pattern: str, replacement: str):
    def edit(text: str) -> str:
        assert pattern in text
        return text.replace(pattern, replacement, 1)

    return edit


_TOPIC_LINE = ' payload: {"type":"TOPIC_RECORD","version":0,"data":{"name":"alpha"'
DUMP_DAMAGE = {
    "missing field": (_first("partitionLeaderEpoch: 1 ", ""), "line 3: batch line without partitionLeaderEpoch"),
    "not a number": (_first("baseOffset: 0 ", "baseOffset: 0x "), "line 3: baseOffset '0x' is not an integer"),
    "5000 digits": (_first("lastOffset: 2 ", "lastOffset: " + "9" * 5000 + " "), "line 3: lastOffset '999"),
    "offset 2^63": (_first("| offset: 1 ", "| offset: 9223372036854775808 "), "line 5: offset '9223372036854775808'"),
    "offset outside its batch": (
        _first("| offset: 1 ", "| offset: 7 "),
        "line 5: record offset 7 is outside its batch's offsets 0..2",
    ),
    "lastOffset before baseOffset": (
        _first("baseOffset: 0 lastOffset: 2", "baseOffset: 5 lastOffset: 2"),
        "line 3: lastOffset 2 is before baseOffset 5",
    ),
    "producer epoch over int16": (_first("producerEpoch: -1", "producerEpoch: 40000"), "line 3: producerEpoch"),
    "not true or false": (_first("isControl: true", "isControl: yes"), "line 3: isControl is 'yes'"),
    "control JSON": (_first('LeaderChange: {"version":0', 'LeaderChange: {"version":0,'), "line 4: bad payload JSON"),
    "control body that lies": (
        _first('"leaderId":0', '"leaderId":"zero"'),
        "line 4: payload data is not a LEADER_CHANGE v0 body",
    ),
    "unknown control type": (_first("KRaftVersion {", "controlType: BOGUS(99) X {"), "line 5: unknown control type"),
    "deep nesting": (
        _first(_TOPIC_LINE, _TOPIC_LINE + ',"x":' + "[" * 100000 + "]" * 100000),
        "bad payload JSON (maximum recursion depth exceeded",
    ),
    "version Infinity": (
        _first('"version":0,"data":{"name":"alpha"', '"version":1e999,"data":{"name":"alpha"'),
        "payload is not {",
    ),
    "version NaN": (
        _first('"version":0,"data":{"name":"alpha"', '"version":NaN,"data":{"name":"alpha"'),
        "NaN is not a JSON number",
    ),
    "type not a string": (_first('"type":"TOPIC_RECORD"', '"type":["TOPIC_RECORD"]'), "payload is not {"),
    "field of the wrong type": (_first('"name":"alpha"', '"name":7'), "payload data is not a TOPIC_RECORD v0 body"),
    "field Kafka does not have": (
        _first('"name":"alpha"', '"name":"alpha","evil":1'),
        "payload data is not a TOPIC_RECORD v0 body",
    ),
    "unknown version": (
        _first('"type":"TOPIC_RECORD","version":0', '"type":"TOPIC_RECORD","version":9'),
        f"TopicRecord v9 (newer than Kafka {schema_kafka_version()}, which has v0) is not known to this kraft-replay: "
        "upgrade "
        "kraft-replay (kafka-dump-log text holds no record bytes to keep raw",
    ),
    "snapshot line": (
        _first("Log starting offset: 0", "Snapshot end offset: 99999999999999999999999, epoch: 1"),
        "line 2: snapshot end offset '99999999999999999999999'",
    ),
}


@pytest.mark.parametrize("damage", sorted(DUMP_DAMAGE))
def test_damaged_dump_text_is_one_clean_error_naming_file_and_line(tmp_path, damage):
    edit, message = DUMP_DAMAGE[damage]
    path = tmp_path / "dump.txt"
    path.write_text(edit(DUMP.read_text()))
    with pytest.raises(DecodeError) as info:
        list(decode_path(path))
    assert info.value.file == str(path) and message in str(info.value), str(info.value)
    assert isinstance(info.value, UnknownRecordError) == (damage == "unknown version")


def test_a_dump_line_longer_than_the_limit_is_an_error(tmp_path):
    path = tmp_path / "dump.txt"
    path.write_text(DUMP.read_text().replace("| offset: 1 ", "| offset: 1 " + " " * 5000, 1))
    f = discover(path)[0]
    with pytest.raises(DecodeError, match="line 5: longer than 4,096 characters") as info:
        list(iter_file_rows(f, [], ReadOptions(max_batch_bytes=4096)))
    assert info.value.file == str(path)
    assert len(list(iter_file_rows(f, [], ReadOptions()))) == len(list(decode_path(DUMP)))


# ---------------------------------------------------------------- paths inside input files


def _gzip_naming(path: str, data: bytes) -> bytes:
    """A gzip member whose header carries a file name (FNAME): a path inside the input."""
    raw = zlib.compressobj(6, zlib.DEFLATED, -15)
    body = raw.compress(data) + raw.flush()
    return (
        b"\x1f\x8b\x08\x08"
        + bytes(6)
        + path.encode()
        + b"\x00"
        + body
        + struct.pack("<II", zlib.crc32(data), len(data))
    )


_EVENTS: list[tuple[str, tuple]] = []
_RECORDING: list[bool] = [False]


def _audit(event: str, args: tuple) -> None:
    if _RECORDING[0] and event in (
        "open",
        "os.remove",
        "os.rename",
        "os.mkdir",
        "os.rmdir",
        "os.symlink",
        "os.link",
        "os.truncate",
        "os.chmod",
        "os.chown",
        "os.utime",
        "os.listdir",
        "os.scandir",
        "os.chdir",
        "shutil.copyfile",
        "shutil.rmtree",
        "shutil.move",
    ):
        _EVENTS.append((event, args))


def test_paths_inside_input_files_are_never_opened_or_written(tmp_path):
    """Record values, a gzip header and dump text name paths (an existing file, a file to create, a
    traversal); reading, decoding to Arrow and staging open only the inputs and write only the staging."""
    from metadata.lake import staging

    secret = tmp_path / "secret.txt"
    secret.write_text("must never be read")
    target = tmp_path / "written-by-content"
    named = [str(secret), str(target), "../../../../../etc/passwd", f"file://{secret}"]
    values = [encode_metadata_value("TOPIC_RECORD", 0, {"name": p, "topicId": "ThIaNwRnSM2Nt9Mx1v0RvA"}) for p in named]
    values += [
        encode_metadata_value(
            "CONFIG_RECORD", 0, {"resourceType": 4, "resourceName": "0", "name": "log.dirs", "value": p}
        )
        for p in named
    ]
    log_dir = tmp_path / "input" / "__cluster_metadata-0"
    log_dir.mkdir(parents=True)
    plain = b"".join(encode_batch(i, [(None, v)], leader_epoch=1, timestamp=i) for i, v in enumerate(values))
    gz = fuzz.rebuild(
        encode_batch(len(values), [(None, values[0])], leader_epoch=1, timestamp=9),
        b"",
        codec=1,
        compressed=_gzip_naming(
            str(target), fuzz.records_of(encode_batch(0, [(None, values[0])], leader_epoch=1, timestamp=9))
        ),
    )
    (log_dir / "00000000000000000000.log").write_bytes(plain + gz)
    dump = tmp_path / "input-dump.txt"
    dump.write_text(
        f"Dumping {secret}\nDumping {target}\n"
        + DUMP.read_text().replace(
            "Dumping __cluster_metadata-0/00000000000000000000.log", "Dumping ../../../../../etc/passwd"
        )
    )
    inputs = {str(p) for p in (log_dir / "00000000000000000000.log", dump)}
    staged = tmp_path / "staging"
    before = {p for p in tmp_path.rglob("*")}

    sys.addaudithook(_audit)
    _EVENTS.clear()
    _RECORDING[0] = True
    try:
        records = read_log(tmp_path / "input") + read_log(dump)
        files = discover(tmp_path / "input") + discover(dump)
        tasks = pa.RecordBatch.from_pylist(
            [
                {
                    "task": i,
                    "file": f.to_json(),
                    "start": 0,
                    "end": None,
                    "options": ReadOptions().to_json(),
                    "staging": str(staged),
                }
                for i, f in enumerate(files)
            ]
        )
        summary = pa.Table.from_batches(list(staging.stage_tasks(iter([tasks])))).to_pylist()
    finally:
        _RECORDING[0] = False
    assert {r.data.get("name") for r in records} >= set(named) and not any(r["issue_severity"] for r in summary)
    touched = [(e, str(a[0])) for e, a in _EVENTS if a and isinstance(a[0], (str, bytes, os.PathLike))]
    mentioned = [t for t in touched if any(n in t[1] for n in ("secret", "written-by-content", "passwd"))]
    assert not mentioned, mentioned
    opened = {path for e, path in touched if e == "open" and path.startswith(str(tmp_path))}
    assert opened <= inputs | {str(p) for p in staged.rglob("*")}
    new = {p for p in tmp_path.rglob("*")} - before
    assert new and all(p == staged or staged in p.parents for p in new)
    known = {f"type={t}" for t in readers._TYPE_KEYS} | {f"type={staging.NULL_PARTITION}"}
    assert {p.name for p in staged.iterdir()} <= known
    assert not target.exists() and secret.read_text() == "must never be read"
