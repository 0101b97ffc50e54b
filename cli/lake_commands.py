"""``check`` and ``optimize`` (the lake itself), and the rounds of ``ingest --follow`` (commands of
:data:`cli.app.app`)."""

from __future__ import annotations

import datetime as dt
import json
import signal
import sys
import threading
from typing import TYPE_CHECKING, Annotated, Any

import typer

from cli.app import EngineOpt, JsonOpt, LakeOpt, WaitOpt, app, err, handles_errors, lake, out, print_json

if TYPE_CHECKING:
    from metadata.lake.ingest import IngestReport


@app.command()
@handles_errors
def check(
    lake_location: LakeOpt,
    only: Annotated[
        list[str] | None,
        typer.Option(
            "--only", help="Run only these checks (tables, ingests, offsets, typed, snapshots, unknown, versions)."
        ),
    ] = None,
    engine: EngineOpt = "auto",
    as_json: JsonOpt = False,
) -> None:
    """Verify a lake: every committed table readable (every file), the ingest chain linear, offsets
    contiguous, typed tables consistent with records, snapshots whole, records kept raw by --skip-unknown listed,
    the temporal image's version chains sound and equal to a replay at the log's start, middle and end. Exit
    code 1 if anything is wrong."""
    import image.temporal.lake_check  # noqa: F401 — registers the temporal image's check
    from metadata.lake.check import check_lake

    report = check_lake(lake(lake_location, engine), only)
    if as_json:
        print_json(report)
    else:
        from rich.table import Table

        table = Table(
            title=f"check of {report.lake} (ingest {report.seq}, high-water mark {report.high_water_mark})",
            title_justify="left",
        )
        for c in ("check", "result", "findings"):
            table.add_column(c, overflow="fold")
        for r in report.checks:
            findings = [*r.problems, *(f"note: {n}" for n in r.notes)]
            table.add_row(r.name, "ok" if r.ok else "[red]PROBLEMS[/]", "\n".join(findings))
        out.print(table)
    if not report.ok:
        raise typer.Exit(1)


@app.command()
@handles_errors
def optimize(
    lake_location: LakeOpt,
    tables: Annotated[list[str] | None, typer.Option("--table", help="Table(s) to compact (default all).")] = None,
    wait: WaitOpt = 600.0,
    engine: EngineOpt = "auto",
    as_json: JsonOpt = False,
) -> None:
    """Compact the lake's tables (Delta OPTIMIZE) as one commit; readers of earlier versions are unaffected."""
    target = lake(lake_location, engine)
    before = target.state()
    from image.temporal.build import COMPACTORS

    state = target.optimize(tables or None, wait=wait, compactors=COMPACTORS)
    changed = {n: (before.versions.get(n), v) for n, v in state.versions.items() if before.versions.get(n) != v}
    if as_json:
        print_json({"lake": target.uri, "seq": state.seq, "compacted": sorted(changed)})
        return
    from cli.render import kv_table

    out.print(
        kv_table(
            f"optimized {target.uri} (ingest {state.seq})",
            [(n, f"version {a} → {b}") for n, (a, b) in sorted(changed.items())] or [("tables", "nothing to compact")],
        )
    )


def waiting(lease: Any) -> None:
    """Told once when an ingest waits for another writer's lease."""
    err.print(
        f"waiting for {lease.holder} (run {lease.owner}) to finish writing the lake "
        f"(its lease runs until {lease.expires_at:%H:%M:%S} UTC) …",
        highlight=False,
    )


def _round_line(n: int, report: IngestReport | None, error: Exception | None) -> str:
    from cli.app import user_error

    when = dt.datetime.now().strftime("%H:%M:%S")
    if error is not None:
        known = user_error(error)
        why = known.one_line() if known is not None else f"{type(error).__name__}: {error}"
        return f"{when} round {n}: failed: {why}"
    assert report is not None
    torn = [w for w in report.warnings if "truncated last batch" in w]
    what = (
        f"+{report.records_added:,} records (offsets {report.first_offset}…{report.last_offset}), ingest {report.seq}"
        if report.seq is not None
        else "nothing new"
    )
    snaps = f", snapshots {', '.join(report.snapshots)}" if report.snapshots else ""
    tail = f"; torn tail: {torn[0]}" if torn else ""
    return f"{when} round {n}: {what}{snaps}, high-water mark {report.high_water_mark}{tail}"


def follow_ingest(paths: list[str], location: str, interval: float, as_json: bool, **options: Any) -> None:
    """``ingest --follow``: a round every ``interval`` seconds, one line each, until SIGINT/SIGTERM; the first
    signal lets the current round finish, a second abandons it (nothing of it becomes visible)."""
    from image.temporal.build import COMPACTORS, maintain_versions
    from metadata.lake.ingest import follow

    stop = threading.Event()

    def on_signal(signum: int, frame: Any) -> None:
        if stop.is_set():
            raise KeyboardInterrupt
        stop.set()
        err.print(f"{signal.Signals(signum).name}: stopping after this round (again to abandon it)", highlight=False)

    def on_round(n: int, report: IngestReport | None, error: Exception | None) -> None:
        if as_json:
            doc = {
                "round": n,
                "error": None if error is None else str(error),
                "report": None if report is None else report.model_dump(mode="json"),
            }
            sys.stdout.write(json.dumps(doc) + "\n")
            sys.stdout.flush()
        else:
            out.print(_round_line(n, report, error), highlight=False, soft_wrap=True)

    handlers = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        rounds = follow(
            paths,
            location,
            interval=interval,
            stop=stop,
            on_round=on_round,
            progress=False,
            on_wait=waiting,
            derive=maintain_versions,
            compactors=COMPACTORS,
            **options,
        )
    except KeyboardInterrupt:
        err.print("abandoned the round in progress; the lake shows the last committed ingest", highlight=False)
        raise typer.Exit(130) from None
    finally:
        for s, h in handlers.items():
            signal.signal(s, h)
    err.print(f"stopped after {rounds} rounds", highlight=False)
