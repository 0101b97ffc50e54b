"""Spark engine versus the reference engine (image JSON equality), engine choice, errors.

Each lake is ingested once per module; the Spark images of a lake are computed for many offsets in
one pass per base (``replay_many``) and compared with the reference engine's images of the same
lake (its records and best snapshot, as ``image.engine.replay_reference`` reads them).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from image import engine, spark_engine
from image.engine import parse_time, replay_image, resolve_offset, snapshot_base
from image.errors import ReplayError
from image.frames import canonical
from image.replay import SnapshotSource, replay_to
from image.spark_engine import replay_frames, replay_many
from image.testing import (
    LogBuilder,
    abort,
    acl,
    begin,
    broker_change,
    clear_elr,
    client_quota,
    config,
    end,
    feature_level,
    no_op,
    partition,
    partition_change,
    producer_ids,
    register_broker,
    register_controller,
    remove_acl,
    remove_scram,
    remove_token,
    remove_topic,
    scram,
    token,
    topic,
    unfence_broker,
    unregister_broker,
    uuid,
    zk_migration_state,
)
from metadata.codec.batch import encode_batch
from metadata.codec.records import encode_control_record, encode_metadata_value
from metadata.generator import generate
from metadata.ingest import ingest
from metadata.lake import Lake
from metadata.query import log_records, snapshot_records
from metadata.schema import spec_by_type_name

pytestmark = pytest.mark.spark

SAMPLE = Path(__file__).resolve().parents[1] / "data" / "sample"
T1, T2, T3, T4, T5, T6, T9 = (uuid(0x100 + i) for i in range(7))
D1, D2, D3 = uuid(0xD001), uuid(0xD002), uuid(0xD003)
LEADER_CHANGE = {"version": 0, "leaderId": 3000, "voters": [{"voterId": 3000}], "grantingVoters": []}


# ---------------------------------------------------------------------------- helpers

def write_log(log: LogBuilder, directory: Path) -> Path:
    """The builder's batches as one segment (records at their type's latest version)."""
    out = directory / "__cluster_metadata-0"
    out.mkdir(parents=True)
    batches: dict[int, list] = {}
    for r in log.records:
        batches.setdefault(r.batch_base_offset, []).append(r)
    raw = bytearray()
    for base, records in sorted(batches.items()):
        first = records[0]
        if first.is_control:
            items = [encode_control_record(first.control_type, first.data)]
        else:
            items = [(None, encode_metadata_value(r.type, spec_by_type_name(r.type).valid_versions.high, r.data))
                     for r in records]
        raw += encode_batch(base, items, leader_epoch=first.epoch, timestamp=first.timestamp,
                            control=first.is_control)
    (out / f"{0:020d}.log").write_bytes(bytes(raw))
    return out


def make_lake(spark, root: Path, inputs: Sequence[Path]) -> Lake:
    ingest([str(p) for p in inputs], str(root / "lake"), spark=spark, progress=False)
    return Lake(str(root / "lake"), spark)


def reference(lake: Lake, offsets: Sequence[int], *, lenient: bool = False
              ) -> dict[int, tuple[dict[str, Any], list[ReplayError]]]:
    """The reference engine's image JSON (and skipped records) at each offset."""
    state = lake.state()
    records = list(log_records(lake, state=state))
    out = {}
    for offset in offsets:
        base = snapshot_base(lake, state, offset)
        source = None
        if base is not None and base.snapshot is not None:
            source = SnapshotSource(snapshot_records(lake, *base.snapshot, state), *base.snapshot, base.timestamp)
        image = replay_to(records, offset, snapshot=source, lenient=lenient)
        out[offset] = canonical(image.to_json()), list(image.errors)
    return out


def diff(expected: dict[str, Any], actual: dict[str, Any]) -> list[str]:
    """Readable differences between two image JSONs, per part."""
    out = []
    for part in expected:
        want, got = expected[part], actual.get(part)
        if want == got:
            continue
        if isinstance(want, list) and isinstance(got, list):
            a = {json.dumps(r, sort_keys=True) for r in want}
            b = {json.dumps(r, sort_keys=True) for r in got}
            out.append(f"{part}: missing {sorted(a - b)[:3]} unexpected {sorted(b - a)[:3]}")
        else:
            out.append(f"{part}: expected {want!r} got {got!r}")
    return out


def assert_matches_reference(lake: Lake, offsets: Sequence[int], *, lenient: bool = False,
                             checkpoints: bool = False) -> None:
    images = replay_many(lake, offsets, lenient=lenient, checkpoints=checkpoints)
    spark_json = images.to_json()
    problems = []
    for offset, (expected, _) in reference(lake, offsets, lenient=lenient).items():
        problems += [f"offset {offset}: {d}" for d in diff(expected, spark_json[offset])]
    assert not problems, "\n".join(problems)


