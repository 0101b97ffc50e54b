"""The incident report: one self-contained HTML page over a window (docs/health.md).

It shows the health timeline as plots over the window's time span (:func:`time_axis`; offline, under-replicated and
under-min-ISR partitions, fenced and shutting-down brokers, leaders per broker, elections per
interval — an interval the window's length chooses: :func:`election_interval`), the biggest events
in order, the leaders of every broker before and after, and the diff of the images at the
window's ends. The plots are Plotly figures with plotly.js inlined once in the page, so the page
opens offline and fetches nothing (no CDN, no fonts, no MathJax).

Biggest events: every broker state change (registered, fenced, unfenced, controlled shutdown
entered / left, re-registered, unregistered), topic creations and deletions, election bursts
(the elections of one interval of the chart, at the first of them) and episodes of offline,
under-min-ISR and under-replicated partitions (from the point a gauge leaves 0 to the point it is
back at 0, with its peak). Each has a weight — the partitions it touched: the leaders a broker held
just before, a topic's partitions, the elections of the interval, an episode's peak — and the page
lists the :data:`MAX_EVENTS` heaviest in log (and so time) order, each at the time of its first record.
Reserved values in the diff (no leader, leader recovery states, directory ids) show as Kafka names them
(:func:`image.partition.for_people`).
"""

from __future__ import annotations

import html
import json
from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

from pydantic import BaseModel

from image.diff_keys import DIFF_KEYS
from image.partition import for_people
from image.temporal.times import iso_time, parse_time
from image.temporal.version_rows import VersionWindow
from image.views.health import TimelinePoint
from image.views.history import broker_history
from image.views.timeline import points_at_changes, points_every, timeline

MAX_EVENTS = 40
MAX_PLOT_POINTS = 5000
"""The timeline is plotted at every change up to this many changes, else at evenly timed points."""
MAX_DIFF_ROWS = 200
"""Rows shown per diff section and kind of change (the count says how many there are)."""
ELECTION_INTERVALS_MS = (
    *(1_000 * s for s in (1, 2, 5, 10, 15, 30)),
    *(60_000 * m for m in (1, 2, 5, 10, 15, 30)),
    *(3_600_000 * h for h in (1, 2, 3, 6, 12, 24)),
)
"""The intervals the elections chart counts in (milliseconds), from a second to a day."""
MAX_BARS = 60
"""The elections chart's interval is the shortest that cuts the window into at most this many."""

_EPISODES = (
    ("offlinePartitions", "offline partitions"),
    ("underMinIsrPartitions", "under-min-ISR partitions"),
    ("underReplicatedPartitions", "under-replicated partitions"),
)


class ReportEvent(BaseModel):
    offset: int
    time: str
    kind: str
    text: str
    weight: int


class LeaderCount(BaseModel):
    broker: str
    before: int
    after: int


class IncidentReport(BaseModel):
    """Everything the page shows, as data."""

    title: str
    fromOffset: int
    toOffset: int
    fromTime: str
    toTime: str
    electionInterval: int
    """Milliseconds per bar of the elections chart (:func:`election_interval`)."""
    points: list[TimelinePoint]
    events: list[ReportEvent]
    leaders: list[LeaderCount]
    diff: dict[str, Any]


def _before(points: Sequence[TimelinePoint], offset: int) -> TimelinePoint | None:
    earlier = [p for p in points if p.offset < offset]
    return earlier[-1] if earlier else None


def _broker_events(window: VersionWindow, points: Sequence[TimelinePoint]) -> list[ReportEvent]:
    """The state changes of every broker inside the window; weight = leaders it held just before."""
    out = []
    for broker in sorted(set(window.brokers.column("brokerId").to_pylist())):
        for version in broker_history(window, broker).versions:
            if version.fromOffset < window.first_offset:
                continue
            previous = _before(points, version.fromOffset)
            led = previous.leadersPerBroker.get(str(broker), 0) if previous else 0
            time = version.fromTime or (previous.time if previous else "")
            out += [
                ReportEvent(
                    offset=version.fromOffset,
                    time=time,
                    kind="broker",
                    text=f"broker {broker}: {_short(event, version.state)}",
                    weight=max(led, 1),
                )
                for event in version.events
            ]
    return out


def _short(event: str, state: dict[str, Any]) -> str:
    """A broker event without its registration details (endpoints, features: see ``history``)."""
    if event.startswith(("registered", "re-registered")):
        head, _, tail = event.partition(" (")
        fenced = "; fenced" if tail.endswith("; fenced") else ""
        return f"{head} (epoch {state['brokerEpoch']}, rack {state['rack'] or 'none'}){fenced}"
    return event


