"""Kafka's metadata image (``org.apache.kafka.image``) in pure Python: the sequential reference engine.

The root holds Kafka's image package and nothing else: the parts (``topics``, ``cluster``, ``configs``, …) each
with its image and delta, :class:`~image.image.MetadataImage` and :class:`~image.delta.MetadataDelta`, the batch
loader (``loader``), the replay entry points (``replay``), the image diff (``diff``), the rules of each Kafka
release line (``release``) and the image as rows (``parts``). Subpackages, one layer each:

* :mod:`image.node` — the image as a file system (Kafka's ``org.apache.kafka.image.node``, the shell's tree);
* :mod:`image.temporal` — the temporal image: every key's versions, built at ingest and read at any offset;
* :mod:`image.views` — the incident views: history, timeline, health, report, the image summary.

The root imports only :mod:`metadata.log` (records, schema) and itself; the layers above import it.
"""
