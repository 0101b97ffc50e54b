"""``shell``: Kafka's metadata shell over a lake or a log, at any point in time (a command of :data:`cli.app.app`;
the shell itself is the ``shell`` package)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from cli.app import JsonOpt, KafkaVersionOpt, LogOpt, ReadLakeOpt, app, handles_errors, source
from cli.window import AtOffset, AtTime
from metadata.log.errors import BadInput

if TYPE_CHECKING:
    from cli.shell.session import Session


@app.command()
@handles_errors
def shell(
    command: Annotated[
        list[str] | None,
        typer.Argument(help="Run this one command and exit (after --), e.g. -- tree /image. Without: interactive."),
    ] = None,
    lake_location: ReadLakeOpt = None,
    log: LogOpt = None,
    at_offset: AtOffset = None,
    at_time: AtTime = None,
    kafka_version: KafkaVersionOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Kafka's metadata shell (ls, cd, cat, tree, find, …) at any point of the log, and through time (at, next,
    prev, diff, history), shown as the shell of the Kafka release the replay follows. One file without an offset is
    read as kafka-metadata-shell --snapshot reads it."""
    if not command:
        from cli.shell.ctrl_c import held_for_the_prompt

        if as_json:
            raise BadInput("--json needs a command (after --)")
        with held_for_the_prompt():  # before the imports and the loading start threads
            from cli.shell.interactive import Shell

            session = _session(lake_location, log, at_offset, at_time, kafka_version)
            where = lake_location if lake_location is not None else str(log)
            Shell(session).run(
                f"[ kraft-replay shell: {where}, Kafka {session.release.line}; help lists the commands ]"
            )
        return
    from cli.shell.commands import Context, run
    from image.node.java import JavaException

    session = _session(lake_location, log, at_offset, at_time, kafka_version)
    ctx = Context(session, sys.stdout, json=as_json)
    try:
        run(ctx, command)
    except JavaException as e:  # as Kafka's shell: what was printed stays, the error on stderr, status 1
        sys.stdout.flush()
        print(f"Unexpected error: {e}", file=sys.stderr)
        raise typer.Exit(1) from None
    finally:
        if session.unpublished is not None:
            print(f"note: Kafka's shell shows the empty image of this file ({session.unpublished})", file=sys.stderr)
    if as_json:
        for problem in ctx.problems:
            print(problem, file=sys.stderr)
        sys.stdout.write(json.dumps(ctx.document, indent=2) + "\n")
        if ctx.problems:
            raise typer.Exit(1)


def _session(
    lake_location: str | None, log: Path | None, at_offset: int | None, at_time: str | None, kafka_version: str | None
) -> Session:
    """The shell's session at the point named (one file without a point: read as Kafka's shell reads it)."""
    from cli.shell.session import Session, kafka_shell_source
    from image.node.releases import shell_release
    from image.release import rules_for
    from image.temporal.window import image_offset

    kafka_file = log is not None and Path(log).is_file() and at_offset is None and at_time is None
    if kafka_file:
        store, offset = kafka_shell_source(str(log), rules_for(kafka_version))
    else:
        store = source(lake_location, log, kafka_version)
        offset = image_offset(store, at_offset, at_time)
    return Session(store, shell_release(store.rules.release), offset, kafka_file=kafka_file)
