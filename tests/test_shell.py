"""``kraft-replay shell`` without a JVM: Java's formatting and parsing as the nodes use them, the command parser's
messages and help (argparse4j's, as Kafka's shell prints them: checked against the real shell by
tests/test_shell_kafka.py), ``tree /image`` of every file of every real-Kafka fixture against the text Kafka's own
shell printed for it (committed, checked against Kafka by the same module), moving through time (``at``,
``next``, ``prev``, ``diff``, ``history``) against the reference engine's image at every offset, ``--json``, and the
command line in a process."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from cli.main import app
from cli.shell.args import ArgumentError, commands_help, parse
from cli.shell.commands import Context, run
from cli.shell.session import Session, leaves
from image.node.java import java_double, java_sorted, parse_int, uuid_from_string, zoned_utc
from image.node.releases import SHELL_RELEASES, shell_release
from image.release import RELEASES, UnsupportedRelease
from image.replay import replay_to
from image.temporal.sources import log_source
from metadata.log.readers import read_log
from tests.kafka_logs import KAFKA_FIXTURES, kafka_fixture_name
from tests.shell_cases import KAFKA_SPECS, open_file, our_answers
from tests.shell_texts import TREE_COMMAND, shell_files, tree_texts

ROOT = Path(__file__).resolve().parent.parent
BASIC = ROOT / "tests" / "fixtures" / "kafka" / "4.1.1" / "basic" / "__cluster_metadata-0"
SEGMENT = BASIC / "00000000000000000000.log"


def test_java_formats_as_kafkas_nodes_print():
    assert [java_double(v) for v in (1048576.0, 1.0, 1e7, 9999999.0, 1e-3, 9.99e-4, 2.5e-10, 1e22, -3.0, 0.5)] == [
        "1048576.0",
        "1.0",
        "1.0E7",
        "9999999.0",
        "0.001",
        "9.99E-4",
        "2.5E-10",
        "1.0E22",
        "-3.0",
        "0.5",
    ]
    assert [java_double(v) for v in (float("nan"), float("inf"), -0.0)] == ["NaN", "Infinity", "-0.0"]
    assert zoned_utc(1795335977913) == "2026-11-22T08:26:17.913Z[UTC]"
    assert zoned_utc(1795335956020) == "2026-11-22T08:25:56.02Z[UTC]"
    assert zoned_utc(1000) == "1970-01-01T00:00:01Z[UTC]"
    assert zoned_utc(-1) == "1969-12-31T23:59:59.999Z[UTC]"
    assert [parse_int(t) for t in ("+1", "01", "-0", " 1", "1_0", "2147483648", "-2147483648", "")] == [
        1,
        1,
        0,
        None,
        None,
        None,
        -(1 << 31),
        None,
    ]
    assert uuid_from_string("GCqTB03oQPOzkXu4fmgOvg==") == "GCqTB03oQPOzkXu4fmgOvg"
    assert [uuid_from_string(t) for t in ("GCqTB03oQPOzkXu4fmgOv!", "abc", "A" * 25)] == [None, None, None]
    assert java_sorted(["b", "a", "B", "\U0001f600", "\uffff"]) == ["B", "a", "b", "\U0001f600", "\uffff"]


def test_release_lines():
    assert shell_release() is SHELL_RELEASES["4.4"]
    assert shell_release("4.3.1") is SHELL_RELEASES["4.3"]
    assert list(SHELL_RELEASES) == list(RELEASES)  # every line the replay follows, and only those
    with pytest.raises(UnsupportedRelease, match="kraft-replay follows Kafka 3.9 to 4.4"):
        shell_release("3.8")


@pytest.mark.parametrize(
    ("interactive", "line", "message"),
    [
        (False, "pwd", "invalid choice: 'pwd' (choose from 'cat', 'find', 'ls', 'tree')"),
        (False, "tr /x", "invalid choice: 'tr': did you mean 'tree'?"),
        (True, "c", "ambiguous command: c could match cat, cd"),
        (
            True,
            "foo",
            "invalid choice: 'foo' (choose from 'cat', 'cd', 'exit', 'find', 'help', 'history', 'ls', 'man', "
            "'pwd', 'tree')",
        ),
        (False, "cat", "too few arguments"),
        (False, "ls -l", "unrecognized arguments: '-l'"),
        (True, "cd a b", "unrecognized arguments: 'b'"),
        (False, "ls --help=1", "argument -h/--help: ignore implicit argument '1'"),
        (False, "-- ls", "unrecognized arguments: 'ls'"),
    ],
)
def test_the_parser_says_what_kafkas_says(interactive, line, message):
    specs = [s for s in KAFKA_SPECS if interactive or not s.shell_only]
    with pytest.raises(ArgumentError) as raised:
        parse(specs, line.split(" "))
    assert str(raised.value) == message


def test_the_help_is_laid_out_as_argparse4j_lays_it_out(monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")  # argparse4j: the terminal's width less 5
    text = commands_help(KAFKA_SPECS)
    assert text.splitlines()[:3] == [
        "usage:  {cat,cd,exit,find,help,history,ls,man,pwd,tree} ...",
        "",
        "positional arguments:",
    ]
    assert "    tree                 Show the contents  of  metadata  nodes  in  a tree\n" in text
    assert text.endswith("                         structure.\n")
    assert parse(KAFKA_SPECS, ["ls", "-h"]).help == (
        "usage:  ls [-h] [targets [targets ...]]\n\npositional arguments:\n"
        "  targets                The metadata node paths to list.\n\noptional arguments:\n"
        "  -h, --help             show this help message and exit\n"
    )


@pytest.mark.parametrize("fixture", KAFKA_FIXTURES, ids=kafka_fixture_name)
def test_tree_of_every_file_equals_the_text_kafkas_shell_printed(fixture):
    """Every segment and snapshot of every real-Kafka fixture: ``tree /image`` of our shell on the file alone equals,
    byte for byte, what Kafka's shell of the fixture's release printed (committed; tests/test_shell_kafka.py checks
    the text against Kafka now)."""
    texts = tree_texts(fixture)
    version = fixture.parent.name
    assert sorted(texts) == sorted(str(f.relative_to(fixture)) for f in shell_files(fixture))
    for name, expected in texts.items():
        (answer,) = our_answers(open_file(fixture / name, version), [TREE_COMMAND])
        assert answer.error is None
        if expected.unloaded is not None:  # no metadata record: Kafka's shell waits forever, ours shows the empty image
            assert answer.output == _empty_tree(version), name
            continue
        assert answer.output == expected.output, name


def _empty_tree(version: str) -> str:
    """``tree /image`` of the release's empty image."""
    from cli.shell.nodes import ShellNodePrinter
    from image.image import empty_image
    from image.node.nodes import MetadataImageNode
    from image.release import rules_for

    out = io.StringIO()
    image = empty_image(rules_for(version))
    MetadataImageNode(image, shell_release(version), lambda: "NONE").print(ShellNodePrinter(out))
    return out.getvalue()


