"""Human output (``cli/render.py``) on real-format documents without Spark: the sample log's records,
images of it from the reference engine, their diff and the brokers' local changes. By default a list
shows its first rows and how many more there are; ``limit=None`` (``--all``) shows every row; times
are ISO-8601 UTC. Also: importing the CLI and printing its help imports no Spark, pandas, numpy or pyarrow."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from rich.console import Console, RenderableType
from typer.testing import CliRunner, Result

from cli import app as cli_app
from cli import render
from cli.app import DEFAULT_LIMIT
from cli.main import app
from image.replay import replay_to
from image.temporal.times import parse_time
from image.uuids import UNASSIGNED
from image.views.summary import ImageSummary, image_summary
from metadata.log.readers import read_log
from metadata.log.records import LogRecord
from metadata.log.summary import DumpRecord
from replica.local_changes import local_changes_json
from tests.logbuilder import (
    LogBuilder,
    broker_change,
    feature_level,
    partition,
    producer_ids,
    register_broker,
    topic,
    unfence_broker,
    uuid,
)
from tests.test_diff import python_doc as python_diff

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "data" / "sample" / "__cluster_metadata-0"
CORDON = ROOT / "tests/fixtures/kafka/4.4.0/cordon/__cluster_metadata-0"
EPOCH_MS = re.compile(r"(?<![\d.])1\d{12}(?![\d.])")
"""An epoch-milliseconds time (2001 to 2286) standing alone."""
MIDDLE = 5000


def text(renderable: RenderableType, width: int = 120) -> str:
    console = Console(width=width, file=io.StringIO(), color_system=None)
    console.print(renderable)
    return console.file.getvalue()  # type: ignore[attr-defined]


def run_wide(*args: object) -> Result:
    """The command ``args`` in process, printing for a 250-column terminal on a console of its own (the shared
    console keeps the width ``COLUMNS`` gave it at its first use, in whichever test ran first in this process)."""
    with mock.patch.object(cli_app.out, "_console", None):
        return CliRunner().invoke(app, [str(a) for a in args], env={"COLUMNS": "250"})


def more_line(hidden: int, detail: str = "") -> str:
    return f"… and {hidden:,} more{f' ({detail})' if detail else ''} (use --all or --json)"


def table_rows(output: str) -> list[list[str]]:
    """The body rows of the tables in ``output`` (first line of each row only), as cell texts."""
    rows = []
    for line in output.splitlines():
        if line.startswith("│ ") and line.endswith(" │"):
            rows.append([c.strip() for c in line[1:-1].split("│")])
    return rows


@pytest.fixture(scope="module")
def sample() -> list[LogRecord]:
    return read_log(SAMPLE)


@pytest.fixture(scope="module")
def images(sample: list[LogRecord]) -> tuple[dict[str, Any], dict[str, Any]]:
    return replay_to(sample, MIDDLE).to_json(), replay_to(sample).to_json()


def test_iso_time_round_trips_through_the_time_parser() -> None:
    assert render.iso_time(1735690382434) == "2025-01-01T00:13:02.434Z"
    assert render.iso_time(0) == "1970-01-01T00:00:00.000Z"
    assert render.iso_time(-1) == render.iso_time(None) == "none"
    for ms in (1, 999, 1735689600000, 1769792700123, 253402300799999):
        assert parse_time(render.iso_time(ms)) == ms


def test_compact_values() -> None:
    endpoint = {"name": "SSL", "host": "b1", "port": 9094, "securityProtocol": 1}
    feature = {"name": "metadata.version", "minSupportedVersion": 1, "maxSupportedVersion": 21}
    assert render.compact(list(range(13)), 10) == "[0,1,2,3,4,5,6,7,8,9,…+3]"
    assert render.compact(list(range(13)), None) == "[" + ",".join(map(str, range(13))) + "]"
    assert render.compact([endpoint, endpoint], 10) == "[SSL://b1:9094, SSL://b1:9094]"
    assert render.compact(feature, 10) == "metadata.version:1-21"
    assert render.compact({"user": "alice", "client-id": None}, 10, "entity") == "user=alice,client-id=<default>"
    assert render.compact({"a": 1, "issueTimestamp": 0}, 10) == "{a=1,issueTimestamp=1970-01-01T00:00:00.000Z}"
    assert render.compact("", 10) == '""' and render.compact("a b", 10) == '"a b"' and render.compact(None, 1) == "null"
    assert render.compact(True, 10) == "true" and render.compact(1735690382434, 10) == "1735690382434"


def test_image_summary_counts_health_from_the_image_json() -> None:
    log = LogBuilder(timestamp=1735690382434)
    log.batch(
        feature_level("metadata.version", 21), producer_ids(5000), *(register_broker(b, 10 + b) for b in (1, 2, 3, 4))
    )
    log.batch(
        unfence_broker(2, 12),
        unfence_broker(3, 13),
        unfence_broker(4, 14),
        broker_change(3, 13, in_controlled_shutdown=1),
    )
    t = uuid(7)
    log.batch(
        topic("orders", t),
        partition(t, 0, [1, 2, 3], [2], leader=2),
        partition(t, 1, [2, 3], [], leader=-1),
        partition(t, 2, [3, 4]),
    )
    image = replay_to(log.records).to_json()
    summary = image_summary(image)
    assert summary == ImageSummary(
        offset=log.records[-1].offset,
        epoch=1,
        timestamp=log.records[-1].timestamp,
        metadata_version=21,
        next_producer_id=5000,
        fenced_brokers=[1],
        brokers_in_controlled_shutdown=[3],
        leaderless_partitions=1,
        under_replicated_partitions=2,
        counts={
            "topics": 1,
            "partitions": 3,
            "brokers": 4,
            "controllers": 0,
            "configs": 0,
            "features": 1,
            "clientQuotas": 0,
            "acls": 0,
            "scram": 0,
            "delegationTokens": 0,
        },
    )
    assert summary.metadata_version_name == "3.9-IV0"
    shown = text(render.image_summary(summary, DEFAULT_LIMIT))
    for label, value in (
        ("time", render.iso_time(log.records[-1].timestamp)),
        ("metadata.version", "21 (3.9-IV0)"),
        ("next producer id", "5000"),
        ("fenced brokers", "[1]"),  # a list of broker ids, never read as a count
        ("brokers in controlled shutdown", "[3]"),
        ("leaderless partitions", "1"),
        ("under-replicated partitions", "2"),
    ):
        assert [label, value] in table_rows(shown), (label, shown)
    assert not EPOCH_MS.search(shown)
    empty = text(render.image_summary(image_summary(replay_to([]).to_json()), 10))
    assert ["time", "none"] in table_rows(empty) and ["next producer id", "none"] in table_rows(empty)


def dump_records(records: list[LogRecord], first: int, last: int) -> list[DumpRecord]:
    return [
        DumpRecord(
            offset=r.offset,
            timestamp=r.timestamp,
            type=r.type or r.control_type or "UNKNOWN",
            version=r.version,
            data=r.data,
        )
        for r in records
        if first <= r.offset <= last
    ]


def record_lines(output: str) -> list[str]:
    return re.findall(r"^ *\d+  \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z  [A-Z_]+ v\d+", output, re.MULTILINE)


@pytest.mark.parametrize("width", [80, 120])
def test_dump_shows_one_line_per_record_then_how_many_more(sample: list[LogRecord], width: int) -> None:
    records = dump_records(sample, 3, 40)
    shown = text(render.dump(iter(records), 10), width)
    assert shown.startswith(f"{len(records)} records, the first 10 shown\n")
    assert len(record_lines(shown)) == 10 and shown.rstrip().endswith(more_line(len(records) - 10))
    assert not EPOCH_MS.search(shown)
    assert max(len(line) for line in shown.splitlines()) <= width
    every = text(render.dump(iter(records), None), width)
    assert every.startswith(f"{len(records)} records\n") and "more" not in every
    lines = record_lines(every)
    assert [int(line.split()[0]) for line in lines] == [r.offset for r in records]
    flat = "".join(every.split())  # words too long for a line are folded
    for r in records:
        assert render.iso_time(r.timestamp) in every
        for key, value in r.data.items():
            assert "".join(f"{key}={render.compact(value, None, key)}".split()) in flat, (key, value)


def test_show_lists_the_first_rows_and_leaves_out_empty_columns(images: tuple[dict[str, Any], dict[str, Any]]) -> None:
    partitions = images[0]["partitions"]
    shown = text(render.show("partitions", partitions, 10))
    assert f"partitions ({len(partitions)})" in shown and more_line(len(partitions) - 10) in shown
    rows = table_rows(shown)
    assert [(r[0], int(r[1])) for r in rows] == [(p["topic"], p["partitionId"]) for p in partitions[:10]]
    assert "empty in every row shown: adding, removing, elr, last known elr" in shown
    every = table_rows(text(render.show("partitions", partitions, None)))
    assert [(r[0], int(r[1]), r[2]) for r in every] == [
        (p["topic"], p["partitionId"], str(p["leader"])) for p in partitions
    ]


def test_diff_lists_the_first_changes_of_each_section(images: tuple[dict[str, Any], dict[str, Any]]) -> None:
    doc = python_diff(*images)
    shown = text(render.diff(doc, 10))
    start, end = doc["from"], doc["to"]
    assert (
        f"diff offset {start['offset']} → {end['offset']} ({render.iso_time(start['timestamp'])} → "
        f"{render.iso_time(end['timestamp'])})"
    ) in shown
    for section, counts in doc["summary"].items():
        assert [section, *(str(counts[c]) for c in ("added", "removed", "changed"))] in table_rows(shown)
    changes = [r for r in table_rows(shown) if r[0] in ("added", "removed", "changed")]
    sections = [(s, c) for s, c in doc["summary"].items() if sum(c.values())]
    assert len(changes) == sum(min(10, sum(c.values())) for _, c in sections)
    for section, counts in sections:
        total = sum(counts.values())
        title = f"{section}: " + ", ".join(f"{n} {c}" for c, n in counts.items() if n)
        assert title in shown
        if total > 10:
            entries = [c for c in ("added", "removed", "changed") for _ in range(counts[c])][10:]
            assert (
                more_line(
                    total - 10,
                    ", ".join(f"{entries.count(c)} {c}" for c in ("added", "removed", "changed") if c in entries),
                )
                in shown
            )
    every = text(render.diff(doc, None))
    assert "more" not in every
    keys = [r[1] for r in table_rows(every) if r[0] in ("added", "removed", "changed") and r[1]]
    partitions = doc["partitions"]
    assert [k for k in keys if k in {f"{e['topic']}-{e['partitionId']}" for c in partitions.values() for e in c}] == [
        f"{e['topic']}-{e['partitionId']}" for c in ("added", "removed", "changed") for e in partitions[c]
    ]


def test_reserved_values_show_as_kafka_names_them() -> None:
    """Kafka 4.4 creates topic c1 with its replicas' directories UNASSIGNED (the brokers assign them next); at the
    log's end every partition is leaderless. People read Kafka's names, the documents keep the values."""
    records = read_log(CORDON)
    before, after = replay_to(records, 60).to_json(), replay_to(records).to_json()
    doc = python_diff(before, after)
    c1_0 = next(e for e in doc["partitions"]["changed"] if (e["topic"], e["partitionId"]) == ("c1", 0))
    assert c1_0["before"]["directories"] == [UNASSIGNED, UNASSIGNED] and c1_0["after"]["leader"] == -1
    shown = text(render.diff(doc, None), 400)
    assert "leader: 2 → none" in shown
    assert "directories: [UNASSIGNED,UNASSIGNED] → [zO3-EXGiAPnMw7pKxtst4Q,6tCFsom3g2EkY6SrEIRN4w]" in shown
    assert UNASSIGNED not in shown
    partitions = table_rows(text(render.show("partitions", after["partitions"], None), 250))
    assert len(partitions) == len(after["partitions"])
    assert {(r[2], r[-1]) for r in partitions} == {("none", "RECOVERED")}
    dumped = text(render.dump(dump_records(records, 54, 54), None), 250)
    assert "directories=[UNASSIGNED,UNASSIGNED]" in dumped and UNASSIGNED not in dumped
    # broker 2 leads c1-0 from its creation on, before it has placed the replica in a directory
    for command, line in (
        ("changes", r"│ c1-0 +│ +2 │ +0 │ yes +│ +0 │ \[2,3\] +│ \[2,3\] +│ UNASSIGNED +│"),
        ("apply", r"check-directory +c1-0 +assigned directory UNASSIGNED: if the log is elsewhere"),
    ):
        args = [command, "--log", str(CORDON), "--broker", "2", "--after-offset", "40", "--to-offset", "62"]
        people = run_wide(*args)
        assert people.exit_code == 0 and re.search(line, people.stdout), people.output
        assert UNASSIGNED not in people.stdout and UNASSIGNED in CliRunner().invoke(app, [*args, "--json"]).stdout


def test_lists_print_as_text_never_as_markup() -> None:
    """Rich reads ``[p1lv…,zO3-…]`` as a markup tag: the log dirs of Kafka's brokers print as they are."""
    brokers = replay_to(read_log(CORDON)).to_json()["brokers"]
    rows = table_rows(text(render.show("brokers", brokers, None), 250))
    assert [r[6] for r in rows] == [render.compact(b["logDirs"], None) for b in brokers]
    assert all(r[6].startswith("[") for r in rows)


