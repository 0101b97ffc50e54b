"""How a diff identifies the rows of each image part (pure data, nothing heavy imported): what
:mod:`image.diff` matches on and what a reader of a diff needs to name a change.

``DIFF_KEYS[part] = (keys, context)``, from the part's shape (:data:`image.shapes.SHAPES`): its key columns,
and context columns shown with a change but not compared (a partition's topic name). Every other column of
the part is a value.
"""

from __future__ import annotations

from image.shapes import SHAPES

CHANGES = ("added", "removed", "changed")

DIFF_KEYS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    part: (shape.key, shape.context) for part, shape in SHAPES.items() if not shape.hidden
}
