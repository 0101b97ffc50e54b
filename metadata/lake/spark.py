"""The SparkSession kraft-replay runs on, with the Delta Lake connector.

Delta's jars come from Maven Central through Spark's own resolver (spark-submit's packages, the
coordinates ``configure_spark_with_delta_pip`` names); the first run downloads them into Ivy's cache, in a child
process whose output (Ivy's resolution report, proxy warnings) goes to a log file, while one line on stderr says
what is happening (:func:`_resolve_jars`); the jar paths are remembered, and later starts skip resolution.
``--master``/``KRAFT_REPLAY_MASTER`` select any master. ``SPARK_REMOTE`` (or an ``sc://`` master, or
``SPARK_API_MODE=connect``) selects Spark Connect instead: ``sc://host:port`` is a running Connect
server, which must have Delta's jars and SQL extension configured itself; ``local[N]`` starts a
local Connect server configured here. Everything kraft-replay does through the JVM gateway of a
classic session has a Connect counterpart (:func:`is_connect`).
"""

from __future__ import annotations

import atexit
import importlib.metadata
import os
import re
import sys
import threading
import warnings
from pathlib import Path

from pyspark.sql import SparkSession

from metadata.lake.tables import ROW_GROUP_BYTES
from metadata.log.cache import cache_root, exclusive
from metadata.log.errors import KraftReplayError

_LOCK = threading.Lock()
_CONNECT: SparkSession | None = None  # the Connect session, once made

DEFAULT_CONF = {
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.sql.adaptive.enabled": "true",
    "spark.databricks.delta.snapshotPartitions": "2",
    "spark.databricks.delta.retentionDurationCheck.enabled": "false",
    # Tables kraft-replay creates are checkpointed every 100 commits, not Delta's 10: a checkpoint costs
    # 2-5 s of Spark jobs whatever the table's size, and every ingest commits to each table it writes
    # (and twice to the lease and ingests tables); readers replay at most 99 small JSON commits.
    "spark.databricks.delta.properties.defaults.checkpointInterval": "100",
    "spark.sql.sources.parallelPartitionDiscovery.parallelism": "2",
    # Parquet row groups of ~1 MiB (parquet-mr's default is 128 MiB: a 10^6-record file is one row group) so
    # that a point read (pyarrow with a filter on offsets) decodes a few row groups, not the file: on gen-1e6,
    # `changes` at the middle peaked at 351 MB instead of 718 MB (BENCHMARKS.md).
    "spark.hadoop.parquet.block.size": str(ROW_GROUP_BYTES),
    # PySpark records each Column call's Python call site for error messages: ~6 extra JVM round trips
    # per call, which more than doubled the driver's py4j traffic when building a replay plan.
    "spark.python.sql.dataFrameDebugging.enabled": "false",
}


def get_spark(
    master: str | None = None, *, shuffle_partitions: int | None = None, driver_memory: str | None = None
) -> SparkSession:
    """The active session, or a new one configured for Delta (idempotent, thread-safe)."""
    global _CONNECT
    with _LOCK:
        if _CONNECT is not None and not _CONNECT.is_stopped:
            return _CONNECT
        active = SparkSession.getActiveSession()
        if active is not None:
            return active
        master = master or os.environ.get("KRAFT_REPLAY_MASTER", "local[*]")
        remote = os.environ.get("SPARK_REMOTE") or (
            master if master.startswith("sc://") or os.environ.get("SPARK_API_MODE", "").lower() == "connect" else None
        )
        if remote:
            _allow_deep_protobuf()
        builder = (SparkSession.builder.remote(remote) if remote else SparkSession.builder.master(master)).appName(
            "kraft-replay"
        )
        server = remote is not None and remote.startswith("sc://")  # a running server configures itself
        if not server and (remote or master).startswith("local"):
            _workers_run_this_python()
        cached = _cached_jars()
        if not server:
            builder = builder.config(
                "spark.driver.memory", driver_memory or os.environ.get("KRAFT_REPLAY_DRIVER_MEMORY", "4g")
            )
            log4j = Path(__file__).with_name("conf") / "log4j2.properties"
            # the JVM's own warnings (unified logging: stdout by default) go to stderr, so that they cannot
            # break the JSON a command prints on stdout
            java_log = "-Xlog:disable -Xlog:all=warning:stderr:uptime,level,tags"
            builder = builder.config(
                "spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile=file:{log4j} {java_log}"
            )
            for key, value in DEFAULT_CONF.items():
                builder = builder.config(key, value)
            builder = builder.config(
                "spark.sql.shuffle.partitions",
                str(shuffle_partitions or os.environ.get("KRAFT_REPLAY_SHUFFLE_PARTITIONS", 8)),
            )
            cached = cached or _resolve_jars()
            builder = builder.config("spark.jars", ",".join(cached))
        if remote is None:
            spark = builder.getOrCreate()
            spark.sparkContext.setLogLevel(os.environ.get("KRAFT_REPLAY_SPARK_LOG_LEVEL", "ERROR"))
        else:
            with warnings.catch_warnings():  # the client re-sets a local server's static options, which Spark refuses
                warnings.simplefilter("ignore", UserWarning)
                spark = _CONNECT = builder.getOrCreate()
            atexit.register(spark.stop)  # the session (and a local server) ends with its client, not mid-response
        return spark


def _workers_run_this_python() -> None:
    """Spark starts its Python workers with ``$PYSPARK_PYTHON``, else ``python3`` from PATH — often
    not the interpreter kraft-replay runs in (a virtual environment run by its path, as pipx and
    service units do), and then without kraft-replay or numpy. Workers on this machine (a local
    master, or the local Connect server, whose JVM reads the variable when it starts) run this
    interpreter unless the user set ``PYSPARK_PYTHON``. (``spark.pyspark.python`` reaches PySpark
    only that way: spark-submit exports it as ``PYSPARK_PYTHON``; a classic session started from
    Python and the Connect server's planner read the environment variable alone.)"""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)


