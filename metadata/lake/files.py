"""The lake read in process, without Spark or a JVM.

delta-rs (the ``deltalake`` package) resolves a table's files at the Delta version the newest ``_ingests``
row names, with their statistics and deletion vectors; pyarrow reads the files. (Reading through
deltalake's own pyarrow dataset can abort the interpreter at exit, delta-rs issue 2184; resolving the
files and reading them with pyarrow does not.) Files are pruned by their statistics before anything is
read: a question about one offset of a large lake opens a few files.

Any location delta-rs and pyarrow both read works (a local path, ``file:``, object stores with their
usual environment configuration); :func:`metadata.lake.state.reachable` says whether a location is one this
module should take rather than Spark.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any
from urllib.parse import unquote, urlparse

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds

from metadata.lake import damage as lake_damage
from metadata.lake.state import INGESTS, LakeDamaged, LakeError, LakeState, lake_uri
from metadata.lake.tables import INGESTS_SCHEMA, RECORDS_SCHEMA, SNAPSHOTS_SCHEMA

_COMMIT_RE = re.compile(r"\d{20}\.json")
_CHECKPOINT_RE = re.compile(r"\d{20}\.checkpoint(\.\d+\.\d+)?\.parquet|\d{20}\.checkpoint\.[\w-]+\.(parquet|json)")


@dataclass(frozen=True)
class DataFile:
    """One data file of a table version: its URI, row count and per-column (min, max, null count)."""

    uri: str
    rows: int
    stats: dict[str, tuple[Any, Any, int | None]]

    def may_hold(self, column: str, lo: Any = None, hi: Any = None, nulls: bool = False) -> bool:
        """Whether the file can hold a row with ``lo <= column <= hi`` (bounds optional), or a null
        ``column`` when ``nulls``; files without statistics of the column always can."""
        if column not in self.stats:
            return True
        low, high, null_count = self.stats[column]
        if nulls and (null_count is None or null_count > 0):
            return True
        if low is None and high is None:  # every value null
            return False
        return (hi is None or low is None or low <= hi) and (lo is None or high is None or high >= lo)


class LakeFiles:
    """A lake's tables at its committed state, read with delta-rs and pyarrow."""

    def __init__(self, location: str, state: LakeState | None = None) -> None:
        """``state``: read the tables at the versions it names (e.g. an ingest's, before it commits)
        instead of the newest ``_ingests`` row's."""
        self.uri = lake_uri(location)
        self._files: dict[str, tuple[list[DataFile], dict[str, list[bool]]]] = {}
        self._schemas: dict[str, pa.Schema] = {}
        if state is not None:
            self._state = state

    def path(self, name: str) -> str:
        return f"{self.uri}/{name}"

    def _table(self, name: str, version: int | None = None):
        """The Delta table ``name`` at ``version`` (None: the latest; no table: None). A committed version
        whose Delta log is incomplete or unreadable raises :class:`LakeDamaged`: delta-rs would otherwise
        build a version from the commits that are left and silently miss files."""
        from deltalake import DeltaTable
        from deltalake.exceptions import TableNotFoundError

        if version is not None:
            self._check_log(name, version)
        try:
            return DeltaTable(self.path(name), version=version)
        except TableNotFoundError:
            if version is None:
                return None
            raise LakeDamaged(lake_damage.missing_table(self._head(name), lake_damage.hint(self.uri))) from None
        except Exception as exc:  # delta-rs's own errors: a commit it cannot parse
            raise LakeDamaged(
                lake_damage.corrupt_log(
                    self._head(name, version), self._unparsable(name, version), lake_damage.hint(self.uri)
                )
            ) from exc

    def _head(self, name: str, version: int | None = None) -> str:
        return f"lake {self.uri}: table {name}" + (f" at version {version}" if version is not None else "")

    def _log_dir(self, name: str) -> str:
        return os.path.join(_plain(self.path(name)), "_delta_log")

    def _check_log(self, name: str, version: int) -> None:
        """Every commit file a reader of ``version`` needs is there: from the newest checkpoint at or below
        it (or version 0) through ``version``."""
        check = lake_damage.hint(self.uri)
        try:
            entries = os.listdir(self._log_dir(name))
        except FileNotFoundError:
            raise LakeDamaged(lake_damage.missing_table(self._head(name, version), check)) from None
        commits = {int(f[:20]) for f in entries if _COMMIT_RE.fullmatch(f)}
        checkpoints = [int(f[:20]) for f in entries if _CHECKPOINT_RE.fullmatch(f)]
        if not commits and not checkpoints:
            raise LakeDamaged(lake_damage.missing_table(self._head(name, version), check))
        if version > max(commits | set(checkpoints)):
            known = sorted(commits | set(checkpoints))
            raise LakeDamaged(lake_damage.version_gone(self._head(name), version, known[0], known[-1], check))
        base = max((c for c in checkpoints if c <= version), default=-1)
        gone = [v for v in range(base + 1, version + 1) if v not in commits]
        if gone:
            raise LakeDamaged(
                lake_damage.log_file(self._head(name, version), f"_delta_log/{gone[0]:020d}.json", True, check)
            )

    def _unparsable(self, name: str, version: int | None) -> str | None:
        """The first commit file of the table's log (up to ``version``) that is not JSON lines, if any."""
        directory = self._log_dir(name)
        for f in sorted(os.listdir(directory)):
            if _COMMIT_RE.fullmatch(f) and (version is None or int(f[:20]) <= version):
                try:
                    with open(os.path.join(directory, f), encoding="utf-8") as lines:
                        for line in lines:
                            if line.strip():
                                json.loads(line)
                except (ValueError, UnicodeDecodeError):
                    return f
        return None

    def _read_files(
        self,
        name: str,
        uris: list[str],
        where: pc.Expression | None,
        columns: Sequence[str] | None,
        schema: pa.Schema | None,
        narrow: Sequence[str] | None = None,
    ) -> pa.Table:
        """:func:`_read`, a missing or unreadable data file reported as :class:`LakeDamaged`."""
        try:
            return _read(uris, where, columns, schema, narrow)
        except (OSError, pa.ArrowException) as exc:
            version = self.state().versions.get(name)
            missing = next((u for u in uris if not os.path.exists(_plain(u))), None)
            check = lake_damage.hint(self.uri)
            if missing is not None:
                raise LakeDamaged(
                    lake_damage.missing_file(
                        self._head(name), os.path.basename(_plain(missing)), self._vacuumed(name), check
                    )
                ) from exc
            line = lake_damage.explain(exc, self.uri, name, version)
            if line is None:
                raise
            raise LakeDamaged(line) from exc

    def _vacuumed(self, name: str) -> int | None:
        """The version of the table's newest VACUUM, if its history says."""
        try:
            history = self._table(name).history()
        except Exception:  # noqa: BLE001 — only a better message is at stake
            return None
        return max((h["version"] for h in history if h.get("operation") == "VACUUM END"), default=None)

    def ingests(self) -> pa.Table:
        """Every row of ``_ingests`` (its newest version); :class:`LakeError` if there is none."""
        ingests = self._table(INGESTS)
        if ingests is None:
            raise LakeError(f"no kraft-replay lake at {self.uri} (run `kraft-replay ingest ... --lake {self.uri}`)")
        parts = [self._ingests_file(a["path"]) for a in _add_actions(ingests)]
        if not parts:
            raise LakeError(f"lake at {self.uri} has no committed ingest")
        return pa.concat_tables(parts)

    def _ingests_file(self, path: str) -> pa.Table:
        """The rows of one data file of ``_ingests`` (its path in the table), ``committed_at`` in µs UTC whichever
        engine wrote it (Spark writes INT96, read as ns without a zone; delta-rs µs with one)."""
        table = self._read_files(INGESTS, [_join(self.path(INGESTS), path)], None, None, None)
        at = table.schema.get_field_index("committed_at")
        if at >= 0:
            when = table.column(at)
            if when.type.tz is None:
                when = pc.assume_timezone(when, "UTC")
            table = table.set_column(at, "committed_at", when.cast(pa.timestamp("us", "UTC"), safe=False))
        columns = [  # a column newer than the lake (an older lake's rows lack ``segment_marks``): null
            table[f.name].cast(f.type) if f.name in table.column_names else pa.nulls(table.num_rows, f.type)
            for f in INGESTS_SCHEMA
        ]
        return pa.Table.from_arrays(columns, schema=INGESTS_SCHEMA)

    def _newest_commit_row(self) -> dict | None:
        """The newest ``_ingests`` row from the newest commit alone, when it is a lake transaction's commit (it
        names its seq in its user metadata, and adds the one file holding that row): every commit of
        ``_ingests`` is the compare-and-set of the next seq, so that row is the newest — read in the time of one
        small file however many ingests the lake holds. None when the newest commit is anything else."""
        log = os.path.join(_plain(self.path(INGESTS)), "_delta_log")
        try:
            newest = max((f for f in os.listdir(log) if _COMMIT_RE.fullmatch(f)), default=None)
            if newest is None:
                return None
            with open(os.path.join(log, newest), encoding="utf-8") as f:
                actions = [json.loads(line) for line in f if line.strip()]
        except (OSError, ValueError):
            return None
        info = next((a["commitInfo"] for a in actions if "commitInfo" in a), {})
        adds = [a["add"]["path"] for a in actions if "add" in a]
        try:
            seq = json.loads(info.get("userMetadata") or "")["seq"]
        except (ValueError, TypeError, KeyError):
            return None
        if len(adds) != 1 or any("remove" in a for a in actions):
            return None
        rows = self._ingests_file(adds[0]).to_pylist()
        return rows[0] if len(rows) == 1 and rows[0]["seq"] == seq else None

    @cached_property
    def _state(self) -> LakeState:
        newest = self._newest_commit_row()
        if newest is None:
            newest = max(self.ingests().to_pylist(), key=lambda r: r["seq"])
        newest["versions"] = dict(newest["versions"])
        newest["segment_marks"] = dict(newest["segment_marks"] or ())  # null in an older lake's rows
        return LakeState(**newest)

    def state(self) -> LakeState:
        """The committed state (the newest ``_ingests`` row); :class:`LakeError` if there is no lake."""
        return self._state

    def has(self, name: str) -> bool:
        return name in self.state().versions

    def files(self, name: str) -> list[DataFile]:
        """The data files of table ``name`` at its committed version (none if no ingest wrote it)."""
        return self._resolved(name)[0]

    def schema(self, name: str) -> pa.Schema | None:
        """The Arrow schema of table ``name`` at its committed version (None if no ingest wrote it)."""
        self._resolved(name)
        return self._schemas.get(name)

    def masked(self, name: str) -> bool:
        """Whether rows of table ``name`` are deleted by deletion vectors (its files' row counts overcount)."""
        return bool(self._resolved(name)[1])

    def _resolved(self, name: str) -> tuple[list[DataFile], dict[str, list[bool]]]:
        if name not in self._files:
            version = self.state().versions.get(name)
            table = self._table(name, version) if version is not None else None
            if table is None:
                self._files[name] = ([], {})
            else:
                actions = _add_actions(table)
                root = self.path(name)
                files = []
                ours: dict[str, str] = {}  # a file's path in the table (decoded) -> its location as we read it
                for a in actions:
                    columns = {k[4:] for k in a if k.startswith("min.")}
                    stats = {c: (a.get(f"min.{c}"), a.get(f"max.{c}"), a.get(f"null_count.{c}")) for c in columns}
                    for c in (k[11:] for k in a if k.startswith("null_count.")):
                        stats.setdefault(c, (None, None, a[f"null_count.{c}"]))
                    files.append(DataFile(_join(root, a["path"]), a["num_records"], stats))
                    ours[unquote(a["path"])] = files[-1].uri
                masks: dict[str, list[bool]] = {}
                if table.protocol().reader_features and "deletionVectors" in table.protocol().reader_features:
                    # delta-rs names a file by the table's canonical location (symlinks resolved), which need
                    # not be how the lake was named: match by the path inside the table
                    base = table.table_uri.rstrip("/") + "/"
                    for row in pa.table(table.deletion_vectors()).to_pylist():
                        path = row["filepath"]
                        inside = unquote(path[len(base) :]) if path.startswith(base) else path
                        masks[_plain(ours.get(inside, path))] = row["selection_vector"]
                self._files[name] = (files, masks)
                self._schemas[name] = pa.schema(table.schema().to_arrow())
        return self._files[name]

    def read(
        self,
        name: str,
        *,
        columns: Sequence[str] | None = None,
        where: pc.Expression | None = None,
        prune: Callable[[DataFile], bool] | None = None,
        narrow: Sequence[str] | None = None,
    ) -> pa.Table:
        """Rows of table ``name`` at its committed version: files kept by ``prune`` (statistics), rows
        not deleted (deletion vectors) and matching ``where``; ``columns`` only. ``narrow``: the columns
        ``where`` reads, when it selects few rows that statistics cannot find (a key spread over every
        row group): they are read first, the other columns only from the row groups holding a match."""
        files, masks = self._resolved(name)
        chosen = [f for f in files if prune is None or prune(f)]
        schema = _schema(name)
        if not chosen:
            if schema is None and files:
                schema = self._read_files(name, [files[0].uri], None, None, None).schema
            if schema is None:
                return _unwritten(name, columns)
            empty = schema.empty_table()
            return empty.select(list(columns)) if columns else empty
        plain = [f.uri for f in chosen if _plain(f.uri) not in masks]
        parts = [self._read_files(name, plain, where, columns, schema, narrow)] if plain else []
        for f in chosen:
            mask = masks.get(_plain(f.uri))
            if mask is None:
                continue
            table = self._read_files(name, [f.uri], None, None, schema)
            keep = pa.array(mask + [True] * (table.num_rows - len(mask)))
            table = table.filter(keep)
            if where is not None:
                table = table.filter(where)
            parts.append(table.select(list(columns)) if columns else table)
        return pa.concat_tables(parts) if len(parts) > 1 else parts[0]


