"""Turn a run's per-case results into the numbers a report shows. Pure: no I/O."""

from __future__ import annotations

from array import array
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

from pydantic import BaseModel, ConfigDict

from ragreplay.core.costs import total_cost
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
    all_cases: bool = True
    unpriced_calls: int = 0
    """Model calls whose price is unknown, not in ``cost_usd`` (see ``core/costs``)."""
    """Whether ``cases`` lists every case; ``False``: only the first few of each kind a terminal shows."""
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


class _TagCounts:
    __slots__ = ("errors", "unscorable", "verdicts")

    def __init__(self) -> None:
        self.verdicts: Counter[Verdict] = Counter()
        self.unscorable = 0
        self.errors = 0


class SummaryBuilder:
    """Adds up a run's results one at a time, so a summary of 20,000 cases never holds them all.

    With ``keep`` set, ``cases`` lists only the first ``keep`` cases of each kind a terminal report shows
    (BAD_NO_FIT, GOOD_NO_FIT, errored, unscorable); the counts and rates always cover every case.
    """

    def __init__(self, keep: int | None = None) -> None:
        self.keep = keep
        self.rows: list[CaseRow] = []
        self._listed: Counter[str] = Counter()
        self.verdicts: Counter[Verdict] = Counter()
        self.by_tag: dict[tuple[str, str], _TagCounts] = {}
        self.latencies = array("d")
        self.cost = 0.0
        self.unpriced_calls = 0
        self.tokens_in = self.tokens_out = 0
        self.n_cases = self.n_done = self.n_pending = self.n_errors = self.n_unscorable = self.n_rewritten = 0

    def add(self, result: ResultRecord, case: Case | None) -> None:
        """Count one result; ``case`` is ``None`` when the case is no longer in the store (not listed)."""
        answer, judgment, rewrite = result.answer, result.judgment, result.rewrite
        self.n_cases += 1
        self.n_done += result.status == ResultStatus.DONE
        self.n_pending += result.status == ResultStatus.PENDING
        self.n_errors += result.status == ResultStatus.ERROR
        unscorable = judgment is not None and judgment.fit == Fit.UNSCORABLE
        self.n_unscorable += unscorable
        self.n_rewritten += bool(rewrite and rewrite.rewritten)
        if result.verdict is not None:
            self.verdicts[result.verdict] += 1
        if answer and answer.latency_ms is not None:
            self.latencies.append(answer.latency_ms)
        cost, unpriced = total_cost((answer, judgment, rewrite))
        self.cost += cost
        self.unpriced_calls += unpriced
        self.tokens_in += (answer.tokens.input if answer else 0) + (judgment.tokens.input if judgment else 0)
        self.tokens_out += (answer.tokens.output if answer else 0) + (
            judgment.tokens.output if judgment else 0
        )
        if case is None:
            return
        row = _case_row(case, result)
        for key, value in row.tags.items():
            counts = self.by_tag.setdefault((key, value), _TagCounts())
            if row.verdict is not None:
                counts.verdicts[row.verdict] += 1
            counts.unscorable += row.fit == Fit.UNSCORABLE
            counts.errors += bool(row.error)
        if self.keep is None or self._wanted(row):
            self.rows.append(row)

    def _wanted(self, row: CaseRow) -> bool:
        kinds = [str(row.verdict)] if row.verdict in (Verdict.BAD_NO_FIT, Verdict.GOOD_NO_FIT) else []
        kinds += ["error"] * bool(row.error) + ["unscorable"] * (row.fit == Fit.UNSCORABLE)
        wanted = [k for k in kinds if self._listed[k] < (self.keep or 0)]
        for kind in wanted:
            self._listed[kind] += 1
        return bool(wanted)

    def build(self, run: RunRecord, skipped: Mapping[SkipReason, int] | None = None) -> RunSummary:
        """The summary of everything added."""
        rates = VerdictRates.of(self.verdicts)
        warnings = []
        for label, group in (("GOOD", rates.good_maintenance), ("BAD", rates.bad_change)):
            if group.n < MIN_N_TO_DECIDE:
                warnings.append(
                    f"only {group.n} judged {label} case(s): rates for {label} answers are too uncertain to "
                    f"decide on (aim for at least {MIN_N_TO_DECIDE})"
                )
        if self.n_pending:
            warnings.append(
                f"{self.n_pending} case(s) not replayed yet: the run is unfinished; resume it with `ragreplay run`"
            )
        by_tag = [
            TagRow(
                tag=k, value=v, rates=VerdictRates.of(c.verdicts), unscorable=c.unscorable, errors=c.errors
            )
            for (k, v), c in sorted(self.by_tag.items())
        ]
        return RunSummary(
            run=run,
            n_cases=self.n_cases,
            n_done=self.n_done,
            n_pending=self.n_pending,
            n_errors=self.n_errors,
            n_unscorable=self.n_unscorable,
            n_rewritten=self.n_rewritten,
            rates=rates,
            by_tag=by_tag,
            skipped=dict(skipped or {}),
            cost_usd=self.cost,
            tokens_in=self.tokens_in,
            tokens_out=self.tokens_out,
            latency_p50_ms=percentile(self.latencies, 50),
            latency_p95_ms=percentile(self.latencies, 95),
            warnings=warnings,
            cases=self.rows,
            all_cases=self.keep is None,
            unpriced_calls=self.unpriced_calls,
        )


def summarize(
    run: RunRecord,
    results: Iterable[ResultRecord],
    cases: Mapping[str, Case],
    skipped: Mapping[SkipReason, int] | None = None,
) -> RunSummary:
    """Compute the verdict matrix, rates with intervals, per-tag rows and the case list of a run."""
    builder = SummaryBuilder()
    for result in results:
        builder.add(result, cases.get(result.case_id))
    return builder.build(run, skipped)
