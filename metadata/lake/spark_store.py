"""The lake on Spark: the Delta operations of the commit protocol for a lake only Spark reaches (a remote URI,
or any lake under Spark Connect), and the table writes of an ingest on Spark.

A lake on a local path is read and committed in process (:mod:`metadata.lake.local_store`) whichever engine computes
what an ingest writes; :class:`SparkStore` is the same set of operations through Delta on Spark, used where
delta-rs cannot reach the lake. The protocol itself (:mod:`metadata.lake.protocol`) is written once, over either.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING
from urllib.parse import unquote

import pyarrow as pa
from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.pandas.types import from_arrow_schema

from metadata.lake.spark import glob_escaped, is_connect
from metadata.lake.state import INGESTS, LakeError, LakeState
from metadata.lake.tables import table_schemas

if TYPE_CHECKING:
    from metadata.lake.store import CommitInfo

_USER_METADATA = "spark.databricks.delta.commitInfo.userMetadata"


def spark_schema(schema: pa.Schema) -> T.StructType:
    """A lake schema (pyarrow, :mod:`metadata.lake.tables`) as Spark's."""
    return from_arrow_schema(schema)


def quoted(path: str) -> str:
    """``path`` as a SQL identifier (``delta.<quoted>`` names a path-based table)."""
    return "`" + path.replace("`", "``") + "`"


def sql_table(path: str) -> str:
    """The SQL name of the Delta table at ``path`` (``delta.`<path>```)."""
    return f"delta.{quoted(path)}"


def _commit_version(name: str) -> int | None:
    """The version of a Delta commit file name (``00000000000000000007.json``), else None."""
    return int(name[:20]) if len(name) == 25 and name.endswith(".json") and name[:20].isdigit() else None


def _hadoop(spark: SparkSession, path: str):
    """(Hadoop Path, its FileSystem) of a classic session."""
    hpath = spark.sparkContext._jvm.org.apache.hadoop.fs.Path(path)
    return hpath, hpath.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())


