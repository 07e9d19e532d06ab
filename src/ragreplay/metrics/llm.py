"""LLM-judged metrics in one call per row: claim-level faithfulness and answer correctness, with answer
relevance and context relevance / precision / recall read from the same reply.

The judge is shown the question, the answer, the retrieved contexts and (when there is one) the reference, each
fenced as data (:mod:`ragreplay.judges.fence`), and asked for one JSON object (its schema sent as
``response_format``):

- ``answer_claims``: the answer's claims, each marked ``supported_by_contexts`` and ``supported_by_reference``
  (``yes`` / ``no``);
- ``reference_claims``: the reference's claims, each marked ``covered_by_answer`` and ``supported_by_contexts``;
- ``contexts``: each context (by its number) marked ``relevant`` to the question;
- ``answer_relevance``: 1-5, how directly the answer addresses the question.

From it (:func:`scores_from_reply`):

- faithfulness = answer claims supported by the contexts / answer claims;
- correctness = F1 of claim precision (answer claims the reference supports / answer claims) and recall
  (reference claims the answer covers / reference claims);
- answer relevance = (score - 1) / 4;
- context relevance = relevant contexts / contexts; context precision = the mean over relevant contexts of the
  precision at their rank (0 when none is relevant); context recall = reference claims the contexts support /
  reference claims.

Undetermined, never NaN nor a guess: no contexts (faithfulness and the context metrics: never 1.0), an answer
with no claims (faithfulness, correctness), no reference (correctness, context recall), a reference with no
claims, and a reply that cannot be read (every metric).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ragreplay.core.chat import ChatRequest, ChatResponse
from ragreplay.core.eval import EvalRow, MetricValue
from ragreplay.judges.fence import fence
from ragreplay.judges.json_reply import read_reply_object
from ragreplay.judges.structured import (
    numbered_chunks,
    structured_prompt_version,
    structured_request,
    structured_system,
)
from ragreplay.ports import ChatModel

TASK = "claims"
"""The request's task: the fake model answers it from the hints (:mod:`ragreplay.providers.fake`)."""

LLM_METRICS = (
    "faithfulness",
    "correctness",
    "answer_relevance",
    "context_relevance",
    "context_precision",
    "context_recall",
)

YesNo = Literal["yes", "no"]


class AnswerClaim(BaseModel):
    """One claim of the answer and whether the contexts and the reference support it."""

    model_config = ConfigDict(extra="forbid")

    claim: str
    supported_by_contexts: YesNo
    supported_by_reference: YesNo


class ReferenceClaim(BaseModel):
    """One claim of the reference and whether the answer covers it and the contexts support it."""

    model_config = ConfigDict(extra="forbid")

    claim: str
    covered_by_answer: YesNo
    supported_by_contexts: YesNo


class ContextVerdict(BaseModel):
    """Whether the context numbered ``n`` (1-based, as shown) is relevant to the question."""

    model_config = ConfigDict(extra="forbid")

    n: int
    relevant: YesNo


class ClaimsReply(BaseModel):
    """The reply's shape (every field required, no others)."""

    model_config = ConfigDict(extra="forbid")

    answer_claims: list[AnswerClaim]
    reference_claims: list[ReferenceClaim]
    contexts: list[ContextVerdict]
    answer_relevance: Literal[1, 2, 3, 4, 5]
    reason: str = Field(description="one short sentence")


SYSTEM_PROMPT = """\
You check an answer given by a retrieval-augmented assistant. <question> holds the question, <checked_answer> the \
answer, <contexts> the numbered document chunks the assistant was given, and <reference>, when present, a \
correct answer written by a person.
{rules}
Do this:
1. Split the answer into its claims: short, self-contained statements of fact (leave out greetings, hedges \
and restatements of the question). For each, say whether the contexts support it ("yes" only when a context \
states it or it follows directly from them) and whether the reference supports it ("no" when there is no \
reference).
2. Split the reference into its claims in the same way (none when there is no reference). For each, say \
whether the answer covers it and whether the contexts support it.
3. For each context, by its number, say whether it is relevant to the question (it helps to answer it).
4. Rate from 1 to 5 how directly the answer addresses the question (1: not at all, 5: fully and at once), \
whether or not it is correct.
Reply with one JSON object and nothing else, shaped like this example (its values say nothing about the \
material you are shown):
{example}
Every "supported_by_*", "covered_by_answer" and "relevant" is "yes" or "no"; "answer_relevance" is a whole \
number from 1 to 5; "reason" is one short sentence."""

