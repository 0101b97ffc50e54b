"""The lake on a local path, written in process with delta-rs: the Delta operations of the commit protocol, and
the table writes of an ingest in process.

Every commit of the protocol to a lake on a local path (or a ``file:`` URI) goes through here, whichever engine
computed what a transaction writes: the lease and ``_ingests`` compare-and-set appends, the recovery of tables an
interrupted writer left behind, reading the commits a proof checks. delta-rs commits with put-if-absent (a
version file is created only if it does not exist); what Delta-Spark adds on top, this module adds itself:

* **Idempotent-write ids.** delta-rs records a write's ``txn`` action (``CommitProperties(app_transactions=…)``)
  but does not skip a write whose id the table already records at that version or later (Delta-Spark does), and
  fails a commit only when a *concurrent* commit records the same id. :meth:`LocalStore.append` reads the recorded
  version from the snapshot it commits on: a recorded version ≥ the new one skips the write, and a commit that
  lands meanwhile with the same id makes delta-rs fail it. Together: a compare-and-set on the id's version.
* **RESTORE with deletion vectors.** delta-rs's restore compares files by path only; a file whose deletion vector
  Delta-Spark changed after the version restored to keeps its newer one. :meth:`LocalStore.restore` checks the
  files both versions hold for a changed deletion vector and then rewrites the table with the rows of the version
  restored to (the same content, new files) instead.
* **The protocol of a table with deletion vectors.** delta-rs raising a table to reader 3 / writer 7 also lists
  the ``variantType`` feature, which older Delta readers refuse; such a table is created here with the protocol
  Delta-Spark gives it (reader features ``deletionVectors``; writer features ``appendOnly``, ``invariants``,
  ``deletionVectors``), in a first commit written with put-if-absent, and its rows appended by delta-rs.

* **Row groups of about 1 MiB.** delta-rs closes a Parquet row group at 1,048,576 rows; Spark's sessions close one
  at about 1 MiB (``parquet.block.size``), so that a point read decodes the row groups around its offset, not a
  whole file. Every write here sizes its row groups the same way (:func:`writer_properties`).

delta-rs rewrites files where Delta-Spark marks rows with deletion vectors (MERGE, UPDATE, DELETE): both read what
the other wrote (docs/lake-protocol.md).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import time
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from metadata.lake.state import LakeState
from metadata.lake.tables import ROW_GROUP_BYTES, table_schemas

if TYPE_CHECKING:
    from deltalake import CommitProperties, DeltaTable, WriterProperties

    from metadata.lake.store import CommitInfo

DELETION_VECTORS_PROTOCOL = {
    "minReaderVersion": 3,
    "minWriterVersion": 7,
    "readerFeatures": ["deletionVectors"],
    "writerFeatures": ["deletionVectors", "appendOnly", "invariants"],
}
"""The protocol Delta-Spark gives a table created with ``delta.enableDeletionVectors``."""


def local_path(uri: str) -> str:
    """The local path of a lake or table location (a path, or a ``file:`` URI)."""
    from urllib.parse import unquote, urlparse

    return unquote(urlparse(uri).path) if uri.startswith("file:") else uri


def tagged(tag: str | None) -> CommitProperties | None:
    """Commit properties giving a commit ``tag`` as its user metadata (how a transaction knows its own)."""
    from deltalake import CommitProperties

    return None if tag is None else CommitProperties(custom_metadata={"userMetadata": tag})


def writer_properties(rows: pa.Table) -> WriterProperties:
    """Parquet writer properties for writing ``rows`` (or rows like them) in row groups of about
    :data:`~metadata.lake.tables.ROW_GROUP_BYTES`."""
    from deltalake import WriterProperties

    per_row = rows.nbytes / rows.num_rows if rows.num_rows else 1.0
    return WriterProperties(max_row_group_size=max(1024, min(1 << 20, int(ROW_GROUP_BYTES / max(per_row, 1.0)))))


def table_writer_properties(table: DeltaTable) -> WriterProperties:
    """:func:`writer_properties` for rewriting ``table`` (``OPTIMIZE``), sized by the first row group of its largest
    data file."""
    import pyarrow.parquet as pq

    files = pa.table(table.get_add_actions(flatten=True)).select(["path", "size_bytes"]).to_pylist()
    if not files:
        return writer_properties(pa.table({}))
    largest = max(files, key=lambda f: f["size_bytes"])["path"]
    return writer_properties(pq.ParquetFile(os.path.join(local_path(table.table_uri), largest)).read_row_group(0))


def open_table(path: str, version: int | None = None) -> DeltaTable | None:
    """The Delta table at ``path`` (at ``version``); None if there is none."""
    from deltalake import DeltaTable
    from deltalake.exceptions import TableNotFoundError

    try:
        return DeltaTable(path, version=version)
    except TableNotFoundError:
        return None


def table_schema(table: DeltaTable) -> pa.Schema:
    """A Delta table's schema in pyarrow's types."""
    return pa.schema(table.schema().to_arrow())


def conforming(data: pa.Table, schema: pa.Schema) -> pa.Table:
    """``data``'s columns in the order and types of ``schema`` (a table's own, or the lake's for a new one)."""
    return pa.Table.from_arrays([data[f.name].cast(f.type) for f in schema], schema=schema)


