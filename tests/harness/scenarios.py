"""Scenarios driven against a real KRaft cluster through an Admin client.

Every scenario records, after each step, the cluster's own view plus the metadata-log offset at which
that view holds (see ``views.py``), and at the end saves the controller's ``__cluster_metadata-0``
directory, ``views.json``, ``meta.json`` and Kafka's own ``kafka-dump-log`` output.

Admin operations go through kafka-python (create/delete topics, create partitions, incremental config
alteration of topics and individual brokers, partition reassignment, preferred leader election, feature
updates, ACLs, SCRAM users).  Two operations kafka-python cannot do are done with Kafka's own
``kafka.admin.ConfigCommand`` from the fetched jars: cluster-wide default broker configs (resource name
``""``) and client quotas.
"""

from __future__ import annotations

import json
import shutil
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from kafka import TopicPartition
from kafka.admin import AlterConfigOp, ConfigResource, ConfigResourceType

from . import compare, oracle, tools
from .cluster import ClusterError, ClusterSpec, KafkaCluster
from .kafka_dist import RELEASES, KafkaDist, ensure_kafka, release_line
from .views import quorum_state, settle_and_record

IGNORED_FILE_SUFFIXES = (".index", ".timeindex", ".txnindex", ".snapshot", ".lock", ".deleted", ".part", ".tmp")
"""Not copied: indexes, producer snapshots, the lock, files Kafka is about to delete (``.deleted``, kept for
``file.delete.delay.ms``) and files being written (``.checkpoint.part``, ``leader-epoch-checkpoint.tmp``)."""


