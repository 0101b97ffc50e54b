"""Building the temporal image: the sharded replay on Spark against the reference engine and Kafka's own replay.

    python benchmarks/bench_versions.py --sizes 1e5,1e6 --kinds gen,idle,hot,txn --out versions.json
    python benchmarks/bench_versions.py --sizes 1e7 --kinds gen --cores 1,2 --places spark --no-reference
    python benchmarks/bench_versions.py --sizes 1e7 --kinds gen --places spark --no-reference --incremental 10000
    python benchmarks/bench_versions.py --sizes 1e7 --kinds gen --only-incremental 10000 --repeat 10

Per log (``benchmarks/common.py`` logs: ``gen-N`` a churning cluster, ``idle-N`` NoOps; here also ``hot-N``,
one topic taking the churn, and ``txn-N``, every topic creation a metadata transaction):

* **records lake** — the log ingested once without the temporal image (cached under the data directory);
* **build** — :func:`image.temporal.build.build_versions` (plan jobs + the one replay pass) and
  :func:`image.temporal.build.write_versions` (the Delta writes) from the empty image, on ``local[N]`` for each
  ``--cores`` N (a fresh Python process each, so JVM start and warm-up are measured apart: by default the
  sharded build is run twice in one session and both are reported, then once on the driver — the lake read
  in process, one recorder; ``--places`` chooses); Spark stages and py4j calls of the pass; driver and JVM RSS;
* **reference** — :func:`image.temporal.versions.record_versions`, the same recorder sequentially on the driver, and
  the plain reference replay (:func:`image.replay.replay_to`) on the same records (decoded once, not timed);
* **kafka** (``--oracle``) — Kafka's own MetadataLoader replay of the log (KraftOracle, ``bench_kafka.py``);
* **incremental** (``--incremental K``, or ``--only-incremental K`` for nothing else) — a lake holding the
  log's first records and their versions takes one more ingest of the next K records (``image.temporal.ingest.ingest``
  of a segment cut at a batch boundary) in a warm session; ``--repeat N``: N copies of that lake take it
  one after the other (the later ones measure the warmed-up session).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import common  # noqa: E402

KINDS = ("gen", "idle", "hot", "txn")


def hot_log(n: int, data_dir: str) -> common.BenchLog:
    """One topic of 256 partitions takes the churn (the shard holding it does nearly all the work)."""
    return _shaped_log("hot", n, data_dir, brokers=6, topics=1, partitions=256, per_churn=7.0)


def txn_log(n: int, data_dir: str) -> common.BenchLog:
    """Topics of 32 partitions: every creation is a metadata transaction (the generator writes creations of
    more than 24 records as one)."""
    return _shaped_log("txn", n, data_dir, brokers=6, topics=24, partitions=32, per_churn=7.0)


def _shaped_log(
    kind: str, n: int, data_dir: str, *, brokers: int, topics: int, partitions: int, per_churn: float
) -> common.BenchLog:
    from generator import generate

    churn = max(1, round(n / per_churn))
    params = {
        "format": 1,
        "kind": kind,
        "n": n,
        "brokers": brokers,
        "topics": topics,
        "partitions": partitions,
        "churn": churn,
    }
    out = Path(data_dir) / f"{kind}-{common.size_label(n)}"
    meta = out / "bench-log.json"
    if meta.exists() and json.loads(meta.read_text()).get("params") == params:
        return common.BenchLog(**json.loads(meta.read_text()))
    common.progress(f"generating {out.name}")
    t0 = time.perf_counter()
    r = generate(
        7,
        brokers,
        topics,
        partitions,
        churn,
        out,
        snapshot_at=max(1, n // 2),
        noop_interval_ms=common.NOOP_INTERVAL_MS,
        segment_bytes=common.KAFKA_SEGMENT_BYTES,
    )
    log = common.BenchLog.generated(out.name, kind, r, t0, params)
    meta.write_text(json.dumps(log.__dict__, indent=2) + "\n")
    return log


def bench_log(kind: str, n: int, data_dir: str) -> common.BenchLog:
    return {"gen": common.generated_log, "idle": common.idle_log, "hot": hot_log, "txn": txn_log}[kind](n, data_dir)


def records_lake(log: common.BenchLog, data_dir: str) -> str:
    """The log's records in a lake without the temporal image (cached)."""
    lake = Path(data_dir) / "records-lakes" / log.name
    marker = lake / "bench-lake.json"
    if marker.exists() and json.loads(marker.read_text()).get("records") == log.records:
        return str(lake)
    shutil.rmtree(lake, ignore_errors=True)
    from metadata.lake.ingest import ingest

    common.progress(f"ingesting {log.name} (records only)")
    ingest([log.dir], str(lake), spark=common.spark_session()[0], progress=False)
    marker.write_text(json.dumps({"records": log.records}) + "\n")
    return str(lake)


