"""Schemas of the lake's tables, and the typed tables as projections of ``records``.

The schemas are pyarrow schemas, the one definition both engines write (Spark's are derived from them,
:func:`metadata.lake.spark_store.spark_schema`). The typed tables are derived from the one schema source: each
column is a record field in snake_case, with the schema default applied when the field is absent from the
payload (so ``partition_changes.leader`` is -2 for "no change" and ``isr`` is null for "unchanged").
Nested struct arrays keep Kafka's camelCase member names (e.g. ``end_points[].securityProtocol``).
:meth:`TypedTable.project` computes them from the records' payload JSON with pyarrow: in process, and in
Spark's Python workers (``mapInArrow``) for an ingest on Spark.
"""

from __future__ import annotations

import functools
import io
import json
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

import pyarrow as pa
import pyarrow.compute as pc

from metadata.log.columns import DECODED_SCHEMA, numpy_array
from metadata.log.records import snapshot_kind
from metadata.log.schema import FieldSpec, MessageSpec, spec_by_type_name

ROW_GROUP_BYTES = 1 << 20
"""Both engines write Parquet row groups of about this size, so that a point read decodes the row groups around
its offset, not a file: Spark's sessions by ``parquet.block.size`` (``metadata.lake.spark.DEFAULT_CONF``), the
writes in process by rows per group sized from the Arrow data (``metadata.lake.local_store.writer_properties``).
On gen-1e6's ``records``: 4,331 rows a group on Spark, 4,186 in process."""

_PRIMITIVE: dict[str, pa.DataType] = {
    "bool": pa.bool_(),
    "int8": pa.int32(),
    "int16": pa.int32(),
    "uint16": pa.int32(),
    "int32": pa.int32(),
    "uint32": pa.int64(),
    "int64": pa.int64(),
    "float64": pa.float64(),
    "uuid": pa.string(),
    "string": pa.string(),
    "bytes": pa.string(),
}

_SNAPSHOT_ONLY = ("position", "snapshot_end_offset", "snapshot_epoch")
"""The decoded columns of a snapshot's record only: its position, the snapshot's id."""

_TYPE_OF = {f.name: f.type for f in DECODED_SCHEMA} | {"kind": pa.string(), "last_contained_timestamp": pa.int64()}


def _table_schema(columns: Sequence[str]) -> pa.Schema:
    """A lake table's schema: ``columns`` typed as decoded. Every column is nullable, as Spark writes a new Delta
    table whatever its frame says: both engines create the same table schema."""
    return pa.schema([pa.field(c, _TYPE_OF[c]) for c in columns])


RECORDS_SCHEMA = _table_schema([c for c in DECODED_SCHEMA.names if c not in _SNAPSHOT_ONLY])
"""The lake's ``records`` table: a log record's decoded columns (:data:`~metadata.log.columns.DECODED_SCHEMA`)."""

SNAPSHOTS_SCHEMA = _table_schema(
    [
        "snapshot_end_offset",
        "snapshot_epoch",
        "kind",
        "position",
        "last_contained_timestamp",
        "batch_leader_epoch",
        "timestamp",
        *RECORDS_SCHEMA.names[RECORDS_SCHEMA.get_field_index("is_control") :],
    ],
)
"""The lake's ``snapshots`` table: a snapshot's id, kind and header time, and each record at its position (its
columns from ``is_control`` on as in ``records``)."""

INGESTS_SCHEMA = pa.schema(
    [
        pa.field("seq", pa.int64()),
        pa.field("run_id", pa.string()),
        pa.field("committed_at", pa.timestamp("us", tz="UTC")),
        pa.field("inputs", pa.list_(pa.string())),
        pa.field("records_added", pa.int64()),
        pa.field("snapshots_added", pa.int64()),
        pa.field("high_water_mark", pa.int64()),
        pa.field("versions", pa.map_(pa.string(), pa.int64())),
        pa.field("kafka_version", pa.string()),
        pa.field(
            "segment_marks",
            pa.map_(
                pa.string(),
                pa.struct(
                    [
                        pa.field("position", pa.int64()),
                        pa.field("base_offset", pa.int64()),
                        pa.field("last_offset", pa.int64()),
                        pa.field("leader_epoch", pa.int32()),
                        pa.field("crc", pa.int64()),
                    ]
                ),
            ),
        ),
    ]
)
"""``_ingests``: the lake's commit log (:mod:`metadata.lake.protocol`)."""

