"""The log-state fixtures (tests/fixtures/kafka/4.1.1/retention and snapshot-fetch, see their README.md):
metadata directories a real Kafka node left after its snapshot retention, and after fetching a snapshot from
the controller. The fast tests check that the files are what the READMEs say, from the file names and
Kafka's own dump-log texts; the real-Kafka tests check that those texts and ``kafka-images.json`` are
what Kafka's DumpLogSegments and replay (KraftOracle) give for the committed files now."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.harness import compare, oracle, tools
from tests.harness.scenarios import kafka_image_offsets, snapshot_id
from tests.harness.testing import FIXTURES_ROOT, fixture_dist, meta_dir

RETENTION = FIXTURES_ROOT / "4.1.1" / "retention"
SNAPSHOT_FETCH = FIXTURES_ROOT / "4.1.1" / "snapshot-fetch"
LOG_STATES = [RETENTION, SNAPSHOT_FETCH]


def _records(fixture: Path) -> list[dict]:
    """Kafka's dump-log records of the fixture's segments (control records included)."""
    return list(compare.parse_dump_log((fixture / "dump-log.txt").read_text()))


def _newest_snapshot(fixture: Path) -> tuple[int, int]:
    return snapshot_id(tools.checkpoint_files(meta_dir(fixture))[-1])


def _segment_bases(fixture: Path) -> list[int]:
    return [int(p.stem) for p in tools.segment_files(meta_dir(fixture))]


@pytest.mark.parametrize("fixture", LOG_STATES, ids=lambda p: p.name)
def test_log_state_fixture_is_small_and_has_no_views(fixture: Path) -> None:
    """Not picked up by the view-based fixture tests (no views.json); a few hundred KB at most."""
    assert not (fixture / "views.json").exists()
    assert (fixture / "README.md").is_file() and (fixture / "kafka-images.json").is_file()
    assert sum(p.stat().st_size for p in fixture.rglob("*") if p.is_file()) < 400_000
    meta = json.loads((fixture / "meta.json").read_text())
    assert meta["kafkaVersion"] == "4.1.1" and meta["scenario"] == fixture.name
    assert sorted(meta["files"]) == sorted(p.name for p in meta_dir(fixture).iterdir())


def test_retention_fixture_is_the_log_from_the_newest_snapshot_on() -> None:
    """Retention deleted segment 0 and every segment wholly below the newest snapshot; the segments left
    start at or before the snapshot's end offset and hold records past it."""
    end, _ = _newest_snapshot(RETENTION)
    bases = _segment_bases(RETENTION)
    records = _records(RETENTION)
    assert bases and bases[0] > 0 and bases[0] <= end
    assert records[0]["offset"] == bases[0] and records[-1]["offset"] >= end
    assert [r["offset"] for r in records] == list(range(bases[0], records[-1]["offset"] + 1))
    assert all(snapshot_id(p)[0] > bases[0] for p in tools.checkpoint_files(meta_dir(RETENTION)))
    assert [snapshot_id(p) for p in tools.checkpoint_files(meta_dir(RETENTION))] == [(135, 1)] and bases == [131]
    assert {r["type"] for r in records} == {"NO_OP_RECORD"} and records[-1]["offset"] == 138


def test_snapshot_fetch_fixture_snapshot_ends_beyond_the_log() -> None:
    """The fetched snapshot ends beyond every record in the segments, with offsets between that only the
    snapshot covers: the broker's log ended at 17 when it hung, the controller's log start moved to 27."""
    snapshots = [snapshot_id(p) for p in tools.checkpoint_files(meta_dir(SNAPSHOT_FETCH))]
    records = _records(SNAPSHOT_FETCH)
    end = snapshots[-1][0]
    assert records and records[-1]["offset"] + 1 < end
    assert snapshots == [(11, 1), (27, 1)] and _segment_bases(SNAPSHOT_FETCH) == [11]
    assert [r["offset"] for r in records] == list(range(11, 18))


@pytest.mark.parametrize("fixture", LOG_STATES, ids=lambda p: p.name)
def test_kafka_images_are_at_every_snapshot_and_at_the_last_record(fixture: Path) -> None:
    doc = json.loads((fixture / "kafka-images.json").read_text())
    snapshots, last, offsets = kafka_image_offsets(fixture)
    assert doc["snapshots"] == [{"endOffset": end, "epoch": epoch} for end, epoch in snapshots]
    assert doc["lastLogOffset"] == last == _records(fixture)[-1]["offset"]
    assert [image["offset"] for image in doc["images"]] == offsets
    assert offsets[-1] == max(snapshots[-1][0] - 1, last)


@pytest.mark.kafka
@pytest.mark.parametrize("fixture", LOG_STATES, ids=lambda p: p.name)
def test_committed_texts_and_images_are_kafkas_output(fixture: Path) -> None:
    dist = fixture_dist(fixture)
    md = meta_dir(fixture)
    assert tools.dump_log(dist, tools.segment_files(md), cwd=fixture) == (fixture / "dump-log.txt").read_text()
    assert (
        tools.dump_log(dist, tools.checkpoint_files(md), cwd=fixture)
        == (fixture / "dump-log-snapshots.txt").read_text()
    )
    doc = json.loads((fixture / "kafka-images.json").read_text())
    assert [oracle.image(dist, md, image["offset"]) for image in doc["images"]] == doc["images"]
