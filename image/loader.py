"""The batch loader and snapshot loading (docs/replay-rules.md, "The batch loader", "Snapshots").

Kafka's MetadataBatchLoader publishes a new image after every chunk of batches the raft client
delivers; chunk boundaries are not recorded on disk. This loader uses the intended semantics
with one batch per chunk:

* every batch outside a transaction is its own delta (published at the batch's last offset);
* a BeginTransactionRecord that is not the first record of its batch first publishes the records
  before it (provenance = the record before the Begin, epoch/time of the current batch,
  ``isOffsetBatchAligned`` false);
* the records of a transaction accumulate in one delta that becomes visible at the end of the
  batch holding its EndTransactionRecord (together with the records after the End in that batch);
* an AbortTransactionRecord discards the transaction's records at once (Kafka's broker only does
  so when a chunk ends right after the Abort; that deviation is not emulated);
* control records and NoOpRecords only advance the provenance (offset, epoch, append time).

Deltas are applied in place to a live copy-on-write image, so a batch costs time proportional to
its changes, not to the image size.
"""

from __future__ import annotations

import abc
import enum
from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Protocol, TypeVar

from image.delta import MetadataDelta
from image.errors import ReplayError
from image.image import MetadataImage, empty_image
from image.provenance import MetadataProvenance
from image.release import NEWEST, ReplayRules
from metadata.log.errors import BadInput
from metadata.log.records import LogRecord

BEGIN_TRANSACTION = "BEGIN_TRANSACTION_RECORD"
END_TRANSACTION = "END_TRANSACTION_RECORD"
ABORT_TRANSACTION = "ABORT_TRANSACTION_RECORD"
SNAPSHOT_HEADER = "SNAPSHOT_HEADER"


class TransactionState(enum.Enum):
    NONE = "none"
    STARTED = "started"
    CONTINUED = "continued"
    ENDED = "ended"
    ABORTED = "aborted"


_OPEN = (TransactionState.STARTED, TransactionState.CONTINUED)


class _BatchReader(abc.ABC):
    """Batch, transaction and provenance bookkeeping of MetadataBatchLoader; subclasses decide
    what replaying, publishing, committing and aborting mean."""

    def __init__(self, provenance: MetadataProvenance, *, lenient: bool) -> None:
        self.lenient = lenient
        self.errors: list[ReplayError] = []
        self._reset(provenance)

    def _reset(self, provenance: MetadataProvenance) -> None:
        self._txn = TransactionState.NONE
        self._published = provenance
        self._last_offset = provenance.last_contained_offset
        self._last_epoch = provenance.last_contained_epoch
        self._last_time = provenance.last_contained_log_time_ms
        self._batch_last_offset: int | None = None

    @property
    def in_transaction(self) -> bool:
        """A BeginTransactionRecord was read and its End/Abort not yet."""
        return self._txn in _OPEN

    @property
    def offset(self) -> int:
        """Offset of the last record read (or of the starting image)."""
        return self._last_offset

    def visible_provenance(self) -> MetadataProvenance:
        """Provenance of the image at the last read offset: inside an open transaction the last
        published one (just before the Begin), else the last record read."""
        if self._batch_last_offset is None or self.in_transaction:
            return self._published
        return MetadataProvenance(self._last_offset, self._last_epoch, self._last_time, False)

    def _fail(self, error: ReplayError) -> None:
        """A record Kafka's replay rejects: raised (strict) or listed (lenient). One the reader kept raw
        (``--skip-unknown``) is listed in both modes."""
        if not self.lenient and not error.undecoded:
            raise error
        self.errors.append(error)

    def replay(self, record: LogRecord) -> None:
        """Read the next record of the log; ValueError unless it comes after the last one read."""
        if record.offset <= self._last_offset:
            raise BadInput(f"record offset {record.offset} is not after offset {self._last_offset}")
        if self._batch_last_offset is not None and record.offset > self._batch_last_offset:
            self._end_batch()
        if self._batch_last_offset is None:
            self._batch_last_offset = record.batch_last_offset
            self._last_epoch = record.epoch
            self._last_time = record.timestamp
        if not record.is_control:
            self._replay_data(record, record.offset - record.batch_base_offset)
        self._last_offset = record.offset
        if record.offset >= record.batch_last_offset:
            self._end_batch()

    def _replay_data(self, record: LogRecord, index: int) -> None:
        kind = record.type
        if kind == BEGIN_TRANSACTION:
            if self.in_transaction:
                self._fail(self._error(record, "Encountered BeginTransactionRecord while already in a transaction"))
                return
            if index > 0:
                self._publish(MetadataProvenance(self._last_offset, self._last_epoch, self._last_time, False))
            self._txn = TransactionState.STARTED
        elif kind in (END_TRANSACTION, ABORT_TRANSACTION):
            if not self.in_transaction:
                name = "EndTransactionRecord" if kind == END_TRANSACTION else "AbortTransactionRecord"
                self._fail(self._error(record, f"Encountered {name} without having seen a BeginTransactionRecord"))
                return
            if kind == END_TRANSACTION:
                self._txn = TransactionState.ENDED
                self._commit()
            else:
                self._txn = TransactionState.ABORTED
                self._abort()
        else:
            if self._txn is TransactionState.STARTED:
                self._txn = TransactionState.CONTINUED
            elif self._txn in (TransactionState.ENDED, TransactionState.ABORTED):
                self._txn = TransactionState.NONE
            try:
                self._replay_record(record)
            except ReplayError as error:
                self._fail(error)

    @staticmethod
    def _error(record: LogRecord, detail: str) -> ReplayError:
        return ReplayError(detail, location=f"offset {record.offset}", offset=record.offset, record_type=record.type)

    def _end_batch(self) -> None:
        assert self._batch_last_offset is not None
        self._last_offset, self._batch_last_offset = self._batch_last_offset, None
        if not self.in_transaction:
            self._publish(MetadataProvenance(self._last_offset, self._last_epoch, self._last_time, True))
            self._txn = TransactionState.NONE

    def _publish(self, provenance: MetadataProvenance) -> None:
        self._published = provenance

    @abc.abstractmethod
    def _replay_record(self, record: LogRecord) -> None:
        """Apply one metadata record of the current batch."""

    def _commit(self) -> None:
        """An EndTransactionRecord was read."""

    def _abort(self) -> None:
        """An AbortTransactionRecord was read."""


