"""Spark Connect: the same commands on a local Connect server (``SPARK_REMOTE=local[2]``) give the
same lake and the same answers as the classic session and the reference engine.

A Connect server and a classic session cannot share one Python process, so the Connect side runs in a subprocess
(:data:`CONNECT_SIDE`) and prints its results as JSON. It runs kraft-replay as a user's virtual environment holds
it (:mod:`tests.installs`: the environment's interpreter run by its path, a ``python3`` on PATH that cannot run
Spark's Python workers): the local server kraft-replay starts must start its Python workers — the ingest's decode
(``mapInArrow``) and the versions' sharded build — with the interpreter kraft-replay runs in
(:mod:`metadata.lake.spark`)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from generator import generate
from image.replay import replay_to
from metadata.lake.protocol import Lake
from metadata.log.readers import read_log
from tests import background, installs

pytestmark = [pytest.mark.spark, pytest.mark.background]


CONNECT_SIDE = r"""
import json, sys
from pathlib import Path
from typer.testing import CliRunner
from cli.main import app
from image.temporal.ingest import ingest
from metadata.lake.ingest import ingest as ingest_records
from metadata.lake.protocol import Lake, LakeTransaction
from metadata.lake.spark import get_spark, is_connect

log_dir, lake, torn, mid, late = sys.argv[1:6]
runner = CliRunner()

def cli(*args):
    res = runner.invoke(app, [*args, "--json"])
    assert res.exit_code == 0, f"{args}: exit {res.exit_code} {res.exception!r}\n{res.output}"
    return json.loads(res.stdout)

out = {"connect": is_connect(get_spark())}
out["ingest"] = cli("ingest", log_dir, "--lake", lake)
out["again"] = cli("ingest", log_dir, "--lake", lake)
out["log_info"] = cli("log-info", "--lake", lake)
out["changes"] = cli("changes", "--lake", lake, "--after-offset", mid)
out["changes_reference"] = cli("changes", "--lake", lake, "--after-offset", mid, "--engine", "reference")
out["replay"] = cli("replay", "--lake", lake, "--at-offset", late)  # the temporal image, read on Spark

# an ingest that dies before its commit, on a lake holding the first segment, then the rerun (records only)
segments = sorted(Path(log_dir).glob("*.log"))
ingest_records([str(segments[0])], torn, progress=False)
committed = Lake(torn).state()
def crash(self, commit):
    raise RuntimeError("killed before the commit")
LakeTransaction.commit, commit = crash, LakeTransaction.commit
try:
    ingest_records([str(s) for s in segments[:2]], torn, progress=False)
except RuntimeError:
    pass
LakeTransaction.commit = commit
out["torn_unchanged"] = Lake(torn).state() == committed
out["rerun_added"] = ingest_records([str(s) for s in segments[:2]], torn, progress=False).records_added

# a first ingest (with the temporal image) that dies before its commit: no file system to delete its tables,
# the rerun replaces them
LakeTransaction.commit = crash
try:
    ingest([str(segments[0])], torn + "-first", progress=False)
except RuntimeError:
    pass
LakeTransaction.commit = commit
out["first_rerun_added"] = ingest([str(segments[0])], torn + "-first", progress=False).records_added
print(json.dumps(out))
"""


def run_in_background(env: dict[str, str], root: Path) -> dict[str, Any]:
    """A generated log of three segments, and what the Connect side made of it (run while the shared session
    works: :mod:`tests.background`)."""
    generate(4, 4, 3, 2, 60, root / "gen", segment_bytes=4096)
    records = read_log(root / "gen" / "__cluster_metadata-0")
    mid, late = records[len(records) // 2].offset, records[len(records) * 3 // 4].offset
    # kraft-replay installed in a virtual environment, its interpreter run by its path, a python3 on PATH that
    # cannot run Spark's Python workers; relative paths (the server's Python workers do not run in the client's
    # working directory) and a lake path that is not a plain name (table versions come from a glob under Connect)
    python = installs.venv() / "bin" / "python"
    proc = subprocess.run(
        [str(python), "-c", CONNECT_SIDE, "gen/__cluster_metadata-0", "lake, 1 {x}", "torn", str(mid), str(late)],
        env={**installs.without_venv_on_path(env, root / "shims"), "SPARK_REMOTE": "local[2]"},
        capture_output=True,
        text=True,
        cwd=root,
        timeout=900,
    )
    return {"proc": proc, "mid": mid, "late": late, "root": root}


@pytest.fixture(scope="module")
def connect() -> dict[str, Any]:
    side = background.result(__name__)
    proc = side["proc"]
    assert proc.returncode == 0, proc.stderr[-4000:]
    log_dir = side["root"] / "gen" / "__cluster_metadata-0"
    return {
        "out": json.loads(proc.stdout.splitlines()[-1]),
        "records": read_log(log_dir),
        "mid": side["mid"],
        "late": side["late"],
        "root": side["root"],
        "segments": sorted(log_dir.glob("*.log")),
    }


def test_the_session_is_a_connect_session(connect):
    assert connect["out"]["connect"] is True


def test_connect_ingest_is_idempotent_and_counts_every_record(connect):
    records = connect["records"]
    out = connect["out"]
    assert len(connect["segments"]) >= 3
    assert out["ingest"]["records_added"] == len(records)
    assert out["ingest"]["files"] == [str(s) for s in connect["segments"]]  # where the records came from
    assert out["again"]["records_added"] == 0 and out["again"]["bytes_skipped"] > 0
    assert out["log_info"]["last_offset"] == records[-1].offset
    assert out["log_info"]["records"] + out["log_info"]["control_records"] == len(records)


def test_connect_lake_reads_the_same_in_a_classic_session(connect, spark):
    """The tables a Connect session wrote are plain Delta: the classic session reads every record once."""
    table = Lake(str(connect["root"] / "lake, 1 {x}"), spark).table("records")
    assert table.count() == table.select("offset").distinct().count() == len(connect["records"])
    assert {r["offset"] for r in table.select("offset").collect()} == {r.offset for r in connect["records"]}


def test_connect_builds_and_reads_the_temporal_image(connect):
    """The versions are built by the ingest's sharded replay on the Connect server and read there."""
    assert connect["out"]["replay"] == replay_to(connect["records"], connect["late"]).to_json()


def test_connect_changes_agree_across_engines(connect):
    assert connect["out"]["changes"] == connect["out"]["changes_reference"]
    assert connect["out"]["changes"]["brokers"]


def test_connect_interrupted_ingest_is_invisible_and_the_rerun_does_not_duplicate(connect, spark):
    segments = connect["segments"]
    assert connect["out"]["torn_unchanged"] is True
    assert connect["out"]["rerun_added"] == int(segments[2].stem) - int(segments[1].stem)
    records = Lake(str(connect["root"] / "torn"), spark).table("records")
    assert records.count() == records.select("offset").distinct().count() == int(segments[2].stem)


def test_connect_rerun_replaces_the_tables_of_an_interrupted_first_ingest(connect, spark):
    n = int(connect["segments"][1].stem)
    assert connect["out"]["first_rerun_added"] == n
    lake = Lake(str(connect["root"] / "torn-first"), spark)
    assert lake.current_version("records") == 1  # the torn table, replaced
    records = lake.table("records")
    assert records.count() == records.select("offset").distinct().count() == n
