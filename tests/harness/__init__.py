"""Real-Kafka oracle harness for kraft-replay (issue 3).

Fetches Apache Kafka jars from Maven Central, runs real KRaft clusters on loopback,
drives scenarios through an Admin client and replays metadata logs with Kafka's own
classes (``java/KraftOracle.java``).  See ``tests/harness/README.md``.
"""
