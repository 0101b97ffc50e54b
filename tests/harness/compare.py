"""Comparison helpers: cluster views vs images, readable JSON diffs, and a parser for kafka-dump-log text."""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

# ----------------------------------------------------------------------------- readable diffs


def json_paths_diff(expected: Any, actual: Any, path: str = "$", limit: int = 40) -> list[str]:
    """Path-level differences (``$.partitions[3].isr: expected [1, 2] got [1]``), at most ``limit``."""
    out: list[str] = []

    def walk(e: Any, a: Any, p: str) -> None:
        if len(out) >= limit:
            return
        if isinstance(e, dict) and isinstance(a, dict):
            for k in sorted(set(e) | set(a), key=str):
                if k not in a:
                    out.append(f"{p}.{k}: missing (expected {_short(e[k])})")
                elif k not in e:
                    out.append(f"{p}.{k}: unexpected {_short(a[k])}")
                else:
                    walk(e[k], a[k], f"{p}.{k}")
        elif isinstance(e, list) and isinstance(a, list) and not (_scalar_list(e) and _scalar_list(a)):
            if len(e) != len(a):
                out.append(f"{p}: length {len(a)} != expected {len(e)}")
            for i, (x, y) in enumerate(zip(e, a)):
                walk(x, y, f"{p}[{i}]")
        elif e != a:
            out.append(f"{p}: expected {_short(e)} got {_short(a)}")

    walk(expected, actual, path)
    return out


def _scalar_list(v: list) -> bool:
    return all(not isinstance(x, (dict, list)) for x in v)


def _short(v: Any, n: int = 200) -> str:
    s = json.dumps(v, sort_keys=True)
    return s if len(s) <= n else s[:n] + "..."


def loud_diff(what: str, expected: Any, actual: Any, *, context: int = 3, max_lines: int = 120) -> str:
    """A message with path-level differences and a unified diff of the pretty-printed JSON."""
    paths = json_paths_diff(expected, actual)
    e = json.dumps(expected, indent=1, sort_keys=True).splitlines()
    a = json.dumps(actual, indent=1, sort_keys=True).splitlines()
    ud = list(difflib.unified_diff(e, a, "expected (Kafka)", "actual (kraft-replay)", n=context, lineterm=""))
    if len(ud) > max_lines:
        ud = ud[:max_lines] + [f"... ({len(ud) - max_lines} more diff lines)"]
    return (
        f"\n===== MISMATCH: {what} =====\n"
        + "\n".join(f"  * {p}" for p in paths)
        + "\n----- unified diff -----\n"
        + "\n".join(ud)
        + "\n"
    )


# ----------------------------------------------------------------------------- views vs images