_BASE = [
    ("offset", "offset", pa.int64()),
    ("batch_base_offset", "batch_base_offset", pa.int64()),
    ("epoch", "batch_leader_epoch", pa.int32()),
    ("timestamp", "timestamp", pa.int64()),
    ("type", "type", pa.string()),
    ("version", "version", pa.int32()),
]
"""The columns every typed table starts with: (column, the records column it is, type)."""


def arrow_type(field: FieldSpec) -> pa.DataType:
    """The column type of a field (nested structs keep camelCase member names)."""
    if field.is_struct:
        element: pa.DataType = pa.struct([pa.field(f.json_name, arrow_type(f)) for f in field.fields])
    else:
        element = _PRIMITIVE[field.element_type]
    return pa.list_(element) if field.is_array else element


def _default(field: FieldSpec, type_: pa.DataType) -> pa.Scalar | None:
    """The field's schema default as a value of its column (None: no default, the payload's null stays)."""
    value = field.default_value()
    if value is None:
        return None
    if pa.types.is_list(type_):
        return pa.scalar([], type_)
    return pa.scalar(value).cast(type_)


def _between(column: pa.ChunkedArray, low: int, high: int) -> pa.ChunkedArray:
    return pc.and_(pc.greater_equal(column, low), pc.less_equal(column, high))


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

    def json_schema(self) -> pa.Schema:
        """The payload fields of the table's record types, by their JSON names (what the payload is parsed as)."""
        seen: dict[str, pa.Field] = {}
        for spec in self.specs:
            for f in spec.fields:
                seen.setdefault(f.json_name, pa.field(f.json_name, arrow_type(f)))
        return pa.schema(list(seen.values()))

    def project(self, rows: pa.Table) -> pa.Table:
        """The typed rows of this table from records-like ``rows`` (the columns of ``records``), in their order."""
        from pyarrow import json as pa_json

        rows = rows.filter(pc.is_in(rows["type"], value_set=pa.array(self.record_types, pa.string())))
        payloads = pc.fill_null(rows["payload"], "{}")
        text = "\n".join(payloads.to_pylist()).encode() if rows.num_rows else b""
        parsed = (
            pa_json.read_json(
                io.BytesIO(text),
                parse_options=pa_json.ParseOptions(
                    explicit_schema=self.json_schema(), unexpected_field_behavior="ignore"
                ),
            )
            if rows.num_rows
            else self.json_schema().empty_table()
        )
        renames = dict(self.renames)
        version = rows["version"]
        columns: dict[str, pa.ChunkedArray] = {}
        for spec in self.specs:
            ours = pc.equal(rows["type"], spec.type_name)
            for f in spec.fields:
                column = renames.get(f.json_name, f.snake_name)
                type_ = arrow_type(f)
                value = parsed[f.json_name]
                default = _default(f, type_)
                if default is not None:
                    filled = pc.coalesce(value, default)
                    if f.nullable.low <= f.nullable.high:
                        # a regular nullable field is always in the payload: its JSON null is a value
                        # (ConfigRecord.Value null = delete, RegisterBrokerRecord.Rack null = no rack)
                        present = _between(version, f.nullable.low, f.nullable.high)
                        if f.tagged.low <= f.tagged.high:
                            present = pc.and_(present, pc.invert(_between(version, f.tagged.low, f.tagged.high)))
                        filled = pc.if_else(present, value, filled)
                    value = filled
                value = pc.if_else(ours, value, pa.scalar(None, type_))
                columns[column] = value if column not in columns else pc.coalesce(columns[column], value)
        base = [rows[source].cast(type_) for _, source, type_ in _BASE]
        return pa.Table.from_arrays([*base, *columns.values()], schema=self.schema())

    def schema(self) -> pa.Schema:
        """The stored schema (what :meth:`project` yields)."""
        return pa.schema(
            [pa.field(c, t) for c, _, t in _BASE] + [pa.field(c, arrow_type(f)) for c, (f, _) in self.fields().items()]
        )


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


