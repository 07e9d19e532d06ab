"""An eval run's report as one self-contained HTML page: no script, no file or font from elsewhere, every text
escaped by Jinja2's autoescape. Per metric the same figures as the text and JSON reports (n, undetermined, mean,
p50, p90) with the ten-bin distribution drawn as an inline SVG bar chart on the server; the same per tag; the
rubric and repeat tables, the undetermined reasons, the errored rows, and every row (question, answer, metrics)
in a collapsible list."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ragreplay.core.eval import MetricSummary
from ragreplay.evaluation.run import EvalReport
from ragreplay.report.eval import EVAL_FORMATS, eval_header, extra_tables, render_eval, undetermined_reasons
from ragreplay.report.html import html_environment

EVAL_REPORT_FORMATS = (*EVAL_FORMATS, "html")
"""Every format of ``ragreplay eval`` and ``ragreplay eval-report``."""

ROWS_SHOWN = 2000
"""At most this many rows are listed one by one (the figures cover every row; ``--format json`` lists all)."""

CHART_WIDTH = 200
CHART_HEIGHT = 40
"""The distribution chart's size in CSS pixels: one bar per bin, the fullest bin as tall as the chart."""


@dataclass(frozen=True)
class HistogramBar:
    """One bin of a metric's distribution as an SVG rectangle, with the bin's range and row count."""

    x: float
    y: float
    width: float
    height: float
    count: int
    low: float
    high: float


def histogram_bars(
    metric: MetricSummary, width: float = CHART_WIDTH, height: float = CHART_HEIGHT
) -> list[HistogramBar]:
    """The bars of ``metric``'s histogram, scaled to the fullest bin (none when no row determined it). An
    empty bin keeps a 1-pixel baseline so the chart still shows its ten bins."""
    counts = metric.histogram
    if not counts or max(counts) == 0:
        return []
    top, slot = max(counts), width / len(counts)
    step = (metric.high - metric.low) / len(counts)
    bars = []
    for i, count in enumerate(counts):
        tall = max(1.0, height * count / top)
        bars.append(
            HistogramBar(
                x=round(i * slot + 1, 2),
                y=round(height - tall, 2),
                width=round(slot - 2, 2),
                height=round(tall, 2),
                count=count,
                low=metric.low + i * step,
                high=metric.low + (i + 1) * step,
            )
        )
    return bars


def figure(value: float | None) -> str:
    """A metric's figure as every eval report prints it: three decimals, ``-`` when undetermined."""
    return "-" if value is None else f"{value:.3f}"


def _metric_rows(metrics: Sequence[MetricSummary]) -> list[tuple[MetricSummary, list[HistogramBar]]]:
    return [(m, histogram_bars(m)) for m in metrics]


def render_eval_html(report: EvalReport, rows_shown: int = ROWS_SHOWN) -> str:
    """The report as one HTML page; ``rows_shown`` caps the per-row list (the figures cover every row)."""
    summary = report.summary
    env = html_environment()
    env.filters["figure"] = figure
    head = eval_header(report)
    return env.get_template("eval.html.j2").render(
        report=report,
        title=head[0],
        header=head[1:],
        metrics=_metric_rows(summary.metrics),
        per_tag=[(tag, summary.tag_rows[tag], _metric_rows(ms)) for tag, ms in summary.per_tag.items()],
        tables=extra_tables(report),
        reasons=undetermined_reasons(report),
        errored=[row for row in report.rows if row.error],
        rows=list(report.rows[:rows_shown]),
        chart_width=CHART_WIDTH,
        chart_height=CHART_HEIGHT,
    )


def render_eval_report(report: EvalReport, fmt: str) -> str:
    """The report in ``fmt``: one of :data:`EVAL_REPORT_FORMATS` (text, md, json or html)."""
    if fmt == "html":
        return render_eval_html(report)
    if fmt not in EVAL_FORMATS:
        raise ValueError(
            f"unknown eval report format {fmt!r}; choose one of {', '.join(EVAL_REPORT_FORMATS)}"
        )
    return render_eval(report, fmt)