# ---------------------------------------------------------------------------- lakes

@pytest.fixture(scope="module")
def sample_lake(spark, tmp_path_factory) -> Lake:
    return make_lake(spark, tmp_path_factory.mktemp("sample"), [SAMPLE])


@pytest.fixture(scope="module")
def generated_lake(spark, tmp_path_factory) -> Lake:
    root = tmp_path_factory.mktemp("generated")
    generate(23, 4, 6, 3, 400, root / "gen", snapshot_at=900, segment_bytes=65536)
    return make_lake(spark, root, [root / "gen" / "__cluster_metadata-0"])


def crafted_log() -> LogBuilder:
    """A valid log exercising every part and the delta-boundary quirks (offsets in comments)."""
    log = LogBuilder()
    log.batch(begin("Bootstrap records"), feature_level("metadata.version", 21), zk_migration_state(0), end())  # 0-3
    log.batch(register_broker(1, 10, log_dirs=[D2, D1]),  # 4
              register_broker(2, 11, rack="r1", endpoints=[
                  {"name": "A", "host": "h1", "port": 1, "securityProtocol": 0},
                  {"name": "A", "host": "h2", "port": 2, "securityProtocol": 9},
                  {"name": "B", "host": "h3", "port": 3, "securityProtocol": 1}]),
              register_controller(3000))
    log.batch(broker_change(1, 10, fenced=-1), unfence_broker(2, 11))  # 7-8
    log.batch(topic("a", T1), partition(T1, 0, [1, 2], directories=[D1, D2]), partition(T1, 1, [2, 1]),  # 9-11
              config(2, "a", "retention.ms", "1"), config(4, "", "x", "y"))  # 12-13
    log.batch(partition_change(T1, 0, isr=[1]), partition_change(T1, 0, leader=2),  # 14-15
              partition_change(T1, 1, leader=1, replicas=[2, 1, 3]), partition_change(T1, 0, leader=2),  # 16-17
              partition_change(T1, 1, leader_recovery_state=1),  # 18
              partition_change(T1, 0, elr=[2], last_known_elr=[1]))  # 19
    log.batch(acl(uuid(0xA1)), acl(uuid(0xA2), operation=99), client_quota({"user": None}, "producer_byte_rate", 1024.0),
              client_quota({"user": "u", "client-id": "c"}, "k", 2.5), scram("alice", 1), scram("bob", 2),
              scram("carol", 7), token("tok1"), token("tok2", renewers=()), producer_ids(1000))  # 20-29
    log.batch(remove_acl(uuid(0xA1)), client_quota({"client-id": "c", "user": "u"}, "k", remove=True),
              remove_scram("bob", 2), remove_token("tok1"), feature_level("group.version", 1))  # 30-34
    # ACL added and removed in one delta; topic "b" created, configured and removed in one delta
    # (its config survives, replay-semantics.md §1.6)
    log.batch(acl(uuid(0xA3)), remove_acl(uuid(0xA3)), topic("b", T2), config(2, "b", "k", "v"),
              remove_topic(T2))  # 35-39
    # "a" had configs when this delta started: the config set just before the removal is discarded
    log.batch(config(2, "a", "segment.ms", "5"), remove_topic(T1))  # 40-41
    log.batch(topic("a", T3), partition(T3, 0, [1]), config(2, "a", "x", "1"))  # 42-44
    log.batch(begin("t"), topic("c", T4), partition(T4, 0, [2]))  # 45-47: batch ends inside the transaction
    log.batch(partition_change(T4, 0, isr=[2]), end(), config(4, "1", "k", "v"))  # 48-50: a record after End
    log.batch(begin(), topic("d", T5), abort())  # 51-53
    log.batch(no_op(), begin(), topic("e", T6), end(), no_op())  # 54-58: Begin in the middle of a batch
    log.control("LEADER_CHANGE", LEADER_CHANGE, epoch=2)  # 59
    log.batch(feature_level("group.version", 0), zk_migration_state(1), producer_ids(2000),  # 60-62
              register_broker(1, 20, log_dirs=[D3]), broker_change(1, 20, in_controlled_shutdown=1),  # 63-64
              unregister_broker(2, 11))  # 65
    log.batch(topic("a2", T1), partition(T1, 0, [3]))  # 66-67: a removed id declared again
    log.batch(topic("b2", T4), partition(T4, 1, [1]))  # 68-69: a live id declared again (partition 0 goes)
    log.batch(config(2, "b2", "k1", "v1"), partition_change(T3, 0, replicas=[1, 2], directories=[D1, D2]))  # 70-71
    log.batch(config(2, "b2", "k2", "v2"), remove_topic(T4), config(2, "b2", "k3", "v3"))  # 72-74
    log.batch(remove_acl(uuid(0xA2)), remove_acl(uuid(0xA2)))  # 75-76: an image ACL removed twice in a delta
    log.batch(register_controller(3000, endpoints=[{"name": "C", "host": "c", "port": 9, "securityProtocol": 3}]),
              partition_change(T3, 0, leader=-1, isr=[]), broker_change(1, 20, log_dirs=[D1, D2]))  # 77-79
    log.batch(partition_change(T3, 0, elr=[1], last_known_elr=[]), partition_change(T1, 0, elr=[3]))  # 80-81
    # ClearElrRecord (Kafka 4.x): a named topic, then every topic (only a2-0 still has an ELR), then a2 again
    log.batch(clear_elr("a"), clear_elr(""), clear_elr("a2"))  # 82-84
    return log


