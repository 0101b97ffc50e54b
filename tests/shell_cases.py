"""What the shell tests ask: the commands that cover a file's whole tree (``tree /image``, ``ls`` of every directory,
``cat`` of every file), a battery of commands with globs, relative paths, options and mistakes, and our shell's
answers to them in process (the ``kraft-replay shell --log FILE -- CMD`` path without the process)."""

from __future__ import annotations

import io
import os
from pathlib import Path
from unittest import mock

from cli.shell.args import CommandSpec, Positional
from cli.shell.commands import KAFKA_COMMANDS, SPECS, Context, run
from cli.shell.session import Session, kafka_shell_source
from image.node.java import JavaException, java_sorted
from image.node.nodes import MetadataNode
from image.node.releases import shell_release
from image.release import rules_for
from tests.harness.shell_driver import HELP_COLUMNS, Answer, Command

KAFKA_SPECS: tuple[CommandSpec, ...] = tuple(
    CommandSpec(
        "history",
        "Print command history.",
        True,
        (Positional("numEntriesToShow", "?", "The number of entries to show.", integer=True),),
    )
    if s.name == "history"
    else s
    for s in SPECS
    if s.name in KAFKA_COMMANDS
)
"""Kafka's shell's commands as our parser's specs (Kafka's ``history`` takes only a number, in a shell only)."""


def open_file(path: Path, version: str | None = None) -> Session:
    """Our shell on one file, as ``kraft-replay shell --log FILE [--kafka-version X.Y]`` opens it."""
    source, offset = kafka_shell_source(str(path), rules_for(version))
    return Session(source, shell_release(version), offset, kafka_file=True)


def walk(node: MetadataNode, path: str = "/image") -> tuple[list[str], list[str]]:
    """Every directory and every file under ``node`` (absolute paths, Java's order)."""
    directories, files = [path], []
    for name in java_sorted(node.child_names()):
        child = node.child(name)
        if child is None:
            continue
        sub = f"{path}/{name}"
        if child.is_directory():
            more_dirs, more_files = walk(child, sub)
            directories += more_dirs
            files += more_files
        else:
            files.append(sub)
    return directories, files


def tree_commands(session: Session) -> list[Command]:
    """``tree /image``, ``ls`` of every directory and ``cat`` of every file of the session's tree."""
    image = session.root.child("image")
    assert image is not None
    directories, files = walk(image)
    return [
        Command(("tree", "/image")),
        *(Command(("ls", d)) for d in directories),
        *(Command(("cat", f)) for f in files),
    ]


BATTERY: tuple[Command, ...] = tuple(
    Command(tuple(words.split(" ")) if words else ())
    for words in (
        "ls",
        "ls /",
        "ls /image/topics/byName /image/provenance /image/producerIds/nextProducerId",
        "ls /nope /image/provenance",
        "ls /image/topics/byName/*",
        "ls /image/scram/*",
        "ls /image/topics/byId/AAAAAAAAAAAAAAAAAAAAAA",
        "ls ../image/./topics",
        "ls /image/topics/../cluster",
        "ls ///image//topics/",
        "ls /image/topics/byName/\\*",
        "ls /image/{cluster,topics",
        "ls /image/{cl{u}ster}",
        "ls /image/?luster",
        "ls -l",
        "ls --he",
        "ls -hx",
        "ls -- -x",
        "ls --help=1",
        "cat /image/topics/byName/*/0",
        "cat /image/topics/byName/*/{id,name}",
        "cat /image/*/nextProducerId",
        "cat /image",
        "cat /nope",
        "cat",
        "cat /image/cluster/brokers/+1",
        "cat /image/cluster/brokers/01",
        "cat /image/cluster/brokers/x",
        "cat /image/features/finalized_nope",
        "cat /image/features/zkMigrationState",
        "cat /image/features/metadataVersion /image/provenance",
        "tree /nope",
        "tree /image/provenance /image/producerIds",
        "tree /image/clientQuotas",
        "tree /image/configs/*",
        "tree /image/{cluster,acls}",
        "tree",
        "find /image/cluster",
        "find nope",
        "find /image/topics/byName/*",
        "find /image/configs /image/acls",
        "tr /image/producerIds",
        "c /x",
        "-x",
        "--",
        "-- ls",
        "",
    )
)
"""Commands whose answers are the same in Kafka's non-interactive shell and ours."""

INTERACTIVE: tuple[Command, ...] = tuple(
    Command(tuple(words.split(" ")), interactive=True)
    for words in (
        "cd /image/topics",
        "pwd",
        "cd byName",
        "pwd",
        "cd ..",
        "pwd",
        "cd /nope",
        "cd /image/provenance",
        "cd /image/topics byName",
        "cd",
        "pwd",
        "cd /image/*s",
        "pwd",
        "ls",
        "cd /image/cluster/brokers",
        "ls .",
        "cat ../controllers/0",
        "cd /",
        "pwd x",
        "man foo",
        "man",
        "man cd",
        "man ls",
        "man tree",
        "c",
        "h",
        "ls -h",
        "pwd -h",
        "cd -h",
    )
)
"""Interactive commands whose answers are the same in Kafka's shell and ours, in this order on one file."""

FIND_FEATURES = Command(("find", "/image/features"))
"""Kafka 4.0 and 4.1 list ``zkMigrationState`` without a file: their ``find`` stops with an exception there."""


def our_answers(session: Session, commands: list[Command] | tuple[Command, ...]) -> list[Answer]:
    """Our shell's answers, as :mod:`tests.harness.shell_driver` gives Kafka's: what was printed, and the message
    of the exception Kafka's shell would have thrown."""
    out = []
    with mock.patch.dict(os.environ, {"COLUMNS": HELP_COLUMNS}):
        for command in commands:
            buffer = io.StringIO()
            error = None
            try:
                run(Context(session, buffer, interactive=command.interactive), list(command.words))
            except JavaException as e:
                error = str(e)
            out.append(Answer(buffer.getvalue(), error))
    return out
