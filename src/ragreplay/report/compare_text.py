"""A comparison in the terminal (rich)."""

from __future__ import annotations

from rich.console import Console, Group, RenderableType
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from ragreplay.compare.grid import ComparisonSummary
from ragreplay.report.compare_labels import TAG_COLUMNS, grid_rows, header_lines, tag_rows
from ragreplay.report.failure_tags import failure_tags_renderable
from ragreplay.report.labels import local_judge_notes


def build_comparison_renderable(summary: ComparisonSummary) -> Group:
    """Header, the champion-vs-challengers grid, the per-tag table, the failure tags from review per challenger
    (when looked up) and the warnings."""
    parts: list[RenderableType] = []
    head = Table(show_header=False, box=None)
    head.add_column(style="bold")
    head.add_column()
    for key, value in header_lines(summary):
        head.add_row(key, escape(value))
    parts.append(head)
    grid = Table(title=f"{escape(summary.champion)} (champion) vs each challenger")
    grid.add_column("figure", style="bold")
    for s in summary.challengers:
        grid.add_column(escape(s.name), overflow="fold")
    for label, cells in grid_rows(summary):
        grid.add_row(escape(label), *(escape(c) for c in cells))
    parts.append(grid)
    tags = Table(title="By tag")
    for col in TAG_COLUMNS:
        tags.add_column(col)
    for row in tag_rows(summary):
        tags.add_row(*(escape(c) for c in row))
    parts.append(tags)
    for name, ft in (summary.failure_tags or {}).items():
        parts.append(failure_tags_renderable(ft, f"Failure tags from review, {name}"))
    for note in local_judge_notes(summary.judge, summary.fit_judge):
        parts.append(Text(note, style="yellow"))
    if summary.warnings:
        parts.append(Text("warnings", style="bold yellow"))
        parts.extend(Text(f"- {w}", style="yellow") for w in summary.warnings)
    return Group(*parts)


def render_comparison_text(summary: ComparisonSummary, width: int = 160) -> str:
    """The terminal report as plain text (no colour codes)."""
    console = Console(width=width, record=True, file=None, color_system=None, force_terminal=False)
    with console.capture() as capture:
        console.print(build_comparison_renderable(summary))
    return capture.get()