def test_a_file_kafkas_loader_cannot_publish_shows_the_empty_image(tmp_path):
    """A segment that does not start at the log's beginning, alone: under 3.9 its image has the empty image's
    metadata.version (3.0-IV1), at which Kafka's loader cannot write the brokers' directories, so Kafka's shell
    never gets it and shows its empty image (tests/test_shell_kafka.py compares with Kafka 3.9.1's on such
    segments); under 4.x it has no metadata.version at all."""
    from generator import LOG_DIR_NAME, generate

    generate(7, 3, 4, 3, 300, tmp_path, snapshot_at=400, segment_bytes=32 * 1024)
    later = sorted((tmp_path / LOG_DIR_NAME).glob("*.log"))[1]
    for version, reason in (
        (
            "3.9",
            "its image cannot be written at metadata.version 3.0-IV1: the online log directories of one or more "
            "brokers; the directory assignment state of one or more replicas",
        ),
        ("4.4", "no metadata.version"),
    ):
        session = open_file(later, version)
        (answer,) = our_answers(session, [TREE_COMMAND])
        assert (answer.output, session.unpublished) == (_empty_tree(version), reason)
    (whole,) = our_answers(open_file(sorted((tmp_path / LOG_DIR_NAME).glob("*.log"))[0], "3.9"), [TREE_COMMAND])
    assert "BrokerRegistration(" in whole.output


def shell_in_process(*args: str) -> Result:
    """``kraft-replay shell`` in this process."""
    return CliRunner().invoke(app, ["shell", *args])


