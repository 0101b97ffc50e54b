"""Decode and ingest throughput of kraft-replay, and where the time goes.

Run from the repository root::

    python benchmarks/bench_ingest.py                       # 1e5 and 1e6 records, every stage
    python benchmarks/bench_ingest.py --sizes 1e5,1e6,1e7   # 1e7 too (≈ 800 MB of log; long)
    python benchmarks/bench_ingest.py --sizes 1e6 --stages decode,profile --out decode.json

Runtime on the 2-core dev machine (idle; double it under load): defaults ≈ 15 min (first run +1 min to
build the logs); with 1e7 ≈ 1 h (building gen-1e7 ≈ 5–8 min, 800 MB; each single-core pass ≈ 4 min).
Only the ``decode`` stage at 1e6: ≈ 2 min.

Logs (see ``benchmarks/common.py``; built once and cached under ``--data-dir``): ``gen-N``, a
generated mid-size cluster of about N records (snapshot half-way), and ``idle-N``, an idle cluster's
log (a NoOpRecord every 500 ms after a short generated prefix).

Stages (``--stages``):

* ``decode``: :func:`metadata.log.columns.decode_to_arrow` on one core in this process, and two
  reduced passes of the same loop to split its time: the readers with payloads as dicts
  (``iter_file_items``: batch framing, CRC, record values → dicts, NoOp runs as numpy arrays), the
  readers with payloads as JSON text (as ``decode_to_arrow`` reads), and the full Arrow output.
* ``profile``: cProfile of the full single-core decode of the largest log of ≤ ``--profile-size``
  records; self time grouped by component (builtins are charged to their main caller) + top functions.
* ``spark``: the Spark decode stage of ``ingest`` alone: the decode tasks decoding only (each
  returns a count), and ``metadata.lake.staging.stage`` (decode + the tasks' pyarrow Parquet staging).
* ``ingest``: :func:`metadata.lake.ingest.ingest` on Spark (records only) into a fresh lake, then the same input again
  (a re-ingest adds nothing), with its phases timed by wrapping its functions (``plan``, the Spark steps' ``stage``,
  ``groups``, ``check_conflicts`` and ``write``, taking the lake's lease, ``LakeTransaction._recover``,
  ``Lake.write`` per table, ``Lake.current_versions`` (in recovery, and in the commit's proof),
  ``LakeTransaction.commit`` (proof + ``_ingests`` row), ``remove``); plus a Delta commit micro-benchmark
  (appending 0 rows) to estimate how much of each append is Delta's commit protocol rather than Spark writing data.
  (The ingest in process, beside this one as whole processes: ``benchmarks/bench_engines.py``.)

Memory: driver = this process's peak RSS per stage (kernel VmHWM, reset per stage); for Spark the
JVM's peak RSS (VmHWM of the driver/executor JVM in local mode), its peak used heap (sampled via
``Runtime``), and the summed PSS of its Python workers (sampled every 0.25 s).
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import common
from common import BenchLog, MemorySampler, Phases, per_s, print_table, progress

STAGES = ("decode", "profile", "spark", "ingest")


# ---------------------------------------------------------------- single-core decode


def _tasks(log: BenchLog):
    from metadata.lake.ingest import plan

    return plan([log.dir])[0]


def decode_single_core(log: BenchLog, repeat: int) -> dict:
    """readers (payloads as dicts) / readers (payloads as JSON text) / full decode_to_arrow on one core;
    best of ``repeat``."""
    from metadata.log.columns import decode_to_arrow
    from metadata.log.readers import ReadOptions, iter_file_items

    tasks = _tasks(log)
    options = ReadOptions()

    def readers(json_payload: bool) -> int:
        n = 0
        for f, start, end in tasks:
            for _, item in iter_file_items(f, [], options, start, end, json_payload=json_payload):
                n += len(item) if not isinstance(item, tuple) else len(item[1])
        return n

    def rows_only() -> int:
        return readers(False)

    def rows_json() -> int:
        return readers(True)

    def full() -> int:
        return sum(b.num_rows for f, start, end in tasks for b in decode_to_arrow(f, options, [], start, end))

    nbytes = sum(f.size for f, s, e in tasks if s == 0)
    out: dict = {"log": log.name, "records": None, "MB": round(nbytes / 1e6, 2), "tasks": len(tasks)}
    for key, fn in (("rows_s", rows_only), ("rows_json_s", rows_json)):
        progress(f"decode {log.name}: {key[:-2]}")
        out[key], n = common.best_of(fn, repeat)
    progress(f"decode {log.name}: decode_to_arrow")
    with MemorySampler(None) as mem:
        out["arrow_s"], n = common.best_of(full, repeat)
    out["records"] = n
    out["driver_peak_rss_mb"] = mem.result()["driver_peak_rss_mb"]
    out["rec_per_s"] = per_s(n, out["arrow_s"])
    out["MB_per_s"] = per_s(nbytes / 1e6, out["arrow_s"])
    out["us_per_rec"] = out["arrow_s"] / n * 1e6 if n else None
    total = out["arrow_s"]
    out["binary_pct"] = 100 * out["rows_s"] / total
    out["json_pct"] = 100 * max(0.0, out["rows_json_s"] - out["rows_s"]) / total
    out["arrow_pct"] = 100 * max(0.0, total - out["rows_json_s"]) / total
    out["load"] = common.load_average()[0]
    return out


def warm_up_decode() -> float | None:
    """The first ``decode_to_arrow`` of a process pays one-time imports (``pa.array`` imports pandas):
    run it on a fixture before measuring; returns that first call's seconds."""
    from metadata.log.columns import decode_to_arrow
    from metadata.log.readers import ReadOptions, discover

    fixture = common.fixture_logs()[:1]
    if not fixture:
        return None
    with common.timer() as t:
        for f in discover(fixture[0].dir):
            for _ in decode_to_arrow(f, ReadOptions(), []):
                pass
    return t["s"]


