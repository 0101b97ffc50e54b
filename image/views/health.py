"""Cluster health of one image: the gauges of a timeline point, computed from an image JSON.

Definitions (docs/health.md gives the Kafka sources):

* offline partition — no leader (``leader == -1``; Kafka ``PartitionRegistration.hasLeader``,
  the controller's ``OfflinePartitionsCount``);
* under-replicated — ISR smaller than the replicas (``Partition.isUnderReplicated``);
* under min ISR — has a leader and ``|ISR| < min(min.insync.replicas, |replicas|)``
  (``Partition.isUnderMinIsr`` / ``effectiveMinIsr`` on the leader), with min.insync.replicas
  resolved for the leader broker as its LogConfig is: the TOPIC config, else the leader's
  per-broker BROKER config, else the cluster default (BROKER resource ``""``), else 1
  (server.properties is not in the log; Kafka's default is 1);
* reassigning — adding or removing replicas non-empty (``Partition.isReassigning``);
* fenced / in controlled shutdown brokers — the registration flags;
* cordoned brokers — brokers with a cordoned log directory (Kafka 4.3+, KIP-1066: the controller places no new
  replica in it; a broker whose every directory is cordoned gets no new partitions);
* leaders per broker — partitions led by each broker, every registered broker listed (0 if none).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel

from metadata.log.errors import BadInput

NO_LEADER = -1
MIN_INSYNC_REPLICAS = "min.insync.replicas"
DEFAULT_MIN_INSYNC_REPLICAS = 1
"""ServerLogConfigs.MIN_IN_SYNC_REPLICAS_DEFAULT."""
CLUSTER_DEFAULT = ""
"""Resource name of the cluster-wide broker default (ConfigurationControlManager.DEFAULT_NODE)."""

_INT = re.compile(r"[+-]?[0-9]+")


class Gauges(BaseModel):
    """The state gauges of one image (see the module doc)."""

    offlinePartitions: int
    underReplicatedPartitions: int
    underMinIsrPartitions: int
    fencedBrokers: list[int]
    controlledShutdownBrokers: list[int]
    cordonedBrokers: list[int]
    reassigningPartitions: int
    leadersPerBroker: dict[str, int]


class TimelinePoint(Gauges):
    """One point of a timeline: the gauges of the image ``replay --at-offset offset`` gives, and
    counters over the interval since the previous point (the first point: since the window's
    first offset, inclusive)."""

    offset: int
    time: str
    elections: int
    isrShrinks: int
    isrExpansions: int
    recordsByType: dict[str, int]


class Timeline(BaseModel):
    """``timeline --json``: the points in order."""

    points: list[TimelinePoint]


def parse_min_insync(value: str, resource: tuple[str, str]) -> int:
    """A min.insync.replicas value as Kafka's ConfigDef INT parses it (trimmed decimal)."""
    text = value.strip()
    if not _INT.fullmatch(text):
        kind, name = resource
        raise BadInput(f"config {kind} {name!r} {MIN_INSYNC_REPLICAS}={value!r} is not an integer")
    return int(text)


def min_insync_settings(configs: Iterable[Mapping[str, Any]]) -> dict[tuple[str, str], int]:
    """``{(resourceType, resourceName): min.insync.replicas}`` of the TOPIC and BROKER resources
    of an image JSON ``configs`` list that set it."""
    return {
        (c["resourceType"], c["resourceName"]): parse_min_insync(c["value"], (c["resourceType"], c["resourceName"]))
        for c in configs
        if c["name"] == MIN_INSYNC_REPLICAS and c["resourceType"] in ("TOPIC", "BROKER")
    }


def min_insync_replicas(settings: Mapping[tuple[str, str], int], topic: str, broker: int) -> int:
    """min.insync.replicas of ``topic`` on ``broker``: topic config, else the broker's own
    dynamic config, else the cluster default, else 1 (KafkaConfigSchema.resolveEffectiveTopicConfig)."""
    for resource in (("TOPIC", topic), ("BROKER", str(broker)), ("BROKER", CLUSTER_DEFAULT)):
        if resource in settings:
            return settings[resource]
    return DEFAULT_MIN_INSYNC_REPLICAS


def is_under_min_isr(partition: Mapping[str, Any], min_insync: int) -> bool:
    """Has a leader and fewer in-sync replicas than ``min(min_insync, |replicas|)``."""
    effective = min(min_insync, len(partition["replicas"]))
    return partition["leader"] != NO_LEADER and len(partition["isr"]) < effective


def image_gauges(image: Mapping[str, Any]) -> Gauges:
    """The gauges of an image JSON (``MetadataImage.to_json()``)."""
    partitions, brokers = image["partitions"], image["brokers"]
    settings = min_insync_settings(image["configs"])
    leaders = Counter(p["leader"] for p in partitions if p["leader"] != NO_LEADER)
    for b in brokers:
        leaders.setdefault(b["brokerId"], 0)
    return Gauges(
        offlinePartitions=sum(p["leader"] == NO_LEADER for p in partitions),
        underReplicatedPartitions=sum(len(p["isr"]) < len(p["replicas"]) for p in partitions),
        underMinIsrPartitions=sum(
            is_under_min_isr(p, min_insync_replicas(settings, p["topic"], p["leader"])) for p in partitions
        ),
        fencedBrokers=sorted(b["brokerId"] for b in brokers if b["fenced"]),
        controlledShutdownBrokers=sorted(b["brokerId"] for b in brokers if b["inControlledShutdown"]),
        cordonedBrokers=sorted(b["brokerId"] for b in brokers if b["cordonedLogDirs"]),
        reassigningPartitions=sum(bool(p["addingReplicas"] or p["removingReplicas"]) for p in partitions),
        leadersPerBroker={str(b): n for b, n in sorted(leaders.items())},
    )
