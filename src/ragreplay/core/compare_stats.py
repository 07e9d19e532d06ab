"""Statistics of a champion-vs-challenger comparison: agreement, preference, position, latency, cost. Pure.

Exact binomial figures (Clopper-Pearson interval, sign test) are computed here from ``math`` alone so the
package needs no scipy at runtime, in time that does not grow with the counts; the tests check them against
scipy.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from statistics import NormalDist
from typing import Literal

from pydantic import BaseModel, ConfigDict

from ragreplay.core.run_summary import RateValue, VerdictRates, percentile
from ragreplay.core.types import Feedback, Fit, Verdict
from ragreplay.core.verdicts import verdict_for

Preferred = Literal["champion", "challenger", "tie"]

MIN_N_PREFERENCE = 20
"""Below this many decided pairs (wins + losses) a preference is reported as too small to decide."""


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True)


# --- exact binomial -------------------------------------------------------------------------------------------
#
# Binomial tails are regularized incomplete beta values: P(X >= k; n, p) = I_p(k, n - k + 1). I_x(a, b) comes
# from its continued fraction (modified Lentz), whose length grows with sqrt(a + b) at worst, not with k, and
# whose prefactor x^a (1 - x)^b / B(a, b) is taken in a form that does not cancel for large a and b (the
# Stirling form of TOMS 708's brcomp), so tails stay accurate to ~1e-13 relative at n = 10^6.

_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)
_TINY = 1e-300
_EPS = 1e-16
_CF_EPS = 1e-15
_MAX_TERMS = 1_000_000


def _stirling_rest(x: float) -> float:
    """``lgamma(x)`` minus its Stirling approximation, for ``x >= 10``."""
    r = 1 / (x * x)
    return (1 / 12 - r * (1 / 360 - r * (1 / 1260 - r * (1 / 1680 - r / 1188)))) / x


def _x_minus_log1p(d: float) -> float:
    """``d - log1p(d)`` without cancellation for small ``d`` (``d > -1``)."""
    if abs(d) > 0.25:
        return d - math.log1p(d)
    u = d / (2 + d)  # log1p(d) = 2 atanh(u)
    u2 = u * u
    term, total, j = u * u2, 0.0, 3
    while True:
        part = term / j
        total += part
        if abs(part) <= _EPS * abs(total):
            break
        term *= u2
        j += 2
    return 2 * u2 / (1 - u) - 2 * total


def _log_gamma_ratio(big: float, small: float) -> float:
    """``lgamma(big) - lgamma(big + small)`` for ``big >= 10``, without the cancellation of the two lgammas."""
    s = big + small
    return (
        -(big - 0.5) * math.log1p(small / big)
        - small * math.log(s)
        + small
        + _stirling_rest(big)
        - _stirling_rest(s)
    )


def _log_front(a: float, b: float, x: float) -> float:
    """``log(x^a (1 - x)^b / B(a, b))`` for ``0 < x < 1``."""
    if min(a, b) >= 10:
        s = a + b
        mu, nu = a / s, b / s
        spread = a * _x_minus_log1p((x - mu) / mu) + b * _x_minus_log1p((mu - x) / nu)
        rest = _stirling_rest(a) + _stirling_rest(b) - _stirling_rest(s)
        return -spread + 0.5 * math.log(a * nu) - _HALF_LOG_2PI - rest
    small, big = (a, b) if a <= b else (b, a)
    if big >= 10:
        log_beta = math.lgamma(small) + _log_gamma_ratio(big, small)
    else:
        log_beta = math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)
    return a * math.log(x) + b * math.log1p(-x) - log_beta


def _beta_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of ``I_x(a, b)`` (modified Lentz); converges fast for ``x < (a+1)/(a+b+2)``."""
    qab, qap, qam = a + b, a + 1, a - 1
    c, d = 1.0, 1 - qab * x / qap
    d = 1 / (d if abs(d) > _TINY else _TINY)
    h = d
    for m in range(1, _MAX_TERMS):
        m2 = 2 * m
        for aa in (
            m * (b - m) * x / ((qam + m2) * (a + m2)),
            -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2)),
        ):
            d = 1 + aa * d
            d = 1 / (d if abs(d) > _TINY else _TINY)
            c = 1 + aa / c
            c = c if abs(c) > _TINY else _TINY
            delta = d * c
            h *= delta
        if abs(delta - 1) <= _CF_EPS:
            return h
    raise ArithmeticError(f"incomplete beta: no convergence for a={a}, b={b}, x={x}")


def _beta_tails(a: float, b: float, x: float) -> tuple[float, float]:
    """``(I_x(a, b), 1 - I_x(a, b))``, the smaller of the two computed directly so both keep their precision."""
    if x <= 0:
        return 0.0, 1.0
    if x >= 1:
        return 1.0, 0.0
    front = math.exp(_log_front(a, b, x))
    if x * (a + b + 2) < a + 1:
        low = front * _beta_fraction(a, b, x) / a
        return low, 1 - low
    high = front * _beta_fraction(b, a, 1 - x) / b
    return 1 - high, high


