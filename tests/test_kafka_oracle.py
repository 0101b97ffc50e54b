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
import json

import pytest

from tests.harness import compare, oracle, tools
from tests.harness.kafka_dist import RELEASES, release_line
from tests.harness.testing import (
    all_fixtures,
    dist_for,
    fixture_dist,
    fixture_id,
    fixture_release,
    load_views,
    meta_dir,
    oracle_steps,
    parse_shell_tree,
)

pytestmark = pytest.mark.kafka

FIXTURES = all_fixtures()


def test_every_release_line_has_fixtures():
    assert {fixture_release(f) for f in FIXTURES} == set(RELEASES), (
        f"expected fixtures of every release line {sorted(RELEASES)}, found {sorted(map(fixture_id, FIXTURES))}"
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
            json.loads(r["fromLog"]),
            json.loads(r["fromSnapshot"]),
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
    # without record metadata (" payload:" lines up to 4.2, "| payload:" from 4.3) the same records
    skipped = list(compare.parse_dump_log((fixture / "dump-log-skip-metadata.txt").read_text()))
    fields = ("offset", "timestamp", "is_control", "type", "version", "data")
    assert [tuple(r[k] for k in fields) for r in skipped] == [tuple(r[k] for k in fields) for r in records]


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


BOOTSTRAP_SNAPSHOT = "00000000000000000000-0000000000.checkpoint"


def _formatted_by(fixture) -> str:
    """The release line whose ``kafka-storage format`` wrote the fixture's directory (an upgraded cluster's first)."""
    meta = json.loads((fixture / "meta.json").read_text())
    return release_line(meta.get("upgradedFrom", meta["kafkaVersion"]))


@pytest.mark.parametrize(
    "fixture", [f for f in FIXTURES if (meta_dir(f) / BOOTSTRAP_SNAPSHOT).exists()], ids=fixture_id
)
def test_bootstrap_snapshot_holds_what_its_release_formats(fixture):
    """The ``0-0`` checkpoint of a controller: from 4.4 (KIP-1170) ``kafka-storage format`` writes the bootstrap records
    there (feature levels; no ``bootstrap.checkpoint``), and the controller, activating on an empty log, writes them
    first in its bootstrap transaction (then what activation adds, e.g. the cluster's min.insync.replicas when ELR is
    enabled); before 4.4 it holds KRaft control records only and ``bootstrap.checkpoint`` the bootstrap records. It is
    never an image (KraftOracle skips it, as Kafka's MetadataLoader does: see tests/harness/README.md)."""
    snapshot = [
        (r["type"], r["version"], r["data"])
        for r in compare.parse_dump_log((fixture / "dump-log-snapshots.txt").read_text())
        if r["file"].endswith(BOOTSTRAP_SNAPSHOT) and not r["is_control"]
    ]
    log = [(r["type"], r["version"], r["data"]) for r in compare.parse_dump_log((fixture / "dump-log.txt").read_text())]
    begin = log.index(("BEGIN_TRANSACTION_RECORD", 0, {"name": "Bootstrap records"}))
    transaction = log[begin + 1 : log.index(("END_TRANSACTION_RECORD", 0, {}), begin)]
    if tuple(map(int, _formatted_by(fixture).split("."))) >= (4, 4):
        assert snapshot and {t for t, _, _ in snapshot} == {"FEATURE_LEVEL_RECORD"}
        assert transaction[: len(snapshot)] == snapshot
        assert not (fixture / "bootstrap.checkpoint").exists()
    else:
        assert snapshot == [] and (fixture / "bootstrap.checkpoint").is_file()


SCENARIO_RECORDS = {
    "cordon": {("BROKER_REGISTRATION_CHANGE_RECORD", 3), ("REGISTER_BROKER_RECORD", 4)},
    "upgrade": {
        ("REGISTER_BROKER_RECORD", 3),
        ("REGISTER_BROKER_RECORD", 4),
        ("BROKER_REGISTRATION_CHANGE_RECORD", 3),
        ("UNREGISTER_CONTROLLER_RECORD", 0),
    },
}
"""Record types and versions the log of a scenario must hold (what it was recorded for)."""


@pytest.mark.parametrize("fixture", [f for f in FIXTURES if f.name in SCENARIO_RECORDS], ids=fixture_id)
def test_scenario_log_holds_the_records_it_was_recorded_for(fixture):
    records = list(compare.parse_dump_log((fixture / "dump-log.txt").read_text()))
    assert SCENARIO_RECORDS[fixture.name] <= {(r["type"], r["version"]) for r in records}
    if fixture.name == "cordon":  # a directory cordoned, in a change record and in a snapshot's registration
        assert any(
            r["data"].get("cordonedLogDirs") for r in records if r["type"] == "BROKER_REGISTRATION_CHANGE_RECORD"
        )
        snapshots = compare.parse_dump_log((fixture / "dump-log-snapshots.txt").read_text())
        assert any(r["data"].get("cordonedLogDirs") for r in snapshots if r["type"] == "REGISTER_BROKER_RECORD")
    if fixture.name == "upgrade":  # metadata.version raised from the old release's level to the new one's newest
        levels = [
            r["data"]["featureLevel"]
            for r in records
            if r["type"] == "FEATURE_LEVEL_RECORD" and r["data"]["name"] == "metadata.version"
        ]
        assert len(levels) >= 2 and levels[-1] > levels[0]


def test_oracle_replays_config_records_as_a_broker_of_each_release(tmp_path):
    """A broker (and the metadata shell) of a release with KAFKA-19851 replays ConfigRecords through
    ``DefaultSupportedConfigChecker``: a TOPIC / GROUP / CLIENT_METRICS config of a name the release does not
    know, and a config of any other resource type but BROKER, is not in its image. KAFKA-19851 is in 4.3.0
    (``a35d6492fb``) and was backported to 4.2.1 (``7514c0b268``), so 4.2.2 filters too; on the 4.1 and 4.0
    branches it came after 4.1.2 and 4.0.2, which keep every ConfigRecord."""
    from tests.lakes import write_log
    from tests.logbuilder import LogBuilder, config, feature_level, topic, uuid

    log = LogBuilder()
    log.batch(
        feature_level("metadata.version", 27),
        topic("t", uuid(0x7)),
        config(2, "t", "retention.ms", "1000"),  # TOPIC, known
        config(2, "t", "no.such.topic.config", "x"),  # TOPIC, unknown
        config(4, "1", "no.such.broker.config", "x"),  # BROKER: every name
        config(32, "g", "no.such.group.config", "x"),  # GROUP, unknown
        config(8, "1", "kafka.server.ReplicaManager", "DEBUG"),  # BROKER_LOGGER: not a supported type
    )
    directory = write_log(log, tmp_path)
    everything = {
        ("TOPIC", "t", "retention.ms"),
        ("TOPIC", "t", "no.such.topic.config"),
        ("BROKER", "1", "no.such.broker.config"),
        ("GROUP", "g", "no.such.group.config"),
        ("BROKER_LOGGER", "1", "kafka.server.ReplicaManager"),
    }
    supported = {("TOPIC", "t", "retention.ms"), ("BROKER", "1", "no.such.broker.config")}
    for line, expected in (("4.1", everything), ("4.2", supported), ("4.3", supported), ("4.4", supported)):
        image = oracle.image(dist_for(RELEASES[line]), directory, log.next_offset - 1)
        assert {(c["resourceType"], c["resourceName"], c["name"]) for c in image["configs"]} == expected, line
