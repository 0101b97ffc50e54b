"""What Kafka's own metadata shell printed for ``tree /image`` of every file of a real-Kafka fixture, committed
beside the fixture (``kafka-shell.json``) so that the fast tier compares our shell with it byte for byte without
a JVM. Written by ``python -m tests.harness shell-texts <fixture>``; tests/test_shell_kafka.py checks that the
committed text is what Kafka's shell prints now."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

from tests.harness.kafka_dist import KafkaDist
from tests.harness.shell_driver import Command, run_shell

TEXTS_NAME = "kafka-shell.json"


@dataclass(frozen=True)
class TreeText:
    """Kafka's ``tree /image`` of one file, or why its shell showed none."""

    output: str
    unloaded: str | None = None


TREE_COMMAND = Command(("tree", "/image"))


def shell_files(fixture: Path) -> list[Path]:
    """The files of a fixture Kafka's shell reads on its own: the segments and snapshots of its log directory and
    its ``bootstrap.checkpoint``."""
    log_dir = fixture / "__cluster_metadata-0"
    found = [*log_dir.glob("*.log"), *log_dir.glob("*.checkpoint"), *fixture.glob("bootstrap.checkpoint")]
    return sorted(found)


def tree_texts(fixture: Path) -> dict[str, TreeText]:
    """The committed texts by file (relative to the fixture)."""
    doc = json.loads((fixture / TEXTS_NAME).read_text(encoding="utf-8"))
    return {name: TreeText(**text) for name, text in doc["files"].items()}


def write_tree_texts(fixture: Path, version: str, texts: dict[str, TreeText]) -> Path:
    """Commit-ready ``kafka-shell.json`` of a fixture."""
    path = fixture / TEXTS_NAME
    doc = {
        "kafkaVersion": version,
        "command": " ".join(TREE_COMMAND.words),
        "files": {name: asdict(text) for name, text in sorted(texts.items())},
    }
    path.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


NO_METADATA = TreeText("", "no metadata records: Kafka's shell waits for an image forever")
"""A file Kafka's shell is not asked about: its loader applies nothing and the shell never shows an image."""


def has_metadata(path: Path) -> bool:
    """Whether the file holds a metadata record (read as Kafka's shell reads it)."""
    from cli.shell.session import kafka_shell_source

    return kafka_shell_source(str(path))[1] >= 0


def kafka_tree_texts(dist: KafkaDist, fixture: Path) -> dict[str, TreeText]:
    """What Kafka's shell of ``dist`` prints for ``tree /image`` of each of the fixture's files now."""
    files = [f for f in shell_files(fixture) if has_metadata(f)]
    answers = run_shell(dist, [(f, [TREE_COMMAND]) for f in files])
    texts = {str(f.relative_to(fixture)): NO_METADATA for f in shell_files(fixture)}
    for f, a in zip(files, answers):
        texts[str(f.relative_to(fixture))] = TreeText("", a.unloaded) if a.unloaded else TreeText(a.answers[0].output)
    return texts
