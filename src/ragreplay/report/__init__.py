"""Render a run's summary: terminal (rich), Markdown, JSON."""

from __future__ import annotations

from ragreplay.core.run_summary import RunSummary
from ragreplay.report.json_report import render_json
from ragreplay.report.markdown import render_markdown

FORMATS = ("text", "md", "json", "html")


def render(summary: RunSummary, fmt: str, examples: int = 10) -> str:
    """The report of ``summary`` as a string in ``fmt`` (text, md, json or html; html lists every case)."""
    if fmt == "json":
        return render_json(summary)
    if fmt == "md":
        return render_markdown(summary, examples=examples)
    if fmt == "html":
        from ragreplay.report.html import render_html

        return render_html(summary)
    if fmt == "text":
        from ragreplay.report.terminal import render_text

        return render_text(summary, examples=examples)
    raise ValueError(f"unknown report format {fmt!r}; choose one of {', '.join(FORMATS)}")
