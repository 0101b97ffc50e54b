"""kraft-replay versus real Kafka, on the committed fixtures (tests/fixtures/kafka/<version>/<scenario>/).

* decoder:  ``metadata.log.readers.decode_path(path)`` must yield, for every record of every segment and
  snapshot file, the same offset / control type / record type / version / JSON payload as Kafka's
  ``kafka-dump-log --cluster-metadata-decoder`` (committed as dump-log*.txt);
* replay:   ``image.replay.replay_to(records, offset, rules=...).to_json()`` on the segment records
  (``metadata.log.readers.read_log``) must equal Kafka's own image (KraftOracle) at every recorded step
  and at the end of the log;
* changes:  ``replica.local_changes.local_changes_json(records, from, to, broker, rules=...)`` must equal
  ``TopicsDelta.localChanges(broker)`` for every broker between consecutive steps.

Each fixture is replayed with the rules of the release line that wrote it (``image.release.rules_for``) and
compared with Kafka's own classes of that line (``tests.harness.testing.fixture_dist``).

The project functions are imported directly: a missing or renamed one is an error, never a skip.
The tests that run Kafka's classes skip only when java/javac/mvn are missing (with that reason).
"""

from __future__ import annotations

import json

import pytest

from image.release import rules_for
from image.replay import replay_to
from metadata.log.readers import decode_path, read_log
from replica.local_changes import local_changes_json
from tests.harness import compare, tools
from tests.harness.testing import (
    all_fixtures,
    fixture_id,
    fixture_release,
    load_views,
    meta_dir,
    oracle_steps,
)

pytestmark = pytest.mark.kafka

FIXTURES = all_fixtures()


def _as_dict(v):
    """``v`` as Kafka's JSON reads back (tuples become lists)."""
    return json.loads(json.dumps(v))


def _dump_records(fixture, name: str) -> dict[str, list[dict]]:
    per_file: dict[str, list[dict]] = {}
    f = fixture / name
    if f.exists():
        for r in compare.parse_dump_log(f.read_text()):
            per_file.setdefault(r["file"], []).append(r)
    return per_file


def _compare_records(file_label: str, ours: list[dict], kafka: list[dict]) -> list[str]:
    problems = []
    if [r["offset"] for r in ours] != [r["offset"] for r in kafka]:
        problems.append(
            f"{file_label}: offsets differ: ours {[r['offset'] for r in ours][:20]}... "
            f"kafka {[r['offset'] for r in kafka][:20]}... (counts {len(ours)} vs {len(kafka)})"
        )
        return problems
    for o, k in zip(ours, kafka):
        where = f"{file_label} offset {k['offset']}"
        if k["control_type"] is not None or k["is_control"]:
            if o.get("control_type") != k["control_type"]:
                problems.append(f"{where}: control_type {o.get('control_type')!r} != kafka {k['control_type']!r}")
            if o.get("type") is not None:
                problems.append(f"{where}: control record has type {o.get('type')!r}")
            if o.get("data") is not None and k["control_data"] is not None and _as_dict(o["data"]) != k["control_data"]:
                problems.append(compare.loud_diff(where + " control data", k["control_data"], _as_dict(o["data"])))
        else:
            if o.get("control_type") is not None:
                problems.append(f"{where}: data record has control_type {o.get('control_type')!r}")
            if (o.get("type"), o.get("version")) != (k["type"], k["version"]):
                problems.append(
                    f"{where}: type/version {(o.get('type'), o.get('version'))} != kafka {(k['type'], k['version'])}"
                )
            elif _as_dict(o.get("data")) != k["data"]:
                problems.append(compare.loud_diff(f"{where} {k['type']} payload", k["data"], _as_dict(o.get("data"))))
        if o.get("timestamp") is not None and o["timestamp"] != k["timestamp"]:
            problems.append(f"{where}: timestamp {o['timestamp']} != kafka CreateTime {k['timestamp']}")
        if len(problems) > 30:
            problems.append("... (stopping after 30 problems)")
            break
    return problems


@pytest.mark.parametrize("fixture", FIXTURES, ids=fixture_id)
def test_decoder_matches_kafka_dump_log(fixture):
    md = meta_dir(fixture)
    kafka = _dump_records(fixture, "dump-log.txt")
    kafka.update(_dump_records(fixture, "dump-log-snapshots.txt"))
    files = tools.segment_files(md) + tools.checkpoint_files(md)
    problems = []
    for f in files:
        label = f"{md.name}/{f.name}"
        assert label in kafka, f"{label} not in the committed dump-log texts"
        problems += _compare_records(label, list(decode_path(f)), kafka[label])
    assert not problems, "decoder != kafka-dump-log:\n" + "\n".join(problems)


@pytest.mark.parametrize("fixture", FIXTURES, ids=fixture_id)
def test_replay_matches_kafka_images(fixture):
    res = oracle_steps(fixture)
    names = [s["name"] for s in load_views(fixture)["steps"]] + ["end-of-log"]
    records = read_log(meta_dir(fixture))
    rules = rules_for(fixture_release(fixture))
    failures = []
    for name, expected in zip(names, res["images"]):
        actual = _as_dict(replay_to(records, expected["offset"], rules=rules).to_json())
        if actual != expected:
            failures.append(
                compare.loud_diff(
                    f"{fixture_id(fixture)} image after step {name!r} at offset {expected['offset']}", expected, actual
                )
            )
    assert not failures, "".join(failures)


@pytest.mark.parametrize("fixture", FIXTURES, ids=fixture_id)
def test_local_changes_match_kafka(fixture):
    records = read_log(meta_dir(fixture))
    rules = rules_for(fixture_release(fixture))
    res = oracle_steps(fixture)
    failures = []
    for expected in res["changes"]:
        actual = _as_dict(
            local_changes_json(records, expected["fromOffset"], expected["toOffset"], expected["broker"], rules=rules)
        )
        if actual != expected:
            failures.append(
                compare.loud_diff(
                    f"{fixture_id(fixture)} local changes of broker {expected['broker']} "
                    f"{expected['fromOffset']}..{expected['toOffset']}",
                    expected,
                    actual,
                )
            )
    assert res["changes"], "oracle produced no local changes to compare"
    assert not failures, "".join(failures)