# ---------------------------------------------------------------- profile


def _bucket(filename: str, func: str) -> str | None:
    f = filename.replace("\\", "/")
    if "pyarrow" in f or "pyarrow" in func:
        return "Arrow arrays (pyarrow)"
    if "/json/" in f:
        return "JSON payload text"
    if f.endswith("metadata/log/columns.py"):
        # flush() and _run_batch build the columns and call pa.array (not profiled itself)
        return (
            "Arrow arrays (pyarrow)"
            if func in ("flush", "_run_batch", "_record_batch", "_constant")
            else "row tuples (decode_to_arrow loop)"
        )
    if (
        f.endswith(("codec/records.py", "codec/message.py", "codec/primitives.py"))
        or func == "_data_record"
        or f == "<kraft-replay body readers>"
    ):
        return "record values → dicts / JSON text (codec)"
    if (
        f.endswith(("codec/batch.py", "codec/compression.py", "metadata/log/readers.py"))
        or "crc32c" in func
        or "numpy" in f
    ):
        return "batch framing, CRC (readers, codec.batch)"
    if "pydantic" in f:
        return "other"
    if f == "~":
        return None  # a builtin: charged to its main caller
    return "other"


def profile_decode(log: BenchLog) -> dict:
    from metadata.log.columns import decode_to_arrow
    from metadata.log.readers import ReadOptions

    tasks = _tasks(log)
    prof = cProfile.Profile()
    t0 = time.perf_counter()
    prof.enable()
    n = sum(b.num_rows for f, s, e in tasks for b in decode_to_arrow(f, ReadOptions(), [], s, e))
    prof.disable()
    wall = time.perf_counter() - t0
    stats = pstats.Stats(prof).stats  # (file, line, func) -> (cc, nc, tt, ct, callers)
    buckets: dict[str, float] = {}

    def bucket_of(key, depth: int = 0) -> str:
        b = _bucket(key[0], key[2])
        if b is not None or depth > 3:
            return b or "other"
        callers = stats[key][4]
        if not callers:
            return "other"
        main = max(callers.items(), key=lambda kv: kv[1][3] if len(kv[1]) > 3 else 0)[0]
        return bucket_of(main, depth + 1) if main in stats else "other"

    for key, (_, _, tt, _, _) in stats.items():
        b = bucket_of(key)
        buckets[b] = buckets.get(b, 0.0) + tt
    total = sum(buckets.values()) or 1.0
    top = sorted(stats.items(), key=lambda kv: kv[1][2], reverse=True)[:15]
    return {
        "log": log.name,
        "records": n,
        "profiled_wall_s": wall,
        "buckets": [
            {"component": k, "self_s": v, "pct": 100 * v / total}
            for k, v in sorted(buckets.items(), key=lambda kv: -kv[1])
        ],
        "top": [
            {
                "function": f"{Path(k[0]).name}:{k[1]} {k[2]}" if k[0] != "~" else k[2],
                "calls": v[1],
                "self_s": v[2],
                "cum_s": v[3],
                "pct": 100 * v[2] / total,
            }
            for k, v in top
        ],
    }


