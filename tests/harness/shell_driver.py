"""Kafka's metadata shell on many files and commands in one JVM: ``java/ShellDriver.java`` loads each file as
``kafka-metadata-shell --snapshot FILE`` does and runs commands on it as the shell runs them (non-interactive:
``Commands(false)``; the interactive shell's commands with ``interactive``), answering each with what it printed
and the message of an exception it threw. A JVM per file and command would take 2–5 s each; one run takes
that once."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from .kafka_dist import FetchError, KafkaDist, compile_java, shell_class_path
from .oracle import OracleError, run_compiled

SOURCE = Path(__file__).parent / "java" / "ShellDriver.java"
HELP_COLUMNS = "80"
"""``COLUMNS`` for the driver: argparse4j lays help out for a terminal that wide less 5 (75, its width without one)."""


@dataclass(frozen=True)
class Command:
    """A command line for the shell: its words, and whether an interactive shell's commands parse it."""

    words: tuple[str, ...]
    interactive: bool = False


@dataclass(frozen=True)
class Answer:
    """What a command printed, and the message of the exception it threw (Kafka's shell then prints
    ``Unexpected error: <message>`` on stderr and exits 1)."""

    output: str
    error: str | None = None


@dataclass(frozen=True)
class FileAnswers:
    """Kafka's answers to the commands on one file, or why it showed no image of the file (``unloaded``: its
    loader published none, and the shell waits for one forever)."""

    answers: list[Answer]
    unloaded: str | None = None


def run_shell(
    dist: KafkaDist, runs: Sequence[tuple[Path, Sequence[Command]]], *, timeout: float = 1800
) -> list[FileAnswers]:
    """For each (file, commands): the answers of Kafka's shell of ``dist`` to the commands run in order on the
    file (a working directory set by ``cd`` carries over within the file)."""
    for _, commands in runs:
        for c in commands:
            if any("\t" in w or "\n" in w for w in c.words):
                raise ValueError(f"{c.words!r}: the driver's requests cannot hold tabs or newlines")
    requests = "".join(
        f"load\t{os.path.abspath(file)}\n"
        + "".join("run\t" + "\t".join(("1" if c.interactive else "0", *c.words)) + "\n" for c in commands)
        for file, commands in runs
    )
    stdout = _driver(dist, requests, timeout)
    answers = _answers(stdout)
    out = []
    for _, commands in runs:
        loaded = answers.pop(0)
        given = [answers.pop(0) for _ in commands]
        out.append(FileAnswers([], loaded.error) if loaded.error is not None else FileAnswers(given))
    return out


def _driver(dist: KafkaDist, requests: str, timeout: float) -> bytes:
    """ShellDriver's output for ``requests`` (compiled against ``dist`` once; with the shell compiled for a
    version Maven Central has none of, ``kafka_dist.shell_class_path``)."""
    shell = shell_class_path(dist)
    try:
        classes = compile_java(dist, "shell-driver", {SOURCE.name: SOURCE.read_text(encoding="utf-8")}, shell)
    except FetchError as e:
        raise OracleError(str(e)) from None
    proc = run_compiled(
        dist,
        [classes, *shell],
        "ShellDriver",
        stdin=requests.encode(),
        env={**os.environ, "COLUMNS": HELP_COLUMNS},
        timeout=timeout,
        text=False,
        log_level="OFF",
    )
    if proc.returncode != 0:
        raise OracleError(f"ShellDriver failed ({proc.returncode}):\n{proc.stderr.decode(errors='replace')[-5000:]}")
    return proc.stdout


def _answers(stdout: bytes) -> list[Answer]:
    out = []
    at = 0
    while at < len(stdout):
        end = stdout.index(b"\n", at)
        status, length = stdout[at + 1 : end].decode().rsplit(" ", 1)
        body = stdout[end + 1 : end + 1 + int(length)].decode()
        at = end + 1 + int(length)
        out.append(Answer(body, None if status == "ok" else status.removeprefix("error:")))
    return out


def ls_columns(dist: KafkaDist, layouts: Sequence[tuple[int, Sequence[str]]], *, timeout: float = 600) -> list[str]:
    """Kafka's ``ls`` layout (``LsCommandHandler.printEntries``) of each list of entries on a terminal of each width."""
    requests = "".join("\t".join(("columns", str(width), *entries)) + "\n" for width, entries in layouts)
    answers = _answers(_driver(dist, requests, timeout))
    for answer in answers:
        if answer.error is not None:
            raise OracleError(f"ShellDriver columns: {answer.error}")
    return [a.output for a in answers]
