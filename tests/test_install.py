"""kraft-replay as users start it: the console script of a (non-editable) install into a virtual
environment, run by its path with a PATH that does not hold that environment — as pipx and service
units do — and ``python -m cli.main`` in a source checkout. Both list every command; the console script
does the main job (``demo``), ``python -m cli.main`` ingests and reads on a Spark Connect server — while the
``python3`` on PATH cannot run Spark's Python workers: the workers must run the interpreter kraft-replay
runs in (``metadata.lake.spark``)."""

from __future__ import annotations

import json
import os
import re
import shutil
import site
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from metadata.log.readers import read_log
from tests import background

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
CONNECT_LOG = ROOT / "tests" / "fixtures" / "kafka" / "4.1.1" / "reassign" / "__cluster_metadata-0"
"""The log ingested on the Connect server: Kafka 4.1.1's (the ingest's decode runs in the server's Python workers)."""
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


def _install(root: Path) -> Path:
    """A virtual environment holding a regular (non-editable) install of this checkout, built from a copy
    of the package sources; the dependencies come from the running interpreter's site-packages (a
    ``.pth`` file), so nothing but the build backend is downloaded. Returns the environment's directory."""
    source = root / "source"
    source.mkdir(parents=True)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, source / name)
    for package in ("cli", "generator", "image", "metadata", "replica"):
        shutil.copytree(ROOT / package, source / package, ignore=shutil.ignore_patterns("__pycache__"))
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    purelib = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    dependencies = [p for p in [*site.getsitepackages(), site.getusersitepackages()] if Path(p).is_dir()]
    (Path(purelib) / "kraft_replay_test_dependencies.pth").write_text("\n".join(dependencies) + "\n")
    pip = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--no-deps", str(source)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert pip.returncode == 0, pip.stdout + pip.stderr
    assert (venv / "bin" / "kraft-replay").is_file()
    return venv


def _without_venv_on_path(base: dict[str, str], tmp_path: Path) -> dict[str, str]:
    """A minimal environment whose PATH starts with a ``python3``/``python`` that fails (standing for a
    system Python without numpy or kraft-replay) and holds java and the shell tools Spark's launcher
    uses, but no virtual environment; no PYTHONPATH or PYSPARK_PYTHON. ``base``: the environment to take
    the settings kept from."""
    shims = tmp_path / "bin"
    shims.mkdir(parents=True)
    for name in ("python3", "python"):
        (shims / name).write_text('#!/bin/sh\necho "$0 from PATH ran a Spark Python worker" >&2\nexit 1\n')
        (shims / name).chmod(0o755)
    java = shutil.which("java", path=base.get("PATH"))
    path = os.pathsep.join(dict.fromkeys([str(shims), *([os.path.dirname(java)] if java else []), "/usr/bin", "/bin"]))
    env = {"HOME": str(Path.home()), "PATH": path, "COLUMNS": "200", "LANG": "C.UTF-8"}
    for name in (
        "JAVA_HOME",
        "TMPDIR",
        "XDG_CACHE_HOME",
        "KRAFT_REPLAY_DRIVER_MEMORY",
        "KRAFT_REPLAY_SHUFFLE_PARTITIONS",
        "SPARK_CONF_DIR",
    ):
        if name in base:
            env[name] = base[name]
    assert shutil.which("python3", path=path) == str(shims / "python3")
    return env


def _did_the_main_job(run: subprocess.CompletedProcess[str], lake: Path) -> None:
    assert run.returncode == 0, f"exit {run.returncode}\n{run.stdout[-3000:]}\n{run.stderr[-6000:]}"
    rules = re.findall(r"─ kraft-replay ([a-z-]+) ", run.stdout)
    assert rules == DEMO_STEPS, run.stdout[-3000:]
    assert (lake / "_ingests" / "_delta_log").is_dir() and (lake / "records" / "_delta_log").is_dir()


def run_in_background(env: dict[str, str], root: Path) -> dict[str, object]:
    """The install and the runs of the two tests below (while the shared session works:
    :mod:`tests.background`): ``kraft-replay --help`` and ``demo`` by the console script's path, and
    ``python -m cli.main`` ingesting a real-Kafka log on a local Connect server then replaying the lake and the
    log."""
    venv = _install(root / "install")
    script, demo = venv / "bin" / "kraft-replay", root / "demo"
    plain = _without_venv_on_path(env, demo)
    assert str(venv) not in plain["PATH"]
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
    connect = root / "connect"
    plain = _without_venv_on_path(env, connect)
    python = [str(venv / "bin" / "python"), "-m", "cli.main"]
    runs["connect"] = [
        subprocess.run([*python, *args, "--json"], cwd=ROOT, env=e, capture_output=True, text=True, timeout=1700)
        for args, e in (
            (["ingest", str(CONNECT_LOG), "--lake", str(connect / "lake")], {**plain, "SPARK_REMOTE": "local[2]"}),
            (["replay", "--lake", str(connect / "lake")], plain),
            (["replay", "--log", str(CONNECT_LOG)], plain),
        )
    ]
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


@pytest.mark.spark
@pytest.mark.background
@pytest.mark.timeout(1800)
def test_python_m_cli_main_in_a_checkout_on_a_local_connect_server() -> None:
    """``python -m cli.main`` with the environment's interpreter (not activated), from the checkout, on the
    local Spark Connect server kraft-replay starts (``SPARK_REMOTE=local[2]``): the server's JVM starts the
    Python workers of the ingest's decode (``mapInArrow``), and the lake it wrote (read in process: reads on a
    Connect server are tests/test_connect.py's) gives the image a replay of the log gives."""
    runs = background.result(__name__)["connect"]
    for run in runs:
        assert run.returncode == 0, f"exit {run.returncode}\n{run.stdout[-3000:]}\n{run.stderr[-6000:]}"
    ingested, from_lake, from_log = (json.loads(r.stdout) for r in runs)
    assert ingested["records_added"] == len(read_log(CONNECT_LOG))
    assert from_lake == from_log and from_lake["topics"]


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
