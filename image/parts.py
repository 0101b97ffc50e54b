"""The image as rows: one row per key of each part, in the field names of the image JSON.

This is the one place that turns image objects into the rows of the image JSON (``image/README.md``),
turns such rows back into image objects, and assembles rows into the JSON document. The reference
engine (``MetadataImage.to_json``), the temporal image (every key's versions, :mod:`image.temporal.versions`)
and every read path share it, so an image has one JSON form whichever way it was computed.

``topicNames`` is a hidden part: Kafka's ``TopicsImage.topicsByName`` index (name → topic id). It
normally mirrors ``topics``, but a TopicRecord that re-declares a topic id under another name leaves the
old name in the index (Kafka's quirk), and later replay (name collisions, ClearElr by name) sees it.
It is kept so that a replay can resume from rows exactly; it is not part of the JSON.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from operator import itemgetter
from typing import Any

from image.acls import StandardAcl
from image.client_quotas import ClientQuotaEntity
from image.cluster import BrokerRegistration, ControllerRegistration, Endpoint, VersionRange
from image.configs import ConfigResource
from image.delegation_tokens import DelegationTokenData
from image.partition import PartitionRegistration
from image.scram import SCRAM_MECHANISMS, ScramCredentialData
from image.shapes import PART_COLUMNS, PART_KEYS, SHAPES, PartShape
from image.topics import TopicImage
from metadata.log.errors import BadInput

Row = dict[str, Any]

JSON_PARTS = tuple(part for part, shape in SHAPES.items() if not shape.hidden)
"""The parts of the image JSON, in its order."""

MECHANISM_CODES = {name: code for code, name in SCRAM_MECHANISMS.items()}


def _entity_sort(entity: Mapping[str, str | None]) -> tuple[tuple[str, tuple[int, str]], ...]:
    """Entity pairs in type order; a null (default) name sorts before every name."""
    return tuple((k, (0, "") if v is None else (1, v)) for k, v in sorted(entity.items()))


def _sort_key(shape: PartShape) -> Callable[[Row], Any]:
    """The sort key of a row of ``shape``'s list: its :attr:`~image.shapes.PartShape.order` columns."""
    kinds = dict(shape.columns)
    if not any(kinds[c] == "entity" for c in shape.order):
        return itemgetter(*shape.order)
    return lambda r: tuple(_entity_sort(r[c]) if kinds[c] == "entity" else r[c] for c in shape.order)


SORT_KEYS: dict[str, Callable[[Row], Any]] = {part: _sort_key(shape) for part, shape in SHAPES.items() if shape.order}
"""The documented order of each list of the image JSON."""


def row_key(part: str, row: Mapping[str, Any]) -> tuple[Any, ...]:
    """The key of ``row`` in ``part`` (a clientQuotas entity as its sorted (type, name) pairs)."""
    if part == "clientQuotas":
        return tuple(sorted(row["entity"].items())), row["key"]
    return tuple(row[k] for k in PART_KEYS[part])


# --- rows of image objects ------------------------------------------------------------------------


def topic_row(topic: TopicImage) -> Row:
    return {"name": topic.name, "topicId": topic.id}


def config_row(resource: ConfigResource, name: str, value: str) -> Row:
    return {"resourceType": resource.type, "resourceName": resource.name, "name": name, "value": value}


def feature_row(name: str, level: int) -> Row:
    return {"name": name, "level": level}


def producer_ids_row(next_producer_id: int) -> Row:
    return {"nextProducerId": next_producer_id}


def quota_row(entity: ClientQuotaEntity, key: str, value: float) -> Row:
    return {"entity": dict(entity), "key": key, "value": value}


def scram_row(mechanism: int, name: str, credential: ScramCredentialData) -> Row:
    return {
        "mechanism": SCRAM_MECHANISMS[mechanism],
        "name": name,
        "salt": credential.salt,
        "storedKey": credential.stored_key,
        "serverKey": credential.server_key,
        "iterations": credential.iterations,
    }


def topic_name_row(name: str, topic_id: str) -> Row:
    return {"name": name, "topicId": topic_id}


def assemble(rows: Mapping[str, Iterable[Row]], offset: int, epoch: int, timestamp: int) -> dict[str, Any]:
    """The image JSON from rows (any order, any extra columns) and provenance: every row's fields in
    the order of :data:`~image.shapes.PART_COLUMNS`, every list in its documented order,
    nested ``endPoints`` / ``features`` by name, ``features`` as a name → level map sorted by name."""
    doc: dict[str, Any] = {"offset": offset, "epoch": epoch, "timestamp": timestamp}
    for part in JSON_PARTS:
        names = [name for name, _ in PART_COLUMNS[part]]
        part_rows = [{name: row[name] for name in names} for row in rows.get(part, ())]
        if part == "features":
            doc[part] = dict(sorted((r["name"], r["level"]) for r in part_rows))
        elif part == "producerIds":
            doc[part] = dict(part_rows[0]) if part_rows else producer_ids_row(-1)
        else:
            if part in ("brokers", "controllers"):
                part_rows = [
                    {
                        **r,
                        "endPoints": sorted(r["endPoints"], key=_by_name),
                        "features": sorted(r["features"], key=_by_name),
                    }
                    for r in part_rows
                ]
            doc[part] = sorted(part_rows, key=SORT_KEYS[part])
    return doc


def _by_name(entry: Mapping[str, Any]) -> str:
    return entry["name"]


