"""Codec: byte-exact round trips for every record type and version, worked examples, framings."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from metadata.log.codec.batch import Record, RecordBatch, decode_batch, encode_batch, encode_record_batch
from metadata.log.codec.compression import CODECS, compress, decompress, xxhash32
from metadata.log.codec.message import decode_body, encode_body, json_text
from metadata.log.codec.primitives import read_uvarint, read_varint, read_varlong, uvarint, varint, varlong
from metadata.log.codec.records import (
    decode_control_record,
    decode_metadata_value,
    encode_control_record,
    encode_metadata_value,
)
from metadata.log.errors import CorruptBatchError, DecodeError, UnknownRecordError
from metadata.log.schema import control_specs, metadata_specs, spec_by_type_name
from tests.recordgen import body

SPEC_VERSIONS = [
    (s, v) for s in metadata_specs().values() for v in range(s.valid_versions.low, s.valid_versions.high + 1)
]


@pytest.mark.parametrize("spec,version", SPEC_VERSIONS, ids=[f"{s.type_name}-v{v}" for s, v in SPEC_VERSIONS])
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(data=st.data())
def test_every_record_type_and_version_round_trips(spec, version, data):
    value = data.draw(body(spec, version))
    raw = encode_metadata_value(spec.type_name, version, value)
    decoded_spec, decoded_version, decoded = decode_metadata_value(raw)
    assert (decoded_spec.key, decoded_version) == (spec.key, version)
    assert decoded == value
    assert encode_metadata_value(spec.type_name, version, decoded) == raw
    assert decode_metadata_value(raw, json_payload=True)[2] == json_text(decoded)


def _outcome(decode, raw: bytes) -> tuple:
    try:
        return "ok", decode(raw)
    except (DecodeError, IndexError) as exc:
        return type(exc).__name__, str(exc)


@pytest.mark.parametrize("spec,version", SPEC_VERSIONS, ids=[f"{s.type_name}-v{v}" for s, v in SPEC_VERSIONS])
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(data=st.data())
def test_json_reader_writes_the_dict_readers_json_also_for_damaged_bodies(spec, version, data):
    """The generated JSON reader: the same text as ``json_text`` of the dict, the same errors."""
    raw = encode_metadata_value(spec.type_name, version, data.draw(body(spec, version)))
    unknown_tag = raw[:-1] + bytes.fromhex("017f02abcd")  # an unknown tagged field on the top struct
    cuts = [raw[: data.draw(st.integers(0, len(raw)))] for _ in range(3)]
    flipped = bytearray(raw)
    flipped[data.draw(st.integers(0, len(raw) - 1))] ^= 1 << data.draw(st.integers(0, 7))
    for damaged in (unknown_tag, *cuts, bytes(flipped)):
        as_dict = _outcome(lambda b: json_text(decode_metadata_value(b)[2]), damaged)
        assert _outcome(lambda b: decode_metadata_value(b, json_payload=True)[2], damaged) == as_dict


@pytest.mark.parametrize("spec", list(control_specs().values()), ids=lambda s: s.type_name)
@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_control_records_round_trip(spec, data):
    value = data.draw(body(spec, 0))
    key, raw = encode_control_record(spec.type_name, value)
    assert decode_control_record(key, raw) == (spec.type_name, value)
    assert decode_control_record(key, raw, json_payload=True) == (spec.type_name, json_text(value))
    assert encode_control_record(spec.type_name, value) == (key, raw)


def test_worked_example_topic_record_batch():
    """docs/log-format.md, "Worked examples": a TopicRecord batch byte for byte, including the CRC."""
    value = encode_metadata_value("TOPIC_RECORD", 0, {"name": "foo", "topicId": "ThIaNwRnSM2Nt9Mx1v0RvA"})
    assert value.hex() == "010200" + "04666f6f" + "4e121a37046748cd8db7d331d6fd11bc" + "00"
    batch = encode_batch(5, [(None, value)], leader_epoch=1, timestamp=1700000000000)
    assert len(batch) == 92
    assert batch[17:21].hex() == "35c291dc"
    assert batch[61:].hex() == "3c0000000130" + value.hex() + "00"
    decoded, end = decode_batch(batch)
    assert end == 92 and decoded.base_offset == 5 and decoded.max_timestamp == 1700000000000
    assert encode_record_batch(decoded) == batch


def test_worked_example_partition_change_tagged_fields():
    """docs/log-format.md, "Worked examples": tags written in ascending order, defaults omitted."""
    raw = encode_metadata_value(
        "PARTITION_CHANGE_RECORD",
        0,
        {"partitionId": 0, "topicId": "f62ptyETTjet8SL5ZeREiw", "isr": [1, 2], "leader": 1},
    )
    assert raw.hex() == ("010500000000007fada9b721134e37adf122f965e4448b020009030000000100000002010400000001")
    assert decode_metadata_value(raw)[2] == {
        "partitionId": 0,
        "topicId": "f62ptyETTjet8SL5ZeREiw",
        "isr": [1, 2],
        "leader": 1,
    }


def test_empty_list_is_not_null_in_tagged_fields():
    spec = metadata_specs()[5]
    for isr in ([], None):
        data = {"partitionId": 1, "topicId": "f62ptyETTjet8SL5ZeREiw"} | ({} if isr is None else {"isr": isr})
        assert decode_metadata_value(encode_metadata_value(spec.type_name, 0, data))[2] == data


D1 = "AAAAAAAAAAAAAAAAAAAAAw"  # Uuid (0, 3): a log directory


@pytest.mark.parametrize(
    "type_name,version,head,tag",
    [
        ("REGISTER_BROKER_RECORD", 4, {"brokerId": 1, "incarnationId": D1, "brokerEpoch": 7, "endPoints": []}, 1),
        ("BROKER_REGISTRATION_CHANGE_RECORD", 3, {"brokerId": 1, "brokerEpoch": 7}, 3),
    ],
)
def test_cordoned_log_dirs_null_empty_and_a_list_are_three_encodings(type_name, version, head, tag):
    """Kafka 4.3+ (KIP-1066): ``CordonedLogDirs`` is a nullable tagged ``[]uuid`` defaulting to null. Null (unknown,
    or no change) is not written; an empty list (nothing cordoned) is the tag with a one-byte body; a list its
    Uuids. Each decodes to what was written and re-encodes to the same bytes."""
    regular = (
        len(encode_body(spec_by_type_name(type_name), version, head)) - 1
    )  # the body before its tagged-field count
    for cordoned, tagged in (
        (None, "00"),
        ([], f"01{tag:02x}0101"),
        ([D1], f"01{tag:02x}1102" + "00" * 15 + "03"),
    ):
        data = head | ({} if cordoned is None else {"cordonedLogDirs": cordoned})
        raw = encode_metadata_value(type_name, version, data)
        assert raw[3 + regular :].hex() == tagged
        spec_, version_, decoded = decode_metadata_value(raw)
        assert (spec_.type_name, version_) == (type_name, version)
        assert decoded.get("cordonedLogDirs", "absent") == ("absent" if cordoned is None else cordoned)
        assert encode_metadata_value(type_name, version, decoded) == raw


@pytest.mark.parametrize(
    "n,signed,unsigned",
    [
        (0, "00", "00"),
        (-1, "01", None),
        (1, "02", "01"),
        (-2, "03", None),
        (63, "7e", None),
        (-64, "7f", None),
        (64, "8001", None),
        (300, "d804", "ac02"),
        (127, None, "7f"),
        (128, None, "8001"),
        (16384, None, "808001"),
    ],
)
def test_varint_examples(n, signed, unsigned):
    if signed:
        assert varint(n).hex() == signed and read_varint(bytes.fromhex(signed), 0) == (n, len(signed) // 2)
        assert read_varlong(varlong(n), 0)[0] == n
    if unsigned:
        assert uvarint(n).hex() == unsigned and read_uvarint(bytes.fromhex(unsigned), 0) == (n, len(unsigned) // 2)


def test_varint_too_long_is_an_error():
    with pytest.raises(DecodeError, match="too long"):
        read_uvarint(bytes.fromhex("ffffffffff01"), 0)


@given(st.integers(-(2**63), 2**63 - 1))
def test_varlong_round_trip(n):
    assert read_varlong(varlong(n), 0) == (n, len(varlong(n)))


def _sample_batch(compression: str) -> bytes:
    values = [encode_metadata_value("NO_OP_RECORD", 0, {})] + [
        encode_metadata_value(
            "CONFIG_RECORD",
            0,
            {"resourceType": 2, "resourceName": f"t{i}", "name": "retention.ms", "value": str(i) * 40},
        )
        for i in range(400)
    ]
    return encode_batch(
        10, [(None, v) for v in values], leader_epoch=3, timestamp=1_700_000_000_000, compression=compression
    )


@pytest.mark.parametrize("codec", CODECS)
def test_batch_codecs(codec):
    raw = _sample_batch(codec)
    batch, end = decode_batch(raw)
    assert end == len(raw) and batch.compression == codec and len(batch.records) == 401
    assert decode_metadata_value(batch.records[5].value)[2]["resourceName"] == "t4"
    again = encode_record_batch(batch)
    assert decode_batch(again)[0] == batch
    if codec == "none":
        assert again == raw


def test_lz4_frame_interoperates_with_reference_library():
    lz4_frame = pytest.importorskip("lz4.frame")
    data = bytes(range(256)) * 600
    assert lz4_frame.decompress(compress(3, data)) == data
    theirs = lz4_frame.compress(
        data, block_linked=False, block_size=lz4_frame.BLOCKSIZE_MAX64KB, content_checksum=True, block_checksum=True
    )
    assert decompress(3, theirs) == data


def test_xerial_snappy_framing_and_raw_block():
    import cramjam

    data = b"kraft" * 20000
    framed = compress(2, data)
    assert framed.startswith(b"\x82SNAPPY\x00") and decompress(2, framed) == data
    assert decompress(2, bytes(cramjam.snappy.compress_raw(data))) == data


def test_gzip_accepts_concatenated_members():
    assert decompress(1, compress(1, b"ab") + compress(1, b"cd")) == b"abcd"


def test_xxhash32_known_values():
    assert xxhash32(b"") == 0x02CC5D05
    assert xxhash32(b"a") == 0x550D7456
    assert xxhash32(b"abc") == 0x32D153FF


def test_unknown_api_key_and_frame_version():
    with pytest.raises(UnknownRecordError, match=r"^apiKey 13 v0 \(newer than Kafka .*\) is not known"):
        decode_metadata_value(bytes.fromhex("010d0000"))  # 13: never assigned
    with pytest.raises(UnknownRecordError, match=r"^RegisterBrokerRecord v9 \(newer than Kafka .*, which has v0-4\)"):
        decode_metadata_value(bytes.fromhex("01000900"))
    with pytest.raises(DecodeError, match="frame version 0"):
        decode_metadata_value(bytes.fromhex("000200"))


def test_garbage_after_body_and_bad_tag_are_errors():
    raw = encode_metadata_value("TOPIC_RECORD", 0, {"name": "x", "topicId": "ThIaNwRnSM2Nt9Mx1v0RvA"})
    with pytest.raises(DecodeError, match="garbage"):
        decode_metadata_value(raw + b"\x00")
    spec = metadata_specs()[3]  # PartitionRecord: tag 1 (ELR) is not valid in v0
    v0 = encode_body(
        spec,
        0,
        {
            "partitionId": 0,
            "topicId": "ThIaNwRnSM2Nt9Mx1v0RvA",
            "replicas": [1],
            "isr": [1],
            "removingReplicas": [],
            "addingReplicas": [],
            "leader": 1,
            "leaderEpoch": 0,
            "partitionEpoch": 0,
        },
    )
    bad = v0[:-1] + bytes.fromhex("01010101")  # 1 tagged field: tag 1 (ELR), size 1, empty array
    with pytest.raises(DecodeError, match="Tag 1 is not valid for version 0"):
        decode_body(spec, 0, bad)


def test_unknown_tagged_fields_are_kept_and_reencoded():
    spec = metadata_specs()[2]
    raw = encode_body(spec, 0, {"name": "x", "topicId": "ThIaNwRnSM2Nt9Mx1v0RvA"})
    with_tag = raw[:-1] + bytes.fromhex("010902abcd")
    data = decode_body(spec, 0, with_tag)
    assert data["_unknownTaggedFields"] == [{"tag": 9, "data": "q80="}]
    assert encode_body(spec, 0, data) == with_tag


def test_record_with_headers_and_key_round_trips():
    batch = RecordBatch(
        0,
        0,
        0x10,
        1,
        5,
        6,
        77,
        1,
        0,
        [Record(0, b"v", key=b"k", headers=[("h", b"x"), ("n", None)], timestamp_delta=1), Record(1, None)],
    )
    raw = encode_record_batch(batch)
    assert decode_batch(raw)[0].records == batch.records
    assert decode_batch(raw)[0].is_transactional


def test_crc_mismatch_is_reported_with_position_and_offset():
    raw = bytearray(_sample_batch("none"))
    raw[100] ^= 0x01
    with pytest.raises(CorruptBatchError, match="CRC mismatch") as info:
        decode_batch(bytes(raw))
    assert info.value.offset == 10 and info.value.position == 0


def test_crc32c_is_the_packaged_c_function_loaded_without_the_package_init():
    """The batch checksum: CRC-32C's check value, the same as the ``crc32c`` package's on any bytes, and loaded
    (in a fresh process) without running that package's ``__init__`` (importlib.metadata, argparse)."""
    import os
    import subprocess
    import sys

    import crc32c as packaged

    from metadata.log.codec.crc import crc32c

    assert crc32c(b"123456789") == 0xE3069283
    for n in (0, 1, 7, 61, 4096, 65537):
        data = os.urandom(n)
        assert crc32c(data) == packaged.crc32c(data)
        assert crc32c(memoryview(data)) == packaged.crc32c(data)
    code = (
        "import sys; from metadata.log.codec.crc import crc32c; "
        "print(sorted({'crc32c', 'importlib.metadata', 'argparse'} & set(sys.modules)))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


_COUNT_READER_COMPILES = """
import builtins, json, sys
compiles = []
real = builtins.compile
def counting(source, filename, *args, **kwargs):
    if filename == "<kraft-replay body readers>":
        compiles.append(filename)
    return real(source, filename, *args, **kwargs)
builtins.compile = counting
from metadata.log.readers import read_log
records = read_log(sys.argv[1])
print(json.dumps({"compiles": len(compiles), "records": [[r.offset, r.type, r.control_type, r.data] for r in records]}))
"""


def test_the_record_body_readers_are_compiled_once_for_every_later_process(tmp_path):
    """A process that decodes a real-Kafka log compiles its body readers and keeps their code under
    ``$KRAFT_REPLAY_CACHE``; a second process compiles none and decodes the same records."""
    import json
    import subprocess
    import sys

    from tests.kafka_logs import KAFKA_FIXTURES
    from tests.processes import environment

    log = str(KAFKA_FIXTURES[-1] / "__cluster_metadata-0")
    env = environment(KRAFT_REPLAY_CACHE=str(tmp_path / "cache"))
    runs = [
        json.loads(
            subprocess.run(
                [sys.executable, "-c", _COUNT_READER_COMPILES, log], env=env, capture_output=True, text=True, check=True
            ).stdout
        )
        for _ in range(2)
    ]
    assert runs[0]["compiles"] > 0 and runs[1]["compiles"] == 0
    assert runs[1]["records"] == runs[0]["records"] and runs[0]["records"]
    assert len(list((tmp_path / "cache" / "code").rglob("*.marshal"))) == runs[0]["compiles"]


def test_a_changed_source_is_compiled_anew_and_a_damaged_or_unwritable_cache_only_means_compiling(
    tmp_path, monkeypatch
):
    """The cache is keyed by the source: a changed source never gets the code of the former one. A damaged
    file is compiled again (and replaced); a cache directory that cannot be written is no error."""
    from metadata.log.cache import code_path, compiled

    monkeypatch.setenv("KRAFT_REPLAY_CACHE", str(tmp_path / "cache"))

    def run(source: str) -> object:
        namespace: dict = {}
        exec(compiled(source, "<test>"), namespace)  # noqa: S102
        return namespace["f"]()

    assert run("def f(): return 1") == 1
    assert code_path("def f(): return 1", "<test>").exists()
    assert run("def f(): return 2") == 2
    assert run("def f(): return 1") == 1  # from the cache
    path = code_path("def f(): return 1", "<test>")
    good = path.read_bytes()
    damaged = good[:-8] + bytes(b ^ 0xFF for b in good[-8:])
    path.write_bytes(damaged)
    assert run("def f(): return 1") == 1
    assert path.read_bytes() == good  # compiled again and replaced

    blocked = tmp_path / "a-file"
    blocked.write_text("")
    monkeypatch.setenv("KRAFT_REPLAY_CACHE", str(blocked / "cache"))  # no directory can be made there
    assert run("def f(): return 3") == 3