def compare_view_with_image(view: dict, img: dict) -> list[str]:
    """Differences between a recorded cluster view and the image (replay JSON shape) at its offset.

    Compared: topic names and ids; per partition leader, leader epoch, replicas, ISR; broker ids, fencing
    (when the view knows it), host/port/rack; dynamic topic and broker configs (including the cluster
    default ``""``); finalized features except ``kraft.version`` (a raft control-record feature that is
    not part of the metadata image); in-flight reassignments (adding/removing replicas); ACLs and SCRAM
    credentials (user, mechanism, iterations), every broker's log directories and which are cordoned, and the
    registered controllers, if recorded.
    """
    d: list[str] = []
    vt = {n: t["topicId"] for n, t in view["topics"].items()}
    it = {t["name"]: t["topicId"] for t in img["topics"]}
    if vt != it:
        d.append(f"topics: view {vt} != image {it}")
    iparts = {(p["topic"], p["partitionId"]): p for p in img["partitions"]}
    vparts = {(n, p["partition"]): p for n, t in view["topics"].items() for p in t["partitions"]}
    if set(vparts) != set(iparts):
        d.append(
            f"partition sets differ: only in view {sorted(set(vparts) - set(iparts))}, "
            f"only in image {sorted(set(iparts) - set(vparts))}"
        )
    for key in sorted(set(vparts) & set(iparts)):
        v, i = vparts[key], iparts[key]
        for vk, ik in (("leader", "leader"), ("leaderEpoch", "leaderEpoch"), ("replicas", "replicas"), ("isr", "isr")):
            if v.get(vk) is not None and v[vk] != i[ik]:
                d.append(f"{key[0]}-{key[1]} {ik}: view {v[vk]} != image {i[ik]}")
    # brokers
    vb = {b["id"]: b for b in view["cluster"]["brokers"]}
    ib = {b["brokerId"]: b for b in img["brokers"]}
    knows_fenced = all(b.get("fenced") is not None for b in vb.values())
    if knows_fenced:
        if set(vb) != set(ib):
            d.append(f"broker ids: view {sorted(vb)} != image {sorted(ib)}")
        for bid in sorted(set(vb) & set(ib)):
            if vb[bid]["fenced"] != ib[bid]["fenced"]:
                d.append(f"broker {bid} fenced: view {vb[bid]['fenced']} != image {ib[bid]['fenced']}")
    else:
        unf = sorted(k for k, b in ib.items() if not b["fenced"])
        if sorted(vb) != unf:
            d.append(f"alive brokers: view {sorted(vb)} != unfenced in image {unf}")
    for bid in sorted(set(vb) & set(ib)):
        eps = {(e["host"], e["port"]) for e in ib[bid]["endPoints"]}
        if (vb[bid]["host"], vb[bid]["port"]) not in eps:
            d.append(f"broker {bid} endpoint {vb[bid]['host']}:{vb[bid]['port']} not in image {sorted(eps)}")
        if vb[bid].get("rack") != ib[bid]["rack"]:
            d.append(f"broker {bid} rack: view {vb[bid].get('rack')} != image {ib[bid]['rack']}")
    # configs
    icfg: dict[tuple[str, str], dict[str, str]] = {}
    for c in img["configs"]:
        icfg.setdefault((c["resourceType"], c["resourceName"]), {})[c["name"]] = c["value"]
    for name in view["topics"]:
        want = view["configs"]["TOPIC"].get(name, {})
        got = icfg.get(("TOPIC", name), {})
        if want != got:
            d.append(f"TOPIC {name} configs: view {want} != image {got}")
    for name, want in view["configs"]["BROKER"].items():
        got = icfg.get(("BROKER", name), {})
        # describe shows only keys the broker knows; every shown key must match
        got_known = {k: v for k, v in got.items() if k in want}
        if want != got_known:
            d.append(f"BROKER {name!r} configs: view {want} != image {got}")
    alive = [b for b, x in vb.items() if not x.get("fenced")]
    for (rtype, rname), got in icfg.items():
        if rtype == "BROKER" and rname not in view["configs"]["BROKER"] and rname in {str(b) for b in alive}:
            d.append(f"BROKER {rname!r} has configs in the image but none in the view: {got}")
    # features
    vf = {k: v for k, v in view["features"].items() if k != "kraft.version"}
    if vf != img["features"]:
        d.append(f"features: view {vf} != image {img['features']}")
    # reassignments
    vr = {(t, int(p)): r for t, ps in view.get("reassignments", {}).items() for p, r in ps.items()}
    ir = {(p["topic"], p["partitionId"]): p for p in img["partitions"] if p["addingReplicas"] or p["removingReplicas"]}
    if set(vr) != set(ir):
        d.append(f"in-flight reassignments: view {sorted(vr)} != image {sorted(ir)}")
    for key in sorted(set(vr) & set(ir)):
        if sorted(vr[key]["addingReplicas"]) != sorted(ir[key]["addingReplicas"]) or sorted(
            vr[key]["removingReplicas"]
        ) != sorted(ir[key]["removingReplicas"]):
            d.append(
                f"reassignment {key}: view {vr[key]} != image adding {ir[key]['addingReplicas']} "
                f"removing {ir[key]['removingReplicas']}"
            )
    if "scram" in view:
        isc: dict[str, list] = {}
        for c in img["scram"]:
            isc.setdefault(c["name"], []).append([c["mechanism"], c["iterations"]])
        isc = {k: sorted(v) for k, v in sorted(isc.items())}
        if isc != view["scram"]:
            d.append(f"scram: view {view['scram']} != image {isc}")
    if "logDirs" in view:  # {broker: {directory id: cordoned}}: the registration's dirs and cordoned dirs
        for bid, dirs in view["logDirs"].items():
            b = ib.get(int(bid))
            if b is None:
                d.append(f"broker {bid} log dirs: not registered in the image")
                continue
            if sorted(dirs) != sorted(b["logDirs"]):
                d.append(f"broker {bid} log dirs: view {sorted(dirs)} != image {sorted(b['logDirs'])}")
            cordoned = sorted(k for k, v in dirs.items() if v)
            if cordoned != sorted(b["cordonedLogDirs"] or []):
                d.append(f"broker {bid} cordoned log dirs: view {cordoned} != image {b['cordonedLogDirs']}")
    if "controllers" in view:
        ic = [c["controllerId"] for c in img["controllers"]]
        if view["controllers"] != ic:
            d.append(f"registered controllers: view {view['controllers']} != image {ic}")
    if "acls" in view:
        ia = sorted(
            ({k: v for k, v in a.items() if k != "id"} for a in img["acls"]),
            key=lambda x: tuple(str(v) for v in x.values()),
        )
        if ia != view["acls"]:
            d.append(f"acls: view {view['acls']} != image {ia}")
    return d


