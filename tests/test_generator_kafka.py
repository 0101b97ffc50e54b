"""Generated logs checked with Apache Kafka's own code (jars from Maven Central, see tests/harness):
``DumpLogSegments --cluster-metadata-decoder`` decodes every batch and record, and Kafka's replay
(KraftOracle ``verify-snapshots``) finds each generated snapshot equal to the replay of the log below
its end offset — with the snapshot at the log end, that is the simulator's final state against
Kafka's replay of the whole log."""

from __future__ import annotations

import json
import re

import pytest

from generator import LOG_DIR_NAME, generate
from tests.harness import oracle, tools
from tests.harness.kafka_dist import NEWEST, RELEASES
from tests.harness.testing import dist_for

pytestmark = pytest.mark.kafka

VERSIONS = (RELEASES["3.9"], NEWEST)  # the oldest and the newest supported release


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> dict[str, tuple]:
    out = {}
    for name, kwargs in {
        "middle": {"seed": 7, "brokers": 5, "topics": 20, "partitions": 6, "churn": 2000, "snapshot_at": 3000},
        "end-zstd": {
            "seed": 2,
            "brokers": 7,
            "topics": 12,
            "partitions": 8,
            "churn": 2500,
            "snapshot_at": 10**9,
            "compression": "zstd",
        },
    }.items():
        directory = tmp_path_factory.mktemp(name)
        report = generate(out_dir=directory, segment_bytes=256 * 1024, **kwargs)
        out[name] = (report, directory / LOG_DIR_NAME)
    return out


@pytest.mark.parametrize("version", VERSIONS)
def test_kafka_replay_equals_the_generated_snapshots(version, generated):
    dist = dist_for(version)
    for name, (report, log_dir) in generated.items():
        proc = oracle.run_oracle(dist, ["verify-snapshots", "--dir", str(log_dir)])
        results = json.loads(proc.stdout.strip().splitlines()[-1])
        assert [(r["snapshot"], r["offset"], r["equal"]) for r in results] == [
            (s.file, s.end_offset - 1, True) for s in report.snapshots
        ], name


@pytest.mark.parametrize("version", VERSIONS)
def test_kafka_dump_log_decodes_every_record(version, generated):
    dist = dist_for(version)
    report, log_dir = generated["middle"]
    text = tools.dump_log(dist, tools.segment_files(log_dir))
    batches = re.findall(r"^baseOffset: .* isvalid: (\w+)$", text, flags=re.MULTILINE)
    assert len(batches) == report.batches and set(batches) == {"true"}
    types = re.findall(r'payload: \{"type":"(\w+)"', text)
    assert len(types) == report.metadata_records
    assert {t: types.count(t) for t in set(types)} == report.by_type
    assert len(re.findall(r"controlType: LEADER_CHANGE|LeaderChange: \{", text)) == report.control_records
    snapshot = tools.dump_log(dist, tools.checkpoint_files(log_dir))
    assert len(re.findall(r'payload: \{"type":', snapshot)) == report.snapshots[0].metadata_records
    assert "SnapshotHeader" in snapshot and "SnapshotFooter" in snapshot
