"""Comparison statistics checked against scipy on constructed counts."""

from __future__ import annotations

import math
import time
from collections.abc import Callable

import numpy as np
import pytest
from scipy import stats

from ragreplay.core.compare_stats import (
    CompareRow,
    PositionFigures,
    agreement_rate,
    binom_cdf,
    clopper_pearson,
    cost_figures,
    latency_figures,
    preference_stats,
    sign_test_p,
    summarize_challenger,
    tag_breakdowns,
)
from ragreplay.core.stats import wilson_interval
from ragreplay.core.types import Fit

COUNTS = [(0, 1), (1, 1), (0, 5), (3, 7), (7, 7), (12, 20), (19, 20), (50, 100), (2, 150), (640, 1000)]


@pytest.mark.parametrize(("k", "n"), COUNTS)
def test_binom_cdf_matches_scipy(k: int, n: int) -> None:
    for p in (0.01, 0.3, 0.5, 0.77, 0.99):
        assert binom_cdf(k, n, p) == pytest.approx(stats.binom.cdf(k, n, p), rel=1e-9, abs=1e-12)


@pytest.mark.parametrize(("k", "n"), COUNTS)
def test_clopper_pearson_matches_scipy_exact_interval(k: int, n: int) -> None:
    ci = stats.binomtest(k, n).proportion_ci(method="exact")
    low, high = clopper_pearson(k, n)
    assert low == pytest.approx(ci.low, abs=1e-9)
    assert high == pytest.approx(ci.high, abs=1e-9)


def test_clopper_pearson_other_confidence_and_bad_input() -> None:
    ci = stats.binomtest(9, 30).proportion_ci(confidence_level=0.9, method="exact")
    assert clopper_pearson(9, 30, confidence=0.9) == pytest.approx((ci.low, ci.high), abs=1e-9)
    assert clopper_pearson(0, 0) == (0.0, 1.0)
    with pytest.raises(ValueError):
        clopper_pearson(5, 3)


@pytest.mark.parametrize(("k", "n"), [*COUNTS, (10, 20), (10, 21), (11, 21)])
def test_sign_test_matches_scipy_binomtest(k: int, n: int) -> None:
    expected = stats.binomtest(k, n, 0.5, alternative="two-sided").pvalue
    assert sign_test_p(k, n) == pytest.approx(expected, rel=1e-9, abs=1e-12)
    assert sign_test_p(0, 0) is None


LARGE_N = [46_594, 100_000, 1_000_000]


