"""Kafka's own metadata replay vs kraft-replay's engines, on real and generated logs.

Run from the repository root::

    python benchmarks/bench_kafka.py                                  # fixtures + 1e5, 1e6 generated/idle
    python benchmarks/bench_kafka.py --sizes 1e5 --engines kafka,reference --out results.json
    python benchmarks/bench_kafka.py --kinds fixtures --fixtures 4.1.1/rolling --engines temporal

Runtime on the 2-core dev machine (idle): ``--engines kafka,shell,reference`` at the default sizes
≈ 10 min; the lake engines need each log ingested once (with its temporal image; minutes per 10^6
records), then read in seconds.

Each log is replayed to its end by:

* ``kafka``: the harness oracle (``python -m tests.harness oracle -- bench``): Kafka's
  ``MetadataRecordSerde`` + ``MetadataDelta.replay`` with an image published after every batch,
  JVM start excluded, best of ``--repeat`` after ``--warmup`` passes in the same JVM (C2 JIT).
  Memory: peak RSS of the oracle process tree (``common.run_measured``).
* ``shell``: Kafka's metadata shell (``MetadataShell --snapshot <segment> cat /image/provenance``,
  one run; single-segment logs only): wall time minus the same command on a tiny log (JVM start,
  class loading), i.e. roughly its load time of the segment.
* ``reference``: decode the files in this process (``discover`` / ``iter_file_rows`` /
  ``to_log_record`` into a list) and ``image.replay.replay_to`` — decode and replay timed apart.
  Memory: this process's peak RSS (records list + image).
* ``temporal``: the image at the log's end read from the temporal image of a lake ingested from the
  log (cached under ``--data-dir/lakes``; ingest time, which builds the versions, reported, not
  counted): ``image.temporal.reads.image_at`` on the in-process reader (``image.temporal.lake_source.ArrowSource``,
  no JVM), result as the image JSON.
* ``reference-lake``: ``image.temporal.sources.reference_image``: the stored records (from the best stored
  snapshot on) read from the same lake in process and replayed by the reference engine.

Modes (``--modes``): ``log`` = replay the whole log from offset 0 (oracle ``--source log``);
``auto`` = what Kafka's loader does at start-up: the newest snapshot, then the log after it
(oracle ``--source auto``; for logs without a snapshot both modes are the same replay). The lake
engines answer for the log's end (``reference-lake`` from the best stored snapshot), so they appear
under ``auto`` (under ``log`` for a log without snapshot).
``records`` are what each engine went through: Kafka counts metadata records (snapshot + log,
control records not counted); ours count every record read (control records included).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import common
from common import ROOT, BenchLog, MemorySampler, per_s, print_table, progress

ENGINES = ("kafka", "shell", "reference", "temporal", "reference-lake")
MODES = ("log", "auto")


# ---------------------------------------------------------------- Kafka


def kafka_oracle(log: BenchLog, version: str, mode: str, warmup: int, repeat: int, heap_note: str) -> dict:
    cmd = [
        sys.executable,
        "-m",
        "tests.harness",
        "oracle",
        "--version",
        version,
        "--",
        "bench",
        "--dir",
        log.dir,
        "--source",
        mode,
        "--warmup",
        str(warmup),
        "--repeat",
        str(repeat),
    ]
    progress(f"kafka oracle {log.name} ({mode})")
    m = common.run_measured(cmd, cwd=ROOT, timeout=900)
    row = {
        "log": log.name,
        "mode": mode,
        "engine": f"Kafka {version} oracle",
        "proc_wall_s": m.wall_s,
        "peak_rss_mb": m.peak_rss_mb,
        "load": common.load_average()[0],
    }
    lines = [ln for ln in m.stdout.splitlines() if ln.startswith("{")]
    if m.returncode != 0 or not lines:
        row["error"] = (m.stderr.strip().splitlines() or [f"exit {m.returncode}"])[-1][:200]
        return row
    b = json.loads(lines[-1])
    row.update(
        records=b["records"],
        replay_s=b["wallMs"] / 1e3,
        total_s=b["wallMs"] / 1e3,
        mean_s=b["meanWallMs"] / 1e3,
        rec_per_s=b["recordsPerSec"],
        last_offset=b["lastOffset"],
        check=_check(b["lastOffset"], log),
        note=f"best of {repeat} after {warmup} warm-up, {heap_note}",
    )
    return row


def _shell_once(
    file: str, version: str, heap: str, command: tuple[str, ...] = ("cat", "/image/provenance"), timeout: float = 900
) -> common.Measured:
    """One metadata-shell JVM (started directly, no wrapper process) loading ``file`` and running
    ``command``; it prints the provenance line ``offset N, epoch E, time T`` first when ``command`` shows
    ``/image/provenance`` first."""
    import tempfile

    from tests.harness.cluster import java_command, write_log_configs
    from tests.harness.kafka_dist import ensure_kafka, shell_class_path
    from tests.harness.tools import SHELL_CLASS

    dist = ensure_kafka(version)
    with tempfile.TemporaryDirectory(prefix="kraft-java-") as tmp:
        cmd = java_command(
            dist,
            SHELL_CLASS,
            ["--snapshot", file, *command],
            write_log_configs(Path(tmp), log_file=None, level="WARN"),
            heap=heap,
            extra_cp=shell_class_path(dist),
        )
        return common.run_measured(cmd, cwd=ROOT, timeout=timeout)


def kafka_shell(log: BenchLog, version: str, heap: str, baseline: dict[str, float], attempts: int = 3) -> dict:
    row = {"log": log.name, "mode": "log", "engine": f"Kafka {version} metadata shell", "load": None}
    segments = sorted(Path(log.dir).glob("*.log"))
    if len(segments) != 1:
        row["error"] = f"{len(segments)} segments: the shell loads one file"
        return row
    if version not in baseline:  # JVM start + shell on a tiny log (a 248-record fixture)
        tiny = ROOT / "tests/fixtures/kafka/4.1.1/basic/__cluster_metadata-0/00000000000000000000.log"
        baseline[version] = min(_shell_once(str(tiny), version, heap).wall_s for _ in range(2))
    progress(f"kafka metadata shell {log.name}")
    # non-interactive, the shell may answer before its loader published the last batch (Kafka waits for
    # the file reader to catch up, not for the publisher): retry until the image is at the log end
    for attempt in range(1, attempts + 1):
        m = _shell_once(str(segments[0]), version, heap)
        offset = int(m.stdout.split()[1].rstrip(",")) if m.stdout.startswith("offset ") else None
        if offset == log.last_offset:
            break
    load_s = max(0.0, m.wall_s - baseline[version])
    resolved = load_s >= 0.5  # JVM start varies by ~0.5 s on a loaded machine: below that, no rate
    row.update(
        records=log.records,
        total_s=load_s,
        replay_s=load_s,
        rec_per_s=per_s(log.records, load_s) if resolved else None,
        proc_wall_s=m.wall_s,
        peak_rss_mb=m.peak_rss_mb,
        last_offset=offset,
        check=_check(offset, log),
        note=f"wall minus {baseline[version]:.1f} s tiny-log run; -Xmx{heap}, C1 only; attempt {attempt}"
        + ("" if resolved else "; below the ~0.5 s resolution"),
        load=common.load_average()[0],
    )
    if m.returncode != 0 or offset is None:
        row["error"] = "no image printed" if m.returncode == 0 else (m.stderr.strip().splitlines() or ["?"])[-1][:200]
    return row


def _check(offset: int | None, log: BenchLog) -> str:
    if offset is None or log.last_offset is None:
        return "?"
    return "ok" if offset == log.last_offset else f"offset {offset} ≠ {log.last_offset}"


# ---------------------------------------------------------------- reference engine on files


def _decode(log: BenchLog):
    """(log records, newest snapshot (records, end, epoch) or None) decoded from the files."""
    from metadata.log.readers import (
        InputKind,
        ReadOptions,
        discover,
        iter_file_rows,
        to_log_record,
    )

    files = discover(log.dir)
    snaps = [f for f in files if f.kind is InputKind.SNAPSHOT and f.end_offset]
    opts = ReadOptions()
    with common.timer() as t_log:
        records = [
            to_log_record(row, f.path)
            for f in files
            if f.kind is InputKind.SEGMENT
            for _, row in iter_file_rows(f, [], opts)
        ]
    snapshot, snap_s = None, 0.0
    if snaps:
        s = max(snaps, key=lambda f: (f.end_offset, f.epoch))
        with common.timer() as t_snap:
            snapshot = ([to_log_record(row, s.path) for _, row in iter_file_rows(s, [], opts)], s.end_offset, s.epoch)
        snap_s = t_snap["s"]
    return records, snapshot, t_log["s"], snap_s


def reference_files(log: BenchLog, modes: list[str]) -> list[dict]:
    from image.replay import SnapshotSource, replay_to

    progress(f"reference engine {log.name}")
    rows = []
    with MemorySampler(None) as mem:
        records, snapshot, log_s, snap_s = _decode(log)
        for mode in modes:
            if mode == "auto" and snapshot is not None:
                source = SnapshotSource(*snapshot)
                tail = sum(1 for r in records if r.offset >= source.end_offset)
                n, decode_s = len(source.records) + tail, snap_s + log_s
                with common.timer() as t:
                    image = replay_to(records, None, snapshot=source)
            else:
                n, decode_s = len(records), log_s
                with common.timer() as t:
                    image = replay_to(records, None)
            offset = image.to_json()["offset"]
            rows.append(
                {
                    "log": log.name,
                    "mode": mode,
                    "engine": "reference (files)",
                    "records": n,
                    "decode_s": decode_s,
                    "replay_s": t["s"],
                    "total_s": decode_s + t["s"],
                    "rec_per_s": per_s(n, decode_s + t["s"]),
                    "replay_rec_per_s": per_s(n, t["s"]),
                    "last_offset": offset,
                    "check": _check(offset, log),
                    "load": common.load_average()[0],
                    "note": "decode = all segments"
                    + (" + snapshot (tail filtered after decode)" if mode == "auto" and snapshot else ""),
                }
            )
    for r in rows:
        r["peak_rss_mb"] = mem.result()["driver_peak_rss_mb"]
    return rows


# ---------------------------------------------------------------- lake engines


def _lake_dir(data_dir: str, log: BenchLog) -> Path:
    return Path(data_dir) / "lakes" / log.name.replace("/", "_")


def ensure_lake(spark, log: BenchLog, data_dir: str) -> tuple[str, float | None]:
    """The log's lake (shared with bench_ingest.py): reused when its marker matches, else ingested."""
    import shutil

    from image.temporal.ingest import ingest

    lake = _lake_dir(data_dir, log)
    marker = lake / "bench-lake.json"
    keys = ("name", "dir", "records", "bytes", "params")
    if marker.is_file() and all(
        json.loads(marker.read_text()).get("log", {}).get(k) == json.loads(json.dumps(log.row()))[k] for k in keys
    ):
        return str(lake), None
    shutil.rmtree(lake, ignore_errors=True)
    lake.parent.mkdir(parents=True, exist_ok=True)
    progress(f"ingesting {log.name} into {lake}")
    with common.timer() as t:
        ingest([log.dir], str(lake), spark=spark, progress=False)
    common.write_json(marker, {"log": log.row()})
    return str(lake), t["s"]