def test_changes_summarise_every_broker_and_list_one(sample: list[LogRecord]) -> None:
    last = sample[-1].offset
    doc = local_changes_json(sample, MIDDLE, last)
    shown = text(render.changes(doc, 10))
    members = ("deletes", "leaders", "electedLeaders", "followers", "directoryIds")
    assert table_rows(shown) == [[str(b["broker"]), *(str(len(b[m])) for m in members)] for b in doc["brokers"]]
    assert "--broker N" in shown
    every = text(render.changes(doc, None))
    for b in doc["brokers"]:
        for member in ("leaders", "followers", "deletes"):
            assert f"broker {b['broker']}: {member} ({len(b[member])})" in every
    partitions = [r[0] for r in table_rows(every) if re.fullmatch(r".+-\d+", r[0])]
    assert len(partitions) == sum(len(b[m]) for b in doc["brokers"] for m in ("leaders", "followers", "deletes"))
    one = local_changes_json(sample, MIDDLE, last, 1)
    shown = text(render.changes(one, 10))
    assert ["followers", str(len(one["followers"]))] in table_rows(shown)
    assert more_line(len(one["followers"]) - 10) in shown and more_line(len(one["deletes"]) - 10) in shown
    leaders = [e for e in one["leaders"]]
    assert [r[0] for r in table_rows(shown) if r[0] in {f"{e['topic']}-{e['partitionId']}" for e in leaders}] == [
        f"{e['topic']}-{e['partitionId']}" for e in leaders[:10]
    ]