def _large_counts() -> list[tuple[int, int]]:
    return [(k, n) for n in LARGE_N for k in (0, 1, 2, n // 3, n // 2, n // 2 + 1, n - 2, n - 1, n)]


@pytest.mark.parametrize(("k", "n"), _large_counts())
@pytest.mark.parametrize("confidence", [0.95, 0.99])
def test_clopper_pearson_large_n_matches_the_beta_quantiles(k: int, n: int, confidence: float) -> None:
    # scipy's own proportion_ci stops its root search at 2e-12 absolute; the beta quantiles are the definition
    alpha = 1 - confidence
    low, high = clopper_pearson(k, n, confidence)
    expected_low = 0.0 if k == 0 else stats.beta.ppf(alpha / 2, k, n - k + 1)
    expected_high = 1.0 if k == n else stats.beta.ppf(1 - alpha / 2, k + 1, n - k)
    assert low == pytest.approx(expected_low, rel=1e-9, abs=1e-300)
    assert high == pytest.approx(expected_high, rel=1e-9, abs=1e-300)
    assert low < k / n < high or k in (0, n)


@pytest.mark.parametrize(("k", "n"), _large_counts())
def test_binomial_tails_and_sign_test_large_n_match_scipy(k: int, n: int) -> None:
    for p in (1e-6, 0.01, 0.3, 0.5, 0.99, k / n, min(1.0, (k + 3 * (n**0.5)) / n)):
        expected = stats.binom.cdf(k, n, p)
        assert binom_cdf(k, n, p) == pytest.approx(expected, rel=1e-9, abs=1e-300)
    assert sign_test_p(k, n) == pytest.approx(stats.binomtest(k, n, 0.5).pvalue, rel=1e-9, abs=1e-300)


def test_exact_figures_take_the_same_time_whatever_the_counts() -> None:
    # summing k binomial terms would take minutes at n = 10^9; the incomplete beta takes a few iterations
    n = 10**9
    started = time.perf_counter()
    low, high = clopper_pearson(n // 2 + 12_345, n)
    p_value = sign_test_p(n // 2 + 12_345, n)
    assert time.perf_counter() - started < 2.0
    assert low == pytest.approx(stats.beta.ppf(0.025, n // 2 + 12_345, n // 2 - 12_344), rel=1e-9)
    assert high == pytest.approx(stats.beta.ppf(0.975, n // 2 + 12_346, n // 2 - 12_345), rel=1e-9)
    assert p_value == pytest.approx(stats.binomtest(n // 2 + 12_345, n).pvalue, rel=1e-9)


def _summed_binom_cdf(k: int, n: int, p: float) -> float:
    """The implementation before the incomplete beta (k pmf terms summed): the figures must not move."""
    if k < 0:
        return 0.0
    if k >= n:
        return 1.0
    logs = [
        math.lgamma(n + 1)
        - math.lgamma(i + 1)
        - math.lgamma(n - i + 1)
        + i * math.log(p)
        + (n - i) * math.log1p(-p)
        for i in range(k + 1)
    ]
    top = max(logs)
    return min(1.0, math.exp(top) * sum(math.exp(v - top) for v in logs))


def _bisected(fn: Callable[[float], float], target: float, increasing: bool) -> float:
    lo, hi = 0.0, 1.0
    for _ in range(200):
        mid = (lo + hi) / 2
        if (fn(mid) < target) == increasing:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-12:
            break
    return (lo + hi) / 2


@pytest.mark.parametrize(("k", "n"), [*COUNTS, (4870, 10_000), (5210, 10_000), (11_650, 23_297)])
def test_figures_agree_with_the_summed_implementation_they_replace(k: int, n: int) -> None:
    # the old bisection stopped at 1e-12 and its lgamma sums lose ~1e-12 at n = 10^4: the last digits were
    # noise, and nothing else may move
    old_low = 0.0 if k == 0 else _bisected(lambda p: 1 - _summed_binom_cdf(k - 1, n, p), 0.025, True)
    old_high = 1.0 if k == n else _bisected(lambda p: _summed_binom_cdf(k, n, p), 0.025, False)
    low, high = clopper_pearson(k, n)
    assert low == pytest.approx(old_low, abs=1e-11)
    assert high == pytest.approx(old_high, abs=1e-11)
    old_p = min(1.0, 2 * _summed_binom_cdf(min(k, n - k), n, 0.5))
    assert sign_test_p(k, n) == pytest.approx(old_p, rel=1e-10, abs=1e-300)
    assert f"{low:.1%} {high:.1%} {sign_test_p(k, n):.3g}" == f"{old_low:.1%} {old_high:.1%} {old_p:.3g}"


def test_preference_excludes_ties_from_the_share_and_interval() -> None:
    pref = preference_stats(challenger_wins=30, champion_wins=10, ties=15)
    ci = stats.binomtest(30, 40).proportion_ci(method="exact")
    assert pref.n_decided == 40 and pref.n == 55
    assert pref.share == pytest.approx(0.75)
    assert (pref.low, pref.high) == pytest.approx((ci.low, ci.high), abs=1e-9)
    assert pref.p_value == pytest.approx(stats.binomtest(30, 40).pvalue)
    assert pref.decided and pref.warning is None


def test_preference_warns_when_too_small_or_straddling_half() -> None:
    small = preference_stats(9, 1, 0)
    assert not small.decided and small.warning and "too few" in small.warning
    straddle = preference_stats(22, 18, 3)
    assert straddle.low < 0.5 < straddle.high
    assert not straddle.decided and straddle.warning and "50%" in straddle.warning
    empty = preference_stats(0, 0, 4)
    assert empty.share is None and empty.p_value is None and (empty.low, empty.high) == (0.0, 1.0)


def _row(i: int, **kw: object) -> CompareRow:
    base: dict[str, object] = {"case_id": f"c{i}", "challenger": "b"}
    base.update(kw)
    return CompareRow.model_validate(base)


def test_latency_percentiles_and_deltas_match_numpy() -> None:
    champ = [100.0, 120.0, 90.0, 300.0, 150.0, 110.0]
    chall = [80.0, 95.0, 70.0, 400.0, 90.0, None]
    rows = [
        _row(i, champion_latency_ms=a, challenger_latency_ms=b)
        for i, (a, b) in enumerate(zip(champ, chall, strict=True))
    ]
    lat = latency_figures(rows)
    present = [b for b in chall if b is not None]
    assert lat.champion_p50 == pytest.approx(np.percentile(champ, 50))
    assert lat.champion_p95 == pytest.approx(np.percentile(champ, 95))
    assert lat.challenger_p95 == pytest.approx(np.percentile(present, 95))
    assert lat.delta_p50 == pytest.approx(np.percentile(present, 50) - np.percentile(champ, 50))
    assert latency_figures([]).delta_p95 is None


def test_cost_totals_and_delta() -> None:
    rows = [_row(i, champion_cost_usd=0.01, challenger_cost_usd=0.025) for i in range(4)]
    cost = cost_figures(rows)
    assert cost.champion_usd == pytest.approx(0.04)
    assert cost.challenger_usd == pytest.approx(0.10)
    assert cost.delta_usd == pytest.approx(0.06)


def test_agreement_rate_is_wilson_over_scored_rows() -> None:
    rows = [_row(i, agreement=Fit.FIT) for i in range(7)]
    rows += [_row(10 + i, agreement=Fit.NO_FIT) for i in range(5)]
    rows += [_row(20, agreement=Fit.UNSCORABLE), _row(21, agreement=None)]
    rate = agreement_rate(rows)
    assert (rate.k, rate.n) == (7, 12)
    assert (rate.low, rate.high) == pytest.approx(wilson_interval(7, 12))


def _constructed() -> list[CompareRow]:
    rows: list[CompareRow] = []
    i = 0
    # 20 FIT rows: preferences there count only in the "all cases" figure
    for pref in ["tie"] * 14 + ["champion"] * 6:
        rows.append(_row(i, agreement=Fit.FIT, preference=pref, tags={"lang": "en"}))
        i += 1
    # 30 NO_FIT rows: challenger 18, champion 6, tie 4, unscorable 2
    for pref in ["challenger"] * 18 + ["champion"] * 6 + ["tie"] * 4 + [None] * 2:
        rows.append(_row(i, agreement=Fit.NO_FIT, preference=pref, tags={"lang": "nl" if i % 2 else "en"}))
        i += 1
    rows.append(_row(i, error="champion: timeout", champion_cost_usd=0.5))
    rows.append(_row(i + 1, agreement=Fit.UNSCORABLE, preference="tie", challenger_wrong_language=True))
    return rows


def test_summarize_challenger_counts_disagreements_and_all_cases_apart() -> None:
    position = PositionFigures(
        n_pairs=50,
        consistent=40,
        consistency_rate=0.8,
        a_wins=30,
        b_wins=10,
        ties=10,
        favoured="A",
        p_value=0.002,
    )
    s = summarize_challenger("b", _constructed(), position)
    assert (s.n_cases, s.n_errors) == (52, 1)
    dis = s.preference_disagreements
    assert (dis.challenger_wins, dis.champion_wins, dis.ties) == (18, 6, 4)
    assert dis.p_value == pytest.approx(stats.binomtest(18, 24).pvalue)
    everything = s.preference_all
    assert (everything.challenger_wins, everything.champion_wins, everything.ties) == (18, 12, 19)
    assert s.preference_unscorable == 2
    assert (s.agreement.k, s.agreement.n) == (20, 50) and s.agreement_unscorable == 1
    assert s.challenger_wrong_language == 1 and s.champion_wrong_language == 0
    assert s.cost.champion_usd == pytest.approx(0.5)  # the errored case still cost money
    assert any("position A" in w for w in s.warnings)
    assert any("1 case(s)" in w for w in s.warnings)


def test_tag_breakdowns_split_agreement_and_preference_by_value() -> None:
    ok = [r for r in _constructed() if r.error is None and r.agreement != Fit.UNSCORABLE]
    tags = {(t.tag, t.value): t for t in tag_breakdowns(ok)}
    assert set(tags) == {("lang", "en"), ("lang", "nl")}
    nl = tags[("lang", "nl")]
    nl_rows = [r for r in ok if r.tags["lang"] == "nl"]
    assert nl.n == len(nl_rows)
    assert nl.agreement.k == 0 and nl.agreement.n == len(nl_rows)
    expected = [r.preference for r in nl_rows]
    assert nl.preference.challenger_wins == expected.count("challenger")
    assert nl.preference.ties == expected.count("tie")
    assert tags[("lang", "en")].agreement.k == 20


def test_feedback_figures_cross_the_users_label_with_agreement_and_preference() -> None:
    from ragreplay.core.compare_stats import feedback_figures
    from ragreplay.core.types import Feedback, Verdict

    def r(fb: Feedback | None, fit: Fit | None, pref: str | None) -> CompareRow:
        return CompareRow(case_id="c", challenger="b", feedback=fb, agreement=fit, preference=pref)  # type: ignore[arg-type]

    good, bad = Feedback.GOOD, Feedback.BAD
    rows = [
        *[r(good, Fit.FIT, "tie")] * 6,
        *[r(good, Fit.NO_FIT, "champion")] * 2,
        r(good, Fit.NO_FIT, "challenger"),
        *[r(bad, Fit.NO_FIT, "challenger")] * 3,
        r(bad, Fit.FIT, "tie"),
        r(bad, Fit.UNSCORABLE, None),
        *[r(None, Fit.NO_FIT, "challenger")] * 5,  # unrated rows do not count
    ]
    f = feedback_figures(rows)
    assert f is not None
    assert (f.n_good, f.n_bad, f.unscorable) == (9, 5, 1)
    assert f.verdicts.counts == {
        Verdict.GOOD_FIT: 6,
        Verdict.GOOD_NO_FIT: 3,
        Verdict.BAD_FIT: 1,
        Verdict.BAD_NO_FIT: 3,
    }
    assert (f.verdicts.good_maintenance.k, f.verdicts.good_maintenance.n) == (6, 9)
    assert (f.verdicts.bad_change.k, f.verdicts.bad_change.n) == (3, 4)
    assert (f.preference_good.challenger_wins, f.preference_good.champion_wins, f.preference_good.ties) == (
        1,
        2,
        6,
    )
    assert (f.preference_bad.challenger_wins, f.preference_bad.champion_wins, f.preference_bad.ties) == (
        3,
        0,
        1,
    )
    assert feedback_figures([r(None, Fit.FIT, "tie")]) is None
