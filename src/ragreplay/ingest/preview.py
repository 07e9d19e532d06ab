"""The first turns a file yields, each value beside the source field it came from: what ``ingest --dry-run``
shows so a user can check a mapping before anything is written."""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import BaseModel, Field

from ragreplay.core.types import Conversation, Role

#: The longest question or answer text a preview shows (the rest is cut with "...").
MAX_PREVIEW_CHARS = 400

#: Where the streamed formats take each value from (their readers note nothing: the field is fixed).
STREAMED_ORIGINS: dict[str, dict[str, str]] = {
    "canonical": {
        "question": "messages[].content (role human)",
        "answer": "messages[].content (role ai)",
        "feedback": "messages[].feedback",
        "retrieved": "messages[].retrieved",
        "latency_ms": "messages[].latency_ms",
        "tokens": "messages[].tokens",
        "session": "id",
    },
    "flat": {
        "question": "content (role human)",
        "answer": "content (role ai)",
        "feedback": "feedback",
        "retrieved": "retrieved",
        "latency_ms": "latency_ms",
        "tokens": "tokens",
        "session": "conversation_id",
    },
    "openai": {
        "question": "messages[].content (role user)",
        "answer": "messages[].content (role assistant)",
        "feedback": "feedback / metadata.feedback",
        "session": "id / metadata.conversation_id",
    },
}


class TurnPreview(BaseModel):
    """One question and its answer as read, with the source field of each value (``origin``)."""

    conversation_id: str
    turn: int
    question: str
    answer: str
    #: messages of the conversation before the question (its history)
    history_messages: int = 0
    chunk_ids: list[str] = Field(default_factory=list)
    latency_ms: float | None = None
    tokens: dict[str, int] | None = None
    feedback: str | None = None
    user_id: str | None = None
    origin: dict[str, str] = Field(default_factory=dict)


def _cut(text: str) -> str:
    return text if len(text) <= MAX_PREVIEW_CHARS else text[: MAX_PREVIEW_CHARS - 3] + "..."


def turn_previews(
    conv: Conversation, origins: list[dict[str, str]] | None, fmt: str, limit: int
) -> list[TurnPreview]:
    """Up to ``limit`` turns of ``conv``: each AI message with the human message it answers."""
    out: list[TurnPreview] = []
    question: tuple[int, str] | None = None  # the index and text of the question not answered yet
    for at, message in enumerate(conv.messages):
        if len(out) >= limit:
            break
        if message.role is Role.HUMAN:
            question = (at, message.content)
            continue
        if message.role is not Role.AI:
            continue
        index = len(out)
        origin: Mapping[str, str] = (
            origins[index] if origins is not None and index < len(origins) else STREAMED_ORIGINS.get(fmt, {})
        )
        asked_at, text = question if question is not None else (at, "")
        out.append(
            TurnPreview(
                conversation_id=conv.id,
                turn=index + 1,
                question=_cut(text),
                answer=_cut(message.content),
                history_messages=asked_at,
                chunk_ids=[chunk.id for chunk in message.retrieved],
                latency_ms=message.latency_ms,
                tokens=None if message.tokens is None else message.tokens.model_dump(),
                feedback=None if message.feedback is None else message.feedback.value,
                user_id=conv.user_id,
                origin=dict(origin),
            )
        )
        question = None
    return out
