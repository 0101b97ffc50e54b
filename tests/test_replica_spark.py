"""replica/ on Spark: all-broker local changes equal the reference engine for every broker (rule
scenarios, generated logs — one ingested into a lake once for this module), the apply plan of
hand-written scenarios, fetcher ids as a Spark expression, ZooKeeper-era requests, the CLI."""

from __future__ import annotations

import itertools
import json
import random
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from typer.testing import CliRunner

import cli.replica_commands  # noqa: F401 — attaches the replica commands to the app
from cli.app import app
from cli.render import plan_lines
from image.frames import ImageFrames
from image.replay import delta_between
from image.testing import (
    LogBuilder,
    abort,
    begin,
    end,
    feature_level,
    partition,
    partition_change,
    register_broker,
    remove_topic,
    topic,
)
from image.testing import uuid as make_uuid
from metadata.columns import payload_json
from metadata.generator import generate
from image.ingest import ingest
from image.versions import VersionLog, record_versions
from metadata.version_tables import PROVENANCE
from metadata.lake import Lake
from metadata.log import LogRecord
from metadata.readers import read_log
from metadata.tables import RECORDS_SCHEMA, typed_rows
from replica.apply_plan import apply_plan, fetcher_id_expr, plan_rows
from replica.local_changes import local_changes_json
from replica.spark_changes import DeltaFrames, TableSource
from replica.zk import NONE, leader_and_isr_json, replay_requests
from tests.test_render import more_line, table_rows
from tests.test_replica_local_changes import SCENARIOS

pytestmark = pytest.mark.spark


def memory_tables(spark: SparkSession, records: list[LogRecord]) -> TableSource:
    """The lake's typed tables projected from in-memory records, and the transactions the temporal image
    records (what ingest stores, no Delta I/O)."""
    rows = [(r.offset, r.batch_base_offset, r.batch_last_offset, r.epoch, r.timestamp, r.producer_id,
             r.producer_epoch, r.is_transactional, r.is_control, r.control_type, r.type, None, r.version,
             payload_json(r.data), None, r.source_file) for r in records]
    frame = spark.createDataFrame(rows, RECORDS_SCHEMA)
    recorded = record_versions(records)
    assert isinstance(recorded, VersionLog)
    spans = spark.createDataFrame([(s.begin, s.end, s.begin - 1, s.outcome) for s in recorded.spans],
                                  "from_offset long, to_offset long, offset long, outcome string")
    return lambda name: spans if name == PROVENANCE else typed_rows(name, frame)


def memory_delta(spark: SparkSession, records: list[LogRecord], a: int, b: int, *, lenient: bool = False) -> DeltaFrames:
    start, _, end = delta_between(records, a, b, lenient=lenient)
    return DeltaFrames(ImageFrames.from_json(spark, start.to_json()), ImageFrames.from_json(spark, end.to_json()),
                       memory_tables(spark, records), a, b)