def _topic_events(window: VersionWindow) -> list[ReportEvent]:
    """Topic creations and deletions inside the window; weight = the topic's partitions."""
    counts = window.partitions.group_by("topicId").aggregate([("partitionId", "count_distinct")])
    partitions = dict(
        zip(counts.column("topicId").to_pylist(), counts.column("partitionId_count_distinct").to_pylist(), strict=True)
    )
    out = []
    for row in window.topics.to_pylist():
        count = partitions.get(row["topicId"], 0)
        for offset, verb, time in (
            (row["from_offset"], "created", row["from_time"]),
            (row["to_offset"], "deleted", None),
        ):
            if offset is None or not window.first_offset <= offset <= window.last_offset:
                continue
            at = time if time is not None else window.time_at(offset)
            out.append(
                ReportEvent(
                    offset=offset,
                    time=iso_time(at) if at is not None else "",
                    kind="topic",
                    text=f"topic {row['name']} {verb} (id {row['topicId']}, {count} partitions)",
                    weight=max(count, 1),
                )
            )
    return out


def _episodes(points: Sequence[TimelinePoint]) -> list[ReportEvent]:
    """Per gauge, each episode from leaving 0 to being back at 0 (or the window's end), with its peak."""
    out = []
    for field, label in _EPISODES:
        start: TimelinePoint | None = None
        peak = 0
        for point in [*points, None]:
            value = getattr(point, field) if point is not None else 0
            if value > 0 and start is None:
                start, peak = point, value
            elif value > 0:
                peak = max(peak, value)
            elif start is not None:
                until = f"until {point.time} (offset {point.offset})" if point is not None else "until the window's end"
                out.append(
                    ReportEvent(
                        offset=start.offset,
                        time=start.time,
                        kind="partitions",
                        text=f"{label}: up to {peak}, {until}",
                        weight=peak,
                    )
                )
                start = None
    return out


def election_interval(start: int, end: int) -> int:
    """The interval (ms) the elections chart of a window from ``start`` to ``end`` (epoch ms) counts in:
    the shortest of :data:`ELECTION_INTERVALS_MS` that cuts it into at most :data:`MAX_BARS` (a day beyond)."""
    return next((i for i in ELECTION_INTERVALS_MS if end - start <= i * MAX_BARS), ELECTION_INTERVALS_MS[-1])


_UNITS = (("day", 86_400_000), ("hour", 3_600_000), ("minute", 60_000), ("second", 1_000))


def interval_words(interval: int) -> str:
    """One of :data:`ELECTION_INTERVALS_MS` in words: ``second``, ``2 seconds``, ``minute``, ``6 hours``, ``day``."""
    unit, ms = next((unit, ms) for unit, ms in _UNITS if interval % ms == 0)
    n = interval // ms
    return unit if n == 1 else f"{n} {unit}s"


