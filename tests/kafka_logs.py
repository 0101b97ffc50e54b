"""The real-Kafka logs committed under tests/fixtures/kafka (``<version>/<scenario>``, see their README.md);
no JVM or Spark import, for the fast tier too."""

from __future__ import annotations

from pathlib import Path

KAFKA_FIXTURES = sorted(
    p.parent for p in (Path(__file__).resolve().parent / "fixtures" / "kafka").glob("*/*/__cluster_metadata-0")
)
"""The fixture directories, each holding one ``__cluster_metadata-0`` log directory."""


def kafka_fixture_name(fixture: Path) -> str:
    """``<version>/<scenario>`` of a fixture directory (a test id, and the key of its shared lake)."""
    return f"{fixture.parent.name}/{fixture.name}"