ROW_BLOCKS = """\
{question}

{answer}

{contexts}

{reference}

Reply with the JSON object only."""
"""The fenced row (:func:`fenced_row`) as a user message shows it, after its task line, and the reply asked for."""

USER_TEMPLATE = "List and check the claims of the answer.\n\n" + ROW_BLOCKS

EXAMPLE_REPLY = {
    "answer_claims": [
        {"claim": "The office opens at 9.", "supported_by_contexts": "yes", "supported_by_reference": "yes"},
        {"claim": "Parking is free.", "supported_by_contexts": "no", "supported_by_reference": "no"},
    ],
    "reference_claims": [
        {"claim": "The office opens at 9.", "covered_by_answer": "yes", "supported_by_contexts": "yes"},
        {"claim": "It closes at 5.", "covered_by_answer": "no", "supported_by_contexts": "no"},
    ],
    "contexts": [{"n": 1, "relevant": "yes"}, {"n": 2, "relevant": "no"}],
    "answer_relevance": 4,
    "reason": "One claim is supported; the parking claim is in no context.",
}
"""The example reply the system prompt shows (its values say nothing about the material judged)."""
FENCED_TAGS = ("question", "checked_answer", "contexts", "reference")
"""The tags the claims check fences a row's data with."""
_DECIDING = ("answer_claims",)

REPLY_SCHEMA: dict[str, Any] = ClaimsReply.model_json_schema()
PROMPT_VERSION = structured_prompt_version(
    "claims-1", SYSTEM_PROMPT, USER_TEMPLATE, EXAMPLE_REPLY, REPLY_SCHEMA
)
"""Stored with every eval run and part of the cache key: a changed prompt never reuses old replies."""


@cache
def system_prompt() -> str:
    """The system message, with the shared data rules and the example (built once: it never changes)."""
    return structured_system(SYSTEM_PROMPT, FENCED_TAGS, "check", EXAMPLE_REPLY)


def format_contexts(row: EvalRow) -> str:
    """The contexts as the judge reads them: ``[n] id`` then the text; a note when there are none."""
    if not row.contexts:
        return "(no contexts retrieved)"
    return numbered_chunks((c.id, c.text) for c in row.contexts)


def for_repeat(prompt_version: str, repeat: int) -> str:
    """The prompt version a request of the ``repeat``-th scoring carries: repeat 0 keeps the plain version (so
    its cache keys are those of a run without repeats), later repeats add ``#repeat<k>`` so the cache never
    hands one repeat another's reply. The text sent is the same."""
    return prompt_version if repeat == 0 else f"{prompt_version}#repeat{repeat}"


def fenced_row(row: EvalRow) -> dict[str, str]:
    """The row's question, answer, contexts and reference fenced as the judge reads them: the fields of a user
    template that shows a row (this module's and the rubric judge's)."""
    return {
        "question": fence("question", row.question),
        "answer": fence("checked_answer", row.answer),
        "contexts": fence("contexts", format_contexts(row)),
        "reference": fence(
            "reference", row.reference if row.reference is not None else "(no reference given)"
        ),
    }


def row_hints(row: EvalRow, repeat: int) -> dict[str, Any]:
    """What the fake model answers a row's request from: the row's texts and the repeat."""
    return {
        "question": row.question,
        "answer": row.answer,
        "reference": row.reference,
        "contexts": [c.text for c in row.contexts],
        "repeat": repeat,
    }


