"""PartitionRegistration: construction from PartitionRecord and merge of PartitionChangeRecord."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from image.errors import ReplayError
from image.partition import MIGRATING_IDENTITY, PartitionRegistration
from image.uuids import LOST, MIGRATING, UNASSIGNED
from tests.logbuilder import partition, partition_change, uuid

T = uuid(77)
D1, D2, D3, D4 = uuid(1001), uuid(1002), uuid(1003), uuid(1004)


def base(**kwargs: Any) -> PartitionRegistration:
    kwargs.setdefault("leader_epoch", 5)
    kwargs.setdefault("partition_epoch", 9)
    return PartitionRegistration.from_record(partition(T, 0, kwargs.pop("replicas", [1, 2, 3]), **kwargs)[1])


def merge(p: PartitionRegistration, **kwargs: Any) -> PartitionRegistration:
    return p.merge(partition_change(T, 0, **kwargs)[1])


def test_from_record_is_absolute() -> None:
    p = PartitionRegistration.from_record(
        partition(T, 3, [3, 1, 2], [3, 1], leader=3, leader_epoch=7, partition_epoch=11, removing=[2], adding=[1])[1]
    )
    assert (p.replicas, p.isr, p.removing_replicas, p.adding_replicas) == ((3, 1, 2), (3, 1), (2,), (1,))
    assert (p.leader, p.leader_epoch, p.partition_epoch, p.leader_recovery_state) == (3, 7, 11, 0)
    assert (p.elr, p.last_known_elr) == ((), ())
    assert p.directories == (MIGRATING,) * 3


def test_from_record_without_directories_field_defaults_to_migrating() -> None:
    data = partition(T, 0, [1, 2])[1]
    del data["directories"]  # v0 record
    assert PartitionRegistration.from_record(data).directories == (MIGRATING, MIGRATING)


def test_from_record_keeps_real_directories_and_rejects_size_mismatch() -> None:
    p = base(replicas=[1, 2], directories=[D1, MIGRATING])
    assert p.directories == (D1, MIGRATING)
    with pytest.raises(ReplayError, match="InvalidReplicaDirectoriesException"):
        base(replicas=[1, 2], directories=[D1])


def test_from_record_all_migrating_directories_use_the_shared_array() -> None:
    p = base(replicas=[1, 2], directories=[MIGRATING, MIGRATING])
    assert p.directories_identity == MIGRATING_IDENTITY
    assert p.directory_identity(2) == (MIGRATING_IDENTITY, 0)


def test_from_record_elr_and_invalid_recovery_state() -> None:
    p = base(elr=[2], last_known_elr=[3], leader_recovery_state=1)
    assert (p.elr, p.last_known_elr, p.leader_recovery_state) == ((2,), (3,), 1)
    with pytest.raises(ReplayError, match="Value 2 is not a valid leader recovery state"):
        base(leader_recovery_state=2)


def test_leader_change_bumps_leader_and_partition_epoch() -> None:
    p = merge(base(), leader=2)
    assert (p.leader, p.leader_epoch, p.partition_epoch) == (2, 6, 10)


def test_isr_only_change_bumps_only_partition_epoch() -> None:
    p = merge(base(), isr=[1, 2])
    assert (p.isr, p.leader, p.leader_epoch, p.partition_epoch) == ((1, 2), 1, 5, 10)


def test_leader_set_to_the_same_broker_still_bumps_leader_epoch() -> None:
    p = merge(base(), leader=1)
    assert (p.leader, p.leader_epoch, p.partition_epoch) == (1, 6, 10)


def test_no_leader() -> None:
    p = merge(base(), leader=-1, isr=[])
    assert (p.leader, p.leader_epoch, p.isr) == (-1, 6, ())


def test_empty_record_only_bumps_partition_epoch() -> None:
    before = base(elr=[3], last_known_elr=[2], removing=[3], adding=[2])
    after = merge(before)
    assert after == PartitionRegistration(**{**_fields(before), "partition_epoch": before.partition_epoch + 1})


def _fields(p: PartitionRegistration) -> dict[str, Any]:
    return {name: getattr(p, name) for name in PartitionRegistration.__dataclass_fields__}


def test_leader_recovery_state() -> None:
    recovering = merge(base(), leader=3, isr=[3], leader_recovery_state=1)
    assert recovering.leader_recovery_state == 1
    assert merge(recovering, isr=[3, 1]).leader_recovery_state == 1  # -1 / absent: unchanged
    assert merge(recovering, leader_recovery_state=0).leader_recovery_state == 0
    assert merge(recovering, leader_recovery_state=-1).leader_recovery_state == 1
    with pytest.raises(ReplayError, match="Value 7 is not a valid leader recovery state"):
        merge(recovering, leader_recovery_state=7)


def test_replicas_and_reassignment_lists() -> None:
    p = merge(base(), replicas=[1, 2, 3, 4], adding=[4], removing=[])
    assert (p.replicas, p.adding_replicas, p.removing_replicas) == ((1, 2, 3, 4), (4,), ())
    assert p.directories == (MIGRATING,) * 4  # MIGRATING arrays follow the replica count
    p = merge(p, replicas=[2, 3, 4], adding=[], removing=[])
    assert (p.replicas, p.adding_replicas, p.directories) == ((2, 3, 4), (), (MIGRATING,) * 3)


def test_empty_list_is_a_value_and_null_keeps() -> None:
    p = merge(base(elr=[2, 3], last_known_elr=[1]), elr=[])
    assert (p.elr, p.last_known_elr) == ((), (1,))
    p = merge(p, last_known_elr=[], elr=[3])
    assert (p.elr, p.last_known_elr) == ((3,), ())


def test_merge_directories() -> None:
    p = merge(base(), directories=[D1, D2, D3])
    assert p.directories == (D1, D2, D3)
    assert merge(p, isr=[1]).directories == (D1, D2, D3)  # kept when absent
    moved = merge(p, replicas=[1, 2, 4], directories=[D1, D2, UNASSIGNED])
    assert moved.directories == (D1, D2, UNASSIGNED)
    assert merge(p, directories=[MIGRATING, MIGRATING, MIGRATING]).directories == (MIGRATING,) * 3
    assert merge(p, directories=[]).directories == (MIGRATING,) * 3  # empty list: all MIGRATING (vacuous)
    assert merge(p, directories=[LOST, D2, D3]).directories == (LOST, D2, D3)


def test_merge_directories_size_errors() -> None:
    p = merge(base(), directories=[D1, D2, D3])
    with pytest.raises(ReplayError, match="InvalidReplicaDirectoriesException"):
        merge(p, replicas=[1, 2], directories=[D1, D2, D3])
    with pytest.raises(ReplayError, match="lengths for replicas and directories do not match"):
        merge(p, replicas=[1, 2])  # real directories cannot be resized
    with pytest.raises(ReplayError, match="lengths for replicas and directories do not match"):
        merge(base(), directories=[D1, D2])  # without Replicas the check is on the result


def test_directory_lookup_and_identity() -> None:
    p = merge(base(), directories=[D1, D2, D3])
    assert p.directory(2) == D2
    with pytest.raises(ValueError, match="Replica 9 is not assigned"):
        p.directory(9)
    kept = merge(p, isr=[1, 2])
    assert kept.directory_identity(2) == p.directory_identity(2)  # same array object kept
    reordered = merge(p, replicas=[2, 1, 3], directories=None)
    assert reordered.directory_identity(2) != p.directory_identity(2)  # index moved
    resent = merge(p, directories=[D1, D2, D3])
    assert resent.directory_identity(2) != p.directory_identity(2)  # new record object, same value
    assert resent == merge(p)  # identity is not part of equality


partition_changes = st.fixed_dictionaries(
    {},
    optional={
        "isr": st.lists(st.integers(0, 5), max_size=4),
        "leader": st.integers(-2, 5),
        "removing": st.lists(st.integers(0, 5), max_size=3),
        "adding": st.lists(st.integers(0, 5), max_size=3),
        "leader_recovery_state": st.sampled_from([-1, 0, 1]),
        "elr": st.lists(st.integers(0, 5), max_size=3),
        "last_known_elr": st.lists(st.integers(0, 5), max_size=3),
        "replicas": st.lists(st.integers(0, 5), min_size=1, max_size=4),
    },
)


@given(st.lists(partition_changes, max_size=20), st.integers(-1, 100), st.integers(-1, 100))
def test_merge_sequences_count_epochs(changes: list[dict[str, Any]], leader_epoch: int, partition_epoch: int) -> None:
    p = base(leader_epoch=leader_epoch, partition_epoch=partition_epoch)
    expected = _fields(p)
    for change in changes:
        p = merge(p, **change)
        for field, key in (
            ("isr", "isr"),
            ("removing_replicas", "removing"),
            ("adding_replicas", "adding"),
            ("elr", "elr"),
            ("last_known_elr", "last_known_elr"),
            ("replicas", "replicas"),
        ):
            if key in change:
                expected[field] = tuple(change[key])
        if change.get("leader", -2) != -2:
            expected["leader"] = change["leader"]
        if change.get("leader_recovery_state", -1) != -1:
            expected["leader_recovery_state"] = change["leader_recovery_state"]
    leader_changes = sum(1 for change in changes if change.get("leader", -2) != -2)
    assert p.partition_epoch == partition_epoch + len(changes)
    assert p.leader_epoch == leader_epoch + leader_changes
    assert p.directories == (MIGRATING,) * len(p.replicas)
    for field in ("replicas", "isr", "removing_replicas", "adding_replicas", "elr", "last_known_elr"):
        assert getattr(p, field) == expected[field]
    assert (p.leader, p.leader_recovery_state) == (expected["leader"], expected["leader_recovery_state"])
