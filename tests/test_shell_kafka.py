"""``kraft-replay shell --log FILE -- CMD`` against Kafka's own metadata shell (``kafka-metadata-shell --snapshot FILE
CMD``) of the file's release, on every file of every real-Kafka fixture and of a generated log: ``tree /image``,
``ls`` of every directory, ``cat`` of every file, and a battery of commands with globs, relative paths, options,
the interactive shell's commands and mistakes — the same bytes, messages included. Each fixture is checked with
the shell of its release line's newest patch (the oracle's Kafka, ``kafka_dist.RELEASES``), which runs once per
line for all files and commands (tests/harness/shell_driver.py).

Files without any metadata record (a 4.x log directory's ``0-0`` snapshot) are not asked: Kafka's shell waits for
an image forever there (its loader applies nothing); our shell shows the empty image."""

from __future__ import annotations

import functools
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cli.shell.args import ArgumentError, commands_help, parse
from generator import LOG_DIR_NAME, generate
from tests.harness.kafka_dist import line_version, release_line
from tests.harness.shell_driver import HELP_COLUMNS, Command, FileAnswers, ls_columns, run_shell
from tests.harness.testing import dist_for
from tests.kafka_logs import KAFKA_FIXTURES, kafka_fixture_name
from tests.shell_cases import BATTERY, FIND_FEATURES, INTERACTIVE, KAFKA_SPECS, open_file, our_answers, tree_commands
from tests.shell_texts import NO_METADATA, TREE_COMMAND, TreeText, has_metadata, shell_files, tree_texts

pytestmark = pytest.mark.kafka

ROOT = Path(__file__).resolve().parent.parent
LINES = sorted({release_line(f.parent.name) for f in KAFKA_FIXTURES}, key=lambda line: tuple(map(int, line.split("."))))
"""The release lines of the fixtures; each is checked with its newest patch's shell (``kafka_dist.RELEASES``)."""

KAFKA_ONLY: tuple[Command, ...] = tuple(
    Command(tuple(words.split(" ")), interactive)
    for interactive, words in (
        (False, "pwd"),
        (False, "foo /x"),
        (True, "foo"),
        (True, "p"),
        (True, "n"),
        (True, "history abc"),
        (True, "history -h"),
        (True, "help"),
    )
)
"""Lines whose answer depends on the commands a shell has: our parser with Kafka's commands must give Kafka's."""


@functools.cache
def generated_log() -> Path:
    """A generated log of four segments and a snapshot (the later segments replayed on their own, from nothing)."""
    import tempfile

    out = Path(tempfile.mkdtemp(prefix="shell-generated-"))
    generate(7, 3, 4, 3, 300, out, snapshot_at=400, segment_bytes=32 * 1024)
    return out / LOG_DIR_NAME


def files_of(line: str) -> list[Path]:
    """Every file of the release line's fixtures and the generated log that Kafka's shell shows an image of."""
    files = [f for fixture in KAFKA_FIXTURES if release_line(fixture.parent.name) == line for f in shell_files(fixture)]
    files += sorted(generated_log().glob("*.log")) + sorted(generated_log().glob("*.checkpoint"))
    return [f for f in files if has_metadata(f)]


def commands_of(path: Path, line: str) -> list[Command]:
    commands = [*tree_commands(open_file(path, line)), *BATTERY, *INTERACTIVE, *KAFKA_ONLY]
    return commands + [FIND_FEATURES]  # last: Kafka 4.0 and 4.1's find of the features throws


@functools.cache
def kafka_answers(line: str) -> dict[Path, tuple[list[Command], FileAnswers]]:
    """Kafka's answers to every command on every file of the release line (one JVM)."""
    runs = [(f, commands_of(f, line)) for f in files_of(line)]
    answers = run_shell(dist_for(line_version(line)), runs)
    return {f: (commands, a) for (f, commands), a in zip(runs, answers)}


def _compare(line: str, files: list[Path]) -> int:
    answers = kafka_answers(line)
    problems, compared = [], 0
    for path in files:
        commands, kafka = answers[path]
        assert kafka.unloaded is None, f"{path}: {kafka.unloaded}"
        ours = our_answers(open_file(path, line), commands)
        for command, theirs, mine in zip(commands, kafka.answers, ours):
            if command in KAFKA_ONLY:
                continue
            compared += 1
            if theirs != mine:
                problems.append(f"{path.name} {' '.join(command.words)!r}:\n  Kafka: {theirs!r}\n  ours:  {mine!r}")
    assert not problems, f"{len(problems)} of {compared} answers differ:\n" + "\n".join(problems[:20])
    return compared


@pytest.mark.parametrize("fixture", KAFKA_FIXTURES, ids=kafka_fixture_name)
def test_every_file_prints_what_kafkas_shell_prints(fixture):
    files = [f for f in shell_files(fixture) if has_metadata(f)]
    assert _compare(release_line(fixture.parent.name), files) > 100 * len(files)