def build_request(row: EvalRow, repeat: int = 0) -> ChatRequest:
    """The one request that scores ``row`` (for the ``repeat``-th time: see :func:`for_repeat`)."""
    return structured_request(
        system=system_prompt(),
        user=USER_TEMPLATE.format(**fenced_row(row)),
        schema_name="claims_check",
        schema=REPLY_SCHEMA,
        prompt_version=for_repeat(PROMPT_VERSION, repeat),
        task=TASK,
        hints=row_hints(row, repeat),
    )


def _yes(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("yes", "y", "true", "supported", "1"):
        return True
    if text in ("no", "n", "false", "unsupported", "not supported", "0"):
        return False
    return None


class UnreadableReply(ValueError):
    """A reply, or one row of a batched reply, that cannot be read: the message says what is wrong."""


def _flags(items: Any, keys: Sequence[str], what: str) -> list[dict[str, bool]]:
    if not isinstance(items, list):
        raise UnreadableReply(f"{what} is not a list")
    out = []
    for i, item in enumerate(items, start=1):
        if not isinstance(item, Mapping):
            raise UnreadableReply(f"{what}[{i}] is not an object")
        flags = {}
        for key in keys:
            flag = _yes(item.get(key))
            if flag is None:
                raise UnreadableReply(f"{what}[{i}].{key} is not yes/no: {item.get(key)!r}")
            flags[key] = flag
        out.append(flags)
    return out


@dataclass(frozen=True)
class ClaimCounts:
    """What the reply says, counted: the figures every metric is computed from."""

    answer_claims: int
    supported_by_contexts: int
    supported_by_reference: int
    reference_claims: int
    covered: int
    reference_in_contexts: int
    relevant_contexts: tuple[bool, ...]
    answer_relevance: int

    def as_dict(self) -> dict[str, Any]:
        """The counts as JSON-ready values (stored with the row)."""
        return {**self.__dict__, "relevant_contexts": list(self.relevant_contexts)}


def read_counts(text: str, n_contexts: int) -> ClaimCounts:
    """The counts in a reply; :class:`ValueError` naming what could not be read."""
    reply = read_reply_object(text, _DECIDING)
    obj = reply.value
    if obj is None:
        raise UnreadableReply(reply.problem)
    return counts_of(obj, n_contexts)


def counts_of(obj: Mapping[str, Any], n_contexts: int) -> ClaimCounts:
    """The counts in one row's reply object; :class:`ValueError` naming what could not be read."""
    answer = _flags(
        obj.get("answer_claims"), ("supported_by_contexts", "supported_by_reference"), "answer_claims"
    )
    reference = _flags(
        obj.get("reference_claims", []), ("covered_by_answer", "supported_by_contexts"), "reference_claims"
    )
    relevant = [False] * n_contexts
    contexts = obj.get("contexts", [])
    if not isinstance(contexts, list):
        raise UnreadableReply("contexts is not a list")
    for item in contexts:
        if not isinstance(item, Mapping):
            raise UnreadableReply("a context verdict is not an object")
        n, flag = item.get("n"), _yes(item.get("relevant"))
        if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= n_contexts or flag is None:
            raise UnreadableReply(f"context verdict {dict(item)!r} names no shown context or is not yes/no")
        relevant[n - 1] = flag
    score = obj.get("answer_relevance")
    if isinstance(score, str) and score.strip().isdigit():
        score = int(score.strip())
    if isinstance(score, bool) or not isinstance(score, int | float) or score not in (1, 2, 3, 4, 5):
        raise UnreadableReply(f"answer_relevance is not 1-5: {score!r}")
    return ClaimCounts(
        answer_claims=len(answer),
        supported_by_contexts=sum(c["supported_by_contexts"] for c in answer),
        supported_by_reference=sum(c["supported_by_reference"] for c in answer),
        reference_claims=len(reference),
        covered=sum(c["covered_by_answer"] for c in reference),
        reference_in_contexts=sum(c["supported_by_contexts"] for c in reference),
        relevant_contexts=tuple(relevant),
        answer_relevance=int(score),
    )


def _ratio(num: int, den: int) -> float:
    return num / den


def metrics_from_counts(
    counts: ClaimCounts, has_contexts: bool, has_reference: bool
) -> dict[str, MetricValue]:
    """Every LLM metric from the counts (the rules in the module docstring)."""
    u = MetricValue.undetermined
    no_contexts = "no contexts"
    out: dict[str, MetricValue] = {}
    if not has_contexts:
        out["faithfulness"] = u(no_contexts)
    elif counts.answer_claims == 0:
        out["faithfulness"] = u("the answer states no claim")
    else:
        out["faithfulness"] = MetricValue.of(_ratio(counts.supported_by_contexts, counts.answer_claims))
    if not has_reference:
        out["correctness"] = u("no reference")
    elif counts.answer_claims == 0:
        out["correctness"] = u("the answer states no claim")
    elif counts.reference_claims == 0:
        out["correctness"] = u("the reference states no claim")
    else:
        precision = counts.supported_by_reference / counts.answer_claims
        recall = counts.covered / counts.reference_claims
        f1 = 0.0 if precision + recall == 0 else 2 * precision * recall / (precision + recall)
        out["correctness"] = MetricValue.of(f1)
    out["answer_relevance"] = MetricValue.of((counts.answer_relevance - 1) / 4)
    relevant = counts.relevant_contexts
    if not has_contexts:
        out["context_relevance"] = u(no_contexts)
        out["context_precision"] = u(no_contexts)
    else:
        out["context_relevance"] = MetricValue.of(sum(relevant) / len(relevant))
        hits, precisions = 0, []
        for rank, flag in enumerate(relevant, start=1):
            if flag:
                hits += 1
                precisions.append(hits / rank)
        out["context_precision"] = MetricValue.of(sum(precisions) / len(precisions) if precisions else 0.0)
    if not has_reference:
        out["context_recall"] = u("no reference")
    elif not has_contexts:
        out["context_recall"] = u(no_contexts)
    elif counts.reference_claims == 0:
        out["context_recall"] = u("the reference states no claim")
    else:
        out["context_recall"] = MetricValue.of(counts.reference_in_contexts / counts.reference_claims)
    return out


def unreadable(problem: str) -> dict[str, MetricValue]:
    """Every LLM metric undetermined because the reply could not be read."""
    return {name: MetricValue.undetermined(f"unreadable reply: {problem}") for name in LLM_METRICS}


@dataclass(frozen=True)
class LLMScores:
    """One row's LLM metrics, the counts they come from (``None`` for an unreadable reply) and the call."""

    metrics: dict[str, MetricValue]
    counts: ClaimCounts | None
    response: ChatResponse
    problem: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    calls: int = 1
    """The calls booked on this row: 1, or 0 for a row of a batched call booked on its first row (the
    ``response`` then carries no tokens, cost nor latency: see :mod:`ragreplay.metrics.llm_batch`)."""


def scores_from_reply(text: str, row: EvalRow) -> tuple[dict[str, MetricValue], ClaimCounts | None, str]:
    """``(metrics, counts, problem)`` for ``row`` from the reply ``text``."""
    try:
        counts = read_counts(text, len(row.contexts))
    except UnreadableReply as exc:
        return unreadable(str(exc)), None, str(exc)
    return row_metrics(counts, row), counts, ""


def row_metrics(counts: ClaimCounts, row: EvalRow) -> dict[str, MetricValue]:
    """Every LLM metric of ``row`` from its counts."""
    has_reference = row.reference is not None and row.reference.strip() != ""
    return metrics_from_counts(counts, bool(row.contexts), has_reference)


async def score_row(model: ChatModel, row: EvalRow, repeat: int = 0) -> LLMScores:
    """Every LLM metric of ``row`` from one call to ``model`` (a provider error propagates)."""
    response = await model.complete(build_request(row, repeat))
    metrics, counts, problem = scores_from_reply(response.text, row)
    return LLMScores(metrics=metrics, counts=counts, response=response, problem=problem)
