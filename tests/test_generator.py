"""Tests of ``generator``: determinism, the report against an independent scan of the files,
Kafka controller rules (with mutation tests proving the checker can fail), snapshot naming/structure
and snapshot == replay of the log prefix."""

from __future__ import annotations

import copy
import gzip
import os
import struct
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from crc32c import crc32c

from generator import LOG_DIR_NAME, GenerateReport, generate
from tests.controller_rules import ControllerRuleChecker

STANDARD = {
    "seed": 7,
    "brokers": 5,
    "topics": 20,
    "partitions": 6,
    "churn": 2000,
    "snapshot_at": 3000,
    "segment_bytes": 256 * 1024,
}

API_KEYS = {
    0: "REGISTER_BROKER_RECORD",
    1: "UNREGISTER_BROKER_RECORD",
    2: "TOPIC_RECORD",
    3: "PARTITION_RECORD",
    4: "CONFIG_RECORD",
    5: "PARTITION_CHANGE_RECORD",
    9: "REMOVE_TOPIC_RECORD",
    12: "FEATURE_LEVEL_RECORD",
    15: "PRODUCER_IDS_RECORD",
    17: "BROKER_REGISTRATION_CHANGE_RECORD",
    20: "NO_OP_RECORD",
    21: "ZK_MIGRATION_STATE_RECORD",
    23: "BEGIN_TRANSACTION_RECORD",
    24: "END_TRANSACTION_RECORD",
    25: "ABORT_TRANSACTION_RECORD",
    27: "REGISTER_CONTROLLER_RECORD",
}
CONTROL_TYPES = {2: "LEADER_CHANGE", 3: "SNAPSHOT_HEADER", 4: "SNAPSHOT_FOOTER"}
HEADER = struct.Struct(">qiibIhiqqqhii")  # the 61-byte record batch v2 header


# ---------------------------------------------------------------- an independent reader (struct only)


