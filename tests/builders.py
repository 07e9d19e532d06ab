"""Builders of the domain objects tests need, with sensible defaults: name only what a test is about."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime

from ragreplay.core.eval import EvalContext, EvalRow
from ragreplay.core.runs import RunRecord, RunStatus, SourceRecord
from ragreplay.core.shadow import ShadowAnswer, ShadowRow, new_row_id
from ragreplay.core.types import Case, Conversation, Feedback, Message, RetrievedChunk, Role
from ragreplay.store import Store


def make_case(
    *,
    id: str = "c1",
    conversation_id: str = "conv",
    turn_index: int = 1,
    query: str = "q",
    history: tuple[Message, ...] = (),
    old_answer: str = "old",
    feedback: Feedback = Feedback.GOOD,
    retrieved: tuple[RetrievedChunk, ...] = (),
    tags: Mapping[str, str] | None = None,
    ts: datetime | None = None,
    user_id: str | None = None,
) -> Case:
    """A :class:`~ragreplay.core.types.Case`: by default the first turn ``c1`` of conversation ``conv``, asking
    ``q``, once answered ``old`` and rated good, without history, retrieval, tags, time or user.

    A test module with its own usual case binds its defaults once, e.g.
    ``make_case = functools.partial(builders.make_case, feedback=Feedback.BAD)``; keywords still override.
    """
    return Case(
        id=id,
        conversation_id=conversation_id,
        turn_index=turn_index,
        query=query,
        history=history,
        old_answer=old_answer,
        feedback=feedback,
        retrieved=retrieved,
        tags=dict(tags or {}),
        ts=ts,
        user_id=user_id,
    )


def make_history(*contents: str) -> tuple[Message, ...]:
    """Messages alternating human and AI, the first one human: ``make_history("Who is Lisa?", "The HR lead.")``."""
    return tuple(
        Message(role=Role.HUMAN if i % 2 == 0 else Role.AI, content=content)
        for i, content in enumerate(contents)
    )


def make_shadow_row(
    *,
    id: str | None = None,
    ts: datetime | None = None,
    request_id: str = "r1",
    query: str = "q",
    user_hash: str | None = None,
    tags: Mapping[str, str] | None = None,
    challenger: str = "b",
    champion_answer: ShadowAnswer | str = "old",
    challenger_answer: ShadowAnswer | str = "new",
) -> ShadowRow:
    """A :class:`~ragreplay.core.shadow.ShadowRow`: by default live request ``r1`` asking ``q``, challenger
    ``b``, the champion answering ``old`` and the challenger ``new``, without user or tags, with a fresh id and
    the current time (as the row's own defaults). An answer given as text is
    ``ShadowAnswer(text=...)``; pass a :class:`~ragreplay.core.shadow.ShadowAnswer` for chunks, figures or an
    error.
    """
    return ShadowRow(
        id=id if id is not None else new_row_id(),
        ts=ts if ts is not None else datetime.now(UTC),
        request_id=request_id,
        query=query,
        user_hash=user_hash,
        tags=dict(tags or {}),
        challenger=challenger,
        champion_answer=_side(champion_answer),
        challenger_answer=_side(challenger_answer),
    )


def _side(answer: ShadowAnswer | str) -> ShadowAnswer:
    return ShadowAnswer(text=answer) if isinstance(answer, str) else answer


def save_cases(store: Store, cases: list[Case], conversation_id: str = "c") -> list[Case]:
    """Store ``cases`` as ingested from one source, in one conversation of their questions; returns them."""
    messages = tuple(Message(role=Role.HUMAN, content=c.query) for c in cases)
    source = SourceRecord(id="s", path="x", format="canonical", ingested_at=datetime.now(UTC))
    store.cases.write_source(source, [(Conversation(id=conversation_id, messages=messages), cases, [])])
    return cases


def make_eval_rows(n: int = 8) -> list[EvalRow]:
    """``n`` eval rows of one shape: a reference on even rows, a context (with a judgment) on rows not divisible
    by 3, tagged ``even`` / ``odd``; each answer has a claim its context holds and one it does not."""
    out = []
    for i in range(n):
        out.append(
            EvalRow(
                id=f"q{i}",
                question=f"How many leave days does team {i} get?",
                answer=f"Team {i} gets {20 + i} leave days. Parking is free.",
                reference=f"Team {i} gets {20 + i} leave days a year." if i % 2 == 0 else None,
                contexts=(EvalContext(id=f"doc{i}#1", text=f"Team {i} gets {20 + i} leave days a year."),)
                if i % 3
                else (),
                judgments={f"doc{i}#1": 1} if i % 3 else None,
                tags=("even",) if i % 2 == 0 else ("odd",),
            )
        )
    return out


def make_run(run_id: str = "run_1", created_at: datetime | None = None, **fields: object) -> RunRecord:
    """A running replay run record (target ``t``, judge ``j``, no rewriter); ``fields`` override any field."""
    values: dict[str, object] = {
        "id": run_id,
        "created_at": created_at or datetime.now(UTC),
        "status": RunStatus.RUNNING,
        "target_name": "t",
        "target_version": "v",
        "judge_name": "j",
        "judge_prompt_version": "p",
        "rewriter_name": None,
        "rewrite_prompt_version": None,
        "config_hash": "c",
        "dataset_hash": "d",
        "n_cases": 0,
    }
    return RunRecord.model_validate({**values, **fields})