# ---------------------------------------------------------------- Spark decode stage


def _decode_only(batches):
    """A decode task that stages nothing: decodes its files/ranges and yields one row count."""
    import pyarrow as pa

    from metadata.lake.staging import decoded

    for batch in batches:
        for task in batch.to_pylist():
            yield pa.RecordBatch.from_pylist([{"n": sum(b.num_rows for b in decoded(task, []))}])


def spark_decode(spark, jvm_pid, log: BenchLog, data_dir: str, repeat: int = 1) -> dict:
    """The decode stage of ingest on Spark: decoding only (tasks return counts), then
    ``metadata.lake.ingest_spark.stage`` (decode + the tasks' pyarrow Parquet staging)."""
    from metadata.lake import ingest_spark as stg
    from metadata.log.readers import ReadOptions

    tasks = _tasks(log)
    options = ReadOptions()
    nbytes = sum(f.size for f, s, e in tasks if s == 0)
    out: dict = {"log": log.name, "records": log.records, "MB": round(nbytes / 1e6, 2), "tasks": len(tasks)}

    def noop() -> None:  # the tasks stage builds, decoding without staging
        frame = stg.task_frame(spark, tasks, options, "")
        assert sum(r["n"] for r in frame.mapInArrow(_decode_only, "n long").collect()) >= log.records * 0.9

    progress(f"spark decode {log.name}: decode only")
    with MemorySampler(jvm_pid, common.jvm_heap_fn(spark)) as mem:
        out["noop_s"], _ = common.best_of(noop, repeat)
    staging = str(Path(data_dir) / "staging-bench")
    progress(f"spark decode {log.name}: stage (pyarrow Parquet staging)")

    def stage():
        shutil.rmtree(staging, ignore_errors=True)
        return stg.stage(spark, tasks, options, staging)[0]

    with MemorySampler(jvm_pid, common.jvm_heap_fn(spark)) as mem2:
        out["stage_s"], staged = common.best_of(stage, repeat)
    out["staged_rows"] = staged.count()
    out["staging_MB"] = round(sum(p.stat().st_size for p in Path(staging).rglob("*.parquet")) / 1e6, 2)
    shutil.rmtree(staging, ignore_errors=True)
    out["noop_rec_per_s"] = per_s(log.records, out["noop_s"])
    out["noop_MB_per_s"] = per_s(nbytes / 1e6, out["noop_s"])
    out["stage_rec_per_s"] = per_s(log.records, out["stage_s"])
    out["stage_MB_per_s"] = per_s(nbytes / 1e6, out["stage_s"])
    out["parquet_s"] = max(0.0, out["stage_s"] - out["noop_s"])
    m1, m2 = mem.result(), mem2.result()
    for k in m1:
        vals = [v for v in (m1[k], m2[k]) if v is not None]
        out[k] = max(vals) if vals else None
    out["load"] = common.load_average()[0]
    return out


# ---------------------------------------------------------------- ingest


def _write_label(lake, name, *args, **kwargs) -> str:
    return "append records" if name == "records" else "append snapshots" if name == "snapshots" else "append typed"


def instrument() -> Phases:
    import metadata.lake.ingest as ing
    from metadata.lake.ingest_spark import SparkSteps
    from metadata.lake.protocol import Lake, LakeTransaction, _LeaseKeeper

    ph = Phases()
    ph.wrap(ing, "plan", "plan")
    ph.wrap(SparkSteps, "stage", "decode + stage (Spark tasks, pyarrow Parquet)")
    ph.wrap(SparkSteps, "groups", "summarise overlapping inputs (Spark aggregate)")
    ph.wrap(SparkSteps, "check_conflicts", "overlap check")
    ph.wrap(SparkSteps, "write", "_write")
    ph.wrap(Lake, "write", _write_label)
    ph.wrap(ing, "remove", "remove staging")
    ph.wrap(_LeaseKeeper, "acquire", "lease")
    ph.wrap(LakeTransaction, "_recover", "recovery")
    ph.wrap(LakeTransaction, "commit", "commit (proof, _ingests row)")
    ph.wrap(Lake, "current_versions", "Delta version listing")
    return ph


