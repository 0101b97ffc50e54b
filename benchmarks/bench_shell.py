"""``kraft-replay shell`` on generated lakes (issue 33): how long the tree at a point takes to build (the first
command, and ``at``), what a command costs once it is built, and the time-travel commands.

Run from the repository root::

    python benchmarks/bench_shell.py --sizes 1e5,1e6 --out shell.json

Each size is a generated log (``benchmarks/common.py``: about n records, a snapshot half-way, one segment) and its
lake with the temporal image (``bench_kafka.ensure_lake``, ingested in a child process whose Spark JVM is gone
before anything is timed; cached under ``--data-dir``). Then, in this process, on the lake read in process
(``ArrowSource``, as ``shell --lake`` reads a local lake), with the newest release line's rendering:

* ``open + first tree``: a session at the log's end and its first command (``ls /image/topics/byName``): the
  tree built;
* ``at X``: ``--points`` offsets spread over the log (and a random order of them), each a new point: wall per
  ``at`` (median, max);
* ``command``: ``cat`` of a partition, ``ls`` of the topics, ``tree`` of the brokers, ``cat /image/provenance``
  at a built point: wall per command (median of 20);
* ``next`` / ``prev`` of a partition, ``diff`` of the topics against the middle of the log, ``history`` of a
  partition (``kraft-replay history``'s) and of the configs (the generic one);
* ``cold process``: ``kraft-replay shell --lake L -- cat /image/provenance`` as a fresh process (start-up, the
  tree at the end, the answer), median of ``--runs``.

The machine and the load average are printed first; every row is written to ``--out``.
"""

from __future__ import annotations

import argparse
import io
import os
import random
import statistics
import subprocess
import sys
import time
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import common
from bench_reads import ensure_lakes
from common import ROOT, print_table, progress


def _wall(fn) -> tuple[float, Any]:  # noqa: ANN001
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def _run(session, words: list[str]) -> str:  # noqa: ANN001
    from cli.shell.commands import Context, run

    out = io.StringIO()
    run(Context(session, out), words)
    return out.getvalue()


def measure(name: str, lake: str, points: int, runs: int) -> list[dict[str, Any]]:
    from cli.shell.session import Session
    from image.node.releases import shell_release
    from image.temporal.lake_source import ArrowSource
    from metadata.lake.files import LakeFiles

    rows: list[dict[str, Any]] = []

    def row(what: str, walls: list[float], note: str = "") -> None:
        rows.append(
            {
                "lake": name,
                "what": what,
                "n": len(walls),
                "median_s": statistics.median(walls),
                "max_s": max(walls),
                "note": note,
                "load": common.load_average()[0],
            }
        )
        progress(f"{name} {what}: median {statistics.median(walls):.3f} s, max {max(walls):.3f} s {note}")

    source = ArrowSource(LakeFiles(lake))
    first, last = source.bounds()
    session = Session(source, shell_release(), last)
    wall, listing = _wall(lambda: _run(session, ["ls", "/image/topics/byName"]))
    row("open + first tree", [wall], f"{len(listing.splitlines())} topics")
    topic = listing.splitlines()[len(listing.splitlines()) // 2]
    partition = f"/image/topics/byName/{topic}/0"
    offsets = [first + (last - first) * i // (points - 1) for i in range(points)]
    random.Random(7).shuffle(offsets)
    walls = []
    for offset in offsets:
        wall, _ = _wall(lambda offset=offset: _run(session, ["at", str(offset)]))
        walls.append(wall)
    row("at X", walls, f"{points} points over {first}…{last}")
    _run(session, ["at", str(last)])
    for words in (
        ["cat", partition],
        ["ls", "/image/topics/byName"],
        ["tree", "/image/cluster/brokers"],
        ["cat", "/image/provenance"],
    ):
        row(
            " ".join(words[:1] + [words[1].replace(topic, "T")]),
            [_wall(lambda: _run(session, words))[0] for _ in range(20)],
        )
    middle = (first + last) // 2
    for words in (
        ["at", str(middle)],
        ["next", partition],
        ["prev", partition],
        ["diff", str(last), "/image/topics"],
        ["history", partition],
        ["history", "/image/configs"],
    ):
        wall, out = _wall(lambda words=words: _run(session, words))
        row(" ".join(words).replace(topic, "T"), [wall], f"{len(out.splitlines())} lines")
    env = {k: v for k, v in os.environ.items() if k not in ("SPARK_REMOTE", "KRAFT_REPLAY_MASTER")}
    env["PYTHONPATH"] = str(ROOT)
    walls = []
    for _ in range(runs + 1):
        command = [sys.executable, "-m", "cli.main", "shell", "--lake", lake, "--", "cat", "/image/provenance"]
        wall, done = _wall(lambda command=command: subprocess.run(command, capture_output=True, text=True, env=env))
        if done.returncode != 0 or not done.stdout.startswith(f"offset {last},"):
            raise RuntimeError(f"shell --lake failed: {done.stderr[-2000:]}")
        walls.append(wall)
    row("cold process: shell --lake L -- cat /image/provenance", walls[1:], "after a warm-up run")
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1e5,1e6", help="log sizes in records (default 1e5,1e6)")
    ap.add_argument("--points", type=int, default=20, help="points of the log visited with at (default 20)")
    ap.add_argument("--runs", type=int, default=5, help="cold processes measured (default 5)")
    ap.add_argument("--data-dir", default=common.DEFAULT_DATA_DIR)
    ap.add_argument("--out", help="write the rows as JSON here")
    a = ap.parse_args(argv)
    info = common.machine_info()
    common.print_machine(info)
    logs = [common.generated_log(n, a.data_dir) for n in common.parse_sizes(a.sizes)]
    lakes = ensure_lakes(logs, a.data_dir)
    rows = []
    for log, (lake, ingest_s) in zip(logs, lakes):
        progress(f"{log.name}: {log.records} records, lake {lake} (ingest {ingest_s or 'reused'} s)")
        rows += measure(log.name, lake, a.points, a.runs)
    print_table(
        "kraft-replay shell on lakes",
        rows,
        ["lake", "what", "n", ("median_s", "median s"), ("max_s", "max s"), "note", "load"],
    )
    return common.finish({"machine": info, "rows": rows}, a.out)


if __name__ == "__main__":
    sys.exit(main())
