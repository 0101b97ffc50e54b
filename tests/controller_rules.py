"""An independent checker of Kafka controller rules over a metadata record stream.

It keeps its own bookkeeping (it shares no code with the simulator) and replays records given as
``(offset, epoch, batch_timestamp, type_or_control_type, version, data, is_control)`` — the shape of
``generate(record_sink=...)`` — or decoded from files by any reader. Records inside a metadata
transaction are held back and applied at its End (dropped at its Abort), as the batch loader makes
them visible. Violations are collected as strings in :attr:`violations`.

Per record it checks what the controller guarantees for each record it writes; at operation
boundaries (a change of batch timestamp, outside transactions) it checks the partition invariants:
``leader in ISR``, ``ISR ⊆ replicas``, only active (unfenced, not shutting down) brokers lead, and
leader -1 only when no ISR member is active.
"""

from __future__ import annotations

from typing import Any

from image.uuids import MIGRATING, UNASSIGNED

EXPECTED_METADATA_VERSION = 21


class _Broker:
    __slots__ = ("dirs", "epoch", "features", "fenced", "in_cs", "incarnation")

    def __init__(self, data: dict[str, Any]) -> None:
        self.epoch = data["brokerEpoch"]
        self.incarnation = data["incarnationId"]
        self.fenced = data.get("fenced", True)
        self.in_cs = data.get("inControlledShutdown", False)
        self.dirs = list(data.get("logDirs", []))
        self.features = {
            f["name"]: (f["minSupportedVersion"], f["maxSupportedVersion"]) for f in data.get("features", [])
        }


class _Part:
    __slots__ = ("adding", "dirs", "isr", "leader", "leader_epoch", "partition_epoch", "removing", "replicas")


