"""Two eval runs row by row (core/eval_diff), checked against scipy on known rows: the exact permutation p-value,
the bootstrap interval, Cohen's d_z (ttest_rel) and the rank-biserial correlation (wilcoxon); the pairing counts
(rows on one side only, errored, undetermined); Holm's adjustment; and the repeats' variance (core/eval)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from ragreplay.core.eval import MetricValue, RowScores, mean_of_repeats, repeat_variance, summarize
from ragreplay.core.eval_diff import diff_rows
from ragreplay.core.paired_stats import holm_adjusted

A = [0.2, 0.5, 0.9, 0.4, 0.6, 0.1, 0.7, 0.3, 0.8, 0.5]
B = [0.4, 0.6, 0.9, 0.7, 0.5, 0.3, 0.9, 0.6, 0.8, 0.9]


def row(row_id: str, error: str | None = None, **metrics: float | None) -> RowScores:
    return RowScores(
        row_id=row_id,
        metrics={
            name: MetricValue.of(v) if v is not None else MetricValue.undetermined("no contexts")
            for name, v in metrics.items()
        },
        error=error,
    )


def test_figures_are_scipys_on_known_rows() -> None:
    rows_a = [row(f"q{i}", faithfulness=a) for i, a in enumerate(A)]
    rows_b = [row(f"q{i}", faithfulness=b) for i, b in reversed(list(enumerate(B)))]  # order does not matter
    diff = diff_rows(rows_a, rows_b)
    (m,) = diff.metrics
    a, b = np.array(A), np.array(B)
    d = b - a
    assert (m.n, m.mean_a, m.mean_b, m.diff) == (
        10,
        pytest.approx(a.mean()),
        pytest.approx(b.mean()),
        pytest.approx(d.mean()),
    )
    exact = stats.permutation_test(
        (a, b),
        lambda x, y, axis: np.mean(y - x, axis=axis),
        permutation_type="samples",
        n_resamples=np.inf,
        vectorized=True,
    )
    assert m.exact and m.p_value == pytest.approx(exact.pvalue, abs=1e-12)
    interval = stats.bootstrap((d,), np.mean, method="percentile", n_resamples=20_000, random_state=1)
    assert m.low == pytest.approx(interval.confidence_interval.low, abs=0.01)
    assert m.high == pytest.approx(interval.confidence_interval.high, abs=0.01)
    t = stats.ttest_rel(b, a).statistic
    assert m.cohen_dz == pytest.approx(t / math.sqrt(len(d)))
    nonzero = d[d != 0]
    w_plus = stats.wilcoxon(nonzero, alternative="greater").statistic
    total = len(nonzero) * (len(nonzero) + 1) / 2
    assert m.rank_biserial == pytest.approx((2 * w_plus - total) / total)
    assert m.p_holm == pytest.approx(m.p_value)  # one metric: nothing to adjust


def test_rows_are_paired_by_id_and_the_rest_counted() -> None:
    rows_a = [
        row("q1", faithfulness=0.5, bleu=0.1),
        row("q2", faithfulness=None, bleu=0.2),
        row("q3", faithfulness=0.2),
        row("q4", error="judge call failed", faithfulness=None),
        row("only_a", faithfulness=1.0),
    ]
    rows_b = [
        row("q1", faithfulness=1.0, bleu=0.3, token_f1=0.5),
        row("q2", faithfulness=0.5, bleu=0.2),
        row("q3", faithfulness=0.6),
        row("q4", faithfulness=0.1),
        row("only_b1", faithfulness=0.0),
        row("only_b2", faithfulness=0.0),
    ]
    diff = diff_rows(rows_a, rows_b, order=["bleu"])
    assert (diff.paired, diff.only_a, diff.only_b, diff.errored) == (3, 1, 2, 1)
    by_name = {m.name: m for m in diff.metrics}
    assert [m.name for m in diff.metrics] == ["bleu", "faithfulness"]  # the order asked, then the rest
    assert by_name["faithfulness"].n == 2 and by_name["faithfulness"].undetermined == 1
    assert by_name["faithfulness"].diff == pytest.approx(((1.0 - 0.5) + (0.6 - 0.2)) / 2)
    assert by_name["bleu"].n == 2 and by_name["bleu"].undetermined == 0  # q3 has no BLEU on either side
    assert diff.only_in_b == ("token_f1",) and diff.only_in_a == ()


def test_a_metric_no_pair_determines_has_no_figures() -> None:
    diff = diff_rows([row("q1", faithfulness=None)], [row("q1", faithfulness=0.4)])
    (m,) = diff.metrics
    assert (m.n, m.undetermined, m.diff, m.p_value, m.low) == (0, 1, None, None, None)


def test_holm_adjustment() -> None:
    # by hand: sorted 0.01, 0.02, 0.04, 0.30 -> 4*0.01, max(0.04, 3*0.02), max(0.06, 2*0.04), max(0.08, 0.30)
    assert holm_adjusted([0.04, 0.01, 0.30, 0.02]) == pytest.approx([0.08, 0.04, 0.30, 0.06])
    assert holm_adjusted([0.5, 0.6]) == pytest.approx([1.0, 1.0])
    assert holm_adjusted([]) == []


def _repeated(row_id: str, scorings: list[float | None]) -> RowScores:
    repeats = tuple(
        {"answer_relevance": MetricValue.of(v) if v is not None else MetricValue.undetermined("x")}
        for v in scorings
    )
    return RowScores(row_id=row_id, metrics=mean_of_repeats(repeats), repeats=repeats)


def test_repeat_variance_is_the_mean_row_sd_and_the_spread_of_run_means() -> None:
    scorings: list[list[float | None]] = [[0.5, 0.75, 0.75], [0.25, 0.25, 0.5], [1.0, None, 0.75]]
    rows = [_repeated(f"q{i}", s) for i, s in enumerate(scorings)]
    summary = summarize(rows, ["answer_relevance"])
    (v,) = summary.variance
    row_sds = [np.std([x for x in s if x is not None], ddof=1) for s in scorings]
    run_means = [float(np.mean([x for s in scorings if (x := s[k]) is not None])) for k in range(3)]
    assert v.repeats == 3 and v.rows == 3
    assert v.mean_row_sd == pytest.approx(np.mean(row_sds))
    assert v.repeat_means == pytest.approx(tuple(run_means))
    assert v.sd_of_means == pytest.approx(np.std(run_means, ddof=1))
    assert (v.low, v.high) == (pytest.approx(min(run_means)), pytest.approx(max(run_means)))
    # a row's metric is the mean of its determined scorings
    assert rows[2].metrics["answer_relevance"].value == pytest.approx(0.875)
    assert repeat_variance([row("q1", answer_relevance=0.5)]) == ()  # no repeats, no variance
    none = mean_of_repeats([{"m": MetricValue.undetermined("no contexts")}] * 2)
    assert none["m"] == MetricValue.undetermined("no contexts")
