"""The temporal image: every key's versions, recorded while the reference engine replays a log.

A *version* of a key (a partition, a broker, a config key, ... — the rows of :mod:`image.parts`) is
its row together with ``from_offset``, the first offset X at which ``replay_to(log, X)`` shows it,
``to_offset``, the first offset at which it no longer does (the next version or the key's removal;
None while current), and ``from_time``, the append time of the batch that made it visible. The
image at X is then, per part, the rows with ``from_offset <= X < to_offset``: a filter, not a replay.

:class:`VersionRecorder` is the reference engine's own :class:`~image.loader.MetadataLoader`, so the
versions follow Kafka's loader exactly — one delta per batch, metadata transactions (a committed
transaction's records become visible at its EndTransactionRecord, aborted and open ones never),
Kafka's delta-boundary quirks — and after every record it compares only the keys that record can
change (:func:`candidates`) with their current versions. A stored snapshot is loaded as the reference
engine loads it: at its last contained offset the image becomes the snapshot's (loaded onto the empty
image) and every key is compared.

The recorder also reports the records the replay rejects (it always replays leniently; a strict
read raises the first rejection it sees) and the *visibility spans* of metadata transactions: while a
transaction is open the image is the one just before its BeginTransactionRecord, which is what the
provenance of an image inside a span follows (see :func:`provenance_at`).

The same recorder runs sequentially here (``--log``, tests) and per shard inside the Spark build
(:mod:`image.temporal.sharding`): a shard sees its keys' records, every transaction marker and every snapshot
boundary, so its versions are exactly those of one sequential replay.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol

from image import parts
from image.configs import RESOURCE_TYPES, ConfigResource
from image.delta import MetadataDelta
from image.errors import ReplayError
from image.features import METADATA_VERSION
from image.image import MetadataImage
from image.loader import ABORT_TRANSACTION, BEGIN_TRANSACTION, END_TRANSACTION, MetadataLoader, snapshots_to_load
from image.partition import PartitionRegistration
from image.parts import Row, row_key
from image.provenance import MetadataProvenance
from image.release import NEWEST, ReplayRules
from image.scram import scram_mechanism
from image.shapes import PART_COLUMNS, PART_KEYS
from metadata.log.records import LogRecord, Snapshot

Key = tuple[Any, ...]

COMMITTED, ABORTED, SUPERSEDED = "committed", "aborted", "superseded"
"""How a visibility span ended: End, Abort, or a snapshot loaded while the transaction was open."""


class Span(NamedTuple):
    """A metadata transaction as the loader saw it: records at offsets in [begin, end) show the image
    of offset ``begin - 1``; ``end`` is None while the transaction is open."""

    begin: int
    end: int | None
    outcome: str | None


class Rejection(NamedTuple):
    """A record the replay rejected; ``snapshot`` = (end offset, epoch) for a snapshot's record."""

    error: ReplayError
    snapshot: tuple[int, int] | None


class VersionSink(Protocol):
    """Where a recorder writes what it finds: versions as a key and its state (:func:`visible_state`; its
    row is :func:`state_row`, its column values in table order :func:`state_values`)."""

    def version(self, part: str, key: Key, state: Any, from_offset: int, to_offset: int | None, from_time: int) -> None:
        """A version recorded by this recorder (closed, or open at the end: ``to_offset`` None)."""

    def close(self, part: str, key: Key, state: Any, from_offset: int, to_offset: int) -> None:
        """A version the recorder started from (a stored one) ends at ``to_offset``."""

    def rejection(self, rejection: Rejection) -> None: ...

    def span(self, span: Span) -> None: ...