def fresh_shell(*args: str) -> subprocess.CompletedProcess[str]:
    """``kraft-replay shell`` in a fresh process."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-m", "cli.main", "shell", *args]
    return subprocess.run(command, capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)


def test_the_command_line():
    """One command after ``--``: what the shell prints, ``--json``, Kafka's exception (stderr, status 1), bad input
    (one line, status 1)."""
    tree = fresh_shell("--log", str(SEGMENT), "--", "tree", "/image")
    (expected,) = our_answers(open_file(SEGMENT), [TREE_COMMAND])
    assert (tree.returncode, tree.stdout, tree.stderr) == (0, expected.output, "")
    cat = fresh_shell("--log", str(SEGMENT), "--json", "--", "cat", "/image/provenance", "/nope")
    last = read_log(BASIC)[-1]
    assert cat.returncode == 1 and cat.stderr == "cat: /nope: No such file or directory.\n"
    assert json.loads(cat.stdout) == [
        {
            "path": "/image/provenance",
            "value": {"offset": last.offset, "epoch": last.epoch, "timestamp": last.timestamp},
        }
    ]
    # the rest in process (the same command line, its status and streams)
    find = shell_in_process("--log", str(SEGMENT), "--kafka-version", "4.1.1", "--", "find", "/image/features")
    assert find.exit_code == 1 and find.stdout.splitlines()[-1] == "/image/features/metadataVersion"
    assert find.stderr == (
        "Unexpected error: Expected zkMigrationState to be a valid child of /image/features, but it was not.\n"
    )
    at = shell_in_process("--log", str(BASIC), "--at-offset", "100", "--", "cat", "/image/topics/byName/alpha/id")
    assert (at.exit_code, at.stdout) == (0, "vD3bFG-OSKyD9tsWFoxPag\n")
    bad = shell_in_process("--log", str(SEGMENT), "--kafka-version", "3.8", "--", "ls")
    assert bad.exit_code == 1 and "Kafka 3.8 is not supported: kraft-replay follows Kafka 3.9 to 4.4" in bad.stderr
    json_alone = shell_in_process("--log", str(SEGMENT), "--json")
    assert json_alone.exit_code == 1 and "--json needs a command" in json_alone.stderr


def test_a_command_on_a_log_loads_no_spark_pandas_pyarrow_or_pydantic():
    """The tree of a log: decode and the reference engine (numpy only), as ``replay --log``."""
    code = f"""
import json, sys
import cli.main
try:
    cli.main.app(["shell", "--log", {str(BASIC)!r}, "--", "tree", "/image"])
except SystemExit as exit:
    assert not exit.code, exit.code
print(json.dumps(sorted(m for m in ("pyspark", "py4j", "pandas", "pyarrow", "pydantic", "rich") if m in sys.modules)))
"""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "BrokerRegistration(" in done.stdout and json.loads(done.stdout.splitlines()[-1]) == []


# ------------------------------------------------------------------------------------------------ through time


@pytest.fixture(scope="module")
def timeline():
    """The 4.1.1 ``basic`` fixture's log (topics created, deleted and re-created, configs, ACLs, quotas and SCRAM
    users added and removed), and the reference engine's image at every offset."""
    source = log_source(BASIC)
    first, last = source.bounds()
    records = read_log(BASIC)
    images = {o: replay_to(records, o, lenient=True) for o in range(first - 1, last + 1)}
    return source, images, first, last


def _session(source, offset):
    return Session(source, shell_release(), offset)


def _texts(images, path, offset):
    """Every file under ``path`` in the reference engine's image at ``offset``: its text by path."""
    from cli.shell.nodes import RootShellNode
    from image.node.nodes import MetadataImageNode

    release = shell_release()
    image = images[offset]
    node = RootShellNode(lambda: MetadataImageNode(image, release, lambda: "NONE"), release)
    for name in path.strip("/").split("/"):
        node = node.child(name) if node is not None and node.is_directory() else None
    return {p: text for p, (text, _) in leaves(node, path).items()}


def _changes(images, path, first, last):
    """The offsets where the files under ``path`` differ from the offset before."""
    return [o for o in range(first, last + 1) if _texts(images, path, o) != _texts(images, path, o - 1)]


