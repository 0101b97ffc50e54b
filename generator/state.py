"""The simulated controller's in-memory metadata state.

The simulator never edits this state directly: every change goes through :meth:`ClusterState.replay`
of the record it has just written, exactly as Kafka's active controller replays its own records.
So the state is, by construction, what a replay of the generated log yields (aborted transactions
are simply not replayed). The snapshot writer serializes it (``snapshot.py``).

One difference between the controller's view and Kafka's MetadataImage is kept apart: a
RemoveTopicRecord deletes only the topic config keys the image held *before the current delta*, so
keys set earlier in the same delta survive in the image (docs/replay-rules.md, "RemoveTopicRecord").
:class:`TopicConfigImage` follows the image's topic configs delta by delta; the writer reports
where each delta ends (``LogWriter.on_delta_end``).

Lists held in the state are never mutated in place (records may share them), only replaced.
"""

from __future__ import annotations

from typing import Any, Protocol

from image.partition import all_migrating
from image.uuids import MIGRATING, UNASSIGNED, uuid_sort_key
from metadata.log.codec.primitives import uuid_to_str

METADATA_TOPIC_ID = "AAAAAAAAAAAAAAAAAAAAAQ"

TOPIC_RESOURCE = 2
BROKER_RESOURCE = 4

NO_LEADER = -1
NO_LEADER_CHANGE = -2


class _Bits(Protocol):
    def getrandbits(self, k: int, /) -> int: ...


def random_uuid(rng: _Bits) -> str:
    """A Kafka ``Uuid.randomUuid()`` drawn from ``rng``: a version-4 UUID whose text form does not
    start with ``-`` and that is not one of the reserved ids (msb 0, lsb < 100)."""
    while True:
        value = rng.getrandbits(128)
        value = (value & ~(0xF << 76)) | (0x4 << 76)  # version 4
        value = (value & ~(0x3 << 62)) | (0x2 << 62)  # IETF variant
        text = uuid_to_str(value.to_bytes(16, "big"))
        if text.startswith("-") or (value >> 64 == 0 and (value & 0xFFFFFFFFFFFFFFFF) < 100):
            continue
        return text


class Broker:
    __slots__ = ("dirs", "endpoints", "epoch", "features", "fenced", "id", "in_cs", "incarnation", "rack")

    def __init__(self, data: dict[str, Any]) -> None:
        self.id: int = data["brokerId"]
        self.epoch: int = data["brokerEpoch"]
        self.incarnation: str = data["incarnationId"]
        self.fenced: bool = data.get("fenced", True)
        self.in_cs: bool = data.get("inControlledShutdown", False)
        self.dirs: list[str] = sorted(data.get("logDirs", []), key=uuid_sort_key)
        self.rack: str | None = data.get("rack")
        self.endpoints: list[dict[str, Any]] = data.get("endPoints", [])
        self.features: list[dict[str, Any]] = data.get("features", [])

    @property
    def active(self) -> bool:
        """``ClusterControlManager.isActive``: registered, unfenced, not in controlled shutdown."""
        return not self.fenced and not self.in_cs


class Partition:
    __slots__ = (
        "adding",
        "dirs",
        "isr",
        "leader",
        "leader_epoch",
        "lrs",
        "partition_epoch",
        "removing",
        "replicas",
    )

    def __init__(self, data: dict[str, Any]) -> None:
        self.replicas: list[int] = data["replicas"]
        self.isr: list[int] = data["isr"]
        self.removing: list[int] = data.get("removingReplicas", [])
        self.adding: list[int] = data.get("addingReplicas", [])
        self.leader: int = data.get("leader", NO_LEADER)
        self.leader_epoch: int = data.get("leaderEpoch", -1)
        self.partition_epoch: int = data.get("partitionEpoch", -1)
        self.lrs: int = data.get("leaderRecoveryState", 0)
        dirs = data.get("directories")
        if not dirs or all_migrating(dirs):
            dirs = [MIGRATING] * len(self.replicas)
        self.dirs: list[str] = dirs

    def merge(self, rec: dict[str, Any]) -> None:
        """``PartitionRegistration.merge``."""
        replicas = rec.get("replicas")
        if replicas is not None:
            self.replicas = replicas
        dirs = rec.get("directories")
        if dirs is None:
            dirs = self.dirs
        if all_migrating(dirs):
            dirs = [MIGRATING] * len(self.replicas)
        if len(dirs) != len(self.replicas):
            raise ValueError("The lengths for replicas and directories do not match.")
        self.dirs = dirs
        isr = rec.get("isr")
        if isr is not None:
            self.isr = isr
        removing = rec.get("removingReplicas")
        if removing is not None:
            self.removing = removing
        adding = rec.get("addingReplicas")
        if adding is not None:
            self.adding = adding
        leader = rec.get("leader", NO_LEADER_CHANGE)
        if leader != NO_LEADER_CHANGE:
            self.leader = leader
            self.leader_epoch += 1
        lrs = rec.get("leaderRecoveryState", -1)
        if lrs != -1:
            self.lrs = lrs
        self.partition_epoch += 1

    def to_record(self, topic_id: str, partition_id: int) -> dict[str, Any]:
        """The PartitionRecord (v1 shape) that describes this registration."""
        rec: dict[str, Any] = {
            "partitionId": partition_id,
            "topicId": topic_id,
            "replicas": self.replicas,
            "isr": self.isr,
            "removingReplicas": self.removing,
            "addingReplicas": self.adding,
            "leader": self.leader,
            "leaderEpoch": self.leader_epoch,
            "partitionEpoch": self.partition_epoch,
            "directories": self.dirs,
        }
        if self.lrs:
            rec["leaderRecoveryState"] = self.lrs
        return rec

    def directory(self, broker_id: int) -> str | None:
        try:
            return self.dirs[self.replicas.index(broker_id)]
        except ValueError:
            return None


