"""Shared pieces of the ``kraft-replay`` command line: the typer app, options, error handling, output."""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

from metadata.lake.state import LOCAL_MAX_BYTES
from metadata.log.errors import BadInput, KraftReplayError, Unavailable

if TYPE_CHECKING:
    from rich.console import Console

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="Replay Apache Kafka KRaft metadata logs: ingest into Delta, replay, diff, per-broker changes.",
)


class _LazyConsole:
    """A rich ``Console`` made when first used: rich is imported only by output a person reads (a ``--json``
    answer prints through :func:`print_json` and never loads it)."""

    def __init__(self, **options: Any) -> None:
        self._options = options
        self._console: Console | None = None

    def __getattr__(self, name: str) -> Any:
        if self._console is None:
            from rich.console import Console

            self._console = Console(**self._options)
        return getattr(self._console, name)


out: Console = _LazyConsole()  # type: ignore[assignment]
err: Console = _LazyConsole(stderr=True)  # type: ignore[assignment]

DEFAULT_LIMIT = 10
"""Rows shown per list unless ``--limit N`` or ``--all`` says otherwise."""

_state: dict[str, Any] = {"debug": False, "master": None, "reader": "auto"}

F = TypeVar("F", bound=Callable[..., Any])

LakeOpt = Annotated[str, typer.Option("--lake", help="Lake location (directory or any URI Spark writes).")]
ReadLakeOpt = Annotated[str | None, typer.Option("--lake", help="Lake to read (a directory, or any URI Spark reads).")]
LogOpt = Annotated[
    Path | None,
    typer.Option(
        "--log",
        help="Instead of a lake: a metadata log directory, segment or "
        "snapshot (or kafka-dump-log text), read in process.",
    ),
]
KafkaVersionOpt = Annotated[
    str | None,
    typer.Option(
        "--kafka-version",
        metavar="X.Y",
        help="Replay as brokers of this Kafka release line do (3.9 to 4.4; default the newest). A lake records the "
        "release of its first ingest and follows it.",
    ),
]
SkipUnknownOpt = Annotated[
    bool,
    typer.Option(
        "--skip-unknown",
        help="With --log: keep records of types or versions newer than kraft-replay's schema (a newer Kafka) "
        "as raw bytes, listed and not replayed, instead of stopping (a lake holds what its ingest kept).",
    ),
]
WaitOpt = Annotated[
    float, typer.Option("--wait", help="Seconds to wait for another writer of the lake (its lease) before giving up.")
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Machine-readable JSON output.")]
EngineOpt = Annotated[
    str,
    typer.Option(
        "--engine",
        help="Where to write: auto (in process for a lake on a local path whose input fits one machine, at most "
        f"{LOCAL_MAX_BYTES / (1 << 20):g} MiB to decode (KRAFT_REPLAY_LOCAL_MAX_BYTES), unless a Spark master is "
        "named; or KRAFT_REPLAY_ENGINE), local (in process, no JVM) or spark.",
    ),
]
LimitOpt = Annotated[
    int,
    typer.Option(
        "--limit", min=0, help="Rows shown per list (the heading counts them all; --json is always complete)."
    ),
]
AllOpt = Annotated[bool, typer.Option("--all", help="Show every row (overrides --limit).")]


def shown_rows(limit: int, show_all: bool) -> int | None:
    """The rows per list a command shows: ``--limit`` or, with ``--all``, every row (None)."""
    return None if show_all else limit


def handles_errors(fn: F) -> F:
    """What a user can cause → ``error:`` and one clear line on stderr, and the error's exit code (a traceback only
    with --debug): a :class:`~metadata.log.errors.KraftReplayError`, an ``OSError`` of the environment (a missing
    file, a full disk), or a failure met in a Spark job that reveals a damaged lake
    (:func:`metadata.lake.protocol.damage_of`). Any other exception is a bug: it propagates with its traceback."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except typer.Exit:
            raise
        except Exception as exc:  # noqa: BLE001 — the CLI boundary: what is not the user's re-raised below
            error = user_error(exc)
            if error is None or _state["debug"]:
                raise
            err.print(f"[bold red]error:[/] {error.one_line()}", highlight=False, markup=True, soft_wrap=True)
            raise typer.Exit(error.exit_code) from None

    return wrapper  # type: ignore[return-value]


def user_error(exc: Exception) -> KraftReplayError | None:
    """``exc`` as an error of the family (what the command line prints), or None for a bug."""
    if isinstance(exc, KraftReplayError):
        return exc
    if isinstance(exc, OSError):
        return Unavailable(str(exc))
    from metadata.lake.protocol import damage_of

    return damage_of(exc)


@app.callback()
def main(
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks.")] = False,
    master: Annotated[
        str | None,
        typer.Option(
            "--master",
            help="Spark master (default local[*], or KRAFT_REPLAY_MASTER); sc://host:port for "
            "Spark Connect. Naming one makes reads use Spark.",
        ),
    ] = None,
    reader: Annotated[
        str,
        typer.Option(
            "--reader",
            help="How read commands read a lake: auto (in process for a local lake unless a Spark "
            "master is named), arrow (in process, no JVM) or spark (or KRAFT_REPLAY_READER).",
        ),
    ] = "auto",
) -> None:
    _state["debug"] = debug
    _state["master"] = master
    _state["reader"] = reader


def spark():
    import logging

    logging.getLogger("DataFrameQueryContextLogger").setLevel(logging.CRITICAL)  # errors are printed once, below
    from metadata.lake.spark import get_spark

    return get_spark(_state["master"])


def writes_on_spark(location: str, engine: str = "auto") -> bool:
    """Whether a command writing or checking the lake at ``location`` runs on Spark
    (:func:`metadata.lake.state.choose_engine`)."""
    from metadata.lake.state import choose_engine

    return choose_engine(location, engine, _state["master"]) == "spark"


def lake(location: str, engine: str = "auto"):
    """The lake at ``location`` for a command that writes or checks it: in process, or on Spark."""
    from metadata.lake.protocol import Lake

    return Lake(location, spark() if writes_on_spark(location, engine) else None)


def source(lake_location: str | None, log: Path | None, kafka_version: str | None = None, skip_unknown: bool = False):
    """Where a read command's answers come from (:func:`image.temporal.sources.open_source`), replayed under the
    rules of Kafka ``kafka_version``; ``skip_unknown``: the ``--skip-unknown`` of a ``--log`` read."""
    from image.temporal.sources import choose_reader, open_source

    if skip_unknown and log is None:
        raise BadInput("--skip-unknown reads --log; a lake holds the records its ingest kept (ingest --skip-unknown)")

    reader = choose_reader(lake_location, _state["reader"], _state["master"]) if lake_location is not None else "arrow"
    if reader == "arrow":  # read in process
        from metadata.lake.state import refuse_pandas

        refuse_pandas()
    return open_source(
        lake=lake_location,
        log=str(log) if log is not None else None,
        reader=reader,
        master=_state["master"],
        spark=spark,
        kafka_version=kafka_version,
        skip_unknown=skip_unknown,
    )


def print_json(value: Any) -> None:
    """``value`` (a JSON document or a pydantic model) as indented JSON on stdout."""
    if hasattr(value, "model_dump"):  # a pydantic model (pydantic is not imported until a command needs it)
        value = value.model_dump(mode="json")
    sys.stdout.write(json.dumps(value, indent=2, sort_keys=False) + "\n")
