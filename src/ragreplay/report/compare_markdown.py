"""A comparison as Markdown."""

from __future__ import annotations

from ragreplay.compare.grid import ComparisonSummary
from ragreplay.report.compare_labels import TAG_COLUMNS, grid_rows, header_lines, tag_rows
from ragreplay.report.failure_tags import failure_tags_markdown
from ragreplay.report.labels import local_judge_notes, md_text


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(md_text(h) for h in header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(md_text(c) for c in row) + " |" for row in rows]
    return lines


def render_comparison_markdown(summary: ComparisonSummary) -> str:
    """Header, grid, per-tag table, failure tags from review per challenger (when looked up) and warnings as a
    Markdown document."""
    lines = [
        f"# Comparison: {summary.champion} (champion) vs {', '.join(s.name for s in summary.challengers)}",
        "",
    ]
    lines += [f"- **{key}**: {md_text(value)}" for key, value in header_lines(summary)]
    for note in local_judge_notes(summary.judge, summary.fit_judge):
        lines += ["", f"> {md_text(note)}"]
    lines += ["", "## Champion vs each challenger", ""]
    grid = [[label, *cells] for label, cells in grid_rows(summary)]
    lines += _table(["figure", *(s.name for s in summary.challengers)], grid)
    lines += ["", "## By tag", ""]
    lines += _table(list(TAG_COLUMNS), tag_rows(summary))
    for name, ft in (summary.failure_tags or {}).items():
        lines += ["", f"## Failure tags from review: {md_text(name)}", "", *failure_tags_markdown(ft)]
    if summary.warnings:
        lines += ["", "## Warnings", ""]
        lines += [f"- {md_text(w)}" for w in summary.warnings]
    return "\n".join(lines) + "\n"
