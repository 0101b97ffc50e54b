"""How a diff identifies the rows of each image part (pure data, nothing heavy imported): what
:mod:`image.diff` matches on and what a reader of a diff needs to name a change.

``DIFF_KEYS[part] = (keys, context)``: the part's key columns (``metadata.lake.version_tables.PART_KEYS``), and
context columns shown with a change but not compared (a partition's topic name). Every other column of
the part is a value.
"""

from __future__ import annotations

from metadata.lake.version_tables import PART_KEYS

CHANGES = ("added", "removed", "changed")

_CONTEXT: dict[str, tuple[str, ...]] = {"partitions": ("topic",)}

DIFF_KEYS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    part: (keys, _CONTEXT.get(part, ())) for part, keys in PART_KEYS.items() if part != "topicNames"
}
