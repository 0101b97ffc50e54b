"""``changes``, ``apply``, ``leader-and-isr`` and ``zk-replay``: what a delta means for the brokers
(commands of :data:`cli.app.app`; the library is :mod:`replica`)."""

from __future__ import annotations

import json
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from cli.app import JsonOpt, LakeOpt, app, handles_errors, kv_table, lake, out, print_json

if TYPE_CHECKING:
    from replica.spark_changes import DeltaFrames

FromOffset = Annotated[int | None, typer.Option(help="Delta start A: the image after this offset (-1 = empty).")]
ToOffset = Annotated[int | None, typer.Option(help="Delta end B (default: the end of the log).")]
FromTime = Annotated[str | None, typer.Option(help="Delta start at this time (ISO-8601 or epoch ms).")]
ToTime = Annotated[str | None, typer.Option(help="Delta end at this time (ISO-8601 or epoch ms).")]
Listener = Annotated[str, typer.Option("--listener", help="inter.broker.listener.name (fetchers connect to it).")]


class ChangesEngine(str, Enum):
    spark = "spark"
    reference = "reference"


def _delta(location: str, from_offset: int | None, to_offset: int | None, from_time: str | None,
           to_time: str | None) -> DeltaFrames:
    from replica.inputs import delta_frames, resolve_window
    source = lake(location)
    a, b = resolve_window(source, from_offset, to_offset, from_time, to_time)
    return delta_frames(source, a, b)


def _list(values: list[int]) -> str:
    return "[" + ",".join(map(str, values)) + "]"


def _broker_tables(doc: dict[str, Any]) -> list[Table]:
    """One broker's LocalReplicaChanges as tables."""
    tables = []
    elected = {(e["topic"], e["partitionId"]) for e in doc["electedLeaders"]}
    directories = {(d["topic"], d["partitionId"]): d["directory"] for d in doc["directoryIds"]}
    for member in ("leaders", "followers"):
        table = Table(title=f"broker {doc['broker']}: {member} ({len(doc[member])})", title_justify="left")
        for c in ("topic", "partition", "leader", "leader epoch", "elected", "partition epoch", "isr", "replicas",
                  "adding", "removing", "directory"):
            table.add_column(c)
        for e in doc[member]:
            key = (e["topic"], e["partitionId"])
            table.add_row(e["topic"], str(e["partitionId"]), str(e["leader"]), str(e["leaderEpoch"]),
                          "yes" if key in elected else "", str(e["partitionEpoch"]), _list(e["isr"]),
                          _list(e["replicas"]), _list(e["addingReplicas"]), _list(e["removingReplicas"]),
                          directories.get(key, ""))
        tables.append(table)
    deletes = Table(title=f"broker {doc['broker']}: deletes ({len(doc['deletes'])})", title_justify="left")
    deletes.add_column("topic")
    deletes.add_column("partition")
    for d in doc["deletes"]:
        deletes.add_row(d["topic"], str(d["partitionId"]))
    tables.append(deletes)
    return tables


def _summary_table(doc: dict[str, Any]) -> Table:
    table = Table(title=f"local changes, offsets {doc['fromOffset']} → {doc['toOffset']}", title_justify="left")
    for c in ("broker", "deletes", "leaders", "elected leaders", "followers", "directory ids"):
        table.add_column(c, justify="right")
    for b in doc["brokers"]:
        table.add_row(str(b["broker"]), *(f"{len(b[m]):,}" for m in ("deletes", "leaders", "electedLeaders",
                                                                      "followers", "directoryIds")))
    return table