@dataclass
class VersionLog:
    """A :class:`VersionSink` that keeps everything in lists (tests, ``--log``, small logs)."""

    versions: dict[str, list[Row]] = field(default_factory=lambda: {p: [] for p in PART_KEYS})
    closings: dict[str, list[Row]] = field(default_factory=lambda: {p: [] for p in PART_KEYS})
    rejections: list[Rejection] = field(default_factory=list)
    spans: list[Span] = field(default_factory=list)

    def version(self, part: str, key: Key, state: Any, from_offset: int, to_offset: int | None, from_time: int) -> None:
        row = state_row(part, key, state)
        self.versions[part].append({**row, "from_offset": from_offset, "to_offset": to_offset, "from_time": from_time})

    def close(self, part: str, key: Key, state: Any, from_offset: int, to_offset: int) -> None:
        row = state_row(part, key, state)
        self.closings[part].append(
            {**{k: row[k] for k in PART_KEYS[part]}, "from_offset": from_offset, "to_offset": to_offset}
        )

    def rejection(self, rejection: Rejection) -> None:
        self.rejections.append(rejection)

    def span(self, span: Span) -> None:
        self.spans.append(span)


@dataclass(slots=True)
class Version:
    """The current version of a key: its state (:func:`visible_state`), where it became visible, and
    whether it was given (``stored``: read from the lake as the recorder's starting point) or recorded here."""

    state: Any
    from_offset: int
    from_time: int
    stored: bool = False


# --- what a record can change ---------------------------------------------------------------------

_BROKER_RECORDS = {
    "REGISTER_BROKER_RECORD": "brokerId",
    "UNREGISTER_BROKER_RECORD": "brokerId",
    "FENCE_BROKER_RECORD": "id",
    "UNFENCE_BROKER_RECORD": "id",
    "BROKER_REGISTRATION_CHANGE_RECORD": "brokerId",
}
_SIMPLE = {
    "REGISTER_CONTROLLER_RECORD": ("controllers", "controllerId"),
    "UNREGISTER_CONTROLLER_RECORD": ("controllers", "controllerId"),
    "ACCESS_CONTROL_ENTRY_RECORD": ("acls", "id"),
    "REMOVE_ACCESS_CONTROL_ENTRY_RECORD": ("acls", "id"),
    "DELEGATION_TOKEN_RECORD": ("delegationTokens", "tokenId"),
    "REMOVE_DELEGATION_TOKEN_RECORD": ("delegationTokens", "tokenId"),
    "FEATURE_LEVEL_RECORD": ("features", "name"),
}

_PARTITION_RECORDS = ("PARTITION_RECORD", "PARTITION_CHANGE_RECORD")

Candidate = tuple[str, Key]
"""(part, key), or a wide candidate: ``("partitions*", (topic id,))`` every partition of a topic,
``("configs*", (resource type, resource name))`` every key of a config resource, ``("partitions*", ())``
every partition."""


def candidates(record: LogRecord, image: MetadataImage, delta: MetadataDelta | None) -> list[Candidate]:
    """The keys whose visible row ``record`` can change, computed before it is replayed (a removal
    needs the name the topic has now). Over-approximation is harmless: only real changes are kept."""
    kind, data = record.type, record.data
    if kind in ("PARTITION_RECORD", "PARTITION_CHANGE_RECORD"):
        return [("partitions", (data["topicId"], data["partitionId"]))]
    if kind in _BROKER_RECORDS:
        return [("brokers", (data[_BROKER_RECORDS[kind]],))]
    if kind in _SIMPLE:
        part, field_name = _SIMPLE[kind]
        return [(part, (data[field_name],))]
    if kind == "CONFIG_RECORD":
        resource_type = RESOURCE_TYPES.get(data["resourceType"], "UNKNOWN")
        return [("configs", (resource_type, data["resourceName"], data["name"]))]
    if kind == "TOPIC_RECORD":
        return [("topics", (data["topicId"],)), ("partitions*", (data["topicId"],))]
    if kind == "REMOVE_TOPIC_RECORD":
        topic_id = data["topicId"]
        out: list[Candidate] = [("topics", (topic_id,)), ("partitions*", (topic_id,))]
        current = _topic(image, delta, topic_id)
        if current is not None:
            out.append(("configs*", ("TOPIC", current["name"])))
        return out
    if kind == "CLEAR_ELR_RECORD":
        name = data.get("topicName", "")
        if not name:
            return [("partitions*", ())]
        ids = {t.id for t in (image.topics.topics_by_name.get(name),) if t is not None}
        if delta is not None and delta.topics_delta is not None and name in delta.topics_delta.created_topics:
            ids.add(delta.topics_delta.created_topics[name])
        return [("partitions*", (topic_id,)) for topic_id in ids]
    if kind == "PRODUCER_IDS_RECORD":
        return [("producerIds", ())]
    if kind == "CLIENT_QUOTA_RECORD":
        entity = parts.quota_entity_key({e["entityType"]: e["entityName"] for e in data["entity"]})
        return [("clientQuotas", (entity, data["key"]))]
    if kind in ("USER_SCRAM_CREDENTIAL_RECORD", "REMOVE_USER_SCRAM_CREDENTIAL_RECORD"):
        mechanism = parts.SCRAM_MECHANISMS[scram_mechanism(data["mechanism"])]
        return [("scram", (mechanism, data["name"]))]
    return []  # NoOps, ZK migration state, unknown types (rejected): nothing visible changes


