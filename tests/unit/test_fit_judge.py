"""The FIT judge's reply parsing and its request: unscorable replies are never guessed into verdicts."""

from __future__ import annotations

import pytest

from builders import make_case
from ragreplay.core.types import Answer, Feedback, Fit, Verdict
from ragreplay.core.verdicts import verdict_for
from ragreplay.judges.fit import FIT_PROMPT_VERSION, FIT_RESPONSE_FORMAT, FitJudge, parse_fit_reply
from ragreplay.providers.scripted import ScriptedChatModel


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


async def test_judge_carries_version_cost_and_raw_reply() -> None:
    model = ScriptedChatModel(["I refuse"], name="scripted:x", cost_usd=0.25)
    case = make_case(query="Who is Lisa?", old_answer="Lisa is a saxophonist.")
    judgment = await FitJudge(model).judge(case, "Who is Lisa?", Answer(text="Lisa plays sax."))
    assert judgment.fit == Fit.UNSCORABLE
    assert judgment.raw == "I refuse"
    assert judgment.prompt_version == FIT_PROMPT_VERSION
    assert judgment.cost_usd == 0.25
    sent = model.requests[0]
    assert sent.json_mode and sent.response_format == FIT_RESPONSE_FORMAT
    assert "<old_answer>\nLisa is a saxophonist.\n</old_answer>" in sent.messages[1].content
    assert "<new_answer>\nLisa plays sax.\n</new_answer>" in sent.messages[1].content
    assert "<question>\nWho is Lisa?\n</question>" in sent.messages[1].content
    # the judge is never told the user's feedback
    assert "good" not in " ".join(m.content.lower() for m in sent.messages).split()
