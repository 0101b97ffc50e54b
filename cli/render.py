"""Human output of the commands: rich renderables built from the documents the library returns —
the image JSON and its :class:`~image.views.summary.ImageSummary`, the diff JSON, the changes JSON, the
apply plan's action rows, the ZooKeeper-era request documents, and pydantic models such as
``LogInfo``, ``DumpRecord`` and ``IngestReport``.

Presentation only (counting, limiting, formatting), and nothing heavier than rich to import. Every
list shows its first ``limit`` rows (``None``: all of them) and then how many more there are; the
heading above it counts them all. Times are ISO-8601 UTC (epoch milliseconds only in ``--json``);
values are compact text (``[1,2,3]``, ``PLAINTEXT://host:9092``, ``metadata.version:1-21``), lists
longer than ``limit`` elided with a count: a list of ids always in brackets, so that it never reads
as a count. Kafka's reserved values show as Kafka names them for people: a replica's reserved
directory ids as ``UNASSIGNED``, ``LOST``, ``MIGRATING``, no leader (-1) as ``none`` (as
``kafka-topics --describe``), leader recovery states as ``RECOVERED``, ``RECOVERING``; the JSON keeps
the values themselves. Cells are plain text (never rich markup: ``[a,b]`` is a list, not a style).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from rich.console import Console, ConsoleOptions, Group, RenderableType
from rich.table import Table
from rich.text import Text

from image.diff_keys import CHANGES, DIFF_KEYS
from image.partition import for_people
from image.temporal import times
from image.uuids import directory_name

if TYPE_CHECKING:
    from generator.report import GenerateReport
    from image.views.health import Timeline, TimelinePoint
    from image.views.history import History
    from image.views.report import IncidentReport
    from image.views.summary import ImageSummary
    from metadata.lake.ingest import IngestReport
    from metadata.log.summary import DumpRecord, LogInfo

T = TypeVar("T")


# ---------------------------------------------------------------------------------------------- values


def iso_time(ms: int | None) -> str:
    """Epoch milliseconds as ISO-8601 UTC (``2026-01-30T17:05:00.123Z``); ``none`` when missing
    (null, or Kafka's -1)."""
    if ms is None or ms < 0:
        return "none"
    return times.iso_time(ms)


def is_time(name: str) -> bool:
    """Whether a field holds epoch milliseconds: the log's ``timestamp``, Kafka's ``*Timestamp`` fields and
    the generator report's ``*_timestamp``."""
    return name == "timestamp" or name.endswith(("Timestamp", "_timestamp"))


def compact(value: Any, limit: int | None, name: str = "") -> str:
    """One value as short text: lists ``[a,b]`` (elided past ``limit`` items; ``[x, y]`` for lists of
    objects, so they can wrap), endpoints ``NAME://host:port``, supported features ``name:min-max``,
    other objects ``{k=v,…}``, a clientQuotas entity ``type=name`` (``<default>`` for the default entity);
    by field ``name``: times ISO-8601, reserved values (no leader, leader recovery states, directory ids) as
    Kafka names them (:func:`image.partition.for_people`)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if name:
        if isinstance(value, int) and is_time(name):
            return iso_time(value)
        value = for_people(name, value)
    if isinstance(value, str):
        return value if value and not any(c.isspace() for c in value) else json.dumps(value)
    if isinstance(value, list):
        shown, hidden = head(value, limit)
        items = [compact(v, limit) for v in shown] + ([f"…+{hidden}"] if hidden else [])
        return "[" + (", " if any(isinstance(v, dict) for v in shown) else ",").join(items) + "]"
    if isinstance(value, dict):
        if {"name", "host", "port"} <= value.keys():
            return f"{value['name']}://{value['host']}:{value['port']}"
        if {"name", "minSupportedVersion", "maxSupportedVersion"} <= value.keys():
            return f"{value['name']}:{value['minSupportedVersion']}-{value['maxSupportedVersion']}"
        if name == "entity":
            return ",".join(f"{k}={'<default>' if v is None else compact(v, limit)}" for k, v in value.items())
        return "{" + ",".join(f"{k}={compact(v, limit, k)}" for k, v in value.items()) + "}"
    return str(value)


def cell(value: Any, limit: int | None, name: str = "") -> str:
    """A table cell: :func:`compact`, empty for null."""
    return "" if value is None else compact(value, limit, name)


def pairs(entry: Mapping[str, Any], limit: int | None, skip: Iterable[str] = (), skip_empty: bool = False) -> Text:
    """``key=value`` pairs separated by blanks (so text wraps between pairs), keys dimmed."""
    text = Text(overflow="fold")
    skipped = set(skip)
    for k, v in entry.items():
        if k in skipped or (skip_empty and v in (None, [])):
            continue
        if text:
            text.append(" ")
        text.append(f"{k}=", style="dim")
        text.append(compact(v, limit, k))
    return text


def count(n: int, noun: str) -> str:
    """``1 record``, ``1,234 records``."""
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


# ---------------------------------------------------------------------------------------------- lists


def head(rows: Sequence[T], limit: int | None) -> tuple[Sequence[T], int]:
    """The first ``limit`` rows (all if None) and how many are left out."""
    if limit is None or len(rows) <= limit:
        return rows, 0
    return rows[:limit], len(rows) - limit


def take(rows: Iterable[T], limit: int | None) -> tuple[list[T], int]:
    """The first ``limit`` rows of an iterable (all if None) and how many it had in all (consumes it)."""
    shown: list[T] = []
    total = 0
    for row in rows:
        if limit is None or total < limit:
            shown.append(row)
        total += 1
    return shown, total


def more(hidden: int, detail: str = "") -> Text:
    """The line under a cut list: ``… and 12 more (…) (use --all or --json)``."""
    return Text(f"… and {hidden:,} more{f' ({detail})' if detail else ''} (use --all or --json)", style="dim")


def heading(title: str) -> Text:
    """A table's title, on its own line so that it never wraps to the table's width."""
    return Text(title, style="table.title")


def plain(value: RenderableType) -> RenderableType:
    """A cell: a string as plain text (rich would read ``[p1,p2]`` as markup and print nothing), else as is."""
    return Text(value) if isinstance(value, str) else value


def table(
    title: str,
    columns: Sequence[str],
    rows: Iterable[Sequence[Any]],
    *,
    right: Iterable[str] = (),
    names: Iterable[str] = (),
    hide_empty: bool = False,
    hidden: int = 0,
    detail: str = "",
) -> list[RenderableType]:
    """:func:`heading`, the table, a note naming the columns left out (with ``hide_empty``: those
    empty or ``[]`` in every row), and :func:`more` if ``hidden`` rows were cut. ``right`` columns
    (numbers) are right-aligned and no wider than their values, their headers wrapping between
    words; ``names`` columns (what a row is about) keep their width while other columns wrap
    between words, folding only words wider than the terminal allows."""
    cells = [list(r) for r in rows]
    dropped = {i for i in range(len(columns)) if hide_empty and cells and all(r[i] in ("", "[]") for r in cells)}
    aligned, kept = set(right), set(names)
    out = Table()
    for i, c in enumerate(columns):
        if i in dropped:
            continue
        if c in aligned:
            narrow = max([len(str(r[i])) for r in cells] + [len(word) for word in c.split()])
            out.add_column(c, justify="right", max_width=narrow, overflow="fold")
        else:
            out.add_column(c, overflow="fold", no_wrap=c in kept)
    for r in cells:
        out.add_row(*(plain(v) for i, v in enumerate(r) if i not in dropped))
    parts: list[RenderableType] = [heading(title), out]
    if dropped:
        parts.append(Text(f"empty in every row shown: {', '.join(columns[i] for i in sorted(dropped))}", style="dim"))
    return parts + ([more(hidden, detail)] if hidden else [])


def kv_table(title: str, rows: list[tuple[str, Any]]) -> RenderableType:
    """:func:`heading` and a two-column table of labelled values."""
    out = Table(show_header=False)
    out.add_column(style="bold")
    out.add_column(overflow="fold")
    for k, v in rows:
        out.add_row(plain(k), plain("" if v is None else str(v)))
    return Group(heading(title), out)


def counts_table(title: str, counts: Mapping[str, int], what: str = "type") -> RenderableType:
    """``what`` / count rows."""
    return Group(*table(title, (what, "count"), ((k, f"{v:,}") for k, v in counts.items()), right=("count",)))


def id_list(ids: Sequence[int] | Sequence[str], limit: int | None) -> str:
    """``[1,2,3]`` (``…+N`` past ``limit``), or ``none``: a list of ids, never read as a count."""
    return compact(list(ids), limit) if ids else "none"


def _offsets(first: int | None, last: int | None) -> str:
    return "none" if first is None else f"{first} … {last}"


# ---------------------------------------------------------------------------------------------- log


def ingest_report(report: IngestReport, limit: int | None) -> RenderableType:
    """What an ingest read and added."""
    return kv_table(
        f"ingested into {report.lake}",
        [
            ("files", len(report.files)),
            ("bytes read", f"{report.bytes_read:,}"),
            ("bytes skipped (in the lake already)", f"{report.bytes_skipped:,}"),
            ("records decoded", f"{report.records_decoded:,}"),
            ("records added", f"{report.records_added:,}"),
            ("offsets", _offsets(report.first_offset, report.last_offset)),
            ("high-water mark", report.high_water_mark),
            (
                "snapshots",
                f"{len(report.snapshots)}: {id_list(report.snapshots, limit)}" if report.snapshots else "none",
            ),
            ("snapshot records added", f"{report.snapshot_records_added:,}"),
            ("seconds", f"{report.seconds:.1f}"),
        ],
    )


def generated(out_dir: str, report: GenerateReport) -> RenderableType:
    """What ``generate`` wrote: its parameters and counts (times ISO-8601), then its records by type."""
    doc = report.model_dump()
    scalars = [(k, cell(v, None, k)) for k, v in doc.items() if not isinstance(v, (dict, list))]
    return Group(
        kv_table(f"generated {out_dir}", scalars),
        *([counts_table("records by type", doc["by_type"])] if doc["by_type"] else []),
    )


def log_info(info: LogInfo, limit: int | None) -> RenderableType:
    """Offsets, times, record counts by type and the stored snapshots."""
    parts: list[RenderableType] = [
        kv_table(
            f"log in {info.lake}",
            [
                ("offsets", _offsets(info.first_offset, info.last_offset)),
                ("metadata records", f"{info.records:,}"),
                ("control records", f"{info.control_records:,}"),
                ("missing offsets", f"{info.missing_offsets:,}"),
                ("first time", iso_time(info.first_timestamp)),
                ("last time", iso_time(info.last_timestamp)),
                ("ingests", info.ingests),
            ],
        ),
        counts_table("records by type", {**info.by_type, **info.control_by_type}),
    ]
    if info.snapshots:
        shown, hidden = head(info.snapshots, limit)
        parts += table(
            f"snapshots ({len(info.snapshots):,})",
            ("end offset", "epoch", "kind", "records", "last contained time"),
            (
                (str(s.end_offset), str(s.epoch), s.kind, f"{s.records:,}", iso_time(s.last_contained_timestamp))
                for s in shown
            ),
            right=("end offset", "epoch", "records"),
            hidden=hidden,
        )
    if info.undecoded:
        parts += table(
            f"records kept raw by --skip-unknown, not replayed ({sum(u.count for u in info.undecoded):,})",
            ("record", "records", "offsets", "in snapshots"),
            (
                (u.record, f"{u.count:,}", id_list(u.offsets, limit), id_list(u.snapshots, limit))
                for u in info.undecoded
            ),
            right=("records",),
        )
    return Group(*parts)


@dataclass(frozen=True)
class _RecordLine:
    """One record: ``offset  time  TYPE vN  key=value …`` on one line when it fits, else the
    payload wrapped below the heading, indented."""

    heading: Text
    payload: Text
    indent: int

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> Iterator[RenderableType]:
        if not self.payload:
            yield self.heading
        elif self.heading.cell_len + 2 + self.payload.cell_len <= options.max_width:
            yield Text.assemble(self.heading, "  ", self.payload)
        else:
            yield self.heading
            for line in self.payload.wrap(console, max(options.max_width - self.indent, 20)):
                line.rstrip()
                yield Text.assemble(" " * self.indent, line)


def dump(records: Iterable[DumpRecord], limit: int | None) -> RenderableType:
    """Records one per line (the payload as ``key=value`` pairs); counts them all."""
    shown, total = take(records, limit)
    width = max((len(str(r.offset)) for r in shown), default=1)
    lines: list[RenderableType] = [
        Text(count(total, "record") + (f", the first {len(shown):,} shown" if len(shown) < total else ""), style="bold")
    ]
    for r in shown:
        heading = Text.assemble(
            (f"{r.offset:>{width}}", "bold"),
            "  ",
            (iso_time(r.timestamp), "dim"),
            "  ",
            (r.type, "cyan"),
            f" v{r.version}",
        )
        lines.append(_RecordLine(heading, pairs(r.data, limit), width + 2))
    if len(shown) < total:
        lines.append(more(total - len(shown)))
    return Group(*lines)


# ---------------------------------------------------------------------------------------------- image


def image_summary(summary: ImageSummary, limit: int | None) -> RenderableType:
    """Provenance, metadata.version, broker and partition health, rows per part."""
    level = summary.metadata_version
    version = "none" if level is None else f"{level} ({summary.metadata_version_name or 'unknown'})"
    return Group(
        kv_table(
            f"image at offset {summary.offset}",
            [
                ("offset", summary.offset),
                ("epoch", summary.epoch),
                ("time", iso_time(summary.timestamp)),
                ("metadata.version", version),
                ("next producer id", summary.next_producer_id if summary.next_producer_id >= 0 else "none"),
                ("fenced brokers", id_list(summary.fenced_brokers, limit)),
                ("brokers in controlled shutdown", id_list(summary.brokers_in_controlled_shutdown, limit)),
                ("leaderless partitions", f"{summary.leaderless_partitions:,}"),
                ("under-replicated partitions", f"{summary.under_replicated_partitions:,}"),
            ],
        ),
        counts_table("parts", summary.counts, what="part"),
    )


SHOW_COLUMNS: dict[str, dict[str, str]] = {
    "partitions": {
        "topic": "topic",
        "partitionId": "partition",
        "leader": "leader",
        "leaderEpoch": "leader epoch",
        "partitionEpoch": "partition epoch",
        "replicas": "replicas",
        "isr": "isr",
        "addingReplicas": "adding",
        "removingReplicas": "removing",
        "eligibleLeaderReplicas": "elr",
        "lastKnownElr": "last known elr",
        "leaderRecoveryState": "recovery state",
    },
    "brokers": {
        "brokerId": "broker",
        "brokerEpoch": "epoch",
        "fenced": "fenced",
        "inControlledShutdown": "controlled shutdown",
        "rack": "rack",
        "endPoints": "endpoints",
        "logDirs": "log dirs",
        "cordonedLogDirs": "cordoned log dirs",
        "incarnationId": "incarnation id",
    },
    "topics": {"name": "name", "topicId": "topic id"},
    "configs": {"resourceType": "resource type", "resourceName": "resource name", "name": "name", "value": "value"},
    "features": {"name": "name", "level": "level"},
}
"""The fields ``show`` lists per part and their column labels (``--json`` has every field)."""

_NUMERIC = {"partition", "leader", "leader epoch", "partition epoch", "broker", "epoch", "level"}


def show(part: str, rows: Sequence[Mapping[str, Any]], limit: int | None) -> RenderableType:
    """Rows of one image part; columns empty in every row shown are left out (and named)."""
    shown, hidden = head(rows, limit)
    columns = SHOW_COLUMNS[part]
    return Group(
        *table(
            f"{part} ({len(rows):,})",
            list(columns.values()),
            ([cell(r[f], limit, f) for f in columns] for r in shown),
            right=_NUMERIC,
            names=("topic", "name"),
            hide_empty=True,
            hidden=hidden,
        )
    )


def _diff_key(section: str, entry: Mapping[str, Any], limit: int | None) -> str:
    if section == "partitions":
        return f"{entry['topic']}-{entry['partitionId']}"
    return " / ".join(compact(entry[k], limit, k) for k in DIFF_KEYS[section][0])


def _diff_details(section: str, change: str, entry: Mapping[str, Any], limit: int | None) -> Text:
    if change != "changed":
        keys, context = DIFF_KEYS[section]
        return pairs(entry, limit, skip=(*keys, *context), skip_empty=True)
    text = Text(overflow="fold")
    for f in entry["fields"]:
        if text:
            text.append("; ")
        text.append(f"{f}: ", style="dim")
        text.append(f"{compact(entry['before'][f], limit, f)} → {compact(entry['after'][f], limit, f)}")
    return text


def diff(doc: Mapping[str, Any], limit: int | None) -> RenderableType:
    """The summary table, then per section with differences its first changes (added, removed,
    changed, each ordered by key) and how many more of each kind."""
    start, end = doc["from"], doc["to"]
    parts = table(
        f"diff offset {start['offset']} → {end['offset']} "
        f"({iso_time(start['timestamp'])} → {iso_time(end['timestamp'])})",
        ("section", *CHANGES),
        ((section, *(f"{counts[c]:,}" for c in CHANGES)) for section, counts in doc["summary"].items()),
        right=CHANGES,
    )
    for section, counts in doc["summary"].items():
        if not any(counts.values()):
            continue
        entries = [(change, e) for change in CHANGES for e in doc[section][change]]
        shown, hidden = head(entries, limit)
        left = Counter(change for change, _ in entries[len(shown) :])
        parts += table(
            f"{section}: " + ", ".join(f"{counts[c]:,} {c}" for c in CHANGES if counts[c]),
            ("change", "key", "details"),
            ((change, _diff_key(section, e, limit), _diff_details(section, change, e, limit)) for change, e in shown),
            hidden=hidden,
            detail=", ".join(f"{left[c]:,} {c}" for c in CHANGES if left[c]),
        )
    return Group(*parts)


# ---------------------------------------------------------------------------------------------- replica

_MEMBERS = {
    "deletes": "deletes",
    "leaders": "leaders",
    "electedLeaders": "elected leaders",
    "followers": "followers",
    "directoryIds": "directory ids",
}
_EPOCHS = ("leader", "leader epoch", "partition epoch")


def _broker_changes(doc: Mapping[str, Any], limit: int | None) -> list[RenderableType]:
    """One broker's LocalReplicaChanges: leaders, followers (with the directory ids) and deletes."""
    b = doc["broker"]
    elected = {(e["topic"], e["partitionId"]) for e in doc["electedLeaders"]}
    directories = {(d["topic"], d["partitionId"]): d["directory"] for d in doc["directoryIds"]}
    parts: list[RenderableType] = []
    for member in ("leaders", "followers"):
        shown, hidden = head(doc[member], limit)
        parts += table(
            f"broker {b}: {member} ({len(doc[member]):,})",
            (
                "partition",
                "leader",
                "leader epoch",
                "elected",
                "partition epoch",
                "isr",
                "replicas",
                "adding",
                "removing",
                "directory",
            ),
            (
                (
                    f"{e['topic']}-{e['partitionId']}",
                    compact(e["leader"], limit, "leader"),
                    str(e["leaderEpoch"]),
                    "yes" if (e["topic"], e["partitionId"]) in elected else "",
                    str(e["partitionEpoch"]),
                    compact(e["isr"], limit),
                    compact(e["replicas"], limit),
                    compact(e["addingReplicas"], limit),
                    compact(e["removingReplicas"], limit),
                    cell(directories.get((e["topic"], e["partitionId"])), limit, "directory"),
                )
                for e in shown
            ),
            right=_EPOCHS,
            names=("partition",),
            hide_empty=True,
            hidden=hidden,
        )
    shown, hidden = head(doc["deletes"], limit)
    parts += table(
        f"broker {b}: deletes ({len(doc['deletes']):,})",
        ("partition",),
        ((f"{d['topic']}-{d['partitionId']}",) for d in shown),
        hidden=hidden,
    )
    return parts


def changes(doc: Mapping[str, Any], limit: int | None) -> RenderableType:
    """Every broker's counts (each broker's partitions with ``--all``), or one broker's partitions."""
    window = f"offsets {doc['fromOffset']} → {doc['toOffset']}"
    if "brokers" not in doc:
        return Group(
            kv_table(
                f"broker {doc['broker']}, {window}",
                [
                    *((label, f"{len(doc[m]):,}") for m, label in _MEMBERS.items()),
                    ("topics", f"{len(doc['topicIds']):,}"),
                ],
            ),
            *_broker_changes(doc, limit),
        )
    brokers = doc["brokers"]
    shown, hidden = head(brokers, limit)
    parts = table(
        f"local changes of {count(len(brokers), 'broker')}, {window}",
        ("broker", *_MEMBERS.values()),
        ((str(b["broker"]), *(f"{len(b[m]):,}" for m in _MEMBERS)) for b in shown),
        right=("broker", *_MEMBERS.values()),
        hidden=hidden,
    )
    if limit is None:
        parts += [part for b in brokers for part in _broker_changes(b, None)]
    elif brokers:
        parts.append(Text("one broker's partitions: --broker N (every broker's: --all)", style="dim"))
    return Group(*parts)


_PHASE_HEADINGS = {
    "delete": lambda rows: f"Deleting {sum(r['action'] == 'delete-log' for r in rows)} partition(s).",
    "leader": lambda rows: (
        f"Transitioning {sum(r['action'] != 'remove-fetcher' for r in rows)} partition(s) to local leaders."
    ),
    "follower": lambda rows: (
        f"Transitioning {sum(r['action'] in ('make-follower', 'abort') for r in rows)} partition(s) to local followers."
    ),
    "directory": lambda rows: f"Checking the directory of {len(rows)} partition(s) (metadata.version ≥ 3.7-IV2).",
    "coordinator": lambda rows: "Coordinator hooks (BrokerMetadataPublisher):",
}


def _reason(action: Mapping[str, Any]) -> str:
    """An action's reason, the directory id it names (``check-directory``: the action's ``directory``) as
    Kafka names the reserved ones."""
    directory = action.get("directory")
    return action["reason"] if directory is None else action["reason"].replace(directory, directory_name(directory))


def _plan(actions: Sequence[Mapping[str, Any]], limit: int | None) -> Iterator[str | tuple[str, str, str, str]]:
    """Per phase its heading, its first ``limit`` actions as ``(step, action, topic-partition, reason)``
    and how many more of which action."""
    phases: dict[str, list[Mapping[str, Any]]] = {}
    for r in actions:  # in step order, so the phases come in order too
        phases.setdefault(r["phase"], []).append(r)
    for phase, rows in phases.items():
        yield _PHASE_HEADINGS[phase](rows)
        shown, hidden = head(rows, limit)
        for r in shown:
            where = "" if r["topic"] is None else f"{r['topic']}-{r['partition']}"
            yield str(r["step"]), r["action"], where, _reason(r)
        if hidden:
            left = Counter(r["action"] for r in rows[len(shown) :])
            yield "  " + more(hidden, ", ".join(f"{n:,} {a}" for a, n in left.items())).plain


def plan_lines(actions: Sequence[Mapping[str, Any]], limit: int | None) -> list[str]:
    """An apply plan as the broker would log it, as plain lines: per phase a heading, then its first
    ``limit`` actions (``step  action  topic-partition  reason``) and how many more of which action."""
    return [
        item if isinstance(item, str) else f"  {item[0]:>4}  {item[1]:<18} {item[2]:<24} {item[3]}"
        for item in _plan(actions, limit)
    ]


def apply(doc: Mapping[str, Any], limit: int | None) -> RenderableType:
    """One broker's apply plan: the number of actions, then per phase what :func:`plan_lines` says,
    in columns (each reason wrapping in its own)."""
    actions = doc["actions"]
    parts: list[RenderableType] = [
        Text(
            f"broker {doc['broker']} applies the delta of offsets {doc['fromOffset']} → {doc['toOffset']}: "
            f"{count(len(actions), 'action')}",
            style="bold",
        )
    ]
    grid: Table | None = None
    for item in _plan(actions, limit):
        if isinstance(item, str):
            grid = None
            parts.append(Text(item, style="dim" if item.startswith("  ") else ""))
            continue
        if grid is None:
            grid = Table.grid(padding=(0, 0, 0, 2), pad_edge=True)
            grid.add_column(justify="right", no_wrap=True)
            grid.add_column(no_wrap=True)
            grid.add_column(no_wrap=True)
            grid.add_column(overflow="fold")
            parts.append(grid)
        grid.add_row(*item)
    return Group(*parts) if actions else Group(parts[0], Text("nothing to do"))


def _request_partitions(request: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    """``(topic, partition state)`` of a StopReplica or LeaderAndIsr request."""
    if request["type"] == "StopReplica":
        return [(t["topicName"], p) for t in request["topicStates"] for p in t["partitionStates"]]
    return [(s["topicName"], s) for s in request["partitionStates"]]


def _request_table(broker: int, request: Mapping[str, Any], limit: int | None) -> list[RenderableType]:
    """A StopReplica or LeaderAndIsr request as a table of its partitions."""
    states = _request_partitions(request)
    shown, hidden = head(states, limit)
    title = (
        f"broker {broker}: {request['type']} of {count(len(states), 'partition')} (controller "
        f"{request['controllerId']}, epoch {request['controllerEpoch']}, broker epoch {request['brokerEpoch']})"
    )
    if request["type"] == "StopReplica":
        return table(
            title,
            ("partition", "leader epoch", "delete"),
            (
                (f"{t}-{p['partitionIndex']}", str(p["leaderEpoch"]), compact(p["deletePartition"], limit))
                for t, p in shown
            ),
            right=("leader epoch",),
            names=("partition",),
            hidden=hidden,
        )
    return table(
        title,
        ("partition", "leader", "leader epoch", "isr", "zk version", "replicas", "adding", "removing", "new"),
        (
            (
                f"{t}-{s['partitionIndex']}",
                compact(s["leader"], limit, "leader"),
                str(s["leaderEpoch"]),
                compact(s["isr"], limit),
                str(s["partitionEpoch"]),
                compact(s["replicas"], limit),
                compact(s["addingReplicas"], limit),
                compact(s["removingReplicas"], limit),
                compact(s["isNew"], limit),
            )
            for t, s in shown
        ),
        right=("leader", "leader epoch", "zk version"),
        names=("partition",),
        hide_empty=True,
        hidden=hidden,
    )


def leader_and_isr(doc: Mapping[str, Any], limit: int | None) -> RenderableType:
    """One broker's requests, or every broker's request sizes (their partitions with ``--all``)."""
    if "brokers" not in doc:
        return Group(*(part for r in doc["requests"] for part in _request_table(doc["brokerId"], r, limit)))
    documents = doc["brokers"]
    shown, hidden = head(documents, limit)

    def size(d: Mapping[str, Any], kind: str) -> str:
        return f"{sum(len(_request_partitions(r)) for r in d['requests'] if r['type'] == kind):,}"

    columns = ("broker", "broker epoch", "StopReplica partitions", "LeaderAndIsr partitions")
    parts = table(
        f"requests to {count(len(documents), 'broker')}, offsets {doc['fromOffset']} → {doc['toOffset']}",
        columns,
        ((str(d["brokerId"]), str(d["brokerEpoch"]), size(d, "StopReplica"), size(d, "LeaderAndIsr")) for d in shown),
        right=columns,
        hidden=hidden,
    )
    if limit is None:
        parts += [part for d in documents for r in d["requests"] for part in _request_table(d["brokerId"], r, None)]
    elif documents:
        parts.append(Text("one broker's requests: --broker N (every broker's: --all)", style="dim"))
    return Group(*parts)


def zk_replay(result: Mapping[str, Any], limit: int | None) -> RenderableType:
    """Per request its partition error codes and events, then the broker's partitions."""
    parts: list[RenderableType] = []
    for i, response in enumerate(result["responses"], 1):
        shown, hidden = head(response["partitionErrors"], limit)
        parts += table(
            f"request {i}: {response['type']}, error code {response['errorCode']}",
            ("partition", "error code"),
            ((f"{p['topicName']}-{p['partitionIndex']}", str(p["errorCode"])) for p in shown),
            right=("error code",),
            names=("partition",),
            hidden=hidden,
        )
        events, hidden = head(response["events"], limit)
        parts += [Text(f"  {event}") for event in events] + ([more(hidden)] if hidden else [])
    state = result["broker"]
    shown, hidden = head(state["partitions"], limit)

    def fetcher(f: Mapping[str, Any] | None) -> str:
        return "" if f is None else f"{f['leader']}@{f['host']}:{f['port']} #{f['fetcherId']}"

    parts += table(
        f"broker {result['brokerId']} after the requests (controller epoch {state['controllerEpoch']}): "
        f"{count(len(state['partitions']), 'partition')}",
        ("partition", "leader", "leader epoch", "partition epoch", "replicas", "isr", "log", "fetcher"),
        (
            (
                f"{p['topicName']}-{p['partitionIndex']}",
                compact(p["leader"], limit, "leader"),
                str(p["leaderEpoch"]),
                str(p["partitionEpoch"]),
                compact(p["replicas"], limit),
                compact(p["isr"], limit),
                "offline" if p["offline"] else ("yes" if p["hasLog"] else "no"),
                fetcher(p["fetcher"]),
            )
            for p in shown
        ),
        right=_EPOCHS,
        names=("partition",),
        hidden=hidden,
    )
    return Group(*parts)


# ---------------------------------------------------------------------------------------------- window


def history(title: str, doc: History) -> RenderableType:
    """Every state of one key in a window: its offsets, time and what changed, in words."""
    return Group(
        *table(
            f"{title} ({count(len(doc.versions), 'version')})",
            ("from offset", "to offset", "time (UTC)", "what changed"),
            (
                (
                    str(v.fromOffset),
                    "" if v.toOffset is None else str(v.toOffset),
                    v.fromTime or "",
                    "\n".join(v.events) or "(as before the window)",
                )
                for v in doc.versions
            ),
            right=("from offset", "to offset"),
            names=("time (UTC)",),
        )
    )


def _brokers(point: TimelinePoint) -> str:
    """The brokers fenced, in controlled shutdown and with a cordoned log dir, each list named (empty: none)."""
    lists = (
        ("fenced", point.fencedBrokers),
        ("in controlled shutdown", point.controlledShutdownBrokers),
        ("cordoned", point.cordonedBrokers),
    )
    return "\n".join(f"{label} {compact(ids, None)}" for label, ids in lists if ids)


def timeline(doc: Timeline, first_offset: int, last_offset: int) -> RenderableType:
    """One row per point: its time (of day when every point is on one day, named in the title), the
    counts of partitions offline, under-replicated, under min ISR and reassigning, the counters since
    the previous point, the brokers fenced, in controlled shutdown or with a cordoned log dir, and
    leaders per broker (``broker:leaders``)."""
    days = sorted({p.time[:10] for p in doc.points})
    one_day = len(days) == 1
    counts = ("offset", "offline", "under repl.", "under min ISR", "reassigning", "elections", "ISR −/+", "records")
    return Group(
        *table(
            f"timeline, offsets {first_offset} … {last_offset} ({count(len(doc.points), 'point')})"
            + (f" on {days[0]}" if one_day else ""),
            ("time (UTC)", *counts, "brokers", "leaders per broker"),
            (
                (
                    p.time[11:] if one_day else p.time,
                    str(p.offset),
                    f"{p.offlinePartitions:,}",
                    f"{p.underReplicatedPartitions:,}",
                    f"{p.underMinIsrPartitions:,}",
                    f"{p.reassigningPartitions:,}",
                    f"{p.elections:,}",
                    f"{p.isrShrinks:,}/{p.isrExpansions:,}",
                    f"{sum(p.recordsByType.values()):,}",
                    _brokers(p),
                    " ".join(f"{b}:{n:,}" for b, n in p.leadersPerBroker.items()),
                )
                for p in doc.points
            ),
            right=counts,
            names=("time (UTC)",),
        )
    )


def report(path: str, doc: IncidentReport) -> RenderableType:
    """What an incident report shows: its window, points, events, the elections chart's interval and how
    many entries of each section of the diff differ."""
    from image.views.report import interval_words

    return kv_table(
        f"report {path}",
        [
            ("window", f"offsets {doc.fromOffset} … {doc.toOffset}, {doc.fromTime} … {doc.toTime}"),
            ("timeline points", f"{len(doc.points):,}"),
            ("events", f"{len(doc.events):,}"),
            ("elections chart", f"per {interval_words(doc.electionInterval)}"),
            (
                "entries that differ",
                ", ".join(f"{s}: {sum(c.values()):,}" for s, c in doc.diff["summary"].items() if any(c.values()))
                or "none",
            ),
        ],
    )
