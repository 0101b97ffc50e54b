"""``replay``, ``show``, ``diff`` and ``checkpoint``: images of an ingested log (commands of :data:`cli.app.app`)."""

from __future__ import annotations

import datetime as dt
from enum import Enum
from functools import reduce
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from cli.app import (
    JsonOpt,
    LakeOpt,
    app,
    counts_table,
    err,
    handles_errors,
    kv_table,
    lake,
    out,
    print_json,
    spark,
)

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

    from image.engine import ReplayedFrames
    from image.frames import ImageFrames

AtOffset = Annotated[int | None, typer.Option("--at-offset", help="Image after this offset (default: the latest).")]
AtTime = Annotated[str | None, typer.Option(
    "--at-time", help="Image at this time: ISO-8601 (2026-01-30T17:05:00Z) or epoch milliseconds.")]


class Engine(str, Enum):
    auto = "auto"
    spark = "spark"
    reference = "reference"


EngineOpt = Annotated[Engine, typer.Option(help="Replay engine (auto: reference for short replays).")]


class Part(str, Enum):
    partitions = "partitions"
    brokers = "brokers"
    topics = "topics"
    configs = "configs"
    features = "features"


TABLE_COLUMNS: dict[str, tuple[str, ...]] = {
    "partitions": ("topic", "partitionId", "leader", "leaderEpoch", "partitionEpoch", "replicas", "isr",
                   "addingReplicas", "removingReplicas", "eligibleLeaderReplicas", "lastKnownElr",
                   "leaderRecoveryState"),
    "brokers": ("brokerId", "brokerEpoch", "fenced", "inControlledShutdown", "rack", "endPoints", "incarnationId"),
    "topics": ("name", "topicId"),
    "configs": ("resourceType", "resourceName", "name", "value"),
    "features": ("name", "level"),
}


def _image(location: str, offset: int | None, at_time: str | None, engine: Engine = Engine.auto,
           lenient: bool = False) -> ReplayedFrames:
    """The image of the lake at ``offset`` / ``at_time`` (default: the latest committed); an offset
    past the end of the log is an error. Records a lenient replay skipped are listed on stderr."""
    from image.engine import replay_image
    source = lake(location)
    end = source.state().high_water_mark
    if offset is not None and offset > end:
        raise ValueError(f"offset {offset} is beyond the end of the log (last offset {end})")
    frames = replay_image(source, offset, at_time=at_time, engine=engine.value, lenient=lenient)
    for e in frames.errors:
        err.print(f"[yellow]skipped:[/] {e}", highlight=False)
    return frames


def _cell(value: Any) -> str:
    """A value as table text: lists as ``[a,b]``, endpoints as ``NAME://host:port``, entities as ``type=name``."""
    if value is None:
        return ""
    if isinstance(value, list):
        return "[" + ",".join(_cell(v) for v in value) + "]"
    if isinstance(value, dict) and "host" in value:
        return f"{value['name']}://{value['host']}:{value['port']}"
    if isinstance(value, dict):
        return " ".join(f"{k}={_cell(v) if v is not None else '<default>'}" for k, v in value.items())
    return str(value)


def _rows_table(title: str, rows: list[dict[str, Any]], columns: tuple[str, ...]) -> Table:
    table = Table(title=title, title_justify="left")
    for c in columns:
        table.add_column(c, overflow="fold")
    for r in rows:
        table.add_row(*(_cell(r[c]) for c in columns))
    return table


def _facts(frames: ImageFrames) -> list[tuple[str, int]]:
    """``(fact, value)`` rows of an image, from one Spark job: the row count of every part
    (``count:<part>``), provenance, metadata.version, fenced and in-controlled-shutdown broker ids
    (one row each) and the counts of leaderless and under-replicated partitions."""
    from pyspark.sql import DataFrame
    from pyspark.sql import functions as F

    def fact(name: str, value: Column) -> tuple[Column, Column]:
        return F.lit(name).alias("fact"), value.cast("long").alias("value")

    p, b = frames.partitions, frames.brokers
    selects = [frame.agg(*fact(f"count:{part}", F.count("*")))
               for part, frame in frames.parts().items() if part != "provenance"]
    selects += [frames.provenance.select(*fact(c, F.col(c))) for c in ("offset", "epoch", "timestamp")]
    selects += [frames.features.where(F.col("name") == "metadata.version").select(*fact("metadata.version",
                                                                                          F.col("level"))),
                b.where("fenced").select(*fact("fenced", F.col("brokerId"))),
                b.where("inControlledShutdown").select(*fact("inControlledShutdown", F.col("brokerId"))),
                p.agg(*fact("leaderless", F.count(F.when(F.col("leader") == -1, 1)))),
                p.agg(*fact("underReplicated", F.count(F.when(F.size("isr") < F.size("replicas"), 1))))]
    rows = reduce(DataFrame.unionByName, selects).collect()
    return sorted((r["fact"], r["value"]) for r in rows)


