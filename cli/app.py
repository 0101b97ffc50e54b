"""Shared pieces of the ``kraft-replay`` command line: the typer app, options, error handling, output."""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from pydantic import BaseModel
from rich.console import Console
from rich.table import Table

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Replay Apache Kafka KRaft metadata logs: ingest into Delta, replay, diff, per-broker changes.")
out = Console()
err = Console(stderr=True)

_state = {"debug": False, "master": None}

F = TypeVar("F", bound=Callable[..., Any])

LakeOpt = Annotated[str, typer.Option("--lake", help="Lake location (directory or any URI Spark writes).")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Machine-readable JSON output.")]


def handles_errors(fn: F) -> F:
    """Bad input → one clear line on stderr and exit code 1 (a traceback only with --debug)."""
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except typer.Exit:
            raise
        except Exception as exc:  # noqa: BLE001 — the CLI boundary
            if _state["debug"]:
                raise
            err.print(f"[bold red]error:[/] {_one_line(exc)}", highlight=False, markup=True, soft_wrap=True)
            raise typer.Exit(1) from None
    return wrapper  # type: ignore[return-value]


def _one_line(exc: Exception) -> str:
    if type(exc).__module__.startswith(("py4j", "pyspark", "delta")):  # a damaged lake: which table or file, what to do
        from metadata.lake import explain
        if (line := explain(exc)) is not None:
            return line
    text = str(exc).strip() or type(exc).__name__
    if "Py4JJavaError" in type(exc).__name__ or "AnalysisException" in type(exc).__name__:
        text = text.splitlines()[0]
    return " ".join(text.split())


@app.callback()
def main(debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks.")] = False,
         master: Annotated[str | None, typer.Option(
             "--master", help="Spark master (default local[*], or KRAFT_REPLAY_MASTER); sc://host:port for "
                              "Spark Connect.")] = None) -> None:
    _state["debug"] = debug
    _state["master"] = master


def spark():
    import logging
    logging.getLogger("DataFrameQueryContextLogger").setLevel(logging.CRITICAL)  # errors are printed once, below
    from metadata.spark import get_spark
    return get_spark(_state["master"])


def lake(location: str):
    from metadata.lake import Lake
    return Lake(location, spark())


def print_json(value: Any) -> None:
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json")
    sys.stdout.write(json.dumps(value, indent=2, sort_keys=False) + "\n")


def kv_table(title: str, rows: list[tuple[str, Any]]) -> Table:
    table = Table(title=title, show_header=False, title_justify="left")
    table.add_column(style="bold")
    table.add_column()
    for k, v in rows:
        table.add_row(k, "" if v is None else str(v))
    return table


def counts_table(title: str, counts: dict[str, int], what: str = "type") -> Table:
    table = Table(title=title, title_justify="left")
    table.add_column(what)
    table.add_column("count", justify="right")
    for k, v in counts.items():
        table.add_row(k, f"{v:,}")
    return table
