"""ZooKeeper-era view of a delta (docs/local-changes.md, "The ZooKeeper-era view").

* :func:`leader_and_isr_doc` (in process, on the reference engine's images and delta) /
  :func:`replica.spark_zk.leader_and_isr_json` (on Spark, from its ``leader_and_isr_frame``): the
  same transitions as LocalReplicaChanges rendered as the control requests a ZooKeeper controller
  would batch per broker — a StopReplica (``deletePartition = true``; leader epoch -2 =
  EPOCH_DURING_DELETE for a deleted topic, else the partition's leader epoch at B) for its deletes,
  then a LeaderAndIsr with a partition state (partition epoch as ``zkVersion``/PartitionEpoch,
  ``isNew`` = the broker was not a replica of that topic id at A) for its leaders and followers,
  topic ids and the live leaders. (A ZooKeeper controller first sends StopReplica without deletion
  for a reassignment; the view shows the final, deleting one.) Deletes go first so that a re-created
  topic is removed before its successor is created. Brokers not registered at B get no requests.
* :class:`ZkBroker`: a sequential replay of ``ReplicaManager.becomeLeaderOrFollower`` and
  ``stopReplicas`` on one broker for a sequence of such requests, with the per-partition error
  codes (NONE 0, UNKNOWN_TOPIC_OR_PARTITION 3, NOT_LEADER_OR_FOLLOWER 6, STALE_CONTROLLER_EPOCH 11,
  KAFKA_STORAGE_ERROR 56, FENCED_LEADER_EPOCH 74, STALE_BROKER_EPOCH 77, INCONSISTENT_TOPIC_ID 103),
  the Partition state and the events (logs, fetchers, coordinator calls).

Replay document (what :func:`leader_and_isr_doc` produces for one broker)::

    {"brokerId", "brokerEpoch", "aliveBrokers": [{"brokerId", "host", "port"}],
     "shuttingDown" (false), "numReplicaFetchers" (1), "offlinePartitions": [{"topicName", "partitionIndex"}],
     "requests": [LeaderAndIsr | StopReplica, ...]}
    LeaderAndIsr = {"type": "LeaderAndIsr", "controllerId", "isKRaftController" (false), "controllerEpoch",
                    "brokerEpoch" (-1 = unknown), "topicIds": {name: id}, "liveLeaders",
                    "partitionStates": [{"topicName", "partitionIndex", "controllerEpoch", "leader", "leaderEpoch",
                                         "isr", "partitionEpoch", "replicas", "addingReplicas", "removingReplicas",
                                         "isNew", "leaderRecoveryState"}]}
    StopReplica  = {"type": "StopReplica", "controllerId", "isKRaftController", "controllerEpoch", "brokerEpoch",
                    "topicStates": [{"topicName", "partitionStates": [{"partitionIndex", "leaderEpoch" (-1),
                                                                        "deletePartition"}]}]}
                   or (v0-2) "deletePartitions" plus "partitions": [{"topicName", "partitionIndex"}]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from image.delta import MetadataDelta
from image.image import MetadataImage
from image.partition import PartitionRegistration
from metadata.log.errors import BadInput
from replica.local_changes import Removals, TopicPartition, candidate_brokers, local_changes
from replica.plan import COORDINATOR_TOPICS, fetcher_id

NONE, UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER, STALE_CONTROLLER_EPOCH = 0, 3, 6, 11
KAFKA_STORAGE_ERROR, FENCED_LEADER_EPOCH, STALE_BROKER_EPOCH, INCONSISTENT_TOPIC_ID = 56, 74, 77, 103

EPOCH_DURING_DELETE, NO_EPOCH, UNKNOWN_BROKER_EPOCH = -2, -1, -1
ZERO_UUID = "AAAAAAAAAAAAAAAAAAAAAA"
STOP_REPLICA, LEADER_AND_ISR = "StopReplica", "LeaderAndIsr"


class RegisteredBroker(NamedTuple):
    """A broker registered at B as the ZooKeeper-era metadata cache sees it: its epoch and, when it
    is unfenced and has the inter-broker listener, its (host, port) (then it is alive)."""

    epoch: int
    alive_at: tuple[str, int] | None


def requests_document(
    partitions: Mapping[int, Sequence[Mapping[str, Any]]],
    registered: Mapping[int, RegisteredBroker],
    *,
    from_offset: int,
    to_offset: int,
    controller_epoch: int,
    controller_id: int,
    broker: int | None,
) -> dict[str, Any]:
    """The replay documents (module doc) from each broker's request partitions: one broker's, or
    ``{fromOffset, toOffset, brokers: [...]}`` for every broker with a request. A partition is a
    mapping of :data:`replica.spark_zk.ZK_SCHEMA` fields: ``request``, ``topic``, ``topicId``,
    ``partitionIndex``, ``leaderEpoch``, and for LeaderAndIsr the partition state."""
    alive = [
        {"brokerId": b, "host": r.alive_at[0], "port": r.alive_at[1]}
        for b, r in sorted(registered.items())
        if r.alive_at is not None
    ]

    def document(b: int, rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        epoch = registered[b].epoch if b in registered else UNKNOWN_BROKER_EPOCH
        head = {
            "controllerId": controller_id,
            "isKRaftController": False,
            "controllerEpoch": controller_epoch,
            "brokerEpoch": epoch,
        }
        rows = sorted(rows, key=lambda r: (r["topic"], r["partitionIndex"]))
        requests: list[dict[str, Any]] = []
        stops = [r for r in rows if r["request"] == STOP_REPLICA]
        if stops:
            topics: dict[str, list[dict[str, Any]]] = {}
            for r in stops:
                topics.setdefault(r["topic"], []).append(
                    {"partitionIndex": r["partitionIndex"], "leaderEpoch": r["leaderEpoch"], "deletePartition": True}
                )
            requests.append(
                {
                    "type": STOP_REPLICA,
                    **head,
                    "topicStates": [{"topicName": t, "partitionStates": p} for t, p in topics.items()],
                }
            )
        states = [r for r in rows if r["request"] == LEADER_AND_ISR]
        if states:
            leaders = {r["leader"] for r in states}
            requests.append(
                {
                    "type": LEADER_AND_ISR,
                    **head,
                    "topicIds": {r["topic"]: r["topicId"] for r in states},
                    "liveLeaders": [
                        {"brokerId": a["brokerId"], "hostName": a["host"], "port": a["port"]}
                        for a in alive
                        if a["brokerId"] in leaders
                    ],
                    "partitionStates": [
                        {
                            "topicName": r["topic"],
                            "partitionIndex": r["partitionIndex"],
                            "controllerEpoch": r["controllerEpoch"],
                            "leader": r["leader"],
                            "leaderEpoch": r["leaderEpoch"],
                            "isr": r["isr"],
                            "partitionEpoch": r["partitionEpoch"],
                            "replicas": r["replicas"],
                            "addingReplicas": r["addingReplicas"],
                            "removingReplicas": r["removingReplicas"],
                            "isNew": r["isNew"],
                            "leaderRecoveryState": r["leaderRecoveryState"],
                        }
                        for r in states
                    ],
                }
            )
        return {"brokerId": b, "brokerEpoch": epoch, "aliveBrokers": alive, "requests": requests}

    if broker is not None:
        return document(broker, partitions.get(broker, []))
    return {
        "fromOffset": from_offset,
        "toOffset": to_offset,
        "brokers": [document(b, rows) for b, rows in sorted(partitions.items()) if rows],
    }


def _stop_replica(tp: TopicPartition, topic_id: str, leader_epoch: int) -> dict[str, Any]:
    return {
        "request": STOP_REPLICA,
        "topic": tp.topic,
        "topicId": topic_id,
        "partitionIndex": tp.partition,
        "leaderEpoch": leader_epoch,
    }


def _partition_state(
    tp: TopicPartition, topic_id: str, p: PartitionRegistration, controller_epoch: int, is_new: bool
) -> dict[str, Any]:
    return {
        "request": LEADER_AND_ISR,
        "topic": tp.topic,
        "topicId": topic_id,
        "partitionIndex": tp.partition,
        "controllerEpoch": controller_epoch,
        "leader": p.leader,
        "leaderEpoch": p.leader_epoch,
        "isr": list(p.isr),
        "partitionEpoch": p.partition_epoch,
        "replicas": list(p.replicas),
        "addingReplicas": list(p.adding_replicas),
        "removingReplicas": list(p.removing_replicas),
        "isNew": is_new,
        "leaderRecoveryState": p.leader_recovery_state,
    }


def leader_and_isr_doc(
    start: MetadataImage,
    delta: MetadataDelta,
    end: MetadataImage,
    *,
    controller_epoch: int,
    controller_id: int = 0,
    broker: int | None = None,
    inter_broker_listener: str = "PLAINTEXT",
) -> dict[str, Any]:
    """Replay documents (module doc) of the delta between the images ``start`` and ``end``: one
    broker's, or ``{fromOffset, toOffset, brokers: [...]}`` for every broker with a request."""
    registered = {
        b: RegisteredBroker(
            r.epoch,
            None
            if r.fenced
            else next(((e.host, e.port) for e in r.listeners if e.name == inter_broker_listener), None),
        )
        for b, r in end.cluster.brokers.items()
    }
    topics = delta.topics_delta
    partitions: dict[int, list[dict[str, Any]]] = {}
    if topics is not None:
        removals = Removals(topics)
        for b in sorted(candidate_brokers(topics)) if broker is None else [broker]:
            if b not in registered:
                continue
            changes = local_changes(topics, b)
            rows = partitions[b] = []
            for tp in changes.deletes:
                topic_id, _, topic_deleted = removals.removed(b, tp)
                at_b = end.topics.get_partition(topic_id, tp.partition)
                rows.append(
                    _stop_replica(
                        tp,
                        topic_id,
                        EPOCH_DURING_DELETE if topic_deleted else NO_EPOCH if at_b is None else at_b.leader_epoch,
                    )
                )
            for tp, info in (*changes.leaders.items(), *changes.followers.items()):
                at_a = start.topics.get_partition(info.topic_id, tp.partition)
                rows.append(
                    _partition_state(
                        tp, info.topic_id, info.partition, controller_epoch, at_a is None or b not in at_a.replicas
                    )
                )
    return requests_document(
        partitions,
        registered,
        from_offset=start.offset,
        to_offset=end.offset,
        controller_epoch=controller_epoch,
        controller_id=controller_id,
        broker=broker,
    )


