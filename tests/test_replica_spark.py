"""replica/ on Spark: all-broker local changes equal the reference engine for every broker (rule
scenarios, generated logs — one ingested into a lake once for this module), the apply plan and the
ZooKeeper-era requests of hand-written scenarios equal the in-process ones, fetcher ids as a Spark
expression, the CLI."""

from __future__ import annotations

import itertools
import json
import random
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from typer.testing import CliRunner

import cli.replica_commands  # noqa: F401 — attaches the replica commands to the app
from cli.app import app
from generator import generate
from image.replay import delta_between
from image.temporal.ingest import ingest
from image.temporal.spark.frames import ImageFrames
from image.temporal.versions import VersionLog, record_versions
from metadata.lake.protocol import Lake
from metadata.lake.spark_store import spark_schema
from metadata.lake.tables import RECORDS_SCHEMA, typed_rows
from metadata.lake.version_tables import PROVENANCE
from metadata.log.columns import payload_json
from metadata.log.readers import read_log
from metadata.log.records import LogRecord
from replica.local_changes import local_changes_json
from replica.plan import apply_plan_rows
from replica.spark_changes import DeltaFrames, TableSource
from replica.spark_plan import apply_plan, fetcher_id_expr, plan_rows
from replica.spark_zk import leader_and_isr_json
from replica.zk import NONE, leader_and_isr_doc
from tests.logbuilder import (
    LogBuilder,
    abort,
    begin,
    end,
    partition,
    partition_change,
    register_broker,
    remove_topic,
    topic,
)
from tests.logbuilder import uuid as make_uuid
from tests.test_render import more_line, table_rows
from tests.test_replica_local_changes import SCENARIOS
from tests.test_replica_plan import SCENARIOS as PLAN_SCENARIOS

pytestmark = pytest.mark.spark


def memory_tables(spark: SparkSession, records: list[LogRecord]) -> TableSource:
    """The lake's typed tables projected from in-memory records, and the transactions the temporal image
    records (what ingest stores, no Delta I/O)."""
    rows = [
        (
            r.offset,
            r.batch_base_offset,
            r.batch_last_offset,
            r.epoch,
            r.timestamp,
            r.producer_id,
            r.producer_epoch,
            r.is_transactional,
            r.is_control,
            r.control_type,
            r.type,
            None,
            r.version,
            payload_json(r.data),
            None,
            r.source_file,
        )
        for r in records
    ]
    table = pa.Table.from_pylist([dict(zip(RECORDS_SCHEMA.names, row)) for row in rows], schema=RECORDS_SCHEMA)
    recorded = record_versions(records)
    assert isinstance(recorded, VersionLog)
    spans = spark.createDataFrame(
        [(s.begin, s.end, s.begin - 1, s.outcome) for s in recorded.spans],
        "from_offset long, to_offset long, offset long, outcome string",
    )

    def typed(name: str) -> DataFrame:
        rows = typed_rows(name, table)
        return spark.createDataFrame(rows.to_pylist(), spark_schema(rows.schema))

    return lambda name: spans if name == PROVENANCE else typed(name)


def spark_rows(actions: DataFrame) -> list[dict[str, Any]]:
    """An apply plan's rows by broker and step (what ``plan_rows`` gives broker by broker)."""
    return [r.asDict(recursive=True) for r in actions.orderBy("broker", "step").collect()]


