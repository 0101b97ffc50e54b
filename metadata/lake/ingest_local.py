"""Ingest in process: the records decoded on this machine's cores and written with delta-rs, no JVM.

Decoding is the decoder's own (:func:`metadata.lake.staging.decode_task`, what a Spark task runs), one task per file or
byte range: in this process for a small input, else in a pool of worker processes, one per core, that hand back
Arrow tables. The records stay in memory (the input fits one machine: :data:`~metadata.lake.state.LOCAL_MAX_BYTES`);
the typed tables and snapshots are computed from them with pyarrow (:mod:`metadata.lake.tables`, the same code an ingest
on Spark runs in its workers) and every table is appended with delta-rs, four at a time.
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Callable, Iterator, Mapping

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from metadata.lake.protocol import Lake, LakeState, LakeTransaction, per_table
from metadata.lake.staging import IngestError, Task, decode_task
from metadata.lake.state import process_pool
from metadata.lake.tables import RECORDS_SCHEMA, TYPED_TABLES, snapshot_rows, typed_rows
from metadata.log.columns import DECODED_SCHEMA
from metadata.log.readers import ReadOptions

PARALLEL_BYTES = 8 << 20
"""Input bytes from which decoding runs in worker processes (one per core; each starts in about half a second)."""


class LocalSteps:
    """The steps of an ingest in process (:class:`metadata.lake.ingest.Steps`; decoded records: a pyarrow table)."""

    def __init__(self, lake: Lake, progress: bool = False) -> None:
        self.lake, self.progress = lake, progress
        self.parallelism = os.cpu_count() or 1

    def stage(self, tasks: list[Task], options: ReadOptions, staging: str) -> tuple[pa.Table, list[Mapping]]:
        jobs = [(f.to_json(), start, end, options.to_json()) for f, start, end in tasks]
        size = sum((f.size if end is None else end) - start for f, start, end in tasks)
        if self.parallelism > 1 and len(jobs) > 1 and size >= PARALLEL_BYTES:
            with process_pool(min(self.parallelism, len(jobs))) as pool:
                results = list(pool.map(decode_task, *zip(*jobs)))
        else:
            results = [decode_task(*job) for job in jobs]
        tables = [rows for rows, _ in results if rows.num_rows]
        staged = pa.concat_tables(tables) if tables else DECODED_SCHEMA.empty_table()
        return staged, [row for _, summary in results for row in summary]

    def log(self, staged: pa.Table) -> pa.Table:
        # a decode task reads one file: most batches are all the log's (kept as they are, not copied) or all a
        # snapshot's
        batches = []
        for batch in staged.to_batches():
            snapshot = batch.column("snapshot_end_offset")
            if snapshot.null_count == batch.num_rows:
                batches.append(batch)
            elif snapshot.null_count:
                batches.append(batch.filter(pc.is_null(snapshot)))
        return pa.Table.from_batches(batches, staged.schema)

    def check_conflicts(self, log: pa.Table) -> None:
        rows = log.filter(pc.and_(pc.invert(log["is_control"]), pc.is_valid(log["type"])))
        rows = rows.select(["offset", "type", "payload", "source_file"]).sort_by([("offset", "ascending")])
        offsets = rows["offset"].to_numpy()
        if not len(offsets):
            return
        text = pc.binary_join_element_wise(rows["type"], pc.fill_null(rows["payload"], ""), "\x00").to_numpy(
            zero_copy_only=False
        )
        same_offset = offsets[1:] == offsets[:-1]
        clash = np.flatnonzero(same_offset & (text[1:] != text[:-1]))
        if len(clash):
            offset = int(offsets[clash[0]])
            files = sorted(set(rows.filter(pc.equal(rows["offset"], offset))["source_file"].to_pylist()))
            raise IngestError(f"offset {offset} holds different records in {', '.join(files)} (divergent logs?)")

    def dedupe(self, log: pa.Table) -> pa.Table:
        length = pc.utf8_length(pc.fill_null(log["payload"], ""))
        order = pc.sort_indices(
            pa.table({"offset": log["offset"], "length": length, "file": log["source_file"]}),
            [("offset", "ascending"), ("length", "descending"), ("file", "ascending")],
        )
        ordered = log.take(order)
        offsets = ordered["offset"].to_numpy()
        first = np.ones(len(offsets), dtype=bool)
        first[1:] = offsets[1:] != offsets[:-1]
        return ordered.filter(pa.array(first))

    def groups(self, log: pa.Table) -> list[Mapping]:
        rows = (
            log.group_by(["source_file", "type", "is_control"], use_threads=False)
            .aggregate([("offset", "count"), ("offset", "min"), ("offset", "max")])
            .to_pylist()
        )
        return [
            {
                "source_file": r["source_file"],
                "type": r["type"],
                "is_control": r["is_control"],
                "n": r["offset_count"],
                "lo": r["offset_min"],
                "hi": r["offset_max"],
            }
            for r in rows
        ]

    def new_rows(
        self, state: LakeState, log: pa.Table, staged: pa.Table, stats: dict, snapshot_ids: list[tuple[int, int]]
    ) -> tuple[pa.Table, int, int | None, list[tuple[int, int]]]:
        fresh, added, first = log, stats["n"], stats["lo"]
        files = self.lake.files(state)
        assert files is not None
        if stats["n"] and stats["lo"] <= state.high_water_mark:  # some offsets may be stored: only those it lacks
            lo, hi = stats["lo"], stats["hi"]
            stored = files.read(
                "records",
                columns=["offset"],
                where=(pc.field("offset") >= lo) & (pc.field("offset") <= hi),
                prune=lambda f: f.may_hold("offset", lo, hi),
            )["offset"]
            fresh = log.filter(pc.invert(pc.is_in(log["offset"], value_set=stored.combine_chunks())))
            added = fresh.num_rows
            first = pc.min(fresh["offset"]).as_py() if added else None
        stored_ids: set[tuple[int, int]] = set()
        if snapshot_ids:
            ids = files.read("snapshots", columns=["snapshot_end_offset", "snapshot_epoch"])
            stored_ids = set(zip(ids["snapshot_end_offset"].to_pylist(), ids["snapshot_epoch"].to_pylist()))
        return fresh, added, first if added else None, [i for i in snapshot_ids if i not in stored_ids]

    def write(
        self,
        txn: LakeTransaction,
        fresh: pa.Table | None,
        staged: pa.Table,
        by_type: dict[str, int],
        new_ids: list[tuple[int, int]],
    ) -> int:
        tables: list[tuple[str, Callable[[], pa.Table]]] = []
        if fresh is not None:
            tables += [
                (n, functools.partial(typed_rows, n, fresh))
                for n, t in TYPED_TABLES.items()
                if any(r in by_type for r in t.record_types)
            ]
        snapshots = snapshot_rows(staged, new_ids) if new_ids else None
        if snapshots is not None:
            tables.append(("snapshots", lambda: snapshots))

        def append(name: str, rows: pa.Table) -> None:
            if rows.num_rows or name not in txn.base.versions:  # (an empty append would still be a commit)
                txn.write(name, rows)

        per_table(lambda t: append(t[0], t[1]()), tables)
        if fresh is not None:
            txn.write("records", fresh.select(RECORDS_SCHEMA.names))
        return 0 if snapshots is None else snapshots.num_rows

    def release(self, fresh: pa.Table) -> None:
        """Nothing is kept beyond the Python objects."""

    @contextlib.contextmanager
    def writing(self) -> Iterator[None]:
        yield
