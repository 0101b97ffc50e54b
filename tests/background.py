"""Work in other processes that needs nothing from this one — a Spark Connect server's session, a virtual
environment's install and runs, ``ingest --follow`` — started when the run starts and collected by the tests
that check it, so that it runs while the shared session works instead of after it.

A test module opts in with a module-level ``run_in_background(env, root)`` function (``env``: the environment
when the run started, before any test changed it; ``root``: a directory of its own) whose result the tests
marked ``background`` take with :func:`result`; the work starts only if such a test is selected. The jobs run
one after another on one thread (one extra process at a time beside the run); a test run without the hook
(``result`` before the run started it) does the work then.

Under pytest-xdist every worker collects every test: the first worker to claim a module's work (a file created
in a directory of the run that all workers share) runs it and leaves its result there (pickled) for the worker
that runs the module's tests; the main process removes that directory when the run ends.
"""

from __future__ import annotations

import os
import pickle
import shutil
import sys
import tempfile
import time
import uuid
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
_SHARED: Path | None = None  # under pytest-xdist: the run's directory every worker sees
WAIT_SECONDS = 3600  # for the work another worker claimed


RUN = "KRAFT_REPLAY_TEST_RUN"  # the id of a pytest-xdist run, set by its main process (the workers inherit it)


def configure(config: pytest.Config) -> None:
    """In the main process of a pytest-xdist run (``-n N``, N > 0): name the run for its workers."""
    if not hasattr(config, "workerinput") and (config.getoption("numprocesses", None) or 0) > 0:
        os.environ[RUN] = uuid.uuid4().hex


def _shared(config: pytest.Config) -> Path | None:
    """The directory the workers of this pytest-xdist run share (None outside xdist)."""
    distributed = hasattr(config, "workerinput") or (config.getoption("numprocesses", None) or 0) > 0
    return Path(tempfile.gettempdir()) / f"kraft-replay-background-{os.environ[RUN]}" if distributed else None


def _run(work: Work, env: dict[str, str], name: str) -> Any:
    root = tempfile.mkdtemp(prefix="kraft-replay-background-", dir=_SHARED)
    if _SHARED is None:
        _ROOTS.append(root)
        return work(env, Path(root))
    try:
        outcome: tuple[bool, Any] = (True, work(env, Path(root)))
    except BaseException as exc:  # handed to the worker that runs the module's tests
        outcome = (False, exc)
    (_SHARED / f"{name}.tmp").write_bytes(pickle.dumps(outcome))
    (_SHARED / f"{name}.tmp").rename(_SHARED / f"{name}.pickle")
    if not outcome[0]:
        raise outcome[1]
    return outcome[1]


def start(items: Iterable[pytest.Item], config: pytest.Config) -> None:
    """Start the ``run_in_background`` work of the modules of ``items`` marked ``background`` (each once)."""
    global _SHARED
    _SHARED = _shared(config)
    if _SHARED is not None:
        _SHARED.mkdir(exist_ok=True)
    modules = dict.fromkeys(getattr(i, "module", None) for i in items if i.get_closest_marker("background"))
    _submit(m for m in modules if m is not None)


def _claim(name: str) -> bool:
    """Whether this process runs the work of module ``name`` (always, outside xdist)."""
    if _SHARED is None:
        return True
    try:
        os.close(os.open(_SHARED / f"{name}.claim", os.O_CREAT | os.O_EXCL))
    except FileExistsError:
        return False
    return True


def _submit(modules: Iterable[ModuleType]) -> None:
    global _POOL
    env = dict(os.environ)
    for module in modules:
        if module.__name__ not in _JOBS and _claim(module.__name__):
            _POOL = _POOL or ThreadPoolExecutor(max_workers=1, thread_name_prefix="background")
            _JOBS[module.__name__] = _POOL.submit(_run, module.run_in_background, env, module.__name__)


def result(module_name: str) -> Any:
    """What the ``run_in_background`` work of ``module_name`` returned (started now if the run did not start it;
    under xdist, waited for if another worker runs it)."""
    if module_name not in _JOBS:
        _submit([sys.modules[module_name]])
    if module_name in _JOBS:
        return _JOBS[module_name].result()
    assert _SHARED is not None
    done, deadline = _SHARED / f"{module_name}.pickle", time.monotonic() + WAIT_SECONDS
    while not done.exists():
        assert time.monotonic() < deadline, f"the background work of {module_name} (another worker's) never ended"
        time.sleep(1)
    ok, value = pickle.loads(done.read_bytes())
    if not ok:
        raise value
    return value


def finish(config: pytest.Config) -> None:
    """Wait for the jobs (a test that failed early may not have asked) and remove their directories (under
    xdist: the main process removes the shared directory, once every worker has ended)."""
    if _POOL is not None:
        _POOL.shutdown(wait=True, cancel_futures=True)
    for root in _ROOTS:
        shutil.rmtree(root, ignore_errors=True)
    if not hasattr(config, "workerinput") and (shared := _shared(config)) is not None:
        shutil.rmtree(shared, ignore_errors=True)