PHASE_COLUMNS = [
    "plan",
    "decode + stage (Spark tasks, pyarrow Parquet)",
    "summarise overlapping inputs (Spark aggregate)",
    "overlap check",
    "lease",
    "recovery",
    "write: anti-join, count, snapshot ids",
    "append records",
    "append typed",
    "append snapshots",
    "commit (proof, _ingests row)",
    "remove staging",
    "other",
]


def phase_breakdown(summary: dict, total: float) -> dict[str, float]:
    """Non-overlapping phases summing to ``total`` (typed-table appends run 4 at a time: their wall)."""
    wall = {k: v["wall_s"] for k, v in summary.items()}
    appends = sum(wall.get(k, 0.0) for k in ("append records", "append typed", "append snapshots"))
    out = {k: wall.get(k, 0.0) for k in PHASE_COLUMNS if k not in ("write: anti-join, count, snapshot ids", "other")}
    out["write: anti-join, count, snapshot ids"] = max(0.0, wall.get("_write", 0.0) - appends)
    out["other"] = max(0.0, total - sum(out.values()))
    return out


def run_ingest(spark, jvm_pid, log: BenchLog, lake: str, label: str, ph: Phases) -> dict:
    from metadata.lake.ingest import ingest

    ph.clear()
    progress(f"ingest {log.name}: {label}")
    with MemorySampler(jvm_pid, common.jvm_heap_fn(spark)) as mem, common.timer() as t:
        report = ingest([log.dir], lake, engine="spark", spark=spark, progress=False)
    summary = ph.summary()
    phases = phase_breakdown(summary, t["s"])
    appends = sum(summary.get(k, {}).get("calls", 0) for k in ("append records", "append typed", "append snapshots"))
    return {
        "log": log.name,
        "run": label,
        "records": report.records_decoded,
        "added": report.records_added,
        "MB": round(report.bytes_read / 1e6, 2),
        "wall_s": t["s"],
        "rec_per_s": per_s(report.records_decoded, t["s"]),
        "MB_per_s": per_s(report.bytes_read / 1e6, t["s"]),
        "delta_commits": appends + 1,
        "typed_tables": summary.get("append typed", {}).get("calls", 0),
        "typed_append_sum_s": summary.get("append typed", {}).get("sum_s", 0.0),
        "version_listing_s": summary.get("Delta version listing", {}).get("sum_s", 0.0),
        "phases": phases,
        **{f"ph:{k}": v for k, v in phases.items()},
        **mem.result(),
        "load": common.load_average()[0],
    }


def delta_commit_cost(spark, data_dir: str, repeat: int = 3) -> dict:
    """Appending 0 rows (Delta's commit protocol, no data) and 1 row to a scratch ``records``-shaped table."""
    from metadata.lake.spark_store import spark_schema
    from metadata.lake.tables import RECORDS_SCHEMA

    schema = spark_schema(RECORDS_SCHEMA)
    path = str(Path(data_dir) / "delta-commit-bench")
    shutil.rmtree(path, ignore_errors=True)
    empty = spark.createDataFrame([], schema)
    one = spark.createDataFrame(
        [(0, 0, 0, 1, 0, -1, -1, False, False, None, "NO_OP_RECORD", 20, 0, "{}", None, "x")], schema
    )
    one.write.format("delta").mode("append").save(path)  # create the table (not timed)
    empty_s, _ = common.best_of(lambda: empty.write.format("delta").mode("append").save(path), repeat)
    one_s, _ = common.best_of(lambda: one.write.format("delta").mode("append").save(path), repeat)
    shutil.rmtree(path, ignore_errors=True)
    return {"empty_append_s": empty_s, "one_row_append_s": one_s}


