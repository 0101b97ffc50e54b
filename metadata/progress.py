"""A rich progress bar that follows the tasks of the Spark jobs a block of code runs."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from pyspark.sql import SparkSession
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn


@contextmanager
def spark_progress(spark: SparkSession, description: str, *, enabled: bool = True) -> Iterator[None]:
    """Show completed/total tasks of the active Spark stages on stderr while the block runs.

    Silent when disabled, when stderr is not a terminal, or under Spark Connect (no status tracker).
    """
    console = Console(stderr=True)
    try:
        tracker = spark.sparkContext.statusTracker() if enabled and console.is_terminal else None
    except Exception:  # noqa: BLE001 — Spark Connect has no SparkContext
        tracker = None
    if tracker is None:
        yield
        return
    stop = threading.Event()
    progress = Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                        TimeElapsedColumn(), console=console, transient=True)
    task = progress.add_task(description, total=None)

    def poll() -> None:
        while not stop.wait(0.25):
            done = total = 0
            for stage_id in tracker.getActiveStageIds():
                info = tracker.getStageInfo(stage_id)
                if info is not None:
                    done += info.numCompletedTasks
                    total += info.numTasks
            if total:
                progress.update(task, completed=done, total=total)

    with progress:
        thread = threading.Thread(target=poll, daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join()
