"""The cluster's own view of itself, recorded after every scenario step (``views.json``).

A view is taken only when the cluster has settled: every alive broker has fetched the metadata log up to
the quorum high-watermark and three consecutive snapshots of the view (separated by more than one NoOp
interval) are identical.  The recorded ``offset`` is ``highWatermark - 1`` read just before the middle
snapshot, so the image at that offset must equal the view.
"""

from __future__ import annotations

import base64
import time
import uuid
from collections.abc import Callable
from typing import Any

from kafka.admin import ConfigResource, ConfigResourceType

DYNAMIC_TOPIC = "DYNAMIC_TOPIC_CONFIG"
DYNAMIC_BROKER = "DYNAMIC_BROKER_CONFIG"
DYNAMIC_DEFAULT_BROKER = "DYNAMIC_DEFAULT_BROKER_CONFIG"


def kafka_uuid(value: Any) -> str | None:
    """Convert what kafka-python returns for a Uuid to Kafka's base64 ``Uuid.toString()`` form."""
    if value is None:
        return None
    if isinstance(value, uuid.UUID):
        raw = value.bytes
    elif isinstance(value, bytes):
        raw = value
    else:
        s = str(value)
        if len(s) == 22:
            return s
        raw = uuid.UUID(s).bytes
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def quorum_state(admin) -> dict:
    q = admin.describe_metadata_quorum()
    p = q["topics"][0]["partitions"][0]
    return {
        "leaderId": p["leader_id"],
        "leaderEpoch": p["leader_epoch"],
        "highWatermark": p["high_watermark"],
        "voters": {v["replica_id"]: v["log_end_offset"] for v in p.get("current_voters") or []},
        "observers": {v["replica_id"]: v["log_end_offset"] for v in p.get("observers") or []},
    }


def _describe_topics(admin) -> dict:
    topics = {}
    for t in admin.describe_topics():
        if t.get("error_code"):
            continue
        parts = []
        for p in sorted(t["partitions"], key=lambda p: p["partition_index"]):
            parts.append(
                {
                    "partition": p["partition_index"],
                    "errorCode": p.get("error_code", 0),
                    "leader": p["leader_id"],
                    "leaderEpoch": p.get("leader_epoch"),
                    "replicas": list(p["replica_nodes"]),
                    "isr": list(p["isr_nodes"]),
                    "offlineReplicas": list(p.get("offline_replicas") or []),
                }
            )
        topics[t["name"]] = {
            "topicId": kafka_uuid(t.get("topic_id")),
            "internal": bool(t.get("is_internal")),
            "partitions": parts,
        }
    return dict(sorted(topics.items()))


def _describe_configs(admin, topic_names: list[str], broker_ids: list[int]) -> dict:
    out: dict[str, dict[str, dict[str, str]]] = {"TOPIC": {}, "BROKER": {}}
    if topic_names:
        res = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, n) for n in topic_names])
        for name, entries in (res.get("topic") or {}).items():
            kv = {k: e["value"] for k, e in entries.items() if e.get("config_source") == DYNAMIC_TOPIC}
            if kv:
                out["TOPIC"][name] = dict(sorted(kv.items()))
    defaults: dict[str, str] = {}
    for b in broker_ids:
        res = admin.describe_configs(
            [ConfigResource(ConfigResourceType.BROKER, str(b))], include_synonyms=True, config_filter="all"
        )
        entries = (res.get("broker") or {}).get(str(b)) or {}
        kv = {}
        for k, e in entries.items():
            for syn in e.get("synonyms") or []:
                if syn.get("source") == DYNAMIC_BROKER and syn["name"] == k:
                    kv[k] = syn["value"]
                if syn.get("source") == DYNAMIC_DEFAULT_BROKER:
                    defaults[syn["name"]] = syn["value"]
        if kv:
            out["BROKER"][str(b)] = dict(sorted(kv.items()))
    if defaults:
        out["BROKER"][""] = dict(sorted(defaults.items()))
    return out


