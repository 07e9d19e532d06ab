"""Read structured answers out of model replies, which are often JSON wrapped in prose or code fences."""

from __future__ import annotations

import json
import re
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from ragreplay.judges.fence import strip_fences

_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.S | re.I)
_WHOLE_FENCE = re.compile(r"\A```(?:json)?\s*(.*?)```\Z", re.S | re.I)


def parse_json_object(text: str) -> dict[str, Any] | None:
    """The first JSON object in ``text`` (bare, fenced, or embedded in prose), or ``None``."""
    candidates = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    for candidate in candidates:
        start = candidate.find("{")
        while start != -1:
            try:
                value, _ = json.JSONDecoder().raw_decode(candidate[start:])
            except json.JSONDecodeError:
                start = candidate.find("{", start + 1)
                continue
            if isinstance(value, dict):
                return value
            start = candidate.find("{", start + 1)
    return None


@dataclass(frozen=True)
class ReplyObject:
    """What :func:`read_reply_object` found: the reply's object, or ``None`` with the ``problem`` named
    (``conflicting`` when objects that disagree were found)."""

    value: dict[str, Any] | None
    problem: str = ""
    conflicting: bool = False


def _whole_object(text: str) -> dict[str, Any] | None:
    """The reply when it is nothing but one JSON object (bare or in one code fence)."""
    stripped = text.strip()
    fenced = _WHOLE_FENCE.match(stripped)
    body = fenced.group(1).strip() if fenced else stripped
    try:
        value = json.loads(body)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def top_level_objects(text: str) -> list[dict[str, Any]]:
    """Every JSON object embedded in ``text`` that is not inside another one, in order."""
    found: list[dict[str, Any]] = []
    decoder = json.JSONDecoder()
    start = text.find("{")
    while start != -1:
        try:
            value, end = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            start = text.find("{", start + 1)
            continue
        if isinstance(value, dict):
            found.append(value)
        start = text.find("{", end)
    return found


def _normal(value: Any) -> str:
    if isinstance(value, str):
        return value.strip().lower()
    return json.dumps(value, sort_keys=True, default=str)


def read_reply_object(text: str, keys: Collection[str]) -> ReplyObject:
    """The one object a reply gives as its answer, ``keys`` being the fields that carry the decision.

    A reply that is a single JSON object (bare or in one code fence) is that object. Otherwise any data block
    the reply echoes (``<new_answer>...</new_answer>``) is dropped, since an injected verdict may sit there, and
    the objects left that hold one of ``keys`` must agree on them: the last one is taken. Two that disagree
    make the reply unreadable, never one of them. With no such object, the first object at all is returned (so
    the caller can say what it lacks).
    """
    whole = _whole_object(text)
    if whole is not None:
        return ReplyObject(whole)
    objects = top_level_objects(strip_fences(text))
    if not objects:
        return ReplyObject(None, "the reply holds no JSON object")
    deciding = [o for o in objects if any(k in o for k in keys)]
    if not deciding:
        return ReplyObject(objects[0])
    decisions = {tuple(_normal(o.get(k)) for k in keys) for o in deciding}
    if len(decisions) > 1:
        problem = f"the reply holds {len(deciding)} JSON objects that disagree on {', '.join(keys)}"
        return ReplyObject(None, problem, conflicting=True)
    return ReplyObject(deciding[-1])
