"""Stable, content-derived identifiers."""

from __future__ import annotations

import hashlib
import json
from typing import Any


def canonical_json(value: Any) -> str:
    """Serialise ``value`` to JSON with sorted keys and no whitespace, so equal content hashes equally."""
    if type(value) is CanonicalDict:
        return value.canonical
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


class CanonicalDict(dict[str, Any]):
    """A dict that carries its canonical JSON, serialised once for every use (a cache key and its stored row).

    Not to be changed once made: :func:`canonical_json` returns the text it was made with.
    """

    __slots__ = ("canonical",)

    def __init__(self, value: dict[str, Any]) -> None:
        super().__init__(value)
        self.canonical = json.dumps(
            value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str
        )


def content_hash(value: Any, length: int = 16) -> str:
    """Hex SHA-256 of the canonical JSON of ``value``, cut to ``length`` characters."""
    return hashlib.sha256(canonical_json(value).encode("utf-8")).hexdigest()[:length]


def case_id(conversation_id: str, turn_index: int, query: str, old_answer: str) -> str:
    """Id of a labelled turn: the same turn of the same conversation always gets the same id."""
    return "case_" + content_hash([conversation_id, turn_index, query, old_answer])