class SparkStore:
    """The Delta operations of the commit protocol, through Delta on Spark (``spark`` made when first needed)."""

    def __init__(self, uri: str, spark: SparkSession) -> None:
        self.uri, self.spark = uri, spark

    def path(self, name: str) -> str:
        return f"{self.uri}/{name}"

    def versions(self, names: Sequence[str]) -> dict[str, int | None]:
        """Latest version of each table ``<uri>/<name>``; None where there is none. A classic session lists each
        ``_delta_log`` through Hadoop's FileSystem (no Spark job); Spark Connect offers no file system: there one
        file listing of all of them, the file index of a glob over the ``_delta_log`` directories."""
        if not is_connect(self.spark) or not names:
            return {name: self._listed_version(self.path(name)) for name in names}
        pattern = f"{glob_escaped(self.uri)}/{{{','.join(glob_escaped(n) for n in names)}}}/_delta_log"
        try:
            files = self.spark.read.format("text").load(pattern).inputFiles()
        except AnalysisException as exc:
            if exc.getCondition() != "PATH_NOT_FOUND":  # only "no table at all" means no versions
                raise
            files = []
        found: dict[str, int | None] = dict.fromkeys(names)
        for file in files:
            directory, log, commit = unquote(file).rsplit("/", 3)[-3:]
            version = _commit_version(commit)
            if log == "_delta_log" and version is not None and directory in found:
                found[directory] = max(found[directory] or 0, version)
        return found

    def _listed_version(self, path: str) -> int | None:
        log, fs = _hadoop(self.spark, f"{path}/_delta_log")
        if not fs.exists(log):
            return None
        versions = [v for st in fs.listStatus(log) if (v := _commit_version(st.getPath().getName())) is not None]
        return max(versions) if versions else None

    def commits(self, name: str, first: int, last: int) -> list[CommitInfo]:
        """The commits ``first`` … ``last`` of table ``name``, oldest first: a classic session reads the commit
        files through Hadoop's FileSystem; Spark Connect asks ``DESCRIBE HISTORY`` (newest first, so with a
        limit reaching back to ``first``)."""
        from metadata.lake.store import CommitInfo, commit_info

        if first > last:
            return []
        path = self.path(name)
        if not is_connect(self.spark):
            return [commit_info(version, self._read_commit(path, version)) for version in range(first, last + 1)]
        limit = last - first + 1
        while True:
            rows = (
                self.spark.sql(f"DESCRIBE HISTORY {sql_table(path)} LIMIT {limit}")
                .select("version", "operation", "userMetadata")
                .collect()
            )
            if not rows or min(r[0] for r in rows) <= first or len(rows) < limit:
                break
            limit *= 4
        return sorted(
            (CommitInfo(version=r[0], operation=r[1], user_metadata=r[2]) for r in rows if first <= r[0] <= last),
            key=lambda c: c.version,
        )

    def _read_commit(self, path: str, version: int) -> str:
        file, fs = _hadoop(self.spark, f"{path}/_delta_log/{version:020d}.json")
        stream = fs.open(file)
        try:
            return self.spark.sparkContext._jvm.org.apache.commons.io.IOUtils.toString(stream, "UTF-8")
        finally:
            stream.close()

    def append(self, name: str, rows: pa.Table, *, app: str, version: int, metadata: str) -> None:
        """Append ``rows`` with Delta's idempotent-write id (``txnAppId``, ``txnVersion``) and ``metadata`` as the
        commit's user metadata: Delta skips it when the table records ``app`` at ``version`` or later, and fails it
        (a concurrency exception) when a concurrent commit records ``app``. The table gains the columns of ``rows``
        it lacks (an older lake's ``_ingests``)."""
        frame = self.spark.createDataFrame(rows.to_pylist(maps_as_pydicts="strict"), spark_schema(rows.schema))
        frame.write.format("delta").mode("append").option("txnAppId", app).option("txnVersion", version).option(
            "userMetadata", metadata
        ).option("mergeSchema", "true").save(self.path(name))

    def restore(self, name: str, version: int, tag: str) -> None:
        """``RESTORE`` table ``name`` to ``version`` (a new version with its content), the commit tagged ``tag``."""
        with tagged(self.spark, tag):
            self.spark.sql(f"RESTORE TABLE {sql_table(self.path(name))} TO VERSION AS OF {version}").collect()

    def delete(self, name: str) -> None:
        """Delete table ``name`` with its files. Spark Connect offers no file system: there the table stays, and
        the write that creates it again replaces it (``createOrReplace``); its old files remain until a
        ``VACUUM``."""
        if not is_connect(self.spark):
            directory, fs = _hadoop(self.spark, self.path(name))
            fs.delete(directory, True)

    def newest(self) -> LakeState:
        """The newest row of ``_ingests`` (which exists)."""
        try:
            row = (
                self.spark.read.format("delta")
                .load(self.path(INGESTS))
                .orderBy("seq", ascending=False)
                .limit(1)
                .collect()
            )
        except Exception as exc:
            from metadata.lake.damage import explain

            line = explain(exc, self.uri, INGESTS, None, functools.partial(vacuumed, self.spark))
            if line is not None:
                from metadata.lake.state import LakeDamaged

                raise LakeDamaged(line) from exc
            raise
        if not row:
            raise LakeError(f"no kraft-replay lake at {self.uri}: _ingests holds no committed ingest")
        fields = row[0].asDict(recursive=True)
        fields["segment_marks"] = fields.get("segment_marks") or {}  # an older lake's rows lack them
        return LakeState(**fields)

    def data_files(self, name: str) -> int:
        detail = self.spark.sql(f"DESCRIBE DETAIL {sql_table(self.path(name))}").first()
        return 0 if detail is None else detail["numFiles"]

    def seqs(self) -> pa.Table:
        """``_ingests``'s ``seq`` column, every row."""
        return self.spark.read.format("delta").load(self.path(INGESTS)).select("seq").toArrow()


def write_frame(path: str, name: str, rows: DataFrame, *, create: bool) -> None:
    """Write ``rows`` (cast to the table's schema, for the lake's own tables) to the table ``name`` at ``path`` in
    one Delta commit: appended (a table of an older schema gains the lake's newer columns), or (``create``) as a
    new table with its properties, replacing whatever an interrupted write left there (under Spark Connect, which
    cannot delete it)."""
    from metadata.lake.store import table_properties

    schema = table_schemas().get(name)
    frame = rows.select(*[F.col(f.name).cast(f.dataType) for f in spark_schema(schema).fields]) if schema else rows
    if create:
        writer = frame.writeTo(sql_table(path)).using("delta")
        for key, value in table_properties(name).items():
            writer = writer.tableProperty(key, value)
        writer.createOrReplace()
    else:
        frame.write.format("delta").mode("append").option("mergeSchema", "true").save(path)


@contextlib.contextmanager
def tagged(spark: SparkSession, tag: str) -> Iterator[None]:
    """Delta commits made meanwhile carry ``tag`` as their user metadata (how a transaction knows its own)."""
    previous = spark.conf.get(_USER_METADATA, None)
    spark.conf.set(_USER_METADATA, tag)
    try:
        yield
    finally:
        if previous is None:
            spark.conf.unset(_USER_METADATA)
        else:
            spark.conf.set(_USER_METADATA, previous)


def vacuumed(spark: SparkSession | None, table_path: str) -> int | None:
    """The version of the newest ``VACUUM`` of the table at ``table_path`` on ``spark`` (default: the active
    session), if any (None if unknown)."""
    session = spark or SparkSession.getActiveSession()
    if session is None:
        return None
    with contextlib.suppress(Exception):
        rows = (
            session.sql(f"DESCRIBE HISTORY {sql_table(table_path)}")
            .where("operation = 'VACUUM END'")
            .agg(F.max("version"))
            .collect()
        )
        return rows[0][0]
    return None
