"""ACLs part of the image (docs/replay-rules.md, "ACLs")."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from image.cow import CowMap, empty_map, writable
from image.errors import ReplayError

UNKNOWN = 0
_MAX_RESOURCE_TYPE = 7  # USER
_MAX_PATTERN_TYPE = 4  # PREFIXED
_MAX_OPERATION = 14  # DESCRIBE_TOKENS
_MAX_PERMISSION_TYPE = 3  # ALLOW


def _code(value: int, maximum: int) -> int:
    """Kafka ``fromCode``: codes outside the enum become UNKNOWN (0)."""
    return value if 0 <= value <= maximum else UNKNOWN


@dataclass(frozen=True, slots=True)
class StandardAcl:
    """An ACL with enum codes (unknown codes mapped to UNKNOWN = 0)."""

    resource_type: int
    resource_name: str
    pattern_type: int
    principal: str
    host: str
    operation: int
    permission_type: int

    @classmethod
    def from_record(cls, data: Mapping[str, Any]) -> StandardAcl:
        return cls(
            resource_type=_code(data["resourceType"], _MAX_RESOURCE_TYPE),
            resource_name=data["resourceName"],
            pattern_type=_code(data["patternType"], _MAX_PATTERN_TYPE),
            principal=data["principal"],
            host=data["host"],
            operation=_code(data["operation"], _MAX_OPERATION),
            permission_type=_code(data["permissionType"], _MAX_PERMISSION_TYPE),
        )

    def to_json(self, acl_id: str) -> dict[str, Any]:
        return {
            "id": acl_id,
            "resourceType": self.resource_type,
            "resourceName": self.resource_name,
            "patternType": self.pattern_type,
            "principal": self.principal,
            "host": self.host,
            "operation": self.operation,
            "permissionType": self.permission_type,
        }


@dataclass(frozen=True, slots=True)
class AclsImage:
    """ACLs by id."""

    acls: Mapping[str, StandardAcl] = field(default_factory=empty_map)

    EMPTY: ClassVar[AclsImage]

    def frozen(self) -> AclsImage:
        return AclsImage(self.acls.snapshot()) if isinstance(self.acls, CowMap) else self


AclsImage.EMPTY = AclsImage()


class AclsDelta:
    """ACL id → new ACL, or None for removal (insertion-ordered like Kafka's LinkedHashMap)."""

    def __init__(self, image: AclsImage) -> None:
        self.image = image
        self.changes: dict[str, StandardAcl | None] = {}

    def replay_acl(self, data: Mapping[str, Any]) -> None:
        """AccessControlEntryRecord: add or replace."""
        self.changes[data["id"]] = StandardAcl.from_record(data)

    def replay_remove_acl(self, data: Mapping[str, Any]) -> None:
        """RemoveAccessControlEntryRecord: remove a base ACL, or drop an ACL added in this delta."""
        acl_id = data["id"]
        if acl_id in self.image.acls:
            self.changes[acl_id] = None
        elif acl_id in self.changes:
            del self.changes[acl_id]
        else:
            raise ReplayError(f"Failed to find existing ACL with ID {acl_id} in either image or changes")

    def finish_snapshot(self) -> None:
        for acl_id in self.image.acls:
            self.changes.setdefault(acl_id, None)

    def build(self, in_place: bool) -> AclsImage:
        acls = writable(self.image.acls, in_place)
        for acl_id, acl in self.changes.items():
            if acl is None:
                acls.discard(acl_id)
            else:
                acls.set(acl_id, acl)
        return AclsImage(acls)

    def apply(self) -> AclsImage:
        return self.build(in_place=False).frozen()
