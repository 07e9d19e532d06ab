"""Is run B better than run A on the same cases? Paired statistics for a continuous metric: the mean difference
with a paired bootstrap interval, a sign-flip permutation p-value (exact up to 16 pairs, else Monte Carlo with a
seed), and two effect sizes (Cohen's d_z and the matched-pairs rank-biserial correlation). Checked against scipy in
the tests. Pairs where either side is missing (``None``: undetermined) are left out and counted.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

EXACT_UP_TO = 16
"""Up to this many pairs the permutation test enumerates every sign assignment (2**16 = 65,536)."""


@dataclass(frozen=True)
class PairedComparison:
    """B minus A on the pairs both scored."""

    n: int
    skipped: int
    mean_a: float
    mean_b: float
    mean_diff: float
    low: float
    high: float
    confidence: float
    p_value: float
    exact: bool
    cohen_dz: float | None
    rank_biserial: float | None


def _paired(a: Sequence[float | None], b: Sequence[float | None]) -> tuple[np.ndarray, np.ndarray, int]:
    if len(a) != len(b):
        raise ValueError(f"paired metrics need the same cases on both sides ({len(a)} vs {len(b)} values)")
    kept = [(x, y) for x, y in zip(a, b, strict=True) if x is not None and y is not None]
    xs = np.array([x for x, _ in kept], dtype=float)
    ys = np.array([y for _, y in kept], dtype=float)
    return xs, ys, len(a) - len(kept)


def bootstrap_interval(
    diffs: np.ndarray, confidence: float = 0.95, resamples: int = 10_000, seed: int = 0
) -> tuple[float, float]:
    """Percentile interval of the mean of ``diffs`` over ``resamples`` resamples of the pairs."""
    if len(diffs) == 0:
        return math.nan, math.nan
    rng = np.random.default_rng(seed)
    means = diffs[rng.integers(0, len(diffs), size=(resamples, len(diffs)))].mean(axis=1)
    tail = (1 - confidence) / 2
    return float(np.quantile(means, tail)), float(np.quantile(means, 1 - tail))


def sign_flip_p_value(diffs: np.ndarray, resamples: int = 20_000, seed: int = 0) -> tuple[float, bool]:
    """Two-sided p-value of the mean difference under "A and B are exchangeable within each pair", and
    whether it is exact (every sign assignment enumerated) rather than Monte Carlo."""
    n = len(diffs)
    if n == 0:
        return 1.0, True
    observed = abs(diffs.mean())
    tolerance = 1e-12 * max(1.0, observed)
    if n <= EXACT_UP_TO:
        signs = np.array(list(itertools.product((1.0, -1.0), repeat=n)))
        stats = np.abs((signs * diffs).mean(axis=1))
        return float(np.mean(stats >= observed - tolerance)), True
    rng = np.random.default_rng(seed)
    signs = rng.choice((1.0, -1.0), size=(resamples, n))
    stats = np.abs((signs * diffs).mean(axis=1))
    # the observed assignment counts as one of the resamples, so p is never 0
    return float((np.sum(stats >= observed - tolerance) + 1) / (resamples + 1)), False


def rank_biserial(diffs: np.ndarray) -> float | None:
    """Matched-pairs rank-biserial correlation: (sum of ranks of positive - of negative differences) over the
    sum of all ranks, zero differences dropped (``None`` when all are zero)."""
    nonzero = diffs[diffs != 0]
    if len(nonzero) == 0:
        return None
    order = np.abs(nonzero)
    ranks = _average_ranks(order)
    return float((ranks[nonzero > 0].sum() - ranks[nonzero < 0].sum()) / ranks.sum())


def _average_ranks(values: np.ndarray) -> np.ndarray:
    order = np.argsort(values, kind="mergesort")
    ranks = np.empty(len(values), dtype=float)
    sorted_values = values[order]
    i = 0
    while i < len(values):
        j = i
        while j + 1 < len(values) and sorted_values[j + 1] == sorted_values[i]:
            j += 1
        ranks[order[i : j + 1]] = (i + j) / 2 + 1
        i = j + 1
    return ranks


def compare_paired(
    a: Sequence[float | None],
    b: Sequence[float | None],
    confidence: float = 0.95,
    resamples: int = 10_000,
    seed: int = 0,
) -> PairedComparison:
    """B minus A on the same cases (``a[i]`` and ``b[i]`` score case ``i``)."""
    xs, ys, skipped = _paired(a, b)
    diffs = ys - xs
    low, high = bootstrap_interval(diffs, confidence, resamples, seed)
    p_value, exact = sign_flip_p_value(diffs, 2 * resamples, seed)
    sd = float(diffs.std(ddof=1)) if len(diffs) > 1 else 0.0
    return PairedComparison(
        n=len(diffs),
        skipped=skipped,
        mean_a=float(xs.mean()) if len(xs) else math.nan,
        mean_b=float(ys.mean()) if len(ys) else math.nan,
        mean_diff=float(diffs.mean()) if len(diffs) else math.nan,
        low=low,
        high=high,
        confidence=confidence,
        p_value=p_value,
        exact=exact,
        cohen_dz=float(diffs.mean() / sd) if sd > 0 else None,
        rank_biserial=rank_biserial(diffs),
    )


def holm_adjusted(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjustment of p-values tested together (each metric of one comparison): the family-wise
    error stays at the level a single test would have, without Bonferroni's loss of power."""
    order = sorted(range(len(p_values)), key=lambda i: p_values[i])
    adjusted = [1.0] * len(p_values)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(p_values) - rank) * p_values[i]))
        adjusted[i] = running
    return adjusted
