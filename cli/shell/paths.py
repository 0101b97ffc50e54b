"""Paths and globs of the metadata shell: Kafka's ``CommandUtils`` path helpers, ``GlobComponent`` and
``GlobVisitor`` (``org.apache.kafka.shell.glob``), with their quirks (a malformed glob is a literal name)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from image.node.java import JavaException, java_sorted
from image.node.nodes import MetadataNode

_REGEX_SPECIAL = set("$()+.[]^{|")
_GLOB_SPECIAL = set("*?\\{}")


def effective_paths(paths: list[str]) -> list[str]:
    """``getEffectivePaths``: the non-empty paths, or ``.``."""
    return [p for p in paths if p] or ["."]


def split_path(path: str) -> list[str]:
    """``splitPath``: the components (repeated and trailing slashes ignored)."""
    return [c for c in path.split("/") if c]


def strip_dot_components(components: list[str]) -> list[str]:
    """``stripDotPathComponents``: ``.`` dropped, ``..`` removes the previous component (none above the root)."""
    out: list[str] = []
    for c in components:
        if c == "..":
            if out:
                out.pop()
        elif c != ".":
            out.append(c)
    return out


def absolute_components(path: str, working_directory: str) -> list[str]:
    """The components of ``path`` resolved against the working directory."""
    full = path if path.startswith("/") else f"{working_directory}/{path}"
    return strip_dot_components(split_path(full))


def glob_to_regex(glob: str) -> str | None:
    """``GlobComponent.toRegularExpression``: the regular expression of a glob (``*``, ``?``, ``{a,b}``, ``\\``
    escapes), None for a literal; ValueError for a malformed glob (nested or unterminated group)."""
    out = ["^"]
    literal = True
    group = False
    i = 0
    while i < len(glob):
        c = glob[i]
        i += 1
        if c == "?":
            literal = False
            out.append(".")
        elif c == "*":
            literal = False
            out.append(".*")
        elif c == "\\":
            if i == len(glob):
                out.append(c)
            else:
                following = glob[i]
                i += 1
                if following in _GLOB_SPECIAL or following in _REGEX_SPECIAL:
                    out.append("\\")
                out.append(following)
        elif c == "{":
            if group:
                raise ValueError("Can't nest glob groups.")
            literal = False
            out.append("(?:(?:")
            group = True
        elif c == ",":
            if group:
                literal = False
                out.append(")|(?:")
            else:
                out.append(c)
        elif c == "}":
            if group:
                literal = False
                out.append("))")
                group = False
            else:
                out.append(c)
        else:
            if c in _REGEX_SPECIAL:
                out.append("\\")
            out.append(c)
    if group:
        raise ValueError("Unterminated glob group.")
    if literal:
        return None
    out.append("$")
    return "".join(out)


class GlobComponent:
    """One path component: a literal name, or a pattern (a malformed one is taken literally, as Kafka does)."""

    def __init__(self, component: str) -> None:
        self.component = component
        self.pattern: re.Pattern[str] | None = None
        try:
            regex = glob_to_regex(component)
            if regex is not None:
                self.pattern = re.compile(regex)
        except (ValueError, re.error):
            self.pattern = None

    @property
    def literal(self) -> bool:
        return self.pattern is None

    def matches(self, name: str) -> bool:
        return name == self.component if self.pattern is None else self.pattern.fullmatch(name) is not None


@dataclass(frozen=True, slots=True)
class NodeInfo:
    """``MetadataNodeInfo``: a node found by a glob and its path."""

    path: tuple[str, ...]
    node: MetadataNode

    @property
    def last_component(self) -> str:
        return self.path[-1] if self.path else "/"

    @property
    def absolute_path(self) -> str:
        return "/" + "/".join(self.path)


def glob(root: MetadataNode, working_directory: str, pattern: str) -> Iterator[NodeInfo]:
    """``GlobVisitor``: every node ``pattern`` names, in Java's order of names at each wildcard (none: nothing
    matched). A listed child that is missing under a wildcard is Kafka's ``RuntimeException``."""
    yield from _visit(absolute_components(pattern, working_directory), 0, root, ())


def _visit(components: list[str], index: int, node: MetadataNode, path: tuple[str, ...]) -> Iterator[NodeInfo]:
    if index >= len(components):
        yield NodeInfo(path, node)
        return
    component = GlobComponent(components[index])
    if not node.is_directory():
        return
    if component.literal:
        child = node.child(component.component)
        if child is not None:
            yield from _visit(components, index + 1, child, (*path, component.component))
        return
    for name in java_sorted(node.child_names()):
        if component.matches(name):
            child = node.child(name)
            if child is None:
                raise JavaException(f"Expected {name} to be a valid child of class {node.JAVA_CLASS}, but it was not.")
            yield from _visit(components, index + 1, child, (*path, name))


def visit(root: MetadataNode, working_directory: str, pattern: str, handle: Callable[[NodeInfo | None], None]) -> None:
    """``GlobVisitor.accept``: ``handle`` every match as it is found, or None once if nothing matched."""
    found = False
    for info in glob(root, working_directory, pattern):
        found = True
        handle(info)
    if not found:
        handle(None)


def complete_path(root: MetadataNode, working_directory: str, prefix: str) -> list[tuple[str, bool]]:
    """``CommandUtils.completePath``: the completions of a path prefix, each with whether it is complete (a
    file; a directory gets a trailing ``/`` and is not)."""
    components = absolute_components(prefix, working_directory)
    directory = root
    depth = len(components) if prefix.endswith("/") else len(components) - 1
    for i in range(depth):
        node = directory.child(components[i])
        if node is None or not node.is_directory():
            return []
        directory = node
    last = components[depth] if 0 <= depth < len(components) else ""
    head = prefix[: prefix.rfind("/") + 1]
    out = []
    for name in java_sorted(directory.child_names()):
        if not name.startswith(last):
            continue
        child = directory.child(name)
        is_directory = child is not None and child.is_directory()
        out.append((head + name + ("/" if is_directory else ""), not is_directory))
    return out
