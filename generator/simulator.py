"""A discrete-event simulation of a KRaft cluster's active controller.

Every record is produced the way Kafka 3.9's controller (``ReplicationControlManager``,
``PartitionChangeBuilder``, ``ClusterControlManager``, ``FeatureControlManager``,
``ProducerIdControlManager``, ``ActivationRecordsGenerator``, ``QuorumController``) would produce it,
at metadata.version 3.9-IV0 (level 21), and is replayed into :class:`ClusterState` right away, so
later decisions see exactly the state the log describes.

Time is simulated (ms since the Unix epoch). Top-level *churn events* arrive with a bursty gap
distribution; many schedule *follow-ups* (a crashed broker restarts, registers a new incarnation,
is unfenced, its followers rejoin ISRs; a reassignment's adding replicas catch up; a deleted topic is
re-created...). The controller writes a NoOpRecord every ``noop_interval_ms`` (Kafka's
``metadata.max.idle.interval.ms`` task is periodic, idle or not) and runs the leader-imbalance
check 300 s after leaders moved. After the last churn event the pending follow-ups are drained.

Known differences from a real 3.9 controller (deliberate simplifications):

* Large CreateTopics results (more than ``TXN_RECORD_THRESHOLD`` records, and every ``bulk_create``)
  are written as a metadata transaction ``Begin("CreateTopics") … End`` spread over batches of
  ``TXN_CHUNK`` records; Kafka 3.9/4.0 writes CreateTopics atomically and uses transactions only for
  the bootstrap (and ZK migration). The log shape is one Kafka's loader handles (KIP-868). Aborted
  transactions come from a controller failover in the middle of such a transaction.
* Replica placement is a rack-less striped round robin over active brokers (fenced ones last); all
  brokers have rack null.
* Never generated: unclean elections / leader recovery, ELR, offline log directories, client quotas,
  ACLs, SCRAM credentials, delegation tokens, KRaft voter changes (static quorum, kraft.version 0),
  metadata.version changes.
"""

from __future__ import annotations

import heapq
from bisect import bisect
from collections.abc import Callable
from itertools import accumulate
from typing import Any

from generator.controller import (
    PARTITION_CHANGE_VERSION,
    build_partition_change,
    reassignment_revert,
    reassignment_target,
)
from generator.rng import DetRandom
from generator.state import (
    BROKER_RESOURCE,
    NO_LEADER,
    TOPIC_RESOURCE,
    UNASSIGNED,
    ClusterState,
    Partition,
    Topic,
    random_uuid,
)
from generator.writer import LogWriter

BASE_TIME_MS = 1_735_689_600_000  # 2025-01-01T00:00:00Z
METADATA_VERSION = 21  # 3.9-IV0
REGISTER_BROKER_VERSION = 3
PARTITION_RECORD_VERSION = 1
LEADER_IMBALANCE_CHECK_MS = 300_000  # leader.imbalance.check.interval.seconds
PRODUCER_ID_BLOCK_SIZE = 1000
TXN_RECORD_THRESHOLD = 24  # creations with more records than this are written as a metadata transaction
TXN_CHUNK = 16  # records per batch inside such a transaction
CONTROLLER_IDS = (3000, 3001, 3002)

BROKER_FEATURES = (
    {"name": "metadata.version", "minSupportedVersion": 1, "maxSupportedVersion": METADATA_VERSION},
    {"name": "kraft.version", "minSupportedVersion": 0, "maxSupportedVersion": 1},
    {"name": "transaction.version", "minSupportedVersion": 0, "maxSupportedVersion": 2},
    {"name": "group.version", "minSupportedVersion": 0, "maxSupportedVersion": 1},
)
CONTROLLER_FEATURES = (
    {"name": "metadata.version", "minSupportedVersion": 1, "maxSupportedVersion": METADATA_VERSION},
    {"name": "kraft.version", "minSupportedVersion": 0, "maxSupportedVersion": 1},
)
UPDATABLE_FEATURES = {"group.version": (0, 1), "transaction.version": (0, 1, 2)}

TOPIC_WORDS = (
    "orders",
    "payments",
    "clickstream",
    "inventory",
    "audit",
    "metrics",
    "app-logs",
    "events",
    "sessions",
    "users",
    "shipments",
    "invoices",
    "alerts",
    "telemetry",
    "profiles",
    "search",
)
TOPIC_CONFIGS: dict[str, tuple[str, ...]] = {
    "retention.ms": ("3600000", "86400000", "259200000", "604800000", "-1"),
    "cleanup.policy": ("delete", "compact", "compact,delete"),
    "min.insync.replicas": ("1", "2"),
    "segment.bytes": ("104857600", "268435456", "536870912"),
    "max.message.bytes": ("1048588", "5242880"),
    "compression.type": ("producer", "lz4", "zstd", "snappy"),
    "retention.bytes": ("-1", "1073741824", "10737418240"),
    "message.timestamp.type": ("CreateTime", "LogAppendTime"),
}
BROKER_CONFIGS: dict[str, tuple[str, ...]] = {
    "log.cleaner.threads": ("1", "2", "4"),
    "num.io.threads": ("8", "16", "32"),
    "num.network.threads": ("3", "6", "8"),
    "background.threads": ("10", "20"),
    "log.retention.ms": ("86400000", "604800000"),
    "message.max.bytes": ("1048588", "2097152"),
    "max.connections.per.ip": ("1000", "2000"),
    "log.cleaner.io.max.bytes.per.second": ("1.048576E7", "5.24288E7"),
}

