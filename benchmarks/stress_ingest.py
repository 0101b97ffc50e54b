"""Stress test of the lake's commit protocol: N ingests of random slices of one log at once, for several rounds
(some processes killed at a random step of their transaction), in process and on Spark mixed, then the lake
compared row for row with one sequential ingest of everything that was committed, and ``kraft-replay check``-ed:
it must report exactly the problems of that sequential ingest (random slices may leave offsets that no slice holds).

Run from the repository root::

    python benchmarks/stress_ingest.py --processes 4 --rounds 3
    python benchmarks/stress_ingest.py --processes 3 --rounds 2 --kill 0.3 --records 20000 --out stress.json
    python benchmarks/stress_ingest.py --engines local --processes 6 --rounds 5 --kill 0.3

Each ingest is ``kraft-replay ingest <slice> --lake <lake> --engine <engine> --json`` in its own process, the
engine drawn from ``--engines`` (default ``local,spark``: in process, no JVM, or its own Spark session on
``local[1]``): a slice is a random run of consecutive segments of a generated log (small segments, a snapshot
half-way), plus the snapshot with probability 0.3. With ``--kill P`` each process is, with probability P, killed
(``KRAFT_REPLAY_FAULT=kill@<step>``) at a random step of its transaction; the lease then expires after ``--lease``
seconds. A process counts as committed if it exited 0, or was killed after its commit. Runtime on the 2-core dev
machine: about a minute per round of 4 with Spark processes (each starts a JVM), seconds in process.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import common
from common import print_table, progress

from tests.processes import KRAFT_REPLAY, environment

STEPS = ("lease", "recovered", "write", "written", "committed")


def _problems(report) -> list[str]:
    """Every problem a :func:`~metadata.lake.check.check_lake` report lists, as ``check: problem``."""
    return [f"{c.name}: {p}" for c in report.checks for p in c.problems]


def slices(segments: list[Path], snapshot: Path | None, n: int, rng: random.Random) -> list[list[Path]]:
    """``n`` random runs of consecutive segments, each with the snapshot added with probability 0.3."""
    out = []
    for _ in range(n):
        i = rng.randrange(len(segments))
        j = rng.randrange(i + 1, min(len(segments), i + 1 + max(2, len(segments) // 2)) + 1)
        out.append(segments[i:j] + ([snapshot] if snapshot is not None and rng.random() < 0.3 else []))
    return out


def run_round(
    paths: list[list[Path]], lake: str, faults: list[str | None], engines: list[str], lease: float
) -> list[dict]:
    """Start one ingest per slice at once (on its engine); wait for all; what each did."""
    procs = []
    for slice_, fault, engine in zip(paths, faults, engines, strict=True):
        env = environment(
            spark=engine == "spark",
            KRAFT_REPLAY_LEASE_SECONDS=str(lease),
            **({"KRAFT_REPLAY_FAULT": fault} if fault else {}),
        )
        procs.append(
            (
                time.monotonic(),
                subprocess.Popen(
                    [*KRAFT_REPLAY, "ingest", *map(str, slice_), "--lake", lake, "--engine", engine, "--json"],
                    env=env,
                    cwd=common.ROOT,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                ),
            )
        )
    results = []
    for (t0, proc), slice_, fault, engine in zip(procs, paths, faults, engines, strict=True):
        stdout, stderr = proc.communicate(timeout=1800)
        report = json.loads(stdout) if proc.returncode == 0 else None
        results.append(
            {
                "slice": [p.name for p in slice_],
                "engine": engine,
                "fault": fault,
                "exit": proc.returncode,
                "committed": proc.returncode == 0 or fault == "kill@committed",
                "seconds": round(time.monotonic() - t0, 1),
                "waited": "waiting for" in stderr,
                "added": report["records_added"] if report else None,
                "seq": report["seq"] if report else None,
                "error": None if proc.returncode in (0, -9) else stderr.strip().splitlines()[-1:],
            }
        )
    return results


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--processes", type=int, default=4, help="concurrent ingests per round (default 4)")
    ap.add_argument("--rounds", type=int, default=3, help="rounds (default 3)")
    ap.add_argument("--records", type=float, default=3e4, help="size of the generated log (default 3e4)")
    ap.add_argument("--segment-bytes", type=int, default=128 << 10, help="segment size (default 128 KiB)")
    ap.add_argument("--kill", type=float, default=0.0, help="probability of killing a process at a random step")
    ap.add_argument("--engines", default="local,spark", help="engines the processes are drawn from (default both)")
    ap.add_argument("--lease", type=float, default=45.0, help="lease duration, seconds (default 45)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--data-dir", default=common.DEFAULT_DATA_DIR, help="cache of logs and lakes")
    ap.add_argument("--out", help="write the results as JSON here")
    a = ap.parse_args(argv)
    rng = random.Random(a.seed)
    choices = [e.strip() for e in a.engines.split(",") if e.strip()]
    if not choices or set(choices) - {"local", "spark"}:
        ap.error("--engines: local, spark or both")

    info = common.machine_info()
    common.print_machine(info)
    log = common.generated_log(int(a.records), a.data_dir, segment_bytes=a.segment_bytes)
    segments = sorted(Path(log.dir).glob("*.log"))
    snapshot = next((p for p in sorted(Path(log.dir).glob("*.checkpoint")) if not p.name.startswith("0" * 20)), None)
    lake = str(Path(a.data_dir) / "lakes" / f"stress-{log.name}")
    shutil.rmtree(lake, ignore_errors=True)
    progress(f"{log.name}: {log.records:,} records in {len(segments)} segments; lake {lake}")

    rows: list[dict] = []
    committed: list[Path] = []
    t_all = time.monotonic()
    for n in range(1, a.rounds + 1):
        paths = slices(segments, snapshot, a.processes, rng)
        faults = [f"kill@{rng.choice(STEPS)}" if rng.random() < a.kill else None for _ in paths]
        engines = [rng.choice(choices) for _ in paths]
        progress(
            f"round {n}: {a.processes} ingests at once ({', '.join(engines)})"
            + (f", faults {[f for f in faults if f]}" if any(faults) else "")
        )
        t0 = time.monotonic()
        results = run_round(paths, lake, faults, engines, a.lease)
        wall = time.monotonic() - t0
        for r, slice_ in zip(results, paths, strict=True):
            rows.append({"round": n, **r, "round_s": round(wall, 1)})
            if r["committed"]:
                committed += slice_
        failed = [r for r in results if r["error"]]
        if failed:
            progress(f"round {n}: failures {failed}")

    import image.temporal.lake_check  # noqa: F401 — registers the temporal image's check
    from image.temporal.ingest import ingest
    from metadata.lake.check import check_lake, lake_differences
    from metadata.lake.files import LakeFiles
    from metadata.lake.protocol import Lake

    reference = str(Path(a.data_dir) / "lakes" / f"stress-{log.name}-reference")
    shutil.rmtree(reference, ignore_errors=True)
    union = sorted(set(committed))
    progress(f"reference: one sequential ingest (in process) of the {len(union)} files committed")
    if union:
        ingest([str(p) for p in union], reference, engine="local", progress=False)
    stressed = Lake(lake)
    differences = lake_differences(stressed, Lake(reference)) if union else []
    report = check_lake(stressed) if stressed.exists() else None
    # random slices may leave offsets no slice holds: the sequential ingest of the union has the same gaps,
    # so the stressed lake must report exactly the reference's problems
    expected_problems = _problems(check_lake(Lake(reference))) if union else []
    added = sum(r["added"] or 0 for r in rows)
    expected = LakeFiles(reference).read("records", columns=["offset"]).num_rows if union else 0
    # a process killed after its commit reports nothing: then the added counts cannot add up
    survivors_only = all(r["fault"] != "kill@committed" for r in rows)
    results = {
        "machine": info,
        "log": log.row(),
        "processes": a.processes,
        "rounds": a.rounds,
        "kill": a.kill,
        "engines": choices,
        "seed": a.seed,
        "ingests": rows,
        "seconds": round(time.monotonic() - t_all, 1),
        "differences": differences,
        "check_problems": _problems(report) if report else [],
        "reference_check_problems": expected_problems,
        "records_added": added,
        "records_expected": expected,
        "seqs": stressed.state().seq if stressed.exists() else 0,
        "errors": [r for r in rows if r["error"]],
    }
    print_table(
        "Ingests", rows, ["round", "slice", "engine", "fault", "exit", "seconds", "waited", "added", "seq", "round_s"]
    )
    ok = (
        not differences
        and results["check_problems"] == expected_problems
        and not results["errors"]
        and (added == expected or not survivors_only)
    )
    print(
        f"\n{len(rows)} ingests in {a.rounds} rounds of {a.processes}, {results['seconds']} s; committed "
        f"{results['seqs']} ingests; records added {added:,} (one sequential ingest of the union: {expected:,}); "
        f"differences {differences or 'none'}; check problems {results['check_problems'] or 'none'} (the "
        f"sequential ingest's: {expected_problems or 'none'}): {'PASS' if ok else 'FAIL'}"
    )
    results["ok"] = ok
    common.finish(results, a.out)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
