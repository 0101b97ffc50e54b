"""The lake: Delta tables holding the log, its typed views and the temporal image, under one commit protocol.

* :mod:`~metadata.lake.tables`, :mod:`~metadata.lake.version_tables` — every table's schema (pyarrow, the one
  definition both engines write);
* :mod:`~metadata.lake.protocol` — :class:`~metadata.lake.protocol.Lake`, the lease and lake transactions
  (docs/lake-protocol.md), over a store: :mod:`~metadata.lake.local_store` (delta-rs, in process) or
  :mod:`~metadata.lake.spark_store` (Delta on Spark, :mod:`~metadata.lake.spark` the session);
* :mod:`~metadata.lake.state` — the committed state readers trust; :mod:`~metadata.lake.files` — the lake read
  without a JVM; :mod:`~metadata.lake.damage` — a damaged lake in one line;
* :mod:`~metadata.lake.ingest` — ingest (:mod:`~metadata.lake.ingest_local` in process,
  :mod:`~metadata.lake.ingest_spark` on Spark, :mod:`~metadata.lake.staging` the decode tasks);
* :mod:`~metadata.lake.check` — ``kraft-replay check``; :mod:`~metadata.lake.query` — ``log-info`` / ``dump`` on
  Spark; :mod:`~metadata.lake.docs` — renders docs/lake-tables.md; :mod:`~metadata.lake.progress` — Spark progress.

May import :mod:`metadata.log` and the image root's part shapes (:mod:`image.parts`); never :mod:`image.temporal`,
:mod:`image.views`, :mod:`replica` or :mod:`cli`.
"""