def test_plan_lines_cut_each_phase() -> None:
    rows = [
        {"step": i + 1, "phase": phase, "action": action, "topic": "t", "partition": i, "reason": "why"}
        for i, (phase, action) in enumerate(
            [("delete", "remove-fetcher")] * 3 + [("delete", "delete-log")] * 3 + [("leader", "make-leader")] * 2
        )
    ]
    assert render.plan_lines(rows, 2) == [
        "Deleting 3 partition(s).",
        "     1  remove-fetcher     t-0                      why",
        "     2  remove-fetcher     t-1                      why",
        "  " + more_line(4, "1 remove-fetcher, 3 delete-log"),
        "Transitioning 2 partition(s) to local leaders.",
        "     7  make-leader        t-6                      why",
        "     8  make-leader        t-7                      why",
    ]
    assert len(render.plan_lines(rows, None)) == len(rows) + 2


HEAVY = ("pyspark", "pandas", "numpy", "pyarrow", "py4j")


def fresh_python(*args: str, check: bool = False) -> subprocess.CompletedProcess[str]:
    """``python *args`` in a fresh process on this tree (start-up is what these tests are about)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, *args]
    return subprocess.run(command, capture_output=True, text=True, cwd=ROOT, env=env, check=check, timeout=300)


def test_cli_start_up_imports_no_spark_pandas_numpy_or_pyarrow() -> None:
    """``import cli.main``, ``kraft-replay --help`` and every command's ``--help``, in a fresh process."""
    code = f"""
import json, sys
import cli.main
after_import = sorted(m for m in {HEAVY!r} if m in sys.modules)
import typer.main
names = list(typer.main.get_command(cli.main.app).commands)
for args in [["--help"]] + [[name, "--help"] for name in names]:
    try:
        cli.main.app(args)
    except SystemExit:
        pass
print(json.dumps({{"names": names, "import": after_import,
                   "help": sorted(m for m in {HEAVY!r} if m in sys.modules)}}))
"""
    done = fresh_python("-c", code, check=True)
    result = json.loads(done.stdout.splitlines()[-1])
    assert {"replay", "show", "diff", "changes", "apply", "log-info", "dump"} <= set(result["names"])
    assert result["import"] == [] and result["help"] == []


