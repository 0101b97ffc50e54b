"""The folders are the layers (README, "Layout"): a module imports only its own layer and those below it, lazy
imports inside functions included, so the import graph runs one way."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

LAYERS = [
    ("metadata.log",),
    ("image",),  # Kafka's image package (the root) and image.node
    ("generator",),
    ("metadata.lake",),
    ("image.temporal",),
    ("image.views",),
    ("replica",),
    ("cli",),
]
"""Bottom first; a module's layer is the longest prefix it matches."""


def layer(module: str) -> int | None:
    best: tuple[int, int] | None = None
    for rank, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and (best is None or len(prefix) > best[0]):
                best = (len(prefix), rank)
    return None if best is None else best[1]


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found |= {f"{node.module}.{alias.name}" for alias in node.names}  # `from image import parts`
    return found


def test_every_import_goes_down_the_layers():
    upward = []
    for package in ("metadata", "image", "generator", "replica", "cli"):
        for path in sorted((ROOT / package).rglob("*.py")):
            here = module_name(path)
            mine = layer(here)  # (``metadata/__init__.py``, which imports nothing, has none)
            for name in sorted(imports(path)):
                theirs = layer(name)
                if mine is not None and theirs is not None and theirs > mine:
                    upward.append(f"{here} imports {name}")
    assert upward == []


def test_every_layer_is_known():
    """The table covers every package (a new folder gets a layer)."""
    for package in ("metadata", "image", "generator", "replica", "cli"):
        for path in (ROOT / package).rglob("*.py"):
            assert module_name(path) == "metadata" or layer(module_name(path)) is not None, path
