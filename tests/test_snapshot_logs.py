"""Snapshots count as log: a metadata directory truncated to its snapshot (Kafka's retention) and one whose
newest snapshot ends beyond its last segment (a node that fetched a snapshot) are read to the snapshot's last
contained offset and on, as Kafka's loader reads them — checked against Kafka's own images of the same files
(``kafka-images.json``, KraftOracle)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from image.temporal.reads import image_at
from image.temporal.sources import log_source
from image.temporal.window import image_offset
from replica.inputs import reference_changes_json, reference_delta

FIXTURES = Path(__file__).parent / "fixtures" / "kafka" / "4.1.1"


@pytest.mark.parametrize("name", ["retention", "snapshot-fetch"])
def test_kafkas_images_of_a_truncated_log(name: str) -> None:
    kafka = json.loads((FIXTURES / name / "kafka-images.json").read_text())
    source = log_source(FIXTURES / name / "__cluster_metadata-0")
    newest = max(s["endOffset"] for s in kafka["snapshots"]) - 1
    end = max(kafka["lastLogOffset"], newest)
    assert source.bounds() is not None and source.bounds()[1] == end
    assert image_offset(source) == end
    info = source.log_info()
    assert info.last_offset == end and info.missing_offsets == 0
    for expected in kafka["images"]:
        doc, errors = image_at(source, expected["offset"])
        assert json.loads(json.dumps(doc)) == expected and not errors, expected["offset"]


def test_a_snapshot_beyond_the_last_segment_is_the_end_of_the_log() -> None:
    source = log_source(FIXTURES / "snapshot-fetch" / "__cluster_metadata-0")
    kafka = json.loads((FIXTURES / "snapshot-fetch" / "kafka-images.json").read_text())
    last = kafka["images"][-1]
    assert last["offset"] > kafka["lastLogOffset"]  # the snapshot's last contained offset, past every record
    with pytest.raises(ValueError, match="beyond the end of the log"):
        image_offset(source, last["offset"] + 1)


@pytest.mark.parametrize("name", ["retention", "snapshot-fetch"])
def test_a_window_opening_before_the_oldest_snapshot_collects_it(name: str) -> None:
    """``changes``/``apply`` on a log cut by retention from before its oldest snapshot (where the image is
    empty or partial), or up to a snapshot past the log's last record: the ONE delta holds the snapshot's
    records, then the log's — its images at both ends are the temporal image's, and every partition of the end
    image is a local change of its replicas."""
    source = log_source(FIXTURES / name / "__cluster_metadata-0")
    oldest = min(s.end_offset for s in source.snapshots())
    first, end = source.bounds()
    last = source.record_at_or_before(end).offset
    assert first <= oldest  # the log holds no record before the segment holding its oldest snapshot's end
    ends = sorted({oldest - 1, min(oldest + 3, last), last, end})  # (snapshot-fetch: end, a snapshot past ``last``)
    seen = 0
    for a in sorted({-1, first - 1, first, oldest - 2}):
        for b in (b for b in ends if b >= a):
            start, _, end = reference_delta(source, a, b)
            assert start.to_json() == image_at(source, a)[0], (a, b)
            assert end.to_json() == image_at(source, b)[0], (a, b)
            changes = reference_changes_json(source, a, b)
            expected = {(r, p["topic"], p["partitionId"]) for p in end.to_json()["partitions"] for r in p["replicas"]}
            found = {
                (c["broker"], tp["topic"], tp["partitionId"])
                for c in changes["brokers"]
                for kind in ("leaders", "followers")
                for tp in c[kind]
            }
            assert found == expected, (a, b)
            seen += len(found)
    assert seen