def expected_local_changes(prev: dict, cur: dict, broker: int) -> dict[str, set]:
    """Lower bounds on a broker's local changes implied by two consecutive views.

    A partition whose leader, leader epoch, replicas or ISR differ between the views (or that is new) had
    its partition epoch bumped, so every broker in its new replicas must report it as leader or follower,
    and as elected leader when it leads with a new leader epoch; a broker that left the replicas (or whose
    topic was deleted or re-created under a new id) must report a delete."""
    need: dict[str, set] = {"leaders": set(), "followers": set(), "electedLeaders": set(), "deletes": set()}

    def index(v: dict) -> dict:
        return {(n, p["partition"]): (t["topicId"], p) for n, t in v["topics"].items() for p in t["partitions"]}

    a, b = index(prev), index(cur)
    for key, (tid, p) in b.items():
        old = a.get(key)
        same_topic = old is not None and old[0] == tid
        changed = not same_topic or any(old[1][k] != p[k] for k in ("leader", "leaderEpoch", "replicas", "isr"))
        if same_topic and broker in old[1]["replicas"] and broker not in p["replicas"]:
            need["deletes"].add(key)
        if not changed or broker not in p["replicas"]:
            continue
        if p["leader"] == broker:
            need["leaders"].add(key)
            if not same_topic or old[1]["leaderEpoch"] != p["leaderEpoch"]:
                need["electedLeaders"].add(key)
        else:
            need["followers"].add(key)
    for key, (tid, p) in a.items():
        new = b.get(key)
        if (new is None or new[0] != tid) and broker in p["replicas"]:
            need["deletes"].add(key)
    return need


# ----------------------------------------------------------------------------- kafka-dump-log text

