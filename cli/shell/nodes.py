"""The shell's own nodes (Kafka's ``org.apache.kafka.shell.node``): the root (``/image`` and ``/local``), ``/local``
(what the shell is), and the printer ``cat`` and ``tree`` print nodes with."""

from __future__ import annotations

import functools
import subprocess
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TextIO

from image.node.nodes import MetadataImageNode, MetadataLeafNode, MetadataNode
from image.node.releases import ShellRelease

SHELL_PACKAGE = "org.apache.kafka.shell.node"


class RootShellNode(MetadataNode):
    """``/``: ``local`` and ``image``."""

    JAVA_CLASS = f"{SHELL_PACKAGE}.RootShellNode"

    def __init__(self, image: Callable[[], MetadataImageNode], release: ShellRelease) -> None:
        self.image = image
        self.release = release

    def child_names(self) -> Iterable[str]:
        return (LocalShellNode.NAME, MetadataImageNode.NAME)

    def child(self, name: str) -> MetadataNode | None:
        if name == LocalShellNode.NAME:
            return LocalShellNode(self.release)
        if name == MetadataImageNode.NAME:
            return self.image()
        return None


@functools.cache
def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("kraft-replay")
    except PackageNotFoundError:
        return "unknown"


@functools.cache
def _commit_id() -> str:
    """The commit of the source tree kraft-replay runs from ("unknown" outside a git checkout, as Kafka's
    ``AppInfoParser`` says when its build information is missing)."""
    try:
        done = subprocess.run(
            ["git", "-C", str(Path(__file__).resolve().parent), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return done.stdout.strip() if done.returncode == 0 and done.stdout.strip() else "unknown"


class LocalShellNode(MetadataNode):
    """``/local``: the shell's ``version`` and ``commitId`` (kraft-replay's, where Kafka's shell gives Kafka's)."""

    NAME = "local"
    JAVA_CLASS = f"{SHELL_PACKAGE}.LocalShellNode"

    def __init__(self, release: ShellRelease) -> None:
        self.release = release

    def child_names(self) -> Iterable[str]:
        return ("version", "commitId")

    def child(self, name: str) -> MetadataNode | None:
        if name == "version":
            return MetadataLeafNode(_version())
        if name == "commitId":
            return MetadataLeafNode(_commit_id())
        return None


class ShellNodePrinter:
    """Kafka's ``ShellNodePrinter``: a directory's name and ``:``, its contents two spaces further in; nothing
    redacted."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.level = 0

    def enter_node(self, name: str) -> None:
        self.out.write(f"{'  ' * self.level}{name}:\n")
        self.level += 1

    def leave_node(self) -> None:
        self.level -= 1

    def output(self, text: str) -> None:
        self.out.write(f"{'  ' * self.level}{text}\n")
