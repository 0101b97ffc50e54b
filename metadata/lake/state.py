"""What readers of a lake trust, without Spark: the committed state (the newest ``_ingests`` row) and
the lake's location."""

from __future__ import annotations

import datetime as dt
import gc
import os
import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlparse

from metadata.log.errors import BadInput, KraftReplayError

if TYPE_CHECKING:
    from concurrent.futures import ProcessPoolExecutor

INGESTS = "_ingests"


@dataclass(frozen=True)
class LakeState:
    """The newest committed ingest: what readers see (the columns of its ``_ingests`` row). A dataclass, not a
    pydantic model: every read of a lake makes one, and pydantic's import is ≈ 0.1 s of a read's start-up."""

    seq: int
    run_id: str
    committed_at: dt.datetime
    inputs: list[str]
    records_added: int
    snapshots_added: int
    high_water_mark: int
    versions: dict[str, int]
    kafka_version: str | None = None
    """The Kafka release line whose replay rules built the temporal image (``--kafka-version``); None in a lake
    written before kraft-replay followed each release's rules."""
    segment_marks: dict[str, dict[str, int]] = field(default_factory=dict)
    """The last whole batch of each segment the newest ingest read to its end (a
    :class:`~metadata.log.readers.BatchMark` as a dict, by absolute path): where the next ingest of that segment
    starts hopping over batch headers once it finds that batch there."""


class LakeError(KraftReplayError, RuntimeError):
    """The lake is missing or not a kraft-replay lake."""


class LakeDamaged(LakeError):
    """A table, file or version the committed state needs is missing or unreadable (one line: which, and
    what to do)."""


def lake_uri(location: str) -> str:
    """A lake location as a URI (a local path made absolute)."""
    if "://" in location or location.startswith("file:"):
        return location.rstrip("/")
    return os.path.abspath(location)


def reachable(location: str) -> bool:
    """A lake on a local path or a ``file:`` URI: read in process (:mod:`metadata.lake.files`), no Spark needed."""
    scheme = urlparse(location).scheme
    return scheme in ("", "file") or (len(scheme) == 1 and os.name == "nt")


MASTER_VARIABLES = ("SPARK_REMOTE", "KRAFT_REPLAY_MASTER")


def spark_named(master: str | None = None) -> bool:
    """Whether the user named a Spark master (option or environment)."""
    return master is not None or any(os.environ.get(v) for v in MASTER_VARIABLES)


Engine = Literal["local", "spark"]

LOCAL_MAX_BYTES = int(os.environ.get("KRAFT_REPLAY_LOCAL_MAX_BYTES", str(256 << 20)))
"""Input bytes (what an ingest decodes: segment ranges the lake already holds are not counted) up to which an
ingest runs in process; above it, Spark. 256 MiB is 2.5 times Kafka's default retention of the metadata log
(``metadata.max.retention.bytes``, 100 MiB: ≈ 1.5 M records), so any log kept by default ingests in process;
``KRAFT_REPLAY_LOCAL_MAX_BYTES`` sets another."""


def choose_engine(lake: str, engine: str = "auto", master: str | None = None, input_bytes: int = 0) -> Engine:
    """Where an ingest (or ``optimize``, ``check``) runs: ``engine`` or ``KRAFT_REPLAY_ENGINE`` when forced
    (``local`` needs a lake on a local path); else in process for a lake on a local path whose input is at most
    :data:`LOCAL_MAX_BYTES`, unless a Spark master is named."""
    forced = engine if engine != "auto" else os.environ.get("KRAFT_REPLAY_ENGINE", "auto")
    if forced not in ("auto", "local", "spark"):
        raise BadInput(f"unknown engine {forced!r} (auto, local or spark)")
    if forced == "local" and not reachable(lake):
        raise BadInput(f"the local engine writes a lake on a local path or file: URI, not {lake}")
    if forced != "auto":
        return forced  # type: ignore[return-value]
    local = reachable(lake) and not spark_named(master) and input_bytes <= LOCAL_MAX_BYTES
    return "local" if local else "spark"


class _PandasForSparkOnly:
    """An import finder refusing ``pandas`` while PySpark is not loaded.

    pyarrow treats pandas as optional and imports it the first time it checks whether an object is a pandas
    one (any ``pa.array``, ``pa.table`` or the load of ``pyarrow.dataset``): 0.3–0.4 s of a command that takes
    about a second otherwise. A read or an ingest in process never hands pyarrow a pandas object, so the CLI
    installs this finder for them (:func:`refuse_pandas`) and pyarrow takes pandas as absent; whatever truly needs
    pandas (``Table.to_pandas``) imports it again by itself once PySpark, its only user here, is loaded (``replay
    --save`` starts Spark after an in-process read). Library callers are not affected: only the CLI (and the
    decoding workers of an ingest it runs in process) install it.
    """

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        if name.partition(".")[0] == "pandas" and "pyspark" not in sys.modules:
            raise ModuleNotFoundError(f"No module named {name!r} (not needed in process)", name=name)


_NO_PANDAS = _PandasForSparkOnly()


def refuse_pandas() -> None:
    """Install :class:`_PandasForSparkOnly` in this process (once; nothing if pandas is loaded already)."""
    if "pandas" not in sys.modules and _NO_PANDAS not in sys.meta_path:
        sys.meta_path.insert(0, _NO_PANDAS)


def refusing_pandas() -> bool:
    """Whether this process refuses pandas (:func:`refuse_pandas`)."""
    return _NO_PANDAS in sys.meta_path


GC_THRESHOLDS = (50_000, 10, 10)
"""The collector's thresholds of a process that makes many small objects forming no cycles (the CLI, an ingest's
worker): young objects collected every 50,000 allocations instead of Python's 700."""


def process_pool(workers: int) -> ProcessPoolExecutor:
    """``workers`` worker processes for an ingest in process (its decode, its build of the temporal image): spawned,
    not forked (delta-rs runs threads in this process); each collects garbage as the CLI does (``cli.main``: a
    worker decodes or replays many small objects that form no cycles, and a replaying one holds a whole log's:
    Python's default thresholds cost it about a fifth of its time) and refuses pandas when this process does."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    return ProcessPoolExecutor(
        workers,
        mp_context=multiprocessing.get_context("spawn"),
        initializer=_start_worker,
        initargs=(refusing_pandas(),),
    )


def _start_worker(refuse: bool) -> None:
    """A worker of :func:`process_pool` starting."""
    gc.set_threshold(*GC_THRESHOLDS)
    if refuse:
        refuse_pandas()
