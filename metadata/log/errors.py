"""The error family (:class:`KraftReplayError`: everything a user can cause), and the errors of the decoder and the
readers, each naming where the bad bytes are.

The family's base lives here, at the bottom layer, so that every package can derive its errors from it without
importing upwards: :class:`BadInput` and :class:`OffsetOutOfRange` (here), :class:`DecodeError` (here),
:class:`image.errors.ReplayError`, :class:`image.release.UnsupportedRelease`, :class:`metadata.lake.state.LakeError`
(and its :class:`~metadata.lake.state.LakeDamaged`, :class:`~metadata.lake.protocol.LakeBusy`),
:class:`metadata.lake.protocol.LakeConflict`, :class:`metadata.lake.ingest.IngestError`,
:class:`metadata.lake.ingest_spark.StagingError`, :class:`metadata.lake.spark.ResolutionError`. The command line
(:func:`cli.app.handles_errors`) catches the base; any other exception is a bug and keeps its traceback.
"""

from __future__ import annotations

from typing import ClassVar


class KraftReplayError(Exception):
    """Something a user can cause and fix (bad input, a damaged or busy lake, an unknown record, a point outside
    the log, an unsupported Kafka release, …), as opposed to a bug. The command line prints ``error:`` and
    :meth:`one_line` on stderr and exits with :attr:`exit_code`."""

    exit_code: ClassVar[int] = 1
    """The command line's exit status for this error."""

    def one_line(self) -> str:
        """The error as the command line prints it: its message on one line."""
        return " ".join((str(self).strip() or type(self).__name__).split())


class BadInput(KraftReplayError, ValueError):
    """A flag, argument, setting or input value a command cannot use (the message says which and why)."""


class OffsetOutOfRange(BadInput):
    """An offset, time or window that names no point of the log (before its start, beyond its end, or empty)."""


class Unavailable(KraftReplayError):
    """What the environment refused: an ``OSError`` (a missing file, a permission, a full disk) as the command line
    reports it."""


class DecodeError(KraftReplayError, ValueError):
    """Bytes that do not follow the format. ``where`` is filled in by the reader that knows the file."""

    def __init__(
        self, message: str, *, file: str | None = None, position: int | None = None, offset: int | None = None
    ) -> None:
        super().__init__(message)
        self.message = message
        self.file = file
        self.position = position
        self.offset = offset

    def located(
        self, *, file: str | None = None, position: int | None = None, offset: int | None = None
    ) -> "DecodeError":
        """A copy that also names the file / byte position / log offset (keeping any already known)."""
        return type(self)(
            self.message,
            file=self.file or file,
            position=self.position if self.position is not None else position,
            offset=self.offset if self.offset is not None else offset,
        )

    def __str__(self) -> str:
        where = []
        if self.file:
            where.append(self.file)
        if self.position is not None:
            where.append(f"byte {self.position}")
        if self.offset is not None:
            where.append(f"offset {self.offset}")
        return f"{': '.join([', '.join(where)] if where else [])}{': ' if where else ''}{self.message}"


class CorruptBatchError(DecodeError):
    """A batch whose CRC, magic or framing is wrong."""


class UnknownRecordError(DecodeError):
    """A metadata record whose apiKey (or version) is not in the schema."""