class _Py4jCalls:
    """Counts the driver's py4j round trips (classic sessions)."""

    def __init__(self) -> None:
        self.n = 0

    def __enter__(self) -> _Py4jCalls:
        from py4j.clientserver import ClientServerConnection

        self._original = ClientServerConnection.send_command
        counter = self

        def counted(conn, command, *args, **kwargs):  # type: ignore[no-untyped-def]
            counter.n += 1
            return counter._original(conn, command, *args, **kwargs)

        ClientServerConnection.send_command = counted  # type: ignore[method-assign]
        return self

    def __exit__(self, *exc: object) -> None:
        from py4j.clientserver import ClientServerConnection

        ClientServerConnection.send_command = self._original  # type: ignore[method-assign]


def _stages(spark, group: str) -> tuple[int, int]:
    """(jobs, stages) Spark ran for the job group."""
    tracker = spark.sparkContext.statusTracker()
    jobs = tracker.getJobIdsForGroup(group)
    stages = sum(len(tracker.getJobInfo(j).stageIds) for j in jobs if tracker.getJobInfo(j) is not None)
    return len(jobs), stages


def build_once(lake_dir: str, shards: int | None, place: str) -> dict[str, Any]:
    """One full build of the temporal image of a records lake (in this process's session, into a copy of the
    lake: every build creates the versions tables), sharded on Spark or (``place="driver"``) as one shard on
    the driver."""
    import tempfile

    from image.temporal.build import build_versions, write_versions
    from metadata.lake.protocol import Commit, Lake, LakeTransaction

    spark = common.spark_session()[0]
    copy = tempfile.mkdtemp(prefix="bench-lake-")  # every build writes into a fresh copy of the records lake
    shutil.copytree(lake_dir, copy, dirs_exist_ok=True)
    lake = Lake(copy, spark)
    state = lake.state()
    group = f"bench-{time.monotonic_ns()}"
    spark.sparkContext.setJobGroup(group, "versions build")
    staging = tempfile.mkdtemp(prefix="bench-versions-")
    try:
        with _Py4jCalls() as calls, common.timer() as t_pass:
            report, _ = build_versions(lake, state, shards=shards, place=place, staging=staging)
        jobs, stages = _stages(spark, group)
        written: list[str] = []

        def body(txn: LakeTransaction) -> Commit:
            written[:] = write_versions(txn, state, staging)
            return Commit(inputs=[], records_added=0, snapshots_added=0, high_water_mark=state.high_water_mark)

        with common.timer() as t_write:
            lake.transact(body)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        shutil.rmtree(copy, ignore_errors=True)
    return {
        "pass_s": t_pass["s"],
        "write_s": t_write["s"],
        "total_s": t_pass["s"] + t_write["s"],
        "jobs": jobs,
        "stages": stages,
        "py4j_calls": calls.n,
        "shards": report.shards,
        "replayed": report.records,
        "versions": report.versions,
        "tables": len(written),
    }


def child_build(args: argparse.Namespace) -> int:
    """``--child``: the builds of ``--places`` in one fresh session (by default two sharded builds, cold then
    warm, then one on the driver),
    printed as JSON."""
    os.environ["KRAFT_REPLAY_MASTER"] = f"local[{args.child_cores}]"
    spark, jvm = common.spark_session()
    with common.MemorySampler(jvm) as mem:
        runs = [build_once(args.child, args.shards, place) for place in args.places.split(",")]
    print(json.dumps({"runs": runs, **mem.result()}))
    return 0