def typed_rows(name: str, rows: pa.Table) -> pa.Table:
    """Rows of typed table ``name`` projected from records-like ``rows``; ``broker_changes.fenced`` normalised:
    Fence → 1, Unfence → -1 (the column is 0 for those records)."""
    table = TYPED_TABLES[name].project(rows)
    if name == "broker_changes":
        kind = table["type"]
        fenced = pc.if_else(
            pc.equal(kind, "FENCE_BROKER_RECORD"),
            1,
            pc.if_else(pc.equal(kind, "UNFENCE_BROKER_RECORD"), -1, table["fenced"]),
        )
        table = table.set_column(table.schema.get_field_index("fenced"), "fenced", fenced.cast(pa.int32()))
    return table


def snapshot_rows(staged: pa.Table, ids: Sequence[tuple[int, int]]) -> pa.Table:
    """Rows of the ``snapshots`` table for the snapshots ``ids`` (end offset, epoch) among decoded records
    (:data:`~metadata.log.columns.DECODED_SCHEMA`): a record's offset is its position in the snapshot; a snapshot
    found twice (a copy elsewhere) gives the rows of its first path."""
    import numpy as np

    if not ids or not staged.num_rows:
        return SNAPSHOTS_SCHEMA.empty_table()
    end, epoch = staged["snapshot_end_offset"], staged["snapshot_epoch"]
    chosen = pc.fill_null(
        functools.reduce(pc.or_, [pc.and_(pc.equal(end, e), pc.equal(epoch, p)) for e, p in ids]), False
    )
    keys = ["snapshot_end_offset", "snapshot_epoch", "offset"]
    snaps = staged.filter(chosen).sort_by([(k, "ascending") for k in [*keys, "source_file"]])
    if snaps.num_rows:
        columns = [snaps[k].to_numpy() for k in keys]
        first = np.ones(snaps.num_rows, dtype=bool)
        first[1:] = functools.reduce(np.logical_or, [c[1:] != c[:-1] for c in columns])
        snaps = snaps.filter(numpy_array(first))
    headers = snaps.filter(pc.fill_null(pc.equal(snaps["control_type"], "SNAPSHOT_HEADER"), False))
    contained = {
        (e, p): json.loads(text or "{}").get("lastContainedLogTimestamp")
        for e, p, text in zip(*(headers[c].to_pylist() for c in ("snapshot_end_offset", "snapshot_epoch", "payload")))
    }
    at = list(zip(snaps["snapshot_end_offset"].to_pylist(), snaps["snapshot_epoch"].to_pylist()))
    columns = {
        "kind": pa.array([snapshot_kind(*k) for k in at], pa.string()),
        "position": snaps["offset"],
        "last_contained_timestamp": pa.array([contained.get(k) for k in at], pa.int64()),
    }
    return pa.Table.from_arrays(
        [(columns[f.name] if f.name in columns else snaps[f.name]).cast(f.type) for f in SNAPSHOTS_SCHEMA],
        schema=SNAPSHOTS_SCHEMA,
    )


@cache
def table_schemas() -> dict[str, pa.Schema]:
    """Every data table of a lake and its schema."""
    from metadata.lake import version_tables

    return {
        "records": RECORDS_SCHEMA,
        "snapshots": SNAPSHOTS_SCHEMA,
        **{name: t.schema() for name, t in TYPED_TABLES.items()},
        **version_tables.table_schemas(),
    }
