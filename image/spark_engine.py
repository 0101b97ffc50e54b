"""The Spark engine: images at offsets computed with set-based DataFrame transforms.

Algorithm (details in :mod:`image.spark.plan` and :mod:`image.spark.parts`):

1. Base: the latest image checkpoint (:mod:`image.checkpoints`) or stored snapshot at or before
   the offset (a snapshot wins a tie, as the reference engine loads it), else the empty image.
   Its rows become events at the base offset, so only the log tail after it is read.
2. Transactions: from the few marker records, a window finds the valid Begin/End/Abort and
   each transaction's span; an offset inside an open transaction is replaced by the offset
   before its Begin (image and provenance), aborted spans are filtered out.
3. Parts: per key (partition, broker, config key, ...), running windows in offset order fold the
   events into the key's state after each event (last non-null field, leader epoch = base +
   leader changes, partition epoch = base + changes, ...); anti-joins/windows flag records Kafka
   rejects (ReplayError naming the offset; lenient replay lists and skips them). The state of a
   key at target N is the one after its last event at or before N, unless its topic is gone.
4. Provenance: the last record at or before the (normalized) offset, control records included.

Several offsets are computed in one pass (:func:`replay_many`): events are tagged with the
first target at or after them and each state row is expanded to the targets it holds for.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import reduce
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from image.checkpoints import choose_base
from image.engine import ReplayedFrames, clamp, resolve_offset
from image.errors import ReplayError
from image.frames import SCHEMAS, canonical
from image.spark.plan import Base
from image.spark.run import PassResult, replay_pass
from metadata.lake import Lake, LakeState


@dataclass
class ImageSet:
    """Images at several offsets, from one or more passes; ``resolved`` maps each requested
    offset to the offset it was clamped to (the ``at`` of the rows); ``errors``: the records
    every pass rejected (each image's own are in ``frames(offset).errors``)."""

    resolved: dict[int | None, int]
    passes: list[PassResult]
    errors: tuple[ReplayError, ...]

    def part(self, name: str) -> DataFrame:
        """Image part ``name`` of every image (column ``at`` + the part's columns)."""
        return reduce(DataFrame.unionByName, [p.part(name) for p in self.passes])

    def frames(self, offset: int | None) -> ReplayedFrames:
        """The image at one of the requested offsets."""
        at = self.resolved[offset]
        source = next(p for p in self.passes if at in p.requested)
        frames = {name: source.part(name).where(F.col("at") == at).drop("at") for name in SCHEMAS}
        return ReplayedFrames(**frames, errors=source.errors_at(at))

    def to_json(self) -> dict[int | None, dict[str, Any]]:
        """Every image's JSON (one collect per pass), keyed by the offsets as requested."""
        rows: dict[int, dict[str, list[dict[str, Any]]]] = {}
        for p in self.passes:
            rows.update(p.rows())
        out = {}
        for offset, at in self.resolved.items():
            image = {part: rows[at].get(part, []) for part in SCHEMAS}
            prov = image.pop("provenance")[0]
            producer = image.pop("producerIds")
            features = {r["name"]: r["level"] for r in image.pop("features")}
            out[offset] = canonical({**prov, **image, "features": features,
                                     "producerIds": producer[0] if producer else {"nextProducerId": -1}})
        return out


def replay_many(lake: Lake, offsets: Iterable[int | None], *, lenient: bool = False,
                checkpoints: bool = True, state: LakeState | None = None) -> ImageSet:
    """Images at several offsets; one pass per base (offsets sharing a base share a pass)."""
    state = state or lake.state()
    wanted = list(offsets)
    resolved = {o: clamp(state, o) for o in wanted}
    groups: dict[tuple, tuple[Base, list[int]]] = {}
    for target in sorted(set(resolved.values())):
        base = choose_base(lake, state, target, use_checkpoints=checkpoints)
        groups.setdefault((base.kind, base.offset, base.snapshot), (base, []))[1].append(target)
    results = [replay_pass(lake, state, base, targets, lenient) for base, targets in groups.values()]
    errors = sorted({(e.offset, e.location, e.detail): e for r in results for e in r.errors}.values(),
                    key=lambda e: (e.offset if e.offset is not None else -1, e.location or ""))
    return ImageSet(resolved, results, tuple(errors))


def replay_frames(lake: Lake, offset: int | None = None, *, at_time: str | int | None = None,
                  lenient: bool = False, checkpoints: bool = True) -> ReplayedFrames:
    """The image at ``offset`` (None = end of the log) or at time ``at_time`` (ISO-8601 or
    epoch ms: the last offset of the last batch appended at or before it).

    Strict replay raises :class:`ReplayError` for the first record Kafka rejects (naming its
    offset); ``lenient`` skips such records and lists them in ``errors``. ``checkpoints``:
    start from the latest image checkpoint when it is later than the best snapshot.
    """
    state = lake.state()
    target = clamp(state, resolve_offset(lake, offset, at_time, state))
    return replay_many(lake, [target], lenient=lenient, checkpoints=checkpoints, state=state).frames(target)

