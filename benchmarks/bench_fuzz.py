"""Hostile input: a seeded fuzzer of the decoder and the dump-log text reader (issue 17).

Run from the repository root::

    python benchmarks/bench_fuzz.py --cases 1e6 --workers 2          # ≈ 40 min on the 2-core dev machine
    python benchmarks/bench_fuzz.py --cases 2e4 --seed 7             # a quick look
    python benchmarks/bench_fuzz.py --replay 1:12345                 # case 12345 of seed 1 again, verbosely

Every case is determined by (seed, case number) alone (``tests/fuzz.py`` builds and runs it): a batch
of the real-Kafka fixtures or of small logs generated with each compression — or a batch's lines of
a fixture's ``kafka-dump-log`` text — mutated (bit flips, truncation at every kind of boundary, length
fields and counts that lie, overlong varints, record counts of 2^31, nested sizes that overrun their
parent, compression bombs of every codec declaring or producing ~1 GiB, crafted resynchronisation
traps, garbage lines, huge numbers, malformed and deeply nested JSON), written between unchanged
neighbours and decoded through the dict path (``iter_file_rows``, as ``read_log``) and the Arrow path
(``decode_to_arrow``, as ingest). A case may end decoded or in one clean ``DecodeError`` naming the
file (the same from both paths); anything else — another exception, the paths disagreeing, a case
running past ``--timeout``, a worker dying (crash, or over ``--max-memory-gib`` of address space) —
is a failure, printed with its seed and case number, and the exit status is 1.

Measured: cases per second (wall, all workers), outcome counts (accepted, accepted with reported
issues, each kind of clean error), the slowest case, and each worker's peak RSS (with the case that
raised it last).
"""

from __future__ import annotations

import argparse
import dataclasses
import multiprocessing as mp
import os
import resource
import shutil
import signal
import sys
import tempfile
import time
import traceback
from collections import Counter
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import common
from common import per_s, print_table, progress

from tests.fuzz import (
    BINARY_MUTATORS,
    TEXT_MUTATORS,
    Corpus,
    Failure,
    _bombs,
    _valid_bombs,
    build_corpus,
    make_case,
    original_cases,
    run_case,
)


class CaseTimeout(BaseException):
    """Raised by SIGALRM in a case running too long (a BaseException: no reader's ``except Exception`` hides it)."""


def _alarm(signum: int, frame: object) -> None:
    raise CaseTimeout()


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _worker(
    w: int,
    workers: int,
    seed: int,
    cases: int,
    text_share: float,
    timeout: float,
    max_memory_gib: float,
    work: str,
    corpus: Corpus,
    done: mp.Array,
    current: mp.Array,
    results: mp.Queue,
) -> None:
    """Cases ``w, w + workers, ...``: outcome counts, per-mutator time, failures and the peak RSS."""
    limit = int(max_memory_gib * (1 << 30))
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    signal.signal(signal.SIGALRM, _alarm)
    path = os.path.join(work, f"case-{w}.bin")
    outcomes: Counter = Counter()
    mutators: dict[str, list] = {}  # name -> [cases, seconds, max seconds, errors]
    failures: list[dict] = []
    slowest = (0.0, -1, "")
    rss_case = (0.0, -1, "")
    for number in range(w, cases, workers):
        current[w] = number
        case = make_case(corpus, seed, number, path, text_share)
        rss_before = _rss_mb()
        t0 = time.perf_counter()
        signal.setitimer(signal.ITIMER_REAL, timeout)
        try:
            outcome = run_case(case)
        except (Failure, CaseTimeout, Exception) as exc:  # noqa: BLE001 — every failure is recorded
            outcome = "FAILURE"
            message = (
                f"timed out after {timeout} s"
                if isinstance(exc, CaseTimeout)
                else str(exc)
                if isinstance(exc, Failure)
                else f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}"
            )
            failures.append(
                {
                    "case": number,
                    "mutator": case.mutator,
                    "source": case.source,
                    "description": case.description,
                    "failure": message[:2000],
                }
            )
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        seconds = time.perf_counter() - t0
        outcomes[outcome] += 1
        m = mutators.setdefault(case.mutator, [0, 0.0, 0.0, 0])
        m[0] += 1
        m[1] += seconds
        m[2] = max(m[2], seconds)
        m[3] += outcome not in ("accepted", "accepted with issues")
        if seconds > slowest[0]:
            slowest = (seconds, number, f"{case.mutator}: {case.description}")
        rss = _rss_mb()
        if rss > rss_before:
            rss_case = (rss, number, f"{case.mutator}: {case.description}")
        done[w] += 1
    results.put(
        {
            "worker": w,
            "outcomes": dict(outcomes),
            "mutators": mutators,
            "failures": failures,
            "slowest": slowest,
            "peak_rss_mb": _rss_mb(),
            "rss_case": rss_case,
        }
    )