def build_rows(
    log: common.BenchLog, lake_dir: str, cores: list[int], shards: int | None, places: str
) -> list[dict[str, Any]]:
    rows = []
    for n in cores:
        common.progress(f"building the temporal image of {log.name} on local[{n}]")
        proc = subprocess.run(
            [
                sys.executable,
                __file__,
                "--child",
                lake_dir,
                "--child-cores",
                str(n),
                "--places",
                places,
                *(["--shards", str(shards)] if shards else []),
            ],
            capture_output=True,
            text=True,
            timeout=7200,
        )
        if proc.returncode != 0:
            raise RuntimeError(proc.stderr[-3000:])
        doc = json.loads(proc.stdout.strip().splitlines()[-1])
        for i, (place, run) in enumerate(zip(places.split(","), doc["runs"], strict=True)):
            rows.append(
                {
                    "log": log.name,
                    "records": log.records,
                    "engine": f"spark local[{n}]" if place == "spark" else f"driver (local[{n}] session)",
                    "run": ("cold" if i == 0 else "warm"),
                    **run,
                    "rec_per_s": common.per_s(log.records, run["total_s"]),
                    "driver_peak_rss_mb": doc.get("driver_peak_rss_mb"),
                    "jvm_peak_rss_mb": doc.get("jvm_peak_rss_mb"),
                    "load": common.load_average()[0],
                }
            )
    return rows


def reference_rows(log: common.BenchLog) -> list[dict[str, Any]]:
    from image.replay import replay_to
    from image.temporal.versions import record_versions
    from metadata.log.readers import read_log, read_snapshots

    records, snapshots = read_log(log.dir), read_snapshots(log.dir)
    rows = []
    with common.MemorySampler(None) as mem:
        with common.timer() as t:
            recorded = record_versions(records, snapshots)
    rows.append(
        {
            "log": log.name,
            "records": log.records,
            "engine": "reference recorder (sequential)",
            "total_s": t["s"],
            "rec_per_s": common.per_s(log.records, t["s"]),
            "versions": sum(len(v) for v in recorded.versions.values()),  # type: ignore[attr-defined]
            "driver_peak_rss_mb": mem.result()["driver_peak_rss_mb"],
            "load": common.load_average()[0],
        }
    )
    del recorded
    with common.timer() as t:
        replay_to(records, lenient=True)
    rows.append(
        {
            "log": log.name,
            "records": log.records,
            "engine": "reference replay (no versions)",
            "total_s": t["s"],
            "rec_per_s": common.per_s(log.records, t["s"]),
            "load": common.load_average()[0],
        }
    )
    return rows


def kafka_rows(log: common.BenchLog, version: str = "4.1.1") -> list[dict[str, Any]]:
    """Kafka's own replay of the whole log (KraftOracle's MetadataLoader, best of 3 after a warm-up)."""
    import bench_kafka

    return [bench_kafka.kafka_oracle(log, version, "log", 1, 3, "default heap")]


def split_log(log_dir: str, cut: int, out: Path) -> tuple[Path, Path]:
    """``log_dir``'s records as two log directories: offsets before ``cut`` (rounded down to a batch start)
    and the rest — a log that grows by the records after the cut."""
    import struct

    head, tail = out / "head" / "__cluster_metadata-0", out / "tail" / "__cluster_metadata-0"
    head.mkdir(parents=True)
    tail.mkdir(parents=True)
    for segment in sorted(Path(log_dir).glob("*.log")):
        data = segment.read_bytes()
        pos = 0
        while pos + 12 <= len(data):
            base, length = struct.unpack_from(">qi", data, pos)
            if base >= cut:
                break
            pos += 12 + length
        if pos:
            (head / segment.name).write_bytes(data[:pos])
        if pos < len(data):
            base = struct.unpack_from(">q", data, pos)[0]
            (tail / f"{base:020d}.log").write_bytes(data[pos:])
    return head, tail