# top-level churn events and their weights
CHURN_KINDS: tuple[tuple[str, float], ...] = (
    ("isr_shrink", 18),
    ("isr_expand", 3),
    ("preferred_election", 5),
    ("reassignment", 7),
    ("broker_crash", 0.3),
    ("controlled_shutdown", 0.3),
    ("broker_decommission", 0.1),
    ("topic_create", 2),
    ("topic_delete", 2),
    ("create_partitions", 0.6),
    ("topic_config", 12),
    ("broker_config", 5),
    ("feature_update", 1),
    ("producer_ids", 8),
    ("raft_election", 0.6),
    ("bulk_create", 0.4),
    ("aborted_transaction", 0.15),
)
FALLBACK_KINDS = ("topic_config", "producer_ids", "broker_config")


class Simulator:
    """Drives the simulation; writes through ``writer``; ``on_snapshot`` is called (at a batch
    boundary, outside any transaction) once the log reaches ``snapshot_at``."""

    def __init__(
        self,
        *,
        seed: int,
        brokers: int,
        topics: int,
        partitions: int,
        churn: int,
        replication_factor: int,
        noop_interval_ms: int,
        writer: LogWriter,
        snapshot_at: int | None = None,
        on_snapshot: Callable[[ClusterState, int, int, int, int], None] | None = None,
    ) -> None:
        self.rng = DetRandom(seed)
        self.n_brokers = brokers
        self.n_topics = topics
        self.n_partitions = partitions
        self.churn = churn
        self.rf = replication_factor
        self.noop_interval = noop_interval_ms
        self.w = writer
        self.state = ClusterState()
        self.snapshot_at = snapshot_at
        self.on_snapshot = on_snapshot
        self.snapshot_taken = False

        self.t = BASE_TIME_MS
        self.heap: list[tuple[int, int, Callable[..., None], tuple[Any, ...], bool]] = []
        self.seq = 0
        self.pending_tasks = 0  # non-periodic tasks in the heap
        self.next_noop: int | None = None
        self.discard = False  # inside a transaction that will be aborted: records are not replayed
        self.raft_epoch = 0
        self.raft_leader = -1
        self.leaders_changed = False
        self.balance_scheduled = False
        self.dir_assign_scheduled: set[int] = set()
        self.unassigned: dict[int, dict[tuple[str, int], None]] = {}  # broker -> partitions (insertion-ordered)
        self.topic_counter = 0
        self.churn_events: dict[str, int] = {}

        self.broker_ids = list(range(1, brokers + 1))
        # stable per-broker facts (log directory ids survive restarts)
        self.broker_dirs: dict[int, list[str]] = {}
        for b in self.broker_ids:
            n_dirs = 2 if b % 3 == 0 else 1  # every third broker runs JBOD with two log dirs
            self.broker_dirs[b] = [random_uuid(self.rng) for _ in range(n_dirs)]
        self.min_active = max(1, min(self.rf, brokers) - 1)
        self._cum_weights = list(accumulate(w for _, w in CHURN_KINDS))
        self._handlers: dict[str, Callable[[], bool]] = {k: getattr(self, "_ev_" + k) for k, _ in CHURN_KINDS}
        writer.on_boundary = self._at_boundary
        writer.on_delta_end = self.state.topic_config_image.end_delta

    # ================================================================== plumbing

    def emit(self, type_name: str, version: int, data: dict[str, Any]) -> int:
        offset = self.w.add(type_name, version, data)
        if not self.discard:
            self.state.replay(type_name, data, offset)
            if type_name == "PARTITION_CHANGE_RECORD" and "leader" in data:
                self.leaders_changed = True
            dirs = data.get("directories")
            if dirs and UNASSIGNED in dirs:  # a JBOD broker will AssignReplicasToDirs
                key = (data["topicId"], data["partitionId"])
                replicas = data.get("replicas") or self.state.topics[key[0]].parts[key[1]].replicas
                for r, d in zip(replicas, dirs):
                    if d == UNASSIGNED:
                        self.unassigned.setdefault(r, {})[key] = None
                        self._schedule_dir_assignment(r)
        return offset

    def begin(self) -> None:
        self.w.begin_op(self.t)

    def end(self) -> None:
        self.w.end_op()
        if self.leaders_changed and not self.balance_scheduled:
            self.balance_scheduled = True
            self.schedule(LEADER_IMBALANCE_CHECK_MS, self._balance_leaders, periodic=True)
        self.leaders_changed = False

    def _at_boundary(self) -> None:
        """The writer is at a batch boundary between operations, outside transactions: the state is
        exactly the replay of every record written so far."""
        if (
            self.snapshot_at is not None
            and not self.snapshot_taken
            and self.state.metadata_version is not None
            and self.w.next_offset >= self.snapshot_at
        ):
            self.take_snapshot()

    def take_snapshot(self) -> None:
        self.w.flush()
        self.snapshot_taken = True
        if self.on_snapshot is not None and self.w.last_timestamp is not None:
            self.on_snapshot(self.state, self.w.next_offset, self.w.epoch, self.w.last_timestamp, self.t)

    def schedule(self, delay_ms: int, fn: Callable[..., None], *args: Any, periodic: bool = False) -> None:
        self.seq += 1
        heapq.heappush(self.heap, (self.t + delay_ms, self.seq, fn, args, periodic))
        if not periodic:
            self.pending_tasks += 1

    def advance_to(self, target: int) -> None:
        """Run NoOps and follow-ups due up to ``target``, in time order, then set the clock to it."""
        heap = self.heap
        while True:
            task_time = heap[0][0] if heap else None
            noop_time = self.next_noop
            if noop_time is not None and noop_time <= target and (task_time is None or noop_time <= task_time):
                self.t = noop_time
                self._write_noop()
                self.next_noop = noop_time + self.noop_interval
            elif task_time is not None and task_time <= target:
                when, _, fn, args, periodic = heapq.heappop(heap)
                if not periodic:
                    self.pending_tasks -= 1
                self.t = when
                fn(*args)
            else:
                break
        self.t = max(self.t, target)

    def drain(self) -> None:
        """Run until no non-periodic follow-up is pending."""
        while self.pending_tasks:
            nxt = min(item[0] for item in self.heap if not item[4])
            self.advance_to(nxt)

    def _write_noop(self) -> None:
        self.w.begin_op(self.t)
        self.w.add_noop()
        self.end()

    def uniform(self, lo: int, hi: int) -> int:
        return self.rng.randint(lo, hi)

    # ================================================================== whole run

    def run(self) -> None:
        self.startup()
        forced = {}
        if self.churn >= 40:
            forced[self.churn // 3] = "bulk_create"
            forced[self.churn // 2] = "aborted_transaction"
        rng = self.rng
        total = self._cum_weights[-1]
        for i in range(self.churn):
            self.advance_to(self.t + self._gap())
            kind = forced.get(i)
            if kind == "aborted_transaction" and self.w.transactions_aborted:
                kind = None
            if kind is None:
                kind = CHURN_KINDS[bisect(self._cum_weights, rng.random() * total)][0]
            done = self._handlers[kind]()
            if not done:
                for fallback in FALLBACK_KINDS:
                    kind = fallback
                    if self._handlers[kind]():
                        break
            self.churn_events[kind] = self.churn_events.get(kind, 0) + 1
        self.drain()

    def _gap(self) -> int:
        rng = self.rng
        if rng.random() < 0.75:
            return int(rng.expovariate(1 / 250))  # bursts of activity
        return rng.randint(800, 4000)  # quieter stretches

    # ================================================================== startup

    def startup(self) -> None:
        self._raft_election(initial=True)
        self.t += self.uniform(5, 40)
        # ActivationRecordsGenerator.recordsForEmptyLog at an MV with metadata transactions
        self.begin()
        self.emit("BEGIN_TRANSACTION_RECORD", 0, {"name": "Bootstrap records"})
        self.emit("FEATURE_LEVEL_RECORD", 0, {"name": "metadata.version", "featureLevel": METADATA_VERSION})
        self.emit("ZK_MIGRATION_STATE_RECORD", 0, {"zkMigrationState": 0})
        self.emit("END_TRANSACTION_RECORD", 0, {})
        self.end()
        if self.noop_interval > 0:
            self.next_noop = self.t + self.noop_interval
        for cid in CONTROLLER_IDS:
            self.schedule(self.uniform(30, 600), self._register_controller, cid)
        for b in self.broker_ids:
            self.schedule(self.uniform(800, 3500), self._register_broker, b)
        self.drain()
        # the initial topics, in CreateTopics requests of a few topics each
        names = [self._new_topic_name() for _ in range(self.n_topics)]
        i = 0
        while i < len(names):
            n = self.uniform(1, 6)
            self.advance_to(self.t + self.uniform(20, 600))
            self._create_topics([(name, self.n_partitions, self._creation_configs()) for name in names[i : i + n]])
            i += n

    def _register_controller(self, cid: int) -> None:
        self.begin()
        self.emit(
            "REGISTER_CONTROLLER_RECORD",
            0,
            {
                "controllerId": cid,
                "incarnationId": random_uuid(self.rng),
                "zkMigrationReady": False,
                "endPoints": [
                    {
                        "name": "CONTROLLER",
                        "host": f"controller-{cid - CONTROLLER_IDS[0]}.kafka.internal",
                        "port": 9093,
                        "securityProtocol": 0,
                    }
                ],
                "features": [dict(f) for f in CONTROLLER_FEATURES],
            },
        )
        self.end()

    # ================================================================== broker lifecycle

    def _register_broker(self, b: int) -> None:
        """A new incarnation registers (fenced); its epoch is the offset of the registration record."""
        current = self.state.brokers.get(b)
        if current is not None and not current.fenced:
            return  # still alive: a new incarnation could not register (duplicate registration)
        self.begin()
        epoch = self.w.next_offset
        self.emit(
            "REGISTER_BROKER_RECORD",
            REGISTER_BROKER_VERSION,
            {
                "brokerId": b,
                "isMigratingZkBroker": False,
                "incarnationId": random_uuid(self.rng),
                "brokerEpoch": epoch,
                "endPoints": [
                    {"name": "PLAINTEXT", "host": f"broker-{b}.kafka.internal", "port": 9092, "securityProtocol": 0},
                    {"name": "SSL", "host": f"broker-{b}.kafka.internal", "port": 9094, "securityProtocol": 1},
                ],
                "features": [dict(f) for f in BROKER_FEATURES],
                "rack": None,
                "fenced": True,
                "inControlledShutdown": False,
                "logDirs": list(self.broker_dirs[b]),
            },
        )
        self.end()
        self.schedule(self.uniform(600, 3000), self._unfence, b, epoch)

    def _unfence(self, b: int, epoch: int) -> None:
        """Heartbeat of a caught-up broker: ``handleBrokerUnfenced``."""
        br = self.state.brokers.get(b)
        if br is None or br.epoch != epoch or not br.fenced:
            return
        self.begin()
        self.emit("BROKER_REGISTRATION_CHANGE_RECORD", 0, {"brokerId": b, "brokerEpoch": epoch, "fenced": -1})
        elected: list[tuple[Topic, int, Partition]] = []
        for topic in self.state.topics.values():
            for pid, part in enumerate(topic.parts):
                if part.leader == NO_LEADER:
                    rec = build_partition_change(self.state, topic.id, pid, part)
                    if rec is not None:
                        self.emit("PARTITION_CHANGE_RECORD", PARTITION_CHANGE_VERSION, rec)
                        elected.append((topic, pid, part))
        self.end()
        # followers fetch again and rejoin the ISRs: AlterPartition from each leader
        by_leader: dict[int, list[tuple[str, int, int]]] = {}
        for topic in self.state.topics.values():
            for pid, part in enumerate(topic.parts):
                if b in part.replicas and b not in part.isr and part.leader >= 0:
                    by_leader.setdefault(part.leader, []).append((topic.id, pid, b))
        for topic, pid, part in elected:  # partitions back online: their other followers catch up too
            for r in part.replicas:
                if r != b and r not in part.isr and self.state.is_active(r):
                    by_leader.setdefault(part.leader, []).append((topic.id, pid, r))
        for leader in sorted(by_leader):
            self.schedule(self.uniform(1000, 25_000), self._alter_partition_expand, by_leader[leader])
        if b in self.unassigned:
            self._schedule_dir_assignment(b)

    def _fence(self, b: int) -> None:
        """``handleBrokerFenced`` as one operation: drop ``b`` from every ISR (electing new leaders), then fence it."""
        self.begin()
        self._drop_from_isrs(b)
        self.emit(
            "BROKER_REGISTRATION_CHANGE_RECORD",
            0,
            {"brokerId": b, "brokerEpoch": self.state.brokers[b].epoch, "fenced": 1},
        )
        self.end()

    def _drop_from_isrs(self, b: int) -> None:
        """``generateLeaderAndIsrUpdates`` for a broker going away: ``b`` leaves every ISR it is in,
        and partitions it led elect a new leader among the other active replicas."""

        def acceptable(r: int) -> bool:
            return r != b and self.state.is_active(r)

        for topic in self.state.topics.values():
            for pid, part in enumerate(topic.parts):
                if b in part.isr:
                    rec = build_partition_change(
                        self.state,
                        topic.id,
                        pid,
                        part,
                        acceptable=acceptable,
                        target_isr=[r for r in part.isr if r != b],
                    )
                    if rec is not None:
                        self.emit("PARTITION_CHANGE_RECORD", PARTITION_CHANGE_VERSION, rec)

    def _active_brokers(self) -> list[int]:
        return [b for b in self.broker_ids if self.state.is_active(b)]

    def _pick_broker_to_stop(self) -> int | None:
        active = self._active_brokers()
        if len(active) - 1 < self.min_active:
            return None
        return self.rng.choice(active)

    def _ev_broker_crash(self) -> bool:
        """The broker's session times out (``maybeFenceOneStaleBroker``); it restarts later."""
        b = self._pick_broker_to_stop()
        if b is None:
            return False
        self._fence(b)
        self.schedule(self.uniform(10_000, 60_000), self._register_broker, b)
        return True

    def _ev_controlled_shutdown(self) -> bool:
        """``handleBrokerInControlledShutdown``, then SHUTDOWN_NOW once it leads nothing, then a restart."""
        b = self._pick_broker_to_stop()
        if b is None:
            return False
        br = self.state.brokers[b]
        self.begin()
        self.emit(
            "BROKER_REGISTRATION_CHANGE_RECORD", 1, {"brokerId": b, "brokerEpoch": br.epoch, "inControlledShutdown": 1}
        )
        self._drop_from_isrs(b)
        self.end()
        self.schedule(self.uniform(300, 4000), self._shutdown_now, b, br.epoch)
        return True

    def _shutdown_now(self, b: int, epoch: int) -> None:
        br = self.state.brokers.get(b)
        if br is None or br.epoch != epoch or br.fenced or not br.in_cs:
            return
        self._fence(b)
        self.schedule(self.uniform(5000, 90_000), self._register_broker, b)

    def _ev_broker_decommission(self) -> bool:
        """A broker dies, an operator unregisters it; later it comes back as a new incarnation."""
        b = self._pick_broker_to_stop()
        if b is None:
            return False
        self._fence(b)
        self.schedule(self.uniform(5000, 30_000), self._unregister, b, self.state.brokers[b].epoch)
        return True

    def _unregister(self, b: int, epoch: int) -> None:
        """``handleBrokerUnregistered``."""
        br = self.state.brokers.get(b)
        if br is None or br.epoch != epoch or not br.fenced:
            return
        self.begin()
        self._drop_from_isrs(b)
        self.emit("UNREGISTER_BROKER_RECORD", 0, {"brokerId": b, "brokerEpoch": epoch})
        self.end()
        self.schedule(self.uniform(20_000, 180_000), self._register_broker, b)

    # ================================================================== ISR and leadership

    def _random_partition(
        self, predicate: Callable[[Partition], bool], tries: int = 40
    ) -> tuple[Topic, int, Partition] | None:
        topics = self.state.topics
        if not topics:
            return None
        ids = list(topics)
        rng = self.rng
        for _ in range(tries):
            topic = topics[ids[rng.randrange(len(ids))]]
            if not topic.parts:
                continue
            pid = rng.randrange(len(topic.parts))
            part = topic.parts[pid]
            if predicate(part):
                return topic, pid, part
        return None

    def _ev_isr_shrink(self) -> bool:
        """A follower falls behind: its leader's AlterPartition shrinks the ISR; it catches up later."""
        found = self._random_partition(lambda p: p.leader >= 0 and len(p.isr) >= 2)
        if found is None:
            return False
        topic, pid, part = found
        follower = self.rng.choice([r for r in part.isr if r != part.leader])
        rec = build_partition_change(self.state, topic.id, pid, part, target_isr=[r for r in part.isr if r != follower])
        if rec is None:
            return False
        self.begin()
        self.emit("PARTITION_CHANGE_RECORD", PARTITION_CHANGE_VERSION, rec)
        self.end()
        self.schedule(self.uniform(2000, 60_000), self._alter_partition_expand, [(topic.id, pid, follower)])
        return True

    def _ev_isr_expand(self) -> bool:
        state = self.state
        found = self._random_partition(
            lambda p: p.leader >= 0 and any(r not in p.isr and state.is_active(r) for r in p.replicas)
        )
        if found is None:
            return False
        topic, pid, part = found
        follower = next(r for r in part.replicas if r not in part.isr and state.is_active(r))
        return self._alter_partition_expand([(topic.id, pid, follower)])

    def _alter_partition_expand(self, items: list[tuple[str, int, int]]) -> bool:
        """AlterPartition from the current leader adding caught-up followers to the ISR."""
        state = self.state
        wrote = False
        self.begin()
        for topic_id, pid, follower in items:
            topic = state.topics.get(topic_id)
            if topic is None or pid >= len(topic.parts):
                continue
            part = topic.parts[pid]
            if part.leader < 0 or not state.is_active(part.leader):
                continue
            if follower not in part.replicas or follower in part.isr or not state.is_active(follower):
                continue
            rec = build_partition_change(state, topic_id, pid, part, target_isr=part.isr + [follower])
            if rec is not None:
                self.emit("PARTITION_CHANGE_RECORD", PARTITION_CHANGE_VERSION, rec)
                wrote = True
        self.end()
        return wrote

    def _ev_preferred_election(self) -> bool:
        """kafka-leader-election --election-type PREFERRED for a few partitions."""
        state = self.state
        wrote = False
        self.begin()
        for _ in range(self.uniform(1, 3)):
            found = self._random_partition(
                lambda p: p.leader != p.replicas[0] and p.replicas[0] in p.isr and state.is_active(p.replicas[0])
            )
            if found is None:
                break
            topic, pid, part = found
            rec = build_partition_change(state, topic.id, pid, part, preferred=True)
            if rec is not None:
                self.emit("PARTITION_CHANGE_RECORD", PARTITION_CHANGE_VERSION, rec)
                wrote = True
        self.end()
        return wrote

    def _balance_leaders(self) -> None:
        """``maybeBalancePartitionLeaders`` (auto.leader.rebalance.enable)."""
        self.balance_scheduled = False
        count = 0
        self.begin()
        for topic in self.state.topics.values():
            for pid, part in enumerate(topic.parts):
                if part.leader != part.replicas[0] and count < 1000:
                    rec = build_partition_change(self.state, topic.id, pid, part, preferred=True)
                    if rec is not None:
                        self.emit("PARTITION_CHANGE_RECORD", PARTITION_CHANGE_VERSION, rec)
                        count += 1
        self.end()

    # ================================================================== reassignment

    def _ev_reassignment(self) -> bool:
        """alterPartitionReassignments: replicas + adding/removing first; completion once the ISR catches up."""
        state = self.state
        rng = self.rng
        found = self._random_partition(lambda p: p.leader >= 0 and not p.adding and not p.removing)
        if found is None:
            return False
        topic, pid, part = found
        registered = sorted(state.brokers)
        candidates = [b for b in registered if b not in part.replicas]
        target = list(part.replicas)
        if candidates and rng.random() < 0.85:
            active_candidates = [b for b in candidates if state.is_active(b)] or candidates
            n_replace = 2 if rng.random() < 0.2 and len(active_candidates) >= 2 and len(target) >= 2 else 1
            new = rng.sample(active_candidates, n_replace)
            for slot, broker in zip(rng.sample(range(len(target)), n_replace), new):
                target[slot] = broker
        else:
            rng.shuffle(target)
        if target == part.replicas:
            return False
        replicas, removing, adding = reassignment_target(part.replicas, target)
        rec = build_partition_change(
            state,
            topic.id,
            pid,
            part,
            target_replicas=replicas,
            target_removing=removing or None,
            target_adding=adding or None,
        )
        if rec is None:
            return False
        self.begin()
        self.emit("PARTITION_CHANGE_RECORD", PARTITION_CHANGE_VERSION, rec)
        self.end()
        if part.adding or part.removing:
            self.schedule(self.uniform(3000, 60_000), self._reassignment_progress, topic.id, pid, 6)
        return True

    def _reassignment_progress(self, topic_id: str, pid: int, tries: int) -> None:
        state = self.state
        topic = state.topics.get(topic_id)
        if topic is None or pid >= len(topic.parts):
            return
        part = topic.parts[pid]
        if not part.adding and not part.removing:
            return
        lagging = [r for r in part.replicas if r not in part.removing and r not in part.isr]
        if part.leader >= 0 and state.is_active(part.leader):
            caught_up = [r for r in lagging if state.is_active(r)]
            if caught_up:
                if len(caught_up) > 1 and self.rng.random() < 0.5:
                    caught_up = caught_up[:1]
                rec = build_partition_change(state, topic_id, pid, part, target_isr=part.isr + caught_up)
                if rec is not None:
                    self.begin()
                    self.emit("PARTITION_CHANGE_RECORD", PARTITION_CHANGE_VERSION, rec)
                    self.end()
                if part.adding or part.removing:
                    self.schedule(self.uniform(2000, 30_000), self._reassignment_progress, topic_id, pid, tries)
                return
        if tries <= 0:
            # the operator gives up: cancelPartitionReassignment
            revert = reassignment_revert(part)
            if revert is not None:
                rec = build_partition_change(
                    state,
                    topic_id,
                    pid,
                    part,
                    target_isr=revert[1],
                    target_replicas=revert[0],
                    target_removing=[],
                    target_adding=[],
                )
                if rec is not None:
                    self.begin()
                    self.emit("PARTITION_CHANGE_RECORD", PARTITION_CHANGE_VERSION, rec)
                    self.end()
            return
        self.schedule(self.uniform(5000, 60_000), self._reassignment_progress, topic_id, pid, tries - 1)

    # ================================================================== JBOD directories

    def _schedule_dir_assignment(self, b: int) -> None:
        if b in self.dir_assign_scheduled or b not in self.state.brokers:
            return
        self.dir_assign_scheduled.add(b)
        self.schedule(self.uniform(200, 3000), self._assign_dirs, b, self.state.brokers[b].epoch)

    def _assign_dirs(self, b: int, epoch: int) -> None:
        """AssignReplicasToDirs from a JBOD broker for its replicas still UNASSIGNED."""
        self.dir_assign_scheduled.discard(b)
        br = self.state.brokers.get(b)
        if br is None or br.epoch != epoch or br.fenced or len(br.dirs) < 2:
            return  # a later registration / unfencing schedules it again
        todo = self.unassigned.pop(b, {})
        self.begin()
        for topic_id, pid in todo:
            topic = self.state.topics.get(topic_id)
            if topic is None or pid >= len(topic.parts):
                continue
            part = topic.parts[pid]
            if part.directory(b) == UNASSIGNED:
                rec = build_partition_change(self.state, topic_id, pid, part, directory=(b, self.rng.choice(br.dirs)))
                if rec is not None:
                    self.emit("PARTITION_CHANGE_RECORD", PARTITION_CHANGE_VERSION, rec)
        self.end()

    # ================================================================== topics

    def _new_topic_name(self) -> str:
        self.topic_counter += 1
        return f"{TOPIC_WORDS[self.rng.randrange(len(TOPIC_WORDS))]}-{self.topic_counter:04d}"

    def _creation_configs(self) -> dict[str, str]:
        rng = self.rng
        if rng.random() >= 0.3:
            return {}
        keys = rng.sample(sorted(TOPIC_CONFIGS), rng.randint(1, 2))
        return {k: rng.choice(TOPIC_CONFIGS[k]) for k in keys}

    def _place(self, n_parts: int, rf: int) -> list[list[int]] | None:
        """A striped placement preferring active brokers (the leader slot always gets an active one)."""
        state = self.state
        active = [b for b in sorted(state.brokers) if state.is_active(b)]
        others = [b for b in sorted(state.brokers) if not state.is_active(b)]
        if not active or len(active) + len(others) < rf:
            return None
        rng = self.rng
        start = rng.randrange(len(active))
        start2 = rng.randrange(len(others)) if others else 0
        n_active = min(rf, len(active))
        out = []
        for i in range(n_parts):
            reps = [active[(start + i + j) % len(active)] for j in range(n_active)]
            reps += [others[(start2 + i + j) % len(others)] for j in range(rf - n_active)]
            out.append(reps)
        return out

    def _partition_record(self, topic_id: str, pid: int, replicas: list[int]) -> dict[str, Any]:
        state = self.state
        isr = [r for r in replicas if state.is_active(r)]
        return {
            "partitionId": pid,
            "topicId": topic_id,
            "replicas": replicas,
            "isr": isr,
            "removingReplicas": [],
            "addingReplicas": [],
            "leader": isr[0],
            "leaderEpoch": 0,
            "partitionEpoch": 0,
            "directories": [state.default_dir(r) for r in replicas],
        }

    def _create_topics(
        self, specs: list[tuple[str, int, dict[str, str]]], *, transaction: bool | None = None, abort: bool = False
    ) -> int:
        """``createTopics``: TopicRecord, its ConfigRecords, its PartitionRecords, per topic; written
        as a metadata transaction (in batches of ``TXN_CHUNK``) when large. Returns topics created."""
        planned = []
        for name, n_parts, configs in specs:
            if name in self.state.topics_by_name:
                continue
            placement = self._place(n_parts, self.rf)
            if placement is None:
                continue
            planned.append((name, configs, placement))
        if not planned:
            return 0
        n_records = sum(1 + len(c) + len(p) for _, c, p in planned)
        if transaction is None:
            transaction = n_records > TXN_RECORD_THRESHOLD
        self.begin()
        if transaction:
            self.emit("BEGIN_TRANSACTION_RECORD", 0, {"name": "CreateTopics"})
        for name, configs, placement in planned:
            topic_id = random_uuid(self.rng)
            self._txn_emit(transaction, "TOPIC_RECORD", 0, {"name": name, "topicId": topic_id})
            for key, value in configs.items():
                self._txn_emit(
                    transaction,
                    "CONFIG_RECORD",
                    0,
                    {"resourceType": TOPIC_RESOURCE, "resourceName": name, "name": key, "value": value},
                )
            for pid, replicas in enumerate(placement):
                rec = self._partition_record(topic_id, pid, replicas)
                self._txn_emit(transaction, "PARTITION_RECORD", PARTITION_RECORD_VERSION, rec)
        if abort:
            return len(planned)  # the caller fails the controller over before End
        if transaction:
            self.emit("END_TRANSACTION_RECORD", 0, {})
        self.end()
        return len(planned)

    def _txn_emit(self, transaction: bool, type_name: str, version: int, data: dict[str, Any]) -> None:
        if transaction and self.w.pending_count >= TXN_CHUNK:
            self.w.flush()
        self.emit(type_name, version, data)

    def _topic_population(self) -> int:
        """-1: too many topics (create nothing), 1: too few (delete nothing), 0: either is fine."""
        live, target = len(self.state.topics), self.n_topics
        if live >= max(target * 5 // 4, target + 3):
            return -1
        if live <= target * 3 // 4:
            return 1
        return 0

    def _ev_topic_create(self) -> bool:
        if self._topic_population() < 0:
            return self._ev_topic_delete()
        n_parts = max(1, self.uniform(max(1, self.n_partitions // 2), max(1, self.n_partitions * 2)))
        return self._create_topics([(self._new_topic_name(), n_parts, self._creation_configs())]) > 0

    def _ev_bulk_create(self) -> bool:
        """A large CreateTopics request, written as a committed metadata transaction."""
        if self._topic_population() < 0:
            return False
        specs = [
            (self._new_topic_name(), max(1, self.n_partitions), self._creation_configs())
            for _ in range(self.uniform(3, 6))
        ]
        return self._create_topics(specs, transaction=True) > 0

    def _ev_aborted_transaction(self) -> bool:
        """A big creation inside a metadata transaction; the active controller dies before End. The
        new leader aborts the transaction (``recordsForNonEmptyLog``: AbortTransaction "Controller failover")."""
        specs = [
            (self._new_topic_name(), max(1, self.n_partitions), self._creation_configs())
            for _ in range(self.uniform(2, 4))
        ]
        self.discard = True
        try:
            created = self._create_topics(specs, transaction=True, abort=True)
        finally:
            self.discard = False
        if not created:
            return False
        self._raft_election()
        self.w.begin_op(self.t)
        self.emit("ABORT_TRANSACTION_RECORD", 0, {"reason": "Controller failover"})
        self.end()
        return True

    def _ev_topic_delete(self) -> bool:
        topics = self.state.topics
        if not topics or self._topic_population() > 0:
            return False
        topic = topics[list(topics)[self.rng.randrange(len(topics))]]
        name, n_parts = topic.name, len(topic.parts)
        self.begin()
        self.emit("REMOVE_TOPIC_RECORD", 0, {"topicId": topic.id})
        self.end()
        if self.rng.random() < 0.6:  # re-created under the same name (a new topic id)
            self.schedule(self.uniform(5000, 120_000), self._recreate_topic, name, n_parts)
        return True

    def _recreate_topic(self, name: str, n_parts: int) -> None:
        if self._topic_population() < 0:
            return
        self._create_topics([(name, n_parts, self._creation_configs())])

    def _ev_create_partitions(self) -> bool:
        topics = self.state.topics
        if not topics:
            return False
        topic = topics[list(topics)[self.rng.randrange(len(topics))]]
        if not topic.parts:
            return False
        placement = self._place(self.uniform(1, 3), len(topic.parts[0].replicas))
        if placement is None:
            return False
        start = len(topic.parts)
        self.begin()
        for i, replicas in enumerate(placement):
            rec = self._partition_record(topic.id, start + i, replicas)
            self.emit("PARTITION_RECORD", PARTITION_RECORD_VERSION, rec)
        self.end()
        return True

    # ================================================================== configs, features, producer ids

    def _ev_topic_config(self) -> bool:
        """incrementalAlterConfigs on a topic: SET writes only changed values; DELETE of an existing key."""
        topics = self.state.topics
        if not topics:
            return False
        rng = self.rng
        topic = topics[list(topics)[rng.randrange(len(topics))]]
        current = self.state.configs.get((TOPIC_RESOURCE, topic.name), {})
        records = []
        if current and rng.random() < 0.3:
            key = rng.choice(sorted(current))
            records.append({"resourceType": TOPIC_RESOURCE, "resourceName": topic.name, "name": key, "value": None})
        else:
            for key in rng.sample(sorted(TOPIC_CONFIGS), rng.randint(1, 2)):
                value = rng.choice(TOPIC_CONFIGS[key])
                if current.get(key) != value:
                    records.append(
                        {"resourceType": TOPIC_RESOURCE, "resourceName": topic.name, "name": key, "value": value}
                    )
        if not records:
            return False
        self.begin()
        for rec in records:
            self.emit("CONFIG_RECORD", 0, rec)
        self.end()
        return True

    def _ev_broker_config(self) -> bool:
        """Dynamic broker config, per broker or cluster default (""); BROKER records are always written."""
        rng = self.rng
        registered = sorted(self.state.brokers)
        name = "" if not registered or rng.random() < 0.25 else str(rng.choice(registered))
        current = self.state.configs.get((BROKER_RESOURCE, name), {})
        self.begin()
        if current and rng.random() < 0.35:
            self.emit(
                "CONFIG_RECORD",
                0,
                {
                    "resourceType": BROKER_RESOURCE,
                    "resourceName": name,
                    "name": rng.choice(sorted(current)),
                    "value": None,
                },
            )
        else:
            for key in rng.sample(sorted(BROKER_CONFIGS), rng.randint(1, 2)):
                self.emit(
                    "CONFIG_RECORD",
                    0,
                    {
                        "resourceType": BROKER_RESOURCE,
                        "resourceName": name,
                        "name": key,
                        "value": rng.choice(BROKER_CONFIGS[key]),
                    },
                )
        self.end()
        return True

    def _ev_feature_update(self) -> bool:
        """UpdateFeatures for a non-metadata.version feature (level 0 removes it)."""
        rng = self.rng
        name = rng.choice(sorted(UPDATABLE_FEATURES))
        current = self.state.features.get(name, 0)
        level = rng.choice([v for v in UPDATABLE_FEATURES[name] if v != current])
        for br in self.state.brokers.values():  # every registered broker must support the level
            supported = next((f for f in br.features if f["name"] == name), None)
            if level and (
                supported is None or not supported["minSupportedVersion"] <= level <= supported["maxSupportedVersion"]
            ):
                return False
        self.begin()
        self.emit("FEATURE_LEVEL_RECORD", 0, {"name": name, "featureLevel": level})
        self.end()
        return True

    def _ev_producer_ids(self) -> bool:
        """AllocateProducerIds from an active broker (blocks of 1000)."""
        active = self._active_brokers()
        if not active:
            return False
        b = self.rng.choice(active)
        first = max(self.state.next_producer_id, 0)
        self.begin()
        self.emit(
            "PRODUCER_IDS_RECORD",
            0,
            {
                "brokerId": b,
                "brokerEpoch": self.state.brokers[b].epoch,
                "nextProducerId": first + PRODUCER_ID_BLOCK_SIZE,
            },
        )
        self.end()
        return True

    # ================================================================== raft

    def _raft_election(self, initial: bool = False) -> None:
        """A new quorum leader: LEADER_CHANGE control batch opening the new epoch."""
        rng = self.rng
        if initial:
            leader = rng.choice(CONTROLLER_IDS)
            epoch = 1
        else:
            leader = rng.choice([c for c in CONTROLLER_IDS if c != self.raft_leader])
            epoch = self.raft_epoch + (2 if rng.random() < 0.15 else 1)  # sometimes a round without a winner
        others = [c for c in CONTROLLER_IDS if c != leader]
        majority = len(CONTROLLER_IDS) // 2 + 1
        granting = sorted([leader] + rng.sample(others, rng.randint(majority - 1, len(others))))
        self.raft_epoch = epoch
        self.raft_leader = leader
        self.w.set_epoch(epoch)
        self.w.control(
            self.t,
            "LEADER_CHANGE",
            {
                "version": 0,
                "leaderId": leader,
                "voters": [{"voterId": c} for c in CONTROLLER_IDS],
                "grantingVoters": [{"voterId": c} for c in granting],
            },
        )
        if self.noop_interval > 0 and not initial:
            self.next_noop = self.t + self.noop_interval  # the new active controller's NoOp timer

    def _ev_raft_election(self) -> bool:
        self._raft_election()
        return True
