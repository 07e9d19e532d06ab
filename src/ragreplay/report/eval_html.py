"""An eval run's report as one self-contained HTML page: no script, no file or font from elsewhere, every text
escaped by Jinja2's autoescape. Per metric the same figures as the text and JSON reports (n, undetermined, mean,
p50, p90) with the ten-bin distribution drawn by the reports' shared SVG bar chart on the server; the same per tag; the
rubric and repeat tables, the undetermined reasons, the errored rows, and every row (question, answer, metrics)
in a collapsible list."""

from __future__ import annotations

from collections.abc import Sequence

from markupsafe import Markup

from ragreplay.core.eval import MetricSummary
from ragreplay.evaluation.run import EvalReport
from ragreplay.report.eval import EVAL_FORMATS, eval_header, extra_tables, render_eval, undetermined_reasons
from ragreplay.report.html import html_environment
from ragreplay.report.svg import bar_chart

EVAL_REPORT_FORMATS = (*EVAL_FORMATS, "html")
"""Every format of ``ragreplay eval`` and ``ragreplay eval-report``."""

ROWS_SHOWN = 2000
"""At most this many rows are listed one by one (the figures cover every row; ``--format json`` lists all)."""

CHART_WIDTH = 300
CHART_HEIGHT = 110
"""The distribution chart's size in CSS pixels: one bar per bin on a count axis from zero."""


def histogram_chart(metric: MetricSummary) -> Markup | None:
    """``metric``'s ten-bin distribution as the shared bar chart (:func:`ragreplay.report.svg.bar_chart`): one
    bar per bin, named by its lower edge, its hover text the bin's range and row count; ``None`` when no row
    determined the metric."""
    counts = metric.histogram
    if not counts or max(counts) == 0:
        return None
    step = (metric.high - metric.low) / len(counts)
    edges = [(metric.low + i * step, metric.low + (i + 1) * step) for i in range(len(counts))]
    return bar_chart(
        [(f"{low:.3g}", float(count)) for (low, _), count in zip(edges, counts, strict=True)],
        f"distribution of {metric.name}: {', '.join(map(str, counts))} rows per bin",
        width=CHART_WIDTH,
        height=CHART_HEIGHT,
        fmt=lambda v: f"{v:g}",
        hovers=[f"{low:.2f}-{high:.2f}: {c} row(s)" for (low, high), c in zip(edges, counts, strict=True)],
    )


def figure(value: float | None) -> str:
    """A metric's figure as every eval report prints it: three decimals, ``-`` when undetermined."""
    return "-" if value is None else f"{value:.3f}"


def _metric_rows(metrics: Sequence[MetricSummary]) -> list[tuple[MetricSummary, Markup | None]]:
    return [(m, histogram_chart(m)) for m in metrics]


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