def _diff_lines(before, after):
    """``-path: text`` / ``+path: text`` of two {path: text}, in path order (Java's), removals first."""
    lines = [(p.encode("utf-16-be"), 0, f"-{p}: {t}") for p, t in before.items() if after.get(p) != t]
    lines += [(p.encode("utf-16-be"), 1, f"+{p}: {t}") for p, t in after.items() if before.get(p) != t]
    return [line for _, _, line in sorted(lines)]


PATHS = (
    "/image/topics/byName/alpha/0",
    "/image/topics/byName/alpha",
    "/image/topics/byId",
    "/image/cluster/brokers/1",
    "/image/cluster",
    "/image/features",
    "/image/features/metadataVersion",
    "/image/configs/TOPIC:alpha",
    "/image/configs",
    "/image/producerIds",
    "/image/acls",
    "/image/scram/SCRAM-SHA-256",
    "/image/clientQuotas",
)


@pytest.mark.parametrize("path", PATHS)
def test_next_and_prev_stop_at_every_change_of_the_node(timeline, path):
    """``next`` from the start visits exactly the offsets where the node's files differ from the offset before (in
    the reference engine's image at every offset), and the tree after each step is the reference image there;
    ``prev`` from the end visits them backwards."""
    source, images, first, last = timeline
    changes = _changes(images, path, first, last)
    assert changes, path  # the fixture changes every node listed
    session = _session(source, first - 1)
    out = io.StringIO()
    visited = []
    while True:
        before = session.offset
        run(Context(session, out), ["next", path])
        if session.offset == before:
            break
        visited.append(session.offset)
        assert {p: t for p, (t, _) in leaves(session.node(path), path).items()} == _texts(images, path, session.offset)
    assert visited == changes
    assert out.getvalue().splitlines()[-1] == f"next: {path} does not change after offset {changes[-1]}"
    session = _session(source, last)
    backwards = []
    while True:
        before = session.offset
        run(Context(session, io.StringIO()), ["prev", path])
        if session.offset == before:
            break
        backwards.append(session.offset)
    assert backwards == changes[::-1]


@pytest.mark.parametrize("path", ["/image/topics/byName/alpha", "/image/acls", "/image/configs"])
def test_next_prints_what_changed_and_moves_the_whole_tree(timeline, path):
    """What ``next`` prints at a change is the reference images' files there against an offset earlier: from the
    rows ending and beginning there (a node whose files are each one version row's) or from the two trees."""
    source, images, first, last = timeline
    session = _session(source, first)
    out = io.StringIO()
    run(Context(session, out), ["next", path])
    point = session.offset
    lines = out.getvalue().splitlines()
    assert lines[0] == f"offset {point} ({_iso(images[point].provenance.last_contained_log_time_ms)})"
    assert lines[1:] == _diff_lines(_texts(images, path, point - 1), _texts(images, path, point)) and lines[1:]
    tree, fresh = io.StringIO(), io.StringIO()
    run(Context(session, tree), ["tree", "/image"])
    run(Context(_session(source, point), fresh), ["tree", "/image"])
    assert tree.getvalue() == fresh.getvalue()


def test_at_moves_the_tree_and_keeps_the_working_directory_while_it_exists(timeline):
    source, images, first, last = timeline
    session = _session(source, last)
    shell = Context(session, io.StringIO(), interactive=True)
    run(shell, ["cd", "/image/configs/TOPIC:alpha"])
    assert session.cwd == "/image/configs/TOPIC:alpha"
    gone = next(o for o in range(last, first, -1) if _texts(images, "/image/configs/TOPIC:alpha", o) == {})
    out = io.StringIO()
    run(Context(session, out), ["at", str(gone)])
    assert session.offset == gone and session.cwd == "/image/configs"
    assert out.getvalue().splitlines() == [
        f"offset {gone} ({_iso(images[gone].provenance.last_contained_log_time_ms)})",
        "(the working directory does not exist at this point: now /image/configs)",
    ]
    cat = io.StringIO()
    run(Context(session, cat), ["cat", "/image/provenance"])
    p = images[gone].provenance
    time = zoned_utc(p.last_contained_log_time_ms)
    assert cat.getvalue() == f"offset {p.last_contained_offset}, epoch {p.last_contained_epoch}, time {time}\n"
    run(Context(session, io.StringIO()), ["at", _iso(images[last].provenance.last_contained_log_time_ms)])
    assert session.offset == last
    bad = io.StringIO()
    run(Context(session, bad), ["at", str(last + 5)])
    assert bad.getvalue() == f"at: offset {last + 5} is beyond the end of the log (last offset {last})\n"
    assert session.offset == last


