"""The Delta lake: table locations, the commit log readers trust, and recovery.

Atomicity scheme. Every table is a standard Delta table under ``<lake>/<name>``, created by its
first write. An ingest writes each table with one Delta commit, then appends one row to
``<lake>/_ingests`` naming the Delta version of every table it produced and the log high-water
mark. Readers read every table *at the version the newest ``_ingests`` row names* (Delta time travel), so the commits of an
ingest become visible together, and a run that dies half-way is invisible. The next ingest
first restores any table whose latest version is beyond the recorded one (``RESTORE``) and
deletes tables no commit names (under Spark Connect, which has no file system, their next first
write replaces them), then writes again: repeating or resuming never duplicates rows.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from functools import cached_property
from urllib.parse import unquote

from pyspark.errors import AnalysisException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from pyspark.sql.pandas.types import from_arrow_schema

from metadata import version_tables
from metadata.lake_state import INGESTS, LakeError, LakeState, lake_uri
from metadata.spark import get_spark, glob_escaped, is_connect
from metadata.tables import RECORDS_SCHEMA, SNAPSHOTS_SCHEMA, TYPED_TABLES


INGESTS_SCHEMA = T.StructType([
    T.StructField("seq", T.LongType(), False), T.StructField("run_id", T.StringType()),
    T.StructField("committed_at", T.TimestampType()), T.StructField("inputs", T.ArrayType(T.StringType())),
    T.StructField("records_added", T.LongType()), T.StructField("snapshots_added", T.LongType()),
    T.StructField("high_water_mark", T.LongType()),
    T.StructField("versions", T.MapType(T.StringType(), T.LongType())),
])


def stats_columns(name: str) -> str:
    """The columns Delta keeps file statistics of in table ``name`` (``delta.dataSkippingStatsColumns``):
    the keys readers filter on. Statistics of every column cost about a third of an append."""
    if name in version_tables.TABLES:
        return version_tables.stats_columns(name)
    return {"records": "offset,timestamp", "snapshots": "snapshot_end_offset,snapshot_epoch"}.get(name, "offset")


def table_schemas() -> dict[str, T.StructType]:
    """Every data table of a lake and its schema."""
    return {"records": RECORDS_SCHEMA, "snapshots": SNAPSHOTS_SCHEMA,
            **{name: t.schema() for name, t in TYPED_TABLES.items()},
            **{name: from_arrow_schema(schema) for name, schema in version_tables.table_schemas().items()}}


def _quoted(path: str) -> str:
    """``path`` as a SQL identifier (``delta.<quoted>`` names a path-based table)."""
    return "`" + path.replace("`", "``") + "`"


def sql_table(path: str) -> str:
    """The SQL name of the Delta table at ``path`` (``delta.`<path>```)."""
    return f"delta.{_quoted(path)}"


def delta_version(spark: SparkSession, path: str) -> int | None:
    """Latest version of the Delta table at ``path``; None if there is none."""
    root, name = path.rstrip("/").rsplit("/", 1)
    return delta_versions(spark, root, [name])[name]


def delta_versions(spark: SparkSession, root: str, names: Sequence[str]) -> dict[str, int | None]:
    """Latest version of the Delta table ``<root>/<name>`` for each of ``names``; None where there is none.

    A classic session lists each ``_delta_log`` through Hadoop's FileSystem (milliseconds, no Spark job).
    Spark Connect offers no file system: there one file listing of all of them, the file index of a
    glob over the ``_delta_log`` directories (``inputFiles``, no Spark job either).
    """
    if not is_connect(spark) or not names:
        return {name: _listed_version(spark, f"{root}/{name}") for name in names}
    pattern = f"{glob_escaped(root)}/{{{','.join(glob_escaped(n) for n in names)}}}/_delta_log"
    try:
        files = spark.read.format("text").load(pattern).inputFiles()
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


def _commit_version(name: str) -> int | None:
    """The version of a Delta commit file name (``00000000000000000007.json``), else None."""
    return int(name[:20]) if len(name) == 25 and name.endswith(".json") and name[:20].isdigit() else None


def _listed_version(spark: SparkSession, path: str) -> int | None:
    log, fs = _hadoop(spark, f"{path}/_delta_log")
    if not fs.exists(log):
        return None
    versions = [v for st in fs.listStatus(log) if (v := _commit_version(st.getPath().getName())) is not None]
    return max(versions) if versions else None


def delete_table(spark: SparkSession, path: str) -> None:
    """Delete the table directory at ``path`` with its files. Spark Connect offers no file system: there
    the table stays, and the write that creates it again replaces it (``createOrReplace``); its old
    files remain until a ``VACUUM``."""
    if not is_connect(spark):
        directory, fs = _hadoop(spark, path)
        fs.delete(directory, True)


def _hadoop(spark: SparkSession, path: str):
    """(Hadoop Path, its FileSystem) of a classic session."""
    hpath = spark.sparkContext._jvm.org.apache.hadoop.fs.Path(path)
    return hpath, hpath.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())


class Lake:
    """A kraft-replay lake at ``location`` (a directory or any URI Spark can write)."""

    def __init__(self, location: str, spark: SparkSession | None = None) -> None:
        self.uri = lake_uri(location)
        self._spark = spark

    @cached_property
    def spark(self) -> SparkSession:
        return self._spark or get_spark()

    def path(self, name: str) -> str:
        return f"{self.uri}/{name}"

    def exists(self) -> bool:
        return self.current_version(INGESTS) is not None

    def state(self) -> LakeState:
        """The committed state; :class:`LakeError` if there is no lake here."""
        if not self.exists():
            raise LakeError(f"no kraft-replay lake at {self.uri} (run `kraft-replay ingest ... --lake {self.uri}`)")
        return self._newest()

    def _newest(self) -> LakeState:
        """The newest row of ``_ingests`` (which exists)."""
        row = (self.spark.read.format("delta").load(self.path(INGESTS)).orderBy("seq", ascending=False)
               .limit(1).collect())
        if not row:
            raise LakeError(f"lake at {self.uri} has no committed ingest")
        return LakeState(**row[0].asDict(recursive=True))

    def table(self, name: str, state: LakeState | None = None) -> DataFrame:
        """Table ``name`` as of the committed state (time travel to the recorded version); a table no
        ingest has written yet reads as empty."""
        state = state or self.state()
        schemas = table_schemas()
        if name not in schemas:
            raise LakeError(f"a kraft-replay lake has no table {name!r}")
        if name not in state.versions:
            return self.spark.createDataFrame([], schemas[name])
        return (self.spark.read.format("delta").option("versionAsOf", state.versions[name])
                .load(self.path(name)))

    def current_version(self, name: str) -> int | None:
        """Latest Delta version of table ``name``; None if there is none."""
        return self.current_versions([name])[name]

    def current_versions(self, names: Sequence[str]) -> dict[str, int | None]:
        """Latest Delta version of each of the tables ``names`` (:func:`delta_versions`)."""
        return delta_versions(self.spark, self.uri, names)

    def prepare(self) -> LakeState:
        """The committed state to build on, after undoing what an interrupted ingest left behind:
        tables it appended to are restored to their committed version (``RESTORE``), tables it created
        are deleted (:func:`delete_table`). Tables are created by their first write
        (``createOrReplace``), so a new lake starts with none."""
        versions = self.current_versions([INGESTS, *table_schemas()])  # one lookup for the lake and its tables
        if versions.pop(INGESTS) is None:
            state = LakeState(seq=0, run_id="init", committed_at=dt.datetime.now(dt.timezone.utc), inputs=[],
                              records_added=0, snapshots_added=0, high_water_mark=-1, versions={})
        else:
            state = self._newest()
        restored = []
        for name, current in versions.items():
            if current is None:
                state.versions.pop(name, None)
            elif name not in state.versions:
                delete_table(self.spark, self.path(name))
            elif current > state.versions[name]:
                self.spark.sql(f"RESTORE TABLE delta.{_quoted(self.path(name))} TO VERSION AS OF "
                               f"{state.versions[name]}").collect()
                restored.append(name)
        state.versions.update(self.current_versions(restored))  # a RESTORE is a new version
        return state

    def write(self, name: str, rows: DataFrame, *, create: bool) -> None:
        """Write ``rows`` (cast to the table's schema) to table ``name`` in one Delta commit: appended, or
        when no commit names the table yet (``create``) as a new table, with its statistics columns,
        replacing whatever an interrupted ingest left there."""
        frame = rows.select(*[F.col(f.name).cast(f.dataType) for f in table_schemas()[name].fields])
        if create:
            writer = frame.writeTo(f"delta.{_quoted(self.path(name))}").using("delta") \
                .tableProperty("delta.dataSkippingStatsColumns", stats_columns(name))
            if name in version_tables.TABLES:  # versions are ended in place (MERGE): deletion vectors
                writer = writer.tableProperty("delta.enableDeletionVectors", "true")
            writer.createOrReplace()
        else:
            frame.write.format("delta").mode("append").save(self.path(name))

    def commit(self, state: LakeState) -> None:
        """Publish ``state``: the one write that makes an ingest visible."""
        row = state.model_dump()
        self.spark.createDataFrame([row], INGESTS_SCHEMA).write.format("delta").mode("append").save(self.path(INGESTS))
