"""A comparison as one self-contained HTML page (``--format html`` of ``compare``, ``compare-report`` and the
shadow report): the grid and per-tag table of the text report with their pictures (agreement and preference
with intervals, per-tag small multiples, latency and cost per case of each side) and the cases in collapsed
groups by challenger and outcome. No script, nothing loaded from elsewhere, every text escaped."""

from __future__ import annotations

from ragreplay.compare.grid import ComparisonSummary
from ragreplay.report.compare_charts import comparison_charts, row_groups
from ragreplay.report.compare_labels import TAG_COLUMNS, grid_rows, header_lines, ms, tag_rows, usd
from ragreplay.report.html import html_environment
from ragreplay.report.labels import failure_tag_rows, failure_tags_head, local_judge_notes

ROWS_SHOWN = 2000
"""At most this many cases are listed one by one (the figures and charts cover every case)."""


def render_comparison_html(summary: ComparisonSummary, rows_shown: int = ROWS_SHOWN) -> str:
    """The comparison as one HTML page; ``rows_shown`` caps the case list."""
    env = html_environment()
    env.filters["ms"] = ms
    env.filters["usd"] = usd
    rows = summary.rows[:rows_shown]
    return env.get_template("compare.html.j2").render(
        s=summary,
        header=header_lines(summary),
        notes=local_judge_notes(summary.judge, summary.fit_judge),
        grid=grid_rows(summary),
        tag_columns=TAG_COLUMNS,
        tags=tag_rows(summary),
        charts=comparison_charts(summary),
        rows=rows,
        groups=row_groups(summary, rows),
        ft_head=failure_tags_head,
        ft_rows=failure_tag_rows,
    )
