"""The history commands as a user runs them on real lakes: whole ``kraft-replay`` processes, cold (issue 15 part 5).

Run from the repository root::

    python benchmarks/bench_history.py --sizes 1e5,1e6 --out history.json

Logs: generated logs of about ``--sizes`` records (``benchmarks/common.py``; one segment, a snapshot
half-way), each ingested once with its temporal image and cached as ``bench_reads.py`` does (in a child
process: no Spark JVM runs while anything is timed). Each command runs as its own ``python -m cli.main``
process on the default read path (in process, no JVM): one warm-up, then ``--runs`` measured runs; each
must exit 0 (and print JSON, or write the report's HTML). Commands:

* ``history partition``: ``history partition --topic T --partition P --json``, P the partition of T with the
  most versions in the lake (the busiest history);
* ``history topic``: ``history topic --topic T --json``;
* ``history broker``: ``history broker --broker N --json``, N the broker with the most versions;
* ``timeline``: ``timeline --points 1000 --json`` over the whole log;
* ``report``: ``report --out FILE`` over the whole log (plots, events, leaders, the diff of its ends).

Columns: ``command``, ``log``, ``rows`` (versions or points answered), ``wall s`` (median), ``min–max s``,
``CPU s`` (median user + system of the process and its children), ``peak RSS MB``, ``load`` (1-minute load
average after the row), ``error``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections import Counter
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import common
from bench_reads import ensure_lakes, time_process
from common import print_table, progress

COLUMNS = [
    ("command", "command"),
    ("log", "log"),
    ("rows", "rows"),
    ("wall_s", "wall s"),
    ("wall_range", "min–max s"),
    ("cpu_s", "CPU s"),
    ("peak_rss_mb", "peak RSS MB"),
    ("load", "load"),
    ("error", "error"),
]


def busiest(lake: str) -> tuple[str, int, int]:
    """(topic T and partition P with the most versions, the broker N with the most versions)."""
    from metadata.lake.files import LakeFiles

    files = LakeFiles(lake)
    partitions = files.read("image_partitions", columns=["topic", "partitionId"]).to_pylist()
    (topic, partition), _ = Counter((r["topic"], r["partitionId"]) for r in partitions).most_common(1)[0]
    brokers = files.read("image_brokers", columns=["brokerId"]).column("brokerId").to_pylist()
    return topic, partition, Counter(brokers).most_common(1)[0][0]


def rows_for(lake: str, label: str, runs: int, out_dir: str) -> list[dict[str, Any]]:
    topic, partition, broker = busiest(lake)
    report = os.path.join(out_dir, "report.html")

    def versions(stdout: str) -> int:
        return len(json.loads(stdout)["versions"])

    def points(stdout: str) -> int:
        return len(json.loads(stdout)["points"])

    def page(stdout: str) -> int:
        size = os.path.getsize(report)
        os.remove(report)
        return size

    commands = [
        (
            f"history partition {topic}-{partition}",
            ["history", "partition", "--topic", topic, "--partition", str(partition)],
            versions,
        ),
        (f"history topic {topic}", ["history", "topic", "--topic", topic], versions),
        (f"history broker {broker}", ["history", "broker", "--broker", str(broker)], versions),
        ("timeline --points 1000", ["timeline", "--points", "1000"], points),
    ]
    out = []
    for name, args, count in commands:
        progress(f"{label}: {name}")
        row = time_process([*args, "--lake", lake, "--json"], runs, count)
        row["rows"] = row.pop("answer", None)
        out.append({"command": name, "log": label, **row, "load": common.load_average()[0]})
    progress(f"{label}: report")
    row = time_process(["report", "--lake", lake, "--out", report], runs, page)
    if "answer" in row:
        row["rows"] = f"{row.pop('answer') / 1e6:.1f} MB"
    out.append({"command": "report (whole log)", "log": label, **row, "load": common.load_average()[0]})
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1e5,1e6", help="generated log sizes in records (default 1e5,1e6)")
    ap.add_argument("--runs", type=int, default=5, help="measured runs per command after one warm-up (default 5)")
    ap.add_argument("--data-dir", default=common.DEFAULT_DATA_DIR)
    ap.add_argument("--out", help="write every result as JSON here")
    a = ap.parse_args(argv)
    logs = common.bench_logs(common.parse_sizes(a.sizes), ["gen"], a.data_dir)
    info = common.machine_info()
    common.print_machine(info)
    results: dict[str, Any] = {"machine": info, "runs": a.runs, "rows": []}
    progress("lakes (ingested in a child process where not cached)")
    lakes = ensure_lakes(logs, a.data_dir)
    with tempfile.TemporaryDirectory() as out_dir:
        for lg, (lake, _) in zip(logs, lakes, strict=True):
            results["rows"] += rows_for(lake, f"{lg.name} ({lg.records:,})", a.runs, out_dir)
    print_table(f"History commands: whole processes, median of {a.runs} after 1 warm-up", results["rows"], COLUMNS)
    return common.finish(results, a.out)


if __name__ == "__main__":
    sys.exit(main())
