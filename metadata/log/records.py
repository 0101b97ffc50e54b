"""Decoded log records as the engines consume them (one row of the ``records`` table)."""

from __future__ import annotations

import json
import marshal
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, BinaryIO, NamedTuple, overload

import numpy as np
import orjson


def payload_data(payload: str | None) -> dict[str, Any]:
    """A record body from the ``payload`` JSON the lake stores (empty: ``{}``). orjson parses it, about twice as
    fast as ``json``; what it refuses (``NaN``/``Infinity`` of a double field, as ``json`` writes them, or an
    integer beyond 64 bits) falls back to ``json``."""
    if not payload:
        return {}
    try:
        return orjson.loads(payload)
    except orjson.JSONDecodeError:
        return json.loads(payload)


@dataclass(slots=True)
class LogRecord:
    """One record of the metadata log (or of a snapshot), with its batch context.

    ``data`` is the record body in the shape of Kafka's JSON converters (what
    ``kafka-dump-log --cluster-metadata-decoder`` prints as ``payload.data``): camelCase field
    names, every regular field of the version, tagged fields only when not at their default,
    Uuids in Kafka's base64 form, ``bytes`` as standard base64.
    For control records ``type`` is None and ``control_type`` names the control record
    (``LEADER_CHANGE``, ``SNAPSHOT_HEADER``, ...); ``data`` is then the control body. A record the reader
    kept raw (``--skip-unknown``: a type or version the schema does not know) has neither: ``api_key`` and
    ``version`` say what it is, ``data`` is empty (:attr:`is_undecoded`). ``api_key`` is the record's apiKey
    as the reader found it (None for control records, and for records built in memory without one).

    Treat it as immutable. It is not a frozen dataclass: that constructor sets each field through
    ``object.__setattr__``, about 8× the cost, and a log read in process builds one per record.
    """

    offset: int
    batch_base_offset: int
    batch_last_offset: int
    epoch: int
    timestamp: int
    type: str | None
    version: int
    data: dict[str, Any] = field(default_factory=dict)
    control_type: str | None = None
    is_transactional: bool = False
    producer_id: int = -1
    producer_epoch: int = -1
    source_file: str = ""
    api_key: int | None = None

    @property
    def is_control(self) -> bool:
        return self.control_type is not None

    @property
    def is_undecoded(self) -> bool:
        """A record the reader kept raw (``--skip-unknown``): neither a decoded type nor a control record."""
        return self.type is None and self.control_type is None

    @classmethod
    def from_columns(
        cls,
        offset: int,
        batch_base_offset: int,
        batch_last_offset: int,
        batch_leader_epoch: int,
        timestamp: int,
        type: str | None,
        version: int,
        payload: str | None,
        control_type: str | None,
        is_transactional: bool | None,
        producer_id: int,
        producer_epoch: int,
        source_file: str,
        api_key: int | None,
    ) -> LogRecord:
        """A record from the values of :data:`LOG_RECORD_COLUMNS`, in their order."""
        return cls(
            offset,
            batch_base_offset,
            batch_last_offset,
            batch_leader_epoch,
            timestamp,
            type,
            version,
            payload_data(payload),
            control_type,
            bool(is_transactional),
            producer_id,
            producer_epoch,
            source_file,
            api_key,
        )

    @classmethod
    def from_row(cls, row: Mapping[str, Any], offset_column: str = "offset") -> LogRecord:
        """A row of the lake's ``records`` table (or of ``snapshots``, with ``offset_column="position"``)."""
        return cls.from_columns(row[offset_column], *(row[c] for c in LOG_RECORD_COLUMNS[1:]))


LOG_RECORD_COLUMNS = (
    "offset",
    "batch_base_offset",
    "batch_last_offset",
    "batch_leader_epoch",
    "timestamp",
    "type",
    "version",
    "payload",
    "control_type",
    "is_transactional",
    "producer_id",
    "producer_epoch",
    "source_file",
    "api_key",
)
"""The ``records`` columns of a :class:`LogRecord`, in its fields' order (``payload``: the JSON of ``data``,
``batch_leader_epoch``: ``epoch``); :meth:`LogRecord.from_columns` takes their values."""


