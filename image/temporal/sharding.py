"""Sharding the replay: which records must stay together so that disjoint shards of a log, each
replayed by its own :class:`~image.temporal.versions.VersionRecorder`, give exactly the versions, errors and
visibility spans of one sequential replay.

Every record has a *route key* (:func:`route_key`): the image key it reads and writes. Kafka's replay
couples keys only through topics: a topic id with its name (TopicRecord; re-creation under the same
name and name collisions resolve through the name index), the topic's partitions and RemoveTopicRecord
(by id), its TOPIC configs (by name: a removal deletes the configs of the name the topic has then),
ClearElrRecord by name. So topic ids and names are nodes joined by every (id, name) pair seen — in
TopicRecords of the log and of snapshots, and in the rows a replay resumes from — and each connected
component goes to one shard whole (:class:`ShardPlan`). Every other key (a broker, a controller, a
feature, a quota entity, an ACL, a SCRAM user, a token, a non-topic config resource, the producer-id
block; client quotas together) is independent. Transaction markers and ClearElrRecords with an empty name go to
every shard (:data:`EVERY_SHARD`); NoOps and control records never reach a shard (they change no key; provenance
comes from the ``records`` table, see :func:`image.temporal.versions.provenance_at`).

Each shard also sees every snapshot boundary (it loads the snapshot's records routed to it), and only
shard 0 reports what every shard sees alike (transaction spans and misplaced markers).
"""

from __future__ import annotations

import random
import zlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from image.configs import RESOURCE_TYPES
from image.loader import snapshots_to_load
from image.parts import Row
from image.release import NEWEST, ReplayRules
from image.scram import scram_mechanism
from image.temporal.versions import VersionLog, VersionRecorder, VersionSink, replay_with_snapshots
from metadata.log.records import LogRecord, Snapshot

EVERY_SHARD = ""
"""Route key of records every shard replays (transaction markers, ClearElr of every topic)."""

TOPIC_ID, TOPIC_NAME = "id:", "name:"

_BY_FIELD = {
    "PARTITION_RECORD": ("id:", "topicId"),
    "PARTITION_CHANGE_RECORD": ("id:", "topicId"),
    "REMOVE_TOPIC_RECORD": ("id:", "topicId"),
    "TOPIC_RECORD": ("id:", "topicId"),
    "REGISTER_BROKER_RECORD": ("broker:", "brokerId"),
    "UNREGISTER_BROKER_RECORD": ("broker:", "brokerId"),
    "BROKER_REGISTRATION_CHANGE_RECORD": ("broker:", "brokerId"),
    "FENCE_BROKER_RECORD": ("broker:", "id"),
    "UNFENCE_BROKER_RECORD": ("broker:", "id"),
    "REGISTER_CONTROLLER_RECORD": ("controller:", "controllerId"),
    "UNREGISTER_CONTROLLER_RECORD": ("controller:", "controllerId"),
    "FEATURE_LEVEL_RECORD": ("feature:", "name"),
    "ACCESS_CONTROL_ENTRY_RECORD": ("acl:", "id"),
    "REMOVE_ACCESS_CONTROL_ENTRY_RECORD": ("acl:", "id"),
    "DELEGATION_TOKEN_RECORD": ("token:", "tokenId"),
    "REMOVE_DELEGATION_TOKEN_RECORD": ("token:", "tokenId"),
}
"""Record types routed by one field: (key prefix, field)."""

_MARKERS = ("BEGIN_TRANSACTION_RECORD", "END_TRANSACTION_RECORD", "ABORT_TRANSACTION_RECORD")


UNDECODED = "undecoded"
"""Route key suffix (``other:undecoded``) of the records kept raw by ``--skip-unknown`` (no type): one shard reports
them."""

QUOTAS = "quota:"
"""Client quotas are few: they share one route key (any grouping of independent keys is exact)."""


