"""Turn a run's per-case results into the numbers a report shows. Pure: no I/O."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

from pydantic import BaseModel, ConfigDict

from ragreplay.core.failure_tags import FailureTags
from ragreplay.core.runs import ResultRecord, ResultStatus, RunRecord
from ragreplay.core.stats import rate
from ragreplay.core.types import Case, Feedback, Fit, SkipReason, Verdict

MIN_N_TO_DECIDE = 30
"""Below this many judged cases in a feedback group, a rate's interval is too wide to act on."""


class RateValue(BaseModel):
    """A rate as reported: k of n, the point estimate and its 95% Wilson interval."""

    model_config = ConfigDict(frozen=True)

    k: int
    n: int
    value: float | None
    low: float
    high: float

    @classmethod
    def of(cls, k: int, n: int) -> RateValue:
        """The rate ``k / n`` with its interval."""
        r = rate(k, n)
        return cls(k=k, n=n, value=r.value, low=r.low, high=r.high)


class VerdictRates(BaseModel):
    """The verdict matrix and the four rates of the seed, each with n and interval."""

    model_config = ConfigDict(frozen=True)

    counts: dict[Verdict, int]
    good_maintenance: RateValue
    good_change: RateValue
    bad_persistence: RateValue
    bad_change: RateValue

    @classmethod
    def of(cls, counts: Mapping[Verdict, int]) -> VerdictRates:
        """Rates from verdict counts. Unscorable and errored cases are not in ``counts``."""
        full = {v: int(counts.get(v, 0)) for v in Verdict}
        n_good = full[Verdict.GOOD_FIT] + full[Verdict.GOOD_NO_FIT]
        n_bad = full[Verdict.BAD_FIT] + full[Verdict.BAD_NO_FIT]
        return cls(
            counts=full,
            good_maintenance=RateValue.of(full[Verdict.GOOD_FIT], n_good),
            good_change=RateValue.of(full[Verdict.GOOD_NO_FIT], n_good),
            bad_persistence=RateValue.of(full[Verdict.BAD_FIT], n_bad),
            bad_change=RateValue.of(full[Verdict.BAD_NO_FIT], n_bad),
        )


class TagRow(BaseModel):
    """Verdict rates for the cases carrying one tag value."""

    model_config = ConfigDict(frozen=True)

    tag: str
    value: str
    rates: VerdictRates
    unscorable: int
    errors: int


class CaseRow(BaseModel):
    """One case as a report lists it: old vs new, side by side."""

    model_config = ConfigDict(frozen=True)

    case_id: str
    conversation_id: str
    turn_index: int
    feedback: Feedback
    query: str
    question: str | None
    rewritten: bool
    old_answer: str
    new_answer: str | None
    old_chunk_ids: list[str]
    new_chunk_ids: list[str]
    verdict: Verdict | None
    fit: Fit | None
    judge_reason: str
    error: str | None
    tags: dict[str, str]


class RunSummary(BaseModel):
    """Everything a report of one run shows."""

    model_config = ConfigDict(frozen=True)

    run: RunRecord
    n_cases: int
    n_done: int
    n_pending: int
    n_errors: int
    n_unscorable: int
    n_rewritten: int
    rates: VerdictRates
    by_tag: list[TagRow]
    skipped: dict[SkipReason, int]
    cost_usd: float
    tokens_in: int
    tokens_out: int
    latency_p50_ms: float | None
    latency_p95_ms: float | None
    warnings: list[str]
    cases: list[CaseRow]
    failure_tags: FailureTags | None = None
    """The failure tags reviewers gave this run's cases; ``None`` when not looked up."""

    def rows(self, verdict: Verdict) -> list[CaseRow]:
        """The cases with ``verdict``."""
        return [c for c in self.cases if c.verdict == verdict]

    @property
    def review(self) -> list[CaseRow]:
        """BAD_NO_FIT cases: something changed on an answer users disliked; a person must say if it is a fix."""
        return self.rows(Verdict.BAD_NO_FIT)

    @property
    def errors(self) -> list[CaseRow]:
        """Cases whose replay failed, with their error."""
        return [c for c in self.cases if c.error]

    @property
    def unscorable(self) -> list[CaseRow]:
        """Cases the judge could not score."""
        return [c for c in self.cases if c.fit == Fit.UNSCORABLE]


