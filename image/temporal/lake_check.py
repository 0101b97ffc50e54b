"""The temporal image's checks for ``kraft-replay check`` (registered with :func:`metadata.lake.check.lake_check`):
every key's versions form one chain of non-overlapping intervals, and the images the versions give at
sampled offsets equal a sequential replay of the stored records to those offsets."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from image.shapes import PART_KEYS
from image.temporal.lake_source import ArrowSource
from image.temporal.reads import image_at
from image.temporal.sources import reference_image
from metadata.lake.check import CheckContext, Findings, lake_check, listed, readable
from metadata.lake.version_tables import PART_TABLES


def _keys(rows: pa.Table, names: tuple[str, ...]) -> pa.Array:
    """Each row's key as one string (a map, e.g. a quota entity, as its sorted entries in JSON)."""
    parts = []
    for name in names:
        column = rows[name]
        if pa.types.is_map(column.type):
            parts.append(pa.array([json.dumps(sorted(m or [])) for m in column.to_pylist()], pa.string()))
        else:
            parts.append(pc.cast(column, pa.string()))
    if not parts:
        return pa.array([""] * rows.num_rows, pa.string())
    return pc.binary_join_element_wise(*parts, "\x00") if len(parts) > 1 else parts[0]


def _chain_problems(rows: pa.Table, names: tuple[str, ...]) -> list[tuple[int, int | None, int | None]]:
    """(from, to, next from) of the versions that end before they begin or overlap the next of their key, by
    ``from_offset``."""
    keys = _keys(rows, names)
    order = pc.sort_indices(pa.table({"k": keys, "f": rows["from_offset"]}), [("k", "ascending"), ("f", "ascending")])
    key = keys.take(order).to_numpy(zero_copy_only=False)
    start = rows["from_offset"].take(order).to_numpy(zero_copy_only=False)
    end_column = rows["to_offset"].take(order)
    open_ = pc.is_null(end_column).to_numpy(zero_copy_only=False)
    end = pc.fill_null(end_column, 0).to_numpy(zero_copy_only=False)
    following = np.zeros(len(key), dtype=bool)
    following[:-1] = key[1:] == key[:-1]
    after = np.zeros(len(key), dtype=start.dtype)
    after[:-1] = start[1:]
    bad = (~open_ & (end <= start)) | (following & (open_ | (end > after)))
    found = sorted(
        (int(start[i]), None if open_[i] else int(end[i]), int(after[i]) if following[i] else None)
        for i in np.flatnonzero(bad)
    )
    return found


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
    rows = []
    for part, table in sorted(tables.items(), key=lambda t: t[1]):
        if not readable(ctx, table, found):
            continue
        versions = ctx.read(table, [*PART_KEYS[part], "from_offset", "to_offset"])
        rows += [(table, *problem) for problem in _chain_problems(versions, PART_KEYS[part])[:3]]
    bad = [
        f"{table}: a version from offset {start} to {end} overlaps the next (from {after})"
        if after is not None
        else f"{table}: a version ends (offset {end}) before it begins ({start})"
        for table, start, end, after in rows
    ]
    found.problems += listed(bad, "version chain problems")
    if bad or not all(t in ctx.readable for t in tables.values()):
        return found
    if ctx.files is not None:
        source = ArrowSource(ctx.files)
    else:
        from image.temporal.spark.source import SparkSource

        source = SparkSource(ctx.lake, ctx.state)
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
