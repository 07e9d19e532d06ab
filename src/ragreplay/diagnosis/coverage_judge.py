"""The optional LLM coverage check: one call per question, fenced data, a structured reply, a versioned prompt.

The model is shown the question, the reference and the closest chunks of the corpus (numbered), each fenced
as data (:mod:`ragreplay.judges.fence`), and replies with one JSON object (:class:`CoverageReply`, sent as
``response_format``): the reference's key facts, each with the numbers of the chunks that state it, and a
verdict, ``covered`` (every key fact is stated), ``partly`` or ``missing`` (none is). The prompt's version
(``coverage-1.<hash>``) is part of the model cache's key, so a changed prompt never reuses old replies.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ragreplay.core.chat import ChatRequest, ProviderError
from ragreplay.diagnosis.coverage import JudgeCheck
from ragreplay.judges.fence import fence
from ragreplay.judges.json_reply import read_reply_object
from ragreplay.judges.structured import (
    numbered_chunks,
    structured_prompt_version,
    structured_request,
    structured_system,
)
from ragreplay.ports import ChatModel

TASK = "coverage"
"""The request's task: the fake model answers it from the hints (:mod:`ragreplay.providers.fake`)."""
VERDICTS = ("covered", "partly", "missing")


class FactReply(BaseModel):
    """One key fact of the reference and the numbers of the chunks that state it (empty: none does)."""

    model_config = ConfigDict(extra="forbid")

    fact: str
    held_by: list[int]


class CoverageReply(BaseModel):
    """The reply's shape (every field required, no others)."""

    model_config = ConfigDict(extra="forbid")

    facts: list[FactReply]
    verdict: Literal["covered", "partly", "missing"]
    reason: str = Field(description="one short sentence")


SYSTEM_PROMPT = """\
You check whether a document collection holds the answer to a question. <question> holds the question, \
<reference> a correct answer written by a person, and <contexts> the numbered chunks of the collection closest \
to it.
{rules}
Do this:
1. Split the reference into its key facts: short, self-contained statements (amounts, dates, names, \
conditions); leave out greetings and restatements of the question.
2. For each fact, list the numbers of the chunks that state it (the same fact, with the same amounts, dates and \
names; a chunk on the same topic that does not state it does not count). An empty list: no chunk states it.
3. Give the verdict: "covered" when every key fact is stated by some chunk, "missing" when none is, \
"partly" otherwise.
Reply with one JSON object and nothing else, shaped like this example (its values say nothing about the \
material you are shown):
{example}"""

USER_TEMPLATE = """\
Check which key facts of the reference the chunks state.

{question}

{reference}

{contexts}

Reply with the JSON object only."""

_EXAMPLE = {
    "facts": [
        {"fact": "The office opens at 9.", "held_by": [2]},
        {"fact": "Parking costs 5 euros a day.", "held_by": []},
    ],
    "verdict": "partly",
    "reason": "The opening time is stated in chunk 2; no chunk mentions the parking fee.",
}
_FENCED = ("question", "reference", "contexts")
REPLY_SCHEMA: dict[str, Any] = CoverageReply.model_json_schema()
PROMPT_VERSION = structured_prompt_version("coverage-1", SYSTEM_PROMPT, USER_TEMPLATE, _EXAMPLE, REPLY_SCHEMA)


def build_request(question: str, reference: str, chunks: Sequence[tuple[str, str]]) -> ChatRequest:
    """The one request that checks a question; ``chunks`` are ``(id, text)`` of the closest chunks."""
    user = USER_TEMPLATE.format(
        question=fence("question", question),
        reference=fence("reference", reference),
        contexts=fence("contexts", numbered_chunks(chunks) or "(no chunk found)"),
    )
    return structured_request(
        system=structured_system(SYSTEM_PROMPT, _FENCED, "check", _EXAMPLE),
        user=user,
        schema_name="coverage_check",
        schema=REPLY_SCHEMA,
        prompt_version=PROMPT_VERSION,
        task=TASK,
        hints={"question": question, "reference": reference, "contexts": [text for _, text in chunks]},
    )


def read_check(text: str, n_chunks: int) -> JudgeCheck:
    """The verdict and fact counts in a reply; an unreadable reply has no verdict and names its problem."""
    reply = read_reply_object(text, ("verdict",))
    obj = reply.value
    if obj is None:
        return JudgeCheck(verdict=None, problem=reply.problem)
    verdict = str(obj.get("verdict", "")).strip().lower()
    if verdict not in VERDICTS:
        return JudgeCheck(
            verdict=None, problem=f"verdict is not covered/partly/missing: {obj.get('verdict')!r}"
        )
    facts = obj.get("facts")
    if not isinstance(facts, list) or not all(isinstance(f, dict) for f in facts):
        return JudgeCheck(verdict=None, problem="facts is not a list of objects")
    held = 0
    for i, fact in enumerate(facts, start=1):
        numbers = fact.get("held_by")
        if not isinstance(numbers, list) or not all(
            isinstance(n, int) and not isinstance(n, bool) for n in numbers
        ):
            return JudgeCheck(verdict=None, problem=f"facts[{i}].held_by is not a list of chunk numbers")
        if any(not 1 <= n <= n_chunks for n in numbers):
            return JudgeCheck(verdict=None, problem=f"facts[{i}].held_by names a chunk that was not shown")
        held += bool(numbers)
    reason = obj.get("reason")
    return JudgeCheck(
        verdict=verdict,
        facts_held=held,
        facts=len(facts),
        reason=reason if isinstance(reason, str) else "",
    )


async def judge_coverage(
    model: ChatModel, question: str, reference: str, chunks: Sequence[tuple[str, str]]
) -> JudgeCheck:
    """One call; a call that still fails after the provider's retries is an ``error``, never an exception."""
    try:
        response = await model.complete(build_request(question, reference, chunks))
    except ProviderError as exc:
        return JudgeCheck(verdict=None, error=f"judge call failed: {exc}")
    check = read_check(response.text, len(chunks))
    cost = {"cost_usd": response.cost_usd, "unpriced_calls": response.unpriced_calls}
    return check.model_copy(update={"cached": response.cached, **cost})
