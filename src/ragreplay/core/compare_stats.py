"""Statistics of a champion-vs-challenger comparison: agreement, preference, position, latency, cost. Pure.

Exact binomial figures (Clopper-Pearson interval, sign test) are computed here from ``math`` alone so the
package needs no scipy at runtime; the tests check them against scipy.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict

from ragreplay.core.summary import RateValue, VerdictRates, percentile
from ragreplay.core.types import Feedback, Fit, Verdict
from ragreplay.core.verdicts import verdict_for

Preferred = Literal["champion", "challenger", "tie"]

MIN_N_PREFERENCE = 20
"""Below this many decided pairs (wins + losses) a preference is reported as too small to decide."""


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True)


# --- exact binomial -------------------------------------------------------------------------------------------


def _log_pmf(i: int, n: int, p: float) -> float:
    return (
        math.lgamma(n + 1)
        - math.lgamma(i + 1)
        - math.lgamma(n - i + 1)
        + i * math.log(p)
        + (n - i) * math.log1p(-p)
    )


def binom_cdf(k: int, n: int, p: float) -> float:
    """P(X <= k) for X ~ Binomial(n, p)."""
    if k < 0:
        return 0.0
    if k >= n:
        return 1.0
    if p <= 0.0:
        return 1.0
    if p >= 1.0:
        return 0.0
    logs = [_log_pmf(i, n, p) for i in range(k + 1)]
    top = max(logs)
    return min(1.0, math.exp(top) * sum(math.exp(v - top) for v in logs))


def _solve(fn: Callable[[float], float], target: float, increasing: bool) -> float:
    """The ``p`` in (0, 1) where the monotone ``fn(p)`` equals ``target``, by bisection."""
    lo, hi = 0.0, 1.0
    for _ in range(200):
        mid = (lo + hi) / 2
        value = fn(mid)
        if (value < target) == increasing:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-12:
            break
    return (lo + hi) / 2


def clopper_pearson(k: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Exact (Clopper-Pearson) interval for ``k`` successes in ``n`` trials; ``(0, 1)`` when ``n`` is 0."""
    if n < 0 or k < 0 or k > n:
        raise ValueError(f"need 0 <= k <= n, got k={k}, n={n}")
    if n == 0:
        return (0.0, 1.0)
    alpha = 1 - confidence
    # lower: P(X >= k; p) = alpha/2, which grows with p; upper: P(X <= k; p) = alpha/2, which falls with p.
    low = 0.0 if k == 0 else _solve(lambda p: 1 - binom_cdf(k - 1, n, p), alpha / 2, increasing=True)
    high = 1.0 if k == n else _solve(lambda p: binom_cdf(k, n, p), alpha / 2, increasing=False)
    return (low, high)


def sign_test_p(k: int, n: int) -> float | None:
    """Two-sided exact sign test of ``k`` successes in ``n`` trials against p = 0.5; ``None`` when n is 0."""
    if n < 0 or k < 0 or k > n:
        raise ValueError(f"need 0 <= k <= n, got k={k}, n={n}")
    if n == 0:
        return None
    return min(1.0, 2 * binom_cdf(min(k, n - k), n, 0.5))


# --- preference -------------------------------------------------------------------------------------------------


class PreferenceStats(_Frozen):
    """Who the pairwise judge preferred: challenger wins, champion wins and ties, with the challenger's win
    share among decided pairs (ties excluded), its exact 95% interval and the sign-test p-value."""

    challenger_wins: int
    champion_wins: int
    ties: int
    n_decided: int
    share: float | None
    low: float
    high: float
    p_value: float | None
    decided: bool
    warning: str | None

    @property
    def n(self) -> int:
        """Pairs with a verdict, ties included."""
        return self.n_decided + self.ties


def preference_stats(
    challenger_wins: int, champion_wins: int, ties: int, min_n: int = MIN_N_PREFERENCE
) -> PreferenceStats:
    """Preference figures from counts; ``decided`` only with at least ``min_n`` decided pairs and an
    interval that stays clear of 0.5."""
    n = challenger_wins + champion_wins
    low, high = clopper_pearson(challenger_wins, n)
    warning = None
    if n < min_n:
        warning = f"only {n} decided pairs (< {min_n}): too few to say who is preferred"
    elif low <= 0.5 <= high:
        warning = "the 95% interval includes 50%: no clear preference"
    return PreferenceStats(
        challenger_wins=challenger_wins,
        champion_wins=champion_wins,
        ties=ties,
        n_decided=n,
        share=challenger_wins / n if n else None,
        low=low,
        high=high,
        p_value=sign_test_p(challenger_wins, n),
        decided=warning is None,
        warning=warning,
    )