def incremental_rows(log: common.BenchLog, data_dir: str, k: int, repeat: int = 1) -> list[dict[str, Any]]:
    """A lake with the log up to its last K records (and their versions) takes an ingest of those K; with
    ``repeat`` N, N copies of that lake take it one after the other in the same session (the JIT warms up
    over the first few: the later ones are the warm session's time)."""
    from image.temporal.ingest import ingest

    spark = common.spark_session()[0]
    root = Path(data_dir) / "incremental" / log.name
    shutil.rmtree(root, ignore_errors=True)
    head, tail = split_log(log.dir, log.last_offset - k + 1, root)
    base = str(root / "lake")
    common.progress(f"ingesting {log.name} minus its last {k} records, with the temporal image")
    with common.timer() as t_base:
        ingest([str(head)], base, spark=spark, progress=False)
    rows = []
    for run in range(repeat):
        lake = base if run == repeat - 1 else str(root / f"lake-{run}")
        if lake != base:
            shutil.copytree(base, lake)
        with common.timer() as t:
            report = ingest([str(tail)], lake, spark=spark, progress=False)
        if lake != base:
            shutil.rmtree(lake)
        rows.append(
            {
                "log": log.name,
                "records": log.records,
                "engine": f"incremental ingest of {k} records, run {run + 1} of {repeat} in the session "
                f"(build: {os.environ.get('KRAFT_REPLAY_BUILD', 'auto')})",
                "total_s": t["s"],
                "added": report.records_added,
                "base_ingest_s": t_base["s"],
                "load": common.load_average()[0],
            }
        )
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1e5")
    ap.add_argument("--kinds", default="gen")
    ap.add_argument("--cores", default="2", help="local[N] for each N (a fresh process each)")
    ap.add_argument("--shards", type=int, default=None)
    ap.add_argument("--oracle", action="store_true", help="also Kafka's own replay (Maven, Java)")
    ap.add_argument("--no-reference", action="store_true")
    ap.add_argument("--incremental", type=int, default=0, help="also an incremental ingest of K records")
    ap.add_argument("--only-incremental", type=int, default=0, help="only the incremental ingest of K records")
    ap.add_argument("--repeat", type=int, default=1, help="the incremental ingest into N copies, one after another")
    ap.add_argument("--data-dir", default=common.DEFAULT_DATA_DIR)
    ap.add_argument("--out")
    ap.add_argument(
        "--places",
        default="spark,spark,driver",
        help="the builds of each session, in order: spark (sharded) or driver; leave driver out at 10^7 "
        "records (it holds every record as a Python object: the box ran out of memory)",
    )
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--child-cores", type=int, default=2, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        return child_build(a)
    results: dict[str, Any] = {"machine": common.machine_info(), "rows": []}
    common.print_machine(results["machine"])
    cores = [int(c) for c in a.cores.split(",")]
    for n in common.parse_sizes(a.sizes):
        for kind in a.kinds.split(","):
            log = bench_log(kind, n, a.data_dir)
            if a.only_incremental:
                rows = incremental_rows(log, a.data_dir, a.only_incremental, a.repeat)
                results["rows"] += rows
                common.print_table(f"{log.name} ({log.records:,} records)", rows, ["engine", "total_s", "load"])
                continue
            lake = records_lake(log, a.data_dir)
            rows = build_rows(log, lake, cores, a.shards, a.places)
            if not a.no_reference:
                rows += reference_rows(log)
            if a.oracle:
                rows += kafka_rows(log)
            if a.incremental:
                rows += incremental_rows(log, a.data_dir, a.incremental, a.repeat)
            results["rows"] += rows
            common.print_table(
                f"{log.name} ({log.records:,} records)",
                rows,
                [
                    "engine",
                    "run",
                    "total_s",
                    "rec_per_s",
                    "pass_s",
                    "write_s",
                    "jobs",
                    "stages",
                    "py4j_calls",
                    "shards",
                    "versions",
                    "driver_peak_rss_mb",
                    "jvm_peak_rss_mb",
                    "load",
                ],
            )
    return common.finish(results, a.out)


if __name__ == "__main__":
    sys.exit(main())
