"""Resolve Apache Kafka jars (and their dependencies) from Maven Central into a local cache.

Layout (``$KRAFT_REPLAY_CACHE`` or ``~/.cache/kraft-replay``)::

    <cache>/m2/                        Maven local repository used for the resolution
    <cache>/kafka/<version>/pom.xml    the generated pom
    <cache>/kafka/<version>/lib/*.jar  runtime class path (server, tools, shell, metadata, raft, ...)
    <cache>/kafka/<version>/.complete  marker holding the pom's sha256 (idempotency)
    <cache>/kafka/<version>/oracle/<sha>/, shell/<sha>/   classes compiled against the version (compile_java)
    <cache>/kafka/<version>/kafka-shell-*-sources.jar      the shell's sources where it is compiled (SHELL_SOURCE_MOVES)

Nothing here is committed to the repository.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
import time
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from metadata.log.cache import cache_root, exclusive

RELEASES = {"3.9": "3.9.2", "4.0": "4.0.2", "4.1": "4.1.2", "4.2": "4.2.2", "4.3": "4.3.2", "4.4": "4.4.0"}
"""Every supported Kafka release line and the newest patch of it that Maven Central serves (the version the
harness runs for that line: its scenarios, oracle, dump-log and shell)."""
DEFAULT_VERSIONS = tuple(RELEASES.values())
NEWEST = RELEASES[max(RELEASES, key=lambda line: tuple(map(int, line.split("."))))]
"""The newest release: the live smoke test's cluster."""
SHELL_VERSIONS = {"4.2.2": "4.2.1", "4.3.2": "4.3.1", "4.4.0": "4.3.1"}
"""``kafka-shell`` is not on Maven Central for these versions (checked 2026-12-02: the artifact's versions end at
4.3.1, with no 4.2.2): the newest published shell of the line (or before it) is resolved instead, with every
other jar (metadata, image, raft, server-common) of the version itself. ``tests/test_kafka_oracle.py`` checks
the shell against the oracle's image on every fixture of the line."""
SHELL_SOURCE_MOVES = {
    "4.4.0": {
        "kafka.tools.TerseFailure": "org.apache.kafka.server.util.TerseFailure",
        "org.apache.kafka.common.utils.Exit": "org.apache.kafka.common.utils.internals.Exit",
        "org.apache.kafka.common.utils.AppInfoParser": "org.apache.kafka.common.utils.internals.AppInfoParser",
    }
}
"""Versions whose shell is compiled from the SHELL_VERSIONS shell's sources (its ``-sources`` jar) with these
imports moved, because that jar does not run on them: 4.4 moved three classes the 4.3 shell imports (Kafka
commits 98e13b7ba8, 0a367aa1ec, 10805c9782), and those three imports are the whole difference between the
shell module's sources at 4.3.1 and on the 4.4 branch. The compiled classes replace the shell jar."""

# Artifacts whose runtime dependency closure forms the class path.
KAFKA_ARTIFACTS = (
    "kafka_2.13",  # kafka.Kafka, kafka.tools.StorageTool, kafka.tools.DumpLogSegments
    "kafka-tools",  # MetadataQuorumCommand, ReassignPartitionsCommand, LeaderElectionCommand, FeatureCommand
    "kafka-metadata",  # MetadataImage/MetadataDelta/MetadataRecordSerde (oracle)
    "kafka-server",
    "kafka-storage",
    "kafka-shell",  # org.apache.kafka.shell.MetadataShell (version: SHELL_VERSIONS)
    "kafka-raft",
    "kafka-server-common",
    "kafka-clients",
)
SHORT_LIVED_JVM = ("-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1")
"""Options of the harness's JVMs (Kafka's nodes and tools, Maven, javac): each runs briefly on a small heap, where
the C2 compiler's and the parallel collectors' threads cost more CPU than they save (Maven's fetch of one release:
16 CPU-seconds without them, 10 with; measured 2026-12-02)."""

# Kafka 4.x logs through log4j2 but ships no slf4j binding as a Maven dependency; 3.x brings
# slf4j-reload4j itself.
LOG4J2_VERSION = "2.24.3"


class FetchError(RuntimeError):
    pass


def major(version: str) -> int:
    return int(version.split(".")[0])


def release_line(version: str) -> str:
    """``"4.3"`` for ``"4.3.1"``: the release line of a Kafka version."""
    return ".".join(version.split(".")[:2])


def line_version(version: str) -> str:
    """The version the harness runs for ``version``'s release line (the newest patch, ``RELEASES``)."""
    line = release_line(version)
    if line not in RELEASES:
        raise FetchError(f"Kafka {version}: release line {line} is not supported (supported: {', '.join(RELEASES)})")
    return RELEASES[line]