@dataclass
class ReplicaPartition:
    """A broker's ``Partition`` object (the fields the control requests read and write)."""

    topic: str
    partition: int
    leader: int | None = None
    leader_epoch: int = -1
    partition_epoch: int = 0
    controller_epoch: int = 0
    replicas: list[int] = field(default_factory=list)
    isr: list[int] = field(default_factory=list)
    adding_replicas: list[int] = field(default_factory=list)
    removing_replicas: list[int] = field(default_factory=list)
    leader_recovery_state: int = 0
    has_log: bool = False
    log_topic_id: str | None = None
    fetcher: dict[str, Any] | None = None
    offline: bool = False

    @property
    def name(self) -> str:
        return f"{self.topic}-{self.partition}"

    def to_json(self) -> dict[str, Any]:
        return {
            "topicName": self.topic,
            "partitionIndex": self.partition,
            "topicId": self.log_topic_id,
            "hasLog": self.has_log,
            "offline": self.offline,
            "leader": self.leader,
            "leaderEpoch": self.leader_epoch,
            "partitionEpoch": self.partition_epoch,
            "controllerEpoch": self.controller_epoch,
            "replicas": self.replicas,
            "isr": self.isr,
            "addingReplicas": self.adding_replicas,
            "removingReplicas": self.removing_replicas,
            "leaderRecoveryState": self.leader_recovery_state,
            "fetcher": self.fetcher,
        }