def route_key(record: LogRecord) -> str:
    """The route key of a metadata record (not a control record or NoOp): :data:`EVERY_SHARD`, a topic
    node (``id:<topic id>`` / ``name:<topic name>``) or the key of an independent image key."""
    kind, data = record.type, record.data
    if kind in _BY_FIELD:
        prefix, name = _BY_FIELD[kind]
        return f"{prefix}{data[name]}"
    if kind in _MARKERS:
        return EVERY_SHARD
    if kind == "CLEAR_ELR_RECORD":
        name = data.get("topicName", "")
        return TOPIC_NAME + name if name else EVERY_SHARD
    if kind == "CONFIG_RECORD":
        resource_type = RESOURCE_TYPES.get(data["resourceType"], "UNKNOWN")
        if resource_type == "TOPIC":
            return TOPIC_NAME + data["resourceName"]
        return f"config:{resource_type}:{data['resourceName']}"
    if kind == "CLIENT_QUOTA_RECORD":
        return QUOTAS
    if kind in ("USER_SCRAM_CREDENTIAL_RECORD", "REMOVE_USER_SCRAM_CREDENTIAL_RECORD"):
        return f"scram:{scram_mechanism(data['mechanism'])}:{data['name']}"
    if kind == "PRODUCER_IDS_RECORD":
        return "producerIds"
    return f"other:{kind or UNDECODED}"  # the ZK migration state, unknown types (rejected wherever they go)


_MECHANISMS = {"UNKNOWN": 0, "SCRAM-SHA-256": 1, "SCRAM-SHA-512": 2}


def row_route_key(part: str, row: Row) -> str:
    """The route key of an image row (as the records that write it are routed)."""
    if part in ("topics", "partitions"):
        return TOPIC_ID + row["topicId"]
    if part == "topicNames":
        return TOPIC_NAME + row["name"]
    if part == "brokers":
        return f"broker:{row['brokerId']}"
    if part == "controllers":
        return f"controller:{row['controllerId']}"
    if part == "configs":
        if row["resourceType"] == "TOPIC":
            return TOPIC_NAME + row["resourceName"]
        return f"config:{row['resourceType']}:{row['resourceName']}"
    if part == "features":
        return f"feature:{row['name']}"
    if part == "producerIds":
        return "producerIds"
    if part == "clientQuotas":
        return QUOTAS
    if part == "acls":
        return f"acl:{row['id']}"
    if part == "scram":
        return f"scram:{_MECHANISMS[row['mechanism']]}:{row['name']}"
    if part == "delegationTokens":
        return f"token:{row['tokenId']}"
    raise ValueError(f"unknown part {part!r}")


def _json(field: str, payload: str) -> str:
    return f"get_json_object({payload}, '$.{field}')"


def _resource_type_sql(code: str) -> str:
    return (
        "CASE " + " ".join(f"WHEN {code} = '{c}' THEN '{n}'" for c, n in RESOURCE_TYPES.items()) + " ELSE 'UNKNOWN' END"
    )


def route_key_sql(type_column: str = "type", payload: str = "payload") -> str:
    """:func:`route_key` as a Spark SQL expression over a record's type and payload JSON."""
    cases = [
        f"WHEN '{kind}' THEN concat('{prefix}', {_json(name, payload)})" for kind, (prefix, name) in _BY_FIELD.items()
    ]
    cases += [f"WHEN '{kind}' THEN '{EVERY_SHARD}'" for kind in _MARKERS]
    topic_name = _json("topicName", payload)
    cases.append(
        f"WHEN 'CLEAR_ELR_RECORD' THEN CASE WHEN coalesce({topic_name}, '') = '' THEN '{EVERY_SHARD}' "
        f"ELSE concat('{TOPIC_NAME}', {topic_name}) END"
    )
    resource = _resource_type_sql(_json("resourceType", payload))
    cases.append(
        f"WHEN 'CONFIG_RECORD' THEN CASE WHEN {resource} = 'TOPIC' THEN concat('{TOPIC_NAME}', "
        f"{_json('resourceName', payload)}) ELSE concat('config:', {resource}, ':', "
        f"{_json('resourceName', payload)}) END"
    )
    cases.append(f"WHEN 'CLIENT_QUOTA_RECORD' THEN '{QUOTAS}'")
    mechanism = _json("mechanism", payload)
    for kind in ("USER_SCRAM_CREDENTIAL_RECORD", "REMOVE_USER_SCRAM_CREDENTIAL_RECORD"):
        cases.append(
            f"WHEN '{kind}' THEN concat('scram:', CASE WHEN {mechanism} IN ('1', '2') THEN {mechanism} "
            f"ELSE '0' END, ':', {_json('name', payload)})"
        )
    cases.append("WHEN 'PRODUCER_IDS_RECORD' THEN 'producerIds'")
    return (
        f"CASE {type_column} " + " ".join(cases) + f" ELSE concat('other:', coalesce({type_column}, '{UNDECODED}')) END"
    )


