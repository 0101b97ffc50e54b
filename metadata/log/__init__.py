"""The metadata log as Kafka writes it, decoded byte for byte.

* :mod:`~metadata.log.schema` — the one schema source (``records.json``, ``releases.json``) and how it is made;
* :mod:`~metadata.log.codec` — record batch v2, CRC-32C, compressions, varints, flexible bodies with tagged fields;
* :mod:`~metadata.log.readers` — log directories, segments, snapshots and kafka-dump-log text;
  :mod:`~metadata.log.columns` — decoded batches as Arrow columns (the hot path of ingest);
* :mod:`~metadata.log.records` — :class:`~metadata.log.records.LogRecord` and snapshots as the engines consume them;
  :mod:`~metadata.log.summary` — what ``log-info`` and ``dump`` answer about a log;
* :mod:`~metadata.log.errors` — the decoder's errors, each naming the file, the byte and the offset.

Imports nothing of the project outside this package: the bottom layer.
"""
