"""A rich progress bar that follows the tasks of the Spark jobs a block of code runs."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from pyspark.sql import SparkSession
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from metadata.lake.spark import is_connect


@contextmanager
def spark_progress(spark: SparkSession, description: str, *, enabled: bool = True) -> Iterator[None]:
    """Show completed/total tasks of the running Spark stages on stderr while the block runs.

    A classic session's status tracker is polled; a Spark Connect session reports progress to a
    handler. Silent when disabled or when stderr is not a terminal.
    """
    console = Console(stderr=True)
    if not (enabled and console.is_terminal):
        yield
        return
    progress = Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    )
    task = progress.add_task(description, total=None)

    def show(done: int, total: int) -> None:
        if total:
            progress.update(task, completed=done, total=total)

    with progress, (_reported if is_connect(spark) else _polled)(spark, show):
        yield


@contextmanager
def _polled(spark: SparkSession, show: Callable[[int, int], None]) -> Iterator[None]:
    """Poll the status tracker of a classic session's active stages."""
    tracker = spark.sparkContext.statusTracker()
    stop = threading.Event()

    def poll() -> None:
        while not stop.wait(0.25):
            infos = [tracker.getStageInfo(i) for i in tracker.getActiveStageIds()]
            show(sum(i.numCompletedTasks for i in infos if i), sum(i.numTasks for i in infos if i))

    thread = threading.Thread(target=poll, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


@contextmanager
def _reported(spark: SparkSession, show: Callable[[int, int], None]) -> Iterator[None]:
    """Follow the progress a Spark Connect server reports for the session's operations."""

    def handler(stages: Iterable[Any] | None = None, **_: Any) -> None:  # also inflight_tasks, operation_id, done
        stages = list(stages or ())  # the stages of the running operation so far
        show(sum(s.num_completed_tasks for s in stages), sum(s.num_tasks for s in stages))

    spark.registerProgressHandler(handler)
    try:
        yield
    finally:
        spark.removeProgressHandler(handler)
