"""A shell session: the image tree at one point of a log, and the ways to move it through time.

The tree at a point is built once per point — from the temporal image (a lake, or a log whose versions were
recorded) or by the reference engine (a log) — and every command at that point reads the same tree. What a
path's subtree is made of in the temporal image (:class:`Scope`: the versions of the keys under it) answers
``next``, ``prev``, ``history`` and ``diff`` below ``/image`` without building whole images.

A single log file read without an offset is read as ``kafka-metadata-shell --snapshot FILE`` reads it
(:func:`kafka_shell_source`)."""

from __future__ import annotations

import json
import os
import re
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, TextIO

from cli.shell.nodes import RootShellNode
from cli.shell.paths import absolute_components
from image.features import METADATA_VERSION, METADATA_VERSIONS
from image.image import MetadataImage, empty_image
from image.node.java import java_order, java_sorted, parse_int, uuid_from_string
from image.node.nodes import (
    ClientQuotasImageNode,
    ConfigurationsImageNode,
    MetadataImageNode,
    MetadataNode,
)
from image.node.releases import ShellRelease
from image.parts import PART_KEYS, Row
from image.provenance import MetadataProvenance
from image.release import NEWEST, ReplayRules
from image.temporal.reads import MemorySource, TemporalSource, provenance_at
from image.temporal.times import iso_time
from image.temporal.window import image_offset

IMAGES_KEPT = 4
"""Trees of this many points are kept (``at`` back and forth, ``diff`` against a point)."""
PART_DIRECTORIES = {
    "brokers": "/image/cluster/brokers",
    "controllers": "/image/cluster/controllers",
    "topics": "/image/topics/byId",
    "configs": "/image/configs",
    "clientQuotas": "/image/clientQuotas",
    "producerIds": "/image/producerIds",
    "acls": "/image/acls/byId",
    "scram": "/image/scram",
    "delegationTokens": "/image/delegationToken",
}
"""The directory of the files each part's rows make (partitions and features: one file per row)."""
SCOPED_ROWS = 2000
"""A subtree made of at most this many versions is built from them alone; a larger one is read from the whole tree
at its point (the same files, faster: the versions of a point are read by file statistics, not filtered here)."""

VERSION_COLUMNS = ("from_offset", "to_offset", "from_time")
_INTEGER = re.compile(r"[+-]?[0-9]+")
_LEVELS = {name: level for level, name in METADATA_VERSIONS.items()}
"""metadata.version levels by name."""


def kafka_shell_source(path: str, rules: ReplayRules = NEWEST) -> tuple[TemporalSource, int]:
    """One log file read as ``kafka-metadata-shell --snapshot FILE`` reads it, and the point Kafka's shell shows.

    Kafka's ``SnapshotFileReader`` hands every metadata batch of the file, at the offsets written in it, to the
    loader as a committed batch, and control batches to nobody. So a segment is the log it holds, shown at its
    last metadata record (later control records do not move the image); a snapshot is the log of its own records
    at their positions in the file (0 = its header): the image of its end, shown at its last record's position,
    with its batch's epoch and append time. Replayed under ``rules``."""
    from image.temporal.sources import log_source
    from metadata.log.readers import InputKind, ReadOptions, discover, iter_file_rows, to_log_record

    (found,) = discover(path)
    if found.kind in (InputKind.SNAPSHOT, InputKind.BOOTSTRAP):
        records = [
            r
            for r in (to_log_record(row, found.path) for _, row in iter_file_rows(found, [], ReadOptions()))
            if not r.is_control
        ]
        source: TemporalSource = MemorySource.replay(records, [], os.path.abspath(path), rules)
        return source, records[-1].offset if records else -1
    source = log_source(path, rules)
    bounds = source.bounds()
    return source, -1 if bounds is None else last_metadata_offset(source, bounds[1])


def last_metadata_offset(source: TemporalSource, end: int) -> int:
    """The offset of the last metadata (not control) record at or before ``end`` (-1: none), decoding only the
    batches after it."""
    bounds = source.bounds()
    first = -1 if bounds is None else bounds[0]
    while end >= first:
        start = source.batch_start(end)
        records = [r for r in source.log_records(start, end) if not r.is_control]
        if records:
            return records[-1].offset
        end = start - 1
    return -1


