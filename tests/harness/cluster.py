"""Run a real Apache Kafka KRaft cluster on loopback, from the jars fetched by ``kafka_dist``.

* Every node is a separate JVM (``java -cp <cache>/lib/* kafka.Kafka server.properties``) started in its own
  process group; everything binds to 127.0.0.1 on random free ports; data lives in a temp dir.
* Layouts: ``combined`` (one node with ``process.roles=broker,controller``) or one controller (node id 0)
  plus N brokers (node ids 1..N), each with one or more log directories; more controllers can join a dynamic
  quorum (``add_controller``).
* Each node runs the cluster's Kafka version until it is upgraded in place (``upgrade_node``: another
  version's jars on the same data).
* The quorum is either ``dynamic`` (KIP-853: ``--standalone`` / ``controller.quorum.bootstrap.servers``,
  the default) or ``static`` (``controller.quorum.voters``).
* Teardown is guaranteed three ways: the context manager, an ``atexit`` hook, and a watchdog thread that
  kills every JVM of the cluster after ``hard_timeout`` seconds.  JVMs also get ``PR_SET_PDEATHSIG``
  (SIGKILL) so they die if the Python process is killed.
"""

from __future__ import annotations

import atexit
import base64
import contextlib
import ctypes
import os
import signal
import socket
import subprocess
import tempfile
import threading
import time
import uuid
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Self

from .kafka_dist import SHORT_LIVED_JVM, KafkaDist, java_bin

LOOPBACK = "127.0.0.1"
CONTROLLER_ID = 0

_LIVE: weakref.WeakSet[KafkaCluster] = weakref.WeakSet()


def _kill_all_live() -> None:
    for c in list(_LIVE):
        with contextlib.suppress(Exception):
            c.kill_all()


atexit.register(_kill_all_live)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((LOOPBACK, 0))
        return s.getsockname()[1]


def random_kafka_uuid() -> str:
    """A random Uuid in Kafka's string form (url-safe base64, no padding, never starting with '-')."""
    while True:
        s = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not s.startswith("-"):
            return s


def _pdeathsig() -> None:  # runs in the child between fork and exec
    with contextlib.suppress(Exception):
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


JVM_OPTS = [
    "-Xms64m",
    *SHORT_LIVED_JVM,
    "-XX:+ExitOnOutOfMemoryError",
    "-Djava.awt.headless=true",
    "-Djava.net.preferIPv4Stack=true",
]

LOG4J1 = """log4j.rootLogger={level}, out
log4j.appender.out={appender}
{file_line}log4j.appender.out.layout=org.apache.log4j.PatternLayout
log4j.appender.out.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.org.apache.kafka.clients=WARN
log4j.logger.kafka.request.logger=WARN
log4j.logger.state.change.logger=INFO
"""

LOG4J2 = """status = warn
appender.out.type = {type2}
appender.out.name = out
{file_line2}appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = {level}
rootLogger.appenderRef.out.ref = out
logger.clients.name = org.apache.kafka.clients
logger.clients.level = WARN
"""


def write_log_configs(directory: Path, *, log_file: Path | None, level: str = "INFO") -> list[str]:
    """Write log4j (3.x, reload4j) and log4j2 (4.x) configs; returns the -D options selecting them."""
    directory.mkdir(parents=True, exist_ok=True)
    if log_file is not None:
        l1 = LOG4J1.format(
            level=level, appender="org.apache.log4j.FileAppender", file_line=f"log4j.appender.out.File={log_file}\n"
        )
        l2 = LOG4J2.format(level=level, type2="File", file_line2=f"appender.out.fileName = {log_file}\n")
    else:
        l1 = LOG4J1.format(
            level=level, appender="org.apache.log4j.ConsoleAppender", file_line="log4j.appender.out.Target=System.err\n"
        )
        l2 = LOG4J2.format(level=level, type2="Console", file_line2="appender.out.target = SYSTEM_ERR\n")
    p1, p2 = directory / "log4j.properties", directory / "log4j2.properties"
    p1.write_text(l1)
    p2.write_text(l2)
    return [f"-Dlog4j.configuration=file:{p1}", f"-Dlog4j2.configurationFile={p2}"]


