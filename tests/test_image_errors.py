"""ReplayError means "Kafka rejects this record" and nothing else: every record the decoder can
produce either replays or is rejected where Kafka's replay throws (docs/replay-rules.md, "What is rejected"), and an
exception that is not a ReplayError — a bug of the engine — propagates through the loader, in
strict and in lenient mode, instead of being reported as a skipped record."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import image.delta
from image.errors import ReplayError
from image.loader import DeltaCollector, MetadataLoader
from image.replay import replay_to
from metadata.log.codec.batch import encode_batch
from metadata.log.codec.records import decode_metadata_value, encode_metadata_value
from metadata.log.readers import ReadOptions, read_log
from metadata.log.schema import MessageSpec, metadata_specs
from metadata.log.schema.releases import record_description
from tests.logbuilder import Body, LogBuilder, acl, begin, end, partition, register_broker, topic, uuid
from tests.recordgen import body

TRANSACTION_MARKERS = {"BEGIN_TRANSACTION_RECORD", "END_TRANSACTION_RECORD", "ABORT_TRANSACTION_RECORD"}
SPEC_VERSIONS = [
    (s, v)
    for s in metadata_specs().values()
    if s.type_name not in TRANSACTION_MARKERS
    for v in range(s.valid_versions.low, s.valid_versions.high + 1)
]


def _prerequisites(kind: str, data: dict[str, Any]) -> list[Body]:
    """Records that make the image hold what ``data`` refers to, so the replay reaches every check
    of its handler instead of stopping at "unknown topic / broker / ACL"."""
    if kind in ("PARTITION_RECORD", "REMOVE_TOPIC_RECORD"):
        return [topic("t", data["topicId"])]
    if kind == "PARTITION_CHANGE_RECORD":
        return [topic("t", data["topicId"]), partition(data["topicId"], data["partitionId"], [1, 2], elr=[2])]
    if kind == "CLEAR_ELR_RECORD" and data.get("topicName"):
        return [topic(data["topicName"], uuid(0x77)), partition(uuid(0x77), 0, [1, 2], elr=[2])]
    if kind in ("FENCE_BROKER_RECORD", "UNFENCE_BROKER_RECORD"):
        return [register_broker(data["id"], data["epoch"], incarnation_id=uuid(0x55))]
    if kind == "BROKER_REGISTRATION_CHANGE_RECORD":
        return [register_broker(data["brokerId"], data["brokerEpoch"], incarnation_id=uuid(0x55))]
    if kind == "REMOVE_ACCESS_CONTROL_ENTRY_RECORD":
        return [acl(data["id"])]
    return []


@pytest.mark.parametrize("spec,version", SPEC_VERSIONS, ids=[f"{s.type_name}-v{v}" for s, v in SPEC_VERSIONS])
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), same_batch=st.booleans())
def test_every_decodable_record_replays_or_is_a_kafka_rejection(
    spec: MessageSpec, version: int, data: st.DataObject, same_batch: bool
) -> None:
    decoded = decode_metadata_value(encode_metadata_value(spec.type_name, version, data.draw(body(spec, version))))[2]
    record: Body = (spec.type_name, decoded)
    log = LogBuilder()
    prerequisites = _prerequisites(spec.type_name, decoded)
    if same_batch:
        log.batch(*prerequisites, record)
    else:
        log.batch(*prerequisites)
        log.batch(record)
    try:
        image = replay_to(log.records)
    except ReplayError as error:
        assert error.offset == log.next_offset - 1 and error.record_type == spec.type_name
        image = replay_to(log.records, lenient=True)
        assert [e.offset for e in image.errors] == [log.next_offset - 1]
    image.to_json()


def _broken(error: Exception) -> Callable[..., None]:
    def handler(delta: Any, data: Any) -> None:
        raise error

    return handler


@pytest.mark.parametrize("lenient", [False, True])
@pytest.mark.parametrize(
    "error",
    [KeyError("name"), TypeError("bug"), ValueError("bug"), AttributeError("bug")],
    ids=lambda e: type(e).__name__,
)
def test_a_bug_in_a_handler_propagates_through_the_loader(
    monkeypatch: pytest.MonkeyPatch, lenient: bool, error: Exception
) -> None:
    log = LogBuilder()
    log.batch(register_broker(1, 10))
    if lenient:  # a record Kafka rejects is reported and skipped; the bug after it is not
        log.batch(partition(uuid(9), 0, [1]))
    log.batch(topic("a", uuid(0xA)))
    rejected = [1] if lenient else []
    assert [e.offset for e in replay_to(log.records, lenient=lenient).errors] == rejected
    monkeypatch.setitem(image.delta._HANDLERS, "TOPIC_RECORD", _broken(error))
    loader = MetadataLoader(lenient=lenient)
    with pytest.raises(type(error)) as raised:
        for record in log.records:
            loader.replay(record)
    assert raised.value is error and record.offset == log.next_offset - 1
    assert [e.offset for e in loader.errors] == rejected


@pytest.mark.parametrize("lenient", [False, True])
def test_a_bug_propagates_from_snapshots_and_committed_transactions(
    monkeypatch: pytest.MonkeyPatch, lenient: bool
) -> None:
    monkeypatch.setitem(image.delta._HANDLERS, "TOPIC_RECORD", _broken(KeyError("name")))
    snapshot = LogBuilder()
    snapshot.control("SNAPSHOT_HEADER", {"version": 0, "lastContainedLogTimestamp": 1})
    snapshot.batch(register_broker(1, 10), topic("a", uuid(0xA)))
    with pytest.raises(KeyError):
        MetadataLoader(lenient=lenient).load_snapshot(snapshot.records, 3, 1)
    log = LogBuilder()
    log.batch(begin(), topic("a", uuid(0xA)), end())
    collector = DeltaCollector(replay_to([]), lenient=lenient)
    with pytest.raises(KeyError):
        for record in log.records:
            collector.replay(record)


def test_a_record_kept_undecoded_is_reported_and_the_rest_replays_exactly(tmp_path: Path) -> None:
    """``--skip-unknown`` keeps a record of an unknown apiKey undecoded; a replay, strict or lenient, lists it
    (naming its offset, apiKey and version) and goes on: the image is the one of the log without it."""
    values = [
        encode_metadata_value("NO_OP_RECORD", 0, {}),
        bytes.fromhex("01630000"),  # apiKey 99
        encode_metadata_value("TOPIC_RECORD", 0, {"name": "a", "topicId": uuid(0xA)}),
    ]
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(
        b"".join(encode_batch(i, [(None, v)], leader_epoch=1, timestamp=1000 + i) for i, v in enumerate(values))
    )
    records = read_log(path, ReadOptions(skip_unknown=True))
    assert (records[1].is_undecoded, records[1].api_key, records[1].version) == (True, 99, 0)
    without = [records[0], replace(records[1], type="NO_OP_RECORD"), records[2]]
    for lenient in (False, True):
        image = replay_to(records, lenient=lenient)
        assert [str(e) for e in image.errors] == [
            f"offset 1: {record_description(99, 0)} kept raw by --skip-unknown, not replayed"
        ]
        assert image.errors[0].undecoded
        assert image.to_json() == replay_to(without).to_json()
