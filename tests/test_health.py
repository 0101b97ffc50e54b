"""Timeline and history against the reference engine.

The oracle (tests/versions_oracle.py) replays each log to every offset with ``replay_to`` and
derives version rows from the images; on the real-Kafka fixtures, small generated logs and a
hand-made incident log:

* every timeline point's gauges equal ``image_gauges`` of the reference image at its offset, and
  its counters equal what consecutive reference images imply, for points at every offset, evenly
  spaced points, time-spaced points and one point per change over sub-windows;
* the history of every partition, topic and broker equals the sequence of that key's states in
  the reference images at every offset.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from generator import generate
from image.replay import replay_to
from image.temporal.reads import MemorySource
from image.temporal.version_rows import Selection, load
from image.temporal.window import Window
from image.views.health import Gauges, image_gauges, min_insync_replicas, min_insync_settings
from image.views.history import broker_history, partition_history, topic_history
from image.views.timeline import points_at_changes, points_by_count, points_every, timeline
from metadata.log.readers import read_log
from metadata.log.records import LogRecord
from tests.health_logs import incident_log
from tests.kafka_logs import KAFKA_FIXTURES
from tests.versions_oracle import oracle_source

FIXTURES = {
    f"{p.parent.name}-{p.name}": p / "__cluster_metadata-0"
    for p in KAFKA_FIXTURES
    if p.name not in ("retention", "snapshot-fetch")
    and not (p.name == "rolling-restart" and p.parent.name not in ("3.9.1", "4.4.0"))
}
"""The real-Kafka logs that hold every record from offset 0 (the oracle replays records only; the logs
truncated to a snapshot are covered by tests/test_versions.py): every release's basic log and its other
scenarios, the rolling restart of the oldest and the newest release (those of 4.1.1 and 4.3.2 go through the
same fencing, elections and ISR changes; tests/test_versions.py replays them at every offset)."""
GENERATED = {
    "gen-5-4-4-2-80": (5, 4, 4, 2, 80),
    "gen-11-3-3-2-100": (11, 3, 3, 2, 100),
    "gen-23-5-3-3-100": (23, 5, 3, 3, 100),
}
"""Generated logs of about 200-250 records (the oracle is O(n²)), each with elections, ISR shrinks and expansions."""
LOGS = [*FIXTURES, *GENERATED, "incident"]
GAUGES = tuple(Gauges.model_fields)

Images = list[tuple[LogRecord, dict[str, Any]]]


@cache
def _log(name: str, tmp: Path) -> tuple[list[LogRecord], MemorySource, Images]:
    if name in FIXTURES:
        records = read_log(FIXTURES[name])
    elif name in GENERATED:
        out = tmp / name
        generate(*GENERATED[name], out, noop_interval_ms=3_600_000, write_aux_files=False)
        records = read_log(out)
    else:
        records = incident_log()
    source, images = oracle_source(records)
    return records, source, images


@pytest.fixture(scope="module", params=LOGS)
def log(request, tmp_path_factory) -> tuple[list[LogRecord], MemorySource, Images]:
    return _log(request.param, tmp_path_factory.getbasetemp())


def _gauges(point: Any) -> dict[str, Any]:
    return {k: v for k, v in point.model_dump().items() if k in GAUGES}


def _step_counters(images: Images) -> dict[int, tuple[int, int, int]]:
    """Per offset: (elections, ISR shrinks, ISR expansions) between the images before and at it."""
    out, before = {}, {}
    for record, image in images:
        now = {(p["topicId"], p["partitionId"]): p for p in image["partitions"]}
        elections = shrinks = expansions = 0
        for key, p in now.items():
            q = before.get(key)
            if q is None:
                continue
            elections += p["leader"] != -1 and p["leader"] != q["leader"]
            shrinks += bool(set(q["isr"]) - set(p["isr"]))
            expansions += bool(set(p["isr"]) - set(q["isr"]))
        out[record.offset] = (elections, shrinks, expansions)
        before = now
    return out


def _check_points(points: list, records: list[LogRecord], images: Images, first: int) -> None:
    """Gauges from the reference image at each point; counters summed over its interval."""
    by_offset = {r.offset: image for r, image in images}
    steps = _step_counters(images)
    previous = first - 1
    assert points, "no points"
    for point in points:
        assert _gauges(point) == image_gauges(by_offset[point.offset]).model_dump(), point.offset
        interval = [r for r in records if previous < r.offset <= point.offset]
        sums = [sum(steps[r.offset][i] for r in interval) for i in range(3)]
        assert [point.elections, point.isrShrinks, point.isrExpansions] == sums, point.offset
        assert point.recordsByType == dict(sorted(Counter(r.type or r.control_type for r in interval).items()))
        previous = point.offset


def test_every_offset_equals_the_reference_image(log):
    records, source, images = log
    window = load(source, Window(), Selection())
    points = timeline(window, [(r.offset, r.timestamp) for r in records]).points
    assert [p.offset for p in points] == [r.offset for r in records]
    _check_points(points, records, images, records[0].offset)


def _sub_window(records: list[LogRecord]) -> tuple[int, int]:
    return records[len(records) // 3].offset, records[2 * len(records) // 3].offset


def test_spaced_points_over_a_sub_window(log):
    records, source, images = log
    first, last = _sub_window(records)
    window = load(source, Window(from_offset=first, to_offset=last), Selection())
    assert (window.first_offset, window.last_offset) == (first, last)
    by_count = timeline(window, points_by_count(window, 7)).points
    assert len(by_count) == 7 and by_count[-1].offset == last
    _check_points(by_count, records, images, first)
    # a fresh replay to a point gives the same image as the oracle's
    middle = by_count[3]
    assert _gauges(middle) == image_gauges(replay_to(records, middle.offset).to_json()).model_dump()

    start, end = records[len(records) // 3].timestamp, records[2 * len(records) // 3].timestamp
    by_time = load(source, Window(from_time=start, to_time=end), Selection())
    step = max(1, (end - start) // 9)
    spaced = timeline(by_time, points_every(by_time, step)).points
    assert len(spaced) == (end - start) // step + 1
    for point in spaced:  # each at the last offset appended at or before its time, like --at-time
        ms = int(parse(point.time))
        assert point.offset == max(r.offset for r in records if r.timestamp <= ms)
    _check_points(
        [p for i, p in enumerate(spaced) if i == 0 or p.offset != spaced[i - 1].offset],
        records,
        images,
        by_time.first_offset,
    )


def parse(time: str) -> int:
    from image.temporal.times import parse_time  # the CLI's own parser of --from-time / --to-time

    return parse_time(time)


def test_one_point_per_change(log):
    records, source, images = log
    first, last = _sub_window(records)
    window = load(source, Window(from_offset=first, to_offset=last), Selection())
    points = timeline(window, points_at_changes(window)).points
    _check_points(points, records, images, first)
    by_offset = {r.offset: image for r, image in images}
    for record in records:  # between change points the gauges do not move
        if first <= record.offset <= last:
            at = [p for p in points if p.offset <= record.offset][-1]
            assert image_gauges(by_offset[record.offset]).model_dump() == _gauges(at), record.offset


def test_point_times_resolve_back_to_their_offsets(log):
    _, source, _ = log
    window = load(source, Window(), Selection())
    for point in timeline(window, points_by_count(window, 25)).points:
        resolved = Window(to_time=parse(point.time)).records(source)[1]
        assert resolved >= point.offset
        assert window.time_at(resolved) == parse(point.time)


def _runs(images: Images, state_of: Callable[[dict[str, Any]], dict[str, Any] | None]) -> list[tuple]:
    """(from, to, state) runs of a key's state over every offset, from its first appearance."""
    runs: list[list] = []
    previous = None
    for record, image in images:
        state = state_of(image)
        if state != previous:
            if runs:
                runs[-1][1] = record.offset
            if runs or state is not None:
                runs.append([record.offset, None, state])
            previous = state
    return [tuple(r) for r in runs]


