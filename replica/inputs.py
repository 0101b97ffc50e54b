"""A delta (A, B] of a lake as the inputs of ``replica/``: offsets or times resolved like the
image commands (``image.engine``), the two images from the chosen engine, the typed tables at
the committed lake state; or the reference engine's local changes from the lake's records."""

from __future__ import annotations

from typing import Any

from image.engine import Engine, clamp, replay_image, resolve_offset, snapshot_base
from image.replay import SnapshotSource
from metadata.lake import Lake, LakeState
from metadata.query import log_records, snapshot_records
from replica.local_changes import local_changes_json
from replica.spark_changes import DeltaFrames


def resolve_window(lake: Lake, from_offset: int | None, to_offset: int | None, from_time: str | None = None,
                   to_time: str | None = None, state: LakeState | None = None) -> tuple[int, int]:
    """(A, B): offsets, or the last offsets of the last batches appended at or before the times;
    B defaults to the end of the log; both are limited to the stored log."""
    state = state or lake.state()
    a = resolve_offset(lake, from_offset, from_time, state)
    if a is None:
        raise ValueError("give --from-offset or --from-time")
    b = clamp(state, resolve_offset(lake, to_offset, to_time, state))
    a = clamp(state, a)
    if b < a:
        raise ValueError(f"the window ends (offset {b}) before it starts (offset {a})")
    return a, b


def delta_frames(lake: Lake, from_offset: int, to_offset: int, *, engine: Engine = "auto") -> DeltaFrames:
    """The delta (from_offset, to_offset] with both images replayed by ``engine``."""
    state = lake.state()
    before = replay_image(lake, from_offset, engine=engine)
    after = replay_image(lake, to_offset, engine=engine)
    return DeltaFrames(before, after, lambda name: lake.table(name, state), from_offset, to_offset)


def reference_changes_json(lake: Lake, from_offset: int, to_offset: int, broker: int | None = None) -> dict[str, Any]:
    """:func:`replica.local_changes.local_changes_json` on the lake's records (from the latest
    snapshot usable for ``from_offset``)."""
    state = lake.state()
    base = snapshot_base(lake, state, from_offset)
    source = None
    if base is not None and base.snapshot is not None:
        end, epoch = base.snapshot
        source = SnapshotSource(snapshot_records(lake, end, epoch, state), end, epoch, base.timestamp)
    records = log_records(lake, from_offset=base.offset + 1 if base else None, to_offset=to_offset, state=state)
    return local_changes_json(records, from_offset, to_offset, broker, snapshot=source)
