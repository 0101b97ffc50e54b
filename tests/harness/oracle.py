"""Build and run ``java/KraftOracle.java`` (Kafka's own replay) against the cached jars of one version.

The class is compiled with ``javac`` into ``<cache>/kafka/<version>/oracle/<source-sha>/`` on first use
(never committed).  ``steps()`` returns images at the given offsets and the local replica changes of
every broker between consecutive offsets, in the JSON shapes documented in ``README.md``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

from .cluster import JVM_OPTS, _pdeathsig, write_log_configs
from .kafka_dist import FetchError, KafkaDist, compile_java, java_bin

SOURCE = Path(__file__).parent / "java" / "KraftOracle.java"
RECORD_PACKAGE = "org.apache.kafka.common.record"
RECORD_CLASSES = ("ControlRecordType", "ControlRecordUtils", "FileLogInputStream", "FileRecords", "Record")
"""Classes of ``kafka-clients`` the oracle imports from RECORD_PACKAGE; from 4.3 they are in its ``internal``
subpackage (the only change of the source between releases that reflection cannot make)."""


class OracleError(RuntimeError):
    pass


def oracle_source(dist: KafkaDist) -> str:
    """``KraftOracle.java`` with the record classes imported from the package ``dist`` has them in."""
    src = SOURCE.read_text(encoding="utf-8")
    if not dist.has_class(f"{RECORD_PACKAGE}.internal.FileRecords"):
        return src
    for name in RECORD_CLASSES:
        src = re.sub(
            rf"^import {re.escape(RECORD_PACKAGE)}\.{name}\b",
            f"import {RECORD_PACKAGE}.internal.{name}",
            src,
            flags=re.M,
        )
    return src


def compile_oracle(dist: KafkaDist) -> Path:
    """The directory of ``KraftOracle.class`` compiled for ``dist`` (cached per version and source)."""
    try:
        return compile_java(dist, "oracle", {"KraftOracle.java": oracle_source(dist)})
    except FetchError as e:
        raise OracleError(str(e)) from None


def run_compiled(
    dist: KafkaDist,
    classes: Sequence[Path],
    main_class: str,
    args: Sequence[str] = (),
    *,
    timeout: float = 600,
    heap: str = "1g",
    stdin: bytes | None = None,
    env: dict[str, str] | None = None,
    text: bool = True,
    log_level: str = "ERROR",
) -> subprocess.CompletedProcess:
    """Run ``main_class`` of classes compiled for ``dist`` (``classes``: their directories, before the jars) with the
    harness's JVM options, Kafka's logs on stderr at ``log_level``."""
    tmp = Path(tempfile.mkdtemp(prefix="java-run-"))
    try:
        cmd = [
            java_bin(),
            f"-Xmx{heap}",
            *[o for o in JVM_OPTS if not o.startswith("-XX:TieredStop")],
            *write_log_configs(tmp, log_file=None, level=log_level),
            "-cp",
            os.pathsep.join([*map(str, classes), dist.classpath]),
            main_class,
            *args,
        ]
        return subprocess.run(
            cmd,
            input=stdin,
            env=env,
            capture_output=True,
            text=text,
            timeout=timeout,
            check=False,
            preexec_fn=_pdeathsig,
            start_new_session=True,
        )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def run_oracle(
    dist: KafkaDist, args: list[str], *, timeout: float = 600, heap: str = "1g", check: bool = True
) -> subprocess.CompletedProcess:
    proc = run_compiled(dist, [compile_oracle(dist)], "KraftOracle", args, timeout=timeout, heap=heap)
    if check and proc.returncode != 0:
        raise OracleError(f"KraftOracle {' '.join(args)} failed ({proc.returncode}):\n{proc.stderr[-5000:]}")
    return proc


def image(dist: KafkaDist, meta_dir: Path, offset: int, source: str = "auto") -> dict:
    p = run_oracle(dist, ["image", "--dir", str(meta_dir), "--offset", str(offset), "--source", source])
    return json.loads(p.stdout.splitlines()[0])


def changes(
    dist: KafkaDist,
    meta_dir: Path,
    from_offset: int,
    to_offset: int,
    brokers: list[int] | None = None,
    source: str = "auto",
) -> list[dict]:
    args = ["changes", "--dir", str(meta_dir), "--from", str(from_offset), "--to", str(to_offset), "--source", source]
    for b in brokers or []:
        args += ["--broker", str(b)]
    return [json.loads(line) for line in run_oracle(dist, args).stdout.splitlines() if line.strip()]


def steps(
    dist: KafkaDist, meta_dir: Path, offsets: list[int], brokers: list[int] | None = None, source: str = "auto"
) -> dict:
    """{"images": [image JSON per offset], "changes": [changes JSON per consecutive pair and broker],
    "warnings": [...], "records": n}"""
    args = ["steps", "--dir", str(meta_dir), "--offsets", ",".join(map(str, offsets)), "--source", source]
    if brokers:
        args += ["--brokers", ",".join(map(str, brokers))]
    return json.loads(run_oracle(dist, args).stdout)


def verify_snapshots(dist: KafkaDist, meta_dir: Path) -> list[dict]:
    p = run_oracle(dist, ["verify-snapshots", "--dir", str(meta_dir)], check=False)
    if p.returncode not in (0, 1):
        raise OracleError(f"verify-snapshots failed ({p.returncode}):\n{p.stderr[-5000:]}")
    return json.loads(p.stdout)


def bench(dist: KafkaDist, meta_dir: Path, *, warmup: int = 1, repeat: int = 3, source: str = "log") -> dict:
    p = run_oracle(
        dist, ["bench", "--dir", str(meta_dir), "--warmup", str(warmup), "--repeat", str(repeat), "--source", source]
    )
    return json.loads(p.stdout.splitlines()[-1])
