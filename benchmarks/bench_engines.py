"""Ingest in process beside ingest on Spark, as whole cold processes (start-up and imports included).

Run from the repository root::

    python benchmarks/bench_engines.py                        # every scenario, 3 runs each, both engines
    python benchmarks/bench_engines.py --scenarios sample,fixture --runs 5 --engines local
    python benchmarks/bench_engines.py --scenarios follow --follow-seconds 3600

Scenarios (``--scenarios``; each ``kraft-replay`` command of this tree in its own process as the console script runs
it (``common.KRAFT_REPLAY``), timed by ``common.run_measured``: wall seconds to its exit, CPU seconds of the process
and all its descendants (a Spark ingest's JVM and Python workers included), the largest peak RSS among them):

* ``sample`` — ``ingest data/sample --lake <new lake>``;
* ``fixture`` — ``ingest`` of a real-Kafka log (``tests/fixtures/kafka/4.1.1/basic``) into a new lake;
* ``incremental`` — ``ingest`` of gen-1e6 (``--size``) into a copy of the lake of that log cut 10^4 records before
  its end (the last segment's growth is what is decoded);
* ``large`` — gen-1e6 into a new lake;
* ``demo`` — ``kraft-replay demo --lake <new lake>`` (in process only: what a person runs first);
* ``follow`` — ``ingest --follow --interval 1`` of an unchanging log for ``--follow-seconds``: the CPU seconds per
  round with nothing new and the RSS over the rounds, sampled from ``/proc`` (in process only).

The commands run from compiled modules, as an installed package's do (:func:`common.compile_modules`), and with the
record-body readers' code cached by the runs before (``$KRAFT_REPLAY_CACHE``; only a machine's very first ingest
compiles them). The median of ``--runs`` runs is what to quote; min and max show how noisy the machine was (the load
average is printed with each row).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import common
from common import KRAFT_REPLAY, print_table, progress

from tests.processes import ROOT, environment

SCENARIOS = ("sample", "fixture", "incremental", "large", "demo", "follow")
FIXTURE = ROOT / "tests" / "fixtures" / "kafka" / "4.1.1" / "basic" / "__cluster_metadata-0"
INCREMENT = 10_000


def measure(name: str, engine: str, args: list[str], runs: int, prepare, env: dict[str, str]) -> dict:
    """``kraft-replay ARGS`` ``runs`` times, ``prepare()`` before each (not timed); min / median / max."""
    walls, cpus, rss = [], [], []
    for n in range(runs):
        prepare()
        m = common.run_measured([*KRAFT_REPLAY, *args], env=env, cwd=ROOT, timeout=3600)
        if m.returncode != 0:
            raise SystemExit(f"{name} ({engine}) failed: {m.stderr[-2000:]}")
        walls.append(m.wall_s)
        cpus.append(m.cpu_s)
        rss.append(m.peak_rss_mb)
        progress(f"{name} {engine} run {n + 1}: {m.wall_s:.2f} s wall, {m.cpu_s:.2f} s CPU, {m.peak_rss_mb:.0f} MB")
    return {
        "scenario": name,
        "engine": engine,
        "runs": runs,
        "wall_median_s": round(statistics.median(walls), 2),
        "wall_min_s": round(min(walls), 2),
        "wall_max_s": round(max(walls), 2),
        "cpu_median_s": round(statistics.median(cpus), 2),
        "peak_rss_mb": round(statistics.median(rss)),
        "load": common.load_average()[0],
    }


def cut_log(log: Path, target: Path, keep_before: int) -> None:
    """``log`` (one directory) copied to ``target`` with its last segment cut at the first batch holding offset
    ``keep_before`` or later (snapshots kept)."""
    from metadata.log.readers import discover, first_batch_after

    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    segments = sorted(log.glob("*.log"))
    for f in log.iterdir():
        if f.suffix == ".checkpoint":
            shutil.copy(f, target / f.name)
    for segment in segments[:-1]:
        shutil.copy(segment, target / segment.name)
    last = segments[-1]
    at = first_batch_after(discover(last)[0], 0, None, keep_before - 1)
    (target / last.name).write_bytes(last.read_bytes()[: at if at is not None else None])


def follow(log: Path, lake: Path, seconds: float, env: dict[str, str]) -> dict:
    """``ingest --follow --interval 1`` of an unchanging log: CPU seconds per round after the first, RSS over time."""
    shutil.rmtree(lake, ignore_errors=True)
    proc = subprocess.Popen(
        [*KRAFT_REPLAY, "ingest", str(log), "--lake", str(lake), "--follow", "--interval", "1", "--json"],
        env=env,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    tick = os.sysconf("SC_CLK_TCK")

    def cpu() -> float:
        fields = Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / tick

    assert proc.stdout is not None
    first = json.loads(proc.stdout.readline())  # the first round ingests the log
    start_cpu, start = cpu(), time.monotonic()
    rss, rounds, nothing_new = [common.rss_mb(proc.pid)], 0, 0
    while time.monotonic() - start < seconds:
        doc = json.loads(proc.stdout.readline())
        rounds += 1
        nothing_new += doc["report"] is not None and doc["report"]["seq"] is None
        rss.append(common.rss_mb(proc.pid))
    spent = cpu() - start_cpu
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=120)
    return {
        "scenario": "follow",
        "engine": first["report"]["engine"],
        "seconds": round(time.monotonic() - start),
        "rounds": rounds,
        "rounds_with_nothing_new": nothing_new,
        "cpu_per_round_s": round(spent / max(rounds, 1), 4),
        "rss_first_mb": round(rss[0]),
        "rss_max_mb": round(max(rss)),
        "rss_last_mb": round(rss[-1]),
        "load": common.load_average()[0],
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scenarios", default=",".join(SCENARIOS), help=f"subset of {','.join(SCENARIOS)}")
    ap.add_argument("--engines", default="local,spark", help="local, spark or both (default both)")
    ap.add_argument("--runs", type=int, default=3, help="runs per scenario and engine (default 3)")
    ap.add_argument("--size", type=float, default=1e6, help="the large log, in records (default 1e6)")
    ap.add_argument("--follow-seconds", type=float, default=300, help="how long to follow (default 300)")
    ap.add_argument("--data-dir", default=common.DEFAULT_DATA_DIR, help="cache of logs and lakes")
    ap.add_argument("--out", help="write the results as JSON here")
    a = ap.parse_args(argv)
    scenarios = [s.strip() for s in a.scenarios.split(",") if s.strip()]
    engines = [e.strip() for e in a.engines.split(",") if e.strip()]
    if set(scenarios) - set(SCENARIOS) or set(engines) - {"local", "spark"}:
        ap.error("unknown scenario or engine")
    info = common.machine_info()
    common.print_machine(info)
    common.compile_modules()
    work = Path(a.data_dir) / "engines"
    work.mkdir(parents=True, exist_ok=True)
    lake = work / "lake"

    def fresh() -> None:
        shutil.rmtree(lake, ignore_errors=True)

    rows: list[dict] = []
    for engine in engines:
        env = environment(spark=engine == "spark")
        ingest = ["ingest", "--engine", engine, "--lake", str(lake), "--json"]
        if "sample" in scenarios:
            rows.append(measure("sample", engine, [*ingest, str(ROOT / "data" / "sample")], a.runs, fresh, env))
        if "fixture" in scenarios:
            rows.append(measure("fixture", engine, [*ingest, str(FIXTURE)], a.runs, fresh, env))
        if {"incremental", "large"} & set(scenarios):
            log = Path(common.generated_log(int(a.size), a.data_dir).dir)
            if "large" in scenarios:
                rows.append(measure(f"large ({log.parent.name})", engine, [*ingest, str(log)], a.runs, fresh, env))
            if "incremental" in scenarios:
                last = json.loads((log.parent / "bench-log.json").read_text())["records"] - 1
                cut, base = work / "cut" / log.name, work / f"base-{log.parent.name}"
                if not base.exists():
                    progress(f"incremental: the lake of {log.parent.name} without its last {INCREMENT:,} records")
                    cut_log(log, cut, last + 1 - INCREMENT)
                    subprocess.run(
                        [*KRAFT_REPLAY, "ingest", str(cut), "--lake", str(base), "--json"],
                        env=environment(),
                        cwd=ROOT,
                        check=True,
                        stdout=subprocess.DEVNULL,
                    )

                def copy_base() -> None:
                    fresh()
                    shutil.copytree(base, lake)

                rows.append(
                    measure(
                        f"incremental ({INCREMENT:,} into {log.parent.name})",
                        engine,
                        [*ingest, str(log)],
                        a.runs,
                        copy_base,
                        env,
                    )
                )
        if "demo" in scenarios and engine == "local":
            rows.append(measure("demo", "local", ["demo", "--lake", str(lake)], a.runs, fresh, env))
    if "follow" in scenarios:
        follow_row = follow(ROOT / "data" / "sample", work / "follow-lake", a.follow_seconds, environment())
        print_table("ingest --follow, nothing new", [follow_row], list(follow_row))
    print_table(
        "Whole processes",
        rows,
        [
            "scenario",
            "engine",
            "runs",
            "wall_median_s",
            "wall_min_s",
            "wall_max_s",
            "cpu_median_s",
            "peak_rss_mb",
            "load",
        ],
    )
    results = {"machine": info, "rows": rows, **({"follow": follow_row} if "follow" in scenarios else {})}
    common.finish(results, a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
