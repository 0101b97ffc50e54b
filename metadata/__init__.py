"""The metadata log and the lake that keeps it.

* :mod:`metadata.log` — the log as Kafka writes it: the record schema, the codec, the readers of log directories,
  segments, snapshots and kafka-dump-log text, decoded records as the engines consume them;
* :mod:`metadata.lake` — the Delta lake: its tables, the commit protocol (lease, lake transactions, recovery), the
  two stores (delta-rs in process, Spark), ingest, reads without a JVM, ``check`` and damage reports.

:mod:`metadata.log` imports nothing of the project; :mod:`metadata.lake` imports :mod:`metadata.log` and the image's
part shapes (:mod:`image.parts`) for the temporal image's tables.
"""