def _beta_quantile(a: float, b: float, lower: float) -> float:
    """The ``x`` with ``I_x(a, b) = lower`` (``0 < lower < 1``): Newton's method kept inside a bracket that
    every evaluation narrows, falling back to bisection when a step would leave it."""
    upper = 1 - lower
    lo, hi = 0.0, 1.0
    s = a + b
    guess = a / s + NormalDist().inv_cdf(lower) * math.sqrt(a * b / (s * s * (s + 1)))
    x = guess if 0 < guess < 1 else a / s
    for _ in range(200):
        below, above = _beta_tails(a, b, x)
        miss = below - lower if lower <= 0.5 else upper - above
        if miss == 0:
            return x
        if miss < 0:
            lo = x
        else:
            hi = x
        slope = math.exp(_log_front(a, b, x)) / (x * (1 - x))
        step = miss / slope if slope > 0 else math.inf
        nxt = x - step
        if not lo < nxt < hi:
            nxt = (lo + hi) / 2
        if abs(nxt - x) <= 4e-16 * x or nxt in (lo, hi):
            return nxt
        x = nxt
    return x


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
    return _beta_tails(k + 1, n - k, p)[1]


def clopper_pearson(k: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Exact (Clopper-Pearson) interval for ``k`` successes in ``n`` trials; ``(0, 1)`` when ``n`` is 0."""
    if n < 0 or k < 0 or k > n:
        raise ValueError(f"need 0 <= k <= n, got k={k}, n={n}")
    if n == 0:
        return (0.0, 1.0)
    alpha = 1 - confidence
    # lower: P(X >= k; p) = I_p(k, n - k + 1) = alpha/2; upper: P(X <= k; p) = alpha/2, i.e.
    # I_p(k + 1, n - k) = 1 - alpha/2.
    low = 0.0 if k == 0 else _beta_quantile(k, n - k + 1, alpha / 2)
    high = 1.0 if k == n else _beta_quantile(k + 1, n - k, 1 - alpha / 2)
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
    champion_unpriced_calls: int = 0
    """The champion's model calls for this answer whose price is unknown, not in its cost (``core/costs``)."""
    challenger_unpriced_calls: int = 0
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
    """Total cost of each side's answers (USD) and challenger minus champion; each side's ``*_unpriced_calls``
    were not priced and are not in its dollars (``core/costs``), so the delta is known only when both are 0."""

    champion_usd: float
    challenger_usd: float
    delta_usd: float
    champion_unpriced_calls: int = 0
    challenger_unpriced_calls: int = 0

    @property
    def delta_known(self) -> bool:
        """Whether every call of both sides was priced, so ``delta_usd`` is the real difference."""
        return self.champion_unpriced_calls == 0 and self.challenger_unpriced_calls == 0


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


class Spread(_Frozen):
    """One side's values as the box-and-strip charts draw them when the rows are not at hand: ``n`` values
    summarised by ``points``, evenly spaced quantiles from the min to the max (a rollup's sketch)."""

    n: int
    points: list[float]


class Spreads(_Frozen):
    """Latency (rows where both sides answered) and cost (every row) of each side, as :class:`Spread`."""

    champion_latency: Spread
    challenger_latency: Spread
    champion_cost: Spread
    challenger_cost: Spread


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
    spreads: Spreads | None = None
    """The sides' latency and cost spreads when the summary was built from rollups, without its rows."""


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
    champ = math.fsum(r.champion_cost_usd for r in rows)
    chall = math.fsum(r.challenger_cost_usd for r in rows)
    return CostFigures(
        champion_usd=champ,
        challenger_usd=chall,
        delta_usd=chall - champ,
        champion_unpriced_calls=sum(r.champion_unpriced_calls for r in rows),
        challenger_unpriced_calls=sum(r.challenger_unpriced_calls for r in rows),
    )


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
    return challenger_summary(
        name,
        n_cases=len(rows),
        n_errors=len(rows) - len(ok),
        agreement=agreement_rate(ok),
        agreement_unscorable=sum(r.agreement == Fit.UNSCORABLE for r in ok),
        preference_disagreements=preference_of(disagreements(ok)),
        preference_all=preference_of(ok),
        preference_unscorable=sum(r.preference is None for r in ok),
        position=position,
        latency=latency_figures(ok),
        cost=cost_figures(rows),
        champion_wrong_language=sum(r.champion_wrong_language for r in ok),
        challenger_wrong_language=sum(r.challenger_wrong_language for r in ok),
        by_tag=tag_breakdowns(ok),
        feedback=feedback_figures(ok),
    )


def challenger_summary(
    name: str,
    *,
    n_cases: int,
    n_errors: int,
    agreement: RateValue,
    agreement_unscorable: int,
    preference_disagreements: PreferenceStats,
    preference_all: PreferenceStats,
    preference_unscorable: int,
    position: PositionFigures | None,
    latency: LatencyFigures,
    cost: CostFigures,
    champion_wrong_language: int,
    challenger_wrong_language: int,
    by_tag: list[TagBreakdown],
    feedback: FeedbackFigures | None,
    spreads: Spreads | None = None,
) -> ChallengerSummary:
    """The comparison with challenger ``name`` from its figures (per-case rows, or rollups), with the
    warnings they call for."""
    pref_dis = preference_disagreements
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
    if n_errors:
        warnings.append(f"{name}: {n_errors} case(s) where a side failed to answer are left out")
    return ChallengerSummary(
        name=name,
        n_cases=n_cases,
        n_errors=n_errors,
        agreement=agreement,
        agreement_unscorable=agreement_unscorable,
        preference_disagreements=pref_dis,
        preference_all=preference_all,
        preference_unscorable=preference_unscorable,
        position=position,
        latency=latency,
        cost=cost,
        champion_wrong_language=champion_wrong_language,
        challenger_wrong_language=challenger_wrong_language,
        by_tag=by_tag,
        warnings=warnings,
        feedback=feedback,
        spreads=spreads,
    )