def _time_text(ms: int) -> str:
    if ms < 0:
        return str(ms)
    return f"{dt.datetime.fromtimestamp(ms / 1000, dt.UTC).isoformat(timespec='milliseconds')} ({ms})"


@app.command()
@handles_errors
def replay(lake_location: LakeOpt, at_offset: AtOffset = None, at_time: AtTime = None, engine: EngineOpt = Engine.auto,
           lenient: Annotated[bool, typer.Option(help="Skip records Kafka rejects (listed on stderr).")] = False,
           save: Annotated[Path | None, typer.Option("--save", help="Also write the image as Delta tables here.")]
           = None,
           as_json: JsonOpt = False) -> None:
    """The image at an offset or time: summary, or the whole image as JSON."""
    from image.features import METADATA_VERSIONS
    frames = _image(lake_location, at_offset, at_time, engine, lenient)
    if save is not None:
        frames.save(str(save))
        err.print(f"saved image to {save}", highlight=False)
    if as_json:
        print_json(frames.to_json())
        return
    facts = _facts(frames)
    one = dict(facts)
    many = {k: [v for f, v in facts if f == k] for k in ("fenced", "inControlledShutdown")}
    level = one.get("metadata.version")
    out.print(kv_table(f"image at offset {one['offset']}", [
        ("offset", one["offset"]), ("epoch", one["epoch"]), ("timestamp", _time_text(one["timestamp"])),
        ("metadata.version", f"{level} ({METADATA_VERSIONS.get(level, 'unknown')})" if level is not None else None),
        ("fenced brokers", ", ".join(map(str, many["fenced"])) or "none"),
        ("brokers in controlled shutdown", ", ".join(map(str, many["inControlledShutdown"])) or "none"),
        ("leaderless partitions", one["leaderless"]), ("under-replicated partitions", one["underReplicated"])]))
    out.print(counts_table("parts", {part: one[f"count:{part}"] for part in frames.parts() if part != "provenance"},
                           what="part"))


def _check_filters(part: Part, topic: str | None, broker: int | None) -> None:
    """ValueError where ``--topic`` / ``--broker`` do not apply to ``part``."""
    if part is Part.features and (topic is not None or broker is not None):
        raise ValueError("--topic and --broker do not apply to features")
    if part is Part.brokers and topic is not None:
        raise ValueError("--topic does not apply to brokers")
    if part is Part.configs and topic is not None and broker is not None:
        raise ValueError("configs: give --topic or --broker, not both")


def _filtered(frames: ImageFrames, part: Part, topic: str | None, broker: int | None) -> DataFrame:
    """The rows of ``part`` restricted by ``--topic`` / ``--broker`` (checked by :func:`_check_filters`)."""
    from pyspark.sql import functions as F
    frame = getattr(frames, part.value)
    on_broker = F.array_contains("replicas", broker) if broker is not None else None
    if part is Part.partitions:
        conds = [c for c in (F.col("topic") == topic if topic is not None else None, on_broker) if c is not None]
        return frame.where(reduce(lambda a, b: a & b, conds)) if conds else frame
    if part is Part.topics:
        frame = frame.where(F.col("name") == topic) if topic is not None else frame
        if on_broker is None:
            return frame
        return frame.join(frames.partitions.where(on_broker).select("topicId"), "topicId", "left_semi")
    if part is Part.brokers:
        return frame.where(F.col("brokerId") == broker) if broker is not None else frame
    if part is Part.configs and topic is not None:
        return frame.where((F.col("resourceType") == "TOPIC") & (F.col("resourceName") == topic))
    if part is Part.configs and broker is not None:
        return frame.where((F.col("resourceType") == "BROKER") & (F.col("resourceName") == str(broker)))
    return frame


@app.command()
@handles_errors
def show(part: Annotated[Part, typer.Argument(help="What to list.")], lake_location: LakeOpt,
         at_offset: AtOffset = None, at_time: AtTime = None,
         topic: Annotated[str | None, typer.Option(
             "--topic", help="Only this topic (partitions, topics; its TOPIC configs).")] = None,
         broker: Annotated[int | None, typer.Option(
             "--broker", help="Only this broker (partitions and topics it replicates, brokers; its BROKER configs).")]
         = None,
         engine: EngineOpt = Engine.auto, as_json: JsonOpt = False) -> None:
    """List partitions, brokers, topics, configs or features of the image at an offset or time."""
    from image.frames import canonical
    _check_filters(part, topic, broker)
    frames = _image(lake_location, at_offset, at_time, engine)
    rows = [r.asDict(recursive=True) for r in _filtered(frames, part, topic, broker).collect()]
    if part is Part.features:
        rows = sorted(rows, key=lambda r: r["name"])
    else:
        rows = canonical({part.value: rows})[part.value]
    if as_json:
        print_json(rows)
        return
    out.print(_rows_table(f"{part.value} ({len(rows)})", rows, TABLE_COLUMNS[part.value]))


