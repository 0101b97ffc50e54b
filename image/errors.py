"""Replay errors (inconsistent input, see docs/replay-rules.md, "What is rejected")."""

from __future__ import annotations

from metadata.log.errors import KraftReplayError


class ReplayError(KraftReplayError):
    """A record that cannot be replayed consistently.

    ``detail`` says what is wrong; ``location`` (e.g. ``"offset 1234"`` or
    ``"snapshot 00000000000000000100-0000000001 offset 7"``) and ``record_type`` are attached by
    the delta/loader that replayed the record. ``str(error)`` reads
    ``"offset 1234: PARTITION_CHANGE_RECORD: unknown partition <topicId>:3"``.

    One without a ``record_type`` is a record the reader kept raw (``--skip-unknown``: a type or version the schema
    does not know): not replayed, reported, never fatal (:attr:`undecoded`).
    """

    def __init__(
        self,
        detail: str,
        *,
        location: str | None = None,
        offset: int | None = None,
        record_type: str | None = None,
    ) -> None:
        self.detail = detail
        self.location = location
        self.offset = offset
        self.record_type = record_type
        super().__init__(str(self))

    @property
    def undecoded(self) -> bool:
        """A record kept raw by ``--skip-unknown``: a strict replay reports it and goes on."""
        return self.record_type is None

    def at(self, location: str, offset: int, record_type: str | None) -> ReplayError:
        """This error with the record's position attached (unchanged if already attached)."""
        if self.location is not None:
            return self
        return ReplayError(self.detail, location=location, offset=offset, record_type=record_type)

    def __str__(self) -> str:
        parts = [p for p in (self.location, self.record_type) if p]
        return ": ".join([*parts, self.detail])

    def to_json(self) -> dict[str, object]:
        """``{"offset", "recordType", "location", "message"}`` for reports."""
        return {
            "offset": self.offset,
            "recordType": self.record_type,
            "location": self.location,
            "message": self.detail,
        }
