"""The failure tags from review as a terminal table and as Markdown, shared by the run, shadow and gate reports
(the HTML report renders the same rows from :func:`~ragreplay.report.labels.failure_tag_rows`)."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from ragreplay.core.failure_tags import FailureTags
from ragreplay.report.labels import failure_tag_rows, failure_tags_head, md_text

FAILURE_TAG_COLUMNS = ("failure tag", "items", "reviews")


def failure_tags_renderable(ft: FailureTags, title: str = "Failure tags from review") -> RenderableType:
    """A line saying what the figures stand on (``title`` is plain text, never markup), then a table of the
    tags (a tag's name is never markup either)."""
    head = Text(f"{title}: {failure_tags_head(ft)}", style="bold")
    if not ft.tags:
        return head
    table = Table()
    for col in FAILURE_TAG_COLUMNS:
        table.add_column(col, justify="left" if col == "failure tag" else "right")
    for row in failure_tag_rows(ft):
        table.add_row(*(escape(cell) for cell in row))
    return Group(head, table)


def failure_tags_markdown(ft: FailureTags) -> list[str]:
    """What the figures stand on, then a table of the tags, as Markdown lines (no heading)."""
    head = failure_tags_head(ft)
    lines = [md_text(head[0].upper() + head[1:] + ".")]
    if ft.tags:
        lines += ["", "| failure tag | items | reviews |", "|---|---:|---:|"]
        lines += [f"| {md_text(tag)} | {items} | {reviews} |" for tag, items, reviews in failure_tag_rows(ft)]
    return lines
