"""The follow-up rewriter: no call without history, one structured call otherwise."""

from __future__ import annotations

from ragreplay.core.types import Case, Feedback, Message, Role
from ragreplay.providers.base import ChatRequest, ChatResponse
from ragreplay.rewrite import REWRITE_PROMPT_VERSION, Rewriter


class _Scripted:
    name = "scripted:rw"

    def __init__(self, reply: str) -> None:
        self.reply = reply
        self.calls = 0

    async def complete(self, request: ChatRequest) -> ChatResponse:
        self.calls += 1
        return ChatResponse(text=self.reply, model=self.name)


def _case(history: tuple[Message, ...]) -> Case:
    return Case(
        id="c",
        conversation_id="k",
        turn_index=3,
        query="How old is she?",
        history=history,
        old_answer="8",
        feedback=Feedback.BAD,
    )


HISTORY = (
    Message(role=Role.HUMAN, content="Who is Lisa Simpson?"),
    Message(role=Role.AI, content="A character."),
)


async def test_no_history_makes_no_call() -> None:
    model = _Scripted("unused")
    rewrite = await Rewriter(model).rewrite(_case(()))
    assert model.calls == 0 and rewrite.query == "How old is she?" and not rewrite.rewritten


async def test_rewrite_with_history() -> None:
    model = _Scripted('{"standalone": false, "query": "How old is Lisa Simpson?"}')
    rewrite = await Rewriter(model).rewrite(_case(HISTORY))
    assert model.calls == 1
    assert rewrite.rewritten and rewrite.query == "How old is Lisa Simpson?"
    assert rewrite.prompt_version == REWRITE_PROMPT_VERSION and rewrite.model == "scripted:rw"


async def test_standalone_reply_keeps_query() -> None:
    rewrite = await Rewriter(_Scripted('{"standalone": true, "query": "How old is she?"}')).rewrite(
        _case(HISTORY)
    )
    assert not rewrite.rewritten and rewrite.query == "How old is she?"


async def test_unreadable_reply_keeps_original_with_note() -> None:
    rewrite = await Rewriter(_Scripted("no idea")).rewrite(_case(HISTORY))
    assert rewrite.query == "How old is she?" and not rewrite.rewritten and "unreadable" in rewrite.note
