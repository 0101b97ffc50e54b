"""kraft-replay's cache directory, a lock for what several processes of a machine fill once, and generated code
compiled once for every later process.

The record-body readers are Python source generated from the schema (:mod:`metadata.log.codec.message`);
compiling them costs a small ingest a tenth of a second in every process. :func:`compiled` keeps each compiled
code object (``marshal``) under :func:`cache_root`, keyed by a hash of the source, its file name and the
interpreter's bytecode tag: a changed source or another Python is a new key, never a stale hit.
"""

from __future__ import annotations

import contextlib
import hashlib
import marshal
import os
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from types import CodeType

_DIGEST = 16
"""Bytes of the SHA-256 of the marshalled code written before it: a damaged file is compiled again, not run."""


def cache_root() -> Path:
    """kraft-replay's cache directory, the one for everything it keeps between runs (compiled code, Delta's jar
    paths, the shell's history, the test harness's Kafka jars): ``$KRAFT_REPLAY_CACHE``, else
    ``$XDG_CACHE_HOME/kraft-replay``, else ``~/.cache/kraft-replay``."""
    env = os.environ.get("KRAFT_REPLAY_CACHE")
    if env:
        return Path(env).expanduser()
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "kraft-replay"


@contextlib.contextmanager
def exclusive(lock: Path) -> Iterator[None]:
    """Held by one process of the machine at a time (an exclusive ``flock`` on the file ``lock``, made with its
    directory if missing; where there is no ``fcntl``, no lock): for work that fills a shared cache once — a second
    process waits, then finds it filled."""
    try:
        import fcntl
    except ImportError:  # (not POSIX)
        yield
        return
    lock.parent.mkdir(parents=True, exist_ok=True)
    with open(lock, "a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(held, fcntl.LOCK_UN)


def code_path(source: str, filename: str) -> Path:
    """Where the code of ``source`` (compiled as ``filename``) by this interpreter is kept."""
    tag = sys.implementation.cache_tag
    key = hashlib.sha256(f"{tag}\0{filename}\0{source}".encode()).hexdigest()
    return cache_root() / "code" / tag / f"{key}.marshal"


def compiled(source: str, filename: str) -> CodeType:
    """``compile(source, filename, "exec")``, loaded from the cache when a process compiled it before, else compiled
    and stored (written to a temporary file, then renamed: readers never see half a file). A cache that cannot be
    read or written (a read-only or missing home) only means compiling every time."""
    path = code_path(source, filename)
    try:
        data = path.read_bytes()
        body = data[_DIGEST:]
        if data[:_DIGEST] == hashlib.sha256(body).digest()[:_DIGEST]:
            code = marshal.loads(body)
            if isinstance(code, CodeType):
                return code
    except (OSError, ValueError, EOFError, TypeError):
        pass
    code = compile(source, filename, "exec")
    body = marshal.dumps(code)
    temporary = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary.write_bytes(hashlib.sha256(body).digest()[:_DIGEST] + body)
        os.replace(temporary, path)
    except OSError:
        with contextlib.suppress(OSError):
            temporary.unlink(missing_ok=True)
    return code
