"""The domain's vocabulary: conversations, labelled turns (cases), answers, judgments and verdicts."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class Role(StrEnum):
    """Who wrote a message."""

    HUMAN = "human"
    AI = "ai"
    SYSTEM = "system"
    TOOL = "tool"


class Feedback(StrEnum):
    """A user's signal on one AI message."""

    GOOD = "good"
    BAD = "bad"


class Fit(StrEnum):
    """The FIT judge's raw answer: does the new answer fit the old one?"""

    FIT = "FIT"
    NO_FIT = "NO_FIT"
    UNSCORABLE = "UNSCORABLE"


class Verdict(StrEnum):
    """Feedback on the old answer combined with the FIT judgment on the new one."""

    GOOD_FIT = "GOOD_FIT"
    GOOD_NO_FIT = "GOOD_NO_FIT"
    BAD_FIT = "BAD_FIT"
    BAD_NO_FIT = "BAD_NO_FIT"


class SkipReason(StrEnum):
    """Why a message did not become a case."""

    NO_FEEDBACK = "no_feedback"
    NO_PRECEDING_HUMAN = "ai_without_preceding_human"
    CONSECUTIVE_AI = "consecutive_ai_messages"
    EMPTY_ANSWER = "empty_answer"
    EMPTY_QUERY = "empty_query"
    FEEDBACK_ON_NON_AI = "feedback_on_non_ai_message"
    SYSTEM_OR_TOOL = "system_or_tool_message"


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class RetrievedChunk(_Frozen):
    """A chunk the RAG retrieved: its id, optional score and optional text."""

    id: str
    score: float | None = None
    text: str | None = None


class TokenUsage(_Frozen):
    """Tokens spent by one or more model calls."""

    input: int = 0
    output: int = 0

    def __add__(self, other: TokenUsage) -> TokenUsage:
        return TokenUsage(input=self.input + other.input, output=self.output + other.output)


class Message(_Frozen):
    """One message of a conversation, with the feedback and retrieval it carried in production."""

    role: Role
    content: str
    feedback: Feedback | None = None
    ts: datetime | None = None
    retrieved: tuple[RetrievedChunk, ...] = ()
    latency_ms: float | None = None
    tokens: TokenUsage | None = None


class Conversation(_Frozen):
    """A whole conversation as logged."""

    id: str
    messages: tuple[Message, ...]
    user_id: str | None = None
    tags: dict[str, str] = Field(default_factory=dict)


class Skip(_Frozen):
    """A message that did not become a case, and why."""

    conversation_id: str
    message_index: int
    reason: SkipReason


class Case(_Frozen):
    """A labelled turn: the question a user asked, what they were told, and what they thought of it."""

    id: str
    conversation_id: str
    turn_index: int
    query: str
    history: tuple[Message, ...]
    old_answer: str
    feedback: Feedback
    retrieved: tuple[RetrievedChunk, ...] = ()
    tags: dict[str, str] = Field(default_factory=dict)
    ts: datetime | None = None
    user_id: str | None = None


class Answer(_Frozen):
    """What a target (the RAG under test) answered, with what it cost."""

    text: str
    contexts: tuple[RetrievedChunk, ...] = ()
    latency_ms: float | None = None
    tokens: TokenUsage = TokenUsage()
    cost_usd: float = 0.0
    unpriced_calls: int = 0
    """Model calls whose price is unknown: their dollars are not in ``cost_usd`` (see ``core/costs``)."""
    error: str | None = None
    extra: dict[str, Any] = Field(default_factory=dict)


class Rewrite(_Frozen):
    """The standalone question a case replays, pinned once per case and rewriter version."""

    original: str
    query: str
    rewritten: bool
    model: str | None = None
    prompt_version: str | None = None
    note: str = ""
    cost_usd: float = 0.0
    unpriced_calls: int = 0
    """Model calls whose price is unknown: their dollars are not in ``cost_usd`` (see ``core/costs``)."""
    unreadable: bool = False
    """The rewriter's reply could not be read: the question is kept as asked for this run, never pinned."""


class Judgment(_Frozen):
    """The FIT judge's decision on one case."""

    fit: Fit
    reason: str = ""
    judge: str
    prompt_version: str
    best_guess: Fit | None = None
    """FIT or NO_FIT: where the judge leans, also when ``fit`` is UNSCORABLE; ``None`` when the judge gives none."""
    raw: str = ""
    tokens: TokenUsage = TokenUsage()
    cost_usd: float = 0.0
    unpriced_calls: int = 0
    """Model calls whose price is unknown: their dollars are not in ``cost_usd`` (see ``core/costs``)."""