def row_route_key_sql(part: str) -> str:
    """:func:`row_route_key` as a Spark SQL expression over the columns of ``part``'s versions table."""
    simple = {
        "topics": "concat('id:', topicId)",
        "partitions": "concat('id:', topicId)",
        "topicNames": "concat('name:', name)",
        "brokers": "concat('broker:', brokerId)",
        "controllers": "concat('controller:', controllerId)",
        "features": "concat('feature:', name)",
        "producerIds": "'producerIds'",
        "clientQuotas": f"'{QUOTAS}'",
        "acls": "concat('acl:', id)",
        "delegationTokens": "concat('token:', tokenId)",
        "configs": "CASE WHEN resourceType = 'TOPIC' THEN concat('name:', resourceName) "
        "ELSE concat('config:', resourceType, ':', resourceName) END",
        "scram": "concat('scram:', "
        + "CASE mechanism "
        + " ".join(f"WHEN '{n}' THEN '{c}'" for n, c in _MECHANISMS.items())
        + " END, ':', name)",
    }
    return simple[part]


def partition_keys(partitions: int) -> list[int]:
    """For each partition p, an int whose Spark hash partitioning (``pmod(hash(k), partitions)``, Murmur3
    with seed 42) is p: shard s goes to partition s, one shard per task."""
    found: dict[int, int] = {}
    k = 0
    while len(found) < partitions:
        found.setdefault(_murmur3_int(k) % partitions, k)
        k += 1
    return [found[p] for p in range(partitions)]


def _murmur3_int(value: int, seed: int = 42) -> int:
    """Spark's ``Murmur3_x86_32.hashInt`` (signed result)."""

    def rotl(x: int, r: int) -> int:
        return ((x << r) | (x >> (32 - r))) & 0xFFFFFFFF

    k1 = (value & 0xFFFFFFFF) * 0xCC9E2D51 & 0xFFFFFFFF
    k1 = rotl(k1, 15) * 0x1B873593 & 0xFFFFFFFF
    h1 = seed ^ k1
    h1 = (rotl(h1, 13) * 5 + 0xE6546B64) & 0xFFFFFFFF
    h1 ^= 4
    h1 ^= h1 >> 16
    h1 = h1 * 0x85EBCA6B & 0xFFFFFFFF
    h1 ^= h1 >> 13
    h1 = h1 * 0xC2B2AE35 & 0xFFFFFFFF
    h1 ^= h1 >> 16
    return h1 - (1 << 32) if h1 & 0x80000000 else h1


def topic_edges(
    records: Iterable[LogRecord] = (), rows: Mapping[str, Iterable[Row]] | None = None
) -> Iterator[tuple[str, str]]:
    """(id node, name node) pairs that couple topics: TopicRecords, and the ``topics`` and
    ``topicNames`` rows a replay resumes from."""
    for r in records:
        if r.type == "TOPIC_RECORD":
            yield TOPIC_ID + r.data["topicId"], TOPIC_NAME + r.data["name"]
    for part in ("topics", "topicNames"):
        for row in (rows or {}).get(part, ()):
            yield TOPIC_ID + row["topicId"], TOPIC_NAME + row["name"]


def spread(key: str, shards: int) -> int:
    """The shard of a key no plan names: a stable hash (the same in every process)."""
    return zlib.crc32(key.encode()) % shards


def components(edges: Iterable[tuple[str, str]]) -> dict[str, str]:
    """Each node of ``edges`` mapped to its connected component's representative (union-find): the topic
    ids and names :func:`topic_edges` couples, which one shard replays together."""
    parent: dict[str, str] = {}

    def find(node: str) -> str:
        parent.setdefault(node, node)
        while parent[node] != node:
            parent[node] = parent[parent[node]]
            node = parent[node]
        return node

    for a, b in edges:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    return {node: find(node) for node in list(parent)}


