"""``history``, ``timeline`` and ``report``: questions about a window of the log, answered from every
key's versions (commands of :data:`cli.app.app`; definitions in docs/health.md)."""

from __future__ import annotations

import csv
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from cli.app import (
    JsonOpt,
    KafkaVersionOpt,
    LogOpt,
    ReadLakeOpt,
    SkipUnknownOpt,
    app,
    err,
    handles_errors,
    out,
    print_json,
    source,
)
from cli.window import FromOffset, FromTime, ToOffset, ToTime
from metadata.log.errors import BadInput

if TYPE_CHECKING:
    from image.views.health import Timeline
    from image.views.history import History

history_app = typer.Typer(
    no_args_is_help=True, help="Every state of one partition, topic or broker in a window, and what changed."
)
app.add_typer(history_app, name="history")

_DURATION = re.compile(r"(\d+)(ms|s|m|h|d)")
_UNIT_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


def duration_ms(text: str) -> int:
    """``500ms``, ``30s``, ``1m``, ``2h``, ``1d`` in milliseconds."""
    found = _DURATION.fullmatch(text.strip())
    if not found or int(found.group(1)) == 0:
        raise BadInput(f"--every {text!r}: expected a positive duration such as 30s, 1m, 5m, 1h")
    return int(found.group(1)) * _UNIT_MS[found.group(2)]


def _print_history(title: str, history: History, as_json: bool) -> None:
    if as_json:
        print_json(history)
        return
    from cli import render

    out.print(render.history(title, history))


@history_app.command("partition")
@handles_errors
def history_partition(
    topic: Annotated[str, typer.Option("--topic", help="Topic name.")],
    partition: Annotated[int, typer.Option("--partition", help="Partition id.")],
    lake_location: ReadLakeOpt = None,
    log: LogOpt = None,
    kafka_version: KafkaVersionOpt = None,
    skip_unknown: SkipUnknownOpt = False,
    from_offset: FromOffset = None,
    to_offset: ToOffset = None,
    from_time: FromTime = None,
    to_time: ToTime = None,
    as_json: JsonOpt = False,
) -> None:
    """Every state of one partition: leader, ISR, replicas, reassignment, ELR, epochs, directories."""
    from image.temporal.version_rows import Selection, load
    from image.temporal.window import Window
    from image.uuids import directory_name
    from image.views.history import partition_history

    window = load(
        source(lake_location, log, kafka_version, skip_unknown),
        Window.of(from_offset=from_offset, from_time=from_time, to_offset=to_offset, to_time=to_time),
        Selection(parts=("partitions",), topic=topic, partition=partition),
    )
    history = partition_history(window, topic, partition, str if as_json else directory_name)
    _print_history(f"partition {topic}-{partition}", history, as_json)


@history_app.command("topic")
@handles_errors
def history_topic(
    topic: Annotated[str, typer.Option("--topic", help="Topic name.")],
    lake_location: ReadLakeOpt = None,
    log: LogOpt = None,
    kafka_version: KafkaVersionOpt = None,
    skip_unknown: SkipUnknownOpt = False,
    from_offset: FromOffset = None,
    to_offset: ToOffset = None,
    from_time: FromTime = None,
    to_time: ToTime = None,
    as_json: JsonOpt = False,
) -> None:
    """Every state of one topic name: created, partitions added, configs set / deleted, deleted, re-created."""
    from image.temporal.version_rows import Selection, load
    from image.temporal.window import Window
    from image.views.history import topic_history

    window = load(
        source(lake_location, log, kafka_version, skip_unknown),
        Window.of(from_offset=from_offset, from_time=from_time, to_offset=to_offset, to_time=to_time),
        Selection(parts=("topics", "partitions", "configs"), topic=topic),
    )
    _print_history(f"topic {topic}", topic_history(window, topic), as_json)


@history_app.command("broker")
@handles_errors
def history_broker(
    broker: Annotated[int, typer.Option("--broker", help="Broker id.")],
    lake_location: ReadLakeOpt = None,
    log: LogOpt = None,
    kafka_version: KafkaVersionOpt = None,
    skip_unknown: SkipUnknownOpt = False,
    from_offset: FromOffset = None,
    to_offset: ToOffset = None,
    from_time: FromTime = None,
    to_time: ToTime = None,
    as_json: JsonOpt = False,
) -> None:
    """Every state of one broker: registered, fenced / unfenced, controlled shutdown, unregistered."""
    from image.temporal.version_rows import Selection, load
    from image.temporal.window import Window
    from image.views.history import broker_history

    window = load(
        source(lake_location, log, kafka_version, skip_unknown),
        Window.of(from_offset=from_offset, from_time=from_time, to_offset=to_offset, to_time=to_time),
        Selection(parts=("brokers",), broker=broker),
    )
    _print_history(f"broker {broker}", broker_history(window, broker), as_json)


