"""``changes``, ``apply``, ``leader-and-isr`` and ``zk-replay``: what a delta means for the brokers
(commands of :data:`cli.app.app`; the library is :mod:`replica`)."""

from __future__ import annotations

import json
import sys
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from cli.app import (
    DEFAULT_LIMIT,
    AllOpt,
    JsonOpt,
    KafkaVersionOpt,
    LimitOpt,
    LogOpt,
    ReadLakeOpt,
    SkipUnknownOpt,
    app,
    handles_errors,
    out,
    print_json,
    shown_rows,
    source,
    spark,
)
from cli.window import AfterOffset, AfterTime, ToOffset, ToTime
from metadata.log.errors import BadInput

if TYPE_CHECKING:
    from image.temporal.reads import TemporalSource
    from image.temporal.spark.source import SparkSource
    from replica.spark_changes import DeltaFrames

Listener = Annotated[str, typer.Option("--listener", help="inter.broker.listener.name (fetchers connect to it).")]


class ChangesEngine(str, Enum):
    auto = "auto"
    spark = "spark"
    reference = "reference"


def _delta_window(
    store: TemporalSource, after_offset: int | None, to_offset: int | None, after_time: str | None, to_time: str | None
) -> tuple[int, int]:
    """(A, B) of the delta (A, B] the flags name (:meth:`image.temporal.window.Window.delta`)."""
    from image.temporal.window import Window

    return Window.of(after_offset=after_offset, after_time=after_time, to_offset=to_offset, to_time=to_time).delta(
        store
    )


def _on_spark(store: TemporalSource, lake_location: str | None) -> SparkSource:
    """The Spark source of the lake (the one read already, or the same lake read on Spark)."""
    from image.temporal.spark.source import SparkSource

    if isinstance(store, SparkSource):
        return store
    if lake_location is None:
        raise BadInput("the spark engine reads a lake: give --lake")
    from metadata.lake.protocol import Lake

    return SparkSource(Lake(lake_location, spark()))


def _spark_engine(store: TemporalSource, save: Path | None) -> bool:
    """Whether a delta is computed on Spark: the lake is read on Spark, or a Delta table is to be saved;
    otherwise the reference engine computes it in process (and pyspark is not imported to find out)."""
    if save is not None:
        return True
    if "image.temporal.spark.source" not in sys.modules:  # nothing was read on Spark
        return False
    from image.temporal.spark.source import SparkSource

    return isinstance(store, SparkSource)


def _delta(store: TemporalSource, lake_location: str | None, a: int, b: int) -> DeltaFrames:
    from replica.inputs import delta_frames

    return delta_frames(_on_spark(store, lake_location), a, b)


