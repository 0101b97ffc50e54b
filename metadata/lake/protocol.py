"""The Delta lake: table locations, the commit log readers trust, lake transactions, and damage.

Every table is a standard Delta table under ``<lake>/<name>``. A *lake transaction* (:meth:`Lake.transact`)
writes any number of tables (appends, ``createOrReplace``, MERGE/UPDATE/DELETE, OPTIMIZE) and makes them
visible together with one row in ``<lake>/_ingests`` naming the Delta version of every table and the log
high-water mark. Readers read every table *at the version the newest ``_ingests`` row names* (Delta time
travel), so a transaction's writes become visible together, and one that dies half-way is invisible.

Concurrency (docs/lake-protocol.md): writers take the lake's lease (``<lake>/_lease``, a Delta table whose
commits are compare-and-set operations on an epoch, renewed by a heartbeat, expiring if its holder dies);
under the lease a transaction undoes what an interrupted one left behind (``RESTORE`` to the committed
version; tables no commit names are deleted or replaced), writes, checks from the Delta logs that no other
writer committed to its tables meanwhile, and commits its ``_ingests`` row as a compare-and-set on the
sequence number (Delta's idempotent-write transaction id): two transactions can never both commit seq N.
A transaction that meets a conflict starts again from the new committed state; one that cannot get the
lease in time fails with one line and changes nothing.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
import json
import os
import random
import signal
import socket
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, replace
from functools import cached_property
from typing import TYPE_CHECKING, Any, TypeVar

import pyarrow as pa
from pydantic import BaseModel

from metadata.lake.state import INGESTS, LakeDamaged, LakeError, LakeState, lake_uri
from metadata.lake.store import (
    CommitInfo,
    LakeConflict,
    Store,
    is_conflict,
)
from metadata.lake.tables import INGESTS_SCHEMA, table_schemas

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from metadata.lake.files import LakeFiles

__all__ = ["INGESTS", "INGESTS_SCHEMA", "LakeDamaged", "LakeError", "LakeState", "table_schemas"]

Item = TypeVar("Item")
LEASE = "_lease"

_LEASE_SCHEMA = pa.schema([pa.field("epoch", pa.int64())])  # the lease table never holds a row

# Delta transaction ids ("txnAppId") of the two compare-and-set commits: the lease epoch, the _ingests seq
_LEASE_APP = "kraft-replay-lease"
_INGESTS_APP = "kraft-replay-ingests"
COMPACT_AT_FILES = int(os.environ.get("KRAFT_REPLAY_COMPACT_FILES", "64"))
"""An ingest compacts a table it wrote when the table has more data files than this (many small appends)."""

TABLE_THREADS = 4
"""How many tables a transaction writes at once: each write is a few small Delta jobs, mostly driver work."""


def per_table(operation: Callable[[Item], object], items: Iterable[Item]) -> None:
    """Run ``operation`` on each of ``items`` (one table's writes each), :data:`TABLE_THREADS` at a time."""
    with ThreadPoolExecutor(TABLE_THREADS) as pool:
        list(pool.map(operation, items))


Compactor = Callable[["LakeTransaction", str], None]
"""Compacts one table inside a lake transaction (default: :func:`optimize_table`)."""

NEUTRAL_OPERATIONS = frozenset({"OPTIMIZE", "VACUUM START", "VACUUM END"})


class Commit(BaseModel):
    """What a lake transaction reports in its ``_ingests`` row (seq, run id, time and versions are added)."""

    inputs: list[str]
    records_added: int
    snapshots_added: int
    high_water_mark: int
    kafka_version: str | None = None
    """The replay rules' Kafka release line; None keeps the committed state's (a compaction)."""
    segment_marks: dict[str, dict[str, int]] | None = None
    """The :class:`~metadata.log.readers.BatchMark` (as a dict) of every segment the ingest read to its end, by
    absolute path; None keeps the committed state's (a compaction)."""


class LakeBusy(LakeError):
    """Another writer holds the lake's lease for longer than this one would wait; nothing was changed."""


def explain(
    exc: BaseException,
    lake: str | None = None,
    table: str | None = None,
    version: int | None = None,
    spark: SparkSession | None = None,
) -> str | None:
    """:func:`metadata.lake.damage.explain` for a failure of any reader; once PySpark is loaded, ``spark`` (default:
    the active session) looks up whether a VACUUM ran."""
    from metadata.lake import damage as lake_damage

    vacuumed = None
    if "pyspark" in sys.modules:
        from metadata.lake.spark_store import vacuumed as vacuumed_on_spark

        vacuumed = functools.partial(vacuumed_on_spark, spark)
    return lake_damage.explain(exc, lake, table, version, vacuumed)


def damage_of(exc: BaseException) -> LakeDamaged | None:
    """``exc``, met outside the lake's own reads (in a Spark job over its tables), as the :class:`LakeDamaged` it
    reveals (:func:`explain`); None for any other failure."""
    line = explain(exc)
    return LakeDamaged(line) if line is not None else None


# ---------------------------------------------------------------- the lease

_POLL_SECONDS = 2.0


def lease_seconds() -> float:
    """How long a lease lasts without renewal (``KRAFT_REPLAY_LEASE_SECONDS``, default 120): how long a
    crashed writer blocks the next one. Its holder renews it when two thirds of it are left (earlier when
    renewals are slow)."""
    return float(os.environ.get("KRAFT_REPLAY_LEASE_SECONDS", "120"))


class Lease(BaseModel):
    """One state of the lake's lease: the ``userMetadata`` of one commit of ``<lake>/_lease``."""

    epoch: int  # the commit's Delta transaction version: each lease operation raises it by one
    owner: str  # the run id of the holder
    holder: str  # host and process id
    base_seq: int  # the committed _ingests seq when taken: committing any later seq ends the lease
    expires_at: dt.datetime
    released: bool = False

    def free(self, committed_seq: int, now: dt.datetime | None = None) -> bool:
        """Whether another writer may take it, the newest committed seq being ``committed_seq``."""
        return self.released or (now or _now()) >= self.expires_at or committed_seq > self.base_seq


def _holder() -> str:
    return f"{socket.gethostname()} pid {os.getpid()}"


class _LeaseKeeper:
    """Takes, renews (a heartbeat thread) and gives back one run's lease on a lake."""

    def __init__(self, lake: Lake, owner: str, on_wait: Callable[[Lease], None] | None) -> None:
        self.lake, self.owner, self.on_wait = lake, owner, on_wait
        self.duration = lease_seconds()
        self.held: Lease | None = None
        self.lost: str | None = None  # why the heartbeat lost the lease
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def current(self) -> Lease | None:
        return self.lake.lease()

    def acquire(self, wait: float) -> int:
        """Hold the lease (again), waiting at most ``wait`` seconds for another holder (:class:`LakeBusy`
        if it does not end in time); the committed seq it was taken on top of."""
        deadline = time.monotonic() + wait
        told = False
        self.stop_heartbeat()
        while True:
            current = self.current()
            committed, now = self.lake.committed_seq(), _now()
            if current is None or current.owner == self.owner or current.free(committed, now):
                epoch = current.epoch + 1 if current else 1
                lease = Lease(
                    epoch=epoch,
                    owner=self.owner,
                    holder=_holder(),
                    base_seq=committed,
                    expires_at=now + dt.timedelta(seconds=self.duration),
                )
                if self._cas(lease):
                    with self._lock:
                        self.held, self.lost = lease, None
                    self._start_heartbeat()
                    return committed
                continue  # another writer took it first: look again
            if time.monotonic() >= deadline:
                raise LakeBusy(
                    f"lake {self.lake.uri} is being written by {current.holder} (run {current.owner}, "
                    f"lease until {current.expires_at:%Y-%m-%d %H:%M:%S} UTC); nothing was changed — "
                    "try again later, or wait longer (--wait)"
                )
            if not told and self.on_wait is not None:
                self.on_wait(current)
                told = True
            time.sleep(min(_POLL_SECONDS * random.uniform(0.7, 1.3), max(0.0, deadline - time.monotonic())))

    def _cas(self, lease: Lease) -> bool:
        """Commit ``lease`` if the lease's epoch is still ``lease.epoch - 1``: an empty append whose idempotent-write
        version is the epoch (skipped when that version is recorded already, failed when a concurrent commit records
        it). True if the newest lease is now ``lease``."""
        try:
            self.lake.store.append(
                LEASE,
                _LEASE_SCHEMA.empty_table(),
                app=_LEASE_APP,
                version=lease.epoch,
                metadata=lease.model_dump_json(),
            )
        except Exception as exc:
            if isinstance(exc, LakeConflict) or is_conflict(exc):
                return False
            raise
        now = self.current()
        return now is not None and now.epoch == lease.epoch and now.owner == self.owner

    def _start_heartbeat(self) -> None:
        self._stop.clear()
        self._thread = threading.Thread(target=self._beat, name="kraft-replay-lease", daemon=True)
        self._thread.start()

    def _beat(self) -> None:
        """Renew the lease when two thirds of it are left — earlier if renewals are slow (a loaded machine):
        when three renewals' time is left."""
        took = 0.0
        while True:
            with self._lock:
                held = self.held
            if held is None:
                return
            left = (held.expires_at - _now()).total_seconds() - max(self.duration * 2 / 3, 3 * took)
            if self._stop.wait(max(0.0, left)):
                return
            renewed = held.model_copy(
                update={"epoch": held.epoch + 1, "expires_at": _now() + dt.timedelta(seconds=self.duration)}
            )
            started = time.monotonic()
            try:
                ok = self._cas(renewed)
            except Exception as exc:  # noqa: BLE001 — the transaction learns it at its next step
                ok, why = False, f"renewing the lease failed: {' '.join(str(exc).split())[:200]}"
            else:
                why = "another writer took the lease over (this run's renewals came too late)"
            took = time.monotonic() - started
            with self._lock:
                if self.held is None:  # finished or released meanwhile
                    return
                if not ok:
                    self.held, self.lost = None, why
                    return
                self.held = renewed

    def holds(self) -> bool:
        """Whether this run still holds the lease (as the newest ``_lease`` commit says)."""
        current = self.current()
        return (
            current is not None and current.owner == self.owner and not current.released and _now() < current.expires_at
        )

    def check(self) -> None:
        """:class:`LakeConflict` if the heartbeat lost the lease."""
        with self._lock:
            if self.lost:
                raise LakeConflict(self.lost)

    def stop_heartbeat(self) -> None:
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join()
        self._thread = None

    def finish(self) -> None:
        """The transaction committed: its lease ended with the commit (:meth:`Lease.free`)."""
        self.stop_heartbeat()
        with self._lock:
            self.held = None

    def release(self) -> None:
        """Give the lease back (after a failure; a committed transaction's lease ends with its commit)."""
        self.stop_heartbeat()
        with self._lock:
            held, self.held = self.held, None
        if held is not None:
            with contextlib.suppress(Exception):
                current = self.current()
                if current is not None and current.owner == self.owner and not current.released:
                    self._cas(
                        current.model_copy(update={"epoch": current.epoch + 1, "released": True, "expires_at": _now()})
                    )


# ---------------------------------------------------------------- test hook


def fault_point(step: str) -> None:
    """Test hook (``KRAFT_REPLAY_FAULT=<action>@<step>``, unset in normal runs): at ``step`` of a lake
    transaction — ``lease`` (lease taken), ``recovered``, ``write`` (after its first table write),
    ``written`` (all writes done, before the checks and the commit), ``committed`` — the process kills
    itself (``kill``: SIGKILL, no clean-up) or sleeps (``sleep<N>``: N seconds)."""
    action, _, at = os.environ.get("KRAFT_REPLAY_FAULT", "").partition("@")
    if at != step:
        return
    if action == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    elif action.startswith("sleep"):
        time.sleep(float(action[5:]))


# ---------------------------------------------------------------- transactions

R = TypeVar("R")


class LakeTransaction:
    """The table writes of one attempt of a lake transaction, made visible by its ``_ingests`` commit.

    Read the committed state with :attr:`base` / :meth:`table`; write with :meth:`write` (append, or create
    a table no commit names) or :meth:`apply` (any Delta operation on a table's path: MERGE, UPDATE,
    DELETE, OPTIMIZE, …). Writes may run from several threads.
    """

    def __init__(self, lake: Lake, run_id: str, lease: _LeaseKeeper, tables: Sequence[str], attempt: int = 1) -> None:
        self.lake, self.run_id, self._lease, self.attempt = lake, run_id, lease, attempt
        self.tag = f"kraft-replay {run_id} {attempt}"  # the user metadata of this attempt's Delta commits
        self._tables = tables
        self.base: LakeState = lake.committed()
        self._start: dict[str, int] = {}  # per table: its latest version before this attempt's first write
        self._touched: set[str] = set()
        self._written = False
        self._lock = threading.Lock()  # writes may run from several threads

    def _recover(self) -> None:
        """Undo what an interrupted transaction left behind: a table written past its committed version is
        restored to it (unless the later commits only compacted it); a table no commit names is deleted
        (under Spark Connect it stays, and its first write replaces it)."""
        lake, base = self.lake, self.base
        names = list(dict.fromkeys([*table_schemas(), *base.versions, *self._tables]))
        latest = lake.current_versions(names)
        restores: dict[str, int] = {}
        for name in names:
            committed, current = base.versions.get(name), latest[name]
            if committed is None:
                if current is not None:
                    lake.store.delete(name)
                    current = lake.current_version(name)
            elif current is None:
                raise LakeDamaged(
                    f"lake {lake.uri}: table {name} (version {committed} committed by ingest "
                    f"{base.seq}) is missing; restore the table directory from a backup, or "
                    "re-ingest the sources into a new lake"
                )
            elif current < committed:
                raise LakeDamaged(
                    f"lake {lake.uri}: table {name}: its Delta log ends at version {current} but "
                    f"ingest {base.seq} committed version {committed}; restore the table's "
                    "_delta_log from a backup, or re-ingest the sources into a new lake"
                )
            elif current > committed and not all(
                c.operation in NEUTRAL_OPERATIONS for c in lake.commits(name, committed + 1, current)
            ):
                restores[name] = committed
            if current is not None:
                self._start[name] = current
        per_table(lambda name: lake.store.restore(name, restores[name], self.tag), restores)
        self._touched.update(restores)

    def table(self, name: str) -> DataFrame:
        """Table ``name`` as committed (before this transaction's writes), on Spark."""
        return self.lake.table(name, self.base)

    def state(self) -> LakeState:
        """The committed state with this attempt's writes so far: what a later step of the transaction
        reads (``lake.table(name, txn.state())``, ``lake.files(txn.state())``)."""
        latest = self.lake.current_versions(sorted(self._touched))
        return replace(self.base, versions={**self.base.versions, **{n: v for n, v in latest.items() if v is not None}})

    def write(self, name: str, rows: pa.Table | DataFrame, *, create: bool | None = None) -> None:
        """Write ``rows`` (a pyarrow table: in process; a Spark DataFrame: on Spark) to table ``name`` in one Delta
        commit: appended; or (``create``, by default when no commit names the table) as a new table, replacing
        whatever an interrupted write left there."""
        self._lease.check()
        self.lake.write(name, rows, create=name not in self.base.versions if create is None else create, tag=self.tag)
        self._wrote(name)

    def apply(self, name: str, operation: Callable[[str], R]) -> R:
        """Run ``operation`` (any Delta operation) on the path of table ``name`` as part of this transaction (an
        in-process operation tags its commit with :attr:`commit_properties`; one on Spark is tagged by the
        session)."""
        self._lease.check()
        result = operation(self.lake.path(name) if self.lake.on_spark else self.lake.store.path(name))
        self._wrote(name)
        return result

    @property
    def commit_properties(self) -> Any:
        """delta-rs commit properties carrying this attempt's tag (for :meth:`apply` in process)."""
        from metadata.lake.local_store import tagged

        return tagged(self.tag)

    def compact(
        self, names: Sequence[str], compactors: Mapping[str, Compactor] | None = None, *, at_files: int | None = None
    ) -> list[str]:
        """Compact the tables ``names`` (each with its compactor, else Delta ``OPTIMIZE``); with ``at_files``
        only those holding more data files than that. Returns the tables compacted."""
        done = []
        for name in names:
            if at_files is not None and self.lake.data_files(name) <= at_files:
                continue
            (compactors or {}).get(name, optimize_table)(self, name)
            done.append(name)
        return done

    @property
    def written(self) -> list[str]:
        """The tables this attempt wrote so far."""
        return sorted(self._touched)

    def _wrote(self, name: str) -> None:
        with self._lock:
            self._touched.add(name)
            first, self._written = not self._written, True
        if first:
            fault_point("write")

    def _versions(self) -> dict[str, int]:
        """The committed versions with this attempt's writes: every commit to a written table since it began
        must be this run's (or a compaction); otherwise :class:`LakeConflict`."""
        versions = dict(self.base.versions)
        touched = sorted(self._touched)
        latest = self.lake.current_versions(touched)
        for name in touched:
            start, end = self._start.get(name, -1), latest[name]
            if end is None:
                raise LakeConflict(f"table {name} was deleted by another writer during this transaction")
            if end == start:
                continue  # no commit (an empty append, a DELETE that matched nothing)
            foreign = [
                c
                for c in self.lake.commits(name, start + 1, end)
                if c.user_metadata != self.tag and c.operation not in NEUTRAL_OPERATIONS
            ]
            if foreign:
                raise LakeConflict(
                    f"table {name} version {foreign[0].version} ({foreign[0].operation}) was "
                    "committed by another writer during this transaction"
                )
            versions[name] = end
        return versions

    def commit(self, commit: Commit) -> LakeState:
        """Make the writes visible: the ``_ingests`` row of seq ``base.seq + 1``, a compare-and-set on the
        seq (the idempotent-write version of ``_ingests``): it commits only if no one committed that seq."""
        fault_point("written")
        self._lease.check()
        state = LakeState(
            seq=self.base.seq + 1,
            run_id=self.run_id,
            committed_at=_now(),
            versions=self._versions(),
            **commit.model_dump(exclude={"kafka_version", "segment_marks"}),
            kafka_version=commit.kafka_version or self.base.kafka_version,
            segment_marks=self.base.segment_marks if commit.segment_marks is None else commit.segment_marks,
        )
        self._lease.stop_heartbeat()
        self._lease.check()
        marker = json.dumps({"seq": state.seq, "run_id": self.run_id})
        before = self.lake.current_version(INGESTS)
        row = pa.Table.from_pylist([asdict(state)], INGESTS_SCHEMA)
        try:
            self.lake.store.append(INGESTS, row, app=_INGESTS_APP, version=state.seq, metadata=marker)
        except Exception as exc:
            if isinstance(exc, LakeConflict) or is_conflict(exc):
                raise LakeConflict(f"another writer committed ingest {state.seq} first") from None
            raise
        after = self.lake.current_version(INGESTS)
        first = 0 if before is None else before + 1
        if after is None or not any(c.user_metadata == marker for c in self.lake.commits(INGESTS, first, after)):
            raise LakeConflict(f"another writer committed ingest {state.seq} first")
        fault_point("committed")
        return state


def optimize_table(txn: LakeTransaction, name: str) -> None:
    """Delta ``OPTIMIZE`` of table ``name`` (bin-packing small files) as a write of ``txn``: on Spark, or with
    delta-rs in process."""
    if txn.lake.on_spark:
        from metadata.lake.spark_store import sql_table

        txn.apply(name, lambda path: txn.lake.spark.sql(f"OPTIMIZE {sql_table(path)}").collect())
    else:
        from metadata.lake.local_store import open_table, table_writer_properties

        def compact(path: str) -> None:
            table = open_table(path)
            table.optimize.compact(
                writer_properties=table_writer_properties(table), commit_properties=txn.commit_properties
            )

        txn.apply(name, compact)


def _now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


class Lake:
    """A kraft-replay lake at ``location`` (a directory or any URI Spark can write).

    ``spark``: the session of an ingest on Spark (its writes are Spark's, tagged through the session); without
    one, a lake on a local path is written in process (pyarrow tables, delta-rs), and any other lake on a Spark
    session made when first needed. The protocol's own commits go through :attr:`store`."""

    def __init__(self, location: str, spark: SparkSession | None = None) -> None:
        self.uri = lake_uri(location)
        self._spark = spark

    @cached_property
    def spark(self) -> SparkSession:
        from metadata.lake.spark import get_spark

        return self._spark or get_spark()

    def path(self, name: str) -> str:
        return f"{self.uri}/{name}"

    @cached_property
    def in_process(self) -> bool:
        """Whether this process reads and commits the lake's files itself (delta-rs and pyarrow, no Spark job): the
        lake is on a local path and this process is Spark's driver if a session is given (a Spark Connect server
        may see paths its client does not)."""
        from metadata.lake.state import reachable

        if not reachable(self.uri):
            return False
        if self._spark is None:
            return True
        from metadata.lake.spark import is_connect

        return not is_connect(self._spark)

    @property
    def on_spark(self) -> bool:
        """Whether this lake's table writes run on Spark (a session was given, or only Spark reaches the lake)."""
        return self._spark is not None or not self.in_process

    @cached_property
    def store(self) -> Store:
        """The Delta operations of the commit protocol: in process for a lake on a local path, else on Spark."""
        if self.in_process:
            from metadata.lake.local_store import LocalStore

            return LocalStore(self.uri)
        from metadata.lake.spark_store import SparkStore

        return SparkStore(self.uri, self.spark)

    def exists(self) -> bool:
        return self.current_version(INGESTS) is not None

    def state(self) -> LakeState:
        """The committed state; :class:`LakeError` if there is no lake here."""
        if not self.exists():
            raise LakeError(f"no kraft-replay lake at {self.uri} (run `kraft-replay ingest ... --lake {self.uri}`)")
        return self.store.newest()

    def committed(self) -> LakeState:
        """The committed state, or the empty state of a lake no ingest has committed to yet."""
        if not self.exists():
            return LakeState(
                seq=0,
                run_id="init",
                committed_at=_now(),
                inputs=[],
                records_added=0,
                snapshots_added=0,
                high_water_mark=-1,
                versions={},
            )
        return self.store.newest()

    def committed_seq(self) -> int:
        """The newest committed seq, from the newest ``_ingests`` commit's metadata when it has it (no table
        read); 0 for a lake no ingest has committed to."""
        version = self.current_version(INGESTS)
        if version is None:
            return 0
        info = self.commits(INGESTS, version, version)
        with contextlib.suppress(ValueError, TypeError, KeyError):
            return int(json.loads(info[0].user_metadata)["seq"])
        return self.store.newest().seq

    def table(self, name: str, state: LakeState | None = None) -> DataFrame:
        """Table ``name`` on Spark as of the committed state (time travel to the recorded version); a table no
        ingest has written yet reads as empty."""
        from metadata.lake.spark_store import spark_schema

        state = state or self.state()
        schemas = table_schemas()
        if name not in state.versions:
            if name not in schemas:
                raise LakeError(f"a kraft-replay lake has no table {name!r}")
            return self.spark.createDataFrame([], spark_schema(schemas[name]))
        try:
            return self.spark.read.format("delta").option("versionAsOf", state.versions[name]).load(self.path(name))
        except Exception as exc:
            self._raise_damage(exc, name, state.versions[name])
            raise

    def _raise_damage(self, exc: BaseException, table: str | None = None, version: int | None = None) -> None:
        """Raise :class:`LakeDamaged` (one line) if ``exc`` comes from a damaged lake; else return."""
        line = explain(exc, self.uri, table, version, self._spark)
        if line is not None:
            raise LakeDamaged(line) from exc

    @contextlib.contextmanager
    def reading(self) -> Iterator[None]:
        """Failures of the Spark jobs inside that come from a damaged lake become :class:`LakeDamaged`."""
        try:
            yield
        except Exception as exc:
            self._raise_damage(exc)
            raise

    def lease(self) -> Lease | None:
        """The lake's lease as the newest commit of ``_lease`` records it; None if no writer ever took it."""
        version = self.current_version(LEASE)
        if version is None:
            return None
        info = self.commits(LEASE, version, version)
        return Lease.model_validate_json(info[0].user_metadata) if info and info[0].user_metadata else None

    def current_version(self, name: str) -> int | None:
        """Latest Delta version of table ``name``; None if there is none."""
        return self.current_versions([name])[name]

    def current_versions(self, names: Sequence[str]) -> dict[str, int | None]:
        """Latest Delta version of each of the tables ``names``."""
        return self.store.versions(names)

    def commits(self, name: str, first: int, last: int) -> list[CommitInfo]:
        """The commits ``first`` … ``last`` of table ``name``, oldest first."""
        return self.store.commits(name, first, last)

    def scan(self, name: str, state: LakeState) -> DataFrame:
        """Table ``name`` at ``state`` for a Spark job that reads it whole: for a lake read in process whose table
        no deletion vector masks, its data files (as delta-rs lists them) read as Parquet with the table's
        schema — the same rows as :meth:`table`, without Delta's log replay and file-filtering jobs; else
        :meth:`table`."""
        files = self.files(state)
        if files is None or name not in state.versions or files.masked(name) or not files.files(name):
            return self.table(name, state)
        from metadata.lake.spark import glob_escaped
        from metadata.lake.spark_store import spark_schema

        schema = spark_schema(files.schema(name))
        return self.spark.read.schema(schema).parquet(*(glob_escaped(f.uri) for f in files.files(name)))

    def files(self, state: LakeState) -> LakeFiles | None:
        """The tables at the versions ``state`` names, read in process; None unless :attr:`in_process`."""
        from metadata.lake.files import LakeFiles

        return LakeFiles(self.uri, state) if self.in_process else None

    def data_files(self, name: str) -> int:
        """How many data files the newest version of table ``name`` holds (0: no table)."""
        return self.store.data_files(name)

    def write(self, name: str, rows: pa.Table | DataFrame, *, create: bool, tag: str | None = None) -> None:
        """Write ``rows`` to table ``name`` in one Delta commit: appended, or (``create``) as a new table with its
        properties (:func:`table_properties`). A pyarrow table is written in process with delta-rs (its commit
        tagged ``tag``); a Spark DataFrame on Spark (tagged by the session). Use it inside a
        :class:`LakeTransaction`."""
        if isinstance(rows, pa.Table):
            from metadata.lake.local_store import write

            write(self.store.path(name), name, rows, create=create, tag=tag)
        else:
            from metadata.lake.spark_store import write_frame

            write_frame(self.path(name), name, rows, create=create)

    def transact(
        self,
        body: Callable[[LakeTransaction], Commit],
        *,
        run_id: str | None = None,
        wait: float = 600.0,
        tables: Sequence[str] = (),
        attempts: int = 4,
        on_wait: Callable[[Lease], None] | None = None,
    ) -> LakeState:
        """Run ``body`` as one lake transaction and commit what it returns; the committed state.

        Under the lake's lease (waiting at most ``wait`` seconds for another writer: :class:`LakeBusy`),
        the body writes on top of the committed state (``txn.base``); if another writer committed to a
        table it wrote, or the seq, the attempt's writes stay invisible and ``body`` runs again on the new
        state, up to ``attempts`` times (then :class:`LakeConflict`). ``tables``: tables beyond the lake's
        own that the body may create (so that recovery knows them).
        """
        run_id = run_id or uuid.uuid4().hex
        lease = _LeaseKeeper(self, run_id, on_wait)
        failure = ""
        try:
            for attempt in range(1, attempts + 1):
                base_seq = lease.acquire(wait)
                fault_point("lease")
                try:
                    txn = LakeTransaction(self, run_id, lease, tables, attempt)
                    with self._tagged(txn.tag):
                        if txn.base.seq != base_seq:  # committed between the look and the lease
                            raise LakeConflict(f"ingest {txn.base.seq} was committed meanwhile")
                        txn._recover()
                        fault_point("recovered")
                        state = txn.commit(body(txn))
                    lease.finish()
                    return state
                except LakeConflict as exc:
                    failure = str(exc)
                except Exception as exc:
                    # a writer that lost the lease (it stalled past its expiry) may fail in any way when the
                    # next holder undoes its writes: that is a conflict too
                    if not is_conflict(exc) and lease.holds():
                        raise
                    failure = " ".join(str(exc).split())[:300]
            raise LakeConflict(
                f"lake {self.uri}: gave up after {attempts} attempts, each overtaken by another "
                f"writer (last: {failure}); nothing was committed — run it again"
            )
        finally:
            lease.release()

    def _tagged(self, tag: str) -> contextlib.AbstractContextManager[None]:
        """Spark's commits made meanwhile carry ``tag`` (the session's user metadata); nothing in process."""
        if not self.on_spark:
            return contextlib.nullcontext()
        from metadata.lake.spark_store import tagged

        return tagged(self.spark, tag)

    def optimize(
        self,
        names: Sequence[str] | None = None,
        *,
        wait: float = 600.0,
        compactors: Mapping[str, Compactor] | None = None,
    ) -> LakeState:
        """Compact the committed tables ``names`` (default: all) with their compactors (default: Delta's
        ``OPTIMIZE``), as a lake transaction: readers of the former versions still read them (until a
        ``VACUUM``)."""

        def body(txn: LakeTransaction) -> Commit:
            txn.compact([n for n in names or sorted(txn.base.versions) if n in txn.base.versions], compactors)
            return Commit(inputs=[], records_added=0, snapshots_added=0, high_water_mark=txn.base.high_water_mark)

        return self.transact(body, wait=wait)
