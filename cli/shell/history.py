"""``history PATH``: the versions of the node at a path, each with what changed — for a partition
(``/image/topics/byName/<topic>/<partition>``), a topic (``…/byName/<topic>``) or a broker
(``/image/cluster/brokers/<id>``) exactly what ``kraft-replay history partition|topic|broker`` gives, for any other
node below ``/image`` its files that changed at each version."""

from __future__ import annotations

from typing import TYPE_CHECKING

from cli.shell.paths import absolute_components
from image.node.java import parse_int
from image.temporal.times import iso_time

if TYPE_CHECKING:
    from cli.shell.session import Context
    from image.views.history import History


def node_history(ctx: Context, target: str) -> None:
    """Print (or, with JSON, keep as the document) the versions of the node at ``target``."""
    components = absolute_components(target, ctx.session.cwd)
    path = "/" + "/".join(components)
    history = _kafka_key_history(ctx, components) or _node_history(ctx, path)
    if history is None:
        ctx.problem(f"history: {path}: every record changes the image's provenance; give a node below /image")
        return
    ctx.document = history.model_dump(mode="json")
    ctx.say(f"{path}: {len(history.versions)} version{'s' if len(history.versions) != 1 else ''}")
    if history.versions:
        ctx.say(f"{'from offset':>12} {'to offset':>12}  {'time (UTC)':<24}  what changed")
    for v in history.versions:
        events = v.events or ["(as before)"]
        head = f"{v.fromOffset:>12} {'' if v.toOffset is None else v.toOffset:>12}  {v.fromTime or '':<24}  "
        ctx.say(head + events[0])
        for event in events[1:]:
            ctx.say(" " * len(head) + event)


def _kafka_key_history(ctx: Context, c: list[str]) -> History | None:
    """``kraft-replay history``'s answer for a partition, topic or broker path (None for another path)."""
    from image.temporal.version_rows import Selection, load
    from image.temporal.window import Window

    if c[:3] == ["image", "topics", "byName"] and len(c) in (4, 5):
        from image.views.history import partition_history, topic_history

        if len(c) == 4:
            window = load(
                ctx.session.source, Window(), Selection(parts=("topics", "partitions", "configs"), topic=c[3])
            )
            return topic_history(window, c[3])
        partition = parse_int(c[4])
        if partition is not None:
            window = load(
                ctx.session.source, Window(), Selection(parts=("partitions",), topic=c[3], partition=partition)
            )
            return partition_history(window, c[3], partition)
    if c[:3] == ["image", "cluster", "brokers"] and len(c) == 4 and (broker := parse_int(c[3])) is not None:
        from image.views.history import broker_history

        window = load(ctx.session.source, Window(), Selection(parts=("brokers",), broker=broker))
        return broker_history(window, broker)
    return None


def _node_history(ctx: Context, path: str) -> History | None:
    """The versions of any node below ``/image`` from the versions of the keys it is made of: each change of its
    files, listed as ``-path: text`` / ``+path: text`` (None for a node holding the image's provenance)."""
    from image.views.history import Change, History, HistoryVersion

    session = ctx.session
    scope = session.scope(path)
    if scope is None:
        return None
    found = list(session.changes(scope, path))
    times = {point: scope.time_at(point) for point, _ in found}
    ended = [point for point, time in times.items() if time is None]  # only versions ended there: the record's time
    if ended:
        records = session.source.records(min(ended), max(ended), ended)
        times.update(zip(records.column("offset").to_pylist(), records.column("timestamp").to_pylist()))
    versions = []
    for i, (point, changes) in enumerate(found):
        time = times[point]
        versions.append(
            HistoryVersion(
                fromOffset=point,
                toOffset=found[i + 1][0] if i + 1 < len(found) else None,
                fromTime=None if time is None else iso_time(time),
                changes=[
                    *(Change(field=p, before=None, after=v) for p, (_, v) in changes.added.items()),
                    *(Change(field=p, before=v, after=None) for p, (_, v) in changes.removed.items()),
                    *(Change(field=p, before=b, after=a) for p, ((_, b), (_, a)) in changes.changed.items()),
                ],
                events=changes.lines(),
            )
        )
    return History(versions=versions)
