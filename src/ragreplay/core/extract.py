"""Turn a logged conversation into labelled cases, and account for every message that did not become one."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from ragreplay.core.ids import case_id
from ragreplay.core.types import Case, Conversation, Message, RetrievedChunk, Role, Skip, SkipReason

SHORT_HISTORY = 16
"""A history of at most this many messages is short: the store keeps it with its case (a longer one is kept
once per conversation), so ingest extracts only short histories."""


def extract_cases(conv: Conversation, history_up_to: int | None = None) -> tuple[list[Case], list[Skip]]:
    """Split ``conv`` into the cases it yields and the messages it skips, each skip with its reason.

    An AI message answers the nearest human message before it that no earlier AI message has answered yet
    (system and tool messages in between are ignored). Each message is then accounted for exactly once:

    - a **human** message without feedback is a query: neither a case nor a skip;
    - a **human, system or tool** message carrying feedback is skipped as ``FEEDBACK_ON_NON_AI``;
    - a **system or tool** message without feedback is skipped as ``SYSTEM_OR_TOOL``;
    - an **AI** message becomes a case, or is skipped with the first reason that applies, in this order:
      ``EMPTY_ANSWER`` (blank content: with or without a label, there is no answer to replay, and a reader
      that found no text must not hide behind ``NO_FEEDBACK``), ``NO_FEEDBACK`` (no label),
      ``NO_PRECEDING_HUMAN`` (no human message anywhere before it), ``CONSECUTIVE_AI`` (its question was
      already answered by an earlier AI message, which keeps it), ``EMPTY_QUERY`` (its question is blank).

    So ``len(cases) + len(skips) == len(messages) - (human messages without feedback)``.

    A case's history is every human and AI message before its query (system and tool messages dropped); its
    timestamp is the AI message's, else the query's; tags and user id come from the conversation. With
    ``history_up_to`` a case whose history is longer than that is given none (:class:`Dialogue` gives it
    back), so a conversation of n messages costs O(n), not O(n^2), to extract and to store.
    """
    dialogue = Dialogue.of(conv)
    limit = len(conv.messages) if history_up_to is None else history_up_to
    cases: list[Case] = []
    skips: list[Skip] = []
    seen_human = False
    pending_query: int | None = None  # index of the latest human message no AI message has answered yet

    def skip(index: int, reason: SkipReason) -> None:
        skips.append(Skip(conversation_id=conv.id, message_index=index, reason=reason))

    for index, message in enumerate(conv.messages):
        if message.role is not Role.AI:
            if message.feedback is not None:
                skip(index, SkipReason.FEEDBACK_ON_NON_AI)
            elif message.role is not Role.HUMAN:
                skip(index, SkipReason.SYSTEM_OR_TOOL)
            if message.role is Role.HUMAN:
                seen_human = True
                pending_query = index
            continue

        query_index, pending_query = pending_query, None
        if not message.content.strip():
            skip(index, SkipReason.EMPTY_ANSWER)
        elif message.feedback is None:
            skip(index, SkipReason.NO_FEEDBACK)
        elif not seen_human:
            skip(index, SkipReason.NO_PRECEDING_HUMAN)
        elif query_index is None:
            skip(index, SkipReason.CONSECUTIVE_AI)
        elif not conv.messages[query_index].content.strip():
            skip(index, SkipReason.EMPTY_QUERY)
        else:
            cases.append(_make_case(conv, index, query_index, dialogue, limit))
    return cases, skips


def _make_case(
    conv: Conversation, answer_index: int, query_index: int, dialogue: Dialogue, limit: int
) -> Case:
    answer = conv.messages[answer_index]
    query = conv.messages[query_index]
    assert answer.feedback is not None  # checked by the caller
    return Case(
        id=case_id(conv.id, answer_index, query.content, answer.content),
        conversation_id=conv.id,
        turn_index=answer_index,
        query=query.content,
        history=dialogue.history(answer_index) if dialogue.history_length(answer_index) <= limit else (),
        old_answer=answer.content,
        feedback=answer.feedback,
        retrieved=answer.retrieved,
        tags=dict(conv.tags),
        ts=answer.ts if answer.ts is not None else query.ts,
        user_id=conv.user_id,
    )


_DIALOGUE_ROLES = (Role.HUMAN, Role.AI)


class Dialogue:
    """The human and AI messages of a conversation (system and tool messages dropped), and where the history
    of the case answered at any message index ends: the one rule for a case's history.

    The history of the case whose answer is message ``i`` is every dialogue message before its question; the
    question is the last dialogue message before ``i`` (only system or tool messages can sit between a
    question and its answer), so the history is the dialogue before ``i`` less one message.
    """

    def __init__(self, conv: Conversation) -> None:
        kept: list[Message] = []
        before = [0]
        for message in conv.messages:
            if message.role in _DIALOGUE_ROLES:
                kept.append(message)
            before.append(len(kept))
        self.messages: tuple[Message, ...] = tuple(kept)
        self.n_messages = len(conv.messages)
        """How many messages the conversation has (system and tool messages included)."""
        self._before = before

    @classmethod
    def of(cls, conv: Conversation) -> Dialogue:
        """The dialogue of ``conv``; the last one made is kept, so extracting a conversation's cases and storing
        them build it once."""
        global _LAST_DIALOGUE
        last = _LAST_DIALOGUE  # read once: another thread may replace it
        if last is not None and last[0] is conv:
            return last[1]
        dialogue = cls(conv)
        _LAST_DIALOGUE = (conv, dialogue)
        return dialogue

    def history_length(self, answer_index: int) -> int:
        """How many dialogue messages the history of the case answered at ``answer_index`` holds."""
        before = self._before[answer_index]
        return before - 1 if before > 0 else 0

    def history(self, answer_index: int) -> tuple[Message, ...]:
        """The history of the case answered at ``answer_index``."""
        return self.messages[: self.history_length(answer_index)]


_LAST_DIALOGUE: tuple[Conversation, Dialogue] | None = None


class AnsweredTurn(BaseModel):
    """An AI answer to a human question, labelled or not: what a logged period said to a question."""

    model_config = ConfigDict(frozen=True)

    conversation_id: str
    turn_index: int
    query: str
    answer: str
    retrieved: tuple[RetrievedChunk, ...] = ()
    case_id: str | None = None


def answered_turns(conv: Conversation) -> list[AnsweredTurn]:
    """Every non-empty AI answer to a pending human question, with or without feedback.

    Pairs messages by the same rule as :func:`extract_cases`; used to look answers up in a logged period.
    """
    turns: list[AnsweredTurn] = []
    pending_query: int | None = None
    for index, message in enumerate(conv.messages):
        if message.role is Role.HUMAN:
            pending_query = index
        elif message.role is Role.AI:
            query_index, pending_query = pending_query, None
            if query_index is not None and message.content.strip():
                turns.append(
                    AnsweredTurn(
                        conversation_id=conv.id,
                        turn_index=index,
                        query=conv.messages[query_index].content,
                        answer=message.content,
                        retrieved=message.retrieved,
                    )
                )
    return turns
