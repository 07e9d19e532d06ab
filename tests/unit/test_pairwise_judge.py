"""The LLM pairwise judge: its prompt, its reply parsing, custom axes, and the fake model's pairwise rule."""

from __future__ import annotations

import json
from datetime import date

import pytest
from pydantic import ValidationError

from ragreplay.core.pairwise import AxisScores, PairwiseSide
from ragreplay.core.types import RetrievedChunk, TokenUsage
from ragreplay.errors import ConfigError
from ragreplay.judges.pairwise import (
    DEFAULT_AXES,
    Axis,
    LLMPairwiseJudge,
    format_chunks,
    parse_pairwise_reply,
)
from ragreplay.judges.position import judge_pair
from ragreplay.providers.fake import FakeChatModel
from ragreplay.providers.registry import ModelFactory
from ragreplay.providers.scripted import ScriptedChatModel

GROUNDED = PairwiseSide(
    answer="Staff get 25 days of annual leave per year.",
    contexts=[RetrievedChunk(id="leave-2026#1", text="All staff get 25 days of annual leave per year.")],
    context_dates={"leave-2026#1": date(2026, 1, 1)},
)
UNGROUNDED = PairwiseSide(
    answer="You can take unlimited holidays whenever you like.",
    contexts=[RetrievedChunk(id="leave-2024#2", text="Annual leave is 20 days."), RetrievedChunk(id="x#9")],
)
QUESTION = "How many days of annual leave do I get?"
FULL = {"groundedness": 5, "completeness": 4, "directness": 4, "recency": 3}


def scripted(text: str) -> ScriptedChatModel:
    """Replies once with ``text`` and records the request; carries usage and cost like a real endpoint."""
    return ScriptedChatModel(
        [text], name="scripted:judge", usage=TokenUsage(input=100, output=20), cost_usd=0.25
    )


def reply(winner: object = "A", a: object = FULL, b: object = FULL, **extra: object) -> str:
    return json.dumps(
        {"scores_a": a, "scores_b": b, "winner": winner, "reason": "A cites the 2026 policy", **extra}
    )


async def test_request_shows_question_answers_chunks_and_dates() -> None:
    model = scripted(reply())
    judge = LLMPairwiseJudge(model)
    await judge.judge(QUESTION, GROUNDED, UNGROUNDED)
    (request,) = model.requests
    system, user = (m.content for m in request.messages)
    for axis in DEFAULT_AXES:
        assert axis.name in system and axis.rubric in system
    assert "JSON" in system and '"winner"' in system
    assert user.index(QUESTION) < user.index(GROUNDED.answer) < user.index(UNGROUNDED.answer)
    assert "<chunks_a>\n[1] leave-2026#1 (dated 2026-01-01)\nAll staff get 25 days" in user
    assert "[2] x#9\n(text not available)\n</chunks_b>" in user
    assert (
        f"<answer_a>\n{GROUNDED.answer}\n</answer_a>" in user
        and f"<question>\n{QUESTION}\n</question>" in user
    )
    assert request.json_mode and request.task == "pairwise"
    assert request.response_format == judge.response_format
    assert request.prompt_version == judge.prompt_version
    assert request.hints["question"] == QUESTION
    assert request.hints["answer_a"] == GROUNDED.answer and request.hints["answer_b"] == UNGROUNDED.answer
    assert request.hints["contexts_a"] == ["All staff get 25 days of annual leave per year."]
    assert request.hints["contexts_b"] == ["Annual leave is 20 days.", ""]


def test_format_chunks_without_chunks() -> None:
    assert format_chunks(PairwiseSide(answer="x")) == "(no chunks retrieved)"


async def test_judgment_carries_scores_reason_raw_and_cost() -> None:
    text = reply("B", a={**FULL, "groundedness": 2})
    judge = LLMPairwiseJudge(scripted(text))
    j = await judge.judge(QUESTION, GROUNDED, UNGROUNDED)
    assert j.winner == "B" and j.reason == "A cites the 2026 policy"
    assert j.scores_a == AxisScores(groundedness=2, completeness=4, directness=4, recency=3)
    assert j.scores_b is not None and j.scores_b.as_dict() == FULL
    assert (j.judge, j.raw, j.cost_usd, j.tokens.input) == ("scripted:judge", text, 0.25, 100)
    assert j.prompt_version.startswith("pairwise-2.")


def test_prompt_version_follows_axes() -> None:
    model = FakeChatModel()
    default = LLMPairwiseJudge(model).prompt_version
    assert LLMPairwiseJudge(model, DEFAULT_AXES).prompt_version == default
    other = LLMPairwiseJudge(model, [*DEFAULT_AXES[:3], Axis(name="recency", rubric="newer is better")])
    assert other.prompt_version != default and other.prompt_version.startswith("pairwise-2.")


