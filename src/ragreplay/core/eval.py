"""The vocabulary of `ragreplay eval`: a dataset row, a metric's value or why it is undetermined, one row's scores
and the summary of a run (mean, p50/p90, a distribution, per tag, undetermined counts).

A metric is never NaN: it has a ``value`` or is *undetermined* (``value is None``) with a ``reason`` (no contexts,
no claims, no reference, a reply that could not be read). Undetermined rows are left out of the figures and
counted apart, so an answer with no contexts never scores a faithfulness of 1.0 nor drags a mean to 0.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ragreplay.core.eval_tracing import RowTrace, TracingSummary, run_tracing
from ragreplay.core.review import HistoryTurn
from ragreplay.core.types import Answer

BINS = 10
"""How many equal-width bins a metric's distribution has over its range."""


class EvalContext(BaseModel):
    """One retrieved chunk shown to the answerer: its id and text."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    text: str


class EvalRow(BaseModel):
    """One dataset row. ``retrieved`` is the ranking of chunk ids (the contexts' ids when not given);
    ``judgments`` the graded relevance per chunk id (retrieval metrics only when given); ``tags`` labels the
    row for the per-tag figures (``key=value`` or plain labels)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    question: str
    answer: str
    reference: str | None = None
    contexts: tuple[EvalContext, ...] = ()
    retrieved: tuple[str, ...] | None = None
    judgments: dict[str, int] | None = None
    tags: tuple[str, ...] = ()
    history: tuple[HistoryTurn, ...] = ()
    """Earlier turns a follow-up question needs (golden rows): given to a target that answers the row."""

    def ranking(self) -> tuple[str, ...]:
        """The retrieved chunk ids, best first."""
        return self.retrieved if self.retrieved is not None else tuple(c.id for c in self.contexts)


class MetricValue(BaseModel):
    """A metric's value, or ``None`` (undetermined) with the ``reason``."""

    model_config = ConfigDict(frozen=True)

    value: float | None
    reason: str = ""

    @classmethod
    def of(cls, value: float) -> MetricValue:
        """A determined value (a NaN or infinity becomes undetermined: never stored as a number)."""
        if not math.isfinite(value):
            return cls(value=None, reason="not a finite number")
        return cls(value=float(value))

    @classmethod
    def undetermined(cls, reason: str) -> MetricValue:
        """No value, and why."""
        return cls(value=None, reason=reason)


class CriterionScore(BaseModel):
    """A rubric criterion's grade for one row: the judge's 1-5 score and its short reasoning."""

    model_config = ConfigDict(frozen=True)

    score: int
    reasoning: str = ""


class RowScores(BaseModel):
    """What one row scored: every metric that applies to it, the judge's raw reply and the call's accounting.

    ``error`` is set when the judge could not be called (after retries): such a row is retried on resume.
    ``rubric`` holds the rubric criteria's grades (of the first scoring). With repeats, ``repeats`` holds the
    judged metrics of each scoring in order, and a judged metric in ``metrics`` is their mean. ``question`` and
    ``answer`` are the row's, kept so a stored run's report can show them (empty in rows saved before)."""

    model_config = ConfigDict(frozen=True)

    row_id: str
    tags: tuple[str, ...] = ()
    question: str = ""
    answer: str = ""
    metrics: dict[str, MetricValue] = Field(default_factory=dict)
    claims: dict[str, Any] = Field(default_factory=dict)
    raw_reply: str = ""
    calls: int = 0
    cached: bool = False
    cost_usd: float = 0.0
    unpriced_calls: int = 0
    """The judge's calls for this row whose price is unknown, not in ``cost_usd`` (see ``core/costs``)."""
    error: str | None = None
    rubric: dict[str, CriterionScore] = Field(default_factory=dict)
    repeats: tuple[dict[str, MetricValue], ...] = ()
    cached_calls: int | None = None
    target_answer: Answer | None = None
    """The target's answer when a target answered the row (saved before judging: a resume never asks again)."""
    trace: RowTrace | None = None

    @property
    def calls_from_cache(self) -> int:
        """How many of the row's calls the model cache answered (rows saved before ``cached_calls`` was
        kept made one call, cached or not)."""
        if self.cached_calls is not None:
            return self.cached_calls
        return self.calls if self.cached else 0


class MetricSummary(BaseModel):
    """One metric over a set of rows: determined values' mean, median, p90, min, max and a distribution over
    ``BINS`` equal bins of ``[low, high]``; undetermined rows counted with their reasons."""

    model_config = ConfigDict(frozen=True)

    name: str
    n: int
    undetermined: int
    mean: float | None = None
    p50: float | None = None
    p90: float | None = None
    min: float | None = None
    max: float | None = None
    low: float = 0.0
    high: float = 1.0
    histogram: tuple[int, ...] = ()
    reasons: dict[str, int] = Field(default_factory=dict)


class MetricVariance(BaseModel):
    """How much a judged metric moves when every row is scored again (``--repeats``): the mean over rows of
    each row's standard deviation across its scorings (``rows``: those with two or more determined), and the
    run's mean in each scoring with their standard deviation (``sd_of_means``) and range."""

    model_config = ConfigDict(frozen=True)

    name: str
    repeats: int
    rows: int
    mean_row_sd: float | None = None
    repeat_means: tuple[float | None, ...] = ()
    sd_of_means: float | None = None
    low: float | None = None
    high: float | None = None


class EvalSummary(BaseModel):
    """A run's figures: every metric over all rows and per tag, how many rows errored."""

    model_config = ConfigDict(frozen=True)

    rows: int
    errors: int
    metrics: tuple[MetricSummary, ...]
    per_tag: dict[str, tuple[MetricSummary, ...]] = Field(default_factory=dict)
    tag_rows: dict[str, int] = Field(default_factory=dict)
    variance: tuple[MetricVariance, ...] = ()
    tracing: TracingSummary | None = None


def quantile(values: Sequence[float], q: float) -> float:
    """The ``q`` quantile of ``values`` by linear interpolation between order statistics (numpy's default)."""
    if not values:
        raise ValueError("quantile of no values")
    ordered = sorted(values)
    pos = q * (len(ordered) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def histogram(
    values: Iterable[float], low: float = 0.0, high: float = 1.0, bins: int = BINS
) -> tuple[int, ...]:
    """Counts in ``bins`` equal bins of ``[low, high]``; the last bin holds ``high``, values outside are clamped."""
    counts = [0] * bins
    width = (high - low) / bins
    for v in values:
        index = int((v - low) / width) if width > 0 else 0
        counts[max(0, min(bins - 1, index))] += 1
    return tuple(counts)


def summarize_metric(name: str, values: Sequence[MetricValue]) -> MetricSummary:
    """The figures of one metric over ``values`` (one per row it applies to)."""
    known = [v.value for v in values if v.value is not None]
    reasons = Counter(v.reason or "undetermined" for v in values if v.value is None)
    if not known:
        return MetricSummary(name=name, n=0, undetermined=sum(reasons.values()), reasons=dict(reasons))
    high = max(1.0, max(known))
    return MetricSummary(
        name=name,
        n=len(known),
        undetermined=sum(reasons.values()),
        mean=sum(known) / len(known),
        p50=quantile(known, 0.5),
        p90=quantile(known, 0.9),
        min=min(known),
        max=max(known),
        low=min(0.0, min(known)),
        high=high,
        histogram=histogram(known, min(0.0, min(known)), high),
        reasons=dict(reasons.most_common()),
    )


def _summaries(rows: Sequence[RowScores], order: Sequence[str]) -> tuple[MetricSummary, ...]:
    by_metric: dict[str, list[MetricValue]] = {}
    for row in rows:
        for name, value in row.metrics.items():
            by_metric.setdefault(name, []).append(value)
    names = [n for n in order if n in by_metric] + sorted(n for n in by_metric if n not in order)
    return tuple(summarize_metric(n, by_metric[n]) for n in names)


def summarize(rows: Sequence[RowScores], order: Sequence[str] = ()) -> EvalSummary:
    """Every metric over the rows that did not error, overall and per tag, and the repeats' variance; metrics
    listed in ``order`` first."""
    scored = [r for r in rows if r.error is None]
    tags: dict[str, list[RowScores]] = {}
    for row in scored:
        for tag in dict.fromkeys(row.tags):
            tags.setdefault(tag, []).append(row)
    return EvalSummary(
        rows=len(rows),
        errors=len(rows) - len(scored),
        metrics=_summaries(scored, order),
        per_tag={tag: _summaries(members, order) for tag, members in sorted(tags.items())},
        tag_rows={tag: len(members) for tag, members in sorted(tags.items())},
        variance=repeat_variance(scored, order),
        tracing=run_tracing(r.trace for r in rows),
    )


def _sd(values: Sequence[float]) -> float:
    mean = sum(values) / len(values)
    return math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1))


