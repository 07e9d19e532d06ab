"""Wilson intervals and percentiles, checked against scipy/numpy-style reference values."""

from __future__ import annotations

import pytest
from scipy.stats import binomtest

from ragreplay.core.run_summary import percentile
from ragreplay.core.stats import wilson_interval


@pytest.mark.parametrize("k,n", [(0, 1), (1, 1), (0, 10), (3, 10), (10, 10), (25, 40), (501, 1000), (1, 3)])
def test_wilson_matches_scipy(k: int, n: int) -> None:
    ci = binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
    low, high = wilson_interval(k, n)
    assert low == pytest.approx(ci.low, abs=1e-12)
    assert high == pytest.approx(ci.high, abs=1e-12)


def test_wilson_empty_and_invalid() -> None:
    assert wilson_interval(0, 0) == (0.0, 1.0)
    with pytest.raises(ValueError):
        wilson_interval(3, 2)


def test_percentile_linear_interpolation() -> None:
    assert percentile([], 50) is None
    assert percentile([5.0], 95) == 5.0
    assert percentile([1.0, 2.0, 3.0, 4.0], 50) == pytest.approx(2.5)
    assert percentile([10.0, 20.0, 30.0, 40.0, 50.0], 95) == pytest.approx(48.0)
