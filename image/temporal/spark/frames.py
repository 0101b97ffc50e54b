"""A MetadataImage as Spark DataFrames: the form the Spark engine computes, diffs compare and
``--save`` stores (one Delta table per image part, plus ``provenance``).

Columns use the field names of the image JSON (``MetadataImage.to_json``), so a frame converts
to exactly that JSON and back; :meth:`ImageFrames.from_json` turns a reference-engine image into
frames, which is how both engines share one diff and one output path.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T

_INT, _LONG, _STR, _BOOL = T.IntegerType(), T.LongType(), T.StringType(), T.BooleanType()
_INTS, _STRS = T.ArrayType(_INT), T.ArrayType(_STR)
_ENDPOINTS = T.ArrayType(
    T.StructType(
        [
            T.StructField("name", _STR),
            T.StructField("host", _STR),
            T.StructField("port", _INT),
            T.StructField("securityProtocol", _INT),
        ]
    )
)
_FEATURES = T.ArrayType(
    T.StructType(
        [
            T.StructField("name", _STR),
            T.StructField("minSupportedVersion", _INT),
            T.StructField("maxSupportedVersion", _INT),
        ]
    )
)


def _schema(*cols: tuple[str, T.DataType]) -> T.StructType:
    return T.StructType([T.StructField(n, t) for n, t in cols])


SCHEMAS: dict[str, T.StructType] = {
    "provenance": _schema(("offset", _LONG), ("epoch", _INT), ("timestamp", _LONG)),
    "topics": _schema(("name", _STR), ("topicId", _STR)),
    "partitions": _schema(
        ("topic", _STR),
        ("topicId", _STR),
        ("partitionId", _INT),
        ("replicas", _INTS),
        ("isr", _INTS),
        ("removingReplicas", _INTS),
        ("addingReplicas", _INTS),
        ("leader", _INT),
        ("leaderRecoveryState", _INT),
        ("leaderEpoch", _INT),
        ("partitionEpoch", _INT),
        ("directories", _STRS),
        ("eligibleLeaderReplicas", _INTS),
        ("lastKnownElr", _INTS),
    ),
    "brokers": _schema(
        ("brokerId", _INT),
        ("brokerEpoch", _LONG),
        ("incarnationId", _STR),
        ("fenced", _BOOL),
        ("inControlledShutdown", _BOOL),
        ("isMigratingZkBroker", _BOOL),
        ("rack", _STR),
        ("endPoints", _ENDPOINTS),
        ("features", _FEATURES),
        ("logDirs", _STRS),
        ("cordonedLogDirs", _STRS),
    ),
    "controllers": _schema(
        ("controllerId", _INT),
        ("incarnationId", _STR),
        ("zkMigrationReady", _BOOL),
        ("endPoints", _ENDPOINTS),
        ("features", _FEATURES),
    ),
    "configs": _schema(("resourceType", _STR), ("resourceName", _STR), ("name", _STR), ("value", _STR)),
    "features": _schema(("name", _STR), ("level", _INT)),
    "producerIds": _schema(
        ("nextProducerId", _LONG),
    ),
    "clientQuotas": _schema(("entity", T.MapType(_STR, _STR, True)), ("key", _STR), ("value", T.DoubleType())),
    "acls": _schema(
        ("id", _STR),
        ("resourceType", _INT),
        ("resourceName", _STR),
        ("patternType", _INT),
        ("principal", _STR),
        ("host", _STR),
        ("operation", _INT),
        ("permissionType", _INT),
    ),
    "scram": _schema(
        ("mechanism", _STR),
        ("name", _STR),
        ("salt", _STR),
        ("storedKey", _STR),
        ("serverKey", _STR),
        ("iterations", _INT),
    ),
    "delegationTokens": _schema(
        ("tokenId", _STR),
        ("owner", _STR),
        ("requester", _STR),
        ("renewers", _STRS),
        ("issueTimestamp", _LONG),
        ("maxTimestamp", _LONG),
        ("expirationTimestamp", _LONG),
    ),
}


def _entity_key(entity: dict[str, str | None]) -> tuple:
    return tuple((k, (0, "") if v is None else (1, v)) for k, v in sorted(entity.items()))


SORT_KEYS = {
    "topics": lambda r: (r["name"], r["topicId"]),
    "partitions": lambda r: (r["topic"], r["partitionId"], r["topicId"]),
    "brokers": lambda r: r["brokerId"],
    "controllers": lambda r: r["controllerId"],
    "configs": lambda r: (r["resourceType"], r["resourceName"], r["name"]),
    "clientQuotas": lambda r: (_entity_key(r["entity"]), r["key"]),
    "acls": lambda r: r["id"],
    "scram": lambda r: (r["mechanism"], r["name"]),
    "delegationTokens": lambda r: r["tokenId"],
}


def canonical(image_json: dict[str, Any]) -> dict[str, Any]:
    """The image JSON with every list in its documented order (nested endPoints/features by name)."""
    out = dict(image_json)
    for part, key in SORT_KEYS.items():
        rows = [dict(r) for r in out.get(part, [])]
        for r in rows:
            for nested in ("endPoints", "features"):
                if isinstance(r.get(nested), list):
                    r[nested] = sorted(r[nested], key=lambda e: e["name"])
        out[part] = sorted(rows, key=key)
    out["features"] = dict(sorted(out.get("features", {}).items()))
    return out


@dataclass(frozen=True)
class ImageFrames:
    """One image, one DataFrame per part (columns as in the image JSON)."""

    provenance: DataFrame
    topics: DataFrame
    partitions: DataFrame
    brokers: DataFrame
    controllers: DataFrame
    configs: DataFrame
    features: DataFrame
    producerIds: DataFrame
    clientQuotas: DataFrame
    acls: DataFrame
    scram: DataFrame
    delegationTokens: DataFrame

    def parts(self) -> dict[str, DataFrame]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_json(cls, spark: SparkSession, image_json: dict[str, Any]) -> "ImageFrames":
        """Frames of an image given as JSON (e.g. a reference-engine ``MetadataImage.to_json()``)."""
        rows: dict[str, list[dict[str, Any]]] = {
            "provenance": [{k: image_json[k] for k in ("offset", "epoch", "timestamp")}],
            "features": [{"name": k, "level": v} for k, v in image_json["features"].items()],
            "producerIds": [image_json["producerIds"]],
        }
        frames = {}
        for part, schema in SCHEMAS.items():
            data = rows.get(part, image_json.get(part, []))
            frames[part] = spark.createDataFrame([tuple(r.get(c) for c in schema.names) for r in data], schema)
        return cls(**frames)

    def to_json(self) -> dict[str, Any]:
        """The image JSON (collects every part to the driver: for output, not for large images in bulk)."""
        collected = {part: [r.asDict(recursive=True) for r in frame.collect()] for part, frame in self.parts().items()}
        prov = collected.pop("provenance")[0]
        producer = collected.pop("producerIds")
        features = {r["name"]: r["level"] for r in collected.pop("features")}
        return canonical(
            {
                **prov,
                **collected,
                "features": features,
                "producerIds": producer[0] if producer else {"nextProducerId": -1},
            }
        )

    def save(self, location: str) -> None:
        """Write every part as a Delta table ``<location>/<part>`` (overwriting)."""
        for part, frame in self.parts().items():
            frame.write.format("delta").mode("overwrite").option("overwriteSchema", "true").save(f"{location}/{part}")

    @classmethod
    def load(cls, spark: SparkSession, location: str) -> "ImageFrames":
        """Frames of an image saved with :meth:`save`."""
        return cls(**{part: spark.read.format("delta").load(f"{location}/{part}") for part in SCHEMAS})
