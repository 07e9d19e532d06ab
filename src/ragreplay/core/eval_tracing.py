"""Tracing figures of an eval run: per row the latency of each stage (the target's retrieval and generation, its
whole answer, the judge's calls, the total), the tokens and the cost of the target and of the judge; over the
run, p50/p95/p99 per stage and the tokens and cost in all and per case.

A cost the price of which is unknown is ``None``, never 0: a run's total is then a lower bound, and the rows
whose cost is unknown are counted. The judge's latency is the sum of its calls' latencies as the model layer
reports them; a row with any reply from the model cache is not timed (a cached reply takes no time) and is
counted apart, as is the row's total.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from pydantic import BaseModel, ConfigDict

from ragreplay.core.run_summary import percentile

STAGES = ("retrieval", "generation", "target", "judging", "total")
"""The stages timed, in report order: ``target`` is the target's whole answer (retrieval and generation together
when it reports no split), ``total`` the target's answer plus the judging."""
PERCENTILES = (50.0, 95.0, 99.0)


class RowTrace(BaseModel):
    """One row's tracing: milliseconds per stage (``None``: not reported or not timed), whether a judge reply
    came from the cache, and tokens and dollars of the target and the judge (cost ``None``: price unknown)."""

    model_config = ConfigDict(frozen=True)

    retrieval_ms: float | None = None
    generation_ms: float | None = None
    target_ms: float | None = None
    judging_ms: float | None = None
    judge_cached: bool = False
    total_ms: float | None = None
    target_tokens_in: int = 0
    target_tokens_out: int = 0
    target_cost_usd: float | None = 0.0
    judge_tokens_in: int = 0
    judge_tokens_out: int = 0
    judge_cost_usd: float | None = 0.0

    def stage_ms(self, stage: str) -> float | None:
        """The milliseconds of ``stage`` (one of :data:`STAGES`)."""
        value: float | None = getattr(self, f"{stage}_ms")
        return value


def row_trace(
    *,
    target_ms: float | None,
    stages_ms: dict[str, float],
    judged: bool,
    judging_ms: float,
    judge_cached: bool,
    target_tokens: tuple[int, int] = (0, 0),
    target_cost_usd: float | None = 0.0,
    judge_tokens: tuple[int, int] = (0, 0),
    judge_cost_usd: float | None = 0.0,
) -> RowTrace:
    """A row's trace from what was measured: ``target_ms`` (``None`` without a target), the target's reported
    ``stages_ms`` (``retrieval``, ``generation``), whether the row was ``judged`` and the live calls'
    ``judging_ms`` (not a figure when ``judge_cached``)."""
    judging = judging_ms if judged and not judge_cached else None
    timed = [t for t in (target_ms, judging) if t is not None]
    complete = not (judged and judging is None) and timed
    return RowTrace(
        retrieval_ms=stages_ms.get("retrieval"),
        generation_ms=stages_ms.get("generation"),
        target_ms=target_ms,
        judging_ms=judging,
        judge_cached=judged and judge_cached,
        total_ms=sum(timed) if complete else None,
        target_tokens_in=target_tokens[0],
        target_tokens_out=target_tokens[1],
        target_cost_usd=target_cost_usd,
        judge_tokens_in=judge_tokens[0],
        judge_tokens_out=judge_tokens[1],
        judge_cost_usd=judge_cost_usd,
    )


class StageFigures(BaseModel):
    """One stage over the rows that timed it: how many, mean, p50, p95, p99 and max (milliseconds)."""

    model_config = ConfigDict(frozen=True)

    stage: str
    n: int
    mean: float
    p50: float
    p95: float
    p99: float
    max: float


class CostFigures(BaseModel):
    """Tokens and dollars of one side (the target or the judge) over a run: totals, per case (over every row
    traced) and the rows whose price is unknown (``usd`` is then the known part only, never a made-up 0)."""

    model_config = ConfigDict(frozen=True)

    side: str
    rows: int
    tokens_in: int
    tokens_out: int
    usd: float
    unknown_rows: int

    @property
    def known(self) -> bool:
        """Whether every row's price was known."""
        return self.unknown_rows == 0


class TracingSummary(BaseModel):
    """A run's tracing: per stage the percentiles, the rows whose judge replies came from the cache (not
    timed), and the tokens and cost of the target and of the judge."""

    model_config = ConfigDict(frozen=True)

    rows: int
    stages: tuple[StageFigures, ...]
    judge_cached_rows: int
    costs: tuple[CostFigures, ...]


def stage_figures(stage: str, values: Sequence[float]) -> StageFigures | None:
    """p50/p95/p99 (numpy's linear interpolation), mean and max of ``values``; ``None`` when there are none."""
    p50, p95, p99 = (percentile(values, p) for p in PERCENTILES)
    if p50 is None or p95 is None or p99 is None:
        return None
    return StageFigures(
        stage=stage, n=len(values), mean=sum(values) / len(values), p50=p50, p95=p95, p99=p99, max=max(values)
    )


def _costs(side: str, traces: Sequence[RowTrace]) -> CostFigures:
    costs = [getattr(t, f"{side}_cost_usd") for t in traces]
    return CostFigures(
        side=side,
        rows=len(traces),
        tokens_in=sum(getattr(t, f"{side}_tokens_in") for t in traces),
        tokens_out=sum(getattr(t, f"{side}_tokens_out") for t in traces),
        usd=sum(c for c in costs if c is not None),
        unknown_rows=sum(c is None for c in costs),
    )


def summarize_tracing(
    traces: Sequence[RowTrace], sides: Sequence[str] = ("target", "judge")
) -> TracingSummary:
    """The run's tracing over ``traces`` (one per row): the stages timed at least once, and the ``sides``'
    tokens and cost."""
    stages = []
    for stage in STAGES:
        figures = stage_figures(stage, [v for t in traces if (v := t.stage_ms(stage)) is not None])
        if figures is not None:
            stages.append(figures)
    return TracingSummary(
        rows=len(traces),
        stages=tuple(stages),
        judge_cached_rows=sum(t.judge_cached for t in traces),
        costs=tuple(_costs(side, traces) for side in sides),
    )


def run_tracing(traces: Iterable[RowTrace | None]) -> TracingSummary | None:
    """:func:`summarize_tracing` over the rows that have a trace; ``None`` when none has (runs saved before)."""
    kept = [t for t in traces if t is not None]
    return summarize_tracing(kept) if kept else None
