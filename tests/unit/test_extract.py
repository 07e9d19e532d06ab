"""extract_cases: which messages become cases, and the one skip every other message gets."""

from __future__ import annotations

import random
from datetime import UTC, datetime

import pytest

from ragreplay.core.extract import extract_cases
from ragreplay.core.ids import case_id
from ragreplay.core.types import Conversation, Feedback, Message, RetrievedChunk, Role, SkipReason

T0 = datetime(2026, 10, 1, 9, 0, tzinfo=UTC)
T1 = datetime(2026, 10, 1, 9, 1, tzinfo=UTC)

H, A, S, TL = Role.HUMAN, Role.AI, Role.SYSTEM, Role.TOOL
GOOD, BAD = Feedback.GOOD, Feedback.BAD


def msg(role: Role, content: str = "text", feedback: Feedback | None = None, **kw: object) -> Message:
    return Message(role=role, content=content, feedback=feedback, **kw)  # type: ignore[arg-type]


def conv(*messages: Message, **kw: object) -> Conversation:
    return Conversation(id="c1", messages=messages, **kw)  # type: ignore[arg-type]


def skip_reasons(c: Conversation) -> dict[int, SkipReason]:
    return {s.message_index: s.reason for s in extract_cases(c)[1]}


def test_labelled_answer_becomes_a_case_with_all_its_context() -> None:
    chunks = (RetrievedChunk(id="doc12#3", score=0.8),)
    c = conv(
        msg(S, "be nice"),
        msg(H, "Hi", ts=T0),
        msg(A, "Hello"),
        msg(H, "Who is Lisa?", ts=T0),
        msg(TL, "lookup"),
        msg(A, "Lisa heads HR.", GOOD, ts=T1, retrieved=chunks),
        user_id="u7",
        tags={"department": "hr"},
    )
    cases, _ = extract_cases(c)
    assert len(cases) == 1
    case = cases[0]
    assert case.query == "Who is Lisa?"
    assert case.old_answer == "Lisa heads HR."
    assert case.turn_index == 5
    assert case.feedback is GOOD
    assert [m.content for m in case.history] == ["Hi", "Hello"]  # system dropped, query excluded
    assert case.retrieved == chunks
    assert case.ts == T1
    assert case.user_id == "u7" and case.tags == {"department": "hr"}
    assert case.conversation_id == "c1"
    assert case.id == case_id("c1", 5, "Who is Lisa?", "Lisa heads HR.")


def test_case_takes_the_query_timestamp_when_the_answer_has_none() -> None:
    cases, _ = extract_cases(conv(msg(H, "q", ts=T0), msg(A, "a", BAD)))
    assert cases[0].ts == T0


def test_query_is_the_nearest_human_message_and_earlier_ones_are_history() -> None:
    cases, _ = extract_cases(conv(msg(H, "hello"), msg(H, "the real question"), msg(S), msg(A, "a", GOOD)))
    assert cases[0].query == "the real question"
    assert [m.content for m in cases[0].history] == ["hello"]


def test_ai_message_before_any_human_is_skipped() -> None:
    assert skip_reasons(conv(msg(A, "Welcome!", GOOD), msg(H, "q"), msg(A, "a", GOOD))) == {
        0: SkipReason.NO_PRECEDING_HUMAN
    }


def test_second_of_two_ai_messages_has_no_question_and_the_first_keeps_it() -> None:
    c = conv(msg(H, "q"), msg(A, "first", GOOD), msg(A, "second", BAD))
    cases, _ = extract_cases(c)
    assert [(x.turn_index, x.query, x.old_answer) for x in cases] == [(1, "q", "first")]
    assert skip_reasons(c) == {2: SkipReason.CONSECUTIVE_AI}


def test_unlabelled_first_ai_still_consumes_the_question() -> None:
    c = conv(msg(H, "q"), msg(A, "first"), msg(TL), msg(A, "second", GOOD))
    assert extract_cases(c)[0] == []
    assert skip_reasons(c) == {
        1: SkipReason.NO_FEEDBACK,
        2: SkipReason.SYSTEM_OR_TOOL,
        3: SkipReason.CONSECUTIVE_AI,
    }


def test_a_blank_answer_is_empty_answer_with_or_without_feedback_or_a_question() -> None:
    # an unlabelled blank answer (a tool-call turn a reader left empty) says empty_answer, not no_feedback
    c = conv(msg(A, " "), msg(H, "q"), msg(A, ""), msg(A, "\n", GOOD))
    assert skip_reasons(c) == {
        0: SkipReason.EMPTY_ANSWER,
        2: SkipReason.EMPTY_ANSWER,
        3: SkipReason.EMPTY_ANSWER,
    }


def test_unlabelled_messages_skip_as_no_feedback_before_any_structural_reason() -> None:
    c = conv(msg(A, "welcome"), msg(H, "q"), msg(A, "a"), msg(A, "b"))
    assert skip_reasons(c) == {
        0: SkipReason.NO_FEEDBACK,
        2: SkipReason.NO_FEEDBACK,
        3: SkipReason.NO_FEEDBACK,
    }


@pytest.mark.parametrize(
    ("query", "answer", "reason"),
    [
        ("q", "   \n", SkipReason.EMPTY_ANSWER),
        ("", "a", SkipReason.EMPTY_QUERY),
        (" \t", "a", SkipReason.EMPTY_QUERY),
        ("", "", SkipReason.EMPTY_ANSWER),
    ],
)
def test_blank_query_or_answer_is_skipped(query: str, answer: str, reason: SkipReason) -> None:
    c = conv(msg(H, query), msg(A, answer, GOOD))
    assert extract_cases(c)[0] == []
    assert skip_reasons(c) == {1: reason}


def test_feedback_on_non_ai_messages_and_plain_system_tool_messages() -> None:
    c = conv(
        msg(S, "sys", GOOD),
        msg(S, "sys"),
        msg(H, "q", BAD),
        msg(TL, "t", GOOD),
        msg(TL, "t"),
        msg(A, "a", GOOD),
    )
    assert skip_reasons(c) == {
        0: SkipReason.FEEDBACK_ON_NON_AI,
        1: SkipReason.SYSTEM_OR_TOOL,
        2: SkipReason.FEEDBACK_ON_NON_AI,
        3: SkipReason.FEEDBACK_ON_NON_AI,
        4: SkipReason.SYSTEM_OR_TOOL,
    }
    cases, _ = extract_cases(c)
    assert [x.query for x in cases] == ["q"]  # a labelled human message is still a question


def test_empty_conversation_yields_nothing() -> None:
    assert extract_cases(conv()) == ([], [])


def test_every_message_is_accounted_for_exactly_once() -> None:
    """The documented rule: each message is a case or one skip, except human messages without feedback."""
    rng = random.Random(7)
    roles = [H, A, S, TL]
    for n in range(500):
        messages = [
            msg(
                rng.choice(roles),
                rng.choice(["", " ", "text", "more text"]),
                rng.choice([None, None, GOOD, BAD]),
            )
            for _ in range(rng.randint(0, 9))
        ]
        c = Conversation(id=f"c{n}", messages=tuple(messages))
        cases, skips = extract_cases(c)
        accounted = [x.turn_index for x in cases] + [s.message_index for s in skips]
        assert len(accounted) == len(set(accounted)), c
        expected = {i for i, m in enumerate(messages) if not (m.role is H and m.feedback is None)}
        assert set(accounted) == expected, c
        for x in cases:
            assert messages[x.turn_index].role is A
            assert all(m.role in (H, A) for m in x.history)