# --- image objects from rows ----------------------------------------------------------------------


def partition(row: Row) -> PartitionRegistration:
    return PartitionRegistration(
        replicas=tuple(row["replicas"]),
        directories=tuple(row["directories"]),
        isr=tuple(row["isr"]),
        removing_replicas=tuple(row["removingReplicas"]),
        adding_replicas=tuple(row["addingReplicas"]),
        elr=tuple(row["eligibleLeaderReplicas"]),
        last_known_elr=tuple(row["lastKnownElr"]),
        leader=row["leader"],
        leader_recovery_state=row["leaderRecoveryState"],
        leader_epoch=row["leaderEpoch"],
        partition_epoch=row["partitionEpoch"],
    )


def _endpoints(rows: Iterable[Row]) -> tuple[Endpoint, ...]:
    return tuple(Endpoint(e["name"], e["host"], e["port"], e["securityProtocol"]) for e in sorted(rows, key=_by_name))


def _ranges(rows: Iterable[Row]) -> tuple[VersionRange, ...]:
    return tuple(
        VersionRange(f["name"], f["minSupportedVersion"], f["maxSupportedVersion"]) for f in sorted(rows, key=_by_name)
    )


def broker(row: Row) -> BrokerRegistration:
    return BrokerRegistration(
        id=row["brokerId"],
        epoch=row["brokerEpoch"],
        incarnation_id=row["incarnationId"],
        listeners=_endpoints(row["endPoints"]),
        supported_features=_ranges(row["features"]),
        rack=row["rack"],
        fenced=row["fenced"],
        in_controlled_shutdown=row["inControlledShutdown"],
        is_migrating_zk_broker=row["isMigratingZkBroker"],
        directories=tuple(row["logDirs"]),
        cordoned_directories=None if row.get("cordonedLogDirs") is None else tuple(row["cordonedLogDirs"]),
    )


def controller(row: Row) -> ControllerRegistration:
    return ControllerRegistration(
        id=row["controllerId"],
        incarnation_id=row["incarnationId"],
        zk_migration_ready=row["zkMigrationReady"],
        listeners=_endpoints(row["endPoints"]),
        supported_features=_ranges(row["features"]),
    )


def acl(row: Row) -> StandardAcl:
    return StandardAcl(
        row["resourceType"],
        row["resourceName"],
        row["patternType"],
        row["principal"],
        row["host"],
        row["operation"],
        row["permissionType"],
    )


def scram_credential(row: Row) -> tuple[int, str, ScramCredentialData]:
    """(mechanism code, user name, credential) of a ``scram`` row."""
    return (
        MECHANISM_CODES[row["mechanism"]],
        row["name"],
        ScramCredentialData(row["salt"], row["storedKey"], row["serverKey"], row["iterations"]),
    )


def delegation_token(row: Row) -> DelegationTokenData:
    return DelegationTokenData(
        row["tokenId"],
        row["owner"],
        row["requester"],
        tuple(row["renewers"]),
        row["issueTimestamp"],
        row["maxTimestamp"],
        row["expirationTimestamp"],
    )


def quota_entity_key(entity: Mapping[str, str | None]) -> ClientQuotaEntity:
    """The image's entity key of a row's ``entity`` map."""
    return tuple(sorted(entity.items()))


def json_rows(doc: Mapping[str, Any]) -> dict[str, list[Row]]:
    """The rows of an image JSON document (the inverse of :func:`assemble`, hidden parts left out)."""
    rows = {
        part: [dict(r) for r in doc.get(part, [])] for part in JSON_PARTS if part not in ("features", "producerIds")
    }
    rows["features"] = [feature_row(n, v) for n, v in doc.get("features", {}).items()]
    rows["producerIds"] = [dict(doc["producerIds"])] if "producerIds" in doc else []
    return rows


def part_rows(
    image: Mapping[str, Any], part: str, *, topic: str | None = None, broker: int | None = None
) -> list[dict[str, Any]]:
    """The rows of one part of an image JSON (``show``), in the document's order, restricted to a topic
    (partitions, topics; its TOPIC configs) or a broker (partitions and topics it replicates, the broker; its
    BROKER configs). ValueError where a filter does not apply."""
    if part == "features":
        if topic is not None or broker is not None:
            raise BadInput("--topic and --broker do not apply to features")
        return [{"name": name, "level": level} for name, level in image["features"].items()]
    if part == "brokers" and topic is not None:
        raise BadInput("--topic does not apply to brokers")
    if part == "configs" and topic is not None and broker is not None:
        raise BadInput("configs: give --topic or --broker, not both")
    rows = list(image[part])
    if part == "partitions":
        return [
            r for r in rows if (topic is None or r["topic"] == topic) and (broker is None or broker in r["replicas"])
        ]
    if part == "topics":
        hosting = None if broker is None else {p["topicId"] for p in image["partitions"] if broker in p["replicas"]}
        return [
            r for r in rows if (topic is None or r["name"] == topic) and (hosting is None or r["topicId"] in hosting)
        ]
    if part == "brokers":
        return [r for r in rows if broker is None or r["brokerId"] == broker]
    if part == "configs" and topic is not None:
        return [r for r in rows if r["resourceType"] == "TOPIC" and r["resourceName"] == topic]
    if part == "configs" and broker is not None:
        return [r for r in rows if r["resourceType"] == "BROKER" and r["resourceName"] == str(broker)]
    return rows