def _uvarint(buf: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, pos
        shift += 7


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    u, pos = _uvarint(buf, pos)
    return (u >> 1) ^ -(u & 1), pos


def scan_file(path: Path) -> list[dict[str, Any]]:
    """Every batch of a segment/snapshot file: header fields, CRC checked, records split (key, value)."""
    buf = path.read_bytes()
    pos, batches = 0, []
    while pos < len(buf):
        (base, length, ple, magic, crc, attrs, last_delta, base_ts, max_ts, pid, pepoch, bseq, count) = (
            HEADER.unpack_from(buf, pos)
        )
        end = pos + 12 + length
        assert magic == 2 and end <= len(buf)
        assert crc32c(buf[pos + 21 : end]) == crc, f"CRC mismatch in {path.name} at byte {pos}"
        payload = buf[pos + 61 : end]
        codec = attrs & 7
        if codec == 1:
            payload = gzip.decompress(payload)
        records = []
        if codec in (0, 1):
            rpos = 0
            for i in range(count):
                length_, rpos = _varint(payload, rpos)
                start = rpos
                rpos += 1  # attributes
                ts_delta, rpos = _varint(payload, rpos)
                off_delta, rpos = _varint(payload, rpos)
                klen, rpos = _varint(payload, rpos)
                key = payload[rpos : rpos + klen] if klen >= 0 else None
                rpos += max(klen, 0)
                vlen, rpos = _varint(payload, rpos)
                value = payload[rpos : rpos + vlen]
                rpos += vlen
                headers, rpos = _varint(payload, rpos)
                assert (ts_delta, off_delta, headers, rpos - start) == (0, i, 0, length_)
                records.append((key, value))
            assert rpos == len(payload)
        batches.append(
            {
                "base": base,
                "ple": ple,
                "attrs": attrs,
                "last_delta": last_delta,
                "base_ts": base_ts,
                "max_ts": max_ts,
                "pid": pid,
                "pepoch": pepoch,
                "bseq": bseq,
                "count": count,
                "records": records,
                "control": bool(attrs & 0x20),
                "size": end - pos,
            }
        )
        pos = end
    return batches


def record_type(key: bytes | None, value: bytes, control: bool) -> str:
    if control:
        return CONTROL_TYPES[struct.unpack(">hh", key[:4])[1]]
    frame, p = _uvarint(value, 0)
    assert frame == 1 and key is None
    api_key, _ = _uvarint(value, p)
    return API_KEYS[api_key]


def scan_log(log_dir: Path, *, types: bool = True) -> dict[str, Any]:
    """Counts of a generated log directory, computed from the bytes alone."""
    segments = sorted(log_dir.glob("*.log"))
    out: dict[str, Any] = {
        "total": 0,
        "metadata": 0,
        "control": 0,
        "batches": 0,
        "data_batches": 0,
        "control_batches": 0,
        "by_type": Counter(),
        "control_by_type": Counter(),
        "segments": [],
        "epochs": [],
        "first_ts": None,
        "last_ts": None,
        "bytes": 0,
        "aborted": 0,
        "committed": 0,
        "aborted_records": 0,
        "boundaries": [],
        "batch_epoch": {},
        "batch_ts": {},
    }
    next_offset = 0
    in_txn, txn_records = False, 0
    for seg in segments:
        batches = scan_file(seg)
        assert batches, f"empty segment {seg.name}"
        assert int(seg.name[:20]) == batches[0]["base"], "segment name is not its first batch's base offset"
        out["segments"].append(
            (
                seg.name,
                batches[0]["base"],
                batches[-1]["base"] + batches[-1]["last_delta"],
                len(batches),
                sum(b["count"] for b in batches),
                seg.stat().st_size,
            )
        )
        out["bytes"] += seg.stat().st_size
        for b in batches:
            assert b["base"] == next_offset, "base offsets are not consecutive"
            assert b["last_delta"] == b["count"] - 1 and b["count"] > 0
            assert b["base_ts"] == b["max_ts"] and (b["pid"], b["pepoch"], b["bseq"]) == (-1, -1, -1)
            out["boundaries"].append(b["base"])
            out["batch_epoch"][b["base"]] = b["ple"]
            out["batch_ts"][b["base"]] = b["max_ts"]
            next_offset += b["count"]
            out["batches"] += 1
            out["total"] += b["count"]
            if out["first_ts"] is None:
                out["first_ts"] = b["max_ts"]
            assert out["last_ts"] is None or b["max_ts"] >= out["last_ts"], "timestamps go back"
            out["last_ts"] = b["max_ts"]
            if not out["epochs"] or out["epochs"][-1] != b["ple"]:
                out["epochs"].append(b["ple"])
            if b["control"]:
                out["control_batches"] += 1
                out["control"] += b["count"]
            else:
                out["data_batches"] += 1
                out["metadata"] += b["count"]
            if types:
                for key, value in b["records"]:
                    name = record_type(key, value, b["control"])
                    (out["control_by_type"] if b["control"] else out["by_type"])[name] += 1
                    if name == "BEGIN_TRANSACTION_RECORD":
                        in_txn, txn_records = True, 0
                    elif name == "END_TRANSACTION_RECORD":
                        in_txn = False
                        out["committed"] += 1
                    elif name == "ABORT_TRANSACTION_RECORD":
                        in_txn = False
                        out["aborted"] += 1
                        out["aborted_records"] += txn_records
                    elif in_txn and not b["control"]:
                        txn_records += 1
    out["end"] = next_offset
    return out


# ---------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def standard(tmp_path_factory) -> tuple[GenerateReport, Path, list[tuple]]:
    out = tmp_path_factory.mktemp("gen")
    trace: list[tuple] = []
    report = generate(out_dir=out, record_sink=lambda *r: trace.append(r), **STANDARD)
    return report, out / LOG_DIR_NAME, trace


def _files(log_dir: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(log_dir.iterdir())}


# ---------------------------------------------------------------- determinism


def test_same_arguments_give_byte_identical_files(standard, tmp_path):
    report, log_dir, _ = standard
    again = generate(out_dir=tmp_path, **STANDARD)
    assert _files(tmp_path / LOG_DIR_NAME) == _files(log_dir)
    assert again.model_dump(exclude={"log_dir"}) == report.model_dump(exclude={"log_dir"})


def test_another_seed_gives_another_log(standard, tmp_path):
    _, log_dir, _ = standard
    generate(out_dir=tmp_path, **{**STANDARD, "seed": 8})
    assert _files(tmp_path / LOG_DIR_NAME)["00000000000000000000.log"] != _files(log_dir)["00000000000000000000.log"]


def test_rerun_into_the_same_directory_replaces_the_files(tmp_path):
    generate(1, 3, 4, 2, 400, tmp_path, segment_bytes=8192, snapshot_at=200)
    first = _files(tmp_path / LOG_DIR_NAME)
    generate(1, 3, 4, 2, 400, tmp_path, segment_bytes=8192, snapshot_at=200)
    assert _files(tmp_path / LOG_DIR_NAME) == first
    generate(2, 3, 4, 2, 100, tmp_path, segment_bytes=1 << 20)
    names = sorted(os.listdir(tmp_path / LOG_DIR_NAME))
    assert [n for n in names if n.endswith((".log", ".checkpoint"))] == ["00000000000000000000.log"]


# ---------------------------------------------------------------- report vs. the bytes


def test_report_matches_an_independent_scan(standard):
    report, log_dir, _ = standard
    scan = scan_log(log_dir)
    assert report.total_records == scan["total"] == report.metadata_records + report.control_records
    assert report.metadata_records == scan["metadata"]
    assert report.control_records == scan["control"]
    assert report.by_type == dict(scan["by_type"])
    assert report.control_by_type == dict(scan["control_by_type"])
    assert (report.batches, report.data_batches, report.control_batches) == (
        scan["batches"],
        scan["data_batches"],
        scan["control_batches"],
    )
    assert report.first_offset == 0 and report.last_offset == scan["end"] - 1
    assert (report.first_timestamp, report.last_timestamp) == (scan["first_ts"], scan["last_ts"])
    assert report.epochs == scan["epochs"] and report.first_epoch == 1 and report.last_epoch == scan["epochs"][-1]
    assert report.bytes == scan["bytes"]
    assert report.segments_written == len(scan["segments"]) > 1
    assert [(s.file, s.base_offset, s.last_offset, s.batches, s.records, s.bytes) for s in report.segments] == scan[
        "segments"
    ]
    assert (report.transactions_committed, report.transactions_aborted, report.aborted_transaction_records) == (
        scan["committed"],
        scan["aborted"],
        scan["aborted_records"],
    )
    assert report.transactions_aborted >= 1 and report.aborted_transaction_records > 0
    assert report.control_by_type["LEADER_CHANGE"] == len(report.epochs)


def test_segments_roll_at_the_configured_size(tmp_path):
    report = generate(3, 4, 6, 3, 600, tmp_path, segment_bytes=16 * 1024)
    scan = scan_log(tmp_path / LOG_DIR_NAME, types=False)
    assert report.segments_written == len(scan["segments"]) >= 5
    for name, base, last, batches, records, size in scan["segments"]:
        assert size <= 16 * 1024 or batches == 1
    assert sum(s[4] for s in scan["segments"]) == report.total_records


@pytest.mark.parametrize("compression", ["gzip", "snappy", "lz4", "zstd"])
def test_compressed_logs_decode_to_the_same_records(compression, tmp_path):
    from metadata.log.codec.batch import decode_batch
    from metadata.log.codec.records import decode_control_record, decode_metadata_value

    report = generate(5, 3, 5, 2, 300, tmp_path, compression=compression, snapshot_at=400)
    plain = generate(5, 3, 5, 2, 300, tmp_path / "plain", snapshot_at=400)
    ignore = {
        "log_dir": True,
        "compression": True,
        "bytes": True,
        "segments": True,
        "snapshots": {"__all__": {"bytes"}},
    }
    assert report.model_dump(exclude=ignore) == plain.model_dump(exclude=ignore)
    codec_id = ["none", "gzip", "snappy", "lz4", "zstd"].index(compression)
    for directory in (tmp_path / LOG_DIR_NAME, tmp_path / "plain" / LOG_DIR_NAME):
        decoded = []
        for path in sorted(directory.glob("*.log")) + sorted(directory.glob("*.checkpoint")):
            buf, pos = path.read_bytes(), 0
            for batch in scan_file(path):
                assert batch["attrs"] & 7 == (codec_id if directory.parent == tmp_path else 0)
            while pos < len(buf):
                batch, pos = decode_batch(buf, pos)
                for r in batch.records:
                    if batch.is_control:
                        decoded.append(decode_control_record(r.key, r.value))
                    else:
                        spec, version, data = decode_metadata_value(r.value)
                        decoded.append((spec.type_name, version, data))
        if directory.parent == tmp_path:
            compressed = decoded
    assert compressed == decoded


# ---------------------------------------------------------------- Kafka controller rules


def _check(trace) -> list[str]:
    checker = ControllerRuleChecker()
    for item in trace:
        checker.feed(*item)
    return checker.finish()


def test_standard_log_follows_the_controller_rules(standard):
    _, _, trace = standard
    assert _check(trace) == []


@pytest.mark.parametrize(
    "args",
    [
        {"seed": 1, "brokers": 1, "topics": 2, "partitions": 2, "churn": 300, "replication_factor": 1},
        {"seed": 2, "brokers": 3, "topics": 0, "partitions": 4, "churn": 500, "replication_factor": 3},
        {"seed": 3, "brokers": 4, "topics": 10, "partitions": 3, "churn": 1200, "replication_factor": 4},
        {"seed": 4, "brokers": 9, "topics": 6, "partitions": 12, "churn": 1500, "replication_factor": 2},
    ],
)
def test_other_shapes_follow_the_controller_rules(args, tmp_path):
    trace: list[tuple] = []
    generate(out_dir=tmp_path, record_sink=lambda *r: trace.append(r), snapshot_at=100, **args)
    assert _check(trace) == []


def _first(trace, predicate) -> int:
    return next(i for i, item in enumerate(trace) if predicate(item))


def _mutated(trace, index: int, change) -> list[tuple]:
    items = list(trace)
    offset, epoch, ts, type_name, version, data, control = items[index]
    data = copy.deepcopy(data)
    change(data)
    items[index] = (offset, epoch, ts, type_name, version, data, control)
    return items


def test_the_checker_detects_broken_rules(standard):
    """Each mutation breaks one controller rule; the checker must report it (it is not vacuous)."""
    _, _, trace = standard
    pcr = "PARTITION_CHANGE_RECORD"
    # an elected leader outside the ISR
    i = _first(trace, lambda r: r[3] == pcr and r[5].get("leader", -2) >= 0 and "isr" not in r[5])
    assert _check(_mutated(trace, i, lambda d: d.update(leader=987)))
    # a broker epoch that is not the registration offset
    i = _first(trace, lambda r: r[3] == "REGISTER_BROKER_RECORD")
    assert _check(_mutated(trace, i, lambda d: d.update(brokerEpoch=d["brokerEpoch"] + 1)))
    # a replica removed without the forced leader epoch bump
    i = _first(
        trace,
        lambda r: (
            r[3] == pcr and "replicas" in r[5] and "leader" in r[5] and "isr" in r[5] and r[5]["leader"] in r[5]["isr"]
        ),
    )
    assert any("epoch bump" in v for v in _check(_mutated(trace, i, lambda d: d.pop("leader"))))
    # a fence quoting a stale broker epoch
    i = _first(trace, lambda r: r[3] == "BROKER_REGISTRATION_CHANGE_RECORD" and r[5].get("fenced") == 1)
    assert _check(_mutated(trace, i, lambda d: d.update(brokerEpoch=d["brokerEpoch"] - 1)))
    # a partition id that is not dense
    i = _first(trace, lambda r: r[3] == "PARTITION_RECORD" and r[5]["partitionId"] == 1)
    assert _check(_mutated(trace, i, lambda d: d.update(partitionId=2)))
    # a change for a partition that does not exist
    i = _first(trace, lambda r: r[3] == pcr)
    assert _check(_mutated(trace, i, lambda d: d.update(partitionId=999)))
    # an ISR member added while fenced: the first ISR expansion names a broker that is down
    i = _first(trace, lambda r: r[3] == pcr and "isr" in r[5] and "leader" not in r[5] and len(r[5]["isr"]) >= 2)
    assert _check(_mutated(trace, i, lambda d: d.update(isr=d["isr"] + [424242])))
    # the election after an unfencing is dropped: the partition stays leaderless with a live ISR
    unfence = _first(
        trace,
        lambda r: (
            r[3] == "BROKER_REGISTRATION_CHANGE_RECORD"
            and r[5].get("fenced") == -1
            and trace[trace.index(r) + 1][3] == pcr
            and trace[trace.index(r) + 1][5].get("leader", -1) >= 0
        ),
    )
    dropped = [r for j, r in enumerate(trace) if j != unfence + 1]
    dropped = [(k, *r[1:]) for k, r in enumerate(dropped)]
    assert any("no leader although" in v or "not in ISR" in v for v in _check(dropped))
    # a leader that is fenced: swap an unfencing for a no-op record
    assert _check(_mutated(trace, unfence, lambda d: d.update(fenced=0)))


def test_churn_covers_the_kafka_flows(standard):
    report, _, trace = standard
    kinds = report.churn_events
    for kind in (
        "isr_shrink",
        "isr_expand",
        "preferred_election",
        "reassignment",
        "broker_crash",
        "controlled_shutdown",
        "broker_decommission",
        "topic_create",
        "topic_delete",
        "create_partitions",
        "topic_config",
        "broker_config",
        "feature_update",
        "producer_ids",
        "raft_election",
        "bulk_create",
        "aborted_transaction",
    ):
        assert kinds.get(kind, 0) > 0, kind
    assert sum(kinds.values()) == STANDARD["churn"]
    data = [(r[3], r[4], r[5]) for r in trace if not r[6]]
    changes = [d for t, _, d in data if t == "BROKER_REGISTRATION_CHANGE_RECORD"]
    assert any(d.get("inControlledShutdown") == 1 for d in changes)
    assert {v for t, v, _ in data if t == "BROKER_REGISTRATION_CHANGE_RECORD"} == {0, 1}
    pcrs = [d for t, _, d in data if t == "PARTITION_CHANGE_RECORD"]
    assert any(d.get("addingReplicas") and d.get("removingReplicas") for d in pcrs)  # reassignment started
    assert any(d.get("addingReplicas") == [] and "replicas" in d and "leader" in d for d in pcrs)  # completed
    assert any(set(d) == {"partitionId", "topicId", "directories"} for d in pcrs)  # AssignReplicasToDirs
    assert any(d.get("leader") == -1 for d in pcrs)  # partitions going offline
    configs = [d for t, _, d in data if t == "CONFIG_RECORD"]
    assert any(d["value"] is None and d["resourceType"] == 2 for d in configs)
    assert any(d["value"] is None and d["resourceType"] == 4 for d in configs)
    assert any(d["resourceName"] == "" for d in configs)
    assert any(d["name"] != "metadata.version" for t, _, d in data if t == "FEATURE_LEVEL_RECORD")
    # a topic deleted and re-created under the same name gets a new id
    ids_by_name: dict[str, set[str]] = {}
    for t, _, d in data:
        if t == "TOPIC_RECORD":
            ids_by_name.setdefault(d["name"], set()).add(d["topicId"])
    assert any(len(ids) > 1 for ids in ids_by_name.values())
    # re-registration of a broker with a new incarnation and epoch
    regs: dict[int, list[dict]] = {}
    for t, _, d in data:
        if t == "REGISTER_BROKER_RECORD":
            regs.setdefault(d["brokerId"], []).append(d)
    assert any(len(r) > 1 and len({x["incarnationId"] for x in r}) == len(r) for r in regs.values())
    assert report.by_type["UNREGISTER_BROKER_RECORD"] > 0 and report.by_type["REMOVE_TOPIC_RECORD"] > 0


def test_bootstrap_and_startup_look_like_a_real_cluster(standard):
    _, _, trace = standard
    assert trace[0][3] == "LEADER_CHANGE" and trace[0][6] and trace[0][1] == 1
    assert [(r[3], r[5]) for r in trace[1:5]] == [
        ("BEGIN_TRANSACTION_RECORD", {"name": "Bootstrap records"}),
        ("FEATURE_LEVEL_RECORD", {"name": "metadata.version", "featureLevel": 21}),
        ("ZK_MIGRATION_STATE_RECORD", {"zkMigrationState": 0}),
        ("END_TRANSACTION_RECORD", {}),
    ]
    first_topic = _first(trace, lambda r: r[3] == "TOPIC_RECORD")
    startup = [r[3] for r in trace[:first_topic]]
    assert startup.count("REGISTER_CONTROLLER_RECORD") == 3
    assert startup.count("REGISTER_BROKER_RECORD") == STANDARD["brokers"]
    unfenced = [r[5]["brokerId"] for r in trace[:first_topic] if r[3] == "BROKER_REGISTRATION_CHANGE_RECORD"]
    assert sorted(unfenced) == list(range(1, STANDARD["brokers"] + 1))
    # the initial creation writes the requested topics, some inside committed transactions
    created = [r[5]["name"] for r in trace if r[3] == "TOPIC_RECORD"][: STANDARD["topics"]]
    assert len(set(created)) == STANDARD["topics"]
    prefix = trace[: _first(trace, lambda r: r[3] == "TOPIC_RECORD" and r[5]["name"] == created[-1]) + 1]
    assert any(r[3] == "BEGIN_TRANSACTION_RECORD" and r[5].get("name") == "CreateTopics" for r in prefix)


def test_noop_records_follow_the_idle_interval(tmp_path):
    trace: list[tuple] = []
    report = generate(11, 3, 3, 2, 400, tmp_path, noop_interval_ms=500, record_sink=lambda *r: trace.append(r))
    span = report.last_timestamp - report.first_timestamp
    assert abs(report.by_type["NO_OP_RECORD"] - span / 500) <= report.control_records + 2
    quiet = generate(11, 3, 3, 2, 400, tmp_path / "quiet", noop_interval_ms=0)
    assert "NO_OP_RECORD" not in quiet.by_type


# ---------------------------------------------------------------- snapshot


def test_snapshot_file_name_and_structure(standard):
    report, log_dir, trace = standard
    assert report.snapshots_written == 1
    snap = report.snapshots[0]
    assert sorted(p.name for p in log_dir.glob("*.checkpoint")) == [snap.file]
    assert snap.file == f"{snap.end_offset:020d}-{snap.epoch:010d}.checkpoint"
    scan = scan_log(log_dir, types=False)
    assert snap.end_offset >= STANDARD["snapshot_at"]
    assert snap.end_offset in scan["boundaries"], "the snapshot must end at a batch boundary"
    last_batch = max(b for b in scan["boundaries"] if b < snap.end_offset)
    assert snap.epoch == scan["batch_epoch"][last_batch]
    assert snap.last_contained_log_timestamp == scan["batch_ts"][last_batch]
    # not inside a metadata transaction
    opened = 0
    for r in trace[: snap.end_offset]:
        opened += {"BEGIN_TRANSACTION_RECORD": 1, "END_TRANSACTION_RECORD": -1, "ABORT_TRANSACTION_RECORD": -1}.get(
            r[3], 0
        )
    assert opened == 0

    batches = scan_file(log_dir / snap.file)
    offsets = 0
    for b in batches:
        assert b["base"] == offsets and b["ple"] == snap.epoch
        offsets += b["count"]
    assert offsets == snap.records == snap.metadata_records + 2
    assert batches[0]["control"] and record_type(*batches[0]["records"][0], True) == "SNAPSHOT_HEADER"
    assert batches[-1]["control"] and record_type(*batches[-1]["records"][0], True) == "SNAPSHOT_FOOTER"
    assert batches[0]["count"] == batches[-1]["count"] == 1
    types = [record_type(k, v, False) for b in batches[1:-1] for k, v in b["records"]]
    assert dict(Counter(types)) == snap.by_type
    # MetadataImage.write order
    order = [
        "FEATURE_LEVEL_RECORD",
        "ZK_MIGRATION_STATE_RECORD",
        "REGISTER_BROKER_RECORD",
        "REGISTER_CONTROLLER_RECORD",
        "TOPIC_RECORD",
        "CONFIG_RECORD",
        "PRODUCER_IDS_RECORD",
    ]
    ranks = [order.index("TOPIC_RECORD" if t == "PARTITION_RECORD" else t) for t in types]
    assert ranks == sorted(ranks)
    assert types[0] == "FEATURE_LEVEL_RECORD" and types.count("ZK_MIGRATION_STATE_RECORD") == 1
    assert not set(types) & {
        "PARTITION_CHANGE_RECORD",
        "BEGIN_TRANSACTION_RECORD",
        "NO_OP_RECORD",
        "REMOVE_TOPIC_RECORD",
        "BROKER_REGISTRATION_CHANGE_RECORD",
    }


def _image(records: list[tuple[str, dict]]) -> dict[str, Any]:
    """A minimal replay (test-local) of committed records into a comparable image."""
    brokers: dict[int, dict] = {}
    topics: dict[str, dict] = {}
    configs: dict[tuple, dict] = {}
    features: dict[str, int] = {}
    producer = -1
    for t, d in records:
        if t == "REGISTER_BROKER_RECORD":
            brokers[d["brokerId"]] = {
                "epoch": d["brokerEpoch"],
                "inc": d["incarnationId"],
                "fenced": d["fenced"],
                "cs": d["inControlledShutdown"],
                "dirs": sorted(d.get("logDirs", [])),
            }
        elif t == "UNREGISTER_BROKER_RECORD":
            del brokers[d["brokerId"]]
        elif t == "BROKER_REGISTRATION_CHANGE_RECORD":
            b = brokers[d["brokerId"]]
            if d.get("fenced", 0):
                b["fenced"] = d["fenced"] == 1
            if d.get("inControlledShutdown", 0):
                b["cs"] = True
        elif t == "TOPIC_RECORD":
            topics[d["topicId"]] = {"name": d["name"], "parts": {}}
        elif t == "PARTITION_RECORD":
            topics[d["topicId"]]["parts"][d["partitionId"]] = {
                k: d[k]
                for k in (
                    "replicas",
                    "isr",
                    "removingReplicas",
                    "addingReplicas",
                    "leader",
                    "leaderEpoch",
                    "partitionEpoch",
                    "directories",
                )
            }
        elif t == "PARTITION_CHANGE_RECORD":
            p = topics[d["topicId"]]["parts"][d["partitionId"]]
            for k in ("replicas", "isr", "removingReplicas", "addingReplicas", "directories"):
                if k in d:
                    p[k] = d[k]
            if d.get("leader", -2) != -2:
                p["leader"] = d["leader"]
                p["leaderEpoch"] += 1
            p["partitionEpoch"] += 1
        elif t == "REMOVE_TOPIC_RECORD":
            name = topics.pop(d["topicId"])["name"]
            configs.pop((2, name), None)
        elif t == "CONFIG_RECORD":
            entry = configs.setdefault((d["resourceType"], d["resourceName"]), {})
            if d["value"] is None:
                entry.pop(d["name"], None)
            else:
                entry[d["name"]] = d["value"]
        elif t == "FEATURE_LEVEL_RECORD":
            if d["featureLevel"] or d["name"] == "metadata.version":
                features[d["name"]] = d["featureLevel"]
            else:
                features.pop(d["name"], None)
        elif t == "PRODUCER_IDS_RECORD":
            producer = d["nextProducerId"]
    return {
        "brokers": brokers,
        "topics": topics,
        "configs": {k: v for k, v in configs.items() if v},
        "features": features,
        "producer": producer,
    }


def _committed(records: list[tuple[str, dict]]) -> list[tuple[str, dict]]:
    out, pending = [], None
    for t, d in records:
        if t == "BEGIN_TRANSACTION_RECORD":
            pending = []
        elif t == "END_TRANSACTION_RECORD":
            out += pending
            pending = None
        elif t == "ABORT_TRANSACTION_RECORD":
            pending = None
        elif pending is not None:
            pending.append((t, d))
        else:
            out.append((t, d))
    return out


def _decode_file(path: Path) -> list[tuple[int, str, dict]]:
    from metadata.log.codec.batch import decode_batch
    from metadata.log.codec.records import decode_metadata_value

    buf, pos, out = path.read_bytes(), 0, []
    while pos < len(buf):
        batch, pos = decode_batch(buf, pos)
        if batch.is_control:
            continue
        for i, r in enumerate(batch.records):
            spec, _, data = decode_metadata_value(r.value)
            out.append((batch.base_offset + i, spec.type_name, data))
    return out


def test_snapshot_equals_the_replayed_log_prefix(standard):
    report, log_dir, _ = standard
    snap = report.snapshots[0]
    log = [
        (t, d) for path in sorted(log_dir.glob("*.log")) for off, t, d in _decode_file(path) if off < snap.end_offset
    ]
    from_log = _image(_committed(log))
    from_snapshot = _image([(t, d) for _, t, d in _decode_file(log_dir / snap.file)])
    assert from_snapshot == from_log
    assert from_snapshot["topics"] and from_snapshot["brokers"] and from_snapshot["configs"]


def test_the_snapshot_does_not_change_the_log(standard, tmp_path):
    """The snapshot is taken at the first natural batch boundary >= snapshot_at: the segments are the
    same bytes as without a snapshot."""
    report, log_dir, _ = standard
    without = generate(out_dir=tmp_path, **{**STANDARD, "snapshot_at": None})
    segments = {k: v for k, v in _files(log_dir).items() if k.endswith(".log")}
    assert segments == {k: v for k, v in _files(tmp_path / LOG_DIR_NAME).items() if k.endswith(".log")}
    assert without.snapshots_written == 0 and without.total_records == report.total_records


def test_snapshot_after_the_log_end_is_taken_at_the_end(tmp_path):
    report = generate(2, 3, 2, 2, 50, tmp_path, snapshot_at=10**9)
    assert report.snapshots[0].end_offset == report.last_offset + 1


def test_aux_files(standard):
    report, log_dir, _ = standard
    assert (log_dir / "partition.metadata").read_text() == "version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ\n"
    lines = (log_dir / "leader-epoch-checkpoint").read_text().split("\n")
    assert lines[0] == "0" and int(lines[1]) == len(report.epochs)
    assert [int(x.split()[0]) for x in lines[2:-1]] == report.epochs


def test_invalid_arguments(tmp_path):
    with pytest.raises(ValueError):
        generate(1, 2, 1, 1, 1, tmp_path, replication_factor=3)
    with pytest.raises(ValueError):
        generate(1, 0, 1, 1, 1, tmp_path)
    with pytest.raises(ValueError):
        generate(1, 1, 1, 1, 1, tmp_path, replication_factor=1, compression="brotli")
    with pytest.raises(ValueError):
        generate(1, 1, 1, 0, 1, tmp_path, replication_factor=1)


def test_generate_command(tmp_path):
    """``kraft-replay generate --json`` prints the report of :func:`generate` called with its options."""
    import json

    from typer.testing import CliRunner

    from cli.main import app

    argv = [
        "generate",
        "--seed",
        "3",
        "--brokers",
        "3",
        "--topics",
        "2",
        "--partitions",
        "2",
        "--churn",
        "40",
        "--out",
        str(tmp_path),
        "--rf=2",
        "--snapshot-at",
        "30",
        "--compression",
        "lz4",
        "--json",
    ]
    run = CliRunner().invoke(app, argv)
    assert run.exit_code == 0, run.output
    printed = json.loads(run.stdout)
    assert printed["replication_factor"] == 2 and printed["snapshot_at"] == 30 and printed["segment_bytes"] == 1 << 20
    assert printed == json.loads(
        generate(3, 3, 2, 2, 40, tmp_path, replication_factor=2, snapshot_at=30, compression="lz4").model_dump_json()
    )
    assert CliRunner().invoke(app, ["generate", "--seed", "1", "--bogus", "2"]).exit_code == 2
    assert CliRunner().invoke(app, ["generate", "--seed", "1"]).exit_code == 2


def test_committed_sample_is_reproducible(tmp_path):
    """data/README.md names the command that made data/sample; it must still give exactly those bytes."""
    import json

    sample = Path(__file__).resolve().parent.parent / "data" / "sample"
    report = generate(7, 5, 20, 6, 2000, tmp_path, snapshot_at=3000, segment_bytes=262144)
    assert _files(tmp_path / LOG_DIR_NAME) == _files(sample / LOG_DIR_NAME)
    committed = json.loads((sample / "generate-report.json").read_text())
    assert committed.pop("log_dir") == "data/sample/__cluster_metadata-0"
    assert committed == json.loads(report.model_dump_json(exclude={"log_dir"}))
