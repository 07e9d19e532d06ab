"""Two eval runs compared row by row: rows paired by their dataset id, and for every metric both runs scored,
B minus A on the rows both determined it, with :mod:`ragreplay.core.paired_stats` (a paired bootstrap interval,
the sign-flip permutation p-value, Cohen's d_z and the rank-biserial correlation) and Holm's adjustment over the
metrics compared. Rows on one side only, and rows either run errored on, are counted, never paired.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict

from ragreplay.core.eval import RowScores
from ragreplay.core.paired_stats import compare_paired, holm_adjusted


class MetricDiff(BaseModel):
    """One metric, B minus A on ``n`` paired rows (``undetermined``: pairs it applies to on either side, left out
    because one side has no value). The figures are ``None`` when no pair is left."""

    model_config = ConfigDict(frozen=True)

    name: str
    n: int
    undetermined: int
    mean_a: float | None = None
    mean_b: float | None = None
    diff: float | None = None
    low: float | None = None
    high: float | None = None
    confidence: float = 0.95
    p_value: float | None = None
    p_holm: float | None = None
    exact: bool = True
    cohen_dz: float | None = None
    rank_biserial: float | None = None


class RowsDiff(BaseModel):
    """The pairing (``paired`` rows in both runs without an error; ``only_a``/``only_b`` rows in one run only;
    ``errored`` rows in both that either run errored on), every shared metric's figures, and the metrics only
    one run has."""

    model_config = ConfigDict(frozen=True)

    paired: int
    only_a: int
    only_b: int
    errored: int
    metrics: tuple[MetricDiff, ...]
    only_in_a: tuple[str, ...] = ()
    only_in_b: tuple[str, ...] = ()


def _names(rows: Sequence[RowScores]) -> list[str]:
    return list(dict.fromkeys(name for r in rows if r.error is None for name in r.metrics))


def _finite(value: float | None) -> float | None:
    return None if value is None or not math.isfinite(value) else value


def _metric_diff(name: str, all_pairs: Sequence[tuple[RowScores, RowScores]], seed: int) -> MetricDiff:
    # the rows the metric applies to on either side (a row with no reference has no BLEU at all)
    pairs = [(ra, rb) for ra, rb in all_pairs if name in ra.metrics or name in rb.metrics]
    a = [ra.metrics[name].value if name in ra.metrics else None for ra, _ in pairs]
    b = [rb.metrics[name].value if name in rb.metrics else None for _, rb in pairs]
    result = compare_paired(a, b, seed=seed)
    if result.n == 0:
        return MetricDiff(name=name, n=0, undetermined=result.skipped)
    return MetricDiff(
        name=name,
        n=result.n,
        undetermined=result.skipped,
        mean_a=result.mean_a,
        mean_b=result.mean_b,
        diff=result.mean_diff,
        low=_finite(result.low),
        high=_finite(result.high),
        confidence=result.confidence,
        p_value=result.p_value,
        exact=result.exact,
        cohen_dz=result.cohen_dz,
        rank_biserial=result.rank_biserial,
    )


def diff_rows(
    rows_a: Sequence[RowScores], rows_b: Sequence[RowScores], order: Sequence[str] = (), seed: int = 0
) -> RowsDiff:
    """B minus A for every metric both runs scored (those in ``order`` first), rows paired by id."""
    by_id_b = {r.row_id: r for r in rows_b}
    ids_a = {r.row_id for r in rows_a}
    both = [(ra, by_id_b[ra.row_id]) for ra in rows_a if ra.row_id in by_id_b]
    pairs = [(ra, rb) for ra, rb in both if ra.error is None and rb.error is None]
    names_a, names_b = _names(rows_a), _names(rows_b)
    shared = [n for n in names_a if n in names_b]
    shared = [n for n in order if n in shared] + [n for n in shared if n not in order]
    diffs = [_metric_diff(name, pairs, seed) for name in shared]
    tested = [i for i, d in enumerate(diffs) if d.p_value is not None]
    adjusted = holm_adjusted([diffs[i].p_value or 0.0 for i in tested])
    for i, p in zip(tested, adjusted, strict=True):
        diffs[i] = diffs[i].model_copy(update={"p_holm": p})
    return RowsDiff(
        paired=len(pairs),
        only_a=len(rows_a) - len(both),
        only_b=sum(1 for r in rows_b if r.row_id not in ids_a),
        errored=len(both) - len(pairs),
        metrics=tuple(diffs),
        only_in_a=tuple(n for n in names_a if n not in names_b),
        only_in_b=tuple(n for n in names_b if n not in names_a),
    )
