"""The canonical reader's fast path: a well-formed line read in one go instead of field by field.

Most lines of a log are well formed. For those, the careful reader (:mod:`ragreplay.ingest.fields`), which
names the field of every problem, does much more work than needed. The fast path parses the line, reads the
values that have several spellings with the careful reader's own functions (roles, feedback, timestamps),
and validates the rest in one strict pydantic call: strings must be strings, numbers numbers, lists lists.
It then checks what the models do not (an id without surrounding blanks, at least one message, numbers
finite and not negative, token counts a float holds exactly). Anything else, any mistake included, makes it
answer ``None``, and the careful reader reads the line again, naming file, line and field as before; so a
line reads to the same conversation, or to the same problems, whichever path took it.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Callable
from typing import Any

from pydantic import ValidationError

from ragreplay.core.types import Conversation, Message, Role
from ragreplay.ingest.feedback import FeedbackValueError, parse_feedback
from ragreplay.ingest.fields import ROLE_SYNONYMS, read_ts
from ragreplay.ingest.mapping import FieldMapping

#: Keys the careful reader reads besides the models' own fields: a line holding one is left to it.
_OTHER_SPELLINGS = ('"retrieved_ids"', '"tokens_in"', '"tokens_out"')
_CONVERSATION_KEYS = frozenset(Conversation.model_fields)
_MESSAGE_KEYS = frozenset(Message.model_fields)
#: The careful reader turns token counts into floats and back: exact up to 2**53.
_MAX_EXACT_INT = 2**53
_VALIDATE = Conversation.__pydantic_validator__.validate_python


class _Careful(Exception):
    """This line is for the careful reader."""


def fast_reader(mapping: FieldMapping) -> Callable[[str], Conversation | None] | None:
    """The fast path for logs read with ``mapping``, or ``None`` where the mapping changes how fields are read
    (renamed fields, role or feedback synonyms)."""
    if mapping.fields or mapping.role_synonyms or mapping.feedback_synonyms:
        return None
    return functools.partial(fast_conversation, rating_threshold=mapping.rating_threshold)


def fast_conversation(text: str, *, rating_threshold: float | None = None) -> Conversation | None:
    """The conversation on one line of a canonical log, or ``None`` if the careful reader must read it;
    ``rating_threshold`` is the field mapping's (numeric feedback)."""
    if "\\ud" in text or "\\uD" in text or any(key in text for key in _OTHER_SPELLINGS):
        return None  # surrogate escapes (the careful reader checks them) and other spellings of fields
    try:
        obj = json.loads(text)
        if type(obj) is not dict:
            return None
        fields = obj if obj.keys() <= _CONVERSATION_KEYS else _only(obj, _CONVERSATION_KEYS)
        if fields.get("tags", {}) is None:
            fields["tags"] = {}
        messages = fields.get("messages")
        if type(messages) is not list or not messages:
            return None
        fields["messages"] = tuple(_message(m, rating_threshold) for m in messages)
        conversation: Conversation = _VALIDATE(fields, strict=True)
    except (_Careful, ValidationError, ValueError, RecursionError, KeyError, TypeError):
        return None  # a syntax error, a deep or long value, an unknown spelling, a wrong type...
    if conversation.id != conversation.id.strip() or not conversation.id:
        return None
    return conversation if all(_plain(m) for m in conversation.messages) else None


def _only(obj: dict[str, Any], keys: frozenset[str]) -> dict[str, Any]:
    """``obj`` without the keys the careful reader ignores."""
    return {key: value for key, value in obj.items() if key in keys}


def _message(value: Any, rating_threshold: float | None) -> dict[str, Any]:
    """One message's fields, its role, feedback and timestamp read as the careful reader reads them."""
    if type(value) is not dict:
        raise _Careful
    m = value if value.keys() <= _MESSAGE_KEYS else _only(value, _MESSAGE_KEYS)
    role: Role = ROLE_SYNONYMS[m["role"]]
    m["role"] = role
    if (feedback := m.get("feedback")) is not None:
        try:
            m["feedback"] = parse_feedback(feedback, rating_threshold=rating_threshold)
        except FeedbackValueError:
            raise _Careful from None
    if (ts := m.get("ts")) is not None:
        m["ts"] = read_ts(ts)
    retrieved = m.get("retrieved")
    if retrieved is None:
        m["retrieved"] = ()
    elif type(retrieved) is list:
        m["retrieved"] = tuple(retrieved)
    return m


def _plain(message: Message) -> bool:
    """True when the numbers of ``message`` are ones the careful reader takes as they are."""
    if message.latency_ms is not None and not _non_negative(message.latency_ms):
        return False
    if message.tokens is not None and not (
        0 <= message.tokens.input <= _MAX_EXACT_INT and 0 <= message.tokens.output <= _MAX_EXACT_INT
    ):
        return False
    return all(chunk.score is None or _non_negative(chunk.score) for chunk in message.retrieved)


def _non_negative(number: float) -> bool:
    return math.isfinite(number) and number >= 0
