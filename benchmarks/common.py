"""Shared helpers of the benchmark scripts: machine info, timing, memory, the benchmark logs, tables.

Nothing here is measured itself; ``bench_ingest.py``, ``bench_kafka.py`` and ``bench_replay.py`` import it (run them
from the repository root: ``python benchmarks/bench_ingest.py ...``).

Benchmark logs are cached under ``--data-dir`` (default ``$KRAFT_REPLAY_BENCH_DIR`` or
``/tmp/kraft-replay-bench``), one directory per log, reused while its parameters are unchanged:

* ``gen-<n>``: :func:`generator.generate` of a mid-size cluster (6 brokers, 24 topics of
  8 partitions, RF 3) with enough churn for about ``n`` records (the generator decides the exact
  count), a snapshot about half-way, one segment (Kafka's default ``metadata.log.segment.bytes``,
  1 GiB, unless ``segment_bytes`` is given).
* ``idle-<n>``: what a real idle cluster writes: a small generated prefix (3 brokers, 5 topics, a
  little churn), then NoOpRecords 500 ms apart, one per batch (``metadata.max.idle.interval.ms``),
  up to ``n`` records in all (10^6 records ≈ 5.8 days of idling).
* the committed real-Kafka fixtures ``tests/fixtures/kafka/<version>/<scenario>``.
* ``sample``: the repository's data sample ``data/sample`` (generated, four segments and a snapshot).
"""

from __future__ import annotations

import datetime as dt
import json
import math
import os
import platform
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # `tests.harness` is not an installed package
    sys.path.insert(0, str(ROOT))

DEFAULT_DATA_DIR = os.environ.get("KRAFT_REPLAY_BENCH_DIR", "/tmp/kraft-replay-bench")
KAFKA_SEGMENT_BYTES = 1 << 30  # metadata.log.segment.bytes default
NOOP_INTERVAL_MS = 500
LOG_DIR_NAME = "__cluster_metadata-0"
_LOG_FORMAT = 2  # bump when the way logs are built changes (invalidates the cache)


KRAFT_REPLAY = [sys.executable, "-m", "cli.main"]
"""``kraft-replay`` from this tree as its console script runs (``cli.main:main``: only the command named is built,
the collector is tuned, no interpreter teardown at the end) — what an operator's command costs."""

PACKAGES = ("cli", "image", "metadata", "replica", "generator")


def compile_modules() -> None:
    """Compile this tree's modules, as pip compiles an installed package's: the commands a benchmark times then
    start from bytecode, where an editable install under ``PYTHONDONTWRITEBYTECODE`` would compile every module at
    every start (≈ 0.15 s of a small ingest)."""
    import compileall

    for package in PACKAGES:
        compileall.compile_dir(str(ROOT / package), quiet=1)


# ---------------------------------------------------------------- machine


def _first_line(cmd: list[str], stderr: bool = False) -> str | None:
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = (p.stderr if stderr else p.stdout).strip()
    return text.splitlines()[0] if text else None


