"""Kafka Uuids as their base64 strings (22 chars, URL-safe, unpadded), their ordering, and the names Kafka
gives its reserved directory ids (``DirectoryId``), which output for people shows instead of the Uuids."""

from __future__ import annotations

import base64

MIGRATING = "AAAAAAAAAAAAAAAAAAAAAA"
"""DirectoryId.MIGRATING (0,0): replica placed before directory tracking existed."""
UNASSIGNED = "AAAAAAAAAAAAAAAAAAAAAQ"
"""DirectoryId.UNASSIGNED (0,1): replica not yet placed."""
LOST = "AAAAAAAAAAAAAAAAAAAAAg"
"""DirectoryId.LOST (0,2): replica placed in an unknown, offline directory."""

DIRECTORY_FIELDS = frozenset({"directories", "directory"})
"""The fields that hold replicas' directory ids: ``directories`` of PartitionRecord, PartitionChangeRecord and
the image's partitions, ``directory`` of a broker's local changes."""
DIRECTORY_NAMES = {MIGRATING: "MIGRATING", UNASSIGNED: "UNASSIGNED", LOST: "LOST"}
"""Kafka's names of its reserved directory ids (``DirectoryId``'s constants)."""


def directory_name(directory: str) -> str:
    """A replica's directory id as Kafka names it: ``UNASSIGNED``, ``LOST`` or ``MIGRATING`` for the reserved
    ids of ``DirectoryId``, any other as its Uuid string (the JSON keeps every one as its Uuid string)."""
    return DIRECTORY_NAMES.get(directory, directory)


def uuid_sort_key(uuid: str) -> tuple[int, int]:
    """(msb, lsb) as signed Java longs: sorting by it matches Java ``Uuid.compareTo``."""
    raw = base64.urlsafe_b64decode(uuid + "==")
    if len(raw) != 16:
        raise ValueError(f"invalid Uuid {uuid!r}")
    return int.from_bytes(raw[:8], "big", signed=True), int.from_bytes(raw[8:], "big", signed=True)
