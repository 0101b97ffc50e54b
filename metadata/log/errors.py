"""Errors of the decoder and the readers; each names where the bad bytes are."""

from __future__ import annotations


class DecodeError(ValueError):
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