BOOTSTRAP_SNAPSHOT_ID = (0, 0)
"""Kafka's ``Snapshots.BOOTSTRAP_SNAPSHOT_ID``: ``00000000000000000000-0000000000.checkpoint``, written by
``kafka-storage format`` (3.9-4.3: with ``--standalone``/``--initial-controllers``, holding the initial voters
only; 4.4+: on every controller, with the bootstrap records). No node replicates it and a broker's image never
starts from it: from 4.3 the raft client hands it to ``handleLoadBootstrap``, which the broker's
``MetadataLoader`` ignores (before, it held control records only, and loading it changed no image)."""

BOOTSTRAP_CHECKPOINT_ID = (0, -1)
"""The id ``bootstrap.checkpoint`` (the formatter's bootstrap records up to 4.3) is stored under: epoch -1 is
no raft epoch, so it never collides with :data:`BOOTSTRAP_SNAPSHOT_ID`."""

BOOTSTRAP_IDS = (BOOTSTRAP_SNAPSHOT_ID, BOOTSTRAP_CHECKPOINT_ID)
"""The ids of the bootstrap files."""


def snapshot_kind(end_offset: int, epoch: int) -> str:
    """``bootstrap`` for the bootstrap files (:data:`BOOTSTRAP_IDS`), else ``snapshot``: only a snapshot is ever
    where a replay starts."""
    return "bootstrap" if (end_offset, epoch) in BOOTSTRAP_IDS else "snapshot"


class Snapshot(NamedTuple):
    """A snapshot (``*.checkpoint``): its records in file order (``offset`` = position in the file,
    control records included or not), its id (end offset = last contained offset + 1, epoch) and
    the SnapshotHeader's LastContainedLogTimestamp (None = read it from the SNAPSHOT_HEADER record)."""

    records: Sequence[LogRecord]
    end_offset: int
    epoch: int
    last_contained_timestamp: int | None = None


def replay_starts(snapshots: Iterable[Snapshot]) -> list[Snapshot]:
    """The snapshots among ``snapshots`` a replay can start from: not the bootstrap files."""
    return [s for s in snapshots if snapshot_kind(s.end_offset, s.epoch) == "snapshot"]


class Chunks(NamedTuple):
    """Where a :class:`RecordLog`'s records come from, one entry per chunk (a batch, or one given record):
    its records' count and first offset (the others follow one by one), and the batch context they share
    (base and last offset, leader epoch, append time), as int64 columns."""

    count: np.ndarray
    first_offset: np.ndarray
    base: np.ndarray
    last: np.ndarray
    epoch: np.ndarray
    timestamp: np.ndarray


PARALLEL_RECORDS = 20_000
"""Records not yet decoded from which :meth:`RecordLog.stream` decodes them in a second process."""

_BLOCK_CHUNKS = 512
"""Chunks a decoding child hands over at once."""


def _can_fork() -> bool:
    """A child can decode: Linux, and this process runs one thread (forking a process whose other threads may
    hold locks — a Spark driver's, a test runner's — is not safe)."""
    return sys.platform == "linux" and hasattr(os, "fork") and threading.active_count() == 1


def _fields(record: LogRecord) -> tuple[Any, ...]:
    return (
        record.offset,
        record.batch_base_offset,
        record.batch_last_offset,
        record.epoch,
        record.timestamp,
        record.type,
        record.version,
        record.data,
        record.control_type,
        record.is_transactional,
        record.producer_id,
        record.producer_epoch,
        record.source_file,
        record.api_key,
    )


