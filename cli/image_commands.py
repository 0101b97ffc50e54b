"""``replay``, ``show`` and ``diff``: images of a stored log, from the temporal image (commands of
:data:`cli.app.app`)."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

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
    err,
    handles_errors,
    out,
    print_json,
    shown_rows,
    source,
    spark,
)
from cli.window import AfterOffset, AfterTime, AtOffset, AtTime, ToOffset, ToTime
from metadata.log.errors import BadInput

if TYPE_CHECKING:
    from image.temporal.reads import TemporalSource


class Engine(str, Enum):
    temporal = "temporal"
    reference = "reference"


EngineOpt = Annotated[
    Engine | None,
    typer.Option(
        help="temporal: the image from every key's versions (a filter; the default with --lake); "
        "reference: replay the records sequentially from the snapshot before the offset (the cross-check; "
        "the default with --log, which then records no versions)."
    ),
]
Lenient = Annotated[bool, typer.Option(help="Skip records Kafka rejects (listed on stderr).")]


class Part(str, Enum):
    partitions = "partitions"
    brokers = "brokers"
    topics = "topics"
    configs = "configs"
    features = "features"


def _image(
    store: TemporalSource,
    offset: int | None,
    at_time: str | None,
    engine: Engine | None = None,
    lenient: bool = False,
) -> dict[str, Any]:
    """The image JSON at ``offset`` / ``at_time`` (default: the end of the log) by ``engine`` (default:
    temporal for a lake, reference for a log read in process). Records a lenient replay skipped are listed
    on stderr; a strict one fails on the first."""
    from image.temporal.reads import MemorySource, image_at
    from image.temporal.sources import reference_image
    from image.temporal.window import image_offset

    target = image_offset(store, offset, at_time)
    if engine is Engine.reference or (engine is None and isinstance(store, MemorySource)):
        image = reference_image(store, target, lenient=lenient)
        doc, errors = image.to_json(), list(image.errors)
    else:
        doc, errors = image_at(store, target, lenient=lenient)
    for e in errors:
        err.print(f"[yellow]skipped:[/] {e}", highlight=False, soft_wrap=True)  # one line each
    return doc


@app.command()
@handles_errors
def replay(
    lake_location: ReadLakeOpt = None,
    log: LogOpt = None,
    kafka_version: KafkaVersionOpt = None,
    skip_unknown: SkipUnknownOpt = False,
    at_offset: AtOffset = None,
    at_time: AtTime = None,
    engine: EngineOpt = None,
    lenient: Lenient = False,
    save: Annotated[
        Path | None, typer.Option("--save", help="Also write the image as Delta tables here (Spark).")
    ] = None,
    limit: LimitOpt = DEFAULT_LIMIT,
    show_all: AllOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """The image at an offset or time: summary, or the whole image as JSON."""
    doc = _image(source(lake_location, log, kafka_version, skip_unknown), at_offset, at_time, engine, lenient)
    if save is not None:
        from image.temporal.spark.frames import ImageFrames

        ImageFrames.from_json(spark(), doc).save(str(save))
        err.print(f"saved image to {save}", highlight=False)
    if as_json:
        print_json(doc)
        return
    from cli import render
    from image.views.summary import image_summary  # pydantic: only for the summary a person reads

    out.print(render.image_summary(image_summary(doc), shown_rows(limit, show_all)))


@app.command()
@handles_errors
def show(
    part: Annotated[Part, typer.Argument(help="What to list.")],
    lake_location: ReadLakeOpt = None,
    log: LogOpt = None,
    kafka_version: KafkaVersionOpt = None,
    skip_unknown: SkipUnknownOpt = False,
    at_offset: AtOffset = None,
    at_time: AtTime = None,
    topic: Annotated[
        str | None, typer.Option("--topic", help="Only this topic (partitions, topics; its TOPIC configs).")
    ] = None,
    broker: Annotated[
        int | None,
        typer.Option(
            "--broker", help="Only this broker (partitions and topics it replicates, brokers; its BROKER configs)."
        ),
    ] = None,
    engine: EngineOpt = None,
    limit: LimitOpt = DEFAULT_LIMIT,
    show_all: AllOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """List partitions, brokers, topics, configs or features of the image at an offset or time."""
    from image.parts import part_rows

    doc = _image(source(lake_location, log, kafka_version, skip_unknown), at_offset, at_time, engine)
    rows = part_rows(doc, part.value, topic=topic, broker=broker)
    if as_json:
        print_json(rows)
        return
    from cli import render

    out.print(render.show(part.value, rows, shown_rows(limit, show_all)))


@app.command("diff")
@handles_errors
def diff_command(
    lake_location: ReadLakeOpt = None,
    log: LogOpt = None,
    kafka_version: KafkaVersionOpt = None,
    skip_unknown: SkipUnknownOpt = False,
    after_offset: AfterOffset = None,
    to_offset: ToOffset = None,
    after_time: AfterTime = None,
    to_time: ToTime = None,
    from_image: Annotated[Path | None, typer.Option(help="Image before: a directory written by replay --save.")] = None,
    to_image: Annotated[Path | None, typer.Option(help="Image after: a directory written by replay --save.")] = None,
    limit: LimitOpt = DEFAULT_LIMIT,
    show_all: AllOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """What changed between two images — at --after-offset/--after-time and at --to-offset/--to-time (what the
    records (A, B] changed), or two saved with replay --save: topics, partitions, brokers, configs, features and
    the other parts."""
    from image.diff import diff_rows
    from image.temporal.diff import diff_json

    if from_image is not None or to_image is not None:
        from image.parts import json_rows
        from image.temporal.spark.frames import ImageFrames

        if from_image is None or to_image is None:
            raise BadInput("give both --from-image and --to-image")
        if any(v is not None for v in (lake_location, log, after_offset, to_offset, after_time, to_time)):
            raise BadInput("--from-image/--to-image do not combine with --lake, --log or offsets/times")
        before, after = (ImageFrames.load(spark(), str(p)).to_json() for p in (from_image, to_image))
        ends = [{k: d[k] for k in ("offset", "epoch", "timestamp")} for d in (before, after)]
        doc = diff_rows(json_rows(before), json_rows(after), *ends)
    else:
        from image.temporal.window import Window

        store = source(lake_location, log, kafka_version, skip_unknown)
        window = Window.of(after_offset=after_offset, after_time=after_time, to_offset=to_offset, to_time=to_time)
        doc = diff_json(store, *window.delta(store))
    if as_json:
        print_json(doc)
        return
    from cli import render

    out.print(render.diff(doc, shown_rows(limit, show_all)))