def _version(dist: str) -> str | None:
    import importlib.metadata

    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def machine_info(kafka_versions: Sequence[str] = ()) -> dict[str, Any]:
    """CPU, cores, memory, load, versions, git commit and date of this run."""
    cpu = None
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem_gib = None
    try:
        m = re.search(r"MemTotal:\s+(\d+) kB", Path("/proc/meminfo").read_text())
        mem_gib = round(int(m.group(1)) / 2**20, 1) if m else None
    except OSError:
        pass
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count()
    return {
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "host": platform.node(),
        "cpu": cpu or platform.processor(),
        "cores": os.cpu_count(),
        "usable_cores": usable,
        "memory_gib": mem_gib,
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "os": platform.platform(),
        "python": platform.python_version(),
        "java": _first_line(["java", "-version"], stderr=True),
        "pyspark": _version("pyspark"),
        "delta_spark": _version("delta-spark"),
        "pyarrow": _version("pyarrow"),
        "kafka": list(kafka_versions),
        "git_commit": _first_line(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"]),
        "argv": sys.argv,
    }


def print_machine(info: dict[str, Any]) -> None:
    print(f"# {Path(sys.argv[0]).name} — {info['date']}\n")
    print(
        f"- machine: {info['cpu']}, {info['usable_cores']}/{info['cores']} cores, {info['memory_gib']} GiB; "
        f"load average at start {' / '.join(map(str, info['load_average']))} (1/5/15 min)"
    )
    print(
        f"- Python {info['python']}, {info['java']}, PySpark {info['pyspark']}, delta-spark {info['delta_spark']}, "
        f"pyarrow {info['pyarrow']}" + (f", Kafka {', '.join(info['kafka'])}" if info["kafka"] else "")
    )
    print(f"- commit {info['git_commit']}; command: {' '.join(info['argv'])}\n")


def load_average() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


# ---------------------------------------------------------------- timing


@contextmanager
def timer() -> Iterable[dict[str, float]]:
    """``with timer() as t: ...`` then ``t["s"]`` holds the wall seconds of the block."""
    out: dict[str, float] = {}
    t0 = time.perf_counter()
    try:
        yield out
    finally:
        out["s"] = time.perf_counter() - t0


def best_of(fn: Callable[[], Any], repeat: int = 1) -> tuple[float, Any]:
    """(best wall seconds over ``repeat`` runs, result of the last run)."""
    best, result = float("inf"), None
    for _ in range(max(1, repeat)):
        t0 = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - t0)
    return best, result


class Phases:
    """Wall-time intervals of named phases, recorded by wrapping functions (:meth:`wrap`).

    Phases may overlap (calls from a thread pool): :meth:`summary` gives, per phase, the number of
    calls, the summed call time and the wall time covered (union of the intervals)."""

    def __init__(self) -> None:
        self.intervals: list[tuple[str, float, float]] = []
        self._lock = threading.Lock()
        self._undo: list[Callable[[], None]] = []

    def add(self, name: str, t0: float, t1: float) -> None:
        with self._lock:
            self.intervals.append((name, t0, t1))

    def wrap(self, owner: Any, attr: str, name: str | Callable[..., str] | None = None) -> None:
        """Replace ``owner.attr`` (module function or class method) by a timed wrapper; ``name`` may be
        a function of the call's arguments (e.g. the table a ``Lake.write`` writes)."""
        original = getattr(owner, attr)
        phases = self

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            label = name(*args, **kwargs) if callable(name) else (name or attr)
            t0 = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                phases.add(label, t0, time.perf_counter())

        wrapper.__wrapped__ = original  # type: ignore[attr-defined]
        setattr(owner, attr, wrapper)
        self._undo.append(lambda: setattr(owner, attr, original))

    def restore(self) -> None:
        while self._undo:
            self._undo.pop()()

    def clear(self) -> None:
        with self._lock:
            self.intervals.clear()

    def summary(self) -> dict[str, dict[str, float]]:
        out: dict[str, dict[str, float]] = {}
        for name in dict.fromkeys(n for n, _, _ in self.intervals):
            spans = sorted((a, b) for n, a, b in self.intervals if n == name)
            wall, end = 0.0, float("-inf")
            for a, b in spans:
                if b > end:
                    wall += b - max(a, end)
                    end = b
            out[name] = {"calls": len(spans), "sum_s": sum(b - a for a, b in spans), "wall_s": wall}
        return out


# ---------------------------------------------------------------- memory


def _status_kb(pid: int | str, key: str) -> int | None:
    try:
        m = re.search(rf"^{key}:\s+(\d+) kB", Path(f"/proc/{pid}/status").read_text(), re.MULTILINE)
    except OSError:
        return None
    return int(m.group(1)) if m else None


def rss_mb(pid: int | str = "self") -> float | None:
    kb = _status_kb(pid, "VmRSS")
    return None if kb is None else kb / 1024


