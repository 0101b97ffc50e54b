"""Copy-on-write maps: how successive images share structure.

Published images hold read-only mappings. A *live* image (used by the loader to apply one delta per
batch without copying whole maps) holds :class:`CowMap` objects instead: they read through to a
shared base and copy it on the first write. ``snapshot()`` publishes the current content in O(1)
and makes the next write copy again, so published images never change afterwards.
"""

from __future__ import annotations

from collections.abc import ItemsView, Iterator, KeysView, Mapping, ValuesView
from types import MappingProxyType
from typing import Any, TypeVar

K = TypeVar("K")
V = TypeVar("V")

EMPTY_MAP: Mapping[Any, Any] = MappingProxyType({})


class CowMap(Mapping[K, V]):
    """A writable map over a read-only base that is copied on the first write."""

    __slots__ = ("_data", "_owned")

    def __init__(self, base: Mapping[K, V] = EMPTY_MAP) -> None:
        self._data: Mapping[K, V] = base
        self._owned = False

    def __getitem__(self, key: K) -> V:
        return self._data[key]

    def __iter__(self) -> Iterator[K]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __contains__(self, key: object) -> bool:
        return key in self._data

    def get(self, key: K, default: Any = None) -> Any:
        return self._data.get(key, default)

    def keys(self) -> KeysView[K]:
        return self._data.keys()

    def values(self) -> ValuesView[V]:
        return self._data.values()

    def items(self) -> ItemsView[K, V]:
        return self._data.items()

    def _writable(self) -> dict[K, V]:
        if not self._owned:
            self._data = dict(self._data)
            self._owned = True
        return self._data  # type: ignore[return-value]

    def set(self, key: K, value: V) -> None:
        """Map ``key`` to ``value`` (copies the shared base first if needed)."""
        self._writable()[key] = value

    def discard(self, key: K) -> None:
        """Remove ``key`` if present."""
        if key in self._data:
            del self._writable()[key]

    def snapshot(self) -> Mapping[K, V]:
        """Current content as a read-only mapping that later writes will not change."""
        if self._owned:
            self._data = MappingProxyType(self._data)
            self._owned = False
        return self._data

    def __repr__(self) -> str:
        return f"CowMap({dict(self._data)!r})"


def frozen(mapping: Mapping[K, V]) -> Mapping[K, V]:
    """``mapping`` itself if it is already read-only, else a snapshot of the live map."""
    return mapping.snapshot() if isinstance(mapping, CowMap) else mapping


def writable(mapping: Mapping[K, V], in_place: bool) -> CowMap[K, V]:
    """The live map itself when applying in place, else a fresh copy-on-write map over it."""
    if in_place and isinstance(mapping, CowMap):
        return mapping
    return CowMap(frozen(mapping))


def read_only(data: dict[K, V]) -> Mapping[K, V]:
    """Wrap a freshly built dict that nobody else references."""
    return MappingProxyType(data)


def empty_map() -> Mapping[Any, Any]:
    """Default factory for mapping fields of image dataclasses."""
    return EMPTY_MAP
