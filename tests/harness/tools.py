"""Kafka's own command-line tools, run from the cached jars: dump-log, metadata shell, configs, quorum."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from .cluster import run_java
from .kafka_dist import KafkaDist, shell_class_path

DUMP_LOG_CLASSES = ("kafka.tools.DumpLogSegments", "org.apache.kafka.tools.DumpLogSegments")  # Java from 4.3
SHELL_CLASS = "org.apache.kafka.shell.MetadataShell"
CONFIG_CLASSES = ("kafka.admin.ConfigCommand", "org.apache.kafka.tools.ConfigCommand")  # Java from 4.4
QUORUM_CLASS = "org.apache.kafka.tools.MetadataQuorumCommand"


def segment_files(meta_dir: Path) -> list[Path]:
    return sorted(p for p in Path(meta_dir).glob("*.log") if p.stem.isdigit())


def checkpoint_files(meta_dir: Path) -> list[Path]:
    return sorted(Path(meta_dir).glob("*.checkpoint"))


def dump_log(
    dist: KafkaDist,
    files: list[Path],
    *,
    skip_record_metadata: bool = False,
    cwd: Path | None = None,
    timeout: float = 180,
) -> str:
    """``kafka-dump-log --cluster-metadata-decoder --files a,b`` (paths made relative to ``cwd`` if given,
    so the ``Dumping <file>`` header lines are stable)."""
    names = [os.path.relpath(f, cwd) if cwd else str(f) for f in files]
    args = ["--cluster-metadata-decoder", "--files", ",".join(names)]
    if skip_record_metadata:
        args.append("--skip-record-metadata")
    return run_java(dist, dist.main_class(*DUMP_LOG_CLASSES), args, cwd=cwd, timeout=timeout).stdout


def metadata_shell(
    dist: KafkaDist, snapshot_or_segment: Path, command: list[str], timeout: float = 60, attempts: int = 4
) -> str:
    """Run the metadata shell non-interactively (``--snapshot <file> <command...>``), e.g. ``["tree", "/"]``;
    for a version without a published shell, the one ``kafka_dist.SHELL_VERSIONS`` / ``SHELL_SOURCE_MOVES`` give.

    The shell reads a snapshot (``.checkpoint``) or a log segment (``.log``) file.  Its non-interactive mode
    can run the command before its loader has published the image (observed with 4.1.1: empty output), or
    never finish (observed with 3.9.1: ``waitUntilCaughtUp`` sleeping forever, once in a default run), so an
    empty answer is retried, and so is a run killed after ``timeout`` seconds (the fixtures load in one or two)."""
    extra_cp = shell_class_path(dist)
    out = ""
    for attempt in range(attempts):
        try:
            out = run_java(
                dist,
                SHELL_CLASS,
                ["--snapshot", str(snapshot_or_segment), *command],
                timeout=timeout,
                extra_cp=extra_cp,
            ).stdout
        except subprocess.TimeoutExpired:
            if attempt == attempts - 1:
                raise
            continue
        if out.strip():
            break
    return out


def config_command(dist: KafkaDist, bootstrap: str, args: list[str], timeout: float = 120) -> str:
    config_class = dist.main_class(*CONFIG_CLASSES)
    return run_java(dist, config_class, ["--bootstrap-server", bootstrap, *args], timeout=timeout).stdout


def quorum_describe(dist: KafkaDist, bootstrap: str, what: str = "--status", timeout: float = 120) -> str:
    return run_java(dist, QUORUM_CLASS, ["--bootstrap-server", bootstrap, "describe", what], timeout=timeout).stdout