def reset_peak_rss(pid: int | str = "self") -> bool:
    """Reset the kernel's peak-RSS mark (VmHWM) of ``pid`` (Linux ≥ 4.0, own processes)."""
    try:
        Path(f"/proc/{pid}/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def peak_rss_mb(pid: int | str = "self") -> float | None:
    """Peak RSS since the last :func:`reset_peak_rss` (or process start); getrusage as a fallback."""
    kb = _status_kb(pid, "VmHWM")
    if kb is None and pid == "self":
        import resource

        kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return None if kb is None else kb / 1024


def pss_mb(pid: int) -> float | None:
    """Proportional set size (shared pages split among sharers): right for summing forked workers."""
    try:
        m = re.search(r"^Pss:\s+(\d+) kB", Path(f"/proc/{pid}/smaps_rollup").read_text(), re.MULTILINE)
    except OSError:
        return rss_mb(pid)
    return int(m.group(1)) / 1024 if m else None


def descendants(pid: int) -> list[int]:
    """Every live descendant of ``pid`` (from /proc/*/stat parent links)."""
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry.name}/stat").read_text()
        except OSError:
            continue
        ppid = int(stat[stat.rindex(")") + 2 :].split()[1])
        children.setdefault(ppid, []).append(int(entry.name))
    out, todo = [], [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


def _is_python(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/comm").read_text().startswith("python")
    except OSError:
        return False


class MemorySampler:
    """Samples, in a background thread, the RSS of a JVM (``jvm_pid``), the summed PSS of its
    descendants (Spark's Python workers) and optionally the JVM heap in use (``heap_fn``).
    Peaks are kept; the JVM's own peak also comes from VmHWM (reset at start)."""

    def __init__(self, jvm_pid: int | None, heap_fn: Callable[[], float] | None = None, interval: float = 0.25) -> None:
        self.jvm_pid, self.heap_fn, self.interval = jvm_pid, heap_fn, interval
        self.peak_workers_mb = 0.0
        self.peak_workers_n = 0
        self.peak_heap_mb = 0.0
        self.peak_jvm_sampled_mb = 0.0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _sample(self) -> None:
        if self.jvm_pid is None:
            return
        self.peak_jvm_sampled_mb = max(self.peak_jvm_sampled_mb, rss_mb(self.jvm_pid) or 0.0)
        pids = [p for p in descendants(self.jvm_pid) if _is_python(p)]  # not short-lived forks of the JVM
        workers = sum(pss_mb(p) or 0.0 for p in pids)
        self.peak_workers_mb = max(self.peak_workers_mb, workers)
        self.peak_workers_n = max(self.peak_workers_n, len(pids))
        if self.heap_fn is not None:
            try:
                self.peak_heap_mb = max(self.peak_heap_mb, self.heap_fn())
            except Exception:  # noqa: BLE001 — sampling must never break a benchmark
                self.heap_fn = None

    def __enter__(self) -> MemorySampler:  # noqa: PYI034
        reset_peak_rss("self")
        if self.jvm_pid is not None:
            reset_peak_rss(self.jvm_pid)

        def loop() -> None:
            while not self._stop.wait(self.interval):
                self._sample()

        self._thread = threading.Thread(target=loop, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join()
        self._sample()
        self.driver_peak_mb = peak_rss_mb("self")
        hwm = peak_rss_mb(self.jvm_pid) if self.jvm_pid is not None else None
        self.jvm_peak_mb = max(hwm or 0.0, self.peak_jvm_sampled_mb) if self.jvm_pid is not None else None

    def result(self) -> dict[str, float | None]:
        return {
            "driver_peak_rss_mb": _r(self.driver_peak_mb),
            "jvm_peak_rss_mb": _r(self.jvm_peak_mb),
            "jvm_peak_heap_used_mb": _r(self.peak_heap_mb) if self.peak_heap_mb else None,
            "py_workers_peak_pss_mb": _r(self.peak_workers_mb) if self.jvm_pid is not None else None,
            "py_workers_peak_n": self.peak_workers_n if self.jvm_pid is not None else None,
        }


def _r(x: float | None, nd: int = 1) -> float | None:
    return None if x is None else round(x, nd)


@dataclass
class Measured:
    """A finished child process: output, exit code, wall seconds, peak RSS of it and its descendants, CPU
    seconds (user + system) of it and all its descendants."""

    returncode: int
    stdout: str
    stderr: str
    wall_s: float
    peak_rss_mb: float
    cpu_s: float | None = None


#: Started by :func:`run_measured` as a fresh small interpreter: forks and execs the measured command, waits
#: for it and writes its wall seconds and rusage to ``argv[1]``. A process's ``ru_maxrss`` includes the memory
#: of the process it was forked from until it execs, so forking the command from the benchmark itself (often
#: hundreds of MB after reading lakes) would report the benchmark's RSS for any smaller command. The launcher is
#: its descendants' subreaper (``PR_SET_CHILD_SUBREAPER``) and reaps them all before it reports: a descendant
#: nobody waits for, such as the JVM PySpark starts (it exits when its Python parent has gone), is counted too.
#: The wall seconds end when the command exits.
_LAUNCHER = """
import ctypes, json, os, resource, sys, time
ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
t0 = time.perf_counter()
pid = os.fork()
if pid == 0:
    try:
        os.execvp(sys.argv[2], sys.argv[2:])
    except OSError as e:
        print(f"{sys.argv[2]}: {e}", file=sys.stderr, flush=True)
    os._exit(127)
_, status = os.waitpid(pid, 0)
wall = time.perf_counter() - t0
deadline, left = time.monotonic() + 120, False
while True:
    try:
        if os.waitpid(-1, os.WNOHANG)[0]:
            continue
    except ChildProcessError:
        break
    if time.monotonic() > deadline:
        left = True
        break
    time.sleep(0.01)
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
with open(sys.argv[1], "w") as f:
    json.dump({"status": status, "wall_s": wall, "maxrss_kb": usage.ru_maxrss,
               "cpu_s": usage.ru_utime + usage.ru_stime, "descendants_left": left}, f)
"""


def run_measured(
    cmd: Sequence[str],
    *,
    timeout: float = 600,
    cwd: str | os.PathLike[str] | None = None,
    env: dict[str, str] | None = None,
) -> Measured:
    """Run ``cmd`` (from a small launcher process, :data:`_LAUNCHER`); its peak RSS and CPU seconds are the
    max / sum over the command and every descendant (e.g. the JVM a Python CLI started), its wall seconds from
    fork to the command's exit. A command still running after ``timeout`` is killed (with its process group) and
    reported with the launcher's figures; descendants still running two minutes after the command are left
    uncounted, said on stderr."""
    import tempfile

    with (
        tempfile.TemporaryFile("w+") as out,
        tempfile.TemporaryFile("w+") as err,
        tempfile.NamedTemporaryFile("r", suffix=".json") as report,
    ):
        t0 = time.perf_counter()
        proc = subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", _LAUNCHER, report.name, *cmd],
            stdout=out,
            stderr=err,
            stdin=subprocess.DEVNULL,
            cwd=cwd,
            env=env,
            start_new_session=True,
        )
        deadline = t0 + timeout
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() > deadline:
                os.killpg(proc.pid, 9)
                pid, status, usage = os.wait4(proc.pid, 0)
                break
            time.sleep(0.02)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)  # Popen must not wait() again
        child = json.loads(report.read() or "null")
        out.seek(0)
        err.seek(0)
        if child is not None and child["descendants_left"]:
            print(
                f"run_measured: {cmd[0]}: descendants outlived the command; their CPU is not counted", file=sys.stderr
            )
        if child is None:  # killed, or the launcher failed
            return Measured(
                proc.returncode, out.read(), err.read(), wall, usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime
            )
        return Measured(
            os.waitstatus_to_exitcode(child["status"]),
            out.read(),
            err.read(),
            child["wall_s"],
            child["maxrss_kb"] / 1024,
            child["cpu_s"],
        )


# ---------------------------------------------------------------- sizes, tables, output


def parse_sizes(text: str) -> list[int]:
    """``"1e5,1e6"`` / ``"100000,10^6"`` → [100000, 1000000]."""
    out = []
    for part in text.split(","):
        part = part.strip().replace("10^", "1e")
        if part:
            out.append(int(float(part)))
    return out


def size_label(n: int) -> str:
    e = len(str(n)) - 1
    return f"1e{e}" if n == 10**e else str(n)


def fmt(x: Any, nd: int = 2) -> str:
    if x is None:
        return "–"
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, int):
        return f"{x:,}"
    if isinstance(x, float):
        if math.isnan(x):
            return "–"
        if abs(x) >= 1000:
            return f"{x:,.0f}"
        if abs(x) >= 100:
            return f"{x:.0f}"
        return f"{x:.{nd}f}" if abs(x) >= 1 or x == 0 else f"{x:.{nd + 1}g}"
    return str(x)