class ControllerRuleChecker:
    """Feed records in log order with :meth:`feed`; call :meth:`finish` at the end."""

    def __init__(self, *, max_violations: int = 50) -> None:
        self.violations: list[str] = []
        self.max_violations = max_violations
        self.next_offset = 0
        self.epoch = 0
        self.last_ts: int | None = None
        self.voters: set[int] = set()
        self.brokers: dict[int, _Broker] = {}
        self.past_incarnations: dict[int, str] = {}
        self.topics: dict[str, tuple[str, list[_Part]]] = {}  # id -> (name, partitions)
        self.names: dict[str, str] = {}
        self.seen_topic_ids: set[str] = set()
        self.configs: dict[tuple[int, str], dict[str, str]] = {}
        self.metadata_version: int | None = None
        self.next_producer_id = 0
        self.data_records = 0
        self.in_txn = False
        self.txn_buffer: list[tuple[int, str, int, dict[str, Any]]] = []
        self.dirty: set[tuple[str, int]] = set()
        self.all_dirty = False
        self.checkpoints = 0
        self.counts: dict[str, int] = {}

    # ------------------------------------------------------------------ driver

    def fail(self, offset: int, message: str) -> None:
        if len(self.violations) < self.max_violations:
            self.violations.append(f"offset {offset}: {message}")

    def feed(
        self,
        offset: int,
        epoch: int,
        timestamp: int,
        type_name: str,
        version: int,
        data: dict[str, Any],
        is_control: bool,
    ) -> None:
        if offset != self.next_offset:
            self.fail(offset, f"offset not consecutive (expected {self.next_offset})")
        self.next_offset = offset + 1
        if self.last_ts is not None and timestamp != self.last_ts and not self.in_txn:
            self.checkpoint()
        if self.last_ts is not None and timestamp < self.last_ts:
            self.fail(offset, f"timestamp went back from {self.last_ts} to {timestamp}")
        self.last_ts = timestamp
        self.counts[type_name] = self.counts.get(type_name, 0) + 1
        if epoch < self.epoch:
            self.fail(offset, f"epoch went back from {self.epoch} to {epoch}")
        if epoch != self.epoch and not (is_control and type_name == "LEADER_CHANGE"):
            self.fail(offset, f"epoch {epoch} does not start with a LEADER_CHANGE")
        if is_control:
            self._control(offset, epoch, type_name, data)
            return
        self.epoch = epoch
        self.data_records += 1
        if self.data_records == 1 and (
            type_name != "BEGIN_TRANSACTION_RECORD" or data.get("name") != "Bootstrap records"
        ):
            self.fail(offset, "the log does not start with the bootstrap transaction")
        if self.data_records == 2 and (type_name != "FEATURE_LEVEL_RECORD" or data.get("name") != "metadata.version"):
            self.fail(offset, "metadata.version is not the first bootstrap record")
        if type_name == "BEGIN_TRANSACTION_RECORD":
            if self.in_txn:
                self.fail(offset, "BeginTransaction inside a transaction")
            self.in_txn = True
            self.txn_buffer = []
        elif type_name == "END_TRANSACTION_RECORD":
            if not self.in_txn:
                self.fail(offset, "EndTransaction without a transaction")
            self.in_txn = False
            for item in self.txn_buffer:
                self._apply(*item)
            self.txn_buffer = []
        elif type_name == "ABORT_TRANSACTION_RECORD":
            if not self.in_txn:
                self.fail(offset, "AbortTransaction without a transaction")
            self.in_txn = False
            self.txn_buffer = []
        elif self.in_txn:
            self.txn_buffer.append((offset, type_name, version, data))
        else:
            self._apply(offset, type_name, version, data)

    def finish(self) -> list[str]:
        if self.in_txn:
            self.fail(self.next_offset, "the log ends inside a metadata transaction")
        else:
            self.checkpoint()
        return self.violations

    # ------------------------------------------------------------------ records

    def _control(self, offset: int, epoch: int, type_name: str, data: dict[str, Any]) -> None:
        if type_name != "LEADER_CHANGE":
            self.fail(offset, f"unexpected control record {type_name} in the log")
            return
        if epoch <= self.epoch:
            self.fail(offset, f"LEADER_CHANGE does not open a new epoch ({epoch} after {self.epoch})")
        self.epoch = epoch
        voters = {v["voterId"] for v in data["voters"]}
        granting = {v["voterId"] for v in data["grantingVoters"]}
        if self.voters and voters != self.voters:
            self.fail(offset, "the voter set changed")
        self.voters = voters
        if data["leaderId"] not in voters or data["leaderId"] not in granting:
            self.fail(offset, "the new leader is not a granting voter")
        if not granting <= voters or len(granting) * 2 <= len(voters):
            self.fail(offset, "the granting voters are not a majority of the voters")

    def _active(self, b: int) -> bool:
        br = self.brokers.get(b)
        return br is not None and not br.fenced and not br.in_cs

    def _apply(self, offset: int, type_name: str, version: int, data: dict[str, Any]) -> None:
        handler = getattr(self, "_r_" + type_name.lower(), None)
        if handler is None:
            if type_name not in ("NO_OP_RECORD",):
                self.fail(offset, f"unexpected record type {type_name}")
            return
        handler(offset, version, data)

    def _r_feature_level_record(self, offset: int, version: int, data: dict[str, Any]) -> None:
        name, level = data["name"], data["featureLevel"]
        if name == "metadata.version":
            if self.metadata_version is not None:
                self.fail(offset, "metadata.version changed after the bootstrap")
            if level != EXPECTED_METADATA_VERSION:
                self.fail(offset, f"metadata.version {level}")
            self.metadata_version = level
            return
        for b, br in self.brokers.items():
            lo, hi = br.features.get(name, (0, 0))
            if level and not lo <= level <= hi:
                self.fail(offset, f"{name}={level} is not supported by broker {b}")

    def _r_zk_migration_state_record(self, offset: int, version: int, data: dict[str, Any]) -> None:
        if self.data_records > 4:
            self.fail(offset, "ZkMigrationStateRecord outside the bootstrap")

    def _r_register_controller_record(self, offset: int, version: int, data: dict[str, Any]) -> None:
        if data["controllerId"] not in self.voters:
            self.fail(offset, f"controller {data['controllerId']} is not a voter")

    def _r_register_broker_record(self, offset: int, version: int, data: dict[str, Any]) -> None:
        b = data["brokerId"]
        old = self.brokers.get(b)
        if version != 3:
            self.fail(offset, f"RegisterBrokerRecord v{version} at MV 21 (expected v3)")
        if not data.get("logDirs"):
            self.fail(offset, "registration without log dirs")
        if old is not None and old.incarnation == data["incarnationId"]:
            if data["brokerEpoch"] != old.epoch:
                self.fail(offset, "re-registration of the same incarnation changed the epoch")
        else:
            if old is not None and not old.fenced:
                self.fail(offset, f"new incarnation of broker {b} while the old one is unfenced")
            if data["brokerEpoch"] != offset:
                self.fail(offset, f"broker epoch {data['brokerEpoch']} is not the registration offset")
            if not data.get("fenced", True) or data.get("inControlledShutdown", False):
                self.fail(offset, "a new incarnation must register fenced and not in controlled shutdown")
            if self.past_incarnations.get(b) == data["incarnationId"]:
                self.fail(offset, "incarnation id reused")
        self.past_incarnations[b] = data["incarnationId"]
        self.brokers[b] = _Broker(data)
        self.all_dirty = True

    def _r_unregister_broker_record(self, offset: int, version: int, data: dict[str, Any]) -> None:
        br = self.brokers.get(data["brokerId"])
        if br is None or br.epoch != data["brokerEpoch"]:
            self.fail(offset, f"unregistering unknown broker/epoch {data['brokerId']}/{data['brokerEpoch']}")
            return
        del self.brokers[data["brokerId"]]
        self.all_dirty = True

    def _r_broker_registration_change_record(self, offset: int, version: int, data: dict[str, Any]) -> None:
        br = self.brokers.get(data["brokerId"])
        if br is None or br.epoch != data["brokerEpoch"]:
            self.fail(offset, f"change for unknown broker/epoch {data['brokerId']}/{data['brokerEpoch']}")
            return
        fenced = data.get("fenced", 0)
        in_cs = data.get("inControlledShutdown", 0)
        needed = 2 if data.get("logDirs") else 1 if in_cs else 0
        if version != needed:
            self.fail(offset, f"BrokerRegistrationChangeRecord v{version}, the controller writes v{needed}")
        if fenced == 1:
            if br.fenced:
                self.fail(offset, "fencing a fenced broker")
            br.fenced = True
        elif fenced == -1:
            if not br.fenced:
                self.fail(offset, "unfencing an unfenced broker")
            br.fenced = False
        elif fenced != 0:
            self.fail(offset, f"fenced={fenced}")
        if in_cs == 1:
            if br.in_cs or br.fenced:
                self.fail(offset, "controlled shutdown of a broker already shutting down or fenced")
            br.in_cs = True
        elif in_cs != 0:
            self.fail(offset, f"inControlledShutdown={in_cs}")
        self.all_dirty = True

    def _r_topic_record(self, offset: int, version: int, data: dict[str, Any]) -> None:
        if data["name"] in self.names:
            self.fail(offset, f"topic name {data['name']} already in use")
        if data["topicId"] in self.seen_topic_ids:
            self.fail(offset, "topic id reused")
        self.seen_topic_ids.add(data["topicId"])
        self.topics[data["topicId"]] = (data["name"], [])
        self.names[data["name"]] = data["topicId"]

    def _dirs_ok(self, offset: int, replicas: list[int], dirs: list[str]) -> None:
        if len(dirs) != len(replicas):
            self.fail(offset, "directories and replicas differ in length")
            return
        for r, d in zip(replicas, dirs):
            br = self.brokers.get(r)
            if br is None:
                continue
            if d == UNASSIGNED:
                if len(br.dirs) == 1:
                    self.fail(offset, f"UNASSIGNED directory for single-dir broker {r}")
            elif d not in br.dirs:
                self.fail(offset, f"directory {d} is not a log dir of broker {r}")

    def _r_partition_record(self, offset: int, version: int, data: dict[str, Any]) -> None:
        topic = self.topics.get(data["topicId"])
        if topic is None:
            self.fail(offset, "PartitionRecord for an unknown topic")
            return
        parts = topic[1]
        if version != 1:
            self.fail(offset, f"PartitionRecord v{version} at MV 21 (expected v1)")
        if data["partitionId"] != len(parts):
            self.fail(offset, f"partition id {data['partitionId']} is not dense (next is {len(parts)})")
        replicas, isr = data["replicas"], data["isr"]
        if len(set(replicas)) != len(replicas) or not replicas:
            self.fail(offset, f"bad replicas {replicas}")
        if parts and len(replicas) != len(parts[0].replicas):
            self.fail(offset, "replication factor differs from the topic's")
        if any(r not in self.brokers for r in replicas):
            self.fail(offset, f"replicas {replicas} include an unregistered broker")
        if isr != [r for r in replicas if self._active(r)]:
            self.fail(offset, f"initial ISR {isr} is not the active replicas of {replicas}")
        if not isr or data.get("leader") != isr[0]:
            self.fail(offset, f"initial leader {data.get('leader')} is not the first ISR member of {isr}")
        if data.get("leaderEpoch") != 0 or data.get("partitionEpoch") != 0:
            self.fail(offset, "a new partition starts at leader/partition epoch 0")
        if data.get("removingReplicas") or data.get("addingReplicas"):
            self.fail(offset, "a new partition has a reassignment")
        self._dirs_ok(offset, replicas, data.get("directories", []))
        p = _Part()
        p.replicas, p.isr, p.removing, p.adding = replicas, isr, [], []
        p.leader, p.leader_epoch, p.partition_epoch = data.get("leader", -1), 0, 0
        p.dirs = data.get("directories") or [MIGRATING] * len(replicas)
        parts.append(p)
        self.dirty.add((data["topicId"], data["partitionId"]))

    def _r_partition_change_record(self, offset: int, version: int, data: dict[str, Any]) -> None:
        topic = self.topics.get(data["topicId"])
        pid = data["partitionId"]
        if topic is None or not 0 <= pid < len(topic[1]):
            self.fail(offset, "PartitionChangeRecord for an unknown partition")
            return
        if version != 1:
            self.fail(offset, f"PartitionChangeRecord v{version} at MV 21 (expected v1)")
        p = topic[1][pid]
        if set(data) <= {"topicId", "partitionId"}:
            self.fail(offset, "a PartitionChangeRecord that changes nothing")
        for forbidden in ("leaderRecoveryState", "eligibleLeaderReplicas", "lastKnownElr"):
            if forbidden in data:
                self.fail(offset, f"{forbidden} written without unclean election / ELR")
        replicas = data.get("replicas", p.replicas)
        isr = data.get("isr", p.isr)
        removing = data.get("removingReplicas", p.removing)
        adding = data.get("addingReplicas", p.adding)
        leader = data.get("leader", -2)
        if len(set(replicas)) != len(replicas):
            self.fail(offset, f"duplicate replicas {replicas}")
        for r in replicas:
            if r not in p.replicas and r not in self.brokers:
                self.fail(offset, f"new replica {r} is not a registered broker")
        if "isr" in data:
            if not isr:
                self.fail(offset, "an empty ISR is written (ELR is off)")
            for r in isr:
                if r not in p.isr and not self._active(r):
                    self.fail(offset, f"broker {r} joins the ISR while not active")
        if not set(isr) <= set(replicas):
            self.fail(offset, f"ISR {isr} not within replicas {replicas}")
        if not set(adding) <= set(replicas) or not set(removing) <= set(replicas) or set(adding) & set(removing):
            self.fail(offset, f"bad reassignment state adding={adding} removing={removing} replicas={replicas}")
        shrinks = not set(p.replicas) <= set(replicas)
        if leader == -2:
            if shrinks:
                self.fail(offset, "a replica left the replica set without a leader epoch bump")
        elif leader == p.leader and not shrinks:
            self.fail(offset, f"Leader={leader} (unchanged) written without a replica removal")
        if leader != -2 and leader != -1 and leader not in isr:
            self.fail(offset, f"new leader {leader} is not in the ISR {isr}")
        if "directories" in data or "replicas" in data:
            self._dirs_ok(offset, replicas, data.get("directories", p.dirs))
        p.replicas, p.isr, p.removing, p.adding = replicas, isr, removing, adding
        if "directories" in data:
            p.dirs = data["directories"]
        if leader != -2:
            p.leader = leader
            p.leader_epoch += 1
        p.partition_epoch += 1
        self.dirty.add((data["topicId"], pid))

    def _r_remove_topic_record(self, offset: int, version: int, data: dict[str, Any]) -> None:
        topic = self.topics.pop(data["topicId"], None)
        if topic is None:
            self.fail(offset, "RemoveTopicRecord for an unknown topic")
            return
        del self.names[topic[0]]
        self.configs.pop((2, topic[0]), None)

    def _r_config_record(self, offset: int, version: int, data: dict[str, Any]) -> None:
        rtype, name, key, value = data["resourceType"], data["resourceName"], data["name"], data.get("value")
        if rtype == 2:
            if name not in self.names:
                self.fail(offset, f"config for topic {name} that does not exist")
            current = self.configs.get((2, name), {}).get(key)
            if current == value:
                self.fail(offset, f"topic config {name}/{key} written without a change")
        elif rtype == 4:
            if name and not name.isdigit():
                self.fail(offset, f"bad broker config resource {name!r}")
        else:
            self.fail(offset, f"unexpected config resource type {rtype}")
        entries = self.configs.setdefault((rtype, name), {})
        if value is None:
            entries.pop(key, None)
        else:
            entries[key] = value

    def _r_producer_ids_record(self, offset: int, version: int, data: dict[str, Any]) -> None:
        br = self.brokers.get(data["brokerId"])
        if br is None or br.epoch != data["brokerEpoch"] or br.fenced:
            self.fail(offset, f"producer ids for broker {data['brokerId']} with a stale epoch or fenced")
        if data["nextProducerId"] != self.next_producer_id + 1000:
            self.fail(offset, f"nextProducerId {data['nextProducerId']} after {self.next_producer_id}")
        self.next_producer_id = data["nextProducerId"]

    # ------------------------------------------------------------------ invariants

    def checkpoint(self) -> None:
        """Partition invariants at an operation boundary (for the partitions that may have changed)."""
        self.checkpoints += 1
        if self.all_dirty:
            todo = [(tid, pid) for tid, (_, parts) in self.topics.items() for pid in range(len(parts))]
        else:
            todo = list(self.dirty)
        self.dirty = set()
        self.all_dirty = False
        for tid, pid in todo:
            topic = self.topics.get(tid)
            if topic is None or pid >= len(topic[1]):
                continue
            p = topic[1][pid]
            where = f"{topic[0]}-{pid} at offset < {self.next_offset}"
            if p.leader >= 0:
                if p.leader not in p.isr:
                    self.fail(self.next_offset, f"{where}: leader {p.leader} not in ISR {p.isr}")
                if not self._active(p.leader):
                    self.fail(self.next_offset, f"{where}: leader {p.leader} is fenced or shutting down")
            elif any(self._active(r) for r in p.isr):
                self.fail(self.next_offset, f"{where}: no leader although ISR {p.isr} has an active broker")
            if not p.isr or not set(p.isr) <= set(p.replicas):
                self.fail(self.next_offset, f"{where}: ISR {p.isr} vs replicas {p.replicas}")
