"""Reading an answer out of a RAG app's HTTP reply: a JSON object, a server-sent-event stream, or plain text.

Streaming apps send the answer in pieces (``data: {"delta": "Ja"}`` ... ``data: [DONE]``); the shadow keeps the
whole text, so the pieces are joined. A stream whose events carry the full answer at the answer path (often a
last "final" event) is read from the last such event instead. Chunk ids and the request id are taken from the
first event that has them; a chunk object's text (``context_text_field``) is read with its id.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ragreplay.core.reply_shapes import coerce_chunks, get_path
from ragreplay.core.types import Answer, RetrievedChunk

STREAM_PIECE_PATHS = ("choices.0.delta.content", "delta", "token", "text", "content")
"""Where a streamed event's piece of text is looked for, in order, unless ``stream_text_path`` is set."""
PLAIN_TYPES = ("text/plain", "text/markdown")


@dataclass(frozen=True)
class RequestFields:
    """Where the question, user, tags and answer live in the JSON bodies (dotted paths, as in HTTP targets).

    ``question_paths`` are tried in order; the user id comes from ``user_header`` first, then ``user_path``.
    """

    question_paths: tuple[str, ...] = ("question", "query")
    answer_path: str = "answer"
    contexts_path: str | None = None
    context_id_field: str = "id"
    context_text_field: str = "text"
    """The text field of a chunk object: kept (bounded and redacted) with the row when the reply carries it."""
    user_header: str | None = "X-User-Id"
    user_path: str | None = None
    tags_path: str | None = None
    request_id_header: str | None = "X-Request-Id"
    """The request id (to attach feedback later) comes from this request header first ..."""
    request_id_path: str | None = None
    """... then from this dotted path in the champion's JSON reply; else the shadow makes one up."""
    stream_text_path: str | None = None
    """The piece of text in each event of a streamed (SSE) reply; ``None``: see :data:`STREAM_PIECE_PATHS`."""


@dataclass(frozen=True)
class ParsedReply:
    """The answer a reply carried and the request id found in it (``None`` when not looked for or absent)."""

    answer: Answer
    request_id: str | None = None


def lookup(data: Any, path: str | None) -> Any:
    """The value at dotted ``path`` in ``data``, or ``None`` when the path is ``None`` or absent."""
    if path is None:
        return None
    try:
        return get_path(data, path)
    except KeyError:
        return None


def _id_text(value: Any) -> str | None:
    if isinstance(value, bool) or not isinstance(value, str | int) or value == "":
        return None
    return str(value)


def is_event_stream(body: bytes, content_type: str | None) -> bool:
    """Whether the reply is a server-sent-event stream (by content type, or by its first field)."""
    if content_type is not None and content_type.split(";")[0].strip().lower() == "text/event-stream":
        return True
    head = body.lstrip()[:16]
    return head.startswith((b"data:", b"event:", b"id:", b":"))


def sse_events(body: bytes) -> list[str]:
    """The ``data`` of each event in an SSE body (multi-line data joined by newlines), in order."""
    events: list[str] = []
    data: list[str] = []
    for raw in body.decode("utf-8", errors="replace").splitlines():
        if not raw.strip():
            if data:
                events.append("\n".join(data))
                data = []
            continue
        field, _, value = raw.partition(":")
        if field == "data":
            data.append(value[1:] if value.startswith(" ") else value)
    if data:
        events.append("\n".join(data))
    return events


def _chunks(value: Any, fields: RequestFields) -> tuple[RetrievedChunk, ...]:
    return coerce_chunks(value, fields.context_id_field, text_field=fields.context_text_field)


def _from_json(data: Any, fields: RequestFields) -> ParsedReply:
    text = lookup(data, fields.answer_path)
    if not isinstance(text, str):
        raise ValueError(f"no text at answer path '{fields.answer_path}'")
    contexts = _chunks(lookup(data, fields.contexts_path), fields)
    return ParsedReply(Answer(text=text, contexts=contexts), _id_text(lookup(data, fields.request_id_path)))


