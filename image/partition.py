"""PartitionRegistration: one partition in the image, built from PartitionRecord and merged with
PartitionChangeRecord (docs/replay-rules.md, "Topics and partitions")."""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from image.errors import ReplayError
from image.uuids import DIRECTORY_FIELDS, MIGRATING, directory_name

NO_LEADER = -1
NO_LEADER_CHANGE = -2
RECOVERED = 0
RECOVERING = 1
LEADER_RECOVERY_STATES = {RECOVERED: "RECOVERED", RECOVERING: "RECOVERING"}
"""Kafka's names of the leader recovery states (``LeaderRecoveryState``)."""
LEADER_RECOVERY_NO_CHANGE = -1


def for_people(field: str, value: Any) -> Any:
    """A partition field's value as Kafka names its reserved values, for output for people (the JSON keeps the
    values): a ``leader`` of -1 as ``none`` (as ``kafka-topics --describe``), a ``leaderRecoveryState`` as
    ``RECOVERED`` / ``RECOVERING``, a replica's reserved directory id (alone or in a list) as ``UNASSIGNED``,
    ``LOST`` or ``MIGRATING``; any other value as it is."""
    if field == "leader" and value == NO_LEADER:
        return "none"
    if field == "leaderRecoveryState" and value in LEADER_RECOVERY_STATES:
        return LEADER_RECOVERY_STATES[value]
    if field in DIRECTORY_FIELDS:
        return [directory_name(d) for d in value] if isinstance(value, list) else directory_name(value)
    return value


MIGRATING_IDENTITY = 0
"""``directories_identity`` of every all-MIGRATING array (Kafka shares one MIGRATING singleton)."""

_array_identities = itertools.count(1)


def _leader_recovery_state(value: int) -> int:
    if value not in (RECOVERED, RECOVERING):
        raise ReplayError(f"Value {value} is not a valid leader recovery state")
    return value


def all_migrating(directories: Sequence[str]) -> bool:
    """Every directory is MIGRATING (true of no directories)."""
    return directories.count(MIGRATING) == len(directories)


def _invalid_directories(replicas: Sequence[int], directories: Sequence[str]) -> ReplayError:
    return ReplayError(
        f"InvalidReplicaDirectoriesException: {len(directories)} directories for {len(replicas)} replicas"
    )


