"""Validate Kafka's own replay (tests/harness/java/KraftOracle.java) against the committed real-Kafka fixtures.

For every fixture under tests/fixtures/kafka/<version>/<scenario>/ the oracle must reproduce what the
live cluster reported about itself at each recorded step (leader/replicas/ISR/leader epoch per partition,
topic ids, brokers, dynamic configs, features, in-flight reassignments, ACLs), its local changes must cover
every transition visible between consecutive views, snapshots must equal log replay, the committed
dump-log texts must be exactly what Kafka's DumpLogSegments prints for the committed files, and the final
image must agree with Kafka's metadata shell.
"""

from __future__ import annotations

import itertools

import pytest

from tests.harness import compare, oracle, tools
from tests.harness.testing import (
    all_fixtures,
    fixture_dist,
    fixture_id,
    load_views,
    meta_dir,
    oracle_steps,
    parse_shell_tree,
)

pytestmark = pytest.mark.kafka

FIXTURES = all_fixtures()


def test_fixtures_present():
    versions = {f.parent.name for f in FIXTURES}
    assert any(v.startswith("4.") for v in versions) and any(v.startswith("3.9") for v in versions), (
        f"expected committed fixtures for Kafka 4.x and 3.9.x, found {sorted(map(fixture_id, FIXTURES))}"
    )


@pytest.mark.parametrize("fixture", FIXTURES, ids=fixture_id)
def test_oracle_images_match_recorded_views(fixture):
    views = load_views(fixture)
    res = oracle_steps(fixture)
    assert res["warnings"] == [], f"oracle warnings: {res['warnings']}"
    assert len(res["images"]) == len(views["steps"]) + 1  # + the end of the log
    problems = []
    for step, img in zip(views["steps"], res["images"]):
        assert img["offset"] == step["offset"], (step["name"], img["offset"], step["offset"])
        for d in compare.compare_view_with_image(step, img):
            problems.append(f"step {step['step']} {step['name']} @ {step['offset']}: {d}")
    assert not problems, "oracle image != cluster view:\n" + "\n".join(problems)


@pytest.mark.parametrize("fixture", FIXTURES, ids=fixture_id)
def test_oracle_local_changes_cover_view_transitions(fixture):
    views = load_views(fixture)["steps"]
    res = oracle_steps(fixture)
    by_pair: dict = {}
    for c in res["changes"]:
        by_pair[(c["fromOffset"], c["toOffset"], c["broker"])] = c
    missing = []
    checked = 0
    for prev, cur in itertools.pairwise(views):
        brokers = {
            b["brokerId"]
            for img in res["images"]
            if img["offset"] in (prev["offset"], cur["offset"])
            for b in img["brokers"]
        }
        for b in sorted(brokers):
            c = by_pair.get((prev["offset"], cur["offset"], b))
            assert c is not None, f"no oracle changes for broker {b} between {prev['name']} and {cur['name']}"
            got = {
                k: {(x["topic"], x["partitionId"]) for x in c[k]}
                for k in ("leaders", "followers", "electedLeaders", "deletes")
            }
            for kind, keys in compare.expected_local_changes(prev, cur, b).items():
                checked += len(keys)
                for key in sorted(keys - got[kind]):
                    missing.append(f"{prev['name']} -> {cur['name']} broker {b}: {key} missing from {kind}")
            # structural invariants of LocalReplicaChanges
            assert got["electedLeaders"] <= got["leaders"]
            assert not (got["leaders"] & got["followers"])
            for x in c["leaders"]:
                assert x["leader"] == b and b in x["replicas"]
            for x in c["followers"]:
                assert x["leader"] != b and b in x["replicas"]
            assert set(c["topicIds"]) == {t for t, _ in got["leaders"] | got["followers"]}
    assert checked > 0
    assert not missing, "\n".join(missing)


@pytest.mark.parametrize(
    "fixture",
    [f for f in FIXTURES if any(int(p.name[:20]) > 0 for p in tools.checkpoint_files(meta_dir(f)))],
    ids=fixture_id,
)
def test_oracle_snapshots_equal_log_replay(fixture):
    results = oracle.verify_snapshots(fixture_dist(fixture), meta_dir(fixture))
    assert results, "no snapshots checked"
    bad = [r for r in results if not r["equal"]]
    assert not bad, "".join(
        compare.loud_diff(
            f"snapshot {r['snapshot']} vs log replay at {r['offset']}",
            __import__("json").loads(r["fromLog"]),
            __import__("json").loads(r["fromSnapshot"]),
        )
        for r in bad
    )


@pytest.mark.parametrize("fixture", FIXTURES, ids=fixture_id)
def test_committed_dump_log_is_kafkas_output(fixture):
    dist = fixture_dist(fixture)
    segs = tools.segment_files(meta_dir(fixture))
    assert segs
    assert tools.dump_log(dist, segs, cwd=fixture) == (fixture / "dump-log.txt").read_text()
    assert (
        tools.dump_log(dist, segs, skip_record_metadata=True, cwd=fixture)
        == (fixture / "dump-log-skip-metadata.txt").read_text()
    )
    records = list(compare.parse_dump_log((fixture / "dump-log.txt").read_text()))
    offsets = [r["offset"] for r in records]
    assert offsets == list(range(len(offsets))), "dump-log offsets are not 0..n-1"
    assert {"TOPIC_RECORD", "PARTITION_RECORD", "NO_OP_RECORD"} <= {r["type"] for r in records}


@pytest.mark.parametrize("fixture", FIXTURES, ids=fixture_id)
def test_metadata_shell_agrees_with_oracle_final_image(fixture):
    res = oracle_steps(fixture)
    final = res["images"][-1]
    segs = tools.segment_files(meta_dir(fixture))
    assert len(segs) == 1, "the metadata shell reads one file: a fixture with several segments needs another check"
    out = tools.metadata_shell(fixture_dist(fixture), segs[-1], ["tree", "/image/topics/byName"])
    shell = parse_shell_tree(out)
    assert sorted(shell) == [t["name"] for t in final["topics"]]
    ids = {t["name"]: t["topicId"] for t in final["topics"]}
    problems = []
    for p in final["partitions"]:
        s = shell[p["topic"]]["partitions"].get(p["partitionId"])
        if shell[p["topic"]]["id"] != ids[p["topic"]]:
            problems.append(f"{p['topic']} id {shell[p['topic']]['id']} != {ids[p['topic']]}")
        if s is None:
            problems.append(f"{p['topic']}-{p['partitionId']} missing in shell")
            continue
        for sk, ok in (
            ("replicas", "replicas"),
            ("isr", "isr"),
            ("leader", "leader"),
            ("leaderEpoch", "leaderEpoch"),
            ("partitionEpoch", "partitionEpoch"),
            ("removingReplicas", "removingReplicas"),
            ("addingReplicas", "addingReplicas"),
            ("directories", "directories"),
            ("elr", "eligibleLeaderReplicas"),
            ("lastKnownElr", "lastKnownElr"),
        ):
            if s.get(sk) != p[ok]:
                problems.append(f"{p['topic']}-{p['partitionId']} {sk}: shell {s.get(sk)} != oracle {p[ok]}")
        lrs = {"RECOVERED": 0, "RECOVERING": 1}.get(s.get("leaderRecoveryState"))
        if lrs != p["leaderRecoveryState"]:
            problems.append(
                f"{p['topic']}-{p['partitionId']} leaderRecoveryState: shell "
                f"{s.get('leaderRecoveryState')} != oracle {p['leaderRecoveryState']}"
            )
    assert not problems, "\n".join(problems)
