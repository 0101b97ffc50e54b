"""``history``, ``timeline`` and ``report`` through the CLI on real-Kafka logs (``--log``, read in
process). The library's results are checked against the reference engine in test_health.py; here
the commands must print exactly those results, honour the window options and fail clearly."""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

import pytest

from generator import generate
from image.replay import replay_to
from image.temporal.sources import log_source
from image.temporal.times import parse_time
from image.temporal.version_rows import Selection, image_diff, load
from image.temporal.window import Window
from image.uuids import UNASSIGNED
from image.views.health import image_gauges
from image.views.history import partition_history
from image.views.report import election_interval, incident_report, render_html, report_points, time_axis
from metadata.log.errors import BadInput
from metadata.log.readers import read_log
from tests.test_cli_image import ok_json, run
from tests.test_render import run_wide

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


CORDON = Path(__file__).parent / "fixtures/kafka/4.4.0/cordon/__cluster_metadata-0"


def test_history_names_reserved_directory_ids_for_people_and_keeps_them_in_json():
    """Kafka 4.4 creates c1-0 with both replicas' directories UNASSIGNED, then the brokers assign them."""
    args = ("history", "partition", "--log", CORDON, "--topic", "c1", "--partition", 0)
    people = run_wide(*args)
    assert people.exit_code == 0, people.output
    assert "replica 2 directory UNASSIGNED→zO3-EXGiAPnMw7pKxtst4Q" in people.stdout
    assert "replica 3 directory UNASSIGNED→6tCFsom3g2EkY6SrEIRN4w" in people.stdout
    assert UNASSIGNED not in people.stdout
    events = [e for v in ok_json(*args)["versions"] for e in v["events"]]
    assert f"replica 2 directory {UNASSIGNED}→zO3-EXGiAPnMw7pKxtst4Q" in events


def test_timeline_lists_broker_ids_as_lists():
    """Brokers 1, 2 and 3 register fenced one after another: the ids read as lists, never as a count."""
    table = run_wide("timeline", "--log", CORDON)
    assert table.exit_code == 0, table.output
    fenced = [p["fencedBrokers"] for p in ok_json("timeline", "--log", CORDON)["points"]][:6]
    assert fenced == [[], [], [2], [1, 2], [1, 2, 3], [1, 2, 3]]
    rows = [line for line in table.stdout.splitlines() if "fenced [" in line]
    assert [re.search(r"fenced (\[[\d,]+\])", r).group(1) for r in rows[:4]] == ["[2]", "[1,2]", "[1,2,3]", "[1,2,3]"]


@pytest.mark.parametrize(
    "seconds, interval",
    [
        (0, 1_000),
        (14, 1_000),
        (60, 1_000),
        (61, 2_000),
        (82, 2_000),
        (3_600, 60_000),
        (3 * 3_600, 300_000),
        (30 * 86_400, 43_200_000),
        (400 * 86_400, 86_400_000),  # at most 60 bars, but never wider than a day
    ],
)
def test_the_elections_chart_interval_follows_the_window(seconds, interval):
    assert election_interval(1_000_000, 1_000_000 + seconds * 1_000) == interval


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> Path:
    """A generated log of about 280 records over 80 seconds, with elections at 8.4 s and 20.3-20.7 s."""
    root = tmp_path_factory.mktemp("report")
    generate(7, 3, 3, 3, 40, root)
    return root / "__cluster_metadata-0"


def test_report_of_a_14_second_window_counts_elections_per_second_in_time_order(generated):
    store = log_source(generated)
    window = load(
        store,
        Window(from_time=parse_time("2025-01-01T00:00:07Z"), to_time=parse_time("2025-01-01T00:00:21Z")),
        Selection(),
    )
    report = incident_report(window, report_points(window), image_diff(store, window.first_offset, window.last_offset))
    assert (report.fromTime, report.toTime) == ("2025-01-01T00:00:06.508Z", "2025-01-01T00:00:20.806Z")
    assert report.electionInterval == 1_000
    assert time_axis(report) == ("2025-01-01T00:00:06.000Z", "2025-01-01T00:00:21.000Z")
    bursts = [(e.time, e.text) for e in report.events if e.kind == "elections"]
    assert bursts == [
        ("2025-01-01T00:00:08.395Z", "1 leader election in the second from 00:00:08"),
        ("2025-01-01T00:00:20.254Z", "2 leader elections in the second from 00:00:20"),
    ]
    assert [e.offset for e in report.events] == sorted(e.offset for e in report.events)
    assert [e.time for e in report.events] == sorted(e.time for e in report.events)
    page = render_html(report)
    assert "Leader elections per second" in page and "per minute" not in page
    assert '"x":["2025-01-01T00:00:08.000Z","2025-01-01T00:00:20.000Z"],"y":[1,2]' in page
    assert page.count('"range":["2025-01-01T00:00:06.000Z","2025-01-01T00:00:21.000Z"]') == 4


def test_a_bug_is_not_a_user_error(monkeypatch):
    """The command line prints one line for the error family (what a user can cause) with the error's exit code;
    any other exception is a bug, and leaves the command with its traceback."""
    res = run("timeline", "--log", REASSIGN, "--points", 0)
    assert isinstance(res.exception, SystemExit) and res.exit_code == BadInput.exit_code == 1
    assert "error: --points must be between 1 and" in res.output

    def broken(*args, **kwargs):
        raise KeyError("a bug")

    monkeypatch.setattr("image.temporal.sources.open_source", broken)
    res = run("timeline", "--log", REASSIGN, "--points", 3)
    assert isinstance(res.exception, KeyError) and "error:" not in res.output
