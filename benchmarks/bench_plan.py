"""Benchmark: the apply plan and the ZooKeeper-era requests in process (``replica.plan``, ``replica.zk``).

Synthetic log built with ``tests.logbuilder.LogBuilder`` (no lake): ``--brokers`` unfenced brokers,
``--topics`` topics with ``--partitions`` partitions in total, replication factor ``--rf``. The delta is
the rolling restart of ``bench_changes.py``: one PartitionChangeRecord per partition moving its leader to
the next replica, so every partition is touched. The images at both ends and the ONE delta come from
``image.replay.delta_between`` (timed as ``replay``); then each call is timed once: the plan of one broker
(``apply --broker``), of every broker, and the request documents of one broker and of every broker.
Prints one JSON line: sizes, wall seconds per stage, rows, peak RSS of this process.

    python benchmarks/bench_plan.py --brokers 30 --topics 300 --partitions 30000
"""

from __future__ import annotations

import argparse
import json
import resource
import time
from typing import Any

from image.replay import delta_between
from replica.plan import apply_plan_rows
from replica.zk import leader_and_isr_doc
from tests.logbuilder import LogBuilder, feature_level, partition, partition_change, register_broker, topic, uuid


def rolling_restart(brokers: int, topics: int, partitions: int, rf: int) -> tuple[LogBuilder, int, int]:
    """The log and the window (A, B] of the rolling restart."""
    log = LogBuilder()
    log.batch(
        feature_level("metadata.version", 21), *[register_broker(b, 10 + b, fenced=False) for b in range(brokers)]
    )
    per_topic = partitions // topics
    step = brokers // rf + 1
    replicas = {
        (t, p): [(t * per_topic + p + i * step) % brokers for i in range(rf)]
        for t in range(topics)
        for p in range(per_topic)
    }
    for t in range(topics):
        log.batch(
            topic(f"topic-{t:05d}", uuid(t + 1)), *[partition(uuid(t + 1), p, replicas[t, p]) for p in range(per_topic)]
        )
    a = log.next_offset - 1
    for t in range(topics):
        log.batch(*[partition_change(uuid(t + 1), p, leader=replicas[t, p][1]) for p in range(per_topic)])
    return log, a, log.next_offset - 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--brokers", type=int, default=30)
    parser.add_argument("--topics", type=int, default=300)
    parser.add_argument("--partitions", type=int, default=30000)
    parser.add_argument("--rf", type=int, default=3)
    args = parser.parse_args()
    log, a, b = rolling_restart(args.brokers, args.topics, args.partitions, args.rf)
    result: dict[str, Any] = {
        "brokers": args.brokers,
        "topics": args.topics,
        "partitions": args.partitions,
        "rf": args.rf,
        "records": len(log.records),
        "seconds": {},
        "rows": {},
    }

    def timed(name: str, fn: Any) -> Any:
        t0 = time.perf_counter()
        value = fn()
        result["seconds"][name] = round(time.perf_counter() - t0, 3)
        return value

    images = timed("replay", lambda: delta_between(log.records, a, b))
    result["rows"]["apply one broker"] = len(timed("apply one broker", lambda: apply_plan_rows(*images, brokers=[0])))
    result["rows"]["apply every broker"] = len(timed("apply every broker", lambda: apply_plan_rows(*images)))
    one = timed("requests one broker", lambda: leader_and_isr_doc(*images, controller_epoch=1, broker=0))
    result["rows"]["requests one broker"] = sum(
        len(r.get("partitionStates", r.get("topicStates", []))) for r in one["requests"]
    )
    every = timed("requests every broker", lambda: leader_and_isr_doc(*images, controller_epoch=1))
    result["rows"]["requests every broker"] = len(every["brokers"])
    result["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
