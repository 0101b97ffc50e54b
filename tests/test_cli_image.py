"""CLI image commands (replay, show, diff) on a small generated log ingested once; every read command
gives the same JSON read in process and on Spark."""

from __future__ import annotations

import datetime as dt
import json
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner, Result

import cli.main  # noqa: F401 — registers every command
from cli.app import app
from cli.render import iso_time
from generator import generate
from image.replay import replay_to
from image.temporal.ingest import ingest
from metadata.log.readers import read_log
from metadata.log.records import LogRecord
from tests.kafka_logs import kafka_fixture_name
from tests.test_diff import python_doc as python_diff
from tests.test_render import EPOCH_MS, more_line, table_rows

pytestmark = pytest.mark.spark

runner = CliRunner()


class Log:
    """The generated log: its lake, its records (read without Spark) and a scratch directory."""

    def __init__(self, root: Path, records: list[LogRecord]) -> None:
        self.lake = str(root / "lake")
        self.root = root
        self.records = records
        self.last = records[-1].offset
        self.mid = self.last // 2

    def image(self, offset: int | None = None) -> dict[str, Any]:
        return replay_to(self.records, offset).to_json()


@pytest.fixture(scope="module")
def log(spark, tmp_path_factory) -> Log:
    """A generated log and its lake, ingested in process (the shared session reads it on Spark)."""
    root = tmp_path_factory.mktemp("cli-image")
    generate(6, 4, 3, 2, 80, root / "gen")
    ingest([str(root / "gen" / "__cluster_metadata-0")], str(root / "lake"), engine="local", progress=False)
    records = read_log(root / "gen" / "__cluster_metadata-0")
    return Log(root, records)


def run(*args: Any) -> Result:
    return runner.invoke(app, [str(a) for a in args])


_ON_SPARK: dict[tuple[str, ...], Result] = {}


def on_spark(*args: Any) -> Result:
    """``run("--reader", "spark", *args)``, once per ``args`` in this module (the lakes it reads do not change)."""
    key = tuple(map(str, args))
    if key not in _ON_SPARK:
        _ON_SPARK[key] = run("--reader", "spark", *key)
    return _ON_SPARK[key]


def ok_json(*args: Any) -> Any:
    res = run(*args, "--json")
    assert res.exit_code == 0, res.output
    return json.loads(res.stdout)


def fails(*args: Any) -> str:
    """The one error line of a failing command."""
    res = run(*args)
    assert res.exit_code != 0 and res.stdout == ""
    assert res.stderr.count("\n") == 1 and res.stderr.startswith("error:"), res.stderr
    return res.stderr


@pytest.fixture(scope="module")
def saved(log) -> dict[str, Any]:
    """``replay --json --save`` at the middle offset and at the end."""
    mid, end = log.root / "image-mid", log.root / "image-end"
    return {
        "mid": ok_json("replay", "--lake", log.lake, "--at-offset", log.mid, "--save", mid),
        "end": ok_json("replay", "--lake", log.lake, "--save", end),
        "mid_dir": mid,
        "end_dir": end,
    }


def test_replay_json_equals_reference_engine(log, saved):
    assert saved["mid"] == log.image(log.mid)
    assert saved["end"] == log.image()
    assert saved["end"]["offset"] == log.last


