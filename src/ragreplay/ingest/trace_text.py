"""Questions, answers, chat messages and retrieved chunks out of the payloads tracing tools record.

A trace's input and output are whatever the application passed: a string, ``{"question": ...}``, a chat
message list (OpenAI ``role``/``content``, LangChain serialized messages, OpenTelemetry ``parts``), a
chat-completions response (``choices``), a LangChain LLM result (``generations``), or JSON text of any of
these. These readers never fail: what they cannot read is empty (the message then becomes a counted skip).
"""

from __future__ import annotations

import json
import math
from typing import Any

from ragreplay.core.ids import content_hash
from ragreplay.core.types import RetrievedChunk, Role
from ragreplay.ingest.fields import ROLE_SYNONYMS

_IN_KEYS = ("question", "query", "input", "user_input", "prompt", "messages", "message", "content", "text")
_OUT_KEYS = (
    "answer",
    "output",
    "response",
    "result",
    "completion",
    "generation",
    "content",
    "text",
    "message",
)
_DOC_KEYS = (
    "documents",
    "chunks",
    "results",
    "contexts",
    "context",
    "source_nodes",
    "nodes",
    "hits",
    "matches",
)
_ID_KEYS = ("id", "document_id", "doc_id", "chunk_id", "document.id", "source")
_SCORE_KEYS = ("score", "relevance_score", "similarity", "document.score")
_TEXT_KEYS = ("content", "page_content", "text", "document.content")
_LC_ROLES = {"HumanMessage": "human", "AIMessage": "ai", "SystemMessage": "system", "ToolMessage": "tool"}
_MAX_ID = 256
_DEPTH = 6

Turns = list[tuple[Role, str]]


def maybe_json(value: Any) -> Any:
    """``value`` parsed if it is JSON text of an object or a list, else ``value`` itself."""
    if isinstance(value, str) and value[:1] in ("{", "[") and value.rstrip()[-1:] in ("}", "]"):
        try:
            return json.loads(value)
        except (ValueError, RecursionError):
            return value
    return value


def _role(message: dict[str, Any]) -> Role | None:
    kwargs = message.get("kwargs") if isinstance(message.get("kwargs"), dict) else None
    raw = message.get("role") or message.get("message.role") or message.get("type")
    if kwargs is not None:
        raw = kwargs.get("type") or raw
        ids = message.get("id")
        if raw in (None, "constructor") and isinstance(ids, list) and ids:
            raw = _LC_ROLES.get(str(ids[-1]))
    if isinstance(raw, str):
        return ROLE_SYNONYMS.get(raw.strip().lower())
    return None


def _content(message: dict[str, Any]) -> str:
    kwargs = message.get("kwargs")
    source = kwargs if isinstance(kwargs, dict) else message
    for key in ("content", "message.content", "parts", "text"):
        value = source.get(key)
        if isinstance(value, str):
            return value
        if isinstance(value, list):
            texts = [
                part.get("text", part.get("content"))
                for part in value
                if isinstance(part, dict) and part.get("type", "text") == "text"
            ]
            return "\n".join(t for t in texts if isinstance(t, str))
    return ""


def chat_messages(value: Any) -> Turns | None:
    """``(role, text)`` of a chat message list (also LangChain's ``[[...]]`` batch), or ``None`` if it is not one."""
    value = maybe_json(value)
    if isinstance(value, dict) and isinstance(value.get("messages"), list):
        value = value["messages"]
    if isinstance(value, list) and len(value) == 1 and isinstance(value[0], list):
        value = value[0]
    if not isinstance(value, list) or not value or not all(isinstance(m, dict) for m in value):
        return None
    roles = [_role(m) for m in value]
    if any(r is None for r in roles):
        return None
    return [(role, _content(m)) for role, m in zip(roles, value, strict=True) if role is not None]


def question_of(value: Any, depth: int = 0) -> str:
    """The user's question in a trace's input: the text, a known key, or the last human chat message."""
    value = maybe_json(value)
    if isinstance(value, str):
        return value
    messages = chat_messages(value)
    if messages is not None:
        return next((text for role, text in reversed(messages) if role is Role.HUMAN), "")
    if isinstance(value, dict) and depth < _DEPTH:
        for key in _IN_KEYS:
            if key in value:
                return question_of(value[key], depth + 1)
    return ""


