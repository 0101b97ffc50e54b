"""kraft-replay as users start it: the console script of a (non-editable) install into a virtual
environment (:mod:`tests.installs`), run by its path with a PATH that does not hold that environment — as pipx and
service units do — and ``python -m cli.main`` in a source checkout. Both list every command; the console script
does the main job (``demo``). (The same install on a Spark Connect server, whose Python workers must run the
interpreter kraft-replay runs in: :mod:`tests.test_connect`.)"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests import background, installs

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "data" / "sample"
COMMANDS = [
    "ingest",
    "log-info",
    "dump",
    "generate",
    "replay",
    "show",
    "diff",
    "changes",
    "apply",
    "leader-and-isr",
    "zk-replay",
    "timeline",
    "report",
    "check",
    "optimize",
    "shell",
    "demo",
    "history",
]
"""Every command, in the order ``--help`` lists them."""
DEMO_STEPS = ["ingest", "log-info", "dump", "replay", "diff", "changes", "apply"]
"""The commands ``demo`` runs, in order; it prints a rule ``kraft-replay <command> …`` before each."""


def _listed_commands(help_text: str) -> list[str]:
    """The command names of the Commands panel of rich's ``--help`` (continuation lines are indented)."""
    panel = help_text[help_text.index("Commands") :]
    return re.findall(r"^│ ([a-z][a-z-]*) ", panel, flags=re.MULTILINE)


def test_both_entry_points_list_every_command() -> None:
    env = {**os.environ, "COLUMNS": "200", "PYTHONPATH": str(ROOT)}
    module = subprocess.run(
        [sys.executable, "-m", "cli.main", "--help"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert module.returncode == 0, module.stderr
    assert _listed_commands(module.stdout) == COMMANDS
    from cli.main import app  # what the console script (cli.main:main) runs

    script = CliRunner().invoke(app, ["--help"], terminal_width=200)
    assert script.exit_code == 0, script.output
    # in this process other tests may have imported a command module before cli.main: same set, other order
    assert sorted(_listed_commands(script.output)) == sorted(COMMANDS)


def _did_the_main_job(run: subprocess.CompletedProcess[str], lake: Path) -> None:
    assert run.returncode == 0, f"exit {run.returncode}\n{run.stdout[-3000:]}\n{run.stderr[-6000:]}"
    rules = re.findall(r"─ kraft-replay ([a-z-]+) ", run.stdout)
    assert rules == DEMO_STEPS, run.stdout[-3000:]
    assert (lake / "_ingests" / "_delta_log").is_dir() and (lake / "records" / "_delta_log").is_dir()


def run_in_background(env: dict[str, str], root: Path) -> dict[str, object]:
    """The runs of the test below (while the shared session works: :mod:`tests.background`): ``kraft-replay --help``
    and ``demo`` by the console script's path."""
    script, demo = installs.venv() / "bin" / "kraft-replay", root / "demo"
    plain = installs.without_venv_on_path(env, demo)
    assert str(installs.venv()) not in plain["PATH"]
    runs: dict[str, object] = {"demo_lake": demo / "lake"}
    runs["help"] = subprocess.run(
        [str(script), "--help"], cwd=demo, env=plain, capture_output=True, text=True, timeout=300
    )
    runs["demo"] = subprocess.run(
        [str(script), "demo", "--lake", str(demo / "lake"), "--sample", str(SAMPLE)],
        cwd=demo,
        env=plain,
        capture_output=True,
        text=True,
        timeout=1700,
    )
    return runs


@pytest.mark.spark
@pytest.mark.background
@pytest.mark.timeout(1800)
def test_console_script_of_a_venv_install_run_by_its_path() -> None:
    runs = background.result(__name__)
    help_run = runs["help"]
    assert help_run.returncode == 0, help_run.stderr
    assert _listed_commands(help_run.stdout) == COMMANDS
    _did_the_main_job(runs["demo"], runs["demo_lake"])


RESOLVING_SIDE = r"""
import json, sys, time
from pathlib import Path
import metadata.lake.spark as spark

root = Path(sys.argv[1])
spark.RESOLUTION_LOCK = root / "ivy" / "resolve.lock"
spark.RESOLVER = f'''
import os, time
from pathlib import Path
runs = Path({str(root / "runs")!r})
with open(runs, "a") as f:
    f.write("start %d " % os.getpid())
time.sleep(1.5)  # (Ivy resolving)
jar = Path({str(root / "delta.jar")!r}); jar.write_bytes(b"")
from metadata.lake.spark import _remember_jars
_remember_jars(str(jar))
with open(runs, "a") as f:
    f.write("end %d " % os.getpid())
'''
print(json.dumps(spark._resolve_jars()))
"""


def test_two_first_spark_starts_at_once_resolve_once(tmp_path: Path) -> None:
    """Two processes that start Spark for the first time at once (no remembered jars): one resolves, the other
    waits for it and takes its jars — two resolutions into Ivy's cache at once fail (the resolver here is a
    stand-in that takes 1.5 s and remembers one jar)."""
    env = {**os.environ, "KRAFT_REPLAY_CACHE": str(tmp_path / "cache"), "PYTHONPATH": str(ROOT)}
    sides = [
        subprocess.Popen(
            [sys.executable, "-c", RESOLVING_SIDE, str(tmp_path)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    outs = [side.communicate(timeout=120) for side in sides]
    assert [side.returncode for side in sides] == [0, 0], outs
    assert [json.loads(out) for out, _ in outs] == [[str(tmp_path / "delta.jar")]] * 2
    runs = (tmp_path / "runs").read_text().split()
    assert runs[0::2] == ["start", "end"], runs  # one resolution, whole
    assert all(err.startswith("resolving the Delta Lake connector") for _, err in outs), outs
