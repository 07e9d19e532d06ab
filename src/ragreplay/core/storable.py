"""Text made storable: the characters no store keeps are replaced before they reach one.

PostgreSQL refuses a NUL in text; SQLite (and any UTF-8 encoder) refuses a lone surrogate, which Python
strings can hold (``"\\ud800"``, from a JSON ``\\ud800`` escape or a bad decode). Both become U+FFFD, the
replacement character, so the rest of the text is kept and the replacement is visible.
"""

from __future__ import annotations

import re
from typing import Any

REPLACEMENT = "\ufffd"
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
_SLICE = 1 << 18


def storable_text(text: str) -> tuple[str, int]:
    """``text`` with every NUL and lone surrogate replaced, and how many were."""
    if text.isascii():  # O(1) in CPython (a flag of the string): no surrogate, so only a NUL can be wrong
        return (text, 0) if "\x00" not in text else (text.replace("\x00", REPLACEMENT), text.count("\x00"))
    # one scan, no copy, in slices: a thread scanning a long text gives the GIL back between them (a single
    # regex call would hold it throughout, stalling an event loop in another thread for as long)
    if all(_UNSTORABLE.search(text, i, i + _SLICE) is None for i in range(0, len(text), _SLICE)):
        return text, 0
    return _UNSTORABLE.subn(REPLACEMENT, text)


def _clean_text(text: str) -> bool:
    if text.isascii():
        return "\x00" not in text
    return all(_UNSTORABLE.search(text, i, i + _SLICE) is None for i in range(0, len(text), _SLICE))


def is_storable(value: Any) -> bool:
    """Whether ``value`` (as :func:`storable` takes it) holds nothing to replace: one walk that copies
    nothing and stops at the first bad string (a shadow row: ~4 µs, against ~35 µs for :func:`storable`)."""
    if isinstance(value, str):
        return _clean_text(value)
    if isinstance(value, dict):
        return all(is_storable(k) and is_storable(v) for k, v in value.items())
    if isinstance(value, list | tuple):
        return all(is_storable(item) for item in value)
    return True


def storable(value: Any) -> tuple[Any, int]:
    """``value`` (strings, and lists, tuples and dicts of them, keys included) made storable, and how many
    characters were replaced; values without strings come back as they are."""
    if not isinstance(value, str) and is_storable(value):  # nearly always: nothing to rebuild
        return value, 0
    return _storable(value)


def _storable(value: Any) -> tuple[Any, int]:
    if isinstance(value, str):
        return storable_text(value)
    if isinstance(value, dict):
        total = 0
        out: dict[Any, Any] = {}
        for key, item in value.items():
            new_key, n_key = _storable(key)
            new_item, n_item = _storable(item)
            out[new_key] = new_item
            total += n_key + n_item
        return (out, total) if total else (value, 0)
    if isinstance(value, list | tuple):
        parts = [_storable(item) for item in value]
        total = sum(n for _, n in parts)
        if not total:
            return value, 0
        items = [item for item, _ in parts]
        return (items if isinstance(value, list) else tuple(items)), total
    return value, 0