@dataclass(frozen=True, slots=True)
class PartitionRegistration:
    """Kafka ``PartitionRegistration``; arrays keep record order.

    ``directories_identity`` models Java object identity of the directories array for exact
    ``localChanges`` directory comparisons (docs/local-changes.md, "Directory ids"): 0 for the shared all-MIGRATING
    array, else a unique number per record-supplied array (kept by merges without Directories).
    Element ``i`` of array ``n`` is the same Java object only as ``(n, i)``; see
    :meth:`directory_identity`. It is excluded from equality.
    """

    replicas: tuple[int, ...]
    directories: tuple[str, ...]
    isr: tuple[int, ...]
    removing_replicas: tuple[int, ...] = ()
    adding_replicas: tuple[int, ...] = ()
    elr: tuple[int, ...] = ()
    last_known_elr: tuple[int, ...] = ()
    leader: int = NO_LEADER
    leader_recovery_state: int = RECOVERED
    leader_epoch: int = 0
    partition_epoch: int = 0
    directories_identity: int = field(default=MIGRATING_IDENTITY, compare=False, repr=False)

    @classmethod
    def from_record(cls, data: Mapping[str, Any]) -> PartitionRegistration:
        """Build from a PartitionRecord body (absolute values; absent or all-MIGRATING directories: MIGRATING)."""
        replicas = tuple(data["replicas"])
        record_dirs = data.get("directories")
        if record_dirs and len(record_dirs) != len(replicas):
            raise _invalid_directories(replicas, record_dirs)
        if record_dirs is None or all_migrating(record_dirs):
            directories, identity = (MIGRATING,) * len(replicas), MIGRATING_IDENTITY
        else:
            directories, identity = tuple(record_dirs), next(_array_identities)
        return cls(
            replicas=replicas,
            directories=directories,
            isr=tuple(data["isr"]),
            removing_replicas=tuple(data["removingReplicas"]),
            adding_replicas=tuple(data["addingReplicas"]),
            elr=tuple(data.get("eligibleLeaderReplicas") or ()),
            last_known_elr=tuple(data.get("lastKnownElr") or ()),
            leader=data.get("leader", NO_LEADER),
            leader_recovery_state=_leader_recovery_state(data.get("leaderRecoveryState", RECOVERED)),
            leader_epoch=data.get("leaderEpoch", -1),
            partition_epoch=data.get("partitionEpoch", -1),
            directories_identity=identity,
        )

    def merge(self, data: Mapping[str, Any]) -> PartitionRegistration:
        """Apply a PartitionChangeRecord body: null lists keep the current value, Leader -2
        keeps leader and leader epoch, any other Leader (even the same broker) bumps the leader
        epoch, the partition epoch always rises by one."""
        record_replicas = data.get("replicas")
        replicas = self.replicas if record_replicas is None else tuple(record_replicas)
        record_dirs = data.get("directories")
        identity: int | None
        if record_dirs is None:
            directories, identity = self.directories, self.directories_identity
        else:
            if record_replicas is not None and record_dirs and len(record_dirs) != len(record_replicas):
                raise _invalid_directories(record_replicas, record_dirs)
            directories, identity = tuple(record_dirs), None
        if all_migrating(directories):
            if len(directories) != len(replicas):
                directories = (MIGRATING,) * len(replicas)
            identity = MIGRATING_IDENTITY
        elif identity is None:
            identity = next(_array_identities)
        isr = data.get("isr")
        removing = data.get("removingReplicas")
        adding = data.get("addingReplicas")
        leader = data.get("leader", NO_LEADER_CHANGE)
        recovery = data.get("leaderRecoveryState", LEADER_RECOVERY_NO_CHANGE)
        if recovery == LEADER_RECOVERY_NO_CHANGE:
            recovery = self.leader_recovery_state
        else:
            recovery = _leader_recovery_state(recovery)
        if len(directories) != len(replicas):
            raise ReplayError("The lengths for replicas and directories do not match.")
        elr = data.get("eligibleLeaderReplicas")
        last_known_elr = data.get("lastKnownElr")
        unchanged_leader = leader == NO_LEADER_CHANGE
        return PartitionRegistration(
            replicas=replicas,
            directories=directories,
            isr=self.isr if isr is None else tuple(isr),
            removing_replicas=self.removing_replicas if removing is None else tuple(removing),
            adding_replicas=self.adding_replicas if adding is None else tuple(adding),
            elr=self.elr if elr is None else tuple(elr),
            last_known_elr=self.last_known_elr if last_known_elr is None else tuple(last_known_elr),
            leader=self.leader if unchanged_leader else leader,
            leader_recovery_state=recovery,
            leader_epoch=self.leader_epoch if unchanged_leader else self.leader_epoch + 1,
            partition_epoch=self.partition_epoch + 1,
            directories_identity=identity,
        )

    def _replica_index(self, replica: int) -> int:
        try:
            return self.replicas.index(replica)
        except ValueError:
            raise ValueError(f"Replica {replica} is not assigned to this partition.") from None

    def directory(self, replica: int) -> str:
        """Directory of the first occurrence of ``replica``; ValueError if it is not a replica."""
        return self.directories[self._replica_index(replica)]

    def directory_identity(self, replica: int) -> tuple[int, int]:
        """Identity of the Java Uuid object ``directory(replica)`` would return (see class doc)."""
        index = self._replica_index(replica)
        if self.directories_identity == MIGRATING_IDENTITY:
            return MIGRATING_IDENTITY, 0
        return self.directories_identity, index

    def to_json(self, topic: str, topic_id: str, partition_id: int) -> dict[str, Any]:
        """One row of the image JSON ``partitions`` list."""
        return {
            "topic": topic,
            "topicId": topic_id,
            "partitionId": partition_id,
            "replicas": list(self.replicas),
            "isr": list(self.isr),
            "removingReplicas": list(self.removing_replicas),
            "addingReplicas": list(self.adding_replicas),
            "leader": self.leader,
            "leaderRecoveryState": self.leader_recovery_state,
            "leaderEpoch": self.leader_epoch,
            "partitionEpoch": self.partition_epoch,
            "directories": list(self.directories),
            "eligibleLeaderReplicas": list(self.elr),
            "lastKnownElr": list(self.last_known_elr),
        }