@app.command()
@handles_errors
def changes(lake_location: LakeOpt, from_offset: FromOffset = None, to_offset: ToOffset = None,
            from_time: FromTime = None, to_time: ToTime = None,
            broker: Annotated[int | None, typer.Option(help="Only this broker (default: every broker).")] = None,
            engine: Annotated[ChangesEngine, typer.Option(help="spark: all brokers set-based; reference: the "
                                                          "sequential engine.")] = ChangesEngine.spark,
            save: Annotated[Path | None, typer.Option(help="Also write the changes as a Delta table here "
                                                      "(spark engine).")] = None,
            as_json: JsonOpt = False) -> None:
    """Local replica changes (Kafka's LocalReplicaChanges) of one or every broker for the delta (A, B]."""
    if engine is ChangesEngine.reference:
        if save is not None:
            raise ValueError("--save needs the spark engine")
        from replica.inputs import reference_changes_json, resolve_window
        source = lake(lake_location)
        a, b = resolve_window(source, from_offset, to_offset, from_time, to_time)
        doc = reference_changes_json(source, a, b, broker)
    else:
        delta = _delta(lake_location, from_offset, to_offset, from_time, to_time)
        if save is not None:
            delta.changes.write.format("delta").mode("overwrite").option("overwriteSchema", "true").save(str(save))
        doc = delta.changes_json(broker)
    if as_json:
        print_json(doc)
    elif broker is not None:
        out.print(kv_table(f"broker {broker}, offsets {doc['fromOffset']} → {doc['toOffset']}",
                           [("topic ids", json.dumps(doc["topicIds"]))]))
        for table in _broker_tables(doc):
            out.print(table)
    else:
        out.print(_summary_table(doc))


@app.command("apply")
@handles_errors
def apply_command(lake_location: LakeOpt,
                  broker: Annotated[int, typer.Option(help="The broker applying the delta.")],
                  from_offset: FromOffset = None, to_offset: ToOffset = None,
                  from_time: FromTime = None, to_time: ToTime = None,
                  num_replica_fetchers: Annotated[int, typer.Option(help="num.replica.fetchers.")] = 1,
                  controlled_shutdown: Annotated[bool, typer.Option(
                      help="The broker is in controlled shutdown (its local flag).")] = False,
                  listener: Listener = "PLAINTEXT",
                  share_coordinator: Annotated[bool, typer.Option(help="A share coordinator is configured.")] = False,
                  save: Annotated[Path | None, typer.Option(help="Also write the actions as a Delta table here.")]
                  = None,
                  as_json: JsonOpt = False) -> None:
    """Step by step what broker N's ReplicaManager and coordinators do with the delta (A, B]."""
    from replica.apply_plan import apply_plan, plan_rows, plan_text
    delta = _delta(lake_location, from_offset, to_offset, from_time, to_time)
    actions = apply_plan(delta, brokers=[broker], num_replica_fetchers=num_replica_fetchers,
                         in_controlled_shutdown=[broker] if controlled_shutdown else [],
                         inter_broker_listener=listener, share_coordinator=share_coordinator)
    if save is not None:
        actions.write.format("delta").mode("overwrite").option("overwriteSchema", "true").save(str(save))
    rows = plan_rows(actions, broker)
    a, b = delta.offsets
    if as_json:
        print_json({"broker": broker, "fromOffset": a, "toOffset": b, "actions": rows})
        return
    out.print(f"[bold]broker {broker} applies the delta of offsets {a} → {b}[/]")
    for line in plan_text(rows) or ["nothing to do"]:
        out.print(line, highlight=False, markup=False, soft_wrap=True)


