"""The temporal image's checks for ``kraft-replay check`` (registered with :func:`metadata.check.lake_check`):
every key's versions form one chain of non-overlapping intervals, and the images the versions give at
sampled offsets equal a sequential replay of the stored records to those offsets."""

from __future__ import annotations

import functools

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from image.lake_source import ArrowSource
from image.sources import reference_image
from image.spark.source import SparkSource
from image.temporal import image_at
from metadata.check import CheckContext, Findings, lake_check, listed, readable
from metadata.version_tables import PART_KEYS, PART_TABLES


def _key(name: str) -> Column:
    """A key column usable in a window (a map, e.g. a quota entity, as its sorted entries in JSON)."""
    if name == "entity":
        return F.to_json(F.array_sort(F.map_entries(F.col(name))))
    return F.col(name)


@lake_check("versions")
def check_versions(ctx: CheckContext) -> Findings:
    """Per key, versions do not overlap and at most one is open; the image at the log's start, middle and
    end equals the reference engine's replay of the stored records to there (errors included)."""
    found = Findings()
    tables = {part: table for part, table in PART_TABLES.items() if table in ctx.state.versions}
    if not tables:
        if "records" in ctx.state.versions:
            found.problems.append(
                "the lake has records but no temporal image (image_* tables): "
                "ingest anything (even the same sources again) to build it"
            )
        return found
    chains = []
    for part, table in tables.items():
        if not readable(ctx, table, found):
            continue
        keys = [_key(k) for k in PART_KEYS[part]]
        chain = Window.partitionBy(*keys).orderBy("from_offset")
        chains.append(
            ctx.table(table)
            .withColumn("_next", F.lead("from_offset").over(chain))
            .where(
                (F.col("to_offset").isNotNull() & (F.col("to_offset") <= F.col("from_offset")))
                | (F.col("_next").isNotNull() & (F.col("to_offset").isNull() | (F.col("to_offset") > F.col("_next"))))
            )
            .select(F.lit(table).alias("table"), "from_offset", "to_offset", "_next")
        )
    rows = []
    if chains:  # every table in one job: the first three problems of each
        first = Window.partitionBy("table").orderBy("from_offset")
        union = functools.reduce(DataFrame.unionByName, chains)
        rows = (
            union.withColumn("_n", F.row_number().over(first))
            .where("_n <= 3")
            .orderBy("table", "from_offset")
            .collect()
        )
    bad = [
        f"{r['table']}: a version from offset {r['from_offset']} to {r['to_offset']} overlaps the next "
        f"(from {r['_next']})"
        if r["_next"] is not None
        else f"{r['table']}: a version ends (offset {r['to_offset']}) before it begins ({r['from_offset']})"
        for r in rows
    ]
    found.problems += listed(bad, "version chain problems")
    if bad or not all(t in ctx.readable for t in tables.values()):
        return found
    source = ArrowSource(ctx.files) if ctx.files is not None else SparkSource(ctx.lake, ctx.state)
    bounds = source.bounds()
    if bounds is None:
        return found
    first, last = bounds
    for offset in sorted({first, (first + last) // 2, last}):
        doc, errors = image_at(source, offset, lenient=True)
        expected = reference_image(source, offset, lenient=True)
        replayed = expected.to_json()
        differ = sorted(k for k in {*doc, *replayed} if doc.get(k) != replayed.get(k))
        if [str(e) for e in errors] != [str(e) for e in expected.errors]:
            differ.append("replay errors")
        if differ:
            found.problems.append(
                f"the temporal image at offset {offset} differs from a replay of the stored "
                f"records ({', '.join(differ)}); ingest the sources into a new lake"
            )
        else:
            found.notes.append(f"the image at offset {offset} equals a replay of the records")
    return found