def memory_delta(
    spark: SparkSession, records: list[LogRecord], a: int, b: int, *, lenient: bool = False
) -> DeltaFrames:
    start, _, end = delta_between(records, a, b, lenient=lenient)
    return DeltaFrames(
        ImageFrames.from_json(spark, start.to_json()),
        ImageFrames.from_json(spark, end.to_json()),
        memory_tables(spark, records),
        a,
        b,
    )


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
    for (opened, _), (close, _) in ([committed[len(committed) // 2]] + aborted[:1]) * transactions:
        out += [(opened + 1, close + 2), (opened - 1, close - 1)]
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
        ingest([str(root / "gen" / "__cluster_metadata-0")], self.location, engine="local", progress=False)
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
        delta = DeltaFrames(
            ImageFrames.from_json(spark, start.to_json()),
            ImageFrames.from_json(spark, end.to_json()),
            lambda name: lakes.lake.table(name, state),
            a,
            b,
        )
        assert_same(delta.changes_json(), local_changes_json(lakes.records, a, b), f"window ({a}, {b}]")


def test_sample_log_windows_spark_equals_reference(spark) -> None:
    records = read_log(Path(__file__).parents[1] / "data" / "sample" / "__cluster_metadata-0")
    table = memory_tables(spark, records)
    for a, b in windows(records, 9, 1, transactions=False):
        start, _, end = delta_between(records, a, b)
        delta = DeltaFrames(
            ImageFrames.from_json(spark, start.to_json()), ImageFrames.from_json(spark, end.to_json()), table, a, b
        )
        assert_same(delta.changes_json(), local_changes_json(records, a, b), f"sample window ({a}, {b}]")


def test_fetcher_id_expression_worked_values(spark) -> None:
    rows = [("foo", p, n) for p in range(4) for n in (1, 2, 3, 4)] + [("__consumer_offsets", p, 4) for p in range(3)]
    frame = spark.createDataFrame(rows + [("foo", 2144334854, 7), ("foo", 2144334855, 7)], "topic string, p int, n int")
    got = {
        (r[0], r[1], r[2]): r[3]
        for r in frame.select(
            "topic",
            "p",
            "n",
            *[
                F.when(F.col("n") == n, fetcher_id_expr(F.col("topic"), F.col("p"), n)).alias(f"f{n}")
                for n in (1, 2, 3, 4, 7)
            ],
        )
        .select("topic", "p", "n", F.coalesce(*[F.col(f"f{n}") for n in (1, 2, 3, 4, 7)]))
        .collect()
    }
    expected = {0: (0, 0, 0, 2), 1: (0, 1, 1, 3), 2: (0, 0, 2, 0), 3: (0, 1, 0, 1)}
    for p, ids in expected.items():
        assert tuple(got[("foo", p, n)] for n in (1, 2, 3, 4)) == ids
    assert [got[("__consumer_offsets", p, 4)] for p in range(3)] == [3, 2, 1]
    # 31 * 101574 + 2144334854 = 2^31 (Integer.MIN_VALUE after overflow): abs gives 0
    assert (got[("foo", 2144334854, 7)], got[("foo", 2144334855, 7)]) == (0, (2**31 - 1) % 7)


PLAN_OPTIONS = [
    {},
    {"num_replica_fetchers": 2, "in_controlled_shutdown": [1, 3], "share_coordinator": True},
    {"brokers": [1, 3, 7], "inter_broker_listener": "INTERNAL", "num_replica_fetchers": 5},
]
PLAN_OPTIONS_OF = {"apply": 2, "coordinators": 1, "shutdown": 1, "mismatch": 0}
"""The options each scenario's plan is computed with: every one of :data:`PLAN_OPTIONS` is run."""


@pytest.mark.parametrize("name", list(PLAN_SCENARIOS))
def test_hand_made_apply_plans_and_requests_on_spark_equal_in_process(spark, name: str) -> None:
    """The scenarios of tests/test_replica_plan.py (concrete expectations there): the Spark plan and
    requests of every broker are the in-process ones, byte for byte as JSON; one broker's plan (``apply
    --broker``: a filter of the plan of every broker) is that broker's rows of it. Each scenario with one of
    :data:`PLAN_OPTIONS` (:data:`PLAN_OPTIONS_OF`) and one broker's requests besides every broker's (each Spark
    pass costs seconds on 2 cores)."""
    make, lenient = PLAN_SCENARIOS[name]
    turn = list(PLAN_SCENARIOS).index(name)
    log, a, b = make()
    delta = memory_delta(spark, log.records, a, b, lenient=lenient)
    images = delta_between(log.records, a, b, lenient=lenient)
    delta.changes.persist()  # one computation for the plan and the requests below
    options = PLAN_OPTIONS[PLAN_OPTIONS_OF[name]]
    frame = apply_plan(delta, **options).persist()  # and one for a broker's rows
    expected = apply_plan_rows(*images, **options)
    assert json.dumps(spark_rows(frame)) == json.dumps(expected), options
    for broker, _ in Counter(r["broker"] for r in expected).most_common(1):  # the broker of the most actions
        assert plan_rows(frame, broker) == [r for r in expected if r["broker"] == broker], options
    frame.unpersist()
    for broker in (None, (1, 4)[turn % 2]):
        assert json.dumps(leader_and_isr_json(delta, controller_epoch=3, broker=broker)) == json.dumps(
            leader_and_isr_doc(*images, controller_epoch=3, broker=broker)
        ), broker
    delta.changes.unpersist()


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


runner = CliRunner()


def cli_json(*args: Any) -> Any:
    res = runner.invoke(app, [str(a) for a in args] + ["--json"])
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def test_cli_changes_apply_and_zk_replay(lakes: Lakes, tmp_path: Path) -> None:
    last = lakes.records[-1].offset
    a = last // 3
    doc = cli_json(
        "changes", "--lake", lakes.location, "--after-offset", a, "--to-offset", last, "--save", tmp_path / "changes"
    )
    assert_same(doc, local_changes_json(lakes.records, a, last), "cli changes")
    assert cli_json(
        "changes", "--lake", lakes.location, "--after-offset", a, "--broker", 2, "--engine", "reference"
    ) == local_changes_json(lakes.records, a, last, 2)
    saved: DataFrame = lakes.lake.spark.read.format("delta").load(str(tmp_path / "changes"))
    assert saved.count() == sum(len(b["deletes"]) + len(b["leaders"]) + len(b["followers"]) for b in doc["brokers"])
    text = runner.invoke(
        app,
        [
            "apply",
            "--lake",
            str(lakes.location),
            "--after-offset",
            str(a),
            "--broker",
            "2",
            "--num-replica-fetchers",
            "3",
        ],
    )
    assert text.exit_code == 0 and "partition(s) to local" in text.stdout
    requests = cli_json("leader-and-isr", "--lake", lakes.location, "--after-offset", a, "--broker", 2)
    (tmp_path / "requests.json").write_text(json.dumps(requests))
    replayed = cli_json("zk-replay", tmp_path / "requests.json")
    assert replayed["brokerId"] == 2 and all(r["errorCode"] == NONE for r in replayed["responses"])
    bad = runner.invoke(app, ["changes", "--lake", lakes.location, "--to-offset", "3"])
    assert bad.exit_code == 1 and bad.stderr.startswith("error: give --after-offset or --after-time")


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
    shown = text("changes", "--lake", lakes.location, "--after-offset", a)
    assert table_rows(shown) == [[str(b["broker"]), *(str(len(b[m])) for m in members)] for b in doc["brokers"]]
    one = next(b for b in doc["brokers"] if b["broker"] == 2)
    lists = {m: len(one[m]) for m in ("leaders", "followers", "deletes")}
    assert max(lists.values()) > 2
    shown = text("changes", "--lake", lakes.location, "--after-offset", a, "--broker", 2, "--limit", 2)
    every = text("changes", "--lake", lakes.location, "--after-offset", a, "--broker", 2, "--all")
    for member, n in lists.items():
        assert f"broker 2: {member} ({n})" in shown and f"broker 2: {member} ({n})" in every
    assert shown.count("… and ") == sum(n > 2 for n in lists.values())
    assert all(more_line(n - 2) in shown for n in lists.values() if n > 2)
    partitions = [r[0] for r in table_rows(every) if re.fullmatch(r".+-\d+", r[0])]
    assert len(partitions) == sum(lists.values()) and "… and" not in every

    actions = cli_json("apply", "--lake", lakes.location, "--after-offset", a, "--broker", 2)["actions"]
    phases = Counter(r["phase"] for r in actions)
    assert max(phases.values()) > 3
    shown = text("apply", "--lake", lakes.location, "--after-offset", a, "--broker", 2, "--limit", 3)
    steps = [int(m) for m in re.findall(r"^ +(\d+)  [a-z]", shown, re.MULTILINE)]
    assert len(steps) == sum(min(3, n) for n in phases.values()) and f"{len(actions)} actions" in shown
    assert shown.count("… and ") == sum(n > 3 for n in phases.values())
    every = text("apply", "--lake", lakes.location, "--after-offset", a, "--broker", 2, "--all")
    assert [int(m) for m in re.findall(r"^ +(\d+)  [a-z]", every, re.MULTILINE)] == [r["step"] for r in actions]

    requests = cli_json("leader-and-isr", "--lake", lakes.location, "--after-offset", a)
    shown = text("leader-and-isr", "--lake", lakes.location, "--after-offset", a)
    assert [r[0] for r in table_rows(shown)] == [str(d["brokerId"]) for d in requests["brokers"]]
    document = next(d for d in requests["brokers"] if d["brokerId"] == 2)
    shown = text("leader-and-isr", "--lake", lakes.location, "--after-offset", a, "--broker", 2, "--limit", 2)
    for request in document["requests"]:
        n = (
            sum(len(t["partitionStates"]) for t in request["topicStates"])
            if request["type"] == "StopReplica"
            else len(request["partitionStates"])
        )
        assert f"broker 2: {request['type']} of {n} partition" in shown
    assert len([r for r in table_rows(shown) if re.fullmatch(r".+-\d+", r[0])]) <= 2 * len(document["requests"])


def test_changes_between_times_matches_offsets(lakes: Lakes) -> None:
    by_offset = {r.offset: r for r in lakes.records}
    a, b = 50, 120
    from_time, to_time = by_offset[a].timestamp, by_offset[b].timestamp
    doc = cli_json("changes", "--lake", lakes.location, "--after-time", from_time, "--to-time", to_time)
    a_resolved = max(r.batch_last_offset for r in lakes.records if r.timestamp <= from_time)
    b_resolved = max(r.batch_last_offset for r in lakes.records if r.timestamp <= to_time)
    assert_same(doc, local_changes_json(lakes.records, a_resolved, b_resolved), "times")