def md_table(rows: Sequence[dict[str, Any]], columns: Sequence[str | tuple[str, str]]) -> str:
    """A Markdown table; ``columns`` are keys or (key, header) pairs; missing values print as –."""
    cols = [(c, c) if isinstance(c, str) else c for c in columns]
    lines = [
        "| " + " | ".join(h for _, h in cols) + " |",
        "|" + "|".join("---" if i == 0 else "---:" for i in range(len(cols))) + "|",
    ]
    for r in rows:
        lines.append("| " + " | ".join(fmt(r.get(k)) for k, _ in cols) + " |")
    return "\n".join(lines)


def print_table(
    title: str, rows: Sequence[dict[str, Any]], columns: Sequence[str | tuple[str, str]], note: str | None = None
) -> None:
    print(f"\n## {title}\n")
    if not rows:
        print("(nothing measured)\n")
        return
    keep = [c for c in columns if any(r.get(c if isinstance(c, str) else c[0]) is not None for r in rows)]
    print(md_table(rows, keep))  # columns empty in every row are left out
    if note:
        print(f"\n{note}")
    print(flush=True)


def write_json(path: str | os.PathLike[str], doc: dict[str, Any]) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(doc, indent=2, default=str) + "\n")


def finish(results: dict[str, Any], out: str | None) -> int:
    """End of a benchmark run: the load average at the end, printed and recorded; the JSON written to ``out``."""
    results["load_average_end"] = load_average()
    print(f"\nload average at end: {' / '.join(map(str, results['load_average_end']))}")
    if out:
        write_json(out, results)
        print(f"results written to {out}")
    return 0


