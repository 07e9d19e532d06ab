"""Which model-cache keys may be in the store: a lookup for a key that cannot be there is skipped.

On a cold run every lookup misses, and a miss cost a SQL select in its own transaction on the event loop, per
model call. The keys in the store are read once (a covering-index scan, 8 bytes a key) into a sorted array of
64-bit hashes; keys cached since are kept in a set. A hash collision only costs a lookup that misses.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections.abc import Iterable

_MASK = (1 << 64) - 1


def _hash64(key: str) -> int:
    # Python's string hash is salted per process; the array never leaves the process, so that is fine.
    return hash(key) & _MASK


class KnownKeys:
    """The keys that may be stored: those read at start, and those added since."""

    def __init__(self, stored: Iterable[str]) -> None:
        self._stored = array("Q", sorted({_hash64(k) for k in stored}))
        self._added: set[int] = set()

    def __len__(self) -> int:
        return len(self._stored) + len(self._added)

    def add(self, key: str) -> None:
        """Note that ``key`` has been (or is about to be) stored."""
        self._added.add(_hash64(key))

    def may_hold(self, key: str) -> bool:
        """``False`` when ``key`` is certainly not stored; ``True`` when it may be (look it up)."""
        h = _hash64(key)
        if h in self._added:
            return True
        i = bisect_left(self._stored, h)
        return i < len(self._stored) and self._stored[i] == h