def lake_engine(log: BenchLog, lake_path: str, engine: str, ingest_s: float | None, log_mode: bool = True) -> dict:
    """The image at the log's end from the lake, in this process: the temporal image, or a replay of the
    stored records (``reference-lake``)."""
    from image.temporal.lake_source import ArrowSource
    from image.temporal.reads import image_at
    from image.temporal.sources import reference_image
    from metadata.lake.files import LakeFiles

    mode = "auto" if log.snapshots or not log_mode else "log"  # no snapshot: the full log, like --source log
    row = {
        "log": log.name,
        "mode": mode,
        "engine": "temporal image (lake)" if engine == "temporal" else "reference (lake)",
        "ingest_s": ingest_s,
    }
    progress(f"{row['engine']} {log.name}")
    with MemorySampler(None, None) as mem, common.timer() as t:
        source = ArrowSource(LakeFiles(lake_path))
        end = source.bounds()[1]
        if engine == "temporal":
            doc, errors = image_at(source, end)
        else:
            image = reference_image(source, end)
            doc, errors = image.to_json(), image.errors
    m = mem.result()
    n = startup_records(log)
    row.update(
        records=n,
        total_s=t["s"],
        rec_per_s=per_s(n, t["s"]),
        last_offset=doc["offset"],
        check=_check(doc["offset"], log),
        driver_rss_mb=m["driver_peak_rss_mb"],
        errors=len(errors),
        load=common.load_average()[0],
        note="lake read in process (no JVM) + image JSON",
    )
    return row