def per_s(n: float | None, seconds: float | None) -> float | None:
    return None if not n or not seconds else n / seconds


def progress(msg: str) -> None:
    """A progress line on stderr (tables go to stdout)."""
    print(f"[{time.strftime('%H:%M:%S')} load {os.getloadavg()[0]:.1f}] {msg}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------- benchmark logs


@dataclass
class BenchLog:
    """A benchmark input: a metadata log dir (``…/__cluster_metadata-0``) and what it holds."""

    name: str
    kind: str  # "gen", "idle", "fixture"
    dir: str
    records: int  # log records (segments), control records included
    bytes: int  # segment bytes
    segments: int
    snapshots: int  # snapshot files (the 0-0 bootstrap snapshot not counted)
    noop_records: int | None = None
    last_offset: int | None = None
    kafka_version: str = "4.1.1"  # the Kafka version to run its tools with
    build_s: float | None = None
    params: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def generated(cls, name: str, kind: str, report: Any, started: float, params: dict[str, Any]) -> BenchLog:
        """The log ``generator.generate`` wrote (its report), generated since ``started`` (perf_counter)."""
        return cls(
            name=name,
            kind=kind,
            dir=report.log_dir,
            records=report.total_records,
            bytes=report.bytes,
            segments=report.segments_written,
            snapshots=report.snapshots_written,
            noop_records=report.by_type.get("NO_OP_RECORD", 0),
            last_offset=report.last_offset,
            build_s=round(time.perf_counter() - started, 2),
            params=params,
        )

    @property
    def files_bytes(self) -> int:
        """Bytes of every input file (segments and snapshots)."""
        return sum(p.stat().st_size for p in Path(self.dir).iterdir() if p.suffix in (".log", ".checkpoint"))

    def row(self) -> dict[str, Any]:
        d = asdict(self)
        d["MB"] = round(self.bytes / 1e6, 2)
        d["noop_share"] = (
            None if self.noop_records is None or not self.records else round(self.noop_records / self.records, 3)
        )
        return d


def _cached(meta: Path, params: dict[str, Any]) -> BenchLog | None:
    if not meta.is_file():
        return None
    doc = json.loads(meta.read_text())
    stored = doc.get("params", {})
    if any(stored.get(k) != v for k, v in params.items()):
        return None
    return BenchLog(**doc)


def _save(meta: Path, log: BenchLog) -> BenchLog:
    meta.write_text(json.dumps(asdict(log), indent=2) + "\n")
    return log


def _records_per_churn(brokers: int, topics: int, partitions: int) -> float:
    # measured with these shapes: ~7 records per churn event (6 brokers, 24×8 partitions) — the count is
    # approximate by design; the exact number is reported with every result
    return 7.1 if brokers >= 5 else 8.0


def generated_log(
    n: int, data_dir: str = DEFAULT_DATA_DIR, *, seed: int = 7, segment_bytes: int = KAFKA_SEGMENT_BYTES
) -> BenchLog:
    """A generated mid-size cluster log of about ``n`` records with a snapshot half-way (cached)."""
    from generator import generate

    brokers, topics, partitions = 6, 24, 8
    churn = max(1, round(n / _records_per_churn(brokers, topics, partitions)))
    params = {
        "format": _LOG_FORMAT,
        "n": n,
        "seed": seed,
        "brokers": brokers,
        "topics": topics,
        "partitions": partitions,
        "churn": churn,
        "snapshot_at": max(1, n // 2),
        "segment_bytes": segment_bytes,
        "noop_interval_ms": NOOP_INTERVAL_MS,
    }
    out = Path(data_dir) / f"gen-{size_label(n)}"
    meta = out / "bench-log.json"
    if (hit := _cached(meta, params)) is not None:
        return hit
    progress(f"generating gen-{size_label(n)} (churn {churn}) in {out}")
    t0 = time.perf_counter()
    r = generate(
        seed,
        brokers,
        topics,
        partitions,
        churn,
        out,
        snapshot_at=params["snapshot_at"],
        noop_interval_ms=NOOP_INTERVAL_MS,
        segment_bytes=segment_bytes,
    )
    return _save(meta, BenchLog.generated(f"gen-{size_label(n)}", "gen", r, t0, params))


def idle_log(
    n: int, data_dir: str = DEFAULT_DATA_DIR, *, seed: int = 11, segment_bytes: int = KAFKA_SEGMENT_BYTES
) -> BenchLog:
    """A real idle cluster's shape: a small generated prefix, then one NoOp batch every 500 ms up to
    ``n`` records in all, written with :func:`metadata.log.codec.batch.encode_batch` (cached)."""
    from generator import generate
    from metadata.log.codec.batch import encode_batch
    from metadata.log.codec.records import encode_metadata_value
    from metadata.log.readers import ReadOptions, discover, iter_file_rows

    params = {
        "format": _LOG_FORMAT,
        "n": n,
        "seed": seed,
        "brokers": 3,
        "topics": 5,
        "partitions": 3,
        "churn": 40,
        "segment_bytes": segment_bytes,
        "noop_interval_ms": NOOP_INTERVAL_MS,
    }
    out = Path(data_dir) / f"idle-{size_label(n)}"
    meta = out / "bench-log.json"
    if (hit := _cached(meta, params)) is not None:
        return hit
    progress(f"building idle-{size_label(n)} in {out}")
    t0 = time.perf_counter()
    r = generate(
        seed,
        params["brokers"],
        params["topics"],
        params["partitions"],
        params["churn"],
        out,
        noop_interval_ms=NOOP_INTERVAL_MS,
        segment_bytes=segment_bytes,
    )
    last = None
    for f in discover(r.log_dir):
        if f.kind.value == "segment":
            for _, row in iter_file_rows(f, [], ReadOptions()):
                last = row
    assert last is not None
    offset, epoch, ts = last[0] + 1, last[3], last[4]
    noops = r.by_type.get("NO_OP_RECORD", 0)
    value = encode_metadata_value("NO_OP_RECORD", 0, {})
    segments = sorted(Path(r.log_dir).glob("*.log"))
    path = segments[-1]
    size = path.stat().st_size
    fh = open(path, "ab")  # noqa: SIM115
    chunk: list[bytes] = []
    try:
        for _ in range(max(0, n - r.total_records)):
            ts += NOOP_INTERVAL_MS
            batch = encode_batch(offset, [(None, value)], leader_epoch=epoch, timestamp=ts)
            if size + len(batch) > segment_bytes:  # roll like LocalLog.maybeRoll
                fh.write(b"".join(chunk))
                chunk.clear()
                fh.close()
                path = Path(r.log_dir) / f"{offset:020d}.log"
                fh = open(path, "ab")  # noqa: SIM115
                size = 0
            chunk.append(batch)
            size += len(batch)
            offset += 1
            noops += 1
            if len(chunk) >= 8192:
                fh.write(b"".join(chunk))
                chunk.clear()
        fh.write(b"".join(chunk))
    finally:
        fh.close()
    files = sorted(Path(r.log_dir).glob("*.log"))
    return _save(
        meta,
        BenchLog(
            name=f"idle-{size_label(n)}",
            kind="idle",
            dir=r.log_dir,
            records=offset,
            bytes=sum(p.stat().st_size for p in files),
            segments=len(files),
            snapshots=0,
            noop_records=noops,
            last_offset=offset - 1,
            build_s=round(time.perf_counter() - t0, 2),
            params={**params, "idle_hours": round((ts - r.last_timestamp) / 3.6e6, 2)},
        ),
    )


def _committed_log(name: str, kind: str, d: Path, kafka_version: str = "4.1.1") -> BenchLog:
    """A :class:`BenchLog` of a committed log directory (its segments decoded to count the records)."""
    from metadata.log.readers import ReadOptions, discover, iter_file_rows

    segs = [f for f in discover(d) if f.kind.value == "segment"]
    rows = [row for f in segs for _, row in iter_file_rows(f, [], ReadOptions())]
    snaps = [p for p in d.glob("*.checkpoint") if not p.name.startswith("0" * 20 + "-")]
    return BenchLog(
        name=name,
        kind=kind,
        dir=str(d),
        records=len(rows),
        bytes=sum(f.size for f in segs),
        segments=len(segs),
        snapshots=len(snaps),
        noop_records=sum(1 for r in rows if r[10] == "NO_OP_RECORD"),
        last_offset=rows[-1][0] if rows else None,
        kafka_version=kafka_version,
    )


def fixture_logs() -> list[BenchLog]:
    """The committed real-Kafka logs (``tests/fixtures/kafka/<version>/<scenario>``)."""
    return [
        _committed_log(f"{d.parent.parent.name}/{d.parent.name}", "fixture", d, d.parent.parent.name)
        for d in sorted((ROOT / "tests" / "fixtures" / "kafka").glob(f"*/*/{LOG_DIR_NAME}"))
    ]


def sample_log() -> BenchLog:
    """The repository's data sample (``data/sample``: a generated log of about 10^4 records, four segments)."""
    return _committed_log("sample", "sample", ROOT / "data" / "sample" / LOG_DIR_NAME)


def bench_logs(
    sizes: Sequence[int],
    kinds: Sequence[str],
    data_dir: str = DEFAULT_DATA_DIR,
    segment_bytes: int = KAFKA_SEGMENT_BYTES,
) -> list[BenchLog]:
    """The logs of ``kinds`` (``sample``, ``fixtures``, ``gen``, ``idle``) at ``sizes``, built or reused."""
    logs: list[BenchLog] = []
    if "sample" in kinds:
        logs.append(sample_log())
    if "fixtures" in kinds:
        logs += fixture_logs()
    for n in sizes:
        if "gen" in kinds:
            logs.append(generated_log(n, data_dir, segment_bytes=segment_bytes))
        if "idle" in kinds:
            logs.append(idle_log(n, data_dir, segment_bytes=segment_bytes))
    return logs


# ---------------------------------------------------------------- Spark


def spark_session():
    """The project's SparkSession (``metadata.lake.spark.get_spark``) and its JVM's pid."""
    from metadata.lake.spark import get_spark

    spark = get_spark()
    try:
        pid = int(spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid())
    except Exception:  # noqa: BLE001 — Spark Connect: no local JVM
        pid = None
    return spark, pid


def jvm_heap_fn(spark) -> Callable[[], float]:
    """A function returning the driver JVM's used heap in MB (Runtime total - free)."""
    runtime = spark.sparkContext._jvm.java.lang.Runtime.getRuntime()
    return lambda: (runtime.totalMemory() - runtime.freeMemory()) / 2**20