def name_index(source: TemporalSource, offset: int, rows: dict[str, list[Row]]) -> dict[str, str]:
    """Kafka's topic name index (``TopicsImage.topicsByName``: name → topic id) at ``offset``, as the reference
    engine's image there holds it: the index the last applied delta left (the ``topicNames`` versions change at
    the end of a batch), with the part of ``offset``'s batch up to it applied as ``TopicsDelta.apply`` does — the
    names of topics deleted in it removed, then the names of the topics it touched (created, renamed or
    partitions changed: their versions begin in it) put. ``rows``: every part's rows visible at ``offset``."""
    start = source.batch_start(offset)
    index = {r["name"]: r["topicId"] for r in rows["topicNames"]}
    live = {r["topicId"]: r["name"] for r in rows["topics"]}
    for r in source.versions("topics", (start - 1, start - 1)).to_pylist():
        if r["to_offset"] is not None and start <= r["to_offset"] <= offset and r["topicId"] not in live:
            index.pop(r["name"], None)
    for part in ("topics", "partitions"):
        for r in rows[part]:
            if r["from_offset"] >= start and r["topicId"] in live:
                index[live[r["topicId"]]] = r["topicId"]
    return index


def unwritable(image: MetadataImage, release: ShellRelease) -> str | None:
    """Why Kafka's shell never gets ``image`` (None: it does): its loader initializes the shell's publisher by
    writing the image at the image's own metadata.version (``MetadataLoader.initializeNewPublishers``), and a
    write that would lose something throws (``ImageWriterOptions.handleLoss``) — Kafka 4 has no
    metadata.version to write at before the first record of it (``metadataVersionOrThrow``), and nothing written
    before the metadata.version that brought it can be written (``ClusterImage``, ``ScramImage``,
    ``DelegationTokenImage``, ``BrokerRegistration``, ``PartitionRegistration.toRecord``). Only a log that does not
    start at its beginning holds such an image."""
    from image.partition import all_migrating

    level = image.features.metadata_version_level
    if level is None:
        return "no metadata.version"

    def before(name: str) -> bool:
        return level < _LEVELS[name]

    cluster, losses = image.cluster, []
    if release.writes_pre_3_4_state:
        if before("3.3-IV0") and image.features.finalized_versions:
            losses.append("feature flag(s): " + ", ".join(java_sorted(image.features.finalized_versions)))
        if before("3.4-IV0") and image.features.zk_migration_state:
            losses.append(f"the ZK Migration state which was {image.features.zk_migration_state_name}")
        if before("3.3-IV3") and any(b.in_controlled_shutdown for b in cluster.brokers.values()):
            losses.append("the inControlledShutdown state of one or more brokers")
    if before("3.4-IV0") and any(b.is_migrating_zk_broker for b in cluster.brokers.values()):
        losses.append("the isMigratingZkBroker state of one or more brokers")
    if before("3.7-IV2") and any(b.directories for b in cluster.brokers.values()):
        losses.append("the online log directories of one or more brokers")
    if before("4.3-IV0") and any(b.cordoned_directories is not None for b in cluster.brokers.values()):
        losses.append("the cordoned log directories of one or more brokers")
    if before("3.7-IV0") and cluster.controllers:
        losses.append("controller registration data")
    if before("3.7-IV2") and any(
        not all_migrating(p.directories) for t in image.topics.topics_by_id.values() for p in t.partitions.values()
    ):
        losses.append("the directory assignment state of one or more replicas")
    if before("3.5-IV2") and any(image.scram.mechanisms.values()):
        losses.append("the SCRAM credentials")
    if before("3.6-IV2") and image.delegation_tokens.tokens:
        losses.append("the delegation tokens")
    if not losses:
        return None
    return f"its image cannot be written at metadata.version {image.features.metadata_version_name}: " + "; ".join(
        losses
    )


def point_text(offset: int, provenance: MetadataProvenance) -> str:
    """``offset N (time)``, and the image's own offset when it differs (inside a metadata transaction)."""
    text = f"offset {offset} ({iso_time(provenance.last_contained_log_time_ms)})"
    if provenance.last_contained_offset != offset:
        text += f", the image of offset {provenance.last_contained_offset}"
    return text


def _rows_key(part: str, row: Row) -> str:
    return part + json.dumps({k: v for k, v in row.items() if k not in VERSION_COLUMNS}, sort_keys=True)