def test_replay_at_time_summary(log):
    moment = log.records[log.last // 3].timestamp
    at = max(r.batch_last_offset for r in log.records if r.timestamp <= moment)
    iso = dt.datetime.fromtimestamp(moment / 1000, dt.UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    res = run("replay", "--lake", log.lake, "--at-time", iso)
    assert res.exit_code == 0, res.output
    image = log.image(at)
    text = re.sub(r"[│┃]", "|", res.stdout)

    def cell(label: str) -> str:
        found = re.search(rf"\| {re.escape(label)}\s+\|\s+(\S+)", text)
        assert found, f"{label} missing in\n{res.stdout}"
        return found.group(1)

    assert f"image at offset {image['offset']}" in res.stdout
    assert cell("epoch") == str(image["epoch"])
    assert cell("metadata.version") == str(image["features"]["metadata.version"])
    assert cell("leaderless partitions") == str(sum(p["leader"] == -1 for p in image["partitions"]))
    assert cell("under-replicated partitions") == str(
        sum(len(p["isr"]) < len(p["replicas"]) for p in image["partitions"])
    )
    fenced = sorted(b["brokerId"] for b in image["brokers"] if b["fenced"])
    assert cell("fenced brokers") == (f"[{','.join(map(str, fenced))}]" if fenced else "none")  # a list, not a count
    for part in ("topics", "partitions", "brokers", "configs"):
        assert cell(part) == str(len(image[part]))


READS = [
    ("log-info",),
    ("dump", "--from-offset", 10, "--to-offset", 60, "--control"),
    ("dump", "--type", "TOPIC_RECORD", "--type", "LEADER_CHANGE"),
    ("replay", "--at-offset", 40),
    ("show", "partitions", "--at-offset", 50),
    ("diff", "--after-offset", 20),
    ("changes", "--after-offset", 20),
    ("changes", "--after-offset", 20, "--broker", 1),
    ("apply", "--broker", 1, "--after-offset", 20),
    ("leader-and-isr", "--after-offset", 20),
    ("history", "partition", "--topic", "shipments-0001", "--partition", 0),
    ("history", "topic", "--topic", "shipments-0001"),
    ("history", "broker", "--broker", 1),
    ("timeline", "--points", 5),
]


@pytest.mark.parametrize("command", READS, ids=lambda c: " ".join(map(str, c)))
def test_every_read_command_gives_the_same_json_in_process_and_on_spark(log, command):
    """Byte for byte: the lake read with pyarrow (no JVM) and on Spark."""
    arrow = run("--reader", "arrow", *command, "--lake", log.lake, "--json")
    spark = on_spark(*command, "--lake", log.lake, "--json")
    assert arrow.exit_code == 0, arrow.output
    assert spark.exit_code == 0, spark.output
    assert arrow.stdout == spark.stdout


def test_human_output_lists_first_rows_with_iso_times(log):
    image = log.image(log.mid)
    res = run("replay", "--lake", log.lake, "--at-offset", log.mid)
    assert res.exit_code == 0, res.output
    assert ["time", iso_time(image["timestamp"])] in table_rows(res.stdout) and not EPOCH_MS.search(res.stdout)
    partitions = image["partitions"]
    assert len(partitions) > 3
    shown = run("show", "partitions", "--lake", log.lake, "--at-offset", log.mid, "--limit", 3).stdout
    assert f"partitions ({len(partitions)})" in shown and more_line(len(partitions) - 3) in shown
    assert [int(r[1]) for r in table_rows(shown) if r[1]] == [p["partitionId"] for p in partitions[:3]]
    every = run("show", "partitions", "--lake", log.lake, "--at-offset", log.mid, "--all").stdout
    assert [int(r[1]) for r in table_rows(every) if r[1]] == [p["partitionId"] for p in partitions]
    assert "more" not in every
    doc = python_diff(image, log.image())
    sections = {s: sum(c.values()) for s, c in doc["summary"].items() if sum(c.values())}
    shown = run("diff", "--lake", log.lake, "--after-offset", log.mid, "--limit", 1).stdout
    assert f"({iso_time(image['timestamp'])} → {iso_time(doc['to']['timestamp'])})" in shown
    assert not EPOCH_MS.search(shown)
    kinds = ("added", "removed", "changed")
    assert len([r for r in table_rows(shown) if r[0] in kinds]) == len(sections)
    assert shown.count("… and ") == sum(n > 1 for n in sections.values())
    every = run("diff", "--lake", log.lake, "--after-offset", log.mid, "--all").stdout
    assert len([r for r in table_rows(every) if r[0] in kinds]) == sum(sections.values()) and "… and" not in every


def test_show_partitions_by_topic_and_broker(log):
    image = log.image()
    partitions = image["partitions"]
    choices = [
        (t, b["brokerId"])
        for t in sorted({p["topic"] for p in partitions})
        for b in image["brokers"]
        if 0
        < sum(p["topic"] == t and b["brokerId"] in p["replicas"] for p in partitions)
        < sum(p["topic"] == t for p in partitions)
    ]
    topic, broker = choices[0]
    rows = ok_json("show", "partitions", "--lake", log.lake, "--topic", topic, "--broker", broker)
    assert rows == [p for p in partitions if p["topic"] == topic and broker in p["replicas"]]


def test_show_brokers_table(log):
    res = run("show", "brokers", "--lake", log.lake, "--at-offset", log.mid)
    assert res.exit_code == 0, res.output
    brokers = log.image(log.mid)["brokers"]
    assert f"brokers ({len(brokers)})" in res.stdout
    ids = [int(m) for m in re.findall(r"^│\s+(\d+) │", res.stdout, re.MULTILINE)]
    assert ids == [b["brokerId"] for b in brokers]


def test_diff_lake_offsets_json(log):
    doc = ok_json("diff", "--lake", log.lake, "--after-offset", log.mid, "--to-offset", log.last)
    assert doc == python_diff(log.image(log.mid), log.image(log.last))
    assert list(doc)[:3] == ["from", "to", "summary"] and doc["summary"]["partitions"]["changed"] > 0


def test_diff_saved_images(log, saved):
    doc = ok_json("diff", "--from-image", saved["mid_dir"], "--to-image", saved["end_dir"])
    assert doc == python_diff(saved["mid"], saved["end"])
    res = run("diff", "--from-image", saved["mid_dir"], "--to-image", saved["end_dir"])
    assert res.exit_code == 0, res.output
    assert f"diff offset {log.mid} → {log.last}" in res.stdout
    for section, counts in doc["summary"].items():
        row = re.search(rf"^│ {section}\s+│\s+(\d+) │\s+(\d+) │\s+(\d+) │$", res.stdout, re.MULTILINE)
        assert row and tuple(map(int, row.groups())) == (counts["added"], counts["removed"], counts["changed"])


def test_bad_input_is_one_clear_line(log, tmp_path):
    assert "no kraft-replay lake" in fails("replay", "--lake", tmp_path / "nowhere")
    assert "beyond the end of the log" in fails("replay", "--lake", log.lake, "--at-offset", log.last + 100)
    assert "invalid time" in fails("show", "partitions", "--lake", log.lake, "--at-time", "yesterday")
    assert "do not apply to features" in fails("show", "features", "--lake", log.lake, "--topic", "x")
    assert "give --lake" in fails("diff", "--after-offset", 1)
    assert "give both --from-image and --to-image" in fails("diff", "--from-image", tmp_path)
    assert "--after-offset or --after-time" in fails("diff", "--lake", log.lake, "--to-offset", 3)


def test_commands_on_a_real_kafka_log_agree_across_engines(shared_lake) -> None:
    """replay/show/diff on a log written by Kafka 4.1.1 (a partition reassignment): the temporal image, read
    in process and on Spark, gives the reference engine's image."""
    log_dir = Path(__file__).parent / "fixtures" / "kafka" / "4.1.1" / "reassign" / "__cluster_metadata-0"
    shared, _ = shared_lake(kafka_fixture_name(log_dir.parent), lambda root: log_dir)
    lake, last = shared.uri, read_log(log_dir)[-1].offset
    mid = last // 2
    image = ok_json("replay", "--lake", lake, "--at-offset", mid, "--engine", "reference")
    assert ok_json("replay", "--lake", lake, "--at-offset", mid) == image
    assert ok_json("--reader", "spark", "replay", "--lake", lake, "--at-offset", mid) == image
    assert (
        ok_json("show", "partitions", "--lake", lake, "--at-offset", mid, "--engine", "reference")
        == image["partitions"]
    )
    diff = ok_json("diff", "--lake", lake, "--after-offset", mid, "--to-offset", last)
    assert diff["summary"]["partitions"]["changed"] > 0  # the reassignment moved replicas
    assert ok_json("replay", "--lake", lake) == ok_json("replay", "--lake", lake, "--engine", "reference")


NO_JVM_SIDE = r"""
import json, sys
from typer.testing import CliRunner
from cli.main import app
commands = json.loads(sys.argv[1])
runner = CliRunner()
out = []
for args in commands:
    res = runner.invoke(app, args)
    out.append({"code": res.exit_code, "stdout": res.stdout, "stderr": res.stderr})
print(json.dumps(out))
"""


def test_every_read_command_runs_without_java(log, tmp_path):
    """With no ``java`` on PATH and no JAVA_HOME, every read command on the local lake and on the log itself
    answers (in process) exactly what the Spark path answers."""
    import os
    import subprocess
    import sys

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("python3", "python"):  # only the interpreter on PATH: no java, no javac
        (bin_dir / tool).symlink_to(sys.executable)
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("JAVA_HOME", "SPARK_HOME", "SPARK_REMOTE", "KRAFT_REPLAY_MASTER", "KRAFT_REPLAY_READER")
    }
    env["PATH"] = str(bin_dir)
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[1])
    log_dir = str(log.root / "gen" / "__cluster_metadata-0")
    commands = [[*map(str, c), "--lake", log.lake, "--json"] for c in READS]
    commands += [[*map(str, c), "--log", log_dir, "--json"] for c in READS if c[0] in ("replay", "diff", "changes")]
    proc = subprocess.run(
        [sys.executable, "-c", NO_JVM_SIDE, json.dumps(commands)], env=env, capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads(proc.stdout.splitlines()[-1])
    for args, result in zip(commands, results):
        assert result["code"] == 0, (args, result["stderr"])
        spark_args = [a if a != log_dir else log.lake for a in args]
        if "--log" in args:
            spark_args[spark_args.index("--log")] = "--lake"
        expected = on_spark(*spark_args)
        assert expected.exit_code == 0, expected.output
        assert result["stdout"] == expected.stdout, args


def test_a_lake_read_in_process_loads_no_spark_no_pandas_and_no_pydantic(log):
    """``replay``, ``diff``, ``changes``, ``apply`` and ``leader-and-isr`` on a local lake (the in-process read
    path) load neither pyspark nor py4j, nor pandas (pyarrow is kept from importing it: 0.3–0.4 s), and not
    pydantic either: the committed state (``LakeState``) is a dataclass and the log summary's models are imported
    only by ``log-info``, ``dump`` and ``show`` (≈ 0.1 s of start-up); those three load no pandas either."""
    import os
    import subprocess
    import sys

    reads = [("replay", "--at-offset", 40), ("diff", "--after-offset", 20), ("changes", "--after-offset", 20)]
    reads += [("apply", "--broker", 1, "--after-offset", 20), ("leader-and-isr", "--after-offset", 20)]
    commands = [[*map(str, c), "--lake", log.lake, "--json"] for c in reads]
    more = [[*c, "--lake", log.lake, "--json"] for c in (["log-info"], ["dump"], ["show", "partitions"])]
    code = f"""
import json, sys
import cli.main
def run(commands):
    for args in commands:
        try:
            cli.main.app(args)
        except SystemExit as exit:
            assert not exit.code, (args, exit.code)
run({commands!r})
first = sorted(m for m in ("pyspark", "py4j", "pydantic", "pandas") if m in sys.modules)
run({more!r})
print(json.dumps([first, sorted(m for m in ("pyspark", "py4j", "pandas") if m in sys.modules)]))
"""
    env = {
        k: v for k, v in os.environ.items() if k not in ("SPARK_REMOTE", "KRAFT_REPLAY_MASTER", "KRAFT_REPLAY_READER")
    }
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[1])
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.splitlines()[-1]) == [[], []]