def _put_if_absent(log: str, version: int, text: str) -> bool:
    """Write the commit file ``<log>/<version>.json`` unless it exists (an atomic link); whether it was written."""
    os.makedirs(log, exist_ok=True)
    temporary = os.path.join(log, f".{version:020d}.json.{uuid.uuid4().hex}.tmp")
    with open(temporary, "w", encoding="utf-8") as out:
        out.write(text)
    try:
        os.link(temporary, os.path.join(log, f"{version:020d}.json"))
        return True
    except FileExistsError:
        return False
    finally:
        os.unlink(temporary)


def create_table(path: str, schema: pa.Schema, properties: dict[str, str], tag: str | None) -> bool:
    """Create an empty Delta table at ``path`` with the protocol Delta-Spark gives a deletion-vector table
    (:data:`DELETION_VECTORS_PROTOCOL`) and ``properties``; False if version 0 exists already (a concurrent
    creator won)."""
    from deltalake import Schema

    now = int(time.time() * 1000)
    info: dict[str, Any] = {
        "timestamp": now,
        "operation": "CREATE TABLE",
        "operationParameters": {"mode": "ErrorIfExists"},
        "engineInfo": "kraft-replay (delta-rs)",
    }
    if tag is not None:
        info["userMetadata"] = tag
    metadata = {
        "id": str(uuid.uuid4()),
        "format": {"provider": "parquet", "options": {}},
        "schemaString": Schema.from_arrow(schema).to_json(),
        "partitionColumns": [],
        "configuration": properties,
        "createdTime": now,
    }
    actions = [{"commitInfo": info}, {"protocol": DELETION_VECTORS_PROTOCOL}, {"metaData": metadata}]
    return _put_if_absent(os.path.join(path, "_delta_log"), 0, "\n".join(json.dumps(a) for a in actions) + "\n")


def write(path: str, name: str, data: pa.Table, *, create: bool, tag: str | None) -> None:
    """Write ``data`` to the table ``name`` at ``path`` in one commit: appended (cast to the table's schema, which
    gains the lake's columns it lacks: a typed table of an older schema, an older ``_ingests``), or
    (``create``) as a new table with the lake's schema and properties for ``name`` (a deletion-vector table in two:
    :func:`create_table`, then the append)."""
    from deltalake import write_deltalake

    from metadata.lake.store import table_properties

    properties = table_properties(name)
    schema = table_schemas().get(name, data.schema)
    table = None
    if create and properties.get("delta.enableDeletionVectors") == "true":
        create_table(path, schema, properties, tag)
        create = False
    newer: list[pa.Field] = []
    if not create:
        table = open_table(path)
        if table is not None:  # the table's own schema, and the lake's columns it lacks (an older lake's)
            existing = table_schema(table)
            newer = [f for f in schema if f.name not in existing.names]
            schema = pa.schema([*existing, *newer])
    write_deltalake(
        table if table is not None else path,
        conforming(data, schema),
        mode="append",
        schema_mode="merge" if newer else None,
        configuration=properties if table is None else None,
        commit_properties=tagged(tag),
        writer_properties=writer_properties(data),
    )


