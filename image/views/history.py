"""The history of one partition, topic or broker: its consecutive states over a window, with what
changed from each state to the next in fields and in words.

A key is named as operators name it: a partition by topic name and partition id, a topic by
name, a broker by id. Its state at offset X is what ``replay --at-offset X`` shows of it:

* partition ``T-P`` — the image JSON row of partition P of the live topic named T;
* broker ``N`` — the image JSON row of broker N;
* topic ``T`` — ``topicId`` of the live topic named T, its number of ``partitions`` and its
  TOPIC ``configs`` ({name: value}; Kafka keys topic configs by name, so they can outlive the
  topic id).

A state holds from the offset it first shows (``fromOffset``) to the first offset it no longer
does (``toOffset``, null while current). When a key disappears (topic deleted, broker
unregistered) the history gets an entry whose state fields other than the name are null. If two
live topics ever share a name, the later-created one is the topic of that name (as in Kafka's
``topicsByName``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pydantic import BaseModel, ConfigDict, model_serializer

from image.temporal.times import iso_time
from image.temporal.version_rows import VersionWindow

NO_LEADER = -1
_VERSION_COLUMNS = ("from_offset", "to_offset", "from_time")
State = dict[str, Any]


class Change(BaseModel):
    """One field that differs from the previous state (``configs.<name>`` for a topic config)."""

    field: str
    before: Any
    after: Any


class HistoryVersion(BaseModel):
    """One state of the key: offsets, append time (ISO-8601 UTC; null if the window does not know
    it), the state fields (extra keys, named as in the image JSON), changes and events (words)."""

    model_config = ConfigDict(extra="allow")

    fromOffset: int
    toOffset: int | None
    fromTime: str | None
    changes: list[Change]
    events: list[str]

    @model_serializer(mode="wrap")
    def _ordered(self, handler: Callable[[Any], dict[str, Any]]) -> dict[str, Any]:
        """Offsets and time first, then the state fields, then changes and events."""
        data = handler(self)
        head = {k: data.pop(k) for k in ("fromOffset", "toOffset", "fromTime")}
        tail = {k: data.pop(k) for k in ("changes", "events")}
        return {**head, **data, **tail}

    @property
    def state(self) -> State:
        return dict(self.model_extra or {})


class History(BaseModel):
    """``history --json``."""

    versions: list[HistoryVersion]


@dataclass(frozen=True)
class _Segment:
    start: int
    end: int | None
    state: State | None  # None: the key does not exist
    time: int | None = None  # append time at ``start`` when the rows tell it


def _rows(table: pa.Table) -> list[dict[str, Any]]:
    return sorted(table.to_pylist(), key=lambda r: r["from_offset"])


def _segments(rows: Sequence[Mapping[str, Any]], fields: Sequence[str]) -> list[_Segment]:
    """The states of one named key from its version rows (possibly of several key ids over time):
    gaps become absent states; an overlap is cut at the later row."""
    out: list[_Segment] = []
    for i, row in enumerate(rows):
        end = row["to_offset"]
        following = rows[i + 1]["from_offset"] if i + 1 < len(rows) else None
        if following is not None and (end is None or end > following):
            end = following
        if out and out[-1].end is not None and out[-1].end < row["from_offset"]:
            out.append(_Segment(out[-1].end, row["from_offset"], None))
        out.append(_Segment(row["from_offset"], end, {f: row[f] for f in fields}, row["from_time"]))
    if out and out[-1].end is not None:
        out.append(_Segment(out[-1].end, None, None))
    return out


def _list(values: Iterable[Any]) -> str:
    return "[" + ",".join(str(v) for v in values) + "]"


def _leader(broker: int) -> str:
    return "none" if broker == NO_LEADER else str(broker)


def partition_events(
    before: State | None, after: State | None, earlier_ids: set[str], directory: Callable[[str], str] = str
) -> list[str]:
    """What changed from one partition state to the next, in words (see docs/health.md); ``directory``
    writes a directory id (default: its Uuid string, as in the JSON)."""
    if before is None and after is None:
        return []
    if after is None:
        assert before is not None
        return [f"deleted with topic id {before['topicId']}"]
    if before is None:
        created = "re-created" if earlier_ids - {after["topicId"]} else "created"
        return [
            (
                f"{created} (topic id {after['topicId']}): replicas {_list(after['replicas'])}, "
                f"leader {_leader(after['leader'])}, ISR {_list(after['isr'])}"
            )
        ]
    words: list[str] = []
    if before["leader"] != after["leader"]:
        new = after["leader"]
        if new == NO_LEADER:
            kind = "offline"
        else:
            how = "recovery" if before["leader"] == NO_LEADER else "election"
            if new in before["isr"]:
                kind = how
            elif new in before["eligibleLeaderReplicas"]:
                kind = f"{how} from ELR"
            else:
                kind = f"unclean {how}"
        words.append(f"leader {_leader(before['leader'])}→{_leader(new)} ({kind})")
    elif before["leaderEpoch"] != after["leaderEpoch"]:
        words.append(
            f"leader epoch {before['leaderEpoch']}→{after['leaderEpoch']} (leader {_leader(after['leader'])} kept)"
        )
    if before["leaderRecoveryState"] != after["leaderRecoveryState"]:
        words.append(
            "leader recovering (log may be truncated)"
            if after["leaderRecoveryState"] == 1
            else "leader recovery completed"
        )
    lost = [r for r in before["isr"] if r not in after["isr"]]
    gained = [r for r in after["isr"] if r not in before["isr"]]
    if lost or gained:
        delta = " ".join(
            part
            for part in (
                f"−{','.join(map(str, lost))}" if lost else "",
                f"+{','.join(map(str, gained))}" if gained else "",
            )
            if part
        )
        words.append(f"ISR {delta} → {_list(after['isr'])}")
    if before["replicas"] != after["replicas"]:
        words.append(f"replicas {_list(before['replicas'])}→{_list(after['replicas'])}")
    words += _reassignment_words(before, after)
    for name, label in (("eligibleLeaderReplicas", "ELR"), ("lastKnownElr", "last-known ELR")):
        if before[name] != after[name]:
            words.append(f"{label} {_list(before[name])}→{_list(after[name])}")
    if before["directories"] != after["directories"] and before["replicas"] == after["replicas"]:
        words += [
            f"replica {r} directory {directory(d0)}→{directory(d1)}"
            for r, d0, d1 in zip(after["replicas"], before["directories"], after["directories"], strict=True)
            if d0 != d1
        ]
    return words


def _reassignment_words(before: State, after: State) -> list[str]:
    was = bool(before["addingReplicas"] or before["removingReplicas"])
    now = bool(after["addingReplicas"] or after["removingReplicas"])
    if not was and now:
        moves = [
            f"{label} {_list(after[name])}"
            for name, label in (("addingReplicas", "adding"), ("removingReplicas", "removing"))
            if after[name]
        ]
        return [f"reassignment started ({', '.join(moves)})"]
    if was and not now:
        replicas = set(after["replicas"])
        if set(before["addingReplicas"]) <= replicas and not set(before["removingReplicas"]) & replicas:
            return ["reassignment completed"]
        if not set(before["addingReplicas"]) & replicas:
            return ["reassignment cancelled"]
        return ["reassignment ended"]
    return [
        f"{label} {_list(before[name])}→{_list(after[name])}"
        for name, label in (("addingReplicas", "adding replicas"), ("removingReplicas", "removing replicas"))
        if before[name] != after[name]
    ]


def _endpoints(endpoints: Iterable[Mapping[str, Any]]) -> str:
    return ", ".join(f"{e['name']}://{e['host']}:{e['port']}" for e in endpoints)


def _features(features: Iterable[Mapping[str, Any]]) -> str:
    return ", ".join(f"{f['name']} {f['minSupportedVersion']}-{f['maxSupportedVersion']}" for f in features)


def broker_events(before: State | None, after: State | None) -> list[str]:
    """What changed from one broker state to the next, in words (see docs/health.md)."""
    if after is None:
        return [] if before is None else ["unregistered"]
    details = (
        f"endpoints {_endpoints(after['endPoints'])}, rack {after['rack'] or 'none'}, "
        f"features {_features(after['features'])}"
    )
    if before is None:
        return [
            f"registered (epoch {after['brokerEpoch']}, incarnation {after['incarnationId']}, {details})"
            + ("; fenced" if after["fenced"] else "")
        ]
    words = []
    if before["brokerEpoch"] != after["brokerEpoch"] or before["incarnationId"] != after["incarnationId"]:
        incarnation = (
            "same incarnation"
            if before["incarnationId"] == after["incarnationId"]
            else f"new incarnation {after['incarnationId']}"
        )
        words.append(f"re-registered (epoch {before['brokerEpoch']}→{after['brokerEpoch']}, {incarnation}, {details})")
    else:
        for name, label, show in (
            ("endPoints", "endpoints", _endpoints),
            ("features", "features", _features),
            ("rack", "rack", lambda v: v or "none"),
        ):
            if before[name] != after[name]:
                words.append(f"{label} {show(before[name])} → {show(after[name])}")
    if before["fenced"] != after["fenced"]:
        words.append("fenced" if after["fenced"] else "unfenced")
    if before["inControlledShutdown"] != after["inControlledShutdown"]:
        words.append("controlled shutdown entered" if after["inControlledShutdown"] else "controlled shutdown left")
    if before["logDirs"] != after["logDirs"]:
        words.append(f"log dirs {_list(before['logDirs'])}→{_list(after['logDirs'])}")
    words += _cordoned(before["cordonedLogDirs"], after["cordonedLogDirs"])
    if before["isMigratingZkBroker"] != after["isMigratingZkBroker"]:
        words.append(f"migrating ZK broker {before['isMigratingZkBroker']}→{after['isMigratingZkBroker']}")
    return words


def _cordoned(before: list[str] | None, after: list[str] | None) -> list[str]:
    """Cordoned log directories (Kafka 4.3+) in words: each newly cordoned and uncordoned one, or that the broker
    reported its (empty) list for the first time."""
    if before == after:
        return []
    old, new = before or [], after or []
    words = [f"log dir {d} cordoned" for d in new if d not in old]
    words += [f"log dir {d} uncordoned" for d in old if d not in new]
    if before is None and not words:
        words.append("cordoned log dirs reported: none")
    return words


def topic_events(before: State | None, after: State | None, earlier_ids: set[str]) -> list[str]:
    """What changed from one topic state to the next, in words (see docs/health.md)."""
    old = before or {"topicId": None, "partitions": 0, "configs": {}}
    new = after or {"topicId": None, "partitions": 0, "configs": {}}
    words = []
    if old["topicId"] != new["topicId"]:
        if old["topicId"] is not None:
            words.append(f"deleted (topic id {old['topicId']})")
        if new["topicId"] is not None:
            others = earlier_ids - {new["topicId"]}
            if others:
                words.append(
                    f"re-created under the same name with a new id {new['topicId']} "
                    f"(was {', '.join(sorted(others))}), {new['partitions']} partitions"
                )
            else:
                words.append(f"created (topic id {new['topicId']}, {new['partitions']} partitions)")
    elif old["partitions"] != new["partitions"]:
        verb = "added" if new["partitions"] > old["partitions"] else "removed"
        words.append(f"partitions {verb}: {old['partitions']}→{new['partitions']}")
    for name in sorted(old["configs"].keys() | new["configs"].keys()):
        was, now = old["configs"].get(name), new["configs"].get(name)
        if was == now:
            continue
        if now is None:
            words.append(f"config {name} deleted (was {was})")
        elif was is None:
            words.append(f"config {name} set to {now}")
        else:
            words.append(f"config {name} changed {was}→{now}")
    return words


def _changes(before: State | None, after: State | None, fields: Sequence[str]) -> list[Change]:
    old, new = before or {}, after or {}
    return [Change(field=f, before=old.get(f), after=new.get(f)) for f in fields if old.get(f) != new.get(f)]


def _topic_changes(before: State | None, after: State | None) -> list[Change]:
    old = before or {"topicId": None, "partitions": None, "configs": {}}
    new = after or {"topicId": None, "partitions": None, "configs": {}}
    out = _changes(old, new, ("topicId", "partitions"))
    for name in sorted(old["configs"].keys() | new["configs"].keys()):
        if old["configs"].get(name) != new["configs"].get(name):
            out.append(Change(field=f"configs.{name}", before=old["configs"].get(name), after=new["configs"].get(name)))
    return out


Describe = Callable[[State | None, State | None, set[str]], tuple[list[Change], list[str]]]


def _history(
    window: VersionWindow,
    segments: Sequence[_Segment],
    key: State,
    fields: Sequence[str],
    describe: Describe,
    topic_id: Callable[[State], str | None],
) -> History:
    """The entries of ``segments`` that overlap the window, each described against the segment
    before it (an absent state shows ``key`` and null ``fields``)."""
    versions = []
    seen: set[str] = set()  # topic ids the name had before
    previous: _Segment | None = None
    for segment in segments:
        if segment.start <= window.last_offset and (segment.end is None or segment.end > window.first_offset):
            before = previous.state if previous is not None and previous.end == segment.start else None
            changes, events = describe(before, segment.state, seen)
            state = segment.state if segment.state is not None else {**key, **dict.fromkeys(fields)}
            time = segment.time if segment.time is not None else window.time_at(segment.start)
            versions.append(
                HistoryVersion(
                    fromOffset=segment.start,
                    toOffset=segment.end,
                    fromTime=None if time is None else iso_time(time),
                    changes=changes,
                    events=events,
                    **state,
                )
            )
        if segment.state is not None and topic_id(segment.state) is not None:
            seen.add(topic_id(segment.state))  # type: ignore[arg-type]
        previous = segment
    return History(versions=versions)


def _part_history(
    window: VersionWindow,
    part: str,
    rows: list[dict[str, Any]],
    key: State,
    events: Callable[[State | None, State | None, set[str]], list[str]],
    topic_id: Callable[[State], str | None],
) -> History:
    fields = [c for c in window.part(part).column_names if c not in _VERSION_COLUMNS and c not in key]
    segments = _segments(rows, [*key, *fields])

    def describe(before: State | None, after: State | None, seen: set[str]) -> tuple[list[Change], list[str]]:
        return _changes(before, after, fields), events(before, after, seen)

    return _history(window, segments, key, fields, describe, topic_id)


def partition_history(
    window: VersionWindow, topic: str, partition: int, directory: Callable[[str], str] = str
) -> History:
    """The states of partition ``partition`` of the topic named ``topic`` over the window (the
    window must hold every version of that partition: a topic and partition selection); the words
    write a directory id with ``directory`` (default: its Uuid string, as in the JSON; for people:
    :func:`image.uuids.directory_name`)."""
    rows = [r for r in _rows(window.partitions) if r["topic"] == topic and r["partitionId"] == partition]
    return _part_history(
        window,
        "partitions",
        rows,
        {"topic": topic, "partitionId": partition},
        lambda b, a, seen: partition_events(b, a, seen, directory),
        lambda s: s["topicId"],
    )


def broker_history(window: VersionWindow, broker: int) -> History:
    """The states of broker ``broker`` over the window (a broker selection)."""
    rows = [r for r in _rows(window.brokers) if r["brokerId"] == broker]
    return _part_history(
        window, "brokers", rows, {"brokerId": broker}, lambda b, a, _: broker_events(b, a), lambda s: None
    )


def topic_states(window: VersionWindow, topic: str) -> list[_Segment]:
    """The states of the topic named ``topic``: a sweep over the boundaries of its topic rows,
    its partitions' rows and its TOPIC config rows (a state exists while the name has a live
    topic or configs)."""
    events: dict[int, list[tuple[int, str, Any]]] = defaultdict(list)  # offset → (order, kind, value)
    times: dict[int, int] = {}

    def add(rows: Iterable[Mapping[str, Any]], kind: str, value: Callable[[Mapping[str, Any]], Any]) -> None:
        for r in rows:
            events[r["from_offset"]].append((1, f"+{kind}", value(r)))
            times[r["from_offset"]] = r["from_time"]
            if r["to_offset"] is not None:
                events[r["to_offset"]].append((0, f"-{kind}", value(r)))

    add((r for r in _rows(window.topics) if r["name"] == topic), "topic", lambda r: (r["from_offset"], r["topicId"]))
    add((r for r in _rows(window.partitions) if r["topic"] == topic), "partition", lambda r: r["topicId"])
    add(
        (r for r in _rows(window.configs) if r["resourceType"] == "TOPIC" and r["resourceName"] == topic),
        "config",
        lambda r: (r["name"], r["value"]),
    )
    live: set[tuple[int, str]] = set()
    partitions: dict[str, int] = defaultdict(int)
    configs: dict[str, str] = {}
    segments: list[_Segment] = []
    for offset in sorted(events):
        for _, kind, value in sorted(events[offset], key=lambda e: e[0]):  # ends before starts
            if kind == "+topic":
                live.add(value)
            elif kind == "-topic":
                live.discard(value)
            elif kind == "+partition":
                partitions[value] += 1
            elif kind == "-partition":
                partitions[value] -= 1
            elif kind == "+config":
                configs[value[0]] = value[1]
            elif configs.get(value[0]) == value[1]:
                del configs[value[0]]
        topic_id = max(live)[1] if live else None
        state = None
        if topic_id is not None or configs:
            state = {
                "name": topic,
                "topicId": topic_id,
                "partitions": partitions[topic_id] if topic_id else 0,
                "configs": dict(sorted(configs.items())),
            }
        if segments and segments[-1].state == state or not segments and state is None:
            continue
        if segments:
            last = segments[-1]
            segments[-1] = _Segment(last.start, offset, last.state, last.time)
        segments.append(_Segment(offset, None, state, times.get(offset)))
    return segments


TOPIC_FIELDS = ("topicId", "partitions", "configs")


def topic_history(window: VersionWindow, topic: str) -> History:
    """The states of the topic named ``topic`` over the window (a topic selection)."""

    def describe(before: State | None, after: State | None, seen: set[str]) -> tuple[list[Change], list[str]]:
        return _topic_changes(before, after), topic_events(before, after, seen)

    return _history(
        window, topic_states(window, topic), {"name": topic}, TOPIC_FIELDS, describe, lambda s: s["topicId"]
    )
