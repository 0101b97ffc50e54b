"""The temporal image: every image key's versions with the offsets between which they held.

* :mod:`~image.temporal.versions` — the recorder: the reference engine's loader recording each key's versions;
* :mod:`~image.temporal.sharding` — which records must stay together, so shards replay independently;
* :mod:`~image.temporal.build` — the build at ingest (where to replay, what to undo, the writes), and
  :mod:`~image.temporal.ingest` — ingest as the CLI runs it (records, then versions, in one lake transaction);
* :mod:`~image.temporal.reads` — :class:`~image.temporal.reads.TemporalSource`, the image and the delta at any offset
  from the versions; :mod:`~image.temporal.lake_source` (a lake read in process),
  :mod:`~image.temporal.spark` (the build and the reads on Spark), :mod:`~image.temporal.sources` (which one a read
  command gets); :mod:`~image.temporal.version_rows` (windows of version rows for the views),
  :mod:`~image.temporal.diff` (the diff of two offsets), :mod:`~image.temporal.times` (log times),
  :mod:`~image.temporal.window` (the one window and resolver of offsets and times), :mod:`~image.temporal.starts`
  (where every replay of a stored log starts);
* :mod:`~image.temporal.lake_check` — the temporal image's checks for ``kraft-replay check``.

May import :mod:`image` (the root), :mod:`metadata.log` and :mod:`metadata.lake`; never :mod:`image.views`,
:mod:`replica` or :mod:`cli`. See image/temporal/README.md and docs/temporal-image.md.
"""
