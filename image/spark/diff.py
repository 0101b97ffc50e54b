"""Diff of two images (the rules of :mod:`image.diff`) as Spark joins on :class:`ImageFrames`.

Every part is full-outer-joined on its key; a row only ``before`` is *removed*, only ``after`` is
*added*, in both with some value column different (null-safe, element-wise for lists) is *changed*.
Keys: topics by id (a rename is a change of ``name``; a re-created name is a removal plus an
addition), partitions by (topicId, partitionId) (the topic name is context, not compared), brokers
and controllers by id, configs by (resourceType, resourceName, name), features by name (incl.
metadata.version), producerIds as one value, clientQuotas by (entity, key), ACLs by id, SCRAM by
(mechanism, name), delegation tokens by id. Nested ``endPoints``/``features`` lists compare as sets
(sorted by name, as in the image JSON); every other list compares in order.

The diff stays in DataFrames (:class:`SectionDiff`); only :meth:`ImageDiff.to_json` and
:meth:`ImageDiff.summary` run jobs (one each).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import reduce
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from image.frames import SCHEMAS, ImageFrames

CHANGES = ("added", "removed", "changed")

_SORTED_NESTED = ("endPoints", "features")  # lists of {name, ...} the image JSON orders by name
_JSON_OPTIONS = {"ignoreNullFields": "false"}


@dataclass(frozen=True)
class Section:
    """How one image part is diffed: key columns, context columns (shown, not compared), value columns."""

    part: str
    keys: tuple[str, ...]
    context: tuple[str, ...] = ()

    @property
    def values(self) -> tuple[str, ...]:
        return tuple(c for c in SCHEMAS[self.part].names if c not in self.keys and c not in self.context)


SECTIONS: dict[str, Section] = {
    s.part: s
    for s in (
        Section("topics", ("topicId",)),
        Section("partitions", ("topicId", "partitionId"), ("topic",)),
        Section("brokers", ("brokerId",)),
        Section("controllers", ("controllerId",)),
        Section("configs", ("resourceType", "resourceName", "name")),
        Section("features", ("name",)),
        Section("producerIds", ()),
        Section("clientQuotas", ("entity", "key")),
        Section("acls", ("id",)),
        Section("scram", ("mechanism", "name")),
        Section("delegationTokens", ("tokenId",)),
    )
}


@dataclass(frozen=True)
class SectionDiff:
    """The differences of one part. ``changes`` has the key and context columns, ``change``
    (added|removed|changed), ``fields`` (changed value columns; empty unless changed) and the
    whole rows ``before`` / ``after`` (structs, null on the side where the row does not exist)."""

    section: Section
    changes: DataFrame

    def _only(self, change: str) -> DataFrame:
        return self.changes.where(F.col("change") == change)

    @property
    def added(self) -> DataFrame:
        return self._only("added")

    @property
    def removed(self) -> DataFrame:
        return self._only("removed")

    @property
    def changed(self) -> DataFrame:
        return self._only("changed")


def _rows(frame: DataFrame, section: Section) -> DataFrame:
    """``_k0.._kn`` (joinable key columns) and ``row`` (the part's columns, nested lists normalized)."""
    cols = [F.array_sort(c).alias(c) if c in _SORTED_NESTED else F.col(c) for c in SCHEMAS[section.part].names]
    keys: list[Column] = [
        F.to_json(F.array_sort(F.map_entries(k)), _JSON_OPTIONS) if k == "entity" else F.col(k) for k in section.keys
    ] or [F.lit(0)]  # producerIds: one row, nothing to key on
    return frame.select(*[k.alias(f"_k{i}") for i, k in enumerate(keys)], F.struct(*cols).alias("row"))


def diff_section(before: DataFrame, after: DataFrame, section: Section) -> SectionDiff:
    """Full outer join of one part of two images on its key (see the module docstring)."""
    b, a = (
        _rows(before, section).withColumnRenamed("row", "before"),
        _rows(after, section).withColumnRenamed("row", "after"),
    )
    joined = b.join(a, [c for c in b.columns if c.startswith("_k")], "full_outer")
    differing = F.filter(
        F.array(*[F.when(~F.col("before")[c].eqNullSafe(F.col("after")[c]), F.lit(c)) for c in section.values]),
        lambda name: name.isNotNull(),
    )
    both = F.col("before").isNotNull() & F.col("after").isNotNull()
    fields = F.when(both, differing).otherwise(F.array().cast("array<string>"))
    change = (
        F.when(F.col("before").isNull(), "added")
        .when(F.col("after").isNull(), "removed")
        .when(F.size(fields) > 0, "changed")
    )
    shown = [F.coalesce(F.col("after")[c], F.col("before")[c]).alias(c) for c in (*section.keys, *section.context)]
    changes = joined.select(*shown, change.alias("change"), fields.alias("fields"), "before", "after").where(
        F.col("change").isNotNull()
    )
    return SectionDiff(section, changes)


def _sort_value(value: Any) -> Any:
    """A null-safe sort key; a clientQuotas entity sorts by its (type, name) pairs, null name first."""
    if isinstance(value, dict):
        return tuple((k, _sort_value(v)) for k, v in sorted(value.items()))
    return (0, "") if value is None else (1, value)


def _entry(section: Section, change: str, fields: list[str], before: dict | None, after: dict | None) -> dict:
    """A JSON entry: the whole row if added/removed; key, context, fields and changed values if changed."""
    if change == "added":
        return after  # type: ignore[return-value]
    if change == "removed":
        return before  # type: ignore[return-value]
    assert before is not None and after is not None
    head = {c: after[c] for c in (*section.keys, *section.context)}
    return {**head, "fields": fields, "before": {f: before[f] for f in fields}, "after": {f: after[f] for f in fields}}


@dataclass(frozen=True)
class ImageDiff:
    """Per-part differences between two images, plus both provenances (one-row frames)."""

    from_provenance: DataFrame
    to_provenance: DataFrame
    sections: dict[str, SectionDiff]

    def summary(self) -> dict[str, dict[str, int]]:
        """``{section: {added, removed, changed}}`` counted by Spark (one job, nothing else collected)."""
        counts = reduce(
            DataFrame.unionByName,
            [
                d.changes.groupBy("change").count().select(F.lit(name).alias("section"), "change", "count")
                for name, d in self.sections.items()
            ],
        ).collect()
        out = {name: dict.fromkeys(CHANGES, 0) for name in self.sections}
        for r in counts:
            out[r["section"]][r["change"]] = r["count"]
        return out

    def to_json(self) -> dict[str, Any]:
        """``{from, to, summary, <section>: {added, removed, changed}}``, entries sorted by key.

        Collects every difference (and both provenances) with one Spark job.
        """

        def as_json(c: str) -> Column:
            return F.to_json(c, _JSON_OPTIONS)

        provenance = [
            frame.select(
                F.lit(side).alias("section"),
                F.lit(None).cast("string").alias("change"),
                F.array().cast("array<string>").alias("fields"),
                F.lit(None).cast("string").alias("before"),
                F.to_json(F.struct("offset", "epoch", "timestamp")).alias("after"),
            )
            for side, frame in (("from", self.from_provenance), ("to", self.to_provenance))
        ]
        details = [
            d.changes.select(
                F.lit(name).alias("section"),
                "change",
                "fields",
                as_json("before").alias("before"),
                as_json("after").alias("after"),
            )
            for name, d in self.sections.items()
        ]
        rows = reduce(DataFrame.unionByName, provenance + details).collect()

        doc: dict[str, Any] = {"from": None, "to": None, "summary": {}}
        grouped: dict[str, dict[str, list[tuple[Any, dict]]]] = {
            name: {c: [] for c in CHANGES} for name in self.sections
        }
        for r in rows:
            before = json.loads(r["before"]) if r["before"] is not None else None
            after = json.loads(r["after"]) if r["after"] is not None else None
            if r["change"] is None:
                doc[r["section"]] = after
                continue
            section = self.sections[r["section"]].section
            row = after if after is not None else before
            assert row is not None
            key = tuple(_sort_value(row[k]) for k in section.keys)
            grouped[r["section"]][r["change"]].append(
                (key, _entry(section, r["change"], list(r["fields"]), before, after))
            )
        for name, by_change in grouped.items():
            doc["summary"][name] = {c: len(entries) for c, entries in by_change.items()}
            doc[name] = {c: [e for _, e in sorted(entries, key=lambda ke: ke[0])] for c, entries in by_change.items()}
        return doc


def diff_images(before: ImageFrames, after: ImageFrames) -> ImageDiff:
    """The differences from ``before`` to ``after`` (lazy: DataFrames until collected)."""
    return ImageDiff(
        from_provenance=before.provenance,
        to_provenance=after.provenance,
        sections={
            name: diff_section(getattr(before, name), getattr(after, name), section)
            for name, section in SECTIONS.items()
        },
    )