def _schema(name: str) -> pa.Schema | None:
    """The Arrow schema the lake's table ``name`` is read with, whichever engine wrote its files (delta-rs's
    MERGE, UPDATE and DELETE rewrite strings as ``string_view``); None: as the files say."""
    from metadata.lake.tables import table_schemas

    return table_schemas().get(name)


def _unwritten(name: str, columns: Sequence[str] | None) -> pa.Table:
    """No rows of table ``name``, which no ingest wrote: ``records`` and ``snapshots`` with their columns
    (:data:`~metadata.lake.tables.RECORDS_SCHEMA`, :data:`~metadata.lake.tables.SNAPSHOTS_SCHEMA`: a lake of
    snapshots only has no ``records``), another table with ``columns`` untyped."""
    schema = {"records": RECORDS_SCHEMA, "snapshots": SNAPSHOTS_SCHEMA}.get(name)
    if schema is None:
        return pa.schema([(c, pa.null()) for c in columns or []]).empty_table()
    return schema.empty_table().select(list(columns)) if columns else schema.empty_table()


def _read(
    uris: list[str],
    where: pc.Expression | None,
    columns: Sequence[str] | None = None,
    schema: pa.Schema | None = None,
    narrow: Sequence[str] | None = None,
) -> pa.Table:
    dataset = ds.dataset([_plain(u) for u in uris], format="parquet", schema=schema)
    wanted = list(columns) if columns else None
    if where is None or not narrow:
        return dataset.to_table(columns=wanted, filter=where)
    parts = []
    for fragment in dataset.get_fragments():
        candidates = fragment.subset(filter=where, schema=dataset.schema)  # the row groups statistics keep
        if not candidates.num_row_groups:
            continue
        keys = candidates.to_table(schema=dataset.schema, columns=list(narrow))
        hits = keys.append_column("__row", pa.array(np.arange(keys.num_rows))).filter(where).column("__row")
        if len(hits):
            groups = candidates.row_groups
            at = np.unique(np.searchsorted(np.cumsum([g.num_rows for g in groups]), hits.to_numpy(), side="right"))
            chosen = fragment.subset(row_group_ids=[groups[i].id for i in at.tolist()])
            parts.append(chosen.to_table(schema=dataset.schema, columns=wanted, filter=where))
    if not parts:
        empty = dataset.schema.empty_table()
        return empty.select(wanted) if wanted else empty
    return pa.concat_tables(parts)


def _add_actions(table: Any) -> list[dict[str, Any]]:
    """The add actions of a delta-rs table version: a data file's path (relative, URI-encoded: see :func:`_join`;
    not ``file_uris``, which percent-encodes the table's own location too) and its statistics."""
    return pa.table(table.get_add_actions(flatten=True)).to_pylist()


def _plain(uri: str) -> str:
    """A local path for a ``file:`` URI (pyarrow and delta-rs spell them differently)."""
    return urlparse(uri).path if uri.startswith("file:") else uri


def _join(root: str, path: str) -> str:
    """A data file's location: add actions hold URI-encoded paths relative to the table (or absolute)."""
    path = unquote(path)
    return path if "://" in path or path.startswith("/") else f"{root}/{path}"
