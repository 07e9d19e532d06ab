"""One row's judged metrics: the claims call (:mod:`ragreplay.metrics.llm`) and, with a rubric, the rubric call
(:mod:`ragreplay.metrics.rubric_judge`), each made once per repeat.

With repeats every scoring's request carries its repeat index (a distinct cache key: the cache never hands one
repeat another's reply), the row keeps each scoring's metrics, and its judged metrics are their mean. The
claims' counts, the raw reply and the rubric's grades kept with the row are the first scoring's. A provider
error propagates (the caller makes an error row); the calls already answered are in the model cache, so
scoring the row again pays none of them twice.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ragreplay.core.eval import CriterionScore, EvalRow, MetricValue, mean_of_repeats
from ragreplay.core.rubric import Rubric
from ragreplay.core.types import TokenUsage
from ragreplay.metrics.llm_batch import ClaimsBatcher
from ragreplay.metrics.rubric_judge import score_rubric
from ragreplay.ports import ChatModel


@dataclass
class JudgedRow:
    """A row's judged metrics (the mean over repeats), each scoring's metrics (only with repeats), the first
    scoring's claims counts, raw reply and rubric grades, and the calls' accounting."""

    metrics: dict[str, MetricValue] = field(default_factory=dict)
    repeats: tuple[dict[str, MetricValue], ...] = ()
    claims: dict[str, Any] = field(default_factory=dict)
    rubric: dict[str, CriterionScore] = field(default_factory=dict)
    raw_reply: str = ""
    calls: int = 0
    cached_calls: int = 0
    cost_usd: float = 0.0
    unpriced_calls: int = 0
    latency_ms: float = 0.0
    """The calls' latencies summed, as the model layer reports them (a cached reply's is 0)."""
    tokens: TokenUsage = field(default_factory=TokenUsage)


async def judge_row(
    judge: ChatModel,
    row: EvalRow,
    rubric: Rubric | None,
    repeats: int = 1,
    batcher: ClaimsBatcher | None = None,
) -> JudgedRow:
    """Score ``row`` ``repeats`` times with the claims call (through ``batcher`` when rows share calls) and
    (given a rubric) the rubric call."""
    out = JudgedRow()
    scorings: list[dict[str, MetricValue]] = []
    claims = batcher if batcher is not None else ClaimsBatcher(judge, 1)
    for repeat in range(repeats):
        scored = await claims.score(row, repeat)
        metrics = dict(scored.metrics)
        responses = [(scored.response, scored.calls)]
        if repeat == 0:
            out.raw_reply = scored.response.text
            out.claims = scored.counts.as_dict() if scored.counts is not None else {"problem": scored.problem}
        if rubric is not None:
            graded = await score_rubric(judge, row, rubric, repeat)
            metrics.update(graded.metrics)
            responses.append((graded.response, 1))
            if repeat == 0:
                out.rubric = graded.criteria
        for response, calls in responses:
            out.calls += calls
            out.cached_calls += calls if response.cached else 0
            out.cost_usd += response.cost_usd
            out.unpriced_calls += response.unpriced_calls
            out.latency_ms += response.latency_ms
            out.tokens += response.usage
        scorings.append(metrics)
    out.metrics = mean_of_repeats(scorings) if repeats > 1 else scorings[0]
    out.repeats = tuple(scorings) if repeats > 1 else ()
    return out