# --- per-case rows and summaries ------------------------------------------------------------------------------


class CompareRow(_Frozen):
    """One case judged for one challenger: agreement (FIT judge) and preference (pairwise judge)."""

    case_id: str
    challenger: str
    question: str = ""
    tags: dict[str, str] = {}
    champion_answer: str = ""
    challenger_answer: str = ""
    agreement: Fit | None = None
    """The FIT judge on (champion answer as old, challenger answer as new); ``None`` when a side errored."""
    preference: Preferred | None = None
    """``None``: the pairwise judge could not score the pair (or a side errored)."""
    consistent: bool | None = None
    champion_latency_ms: float | None = None
    challenger_latency_ms: float | None = None
    champion_cost_usd: float = 0.0
    challenger_cost_usd: float = 0.0
    champion_wrong_language: bool = False
    challenger_wrong_language: bool = False
    error: str | None = None
    reason: str = ""
    feedback: Feedback | None = None
    """The user's label on the champion's answer, when the user gave one (live shadow traffic)."""


class PositionFigures(_Frozen):
    """Position bias of a pairwise judge over many pairs (``judges.position.position_stats`` computes it).

    ``consistent`` / ``consistency_rate``: pairs judged in both orders whose orders agreed, out of the scored
    both-order pairs (``None`` when there are none). ``a_wins`` / ``b_wins`` / ``ties``: over every scored
    judgment (each ordering counts), how often the answer shown first (A) or second (B) won, or a tie.
    ``p_value``: exact two-sided binomial test of ``a_wins`` against ``b_wins`` (ties left out) with p = 1/2;
    ``favoured`` names the position that wins more when ``p_value < 0.05``. ``unscorable``: pairs with no winner.
    """

    n_pairs: int
    consistent: int
    consistency_rate: float | None
    a_wins: int
    b_wins: int
    ties: int
    favoured: Literal["A", "B"] | None
    p_value: float | None
    unscorable: int = 0


class LatencyFigures(_Frozen):
    """p50 and p95 latency of each side (ms) and challenger minus champion."""

    champion_p50: float | None
    champion_p95: float | None
    challenger_p50: float | None
    challenger_p95: float | None
    delta_p50: float | None
    delta_p95: float | None


class CostFigures(_Frozen):
    """Total cost of each side's answers (USD) and challenger minus champion."""

    champion_usd: float
    challenger_usd: float
    delta_usd: float


class TagBreakdown(_Frozen):
    """Agreement and preference for the cases carrying one tag value."""

    tag: str
    value: str
    n: int
    agreement: RateValue
    preference: PreferenceStats


class FeedbackFigures(_Frozen):
    """The challenger on the champion answers users rated: the verdict matrix of the user's label with the
    agreement judge (GOOD_FIT: a liked answer kept; BAD_NO_FIT: a disliked answer changed, for review) and
    who the pairwise judge preferred among GOOD- and among BAD-rated answers."""

    n_good: int
    n_bad: int
    verdicts: VerdictRates
    unscorable: int
    preference_good: PreferenceStats
    preference_bad: PreferenceStats


class ChallengerSummary(_Frozen):
    """Everything reported for the champion against one challenger."""

    name: str
    n_cases: int
    n_errors: int
    agreement: RateValue
    agreement_unscorable: int
    preference_disagreements: PreferenceStats
    preference_all: PreferenceStats
    preference_unscorable: int
    position: PositionFigures | None
    latency: LatencyFigures
    cost: CostFigures
    champion_wrong_language: int
    challenger_wrong_language: int
    by_tag: list[TagBreakdown]
    warnings: list[str]
    feedback: FeedbackFigures | None = None
    """``None`` when no row carries user feedback (offline comparisons)."""