def _history_runs(history, exists: str) -> list[tuple]:
    return [(v.fromOffset, v.toOffset, v.state if v.state[exists] is not None else None) for v in history.versions]


def _topic_state(image: dict[str, Any], name: str) -> dict[str, Any] | None:
    ids = [t["topicId"] for t in image["topics"] if t["name"] == name]
    configs = {
        c["name"]: c["value"] for c in image["configs"] if c["resourceType"] == "TOPIC" and c["resourceName"] == name
    }
    if not ids and not configs:
        return None
    topic_id = ids[0] if ids else None
    return {
        "name": name,
        "topicId": topic_id,
        "partitions": sum(p["topicId"] == topic_id for p in image["partitions"]),
        "configs": dict(sorted(configs.items())),
    }


def test_history_equals_the_states_at_every_offset(log):
    _, source, images = log
    topics = sorted({t["name"] for _, image in images for t in image["topics"]})
    assert topics
    for name in topics:
        window = load(source, Window(), Selection(topic=name))
        history = topic_history(window, name)
        expected = _runs(images, lambda image: _topic_state(image, name))
        assert [
            (v.fromOffset, v.toOffset, v.state if v.state["topicId"] or v.state["configs"] else None)
            for v in history.versions
        ] == expected, name
        for pid in sorted({p["partitionId"] for _, image in images for p in image["partitions"] if p["topic"] == name}):
            window = load(source, Window(), Selection(topic=name, partition=pid))
            expected = _runs(
                images,
                lambda image: next(
                    (p for p in image["partitions"] if p["topic"] == name and p["partitionId"] == pid), None
                ),
            )
            assert _history_runs(partition_history(window, name, pid), "topicId") == expected, (name, pid)
    for broker in sorted({b["brokerId"] for _, image in images for b in image["brokers"]}):
        window = load(source, Window(), Selection(broker=broker))
        expected = _runs(images, lambda image: next((b for b in image["brokers"] if b["brokerId"] == broker), None))
        assert _history_runs(broker_history(window, broker), "brokerEpoch") == expected, broker


