"""The schema and the per-release facts: ``records.json`` and ``releases.json`` as ``python -m
metadata.log.schema.update`` makes them from Kafka's own specs and classes, and the loaders' answers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from metadata.log.schema import SCHEMA_FILES, metadata_specs, schema_kafka_version
from metadata.log.schema.releases import first_release, kafka_release, kafka_releases, record_description
from metadata.log.schema.update import (
    OLDEST_LINE,
    ReleaseSpecs,
    UpdateError,
    check_control_key,
    convert_message,
    load_spec,
    newest_patches,
    render_records,
    render_releases,
    strip_comments,
    update,
)

SPECS = Path(__file__).resolve().parent / "fixtures" / "kafka-specs" / "4.4.0"
"""Kafka 4.4.0's spec files as its jars carry them (license header and ``//`` comments included)."""
RECORDS = json.loads(SCHEMA_FILES.joinpath("records.json").read_text())
RELEASES = json.loads(SCHEMA_FILES.joinpath("releases.json").read_text())


def test_comments_are_stripped_outside_strings_only():
    text = '// header\n{"a": "x // y", // trailing\n "b": "q\\"//"} // end'
    assert json.loads(strip_comments(text)) == {"a": "x // y", "b": 'q"//'}


def test_a_metadata_spec_converts_to_its_schema_entry():
    """Kafka's BrokerRegistrationChangeRecord.json (4.4.0) is the schema's entry: its ``about`` and hints dropped,
    its nullable tagged ``CordonedLogDirs`` with the default null as a JSON value."""
    spec = load_spec((SPECS / "BrokerRegistrationChangeRecord.json").read_text())
    name, valid, fields = convert_message(spec, "BrokerRegistrationChangeRecord.json")
    entry = next(m for m in RECORDS["metadata"] if m["apiKey"] == spec["apiKey"])
    assert {"apiKey": spec["apiKey"], "name": name, "validVersions": valid, "fields": fields} == entry
    assert fields[-1] == {
        "name": "CordonedLogDirs",
        "type": "[]uuid",
        "versions": "3+",
        "nullableVersions": "3+",
        "default": None,
        "taggedVersions": "3+",
        "tag": 3,
    }


def test_common_structs_are_inlined_where_used():
    spec = load_spec((SPECS / "LeaderChangeMessage.json").read_text())
    name, valid, fields = convert_message(spec, "LeaderChangeMessage.json")
    entry = next(c for c in RECORDS["control"] if c["name"] == name)
    assert (valid, fields) == (entry["validVersions"], entry["fields"])
    voter = [
        {"name": "VoterId", "type": "int32", "versions": "0+"},
        {"name": "VoterDirectoryId", "type": "uuid", "versions": "1+"},
    ]
    assert [f.get("fields") for f in fields] == [None, None, voter, voter]


def test_what_the_codec_cannot_read_is_refused():
    spec = load_spec((SPECS / "BrokerRegistrationChangeRecord.json").read_text())
    with pytest.raises(UpdateError, match="flexibleVersions '1\\+'"):
        convert_message(spec | {"flexibleVersions": "1+"}, "x")
    strange = spec | {"fields": [*spec["fields"], {"name": "X", "type": "int8", "versions": "4+", "nullable": True}]}
    with pytest.raises(UpdateError, match=r"BrokerRegistrationChangeRecord\.X: spec keys .*\['nullable'\]"):
        convert_message(strange, "x")


def test_the_control_key_is_the_layout_the_codec_reads():
    key = load_spec((SPECS / "ControlRecordTypeSchema.json").read_text())
    check_control_key(key)
    with pytest.raises(UpdateError, match="adapt decode_control_key"):
        check_control_key(key | {"validVersions": "0-1"})


def test_the_committed_files_are_what_the_renderers_write():
    """A regenerated file differs from the committed one only where Kafka's specs or classes changed."""
    schema = ReleaseSpecs(RECORDS["kafka"], RECORDS["metadata"], RECORDS["control"])
    assert render_records(schema) == SCHEMA_FILES.joinpath("records.json").read_text()
    assert render_releases(RELEASES["releases"]) == SCHEMA_FILES.joinpath("releases.json").read_text()


