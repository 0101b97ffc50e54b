"""Image checkpoints: placement, checkpoint + tail = full replay, incremental and crash-safe
writes, validity, lenient checkpoints."""

from __future__ import annotations

from pathlib import Path

import pytest
from pyspark.sql import functions as F

from image import checkpoints
from image.errors import ReplayError
from image.spark.transactions import transactions
from image.spark_engine import replay_frames, replay_many
from metadata.generator import generate
from metadata.lake import Lake
from tests.test_spark_engine import broken_log, diff, make_lake, reference, write_log

pytestmark = pytest.mark.spark

EVERY = 700


@pytest.fixture(scope="module")
def lake(spark, tmp_path_factory) -> Lake:
    root = tmp_path_factory.mktemp("checkpoints")
    generate(31, 4, 6, 3, 500, root / "gen", snapshot_at=1500, segment_bytes=65536)
    return make_lake(spark, root, [root / "gen" / "__cluster_metadata-0"])


def test_checkpoint_offsets_are_batch_ends_outside_transactions(lake: Lake) -> None:
    state = lake.state()
    offsets = checkpoints.checkpoint_offsets(lake, state, EVERY)
    end = state.high_water_mark
    assert offsets and offsets == sorted(set(offsets)) and offsets[-1] <= end
    batch_last = {r["offset"]: r["batch_last_offset"] for r in lake.table("records", state)
                  .where(F.col("offset").isin(*offsets)).collect()}
    assert all(batch_last[o] == o for o in offsets)
    txns, _ = transactions(lake.table("records", state), -1, end)
    assert not [(o, t) for o in offsets for t in txns if t.begin <= o and (t.close is None or o < t.close)]
    for multiple in range(EVERY, end + 1, EVERY):  # every multiple is covered by the next checkpoint
        assert any(multiple <= o < multiple + EVERY for o in offsets) or multiple > offsets[-1] - EVERY


def test_checkpoint_and_tail_equal_full_replay(lake: Lake, monkeypatch) -> None:
    state = lake.state()
    wanted = checkpoints.checkpoint_offsets(lake, state, EVERY)
    # a run that dies before its index commit leaves no visible checkpoint
    def crash(*_: object) -> None:
        raise RuntimeError("crash")

    monkeypatch.setattr(checkpoints, "_write_index", crash)
    with pytest.raises(RuntimeError, match="crash"):
        checkpoints.checkpoint(lake, EVERY)
    assert checkpoints.listed(lake) == []
    monkeypatch.undo()

    assert checkpoints.checkpoint(lake, EVERY) == wanted
    assert checkpoints.checkpoint(lake, EVERY) == []  # incremental: nothing missing
    assert [c.offset for c in checkpoints.listed(lake)] == wanted
    # the crashed run's rows were replaced, not duplicated
    prov = lake.spark.read.format("delta").load(checkpoints.path(lake, "provenance"))
    assert sorted(r["checkpoint_offset"] for r in prov.collect()) == wanted

    end = state.high_water_mark
    probes = sorted({wanted[1], wanted[1] + 5, end})  # two bases: the second checkpoint, the latest
    for offset in probes:
        base = checkpoints.choose_base(lake, state, offset)
        snapshot = checkpoints.snapshot_base(lake, state, offset)
        latest = max(c for c in wanted if c <= offset)
        assert base.offset == max(latest, snapshot.offset if snapshot else -1)
        assert base.kind == ("checkpoint" if base.offset == latest and latest != (snapshot.offset if snapshot
                                                                                   else None) else "snapshot")
    with_checkpoints = replay_many(lake, probes, checkpoints=True).to_json()
    problems = [f"offset {o}: {d}" for o, (want, _) in reference(lake, probes).items()
                for d in diff(want, with_checkpoints[o])]
    assert not problems, "\n".join(problems)


def test_validity_follows_the_records_before_the_checkpoint(lake: Lake) -> None:
    state = lake.state()
    checkpoints.checkpoint(lake, EVERY)
    first = checkpoints.listed(lake)[0]
    assert checkpoints.is_valid(lake, state, first)
    moved = checkpoints.Checkpoint(first.offset, first.epoch, first.timestamp, -1, first.records_upto, ())
    assert checkpoints.is_valid(lake, state, moved)  # another records version, same records up to it
    stale = checkpoints.Checkpoint(first.offset, first.epoch, first.timestamp, -1, first.records_upto - 1, ())
    assert not checkpoints.is_valid(lake, state, stale)


def test_lenient_checkpoints_remember_skipped_records(spark, tmp_path_factory) -> None:
    root = tmp_path_factory.mktemp("broken-checkpoints")
    broken = make_lake(spark, root, [write_log(broken_log(), root / "log")])
    with pytest.raises(ReplayError) as error:
        checkpoints.checkpoint(broken, 10)
    assert error.value.offset == 5 and checkpoints.listed(broken) == []
    added = checkpoints.checkpoint(broken, 10, lenient=True)
    assert added == [10, 21, 30]  # ends of the batches holding 10, 20 and 30
    with pytest.raises(ReplayError) as error:
        replay_frames(broken, 25)
    assert error.value.offset == 5
    from_checkpoint = replay_frames(broken, 25, lenient=True)
    want, errors = reference(broken, [25], lenient=True)[25]
    assert from_checkpoint.to_json() == want
    assert [(e.offset, e.record_type) for e in from_checkpoint.errors] == [(e.offset, e.record_type) for e in errors]