class DeltaEnds(_BatchReader):
    """The batch loader's delta boundaries alone: ``on_delta_end(last offset)`` for every delta it publishes,
    records not applied (the log generator follows the image's topic configs delta by delta with it)."""

    def __init__(self, on_delta_end: Callable[[int], None]) -> None:
        super().__init__(MetadataProvenance.EMPTY, lenient=False)
        self._on_delta_end = on_delta_end

    def _publish(self, provenance: MetadataProvenance) -> None:
        super()._publish(provenance)
        self._on_delta_end(provenance.last_contained_offset)

    def _replay_record(self, record: LogRecord) -> None:
        pass


class MetadataLoader(_BatchReader):
    """Sequential metadata loader: snapshot and log records in, point-in-time images out.

    ``rules`` are the Kafka release's (:mod:`image.release`; default the newest); ``image`` defaults to their
    empty image. With ``lenient`` a record Kafka's replay rejects (ReplayError) is recorded in ``errors`` and
    skipped (Kafka's fault-handler behavior); otherwise its ReplayError propagates. Any other
    exception is a bug and propagates in both modes.
    """

    def __init__(
        self, image: MetadataImage | None = None, *, rules: ReplayRules = NEWEST, lenient: bool = False
    ) -> None:
        image = empty_image(rules) if image is None else image
        super().__init__(image.provenance, lenient=lenient)
        self.rules = rules
        self._image = image
        self._delta: MetadataDelta | None = None

    def _replay_record(self, record: LogRecord) -> None:
        if self._delta is None:
            self._delta = MetadataDelta(self._image, rules=self.rules)
        self._delta.replay(record)

    def _publish(self, provenance: MetadataProvenance) -> None:
        super()._publish(provenance)
        if self._delta is not None:
            self._image = self._delta.build(provenance, in_place=True)
            self._delta = None

    def _abort(self) -> None:
        self._delta = None

    def image(self) -> MetadataImage:
        """The immutable image at the last read offset (see the module doc for transactions);
        ``errors`` holds the records skipped so far."""
        provenance = self.visible_provenance()
        if self._delta is not None and not self.in_transaction:
            image = self._delta.apply(provenance)
        else:
            image = replace(self._image.frozen(), provenance=provenance)
        return replace(image, errors=tuple(self.errors))

    def load_snapshot(
        self,
        records: Iterable[LogRecord],
        end_offset: int,
        epoch: int,
        last_contained_timestamp: int | None = None,
    ) -> MetadataDelta:
        """Load a snapshot onto the last published image (Kafka ``MetadataLoader.loadSnapshot``).

        Every data record is replayed into one delta (control records skipped; transaction
        markers are errors), ``finish_snapshot`` deletes what the snapshot did not mention, and
        the loader restarts from the result with provenance ``(end_offset - 1, epoch,
        last_contained_timestamp, aligned)``; unpublished records and an open transaction are
        dropped. ``last_contained_timestamp`` defaults to the SNAPSHOT_HEADER's value.
        Returns the finished delta (based on the previous image), e.g. for local changes.
        """
        delta = MetadataDelta(self._image, rules=self.rules, snapshot=True)
        last_contained_timestamp = _replay_snapshot(
            delta, records, end_offset, epoch, last_contained_timestamp, self._fail
        )
        delta.finish_snapshot()
        provenance = MetadataProvenance(end_offset - 1, epoch, last_contained_timestamp, True)
        self._image = delta.apply(provenance)
        self._delta = None
        self._reset(provenance)
        return delta


