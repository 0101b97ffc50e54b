"""``history``, ``timeline`` and ``report`` through the CLI on real-Kafka logs (``--log``, read in
process). The library's results are checked against the reference engine in test_health.py; here
the commands must print exactly those results, honour the window options and fail clearly."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest

from cli.main import app as main_app  # noqa: F401 — registers every command
from image.replay import replay_to
from image.temporal.sources import log_source
from image.temporal.version_rows import Selection, load
from image.temporal.window import Window
from image.views.health import image_gauges
from image.views.history import partition_history
from metadata.log.readers import read_log
from tests.test_cli_image import ok_json, run

REASSIGN = Path(__file__).parent / "fixtures/kafka/4.1.1/reassign/__cluster_metadata-0"


def test_history_partition_json_is_the_library_history():
    doc = ok_json(
        "history",
        "partition",
        "--log",
        REASSIGN,
        "--topic",
        "r1",
        "--partition",
        "1",
        "--from-offset",
        60,
        "--to-offset",
        150,
    )
    window = load(log_source(REASSIGN), Window(from_offset=60, to_offset=150), Selection(topic="r1", partition=1))
    assert doc == partition_history(window, "r1", 1).model_dump(mode="json")
    assert [v["fromOffset"] for v in doc["versions"]] == [44, 68, 120, 130, 138, 143]
    assert doc["versions"][1]["events"] == ["leader 3→1 (election)", "ISR −3 → [1]"]
    assert {"field": "leader", "before": 3, "after": 1} in doc["versions"][1]["changes"]


def test_history_broker_and_topic_tables_and_json():
    res = run("history", "broker", "--log", REASSIGN, "--broker", "3")
    assert res.exit_code == 0, res.output
    assert "unfenced" in res.stdout and "unregistered" in res.stdout
    versions = ok_json("history", "broker", "--log", REASSIGN, "--broker", "3")["versions"]
    assert versions[-1]["events"] == ["unregistered"] and versions[-1]["brokerEpoch"] is None
    assert versions[-1]["fromTime"] == "2026-11-22T08:40:56.819Z"
    topic = ok_json("history", "topic", "--log", REASSIGN, "--topic", "r2")["versions"]
    assert topic[0]["events"] == [f"created (topic id {topic[0]['topicId']}, 0 partitions)"]
    assert topic[-1]["partitions"] == 2 and topic[-1]["toOffset"] is None


def test_timeline_points_are_the_reference_images():
    records = read_log(REASSIGN)
    points = ok_json("timeline", "--log", REASSIGN, "--points", 9, "--from-offset", 40, "--to-offset", 160)["points"]
    assert len(points) == 9 and points[0]["offset"] == 40 and points[-1]["offset"] == 160
    for p in points:
        gauges = image_gauges(replay_to(records, p["offset"]).to_json()).model_dump()
        assert {k: p[k] for k in gauges} == gauges
    assert sum(p["recordsByType"].get("PARTITION_CHANGE_RECORD", 0) for p in points) == sum(
        1 for r in records if 40 <= r.offset <= 160 and r.type == "PARTITION_CHANGE_RECORD"
    )


def test_timeline_by_time_and_per_change():
    every = ok_json(
        "timeline",
        "--log",
        REASSIGN,
        "--every",
        "10s",
        "--from-time",
        "2026-11-22T08:40:10Z",
        "--to-time",
        "2026-11-22T08:41:00Z",
    )["points"]
    assert [p["time"] for p in every] == [
        f"2026-11-22T08:{m:02d}:{s:02d}.000Z" for m, s in ((40, 10), (40, 20), (40, 30), (40, 40), (40, 50), (41, 0))
    ]
    changes = ok_json("timeline", "--log", REASSIGN)["points"]
    assert len(changes) > len(every) and changes[-1]["offset"] == 195


def test_timeline_csv_and_table():
    res = run("timeline", "--log", REASSIGN, "--points", 5, "--csv")
    assert res.exit_code == 0, res.output
    rows = list(csv.DictReader(io.StringIO(res.stdout)))
    doc = ok_json("timeline", "--log", REASSIGN, "--points", 5)["points"]
    assert [int(r["offset"]) for r in rows] == [p["offset"] for p in doc]
    assert [int(r["leaders.1"] or 0) for r in rows] == [p["leadersPerBroker"].get("1", 0) for p in doc]
    assert [r["fencedBrokers"] for r in rows] == [" ".join(map(str, p["fencedBrokers"])) for p in doc]
    table = run("timeline", "--log", REASSIGN, "--points", 3)
    assert table.exit_code == 0 and "timeline, offsets 0 … 195 (3 points)" in table.stdout


@pytest.mark.parametrize(
    "args, message",
    [
        (("timeline", "--log", REASSIGN, "--every", "fast"), "--every 'fast': expected a positive duration"),
        (("timeline", "--log", REASSIGN, "--points", 3, "--every", "1m"), "give --points or --every, not both"),
        (
            ("timeline", "--log", REASSIGN, "--from-offset", 1, "--from-time", "2026-11-22T08:40:10Z"),
            "give --from-offset or --from-time, not both",
        ),
        (
            ("timeline", "--log", REASSIGN, "--to-time", "2020-01-01T00:00:00Z"),
            "--to-time 2020-01-01T00:00:00.000Z: no",
        ),
        (("history", "broker", "--log", "/nonexistent/log", "--broker", 1), "/nonexistent/log: no such file"),
    ],
)
def test_bad_input_is_one_clear_line(args, message):
    res = run(*args)
    assert res.exit_code == 1
    assert message in res.output and "Traceback" not in res.output