class _NotLeaderOrFollower(Exception):
    """``localLogOrException`` on a partition without a log: escapes becomeLeaderOrFollower."""


@dataclass
class ZkBroker:
    """One broker answering LeaderAndIsr and StopReplica requests in sequence."""

    broker_id: int
    broker_epoch: int = 0
    alive_brokers: dict[int, tuple[str, int]] = field(default_factory=dict)
    shutting_down: bool = False
    num_replica_fetchers: int = 1
    controller_epoch: int = 0
    partitions: dict[tuple[str, int], ReplicaPartition] = field(default_factory=dict)

    @classmethod
    def from_json(cls, document: dict[str, Any]) -> ZkBroker:
        broker = cls(
            document["brokerId"],
            document.get("brokerEpoch", 0),
            {a["brokerId"]: (a["host"], a["port"]) for a in document.get("aliveBrokers", [])},
            document.get("shuttingDown", False),
            document.get("numReplicaFetchers", 1),
        )
        for p in document.get("offlinePartitions", []):
            key = (p["topicName"], p["partitionIndex"])
            broker.partitions[key] = ReplicaPartition(*key, offline=True)
        return broker

    def handle(self, request: dict[str, Any]) -> dict[str, Any]:
        """One request → ``{type, errorCode, partitionErrors, events}``."""
        if request["type"] == "LeaderAndIsr":
            return self.become_leader_or_follower(request)
        if request["type"] == "StopReplica":
            return self.stop_replicas(request)
        raise BadInput(f"unknown request type {request['type']!r} (LeaderAndIsr or StopReplica)")

    def _stale_broker_epoch(self, request: dict[str, Any]) -> bool:
        epoch = request.get("brokerEpoch", UNKNOWN_BROKER_EPOCH)
        return epoch != UNKNOWN_BROKER_EPOCH and epoch < self.broker_epoch

    # ------------------------------------------------------------------ LeaderAndIsr

    def become_leader_or_follower(self, request: dict[str, Any]) -> dict[str, Any]:
        """KafkaApis.handleLeaderAndIsrRequest + ReplicaManager.becomeLeaderOrFollower."""
        states = request.get("partitionStates", [])
        events: list[str] = []

        def everywhere(code: int) -> dict[str, Any]:
            return {
                "type": "LeaderAndIsr",
                "errorCode": code,
                "events": events,
                "partitionErrors": [
                    {"topicName": s["topicName"], "partitionIndex": s["partitionIndex"], "errorCode": code}
                    for s in states
                ],
            }

        if self._stale_broker_epoch(request):
            events.append(f"broker epoch {request['brokerEpoch']} is older than {self.broker_epoch}: ignored")
            return everywhere(STALE_BROKER_EPOCH)
        if request["controllerEpoch"] < self.controller_epoch:
            events.append(
                f"controller epoch {request['controllerEpoch']} is older than {self.controller_epoch}: ignored"
            )
            return everywhere(STALE_CONTROLLER_EPOCH)
        self.controller_epoch = request["controllerEpoch"]
        kraft = request.get("isKRaftController", False)
        topic_ids = {name: i for name, i in request.get("topicIds", {}).items() if i and i != ZERO_UUID}
        errors: dict[tuple[str, int], int] = {}
        to_lead: list[tuple[ReplicaPartition, dict[str, Any]]] = []
        to_follow: list[tuple[ReplicaPartition, dict[str, Any]]] = []
        try:
            for state in states:
                key = (state["topicName"], state["partitionIndex"])
                partition = self.partitions.get(key)
                if partition is not None and partition.offline:
                    errors[key] = KAFKA_STORAGE_ERROR
                    continue
                if partition is None:
                    partition = self.partitions[key] = ReplicaPartition(*key)
                    events.append(f"create partition {partition.name}")
                request_id, log_id = topic_ids.get(key[0]), partition.log_topic_id if partition.has_log else None
                epoch = state["leaderEpoch"]
                if request_id is not None and log_id is not None and request_id != log_id:
                    errors[key] = INCONSISTENT_TOPIC_ID
                    events.append(f"{partition.name}: topic id {request_id} != the log's {log_id}")
                elif epoch > partition.leader_epoch or (epoch == partition.leader_epoch and kraft):
                    if self.broker_id in state["replicas"]:
                        (to_lead if state["leader"] == self.broker_id else to_follow).append((partition, state))
                    else:
                        errors[key] = UNKNOWN_TOPIC_OR_PARTITION
                        events.append(f"{partition.name}: not in the assigned replicas {state['replicas']}")
                elif epoch < partition.leader_epoch:
                    errors[key] = STALE_CONTROLLER_EPOCH
                    events.append(f"{partition.name}: leader epoch {epoch} < current {partition.leader_epoch}")
                else:
                    errors[key] = self._same_epoch(partition, state, request_id, log_id, events)
            leaders = self._make_leaders(to_lead, topic_ids, errors, events)
            followers = self._make_followers(to_follow, topic_ids, errors, events)
        except _NotLeaderOrFollower as error:
            events.append(str(error))
            return everywhere(NOT_LEADER_OR_FOLLOWER)
        for partition in leaders:
            if partition.topic in COORDINATOR_TOPICS:
                events.append(
                    f"{COORDINATOR_TOPICS[partition.topic]} coordinator: "
                    f"onElection({partition.partition}, {partition.leader_epoch})"
                )
        for partition in followers:
            if partition.topic in COORDINATOR_TOPICS:
                events.append(
                    f"{COORDINATOR_TOPICS[partition.topic]} coordinator: "
                    f"onResignation({partition.partition}, {partition.leader_epoch})"
                )
        return {
            "type": "LeaderAndIsr",
            "errorCode": NONE,
            "events": events,
            "partitionErrors": [
                {"topicName": t, "partitionIndex": p, "errorCode": code} for (t, p), code in errors.items()
            ],
        }

    def _same_epoch(
        self,
        partition: ReplicaPartition,
        state: dict[str, Any],
        request_id: str | None,
        log_id: str | None,
        events: list[str],
    ) -> int:
        """Equal leader epoch from a ZooKeeper controller: only a topic id upgrade/downgrade."""
        if request_id is not None and log_id is None:
            if not partition.has_log:
                raise _NotLeaderOrFollower(f"NotLeaderOrFollowerException: no log for {partition.name}")
            partition.log_topic_id = request_id
            events.append(f"{partition.name}: assign topic id {request_id} to the log")
            return NONE
        if request_id is None and log_id is not None and state["leader"] != self.broker_id:
            events.append(f"{partition.name}: remove topic id {log_id} from the fetch state")
            return NONE
        events.append(f"{partition.name}: leader epoch {state['leaderEpoch']} matches the current one")
        return STALE_CONTROLLER_EPOCH

    def _create_log(self, partition: ReplicaPartition, topic_id: str | None, events: list[str]) -> None:
        if not partition.has_log:
            partition.has_log, partition.log_topic_id = True, topic_id
            events.append(f"create log {partition.name}" + (f" (topic id {topic_id})" if topic_id else ""))

    def _assign(self, partition: ReplicaPartition, state: dict[str, Any]) -> None:
        partition.controller_epoch = state["controllerEpoch"]
        partition.replicas = list(state["replicas"])
        partition.adding_replicas = list(state.get("addingReplicas", []))
        partition.removing_replicas = list(state.get("removingReplicas", []))

    def _make_leaders(
        self,
        queued: list[tuple[ReplicaPartition, dict[str, Any]]],
        topic_ids: dict[str, str],
        errors: dict[tuple[str, int], int],
        events: list[str],
    ) -> list[ReplicaPartition]:
        """makeLeaders: NONE for all, remove fetchers, Partition.makeLeader; the newly led ones."""
        became = []
        for partition, _ in queued:
            errors[(partition.topic, partition.partition)] = NONE
        for partition, _ in queued:
            self._remove_fetcher(partition, events)
        for partition, state in queued:
            if state["partitionEpoch"] < partition.partition_epoch:
                events.append(
                    f"make-leader {partition.name}: skipped, partition epoch {state['partitionEpoch']} < "
                    f"{partition.partition_epoch}"
                )
                continue
            is_new_leader = partition.leader != self.broker_id
            self._assign(partition, state)
            partition.isr = list(state["isr"])
            partition.leader_recovery_state = 0
            self._create_log(partition, topic_ids.get(partition.topic), events)
            partition.leader_epoch = max(partition.leader_epoch, state["leaderEpoch"])
            partition.partition_epoch = state["partitionEpoch"]
            partition.leader = self.broker_id
            events.append(
                f"make-leader {partition.name}: leader epoch {partition.leader_epoch}"
                + (", new leader" if is_new_leader else ", already leader")
            )
            if is_new_leader:
                became.append(partition)
        return became

    def _make_followers(
        self,
        queued: list[tuple[ReplicaPartition, dict[str, Any]]],
        topic_ids: dict[str, str],
        errors: dict[tuple[str, int], int],
        events: list[str],
    ) -> list[ReplicaPartition]:
        """makeFollowers: NONE for all; makeFollower when the leader is alive, else only the log;
        fetchers restarted for those whose leader epoch increased (not while shutting down)."""
        became = []
        for partition, _ in queued:
            errors[(partition.topic, partition.partition)] = NONE
        for partition, state in queued:
            topic_id = topic_ids.get(partition.topic)
            if state["leader"] not in self.alive_brokers:
                events.append(f"{partition.name}: leader {state['leader']} is not alive, only the log is created")
                self._create_log(partition, topic_id, events)
                continue
            if state["partitionEpoch"] < partition.partition_epoch:
                events.append(
                    f"make-follower {partition.name}: skipped, partition epoch {state['partitionEpoch']} "
                    f"< {partition.partition_epoch}"
                )
                continue
            new_epoch = state["leaderEpoch"] > partition.leader_epoch
            partition.leader, partition.leader_epoch = state["leader"], state["leaderEpoch"]
            partition.partition_epoch = state["partitionEpoch"]
            self._assign(partition, state)
            partition.isr = []
            partition.leader_recovery_state = state.get("leaderRecoveryState", 0)
            self._create_log(partition, topic_id, events)
            events.append(
                f"make-follower {partition.name}: leader {partition.leader} at leader epoch "
                f"{partition.leader_epoch}" + ("" if new_epoch else ", epoch not newer")
            )
            if new_epoch:
                became.append(partition)
        for partition in became:
            self._remove_fetcher(partition, events)
        if self.shutting_down:
            events.append(f"shutting down: no fetchers added for {len(became)} partition(s)")
            return became
        for partition in became:
            host, port = self.alive_brokers.get(partition.leader, ("", -1))
            leader = partition.leader if partition.leader in self.alive_brokers else -1
            fid = fetcher_id(partition.topic, partition.partition, self.num_replica_fetchers)
            partition.fetcher = {
                "leader": leader,
                "host": host,
                "port": port,
                "fetcherId": fid,
                "leaderEpoch": partition.leader_epoch,
            }
            events.append(
                f"add-fetcher {partition.name}: from broker {leader} ({host}:{port}) in "
                f"ReplicaFetcherThread-{fid}-{leader} at leader epoch {partition.leader_epoch}"
            )
        return became

    def _remove_fetcher(self, partition: ReplicaPartition, events: list[str]) -> None:
        if partition.fetcher is not None:
            partition.fetcher = None
            events.append(f"remove-fetcher {partition.name}")

    # ------------------------------------------------------------------ StopReplica

    def stop_replicas(self, request: dict[str, Any]) -> dict[str, Any]:
        """KafkaApis.handleStopReplicaRequest + ReplicaManager.stopReplicas."""
        events: list[str] = []
        if self._stale_broker_epoch(request):
            events.append(f"broker epoch {request['brokerEpoch']} is older than {self.broker_epoch}: ignored")
            return {"type": "StopReplica", "errorCode": STALE_BROKER_EPOCH, "partitionErrors": [], "events": events}
        if request["controllerEpoch"] < self.controller_epoch:
            events.append(
                f"controller epoch {request['controllerEpoch']} is older than {self.controller_epoch}: ignored"
            )
            return {"type": "StopReplica", "errorCode": STALE_CONTROLLER_EPOCH, "partitionErrors": [], "events": events}
        self.controller_epoch = request["controllerEpoch"]
        errors: dict[tuple[str, int], int] = {}
        stopped: list[tuple[tuple[str, int], bool, bool]] = []
        states = _stop_replica_states(request)
        for key, epoch, delete in states:
            partition = self.partitions.get(key)
            if partition is not None and partition.offline:
                errors[key] = KAFKA_STORAGE_ERROR
            elif partition is not None:
                if epoch in (EPOCH_DURING_DELETE, NO_EPOCH) or epoch >= partition.leader_epoch:
                    is_leader = partition.leader == self.broker_id
                    stopped.append((key, delete, delete and is_leader and epoch == EPOCH_DURING_DELETE))
                    errors[key] = NONE
                else:
                    errors[key] = FENCED_LEADER_EPOCH
                    events.append(
                        f"{partition.topic}-{partition.partition}: leader epoch {epoch} < current "
                        f"{partition.leader_epoch}"
                    )
            else:
                stopped.append((key, delete, False))
                errors[key] = NONE
        for (topic, index), delete, delete_remote in stopped:
            partition = self.partitions.get((topic, index))
            if partition is not None:
                self._remove_fetcher(partition, events)
            if delete:
                hosted = self.partitions.pop((topic, index), None) is not None
                events.append(
                    f"delete {topic}-{index}: "
                    + ("partition removed, log deleted" if hosted else "not hosted, stray log deleted")
                    + (", remote log deleted" if delete_remote else "")
                )
            else:
                events.append(f"stop {topic}-{index}: fetcher removed, log kept")
        for key, epoch, delete in states:
            if errors[key] == NONE and delete and key[0] in COORDINATOR_TOPICS:
                events.append(
                    f"{COORDINATOR_TOPICS[key[0]]} coordinator: onResignation({key[1]}, "
                    f"{epoch if epoch >= 0 else 'empty'})"
                )
        return {
            "type": "StopReplica",
            "errorCode": NONE,
            "events": events,
            "partitionErrors": [
                {"topicName": t, "partitionIndex": p, "errorCode": code} for (t, p), code in errors.items()
            ],
        }

    def to_json(self) -> dict[str, Any]:
        return {
            "brokerId": self.broker_id,
            "controllerEpoch": self.controller_epoch,
            "partitions": [p.to_json() for _, p in sorted(self.partitions.items())],
        }


def _stop_replica_states(request: dict[str, Any]) -> list[tuple[tuple[str, int], int, bool]]:
    """((topic, partition), leader epoch, deletePartition) per partition: v3+ ``topicStates`` or
    v0-2 ``partitions`` with the request-wide ``deletePartitions`` and no epoch."""
    if "topicStates" in request:
        return [
            ((t["topicName"], p["partitionIndex"]), p.get("leaderEpoch", NO_EPOCH), p.get("deletePartition", False))
            for t in request["topicStates"]
            for p in t["partitionStates"]
        ]
    delete = request.get("deletePartitions", False)
    return [((p["topicName"], p["partitionIndex"]), NO_EPOCH, delete) for p in request.get("partitions", [])]


def replay_requests(document: dict[str, Any]) -> dict[str, Any]:
    """Replay a document's requests in order on a fresh broker: ``{brokerId, responses, broker}``
    (``broker`` = the final state)."""
    broker = ZkBroker.from_json(document)
    responses = [broker.handle(request) for request in document.get("requests", [])]
    return {"brokerId": broker.broker_id, "responses": responses, "broker": broker.to_json()}
