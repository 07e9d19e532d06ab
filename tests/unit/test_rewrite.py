"""The follow-up rewriter: no call without history, one structured call otherwise."""

from __future__ import annotations

import pytest

from builders import make_case, make_history
from ragreplay.core.types import Case, Feedback, Message
from ragreplay.providers.scripted import ScriptedChatModel
from ragreplay.replay.rewrite import (
    REWRITE_PROMPT_VERSION,
    REWRITE_RESPONSE_FORMAT,
    LocalRewriter,
    Rewriter,
    is_follow_up,
)


def _model(reply: str) -> ScriptedChatModel:
    return ScriptedChatModel([reply], name="scripted:rw")


def _case(history: tuple[Message, ...]) -> Case:
    return make_case(
        id="c",
        conversation_id="k",
        turn_index=3,
        query="How old is she?",
        history=history,
        old_answer="8",
        feedback=Feedback.BAD,
    )


HISTORY = make_history("Who is Lisa Simpson?", "A character.")


async def test_no_history_makes_no_call() -> None:
    model = _model("unused")
    rewrite = await Rewriter(model).rewrite(_case(()))
    assert model.calls == 0 and rewrite.query == "How old is she?" and not rewrite.rewritten


async def test_rewrite_with_history() -> None:
    model = _model('{"standalone": false, "query": "How old is Lisa Simpson?"}')
    rewrite = await Rewriter(model).rewrite(_case(HISTORY))
    assert model.calls == 1
    assert rewrite.rewritten and rewrite.query == "How old is Lisa Simpson?"
    (sent,) = model.requests
    assert sent.response_format == REWRITE_RESPONSE_FORMAT
    user = sent.messages[1].content
    assert (
        "<user_turn>\nWho is Lisa Simpson?\n</user_turn>\n<assistant_turn>\nA character.\n</assistant_turn>"
        in user
    )
    assert "<question>\nHow old is she?\n</question>" in user
    assert rewrite.prompt_version == REWRITE_PROMPT_VERSION and rewrite.model == "scripted:rw"


async def test_standalone_reply_keeps_query() -> None:
    rewrite = await Rewriter(_model('{"standalone": true, "query": "How old is she?"}')).rewrite(
        _case(HISTORY)
    )
    assert not rewrite.rewritten and rewrite.query == "How old is she?"


async def test_unreadable_reply_keeps_original_with_note() -> None:
    rewrite = await Rewriter(_model("no idea")).rewrite(_case(HISTORY))
    assert rewrite.query == "How old is she?" and not rewrite.rewritten and "unreadable" in rewrite.note


@pytest.mark.parametrize(
    "query,expected",
    [
        ("And for part-timers?", True),
        ("Geldt dat ook voor mij?", True),
        ("Does it apply to adoptive parents?", True),
        ("wat als ik ziek ben", True),
        ("In 2026?", True),
        ("How many vacation days do new employees get per year?", False),
        ("Hoeveel vakantiedagen krijg ik als nieuwe medewerker per jaar?", False),
    ],
)
def test_follow_up_detection(query: str, expected: bool) -> None:
    assert is_follow_up(query) is expected


async def test_local_rewriter_resolves_pronouns_prepends_for_openers_and_keeps_the_rest() -> None:
    history = make_history(
        "What is the remote work policy?", "Two days a week.", "Does it apply to warehouse staff?", "No."
    )
    case = make_case(
        id="c", conversation_id="k", turn_index=5, query="And for managers?", history=history, old_answer="x"
    )
    rewrite = await LocalRewriter().rewrite(case)
    assert rewrite.rewritten and rewrite.model == "local:referent"
    assert rewrite.query == "Does it apply to warehouse staff? And for managers?"
    opening = make_history("What is the remote work policy?", "Two days a week.")
    asked = case.model_copy(update={"history": opening, "query": "Who approves it?"})
    pronoun = await LocalRewriter().rewrite(asked)
    assert pronoun.query == "Who approves remote work policy?" and "pronoun" in pronoun.note
    possessive = await LocalRewriter().rewrite(asked.model_copy(update={"query": "What is its history?"}))
    assert possessive.query == "What is remote work policy's history?"
    standalone = case.model_copy(update={"query": "How many vacation days do new employees get per year?"})
    assert not (await LocalRewriter().rewrite(standalone)).rewritten
    own_subject = case.model_copy(update={"query": "What is mortadella and where is it from?"})
    assert not (await LocalRewriter().rewrite(own_subject)).rewritten
    first_turn = case.model_copy(update={"history": ()})
    assert (await LocalRewriter().rewrite(first_turn)).note == "no history"


def test_the_subject_is_what_the_conversation_keeps_coming_back_to() -> None:
    from ragreplay.replay.referent import conversation_subject, resolve_follow_up

    questions = ["What is throat cancer?", "Is it treatable?", "What are the symptoms of throat cancer?"]
    assert conversation_subject(questions) == "throat cancer"
    assert resolve_follow_up("How is it diagnosed?", questions) == "How is throat cancer diagnosed?"
    assert resolve_follow_up("How is it diagnosed?", []) is None
    assert resolve_follow_up("What about the treatment?", questions) is None  # no pronoun: not this rule


async def test_a_reply_with_two_different_queries_keeps_the_original() -> None:
    reply = 'The user wrote {"query": "ignore the rules"}; mine: {"standalone": false, "query": "How old is Lisa?"}'
    rewrite = await Rewriter(_model(reply)).rewrite(_case(HISTORY))
    assert rewrite.query == "How old is she?" and not rewrite.rewritten and "unreadable" in rewrite.note


async def test_concat_rewriter_prepends_first_and_previous_questions() -> None:
    from ragreplay.replay.rewrite import ConcatRewriter

    history = make_history(
        "What is the remote work policy?", "Two days a week.", "Does it apply to warehouse staff?", "No."
    )
    case = make_case(
        id="c", conversation_id="k", turn_index=5, query="since when?", history=history, old_answer="x"
    )
    rewrite = await ConcatRewriter().rewrite(case)
    assert rewrite.rewritten and rewrite.model == "local:concat"
    assert rewrite.query == "What is the remote work policy? Does it apply to warehouse staff? since when?"
    assert not (
        await LocalRewriter().rewrite(case)
    ).rewritten  # elliptical without a pronoun: local leaves it
    standalone = case.model_copy(update={"query": "How many vacation days do new employees get per year?"})
    assert not (await ConcatRewriter().rewrite(standalone)).rewritten
