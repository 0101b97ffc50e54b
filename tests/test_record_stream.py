"""``RecordLog.stream``: a log read in process decoded by a forked child while its records are consumed gives
exactly ``between``'s records, and when the child fails this process decodes the rest itself (a bad batch
raises here as it would without a child). Each case runs in a fresh one-thread process, where forking is
allowed (a test runner may run threads)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.kafka_logs import KAFKA_FIXTURES

ROOT = Path(__file__).resolve().parent.parent

CASE = """
import json, os, sys
import metadata.log.records as log_module
from metadata.log.errors import DecodeError
from metadata.log.readers import scan_log

path, mode = sys.argv[1], sys.argv[2]
log_module.PARALLEL_RECORDS = 1  # every stream of this small log goes to a child
forks = []
real_fork = os.fork
def counted_fork():
    pid = real_fork()
    if pid:
        forks.append(pid)
    return pid
os.fork = counted_fork

def fields(records):
    return [log_module._fields(r) for r in records]

expected = fields(scan_log(path))
log = scan_log(path)
parent = os.getpid()
load = log._load
if mode == "child-fails":
    def failing(first, last):
        if os.getpid() != parent:
            raise RuntimeError("the child breaks")
        return load(first, last)
    log._load = failing
elif mode == "bad-batch":
    middle = len(log._chunks) // 2
    def bad(first, last):
        if first <= middle <= last:
            raise DecodeError("a bad batch", file=path, position=middle)
        return load(first, last)
    log._load = bad
lo, hi = log.bounds()
first = int(log.offsets[len(log) // 3])  # from the middle: chunks before it stay undecoded
try:
    got = fields(log.stream(first, hi))
    error = None
except DecodeError as exc:
    got, error = None, str(exc)
print(json.dumps({
    "same": got == [f for f in expected if first <= f[0] <= hi] if got is not None else None,
    "records": len(got or []),
    "forks": len(forks),
    "error": error,
    "cached": all(log._chunks[k] is not None for k in range(len(log._chunks) // 2 + 1, len(log._chunks))),
}))
"""


def run(path: Path, mode: str) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", CASE, str(path), mode], capture_output=True, text=True, cwd=ROOT, env=env, check=True
    )
    return json.loads(done.stdout.splitlines()[-1])


@pytest.mark.parametrize("path", [ROOT / "data" / "sample", KAFKA_FIXTURES[0]], ids=["sample", "kafka"])
def test_a_child_decodes_what_the_stream_yields_exactly_as_between(path: Path) -> None:
    result = run(path, "plain")
    assert result["forks"] == 1 and result["same"] and result["records"] > 0, result
    assert result["cached"], result  # what the child handed over is kept, as between() keeps what it decoded


def test_when_the_child_fails_this_process_decodes_the_rest() -> None:
    result = run(ROOT / "data" / "sample", "child-fails")
    assert result["forks"] == 1 and result["same"] and result["records"] > 0, result


def test_a_bad_batch_raises_in_this_process_as_without_a_child() -> None:
    result = run(ROOT / "data" / "sample", "bad-batch")
    assert result["forks"] == 1 and result["error"] is not None and "a bad batch" in result["error"], result
