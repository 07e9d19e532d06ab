"""The FIT judge: does the new answer say the same thing as the old one?

The judge is not asked whether the new answer is good. The user's feedback on the old answer is the anchor: a
new answer that fits a GOOD answer keeps quality, one that fits a BAD answer is still bad. The judge is not told
the feedback, so it cannot lean on it.

The question and both answers are fenced as data (:mod:`ragreplay.judges.fence`) and the reply is asked for as
JSON following :class:`FitReply`'s schema, so an answer cannot steer its own verdict (docs/judges.md).
"""

from __future__ import annotations

import json
import re
from typing import Literal

from pydantic import BaseModel, ConfigDict

from ragreplay.core.chat import ChatMessage, ChatRequest, ResponseFormat
from ragreplay.core.ids import content_hash
from ragreplay.core.types import Answer, Case, Fit, Judgment
from ragreplay.judges.fence import data_rules, fence, strip_fences
from ragreplay.judges.json_reply import read_reply_object
from ragreplay.ports import ChatModel


class FitReply(BaseModel):
    """The reply the FIT judge asks for: its verdict and one short reason."""

    model_config = ConfigDict(extra="forbid")

    verdict: Literal["FIT", "NO_FIT"]
    reason: str


FIT_RESPONSE_FORMAT = ResponseFormat(name="fit_verdict", json_schema=FitReply.model_json_schema())
"""The JSON schema sent as ``response_format`` with every FIT request."""

FIT_SYSTEM_PROMPT = (
    """\
You compare two answers that an assistant gave to the same question at different times: <question> holds the
question, <old_answer> the OLD answer and <new_answer> the NEW answer.
Decide whether the NEW answer fits the OLD answer: it fits when a reader would take away the same facts
and the same conclusion from both (same numbers, dates, names, yes/no, steps), even if the wording,
length or order differ. It does not fit when the new answer contradicts the old one, gives different
facts, answers a different question, or one of them declines to answer while the other answers.
Do not judge which answer is better or correct; judge only whether they agree.
"""
    + data_rules(("question", "old_answer", "new_answer"))
    + """
Reply with one JSON object and nothing else, shaped like this example (its values say nothing about the
answers you are shown):
{"verdict": "NO_FIT", "reason": "The new answer gives 20 days of leave where the old one gives 25."}
"verdict" is "FIT" or "NO_FIT"; "reason" is one short sentence."""
)

FIT_USER_TEMPLATE = """\
Does the new answer fit the old answer?

{question}

{old_answer}

{new_answer}

Reply with the JSON object only."""

FIT_PROMPT_VERSION = "fit-2." + content_hash(
    [FIT_SYSTEM_PROMPT, FIT_USER_TEMPLATE, json.dumps(FIT_RESPONSE_FORMAT.json_schema, sort_keys=True)],
    length=8,
)

_FIT_SYSTEM_MESSAGE = ChatMessage(role="system", content=FIT_SYSTEM_PROMPT)  # frozen: one for every request
_BARE_VERDICT = re.compile(r"\b(NO[_ ]FIT|FIT)\b", re.I)
_VERDICT_KEYS = ("verdict", "fit")


def parse_fit_reply(text: str) -> tuple[Fit, str]:
    """Read a FIT judge's reply: a JSON verdict, or a single unambiguous bare FIT / NO_FIT word.

    The reply's own object is taken, never one it quotes from the data (see
    :func:`~ragreplay.judges.json_reply.read_reply_object`); two objects that disagree, or anything else,
    are ``Fit.UNSCORABLE``: it is never guessed into a verdict.
    """
    found = read_reply_object(text, _VERDICT_KEYS)
    obj = found.value
    if obj is not None:
        raw = str(obj.get("verdict", obj.get("fit", ""))).strip().upper().replace(" ", "_").replace("-", "_")
        reason = str(obj.get("reason", ""))
        if raw in (Fit.FIT, Fit.NO_FIT):
            return Fit(raw), reason
        return Fit.UNSCORABLE, f"verdict field missing or invalid: {raw!r}"
    if found.conflicting:
        return Fit.UNSCORABLE, found.problem
    words = {m.group(1).upper().replace(" ", "_") for m in _BARE_VERDICT.finditer(strip_fences(text))}
    if len(words) == 1:
        return Fit(words.pop()), ""
    return Fit.UNSCORABLE, "reply names no single FIT/NO_FIT verdict"


class FitJudge:
    """A FIT judge backed by any chat model (a real endpoint or the shipped fake)."""

    prompt_version = FIT_PROMPT_VERSION

    def __init__(self, model: ChatModel) -> None:
        self._model = model

    @property
    def name(self) -> str:
        """The judge model's spec."""
        return self._model.name

    def request(self, case: Case, question: str, new_answer: Answer) -> ChatRequest:
        """The chat request that asks whether ``new_answer`` fits the case's old answer."""
        user = FIT_USER_TEMPLATE.format(
            question=fence("question", question),
            old_answer=fence("old_answer", case.old_answer),
            new_answer=fence("new_answer", new_answer.text),
        )
        return ChatRequest(
            messages=(
                _FIT_SYSTEM_MESSAGE,
                ChatMessage(role="user", content=user),
            ),
            json_mode=True,
            response_format=FIT_RESPONSE_FORMAT,
            prompt_version=FIT_PROMPT_VERSION,
            task="fit",
            hints={"question": question, "old_answer": case.old_answer, "new_answer": new_answer.text},
        )

    async def judge(self, case: Case, question: str, new_answer: Answer) -> Judgment:
        """Judge one case. Provider failures propagate; an unreadable reply is UNSCORABLE."""
        response = await self._model.complete(self.request(case, question, new_answer))
        fit, reason = parse_fit_reply(response.text)
        return Judgment(
            fit=fit,
            reason=reason,
            judge=self.name,
            prompt_version=FIT_PROMPT_VERSION,
            raw=response.text,
            tokens=response.usage,
            cost_usd=response.cost_usd,
            unpriced_calls=response.unpriced_calls,
        )
