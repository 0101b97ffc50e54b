"""pytest helpers shared by tests/test_kafka_*.py (kept here so no conftest is needed)."""

from __future__ import annotations

import functools
import json
import re
import shutil
from pathlib import Path

import pytest

from .compare import fixture_dirs

FIXTURES_ROOT = Path(__file__).resolve().parents[1] / "fixtures" / "kafka"


def require_toolchain() -> None:
    missing = [t for t in ("java", "javac", "mvn") if shutil.which(t) is None]
    if missing:
        pytest.skip(f"real-Kafka oracle needs {', '.join(missing)} on PATH")


@functools.cache
def dist_for(version: str):
    require_toolchain()
    from .kafka_dist import ensure_kafka

    return ensure_kafka(version)


def all_fixtures() -> list[Path]:
    return fixture_dirs(FIXTURES_ROOT)


def fixture_id(p: Path) -> str:
    return f"{p.parent.name}/{p.name}"


def load_views(fixture: Path) -> dict:
    return json.loads((fixture / "views.json").read_text())


def meta_dir(fixture: Path) -> Path:
    return fixture / "__cluster_metadata-0"


def fixture_version(fixture: Path) -> str:
    """The Kafka version that wrote the fixture (its ``meta.json``)."""
    return json.loads((fixture / "meta.json").read_text())["kafkaVersion"]


def fixture_release(fixture: Path) -> str:
    """The release line of the Kafka that wrote the fixture: ``"4.3"`` for a log of 4.3.1."""
    from .kafka_dist import release_line

    return release_line(fixture_version(fixture))


def fixture_dist(fixture: Path):
    """The Kafka the fixture is checked with: the newest patch of the release line that wrote it
    (``kafka_dist.RELEASES``), so a test run fetches one version per line."""
    from .kafka_dist import line_version

    return dist_for(line_version(fixture_version(fixture)))


@functools.cache
def last_offset(fixture: Path) -> int:
    """Offset of the last record in the fixture's segments (from Kafka's own dump-log text)."""
    last = -1
    for m in re.finditer(r"^baseOffset: \d+ lastOffset: (\d+) ", (fixture / "dump-log.txt").read_text(), re.MULTILINE):
        last = max(last, int(m.group(1)))
    return last


@functools.cache
def oracle_steps(fixture: Path) -> dict:
    """Kafka's own images at every recorded step offset plus, last, at the end of the log, and the local
    changes of every broker between consecutive ones (one oracle run per fixture and session)."""
    from .oracle import steps

    views = load_views(fixture)
    offsets = [s["offset"] for s in views["steps"]]
    offsets.append(max(offsets[-1], last_offset(fixture)))
    return steps(fixture_dist(fixture), meta_dir(fixture), offsets)


_PR = re.compile(r"PartitionRegistration\((.*)\)")


def parse_shell_tree(text: str) -> dict:
    """Parse ``tree /image/topics/byName`` output of the metadata shell into
    {topic: {"id": str, "partitions": {pid: {field: value}}}}."""
    out: dict = {}
    topic = None
    key = None
    for line in text.splitlines():
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip(" "))
        s = line.strip()
        if indent == 0 and s.endswith(":"):
            topic = s[:-1]
            out[topic] = {"id": None, "partitions": {}}
        elif indent == 2 and s.endswith(":"):
            key = s[:-1]
        elif indent == 4 and topic is not None:
            m = _PR.match(s)
            if m and key is not None and key.isdigit():
                fields = {}
                for k, v in re.findall(r"(\w+)=(\[[^\]]*\]|[^,]+)", m.group(1)):
                    if v.startswith("["):
                        items = [x.strip() for x in v[1:-1].split(",") if x.strip()]
                        fields[k] = [int(x) if x.lstrip("-").isdigit() else x for x in items]
                    else:
                        fields[k] = int(v) if v.lstrip("-").isdigit() else v
                out[topic]["partitions"][int(key)] = fields
            elif key == "id":
                out[topic]["id"] = s
    return out
