"""The ``kraft-replay`` command line: parses, calls the library, prints.

Commands live beside their subject: ingest / log-info / dump / generate / demo here, replay /
show / diff in :mod:`cli.image_commands`, changes / apply / leader-and-isr / zk-replay in
:mod:`cli.replica_commands`, history / timeline / report in :mod:`cli.history_commands`.
"""

from __future__ import annotations

import gc
import json
import os
import re
import sys
from pathlib import Path
from typing import Annotated

import typer

from cli.app import (
    DEFAULT_LIMIT,
    AllOpt,
    EngineOpt,
    JsonOpt,
    KafkaVersionOpt,
    LakeOpt,
    LimitOpt,
    LogOpt,
    ReadLakeOpt,
    SkipUnknownOpt,
    WaitOpt,
    app,
    err,
    handles_errors,
    out,
    print_json,
    shown_rows,
    source,
    spark,
    writes_on_spark,
)
from cli.window import FromOffset, ToOffset
from metadata.lake.state import GC_THRESHOLDS
from metadata.log.errors import BadInput


@app.command()
@handles_errors
def ingest(
    paths: Annotated[list[Path], typer.Argument(help="Log dirs, segments, snapshots or kafka-dump-log texts.")],
    lake_location: LakeOpt,
    allow_gaps: Annotated[bool, typer.Option(help="Skip corrupt batches (reported) instead of stopping.")] = False,
    skip_unknown: Annotated[bool, typer.Option(help="Keep unknown record types as raw bytes.")] = False,
    follow: Annotated[bool, typer.Option(help="Keep ingesting (a live log dir) until SIGINT/SIGTERM.")] = False,
    interval: Annotated[float, typer.Option(help="Seconds between --follow rounds.")] = 10.0,
    kafka_version: KafkaVersionOpt = None,
    wait: WaitOpt = 600.0,
    engine: EngineOpt = "auto",
    as_json: JsonOpt = False,
) -> None:
    """Ingest metadata log segments, snapshots and dump-log texts into the lake (idempotent): in process for a
    lake on a local path whose input fits one machine, else on Spark."""
    session = spark() if writes_on_spark(lake_location, engine) else None
    engine = "spark" if session is not None else engine
    if session is None:  # before the imports (pyarrow.dataset's); an input beyond the threshold loads it with Spark
        from metadata.lake.state import refuse_pandas

        refuse_pandas()
    from cli.lake_commands import follow_ingest, waiting
    from image.release import rules_for
    from image.temporal.ingest import ingest as run
    from metadata.log.readers import ReadOptions

    options = ReadOptions(allow_gaps=allow_gaps, skip_unknown=skip_unknown)
    release = None if kafka_version is None else rules_for(kafka_version).release
    if follow:
        follow_ingest(
            [str(p) for p in paths],
            lake_location,
            interval,
            as_json,
            options=options,
            wait=wait,
            kafka_version=release,
            engine=engine,
            spark=session,
        )
        return
    report = run(
        [str(p) for p in paths],
        lake_location,
        engine=engine,
        spark=session,
        options=options,
        progress=not as_json,
        wait=wait,
        on_wait=waiting,
        kafka_version=release,
    )
    for w in report.warnings:
        err.print(f"[yellow]warning:[/] {w}", highlight=False)
    for s in report.skipped:
        err.print(f"[red]skipped:[/] {s}", highlight=False)
    if as_json:
        print_json(report)
        return
    from cli import render

    out.print(render.ingest_report(report, DEFAULT_LIMIT))


