"""Property tests on random logs: the in-place loader equals naive per-batch ``delta.apply``,
published images never change, and loading a snapshot of image X onto any image yields X."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from hypothesis import HealthCheck, assume, given, settings

from image.delta import MetadataDelta
from image.errors import ReplayError
from image.image import MetadataImage
from image.loader import MetadataLoader, load_snapshot
from image.provenance import MetadataProvenance
from image.replay import replay_to
from metadata.log.records import LogRecord
from tests.logbuilder import LogBuilder
from tests.logstrategies import Body, batch_lists, build_log, snapshot_bodies


def naive_images(records: list[LogRecord]) -> tuple[dict[int, MetadataImage], list[int]]:
    """Kafka's path without sharing: one MetadataDelta per batch, ``apply`` after every record."""
    images: dict[int, MetadataImage] = {}
    errors: list[int] = []
    image = MetadataImage.EMPTY
    delta = MetadataDelta(image)
    for record in records:
        if not record.is_control:
            try:
                delta.replay(record)
            except ReplayError:
                errors.append(record.offset)
        aligned = record.offset == record.batch_last_offset
        provenance = MetadataProvenance(record.offset, record.epoch, record.timestamp, aligned)
        images[record.offset] = delta.apply(provenance)
        if aligned:
            image = images[record.offset]
            delta = MetadataDelta(image)
    return images, errors


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batch_lists)
def test_loader_equals_naive_per_batch_apply(batches: list[list[Body]]) -> None:
    records = build_log(batches)
    expected, expected_errors = naive_images(records)
    loader = MetadataLoader(lenient=True)
    seen: list[tuple[MetadataImage, dict[str, Any]]] = []
    for record in records:
        loader.replay(record)
        image = loader.image()
        assert image == expected[record.offset]
        assert image.provenance == expected[record.offset].provenance
        seen.append((image, image.to_json()))
    assert [error.offset for error in loader.errors] == expected_errors
    for image, json in seen:  # later in-place applies must not leak into published images
        assert image.to_json() == json
    last = records[-1].offset
    assert replay_to(records, last // 2, lenient=True) == expected[last // 2]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batch_lists, batch_lists)
def test_snapshot_of_an_image_loads_onto_any_image(target_log: list[list[Body]], other_log: list[list[Body]]) -> None:
    target = replay_to(build_log(target_log), lenient=True)
    topic_names = [t.name for t in target.topics.topics_by_id.values()]
    assume(len(topic_names) == len(set(topic_names)))  # a snapshot cannot carry a name collision
    other = replay_to(build_log(other_log), lenient=True)
    snapshot = LogBuilder()
    snapshot.control(
        "SNAPSHOT_HEADER", {"version": 0, "lastContainedLogTimestamp": target.provenance.last_contained_log_time_ms}
    )
    snapshot.batch(*snapshot_bodies(target))
    end_offset, epoch = target.provenance.snapshot_id()
    for base in (MetadataImage.EMPTY, other):
        loaded = load_snapshot(base, snapshot.records, end_offset, epoch)
        assert loaded.errors == ()
        assert loaded.to_json() == target.to_json()
        expected = replace(target, provenance=replace(target.provenance, is_offset_batch_aligned=True))
        # Kafka keeps a stale name entry when a snapshot re-declares a base topic id under another
        # name (TopicsDelta.apply never removes the old name), so compare the id map only.
        assert loaded.topics.topics_by_id == expected.topics.topics_by_id
        assert replace(loaded, topics=expected.topics) == expected
