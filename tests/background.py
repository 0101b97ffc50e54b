"""Work in other processes that needs nothing from this one — a Spark Connect server's session, a virtual
environment's install and runs — started when the run starts and collected by the tests that check it, so
that it runs while the shared session works instead of after it.

A test module opts in with a module-level ``run_in_background(env, root)`` function (``env``: the environment when
the run started, before any test changed it; ``root``: a directory of its own) whose result its fixtures
take with :func:`result`. The jobs run one after another on one thread (one extra process at a time beside
the run); a module run without the hook (``result`` before the run started it) does the work then.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

Work = Callable[[dict[str, str], Path], Any]

_POOL: ThreadPoolExecutor | None = None
_JOBS: dict[str, Future[Any]] = {}
_ROOTS: list[str] = []


def _run(work: Work, env: dict[str, str]) -> Any:
    root = tempfile.mkdtemp(prefix="kraft-replay-background-")
    _ROOTS.append(root)
    return work(env, Path(root))


def start(modules: Iterable[object]) -> None:
    """Start the ``run_in_background`` work of each of ``modules`` that defines it (each once)."""
    global _POOL
    env = dict(os.environ)
    for module in modules:
        work = getattr(module, "run_in_background", None)
        name = getattr(module, "__name__", "")
        if callable(work) and name not in _JOBS:
            _POOL = _POOL or ThreadPoolExecutor(max_workers=1, thread_name_prefix="background")
            _JOBS[name] = _POOL.submit(_run, work, env)


def result(module_name: str) -> Any:
    """What the ``run_in_background`` work of ``module_name`` returned (started now if the run did not start it)."""
    if module_name not in _JOBS:
        start([sys.modules[module_name]])
    return _JOBS[module_name].result()


def finish() -> None:
    """Wait for the jobs (a test that failed early may not have asked) and remove their directories."""
    if _POOL is not None:
        _POOL.shutdown(wait=True, cancel_futures=True)
    for root in _ROOTS:
        shutil.rmtree(root, ignore_errors=True)
