"""The SparkSession kraft-replay runs on, with the Delta Lake connector.

Delta's jars come from Maven Central through Spark's own resolver
(``configure_spark_with_delta_pip``); the first run downloads them into Ivy's cache.
``--master``/``KRAFT_REPLAY_MASTER`` select any master. Spark Connect (``SPARK_REMOTE``) is refused
with a clear error: ingest, lake recovery, progress and the Spark engine use the JVM gateway
(Hadoop FileSystem, status tracker), which a Connect session does not offer.
"""

from __future__ import annotations

import importlib.metadata
import os
import threading
from pathlib import Path

from pyspark.sql import SparkSession

_LOCK = threading.Lock()

DEFAULT_CONF = {
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.sql.adaptive.enabled": "true",
    "spark.databricks.delta.snapshotPartitions": "2",
    "spark.databricks.delta.retentionDurationCheck.enabled": "false",
    "spark.sql.sources.parallelPartitionDiscovery.parallelism": "2",
}


def get_spark(master: str | None = None, *, shuffle_partitions: int | None = None,
              driver_memory: str | None = None) -> SparkSession:
    """The active session, or a new one configured for Delta (idempotent, thread-safe)."""
    with _LOCK:
        active = SparkSession.getActiveSession()
        if active is not None:
            return active
        if os.environ.get("SPARK_REMOTE"):
            raise RuntimeError("Spark Connect (SPARK_REMOTE) is not supported: kraft-replay needs the JVM "
                               "gateway of a classic Spark session; unset SPARK_REMOTE and use --master or "
                               "KRAFT_REPLAY_MASTER")
        builder = SparkSession.builder.appName("kraft-replay").master(
            master or os.environ.get("KRAFT_REPLAY_MASTER", "local[*]"))
        builder = builder.config("spark.driver.memory",
                                 driver_memory or os.environ.get("KRAFT_REPLAY_DRIVER_MEMORY", "4g"))
        log4j = Path(__file__).with_name("conf") / "log4j2.properties"
        builder = builder.config("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile=file:{log4j}")
        for key, value in DEFAULT_CONF.items():
            builder = builder.config(key, value)
        builder = builder.config("spark.sql.shuffle.partitions",
                                 str(shuffle_partitions or os.environ.get("KRAFT_REPLAY_SHUFFLE_PARTITIONS", 8)))
        cached = _cached_jars()
        if cached:
            builder = builder.config("spark.jars", ",".join(cached))
        else:
            from delta import configure_spark_with_delta_pip
            builder = configure_spark_with_delta_pip(builder)
        spark = builder.getOrCreate()
        if not cached:
            _remember_jars(spark.conf.get("spark.jars", ""))
        spark.sparkContext.setLogLevel(os.environ.get("KRAFT_REPLAY_SPARK_LOG_LEVEL", "ERROR"))
        return spark


def _jar_cache() -> Path:
    version = importlib.metadata.version("delta-spark")
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "kraft-replay" / f"delta-{version}-jars.txt"


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