def _reassignments(admin) -> dict:
    out: dict[str, dict[str, dict]] = {}
    for tp, r in (admin.list_partition_reassignments() or {}).items():
        out.setdefault(tp.topic, {})[str(tp.partition)] = {
            "replicas": list(r["replicas"]),
            "addingReplicas": list(r["adding_replicas"]),
            "removingReplicas": list(r["removing_replicas"]),
        }
    return {t: dict(sorted(v.items(), key=lambda kv: int(kv[0]))) for t, v in sorted(out.items())}


def _features(admin) -> dict:
    out = {}
    for name, f in (admin.describe_features() or {}).items():
        fin = f.get("finalized")
        if fin:
            out[name] = fin[1]
    return dict(sorted(out.items()))


def _acls(admin) -> list[dict]:
    try:
        from kafka.admin import (
            ACLFilter,
            ACLOperation,
            ACLPermissionType,
            ACLResourcePatternType,
            ResourcePatternFilter,
            ResourceType,
        )

        flt = ACLFilter(
            principal=None,
            host=None,
            operation=ACLOperation.ANY,
            permission_type=ACLPermissionType.ANY,
            resource_pattern=ResourcePatternFilter(ResourceType.ANY, None, ACLResourcePatternType.ANY),
        )
        acls, _err = admin.describe_acls(flt)
    except Exception:  # noqa: BLE001 (no authorizer configured)
        return []
    out = []
    for a in acls or []:
        out.append(
            {  # Kafka's enum codes, as in the image JSON
                "resourceType": int(a.resource_pattern.resource_type.value),
                "resourceName": a.resource_pattern.resource_name,
                "patternType": int(a.resource_pattern.pattern_type.value),
                "principal": a.principal,
                "host": a.host,
                "operation": int(a.operation.value),
                "permissionType": int(a.permission_type.value),
            }
        )
    return sorted(out, key=lambda d: tuple(str(v) for v in d.values()))


VIEW_EXTRAS = ("acls", "logDirs", "controllers")
"""Optional parts of a view a scenario asks for: ``acls`` (ACLs and SCRAM users), ``logDirs`` (every broker's log
directories, cordoned or not: DescribeLogDirs v5, KIP-1066), ``controllers`` (the registered controllers: Kafka's
``kafka-cluster list-endpoints --bootstrap-controller``, a DescribeCluster sent to a controller, KIP-919)."""


def _log_dirs(cluster, admin, broker_ids: list[int]) -> dict:
    """{"<broker id>": {directory id: cordoned}} of the given brokers (a directory's id is the one the formatter
    wrote into its ``meta.properties``; DescribeLogDirs names it by path)."""
    out = {}
    for entry in admin.describe_log_dirs(brokers=broker_ids):
        node = cluster.nodes[entry["broker"]]
        ids = {str(path): node.directory_id(path) for path in node.log_dir_paths}
        dirs = {}
        for d in entry["log_dirs"]:
            if d.get("error_code"):
                raise RuntimeError(f"DescribeLogDirs of broker {entry['broker']}: {d}")
            dirs[ids[d["log_dir"]]] = bool(d["is_cordoned"])
        out[str(entry["broker"])] = dict(sorted(dirs.items()))
    return dict(sorted(out.items(), key=lambda kv: int(kv[0])))


def _controllers(cluster) -> list[int]:
    """Ids of the registered controllers, as a controller answers DescribeCluster (``ClusterTool list-endpoints``)."""
    from .cluster import run_java

    dist = cluster.controller.dist
    args = ["list-endpoints", "--bootstrap-controller", cluster.controller_endpoint]
    out = run_java(dist, "org.apache.kafka.tools.ClusterTool", args, timeout=60).stdout
    lines = [line.split() for line in out.splitlines() if line.strip()]
    if not lines or lines[0][:2] != ["ID", "HOST"]:
        raise RuntimeError(f"unexpected kafka-cluster list-endpoints output: {out!r}")
    return sorted(int(cols[0]) for cols in lines[1:])


