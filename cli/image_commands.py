"""``replay``, ``show``, ``diff`` and ``checkpoint``: images of an ingested log (commands of :data:`cli.app.app`)."""

from __future__ import annotations

from enum import Enum
from functools import reduce
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from cli import render
from cli.app import (
    AllOpt,
    JsonOpt,
    LakeOpt,
    LimitOpt,
    app,
    err,
    handles_errors,
    lake,
    out,
    print_json,
    shown_rows,
    spark,
)
from cli.render import DEFAULT_LIMIT

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

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


@app.command()
@handles_errors
def replay(lake_location: LakeOpt, at_offset: AtOffset = None, at_time: AtTime = None, engine: EngineOpt = Engine.auto,
           lenient: Annotated[bool, typer.Option(help="Skip records Kafka rejects (listed on stderr).")] = False,
           save: Annotated[Path | None, typer.Option("--save", help="Also write the image as Delta tables here.")]
           = None,
           limit: LimitOpt = DEFAULT_LIMIT, show_all: AllOpt = False, as_json: JsonOpt = False) -> None:
    """The image at an offset or time: summary, or the whole image as JSON."""
    frames = _image(lake_location, at_offset, at_time, engine, lenient)
    if save is not None:
        frames.save(str(save))
        err.print(f"saved image to {save}", highlight=False)
    if as_json:
        print_json(frames.to_json())
        return
    out.print(render.image_summary(frames.summary(), shown_rows(limit, show_all)))


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
         engine: EngineOpt = Engine.auto, limit: LimitOpt = DEFAULT_LIMIT, show_all: AllOpt = False,
         as_json: JsonOpt = False) -> None:
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
    out.print(render.show(part.value, rows, shown_rows(limit, show_all)))


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
        engine: EngineOpt = Engine.auto, limit: LimitOpt = DEFAULT_LIMIT, show_all: AllOpt = False,
        as_json: JsonOpt = False) -> None:
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
    out.print(render.diff(doc, shown_rows(limit, show_all)))


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
    out.print(render.kv_table(f"checkpoints every {every} offsets", [
        ("added", len(added)), ("offsets", ", ".join(map(str, added)) or "none (all present)")]))