def percentile(values: Sequence[float], q: float) -> float | None:
    """The ``q``-th percentile (0-100) by linear interpolation (numpy's default), or ``None`` if empty."""
    if not values:
        return None
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100
    lo = int(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def _case_row(case: Case, result: ResultRecord) -> CaseRow:
    answer, judgment, rewrite = result.answer, result.judgment, result.rewrite
    return CaseRow(
        case_id=case.id,
        conversation_id=case.conversation_id,
        turn_index=case.turn_index,
        feedback=case.feedback,
        query=case.query,
        question=rewrite.query if rewrite else None,
        rewritten=bool(rewrite and rewrite.rewritten),
        old_answer=case.old_answer,
        new_answer=answer.text if answer else None,
        old_chunk_ids=[c.id for c in case.retrieved],
        new_chunk_ids=[c.id for c in answer.contexts] if answer else [],
        verdict=result.verdict,
        fit=judgment.fit if judgment else None,
        judge_reason=judgment.reason if judgment else "",
        error=result.error if result.status == ResultStatus.ERROR else None,
        tags=dict(case.tags),
    )


def _tag_rows(rows: Iterable[CaseRow]) -> list[TagRow]:
    groups: dict[tuple[str, str], list[CaseRow]] = {}
    for row in rows:
        for key, value in row.tags.items():
            groups.setdefault((key, value), []).append(row)
    out = []
    for (key, value), members in sorted(groups.items()):
        counts = Counter(r.verdict for r in members if r.verdict is not None)
        out.append(
            TagRow(
                tag=key,
                value=value,
                rates=VerdictRates.of(counts),
                unscorable=sum(1 for r in members if r.fit == Fit.UNSCORABLE),
                errors=sum(1 for r in members if r.error),
            )
        )
    return out


def summarize(
    run: RunRecord,
    results: Sequence[ResultRecord],
    cases: Mapping[str, Case],
    skipped: Mapping[SkipReason, int] | None = None,
) -> RunSummary:
    """Compute the verdict matrix, rates with intervals, per-tag rows and the case list of a run."""
    rows = [_case_row(cases[r.case_id], r) for r in results if r.case_id in cases]
    counts = Counter(r.verdict for r in results if r.verdict is not None)
    rates = VerdictRates.of(counts)
    latencies = [r.answer.latency_ms for r in results if r.answer and r.answer.latency_ms is not None]
    cost = sum(
        (r.answer.cost_usd if r.answer else 0.0)
        + (r.judgment.cost_usd if r.judgment else 0.0)
        + (r.rewrite.cost_usd if r.rewrite else 0.0)
        for r in results
    )
    tokens_in = sum(
        (r.answer.tokens.input if r.answer else 0) + (r.judgment.tokens.input if r.judgment else 0)
        for r in results
    )
    tokens_out = sum(
        (r.answer.tokens.output if r.answer else 0) + (r.judgment.tokens.output if r.judgment else 0)
        for r in results
    )
    n_pending = sum(1 for r in results if r.status == ResultStatus.PENDING)
    warnings = []
    for label, group in (("GOOD", rates.good_maintenance), ("BAD", rates.bad_change)):
        if group.n < MIN_N_TO_DECIDE:
            warnings.append(
                f"only {group.n} judged {label} case(s): rates for {label} answers are too uncertain to decide on "
                f"(aim for at least {MIN_N_TO_DECIDE})"
            )
    if n_pending:
        warnings.append(
            f"{n_pending} case(s) not replayed yet: the run is unfinished; resume it with `ragreplay run`"
        )
    return RunSummary(
        run=run,
        n_cases=len(results),
        n_done=sum(1 for r in results if r.status == ResultStatus.DONE),
        n_pending=n_pending,
        n_errors=sum(1 for r in results if r.status == ResultStatus.ERROR),
        n_unscorable=sum(1 for r in results if r.judgment and r.judgment.fit == Fit.UNSCORABLE),
        n_rewritten=sum(1 for r in results if r.rewrite and r.rewrite.rewritten),
        rates=rates,
        by_tag=_tag_rows(rows),
        skipped=dict(skipped or {}),
        cost_usd=cost,
        tokens_in=tokens_in,
        tokens_out=tokens_out,
        latency_p50_ms=percentile(latencies, 50),
        latency_p95_ms=percentile(latencies, 95),
        warnings=warnings,
        cases=rows,
    )