@dataclass(frozen=True)
class ShardPlan:
    """Shard of every route key the plan was made for (others: :func:`spread`)."""

    shards: int
    assignment: Mapping[str, int]

    def shard(self, key: str) -> int:
        return self.assignment.get(key, spread(key, self.shards)) if key else 0

    @classmethod
    def make(
        cls, weights: Mapping[str, int], edges: Iterable[tuple[str, str]], shards: int, seed: int | None = None
    ) -> ShardPlan:
        """Components of the topic nodes (union-find over ``edges``) and every other weighted key,
        placed heaviest first on the lightest shard (ties broken by ``seed`` when given, else by key),
        so that a hot topic is one shard's whole load but many topics spread evenly."""
        root = components(edges)
        groups: dict[str, list[str]] = {}
        for key in {*weights, *root} - {EVERY_SHARD}:
            groups.setdefault(root.get(key, key), []).append(key)
        order = sorted(groups, key=lambda g: (-sum(weights.get(k, 0) for k in groups[g]), g))
        if seed is not None:
            rng = random.Random(seed)
            order = sorted(order, key=lambda g: (-sum(weights.get(k, 0) for k in groups[g]), rng.random()))
        load = [0] * shards
        assignment: dict[str, int] = {}
        for group in order:
            target = min(range(shards), key=lambda s: (load[s], s))
            load[target] += sum(weights.get(k, 0) for k in groups[group]) or 1
            for key in groups[group]:
                assignment[key] = target
        return cls(shards, assignment)


def plan_for(
    records: Sequence[LogRecord],
    snapshots: Iterable[Sequence[LogRecord]] = (),
    rows: Mapping[str, Iterable[Row]] | None = None,
    shards: int = 2,
    seed: int | None = None,
) -> ShardPlan:
    """A plan for an in-memory log (tests, small logs): weights = records per route key."""
    weights: dict[str, int] = {}
    snapshot_records = [r for s in snapshots for r in s]
    for r in [*records, *snapshot_records]:
        if not r.is_control and r.type != "NO_OP_RECORD":
            key = route_key(r)
            weights[key] = weights.get(key, 0) + 1
    for part, part_rows in (rows or {}).items():
        for row in part_rows:
            weights.setdefault(row_route_key(part, row), 0)
    return ShardPlan.make(weights, topic_edges([*records, *snapshot_records], rows), shards, seed)


def routed_to(record: LogRecord, plan: ShardPlan, shard: int) -> bool:
    """Whether shard ``shard`` of ``plan`` replays ``record``: not a control record or NoOp, and routed to it (or to
    every shard)."""
    if record.is_control or record.type == "NO_OP_RECORD":
        return False
    key = route_key(record)
    return key == EVERY_SHARD or plan.shard(key) == shard


def record_shard(
    log: Iterable[LogRecord],
    snapshots: Sequence[Snapshot],
    plan: ShardPlan,
    shard: int,
    sink: VersionSink,
    rules: ReplayRules = NEWEST,
    *,
    routed: bool = False,
) -> int:
    """Shard ``shard`` of ``plan`` of :func:`image.temporal.versions.record_versions` into ``sink``: the records
    routed to it (and those every shard replays: :func:`routed_to`), each snapshot's records routed to it loaded at the
    snapshot's end, the keys of the empty image and of snapshots it owns. ``routed``: ``log`` holds only the shard's
    records already (it is read once, as the replay goes). The records it replayed."""
    ordered = snapshots_to_load(snapshots)
    replayed = 0

    def shard_log() -> Iterator[LogRecord]:
        nonlocal replayed
        for record in log:
            if routed or routed_to(record, plan, shard):
                replayed += 1
                yield record

    shard_snapshots = [
        Snapshot([r for r in s.records if routed_to(r, plan, shard)], s.end_offset, s.epoch, s.last_contained_timestamp)
        for s in ordered
    ]
    recorder = VersionRecorder(
        sink,
        rules=rules,
        owns=lambda part, row: plan.shard(row_route_key(part, row)) == shard,
        report_shared=shard == 0,
    )
    replay_with_snapshots(recorder, shard_log(), shard_snapshots)
    return replayed + sum(len(s.records) for s in shard_snapshots)


def record_sharded(
    log: Sequence[LogRecord], snapshots: Sequence[Snapshot], plan: ShardPlan, rules: ReplayRules = NEWEST
) -> VersionLog:
    """:func:`image.temporal.versions.record_versions` as ``plan.shards`` independent shards, merged: what the
    Spark build does, in process (tests of the routing)."""
    merged = VersionLog()
    for shard in range(plan.shards):
        record_shard(log, snapshots, plan, shard, merged, rules)
    return merged