def history_of(value: Any) -> Turns:
    """The human and AI chat messages of a model input before its last human message (earlier turns), or a
    chain input's ``chat_history``/``history`` list."""
    value = maybe_json(value)
    messages = chat_messages(value)
    if messages is None and isinstance(value, dict):
        listed = value.get("chat_history", value.get("history"))
        return (
            [(r, t) for r, t in chat_messages(listed) or [] if r in (Role.HUMAN, Role.AI)] if listed else []
        )
    messages = messages or []
    last = max((i for i, (role, _) in enumerate(messages) if role is Role.HUMAN), default=0)
    return [(role, text) for role, text in messages[:last] if role in (Role.HUMAN, Role.AI)]


def answer_of(value: Any, depth: int = 0) -> str:
    """The assistant's answer in a trace's output: the text, a known key, a choice, or the last AI message."""
    value = maybe_json(value)
    if isinstance(value, str):
        return value
    messages = chat_messages(value)
    if messages is not None:
        return next((text for role, text in reversed(messages) if role is Role.AI), "")
    if isinstance(value, dict) and _role(value) is Role.AI:
        return _content(value)
    if depth >= _DEPTH:
        return ""
    if isinstance(value, dict):
        for key in ("choices", "generations"):
            if isinstance(value.get(key), list) and value[key]:
                return answer_of(value[key][-1], depth + 1)
        for key in _OUT_KEYS:
            if key in value:
                return answer_of(value[key], depth + 1)
    if isinstance(value, list) and value and isinstance(value[-1], dict | list):
        return answer_of(value[-1], depth + 1)
    return ""


def _first(obj: dict[str, Any], keys: tuple[str, ...]) -> Any:
    for key in keys:
        if obj.get(key) is not None:
            return obj[key]
    return None


def _score(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def chunk_of(item: Any) -> RetrievedChunk | None:
    """A retrieved chunk from one document record (its id, else its metadata's, else a hash of its text)."""
    if isinstance(item, int) and not isinstance(item, bool):
        return RetrievedChunk(id=str(item))
    if isinstance(item, str):
        if item and len(item) <= _MAX_ID and not any(c.isspace() for c in item):
            return RetrievedChunk(id=item)
        return RetrievedChunk(id="sha256:" + content_hash(item), text=item) if item.strip() else None
    if not isinstance(item, dict):
        return None
    metadata = item.get("metadata") or item.get("document.metadata")
    metadata = maybe_json(metadata)
    meta = metadata if isinstance(metadata, dict) else {}
    text = _first(item, _TEXT_KEYS)
    text = text if isinstance(text, str) else None
    chunk_id = _first(item, _ID_KEYS)
    if chunk_id is None:
        chunk_id = _first(meta, _ID_KEYS)
    score = _score(
        _first(item, _SCORE_KEYS) if _first(item, _SCORE_KEYS) is not None else _first(meta, _SCORE_KEYS)
    )
    if chunk_id is None or isinstance(chunk_id, dict | list):
        if text is None or not text.strip():
            return None
        chunk_id = "sha256:" + content_hash(text)
    return RetrievedChunk(id=str(chunk_id), score=score, text=text)


def chunks_of(value: Any, depth: int = 0) -> list[RetrievedChunk]:
    """The chunks of a retriever's output: a document list, or one under ``documents``/``chunks``/... keys."""
    value = maybe_json(value)
    if isinstance(value, dict) and depth < _DEPTH:
        for key in _DOC_KEYS:
            if isinstance(value.get(key), list | dict | str):
                return chunks_of(value[key], depth + 1)
        return []
    if not isinstance(value, list):
        return []
    return [chunk for chunk in map(chunk_of, value) if chunk is not None]


def flatten(value: Any, prefix: str = "", out: dict[str, Any] | None = None) -> dict[str, Any]:
    """Nested objects and lists as one level of dotted keys (``a.b.0.c``); dotted keys stay as they are."""
    out = {} if out is None else out
    if isinstance(value, dict) and value:
        for key, sub in value.items():
            flatten(sub, f"{prefix}{key}.", out)
    elif isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        for i, sub in enumerate(value):
            flatten(sub, f"{prefix}{i}.", out)
    elif prefix:
        out[prefix[:-1]] = value
    return out


def indexed(attrs: dict[str, Any], prefix: str) -> list[dict[str, Any]]:
    """Items of a flattened list: ``prefix.0.x``, ``prefix.1.x``... as ``[{x: ...}, ...]`` in index order."""
    items: dict[int, dict[str, Any]] = {}
    head = prefix + "."
    for key, value in attrs.items():
        if key.startswith(head):
            index, _, rest = key[len(head) :].partition(".")
            if index.isdigit() and rest:
                items.setdefault(int(index), {})[rest] = value
    return [items[i] for i in sorted(items)]


def as_dict(value: Any) -> dict[str, Any]:
    """``value`` if it is an object, else an empty one."""
    return value if isinstance(value, dict) else {}
