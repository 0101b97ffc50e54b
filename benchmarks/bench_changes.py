"""Benchmark: every broker's local changes (and optionally apply plans) between two images on Spark.

Synthetic cluster built with ``spark.range`` (no log): ``--brokers`` brokers, ``--topics`` topics
with ``--partitions`` partitions in total, replication factor ``--rf``, one JBOD directory per
broker. The delta is a rolling restart that moves **every** leader to the next replica (leader
and partition epochs +1), so every partition is touched: one PartitionChangeRecord each in the
synthetic ``partition_changes`` table. Prints one JSON line: sizes, wall times per stage, rows,
peak RSS of the Spark driver JVM and of this Python process.

    python benchmarks/bench_changes.py --brokers 1000 --partitions 1000000 --topics 1000 [--apply]
"""

from __future__ import annotations

import argparse
import json
import resource
import time
from pathlib import Path
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from image.temporal.spark.frames import SCHEMAS, ImageFrames
from metadata.lake.spark import get_spark
from metadata.lake.spark_store import spark_schema
from metadata.lake.tables import TYPED_TABLES
from replica.spark_changes import DeltaFrames
from replica.spark_plan import apply_plan


def _replicas(brokers: int, rf: int) -> Column:
    """RF distinct brokers per partition: (p + i·step) mod brokers with a step coprime-ish to brokers."""
    step = brokers // rf + 1
    return F.array(*[((F.col("id") + i * step) % brokers).cast("int") for i in range(rf)])


def partitions_frame(spark: SparkSession, args: argparse.Namespace, *, after: bool) -> DataFrame:
    """The partitions part of an image; ``after``: every leader moved to the next replica."""
    per_topic = args.partitions // args.topics
    replicas = _replicas(args.brokers, args.rf)
    leader_index = 2 if after else 1
    frame = spark.range(args.partitions).select(
        F.format_string("topic-%05d", (F.col("id") / per_topic).cast("long")).alias("topic"),
        F.format_string("T%021d", (F.col("id") / per_topic).cast("long")).alias("topicId"),
        (F.col("id") % per_topic).cast("int").alias("partitionId"),
        replicas.alias("replicas"),
        replicas.alias("isr"),
        F.array().cast("array<int>").alias("removingReplicas"),
        F.array().cast("array<int>").alias("addingReplicas"),
        F.element_at(replicas, leader_index).alias("leader"),
        F.lit(0).alias("leaderRecoveryState"),
        F.lit(6 if after else 5).alias("leaderEpoch"),
        F.lit(11 if after else 10).alias("partitionEpoch"),
        F.transform(replicas, lambda b: F.format_string("D%021d", b)).alias("directories"),
        F.array().cast("array<int>").alias("eligibleLeaderReplicas"),
        F.array().cast("array<int>").alias("lastKnownElr"),
    )
    return frame.select(*[F.col(f.name).cast(f.dataType) for f in SCHEMAS["partitions"].fields])


def image(spark: SparkSession, args: argparse.Namespace, *, after: bool) -> ImageFrames:
    """An image with the synthetic partitions, topics, brokers and metadata.version 3.9-IV0."""
    empty = ImageFrames.from_json(
        spark,
        {
            "offset": 2 if after else 1,
            "epoch": 1,
            "timestamp": 0,
            "features": {"metadata.version": 21},
            "producerIds": {"nextProducerId": 0},
        },
    )
    partitions = partitions_frame(spark, args, after=after).cache()
    topics = partitions.select(F.col("topic").alias("name"), "topicId").distinct().cache()
    brokers = (
        spark.range(args.brokers)
        .select(
            F.col("id").cast("int").alias("brokerId"),
            F.lit(1).cast("long").alias("brokerEpoch"),
            F.lit("incarnation").alias("incarnationId"),
            F.lit(False).alias("fenced"),
            F.lit(False).alias("inControlledShutdown"),
            F.lit(False).alias("isMigratingZkBroker"),
            F.lit(None).cast("string").alias("rack"),
            F.array(
                F.struct(
                    F.lit("PLAINTEXT").alias("name"),
                    F.format_string("broker-%d", "id").alias("host"),
                    F.lit(9092).alias("port"),
                    F.lit(0).alias("securityProtocol"),
                )
            ).alias("endPoints"),
            F.array().cast(SCHEMAS["brokers"]["features"].dataType).alias("features"),
            F.array(F.format_string("D%021d", "id")).alias("logDirs"),
        )
        .cache()
    )
    parts = {**empty.parts(), "partitions": partitions, "topics": topics, "brokers": brokers}
    return ImageFrames(**parts)