_BATCH = re.compile(
    r"^baseOffset: (\d+) lastOffset: (\d+) count: (\d+) .*?partitionLeaderEpoch: (-?\d+) "
    r"isTransactional: (\w+) isControl: (\w+) .*?CreateTime: (-?\d+) size: (\d+) magic: (\d+) "
    r"compresscodec: (\S+) crc: (\d+) isvalid: (\w+)"
)
_REC = re.compile(
    r"^\| offset: (\d+) CreateTime: (-?\d+) keySize: (-?\d+) valueSize: (-?\d+) sequence: (-?\d+) "
    r"headerKeys: \[[^\]]*\] ?(.*)$"
)
# a record line of --skip-record-metadata: " payload: {...}" (Scala kafka.tools.DumpLogSegments, up to 4.2)
# or "| payload: {...}" (Java org.apache.kafka.tools.DumpLogSegments, 4.3+); a control record is a blank line
_SKIPPED_REC = re.compile(r"^\|? payload: (.*)$")
# control record labels printed by DumpLogSegments -> ControlRecordType names
CONTROL_LABELS = {
    "LeaderChange": "LEADER_CHANGE",
    "SnapshotHeader": "SNAPSHOT_HEADER",
    "SnapshotFooter": "SNAPSHOT_FOOTER",
    "KRaftVersion": "KRAFT_VERSION",
    "KRaftVoters": "KRAFT_VOTERS",
    "endTxnMarker": None,  # ABORT/COMMIT markers (never in the metadata log)
}


def parse_dump_log(text: str) -> Iterator[dict]:
    """Records of a ``kafka-dump-log --cluster-metadata-decoder`` text, with or without
    ``--skip-record-metadata``, as the Scala tool (up to 4.2) and the Java tool (4.3+) print it.

    Yields dicts {file, offset, timestamp, batch_base_offset, is_control, control_type, control_data,
    type, version, data, raw} where type/version/data come from the ``payload:`` JSON of data records and
    control_type/control_data from the control record line (e.g. ``LeaderChange: {...}``). Without record
    metadata, a record's offset is its batch's base offset plus its index, its timestamp the batch's
    CreateTime, and a control record (a blank line) has no control type."""
    file = None
    batch = None
    index = 0
    for line in text.splitlines():
        if line.startswith("Dumping "):
            file = line[len("Dumping ") :].strip()
            batch = None
            continue
        m = _BATCH.match(line)
        if m:
            batch = {
                "base": int(m.group(1)),
                "last": int(m.group(2)),
                "epoch": int(m.group(4)),
                "control": m.group(6) == "true",
                "time": int(m.group(7)),
            }
            index = 0
            continue
        if batch is None:
            continue
        rec = {
            "file": file,
            "offset": batch["base"] + index,
            "timestamp": batch["time"],
            "batch_base_offset": batch["base"],
            "is_control": batch["control"],
            "control_type": None,
            "control_data": None,
            "type": None,
            "version": None,
            "data": None,
            "raw": line,
        }
        if m := _REC.match(line):
            rec["offset"], rec["timestamp"], rest = int(m.group(1)), int(m.group(2)), m.group(6)
        elif m := _SKIPPED_REC.match(line):
            rest = "payload: " + m.group(1)
        elif line == "" and batch["control"] and index <= batch["last"] - batch["base"]:
            rest = ""
        else:
            continue
        index += 1
        rec["raw"] = rest
        if rest.startswith("payload: "):
            payload = json.loads(rest[len("payload: ") :])
            rec["type"], rec["version"], rec["data"] = payload.get("type"), payload.get("version"), payload.get("data")
        elif rest.startswith("controlType: "):  # 3.x: "controlType: LEADER_CHANGE(2)", no body
            rec["control_type"] = rest[len("controlType: ") :].split("(")[0].strip()
        elif rest:  # 4.x: "LeaderChange: {...}", "KRaftVersion {...}", "SnapshotHeader {...}", ...
            label, _, js = rest.partition(" ")
            label = label.rstrip(":")
            rec["control_type"] = CONTROL_LABELS.get(label, label.upper())
            js = js.strip()
            if js.startswith("{"):
                rec["control_data"] = json.loads(js)
        yield rec


def fixture_dirs(root: Path) -> list[Path]:
    """Committed fixture directories: ``<root>/<kafka-version>/<scenario>/`` that contain views.json."""
    return sorted(p.parent for p in Path(root).glob("*/*/views.json"))