def test_the_newest_patch_of_each_line_is_read():
    published = ["3.8.1", "3.9.0", "3.9.2", "3.9.10", "4.0.0", "4.1.0", "4.1.2", "4.2.0", "4.3.0"]
    assert newest_patches(published, "4.2.0") == ["3.9.10", "4.0.0", "4.1.2", "4.2.0"]
    with pytest.raises(UpdateError, match="one release per line"):
        update("4.1.0", ["4.1.0", "4.0.0"])


def test_releases_cover_every_line_up_to_the_schemas_kafka():
    lines = [r.line for r in kafka_releases()]
    assert lines[0] == OLDEST_LINE
    assert all(int(b.split(".")[1]) == int(a.split(".")[1]) + 1 for a, b in zip(lines[1:], lines[2:]))
    newest = kafka_releases()[-1]
    assert newest.version == schema_kafka_version() == RECORDS["kafka"]
    assert newest.records == {k: s.valid_versions for k, s in metadata_specs().items()}
    for spec in metadata_specs().values():  # every version the schema decodes came with some release
        for version in range(spec.valid_versions.low, spec.valid_versions.high + 1):
            assert first_release(spec.key, version) is not None


def test_first_releases_and_descriptions():
    assert first_release(0, 4).line == "4.3" and first_release(17, 3).line == "4.3"
    assert first_release(29, 0).line == "4.4" and first_release(28, 0).line == "4.0"
    assert first_release(0, 5) is None
    assert record_description(0, 4) == "RegisterBrokerRecord v4 (Kafka 4.3+)"
    assert record_description(0, 0) == f"RegisterBrokerRecord v0 (Kafka {OLDEST_LINE} and older)"
    assert record_description(0, 5) == (
        f"RegisterBrokerRecord v5 (newer than Kafka {schema_kafka_version()}, which has v0-4)"
    )
    assert record_description(1, 1) == (
        f"UnregisterBrokerRecord v1 (newer than Kafka {schema_kafka_version()}, which has v0)"
    )
    assert (
        record_description(30, 0)
        == f"apiKey 30 v0 (newer than Kafka {schema_kafka_version()}, whose apiKeys end at 29)"
    )


def test_metadata_versions_and_config_checkers_per_release():
    old, new = kafka_release("4.1"), kafka_release("4.4")
    assert old.metadata_versions[27] == "4.1-IV1" and old.latest_production == 27
    assert new.metadata_versions[33] == "4.4-IV2" and new.latest_production == 33
    assert kafka_release("4.3").metadata_versions[30] == "4.3-IV0"
    assert old.supported_configs is None  # 4.1.2 replays every ConfigRecord
    checker = new.supported_configs
    assert checker is not None
    assert checker.is_supported(2, "retention.ms") and not checker.is_supported(2, "no.such.topic.config")
    assert checker.is_supported(4, "anything.at.all")  # BROKER: any name
    assert checker.is_supported(32, "consumer.session.timeout.ms") and checker.is_supported(16, "metrics")
    assert not checker.is_supported(8, "kafka.server.ReplicaManager")  # BROKER_LOGGER: not listed, none
    with pytest.raises(ValueError, match="3.8 is not a supported release line"):
        kafka_release("3.8")


@pytest.mark.kafka
@pytest.mark.slow  # six releases' jars from Maven Central (≈ 200 MB, minutes) unless cached
def test_the_script_regenerates_the_committed_files_from_maven_central(tmp_path):
    """Kafka's jars of the recorded releases give exactly the committed files (network, Maven and a JDK)."""
    versions = [r.version for r in kafka_releases()]
    update(schema_kafka_version(), versions, tmp_path)
    for name in ("records.json", "releases.json"):
        assert (tmp_path / name).read_text() == SCHEMA_FILES.joinpath(name).read_text()