def replay(corpus: Corpus, seed: int, number: int, work: str, text_share: float) -> int:
    """Run one case in this process and print all about it."""
    case = make_case(corpus, seed, number, os.path.join(work, "replay.bin"), text_share)
    print(f"case {seed}:{number}: {case.mutator} on {case.source}: {case.description}")
    print(f"file kind {case.file.kind.value}, {len(case.data):,} bytes, options {dataclasses.asdict(case.options)}")
    t0 = time.perf_counter()
    try:
        print(f"outcome: {run_case(case)}")
        status = 0
    except Failure as exc:
        traceback.print_exc()
        print(f"FAILURE: {exc}")
        status = 1
    print(f"{time.perf_counter() - t0:.3f} s, peak RSS {_rss_mb():.0f} MB")
    return status


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", type=float, default=1e6, help="binary + text cases in all (default 1e6)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--workers", type=int, default=2, help="processes (default 2)")
    ap.add_argument("--text-share", type=float, default=0.2, help="share of dump-log text cases (default 0.2)")
    ap.add_argument(
        "--timeout",
        type=float,
        default=300,
        help="seconds one case may take (default 300; the largest valid batches take ~10 s idle)",
    )
    ap.add_argument("--max-memory-gib", type=float, default=6, help="address space of a worker (default 6 GiB)")
    ap.add_argument(
        "--work-dir",
        default="/dev/shm" if os.path.isdir("/dev/shm") else None,
        help="where the case files and generated logs go (default /dev/shm: a case is a file write)",
    )
    ap.add_argument("--replay", metavar="SEED:CASE", help="run one case verbosely")
    ap.add_argument("--out", help="write the results as JSON here")
    a = ap.parse_args(argv)
    work = tempfile.mkdtemp(prefix="kraft-replay-fuzz-", dir=a.work_dir)
    try:
        corpus = build_corpus(Path(work))
        if a.replay:
            seed, number = map(int, a.replay.split(":"))
            return replay(corpus, seed, number, work, a.text_share)
        return fuzz(a, corpus, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def fuzz(a: argparse.Namespace, corpus: Corpus, work: str) -> int:
    """The parallel run and its report."""

    info = common.machine_info()
    common.print_machine(info)
    cases = int(a.cases)
    progress(
        f"corpus: {len(corpus.real)} real + {len(corpus.generated)} generated files "
        f"({corpus.batches():,} batches), {len(corpus.dumps)} dump texts; building the bombs"
    )
    _bombs(), _valid_bombs()  # built once, before the workers fork
    for case in original_cases(corpus, os.path.join(work, "warm-up.bin")):  # imports, generated body readers
        if run_case(case) != "accepted":
            raise RuntimeError(f"the unmutated corpus file {case.source} does not decode cleanly")
    ctx = mp.get_context("fork")
    done, current, results = ctx.Array("q", a.workers), ctx.Array("q", a.workers), ctx.Queue()
    procs = [
        ctx.Process(
            target=_worker,
            args=(
                w,
                a.workers,
                a.seed,
                cases,
                a.text_share,
                a.timeout,
                a.max_memory_gib,
                work,
                corpus,
                done,
                current,
                results,
            ),
        )
        for w in range(a.workers)
    ]
    t0 = time.perf_counter()
    for p in procs:
        p.start()
    parts: list[dict] = []
    last = t0
    while len(parts) < len(procs):
        try:
            parts.append(results.get(timeout=5))
        except Exception:  # noqa: BLE001 — queue.Empty: check the workers are alive
            dead = [w for w, p in enumerate(procs) if not p.is_alive() and p.exitcode not in (0, None)]
            if dead and len(parts) + len(dead) >= len(procs):
                break
        if time.perf_counter() - last > 60:
            last = time.perf_counter()
            n = sum(done)
            progress(f"{n:,}/{cases:,} cases, {per_s(n, last - t0):,.0f}/s")
    wall = time.perf_counter() - t0
    for p in procs:
        p.join()
    dead = [(w, p.exitcode, current[w]) for w, p in enumerate(procs) if p.exitcode != 0]
    for w, code, number in dead:
        print(
            f"FAILURE: worker {w} died (exit code {code}) in case {a.seed}:{number}; reproduce: "
            f"python benchmarks/bench_fuzz.py --replay {a.seed}:{number}"
        )

    outcomes: Counter = Counter()
    mutators: dict[str, list] = {}
    failures = []
    for part in parts:
        outcomes.update(part["outcomes"])
        failures += part["failures"]
        for name, (n, s, mx, errors) in part["mutators"].items():
            m = mutators.setdefault(name, [0, 0.0, 0.0, 0])
            m[0], m[1], m[2], m[3] = m[0] + n, m[1] + s, max(m[2], mx), m[3] + errors
    n = sum(outcomes.values())
    slowest = max(p["slowest"] for p in parts)
    text = sum(mutators.get(k, [0])[0] for k in TEXT_MUTATORS)
    summary = {
        "cases": n,
        "binary": n - text,
        "text": text,
        "workers": a.workers,
        "wall_s": wall,
        "cases_per_s": per_s(n, wall),
        "failures": len(failures) + len(dead),
        "accepted": outcomes["accepted"] + outcomes["accepted with issues"],
        "clean_errors": n - outcomes["accepted"] - outcomes["accepted with issues"] - outcomes["FAILURE"],
        "slowest_ms": slowest[0] * 1e3,
        "slowest_case": f"{a.seed}:{slowest[1]} ({slowest[2][:80]})",
        "peak_rss_mb": max(p["peak_rss_mb"] for p in parts),
        "seed": a.seed,
    }
    print_table(
        "Fuzzing (`benchmarks/bench_fuzz.py`)",
        [summary],
        [
            "cases",
            "binary",
            "text",
            "workers",
            ("wall_s", "wall s"),
            ("cases_per_s", "cases/s"),
            "failures",
            "accepted",
            ("clean_errors", "clean errors"),
            ("slowest_ms", "slowest case ms"),
            ("peak_rss_mb", "peak RSS MB (a worker)"),
        ],
        note=f"slowest case: {summary['slowest_case']}; peak RSS raised last by: "
        + "; ".join(
            f"worker {p['worker']} case {a.seed}:{p['rss_case'][1]} "
            f"({p['rss_case'][2][:80]}) → {p['rss_case'][0]:.0f} MB"
            for p in parts
        ),
    )
    rows = [
        {
            "mutator": name,
            "cases": m[0],
            "clean_error_pct": 100 * m[3] / m[0],
            "mean_us": m[1] / m[0] * 1e6,
            "max_ms": m[2] * 1e3,
        }
        for name, m in sorted(mutators.items(), key=lambda kv: -kv[1][0])
    ]
    print_table(
        "Per mutator",
        rows,
        ["mutator", "cases", ("clean_error_pct", "clean error %"), ("mean_us", "mean µs"), ("max_ms", "max ms")],
    )
    kinds = [{"outcome": k, "cases": v, "pct": 100 * v / n} for k, v in outcomes.most_common()]
    print_table(
        "Outcomes",
        kinds[:40],
        ["outcome", "cases", ("pct", "%")],
        note=f"{len(kinds)} distinct outcomes; errors by kind (numbers and quoted text removed)",
    )
    for f in failures[:50]:
        print(
            f"FAILURE case {a.seed}:{f['case']} [{f['mutator']}] {f['source']}: {f['description']}\n"
            f"  {f['failure']}\n  reproduce: python benchmarks/bench_fuzz.py --replay {a.seed}:{f['case']}"
        )
    results = {
        "machine": info,
        "summary": summary,
        "mutators": rows,
        "outcomes": kinds,
        "failures": failures,
        "dead_workers": dead,
        "binary_mutators": sorted(BINARY_MUTATORS),
        "text_mutators": sorted(TEXT_MUTATORS),
    }
    common.finish(results, a.out)
    return 1 if failures or dead else 0


if __name__ == "__main__":
    sys.exit(main())
