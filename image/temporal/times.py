"""Log times: epoch milliseconds ↔ ISO-8601 UTC (what ``--from-time`` / ``--to-time`` / ``--at-time`` accept
and what the commands print). Nothing heavier than ``datetime`` to import (the CLI's renderer uses it)."""

from __future__ import annotations

import datetime as dt

from metadata.log.errors import BadInput

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def parse_time(value: str | int) -> int:
    """Epoch milliseconds of ``value``: an int / digit string (epoch ms) or an ISO-8601 time (``Z`` or an
    offset; a naive time is UTC)."""
    if isinstance(value, int) or (isinstance(value, str) and value.strip().lstrip("-").isdigit()):
        return int(value)
    try:
        moment = dt.datetime.fromisoformat(value.strip().replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise BadInput(f"invalid time {value!r}: expected ISO-8601 (2025-01-01T00:10:00Z) or epoch ms") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    return (moment - _EPOCH) // dt.timedelta(milliseconds=1)


def iso_time(ms: int) -> str:
    """Epoch milliseconds as ISO-8601 UTC with milliseconds (``2026-01-30T17:05:00.123Z``)."""
    return (_EPOCH + dt.timedelta(milliseconds=ms)).isoformat(timespec="milliseconds").replace("+00:00", "Z")