@dataclass
class Scope:
    """The versions of the keys a subtree under ``/image`` is made of: ``rows`` per part (every version of
    each selected key), and for a path through ``topics/byName/<name>`` that name, whose entry in Kafka's name
    index picks the topic at each offset."""

    rows: dict[str, list[Row]] = field(default_factory=dict)
    by_name: str | None = None
    per_row: bool = True
    """Every file under the path is made of one version row alone (everywhere but under ``topics/byName``, whose
    files also depend on Kafka's name index): the changes at an offset are then those of the rows that end or
    begin there (:meth:`Session.changes_at`)."""

    @cached_property
    def events(self) -> dict[int, tuple[list[tuple[str, Row]], list[tuple[str, Row]]]]:
        """By offset: the rows whose version ends there and those whose version begins there."""
        out: dict[int, tuple[list[tuple[str, Row]], list[tuple[str, Row]]]] = {}
        for part, rows in self.rows.items():
            for r in rows:
                out.setdefault(r["from_offset"], ([], []))[1].append((part, r))
                if r["to_offset"] is not None:
                    out.setdefault(r["to_offset"], ([], []))[0].append((part, r))
        return out

    def visible(self, offset: int) -> dict[str, list[Row]]:
        """The selected rows visible at ``offset``; for a name, only those of the topic the name stands for: the
        live topic holding it (the one declared last, if several), else the topic its index entry still points
        to (a topic renamed by re-declaring its id keeps its old name there)."""
        out = {
            part: [
                r for r in rows if r["from_offset"] <= offset and (r["to_offset"] is None or offset < r["to_offset"])
            ]
            for part, rows in self.rows.items()
        }
        if self.by_name is not None:
            topics = out.get("topics", [])
            holders = [r for r in topics if r["name"] == self.by_name]
            entry = out.get("topicNames", [])
            if holders:
                chosen: str | None = max(holders, key=lambda r: r["from_offset"])["topicId"]
            elif entry and entry[0]["topicId"] in {r["topicId"] for r in topics}:
                chosen = entry[0]["topicId"]
            else:
                chosen = None
            out["topicNames"] = [] if chosen is None else [{"name": self.by_name, "topicId": chosen}]
            for part in ("topics", "partitions"):
                out[part] = [r for r in out.get(part, ()) if r["topicId"] == chosen]
        return out

    def state(self, offset: int) -> list[str]:
        """What the subtree is at ``offset``, comparable between offsets."""
        return sorted(_rows_key(part, r) for part, rows in self.visible(offset).items() for r in rows)

    def boundaries(self) -> list[int]:
        """The offsets at which a selected version begins or ends, in order."""
        found = {r["from_offset"] for rows in self.rows.values() for r in rows}
        found |= {r["to_offset"] for rows in self.rows.values() for r in rows if r["to_offset"] is not None}
        return sorted(found)

    def time_at(self, offset: int) -> int | None:
        """The append time of the record that made a selected version begin at ``offset``."""
        began = self.events.get(offset, ((), ()))[1]
        return began[0][1]["from_time"] if began else None