@pytest.fixture(scope="module")
def crafted_lake(spark, tmp_path_factory) -> Lake:
    root = tmp_path_factory.mktemp("crafted")
    return make_lake(spark, root, [write_log(crafted_log(), root / "log")])


def broken_log() -> LogBuilder:
    """A log with one inconsistency of each kind (first at offset 5)."""
    log = LogBuilder()
    log.batch(register_broker(1, 10), topic("a", T1), partition(T1, 0, [1]), no_op())  # 0-3
    log.batch(no_op())  # 4
    log.batch(partition_change(T1, 5, isr=[1]))  # 5: unknown partition
    log.batch(partition_change(T9, 0, isr=[1]), partition(T9, 0, [1]))  # 6-7: unknown topic
    log.batch(unfence_broker(7, 1), broker_change(1, 99, fenced=-1), broker_change(1, 10, fenced=5))  # 8-10
    log.batch(remove_topic(T9), remove_acl(uuid(0xAA)))  # 11-12
    log.batch(end(), begin(), begin(), end())  # 13-16: End without Begin, Begin inside a transaction
    log.batch(partition(T1, 1, [1, 2], directories=[D1]), partition_change(T1, 0, leader_recovery_state=5))  # 17-18
    log.batch(partition_change(T1, 0, directories=[D1]), partition_change(T1, 0, replicas=[1, 2]),  # 19-20
              partition_change(T1, 0, isr=[1]))  # 21: the merge at 20 is rejected, this one applies
    log.batch(feature_level("metadata.version", 0), zk_migration_state(9))  # 22-23
    log.batch(token("t", owner="alice"), register_controller(3000, endpoints=[
        {"name": "C", "host": "c", "port": 9, "securityProtocol": 9}]))  # 24-25
    log.batch(topic("a", T2), partition(T2, 0, [1]))  # 26-27: name collision (applied, then reported)
    log.batch(begin(), partition(T1, 3, [1], leader_recovery_state=9), abort())  # 28-30: rejected, then aborted
    log.batch(partition_change(T1, 0, leader=1))  # 31
    log.batch(clear_elr("nope"))  # 32: no such topic
    return log


@pytest.fixture(scope="module")
def broken_lake(spark, tmp_path_factory) -> Lake:
    root = tmp_path_factory.mktemp("broken")
    return make_lake(spark, root, [write_log(broken_log(), root / "log")])


# ---------------------------------------------------------------------------- differential tests

SAMPLE_BEFORE_SNAPSHOT = [-1, 0, 2, 4, 60, 76, 410, 411, 420, 447, 670, 685, 686, 2990, 3010]
"""Empty base: bootstrap transaction, a transaction open at 60, a Begin in the middle of batch
410 (at 411), the aborted transaction 652-685."""
SAMPLE_FROM_SNAPSHOT = [3011, 3012, 3190, 3198, 3199, 5000, 8054, 8055, 8070, 9754]
"""Snapshot base (end offset 3012): its last offset, an aborted transaction (3173-3198), the Begin
in the middle of batch 8053, the end of the log."""


def test_sample_matches_reference(sample_lake: Lake) -> None:
    assert_matches_reference(sample_lake, SAMPLE_BEFORE_SNAPSHOT + SAMPLE_FROM_SNAPSHOT)