def log(msg: str) -> None:
    print(f"[harness {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


@dataclass
class ScenarioRun:
    name: str
    dist: KafkaDist
    cluster: KafkaCluster
    out: Path
    command: str
    steps: list[dict] = field(default_factory=list)
    extras: tuple[str, ...] = ()  # optional view parts (views.VIEW_EXTRAS)
    t0: float = field(default_factory=time.monotonic)
    captured: dict | None = None  # set by capture(): the node whose metadata directory was saved, and why

    @property
    def admin(self):
        return self.cluster.admin()

    # -- recording
    def step(
        self,
        name: str,
        description: str,
        check: Callable[[dict], bool] | None = None,
        timeout: float = 90,
        extras: tuple[str, ...] | None = None,
    ) -> dict:
        """Record the cluster's view once it has settled (and ``check`` holds), with the run's optional view parts
        or ``extras``."""
        view = settle_and_record(
            self.cluster, check=check, timeout=timeout, extras=self.extras if extras is None else extras
        )
        rec = {"step": len(self.steps), "name": name, "description": description, **view}
        self.steps.append(rec)
        log(f"step {rec['step']:2d} {name:28s} offset={rec['offset']} (+{time.monotonic() - self.t0:.0f}s)")
        return rec

    # -- helpers
    def create_topics(self, spec: dict[str, dict]) -> None:
        self.admin.create_topics(spec)
        self.admin.wait_for_topics(list(spec), timeout_ms=30000)

    def alter_configs(self, rtype: ConfigResourceType, name: str, changes: dict[str, str | None]) -> None:
        cfg = {k: ((AlterConfigOp.DELETE, None) if v is None else (AlterConfigOp.SET, v)) for k, v in changes.items()}
        # (kafka-python knows no config newer than its own list, such as 4.3's cordoned.log.dirs: Kafka checks them)
        res = self.admin.alter_configs(
            [ConfigResource(rtype, name, configs=cfg)], incremental=True, raise_on_unknown=False
        )
        bad = [(t, n, r) for t, m in res.items() for n, r in m.items() if r not in ("OK", None)]
        if bad:
            raise RuntimeError(f"alter_configs failed: {bad}")

    def alter_default_broker_configs(self, add: dict[str, str] | None = None, delete: list[str] | None = None):
        args = ["--entity-type", "brokers", "--entity-default", "--alter"]
        if add:
            args += ["--add-config", ",".join(f"{k}={v}" for k, v in add.items())]
        if delete:
            args += ["--delete-config", ",".join(delete)]
        tools.config_command(self.dist, self.cluster.bootstrap_servers(), args)

    def reassign(self, moves: dict[tuple[str, int], list[int] | None]) -> None:
        res = self.admin.alter_partition_reassignments({TopicPartition(t, p): r for (t, p), r in moves.items()})
        bad = {tp: e for tp, e in (res or {}).items() if e is not None}
        if bad:
            raise RuntimeError(f"reassignment rejected: {bad}")

    def wait_no_reassignments(self, timeout: float = 60) -> None:
        self.cluster.wait_for(
            lambda: not self.admin.list_partition_reassignments(), timeout, "all reassignments to complete"
        )

    def elect_preferred(self, topics: dict[str, list[int]] | None = None) -> None:
        self.admin.elect_leaders(0, topics, raise_errors=False)

    def stop_broker(self, node_id: int) -> None:
        self.cluster.stop_node(node_id)

    def kill_broker(self, node_id: int) -> None:
        self.cluster.kill_node(node_id)

    def start_broker(self, node_id: int) -> None:
        self.cluster.start_node(node_id, wait=True, timeout=90)


# ----------------------------------------------------------------------------- view predicates
def parts(view: dict, topic: str) -> list[dict]:
    return view["topics"].get(topic, {}).get("partitions", [])


def alive_ids(view: dict) -> set[int]:
    return {b["id"] for b in view["cluster"]["brokers"] if not b.get("fenced")}


def full_isr(view: dict, topics: list[str] | None = None) -> bool:
    alive = alive_ids(view)
    for name, t in view["topics"].items():
        if topics is not None and name not in topics:
            continue
        for p in t["partitions"]:
            want = [r for r in p["replicas"] if r in alive]
            if not want:
                continue  # offline partition: KRaft keeps the last ISR member (or moves it to the ELR)
            if sorted(p["isr"]) != sorted(want):
                return False
    return True


def no_leader_on(view: dict, broker: int) -> bool:
    return all(p["leader"] != broker for t in view["topics"].values() for p in t["partitions"])


# ----------------------------------------------------------------------------- scenarios
def scenario_smoke(run: ScenarioRun) -> None:
    """Tiny scenario for the live CI test (one combined node)."""
    run.step("cluster-up", "cluster formatted and started")
    run.create_topics(
        {
            "smoke-a": {"num_partitions": 2, "replication_factor": 1},
            "smoke-b": {"num_partitions": 1, "replication_factor": 1, "configs": {"cleanup.policy": "compact"}},
        }
    )
    run.step(
        "create-topics",
        "smoke-a (2 partitions), smoke-b (1 partition, compacted)",
        check=lambda v: len(parts(v, "smoke-a")) == 2 and len(parts(v, "smoke-b")) == 1,
    )
    run.alter_configs(ConfigResourceType.TOPIC, "smoke-a", {"retention.ms": "123456"})
    run.admin.delete_topics(["smoke-b"])
    run.step(
        "alter-and-delete",
        "set retention.ms on smoke-a, delete smoke-b",
        check=lambda v: (
            "smoke-b" not in v["topics"] and v["configs"]["TOPIC"].get("smoke-a", {}).get("retention.ms") == "123456"
        ),
    )


def scenario_basic(run: ScenarioRun) -> None:
    n = len(run.cluster.brokers)
    rf = min(3, n)
    run.step(
        "cluster-up",
        f"controller + {n} brokers formatted at an older metadata.version and started",
        check=lambda v: len(alive_ids(v)) == n,
    )
    run.create_topics(
        {
            "alpha": {"num_partitions": 1, "replication_factor": 1},
            "beta": {"num_partitions": 3, "replication_factor": rf},
            "gamma": {
                "num_partitions": 6,
                "replication_factor": min(2, n),
                "configs": {"cleanup.policy": "compact", "segment.bytes": "1048576"},
            },
            "delta": {"assignments": {0: [1, 2][:n], 1: [2, 3][:n] if n >= 3 else [1]}},
        }
    )
    run.step(
        "create-topics",
        "alpha 1xRF1, beta 3xRF3, gamma 6xRF2 compacted, delta manual assignment",
        check=lambda v: all(t in v["topics"] for t in ("alpha", "beta", "gamma", "delta")) and full_isr(v),
    )
    run.alter_configs(ConfigResourceType.TOPIC, "alpha", {"retention.ms": "3600000", "max.message.bytes": "2000000"})
    run.alter_configs(ConfigResourceType.TOPIC, "gamma", {"segment.bytes": None, "min.compaction.lag.ms": "1000"})
    run.step(
        "alter-topic-configs",
        "set retention.ms/max.message.bytes on alpha; delete segment.bytes and set min.compaction.lag.ms on gamma",
        check=lambda v: (
            v["configs"]["TOPIC"].get("alpha", {}).get("retention.ms") == "3600000"
            and "segment.bytes" not in v["configs"]["TOPIC"].get("gamma", {})
        ),
    )
    run.alter_configs(ConfigResourceType.BROKER, "1", {"log.retention.bytes": "1073741824"})
    run.alter_default_broker_configs(add={"log.retention.ms": "7200000", "log.cleaner.delete.retention.ms": "3600000"})
    run.step(
        "alter-broker-configs",
        "broker 1 log.retention.bytes=1073741824; cluster default log.retention.ms "
        "and log.cleaner.delete.retention.ms (via kafka.admin.ConfigCommand)",
        check=lambda v: (
            v["configs"]["BROKER"].get("1", {}).get("log.retention.bytes") == "1073741824"
            and v["configs"]["BROKER"].get("", {}).get("log.retention.ms") == "7200000"
        ),
    )
    run.alter_configs(ConfigResourceType.BROKER, "1", {"log.retention.bytes": None})
    run.alter_default_broker_configs(delete=["log.cleaner.delete.retention.ms"])
    run.step(
        "delete-broker-configs",
        "delete broker 1 log.retention.bytes and the default log.cleaner.delete.retention.ms",
        check=lambda v: (
            "1" not in v["configs"]["BROKER"]
            and "log.cleaner.delete.retention.ms" not in v["configs"]["BROKER"].get("", {})
        ),
    )
    run.admin.create_partitions({"beta": 5, "alpha": 2})
    run.step(
        "create-partitions",
        "beta 3->5 partitions, alpha 1->2",
        check=lambda v: len(parts(v, "beta")) == 5 and len(parts(v, "alpha")) == 2 and full_isr(v),
    )
    run.admin.delete_topics(["alpha"])
    run.step("delete-topic", "delete alpha", check=lambda v: "alpha" not in v["topics"])
    run.create_topics({"alpha": {"num_partitions": 2, "replication_factor": rf, "configs": {"retention.ms": "60000"}}})
    run.step(
        "recreate-topic",
        "re-create alpha (2 partitions, RF3, new topic id)",
        check=lambda v: len(parts(v, "alpha")) == 2 and full_isr(v, ["alpha"]),
    )
    if "acls" in run.extras:
        from kafka.admin import (
            ACL,
            ACLFilter,
            ACLOperation,
            ACLPermissionType,
            ACLResourcePatternType,
            ResourcePattern,
            ResourcePatternFilter,
            ResourceType,
        )

        acls = [
            ACL(
                "User:alice",
                "*",
                ACLOperation.READ,
                ACLPermissionType.ALLOW,
                ResourcePattern(ResourceType.TOPIC, "beta", ACLResourcePatternType.LITERAL),
            ),
            ACL(
                "User:bob",
                "127.0.0.1",
                ACLOperation.WRITE,
                ACLPermissionType.DENY,
                ResourcePattern(ResourceType.TOPIC, "gam", ACLResourcePatternType.PREFIXED),
            ),
        ]
        run.admin.create_acls(acls)
        tools.config_command(
            run.dist,
            run.cluster.bootstrap_servers(),
            [
                "--entity-type",
                "users",
                "--entity-name",
                "alice",
                "--alter",
                "--add-config",
                "producer_byte_rate=1048576,consumer_byte_rate=2097152",
            ],
        )
        run.step(
            "acls-and-quotas",
            "two ACLs (literal allow, prefixed deny) and client quotas for user alice",
            check=lambda v: len(v.get("acls", [])) == 2,
        )
        from kafka.admin import (
            ScramMechanism,
            UserScramCredentialDeletion,
            UserScramCredentialUpsertion,
        )

        for batch in (
            [
                UserScramCredentialUpsertion("alice", ScramMechanism.SCRAM_SHA_256, "alice-secret", iterations=4096),
                UserScramCredentialUpsertion("bob", ScramMechanism.SCRAM_SHA_512, "bob-secret", iterations=8192),
            ],
            [UserScramCredentialUpsertion("bob", ScramMechanism.SCRAM_SHA_256, "bob-secret2", iterations=4096)],
        ):
            res = run.admin.alter_user_scram_credentials(batch)  # one alteration per user and request
            if any(e for e in res.values()):
                raise RuntimeError(f"SCRAM upsert failed: {res}")
        _produce_idempotent(run, "beta")
        run.step(
            "scram-and-producer-ids",
            "SCRAM credentials for alice (SHA-256) and bob (SHA-256, SHA-512); "
            "an idempotent producer writes to beta (producer id block allocation)",
            check=lambda v: len(v.get("scram", {}).get("bob", [])) == 2,
        )
        res = run.admin.alter_user_scram_credentials([UserScramCredentialDeletion("bob", ScramMechanism.SCRAM_SHA_512)])
        if any(e for e in res.values()):
            raise RuntimeError(f"SCRAM delete failed: {res}")
        run.admin.delete_acls(
            [
                ACLFilter(
                    principal="User:bob",
                    host=None,
                    operation=ACLOperation.ANY,
                    permission_type=ACLPermissionType.ANY,
                    resource_pattern=ResourcePatternFilter(ResourceType.ANY, None, ACLResourcePatternType.ANY),
                )
            ]
        )
        tools.config_command(
            run.dist,
            run.cluster.bootstrap_servers(),
            ["--entity-type", "users", "--entity-name", "alice", "--alter", "--delete-config", "consumer_byte_rate"],
        )
        run.step(
            "remove-acl-scram-quota",
            "delete bob's ACL, bob's SCRAM-SHA-512 credential and alice's consumer_byte_rate quota",
            check=lambda v: len(v.get("acls", [])) == 1 and len(v.get("scram", {}).get("bob", [])) == 1,
        )
    _maybe_upgrade_features(run)
    time.sleep(4)
    run.step("idle", "4 s without changes (NoOp records every 500 ms)")


def _produce_idempotent(run: ScenarioRun, topic: str) -> None:
    from kafka import KafkaProducer

    p = KafkaProducer(
        bootstrap_servers=run.cluster.bootstrap_servers(),
        enable_idempotence=True,
        acks="all",
        client_id="kraft-replay-harness-producer",
        request_timeout_ms=15000,
    )
    try:
        p.send(topic, b"hello").get(timeout=30)
        p.flush(timeout=30)
    finally:
        p.close(timeout=10)


def _maybe_upgrade_features(run: ScenarioRun) -> None:
    feats = run.admin.describe_features()
    mv = feats.get("metadata.version", {})
    sup, fin = mv.get("supported"), mv.get("finalized")
    if not (sup and fin) or fin[1] >= sup[1]:
        return
    target = sup[1]
    if run.dist.major >= 4:  # newest production level of this release (unstable levels need a flag)
        target = min(target, _latest_production_mv_level(run))
    if target <= fin[1]:
        return
    res = run.admin.update_features({"metadata.version": ("UPGRADE", target)})
    if any(v != "OK" for v in res.values()):
        raise RuntimeError(f"metadata.version upgrade failed: {res}")
    desc = f"metadata.version {fin[1]} -> {target}"
    elr = feats.get("eligible.leader.replicas.version")
    if elr and elr.get("supported", (0, 0))[1] >= 1 and not elr.get("finalized"):
        res = run.admin.update_features({"eligible.leader.replicas.version": ("UPGRADE", 1)})
        if any(v != "OK" for v in res.values()):
            raise RuntimeError(f"eligible.leader.replicas.version upgrade failed: {res}")
        desc += ", eligible.leader.replicas.version 0 -> 1"
    run.step("upgrade-features", desc, check=lambda v: v["features"].get("metadata.version") == target)


def _latest_production_mv_level(run: ScenarioRun) -> int:
    out = tools.run_java(run.dist, "kafka.tools.StorageTool", ["version-mapping"]).stdout
    for line in out.splitlines():
        if line.startswith("metadata.version="):
            return int(line.split("=")[1].split()[0])
    raise RuntimeError(f"cannot parse kafka-storage version-mapping output: {out!r}")


def scenario_reassign(run: ScenarioRun) -> None:
    n = len(run.cluster.brokers)
    if n < 3:
        raise SystemExit("the reassign scenario needs --brokers 3 or more")
    run.step("cluster-up", f"controller + {n} brokers", check=lambda v: len(alive_ids(v)) == n)
    run.create_topics(
        {
            "r1": {"assignments": {0: [1, 2], 1: [2, 3], 2: [3, 1], 3: [1, 3]}},
            "r2": {"assignments": {0: [1, 2, 3], 1: [2, 3, 1]}},
        }
    )
    run.step(
        "create-topics",
        "r1 4 partitions RF2 and r2 2 partitions RF3 with manual assignments",
        check=lambda v: full_isr(v) and len(parts(v, "r1")) == 4,
    )
    run.reassign({("r1", 0): [1, 2, 3], ("r1", 1): [3, 1]})
    run.wait_no_reassignments()
    run.step(
        "reassign-add",
        "r1-0 [1,2]->[1,2,3] (add a replica); r1-1 [2,3]->[3,1] (move)",
        check=lambda v: (
            parts(v, "r1")[0]["replicas"] == [1, 2, 3] and parts(v, "r1")[1]["replicas"] == [3, 1] and full_isr(v)
        ),
    )
    run.reassign({("r2", 0): [1, 2], ("r2", 1): [3, 1]})
    run.wait_no_reassignments()
    run.step(
        "reassign-remove",
        "r2-0 [1,2,3]->[1,2]; r2-1 [2,3,1]->[3,1] (remove replicas, leader 2 moves away)",
        check=lambda v: (
            parts(v, "r2")[0]["replicas"] == [1, 2] and parts(v, "r2")[1]["replicas"] == [3, 1] and full_isr(v)
        ),
    )
    run.elect_preferred()
    run.step(
        "elect-preferred",
        "preferred leader election on all partitions",
        check=lambda v: all(p["leader"] == p["replicas"][0] for t in ("r1", "r2") for p in parts(v, t)),
    )
    # an in-flight reassignment: the target broker is down, so adding/removing replicas stay visible
    run.stop_broker(3)
    run.step(
        "stop-broker-3", "controlled shutdown of broker 3", check=lambda v: 3 not in alive_ids(v) and no_leader_on(v, 3)
    )
    run.reassign({("r1", 2): [1, 2], ("r1", 3): [2, 3], ("r2", 1): [1, 2]})
    run.step(
        "reassign-pending",
        "r1-3 [1,3]->[2,3] and r2-1 [3,1]->[1,2] while broker 3 is down (pending: "
        "adding/removing replicas); r1-2 [3,1]->[1,2] completes",
        check=lambda v: bool(v["reassignments"]) and parts(v, "r1")[2]["replicas"] == [1, 2],
    )
    run.reassign({("r1", 3): None})
    run.step(
        "reassign-cancel",
        "cancel the pending reassignment of r1-3",
        check=lambda v: "3" not in v["reassignments"].get("r1", {}),
    )
    run.start_broker(3)
    run.wait_no_reassignments(timeout=90)
    run.step(
        "start-broker-3",
        "broker 3 restarted; pending reassignment of r2-1 completes",
        check=lambda v: (
            3 in alive_ids(v) and not v["reassignments"] and full_isr(v) and parts(v, "r2")[1]["replicas"] == [1, 2]
        ),
    )
    run.elect_preferred()
    run.step(
        "elect-preferred-2",
        "preferred leader election after the restart",
        check=lambda v: all(p["leader"] == p["replicas"][0] for t in ("r1", "r2") for p in parts(v, t)),
    )
    run.reassign({("r1", 0): [1, 2], ("r1", 1): [1, 2], ("r1", 3): [2, 1]})
    run.wait_no_reassignments()
    run.step(
        "drain-broker-3",
        "move every replica off broker 3",
        check=lambda v: (
            all(3 not in p["replicas"] for t in v["topics"].values() for p in t["partitions"]) and full_isr(v)
        ),
    )
    run.stop_broker(3)
    tools.run_java(
        run.dist,
        "org.apache.kafka.tools.ClusterTool",
        ["unregister", "--bootstrap-server", run.cluster.bootstrap_servers(), "--id", "3"],
    )
    run.step(
        "unregister-broker-3",
        "stop broker 3 and unregister it (org.apache.kafka.tools.ClusterTool)",
        check=lambda v: 3 not in {b["id"] for b in v["cluster"]["brokers"]},
    )
    time.sleep(3)
    run.step("idle", "3 s without changes")


def scenario_rolling_restart(run: ScenarioRun) -> None:
    n = len(run.cluster.brokers)
    ids = [b.node_id for b in run.cluster.brokers]
    run.step("cluster-up", f"controller + {n} brokers", check=lambda v: len(alive_ids(v)) == n)
    run.create_topics(
        {
            "rr1": {"num_partitions": 3, "replication_factor": min(3, n)},
            "rr2": {"num_partitions": 6, "replication_factor": min(2, n)},
            "rr3": {"assignments": {0: [ids[min(1, n - 1)]]}},
        }
    )
    run.step(
        "create-topics",
        "rr1 3xRF3, rr2 6xRF2, rr3 1xRF1 on the second broker",
        check=lambda v: full_isr(v) and len(parts(v, "rr2")) == 6,
    )
    for b in ids:
        run.stop_broker(b)
        run.step(
            f"stop-broker-{b}",
            f"controlled shutdown of broker {b} (SIGTERM)",
            check=lambda v, b=b: b not in alive_ids(v) and no_leader_on(v, b) and full_isr(v),
        )
        run.start_broker(b)
        run.step(
            f"start-broker-{b}",
            f"broker {b} restarted, ISR restored",
            check=lambda v, b=b: b in alive_ids(v) and full_isr(v),
        )
    victim = ids[0]
    run.kill_broker(victim)
    run.step(
        f"kill-broker-{victim}",
        f"broker {victim} killed with SIGKILL; fenced after the session timeout",
        check=lambda v: victim not in alive_ids(v) and no_leader_on(v, victim) and full_isr(v),
        timeout=120,
    )
    run.start_broker(victim)
    run.step(
        f"restart-broker-{victim}",
        f"broker {victim} restarted after the hard kill",
        check=lambda v: victim in alive_ids(v) and full_isr(v),
    )
    run.elect_preferred()
    run.step(
        "elect-preferred",
        "preferred leader election to rebalance leadership",
        check=lambda v: all(p["leader"] == p["replicas"][0] for t in v["topics"].values() for p in t["partitions"]),
    )
    time.sleep(6)
    run.step("idle", "6 s without changes (snapshots are taken every few seconds in this scenario)")


def scenario_cordon(run: ScenarioRun) -> None:
    """KIP-1066 (4.3+): brokers with two log directories each; a directory, then all of a broker's directories,
    cordoned with the dynamic broker config ``cordoned.log.dirs`` (the broker reports them in its heartbeats, the
    controller writes BrokerRegistrationChangeRecord v3), new replicas placed on uncordoned brokers only, both
    uncordoned, and a broker restarted with a directory cordoned in its server.properties."""
    nodes = {b.node_id: b for b in run.cluster.brokers}
    n = len(nodes)
    if n < 3 or any(b.log_dirs < 2 for b in nodes.values()):
        raise SystemExit("the cordon scenario needs 3 brokers with two log directories each")

    def cordoned(v: dict, broker: int) -> list[str]:
        return sorted(d for d, c in v["logDirs"].get(str(broker), {}).items() if c)

    def dir_id(broker: int, index: int) -> str:
        return nodes[broker].directory_id(nodes[broker].log_dir_paths[index])

    run.step(
        "cluster-up",
        f"controller + {n} brokers, two log directories each, none cordoned",
        check=lambda v: len(alive_ids(v)) == n and all(not cordoned(v, b) for b in nodes),
    )
    run.create_topics(
        {"c1": {"num_partitions": 3, "replication_factor": 2}, "c2": {"num_partitions": 4, "replication_factor": 1}}
    )
    run.step("create-topics", "c1 3xRF2, c2 4xRF1", check=lambda v: full_isr(v) and len(parts(v, "c2")) == 4)
    run.alter_configs(ConfigResourceType.BROKER, "1", {"cordoned.log.dirs": str(nodes[1].log_dir_paths[1])})
    run.step(
        "cordon-dir",
        "broker 1 cordons its second log directory (dynamic broker config cordoned.log.dirs)",
        check=lambda v: cordoned(v, 1) == [dir_id(1, 1)],
    )
    run.alter_configs(ConfigResourceType.BROKER, "2", {"cordoned.log.dirs": "*"})
    run.step(
        "cordon-broker",
        "broker 2 cordons all its log directories (cordoned.log.dirs=*)",
        check=lambda v: cordoned(v, 2) == sorted(dir_id(2, i) for i in range(2)),
    )
    run.create_topics({"c3": {"num_partitions": 6, "replication_factor": 1}})
    run.step(
        "create-on-uncordoned",
        "c3 6xRF1: its replicas are placed on brokers 1 and 3 only (broker 2 has no uncordoned directory)",
        check=lambda v: len(parts(v, "c3")) == 6 and all(2 not in p["replicas"] for p in parts(v, "c3")),
    )
    run.alter_configs(ConfigResourceType.BROKER, "1", {"cordoned.log.dirs": None})
    run.alter_configs(ConfigResourceType.BROKER, "2", {"cordoned.log.dirs": None})
    run.step(
        "uncordon",
        "delete cordoned.log.dirs on brokers 1 and 2: no directory cordoned",
        check=lambda v: not cordoned(v, 1) and not cordoned(v, 2),
    )
    run.cluster.restart_node(3, props={"cordoned.log.dirs": str(nodes[3].log_dir_paths[0])})
    run.step(
        "restart-cordoned",
        "broker 3 restarted with its first log directory in cordoned.log.dirs (server.properties)",
        check=lambda v: 3 in alive_ids(v) and full_isr(v) and cordoned(v, 3) == [dir_id(3, 0)],
    )
    time.sleep(4)
    run.step("idle", "4 s without changes")


def scenario_upgrade(run: ScenarioRun) -> None:
    """A cluster formatted and run by the release UPGRADE_FROM names, upgraded in place to this version one node at
    a time (controller first), its metadata.version raised to this version's newest production level; then, with
    4.4's controller unregistration (KIP-1312), a controller added to the dynamic quorum (KIP-853), removed from it,
    stopped and unregistered (UnregisterControllerRecord)."""
    old = run.cluster.controller.dist.version
    ids = [b.node_id for b in run.cluster.brokers]
    n = len(ids)
    run.step("cluster-up", f"controller + {n} brokers of Kafka {old}", check=lambda v: len(alive_ids(v)) == n)
    run.create_topics(
        {
            "u1": {"num_partitions": 3, "replication_factor": min(3, n)},
            "u2": {"num_partitions": 4, "replication_factor": min(2, n), "configs": {"retention.ms": "86400000"}},
        }
    )
    run.step(
        "create-topics", "u1 3xRF3, u2 4xRF2 with retention.ms", check=lambda v: full_isr(v) and "u2" in v["topics"]
    )
    for node in [run.cluster.controller.node_id, *ids]:
        run.cluster.restart_node(node, dist=run.dist)
        run.step(
            f"upgrade-node-{node}",
            f"node {node} stopped (controlled shutdown) and started with Kafka {run.dist.version} on the same data",
            check=lambda v: len(alive_ids(v)) == n and full_isr(v),
        )
    target = _latest_production_mv_level(run)
    res = run.admin.update_features({"metadata.version": ("UPGRADE", target)})
    if any(v != "OK" for v in res.values()):
        raise RuntimeError(f"metadata.version upgrade failed: {res}")
    run.step(
        "upgrade-metadata-version",
        f"metadata.version raised to {target}, the newest production level of Kafka {run.dist.version}",
        check=lambda v: v["features"].get("metadata.version") == target,
        extras=("controllers",),
    )
    run.create_topics({"u3": {"num_partitions": 2, "replication_factor": min(2, n)}})
    run.cluster.restart_node(ids[0])
    run.step(
        f"create-and-restart-{ids[0]}",
        f"u3 2xRF2 created; broker {ids[0]} restarted (registers again at the new metadata.version)",
        check=lambda v: len(alive_ids(v)) == n and full_isr(v) and "u3" in v["topics"],
    )
    added = max(run.cluster.nodes) + 1
    node = run.cluster.add_controller(added, run.dist)
    bootstrap = ["--bootstrap-controller", run.cluster.controller_endpoint]
    run.cluster.wait_for(
        lambda: quorum_state(run.admin)["observers"].get(added, -1) >= quorum_state(run.admin)["highWatermark"] - 1,
        90,
        f"controller {added} to catch up as an observer",
    )
    config = node.dir / "server.properties"
    tools.run_java(run.dist, tools.QUORUM_CLASS, [*bootstrap, "--command-config", str(config), "add-controller"])
    run.step(
        f"add-controller-{added}",
        f"controller {added} started (it registers itself) and added to the voters "
        "(kafka-metadata-quorum add-controller)",
        check=lambda v: sorted(quorum_state(run.admin)["voters"]) == [0, added] and v["controllers"] == [0, added],
        extras=("controllers",),
    )
    directory = node.directory_id(node.data_dir)
    tools.run_java(
        run.dist,
        tools.QUORUM_CLASS,
        [*bootstrap, "remove-controller", "--controller-id", str(added), "--controller-directory-id", directory],
    )
    run.cluster.wait_for(
        lambda: sorted(quorum_state(run.admin)["voters"]) == [0], 60, f"controller {added} to leave the voters"
    )
    run.cluster.stop_node(added)
    tools.run_java(
        run.dist, "org.apache.kafka.tools.ClusterTool", ["unregister-controller", *bootstrap, "--id", str(added)]
    )
    run.step(
        f"remove-controller-{added}",
        f"controller {added} removed from the voters (kafka-metadata-quorum remove-controller), stopped and "
        "unregistered (kafka-cluster unregister-controller: UnregisterControllerRecord)",
        check=lambda v: v["controllers"] == [0],
        extras=("controllers",),
    )
    time.sleep(3)
    run.step("idle", "3 s without changes")


# ----------------------------------------------------------------------------- a node's directory after retention
def snapshot_id(checkpoint: Path) -> tuple[int, int]:
    """(end offset, epoch) of a ``<end offset>-<epoch>.checkpoint`` file."""
    end, epoch = checkpoint.name.removesuffix(".checkpoint").split("-")
    return int(end), int(epoch)


def capture(run: ScenarioRun, node_id: int, why: str) -> None:
    """Save the node's metadata directory as it is on disk now: the node is frozen (SIGSTOP) while its
    files are copied, so no write lands half-way through the copy."""
    node = run.cluster.nodes[node_id]
    run.cluster.freeze_node(node_id)
    try:
        copy_metadata_dir(node.metadata_log_dir, run.out / "__cluster_metadata-0", keep_indexes=False)
    finally:
        run.cluster.thaw_node(node_id)
    run.captured = {"node": node_id, "roles": node.roles, "why": why}
    log(f"captured node {node_id}: {sorted(p.name for p in (run.out / '__cluster_metadata-0').iterdir())}")


def scenario_retention(run: ScenarioRun) -> None:
    """The controller's directory just after Kafka's snapshot retention deleted the old segments and
    snapshots (CONTROLLER_PROPS): the newest snapshot, and the segments from the one holding its end offset."""
    run.step("cluster-up", "controller + 2 brokers", check=lambda v: len(alive_ids(v)) == 2)
    run.create_topics(
        {"kept": {"num_partitions": 3, "replication_factor": 2}, "gone": {"num_partitions": 1, "replication_factor": 1}}
    )
    run.alter_configs(ConfigResourceType.TOPIC, "kept", {"retention.ms": "86400000"})
    run.admin.delete_topics(["gone"])
    controller = run.cluster.controller
    md = controller.metadata_log_dir
    # the log cleaner runs every 60 s (KafkaRaftClient): wait until a run has deleted segment 0 and every
    # snapshot but the newest (it deletes them one by one, each with the segments below the next one)
    run.cluster.wait_for(
        lambda: not (md / "00000000000000000000.log").exists() and len(tools.checkpoint_files(md)) == 1,
        200,
        "the metadata log cleaner to delete the old segments and snapshots",
        interval=0.02,
    )
    capture(
        run,
        controller.node_id,
        "the controller right after its log cleaner deleted the segments and "
        "snapshots below its newest snapshot (metadata.max.retention.ms)",
    )


def scenario_snapshot_fetch(run: ScenarioRun) -> None:
    """A broker's directory right after it fetched a snapshot from the controller: the broker hangs
    (SIGSTOP) while the controller writes on, snapshots and deletes the log below its snapshot
    (CONTROLLER_PROPS: no NoOps, a snapshot after every batch); resumed, the broker is behind the
    controller's log start, so it fetches the snapshot and truncates its log to it. Its directory is
    saved the moment the snapshot appears, before the record that unfences it follows."""
    lagging = run.cluster.brokers[-1].node_id
    run.step("cluster-up", "controller + 2 brokers", check=lambda v: len(alive_ids(v)) == 2)
    run.create_topics({"before": {"num_partitions": 2, "replication_factor": 2}})
    run.cluster.freeze_node(lagging)
    run.cluster.wait_for(
        lambda: (
            lagging not in {b["broker_id"] for b in run.cluster.describe_cluster()["brokers"] if not b.get("is_fenced")}
        ),
        60,
        f"broker {lagging} to be fenced",
    )
    run.create_topics({"after": {"num_partitions": 3, "replication_factor": 1}})
    run.alter_configs(ConfigResourceType.TOPIC, "after", {"cleanup.policy": "compact"})
    run.admin.delete_topics(["before"])
    md = run.cluster.controller.metadata_log_dir

    def snapshot_at_log_end() -> bool:
        cps = tools.checkpoint_files(md)
        return bool(cps) and snapshot_id(cps[-1])[0] == quorum_state(run.admin)["highWatermark"]

    for attempt in range(5):  # a batch replayed while a snapshot is being written triggers none
        try:
            run.cluster.wait_for(snapshot_at_log_end, 10, "a controller snapshot at the end of its log")
            break
        except ClusterError:
            run.alter_configs(ConfigResourceType.TOPIC, "after", {"retention.ms": str(3600000 + attempt)})
    else:
        raise ClusterError("the controller wrote no snapshot at the end of its log")
    run.cluster.wait_for(
        lambda: len(tools.checkpoint_files(md)) == 1, 200, "the metadata log cleaner to delete every older snapshot"
    )
    end = snapshot_id(tools.checkpoint_files(md)[-1])
    broker_md = run.cluster.nodes[lagging].metadata_log_dir
    run.cluster.thaw_node(lagging)
    run.cluster.wait_for(
        lambda: any(snapshot_id(p) == end for p in tools.checkpoint_files(broker_md)),
        60,
        f"broker {lagging} to fetch snapshot {end}",
        interval=0.002,
    )
    capture(
        run,
        lagging,
        f"broker {lagging} right after fetching the controller's snapshot {end[0]}-{end[1]} "
        "(it had hung while the controller's log start moved past its log end)",
    )
    run.cluster.wait_brokers_unfenced([lagging], timeout=90)


SCENARIOS: dict[str, tuple[Callable[[ScenarioRun], None], dict]] = {
    "smoke": (scenario_smoke, {"combined": True, "brokers": 1}),
    "basic": (scenario_basic, {"older_mv": True, "extras": ("acls",)}),
    "reassign": (scenario_reassign, {}),
    "rolling-restart": (scenario_rolling_restart, {"snapshots": True}),
    "cordon": (scenario_cordon, {"snapshots": True, "log_dirs": 2, "extras": ("logDirs",)}),
    "upgrade": (scenario_upgrade, {"upgrade_from": "4.1", "props": "upgrade"}),
    "retention": (scenario_retention, {"brokers": 2, "props": "retention", "captures": True}),
    "snapshot-fetch": (scenario_snapshot_fetch, {"brokers": 2, "props": "snapshot-fetch", "captures": True}),
}

# Force frequent metadata snapshots (``.checkpoint`` files) in the scenarios that ask for them.
SNAPSHOT_PROPS = {
    "metadata.log.max.snapshot.interval.ms": "12000",
    "metadata.log.max.record.bytes.between.snapshots": "16384",
}
ACL_PROPS = {
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "super.users": "User:ANONYMOUS",
}
OLDER_MV = {"3.9": "3.8-IV0", "4.0": "3.9-IV0", "4.1": "4.0-IV3", "4.2": "4.1-IV1", "4.3": "4.2-IV1", "4.4": "4.3-IV0"}
"""The metadata.version ``basic`` formats a cluster of each release line at: the previous line's newest (default)."""
# Controller properties of some scenarios; ``retention`` and ``snapshot-fetch``: Kafka's own snapshot retention,
# made fast (the log cleaner itself runs every 60 s, not configurable).
CONTROLLER_PROPS = {
    "retention": {  # a snapshot every 5 s, a segment every 5 s, snapshots older than 1 s deleted
        "metadata.log.max.snapshot.interval.ms": "5000",
        "metadata.log.segment.ms": "5000",
        "metadata.max.retention.ms": "1000",
    },
    "upgrade": {"metadata.max.idle.interval.ms": "2000"},  # a long scenario: fewer NoOps keep its log small
    "snapshot-fetch": {  # no NoOps: the log only grows by changes; a snapshot after every batch
        "metadata.max.idle.interval.ms": "0",
        "metadata.log.max.record.bytes.between.snapshots": "1",
        "metadata.max.retention.ms": "1000",
    },
}


def build_spec(
    name: str, dist: KafkaDist, brokers: int | None, combined: bool | None, quorum: str, snapshots: bool | None
) -> ClusterSpec:
    _, opts = SCENARIOS[name]
    comb = opts.get("combined", False) if combined is None else combined
    nb = brokers if brokers is not None else opts.get("brokers", 3)
    spec = ClusterSpec(brokers=1 if comb else nb, combined=comb, quorum=quorum, log_dirs=opts.get("log_dirs", 1))
    if opts.get("older_mv"):
        spec.release_version = OLDER_MV[release_line(dist.version)]
        if dist.major == 3 and quorum == "dynamic":
            # 3.9's dynamic quorum (kraft.version 1) needs metadata.version 3.9-IV0: use static voters
            spec.quorum = "static"
    props: dict[str, str] = {}
    if opts.get("snapshots") if snapshots is None else snapshots:
        props.update(SNAPSHOT_PROPS)
    if "acls" in opts.get("extras", ()):  # ACLs need an authorizer
        props.update(ACL_PROPS)
    props.update(CONTROLLER_PROPS.get(opts.get("props", ""), {}))
    spec.controller_props.update(props)
    spec.broker_props.update({k: v for k, v in props.items() if k in ACL_PROPS})
    return spec


def run_scenario(
    name: str,
    version: str,
    out: Path,
    *,
    brokers: int | None = None,
    combined: bool | None = None,
    quorum: str = "dynamic",
    snapshots: bool | None = None,
    keep_indexes: bool = False,
    command: str | None = None,
    keep_workdir: bool = False,
) -> ScenarioRun:
    if name not in SCENARIOS:
        raise SystemExit(f"unknown scenario {name!r}; known: {', '.join(SCENARIOS)}")
    fn, opts = SCENARIOS[name]
    dist = ensure_kafka(version)
    spec = build_spec(name, dist, brokers, combined, quorum, snapshots)
    out = Path(out)
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    t0 = time.monotonic()
    # an upgrade scenario starts its cluster on the newest patch of an older release line
    start = ensure_kafka(RELEASES[opts["upgrade_from"]]) if "upgrade_from" in opts else dist
    cluster = KafkaCluster(start, spec, keep_workdir=keep_workdir)
    upgrade = f" -> {version}" if start is not dist else ""
    log(f"scenario {name} on Kafka {start.version}{upgrade}: workdir {cluster.workdir}")
    run = ScenarioRun(name, dist, cluster, out, command or "", extras=opts.get("extras", ()))
    try:
        with cluster:
            log(f"cluster up in {time.monotonic() - t0:.1f}s")
            fn(run)
            cluster.stop()  # clean shutdown flushes the metadata log; the work dir lives until the with ends
            if opts.get("captures"):
                save_capture(run, spec=spec, wall=time.monotonic() - t0)
            else:
                save_outputs(run, keep_indexes=keep_indexes, spec=spec, wall=time.monotonic() - t0)
            if start is not dist:
                meta = json.loads((out / "meta.json").read_text())
                meta["upgradedFrom"] = start.version
                (out / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    except BaseException:
        # keep what we have for debugging
        if run.steps:
            (out / "views.partial.json").write_text(json.dumps(run.steps, indent=1))
        raise
    log(f"scenario {name} done in {time.monotonic() - t0:.1f}s -> {out}")
    return run


def copy_metadata_dir(src: Path, dst: Path, *, keep_indexes: bool) -> None:
    dst.mkdir(parents=True)
    for f in sorted(src.iterdir()):
        if f.is_file() and (keep_indexes or not f.name.endswith(IGNORED_FILE_SUFFIXES)):
            shutil.copy2(f, dst / f.name)


def write_dump_logs(run: ScenarioRun, meta_dir: Path) -> None:
    segs = tools.segment_files(meta_dir)
    (run.out / "dump-log.txt").write_text(tools.dump_log(run.dist, segs, cwd=run.out))
    (run.out / "dump-log-skip-metadata.txt").write_text(
        tools.dump_log(run.dist, segs, skip_record_metadata=True, cwd=run.out)
    )
    cps = tools.checkpoint_files(meta_dir)
    if cps:
        (run.out / "dump-log-snapshots.txt").write_text(tools.dump_log(run.dist, cps, cwd=run.out))


def write_meta(run: ScenarioRun, meta_dir: Path, spec: ClusterSpec, wall: float, source: str) -> None:
    meta = {
        "kafkaVersion": run.dist.version,
        "scenario": run.name,
        "command": run.command,
        "createdAt": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "wallSeconds": round(wall, 1),
        "clusterId": run.cluster.cluster_id,
        "layout": "combined"
        if spec.combined
        else f"1 controller (node {run.cluster.controller.node_id}) + {spec.brokers} brokers",
        "quorum": spec.quorum,
        "releaseVersion": spec.release_version,
        "controllerProps": spec.controller_props,
        "brokerProps": spec.broker_props,
        "metadataDirFrom": source,
        "files": sorted(p.name for p in meta_dir.iterdir()),
        "steps": len(run.steps),
        "dumpLog": f"{run.dist.main_class(*tools.DUMP_LOG_CLASSES)} --cluster-metadata-decoder --files <segments> "
        "[--skip-record-metadata], run with the output directory as working directory",
    }
    (run.out / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")


def save_outputs(run: ScenarioRun, *, keep_indexes: bool, spec: ClusterSpec, wall: float) -> None:
    ctrl = run.cluster.controller
    dst = run.out / "__cluster_metadata-0"
    copy_metadata_dir(ctrl.metadata_log_dir, dst, keep_indexes=keep_indexes)
    for extra in ("meta.properties", "bootstrap.checkpoint"):
        if (ctrl.data_dir / extra).exists():
            shutil.copy2(ctrl.data_dir / extra, run.out / extra)
    views = {
        "scenario": run.name,
        "kafkaVersion": run.dist.version,
        "clusterId": run.cluster.cluster_id,
        "controllerNodeId": ctrl.node_id,
        "brokerIds": [b.node_id for b in run.cluster.brokers],
        "steps": run.steps,
    }
    (run.out / "views.json").write_text(json.dumps(views, indent=1, sort_keys=False) + "\n")
    write_dump_logs(run, dst)
    write_meta(run, dst, spec, wall, f"node {ctrl.node_id} (controller)")


def save_capture(run: ScenarioRun, *, spec: ClusterSpec, wall: float) -> None:
    """The outputs of a scenario that captured a node's directory (no views): dump-log texts, meta.json and
    ``kafka-images.json`` (:func:`write_kafka_images`)."""
    if run.captured is None:
        raise RuntimeError(f"scenario {run.name} captured no metadata directory")
    md = run.out / "__cluster_metadata-0"
    write_dump_logs(run, md)
    write_meta(run, md, spec, wall, f"node {run.captured['node']} ({run.captured['roles']}): {run.captured['why']}")
    write_kafka_images(run.dist, run.out)


def kafka_image_offsets(fixture: Path) -> tuple[list[tuple[int, int]], int | None, list[int]]:
    """(snapshot ids, offset of the last record in the segments or None, the offsets kafka-images.json holds:
    every snapshot's last contained offset and the last record's offset, ascending)."""
    snapshots = [snapshot_id(p) for p in tools.checkpoint_files(fixture / "__cluster_metadata-0")]
    last = max((r["offset"] for r in compare.parse_dump_log((fixture / "dump-log.txt").read_text())), default=None)
    offsets = {end - 1 for end, _ in snapshots if end > 0} | ({last} if last is not None else set())
    return snapshots, last, sorted(offsets)


def write_kafka_images(dist: KafkaDist, fixture: Path) -> None:
    """``kafka-images.json``: Kafka's own image (KraftOracle ``image``, source ``auto``: the newest snapshot
    whose last contained offset is at or below the offset, then the log records after it, as Kafka's loader
    starts) at every snapshot's last contained offset and at the last record of the segments."""
    snapshots, last, offsets = kafka_image_offsets(fixture)
    doc = {
        "kafkaVersion": dist.version,
        "snapshots": [{"endOffset": e, "epoch": p} for e, p in snapshots],
        "lastLogOffset": last,
        "images": [oracle.image(dist, fixture / "__cluster_metadata-0", offset) for offset in offsets],
    }
    (fixture / "kafka-images.json").write_text(json.dumps(doc, indent=1) + "\n")
