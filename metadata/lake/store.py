"""What the commit protocol (:mod:`metadata.lake.protocol`) asks of a Delta store, and what both stores share: the
operations (:class:`Store`, implemented by :mod:`metadata.lake.local_store` with delta-rs and
:mod:`metadata.lake.spark_store` on Spark), what a commit says about itself, the properties every table is created
with, and what a lost compare-and-set looks like."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Protocol

import pyarrow as pa
from pydantic import BaseModel

from metadata.lake import version_tables
from metadata.lake.state import LakeState
from metadata.lake.tables import table_schemas
from metadata.log.errors import KraftReplayError

CHECKPOINT_INTERVAL = "100"
"""Commits between Delta checkpoints of every table kraft-replay creates (Delta's default is 10: see
docs/lake-protocol.md)."""


def stats_columns(name: str) -> str:
    """The columns Delta keeps file statistics of in table ``name`` (``delta.dataSkippingStatsColumns``):
    the keys readers filter on. Statistics of every column cost about a third of an append."""
    if name in version_tables.TABLES:
        return version_tables.stats_columns(name)
    return {"records": "offset,timestamp", "snapshots": "snapshot_end_offset,snapshot_epoch"}.get(name, "offset")


def table_properties(name: str) -> dict[str, str]:
    """The Delta table properties a table ``name`` is created with, by either engine: the checkpoint interval;
    for a data table its statistics columns; for a versions table deletion vectors (versions are ended in place)."""
    properties = {"delta.checkpointInterval": CHECKPOINT_INTERVAL}
    if name in table_schemas():
        properties["delta.dataSkippingStatsColumns"] = stats_columns(name)
    if name in version_tables.TABLES:
        properties["delta.enableDeletionVectors"] = "true"
    return properties


class LakeConflict(KraftReplayError, RuntimeError):
    """Another writer committed to a table or to ``_ingests`` during a transaction (it is retried)."""


class CommitInfo(BaseModel):
    """What a Delta commit says about itself (its ``commitInfo`` action)."""

    version: int
    operation: str | None
    user_metadata: str | None


def commit_info(version: int, text: str) -> CommitInfo:
    """The :class:`CommitInfo` of the commit file ``text`` of ``version`` (empty if it has no ``commitInfo``)."""
    for line in text.splitlines():
        action = json.loads(line) if line.strip() else {}
        if "commitInfo" in action:
            info = action["commitInfo"]
            return CommitInfo(version=version, operation=info.get("operation"), user_metadata=info.get("userMetadata"))
    return CommitInfo(version=version, operation=None, user_metadata=None)


class Store(Protocol):
    """The Delta operations the commit protocol rests on, for one lake: in process with delta-rs for a lake on a
    local path (:class:`metadata.lake.local_store.LocalStore`, whichever engine computes the writes), through Delta on
    Spark otherwise (:class:`metadata.lake.spark_store.SparkStore`)."""

    def versions(self, names: Sequence[str]) -> dict[str, int | None]:
        """Latest version of each table; None where there is none."""

    def commits(self, name: str, first: int, last: int) -> list[CommitInfo]:
        """The commits ``first`` … ``last`` of a table, oldest first."""

    def append(self, name: str, rows: pa.Table, *, app: str, version: int, metadata: str) -> None:
        """Append with an idempotent-write id: skipped when the table records ``app`` at ``version`` or later,
        failed when a concurrent commit records ``app``."""

    def restore(self, name: str, version: int, tag: str) -> None:
        """A new version of the table with the content of ``version``."""

    def delete(self, name: str) -> None:
        """Delete a table with its files (where the storage allows)."""

    def newest(self) -> LakeState:
        """The newest row of ``_ingests``."""

    def data_files(self, name: str) -> int:
        """Data files of the table's newest version."""

    def seqs(self) -> pa.Table:
        """Every ``seq`` of ``_ingests``."""


def is_conflict(exc: BaseException) -> bool:
    """Whether ``exc`` is Delta's optimistic-concurrency failure (a concurrent commit won), on Spark or delta-rs."""
    text = f"{type(exc).__name__} {exc} {getattr(exc, 'java_exception', '')}"
    return bool(
        re.search(
            r"DELTA_CONCURRENT_|DELTA_PROTOCOL_CHANGED|DELTA_METADATA_CHANGED|Concurrent\w*Exception|"
            r"ProtocolChangedException|MetadataChangedException|CommitFailedError",
            text,
        )
    )