# --- the visible row of a key: the base image overlaid with the open delta ------------------------


def _topic(image: MetadataImage, delta: MetadataDelta | None, topic_id: str) -> Row | None:
    td = delta.topics_delta if delta is not None else None
    if td is not None:
        changed = td.changed_topics.get(topic_id)
        if changed is not None:
            return parts.topic_row(changed.image)
        if topic_id in td.deleted_topic_ids:
            return None
    topic = image.topics.topics_by_id.get(topic_id)
    return parts.topic_row(topic) if topic is not None else None


def _partition_ids(image: MetadataImage, delta: MetadataDelta | None, topic_id: str) -> set[int]:
    """Partition ids of the topic as visible now (its base partitions plus this delta's)."""
    td = delta.topics_delta if delta is not None else None
    if td is not None:
        changed = td.changed_topics.get(topic_id)
        if changed is not None:
            return set(changed.image.partitions) | set(changed.partition_changes)
        if topic_id in td.deleted_topic_ids:
            return set()
    topic = image.topics.topics_by_id.get(topic_id)
    return set(topic.partitions) if topic is not None else set()


def _overlay(
    changes: Mapping[Any, Mapping[Any, Any]] | None, base: Mapping[Any, Mapping[Any, Any]], outer: Any, inner: Any
) -> Any:
    """A two-level delta lookup: the delta's change if it has one (None = removed), else the base."""
    if changes is not None and outer in changes and inner in changes[outer]:
        return changes[outer][inner]
    return base.get(outer, {}).get(inner)