def tables(spark: SparkSession, args: argparse.Namespace) -> dict[str, DataFrame]:
    """Typed tables of the delta: one PartitionChangeRecord (offset 2) per partition, nothing else."""
    per_topic = args.partitions // args.topics
    out = {name: spark.createDataFrame([], spark_schema(t.schema())) for name, t in TYPED_TABLES.items()}
    schema = spark_schema(TYPED_TABLES["partition_changes"].schema())
    changes = spark.range(args.partitions).select(
        F.lit(2).cast("long").alias("offset"),
        F.format_string("T%021d", (F.col("id") / per_topic).cast("long")).alias("topic_id"),
        (F.col("id") % per_topic).cast("int").alias("partition_id"),
    )
    out["partition_changes"] = changes.select(
        *[
            F.col(f.name) if f.name in changes.columns else F.lit(None).cast(f.dataType).alias(f.name)
            for f in schema.fields
        ]
    ).cache()
    return out


def _peak_rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return -1


def timed(label: str, results: dict[str, Any], action: Any) -> Any:
    start = time.perf_counter()
    value = action()
    results[f"{label}Seconds"] = round(time.perf_counter() - start, 2)
    return value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--brokers", type=int, default=1000)
    parser.add_argument("--partitions", type=int, default=1_000_000)
    parser.add_argument("--topics", type=int, default=1000)
    parser.add_argument("--rf", type=int, default=3)
    parser.add_argument("--apply", action="store_true", help="Also materialise every broker's apply plan.")
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--driver-memory", default="6g")
    parser.add_argument("--shuffle-partitions", type=int, default=8)
    args = parser.parse_args()

    results: dict[str, Any] = {"bench": "replica-changes", **{k: v for k, v in vars(args).items()}}
    spark = timed(
        "sparkStart",
        results,
        lambda: get_spark(args.master, shuffle_partitions=args.shuffle_partitions, driver_memory=args.driver_memory),
    )
    before = image(spark, args, after=False)
    after = image(spark, args, after=True)
    typed = tables(spark, args)
    timed(
        "buildImages",
        results,
        lambda: (
            before.partitions.count(),
            after.partitions.count(),
            typed["partition_changes"].count(),
            before.brokers.count(),
            after.brokers.count(),
            before.topics.count(),
            after.topics.count(),
        ),
    )
    delta = DeltaFrames(before, after, typed.__getitem__, 1, 2)
    timed("localChanges", results, lambda: delta.changes.write.format("noop").mode("overwrite").save())
    per_kind = timed(
        "perBrokerSummary",
        results,
        lambda: {
            r["kind"]: (r["rows"], r["brokers"])
            for r in delta.changes.groupBy("kind")
            .agg(F.count("*").alias("rows"), F.countDistinct("broker").alias("brokers"))
            .collect()
        },
    )
    results["changeRows"] = {k: v[0] for k, v in per_kind.items()}
    results["brokersWithChanges"] = max((v[1] for v in per_kind.values()), default=0)
    results["electedLeaders"] = timed("electedCount", results, lambda: delta.changes.where("electedLeader").count())
    timed("oneBrokerJson", results, lambda: delta.changes_json(broker=7))
    if args.apply:
        plan = apply_plan(delta, num_replica_fetchers=4)
        timed("applyPlanAllBrokers", results, lambda: plan.write.format("noop").mode("overwrite").save())
    jvm_pid = spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid()
    results["driverJvmPeakRssMB"] = round(_peak_rss_kb(jvm_pid) / 1024)
    results["pythonPeakRssMB"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    print(json.dumps(results))


if __name__ == "__main__":
    main()