def artifact_version(artifact: str, version: str) -> str:
    """The version of ``artifact`` resolved for Kafka ``version`` (the version itself but for SHELL_VERSIONS)."""
    return SHELL_VERSIONS.get(version, version) if artifact == "kafka-shell" else version


def _extra_deps(version: str) -> list[tuple[str, str, str, str]]:
    deps = []
    if major(version) >= 4:
        deps.append(("org.apache.logging.log4j", "log4j-slf4j-impl", LOG4J2_VERSION, ""))
    if version in SHELL_SOURCE_MOVES:
        deps.append(("org.apache.kafka", "kafka-shell", artifact_version("kafka-shell", version), "sources"))
    return deps


def shell_sources_jar(version: str) -> str | None:
    """File name of the shell sources jar resolved for ``version`` (SHELL_SOURCE_MOVES), or None."""
    return (
        f"kafka-shell-{artifact_version('kafka-shell', version)}-sources.jar" if version in SHELL_SOURCE_MOVES else None
    )


def generate_pom(version: str) -> str:
    deps = [("org.apache.kafka", a, artifact_version(a, version), "") for a in KAFKA_ARTIFACTS] + _extra_deps(version)
    dep_xml = "\n".join(
        f"    <dependency><groupId>{g}</groupId><artifactId>{a}</artifactId><version>{v}</version>"
        + (f"<classifier>{c}</classifier>" if c else "")
        + "</dependency>"
        for g, a, v, c in deps
    )
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<!-- generated by tests/harness/kafka_dist.py; do not edit -->
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>kraft-replay.harness</groupId>
  <artifactId>kafka-{version}-classpath</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
{dep_xml}
  </dependencies>
</project>
"""


@dataclass(frozen=True)
class KafkaDist:
    version: str
    home: Path

    @property
    def lib(self) -> Path:
        return self.home / "lib"

    @property
    def classpath(self) -> str:
        return str(self.lib / "*")

    @property
    def major(self) -> int:
        return major(self.version)

    def jars(self) -> list[Path]:
        return sorted(self.lib.glob("*.jar"))

    def has_class(self, name: str) -> bool:
        """Whether Kafka's jars hold the class ``name`` (``org.apache.kafka.tools.DumpLogSegments``)."""
        return name.replace(".", "/") + ".class" in _class_entries(self.lib)

    def main_class(self, *names: str) -> str:
        """The first of ``names`` Kafka's jars hold (a tool that moved between releases)."""
        for name in names:
            if self.has_class(name):
                return name
        raise FetchError(f"Kafka {self.version} has none of {', '.join(names)}")


@functools.cache
def _class_entries(lib: Path) -> frozenset[str]:
    """Every ``.class`` entry of Kafka's own jars (``kafka*.jar``) in ``lib``."""
    entries: set[str] = set()
    for jar in sorted(lib.glob("kafka*.jar")):
        with zipfile.ZipFile(jar) as z:
            entries.update(n for n in z.namelist() if n.endswith(".class"))
    return frozenset(entries)


def dist_home(version: str) -> Path:
    return cache_root() / "kafka" / version


def is_fetched(version: str) -> bool:
    home = dist_home(version)
    marker = home / ".complete"
    if not marker.exists():
        return False
    want = hashlib.sha256(generate_pom(version).encode()).hexdigest()
    return marker.read_text().strip() == want and any((home / "lib").glob("kafka_2.13-*.jar"))


def ensure_kafka(version: str, *, verbose: bool = False, timeout: float = 900) -> KafkaDist:
    """Return the cached distribution, resolving it with Maven first if needed (idempotent; one fetch at a time on
    the machine — the workers of a test run share the cache and Maven's repository)."""
    home = dist_home(version)
    if is_fetched(version):
        return KafkaDist(version, home)
    with exclusive(home.parent / ".fetch.lock"):
        if is_fetched(version):  # by the process this one waited for
            return KafkaDist(version, home)
        return _fetch(version, home, verbose, timeout)


