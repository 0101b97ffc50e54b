"""Schemas of the lake's tables, and the typed tables as Spark projections of ``records``.

The typed tables are derived from the one schema source: each column is a record field in
snake_case, with the schema default applied when the field is absent from the payload (so
``partition_changes.leader`` is -2 for "no change" and ``isr`` is null for "unchanged").
Nested struct arrays keep Kafka's camelCase member names (e.g. ``end_points[].securityProtocol``).
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T
from pyspark.sql.pandas.types import from_arrow_schema

from metadata.columns import RECORDS_TABLE_SCHEMA, SNAPSHOTS_TABLE_SCHEMA
from metadata.schema import FieldSpec, MessageSpec, metadata_specs, spec_by_type_name

_PRIMITIVE: dict[str, T.DataType] = {
    "bool": T.BooleanType(),
    "int8": T.IntegerType(),
    "int16": T.IntegerType(),
    "uint16": T.IntegerType(),
    "int32": T.IntegerType(),
    "uint32": T.LongType(),
    "int64": T.LongType(),
    "float64": T.DoubleType(),
    "uuid": T.StringType(),
    "string": T.StringType(),
    "bytes": T.StringType(),
}

RECORDS_SCHEMA = from_arrow_schema(RECORDS_TABLE_SCHEMA)
SNAPSHOTS_SCHEMA = from_arrow_schema(SNAPSHOTS_TABLE_SCHEMA)

KEY_COLUMNS = ["offset", "batch_base_offset", "batch_leader_epoch", "timestamp", "type", "version"]


def spark_type(field: FieldSpec) -> T.DataType:
    """Spark type of a field (nested structs keep camelCase member names)."""
    if field.is_struct:
        element: T.DataType = T.StructType([T.StructField(f.json_name, spark_type(f)) for f in field.fields])
    else:
        element = _PRIMITIVE[field.element_type]
    return T.ArrayType(element) if field.is_array else element


def _default(field: FieldSpec, spark_t: T.DataType) -> Column | None:
    value = field.default_value()
    if value is None:
        return None
    if isinstance(spark_t, T.ArrayType):
        return F.array().cast(spark_t)
    return F.lit(value).cast(spark_t)


@dataclass(frozen=True)
class TypedTable:
    """A typed table: the rows of some record types, one column per field."""

    name: str
    record_types: tuple[str, ...]
    about: str
    renames: tuple[tuple[str, str], ...] = ()  # (json field, column) merges like Id → broker_id

    @property
    def specs(self) -> list[MessageSpec]:
        return [spec_by_type_name(t) for t in self.record_types]

    def fields(self) -> dict[str, tuple[FieldSpec, list[str]]]:
        """column → (field spec, record types carrying it), in declaration order."""
        renames = dict(self.renames)
        out: dict[str, tuple[FieldSpec, list[str]]] = {}
        for spec in self.specs:
            for f in spec.fields:
                column = renames.get(f.json_name, f.snake_name)
                out.setdefault(column, (f, []))[1].append(spec.type_name)
        return out

    def json_schema(self) -> T.StructType:
        seen: dict[str, T.StructField] = {}
        for spec in self.specs:
            for f in spec.fields:
                seen.setdefault(f.json_name, T.StructField(f.json_name, spark_type(f)))
        return T.StructType(list(seen.values()))

    def project(self, rows: DataFrame) -> DataFrame:
        """Typed rows of this table from any frame with ``records``-like columns."""
        parsed = rows.where(F.col("type").isin(*self.record_types)).withColumn(
            "_d", F.from_json("payload", self.json_schema())
        )
        renames = dict(self.renames)
        exprs: dict[str, Column] = {}
        for spec in self.specs:
            for f in spec.fields:
                column = renames.get(f.json_name, f.snake_name)
                t = spark_type(f)
                value = F.col("_d").getField(f.json_name)
                default = _default(f, t)
                if default is not None:
                    filled = F.coalesce(value, default)
                    if f.nullable.low <= f.nullable.high:
                        # a regular nullable field is always in the payload: its JSON null is a value
                        # (ConfigRecord.Value null = delete, RegisterBrokerRecord.Rack null = no rack)
                        present = F.col("version").between(f.nullable.low, f.nullable.high)
                        if f.tagged.low <= f.tagged.high:
                            present &= ~F.col("version").between(f.tagged.low, f.tagged.high)
                        filled = F.when(present, value).otherwise(filled)
                    value = filled
                value = F.when(F.col("type") == spec.type_name, value)
                exprs[column] = value if column not in exprs else F.coalesce(exprs[column], value)
        extra = [F.col(c) for c in rows.columns if c in ("snapshot_end_offset", "snapshot_epoch", "position")]
        base = [
            F.col("offset"),
            F.col("batch_base_offset"),
            F.col("batch_leader_epoch").alias("epoch"),
            F.col("timestamp"),
            F.col("type"),
            F.col("version"),
        ]
        return parsed.select(*extra, *base, *[e.alias(c) for c, e in exprs.items()])

    def schema(self) -> T.StructType:
        """The stored schema (what :meth:`project` yields for log rows)."""
        cols = [
            T.StructField("offset", T.LongType()),
            T.StructField("batch_base_offset", T.LongType()),
            T.StructField("epoch", T.IntegerType()),
            T.StructField("timestamp", T.LongType()),
            T.StructField("type", T.StringType()),
            T.StructField("version", T.IntegerType()),
        ]
        return T.StructType(cols + [T.StructField(c, spark_type(f)) for c, (f, _) in self.fields().items()])


TYPED_TABLES: dict[str, TypedTable] = {
    t.name: t
    for t in [
        TypedTable("topics", ("TOPIC_RECORD",), "topic created (name, topic_id)"),
        TypedTable("partitions", ("PARTITION_RECORD",), "full partition registrations"),
        TypedTable(
            "partition_changes",
            ("PARTITION_CHANGE_RECORD",),
            "partition changes; null list = unchanged, leader -2 = unchanged, leader_recovery_state -1 = unchanged",
        ),
        TypedTable("topic_removals", ("REMOVE_TOPIC_RECORD",), "topic deletions by id"),
        TypedTable("clear_elr", ("CLEAR_ELR_RECORD",), "ELR clearing (Kafka 4.x), topic name or '' for all"),
        TypedTable("broker_registrations", ("REGISTER_BROKER_RECORD",), "broker registrations (full replacement)"),
        TypedTable(
            "broker_changes",
            (
                "FENCE_BROKER_RECORD",
                "UNFENCE_BROKER_RECORD",
                "BROKER_REGISTRATION_CHANGE_RECORD",
                "UNREGISTER_BROKER_RECORD",
            ),
            "fence / unfence / registration change / unregister events; fenced: 1 fence, -1 unfence, 0 no change",
            (("id", "broker_id"), ("epoch", "broker_epoch")),
        ),
        TypedTable(
            "controllers",
            ("REGISTER_CONTROLLER_RECORD", "UNREGISTER_CONTROLLER_RECORD"),
            "controller registrations (full replacement) and unregistrations (Kafka 4.4+)",
        ),
        TypedTable("configs", ("CONFIG_RECORD",), "config set (value) or delete (value null)"),
        TypedTable(
            "features",
            ("FEATURE_LEVEL_RECORD", "ZK_MIGRATION_STATE_RECORD"),
            "finalized feature levels (0 removes) and ZK migration state",
        ),
        TypedTable("producer_ids", ("PRODUCER_IDS_RECORD",), "producer id blocks"),
        TypedTable("client_quotas", ("CLIENT_QUOTA_RECORD",), "client quota set / remove"),
        TypedTable("acls", ("ACCESS_CONTROL_ENTRY_RECORD", "REMOVE_ACCESS_CONTROL_ENTRY_RECORD"), "ACL add / remove"),
        TypedTable(
            "scram",
            ("USER_SCRAM_CREDENTIAL_RECORD", "REMOVE_USER_SCRAM_CREDENTIAL_RECORD"),
            "SCRAM credential set / remove",
        ),
        TypedTable(
            "delegation_tokens",
            ("DELEGATION_TOKEN_RECORD", "REMOVE_DELEGATION_TOKEN_RECORD"),
            "delegation token add / remove",
        ),
        TypedTable(
            "transaction_markers",
            ("BEGIN_TRANSACTION_RECORD", "END_TRANSACTION_RECORD", "ABORT_TRANSACTION_RECORD"),
            "metadata transaction begin / end / abort",
        ),
    ]
}


def fenced_expr() -> Column:
    """``broker_changes.fenced`` normalised: Fence → 1, Unfence → -1 (the column is 0 for those records)."""
    return (
        F.when(F.col("type") == "FENCE_BROKER_RECORD", F.lit(1))
        .when(F.col("type") == "UNFENCE_BROKER_RECORD", F.lit(-1))
        .otherwise(F.col("fenced"))
    )


def typed_rows(name: str, rows: DataFrame) -> DataFrame:
    """Rows of typed table ``name`` projected from records-like ``rows``."""
    frame = TYPED_TABLES[name].project(rows)
    if name == "broker_changes":
        frame = frame.withColumn("fenced", fenced_expr())
    return frame


def all_record_types() -> set[str]:
    return {s.type_name for s in metadata_specs().values()}