def elections_per_interval(points: Sequence[TimelinePoint], interval: int) -> dict[int, int]:
    """Elections per interval of ``interval`` ms (epoch ms of its start; intervals with none left out),
    from the points' counters."""
    counts: dict[int, int] = defaultdict(int)
    for point in points:
        if point.elections:
            counts[parse_time(point.time) // interval * interval] += point.elections
    return dict(sorted(counts.items()))


def _clock(time: int, interval: int) -> str:
    """The start of an interval as precisely as the interval needs: its date (days), ``HH:MM`` (minutes,
    hours) or ``HH:MM:SS`` (seconds)."""
    text = iso_time(time)
    return text[:10] if interval % 86_400_000 == 0 else text[11:16] if interval % 60_000 == 0 else text[11:19]


def time_axis(report: IncidentReport) -> tuple[str, str]:
    """The plots' time axis: the window from the start of the elections chart's interval that holds its first
    point to the end of the one that holds its last, so that every bar is whole and the plots line up."""
    interval = report.electionInterval
    start = parse_time(report.fromTime) // interval * interval
    end = (parse_time(report.toTime) // interval + 1) * interval
    return iso_time(start), iso_time(end)


def _election_bursts(points: Sequence[TimelinePoint], interval: int) -> list[ReportEvent]:
    """The elections of each interval with any, at the first of them (its offset and time)."""
    out = []
    for start, count in elections_per_interval(points, interval).items():
        first = next(p for p in points if p.elections and parse_time(p.time) >= start)
        out.append(
            ReportEvent(
                offset=first.offset,
                time=first.time,
                kind="elections",
                text=f"{count} leader election{'s' if count > 1 else ''} in the {interval_words(interval)} "
                f"from {_clock(start, interval)}",
                weight=count,
            )
        )
    return out


def biggest(events: Iterable[ReportEvent], limit: int = MAX_EVENTS) -> list[ReportEvent]:
    """The ``limit`` heaviest events, in log order."""
    heaviest = sorted(events, key=lambda e: (-e.weight, e.offset))[:limit]
    return sorted(heaviest, key=lambda e: (e.offset, e.kind))


def report_points(window: VersionWindow) -> list[TimelinePoint]:
    """The timeline the report plots: a point per change, or :data:`MAX_PLOT_POINTS` evenly timed
    points when the window has more changes."""
    points = points_at_changes(window)
    if len(points) > MAX_PLOT_POINTS:
        start, end = points[0][1], window.time_at(window.last_offset) or points[-1][1]
        points = points_every(window, max(1, (end - start) // (MAX_PLOT_POINTS - 1)), start, end)
    return timeline(window, points).points


def incident_report(
    window: VersionWindow,
    points: Sequence[TimelinePoint],
    diff: dict[str, Any],
    title: str = "kraft-replay incident report",
) -> IncidentReport:
    """The report's data from a window's version rows, its timeline and the ``diff --json``
    document of the images at its first and last offsets."""
    if not points:
        raise ValueError("the report needs a timeline with at least one point")
    first, last = points[0], points[-1]
    interval = election_interval(parse_time(first.time), parse_time(last.time))
    events = biggest(
        [
            *_broker_events(window, points),
            *_topic_events(window),
            *_episodes(points),
            *_election_bursts(points, interval),
        ]
    )
    brokers = sorted(first.leadersPerBroker.keys() | last.leadersPerBroker.keys(), key=int)
    leaders = [
        LeaderCount(broker=b, before=first.leadersPerBroker.get(b, 0), after=last.leadersPerBroker.get(b, 0))
        for b in brokers
    ]
    return IncidentReport(
        title=title,
        fromOffset=window.first_offset,
        toOffset=window.last_offset,
        fromTime=first.time,
        toTime=last.time,
        electionInterval=interval,
        points=list(points),
        events=events,
        leaders=leaders,
        diff=diff,
    )


# ---- HTML -----------------------------------------------------------------------------------------

_CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 24px auto; max-width: 1200px;
       color: #1f2430; padding: 0 16px; }
h1 { font-size: 1.5em; margin-bottom: 4px; } h2 { font-size: 1.15em; margin-top: 32px; border-bottom: 1px solid #ccd; }
.meta { color: #556; } table { border-collapse: collapse; margin: 8px 0; font-size: 0.9em; }
td, th { border: 1px solid #dde; padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: #f2f4f8; } td.n { text-align: right; font-variant-numeric: tabular-nums; }
.plot { width: 100%; height: 320px; } .up { color: #0a7a2f; } .down { color: #b3261e; }
code { font-size: 0.95em; }
"""


def _figures(report: IncidentReport) -> list[tuple[str, Any]]:
    import plotly.graph_objects as go

    times = [p.time for p in report.points]
    span = list(time_axis(report))

    def steps(fig: Any, name: str, values: list[int]) -> None:
        fig.add_trace(go.Scatter(x=times, y=values, name=name, mode="lines", line_shape="hv"))

    def layout(fig: Any, title: str, y: str) -> Any:
        fig.update_layout(
            title=title,
            yaxis_title=y,
            template="plotly_white",
            height=320,
            margin={"l": 60, "r": 20, "t": 50, "b": 40},
            legend={"orientation": "h", "y": -0.2},
            font={"family": "system-ui, sans-serif"},
        )
        fig.update_yaxes(rangemode="tozero")
        fig.update_xaxes(type="date", range=span)
        return fig

    partitions = go.Figure()
    for field, label in _EPISODES:
        steps(partitions, label, [getattr(p, field) for p in report.points])
    steps(partitions, "reassigning partitions", [p.reassigningPartitions for p in report.points])
    brokers = go.Figure()
    steps(brokers, "fenced brokers", [len(p.fencedBrokers) for p in report.points])
    steps(brokers, "brokers in controlled shutdown", [len(p.controlledShutdownBrokers) for p in report.points])
    steps(brokers, "brokers with a cordoned log dir", [len(p.cordonedBrokers) for p in report.points])
    leaders = go.Figure()
    for broker in sorted({b for p in report.points for b in p.leadersPerBroker}, key=int):
        steps(leaders, f"broker {broker}", [p.leadersPerBroker.get(broker, 0) for p in report.points])
    interval = report.electionInterval
    counts = elections_per_interval(report.points, interval)
    elections = go.Figure(
        go.Bar(
            x=[iso_time(start) for start in counts],
            y=list(counts.values()),
            width=[interval] * len(counts),
            offset=0,
            name="elections",
        )
    )
    return [
        ("partitions", layout(partitions, "Partitions", "partitions")),
        ("brokers", layout(brokers, "Brokers fenced / in controlled shutdown / cordoned", "brokers")),
        ("leaders", layout(leaders, "Leaders per broker", "leaders")),
        ("elections", layout(elections, f"Leader elections per {interval_words(interval)}", "elections")),
    ]


def _cell(value: Any) -> str:
    if value is None:
        return ""
    text = value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))
    return html.escape(text)


def _table(headers: Sequence[str], rows: Iterable[Sequence[Any]], numeric: Sequence[int] = ()) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = "".join(
        "<tr>"
        + "".join(
            f'<td class="n">{_cell(v)}</td>' if i in numeric else f"<td>{_cell(v)}</td>" for i, v in enumerate(row)
        )
        + "</tr>"
        for row in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _diff_html(diff: dict[str, Any]) -> str:
    if not diff.get("summary"):
        return "<p>No diff.</p>"
    ends = f"offset {diff['from']['offset']} → {diff['to']['offset']}" if diff.get("from") and diff.get("to") else ""
    parts = [
        f'<p class="meta">{html.escape(ends)}</p>',
        _table(
            ("section", "added", "removed", "changed"),
            ((s, c["added"], c["removed"], c["changed"]) for s, c in diff["summary"].items()),
            (1, 2, 3),
        ),
    ]
    for section, counts in diff["summary"].items():
        if not any(counts.values()):
            continue
        keys, context = DIFF_KEYS[section]
        rows = []
        for change in ("added", "removed", "changed"):
            entries = diff[section][change]
            for entry in entries[:MAX_DIFF_ROWS]:
                key = " / ".join(_plain(entry[k]) for k in (*context, *keys))
                if change == "changed":
                    details = "; ".join(
                        f"{f}: {_plain(entry['before'][f], f)} → {_plain(entry['after'][f], f)}"
                        for f in entry["fields"]
                    )
                else:
                    details = ", ".join(f"{k}={_plain(v, k)}" for k, v in entry.items() if k not in (*keys, *context))
                rows.append((change, key, details))
            if len(entries) > MAX_DIFF_ROWS:
                rows.append((change, "…", f"{len(entries) - MAX_DIFF_ROWS} more"))
        parts.append(f"<h3>{html.escape(section)}</h3>" + _table(("change", "key", "details"), rows))
    return "".join(parts)


def _plain(value: Any, name: str = "") -> str:
    """A value of field ``name`` as text, reserved values as Kafka names them (:func:`image.partition.for_people`):
    strings as they are, else JSON."""
    value = for_people(name, value)
    return value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))


def render_html(report: IncidentReport) -> str:
    """The report as one HTML page (plotly.js inlined once; nothing is fetched)."""
    plots = []
    for i, (name, figure) in enumerate(_figures(report)):
        plots.append(
            figure.to_html(
                full_html=False,
                include_plotlyjs=i == 0,
                div_id=f"plot-{name}",
                config={"displaylogo": False, "responsive": True},
            )
        )
    leader_rows = [(c.broker, c.before, c.after, f"{c.after - c.before:+d}") for c in report.leaders]
    events = (
        _table(("time", "offset", "kind", "event"), ((e.time, e.offset, e.kind, e.text) for e in report.events), (1,))
        if report.events
        else "<p>No broker, topic or partition events in the window.</p>"
    )
    title = html.escape(report.title)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<meta name="viewport" content="width=device-width, initial-scale=1"><style>{_CSS}</style></head>
<body>
<h1>{title}</h1>
<p class="meta">Window: offsets {report.fromOffset} … {report.toOffset}, {html.escape(report.fromTime)} …
{html.escape(report.toTime)} UTC; {len(report.points)} timeline points.</p>
<h2>Timeline</h2>
{"".join(f'<div class="plot-wrap">{p}</div>' for p in plots)}
<h2>Biggest events</h2>
{events}
<h2>Leaders per broker</h2>
{_table(("broker", "before", "after", "change"), leader_rows, (1, 2, 3))}
<h2>What changed between the two ends</h2>
{_diff_html(report.diff)}
</body></html>
"""