class Session:
    """The state of one shell: the source, the release line it renders, the point its tree is at, the working
    directory and the command history. ``kafka_file``: a file read as Kafka's shell reads it
    (:func:`kafka_shell_source`), shown as its shell shows it."""

    def __init__(self, source: TemporalSource, release: ShellRelease, offset: int, *, kafka_file: bool = False) -> None:
        self.source = source
        self.release = release
        self.offset = offset
        self.kafka_file = kafka_file
        self.cwd = "/"
        self.history: list[str] = []
        self._images: OrderedDict[int, MetadataImage] = OrderedDict()
        self._scopes: dict[tuple[str, ...], Scope] = {}
        self._versions_recorded = not isinstance(source, MemorySource)  # a log records its versions when first asked
        self._from_versions: set[int] = set()  # points whose image was built from the versions
        self.unpublished: str | None = None
        """Why Kafka's shell shows the empty image at the last point built (a ``kafka_file`` session)."""

    # ------------------------------------------------------------------------------------------ the tree

    def image_at(self, offset: int) -> MetadataImage:
        """The image at ``offset``: built once (the last few points are kept)."""
        if offset in self._images:
            self._images.move_to_end(offset)
            return self._images[offset]
        image = self._build(offset)
        if self.kafka_file:
            self.unpublished = unwritable(image, self.release)
            if self.unpublished is not None:  # Kafka's shell never gets it: it shows the empty image it started with
                image = empty_image(self.source.rules)
        self._images[offset] = image
        while len(self._images) > IMAGES_KEPT:
            self._images.popitem(last=False)
        return image

    def _build(self, offset: int) -> MetadataImage:
        """From the versions (a lake, or a log whose versions were recorded), else the reference engine's replay
        from the snapshot before ``offset`` (records Kafka rejects are skipped, as its loader's fault handler
        skips them)."""
        from image.temporal.sources import reference_image

        if not self._versions_recorded:
            return reference_image(self.source, offset, lenient=True)
        self._from_versions.add(offset)
        rows = {part: self.source.rows_at(part, offset) for part in PART_KEYS}
        rows["topicNames"] = [{"name": n, "topicId": i} for n, i in name_index(self.source, offset, rows).items()]
        return MetadataImage.from_rows(rows, provenance_at(self.source, offset))

    def root_at(self, offset: int) -> RootShellNode:
        """The tree at ``offset``: ``/`` with ``/image`` and ``/local``."""
        image = self.image_at(offset)
        return RootShellNode(
            lambda: MetadataImageNode(image, self.release, lambda: self.zk_migration_state(offset)), self.release
        )

    @property
    def root(self) -> RootShellNode:
        return self.root_at(self.offset)

    @property
    def provenance(self) -> MetadataProvenance:
        return self.image_at(self.offset).provenance

    def zk_migration_state(self, offset: int) -> str:
        """The ZooKeeper migration state at ``offset`` (only 3.9's shell shows it; the temporal image does not
        keep it): the last ``ZkMigrationStateRecord``'s, from the replayed image or the stored records."""
        from image.features import ZK_MIGRATION_STATES

        image = self.image_at(offset)
        if offset not in self._from_versions:  # a replayed image holds it; one built from versions does not
            return image.features.zk_migration_state_name
        found = list(self.source.dump(None, offset, ("ZK_MIGRATION_STATE_RECORD",)))
        return ZK_MIGRATION_STATES.get(found[-1].data["zkMigrationState"], "NONE") if found else "NONE"

    def node(self, path: str, offset: int | None = None) -> MetadataNode | None:
        """The node at ``path`` (no globs) at ``offset`` (default: the session's point)."""
        node: MetadataNode | None = self.root_at(self.offset if offset is None else offset)
        for name in absolute_components(path, self.cwd):
            if node is None or not node.is_directory():
                return None
            node = node.child(name)
        return node

    # ------------------------------------------------------------------------------------------ moving

    def resolve(self, target: str) -> int:
        """The offset ``target`` names: an offset (an integer), or a time (ISO-8601; the last offset of the last
        batch appended at or before it)."""
        text = target.strip()
        if _INTEGER.fullmatch(text):
            return image_offset(self.source, int(text), flag=None)
        return image_offset(self.source, None, text, flag=None)

    def move(self, offset: int) -> str | None:
        """Move the tree to ``offset``; the working directory is kept if it exists there, else its nearest
        ancestor that does (returned)."""
        self.offset = offset
        components = absolute_components(self.cwd, "/")
        while components and not _is_directory(self.node("/" + "/".join(components))):
            components.pop()
        kept = "/" + "/".join(components)
        if kept == self.cwd:
            return None
        self.cwd = kept
        return kept

    # ------------------------------------------------------------------------------------------ through time

    def scope(self, path: str) -> Scope | None:
        """The versions ``path``'s subtree is made of, None for a path that holds ``/image/provenance`` (which every
        record changes: the whole image) or is outside ``/image``."""
        components = tuple(absolute_components(path, self.cwd))
        if components[:1] != ("image",) or len(components) < 2 or components[1] == "provenance":
            return None
        if components not in self._scopes:
            self._scopes[components] = self._select(list(components[1:]))
        return self._scopes[components]

    def _versions(
        self, part: str, equal: dict[str, Any] | None = None, keep: Callable[[Row], bool] | None = None
    ) -> list[Row]:
        self._versions_recorded = True
        rows = self.source.versions(part, None, equal or None).to_pylist(maps_as_pydicts="strict")
        return rows if keep is None else [r for r in rows if keep(r)]

    def _select(self, c: list[str]) -> Scope:
        """The :class:`Scope` of ``/image/<c...>`` (a name no key can have selects nothing)."""
        top, rest = c[0], c[1:]
        if top == "features":
            name = None
            if rest and rest[0] == "metadataVersion":
                name = "metadata.version"
            elif rest and rest[0].startswith("finalized_"):
                name = rest[0][len("finalized_") :]
            return Scope({"features": self._versions("features", {"name": name} if name else None)})
        if top == "cluster":
            kinds = [rest[0]] if rest else ["brokers", "controllers"]
            key = parse_int(rest[1]) if len(rest) > 1 else None
            if len(rest) > 1 and key is None:
                return Scope()
            out = {}
            for kind in kinds:
                if kind in ("brokers", "controllers"):
                    column = "brokerId" if kind == "brokers" else "controllerId"
                    out[kind] = self._versions(kind, {column: key} if key is not None else None)
            return Scope(out)
        if top == "topics":
            return self._select_topics(rest)
        if top == "configs":
            resource = ConfigurationsImageNode.resource_from_name(rest[0]) if rest else None
            if rest and resource is None:
                return Scope()
            equal = {} if resource is None else {"resourceType": resource.type, "resourceName": resource.name}
            if len(rest) > 1:
                equal["name"] = rest[1]
            return Scope({"configs": self._versions("configs", equal)})
        if top == "clientQuotas":
            entity = ClientQuotasImageNode.decode_entity(rest[0]) if rest else None
            if rest and entity is None:
                return Scope()
            wanted = None if entity is None else dict(entity)
            key = rest[1] if len(rest) > 1 else None
            return Scope(
                {
                    "clientQuotas": self._versions(
                        "clientQuotas",
                        {"key": key} if key is not None else None,
                        None if wanted is None else (lambda r: dict(r["entity"]) == wanted),
                    )
                }
            )
        if top == "producerIds":
            return Scope({"producerIds": self._versions("producerIds")})
        if top == "acls":
            acl_id = uuid_from_string(rest[1]) if len(rest) > 1 else None
            if len(rest) > 1 and acl_id is None:
                return Scope()
            return Scope({"acls": self._versions("acls", {"id": acl_id} if acl_id else None)})
        if top == "scram":
            equal = {"mechanism": rest[0]} if rest else {}
            if len(rest) > 1:
                equal["name"] = rest[1]
            return Scope({"scram": self._versions("scram", equal)})
        if top == "delegationToken":
            return Scope(
                {"delegationTokens": self._versions("delegationTokens", {"tokenId": rest[0]} if rest else None)}
            )
        return Scope()

    def _select_topics(self, rest: list[str]) -> Scope:
        if not rest or rest[0] not in ("byName", "byId"):
            if rest:
                return Scope()
            return Scope({p: self._versions(p) for p in ("topics", "partitions", "topicNames")}, per_row=False)
        partition = None
        if len(rest) > 2 and rest[2] not in ("name", "id"):
            partition = parse_int(rest[2])
            if partition is None:
                return Scope()
        if rest[0] == "byId":
            if len(rest) == 1:
                return Scope({p: self._versions(p) for p in ("topics", "partitions")})
            topic_id = uuid_from_string(rest[1])
            if topic_id is None:
                return Scope()
            return Scope(self._topic_rows([topic_id], partition, rest[2:]))
        if len(rest) == 1:
            return Scope({p: self._versions(p) for p in ("topics", "partitions", "topicNames")}, per_row=False)
        names = self._versions("topicNames", {"name": rest[1]})
        rows = self._topic_rows(sorted({r["topicId"] for r in names}), partition, rest[2:])
        return Scope({"topicNames": names, **rows}, by_name=rest[1], per_row=False)

    def _topic_rows(self, topic_ids: list[str], partition: int | None, below: list[str]) -> dict[str, list[Row]]:
        """The versions of these topics and of their partitions: all of them for the topic's directory, one
        partition's below it, none for its ``name`` and ``id`` files."""
        out: dict[str, list[Row]] = {"topics": [], "partitions": []}
        for topic_id in topic_ids:
            out["topics"] += self._versions("topics", {"topicId": topic_id})
            if not below or partition is not None:
                equal = {"topicId": topic_id, **({"partitionId": partition} if partition is not None else {})}
                out["partitions"] += self._versions("partitions", equal)
        return out

    def scoped_node(self, scope: Scope, path: str, offset: int) -> MetadataNode | None:
        """The node at ``path`` in the image made of ``scope``'s rows visible at ``offset`` alone."""
        image = MetadataImage.from_rows(scope.visible(offset), MetadataProvenance.EMPTY)
        root = RootShellNode(
            lambda: MetadataImageNode(image, self.release, lambda: self.zk_migration_state(offset)), self.release
        )
        node: MetadataNode | None = root
        for name in absolute_components(path, self.cwd):
            if node is None or not node.is_directory():
                return None
            node = node.child(name)
        return node

    def next_change(self, path: str, forward: bool) -> tuple[int, TreeDiff] | None:
        """The next (or previous) offset at which the subtree at ``path`` changes — its image differs from the one an
        offset earlier — and what changed there; None if there is none."""
        after, before = (self.offset, None) if forward else (None, self.offset)
        scope = self.scope(path)
        if scope is not None:
            return next(self.changes(scope, path, after, before), None)
        point = next(self._record_points(path, after, before), None)
        if point is None:
            return None
        return point, TreeDiff.of(self.node(path, point - 1), self.node(path, point), path)

    def changes(
        self, scope: Scope, path: str, after: int | None = None, before: int | None = None
    ) -> Iterator[tuple[int, TreeDiff]]:
        """Each change of the subtree at ``path`` and what changed there: ascending after ``after``, or descending
        before ``before`` (all, ascending, without either)."""
        points = [p for p in scope.boundaries() if p >= 0]  # versions from -1 hold before the first record
        candidates = [p for p in points if after is None or p > after]
        if before is not None:
            candidates = [p for p in reversed(points) if p < before]
        for point in candidates:
            if not scope.per_row and scope.state(point) == scope.state(point - 1):
                continue
            if diff := self.changes_at(scope, path, point):
                yield point, diff

    def changes_at(self, scope: Scope, path: str, offset: int) -> TreeDiff:
        """What changed under ``path`` at ``offset`` (against an offset earlier): for a per-row scope, the files of
        the versions ending there against those of the versions beginning there; else the subtree before and
        after."""
        if not scope.per_row:
            return TreeDiff.of(self.subtree_at(path, offset - 1, scope), self.subtree_at(path, offset, scope), path)
        ended, began = scope.events.get(offset, ([], []))
        before = {p: f for part, row in ended for p, f in self.row_files(part, row, path).items()}
        after = {p: f for part, row in began for p, f in self.row_files(part, row, path).items()}
        return TreeDiff.between(before, after)

    def row_files(self, part: str, row: Row, path: str) -> dict[str, tuple[str, Any]]:
        """The files under ``path`` that one version row makes: those of its part's directory in the tree of an
        image holding the row alone (a partition's image holds its topic too: only the partition's file is kept; a
        feature row makes one file of the features)."""
        rows: dict[str, list[Row]] = {part: [row]}
        if part == "partitions":
            rows["topics"] = [{"name": row["topic"], "topicId": row["topicId"]}]
            directory = f"/image/topics/byId/{row['topicId']}/{row['partitionId']}"
        elif part == "features":
            name = row["name"]
            directory = "/image/features/" + ("metadataVersion" if name == METADATA_VERSION else f"finalized_{name}")
        else:
            directory = PART_DIRECTORIES[part]
        image = MetadataImage.from_rows(rows, MetadataProvenance.EMPTY)
        node: MetadataNode | None = MetadataImageNode(image, self.release, lambda: "NONE")
        for name in directory.split("/")[2:]:
            node = node.child(name) if node is not None else None
        under = path.rstrip("/") + "/"
        return {p: f for p, f in leaves(node, directory).items() if p == path or p.startswith(under)}

    def _record_points(self, path: str, after: int | None, before: int | None) -> Iterator[int]:
        """Change points of a path holding ``/image/provenance``: every offset whose image has another provenance
        (none for ``/local``)."""
        if absolute_components(path, self.cwd)[:1] == ["local"]:
            return
        bounds = self.source.bounds()
        if bounds is None:
            return
        self._versions_recorded = True  # provenance_at reads the metadata transactions: a log records its versions
        first, last = bounds
        step = 64
        if after is not None:
            lo = after + 1
            while lo <= last:
                hi = min(last, lo + step - 1)
                for offset in self.source.records(lo, hi).column("offset").to_pylist():
                    if provenance_at(self.source, offset) != provenance_at(self.source, offset - 1):
                        yield offset
                lo, step = hi + 1, step * 4
        elif before is not None:
            hi = before - 1
            while hi >= first:
                lo = max(first, hi - step + 1)
                for offset in reversed(self.source.records(lo, hi).column("offset").to_pylist()):
                    if provenance_at(self.source, offset) != provenance_at(self.source, offset - 1):
                        yield offset
                hi, step = lo - 1, step * 4

    def subtree_at(self, path: str, offset: int, scope: Scope | None = None) -> MetadataNode | None:
        """The subtree at ``path`` at ``offset``: made of its ``scope``'s rows alone when they are few (a partition,
        a broker: milliseconds), else the whole tree's there (built once per point, as ``at`` builds it)."""
        if scope is not None and sum(map(len, scope.rows.values())) <= SCOPED_ROWS:
            return self.scoped_node(scope, path, offset)
        return self.node(path, offset)