def visible_state(part: str, key: Key, image: MetadataImage, delta: MetadataDelta | None) -> Any:
    """The state of ``key`` in ``part`` in the image the loader would publish now (``delta`` applied to
    ``image``), or None if the key is absent — what ``delta.apply()`` gives for that one key. A partition's
    state is (topic name, registration): equal exactly when the rows are, made into its row
    (:func:`state_row`) only when a version is written; every other part's state is its row."""
    if part == "partitions":
        return _partition_state(image, delta, key[0], key[1])
    if part == "topics":
        return _topic(image, delta, key[0])
    if part == "brokers":
        cd = delta.cluster_delta if delta is not None else None
        b = cd.broker(key[0]) if cd is not None else image.cluster.brokers.get(key[0])
        return b.to_json() if b is not None else None
    if part == "controllers":
        cd = delta.cluster_delta if delta is not None else None
        if cd is not None and key[0] in cd.changed_controllers:
            c = cd.changed_controllers[key[0]]
        else:
            c = image.cluster.controllers.get(key[0])
        return c.to_json() if c is not None else None
    if part == "configs":
        resource = ConfigResource(key[0], key[1])
        cfd = delta.configs_delta if delta is not None else None
        value = _overlay(cfd.changes if cfd is not None else None, image.configs.resource_data, resource, key[2])
        return parts.config_row(resource, key[2], value) if value is not None else None
    if part == "features":
        fd = delta.features_delta if delta is not None else None
        if key[0] == METADATA_VERSION:
            change = fd.metadata_version_change if fd is not None else None
            level = image.features.metadata_version_level if change is None else change
            return parts.feature_row(METADATA_VERSION, level) if level is not None else None
        if fd is not None and key[0] in fd.changes:
            level = fd.changes[key[0]]
        else:
            level = image.features.finalized_versions.get(key[0])
        return parts.feature_row(key[0], level) if level is not None else None
    if part == "producerIds":
        pd = delta.producer_ids_delta if delta is not None else None
        return parts.producer_ids_row(pd.next_producer_id if pd is not None else image.producer_ids.next_producer_id)
    if part == "clientQuotas":
        qd = delta.client_quotas_delta if delta is not None else None
        value = _overlay(qd.changes if qd is not None else None, image.client_quotas.entities, key[0], key[1])
        return parts.quota_row(key[0], key[1], value) if value is not None else None
    if part == "acls":
        ad = delta.acls_delta if delta is not None else None
        a = ad.changes[key[0]] if ad is not None and key[0] in ad.changes else image.acls.acls.get(key[0])
        return a.to_json(key[0]) if a is not None else None
    if part == "scram":
        sd = delta.scram_delta if delta is not None else None
        code = parts.MECHANISM_CODES[key[0]]
        credential = _overlay(sd.changes if sd is not None else None, image.scram.mechanisms, code, key[1])
        return parts.scram_row(code, key[1], credential) if credential is not None else None
    if part == "delegationTokens":
        dd = delta.delegation_token_delta if delta is not None else None
        t = (
            dd.changes[key[0]]
            if dd is not None and key[0] in dd.changes
            else image.delegation_tokens.tokens.get(key[0])
        )
        return t.to_json() if t is not None else None
    raise ValueError(f"no visible state for part {part!r}")


def _partition_state(
    image: MetadataImage, delta: MetadataDelta | None, topic_id: str, partition_id: int
) -> tuple[str, PartitionRegistration] | None:
    td = delta.topics_delta if delta is not None else None
    if td is not None:
        changed = td.changed_topics.get(topic_id)
        if changed is not None:
            p = changed.partition_changes.get(partition_id) or changed.image.partitions.get(partition_id)
            return (changed.image.name, p) if p is not None else None
        if topic_id in td.deleted_topic_ids:
            return None
    topic = image.topics.topics_by_id.get(topic_id)
    p = topic.partitions.get(partition_id) if topic is not None else None
    return (topic.name, p) if p is not None else None  # type: ignore[union-attr]


def state_row(part: str, key: Key, state: Any) -> Row:
    """The row of a key's state (:func:`visible_state`)."""
    if part == "partitions":
        return state[1].to_json(state[0], key[0], key[1])
    return state


def row_state(part: str, row: Row) -> Any:
    """The state of a key's row (the inverse of :func:`state_row`)."""
    if part == "partitions":
        return row["topic"], parts.partition(row)
    return row


_COLUMNS = {part: tuple(name for name, _ in PART_COLUMNS[part]) for part in PART_KEYS}


def state_values(part: str, key: Key, state: Any) -> tuple[Any, ...]:
    """The values of a key's state in the column order of its versions table (lists as sequences)."""
    if part == "partitions":
        name, p = state
        return (
            name,
            key[0],
            key[1],
            p.replicas,
            p.isr,
            p.removing_replicas,
            p.adding_replicas,
            p.leader,
            p.leader_recovery_state,
            p.leader_epoch,
            p.partition_epoch,
            p.directories,
            p.elr,
            p.last_known_elr,
        )
    return tuple(state[name] for name in _COLUMNS[part])


def key_values(part: str, key: Key, state: Any) -> tuple[Any, ...]:
    """The values of a key's key columns (:data:`~image.shapes.PART_KEYS`)."""
    if part == "partitions":
        return key
    return tuple(state[name] for name in PART_KEYS[part])


# --- the recorder ---------------------------------------------------------------------------------


