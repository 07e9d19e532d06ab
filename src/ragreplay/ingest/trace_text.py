"""Questions, answers, chat messages and retrieved chunks out of the payloads tracing tools record.

A trace's input and output are whatever the application passed: a string, ``{"question": ...}``, a chat
message list (OpenAI ``role``/``content`` with ``tool_calls`` and tool turns, LangChain serialized messages,
OpenTelemetry and Gemini ``parts``, Anthropic content blocks), an agent's state (LangGraph ``{"messages":
[...]}``), OpenAI Responses API items (``message``, ``function_call``, ``function_call_output``; a response's
``output``), a Gemini request (``contents``) or response (``candidates``), a chat-completions response
(``choices``), a LangChain LLM result (``generations``), a traced function's ``{"args": [...]}``, or JSON
text of any of these, nested to any depth (Langfuse stores JSON text inside JSON text: ``"\"What is
Langfuse?\""``), or the Python ``repr`` of a dict of literals. A question is the last user message; an
answer is the final assistant message's text (a tool-call turn's is empty). These readers never fail: what
they cannot read is empty (the message then becomes a counted skip).
"""

from __future__ import annotations

import ast
import json
import math
from typing import Any

from ragreplay.core.ids import content_hash
from ragreplay.core.types import RetrievedChunk, Role
from ragreplay.ingest.fields import ROLE_SYNONYMS

_IN_KEYS = (
    "question",
    "query",
    "input",
    "user_input",
    "prompt",
    "messages",
    "contents",
    "new_message",
    "message",
    "content",
    "text",
    "args",
)
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
_ROLES = {**ROLE_SYNONYMS, "model": Role.AI}  # Gemini's assistant is "model"
_TEXT_PARTS = ("text", "output_text", "input_text")
#: OpenAI Responses API items without a role: a tool call is the assistant's turn (no text), its output a tool's
_ITEM_ROLES = {"function_call": Role.AI, "function_call_output": Role.TOOL, "reasoning": None}
_LIST_KEYS = ("choices", "candidates", "generations")
_MAX_ID = 256
_DEPTH = 6
_MAX_DECODE = 8  # JSON text inside JSON text: how many layers are decoded
_MAX_LITERAL = 200_000  # the longest Python repr read as a dict

Turns = list[tuple[Role, str]]


def maybe_json(value: Any) -> Any:
    """``value`` decoded while it is JSON text of an object, a list or a string (JSON inside JSON, up to
    :data:`_MAX_DECODE` layers), or the Python ``repr`` of a dict of literals; else ``value`` itself."""
    for _ in range(_MAX_DECODE):
        if not isinstance(value, str):
            return value
        decoded = _decode(value)
        if decoded is value:
            return value
        value = decoded
    return value


def _decode(text: str) -> Any:
    head, tail = text[:1], text.rstrip()[-1:]
    if (head, tail) in (("{", "}"), ("[", "]"), ('"', '"')):
        try:
            return json.loads(text)
        except (ValueError, RecursionError):
            pass
    if text.startswith("{'") and tail == "}" and len(text) <= _MAX_LITERAL:
        try:
            literal = ast.literal_eval(text)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            return text
        return literal if isinstance(literal, dict) else text
    return text


def _role(message: dict[str, Any]) -> Role | None:
    kwargs = message.get("kwargs") if isinstance(message.get("kwargs"), dict) else None
    raw = message.get("role") or message.get("message.role") or message.get("type")
    if kwargs is not None:
        raw = kwargs.get("type") or raw
        ids = message.get("id")
        if raw in (None, "constructor") and isinstance(ids, list) and ids:
            raw = _LC_ROLES.get(str(ids[-1]))
    if isinstance(raw, str):
        return _ROLES.get(raw.strip().lower())
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
                if isinstance(part, dict) and part.get("type", "text") in _TEXT_PARTS
            ]
            return "\n".join(t for t in texts if isinstance(t, str))
    return ""


def _item_role(item: dict[str, Any]) -> Role | bool | None:
    """A chat item's role; ``None`` for an item to leave out (a reasoning summary); ``False`` if it is none."""
    role = _role(item)
    if role is not None:
        return role
    kind = item.get("type")
    if isinstance(kind, str) and "role" not in item:
        if kind in _ITEM_ROLES:
            return _ITEM_ROLES[kind]
        if kind.endswith("_call_output"):
            return Role.TOOL
        if kind.endswith("_call"):
            return Role.AI
    return False


def chat_messages(value: Any) -> Turns | None:
    """``(role, text)`` of a chat message list (also LangChain's ``[[...]]`` batch, an agent state's or a
    request's ``messages``/``contents``, OpenAI Responses API items), or ``None`` if it is not one."""
    value = maybe_json(value)
    if isinstance(value, dict):
        listed = value.get("messages", value.get("contents"))
        if isinstance(listed, list):
            value = listed
    if isinstance(value, list) and len(value) == 1 and isinstance(value[0], list):
        value = value[0]
    if not isinstance(value, list) or not value or not all(isinstance(m, dict) for m in value):
        return None
    roles = [_item_role(m) for m in value]
    if any(r is False for r in roles) or not any(isinstance(r, Role) for r in roles):
        return None
    return [(role, _content(m)) for role, m in zip(roles, value, strict=True) if isinstance(role, Role)]


def question_of(value: Any, depth: int = 0) -> str:
    """The user's question in a trace's input: the text, a known key, a user message, the last user message of
    a chat, or a traced function's one argument."""
    value = maybe_json(value)
    if isinstance(value, str):
        return value
    messages = chat_messages(value)
    if messages is not None:
        return next((text for role, text in reversed(messages) if role is Role.HUMAN), "")
    if depth >= _DEPTH:
        return ""
    if isinstance(value, dict):
        if _role(value) is Role.HUMAN:
            return _content(value)
        for key in _IN_KEYS:
            if key in value:
                return question_of(value[key], depth + 1)
    if isinstance(value, list) and len(value) == 1:
        return question_of(value[0], depth + 1)
    return ""


def history_of(value: Any) -> Turns:
    """The human and AI chat messages of a model input before its last human message (earlier turns), or a
    chain input's ``chat_history``/``history`` list. Tool-call turns (an AI message without text) are left
    out."""
    value = maybe_json(value)
    messages = chat_messages(value)
    if messages is None and isinstance(value, dict):
        listed = value.get("chat_history", value.get("history"))
        messages = chat_messages(listed) if listed else None
        return [(r, t) for r, t in messages or [] if r in (Role.HUMAN, Role.AI) and t.strip()]
    messages = messages or []
    last = max((i for i, (role, _) in enumerate(messages) if role is Role.HUMAN), default=0)
    return [(role, text) for role, text in messages[:last] if role in (Role.HUMAN, Role.AI) and text.strip()]


def answer_of(value: Any, depth: int = 0) -> str:
    """The assistant's answer in a trace's output: the text, a known key, a choice or candidate, or the final
    AI message's text (empty when the final AI turn is a tool call)."""
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
        for key in _LIST_KEYS:
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
