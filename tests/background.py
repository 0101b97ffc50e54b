"""Work in other processes that needs nothing from this one — a Spark Connect server's session, a virtual
environment's install and runs, ``ingest --follow``, a first Spark start, a Spark process reading a damaged lake —
started when the run starts (under pytest-xdist: by the worker that runs the Spark group, with its first test;
:mod:`tests.workers`) and collected by the tests that check it, so that it runs while the shared session works
instead of after it. The tests marked ``background`` belong to the Spark group, so the worker that started the work
takes its results.

A test module opts in with a module-level ``run_in_background(env, root)`` function (``env``: the environment
when the run started, before any test changed it; ``root``: a directory of its own) whose result the tests
marked ``background`` take with :func:`result`; the work starts only if such a test is selected. The jobs run
one after another on one thread (one extra process at a time beside the run); a test run without the hook
(``result`` before the run started it) does the work then.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

Work = Callable[[dict[str, str], Path], Any]

_POOL: ThreadPoolExecutor | None = None
_JOBS: dict[str, Future[Any]] = {}
_ROOTS: list[str] = []


def _run(work: Work, env: dict[str, str]) -> Any:
    root = tempfile.mkdtemp(prefix="kraft-replay-background-")
    _ROOTS.append(root)
    return work(env, Path(root))


def start(items: Iterable[pytest.Item]) -> None:
    """Start the ``run_in_background`` work of the modules of ``items`` marked ``background`` (each once)."""
    modules = dict.fromkeys(getattr(i, "module", None) for i in items if i.get_closest_marker("background"))
    _submit(m for m in modules if m is not None)


def _submit(modules: Iterable[ModuleType]) -> None:
    global _POOL
    env = dict(os.environ)
    for module in modules:
        if module.__name__ not in _JOBS:
            _POOL = _POOL or ThreadPoolExecutor(max_workers=1, thread_name_prefix="background")
            _JOBS[module.__name__] = _POOL.submit(_run, module.run_in_background, env)


def result(module_name: str) -> Any:
    """What the ``run_in_background`` work of ``module_name`` returned (started now if the run did not start it)."""
    if module_name not in _JOBS:
        _submit([sys.modules[module_name]])
    return _JOBS[module_name].result()


def finish() -> None:
    """Wait for the jobs (a test that failed early may not have asked) and remove their directories."""
    if _POOL is not None:
        _POOL.shutdown(wait=True, cancel_futures=True)
    for root in _ROOTS:
        shutil.rmtree(root, ignore_errors=True)
