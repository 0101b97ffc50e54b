"""The flags naming offsets and times, one meaning each in every command (:mod:`image.temporal.window`): an image
at a point (``--at-*``), a window of records ``[--from-*, --to-*]``, a delta ``(--after-*, --to-*]``."""

from __future__ import annotations

from typing import Annotated

import typer

_TIME = "ISO-8601 (2026-01-30T17:05:00Z) or epoch ms: the last offset of the last batch appended at or before it"

AtOffset = Annotated[
    int | None, typer.Option("--at-offset", help="The image after this offset (-1: empty; default: the latest).")
]
AtTime = Annotated[str | None, typer.Option("--at-time", help=f"The image at this time: {_TIME}.")]
FromOffset = Annotated[
    int | None, typer.Option("--from-offset", help="First record of the window, inclusive (default: the log's first).")
]
FromTime = Annotated[str | None, typer.Option("--from-time", help=f"First record of the window at this time: {_TIME}.")]
AfterOffset = Annotated[
    int | None,
    typer.Option(
        "--after-offset",
        help="The image the delta starts from: the delta (A, B] holds the records after this offset (-1: empty).",
    ),
]
AfterTime = Annotated[str | None, typer.Option("--after-time", help=f"The image the delta starts from: {_TIME}.")]
ToOffset = Annotated[
    int | None,
    typer.Option("--to-offset", help="Last record, inclusive: the image after it (default: the end of the log)."),
]
ToTime = Annotated[str | None, typer.Option("--to-time", help=f"Last record at this time: {_TIME}.")]
