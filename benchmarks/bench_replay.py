"""Replay speed: the reference engine versus the Spark engine, with and without image checkpoints.

Run from the repository root::

    python benchmarks/bench_replay.py                      # gen-1e4, gen-1e5, gen-1e6
    python benchmarks/bench_replay.py --sizes 1e4 --every 2000
    python benchmarks/bench_replay.py --huge               # gen-1e7 too (long: building + ingesting it)

Logs: ``gen-N`` of ``benchmarks/common.py`` (a generated mid-size cluster of about N records with a
snapshot half-way), ingested once into ``<data-dir>/replay-lakes/gen-N`` (reused while it holds the
whole log). For each log, two targets:

* ``end``: the last offset; both engines start from the snapshot (≈ N/2 records to replay);
* ``middle``: the offset before the snapshot's, replayed from the start of the log (≈ N/2 records).

Measured per (target, engine): wall seconds to the image JSON (``ImageFrames.to_json()``, the same
contract for both), the driver's peak RSS (this Python process, kernel VmHWM reset per case), the
Spark JVM's peak RSS and peak used heap (sampled), and whether the two engines' images are equal.
Engines: ``reference`` (:func:`image.engine.replay_reference`: records streamed to the driver and
replayed sequentially), ``spark`` (:func:`image.spark_engine.replay_frames` without checkpoints),
``spark+cp`` (the same from the latest image checkpoint; their build, ``checkpoint(lake, every)``,
is a row of its own and starts from an empty ``_checkpoints``).
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import common
from common import MemorySampler, print_table, progress


def lake_for(log: common.BenchLog, data_dir: str, spark) -> Any:
    """The lake holding ``log`` (ingested on first use)."""
    from metadata.ingest import ingest
    from metadata.lake import Lake
    lake = Lake(str(Path(data_dir) / "replay-lakes" / log.name), spark)
    if lake.exists() and lake.state().high_water_mark == log.last_offset:
        return lake
    if Path(lake.uri).exists():
        shutil.rmtree(lake.uri)
    progress(f"ingesting {log.name} into {lake.uri}")
    with common.timer() as t:
        ingest([log.dir], lake.uri, spark=spark, progress=False)
    progress(f"ingested {log.name} in {t['s']:.0f} s")
    return lake


def measure(spark, jvm_pid: int | None, fn: Callable[[], Any]) -> tuple[dict[str, Any], Any]:
    """Wall seconds and peak memory of ``fn()``."""
    heap = common.jvm_heap_fn(spark) if jvm_pid is not None else None
    with MemorySampler(jvm_pid, heap) as mem, common.timer() as t:
        result = fn()
    return {"seconds": t["s"], **mem.result()}, result


def bench_log(log: common.BenchLog, args: argparse.Namespace, spark, jvm_pid: int | None) -> list[dict[str, Any]]:
    """Every (target, engine) case on one log; ``agree``: the image equals the reference engine's
    (or, where the reference did not run, the Spark engine's without checkpoints)."""
    from image import checkpoints
    from image.engine import replay_reference, snapshot_base
    from image.spark_engine import replay_frames
    lake = lake_for(log, args.data_dir, spark)
    state = lake.state()
    end = state.high_water_mark
    snapshot = snapshot_base(lake, state, end)
    targets = {"middle": snapshot.offset - 1 if snapshot is not None else end // 2, "end": end}
    every = args.every or max(1000, (end + 1) // 10)
    rows: list[dict[str, Any]] = []
    images: dict[tuple[str, str], Any] = {}

    def case(target: str, engine: str, replayed: int, run: Callable[[], Any]) -> None:
        progress(f"{log.name} {target} ({targets[target]}): {engine}, {replayed:,} records to replay")
        stats, images[target, engine] = measure(spark, jvm_pid, run)
        rows.append({"log": log.name, "records": log.records, "target": target, "offset": targets[target],
                     "replayed": replayed, "engine": engine, **stats, "load": common.load_average()[0]})

    shutil.rmtree(checkpoints.path(lake, ""), ignore_errors=True)
    for target, offset in targets.items():
        base = snapshot_base(lake, state, offset)
        replayed = offset - (base.offset if base else -1)
        if "reference" in args.engines and replayed <= args.reference_limit:
            case(target, "reference", replayed, lambda: replay_reference(lake, offset, state=state).to_json())
        if "spark" in args.engines:
            case(target, "spark", replayed, lambda: replay_frames(lake, offset, checkpoints=False).to_json())
    if "spark" in args.engines:
        progress(f"{log.name}: checkpoint every {every}")
        stats, added = measure(spark, jvm_pid, lambda: checkpoints.checkpoint(lake, every))
        rows.append({"log": log.name, "records": log.records, "target": f"({len(added)} checkpoints)",
                     "replayed": end + 1, "engine": f"checkpoint build, every {every}", **stats,
                     "load": common.load_average()[0]})
        for target, offset in targets.items():
            base = checkpoints.choose_base(lake, state, offset)
            case(target, "spark+cp", offset - base.offset, lambda: replay_frames(lake, offset).to_json())
        made = [c.offset for c in checkpoints.listed(lake)]
        if made and args.tails:
            after = [c for c in made if c > targets["middle"] + 1]  # past the snapshot: the base is a checkpoint
            start = after[0] if after else made[-1]
            for tail in args.tails:
                offset = min(start + min(tail, every - 1), end)
                targets[f"cp+{tail:g}"] = offset
                base = checkpoints.choose_base(lake, state, offset)
                case(f"cp+{tail:g}", "spark+cp", offset - base.offset, lambda: replay_frames(lake, offset).to_json())
    for r in rows:
        key = (r["target"], r["engine"])
        others = [images[r["target"], e] for e in ("reference", "spark") if e != r["engine"] and (r["target"], e) in images]
        if key in images and others:
            r["agree"] = images[key] == others[0]
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1e4,1e5,1e6", help="log sizes in records (default 1e4,1e5,1e6)")
    ap.add_argument("--huge", action="store_true", help="add 1e7 (building and ingesting it takes long)")
    ap.add_argument("--engines", default="reference,spark", help="reference, spark (spark includes spark+cp)")
    ap.add_argument("--every", type=int, help="checkpoint interval (default: a tenth of the log, ≥ 1000)")
    ap.add_argument("--reference-limit", type=float, default=2e6,
                    help="skip the reference engine above this many records to replay (default 2e6)")
    ap.add_argument("--tails", default="0,1e3,1e4,1e5,1e6",
                    help="after building checkpoints, also replay this many records past one (cost ∝ tail)")
    ap.add_argument("--data-dir", default=common.DEFAULT_DATA_DIR, help="cache of logs and lakes")
    ap.add_argument("--out", help="write every result as JSON here")
    args = ap.parse_args(argv)
    args.engines = [e.strip() for e in args.engines.split(",") if e.strip()]
    args.tails = [int(float(t)) for t in args.tails.split(",") if t.strip()]
    sizes = common.parse_sizes(args.sizes) + ([10**7] if args.huge else [])
    info = common.machine_info()
    common.print_machine(info)
    spark, jvm_pid = common.spark_session()
    rows: list[dict[str, Any]] = []
    for n in sizes:
        log = common.generated_log(n, args.data_dir)
        rows += bench_log(log, args, spark, jvm_pid)
    print_table("Replay to an offset: seconds to the image JSON, peak memory", rows, [
        "log", ("records", "log records"), "target", "offset", ("replayed", "records replayed"), "engine",
        ("seconds", "s"), ("driver_peak_rss_mb", "driver peak RSS MB"), ("jvm_peak_rss_mb", "JVM peak RSS MB"),
        ("jvm_peak_heap_used_mb", "JVM peak heap MB"), ("agree", "same image"), ("load", "load avg")],
        note="`replayed`: log records after the starting image (snapshot, checkpoint or empty); for the "
             "checkpoint build row, `offset` is the number of checkpoints written.")
    if args.out:
        common.write_json(args.out, {"machine": info, "results": rows})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