def _allow_deep_protobuf() -> None:
    """Spark Connect sends plans as protobuf, and the Spark engine's nest deeper (≈ 120 messages) than
    the 100 levels protobuf's compiled (upb) runtime copies and parses by default; its "oversize" switch
    lifts that limit to 65,535 for the process. The pure-Python runtime has no limit (and is ≈ 2.5×
    slower to build a replay's plan)."""
    from google.protobuf.internal import api_implementation

    if api_implementation.Type() == "upb":
        from google._upb import _message

        _message.SetAllowOversizeProtos(True)


def glob_escaped(path: str) -> str:
    """``path`` with Hadoop's glob characters escaped: Spark's file sources read a path as a glob."""
    return re.sub(r"([{}\[\]*?\\])", r"\\\1", path)


def is_connect(spark: SparkSession) -> bool:
    """Whether ``spark`` is a Spark Connect session (no JVM gateway, no SparkContext)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def default_parallelism(spark: SparkSession) -> int:
    """How many tasks the cluster runs at once (Connect: ``spark.default.parallelism``, else a local master's N)."""
    if not is_connect(spark):
        return spark.sparkContext.defaultParallelism
    configured = spark.conf.get("spark.default.parallelism", None)
    if configured:
        return int(configured)
    local = re.fullmatch(r"local(?:\[(\d+|\*)\])?", spark.conf.get("spark.master", None) or "")
    if local and local.group(1) is None:
        return 1
    return int(local.group(1)) if local and local.group(1) != "*" else os.cpu_count() or 2


def session_id(spark: SparkSession) -> str:
    """An id of the session's application: cached results of one are not valid in another."""
    return spark.session_id if is_connect(spark) else spark.sparkContext.applicationId


def _jar_cache() -> Path:
    version = importlib.metadata.version("delta-spark")
    return cache_root() / f"delta-{version}-jars.txt"


def _cached_jars() -> list[str]:
    """The Delta jars Spark's resolver fetched on an earlier run (skips resolution and its output)."""
    cache = _jar_cache()
    if not cache.is_file():
        return []
    jars = cache.read_text().split()
    return jars if jars and all(Path(j.removeprefix("file://")).is_file() for j in jars) else []


def _remember_jars(jars: str) -> None:
    found = [j for j in jars.split(",") if j]
    if found:
        _jar_cache().parent.mkdir(parents=True, exist_ok=True)
        _jar_cache().write_text("\n".join(found))


class ResolutionError(KraftReplayError, RuntimeError):
    """Spark's resolver could not fetch the Delta Lake connector (the message names its log file)."""


RESOLVER = "from metadata.lake.spark import resolve_here; resolve_here()"
"""The Python code of the resolving child (:func:`resolve_here`)."""
RESOLUTION_LOCK = Path.home() / ".ivy2.5.2" / "kraft-replay-resolve.lock"
"""Held while a child resolves: Ivy's cache (Spark's default ``~/.ivy2.5.2``) is not safe for two resolutions at
once, and two processes starting Spark for the first time on a machine (two ingests, a Connect server beside a
classic session) would otherwise both resolve into it, and one fail."""


def _resolve_jars() -> list[str]:
    """Resolve the Delta Lake connector's jars once (the first Spark start on a machine): in a child process
    (:func:`resolve_here`) whose output — Ivy's report, proxy and repository warnings — goes to
    ``~/.cache/kraft-replay/delta-<version>-resolve.log`` instead of this terminal, with one progress line on
    stderr; a failure names the log. A process that finds another resolving waits for it and takes its jars. The
    jar paths, remembered by the child."""
    import subprocess

    version = importlib.metadata.version("delta-spark")
    log = _jar_cache().with_name(f"delta-{version}-resolve.log")
    log.parent.mkdir(parents=True, exist_ok=True)
    sys.stderr.write(
        f"resolving the Delta Lake connector (io.delta:delta-spark {version}) from Maven Central, "
        f"first Spark start only (log: {log}) …\n"
    )
    sys.stderr.flush()
    with exclusive(RESOLUTION_LOCK):
        jars = _cached_jars()  # resolved by the process this one waited for
        if jars:
            return jars
        with open(log, "w") as out:
            done = subprocess.run(
                [sys.executable, "-c", RESOLVER],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env={**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)},
            )
        jars = _cached_jars()
    if done.returncode != 0 or not jars:
        raise ResolutionError(
            f"could not resolve the Delta Lake connector io.delta:delta-spark {version} from Maven Central "
            f"(exit {done.returncode}; Spark's resolver wrote {log}): check the network or proxy settings"
        )
    return jars


def resolve_here() -> None:
    """The child of :func:`_resolve_jars`: Spark's JVM gateway alone (spark-submit, no SparkContext: a third of a
    session's start) with the Delta connector as a package, so that spark-submit's resolver fetches it; remember the
    jars it put on the class path, stop. The connector's coordinates are those ``delta``'s
    ``configure_spark_with_delta_pip`` names (Spark 4 is built for Scala 2.13 only)."""
    from pyspark import SparkConf
    from pyspark.java_gateway import launch_gateway

    conf = SparkConf().set(
        "spark.jars.packages", f"io.delta:delta-spark_2.13:{importlib.metadata.version('delta-spark')}"
    )
    gateway = launch_gateway(conf)
    try:
        _remember_jars(gateway.jvm.System.getProperty("spark.jars") or "")
    finally:
        gateway.shutdown()