def _delta(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else b - a


def latency_figures(rows: Sequence[CompareRow]) -> LatencyFigures:
    """p50/p95 per side over the rows where that side has a latency, and the deltas."""
    champ = [r.champion_latency_ms for r in rows if r.champion_latency_ms is not None]
    chall = [r.challenger_latency_ms for r in rows if r.challenger_latency_ms is not None]
    c50, c95 = percentile(champ, 50), percentile(champ, 95)
    h50, h95 = percentile(chall, 50), percentile(chall, 95)
    return LatencyFigures(
        champion_p50=c50,
        champion_p95=c95,
        challenger_p50=h50,
        challenger_p95=h95,
        delta_p50=_delta(c50, h50),
        delta_p95=_delta(c95, h95),
    )


def cost_figures(rows: Sequence[CompareRow]) -> CostFigures:
    """Total cost per side and the delta."""
    champ = sum(r.champion_cost_usd for r in rows)
    chall = sum(r.challenger_cost_usd for r in rows)
    return CostFigures(champion_usd=champ, challenger_usd=chall, delta_usd=chall - champ)


def agreement_rate(rows: Sequence[CompareRow]) -> RateValue:
    """Share of scored rows where the FIT judge found the challenger's answer fits the champion's."""
    scored = [r for r in rows if r.agreement in (Fit.FIT, Fit.NO_FIT)]
    return RateValue.of(sum(r.agreement == Fit.FIT for r in scored), len(scored))


def preference_of(rows: Sequence[CompareRow], min_n: int = MIN_N_PREFERENCE) -> PreferenceStats:
    """Preference counts over ``rows`` (rows the pairwise judge could not score are left out)."""
    prefs = [r.preference for r in rows]
    return preference_stats(
        prefs.count("challenger"), prefs.count("champion"), prefs.count("tie"), min_n=min_n
    )


def disagreements(rows: Sequence[CompareRow]) -> list[CompareRow]:
    """Rows the agreement judge found NO_FIT: the two pipelines reached different answers."""
    return [r for r in rows if r.agreement == Fit.NO_FIT]


def feedback_figures(rows: Sequence[CompareRow]) -> FeedbackFigures | None:
    """The verdict matrix and preference by user label over the rows with feedback; ``None`` if none has."""
    rated = [r for r in rows if r.feedback is not None]
    if not rated:
        return None
    counts: dict[Verdict, int] = defaultdict(int)
    for row in rated:
        assert row.feedback is not None
        verdict = verdict_for(row.feedback, row.agreement) if row.agreement is not None else None
        if verdict is not None:
            counts[verdict] += 1
    good = [r for r in rated if r.feedback == Feedback.GOOD]
    bad = [r for r in rated if r.feedback == Feedback.BAD]
    return FeedbackFigures(
        n_good=len(good),
        n_bad=len(bad),
        verdicts=VerdictRates.of(counts),
        unscorable=len(rated) - sum(counts.values()),
        preference_good=preference_of(good),
        preference_bad=preference_of(bad),
    )


def tag_breakdowns(rows: Sequence[CompareRow]) -> list[TagBreakdown]:
    """Agreement and preference (among disagreements) per tag value, sorted by tag then value."""
    groups: dict[tuple[str, str], list[CompareRow]] = defaultdict(list)
    for row in rows:
        for key, value in row.tags.items():
            groups[(key, value)].append(row)
    return [
        TagBreakdown(
            tag=key,
            value=value,
            n=len(group),
            agreement=agreement_rate(group),
            preference=preference_of(disagreements(group)),
        )
        for (key, value), group in sorted(groups.items())
    ]


def summarize_challenger(
    name: str, rows: Sequence[CompareRow], position: PositionFigures | None = None
) -> ChallengerSummary:
    """The comparison of the champion with challenger ``name`` from its per-case rows."""
    ok = [r for r in rows if r.error is None]
    pref_dis = preference_of(disagreements(ok))
    pref_all = preference_of(ok)
    warnings: list[str] = []
    if pref_dis.warning:
        warnings.append(f"{name}: preference among disagreements: {pref_dis.warning}")
    if position is not None and position.favoured is not None:
        warnings.append(
            f"{name}: the judge favoured position {position.favoured} (p={position.p_value:.3g}); "
            "judge both orders (--order both)"
            if position.p_value is not None
            else f"{name}: the judge favoured position {position.favoured}"
        )
    n_errors = len(rows) - len(ok)
    if n_errors:
        warnings.append(f"{name}: {n_errors} case(s) where a side failed to answer are left out")
    return ChallengerSummary(
        name=name,
        n_cases=len(rows),
        n_errors=n_errors,
        agreement=agreement_rate(ok),
        agreement_unscorable=sum(r.agreement == Fit.UNSCORABLE for r in ok),
        preference_disagreements=pref_dis,
        preference_all=pref_all,
        preference_unscorable=sum(r.preference is None for r in ok),
        position=position,
        latency=latency_figures(ok),
        cost=cost_figures(rows),
        champion_wrong_language=sum(r.champion_wrong_language for r in ok),
        challenger_wrong_language=sum(r.challenger_wrong_language for r in ok),
        by_tag=tag_breakdowns(ok),
        warnings=warnings,
        feedback=feedback_figures(ok),
    )
