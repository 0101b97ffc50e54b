"""Live test: really start a (one-node, combined) KRaft cluster from the fetched jars, drive a few steps
through the Admin client, stop it, and check the recorded outputs and that no JVM is left behind."""

from __future__ import annotations

import json
import os
import time

import pytest

from tests.harness import compare, oracle
from tests.harness.kafka_dist import NEWEST
from tests.harness.testing import dist_for

pytestmark = pytest.mark.kafka

LIVE_VERSION = os.environ.get("KRAFT_REPLAY_LIVE_KAFKA", NEWEST)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie still answers kill(0); treat it as gone
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.timeout(420)
def test_live_combined_cluster_smoke(tmp_path):
    from tests.harness.scenarios import run_scenario

    dist = dist_for(LIVE_VERSION)
    out = tmp_path / "smoke"
    t0 = time.monotonic()
    run = run_scenario("smoke", LIVE_VERSION, out, command="pytest tests/test_kafka_cluster.py")
    elapsed = time.monotonic() - t0
    pids = run.cluster.pids()
    assert pids, "no JVM was started"
    assert not [p for p in pids if _pid_alive(p)], f"JVMs still running after the scenario: {pids}"
    assert not run.cluster.workdir.exists(), "cluster temp dir not removed"

    views = json.loads((out / "views.json").read_text())
    names = [s["name"] for s in views["steps"]]
    assert names == ["cluster-up", "create-topics", "alter-and-delete"]
    offs = [s["offset"] for s in views["steps"]]
    assert offs == sorted(offs) and offs[0] >= 0
    last = views["steps"][-1]
    assert set(last["topics"]) == {"smoke-a"}
    assert last["configs"]["TOPIC"]["smoke-a"] == {"retention.ms": "123456"}
    assert [p["leader"] for p in last["topics"]["smoke-a"]["partitions"]] == [1, 1]

    md = out / "__cluster_metadata-0"
    assert (md / "00000000000000000000.log").stat().st_size > 0
    assert not list(md.glob("*.index")), "index files should be stripped"
    dump = (out / "dump-log.txt").read_text()
    types = {r["type"] for r in compare.parse_dump_log(dump)}
    assert {"TOPIC_RECORD", "PARTITION_RECORD", "CONFIG_RECORD", "REMOVE_TOPIC_RECORD"} <= types
    assert (out / "dump-log-skip-metadata.txt").read_text().count("payload:") == dump.count("payload:")
    meta = json.loads((out / "meta.json").read_text())
    assert meta["kafkaVersion"] == LIVE_VERSION and meta["layout"] == "combined"

    # the freshly written log replays (with Kafka's own classes) to exactly what the cluster reported
    res = oracle.steps(dist, md, offs)
    for step, img in zip(views["steps"], res["images"]):
        assert compare.compare_view_with_image(step, img) == [], step["name"]
    print(f"live smoke scenario on Kafka {LIVE_VERSION}: {elapsed:.1f}s")
