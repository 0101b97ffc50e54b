"""The incident report of a real Kafka log (4.1.1 rolling restart), written by ``kraft-replay report``:
its data against the reference engine, its HTML self-contained, and — in headless Debian Chromium —
its plots rendered with no console error and no network request.

The browser test installs Debian's chromium when it is missing (as root, with apt-get) and is skipped,
with the reason, where that cannot be done. ``KRAFT_REPLAY_REPORT_SCREENSHOT=docs/report.png`` also
saves the screenshot shown in the README.
"""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli.app import app
from cli.main import app as main_app  # noqa: F401 — registers every command
from image.replay import replay_to
from image.views.health import image_gauges
from image.views.report import MAX_EVENTS
from metadata.log.readers import read_log
from tests.browser import Browser, chromium_path

pytestmark = pytest.mark.spark

ROLLING = Path(__file__).parent / "fixtures/kafka/4.1.1/rolling-restart/__cluster_metadata-0"
FROM = 50
PLOTS = ("plot-partitions", "plot-brokers", "plot-leaders", "plot-elections")


@pytest.fixture(scope="module")
def page(spark, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("report") / "report.html"
    res = CliRunner().invoke(
        app,
        [
            "report",
            "--log",
            str(ROLLING),
            "--from-offset",
            str(FROM),
            "--out",
            str(out),
            "--title",
            "Rolling restart, Kafka 4.1.1",
        ],
    )
    assert res.exit_code == 0, res.output
    return out


def _data(page: Path) -> str:
    return page.read_text(encoding="utf-8")


def test_report_content_follows_the_reference_engine(page):
    html = _data(page)
    records = read_log(ROLLING)
    last = records[-1].offset
    assert f"offsets {FROM} … {last}" in html
    before = image_gauges(replay_to(records, FROM).to_json()).leadersPerBroker
    after = image_gauges(replay_to(records, last).to_json()).leadersPerBroker
    for broker in before:
        assert re.search(
            rf"<tr><td>{broker}</td><td class=\"n\">{before[broker]}</td>"
            rf"<td class=\"n\">{after[broker]}</td>",
            html,
        ), broker
    events = re.findall(r"<tr><td>([^<]+)</td><td class=\"n\">(\d+)</td><td>(\w+)</td><td>([^<]+)</td></tr>", html)
    assert 0 < len(events) <= MAX_EVENTS
    assert [int(o) for _, o, _, _ in events] == sorted(int(o) for _, o, _, _ in events)
    texts = [t for _, _, _, t in events]
    for broker in (1, 2, 3):
        assert f"broker {broker}: controlled shutdown entered" in texts
    assert any(t.startswith("offline partitions: up to") for t in texts)
    # the window is 72 seconds: its elections are counted per 2 seconds, each burst at its first election
    assert any(re.fullmatch(r"\d+ leader elections in the 2 seconds from \d\d:\d\d:\d\d", t) for t in texts)
    assert "Leader elections per 2 seconds" in html
    times = [t for t, _, _, _ in events]
    assert times == sorted(times)
    assert f"offset {FROM} → {last}" in html  # the diff of the two ends


def test_report_is_self_contained(page):
    html = _data(page)
    assert html.count("<script") >= len(PLOTS)
    assert not re.search(r"<(script|link|img|iframe)[^>]+(src|href)=\"?(https?:)?//", html)
    assert "@import" not in html and "url(http" not in html and "@font-face" not in html
    assert html.count("Plotly.newPlot") == len(PLOTS)


@pytest.fixture(scope="module")
def chromium() -> str:
    path, why = chromium_path()
    if path is None:
        pytest.skip(f"BROWSER TEST NOT RUN: {why}")
    return path


@pytest.mark.browser
def test_report_renders_in_headless_chromium(page, chromium, tmp_path):
    with Browser(chromium) as browser:
        browser.open(page)
        deadline = time.monotonic() + 60
        while browser.evaluate("document.querySelectorAll('.js-plotly-plot .main-svg').length") < 2 * len(PLOTS):
            assert time.monotonic() < deadline, "plots did not render"
            time.sleep(0.2)
        plots = browser.evaluate("""[...document.querySelectorAll('.js-plotly-plot')].map(d => {
            const box = d.querySelector('svg.main-svg').getBoundingClientRect();
            return {id: d.id, width: box.width, height: box.height,
                    traces: d.querySelectorAll('.scatterlayer .trace, .barlayer .trace').length,
                    lines: [...d.querySelectorAll('.scatterlayer path.js-line')]
                             .filter(p => p.getTotalLength() > 0).length,
                    bars: d.querySelectorAll('.barlayer .point path').length}; })""")
        assert [p["id"] for p in plots] == list(PLOTS)
        for plot in plots:
            assert plot["width"] > 400 and plot["height"] > 200, plot
            assert plot["traces"] > 0 and plot["lines"] + plot["bars"] > 0, plot
        ticks = browser.evaluate(
            "[...document.querySelectorAll('#plot-elections .xtick text')].map(t => t.textContent)"
        )
        assert len(ticks) >= 3 and all(re.match(r"\d\d:\d\d(:\d\d)?(?![.\d])", t) for t in ticks), ticks
        assert browser.errors() == []
        assert [u for u in browser.requests() if not u.startswith(("file:", "data:", "blob:"))] == []
        shot = Path(os.environ.get("KRAFT_REPLAY_REPORT_SCREENSHOT", tmp_path / "report.png"))
        browser.screenshot(shot, height=1150)
        assert shot.stat().st_size > 20_000
        assert json.loads(browser.evaluate("JSON.stringify(document.title)")) == "Rolling restart, Kafka 4.1.1"
