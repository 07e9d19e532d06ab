"""The gate report's eval-metrics section (``ragreplay gate --metrics lexical``): champion vs challenger against
the reviewers' correct answers, one row per metric with the paired difference, as text or Markdown."""

from __future__ import annotations

from ragreplay.gate.reference_metrics import ReferenceMetrics
from ragreplay.report.eval_diff import HEAD, diff_cells, md_row, text_table
from ragreplay.report.labels import md_text

GATE_HEAD = ("metric", *HEAD[1:3], "champion", "challenger", "challenger - champion", *HEAD[6:])
"""The eval-diff table's columns, its sides named: A is the champion, B the challenger."""


def metrics_title(m: ReferenceMetrics) -> str:
    """The section's first line: what was compared, on how many items, and that it does not decide."""
    return (
        f"{m.family} metrics against the reviewers' correct answers: {m.with_reference} item(s) have one, "
        f"{m.diff.paired} paired ({m.diff.errored} with a failed side left out); shown, not a bar"
    )


def metrics_text(m: ReferenceMetrics) -> list[str]:
    """The section as plain-text lines."""
    if not m.diff.metrics:
        return [metrics_title(m), "  no item with a reviewer's answer was answered by both sides"]
    return [metrics_title(m), *text_table(GATE_HEAD, [diff_cells(d) for d in m.diff.metrics])]


def metrics_markdown(m: ReferenceMetrics) -> list[str]:
    """The section as Markdown lines (every cell escaped)."""
    lines = [f"### {m.family.capitalize()} metrics against reviewers' answers", "", md_text(metrics_title(m))]
    if m.diff.metrics:
        lines += ["", md_row(GATE_HEAD), "|---|" + "---:|" * (len(GATE_HEAD) - 1)]
        lines += [md_row(diff_cells(d)) for d in m.diff.metrics]
    return lines