def _ids(values: list[int]) -> str:
    return " ".join(map(str, values))


def _csv(timeline: Timeline) -> None:
    """One row per point; leaders and records by type as one column per broker / type."""
    brokers = sorted({b for p in timeline.points for b in p.leadersPerBroker}, key=int)
    types = sorted({t for p in timeline.points for t in p.recordsByType})
    scalar = (
        "offset",
        "time",
        "offlinePartitions",
        "underReplicatedPartitions",
        "underMinIsrPartitions",
        "fencedBrokers",
        "controlledShutdownBrokers",
        "cordonedBrokers",
        "reassigningPartitions",
        "elections",
        "isrShrinks",
        "isrExpansions",
    )
    writer = csv.writer(sys.stdout, lineterminator="\n")
    writer.writerow([*scalar, *(f"leaders.{b}" for b in brokers), *(f"records.{t}" for t in types)])
    for p in timeline.points:
        row: dict[str, Any] = p.model_dump()
        writer.writerow(
            [_ids(row[c]) if isinstance(row[c], list) else row[c] for c in scalar]
            + [p.leadersPerBroker.get(b, "") for b in brokers]
            + [p.recordsByType.get(t, 0) for t in types]
        )


@app.command("timeline")
@handles_errors
def timeline_command(
    lake_location: ReadLakeOpt = None,
    log: LogOpt = None,
    kafka_version: KafkaVersionOpt = None,
    skip_unknown: SkipUnknownOpt = False,
    from_offset: FromOffset = None,
    to_offset: ToOffset = None,
    from_time: FromTime = None,
    to_time: ToTime = None,
    points: Annotated[int | None, typer.Option("--points", help="N evenly spaced points.")] = None,
    every: Annotated[str | None, typer.Option("--every", help="A point every 30s, 1m, 1h, …")] = None,
    as_json: JsonOpt = False,
    as_csv: Annotated[bool, typer.Option("--csv", help="CSV output.")] = False,
) -> None:
    """Cluster health over a window: offline, under-replicated, under-min-ISR partitions, fenced brokers,
    leaders per broker, elections, ISR changes (default: one point per change)."""
    from image.temporal.version_rows import Selection, load
    from image.temporal.window import Window
    from image.views.timeline import points_at_changes, points_by_count, points_every, timeline

    if points is not None and every is not None:
        raise BadInput("give --points or --every, not both")
    if as_json and as_csv:
        raise BadInput("give --json or --csv, not both")
    asked = Window.of(from_offset=from_offset, from_time=from_time, to_offset=to_offset, to_time=to_time)
    window = load(
        source(lake_location, log, kafka_version, skip_unknown),
        asked,
        Selection(parts=("partitions", "brokers", "configs")),
    )
    if points is not None:
        at = points_by_count(window, points)
    elif every is not None:
        at = points_every(window, duration_ms(every), asked.from_time, asked.to_time)
    else:
        at = points_at_changes(window)
    result = timeline(window, at)
    if as_json:
        print_json(result)
        return
    if as_csv:
        _csv(result)
        return
    from cli import render

    out.print(render.timeline(result, window.first_offset, window.last_offset))


@app.command("report")
@handles_errors
def report_command(
    out_path: Annotated[Path, typer.Option("--out", help="HTML file to write.")],
    lake_location: ReadLakeOpt = None,
    log: LogOpt = None,
    kafka_version: KafkaVersionOpt = None,
    skip_unknown: SkipUnknownOpt = False,
    from_offset: FromOffset = None,
    to_offset: ToOffset = None,
    from_time: FromTime = None,
    to_time: ToTime = None,
    title: Annotated[str, typer.Option(help="Page title.")] = "kraft-replay incident report",
) -> None:
    """A self-contained HTML incident report for a window: timeline plots, biggest events, leaders per
    broker before / after, and the diff of the images at its ends (opens offline)."""
    from image.temporal.version_rows import Selection, image_diff, load
    from image.temporal.window import Window
    from image.views.report import incident_report, render_html, report_points

    store = source(lake_location, log, kafka_version, skip_unknown)
    window = load(
        store,
        Window.of(from_offset=from_offset, from_time=from_time, to_offset=to_offset, to_time=to_time),
        Selection(),
    )
    report = incident_report(
        window, report_points(window), image_diff(store, window.first_offset, window.last_offset), title
    )
    out_path.write_text(render_html(report), encoding="utf-8")
    err.print(f"wrote {out_path}", highlight=False)
    from cli import render

    out.print(render.report(str(out_path), report))
