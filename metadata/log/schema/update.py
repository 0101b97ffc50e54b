"""Regenerate ``records.json`` and ``releases.json`` from Kafka's own jars on Maven Central.

    python -m metadata.log.schema.update --kafka 4.4.0

* ``records.json`` (the schema) is converted from Kafka's message specs of the ``--kafka`` release:
  ``common/metadata/*.json`` of ``kafka-metadata-<v>.jar`` and the KRaft control record bodies of
  ``kafka-clients-<v>.jar`` (``common/message/{LeaderChangeMessage,...}.json``). Kafka's ``//`` comments,
  ``about`` texts and code-generation hints are dropped; defaults become JSON values.
* ``releases.json`` holds per Kafka release line (from :data:`OLDEST_LINE` to the ``--kafka`` one; the newest
  patch of each unless ``--release`` names them): the record versions its jar knows, its metadata.version
  levels and names and its latest production level (``MetadataVersion``), and the config names its
  ``DefaultSupportedConfigChecker`` accepts (4.3+). The last two live in Java code: a small program
  (``ReleaseFacts.java``) prints them, run with the release's jars that Maven resolves. kraft-replay never
  needs Java at run time; only this script does.

Jars are cached under ``$KRAFT_REPLAY_CACHE`` (default ``~/.cache/kraft-replay``), never in the repository:
``kafka-jars/`` (downloaded over HTTPS from Maven Central, or with ``mvn dependency:copy`` when that fails),
``m2/`` (Maven's local repository) and ``release-facts/<version>/`` (the class path of each release).
See docs/records.md, "Keeping the schema current".
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import urllib.request
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from metadata.log.cache import cache_root
from metadata.log.schema import CONTROL_TYPE_NAMES, PRIMITIVES

MAVEN = "https://repo1.maven.org/maven2/org/apache/kafka"
OLDEST_LINE = "3.9"
"""The oldest Kafka release line kraft-replay supports; ``releases.json`` starts there."""
SCHEMA_DIR = Path(__file__).parent
CONTROL_BODIES = {
    "LEADER_CHANGE": "LeaderChangeMessage",
    "SNAPSHOT_HEADER": "SnapshotHeaderRecord",
    "SNAPSHOT_FOOTER": "SnapshotFooterRecord",
    "KRAFT_VERSION": "KRaftVersionRecord",
    "KRAFT_VOTERS": "VotersRecord",
}
"""The KRaft control types (Kafka's ``ControlRecordType``, ids in ``CONTROL_TYPE_NAMES``) and the specs of their
bodies in ``kafka-clients``. ABORT and COMMIT markers have a fixed body and no spec."""
CONTROL_KEY_SPEC = "ControlRecordTypeSchema"
"""The control record key's spec (Kafka 4.4+); checked to be the layout the codec reads (version, type)."""
_FIELD_KEYS = ("name", "type", "versions", "nullableVersions", "default", "taggedVersions", "tag", "fields")
_IGNORED_FIELD_KEYS = {"about", "entityType", "mapKey", "ignorable", "zeroCopy", "flexibleVersions"}
_INTEGERS = {"int8", "int16", "uint16", "int32", "uint32", "int64"}
_VERSION = re.compile(r"(\d+)\.(\d+)\.(\d+)")


class UpdateError(RuntimeError):
    """Something this script cannot do or does not understand (a new kind of spec, a missing tool)."""


def release_line(version: str) -> str:
    """``4.3.2`` → ``4.3``."""
    m = _VERSION.fullmatch(version)
    if not m:
        raise UpdateError(f"not a Kafka release version: {version!r} (expected e.g. 4.4.0)")
    return f"{m.group(1)}.{m.group(2)}"


def _line_key(line: str) -> tuple[int, int]:
    major, minor = line.split(".")
    return int(major), int(minor)


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split("."))


# ---------------------------------------------------------------- Maven Central


def _download(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=60) as response:  # noqa: S310 — a fixed https URL
        return response.read()


def published_versions() -> list[str]:
    """The Kafka releases on Maven Central (``kafka-metadata``'s maven-metadata.xml), oldest first."""
    text = _download(f"{MAVEN}/kafka-metadata/maven-metadata.xml").decode()
    found = {v for v in re.findall(r"<version>([^<]+)</version>", text) if _VERSION.fullmatch(v)}
    return sorted(found, key=_version_key)


