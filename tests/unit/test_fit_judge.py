"""The FIT judge's reply parsing and its request: unscorable replies are never guessed into verdicts."""

from __future__ import annotations

import pytest

from ragreplay.core.chat import ChatRequest, ChatResponse
from ragreplay.core.types import Answer, Case, Feedback, Fit, Verdict
from ragreplay.core.verdicts import verdict_for
from ragreplay.judges.fit import FIT_PROMPT_VERSION, FitJudge, parse_fit_reply


@pytest.mark.parametrize(
    "reply,expected",
    [
        ('{"verdict": "FIT", "reason": "same"}', Fit.FIT),
        ('{"verdict": "no_fit", "reason": "x"}', Fit.NO_FIT),
        ('```json\n{"verdict": "NO FIT"}\n```', Fit.NO_FIT),
        ('Sure! {"verdict": "FIT", "reason": "r"} hope this helps', Fit.FIT),
        ("FIT", Fit.FIT),
        ("NO_FIT.", Fit.NO_FIT),
        ("It could be FIT or NO_FIT", Fit.UNSCORABLE),
        ("I cannot tell.", Fit.UNSCORABLE),
        ('{"verdict": "MAYBE"}', Fit.UNSCORABLE),
        ("", Fit.UNSCORABLE),
    ],
)
def test_parse_fit_reply(reply: str, expected: Fit) -> None:
    assert parse_fit_reply(reply)[0] == expected


def test_verdict_table() -> None:
    assert verdict_for(Feedback.GOOD, Fit.FIT) == Verdict.GOOD_FIT
    assert verdict_for(Feedback.GOOD, Fit.NO_FIT) == Verdict.GOOD_NO_FIT
    assert verdict_for(Feedback.BAD, Fit.FIT) == Verdict.BAD_FIT
    assert verdict_for(Feedback.BAD, Fit.NO_FIT) == Verdict.BAD_NO_FIT
    assert verdict_for(Feedback.BAD, Fit.UNSCORABLE) is None


class _Scripted:
    name = "scripted:x"

    def __init__(self, reply: str) -> None:
        self.reply = reply
        self.requests: list[ChatRequest] = []

    async def complete(self, request: ChatRequest) -> ChatResponse:
        self.requests.append(request)
        return ChatResponse(text=self.reply, model=self.name, cost_usd=0.25)


def _case() -> Case:
    return Case(
        id="c1",
        conversation_id="conv",
        turn_index=1,
        query="Who is Lisa?",
        history=(),
        old_answer="Lisa is a saxophonist.",
        feedback=Feedback.GOOD,
    )


async def test_judge_carries_version_cost_and_raw_reply() -> None:
    model = _Scripted("I refuse")
    judgment = await FitJudge(model).judge(_case(), "Who is Lisa?", Answer(text="Lisa plays sax."))
    assert judgment.fit == Fit.UNSCORABLE
    assert judgment.raw == "I refuse"
    assert judgment.prompt_version == FIT_PROMPT_VERSION
    assert judgment.cost_usd == 0.25
    sent = model.requests[0]
    assert sent.json_mode and "Lisa is a saxophonist." in sent.messages[1].content
    assert "Lisa plays sax." in sent.messages[1].content
    # the judge is never told the user's feedback
    assert "good" not in " ".join(m.content.lower() for m in sent.messages).split()