class _Handover:
    """The chunks of a :class:`RecordLog` that a forked child decodes, received in blocks through a pipe
    (``marshal``: the records' fields); chunks the child did not hand over are decoded here."""

    def __init__(self, log: RecordLog, missing: list[int]) -> None:
        self.log = log
        self.blocks = [missing[i : i + _BLOCK_CHUNKS] for i in range(0, len(missing), _BLOCK_CHUNKS)]
        read, write = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:  # the child: decode every block, hand it over, exit without cleanup
            os.close(read)
            status = 0
            try:
                with os.fdopen(write, "wb") as out:
                    for block in self.blocks:
                        data = marshal.dumps([[_fields(r) for r in chunk] for chunk in self._decode(block)])
                        out.write(len(data).to_bytes(8, "little"))
                        out.write(data)
            except BaseException:  # noqa: BLE001 — the parent decodes what it did not receive, and raises
                status = 1
            finally:
                os._exit(status)
        os.close(write)
        self.pipe: BinaryIO | None = os.fdopen(read, "rb")
        self.next = 0

    def _decode(self, block: list[int]) -> list[list[LogRecord]]:
        """The chunks of ``block`` (ascending, possibly with gaps), decoded a run of consecutive chunks at a time."""
        out: list[list[LogRecord]] = []
        start = 0
        while start < len(block):
            end = start
            while end + 1 < len(block) and block[end + 1] == block[end] + 1:
                end += 1
            out.extend(self.log._load(block[start], block[end]))
            start = end + 1
        return out

    def receive(self, chunk: int) -> None:
        """Load the block holding ``chunk`` (and the ones before it not yet received)."""
        while self.log._chunks[chunk] is None:
            block = self.blocks[self.next]
            self.next += 1
            chunks = self._read()
            if chunks is None:
                chunks = self._decode(block)
                self.close()
            else:
                chunks = [[LogRecord(*fields) for fields in chunk] for chunk in chunks]
            for k, records in zip(block, chunks):
                self.log._chunks[k] = records

    def _read(self) -> list[list[tuple[Any, ...]]] | None:
        if self.pipe is None:
            return None
        size = self.pipe.read(8)
        if len(size) < 8:
            return None
        data = self.pipe.read(int.from_bytes(size, "little"))
        return marshal.loads(data)

    def close(self) -> None:
        """Stop the child (when the caller stopped early) and reap it."""
        if self.pipe is None:
            return
        self.pipe.close()
        self.pipe = None
        try:
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        os.waitpid(self.pid, 0)


