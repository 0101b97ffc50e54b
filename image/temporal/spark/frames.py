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

from image.parts import JSON_PARTS, assemble
from metadata.lake.spark_store import spark_schema
from metadata.lake.version_tables import part_schema

SCHEMAS: dict[str, T.StructType] = {
    "provenance": T.StructType(
        [
            T.StructField("offset", T.LongType()),
            T.StructField("epoch", T.IntegerType()),
            T.StructField("timestamp", T.LongType()),
        ]
    ),
    **{part: spark_schema(part_schema(part)) for part in JSON_PARTS},
}
"""The columns of every frame: ``provenance`` (the image's offset, epoch and time), and every part of the image
JSON in its shape's Spark types (:data:`image.shapes.SHAPES`, through the Arrow schema the lake stores)."""


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
        (prov,) = collected.pop("provenance")
        return assemble(collected, prov["offset"], prov["epoch"], prov["timestamp"])

    def save(self, location: str) -> None:
        """Write every part as a Delta table ``<location>/<part>`` (overwriting)."""
        for part, frame in self.parts().items():
            frame.write.format("delta").mode("overwrite").option("overwriteSchema", "true").save(f"{location}/{part}")

    @classmethod
    def load(cls, spark: SparkSession, location: str) -> "ImageFrames":
        """Frames of an image saved with :meth:`save`."""
        return cls(**{part: spark.read.format("delta").load(f"{location}/{part}") for part in SCHEMAS})