def _iso(ms: int) -> str:
    from image.temporal.times import iso_time

    return iso_time(ms)


def test_diff_lists_the_files_that_changed_between_two_points(timeline):
    source, images, first, last = timeline
    middle = (first + last) // 2
    for path in ("/image", "/image/topics", "/image/cluster/brokers", "/image/acls"):
        session = _session(source, last)
        out = io.StringIO()
        run(Context(session, out), ["diff", str(middle), path])
        lines = out.getvalue().splitlines()
        assert lines[0].startswith(f"--- offset {middle} (") and lines[1].startswith(f"+++ offset {last} (")
        expected = _diff_lines(_texts(images, path, middle), _texts(images, path, last))
        assert lines[2:] == expected and expected, path


def test_history_of_a_node(timeline):
    """``history PATH``: ``kraft-replay history`` for a partition, topic or broker; for another node, one version per
    change of its files, with those files."""
    from image.temporal.version_rows import Selection, Window, load
    from image.views.history import broker_history, partition_history

    source, images, first, last = timeline
    session = _session(source, last)

    def doc(*words: str):
        ctx = Context(session, io.StringIO(), json=True)
        run(ctx, list(words))
        return ctx.document

    window = load(source, Window(), Selection(parts=("brokers",), broker=1))
    assert doc("history", "/image/cluster/brokers/1") == broker_history(window, 1).model_dump(mode="json")
    window = load(source, Window(), Selection(parts=("partitions",), topic="alpha", partition=0))
    assert doc("history", "/image/topics/byName/alpha/0") == partition_history(window, "alpha", 0).model_dump(
        mode="json"
    )
    versions = doc("history", "/image/acls")["versions"]
    changes = _changes(images, "/image/acls", first, last)
    assert [v["fromOffset"] for v in versions] == changes
    assert [v["toOffset"] for v in versions] == [*changes[1:], None]
    assert all(v["fromTime"] == _iso(images[v["fromOffset"]].provenance.last_contained_log_time_ms) for v in versions)
    assert [v["events"] for v in versions] == [
        _diff_lines(_texts(images, "/image/acls", o - 1), _texts(images, "/image/acls", o)) for o in changes
    ]
    text = io.StringIO()
    run(Context(session, text), ["history", "/image/acls"])
    assert text.getvalue().splitlines()[0] == f"/image/acls: {len(changes)} versions"
    refused = io.StringIO()
    run(Context(session, refused), ["history", "/image"])
    assert (
        refused.getvalue() == "history: /image: every record changes the image's provenance; give a node below /image\n"
    )


def test_json_gives_the_nodes_as_data(timeline):
    source, images, first, last = timeline
    session = _session(source, last)
    image = images[last].to_json()

    def doc(*words: str):
        ctx = Context(session, io.StringIO(), json=True)
        run(ctx, list(words))
        assert ctx.problems == []
        return ctx.document

    partition = next(p for p in image["partitions"] if p["topic"] == "alpha" and p["partitionId"] == 0)
    assert doc("cat", "/image/topics/byName/alpha/0") == [{"path": "/image/topics/byName/alpha/0", "value": partition}]
    assert doc("cat", "/image/provenance")[0]["value"] == {k: image[k] for k in ("offset", "epoch", "timestamp")}
    assert doc("tree", "/image/cluster/brokers")[0]["tree"] == {str(b["brokerId"]): b for b in image["brokers"]}
    assert doc("ls", "/image/topics/byName")[0]["children"] == sorted(t["name"] for t in image["topics"])
    assert doc("find", "/image/producerIds") == ["/image/producerIds", "/image/producerIds/nextProducerId"]
    ctx = Context(session, io.StringIO(), json=True)
    run(ctx, ["cat", "/nope"])
    assert ctx.document == [] and ctx.problems == ["cat: /nope: No such file or directory."]