def test_a_command_line_builds_only_its_command() -> None:
    """``main`` builds the command its line names (typer would build all of them at every start): that command
    is the full app's, option for option (the same help), and anything else gets the whole app."""
    import typer.main

    import cli.main

    assert cli.main.command_named(["--master", "local[2]", "--reader", "arrow", "diff", "--json"]) == "diff"
    assert cli.main.command_named(["--debug", "--master=x", "history", "broker"]) == "history"
    assert cli.main.command_named(["--help"]) is None and cli.main.command_named(["--reader", "replay"]) is None
    full = typer.main.get_command(app)
    assert len(full.commands) > 10  # type: ignore[attr-defined]
    for name, command in full.commands.items():  # type: ignore[attr-defined]
        narrowed = typer.main.get_command(cli.main.for_command(name))
        assert list(narrowed.commands) == [name]  # type: ignore[attr-defined]
        ctx = full.context_class(full)
        assert narrowed.commands[name].get_help(ctx) == command.get_help(ctx)  # type: ignore[attr-defined]
        assert [p.name for p in narrowed.params] == [p.name for p in full.params]
    assert cli.main.for_command("histry") is app and cli.main.for_command(None) is app
    answer = CliRunner().invoke(cli.main.for_command("replay"), ["--reader", "arrow", "repaly"])
    assert answer.exit_code == 2 and "No such command" in answer.output


