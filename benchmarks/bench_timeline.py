"""Benchmark: the health timeline (``image.views.timeline.timeline``) over many version rows, in process.

Synthetic version rows built with numpy/Arrow (no log, no replay): ``--partitions`` partitions with
``--versions`` partition versions in total (replication factor 3 over ``--brokers`` brokers; each new
version a random leader, 1 % leaderless, a random ISR of 1-3 replicas), two broker versions per
broker, and ``--configs`` min.insync.replicas config versions (topic, per-broker and cluster-default)
that cut the partition rows into config epochs. One record per version boundary. Prints one JSON
line: sizes, wall time of building the rows, of choosing the points and of the timeline, peak RSS.

    python benchmarks/bench_timeline.py --versions 10000000 --partitions 100000 --points 1000
"""

from __future__ import annotations

import argparse
import json
import resource
import time

import numpy as np
import pyarrow as pa

from image.temporal.version_rows import VersionWindow, empty
from image.views.timeline import points_by_count, timeline


def _lists(values: np.ndarray, lengths: np.ndarray) -> pa.ListArray:
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    return pa.ListArray.from_arrays(pa.array(offsets), pa.array(values.astype(np.int32)))


def build(args: argparse.Namespace) -> VersionWindow:
    rng = np.random.default_rng(7)
    n, parts, brokers = args.versions, args.partitions, args.brokers
    version = np.arange(n)
    partition = version % parts
    start = version.astype(np.int64)  # version i of partition p starts at offset i (i ≡ p mod parts)
    end = np.where(version + parts < n, start + parts, -1)
    first = (partition * 7) % brokers
    replicas = np.stack([first, (first + 1) % brokers, (first + 2) % brokers], axis=1)
    isr_len = rng.integers(1, 4, n)
    leader = np.where(rng.random(n) < 0.01, -1, replicas[version, rng.integers(0, 3, n)])
    topics = partition // 10
    table = pa.table(
        {
            "topic": pa.array([f"t{t}" for t in range(parts // 10 + 1)]).take(pa.array(topics)),
            "topicId": pa.array([f"id{t}" for t in range(parts // 10 + 1)]).take(pa.array(topics)),
            "partitionId": pa.array((partition % 10).astype(np.int32)),
            "replicas": _lists(replicas.ravel(), np.full(n, 3)),
            "isr": _lists(replicas[np.arange(3)[None, :] < isr_len[:, None]], isr_len),  # first isr_len replicas
            "removingReplicas": _lists(np.zeros(0), np.zeros(n, dtype=np.int64)),
            "addingReplicas": _lists(np.zeros(0), np.zeros(n, dtype=np.int64)),
            "leader": pa.array(leader.astype(np.int32)),
            "from_offset": pa.array(start),
            "to_offset": pa.array(end, mask=end < 0),
        }
    )
    broker_rows = pa.table(
        {
            "brokerId": pa.array(np.tile(np.arange(brokers), 2).astype(np.int32)),
            "fenced": pa.array(np.repeat([True, False], brokers)),
            "inControlledShutdown": pa.array(np.zeros(2 * brokers, dtype=bool)),
            "from_offset": pa.array(np.concatenate([np.zeros(brokers), np.full(brokers, n // 2)]).astype(np.int64)),
            "to_offset": pa.array(
                np.concatenate([np.full(brokers, n // 2), np.zeros(brokers)]).astype(np.int64),
                mask=np.repeat([False, True], brokers),
            ),
        }
    )
    cuts = np.sort(rng.integers(0, n, args.configs))
    resources = (
        [("BROKER", "")]
        + [("TOPIC", f"t{i}") if i % 2 else ("BROKER", str(i % brokers)) for i in range(1, args.configs)]
    )[: args.configs]  # one version each
    configs = pa.table(
        {
            "resourceType": pa.array([kind for kind, _ in resources], pa.string()),
            "resourceName": pa.array([name for _, name in resources], pa.string()),
            "name": pa.array(["min.insync.replicas"] * args.configs, pa.string()),
            "value": pa.array([str(v) for v in rng.integers(1, 4, args.configs)], pa.string()),
            "from_offset": pa.array(cuts.astype(np.int64)),
            "to_offset": pa.array(np.minimum(cuts + n // 10, n - 1).astype(np.int64)),
        }
    )
    records = pa.table(
        {
            "offset": pa.array(np.arange(n, dtype=np.int64)),
            "timestamp": pa.array(1_700_000_000_000 + 10 * np.arange(n, dtype=np.int64)),
            "type": pa.array(["PARTITION_CHANGE_RECORD"] * n),
        }
    )
    return VersionWindow(
        0, n - 1, topics=empty("topics"), partitions=table, brokers=broker_rows, configs=configs, records=records
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--versions", type=int, default=1_000_000)
    parser.add_argument("--partitions", type=int, default=100_000)
    parser.add_argument("--brokers", type=int, default=100)
    parser.add_argument("--configs", type=int, default=50)
    parser.add_argument("--points", type=int, default=1000)
    args = parser.parse_args()
    t0 = time.perf_counter()
    window = build(args)
    t1 = time.perf_counter()
    points = points_by_count(window, args.points)
    t2 = time.perf_counter()
    result = timeline(window, points)
    t3 = time.perf_counter()
    print(
        json.dumps(
            {
                "versions": args.versions,
                "partitions": args.partitions,
                "brokers": args.brokers,
                "config_versions": args.configs,
                "points": len(result.points),
                "build_s": round(t1 - t0, 2),
                "points_s": round(t2 - t1, 2),
                "timeline_s": round(t3 - t2, 2),
                "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024,
                "max_offline": max(p.offlinePartitions for p in result.points),
                "max_under_min_isr": max(p.underMinIsrPartitions for p in result.points),
                "elections": sum(p.elections for p in result.points),
            }
        )
    )


if __name__ == "__main__":
    main()