def java_command(
    dist: KafkaDist,
    main_class: str,
    args: list[str],
    log_options: list[str],
    *,
    heap: str = "256m",
    extra_cp: Sequence[str | Path] = (),
    extra_jvm: list[str] | None = None,
) -> list[str]:
    """The command line running one of Kafka's main classes from the cached jars (``log_options`` from
    :func:`write_log_configs`; ``extra_cp`` before them)."""
    cp = os.pathsep.join([*map(str, extra_cp), dist.classpath])
    return [java_bin(), f"-Xmx{heap}", *JVM_OPTS, *log_options, *(extra_jvm or []), "-cp", cp, main_class, *args]


def run_java(
    dist: KafkaDist,
    main_class: str,
    args: list[str],
    *,
    timeout: float = 120,
    heap: str = "256m",
    extra_cp: Sequence[str | Path] = (),
    log_level: str = "WARN",
    check: bool = True,
    input_text: str | None = None,
    extra_jvm: list[str] | None = None,
    cwd: Path | None = None,
) -> subprocess.CompletedProcess:
    """Run one of Kafka's CLI main classes from the cached jars (bounded by ``timeout``)."""
    tmp = Path(tempfile.mkdtemp(prefix="kraft-java-"))
    try:
        cmd = java_command(
            dist,
            main_class,
            args,
            write_log_configs(tmp, log_file=None, level=log_level),
            heap=heap,
            extra_cp=extra_cp,
            extra_jvm=extra_jvm,
        )
        proc = subprocess.run(
            cmd,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            input=input_text if input_text is not None else "",
            preexec_fn=_pdeathsig,
            start_new_session=True,
            cwd=cwd,
        )
        if check and proc.returncode != 0:
            raise RuntimeError(
                f"{main_class} {' '.join(args)} failed ({proc.returncode}):\n"
                f"stdout:\n{proc.stdout[-3000:]}\nstderr:\n{proc.stderr[-3000:]}"
            )
        return proc
    finally:
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)


@dataclass
class Node:
    node_id: int
    roles: str  # "controller", "broker" or "broker,controller"
    dir: Path
    broker_port: int | None
    controller_port: int | None
    dist: KafkaDist
    rack: str | None = None
    log_dirs: int = 1  # a broker's log directories: data, data-2, ... (the metadata log is in the first)
    props: dict[str, str] = field(default_factory=dict)  # this node's own properties (over the cluster's)
    proc: subprocess.Popen | None = None
    log_file: Path | None = None
    starts: int = 0
    down_expected: bool = False
    frozen: bool = False  # stopped with SIGSTOP (``KafkaCluster.freeze_node``)

    @property
    def is_broker(self) -> bool:
        return "broker" in self.roles

    @property
    def is_controller(self) -> bool:
        return "controller" in self.roles

    @property
    def data_dir(self) -> Path:
        return self.dir / "data"

    @property
    def metadata_log_dir(self) -> Path:
        return self.data_dir / "__cluster_metadata-0"

    @property
    def log_dir_paths(self) -> list[Path]:
        """The node's ``log.dirs``, the metadata directory first."""
        return [self.data_dir] + [self.dir / f"data-{i}" for i in range(2, self.log_dirs + 1)]

    def directory_id(self, log_dir: Path) -> str:
        """The directory id the formatter wrote into ``log_dir``'s ``meta.properties``."""
        for line in (log_dir / "meta.properties").read_text().splitlines():
            if line.startswith("directory.id="):
                return line.split("=", 1)[1].strip()
        raise ClusterError(f"{log_dir}/meta.properties has no directory.id")

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None


