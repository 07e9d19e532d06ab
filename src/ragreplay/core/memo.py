"""Small bounded memos for values encoded again and again on a hot path (a judge's system prompt, a response
format): computed once per key, at most ``size`` kept, all dropped when full (a handful of keys in practice, so
the memo never grows with a run)."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
T = TypeVar("T")
V = TypeVar("V")

DEFAULT_SIZE = 64
"""Keys a memo keeps before it starts again."""


class KeyMemo(Generic[K, V]):
    """``make(key)`` computed once per distinct (hashable) key."""

    def __init__(self, make: Callable[[K], V], size: int = DEFAULT_SIZE) -> None:
        self._make = make
        self._size = size
        self._values: dict[K, V] = {}

    def __call__(self, key: K) -> V:
        """The value for ``key``, made on first use."""
        value = self._values.get(key)
        if value is None:
            if len(self._values) >= self._size:
                self._values.clear()
            value = self._values[key] = self._make(key)
        return value


class ObjectMemo(Generic[T, V]):
    """``make(obj)`` computed once per object, by identity: for frozen objects that are made once and used
    many times. The object is held beside its value, so its id cannot be reused by another while kept."""

    def __init__(self, make: Callable[[T], V], size: int = DEFAULT_SIZE) -> None:
        self._make = make
        self._size = size
        self._values: dict[int, tuple[T, V]] = {}

    def __call__(self, obj: T) -> V:
        """The value for ``obj``, made on first use."""
        known = self._values.get(id(obj))
        if known is not None and known[0] is obj:
            return known[1]
        if len(self._values) >= self._size:
            self._values.clear()
        value = self._make(obj)
        self._values[id(obj)] = (obj, value)
        return value