class VersionRecorder(MetadataLoader):
    """The batch loader, recording every key's versions into ``sink`` (always lenient: rejected
    records are reported to the sink and skipped, as Kafka's fault handler does).

    ``stored`` (part → key → row, with ``from_offset`` / ``from_time``) are the current versions to
    start from, e.g. the open rows of a lake; the recorder then starts at ``image`` (built from them)
    positioned after ``start_offset``, which must be a delta boundary outside any transaction.
    Without ``stored`` it starts from the empty image.

    As one shard of a sharded replay (:mod:`image.temporal.sharding`) it gets only its keys' records, so
    ``owns(part, row)`` says which keys of the empty image and of snapshots are its own, and only
    the shard with ``report_shared`` reports what every shard sees alike: transaction spans and
    misplaced transaction markers.
    """

    def __init__(
        self,
        sink: VersionSink,
        image: MetadataImage | None = None,
        stored: Mapping[str, Iterable[Row]] | None = None,
        *,
        rules: ReplayRules = NEWEST,
        owns: Callable[[str, Row], bool] | None = None,
        report_shared: bool = True,
    ) -> None:
        super().__init__(image, rules=rules, lenient=True)
        image = self._image
        self.sink = sink
        self.owns = owns
        self.report_shared = report_shared
        self._publish_at: int | None = None
        self._at = -1  # the offset whose changes are being recorded
        self._before: dict[tuple[str, Key], Version | None] = {}  # versions before changes at _at
        self.open: dict[str, dict[Key, Version]] = {p: {} for p in PART_KEYS}
        self._partitions_by_topic: dict[str, set[int]] = {}
        self._configs_by_resource: dict[tuple[str, str], set[str]] = {}
        self._txn_candidates: list[Candidate] = []
        self._begin: int | None = None
        if stored is None:
            for part, rows in image.rows().items():
                for row in rows:
                    if owns is None or owns(part, row):
                        self._add(part, row_key(part, row), Version(row_state(part, row), -1, -1))
        else:
            topics = image.topics.topics_by_id
            for part, rows in stored.items():
                for row in rows:
                    if part == "partitions":  # the image built from these rows holds the registration already
                        topic = topics.get(row["topicId"])
                        registration = topic.partitions.get(row["partitionId"]) if topic is not None else None
                        state = (row["topic"], registration) if registration is not None else row_state(part, row)
                    else:
                        state = {k: v for k, v in row.items() if k not in ("from_offset", "to_offset", "from_time")}
                    self._add(
                        part, row_key(part, row), Version(state, row["from_offset"], row["from_time"], stored=True)
                    )

    # bookkeeping of the current versions
    def _add(self, part: str, key: Key, version: Version) -> None:
        self.open[part][key] = version
        if part == "partitions":
            self._partitions_by_topic.setdefault(key[0], set()).add(key[1])
        elif part == "configs":
            self._configs_by_resource.setdefault(key[:2], set()).add(key[2])

    def _remove(self, part: str, key: Key) -> None:
        del self.open[part][key]
        if part == "partitions":
            self._partitions_by_topic[key[0]].discard(key[1])
        elif part == "configs":
            self._configs_by_resource[key[:2]].discard(key[2])

    def _end(self, part: str, key: Key, version: Version, to_offset: int) -> None:
        if version.stored:
            self.sink.close(part, key, version.state, version.from_offset, to_offset)
        else:
            self.sink.version(part, key, version.state, version.from_offset, to_offset, version.from_time)

    def _set(self, part: str, key: Key, state: Any, offset: int, time: int) -> None:
        """The state of ``key`` (:func:`visible_state`) as visible from ``offset`` on (None: absent). Changes
        at one offset are settled together when the next offset is reached (:meth:`_settle`): a key changed
        and changed back at one offset (a record, then a snapshot loaded at that offset) keeps its version."""
        if offset != self._at:
            self._settle()
            self._at = offset
        store = self.open[part]
        current = store.get(key)
        if current is None if state is None else current is not None and current.state == state:
            return
        changed = (part, key)
        if changed not in self._before:
            self._before[changed] = current
        else:  # changed again at this offset: back to the version before it, which then goes on
            before = self._before[changed]
            if before is not None and state is not None and before.state == state:
                del self._before[changed]
                if current is None:
                    self._add(part, key, before)
                else:
                    store[key] = before
                return
        if state is None:
            self._remove(part, key)
        elif current is not None:  # same key, new state: the indexes stay
            store[key] = Version(state, offset, time)
        else:
            self._add(part, key, Version(state, offset, time))

    def _settle(self) -> None:
        """End the versions that changed at the offset recorded last."""
        for (part, key), before in self._before.items():
            if before is not None:
                self._end(part, key, before, self._at)
        self._before.clear()

    def _expand(self, candidate: Candidate) -> Iterator[tuple[str, Key]]:
        part, key = candidate
        if part == "partitions*":
            topic_ids = [key[0]] if key else list(self._all_topic_ids())
            for topic_id in topic_ids:
                ids = self._partitions_by_topic.get(topic_id, set()) | _partition_ids(
                    self._image, self._delta, topic_id
                )
                for partition_id in ids:
                    yield "partitions", (topic_id, partition_id)
        elif part == "configs*":
            names = set(self._configs_by_resource.get(key, ()))
            resource = ConfigResource(*key)
            names.update(self._image.configs.resource_data.get(resource, {}))
            cfd = self._delta.configs_delta if self._delta is not None else None
            if cfd is not None:
                names.update(cfd.changes.get(resource, {}))
            for name in names:
                yield "configs", (*key, name)
        else:
            yield part, key

    def _all_topic_ids(self) -> set[str]:
        ids = set(self._partitions_by_topic) | set(self._image.topics.topics_by_id)
        if self._delta is not None and self._delta.topics_delta is not None:
            ids |= set(self._delta.topics_delta.changed_topics)
        return ids

    def _record(self, found: Iterable[Candidate], offset: int, time: int) -> None:
        """Compare the candidates' visible rows with their current versions, as of ``offset``."""
        for candidate in found:
            for part, key in self._expand(candidate):
                self._set(part, key, visible_state(part, key, self._image, self._delta), offset, time)

    # loader hooks
    def _replay_data(self, record: LogRecord, index: int) -> None:
        kind = record.type
        if kind in (BEGIN_TRANSACTION, END_TRANSACTION, ABORT_TRANSACTION):
            was_open = self.in_transaction
            self._publish_at = record.offset - 1  # a Begin inside a batch publishes what precedes it
            super()._replay_data(record, index)
            self._publish_at = None
            if not was_open and self.in_transaction:
                self._begin = record.offset
            elif was_open and not self.in_transaction:
                committed = kind == END_TRANSACTION
                found, self._txn_candidates = self._txn_candidates, []
                if committed:
                    self._record(found, record.offset, self._last_time)
                self._end_span(record.offset, COMMITTED if committed else ABORTED)
            return
        if kind in _PARTITION_RECORDS and not self.in_transaction:  # most records: one key, no expansion
            super()._replay_data(record, index)
            data = record.data
            topic_id, partition_id = data["topicId"], data["partitionId"]
            state = _partition_state(self._image, self._delta, topic_id, partition_id)
            self._set("partitions", (topic_id, partition_id), state, record.offset, self._last_time)
            return
        found = candidates(record, self._image, self._delta)
        super()._replay_data(record, index)
        if self.in_transaction:
            self._txn_candidates.extend(found)
        else:
            self._record(found, record.offset, self._last_time)

    def _end_span(self, end: int | None, outcome: str | None) -> None:
        assert self._begin is not None
        if self.report_shared:
            self.sink.span(Span(self._begin, end, outcome))
        self._begin = None

    def _publish(self, provenance: MetadataProvenance) -> None:
        delta = self._delta
        names: set[str] = set()
        if delta is not None and delta.topics_delta is not None:
            td = delta.topics_delta
            index = self.open["topicNames"]
            for topic_id, changed in td.changed_topics.items():
                current = index.get((changed.name,))
                if current is None or current.state["topicId"] != topic_id:
                    names.add(changed.name)
            names.update(td.image.topics_by_id[topic_id].name for topic_id in td.deleted_topic_ids)
        super()._publish(provenance)
        if not names:
            return
        # The name index changes only when a delta is applied (image.parts): at the batch's last offset,
        # or just before a BeginTransactionRecord inside a batch (a shard may not have read that record).
        offset = self._publish_at if self._publish_at is not None else provenance.last_contained_offset
        by_name = self._image.topics.topics_by_name
        for name in names:
            topic = by_name.get(name)
            self._set(
                "topicNames",
                (name,),
                parts.topic_name_row(name, topic.id) if topic is not None else None,
                offset,
                provenance.last_contained_log_time_ms,
            )

    def _fail(self, error: ReplayError) -> None:
        super()._fail(error)
        if self.report_shared or error.record_type not in (BEGIN_TRANSACTION, END_TRANSACTION, ABORT_TRANSACTION):
            self.sink.rejection(Rejection(error, None))

    def load_snapshot(
        self, records: Iterable[LogRecord], end_offset: int, epoch: int, last_contained_timestamp: int | None = None
    ) -> MetadataDelta:
        """Load a snapshot as the reference engine does (onto the empty image); every key is compared."""
        if self._batch_last_offset is not None and self._batch_last_offset < end_offset:
            self._end_batch()  # a whole batch before the snapshot (a shard may not have read its last record)
        fresh = MetadataLoader(rules=self.rules, lenient=True)
        delta = fresh.load_snapshot(records, end_offset, epoch, last_contained_timestamp)
        for error in fresh.errors:
            self.sink.rejection(Rejection(error, (end_offset, epoch)))
        if self.in_transaction:
            self._txn_candidates = []
            self._end_span(end_offset - 1, SUPERSEDED)
        self._image, self._delta = fresh.image(), None
        self._reset(self._image.provenance)
        offset, time = end_offset - 1, self._image.provenance.last_contained_log_time_ms
        rows = self._image.rows()
        for part in PART_KEYS:
            now = {
                row_key(part, row): row_state(part, row)
                for row in rows[part]
                if self.owns is None or self.owns(part, row)
            }
            for key in set(self.open[part]) | set(now):
                self._set(part, key, now.get(key), offset, time)
        return delta

    def finish(self) -> None:
        """End of the input (whole batches): the last batch ends, the versions still current are written
        open, an open transaction as an open span."""
        if self._batch_last_offset is not None:
            self._end_batch()
        if self.in_transaction:
            self._txn_candidates = []
            self._end_span(None, None)
        self._settle()
        for part, versions in self.open.items():
            for key, version in versions.items():
                if not version.stored:
                    self.sink.version(part, key, version.state, version.from_offset, None, version.from_time)


