"""A live log: ingesting a ``__cluster_metadata-0`` directory while it is written — by a real Kafka (segments
rolling every few seconds, topics created between ingests), and by a copy that grows segment by segment with a
half-written last batch — takes the complete prefix each time, reports the torn tail, and ends with exactly the
log that was written; ``ingest --follow`` keeps doing so until it is sent SIGTERM."""

from __future__ import annotations

import dataclasses
import json
import os
import queue
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from image.temporal.ingest import ingest
from image.temporal.lake_source import ArrowSource
from metadata.lake.check import check_lake, lake_differences
from metadata.lake.files import LakeFiles
from metadata.lake.protocol import Lake
from metadata.log.readers import read_log
from metadata.log.records import LogRecord
from tests import background
from tests.harness.kafka_dist import RELEASES
from tests.processes import KRAFT_REPLAY, ROOT, environment

SEGMENTS = sorted((ROOT / "data" / "sample" / "__cluster_metadata-0").glob("*.log"))
# the newest release line kraft-replay decodes today (4.3+ write RegisterBrokerRecord v4: kafka_dist.NEWEST once known)
LIVE_VERSION = os.environ.get("KRAFT_REPLAY_LIVE_KAFKA", RELEASES["4.1"])
TORN = "truncated last batch"


def log_records(lake: Lake) -> list[LogRecord]:
    """The lake's committed records, read in process."""
    source = ArrowSource(LakeFiles(lake.uri))
    bounds = source.bounds()
    return source.log_records(*bounds) if bounds else []


def same_records(lake: Lake, log_dir: Path) -> list[str]:
    """Differences between the lake's committed records and the log read directly (paths aside)."""
    stored = [dataclasses.replace(r, source_file="") for r in log_records(lake)]
    written = [dataclasses.replace(r, source_file="") for r in read_log(log_dir)]
    if stored == written:
        return []
    first = next((i for i, (a, b) in enumerate(zip(stored, written)) if a != b), min(len(stored), len(written)))
    return [f"{len(stored)} records stored, {len(written)} written; first difference at index {first}"]


def cut_mid_batch(segment: Path) -> int:
    """A byte count that ends inside the segment's last batch but one (a half-written append)."""
    records = read_log(segment)
    starts = sorted({r.batch_base_offset for r in records})
    return segment.stat().st_size - 7 if len(starts) < 2 else _batch_position(segment, starts[-1]) - 7


def _batch_position(segment: Path, base_offset: int) -> int:
    """Byte position of the batch with ``base_offset`` (batches: 8-byte offset, 4-byte length, then length bytes)."""
    data, pos = segment.read_bytes(), 0
    while pos < len(data):
        if int.from_bytes(data[pos : pos + 8], "big") == base_offset:
            return pos
        pos += 12 + int.from_bytes(data[pos + 8 : pos + 12], "big")
    raise AssertionError(f"no batch at offset {base_offset} in {segment}")


def run_in_background(env: dict[str, str], root: Path) -> dict[str, Any]:
    """``ingest --follow`` of a log directory that grows (while the shared session works:
    :mod:`tests.background`): the first segment, then the second and a third cut mid-batch, then the rest of
    the third; SIGTERM after a round with nothing new. Returns the rounds it waited for and how it ended."""
    live = root / "node" / "__cluster_metadata-0"
    live.mkdir(parents=True)
    shutil.copy(SEGMENTS[0], live / SEGMENTS[0].name)
    location = str(root / "lake")
    proc = subprocess.Popen(
        [*KRAFT_REPLAY, "ingest", str(live), "--lake", location, "--follow", "--interval", "1", "--json"],
        env=environment(env),
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    rounds: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [rounds.put(json.loads(line)) for line in proc.stdout], daemon=True).start()

    def next_round(what, timeout: float = 600) -> dict:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                doc = rounds.get(timeout=5)
            except queue.Empty:
                assert proc.poll() is None, proc.stderr.read()
                continue
            assert doc["error"] is None, doc["error"]
            if what(doc["report"]):
                return doc["report"]
        raise AssertionError("no such round")

    try:
        first = next_round(lambda r: r["seq"] is not None)
        shutil.copy(SEGMENTS[1], live / SEGMENTS[1].name)
        cut = cut_mid_batch(SEGMENTS[2])
        (live / SEGMENTS[2].name).write_bytes(SEGMENTS[2].read_bytes()[:cut])  # Kafka mid-append
        torn = next_round(lambda r: any(TORN in w for w in r["warnings"]))  # (a round may take segment 1 alone first)
        with open(live / SEGMENTS[2].name, "ab") as f:  # the append completes
            f.write(SEGMENTS[2].read_bytes()[cut:])
        whole = next_round(lambda r: r["seq"] is not None and r["high_water_mark"] > torn["high_water_mark"])
        idle = next_round(lambda r: True)
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return {
        "rounds": (first, torn, whole, idle),
        "code": code,
        "stderr": proc.stderr.read(),
        "live": live,
        "lake": location,
    }