def test_a_read_process_ends_without_teardown_with_the_command_status() -> None:
    """``main`` ends a process that started no Spark with ``os._exit`` once its output is flushed: the whole
    answer arrives, and the status is the command's (0, 1 for an error, 2 for a usage error)."""
    log = ROOT / "tests" / "fixtures" / "kafka" / "3.9.1" / "rolling-restart"

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return fresh_python("-m", "cli.main", *args)

    done = run("dump", "--log", str(log), "--json")
    expected = CliRunner().invoke(app, ["dump", "--log", str(log), "--json"])
    assert done.returncode == 0 and expected.exit_code == 0
    assert len(done.stdout) > 30_000 and done.stdout == expected.stdout
    missing = run("replay", "--log", str(ROOT / "no-such-log"), "--json")
    assert missing.returncode == 1 and "no-such-log" in missing.stderr and not missing.stdout
    assert run("replay", "--no-such-option").returncode == 2


def test_replay_of_a_log_in_process_imports_no_spark_pandas_pyarrow_pydantic_or_rich() -> None:
    """``replay --log --json`` (decode and the reference engine's replay) needs numpy only: a fresh process that
    replays a real Kafka log with a snapshot loads none of pyspark, py4j, pandas, pyarrow or pydantic (the
    reader's types are dataclasses, the summary model is imported only to print one), nor rich (the consoles
    are made when first used) or the ``crc32c`` package's ``__init__`` (its C function is loaded directly)."""
    log = ROOT / "tests" / "fixtures" / "kafka" / "4.1.1" / "snapshot-fetch" / "__cluster_metadata-0"
    code = f"""
import json, sys
import cli.main
try:
    cli.main.app(["replay", "--log", {str(log)!r}, "--json"])
except SystemExit as exit:
    assert not exit.code, exit.code
print(json.dumps(sorted(m for m in {(*HEAVY, "pydantic", "rich", "crc32c")!r} if m in sys.modules)))
"""
    done = fresh_python("-c", code, check=True)
    assert '"topics"' in done.stdout
    assert json.loads(done.stdout.splitlines()[-1]) == ["numpy"]


def test_reads_in_process_leave_pandas_to_spark() -> None:
    """pyarrow imports pandas the first time it checks for a pandas object (0.3–0.4 s of a read); the CLI's
    reads in process refuse it (``metadata.lake.state._PandasForSparkOnly``) and give the same answers. Once PySpark is
    loaded (``replay --save`` starts Spark after a read), pandas imports again and pyarrow's conversions to
    pandas work."""
    log = ROOT / "tests" / "fixtures" / "kafka" / "3.9.1" / "basic"
    reads = [
        ["diff", "--after-offset", "10", "--to-offset", "200"],
        ["log-info"],
        ["history", "broker", "--broker", "1"],
    ]
    code = f"""
import contextlib, io, json, sys
import cli.main
answers = []
for args in {reads!r}:
    with contextlib.redirect_stdout(io.StringIO()) as out:
        try:
            cli.main.app([*args, "--log", {str(log)!r}, "--json"])
        except SystemExit as exit:
            assert not exit.code, (args, exit.code)
    answers.append(json.loads(out.getvalue()))
loaded = sorted(m for m in ("pyarrow", "pandas") if m in sys.modules)
import pyspark, pyarrow as pa
frame = pa.table({{"a": [1, 2]}}).to_pandas()
print(json.dumps({{"answers": answers, "loaded": loaded, "to_pandas": frame["a"].tolist()}}))
"""
    done = fresh_python("-c", code)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.splitlines()[-1])
    assert result["loaded"] == ["pyarrow"] and result["to_pandas"] == [1, 2]
    expected = []
    for args in reads:  # the same reads here, where pandas is importable from the start
        answer = CliRunner().invoke(app, [*args, "--log", str(log), "--json"])
        assert answer.exit_code == 0, answer.output
        expected.append(json.loads(answer.stdout))
    assert result["answers"] == expected