def _is_directory(node: MetadataNode | None) -> bool:
    return node is not None and node.is_directory()


def leaves(node: MetadataNode | None, path: str) -> dict[str, tuple[str, Any]]:
    """Every file under ``node`` (itself if it is one) by absolute path: its text and its value."""
    out: dict[str, tuple[str, Any]] = {}
    if node is None:
        return out
    if not node.is_directory():
        lines: list[str] = []
        node.print(_Collect(lines))
        out[path] = ("\n".join(lines), node.to_json())
        return out
    for name in java_sorted(node.child_names()):
        child = node.child(name)
        out.update(leaves(child, f"{path.rstrip('/')}/{name}"))
    return out


class _Collect:
    """A printer keeping what a file prints."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines

    def enter_node(self, name: str) -> None:
        self.lines.append(f"{name}:")

    def leave_node(self) -> None:
        pass

    def output(self, text: str) -> None:
        self.lines.append(text)


@dataclass(frozen=True)
class TreeDiff:
    """What changed under a path between two points: files added, removed, changed (by absolute path)."""

    added: dict[str, tuple[str, Any]]
    removed: dict[str, tuple[str, Any]]
    changed: dict[str, tuple[tuple[str, Any], tuple[str, Any]]]

    @classmethod
    def of(cls, before: MetadataNode | None, after: MetadataNode | None, path: str) -> TreeDiff:
        """The diff of the files under two subtrees at ``path``."""
        return cls.between(leaves(before, path), leaves(after, path))

    @classmethod
    def between(cls, old: dict[str, tuple[str, Any]], new: dict[str, tuple[str, Any]]) -> TreeDiff:
        """The diff of two sets of files by path."""
        return cls(
            {p: new[p] for p in java_sorted(new.keys() - old.keys())},
            {p: old[p] for p in java_sorted(old.keys() - new.keys())},
            {p: (old[p], new[p]) for p in java_sorted(old.keys() & new.keys()) if old[p][0] != new[p][0]},
        )

    def __bool__(self) -> bool:
        return bool(self.added or self.removed or self.changed)

    def lines(self) -> list[str]:
        """``-path: text`` / ``+path: text`` lines in path order (a changed file gives one of each)."""
        out: list[tuple[bytes, int, str]] = []
        for p, (text, _) in self.removed.items():
            out.append((java_order(p), 0, f"-{p}: {text}"))
        for p, (text, _) in self.added.items():
            out.append((java_order(p), 1, f"+{p}: {text}"))
        for p, ((old, _), (new, _)) in self.changed.items():
            out += [(java_order(p), 0, f"-{p}: {old}"), (java_order(p), 1, f"+{p}: {new}")]
        return [line for _, _, line in sorted(out)]

    def to_json(self) -> dict[str, Any]:
        return {
            "added": [{"path": p, "value": v} for p, (_, v) in self.added.items()],
            "removed": [{"path": p, "value": v} for p, (_, v) in self.removed.items()],
            "changed": [{"path": p, "before": b, "after": a} for p, ((_, b), (_, a)) in self.changed.items()],
        }


@dataclass
class Context:
    """Where a command runs: the session, what it prints to, whether a person types the commands (the
    interactive shell: its commands, its terminal's width for ``ls``), and whether JSON is wanted."""

    session: Session
    out: TextIO
    interactive: bool = False
    screen_width: int | None = None
    json: bool = False
    document: Any = None
    problems: list[str] = field(default_factory=list)

    def say(self, line: str) -> None:
        """A line of text output (in JSON mode, nothing: the document says it)."""
        if not self.json:
            self.out.write(line + "\n")

    def problem(self, line: str) -> None:
        """A message Kafka's shell prints in its output (in JSON mode, kept apart)."""
        if self.json:
            self.problems.append(line)
        else:
            self.out.write(line + "\n")
