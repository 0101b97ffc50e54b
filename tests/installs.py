"""kraft-replay as users install it: a regular (non-editable) install of this checkout into a virtual environment,
made once per test process and shared by the tests that run it (:mod:`tests.test_install`, :mod:`tests.test_connect`),
and the environment of a process started without that environment on PATH, as pipx and service units start it."""

from __future__ import annotations

import atexit
import functools
import os
import shutil
import site
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@functools.cache
def venv() -> Path:
    """The virtual environment of this process's install (removed when the process ends)."""
    root = Path(tempfile.mkdtemp(prefix="kraft-replay-venv-"))
    atexit.register(shutil.rmtree, root, ignore_errors=True)
    return _install(root)


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


def without_venv_on_path(base: dict[str, str], tmp_path: Path) -> dict[str, str]:
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
