"""Engine choice: the image at an offset (or time) from the reference engine or the Spark engine.

Both engines return :class:`ReplayedFrames` whose ``to_json()`` is the image JSON contract
(``image/README.md``); they agree on every image. The reference engine streams the records to
the driver and replays them sequentially, which is fastest for short replays; the Spark engine
works set-based on the lake's tables and can start from image checkpoints, which is what scales.
``engine="auto"`` picks the reference engine when at most ``threshold`` offsets lie between the
best snapshot and the offset (image checkpoints are not considered).

``--at-time`` is resolved here, once for both engines (:func:`resolve_offset`).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field, replace
from typing import Literal

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from image.errors import ReplayError
from image.temporal import parse_time
from image.frames import SCHEMAS, ImageFrames
from image.replay import SnapshotSource, replay_to
from image.spark.plan import Base
from metadata.lake import Lake, LakeState
from metadata.query import log_records, snapshot_ids, snapshot_records

AUTO_THRESHOLD = 200_000
"""``auto`` uses the reference engine up to this many log records to replay."""

Engine = Literal["auto", "spark", "reference"]


@dataclass(frozen=True)
class ReplayedFrames(ImageFrames):
    """An image as frames plus the records a lenient replay skipped (``errors`` is not a part)."""

    errors: tuple[ReplayError, ...] = field(default=(), compare=False)

    def parts(self) -> dict[str, DataFrame]:
        return {part: getattr(self, part) for part in SCHEMAS}


def resolve_offset(lake: Lake, offset: int | None = None, at_time: str | int | None = None,
                   state: LakeState | None = None) -> int | None:
    """``offset``, or for ``at_time`` the last offset of the last batch whose append time
    (batch max timestamp) is at or before it (replay-semantics.md §12)."""
    if at_time is None:
        return offset
    if offset is not None:
        raise ValueError("give an offset or a time, not both")
    ms = parse_time(at_time)
    last = (lake.table("records", state).where(F.col("timestamp") <= ms)
            .agg(F.max("batch_last_offset").alias("last")).first()["last"])
    if last is None:
        when = dt.datetime.fromtimestamp(ms / 1000, dt.timezone.utc).isoformat()
        raise ValueError(f"no batch of the log was appended at or before {when} ({ms} ms)")
    return int(last)


def clamp(state: LakeState, offset: int | None) -> int:
    """``offset`` (None = the end) limited to the last stored offset; ValueError below -1."""
    end = state.high_water_mark
    if offset is None:
        return end
    if offset < -1:
        raise ValueError(f"offset {offset} is before the start of the log")
    return min(offset, end)


def snapshot_base(lake: Lake, state: LakeState, offset: int) -> Base | None:
    """The latest stored snapshot usable for the image at ``offset`` (end offset ≤ offset + 1;
    ``bootstrap.checkpoint`` files are not snapshots of the log and are never used)."""
    eligible = [s for s in snapshot_ids(lake, state) if s.kind == "snapshot" and s.end_offset <= offset + 1]
    if not eligible:
        return None
    s = max(eligible, key=lambda s: (s.end_offset, s.epoch))
    timestamp = s.last_contained_timestamp if s.last_contained_timestamp is not None else -1
    return Base("snapshot", s.end_offset - 1, s.epoch, timestamp, snapshot=(s.end_offset, s.epoch))


def replay_reference(lake: Lake, offset: int, *, lenient: bool = False,
                     state: LakeState | None = None) -> ReplayedFrames:
    """The reference engine on the lake: best snapshot, then the log records up to ``offset``."""
    state = state or lake.state()
    base = snapshot_base(lake, state, offset)
    source = None
    if base is not None and base.snapshot is not None:
        end, epoch = base.snapshot
        source = SnapshotSource(snapshot_records(lake, end, epoch, state), end, epoch, base.timestamp)
    log = log_records(lake, from_offset=base.offset + 1 if base else None, to_offset=offset, state=state)
    image = replay_to(log, offset, snapshot=source, lenient=lenient)
    return replace(ReplayedFrames.from_json(lake.spark, image.to_json()), errors=image.errors)


def replay_image(lake: Lake, offset: int | None = None, *, at_time: str | int | None = None,
                 engine: Engine = "auto", lenient: bool = False, threshold: int = AUTO_THRESHOLD,
                 checkpoints: bool = True) -> ReplayedFrames:
    """The image at ``offset`` (None = end of the log) or ``at_time``, from ``engine``.

    Strict replay raises :class:`ReplayError` naming the offset of the first record Kafka
    rejects; ``lenient`` skips such records and lists them in ``errors``.
    """
    if engine not in ("auto", "spark", "reference"):
        raise ValueError(f"unknown engine {engine!r} (auto, spark or reference)")
    state = lake.state()
    target = clamp(state, resolve_offset(lake, offset, at_time, state))
    if engine == "auto":
        base = snapshot_base(lake, state, target)
        engine = "reference" if target - (base.offset if base else -1) <= threshold else "spark"
    if engine == "reference":
        return replay_reference(lake, target, lenient=lenient, state=state)
    from image.spark_engine import replay_frames
    return replay_frames(lake, target, lenient=lenient, checkpoints=checkpoints)
