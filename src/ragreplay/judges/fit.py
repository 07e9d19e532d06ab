"""The FIT judge: does the new answer say the same thing as the old one?

The judge is not asked whether the new answer is good. The user's feedback on the old answer is the anchor: a
new answer that fits a GOOD answer keeps quality, one that fits a BAD answer is still bad. The judge is not told
the feedback, so it cannot lean on it.
"""

from __future__ import annotations

import re

from ragreplay.core.chat import ChatMessage, ChatRequest
from ragreplay.core.ids import content_hash
from ragreplay.core.types import Answer, Case, Fit, Judgment
from ragreplay.judges.json_reply import parse_json_object
from ragreplay.ports import ChatModel

FIT_SYSTEM_PROMPT = """\
You compare two answers that an assistant gave to the same question at different times.
Decide whether the NEW answer fits the OLD answer: it fits when a reader would take away the same facts
and the same conclusion from both (same numbers, dates, names, yes/no, steps), even if the wording,
length or order differ. It does not fit when the new answer contradicts the old one, gives different
facts, answers a different question, or one of them declines to answer while the other answers.
Do not judge which answer is better or correct; judge only whether they agree.
Reply with a JSON object and nothing else: {"verdict": "FIT" or "NO_FIT", "reason": "<one short sentence>"}"""

FIT_USER_TEMPLATE = """\
Question: {question}

OLD answer:
{old_answer}

NEW answer:
{new_answer}"""

FIT_PROMPT_VERSION = "fit-1." + content_hash([FIT_SYSTEM_PROMPT, FIT_USER_TEMPLATE], length=8)

_BARE_VERDICT = re.compile(r"\b(NO[_ ]FIT|FIT)\b", re.I)


def parse_fit_reply(text: str) -> tuple[Fit, str]:
    """Read a FIT judge's reply: a JSON verdict, or a single unambiguous bare FIT / NO_FIT word.

    Anything else is ``Fit.UNSCORABLE``: it is never guessed into a verdict.
    """
    obj = parse_json_object(text)
    if obj is not None:
        raw = str(obj.get("verdict", obj.get("fit", ""))).strip().upper().replace(" ", "_").replace("-", "_")
        reason = str(obj.get("reason", ""))
        if raw in (Fit.FIT, Fit.NO_FIT):
            return Fit(raw), reason
        return Fit.UNSCORABLE, f"verdict field missing or invalid: {raw!r}"
    found = {m.group(1).upper().replace(" ", "_") for m in _BARE_VERDICT.finditer(text)}
    if len(found) == 1:
        return Fit(found.pop()), ""
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
            question=question, old_answer=case.old_answer, new_answer=new_answer.text
        )
        return ChatRequest(
            messages=(
                ChatMessage(role="system", content=FIT_SYSTEM_PROMPT),
                ChatMessage(role="user", content=user),
            ),
            json_mode=True,
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
        )