def test_history_of_a_window_keeps_the_versions_overlapping_it(log):
    records, source, images = log
    first, last = _sub_window(records)
    broker = images[-1][1]["brokers"][0]["brokerId"] if images[-1][1]["brokers"] else 1
    whole = broker_history(load(source, Window(), Selection(broker=broker)), broker).versions
    part = broker_history(
        load(source, Window(from_offset=first, to_offset=last), Selection(broker=broker)), broker
    ).versions
    assert part == [v for v in whole if v.fromOffset <= last and (v.toOffset is None or v.toOffset > first)]


# ---- definitions on hand-made images ---------------------------------------------------------------


def _partition(topic: str, leader: int, replicas: list[int], isr: list[int], **extra: Any) -> dict[str, Any]:
    return {
        "topic": topic,
        "topicId": topic,
        "partitionId": 0,
        "replicas": replicas,
        "isr": isr,
        "removingReplicas": [],
        "addingReplicas": [],
        "leader": leader,
        **extra,
    }


def _config(kind: str, name: str, value: str) -> dict[str, str]:
    return {"resourceType": kind, "resourceName": name, "name": "min.insync.replicas", "value": value}


def test_min_insync_replicas_resolves_topic_then_broker_then_cluster_then_one():
    settings = min_insync_settings(
        [
            _config("TOPIC", "t", "3"),
            _config("BROKER", "2", "2"),
            _config("BROKER", "", "4"),
            {"resourceType": "TOPIC", "resourceName": "u", "name": "retention.ms", "value": "1"},
        ]
    )
    assert min_insync_replicas(settings, "t", 2) == 3
    assert min_insync_replicas(settings, "u", 2) == 2
    assert min_insync_replicas(settings, "u", 1) == 4
    assert min_insync_replicas({}, "u", 1) == 1
    assert min_insync_settings([_config("TOPIC", "t", " 2 ")]) == {("TOPIC", "t"): 2}
    with pytest.raises(ValueError, match="config TOPIC 't' min.insync.replicas='two' is not an integer"):
        min_insync_settings([_config("TOPIC", "t", "two")])


def test_gauges_of_an_image():
    image = {
        "partitions": [
            _partition("a", 1, [1, 2, 3], [1]),  # under min ISR 2 (topic), under-replicated
            _partition("a", -1, [1, 2, 3], []),  # offline: not counted under min ISR
            _partition("b", 2, [2], [2]),  # min(3, 1 replica) = 1: fine
            _partition("b", 3, [3, 1], [3], addingReplicas=[1]),  # min(3, 2) = 2 > 1; reassigning
        ],
        "brokers": [
            {"brokerId": b, "fenced": b == 4, "inControlledShutdown": b == 3, "cordonedLogDirs": cordoned}
            for b, cordoned in ((1, None), (2, []), (3, ["AAAAAAAAAAAAAAAAAAABAQ"]), (4, None))
        ],
        "configs": [_config("TOPIC", "a", "2"), _config("BROKER", "", "3")],
    }
    assert image_gauges(image) == Gauges(
        offlinePartitions=1,
        underReplicatedPartitions=3,
        underMinIsrPartitions=2,
        fencedBrokers=[4],
        controlledShutdownBrokers=[3],
        cordonedBrokers=[3],
        reassigningPartitions=1,
        leadersPerBroker={"1": 1, "2": 1, "3": 1, "4": 0},
    )


# ---- the words of the incident log -------------------------------------------------------------------


@pytest.fixture(scope="module")
def incident(tmp_path_factory) -> MemorySource:
    return _log("incident", tmp_path_factory.getbasetemp())[1]


def _events(history) -> list[list[str]]:
    return [v.events for v in history.versions]