def startup_records(log: BenchLog) -> int:
    """Records a start-up replay goes through: the newest snapshot's records plus the log records at or
    after its end offset (counted from batch headers only)."""
    from metadata.log.codec.batch import HEADER_SIZE, read_header
    from metadata.log.readers import InputKind, discover, open_bytes

    files = discover(log.dir)
    snaps = [f for f in files if f.kind is InputKind.SNAPSHOT and f.end_offset]
    snap = max(snaps, key=lambda f: (f.end_offset, f.epoch)) if snaps else None
    start = snap.end_offset if snap else 0
    n = 0
    for f in files:
        if f.kind is not InputKind.SEGMENT and f is not snap:
            continue
        buf, pos = open_bytes(f.path), 0
        while pos + HEADER_SIZE <= len(buf):
            h = read_header(buf, pos)
            if f is snap:
                n += h[12]
            else:
                n += max(0, min(h[12], h[0] + h[6] + 1 - start))
            pos += 12 + h[1]
    return n


# ---------------------------------------------------------------- main


COLUMNS = [
    "log",
    "mode",
    "engine",
    "records",
    ("decode_s", "decode s"),
    ("replay_s", "replay s"),
    ("total_s", "total s"),
    ("rec_per_s", "records/s"),
    ("peak_rss_mb", "peak RSS MB"),
    ("driver_rss_mb", "driver RSS MB"),
    ("proc_wall_s", "process wall s"),
    "check",
    "load",
]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1e5,1e6", help="generated log sizes in records (default 1e5,1e6)")
    ap.add_argument("--kinds", default="fixtures,gen,idle", help="fixtures, gen, idle (default all)")
    ap.add_argument("--fixtures", default="", help="only fixtures whose name contains this (e.g. 4.1.1/)")
    ap.add_argument("--engines", default=",".join(ENGINES), help=f"subset of {','.join(ENGINES)}")
    ap.add_argument("--modes", default=",".join(MODES), help="log, auto (default both)")
    ap.add_argument("--kafka-version", default="4.1.1", help="Kafka for generated logs (fixtures use their own)")
    ap.add_argument("--warmup", type=int, default=2, help="oracle warm-up passes (default 2)")
    ap.add_argument("--repeat", type=int, default=5, help="oracle measured passes, best taken (default 5)")
    ap.add_argument("--heap", default="1g", help="metadata shell -Xmx (the oracle runs with 1g)")
    ap.add_argument("--no-spark-warmup", action="store_true", help="skip the Spark-engine warm-up on a fixture")
    ap.add_argument("--data-dir", default=common.DEFAULT_DATA_DIR)
    ap.add_argument("--segment-bytes", type=int, default=common.KAFKA_SEGMENT_BYTES)
    ap.add_argument("--out", help="write every result as JSON here")
    a = ap.parse_args(argv)
    engines = [e.strip() for e in a.engines.split(",") if e.strip()]
    modes = [m.strip() for m in a.modes.split(",") if m.strip()]
    if unknown := (set(engines) - set(ENGINES)) | (set(modes) - set(MODES)):
        ap.error(f"unknown engine/mode {', '.join(sorted(unknown))}")
    kinds = [k.strip() for k in a.kinds.split(",") if k.strip()]

    logs = common.bench_logs(common.parse_sizes(a.sizes), kinds, a.data_dir, a.segment_bytes)
    logs = [lg for lg in logs if lg.kind != "fixture" or a.fixtures in lg.name]
    for lg in logs:
        if lg.kind != "fixture":
            lg.kafka_version = a.kafka_version
    info = common.machine_info(sorted({lg.kafka_version for lg in logs}))
    common.print_machine(info)
    print_table(
        "Logs",
        [lg.row() for lg in logs],
        ["name", "records", "MB", "segments", "snapshots", "noop_share", "last_offset", "kafka_version"],
    )
    results: dict = {"machine": info, "logs": [lg.row() for lg in logs], "rows": []}
    rows: list[dict] = results["rows"]

    if "reference" in engines:
        from metadata.log.readers import (  # warm imports before timing
            ReadOptions,
            discover,
            iter_file_rows,
        )

        for f in discover(common.fixture_logs()[0].dir):
            list(iter_file_rows(f, [], ReadOptions()))
    shell_baseline: dict[str, float] = {}
    for lg in logs:
        for mode in modes:
            if mode == "auto" and not lg.snapshots and "log" in modes:
                continue  # the same replay as "log"
            if "kafka" in engines:
                rows.append(kafka_oracle(lg, lg.kafka_version, mode, a.warmup, a.repeat, "-Xmx1g"))
        if "shell" in engines and "log" in modes:
            rows.append(kafka_shell(lg, lg.kafka_version, a.heap, shell_baseline))
        if "reference" in engines:
            rows.extend(reference_files(lg, [m for m in modes if m == "log" or lg.snapshots or "log" not in modes]))
    results["shell_baseline_s"] = shell_baseline

    lake_engines = [e for e in engines if e in ("temporal", "reference-lake")]
    if lake_engines:
        progress("starting Spark (to ingest the lakes)")
        spark, _ = common.spark_session()
        fx = min(common.fixture_logs(), key=lambda f: f.records)
        path, _ = ensure_lake(spark, fx, a.data_dir)
        for e in lake_engines:  # warm imports: not part of a read
            lake_engine(fx, path, e, None)
        for lg in logs:
            path, ingest_s = ensure_lake(spark, lg, a.data_dir)
            for e in lake_engines:
                rows.append(lake_engine(lg, path, e, ingest_s, "log" in modes))

    for mode in modes:
        sel = [r for r in rows if r["mode"] == mode]
        title = (
            "Full log replay from offset 0 (oracle `--source log`)"
            if mode == "log"
            else "Start-up replay: newest snapshot + log tail (oracle `--source auto`; logs with a snapshot"
            + (")" if "log" in modes else "; others: full log)")
        )
        print_table(title, sel, COLUMNS + [("ingest_s", "lake ingest s"), "note", "error"])
    return common.finish(results, a.out)


if __name__ == "__main__":
    sys.exit(main())
