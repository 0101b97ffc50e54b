"""``kraft-replay shell --lake``: the lake of a real Kafka 4.1.1 log (a partition reassignment, shared with
tests/test_cli_image.py) read in process gives, at every offset, the tree the log replayed by the reference engine
gives, and the same answers to the commands that move through time."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cli.shell.commands import Context, run
from cli.shell.session import Session
from image.node.releases import shell_release
from image.temporal.lake_source import ArrowSource
from image.temporal.sources import log_source
from metadata.lake.files import LakeFiles
from tests.kafka_logs import kafka_fixture_name

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parent.parent
LOG = ROOT / "tests" / "fixtures" / "kafka" / "4.1.1" / "reassign" / "__cluster_metadata-0"


@pytest.fixture(scope="module")
def sources(shared_lake):
    lake, _ = shared_lake(kafka_fixture_name(LOG.parent), lambda root: LOG)
    return ArrowSource(LakeFiles(lake.uri)), log_source(LOG), lake.uri


def _answer(session: Session, *words: str) -> str:
    out = io.StringIO()
    run(Context(session, out), list(words))
    return out.getvalue()


def test_the_tree_at_every_offset_is_the_logs(sources):
    lake, log, _ = sources
    first, last = log.bounds()
    assert lake.bounds() == (first, last)
    release = shell_release()
    on_lake, on_log = Session(lake, release, first), Session(log, release, first)
    for offset in range(first, last + 1):
        assert _answer(on_lake, "at", str(offset)) == _answer(on_log, "at", str(offset))
        assert _answer(on_lake, "tree", "/image") == _answer(on_log, "tree", "/image"), offset


@pytest.mark.parametrize(
    "path", ["/image/topics/byName/r1/0", "/image/topics/byName/r2", "/image/cluster/brokers/3", "/image/configs"]
)
def test_moving_through_time_answers_as_on_the_log(sources, path):
    lake, log, _ = sources
    first, last = log.bounds()
    release = shell_release()
    on_lake, on_log = Session(lake, release, first), Session(log, release, first)
    steps = 0
    while True:
        answer = _answer(on_lake, "next", path)
        assert answer == _answer(on_log, "next", path)
        if "does not change" in answer:
            break
        steps += 1
    assert steps > 0 and on_lake.offset == on_log.offset
    assert _answer(on_lake, "prev", path) == _answer(on_log, "prev", path)
    assert _answer(on_lake, "diff", str(first), path) == _answer(on_log, "diff", str(first), path)
    assert _answer(on_lake, "history", path) == _answer(on_log, "history", path)


def test_the_command_line_on_the_lake(sources):
    lake, log, uri = sources
    env = {k: v for k, v in os.environ.items() if k not in ("SPARK_REMOTE", "KRAFT_REPLAY_MASTER")}
    env["PYTHONPATH"] = str(ROOT)
    middle = sum(log.bounds()) // 2
    done = subprocess.run(
        [sys.executable, "-m", "cli.main", "shell", "--lake", uri, "--at-offset", str(middle), "--", "tree", "/image"],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout == _answer(Session(log, shell_release(), middle), "tree", "/image")