@dataclass
class ClusterSpec:
    brokers: int = 3
    combined: bool = False
    quorum: str = "dynamic"  # or "static"
    release_version: str | None = None  # --release-version for format (e.g. "4.0-IV3")
    heap: str = "384m"
    racks: bool = True
    log_dirs: int = 1  # log directories of each broker
    controller_props: dict[str, str] = field(default_factory=dict)
    broker_props: dict[str, str] = field(default_factory=dict)
    hard_timeout: float = 900.0


class ClusterError(RuntimeError):
    pass


class KafkaCluster:
    """A KRaft cluster of real Kafka JVMs.  Use as a context manager."""

    def __init__(
        self, dist: KafkaDist, spec: ClusterSpec | None = None, workdir: Path | None = None, keep_workdir: bool = False
    ):
        self.dist = dist
        self.spec = spec or ClusterSpec()
        self._own_workdir = workdir is None
        self.workdir = Path(workdir or tempfile.mkdtemp(prefix="kraft-cluster-"))
        self.keep_workdir = keep_workdir
        self.cluster_id = random_kafka_uuid()
        self.nodes: dict[int, Node] = {}
        self._watchdog: threading.Timer | None = None
        self._admin = None
        self._build_nodes()

    # ------------------------------------------------------------------ layout
    def _build_nodes(self) -> None:
        s = self.spec
        if s.combined:
            self.nodes[1] = Node(
                1,
                "broker,controller",
                self.workdir / "node1",
                free_port(),
                free_port(),
                self.dist,
                rack="rack-a" if s.racks else None,
                log_dirs=s.log_dirs,
            )
        else:
            self.nodes[CONTROLLER_ID] = Node(
                CONTROLLER_ID, "controller", self.workdir / f"node{CONTROLLER_ID}", None, free_port(), self.dist
            )
            for i in range(1, s.brokers + 1):
                rack = f"rack-{'abc'[(i - 1) % 3]}" if s.racks else None
                self.nodes[i] = Node(
                    i, "broker", self.workdir / f"node{i}", free_port(), None, self.dist, rack=rack, log_dirs=s.log_dirs
                )

    @property
    def controller(self) -> Node:
        return next(n for n in self.nodes.values() if n.is_controller)

    @property
    def brokers(self) -> list[Node]:
        return [n for n in sorted(self.nodes.values(), key=lambda n: n.node_id) if n.is_broker]

    def bootstrap_servers(self, only_alive: bool = True) -> str:
        nodes = [n for n in self.brokers if (n.alive() and not n.frozen or not only_alive)] or self.brokers
        return ",".join(f"{LOOPBACK}:{n.broker_port}" for n in nodes)

    @property
    def controller_endpoint(self) -> str:
        c = self.controller
        return f"{LOOPBACK}:{c.controller_port}"

    def metadata_log_dir(self, node_id: int | None = None) -> Path:
        node = self.nodes[node_id] if node_id is not None else self.controller
        return node.metadata_log_dir

    def _props(self, n: Node) -> dict[str, str]:
        s = self.spec
        c = self.controller
        listeners: list[str] = []
        if n.is_broker:
            listeners.append(f"PLAINTEXT://{LOOPBACK}:{n.broker_port}")
        if n.is_controller:
            listeners.append(f"CONTROLLER://{LOOPBACK}:{n.controller_port}")
        p = {
            "process.roles": n.roles,
            "node.id": str(n.node_id),
            "listeners": ",".join(listeners),
            "controller.listener.names": "CONTROLLER",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
            "log.dirs": ",".join(str(d) for d in n.log_dir_paths),
            "num.network.threads": "2",
            "num.io.threads": "2",
            "background.threads": "2",
            "num.recovery.threads.per.data.dir": "1",
            "num.replica.fetchers": "1",
            "num.partitions": "1",
            "auto.create.topics.enable": "false",
            "auto.leader.rebalance.enable": "false",
            "offsets.topic.replication.factor": "1",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "share.coordinator.state.topic.replication.factor": "1",
            "share.coordinator.state.topic.min.isr": "1",
            "group.initial.rebalance.delay.ms": "0",
            "broker.heartbeat.interval.ms": "500",
            "broker.session.timeout.ms": "4000",
            "controller.quorum.election.timeout.ms": "1000",
            "controller.quorum.fetch.timeout.ms": "2000",
            "metadata.max.idle.interval.ms": "500",
            "log.flush.interval.messages": "1",
        }
        if s.quorum == "static":
            p["controller.quorum.voters"] = f"{c.node_id}@{LOOPBACK}:{c.controller_port}"
        else:
            p["controller.quorum.bootstrap.servers"] = f"{LOOPBACK}:{c.controller_port}"
        if n.is_broker:
            p["advertised.listeners"] = f"PLAINTEXT://{LOOPBACK}:{n.broker_port}"
            p["inter.broker.listener.name"] = "PLAINTEXT"
            if n.rack:
                p["broker.rack"] = n.rack
            p.update(s.broker_props)
        if n.is_controller:
            if n.is_broker is False and "advertised.listeners" not in p and n.dist.major >= 4:
                p["advertised.listeners"] = f"CONTROLLER://{LOOPBACK}:{n.controller_port}"
            p.update(s.controller_props)
        p.update(n.props)
        return p

    # ------------------------------------------------------------------ lifecycle
    def _write_node_files(self, n: Node) -> Path:
        n.dir.mkdir(parents=True, exist_ok=True)
        props = self._props(n)
        path = n.dir / "server.properties"
        path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
        n.log_file = n.dir / "server.log"
        return path

    def format(self) -> None:
        for n in self.nodes.values():
            self.format_node(n, standalone=n.is_controller)

    def format_node(self, n: Node, *, standalone: bool) -> None:
        """``kafka-storage format`` of one node: ``--standalone`` for the first controller of a dynamic quorum,
        ``--no-initial-controllers`` for the others (4.x)."""
        cfg = self._write_node_files(n)
        args = ["format", "-t", self.cluster_id, "-c", str(cfg)]
        if self.spec.release_version:
            args += ["--release-version", self.spec.release_version]
        if self.spec.quorum == "dynamic":
            if standalone:
                args.append("--standalone")
            elif n.dist.major >= 4:
                args.append("--no-initial-controllers")
        run_java(n.dist, "kafka.tools.StorageTool", args, timeout=120)

    def start(self, timeout: float = 90) -> None:
        self._arm_watchdog()
        _LIVE.add(self)
        if not any(n.data_dir.exists() for n in self.nodes.values()):
            self.format()
        ctrl = self.controller
        self.start_node(ctrl.node_id, wait=False)
        for b in self.brokers:
            if b.node_id != ctrl.node_id:
                self.start_node(b.node_id, wait=False)
        self.wait_brokers_unfenced([b.node_id for b in self.brokers], timeout=timeout)

    def start_node(self, node_id: int, *, wait: bool = True, timeout: float = 60) -> None:
        n = self.nodes[node_id]
        if n.alive():
            return
        cfg = self._write_node_files(n)
        logopts = write_log_configs(n.dir, log_file=n.log_file, level="INFO")
        cmd = [
            java_bin(),
            f"-Xmx{self.spec.heap}",
            *JVM_OPTS,
            *logopts,
            f"-Dkafka.logs.dir={n.dir}",
            "-cp",
            n.dist.classpath,
            "kafka.Kafka",
            str(cfg),
        ]
        out = open(n.dir / "stdout.log", "ab")  # noqa: SIM115 (handed to the child, closed below)
        n.down_expected = False
        n.proc = subprocess.Popen(
            cmd,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
            preexec_fn=_pdeathsig,
            cwd=n.dir,
        )  # noqa: PLW1509
        out.close()
        n.starts += 1
        if wait and n.is_broker:
            self.wait_brokers_unfenced([node_id], timeout=timeout)

    def stop_node(self, node_id: int, *, timeout: float = 60) -> None:
        """Graceful stop (SIGTERM: a broker does a controlled shutdown); SIGKILL after ``timeout``."""
        n = self.nodes[node_id]
        if not n.alive():
            return
        n.down_expected = True
        with contextlib.suppress(ProcessLookupError):
            os.killpg(n.proc.pid, signal.SIGTERM)
        try:
            n.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill_node(node_id)
        self._reset_admin()

    def kill_node(self, node_id: int) -> None:
        """Hard kill (SIGKILL of the node's process group): no controlled shutdown."""
        n = self.nodes[node_id]
        if n.proc is None:
            return
        n.down_expected = True
        with contextlib.suppress(ProcessLookupError):
            os.killpg(n.proc.pid, signal.SIGKILL)
        with contextlib.suppress(Exception):
            n.proc.wait(timeout=30)
        self._reset_admin()

    def restart_node(
        self, node_id: int, *, dist: KafkaDist | None = None, props: dict[str, str] | None = None, timeout: float = 90
    ) -> None:
        """Graceful stop, then start again on the same data: with another Kafka version's jars (an upgrade in
        place) and/or with ``props`` added to the node's own properties (a value None removes one)."""
        n = self.nodes[node_id]
        self.stop_node(node_id)
        if dist is not None:
            n.dist = dist
        for k, v in (props or {}).items():
            if v is None:
                n.props.pop(k, None)
            else:
                n.props[k] = v
        self.start_node(node_id, wait=True, timeout=timeout)

    def add_controller(self, node_id: int, dist: KafkaDist | None = None) -> Node:
        """A new controller node of the dynamic quorum, formatted without initial controllers and started: it
        fetches the log as an observer and registers itself (KIP-919), until ``kafka-metadata-quorum
        add-controller`` makes it a voter (KIP-853)."""
        if self.spec.quorum != "dynamic" or node_id in self.nodes:
            raise ClusterError(
                f"cannot add controller {node_id} (quorum {self.spec.quorum}, nodes {sorted(self.nodes)})"
            )
        n = Node(node_id, "controller", self.workdir / f"node{node_id}", None, free_port(), dist or self.dist)
        self.nodes[node_id] = n
        self.format_node(n, standalone=False)
        self.start_node(node_id, wait=False)
        return n

    def freeze_node(self, node_id: int) -> None:
        """Suspend the node's JVMs (SIGSTOP): its files stay exactly as they are, like a node that hangs.
        The admin client is rebuilt so that it no longer bootstraps from a frozen broker."""
        n = self.nodes[node_id]
        if n.proc is None or n.frozen:
            return
        os.killpg(n.proc.pid, signal.SIGSTOP)
        n.frozen = True
        self._reset_admin()

    def thaw_node(self, node_id: int) -> None:
        """Resume a node suspended by :meth:`freeze_node` (SIGCONT)."""
        n = self.nodes[node_id]
        if n.proc is None or not n.frozen:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(n.proc.pid, signal.SIGCONT)
        n.frozen = False

    def stop(self, timeout: float = 60) -> None:
        """Stop brokers first (controlled shutdown), then controllers."""
        for n in self.nodes.values():
            self.thaw_node(n.node_id)
        try:
            for b in self.brokers:
                if not b.is_controller:
                    self.stop_node(b.node_id, timeout=timeout)
            for n in self.nodes.values():
                self.stop_node(n.node_id, timeout=timeout)
        finally:
            self.kill_all()

    def kill_all(self) -> None:
        self._reset_admin()
        for n in self.nodes.values():
            n.down_expected = True
            if n.proc is not None and n.proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(n.proc.pid, signal.SIGKILL)
                with contextlib.suppress(Exception):
                    n.proc.wait(timeout=30)
        if self._watchdog:
            self._watchdog.cancel()
            self._watchdog = None
        _LIVE.discard(self)

    def pids(self) -> list[int]:
        return [n.proc.pid for n in self.nodes.values() if n.proc is not None]

    def _arm_watchdog(self) -> None:
        if self._watchdog is None and self.spec.hard_timeout:
            self._watchdog = threading.Timer(self.spec.hard_timeout, self._on_watchdog)
            self._watchdog.daemon = True
            self._watchdog.start()

    def _on_watchdog(self) -> None:
        self._watchdog = None
        self.kill_all()

    def __enter__(self) -> Self:
        try:
            self.start()
        except BaseException:
            self.kill_all()
            raise
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        try:
            self.stop()
        finally:
            self.kill_all()
            if exc_type is not None and self._own_workdir:
                import sys

                print(f"[harness] cluster failed; its files are kept in {self.workdir}", file=sys.stderr)
            elif self._own_workdir and not self.keep_workdir:
                import shutil

                shutil.rmtree(self.workdir, ignore_errors=True)

    # ------------------------------------------------------------------ admin
    def _reset_admin(self) -> None:
        if self._admin is not None:
            with contextlib.suppress(Exception):
                self._admin.close()
            self._admin = None

    def admin(self):
        """A kafka-python KafkaAdminClient bootstrapped from the live brokers (cached)."""
        if self._admin is None:
            from kafka.admin import KafkaAdminClient
            from kafka.errors import KafkaConfigurationError

            last = None
            for _ in range(20):
                try:
                    self._admin = KafkaAdminClient(
                        bootstrap_servers=self.bootstrap_servers(),
                        client_id="kraft-replay-harness",
                        request_timeout_ms=15000,
                        bootstrap_timeout_ms=10000,
                    )
                    break
                except KafkaConfigurationError:
                    raise
                except Exception as e:  # noqa: BLE001 (broker still starting)
                    last = e
                    time.sleep(0.5)
            else:
                raise ClusterError(f"cannot connect an admin client: {last}")
        return self._admin

    def describe_cluster(self) -> dict:
        return self.admin().describe_cluster()

    def wait_brokers_unfenced(self, ids: list[int], timeout: float = 60) -> None:
        """Wait until every id is an alive (unfenced) broker in describe_cluster."""
        self.wait_for(
            lambda: set(ids) <= {b["broker_id"] for b in self.describe_cluster()["brokers"] if not b.get("is_fenced")},
            timeout,
            f"brokers {ids} registered and unfenced",
        )

    def wait_for(self, cond: Callable[[], bool], timeout: float, what: str, interval: float = 0.3) -> None:
        deadline = time.monotonic() + timeout
        last_exc = None
        while time.monotonic() < deadline:
            self._check_processes()
            try:
                if cond():
                    return
            except Exception as e:  # noqa: BLE001 (transient admin errors while nodes restart)
                last_exc = e
                self._reset_admin()
            time.sleep(interval)
        raise ClusterError(
            f"timed out after {timeout}s waiting for {what}"
            + (f" (last error: {last_exc!r})" if last_exc else "")
            + self._log_tails()
        )

    def _check_processes(self) -> None:
        for n in self.nodes.values():
            if n.proc is not None and n.proc.poll() is not None and not n.down_expected:
                raise ClusterError(
                    f"node {n.node_id} exited unexpectedly with code {n.proc.returncode}" + self._log_tails()
                )

    def _log_tails(self, lines: int = 15) -> str:
        out = []
        for n in self.nodes.values():
            f = n.dir / "stdout.log"
            if f.exists():
                tail = f.read_text(errors="replace").splitlines()[-lines:]
                if tail:
                    out.append(f"\n--- node {n.node_id} stdout tail ---\n" + "\n".join(tail))
        return "".join(out)
