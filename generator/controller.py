"""Kafka's ``PartitionChangeBuilder`` for the generator's metadata.version (3.9-IV0, level 21).

At that level: directory assignment is on (PartitionChangeRecord v1 carries ``directories`` when the
replica set or a directory changes), ELR is off (no ELR fields, an ISR that would become empty is
not written), and the controller no longer bumps the leader epoch on an ISR shrink (only when a
replica leaves the replica set). Unclean elections are not used (``unclean.leader.election.enable``
stays false), so the leader recovery state never changes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from generator.state import NO_LEADER, ClusterState, Partition

PARTITION_CHANGE_VERSION = 1  # MetadataVersion.partitionChangeRecordVersion() at 3.7-IV2 .. 4.0-IV0


def build_partition_change(
    state: ClusterState,
    topic_id: str,
    partition_id: int,
    part: Partition,
    *,
    acceptable: Callable[[int], bool] | None = None,
    target_isr: list[int] | None = None,
    target_replicas: list[int] | None = None,
    target_removing: list[int] | None = None,
    target_adding: list[int] | None = None,
    preferred: bool = False,
    directory: tuple[int, str] | None = None,
) -> dict[str, Any] | None:
    """The PartitionChangeRecord data Kafka's builder produces, or None when nothing changes.

    ``acceptable`` is the controller's leader predicate (default: the broker is active);
    ``preferred`` selects ``Election.PREFERRED`` instead of ``ONLINE``; ``directory`` is a
    ``setDirectory(broker, dir)`` override (AssignReplicasToDirs).
    """
    if acceptable is None:
        acceptable = state.is_active
    isr = part.isr if target_isr is None else target_isr
    replicas = part.replicas if target_replicas is None else target_replicas
    removing = part.removing if target_removing is None else target_removing
    adding = part.adding if target_adding is None else target_adding

    # completeReassignmentIfNeeded
    if removing or adding:
        new_isr, new_replicas, ok = isr, replicas, True
        if removing:
            new_isr = [r for r in isr if r not in removing]
            new_replicas = [r for r in replicas if r not in removing]
            ok = bool(new_isr) and bool(new_replicas)
        if ok and all(r in new_isr for r in new_replicas):
            isr, replicas, removing, adding = new_isr, new_replicas, [], []

    rec: dict[str, Any] = {"partitionId": partition_id, "topicId": topic_id}

    # tryElection (clean elections only)
    def valid(r: int) -> bool:
        return r in isr and acceptable(r)

    leader = part.leader
    if preferred:
        if valid(replicas[0]):
            node = replicas[0]
        elif valid(leader):
            node = leader
        else:
            node = next((r for r in replicas[1:] if valid(r)), NO_LEADER)
    elif valid(leader):
        node = leader
    else:
        node = next((r for r in replicas if valid(r)), NO_LEADER)
    if node != leader:
        rec["leader"] = node

    # triggerLeaderEpochBumpForReplicaReassignmentIfNeeded
    if "leader" not in rec and not all(r in replicas for r in part.replicas):
        rec["leader"] = leader

    # the ISR (never written empty while ELR is off)
    if isr and isr != part.isr:
        rec["isr"] = isr

    # setAssignmentChanges
    if replicas:
        current = dict(zip(part.replicas, part.dirs))
        if directory is not None:
            current[directory[0]] = directory[1]
        dirs = [current[r] if r in current else state.default_dir(r) for r in replicas]
        if dirs != part.dirs:
            rec["directories"] = dirs
        if replicas != part.replicas:
            rec["replicas"] = replicas
    if removing != part.removing:
        rec["removingReplicas"] = removing
    if adding != part.adding:
        rec["addingReplicas"] = adding

    return rec if len(rec) > 2 else None


def reassignment_target(current: list[int], target: list[int]) -> tuple[list[int], list[int], list[int]]:
    """``PartitionReassignmentReplicas(current, target)``: (replicas, removing, adding)."""
    removing = sorted(set(current) - set(target))
    adding = sorted(set(target) - set(current))
    return list(target) + removing, removing, adding


def reassignment_revert(part: Partition) -> tuple[list[int], list[int]] | None:
    """``PartitionReassignmentRevert``: (replicas, isr) of a cancelled reassignment, None if unclean."""
    replicas = [r for r in part.replicas if r not in part.adding]
    isr = [r for r in part.isr if r not in part.adding]
    if not isr:
        return None
    return replicas, isr
