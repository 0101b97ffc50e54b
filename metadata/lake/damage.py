"""A damaged lake in one line: which table, file or version is missing or unreadable, and what to do.

The same words whichever reader met the damage: Spark and Delta (:func:`metadata.lake.protocol.explain`, from the
exception's text) or delta-rs and pyarrow in process (:mod:`metadata.lake.files`, from what it checked).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from urllib.parse import unquote


def hint(lake: str) -> str:
    """The pointer to ``kraft-replay check`` that ends every message."""
    return f" (`kraft-replay check --lake {lake}` lists every problem)"


def missing_file(head: str, name: str, vacuum: int | None, check: str) -> str:
    """A data file the committed state reads is gone (by a VACUUM of table version ``vacuum``, or not)."""
    why = (
        f"a VACUUM (table version {vacuum}) removed it though the committed state still reads it"
        if vacuum is not None
        else "deleted outside Delta"
    )
    return f"{head}: data file {name} is missing ({why}); restore it from a backup, or {_REBUILD}{check}"


def damaged_file(head: str, name: str, check: str) -> str:
    return (
        f"{head}: data file {name} is damaged (not a readable Parquet file); restore it from a backup, "
        f"or {_REBUILD}{check}"
    )


def log_file(head: str, name: str, missing: bool, check: str) -> str:
    """A Delta log file (``_delta_log/<version>.json``) missing or damaged."""
    return (
        f"{head}: its Delta log file {name} {'is missing' if missing else 'is damaged'}; restore the table's "
        f"_delta_log from a backup, or {_REBUILD}{check}"
    )


def corrupt_log(head: str, name: str | None, check: str) -> str:
    return (
        f"{head}: a Delta log file{' ' + name if name else ''} is corrupt; restore the table's _delta_log "
        f"from a backup, or {_REBUILD}{check}"
    )


def version_gone(head: str, version: int, first: int, last: int, check: str) -> str:
    """The committed version is not in the table's Delta log (which holds ``first``–``last``)."""
    return (
        f"{head}: version {version} is not in the table's Delta log any more (it holds versions "
        f"{first}–{last}): log clean-up or deleted log files; {_REBUILD}{check}"
    )


def missing_table(head: str, check: str) -> str:
    return f"{head} is missing (no Delta table at its path); restore it from a backup, or {_REBUILD}{check}"


_FILE_RE = re.compile(
    r"((?:file:|hdfs:|s3a?:|gs:|abfss?:|wasbs?:)?/[^\s,;'\"\]\[)]+?"
    r"(?:\.parquet|_delta_log/\d{20}\.json|_delta_log))(?=[\s.,;:'\")\]]|$)"
)
_VERSIONS_RE = re.compile(r"version\s+(\d+)\b.*?[Aa]vailable versions:?\s*\[(\d+),\s*(\d+)\]", re.DOTALL)
_REBUILD = "re-ingest the sources into a new lake"


def _located(path: str) -> tuple[str, str, str]:
    """(lake, table, file name) of a path ``<lake>/<table>/<file>`` or ``<lake>/<table>/_delta_log[/<file>]``."""
    path = unquote(path).removeprefix("file://").removeprefix("file:")
    table_dir, _, log_file = path.partition("/_delta_log")
    if log_file or path.endswith("/_delta_log"):
        name = f"_delta_log{log_file}"
    else:
        table_dir, name = path.rsplit("/", 1)
    lake, table = table_dir.rsplit("/", 1)
    return lake, table, name


def explain(
    exc: BaseException,
    lake: str | None = None,
    table: str | None = None,
    version: int | None = None,
    vacuumed: Callable[[str], int | None] | None = None,
) -> str | None:
    """One line for a Spark/Delta failure that comes from a damaged lake (a data file missing or not
    readable, a Delta log entry missing or corrupt, a table missing, a version no longer available):
    which table, file or version, and what to do. None for any other failure.

    ``lake``/``table``/``version``: what was being read, when the caller knows (the path in the message
    names the table otherwise); ``vacuumed(table path)``: the version of the table's newest VACUUM, if any.
    """
    from metadata.lake.state import LakeError

    if isinstance(exc, LakeError):
        return None
    text = f"{type(exc).__name__}: {exc} {getattr(exc, 'java_exception', '') or ''}"
    what = (f"table {table}" + (f" at version {version}" if version is not None else "")) if table else "a table"
    check = hint(lake) if lake else ""
    if (m := _FILE_RE.search(text)) and (found := _located(m.group(1))):
        flake, ftable, name = found
        lake, check = lake or flake, check or hint(lake or flake)
        head = f"lake {lake}: table {table or ftable}" + (f" at version {version}" if version is not None else "")
        missing = re.search(r"FileNotFound|FILE_NOT_EXIST|does not exist|No such file", text)
        if name == "_delta_log" and missing:
            return (
                f"{head} is missing (no Delta table at {lake}/{ftable}); restore it from a backup, or {_REBUILD}{check}"
            )
        if name.startswith("_delta_log"):
            return log_file(head, name, bool(missing), check)
        if missing:
            return missing_file(head, name, vacuumed(f"{lake}/{ftable}") if vacuumed is not None else None, check)
        if re.search(
            r"FAILED_READ_FILE|not a Parquet file|magic number|CANNOT_READ_FILE_FOOTER|EOFException|"
            r"Checksum|footer|corrupt|Parquet",
            text,
            re.IGNORECASE,
        ):
            return damaged_file(head, name, check)
    where = f"lake {lake}: " if lake else ""
    if m := _VERSIONS_RE.search(text):
        return version_gone(
            f"{where}{'table ' + table if table else 'a table'}",
            int(m.group(1)),
            int(m.group(2)),
            int(m.group(3)),
            check,
        )
    if re.search(
        r"DELTA_VERSIONS_NOT_CONTIGUOUS|not contiguous|DELTA_STATE_RECOVER_ERROR|DELTA_MISSING_PART_FILES|"
        r"DELTA_TRUNCATED_TRANSACTION_LOG|DeltaFileNotFoundException|DELTA_FILE_NOT_FOUND",
        text,
    ):
        found = re.search(r"Versions \(([\d, ]+)\)", text)
        listed = f" (it holds versions {found.group(1)})" if found else ""
        return (
            f"{where}{what}: its Delta log is missing commit files{listed}; restore the table's _delta_log "
            f"from a backup, or {_REBUILD}{check}"
        )
    if re.search(
        r"JsonParse|Unrecognized token|Unexpected end-of-input|MismatchedInputException|"
        r"DELTA_INVALID_COMMIT|Failed to parse",
        text,
    ):
        log = re.search(r"(\d{20}\.json)", text)
        return corrupt_log(f"{where}{what}", log.group(1) if log else None, check)
    if re.search(
        r"DELTA_MISSING_DELTA_TABLE|DELTA_TABLE_NOT_FOUND|is not a Delta table|DELTA_PATH_DOES_NOT_EXIST", text
    ):
        return missing_table(f"{where}{what}", check)
    return None