class Topic:
    __slots__ = ("id", "name", "parts")

    def __init__(self, topic_id: str, name: str) -> None:
        self.id = topic_id
        self.name = name
        self.parts: list[Partition] = []


class TopicConfigImage:
    """The TOPIC config resources of Kafka's MetadataImage (name → key → value), updated once per
    delta like ``ConfigurationsDelta``; the records of the open delta wait in a buffer."""

    __slots__ = ("_pending", "data")

    def __init__(self) -> None:
        self.data: dict[str, dict[str, str]] = {}
        # (offset, topic name, key, value) of the open delta; key None = RemoveTopicRecord
        self._pending: list[tuple[int, str, str | None, str | None]] = []

    def replay(self, offset: int, name: str, key: str | None, value: str | None) -> None:
        """A topic ConfigRecord (``key``, ``value``; None value = delete) or, with key None, a
        RemoveTopicRecord of the topic ``name``."""
        self._pending.append((offset, name, key, value))

    def end_delta(self, last_offset: int) -> None:
        """Apply the buffered records up to ``last_offset`` as one delta."""
        pending = self._pending
        n = 0
        while n < len(pending) and pending[n][0] <= last_offset:
            n += 1
        if not n:
            return
        changes: dict[str, dict[str, str | None]] = {}
        for _, name, key, value in pending[:n]:
            if key is not None:
                changes.setdefault(name, {})[key] = value
            elif name in self.data:  # only the keys of the delta's base image are deleted
                changes[name] = dict.fromkeys(self.data[name])
        del pending[:n]
        for name, entries in changes.items():
            data = self.data.setdefault(name, {})
            for key, value in entries.items():
                if value is None:
                    data.pop(key, None)
                else:
                    data[key] = value
            if not data:
                del self.data[name]

    def orphans(self, configs: dict[tuple[int, str], dict[str, str]]) -> dict[str, dict[str, str]]:
        """Topic configs in the image that the controller's ``configs`` no longer hold (keys of
        removed topics that were set in the same delta as the removal)."""
        out: dict[str, dict[str, str]] = {}
        for name, data in self.data.items():
            current = configs.get((TOPIC_RESOURCE, name), {})
            extra = {key: value for key, value in data.items() if key not in current}
            if extra:
                out[name] = extra
        return out


