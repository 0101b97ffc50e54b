"""The health timeline of a window: interval aggregations over version rows, without replaying.

A point at offset X has the gauges of the image at X (:mod:`image.views.health`) and counters over
the records since the previous point. Every gauge is a sum over the version rows valid at X of
a per-row contribution, so the whole timeline is one sweep: each row adds its contribution at
``from_offset`` and removes it at ``to_offset``; the events are bucketed to the first point at
or after them and summed cumulatively (``numpy.bincount`` + ``cumsum``), per broker where the
gauge is per broker. Under-min-ISR also depends on the min.insync.replicas configs, so partition
rows are first cut where one of those configs changes (config epochs) and each piece gets the
value resolved for its topic, its leader and its epoch.

Counters compare consecutive versions of a partition (same key, one ending where the next
begins) and count at the later version's ``from_offset``:

* election — the new version has a leader (not -1) different from the previous version's leader
  (a move, a recovery of an offline partition, or an unclean election; partition creation and
  the same leader with a bumped epoch are not elections);
* ISR shrink / expansion — a replica of the previous ISR is missing from / a replica not in the
  previous ISR is in the new ISR (one version can be both; one count each per version, as
  Kafka's IsrShrinksPerSec / IsrExpandsPerSec mark once per ISR update);
* records by type — the records in the interval (control records by control type).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from image.temporal.times import iso_time
from image.temporal.version_rows import VersionWindow
from image.views.health import (
    CLUSTER_DEFAULT,
    DEFAULT_MIN_INSYNC_REPLICAS,
    MIN_INSYNC_REPLICAS,
    NO_LEADER,
    Timeline,
    TimelinePoint,
    parse_min_insync,
)
from metadata.log.errors import BadInput

OPEN = np.iinfo(np.int64).max
"""``to_offset`` of a version that is still current."""

MAX_POINTS = 100_000

Point = tuple[int, int]
"""(offset, time in epoch ms) of a timeline point."""


def _ints(column: pa.ChunkedArray | pa.Array, null: int = OPEN) -> np.ndarray:
    return pc.fill_null(pc.cast(column, pa.int64()), null).to_numpy()


def _lengths(column: pa.ChunkedArray) -> np.ndarray:
    return _ints(pc.list_value_length(column), 0)


class _Sweep:
    """Bucketing of offsets onto the points (sorted offsets ``P``; ties allowed)."""

    def __init__(self, offsets: np.ndarray) -> None:
        self.offsets = offsets
        self.n = len(offsets)

    def bucket(self, offsets: np.ndarray) -> np.ndarray:
        """Index of the first point at or after each offset (``n`` past the last point)."""
        return np.searchsorted(self.offsets, offsets, side="left")

    def gauge(self, start: np.ndarray, end: np.ndarray, weight: np.ndarray) -> np.ndarray:
        """Per point, the sum of ``weight`` over the rows with ``start <= point < end``."""
        size = self.n + 1
        acc = np.bincount(self.bucket(start), weights=weight, minlength=size) - np.bincount(
            self.bucket(end), weights=weight, minlength=size
        )
        return np.rint(np.cumsum(acc)[: self.n]).astype(np.int64)

    def gauge_by(
        self, start: np.ndarray, end: np.ndarray, group: np.ndarray, groups: int, weight: np.ndarray
    ) -> np.ndarray:
        """Like :meth:`gauge`, per group: a ``(points, groups)`` matrix."""
        size = (self.n + 1) * groups
        acc = np.bincount(self.bucket(start) * groups + group, weights=weight, minlength=size) - np.bincount(
            self.bucket(end) * groups + group, weights=weight, minlength=size
        )
        return np.rint(np.cumsum(acc.reshape(self.n + 1, groups), axis=0)[: self.n]).astype(np.int64)

    def count(self, offsets: np.ndarray, first: int) -> np.ndarray:
        """Per point, how many of ``offsets`` (at or after ``first``) fall in its interval."""
        kept = offsets[offsets >= first]
        return np.bincount(self.bucket(kept), minlength=self.n + 1)[: self.n]


def _min_isr_settings(configs: pa.Table) -> pa.Table:
    kept = pc.and_(
        pc.equal(configs.column("name"), MIN_INSYNC_REPLICAS),
        pc.is_in(configs.column("resourceType"), pa.array(["TOPIC", "BROKER"])),
    )
    return configs.filter(kept)


def _under_min_isr(sweep: _Sweep, partitions: pa.Table, configs: pa.Table) -> np.ndarray:
    """Per point, the partitions with a leader whose ISR is below min(min.insync.replicas, |replicas|)."""
    led = partitions.filter(pc.not_equal(partitions.column("leader"), NO_LEADER))
    start, end = _ints(led.column("from_offset")), _ints(led.column("to_offset"))
    settings = _min_isr_settings(configs)
    c_start, c_end = _ints(settings.column("from_offset")), _ints(settings.column("to_offset"))
    cuts = np.unique(np.concatenate([c_start, c_end[c_end != OPEN]]))
    lower = np.concatenate([[np.iinfo(np.int64).min], cuts])  # epoch k = [lower[k], upper[k])
    upper = np.concatenate([cuts, [OPEN]])

    # rows cut into one piece per config epoch they overlap
    first_epoch = np.searchsorted(cuts, start, side="right")
    last_epoch = np.searchsorted(cuts, end - 1, side="right")
    pieces = last_epoch - first_epoch + 1
    row = np.repeat(np.arange(led.num_rows), pieces)
    epoch = first_epoch[row] + np.arange(len(row)) - np.repeat(np.cumsum(pieces) - pieces, pieces)
    piece_start, piece_end = np.maximum(start[row], lower[epoch]), np.minimum(end[row], upper[epoch])

    # each setting version's resource (an index) and value; looked up by (resource, offset)
    kinds, names = settings.column("resourceType").to_pylist(), settings.column("resourceName").to_pylist()
    columns: dict[tuple[str, str], int] = {}
    setting_resource = np.array([columns.setdefault(r, len(columns)) for r in zip(kinds, names)], dtype=np.int64)
    setting_value = np.array(
        [parse_min_insync(v, r) for r, v in zip(zip(kinds, names), settings.column("value").to_pylist())],
        dtype=np.int64,
    )

    # the settings sorted by (resource, from_offset) once, as one integer key per version
    low = min(int(c_start.min(initial=0)), int(piece_start.min(initial=0)))
    span = max(int(c_start.max(initial=0)), int(piece_start.max(initial=0))) - low + 1
    order = np.lexsort((c_start, setting_resource))
    keys = setting_resource[order] * span + (c_start[order] - low)

    def value_at(resource: np.ndarray) -> np.ndarray:
        """Per piece, the value of the setting of ``resource`` (-1: none) holding at its start (-1: none)."""
        found = np.full(len(piece_start), -1, dtype=np.int64)
        asked = np.flatnonzero(resource >= 0)
        if not len(asked) or not len(keys):
            return found
        at = piece_start[asked]
        i = np.searchsorted(keys, resource[asked] * span + (at - low), side="right") - 1
        version = order[np.maximum(i, 0)]
        hit = (i >= 0) & (setting_resource[version] == resource[asked]) & (at < c_end[version])
        found[asked[hit]] = setting_value[version[hit]]
        return found

    # each piece's topic, leader and cluster-default resource (-1: never configured), lowest precedence first
    topic = led.column("topic").combine_chunks().dictionary_encode()
    topic_column = np.array(
        [columns.get(("TOPIC", t), -1) for t in topic.dictionary.to_pylist()] + [-1], dtype=np.int64
    )[topic.indices.to_numpy()]
    leader = _ints(led.column("leader"))
    leaders = np.unique(leader)
    leader_column = np.array([columns.get(("BROKER", str(b)), -1) for b in leaders] + [-1], dtype=np.int64)[
        np.searchsorted(leaders, leader)
    ]
    min_isr = np.full(len(row), DEFAULT_MIN_INSYNC_REPLICAS, dtype=np.int64)
    for column in (
        np.full(len(row), columns.get(("BROKER", CLUSTER_DEFAULT), -1)),
        leader_column[row],
        topic_column[row],
    ):
        found = value_at(column)
        min_isr[found >= 0] = found[found >= 0]
    under = _lengths(led.column("isr"))[row] < np.minimum(min_isr, _lengths(led.column("replicas"))[row])
    return sweep.gauge(piece_start, piece_end, under.astype(np.float64))


def _successions(partitions: pa.Table) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """For each version that follows another version of its partition: its ``from_offset`` and
    whether it is an election, an ISR shrink, an ISR expansion."""
    if partitions.num_rows < 2:
        nothing = np.zeros(0, dtype=np.int64)
        return nothing, nothing.astype(bool), nothing.astype(bool), nothing.astype(bool)
    # versions in (topic, partition, from_offset) order, sorted as integer columns (topic ids by dictionary code)
    topic = partitions.column("topicId").combine_chunks().dictionary_encode().indices.to_numpy().astype(np.int64)
    partition = _ints(partitions.column("partitionId"))
    start, end = _ints(partitions.column("from_offset")), _ints(partitions.column("to_offset"))
    order = np.lexsort((start, partition, topic))
    t, p, s, e = topic[order], partition[order], start[order], end[order]
    follows = (t[:-1] == t[1:]) & (p[:-1] == p[1:]) & (e[:-1] == s[1:])
    prev, this = order[:-1][follows], order[1:][follows]
    leader = _ints(partitions.column("leader"))
    before, after = leader[prev], leader[this]
    elections = (after != NO_LEADER) & (after != before)
    isr = partitions.column("isr").combine_chunks()

    def members(rows: np.ndarray) -> np.ndarray:
        """Pair index × 2^32 + replica id + 1, for every ISR member of the versions ``rows``."""
        taken = isr.take(pa.array(rows, pa.int64()))
        parents = pc.list_parent_indices(taken).to_numpy().astype(np.int64)
        return (parents << 32) + pc.list_flatten(taken).to_numpy().astype(np.int64) + 1

    def missing(keys: np.ndarray, others: np.ndarray) -> np.ndarray:
        """Pair indices of the ``keys`` not in ``others`` (a sorted search: faster than hashing here)."""
        if len(others) == 0:
            return keys >> 32
        others = np.sort(others)
        at = np.minimum(np.searchsorted(others, keys), len(others) - 1)
        return keys[others[at] != keys] >> 32

    old, new = members(prev), members(this)
    shrinks = np.zeros(len(prev), dtype=bool)
    shrinks[missing(old, new)] = True
    expansions = np.zeros(len(prev), dtype=bool)
    expansions[missing(new, old)] = True
    return start[this], elections, shrinks, expansions


_PARTITION_COLUMNS = (
    "topic",
    "topicId",
    "partitionId",
    "from_offset",
    "to_offset",
    "leader",
    "isr",
    "replicas",
    "addingReplicas",
    "removingReplicas",
)
"""The partition version columns a timeline reads."""


def timeline(window: VersionWindow, points: Sequence[Point]) -> Timeline:
    """The timeline of ``window`` at ``points`` ((offset, time) pairs, offsets non-decreasing and
    within the window): gauges from the rows valid at each point, counters per interval."""
    offsets = np.array([o for o, _ in points], dtype=np.int64)
    if len(offsets) == 0:
        return Timeline(points=[])
    if np.any(np.diff(offsets) < 0):
        raise ValueError("timeline points must be in offset order")
    if offsets[0] < window.first_offset or offsets[-1] > window.last_offset:
        raise ValueError(
            f"timeline points {offsets[0]} … {offsets[-1]} are outside the window "
            f"{window.first_offset} … {window.last_offset}"
        )
    sweep = _Sweep(offsets)
    # the columns read below only: the filters and sorts copy what they are given (all columns of 10^7
    # versions, the directories' Uuids above all, took 20 GB)
    parts, brokers = window.partitions.select(list(_PARTITION_COLUMNS)), window.brokers
    p_start, p_end = _ints(parts.column("from_offset")), _ints(parts.column("to_offset"))
    leader = _ints(parts.column("leader"))
    adding, removing = _lengths(parts.column("addingReplicas")), _lengths(parts.column("removingReplicas"))
    offline = sweep.gauge(p_start, p_end, (leader == NO_LEADER).astype(np.float64))
    under_replicated = sweep.gauge(
        p_start, p_end, (_lengths(parts.column("isr")) < _lengths(parts.column("replicas"))).astype(np.float64)
    )
    reassigning = sweep.gauge(p_start, p_end, ((adding > 0) | (removing > 0)).astype(np.float64))
    under_min_isr = _under_min_isr(sweep, parts, window.configs)

    b_start, b_end = _ints(brokers.column("from_offset")), _ints(brokers.column("to_offset"))
    broker_id = _ints(brokers.column("brokerId"))
    ids = np.unique(np.concatenate([broker_id, leader[leader != NO_LEADER]]))
    b_group, ones = np.searchsorted(ids, broker_id), np.ones(brokers.num_rows)
    registered = sweep.gauge_by(b_start, b_end, b_group, len(ids), ones)
    fenced = sweep.gauge_by(b_start, b_end, b_group, len(ids), _ints(brokers.column("fenced"), 0).astype(np.float64))
    shutting = sweep.gauge_by(
        b_start, b_end, b_group, len(ids), _ints(brokers.column("inControlledShutdown"), 0).astype(np.float64)
    )
    cordoned = sweep.gauge_by(
        b_start, b_end, b_group, len(ids), (_lengths(brokers.column("cordonedLogDirs")) > 0).astype(np.float64)
    )
    led = leader != NO_LEADER
    leaders = sweep.gauge_by(
        p_start[led], p_end[led], np.searchsorted(ids, leader[led]), len(ids), np.ones(int(led.sum()))
    )

    first = window.first_offset
    changed_at, elections, shrinks, expansions = _successions(parts)
    election_counts = sweep.count(changed_at[elections], first)
    shrink_counts = sweep.count(changed_at[shrinks], first)
    expansion_counts = sweep.count(changed_at[expansions], first)

    records = window.records
    r_offsets = _ints(records.column("offset"))
    in_range = (r_offsets >= first) & (r_offsets <= offsets[-1])
    types = pc.fill_null(records.column("type"), "UNKNOWN").filter(pa.array(in_range))
    names = pc.unique(types).to_pylist()
    by_type = np.bincount(
        sweep.bucket(r_offsets[in_range]) * len(names)
        + pc.index_in(types, pa.array(names, pa.string())).to_numpy().astype(np.int64),
        minlength=(sweep.n + 1) * len(names),
    ).reshape(sweep.n + 1, len(names))
    type_order = sorted(range(len(names)), key=lambda i: names[i])

    out = []
    for i, (offset, time) in enumerate(points):
        out.append(
            TimelinePoint(
                offset=offset,
                time=iso_time(time),
                offlinePartitions=int(offline[i]),
                underReplicatedPartitions=int(under_replicated[i]),
                underMinIsrPartitions=int(under_min_isr[i]),
                fencedBrokers=[int(b) for b in ids[fenced[i] > 0]],
                controlledShutdownBrokers=[int(b) for b in ids[shutting[i] > 0]],
                cordonedBrokers=[int(b) for b in ids[cordoned[i] > 0]],
                reassigningPartitions=int(reassigning[i]),
                leadersPerBroker={
                    str(b): int(n) for b, n, r in zip(ids, leaders[i], registered[i], strict=True) if n > 0 or r > 0
                },
                elections=int(election_counts[i]),
                isrShrinks=int(shrink_counts[i]),
                isrExpansions=int(expansion_counts[i]),
                recordsByType={names[t]: int(by_type[i, t]) for t in type_order if by_type[i, t] > 0},
            )
        )
    return Timeline(points=out)


def _times(window: VersionWindow, offsets: np.ndarray) -> np.ndarray:
    """Append times of the records at ``offsets`` (every offset must be a record of the window)."""
    r_offsets = _ints(window.records.column("offset"))
    at = np.searchsorted(r_offsets, offsets)
    if np.any(at >= len(r_offsets)) or np.any(r_offsets[np.minimum(at, len(r_offsets) - 1)] != offsets):
        raise ValueError("a timeline point is not the offset of a record of the window")
    return _ints(window.records.column("timestamp"))[at]


def _with_times(window: VersionWindow, offsets: np.ndarray) -> list[Point]:
    return [(int(o), int(t)) for o, t in zip(offsets, _times(window, offsets), strict=True)]


def points_by_count(window: VersionWindow, count: int) -> list[Point]:
    """``count`` points evenly spaced over the window's records, the last at its last offset
    (fewer when the window has fewer records, none without); time = the append time at the offset."""
    if not 1 <= count <= MAX_POINTS:
        raise BadInput(f"--points must be between 1 and {MAX_POINTS}")
    r_offsets = _ints(window.records.column("offset"))
    if count == 1 or not len(r_offsets):
        return _with_times(window, r_offsets[-1:])
    wanted = np.linspace(window.first_offset, window.last_offset, count)
    at = np.unique(np.minimum(np.searchsorted(r_offsets, np.rint(wanted)), len(r_offsets) - 1))
    return _with_times(window, r_offsets[at])


def points_every(
    window: VersionWindow, step_ms: int, from_time: int | None = None, to_time: int | None = None
) -> list[Point]:
    """A point every ``step_ms`` from ``from_time`` (default: the window's first append time) to
    ``to_time`` (default: its last); each at the last offset appended at or before its time
    (as ``--at-time``), with that grid time. Grid times before the window's first record are
    left out (all of them when it has none)."""
    if step_ms <= 0:
        raise BadInput("--every must be positive")
    records = window.records
    r_offsets, r_times = _ints(records.column("offset")), _ints(records.column("timestamp"))
    if not len(r_offsets):  # no record appended in the window (a log of snapshots only)
        return []
    start = int(r_times[0]) if from_time is None else from_time
    end = int(r_times.max()) if to_time is None else to_time
    count = (end - start) // step_ms + 1
    if count > MAX_POINTS:
        raise BadInput(f"--every {step_ms} ms gives {count} points over the window; at most {MAX_POINTS}")
    grid = start + step_ms * np.arange(max(count, 0), dtype=np.int64)
    by_time = np.argsort(r_times, kind="stable")
    latest = np.maximum.accumulate(r_offsets[by_time])  # last offset appended at or before each time
    at = np.searchsorted(r_times[by_time], grid, side="right") - 1
    return [(int(latest[a]), int(t)) for a, t in zip(at, grid, strict=True) if a >= 0]


def points_at_changes(window: VersionWindow) -> list[Point]:
    """A point at the window's first record, at every offset where a partition, broker or
    min.insync.replicas config version begins or ends, and at the window's last record."""
    r_offsets = _ints(window.records.column("offset"))
    bounds = [r_offsets[:1], r_offsets[-1:]]
    for rows in (window.partitions, window.brokers, _min_isr_settings(window.configs)):
        bounds += [_ints(rows.column("from_offset")), _ints(rows.column("to_offset"))]
    offsets = np.unique(np.concatenate(bounds))
    offsets = offsets[(offsets >= window.first_offset) & (offsets <= window.last_offset)]
    return _with_times(window, offsets)
