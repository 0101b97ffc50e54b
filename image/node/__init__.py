"""The image as a file system, as Kafka's metadata shell shows it: a mirror of Kafka's
``org.apache.kafka.image.node`` over kraft-replay's :class:`~image.image.MetadataImage`.

* :mod:`image.node.nodes` — the nodes (``/image/topics/byName/<topic>/<partition>``, …);
* :mod:`image.node.texts` — the ``toString()`` of Kafka's image classes the files hold;
* :mod:`image.node.java` — Java's formatting and parsing that the nodes use;
* :mod:`image.node.releases` — what differs between Kafka's release lines.

The shell itself (commands, globs, the interactive loop) is the ``shell`` package.
"""
