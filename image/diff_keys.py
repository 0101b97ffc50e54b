"""How a diff identifies the rows of each image part (pure data, no Spark): what :mod:`image.diff`
joins on and what a reader of a diff needs to name a change.

``DIFF_KEYS[part] = (keys, context)``: the key columns, and context columns that are shown with a
change but not compared (a partition's topic name). Every other column of the part is a value.
"""

from __future__ import annotations

CHANGES = ("added", "removed", "changed")

DIFF_KEYS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "topics": (("topicId",), ()),
    "partitions": (("topicId", "partitionId"), ("topic",)),
    "brokers": (("brokerId",), ()),
    "controllers": (("controllerId",), ()),
    "configs": (("resourceType", "resourceName", "name"), ()),
    "features": (("name",), ()),
    "producerIds": ((), ()),
    "clientQuotas": (("entity", "key"), ()),
    "acls": (("id",), ()),
    "scram": (("mechanism", "name"), ()),
    "delegationTokens": (("tokenId",), ()),
}
