"""What the shadow keeps per live request and challenger: the two answers, side by side, and their judgment."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ragreplay.core.types import Answer, Case, Feedback, Fit, RetrievedChunk, TokenUsage

MAX_CHUNK_TEXTS = 20
"""A side keeps the text of at most this many of its chunks (the first ones); the rest are kept by id only."""
MAX_CHUNK_CHARS = 2_000
"""A kept chunk text is cut to this many characters, :data:`CHUNK_CUT_MARKER` included."""
CHUNK_CUT_MARKER = " [… cut]"
"""Ends a chunk text that was cut to :data:`MAX_CHUNK_CHARS`."""


def bounded_chunk_text(text: str | None) -> str | None:
    """``text`` as a shadow row keeps it: at most :data:`MAX_CHUNK_CHARS`, cut with :data:`CHUNK_CUT_MARKER`."""
    if text is None or len(text) <= MAX_CHUNK_CHARS:
        return text
    return text[: MAX_CHUNK_CHARS - len(CHUNK_CUT_MARKER)] + CHUNK_CUT_MARKER


def kept_chunk_texts(chunks: tuple[RetrievedChunk, ...]) -> list[str | None]:
    """The texts a side keeps of ``chunks``: the first :data:`MAX_CHUNK_TEXTS`, each bounded, ``None`` where
    a chunk came without text; empty when none of them had text (nothing to keep)."""
    texts = [bounded_chunk_text(chunk.text) for chunk in chunks[:MAX_CHUNK_TEXTS]]
    return texts if any(text is not None for text in texts) else []


def new_row_id() -> str:
    """A fresh row id (uuid4 hex): rows are written with insert-ignore on it, so a retry never duplicates."""
    return uuid.uuid4().hex


class ShadowAnswer(BaseModel):
    """One side of a shadow row: what a pipeline answered, which chunks it used and what it cost."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    text: str = ""
    chunk_ids: list[str] = Field(default_factory=list)
    chunk_texts: list[str | None] = Field(default_factory=list)
    """The texts of the first chunks, in ``chunk_ids`` order (see :func:`kept_chunk_texts`), redacted like the
    answer; empty when the reply carried no chunk text, and in rows stored before texts were kept."""
    latency_ms: float | None = None
    tokens: TokenUsage = TokenUsage()
    cost_usd: float = 0.0
    unpriced_calls: int = 0
    """Model calls of this answer whose price is unknown, not in ``cost_usd`` (see ``core/costs``)."""
    error: str | None = None

    @model_validator(mode="after")
    def _texts_follow_ids(self) -> ShadowAnswer:
        if len(self.chunk_texts) > len(self.chunk_ids):
            raise ValueError(
                f"{len(self.chunk_texts)} chunk texts for {len(self.chunk_ids)} chunk ids: "
                "each text belongs to the chunk id at its position"
            )
        return self

    @classmethod
    def from_answer(cls, answer: Answer, measured_ms: float | None = None) -> ShadowAnswer:
        """The shadow's view of a target's ``answer``; ``measured_ms`` stands in when it reports no latency."""
        return cls(
            text=answer.text,
            chunk_ids=[chunk.id for chunk in answer.contexts],
            chunk_texts=kept_chunk_texts(answer.contexts),
            latency_ms=answer.latency_ms if answer.latency_ms is not None else measured_ms,
            tokens=answer.tokens,
            cost_usd=answer.cost_usd,
            unpriced_calls=answer.unpriced_calls,
            error=answer.error,
        )

    @classmethod
    def failed(cls, error: str, latency_ms: float | None = None) -> ShadowAnswer:
        """A side that produced no answer: it raised, timed out or was cancelled."""
        return cls(error=error, latency_ms=latency_ms)

    def chunks(self) -> tuple[RetrievedChunk, ...]:
        """This side's chunks: their ids, and their texts where kept."""
        texts = self.chunk_texts
        return tuple(
            RetrievedChunk(id=cid, text=texts[i] if i < len(texts) else None)
            for i, cid in enumerate(self.chunk_ids)
        )

    def to_answer(self) -> Answer:
        """This side as an :class:`Answer` (its chunks with the texts kept, see :meth:`chunks`)."""
        return Answer(
            text=self.text,
            contexts=self.chunks(),
            latency_ms=self.latency_ms,
            tokens=self.tokens,
            cost_usd=self.cost_usd,
            unpriced_calls=self.unpriced_calls,
            error=self.error,
        )