def test_partition_words(incident):
    history = partition_history(load(incident, Window(), Selection(topic="orders", partition=1)), "orders", 1)
    assert _events(history) == [
        ["created (topic id AAAAAAAAAAAAAAAAAAAADQ): replicas [2,3,1], leader 2, ISR [2,3,1]"],
        ["ISR −3,1 → [2]"],
        ["leader 2→none (offline)", "ISR −2 → []", "ELR []→[2]", "last-known ELR []→[2]"],
        [
            "leader none→3 (unclean recovery)",
            "leader recovering (log may be truncated)",
            "ISR +3 → [3]",
            "ELR [2]→[]",
            "last-known ELR [2]→[]",
        ],
        ["leader recovery completed"],
        ["ISR +1 → [3,1]"],
        ["deleted with topic id AAAAAAAAAAAAAAAAAAAADQ"],
    ]
    offline = history.versions[2]
    assert {c.field: (c.before, c.after) for c in offline.changes} == {
        "isr": ([2], []),
        "leader": (2, -1),
        "leaderEpoch": (0, 1),
        "partitionEpoch": (1, 2),
        "eligibleLeaderReplicas": ([], [2]),
        "lastKnownElr": ([], [2]),
    }
    deleted = history.versions[-1]
    assert deleted.toOffset is None and deleted.state["topic"] == "orders" and deleted.state["leader"] is None
    words = [
        e
        for v in partition_history(
            load(incident, Window(), Selection(topic="orders", partition=0)), "orders", 0
        ).versions
        for e in v.events
    ]
    assert "leader none→2 (recovery from ELR)" in words and "leader 2→1 (election)" in words
    assert words[-1].startswith("re-created (topic id AAAAAAAAAAAAAAAAAAAADg)")
    words = [
        e
        for v in partition_history(
            load(incident, Window(), Selection(topic="orders", partition=2)), "orders", 2
        ).versions
        for e in v.events
    ]
    assert "reassignment started (adding [4], removing [3])" in words and "reassignment completed" in words
    words = [
        e
        for v in partition_history(load(incident, Window(), Selection(topic="audit", partition=0)), "audit", 0).versions
        for e in v.events
    ]
    assert "reassignment cancelled" in words and "leader 4" not in " ".join(words)  # the aborted transaction


def test_broker_words(incident):
    history = broker_history(load(incident, Window(), Selection(broker=3)), 3)
    assert [e.split(" (")[0] for v in history.versions for e in v.events] == [
        "registered",
        "unfenced",
        "controlled shutdown entered",
        "fenced",
        "re-registered",
        "controlled shutdown left",
        "unfenced",
    ]
    assert "epoch 13→40, same incarnation, endpoints PLAINTEXT://b3:9092, rack rack-3" in history.versions[4].events[0]
    assert _events(broker_history(load(incident, Window(), Selection(broker=4)), 4))[-2:] == [
        ["fenced"],
        ["unregistered"],
    ]


def test_topic_words(incident):
    history = topic_history(load(incident, Window(), Selection(topic="orders")), "orders")
    words = [e for v in history.versions for e in v.events]
    assert words == [
        "created (topic id AAAAAAAAAAAAAAAAAAAADQ, 0 partitions)",
        "partitions added: 0→1",
        "partitions added: 1→2",
        "partitions added: 2→3",
        "config min.insync.replicas set to 2",
        "config retention.ms set to 3600000",
        "config min.insync.replicas deleted (was 2)",
        "deleted (topic id AAAAAAAAAAAAAAAAAAAADQ)",
        "config retention.ms deleted (was 3600000)",
        (
            "re-created under the same name with a new id AAAAAAAAAAAAAAAAAAAADg (was AAAAAAAAAAAAAAAAAAAADQ), "
            "0 partitions"
        ),
        "partitions added: 0→1",
        "config cleanup.policy set to compact",
    ]
    assert history.versions[-1].model_dump()["changes"] == [
        {"field": "configs.cleanup.policy", "before": None, "after": "compact"}
    ]
    assert list(history.versions[0].model_dump()) == [
        "fromOffset",
        "toOffset",
        "fromTime",
        "name",
        "topicId",
        "partitions",
        "configs",
        "changes",
        "events",
    ]
    assert history.versions[0].fromTime == "2026-01-01T00:02:00.000Z"


def test_incident_timeline_counts_min_isr_at_each_level(incident):
    window = load(incident, Window(from_offset=17, to_offset=22), Selection())
    points = timeline(window, [(o, window.time_at(o)) for o in range(17, 23)]).points
    assert [p.underMinIsrPartitions for p in points] == [
        0,  # 17 orders-0 ISR [1,2]: topic min ISR 2
        1,  # 18 orders-1 (leader 2) ISR [2] < topic 2, although broker 2's own value is 1
        2,  # 19 audit-0 ISR [1] < min(cluster default 3, 2 replicas)
        2,  # 20 topic config deleted: orders-1 falls to broker 2's 1, orders-0 (leader 1) to the cluster's 3
        1,  # 21 orders-0 ISR back to 3
        0,  # 22 audit-0 ISR back to 2
    ]
