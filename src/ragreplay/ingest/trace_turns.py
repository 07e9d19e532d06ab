"""Traces made conversations: every tracing format's reader builds one :class:`Turn` per trace, then here.

A turn is one request to the assistant: the user's question, its answer (with the chunks retrieved for it,
latency, tokens) and the feedback left on it. Turns sharing a session (thread, conversation) id are one
conversation, ordered by their start time (then by file line); a turn without one is a conversation alone,
named by its trace id. The chat history a turn's model call received is kept only for the first turn of a
conversation (later turns' history is the conversation's earlier turns).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from ragreplay.core.types import Conversation, Feedback, Message, RetrievedChunk, Role, TokenUsage
from ragreplay.ingest.fields import stringify
from ragreplay.ingest.problems import ProblemLog, Record
from ragreplay.ingest.provenance import note_origins
from ragreplay.ingest.trace_feedback import Votes

#: Most tags kept per conversation, and the longest tag value; a trace's metadata can be large.
MAX_TAGS = 32
MAX_TAG_CHARS = 200


@dataclass
class Turn:
    """One traced request: what the reader found for it."""

    trace_id: str
    line: int
    session: str | None = None
    user_id: str | None = None
    start: datetime | None = None
    question: str = ""
    answer: str = ""
    history: list[tuple[Role, str]] = field(default_factory=list)
    retrieved: list[RetrievedChunk] = field(default_factory=list)
    latency_ms: float | None = None
    tokens: TokenUsage | None = None
    tags: dict[str, str] = field(default_factory=dict)
    feedback: Feedback | None = None
    #: where each value came from, for ``ingest --dry-run``: ``{"question": "trace.input", ...}`` (keys:
    #: question, answer, history, retrieved, latency_ms, tokens, session, user_id, feedback)
    origin: dict[str, str] = field(default_factory=dict)


def add_tags(tags: dict[str, str], values: object) -> None:
    """Scalar metadata values (``{"department": "hr"}``) and tag lists (``["beta"]``: ``beta: true``) as tags."""
    if isinstance(values, list):
        values = {str(v): True for v in values if isinstance(v, str | int) and not isinstance(v, bool)}
    if not isinstance(values, dict):
        return
    for key, value in values.items():
        if len(tags) >= MAX_TAGS:
            return
        if value is not None and not isinstance(value, dict | list) and str(key).strip():
            tags.setdefault(str(key)[:MAX_TAG_CHARS], stringify(value)[:MAX_TAG_CHARS])


def token_counts(inputs: object, outputs: object) -> TokenUsage | None:
    """A call's tokens from its input and output counts when both are whole numbers of 0 or more."""
    counts = [c for c in (inputs, outputs) if isinstance(c, int) and not isinstance(c, bool) and c >= 0]
    return TokenUsage(input=counts[0], output=counts[1]) if len(counts) == 2 else None


def span_ms(start: datetime | None, end: datetime | None) -> float | None:
    """Milliseconds from ``start`` to ``end``; ``None`` without both (or if ``end`` is before ``start``)."""
    if start is None or end is None:
        return None
    ms = (end - start).total_seconds() * 1000
    return ms if ms >= 0 and math.isfinite(ms) else None


def apply_votes(
    turns: dict[str, Turn], votes: Votes, trace_of: Callable[[str], str | None], log: ProblemLog, what: str
) -> None:
    """Put each vote on its turn; ``trace_of`` maps what a vote points at to a trace id (``None``: unknown).

    A vote on something not in the file is a problem on the vote's line; ``what`` names the record
    (``score``, ``feedback row``, ``annotation``).
    """
    for target, feedback, line, field_name in votes.items():
        trace_id = trace_of(target)
        if trace_id is None or trace_id not in turns:
            Record(log, line).problem(
                field_name,
                f"{what} on {target!r}, which is not in this file",
                "export the traces together with their feedback (the same time range), or drop this line",
            )
            continue
        turns[trace_id].feedback = feedback
        turns[trace_id].origin["feedback"] = f"{what} at {Path(log.where(line)).name}, field {field_name}"


Ballot = tuple[Votes, Callable[[str], str | None], str]
"""Votes to put on the turns: the votes, what maps their target to a trace id, and what names their records
(see :func:`apply_votes`)."""


def voted_conversations(
    log: ProblemLog, owned: bool, turns_of: Callable[[], dict[str, Turn]], *ballots: Ballot
) -> Iterator[tuple[int, Conversation]]:
    """How every trace importer ends, once its file is read: when no problem was logged, the turns
    (``turns_of``) with each ballot's votes put on them in order, and their :func:`conversations` when no vote
    was a problem; then, when the importer made ``log`` itself (``owned``), its problems raised."""
    if not log.problems:
        turns = turns_of()
        for votes, trace_of, what in ballots:
            apply_votes(turns, votes, trace_of, log, what)
        if not log.problems:
            yield from conversations(turns)
    if owned:
        log.raise_if_any()


def _start_key(turn: Turn) -> tuple[float, int]:
    return (turn.start.timestamp() if turn.start is not None else math.inf, turn.line)


def conversations(turns: dict[str, Turn]) -> Iterator[tuple[int, Conversation]]:
    """``(first line, Conversation)`` for every session (or lone trace), in the order they start in the file."""
    groups: dict[str, list[Turn]] = {}
    for turn in sorted(turns.values(), key=lambda t: t.line):
        groups.setdefault(turn.session or turn.trace_id, []).append(turn)
    for conv_id, group in groups.items():
        line = group[0].line
        group.sort(key=_start_key)
        messages = [Message(role=role, content=text) for role, text in group[0].history]
        tags: dict[str, str] = {}
        for turn in group:
            messages.append(Message(role=Role.HUMAN, content=turn.question, ts=turn.start))
            messages.append(
                Message(
                    role=Role.AI,
                    content=turn.answer,
                    feedback=turn.feedback,
                    retrieved=tuple(turn.retrieved),
                    latency_ms=turn.latency_ms,
                    tokens=turn.tokens,
                )
            )
            for key, value in turn.tags.items():
                if len(tags) < MAX_TAGS:
                    tags.setdefault(key, value)
        user_id = next((t.user_id for t in group if t.user_id), None)
        note_origins(conv_id, [turn.origin for turn in group])
        yield line, Conversation(id=conv_id, messages=tuple(messages), user_id=user_id, tags=tags)


def required_id(value: object, rec: Record, field_name: str, fix: str) -> str | None:
    """An id field (a non-empty string or an integer), or ``None`` after recording a problem."""
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, str) and value.strip():
        return value.strip()
    what = "is missing" if value in (None, "") else f"must be a string, got {type(value).__name__}"
    rec.problem(field_name, f"{field_name} {what}", fix)
    return None


def optional_text(value: object) -> str | None:
    """A session, thread or user id as text; ``None`` for a missing, empty or structured value."""
    if isinstance(value, str):
        return value.strip() or None
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return None
