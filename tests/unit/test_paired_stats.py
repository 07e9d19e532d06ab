"""Paired statistics between two runs on the same cases, checked against scipy: the sign-flip permutation
p-value (exact up to 16 pairs) against scipy.stats.permutation_test, ranks and W+ against rankdata and
wilcoxon, Cohen's d_z against ttest_rel, the bootstrap interval against scipy.stats.bootstrap."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from ragreplay.core.paired_stats import _average_ranks, compare_paired, rank_biserial, sign_flip_p_value

RNG = np.random.default_rng(7)
A = RNG.uniform(0, 1, 12)
B = np.clip(A + RNG.normal(0.08, 0.1, 12), 0, 1)


def test_exact_permutation_p_value_is_scipys() -> None:
    diffs = B - A
    ours, exact = sign_flip_p_value(diffs)
    reference = stats.permutation_test(
        (A, B),
        lambda x, y, axis: np.mean(y - x, axis=axis),
        permutation_type="samples",
        n_resamples=np.inf,
        alternative="two-sided",
        vectorized=True,
    )
    assert exact and ours == pytest.approx(reference.pvalue, abs=1e-12)


def test_monte_carlo_p_value_is_close_to_scipys_and_never_zero() -> None:
    rng = np.random.default_rng(3)
    a = rng.uniform(0, 1, 60)
    b = a + rng.normal(0.02, 0.1, 60)
    ours, exact = sign_flip_p_value(b - a, resamples=40_000)
    reference = stats.permutation_test(
        (a, b),
        lambda x, y, axis: np.mean(y - x, axis=axis),
        permutation_type="samples",
        n_resamples=40_000,
        vectorized=True,
        random_state=1,
    )
    assert not exact and ours == pytest.approx(reference.pvalue, abs=0.02)
    far, _ = sign_flip_p_value(np.full(40, 0.5), resamples=1000)
    assert 0 < far <= 1 / 1001 + 1e-12


def test_ranks_w_plus_and_effect_sizes_are_scipys() -> None:
    diffs = np.array([0.3, -0.1, 0.3, 0.0, 0.2, -0.4, 0.1, 0.1])
    nonzero = diffs[diffs != 0]
    assert np.allclose(_average_ranks(np.abs(nonzero)), stats.rankdata(np.abs(nonzero)))
    w_plus = stats.wilcoxon(nonzero, alternative="greater").statistic
    total = len(nonzero) * (len(nonzero) + 1) / 2
    assert rank_biserial(diffs) == pytest.approx((w_plus - (total - w_plus)) / total)
    result = compare_paired(list(A), list(B))
    t = stats.ttest_rel(B, A).statistic
    assert result.cohen_dz == pytest.approx(t / math.sqrt(len(A)))
    assert rank_biserial(np.zeros(3)) is None


def test_bootstrap_interval_is_close_to_scipys_percentile_interval() -> None:
    rng = np.random.default_rng(11)
    a = rng.uniform(0, 1, 200)
    b = a + rng.normal(0.05, 0.2, 200)
    ours = compare_paired(list(a), list(b), resamples=20_000)
    reference = stats.bootstrap(
        (b - a,), np.mean, method="percentile", n_resamples=20_000, random_state=5
    ).confidence_interval
    assert ours.low == pytest.approx(reference.low, abs=0.005)
    assert ours.high == pytest.approx(reference.high, abs=0.005)
    assert ours.low < ours.mean_diff < ours.high


def test_undetermined_pairs_are_left_out_and_counted() -> None:
    result = compare_paired([0.1, None, 0.5, 0.4], [0.2, 0.9, None, 0.6])
    assert (result.n, result.skipped) == (2, 2)
    assert result.mean_diff == pytest.approx(0.15) and result.exact
    with pytest.raises(ValueError):
        compare_paired([0.1], [0.2, 0.3])