def _fetch(version: str, home: Path, verbose: bool, timeout: float) -> KafkaDist:
    mvn = shutil.which("mvn")
    if not mvn:
        raise FetchError("Maven ('mvn') is not on PATH; it is needed to fetch Kafka jars")
    home.mkdir(parents=True, exist_ok=True)
    pom_text = generate_pom(version)
    (home / "pom.xml").write_text(pom_text)
    tmp_lib = home / "lib.tmp"
    shutil.rmtree(tmp_lib, ignore_errors=True)
    cmd = [
        mvn,
        "-B",
        *([] if verbose else ["-q"]),
        f"-Dmaven.repo.local={cache_root() / 'm2'}",
        "-f",
        str(home / "pom.xml"),
        "dependency:copy-dependencies",
        f"-DoutputDirectory={tmp_lib}",
        "-DincludeScope=runtime",
    ]
    env = {"MAVEN_OPTS": " ".join(SHORT_LIVED_JVM), **os.environ}  # (a MAVEN_OPTS of the user's, naming a GC, wins)
    t0 = time.monotonic()
    proc = subprocess.run(cmd, capture_output=not verbose, text=True, timeout=timeout, check=False, env=env)
    if proc.returncode != 0:
        out = (proc.stdout or "") + (proc.stderr or "")
        raise FetchError(f"mvn failed for Kafka {version} (exit {proc.returncode}):\n{out[-4000:]}")
    if not any(tmp_lib.glob(f"kafka_2.13-{version}.jar")):
        raise FetchError(f"mvn did not produce kafka_2.13-{version}.jar in {tmp_lib}")
    if sources := shell_sources_jar(version):  # the shell is compiled from them (SHELL_SOURCE_MOVES)
        (tmp_lib / sources).replace(home / sources)
        (tmp_lib / sources.replace("-sources", "")).unlink()
    shutil.rmtree(home / "lib", ignore_errors=True)
    tmp_lib.rename(home / "lib")
    (home / "fetch-seconds.txt").write_text(f"{time.monotonic() - t0:.1f}\n")
    (home / ".complete").write_text(hashlib.sha256(pom_text.encode()).hexdigest() + "\n")
    return KafkaDist(version, home)


def compile_java(dist: KafkaDist, name: str, sources: dict[str, str], before: Sequence[Path] = ()) -> Path:
    """Compile ``sources`` ({relative path: Java text}) against ``dist``'s class path (after the directories
    ``before``) into ``<dist>/<name>/<sha of the sources>/`` (once: an existing directory is the cache) and return
    it."""
    digest = hashlib.sha256()
    for path, text in sorted(sources.items()):
        digest.update(f"{path}\0{text}\0".encode())
    out = dist.home / name / digest.hexdigest()[:16]
    if out.is_dir():
        return out
    tmp = Path(tempfile.mkdtemp(prefix=f"{name}-", dir=dist.home))
    src = tmp / "src"
    for path, text in sources.items():
        (src / path).parent.mkdir(parents=True, exist_ok=True)
        (src / path).write_text(text, encoding="utf-8")
    classes = tmp / "classes"
    proc = subprocess.run(
        [
            java_bin("javac"),
            *(f"-J{option}" for option in SHORT_LIVED_JVM),
            "-nowarn",
            "-encoding",
            "UTF-8",
            "--release",
            "17",
        ]
        + ["-cp", os.pathsep.join([*map(str, before), dist.classpath])]
        + ["-d", str(classes), *(str(src / path) for path in sorted(sources))],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if proc.returncode != 0:
        shutil.rmtree(tmp, ignore_errors=True)
        raise FetchError(f"javac {name} against Kafka {dist.version} failed:\n{proc.stderr[-5000:]}")
    out.parent.mkdir(parents=True, exist_ok=True)
    if out.exists():  # compiled concurrently
        shutil.rmtree(tmp, ignore_errors=True)
    else:
        classes.rename(out)
        shutil.rmtree(tmp)
    return out


def shell_classes(dist: KafkaDist) -> Path | None:
    """The metadata shell compiled for ``dist`` (SHELL_SOURCE_MOVES), or None when its jar is on the class path."""
    sources = shell_sources_jar(dist.version)
    if sources is None:
        return None
    moves = SHELL_SOURCE_MOVES[dist.version]
    texts = {}
    with zipfile.ZipFile(dist.home / sources) as z:
        for entry in z.namelist():
            if entry.endswith(".java"):
                text = z.read(entry).decode("utf-8")
                for old, new in moves.items():
                    text = re.sub(rf"^import {re.escape(old)};", f"import {new};", text, flags=re.M)
                texts[entry] = text
    return compile_java(dist, "shell", texts)


def shell_class_path(dist: KafkaDist) -> list[Path]:
    """What the metadata shell of ``dist`` needs on the class path before its jars: the shell compiled for it
    (:func:`shell_classes`), or nothing."""
    compiled = shell_classes(dist)
    return [compiled] if compiled is not None else []


def java_bin(name: str = "java") -> str:
    jh = os.environ.get("JAVA_HOME")
    if jh and (Path(jh) / "bin" / name).exists():
        return str(Path(jh) / "bin" / name)
    found = shutil.which(name)
    if not found:
        raise FetchError(f"'{name}' is not on PATH (Java 17+ is required)")
    return found