@pytest.mark.parametrize("line", LINES)
def test_a_generated_log_prints_what_kafkas_shell_prints(line):
    """Every segment of a generated log alone (the later ones replayed from nothing: records Kafka's replay rejects
    are skipped as its fault handler skips them) and its snapshot."""
    files = [f for f in files_of(line) if f.parent == generated_log()]
    assert len(files) == 5
    assert _compare(line, files) > 100 * len(files)


@pytest.mark.parametrize("line", LINES)
def test_our_parser_with_kafkas_commands_says_what_kafkas_says(line, monkeypatch):
    """The answers that name a shell's commands (``invalid choice``, ``ambiguous command``, ``help``, and Kafka's
    ``history`` that takes only a number): our parser given Kafka's commands prints Kafka's."""
    monkeypatch.setenv("COLUMNS", HELP_COLUMNS)
    path, (commands, kafka) = next(iter(kafka_answers(line).items()))
    checked = 0
    for command, theirs in zip(commands, kafka.answers):
        if command not in KAFKA_ONLY:
            continue
        specs = [s for s in KAFKA_SPECS if command.interactive or not s.shell_only]
        if command.words == ("help",):
            ours = "Welcome to the Apache Kafka metadata shell.\n\n" + commands_help(specs)
        else:
            try:
                parsed = parse(specs, list(command.words))
                ours = parsed.help or ""
            except ArgumentError as e:
                ours = f"{e}\n"
        assert (ours, None) == (theirs.output, theirs.error), command.words
        checked += 1
    assert checked == len(KAFKA_ONLY)


@pytest.mark.parametrize("fixture", KAFKA_FIXTURES, ids=kafka_fixture_name)
def test_the_committed_tree_texts_are_what_kafkas_shell_prints(fixture):
    """``kafka-shell.json`` (what the fast tier compares with) is what Kafka's shell prints now."""
    answers = kafka_answers(release_line(fixture.parent.name))
    expected = {}
    for path in shell_files(fixture):
        name = str(path.relative_to(fixture))
        if not has_metadata(path):
            expected[name] = NO_METADATA
            continue
        commands, kafka = answers[path]
        expected[name] = TreeText(kafka.answers[commands.index(TREE_COMMAND)].output)
    assert tree_texts(fixture) == expected


@pytest.mark.parametrize("fixture", KAFKA_FIXTURES, ids=kafka_fixture_name)
def test_the_command_line_prints_what_kafkas_shell_prints(fixture):
    """``kraft-replay shell --log FILE -- tree /image`` in a process, on the fixture's first segment; and where
    Kafka's ``find`` throws (4.0, 4.1), what it printed before, the error on stderr and status 1."""
    line = release_line(fixture.parent.name)
    segment = min(f for f in shell_files(fixture) if f.suffix == ".log")
    commands, kafka = kafka_answers(line)[segment]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}

    def shell(*words: str) -> subprocess.CompletedProcess[str]:
        args = ["-m", "cli.main", "shell", "--kafka-version", line, "--log", str(segment), "--", *words]
        return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)

    done = shell(*TREE_COMMAND.words)
    assert (done.returncode, done.stdout) == (0, kafka.answers[commands.index(TREE_COMMAND)].output)
    find = kafka.answers[commands.index(FIND_FEATURES)]
    done = shell(*FIND_FEATURES.words)
    assert done.stdout == find.output
    # (stderr may go on with a note: "Kafka's shell shows the empty image of this file (why)")
    if find.error is None:
        assert done.returncode == 0 and not done.stderr.startswith("Unexpected error")
    else:
        assert done.returncode == 1 and done.stderr.startswith(f"Unexpected error: {find.error}\n")


def test_ls_lays_entries_out_in_columns_as_kafkas_interactive_ls():
    """The interactive ``ls`` fills as many columns as the terminal's width holds (``LsCommandHandler.printEntries``,
    whose code every release line shares): our layout equals Kafka's for listings of every kind and many widths."""
    import io

    from cli.shell.commands import print_entries

    listings = [
        [str(i) for i in range(100)],
        ["alpha", "beta", "delta", "gamma"],
        ["BROKER", "TOPIC:alpha", "TOPIC:gamma", "CLIENT_METRICS:a-much-longer-resource-name", "GROUP:g"],
        ["only"],
        [f"topic-{i:04d}-{'x' * (i % 17)}" for i in range(60)],
        ["ünïcödé", "\U0001f600emoji", "plain"],
    ]
    layouts = [(width, entries) for width in (1, 4, 7, 8, 20, 33, 80, 120, 200) for entries in listings]
    kafka = ls_columns(dist_for(line_version(LINES[-1])), layouts)
    for (width, entries), theirs in zip(layouts, kafka, strict=True):
        ours = io.StringIO()
        print_entries(ours, "", width, entries)
        assert ours.getvalue() == theirs, (width, entries[:3])
