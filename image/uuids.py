"""Kafka Uuids as their base64 strings (22 chars, URL-safe, unpadded) and their ordering."""

from __future__ import annotations

import base64

MIGRATING = "AAAAAAAAAAAAAAAAAAAAAA"
"""DirectoryId.MIGRATING (0,0): replica placed before directory tracking existed."""
UNASSIGNED = "AAAAAAAAAAAAAAAAAAAAAQ"
"""DirectoryId.UNASSIGNED (0,1): replica not yet placed."""
LOST = "AAAAAAAAAAAAAAAAAAAAAg"
"""DirectoryId.LOST (0,2): replica placed in an unknown, offline directory."""


def uuid_sort_key(uuid: str) -> tuple[int, int]:
    """(msb, lsb) as signed Java longs: sorting by it matches Java ``Uuid.compareTo``."""
    raw = base64.urlsafe_b64decode(uuid + "==")
    if len(raw) != 16:
        raise ValueError(f"invalid Uuid {uuid!r}")
    return int.from_bytes(raw[:8], "big", signed=True), int.from_bytes(raw[8:], "big", signed=True)