def newest_patches(versions: Sequence[str], kafka: str) -> list[str]:
    """The newest patch of each release line from :data:`OLDEST_LINE` to ``kafka``'s (``kafka`` itself for its own
    line)."""
    top = _line_key(release_line(kafka))
    newest: dict[str, str] = {}
    for v in versions:
        line = release_line(v)
        if _line_key(OLDEST_LINE) <= _line_key(line) < top:
            newest[line] = max(newest.get(line, v), v, key=_version_key)
    return [newest[line] for line in sorted(newest, key=_line_key)] + [kafka]


def _mvn() -> str:
    mvn = shutil.which("mvn")
    if not mvn:
        raise UpdateError("Maven ('mvn') is not on PATH")
    return mvn


def fetch_jar(artifact: str, version: str) -> Path:
    """``org.apache.kafka:<artifact>:<version>`` in the cache: over HTTPS from Maven Central (checked against its
    SHA-1), else with ``mvn dependency:copy``."""
    target = cache_root() / "kafka-jars" / f"{artifact}-{version}.jar"
    if target.exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    url = f"{MAVEN}/{artifact}/{version}/{artifact}-{version}.jar"
    try:
        data = _download(url)
        want = _download(url + ".sha1").decode().split()[0]
        if hashlib.sha1(data).hexdigest() != want:  # noqa: S324 — Maven Central's checksum
            raise UpdateError(f"{url}: SHA-1 does not match {url}.sha1")
        partial = target.with_suffix(".part")
        partial.write_bytes(data)
        partial.rename(target)
    except OSError as exc:
        print(f"{url}: {exc}; trying mvn dependency:copy", file=sys.stderr)
        _run_mvn(
            [
                "dependency:copy",
                f"-Dartifact=org.apache.kafka:{artifact}:{version}",
                f"-DoutputDirectory={target.parent}",
            ]
        )
    return target


