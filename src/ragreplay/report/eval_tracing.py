"""An eval run's tracing as report tables: latency per stage (p50/p95/p99, milliseconds) and tokens and cost of the
target and of the judge, in all and per case; a price that is unknown is said, never shown as $0."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ragreplay.core.eval_tracing import CostFigures, TracingSummary

Table = tuple[str, Sequence[str], list[list[str]]]

STAGE_HEAD = ("stage", "rows", "mean", "p50", "p95", "p99", "max")
COST_HEAD = (
    "side",
    "rows",
    "tokens in",
    "tokens out",
    "per case in",
    "per case out",
    "cost",
    "cost per case",
)
STAGE_LABELS = {
    "retrieval": "retrieval (target)",
    "generation": "generation (target)",
    "target": "target answer",
    "judging": "judging",
    "total": "total",
}


def _ms(value: float) -> str:
    return f"{value:.1f}"


def usd(figures: CostFigures) -> tuple[str, str]:
    """The side's cost and cost per case; with rows of unknown price, what is known as a lower bound."""
    if figures.rows == 0:
        return "-", "-"
    if figures.known:
        return f"${figures.usd:.4f}", f"${figures.usd / figures.rows:.6f}"
    known = f", at least ${figures.usd:.4f}" if figures.usd > 0 else ""
    return f"price unknown for {figures.unknown_rows} of {figures.rows} rows{known}", "unknown"


def _side_label(side: str, target: Mapping[str, Any] | None) -> str:
    if side == "target" and target is not None:
        return f"target {target.get('name', '')} ({str(target.get('version', ''))[:12]})"
    return side


def tracing_tables(tracing: TracingSummary | None, target: Mapping[str, Any] | None = None) -> list[Table]:
    """The latency table and the tokens-and-cost table (none for a run saved before tracing); ``target`` is
    the run's stored target (name, version), whose side is shown only when there is one."""
    if tracing is None:
        return []
    stages = [
        [STAGE_LABELS.get(f.stage, f.stage), str(f.n), *map(_ms, (f.mean, f.p50, f.p95, f.p99, f.max))]
        for f in tracing.stages
    ]
    cached = tracing.judge_cached_rows
    title = "latency per stage, ms"
    if cached:
        title += f" ({cached} row(s) judged from the cache: not timed, no total)"
    costs = []
    for figures in tracing.costs:
        if figures.side == "target" and target is None:
            continue
        n = max(figures.rows, 1)
        costs.append(
            [
                _side_label(figures.side, target),
                str(figures.rows),
                str(figures.tokens_in),
                str(figures.tokens_out),
                f"{figures.tokens_in / n:.1f}",
                f"{figures.tokens_out / n:.1f}",
                *usd(figures),
            ]
        )
    tables: list[Table] = []
    if stages:
        tables.append((title, STAGE_HEAD, stages))
    tables.append(("tokens and cost", COST_HEAD, costs))
    return tables