def windows(records: list[LogRecord], seed: int, count: int, transactions: bool = True) -> list[tuple[int, int]]:
    """Random windows, windows cutting through metadata transactions (open at A, closed by B,
    open at B, aborted) and the whole log."""
    rng = random.Random(seed)
    last = records[-1].offset
    out = [(a, min(last, a + rng.choice([1, 20, 200, 2000]))) for a in (rng.randrange(last) for _ in range(count))]
    markers = [(r.offset, r.type) for r in records if r.type and r.type.endswith("TRANSACTION_RECORD")]
    pairs = [(m, n) for m, n in itertools.pairwise(markers) if m[1].startswith("BEGIN")]
    committed = [p for p in pairs if p[1][1].startswith("END")]
    aborted = [p for p in pairs if p[1][1].startswith("ABORT")]
    for (begin, _), (close, _) in ([committed[len(committed) // 2]] + aborted[:1]) * transactions:
        out += [(begin + 1, close + 2), (begin - 1, close - 1)]
    return out + [(-1, last)]


def assert_same(spark_doc: dict[str, Any], reference: dict[str, Any], where: str) -> None:
    mine = {b["broker"]: b for b in spark_doc["brokers"]}
    theirs = {b["broker"]: b for b in reference["brokers"]}
    assert sorted(mine) == sorted(theirs), where
    for broker, expected in theirs.items():
        assert mine[broker] == expected, f"{where} broker {broker}"
    assert (spark_doc["fromOffset"], spark_doc["toOffset"]) == (reference["fromOffset"], reference["toOffset"])


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_rule_scenarios_spark_equals_reference_for_every_broker(spark, name: str) -> None:
    log, a, b = SCENARIOS[name]()
    delta = memory_delta(spark, log.records, a, b)
    assert_same(delta.changes_json(), local_changes_json(log.records, a, b), name)


class Lakes:
    """A generated log ingested once for this module, plus its records read without Spark."""

    def __init__(self, root: Path, spark: SparkSession) -> None:
        generate(11, 4, 5, 3, 250, root / "gen", snapshot_at=400)
        self.location = str(root / "lake")
        ingest([str(root / "gen" / "__cluster_metadata-0")], self.location, spark=spark, progress=False)
        self.lake = Lake(self.location, spark)
        self.records = read_log(root / "gen" / "__cluster_metadata-0")
        self.root = root


@pytest.fixture(scope="module")
def lakes(spark, tmp_path_factory) -> Lakes:
    return Lakes(tmp_path_factory.mktemp("replica-lake"), spark)


def test_ingested_log_windows_spark_equals_reference(spark, lakes: Lakes) -> None:
    """Typed tables from the lake; images from the reference engine (the CLI test replays them
    from the lake)."""
    state = lakes.lake.state()
    for a, b in windows(lakes.records, 5, 2):
        start, _, end = delta_between(lakes.records, a, b)
        delta = DeltaFrames(ImageFrames.from_json(spark, start.to_json()), ImageFrames.from_json(spark, end.to_json()),
                            lambda name: lakes.lake.table(name, state), a, b)
        assert_same(delta.changes_json(), local_changes_json(lakes.records, a, b), f"window ({a}, {b}]")


def test_sample_log_windows_spark_equals_reference(spark) -> None:
    records = read_log(Path(__file__).parents[1] / "data" / "sample" / "__cluster_metadata-0")
    table = memory_tables(spark, records)
    for a, b in windows(records, 9, 1, transactions=False):
        start, _, end = delta_between(records, a, b)
        delta = DeltaFrames(ImageFrames.from_json(spark, start.to_json()), ImageFrames.from_json(spark, end.to_json()),
                            table, a, b)
        assert_same(delta.changes_json(), local_changes_json(records, a, b), f"sample window ({a}, {b}]")


def test_fetcher_id_expression_worked_values(spark) -> None:
    rows = [("foo", p, n) for p in range(4) for n in (1, 2, 3, 4)] + [("__consumer_offsets", p, 4) for p in range(3)]
    frame = spark.createDataFrame(rows + [("foo", 2144334854, 7), ("foo", 2144334855, 7)], "topic string, p int, n int")
    got = {(r[0], r[1], r[2]): r[3] for r in frame.select(
        "topic", "p", "n", *[F.when(F.col("n") == n, fetcher_id_expr(F.col("topic"), F.col("p"), n)).alias(f"f{n}")
                             for n in (1, 2, 3, 4, 7)]).select(
        "topic", "p", "n", F.coalesce(*[F.col(f"f{n}") for n in (1, 2, 3, 4, 7)])).collect()}
    expected = {0: (0, 0, 0, 2), 1: (0, 1, 1, 3), 2: (0, 0, 2, 0), 3: (0, 1, 0, 1)}
    for p, ids in expected.items():
        assert tuple(got[("foo", p, n)] for n in (1, 2, 3, 4)) == ids
    assert [got[("__consumer_offsets", p, 4)] for p in range(3)] == [3, 2, 1]
    # 31 * 101574 + 2144334854 = 2^31 (Integer.MIN_VALUE after overflow): abs gives 0
    assert (got[("foo", 2144334854, 7)], got[("foo", 2144334855, 7)]) == (0, (2 ** 31 - 1) % 7)


FOO, BAR, CO, BAZ = make_uuid(0xF0), make_uuid(0xB0), make_uuid(0xC0), make_uuid(0x20)
D1, D4 = make_uuid(0xD1), make_uuid(0xD4)


def apply_scenario() -> tuple[LogBuilder, int, int]:
    """Broker 1's view: foo-0 ISR shrink (stays leader), foo-1 leadership moves to 1, foo-2 moves
    to 2 (1 follows), foo-3 reassigned away from 1, bar deleted (1 led it), baz created with leader
    4 (not registered), __consumer_offsets-0 moves to 2 and -1 to 1."""
    log = LogBuilder()
    log.batch(feature_level("metadata.version", 21), *[register_broker(b, 10 + b, fenced=False) for b in (1, 2, 3)])
    log.batch(topic("foo", FOO), partition(FOO, 0, [1, 2, 3]), partition(FOO, 1, [2, 1, 3]),
              partition(FOO, 2, [3, 1, 2]), partition(FOO, 3, [1, 2]))
    log.batch(topic("bar", BAR), partition(BAR, 0, [1, 2]))
    log.batch(topic("__consumer_offsets", CO), partition(CO, 0, [1, 2]), partition(CO, 1, [2, 1]))
    a = log.next_offset - 1
    log.batch(partition_change(FOO, 0, isr=[1, 2]), partition_change(FOO, 1, leader=1),
              partition_change(FOO, 2, leader=2), partition_change(FOO, 3, replicas=[2, 4], isr=[2], leader=2))
    log.batch(remove_topic(BAR))
    log.batch(topic("baz", BAZ), partition(BAZ, 0, [4, 1], directories=[D4, D1]))
    log.batch(partition_change(CO, 0, leader=2), partition_change(CO, 1, leader=1))
    return log, a, log.next_offset - 1


def summary(row: dict[str, Any]) -> tuple:
    """(step, action, topic-partition, the fields that matter for that action)."""
    detail: Any = None
    if row["action"] == "delete-log":
        detail = row["deleteRemoteLog"]
    elif row["action"] in ("make-leader", "make-follower"):
        detail = (row["isNew"], row["newLeaderEpoch"], row["createLog"], row["leaderEpoch"])
    elif row["action"] == "add-fetcher":
        detail = (row["fetcherLeaderId"], row["fetcherLeaderHost"], row["fetcherLeaderPort"], row["fetcherId"])
    elif row["action"] == "check-directory":
        detail = row["directory"]
    elif row["action"] in ("elect", "resign"):
        detail = (row["coordinator"], row["coordinatorEpoch"])
    return row["step"], row["action"], f"{row['topic']}-{row['partition']}", detail


@pytest.fixture(scope="module")
def apply_delta(spark) -> DeltaFrames:
    log, a, b = apply_scenario()
    return memory_delta(spark, log.records, a, b)


@pytest.fixture(scope="module")
def all_actions(apply_delta: DeltaFrames) -> list[dict[str, Any]]:
    """Every broker's plan (2 replica fetchers), ordered by broker and step."""
    plan = apply_plan(apply_delta, num_replica_fetchers=2)
    return [r.asDict(recursive=True) for r in plan.orderBy("broker", "step").collect()]


def test_apply_plan_of_broker_1_step_by_step(all_actions: list[dict[str, Any]]) -> None:
    rows = [r for r in all_actions if r["broker"] == 1]
    assert [summary(r) for r in rows] == [
        (1, "remove-fetcher", "bar-0", None),
        (2, "remove-fetcher", "foo-3", None),
        (3, "remove-partition", "bar-0", None),
        (4, "remove-partition", "foo-3", None),
        (5, "delete-log", "bar-0", True),  # topic deleted and broker 1 led bar-0: remote log too
        (6, "delete-log", "foo-3", False),
        (7, "remove-fetcher", "__consumer_offsets-1", None),
        (8, "remove-fetcher", "foo-0", None),
        (9, "remove-fetcher", "foo-1", None),
        (10, "make-leader", "__consumer_offsets-1", (False, True, False, 1)),
        (11, "make-leader", "foo-0", (False, False, False, 0)),  # ISR only: leader epoch kept
        (12, "make-leader", "foo-1", (False, True, False, 1)),
        (13, "make-follower", "__consumer_offsets-0", (False, True, False, 1)),
        (14, "make-follower", "baz-0", (True, True, True, 0)),  # new: isNew, creates the log
        (15, "make-follower", "foo-2", (False, True, False, 1)),
        (16, "remove-fetcher", "__consumer_offsets-0", None),
        (17, "remove-fetcher", "baz-0", None),
        (18, "remove-fetcher", "foo-2", None),
        (19, "no-fetcher", "baz-0", None),  # leader 4 is not registered
        # grouped by (leader, fetcher id): foo-2 → fetcher 0 of broker 2, __consumer_offsets-0 → 1
        (20, "add-fetcher", "foo-2", (2, "b2", 9092, 0)),
        (21, "add-fetcher", "__consumer_offsets-0", (2, "b2", 9092, 1)),
        (22, "check-directory", "baz-0", D1),  # metadata.version 3.9-IV0 ≥ 3.7-IV2
        (23, "elect", "__consumer_offsets-1", ("group", 1)),
        (24, "resign", "__consumer_offsets-0", ("group", 1)),
        (25, "partitions-deleted", "bar-0", None),
    ]
    text = plan_lines(rows, None)
    assert text[0] == "Deleting 2 partition(s)." and "Transitioning 3 partition(s) to local leaders." in text
    assert any("ReplicaFetcherThread-1-2" in line for line in text)


def test_apply_plan_every_broker_at_once(all_actions: list[dict[str, Any]]) -> None:
    counts = Counter((r["broker"], r["action"]) for r in all_actions)
    assert counts[(2, "make-leader")] == 3  # foo-2, foo-3 (reassigned to [2,4]), __consumer_offsets-0
    assert counts[(2, "delete-log")] == 1 and (2, "remove-partition") in counts  # bar-0 (led by 1: no remote)
    assert counts[(3, "make-follower")] == 3 and (3, "delete-log") not in counts
    # every registered broker's group coordinator hears about bar-0
    assert {r["broker"] for r in all_actions if r["action"] == "partitions-deleted"} == {1, 2, 3}
    for broker in {r["broker"] for r in all_actions}:
        steps = [r["step"] for r in all_actions if r["broker"] == broker]
        assert steps == list(range(1, len(steps) + 1))


def shutdown_scenario() -> tuple[LogBuilder, int, int]:
    """Broker 1 follows s-0..s-2 (leader 2): s-0 loses its leader, s-1's ISR drops... 1 is not in
    it, s-2 is re-registered with an older partition epoch (stale)."""
    s = make_uuid(0x50)
    log = LogBuilder()
    log.batch(*[register_broker(b, 10 + b, fenced=False) for b in (1, 2)])
    log.batch(topic("s", s), partition(s, 0, [1, 2], leader=2), partition(s, 1, [1, 2], leader=2),
              partition(s, 2, [1, 2], leader=2, partition_epoch=5))
    a = log.next_offset - 1
    log.batch(partition_change(s, 0, leader=-1, isr=[2]), partition_change(s, 1, isr=[2]),
              partition(s, 2, [1, 2], leader=2, leader_epoch=9, partition_epoch=3))
    return log, a, log.next_offset - 1


def test_apply_plan_controlled_shutdown_and_stale_partition_epoch(spark) -> None:
    log, a, b = shutdown_scenario()
    delta = memory_delta(spark, log.records, a, b)
    rows = plan_rows(apply_plan(delta, brokers=[1], in_controlled_shutdown=[1]), 1)
    assert [summary(r)[:3] for r in rows] == [
        (1, "make-follower", "s-0"), (2, "make-follower", "s-1"), (3, "make-follower", "s-2"),
        (4, "stop-fetching", "s-0"), (5, "stop-fetching", "s-1")]
    assert rows[2]["reason"] == "skipped: partition epoch 3 is older than the current 5"
    assert rows[2]["newLeaderEpoch"] is False
    # not shutting down: s-0's new leader epoch restarts fetching, but there is no leader
    rows = plan_rows(apply_plan(delta, brokers=[1]), 1)
    assert [summary(r)[1:3] for r in rows][3:] == [("remove-fetcher", "s-0"), ("no-fetcher", "s-0")]


def test_apply_plan_topic_id_mismatch_aborts_apply_delta(spark) -> None:
    """t-0 is hosted under id T and not deleted, but the delta declares t again with id T2: Kafka
    throws IllegalStateException out of applyDelta; u-0's follower steps never happen."""
    t, t2, u, x = make_uuid(0x71), make_uuid(0x72), make_uuid(0x73), make_uuid(0x74)
    log = LogBuilder()
    log.batch(*[register_broker(b, 10 + b, fenced=False) for b in (1, 2)])
    log.batch(topic("a", x), partition(x, 0, [1, 2]), topic("t", t), partition(t, 0, [1, 2]),
              topic("u", u), partition(u, 0, [1, 2]))
    a = log.next_offset - 1
    log.batch(partition_change(x, 0, isr=[1]), topic("t", t2), partition(t2, 0, [2, 1]),
              partition_change(u, 0, leader=2))
    delta = memory_delta(spark, log.records, a, log.next_offset - 1, lenient=True)
    rows = plan_rows(apply_plan(delta, brokers=[1]), 1)
    assert [summary(r)[:3] for r in rows] == [(1, "remove-fetcher", "a-0"), (2, "make-leader", "a-0"),
                                              (3, "abort", "t-0")]
    assert rows[2]["reason"].startswith(f"IllegalStateException: Topic t-0 exists, but its ID is {t}, not {t2}")


def test_misplaced_transaction_markers_are_skipped_like_the_reference(spark) -> None:
    """A lenient replay skips an End/Abort outside a transaction and a Begin inside one, so the
    transaction of the first Begin closes at the End: the Spark changes pair markers the same way."""
    t, u = make_uuid(0x81), make_uuid(0x82)
    log = LogBuilder()
    log.batch(*[register_broker(b, 10 + b, fenced=False) for b in (1, 2, 3)])
    log.batch(topic("t", t), partition(t, 0, [1, 2]), partition(t, 1, [2, 3]), topic("u", u), partition(u, 0, [3, 1]))
    a = log.next_offset - 1
    log.batch(end())  # outside a transaction: skipped
    log.batch(begin(), remove_topic(u))  # deletes only a record of the delta can tell
    log.batch(begin(), partition_change(t, 1, replicas=[3, 1], isr=[3, 1]))  # inside a transaction: skipped
    log.batch(end(), abort())  # the End commits both changes; the Abort is outside a transaction
    last = log.next_offset - 1
    for b in (last - 2, last):  # the transaction open, then committed
        delta = memory_delta(spark, log.records, a, b, lenient=True)
        expected = local_changes_json(log.records, a, b, lenient=True)
        assert_same(delta.changes_json(), expected, f"({a}, {b}]")
        assert bool(expected["brokers"]) == (b == last)


def test_leader_and_isr_requests_replay_cleanly(apply_delta: DeltaFrames) -> None:
    delta = apply_delta
    doc = leader_and_isr_json(delta, controller_epoch=3, broker=1)
    stop_request, lisr_request = doc["requests"]
    assert stop_request["type"] == "StopReplica" and lisr_request["type"] == "LeaderAndIsr"
    assert [(t["topicName"], [(p["partitionIndex"], p["leaderEpoch"]) for p in t["partitionStates"]])
            for t in stop_request["topicStates"]] == [("bar", [(0, -2)]), ("foo", [(3, 1)])]
    states = {(s["topicName"], s["partitionIndex"]): s for s in lisr_request["partitionStates"]}
    assert sorted(states) == [("__consumer_offsets", 0), ("__consumer_offsets", 1), ("baz", 0), ("foo", 0),
                              ("foo", 1), ("foo", 2)]
    assert states[("baz", 0)]["isNew"] and not states[("foo", 0)]["isNew"]
    assert (states[("foo", 0)]["partitionEpoch"], states[("foo", 0)]["controllerEpoch"]) == (1, 3)
    assert [b["brokerId"] for b in lisr_request["liveLeaders"]] == [1, 2]
    result = replay_requests(doc)
    assert all(p["errorCode"] == NONE for r in result["responses"] for p in r["partitionErrors"])
    everyone = leader_and_isr_json(delta, controller_epoch=3)
    assert [d["brokerId"] for d in everyone["brokers"]] == [1, 2, 3]


runner = CliRunner()


def cli_json(*args: Any) -> Any:
    res = runner.invoke(app, [str(a) for a in args] + ["--json"])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def test_cli_changes_apply_and_zk_replay(lakes: Lakes, tmp_path: Path) -> None:
    last = lakes.records[-1].offset
    a = last // 3
    doc = cli_json("changes", "--lake", lakes.location, "--from-offset", a, "--to-offset", last,
                   "--save", tmp_path / "changes")
    assert_same(doc, local_changes_json(lakes.records, a, last), "cli changes")
    assert cli_json("changes", "--lake", lakes.location, "--from-offset", a, "--broker", 2,
                    "--engine", "reference") == local_changes_json(lakes.records, a, last, 2)
    saved: DataFrame = lakes.lake.spark.read.format("delta").load(str(tmp_path / "changes"))
    assert saved.count() == sum(len(b["deletes"]) + len(b["leaders"]) + len(b["followers"]) for b in doc["brokers"])
    text = runner.invoke(app, ["apply", "--lake", str(lakes.location), "--from-offset", str(a), "--broker", "2",
                               "--num-replica-fetchers", "3"])
    assert text.exit_code == 0 and "partition(s) to local" in text.stdout
    requests = cli_json("leader-and-isr", "--lake", lakes.location, "--from-offset", a, "--broker", 2)
    (tmp_path / "requests.json").write_text(json.dumps(requests))
    replayed = cli_json("zk-replay", tmp_path / "requests.json")
    assert replayed["brokerId"] == 2 and all(r["errorCode"] == NONE for r in replayed["responses"])
    bad = runner.invoke(app, ["changes", "--lake", lakes.location, "--to-offset", "3"])
    assert bad.exit_code == 1 and bad.stderr.startswith("error: give --from-offset or --from-time")


def test_cli_human_output_of_changes_apply_and_leader_and_isr(lakes: Lakes) -> None:
    """Without --json: per-broker summaries, the first rows of each list and how many more; --all
    shows every row."""
    def text(*args: Any) -> str:
        res = runner.invoke(app, ["--debug", *(str(a) for a in args)])
        assert res.exit_code == 0, res.output
        return res.stdout

    last = lakes.records[-1].offset
    a = last // 3
    doc = local_changes_json(lakes.records, a, last)
    members = ("deletes", "leaders", "electedLeaders", "followers", "directoryIds")
    shown = text("changes", "--lake", lakes.location, "--from-offset", a)
    assert table_rows(shown) == [[str(b["broker"]), *(str(len(b[m])) for m in members)] for b in doc["brokers"]]
    one = next(b for b in doc["brokers"] if b["broker"] == 2)
    lists = {m: len(one[m]) for m in ("leaders", "followers", "deletes")}
    assert max(lists.values()) > 2
    shown = text("changes", "--lake", lakes.location, "--from-offset", a, "--broker", 2, "--limit", 2)
    every = text("changes", "--lake", lakes.location, "--from-offset", a, "--broker", 2, "--all")
    for member, n in lists.items():
        assert f"broker 2: {member} ({n})" in shown and f"broker 2: {member} ({n})" in every
    assert shown.count("… and ") == sum(n > 2 for n in lists.values())
    assert all(more_line(n - 2) in shown for n in lists.values() if n > 2)
    partitions = [r[0] for r in table_rows(every) if re.fullmatch(r".+-\d+", r[0])]
    assert len(partitions) == sum(lists.values()) and "… and" not in every

    actions = cli_json("apply", "--lake", lakes.location, "--from-offset", a, "--broker", 2)["actions"]
    phases = Counter(r["phase"] for r in actions)
    assert max(phases.values()) > 3
    shown = text("apply", "--lake", lakes.location, "--from-offset", a, "--broker", 2, "--limit", 3)
    steps = [int(m) for m in re.findall(r"^ +(\d+)  [a-z]", shown, re.MULTILINE)]
    assert len(steps) == sum(min(3, n) for n in phases.values()) and f"{len(actions)} actions" in shown
    assert shown.count("… and ") == sum(n > 3 for n in phases.values())
    every = text("apply", "--lake", lakes.location, "--from-offset", a, "--broker", 2, "--all")
    assert [int(m) for m in re.findall(r"^ +(\d+)  [a-z]", every, re.MULTILINE)] == [r["step"] for r in actions]

    requests = cli_json("leader-and-isr", "--lake", lakes.location, "--from-offset", a)
    shown = text("leader-and-isr", "--lake", lakes.location, "--from-offset", a)
    assert [r[0] for r in table_rows(shown)] == [str(d["brokerId"]) for d in requests["brokers"]]
    document = next(d for d in requests["brokers"] if d["brokerId"] == 2)
    shown = text("leader-and-isr", "--lake", lakes.location, "--from-offset", a, "--broker", 2, "--limit", 2)
    for request in document["requests"]:
        n = (sum(len(t["partitionStates"]) for t in request["topicStates"]) if request["type"] == "StopReplica"
             else len(request["partitionStates"]))
        assert f"broker 2: {request['type']} of {n} partition" in shown
    assert len([r for r in table_rows(shown) if re.fullmatch(r".+-\d+", r[0])]) \
        <= 2 * len(document["requests"])


def test_changes_between_times_matches_offsets(lakes: Lakes) -> None:
    by_offset = {r.offset: r for r in lakes.records}
    a, b = 50, 120
    from_time, to_time = by_offset[a].timestamp, by_offset[b].timestamp
    doc = cli_json("changes", "--lake", lakes.location, "--from-time", from_time, "--to-time", to_time)
    a_resolved = max(r.batch_last_offset for r in lakes.records if r.timestamp <= from_time)
    b_resolved = max(r.batch_last_offset for r in lakes.records if r.timestamp <= to_time)
    assert_same(doc, local_changes_json(lakes.records, a_resolved, b_resolved), "times")

