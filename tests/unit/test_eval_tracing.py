"""Tracing figures of an eval run: per-stage percentiles against numpy, a row's trace (cached judge replies not
timed, no total), tokens and cost summed with an unknown price kept unknown, and a target's pricing."""

from __future__ import annotations

import numpy as np
import pytest

from ragreplay.core.eval_tracing import (
    RowTrace,
    row_trace,
    run_tracing,
    stage_figures,
    summarize_tracing,
)
from ragreplay.core.types import Answer
from ragreplay.evaluation.judged import JudgedRow
from ragreplay.evaluation.target_rows import label_tags, trace_of
from ragreplay.report.eval_tracing import tracing_tables, usd
from ragreplay.targets.builtin_rag.config import BuiltinTargetConfig
from ragreplay.targets.config import HttpTargetConfig, PythonTargetConfig
from ragreplay.targets.cost import target_pricing


@pytest.mark.parametrize("n", [1, 2, 7, 100, 1001])
def test_stage_percentiles_are_numpys(n: int) -> None:
    values = list(np.random.default_rng(n).lognormal(5, 1, n))
    figures = stage_figures("retrieval", values)
    assert figures is not None and figures.n == n
    for q, got in ((50, figures.p50), (95, figures.p95), (99, figures.p99)):
        assert got == pytest.approx(float(np.percentile(values, q)))
    assert figures.mean == pytest.approx(float(np.mean(values))) and figures.max == max(values)


def test_no_values_no_figures() -> None:
    assert stage_figures("judging", []) is None
    assert run_tracing([None, None]) is None


def test_a_row_judged_from_the_cache_is_not_timed_and_has_no_total() -> None:
    live = row_trace(
        target_ms=120.0, stages_ms={"retrieval": 20.0}, judged=True, judging_ms=300.0, judge_cached=False
    )
    assert (live.retrieval_ms, live.generation_ms) == (20.0, None)
    assert (live.judging_ms, live.total_ms) == (300.0, 420.0)
    cached = row_trace(target_ms=120.0, stages_ms={}, judged=True, judging_ms=0.0, judge_cached=True)
    assert cached.judging_ms is None and cached.total_ms is None and cached.judge_cached
    unjudged = row_trace(target_ms=80.0, stages_ms={}, judged=False, judging_ms=0.0, judge_cached=False)
    assert unjudged.total_ms == 80.0 and not unjudged.judge_cached
    no_target = row_trace(target_ms=None, stages_ms={}, judged=True, judging_ms=50.0, judge_cached=False)
    assert no_target.total_ms == 50.0 and no_target.target_ms is None


def test_summary_counts_cached_rows_and_keeps_unknown_prices_unknown() -> None:
    traces = [
        RowTrace(target_ms=10.0, judging_ms=5.0, total_ms=15.0, target_tokens_in=100, target_cost_usd=0.01),
        RowTrace(target_ms=30.0, judge_cached=True, target_tokens_in=50, target_cost_usd=None),
        RowTrace(target_ms=20.0, judging_ms=7.0, total_ms=27.0, judge_tokens_out=9, judge_cost_usd=0.002),
    ]
    summary = summarize_tracing(traces)
    stages = {s.stage: s for s in summary.stages}
    assert set(stages) == {"target", "judging", "total"}  # retrieval and generation were never reported
    assert stages["target"].n == 3 and stages["target"].p50 == pytest.approx(20.0)
    assert stages["judging"].n == 2 and summary.judge_cached_rows == 1
    target, judge = summary.costs
    assert (target.tokens_in, target.unknown_rows) == (150, 1) and target.usd == pytest.approx(0.01)
    assert not target.known and judge.known and judge.usd == pytest.approx(0.002)
    assert usd(target)[0] == "price unknown for 1 of 3 rows, at least $0.0100"
    assert usd(judge) == ("$0.0020", "$0.000667")
    tables = tracing_tables(summary, {"name": "hybrid", "version": "abcdef0123456789"})
    assert tables[0][0].endswith("(1 row(s) judged from the cache: not timed, no total)")
    assert tables[1][2][0][0] == "target hybrid (abcdef012345)"
    # without a target, the target's side is not shown
    assert [r[0] for r in tracing_tables(summary)[1][2]] == ["judge"]


def test_trace_of_a_target_answer_and_the_judges_calls() -> None:
    answer = Answer(
        text="x",
        latency_ms=40.0,
        extra={"stages_ms": {"retrieval": 12.5, "generation": 20, "bogus": 1, "rerank": "x"}},
    )
    free = target_pricing(BuiltinTargetConfig.model_validate({"kind": "builtin", "corpus": "c/"}))
    judged = JudgedRow(calls=2, cached_calls=0, cost_usd=0.0, latency_ms=33.0)
    trace = trace_of(answer, free, judged, judge_priced=False)
    assert (trace.retrieval_ms, trace.generation_ms, trace.total_ms) == (12.5, 20.0, 73.0)
    assert trace.target_cost_usd == 0.0 and trace.judge_cost_usd is None  # an unpriced judge is unknown
    cached = JudgedRow(calls=2, cached_calls=2)
    assert trace_of(answer, free, cached, judge_priced=False).judge_cost_usd == 0.0  # the cache is free


def test_target_pricing_never_makes_up_zero() -> None:
    python = target_pricing(PythonTargetConfig.model_validate({"kind": "python", "function": "m:f"}))
    assert python.cost_of(Answer(text="a")) is None
    assert python.cost_of(Answer(text="a", cost_usd=0.003)) == 0.003
    http = {"kind": "http", "url": "http://127.0.0.1:1/ask", "answer_path": "answer"}
    assert target_pricing(HttpTargetConfig.model_validate(http)).cost_of(Answer(text="a")) is None
    reported = target_pricing(HttpTargetConfig.model_validate({**http, "cost_path": "cost"}))
    assert reported.cost_of(Answer(text="a")) == 0.0
    unpriced = {"mode": "generate", "model": "acme:secret-model"}
    generate = {"kind": "builtin", "corpus": "c/", "answer": unpriced}
    assert target_pricing(BuiltinTargetConfig.model_validate(generate)).known is False
    priced = {**generate, "answer": {"mode": "generate", "model": "openai:gpt-4.1-mini"}}
    assert target_pricing(BuiltinTargetConfig.model_validate(priced)).known is True


def test_label_tags_feed_target_filters() -> None:
    assert label_tags(("department=hr", "vip", "lang = nl", "=x")) == {"department": "hr", "lang": "nl"}