def _run_mvn(args: list[str], pom: Path | None = None) -> None:
    cmd = [_mvn(), "-B", "-q", f"-Dmaven.repo.local={cache_root() / 'm2'}", *(["-f", str(pom)] if pom else []), *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise UpdateError(f"{' '.join(cmd)} failed:\n{(proc.stdout + proc.stderr)[-3000:]}")


def release_classpath(version: str) -> Path:
    """The runtime class path of ``kafka-server`` (MetadataVersion, the config checker and what they load),
    resolved by Maven into the cache; its directory of jars."""
    home = cache_root() / "release-facts" / version
    lib = home / "lib"
    if (home / ".complete").exists():
        return lib
    home.mkdir(parents=True, exist_ok=True)
    pom = home / "pom.xml"
    pom.write_text(
        f"""<?xml version="1.0" encoding="UTF-8"?>
<!-- generated by metadata/log/schema/update.py -->
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>kraft-replay.schema</groupId>
  <artifactId>kafka-{version}-release-facts</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka-server</artifactId><version>{version}</version></dependency>
  </dependencies>
</project>
"""
    )
    shutil.rmtree(lib, ignore_errors=True)
    _run_mvn(["dependency:copy-dependencies", f"-DoutputDirectory={lib}", "-DincludeScope=runtime"], pom)
    (home / ".complete").write_text(version + "\n")
    return lib


def release_facts(version: str) -> dict[str, Any]:
    """What ``ReleaseFacts.java`` prints for ``version``: metadata.version levels, the latest production level,
    the supported config names (or None)."""
    for tool in ("javac", "java"):
        if not shutil.which(tool):
            raise UpdateError(f"'{tool}' is not on PATH (a JDK 17+ is needed to read Kafka's MetadataVersion)")
    lib = release_classpath(version)
    classes = cache_root() / "release-facts" / "classes"
    source = SCHEMA_DIR / "ReleaseFacts.java"
    compiled = classes / "ReleaseFacts.class"
    if not compiled.exists() or compiled.stat().st_mtime < source.stat().st_mtime:
        classes.mkdir(parents=True, exist_ok=True)
        subprocess.run(["javac", "-nowarn", "-d", str(classes), str(source)], check=True, capture_output=True)
    proc = subprocess.run(
        ["java", "-cp", f"{classes}{os.pathsep}{lib}/*", "ReleaseFacts"], capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        raise UpdateError(f"ReleaseFacts failed on Kafka {version}:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout)


# ---------------------------------------------------------------- Kafka's specs → the schema's vocabulary


def strip_comments(text: str) -> str:
    """Kafka's spec text without its ``//`` line comments (outside strings)."""
    out = []
    for line in text.splitlines():
        in_string = False
        i = 0
        while i < len(line):
            c = line[i]
            if in_string and c == "\\":
                i += 2
                continue
            if c == '"':
                in_string = not in_string
            elif not in_string and line.startswith("//", i):
                line = line[:i]
                break
            i += 1
        out.append(line)
    return "\n".join(out)


def load_spec(text: str) -> dict[str, Any]:
    """A Kafka message spec (JSON with comments)."""
    return json.loads(strip_comments(text))


def _default(value: str, type_: str, where: str) -> Any:
    """A spec's ``default`` (always a string in Kafka's specs) as the JSON value the schema holds."""
    if value == "null":
        return None
    if type_ in _INTEGERS:
        return int(value, 16) if value.lower().startswith("0x") else int(value)
    if type_ == "bool":
        if value not in ("true", "false"):
            raise UpdateError(f"{where}: bool default {value!r}")
        return value == "true"
    if type_ == "float64":
        return float(value)
    if type_ == "string":
        return value
    raise UpdateError(f"{where}: a default {value!r} for type {type_} is not supported")


def convert_field(raw: dict[str, Any], structs: dict[str, list[dict[str, Any]]], where: str) -> dict[str, Any]:
    """One field of a Kafka spec in the schema's vocabulary; struct types get their ``fields`` (inline, or from the
    spec's ``commonStructs``)."""
    where = f"{where}.{raw['name']}"
    unknown = set(raw) - set(_FIELD_KEYS) - _IGNORED_FIELD_KEYS
    if unknown:
        raise UpdateError(f"{where}: spec keys this script does not know: {sorted(unknown)}")
    type_ = raw["type"]
    element = type_[2:] if type_.startswith("[]") else type_
    field: dict[str, Any] = {}
    for key in _FIELD_KEYS:
        if key not in raw or key == "fields":
            continue
        value = raw[key]
        if key == "default":
            if type_.startswith("[]") and value != "null":
                raise UpdateError(f"{where}: array default {value!r}")
            value = _default(str(value), type_, where)
        field[key] = value
    if element not in PRIMITIVES:
        members = raw.get("fields", structs.get(element))
        if members is None:
            raise UpdateError(f"{where}: struct type {element} has no fields")
        field["fields"] = [convert_field(m, structs, where) for m in members]
    return field


def convert_message(spec: dict[str, Any], where: str) -> tuple[str, str, list[dict[str, Any]]]:
    """(name, validVersions, fields) of a Kafka message spec whose every version is flexible."""
    if spec.get("flexibleVersions") != "0+":
        raise UpdateError(
            f"{where}: flexibleVersions {spec.get('flexibleVersions')!r}; the codec reads only flexible versions"
        )
    structs = {s["name"]: s["fields"] for s in spec.get("commonStructs", ())}
    fields = [convert_field(f, structs, spec["name"]) for f in spec["fields"]]
    return spec["name"], str(spec["validVersions"]), fields


def check_control_key(spec: dict[str, Any]) -> None:
    """The control record key is what ``decode_control_key`` reads: an int16 version, then the int16 type."""
    fields = [(f["name"], f["type"], f["versions"]) for f in spec["fields"]]
    if str(spec["validVersions"]) != "0" or fields != [("Type", "int16", "0+")]:
        raise UpdateError(f"{CONTROL_KEY_SPEC} changed ({spec['validVersions']}: {fields}): adapt decode_control_key")


@dataclass(frozen=True)
class ReleaseSpecs:
    """The message specs of one Kafka release, converted."""

    version: str
    metadata: list[dict[str, Any]]  # {"apiKey", "name", "validVersions", "fields"} by apiKey
    control: list[dict[str, Any]]  # {"controlType", "name", "type", "validVersions", "fields"} by control type


def read_specs(version: str) -> ReleaseSpecs:
    """The metadata record specs of ``kafka-metadata-<version>.jar`` and the control record bodies of
    ``kafka-clients-<version>.jar``."""
    metadata = []
    with zipfile.ZipFile(fetch_jar("kafka-metadata", version)) as jar:
        for entry in sorted(n for n in jar.namelist() if re.fullmatch(r"common/metadata/\w+\.json", n)):
            spec = load_spec(jar.read(entry).decode())
            if spec.get("type") != "metadata":
                raise UpdateError(f"{entry}: type {spec.get('type')!r}, not metadata")
            name, valid, fields = convert_message(spec, entry)
            metadata.append({"apiKey": spec["apiKey"], "name": name, "validVersions": valid, "fields": fields})
    if not metadata:
        raise UpdateError(f"kafka-metadata-{version}.jar holds no common/metadata/*.json")
    control = []
    type_ids = {name: type_id for type_id, name in CONTROL_TYPE_NAMES.items()}
    with zipfile.ZipFile(fetch_jar("kafka-clients", version)) as jar:
        names = set(jar.namelist())
        for control_type, spec_name in CONTROL_BODIES.items():
            entry = f"common/message/{spec_name}.json"
            name, valid, fields = convert_message(load_spec(jar.read(entry).decode()), entry)
            control.append(
                {
                    "controlType": type_ids[control_type],
                    "name": name,
                    "type": control_type,
                    "validVersions": valid,
                    "fields": fields,
                }
            )
        if (key := f"common/message/{CONTROL_KEY_SPEC}.json") in names:
            check_control_key(load_spec(jar.read(key).decode()))
    return ReleaseSpecs(version, sorted(metadata, key=lambda m: m["apiKey"]), control)


# ---------------------------------------------------------------- output


def _inline(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _block(item: dict[str, Any], indent: str) -> list[str]:
    """A message or field on one line; its ``fields`` (if any) one per line below it, closed after the last."""
    head = {k: v for k, v in item.items() if k != "fields"}
    if "fields" not in item:
        return [indent + _inline(head)]
    opening = indent + _inline(head)[:-1] + ', "fields": ['
    if not item["fields"]:
        return [opening + "]}"]
    body = _listed([_block(f, indent + "  ") for f in item["fields"]])
    return [opening, *body[:-1], body[-1] + "]}"]


def _listed(blocks: list[list[str]]) -> list[str]:
    """Blocks of lines as the items of a JSON list: a comma after each but the last."""
    return [
        line + ("," if i < len(blocks) - 1 and j == len(b) - 1 else "")
        for i, b in enumerate(blocks)
        for j, line in enumerate(b)
    ]


def render_records(specs: ReleaseSpecs) -> str:
    """``records.json``: one line per field, in the layout the file has always had."""
    about = (
        "The one schema source of kraft-replay: every KRaft metadata record type and the KRaft control record "
        f"bodies of Kafka {specs.version}, field by field, in Kafka's message-spec vocabulary (versions, "
        "nullableVersions, taggedVersions, tag, default). Generated by python -m metadata.log.schema.update from the "
        f"specs in kafka-metadata-{specs.version}.jar and kafka-clients-{specs.version}.jar; do not edit by hand. "
        "Explained in docs/records.md. Every struct is flexible in every version."
    )
    lines = ["{", f'  "about": {_inline(about)},', f'  "kafka": {_inline(specs.version)},']
    lines += ['  "metadata": [', *_listed([_block(m, "    ") for m in specs.metadata]), "  ],"]
    lines += ['  "control": [', *_listed([_block(c, "    ") for c in specs.control]), "  ]"]
    return "\n".join(lines + ["}"]) + "\n"


def release_entry(specs: ReleaseSpecs, facts: dict[str, Any]) -> dict[str, Any]:
    """One release line of ``releases.json``."""
    return {
        "line": release_line(specs.version),
        "kafka": specs.version,
        "records": [
            {"apiKey": m["apiKey"], "name": m["name"], "validVersions": m["validVersions"]} for m in specs.metadata
        ],
        "metadataVersions": facts["metadataVersions"],
        "latestProduction": facts["latestProduction"],
        "supportedConfigs": facts["supportedConfigs"],
    }


RELEASES_ABOUT = (
    "What each Kafka release line kraft-replay supports says about its metadata log, read from the jars of the "
    "named patch release by python -m metadata.log.schema.update (do not edit by hand; docs/records.md): records, the "
    "record versions its kafka-metadata jar knows; metadataVersions, the metadata.version levels of its "
    "MetadataVersion and their names, and latestProduction, the level kafka-storage format writes by default; "
    "supportedConfigs, the config names per ConfigRecord resource type its DefaultSupportedConfigChecker accepts "
    "(names null: any name; a resource type not listed: none; supportedConfigs null: the release has no checker "
    "and every ConfigRecord is replayed)."
)


def render_json(value: Any, indent: str = "") -> str:
    """Indented JSON with every object or list that fits in 118 characters on one line."""
    flat = _inline(value)
    if not isinstance(value, (dict, list)) or len(indent) + len(flat) <= 118:
        return flat
    inner = indent + "  "
    if isinstance(value, dict):
        items = [f"{inner}{_inline(k)}: {render_json(v, inner).lstrip()}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + "\n" + indent + "}"
    if all(isinstance(v, str) for v in value):  # a long list of names: as many to a line as fit
        rows, row = [], ""
        for v in value:
            piece = _inline(v)
            if row and len(inner) + len(row) + len(piece) + 2 > 118:
                rows.append(row + ",")
                row = ""
            row = f"{row}, {piece}" if row else piece
        return "[\n" + "\n".join(inner + r for r in [*rows, row]) + "\n" + indent + "]"
    return "[\n" + ",\n".join(inner + render_json(v, inner) for v in value) + "\n" + indent + "]"


def render_releases(entries: list[dict[str, Any]]) -> str:
    return render_json({"about": RELEASES_ABOUT, "releases": entries}) + "\n"


# ---------------------------------------------------------------- main


def update(kafka: str, releases: Sequence[str], out_dir: Path = SCHEMA_DIR) -> tuple[Path, Path]:
    """Write ``records.json`` (from ``kafka``) and ``releases.json`` (from ``releases``, one per line, oldest
    first) into ``out_dir``."""
    lines = [release_line(v) for v in releases]
    if len(set(lines)) != len(lines) or lines != sorted(lines, key=_line_key):
        raise UpdateError(f"give one release per line, oldest first: {', '.join(releases)}")
    if kafka not in releases:
        raise UpdateError(f"--kafka {kafka} must be one of the releases read ({', '.join(releases)})")
    entries = []
    schema = None
    for version in releases:
        print(f"reading Kafka {version}", file=sys.stderr)
        specs = read_specs(version)
        entries.append(release_entry(specs, release_facts(version)))
        if version == kafka:
            schema = specs
    assert schema is not None
    records, releases_file = out_dir / "records.json", out_dir / "releases.json"
    records.write_text(render_records(schema))
    releases_file.write_text(render_releases(entries))
    return records, releases_file


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m metadata.log.schema.update",
        description="Regenerate metadata/log/schema/records.json and releases.json from Kafka's jars on Maven Central.",
    )
    parser.add_argument(
        "--kafka", help="the Kafka release whose schema to take (default: the newest --release, or on Maven Central)"
    )
    parser.add_argument(
        "--release",
        action="append",
        help="a release to read for releases.json, one per line from "
        f"{OLDEST_LINE} (repeat; default: the newest patch of each line up to --kafka's, which is read for its own)",
    )
    parser.add_argument("--out", type=Path, default=SCHEMA_DIR, help="where to write the two files")
    args = parser.parse_args(argv)
    try:
        kafka, releases = args.kafka, args.release
        if releases is None:
            published = published_versions()
            kafka = kafka or published[-1]
            if kafka not in published:
                raise UpdateError(f"Kafka {kafka} is not on Maven Central (newest: {published[-1]})")
            releases = newest_patches(published, kafka)
        kafka = kafka or releases[-1]
        for path in update(kafka, releases, args.out):
            print(f"wrote {path}", file=sys.stderr)
    except (UpdateError, OSError, subprocess.CalledProcessError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
