"""kraft-replay versus real Kafka, on the committed fixtures (tests/fixtures/kafka/<version>/<scenario>/).

* decoder:  ``metadata.readers.decode_path(path)`` must yield, for every record of every segment and
  snapshot file, the same offset / control type / record type / version / JSON payload as Kafka's
  ``kafka-dump-log --cluster-metadata-decoder`` (committed as dump-log*.txt);
* replay:   ``image.replay.replay_to(path, offset).to_json()`` must equal Kafka's own image (KraftOracle) at
  every recorded step and at the end of the log (while replay_to only accepts records, it gets the
  segment records as ``metadata.log.LogRecord``);
* changes:  ``replica.local_changes.local_changes_json(records, from, to, broker)`` must equal
  ``TopicsDelta.localChanges(broker)`` for every broker between consecutive steps.

Each test skips (with the reason) until the interface it needs exists.
"""
from __future__ import annotations

import importlib
import json

import pytest

from tests.harness import compare, tools
from tests.harness.testing import (
    all_fixtures,
    fixture_id,
    load_views,
    meta_dir,
    oracle_steps,
)

pytestmark = pytest.mark.kafka

FIXTURES = all_fixtures()


def _require(module: str, attr: str):
    try:
        mod = importlib.import_module(module)
    except ModuleNotFoundError as e:
        if e.name and (e.name == module or module.startswith(e.name + ".")):
            pytest.skip(f"{module} does not exist yet ({module}.{attr} not implemented)")
        raise
    fn = getattr(mod, attr, None)
    if fn is None:
        pytest.skip(f"{module}.{attr} is not implemented yet")
    return fn


def _as_dict(v):
    if hasattr(v, "to_json"):
        v = v.to_json()
    if isinstance(v, (str, bytes)):
        v = json.loads(v)
    # normalise tuples etc. through a JSON round trip
    return json.loads(json.dumps(v))


def _decoded(path):
    decode_path = _require("metadata.readers", "decode_path")
    return [dict(r) for r in decode_path(path)]


def _engine_records(md):
    """The log records (segments only, no snapshots) in the engines' own record type
    (``metadata.log.LogRecord`` via ``metadata.readers``), else the ``decode_path`` dicts."""
    readers = importlib.import_module("metadata.readers")
    if all(hasattr(readers, n) for n in ("discover", "iter_file_rows", "to_log_record", "ReadOptions")):
        issues: list = []
        out = []
        for f in readers.discover(md):
            for section, row in readers.iter_file_rows(f, issues, readers.ReadOptions()):
                if section == "log":
                    out.append(readers.to_log_record(row, f.path))
        return out
    return [r for r in _decoded(md) if r.get("section", "log") == "log"]


def _replay(replay_to, md, offset):
    """``replay_to(path, offset)`` per the interface; while the engine only takes records, its records."""
    try:
        return replay_to(md, offset)
    except TypeError:
        return replay_to(_engine_records(md), offset)


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
        problems.append(f"{file_label}: offsets differ: ours {[r['offset'] for r in ours][:20]}... "
                        f"kafka {[r['offset'] for r in kafka][:20]}... (counts {len(ours)} vs {len(kafka)})")
        return problems
    for o, k in zip(ours, kafka):
        where = f"{file_label} offset {k['offset']}"
        if k["control_type"] is not None or k["is_control"]:
            if o.get("control_type") != k["control_type"]:
                problems.append(f"{where}: control_type {o.get('control_type')!r} != kafka {k['control_type']!r}")
            if o.get("type") is not None:
                problems.append(f"{where}: control record has type {o.get('type')!r}")
            if o.get("data") is not None and k["control_data"] is not None and \
                    _as_dict(o["data"]) != k["control_data"]:
                problems.append(compare.loud_diff(where + " control data", k["control_data"], _as_dict(o["data"])))
        else:
            if o.get("control_type") is not None:
                problems.append(f"{where}: data record has control_type {o.get('control_type')!r}")
            if (o.get("type"), o.get("version")) != (k["type"], k["version"]):
                problems.append(f"{where}: type/version {(o.get('type'), o.get('version'))} != kafka "
                                f"{(k['type'], k['version'])}")
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
    _require("metadata.readers", "decode_path")
    md = meta_dir(fixture)
    kafka = _dump_records(fixture, "dump-log.txt")
    kafka.update(_dump_records(fixture, "dump-log-snapshots.txt"))
    files = tools.segment_files(md) + tools.checkpoint_files(md)
    problems = []
    for f in files:
        label = f"{md.name}/{f.name}"
        assert label in kafka, f"{label} not in the committed dump-log texts"
        problems += _compare_records(label, _decoded(f), kafka[label])
    assert not problems, "decoder != kafka-dump-log:\n" + "\n".join(problems)


@pytest.mark.parametrize("fixture", FIXTURES, ids=fixture_id)
def test_replay_matches_kafka_images(fixture):
    replay_to = _require("image.replay", "replay_to")
    res = oracle_steps(fixture)
    names = [s["name"] for s in load_views(fixture)["steps"]] + ["end-of-log"]
    md = meta_dir(fixture)
    failures = []
    for name, expected in zip(names, res["images"]):
        actual = _as_dict(_replay(replay_to, md, expected["offset"]))
        if actual != expected:
            failures.append(compare.loud_diff(f"{fixture_id(fixture)} image after step {name!r} at offset "
                                              f"{expected['offset']}", expected, actual))
    assert not failures, "".join(failures)


@pytest.mark.parametrize("fixture", FIXTURES, ids=fixture_id)
def test_local_changes_match_kafka(fixture):
    local_changes_json = _require("replica.local_changes", "local_changes_json")
    _require("metadata.readers", "decode_path")
    records = _engine_records(meta_dir(fixture))
    res = oracle_steps(fixture)
    failures = []
    for expected in res["changes"]:
        actual = _as_dict(local_changes_json(records, expected["fromOffset"], expected["toOffset"],
                                             expected["broker"]))
        if actual != expected:
            failures.append(compare.loud_diff(
                f"{fixture_id(fixture)} local changes of broker {expected['broker']} "
                f"{expected['fromOffset']}..{expected['toOffset']}", expected, actual))
    assert res["changes"], "oracle produced no local changes to compare"
    assert not failures, "".join(failures)
