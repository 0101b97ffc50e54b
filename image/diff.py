"""Diff of two images (``diff --json``), in process: what was added, removed and changed per part.

Every part is matched on its key (:data:`image.shapes.SHAPES`): a row only before is
*removed*, only after is *added*, in both with some value column different is *changed* (the changed
fields with their values before and after). Keys: topics by id (a rename is a change of ``name``; a
re-created name is a removal plus an addition), partitions by (topicId, partitionId) with the topic name
as context (shown, not compared), brokers and controllers by id, configs by (resourceType, resourceName,
name), features by name (metadata.version included), producerIds as one value, clientQuotas by (entity,
key), ACLs by id, SCRAM by (mechanism, name), delegation tokens by id. Nested ``endPoints`` /
``features`` lists compare as sets (the rows keep them sorted by name); every other list in order.

From the temporal image only the versions that change between the two offsets are read
(:func:`diff_json`): a key whose version holds at both offsets did not change.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from image.diff_keys import CHANGES, DIFF_KEYS
from image.parts import JSON_PARTS, Row, assemble, row_key
from image.shapes import PART_COLUMNS


def _sort_value(value: Any) -> Any:
    """A null-safe sort key; a clientQuotas entity sorts by its (type, name) pairs, null name first."""
    if isinstance(value, dict):
        return tuple((k, _sort_value(v)) for k, v in sorted(value.items()))
    return (0, "") if value is None else (1, value)


def _entry(part: str, change: str, before: Row | None, after: Row | None) -> dict[str, Any]:
    """A JSON entry: the whole row if added/removed; key, context, fields and changed values if changed."""
    if change == "added":
        assert after is not None
        return after
    if change == "removed":
        assert before is not None
        return before
    assert before is not None and after is not None
    keys, context = DIFF_KEYS[part]
    fields = [c for c, _ in PART_COLUMNS[part] if c not in keys and c not in context and before[c] != after[c]]
    head = {c: after[c] for c in (*keys, *context)}
    return {**head, "fields": fields, "before": {f: before[f] for f in fields}, "after": {f: after[f] for f in fields}}


def diff_rows(
    before: Mapping[str, Iterable[Row]], after: Mapping[str, Iterable[Row]], from_provenance: Row, to_provenance: Row
) -> dict[str, Any]:
    """``{from, to, summary, <part>: {added, removed, changed}}`` of two images given as rows per part
    (rows not mentioned on either side are equal on both), entries sorted by key."""
    doc: dict[str, Any] = {"from": from_provenance, "to": to_provenance, "summary": {}}
    # normalise the rows as the image JSON has them (column order, nested lists sorted)
    b_doc, a_doc = assemble(before, 0, 0, 0), assemble(after, 0, 0, 0)
    for part in JSON_PARTS:
        if part == "features":
            b_rows = [{"name": n, "level": v} for n, v in b_doc[part].items()]
            a_rows = [{"name": n, "level": v} for n, v in a_doc[part].items()]
        elif part == "producerIds":
            b_rows, a_rows = [b_doc[part]], [a_doc[part]]
        else:
            b_rows, a_rows = b_doc[part], a_doc[part]
        b_keyed = {row_key(part, r): r for r in b_rows}
        a_keyed = {row_key(part, r): r for r in a_rows}
        grouped: dict[str, list[tuple[Any, dict[str, Any]]]] = {c: [] for c in CHANGES}
        for key in b_keyed.keys() | a_keyed.keys():
            old, new = b_keyed.get(key), a_keyed.get(key)
            row = new if new is not None else old
            assert row is not None
            change = "added" if old is None else "removed" if new is None else "changed"
            keys, context = DIFF_KEYS[part]
            if change == "changed" and all(old[c] == new[c] for c in new if c not in context):
                continue
            sort_key = tuple(_sort_value(row[k]) for k in keys)
            grouped[change].append((sort_key, _entry(part, change, old, new)))
        doc["summary"][part] = {c: len(entries) for c, entries in grouped.items()}
        doc[part] = {c: [e for _, e in sorted(entries, key=lambda ke: ke[0])] for c, entries in grouped.items()}
    return doc