def record_versions(
    log: Iterable[LogRecord],
    snapshots: Iterable[Snapshot] = (),
    *,
    sink: VersionSink | None = None,
    rules: ReplayRules = NEWEST,
) -> VersionSink:
    """Record the versions of a whole log from the rules' empty image (see :func:`replay_with_snapshots`).
    Returns the sink (a :class:`VersionLog` by default)."""
    sink = sink if sink is not None else VersionLog()
    replay_with_snapshots(VersionRecorder(sink, rules=rules), log, snapshots)
    return sink


def replay_with_snapshots(recorder: VersionRecorder, log: Iterable[LogRecord], snapshots: Iterable[Snapshot]) -> None:
    """Feed ``recorder`` the log records in offset order with each snapshot loaded at its last contained
    offset (:func:`image.loader.snapshots_to_load`: of several with one end offset the highest epoch), then finish
    it."""
    pending = snapshots_to_load(snapshots)
    for record in log:
        while pending and pending[0].end_offset - 1 < record.offset:
            snap = pending.pop(0)
            recorder.load_snapshot(snap.records, snap.end_offset, snap.epoch, snap.last_contained_timestamp)
        recorder.replay(record)
    for snap in pending:
        recorder.load_snapshot(snap.records, snap.end_offset, snap.epoch, snap.last_contained_timestamp)
    recorder.finish()