@pytest.mark.background
def test_follow_ingests_a_growing_log_until_sigterm(tmp_path):
    followed = background.result(__name__)
    first, torn, whole, idle = followed["rounds"]
    assert first["records_added"] == int(SEGMENTS[1].stem) and not first["warnings"]
    assert torn["seq"] is not None
    assert first["high_water_mark"] < torn["high_water_mark"] < int(SEGMENTS[3].stem) - 1
    assert whole["high_water_mark"] == int(SEGMENTS[3].stem) - 1 and not [w for w in whole["warnings"] if TORN in w]
    assert idle["seq"] is None and idle["records_added"] == 0  # a round with nothing new commits nothing
    assert followed["code"] == 0 and "stopped after" in followed["stderr"]
    assert whole["engine"] == "local"  # a local lake's follow rounds run in process
    lake, live = Lake(followed["lake"]), followed["live"]
    assert lake.state().seq == whole["seq"]
    assert same_records(lake, live) == []
    reference = str(tmp_path / "reference")
    ingest([str(live)], reference, progress=False)
    assert lake_differences(lake, Lake(reference)) == [] and check_lake(lake).ok
    lease = lake.lease()
    assert lease is not None and lease.free(lake.state().seq)  # the last round's lease ended with it


@pytest.mark.kafka
@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_repeated_ingests_of_a_live_kafka_metadata_log(tmp_path):
    """A real KRaft node (segments rolled every 3 s) while topics are created: every ingest holds a prefix of the
    log, a copy read mid-append gives a torn tail that is reported, and after the node stops one more ingest
    makes the lake equal the log Kafka wrote."""
    from kafka.admin import NewTopic

    from tests.harness.cluster import ClusterSpec, KafkaCluster
    from tests.harness.testing import dist_for

    dist = dist_for(LIVE_VERSION)
    spec = ClusterSpec(
        brokers=1,
        combined=True,
        racks=False,
        # Kafka 4.1 refuses metadata.log.segment.bytes under 8 MiB; its internal (test) setting allows small ones
        controller_props={"metadata.log.segment.ms": "3000", "internal.metadata.log.segment.bytes": "65536"},
    )
    location = str(tmp_path / "lake")
    lake = Lake(location)
    reports = []
    with KafkaCluster(dist, spec) as cluster:
        log_dir = cluster.metadata_log_dir()
        for i in range(4):
            cluster.admin().create_topics([NewTopic(f"live-{i}", 2, 1)])
            time.sleep(2)
            if i == 2:  # read as a reader racing Kafka's append would: the active segment cut inside a batch
                torn = tmp_path / "torn" / log_dir.name
                shutil.copytree(log_dir, torn)
                active = sorted(torn.glob("*.log"))[-1]
                active.write_bytes(active.read_bytes()[: cut_mid_batch(active)])
                report = ingest([str(torn)], location, progress=False)
                assert [w for w in report.warnings if TORN in w], report.warnings
                reports.append(report)
            reports.append(ingest([str(log_dir)], location, progress=False))
            state = lake.state()
            assert [r.offset for r in log_records(lake)] == list(range(state.high_water_mark + 1))  # a whole prefix
        assert len(list(log_dir.glob("*.log"))) > 1, "segments did not roll"
        cluster.stop()
        reports.append(ingest([str(log_dir)], location, progress=False))
        assert same_records(lake, log_dir) == []
    hwms = [r.high_water_mark for r in reports]
    assert hwms == sorted(hwms) and sum(r.records_added for r in reports) == hwms[-1] + 1
    assert check_lake(lake).ok
