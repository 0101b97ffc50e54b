"""``python -m metadata.generator --seed 7 --brokers 5 --topics 20 --partitions 6 --churn 2000 --out DIR
[--snapshot-at N] [--rf 3] [--noop-interval-ms 500] [--compression none|gzip|snappy|lz4|zstd]
[--segment-bytes 1048576]`` — the same as ``kraft-replay generate``; prints the report as JSON."""

from __future__ import annotations

import sys

from metadata.generator.core import DEFAULT_SEGMENT_BYTES, generate

USAGE = __doc__.split("``")[1]
_INT_FLAGS = {"--seed": "seed", "--brokers": "brokers", "--topics": "topics", "--partitions": "partitions",
              "--churn": "churn", "--snapshot-at": "snapshot_at", "--rf": "replication_factor",
              "--noop-interval-ms": "noop_interval_ms", "--segment-bytes": "segment_bytes"}
_REQUIRED = ("seed", "brokers", "topics", "partitions", "churn", "out_dir")


def parse_args(argv: list[str]) -> dict[str, object]:
    """``--flag value`` pairs (also ``--flag=value``) → keyword arguments of :func:`generate`."""
    args: dict[str, object] = {"replication_factor": 3, "noop_interval_ms": 500, "compression": "none",
                               "segment_bytes": DEFAULT_SEGMENT_BYTES}
    items = [part for arg in argv for part in (arg.split("=", 1) if arg.startswith("--") and "=" in arg else [arg])]
    if len(items) % 2:
        raise ValueError(f"missing value after {items[-1]}")
    for flag, value in zip(items[::2], items[1::2]):
        if flag in _INT_FLAGS:
            args[_INT_FLAGS[flag]] = int(value)
        elif flag == "--out":
            args["out_dir"] = value
        elif flag == "--compression":
            args["compression"] = value
        else:
            raise ValueError(f"unknown option {flag}")
    missing = [name for name in _REQUIRED if name not in args]
    if missing:
        raise ValueError(f"missing {', '.join('--out' if m == 'out_dir' else '--' + m for m in missing)}")
    return args


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help"):
        print(f"usage: {USAGE}")
        return 0 if argv else 2
    try:
        kwargs = parse_args(argv)
        report = generate(**kwargs)  # type: ignore[arg-type]
    except ValueError as exc:
        print(f"error: {exc}\nusage: {USAGE}", file=sys.stderr)
        return 2
    print(report.model_dump_json(indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
