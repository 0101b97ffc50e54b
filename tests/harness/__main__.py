"""Command line of the real-Kafka harness: ``python -m tests.harness <command> ...`` (see README.md)."""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from pathlib import Path


def _cmdline() -> str:
    return "python -m tests.harness " + " ".join(shlex.quote(a) for a in sys.argv[1:])


def main(argv: list[str] | None = None) -> int:
    from .kafka_dist import DEFAULT_VERSIONS, NEWEST, ensure_kafka

    ap = argparse.ArgumentParser(prog="python -m tests.harness", description=__doc__)
    sub = ap.add_subparsers(dest="cmd", required=True)

    f = sub.add_parser("fetch", help="resolve Kafka jars from Maven Central into the cache (idempotent)")
    f.add_argument(
        "--version",
        action="append",
        help="Kafka version (repeatable); default: every release line's (kafka_dist.RELEASES)",
    )

    s = sub.add_parser("scenario", help="run a scenario on a real cluster and save its metadata log + views")
    s.add_argument(
        "name", help="smoke | basic | reassign | rolling-restart | cordon | upgrade | retention | snapshot-fetch"
    )
    s.add_argument("--version", default=NEWEST)
    s.add_argument("--out", required=True, type=Path)
    s.add_argument("--brokers", type=int, default=None)
    s.add_argument("--combined", action="store_true", default=None, help="one broker+controller node")
    s.add_argument("--quorum", choices=["dynamic", "static"], default="dynamic")
    s.add_argument(
        "--snapshots",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="force frequent metadata snapshots (default: per scenario)",
    )
    s.add_argument("--keep-indexes", action="store_true", help="also copy .index/.timeindex files")
    s.add_argument("--keep-workdir", action="store_true", help="keep the cluster's temp dir (debugging)")

    o = sub.add_parser(
        "oracle",
        help="Kafka's own replay (KraftOracle.java); args after -- go to the oracle",
        epilog="oracle commands: image, changes, steps, bench, verify-snapshots; "
        "e.g. oracle --version 4.4.0 -- image --dir D --offset 42",
    )
    o.add_argument("--version", default=NEWEST)
    o.add_argument("args", nargs=argparse.REMAINDER)

    d = sub.add_parser("dump-log", help="kafka-dump-log --cluster-metadata-decoder on files")
    d.add_argument("--version", default=NEWEST)
    d.add_argument("--skip-record-metadata", action="store_true")
    d.add_argument("files", nargs="+", type=Path)

    sh = sub.add_parser("shell", help="metadata shell on a snapshot or segment, non-interactive")
    sh.add_argument("--version", default=NEWEST)
    sh.add_argument("--snapshot", required=True, type=Path, help=".checkpoint or .log file")
    sh.add_argument("command", nargs=argparse.REMAINDER, help="e.g. tree /  or  cat /features/metadata.version")

    st = sub.add_parser(
        "shell-texts",
        help="write kafka-shell.json: tree /image of every file of fixtures by the shell of their release line",
    )
    st.add_argument("fixtures", nargs="+", type=Path, help="fixture directories (tests/fixtures/kafka/<v>/<scenario>)")

    a = ap.parse_args(argv)

    if a.cmd == "fetch":
        for v in a.version or list(DEFAULT_VERSIONS):
            t0 = time.monotonic()
            dist = ensure_kafka(v, verbose=False)
            print(
                json.dumps(
                    {
                        "version": v,
                        "lib": str(dist.lib),
                        "jars": len(dist.jars()),
                        "seconds": round(time.monotonic() - t0, 1),
                    }
                )
            )
        return 0
    if a.cmd == "scenario":
        from .scenarios import run_scenario

        run_scenario(
            a.name,
            a.version,
            a.out,
            brokers=a.brokers,
            combined=a.combined,
            quorum=a.quorum,
            snapshots=a.snapshots,
            keep_indexes=a.keep_indexes,
            command=_cmdline(),
            keep_workdir=a.keep_workdir,
        )
        return 0
    if a.cmd == "oracle":
        from .oracle import run_oracle

        args = a.args[1:] if a.args[:1] == ["--"] else a.args
        proc = run_oracle(ensure_kafka(a.version), args, check=False)
        sys.stdout.write(proc.stdout)
        sys.stderr.write(proc.stderr)
        return proc.returncode
    if a.cmd == "dump-log":
        from .tools import dump_log

        sys.stdout.write(dump_log(ensure_kafka(a.version), a.files, skip_record_metadata=a.skip_record_metadata))
        return 0
    if a.cmd == "shell-texts":
        from tests.shell_texts import kafka_tree_texts, write_tree_texts

        from .kafka_dist import line_version

        for fixture in a.fixtures:
            version = line_version(json.loads((fixture / "meta.json").read_text())["kafkaVersion"])
            print(write_tree_texts(fixture, version, kafka_tree_texts(ensure_kafka(version), fixture)))
        return 0
    if a.cmd == "shell":
        from .tools import metadata_shell

        cmd = a.command[1:] if a.command[:1] == ["--"] else a.command
        sys.stdout.write(metadata_shell(ensure_kafka(a.version), a.snapshot, cmd or ["tree", "/"]))
        return 0
    return 2


if __name__ == "__main__":
    sys.exit(main())