def _from_stream(body: bytes, fields: RequestFields) -> ParsedReply:
    pieces: list[str] = []
    full: str | None = None
    contexts: Any = None
    request_id: str | None = None
    paths = (fields.stream_text_path,) if fields.stream_text_path else STREAM_PIECE_PATHS
    for event in sse_events(body):
        if event.strip() == "[DONE]":
            continue
        try:
            data = json.loads(event)
        except ValueError:
            pieces.append(event)  # a stream of bare text pieces
            continue
        whole = lookup(data, fields.answer_path)
        if isinstance(whole, str):
            full = whole
        else:
            piece = next((p for p in (lookup(data, path) for path in paths) if isinstance(p, str)), None)
            if piece is not None:
                pieces.append(piece)
        if contexts is None:
            contexts = lookup(data, fields.contexts_path)
        if request_id is None:
            request_id = _id_text(lookup(data, fields.request_id_path))
    text = full if full is not None else "".join(pieces)
    if not text:
        raise ValueError("the event stream carried no answer text")
    chunks = _chunks(contexts, fields)
    return ParsedReply(Answer(text=text, contexts=chunks), request_id)


def parse_reply(body: bytes, content_type: str | None, fields: RequestFields) -> ParsedReply:
    """The answer in a reply body: SSE stream, JSON, or (``text/plain``, ``text/markdown``) the body itself.

    ``ValueError`` when none of them yields a text answer. A reply reports no cost, so its answer counts as one
    call of unknown price (``unpriced_calls`` 1, see ``core/costs``), never as $0.
    """
    parsed = _parse(body, content_type, fields)
    return ParsedReply(parsed.answer.model_copy(update={"unpriced_calls": 1}), parsed.request_id)


def _parse(body: bytes, content_type: str | None, fields: RequestFields) -> ParsedReply:
    if is_event_stream(body, content_type):
        return _from_stream(body, fields)
    media = (content_type or "").split(";")[0].strip().lower()
    if media in PLAIN_TYPES:
        text = body.decode("utf-8", errors="replace").strip()
        if not text:
            raise ValueError("empty text reply")
        return ParsedReply(Answer(text=text))
    return _from_json(json.loads(body), fields)


@dataclass(frozen=True)
class Exchange:
    """What the shadow reads from one exchange: the user id in the request body (when looked for there), and
    the question, the champion's answer, the tags and the request id the reply carried; ``query`` and
    ``answer`` are ``None`` when the question or the answer cannot be read."""

    user: str | None
    query: str | None = None
    answer: Answer | None = None
    tags: dict[str, str] | None = None
    reply_request_id: str | None = None


def body_user(data: Any, fields: RequestFields) -> str | None:
    """The user id at ``fields.user_path`` in a parsed request body, or ``None``."""
    found = lookup(data, fields.user_path)
    return str(found) if isinstance(found, str | int) else None


def read_exchange(
    body: bytes,
    reply_body: bytes,
    reply_type: str | None,
    fields: RequestFields,
    *,
    reply_truncated: bool = False,
    data: Any = None,
) -> Exchange:
    """Read a JSON request ``body`` (or its parsed ``data``) and the champion's reply. ``ValueError`` when the
    request is not JSON; a reply that is cut (``reply_truncated``) or unreadable gives an :class:`Exchange`
    with no question. A plain function of bytes, so that it can run in the shadow's worker process."""
    if data is None:
        data = json.loads(body)
    user = body_user(data, fields)
    if reply_truncated:
        return Exchange(user)
    try:
        parsed = parse_reply(reply_body, reply_type, fields)
    except (ValueError, TypeError):
        return Exchange(user)
    query = next(
        (q for q in (lookup(data, p) for p in fields.question_paths) if isinstance(q, str) and q), None
    )
    if query is None:
        return Exchange(user)
    tags_found = lookup(data, fields.tags_path)
    tags = {str(k): str(v) for k, v in tags_found.items()} if isinstance(tags_found, Mapping) else None
    return Exchange(user, query, parsed.answer, tags, parsed.request_id)
