"""SCRAM credentials part of the image (docs/replay-rules.md, "SCRAM credentials")."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from image.cow import EMPTY_MAP, CowMap, empty_map, read_only, writable

SCRAM_MECHANISMS: Mapping[int, str] = {0: "UNKNOWN", 1: "SCRAM-SHA-256", 2: "SCRAM-SHA-512"}


def scram_mechanism(value: int) -> int:
    """ScramMechanism.fromType: 1 and 2 are known, anything else is UNKNOWN (0)."""
    return value if value in (1, 2) else 0


@dataclass(frozen=True, slots=True)
class ScramCredentialData:
    """Salt, stored key and server key (standard base64 as in the record) and iterations."""

    salt: str
    stored_key: str
    server_key: str
    iterations: int


@dataclass(frozen=True, slots=True)
class ScramImage:
    """Mechanism code → (user name → credential); mechanisms without users are absent."""

    mechanisms: Mapping[int, Mapping[str, ScramCredentialData]] = field(default_factory=empty_map)

    EMPTY: ClassVar[ScramImage]

    def frozen(self) -> ScramImage:
        return ScramImage(self.mechanisms.snapshot()) if isinstance(self.mechanisms, CowMap) else self


ScramImage.EMPTY = ScramImage()


class ScramDelta:
    """Per mechanism: user → new credential, or None for removal.

    Apply uses the intended semantics (set/remove per user, drop mechanisms left empty at the
    end). Kafka's ScramDelta.apply drops a mechanism as soon as a removal empties it and loses
    later sets of that loop (order of a Java HashMap); that quirk is not emulated.
    """

    def __init__(self, image: ScramImage) -> None:
        self.image = image
        self.changes: dict[int, dict[str, ScramCredentialData | None]] = {}

    def replay_credential(self, data: Mapping[str, Any]) -> None:
        """UserScramCredentialRecord."""
        self.changes.setdefault(scram_mechanism(data["mechanism"]), {})[data["name"]] = ScramCredentialData(
            data["salt"], data["storedKey"], data["serverKey"], data["iterations"]
        )

    def replay_remove_credential(self, data: Mapping[str, Any]) -> None:
        """RemoveUserScramCredentialRecord (no existence check)."""
        self.changes.setdefault(scram_mechanism(data["mechanism"]), {})[data["name"]] = None

    def finish_snapshot(self) -> None:
        for mechanism, users in self.image.mechanisms.items():
            changes = self.changes.setdefault(mechanism, {})
            for user in users:
                changes.setdefault(user, None)

    def build(self, in_place: bool) -> ScramImage:
        mechanisms = writable(self.image.mechanisms, in_place)
        for mechanism, changes in self.changes.items():
            users = dict(mechanisms.get(mechanism, EMPTY_MAP))
            for user, credential in changes.items():
                if credential is None:
                    users.pop(user, None)
                else:
                    users[user] = credential
            if users:
                mechanisms.set(mechanism, read_only(users))
            else:
                mechanisms.discard(mechanism)
        return ScramImage(mechanisms)

    def apply(self) -> ScramImage:
        return self.build(in_place=False).frozen()