class ClusterState:
    """Brokers, controllers, topics, configs, features and producer ids, as replayed so far."""

    def __init__(self) -> None:
        self.brokers: dict[int, Broker] = {}
        self.controllers: dict[int, dict[str, Any]] = {}
        self.topics: dict[str, Topic] = {}  # by id, in creation order
        self.topics_by_name: dict[str, str] = {}
        self.configs: dict[tuple[int, str], dict[str, str]] = {}  # the controller's view
        self.topic_config_image = TopicConfigImage()
        self.metadata_version: int | None = None
        self.features: dict[str, int] = {}  # finalized features other than metadata.version
        self.zk_migration_state: int | None = None
        self.next_producer_id = -1
        self.producer_ids_broker_epoch = -1

    # ------------------------------------------------------------------ queries

    def is_active(self, broker_id: int) -> bool:
        b = self.brokers.get(broker_id)
        return b is not None and not b.fenced and not b.in_cs

    def default_dir(self, broker_id: int) -> str:
        """``ClusterControlManager.defaultDir``."""
        b = self.brokers.get(broker_id)
        if b is None:
            return UNASSIGNED
        if not b.dirs:
            return MIGRATING
        if len(b.dirs) == 1:
            return b.dirs[0]
        return UNASSIGNED

    # ------------------------------------------------------------------ replay

    def replay(self, type_name: str, data: dict[str, Any], offset: int) -> None:
        handler = _REPLAY.get(type_name)
        if handler is not None:
            handler(self, data, offset)

    def _register_broker(self, data: dict[str, Any], offset: int) -> None:
        self.brokers[data["brokerId"]] = Broker(data)

    def _unregister_broker(self, data: dict[str, Any], offset: int) -> None:
        del self.brokers[data["brokerId"]]

    def _change_broker(self, data: dict[str, Any], offset: int) -> None:
        b = self.brokers[data["brokerId"]]
        if b.epoch != data["brokerEpoch"]:
            raise RuntimeError(f"broker {b.id}: change with epoch {data['brokerEpoch']}, registered {b.epoch}")
        fenced = data.get("fenced", 0)
        if fenced == 1:
            b.fenced = True
        elif fenced == -1:
            b.fenced = False
        if data.get("inControlledShutdown", 0) == 1:
            b.in_cs = True
        if data.get("logDirs"):
            b.dirs = sorted(data["logDirs"], key=uuid_sort_key)

    def _register_controller(self, data: dict[str, Any], offset: int) -> None:
        self.controllers[data["controllerId"]] = data

    def _topic(self, data: dict[str, Any], offset: int) -> None:
        topic = Topic(data["topicId"], data["name"])
        self.topics[topic.id] = topic
        self.topics_by_name[topic.name] = topic.id

    def _partition(self, data: dict[str, Any], offset: int) -> None:
        topic = self.topics[data["topicId"]]
        pid = data["partitionId"]
        if pid != len(topic.parts):
            raise RuntimeError(f"partition {pid} of {topic.name} is not the next dense id {len(topic.parts)}")
        topic.parts.append(Partition(data))

    def _partition_change(self, data: dict[str, Any], offset: int) -> None:
        self.topics[data["topicId"]].parts[data["partitionId"]].merge(data)

    def _remove_topic(self, data: dict[str, Any], offset: int) -> None:
        topic = self.topics.pop(data["topicId"])
        del self.topics_by_name[topic.name]
        self.configs.pop((TOPIC_RESOURCE, topic.name), None)
        self.topic_config_image.replay(offset, topic.name, None, None)

    def _config(self, data: dict[str, Any], offset: int) -> None:
        key = (data["resourceType"], data["resourceName"])
        value = data.get("value")
        if key[0] == TOPIC_RESOURCE:
            self.topic_config_image.replay(offset, key[1], data["name"], value)
        if value is None:
            current = self.configs.get(key)
            if current is not None:
                current.pop(data["name"], None)
                if not current:
                    del self.configs[key]
        else:
            self.configs.setdefault(key, {})[data["name"]] = value

    def _feature(self, data: dict[str, Any], offset: int) -> None:
        if data["name"] == "metadata.version":
            self.metadata_version = data["featureLevel"]
        elif data["featureLevel"] == 0:
            self.features.pop(data["name"], None)
        else:
            self.features[data["name"]] = data["featureLevel"]

    def _zk_state(self, data: dict[str, Any], offset: int) -> None:
        self.zk_migration_state = data.get("zkMigrationState", 0)

    def _producer_ids(self, data: dict[str, Any], offset: int) -> None:
        self.next_producer_id = data["nextProducerId"]
        self.producer_ids_broker_epoch = data.get("brokerEpoch", -1)


_REPLAY = {
    "REGISTER_BROKER_RECORD": ClusterState._register_broker,
    "UNREGISTER_BROKER_RECORD": ClusterState._unregister_broker,
    "BROKER_REGISTRATION_CHANGE_RECORD": ClusterState._change_broker,
    "REGISTER_CONTROLLER_RECORD": ClusterState._register_controller,
    "TOPIC_RECORD": ClusterState._topic,
    "PARTITION_RECORD": ClusterState._partition,
    "PARTITION_CHANGE_RECORD": ClusterState._partition_change,
    "REMOVE_TOPIC_RECORD": ClusterState._remove_topic,
    "CONFIG_RECORD": ClusterState._config,
    "FEATURE_LEVEL_RECORD": ClusterState._feature,
    "ZK_MIGRATION_STATE_RECORD": ClusterState._zk_state,
    "PRODUCER_IDS_RECORD": ClusterState._producer_ids,
}