def test_generated_matches_reference(generated_lake: Lake) -> None:
    state = generated_lake.state()
    markers = [r["offset"] for r in generated_lake.table("transaction_markers", state).collect()]
    end = state.high_water_mark
    snapshot = snapshot_base(generated_lake, state, end)
    assert snapshot is not None and markers
    offsets = {0, end, snapshot.offset, snapshot.offset - 1, snapshot.offset + 1, end // 3, end // 2}
    offsets |= {m + d for m in markers[:12] for d in (-1, 0, 1)}
    assert_matches_reference(generated_lake, sorted(o for o in offsets if 0 <= o <= end))


def test_crafted_log_matches_reference(crafted_lake: Lake) -> None:
    """Every offset of a log exercising ACLs, quotas, SCRAM, tokens, broker changes, directories,
    topic re-declarations and the config/ACL delta quirks."""
    assert_matches_reference(crafted_lake, list(range(-1, crafted_lake.state().high_water_mark + 1)))


def test_replay_frames_is_the_image_contract(crafted_lake: Lake) -> None:
    frames = replay_frames(crafted_lake, 50, checkpoints=False)
    expected, _ = reference(crafted_lake, [50])[50]
    assert frames.to_json() == expected
    assert frames.errors == ()


def test_engines_agree_and_auto_picks_by_size(sample_lake: Lake, monkeypatch) -> None:
    spark_image = replay_image(sample_lake, 2500, engine="spark", checkpoints=False)
    reference_image = replay_image(sample_lake, 2500, engine="reference")
    assert spark_image.to_json() == reference_image.to_json()
    chosen: list[str] = []
    monkeypatch.setattr(spark_engine, "replay_frames", lambda *a, **k: chosen.append("spark"))
    monkeypatch.setattr(engine, "replay_reference", lambda *a, **k: chosen.append("reference"))
    replay_image(sample_lake, 2500, threshold=2501)  # 2,501 records from the empty image
    replay_image(sample_lake, 2500, threshold=2500)
    replay_image(sample_lake, 3100, threshold=100)  # 89 records after the snapshot (end offset 3012)
    assert chosen == ["reference", "spark", "reference"]
    with pytest.raises(ValueError, match="unknown engine"):
        replay_image(sample_lake, 1, engine="fast")  # type: ignore[arg-type]


# ---------------------------------------------------------------------------- time

def test_parse_time() -> None:
    assert parse_time("1735689600000") == parse_time(1735689600000) == 1735689600000
    assert parse_time("2025-01-01T00:00:00Z") == 1735689600000
    assert parse_time("2025-01-01T01:00:00+01:00") == 1735689600000
    assert parse_time("2025-01-01T00:00:01") == 1735689601000  # naive = UTC
    with pytest.raises(ValueError, match="ISO-8601"):
        parse_time("yesterday")


def test_at_time_is_the_last_batch_appended_by_then(crafted_lake: Lake) -> None:
    # LogBuilder batches are appended at 1001, 1002, ... (one ms apart)
    batches = crafted_log().records
    ends = {r.timestamp: r.batch_last_offset for r in batches}
    assert resolve_offset(crafted_lake, at_time=1005) == ends[1005]
    assert resolve_offset(crafted_lake, at_time="1970-01-01T00:00:01.005Z") == ends[1005]
    assert resolve_offset(crafted_lake, 7) == 7
    with pytest.raises(ValueError, match="no batch"):
        resolve_offset(crafted_lake, at_time=999)
    with pytest.raises(ValueError, match="not both"):
        resolve_offset(crafted_lake, 3, at_time=1005)
    frames = replay_frames(crafted_lake, at_time=1005, checkpoints=False)
    assert frames.to_json()["offset"] == ends[1005]


# ---------------------------------------------------------------------------- inconsistent logs

BROKEN_ERRORS = [5, 6, 7, 8, 9, 10, 11, 12, 13, 15, 17, 18, 20, 22, 23, 24, 25, 26, 29, 32]
"""Offsets of the records the reference engine rejects in :func:`broken_log`."""


def test_strict_replay_names_the_first_rejected_record(broken_lake: Lake) -> None:
    assert replay_frames(broken_lake, 4, checkpoints=False).to_json()["offset"] == 4
    with pytest.raises(ReplayError) as error:
        replay_frames(broken_lake, 30, checkpoints=False)
    assert error.value.offset == 5
    assert str(error.value).startswith("offset 5: PARTITION_CHANGE_RECORD: unknown partition")


def test_lenient_replay_reports_and_skips_like_the_reference(broken_lake: Lake) -> None:
    offsets = [5, 12, 16, 21, 27, 32]
    images = replay_many(broken_lake, offsets, lenient=True, checkpoints=False)
    expected = reference(broken_lake, offsets, lenient=True)
    got = images.to_json()
    for offset in offsets:
        want, errors = expected[offset]
        assert not diff(want, got[offset]), diff(want, got[offset])
        assert [(e.offset, e.record_type) for e in images.frames(offset).errors] == \
            [(e.offset, e.record_type) for e in errors]
    assert [e.offset for e in expected[32][1]] == BROKEN_ERRORS
