"""Which offsets a command is about: one :class:`Window` for every command, and the one resolver of its
offsets and times against a :class:`~image.temporal.reads.TemporalSource`.

Each flag means one thing in every command (a time — ISO-8601 or epoch ms — names the last offset of the last
batch appended at or before it):

* ``--at-offset X`` / ``--at-time T``: the image at X, after the record at X (``-1``: the empty image; default:
  the end of the log) — ``replay``, ``show``, ``shell``;
* ``--from-offset A`` / ``--from-time T``: the first record of a window of records, inclusive (default: the log's
  first) — ``history``, ``timeline``, ``report``, ``dump``;
* ``--after-offset A`` / ``--after-time T``: the image a delta starts from; the delta holds the records after A
  (Kafka's delta (A, B]: ``MetadataDelta`` on the image at A) — ``changes``, ``apply``, ``leader-and-isr``,
  ``diff``;
* ``--to-offset B`` / ``--to-time T``: the last record of a window or delta, inclusive: the image at B (default:
  the end of the log) — every command above but ``replay``, ``show`` and ``shell``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from image.temporal.times import iso_time, parse_time
from metadata.log.errors import BadInput, OffsetOutOfRange

if TYPE_CHECKING:
    from image.temporal.reads import TemporalSource


def named_offset(source: TemporalSource, offset: int | None, time: str | int | None, flag: str | None) -> int | None:
    """The offset ``--{flag}-offset`` or ``--{flag}-time`` (ISO-8601 or epoch ms) names, None if neither.
    ValueError for both, or a time before the log's first batch (``flag`` None: the message names no flag)."""
    if offset is not None and time is not None:
        raise BadInput(f"give --{flag}-offset or --{flag}-time, not both")
    if time is None:
        return offset
    ms = parse_time(time)
    found = source.offset_at_time(ms)
    if found is None:
        named = f"--{flag}-time {iso_time(ms)}" if flag else iso_time(ms)
        raise OffsetOutOfRange(f"{named}: no batch of the log was appended at or before it")
    return found


def image_offset(
    source: TemporalSource, offset: int | None = None, time: str | int | None = None, flag: str | None = "at"
) -> int:
    """The image ``--{flag}-offset`` / ``--{flag}-time`` names (neither: the end of the log, -1 if it is empty).
    ValueError before the empty image (-1) or past the end of the log."""
    named = named_offset(source, offset, time, flag)
    bounds = source.bounds()
    end = bounds[1] if bounds is not None else -1
    if named is None:
        return end
    if named < -1:
        raise OffsetOutOfRange(f"offset {named} is before the start of the log")
    if named > end:
        raise OffsetOutOfRange(f"offset {named} is beyond the end of the log (last offset {end})")
    return named


@dataclass(frozen=True)
class Window:
    """The window a command names, by the flags of the same names (times in epoch ms): a window of records
    ``[from, to]`` (:meth:`records`) or a delta ``(after, to]`` (:meth:`delta`)."""

    from_offset: int | None = None
    from_time: int | None = None
    after_offset: int | None = None
    after_time: int | None = None
    to_offset: int | None = None
    to_time: int | None = None

    @classmethod
    def of(
        cls,
        *,
        from_offset: int | None = None,
        from_time: str | int | None = None,
        after_offset: int | None = None,
        after_time: str | int | None = None,
        to_offset: int | None = None,
        to_time: str | int | None = None,
    ) -> Window:
        """The window of the command line's flags (times as given: ISO-8601 or epoch ms)."""

        def ms(value: str | int | None) -> int | None:
            return parse_time(value) if value is not None else None

        return cls(from_offset, ms(from_time), after_offset, ms(after_time), to_offset, ms(to_time))

    def records(self, source: TemporalSource) -> tuple[int, int]:
        """The first and last offset (inclusive) of the records ``[from, to]``: an unset end is the log's first /
        last offset, and the window is clipped to the log. ValueError for an empty log, a delta's start
        (``--after-*``), or a window holding no offset of the log."""
        if self.after_offset is not None or self.after_time is not None:
            raise BadInput("a window of records starts at --from-offset or --from-time (--after-*: a delta)")
        bounds = source.bounds()
        if bounds is None:
            raise OffsetOutOfRange("the log has no records")
        first, last = bounds
        start = named_offset(source, self.from_offset, self.from_time, "from")
        end = named_offset(source, self.to_offset, self.to_time, "to")
        start, end = max(first if start is None else start, first), min(last if end is None else end, last)
        if start > end:
            raise OffsetOutOfRange(f"the window {start} … {end} holds no offset of the log ({first} … {last})")
        return start, end

    def delta(self, source: TemporalSource) -> tuple[int, int]:
        """``(A, B)`` of the delta (A, B]: the image at ``--after-*`` (required) and at ``--to-*`` (default: the
        end of the log), each as :func:`image_offset`. ValueError for a window's start (``--from-*``), no start,
        or B before A."""
        if self.from_offset is not None or self.from_time is not None:
            raise BadInput("a delta starts at --after-offset or --after-time (--from-*: a window of records)")
        if self.after_offset is None and self.after_time is None:
            raise BadInput("give --after-offset or --after-time: the image the delta starts from")
        a = image_offset(source, self.after_offset, self.after_time, "after")
        b = image_offset(source, self.to_offset, self.to_time, "to")
        if b < a:
            raise OffsetOutOfRange(f"the delta ends (offset {b}) before it starts (offset {a})")
        return a, b
