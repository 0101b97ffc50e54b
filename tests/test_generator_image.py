"""The generated snapshot is exactly Kafka's MetadataImage at its end offset: loaded onto the empty
image (``image.loader``) it equals the reference replay of the log before it (``image.replay``),
including the topic configs a RemoveTopicRecord leaves behind (docs/replay-rules.md, "RemoveTopicRecord")."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from generator import LOG_DIR_NAME, generate
from generator.state import TopicConfigImage
from image.image import MetadataImage
from image.loader import load_snapshot
from image.replay import replay_to
from metadata.log.readers import ReadOptions, discover, iter_file_rows, to_log_record
from metadata.log.records import LogRecord

# (seed, brokers, topics, partitions, churn, snapshot_at): 16/3/3/1 leaves orphan configs in its snapshot
SHAPES = [
    (7, 5, 20, 6, 2000, 3000),
    (3, 4, 6, 3, 1500, 2500),
    (11, 3, 4, 2, 5000, 6000),
    (16, 3, 3, 1, 3000, 10**9),
    (23, 3, 3, 1, 3000, 5000),
]
ORPHAN_SHAPE = (16, 3, 3, 1, 3000, 10**9)


def _records(path: Path) -> list[LogRecord]:
    return [to_log_record(row) for f in discover(str(path)) for _, row in iter_file_rows(f, [], ReadOptions())]


def _generate(tmp_path: Path, shape: tuple[int, ...]) -> tuple[Path, Path]:
    seed, brokers, topics, partitions, churn, snapshot_at = shape
    generate(seed, brokers, topics, partitions, churn, tmp_path, snapshot_at=snapshot_at, write_aux_files=False)
    log_dir = tmp_path / LOG_DIR_NAME
    return log_dir, next(log_dir.glob("*.checkpoint"))


def _content(image: MetadataImage) -> dict[str, Any]:
    """The image as JSON without its provenance."""
    return {k: v for k, v in image.to_json().items() if k not in ("offset", "epoch", "timestamp")}


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "-".join(map(str, s[:5])))
def test_snapshot_is_the_image_of_the_log_prefix(tmp_path, shape):
    log_dir, snapshot = _generate(tmp_path, shape)
    end, epoch = int(snapshot.name[:20]), int(snapshot.name[21:31])
    segments = [r for f in sorted(log_dir.glob("*.log")) for r in _records(f)]
    from_log = replay_to(segments, end - 1)
    from_snapshot = load_snapshot(MetadataImage.EMPTY, _records(snapshot), end, epoch)
    assert _content(from_snapshot) == _content(from_log)
    assert from_snapshot.provenance.last_contained_offset == from_log.provenance.last_contained_offset


def test_snapshot_keeps_configs_set_in_the_delta_that_removes_the_topic(tmp_path):
    log_dir, snapshot = _generate(tmp_path, ORPHAN_SHAPE)
    snap = _records(snapshot)
    live = {r.data["name"] for r in snap if r.type == "TOPIC_RECORD"}
    orphans = {
        (r.data["resourceName"], r.data["name"])
        for r in snap
        if r.type == "CONFIG_RECORD" and r.data["resourceType"] == 2 and r.data["resourceName"] not in live
    }
    assert ("invoices-0048", "segment.bytes") in orphans and ("invoices-0048", "retention.ms") in orphans
    end = int(snapshot.name[:20])
    image = replay_to([r for f in sorted(log_dir.glob("*.log")) for r in _records(f)], end - 1)
    assert orphans <= {(c["resourceName"], c["name"]) for c in image.to_json()["configs"]}


def test_topic_config_image_follows_configurations_delta():
    image = TopicConfigImage()
    image.replay(0, "a", "k1", "v1")
    image.end_delta(0)
    image.replay(1, "a", "k2", "v2")  # set in the delta that removes "a", whose base has k1: deleted
    image.replay(2, "a", None, None)
    image.replay(3, "b", "k1", "v1")  # "b" has no base configs: its keys survive the removal
    image.replay(4, "b", "k2", "v2")
    image.replay(5, "b", "k2", None)
    image.replay(6, "b", None, None)
    image.replay(7, "c", "k1", "v1")  # next delta: not applied yet
    image.end_delta(6)
    assert image.data == {"b": {"k1": "v1"}}
    assert image.orphans({}) == {"b": {"k1": "v1"}}
    assert image.orphans({(2, "b"): {"k1": "v1"}}) == {}
    image.end_delta(7)
    image.replay(8, "b", None, None)  # now in the base image: deleted
    image.end_delta(8)
    assert image.data == {"c": {"k1": "v1"}}
