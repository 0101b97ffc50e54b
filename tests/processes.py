"""Running the command line in its own process, as an operator would (in process, or with its own Spark
session)."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# ``kraft-replay`` from this tree (``python -m cli.main`` would run before the image commands are registered)
KRAFT_REPLAY = [sys.executable, "-c", "from cli.main import app; app()"]


def environment(base: Mapping[str, str] | None = None, *, spark: bool = False, **settings: str) -> dict[str, str]:
    """The environment of a ``kraft-replay`` process: ``base`` (default: this process's), this tree first on
    the path, ``settings`` added (``KRAFT_REPLAY_FAULT`` only if given); with ``spark``, a Spark master named
    (one core: reads and ingests then run on Spark)."""
    env = {**(os.environ if base is None else base), "PYTHONPATH": str(ROOT), "KRAFT_REPLAY_DRIVER_MEMORY": "1g"}
    env.pop("KRAFT_REPLAY_FAULT", None)
    env.pop("KRAFT_REPLAY_MASTER", None)
    if spark:
        env["KRAFT_REPLAY_MASTER"] = "local[1]"
    return {**env, **settings}
