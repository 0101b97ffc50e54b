"""Deterministic generator of realistic KRaft ``__cluster_metadata`` logs (``kraft-replay generate``).

``generate(seed, brokers, topics, partitions, churn, out_dir, ...)`` simulates a cluster's active
controller following Kafka's controller rules and writes real-format segments (and optionally a
snapshot); it returns a :class:`GenerateReport` with exact counts of what was written.
"""

from generator.core import DEFAULT_SEGMENT_BYTES, LOG_DIR_NAME, generate
from generator.report import GenerateReport, SegmentReport, SnapshotReport

__all__ = ["DEFAULT_SEGMENT_BYTES", "LOG_DIR_NAME", "GenerateReport", "SegmentReport", "SnapshotReport", "generate"]