@app.command("log-info")
@handles_errors
def log_info(
    lake_location: ReadLakeOpt = None,
    log: LogOpt = None,
    kafka_version: KafkaVersionOpt = None,
    skip_unknown: SkipUnknownOpt = False,
    limit: LimitOpt = DEFAULT_LIMIT,
    show_all: AllOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Summary of the stored log: offsets, times, counts by type, snapshots."""
    info = source(lake_location, log, kafka_version, skip_unknown).log_info()
    if as_json:
        print_json(info)
        return
    from cli import render

    out.print(render.log_info(info, shown_rows(limit, show_all)))


@app.command()
@handles_errors
def dump(
    lake_location: ReadLakeOpt = None,
    log: LogOpt = None,
    kafka_version: KafkaVersionOpt = None,
    skip_unknown: SkipUnknownOpt = False,
    from_offset: FromOffset = None,
    to_offset: ToOffset = None,
    types: Annotated[
        list[str] | None, typer.Option("--type", help="Record type(s), e.g. PARTITION_CHANGE_RECORD.")
    ] = None,
    control: Annotated[bool, typer.Option(help="Include control records.")] = False,
    snapshot: Annotated[
        str | None,
        typer.Option(
            help="The records of a stored snapshot instead, offsets being positions in it: END-EPOCH as log-info "
            "lists it or its file name (0-0: Kafka's bootstrap snapshot; bootstrap.checkpoint).",
        ),
    ] = None,
    limit: LimitOpt = DEFAULT_LIMIT,
    show_all: AllOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """List records with their decoded payloads (one JSON object per line with --json)."""
    read = source(lake_location, log, kafka_version, skip_unknown)
    if snapshot is None:
        rows = read.dump(from_offset, to_offset, types or (), control)
    else:
        from image.temporal.reads import snapshot_dump

        rows = snapshot_dump(read, _snapshot_id(snapshot), from_offset, to_offset, types or (), control)
    if as_json:
        for r in rows:
            sys.stdout.write(json.dumps(r.model_dump(), separators=(",", ":")) + "\n")
        return
    from cli import render

    out.print(render.dump(rows, shown_rows(limit, show_all)))


def _snapshot_id(text: str) -> tuple[int, int]:
    """(end offset, epoch) of a snapshot named as ``dump --snapshot`` takes it."""
    from metadata.log.readers import BOOTSTRAP_NAME
    from metadata.log.records import BOOTSTRAP_CHECKPOINT_ID

    if text == BOOTSTRAP_NAME:
        return BOOTSTRAP_CHECKPOINT_ID
    found = re.fullmatch(r"(\d+)-(-?\d+)(?:\.checkpoint)?", text)
    if found is None:
        raise BadInput(f"--snapshot {text!r}: expected END-EPOCH (e.g. 0-0), a snapshot file name or {BOOTSTRAP_NAME}")
    return int(found.group(1)), int(found.group(2))


@app.command()
@handles_errors
def generate(
    out_dir: Annotated[Path, typer.Option("--out", help="Directory to write (gets __cluster_metadata-0/).")],
    seed: Annotated[int, typer.Option(help="RNG seed; same arguments → identical bytes.")] = 7,
    brokers: Annotated[int, typer.Option(help="Brokers.")] = 5,
    topics: Annotated[int, typer.Option(help="Topics created at start.")] = 20,
    partitions: Annotated[int, typer.Option(help="Partitions per topic.")] = 6,
    churn: Annotated[int, typer.Option(help="Churn events after the initial layout.")] = 2000,
    rf: Annotated[int, typer.Option("--rf", help="Replication factor.")] = 3,
    snapshot_at: Annotated[int | None, typer.Option(help="Also write a snapshot at about this offset.")] = None,
    noop_interval_ms: Annotated[int, typer.Option(help="NoOp interval of the idle controller.")] = 500,
    compression: Annotated[str, typer.Option(help="none, gzip, snappy, lz4 or zstd.")] = "none",
    segment_bytes: Annotated[int, typer.Option(help="Roll segments at about this size.")] = 1 << 20,
    as_json: JsonOpt = False,
) -> None:
    """Write a deterministic, real-format metadata log of a simulated cluster."""
    from generator import generate as run

    report = run(
        seed,
        brokers,
        topics,
        partitions,
        churn,
        out_dir,
        replication_factor=rf,
        snapshot_at=snapshot_at,
        noop_interval_ms=noop_interval_ms,
        compression=compression,
        segment_bytes=segment_bytes,
    )
    if as_json:
        print_json(report)
        return
    from cli import render

    out.print(render.generated(str(out_dir), report))


# the command modules register their commands in this order, which is the order --help lists them in
# isort: off
import cli.image_commands  # noqa: E402 — registers replay, show, diff (listed after the above)
import cli.replica_commands  # noqa: E402 — registers changes, apply, leader-and-isr, zk-replay
import cli.history_commands  # noqa: E402 — registers history, timeline, report
import cli.lake_commands  # noqa: E402 — registers check, optimize
import cli.shell_command  # noqa: E402 — registers shell
# isort: on

SAMPLE = Path(__file__).resolve().parent.parent / "data" / "sample"


@app.command()
@handles_errors
def demo(
    lake_location: Annotated[str, typer.Option("--lake", help="Lake to create.")] = "./lake",
    sample: Annotated[Path, typer.Option(help="Log to use.")] = SAMPLE,
) -> None:
    """The main job on the embedded sample: ingest, summary, records, a replayed image, a diff, and
    what every broker (and, step by step, broker 1) does with the changes."""
    if not sample.exists():
        raise FileNotFoundError(f"{sample}: sample log not found (run from a source checkout or pass --sample)")
    out.rule(f"kraft-replay ingest {sample} --lake {lake_location}")
    ingest([sample], lake_location)
    out.rule(f"kraft-replay log-info --lake {lake_location}")
    log_info(lake_location)
    out.rule(f"kraft-replay dump --lake {lake_location} --from-offset 3 --to-offset 12")
    dump(lake_location, from_offset=3, to_offset=12)
    middle = 5000
    out.rule(f"kraft-replay replay --lake {lake_location} --at-offset {middle}")
    cli.image_commands.replay(lake_location, at_offset=middle)
    out.rule(f"kraft-replay diff --lake {lake_location} --after-offset {middle}")
    cli.image_commands.diff_command(lake_location, after_offset=middle)
    out.rule(f"kraft-replay changes --lake {lake_location} --after-offset {middle}")
    cli.replica_commands.changes(lake_location, after_offset=middle)
    out.rule(f"kraft-replay apply --lake {lake_location} --after-offset {middle} --to-offset {middle + 200} --broker 1")
    cli.replica_commands.apply_command(
        broker=1, lake_location=lake_location, after_offset=middle, to_offset=middle + 200
    )


APP_OPTIONS_WITH_VALUE = ("--master", "--reader")
"""The options of the app itself (before the command) that take a value."""


def command_named(args: list[str]) -> str | None:
    """The command a command line names: its first word that is not an option of the app (or their value)."""
    words = iter(args)
    for word in words:
        if word in APP_OPTIONS_WITH_VALUE:
            next(words, None)
        elif not word.startswith("-"):
            return word
    return None


def for_command(name: str | None) -> typer.Typer:
    """The app with only the command (or command group) ``name`` when it has one: typer builds a command of
    every registered function, its options from the signature, at every start (≈ 50 ms for the 17 commands;
    one takes ≈ 3 ms). The whole app for anything else (``--help``, an unknown word)."""
    import copy

    from typer.main import get_command_name

    commands = [c for c in app.registered_commands if (c.name or get_command_name(c.callback.__name__)) == name]
    groups = [g for g in app.registered_groups if g.name == name]
    if not commands and not groups:
        return app
    narrowed = copy.copy(app)
    narrowed.registered_commands, narrowed.registered_groups = commands, groups
    return narrowed


def main() -> None:
    """The ``kraft-replay`` process (console script and ``python -m cli.main``): the app (only the command the
    line names is built: :func:`for_command`), with the cyclic garbage collector tuned for it, ended without
    the interpreter's teardown when no Spark ran.

    A command decodes and replays many small objects that form no reference cycles; the collector's frequent
    passes over them are ≈ 8 % of ``replay --log`` (BENCHMARKS.md): young objects are collected every 50,000
    allocations instead of 700, and what the imports made is left out of every collection. A program that
    imports the app keeps its own collector settings.

    At exit the interpreter tears down every module (pyarrow, numpy, delta-rs: ≈ 50 ms of a read that takes
    about half a second). A read in process has nothing left to do once its output is flushed (its files are
    closed, a ``--log`` read's decoding child is reaped), so the process ends at once (``os._exit``) with the
    command's status, 120 when its output cannot be flushed (as Python's own exit). A process that started
    Spark exits normally: its session is stopped at exit."""
    gc.set_threshold(*GC_THRESHOLDS)
    gc.freeze()
    try:
        for_command(command_named(sys.argv[1:]))()
    except SystemExit as exit:
        if "pyspark" in sys.modules or not isinstance(exit.code, int | None):
            raise
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except OSError:
            os._exit(120)
        os._exit(exit.code or 0)


if __name__ == "__main__":  # python -m cli.main: after every command module registered its commands
    main()