def _replay_snapshot(
    delta: MetadataDelta,
    records: Iterable[LogRecord],
    end_offset: int,
    epoch: int,
    last_contained_timestamp: int | None,
    fail: Callable[[ReplayError], None],
) -> int:
    """Replay a snapshot's data records into ``delta`` (control records skipped); its last contained
    timestamp (``last_contained_timestamp``, else the SNAPSHOT_HEADER's)."""
    location = f"snapshot {end_offset:020d}-{epoch:010d} offset"
    for record in records:
        if record.control_type == SNAPSHOT_HEADER and last_contained_timestamp is None:
            last_contained_timestamp = record.data["lastContainedLogTimestamp"]
        if record.is_control:
            continue
        try:
            delta.replay(record, f"{location} {record.offset}")
        except ReplayError as error:
            fail(error)
    if last_contained_timestamp is None:
        raise BadInput("snapshot without SNAPSHOT_HEADER: pass last_contained_timestamp")
    return last_contained_timestamp


class DeltaCollector(_BatchReader):
    """Collects the records that become visible after ``image`` into ONE MetadataDelta (like a
    Kafka chunk), honoring transactions: a transaction's records join the delta at its End,
    aborted ones never, and an open transaction's records are left out. ``rules`` as for :class:`MetadataLoader`."""

    def __init__(self, image: MetadataImage, *, rules: ReplayRules = NEWEST, lenient: bool = False) -> None:
        super().__init__(image.provenance, lenient=lenient)
        self.rules = rules
        self.delta = MetadataDelta(image, rules=rules)
        self._transaction: list[LogRecord] = []

    def load_snapshot(
        self, records: Iterable[LogRecord], end_offset: int, epoch: int, last_contained_timestamp: int | None = None
    ) -> None:
        """Open the delta with a snapshot loaded onto its base image, as the loader loads one (a log cut by
        retention is whole only from its oldest snapshot on): its data records join the delta, what the base
        image holds and the snapshot does not is deleted, and the records after its end offset follow. Only
        before any record is collected."""
        if self._batch_last_offset is not None or self.in_transaction:
            raise ValueError("a snapshot opens a delta only before any record")
        self.delta = MetadataDelta(self.delta.image, rules=self.rules, snapshot=True)
        ts = _replay_snapshot(self.delta, records, end_offset, epoch, last_contained_timestamp, self._fail)
        self.delta.finish_snapshot()
        self._reset(MetadataProvenance(end_offset - 1, epoch, ts, True))

    def _replay_record(self, record: LogRecord) -> None:
        if self.in_transaction:
            self._transaction.append(record)
        else:
            self.delta.replay(record)

    def _commit(self) -> None:
        records, self._transaction = self._transaction, []
        for record in records:
            try:
                self.delta.replay(record)
            except ReplayError as error:
                self._fail(error)

    def _abort(self) -> None:
        self._transaction = []

    def image(self) -> MetadataImage:
        """``delta.apply`` at the visible provenance, with the errors of the collected records."""
        return replace(self.delta.apply(self.visible_provenance()), errors=tuple(self.errors))


def load_snapshot(
    base_image: MetadataImage,
    snapshot_records: Iterable[LogRecord],
    end_offset: int,
    epoch: int,
    last_contained_timestamp: int | None = None,
    *,
    rules: ReplayRules = NEWEST,
    lenient: bool = False,
) -> MetadataImage:
    """The image after loading a snapshot onto ``base_image`` (onto the empty image this equals
    replaying its records; onto a non-empty one, what the snapshot omits is deleted)."""
    loader = MetadataLoader(base_image, rules=rules, lenient=lenient)
    loader.load_snapshot(snapshot_records, end_offset, epoch, last_contained_timestamp)
    return loader.image()


class SnapshotPoint(Protocol):
    """A snapshot's id: end offset (last contained offset + 1) and epoch."""

    @property
    def end_offset(self) -> int: ...

    @property
    def epoch(self) -> int: ...


S = TypeVar("S", bound=SnapshotPoint)


def snapshot_to_start_from(snapshots: Iterable[S], offset: int) -> S | None:
    """The snapshot a replay to the image at ``offset`` starts from: the latest with end offset ≤ offset + 1 (the
    highest epoch among equal end offsets); the log then supplies the records [end offset, offset]. None: the replay
    starts from the empty image."""
    return max(
        (s for s in snapshots if s.end_offset <= offset + 1), key=lambda s: (s.end_offset, s.epoch), default=None
    )


def snapshots_to_load(snapshots: Iterable[S], restart: int = -1) -> list[S]:
    """The snapshots a replay through the log from ``restart`` loads, each at its last contained offset, in end
    offset order: per end offset the highest epoch (as :func:`snapshot_to_start_from` chooses), those whose last
    contained offset is at or after ``restart``."""
    best: dict[int, S] = {}
    for s in snapshots:
        if s.end_offset - 1 >= restart and (s.end_offset not in best or s.epoch > best[s.end_offset].epoch):
            best[s.end_offset] = s
    return [best[end] for end in sorted(best)]