# ---------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1e5,1e6", help="log sizes in records, e.g. 1e5,1e6,1e7 (default 1e5,1e6)")
    ap.add_argument("--kinds", default="gen,idle", help="gen, idle (comma-separated; default both)")
    ap.add_argument("--stages", default=",".join(STAGES), help=f"subset of {','.join(STAGES)}")
    ap.add_argument("--repeat", type=int, default=1, help="single-core decode: best of N (default 1)")
    ap.add_argument("--spark-repeat", type=int, default=1, help="Spark decode stage: best of N (default 1)")
    ap.add_argument(
        "--profile-size",
        type=float,
        default=1e5,
        help="profile the largest log of at most this many records (default 1e5)",
    )
    ap.add_argument("--data-dir", default=common.DEFAULT_DATA_DIR, help="cache of logs and lakes")
    ap.add_argument(
        "--segment-bytes",
        type=int,
        default=common.KAFKA_SEGMENT_BYTES,
        help="segment size of built logs (default 1 GiB, Kafka's metadata.log.segment.bytes)",
    )
    ap.add_argument("--out", help="write every result as JSON here")
    a = ap.parse_args(argv)
    stages = [s.strip() for s in a.stages.split(",") if s.strip()]
    if unknown := set(stages) - set(STAGES):
        ap.error(f"unknown stage(s) {', '.join(sorted(unknown))}")
    kinds = [k.strip() for k in a.kinds.split(",") if k.strip()]
    sizes = common.parse_sizes(a.sizes)

    info = common.machine_info()
    common.print_machine(info)
    logs = common.bench_logs(sizes, kinds, a.data_dir, a.segment_bytes)
    results: dict = {"machine": info, "logs": [lg.row() for lg in logs]}
    print_table(
        "Logs",
        [lg.row() for lg in logs],
        ["name", "records", "MB", "segments", "snapshots", "noop_share", "build_s"],
        note="`build_s`: time to generate/build the log (cached afterwards).",
    )

    if "decode" in stages or "profile" in stages:
        results["decode_first_call_s"] = warm_up_decode()
    if "decode" in stages:
        rows = [decode_single_core(lg, a.repeat) for lg in logs]
        results["decode"] = rows
        print_table(
            "Single-core decode (`decode_to_arrow`, this process)",
            rows,
            [
                "log",
                "records",
                "MB",
                ("arrow_s", "s"),
                ("rec_per_s", "records/s"),
                ("MB_per_s", "MB/s"),
                ("us_per_rec", "µs/record"),
                ("binary_pct", "binary decode %"),
                ("json_pct", "JSON payload %"),
                ("arrow_pct", "Arrow + row tuples %"),
                ("driver_peak_rss_mb", "peak RSS MB"),
                "load",
            ],
            note="binary decode = the readers alone (`iter_file_items`: framing, CRC, record values → "
            "dicts, NoOp runs as numpy arrays); JSON = what payloads as JSON text (written directly by the "
            "generated readers) cost beyond dicts; Arrow = the rest of `decode_to_arrow` (columns, "
            "`pa.array`). Shares from three separate passes (best of "
            f"{a.repeat}).",
        )

    if "profile" in stages:
        cands = [lg for lg in logs if lg.records <= a.profile_size] or sorted(logs, key=lambda lg: lg.records)[:1]
        chosen = {}
        for lg in cands:  # the largest of each kind
            if lg.kind not in chosen or lg.records > chosen[lg.kind].records:
                chosen[lg.kind] = lg
        results["profile"] = []
        for lg in chosen.values():
            progress(f"profile {lg.name}")
            p = profile_decode(lg)
            results["profile"].append(p)
            print_table(
                f"cProfile of single-core decode: {lg.name} ({p['records']:,} records, "
                f"{p['profiled_wall_s']:.1f} s under the profiler)",
                p["buckets"],
                ["component", ("self_s", "self s"), ("pct", "%")],
            )
            print_table(
                f"Top functions by self time: {lg.name}",
                p["top"],
                ["function", "calls", ("self_s", "self s"), ("cum_s", "cum s"), ("pct", "%")],
            )

    if "spark" in stages or "ingest" in stages:
        progress("starting Spark")
        with common.timer() as t:
            spark, jvm_pid = common.spark_session()
            spark.range(10).count()
        results["spark_start_s"] = t["s"]
        # warm-up (JVM JIT, Python worker start, Delta classes): a tiny fixture through both paths
        fixture = common.fixture_logs()[:1]
        if fixture:
            progress("Spark warm-up on a fixture")
            spark_decode(spark, jvm_pid, fixture[0], a.data_dir)
            from metadata.lake.ingest import ingest

            warm = Path(a.data_dir) / "lakes" / "warmup"
            shutil.rmtree(warm, ignore_errors=True)
            ingest([fixture[0].dir], str(warm), spark=spark, progress=False)
            shutil.rmtree(warm, ignore_errors=True)

    if "spark" in stages:
        rows = [spark_decode(spark, jvm_pid, lg, a.data_dir, a.spark_repeat) for lg in logs]
        results["spark_decode"] = rows
        print_table(
            "Spark decode stage (`metadata.lake.staging.stage`, local[*])",
            rows,
            [
                "log",
                "records",
                "MB",
                "tasks",
                ("noop_s", "decode only s"),
                ("noop_rec_per_s", "records/s"),
                ("noop_MB_per_s", "MB/s"),
                ("stage_s", "decode+staging s (`stage`)"),
                ("stage_rec_per_s", "records/s "),
                ("parquet_s", "Parquet write ≈ s"),
                ("staging_MB", "staged MB"),
                ("jvm_peak_rss_mb", "JVM peak RSS MB"),
                ("jvm_peak_heap_used_mb", "JVM heap used MB"),
                ("py_workers_peak_pss_mb", "Python workers PSS MB"),
                ("py_workers_peak_n", "workers"),
                "load",
            ],
            note="One task per file or 64 MiB range (`plan`): a log below 64 MiB decodes on one core "
            "whatever the cluster size.",
        )

    if "ingest" in stages:
        results["delta_commit"] = delta_commit_cost(spark, a.data_dir)
        ph = instrument()
        rows = []
        try:
            for lg in logs:
                lake = str(Path(a.data_dir) / "lakes" / lg.name)
                shutil.rmtree(lake, ignore_errors=True)
                Path(lake).parent.mkdir(parents=True, exist_ok=True)
                rows.append(run_ingest(spark, jvm_pid, lg, lake, "fresh", ph))
                common.write_json(Path(lake) / "bench-lake.json", {"log": lg.row()})  # bench_kafka reuses it
                rows.append(run_ingest(spark, jvm_pid, lg, lake, "re-ingest", ph))
        finally:
            ph.restore()
        results["ingest"] = rows
        dc = results["delta_commit"]
        for r in rows:
            r["delta_commit_est_s"] = r["delta_commits"] * dc["empty_append_s"]
        print_table(
            "End-to-end ingest (`metadata.lake.ingest.ingest`)",
            rows,
            [
                "log",
                "run",
                "records",
                "added",
                "MB",
                ("wall_s", "s"),
                ("rec_per_s", "records/s"),
                ("MB_per_s", "MB/s"),
                ("delta_commits", "Delta commits"),
                ("delta_commit_est_s", "of which commit protocol ≈ s"),
                ("driver_peak_rss_mb", "driver RSS MB"),
                ("jvm_peak_rss_mb", "JVM RSS MB"),
                ("jvm_peak_heap_used_mb", "JVM heap MB"),
                ("py_workers_peak_pss_mb", "workers PSS MB"),
                ("py_workers_peak_n", "workers"),
                "load",
            ],
            note=f"Delta commit protocol estimate: commits × an empty append "
            f"({dc['empty_append_s']:.2f} s; a 1-row append {dc['one_row_append_s']:.2f} s) — the rest "
            "of an append is Spark writing the data.",
        )
        print_table(
            "Ingest phases (wall seconds; typed-table appends run 4 at a time, then records alone)",
            rows,
            ["log", "run", ("wall_s", "total"), *[(f"ph:{k}", k) for k in PHASE_COLUMNS]],
            note="`other`: Lake/session setup, reading the committed state, the report. `Delta version "
            "listing` (in recovery and in the commit's proof) and the summed (not wall) typed-append time are in the "
            "JSON output.",
        )

    return common.finish(results, a.out)


if __name__ == "__main__":
    sys.exit(main())