@app.command("leader-and-isr")
@handles_errors
def leader_and_isr(lake_location: LakeOpt, from_offset: FromOffset = None, to_offset: ToOffset = None,
                   from_time: FromTime = None, to_time: ToTime = None,
                   broker: Annotated[int | None, typer.Option(help="Only this broker's requests.")] = None,
                   controller_epoch: Annotated[int, typer.Option(help="Controller epoch of the requests.")] = 1,
                   controller_id: Annotated[int, typer.Option(help="Controller id of the requests.")] = 0,
                   listener: Listener = "PLAINTEXT",
                   as_json: JsonOpt = False) -> None:
    """The delta as the StopReplica and LeaderAndIsr requests a ZooKeeper controller would send
    (with --broker --json: a document for ``zk-replay``)."""
    from replica.zk import leader_and_isr_json
    delta = _delta(lake_location, from_offset, to_offset, from_time, to_time)
    doc = leader_and_isr_json(delta, controller_epoch=controller_epoch, controller_id=controller_id, broker=broker,
                              inter_broker_listener=listener)
    if as_json:
        print_json(doc)
        return
    for document in [doc] if broker is not None else doc["brokers"]:
        for request in document["requests"]:
            out.print(_request_table(document["brokerId"], request))


def _request_table(broker: int, request: dict[str, Any]) -> Table:
    title = (f"broker {broker}: {request['type']} (controller {request['controllerId']}, epoch "
             f"{request['controllerEpoch']}, broker epoch {request['brokerEpoch']})")
    table = Table(title=title, title_justify="left")
    if request["type"] == "StopReplica":
        for c in ("topic", "partition", "leader epoch", "delete"):
            table.add_column(c)
        for t in request["topicStates"]:
            for p in t["partitionStates"]:
                table.add_row(t["topicName"], str(p["partitionIndex"]), str(p["leaderEpoch"]),
                              str(p["deletePartition"]).lower())
        return table
    for c in ("topic", "partition", "leader", "leader epoch", "isr", "zk version", "replicas", "adding", "removing",
              "new"):
        table.add_column(c)
    for s in request["partitionStates"]:
        table.add_row(s["topicName"], str(s["partitionIndex"]), str(s["leader"]), str(s["leaderEpoch"]),
                      _list(s["isr"]), str(s["partitionEpoch"]), _list(s["replicas"]), _list(s["addingReplicas"]),
                      _list(s["removingReplicas"]), str(s["isNew"]).lower())
    return table


@app.command("zk-replay")
@handles_errors
def zk_replay(document: Annotated[Path, typer.Argument(help="JSON: brokerId, brokerEpoch, aliveBrokers, requests "
                                                       "(see replica/zk.py; `leader-and-isr --broker N --json`).")],
              as_json: JsonOpt = False) -> None:
    """Replay LeaderAndIsr / StopReplica requests on one ZooKeeper-era broker (becomeLeaderOrFollower,
    stopReplicas): per-partition error codes, events, final partition state."""
    from replica.zk import replay_requests
    result = replay_requests(json.loads(document.read_text()))
    if as_json:
        print_json(result)
        return
    for i, response in enumerate(result["responses"], 1):
        table = Table(title=f"request {i}: {response['type']}, error code {response['errorCode']}",
                      title_justify="left")
        for c in ("topic", "partition", "error code"):
            table.add_column(c)
        for p in response["partitionErrors"]:
            table.add_row(p["topicName"], str(p["partitionIndex"]), str(p["errorCode"]))
        out.print(table)
        for event in response["events"]:
            out.print(f"  {event}", highlight=False, markup=False)
    state = Table(title=f"broker {result['brokerId']} after the requests (controller epoch "
                  f"{result['broker']['controllerEpoch']})", title_justify="left")
    for c in ("topic", "partition", "leader", "leader epoch", "partition epoch", "replicas", "isr", "log", "fetcher"):
        state.add_column(c)
    for p in result["broker"]["partitions"]:
        fetcher = p["fetcher"]
        state.add_row(p["topicName"], str(p["partitionIndex"]), str(p["leader"]), str(p["leaderEpoch"]),
                      str(p["partitionEpoch"]), _list(p["replicas"]), _list(p["isr"]),
                      "offline" if p["offline"] else ("yes" if p["hasLog"] else "no"),
                      "" if fetcher is None else f"{fetcher['leader']}@{fetcher['host']}:{fetcher['port']} "
                                                 f"#{fetcher['fetcherId']}")
    out.print(state)
