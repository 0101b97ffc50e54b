"""Delegation tokens part of the image (docs/replay-rules.md, "Delegation tokens")."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from image.cow import CowMap, empty_map, writable
from image.errors import ReplayError


def _principal(value: str) -> str:
    """Validate a ``Type:Name`` principal like SecurityUtils.parseKafkaPrincipal."""
    if not value or ":" not in value:
        raise ReplayError(f"expected a string in format principalType:principalName but got {value}")
    return value


@dataclass(frozen=True, slots=True)
class DelegationTokenData:
    """Token information; principals kept as their ``Type:Name`` strings."""

    token_id: str
    owner: str
    requester: str
    renewers: tuple[str, ...]
    issue_timestamp: int
    max_timestamp: int
    expiration_timestamp: int

    @classmethod
    def from_record(cls, data: Mapping[str, Any]) -> DelegationTokenData:
        return cls(
            token_id=data["tokenId"],
            owner=_principal(data["owner"]),
            requester=_principal(data["requester"]),
            renewers=tuple(_principal(r) for r in data["renewers"]),
            issue_timestamp=data["issueTimestamp"],
            max_timestamp=data["maxTimestamp"],
            expiration_timestamp=data["expirationTimestamp"],
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "tokenId": self.token_id,
            "owner": self.owner,
            "requester": self.requester,
            "renewers": list(self.renewers),
            "issueTimestamp": self.issue_timestamp,
            "maxTimestamp": self.max_timestamp,
            "expirationTimestamp": self.expiration_timestamp,
        }


@dataclass(frozen=True, slots=True)
class DelegationTokenImage:
    """Tokens by token id."""

    tokens: Mapping[str, DelegationTokenData] = field(default_factory=empty_map)

    EMPTY: ClassVar[DelegationTokenImage]

    def frozen(self) -> DelegationTokenImage:
        return DelegationTokenImage(self.tokens.snapshot()) if isinstance(self.tokens, CowMap) else self


DelegationTokenImage.EMPTY = DelegationTokenImage()


class DelegationTokenDelta:
    """Token id → new token, or None for removal (no existence check)."""

    def __init__(self, image: DelegationTokenImage) -> None:
        self.image = image
        self.changes: dict[str, DelegationTokenData | None] = {}

    def replay_token(self, data: Mapping[str, Any]) -> None:
        """DelegationTokenRecord: add or replace (malformed principals are errors)."""
        self.changes[data["tokenId"]] = DelegationTokenData.from_record(data)

    def replay_remove_token(self, data: Mapping[str, Any]) -> None:
        """RemoveDelegationTokenRecord."""
        self.changes[data["tokenId"]] = None

    def finish_snapshot(self) -> None:
        for token_id in self.image.tokens:
            self.changes.setdefault(token_id, None)

    def build(self, in_place: bool) -> DelegationTokenImage:
        tokens = writable(self.image.tokens, in_place)
        for token_id, token in self.changes.items():
            if token is None:
                tokens.discard(token_id)
            else:
                tokens.set(token_id, token)
        return DelegationTokenImage(tokens)

    def apply(self) -> DelegationTokenImage:
        return self.build(in_place=False).frozen()
