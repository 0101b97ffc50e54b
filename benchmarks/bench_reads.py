"""The read commands as a user runs them: whole ``kraft-replay`` processes, cold, side by side with Kafka's
metadata shell loading the same log (issue 14 part 5).

Run from the repository root::

    python benchmarks/bench_reads.py --kinds sample,fixtures   # ~20 min on 2 cores (+1-3 min per lake ingest)
    python benchmarks/bench_reads.py --kinds gen --sizes 1e5,1e6,1e7 --out reads.json
    python benchmarks/bench_reads.py --kinds fixtures --commands replay,shell --runs 3

Logs (``--kinds``): ``sample`` = ``data/sample`` (about 10^4 generated records, four segments and a
snapshot); ``fixtures`` = the real-Kafka logs under ``tests/fixtures/kafka/``; ``gen`` = generated logs of
about ``--sizes`` records (one segment, a snapshot half-way), built once and cached under ``--data-dir``
(``benchmarks/common.py``). Each log's lake is ingested once with its temporal image
(``bench_kafka.ensure_lake``, cached under ``--data-dir/lakes``; in a separate process, so no Spark JVM
runs while the reads are timed); the ingest time is reported, not counted.

Each command runs as its own process, ``python -m cli.main ...`` of this tree (its modules compiled first, as
an installed package's are) on the default read path
(Kafka's and Spark's master variables removed from its environment: a local lake is read in process, no
JVM): one warm-up run, then ``--runs`` measured runs. Every run must exit 0 and print valid JSON (and
``replay``, ``show`` and ``replay --log`` the answer computed in this process from the lake); a run that
does not makes the row an error row, not timed. Offsets X: ``start`` = a little after the log's first
answerable offset (its first offset, or the first snapshot's when the log starts later), ``middle``,
``end`` = its last offset; A = X minus about 1000 offsets (never before the start); T = a topic of the
image at X, N = a broker registered at X (both found in this process before timing).

Commands (``--commands``, default all):

* ``log-info``: ``log-info --lake L --json``
* ``replay``: ``replay --lake L --json --at-offset X``
* ``show``: ``show partitions --lake L --topic T --json --at-offset X``
* ``diff``: ``diff --lake L --after-offset A --to-offset X --json``
* ``changes``: ``changes --lake L --after-offset A --to-offset X --broker N --json``
* ``replay-log``: ``replay --log <log dir> --json`` (decoded and replayed in process, no lake; logs of
  at most 10^6 records)
* ``shell``: Kafka's metadata shell (``MetadataShell --snapshot <segment> tree /image/provenance
  /image/topics``: loads the log and prints its provenance, topics and partitions), its JVM started
  directly with the test harness's options (``-XX:TieredStopAtLevel=1``, serial GC, ``-Xmx`` ``--heap``);
  the same warm-up + ``--runs`` treatment. Its non-interactive mode may print before the loader
  published the last batch, or never finish (seen with 3.9.1: ``waitUntilCaughtUp`` sleeping forever;
  killed after 60 s + 1 s per 50,000 records): such a run is repeated (up to 5 tries, counted under
  ``shell retries``) so that every measured run printed the image at the log's last offset. Only for a log of
  one segment starting at offset 0 (the shell loads one file); "n/a" with the reason otherwise.
* ``oracle``: Kafka's own replay of the log (``bench_kafka.kafka_oracle``: ``MetadataDelta.replay`` in
  a warm JVM, best of ``--runs``, JVM start excluded; from the newest snapshot when the log has one).

Columns of the reads table: ``command``, ``log``, ``at`` (offset position and X), ``wall s`` (median of
the runs), ``min–max s`` (wall), ``CPU s`` (median user + system seconds of the process and all its
descendants), ``peak RSS MB`` (largest over the runs; the command is forked from a small launcher,
``common.run_measured``), ``shell s`` (the metadata shell's median wall on the same log),
``÷ shell`` (wall s / shell s; below 1 = faster than the shell), ``load`` (1-minute load average after
the row), ``error``. The logs table gives per log the records, segments, snapshots,
lake ingest seconds, the offsets used, the shell's median / min–max wall, CPU and peak RSS, and the
oracle's replay seconds. The machine (CPU, cores, load averages at start and end, commit) is printed
first and written with every row to ``--out``.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import re
import statistics
import sys
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import common
from bench_kafka import _shell_once, ensure_lake, kafka_oracle
from common import ROOT, BenchLog, Measured, print_table, progress

COMMANDS = ("log-info", "replay", "show", "diff", "changes", "replay-log", "shell", "oracle")
POSITIONS = ("start", "middle", "end")
DELTA = 1000  # offsets between A and X
LOG_REPLAY_MAX_RECORDS = 10**6
SHELL_COMMAND = ("tree", "/image/provenance", "/image/topics")
SHELL_ATTEMPTS = 5
#: variables that would send reads to Spark or another reader: the benchmark measures the default path
_READER_VARIABLES = ("KRAFT_REPLAY_MASTER", "SPARK_REMOTE", "KRAFT_REPLAY_READER")


@dataclass
class Point:
    """Where a read is asked: position label, X, A, a topic and a broker of the image at X."""

    position: str
    offset: int
    from_offset: int
    topic: str | None
    broker: int | None


# ---------------------------------------------------------------- lakes and offsets


def _ensure_lake(log: BenchLog, data_dir: str) -> tuple[str, float | None]:
    return ensure_lake(None, log, data_dir)  # Spark starts only if the lake must be ingested


def ensure_lakes(logs: Sequence[BenchLog], data_dir: str) -> list[tuple[str, float | None]]:
    """Every log's lake (path, ingest seconds or None when reused), ingested in a child process whose
    Spark JVM is gone before anything is timed."""
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        return list(pool.map(partial(_ensure_lake, data_dir=data_dir), logs))


def _first_answerable(source: Any) -> tuple[int, int]:
    """(first offset whose image the lake knows, last offset): the log's first offset, or, for a log whose
    start was deleted, the last offset of its first snapshot that reaches the log."""
    first, last = source.bounds()
    if first > 0:
        ends = [s.end_offset - 1 for s in source.snapshots() if s.end_offset >= first]
        first = max(first, min(ends, default=first))
    return first, last


def find_points(lake: str) -> tuple[list[Point], dict[int, dict[str, Any]]]:
    """The start, middle and end points of the lake, and the image JSON at each X (for the answer checks)."""
    from image.temporal.lake_source import ArrowSource
    from image.temporal.reads import image_at
    from metadata.lake.files import LakeFiles

    source = ArrowSource(LakeFiles(lake))
    first, last = _first_answerable(source)
    span = last - first
    xs = {"start": first + min(DELTA, span // 10), "middle": first + span // 2, "end": last}
    points, docs = [], {}
    for position in POSITIONS:
        x = xs[position]
        doc, _ = image_at(source, x)
        docs[x] = doc
        names = [t["name"] for t in doc["topics"]]
        topic = next((n for n in names if not n.startswith("__")), names[0] if names else None)
        brokers = sorted(doc["brokers"], key=lambda b: (b["fenced"], b["brokerId"]))
        points.append(Point(position, x, max(first, x - DELTA), topic, brokers[0]["brokerId"] if brokers else None))
    return points, docs


# ---------------------------------------------------------------- runs


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _READER_VARIABLES}
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def _last_line(text: str) -> str:
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1][:300] if lines else ""


def _summary(runs: Sequence[Measured]) -> dict[str, Any]:
    walls = [m.wall_s for m in runs]
    return {
        "wall_s": statistics.median(walls),
        "wall_min_s": min(walls),
        "wall_max_s": max(walls),
        "wall_range": f"{min(walls):.2f}–{max(walls):.2f}",
        "cpu_s": statistics.median(m.cpu_s or 0.0 for m in runs),
        "peak_rss_mb": max(m.peak_rss_mb for m in runs),
        "runs": len(runs),
        "walls_s": walls,
    }


def time_process(args: list[str], runs: int, answer: Callable[[str], Any]) -> dict[str, Any]:
    """``python -m cli.main args``: one warm-up and ``runs`` measured processes, each checked to exit 0 and
    to print what ``answer(stdout)`` accepts (it raises ``ValueError``/``KeyError``/``OSError`` otherwise; its
    last result is the row's ``answer``); the first failure ends the row as an error."""
    cmd = [*common.KRAFT_REPLAY, *args]
    measured, result = [], None
    for i in range(runs + 1):
        m = common.run_measured(cmd, cwd=ROOT, env=_env(), timeout=1800)
        if m.returncode != 0:
            return {"error": f"exit {m.returncode}: {_last_line(m.stderr) or _last_line(m.stdout)}"}
        try:
            result = answer(m.stdout)
        except (ValueError, KeyError, OSError) as e:
            return {"error": f"unexpected output ({e}): {m.stdout[:200]!r}"}
        if i:
            measured.append(m)
    return {**_summary(measured), "answer": result}


def time_command(args: list[str], runs: int, expected: Any = None) -> dict[str, Any]:
    """:func:`time_process` of a command printing JSON (equal to ``expected`` if given)."""

    def checked(stdout: str) -> None:
        try:
            answer = json.loads(stdout)
        except json.JSONDecodeError as e:
            raise ValueError(f"invalid JSON ({e})") from None
        if expected is not None and answer != expected:
            raise ValueError("wrong answer: differs from the image computed in process from the lake")

    row = time_process(args, runs, checked)
    row.pop("answer", None)
    return row


def _provenance_offset(stdout: str) -> int | None:
    m = re.match(r"offset (-?\d+),", stdout)
    return int(m.group(1)) if m else None


def shell_unfit(log: BenchLog) -> str | None:
    """Why the metadata shell cannot load the whole log from one file, or None."""
    segments = sorted(Path(log.dir).glob("*.log"))
    if len(segments) != 1:
        return f"{len(segments)} segments: the shell loads one file"
    if (base := int(segments[0].stem)) != 0:
        return f"its segment starts at offset {base} (the rest is in a snapshot): the shell loads one file"
    return None


def time_shell(log: BenchLog, runs: int, heap: str) -> dict[str, Any]:
    """The metadata shell loading the log's segment and printing its topics: warm-up + ``runs`` runs, each
    one that printed the image at the log's last offset (early answers are retried and counted)."""
    if reason := shell_unfit(log):
        return {"note": f"n/a: {reason}"}
    segment = str(next(Path(log.dir).glob("*.log")))
    progress(f"metadata shell {log.name}")
    measured, retries = [], 0
    timeout = 60 + log.records / 50_000  # a hung shell (below) is killed
    for i in range(runs + 1):
        for _ in range(SHELL_ATTEMPTS):
            m = _shell_once(segment, log.kafka_version, heap, SHELL_COMMAND, timeout)
            offset = _provenance_offset(m.stdout)
            if m.returncode == 0 and offset == log.last_offset:
                break
            retries += 1
        else:
            return {
                "error": f"exit {m.returncode}, offset {offset} ≠ {log.last_offset} after {SHELL_ATTEMPTS} "
                f"tries: {_last_line(m.stderr)}"
            }
        if i:
            measured.append(m)
    return {**_summary(measured), "retries": retries, "note": f"-Xmx{heap}, C1 only, `{' '.join(SHELL_COMMAND)}`"}


def read_rows(
    log: BenchLog, lake: str, points: list[Point], docs: dict[int, dict[str, Any]], commands: Sequence[str], runs: int
) -> list[dict[str, Any]]:
    """Time every requested kraft-replay read command on one log."""
    from image.parts import part_rows

    plan: list[tuple[str, str, list[str], Callable[[], Any] | None]] = []
    skipped: list[tuple[str, str, str]] = []
    if "log-info" in commands:
        plan.append(("log-info", "–", ["log-info", "--lake", lake, "--json"], None))
    for p in points:
        at = f"{p.position} {p.offset}"
        x = ["--at-offset", str(p.offset)]
        delta = ["--after-offset", str(p.from_offset), "--to-offset", str(p.offset)]
        if "replay" in commands:
            plan.append(("replay", at, ["replay", "--lake", lake, "--json", *x], lambda p=p: docs[p.offset]))
        if "show" in commands and p.topic is None:
            skipped.append(("show partitions --topic", at, "no topic in the image at X: not run"))
        elif "show" in commands:
            plan.append(
                (
                    f"show partitions --topic {p.topic}",
                    at,
                    ["show", "partitions", "--lake", lake, "--topic", p.topic, "--json", *x],
                    lambda p=p: part_rows(docs[p.offset], "partitions", topic=p.topic),
                )
            )
        if "diff" in commands:
            plan.append((f"diff from {p.from_offset}", at, ["diff", "--lake", lake, *delta, "--json"], None))
        if "changes" in commands and p.broker is None:
            skipped.append(("changes --broker", at, "no broker registered in the image at X: not run"))
        elif "changes" in commands:
            plan.append(
                (
                    f"changes from {p.from_offset} --broker {p.broker}",
                    at,
                    ["changes", "--lake", lake, *delta, "--broker", str(p.broker), "--json"],
                    None,
                )
            )
    if "replay-log" in commands and log.records <= LOG_REPLAY_MAX_RECORDS:
        end = points[-1].offset
        plan.append(("replay --log", f"end {end}", ["replay", "--log", log.dir, "--json"], lambda: docs[end]))
    rows = []
    for command, at, args, expected in plan:
        progress(f"{command} {log.name} {at}")
        row = {
            "command": command,
            "log": log.name,
            "at": at,
            "argv": args,
            **time_command(args, runs, expected() if expected else None),
            "load": common.load_average()[0],
        }
        rows.append(row)
    rows += [{"command": command, "log": log.name, "at": at, "error": why} for command, at, why in skipped]
    return rows


# ---------------------------------------------------------------- main


LOG_COLUMNS = [
    ("name", "log"),
    "records",
    "segments",
    "snapshots",
    ("ingest_s", "lake ingest s"),
    ("offsets", "X start/middle/end"),
    ("shell_s", "shell s"),
    ("shell_range", "shell min–max s"),
    ("shell_cpu_s", "shell CPU s"),
    ("shell_rss_mb", "shell peak RSS MB"),
    ("shell_retries", "shell retries"),
    ("oracle_s", "Kafka replay s (warm JVM)"),
    ("oracle_check", "oracle check"),
    ("shell_note", "shell"),
]
READ_COLUMNS = [
    "command",
    "log",
    "at",
    ("wall_s", "wall s"),
    ("wall_range", "min–max s"),
    ("cpu_s", "CPU s"),
    ("peak_rss_mb", "peak RSS MB"),
    ("shell_s", "shell s"),
    ("ratio", "÷ shell"),
    "load",
    "error",
]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1e5,1e6,1e7", help="generated log sizes in records (default 1e5,1e6,1e7)")
    ap.add_argument("--kinds", default="sample,fixtures,gen", help="sample, fixtures, gen (default all)")
    ap.add_argument("--fixtures", default="", help="only fixtures whose name contains this (e.g. 4.1.1/)")
    ap.add_argument("--runs", type=int, default=5, help="measured runs per command after one warm-up (default 5)")
    ap.add_argument("--commands", default=",".join(COMMANDS), help=f"subset of {','.join(COMMANDS)}")
    ap.add_argument(
        "--kafka-version", default="4.1.1", help="Kafka for the sample and generated logs (fixtures use their own)"
    )
    ap.add_argument("--heap", default="1g", help="metadata shell -Xmx (default 1g)")
    ap.add_argument("--data-dir", default=common.DEFAULT_DATA_DIR)
    ap.add_argument("--out", help="write every result as JSON here")
    a = ap.parse_args(argv)
    commands = [c.strip() for c in a.commands.split(",") if c.strip()]
    kinds = [k.strip() for k in a.kinds.split(",") if k.strip()]
    if unknown := (set(commands) - set(COMMANDS)) | (set(kinds) - {"sample", "fixtures", "gen"}):
        ap.error(f"unknown command/kind {', '.join(sorted(unknown))}")

    common.compile_modules()
    logs = common.bench_logs(common.parse_sizes(a.sizes), kinds, a.data_dir)
    logs = [lg for lg in logs if lg.kind != "fixture" or a.fixtures in lg.name]
    for lg in logs:
        if lg.kind != "fixture":
            lg.kafka_version = a.kafka_version
    info = common.machine_info(sorted({lg.kafka_version for lg in logs}))
    info["env_removed"] = [v for v in _READER_VARIABLES if v in os.environ]
    common.print_machine(info)
    results: dict[str, Any] = {"machine": info, "runs": a.runs, "commands": commands, "logs": [], "rows": []}

    progress("lakes (ingested in a child process where not cached)")
    lakes = ensure_lakes(logs, a.data_dir)
    results["load_average_after_ingest"] = common.load_average()
    for lg, (lake, ingest_s) in zip(logs, lakes, strict=True):
        points, docs = find_points(lake)
        entry: dict[str, Any] = {
            **lg.row(),
            "lake": lake,
            "ingest_s": ingest_s,
            "points": [asdict(p) for p in points],
            "offsets": "/".join(str(p.offset) for p in points),
        }
        if "shell" in commands:
            shell = time_shell(lg, a.runs, a.heap)
            entry.update(
                shell_s=shell.get("wall_s"),
                shell_range=shell.get("wall_range"),
                shell_cpu_s=shell.get("cpu_s"),
                shell_rss_mb=shell.get("peak_rss_mb"),
                shell_retries=shell.get("retries"),
                shell_note=shell.get("error") or shell.get("note"),
                shell=shell,
            )
        if "oracle" in commands:
            oracle = kafka_oracle(lg, lg.kafka_version, "auto" if lg.snapshots else "log", 2, a.runs, "-Xmx1g")
            end = points[-1].offset  # the log's end with its snapshots (BenchLog.last_offset: segments only)
            check = oracle.get("error") or (
                "ok" if oracle.get("last_offset") == end else f"offset {oracle.get('last_offset')} ≠ {end}"
            )
            entry.update(oracle_s=oracle.get("replay_s"), oracle_check=check, oracle=oracle)
        results["logs"].append(entry)
        for row in read_rows(lg, lake, points, docs, commands, a.runs):
            row["shell_s"] = entry.get("shell_s")
            if row.get("wall_s") and row["shell_s"]:
                row["ratio"] = row["wall_s"] / row["shell_s"]
            results["rows"].append(row)

    print_table("Logs", results["logs"], LOG_COLUMNS)
    print_table(
        f"Read commands: whole processes, median of {a.runs} after 1 warm-up",
        results["rows"],
        READ_COLUMNS,
        note="shell s: the metadata shell's median wall on the same log (n/a: see the logs table); "
        "÷ shell < 1: faster than the shell.",
    )
    return common.finish(results, a.out)


if __name__ == "__main__":
    sys.exit(main())