@app.command()
@handles_errors
def changes(
    lake_location: ReadLakeOpt = None,
    log: LogOpt = None,
    kafka_version: KafkaVersionOpt = None,
    skip_unknown: SkipUnknownOpt = False,
    after_offset: AfterOffset = None,
    to_offset: ToOffset = None,
    after_time: AfterTime = None,
    to_time: ToTime = None,
    broker: Annotated[int | None, typer.Option(help="Only this broker (default: every broker).")] = None,
    engine: Annotated[
        ChangesEngine,
        typer.Option(
            help="spark: all brokers set-based on Spark; "
            "reference: the sequential engine from the window's "
            "start; auto: spark when the lake is read on Spark"
        ),
    ] = ChangesEngine.auto,
    save: Annotated[
        Path | None, typer.Option(help="Also write the changes as a Delta table here (spark engine).")
    ] = None,
    limit: LimitOpt = DEFAULT_LIMIT,
    show_all: AllOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Local replica changes (Kafka's LocalReplicaChanges) of one or every broker for the delta (A, B]."""
    store = source(lake_location, log, kafka_version, skip_unknown)
    a, b = _delta_window(store, after_offset, to_offset, after_time, to_time)
    if engine is ChangesEngine.auto:
        engine = ChangesEngine.spark if _spark_engine(store, save) else ChangesEngine.reference
    if engine is ChangesEngine.reference:
        if save is not None:
            raise BadInput("--save needs the spark engine")
        from replica.inputs import reference_changes_json

        doc = reference_changes_json(store, a, b, broker)
    else:
        delta = _delta(store, lake_location, a, b)
        if save is not None:
            delta.changes.write.format("delta").mode("overwrite").option("overwriteSchema", "true").save(str(save))
        doc = delta.changes_json(broker)
    if as_json:
        print_json(doc)
        return
    from cli import render

    out.print(render.changes(doc, shown_rows(limit, show_all)))


@app.command("apply")
@handles_errors
def apply_command(
    broker: Annotated[int, typer.Option(help="The broker applying the delta.")],
    lake_location: ReadLakeOpt = None,
    log: LogOpt = None,
    kafka_version: KafkaVersionOpt = None,
    skip_unknown: SkipUnknownOpt = False,
    after_offset: AfterOffset = None,
    to_offset: ToOffset = None,
    after_time: AfterTime = None,
    to_time: ToTime = None,
    num_replica_fetchers: Annotated[int, typer.Option(help="num.replica.fetchers.")] = 1,
    controlled_shutdown: Annotated[
        bool, typer.Option(help="The broker is in controlled shutdown (its local flag).")
    ] = False,
    listener: Listener = "PLAINTEXT",
    share_coordinator: Annotated[bool, typer.Option(help="A share coordinator is configured.")] = False,
    save: Annotated[Path | None, typer.Option(help="Also write the actions as a Delta table here.")] = None,
    limit: LimitOpt = DEFAULT_LIMIT,
    show_all: AllOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Step by step what broker N's ReplicaManager and coordinators do with the delta (A, B]."""
    store = source(lake_location, log, kafka_version, skip_unknown)
    a, b = _delta_window(store, after_offset, to_offset, after_time, to_time)
    options = {
        "num_replica_fetchers": num_replica_fetchers,
        "inter_broker_listener": listener,
        "in_controlled_shutdown": [broker] if controlled_shutdown else [],
        "share_coordinator": share_coordinator,
    }
    if _spark_engine(store, save):
        from replica.spark_plan import apply_plan, plan_rows

        actions = apply_plan(_delta(store, lake_location, a, b), brokers=[broker], **options)
        if save is not None:
            actions.write.format("delta").mode("overwrite").option("overwriteSchema", "true").save(str(save))
        rows = plan_rows(actions, broker)
    else:
        from replica.inputs import reference_delta
        from replica.plan import apply_plan_rows

        rows = apply_plan_rows(*reference_delta(store, a, b), brokers=[broker], **options)
    doc = {"broker": broker, "fromOffset": a, "toOffset": b, "actions": rows}
    if as_json:
        print_json(doc)
        return
    from cli import render

    out.print(render.apply(doc, shown_rows(limit, show_all)))


@app.command("leader-and-isr")
@handles_errors
def leader_and_isr(
    lake_location: ReadLakeOpt = None,
    log: LogOpt = None,
    kafka_version: KafkaVersionOpt = None,
    skip_unknown: SkipUnknownOpt = False,
    after_offset: AfterOffset = None,
    to_offset: ToOffset = None,
    after_time: AfterTime = None,
    to_time: ToTime = None,
    broker: Annotated[int | None, typer.Option(help="Only this broker's requests.")] = None,
    controller_epoch: Annotated[int, typer.Option(help="Controller epoch of the requests.")] = 1,
    controller_id: Annotated[int, typer.Option(help="Controller id of the requests.")] = 0,
    listener: Listener = "PLAINTEXT",
    limit: LimitOpt = DEFAULT_LIMIT,
    show_all: AllOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """The delta as the StopReplica and LeaderAndIsr requests a ZooKeeper controller would send
    (with --broker --json: a document for ``zk-replay``)."""
    store = source(lake_location, log, kafka_version, skip_unknown)
    a, b = _delta_window(store, after_offset, to_offset, after_time, to_time)
    options = {
        "controller_epoch": controller_epoch,
        "controller_id": controller_id,
        "broker": broker,
        "inter_broker_listener": listener,
    }
    if _spark_engine(store, None):
        from replica.spark_zk import leader_and_isr_json

        doc = leader_and_isr_json(_delta(store, lake_location, a, b), **options)
    else:
        from replica.inputs import reference_delta
        from replica.zk import leader_and_isr_doc

        doc = leader_and_isr_doc(*reference_delta(store, a, b), **options)
    if as_json:
        print_json(doc)
        return
    from cli import render

    out.print(render.leader_and_isr(doc, shown_rows(limit, show_all)))


@app.command("zk-replay")
@handles_errors
def zk_replay(
    document: Annotated[
        Path,
        typer.Argument(
            help="JSON: brokerId, brokerEpoch, aliveBrokers, requests "
            "(see replica/zk.py; `leader-and-isr --broker N --json`)."
        ),
    ],
    limit: LimitOpt = DEFAULT_LIMIT,
    show_all: AllOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Replay LeaderAndIsr / StopReplica requests on one ZooKeeper-era broker (becomeLeaderOrFollower,
    stopReplicas): per-partition error codes, events, final partition state."""
    from replica.zk import replay_requests

    result = replay_requests(json.loads(document.read_text()))
    if as_json:
        print_json(result)
        return
    from cli import render

    out.print(render.zk_replay(result, shown_rows(limit, show_all)))