class ShadowRow(BaseModel):
    """One live request compared with one challenger: one row per (request, challenger).

    ``query`` is already redacted and ``user_hash`` already hashed (or ``None``) when a row is built: the raw
    values never reach the log or the store.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(default_factory=new_row_id)
    ts: datetime = Field(default_factory=lambda: datetime.now(UTC))
    request_id: str
    query: str
    user_hash: str | None = None
    tags: dict[str, str] = Field(default_factory=dict)
    challenger: str
    champion_answer: ShadowAnswer
    challenger_answer: ShadowAnswer

    def to_case(self) -> Case:
        """The case the FIT judge sees for this row: the champion's answer plays the old answer."""
        return live_case(
            self.request_id,
            self.query,
            None,
            self.tags,
            case_id=self.id,
            old_answer=self.champion_answer.text,
            retrieved=self.champion_answer.chunks(),
            ts=self.ts,
        )


FeedbackSource = Literal["api", "tap", "import"]
"""How feedback arrived: the library or ``/_shadow/feedback`` (api), the app's own feedback endpoint seen by the
proxy (tap), or ``ragreplay shadow feedback`` from a file (import)."""


class ShadowFeedback(BaseModel):
    """A user's GOOD/BAD on the answer the champion gave to live request ``request_id``.

    Stored once per request: a later label for the same request replaces an earlier one (the user changed
    their mind). ``comment`` is already redacted when the feedback is built.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    request_id: str = Field(min_length=1)
    feedback: Feedback
    ts: datetime = Field(default_factory=lambda: datetime.now(UTC))
    comment: str | None = None
    source: FeedbackSource = "api"


def live_case(
    request_id: str,
    query: str,
    user_id: str | None,
    tags: Mapping[str, str] | None,
    *,
    case_id: str | None = None,
    old_answer: str = "",
    retrieved: tuple[RetrievedChunk, ...] = (),
    ts: datetime | None = None,
) -> Case:
    """The :class:`Case` for a live request: what a target is given, and (with the champion's answer as
    ``old_answer``) what the FIT judge sees of a shadow row.

    Live traffic has no feedback when it is answered: ``feedback`` is a placeholder (``good``) that targets and
    judges must not read.
    """
    return Case(
        id=case_id if case_id is not None else f"live_{request_id}",
        conversation_id=request_id,
        turn_index=0,
        query=query,
        history=(),
        old_answer=old_answer,
        feedback=Feedback.GOOD,
        retrieved=retrieved,
        tags=dict(tags or {}),
        user_id=user_id,
        ts=ts,
    )


class ShadowJudgmentRecord(BaseModel):
    """The judged outcome of one shadow row: agreement (``fit``), preference (``winner``: ``x`` is the
    champion, ``y`` the challenger), order consistency, the judges, and a JSON ``payload`` (reasons, the pair
    outcome, the order mode). ``error`` says why a row could not be judged; such rows are kept, not dropped."""

    model_config = ConfigDict(frozen=True)

    row_id: str
    challenger: str
    judged_at: datetime
    fit: Fit | None = None
    winner: Literal["x", "y", "tie"] | None = None
    consistent: bool | None = None
    judge: str
    judge_prompt_version: str
    fit_judge: str
    fit_judge_prompt_version: str
    error: str | None = None
    payload: dict[str, Any] = {}