@pytest.mark.parametrize(
    ("text", "winner"),
    [
        (reply("A"), "A"),
        (reply("tie"), "tie"),
        (reply("Answer B"), "B"),
        ("Here you go:\n```json\n" + reply("b") + "\n```", "B"),
        (json.dumps({"scores": {"A": FULL, "B": FULL}, "winner": "A"}), "A"),
        (reply("A", a={k: str(v) for k, v in FULL.items()}), "A"),
        (reply("A", a={k: float(v) for k, v in FULL.items()}), "A"),
    ],
)
def test_readable_replies(text: str, winner: str) -> None:
    assert parse_pairwise_reply(text)[0] == winner


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("A is better, clearly.", "no JSON"),
        (reply("C"), "winner"),
        (json.dumps({"scores_a": FULL, "scores_b": FULL}), "winner"),
        (reply("A", b={**FULL, "recency": 6}), "answer B"),
        (reply("A", a={**FULL, "directness": 0}), "answer A"),
        (reply("A", a={k: v for k, v in FULL.items() if k != "completeness"}), "'completeness'"),
        (reply("A", a={**FULL, "directness": 3.5}), "answer A"),
        (reply("A", a={**FULL, "directness": True}), "answer A"),
        (reply("A", b="great"), "answer B scores missing"),
    ],
)
async def test_unreadable_replies_could_not_score(text: str, why: str) -> None:
    judge = LLMPairwiseJudge(scripted(text))
    j = await judge.judge(QUESTION, GROUNDED, UNGROUNDED)
    assert j.winner is None and j.scores_a is None and j.scores_b is None
    assert j.reason.startswith("could not score") and why in j.reason
    assert j.raw == text


async def test_custom_axes() -> None:
    axes = [Axis(name="groundedness", rubric="traceable"), Axis(name="tone", rubric="polite and calm")]
    model = scripted(reply("A", a={"groundedness": 5, "tone": 2}, b={"groundedness": 3, "tone": 4}))
    j = await LLMPairwiseJudge(model, axes).judge(QUESTION, GROUNDED, UNGROUNDED)
    assert j.scores_a is not None and j.scores_a.as_dict() == {"groundedness": 5, "tone": 2}
    assert j.scores_a.completeness is None
    assert "- tone: polite and calm" in model.requests[0].messages[0].content
    missing = scripted(reply("A"))  # the default axes only: no "tone"
    assert (await LLMPairwiseJudge(missing, axes).judge(QUESTION, GROUNDED, UNGROUNDED)).winner is None


def test_axis_validation() -> None:
    with pytest.raises(ValidationError, match="snake_case"):
        Axis(name="Tone Of Voice", rubric="x")
    with pytest.raises(ValidationError):
        Axis(name="model_dump", rubric="x")
    with pytest.raises(ConfigError, match="twice"):
        LLMPairwiseJudge(FakeChatModel(), [DEFAULT_AXES[0], DEFAULT_AXES[0]])
    with pytest.raises(ConfigError, match="at least one"):
        LLMPairwiseJudge(FakeChatModel(), [])
    with pytest.raises(ValidationError, match="tone"):
        AxisScores(tone=7)


async def test_fake_prefers_the_answer_grounded_in_its_own_chunks_in_both_orders() -> None:
    judge = LLMPairwiseJudge(ModelFactory(env={}).build("fake:default"))
    assert judge.name == "fake:default"
    ab = await judge.judge(QUESTION, GROUNDED, UNGROUNDED)
    ba = await judge.judge(QUESTION, UNGROUNDED, GROUNDED)
    assert (ab.winner, ba.winner) == ("A", "B")
    assert ab.scores_a is not None and ab.scores_b is not None
    assert ab.scores_a.groundedness == 5 and ab.scores_a.completeness == 4 and ab.scores_b.completeness == 2
    outcome = await judge_pair(judge, QUESTION, UNGROUNDED, GROUNDED)
    assert (outcome.winner, outcome.consistent) == ("y", True)


async def test_fake_ties_equal_support_and_uses_question_without_chunks() -> None:
    judge = LLMPairwiseJudge(FakeChatModel())
    same = await judge.judge(QUESTION, GROUNDED, GROUNDED)
    assert same.winner == "tie" and same.scores_a == same.scores_b
    on_topic = PairwiseSide(answer="You get 25 days of annual leave.")
    off_topic = PairwiseSide(answer="The canteen opens at noon.")
    assert (await judge.judge(QUESTION, off_topic, on_topic)).winner == "B"


async def test_fake_scores_custom_axes() -> None:
    axes = [Axis(name="tone", rubric="calm"), Axis(name="brevity", rubric="short")]
    j = await LLMPairwiseJudge(FakeChatModel(), axes).judge(QUESTION, GROUNDED, UNGROUNDED)
    assert j.winner == "A" and j.scores_b is not None and j.scores_b.as_dict() == {"tone": 1, "brevity": 2}


@pytest.mark.parametrize("side", ["a", "b"])
async def test_fake_unparseable_marker_gives_no_winner(side: str) -> None:
    marked = PairwiseSide(answer="25 days [[unparseable]]")
    a, b = (marked, GROUNDED) if side == "a" else (GROUNDED, marked)
    j = await LLMPairwiseJudge(FakeChatModel()).judge(QUESTION, a, b)
    assert j.winner is None and "{" not in j.raw and j.raw
