"""Stable, content-derived identifiers."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any

# ``json.dumps`` with options builds an encoder on every call: one, made once, encodes the same text.
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
_string: Callable[[str], str] = json.encoder.encode_basestring  # a str as JSON, as ``_CANONICAL`` writes it
json_string = _string
"""A ``str`` as JSON, exactly as :func:`canonical_json` writes it (non-ASCII kept)."""


def canonical_json(value: Any) -> str:
    """Serialise ``value`` to JSON with sorted keys and no whitespace, so equal content hashes equally."""
    if type(value) is CanonicalDict:
        return value.canonical
    return _CANONICAL.encode(value)


class CanonicalDict(dict[str, Any]):
    """A dict that carries its canonical JSON, serialised once for every use (a cache key and its stored row).

    Not to be changed once made: :func:`canonical_json` returns the text it was made with.
    """

    __slots__ = ("canonical",)

    def __init__(self, value: dict[str, Any]) -> None:
        super().__init__(value)
        self.canonical = _CANONICAL.encode(value)

    @classmethod
    def with_text(cls, value: dict[str, Any], canonical: str) -> CanonicalDict:
        """One whose canonical JSON the caller made, and vouches equals ``canonical_json(value)``."""
        made = cls.__new__(cls)
        dict.update(made, value)
        made.canonical = canonical
        return made


def content_hash(value: Any, length: int = 16) -> str:
    """Hex SHA-256 of the canonical JSON of ``value``, cut to ``length`` characters."""
    return hashlib.sha256(canonical_json(value).encode("utf-8")).hexdigest()[:length]


def case_id(conversation_id: str, turn_index: int, query: str, old_answer: str) -> str:
    """Id of a labelled turn: the same turn of the same conversation always gets the same id.

    The hash of ``[conversation_id, turn_index, query, old_answer]`` as :func:`content_hash` gives it, its
    JSON written here by the JSON encoder's own string escaping (one id per case of every log ingested).
    """
    text = f"[{_string(conversation_id)},{int(turn_index)},{_string(query)},{_string(old_answer)}]"
    return "case_" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