def _key_text(section: str, entry: dict[str, Any]) -> str:
    from image.spark.diff import SECTIONS
    if section == "partitions":
        return f"{entry['topic']}-{entry['partitionId']}"
    return " / ".join(_cell(entry[k]) or '""' for k in SECTIONS[section].keys)


def _details_table(section: str, changes: dict[str, list[dict[str, Any]]]) -> Table:
    from image.spark.diff import SECTIONS
    spec = SECTIONS[section]
    table = Table(title=section, title_justify="left")
    for c in ("change", "key", "details"):
        table.add_column(c, overflow="fold")
    for change, entries in changes.items():
        for e in entries:
            if change == "changed":
                details = "; ".join(f"{f}: {_cell(e['before'][f])} → {_cell(e['after'][f])}" for f in e["fields"])
            else:
                details = ", ".join(f"{k}={_cell(v)}" for k, v in e.items() if k not in (*spec.keys, *spec.context))
            table.add_row(change, _key_text(section, e), details)
    return table


def _side(location: str, offset: int | None, at_time: str | None, which: str, required: bool,
          engine: Engine) -> ImageFrames:
    """One side of ``diff`` from the lake: by offset or time; the latest image if neither and not ``required``."""
    if offset is not None and at_time is not None:
        raise ValueError(f"give --{which}-offset or --{which}-time, not both")
    if required and offset is None and at_time is None:
        raise ValueError(f"give --{which}-offset or --{which}-time (or --from-image/--to-image)")
    return _image(location, offset, at_time, engine)


@app.command("diff")
@handles_errors
def diff_command(
        lake_location: Annotated[str | None, typer.Option(
            "--lake", help="Lake location (not needed with --from-image/--to-image).")] = None,
        from_offset: Annotated[int | None, typer.Option(help="Image before: at this offset.")] = None,
        to_offset: Annotated[int | None, typer.Option(help="Image after: at this offset (default: the latest).")]
        = None,
        from_time: Annotated[str | None, typer.Option(help="Image before: at this time (ISO-8601 or epoch ms).")]
        = None,
        to_time: Annotated[str | None, typer.Option(help="Image after: at this time (ISO-8601 or epoch ms).")] = None,
        from_image: Annotated[Path | None, typer.Option(help="Image before: a directory written by replay --save.")]
        = None,
        to_image: Annotated[Path | None, typer.Option(help="Image after: a directory written by replay --save.")]
        = None,
        engine: EngineOpt = Engine.auto, as_json: JsonOpt = False) -> None:
    """What changed between two images: topics, partitions, brokers, configs, features and the other parts."""
    from image.spark.diff import diff_images
    from image.frames import ImageFrames
    if from_image is not None or to_image is not None:
        if from_image is None or to_image is None:
            raise ValueError("give both --from-image and --to-image")
        if any(v is not None for v in (lake_location, from_offset, to_offset, from_time, to_time)):
            raise ValueError("--from-image/--to-image do not combine with --lake or offsets/times")
        before, after = ImageFrames.load(spark(), str(from_image)), ImageFrames.load(spark(), str(to_image))
    else:
        if lake_location is None:
            raise ValueError("give --lake (or --from-image and --to-image)")
        before = _side(lake_location, from_offset, from_time, "from", required=True, engine=engine)
        after = _side(lake_location, to_offset, to_time, "to", required=False, engine=engine)
    doc = diff_images(before, after).to_json()
    if as_json:
        print_json(doc)
        return
    table = Table(title=f"diff offset {doc['from']['offset']} → {doc['to']['offset']}", title_justify="left")
    for c in ("section", "added", "removed", "changed"):
        table.add_column(c, justify="left" if c == "section" else "right")
    for section, counts in doc["summary"].items():
        table.add_row(section, *(f"{counts[c]:,}" for c in ("added", "removed", "changed")))
    out.print(table)
    for section, counts in doc["summary"].items():
        if any(counts.values()):
            out.print(_details_table(section, doc[section]))


@app.command()
@handles_errors
def checkpoint(lake_location: LakeOpt,
               every: Annotated[int, typer.Option("--every", help="Materialise an image every K offsets.")],
               lenient: Annotated[bool, typer.Option(help="Skip records Kafka rejects instead of stopping.")] = False,
               as_json: JsonOpt = False) -> None:
    """Write image checkpoints every K offsets, so that later replays read only the tail of the log."""
    from image.checkpoints import checkpoint as run
    added = run(lake(lake_location), every, lenient=lenient)
    if as_json:
        print_json({"every": every, "added": added})
        return
    out.print(kv_table(f"checkpoints every {every} offsets", [
        ("added", len(added)), ("offsets", ", ".join(map(str, added)) or "none (all present)")]))
