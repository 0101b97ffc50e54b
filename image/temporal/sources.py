"""Where a read command gets its answers (a :class:`~image.temporal.reads.TemporalSource`):

* ``--lake`` on a local path or ``file:`` URI: read in process with delta-rs and pyarrow, no JVM
  (:class:`~image.temporal.lake_source.ArrowSource`);
* ``--lake`` anywhere else, or whenever the user names a Spark master (``--master``, ``SPARK_REMOTE``,
  ``KRAFT_REPLAY_MASTER``): read on Spark (:class:`~image.temporal.spark.source.SparkSource`);
* ``--log``: a log directory, segment or snapshot read and replayed in process by the reference engine,
  nothing written (:class:`~image.temporal.reads.MemorySource`).

``KRAFT_REPLAY_READER`` (or the CLI's ``--reader``) forces ``arrow`` or ``spark``. Both lake readers give
byte-identical answers.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, Literal

from image.image import MetadataImage
from image.release import NEWEST, ReplayRules, UnsupportedRelease, rules_for
from image.replay import replay_to
from image.temporal.reads import MemorySource, TemporalSource
from image.temporal.starts import replay_start
from metadata.lake.state import spark_named
from metadata.log.errors import BadInput
from metadata.log.records import Snapshot

Reader = Literal["auto", "arrow", "spark"]


def choose_reader(lake: str, reader: Reader = "auto", master: str | None = None) -> Literal["arrow", "spark"]:
    """The reader of a lake: ``reader`` or ``KRAFT_REPLAY_READER`` when forced, else pyarrow for a local
    lake unless a Spark master is named."""
    from metadata.lake.state import reachable

    forced = reader if reader != "auto" else os.environ.get("KRAFT_REPLAY_READER", "auto")
    if forced not in ("auto", "arrow", "spark"):
        raise BadInput(f"unknown reader {forced!r} (auto, arrow or spark)")
    if forced != "auto":
        return forced  # type: ignore[return-value]
    return "arrow" if reachable(lake) and not spark_named(master) else "spark"


def log_source(
    path: str | os.PathLike[str], rules: ReplayRules = NEWEST, *, skip_unknown: bool = False
) -> MemorySource:
    """A log directory, segment or snapshot read in process, every key's versions recorded once under
    ``rules``; with ``skip_unknown`` records the schema does not know are kept raw (``--skip-unknown``)."""
    from metadata.log.readers import ReadOptions, read_checkpoints, scan_log

    options = ReadOptions(skip_unknown=skip_unknown)
    records, snapshots = scan_log(path, options), read_checkpoints(path, options)
    if not records and not snapshots:
        raise BadInput(f"{path}: no metadata log segments or snapshots found")
    return MemorySource.replay(records, snapshots, os.path.abspath(path), rules)


def open_source(
    *,
    lake: str | None = None,
    log: str | None = None,
    reader: Reader = "auto",
    master: str | None = None,
    spark: Callable[[], Any] | None = None,
    kafka_version: str | None = None,
    skip_unknown: bool = False,
) -> TemporalSource:
    """The source of a read: a lake (``reader`` as :func:`choose_reader`; ``spark`` makes the session) or a
    log read in process (``skip_unknown``: as :func:`log_source`). ``kafka_version``: the Kafka release whose
    replay rules a log is read with (default the newest); a lake follows the rules it was ingested with, and
    naming another is an error."""
    if (lake is None) == (log is None):
        raise BadInput("give --lake or --log")
    rules = rules_for(kafka_version)
    if log is not None:
        if not os.path.exists(log):
            raise FileNotFoundError(f"{log}: no such file or directory")
        return log_source(log, rules, skip_unknown=skip_unknown)
    assert lake is not None
    source: TemporalSource
    if choose_reader(lake, reader, master) == "arrow":
        from image.temporal.lake_source import ArrowSource
        from metadata.lake.files import LakeFiles

        files = LakeFiles(lake)
        files.state()  # a clear error now if there is no lake
        source = ArrowSource(files)
    else:
        from image.temporal.spark.source import SparkSource
        from metadata.lake.protocol import Lake

        if spark is None:
            from metadata.lake.spark import get_spark

            spark = lambda: get_spark(master)  # noqa: E731
        source = SparkSource(Lake(lake, spark()))
    if source.rules != rules and kafka_version is not None:  # (a lake of no release is an error either way)
        raise UnsupportedRelease(
            f"this lake follows Kafka {source.rules.release}'s replay rules (its ingests' --kafka-version); read "
            f"the log with --log --kafka-version {kafka_version}, or ingest it into a new lake with that version"
        )
    return source


def reference_image(source: TemporalSource, offset: int, *, lenient: bool = False) -> MetadataImage:
    """The image at ``offset`` replayed sequentially by the reference engine from the stored records (and
    the snapshot a replay to ``offset`` starts from, :func:`~image.temporal.starts.replay_start`): the cross-check
    of the temporal image."""
    base, first = replay_start(source, offset)
    snapshot = None
    if base is not None:
        snapshot = Snapshot(
            source.snapshot_records(base.end_offset, base.epoch),
            base.end_offset,
            base.epoch,
            base.last_contained_timestamp,
        )
    records = source.replay_records(first, offset)
    return replay_to(records, offset, snapshot=snapshot, rules=source.rules, lenient=lenient)
