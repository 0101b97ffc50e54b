"""How each Kafka release line's metadata shell shows the image: the differences between the lines, each with
the Kafka change that made it (docs/shell.md lists them).

A line is represented by its newest patch release; the shell's output depends only on the line (its
``org.apache.kafka.image.node`` classes and the ``toString()`` of the image classes they print)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

ZkMigrationNode = Literal["shown", "listed", "absent"]


@dataclass(frozen=True, slots=True)
class ShellRelease:
    """One release line's rendering of the image as a file system."""

    line: str
    """``X.Y``."""
    zk_migration_state: ZkMigrationNode
    """``/image/features/zkMigrationState``: its value (3.9); listed by ``ls`` and ``tree`` but no file (4.0, 4.1:
    KAFKA-18136 ``772aa241b2`` removed it from ``FeaturesImageNode.child``); gone (4.2+: KAFKA-19681
    ``07b786e5bf`` removed it from ``childNames``)."""
    optional_metadata_version: bool
    """``FeaturesImage.metadataVersion()`` is an ``Optional`` (4.0+, KAFKA-18601 ``3fbbd0a3ee``): ``Optional[4.1-IV1]``,
    ``Optional.empty`` before the first metadata.version record."""
    acl_record: bool
    """``StandardAcl`` is a Java record (4.2+, KAFKA-18699 ``de92b200fc``): ``StandardAcl[...]`` instead of
    ``StandardAcl(...)``."""
    cordoned_directories: bool
    """``BrokerRegistration.toString()`` ends with ``cordonedDirectories`` (4.3+, KAFKA-19774 / KIP-1066
    ``a45d36ca5d``): ``null`` for a registration whose record has no such field."""
    print_skips_missing_child: bool
    """``MetadataNode.print`` skips a listed child its node does not give (4.0+, KAFKA-18601 ``3fbbd0a3ee``); 3.9
    throws a ``NullPointerException`` there."""
    writes_pre_3_4_state: bool
    """3.9: writing the image at its metadata.version loses finalized features below ``3.3-IV0``, a broker's
    controlled shutdown below ``3.3-IV3`` and a ZooKeeper migration state below ``3.4-IV0`` (4.0 dropped those
    levels, KAFKA-18601 ``3fbbd0a3ee``): a file whose image that loses shows the shell no image."""


SHELL_RELEASES: dict[str, ShellRelease] = {
    r.line: r
    for r in (
        ShellRelease("3.9", "shown", False, False, False, False, True),
        ShellRelease("4.0", "listed", True, False, False, True, False),
        ShellRelease("4.1", "listed", True, False, False, True, False),
        ShellRelease("4.2", "absent", True, True, False, True, False),
        ShellRelease("4.3", "absent", True, True, True, True, False),
        ShellRelease("4.4", "absent", True, True, True, True, False),
    )
}
"""Every release line the shell renders, oldest first: those whose replay kraft-replay follows
(``image.release.RELEASES``)."""


def shell_release(version: str | None = None) -> ShellRelease:
    """The release line of ``version`` (``X.Y`` or ``X.Y.Z``; None: the newest), as ``--kafka-version`` names it
    (:func:`image.release.rules_for`: UnsupportedRelease for another)."""
    from image.release import rules_for

    return SHELL_RELEASES[rules_for(version).release]