class LocalStore:
    """The Delta operations of the commit protocol on a lake on a local path (delta-rs, and the log files read
    directly)."""

    def __init__(self, uri: str) -> None:
        self.uri = uri
        self.root = local_path(uri)

    def path(self, name: str) -> str:
        return os.path.join(self.root, name)

    def versions(self, names: Sequence[str]) -> dict[str, int | None]:
        """Latest version of each table ``name`` (its newest commit file); None where there is none."""
        found: dict[str, int | None] = {}
        for name in names:
            try:
                entries = os.listdir(os.path.join(self.path(name), "_delta_log"))
            except (FileNotFoundError, NotADirectoryError):
                found[name] = None
                continue
            versions = [int(f[:20]) for f in entries if len(f) == 25 and f.endswith(".json") and f[:20].isdigit()]
            found[name] = max(versions) if versions else None
        return found

    def commits(self, name: str, first: int, last: int) -> list[CommitInfo]:
        """The commits ``first`` … ``last`` of table ``name``, oldest first, from their commit files."""
        from metadata.lake.store import commit_info

        out = []
        for version in range(first, last + 1):
            file = os.path.join(self.path(name), "_delta_log", f"{version:020d}.json")
            try:
                with open(file, encoding="utf-8") as f:
                    text = f.read()
            except FileNotFoundError:
                text = ""  # removed by log clean-up after a checkpoint: nothing known about it
            out.append(commit_info(version, text))
        return out

    def append(self, name: str, rows: pa.Table, *, app: str, version: int, metadata: str) -> None:
        """Append ``rows`` with the idempotent-write id (``app``, ``version``) and ``metadata`` as the commit's user
        metadata, as a compare-and-set on the id's version: skipped when the table records ``app`` at ``version``
        or later (as Delta-Spark skips it); a commit recording ``app`` that lands meanwhile makes delta-rs fail
        this one (``CommitFailedError``, a conflict); a lost race to create the table likewise fails. The table
        gains the columns of ``rows`` it lacks (an older lake's ``_ingests``)."""
        from deltalake import CommitProperties, Transaction, write_deltalake

        from metadata.lake.store import LakeConflict, table_properties

        path = self.path(name)
        table = open_table(path)
        newer = False
        if table is not None:
            recorded = table.transaction_version(app)
            if recorded is not None and recorded >= version:
                return
            newer = not set(rows.schema.names) <= set(table_schema(table).names)
        properties = CommitProperties(
            custom_metadata={"userMetadata": metadata}, app_transactions=[Transaction(app, version)]
        )
        try:
            write_deltalake(
                table if table is not None else path,
                rows,
                mode="append",
                schema_mode="merge" if newer else None,
                configuration=table_properties(name) if table is None else None,
                commit_properties=properties,
            )
        except Exception as exc:
            if table is None and _lost_creation(exc):
                raise LakeConflict(f"another writer created {name} first") from exc
            raise

    def restore(self, name: str, version: int, tag: str) -> None:
        """Give table ``name`` the content of ``version`` in a new commit tagged ``tag``: delta-rs's RESTORE, or,
        when a deletion vector of a file both versions hold changed since, a rewrite of the rows at ``version``."""
        from deltalake import write_deltalake

        path = self.path(name)
        now, then = open_table(path), open_table(path, version)
        assert now is not None and then is not None
        if _masks(now, set(then.file_uris())) == _masks(then, set(now.file_uris())):
            now.restore(version, commit_properties=tagged(tag))
            return
        from metadata.lake.files import LakeFiles

        rows = LakeFiles(self.uri, _state_of(name, version)).read(name)
        write_deltalake(
            now,
            conforming(rows, table_schema(now)),
            mode="overwrite",
            commit_properties=tagged(tag),
            writer_properties=writer_properties(rows),
        )

    def delete(self, name: str) -> None:
        """Delete table ``name`` with its files."""
        shutil.rmtree(self.path(name), ignore_errors=True)

    def newest(self) -> LakeState:
        """The newest row of ``_ingests`` (which exists)."""
        from metadata.lake.files import LakeFiles

        return LakeFiles(self.uri).state()

    def data_files(self, name: str) -> int:
        """How many data files the newest version of table ``name`` holds (0: no table): from its commit files when
        its log is every commit since version 0 and no checkpoint (a young table: a few small files, read in less
        time than delta-rs takes to open the table), else as delta-rs lists them."""
        log = os.path.join(self.path(name), "_delta_log")
        try:
            entries = os.listdir(log)
        except (FileNotFoundError, NotADirectoryError):
            return 0
        commits = sorted(f for f in entries if _COMMIT_FILE.fullmatch(f))
        if commits and int(commits[-1][:20]) == len(commits) - 1 and not any("checkpoint" in f for f in entries):
            live: set[tuple[str, str | None]] = set()
            for commit in commits:
                with open(os.path.join(log, commit), encoding="utf-8") as f:
                    for line in f:
                        action = json.loads(line) if line.strip() else {}
                        if "add" in action:
                            live.add(_file_key(action["add"]))
                        elif "remove" in action:
                            live.discard(_file_key(action["remove"]))
            return len(live)
        table = open_table(self.path(name))
        return 0 if table is None else len(table.file_uris())

    def seqs(self) -> pa.Table:
        """``_ingests``'s ``seq`` column, every row of its newest version."""
        from metadata.lake.files import LakeFiles

        return LakeFiles(self.uri).ingests().select(["seq"])


_COMMIT_FILE = re.compile(r"\d{20}\.json")


def _file_key(action: dict[str, Any]) -> tuple[str, str | None]:
    """What identifies a data file in a Delta log: its path and its deletion vector (Delta-Spark replaces a file's
    deletion vector by removing the file with the old one and adding it with the new one, in one commit)."""
    dv = action.get("deletionVector")
    return action["path"], None if not dv else f"{dv.get('storageType')}{dv.get('pathOrInlineDv')}@{dv.get('offset')}"


def _lost_creation(exc: BaseException) -> bool:
    """Whether ``exc`` is delta-rs failing to create a table because another writer's version 0 exists."""
    return "CommitFailedError" in type(exc).__name__ or "already exists" in str(exc)


def _masks(table: DeltaTable, files: set[str]) -> dict[str, list[bool]]:
    """The deletion vectors of ``table``'s files among ``files`` (by URI)."""
    if "deletionVectors" not in (table.protocol().reader_features or []):
        return {}
    return {
        r["filepath"]: r["selection_vector"]
        for r in pa.table(table.deletion_vectors()).to_pylist()
        if r["filepath"] in files
    }


def _state_of(name: str, version: int) -> LakeState:
    """A state naming only ``name`` at ``version`` (to read it with :class:`~metadata.lake.files.LakeFiles`)."""
    import datetime as dt

    return LakeState(
        seq=0,
        run_id="",
        committed_at=dt.datetime.now(dt.timezone.utc),
        inputs=[],
        records_added=0,
        snapshots_added=0,
        high_water_mark=-1,
        versions={name: version},
    )