def collect_view(cluster, *, extras: tuple[str, ...] = ()) -> dict:
    admin = cluster.admin()
    dc = admin.describe_cluster()
    brokers = sorted(
        (
            {
                "id": b["broker_id"],
                "host": b["host"],
                "port": b["port"],
                "rack": b.get("rack"),
                "fenced": b.get("is_fenced"),
            }
            for b in dc["brokers"]
        ),
        key=lambda b: b["id"],
    )
    topics = _describe_topics(admin)
    broker_ids = [b["id"] for b in brokers if not b["fenced"]]
    view = {
        # (no controller id: KRaft brokers report a random alive broker there)
        "cluster": {"clusterId": dc.get("cluster_id"), "brokers": brokers},
        "topics": topics,
        "configs": _describe_configs(admin, list(topics), broker_ids),
        "features": _features(admin),
        "reassignments": _reassignments(admin),
    }
    if "acls" in extras:
        view["acls"] = _acls(admin)
        view["scram"] = _scram(admin)
    if "logDirs" in extras:
        view["logDirs"] = _log_dirs(cluster, admin, broker_ids)
    if "controllers" in extras:
        view["controllers"] = _controllers(cluster)
    return view


def _scram(admin) -> dict:
    """{user: [[mechanism name as in the image ("SCRAM-SHA-256"), iterations], ...]} (sorted)."""
    out = {}
    for user, d in (admin.describe_user_scram_credentials() or {}).items():
        if d.get("error"):
            continue
        infos = sorted([c["mechanism"].name.replace("_", "-"), c["iterations"]] for c in d["credential_infos"])
        if infos:
            out[user] = infos
    return dict(sorted(out.items()))


def settle_and_record(
    cluster,
    *,
    check: Callable[[dict], bool] | None = None,
    timeout: float = 90,
    extras: tuple[str, ...] = (),
    min_gap: float = 0.8,
) -> dict:
    """Wait until the cluster's view is stable (and ``check(view)`` holds); return the view with offsets."""
    deadline = time.monotonic() + timeout
    hist: list[tuple[dict, dict]] = []
    last_err: Exception | None = None
    alive_brokers = {n.node_id for n in cluster.brokers if n.alive()}
    while time.monotonic() < deadline:
        cluster._check_processes()
        try:
            admin = cluster.admin()
            q = quorum_state(admin)
            hw = q["highWatermark"]
            # every alive broker (observer, or voter in combined mode) must have fetched up to the HW
            fetched = {**q["observers"], **q["voters"]}
            if not all(fetched.get(b, -1) >= hw for b in alive_brokers):
                time.sleep(0.2)
                continue
            time.sleep(0.3)  # let brokers apply what they fetched
            view = collect_view(cluster, extras=extras)
            hist.append((q, view))
            # three identical views in a row; the offset is the HW read just before the middle one, so
            # any change committed before it is in every view and none after it is in the middle view.
            if len(hist) >= 3 and hist[-3][1] == hist[-2][1] == hist[-1][1] and (check is None or check(view)):
                mq, mview = hist[-2]
                return {
                    "offset": mq["highWatermark"] - 1,
                    "highWatermark": mq["highWatermark"],
                    "quorumLeaderEpoch": mq["leaderEpoch"],
                    "timeMs": int(time.time() * 1000),
                    **mview,
                }
            time.sleep(min_gap)
        except Exception as e:  # noqa: BLE001 (transient errors while nodes restart)
            last_err = e
            cluster._reset_admin()
            hist.clear()
            time.sleep(0.5)
    raise TimeoutError(
        f"cluster view did not settle within {timeout}s"
        + (f" (last error: {last_err!r})" if last_err else "")
        + (f"; last view: {hist[-1][1]!r}" if hist else "")
    )