def mean_of_repeats(repeats: Sequence[Mapping[str, MetricValue]]) -> dict[str, MetricValue]:
    """Per metric the mean of its determined values over the scorings; undetermined (with the first
    scoring's reason) when none is determined."""
    out: dict[str, MetricValue] = {}
    for name in dict.fromkeys(n for scoring in repeats for n in scoring):
        values = [s[name] for s in repeats if name in s]
        known = [v.value for v in values if v.value is not None]
        out[name] = MetricValue.of(sum(known) / len(known)) if known else values[0]
    return out


def repeat_variance(rows: Sequence[RowScores], order: Sequence[str] = ()) -> tuple[MetricVariance, ...]:
    """For every metric scored in repeats: the mean per-row standard deviation (sample, over the row's
    determined scorings) and the spread of the run's mean across scorings (each over its determined rows)."""
    repeated = [r for r in rows if len(r.repeats) > 1]
    if not repeated:
        return ()
    n = max(len(r.repeats) for r in repeated)
    names = list(dict.fromkeys(name for r in repeated for scoring in r.repeats for name in scoring))
    names = [m for m in order if m in names] + [m for m in names if m not in order]
    out = []
    for name in names:
        per_repeat: list[list[float]] = [[] for _ in range(n)]
        row_sds = []
        for row in repeated:
            known = []
            for k, scoring in enumerate(row.repeats):
                value = scoring.get(name)
                if value is not None and value.value is not None:
                    known.append(value.value)
                    per_repeat[k].append(value.value)
            if len(known) > 1:
                row_sds.append(_sd(known))
        means = tuple(sum(v) / len(v) if v else None for v in per_repeat)
        known_means = [m for m in means if m is not None]
        out.append(
            MetricVariance(
                name=name,
                repeats=n,
                rows=len(row_sds),
                mean_row_sd=sum(row_sds) / len(row_sds) if row_sds else None,
                repeat_means=means,
                sd_of_means=_sd(known_means) if len(known_means) > 1 else None,
                low=min(known_means) if known_means else None,
                high=max(known_means) if known_means else None,
            )
        )
    return tuple(out)


def normal_tags(tags: Mapping[str, Any] | Sequence[Any] | None) -> tuple[str, ...]:
    """Tags as labels: a mapping becomes ``key=value`` labels, a list is taken as it is."""
    if tags is None:
        return ()
    if isinstance(tags, Mapping):
        return tuple(f"{k}={v}" for k, v in tags.items())
    return tuple(str(t) for t in tags)