class RecordLog(Sequence[LogRecord]):
    """A log's records in file order, loaded one chunk at a time when first asked for, with the columns a
    question about positions needs (offset, leader epoch, append time, batch bounds of every record) held
    from the start: a replay from a snapshot decodes only the batches after it
    (:func:`metadata.log.readers.scan_log`). ``load(first, last)`` gives the records of chunks ``first..last``."""

    def __init__(
        self,
        chunks: Chunks,
        load: Callable[[int, int], list[list[LogRecord]]],
        loaded: list[list[LogRecord] | None] | None = None,
    ) -> None:
        n = len(chunks.count)
        self._starts = np.zeros(n + 1, np.int64)
        np.cumsum(chunks.count, out=self._starts[1:])
        within = np.arange(self._starts[-1], dtype=np.int64) - np.repeat(self._starts[:-1], chunks.count)
        self.offsets = np.repeat(chunks.first_offset, chunks.count) + within
        self._epoch = np.repeat(chunks.epoch, chunks.count)
        self._timestamp = np.repeat(chunks.timestamp, chunks.count)
        self._base = np.repeat(chunks.base, chunks.count)
        self._last = np.repeat(chunks.last, chunks.count)
        self._load = load
        self._chunks: list[list[LogRecord] | None] = loaded if loaded is not None else [None] * n

    @classmethod
    def of(cls, records: Sequence[LogRecord]) -> RecordLog:
        """Records already in memory (a chunk each)."""
        column = lambda name: np.fromiter((getattr(r, name) for r in records), np.int64, len(records))  # noqa: E731
        offsets = column("offset")
        chunks = Chunks(
            np.ones(len(records), np.int64),
            offsets,
            column("batch_base_offset"),
            column("batch_last_offset"),
            column("epoch"),
            column("timestamp"),
        )
        return cls(chunks, lambda first, last: [], [[r] for r in records])

    def __len__(self) -> int:
        return int(self._starts[-1])

    @overload
    def __getitem__(self, i: int) -> LogRecord: ...

    @overload
    def __getitem__(self, i: slice) -> list[LogRecord]: ...

    def __getitem__(self, i: int | slice) -> LogRecord | list[LogRecord]:
        if isinstance(i, slice):
            start, stop, step = i.indices(len(self))
            return self._span(start, stop) if step == 1 else self._span(0, len(self))[i]
        if not -len(self) <= i < len(self):
            raise IndexError(i)
        i %= len(self)
        return self._span(i, i + 1)[0]

    def __iter__(self) -> Iterator[LogRecord]:
        return iter(self._span(0, len(self)))

    def _span(self, start: int, stop: int) -> list[LogRecord]:
        """Records ``start..stop-1`` (indexes in file order), their chunks loaded if not yet."""
        if start >= stop:
            return []
        first = int(np.searchsorted(self._starts, start, "right")) - 1
        last = int(np.searchsorted(self._starts, stop - 1, "right")) - 1
        k = first
        while k <= last:  # load each run of chunks not loaded yet in one call
            if self._chunks[k] is not None:
                k += 1
                continue
            end = k
            while end < last and self._chunks[end + 1] is None:
                end += 1
            self._chunks[k : end + 1] = self._load(k, end)
            k = end + 1
        out = [r for chunk in self._chunks[first : last + 1] for r in chunk]  # type: ignore[union-attr]
        skip = start - int(self._starts[first])
        return out[skip : skip + stop - start]

    @property
    def decoded(self) -> int:
        """How many records are loaded so far."""
        return sum(len(chunk) for chunk in self._chunks if chunk is not None)

    def between(self, first: int, last: int) -> list[LogRecord]:
        """The records with ``first ≤ offset ≤ last``, in file order."""
        chosen = np.flatnonzero((self.offsets >= first) & (self.offsets <= last))
        if not len(chosen):
            return []
        lo, hi = int(chosen[0]), int(chosen[-1]) + 1
        span = self._span(lo, hi)
        return span if hi - lo == len(chosen) else [span[i - lo] for i in chosen.tolist()]

    def stream(self, first: int, last: int) -> Iterator[LogRecord]:
        """:meth:`between`, yielded in order as the records are decoded. When the chunks not loaded yet hold at
        least :data:`PARALLEL_RECORDS` records and this process can fork (Linux), a child process decodes them
        and hands them over in blocks while the caller consumes the ones before: a replay and the decoding of
        what follows run on two cores. Should the child fail, this process decodes what it did not hand over
        itself (so a bad batch raises here, as :meth:`between` would)."""
        chosen = np.flatnonzero((self.offsets >= first) & (self.offsets <= last))
        if not len(chosen):
            return
        lo, hi = int(chosen[0]), int(chosen[-1]) + 1
        if hi - lo != len(chosen) or not _can_fork():
            yield from self.between(first, last)
            return
        k0 = int(np.searchsorted(self._starts, lo, "right")) - 1
        k1 = int(np.searchsorted(self._starts, hi - 1, "right")) - 1
        missing = [k for k in range(k0, k1 + 1) if self._chunks[k] is None]
        if int(sum(int(self._starts[k + 1] - self._starts[k]) for k in missing)) < PARALLEL_RECORDS:
            yield from self.between(first, last)
            return
        handed = _Handover(self, missing)
        try:
            at = int(self._starts[k0])
            for k in range(k0, k1 + 1):
                chunk = self._chunks[k]
                if chunk is None:
                    handed.receive(k)
                    chunk = self._chunks[k]
                    assert chunk is not None
                for i, record in enumerate(chunk, at):
                    if lo <= i < hi:
                        yield record
                at += len(chunk)
        finally:
            handed.close()

    def bounds(self) -> tuple[int, int] | None:
        """The first and last record's offsets."""
        return (int(self.offsets[0]), int(self.offsets[-1])) if len(self) else None

    def at_or_before(self, offset: int) -> tuple[int, int, int] | None:
        """``(offset, leader epoch, append time)`` of the last record at or before ``offset``."""
        i = int(np.searchsorted(self.offsets, offset, "right")) - 1
        return (int(self.offsets[i]), int(self._epoch[i]), int(self._timestamp[i])) if i >= 0 else None

    def batch_start(self, offset: int) -> int:
        """The base offset of the batch holding the record at ``offset`` (``offset`` if none does)."""
        i = int(np.searchsorted(self.offsets, offset, "left"))
        return int(self._base[i]) if i < len(self) and self.offsets[i] == offset else offset

    def offset_at_time(self, ms: int) -> int | None:
        """The last offset of the last batch appended at or before ``ms``."""
        chosen = self._last[self._timestamp <= ms]
        return int(chosen.max()) if len(chosen) else None
